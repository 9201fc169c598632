"""Validators of this chapter's own quantities (temperatures, discounts, tabular MDPs), built on
:mod:`icml25.checks`. Public functions call them once, at their boundary."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_int, check_real

__all__: list[str] = []


def _check_alpha(alpha: Any, name: str = "alpha") -> float:
    """The entropy temperature: a finite real >= 0 (0 is plain RL)."""
    return check_real(alpha, name, low=0.0)


def _check_gamma(gamma: Any) -> float:
    """A discount in [0, 1)."""
    return check_real(gamma, "gamma", low=0.0, high=1.0, high_open=True)


def _check_width(w: Any) -> float:
    """A precise set's half-width (or fraction) in (0, 1]."""
    return check_real(w, "w", low=0.0, low_open=True, high=1.0)


def _check_threshold(threshold: Any) -> float:
    """SAC-AdaEnt's cosine threshold in [-1, 1]."""
    return check_real(threshold, "threshold", low=-1.0, high=1.0)


def _check_n_samples(n_samples: Any) -> int:
    """SAC-AdaEnt's sampled actions per state: an integer >= 2 (a cosine needs two points)."""
    return check_int(n_samples, "n_samples", low=2)


def _check_q(q: Any, name: str = "q") -> np.ndarray:
    """Action values on a grid: a finite float64 array with at least one action on the last axis."""
    q = check_array(q, name, dtype=np.float64, min_size=1)
    if q.ndim < 1:
        raise ValueError(f"{name} must have an action axis (last), got a scalar")
    return q


def _check_mdp(
    P: Any, R: Any, terminal: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``P`` (S, A, S) row-stochastic, ``R`` (S, A) finite, ``terminal`` (S,) bool or None."""
    P = check_array(P, "P", ndim=3, dtype=np.float64, low=0.0)
    S, A, S2 = P.shape
    if S != S2 or S < 1 or A < 1:
        raise ValueError(f"P must have shape (S, A, S), got {P.shape}")
    if not np.allclose(P.sum(axis=2), 1.0, rtol=0, atol=1e-9):
        raise ValueError(
            "P must be row-stochastic: P[s, a, :] must sum to 1 for every (s, a)"
        )
    R = check_array(R, "R", shape=(S, A), dtype=np.float64)
    if terminal is None:
        term = np.zeros(S, dtype=bool)
    else:
        term = check_array(terminal, "terminal", kind="bool", shape=(S,))
    return P, R, term
