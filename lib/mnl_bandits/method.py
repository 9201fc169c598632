"""The paper's methods: the OMD estimator and OFU-MNL++, and the MLE-based OFU-M²NL.

Lee & Oh, "Improved Online Confidence Bounds for Multinomial Logistic Bandits" (ICML 2025,
arXiv 2502.10020). Every bandit has ``select(X, r) -> S`` and ``update(S, y)``; the arguments
are checked there, once, and the private functions hold the math.

What is verified and what is reconstructed (the paper's full text was not reachable): the MNL
model, losses and the OMD update (from the authors' OFU-MNL+ code ``oh-lab/OFU-MNL-plus``) are
verified; the step size, regulariser and radius of OFU-MNL++ and the confidence set of OFU-M²NL
are **reconstructed** from the stated orders O(sqrt(d log t) + B) and O(d log(BT)) and are
marked so in the docstrings.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import (
    check_array,
    check_budget,
    check_choice,
    check_int,
    check_positive,
    check_probability,
)

from .defaults import DEFAULTS
from .model import (
    _check_assortment,
    _check_feature_scale,
    _check_one_hot,
    _finite_result,
    _loss_grad_hess,
    _oracle,
)

__all__ = [
    "project_to_ball",
    "OMDEstimator",
    "ofu_mnl_pp_constants",
    "ofu_mnl_pp_beta",
    "m2nl_beta",
    "OFUMNLPlusPlus",
    "OFUM2NL",
]


# --------------------------------------------------------------------------------------
# Projection and the online mirror descent estimator (Lee & Oh
# 2024; OFU-MNL++ reuses it)
# --------------------------------------------------------------------------------------


def _project(w: np.ndarray, M: np.ndarray, B: float, n_steps: int) -> np.ndarray:
    """u = argmin_{||u||_2 <= B} ||u - w||_M^2, batched over leading axes.

    KKT: u(mu) = (M + mu I)^{-1} M w with mu >= 0 and ||u(mu)|| = B when ||w|| > B. With
    M = Q diag(lam) Q^T, u(mu) = Q (lam c / (lam + mu)), c = Q^T w, whose norm decreases in mu;
    mu is found by bisection (at most ``n_steps`` halvings), keeping the feasible end ``hi``.
    A halving that moves neither end is a fixed point (float64 cannot split [lo, hi] further),
    so the loop stops there: the same answer as running every step, in at most ~1100 steps.
    """
    norms = np.linalg.norm(w, axis=-1)
    outside = norms > B
    if not bool(np.any(outside)):
        return w
    lam, Q = np.linalg.eigh(M)
    lam = np.maximum(lam, 1e-12)
    c = np.einsum("...ji,...j->...i", Q, w)

    def norm_at(mu):
        return np.linalg.norm(lam * c / (lam + mu[..., None]), axis=-1)

    lo = np.zeros(norms.shape)
    # ||u(hi)|| <= lam_max |c| / hi <= B
    hi = np.maximum(lam.max(axis=-1) * (norms / B), 1e-12)
    for _ in range(n_steps):
        mid = 0.5 * (lo + hi)
        big = norm_at(mid) > B
        lo_new, hi_new = np.where(big, mid, lo), np.where(big, hi, mid)
        if np.array_equal(lo_new, lo) and np.array_equal(hi_new, hi):
            break  # fixed point: every further step would repeat this one
        lo, hi = lo_new, hi_new
    u = np.einsum("...ij,...j->...i", Q, lam * c / (lam + hi[..., None]))
    return _in_ball(np.where(outside[..., None], u, w), B)


def _in_ball(u: np.ndarray, B: float, rtol: float = 1e-8) -> np.ndarray:
    """``u`` if it is finite and ||u|| <= B (to ``rtol``): the projection's root find is checked."""
    _finite_result(u, "the projection onto {||w|| <= B}")
    if np.any(np.linalg.norm(u, axis=-1) > B * (1.0 + rtol)):
        raise np.linalg.LinAlgError(
            "the projection onto {||w|| <= B} left the ball (infeasible root); "
            "the estimator's state was left unchanged"
        )
    return u


def project_to_ball(
    w: ArrayLike, M: ArrayLike, B: float, n_steps: int = 60
) -> np.ndarray:
    """argmin_{||u||_2 <= B} ||u - w||_M^2, batched over leading axes (the OMD projection, Eq. (5)).

    Args:
        w: (..., d) finite points to project.
        M: (..., d, d) symmetric positive definite metrics (same leading axes as ``w``).
        B: radius > 0.
        n_steps: the most bisection steps (>= 1) for the Lagrange multiplier mu (the loop stops
            earlier once float64 cannot halve the bracket further, after ~1100 steps at most).

    Returns:
        (..., d) float64 projections, inside the ball (points already inside are returned unchanged).

    Raises:
        ValueError: B not a positive finite number, n_steps < 1, shapes disagree, non-finite
            input, ``M`` not symmetric (to 1e-10 relative).
        TypeError: non-numeric input, n_steps not an integer.
        TooLargeError: n_steps x points x d beyond :data:`icml25.checks.MAX_OPERATIONS`.
        numpy.linalg.LinAlgError: ``M`` not positive definite (its Cholesky factorisation fails),
            or the root find did not land in the ball.
    """
    B = check_positive(B, "B")
    n_steps = check_int(n_steps, "n_steps", low=1)
    w = check_array(w, "w", dtype=np.float64)
    if w.ndim == 0:
        raise ValueError("w must have shape (..., d), got a scalar")
    M = check_array(M, "M", shape=(*w.shape, w.shape[-1]), dtype=np.float64)
    d = w.shape[-1]
    n_points = w.size // max(d, 1)
    check_budget(
        f"project_to_ball(n_steps={n_steps})",
        n_operations=float(n_steps) * n_points * (4 * d + 8) + float(n_points) * d**3,
    )
    _check_spd(M, "M")
    return _project(w, M, B, n_steps)


def _check_spd(M: np.ndarray, name: str, rtol: float = 1e-10) -> np.ndarray:
    """``M`` (..., d, d) if symmetric (to ``rtol`` of its largest entry) and positive definite.

    Raises:
        ValueError: not symmetric (the eigen-decomposition would silently read one triangle).
        numpy.linalg.LinAlgError: not positive definite (the Cholesky factorisation fails).
    """
    scale = float(np.abs(M).max(initial=0.0))
    if float(np.abs(M - np.swapaxes(M, -1, -2)).max(initial=0.0)) > rtol * scale:
        raise ValueError(f"{name} must be symmetric (M = M^T to {rtol:g} relative)")
    try:
        np.linalg.cholesky(M)
    except np.linalg.LinAlgError as err:
        raise np.linalg.LinAlgError(
            f"{name} must be positive definite (its Cholesky factorisation "
            f"failed: {err})"
        ) from None
    return M


def _omd_step(
    w: np.ndarray,
    H: np.ndarray,
    X_S: np.ndarray,
    y: np.ndarray,
    eta: float,
    B: float | None,
    v0: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One online-Newton (OMD) step, Eq. (5) of Lee & Oh 2024, reused by OFU-MNL++:

        H~_t = H_t + eta G_t(w_t),
        w_{t+1} = argmin_{||w|| <= B} <g_t(w_t), w> + 1/(2 eta) ||w - w_t||^2_{H~_t}
                = Proj^{H~_t}_B(w_t - eta H~_t^{-1} g_t(w_t)),
        H_{t+1} = H_t + G_t(w_{t+1}).

    Returns the new (w, H, H^{-1}); every solve is checked before it is used.
    """
    _, g, G = _loss_grad_hess(X_S, y, w, v0)
    H_tilde = H + eta * G
    w_new = w - eta * _finite_result(
        np.linalg.solve(H_tilde, g), "the Newton step H~^{-1} g"
    )
    if B is not None:
        w_new = _project(w_new, H_tilde, B, 60)
    _, _, G_new = _loss_grad_hess(X_S, y, w_new, v0)  # G_t at w_{t+1}
    H_new = H + G_new
    H_new = 0.5 * (H_new + H_new.T)
    return (
        w_new,
        H_new,
        _finite_result(np.linalg.inv(H_new), "the inverse Hessian H_{t+1}^{-1}"),
    )


class OMDEstimator:
    """Online mirror descent (online Newton step) MNL estimator, O(K d^2 + d^3) per round.

    Update (Lee & Oh 2024, Eq. (5); reused by OFU-MNL++): see :func:`_omd_step`; H_1 = lam I.
    Unlike the authors' OFU-MNL+ code this takes the closed-form step (not twice it) and keeps
    the projection. H and H^{-1} are kept explicitly (d is small; no Sherman–Morrison).

    Args:
        d: dimension (integer >= 1).
        eta: step size > 0.
        lam: regulariser lam > 0 (H_1 = lam I).
        B: norm bound on w* (> 0); ``None`` disables the projection.
        v0: outside-option weight > 0.

    Raises:
        ValueError / TypeError: non-positive or non-numeric arguments.
    """

    def __init__(
        self,
        d: int,
        eta: float,
        lam: float,
        B: float | None = DEFAULTS.B,
        v0: float = DEFAULTS.v0,
    ) -> None:
        self.d = check_int(d, "d", low=1)
        self.eta = check_positive(eta, "eta")
        self.lam = check_positive(lam, "lam")
        self.B = None if B is None else check_positive(B, "B")
        self.v0 = check_positive(v0, "v0")
        self.w = np.zeros(self.d)
        self.H = self.lam * np.eye(self.d)
        self.H_inv = np.eye(self.d) / self.lam

    def update(self, X_S: ArrayLike, y: ArrayLike) -> np.ndarray:
        """One OMD step on one round's feedback; returns the new w (d,).

        Args:
            X_S: (k, d) finite features of the offered items (k = 0: nothing to learn), with
                eta ||x_i||^2 <= 1e300 (past it x x^T overflows float64).
            y: (k + 1,) one-hot feedback (one 1, the rest 0), outside option last.

        Returns:
            (d,) float64 estimate w_{t+1} (the estimator's own array).

        Raises:
            ValueError: shapes disagree, NaN/inf in ``X_S`` or ``y``, ``y`` not one-hot,
                ``X_S`` too large for float64 Hessians; the state (w, H, H^{-1}) is unchanged.
            TypeError: non-numeric input.
            numpy.linalg.LinAlgError: a solve gave a non-finite or infeasible result (features
                below the overflow bound can still make H~ too ill-conditioned); the state is
                unchanged.
        """
        X_S = _check_feature_scale(
            check_array(X_S, "X_S", shape=(None, self.d), dtype=np.float64),
            "X_S",
            self.eta,
        )
        y = _check_one_hot(y, X_S.shape[0])
        return self._update(X_S, y)

    def _update(self, X_S: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The step on validated input; the state is replaced only once every result is checked."""
        if len(X_S) == 0:
            return self.w
        self.w, self.H, self.H_inv = _omd_step(
            self.w, self.H, X_S, y, self.eta, self.B, self.v0
        )
        return self.w


# --------------------------------------------------------------------------------------
# Confidence radii of the paper's methods (reconstructed)
# --------------------------------------------------------------------------------------


def ofu_mnl_pp_constants(B: float = DEFAULTS.B) -> tuple[float, float]:
    """(eta, lam) of OFU-MNL++ — **reconstructed**: eta = 1 + B (the K-dependent log(K+1)/2 of
    OFU-MNL+ removed by the tighter, K-free self-concordance), lam = 2 eta (no d factor, so
    that the regulariser contributes O(B) to the radius rather than O(B sqrt(d))).

    Raises:
        ValueError / TypeError: B not positive."""
    return _pp_constants(check_positive(B, "B"))


def _pp_constants(B: float) -> tuple[float, float]:
    """eta = 1 + B, lam = 2 eta (reconstructed; OFU-MNL+ has eta = (B+1) + log(K+1)/2, lam = 84 sqrt(2) eta d)."""
    eta = 1.0 + B
    return eta, 2.0 * eta


def ofu_mnl_pp_beta(
    t: int, d: int, B: float = DEFAULTS.B, delta: float = DEFAULTS.delta
) -> float:
    """Confidence radius of OFU-MNL++ — **reconstructed** to the paper's order O(sqrt(d log t) + B):

    beta_t = sqrt(2 eta (d log(1 + t / (d lam)) + 2 log(1/delta))) + sqrt(lam) B,

    with (eta, lam) from :func:`ofu_mnl_pp_constants`; no K anywhere.

    Raises:
        ValueError / TypeError: t (round) or d not integers >= 1; B not positive; delta not in (0, 1).
    """
    t, d = check_int(t, "t", low=1), check_int(d, "d", low=1)
    delta = check_probability(delta, "delta", open_low=True, open_high=True)
    return _pp_beta(t, d, check_positive(B, "B"), delta)


def _pp_beta(t: int, d: int, B: float, delta: float) -> float:
    """beta_t = sqrt(2 eta (d log(1 + t / (d lam)) + 2 log(1/delta))) + sqrt(lam) B (reconstructed, no K)."""
    eta, lam = _pp_constants(B)
    return (
        math.sqrt(
            2.0
            * eta
            * (d * math.log(1.0 + t / (d * lam)) + 2.0 * math.log(1.0 / delta))
        )
        + math.sqrt(lam) * B
    )


def m2nl_beta(
    t: int, d: int, B: float = DEFAULTS.B, delta: float = DEFAULTS.delta
) -> float:
    """Ellipsoidal radius of OFU-M²NL — **reconstructed**: the likelihood-ratio set
    {w : L_t(w) - L_t(w_hat) <= gamma_t} with gamma_t = log(1/delta) + d log(max(e, 2 e B t / d))
    (the form of Lee, Yun & Jun 2024 for GLMs: logarithmic in B), relaxed to the ellipsoid
    ||w - w_hat||_{H_t(w_hat)} <= sqrt(2 gamma_t) (second-order expansion).

    Raises:
        ValueError / TypeError: t (round) or d not integers >= 1; B not positive; delta not in (0, 1).
    """
    t, d = check_int(t, "t", low=1), check_int(d, "d", low=1)
    B = check_positive(B, "B")
    delta = check_probability(delta, "delta", open_low=True, open_high=True)
    gamma = math.log(1.0 / delta) + d * math.log(
        max(math.e, 2.0 * math.e * B * max(t, 1) / d)
    )
    return math.sqrt(2.0 * gamma)


# --------------------------------------------------------------------------------------
# Algorithms: select(X, r) -> S, update(S, y)
# --------------------------------------------------------------------------------------


def _check_round(
    X: Any, r: Any, N: int, d: int, eta: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """One round's contexts (N, d) (eta ||x_i||^2 <= 1e300) and revenues (N,) (``None``: all ones),
    finite float64."""
    X = _check_feature_scale(
        check_array(X, "X (contexts)", shape=(N, d), dtype=np.float64),
        "X (contexts)",
        eta,
    )
    r = np.ones(N) if r is None else check_array(r, "r", shape=(N,), dtype=np.float64)
    return X, r


class _Base:
    """Shared bookkeeping: N, K, d, v0, B and the last offered features."""

    name = "base"

    def __init__(
        self, N: int, K: int, d: int, B: float = DEFAULTS.B, v0: float = DEFAULTS.v0
    ) -> None:
        self.N = check_int(N, "N", low=1)
        self.K = check_int(K, "K", low=1, high=self.N)
        self.d = check_int(d, "d", low=1)
        self.B = check_positive(B, "B")
        self.v0 = check_positive(v0, "v0")
        self.t = 1
        self._X = None
        self._S = None

    #: the curvature scale eta of the estimator's Hessian terms (the
    #: feature-size bound uses it)
    _eta = 1.0

    def select(self, X: ArrayLike, r: ArrayLike | None = None) -> np.ndarray:
        """This round's assortment (each algorithm's ``_select``; optimistic for the OFU methods, Alg. 1).

        Args:
            X: (N, d) finite contexts (eta ||x_i||^2 <= 1e300); r: (N,) finite revenues
                (``None``: all ones).

        Returns:
            sorted int64 indices of at most K items (``update`` expects these items back).

        Raises:
            ValueError / TypeError: wrong shapes, non-finite, too large or non-numeric input.
        """
        X, r = _check_round(X, r, self.N, self.d, self._eta)
        S = self._select(X, r)
        self._X, self._S = X, S
        return S

    def _select(
        self, X: np.ndarray, r: np.ndarray
    ) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def _assort(self, alpha: np.ndarray, r: np.ndarray) -> np.ndarray:
        """The oracle on v_i = exp(alpha_i - max alpha), v0 scaled alike (same assortment)."""
        m = alpha.max()
        v = np.exp(alpha - m)  # common scaling: v0 scales too
        return _oracle(v, r, self.K, self.v0 * math.exp(-m))[0]

    def _check_feedback(self, S: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """The round's assortment (the items ``select`` returned, in any order) and its one-hot
        (|S| + 1,) feedback in the same order, outside option last.

        Raises:
            ValueError: no select() since the last update, a bad S, an S with other items than
                the offered ones, y not one-hot of length |S| + 1.
        """
        if self._X is None:
            raise ValueError(
                "update() called before select() (each round: one select, then one update)"
            )
        S = _check_assortment(S, self.N, self.K)
        if not np.array_equal(np.sort(S), np.sort(self._S)):
            raise ValueError(
                f"S must be the assortment select() returned, {self._S.tolist()}; got {S.tolist()}"
            )
        y = _check_one_hot(y, S.size)
        return S, y

    def _round_done(self) -> None:
        """Close the round after a successful update: the next update needs a new select."""
        self._X, self._S = None, None
        self.t += 1


class _OMDBandit(_Base):
    """An optimistic bandit on the OMD estimator (OFU-MNL+ and OFU-MNL++ differ in eta, lam, beta_t)."""

    def __init__(
        self,
        N: int,
        K: int,
        d: int,
        B: float,
        v0: float,
        eta: float,
        lam: float,
        beta: float | None,
        beta_scale: float,
    ) -> None:
        super().__init__(N, K, d, B, v0)
        self.beta_fixed = None if beta is None else check_positive(beta, "beta")
        self.beta_scale = check_positive(beta_scale, "beta_scale")
        self.est = OMDEstimator(self.d, eta, lam, self.B, self.v0)
        self._eta = self.est.eta

    def beta(self, t: int) -> float:  # pragma: no cover - overridden
        """The confidence radius beta_t at round t (each algorithm has its own)."""
        raise NotImplementedError

    def _select(self, X: np.ndarray, r: np.ndarray) -> np.ndarray:
        """alpha_i = x_i^T w_t + beta_t ||x_i||_{H_t^{-1}}, S_t = argmax_{|S| <= K} R(S, exp(alpha)) (Alg. 1)."""
        beta = self.beta_scale * (
            self.beta_fixed if self.beta_fixed is not None else self.beta(self.t)
        )
        width = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", X, self.est.H_inv, X), 0.0))
        return self._assort(X @ self.est.w + beta * width, r)

    def update(self, S: ArrayLike, y: ArrayLike) -> None:
        """OMD step on the round's feedback.

        Args:
            S: the assortment returned by :meth:`select` (its items, in any order); y: (|S| + 1,)
                one-hot in the order of S, outside option last.

        Raises:
            ValueError: no select since the last update, bad S or other items than offered,
                y of the wrong shape, non-finite or not one-hot (state unchanged).
            numpy.linalg.LinAlgError: a solve of the step failed (state unchanged).
        """
        S, y = self._check_feedback(S, y)
        self.est._update(self._X[S], y)
        self._round_done()


class OFUMNLPlusPlus(_OMDBandit):
    """OFU-MNL++ (Lee & Oh, ICML 2025, Alg. 1): the OMD update of OFU-MNL+, improved radius.

    The radius is O(sqrt(d log t) + B) with no K (Thm. 1 of the paper); the constants here
    (eta = 1 + B, lam = 2 eta, beta_t of :func:`ofu_mnl_pp_beta`) are **reconstructed**.
    Per-round cost O(N d^2 + d^3 + oracle), constant in t.

    Args:
        N, K, d: items, maximum assortment size (1 <= K <= N), dimension.
        B: norm bound on w*; v0: outside-option weight; beta: fixed radius overriding beta_t.
        beta_scale: multiplier of the radius (1 = theory); delta: confidence level in (0, 1).

    Raises:
        ValueError / TypeError: bad sizes (K > N, ...), non-positive B/v0/beta_scale, delta outside (0, 1).
    """

    name = "OFU-MNL++"

    def __init__(
        self,
        N: int,
        K: int,
        d: int,
        B: float = DEFAULTS.B,
        v0: float = DEFAULTS.v0,
        beta: float | None = None,
        beta_scale: float = 1.0,
        delta: float = DEFAULTS.delta,
    ) -> None:
        eta, lam = ofu_mnl_pp_constants(B)
        self.delta = check_probability(delta, "delta", open_low=True, open_high=True)
        super().__init__(N, K, d, B, v0, eta, lam, beta, beta_scale)

    def beta(self, t: int) -> float:
        """beta_t of :func:`ofu_mnl_pp_beta` (reconstructed, K-free)."""
        return ofu_mnl_pp_beta(t, self.d, self.B, self.delta)


class _History:
    """Padded history of offered features (n, K, d), masks (n, K) and item choices (n, K)."""

    def __init__(self, K: int, d: int, capacity: int = 256) -> None:
        self.K, self.d, self.n = K, d, 0
        self.X = np.zeros((capacity, K, d))
        self.m = np.zeros((capacity, K))
        self.y = np.zeros((capacity, K))

    def add(self, X_S: np.ndarray, y: np.ndarray) -> None:
        """Append one round (validated by the caller)."""
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

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The first n rounds: X (n, K, d), mask (n, K), y (n, K)."""
        n = self.n
        return self.X[:n], self.m[:n], self.y[:n]


def _batch_nll(
    w: np.ndarray,
    X: np.ndarray,
    m: np.ndarray,
    y: np.ndarray,
    v0: float,
    lam: float,
    hess: bool = False,
):
    """Regularised negative log-likelihood L_t(w) = sum_s l_s(w) + lam/2 ||w||^2 (+ grad, Hessian)."""
    u = X @ w  # (n, K)
    top = np.maximum(np.where(m > 0, u, -np.inf).max(axis=1), math.log(v0))
    e = np.exp(u - top[:, None]) * m
    den = v0 * np.exp(-top) + e.sum(axis=1)
    p = e / den[:, None]
    loss = float(
        np.sum(np.log(den) + top)
        - np.sum(y * u)
        - np.sum(1.0 - y.sum(axis=1)) * math.log(v0)
    )
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
      (slow: for small N only; an infeasible or non-finite SLSQP answer falls back to x_i^T w_hat).

    Args:
        N, K, d, B, v0: as :class:`OFUMNLPlusPlus`.
        refit_every: refit the MLE every this many rounds (>= 1).
        optimism: ``"ellipsoid"`` or ``"exact"``.
        lam: ridge > 0 for numerical stability in early rounds (not in the paper).
        delta: confidence level in (0, 1); beta_scale: radius multiplier.
        newton_steps: Newton steps per refit (>= 1).

    Raises:
        ValueError / TypeError: bad sizes, non-positive B/v0/lam/beta_scale, delta outside (0, 1),
            unknown optimism.
    """

    name = "OFU-M2NL"

    def __init__(
        self,
        N: int,
        K: int,
        d: int,
        B: float = DEFAULTS.B,
        v0: float = DEFAULTS.v0,
        refit_every: int = 1,
        optimism: str = "ellipsoid",
        lam: float = 1.0,
        delta: float = DEFAULTS.delta,
        beta_scale: float = 1.0,
        newton_steps: int = 2,
    ) -> None:
        super().__init__(N, K, d, B, v0)
        self.refit_every = check_int(refit_every, "refit_every", low=1)
        self.optimism = check_choice(optimism, "optimism", ("ellipsoid", "exact"))
        self.lam = check_positive(lam, "lam")
        self.delta = check_probability(delta, "delta", open_low=True, open_high=True)
        self.beta_scale = check_positive(beta_scale, "beta_scale")
        self.newton_steps = check_int(newton_steps, "newton_steps", low=1)
        self.hist = _History(self.K, self.d)
        self.w = np.zeros(self.d)
        self.H = self.lam * np.eye(self.d)
        self.H_inv = np.eye(self.d) / self.lam

    def _refit(self) -> None:
        """w_hat_t = argmin L_t by damped Newton steps (Armijo backtracking), then H_t(w_hat_t)^{-1}."""
        X, m, y = self.hist.arrays()
        w = self.w
        loss, g, H = _batch_nll(w, X, m, y, self.v0, self.lam, hess=True)
        for _ in range(self.newton_steps):
            step = _finite_result(
                np.linalg.solve(H, g), "the Newton step H^{-1} g of the MLE refit"
            )
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
        H = 0.5 * (H + H.T)
        H_inv = _finite_result(np.linalg.inv(H), "the inverse Hessian H_t(w_hat)^{-1}")
        self.w, self.H, self.H_inv = w, H, H_inv

    def _exact_alpha(self, X: np.ndarray, beta: float) -> np.ndarray:
        """alpha_i = max { x_i^T w : L_t(w) <= L_t(w_hat) + beta^2 / 2 } by SLSQP (checked: finite, feasible)."""
        from scipy.optimize import minimize

        Xh, m, y = self.hist.arrays()
        gamma = 0.5 * beta * beta
        base, _ = _batch_nll(self.w, Xh, m, y, self.v0, self.lam)
        cons = {
            "type": "ineq",
            "fun": lambda w: (
                base + gamma - _batch_nll(w, Xh, m, y, self.v0, self.lam)[0]
            ),
            "jac": lambda w: -_batch_nll(w, Xh, m, y, self.v0, self.lam)[1],
        }
        alpha = np.empty(X.shape[0])
        for i, x in enumerate(X):
            nx = math.sqrt(max(float(x @ self.H_inv @ x), 0.0))
            w0 = self.w + (beta * 0.5 * (self.H_inv @ x) / nx if nx > 0 else 0.0)
            res = minimize(
                lambda w: -float(x @ w),
                w0,
                jac=lambda w: -x,
                constraints=[cons],
                method="SLSQP",
                options={"maxiter": 100, "ftol": 1e-10},
            )
            ok = bool(np.all(np.isfinite(res.x))) and cons["fun"](res.x) >= -1e-6
            alpha[i] = max(float(x @ res.x) if ok else -np.inf, float(x @ self.w))
        return alpha

    def _select(self, X: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Optimistic assortment from the MLE and its (reconstructed) confidence set."""
        beta = self.beta_scale * m2nl_beta(self.t, self.d, self.B, self.delta)
        if self.optimism == "exact" and self.hist.n > 0:
            alpha = self._exact_alpha(X, beta)
        else:
            width = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", X, self.H_inv, X), 0.0))
            alpha = X @ self.w + beta * width
        return self._assort(alpha, r)

    def update(self, S: ArrayLike, y: ArrayLike) -> None:
        """Store the round and refit the MLE every ``refit_every`` rounds.

        Args:
            S, y: the offered items and their one-hot feedback, as in :meth:`OFUMNLPlusPlus.update`.

        Raises:
            ValueError: as :meth:`OFUMNLPlusPlus.update` (impossible feedback is refused before
                the history is touched).
            numpy.linalg.LinAlgError: a Newton solve or the inverse Hessian was not finite.
        """
        S, y = self._check_feedback(S, y)
        if S.size:
            self.hist.add(self._X[S], y)
        if self.hist.n and self.t % self.refit_every == 0:
            self._refit()
        self._round_done()
