"""What PCL is compared against: supervised learning on the same trunk, label smoothing, ensembles.

The SL baseline is the same network built with ``hint=False`` (no hint channels, no time
embedding). Label smoothing is the reviewers' control (``torch.nn.CrossEntropyLoss(label_smoothing=0.1)``),
the ensemble the control for PCL's extra forward passes (average of the members' probabilities).
"""

from __future__ import annotations

from typing import Any

import torch

from icml25.checks import check_choice, check_real, check_tensor

from ._checks import _check_input, _check_labels

__all__ = ["sl_loss", "sl_predict", "ensemble_predict"]


def _check_sl_model(model: Any, label_type: str | None) -> str:
    if not callable(model):
        raise TypeError("model must be a callable network")
    label_type = (
        getattr(model, "label_type", None) if label_type is None else label_type
    )
    return check_choice(label_type, "label_type", ("gaussian", "categorical"))


def sl_loss(
    model: Any,
    x: Any,
    y: torch.Tensor,
    label_type: str | None = None,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """The supervised loss on one batch: cross-entropy (optionally label-smoothed) or MSE.

    Args:
        model: a network called as ``model(x)``. x: the input batch.
        y: ``(B, ...)`` int labels in [0, K) (categorical) or float (gaussian).
        label_type: default ``model.label_type``. label_smoothing: in [0, 1) (categorical only).

    Returns:
        a scalar tensor with gradient.

    Raises:
        ValueError: labels outside [0, K), ``y`` not matching the output's shape, ``x`` not
        matching the network or not finite, ``label_smoothing`` outside [0, 1). TypeError: kinds.
    """
    label_type = _check_sl_model(model, label_type)
    eps = check_real(label_smoothing, "label_smoothing", low=0.0, high=1.0)
    if eps >= 1.0:
        raise ValueError("label_smoothing must be below 1")
    x = _check_input(model, x)
    out = model(x)
    if label_type == "categorical":
        y = _check_labels(y, out.shape[1])
        if tuple(y.shape) != (out.shape[0], *out.shape[2:]):
            raise ValueError(
                f"y must have shape {(out.shape[0], *out.shape[2:])} to match x, got {tuple(y.shape)}"
            )
        return torch.nn.functional.cross_entropy(out, y, label_smoothing=eps)
    y = check_tensor(y, "y")
    if tuple(y.shape) != tuple(out.shape):
        raise ValueError(
            f"y must have the output's shape {tuple(out.shape)}, got {tuple(y.shape)}"
        )
    return torch.mean((out - y) ** 2)


@torch.no_grad()
def sl_predict(model: Any, x: Any) -> torch.Tensor:
    """``model(x)`` in eval mode, without gradient.

    Args:
        model: an SL network (``hint=False``). x: its input batch (U-Net ``(B, in_ch, H, W)``,
            MLP ``(B, x_dim)``, EGNN ``(pos, vel, adj)``).

    Returns:
        logits ``(B, K, H, W)`` or values ``(B, ...)``.

    Raises:
        ValueError / TypeError: ``x`` not matching the network (shape, dtype, NaN/inf, empty).
    """
    x = _check_input(model, x)
    was = model.training
    model.eval()
    try:
        return model(x)
    finally:
        model.train(was)


@torch.no_grad()
def ensemble_predict(
    models: list[Any], x: Any, label_type: str = "categorical"
) -> torch.Tensor:
    """Average of the members' probabilities (categorical, returned as log-probabilities) or values.

    Args:
        models: one or more SL networks. x: the input batch. label_type: as :func:`sl_loss`.

    Returns:
        log of the mean probability ``(B, K, ...)`` or the mean value ``(B, ...)``.

    Raises:
        ValueError: no models, unknown ``label_type``.
    """
    label_type = check_choice(label_type, "label_type", ("gaussian", "categorical"))
    if not models:
        raise ValueError("models must hold at least one network")
    outs = [sl_predict(m, x) for m in models]
    if label_type == "categorical":
        return torch.log(torch.stack([torch.softmax(o, dim=1) for o in outs]).mean(0))
    return torch.stack(outs).mean(0)
