"""Validators of chapter 09's own structures (images, superpixel maps, budgets), built on
:mod:`icml25.checks`."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_real, check_tensor


def _torch():
    import torch

    return torch


def _check_images(images: Any, name: str = "images") -> np.ndarray:
    """(N, H, W, 3) float32 images with values in [0, 1]."""
    arr = check_array(images, name, ndim=4, dtype=np.float32)
    if arr.shape[-1] != 3:
        raise ValueError(
            f"{name} must have 3 colour channels last, got shape {arr.shape}"
        )
    if arr.size and (arr.min() < 0.0 or arr.max() > 1.0):
        raise ValueError(
            f"{name} must lie in [0, 1], got range [{arr.min():.3g}, {arr.max():.3g}]"
        )
    return arr


def _check_image_tensor(x: Any, name: str = "x") -> Any:
    """(B, C, H, W) float tensor with values in [0, 1] (the models' input)."""
    x = check_tensor(x, name, ndim=4)
    if x.numel() and (float(x.min()) < 0.0 or float(x.max()) > 1.0):
        raise ValueError(
            f"{name} must lie in [0, 1], got range [{float(x.min()):.3g}, {float(x.max()):.3g}]"
        )
    return x


def _check_groups(
    groups: Any, name: str, shape: tuple[int, ...], G: int | None = None
) -> Any:
    """Integer superpixel labels of ``shape`` (torch stays torch), >= 0 and < ``G`` when given."""
    torch = _torch()
    if isinstance(groups, torch.Tensor):
        if (
            groups.is_floating_point()
            or groups.is_complex()
            or groups.dtype == torch.bool
        ):
            raise TypeError(
                f"{name} must hold integer labels, got dtype {groups.dtype}"
            )
        if tuple(groups.shape) != tuple(shape):
            raise ValueError(
                f"{name} must have shape {tuple(shape)} (matching the images), got {tuple(groups.shape)}"
            )
        if groups.numel() and int(groups.min()) < 0:
            raise ValueError(
                f"{name} must be >= 0 (labels), got a minimum of {int(groups.min())}"
            )
        if G is not None and groups.numel() and int(groups.max()) >= G:
            raise ValueError(
                f"G must exceed the largest label of {name} ({int(groups.max())}), got G={G}"
            )
        return groups.long()
    arr = check_array(groups, name, kind="int")
    if arr.shape != tuple(shape):
        raise ValueError(
            f"{name} must have shape {tuple(shape)} (matching the images), got {arr.shape}"
        )
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must be >= 0 (labels), got a minimum of {arr.min()}")
    if G is not None and arr.size and arr.max() >= G:
        raise ValueError(
            f"G must exceed the largest label of {name} ({arr.max()}), got G={G}"
        )
    return torch.as_tensor(arr)


def _check_tau(tau: Any, name: str, B: int) -> Any:
    """A budget in (0, 1]: a float or a (B,) tensor/array, returned as a float (B,) tensor."""
    torch = _torch()
    if isinstance(tau, (int, float, np.floating, np.integer)) and not isinstance(
        tau, bool
    ):
        t = check_real(tau, name, low=0.0, low_open=True, high=1.0)
        return torch.full((B,), t)
    t = check_tensor(tau, name, ndim=1, shape=(B,))
    if t.numel() and (float(t.min()) <= 0.0 or float(t.max()) > 1.0):
        raise ValueError(
            f"{name} must lie in (0, 1], got range [{float(t.min()):.3g}, {float(t.max()):.3g}]"
        )
    return t.float()


def _check_labels(y: Any, name: str, B: int) -> Any:
    """(B,) int64 class labels >= 0."""
    torch = _torch()
    if isinstance(y, torch.Tensor):
        if y.is_floating_point() or y.dtype == torch.bool:
            raise TypeError(
                f"{name} must hold integer class labels, got dtype {y.dtype}"
            )
        if tuple(y.shape) != (B,):
            raise ValueError(f"{name} must have shape ({B},), got {tuple(y.shape)}")
        if y.numel() and int(y.min()) < 0:
            raise ValueError(
                f"{name} must be >= 0 (class labels), got a minimum of {int(y.min())}"
            )
        return y.long()
    return torch.as_tensor(check_array(y, name, kind="int", shape=(B,), low=0))
