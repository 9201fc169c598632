"""Global minimum cut with predictions: boosted Karger, Karger–Stein, FPZ (Niaparast et al., ICML 2025).

Karger's algorithm contracts random edges (probability proportional to weight) until two
super-vertices remain; the edges between them are a cut, a minimum one with probability at least
``2 / (n (n - 1))``, so it is repeated ``O(n^2 log n)`` times. Given a prediction ``p_e in [0, 1]``
of how likely edge ``e`` is to cross the minimum cut, *boosted* Karger contracts with the weights

    w_B(e) = (1 + (B - 1)(1 - p_e)) w_e                                  (Sec. 3, boost factor B)

while more than ``threshold`` super-vertices remain and with the plain weights after that. The
cut is always valued with the original weights. The quality of ``p`` is measured against a
minimum cut ``C*`` of value ``k`` by the false-negative mass ``eta = sum_{e in C*} (1 - p_e) w_e / k``
and the false-positive mass ``rho = sum_{e not in C*} p_e w_e / k`` (Sec. 2).

Graphs are ``edges (m, 2) int64`` (undirected, simple, no self loops, vertices ``0..n-1``) with
``weights (m,) float64 > 0``; a cut is returned as ``(cut_value, side)`` with ``side (n,) bool``
the shore that contains vertex 0. One contraction trial runs as exponential clocks plus a
minimum spanning forest (``icml25.kernels.contraction``: CUDA on a GPU, NumPy/SciPy otherwise).

Reconstructed parts (the paper's body was not available when this was written; see the chapter):
the FPZ branching probabilities, the boosted-FPZ schedule (boost only above the threshold, then
plain FPZ), the success-probability bound :func:`boosted_success_bound`, and the learning
surrogate of :func:`learn_predictions_ogd`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from icml25.common import gpu_available
from icml25.kernels import contraction as _k

__all__ = [
    "MinCutDefaults",
    "DEFAULTS",
    "validate_graph",
    "cut_value",
    "brute_force_min_cut",
    "stoer_wagner",
    "boosted_weights",
    "prediction_errors",
    "inject_errors",
    "contraction_batch",
    "karger_trial",
    "boosted_karger_trial",
    "karger_stein",
    "fpz",
    "boosted_fpz",
    "karger_success_bound",
    "boosted_success_bound",
    "min_cut",
    "TrialsResult",
    "trials_until_min_cut",
    "matching_graph",
    "cycles_graph",
    "TSPInstance",
    "tsp_lp_instances",
    "predict_by_sampling",
    "jitter_instances",
    "learn_predictions_ogd",
    "from_networkx",
]

METHODS = ("karger", "boosted_karger", "karger_stein", "fpz", "boosted_fpz")


@dataclass(frozen=True)
class MinCutDefaults:
    """Defaults, as in the official experiment script.

    Attributes:
        brute_force_size: graphs with at most this many super-vertices are solved exactly by
            enumeration inside Karger–Stein and FPZ.
        rel_tol: a cut counts as minimum when ``value <= opt (1 + rel_tol) + abs_tol``.
        abs_tol: see ``rel_tol``.
        max_batch_cpu: most trials drawn at once on the CPU.
        max_batch_gpu: most trials drawn at once on the GPU (one kernel launch).
    """

    brute_force_size: int = 10
    rel_tol: float = 1e-9
    abs_tol: float = 1e-12
    max_batch_cpu: int = 64
    max_batch_gpu: int = 4096


DEFAULTS = MinCutDefaults()


# --------------------------------------------------------------------------------------------
# Validation and small utilities
# --------------------------------------------------------------------------------------------


def validate_graph(edges, weights, n) -> tuple[np.ndarray, np.ndarray, int]:
    """Check a graph and return it as ``(edges int64 (m, 2), weights float64 (m,), n int)``.

    Raises:
        TypeError: ``n`` is not an integer.
        ValueError: ``n < 2``; ``edges`` not of shape (m, 2) or not integral; an endpoint outside
            ``[0, n)``; a self loop; a repeated (unordered) pair; ``weights`` not of shape (m,),
            non-finite or not positive; no edges.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an integer number of vertices, got {type(n).__name__}")
    n = int(n)
    if n < 2:
        raise ValueError(f"n must be >= 2 (a cut needs two non-empty sides), got {n}")
    edges = np.asarray(edges)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges must have shape (m, 2), got {edges.shape}")
    if edges.shape[0] == 0:
        raise ValueError("edges must not be empty")
    if not np.issubdtype(edges.dtype, np.integer):
        if not np.all(np.isfinite(edges)) or not np.all(edges == np.round(edges)):
            raise ValueError("edges must hold integer vertex ids")
    edges = edges.astype(np.int64)
    if edges.min() < 0 or edges.max() >= n:
        raise ValueError(f"edges has an endpoint outside [0, {n}): range [{edges.min()}, {edges.max()}]")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("edges contains a self loop (u == v)")
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    if np.unique(lo * n + hi).size != edges.shape[0]:
        raise ValueError("edges contains a repeated pair; merge parallel edges by summing their weights")
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (edges.shape[0],):
        raise ValueError(f"weights must have shape ({edges.shape[0]},), got {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        raise ValueError("weights must be finite and > 0")
    return edges, weights, n


def _validate_p(p, m: int) -> np.ndarray:
    if p is None:
        raise ValueError("p (the predictions) is required for a boosted method")
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (m,):
        raise ValueError(f"p must have shape ({m},), got {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError("p must lie in [0, 1]")
    return p


def _validate_side(side, n: int) -> np.ndarray:
    side = np.asarray(side)
    if side.shape != (n,):
        raise ValueError(f"side must have shape ({n},), got {side.shape}")
    side = side.astype(bool)
    if side.all() or not side.any():
        raise ValueError("side must split the vertices into two non-empty sets")
    return side


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_boost(boost_factor, threshold, n: int) -> tuple[float, int]:
    boost_factor = float(boost_factor)
    if not math.isfinite(boost_factor) or boost_factor < 1:
        raise ValueError(f"boost_factor must be a finite number >= 1, got {boost_factor}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)):
        raise TypeError(f"threshold must be an integer, got {type(threshold).__name__}")
    threshold = int(threshold)
    if threshold < 2:
        raise ValueError(f"threshold must be >= 2 super-vertices, got {threshold}")
    return boost_factor, min(threshold, n)


def cut_value(edges: np.ndarray, weights: np.ndarray, side: np.ndarray) -> float:
    """Weight of the edges with exactly one end in ``side`` (no validation)."""
    side = np.asarray(side, dtype=bool)
    return float(weights[side[edges[:, 0]] != side[edges[:, 1]]].sum())


def _side_of_zero(labels: np.ndarray) -> np.ndarray:
    """(R, n) labels -> (R, n) bool: vertices sharing vertex 0's label."""
    return labels == labels[:, :1]


def brute_force_min_cut(edges, weights, n) -> tuple[float, np.ndarray]:
    """Exact minimum cut by enumerating all ``2^(n-1) - 1`` bipartitions (``n <= 20``).

    Returns:
        ``(cut_value, side)`` with ``side (n,) bool`` containing vertex 0.

    Raises:
        ValueError: as :func:`validate_graph`, or ``n > 20``.
    """
    edges, weights, n = validate_graph(edges, weights, n)
    if n > 20:
        raise ValueError(f"brute force enumerates 2^(n-1) cuts; n must be <= 20, got {n}")
    return _brute_force(edges, weights, n)


def _brute_force(edges, weights, n):
    masks = np.arange(2 ** (n - 1), dtype=np.int64)  # bit j: vertex j+1 joins vertex 0
    bits = np.ones((masks.size, n), dtype=bool)
    bits[:, 1:] = (masks[:, None] >> np.arange(n - 1)) & 1 == 1
    bits = bits[~bits.all(axis=1)]
    values = (bits[:, edges[:, 0]] != bits[:, edges[:, 1]]).astype(np.float64) @ weights
    best = int(np.argmin(values))
    return float(values[best]), bits[best].copy()


def from_networkx(graph, weight: str = "weight") -> tuple[np.ndarray, np.ndarray, int, list]:
    """A ``networkx.Graph`` as ``(edges, weights, n, nodes)``; missing weights count 1; loops dropped."""
    nodes = list(graph.nodes())
    index = {v: i for i, v in enumerate(nodes)}
    rows, ws = [], []
    for u, v, d in graph.edges(data=True):
        if u == v:
            continue
        rows.append((index[u], index[v]))
        ws.append(float(d.get(weight, 1.0)))
    return np.array(rows, dtype=np.int64).reshape(-1, 2), np.array(ws, dtype=np.float64), len(nodes), nodes


def stoer_wagner(edges, weights, n) -> tuple[float, np.ndarray]:
    """Exact global minimum cut with ``networkx.stoer_wagner`` (the reference optimum).

    A disconnected graph has minimum cut 0; the answer is then the component of vertex 0.

    Returns:
        ``(cut_value, side)``: float, (n,) bool containing vertex 0.

    Raises:
        ValueError: as :func:`validate_graph`.
    """
    import networkx as nx

    edges, weights, n = validate_graph(edges, weights, n)
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from(zip(edges[:, 0].tolist(), edges[:, 1].tolist(), weights.tolist()))
    if not nx.is_connected(graph):
        side = np.zeros(n, dtype=bool)
        side[list(nx.node_connected_component(graph, 0))] = True
        return 0.0, side
    value, (part_a, part_b) = nx.stoer_wagner(graph)
    side = np.zeros(n, dtype=bool)
    side[list(part_a if 0 in part_a else part_b)] = True
    return cut_value(edges, weights, side), side


# --------------------------------------------------------------------------------------------
# Predictions: boosting and error measures
# --------------------------------------------------------------------------------------------


def boosted_weights(weights: np.ndarray, p: np.ndarray, boost_factor: float) -> np.ndarray:
    """Contraction weights that favour edges predicted to lie outside the min cut.

    Implements ``w_B(e) = (1 + (B - 1)(1 - p_e)) w_e`` (Sec. 3 of Niaparast et al., ICML 2025).

    Args:
        weights: (m,) float64, positive edge weights ``w_e``.
        p: (m,) float64 in [0, 1], predicted probability that edge ``e`` crosses the min cut.
        boost_factor: ``B >= 1``; ``B = 1`` recovers plain Karger.

    Returns:
        (m,) float64 boosted weights, ``>= weights`` elementwise.

    Raises:
        ValueError: shapes differ, ``p`` outside [0, 1], ``B < 1``, or non-finite/non-positive weights.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 1:
        raise ValueError(f"weights must be one-dimensional (m,), got shape {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
        raise ValueError("weights must be finite and > 0")
    p = _validate_p(p, weights.shape[0])
    boost_factor = float(boost_factor)
    if not math.isfinite(boost_factor) or boost_factor < 1:
        raise ValueError(f"boost_factor must be a finite number >= 1, got {boost_factor}")
    return (1.0 + (boost_factor - 1.0) * (1.0 - p)) * weights


def prediction_errors(edges, weights, p, side) -> tuple[float, float]:
    """The paper's prediction errors against the cut ``side`` (Sec. 2).

    ``eta = sum_{e in C} (1 - p_e) w_e / k`` (false negatives, in [0, 1]) and
    ``rho = sum_{e not in C} p_e w_e / k`` (false positives, >= 0), with ``C`` the edges crossing
    ``side`` and ``k = w(C)``.

    Args:
        edges: (m, 2) int64; weights: (m,) float64 > 0; p: (m,) in [0, 1]; side: (n,) bool.

    Returns:
        ``(eta, rho)`` floats.

    Raises:
        ValueError: bad graph or ``p``; ``side`` not a proper bipartition; ``w(C) = 0``.
    """
    edges = np.asarray(edges)
    n = int(np.asarray(side).shape[0]) if np.ndim(side) == 1 else -1
    edges, weights, n = validate_graph(edges, weights, max(n, 2))
    p = _validate_p(p, edges.shape[0])
    side = _validate_side(side, n)
    crossing = side[edges[:, 0]] != side[edges[:, 1]]
    k = weights[crossing].sum()
    if k <= 0:
        raise ValueError("side cuts no edge (k = 0): eta and rho are normalised by k and undefined")
    eta = float(((1.0 - p[crossing]) * weights[crossing]).sum() / k)
    rho = float((p[~crossing] * weights[~crossing]).sum() / k)
    return eta, rho


def _weighted_prefix(weights: np.ndarray, target: float, rng: np.random.Generator) -> np.ndarray:
    """Indices drawn without replacement, prob. proportional to weight, until their sum >= target.

    Sequential weighted sampling without replacement = ascending exponential clocks -log(u)/w.
    As in the official ``sample``: everything when ``target >= sum(weights)``, nothing when 0.
    """
    if target <= 0 or weights.size == 0:
        return np.zeros(0, dtype=np.int64)
    if target >= weights.sum():
        return np.arange(weights.size)
    order = np.argsort(rng.exponential(size=weights.size) / weights)
    count = int(np.searchsorted(np.cumsum(weights[order]), target, side="left")) + 1
    return order[:count]


def inject_errors(edges, weights, side, eta: float, rho: float, rng) -> tuple[np.ndarray, float, float]:
    """Binary predictions with (about) the requested errors, as the official ``boost_graph_with_error``.

    Start from the perfect prediction (``p = 1`` on the cut edges of ``side``, 0 elsewhere). Cut
    edges are drawn proportionally to weight until their weight passes ``eta k`` and get ``p = 0``
    (false negatives); non-cut edges are drawn until their weight passes ``min(rho k, w(E \\ C))``
    and get ``p = 1`` (false positives). Whole edges are drawn, so the realised errors overshoot.

    Args:
        edges, weights: the graph; side: (n,) bool shore of the reference cut; eta in [0, 1];
        rho >= 0; rng: ``numpy.random.Generator``.

    Returns:
        ``(p, eta_realised, rho_realised)``: (m,) float64 in {0, 1}, and the errors of ``p``.

    Raises:
        ValueError: bad graph or side, ``eta`` outside [0, 1], ``rho < 0`` or non-finite.
        TypeError: ``rng`` is not a Generator.
    """
    n = int(np.asarray(side).shape[0]) if np.ndim(side) == 1 else 2
    edges, weights, n = validate_graph(edges, weights, max(n, 2))
    side = _validate_side(side, n)
    rng = _check_rng(rng)
    if not (math.isfinite(eta) and 0 <= eta <= 1):
        raise ValueError(f"eta must lie in [0, 1], got {eta}")
    if not (math.isfinite(rho) and rho >= 0):
        raise ValueError(f"rho must be finite and >= 0, got {rho}")
    crossing = side[edges[:, 0]] != side[edges[:, 1]]
    cut_idx, rest_idx = np.flatnonzero(crossing), np.flatnonzero(~crossing)
    k = weights[cut_idx].sum()
    if k <= 0:
        raise ValueError("side cuts no edge (k = 0)")
    p = crossing.astype(np.float64)
    fn = cut_idx[_weighted_prefix(weights[cut_idx], eta * k, rng)]
    fp = rest_idx[_weighted_prefix(weights[rest_idx], min(rho * k, weights[rest_idx].sum()), rng)]
    p[fn] = 0.0
    p[fp] = 1.0
    return p, float(weights[fn].sum() / k), float(weights[fp].sum() / k)


# --------------------------------------------------------------------------------------------
# Karger and boosted Karger (batched trials)
# --------------------------------------------------------------------------------------------


def _max_batch() -> int:
    return DEFAULTS.max_batch_gpu if gpu_available() else DEFAULTS.max_batch_cpu


def _phases(weights, n, p, boost_factor, threshold):
    if p is None:
        return [(weights / weights.max(), 2)]
    wb = boosted_weights(weights, p, boost_factor)
    if threshold <= 2:
        return [(wb / wb.max(), 2)]
    return [(wb / wb.max(), threshold), (weights / weights.max(), 2)]


def contraction_batch(edges, weights, n, n_trials: int, rng, p=None, boost_factor: float = 1.0,
                      threshold: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """``n_trials`` independent (boosted) Karger trials at once.

    Without ``p``: plain Karger (contract with ``w`` down to 2 super-vertices). With ``p``: contract
    with ``w_B`` down to ``threshold`` super-vertices, then with ``w`` down to 2 (Sec. 3). Cuts are
    valued with ``w``. Runs on the GPU kernel when one is usable.

    Returns:
        ``(cut, side)``: (R,) float64 and (R, n) bool (the shore containing vertex 0).

    Raises:
        ValueError / TypeError: bad graph, ``p``, boost factor, threshold, ``n_trials < 1`` or rng.
    """
    edges, weights, n = validate_graph(edges, weights, n)
    rng = _check_rng(rng)
    if p is not None:
        p = _validate_p(p, edges.shape[0])
        boost_factor, threshold = _check_boost(boost_factor, threshold, n)
    if isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer)) or n_trials < 1:
        raise ValueError(f"n_trials must be a positive integer, got {n_trials!r}")
    return _batch(edges, weights, n, int(n_trials), rng, _phases(weights, n, p, boost_factor, threshold))


def _batch(edges, weights, n, n_trials, rng, phases):
    seed = int(rng.integers(0, 2**63))
    cut, labels = _k.contraction_trials(edges, weights, n, n_trials, seed, phases)
    return cut, _side_of_zero(labels)


def karger_trial(edges, weights, n, rng) -> tuple[float, np.ndarray]:
    """One trial of Karger's contraction algorithm (Karger 1993; Sec. 2 of the paper).

    Contract an edge drawn proportionally to its weight until two super-vertices remain.

    Args:
        edges: (m, 2) int64; weights: (m,) float64 > 0; n: vertices; rng: Generator.

    Returns:
        ``(cut_value, side)``: float, (n,) bool (shore with vertex 0).

    Raises:
        ValueError / TypeError: see :func:`validate_graph`; rng not a Generator.
    """
    cut, side = contraction_batch(edges, weights, n, 1, rng)
    return float(cut[0]), side[0]


def boosted_karger_trial(edges, weights, n, p, boost_factor: float, threshold: int, rng) -> tuple[float, np.ndarray]:
    """One trial of boosted Karger (Sec. 3): boosted weights down to ``threshold``, then plain.

    Args:
        edges, weights, n: the graph; p: (m,) predictions in [0, 1]; boost_factor: ``B >= 1``;
        threshold: ``t >= 2`` super-vertices at which contraction switches to the plain weights
        (``t = 2``: boosted all the way, as in the official experiments); rng: Generator.

    Returns:
        ``(cut_value, side)`` valued with the original weights.

    Raises:
        ValueError / TypeError: bad graph, ``p`` outside [0, 1], ``B < 1``, ``t < 2``, bad rng.
    """
    cut, side = contraction_batch(edges, weights, n, 1, rng, p=p, boost_factor=boost_factor, threshold=threshold)
    return float(cut[0]), side[0]


# --------------------------------------------------------------------------------------------
# Karger–Stein and FPZ branching contraction
# --------------------------------------------------------------------------------------------


def _contract_once(edges, weights, n, stop_at, rng, contract_w=None):
    """One contraction of (edges, weights) down to ``stop_at`` super-vertices; returns
    (quotient edges, quotient weights, r, group (n,) -> super-vertex id)."""
    if n <= stop_at:
        return edges, weights, n, np.arange(n)
    cw = weights if contract_w is None else contract_w
    seed = int(rng.integers(0, 2**63))
    _, labels = _k.contraction_trials(edges, weights, n, 1, seed, [(cw / cw.max(), stop_at)])
    labels = labels[0]
    return _quotient(edges, weights, labels)


def _quotient(edges, weights, labels):
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
    if edges.shape[0] == 0:  # disconnected quotient: any component split costs 0
        side = np.zeros(r, dtype=bool)
        side[0] = True
        return 0.0, side
    return _brute_force(edges, weights, r)


def _karger_stein_rec(edges, weights, r, rng):
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


def _prep_recursive(edges, weights, n, rng):
    edges, weights, n = validate_graph(edges, weights, n)
    return edges, weights, n, _check_rng(rng)


def _finish(edges, weights, side):
    side = side if side[0] else ~side
    return cut_value(edges, weights, side), side


def karger_stein(edges, weights, n, rng) -> tuple[float, np.ndarray]:
    """One run of Karger–Stein recursive contraction (Karger & Stein 1996).

    Contract to ``ceil(1 + r / sqrt 2)`` super-vertices twice independently and recurse on both;
    graphs with at most ``DEFAULTS.brute_force_size`` super-vertices are solved exactly. Finds a
    given minimum cut with probability ``Omega(1 / log n)`` in ``O(n^2 log n)`` time.

    Returns:
        ``(cut_value, side)``. Raises: as :func:`karger_trial`.
    """
    edges, weights, n, rng = _prep_recursive(edges, weights, n, rng)
    _, side = _karger_stein_rec(edges, weights, n, rng)
    return _finish(edges, weights, side)


def fpz_branch_probability(r: int) -> float:
    """Probability of branching at ``r`` super-vertices in our FPZ reconstruction.

    Chosen so that (1 + q_r)(1 - 2/r) = 1: the expected number of branches in which a fixed
    minimum cut survives one contraction step is at least 1 (Fox, Panigrahi & Zhang 2019's
    branching-contraction principle; the exact schedule is a reconstruction). Capped at 1.
    """
    return 1.0 if r <= 4 else min(1.0, 2.0 / (r - 2))


def _fpz_rec(edges, weights, r, rng):
    if r <= DEFAULTS.brute_force_size or edges.shape[0] == 0:
        return _small_exact(edges, weights, r)
    # walk down the sizes; at the first branching size s, contract to s and split in two
    s = r
    while s > DEFAULTS.brute_force_size and rng.random() >= fpz_branch_probability(s):
        s -= 1
    if s <= DEFAULTS.brute_force_size:  # no branching on the way down: one path to the leaf
        qe, qw, qr, group = _contract_once(edges, weights, r, DEFAULTS.brute_force_size, rng)
        value, qside = _small_exact(qe, qw, qr)
        return value, qside[group]
    qe, qw, qr, group = _contract_once(edges, weights, r, s, rng)
    best = (math.inf, None)
    for _ in range(2):  # each copy contracts one more edge independently, then continues
        ce, cw, cr, cgroup = _contract_once(qe, qw, qr, qr - 1, rng)
        value, cside = _fpz_rec(ce, cw, cr, rng)
        if value < best[0]:
            best = (value, cside[cgroup][group])
    return best


def fpz(edges, weights, n, rng) -> tuple[float, np.ndarray]:
    """One run of FPZ branching contraction (Fox, Panigrahi & Zhang, SODA 2019), reconstructed.

    Contract one edge at a time; at ``r`` super-vertices the process first splits into two
    independent copies with probability :func:`fpz_branch_probability`. Leaves with at most
    ``DEFAULTS.brute_force_size`` super-vertices are solved exactly; the best leaf is returned.

    Returns:
        ``(cut_value, side)``. Raises: as :func:`karger_trial`.
    """
    edges, weights, n, rng = _prep_recursive(edges, weights, n, rng)
    _, side = _fpz_rec(edges, weights, n, rng)
    return _finish(edges, weights, side)


def boosted_fpz(edges, weights, n, p, boost_factor: float, threshold: int, rng) -> tuple[float, np.ndarray]:
    """Boosted FPZ, reconstructed: one boosted contraction to ``threshold``, then plain FPZ.

    Above ``threshold`` super-vertices edges are contracted with ``w_B`` (no branching: with good
    predictions this phase rarely destroys the min cut); the quotient graph is then solved by
    :func:`fpz` with the original weights. The paper's schedule may branch in the boosted phase too.

    Returns:
        ``(cut_value, side)``. Raises: as :func:`boosted_karger_trial`.
    """
    edges, weights, n, rng = _prep_recursive(edges, weights, n, rng)
    p = _validate_p(p, edges.shape[0])
    boost_factor, threshold = _check_boost(boost_factor, threshold, n)
    wb = boosted_weights(weights, p, boost_factor)
    qe, qw, qr, group = _contract_once(edges, weights, n, max(threshold, 2), rng, contract_w=wb)
    _, qside = _fpz_rec(qe, qw, qr, rng)
    return _finish(edges, weights, qside[group])


# --------------------------------------------------------------------------------------------
# Success probabilities and repetition counts
# --------------------------------------------------------------------------------------------


def karger_success_bound(n: int) -> float:
    """Karger's lower bound ``2 / (n (n - 1))`` on one trial returning a fixed minimum cut."""
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    return 2.0 / (n * (n - 1))


def boosted_success_bound(n: int, eta: float, rho: float, boost_factor: float, threshold: int) -> float:
    """Lower bound on one boosted-Karger trial keeping a fixed minimum cut (reconstructed, Sec. 3).

    At ``r`` super-vertices every super-vertex has weighted degree >= k, so the plain weight is
    ``>= r k / 2``; the boosted weight is ``>= B (r k / 2 - (1 + rho) k)`` outside the predicted
    cut, while the cut carries boosted weight ``k (1 + (B - 1) eta)``. So one boosted step destroys
    the cut with probability at most ``f_r = (1 + (B-1) eta) / (B (r/2 - 1 - rho) + 1 + (B-1) eta)``
    (used only when ``r / 2 > 1 + rho``, else 1), and the plain phase below ``t`` keeps it with
    probability ``2 / (t (t - 1))``. The bound is the product.

    Raises:
        ValueError: ``n < 2``, ``eta`` outside [0, 1], ``rho < 0``, ``B < 1`` or ``t < 2``.
    """
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    if not 0 <= eta <= 1:
        raise ValueError(f"eta must lie in [0, 1], got {eta}")
    if not rho >= 0:
        raise ValueError(f"rho must be >= 0, got {rho}")
    boost_factor, threshold = _check_boost(boost_factor, threshold, n)
    B = boost_factor
    prob = 2.0 / (threshold * (threshold - 1))
    for r in range(threshold + 1, n + 1):
        cut_mass = 1.0 + (B - 1.0) * eta
        rest = r / 2.0 - 1.0 - rho
        if rest <= 0:
            return 0.0
        prob *= 1.0 - cut_mass / (B * rest + cut_mass)
    return prob


def _recursive_trial(method, edges, weights, n, p, boost_factor, threshold, rng):
    """One run of a recursive method ("karger_stein", "fpz" or "boosted_fpz"): (cut_value, side)."""
    if method == "karger_stein":
        return karger_stein(edges, weights, n, rng)
    if method == "fpz":
        return fpz(edges, weights, n, rng)
    return boosted_fpz(edges, weights, n, p, boost_factor, threshold, rng)


def _repetitions(method, n, trials, success_prob, eta, rho, boost_factor, threshold):
    if trials is not None:
        if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
            raise ValueError(f"trials must be a positive integer, got {trials!r}")
        return int(trials)
    if success_prob is None:
        success_prob = 0.99
    if not 0 < success_prob < 1:
        raise ValueError(f"success_prob must lie in (0, 1), got {success_prob}")
    if method == "karger":
        single = karger_success_bound(n)
    elif method == "boosted_karger":
        single = boosted_success_bound(n, eta, rho, boost_factor, threshold)
    elif method in ("karger_stein", "fpz", "boosted_fpz"):
        single = 1.0 / (2.0 * math.log2(max(n, 4)))  # Omega(1 / log n) (constant: a reconstruction)
    if single <= 0:
        raise ValueError("the success bound is 0 for these eta/rho/threshold: pass trials instead")
    return max(1, int(math.ceil(math.log(1 - success_prob) / math.log1p(-min(single, 1 - 1e-16)))))


def min_cut(edges, weights, n, method: str = "karger", trials: int | None = None,
            success_prob: float | None = None, p=None, boost_factor: float | None = None,
            threshold: int = 2, eta: float = 1.0, rho: float = 0.0, rng=None) -> tuple[float, np.ndarray]:
    """Best cut over repeated runs of one contraction method.

    The repetition count is ``trials`` if given, else the smallest count whose success
    probability reaches ``success_prob`` (default 0.99) under the method's one-run bound: Karger
    ``2 / (n (n-1))``; boosted Karger :func:`boosted_success_bound` with the given ``eta``/``rho``
    (defaults ``eta = 1``, ``rho = 0``); Karger–Stein/FPZ ``1 / (2 log2 n)``. A disconnected graph
    returns cut 0 at once (the component of vertex 0).

    Args:
        edges, weights, n: the graph. method: one of ``"karger"``, ``"boosted_karger"``,
        ``"karger_stein"``, ``"fpz"``, ``"boosted_fpz"``. p: (m,) predictions (boosted methods).
        boost_factor: ``B`` (default ``n``, as the official synthetic experiments). threshold: ``t``.
        rng: Generator (default: a fresh one seeded 0).

    Returns:
        ``(cut_value, side)`` of the best run.

    Raises:
        ValueError / TypeError: unknown method, bad graph / ``p`` / counts / probabilities / rng.
    """
    edges, weights, n = validate_graph(edges, weights, n)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    rng = np.random.default_rng(0) if rng is None else _check_rng(rng)
    boosted = method.startswith("boosted")
    boost_factor = float(n) if boost_factor is None else boost_factor
    if boosted:
        p = _validate_p(p, edges.shape[0])
        boost_factor, threshold = _check_boost(boost_factor, threshold, n)
    reps = _repetitions(method, n, trials, success_prob, eta, rho, boost_factor, threshold)
    connected_value, connected_side = _components_cut(edges, n)
    if connected_value is not None:
        return connected_value, connected_side
    best_value, best_side = math.inf, None
    if method in ("karger", "boosted_karger"):
        phases = _phases(weights, n, p if boosted else None, boost_factor, threshold)
        done = 0
        while done < reps:
            size = min(_max_batch(), reps - done)
            cut, side = _batch(edges, weights, n, size, rng, phases)
            i = int(np.argmin(cut))
            if cut[i] < best_value:
                best_value, best_side = float(cut[i]), side[i]
            done += size
        return best_value, best_side
    for _ in range(reps):
        value, side = _recursive_trial(method, edges, weights, n, p, boost_factor, threshold, rng)
        if value < best_value:
            best_value, best_side = value, side
    return best_value, best_side


def _components_cut(edges, n):
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    count, lab = connected_components(csr_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])),
                                                 shape=(n, n)), directed=False)
    if count == 1:
        return None, None
    return 0.0, lab == lab[0]


# --------------------------------------------------------------------------------------------
# The paper's metric: independent trials until a minimum cut is found
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialsResult:
    """Trials until the first minimum cut, per independent run.

    Attributes:
        trials: (runs,) int64, trials used (= ``cap`` when censored).
        censored: (runs,) bool, True when no minimum cut was found within ``cap`` trials.
        opt_value: the optimum the cuts were compared with.
        cap: the censoring cap.
    """

    trials: np.ndarray
    censored: np.ndarray
    opt_value: float
    cap: int

    @property
    def mean(self) -> float:
        """Mean trials (a lower bound on the true mean when some runs are censored)."""
        return float(self.trials.mean())

    @property
    def censored_fraction(self) -> float:
        return float(self.censored.mean())


def trials_until_min_cut(edges, weights, n, method: str = "karger", p=None, boost_factor: float | None = None,
                         threshold: int = 2, runs: int = 1, cap: int | None = None,
                         opt_value: float | None = None, rng=None) -> TrialsResult:
    """The paper's metric (Sec. 5): independent trials until a cut of optimal value appears.

    Each run repeats the method (one Karger trial, or one Karger–Stein/FPZ run) until it returns
    a cut of value ``<= opt (1 + 1e-9) + 1e-12``, or until ``cap`` trials (then the run is
    censored and counts ``cap``). Karger-type trials are drawn in batches of doubling size;
    trials after the first success in a batch are discarded, so the count is exact.

    Args:
        edges, weights, n: the graph; method, p, boost_factor, threshold: as :func:`min_cut`.
        runs: independent runs. cap: censoring cap (default ``n^2``, as the official code).
        opt_value: the optimum (default: :func:`stoer_wagner`). rng: Generator.

    Returns:
        :class:`TrialsResult`.

    Raises:
        ValueError / TypeError: as :func:`min_cut`; ``runs`` or ``cap`` < 1.
    """
    edges, weights, n = validate_graph(edges, weights, n)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    rng = np.random.default_rng(0) if rng is None else _check_rng(rng)
    for name, value in (("runs", runs), ("cap", cap if cap is not None else 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    cap = n * n if cap is None else int(cap)
    boosted = method.startswith("boosted")
    boost_factor = float(n) if boost_factor is None else boost_factor
    if boosted:
        p = _validate_p(p, edges.shape[0])
        boost_factor, threshold = _check_boost(boost_factor, threshold, n)
    if opt_value is None:
        opt_value = stoer_wagner(edges, weights, n)[0]
    limit = opt_value * (1 + DEFAULTS.rel_tol) + DEFAULTS.abs_tol
    trials = np.zeros(runs, dtype=np.int64)
    censored = np.zeros(runs, dtype=bool)
    phases = _phases(weights, n, p if boosted else None, boost_factor, threshold) if method in ("karger", "boosted_karger") else None
    for run in range(runs):
        used, found = 0, False
        if phases is not None:
            size = 4
            while used < cap and not found:
                size_now = min(size, cap - used, _max_batch())
                cut, _ = _batch(edges, weights, n, size_now, rng, phases)
                hits = np.flatnonzero(cut <= limit)
                if hits.size:
                    used += int(hits[0]) + 1
                    found = True
                else:
                    used += size_now
                size *= 2
        else:
            while used < cap and not found:
                value, _ = _recursive_trial(method, edges, weights, n, p, boost_factor, threshold, rng)
                used += 1
                found = value <= limit
        trials[run] = used
        censored[run] = not found
    return TrialsResult(trials=trials, censored=censored, opt_value=float(opt_value), cap=cap)


# --------------------------------------------------------------------------------------------
# Instance families of the paper's experiments (Sec. 5)
# --------------------------------------------------------------------------------------------


def _accumulate(pairs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Multiset of (u, v) pairs -> simple graph with multiplicities as weights."""
    lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    keys, counts = np.unique(lo * n + hi, return_counts=True)
    return np.stack([keys // n, keys % n], axis=1).astype(np.int64), counts.astype(np.float64)


def matching_graph(n: int, k: int, t: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Union of ``k`` random perfect matchings between halves ``{0..n/2-1}`` and ``{n/2..n-1}``.

    Multiplicities become weights; then ``t`` distinct neighbours of vertex 0 lose one unit of
    weight (an edge at weight 0 disappears), so vertex 0 has weighted degree ``k - t`` and the
    singleton ``{0}`` is (almost surely, for ``t >= 1``) the minimum cut. Official ``build_matching_graph``.

    Returns:
        ``(edges, weights)``: (m, 2) int64, (m,) float64.

    Raises:
        ValueError: ``n`` odd or < 4, ``k < 1``, ``t < 0`` or more than vertex 0's distinct neighbours.
    """
    rng = _check_rng(rng)
    if n < 4 or n % 2:
        raise ValueError(f"n must be an even integer >= 4, got {n}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    half = n // 2
    left = np.tile(np.arange(half), k)
    right = np.concatenate([rng.permutation(half) + half for _ in range(k)])
    edges, weights = _accumulate(np.stack([left, right], axis=1), n)
    at_zero = np.flatnonzero(edges[:, 0] == 0)
    if not 0 <= t <= at_zero.size:
        raise ValueError(f"t must lie in [0, {at_zero.size}] (distinct neighbours of vertex 0), got {t}")
    chosen = rng.choice(at_zero, size=t, replace=False)
    weights[chosen] -= 1
    keep = weights > 0
    return edges[keep], weights[keep]


def cycles_graph(n: int, k: int, r: int, eps: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """The official TSP test graph: sides ``S = {0..r-1}``, ``T = {r..n-1}``.

    Edges (multiplicities as weights): ``k`` random Hamiltonian cycles on ``S``, ``k`` on ``T``,
    ``k`` on all of V crossing ``(S, T)`` exactly twice, and ``floor(eps k)`` random cycles of
    random length in ``[3, |side|)`` inside a random side. Difference from the official script: its
    extra cycles draw vertices with replacement (possible self loops); here they are distinct.

    Returns:
        ``(edges, weights)``.

    Raises:
        ValueError: ``r < 4``, ``n - r < 4``, ``k < 1`` or ``eps < 0``.
    """
    rng = _check_rng(rng)
    if r < 4 or n - r < 4 or k < 1 or eps < 0:
        raise ValueError(f"need 4 <= r <= n - 4, k >= 1, eps >= 0; got n={n}, k={k}, r={r}, eps={eps}")
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


def tsp_lp_instances(edges, cost, n, max_rounds: int = 20, tol: float = 1e-9) -> list[TSPInstance]:
    """The successive LP relaxations of a TSP cutting-plane loop (official ``run_with_subtour_constraint``).

    Solve ``min c.x`` s.t. ``x(delta(v)) = 2`` for every vertex, ``0 <= x <= 1``, with
    ``scipy.optimize.linprog(method="highs")``; take the support graph, find its minimum cut
    ``(S, V \\ S)`` with Stoer–Wagner, add the subtour constraints ``x(E(S)) <= |S| - 1`` and
    ``x(E(V \\ S)) <= |V \\ S| - 1`` (sides of size >= 2), and repeat until the minimum cut is >= 2
    or ``max_rounds`` rounds. The official code uses Gurobi's barrier method; at degenerate optima
    HiGHS may return a different vertex, hence different supports.

    Args:
        edges: (m, 2) base graph; cost: (m,) float64 > 0 objective (the official code uses the
        multiplicities of :func:`cycles_graph`); n: vertices; max_rounds >= 1; tol: support cutoff.

    Returns:
        One :class:`TSPInstance` per round (a disconnected support has ``min_cut = 0``).

    Raises:
        ValueError: bad graph, ``max_rounds < 1``, or an infeasible/failed LP.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    edges, cost, n = validate_graph(edges, cost, n)
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    m = edges.shape[0]
    cols = np.concatenate([np.arange(m), np.arange(m)])
    A_eq = coo_matrix((np.ones(2 * m), (np.concatenate([edges[:, 0], edges[:, 1]]), cols)), shape=(n, m)).tocsr()
    b_eq = np.full(n, 2.0)
    rows, rhs = [], []
    out: list[TSPInstance] = []
    for _ in range(max_rounds):
        A_ub = vstack(rows).tocsr() if rows else None
        res = linprog(cost, A_ub=A_ub, b_ub=np.array(rhs) if rows else None, A_eq=A_eq, b_eq=b_eq,
                      bounds=(0, 1), method="highs")
        if res.status != 0:
            raise ValueError(f"the LP failed: {res.message}")
        x = np.clip(res.x, 0.0, 1.0)
        support = np.flatnonzero(x > tol)
        value, side = stoer_wagner(edges[support], x[support], n)
        out.append(TSPInstance(edges=edges[support], x=x[support], edge_index=support, n=n,
                               min_cut=value, side=side))
        if value >= 2 - 1e-7:
            break
        for shore in (side, ~side):
            if shore.sum() >= 2:
                inside = shore[edges[:, 0]] & shore[edges[:, 1]]
                rows.append(coo_matrix(inside.astype(np.float64)[None, :]))
                rhs.append(float(shore.sum() - 1))
    return out


def predict_by_sampling(edges, weights, n, rng, frac: float = 0.5, k_trials: int = 50) -> np.ndarray:
    """The official real-data heuristic: predicted cut edges from Karger on a random edge sample.

    Keep a uniformly random ``floor(frac m)`` of the edges, run ``k_trials`` Karger trials on that
    subgraph and predict ``p_e = 1`` for every sampled edge that crossed one of the cuts found;
    every other edge gets ``p_e = 0`` (it will be boosted).

    Returns:
        (m,) float64 in {0, 1}.

    Raises:
        ValueError: bad graph, ``frac`` outside (0, 1], ``k_trials < 1``.
    """
    edges, weights, n = validate_graph(edges, weights, n)
    rng = _check_rng(rng)
    if not 0 < frac <= 1:
        raise ValueError(f"frac must lie in (0, 1], got {frac}")
    if k_trials < 1:
        raise ValueError(f"k_trials must be >= 1, got {k_trials}")
    m = edges.shape[0]
    sample = np.sort(rng.choice(m, size=max(1, int(frac * m)), replace=False))
    sub_e, sub_w = edges[sample], weights[sample]
    seed = int(rng.integers(0, 2**63))
    _, labels = _k.contraction_trials(sub_e, sub_w, n, int(k_trials), seed, [(sub_w / sub_w.max(), 2)])
    crossed = (labels[:, sub_e[:, 0]] != labels[:, sub_e[:, 1]]).any(axis=0)
    p = np.zeros(m)
    p[sample[crossed]] = 1.0
    return p


def jitter_instances(edges, weights, n, count: int, noise: float, rng, weak_vertices: Sequence[int] = (),
                     weak_factor: float = 0.75) -> list[tuple[np.ndarray, np.ndarray, np.float64]]:
    """A family of related instances: the same edges, weights ``w (1 + noise U[-1, 1])``.

    When ``weak_vertices`` is given, instance ``i`` also weakens ``weak_vertices[i % len]`` (round
    robin) by scaling its incident edges by ``weak_factor``, so the minimum cut moves between a few places across the
    family (the situation where predictions must be learned from several past instances).

    Returns:
        ``count`` triples ``(weights_i, side_i, opt_i)`` with the Stoer–Wagner cut of each.

    Raises:
        ValueError: bad graph, ``count < 1``, ``noise`` outside [0, 1), a weak vertex outside
            ``[0, n)``, ``weak_factor`` outside (0, 1].
    """
    edges, weights, n = validate_graph(edges, weights, n)
    rng = _check_rng(rng)
    if count < 1 or not 0 <= noise < 1:
        raise ValueError(f"need count >= 1 and 0 <= noise < 1, got count={count}, noise={noise}")
    weak = np.asarray(weak_vertices, dtype=np.int64)
    if weak.size and (weak.min() < 0 or weak.max() >= n):
        raise ValueError(f"weak_vertices must lie in [0, {n})")
    if not 0 < weak_factor <= 1:
        raise ValueError(f"weak_factor must lie in (0, 1], got {weak_factor}")
    out = []
    for i in range(count):
        w = weights * (1.0 + noise * rng.uniform(-1.0, 1.0, size=weights.size))
        if weak.size:
            v = weak[i % weak.size]
            w = np.where((edges[:, 0] == v) | (edges[:, 1] == v), w * weak_factor, w)
        value, side = stoer_wagner(edges, w, n)
        out.append((w, side, np.float64(value)))
    return out


def learn_predictions_ogd(edges, n, instances: Sequence[tuple[np.ndarray, np.ndarray]], lr: float = 0.5,
                          epochs: int = 1, p0: float = 0.5, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """Learn one prediction vector for a family of instances by projected online gradient descent.

    Stand-in surrogate (a reconstruction; the paper convexifies its expected-runtime objective):
    ``L_i(p) = 2 ln(n) eta_i(p) + 2 rho_i(p)``, the log of the reconstructed trial count
    ``n^(2 eta) e^(2 rho)``-type bound, linear (hence convex) in ``p``. Instance ``i`` is a
    weight vector on the common edges and the shore of its minimum cut. One OGD step per
    instance, step ``lr / sqrt(step)``, projection onto ``[0, 1]^m``.

    Args:
        edges: (m, 2) the common edge set; n: vertices; instances: sequence of
        ``(weights_i (m,), side_i (n,))``; lr > 0; epochs >= 1; p0: initial prediction in [0, 1];
        rng: Generator to shuffle the order each epoch (None: fixed order).

    Returns:
        ``(p, losses)``: (m,) float64 learned predictions and the surrogate loss of each step,
        evaluated before the step (the online regret sequence).

    Raises:
        ValueError: empty ``instances``, bad shapes, ``lr <= 0``, ``epochs < 1``, ``p0`` outside [0, 1].
    """
    if len(instances) == 0:
        raise ValueError("instances must not be empty")
    if lr <= 0 or epochs < 1 or not 0 <= p0 <= 1:
        raise ValueError(f"need lr > 0, epochs >= 1, p0 in [0, 1]; got {lr}, {epochs}, {p0}")
    edges = np.asarray(edges, dtype=np.int64)
    m = edges.shape[0]
    grads, consts = [], []
    for w, side in instances:
        edges_v, w, n_v = validate_graph(edges, w, n)
        side = _validate_side(side, n_v)
        crossing = side[edges[:, 0]] != side[edges[:, 1]]
        k = w[crossing].sum()
        if k <= 0:
            raise ValueError("every instance's side must cut at least one edge")
        # L(p) = 2 ln n sum_C (1 - p) w / k + 2 sum_{not C} p w / k = const + g . p
        g = np.where(crossing, -2 * math.log(n) * w / k, 2 * w / k)
        grads.append(g)
        consts.append(2 * math.log(n) * 1.0)
    p = np.full(m, float(p0))
    losses, step = [], 0
    order = np.arange(len(grads))
    for _ in range(epochs):
        if rng is not None:
            order = _check_rng(rng).permutation(len(grads))
        for i in order:
            step += 1
            losses.append(consts[i] + grads[i] @ p)
            p = np.clip(p - lr / math.sqrt(step) * grads[i], 0.0, 1.0)
    return p, np.array(losses)
