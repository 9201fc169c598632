"""The splitting oracle of Braverman et al. (ICML 2025), with persistent hashed noise.

A query ``(u, v, x)`` returns the vertex that splits away first in the oracle's tree ``T*``
(the paper's definition: the vertex outside the pair whose LCA is lowest). Answers may be wrong.
The paper's body (its exact noise model and constants) could not be read for this chapter, so the
noise model here is a **reconstruction** from the abstract and a reviewer's summary: an answer is
correct with probability ``p``; otherwise it is uniform over the triple (``noise="uniform"``,
error rate ``(1 - p) 2/3``) or the answer of a fixed decoy tree (``noise="decoy"``). Answers are
**persistent** by default: a function of the sorted triple and the seed (splitmix64, the contract
of :func:`icml25.kernels.triplets.oracle_answers`), so asking again does not help. With
``persistent=False`` every query is a fresh draw and :func:`amplify` (plurality of ``r``
repeats) makes the oracle exact w.h.p., which is why the persistent model is the one studied.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_bool, check_budget, check_choice, check_int, check_real
from icml25.kernels import triplets

from ._checks import _check_oracle, _check_tree, _check_triples
from .trees import Tree, random_binary_tree

__all__ = ["SplittingOracle", "AmplifiedOracle", "amplify"]


class SplittingOracle:
    """A noisy splitting oracle for the tree ``tree_star`` (reconstructed noise model, module doc).

    Args:
        tree_star: the :class:`Tree` the oracle knows (an optimal tree, or a planted one).
        p: probability that one answer is correct, in (0, 1].
        noise: ``"uniform"`` or ``"decoy"`` (wrong answers follow ``decoy_tree``).
        persistent: answers depend on the sorted triple only (default) or are fresh per query.
        seed: 64-bit seed of the hash (an integer key, not a stream of draws).
        decoy_tree: the decoy of ``noise="decoy"``; default a random tree drawn from ``seed``.

    Attributes:
        n_queries: number of triples answered so far.

    Raises:
        TypeError: ``tree_star``/``decoy_tree`` not a Tree, ``persistent`` not a bool.
        ValueError: ``p`` outside (0, 1], unknown ``noise``, negative ``seed``, size mismatch.
        TooLargeError: the (n, n) int32 LCA matrices (two with a decoy) do not fit.
    """

    def __init__(
        self,
        tree_star: Tree,
        p: float,
        noise: str = "uniform",
        persistent: bool = True,
        seed: int = 0,
        decoy_tree: Tree | None = None,
    ) -> None:
        self.tree_star = _check_tree(tree_star, "tree_star")
        self.n = tree_star.n
        self.p = check_real(p, "p", low=0.0, low_open=True, high=1.0)
        self.noise = check_choice(noise, "noise", ("uniform", "decoy"))
        self.persistent = check_bool(persistent, "persistent")
        self.seed = check_int(seed, "seed", low=0, high=2**64 - 1)
        # checked whatever the noise, so a wrong one is never ignored
        if decoy_tree is not None:
            decoy_tree = _check_tree(decoy_tree, "decoy_tree", n=self.n)
        n_matrices = 2 if self.noise == "decoy" else 1
        check_budget(
            f"SplittingOracle(tree_star with n={self.n}, noise={self.noise!r})",
            n_bytes=4.0 * n_matrices * self.n**2,
        )
        self.S = tree_star.lca_size_matrix()
        self.D = None
        if self.noise == "decoy":
            if decoy_tree is None:
                decoy_tree = random_binary_tree(
                    self.n, np.random.default_rng(self.seed)
                )
            self.D = decoy_tree.lca_size_matrix()
        self.n_queries = 0
        self._counter = 0

    def _answer(self, U: np.ndarray, V: np.ndarray, X: np.ndarray) -> np.ndarray:
        # the hash sees the sorted triple
        stacked = np.sort(np.stack([U, V, X]), axis=0)
        counter = None
        if not self.persistent:
            counter = np.arange(self._counter, self._counter + len(U), dtype=np.int64)
            self._counter += len(U)
        self.n_queries += len(U)
        return triplets.oracle_answers(
            self.S,
            stacked[0],
            stacked[1],
            stacked[2],
            triplets.noise_threshold(self.p),
            self.seed,
            self.D,
            counter,
        )

    def query_batch(self, U: Any, V: Any, X: Any) -> np.ndarray:
        """Answers to the triples ``(U[i], V[i], X[i])``: (B,) int64, each one of its triple.

        Raises:
            ValueError: shapes differ, a vertex is out of ``[0, n)`` or repeated in a triple.
        """
        return self._answer(*_check_triples(U, V, X, self.n))

    def query(self, u: int, v: int, x: int) -> int:
        """The vertex of ``(u, v, x)`` that splits away first (possibly wrong). Raises as :meth:`query_batch`."""
        return int(self.query_batch([u], [v], [x])[0])

    def error_rate(self) -> float:
        """The probability that one answer is wrong: ``(1 - p) 2/3`` under uniform noise."""
        return (1.0 - self.p) * 2.0 / 3.0 if self.noise == "uniform" else float("nan")


#: bytes per repeated answer of :meth:`AmplifiedOracle.query_batch`
#: (repeated U, V, X, answers)
_BYTES_PER_REPEAT = 64


def _repeat_budget(what: str, n_answers: float) -> None:
    check_budget(
        what, n_bytes=_BYTES_PER_REPEAT * n_answers, n_operations=100.0 * n_answers
    )


class AmplifiedOracle:
    """The plurality of ``r`` repeated answers of a base oracle (see :func:`amplify`).

    Args:
        base: a :class:`SplittingOracle` (or anything with ``query_batch`` and an integer ``n``).
        r: repeats per triple, >= 1.

    Raises:
        TypeError: ``base`` is not an oracle, ``r`` not an integer. ValueError: ``r < 1``.
        TooLargeError: one triple's ``r`` repeats do not fit.
    """

    def __init__(self, base: Any, r: int) -> None:
        self.base = _check_oracle(base, name="base")
        self.r = check_int(r, "r", low=1)
        _repeat_budget(f"AmplifiedOracle(r={self.r})", float(self.r))
        self.n = base.n

    @property
    def n_queries(self) -> int:
        """Queries made to the base oracle (``r`` per triple)."""
        return int(self.base.n_queries)

    def query_batch(self, U: Any, V: Any, X: Any) -> np.ndarray:
        """Plurality answers, (B,) int64 (ties: the smallest vertex among the tied).

        Raises:
            as the base; TooLargeError when ``B r`` repeated answers do not fit.
        """
        U, V, X = _check_triples(U, V, X, self.n)
        _repeat_budget(
            f"AmplifiedOracle.query_batch(B={len(U)}, r={self.r})",
            float(len(U)) * self.r,
        )
        ans = self.base.query_batch(
            np.repeat(U, self.r), np.repeat(V, self.r), np.repeat(X, self.r)
        ).reshape(-1, self.r)
        cand = np.sort(np.stack([U, V, X], axis=1), axis=1)  # (B, 3)
        votes = (ans[:, :, None] == cand[:, None, :]).sum(axis=1)  # (B, 3)
        return cand[np.arange(len(U)), np.argmax(votes, axis=1)]

    def query(self, u: int, v: int, x: int) -> int:
        """One plurality answer. Raises as :meth:`query_batch`."""
        return int(self.query_batch([u], [v], [x])[0])


def amplify(oracle: SplittingOracle, r: int) -> AmplifiedOracle:
    """Plurality of ``r`` repeats per triple (reconstruction of the "independent repeats" remark).

    Under uniform noise the right vertex has probability ``p + (1 - p)/3`` and each wrong one
    ``(1 - p)/3``, a margin of ``p``, so ``r = O(p^-2 log n)`` repeats make every answer exact
    w.h.p. when repeats are independent; with persistent answers the ``r`` repeats are identical
    and nothing changes.

    Args:
        oracle: a :class:`SplittingOracle` (or anything with ``query_batch`` and ``n``).
        r: repeats per triple, >= 1.

    Returns:
        an :class:`AmplifiedOracle`.

    Raises:
        TypeError: ``oracle`` is not an oracle, ``r`` not an integer. ValueError: ``r < 1``.
        TooLargeError: one triple's ``r`` repeats do not fit.
    """
    oracle = _check_oracle(oracle)
    r = check_int(r, "r", low=1)
    return AmplifiedOracle(oracle, r)
