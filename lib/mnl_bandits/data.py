"""The contextual MNL bandit environment of the authors' harness (Lee & Oh 2024), redone."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import (
    check_budget,
    check_choice,
    check_int,
    check_positive,
    check_rng,
)

from .defaults import DEFAULTS
from .model import _check_assortment, _oracle, _probs, _revenue

__all__ = ["MNLBanditEnv"]


def _round_cost(N: int, d: int) -> tuple[float, float]:
    """Peak bytes and operations of one round of the environment: the (N, d) draw, its clipped
    copy and the elliptical temporaries (3 N d floats), revenues, weights and the oracle's (N,)
    arrays (~8 N floats); ~30 operations per drawn entry and ~100 N for the oracle."""
    return 8.0 * (3.0 * N * d + 8.0 * N), 30.0 * N * d + 100.0 * N


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
        rng: ``numpy.random.Generator`` (required, keyword-only; an int seed ``s`` is
            ``rng=np.random.default_rng(s)``, the same stream). Two generators are derived from
            it, one for w* and the contexts and one for the customers' choices; :meth:`reset`
            replays both, so every algorithm sees the same contexts.

    Raises:
        ValueError: K < 1, K > N, v0 <= 0, unknown reward/context.
        TypeError: non-integer sizes; rng not a Generator.
        TooLargeError: one round's contexts (N x d float64 and their temporaries) cannot fit in
            memory (checked here, before any round is drawn).
    """

    def __init__(
        self,
        N: int,
        d: int,
        K: int,
        v0: float = DEFAULTS.v0,
        reward: str = "uniform",
        context: str = "gaussian",
        *,
        rng: np.random.Generator,
    ) -> None:
        self.N = check_int(N, "N", low=1)
        self.d = check_int(d, "d", low=1)
        self.K = check_int(K, "K", low=1, high=self.N)
        self.v0 = check_positive(v0, "v0")
        self.reward = check_choice(reward, "reward", ("uniform", "nonuniform"))
        self.context = check_choice(
            context, "context", ("gaussian", "uniform", "elliptical")
        )
        rng = check_rng(rng, "rng")
        n_bytes, n_operations = _round_cost(self.N, self.d)
        check_budget(
            f"MNLBanditEnv(N={self.N}, d={self.d})",
            n_bytes=n_bytes,
            n_operations=n_operations,
        )
        self._seed_seq = (
            rng.bit_generator.seed_seq.spawn(1)[0]
            if hasattr(rng.bit_generator, "seed_seq")
            else np.random.SeedSequence(int(rng.integers(2**63)))
        )
        self.reset()

    def reset(self) -> None:
        """Replay the same w*, contexts and choice noise from the start."""
        # children built explicitly (not .spawn, which advances a
        # counter) so reset() replays
        base = self._seed_seq
        ctx_seq, choice_seq = (
            np.random.SeedSequence(base.entropy, spawn_key=base.spawn_key + (k,))
            for k in (0, 1)
        )
        self._ctx_rng = np.random.default_rng(ctx_seq)
        self._choice_rng = np.random.default_rng(choice_seq)
        s = 1.0 / math.sqrt(self.d)
        self.w_star = self._ctx_rng.uniform(-s, s, self.d)
        self.X = None
        self.r = None

    def contexts(self) -> tuple[np.ndarray, np.ndarray]:
        """Draw this round's ``(X (N, d), r (N,))``, float64."""
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

    def step(self, S: ArrayLike) -> tuple[np.ndarray, float]:
        """Offer S (1-D distinct int indices, at most K); returns (y one-hot (|S|+1,), outside
        option last; expected revenue R(S) under w*).

        Raises:
            ValueError: called before :meth:`contexts`, or a bad assortment.
        """
        if self.X is None:
            raise ValueError("step() called before contexts()")
        S = _check_assortment(S, self.N, self.K)
        p = _probs(self.X[S], self.w_star, self.v0)
        y = np.zeros(S.size + 1)
        y[self._choice_rng.choice(S.size + 1, p=p)] = 1.0
        return y, _revenue(self.true_weights(), self.r, S, self.v0)

    def opt_revenue(self) -> float:
        """Revenue of the optimal assortment of the current round under w* (the kernel's oracle)."""
        return _oracle(self.true_weights(), self.r, self.K, self.v0)[1]
