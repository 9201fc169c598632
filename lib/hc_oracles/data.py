"""Problem generators: the hierarchical stochastic block model and searched hard instances.

``hsbm`` plants a balanced tree on ``n = 2^depth`` leaves and draws each weight as the mean of
``n_samples`` Bernoulli draws with probability ``q0 decay^(h - 1)``, ``h = log2 |T[u v v]|`` the
height of the pair's LCA. The planted tree is optimal only *in expectation* (Cohen-Addad et al.);
for one sparse sample (``n_samples = 1``) it is far from optimal for the realised graph, so the
chapter uses dense, multi-sample weights and compares with the best tree found.
"""

from __future__ import annotations

import numpy as np

from icml25.checks import (
    check_budget,
    check_int,
    check_probability,
    check_real,
    check_rng,
)

from ._checks import _check_weights
from .baselines import _linkage
from .trees import Tree, _cost_and_revenue, _optimal_split, balanced_tree

#: the most Bernoulli draws per pair (NumPy's binomial needs n_samples below 2^63)
MAX_SAMPLES = 2**31 - 1

__all__ = ["hsbm", "random_graph", "hard_instance_search", "linkage_gap"]


def hsbm(
    depth: int, q0: float, decay: float, n_samples: int, rng: np.random.Generator
) -> tuple[np.ndarray, Tree]:
    """A hierarchical SBM on a planted balanced tree (``n = 2^depth``).

    Args:
        depth: levels of the planted tree, 2..14.
        q0: edge probability of sibling leaves (LCA height 1), in [0, 1].
        decay: factor per level up, in (0, 1].
        n_samples: Bernoulli draws averaged per pair (1: a 0/1 graph; large: near the mean),
            1..2^31 - 1.
        rng: generator of the draws.

    Returns:
        ``(W, planted)``: (n, n) float64 symmetric weights in [0, 1] with a zero diagonal, and the
        planted :class:`Tree`.

    Raises:
        ValueError: a size or probability out of range. TypeError: ``rng`` not a Generator.
        TooLargeError: the (n, n) temporaries (about ``48 n^2`` bytes: 13 GB at depth 14) do not fit.
    """
    depth = check_int(depth, "depth", low=2, high=14)
    q0 = check_probability(q0, "q0")
    decay = check_real(decay, "decay", low=0.0, low_open=True, high=1.0)
    n_samples = check_int(n_samples, "n_samples", low=1, high=MAX_SAMPLES)
    rng = check_rng(rng)
    n = 2**depth
    check_budget(f"hsbm(depth={depth})", n_bytes=48.0 * n * n)
    planted = balanced_tree(n)
    h = np.log2(planted.lca_size_matrix()).round().astype(np.int64)
    q = q0 * decay ** np.maximum(h - 1, 0)
    iu = np.triu_indices(n, 1)
    W = np.zeros((n, n))
    W[iu] = rng.binomial(n_samples, q[iu]) / n_samples
    return W + W.T, planted


def random_graph(n: int, rng: np.random.Generator, density: float = 1.0) -> np.ndarray:
    """Uniform(0, 1) weights on each pair kept with probability ``density`` (symmetric, zero diagonal).

    Raises:
        ValueError: ``n < 2`` or ``density`` outside [0, 1]. TypeError: ``rng`` not a Generator.
        TooLargeError: the (n, n) weights and temporaries (about ``40 n^2`` bytes) do not fit.
    """
    n = check_int(n, "n", low=2)
    density = check_probability(density, "density")
    rng = check_rng(rng)
    check_budget(f"random_graph(n={n})", n_bytes=40.0 * n * n)
    iu = np.triu_indices(n, 1)
    W = np.zeros((n, n))
    W[iu] = rng.random(len(iu[0])) * (rng.random(len(iu[0])) < density)
    return W + W.T


def _gap(W: np.ndarray) -> float:
    """``cost(average linkage) / OPT`` (OPT from the subset DP)."""
    opt, _ = _optimal_split(W)
    return float(_cost_and_revenue(_linkage(W, "average"), W)[0] / max(opt[-1], 1e-300))


def linkage_gap(W: np.ndarray) -> float:
    """``cost_G(average linkage) / cost_G(OPT)`` for ``n <= 14`` (>= 1).

    Raises:
        ValueError: bad ``W``, ``n > 14``, or ``W`` with no positive weight (every tree costs 0,
        so the ratio is undefined).
    """
    W = _check_weights(W)
    if W.shape[0] > 14:
        raise ValueError(
            f"W has n = {W.shape[0]} vertices; linkage_gap needs the exact DP (n <= 14)"
        )
    W = np.asarray(W.todense()) if hasattr(W, "todense") else W
    if not W.max() > 0:
        raise ValueError(
            "W has no positive weight: every tree costs 0 and the ratio to OPT is undefined"
        )
    return _gap(W)


def hard_instance_search(
    n: int, rng: np.random.Generator, n_steps: int
) -> tuple[np.ndarray, float]:
    """Hill climb on the weights for a graph where average linkage is far from OPT (``n <= 12``).

    Start from uniform weights; each step redraws one pair's weight (uniform on [0, 0.05] or [0, 1],
    continuous so that no exact ties favour one linkage order) and keeps the
    change when ``cost(average linkage) / OPT`` does not drop. Returns the best graph seen.

    Args:
        n: vertices, 4..12; rng: generator of the moves; n_steps: proposals (>= 0).

    Returns:
        ``(W, ratio)``: (n, n) float64 weights and their average-linkage ratio.

    Raises:
        ValueError: ``n`` outside 4..12 or ``n_steps < 0``. TypeError: ``rng`` not a Generator.
        TooLargeError: ``n_steps`` proposals, each an exact DP (``3^n``) and a linkage (counted
        as 10^4 operations of Python overhead), beyond the work limit.
    """
    n = check_int(n, "n", low=4, high=12)
    n_steps = check_int(n_steps, "n_steps", low=0)
    rng = check_rng(rng)
    check_budget(
        f"hard_instance_search(n={n}, n_steps={n_steps})",
        n_operations=(n_steps + 1) * (3.0**n + 1e4),
    )
    W = random_graph(n, rng)
    best = _gap(W)
    for _ in range(n_steps):
        u, v = rng.choice(n, 2, replace=False)
        old = W[u, v]
        r = rng.random()
        # continuous: no exact ties
        W[u, v] = W[v, u] = rng.random() * (0.05 if r < 0.4 else 1.0)
        if W.max() <= 0:
            W[u, v] = W[v, u] = old
            continue
        g = _gap(W)
        if g >= best:
            best = g
        else:
            W[u, v] = W[v, u] = old
    return W, best
