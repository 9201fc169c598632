"""Validators of chapter 03's own structures (image batches, losses), built on icml25.checks."""

from __future__ import annotations

from typing import Any, Callable

from icml25.checks import check_tensor


def _check_images(x: Any, name: str = "x", size: int | None = None) -> Any:
    """A float tensor ``(B, 3, H, W)`` with every value in [0, 1] (the protector's pixel range)."""
    import torch

    x = check_tensor(x, name, ndim=4)
    if x.shape[1] != 3:
        raise ValueError(f"{name} must have shape (B, 3, H, W), got {tuple(x.shape)}")
    if x.shape[0] < 1:
        raise ValueError(
            f"{name} must hold at least one image, got shape {tuple(x.shape)}"
        )
    if size is not None and tuple(x.shape[2:]) != (size, size):
        raise ValueError(
            f"{name} must be {size}x{size} images, got {tuple(x.shape[2:])}"
        )
    if float(x.detach().min()) < 0.0 or float(x.detach().max()) > 1.0:
        raise ValueError(
            f"{name} must lie in [0, 1], got values in [{float(x.detach().min()):.4g}, {float(x.detach().max()):.4g}]"
        )
    return x.to(torch.float32)


def _check_loss(loss: Any, name: str = "loss") -> Callable:
    """A loss of :data:`LOSSES` by name, or a callable ``(mu_adv, logvar_adv, mu_clean, logvar_clean) -> scalar``."""
    from .losses import LOSSES

    if isinstance(loss, str):
        if loss not in LOSSES:
            raise ValueError(
                f"{name} must be one of {sorted(LOSSES)} or a callable, got {loss!r}"
            )
        return LOSSES[loss]
    if not callable(loss):
        raise TypeError(
            f"{name} must be a loss name or a callable, got {type(loss).__name__}"
        )
    return loss
