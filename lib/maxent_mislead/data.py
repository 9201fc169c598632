"""Problem generators of chapter 17: Toy A's tables and Toy B's reward (both reconstructions)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from icml25.checks import check_budget, check_int, check_real

from ._checks import _check_width
from .defaults import DEFAULTS
from .method import _check_rewards

__all__ = ["two_branch_tables", "toy_b_reward", "make_toy_b_reward"]


def two_branch_tables(
    w: float,
    r_mid: float = 1.0,
    r_hi: float = 2.0,
    r_fail: float = -1.0,
    n_actions: int = 2000,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:
    """Toy A as a tabular MDP on an action grid of midpoints of [-1, 1] (reconstruction).

    States: 0 = s0, 1 = robust, 2 = precise, 3 = end (terminal). At s0 the actions ``a < 0`` go
    to robust, ``a >= 0`` to precise (reward 0). Robust pays ``r_mid`` for every action, precise
    ``r_hi`` on ``|a| <= w`` and ``r_fail`` elsewhere; both then end.

    Args:
        w: half-width of the precise set, in (0, 1]; ``w n_actions`` should be an integer so the
            grid measures the set exactly (``2 w``).
        r_mid, r_hi, r_fail: rewards, ``r_fail < r_mid < r_hi``.
        n_actions: grid points (even, >= 2).

    Returns:
        ``(P (4, A, 4), R (4, A), terminal (4,) bool, da, a (A,))``, ``da = 2 / A``.

    Raises:
        ValueError/TypeError: ``w`` outside (0, 1], rewards not ordered, ``n_actions`` odd or < 2.
    """
    w = _check_width(w)
    r_mid, r_hi, r_fail = _check_rewards(r_mid, r_hi, r_fail)
    A = check_int(n_actions, "n_actions", low=2)
    if A % 2:
        raise ValueError(f"n_actions must be even (s0's two halves), got {A}")
    # P (4, A, 4) and value iteration's few (4, A) arrays, float64
    check_budget(f"two_branch_tables(n_actions={A})", n_bytes=8.0 * (16 + 16) * A)
    da = 2.0 / A
    a = -1.0 + (np.arange(A) + 0.5) * da
    P = np.zeros((4, A, 4))
    R = np.zeros((4, A))
    P[0, a < 0, 1] = 1.0
    P[0, a >= 0, 2] = 1.0
    P[1, :, 3] = 1.0
    P[2, :, 3] = 1.0
    P[3, :, 3] = 1.0
    R[1] = r_mid
    R[2] = np.where(np.abs(a) <= w, r_hi, r_fail)
    return P, R, np.array([False, False, False, True]), da, a


def _toy_b(a: np.ndarray, sigma: float) -> np.ndarray:
    """``r(a) = 2 exp(-(a - 0.6)^2 / (2 sigma^2)) + exp(-(a + 0.4)^2 / (2 0.4^2))`` (Toy B)."""
    t = DEFAULTS.toy_b
    return t.h_narrow * np.exp(
        -((a - t.c_narrow) ** 2) / (2 * sigma**2)
    ) + t.h_broad * np.exp(-((a - t.c_broad) ** 2) / (2 * t.s_broad**2))


def toy_b_reward(a: Any, sigma: float = 0.03) -> np.ndarray:
    """Toy B's reward: a narrow peak of height 2 at 0.6 (width ``sigma``) and a broad bump at -0.4.

    Args:
        a: actions (any shape, float64 in [-1, 1]).
        sigma: width of the narrow peak, > 0 (0.03 in the exact toy, 0.1 in the learned one).

    Returns:
        float64 rewards of ``a``'s shape.

    Raises:
        ValueError: ``sigma <= 0``, non-finite actions.
    """
    from icml25.checks import check_array

    return _toy_b(
        check_array(a, "a", dtype=np.float64),
        check_real(sigma, "sigma", low=0.0, low_open=True),
    )


def make_toy_b_reward(sigma: float = 0.03) -> Callable[[np.ndarray], np.ndarray]:
    """Toy B's reward with a fixed ``sigma``, as a picklable callable for :class:`PrecisionBandit`.

    Raises:
        ValueError: ``sigma <= 0``.
    """
    return _ToyB(check_real(sigma, "sigma", low=0.0, low_open=True))


class _ToyB:
    def __init__(self, sigma: float) -> None:
        self.sigma = sigma

    def __call__(self, a: np.ndarray) -> np.ndarray:
        return _toy_b(np.asarray(a, dtype=np.float64), self.sigma)
