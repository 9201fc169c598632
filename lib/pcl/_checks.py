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
        raise ValueError(
            f"alpha_bar must lie in (0, 1], got range [{a.min():.3g}, {a.max():.3g}]"
        )
    if a.size > 1 and not np.all(np.diff(a) < 0):
        raise ValueError("alpha_bar must be strictly decreasing in t")
    return torch.as_tensor(a, dtype=torch.float64)


def _check_t(t: Any, T: int, B: int | None = None) -> Any:
    """``t`` (an int or ``(B,)`` ints) as an int64 tensor ``(B,)`` in [0, T)."""
    import torch

    if isinstance(t, (int, np.integer)) and not isinstance(t, bool):
        t = check_int(t, "t", low=0, high=T - 1)
        return torch.full((B if B is not None else 1,), t, dtype=torch.long)
    arr = check_array(
        t.cpu() if isinstance(t, torch.Tensor) else t, "t", kind="int", ndim=1
    )
    if arr.size and (arr.min() < 0 or arr.max() >= T):
        raise ValueError(
            f"t must lie in [0, T={T}), got range [{arr.min()}, {arr.max()}]"
        )
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
            raise ValueError(
                f"{name} must hold labels in [0, K={K}), got range [{int(y.min())}, {int(y.max())}]"
            )
        return y.long()
    arr = check_array(y, name, kind="int", low=0, high=K - 1)
    return torch.as_tensor(arr)


def _check_lams(lam1: Any, lam2: Any) -> tuple[float, float]:
    return check_real(lam1, "lam1", low=0.0), check_real(lam2, "lam2", low=0.0)


def _check_float_labels(y: Any, name: str = "y") -> Any:
    return check_tensor(y, name)


def _check_input(model: Any, x: Any, name: str = "x") -> Any:
    """Validate a network's input batch against the network it feeds (before any forward pass).

    U-Net: a float tensor ``(B, in_ch, H, W)``, ``H, W`` divisible by 4; MLP: ``(B, x_dim)``; EGNN:
    a tuple ``(pos (B, N, 3), vel (B, N, 3), adj (B, N, N))``. Every tensor finite, ``B >= 1``.
    """
    import torch

    from .networks import HintedEGNN, HintedMLP, HintedUNet

    if isinstance(model, HintedEGNN):
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise TypeError(
                f"{name} must be a tuple (pos, vel, adj) for an EGNN, got {type(x).__name__}"
            )
        pos = _nonempty(
            check_tensor(x[0], f"{name}[0] (pos)", ndim=3), f"{name}[0] (pos)"
        )
        B, N = int(pos.shape[0]), int(pos.shape[1])
        if pos.shape[2] != 3:
            raise ValueError(
                f"{name}[0] (pos) must have shape (B, N, 3), got {tuple(pos.shape)}"
            )
        vel = check_tensor(x[1], f"{name}[1] (vel)", ndim=3)
        if tuple(vel.shape) != tuple(pos.shape):
            raise ValueError(
                f"{name}[1] (vel) must have the shape of pos {tuple(pos.shape)}, got {tuple(vel.shape)}"
            )
        adj = check_tensor(x[2], f"{name}[2] (adj)", ndim=3)
        if tuple(adj.shape) != (B, N, N):
            raise ValueError(
                f"{name}[2] (adj) must have shape (B={B}, N={N}, N={N}), got {tuple(adj.shape)}"
            )
        return x
    if isinstance(model, (HintedUNet, HintedMLP)) and not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if isinstance(model, HintedUNet):
        x = _nonempty(check_tensor(x, name, ndim=4), name)
        in_ch = model.in_ch
        if x.shape[1] != in_ch:
            raise ValueError(
                f"{name} must have shape (B, in_ch={in_ch}, H, W), got {tuple(x.shape)}"
            )
        if x.shape[2] % 4 or x.shape[3] % 4:
            raise ValueError(
                f"{name} must have H and W divisible by 4 (two poolings), got {tuple(x.shape)}"
            )
        return x
    if isinstance(model, HintedMLP):
        x = _nonempty(check_tensor(x, name, ndim=2), name)
        x_dim = model.x_dim
        if x.shape[1] != x_dim:
            raise ValueError(
                f"{name} must have shape (B, x_dim={x_dim}), got {tuple(x.shape)}"
            )
        return x
    return x


def _check_target(model: Any, x: Any, y: Any, label_type: str, name: str = "y") -> Any:
    """The clean label batch against the network's hint shape: ``(B, H, W)`` ints in [0, K) or ``hint_shape``."""
    if label_type == "categorical":
        y = _check_labels(y, model.n_classes, name)
        want = (model.hint_shape(x)[0], *model.hint_shape(x)[2:])
    else:
        y = check_tensor(y, name)
        want = tuple(model.hint_shape(x))
    if tuple(y.shape) != want:
        raise ValueError(
            f"{name} must have shape {want} to match x and the network's hint, got {tuple(y.shape)}"
        )
    return y


def _nonempty(x: Any, name: str) -> Any:
    if x.shape[0] == 0:
        raise ValueError(
            f"{name} must hold at least one sample (B >= 1), got shape {tuple(x.shape)}"
        )
    return x
