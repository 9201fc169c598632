"""Tests of kernels/pipeline_sim (chapter 13): the batched cost model against ``pfeife.simulate``."""

from __future__ import annotations

import numpy as np
import pytest

from icml25 import pfeife
from icml25.kernels import pipeline_sim


def _random_case(rng: np.random.Generator):
    n = int(rng.integers(12, 40))
    edges = [(i, i + 1) for i in range(n - 1)]
    edges += [(i, j) for i in range(n) for j in range(i + 2, n) if rng.random() < 0.04]
    g = pfeife.synthetic_graph(
        rng.uniform(0.0, 3.0, n),
        rng.uniform(0.0, 5.0, n),
        rng.integers(0, 10_000, n),
        rng.integers(0, 50_000, n),
        edges,
        rng.integers(1, 200_000, len(edges)),
    )
    D = int(rng.integers(1, 4))
    L = int(rng.integers(1, 3))
    M = int(rng.choice([D * 2, D * 3, 6])) if D > 1 else int(rng.integers(1, 6))
    S = L * D
    lbs = [b for b in range(max(D, 1) if L > 1 else 1, M + 1) if M % b == 0]
    sched = pfeife.make_schedule(D, M, S, int(rng.choice(lbs)), int(rng.integers(0, D)))
    if rng.random() < 0.3:
        sched = pfeife.gpipe_schedule(D, M, S)
    comm = pfeife.CommModel(
        float(rng.uniform(0, 1)),
        float(rng.uniform(0, 1e-4)),
        float(rng.uniform(0, 5e4)),
    )
    order = pfeife.linearize(g, str(rng.choice(pfeife.LINEARIZE_MODES)))
    return g, order, sched, comm, S, M


def test_reference_equals_simulate_exactly_on_200_cases():
    rng = np.random.default_rng(0)
    checked = 0
    while checked < 200:
        g, order, sched, comm, S, M = _random_case(rng)
        if S > g.n - 1:
            continue
        K = 5
        cands = np.sort(
            np.stack(
                [rng.choice(np.arange(1, g.n), S - 1, replace=False) for _ in range(K)]
            ),
            1,
        )
        mk, peak = pfeife.score_splits(g, order, cands, sched, comm)
        for c, m1, p1 in zip(cands, mk, peak):
            m0, _busy, _ev = pfeife.simulate(g, order, c, sched, comm)
            assert m1 == m0  # float64, same operations: bit-identical
            np.testing.assert_array_equal(p1, pfeife.peak_memory(g, order, c, sched))
            checked += 1


def test_event_table_is_topological_and_keeps_program_order():
    sched = pfeife.make_schedule(2, 4, 4, 2, 1)
    ev = pipeline_sim.event_table(sched, 4, 4)
    assert len(ev) == 2 * 4 * 4
    for r in range(2):
        rows = [tuple(x[1:4]) for x in ev if x[0] == r]
        assert rows == [(j, k, 0 if kd == "F" else 1) for j, k, kd in sched[r]]
    prev = ev[:, 4]
    for i, p in enumerate(prev):
        if p >= 0:
            assert p < i and ev[p, 0] == ev[i, 0]


def test_event_table_refuses_a_deadlock():
    bad = [[(0, 0, "B"), (0, 0, "F")], [(1, 0, "F"), (1, 0, "B")]]
    with pytest.raises(ValueError, match="topological"):
        pipeline_sim.event_table(bad, 2, 1)
    with pytest.raises(ValueError, match="out of range"):
        pipeline_sim.event_table([[(5, 0, "F")]], 2, 1)
    with pytest.raises(TypeError):
        pipeline_sim.event_table("x", 2, 1)


def _tables():
    g = pfeife.synthetic_graph(np.ones(10))
    return pfeife.kernel_tables(g, np.arange(10))


def test_bad_inputs_are_named():
    t = _tables()
    ev = pipeline_sim.event_table(pfeife.one_f_one_b_schedule(2, 4), 2, 4)
    args = [
        t.fp,
        t.bp,
        t.op,
        t.ap,
        t.wp,
        t.tmp,
        t.es,
        t.ed,
        t.eb,
        np.array([[5]], np.int32),
        ev,
        np.zeros(3),
        2,
        4,
    ]
    mk, peak = pipeline_sim.batched_makespan(*args)
    assert mk.shape == (1,) and peak.shape == (1, 2)
    for i, bad, match in [
        (9, np.array([[0]]), "candidates"),
        (9, np.array([[10]]), "candidates"),
        (1, t.bp[:-1], "b_prefix"),
        (11, np.array([-1.0, 0, 0]), "comm"),
        (6, t.es[::-1].copy(), "edge_src"),
        (10, ev[:, :4], "events"),
        (12, 0, "D"),
    ]:
        a = list(args)
        a[i] = bad
        with pytest.raises(ValueError, match=match):
            pipeline_sim.batched_makespan_reference(*a)


def test_too_many_candidates_are_refused_up_front():
    from icml25.checks import TooLargeError

    t = _tables()
    ev = pipeline_sim.event_table(pfeife.one_f_one_b_schedule(2, 4), 2, 4)
    huge = np.broadcast_to(np.array([[5]], np.int32), (10**11, 1))
    with pytest.raises(TooLargeError):
        pipeline_sim.batched_makespan(
            t.fp,
            t.bp,
            t.op,
            t.ap,
            t.wp,
            t.tmp,
            t.es,
            t.ed,
            t.eb,
            huge,
            ev,
            np.zeros(3),
            2,
            4,
        )


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    import cupy as cp

    rng = np.random.default_rng(1)
    for _ in range(20):
        g, order, sched, comm, S, M = _random_case(rng)
        if S > g.n - 1:
            continue
        t = pfeife.kernel_tables(g, order)
        ev = pipeline_sim.event_table(sched, S, M)
        cands = np.sort(
            np.stack(
                [
                    rng.choice(np.arange(1, g.n), S - 1, replace=False)
                    for _ in range(300)
                ]
            ),
            1,
        )
        args = (
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
            ev,
            np.array(comm.params),
            len(sched),
            M,
        )
        want_mk, want_pk = pipeline_sim.batched_makespan_reference(*args)
        got_mk, got_pk = pipeline_sim.batched_makespan_gpu(
            *pipeline_sim._check_inputs(*args)
        )
        np.testing.assert_array_equal(cp.asnumpy(got_mk), want_mk)
        np.testing.assert_array_equal(cp.asnumpy(got_pk), want_pk)
