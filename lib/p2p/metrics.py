"""Evaluation of instance-wise masks (chapter 09), after the official ``utils/evaluation.py``.

- :func:`kept_fraction`: share of pixels kept.
- :func:`localization_precision`: share of kept pixels inside the object (the code's
  ``mask_perc_corr``, the paper's main localisation metric).
- :func:`mask_iou`: intersection over union with the object mask.
- :func:`insertion_deletion_curves`: keep (insertion) or remove (deletion) groups in decreasing
  order of a score until an area fraction is reached, and measure how often the classifier still
  gives its reference prediction; :func:`curve_auc` integrates a curve. The code starts from
  P2P's masked input; the chapter starts from the full image (our choice, so that the empty and
  the full image are the two ends of both curves).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from icml25.checks import check_array, check_tensor
from icml25.kernels import superpixel

from ._checks import _check_groups, _check_image_tensor

__all__ = [
    "kept_fraction",
    "localization_precision",
    "mask_iou",
    "insertion_deletion_curves",
    "curve_auc",
]


def _masks(mask: Any, name: str) -> np.ndarray:
    if (
        getattr(mask, "dtype", None) in (bool, np.bool_)
        or str(getattr(mask, "dtype", "")) == "torch.bool"
    ):
        mask = check_array(mask, name, kind="bool", ndim=(3, 4)).astype(np.float64)
    arr = check_array(mask, name, kind="number", ndim=(3, 4))
    if arr.size == 0:
        raise ValueError(
            f"{name} must hold at least one image of at least one pixel, got shape {arr.shape}"
        )
    if arr.ndim == 4:
        if arr.shape[1] != 1:
            raise ValueError(
                f"{name} must be (B, H, W) or (B, 1, H, W), got shape {arr.shape}"
            )
        arr = arr[:, 0]
    return arr.astype(np.float64)


def kept_fraction(mask: Any) -> np.ndarray:
    """Fraction of pixels kept per image.

    Args:
        mask: (B, H, W) or (B, 1, H, W) mask (bool or 0/1; NumPy or torch).

    Returns:
        (B,) float64.

    Raises:
        TypeError/ValueError: not a 3-D/4-D numeric mask.
    """
    m = _masks(mask, "mask")
    return m.reshape(m.shape[0], -1).mean(1)


def localization_precision(mask: Any, object_mask: Any) -> np.ndarray:
    """``|kept ∩ object| / |kept|`` per image (``mask_perc_corr``; 0 for an empty mask).

    Args:
        mask: (B, H, W) or (B, 1, H, W) kept pixels. object_mask: (B, H, W) object pixels.

    Returns:
        (B,) float64 in [0, 1].

    Raises:
        ValueError: shapes that differ.
    """
    m = _masks(mask, "mask")
    gt = _masks(object_mask, "object_mask")
    if m.shape != gt.shape:
        raise ValueError(
            f"object_mask must have the mask's shape {m.shape}, got {gt.shape}"
        )
    return (m * gt).sum((1, 2)) / (m.sum((1, 2)) + 1e-12)


def mask_iou(mask: Any, object_mask: Any) -> np.ndarray:
    """Intersection over union of kept and object pixels per image (0 when both are empty).

    Raises:
        ValueError: shapes that differ.
    """
    m = _masks(mask, "mask") > 0.5
    gt = _masks(object_mask, "object_mask") > 0.5
    if m.shape != gt.shape:
        raise ValueError(
            f"object_mask must have the mask's shape {m.shape}, got {gt.shape}"
        )
    inter = (m & gt).sum((1, 2))
    union = (m | gt).sum((1, 2))
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


def insertion_deletion_curves(
    classify: Callable[[Any], Any],
    x: Any,
    groups: Any,
    scores: Any,
    fractions: Any,
    reference: Any,
) -> dict[str, np.ndarray]:
    """Insertion and deletion curves of a group ranking.

    Groups are ordered by decreasing ``scores``; a group is *reached* at area fraction ``f`` when
    the area of the groups ranked before it is below ``f``. Insertion keeps the reached groups
    (``f = 0``: the empty, black image; ``f = 1``: the full image); deletion removes them
    (``f = 0``: full; ``f = 1``: empty). Each point is the share of images whose prediction
    ``argmax classify(x_f)`` equals ``reference``.

    Args:
        classify: maps (B, 3, H, W) images to (B, K) logits (called without gradients).
        x: (B, 3, H, W) float images in [0, 1]. groups: (B, H, W) labels.
        scores: (B, G) group scores, ``G > groups.max()``. fractions: increasing area fractions
            in [0, 1]. reference: (B,) reference predictions.

    Returns:
        dict with ``fractions`` (F,), ``insertion`` (F,), ``deletion`` (F,) float64 agreements.

    Raises:
        TypeError/ValueError: shapes that disagree, fractions outside [0, 1] or not increasing.
    """
    x = _check_image_tensor(x)
    B, C, H, W = x.shape
    s = check_tensor(scores, "scores", ndim=2)
    if s.shape[0] != B:
        raise ValueError(f"scores must have {B} rows, got {tuple(s.shape)}")
    G = int(s.shape[1])
    g = _check_groups(groups, "groups", (B, H, W), G).to(x.device)
    fr = check_array(fractions, "fractions", ndim=1, low=0.0, high=1.0, min_size=1)
    if np.any(np.diff(fr) < 0):
        raise ValueError("fractions must be non-decreasing")
    ref = check_array(reference, "reference", kind="int", shape=(B,))
    return _curves(classify, x, g, s.to(x.device), fr, ref)


def _curves(
    classify: Callable[[Any], Any],
    x: Any,
    g: Any,
    scores: Any,
    fr: np.ndarray,
    ref: np.ndarray,
) -> dict[str, np.ndarray]:
    """Area ranked before each group, ``A_j``; keep ``A_j < f`` (insertion) or ``A_j >= f`` (deletion)."""
    import torch

    B, C, H, W = x.shape
    G = scores.shape[1]
    flat = g.flatten(1)
    sizes = torch.zeros(B, G, device=x.device).scatter_add_(
        1, flat, torch.ones_like(flat, dtype=torch.float32)
    )
    area = sizes / (H * W)
    order = torch.argsort(scores, dim=1, descending=True)
    before_sorted = torch.cumsum(area.gather(1, order), 1) - area.gather(1, order)
    before = torch.empty_like(before_sorted).scatter_(1, order, before_sorted)
    fill = torch.zeros(C, device=x.device)
    ref_t = torch.as_tensor(ref, device=x.device)
    out = {
        "fractions": fr.astype(np.float64),
        "insertion": np.zeros(len(fr)),
        "deletion": np.zeros(len(fr)),
    }
    with torch.no_grad():
        for i, f in enumerate(fr):
            reached = (before < f - 1e-9).float() if f < 1.0 else (sizes > 0).float()
            for name, keep in (("insertion", reached), ("deletion", 1.0 - reached)):
                xf = superpixel.masked_fill(x.flatten(2), flat, keep, fill).view(
                    B, C, H, W
                )
                out[name][i] = float((classify(xf).argmax(1) == ref_t).float().mean())
    return out


def curve_auc(fractions: Any, values: Any) -> float:
    """Area under a curve by the trapezoid rule over ``fractions`` (a unit interval: in [0, 1]).

    Raises:
        ValueError: lengths that differ, fewer than 2 points.
    """
    fr = check_array(fractions, "fractions", ndim=1, min_size=2)
    v = check_array(values, "values", shape=(fr.shape[0],))
    return float(np.sum(np.diff(fr) * (v[1:] + v[:-1]) / 2.0))
