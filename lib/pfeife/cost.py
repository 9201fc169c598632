"""Pfeife's cost and memory models (Sec. 4 of the paper as the chapter's note reads it).

The cost model is a DAG over events (stage j, micro-batch k, forward or backward). Edges: data
dependencies (forward j -> j' when stage j sends bytes to j'; backward j' -> j for the gradients),
each weighted by the sender's compute time plus the fitted transfer time ``comm(bytes)`` (zero on
one rank), and each rank's program order. The makespan is the longest path, plus each rank's
optimizer time. The memory model walks each rank's schedule: a forward adds the stage's saved
activations, a backward frees them, on top of the weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.checks import check_array, check_real

from .graph import OpGraph, cut_matrix
from .schedule import Event, check_schedule

__all__ = [
    "CommModel",
    "StageCosts",
    "stage_costs",
    "simulate",
    "simulate_contention",
    "peak_memory",
    "replay_makespan",
    "bubble_fraction",
    "check_splits",
]


@dataclass(frozen=True)
class CommModel:
    """Point-to-point transfer time, a biased ReLU (Sec. 4; ``device_bench.py``).

    ``t(x) = c_ms`` for ``x <= x0_bytes``, else ``c_ms + m_ms_per_byte (x - x0_bytes)``.
    """

    c_ms: float = 0.0
    m_ms_per_byte: float = 0.0
    x0_bytes: float = 0.0

    def __post_init__(self) -> None:
        for name in ("c_ms", "m_ms_per_byte", "x0_bytes"):
            check_real(getattr(self, name), name, low=0.0)

    @staticmethod
    def fit(nbytes: Any, ms: Any) -> "CommModel":
        """Least-squares fit of the biased ReLU to measured transfers (``scipy.optimize.curve_fit``).

        Args:
            nbytes: (k,) transfer sizes in bytes, k >= 3, at least 3 distinct. ms: (k,) times in ms.

        Returns:
            the fitted model (parameters clipped at 0).

        Raises:
            ValueError: mismatched shapes, fewer than 3 distinct sizes, negative values.
        """
        x = check_array(nbytes, "nbytes", ndim=1, low=0.0).astype(np.float64)
        y = check_array(ms, "ms", shape=(len(x),), low=0.0).astype(np.float64)
        if len(np.unique(x)) < 3:
            raise ValueError(
                "nbytes must hold at least 3 distinct sizes to fit 3 parameters"
            )
        return _fit_biased_relu(x, y)

    def time(self, nbytes: Any) -> np.ndarray:
        """Transfer time in ms of each size in ``nbytes`` (array-like of bytes >= 0).

        Raises:
            ValueError: negative or non-finite sizes.
        """
        x = check_array(nbytes, "nbytes", low=0.0).astype(np.float64)
        return _comm_time(x, self.c_ms, self.m_ms_per_byte, self.x0_bytes)

    @property
    def params(self) -> tuple[float, float, float]:
        """``(c_ms, m_ms_per_byte, x0_bytes)``."""
        return (float(self.c_ms), float(self.m_ms_per_byte), float(self.x0_bytes))


def _comm_time(x: Any, c: float, m: float, x0: float) -> Any:
    """``t(x) = c + m max(x - x0, 0)`` (the biased ReLU; x in bytes, t in ms)."""
    return np.where(x > x0, c + m * (x - x0), c)


def _fit_biased_relu(x: np.ndarray, y: np.ndarray) -> CommModel:
    from scipy.optimize import curve_fit

    scale = max(float(x.max()), 1.0)
    xs = x / scale  # fit in units of the largest size
    best = None
    for x0_init in (0.0, 0.1, 0.3):  # the kink makes the loss non-smooth: restart
        slope0 = max((y.max() - y.min()) / max(1.0 - x0_init, 1e-3), 1e-9)
        try:
            p, _ = curve_fit(
                lambda t, c, m, x0: np.where(t > x0, c + m * (t - x0), c),
                xs,
                y,
                p0=(max(float(y.min()), 1e-6), slope0, x0_init),
                bounds=([0.0, 0.0, 0.0], [np.inf, np.inf, 1.0]),
                maxfev=20_000,
            )
        except RuntimeError:
            continue
        r = float(np.sum((_comm_time(xs, *p) - y) ** 2))
        if best is None or r < best[0]:
            best = (r, p)
    if best is None:
        raise ValueError("the biased-ReLU fit did not converge on these transfers")
    c, m, x0 = best[1]
    return CommModel(float(c), float(m) / scale, float(x0) * scale)


def check_splits(splits: Any, n: int, S: int | None = None) -> np.ndarray:
    """``splits`` as (S-1,) int64, strictly increasing, each in ``1..n-1``.

    Raises:
        ValueError: not increasing, out of range, or not ``S - 1`` of them (when ``S`` given).
    """
    s = check_array(splits, "splits", ndim=1, kind="int")
    if S is not None and len(s) != S - 1:
        raise ValueError(f"splits must hold S - 1 = {S - 1} split points, got {len(s)}")
    if len(s) and (s.min() < 1 or s.max() > n - 1 or np.any(np.diff(s) <= 0)):
        raise ValueError(
            f"splits must be strictly increasing integers in 1..{n - 1}, got {s.tolist()}"
        )
    return s


@dataclass(frozen=True)
class StageCosts:
    """Per-stage quantities of one split, from prefix sums over the linear order.

    Attributes: F, B (S,) float64 ms; opt (D,) float64 ms per rank; act (S,) int64 saved bytes;
    tmp (S,) int64 largest transient; w (D,) int64 weight bytes per rank; C (S, S) int64 bytes.
    """

    F: np.ndarray
    B: np.ndarray
    opt: np.ndarray
    act: np.ndarray
    tmp: np.ndarray
    w: np.ndarray
    C: np.ndarray


def stage_costs(
    g: OpGraph, order: np.ndarray, splits: np.ndarray, D: int
) -> StageCosts:
    """Stage sums ``F_j = sum_{p in stage j} f_{order[p]}`` (and B, act, tmp, weights, cut bytes).

    Trusted inputs (public callers validate). Sums are differences of float64 prefix sums, in the
    same order as the kernel computes them, so both give bit-identical results.
    """
    S = len(splits) + 1
    bounds = np.concatenate([[0], np.asarray(splits, np.int64), [g.n]])
    fp = np.concatenate([[0.0], np.cumsum(g.f_ms[order])])
    bp = np.concatenate([[0.0], np.cumsum(g.b_ms[order])])
    op = np.concatenate([[0.0], np.cumsum(g.opt_ms[order])])
    ap = np.concatenate([[0], np.cumsum(g.act_bytes[order])])
    wp = np.concatenate([[0], np.cumsum(g.w_bytes[order])])
    lo, hi = bounds[:-1], bounds[1:]
    F, B, O = fp[hi] - fp[lo], bp[hi] - bp[lo], op[hi] - op[lo]
    tmp_ord = g.tmp_bytes[order]
    T = np.array([tmp_ord[a:b].max() if b > a else 0 for a, b in zip(lo, hi)], np.int64)
    opt = np.zeros(D)
    w = np.zeros(D, np.int64)
    for j in range(S):
        opt[j % D] += O[j]
        w[j % D] += wp[hi[j]] - wp[lo[j]]
    return StageCosts(
        F=F,
        B=B,
        opt=opt,
        act=(ap[hi] - ap[lo]).astype(np.int64),
        tmp=T,
        w=w,
        C=cut_matrix(g, order, splits),
    )


def _simulate_events(
    schedule: list[list[Event]],
    dur: np.ndarray,
    C: np.ndarray,
    comm: tuple[float, float, float],
    opt: np.ndarray,
    channel: bool = False,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Longest path of the event DAG by a rank-by-rank sweep (each rank's list is a topological
    order of its events, so a sweep that runs every ready event reaches the fixed point).

    ``start(e) = max(finish(prev on rank), max_{data pred p} finish(p) + comm(C))``, with
    ``comm = 0`` between stages on one rank; ``finish = start + dur``. ``dur`` is (2, S, M):
    forward and backward ms of each (stage, micro-batch). With ``channel=True`` each directed
    rank pair carries one transfer at a time, first come first served in sweep order.

    Returns: makespan ms, busy ms (D,), events (E, 6) float64 rows (rank, stage, mb, kind, start, finish).
    """
    D = len(schedule)
    S, M = dur.shape[1], dur.shape[2]
    c, m, x0 = comm
    fin = np.full((2, S, M), np.nan)
    pos = [0] * D
    t_rank = [0.0] * D
    busy = np.zeros(D)
    chan_free: dict[tuple[int, int], float] = {}
    rows = []
    total = sum(len(e) for e in schedule)
    done = 0
    while done < total:
        progressed = False
        for r in range(D):
            while pos[r] < len(schedule[r]):
                j, k, kind = schedule[r][pos[r]]
                kd = 0 if kind == "F" else 1
                if kd == 0:
                    preds = [(i, 0) for i in range(j) if C[i, j] > 0]
                    nbytes = [C[i, j] for i in range(j) if C[i, j] > 0]
                else:
                    preds = [(i, 1) for i in range(j + 1, S) if C[j, i] > 0]
                    nbytes = [C[j, i] for i in range(j + 1, S) if C[j, i] > 0]
                if any(np.isnan(fin[pk, i, k]) for i, pk in preds) or (
                    kd == 1 and np.isnan(fin[0, j, k])
                ):
                    break
                start = t_rank[r]
                if kd == 1:
                    start = max(start, fin[0, j, k])
                for (i, pk), nb in zip(preds, nbytes):
                    if i % D == r:
                        arrive = fin[pk, i, k] + 0.0
                    elif channel:
                        src, dst = (i % D, r)
                        t0 = max(fin[pk, i, k], chan_free.get((src, dst), 0.0))
                        arrive = t0 + float(_comm_time(np.float64(nb), c, m, x0))
                        chan_free[(src, dst)] = arrive
                    else:
                        arrive = fin[pk, i, k] + float(
                            _comm_time(np.float64(nb), c, m, x0)
                        )
                    start = max(start, arrive)
                f = start + dur[kd, j, k]
                fin[kd, j, k] = f
                t_rank[r] = f
                busy[r] += dur[kd, j, k]
                rows.append((r, j, k, kd, start, f))
                pos[r] += 1
                done += 1
                progressed = True
        if not progressed:
            stuck = {
                r: schedule[r][pos[r]] for r in range(D) if pos[r] < len(schedule[r])
            }
            raise ValueError(f"the schedule deadlocks: every rank waits ({stuck})")
    ends = np.array([t_rank[r] + opt[r] for r in range(D)])
    return (
        float(ends.max()),
        busy + opt,
        np.asarray(rows, dtype=np.float64).reshape(-1, 6),
    )


def _prep(
    g: OpGraph, order: Any, splits: Any, schedule: Any
) -> tuple[np.ndarray, np.ndarray, list, int, int]:
    if not isinstance(g, OpGraph):
        raise TypeError(f"g must be an OpGraph, got {type(g).__name__}")
    order = check_array(order, "order", shape=(g.n,), kind="int")
    if not np.array_equal(np.sort(order), np.arange(g.n)):
        raise ValueError("order must be a permutation of 0..n-1")
    pos = np.empty(g.n, np.int64)
    pos[order] = np.arange(g.n)
    if len(g.edges) and np.any(pos[g.edges[:, 0]] >= pos[g.edges[:, 1]]):
        raise ValueError("order must be a topological order of g.edges")
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise TypeError("schedule must be a non-empty list of per-rank event lists")
    s = check_array(splits, "splits", ndim=1, kind="int")
    S = len(s) + 1
    M = 1 + max((int(e[1]) for evs in schedule for e in evs), default=0)
    sched = check_schedule(schedule, S, M)
    return order, check_splits(s, g.n, S), sched, S, M


def _check_comm(comm: Any) -> tuple[float, float, float]:
    if not isinstance(comm, CommModel):
        raise TypeError(f"comm must be a CommModel, got {type(comm).__name__}")
    return comm.params


def simulate(
    g: OpGraph, order: Any, splits: Any, schedule: list[list[Event]], comm: CommModel
) -> tuple[float, np.ndarray, np.ndarray]:
    """Predicted step time of a plan: the longest path of Pfeife's event DAG (Sec. 4, cost model).

    Args:
        g: profiled graph. order: (n,) linearisation. splits: (S-1,) split points into ``order``.
        schedule: per-rank events (rank r runs stages ``j = r mod D``). comm: transfer-time model.

    Returns:
        ``(makespan_ms, busy_ms (D,), events)``: events is (E, 6) float64 rows
        ``(rank, stage, micro_batch, kind 0=F/1=B, start_ms, finish_ms)``; busy includes the
        optimizer step.

    Raises:
        TypeError: wrong argument kinds. ValueError: order not a topological permutation, bad
            splits, an invalid or deadlocking schedule.
    """
    order, splits, sched, S, M = _prep(g, order, splits, schedule)
    sc = stage_costs(g, order, splits, len(sched))
    dur = np.stack([np.repeat(sc.F[:, None], M, 1), np.repeat(sc.B[:, None], M, 1)])
    return _simulate_events(sched, dur, sc.C, _check_comm(comm), sc.opt)


def simulate_contention(
    g: OpGraph, order: Any, splits: Any, schedule: list[list[Event]], comm: CommModel
) -> tuple[float, np.ndarray, np.ndarray]:
    """:func:`simulate` with one transfer at a time per directed rank pair (Sec. 4, refined model).

    Transfers that share a channel are served first come, first served in the sweep's order
    (the official ``calc_schedule`` tries both orders of two overlapping transfers and keeps the
    shorter path; this simplification is ours). Never below :func:`simulate`'s makespan.

    Returns / Raises: as :func:`simulate`.
    """
    order, splits, sched, S, M = _prep(g, order, splits, schedule)
    sc = stage_costs(g, order, splits, len(sched))
    dur = np.stack([np.repeat(sc.F[:, None], M, 1), np.repeat(sc.B[:, None], M, 1)])
    return _simulate_events(sched, dur, sc.C, _check_comm(comm), sc.opt, channel=True)


def replay_makespan(
    schedule: list[list[Event]],
    dur_ms: Any,
    C: Any,
    comm: CommModel,
    opt_ms: Any = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """The cost model replayed from measured event times (for prediction-error checks).

    Args:
        schedule: per-rank events. dur_ms: (2, S, M) measured forward/backward ms per event.
        C: (S, S) int64 cut bytes. comm: transfer model. opt_ms: (D,) measured optimizer ms (default 0).

    Returns / Raises: as :func:`simulate`.
    """
    dur = check_array(dur_ms, "dur_ms", ndim=3, low=0.0).astype(np.float64)
    S, M = dur.shape[1], dur.shape[2]
    sched = check_schedule(schedule, S, M)
    Cm = check_array(C, "C", shape=(S, S), kind="int", low=0)
    opt = (
        np.zeros(len(sched))
        if opt_ms is None
        else check_array(opt_ms, "opt_ms", shape=(len(sched),), low=0.0)
    )
    return _simulate_events(sched, dur, Cm, _check_comm(comm), opt)


def peak_memory(
    g: OpGraph, order: Any, splits: Any, schedule: list[list[Event]]
) -> np.ndarray:
    """Peak bytes per rank under the memory model (Sec. 4).

    ``idle_r = sum of weight bytes of rank r's stages``; walking rank r's events, a forward adds
    the stage's saved activations ``a_j`` (and the peak sees ``+ tau_j``, its largest transient),
    a backward sees ``+ tau_j`` and frees ``a_j``.

    Returns:
        (D,) int64 peak bytes.

    Raises:
        as :func:`simulate`.
    """
    order, splits, sched, S, M = _prep(g, order, splits, schedule)
    sc = stage_costs(g, order, splits, len(sched))
    return _peak_memory(sched, sc.act, sc.tmp, sc.w)


def _peak_memory(
    sched: list[list[Event]], act: np.ndarray, tmp: np.ndarray, w: np.ndarray
) -> np.ndarray:
    """``peak_r = max_t (w_r + sum_{F done, B not} a_j + tau_{j(t)})`` over rank r's events."""
    out = np.zeros(len(sched), np.int64)
    for r, evs in enumerate(sched):
        cur = int(w[r])
        peak = cur
        for j, _k, kind in evs:
            if kind == "F":
                cur += int(act[j])
                peak = max(peak, cur + int(tmp[j]))
            else:
                peak = max(peak, cur + int(tmp[j]))
                cur -= int(act[j])
        out[r] = peak
    return out


def bubble_fraction(makespan_ms: float, busy_ms: Any) -> float:
    """Idle share of the pipeline: ``1 - mean(busy) / makespan``.

    For D equal stages, M micro-batches and no communication GPipe and 1F1B give
    ``(D - 1) / (M + D - 1)`` (Huang et al. 2019).

    Raises:
        ValueError: a non-positive makespan or negative busy times.
    """
    T = check_real(makespan_ms, "makespan_ms", low=0.0, low_open=True)
    b = check_array(busy_ms, "busy_ms", ndim=1, low=0.0, min_size=1)
    return float(1.0 - b.mean() / T)
