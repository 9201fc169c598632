"""The loops chapter 09's cells call: data with superpixels, training, evaluation.

Training follows the official ``utils/training.py``: per epoch the temperature
(:func:`~icml25.p2p.anneal_temperature`) and the penalty weight (:func:`~icml25.p2p.anneal_beta`)
are set, and every minibatch draws ``tau ~ U[tau_min, tau_max]`` per image in the dynamic variant.
Adam, no weight decay. All draws come from one ``torch.Generator``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from icml25.checks import (
    check_bool,
    check_choice,
    check_int,
    check_real,
    check_rng,
    check_torch_generator,
)

from .baselines import pixel_groups
from .data import make_bam_like
from .defaults import DEFAULTS
from .method import (
    REG_VARIANTS,
    _group_size,
    anneal_beta,
    anneal_temperature,
    p2p_loss,
    superpixels,
    to_tensor,
)

__all__ = [
    "prepare_data",
    "train_classifier",
    "train_p2p",
    "evaluate_classifier",
    "evaluate_p2p",
    "evaluate_p2p_kappas",
]


def prepare_data(
    n_train: int,
    n_test: int,
    H: int,
    n_segments: int,
    compactness: float,
    rng: Any,
    spurious: bool = False,
    patch: int = DEFAULTS.pixel_patch,
) -> dict[str, Any]:
    """BAM-like train/test images with SLIC superpixels and square-patch groups, as tensors.

    Args:
        n_train, n_test: image counts (>= 1). H: image side. n_segments, compactness: SLIC.
        rng: ``numpy.random.Generator``. spurious: scene predicts the label in the training split
            (the test split never has it). patch: side of the pixel-group patches.

    Returns:
        dict with ``x_train``/``x_test`` (N, 3, H, H) float32 tensors, ``y_*`` int64 tensors,
        ``groups_*`` SLIC labels and ``pixel_*`` patch labels ((N, H, H) int64 tensors),
        ``object_*`` (N, H, H) bool arrays, ``scene_*`` arrays, ``G`` (SLIC groups allocated:
        ``max label + 1`` over both splits), ``G_pixel``, ``slic_seconds``.

    Raises:
        as :func:`~icml25.p2p.make_bam_like` and :func:`~icml25.p2p.superpixels`.
    """
    import torch

    rng = check_rng(rng, "rng")
    tr = make_bam_like(n_train, H, rng, spurious=spurious, split="train")
    te = make_bam_like(n_test, H, rng, spurious=False, split="test")
    t0 = time.perf_counter()
    g_tr = superpixels(tr["x"], n_segments, compactness)
    g_te = superpixels(te["x"], n_segments, compactness)
    slic_s = time.perf_counter() - t0
    out = {"slic_seconds": slic_s, "G": int(max(g_tr.max(), g_te.max())) + 1}
    for split, d, g in (("train", tr, g_tr), ("test", te, g_te)):
        out[f"x_{split}"] = to_tensor(d["x"])
        out[f"y_{split}"] = torch.as_tensor(d["y"])
        out[f"groups_{split}"] = torch.as_tensor(g)
        out[f"pixel_{split}"] = torch.as_tensor(pixel_groups(len(d["y"]), H, H, patch))
        out[f"object_{split}"] = d["object_mask"]
        out[f"scene_{split}"] = d["scene"]
    out["G_pixel"] = int(out["pixel_train"].max()) + 1
    return out


def _batches(N: int, batch: int, gen: Any) -> list[Any]:
    import torch

    perm = torch.randperm(N, generator=gen)
    return [perm[i : i + batch] for i in range(0, N, batch)]


def train_classifier(
    clf: Any,
    x: Any,
    y: Any,
    n_epochs: int,
    lr: float,
    batch: int,
    rng: Any,
    device: str = "cpu",
) -> dict[str, Any]:
    """Train a classifier on full images with Adam and cross-entropy (the black box).

    Args:
        clf: the module. x: (N, 3, H, W) tensor. y: (N,) labels. n_epochs, batch: >= 1.
        lr: > 0. rng: ``torch.Generator`` (minibatch order). device: torch device string.

    Returns:
        dict with ``loss`` (per-epoch mean) and ``seconds``.

    Raises:
        ValueError: bad sizes; TypeError: ``rng`` not a Generator.
    """
    import torch

    n_epochs, batch = (
        check_int(n_epochs, "n_epochs", low=1),
        check_int(batch, "batch", low=1),
    )
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    gen = check_torch_generator(rng, "rng", allow_none=False)
    clf.to(device).train()
    opt = torch.optim.Adam(clf.parameters(), lr=lr)
    hist, t0 = [], time.perf_counter()
    for _ in range(n_epochs):
        tot = 0.0
        for idx in _batches(len(y), batch, gen):
            xb, yb = x[idx].to(device), y[idx].to(device)
            loss = torch.nn.functional.cross_entropy(clf(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(idx)
        hist.append(tot / len(y))
    clf.eval()
    return {"loss": hist, "seconds": time.perf_counter() - t0}


def train_p2p(
    model: Any,
    x: Any,
    groups: Any,
    y: Any,
    n_epochs: int,
    lr: float,
    batch: int,
    rng: Any,
    beta: float = DEFAULTS.beta,
    gamma: float = DEFAULTS.gamma,
    variant: str = DEFAULTS.reg_variant,
    fixed_tau: float = DEFAULTS.fixed_tau,
    tau_min: float = DEFAULTS.tau_min,
    tau_max: float = DEFAULTS.tau_max,
    anneal: bool = True,
    device: str = "cpu",
) -> dict[str, Any]:
    """Train P2P jointly (predictor and classifier) on the P2P objective.

    Args:
        model: a :class:`~icml25.p2p.P2P` (its ``n_segments`` sets the groups allocated).
        x: (N, 3, H, W) images. groups: (N, H, W) labels. y: (N,) labels.
        n_epochs, batch: >= 1. lr: > 0. rng: ``torch.Generator``.
        beta, gamma, variant: the loss (:func:`~icml25.p2p.p2p_loss`).
        fixed_tau: budget of a fixed (non-dynamic) model. tau_min, tau_max: training budget range
            of a dynamic model. anneal: anneal ``beta`` and the temperature as the code does
            (else ``beta`` and ``final_temp`` throughout).
        device: torch device string.

    Returns:
        dict with per-epoch ``loss``, ``ce``, ``rate`` (mean size-weighted selection rate),
        ``beta``, ``temperature`` and ``seconds``.

    Raises:
        ValueError: bad sizes or budgets; TypeError: ``rng`` not a Generator.
    """
    import torch

    n_epochs, batch = (
        check_int(n_epochs, "n_epochs", low=1),
        check_int(batch, "batch", low=1),
    )
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    gen = check_torch_generator(rng, "rng", allow_none=False)
    variant = check_choice(variant, "variant", REG_VARIANTS)
    fixed_tau = check_real(fixed_tau, "fixed_tau", low=0.0, low_open=True, high=1.0)
    tau_min = check_real(tau_min, "tau_min", low=0.0, low_open=True, high=1.0)
    tau_max = check_real(tau_max, "tau_max", low=tau_min, high=1.0)
    anneal = check_bool(anneal, "anneal")
    G = max(int(groups.max()) + 1, model.n_segments)
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    hist = {k: [] for k in ("loss", "ce", "rate", "beta", "temperature")}
    t0 = time.perf_counter()
    for epoch in range(n_epochs):
        temp = (
            anneal_temperature(epoch, n_epochs, model.final_temp)
            if anneal
            else model.final_temp
        )
        b_e = anneal_beta(epoch, n_epochs, beta) if anneal else beta
        model.set_temperature(temp)
        sums = np.zeros(3)
        for idx in _batches(len(y), batch, gen):
            xb, gb, yb = x[idx].to(device), groups[idx].to(device), y[idx].to(device)
            if model.dynamic:
                tau = tau_min + (tau_max - tau_min) * torch.rand(
                    len(idx), generator=gen
                )
            else:
                tau = torch.full((len(idx),), fixed_tau)
            tau = tau.to(device)
            out = model(
                xb,
                gb,
                tau if model.dynamic else None,
                rng=gen if device == "cpu" else None,
            )
            parts = p2p_loss(
                out.logits,
                yb,
                out.group_probs,
                _group_size(gb, G),
                out.cov,
                tau,
                b_e,
                gamma,
                variant,
            )
            opt.zero_grad()
            parts.total.backward()
            opt.step()
            sums += np.array(
                [
                    float(parts.total.detach()),
                    float(parts.ce.detach()),
                    float(parts.rate.detach().mean()),
                ]
            ) * len(idx)
        for k, v in zip(("loss", "ce", "rate"), sums / len(y)):
            hist[k].append(float(v))
        hist["beta"].append(b_e)
        hist["temperature"].append(temp)
    model.eval()
    hist["seconds"] = time.perf_counter() - t0
    return hist


def evaluate_classifier(
    clf: Any, x: Any, y: Any, batch: int = 500, device: str = "cpu"
) -> dict[str, Any]:
    """Accuracy and predictions of a classifier on full images.

    Returns:
        dict with ``accuracy`` (float), ``pred`` (N,) int64 array.
    """
    import torch

    batch = check_int(batch, "batch", low=1)
    clf.to(device).eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(y), batch):
            preds.append(clf(x[i : i + batch].to(device)).argmax(1).cpu())
    pred = torch.cat(preds).numpy()
    return {"accuracy": float((pred == np.asarray(y)).mean()), "pred": pred}


def evaluate_p2p(
    model: Any,
    x: Any,
    groups: Any,
    y: Any,
    kappa: float | None = None,
    tau: float | None = None,
    batch: int = 300,
    device: str = "cpu",
) -> dict[str, Any]:
    """Test-time P2P: hard masks, with the dynamic threshold search at ``kappa`` or a given ``tau``.

    Args:
        model: a trained :class:`~icml25.p2p.P2P`. x, groups, y: test tensors.
        kappa: certainty threshold in (0, 1) for a dynamic model (searched ``tau`` per image).
        tau: a fixed budget in (0, 1] for a dynamic model (no search); ignored by a fixed model.
        batch: images per forward. device: torch device string.

    Returns:
        dict with ``accuracy``, ``pred`` (N,), ``tau`` (N,), ``kept`` (N,) kept pixel fraction,
        ``mask`` (N, H, W) bool kept pixels, ``group_probs`` (N, G) float32, ``confidence`` (N,).

    Raises:
        ValueError: a dynamic model without ``kappa`` or ``tau``, ``kappa`` outside (0, 1).
    """
    import torch

    batch = check_int(batch, "batch", low=1)
    if model.dynamic and kappa is None and tau is None:
        raise ValueError("kappa or tau must be given for a dynamic P2P")
    if kappa is not None:
        kappa = check_real(
            kappa, "kappa", low=0.0, low_open=True, high=1.0, high_open=True
        )
    model.to(device).eval()
    G = max(int(groups.max()) + 1, model.n_segments)
    keep = {k: [] for k in ("pred", "tau", "mask", "group_probs", "confidence")}
    with torch.no_grad():
        for i in range(0, len(y), batch):
            xb, gb = x[i : i + batch].to(device), groups[i : i + batch].to(device)
            if model.dynamic and kappa is not None:
                t, out = model.find_dynamic_threshold(xb, gb, kappa)
            else:
                t = torch.full(
                    (len(xb),),
                    float(tau if (model.dynamic and tau is not None) else np.nan),
                )
                out = model(xb, gb, t.to(device) if model.dynamic else None)
            probs = out.group_probs
            if probs.shape[1] < G:
                probs = torch.nn.functional.pad(probs, (0, G - probs.shape[1]))
            keep["pred"].append(out.logits.argmax(1).cpu())
            keep["confidence"].append(torch.softmax(out.logits, 1).max(1).values.cpu())
            keep["tau"].append(t.cpu())
            keep["mask"].append((out.mask[:, 0] > 0.5).cpu())
            keep["group_probs"].append(probs.cpu())
    res = {k: torch.cat(v).numpy() for k, v in keep.items()}
    res["accuracy"] = float((res["pred"] == np.asarray(y)).mean())
    res["kept"] = res["mask"].reshape(len(y), -1).mean(1)
    return res


def evaluate_p2p_kappas(
    model: Any,
    x: Any,
    groups: Any,
    y: Any,
    kappas: Any,
    batch: int = 300,
    step: float = DEFAULTS.tau_step,
    device: str = "cpu",
) -> dict[float, dict[str, Any]]:
    """:func:`evaluate_p2p` at several certainty levels from one sweep of the budget grid.

    In eval mode an image's output does not depend on the other images of its batch, so running
    :meth:`~icml25.p2p.P2P.find_dynamic_threshold` once per ``kappa`` is the same as evaluating
    every image at ``tau = step, 2 step, ..., 1`` and recording, for each ``kappa``, the first
    budget at which it is ``kappa``-confident (``1`` if none). This does the latter, stopping once
    every image has reached the largest ``kappa``: one sweep instead of one per ``kappa``
    (``tests/test_p2p.py`` checks the equality).

    Args:
        model: a trained dynamic :class:`~icml25.p2p.P2P`. x, groups, y: test tensors.
        kappas: certainty levels in (0, 1). batch: images per forward. step: grid step in (0, 1].
        device: torch device string.

    Returns:
        ``{kappa: result}``, each result as :func:`evaluate_p2p` returns.

    Raises:
        ValueError: a fixed-budget model, ``kappa`` outside (0, 1), ``step`` outside (0, 1].
    """
    import math

    import torch

    if not model.dynamic:
        raise ValueError("evaluate_p2p_kappas needs a dynamic P2P (dynamic=True)")
    ks = [
        check_real(k, "kappas", low=0.0, low_open=True, high=1.0, high_open=True)
        for k in kappas
    ]
    step = check_real(step, "step", low=0.0, low_open=True, high=1.0)
    batch = check_int(batch, "batch", low=1)
    model.to(device).eval()
    G = max(int(groups.max()) + 1, model.n_segments)
    K = max(1, int(math.ceil(1.0 / step - 1e-9)))
    fields = ("pred", "tau", "mask", "group_probs", "confidence")
    keep = {k: {f: [] for f in fields} for k in ks}
    with torch.no_grad():
        for i in range(0, len(y), batch):
            xb, gb = x[i : i + batch].to(device), groups[i : i + batch].to(device)
            B = len(xb)
            h = model.predictor.features(xb)
            rec = {k: None for k in ks}
            done = {k: torch.zeros(B, dtype=torch.bool) for k in ks}
            for k_grid in range(1, K + 1):
                tau = torch.full((B,), min(1.0, k_grid * step), device=device)
                out = model._forward(xb, h, gb, tau, G, None)
                conf = torch.softmax(out.logits, 1).max(1).values.cpu()
                probs = out.group_probs.cpu()
                if probs.shape[1] < G:
                    probs = torch.nn.functional.pad(probs, (0, G - probs.shape[1]))
                now = {
                    "pred": out.logits.argmax(1).cpu(),
                    "tau": tau.cpu(),
                    "mask": (out.mask[:, 0] > 0.5).cpu(),
                    "group_probs": probs,
                    "confidence": conf,
                }
                for k in ks:
                    new = ~done[k] & ((conf >= k) | (k_grid == K))
                    if rec[k] is None:
                        rec[k] = {f: v.clone() for f, v in now.items()}
                    for f in fields:
                        rec[k][f][new] = now[f][new]
                    done[k] |= new
                if all(bool(d.all()) for d in done.values()):
                    break
            for k in ks:
                for f in fields:
                    keep[k][f].append(rec[k][f])
    out_all = {}
    for k in ks:
        res = {f: torch.cat(v).numpy() for f, v in keep[k].items()}
        res["accuracy"] = float((res["pred"] == np.asarray(y)).mean())
        res["kept"] = res["mask"].reshape(len(y), -1).mean(1)
        out_all[k] = res
    return out_all
