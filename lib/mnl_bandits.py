"""Multinomial logit (MNL) bandits with improved online confidence bounds.

Chapter 11: Lee & Oh, "Improved Online Confidence Bounds for Multinomial Logistic Bandits"
(ICML 2025, arXiv 2502.10020): OFU-MNL++ (constant time per round, online mirror descent) and
OFU-M²NL (maximum-likelihood based), against OFU-MNL+ (Lee & Oh, NeurIPS 2024), UCB-MNL
(Oh & Iyengar 2021) and TS-MNL (Oh & Iyengar 2019).

Conventions used throughout:

- Items of one round: ``X`` of shape ``(N, d)`` (float64), revenues ``r`` of shape ``(N,)``.
- An assortment ``S`` is a 1-D integer array of distinct item indices, ``len(S) <= K``.
- Choice probabilities and feedback vectors put the **outside option last**: for an offered
  ``X_S`` of shape ``(k, d)``, ``mnl_probs`` returns ``(k + 1,)`` with index ``k`` the
  no-purchase option, and the feedback ``y`` is a one-hot ``(k + 1,)`` vector in the same order.
- Attraction weights ``v_i = exp(x_i^T w)``; the outside option has weight ``v0``.

What is verified and what is reconstructed (the paper's full text was not reachable): the
MNL model, losses, the OFU-MNL+ update and radius (from the authors' code ``oh-lab/OFU-MNL-plus``)
are verified; the step size, regulariser and radius of OFU-MNL++ and the confidence set of
OFU-M²NL are **reconstructed** from the stated orders O(sqrt(d log t) + B) and
O(d log(BT)) and are marked so in the docstrings.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "mnl_probs",
    "mnl_loss_grad_hess",
    "expected_revenue",
    "reward_variance",
    "optimal_assortment",
    "project_to_ball",
    "OMDEstimator",
    "OFUMNLPlus",
    "OFUMNLPlusPlus",
    "OFUM2NL",
    "UCBMNL",
    "TSMNL",
    "MNLBanditEnv",
    "run_bandit",
    "make_algorithm",
    "compare_algorithms",
    "ofu_mnl_plus_beta",
    "ofu_mnl_pp_beta",
    "m2nl_beta",
    "run_ofu_mnl_pp_batched",
    "ALGORITHMS",
]

ALGORITHMS: tuple[str, ...] = ("OFU-MNL++", "OFU-M2NL", "OFU-MNL+", "UCB-MNL", "TS-MNL")


# --------------------------------------------------------------------------------------------
# Validation helpers (public boundary only)
# --------------------------------------------------------------------------------------------


def _as_matrix(name: str, a: Any, d: int | None = None) -> np.ndarray:
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array, got {type(a).__name__}") from err
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (k, d), got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"{name} must have {d} columns (the dimension d), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return arr


def _as_vector(name: str, a: Any, n: int | None = None) -> np.ndarray:
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array, got {type(a).__name__}") from err
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have length {n}, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return arr


def _check_v0(v0: Any) -> float:
    if isinstance(v0, bool) or not isinstance(v0, (int, float, np.integer, np.floating)):
        raise TypeError(f"v0 must be a positive number, got {type(v0).__name__}")
    if not math.isfinite(float(v0)) or float(v0) <= 0:
        raise ValueError(f"v0 (outside-option weight) must be positive and finite, got {v0!r}")
    return float(v0)


def _check_int(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def _check_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__}")
    if not math.isfinite(float(value)) or float(value) <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return float(value)


def _check_delta(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"delta must be a number in (0, 1), got {type(value).__name__}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"delta (confidence level) must be in (0, 1), got {value!r}")
    return float(value)


def _check_rng(value: Any, *, allow_seed: bool, allow_none: bool = True) -> np.random.Generator | None:
    """Return a ``numpy.random.Generator`` for ``rng`` (an int seed >= 0 only if ``allow_seed``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, np.random.Generator):
        return value
    if allow_seed and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"rng as an integer seed must be >= 0, got {value}")
        return np.random.default_rng(int(value))
    expected = "a numpy.random.Generator" + (" or an int seed >= 0" if allow_seed else "") \
        + (" or None" if allow_none else "")
    raise TypeError(f"rng must be {expected}, got {type(value).__name__}")


def _check_assortment(S: Any, N: int, K: int | None = None) -> np.ndarray:
    S = np.asarray(S)
    if S.ndim != 1 or (S.size and not np.issubdtype(S.dtype, np.integer)):
        raise ValueError(f"S must be a 1-D array of integer item indices, got {S!r}")
    S = S.astype(np.int64)
    if S.size and (S.min() < 0 or S.max() >= N):
        raise ValueError(f"S must index items 0..{N - 1}, got {S.tolist()}")
    if np.unique(S).size != S.size:
        raise ValueError(f"S must not repeat items, got {S.tolist()}")
    if K is not None and S.size > K:
        raise ValueError(f"S has {S.size} items, more than K={K}")
    return S


# --------------------------------------------------------------------------------------------
# The MNL model (Sec. 2 of the paper)
# --------------------------------------------------------------------------------------------


def _probs(X_S: np.ndarray, w: np.ndarray, v0: float) -> np.ndarray:
    u = X_S @ w
    m = max(float(u.max(initial=0.0)), math.log(v0))  # stabilise exp
    e = np.exp(u - m)
    e0 = v0 * math.exp(-m)
    den = e0 + e.sum()
    return np.append(e, e0) / den


def mnl_probs(X_S: np.ndarray, w: np.ndarray, v0: float = 1.0) -> np.ndarray:
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
    w = _as_vector("w", w)
    X_S = _as_matrix("X_S", np.reshape(X_S, (-1, w.size)) if np.size(X_S) == 0 else X_S, w.size)
    v0 = _check_v0(v0)
    return _probs(X_S, w, v0)


def _loss_grad_hess(X_S: np.ndarray, y: np.ndarray, w: np.ndarray, v0: float):
    p = _probs(X_S, w, v0)
    loss = -float(np.dot(y, np.log(np.maximum(p, 1e-300))))
    pi = p[:-1]
    grad = X_S.T @ (pi - y[:-1])
    px = X_S.T @ pi
    hess = (X_S.T * pi) @ X_S - np.outer(px, px)
    return loss, grad, hess


def mnl_loss_grad_hess(X_S: np.ndarray, y: np.ndarray, w: np.ndarray, v0: float = 1.0):
    """Per-round MNL negative log-likelihood, its gradient and its Hessian.

    l_t(w) = -sum_{i in S ∪ {0}} y_i log p(i | S, w);
    g_t(w) = sum_{i in S} (p_i - y_i) x_i;
    G_t(w) = sum_i p_i x_i x_i^T - (sum_i p_i x_i)(sum_i p_i x_i)^T (Sec. 2).

    Args:
        X_S: (k, d) float64 features of the offered items.
        y: (k + 1,) one-hot (or any probability vector) feedback, outside option last.
        w: (d,) float64 parameter.
        v0: positive outside-option weight.

    Returns:
        ``(loss, grad, hess)``: float, (d,) and (d, d) float64 (PSD up to round-off).

    Raises:
        ValueError: shapes disagree, non-finite values, y negative, or v0 <= 0.
    """
    w = _as_vector("w", w)
    X_S = _as_matrix("X_S", X_S, w.size)
    y = _as_vector("y", y, X_S.shape[0] + 1)
    if np.any(y < 0):
        raise ValueError("y must be non-negative (a one-hot choice vector, outside option last)")
    return _loss_grad_hess(X_S, y, w, _check_v0(v0))


def _revenue(v: np.ndarray, r: np.ndarray, S: np.ndarray, v0: float) -> float:
    vs = v[S]
    return float(np.dot(vs, r[S]) / (v0 + vs.sum()))


def expected_revenue(v: np.ndarray, r: np.ndarray, S: np.ndarray, v0: float = 1.0) -> float:
    """Expected revenue R(S) = sum_{i in S} v_i r_i / (v0 + sum_{j in S} v_j).

    Args:
        v: (N,) positive attraction weights v_i = exp(x_i^T w).
        r: (N,) revenues r_i (the paper has r_i in [0, 1]).
        S: 1-D integer indices of the offered items (may be empty: revenue 0).
        v0: positive outside-option weight.

    Returns:
        The expected revenue (float).

    Raises:
        ValueError: shapes disagree, v not positive, non-finite values, bad S, or v0 <= 0.
    """
    v = _as_vector("v", v)
    r = _as_vector("r", r, v.size)
    if np.any(v <= 0):
        raise ValueError("v (attraction weights) must be positive")
    S = _check_assortment(S, v.size)
    return _revenue(v, r, S, _check_v0(v0))


def _variance(v: np.ndarray, r: np.ndarray, S: np.ndarray, v0: float) -> float:
    vs = v[S]
    p = vs / (v0 + vs.sum())
    m1 = float(np.dot(p, r[S]))
    m2 = float(np.dot(p, r[S] ** 2))
    return max(m2 - m1 * m1, 0.0)


def reward_variance(v: np.ndarray, r: np.ndarray, S: np.ndarray, v0: float = 1.0) -> float:
    """Variance of the realised reward of offering S: sigma^2 = sum p_i r_i^2 - (sum p_i r_i)^2.

    The reward is r_i when item i is bought and 0 for the outside option; sigma_t^2 is the
    quantity in the variance-dependent regret O(d log T sqrt(sum_t sigma_t^2)) (Thm. of Sec. 4).

    Args, Raises: as :func:`expected_revenue`.

    Returns:
        sigma^2 >= 0 (float).
    """
    v = _as_vector("v", v)
    r = _as_vector("r", r, v.size)
    if np.any(v <= 0):
        raise ValueError("v (attraction weights) must be positive")
    S = _check_assortment(S, v.size)
    return _variance(v, r, S, _check_v0(v0))


# --------------------------------------------------------------------------------------------
# The assortment oracle
# --------------------------------------------------------------------------------------------


def _top_k_positive(score: np.ndarray, K: int) -> np.ndarray:
    """Indices of the (at most) K largest strictly positive entries; ties -> lower index."""
    pos = np.flatnonzero(score > 0)
    if pos.size <= K:
        return pos
    order = np.argsort(-score[pos], kind="stable")[:K]
    return np.sort(pos[order])


def _bisection_assortment(v: np.ndarray, r: np.ndarray, K: int, v0: float, tol: float = 1e-4,
                          max_polish: int = 50) -> tuple[np.ndarray, float]:
    if np.all(r == r[0]):  # uniform rewards: revenue r*V/(v0+V) is increasing in V -> top-K
        if r[0] <= 0:
            return np.zeros(0, dtype=np.int64), 0.0
        S = np.sort(np.argsort(-v, kind="stable")[:K])
        return S, _revenue(v, r, S, v0)
    # R(S) >= z  <=>  sum_{i in S} v_i (r_i - z) >= v0 z, so z* is the root of
    # phi(z) = max_{|S|<=K} sum_{i in S} v_i (r_i - z) - v0 z (decreasing in z).
    lo, hi = 0.0, max(float(r.max()), 0.0)
    best = _top_k_positive(v * r, K)
    best_rev = _revenue(v, r, best, v0) if best.size else 0.0
    lo = best_rev
    while hi - lo > tol * max(1.0, hi):
        z = 0.5 * (lo + hi)
        S = _top_k_positive(v * (r - z), K)
        if S.size and float(np.dot(v[S], r[S] - z)) >= v0 * z:
            rev = _revenue(v, r, S, v0)  # >= z: an achievable lower bound
            if rev > best_rev:
                best, best_rev = S, rev
            lo = max(z, rev)
        else:
            hi = z
    # Dinkelbach polish: z <- R(S(z)) increases strictly until S(z) is optimal (exact).
    for _ in range(max_polish):
        S = _top_k_positive(v * (r - best_rev), K)
        if S.size == 0:
            break
        rev = _revenue(v, r, S, v0)
        if rev <= best_rev * (1 + 1e-15) + 1e-300:
            break
        best, best_rev = S, rev
    return best, best_rev


def _lp_assortment(v: np.ndarray, r: np.ndarray, K: int, v0: float) -> tuple[np.ndarray, float]:
    from scipy.optimize import linprog

    # Davis, Gallego & Topaloglu (2013): choice-probability variables q_0, q_1..q_N >= 0,
    # max sum r_i q_i  s.t.  q_0 + sum q_i = 1,  q_i / v_i <= q_0 / v0,  sum q_i / v_i <= K q_0 / v0.
    N = v.size
    c = -np.concatenate(([0.0], r))
    A_eq = np.ones((1, N + 1))
    A_ub = np.zeros((N + 1, N + 1))
    A_ub[:N, 0] = -1.0 / v0
    A_ub[np.arange(N), 1 + np.arange(N)] = 1.0 / v
    A_ub[N, 0] = -K / v0
    A_ub[N, 1:] = 1.0 / v
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(N + 1), A_eq=A_eq, b_eq=[1.0],
                  bounds=[(0, None)] * (N + 1), method="highs")
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"linprog failed: {res.message}")
    q = res.x[1:]
    S = np.flatnonzero(q > 1e-9 * max(1.0, q.max(initial=0.0)))
    if S.size > K:  # degenerate ties: keep the K largest
        S = np.sort(S[np.argsort(-q[S])[:K]])
    return S, float(-res.fun)


def _brute_force_assortment(v: np.ndarray, r: np.ndarray, K: int, v0: float) -> tuple[np.ndarray, float]:
    best, best_rev = np.zeros(0, dtype=np.int64), 0.0
    for k in range(1, K + 1):
        for S in itertools.combinations(range(v.size), k):
            S = np.array(S, dtype=np.int64)
            rev = _revenue(v, r, S, v0)
            if rev > best_rev + 1e-15:
                best, best_rev = S, rev
    return best, best_rev


def optimal_assortment(v: np.ndarray, r: np.ndarray, K: int, v0: float = 1.0,
                       method: str = "bisection") -> tuple[np.ndarray, float]:
    """Revenue-maximising assortment of at most K items under the MNL model.

    Solves max_{|S| <= K} sum_{i in S} v_i r_i / (v0 + sum_{j in S} v_j) (step "optimistic
    assortment" of OFU-MNL++/OFU-MNL+, with v_i = exp(alpha_i) the optimistic weights).

    - ``"bisection"``: R(S) >= z iff sum_{i in S} v_i (r_i - z) >= v0 z; bisection on z with a
      top-K selection of the positive v_i (r_i - z), then an exact Dinkelbach polish
      (Rusmevichientong, Shen & Shmoys 2010). Uniform rewards short-cut to top-K by v.
    - ``"lp"``: the linear program of Davis, Gallego & Topaloglu (2013), HiGHS via
      ``scipy.optimize.linprog``; the cross-check.
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
        TypeError: K not an integer.
    """
    v = _as_vector("v", v)
    r = _as_vector("r", r, v.size)
    if np.any(v <= 0):
        raise ValueError("v (attraction weights) must be positive")
    K = _check_int("K", K)
    if K > v.size:
        raise ValueError(f"K must be <= N={v.size}, got K={K}")
    v0 = _check_v0(v0)
    if method == "bisection":
        return _bisection_assortment(v, r, K, v0)
    if method == "lp":
        return _lp_assortment(v, r, K, v0)
    if method == "brute":
        if v.size > 16:
            raise ValueError(f"method='brute' enumerates 2^N subsets; N={v.size} > 16")
        return _brute_force_assortment(v, r, K, v0)
    raise ValueError(f"method must be 'bisection', 'lp' or 'brute', got {method!r}")


# --------------------------------------------------------------------------------------------
# Online mirror descent estimator (Lee & Oh 2024; OFU-MNL++ uses the same update)
# --------------------------------------------------------------------------------------------


def project_to_ball(w: np.ndarray, M: np.ndarray, B: float, xp=np, iters: int = 60) -> np.ndarray:
    """argmin_{||u||_2 <= B} ||u - w||_M^2, batched over leading axes.

    KKT: u(mu) = (M + mu I)^{-1} M w with mu >= 0 and ||u(mu)|| = B when ||w|| > B. With
    M = Q diag(lam) Q^T, u(mu) = Q (lam c / (lam + mu)), c = Q^T w, whose norm decreases in mu;
    mu is found by bisection on a log scale (``iters`` halvings).

    Args:
        w: (..., d) points to project.
        M: (..., d, d) symmetric positive definite metrics.
        B: radius > 0.
        xp: ``numpy`` or ``cupy``.
        iters: bisection steps >= 1.

    Returns:
        (..., d) projections (points already inside the ball are returned unchanged).

    Raises:
        ValueError / TypeError: B not a positive finite number, iters not a positive integer.
    """
    B = _check_positive("B", B)
    iters = _check_int("iters", iters)
    norms = xp.linalg.norm(w, axis=-1)
    outside = norms > B
    if not bool(xp.any(outside)):
        return w
    lam, Q = xp.linalg.eigh(M)
    lam = xp.maximum(lam, 1e-12)
    c = xp.einsum("...ji,...j->...i", Q, w)

    def norm_at(mu):
        return xp.linalg.norm(lam * c / (lam + mu[..., None]), axis=-1)

    lo = xp.zeros(norms.shape)
    hi = xp.maximum(lam.max(axis=-1) * (norms / B), 1e-12)  # ||u(hi)|| <= lam_max |c| / hi <= B
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        big = norm_at(mid) > B
        lo = xp.where(big, mid, lo)
        hi = xp.where(big, hi, mid)
    u = xp.einsum("...ij,...j->...i", Q, lam * c / (lam + hi[..., None]))
    return xp.where(outside[..., None], u, w)


class OMDEstimator:
    """Online mirror descent (online Newton step) MNL estimator, O(K d^2 + d^3) per round.

    Update (Lee & Oh 2024, Eq. (5); reused by OFU-MNL++):
        H~_t = H_t + eta G_t(w_t),
        w_{t+1} = argmin_{||w|| <= B} <g_t(w_t), w> + 1/(2 eta) ||w - w_t||^2_{H~_t}
                = Proj^{H~_t}_{B}(w_t - eta H~_t^{-1} g_t(w_t)),
        H_{t+1} = H_t + G_t(w_{t+1}),  H_1 = lam I.
    Unlike the authors' OFU-MNL+ code this takes the closed-form step (not twice it) and keeps
    the projection. H and H^{-1} are kept explicitly (d is small; no Sherman–Morrison).

    Args:
        d: dimension.
        eta: step size > 0.
        lam: regulariser lam > 0 (H_1 = lam I).
        B: norm bound on w* (> 0); ``None`` disables the projection.
        v0: outside-option weight.

    Raises:
        ValueError / TypeError: non-positive or non-numeric arguments.
    """

    def __init__(self, d: int, eta: float, lam: float, B: float | None = 1.0, v0: float = 1.0):
        self.d = _check_int("d", d)
        self.eta = _check_positive("eta", eta)
        self.lam = _check_positive("lam", lam)
        self.B = None if B is None else _check_positive("B", B)
        self.v0 = _check_v0(v0)
        self.w = np.zeros(self.d)
        self.H = self.lam * np.eye(self.d)
        self.H_inv = np.eye(self.d) / self.lam

    def update(self, X_S: np.ndarray, y: np.ndarray) -> np.ndarray:
        """One OMD step on the round's (X_S (k, d), y (k+1,) one-hot, outside last); returns w."""
        if len(X_S) == 0:
            return self.w
        _, g, G = _loss_grad_hess(X_S, y, self.w, self.v0)
        H_tilde = self.H + self.eta * G
        w_new = self.w - self.eta * np.linalg.solve(H_tilde, g)
        if self.B is not None:
            w_new = project_to_ball(w_new, H_tilde, self.B)
        self.w = w_new
        _, _, G_new = _loss_grad_hess(X_S, y, self.w, self.v0)  # G_t at w_{t+1}
        self.H = self.H + G_new
        self.H = 0.5 * (self.H + self.H.T)
        self.H_inv = np.linalg.inv(self.H)
        return self.w


# --------------------------------------------------------------------------------------------
# Confidence radii
# --------------------------------------------------------------------------------------------


def ofu_mnl_plus_constants(K: int, d: int, B: float = 1.0) -> tuple[float, float]:
    """(eta, lam) of OFU-MNL+ (Lee & Oh 2024; authors' code): eta = (B+1) + log(K+1)/2,
    lam = 84 sqrt(2) eta d.

    Raises:
        ValueError / TypeError: K, d not integers >= 1; B not positive."""
    K, d, B = _check_int("K", K), _check_int("d", d), _check_positive("B", B)
    eta = (B + 1.0) + 0.5 * math.log(K + 1)
    return eta, 84.0 * math.sqrt(2.0) * eta * d


def ofu_mnl_plus_beta(t: int, K: int, d: int, B: float = 1.0) -> float:
    """Confidence radius beta_t of OFU-MNL+ (Lee & Oh 2024, Thm. 1; constants of the authors'
    code, which fixes B = 1): O(B sqrt(d) log t log K).

    beta_t = sqrt(2 eta [(3 log(1+(K+1)t) + 3)(17/16 lam + 2 sqrt(lam) log(2 sqrt(1+2t))
             + 16 log^2(2 sqrt(1+2t))) + 2 + 7 sqrt(6)/6 eta d log(1 + (t+1)/(2 lam))] + 4 lam).

    Raises:
        ValueError / TypeError: t, K, d not integers >= 1; B not positive.
    """
    t = _check_int("t", t)
    eta, lam = ofu_mnl_plus_constants(K, d, B)
    lg = math.log(2.0 * math.sqrt(1.0 + 2.0 * t))
    inner = ((3.0 * math.log(1.0 + (K + 1) * t) + 3.0)
             * (17.0 / 16.0 * lam + 2.0 * math.sqrt(lam) * lg + 16.0 * lg * lg)
             + 2.0 + 7.0 * math.sqrt(6.0) / 6.0 * eta * d * math.log(1.0 + (t + 1) / (2.0 * lam)))
    return math.sqrt(2.0 * eta * inner + 4.0 * lam * B * B)


def ofu_mnl_pp_constants(B: float = 1.0) -> tuple[float, float]:
    """(eta, lam) of OFU-MNL++ — **reconstructed**: eta = 1 + B (the K-dependent log(K+1)/2 of
    OFU-MNL+ removed by the tighter, K-free self-concordance), lam = 2 eta (no d factor, so
    that the regulariser contributes O(B) to the radius rather than O(B sqrt(d))).

    Raises:
        ValueError / TypeError: B not positive."""
    B = _check_positive("B", B)
    eta = 1.0 + B
    return eta, 2.0 * eta


def ofu_mnl_pp_beta(t: int, d: int, B: float = 1.0, delta: float = 0.05) -> float:
    """Confidence radius of OFU-MNL++ — **reconstructed** to the paper's order O(sqrt(d log t) + B):

    beta_t = sqrt(2 eta (d log(1 + t / (d lam)) + 2 log(1/delta))) + sqrt(lam) B,

    with (eta, lam) from :func:`ofu_mnl_pp_constants`; no K anywhere.

    Raises:
        ValueError / TypeError: t (round) or d not integers >= 1; B not positive; delta not in (0, 1).
    """
    t, d, delta = _check_int("t", t), _check_int("d", d), _check_delta(delta)
    eta, lam = ofu_mnl_pp_constants(B)
    return math.sqrt(2.0 * eta * (d * math.log(1.0 + t / (d * lam)) + 2.0 * math.log(1.0 / delta))) \
        + math.sqrt(lam) * B


def m2nl_beta(t: int, d: int, B: float = 1.0, delta: float = 0.05) -> float:
    """Ellipsoidal radius of OFU-M²NL — **reconstructed**: the likelihood-ratio set
    {w : L_t(w) - L_t(w_hat) <= gamma_t} with gamma_t = log(1/delta) + d log(max(e, 2 e B t / d))
    (the form of Lee, Yun & Jun 2024 for GLMs: logarithmic in B), relaxed to the ellipsoid
    ||w - w_hat||_{H_t(w_hat)} <= sqrt(2 gamma_t) (second-order expansion).

    Raises:
        ValueError / TypeError: t (round) or d not integers >= 1; B not positive; delta not in (0, 1).
    """
    t, d = _check_int("t", t), _check_int("d", d)
    B, delta = _check_positive("B", B), _check_delta(delta)
    gamma = math.log(1.0 / delta) + d * math.log(max(math.e, 2.0 * math.e * B * max(t, 1) / d))
    return math.sqrt(2.0 * gamma)


# --------------------------------------------------------------------------------------------
# Algorithms: select(X, r) -> S, update(S, y)
# --------------------------------------------------------------------------------------------


def _check_round(X: Any, r: Any, N: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    X = _as_matrix("X (contexts)", X, d)
    if X.shape[0] != N:
        raise ValueError(f"X (contexts) must have shape ({N}, {d}), got {X.shape}")
    r = np.ones(N) if r is None else _as_vector("r", r, N)
    return X, r


class _Base:
    """Shared bookkeeping: N, K, d, v0, B and the last offered features."""

    name = "base"

    def __init__(self, N: int, K: int, d: int, B: float = 1.0, v0: float = 1.0):
        self.N = _check_int("N", N)
        self.K = _check_int("K", K)
        if self.K > self.N:
            raise ValueError(f"K must be <= N, got K={K}, N={N}")
        self.d = _check_int("d", d)
        self.B = _check_positive("B", B)
        self.v0 = _check_v0(v0)
        self.t = 1
        self._X = None

    def _assort(self, alpha: np.ndarray, r: np.ndarray) -> np.ndarray:
        m = alpha.max()
        v = np.exp(alpha - m)  # common scaling: v0 scales too
        return _bisection_assortment(v, r, self.K, self.v0 * math.exp(-m))[0]

    def _check_feedback(self, S: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        if self._X is None:
            raise ValueError("update() called before select()")
        S = _check_assortment(S, self.N, self.K)
        y = _as_vector("y", y, S.size + 1)
        return S, y


class _OMDBandit(_Base):
    def __init__(self, N, K, d, B, v0, eta, lam, beta, beta_scale):
        super().__init__(N, K, d, B, v0)
        self.beta_fixed = None if beta is None else _check_positive("beta", beta)
        self.beta_scale = _check_positive("beta_scale", beta_scale)
        self.est = OMDEstimator(self.d, eta, lam, self.B, self.v0)

    def beta(self, t: int) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def select(self, X: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
        """Optimistic assortment: alpha_i = x_i^T w_t + beta_t ||x_i||_{H_t^{-1}} (Alg. 1)."""
        X, r = _check_round(X, r, self.N, self.d)
        beta = self.beta_scale * (self.beta_fixed if self.beta_fixed is not None else self.beta(self.t))
        width = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", X, self.est.H_inv, X), 0.0))
        S = self._assort(X @ self.est.w + beta * width, r)
        self._X = X
        return S

    def update(self, S: np.ndarray, y: np.ndarray) -> None:
        """OMD step on the feedback y ((|S|+1,) one-hot, outside option last)."""
        S, y = self._check_feedback(S, y)
        self.est.update(self._X[S], y)
        self.t += 1


class OFUMNLPlus(_OMDBandit):
    """OFU-MNL+ (Lee & Oh, NeurIPS 2024): OMD estimator + radius O(B sqrt(d) log t log K).

    eta = (B+1) + log(K+1)/2, lam = 84 sqrt(2) eta d, beta_t from :func:`ofu_mnl_plus_beta`
    recomputed every round (the authors' code computes it once at t = 1). Theory radius, no
    1/10 rescaling (the authors' non-uniform script uses one); ``beta_scale`` multiplies it.

    Args:
        N, K, d: items, maximum assortment size (1 <= K <= N), dimension.
        B: norm bound on w*; v0: outside-option weight; beta: fixed radius overriding beta_t.
        beta_scale: multiplier of the radius (1 = theory).
    """

    name = "OFU-MNL+"

    def __init__(self, N: int, K: int, d: int, B: float = 1.0, v0: float = 1.0,
                 beta: float | None = None, beta_scale: float = 1.0):
        eta, lam = ofu_mnl_plus_constants(_check_int("K", K), _check_int("d", d), _check_positive("B", B))
        super().__init__(N, K, d, B, v0, eta, lam, beta, beta_scale)

    def beta(self, t: int) -> float:
        return ofu_mnl_plus_beta(t, self.K, self.d, self.B)


class OFUMNLPlusPlus(_OMDBandit):
    """OFU-MNL++ (Lee & Oh, ICML 2025, Alg. 1): same OMD update, improved radius.

    The radius is O(sqrt(d log t) + B) with no K (Thm. 1 of the paper); the constants here
    (eta = 1 + B, lam = 2 eta, beta_t of :func:`ofu_mnl_pp_beta`) are **reconstructed**.
    Per-round cost O(N d^2 + d^3 + oracle), constant in t.

    Args:
        N, K, d, B, v0, beta, beta_scale: as :class:`OFUMNLPlus`; delta: confidence level in (0, 1).

    Raises:
        ValueError / TypeError: bad sizes (K > N, ...), non-positive B/v0/beta_scale, delta outside (0, 1).
    """

    name = "OFU-MNL++"

    def __init__(self, N: int, K: int, d: int, B: float = 1.0, v0: float = 1.0,
                 beta: float | None = None, beta_scale: float = 1.0, delta: float = 0.05):
        eta, lam = ofu_mnl_pp_constants(_check_positive("B", B))
        self.delta = _check_delta(delta)
        super().__init__(N, K, d, B, v0, eta, lam, beta, beta_scale)

    def beta(self, t: int) -> float:
        return ofu_mnl_pp_beta(t, self.d, self.B, self.delta)


class _History:
    """Padded history of offered features (n, K, d), masks (n, K) and item choices (n, K)."""

    def __init__(self, K: int, d: int, capacity: int = 256):
        self.K, self.d, self.n = K, d, 0
        self.X = np.zeros((capacity, K, d))
        self.m = np.zeros((capacity, K))
        self.y = np.zeros((capacity, K))

    def add(self, X_S: np.ndarray, y: np.ndarray) -> None:
        if self.n == self.X.shape[0]:
            for name in ("X", "m", "y"):
                a = getattr(self, name)
                setattr(self, name, np.concatenate([a, np.zeros_like(a)]))
        k = X_S.shape[0]
        self.X[self.n, :k] = X_S
        self.X[self.n, k:] = 0.0
        self.m[self.n] = 0.0
        self.m[self.n, :k] = 1.0
        self.y[self.n] = 0.0
        self.y[self.n, :k] = y[:k]
        self.n += 1

    def arrays(self):
        n = self.n
        return self.X[:n], self.m[:n], self.y[:n]


def _batch_nll(w: np.ndarray, X: np.ndarray, m: np.ndarray, y: np.ndarray, v0: float, lam: float,
               hess: bool = False):
    """Regularised negative log-likelihood sum_s l_s(w) + lam/2 ||w||^2 (+ grad, Hessian)."""
    u = X @ w  # (n, K)
    top = np.maximum(np.where(m > 0, u, -np.inf).max(axis=1), math.log(v0))
    e = np.exp(u - top[:, None]) * m
    den = v0 * np.exp(-top) + e.sum(axis=1)
    p = e / den[:, None]
    loss = float(np.sum(np.log(den) + top) - np.sum(y * u) - np.sum(1.0 - y.sum(axis=1)) * math.log(v0))
    loss += 0.5 * lam * float(w @ w)
    grad = np.einsum("sk,skd->d", p - y, X) + lam * w
    if not hess:
        return loss, grad
    px = np.einsum("sk,skd->sd", p, X)
    flat = X.reshape(-1, w.size)
    H = (flat * p.reshape(-1, 1)).T @ flat - px.T @ px + lam * np.eye(w.size)
    return loss, grad, H


class OFUM2NL(_Base):
    """OFU-M²NL (Lee & Oh, ICML 2025): MLE-based optimism, anytime poly(B)-free regret.

    Each refit computes the (lightly ridge-regularised, ``lam``) MLE w_hat_t over the whole
    history by warm-started Newton steps and the Hessian H_t(w_hat_t) = lam I + sum_s G_s(w_hat_t):
    O(t K d^2) work, so the per-round time grows with t. Optimism (**reconstructed**
    confidence set, see :func:`m2nl_beta`):

    - ``"ellipsoid"``: alpha_i = x_i^T w_hat + beta_t ||x_i||_{H_t^{-1}};
    - ``"exact"``: alpha_i = max { x_i^T w : L_t(w) - L_t(w_hat) <= gamma_t } by SLSQP per item
      (slow: for small N only).

    Args:
        N, K, d, B, v0: as :class:`OFUMNLPlus`.
        refit_every: refit the MLE every this many rounds (>= 1).
        optimism: ``"ellipsoid"`` or ``"exact"``.
        lam: ridge > 0 for numerical stability in early rounds (not in the paper).
        delta: confidence level in (0, 1); beta_scale: radius multiplier.

    Raises:
        ValueError / TypeError: bad sizes, non-positive B/v0/lam/beta_scale, delta outside (0, 1),
            unknown optimism.
    """

    name = "OFU-M2NL"

    def __init__(self, N: int, K: int, d: int, B: float = 1.0, v0: float = 1.0, refit_every: int = 1,
                 optimism: str = "ellipsoid", lam: float = 1.0, delta: float = 0.05,
                 beta_scale: float = 1.0, newton_steps: int = 2):
        super().__init__(N, K, d, B, v0)
        self.refit_every = _check_int("refit_every", refit_every)
        if optimism not in ("ellipsoid", "exact"):
            raise ValueError(f"optimism must be 'ellipsoid' or 'exact', got {optimism!r}")
        self.optimism = optimism
        self.lam = _check_positive("lam", lam)
        self.delta = _check_delta(delta)
        self.beta_scale = _check_positive("beta_scale", beta_scale)
        self.newton_steps = _check_int("newton_steps", newton_steps)
        self.hist = _History(self.K, self.d)
        self.w = np.zeros(self.d)
        self.H = self.lam * np.eye(self.d)
        self.H_inv = np.eye(self.d) / self.lam

    def _refit(self) -> None:
        X, m, y = self.hist.arrays()
        w = self.w
        loss, g, H = _batch_nll(w, X, m, y, self.v0, self.lam, hess=True)
        for _ in range(self.newton_steps):
            step = np.linalg.solve(H, g)
            a = 1.0
            while a > 1e-4:  # backtracking line search (Armijo)
                w_new = w - a * step
                loss_new, _ = _batch_nll(w_new, X, m, y, self.v0, self.lam)
                if loss_new <= loss - 0.25 * a * float(g @ step):
                    break
                a *= 0.5
            else:
                break
            w = w_new
            loss, g, H = _batch_nll(w, X, m, y, self.v0, self.lam, hess=True)
            if float(np.linalg.norm(a * step)) < 1e-9:
                break
        self.w, self.H = w, 0.5 * (H + H.T)
        self.H_inv = np.linalg.inv(self.H)

    def _exact_alpha(self, X: np.ndarray, beta: float) -> np.ndarray:
        from scipy.optimize import minimize

        Xh, m, y = self.hist.arrays()
        gamma = 0.5 * beta * beta
        base, _ = _batch_nll(self.w, Xh, m, y, self.v0, self.lam)
        cons = {"type": "ineq",
                "fun": lambda w: base + gamma - _batch_nll(w, Xh, m, y, self.v0, self.lam)[0],
                "jac": lambda w: -_batch_nll(w, Xh, m, y, self.v0, self.lam)[1]}
        alpha = np.empty(X.shape[0])
        for i, x in enumerate(X):
            nx = math.sqrt(max(float(x @ self.H_inv @ x), 0.0))
            w0 = self.w + (beta * 0.5 * (self.H_inv @ x) / nx if nx > 0 else 0.0)
            res = minimize(lambda w: -float(x @ w), w0, jac=lambda w: -x, constraints=[cons],
                           method="SLSQP", options={"maxiter": 100, "ftol": 1e-10})
            ok = cons["fun"](res.x) >= -1e-6
            alpha[i] = max(float(x @ res.x) if ok else -np.inf, float(x @ self.w))
        return alpha

    def select(self, X: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
        """Optimistic assortment from the MLE and its (reconstructed) confidence set."""
        X, r = _check_round(X, r, self.N, self.d)
        beta = self.beta_scale * m2nl_beta(self.t, self.d, self.B, self.delta)
        if self.optimism == "exact" and self.hist.n > 0:
            alpha = self._exact_alpha(X, beta)
        else:
            width = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", X, self.H_inv, X), 0.0))
            alpha = X @ self.w + beta * width
        self._X = X
        return self._assort(alpha, r)

    def update(self, S: np.ndarray, y: np.ndarray) -> None:
        """Store the round and refit the MLE every ``refit_every`` rounds."""
        S, y = self._check_feedback(S, y)
        if S.size:
            self.hist.add(self._X[S], y)
        if self.hist.n and self.t % self.refit_every == 0:
            self._refit()
        self.t += 1


class _MLEBaseline(_Base):
    """Regularised MLE by L-BFGS-B over the whole history; Gram matrix V = lam I + sum x x^T."""

    def __init__(self, N, K, d, B=1.0, v0=1.0, lam=1.0, kappa=None, alpha=None, alpha_scale=1.0,
                 refit_every=1):
        super().__init__(N, K, d, B, v0)
        self.lam = _check_positive("lam", lam)
        self.refit_every = _check_int("refit_every", refit_every)
        # kappa = min over the parameter ball of the MNL Hessian factor (Oh & Iyengar 2021);
        # the authors' harness uses e^{-1} / (v0 + K e)^2 for B = 1.
        self.kappa = (math.exp(-self.B) / (self.v0 + self.K * math.exp(self.B)) ** 2
                      if kappa is None else _check_positive("kappa", kappa))
        self.alpha_fixed = None if alpha is None else _check_positive("alpha", alpha)
        self.alpha_scale = _check_positive("alpha_scale", alpha_scale)
        self.hist = _History(self.K, self.d)
        self.w = np.zeros(self.d)
        self.V = self.lam * np.eye(self.d)
        self.V_inv = np.eye(self.d) / self.lam

    def alpha(self, t: int) -> float:
        """Radius (1 / (2 kappa)) sqrt(2 d log(1 + t/d) + 2 log t) (Oh & Iyengar 2021)."""
        if self.alpha_fixed is not None:
            return self.alpha_scale * self.alpha_fixed
        return self.alpha_scale * (1.0 / (2.0 * self.kappa)) * math.sqrt(
            2.0 * self.d * math.log(1.0 + t / self.d) + 2.0 * math.log(t))

    def update(self, S: np.ndarray, y: np.ndarray) -> None:
        from scipy.optimize import minimize

        S, y = self._check_feedback(S, y)
        if S.size == 0:
            self.t += 1
            return
        X_S = self._X[S]
        self.hist.add(X_S, y)
        self.V += X_S.T @ X_S
        self.V_inv = np.linalg.inv(self.V)
        if self.t % self.refit_every:
            self.t += 1
            return
        X, m, yy = self.hist.arrays()
        res = minimize(_batch_nll, self.w, args=(X, m, yy, self.v0, self.lam), jac=True,
                       method="L-BFGS-B", options={"maxiter": 100})
        self.w = res.x
        self.t += 1


class UCBMNL(_MLEBaseline):
    """UCB-MNL (Oh & Iyengar, AAAI 2021): regularised MLE + radius alpha_t ||x||_{V^{-1}}.

    Args: N, K, d, B, v0; lam (ridge, 1 as in the authors' harness); kappa (default
    e^{-B}/(v0 + K e^B)^2); alpha (fixed radius) and alpha_scale; refit_every (L-BFGS-B refit
    of the MLE every this many rounds; 1 = every round as in the original).

    alpha_t = (1/(2 kappa)) sqrt(2 d log(1 + t/d) + 2 log t), kappa = e^{-B}/(v0 + K e^B)^2:
    exponentially small in B, so the radius is huge — the point of the comparison.
    Per-round cost grows with t (full-history refit).
    """

    name = "UCB-MNL"

    def select(self, X: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
        X, r = _check_round(X, r, self.N, self.d)
        width = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", X, self.V_inv, X), 0.0))
        self._X = X
        return self._assort(X @ self.w + self.alpha(self.t) * width, r)


class TSMNL(_MLEBaseline):
    """TS-MNL (Oh & Iyengar, NeurIPS 2019) with a Gaussian approximation:
    w~ ~ N(w_hat, alpha_t^2 V^{-1}), then the assortment of the sampled utilities.

    Args:
        rng: ``numpy.random.Generator`` for the posterior samples (``None``: seed 0).

    Raises:
        TypeError: rng neither a ``numpy.random.Generator`` nor None (plus the checks of UCB-MNL).
    """

    name = "TS-MNL"

    def __init__(self, N, K, d, B=1.0, v0=1.0, lam=1.0, kappa=None, alpha=None, alpha_scale=1.0,
                 refit_every=1, rng: np.random.Generator | None = None):
        super().__init__(N, K, d, B, v0, lam, kappa, alpha, alpha_scale, refit_every)
        rng = _check_rng(rng, allow_seed=False)
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def select(self, X: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
        X, r = _check_round(X, r, self.N, self.d)
        L = np.linalg.cholesky(self.V_inv + 1e-15 * np.eye(self.d))
        w_tilde = self.w + self.alpha(self.t) * (L @ self.rng.standard_normal(self.d))
        self._X = X
        return self._assort(X @ w_tilde, r)


# --------------------------------------------------------------------------------------------
# Environment and runner
# --------------------------------------------------------------------------------------------


class MNLBanditEnv:
    """Contextual MNL bandit environment (harness of Lee & Oh 2024, redone).

    w* ~ U[-1/sqrt(d), 1/sqrt(d)]^d (so ||w*|| <= 1 = B). Each round: N contexts drawn from
    ``context`` (``"gaussian"``: N(0, 1) entries; ``"uniform"``: U(-1, 1)/sqrt(d);
    ``"elliptical"``: a random low-rank elliptical law) clipped to [-1/sqrt(d), 1/sqrt(d)]
    (so ||x|| <= 1), and revenues r = 1 (``"uniform"``) or r ~ U(0, 1) redrawn every round
    (``"nonuniform"``).

    Args:
        N: items; d: dimension; K: max assortment size (1 <= K <= N); v0: outside weight > 0.
        reward: ``"uniform"`` | ``"nonuniform"``; context: see above.
        rng: ``numpy.random.Generator``, int seed >= 0 or None (fresh entropy). Two generators are spawned from it, one for
            w* and the contexts and one for the customers' choices; :meth:`reset` replays both,
            so every algorithm sees the same contexts.

    Raises:
        ValueError: K < 1, K > N, v0 <= 0, unknown reward/context, negative seed.
        TypeError: non-integer sizes; rng not a Generator, int or None.
    """

    def __init__(self, N: int, d: int, K: int, v0: float = 1.0, reward: str = "uniform",
                 context: str = "gaussian", rng: np.random.Generator | int | None = None):
        self.N = _check_int("N", N)
        self.d = _check_int("d", d)
        self.K = _check_int("K", K)
        if self.K > self.N:
            raise ValueError(f"K must be <= N, got K={K}, N={N}")
        self.v0 = _check_v0(v0)
        if reward not in ("uniform", "nonuniform"):
            raise ValueError(f"reward must be 'uniform' or 'nonuniform', got {reward!r}")
        if context not in ("gaussian", "uniform", "elliptical"):
            raise ValueError(f"context must be 'gaussian', 'uniform' or 'elliptical', got {context!r}")
        self.reward, self.context = reward, context
        rng = _check_rng(rng, allow_seed=True)
        if rng is None:
            rng = np.random.default_rng()
        self._seed_seq = rng.bit_generator.seed_seq.spawn(1)[0] if hasattr(rng.bit_generator, "seed_seq") \
            else np.random.SeedSequence(int(rng.integers(2**63)))
        self.reset()

    def reset(self) -> None:
        """Replay the same w*, contexts and choice noise from the start."""
        # children built explicitly (not .spawn, which advances a counter) so reset() replays
        base = self._seed_seq
        ctx_seq, choice_seq = (np.random.SeedSequence(base.entropy, spawn_key=base.spawn_key + (k,))
                               for k in (0, 1))
        self._ctx_rng = np.random.default_rng(ctx_seq)
        self._choice_rng = np.random.default_rng(choice_seq)
        s = 1.0 / math.sqrt(self.d)
        self.w_star = self._ctx_rng.uniform(-s, s, self.d)
        self.X = None
        self.r = None

    def contexts(self) -> tuple[np.ndarray, np.ndarray]:
        """Draw this round's ``(X (N, d), r (N,))``."""
        s = 1.0 / math.sqrt(self.d)
        g = self._ctx_rng
        if self.context == "gaussian":
            X = g.standard_normal((self.N, self.d))
        elif self.context == "uniform":
            X = g.uniform(-1.0, 1.0, (self.N, self.d)) * s
        else:
            k = max(self.d // 2, 1)
            Z = g.standard_normal((self.N, k))
            Z /= np.linalg.norm(Z, axis=1, keepdims=True)
            A = g.random((self.d, k))
            X = (Z * g.standard_normal((self.N, 1))) @ A.T
        self.X = np.clip(X, -s, s)
        self.r = np.ones(self.N) if self.reward == "uniform" else g.random(self.N)
        return self.X, self.r

    def true_weights(self) -> np.ndarray:
        """(N,) true attraction weights exp(x_i^T w*) of the current round."""
        return np.exp(self.X @ self.w_star)

    def step(self, S: np.ndarray) -> tuple[np.ndarray, float]:
        """Offer S; returns (y one-hot (|S|+1,), outside option last; expected revenue R(S))."""
        if self.X is None:
            raise ValueError("step() called before contexts()")
        S = _check_assortment(S, self.N, self.K)
        p = _probs(self.X[S], self.w_star, self.v0)
        y = np.zeros(S.size + 1)
        y[self._choice_rng.choice(S.size + 1, p=p)] = 1.0
        return y, _revenue(self.true_weights(), self.r, S, self.v0)

    def opt_revenue(self) -> float:
        """Revenue of the optimal assortment of the current round under w*."""
        return _bisection_assortment(self.true_weights(), self.r, self.K, self.v0)[1]


def run_bandit(algorithm: Any, env: MNLBanditEnv, T: int) -> dict[str, np.ndarray]:
    """Run ``algorithm`` for T rounds on ``env`` (after ``env.reset()``).

    Args:
        algorithm: object with ``select(X, r) -> S`` and ``update(S, y)``.
        env: the environment (reset first, so all algorithms see the same contexts).
        T: horizon >= 1.

    Returns:
        dict with (T,) float64 arrays: ``regret`` (cumulative expected regret),
        ``time`` (CPU seconds of select + update per round, ``time.process_time``), ``sigma2`` (variance of the reward of
        the offered assortment under w*), ``revenue`` (expected revenue per round).

    Raises:
        ValueError / TypeError: T not a positive integer; TypeError: algorithm without
            select/update, env not an :class:`MNLBanditEnv`.
    """
    T = _check_int("T", T)
    if not (callable(getattr(algorithm, "select", None)) and callable(getattr(algorithm, "update", None))):
        raise TypeError(f"algorithm must have select(X, r) and update(S, y) methods, got {type(algorithm).__name__}")
    if not isinstance(env, MNLBanditEnv):
        raise TypeError(f"env must be an MNLBanditEnv, got {type(env).__name__}")
    with _single_thread_blas():
        return _run_bandit(algorithm, env, T)


class _single_thread_blas:
    """Limit BLAS to one thread: on tiny d x d problems OpenBLAS threads only add overhead
    (L-BFGS-B ran ~20x slower with two threads on the 2-core machine)."""

    def __enter__(self):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - threadpoolctl ships with scipy's stack
            self._ctx = None
            return self
        self._ctx = threadpool_limits(limits=1, user_api="blas")
        return self

    def __exit__(self, *exc):
        if self._ctx is not None:
            self._ctx.restore_original_limits()
        return False


# CPU time of this process (all threads), not wall time: on a shared machine wall time also
# counts the time the process waits for a core, which has nothing to do with the algorithm.
_clock = time.process_time


def _run_bandit(algorithm: Any, env: MNLBanditEnv, T: int) -> dict[str, np.ndarray]:
    env.reset()
    inst = np.zeros(T)
    times = np.zeros(T)
    sigma2 = np.zeros(T)
    rev = np.zeros(T)
    for t in range(T):
        X, r = env.contexts()
        t0 = _clock()
        S = algorithm.select(X, r)
        t1 = _clock()
        y, rev[t] = env.step(S)
        t2 = _clock()
        algorithm.update(S, y)
        times[t] = (t1 - t0) + (_clock() - t2)
        inst[t] = env.opt_revenue() - rev[t]
        sigma2[t] = _variance(env.true_weights(), r, np.asarray(S, dtype=np.int64), env.v0)
    return {"regret": np.cumsum(inst), "time": times, "sigma2": sigma2, "revenue": rev}


def make_algorithm(name: str, N: int, K: int, d: int, v0: float = 1.0, B: float = 1.0,
                   rng: np.random.Generator | None = None, **kwargs: Any):
    """Build one of :data:`ALGORITHMS` by name (extra keywords go to its constructor).

    Raises:
        TypeError: name not a string; rng not a Generator or None.
        ValueError: unknown name (plus the constructor's own checks).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, one of {ALGORITHMS}; got {type(name).__name__}")
    rng = _check_rng(rng, allow_seed=False)
    if name == "OFU-MNL++":
        return OFUMNLPlusPlus(N, K, d, B=B, v0=v0, **kwargs)
    if name == "OFU-MNL+":
        return OFUMNLPlus(N, K, d, B=B, v0=v0, **kwargs)
    if name == "OFU-M2NL":
        return OFUM2NL(N, K, d, B=B, v0=v0, **kwargs)
    if name == "UCB-MNL":
        return UCBMNL(N, K, d, B=B, v0=v0, **kwargs)
    if name == "TS-MNL":
        return TSMNL(N, K, d, B=B, v0=v0, rng=rng, **kwargs)
    raise ValueError(f"unknown algorithm {name!r}; known: {ALGORITHMS}")


def compare_algorithms(names: list[str] | tuple[str, ...], *, N: int, d: int, K: int, T: int,
                       v0: float = 1.0, reward: str = "uniform", context: str = "gaussian",
                       rng: np.random.Generator, n_seeds: int = 3,
                       options: dict[str, dict] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Run every named algorithm on ``n_seeds`` environments drawn from ``rng``.

    Args:
        names: list/tuple of names from :data:`ALGORITHMS` (not a single string).
        N, d, K, T, v0, reward, context: as :class:`MNLBanditEnv` and :func:`run_bandit`.
        rng: ``numpy.random.Generator``; one child per seed is spawned from it.
        n_seeds: number of environments >= 1.
        options: name -> extra constructor keywords.

    Returns:
        name -> {"regret", "time", "sigma2"}: (n_seeds, T) arrays; environment i is shared by
        all algorithms (same w*, contexts and choice noise).

    Raises:
        TypeError: names a string or not a list/tuple of strings; rng not a Generator; options
            not a dict; non-integer sizes.
        ValueError: empty names, unknown algorithm name, n_seeds < 1, bad sizes (K > N, ...).
    """
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise TypeError(f"names must be a list or tuple of algorithm names (e.g. [{names!r}] for one), "
                        f"got {type(names).__name__}")
    if len(names) == 0:
        raise ValueError(f"names must not be empty; known: {ALGORITHMS}")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"names must contain strings, got {type(name).__name__}")
        if name not in ALGORITHMS:
            raise ValueError(f"names contains unknown algorithm {name!r}; known: {ALGORITHMS}")
    rng = _check_rng(rng, allow_seed=False, allow_none=False)
    n_seeds = _check_int("n_seeds", n_seeds)
    T = _check_int("T", T)
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict name -> keywords, got {type(options).__name__}")
    options = options or {}
    env_rngs = rng.spawn(n_seeds)
    out: dict[str, dict[str, list]] = {n: {"regret": [], "time": [], "sigma2": []} for n in names}
    for i in range(n_seeds):
        env = MNLBanditEnv(N, d, K, v0, reward, context, rng=env_rngs[i])
        alg_rng = np.random.default_rng(env_rngs[i].integers(2**63))
        for name in names:
            alg = make_algorithm(name, N, K, d, v0=v0, rng=alg_rng, **options.get(name, {}))
            res = run_bandit(alg, env, T)
            for key in out[name]:
                out[name][key].append(res[key])
    return {n: {k: np.asarray(v) for k, v in res.items()} for n, res in out.items()}


# --------------------------------------------------------------------------------------------
# Batched OFU-MNL++ over R replicate runs (the gpu profile; uses the kernels)
# --------------------------------------------------------------------------------------------


def run_ofu_mnl_pp_batched(R: int, N: int, d: int, K: int, T: int, v0: float = 1.0,
                           reward: str = "uniform", seed: int = 0, beta_scale: float = 1.0,
                           B: float = 1.0, xp=None) -> dict[str, np.ndarray]:
    """R independent OFU-MNL++ runs in lockstep, with the batched optimism and oracle kernels.

    Same algorithm as :class:`OFUMNLPlusPlus` (Gaussian contexts clipped to 1/sqrt(d),
    w* ~ U[-1/sqrt(d), 1/sqrt(d)]^d per replicate), vectorised over replicates; on a GPU the
    arrays live in CuPy and :mod:`icml25.kernels.mnl_bandits` runs the CUDA kernels.

    Returns:
        dict of NumPy arrays: ``regret`` (R, T) cumulative, ``sigma2`` (R, T), ``time`` (T,)
        seconds per round for all R replicates together.

    Raises:
        ValueError: bad sizes (K > N, ...), bad reward, v0 <= 0, negative seed,
            non-positive beta_scale or B.
        TypeError: non-integer sizes or seed.
    """
    from icml25.common import get_array_module, to_numpy
    from icml25.kernels import mnl_bandits as kern

    R, N, d, K, T = (_check_int(n, v) for n, v in (("R", R), ("N", N), ("d", d), ("K", K), ("T", T)))
    if K > N:
        raise ValueError(f"K must be <= N, got K={K}, N={N}")
    v0 = _check_v0(v0)
    if reward not in ("uniform", "nonuniform"):
        raise ValueError(f"reward must be 'uniform' or 'nonuniform', got {reward!r}")
    seed = _check_int("seed", seed, low=0)
    beta_scale, B = _check_positive("beta_scale", beta_scale), _check_positive("B", B)
    xp = get_array_module() if xp is None else xp
    sync = (lambda: xp.cuda.Stream.null.synchronize()) if xp is not np else (lambda: None)
    g = xp.random.default_rng(seed) if xp is not np else np.random.default_rng(seed)
    s = 1.0 / math.sqrt(d)
    w_star = s * (2.0 * g.random((R, d)) - 1.0)
    optimism = kern.optimistic_utilities if xp is not np else kern.optimistic_utilities_reference
    oracle = kern.assortment_bisection if xp is not np else kern.assortment_bisection_reference
    eta, lam = ofu_mnl_pp_constants(B)
    w = xp.zeros((R, d))
    H = xp.broadcast_to(lam * xp.eye(d), (R, d, d)).copy()
    H_inv = xp.broadcast_to(xp.eye(d) / lam, (R, d, d)).copy()
    regret = xp.zeros((R, T))
    sigma2 = xp.zeros((R, T))
    times = np.zeros(T)
    v0_arr = xp.full(R, v0)
    rows = xp.arange(R)
    for t in range(T):
        X = xp.clip(g.standard_normal((R, N, d)), -s, s)
        r = xp.ones((R, N)) if reward == "uniform" else g.random((R, N))
        sync()
        t0 = time.perf_counter()
        beta = xp.full(R, beta_scale * ofu_mnl_pp_beta(t + 1, d, B))
        alpha = optimism(X, w, H_inv, beta)
        alpha_max = alpha.max(axis=1, keepdims=True)
        mask, _ = oracle(xp.exp(alpha - alpha_max), r, K, v0_arr * xp.exp(-alpha_max[:, 0]))
        mask = mask.astype(xp.float64)
        # customers' choices under w* (outside option when the uniform draw exceeds sum p_i)
        v_true = xp.exp(xp.einsum("rnd,rd->rn", X, w_star))
        den_true = v0 + (mask * v_true).sum(axis=1)
        p_true = mask * v_true / den_true[:, None]
        u = g.random((R, 1))
        cdf = xp.cumsum(p_true, axis=1)
        chosen = (cdf > u).argmax(axis=1)
        bought = cdf[:, -1] > u[:, 0]
        y = xp.zeros((R, N))
        y[rows, chosen] = bought.astype(xp.float64)
        # OMD step (Eq. 5), batched
        def grad_hess(wc):
            e = mask * xp.exp(xp.einsum("rnd,rd->rn", X, wc))
            p = e / (v0 + e.sum(axis=1))[:, None]
            px = xp.einsum("rn,rnd->rd", p, X)
            G = xp.einsum("rn,rnd,rne->rde", p, X, X) - px[:, :, None] * px[:, None, :]
            return xp.einsum("rn,rnd->rd", p - y, X), G
        gvec, G = grad_hess(w)
        H_tilde = H + eta * G
        w_new = w - eta * xp.linalg.solve(H_tilde, gvec[..., None])[..., 0]
        w = project_to_ball(w_new, H_tilde, B, xp=xp)
        _, G_new = grad_hess(w)
        H = H + G_new
        H_inv = xp.linalg.inv(H)
        sync()
        times[t] = time.perf_counter() - t0
        # bookkeeping (not timed): regret and variance under w*
        _, opt_rev = oracle(v_true, r, K, v0_arr)
        rev = (p_true * r).sum(axis=1)
        regret[:, t] = opt_rev - rev
        sigma2[:, t] = xp.maximum((p_true * r * r).sum(axis=1) - rev * rev, 0.0)
    return {"regret": to_numpy(xp.cumsum(regret, axis=1)), "sigma2": to_numpy(sigma2), "time": times}


@dataclass(frozen=True)
class Defaults:
    """Harness defaults (Lee & Oh 2024 code): N=100, d=5, K=5 / 15, v0=1, B=1."""

    N: int = 100
    d: int = 5
    K: int = 5
    v0: float = 1.0
    B: float = 1.0
