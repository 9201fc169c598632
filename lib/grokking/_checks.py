"""Chapter 16's own argument rules, built from the shared validators of :mod:`icml25.checks`.

Each helper validates one structure of this paper's problems (a batch of sparse-recovery
problems, a per-configuration hyperparameter, a record schedule) and returns trusted float64
arrays that the private math functions use without further checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_int


def _check_schedule(n_steps: Any, eval_every: Any) -> tuple[int, int]:
    """``(n_steps, eval_every)`` as ints with ``1 <= eval_every <= n_steps`` (T = n_steps // eval_every + 1 records)."""
    n_steps = check_int(n_steps, "n_steps", low=1)
    eval_every = check_int(eval_every, "eval_every", low=1, high=n_steps)
    return n_steps, eval_every


def _check_problem_batch(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """One shared ``X`` (N, n) or a stack (B, N, n), with targets (N,) or (B, N); returns ``(X, y (B, N), B)``.

    A stack of one problem, (1, N, n), is returned as its (N, n) matrix (the shared-X path).
    """
    X = check_array(X, "X", ndim=(2, 3), dtype=np.float64)
    y = check_array(y, "y", dtype=np.float64)
    N = X.shape[-2]
    if y.ndim == 1:
        y = y[None, :]
    if y.ndim != 2 or y.shape[1] != N:
        raise ValueError(
            f"y must have shape (N,) or (B, N) with N = {N} (rows of X), got {y.shape}"
        )
    B = y.shape[0]
    if X.ndim == 3 and X.shape[0] != B:
        if B == 1:
            y = np.broadcast_to(y, (X.shape[0], N)).copy()
            B = X.shape[0]
        else:
            raise ValueError(f"X has {X.shape[0]} configurations but y has {B}")
    if X.ndim == 3 and X.shape[0] == 1:
        X = X[0]  # one problem: the shared-X path
    if np.any(np.linalg.norm(y, axis=1) == 0):
        raise ValueError(
            "y must not be all zeros (the relative train error divides by ||y||)"
        )
    return X, y, B


def _check_single_problem(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """One problem: ``X`` (N, n) and ``y`` (N,), finite float64."""
    X = check_array(X, "X", ndim=2, dtype=np.float64)
    y = check_array(y, "y", shape=(X.shape[0],), dtype=np.float64)
    return X, y


def _check_per_config(value: Any, name: str, B: int, *, positive: bool) -> np.ndarray:
    """A hyperparameter given as a scalar or one value per configuration: (B,) float64, finite,
    ``> 0`` when ``positive`` else ``>= 0``."""
    arr = check_array(value, name, dtype=np.float64, low=0.0, low_open=positive)
    if arr.ndim == 0:
        arr = np.full(B, float(arr))
    if arr.shape != (B,):
        raise ValueError(
            f"{name} must be a scalar or have shape ({B},), got shape {arr.shape}"
        )
    return arr


def _check_init(init: Any, B: int, n: int) -> np.ndarray:
    """The start ``a_0``: a scalar c (``c * ones``, the official "identity" init), (n,) or (B, n); returns (B, n)."""
    arr = check_array(init, "init", dtype=np.float64)
    if arr.ndim == 0:
        return np.full((B, n), float(arr))
    if arr.shape == (n,):
        return np.broadcast_to(arr, (B, n)).copy()
    if arr.shape == (B, n):
        return arr.copy()
    raise ValueError(
        f"init must be a scalar, shape ({n},) or ({B}, {n}), got {arr.shape}"
    )


def _check_target(a_star: Any, B: int, n: int) -> np.ndarray:
    """The ground truth ``a*``: (n,) or (B, n), finite and non-zero per row; returns (B, n)."""
    a_star = check_array(a_star, "a_star", dtype=np.float64)
    if a_star.shape == (n,):
        a_star = np.broadcast_to(a_star, (B, n)).copy()
    if a_star.shape != (B, n):
        raise ValueError(
            f"a_star must have shape ({n},) or ({B}, {n}), got {a_star.shape}"
        )
    if np.any(np.linalg.norm(a_star, axis=1) == 0):
        raise ValueError(
            "a_star must not be zero (the recovery error divides by ||a*||)"
        )
    return a_star
