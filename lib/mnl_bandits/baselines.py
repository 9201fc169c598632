"""What the paper compares against: OFU-MNL+ (Lee & Oh, NeurIPS 2024), UCB-MNL (Oh & Iyengar
2021) and TS-MNL (Oh & Iyengar 2019), with the same ``select(X, r)`` / ``update(S, y)`` API."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_int, check_positive, check_rng

from .defaults import DEFAULTS
from .method import _Base, _batch_nll, _History, _OMDBandit
from .model import _finite_result

__all__ = [
    "ofu_mnl_plus_constants",
    "ofu_mnl_plus_beta",
    "OFUMNLPlus",
    "UCBMNL",
    "TSMNL",
]


def ofu_mnl_plus_constants(
    K: int, d: int, B: float = DEFAULTS.B
) -> tuple[float, float]:
    """(eta, lam) of OFU-MNL+ (Lee & Oh 2024; authors' code): eta = (B+1) + log(K+1)/2,
    lam = 84 sqrt(2) eta d.

    Raises:
        ValueError / TypeError: K, d not integers >= 1; B not positive."""
    K, d, B = check_int(K, "K", low=1), check_int(d, "d", low=1), check_positive(B, "B")
    eta = (B + 1.0) + 0.5 * math.log(K + 1)
    return eta, 84.0 * math.sqrt(2.0) * eta * d


def ofu_mnl_plus_beta(t: int, K: int, d: int, B: float = DEFAULTS.B) -> float:
    """Confidence radius beta_t of OFU-MNL+ (Lee & Oh 2024, Thm. 1; constants of the authors'
    code, which fixes B = 1): O(B sqrt(d) log t log K).

    beta_t = sqrt(2 eta [(3 log(1+(K+1)t) + 3)(17/16 lam + 2 sqrt(lam) log(2 sqrt(1+2t))
             + 16 log^2(2 sqrt(1+2t))) + 2 + 7 sqrt(6)/6 eta d log(1 + (t+1)/(2 lam))] + 4 lam).

    Raises:
        ValueError / TypeError: t, K, d not integers >= 1; B not positive.
    """
    t = check_int(t, "t", low=1)
    eta, lam = ofu_mnl_plus_constants(K, d, B)
    lg = math.log(2.0 * math.sqrt(1.0 + 2.0 * t))
    inner = (
        (3.0 * math.log(1.0 + (K + 1) * t) + 3.0)
        * (17.0 / 16.0 * lam + 2.0 * math.sqrt(lam) * lg + 16.0 * lg * lg)
        + 2.0
        + 7.0 * math.sqrt(6.0) / 6.0 * eta * d * math.log(1.0 + (t + 1) / (2.0 * lam))
    )
    return math.sqrt(2.0 * eta * inner + 4.0 * lam * B * B)


class OFUMNLPlus(_OMDBandit):
    """OFU-MNL+ (Lee & Oh, NeurIPS 2024): OMD estimator + radius O(B sqrt(d) log t log K).

    eta = (B+1) + log(K+1)/2, lam = 84 sqrt(2) eta d, beta_t from :func:`ofu_mnl_plus_beta`
    recomputed every round (the authors' code computes it once at t = 1). Theory radius, no
    1/10 rescaling (the authors' non-uniform script uses one); ``beta_scale`` multiplies it.

    Args:
        N, K, d: items, maximum assortment size (1 <= K <= N), dimension.
        B: norm bound on w*; v0: outside-option weight; beta: fixed radius overriding beta_t.
        beta_scale: multiplier of the radius (1 = theory).

    Raises:
        ValueError / TypeError: bad sizes (K > N, ...), non-positive B/v0/beta/beta_scale.
    """

    name = "OFU-MNL+"

    def __init__(
        self,
        N: int,
        K: int,
        d: int,
        B: float = DEFAULTS.B,
        v0: float = DEFAULTS.v0,
        beta: float | None = None,
        beta_scale: float = 1.0,
    ) -> None:
        eta, lam = ofu_mnl_plus_constants(K, d, B)
        super().__init__(N, K, d, B, v0, eta, lam, beta, beta_scale)

    def beta(self, t: int) -> float:
        """beta_t of :func:`ofu_mnl_plus_beta` (grows with K)."""
        return ofu_mnl_plus_beta(t, self.K, self.d, self.B)


class _MLEBaseline(_Base):
    """Regularised MLE by L-BFGS-B over the whole history; Gram matrix V = lam I + sum x x^T."""

    def __init__(
        self,
        N: int,
        K: int,
        d: int,
        B: float = DEFAULTS.B,
        v0: float = DEFAULTS.v0,
        lam: float = 1.0,
        kappa: float | None = None,
        alpha: float | None = None,
        alpha_scale: float = 1.0,
        refit_every: int = 1,
    ) -> None:
        super().__init__(N, K, d, B, v0)
        self.lam = check_positive(lam, "lam")
        self.refit_every = check_int(refit_every, "refit_every", low=1)
        # kappa = min over the parameter ball of the MNL Hessian factor (Oh & Iyengar
        # 2021); the authors' harness uses e^{-1} / (v0 + K e)^2 for B = 1.
        self.kappa = (
            math.exp(-self.B) / (self.v0 + self.K * math.exp(self.B)) ** 2
            if kappa is None
            else check_positive(kappa, "kappa")
        )
        self.alpha_fixed = None if alpha is None else check_positive(alpha, "alpha")
        self.alpha_scale = check_positive(alpha_scale, "alpha_scale")
        self.hist = _History(self.K, self.d)
        self.w = np.zeros(self.d)
        self.V = self.lam * np.eye(self.d)
        self.V_inv = np.eye(self.d) / self.lam

    def alpha(self, t: int) -> float:
        """Radius (1 / (2 kappa)) sqrt(2 d log(1 + t/d) + 2 log t) (Oh & Iyengar 2021)."""
        if self.alpha_fixed is not None:
            return self.alpha_scale * self.alpha_fixed
        return (
            self.alpha_scale
            * (1.0 / (2.0 * self.kappa))
            * math.sqrt(2.0 * self.d * math.log(1.0 + t / self.d) + 2.0 * math.log(t))
        )

    def update(self, S: ArrayLike, y: ArrayLike) -> None:
        """Add the round to V and the history; refit the MLE (L-BFGS-B) every ``refit_every`` rounds.

        Args:
            S: the assortment returned by ``select`` (its items, in any order); y: (|S| + 1,)
                one-hot in the order of S, outside option last.

        Raises:
            ValueError: no select since the last update, bad S or other items than offered,
                y of the wrong shape, non-finite or not one-hot.
            numpy.linalg.LinAlgError: V^{-1} or the L-BFGS-B estimate was not finite (the estimate
                and V are then unchanged).
        """
        from scipy.optimize import minimize

        S, y = self._check_feedback(S, y)
        if S.size == 0:
            self._round_done()
            return
        X_S = self._X[S]
        V = self.V + X_S.T @ X_S
        self.V_inv = _finite_result(np.linalg.inv(V), "the inverse Gram matrix V^{-1}")
        self.V = V
        self.hist.add(X_S, y)
        if self.t % self.refit_every:
            self._round_done()
            return
        X, m, yy = self.hist.arrays()
        res = minimize(
            _batch_nll,
            self.w,
            args=(X, m, yy, self.v0, self.lam),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 100},
        )
        self.w = _finite_result(res.x, "the L-BFGS-B estimate of the MLE")
        self._round_done()


class UCBMNL(_MLEBaseline):
    """UCB-MNL (Oh & Iyengar, AAAI 2021): regularised MLE + radius alpha_t ||x||_{V^{-1}}.

    Args: N, K, d, B, v0; lam (ridge, 1 as in the authors' harness); kappa (default
    e^{-B}/(v0 + K e^B)^2); alpha (fixed radius) and alpha_scale; refit_every (L-BFGS-B refit
    of the MLE every this many rounds; 1 = every round as in the original).

    alpha_t = (1/(2 kappa)) sqrt(2 d log(1 + t/d) + 2 log t), kappa = e^{-B}/(v0 + K e^B)^2:
    exponentially small in B, so the radius is huge — the point of the comparison.
    Per-round cost grows with t (full-history refit).

    Raises:
        ValueError / TypeError: bad sizes, non-positive lam/kappa/alpha/alpha_scale/B/v0.
    """

    name = "UCB-MNL"

    def _select(self, X: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Assortment of the upper bounds x_i^T w_hat + alpha_t ||x_i||_{V^{-1}}."""
        width = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", X, self.V_inv, X), 0.0))
        return self._assort(X @ self.w + self.alpha(self.t) * width, r)


class TSMNL(_MLEBaseline):
    """TS-MNL (Oh & Iyengar, NeurIPS 2019) with a Gaussian approximation:
    w~ ~ N(w_hat, alpha_t^2 V^{-1}), then the assortment of the sampled utilities.

    Args:
        N, K, d, B, v0, lam, kappa, alpha, alpha_scale, refit_every: as :class:`UCBMNL`.
        rng: ``numpy.random.Generator`` for the posterior samples (required: no default stream).

    Raises:
        TypeError: rng not a ``numpy.random.Generator`` (plus the checks of UCB-MNL).
    """

    name = "TS-MNL"

    def __init__(
        self,
        N: int,
        K: int,
        d: int,
        B: float = DEFAULTS.B,
        v0: float = DEFAULTS.v0,
        lam: float = 1.0,
        kappa: float | None = None,
        alpha: float | None = None,
        alpha_scale: float = 1.0,
        refit_every: int = 1,
        *,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(N, K, d, B, v0, lam, kappa, alpha, alpha_scale, refit_every)
        self.rng = check_rng(rng, "rng")

    def _select(self, X: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Assortment of one posterior sample w~ ~ N(w_hat, alpha_t^2 V^{-1})."""
        L = np.linalg.cholesky(self.V_inv + 1e-15 * np.eye(self.d))
        w_tilde = self.w + self.alpha(self.t) * (L @ self.rng.standard_normal(self.d))
        return self._assort(X @ w_tilde, r)
