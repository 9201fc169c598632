"""Superpixel pooling and group -> pixel masking for P2P (chapter 09).

P2P pools a per-pixel embedding over each superpixel (``get_group_average`` in the official code:
``scatter_reduce_(reduce="mean", include_self=False)``) on every forward pass, and maps a
per-group selection back to pixels to blend the image with black (``groups_to_mask`` and the
``x * mask + min_vals * (1 - mask)`` line). Both are the hot loops of a forward pass.

Kernels (``superpixel.cu``), each with a reference, a CuPy launcher and a dispatcher:

- :func:`segment_mean`: ``(B, C, N)`` values and ``(B, N)`` labels in ``[0, G)`` -> ``(B, C, G)``
  means; empty groups are 0 (as ``scatter_reduce(mean, include_self=False)`` on a zero tensor).
  The CUDA path adds sums and counts with ``atomicAdd`` and divides in a second kernel.
- :func:`masked_fill`: ``out[b, c, p] = m[b, g(p)] x[b, c, p] + (1 - m[b, g(p)]) fill[c]``, the
  fused gather and blend.

Dispatchers take NumPy arrays (NumPy out) or torch tensors (torch out, on the input's device).
On a torch path that needs gradients the CUDA kernels run inside a ``torch.autograd.Function``
whose backward is written with torch ops (a gather for the mean, a segment sum for the mask), so
training and evaluation share one forward.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_int
from icml25.common import gpu_available

__all__ = [
    "segment_mean",
    "segment_mean_reference",
    "segment_mean_gpu",
    "masked_fill",
    "masked_fill_reference",
    "masked_fill_gpu",
]

_BLOCK = 256


def _torch():
    import torch

    return torch


def _is_tensor(a: Any) -> bool:
    try:
        return isinstance(a, _torch().Tensor)
    except ImportError:  # pragma: no cover - torch is a dependency of the book
        return False


def _check_labels(labels: Any, name: str, B: int, N: int, G: int) -> Any:
    """Labels as int64 (B, N) with values in [0, G): torch stays torch, anything else NumPy."""
    if _is_tensor(labels):
        torch = _torch()
        if (
            labels.dtype in (torch.bool,)
            or labels.is_floating_point()
            or labels.is_complex()
        ):
            raise TypeError(f"{name} must hold integers, got dtype {labels.dtype}")
        if tuple(labels.shape) != (B, N):
            raise ValueError(
                f"{name} must have shape ({B}, {N}), got {tuple(labels.shape)}"
            )
        if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= G):
            raise ValueError(
                f"{name} must lie in [0, G={G}), got range [{int(labels.min())}, {int(labels.max())}]"
            )
        return labels.long()
    return check_array(labels, name, kind="int", shape=(B, N), low=0, high=G - 1)


def _check_values(values: Any, name: str, ndim: int) -> Any:
    if _is_tensor(values):
        if not values.is_floating_point():
            raise TypeError(
                f"{name} must be a floating-point tensor, got dtype {values.dtype}"
            )
        if values.ndim != ndim:
            raise ValueError(
                f"{name} must be {ndim}-D, got shape {tuple(values.shape)}"
            )
        return values
    return check_array(values, name, ndim=ndim, dtype=np.float32)


def _check_mean_args(values: Any, labels: Any, G: Any) -> tuple[Any, Any, int]:
    values = _check_values(values, "values", 3)
    B, _, N = values.shape
    G = check_int(G, "G", low=1)
    labels = _check_labels(labels, "labels", B, N, G)
    if _is_tensor(values) != _is_tensor(labels):
        raise TypeError(
            "values and labels must both be torch tensors or both be NumPy arrays"
        )
    return values, labels, G


def segment_mean_reference(values: Any, labels: Any, G: int) -> Any:
    """Mean of ``values`` over each label: ``out[b, c, g] = mean{values[b, c, p] : labels[b, p] = g}``.

    The contract of the kernel. Torch inputs use ``scatter_reduce_(reduce="mean",
    include_self=False)`` into zeros (the official code's ``get_group_average``; differentiable);
    NumPy inputs use ``np.bincount`` with weights. Empty groups are 0.

    Args:
        values: (B, C, N) float (torch tensor or array-like).
        labels: (B, N) integer labels in ``[0, G)``, the same kind as ``values``.
        G: number of groups.

    Returns:
        (B, C, G) means: a tensor like ``values`` (its dtype and device), or float32 NumPy.

    Raises:
        TypeError: non-float values, non-integer labels, torch mixed with NumPy.
        ValueError: wrong shapes, labels outside ``[0, G)``, ``G < 1``, non-finite values.
    """
    values, labels, G = _check_mean_args(values, labels, G)
    return (
        _mean_torch(values, labels, G)
        if _is_tensor(values)
        else _mean_numpy(values, labels, G)
    )


def _mean_torch(values: Any, labels: Any, G: int) -> Any:
    torch = _torch()
    B, C, _ = values.shape
    out = torch.zeros((B, C, G), dtype=values.dtype, device=values.device)
    return out.scatter_reduce(
        2,
        labels.unsqueeze(1).expand(-1, C, -1),
        values,
        reduce="mean",
        include_self=False,
    )


def _mean_numpy(values: np.ndarray, labels: np.ndarray, G: int) -> np.ndarray:
    B, C, _ = values.shape
    out = np.zeros((B, C, G), dtype=np.float32)
    for b in range(B):
        counts = np.bincount(labels[b], minlength=G).astype(np.float64)
        for c in range(C):
            sums = np.bincount(
                labels[b], weights=values[b, c].astype(np.float64), minlength=G
            )
            out[b, c] = np.where(counts > 0, sums / np.maximum(counts, 1.0), 0.0)
    return out


def _launch(fn_name: str, total: int, args: tuple) -> None:  # pragma: no cover - GPU
    from icml25.kernels import load_module

    grid = min(max(1, (total + _BLOCK - 1) // _BLOCK), 65535 * 8)
    load_module("superpixel").get_function(fn_name)((grid,), (_BLOCK,), args)


def segment_mean_gpu(values: Any, labels: Any, G: int) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`segment_mean` (CuPy float32 (B, C, G) out; trusts its arguments)."""
    import cupy as cp

    v = cp.ascontiguousarray(cp.asarray(values, dtype=cp.float32))
    lab = cp.ascontiguousarray(cp.asarray(labels, dtype=cp.int64))
    B, C, N = (int(s) for s in v.shape)
    sums = cp.zeros((B, C, G), dtype=cp.float32)
    counts = cp.zeros((B, G), dtype=cp.float32)
    _launch(
        "segment_sums",
        B * N,
        (v, lab, sums, counts, np.int64(B), np.int64(C), np.int64(N), np.int64(G)),
    )
    _launch(
        "divide_counts",
        B * C * G,
        (sums, counts, np.int64(B), np.int64(C), np.int64(G)),
    )
    return sums


def _use_gpu(values: Any) -> bool:
    return gpu_available() and (not _is_tensor(values) or values.is_cuda)


def _to_cupy(t: Any) -> Any:  # pragma: no cover - GPU
    import cupy

    return cupy.from_dlpack(t.detach().contiguous())


def _mean_fn():  # pragma: no cover - GPU
    torch = _torch()

    class _SegmentMean(torch.autograd.Function):
        @staticmethod
        def forward(ctx, values, labels, G):
            out = torch.from_dlpack(
                segment_mean_gpu(_to_cupy(values.float()), _to_cupy(labels), G)
            ).to(values.dtype)
            counts = torch.zeros(
                labels.shape[0], G, device=labels.device, dtype=values.dtype
            )
            counts.scatter_add_(1, labels, torch.ones_like(labels, dtype=values.dtype))
            ctx.save_for_backward(labels, counts)
            return out

        @staticmethod
        def backward(ctx, grad):
            labels, counts = ctx.saved_tensors
            C = grad.shape[1]
            idx = labels.unsqueeze(1).expand(-1, C, -1)
            share = (grad / counts.clamp(min=1).unsqueeze(1)).gather(2, idx)
            return share, None, None

    return _SegmentMean


def segment_mean(values: Any, labels: Any, G: int) -> Any:
    """Segment means (contract of :func:`segment_mean_reference`): CUDA when a GPU is usable.

    Args:
        values: (B, C, N) float; labels: (B, N) integers in ``[0, G)``; G: number of groups.

    Returns:
        (B, C, G) means: torch in, torch out (input's device, differentiable in ``values``);
        NumPy in, float32 NumPy out. Equal to the reference to 1e-5 (atomic sums change the
        order of float additions).

    Raises:
        as :func:`segment_mean_reference`.
    """
    values, labels, G = _check_mean_args(values, labels, G)
    if _use_gpu(values):  # pragma: no cover - GPU
        if _is_tensor(values):
            return _mean_fn().apply(values, labels, G)
        import cupy

        return cupy.asnumpy(segment_mean_gpu(values, labels, G))
    return (
        _mean_torch(values, labels, G)
        if _is_tensor(values)
        else _mean_numpy(values, labels, G)
    )


def _check_fill_args(
    x: Any, labels: Any, m: Any, fill: Any
) -> tuple[Any, Any, Any, Any]:
    x = _check_values(x, "x", 3)
    B, C, N = x.shape
    m = _check_values(m, "m", 2)
    if m.shape[0] != B:
        raise ValueError(
            f"m must have {B} rows (one per image of x), got shape {tuple(m.shape)}"
        )
    G = int(m.shape[1])
    if G < 1:
        raise ValueError("m must have at least one group column")
    labels = _check_labels(labels, "labels", B, N, G)
    fill = _check_values(fill, "fill", 1)
    if fill.shape[0] != C:
        raise ValueError(
            f"fill must have {C} entries (one per channel), got shape {tuple(fill.shape)}"
        )
    kinds = {_is_tensor(a) for a in (x, labels, m, fill)}
    if len(kinds) != 1:
        raise TypeError(
            "x, labels, m and fill must all be torch tensors or all be NumPy arrays"
        )
    return x, labels, m, fill


def masked_fill_reference(x: Any, labels: Any, m: Any, fill: Any) -> Any:
    """``out[b, c, p] = m[b, g(p)] x[b, c, p] + (1 - m[b, g(p)]) fill[c]`` (P2P's masked input).

    The contract of the kernel: the group mask is gathered to pixels (``torch.gather``, the
    official ``groups_to_mask``) and blended with the fill value (black after normalisation).

    Args:
        x: (B, C, N) float images, pixels flattened.
        labels: (B, N) integer group of each pixel, in ``[0, G)``.
        m: (B, G) float group mask (in [0, 1] for a blend; not enforced, relaxed masks pass).
        fill: (C,) float fill value per channel.

    Returns:
        (B, C, N) like ``x`` (torch: differentiable in ``x`` and ``m``; NumPy: float32).

    Raises:
        TypeError: non-float inputs, non-integer labels, torch mixed with NumPy.
        ValueError: shapes that disagree, labels outside ``[0, G)``, non-finite values.
    """
    x, labels, m, fill = _check_fill_args(x, labels, m, fill)
    return (
        _fill_torch(x, labels, m, fill)
        if _is_tensor(x)
        else _fill_numpy(x, labels, m, fill)
    )


def _fill_torch(x: Any, labels: Any, m: Any, fill: Any) -> Any:
    w = m.gather(1, labels).unsqueeze(1)  # (B, 1, N): the pixel mask m[g(p)]
    return w * x + (1 - w) * fill.view(1, -1, 1)


def _fill_numpy(
    x: np.ndarray, labels: np.ndarray, m: np.ndarray, fill: np.ndarray
) -> np.ndarray:
    w = np.take_along_axis(m, labels, axis=1)[:, None, :]
    return (w * x + (1 - w) * fill[None, :, None]).astype(np.float32)


def masked_fill_gpu(
    x: Any, labels: Any, m: Any, fill: Any
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`masked_fill` (CuPy float32 (B, C, N) out; trusts its arguments)."""
    import cupy as cp

    xc = cp.ascontiguousarray(cp.asarray(x, dtype=cp.float32))
    lab = cp.ascontiguousarray(cp.asarray(labels, dtype=cp.int64))
    mc = cp.ascontiguousarray(cp.asarray(m, dtype=cp.float32))
    fc = cp.ascontiguousarray(cp.asarray(fill, dtype=cp.float32))
    B, C, N = (int(s) for s in xc.shape)
    G = int(mc.shape[1])
    out = cp.empty_like(xc)
    _launch(
        "masked_fill",
        B * C * N,
        (xc, lab, mc, fc, out, np.int64(B), np.int64(C), np.int64(N), np.int64(G)),
    )
    return out


def _fill_fn():  # pragma: no cover - GPU
    torch = _torch()

    class _MaskedFill(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, labels, m, fill):
            out = torch.from_dlpack(
                masked_fill_gpu(
                    _to_cupy(x.float()),
                    _to_cupy(labels),
                    _to_cupy(m.float()),
                    _to_cupy(fill.float()),
                )
            ).to(x.dtype)
            ctx.save_for_backward(x, labels, m, fill)
            return out

        @staticmethod
        def backward(ctx, grad):
            x, labels, m, fill = ctx.saved_tensors
            w = m.gather(1, labels).unsqueeze(1)
            per_pixel = (grad * (x - fill.view(1, -1, 1))).sum(1)  # (B, N)
            grad_m = torch.zeros_like(m).scatter_add_(1, labels, per_pixel)
            grad_fill = (grad * (1 - w)).sum((0, 2))
            return grad * w, None, grad_m, grad_fill

    return _MaskedFill


def masked_fill(x: Any, labels: Any, m: Any, fill: Any) -> Any:
    """Masked input (contract of :func:`masked_fill_reference`): CUDA when a GPU is usable.

    Returns:
        (B, C, N): torch in, torch out (input's device, differentiable in ``x``, ``m``, ``fill``);
        NumPy in, float32 NumPy out. Equal to the reference to 1e-6.

    Raises:
        as :func:`masked_fill_reference`.
    """
    x, labels, m, fill = _check_fill_args(x, labels, m, fill)
    if _use_gpu(x):  # pragma: no cover - GPU
        if _is_tensor(x):
            return _fill_fn().apply(x, labels, m, fill)
        import cupy

        return cupy.asnumpy(masked_fill_gpu(x, labels, m, fill))
    return (
        _fill_torch(x, labels, m, fill)
        if _is_tensor(x)
        else _fill_numpy(x, labels, m, fill)
    )
