"""Batched pipeline cost model (chapter 13, Pfeife, Jhoo, Hur and Lopes, ICML 2025).

:func:`batched_makespan` scores ``K`` candidate split vectors of one linearised graph under one
schedule: for each candidate it forms the stage sums from prefix sums, the stage-to-stage cut
bytes, and relaxes the event DAG (stage, micro-batch, F/B) of the cost model in a static
topological order, then walks each rank's program for the memory model. Outputs: ``makespan (K,)``
float64 ms and ``peak_mem (K, D)`` int64 bytes. The CPU reference (NumPy, vectorised over
candidates) is the contract; it equals ``icml25.pfeife.simulate`` / ``peak_memory`` exactly
(tests). The CUDA kernel (``pipeline_sim.cu``) runs one thread per candidate.

:func:`event_table` builds the static order: a topological order of the event DAG in which
forward (j, k) may depend on every forward (i < j, k) and backward (j, k) on every backward
(i > j, k), plus program order. Any candidate's real dependencies are a subset, so one order
serves all candidates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget, check_int
from icml25.common import gpu_available

__all__ = [
    "MAX_S",
    "MAX_EVENTS",
    "event_table",
    "batched_makespan",
    "batched_makespan_reference",
    "batched_makespan_gpu",
]

#: the kernel keeps a (S, S) cut matrix and a finish time per event
#: in registers/local memory
MAX_S = 32
MAX_EVENTS = 4096
_BLOCK = 128


def event_table(
    schedule: list[list[tuple[int, int, str]]], S: int, M: int
) -> np.ndarray:
    """The schedule as a flat table in a static topological order of the superset event DAG.

    Args:
        schedule: per-rank lists of ``(stage, mb, "F" | "B")`` (rank r runs stages ``r mod D``).
        S: stages. M: micro-batches.

    Returns:
        (E, 5) int32 rows ``(rank, stage, mb, kind 0=F/1=B, index of the rank's previous event
        in this table or -1)``.

    Raises:
        TypeError: not a list of event lists. ValueError: an event out of range, or the superset
            DAG has a cycle (the schedule deadlocks or waits on a later stage's forward).
    """
    S = check_int(S, "S", low=1, high=MAX_S)
    M = check_int(M, "M", low=1)
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise TypeError("schedule must be a non-empty list of per-rank event lists")
    D = len(schedule)
    pos = [0] * D
    done = np.zeros((2, S, M), bool)
    last = [-1] * D
    rows: list[tuple[int, int, int, int, int]] = []
    total = sum(len(e) for e in schedule)
    while len(rows) < total:
        progressed = False
        for r in range(D):
            while pos[r] < len(schedule[r]):
                j, k, kind = schedule[r][pos[r]]
                j, k = int(j), int(k)
                if not (0 <= j < S and 0 <= k < M and kind in ("F", "B")):
                    raise ValueError(
                        f"schedule[{r}] holds an event out of range: {schedule[r][pos[r]]!r}"
                    )
                kd = 0 if kind == "F" else 1
                ok = (
                    done[0, :j, k].all()
                    if kd == 0
                    else (done[1, j + 1 :, k].all() and done[0, j, k])
                )
                if not ok:
                    break
                done[kd, j, k] = True
                rows.append((r, j, k, kd, last[r]))
                last[r] = len(rows) - 1
                pos[r] += 1
                progressed = True
        if not progressed:
            raise ValueError(
                "the schedule has no static topological order (a cycle in its event DAG)"
            )
    return np.asarray(rows, dtype=np.int32).reshape(-1, 5)


def _check_inputs(
    f_prefix: Any,
    b_prefix: Any,
    opt_prefix: Any,
    act_prefix: Any,
    w_prefix: Any,
    tmp_ord: Any,
    edge_src: Any,
    edge_dst: Any,
    edge_bytes: Any,
    candidates: Any,
    events: Any,
    comm: Any,
    D: int,
    M: int,
) -> tuple:
    fp = check_array(f_prefix, "f_prefix", ndim=1, dtype=np.float64, min_size=2)
    n = len(fp) - 1
    bp = check_array(b_prefix, "b_prefix", shape=(n + 1,), dtype=np.float64)
    op = check_array(opt_prefix, "opt_prefix", shape=(n + 1,), dtype=np.float64)
    ap = check_array(act_prefix, "act_prefix", shape=(n + 1,), kind="int")
    wp = check_array(w_prefix, "w_prefix", shape=(n + 1,), kind="int")
    tmp = check_array(tmp_ord, "tmp_ord", shape=(n,), kind="int", low=0)
    es = check_array(edge_src, "edge_src", ndim=1, kind="int", low=0, high=n - 1)
    ed = check_array(
        edge_dst, "edge_dst", shape=(len(es),), kind="int", low=0, high=n - 1
    )
    eb = check_array(edge_bytes, "edge_bytes", shape=(len(es),), kind="int", low=0)
    if len(es) > 1 and np.any(np.diff(es) < 0):
        raise ValueError("edge_src must be sorted (edges grouped by producer position)")
    shp = np.shape(candidates)
    # refuse before converting (a huge candidate table would be copied first)
    if len(shp) == 2:
        check_budget(
            f"batched_makespan(K={shp[0]})",
            n_bytes=float(shp[0]) * (shp[1] + 1) * 8 * 4,
        )
    cand = check_array(candidates, "candidates", ndim=2, kind="int")
    S = cand.shape[1] + 1
    if S > MAX_S:
        raise ValueError(
            f"candidates: at most {MAX_S} stages (S - 1 = {MAX_S - 1} columns), got S = {S}"
        )
    if cand.size and (
        cand.min() < 1
        or cand.max() > n - 1
        or (S > 2 and np.any(np.diff(cand, axis=1) <= 0))
    ):
        raise ValueError(
            f"candidates: each row must be strictly increasing split points in 1..{n - 1}"
        )
    ev = check_array(events, "events", ndim=2, kind="int")
    if ev.shape[1] != 5:
        raise ValueError(f"events must be (E, 5) from event_table, got {ev.shape}")
    D = check_int(D, "D", low=1, high=S)
    M = check_int(M, "M", low=1)
    if 2 * S * M > MAX_EVENTS:
        raise ValueError(
            f"events: 2 S M = {2 * S * M} exceeds the kernel's {MAX_EVENTS} events"
        )
    if len(ev) and (ev[:, 0].max() >= D or ev[:, 1].max() >= S or ev[:, 2].max() >= M):
        raise ValueError("events name a rank, stage or micro-batch outside D, S or M")
    cm = check_array(comm, "comm", shape=(3,), dtype=np.float64, low=0.0)
    check_budget(
        f"batched_makespan(K={len(cand)})",
        n_bytes=float(len(cand)) * (2 * S * M * 8 + S * S * 8 + 64),
        n_operations=float(len(cand)) * (len(ev) * S + len(es) * S + n),
    )
    return (
        fp,
        bp,
        op,
        ap,
        wp,
        tmp,
        es,
        ed,
        eb,
        cand.astype(np.int64),
        ev.astype(np.int64),
        cm,
        D,
        M,
    )


def _range_max_table(tmp: np.ndarray) -> list[np.ndarray]:
    """Sparse table ``st[l][i] = max(tmp[i : i + 2^l])`` for O(1) range maxima."""
    st = [np.asarray(tmp, np.int64)]
    l = 1
    while (1 << l) <= len(tmp):
        prev, h = st[-1], 1 << (l - 1)
        st.append(np.maximum(prev[:-h], prev[h:]))
        l += 1
    return st


def _range_max(st: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    span = np.maximum(hi - lo, 1)
    lvl = np.floor(np.log2(span)).astype(np.int64)
    out = np.zeros(len(lo), np.int64)
    for l in np.unique(lvl):
        sel = lvl == l
        a = st[l][lo[sel]]
        b = st[l][hi[sel] - (1 << l)]
        out[sel] = np.maximum(a, b)
    return np.where(hi > lo, out, 0)


def _batched_reference(fp, bp, op, ap, wp, tmp, es, ed, eb, cand, ev, cm, D, M):
    """The cost model for every candidate at once (NumPy over the candidate axis).

    Per candidate: ``F_j = fp[hi_j] - fp[lo_j]`` (and B, opt, act, weights); ``C[su, sv] +=
    bytes(u)`` once per (producer u, consumer stage sv != su); then for each event in the static
    order ``start = max(prev on rank, fin[F j k] if B, max_p fin[p] + comm(C))``, ``comm(x) = c +
    m max(x - x0, 0)`` across ranks and 0 on one rank; makespan = ``max_r(t_r + opt_r)``.
    """
    K, S = len(cand), cand.shape[1] + 1
    n = len(fp) - 1
    c, m, x0 = (float(v) for v in cm)
    bounds = np.concatenate(
        [np.zeros((K, 1), np.int64), cand, np.full((K, 1), n, np.int64)], 1
    )
    lo, hi = bounds[:, :-1], bounds[:, 1:]
    F, B, O = fp[hi] - fp[lo], bp[hi] - bp[lo], op[hi] - op[lo]
    A, W = ap[hi] - ap[lo], wp[hi] - wp[lo]
    st = _range_max_table(tmp)
    T = _range_max(st, lo.ravel(), hi.ravel()).reshape(K, S)
    opt = np.zeros((K, D))
    w = np.zeros((K, D), np.int64)
    for j in range(S):
        opt[:, j % D] += O[:, j]
        w[:, j % D] += W[:, j]
    # stage of a linear position p: number of splits <= p
    C = np.zeros((K, S, S), np.int64)
    kk = np.arange(K)
    if len(es):
        starts = np.flatnonzero(np.r_[True, es[1:] != es[:-1]])
        ends = np.r_[starts[1:], len(es)]
        for a, b in zip(starts, ends):
            su = (cand <= es[a]).sum(1)
            hit = np.zeros((K, S), bool)
            for e in range(a, b):
                hit[kk, (cand <= ed[e]).sum(1)] = True
            hit[kk, su] = False
            C[kk[:, None], su[:, None], np.arange(S)[None, :]] += hit * eb[a]
    fin = np.zeros((K, 2, S, M))
    t_rank = np.zeros((K, D))
    for r, j, k, kd, _prev in ev:
        start = t_rank[:, r].copy()
        if kd == 0:
            preds = range(j)
            nb_all = C[:, :j, j]
        else:
            start = np.maximum(start, fin[:, 0, j, k])
            preds = range(j + 1, S)
            nb_all = C[:, j, j + 1 :]
        for q, i in enumerate(preds):
            nb = nb_all[:, q]
            if i % D == r:
                arrive = fin[:, kd, i, k] + 0.0
            else:
                x = nb.astype(np.float64)
                arrive = fin[:, kd, i, k] + np.where(x > x0, c + m * (x - x0), c)
            start = np.where(nb > 0, np.maximum(start, arrive), start)
        dur = F[:, j] if kd == 0 else B[:, j]
        fin[:, kd, j, k] = start + dur
        t_rank[:, r] = fin[:, kd, j, k]
    makespan = (t_rank + opt).max(1)
    # memory model: each rank's own program order
    cur = w.copy()
    peak = w.copy()
    # stable by rank: program order per rank
    order = np.lexsort((np.arange(len(ev)), ev[:, 0]))
    for idx in order:
        r, j, _k, kd, _p = ev[idx]
        if kd == 0:
            cur[:, r] += A[:, j]
            peak[:, r] = np.maximum(peak[:, r], cur[:, r] + T[:, j])
        else:
            peak[:, r] = np.maximum(peak[:, r], cur[:, r] + T[:, j])
            cur[:, r] -= A[:, j]
    return makespan, peak


def batched_makespan_reference(
    f_prefix: Any,
    b_prefix: Any,
    opt_prefix: Any,
    act_prefix: Any,
    w_prefix: Any,
    tmp_ord: Any,
    edge_src: Any,
    edge_dst: Any,
    edge_bytes: Any,
    candidates: Any,
    events: Any,
    comm: Any,
    D: int,
    M: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Makespan and per-rank peak memory of ``K`` candidate splits (NumPy reference, the contract).

    Args:
        f_prefix, b_prefix, opt_prefix: (n+1,) float64 prefix sums of forward, backward and
            optimizer ms over the linear order (``[0, x_0, x_0 + x_1, ...]``).
        act_prefix, w_prefix: (n+1,) int64 prefix sums of saved-activation and weight bytes.
        tmp_ord: (n,) int64 transient bytes in linear order.
        edge_src, edge_dst: (m,) linear positions of each edge's producer and consumer, sorted by
            producer. edge_bytes: (m,) int64 bytes of the producer's output.
        candidates: (K, S-1) int32 strictly increasing split points in ``1..n-1``.
        events: (E, 5) from :func:`event_table`.
        comm: (3,) float64 ``(c_ms, m_ms_per_byte, x0_bytes)`` of the biased ReLU.
        D: ranks. M: micro-batches.

    Returns:
        ``(makespan (K,) float64 ms, peak_mem (K, D) int64 bytes)``.

    Raises:
        ValueError, TypeError: shapes, ranges or kinds (naming the argument); TooLargeError:
            ``K`` too large for memory or the work budget.
    """
    return _batched_reference(
        *_check_inputs(
            f_prefix,
            b_prefix,
            opt_prefix,
            act_prefix,
            w_prefix,
            tmp_ord,
            edge_src,
            edge_dst,
            edge_bytes,
            candidates,
            events,
            comm,
            D,
            M,
        )
    )


def batched_makespan_gpu(
    fp: Any,
    bp: Any,
    op: Any,
    ap: Any,
    wp: Any,
    tmp: Any,
    es: Any,
    ed: Any,
    eb: Any,
    cand: Any,
    ev: Any,
    cm: Any,
    D: int,
    M: int,
) -> tuple[Any, Any]:  # pragma: no cover - GPU
    """CuPy launcher of ``batched_makespan`` (trusted, validated NumPy inputs; CuPy outputs)."""
    import cupy as cp

    from icml25.kernels import load_module

    K, S = len(cand), cand.shape[1] + 1
    n = len(fp) - 1
    d = {k: cp.asarray(v) for k, v in dict(fp=fp, bp=bp, op=op).items()}
    i64 = {
        k: cp.asarray(np.ascontiguousarray(v, np.int64))
        for k, v in dict(ap=ap, wp=wp, tmp=tmp, eb=eb).items()
    }
    i32 = {
        k: cp.asarray(np.ascontiguousarray(v, np.int32))
        for k, v in dict(es=es, ed=ed, cand=cand, ev=ev).items()
    }
    mk = cp.empty(K, dtype=cp.float64)
    peak = cp.empty((K, D), dtype=cp.int64)
    fn = load_module("pipeline_sim").get_function("batched_makespan")
    grid = ((K + _BLOCK - 1) // _BLOCK,)
    fn(
        grid,
        (_BLOCK,),
        (
            d["fp"],
            d["bp"],
            d["op"],
            i64["ap"],
            i64["wp"],
            i64["tmp"],
            i32["es"],
            i32["ed"],
            i64["eb"],
            np.int32(len(es)),
            i32["cand"],
            np.int32(K),
            np.int32(S),
            np.int32(n),
            i32["ev"],
            np.int32(len(ev)),
            np.int32(D),
            np.int32(M),
            np.float64(cm[0]),
            np.float64(cm[1]),
            np.float64(cm[2]),
            mk,
            peak,
        ),
    )
    return mk, peak


def batched_makespan(
    f_prefix: Any,
    b_prefix: Any,
    opt_prefix: Any,
    act_prefix: Any,
    w_prefix: Any,
    tmp_ord: Any,
    edge_src: Any,
    edge_dst: Any,
    edge_bytes: Any,
    candidates: Any,
    events: Any,
    comm: Any,
    D: int,
    M: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`batched_makespan_reference`'s contract, on the GPU when one is usable (NumPy in, NumPy out).

    Args / Returns / Raises: as :func:`batched_makespan_reference`.
    """
    args = _check_inputs(
        f_prefix,
        b_prefix,
        opt_prefix,
        act_prefix,
        w_prefix,
        tmp_ord,
        edge_src,
        edge_dst,
        edge_bytes,
        candidates,
        events,
        comm,
        D,
        M,
    )
    if len(args[9]) and gpu_available():  # pragma: no cover - GPU
        mk, peak = batched_makespan_gpu(*args)
        return mk.get(), peak.get()
    return _batched_reference(*args)
