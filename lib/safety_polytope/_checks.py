"""Validators of chapter 05's own structures (hidden states, safety labels), built on icml25.checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from icml25.checks import check_array, check_tensor


def _check_states(h: Any, name: str = "h", d: int | None = None) -> torch.Tensor:
    """``h`` as a finite (N, d) float32 torch tensor (NumPy arrays are converted)."""
    if isinstance(h, torch.Tensor):
        h = check_tensor(h, name, ndim=2)
    else:
        h = torch.from_numpy(check_array(h, name, ndim=2, dtype=np.float32))
    if d is not None and h.shape[1] != d:
        raise ValueError(
            f"{name} must have {d} columns (the polytope's d), got shape {tuple(h.shape)}"
        )
    if h.shape[0] < 1:
        raise ValueError(
            f"{name} must hold at least one state, got shape {tuple(h.shape)}"
        )
    return h.float()


def _check_labels(y: Any, n: int, name: str = "y", both: bool = True) -> torch.Tensor:
    """``y`` as an (n,) int64 tensor of labels in {0, 1} (1 = safe); ``both``: both classes present."""
    if isinstance(y, torch.Tensor):
        y = y.detach().cpu().numpy()
    arr = np.asarray(y)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(
                f"{name} must hold labels in {{0, 1}} (1 = safe, 0 = unsafe)"
            )
        arr = arr.astype(np.int64)
    arr = check_array(arr, name, kind="int", shape=(n,))
    if not np.isin(arr, (0, 1)).all():
        raise ValueError(
            f"{name} must hold labels in {{0, 1}} (1 = safe, 0 = unsafe), got values {np.unique(arr)[:5]}"
        )
    if both and len(np.unique(arr)) < 2:
        raise ValueError(
            f"{name} holds one class only ({int(arr[0])}): the polytope needs safe and unsafe examples"
        )
    return torch.from_numpy(arr.astype(np.int64))
