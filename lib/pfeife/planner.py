"""Graph-schedule co-optimisation (Algorithm 1 of the paper, as the chapter's note reads it) and
the split baselines it is compared with.

For each loop count L (S = L D stages) and each schedule candidate (loop_batch, prefetch_fwd):
start from splits that balance weight + activation bytes per stage (moved earlier up to 10 times
while memory-invalid), then run a beam search (width 2, <= 100 iterations) over neighbours that
move one split by up to +-10 ops (keeping a minimum stage length) or rescale all positions;
score = the cost model's makespan; memory-invalid neighbours are discarded; stop when the beam
no longer changes. Looped families are skipped when the mean stage forward time is <= 3 ms.

Reconstructions (ours): seeding the first beam with the uniform-count and balanced-time splits
as well (``seed_baselines=True``, this book's addition); moving splits "earlier" multiplies their
positions by 0.9; the rescaling factors; the early stop compares a whole loop-count family with
the best plan so far (< 1 % better: stop); ties between equal scores are broken by ``rng``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from icml25.checks import check_array, check_bool, check_int, check_real, check_rng
from icml25.kernels import pipeline_sim

from .cost import CommModel, check_splits
from .defaults import DEFAULTS
from .graph import OpGraph
from .schedule import Event, _check_sched_args, _make_schedule, schedule_candidates

__all__ = [
    "Plan",
    "plan",
    "uniform_count_splits",
    "balanced_time_splits",
    "optimal_splits_dp",
    "score_splits",
    "kernel_tables",
]


def uniform_count_splits(n: int, S: int) -> np.ndarray:
    """Equal numbers of ops per stage: ``round(j n / S)``, j = 1..S-1 (the naive baseline).

    Raises:
        ValueError: ``S < 1`` or ``S > n``.
    """
    n = check_int(n, "n", low=1)
    S = check_int(S, "S", low=1, high=n)
    return np.array([int(round(j * n / S)) for j in range(1, S)], np.int64)


def _check_costs(costs: Any, S: int) -> tuple[np.ndarray, int]:
    c = check_array(costs, "costs", ndim=1, low=0.0, min_size=1).astype(np.float64)
    return c, check_int(S, "S", low=1, high=len(c))


def balanced_time_splits(costs: Any, S: int) -> np.ndarray:
    """Greedy prefix-sum balance by time: split j at the prefix closest to ``j T / S``.

    Our reconstruction of torchgpipe's ``balance_by_time`` idea (profile per-layer times, cut
    the sequence so each partition gets about the same time); torchgpipe itself solves the
    block-partition problem, which :func:`optimal_splits_dp` does exactly.

    Args:
        costs: (n,) float64 per-position cost (e.g. ``f + b`` in linear order). S: stages.

    Returns:
        (S-1,) int64 strictly increasing split points.

    Raises:
        ValueError: negative costs, ``S > n``.
    """
    c, S = _check_costs(costs, S)
    P = np.concatenate([[0.0], np.cumsum(c)])
    n = len(c)
    out, prev = [], 0
    for j in range(1, S):
        t = P[-1] * j / S
        p = int(np.argmin(np.abs(P[1:n] - t))) + 1
        p = min(max(p, prev + 1), n - (S - j))  # keep room for the remaining stages
        out.append(p)
        prev = p
    return np.asarray(out, np.int64)


def optimal_splits_dp(costs: Any, S: int) -> np.ndarray:
    """Exact min-max contiguous partition into S non-empty stages (dynamic programme).

    ``V[s][i] = min_{p < i} max(V[s-1][p], P[i] - P[p])``, ``V[1][i] = P[i]``; O(S n^2).

    Args:
        costs: (n,) float64 per-position cost. S: stages (1..n).

    Returns:
        (S-1,) int64 split points minimising ``max_j sum(costs in stage j)``.

    Raises:
        ValueError: negative costs, ``S > n``; TooLargeError never (n^2 S is small here).
    """
    c, S = _check_costs(costs, S)
    return _dp(c, S)


def _dp(c: np.ndarray, S: int) -> np.ndarray:
    n = len(c)
    P = np.concatenate([[0.0], np.cumsum(c)])
    V = P.copy()  # V[i]: best max over 1 stage covering positions < i
    arg = np.zeros((S, n + 1), np.int64)
    for s in range(2, S + 1):
        newV = np.full(n + 1, np.inf)
        for i in range(s, n + 1):
            p = np.arange(s - 1, i)
            cand = np.maximum(V[p], P[i] - P[p])
            q = int(np.argmin(cand))
            newV[i], arg[s - 1, i] = cand[q], p[q]
        V = newV
    splits, i = [], n
    for s in range(S, 1, -1):
        i = int(arg[s - 1, i])
        splits.append(i)
    return np.asarray(splits[::-1], np.int64)


@dataclass(frozen=True)
class KernelTables:
    """Inputs of :func:`icml25.kernels.pipeline_sim.batched_makespan` for one linearised graph."""

    fp: np.ndarray
    bp: np.ndarray
    op: np.ndarray
    ap: np.ndarray
    wp: np.ndarray
    tmp: np.ndarray
    es: np.ndarray
    ed: np.ndarray
    eb: np.ndarray


def kernel_tables(g: OpGraph, order: Any) -> KernelTables:
    """Prefix sums and position-sorted edges of ``g`` in linear ``order`` (for the batched scorer).

    Raises:
        TypeError: ``g`` not an OpGraph. ValueError: ``order`` not a permutation.
    """
    if not isinstance(g, OpGraph):
        raise TypeError(f"g must be an OpGraph, got {type(g).__name__}")
    order = check_array(order, "order", shape=(g.n,), kind="int")
    if not np.array_equal(np.sort(order), np.arange(g.n)):
        raise ValueError("order must be a permutation of 0..n-1")
    return _tables(g, order)


def _tables(g: OpGraph, order: np.ndarray) -> KernelTables:
    pos = np.empty(g.n, np.int64)
    pos[order] = np.arange(g.n)
    es, ed = pos[g.edges[:, 0]], pos[g.edges[:, 1]]
    eb = g.out_bytes[g.edges[:, 0]]
    srt = np.lexsort((ed, es))
    return KernelTables(
        fp=np.concatenate([[0.0], np.cumsum(g.f_ms[order])]),
        bp=np.concatenate([[0.0], np.cumsum(g.b_ms[order])]),
        op=np.concatenate([[0.0], np.cumsum(g.opt_ms[order])]),
        ap=np.concatenate([[0], np.cumsum(g.act_bytes[order])]).astype(np.int64),
        wp=np.concatenate([[0], np.cumsum(g.w_bytes[order])]).astype(np.int64),
        tmp=g.tmp_bytes[order].astype(np.int64),
        es=es[srt],
        ed=ed[srt],
        eb=eb[srt].astype(np.int64),
    )


def _score(
    t: KernelTables,
    cands: np.ndarray,
    events: np.ndarray,
    comm: CommModel,
    D: int,
    M: int,
) -> tuple[np.ndarray, np.ndarray]:
    return pipeline_sim.batched_makespan(
        t.fp,
        t.bp,
        t.op,
        t.ap,
        t.wp,
        t.tmp,
        t.es,
        t.ed,
        t.eb,
        cands.astype(np.int32),
        events,
        np.array(comm.params),
        D,
        M,
    )


def score_splits(
    g: OpGraph,
    order: Any,
    candidates: Any,
    schedule: list[list[Event]],
    comm: CommModel,
) -> tuple[np.ndarray, np.ndarray]:
    """Makespan (K,) ms and peak memory (K, D) bytes of many split vectors, in one batched call.

    Args:
        g, order: graph and linearisation. candidates: (K, S-1) split points. schedule: per-rank
            events for S stages. comm: transfer model.

    Returns:
        as :func:`icml25.kernels.pipeline_sim.batched_makespan`.

    Raises:
        TypeError, ValueError: as :func:`kernel_tables` and the kernel's validation.
    """
    if not isinstance(comm, CommModel):
        raise TypeError(f"comm must be a CommModel, got {type(comm).__name__}")
    cand = check_array(candidates, "candidates", ndim=2, kind="int")
    S = cand.shape[1] + 1
    M = 1 + max(int(e[1]) for evs in schedule for e in evs)
    ev = pipeline_sim.event_table(schedule, S, M)
    return _score(kernel_tables(g, order), cand, ev, comm, len(schedule), M)


@dataclass(frozen=True)
class Plan:
    """A pipeline plan: splits into the linear order, the schedule, and what the model predicts.

    Attributes:
        order: (n,) linearisation. splits: (S-1,) split points. D, M, S, L, loop_batch, prefetch_fwd.
        schedule: per-rank events. predicted_ms: cost-model makespan. peak_bytes: (D,) memory model.
        search_s: planner wall time. n_evaluated: candidates scored. info: per-family notes.
    """

    order: np.ndarray
    splits: np.ndarray
    D: int
    M: int
    S: int
    L: int
    loop_batch: int
    prefetch_fwd: int
    schedule: list
    predicted_ms: float
    peak_bytes: np.ndarray
    search_s: float = 0.0
    n_evaluated: int = 0
    info: dict = field(default_factory=dict)
    op_names: tuple = ()


def fixed_plan(
    g: OpGraph,
    order: Any,
    splits: Any,
    D: int,
    M: int,
    comm: CommModel,
    loop_batch: int | None = None,
    prefetch_fwd: int = 0,
    schedule: str = "1f1b",
) -> Plan:
    """A :class:`Plan` for given splits (the baselines), scored by the cost model.

    Args:
        g, order, splits: graph, linearisation and S-1 split points (S a multiple of D).
        D, M: ranks and micro-batches. comm: transfer model.
        loop_batch, prefetch_fwd: Pfeife schedule parameters (default ``M`` / ``D``-rounds, 0).
        schedule: ``"1f1b"`` (Pfeife's looped 1F1B) or ``"gpipe"``.

    Returns:
        the plan with its predicted makespan and peak memory.

    Raises:
        ValueError, TypeError: bad splits, schedule parameters or kinds.
    """
    from .schedule import gpipe_schedule

    if not isinstance(g, OpGraph):
        raise TypeError(f"g must be an OpGraph, got {type(g).__name__}")
    order = check_array(order, "order", shape=(g.n,), kind="int")
    s = check_splits(splits, g.n)
    S = len(s) + 1
    M = check_int(M, "M", low=1)
    lb = M if loop_batch is None else loop_batch
    D, M, S, lb, p = _check_sched_args(D, M, S, lb, prefetch_fwd)
    if schedule == "gpipe":
        sched = gpipe_schedule(D, M, S)
    elif schedule == "1f1b":
        sched = _make_schedule(D, M, S, lb, p)
    else:
        raise ValueError(f"schedule must be '1f1b' or 'gpipe', got {schedule!r}")
    mk, peak = score_splits(g, order, s[None, :], sched, comm)
    return Plan(
        order=order,
        splits=s,
        D=D,
        M=M,
        S=S,
        L=S // D,
        loop_batch=lb,
        prefetch_fwd=p,
        schedule=sched,
        predicted_ms=float(mk[0]),
        peak_bytes=peak[0],
        info={"schedule": schedule},
        op_names=g.names,
    )


__all__.append("fixed_plan")


def _increasing(s: np.ndarray) -> np.ndarray:
    """``s`` made strictly increasing and >= 1 (each entry at least one above the previous)."""
    out = np.maximum(np.asarray(s, np.int64), 1)
    for i in range(1, len(out)):
        out[i] = max(out[i], out[i - 1] + 1)
    return out


def _neighbours(
    states: np.ndarray, n: int, move_range: int, min_gap: int, factors: Sequence[float]
) -> np.ndarray:
    """All moves of one split by +-1..move_range and proportional rescalings, kept when every
    stage has at least ``min_gap`` ops."""
    out = []
    for s in states:
        for i in range(len(s)):
            for d in range(-move_range, move_range + 1):
                if d:
                    t = s.copy()
                    t[i] += d
                    out.append(t)
        for f in factors:
            out.append(np.round(s * f).astype(np.int64))
    if not out:
        return np.zeros((0, states.shape[1]), np.int64)
    cand = np.unique(np.asarray(out, np.int64), axis=0)
    b = np.concatenate(
        [
            np.zeros((len(cand), 1), np.int64),
            cand,
            np.full((len(cand), 1), n, np.int64),
        ],
        1,
    )
    ok = np.all(np.diff(b, axis=1) >= min_gap, axis=1)
    return cand[ok]


def plan(
    g: OpGraph,
    D: int,
    M: int,
    capacity_bytes: float,
    comm: CommModel,
    rng: np.random.Generator,
    order: Any = None,
    loop_cnts: Sequence[int] = DEFAULTS.loop_cnts,
    beam: int = DEFAULTS.beam,
    max_iter: int = DEFAULTS.max_iter,
    seed_baselines: bool = True,
    fwd_avg_min_ms: float = DEFAULTS.fwd_avg_min_ms,
) -> Plan:
    """Pfeife's planner: joint search over split points and schedules (Algorithm 1).

    Args:
        g: profiled graph. D: ranks. M: micro-batches per step.
        capacity_bytes: memory per rank; a plan is valid iff every peak < 0.85 x capacity.
        comm: transfer model. rng: breaks ties between equal scores.
        order: linearisation (default graph order). loop_cnts: loop counts L to try.
        beam: beam width. max_iter: beam-search iterations per schedule candidate.
        seed_baselines: also start from the uniform-count and balanced-time splits (this book's
            addition; the paper starts from the memory-balanced splits only).
        fwd_avg_min_ms: skip looped families when the mean stage forward time is at most this
            (the paper's 3 ms; 0 keeps every family).

    Returns:
        the best valid :class:`Plan` found (``info`` records each family's best and the skips).

    Raises:
        TypeError: wrong kinds. ValueError: no memory-valid plan (the message gives the capacity
            the best candidate would need), or no loop count fits ``n`` ops.
    """
    if not isinstance(g, OpGraph):
        raise TypeError(f"g must be an OpGraph, got {type(g).__name__}")
    D = check_int(D, "D", low=1)
    M = check_int(M, "M", low=1)
    cap = check_real(capacity_bytes, "capacity_bytes", low=0.0, low_open=True)
    if not isinstance(comm, CommModel):
        raise TypeError(f"comm must be a CommModel, got {type(comm).__name__}")
    rng = check_rng(rng)
    order = (
        np.arange(g.n)
        if order is None
        else check_array(order, "order", shape=(g.n,), kind="int")
    )
    tables = kernel_tables(g, order)
    loops = [check_int(L, "loop_cnts", low=1) for L in loop_cnts]
    if not loops:
        raise ValueError("loop_cnts must name at least one loop count")
    beam = check_int(beam, "beam", low=1)
    max_iter = check_int(max_iter, "max_iter", low=0)
    seed_baselines = check_bool(seed_baselines, "seed_baselines")
    fmin = check_real(fwd_avg_min_ms, "fwd_avg_min_ms", low=0.0)
    return _plan(
        g,
        D,
        M,
        cap,
        comm,
        rng,
        order,
        tables,
        loops,
        beam,
        max_iter,
        seed_baselines,
        fmin,
    )


def _plan(
    g: OpGraph,
    D: int,
    M: int,
    cap: float,
    comm: CommModel,
    rng: np.random.Generator,
    order: np.ndarray,
    tables: KernelTables,
    loops: list[int],
    beam: int,
    max_iter: int,
    seed_baselines: bool,
    fmin: float = DEFAULTS.fwd_avg_min_ms,
) -> Plan:
    t0 = time.perf_counter()
    n, limit = g.n, DEFAULTS.reserve_mem_ratio * cap
    cost_pos = (g.f_ms + g.b_ms)[order]
    mem_pos = (g.w_bytes + g.act_bytes)[order].astype(np.float64)
    best: Plan | None = None
    need = np.inf
    n_eval = 0
    info: dict[str, Any] = {}
    for L in loops:
        S = L * D
        if S > n:
            info[f"L={L}"] = "skipped: more stages than ops"
            continue
        if L > 1 and g.f_ms.sum() / S <= fmin:
            info[f"L={L}"] = (
                f"skipped: mean stage forward {g.f_ms.sum() / S:.2f} ms <= {fmin} ms"
            )
            continue
        min_gap = max(1, n // ((S + 1) * DEFAULTS.min_gap_div))
        fam_best: Plan | None = None
        for lb, pf in schedule_candidates(D, M, S):
            sched = _make_schedule(D, M, S, lb, pf)
            ev = pipeline_sim.event_table(sched, S, M)
            init = (
                balanced_time_splits(mem_pos + 1e-9, S)
                if mem_pos.sum() > 0
                else uniform_count_splits(n, S)
            )
            # move the start earlier while memory-invalid
            for _ in range(DEFAULTS.init_repair_steps):
                _mk, pk = _score(tables, init[None, :], ev, comm, D, M)
                n_eval += 1
                if pk[0].max() < limit:
                    break
                init = _increasing(np.round(init * 0.9).astype(np.int64))
            starts = [init]
            if seed_baselines:
                starts += [
                    uniform_count_splits(n, S),
                    balanced_time_splits(cost_pos, S),
                ]
            st = np.unique(np.asarray([check_splits(s, n, S) for s in starts]), axis=0)
            mk, pk = _score(tables, st, ev, comm, D, M)
            n_eval += len(st)
            need = min(need, float(pk.max(1).min()) / DEFAULTS.reserve_mem_ratio)
            ok = pk.max(1) < limit
            if not ok.any():
                continue
            st, mk = st[ok], mk[ok]
            keep = np.lexsort((rng.permutation(len(mk)), mk))[:beam]
            beam_s, beam_mk = st[keep], mk[keep]
            for _it in range(max_iter):
                nb = _neighbours(
                    beam_s, n, DEFAULTS.move_range, min_gap, DEFAULTS.rescale_factors
                )
                if not len(nb):
                    break
                nmk, npk = _score(tables, nb, ev, comm, D, M)
                n_eval += len(nb)
                valid = npk.max(1) < limit
                pool = np.concatenate([beam_s, nb[valid]])
                pmk = np.concatenate([beam_mk, nmk[valid]])
                pool, idx = np.unique(pool, axis=0, return_index=True)
                pmk = pmk[idx]
                keep = np.lexsort((rng.permutation(len(pmk)), pmk))[:beam]
                new_s, new_mk = pool[keep], pmk[keep]
                if new_s.shape == beam_s.shape and np.array_equal(
                    np.sort(new_mk), np.sort(beam_mk)
                ):
                    break  # both beams locally optimal
                beam_s, beam_mk = new_s, new_mk
            i = int(np.argmin(beam_mk))
            _m, pk1 = _score(tables, beam_s[i : i + 1], ev, comm, D, M)
            cand = Plan(
                order=order,
                splits=beam_s[i],
                D=D,
                M=M,
                S=S,
                L=L,
                loop_batch=lb,
                prefetch_fwd=pf,
                schedule=sched,
                predicted_ms=float(beam_mk[i]),
                peak_bytes=pk1[0],
            )
            if fam_best is None or cand.predicted_ms < fam_best.predicted_ms:
                fam_best = cand
        if fam_best is None:
            info[f"L={L}"] = "no memory-valid plan"
            continue
        info[f"L={L}"] = (
            f"best {fam_best.predicted_ms:.3f} ms (loop_batch {fam_best.loop_batch}, prefetch {fam_best.prefetch_fwd})"
        )
        if (
            best is not None
            and fam_best.predicted_ms
            > (1 - DEFAULTS.early_stop_gain) * best.predicted_ms
        ):
            if fam_best.predicted_ms < best.predicted_ms:
                best = fam_best
            info["early_stop"] = f"L={L} improved by < {DEFAULTS.early_stop_gain:.0%}"
            break
        if best is None or fam_best.predicted_ms < best.predicted_ms:
            best = fam_best
    if best is None:
        raise ValueError(
            f"no memory-valid plan: capacity_bytes = {cap:.4g}; the best candidate needs "
            f"capacity_bytes >= {need:.4g} (peak / {DEFAULTS.reserve_mem_ratio})"
        )
    return Plan(
        **{
            **best.__dict__,
            "search_s": time.perf_counter() - t0,
            "n_evaluated": n_eval,
            "info": info,
            "op_names": g.names,
        }
    )
