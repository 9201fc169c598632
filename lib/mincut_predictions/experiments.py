"""The paper's metric (Sec. 5): independent trials until a minimum cut is found."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_budget, check_int, check_real, check_rng
from icml25.kernels import contraction

from .baselines import stoer_wagner
from .defaults import DEFAULTS
from .graph import GraphLike, WeightedGraph, validate_graph
from .method import (
    _batch,
    _check_method,
    _largest_batch_bytes,
    _operations,
    _phases,
    _recursive_trial,
)

__all__ = ["TrialsResult", "trials_until_min_cut"]


@dataclass(frozen=True)
class TrialsResult:
    """Trials until the first minimum cut, per independent repetition.

    Attributes:
        n_trials: (n_reps,) int64, trials used in each repetition (= ``cap`` when censored).
        censored: (n_reps,) bool, True when no minimum cut was found within ``cap`` trials.
        opt_value: the optimum the cuts were compared with.
        cap: the censoring cap.
    """

    n_trials: np.ndarray
    censored: np.ndarray
    opt_value: float
    cap: int

    @property
    def mean(self) -> float:
        """Mean trials (a lower bound on the true mean when some repetitions are censored)."""
        return float(self.n_trials.mean())

    @property
    def censored_fraction(self) -> float:
        """Fraction of the repetitions that hit the cap without finding a minimum cut."""
        return float(self.censored.mean())


def trials_until_min_cut(
    edges: GraphLike,
    weights: ArrayLike | None = None,
    n: int | None = None,
    method: str = "karger",
    p: ArrayLike | None = None,
    boost_factor: float | None = None,
    threshold: int = 2,
    n_reps: int = 1,
    cap: int | None = None,
    opt_value: float | None = None,
    *,
    rng: np.random.Generator,
) -> TrialsResult:
    """The paper's metric (Sec. 5): independent trials until a cut of optimal value appears.

    Each repetition repeats the method (one Karger trial, or one Karger–Stein/FPZ run) until it
    returns a cut of value ``<= opt (1 + 1e-9) + 1e-12``, or until ``cap`` trials (then the
    repetition is censored and counts ``cap``). Karger-type trials are drawn in batches of
    doubling size (at most ``icml25.kernels.contraction.max_batch()``); trials after the first
    success in a batch are discarded, so the count is exact.

    Args:
        edges, weights, n: the graph; method, p, boost_factor, threshold: as :func:`min_cut`.
        n_reps: independent repetitions (>= 1). cap: censoring cap (>= 1; default ``n^2``, as
        the official code). opt_value: the optimum (default: :func:`stoer_wagner`).
        rng: ``numpy.random.Generator`` (keyword, required: there is no default stream).

    Returns:
        :class:`TrialsResult`.

    Raises:
        ValueError / TypeError: as :func:`min_cut`; ``n_reps`` or ``cap`` < 1.
        TooLargeError: ``n_reps * cap`` trials could take hours, or their batches cannot fit in
            memory; nothing is run.
    """
    g = validate_graph(edges, weights, n)
    method, p, boost_factor, threshold = _check_method(
        method, g, p, boost_factor, threshold
    )
    rng = check_rng(rng)
    n_reps = check_int(n_reps, "n_reps", low=1)
    cap = g.n * g.n if cap is None else check_int(cap, "cap", low=1)
    check_budget(
        f"trials_until_min_cut(method={method!r}, n={g.n}, m={g.m}, n_reps={n_reps}, cap={cap})",
        n_bytes=_largest_batch_bytes(method, g, cap),
        n_operations=_operations(method, g, float(n_reps) * cap),
    )
    if opt_value is None:
        opt_value = stoer_wagner(g)[0]
    opt_value = check_real(opt_value, "opt_value")
    limit = opt_value * (1 + DEFAULTS.rel_tol) + DEFAULTS.abs_tol
    if method in ("karger", "boosted_karger"):
        phases = _phases(g.weights, p, boost_factor, threshold)
        counts = [_karger_until(g, limit, cap, rng, phases) for _ in range(n_reps)]
    else:
        counts = [
            _recursive_until(method, g, p, boost_factor, threshold, limit, cap, rng)
            for _ in range(n_reps)
        ]
    n_trials = np.array([c for c, _ in counts], dtype=np.int64)
    censored = np.array([not found for _, found in counts], dtype=bool)
    return TrialsResult(
        n_trials=n_trials, censored=censored, opt_value=float(opt_value), cap=cap
    )


def _karger_until(
    g: WeightedGraph,
    limit: float,
    cap: int,
    rng: np.random.Generator,
    phases: list[tuple[np.ndarray, int]],
) -> tuple[int, bool]:
    """Trials until a cut ``<= limit`` (batches of 4, 8, 16, ...), at most ``cap``: (used, found)."""
    used, size = 0, 4
    while used < cap:
        size_now = min(size, cap - used, contraction.max_batch())
        cut, _ = _batch(g, size_now, rng, phases)
        hits = np.flatnonzero(cut <= limit)
        if hits.size:
            return used + int(hits[0]) + 1, True
        used += size_now
        size *= 2
    return used, False


def _recursive_until(
    method: str,
    g: WeightedGraph,
    p: np.ndarray | None,
    boost_factor: float,
    threshold: int,
    limit: float,
    cap: int,
    rng: np.random.Generator,
) -> tuple[int, bool]:
    """Runs of a recursive method until a cut ``<= limit``, at most ``cap``: (used, found)."""
    used = 0
    while used < cap:
        value, _ = _recursive_trial(method, g, p, boost_factor, threshold, rng)
        used += 1
        if value <= limit:
            return used, True
    return used, False
