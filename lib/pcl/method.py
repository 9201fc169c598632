"""Predictive consistency learning: label corruption, the PCL objective and multistep inference.

Li, Ma, Yang, Wu, Zha, Yan, "Generative Modeling Reinvents Supervised Learning: Label Repurposing
with Predictive Consistency Learning", ICML 2025. A network ``f(x, y_t, t)`` receives, beside the
input ``x``, a copy ``y_t`` of the label corrupted to noise step ``t``, and is trained (Alg. 1) on

    L_PCL = E[ lam1 d(f(x, y_t, t), y) + lam1 d(f(x, y_t', t'), y) + lam2 d(f(x, y_t, t), f(x, y_t', t')) ]

At test time (Alg. 2) it starts from the terminal prior and alternates prediction and re-corruption
along decreasing steps ``t_1 = T - 1 > t_2 > ... > t_n``. Quoted from the paper: the loss, the
two algorithms, ``T = 1000`` and 5 iterations for n-body. Reconstructions (options below, the
chapter's choice in :data:`icml25.pcl.DEFAULTS`): the schedule, the categorical kernel, the law of
``t, t'``, stop-gradient, the consistency distance for categorical labels, the inference times and
the re-corruption rule.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from icml25.checks import (
    check_budget,
    check_choice,
    check_int,
    check_tensor,
    check_torch_generator,
)
from icml25.kernels import label_noise

from ._checks import (
    _check_alpha_bar,
    _check_input,
    _check_labels,
    _check_lams,
    _check_t,
    _check_target,
)

__all__ = [
    "LABEL_TYPES",
    "T_LAWS",
    "STOPGRADS",
    "CONSISTENCIES",
    "RECORRUPTS",
    "ddpm_alpha_bar",
    "gaussian_label_noise",
    "categorical_label_noise",
    "embedding_label_noise",
    "sample_times",
    "pcl_loss",
    "inference_times",
    "pcl_predict",
    "predict_from_hint",
    "hint_dependence",
]

LABEL_TYPES = ("gaussian", "categorical")
T_LAWS = ("uniform", "low_high")
STOPGRADS = (None, "low", "high")
CONSISTENCIES = ("kl", "mse")
RECORRUPTS = ("argmax", "probs")


def ddpm_alpha_bar(T: int = 1000, kind: str = "linear") -> np.ndarray:
    """The DDPM cumulative signal fraction ``alpha_bar_t = prod_{s <= t} (1 - beta_s)``, t = 0..T-1.

    ``"linear"``: ``beta_t`` evenly from 1e-4 to 0.02 scaled by ``1000 / T`` (Ho et al. 2020);
    ``"cosine"``: ``alpha_bar_t = cos^2(pi/2 (t/T + s)/(1 + s)) / cos^2(pi/2 s/(1 + s))``, ``s = 0.008``,
    via betas clipped at 0.999 (Nichol and Dhariwal 2021). Which one the paper uses is not
    confirmed; the chapter assumes linear.

    Args:
        T: number of steps, >= 2. kind: ``"linear"`` or ``"cosine"``.

    Returns:
        ``(T,)`` float64, strictly decreasing in (0, 1].

    Raises:
        ValueError: ``T < 2`` or an unknown ``kind``. TypeError: ``T`` not an int.
    """
    T = check_int(T, "T", low=2)
    kind = check_choice(kind, "kind", ("linear", "cosine"))
    return _alpha_bar(T, kind)


def _alpha_bar(T: int, kind: str) -> np.ndarray:
    if kind == "linear":
        scale = 1000.0 / T
        betas = np.linspace(scale * 1e-4, min(scale * 0.02, 0.999), T)
    else:
        s = 0.008
        f = np.cos(0.5 * math.pi * (np.arange(T + 1) / T + s) / (1 + s)) ** 2
        betas = np.clip(1.0 - f[1:] / f[:-1], 1e-8, 0.999)
    return np.cumprod(1.0 - betas)


def _gen(rng: Any) -> Any:
    return check_torch_generator(rng, "rng")


def gaussian_label_noise(
    y: torch.Tensor, t: Any, alpha_bar: Any, rng: Any = None
) -> torch.Tensor:
    """``y_t = sqrt(alpha_bar_t) y + sqrt(1 - alpha_bar_t) eps``, ``eps ~ N(0, I)`` (continuous labels).

    Args:
        y: ``(B, ...)`` float tensor. t: an int or ``(B,)`` ints in [0, T). alpha_bar: ``(T,)``
            decreasing in (0, 1]. rng: ``torch.Generator`` (``None``: torch's global generator).

    Returns:
        ``(B, ...)`` tensor like ``y``.

    Raises:
        ValueError: ``t`` outside [0, T), ``alpha_bar`` not decreasing in (0, 1], shapes.
        TypeError: ``y`` not floating, ``rng`` not a generator.
    """
    y = check_tensor(y, "y")
    if y.ndim < 1:
        raise ValueError(f"y must have shape (B, ...), got {tuple(y.shape)}")
    ab = _check_alpha_bar(alpha_bar)
    t = _check_t(t, ab.shape[0], y.shape[0])
    return label_noise.gaussian_corrupt(y, ab[t].to(y.device, y.dtype), rng=_gen(rng))


def categorical_label_noise(
    y: torch.Tensor,
    t: Any,
    alpha_bar: Any,
    K: int,
    uniforms: Any = None,
    rng: Any = None,
) -> torch.Tensor:
    """Uniform-transition corruption ``q(y_t | y) = Cat(alpha_bar_t e_y + (1 - alpha_bar_t) 1/K)``, one-hot.

    Integer labels ``(B, ...)`` or probabilities ``(B, K, ...)`` (soft re-corruption: ``e_y`` is
    replaced by the row). The exact categorical kernel of the paper is not confirmed: this
    uniform-transition kernel (Austin et al. 2021, D3PM) is the chapter's assumption.

    Args:
        y: labels in [0, K) or probabilities. t: an int or ``(B,)`` ints in [0, T).
        alpha_bar: ``(T,)`` decreasing in (0, 1]. K: classes, >= 2.
        uniforms: ``(B, 2, ...)`` in [0, 1) (the kernel's contract), or ``None`` to draw from ``rng``.
        rng: ``torch.Generator`` (``None``: torch's global generator).

    Returns:
        ``(B, K, ...)`` float32 one-hot tensor.

    Raises:
        ValueError: labels outside [0, K), ``t`` outside [0, T), ``alpha_bar`` not decreasing in
        (0, 1], shape mismatches. TypeError: bad kinds.
    """
    K = check_int(K, "K", low=2)
    if not isinstance(y, torch.Tensor):
        y = torch.as_tensor(np.asarray(y))
    n_pos = float(y.numel()) / (K if y.is_floating_point() else 1)
    check_budget(
        f"categorical_label_noise(y of shape {tuple(y.shape)}, K={K})",
        n_bytes=4.0 * (K + 3) * n_pos,
    )
    if not y.is_floating_point():
        y = _check_labels(y, K)
    ab = _check_alpha_bar(alpha_bar)
    t = _check_t(t, ab.shape[0], y.shape[0])
    return label_noise.categorical_corrupt(
        y, ab[t].float().to(y.device), K, uniforms=uniforms, rng=_gen(rng)
    )


def embedding_label_noise(
    E: torch.Tensor, y: torch.Tensor, t: Any, alpha_bar: Any, rng: Any = None
) -> torch.Tensor:
    """Gaussian noise on label embeddings, ``sqrt(alpha_bar_t) E[y] + sqrt(1 - alpha_bar_t) eps``.

    The paper's choice for very large label spaces (LLM tokens): the hint is a perturbed
    embedding of the target tokens rather than a corrupted one-hot.

    Args:
        E: ``(V, d)`` float embedding table. y: ``(B, ...)`` int token ids in [0, V).
        t: an int or ``(B,)`` ints in [0, T). alpha_bar: ``(T,)``. rng: ``torch.Generator`` or ``None``.

    Returns:
        ``(B, ..., d)`` float tensor.

    Raises:
        ValueError: ids outside [0, V), ``t``/``alpha_bar`` as above, ``E`` not 2-D.
    """
    E = check_tensor(E, "E", ndim=2)
    y = _check_labels(y, E.shape[0])
    ab = _check_alpha_bar(alpha_bar)
    t = _check_t(t, ab.shape[0], y.shape[0])
    return label_noise.gaussian_corrupt(
        E[y.to(E.device)], ab[t].to(E.device, E.dtype), rng=_gen(rng)
    )


def sample_times(
    B: int, T: int, t_law: str = "uniform", rng: Any = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw the two noise steps of Alg. 1, returned sorted so that ``t < t'`` elementwise.

    ``"uniform"``: ``t, t'`` independent uniform on {0..T-1} given ``t != t'`` (the chapter's
    assumption). ``"low_high"``: ``t`` uniform on {0..T-2} and ``t' = T - 1`` (one branch always
    at the inference condition, an alternative).

    Args:
        B: batch size >= 1. T: steps >= 2. t_law: as above. rng: ``torch.Generator`` or ``None``.

    Returns:
        ``(t, t')``, two ``(B,)`` int64 tensors, ``t < t'``.

    Raises:
        ValueError: ``B < 1``, ``T < 2``, unknown ``t_law``.
    """
    B, T = check_int(B, "B", low=1), check_int(T, "T", low=2)
    t_law = check_choice(t_law, "t_law", T_LAWS)
    check_budget(f"sample_times(B={B})", n_bytes=4 * 8.0 * B)
    return _sample_times(B, T, t_law, _gen(rng))


def _sample_times(
    B: int, T: int, t_law: str, gen: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    if t_law == "low_high":
        return torch.randint(
            0, T - 1, (B,), generator=gen, device=_dev(gen)
        ), torch.full((B,), T - 1, dtype=torch.long)
    a = torch.randint(0, T, (B,), generator=gen, device=_dev(gen))
    b = torch.randint(0, T - 1, (B,), generator=gen, device=_dev(gen))
    b = b + (b >= a).long()  # uniform over {0..T-1} \ {a}
    return torch.minimum(a, b), torch.maximum(a, b)


def _dev(gen: Any) -> Any:
    return gen.device if gen is not None else "cpu"


def _dist(out: torch.Tensor, y: torch.Tensor, label_type: str) -> torch.Tensor:
    """``d(prediction, label)``: cross-entropy for categorical logits, MSE for continuous."""
    if label_type == "categorical":
        return torch.nn.functional.cross_entropy(out, y)
    return torch.mean((out - y) ** 2)


def _consistency(
    lo: torch.Tensor, hi: torch.Tensor, label_type: str, kind: str
) -> torch.Tensor:
    """``d(f(x, y_t, t), f(x, y_t', t'))`` with ``t < t'``: KL(p_lo || p_hi) per position, or MSE."""
    if label_type == "categorical":
        if kind == "kl":
            logp_lo, logp_hi = (
                torch.log_softmax(lo, dim=1),
                torch.log_softmax(hi, dim=1),
            )
            return torch.mean(torch.sum(logp_lo.exp() * (logp_lo - logp_hi), dim=1))
        return torch.mean((torch.softmax(lo, dim=1) - torch.softmax(hi, dim=1)) ** 2)
    return torch.mean((lo - hi) ** 2)


def _pcl_objective(
    model: Any,
    x: Any,
    y: torch.Tensor,
    y_t: torch.Tensor,
    t: torch.Tensor,
    y_t2: torch.Tensor,
    t2: torch.Tensor,
    lam1: float,
    lam2: float,
    label_type: str,
    stopgrad: str | None,
    consistency: str,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Alg. 1's loss on corrupted hints ``y_t`` (step ``t``) and ``y_t2`` (step ``t2 > t``).

    L = lam1 d(f(x, y_t, t), y) + lam1 d(f(x, y_t', t'), y) + lam2 d(f(x, y_t, t), f(x, y_t', t')).
    ``stopgrad="low"`` detaches the less noisy branch inside the consistency term (it acts as
    the teacher), ``"high"`` the noisier one, ``None`` neither (the chapter's assumption).
    """
    out_lo = model(x, y_t, t)  # f(x, y_t, t), the more informative hint
    out_hi = model(x, y_t2, t2)  # f(x, y_t', t')
    sup_lo, sup_hi = _dist(out_lo, y, label_type), _dist(out_hi, y, label_type)
    c_lo = out_lo.detach() if stopgrad == "low" else out_lo
    c_hi = out_hi.detach() if stopgrad == "high" else out_hi
    cons = _consistency(c_lo, c_hi, label_type, consistency)
    loss = lam1 * (sup_lo + sup_hi) + lam2 * cons
    return loss, {
        "sup_t": float(sup_lo.detach()),
        "sup_t2": float(sup_hi.detach()),
        "consistency": float(cons.detach()),
    }


def _batch_size(x: Any) -> int:
    return int((x[0] if isinstance(x, (tuple, list)) else x).shape[0])


def _corrupt(
    model: Any, y: torch.Tensor, ab_t: torch.Tensor, label_type: str, gen: Any
) -> torch.Tensor:
    if label_type == "categorical":
        return label_noise.categorical_corrupt(
            y, ab_t.float(), model.n_classes, rng=gen
        )
    return label_noise.gaussian_corrupt(y, ab_t.to(y.dtype), rng=gen)


def _check_model(model: Any, label_type: str | None) -> str:
    if not callable(model) or not getattr(model, "hint", False):
        raise TypeError(
            "model must be a hinted network (HintedUNet/HintedMLP/HintedEGNN with hint=True)"
        )
    label_type = (
        getattr(model, "label_type", None) if label_type is None else label_type
    )
    label_type = check_choice(label_type, "label_type", LABEL_TYPES)
    if label_type == "categorical" and not hasattr(model, "n_classes"):
        raise TypeError("a categorical model must have an n_classes attribute")
    return label_type


def pcl_loss(
    model: Any,
    x: Any,
    y: torch.Tensor,
    alpha_bar: Any,
    lam1: float = 1.0,
    lam2: float = 1.0,
    label_type: str | None = None,
    t_law: str = "uniform",
    stopgrad: str | None = None,
    consistency: str | None = None,
    rng: Any = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The PCL training loss of Alg. 1 on one batch, and its three terms.

    Draws ``t < t'`` (:func:`sample_times`), corrupts ``y`` twice (categorical: the
    ``label_noise`` kernel; continuous: Gaussian), and evaluates the objective (:func:`_pcl_objective`).

    Args:
        model: a hinted network (``hint=True``). x: its input batch (a tensor, or a tuple for
            the EGNN). y: ``(B, H, W)`` int labels (categorical) or ``(B, ...)`` float (gaussian).
        alpha_bar: ``(T,)`` decreasing in (0, 1]. lam1, lam2: weights >= 0.
        label_type: ``"gaussian"`` or ``"categorical"`` (default: ``model.label_type``).
        t_law: ``"uniform"`` or ``"low_high"``. stopgrad: ``None``, ``"low"`` or ``"high"``.
        consistency: ``"kl"`` or ``"mse"`` (default: ``"kl"`` categorical, ``"mse"`` gaussian;
            ``"kl"`` needs categorical labels). rng: ``torch.Generator`` or ``None``.

    Returns:
        ``(loss, terms)``: a scalar tensor with gradient, and floats ``sup_t``, ``sup_t2``,
        ``consistency``.

    Raises:
        ValueError: negative ``lam1``/``lam2``, labels outside [0, K), bad ``alpha_bar``, ``x`` or
        ``y`` not matching the network (channels, size, hint shape), NaN/inf in ``x`` or ``y``,
        unknown options. TypeError: a model without hints, bad kinds.
    """
    label_type = _check_model(model, label_type)
    lam1, lam2 = _check_lams(lam1, lam2)
    ab = _check_alpha_bar(alpha_bar)
    t_law = check_choice(t_law, "t_law", T_LAWS)
    stopgrad = check_choice(stopgrad, "stopgrad", STOPGRADS)
    consistency = check_choice(
        "kl"
        if consistency is None and label_type == "categorical"
        else (consistency or "mse"),
        "consistency",
        CONSISTENCIES,
    )
    if consistency == "kl" and label_type != "categorical":
        raise ValueError("consistency='kl' needs label_type='categorical'")
    gen = _gen(rng)
    x = _check_input(model, x)
    B = _batch_size(x)
    y = _check_target(model, x, y, label_type)
    t, t2 = _sample_times(B, ab.shape[0], t_law, gen)
    dev = y.device
    y_t = _corrupt(model, y, ab[t].to(dev), label_type, gen)
    y_t2 = _corrupt(model, y, ab[t2].to(dev), label_type, gen)
    return _pcl_objective(
        model,
        x,
        y,
        y_t,
        t.to(dev),
        y_t2,
        t2.to(dev),
        lam1,
        lam2,
        label_type,
        stopgrad,
        consistency,
    )


def inference_times(T: int, n_steps: int) -> list[int]:
    """Evenly spaced decreasing steps ``t_i = round(T - 1 - i T / n_steps)``, i = 0..n_steps-1.

    ``n_steps = 1`` gives ``[T - 1]``; ``T = 1000, n_steps = 5`` gives ``[999, 799, 599, 399, 199]``.
    The paper's spacing is not confirmed: this is the chapter's assumption.

    Raises:
        ValueError: ``T < 2`` or ``n_steps`` outside [1, T].
    """
    T = check_int(T, "T", low=2)
    n_steps = check_int(n_steps, "n_steps", low=1, high=T)
    return [int(round(T - 1 - i * T / n_steps)) for i in range(n_steps)]


def _prior(model: Any, x: Any, label_type: str, gen: Any) -> torch.Tensor:
    """A draw of the terminal prior: uniform one-hot classes, or ``N(0, I)``."""
    shape = model.hint_shape(x)
    dev = (x[0] if isinstance(x, (tuple, list)) else x).device
    if label_type == "categorical":
        B, K, *spatial = shape
        zeros = torch.zeros((B, *spatial), dtype=torch.long, device=dev)
        return label_noise.categorical_corrupt(
            zeros, torch.zeros(B, device=dev), K, rng=gen
        )
    return (
        torch.randn(shape, generator=gen, device=gen.device).to(dev)
        if gen is not None
        else torch.randn(shape, device=dev)
    )


def _multistep(
    model: Any,
    x: Any,
    ts: list[int],
    ab: torch.Tensor,
    label_type: str,
    recorrupt: str,
    gen: Any,
) -> list[torch.Tensor]:
    """Alg. 2: from the prior, predict at ``t_1``, re-corrupt the prediction to ``t_2``, and so on."""
    B = _batch_size(x)
    y_hint = _prior(model, x, label_type, gen)  # y_{t_1} ~ terminal prior
    preds = []
    for i, t_i in enumerate(ts):
        out = model(
            x, y_hint, torch.full((B,), t_i, dtype=torch.long, device=y_hint.device)
        )
        preds.append(out)
        if i + 1 < len(ts):
            ab_next = ab[ts[i + 1]].expand(B).to(y_hint.device)
            if label_type == "categorical":
                y_hat = (
                    out.argmax(dim=1)
                    if recorrupt == "argmax"
                    else torch.softmax(out, dim=1)
                )
            else:
                y_hat = out
            # y_{t_{i+1}} ~ q(. | y_hat_i)
            y_hint = _corrupt(model, y_hat, ab_next, label_type, gen)
    return preds


@torch.no_grad()
def pcl_predict(
    model: Any,
    x: Any,
    alpha_bar: Any,
    n_steps: int = 5,
    label_type: str | None = None,
    recorrupt: str = "argmax",
    ts: list[int] | None = None,
    rng: Any = None,
) -> list[torch.Tensor]:
    """Multistep prediction (Alg. 2): every intermediate prediction, the last being the output.

    Args:
        model: a hinted network. x: its input batch. alpha_bar: ``(T,)``.
        n_steps: inference steps >= 1 (ignored when ``ts`` is given).
        label_type: as :func:`pcl_loss`. recorrupt: ``"argmax"`` (hard labels) or ``"probs"``
            (sample from the softmax); categorical only.
        ts: explicit decreasing steps in [0, T), or ``None`` for :func:`inference_times`.
        rng: ``torch.Generator`` or ``None``.

    Returns:
        ``n_steps`` tensors: logits ``(B, K, ...)`` or values ``(B, ...)``.

    Raises:
        ValueError: ``n_steps < 1``, ``ts`` not decreasing or outside [0, T), unknown options,
        ``x`` not matching the network or not finite. TypeError: a model without hints.
    """
    label_type = _check_model(model, label_type)
    ab = _check_alpha_bar(alpha_bar)
    T = ab.shape[0]
    recorrupt = check_choice(recorrupt, "recorrupt", RECORRUPTS)
    if ts is None:
        ts = inference_times(T, check_int(n_steps, "n_steps", low=1, high=T))
    else:
        ts = [int(v) for v in _check_t(list(ts), T).tolist()]
        if any(a <= b for a, b in zip(ts, ts[1:])):
            raise ValueError(f"ts must be strictly decreasing, got {ts}")
        if not ts:
            raise ValueError("ts must hold at least one step")
    x = _check_input(model, x)
    was_training = model.training
    model.eval()
    try:
        return _multistep(model, x, ts, ab, label_type, recorrupt, _gen(rng))
    finally:
        model.train(was_training)


@torch.no_grad()
def predict_from_hint(
    model: Any, x: Any, y: torch.Tensor, t: Any, alpha_bar: Any, rng: Any = None
) -> torch.Tensor:
    """One forward pass with the *true* label corrupted to step ``t`` as the hint (error vs t).

    Args:
        model, x: as :func:`pcl_predict`. y: the clean labels. t: an int or ``(B,)`` in [0, T).
        alpha_bar: ``(T,)``. rng: ``torch.Generator`` or ``None``.

    Returns:
        logits ``(B, K, ...)`` or values ``(B, ...)``.

    Raises:
        ValueError: as :func:`pcl_loss`.
    """
    label_type = _check_model(model, None)
    ab = _check_alpha_bar(alpha_bar)
    x = _check_input(model, x)
    B = _batch_size(x)
    t = _check_t(t, ab.shape[0], B)
    y = _check_target(model, x, y, label_type)
    gen = _gen(rng)
    was_training = model.training
    model.eval()
    try:
        return model(
            x, _corrupt(model, y, ab[t].to(y.device), label_type, gen), t.to(y.device)
        )
    finally:
        model.train(was_training)


@torch.no_grad()
def hint_dependence(
    model: Any,
    x: Any,
    y: torch.Tensor,
    t: int,
    t2: int,
    alpha_bar: Any,
    rng: Any = None,
) -> float:
    """``E ||f(x, y_t, t) - f(x, y_t', t')||^2`` per coordinate: how much the output moves with the hint.

    Both hints are corruptions of the same clean ``y`` with independent noise; for categorical
    models the outputs compared are softmax probabilities. The third PCL term at fixed ``t, t'``.

    Args:
        model, x, y: as :func:`predict_from_hint`. t, t2: steps in [0, T). alpha_bar: ``(T,)``.
        rng: ``torch.Generator`` or ``None``.

    Returns:
        the mean squared difference (float, >= 0).

    Raises:
        ValueError: as :func:`predict_from_hint`.
    """
    label_type = _check_model(model, None)
    a = predict_from_hint(model, x, y, t, alpha_bar, rng)
    b = predict_from_hint(model, x, y, t2, alpha_bar, rng)
    if label_type == "categorical":
        a, b = torch.softmax(a, dim=1), torch.softmax(b, dim=1)
    return float(label_noise.pcl_terms(a, b, a)[2])
