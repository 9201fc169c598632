"""Grounding metrics (Sec. 4): mask IoU over points, the box of a mask, Acc@IoU."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from icml25.checks import check_array, check_real

__all__ = ["mask_iou_3d", "box_from_mask", "box_iou_3d", "acc_at_iou"]


def mask_iou_3d(pred: Any, gt: Any) -> float:
    """IoU of two point masks ``|pred & gt| / |pred | gt|`` (0 when both are empty).

    Args:
        pred, gt: (N,) bool masks over the same points.

    Returns:
        IoU in [0, 1].

    Raises:
        ValueError: shapes differ.
    """
    p = check_array(pred, "pred", ndim=1, kind="bool")
    g = check_array(gt, "gt", shape=p.shape, kind="bool")
    union = np.logical_or(p, g).sum()
    return float(np.logical_and(p, g).sum() / union) if union else 0.0


def box_from_mask(xyz: Any, mask: Any, pad: float = 0.05) -> np.ndarray:
    """Axis-aligned extent of the masked points, padded by ``pad`` on every side (the paper's
    evaluation box, the extent of the predicted mask); NaN for an empty mask.

    Args:
        xyz: (N, 3) points; mask: (N,) bool; pad: metres (>= 0) added to each side.

    Returns:
        (6,) float64 ``(min xyz, max xyz)``.

    Raises:
        ValueError: shapes, negative pad.
    """
    X = check_array(xyz, "xyz", ndim=2, dtype=np.float64)
    if X.shape[1] != 3:
        raise ValueError(f"xyz must have shape (N, 3), got {X.shape}")
    m = check_array(mask, "mask", shape=(X.shape[0],), kind="bool")
    p = check_real(pad, "pad", low=0.0)
    if not m.any():
        return np.full(6, np.nan)
    sel = X[m]
    return np.concatenate([sel.min(0) - p, sel.max(0) + p])


def box_iou_3d(a: Any, b: Any) -> np.ndarray:
    """IoU of axis-aligned 3D boxes row by row; a NaN box (empty mask) has IoU 0.

    Args:
        a, b: (n, 6) boxes ``(min, max)``.

    Returns:
        (n,) float64 IoU.

    Raises:
        ValueError: shapes differ.
    """
    A = check_array(a, "a", shape=(None, 6), dtype=np.float64, finite=False)
    B = check_array(b, "b", shape=(A.shape[0], 6), dtype=np.float64, finite=False)
    return _box_iou(A, B)


def _box_iou(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``vol(A & B) / (vol A + vol B - vol(A & B))``; rows with a NaN score 0."""
    inter = np.clip(
        np.minimum(A[:, 3:], B[:, 3:]) - np.maximum(A[:, :3], B[:, :3]), 0, None
    ).prod(-1)
    va = np.clip(A[:, 3:] - A[:, :3], 0, None).prod(-1)
    vb = np.clip(B[:, 3:] - B[:, :3], 0, None).prod(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = inter / (va + vb - inter)
    return np.where(np.isfinite(iou), iou, 0.0)


def acc_at_iou(
    pred: Any, gt: Any, thr: Sequence[float] = (0.25, 0.5)
) -> dict[float, float]:
    """Acc@IoU: the fraction of expressions whose predicted box overlaps the true box by IoU >= thr.

    Args:
        pred, gt: (n, 6) boxes (a NaN row, from an empty mask, counts as IoU 0).
        thr: thresholds in (0, 1].

    Returns:
        ``{thr: accuracy}``.

    Raises:
        ValueError: shapes differ, a threshold outside (0, 1], no rows.
    """
    A = check_array(
        pred, "pred", shape=(None, 6), dtype=np.float64, finite=False, min_size=1
    )
    B = check_array(gt, "gt", shape=(A.shape[0], 6), dtype=np.float64, finite=False)
    ts = [check_real(t, "thr", low=0.0, high=1.0, low_open=True) for t in thr]
    iou = _box_iou(A, B)
    return {t: float((iou >= t).mean()) for t in ts}
