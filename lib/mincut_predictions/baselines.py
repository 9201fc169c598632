"""What the paper compares against: exact minimum cuts (enumeration, Stoer–Wagner) and the
prediction-free contraction algorithms Karger–Stein and FPZ (one run each).

Plain Karger is boosted Karger without predictions and lives with it in ``method.py``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_budget, check_int, check_rng
from icml25.kernels import contraction

from .defaults import DEFAULTS
from .graph import (
    _PYTHON_STEP,
    GraphLike,
    WeightedGraph,
    _components_cut,
    _cut_value,
    validate_graph,
)

__all__ = [
    "brute_force_min_cut",
    "stoer_wagner",
    "karger_stein",
    "fpz",
    "fpz_branch_probability",
    "karger_success_bound",
]

#: the largest graph :func:`brute_force_min_cut` enumerates (2^19 bipartitions)
_BRUTE_FORCE_MAX_N = 20


#: bytes of a networkx node or edge (its dicts and tuples), for the memory
#: estimate of Stoer–Wagner
_NX_BYTES = 500.0
#: Python steps one node of the Karger–Stein / FPZ recursion costs (contraction
#: dispatch, SciPy forest, quotient, unique, bookkeeping): measured about
#: 5 ms a node on one CPU core
_STEPS_PER_RECURSION_NODE = 60000.0


# --------------------------------------------------------------------------------------
# Exact minimum cuts
# --------------------------------------------------------------------------------------


def _stoer_wagner_operations(g: WeightedGraph) -> float:
    """networkx's Stoer–Wagner: ``n - 1`` phases, each ``O((m + n) log n)`` heap steps in Python."""
    return _PYTHON_STEP * g.n * (g.m + g.n) * math.log2(g.n + 1)


def _recursive_operations(g: WeightedGraph) -> float:
    """One Karger–Stein or FPZ run: ``O(n^2 log n)`` contracted edges, each step a forest on its
    quotient (``(m + n^2) log m log n``), plus the Python overhead of about
    ``(n / brute_force_size)^2`` recursion nodes (the leaves of a depth-``2 log2 n`` binary tree)."""
    nodes = 2.0 * (g.n / DEFAULTS.brute_force_size) ** 2
    return (g.m + g.n**2) * math.log2(g.m + 1) * max(
        1.0, math.log2(g.n)
    ) + _PYTHON_STEP * _STEPS_PER_RECURSION_NODE * nodes


def brute_force_min_cut(
    edges: GraphLike, weights: ArrayLike | None = None, n: int | None = None
) -> tuple[float, np.ndarray]:
    """Exact minimum cut by enumerating all ``2^(n-1) - 1`` bipartitions (``n <= 20``).

    Args:
        edges, weights, n: the graph (a :class:`WeightedGraph`, or the three arrays).

    Returns:
        ``(cut_value, side)`` with ``side (n,) bool`` containing vertex 0.

    Raises:
        ValueError / TypeError: as :func:`validate_graph`; ``ValueError`` for ``n > 20``.
    """
    g = validate_graph(edges, weights, n)
    if g.n > _BRUTE_FORCE_MAX_N:
        raise ValueError(
            f"brute force enumerates 2^(n-1) cuts; n must be <= {_BRUTE_FORCE_MAX_N}, got {g.n}"
        )
    return _brute_force(g.edges, g.weights, g.n)


def _brute_force(
    edges: np.ndarray, weights: np.ndarray, n: int
) -> tuple[float, np.ndarray]:
    """``min_S w(delta(S))`` over every ``S`` containing vertex 0, ``S != V``."""
    masks = np.arange(2 ** (n - 1), dtype=np.int64)  # bit j: vertex j+1 joins vertex 0
    bits = np.ones((masks.size, n), dtype=bool)
    bits[:, 1:] = (masks[:, None] >> np.arange(n - 1)) & 1 == 1
    bits = bits[~bits.all(axis=1)]
    values = (bits[:, edges[:, 0]] != bits[:, edges[:, 1]]).astype(np.float64) @ weights
    best = int(np.argmin(values))
    return float(values[best]), bits[best].copy()


def stoer_wagner(
    edges: GraphLike, weights: ArrayLike | None = None, n: int | None = None
) -> tuple[float, np.ndarray]:
    """Exact global minimum cut with ``networkx.stoer_wagner`` (the reference optimum).

    A disconnected graph has minimum cut 0; the answer is then the component of vertex 0 (found
    with SciPy, before networkx is called). The solver's partition is checked before use: both
    shores non-empty, and its value, recomputed from the edges, equal to the value networkx reports.

    Args:
        edges, weights, n: the graph (a :class:`WeightedGraph`, or the three arrays).

    Returns:
        ``(cut_value, side)``: float, (n,) bool containing vertex 0.

    Raises:
        ValueError / TypeError: as :func:`validate_graph`.
        TooLargeError: the networkx graph (about 500 bytes a vertex or edge) cannot fit in memory,
            or its ``n`` phases of ``O((m + n) log n)`` Python steps would take hours (e.g.
            ``n=10**9``); nothing is run.
        RuntimeError: networkx returned a partition that is not a cut of the reported value.
    """
    import networkx as nx

    g = validate_graph(edges, weights, n)
    check_budget(
        f"stoer_wagner(n={g.n}, m={g.m})",
        n_bytes=_NX_BYTES * (g.n + g.m),
        n_operations=_stoer_wagner_operations(g),
    )
    zero, zero_side = _components_cut(g)
    if zero is not None:
        return zero, zero_side
    graph = nx.Graph()
    graph.add_nodes_from(range(g.n))
    graph.add_weighted_edges_from(
        zip(g.edges[:, 0].tolist(), g.edges[:, 1].tolist(), g.weights.tolist())
    )
    value, (part_a, part_b) = nx.stoer_wagner(graph)
    side = np.zeros(g.n, dtype=bool)
    side[list(part_a if 0 in part_a else part_b)] = True
    exact = _cut_value(g.edges, g.weights, side)
    if side.all() or not math.isclose(exact, float(value), rel_tol=1e-9, abs_tol=1e-12):
        raise RuntimeError(
            f"networkx.stoer_wagner returned a partition of value {exact!r}, not the "
            f"reported {value!r}"
        )
    return exact, side


# --------------------------------------------------------------------------------------
# Karger's bound, Karger–Stein and FPZ branching contraction
# --------------------------------------------------------------------------------------


def karger_success_bound(n: int) -> float:
    """Karger's lower bound ``2 / (n (n - 1))`` on one trial returning a fixed minimum cut (Sec. 2).

    Raises:
        TypeError: ``n`` not an integer. ValueError: ``n < 2``.
    """
    n = check_int(n, "n", low=2)
    return 2.0 / (n * (n - 1))


def _contract_once(edges, weights, n, stop_at, rng, contract_w=None):
    """One contraction of (edges, weights) down to ``stop_at`` super-vertices; returns
    (quotient edges, quotient weights, r, group (n,) -> super-vertex id)."""
    if n <= stop_at:
        return edges, weights, n, np.arange(n)
    cw = weights if contract_w is None else contract_w
    seed = int(rng.integers(0, 2**63))
    _, labels = contraction.contraction_trials(
        edges, weights, n, 1, seed, [(cw / cw.max(), stop_at)]
    )
    return _quotient(edges, weights, labels[0])


def _quotient(edges, weights, labels):
    """The graph with every super-vertex (same label) merged, parallel edges summed."""
    _, group = np.unique(labels, return_inverse=True)
    r = int(group.max()) + 1
    a, b = group[edges[:, 0]], group[edges[:, 1]]
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    pair, inverse = np.unique(lo * r + hi, return_inverse=True)
    qw = np.bincount(inverse, weights=weights[keep], minlength=pair.size)
    qedges = np.stack([pair // r, pair % r], axis=1)
    return qedges, qw, r, group


def _small_exact(edges, weights, r):
    """Exact minimum cut of a small quotient graph (0 when it has no edge left)."""
    if edges.shape[0] == 0:  # disconnected quotient: any component split costs 0
        side = np.zeros(r, dtype=bool)
        side[0] = True
        return 0.0, side
    return _brute_force(edges, weights, r)


def _karger_stein_rec(edges, weights, r, rng):
    """Contract to ``ceil(1 + r / sqrt 2)`` twice independently and recurse on both (Karger–Stein)."""
    if r <= DEFAULTS.brute_force_size or edges.shape[0] == 0:
        return _small_exact(edges, weights, r)
    target = int(math.ceil(1 + r / math.sqrt(2)))
    best = (math.inf, None)
    for _ in range(2):
        qe, qw, qr, group = _contract_once(edges, weights, r, target, rng)
        value, qside = _karger_stein_rec(qe, qw, qr, rng)
        if value < best[0]:
            best = (value, qside[group])
    return best


def _finish(g: WeightedGraph, side: np.ndarray) -> tuple[float, np.ndarray]:
    """The shore containing vertex 0 and its value under the original weights."""
    side = side if side[0] else ~side
    return _cut_value(g.edges, g.weights, side), side


def karger_stein(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    *,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """One run of Karger–Stein recursive contraction (Karger & Stein 1996).

    Contract to ``ceil(1 + r / sqrt 2)`` super-vertices twice independently and recurse on both;
    graphs with at most ``DEFAULTS.brute_force_size`` super-vertices are solved exactly. Finds a
    given minimum cut with probability ``Omega(1 / log n)`` in ``O(n^2 log n)`` time.

    Args:
        edges, weights, n: the graph; rng: ``numpy.random.Generator`` (keyword, required).

    Returns:
        ``(cut_value, side)``: float, (n,) bool containing vertex 0.

    Raises:
        ValueError / TypeError: as :func:`validate_graph`; ``TypeError`` when rng is not a Generator.
        TooLargeError: one run would take hours (``O(n^2 log n)`` contractions; e.g. ``n=10**7``).
    """
    g = validate_graph(edges, weights, n)
    rng = check_rng(rng)
    check_budget(
        f"karger_stein(n={g.n}, m={g.m})", n_operations=_recursive_operations(g)
    )
    _, side = _karger_stein_rec(g.edges, g.weights, g.n, rng)
    return _finish(g, side)


def fpz_branch_probability(r: int) -> float:
    """Probability of branching at ``r`` super-vertices in our FPZ reconstruction.

    Chosen so that ``(1 + q_r)(1 - 2/r) = 1``: the expected number of branches in which a fixed
    minimum cut survives one contraction step is at least 1 (Fox, Panigrahi & Zhang 2019's
    branching-contraction principle; the exact schedule is a reconstruction). Capped at 1.

    Args:
        r: super-vertices, an integer >= 2.

    Returns:
        ``q_r = min(1, 2 / (r - 2))`` (1 for ``r <= 4``).

    Raises:
        TypeError: ``r`` not an integer. ValueError: ``r < 2``.
    """
    return _fpz_branch_probability(check_int(r, "r", low=2))


def _fpz_branch_probability(r: int) -> float:
    """``q_r = min(1, 2 / (r - 2))``, 1 for ``r <= 4``: ``(1 + q_r)(1 - 2/r) >= 1``."""
    return 1.0 if r <= 4 else min(1.0, 2.0 / (r - 2))


def _fpz_rec(edges, weights, r, rng):
    """Walk down one edge at a time; at the first size that branches, split into two copies."""
    if r <= DEFAULTS.brute_force_size or edges.shape[0] == 0:
        return _small_exact(edges, weights, r)
    # walk down the sizes; at the first branching size s, contract to s and split in two
    s = r
    while s > DEFAULTS.brute_force_size and rng.random() >= _fpz_branch_probability(s):
        s -= 1
    # no branching on the way down: one path to the leaf
    if s <= DEFAULTS.brute_force_size:
        qe, qw, qr, group = _contract_once(
            edges, weights, r, DEFAULTS.brute_force_size, rng
        )
        value, qside = _small_exact(qe, qw, qr)
        return value, qside[group]
    qe, qw, qr, group = _contract_once(edges, weights, r, s, rng)
    best = (math.inf, None)
    # each copy contracts one more edge independently, then continues
    for _ in range(2):
        ce, cw, cr, cgroup = _contract_once(qe, qw, qr, qr - 1, rng)
        value, cside = _fpz_rec(ce, cw, cr, rng)
        if value < best[0]:
            best = (value, cside[cgroup][group])
    return best


def fpz(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    *,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """One run of FPZ branching contraction (Fox, Panigrahi & Zhang, SODA 2019), reconstructed.

    Contract one edge at a time; at ``r`` super-vertices the process first splits into two
    independent copies with probability :func:`fpz_branch_probability`. Leaves with at most
    ``DEFAULTS.brute_force_size`` super-vertices are solved exactly; the best leaf is returned.

    Args:
        edges, weights, n: the graph; rng: ``numpy.random.Generator`` (keyword, required).

    Returns:
        ``(cut_value, side)``: float, (n,) bool containing vertex 0.

    Raises:
        ValueError / TypeError: as :func:`karger_stein`.
        TooLargeError: as :func:`karger_stein`.
    """
    g = validate_graph(edges, weights, n)
    rng = check_rng(rng)
    check_budget(f"fpz(n={g.n}, m={g.m})", n_operations=_recursive_operations(g))
    _, side = _fpz_rec(g.edges, g.weights, g.n, rng)
    return _finish(g, side)
