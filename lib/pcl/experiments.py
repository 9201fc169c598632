"""The loops a chapter-19 notebook cell calls: training, and the four experiments.

(1) shapes segmentation: SL, label smoothing, PCL 1-step and multistep (and, at gpu scale, SL at
equal training compute and a 3-model SL ensemble); (2) digits inpainting with the ``lam2``
ablation; (3) error against the hint's step ``t``; (4) n-body with an EGNN (springs).
Every function takes a ``torch.Generator`` ``rng`` for minibatch order, corruption and inference
noise, so one seed fixes a run.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch

from icml25.checks import check_int, check_real, check_torch_generator

from .baselines import ensemble_predict, sl_loss, sl_predict
from .defaults import DEFAULTS
from .method import hint_dependence, pcl_loss, pcl_predict, predict_from_hint
from .metrics import miou, pixel_acc
from .networks import HintedEGNN, HintedMLP, HintedUNet

__all__ = [
    "train",
    "to_torch",
    "shapes_experiment",
    "digits_experiment",
    "nbody_experiment",
    "EVAL_TS",
]

#: hint steps of the error-vs-t experiment
EVAL_TS = (10, 100, 300, 600, 999)


def to_torch(
    data: dict[str, np.ndarray], device: str = "cpu"
) -> dict[str, torch.Tensor]:
    """Each array of ``data`` as a tensor on ``device`` (int arrays stay int64)."""
    return {k: torch.as_tensor(v, device=device) for k, v in data.items()}


def _take(x: Any, idx: Any) -> Any:
    return tuple(v[idx] for v in x) if isinstance(x, (tuple, list)) else x[idx]


def _len(x: Any) -> int:
    return int((x[0] if isinstance(x, (tuple, list)) else x).shape[0])


def train(
    model: torch.nn.Module,
    loss_fn: Callable[..., Any],
    x: Any,
    y: torch.Tensor,
    epochs: int,
    lr: float = DEFAULTS.lr,
    batch: int = DEFAULTS.batch,
    rng: Any = None,
) -> dict[str, Any]:
    """Adam on ``loss_fn(model, xb, yb, rng)`` for ``epochs`` passes over shuffled minibatches.

    Args:
        model: the network. loss_fn: returns a loss tensor or ``(loss, terms)``.
        x: inputs (a tensor or a tuple of tensors, first axis the samples). y: labels.
        epochs >= 1. lr > 0. batch >= 1. rng: ``torch.Generator`` (``None``: global).

    Returns:
        ``{"loss": per-epoch mean loss, "wall_s": seconds, "n_updates": int}``.

    Raises:
        ValueError / TypeError naming the argument.
    """
    epochs, batch = check_int(epochs, "epochs", low=1), check_int(batch, "batch", low=1)
    lr, gen = (
        check_real(lr, "lr", low=0.0, low_open=True),
        check_torch_generator(rng, "rng"),
    )
    n = _len(x)
    if n == 0:
        raise ValueError("x must hold at least one sample")
    if int(y.shape[0]) != n:
        raise ValueError(
            f"y must have as many samples as x ({n}), got {int(y.shape[0])}"
        )
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses, n_updates, t0 = [], 0, time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(
            n, generator=gen, device=gen.device if gen is not None else "cpu"
        ).to(y.device)
        total = 0.0
        for s in range(0, n, batch):
            idx = perm[s : s + batch]
            out = loss_fn(model, _take(x, idx), y[idx], gen)
            loss = out[0] if isinstance(out, tuple) else out
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            n_updates += 1
        losses.append(total / n)
    return {"loss": losses, "wall_s": time.perf_counter() - t0, "n_updates": n_updates}


def _chunked(
    fn: Callable[[Any], torch.Tensor], x: Any, size: int = 250
) -> torch.Tensor:
    n = _len(x)
    return torch.cat([fn(_take(x, slice(s, s + size))) for s in range(0, n, size)])


def _pcl_fn(
    alpha_bar: np.ndarray, lam1: float, lam2: float, **opts: Any
) -> Callable[..., Any]:
    return lambda m, xb, yb, g: pcl_loss(
        m, xb, yb, alpha_bar, lam1=lam1, lam2=lam2, rng=g, **opts
    )


def _multistep_chunked(
    model: Any,
    x: Any,
    alpha_bar: np.ndarray,
    n_steps: int,
    recorrupt: str,
    gen: Any,
    size: int = 250,
) -> list[torch.Tensor]:
    parts = [
        pcl_predict(
            model,
            _take(x, slice(s, s + size)),
            alpha_bar,
            n_steps=n_steps,
            recorrupt=recorrupt,
            rng=gen,
        )
        for s in range(0, _len(x), size)
    ]
    return [torch.cat([p[i] for p in parts]) for i in range(n_steps)]


def shapes_experiment(
    train_data: dict[str, torch.Tensor],
    test_data: dict[str, torch.Tensor],
    alpha_bar: np.ndarray,
    epochs: int,
    rng: Any,
    base: int = 16,
    lr: float = DEFAULTS.lr,
    batch: int = DEFAULTS.batch,
    n_steps_list: tuple[int, ...] = (1, 2, 3, 5),
    lam2: float = DEFAULTS.lam2,
    n_ensemble: int = 0,
    equal_compute: bool = False,
    eval_ts: tuple[int, ...] = EVAL_TS,
) -> dict[str, Any]:
    """Experiment 1 and 3: SL, label smoothing and PCL on the shapes task; error against the hint's t.

    SL and label smoothing train the ``hint=False`` U-Net for ``epochs``; PCL the hinted one for
    ``epochs`` (two forward passes a step, so about twice SL's compute). ``equal_compute`` adds SL
    at ``2 epochs`` (equal training forwards); ``n_ensemble > 0`` an ensemble of that many SL
    models (its first member is the SL model). PCL is scored after ``n`` steps for each ``n`` in
    ``n_steps_list`` with hard and soft re-corruption, and with the true label corrupted to each
    step of ``eval_ts`` as the hint.

    Args:
        train_data, test_data: ``{"x": (n, 1, H, W), "y": (n, H, W)}`` tensors. alpha_bar: ``(T,)``.
        epochs >= 1. rng: ``torch.Generator``. base: U-Net width. lr, batch: Adam settings.
        n_steps_list: inference step counts. lam2: consistency weight. n_ensemble: ensemble size.
        equal_compute: add SL at 2x epochs. eval_ts: hint steps for the error-vs-t curve.

    Returns:
        dict with ``scores`` (list of rows: method, n_steps, recorrupt, miou, pixel_acc),
        ``error_vs_t`` (rows: t, miou, pixel_acc), ``per_step`` (mIoU after each step of the
        longest run, both re-corruptions), ``train_s`` (seconds per method), ``models``.

    Raises:
        ValueError / TypeError naming the argument.
    """
    gen = check_torch_generator(rng, "rng")
    epochs = check_int(epochs, "epochs", low=1)
    K = int(max(int(train_data["y"].max()), int(test_data["y"].max())) + 1)
    K = max(K, DEFAULTS.shapes_K)
    xtr, ytr, xte, yte = (
        train_data["x"],
        train_data["y"],
        test_data["x"],
        test_data["y"],
    )
    in_ch = int(xtr.shape[1])
    models: dict[str, Any] = {}
    train_s: dict[str, float] = {}
    scores: list[dict[str, Any]] = []

    def score(
        name: str,
        logits: torch.Tensor,
        n_steps: int | None = None,
        recorrupt: str | None = None,
    ) -> None:
        pred = logits.argmax(1)
        scores.append(
            {
                "method": name,
                "n_steps": n_steps,
                "recorrupt": recorrupt,
                "miou": miou(pred, yte, K),
                "pixel_acc": pixel_acc(pred, yte, K),
            }
        )

    def fit_sl(name: str, ep: int, smoothing: float) -> Any:
        m = HintedUNet(in_ch, K, base=base, hint=False).to(xtr.device)
        h = train(
            m,
            lambda mm, xb, yb, g: sl_loss(mm, xb, yb, label_smoothing=smoothing),
            xtr,
            ytr,
            ep,
            lr,
            batch,
            gen,
        )
        models[name], train_s[name] = m, h["wall_s"]
        return m

    sl = fit_sl("SL", epochs, 0.0)
    score("SL", _chunked(lambda xb: sl_predict(sl, xb), xte))
    ls = fit_sl("label smoothing", epochs, DEFAULTS.label_smoothing)
    score("label smoothing", _chunked(lambda xb: sl_predict(ls, xb), xte))
    if equal_compute:
        eq = fit_sl("SL, equal compute", 2 * epochs, 0.0)
        score("SL, equal compute", _chunked(lambda xb: sl_predict(eq, xb), xte))
    if n_ensemble > 0:
        members = [sl] + [
            fit_sl(f"SL member {i}", epochs, 0.0) for i in range(1, n_ensemble)
        ]
        score(
            f"SL ensemble of {n_ensemble}",
            _chunked(lambda xb: ensemble_predict(members, xb), xte),
        )
    pcl = HintedUNet(in_ch, K, base=base, hint=True).to(xtr.device)
    h = train(
        pcl, _pcl_fn(alpha_bar, DEFAULTS.lam1, lam2), xtr, ytr, epochs, lr, batch, gen
    )
    models["PCL"], train_s["PCL"] = pcl, h["wall_s"]
    per_step: dict[str, list[float]] = {}
    for recorrupt in ("argmax", "probs"):
        for n in n_steps_list:
            preds = _multistep_chunked(pcl, xte, alpha_bar, n, recorrupt, gen)
            score("PCL", preds[-1], n, recorrupt)
            if n == max(n_steps_list):
                per_step[recorrupt] = [miou(p.argmax(1), yte, K) for p in preds]
    err = []
    for t in eval_ts:
        logits = _chunked(
            lambda xb_y: predict_from_hint(
                pcl, xb_y[0], xb_y[1], int(t), alpha_bar, gen
            ),
            (xte, yte),
        )
        pred = logits.argmax(1)
        err.append(
            {
                "t": int(t),
                "alpha_bar_t": float(alpha_bar[int(t)]),
                "miou": miou(pred, yte, K),
                "pixel_acc": pixel_acc(pred, yte, K),
            }
        )
    return {
        "scores": scores,
        "error_vs_t": err,
        "per_step": per_step,
        "train_s": train_s,
        "models": models,
        "K": K,
    }


def _mse_pixels(pred: torch.Tensor, y: torch.Tensor) -> float:
    """MSE in [0, 1] pixel units for labels on [-1, 1] (``y = 2 image - 1``)."""
    return float(torch.mean(((pred.clamp(-1, 1) - y) / 2.0) ** 2))


def digits_experiment(
    train_data: dict[str, torch.Tensor],
    test_data: dict[str, torch.Tensor],
    alpha_bar: np.ndarray,
    epochs: int,
    rng: Any,
    hidden: int = 256,
    lr: float = DEFAULTS.lr,
    batch: int = DEFAULTS.batch,
    lam2s: tuple[float, ...] = (1.0, 0.0),
    n_steps_list: tuple[int, ...] = (1, 3, 5),
    eval_ts: tuple[int, ...] = EVAL_TS,
    dependence_ts: tuple[int, int] = (100, 999),
) -> dict[str, Any]:
    """Experiment 2: digits inpainting with an MLP, SL against PCL for each ``lam2`` (the ablation).

    Args:
        train_data, test_data: ``{"x": (n, 128), "y": (n, 64)}`` tensors (labels on [-1, 1]).
        alpha_bar: ``(T,)``. epochs >= 1. rng: ``torch.Generator``. hidden: MLP width.
        lr, batch: Adam settings. lam2s: consistency weights to train. n_steps_list: inference
        steps. eval_ts: hint steps for the error-vs-t rows. dependence_ts: the ``(t, t')`` pair of
        :func:`icml25.pcl.hint_dependence`.

    Returns:
        dict with ``scores`` (rows: method, lam2, n_steps, mse in [0, 1] pixel units),
        ``error_vs_t`` (rows: lam2, t, mse), ``dependence`` (lam2 -> value), ``train_s``, ``models``.

    Raises:
        ValueError / TypeError naming the argument.
    """
    gen = check_torch_generator(rng, "rng")
    epochs = check_int(epochs, "epochs", low=1)
    xtr, ytr, xte, yte = (
        train_data["x"],
        train_data["y"],
        test_data["x"],
        test_data["y"],
    )
    xd, yd = int(xtr.shape[1]), int(ytr.shape[1])
    scores, err, dep, models, train_s = [], [], {}, {}, {}
    sl = HintedMLP(xd, yd, hidden, hint=False).to(xtr.device)
    h = train(
        sl, lambda m, xb, yb, g: sl_loss(m, xb, yb), xtr, ytr, epochs, lr, batch, gen
    )
    models["SL"], train_s["SL"] = sl, h["wall_s"]
    scores.append(
        {
            "method": "SL",
            "lam2": None,
            "n_steps": None,
            "mse": _mse_pixels(sl_predict(sl, xte), yte),
        }
    )
    for lam2 in lam2s:
        m = HintedMLP(xd, yd, hidden, hint=True).to(xtr.device)
        h = train(
            m,
            _pcl_fn(alpha_bar, DEFAULTS.lam1, float(lam2)),
            xtr,
            ytr,
            epochs,
            lr,
            batch,
            gen,
        )
        key = f"PCL lam2={lam2:g}"
        models[key], train_s[key] = m, h["wall_s"]
        for n in n_steps_list:
            preds = pcl_predict(m, xte, alpha_bar, n_steps=n, rng=gen)
            scores.append(
                {
                    "method": "PCL",
                    "lam2": float(lam2),
                    "n_steps": int(n),
                    "mse": _mse_pixels(preds[-1], yte),
                }
            )
        for t in eval_ts:
            err.append(
                {
                    "lam2": float(lam2),
                    "t": int(t),
                    "mse": _mse_pixels(
                        predict_from_hint(m, xte, yte, int(t), alpha_bar, gen), yte
                    ),
                }
            )
        dep[float(lam2)] = hint_dependence(
            m, xte, yte, dependence_ts[0], dependence_ts[1], alpha_bar, gen
        )
    return {
        "scores": scores,
        "error_vs_t": err,
        "dependence": dep,
        "train_s": train_s,
        "models": models,
    }


def nbody_experiment(
    train_data: dict[str, torch.Tensor],
    test_data: dict[str, torch.Tensor],
    alpha_bar: np.ndarray,
    epochs: int,
    rng: Any,
    hidden: int = 64,
    n_layers: int = DEFAULTS.egnn_layers,
    lr: float = 1e-3,
    batch: int = 100,
    n_steps_list: tuple[int, ...] = (1, DEFAULTS.n_steps),
) -> dict[str, Any]:
    """Experiment 4: spring n-body displacement with an EGNN, SL against PCL 1-step and multistep.

    Args:
        train_data, test_data: :func:`icml25.pcl.spring_nbody` output as tensors.
        alpha_bar: ``(T,)``. epochs >= 1. rng: ``torch.Generator``. hidden, n_layers: EGNN size.
        lr, batch: Adam settings. n_steps_list: inference steps.

    Returns:
        dict with ``scores`` (rows: method, n_steps, mse), ``train_s``, ``models``.

    Raises:
        ValueError / TypeError naming the argument.
    """
    gen = check_torch_generator(rng, "rng")
    epochs = check_int(epochs, "epochs", low=1)
    xtr = (train_data["pos"], train_data["vel"], train_data["adj"])
    xte = (test_data["pos"], test_data["vel"], test_data["adj"])
    ytr, yte = train_data["y"], test_data["y"]
    scores, models, train_s = [], {}, {}
    sl = HintedEGNN(hidden, n_layers, hint=False).to(ytr.device)
    h = train(
        sl, lambda m, xb, yb, g: sl_loss(m, xb, yb), xtr, ytr, epochs, lr, batch, gen
    )
    models["SL"], train_s["SL"] = sl, h["wall_s"]
    scores.append(
        {
            "method": "SL",
            "n_steps": None,
            "mse": float(
                torch.mean((_chunked(lambda xb: sl_predict(sl, xb), xte) - yte) ** 2)
            ),
        }
    )
    m = HintedEGNN(hidden, n_layers, hint=True).to(ytr.device)
    h = train(
        m,
        _pcl_fn(alpha_bar, DEFAULTS.lam1, DEFAULTS.lam2),
        xtr,
        ytr,
        epochs,
        lr,
        batch,
        gen,
    )
    models["PCL"], train_s["PCL"] = m, h["wall_s"]
    for n in n_steps_list:
        preds = _multistep_chunked(m, xte, alpha_bar, n, "argmax", gen)
        scores.append(
            {
                "method": "PCL",
                "n_steps": int(n),
                "mse": float(torch.mean((preds[-1] - yte) ** 2)),
            }
        )
    return {"scores": scores, "train_s": train_s, "models": models}
