"""What chapter 16 measures along a run: the :class:`History` of a batch of runs, relative errors,
norms, the memorisation and generalisation times ``t1``, ``t2`` (Def. "memorisation and
generalisation times"), the sign-drift predictor of ``t2`` (Fig. 4) and log-log slopes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_array, check_choice, check_real

__all__ = [
    "History",
    "rel_train_error",
    "rel_recovery_error",
    "l0_norm",
    "l1_norm",
    "l2_norm",
    "nuclear_norm",
    "grokking_times",
    "predicted_t2",
    "loglog_slope",
]


@dataclass
class History:
    """Trajectory of B optimisation runs, recorded every ``eval_every`` steps.

    Attributes:
        steps: (T,) int64 step index of each record (0, eval_every, 2 eval_every, ...).
        train_error: (T, B) relative train error ``||X a - y|| / ||y||``.
        recovery_error: (T, B) relative recovery (test) error ``||a - a*|| / ||a*||``.
        norms: name -> (T, B) norm trajectories (``l0``, ``l1``, ``l2``; ``nuclear`` for matrices).
        final: (B, n) or (B, n1, n2) the last iterate (the state the paper studies; for the
            subgradient methods it is not the iterate of smallest objective, see
            :func:`icml25.grokking.subgradient_descent`).
        config: the run's arguments (method, alpha, beta, ...), for the record.
    """

    steps: np.ndarray
    train_error: np.ndarray
    recovery_error: np.ndarray
    norms: dict[str, np.ndarray]
    final: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def B(self) -> int:
        """The number of runs (configurations) recorded: the second axis of ``train_error``."""
        return self.train_error.shape[1]


def rel_train_error(X: np.ndarray, a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``||X a - y|| / ||y||`` for (N, n) X, (n,) or (B, n) a and (N,) or (B, N) y.

    Returns:
        () or (B,) float64.

    Raises:
        ValueError: X not 2-D, shapes of a or y that do not match X, non-finite input.
    """
    X = check_array(X, "X", ndim=2, dtype=np.float64)
    a = check_array(a, "a", dtype=np.float64)
    y = check_array(y, "y", dtype=np.float64)
    if a.ndim not in (1, 2) or a.shape[-1] != X.shape[1]:
        raise ValueError(
            f"a must have shape (n,) or (B, n) with n = {X.shape[1]}, got {a.shape}"
        )
    if y.ndim not in (1, 2) or y.shape[-1] != X.shape[0]:
        raise ValueError(
            f"y must have shape (N,) or (B, N) with N = {X.shape[0]}, got {y.shape}"
        )
    if a.ndim == 2 and y.ndim == 2 and y.shape[0] not in (1, a.shape[0]):
        raise ValueError(f"a has {a.shape[0]} rows but y has {y.shape[0]}")
    return np.linalg.norm(a @ X.T - y, axis=-1) / np.linalg.norm(y, axis=-1)


def rel_recovery_error(
    a: np.ndarray, a_star: np.ndarray, matrix: bool = False
) -> np.ndarray:
    """``||a - a*|| / ||a*||`` over the last axis, or the last two (Frobenius) when ``matrix``.

    Args:
        a, a_star: (..., n) float64 (or (..., n1, n2) with ``matrix``), batch shapes broadcastable.
        matrix: treat the last two axes as a matrix.

    Returns:
        float64 array of the broadcast batch shape.

    Raises:
        ValueError: trailing shapes differ, batch shapes do not broadcast, non-finite input.
    """
    axes = (-2, -1) if matrix else -1
    a = check_array(a, "a", dtype=np.float64)
    a_star = check_array(a_star, "a_star", dtype=np.float64)
    k = 2 if matrix else 1
    if a.ndim < k or a_star.ndim < k or a.shape[-k:] != a_star.shape[-k:]:
        raise ValueError(
            f"a and a_star must share their last {k} dimension(s), got {a.shape} and {a_star.shape}"
        )
    try:
        np.broadcast_shapes(a.shape, a_star.shape)
    except ValueError:
        raise ValueError(
            f"a {a.shape} and a_star {a_star.shape} have incompatible batch shapes"
        ) from None
    return np.linalg.norm(a - a_star, axis=axes) / np.linalg.norm(a_star, axis=axes)


def l0_norm(a: np.ndarray, threshold: float = 1e-4) -> np.ndarray:
    """Number of entries with ``|a_i| > threshold`` over the last axis.

    Args:
        a: (..., n) real array, finite (a NaN entry has no size, so it cannot be counted).
        threshold: >= 0.

    Returns:
        (...) int64 counts.

    Raises:
        ValueError: threshold < 0, or ``a`` holds NaN or inf.
    """
    threshold = check_real(threshold, "threshold", low=0.0)
    return np.sum(np.abs(check_array(a, "a")) > threshold, axis=-1)


def l1_norm(a: np.ndarray) -> np.ndarray:
    """``sum_i |a_i|`` over the last axis of a finite (..., n) array; returns (...) float64.

    Raises: ValueError for NaN or inf entries."""
    return np.sum(np.abs(check_array(a, "a")), axis=-1)


def l2_norm(a: np.ndarray) -> np.ndarray:
    """Euclidean norm over the last axis of a finite (..., n) array; returns (...) float64.

    Raises: ValueError for NaN or inf entries."""
    return np.linalg.norm(check_array(a, "a"), axis=-1)


def nuclear_norm(A: np.ndarray) -> np.ndarray:
    """Sum of the singular values of finite (..., n1, n2) matrices; returns (...) float64.

    Raises: ValueError for fewer than two dimensions or NaN/inf entries."""
    A = check_array(A, "A")
    if A.ndim < 2:
        raise ValueError(
            f"A must have at least 2 dimensions (..., n1, n2), got shape {A.shape}"
        )
    return np.linalg.svd(A, compute_uv=False).sum(axis=-1)


def grokking_times(
    history: History,
    threshold: float = 1e-2,
    rule: Literal["first-below", "stays-below"] = "first-below",
    train_threshold: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Memorisation time t1 and generalisation time t2 of each run, with the detection rule named.

    ``t1`` is when the relative train error gets below ``train_threshold`` (default: ``threshold``),
    ``t2`` when the relative recovery error gets below ``threshold``. Rule ``"first-below"``: the
    first recorded step below the threshold (the official Fig. 3 rule, threshold 1e-3 there).
    ``"stays-below"``: the first recorded step after which the error never exceeds the
    threshold again. Times are resolved to the record period; NaN when never reached.

    Returns:
        ``(t1 (B,), t2 (B,))`` float64 step counts.

    Raises:
        TypeError: history not a :class:`History`. ValueError: unknown rule, thresholds not
        finite and > 0.
    """
    if not isinstance(history, History):
        raise TypeError(f"history must be a History, got {type(history).__name__}")
    check_choice(rule, "rule", ("first-below", "stays-below"))
    threshold = check_real(threshold, "threshold", low=0.0, low_open=True)
    tt = (
        threshold
        if train_threshold is None
        else check_real(train_threshold, "train_threshold", low=0.0, low_open=True)
    )
    return (
        _first_time(history.steps, history.train_error, tt, rule),
        _first_time(history.steps, history.recovery_error, threshold, rule),
    )


def _first_time(
    steps: np.ndarray, err: np.ndarray, thr: float, rule: str
) -> np.ndarray:
    """``min {t : e(t) < thr}`` per run ("first-below"), or the first t after which e stays below (NaN: never)."""
    below = err < thr  # (T, B)
    if rule == "stays-below":
        below = np.flip(np.logical_and.accumulate(np.flip(below, 0), axis=0), 0)
    out = np.full(err.shape[1], np.nan)
    hit = below.any(axis=0)
    out[hit] = steps[np.argmax(below, axis=0)[hit]]
    return out


def predicted_t2(
    a_ls: ArrayLike,
    a_star: ArrayLike,
    alpha: float | ArrayLike,
    beta: float | ArrayLike,
) -> np.ndarray:
    """Phase-2 duration predicted by the sign drift: ``||a_ls - a*||_inf / (alpha beta)``.

    The official Fig. 4 predictor: after memorisation the iterate sits near the least-squares
    solution ``a_ls``; the l1 subgradient moves each coordinate by at most ``alpha beta`` per step,
    so reaching ``a*`` takes at least ``||a_ls - a*||_inf / (alpha beta)`` steps.

    Args:
        a_ls, a_star: (n,) or (B, n) float64; alpha, beta: positive scalars or (B,).

    Returns:
        () or (B,) float64 steps.

    Raises:
        ValueError: mismatched shapes, alpha or beta not finite and > 0, non-finite vectors.
        TypeError: non-numeric input.
    """
    a_ls = check_array(a_ls, "a_ls", dtype=np.float64)
    a_star = check_array(a_star, "a_star", dtype=np.float64)
    if (
        a_ls.ndim not in (1, 2)
        or a_star.ndim not in (1, 2)
        or a_ls.shape[-1] != a_star.shape[-1]
        or (a_ls.ndim == 2 and a_star.ndim == 2 and a_ls.shape[0] != a_star.shape[0])
    ):
        raise ValueError(
            f"a_ls and a_star must have shape (n,) or (B, n) with the same n (and B), "
            f"got {a_ls.shape} and {a_star.shape}"
        )
    gap_shape = np.broadcast_shapes(a_ls.shape, a_star.shape)[:-1]
    params = []
    for name, v in (("alpha", alpha), ("beta", beta)):
        v = check_array(v, name, dtype=np.float64, low=0.0, low_open=True)
        if v.ndim > 1 or (v.ndim == 1 and len(gap_shape) == 1 and v.shape != gap_shape):
            raise ValueError(
                f"{name} must be a scalar or (B,) = {gap_shape}, got shape {v.shape}"
            )
        params.append(v)
    try:
        return _predicted_t2(a_ls, a_star, *params)
    except ValueError:
        raise ValueError(
            f"alpha {params[0].shape} and beta {params[1].shape} must be scalars or the same (B,)"
        ) from None


def _predicted_t2(
    a_ls: np.ndarray, a_star: np.ndarray, alpha: np.ndarray, beta: np.ndarray
) -> np.ndarray:
    """``t2 ~ ||a_ls - a*||_inf / (alpha beta)``: each coordinate drifts by at most ``alpha beta`` per step (Fig. 4)."""
    return np.max(np.abs(a_ls - a_star), axis=-1) / (alpha * beta)


def loglog_slope(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None
) -> float:
    """Least-squares slope of log y against log x over the finite, positive pairs.

    With ``groups`` (one label per pair, e.g. the problem index), each group gets its own
    intercept (log x and log y are centred within the group before the pooled fit). This is the
    estimator to use for ``t2 ~ C_problem / (alpha beta)``: problems differ in ``C``, and a run that
    never generalised (NaN) would otherwise bias a pooled fit.

    Args:
        x, y: real arrays with the same number of entries (NaN, inf and non-positive pairs are
            dropped); groups: one label per pair, or None for a single group.

    Returns:
        the slope, or NaN when no slope is defined: fewer than two usable pairs (per group, with
        groups) or every group's x constant.

    Raises:
        ValueError: x and y (or groups) of different sizes. TypeError: non-numeric x or y.
    """
    x = check_array(x, "x", dtype=np.float64, finite=False).ravel()
    y = check_array(y, "y", dtype=np.float64, finite=False).ravel()
    if x.shape != y.shape:
        raise ValueError(
            f"x and y must have the same number of entries, got {x.size} and {y.size}"
        )
    if groups is None:
        groups = np.zeros(x.shape, dtype=np.int64)
    groups = np.asarray(groups).ravel()
    if groups.shape != x.shape:
        raise ValueError(
            f"groups must have one label per pair ({x.size}), got {groups.size}"
        )
    return _loglog_slope(x, y, groups)


def _loglog_slope(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> float:
    """``slope = sum_g sum_i dx_gi dy_gi / sum_g sum_i dx_gi^2``, ``dx``, ``dy``: log x, log y centred per group."""
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    lx, ly = [], []
    for lab in np.unique(groups[ok]):
        m = ok & (groups == lab)
        if m.sum() >= 2 and np.ptp(x[m]) > 0:  # a constant x carries no slope
            lx.append(np.log(x[m]) - np.log(x[m]).mean())
            ly.append(np.log(y[m]) - np.log(y[m]).mean())
    if not lx:
        return float("nan")
    lx_all, ly_all = np.concatenate(lx), np.concatenate(ly)
    return float(np.sum(lx_all * ly_all) / np.sum(lx_all**2))
