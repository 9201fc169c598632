"""Karger's contraction with predictions (Niaparast, Moseley & Singh, ICML 2025, Sec. 3).

Given a prediction ``p_e in [0, 1]`` of how likely edge ``e`` is to cross the minimum cut,
*boosted* Karger contracts with the weights ``w_B(e) = (1 + (B - 1)(1 - p_e)) w_e`` while more
than ``threshold`` super-vertices remain and with the plain weights after that; the cut is
always valued with the original weights. Plain Karger is the case without ``p``. One trial runs
as exponential clocks plus a minimum spanning forest (``icml25.kernels.contraction``).

Reconstructed parts (the paper's body was not available when this was written; see the chapter):
the boosted-FPZ schedule (boost only above the threshold, then plain FPZ) and the
success-probability bound :func:`boosted_success_bound`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import (
    check_budget,
    check_choice,
    check_int,
    check_probability,
    check_real,
    check_rng,
)
from icml25.kernels import contraction

from .baselines import (
    _contract_once,
    _finish,
    _fpz_rec,
    _recursive_operations,
    fpz,
    karger_stein,
    karger_success_bound,
)
from .defaults import DEFAULTS, METHODS
from .graph import (
    _PYTHON_STEP,
    GraphLike,
    WeightedGraph,
    _check_predictions,
    _check_weights,
    _components_cut,
    _side_of_zero,
    validate_graph,
)

__all__ = [
    "boosted_weights",
    "contraction_batch",
    "karger_trial",
    "boosted_karger_trial",
    "boosted_fpz",
    "boosted_success_bound",
    "min_cut",
]


# --------------------------------------------------------------------------------------
# Boosting
# --------------------------------------------------------------------------------------


def boosted_weights(
    weights: ArrayLike, p: ArrayLike, boost_factor: float
) -> np.ndarray:
    """Contraction weights that favour edges predicted to lie outside the min cut (Sec. 3).

    Args:
        weights: (m,) float64, positive edge weights ``w_e``.
        p: (m,) float64 in [0, 1], predicted probability that edge ``e`` crosses the min cut.
        boost_factor: ``B >= 1``; ``B = 1`` recovers plain Karger.

    Returns:
        (m,) float64 boosted weights ``w_B``, ``>= weights`` elementwise.

    Raises:
        ValueError: ``weights`` empty (no edge: every entry point refuses an empty graph), not
            1-D, non-finite or not positive; ``p`` of another shape or outside [0, 1]; ``B < 1``
            or not finite.
        TypeError: non-numeric arguments.
    """
    w = _check_weights(weights)
    return _boost(
        w,
        _check_predictions(p, w.shape[0]),
        check_real(boost_factor, "boost_factor", low=1.0),
    )


def _boost(w: np.ndarray, p: np.ndarray, B: float) -> np.ndarray:
    """``w_B(e) = (1 + (B - 1)(1 - p_e)) w_e`` (Sec. 3; ``B`` is the paper's boost factor)."""
    return (1.0 + (B - 1.0) * (1.0 - p)) * w


def _phases(
    weights: np.ndarray, p: np.ndarray | None, boost_factor: float, threshold: int
) -> list[tuple[np.ndarray, int]]:
    """The contraction phases of one trial: ``(contraction weights, stop at)``.

    Plain Karger: ``w`` down to 2 super-vertices. Boosted: ``w_B`` down to ``threshold`` (``t``),
    then ``w`` down to 2. The kernel takes weights scaled to a maximum of 1.
    """
    if p is None:
        return [(weights / weights.max(), 2)]
    wb = _boost(weights, p, boost_factor)
    if threshold <= 2:
        return [(wb / wb.max(), 2)]
    return [(wb / wb.max(), threshold), (weights / weights.max(), 2)]


def _check_method(
    method: str,
    g: WeightedGraph,
    p: ArrayLike | None,
    boost_factor: float | None,
    threshold: int,
) -> tuple[str, np.ndarray | None, float, int]:
    """One of :data:`METHODS`; for a boosted one also its predictions, ``B >= 1`` (default ``n``,
    as the official synthetic experiments) and ``t >= 2`` (capped at ``n``). A plain method gets
    ``p = None``."""
    method = check_choice(method, "method", METHODS)
    boost_factor = float(g.n) if boost_factor is None else boost_factor
    if not method.startswith("boosted"):
        return method, None, boost_factor, threshold
    p = _check_predictions(p, g.m)
    boost_factor = check_real(boost_factor, "boost_factor", low=1.0)
    return method, p, boost_factor, min(check_int(threshold, "threshold", low=2), g.n)


# --------------------------------------------------------------------------------------
# Karger and boosted Karger (batched trials)
# --------------------------------------------------------------------------------------


def _trial_operations(g: WeightedGraph) -> float:
    """Elementary operations of one contraction trial: m clocks, their sort and the forest."""
    return g.m * (1.0 + math.log2(g.m + 1)) + 2.0 * g.n


def _batch_bytes(g: WeightedGraph, n_trials: int) -> float:
    """Peak memory of ``n_trials`` trials drawn at once: about five (R, m) 8-byte arrays
    (counters, hashes, uniforms, keys, the sort order) and the (R, n) labels and sides."""
    return n_trials * (40.0 * g.m + 16.0 * g.n)


def _check_trials_budget(what: str, g: WeightedGraph, n_trials: int) -> None:
    """Refuse ``n_trials`` Karger-type trials drawn at once on ``g`` (memory and work), naming the
    graph's size next to the trial count: ``what`` is the call, e.g. ``"karger_trial"``."""
    check_budget(
        f"{what}(n={g.n}, m={g.m}, n_trials={n_trials})",
        n_bytes=_batch_bytes(g, n_trials),
        n_operations=n_trials * _trial_operations(g),
    )


def contraction_batch(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    n_trials: int | None = None,
    *,
    rng: np.random.Generator,
    p: ArrayLike | None = None,
    boost_factor: float = 1.0,
    threshold: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """``n_trials`` independent (boosted) Karger trials at once.

    Without ``p``: plain Karger (contract with ``w`` down to 2 super-vertices). With ``p``: contract
    with ``w_B`` down to ``threshold`` super-vertices, then with ``w`` down to 2 (Sec. 3). Cuts are
    valued with ``w``. Runs on the GPU kernel when one is usable.

    Args:
        edges, weights, n: the graph (a :class:`WeightedGraph`, or the three arrays).
        n_trials: trials ``R >= 1`` (required); all are drawn in one kernel call.
        rng: ``numpy.random.Generator`` (keyword, required).
        p: (m,) predictions in [0, 1] (``None``: plain Karger).
        boost_factor: ``B >= 1``; threshold: ``t >= 2`` super-vertices.

    Returns:
        ``(cut, side)``: (R,) float64 and (R, n) bool (the shore containing vertex 0).

    Raises:
        ValueError / TypeError: bad graph, ``p``, boost factor, threshold, ``n_trials < 1`` or rng.
        TooLargeError: the ``R`` trials on this graph (``n`` vertices, ``m`` edges) need more
            memory than is available (or hours of work); the message gives ``n``, ``m`` and ``R``.
    """
    g = validate_graph(edges, weights, n)
    rng = check_rng(rng)
    if p is not None:
        p = _check_predictions(p, g.m)
        boost_factor = check_real(boost_factor, "boost_factor", low=1.0)
        threshold = min(check_int(threshold, "threshold", low=2), g.n)
    n_trials = check_int(n_trials, "n_trials", low=1)
    _check_trials_budget("contraction_batch", g, n_trials)
    return _batch(g, n_trials, rng, _phases(g.weights, p, boost_factor, threshold))


def _batch(
    g: WeightedGraph,
    n_trials: int,
    rng: np.random.Generator,
    phases: list[tuple[np.ndarray, int]],
) -> tuple[np.ndarray, np.ndarray]:
    """``n_trials`` trials of the given phases: (cut values, shores of vertex 0)."""
    seed = int(rng.integers(0, 2**63))
    cut, labels = contraction.contraction_trials(
        g.edges, g.weights, g.n, n_trials, seed, phases
    )
    return cut, _side_of_zero(labels)


def karger_trial(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    *,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """One trial of Karger's contraction algorithm (Karger 1993; Sec. 2 of the paper).

    Contract an edge drawn proportionally to its weight until two super-vertices remain.

    Args:
        edges, weights, n: the graph; rng: ``numpy.random.Generator`` (keyword, required).

    Returns:
        ``(cut_value, side)``: float, (n,) bool (shore with vertex 0).

    Raises:
        ValueError / TypeError: see :func:`validate_graph`; rng not a Generator.
        TooLargeError: the graph is too large for one trial (the message names ``n`` and ``m``).
    """
    g = validate_graph(edges, weights, n)
    rng = check_rng(rng)
    _check_trials_budget("karger_trial", g, 1)
    cut, side = _batch(g, 1, rng, _phases(g.weights, None, 1.0, 2))
    return float(cut[0]), side[0]


def boosted_karger_trial(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    p: ArrayLike | None = None,
    boost_factor: float | None = None,
    threshold: int = 2,
    *,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """One trial of boosted Karger (Sec. 3): boosted weights down to ``threshold``, then plain.

    Args:
        edges, weights, n: the graph; p: (m,) predictions in [0, 1] (required); boost_factor:
        ``B >= 1`` (default ``n``, as the official synthetic experiments); threshold: ``t >= 2`` super-vertices at which contraction
        switches to the plain weights (``t = 2``: boosted all the way, as in the official
        experiments); rng: ``numpy.random.Generator`` (keyword, required).

    Returns:
        ``(cut_value, side)`` valued with the original weights.

    Raises:
        ValueError / TypeError: bad graph, ``p`` outside [0, 1], ``B < 1``, ``t < 2``, bad rng.
        TooLargeError: as :func:`karger_trial`.
    """
    g = validate_graph(edges, weights, n)
    _, p, boost_factor, threshold = _check_method(
        "boosted_karger", g, p, boost_factor, threshold
    )
    rng = check_rng(rng)
    _check_trials_budget("boosted_karger_trial", g, 1)
    cut, side = _batch(g, 1, rng, _phases(g.weights, p, boost_factor, threshold))
    return float(cut[0]), side[0]


def boosted_fpz(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    p: ArrayLike | None = None,
    boost_factor: float | None = None,
    threshold: int = 2,
    *,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """Boosted FPZ, reconstructed: one boosted contraction to ``threshold``, then plain FPZ.

    Above ``threshold`` super-vertices edges are contracted with ``w_B`` (no branching: with good
    predictions this phase rarely destroys the min cut); the quotient graph is then solved by
    :func:`fpz` with the original weights. The paper's schedule may branch in the boosted phase too.

    Args:
        as :func:`boosted_karger_trial`.

    Returns:
        ``(cut_value, side)``: float, (n,) bool containing vertex 0.

    Raises:
        ValueError / TypeError: as :func:`boosted_karger_trial`.
        TooLargeError: as :func:`~icml25.mincut_predictions.fpz` (one run would take hours).
    """
    g = validate_graph(edges, weights, n)
    _, p, boost_factor, threshold = _check_method(
        "boosted_fpz", g, p, boost_factor, threshold
    )
    rng = check_rng(rng)
    check_budget(
        f"boosted_fpz(n={g.n}, m={g.m})", n_operations=_recursive_operations(g)
    )
    return _boosted_fpz(g, p, boost_factor, threshold, rng)


def _boosted_fpz(
    g: WeightedGraph,
    p: np.ndarray,
    boost_factor: float,
    threshold: int,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """Contract with ``w_B`` to ``max(t, 2)`` super-vertices, then FPZ with ``w`` on the quotient."""
    wb = _boost(g.weights, p, boost_factor)
    qe, qw, qr, group = _contract_once(
        g.edges, g.weights, g.n, max(threshold, 2), rng, contract_w=wb
    )
    _, qside = _fpz_rec(qe, qw, qr, rng)
    return _finish(g, qside[group])


# --------------------------------------------------------------------------------------
# Success probabilities and repetition counts
# --------------------------------------------------------------------------------------


def boosted_success_bound(
    n: int, eta: float, rho: float, boost_factor: float, threshold: int
) -> float:
    """Lower bound on one boosted-Karger trial keeping a fixed minimum cut (reconstructed, Sec. 3).

    At ``r`` super-vertices every super-vertex has weighted degree >= k, so the plain weight is
    ``>= r k / 2``; the boosted weight is ``>= B (r k / 2 - (1 + rho) k)`` outside the predicted
    cut, while the cut carries boosted weight ``k (1 + (B - 1) eta)``. So one boosted step destroys
    the cut with probability at most ``f_r = (1 + (B-1) eta) / (B (r/2 - 1 - rho) + 1 + (B-1) eta)``
    (used only when ``r / 2 > 1 + rho``, else 1), and the plain phase below ``t`` keeps it with
    probability ``2 / (t (t - 1))``. The bound is the product.

    Args:
        n: vertices (>= 2); eta: false-negative error in [0, 1]; rho: false-positive error >= 0;
        boost_factor: ``B >= 1``; threshold: ``t >= 2`` (capped at ``n``).

    Returns:
        the bound, a probability in [0, 1].

    Raises:
        ValueError: ``n < 2``, ``eta`` outside [0, 1], ``rho < 0``, ``B < 1`` or ``t < 2``.
        TypeError: ``n`` or ``threshold`` not integers.
        TooLargeError: the product's ``n - t`` factors (a Python loop) would take hours.
    """
    n = check_int(n, "n", low=2)
    eta = check_probability(eta, "eta")
    rho = check_real(rho, "rho", low=0.0)
    boost_factor = check_real(boost_factor, "boost_factor", low=1.0)
    threshold = min(check_int(threshold, "threshold", low=2), n)
    check_budget(
        f"boosted_success_bound(n={n})", n_operations=_PYTHON_STEP * (n - threshold)
    )
    return _boosted_success_bound(n, eta, rho, boost_factor, threshold)


def _boosted_success_bound(n: int, eta: float, rho: float, B: float, t: int) -> float:
    """``2 / (t (t - 1)) * prod_{r = t+1}^{n} (1 - f_r)``, ``f_r`` as in :func:`boosted_success_bound`."""
    prob = 2.0 / (t * (t - 1))
    for r in range(t + 1, n + 1):
        cut_mass = 1.0 + (B - 1.0) * eta
        rest = r / 2.0 - 1.0 - rho
        if rest <= 0:
            return 0.0
        prob *= 1.0 - cut_mass / (B * rest + cut_mass)
    return prob


def _recursive_trial(
    method: str,
    g: WeightedGraph,
    p: np.ndarray | None,
    boost_factor: float,
    threshold: int,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """One run of a recursive method ("karger_stein", "fpz" or "boosted_fpz"): (cut_value, side)."""
    if method == "karger_stein":
        return karger_stein(g, rng=rng)
    if method == "fpz":
        return fpz(g, rng=rng)
    return _boosted_fpz(g, p, boost_factor, threshold, rng)


def _operations(method: str, g: WeightedGraph, n_trials: float) -> float:
    """Elementary operations of ``n_trials`` trials (Karger type) or runs (recursive methods):
    a recursive run contracts ``O(n^2 log n)`` edges in all, each step a forest on its quotient."""
    if method in ("karger", "boosted_karger"):
        return n_trials * _trial_operations(g)
    return n_trials * _recursive_operations(g)


def _largest_batch_bytes(method: str, g: WeightedGraph, n_trials: int) -> float:
    """Peak memory of the largest batch a repetition loop draws (Karger type; one run's forest
    arrays otherwise, already within :class:`WeightedGraph`'s per-vertex budget)."""
    if method in ("karger", "boosted_karger"):
        return _batch_bytes(g, min(contraction.max_batch(), n_trials))
    return _batch_bytes(g, 1)


def _n_trials_for(
    method: str,
    n: int,
    n_trials: int | None,
    success_prob: float | None,
    eta: float,
    rho: float,
    boost_factor: float,
    threshold: int,
) -> int:
    """``n_trials`` if given, else the least ``R`` with ``1 - (1 - q)^R >= success_prob`` for the
    method's one-run bound ``q``."""
    if n_trials is not None:
        return check_int(n_trials, "n_trials", low=1)
    success_prob = DEFAULTS.success_prob if success_prob is None else success_prob
    success_prob = check_probability(
        success_prob, "success_prob", open_low=True, open_high=True
    )
    if method == "karger":
        single = karger_success_bound(n)
    elif method == "boosted_karger":
        single = boosted_success_bound(n, eta, rho, boost_factor, threshold)
    else:
        # Omega(1 / log n) (constant: a reconstruction)
        single = 1.0 / (2.0 * math.log2(max(n, 4)))
    if single <= 0:
        raise ValueError(
            "the success bound is 0 for these eta/rho/threshold: pass n_trials instead"
        )
    return max(
        1,
        int(
            math.ceil(math.log(1 - success_prob) / math.log1p(-min(single, 1 - 1e-16)))
        ),
    )


def min_cut(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    method: str = "karger",
    n_trials: int | None = None,
    success_prob: float | None = None,
    p: ArrayLike | None = None,
    boost_factor: float | None = None,
    threshold: int = 2,
    eta: float = 1.0,
    rho: float = 0.0,
    *,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """Best cut over repeated runs of one contraction method.

    The repetition count is ``n_trials`` if given, else the smallest count whose success
    probability reaches ``success_prob`` (default ``DEFAULTS.success_prob = 0.99``) under the
    method's one-run bound: Karger ``2 / (n (n-1))``; boosted Karger :func:`boosted_success_bound`
    with the given ``eta``/``rho`` (defaults ``eta = 1``, ``rho = 0``); Karger–Stein/FPZ
    ``1 / (2 log2 n)``. A disconnected graph returns cut 0 at once (the component of vertex 0).
    Karger-type trials are drawn in batches of ``icml25.kernels.contraction.max_batch()``.

    Args:
        edges, weights, n: the graph (a :class:`WeightedGraph`, or the three arrays). method: one
        of ``"karger"``, ``"boosted_karger"``, ``"karger_stein"``, ``"fpz"``, ``"boosted_fpz"``.
        n_trials: repetitions (>= 1). success_prob: in (0, 1). p: (m,) predictions (boosted
        methods). boost_factor: ``B`` (default ``n``, as the official synthetic experiments).
        threshold: ``t``. eta, rho: the prediction errors the boosted bound assumes.
        rng: ``numpy.random.Generator`` (keyword, required: there is no default stream).

    Returns:
        ``(cut_value, side)`` of the best run: float, (n,) bool containing vertex 0.

    Raises:
        ValueError / TypeError: unknown method, bad graph / ``p`` / counts / probabilities;
            ``TypeError`` when rng is not a Generator.
        TooLargeError: the repetitions would take hours or their batches cannot fit in memory
            (e.g. ``n_trials=10**12``, or ``n=10**12``); nothing is run.
    """
    g = validate_graph(edges, weights, n)
    method, p, boost_factor, threshold = _check_method(
        method, g, p, boost_factor, threshold
    )
    rng = check_rng(rng)
    given = n_trials is not None
    n_trials = _n_trials_for(
        method, g.n, n_trials, success_prob, eta, rho, boost_factor, threshold
    )
    count = f"n_trials={n_trials}" if given else f"success_prob -> {n_trials} trials"
    check_budget(
        f"min_cut(method={method!r}, n={g.n}, m={g.m}, {count})",
        n_bytes=_largest_batch_bytes(method, g, n_trials),
        n_operations=_operations(method, g, n_trials),
    )
    connected_value, connected_side = _components_cut(g)
    if connected_value is not None:
        return connected_value, connected_side
    if method in ("karger", "boosted_karger"):
        return _best_of_batches(
            g, n_trials, rng, _phases(g.weights, p, boost_factor, threshold)
        )
    best_value, best_side = math.inf, None
    for _ in range(n_trials):
        value, side = _recursive_trial(method, g, p, boost_factor, threshold, rng)
        if value < best_value:
            best_value, best_side = value, side
    return best_value, best_side


def _best_of_batches(
    g: WeightedGraph,
    n_trials: int,
    rng: np.random.Generator,
    phases: list[tuple[np.ndarray, int]],
) -> tuple[float, np.ndarray]:
    """The smallest cut of ``n_trials`` trials, drawn in batches the kernel can take at once."""
    best_value, best_side = math.inf, None
    done = 0
    while done < n_trials:
        size = min(contraction.max_batch(), n_trials - done)
        cut, side = _batch(g, size, rng, phases)
        i = int(np.argmin(cut))
        if cut[i] < best_value:
            best_value, best_side = float(cut[i]), side[i]
        done += size
    return best_value, best_side
