"""Scores of chapter 19: mean intersection-over-union, pixel accuracy, mean squared error."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_int
from icml25.common import to_numpy

__all__ = ["miou", "pixel_acc", "mse", "confusion"]


def _pair(pred: Any, y: Any, K: int) -> tuple[np.ndarray, np.ndarray]:
    p = check_array(to_numpy(pred), "pred", kind="int", low=0, high=K - 1)
    t = check_array(to_numpy(y), "y", kind="int", low=0, high=K - 1)
    if p.shape != t.shape:
        raise ValueError(f"pred must have the shape of y {t.shape}, got {p.shape}")
    if p.size == 0:
        raise ValueError("pred and y must not be empty")
    return p.ravel(), t.ravel()


def confusion(pred: Any, y: Any, K: int) -> np.ndarray:
    """``(K, K)`` int64 confusion counts, rows the true class, columns the predicted one.

    Raises: ValueError: labels outside [0, K), shapes differ, or empty.
    """
    K = check_int(K, "K", low=2)
    p, t = _pair(pred, y, K)
    return np.bincount(t * K + p, minlength=K * K).reshape(K, K)


def miou(pred: Any, y: Any, K: int) -> float:
    """Mean over classes of ``TP / (TP + FP + FN)`` on the whole set (classes absent from both skipped).

    Args:
        pred, y: int labels of one shape in [0, K). K: classes >= 2.

    Returns:
        mIoU in [0, 1].

    Raises:
        ValueError: labels outside [0, K), shapes differ, or empty.
    """
    C = confusion(pred, y, K)
    tp = np.diag(C).astype(float)
    union = C.sum(0) + C.sum(1) - tp
    keep = union > 0
    return float(np.mean(tp[keep] / union[keep]))


def pixel_acc(pred: Any, y: Any, K: int) -> float:
    """Fraction of positions whose predicted class is right.

    Raises: ValueError: labels outside [0, K), shapes differ, or empty.
    """
    K = check_int(K, "K", low=2)
    p, t = _pair(pred, y, K)
    return float(np.mean(p == t))


def mse(pred: Any, y: Any) -> float:
    """Mean squared error over all elements.

    Raises: ValueError: shapes differ, not finite, or empty.
    """
    p = check_array(to_numpy(pred), "pred")
    t = check_array(to_numpy(y), "y")
    if p.shape != t.shape:
        raise ValueError(f"pred must have the shape of y {t.shape}, got {p.shape}")
    if p.size == 0:
        raise ValueError("pred and y must not be empty")
    return float(np.mean((p.astype(np.float64) - t) ** 2))
