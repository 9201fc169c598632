"""AdaEnt landscape test and grid soft values (chapter 17, Zhang, Chang and Gao, ICML 2025).

SAC-AdaEnt (the paper's diagnostic, read from the official code) keeps a soft and a plain critic.
At each actor update it samples ``M`` actions per state from the policy, evaluates both critics
(the minimum of each pair) there, subtracts each row's minimum, and takes the cosine similarity
of the two ``M``-vectors. Where the similarity is below ``threshold`` the entropy term has bent
the landscape and the actor follows the plain critic instead. :func:`landscape_similarity` is
that test for a batch of ``B`` states.

:func:`grid_soft_value` is the soft value ``V = alpha log int exp(Q / alpha) da`` of rows of
``Q`` tabulated on an action grid of spacing ``da`` (``alpha = 0``: the maximum).

Kernels (``adaent.cu``), each with a reference, a CuPy launcher and a dispatcher:

- :func:`landscape_similarity`: ``(cos (B,) float32, mask (B,) bool)``; torch tensors in, torch
  tensors out on the input's device (the SAC-AdaEnt path), or NumPy in, NumPy out.
- :func:`grid_soft_value`: ``(B,) float64``, NumPy in, NumPy out; reference
  ``scipy.special.logsumexp``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp

from icml25.checks import check_array, check_real, check_tensor
from icml25.common import gpu_available

__all__ = [
    "COS_EPS",
    "landscape_similarity",
    "landscape_similarity_reference",
    "landscape_similarity_gpu",
    "grid_soft_value",
    "grid_soft_value_reference",
    "grid_soft_value_gpu",
]

#: floor of ``|x| |y|`` in the cosine (a flat row after the min shift has cosine 0)
COS_EPS = 1e-8
_BLOCK = 128


def _is_torch(a: Any) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a base dependency
        return False
    return isinstance(a, torch.Tensor)


def _check_pair(q_soft: Any, q_plain: Any, threshold: Any) -> tuple[Any, Any, float]:
    """Both (B, M) with M >= 2, equal shapes, finite; threshold in [-1, 1]. Torch stays torch."""
    if _is_torch(q_soft) or _is_torch(q_plain):
        q_soft = check_tensor(q_soft, "q_soft", ndim=2)  # finite, floating
        q_plain = check_tensor(q_plain, "q_plain", ndim=2)
    else:
        q_soft = check_array(q_soft, "q_soft", ndim=2, dtype=np.float32)
        q_plain = check_array(q_plain, "q_plain", ndim=2, dtype=np.float32)
    if tuple(q_soft.shape) != tuple(q_plain.shape):
        raise ValueError(
            f"q_plain must have the shape of q_soft {tuple(q_soft.shape)}, got {tuple(q_plain.shape)}"
        )
    if q_soft.shape[1] < 2:
        raise ValueError(
            f"q_soft must hold M >= 2 sampled actions per state, got M = {q_soft.shape[1]}"
        )
    return q_soft, q_plain, check_real(threshold, "threshold", low=-1.0, high=1.0)


def _similarity_torch(q_soft: Any, q_plain: Any, threshold: float) -> tuple[Any, Any]:
    """The official code's test in torch: row-min shift, cosine, ``cos < threshold``."""
    x = q_soft.float() - q_soft.float().min(dim=1, keepdim=True).values
    y = q_plain.float() - q_plain.float().min(dim=1, keepdim=True).values
    denom = (x.norm(dim=1) * y.norm(dim=1)).clamp_min(COS_EPS)
    cos = (x * y).sum(dim=1) / denom
    return cos, cos < threshold


def _finite_cos(cos: Any) -> None:
    """Refuse a cosine that float32 could not hold (rows whose squared norms overflow, ~1e19)."""
    ok = bool(cos.isfinite().all()) if _is_torch(cos) else bool(np.isfinite(cos).all())
    if not ok:
        raise ValueError(
            "q_soft and q_plain are too large for the float32 landscape test (a row's squared "
            "norm overflows); rescale the critic values"
        )


def landscape_similarity_reference(
    q_soft: Any, q_plain: Any, threshold: float
) -> tuple[Any, Any]:
    """Cosine similarity of the row-min-shifted soft and plain critic landscapes (reference).

    ``x = q_soft - min_j q_soft``, ``y = q_plain - min_j q_plain`` per row;
    ``cos = x.y / max(|x| |y|, 1e-8)``; ``mask = cos < threshold`` (SAC-AdaEnt switches to the
    plain critic there). Computed in float32 with torch, the way the official code does.

    Args:
        q_soft: (B, M) soft critic (min of the pair) at M actions per state, torch or NumPy.
        q_plain: (B, M) plain critic at the same actions.
        threshold: switching threshold in [-1, 1] (the paper's default 0.9).

    Returns:
        ``(cos, mask)``: (B,) float32 and (B,) bool, torch tensors on the input's device for
        torch input, NumPy arrays for NumPy input.

    Raises:
        TypeError: not arrays/tensors of reals. ValueError: not 2-d, shapes differ, M < 2,
        non-finite values (naming ``q_soft`` or ``q_plain``), values so large that float32
        squared norms overflow, threshold outside [-1, 1].
    """
    q_soft, q_plain, threshold = _check_pair(q_soft, q_plain, threshold)
    if _is_torch(q_soft):
        cos, mask = _similarity_torch(q_soft, q_plain, threshold)
        _finite_cos(cos)
        return cos, mask
    import torch

    cos, mask = _similarity_torch(
        torch.from_numpy(q_soft), torch.from_numpy(q_plain), threshold
    )
    _finite_cos(cos)
    return cos.numpy(), mask.numpy()


def landscape_similarity_gpu(
    q_soft: Any, q_plain: Any, threshold: float
) -> tuple[Any, Any]:  # pragma: no cover - GPU
    """CuPy launcher of :func:`landscape_similarity`: one block per state (CuPy arrays in and out).

    Trusts its arguments (validated by :func:`landscape_similarity`)."""
    import cupy as cp

    from icml25.kernels import load_module

    qs = cp.ascontiguousarray(cp.asarray(q_soft, dtype=cp.float32))
    qp = cp.ascontiguousarray(cp.asarray(q_plain, dtype=cp.float32))
    B, M = (int(v) for v in qs.shape)
    cos = cp.empty(B, dtype=cp.float32)
    mask = cp.empty(B, dtype=cp.int32)
    fn = load_module("adaent").get_function("adaent_similarity")
    fn(
        (B,),
        (_BLOCK,),
        (qs, qp, np.int64(B), np.int64(M), np.float32(threshold), cos, mask),
        shared_mem=3 * _BLOCK * 4,
    )
    return cos, mask.astype(cp.bool_)


def landscape_similarity(
    q_soft: Any, q_plain: Any, threshold: float
) -> tuple[Any, Any]:
    """The AdaEnt landscape test (contract of :func:`landscape_similarity_reference`).

    Torch tensors on a CUDA device go through the CUDA kernel (via DLPack) when a GPU is usable
    and come back as torch tensors on that device; CPU tensors take the torch reference. NumPy
    input takes the kernel on a GPU machine and the reference otherwise, and returns NumPy.

    Returns:
        ``(cos (B,) float32, mask (B,) bool)``, equal on both paths to 1e-5.

    Raises:
        as :func:`landscape_similarity_reference`.
    """
    q_soft, q_plain, threshold = _check_pair(q_soft, q_plain, threshold)
    if _is_torch(q_soft):
        if q_soft.is_cuda and gpu_available():  # pragma: no cover - GPU
            import cupy as cp
            import torch

            cos, mask = landscape_similarity_gpu(
                cp.from_dlpack(q_soft.detach().float().contiguous()),
                cp.from_dlpack(q_plain.detach().float().contiguous()),
                threshold,
            )
            cos, mask = torch.from_dlpack(cos), torch.from_dlpack(mask)
        else:
            cos, mask = _similarity_torch(q_soft, q_plain, threshold)
        _finite_cos(cos)
        return cos, mask
    if gpu_available():  # pragma: no cover - GPU
        cos, mask = landscape_similarity_gpu(q_soft, q_plain, threshold)
        cos, mask = cos.get(), mask.get()
    else:
        import torch

        cos, mask = _similarity_torch(
            torch.from_numpy(q_soft), torch.from_numpy(q_plain), threshold
        )
        cos, mask = cos.numpy(), mask.numpy()
    _finite_cos(cos)
    return cos, mask


def _check_grid(Q: Any, alpha: Any, da: Any) -> tuple[np.ndarray, float, float]:
    Q = check_array(Q, "Q", ndim=2, dtype=np.float64, min_size=1)
    if Q.shape[1] < 1:
        raise ValueError(
            f"Q must have at least one action per row, got shape {Q.shape}"
        )
    return (
        np.ascontiguousarray(Q),
        check_real(alpha, "alpha", low=0.0),
        check_real(da, "da", low=0.0, low_open=True),
    )


def _grid_soft_value_cpu(Q: np.ndarray, alpha: float, da: float) -> np.ndarray:
    if alpha == 0.0:
        return Q.max(axis=1)
    # shift by the row maximum first: Q / alpha alone overflows for tiny alpha
    top = Q.max(axis=1)
    with np.errstate(over="ignore"):  # (Q - top) / alpha -> -inf contributes exactly 0
        return top + alpha * (
            logsumexp((Q - top[:, None]) / alpha, axis=1) + math.log(da)
        )


def grid_soft_value_reference(Q: np.ndarray, alpha: float, da: float) -> np.ndarray:
    """``V[b] = alpha log sum_a exp(Q[b, a] / alpha) da`` (``alpha = 0``: ``max_a Q[b, a]``).

    The Riemann sum of the soft value ``alpha log int_A exp(Q(s, a) / alpha) da`` on a grid of
    spacing ``da`` (Sec. 3 of the paper; ``da = 1`` is the counting measure of a discrete action
    set). Reference: ``scipy.special.logsumexp``.

    Args:
        Q: (B, A) float64 action values on the grid.
        alpha: entropy temperature, >= 0.
        da: grid spacing (measure of one grid cell), > 0.

    Returns:
        (B,) float64.

    Raises:
        TypeError/ValueError: ``Q`` not a finite 2-d real array with A >= 1, ``alpha < 0``,
        ``da <= 0`` (each naming the argument).
    """
    return _grid_soft_value_cpu(*_check_grid(Q, alpha, da))


def grid_soft_value_gpu(
    Q: Any, alpha: float, da: float
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`grid_soft_value`: one block per row (CuPy (B,) float64 out).

    Trusts its arguments (validated by :func:`grid_soft_value`)."""
    import cupy as cp

    from icml25.kernels import load_module

    Qd = cp.ascontiguousarray(cp.asarray(Q, dtype=cp.float64))
    B, A = (int(v) for v in Qd.shape)
    V = cp.empty(B, dtype=cp.float64)
    fn = load_module("adaent").get_function("grid_soft_value")
    fn(
        (B,),
        (_BLOCK,),
        (Qd, np.int64(B), np.int64(A), np.float64(alpha), np.float64(math.log(da)), V),
        shared_mem=_BLOCK * 8,
    )
    return V


def grid_soft_value(Q: np.ndarray, alpha: float, da: float) -> np.ndarray:
    """Grid soft values (contract of :func:`grid_soft_value_reference`): CUDA when a GPU is usable.

    Returns:
        (B,) float64 NumPy, equal on both paths to 1e-9 relative.

    Raises:
        as :func:`grid_soft_value_reference`.
    """
    Q, alpha, da = _check_grid(Q, alpha, da)
    if gpu_available():  # pragma: no cover - GPU
        return grid_soft_value_gpu(Q, alpha, da).get()
    return _grid_soft_value_cpu(Q, alpha, da)
