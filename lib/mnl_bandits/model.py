"""The MNL choice model (Sec. 2 of Lee & Oh, ICML 2025) and its assortment oracle.

Conventions: an offered ``X_S`` has shape ``(k, d)``; choice probabilities and one-hot feedback
are ``(k + 1,)`` with the **outside option last**; attraction weights are v_i = exp(x_i^T w) and
the outside option has weight ``v0``. The assortment oracle is the kernel's
(:mod:`icml25.kernels.mnl_bandits`): this module calls its dispatcher and keeps no copy of it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_array, check_choice, check_int, check_positive
from icml25.kernels import mnl_bandits

from .defaults import DEFAULTS

__all__ = [
    "mnl_probs",
    "mnl_loss_grad_hess",
    "expected_revenue",
    "reward_variance",
    "optimal_assortment",
]


# --------------------------------------------------------------------------------------
# Paper-specific checks, built from icml25.checks
# --------------------------------------------------------------------------------------


def _check_assortment(S: Any, N: int, K: int | None = None) -> np.ndarray:
    """An assortment: 1-D int64 distinct item indices in ``[0, N)``, at most ``K`` of them.

    Raises:
        ValueError: anything else (a float or bool array too, as before the shared validators).
    """
    try:
        S = check_array(S, "S", ndim=1, kind="int", low=0, high=N - 1)
    # a non-integer assortment is a wrong value of S, not a wrong kind
    except TypeError as err:
        raise ValueError(
            f"S must be a 1-D array of integer item indices: {err}"
        ) from err
    if np.unique(S).size != S.size:
        raise ValueError(f"S must not repeat items, got {S.tolist()}")
    if K is not None and S.size > K:
        raise ValueError(f"S has {S.size} items, more than K={K}")
    return S


def _check_one_hot(y: Any, k: int) -> np.ndarray:
    """One round's feedback: (k + 1,) float64 with exactly one entry 1 and the rest 0 (outside last).

    Raises:
        ValueError: wrong shape, non-finite, or not one-hot (negative entries, several purchases,
            fractions or no choice at all are impossible feedback of one customer).
    """
    y = check_array(y, "y", shape=(k + 1,), low=0.0, high=1.0, dtype=np.float64)
    if not (np.all((y == 0.0) | (y == 1.0)) and np.count_nonzero(y) == 1):
        raise ValueError(
            f"y must be one-hot (one 1, the rest 0; the outside option last), got {y.tolist()}"
        )
    return y


def _check_probability_vector(y: Any, k: int, rtol: float = 1e-9) -> np.ndarray:
    """(k + 1,) float64 non-negative entries summing to one (to ``rtol``): one-hot or a mixture.

    Raises:
        ValueError: wrong shape, non-finite, negative entries, or a sum other than one (the
            gradient g = sum_i (p_i - y_i) x_i assumes sum_i y_i = 1 and would be silently wrong).
    """
    y = check_array(y, "y", shape=(k + 1,), low=0.0, dtype=np.float64)
    if abs(float(y.sum()) - 1.0) > rtol:
        raise ValueError(
            f"y must sum to 1 (a one-hot choice or a probability vector), got a sum of {float(y.sum())!r}"
        )
    return y


#: the largest eta * ||x||_2^2 accepted: the Hessians sum terms eta p_i x_i x_i^T, which
#: must stay far below the float64 maximum (~1.8e308) for the solves to mean anything
_MAX_CURVATURE = 1e300


def _check_feature_scale(X: np.ndarray, name: str, eta: float = 1.0) -> np.ndarray:
    """``X`` (finite, validated) if eta * max_i ||x_i||^2 <= 1e300, else ValueError naming ``name``.

    A cheap bound, computed in logarithms (max |x_ij| sqrt(d) bounds ||x_i|| without overflow):
    past it x x^T overflows float64 and every Hessian and solve that follows is inf or NaN.
    """
    if X.size == 0:
        return X
    top = float(np.abs(X).max())
    if (
        top > 0.0
        and 2.0 * math.log10(top * math.sqrt(X.shape[-1])) + math.log10(max(eta, 1.0))
        > 300.0
    ):
        raise ValueError(
            f"{name} is too large: max |entry| = {top:.3g}, so the Hessian terms "
            f"eta x x^T (eta = {eta:g}) would overflow float64; rescale the features "
            f"(the paper has ||x|| <= 1)"
        )
    return X


def _check_attractions(v: Any, r: Any) -> tuple[np.ndarray, np.ndarray]:
    """(N,) positive finite attraction weights ``v`` and (N,) finite revenues ``r``, float64."""
    v = check_array(v, "v", ndim=1, dtype=np.float64)
    r = check_array(r, "r", shape=v.shape, dtype=np.float64)
    if np.any(v <= 0):
        raise ValueError("v (attraction weights) must be positive")
    return v, r


def _finite_result(x: np.ndarray, what: str) -> np.ndarray:
    """``x`` if every entry is finite, else ``numpy.linalg.LinAlgError`` naming the solver result.

    The book's rule: a solver's answer (linear system, inverse, root find) is checked before it
    is used; callers commit their state only after this passes.
    """
    if not np.all(np.isfinite(x)):
        raise np.linalg.LinAlgError(
            f"{what} is not finite (a singular or ill-conditioned system); "
            "the estimator's state was left unchanged"
        )
    return x


# --------------------------------------------------------------------------------------
# The MNL model (Sec. 2)
# --------------------------------------------------------------------------------------


def _probs(X_S: np.ndarray, w: np.ndarray, v0: float) -> np.ndarray:
    """p(i | S, w) = e^{x_i^T w} / (v0 + sum_j e^{x_j^T w}), outside option v0 / (same) last (Sec. 2)."""
    u = X_S @ w
    m = max(float(u.max(initial=0.0)), math.log(v0))  # stabilise exp
    e = np.exp(u - m)
    e0 = v0 * math.exp(-m)
    den = e0 + e.sum()
    return np.append(e, e0) / den


def mnl_probs(X_S: ArrayLike, w: ArrayLike, v0: float = DEFAULTS.v0) -> np.ndarray:
    """Choice probabilities of the MNL model for one offered assortment.

    p(i | S, w) = exp(x_i^T w) / (v0 + sum_{j in S} exp(x_j^T w)), p(0 | S, w) = v0 / (same)
    (Sec. 2 of Lee & Oh, ICML 2025).

    Args:
        X_S: (k, d) float64 features of the k >= 0 offered items.
        w: (d,) float64 parameter.
        v0: positive weight of the outside (no-purchase) option.

    Returns:
        (k + 1,) float64 probabilities summing to one; the **outside option is last** (index k).

    Raises:
        ValueError: shapes disagree, non-finite values, or v0 <= 0.
        TypeError: non-numeric input.
    """
    w = check_array(w, "w", ndim=1, dtype=np.float64)
    if np.size(X_S) == 0:
        X_S = np.zeros((0, w.size))
    X_S = check_array(X_S, "X_S", shape=(None, w.size), dtype=np.float64)
    return _probs(X_S, w, check_positive(v0, "v0"))


def _loss_grad_hess(
    X_S: np.ndarray, y: np.ndarray, w: np.ndarray, v0: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """l(w) = -sum_i y_i log p_i, g = sum_i (p_i - y_i) x_i, G = sum_i p_i x_i x_i^T - (sum p x)(sum p x)^T."""
    p = _probs(X_S, w, v0)
    loss = -float(np.dot(y, np.log(np.maximum(p, 1e-300))))
    pi = p[:-1]
    grad = X_S.T @ (pi - y[:-1])
    px = X_S.T @ pi
    hess = (X_S.T * pi) @ X_S - np.outer(px, px)
    return loss, grad, hess


def mnl_loss_grad_hess(
    X_S: ArrayLike, y: ArrayLike, w: ArrayLike, v0: float = DEFAULTS.v0
) -> tuple[float, np.ndarray, np.ndarray]:
    """Per-round MNL negative log-likelihood, its gradient and its Hessian.

    l_t(w) = -sum_{i in S ∪ {0}} y_i log p(i | S, w);
    g_t(w) = sum_{i in S} (p_i - y_i) x_i;
    G_t(w) = sum_i p_i x_i x_i^T - (sum_i p_i x_i)(sum_i p_i x_i)^T (Sec. 2).

    Args:
        X_S: (k, d) float64 features of the offered items.
        y: (k + 1,) one-hot (or any probability vector: non-negative, summing to 1) feedback,
            outside option last.
        w: (d,) float64 parameter.
        v0: positive outside-option weight.

    Returns:
        ``(loss, grad, hess)``: float, (d,) and (d, d) float64 (PSD up to round-off).

    Raises:
        ValueError: shapes disagree, non-finite values, y negative or not summing to 1, or v0 <= 0.
        TypeError: non-numeric input.
    """
    w = check_array(w, "w", ndim=1, dtype=np.float64)
    X_S = check_array(X_S, "X_S", shape=(None, w.size), dtype=np.float64)
    y = _check_probability_vector(y, X_S.shape[0])
    return _loss_grad_hess(X_S, y, w, check_positive(v0, "v0"))


def _revenue(v: np.ndarray, r: np.ndarray, S: np.ndarray, v0: float) -> float:
    """R(S) = sum_{i in S} v_i r_i / (v0 + sum_{j in S} v_j)."""
    vs = v[S]
    return float(np.dot(vs, r[S]) / (v0 + vs.sum()))


def expected_revenue(
    v: ArrayLike, r: ArrayLike, S: ArrayLike, v0: float = DEFAULTS.v0
) -> float:
    """Expected revenue R(S) = sum_{i in S} v_i r_i / (v0 + sum_{j in S} v_j) (Sec. 2).

    Args:
        v: (N,) positive attraction weights v_i = exp(x_i^T w).
        r: (N,) revenues r_i (the paper has r_i in [0, 1]).
        S: 1-D integer indices of the offered items (may be empty: revenue 0).
        v0: positive outside-option weight.

    Returns:
        The expected revenue (float, revenue units).

    Raises:
        ValueError: shapes disagree, v not positive, non-finite values, bad S, or v0 <= 0.
        TypeError: non-numeric input.
    """
    v, r = _check_attractions(v, r)
    S = _check_assortment(S, v.size)
    return _revenue(v, r, S, check_positive(v0, "v0"))


def _variance(v: np.ndarray, r: np.ndarray, S: np.ndarray, v0: float) -> float:
    """sigma^2(S) = sum_{i in S} p_i r_i^2 - (sum_{i in S} p_i r_i)^2, p_i = v_i / (v0 + sum_j v_j)."""
    vs = v[S]
    p = vs / (v0 + vs.sum())
    m1 = float(np.dot(p, r[S]))
    m2 = float(np.dot(p, r[S] ** 2))
    return max(m2 - m1 * m1, 0.0)


def reward_variance(
    v: ArrayLike, r: ArrayLike, S: ArrayLike, v0: float = DEFAULTS.v0
) -> float:
    """Variance of the realised reward of offering S: sigma^2 = sum p_i r_i^2 - (sum p_i r_i)^2.

    The reward is r_i when item i is bought and 0 for the outside option; sigma_t^2 is the
    quantity in the variance-dependent regret O(d log T sqrt(sum_t sigma_t^2)) (Thm. of Sec. 4).

    Args:
        v, r, S, v0: as :func:`expected_revenue`.

    Returns:
        sigma^2 >= 0 (float, squared revenue units).

    Raises:
        ValueError / TypeError: as :func:`expected_revenue`.
    """
    v, r = _check_attractions(v, r)
    S = _check_assortment(S, v.size)
    return _variance(v, r, S, check_positive(v0, "v0"))


# --------------------------------------------------------------------------------------
# The assortment oracle
# --------------------------------------------------------------------------------------


def _oracle(
    v: np.ndarray, r: np.ndarray, K: int, v0: float
) -> tuple[np.ndarray, float]:
    """The kernel's bisection oracle on one instance: (sorted int64 S, R(S))."""
    mask, revenue = mnl_bandits.assortment_bisection(
        v[None, :], r[None, :], K, np.array([v0])
    )
    return np.flatnonzero(mask[0]).astype(np.int64), float(revenue[0])


def _lp_assortment(
    v: np.ndarray, r: np.ndarray, K: int, v0: float
) -> tuple[np.ndarray, float]:
    """The LP of Davis, Gallego & Topaloglu (2013) over choice probabilities q_0, q_1..q_N >= 0:
    max sum r_i q_i  s.t.  q_0 + sum q_i = 1,  q_i / v_i <= q_0 / v0,  sum q_i / v_i <= K q_0 / v0."""
    from scipy.optimize import linprog

    N = v.size
    c = -np.concatenate(([0.0], r))
    A_eq = np.ones((1, N + 1))
    A_ub = np.zeros((N + 1, N + 1))
    A_ub[:N, 0] = -1.0 / v0
    A_ub[np.arange(N), 1 + np.arange(N)] = 1.0 / v
    A_ub[N, 0] = -K / v0
    A_ub[N, 1:] = 1.0 / v
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=np.zeros(N + 1),
        A_eq=A_eq,
        b_eq=[1.0],
        bounds=[(0, None)] * (N + 1),
        method="highs",
    )
    _check_lp_solution(res, A_ub, A_eq)
    q = res.x[1:]
    S = np.flatnonzero(q > 1e-9 * max(1.0, q.max(initial=0.0)))
    if S.size > K:  # degenerate ties: keep the K largest
        S = np.sort(S[np.argsort(-q[S])[:K]])
    return S, float(-res.fun)


def _check_lp_solution(
    res: Any, A_ub: np.ndarray, A_eq: np.ndarray, tol: float = 1e-7
) -> None:
    """Refuse an LP answer that is not a finite, feasible point (the book's solver rule)."""
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"linprog failed: {res.message}")
    x = res.x
    if x is None or not np.all(np.isfinite(x)) or not math.isfinite(res.fun):
        raise RuntimeError("linprog returned a non-finite solution")
    scale = max(1.0, float(np.abs(A_ub).max()))
    if (
        x.min() < -tol
        or float(np.abs(A_eq @ x - 1.0).max()) > tol
        or float((A_ub @ x).max()) > tol * scale
    ):
        raise RuntimeError("linprog returned an infeasible point of the assortment LP")


def _brute_force_assortment(
    v: np.ndarray, r: np.ndarray, K: int, v0: float
) -> tuple[np.ndarray, float]:
    """max_{|S| <= K} R(S) by enumerating every subset of size 1..K."""
    best, best_rev = np.zeros(0, dtype=np.int64), 0.0
    for k in range(1, K + 1):
        for S in itertools.combinations(range(v.size), k):
            S = np.array(S, dtype=np.int64)
            rev = _revenue(v, r, S, v0)
            if rev > best_rev + 1e-15:
                best, best_rev = S, rev
    return best, best_rev


def optimal_assortment(
    v: ArrayLike,
    r: ArrayLike,
    K: int,
    v0: float = DEFAULTS.v0,
    method: str = "bisection",
) -> tuple[np.ndarray, float]:
    """Revenue-maximising assortment of at most K items under the MNL model.

    Solves max_{|S| <= K} sum_{i in S} v_i r_i / (v0 + sum_{j in S} v_j) (step "optimistic
    assortment" of OFU-MNL++/OFU-MNL+, with v_i = exp(alpha_i) the optimistic weights).

    - ``"bisection"``: R(S) >= z iff sum_{i in S} v_i (r_i - z) >= v0 z; bisection on z with a
      top-K selection of the positive v_i (r_i - z), then an exact Dinkelbach polish
      (Rusmevichientong, Shen & Shmoys 2010): the kernel
      :func:`icml25.kernels.mnl_bandits.assortment_bisection` with one replicate.
    - ``"lp"``: the linear program of Davis, Gallego & Topaloglu (2013), HiGHS via
      ``scipy.optimize.linprog``; the cross-check (its answer is checked for feasibility).
    - ``"brute"``: enumeration of all subsets (only for N <= 16).

    Args:
        v: (N,) positive attraction weights.
        r: (N,) revenues (non-negative in the paper; negative revenues are never offered).
        K: maximum assortment size, 1 <= K <= N.
        v0: positive outside-option weight.
        method: ``"bisection"`` | ``"lp"`` | ``"brute"``.

    Returns:
        ``(S, revenue)``: sorted int64 indices (possibly empty when every r_i <= 0) and R(S).

    Raises:
        ValueError: K < 1 or K > N, v not positive, non-finite values, v0 <= 0, unknown method,
            or N > 16 with ``method="brute"``.
        TypeError: K not an integer; non-numeric input.
        RuntimeError: the LP solver failed or returned an infeasible point.
    """
    v, r = _check_attractions(v, r)
    K = check_int(K, "K", low=1, high=v.size)
    v0 = check_positive(v0, "v0")
    method = check_choice(method, "method", ("bisection", "lp", "brute"))
    if method == "bisection":
        return _oracle(v, r, K, v0)
    if method == "lp":
        return _lp_assortment(v, r, K, v0)
    if v.size > 16:
        raise ValueError(f"method='brute' enumerates 2^N subsets; N={v.size} > 16")
    return _brute_force_assortment(v, r, K, v0)
