"""Batched context log-likelihood and tiled RBF-MMD sums (chapter 04, generative intervention models).

All cells of a perturbational context share one intervention ``(I, psi)``, so the Gaussian
log-likelihood of the context under a shift ``u = I * psi`` needs only the per-context sums of the
residuals ``R = X - f(X)`` and of their squares:

    ll[k, s] = sum_j [ -(SR2[k,j] - 2 u[k,s,j] SR[k,j] + n u[k,s,j]^2) / (2 sigma_j^2) - n log sigma_j ]
               - n d log(2 pi) / 2.

That is ``O(K S d)`` work instead of the ``O(K S n d)`` of the unfused sum over cells
(:func:`context_loglik_unfused`, the definition the reference is tested against).

The MMD evaluation over hundreds of test contexts needs the three RBF block sums of every pair of
samples (:func:`mmd_sums`).

Kernels (``gim_kernels.cu``), each with a reference, a CuPy launcher and a dispatcher:

- :func:`context_loglik`: torch in, torch out (the reference is differentiable torch, and is what
  training uses on every device; the CUDA kernel serves evaluation without gradients on a GPU).
- :func:`mmd_sums`: NumPy in, NumPy out; the reference is ``scipy.spatial.distance.cdist``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml25.checks import check_array, check_int, check_positive, check_tensor
from icml25.common import gpu_available

__all__ = [
    "context_loglik",
    "context_loglik_reference",
    "context_loglik_gpu",
    "context_loglik_unfused",
    "mmd_sums",
    "mmd_sums_reference",
    "mmd_sums_gpu",
    "MAX_D_GPU",
]

_BLOCK = 256
#: the widest ``d`` the MMD kernel's shared-memory tile holds (64 rows x 64 dims)
MAX_D_GPU = 64
_LOG_2PI = math.log(2.0 * math.pi)


def _check_loglik_args(
    SR: Any, SR2: Any, shift: Any, sigma: Any, n: Any
) -> tuple[Any, Any, Any, Any, int]:
    import torch

    SR = check_tensor(SR, "SR", ndim=2)
    K, d = SR.shape
    SR2 = check_tensor(SR2, "SR2", shape=(K, d))
    shift = check_tensor(shift, "shift", ndim=3)
    if shift.shape[0] != K or shift.shape[2] != d:
        raise ValueError(
            f"shift must have shape ({K}, S, {d}), got shape {tuple(shift.shape)}"
        )
    sigma = check_tensor(sigma, "sigma", shape=(d,))
    if not torch.all(sigma > 0):
        raise ValueError("sigma must be > 0 everywhere")
    n = check_int(n, "n", low=1)
    return SR, SR2, shift, sigma, n


def context_loglik_reference(SR: Any, SR2: Any, shift: Any, sigma: Any, n: int) -> Any:
    """Gaussian log-likelihood of ``K`` contexts under ``S`` shift interventions each (torch reference).

    Args:
        SR: (K, d) tensor, ``sum_i R[k, i, j]`` over the ``n`` cells of context ``k``.
        SR2: (K, d) tensor, ``sum_i R[k, i, j]^2``.
        shift: (K, S, d) tensor, ``u = I * psi`` of each intervention sample.
        sigma: (d,) tensor of noise scales > 0.
        n: cells per context, >= 1.

    Returns:
        (K, S) tensor (dtype and device of ``SR``), differentiable in every tensor argument.

    Raises:
        ValueError: shapes disagree, non-finite values, ``sigma <= 0``, ``n < 1``.
        TypeError: not tensors.
    """
    SR, SR2, shift, sigma, n = _check_loglik_args(SR, SR2, shift, sigma, n)
    return _loglik(SR, SR2, shift, sigma, n)


def _loglik(SR: Any, SR2: Any, shift: Any, sigma: Any, n: int) -> Any:
    """``sum_j -(SR2 - 2 u SR + n u^2) / (2 sigma^2) - n log sigma - n d log(2 pi) / 2``."""
    import torch

    # sum_i (R - u)^2, (K, S, d)
    q = SR2[:, None, :] - 2.0 * shift * SR[:, None, :] + n * shift**2
    d = SR.shape[1]
    return (-q / (2.0 * sigma**2) - n * torch.log(sigma)).sum(
        -1
    ) - 0.5 * n * d * _LOG_2PI


def context_loglik_unfused(R: Any, shift: Any, sigma: Any) -> Any:
    """The definition: ``sum_{i, j} log N(R[k, i, j] - u[k, s, j]; 0, sigma_j^2)`` over cells, (K, S).

    Materialises ``(K, S, n, d)``; the test oracle of :func:`context_loglik_reference`.

    Args:
        R: (K, n, d) residual tensor. shift: (K, S, d). sigma: (d,) > 0.
    """
    import torch

    R = check_tensor(R, "R", ndim=3)
    shift = check_tensor(shift, "shift", shape=(R.shape[0], None, R.shape[2]))
    sigma = check_tensor(sigma, "sigma", shape=(R.shape[2],))
    diff = R[:, None, :, :] - shift[:, :, None, :]
    return (-0.5 * (diff / sigma) ** 2 - torch.log(sigma) - 0.5 * _LOG_2PI).sum(
        dim=(2, 3)
    )


def context_loglik_gpu(
    SR: Any, SR2: Any, shift: Any, sigma: Any, n: int
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`context_loglik`: CuPy arrays in, CuPy (K, S) out (float32 or float64).

    Trusts its arguments (validated by :func:`context_loglik`)."""
    import cupy as cp

    from icml25.kernels import load_module

    dt = cp.float64 if SR.dtype == cp.float64 else cp.float32
    SR, SR2, shift, sigma = (
        cp.ascontiguousarray(a, dtype=dt) for a in (SR, SR2, shift, sigma)
    )
    K, S, d = shift.shape
    ll = cp.empty((K, S), dtype=dt)
    fn = load_module("gim_kernels").get_function(
        "context_loglik_f64" if dt == cp.float64 else "context_loglik_f32"
    )
    fn(
        ((K * S + _BLOCK - 1) // _BLOCK,),
        (_BLOCK,),
        (SR, SR2, shift, sigma, np.int32(K), np.int32(S), np.int32(d), np.int32(n), ll),
    )
    return ll


def context_loglik(SR: Any, SR2: Any, shift: Any, sigma: Any, n: int) -> Any:
    """Context log-likelihoods (contract of :func:`context_loglik_reference`), torch in, torch out.

    The CUDA kernel runs when a GPU is usable, the tensors live on it and no gradient is needed;
    otherwise (training, CPU) the differentiable torch reference runs on the tensors' device.

    Returns:
        (K, S) tensor on the input's device; equal on both paths to 1e-5 relative (float32) and
        1e-10 (float64).

    Raises:
        as :func:`context_loglik_reference`.
    """
    import torch

    SR, SR2, shift, sigma, n = _check_loglik_args(SR, SR2, shift, sigma, n)
    needs_grad = torch.is_grad_enabled() and any(
        t.requires_grad for t in (SR, SR2, shift, sigma)
    )
    if SR.is_cuda and not needs_grad and gpu_available():  # pragma: no cover - GPU
        import cupy as cp

        args = [
            cp.from_dlpack(t.detach().contiguous()) for t in (SR, SR2, shift, sigma)
        ]
        return torch.from_dlpack(context_loglik_gpu(*args, n))
    return _loglik(SR, SR2, shift, sigma, n)


def _check_mmd_args(X: Any, Y: Any, h: Any) -> tuple[np.ndarray, np.ndarray, float]:
    X = check_array(X, "X", ndim=3)
    if min(X.shape) < 1:
        raise ValueError(
            f"X must have shape (C, n, d) with every size >= 1, got shape {X.shape}"
        )
    Y = check_array(Y, "Y", shape=(X.shape[0], None, X.shape[2]))
    if Y.shape[1] < 1:
        raise ValueError("Y must hold at least one sample per context")
    return X, Y, check_positive(h, "h")


def mmd_sums_reference(X: np.ndarray, Y: np.ndarray, h: float) -> np.ndarray:
    """RBF block sums ``[sum k(X, X), sum k(Y, Y), sum k(X, Y)]`` per context (``scipy`` cdist).

    ``k(a, b) = exp(-|a - b|^2 / (2 h^2))``; diagonal terms included.

    Args:
        X: (C, n, d) samples. Y: (C, m, d) samples. h: bandwidth > 0.

    Returns:
        (C, 3) float64.

    Raises:
        ValueError: shapes disagree, non-finite values, ``h <= 0``.
    """
    X, Y, h = _check_mmd_args(X, Y, h)
    return _mmd_sums(X, Y, h)


def _mmd_sums(X: np.ndarray, Y: np.ndarray, h: float) -> np.ndarray:
    from scipy.spatial.distance import cdist

    out = np.empty((X.shape[0], 3))
    for c in range(X.shape[0]):
        x, y = X[c].astype(np.float64), Y[c].astype(np.float64)
        for t, (a, b) in enumerate(((x, x), (y, y), (x, y))):
            out[c, t] = np.exp(-cdist(a, b, "sqeuclidean") / (2.0 * h * h)).sum()
    return out


def mmd_sums_gpu(X: Any, Y: Any, h: float) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`mmd_sums`: grid (C, 3), 256 threads; CuPy (C, 3) float64 out."""
    import cupy as cp

    from icml25.kernels import load_module

    dt = cp.float64 if X.dtype == np.float64 else cp.float32
    X, Y = (
        cp.ascontiguousarray(cp.asarray(X, dtype=dt)),
        cp.ascontiguousarray(cp.asarray(Y, dtype=dt)),
    )
    C, n, d = X.shape
    out = cp.zeros((C, 3), dtype=cp.float64)
    fn = load_module("gim_kernels").get_function(
        "mmd_sums_f64" if dt == cp.float64 else "mmd_sums_f32"
    )
    fn(
        (C, 3),
        (_BLOCK,),
        (
            X,
            Y,
            np.int32(n),
            np.int32(Y.shape[1]),
            np.int32(d),
            (np.float64 if dt == cp.float64 else np.float32)(h),
            out,
        ),
    )
    return out


def mmd_sums(X: np.ndarray, Y: np.ndarray, h: float) -> np.ndarray:
    """RBF block sums per context (contract of :func:`mmd_sums_reference`): CUDA when usable and
    ``d <= MAX_D_GPU``; NumPy in, NumPy out ((C, 3) float64, 1e-5 relative in float32, 1e-10 in float64).

    Raises:
        as :func:`mmd_sums_reference`.
    """
    X, Y, h = _check_mmd_args(X, Y, h)
    if X.shape[2] <= MAX_D_GPU and gpu_available():  # pragma: no cover - GPU
        return mmd_sums_gpu(X, Y, h).get()
    return _mmd_sums(X, Y, h)
