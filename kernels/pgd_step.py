"""PGD kernels of chapter 03 (Yang et al., "Variance as a Catalyst", ICML 2025).

Two kernels (``pgd_step.cu``), each with a reference (the contract), a CuPy launcher and a
dispatcher. Torch in, torch out (on the input's device), or NumPy in, NumPy out:

- :func:`pgd_step`: the fused sign step and double projection of projected gradient ascent,
  ``delta' = clip(clip(delta + alpha sign(g), -eps, eps), -x, 1 - x)`` (PID's update,
  ``PID.py``); bitwise equal to the torch expression.
- :func:`posterior_stats`: per image ``b``, ``V_b = sum_j sigma_j^2``, ``sum_j log sigma_j``, the
  number of clamped log-variances, and the number of pixels where two gradients have the same
  sign (the sign agreement of ``grad L`` with ``grad V``). Sums in float64 (1e-6 relative).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_real, check_tensor
from icml25.common import gpu_available

__all__ = [
    "pgd_step",
    "pgd_step_reference",
    "pgd_step_gpu",
    "posterior_stats",
    "posterior_stats_reference",
    "posterior_stats_gpu",
    "LOGVAR_CLAMP",
]

#: diffusers' DiagonalGaussianDistribution clamp of the log-variance
LOGVAR_CLAMP = (-30.0, 20.0)
_BLOCK = 256


def _is_torch(a: Any) -> bool:
    import torch

    return isinstance(a, torch.Tensor)


# ----------------------------------------------------------------------------- PGD step


def _check_step(delta: Any, grad: Any, x: Any, eps: Any, alpha: Any) -> tuple[Any, ...]:
    for name, t in (("grad", grad), ("x", x)):
        if _is_torch(t) != _is_torch(delta):
            raise TypeError(
                f"{name} must be of delta's kind ({type(delta).__name__}: all torch tensors or all "
                f"NumPy arrays), got {type(t).__name__}"
            )
    if _is_torch(delta):
        delta = check_tensor(delta, "delta")
        grad = check_tensor(grad, "grad")
        x = check_tensor(x, "x")
    else:
        delta = check_array(delta, "delta", dtype=np.float32)
        grad = check_array(grad, "grad", dtype=np.float32)
        x = check_array(x, "x", dtype=np.float32)
    for name, t in (("grad", grad), ("x", x)):
        if tuple(t.shape) != tuple(delta.shape):
            raise ValueError(
                f"{name} must have the shape of delta {tuple(delta.shape)}, got {tuple(t.shape)}"
            )
    if int(np.prod(tuple(x.shape))) and (float(x.min()) < 0.0 or float(x.max()) > 1.0):
        raise ValueError(
            f"x must be a clean image in [0, 1], got values in [{float(x.min()):.4g}, {float(x.max()):.4g}]"
        )
    eps = check_real(eps, "eps", low=0.0, low_open=True)
    alpha = check_real(alpha, "alpha", low=0.0, low_open=True)
    return delta, grad, x, eps, alpha


def _step_torch(delta: Any, grad: Any, x: Any, eps: float, alpha: float) -> Any:
    import torch

    d = delta + alpha * torch.sign(grad)  # ascent: alpha * sign(grad L)
    d = torch.clamp(d, -eps, eps)  # onto the l-infinity ball
    return torch.clamp(d, -x, 1 - x)  # x + delta in [0, 1]


def pgd_step_reference(delta: Any, grad: Any, x: Any, eps: float, alpha: float) -> Any:
    """``clip(clip(delta + alpha sign(grad), -eps, eps), -x, 1 - x)`` (the reference, float32).

    Args:
        delta, grad, x: arrays or tensors of one shape (float32): the perturbation, the gradient
            of the loss w.r.t. it, the clean image in [0, 1].
        eps: l-infinity radius (> 0); alpha: step (> 0).

    Returns:
        the new delta, the input's kind (torch on its device, or NumPy float32).

    Raises:
        ValueError: shapes differ, eps or alpha <= 0, non-finite values, x outside [0, 1].
        TypeError: not numeric, or torch and NumPy arguments mixed.
    """
    delta, grad, x, eps, alpha = _check_step(delta, grad, x, eps, alpha)
    if _is_torch(delta):
        return _step_torch(delta, grad, x, eps, alpha)
    import torch

    return _step_torch(
        *(torch.from_numpy(np.ascontiguousarray(a)) for a in (delta, grad, x)),
        eps,
        alpha,
    ).numpy()


def pgd_step_gpu(
    delta: Any, grad: Any, x: Any, eps: float, alpha: float
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`pgd_step` (CuPy float32 arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    delta, grad, x = (
        cp.ascontiguousarray(cp.asarray(a, dtype=cp.float32)) for a in (delta, grad, x)
    )
    out = cp.empty_like(delta)
    n = int(delta.size)
    fn = load_module("pgd_step").get_function("pgd_step")
    grid = max(1, min((n + _BLOCK - 1) // _BLOCK, 65535))
    fn(
        (grid,),
        (_BLOCK,),
        (delta, grad, x, np.float32(eps), np.float32(alpha), out, np.int64(n)),
    )
    return out


def pgd_step(
    delta: Any, grad: Any, x: Any, eps: float, alpha: float, validate: bool = True
) -> Any:
    """The fused PGD step (contract of :func:`pgd_step_reference`), on the GPU when one is usable.

    ``validate=False`` skips the checks (for :func:`icml25.vae_variance_attack.pgd_protect`, which
    validated its inputs once). Torch in, torch out; NumPy in, NumPy out.
    """
    if validate:
        delta, grad, x, eps, alpha = _check_step(delta, grad, x, eps, alpha)
    if _is_torch(delta):
        if delta.is_cuda and gpu_available():  # pragma: no cover - GPU
            import cupy as cp
            import torch

            out = pgd_step_gpu(
                *(
                    cp.from_dlpack(t.detach().float().contiguous())
                    for t in (delta, grad, x)
                ),
                eps,
                alpha,
            )
            return torch.from_dlpack(out).view_as(delta)
        return _step_torch(delta, grad, x, float(eps), float(alpha))
    if gpu_available():  # pragma: no cover - GPU
        return pgd_step_gpu(delta, grad, x, eps, alpha).get()
    import torch

    return _step_torch(
        *(
            torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
            for a in (delta, grad, x)
        ),
        float(eps),
        float(alpha),
    ).numpy()


# ----------------------------------------------------------------- posterior statistics


def _check_stats(logvar: Any, g1: Any, g2: Any) -> tuple[Any, Any, Any]:
    tor = _is_torch(logvar)
    chk = (
        (lambda a, n: check_tensor(a, n))
        if tor
        else (lambda a, n: check_array(a, n, dtype=np.float32))
    )
    logvar = chk(logvar, "logvar")
    if logvar.ndim < 2:
        raise ValueError(
            f"logvar must be (B, ...) with B images, got shape {tuple(logvar.shape)}"
        )
    B = int(logvar.shape[0])
    g1 = chk(g1, "g1")
    if int(g1.shape[0]) != B:
        raise ValueError(
            f"g1 must have {B} images (the first axis of logvar), got shape {tuple(g1.shape)}"
        )
    if g2 is not None:
        g2 = chk(g2, "g2")
        if tuple(g2.shape) != tuple(g1.shape):
            raise ValueError(
                f"g2 must have the shape of g1 {tuple(g1.shape)}, got {tuple(g2.shape)}"
            )
    return logvar, g1, g2


def _stats_torch(logvar: Any, g1: Any, g2: Any, lo: float, hi: float) -> Any:
    import torch

    B = logvar.shape[0]
    lv = logvar.reshape(B, -1).double()
    V = torch.exp(lv).sum(1)  # V_b = sum_j sigma_j^2
    S = (0.5 * lv).sum(1)  # sum_j log sigma_j
    C = ((lv <= lo) | (lv >= hi)).double().sum(1)  # entries at the clamp
    if g2 is None:
        A = torch.zeros_like(V)
    else:
        A = (
            (torch.sign(g1.reshape(B, -1)) == torch.sign(g2.reshape(B, -1)))
            .double()
            .sum(1)
        )
    return torch.stack([V, S, C, A], dim=1)


def posterior_stats_reference(
    logvar: Any,
    g1: Any,
    g2: Any = None,
    lo: float = LOGVAR_CLAMP[0],
    hi: float = LOGVAR_CLAMP[1],
) -> Any:
    """Per-image ``(V, sum log sigma, n_clamped, n_agree)`` (the reference, float64 sums).

    Args:
        logvar: ``(B, ...)`` float32 clamped log-variances of the posterior.
        g1: ``(B, ...)`` float32 gradient w.r.t. the pixels (e.g. of the loss L).
        g2: ``None`` or a second gradient of ``g1``'s shape (e.g. of V); ``n_agree`` counts the
            pixels with ``sign(g1) == sign(g2)`` (0 when ``g2`` is None).
        lo, hi: the clamp; an entry with ``logvar <= lo`` or ``>= hi`` counts as clamped.

    Returns:
        ``(B, 4)`` float64, the input's kind (torch on its device, or NumPy).

    Raises:
        ValueError: batch sizes or shapes differ, non-finite values; TypeError: not numeric.
    """
    logvar, g1, g2 = _check_stats(logvar, g1, g2)
    lo, hi = check_real(lo, "lo"), check_real(hi, "hi")
    if _is_torch(logvar):
        return _stats_torch(logvar, g1, g2, lo, hi)
    import torch

    t = [
        None if a is None else torch.from_numpy(np.ascontiguousarray(a))
        for a in (logvar, g1, g2)
    ]
    return _stats_torch(*t, lo, hi).numpy()


def posterior_stats_gpu(
    logvar: Any, g1: Any, g2: Any, lo: float, hi: float
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`posterior_stats` (CuPy arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    B = int(logvar.shape[0])
    lv = cp.ascontiguousarray(cp.asarray(logvar, dtype=cp.float32)).reshape(B, -1)
    p = cp.ascontiguousarray(cp.asarray(g1, dtype=cp.float32)).reshape(B, -1)
    q = (
        p
        if g2 is None
        else cp.ascontiguousarray(cp.asarray(g2, dtype=cp.float32)).reshape(B, -1)
    )
    out = cp.empty((B, 4), dtype=cp.float64)
    fn = load_module("pgd_step").get_function("posterior_stats")
    fn(
        (B,),
        (_BLOCK,),
        (
            lv,
            p,
            q,
            np.int32(0 if g2 is None else 1),
            np.int64(lv.shape[1]),
            np.int64(p.shape[1]),
            np.float32(lo),
            np.float32(hi),
            out,
        ),
        shared_mem=4 * _BLOCK * 8,
    )
    return out


def posterior_stats(
    logvar: Any,
    g1: Any,
    g2: Any = None,
    lo: float = LOGVAR_CLAMP[0],
    hi: float = LOGVAR_CLAMP[1],
    validate: bool = True,
) -> Any:
    """Per-image posterior statistics (contract of :func:`posterior_stats_reference`), on the GPU
    when one is usable. Torch in, torch out (float64, on the input's device); NumPy in, NumPy out."""
    if validate:
        logvar, g1, g2 = _check_stats(logvar, g1, g2)
        lo, hi = check_real(lo, "lo"), check_real(hi, "hi")
    if _is_torch(logvar):
        if logvar.is_cuda and gpu_available():  # pragma: no cover - GPU
            import cupy as cp
            import torch

            conv = [
                None if a is None else cp.from_dlpack(a.detach().float().contiguous())
                for a in (logvar, g1, g2)
            ]
            return torch.from_dlpack(posterior_stats_gpu(*conv, lo, hi))
        return _stats_torch(logvar, g1, g2, float(lo), float(hi))
    if gpu_available():  # pragma: no cover - GPU
        return posterior_stats_gpu(logvar, g1, g2, lo, hi).get()
    import torch

    t = [
        None
        if a is None
        else torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
        for a in (logvar, g1, g2)
    ]
    return _stats_torch(*t, float(lo), float(hi)).numpy()
