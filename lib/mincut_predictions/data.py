"""The instance families of the paper's experiments (Sec. 5) and a loader for networkx graphs.

Matching graphs (first set), the successive LP relaxations of a TSP cutting-plane loop on a
cycles graph (second set), families of jittered instances (learning predictions), and
:func:`from_networkx` for the graphs shipped with networkx (third set).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_array, check_budget, check_int, check_real, check_rng

from .baselines import _stoer_wagner_operations, stoer_wagner
from .graph import GraphLike, validate_graph

__all__ = [
    "matching_graph",
    "cycles_graph",
    "TSPInstance",
    "tsp_lp_instances",
    "jitter_instances",
    "from_networkx",
]


def _accumulate(pairs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Multiset of (u, v) pairs -> simple graph with multiplicities as weights."""
    lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    keys, counts = np.unique(lo * n + hi, return_counts=True)
    return np.stack([keys // n, keys % n], axis=1).astype(np.int64), counts.astype(
        np.float64
    )


def matching_graph(
    n: int, k: int, t: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Union of ``k`` random perfect matchings between halves ``{0..n/2-1}`` and ``{n/2..n-1}``.

    Multiplicities become weights; then ``t`` distinct neighbours of vertex 0 lose one unit of
    weight (an edge at weight 0 disappears), so vertex 0 has weighted degree ``k - t`` and the
    singleton ``{0}`` is (almost surely, for ``t >= 1``) the minimum cut. Official ``build_matching_graph``.
    The paper's sizes are ``DEFAULTS.matching`` (n = 600, k = 100, t = 10).

    Returns:
        ``(edges, weights)``: (m, 2) int64, (m,) float64.

    Raises:
        ValueError: ``n`` odd or < 4, ``k < 1``, ``t < 0`` or more than vertex 0's distinct neighbours.
        TypeError: non-integer sizes; ``rng`` not a Generator.
        TooLargeError: the ``n k / 2`` matched pairs cannot fit in memory.
    """
    rng = check_rng(rng)
    n = check_int(n, "n", low=4)
    if n % 2:
        raise ValueError(f"n must be an even integer >= 4, got {n}")
    k = check_int(k, "k", low=1)
    t = check_int(t, "t", low=0)
    check_budget(f"matching_graph(n={n}, k={k})", n_bytes=n / 2 * k * 64.0)
    half = n // 2
    left = np.tile(np.arange(half), k)
    right = np.concatenate([rng.permutation(half) + half for _ in range(k)])
    edges, weights = _accumulate(np.stack([left, right], axis=1), n)
    at_zero = np.flatnonzero(edges[:, 0] == 0)
    if t > at_zero.size:
        raise ValueError(
            f"t must lie in [0, {at_zero.size}] (distinct neighbours of vertex 0), got {t}"
        )
    chosen = rng.choice(at_zero, size=t, replace=False)
    weights[chosen] -= 1
    keep = weights > 0
    return edges[keep], weights[keep]


def cycles_graph(
    n: int, k: int, r: int, eps: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The official TSP test graph: sides ``S = {0..r-1}``, ``T = {r..n-1}``.

    Edges (multiplicities as weights): ``k`` random Hamiltonian cycles on ``S``, ``k`` on ``T``,
    ``k`` on all of V crossing ``(S, T)`` exactly twice, and ``floor(eps k)`` random cycles of
    random length in ``[3, |side|)`` inside a random side. Difference from the official script: its
    extra cycles draw vertices with replacement (possible self loops); here they are distinct.

    Returns:
        ``(edges, weights)``: (m, 2) int64, (m,) float64.

    Raises:
        ValueError: ``r < 4``, ``n - r < 4``, ``k < 1`` or ``eps < 0``.
        TypeError: non-integer sizes; ``rng`` not a Generator.
        TooLargeError: the ``(3 + eps) k n`` cycle edges cannot fit in memory.
    """
    rng = check_rng(rng)
    n = check_int(n, "n", low=8)
    r = check_int(r, "r", low=4, high=n - 4)
    k = check_int(k, "k", low=1)
    eps = check_real(eps, "eps", low=0.0)
    check_budget(
        f"cycles_graph(n={n}, k={k}, eps={eps})", n_bytes=(3.0 + eps) * k * n * 64.0
    )
    S, T = np.arange(r), np.arange(r, n)

    def cycle(vertices):
        perm = rng.permutation(vertices)
        return np.stack([perm, np.roll(perm, -1)], axis=1)

    parts = []
    for _ in range(k):
        parts += [cycle(S), cycle(T)]
        perm = np.concatenate([rng.permutation(S), rng.permutation(T)])
        parts.append(np.stack([perm, np.roll(perm, -1)], axis=1))
    for _ in range(int(eps * k)):
        side = S if rng.random() < 0.5 else T
        length = int(rng.integers(3, side.size))
        parts.append(cycle(rng.choice(side, size=length, replace=False)))
    return _accumulate(np.concatenate(parts), n)


@dataclass(frozen=True)
class TSPInstance:
    """One round of the subtour-elimination loop: the LP solution's support graph.

    Attributes:
        edges: (m', 2) int64 support edges; x: (m',) float64 LP values in (0, 1] (the weights);
        edge_index: (m',) int64 positions of the support edges in the base graph;
        n: vertices; min_cut: Stoer–Wagner value; side: (n,) bool its shore (vertex 0 side).
    """

    edges: np.ndarray
    x: np.ndarray
    edge_index: np.ndarray
    n: int
    min_cut: float
    side: np.ndarray


#: how far an LP solution may miss a constraint (HiGHS' primal tolerance is 1e-7)
_LP_FEASIBILITY_TOL = 1e-6


def _check_lp_solution(
    res: Any, A_eq: Any, b_eq: np.ndarray, A_ub: Any, b_ub: np.ndarray | None
) -> np.ndarray:
    """The solver's ``x`` if it solved and satisfies ``0 <= x <= 1``, ``A_eq x = b_eq`` and
    ``A_ub x <= b_ub`` up to :data:`_LP_FEASIBILITY_TOL` (relative to the right-hand side)."""
    if res.status != 0 or res.x is None:
        raise ValueError(f"the LP failed: {res.message}")
    x = np.asarray(res.x, dtype=np.float64)
    tol = _LP_FEASIBILITY_TOL
    if not np.all(np.isfinite(x)) or x.min() < -tol or x.max() > 1 + tol:
        raise ValueError("the LP solver returned x outside the bounds [0, 1]")
    eq_gap = np.abs(A_eq @ x - b_eq)
    if np.any(eq_gap > tol * np.maximum(1.0, np.abs(b_eq))):
        raise ValueError(
            f"the LP solver returned an infeasible x: a degree constraint is off by {eq_gap.max():.3g}"
        )
    if A_ub is not None:
        excess = A_ub @ x - b_ub
        if np.any(excess > tol * np.maximum(1.0, np.abs(b_ub))):
            raise ValueError(
                f"the LP solver returned an infeasible x: a subtour constraint is exceeded by "
                f"{excess.max():.3g}"
            )
    return x


def tsp_lp_instances(
    edges: GraphLike,
    cost: ArrayLike | None = None,
    n: int | None = None,
    max_rounds: int = 20,
    tol: float = 1e-9,
) -> list[TSPInstance]:
    """The successive LP relaxations of a TSP cutting-plane loop (official ``run_with_subtour_constraint``).

    Solve ``min c.x`` s.t. ``x(delta(v)) = 2`` for every vertex, ``0 <= x <= 1``, with
    ``scipy.optimize.linprog(method="highs")``; check the solution is feasible; take the support
    graph, find its minimum cut ``(S, V \\ S)`` with Stoer–Wagner, add the subtour constraints
    ``x(E(S)) <= |S| - 1`` and ``x(E(V \\ S)) <= |V \\ S| - 1`` (sides of size >= 2), and repeat
    until the minimum cut is >= 2 or ``max_rounds`` rounds. The official code uses Gurobi's
    barrier method; at degenerate optima HiGHS may return a different vertex, hence different
    supports.

    Args:
        edges: (m, 2) base graph (or a :class:`WeightedGraph` whose weights are the costs);
        cost: (m,) float64 > 0 objective (the official code uses the multiplicities of
        :func:`cycles_graph`); n: vertices; max_rounds >= 1; tol >= 0: support cutoff.

    Returns:
        One :class:`TSPInstance` per round (a disconnected support has ``min_cut = 0``).

    Raises:
        ValueError: bad graph, ``max_rounds < 1``, or an infeasible/failed LP (a solution that
            misses a constraint by more than 1e-6 counts as failed).
        TooLargeError: ``max_rounds`` rounds of an LP over ``m`` edges and a Stoer–Wagner cut
            could take hours (e.g. ``max_rounds=10**12``); nothing is solved.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    g = validate_graph(edges, cost, n)
    max_rounds = check_int(max_rounds, "max_rounds", low=1)
    tol = check_real(tol, "tol", low=0.0)
    # a round: a sparse LP with m columns and n + 2 rounds rows (simplex pivots ~ m
    # (n + m) flops, a loose bound) and a Stoer-Wagner cut of its support
    check_budget(
        f"tsp_lp_instances(max_rounds={max_rounds}, n={g.n}, m={g.m})",
        n_operations=max_rounds
        * (g.m * (g.n + g.m + 2.0 * max_rounds) + _stoer_wagner_operations(g)),
    )
    edges, cost, n = g.edges, g.weights, g.n
    m = g.m
    cols = np.concatenate([np.arange(m), np.arange(m)])
    A_eq = coo_matrix(
        (np.ones(2 * m), (np.concatenate([edges[:, 0], edges[:, 1]]), cols)),
        shape=(n, m),
    ).tocsr()
    b_eq = np.full(n, 2.0)
    rows, rhs = [], []
    out: list[TSPInstance] = []
    for _ in range(max_rounds):
        A_ub = vstack(rows).tocsr() if rows else None
        b_ub = np.array(rhs) if rows else None
        res = linprog(
            cost,
            A_ub=A_ub,
            b_ub=b_ub,
            A_eq=A_eq,
            b_eq=b_eq,
            bounds=(0, 1),
            method="highs",
        )
        x = np.clip(_check_lp_solution(res, A_eq, b_eq, A_ub, b_ub), 0.0, 1.0)
        support = np.flatnonzero(x > tol)
        value, side = stoer_wagner(edges[support], x[support], n)
        out.append(
            TSPInstance(
                edges=edges[support],
                x=x[support],
                edge_index=support,
                n=n,
                min_cut=value,
                side=side,
            )
        )
        if value >= 2 - 1e-7:
            break
        for shore in (side, ~side):
            if shore.sum() >= 2:
                inside = shore[edges[:, 0]] & shore[edges[:, 1]]
                rows.append(coo_matrix(inside.astype(np.float64)[None, :]))
                rhs.append(float(shore.sum() - 1))
    return out


def jitter_instances(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    n_instances: int | None = None,
    noise: float | None = None,
    *,
    rng: np.random.Generator,
    weak_vertices: Sequence[int] = (),
    weak_factor: float = 0.75,
) -> list[tuple[np.ndarray, np.ndarray, np.float64]]:
    """A family of related instances: the same edges, weights ``w (1 + noise U[-1, 1])``.

    When ``weak_vertices`` is given, instance ``i`` also weakens ``weak_vertices[i % len]`` (round
    robin) by scaling its incident edges by ``weak_factor``, so the minimum cut moves between a few
    places across the family (the situation where predictions must be learned from several past
    instances).

    Args:
        edges, weights, n: the graph; n_instances: instances (>= 1, required); noise: in [0, 1)
        (required); rng: ``numpy.random.Generator`` (keyword, required); weak_vertices: vertices
        in ``[0, n)``; weak_factor: in (0, 1].

    Returns:
        ``n_instances`` triples ``(weights_i, side_i, opt_i)`` with the Stoer–Wagner cut of each.

    Raises:
        ValueError: bad graph, ``n_instances < 1``, ``noise`` outside [0, 1), a weak vertex outside
            ``[0, n)``, ``weak_factor`` outside (0, 1].
        TooLargeError: ``n_instances`` instances of ``m`` weights cannot fit in memory, or their
            Stoer–Wagner cuts would take hours.
    """
    g = validate_graph(edges, weights, n)
    rng = check_rng(rng)
    n_instances = check_int(n_instances, "n_instances", low=1)
    noise = check_real(noise, "noise", low=0.0, high=1.0, high_open=True)
    weak = check_array(
        weak_vertices, "weak_vertices", ndim=1, kind="int", low=0, high=g.n - 1
    )
    weak_factor = check_real(
        weak_factor, "weak_factor", low=0.0, high=1.0, low_open=True
    )
    check_budget(
        f"jitter_instances(n_instances={n_instances}, n={g.n}, m={g.m})",
        n_bytes=n_instances * (8.0 * g.m + g.n),
        n_operations=n_instances * _stoer_wagner_operations(g),
    )
    edges, weights, n = g.edges, g.weights, g.n
    out = []
    for i in range(n_instances):
        w = weights * (1.0 + noise * rng.uniform(-1.0, 1.0, size=weights.size))
        if weak.size:
            v = weak[i % weak.size]
            w = np.where((edges[:, 0] == v) | (edges[:, 1] == v), w * weak_factor, w)
        value, side = stoer_wagner(edges, w, n)
        out.append((w, side, np.float64(value)))
    return out


def from_networkx(
    graph: Any, weight: str = "weight"
) -> tuple[np.ndarray, np.ndarray, int, list]:
    """A ``networkx.Graph`` as ``(edges, weights, n, nodes)``; missing weights count 1; loops dropped.

    Args:
        graph: an undirected simple ``networkx.Graph`` (not a DiGraph or MultiGraph); weight:
            the edge attribute holding the weight (a real number).

    Returns:
        ``(edges (m, 2) int64, weights (m,) float64, n, nodes)`` with ``nodes[i]`` the networkx
        node that became vertex ``i``.

    Raises:
        TypeError: ``graph`` is not a ``networkx.Graph``, or is directed or a multigraph; an
            edge's ``weight`` attribute is not a real number.
        ValueError: an edge's weight is NaN or infinite.
    """
    import networkx as nx

    if not isinstance(graph, nx.Graph):
        raise TypeError(
            f"graph must be an undirected networkx.Graph, got {type(graph).__name__}"
        )
    if graph.is_directed() or graph.is_multigraph():
        raise TypeError(
            f"graph must be an undirected simple networkx.Graph, got a {type(graph).__name__} "
            "(use nx.Graph(graph.to_undirected()), summing parallel weights first)"
        )
    nodes = list(graph.nodes())
    index = {v: i for i, v in enumerate(nodes)}
    rows, ws = [], []
    for u, v, d in graph.edges(data=True):
        if u == v:
            continue
        rows.append((index[u], index[v]))
        ws.append(
            check_real(
                d.get(weight, 1.0), f"the {weight!r} attribute of edge ({u!r}, {v!r})"
            )
        )
    return (
        np.array(rows, dtype=np.int64).reshape(-1, 2),
        np.array(ws, dtype=np.float64),
        len(nodes),
        nodes,
    )
