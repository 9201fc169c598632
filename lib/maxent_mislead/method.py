"""Soft values, soft policies, the branch threshold and (soft) value iteration (chapter 17).

MaxEnt RL (Sec. 3 of Zhang, Chang and Gao, ICML 2025) replaces the hard maximum of the Bellman
equation by a log-partition over the action set:

    V(s) = alpha log int_A exp(Q(s, a) / alpha) da,    pi*(a|s) = exp((Q(s, a) - V(s)) / alpha),

so a state's soft value counts *how many* actions are good, not only how good the best one is.
The paper's misleading mechanism follows: a state whose only good actions form a set of measure
``2 w`` looks worse, once ``alpha`` exceeds a threshold ``alpha*``, than a state where every action
is mediocre (:func:`branch_threshold_alpha`). The paper's Entropy Bifurcation Extension turns this
into a statement about every MDP; :func:`bifurcation_extension` is the chapter's own construction
in its spirit (a labelled reconstruction: the paper's text of Thm 5.5 / Prop. 5.6 was not read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from icml25.checks import check_budget, check_int, check_real
from icml25.kernels import adaent

from ._checks import _check_alpha, _check_gamma, _check_mdp, _check_q, _check_width

__all__ = [
    "ValueIterationResult",
    "soft_value",
    "soft_policy",
    "branch_values",
    "branch_threshold_alpha",
    "soft_value_iteration",
    "value_iteration",
    "bifurcation_extension",
    "grid_mass_near",
    "half_mass_alpha",
]


def soft_value(q: np.ndarray, alpha: float, da: float = 1.0) -> np.ndarray:
    """Soft value ``alpha log sum_a exp(q_a / alpha) da`` over the last axis (``alpha = 0``: max).

    The Riemann sum of ``V(s) = alpha log int_A exp(Q(s, a) / alpha) da`` (Sec. 3). Rows go
    through the kernel dispatcher :func:`icml25.kernels.adaent.grid_soft_value` (logsumexp).

    Args:
        q: (..., A) float64 action values on a grid of spacing ``da`` (``da = 1``: a discrete set).
        alpha: temperature >= 0.
        da: grid spacing > 0.

    Returns:
        float64 array of shape ``q.shape[:-1]`` (a 0-d array for a 1-d ``q``).

    Raises:
        TypeError/ValueError: ``q`` not a finite real array, ``alpha < 0``, ``da <= 0``.
    """
    q = _check_q(q)
    alpha = _check_alpha(alpha)
    da = check_real(da, "da", low=0.0, low_open=True)
    return adaent.grid_soft_value(q.reshape(-1, q.shape[-1]), alpha, da).reshape(
        q.shape[:-1]
    )


def _soft_policy(q: np.ndarray, alpha: float) -> np.ndarray:
    """``pi(a) = exp((q_a - V) / alpha) da``, normalised over the grid; ``alpha = 0``: uniform on the argmax set."""
    if alpha == 0.0:
        top = q == q.max(axis=-1, keepdims=True)
        return top / top.sum(axis=-1, keepdims=True)
    # shift first: q / alpha alone overflows for tiny alpha (-inf is exact here)
    with np.errstate(over="ignore"):
        z = (q - q.max(axis=-1, keepdims=True)) / alpha
    return np.exp(z - logsumexp(z, axis=-1, keepdims=True))


def soft_policy(q: np.ndarray, alpha: float) -> np.ndarray:
    """The soft-optimal policy ``pi*(a|s) propto exp(Q(s, a) / alpha)`` as grid probabilities.

    Args:
        q: (..., A) float64 action values on a grid (last axis).
        alpha: temperature >= 0 (0: uniform over the maximisers, the plain-RL limit).

    Returns:
        (..., A) float64 probabilities summing to 1 over the last axis (multiply by ``1 / da`` for
        a density).

    Raises:
        TypeError/ValueError: ``q`` not a finite real array, ``alpha < 0``.
    """
    return _soft_policy(_check_q(q), _check_alpha(alpha))


def _branch_values(
    alpha: float, r_mid: float, r_hi: float, r_fail: float, w: float
) -> tuple[float, float]:
    """Soft values of Toy A's two branches on A = [-1, 1] (|A| = 2):

    robust ``V = r_mid + alpha log 2``; precise (good set ``|a| <= w``, measure ``2 w``)
    ``V = alpha log(2 w e^{r_hi / alpha} + (2 - 2 w) e^{r_fail / alpha})``; at ``alpha = 0``
    the maxima ``r_mid`` and ``r_hi``."""
    if alpha == 0.0:
        return r_mid, r_hi
    precise = (
        alpha * logsumexp([r_hi / alpha, r_fail / alpha], b=[2.0 * w, 2.0 - 2.0 * w])
        if w < 1
        else r_hi + alpha * np.log(2.0)
    )
    return r_mid + alpha * np.log(2.0), float(precise)


def branch_values(
    alpha: float, r_mid: float, r_hi: float, r_fail: float, w: float
) -> tuple[float, float]:
    """Soft values ``(V_robust, V_precise)`` of Toy A's two branches (closed form, Sec. 5 in spirit).

    Args:
        alpha: temperature >= 0.
        r_mid: reward of every robust action; r_hi: reward of a precise action with ``|a| <= w``;
        r_fail: reward of the other precise actions (``r_fail < r_mid < r_hi``).
        w: half-width of the precise set, in (0, 1].

    Returns:
        ``(V_robust, V_precise)`` as floats.

    Raises:
        ValueError: ``alpha < 0``, ``w`` outside (0, 1], rewards not ordered ``r_fail < r_mid < r_hi``.
    """
    alpha, (r_mid, r_hi, r_fail), w = (
        _check_alpha(alpha),
        _check_rewards(r_mid, r_hi, r_fail),
        _check_width(w),
    )
    return _branch_values(alpha, r_mid, r_hi, r_fail, w)


def _check_rewards(r_mid: Any, r_hi: Any, r_fail: Any) -> tuple[float, float, float]:
    r_mid, r_hi, r_fail = (
        check_real(r_mid, "r_mid"),
        check_real(r_hi, "r_hi"),
        check_real(r_fail, "r_fail"),
    )
    if not r_fail < r_mid < r_hi:
        raise ValueError(
            f"r_mid must lie strictly between r_fail and r_hi, got r_fail={r_fail}, "
            f"r_mid={r_mid}, r_hi={r_hi}"
        )
    return r_mid, r_hi, r_fail


def _threshold_alpha(r_mid: float, r_hi: float, r_fail: float, w: float) -> float:
    """Root of ``V_precise(alpha) - V_robust(alpha)`` (brentq). The gap is ``r_hi - r_mid > 0`` at
    ``alpha -> 0`` and tends to ``(2 w r_hi + (2 - 2w) r_fail) / 2 - r_mid`` (the mean reward minus
    ``r_mid``) as ``alpha -> inf``; it is bracketed by doubling ``alpha``."""
    gap = lambda a: (  # noqa: E731
        _branch_values(a, r_mid, r_hi, r_fail, w)[1]
        - _branch_values(a, r_mid, r_hi, r_fail, w)[0]
    )
    lo, hi = 1e-3 * (r_hi - r_mid), 1.0
    while gap(hi) > 0:
        hi *= 2.0
        if hi > 1e8:
            raise ValueError(
                "no threshold: the precise branch stays preferred for every alpha "
                "(its mean reward is above r_mid)"
            )
    return float(brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12))


def branch_threshold_alpha(r_mid: float, r_hi: float, r_fail: float, w: float) -> float:
    """The temperature ``alpha*`` above which MaxEnt prefers Toy A's robust branch.

    Solves ``alpha log(2 w e^{r_hi/alpha} + (2 - 2w) e^{r_fail/alpha}) = r_mid + alpha log 2`` with
    ``scipy.optimize.brentq`` (Toy A is the chapter's reconstruction of the paper's two-branch
    argument: ``r_mid = 1, r_hi = 2, r_fail = -1`` give ``alpha* = 0.3341`` at ``w = 0.05``).

    Args:
        r_mid, r_hi, r_fail: rewards, ``r_fail < r_mid < r_hi``.
        w: half-width of the precise set, in (0, 1].

    Returns:
        ``alpha*`` (float).

    Raises:
        ValueError: rewards not ordered, ``w`` outside (0, 1], or no threshold exists (the
        precise branch's mean reward is at least ``r_mid``).
    """
    r_mid, r_hi, r_fail = _check_rewards(r_mid, r_hi, r_fail)
    return _threshold_alpha(r_mid, r_hi, r_fail, _check_width(w))


@dataclass(frozen=True)
class ValueIterationResult:
    """Fixed point of (soft) value iteration.

    Attributes:
        V: (S,) state values; Q: (S, A) action values; policy: (S, A) action probabilities
        (soft-optimal, or uniform over the greedy set when ``alpha = 0``); n_iter: sweeps used.
    """

    V: np.ndarray
    Q: np.ndarray
    policy: np.ndarray
    n_iter: int


def _soft_vi(
    P: np.ndarray,
    R: np.ndarray,
    alpha: float,
    gamma: float,
    da: float,
    terminal: np.ndarray,
    tol: float,
    max_iter: int,
) -> ValueIterationResult:
    """Soft Bellman iteration ``Q = R + gamma P V``, ``V = alpha log sum_a e^{Q/alpha} da``
    (``alpha = 0``: ``V = max_a Q``); ``V = 0`` on terminal states. A ``gamma``-contraction."""
    S, A, _ = P.shape
    V = np.zeros(S)
    for it in range(1, max_iter + 1):
        Q = R + gamma * P @ V
        if alpha == 0.0:
            V_new = Q.max(axis=1)
        else:
            top = Q.max(axis=1)
            with np.errstate(over="ignore"):
                V_new = top + alpha * (
                    logsumexp((Q - top[:, None]) / alpha, axis=1) + np.log(da)
                )
        V_new[terminal] = 0.0
        if np.max(np.abs(V_new - V)) <= tol:
            V = V_new
            break
        V = V_new
    Q = R + gamma * P @ V
    return ValueIterationResult(V=V, Q=Q, policy=_soft_policy(Q, alpha), n_iter=it)


def soft_value_iteration(
    P: np.ndarray,
    R: np.ndarray,
    alpha: float,
    gamma: float,
    *,
    da: float = 1.0,
    terminal: np.ndarray | None = None,
    tol: float = 1e-12,
    max_iter: int = 100_000,
) -> ValueIterationResult:
    """Soft value iteration on a tabular MDP (the soft Bellman equation, Sec. 3).

    ``Q(s, a) = R(s, a) + gamma sum_s' P(s'|s, a) V(s')``, ``V(s) = alpha log sum_a exp(Q(s, a)/alpha) da``.
    ``da`` is the measure of one action (``2 / A`` for a grid on [-1, 1]); terminal states have
    ``V = 0`` (no entropy after the end).

    Args:
        P: (S, A, S) float64 transition probabilities (rows sum to 1).
        R: (S, A) float64 rewards.
        alpha: temperature >= 0 (0 is :func:`value_iteration`).
        gamma: discount in [0, 1).
        da: measure of one action, > 0.
        terminal: (S,) bool, states whose value is 0, or None.
        tol: sup-norm change at which to stop; max_iter: sweep limit.

    Returns:
        :class:`ValueIterationResult`.

    Raises:
        ValueError/TypeError: bad shapes, ``P`` not stochastic, non-finite values, ``alpha < 0``,
        ``gamma`` outside [0, 1), ``da <= 0``, ``tol <= 0``, ``max_iter < 1`` (each named).
    """
    P, R, term = _check_mdp(P, R, terminal)
    return _soft_vi(
        P,
        R,
        _check_alpha(alpha),
        _check_gamma(gamma),
        check_real(da, "da", low=0.0, low_open=True),
        term,
        check_real(tol, "tol", low=0.0, low_open=True),
        check_int(max_iter, "max_iter", low=1),
    )


def value_iteration(
    P: np.ndarray,
    R: np.ndarray,
    gamma: float,
    *,
    terminal: np.ndarray | None = None,
    tol: float = 1e-12,
    max_iter: int = 100_000,
) -> ValueIterationResult:
    """Plain value iteration (``V = max_a Q``): :func:`soft_value_iteration` at ``alpha = 0``.

    Args and Raises: as :func:`soft_value_iteration` (no ``alpha``, no ``da``).

    Returns:
        :class:`ValueIterationResult` whose policy is uniform over the greedy actions.
    """
    P, R, term = _check_mdp(P, R, terminal)
    return _soft_vi(
        P,
        R,
        0.0,
        _check_gamma(gamma),
        1.0,
        term,
        check_real(tol, "tol", low=0.0, low_open=True),
        check_int(max_iter, "max_iter", low=1),
    )


def _extend(
    P: np.ndarray,
    R: np.ndarray,
    term: np.ndarray,
    s: int,
    a: int,
    k: int,
    r_fail: float,
    gamma: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entropy bifurcation extension (reconstruction). ``(s, a)`` now leads to a new branch state
    ``b`` (reward ``R[s, a]`` kept on entry). At ``b`` the first ``k`` actions continue as ``(s, a)``
    did (to ``P[s, a]``) with reward ``(1 - gamma) sum_s' P[s, a, s'] V*(s')``, so that
    ``V*(b) = E V*(s')`` and every plain optimal value is unchanged; the other ``A - k`` actions
    go to a new terminal failure state ``f`` with reward ``r_fail``."""
    S, A, _ = P.shape
    V_star = _soft_vi(P, R, 0.0, gamma, 1.0, term, 1e-13, 1_000_000).V
    cont = P[s, a] @ V_star
    P2 = np.zeros((S + 2, A, S + 2))
    P2[:S, :, :S] = P
    R2 = np.zeros((S + 2, A))
    R2[:S] = R
    b, f = S, S + 1
    P2[s, a, :] = 0.0
    P2[s, a, b] = 1.0
    P2[b, :k, :S] = P[s, a]
    R2[b, :k] = (1.0 - gamma) * cont
    P2[b, k:, f] = 1.0
    R2[b, k:] = r_fail
    P2[f, :, f] = 1.0
    term2 = np.concatenate([term, [False, True]])
    return P2, R2, term2


def bifurcation_extension(
    P: np.ndarray,
    R: np.ndarray,
    state: int,
    action: int,
    *,
    w: float,
    r_fail: float,
    gamma: float,
    terminal: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entropy Bifurcation Extension of a tabular MDP at ``(state, action)`` (reconstruction).

    The paper extends any MDP so that MaxEnt prefers a chosen suboptimal action while the plain
    optimum is untouched (Thm 5.5 / Prop. 5.6, known to the chapter by name and reviewer summary
    only). Our construction: ``(state, action)`` enters a new branch state where only a fraction
    ``w`` of the actions (``k = max(1, round(w A))``) continue as before and the rest fail
    (reward ``r_fail``, then a terminal state). Continuing pays ``(1 - gamma) E V*(s')``, so every
    plain optimal value and greedy action of the original states is unchanged; the branch's soft
    value, a log-partition dominated for large ``alpha`` by the failing actions, drops.

    Args:
        P: (S, A, S) transitions; R: (S, A) rewards.
        state, action: the pair to extend (integers in range).
        w: fraction of the branch's actions that continue, in (0, 1].
        r_fail: reward of a failing action; must lie below ``min_s V*(s)`` over the successors
            of ``(state, action)`` so that continuing stays plain-optimal.
        gamma: discount in [0, 1) (the compensating reward depends on it).
        terminal: (S,) bool terminal states of ``P`` or None.

    Returns:
        ``(P2, R2, terminal2)`` of the extended MDP with ``S + 2`` states: ``S`` is the branch
        state, ``S + 1`` the failure state (terminal).

    Raises:
        ValueError/TypeError: as :func:`soft_value_iteration`; ``state``/``action`` out of range;
        ``w`` outside (0, 1]; ``r_fail`` not below the continuation value.
    """
    P, R, term = _check_mdp(P, R, terminal)
    S, A, _ = P.shape
    state = check_int(state, "state", low=0, high=S - 1)
    action = check_int(action, "action", low=0, high=A - 1)
    w, gamma = _check_width(w), _check_gamma(gamma)
    r_fail = check_real(r_fail, "r_fail")
    V_star = _soft_vi(P, R, 0.0, gamma, 1.0, term, 1e-13, 1_000_000).V
    cont = float(P[state, action] @ V_star)
    if r_fail >= cont:
        raise ValueError(
            f"r_fail must lie below the continuation value E V*(s') = {cont:.6g}, got {r_fail}"
        )
    k = max(1, int(round(w * A)))
    return _extend(P, R, term, state, action, k, r_fail, gamma)


def _mass_near(
    r: np.ndarray, a: np.ndarray, alpha: float, center: float, radius: float
) -> float:
    """Mass of ``pi propto exp(r / alpha)`` on the grid points within ``radius`` of ``center``."""
    p = _soft_policy(r, alpha)
    return float(p[np.abs(a - center) <= radius].sum())


def _action_grid(n_grid: int) -> np.ndarray:
    """Midpoints of ``n_grid`` equal cells of [-1, 1] (refused up front when the grid and the few
    float64 arrays of its size that the callers build cannot fit in memory)."""
    check_budget(f"an action grid (n_grid={n_grid})", n_bytes=8.0 * 8 * n_grid)
    return -1.0 + (np.arange(n_grid) + 0.5) * (2.0 / n_grid)


def grid_mass_near(
    reward_fn: Callable[[np.ndarray], np.ndarray],
    alpha: float,
    center: float,
    radius: float,
    n_grid: int = 200_000,
) -> float:
    """Soft-optimal mass near ``center`` for a one-step bandit on [-1, 1] (exact, on a grid).

    The soft-optimal policy of a bandit is ``pi(a) propto exp(r(a) / alpha)``; this returns
    ``pi(|a - center| <= radius)`` on ``n_grid`` midpoints.

    Args:
        reward_fn: vectorised reward, (n,) float64 actions -> (n,) float64 rewards.
        alpha: temperature >= 0; center: in [-1, 1]; radius: > 0.
        n_grid: grid points, >= 2.

    Returns:
        a probability (float).

    Raises:
        ValueError/TypeError: ``alpha < 0``, ``center`` outside [-1, 1], ``radius <= 0``,
        ``n_grid < 2``, ``reward_fn`` not callable or returning a wrongly shaped/non-finite array.
    """
    alpha, center = (
        _check_alpha(alpha),
        check_real(center, "center", low=-1.0, high=1.0),
    )
    radius, n_grid = (
        check_real(radius, "radius", low=0.0, low_open=True),
        check_int(n_grid, "n_grid", low=2),
    )
    a = _action_grid(n_grid)
    return _mass_near(_rewards_on(reward_fn, a), a, alpha, center, radius)


def _rewards_on(reward_fn: Any, a: np.ndarray) -> np.ndarray:
    if not callable(reward_fn):
        raise TypeError(f"reward_fn must be callable, got {type(reward_fn).__name__}")
    r = _check_q(np.asarray(reward_fn(a), dtype=np.float64), "reward_fn(a)")
    if r.shape != a.shape:
        raise ValueError(
            f"reward_fn(a) must have the shape of a {a.shape}, got {r.shape}"
        )
    return r


def half_mass_alpha(
    reward_fn: Callable[[np.ndarray], np.ndarray],
    center: float,
    radius: float,
    n_grid: int = 200_000,
    alpha_max: float = 100.0,
) -> float:
    """The temperature at which half the soft-optimal mass lies within ``radius`` of ``center``.

    Solves ``grid_mass_near(alpha) = 1/2`` with brentq on ``(1e-3, alpha_max)`` (Toy B: 0.3479).

    Args:
        reward_fn, center, radius, n_grid: as :func:`grid_mass_near`.
        alpha_max: upper end of the bracket, > 1e-3.

    Returns:
        the half-mass temperature (float).

    Raises:
        ValueError: as :func:`grid_mass_near`, or the mass does not cross 1/2 inside the bracket.
    """
    center = check_real(center, "center", low=-1.0, high=1.0)
    radius, n_grid = (
        check_real(radius, "radius", low=0.0, low_open=True),
        check_int(n_grid, "n_grid", low=2),
    )
    alpha_max = check_real(alpha_max, "alpha_max", low=1e-3, low_open=True)
    a = _action_grid(n_grid)
    r = _rewards_on(reward_fn, a)
    f = lambda al: _mass_near(r, a, al, center, radius) - 0.5  # noqa: E731
    lo = 1e-3
    if f(lo) * f(alpha_max) > 0:
        raise ValueError(
            f"the mass near {center} does not cross 1/2 for alpha in ({lo}, {alpha_max})"
        )
    return float(brentq(f, lo, alpha_max, xtol=1e-10))
