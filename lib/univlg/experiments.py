"""The loops the chapter calls: caching scenes for training, batches with targets, training
(3D-only or co-trained with lifted 2D), evaluation (Acc@IoU), the paired bootstrap, the backbone
pretraining, and the shipped weights (fp16)."""

from __future__ import annotations

import hashlib
import io
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from icml25.checks import check_budget, check_int, check_real, check_rng

from .baselines import keyword_heuristic
from .data import COLOURS, SHAPES, SyntheticRGBDScenes
from .geometry import knn_points
from .losses import set_loss
from .metrics import acc_at_iou, box_from_mask, mask_iou_3d
from .model import N_COLOUR_CLASSES, Backbone2D, UniVLG, UniVLGConfig
from .text import positive_map

__all__ = [
    "SceneCache",
    "build_cache",
    "make_batch",
    "train_grounding",
    "evaluate_grounding",
    "evaluate_heuristic",
    "paired_bootstrap",
    "pretrain_backbone",
    "dense_labels",
    "save_weights",
    "load_weights",
    "WEIGHTS_PATH",
    "file_sha256",
]

WEIGHTS_PATH = (
    Path(__file__).resolve().parents[2] / "data" / "08-univlg" / "univlg_weights.pt"
)


@dataclass
class SceneCache:
    """Frozen-backbone features and per-scene geometry of a scene set, ready for batching.

    feats (n, V, D, S, S) float32; xyz (n, V, S, S, 3) normalised points (zero mean, unit RMS
    radius per scene); centre (n, 3), scale (n,) of that normalisation; knn (n, N, k) int64;
    labels (n, N) int64; points (n, N, 3) raw points (metres); samples [(scene, expression)].
    """

    dataset: SyntheticRGBDScenes
    feats: torch.Tensor
    xyz: torch.Tensor
    centre: np.ndarray
    scale: np.ndarray
    knn: torch.Tensor
    labels: np.ndarray
    points: np.ndarray
    samples: list


@torch.no_grad()
def build_cache(
    dataset: SyntheticRGBDScenes, backbone: Backbone2D, k: int = 8
) -> SceneCache:
    """Run the frozen backbone once per view, normalise the points, precompute kNN per scene.

    Args:
        dataset: scenes (3D set or lifted 2D set); backbone: the frozen 2D encoder; k: neighbours.

    Returns:
        a :class:`SceneCache`.

    Raises:
        ValueError: an empty dataset, bad k.
    """
    n = len(dataset)
    if n == 0:
        raise ValueError("dataset must hold at least one scene")
    k = check_int(k, "k", low=1, high=16)
    rgb = (
        torch.from_numpy(np.stack([s.rgb for s in dataset.scenes]))
        .permute(0, 1, 4, 2, 3)
        .float()
    )
    B, V = rgb.shape[:2]
    check_budget(
        f"build_cache(n_scenes={n})", n_bytes=float(B) * V * 64 * 16 * 16 * 4 * 3
    )
    backbone.eval()
    dev = next(backbone.parameters()).device
    feats = torch.cat(
        [backbone(rgb[i : i + 64].flatten(0, 1).to(dev)).cpu() for i in range(0, B, 64)]
    )
    feats = feats.view(B, V, *feats.shape[1:])
    pts = np.stack([s.points for s in dataset.scenes]).astype(np.float64)  # (n, N, 3)
    centre = pts.mean(1)
    scale = np.sqrt(((pts - centre[:, None]) ** 2).sum(-1).mean(1))
    xyzn = (pts - centre[:, None]) / scale[:, None, None]
    N = pts.shape[1]
    scene_id = np.repeat(np.arange(n), N)
    idx = (
        knn_points(xyzn.reshape(-1, 3), xyzn.reshape(-1, 3), k, scene_id, scene_id)
        - (scene_id * N)[:, None]
    )
    S = dataset.scenes[0].xyz.shape[1]
    return SceneCache(
        dataset,
        feats.float(),
        torch.from_numpy(xyzn.reshape(n, V, S, S, 3)).float(),
        centre,
        scale,
        torch.from_numpy(idx.reshape(n, N, k)),
        np.stack([s.point_labels for s in dataset.scenes]),
        pts,
        dataset.samples(),
    )


def make_batch(
    cache: SceneCache, picks: Sequence[int], model: UniVLG
) -> tuple[dict, list[str], list[dict], torch.Tensor]:
    """Views, sentences and targets of the samples ``picks`` (indices into ``cache.samples``).

    Returns:
        ``(views, sentences, targets, text_pad)``: targets hold masks (G, N), positive maps (G, S)
        and normalised boxes (G, 6) of the target object (row 0) and the anchors.
    """
    if not isinstance(cache, SceneCache):
        raise TypeError(
            f"cache must be a SceneCache (build_cache), got {type(cache).__name__}"
        )
    picks = [check_int(p, "picks", low=0, high=len(cache.samples) - 1) for p in picks]
    if not picks:
        raise ValueError("picks must name at least one sample")
    sc = [cache.samples[p] for p in picks]
    scenes = [i for i, _ in sc]
    exprs = [cache.dataset[i].expressions[j] for i, j in sc]
    sentences = [e.text for e in exprs]
    toks = model.text.tokens(sentences)
    S = max(len(t[0]) for t in toks)
    pad = torch.ones(len(sc), S, dtype=torch.bool)
    targets = []
    for b, (e, (_, off), i) in enumerate(zip(exprs, toks, scenes)):
        pad[b, : len(off)] = False
        objs = [o for o, _, _ in e.spans]
        masks = np.stack([cache.labels[i] == o + 1 for o in objs]).astype(np.float32)
        pm = positive_map(off, [(a, z) for _, a, z in e.spans], S)
        xyzn = cache.xyz[i].reshape(-1, 3).numpy()
        boxes = np.stack(
            [box_from_mask(xyzn, m > 0, pad=0.05 / cache.scale[i]) for m in masks]
        )
        targets.append(
            {
                "masks": torch.from_numpy(masks),
                "pmap": torch.from_numpy(pm),
                "boxes": torch.from_numpy(np.nan_to_num(boxes)).float(),
            }
        )
    ii = torch.tensor(scenes)
    views = {"feats": cache.feats[ii], "xyz": cache.xyz[ii], "knn": cache.knn[ii]}
    return views, sentences, targets, pad


def train_grounding(
    model: UniVLG,
    sources: Sequence[SceneCache],
    n_steps: int,
    rng: np.random.Generator,
    batch_size: int = 8,
    lr: float = 1e-3,
    time_limit_s: float | None = None,
    weight_decay: float = 0.05,
    device: str = "cpu",
) -> dict:
    """Train the grounding model (the backbone and MiniLM stay frozen), batches alternating
    between the ``sources`` (3D scenes, and lifted 2D images for co-training).

    AdamW with the paper's weight decay, linear warmup (5% of the steps) and cosine decay; the
    learning rate is this book's (the paper's 1e-4 is for 200k iterations).

    Args:
        model: a :class:`UniVLG`; sources: scene caches, visited round-robin; n_steps: updates;
        rng: generator for the batches; batch_size: expressions per batch; lr: peak learning rate;
        time_limit_s: stop early after this many seconds of process CPU time (None: no limit);
        weight_decay: AdamW's; device: ``icml25.common.torch_device(PROFILE)`` (the model moves there).

    Returns:
        ``{"loss": [...], "steps": int, "cpu_s": float}``.

    Raises:
        ValueError: no sources, a source without samples, bad sizes, a time limit that is not > 0.
        TypeError: sources that are not scene caches.
    """
    rng = check_rng(rng)
    n_steps = check_int(n_steps, "n_steps", low=1)
    bs = check_int(batch_size, "batch_size", low=1)
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    weight_decay = check_real(weight_decay, "weight_decay", low=0.0)
    if time_limit_s is not None:
        time_limit_s = check_real(time_limit_s, "time_limit_s", low=0.0, low_open=True)
    if not isinstance(sources, (list, tuple)) or any(
        not isinstance(s, SceneCache) for s in sources
    ):
        raise TypeError("sources must be a list of SceneCache (build_cache)")
    if not sources or any(len(s.samples) == 0 for s in sources):
        raise ValueError("sources must be non-empty scene caches with expressions")
    model.to(device)
    params = [
        p
        for n, p in model.named_parameters()
        if p.requires_grad and not n.startswith(("backbone.", "text._bert."))
    ]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    warm = max(1, n_steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            min(1.0, (s + 1) / warm) * 0.5 * (1 + np.cos(np.pi * min(1.0, s / n_steps)))
        ),
    )
    model.train()
    model.backbone.eval()
    t0 = time.process_time()
    losses = []
    step = 0
    for step in range(n_steps):
        src = sources[step % len(sources)]
        picks = rng.choice(
            len(src.samples), size=min(bs, len(src.samples)), replace=False
        )
        views, sentences, targets, pad = _to(make_batch(src, picks, model), device)
        preds = model.forward_3d(views, sentences)
        loss = set_loss(preds, targets, pad)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if time_limit_s is not None and time.process_time() - t0 > time_limit_s:
            break
    model.eval()
    return {"loss": losses, "steps": step + 1, "cpu_s": time.process_time() - t0}


def _to(batch: tuple, device: str) -> tuple:
    views, sentences, targets, pad = batch
    if device == "cpu":
        return batch
    return (
        {k: v.to(device) for k, v in views.items()},
        sentences,
        [{k: v.to(device) for k, v in t.items()} for t in targets],
        pad.to(device),
    )


@torch.no_grad()
def evaluate_grounding(
    model: UniVLG, cache: SceneCache, batch_size: int = 32, device: str = "cpu"
) -> dict:
    """Ground every expression of ``cache``; the box is the extent of the predicted mask (or the
    box decoder's box), compared with the extent of the true mask.

    Inference (Sec. 3.6): the query with the highest mean grounding probability over the target
    span's tokens gives the mask (``sigmoid >= 0.5``).

    Returns:
        ``{"iou": (n,), "mask_iou": (n,), "kind": [...], "relation": [...], "acc25": float, "acc50": float}``
        (box IoU per expression; mask IoU NaN for the box decoder).
    """
    if not isinstance(cache, SceneCache):
        raise TypeError(
            f"cache must be a SceneCache (build_cache), got {type(cache).__name__}"
        )
    if len(cache.samples) == 0:
        raise ValueError("cache holds no expressions to ground")
    batch_size = check_int(batch_size, "batch_size", low=1)
    model.to(device).eval()
    ious, mious, kinds, rels = [], [], [], []
    pred_boxes, gt_boxes = [], []
    for s in range(0, len(cache.samples), batch_size):
        picks = list(range(s, min(s + batch_size, len(cache.samples))))
        views, sentences, targets, pad = make_batch(cache, picks, model)
        out = {
            k: v.cpu()
            for k, v in model.forward_3d(
                _to((views, sentences, targets, pad), device)[0], sentences
            )[-1].items()
        }
        for b, p in enumerate(picks):
            i, j = cache.samples[p]
            e = cache.dataset[i].expressions[j]
            score = out["ground"][b].sigmoid().nan_to_num(0.0) @ targets[b]["pmap"][0]
            q = int(score.argmax())
            gt = cache.labels[i] == e.target + 1
            gbox = box_from_mask(cache.points[i], gt)
            if "masks" in out:
                m = (out["masks"][b, q] > 0).numpy()
                pbox = box_from_mask(cache.points[i], m)
                mious.append(mask_iou_3d(m, gt))
            else:
                pbox = out["boxes"][b, q].numpy().astype(np.float64)
                pbox = pbox * cache.scale[i] + np.tile(cache.centre[i], 2)
                mious.append(np.nan)
            pred_boxes.append(pbox)
            gt_boxes.append(gbox)
            kinds.append(e.kind)
            rels.append(e.relation)
    P, G = np.array(pred_boxes), np.array(gt_boxes)
    from .metrics import _box_iou

    ious = _box_iou(P, G)
    acc = acc_at_iou(P, G)
    return {
        "iou": ious,
        "mask_iou": np.array(mious),
        "kind": kinds,
        "relation": rels,
        "acc25": acc[0.25],
        "acc50": acc[0.5],
    }


def evaluate_heuristic(cache: SceneCache) -> dict:
    """:func:`keyword_heuristic` on every expression, scored like :func:`evaluate_grounding`."""
    P, G, mi, kinds, rels = [], [], [], [], []
    for i, j in cache.samples:
        sc = cache.dataset[i]
        e = sc.expressions[j]
        m = keyword_heuristic(sc, e)
        gt = cache.labels[i] == e.target + 1
        P.append(box_from_mask(cache.points[i], m))
        G.append(box_from_mask(cache.points[i], gt))
        mi.append(mask_iou_3d(m, gt))
        kinds.append(e.kind)
        rels.append(e.relation)
    from .metrics import _box_iou

    P, G = np.array(P), np.array(G)
    acc = acc_at_iou(P, G)
    return {
        "iou": _box_iou(P, G),
        "mask_iou": np.array(mi),
        "kind": kinds,
        "relation": rels,
        "acc25": acc[0.25],
        "acc50": acc[0.5],
    }


def paired_bootstrap(
    a: Any, b: Any, rng: np.random.Generator, n_reps: int = 2000, level: float = 0.95
) -> dict:
    """Paired bootstrap of ``mean(a - b)`` over the same test items.

    Args:
        a, b: (n,) per-item scores (e.g. hits at IoU 0.25) of two models on the same items.
        rng: generator; n_reps: resamples; level: confidence level in (0, 1).

    Returns:
        ``{"diff": mean(a - b), "lo": ..., "hi": ...}`` (percentile interval).

    Raises:
        ValueError: shapes differ, empty, bad n_reps or level.
    """
    from icml25.checks import check_array

    A = check_array(a, "a", ndim=1, min_size=1)
    B = check_array(b, "b", shape=A.shape)
    rng = check_rng(rng)
    n_reps = check_int(n_reps, "n_reps", low=1)
    level = check_real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    d = A - B
    boot = d[rng.integers(0, len(d), size=(n_reps, len(d)))].mean(1)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return {"diff": float(d.mean()), "lo": float(lo), "hi": float(hi)}


def dense_labels(dataset: SyntheticRGBDScenes) -> tuple[np.ndarray, np.ndarray]:
    """Per feature cell colour class (0 sky, 1 floor, 2 + colour) and shape class (0 sky, 1 floor,
    2 + shape): the dense targets the backbone is pretrained on. Shapes (n, V, S, S) int64."""
    col_ids = {c: i + 2 for i, c in enumerate(COLOURS)}
    shp_ids = {s: i + 2 for i, s in enumerate(SHAPES)}
    cols, shps = [], []
    for s in dataset.scenes:
        lab = s.labels
        c = np.where(lab < 0, 0, 1)
        h = c.copy()
        for o, obj in enumerate(s.objects):
            c = np.where(lab == o + 1, col_ids[obj["colour"]], c)
            h = np.where(lab == o + 1, shp_ids[obj["shape"]], h)
        cols.append(c)
        shps.append(h)
    return np.stack(cols), np.stack(shps)


def pretrain_backbone(
    backbone: Backbone2D,
    dataset: SyntheticRGBDScenes,
    n_steps: int,
    rng: np.random.Generator,
    batch_size: int = 32,
    lr: float = 3e-3,
) -> list[float]:
    """Pretrain the 2D encoder on dense colour and shape labels of the 2D set, then freeze it
    (this book's stand-in for DINOv2's self-supervised pretraining).

    Returns:
        the loss per step. Raises ValueError on bad sizes.
    """
    rng = check_rng(rng)
    n_steps = check_int(n_steps, "n_steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    rgb = (
        torch.from_numpy(np.stack([s.rgb for s in dataset.scenes]))
        .flatten(0, 1)
        .permute(0, 3, 1, 2)
        .float()
    )
    col, shp = (torch.from_numpy(x).flatten(0, 1) for x in dense_labels(dataset))
    opt = torch.optim.Adam(backbone.parameters(), lr=lr)
    backbone.train()
    out = []
    for _ in range(n_steps):
        i = torch.from_numpy(
            rng.choice(len(rgb), size=min(batch_size, len(rgb)), replace=False)
        )
        logits = backbone.aux(backbone(rgb[i]))
        loss = F.cross_entropy(logits[:, :N_COLOUR_CLASSES], col[i]) + F.cross_entropy(
            logits[:, N_COLOUR_CLASSES:], shp[i]
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(float(loss.detach()))
    backbone.eval()
    for p in backbone.parameters():
        p.requires_grad_(False)
    return out


def _grounding_state(model: UniVLG) -> dict:
    return {
        k: v.detach().half()
        for k, v in model.state_dict().items()
        if not k.startswith(("text._bert.", "backbone."))
    }


def save_weights(
    path: str | Path, backbone: Backbone2D, models: dict, meta: dict
) -> str:
    """Write the backbone once and each variant's grounding weights in fp16; returns the sha256."""
    blob = {
        "backbone": {k: v.detach().half() for k, v in backbone.state_dict().items()},
        "variants": {
            name: {"cfg": asdict(m.cfg), "state": _grounding_state(m)}
            for name, m in models.items()
        },
        "meta": meta,
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save(blob, buf)
    Path(path).write_bytes(buf.getvalue())
    return file_sha256(path)


def file_sha256(path: str | Path) -> str:
    """sha256 hex digest of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_weights(
    path: str | Path = WEIGHTS_PATH, minilm: tuple[Any, Any] | None = None
) -> tuple[Backbone2D, dict, dict]:
    """Load the shipped weights: ``(frozen backbone, {variant: UniVLG}, meta)`` in float32.

    Raises:
        FileNotFoundError: no weights file.
        ValueError: a variant's state does not fit its configuration.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(
            f"no shipped weights at {p} (python -m icml25.univlg.train writes them)"
        )
    blob = torch.load(p, map_location="cpu", weights_only=True)
    if minilm is None:
        from icml25.common import load_minilm

        minilm = load_minilm()
    cfg0 = next(iter(blob["variants"].values()))["cfg"]
    backbone = Backbone2D(cfg0["dim"])
    backbone.load_state_dict({k: v.float() for k, v in blob["backbone"].items()})
    backbone.eval()
    for q in backbone.parameters():
        q.requires_grad_(False)
    models = {}
    for name, v in blob["variants"].items():
        m = UniVLG(UniVLGConfig(**v["cfg"]), minilm)
        res = m.load_state_dict(
            {k: t.float() for k, t in v["state"].items()}, strict=False
        )
        bad = [
            k
            for k in res.missing_keys
            if not k.startswith(("text._bert.", "backbone."))
        ]
        if bad or res.unexpected_keys:
            raise ValueError(
                f"variant {name}: weights do not fit (missing {bad[:3]}, unexpected {res.unexpected_keys[:3]})"
            )
        m.backbone = backbone
        m.eval()
        models[name] = m
    return backbone, models, blob["meta"]
