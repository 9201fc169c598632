"""Validators of chapter 19's own structures, built on :mod:`icml25.checks`."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_int, check_real, check_tensor


def _check_alpha_bar(alpha_bar: Any) -> Any:
    """``alpha_bar`` as a float64 torch tensor ``(T,)``, strictly decreasing in (0, 1]."""
    import torch

    a = check_array(alpha_bar, "alpha_bar", ndim=1, min_size=1)
    if a.min() <= 0.0 or a.max() > 1.0:
        raise ValueError(f"alpha_bar must lie in (0, 1], got range [{a.min():.3g}, {a.max():.3g}]")
    if a.size > 1 and not np.all(np.diff(a) < 0):
        raise ValueError("alpha_bar must be strictly decreasing in t")
    return torch.as_tensor(a, dtype=torch.float64)


def _check_t(t: Any, T: int, B: int | None = None) -> Any:
    """``t`` (an int or ``(B,)`` ints) as an int64 tensor ``(B,)`` in [0, T)."""
    import torch

    if isinstance(t, (int, np.integer)) and not isinstance(t, bool):
        t = check_int(t, "t", low=0, high=T - 1)
        return torch.full((B if B is not None else 1,), t, dtype=torch.long)
    arr = check_array(t.cpu() if isinstance(t, torch.Tensor) else t, "t", kind="int", ndim=1)
    if arr.size and (arr.min() < 0 or arr.max() >= T):
        raise ValueError(f"t must lie in [0, T={T}), got range [{arr.min()}, {arr.max()}]")
    if B is not None and arr.shape[0] != B:
        raise ValueError(f"t must have shape (B={B},), got {arr.shape}")
    return torch.as_tensor(arr, dtype=torch.long)


def _check_labels(y: Any, K: int, name: str = "y") -> Any:
    """Integer class labels ``(B, ...)`` in [0, K) as an int64 tensor."""
    import torch

    if isinstance(y, torch.Tensor):
        if y.is_floating_point() or y.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer labels, got dtype {y.dtype}")
        if y.ndim < 1:
            raise ValueError(f"{name} must have shape (B, ...), got {tuple(y.shape)}")
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= K):
            raise ValueError(f"{name} must hold labels in [0, K={K}), got range [{int(y.min())}, {int(y.max())}]")
        return y.long()
    arr = check_array(y, name, kind="int", low=0, high=K - 1)
    return torch.as_tensor(arr)


def _check_lams(lam1: Any, lam2: Any) -> tuple[float, float]:
    return check_real(lam1, "lam1", low=0.0), check_real(lam2, "lam2", low=0.0)


def _check_float_labels(y: Any, name: str = "y") -> Any:
    return check_tensor(y, name)
