"""What vMF-exp is compared against: Boltzmann (B-exp), truncated Boltzmann (TB-exp),
epsilon-greedy and uniform exploration (Sec. 3 of the paper)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import (
    check_budget,
    check_int,
    check_probability,
    check_real,
    check_rng,
)
from icml25.kernels import mips

from ._checks import _check_actions, _check_state
from .method import VMFExplorer, _argmax_ip, _top_m

__all__ = [
    "action_probs_boltzmann",
    "boltzmann_sample",
    "action_probs_truncated_boltzmann",
    "truncated_boltzmann_sample",
    "epsilon_greedy",
    "random_explore",
]


def action_probs_boltzmann(V: np.ndarray, X: np.ndarray, kappa: float) -> np.ndarray:
    """B-exp action probabilities softmax(kappa <V, X_i>) (Sec. 3 of the paper), stable softmax.

    P_B(a) = exp(kappa <V, X_a>) / sum_j exp(kappa <V, X_j>); the maximum logit is subtracted
    before exponentiating, so it is finite for any kappa. ``V`` is normalised; rows of ``X`` are
    used as given (unit vectors in the paper).

    Args:
        V: (d,) state, or (B, d) states.
        X: (n, d) action embeddings.
        kappa: inverse temperature >= 0 (0 = uniform over actions).

    Returns:
        (n,) float64 probabilities summing to 1 ((B, n) for a (B, d) V).

    Raises:
        ValueError: kappa negative/non-finite, V zero/non-finite, dimensions differ, X not (n, d).
        TooLargeError: the (B, n) probabilities cannot fit in memory.
    """
    kappa = check_real(kappa, "kappa", low=0.0)
    Xc = _check_actions(X).values
    Vu, single = _check_state(V, "V", Xc.shape[1])
    check_budget(
        f"action_probs_boltzmann of {Vu.shape[0]} states over n={Xc.shape[0]}",
        n_bytes=16.0 * Vu.shape[0] * Xc.shape[0],
    )
    p = _softmax_probs(Vu, Xc, kappa)
    return p[0] if single else p


def _softmax_probs(Vu: np.ndarray, X: np.ndarray, kappa: float) -> np.ndarray:
    """P_B(a | V_b) = exp(kappa <V_b, X_a> - m_b) / sum_j exp(kappa <V_b, X_j> - m_b), m_b the max logit."""
    logits = kappa * (Vu @ X.astype(np.float64, copy=False).T)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    return p


def boltzmann_sample(
    V: ArrayLike,
    X: ArrayLike | mips.ActionTable,
    kappa: float,
    rng: np.random.Generator,
) -> np.ndarray | np.int64:
    """Boltzmann exploration (B-exp): one action per state, a ~ softmax(kappa <V, X_i>).

    The O(n)-per-decision baseline of the paper (Sec. 3), through the kernel dispatcher
    :func:`icml25.kernels.mips.boltzmann_sample`: exact inverse-CDF sampling of the stable
    softmax on the CPU, the fused Gumbel-max kernel seeded from ``rng`` on a GPU. ``V`` is
    normalised; rows of ``X`` are used as given (pass a :class:`icml25.kernels.mips.ActionTable`
    to validate a large table once and keep it on the GPU across calls).

    Args:
        V: (d,) or (B, d) states.
        X: (n, d) action embeddings, or an ``ActionTable``.
        kappa: inverse temperature >= 0.
        rng: numpy Generator.

    Returns:
        (B,) int64 action indices; a numpy int64 scalar for a single (d,) state.

    Raises:
        ValueError: kappa negative/non-finite, V zero/non-finite, dimensions differ.
        TypeError: rng not a numpy Generator.
    """
    kappa = check_real(kappa, "kappa", low=0.0)
    check_rng(rng)
    table = _check_actions(X)
    Vu, single = _check_state(V, "V", table.shape[1])
    out = mips.boltzmann_sample(Vu, table, kappa, rng)
    return out[0] if single else out


def action_probs_truncated_boltzmann(
    V: np.ndarray, X: np.ndarray, kappa: float, m: int
) -> np.ndarray:
    """TB-exp probabilities: softmax(kappa <V, X_i>) restricted to the m nearest actions.

    The truncated Boltzmann baseline (Sec. 3 of the paper; Wolpertinger-style): actions outside
    the exact top-m by inner product get probability exactly 0 -- the support problem (P2) that
    vMF-exp avoids.

    Args:
        V: (d,) state. X: (n, d) actions. kappa: >= 0. m: 1 <= m <= n.

    Returns:
        (n,) float64 probabilities, zero outside the top m.

    Raises:
        ValueError: bad kappa, V, X, dimensions, or m outside [1, n].
        TypeError: m not an integer.
    """
    kappa = check_real(kappa, "kappa", low=0.0)
    Xc = _check_actions(X).values
    Vu, single = _check_state(V, "V", Xc.shape[1])
    if not single:
        raise ValueError(f"V must have shape (d,) here, got shape {np.shape(V)}")
    m = check_int(m, "m (number of neighbours)", low=1, high=Xc.shape[0])
    idx, sc = _top_m(Vu, Xc, m)
    return _truncated_softmax(idx[0], sc[0], kappa, Xc.shape[0])


def _truncated_softmax(
    idx: np.ndarray, sc: np.ndarray, kappa: float, n: int
) -> np.ndarray:
    """P_TB(a) = exp(kappa s_a) / sum_{j in top m} exp(kappa s_j) on the top m (idx, scores sc), 0 elsewhere."""
    w = np.exp(kappa * (sc - sc[0]))
    p = np.zeros(n)
    p[idx] = w / w.sum()
    return p


def truncated_boltzmann_sample(
    V: np.ndarray,
    X: np.ndarray,
    kappa: float,
    m: int,
    rng: np.random.Generator,
    *,
    index: "VMFExplorer | None" = None,
) -> np.ndarray | np.int64:
    """TB-exp: sample from softmax(kappa <V, X_i>) over the top-m neighbours of V only.

    The cheap baseline of the paper (Sec. 3): one m-nearest-neighbour query, then a softmax over
    those m candidates. Every action outside the neighbourhood has probability 0.

    Args:
        V: (d,) or (B, d) states (normalised).
        X: (n, d) actions.
        kappa: inverse temperature >= 0.
        m: neighbourhood size, 1 <= m <= n.
        rng: numpy Generator.
        index: optional :class:`VMFExplorer` built on ``X``; its (possibly approximate, e.g.
            HNSW) ``search`` finds the m neighbours instead of the exact scan.

    Returns:
        (B,) int64 indices (numpy int64 scalar for a single (d,) state).

    Raises:
        ValueError: bad kappa, V, X, dimensions, m outside [1, n], or an index over another
            action set.
        TooLargeError: the exact scan's (B, n) scores cannot fit in memory.
        TypeError: rng not a Generator; m not an integer; index not a VMFExplorer.
    """
    kappa = check_real(kappa, "kappa", low=0.0)
    check_rng(rng)
    Xc = _check_actions(X).values
    Vu, single = _check_state(V, "V", Xc.shape[1])
    m = check_int(m, "m (number of neighbours)", low=1, high=Xc.shape[0])
    if index is not None:
        if not isinstance(index, VMFExplorer):
            raise TypeError(
                f"index must be a VMFExplorer or None, got {type(index).__name__}"
            )
        if index.n != Xc.shape[0] or index.d != Xc.shape[1]:
            raise ValueError(
                f"index was built on {index.n} x {index.d} actions, X is {Xc.shape}"
            )
        idx, sc = index.search(Vu, m)
    else:
        check_budget(
            f"truncated_boltzmann_sample of {Vu.shape[0]} states over n={Xc.shape[0]}",
            n_bytes=24.0 * Vu.shape[0] * Xc.shape[0],
        )
        idx, sc = _top_m(Vu, Xc, m)
    logits = kappa * (sc - sc[:, :1])
    g = rng.gumbel(size=logits.shape)
    pick = np.argmax(logits + g, axis=1)  # Gumbel-max over the m candidates
    out = np.take_along_axis(idx, pick[:, None], axis=1)[:, 0].astype(np.int64)
    return out[0] if single else out


def epsilon_greedy(
    V: np.ndarray, X: np.ndarray, epsilon: float, rng: np.random.Generator
) -> np.ndarray | np.int64:
    """epsilon-greedy baseline: argmax_i <V, X_i> with prob. 1 - epsilon, else a uniform action.

    Args:
        V: (d,) or (B, d) states. X: (n, d) actions. epsilon: in [0, 1]. rng: numpy Generator.

    Returns:
        (B,) int64 indices (numpy int64 scalar for a (d,) state).

    Raises:
        ValueError: epsilon outside [0, 1], bad V/X/dimensions. TypeError: rng.
    """
    check_rng(rng)
    epsilon = check_probability(epsilon, "epsilon")
    Xc = _check_actions(X).values
    Vu, single = _check_state(V, "V", Xc.shape[1])
    greedy = _argmax_ip(Vu, mips.ActionTable(Xc.astype(np.float32)))
    explore = rng.random(Vu.shape[0]) < epsilon
    out = np.where(
        explore, rng.integers(0, Xc.shape[0], size=Vu.shape[0]), greedy
    ).astype(np.int64)
    return out[0] if single else out


def random_explore(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform random exploration: ``size`` action indices uniform in {0..n-1}.

    Raises:
        ValueError: n < 1 or size < 0. TooLargeError: ``size`` int64 indices cannot fit in
        memory. TypeError: rng not a Generator.
    """
    n = check_int(n, "n", low=1)
    size = check_int(size, "size", low=0)
    check_rng(rng)
    check_budget(f"random_explore(size={size})", n_bytes=8.0 * size)
    return rng.integers(0, n, size=size, dtype=np.int64)
