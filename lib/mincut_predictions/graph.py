"""The weighted graph every function of the chapter takes, validated once (:class:`WeightedGraph`).

A graph is ``edges (m, 2) int64`` (undirected, simple, no self loops, vertices ``0..n-1``) with
``weights (m,) float64 > 0``. Public functions accept either the three arrays, which they
validate, or a :class:`WeightedGraph`, which was validated when it was built; the private
functions behind them trust it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_array, check_budget, check_int

__all__ = ["WeightedGraph", "GraphLike", "validate_graph", "cut_value"]

#: bytes per vertex of the per-vertex arrays one contraction trial or exact solver
#: builds (CSR row pointers, forest, component labels, relabelling, shores): about eight
#: 8-byte arrays of length n
_BYTES_PER_VERTEX = 64.0
#: elementary operations one interpreted Python step costs (a loop iteration, a heap
#: update in networkx): the work estimates of the pure-Python loops count
#: their steps with this weight
_PYTHON_STEP = 300.0


@dataclass(frozen=True, eq=False)
class WeightedGraph:
    """An undirected simple graph with positive edge weights, checked when it is built.

    Build it as ``WeightedGraph(edges, weights, n)`` (or :func:`validate_graph`); the fields are
    read-only copies, so a graph that exists is valid and stays so.

    Attributes:
        edges: (m, 2) int64 endpoints in ``[0, n)``, no self loop, no repeated unordered pair.
        weights: (m,) float64, finite and > 0.
        n: number of vertices, >= 2.

    Raises:
        TypeError: ``n`` is not an integer; ``edges`` or ``weights`` are not arrays of numbers.
        ValueError: ``n < 2``; ``edges`` not of shape (m, 2), empty or not integral; an endpoint
            outside ``[0, n)``; a self loop; a repeated pair; ``weights`` not of shape (m,),
            non-finite or not positive.
        TooLargeError: the per-vertex arrays every algorithm builds (about 64 bytes a vertex)
            cannot fit in memory (e.g. ``n=10**12``); refused before any array is built.
    """

    edges: np.ndarray
    weights: np.ndarray
    n: int

    def __post_init__(self) -> None:
        n = check_int(self.n, "n", low=2)
        check_budget(f"WeightedGraph(n={n})", n_bytes=_BYTES_PER_VERTEX * n)
        edges = check_array(self.edges, "edges", shape=(None, 2), kind="number")
        if edges.shape[0] == 0:
            raise ValueError(
                "edges must not be empty (a graph needs at least one edge)"
            )
        if not np.issubdtype(edges.dtype, np.integer) and not np.all(
            edges == np.round(edges)
        ):
            raise ValueError("edges must hold integer vertex ids")
        edges = np.array(edges, dtype=np.int64)
        if edges.min() < 0 or edges.max() >= n:
            raise ValueError(
                f"edges has an endpoint outside [0, {n}): range [{edges.min()}, {edges.max()}]"
            )
        if np.any(edges[:, 0] == edges[:, 1]):
            raise ValueError("edges contains a self loop (u == v)")
        lo, hi = (
            np.minimum(edges[:, 0], edges[:, 1]),
            np.maximum(edges[:, 0], edges[:, 1]),
        )
        if np.unique(lo * n + hi).size != edges.shape[0]:
            raise ValueError(
                "edges contains a repeated pair; merge parallel edges by summing their weights"
            )
        weights = np.array(_check_weights(self.weights, edges.shape[0]))
        edges.flags.writeable = False
        weights.flags.writeable = False
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "n", n)

    @property
    def m(self) -> int:
        """Number of edges."""
        return int(self.edges.shape[0])


#: what a public function accepts as its graph: a :class:`WeightedGraph`, or the
#: ``edges`` array followed by ``weights`` and ``n``
GraphLike = Union[WeightedGraph, ArrayLike]


def validate_graph(
    edges: GraphLike, weights: ArrayLike | None = None, n: int | None = None
) -> WeightedGraph:
    """The graph as a :class:`WeightedGraph`: ``edges`` itself if it is one, else built and checked.

    Args:
        edges: a :class:`WeightedGraph` (then ``weights`` and ``n`` are omitted), or (m, 2)
            integer endpoints.
        weights: (m,) positive edge weights (with the array form).
        n: number of vertices (with the array form).

    Returns:
        the validated :class:`WeightedGraph`.

    Raises:
        TypeError: a graph together with ``weights``/``n``, or arrays without them; as
            :class:`WeightedGraph`.
        ValueError: as :class:`WeightedGraph`.
    """
    if isinstance(edges, WeightedGraph):
        if weights is not None or n is not None:
            raise TypeError(
                "pass a WeightedGraph alone, or edges, weights and n; not both"
            )
        return edges
    if weights is None or n is None:
        raise TypeError("weights and n are required unless edges is a WeightedGraph")
    return WeightedGraph(edges, weights, n)


def _check_weights(
    weights: Any, m: int | None = None, name: str = "weights"
) -> np.ndarray:
    """``weights`` as (m,) float64 edge weights, finite and > 0, at least one (``m`` free when
    None): a graph without edges is refused everywhere."""
    return check_array(
        weights, name, shape=(m,), dtype=np.float64, min_size=1, low=0, low_open=True
    )


def _check_side(
    side: Any, n: int, *, proper: bool = True, name: str = "side"
) -> np.ndarray:
    """``side`` as an (n,) bool shore of a cut; with ``proper``, both shores non-empty."""
    side = check_array(side, name, kind="bool", shape=(n,))
    if proper and (side.all() or not side.any()):
        raise ValueError(f"{name} must split the vertices into two non-empty sets")
    return side


def _graph_and_side(
    edges: GraphLike, weights: ArrayLike | None, side: Any, *, proper: bool = True
) -> tuple[WeightedGraph, np.ndarray]:
    """A graph and a shore of one of its cuts, the vertex count read from ``side`` for arrays."""
    if isinstance(edges, WeightedGraph):
        g = validate_graph(edges, weights)
        return g, _check_side(side, g.n, proper=proper)
    side = check_array(side, "side", kind="bool", ndim=1)
    top = check_array(edges, "edges", shape=(None, 2), kind="number")
    if top.size and top.max() >= side.shape[0]:
        raise ValueError(
            f"side must have one entry per vertex: edges reach vertex {int(top.max())}, "
            f"side has shape {side.shape}"
        )
    g = validate_graph(edges, weights, max(side.shape[0], 2))
    return g, _check_side(side, g.n, proper=proper)


def _check_predictions(p: Any, m: int) -> np.ndarray:
    """``p`` as (m,) float64 predictions in [0, 1], one per edge; required (not None)."""
    if p is None:
        raise ValueError("p (the predictions) is required for a boosted method")
    return check_array(p, "p", shape=(m,), dtype=np.float64, low=0.0, high=1.0)


def cut_value(
    edges: GraphLike, weights: ArrayLike | None = None, side: ArrayLike | None = None
) -> float:
    """Weight ``w(delta(S))`` of the edges with exactly one end in ``side`` (Sec. 2).

    Args:
        edges: a :class:`WeightedGraph`, or (m, 2) endpoints (then ``weights`` too).
        weights: (m,) positive edge weights (array form).
        side: (n,) bool, the shore ``S`` (any subset; the empty set and ``V`` give 0).

    Returns:
        the cut value, a float.

    Raises:
        ValueError: ``side`` is not 1-D or has fewer entries than the graph has vertices (or,
            for a :class:`WeightedGraph`, not exactly ``n``); a bad graph.
        TypeError: ``side`` is not boolean.
    """
    g, side = _graph_and_side(edges, weights, side, proper=False)
    return _cut_value(g.edges, g.weights, side)


def _cut_value(edges: np.ndarray, weights: np.ndarray, side: np.ndarray) -> float:
    """``w(delta(S)) = sum_{uv in E, [u in S] != [v in S]} w_uv``."""
    return float(weights[side[edges[:, 0]] != side[edges[:, 1]]].sum())


def _side_of_zero(labels: np.ndarray) -> np.ndarray:
    """(R, n) labels -> (R, n) bool: vertices sharing vertex 0's label."""
    return labels == labels[:, :1]


def _components_cut(g: WeightedGraph) -> tuple[float | None, np.ndarray | None]:
    """``(0.0, component of vertex 0)`` for a disconnected graph, ``(None, None)`` otherwise."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    count, lab = connected_components(
        csr_matrix((np.ones(g.m), (g.edges[:, 0], g.edges[:, 1])), shape=(g.n, g.n)),
        directed=False,
    )
    if count == 1:
        return None, None
    return 0.0, lab == lab[0]
