"""Tests of icml25.pfeife (chapter 13): schedules, cost and memory models, planner, runtime."""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os

import networkx as nx
import numpy as np
import pytest
import torch

from icml25 import pfeife

ZERO = pfeife.CommModel()


def _hetero_graph(
    n: int = 24, rng: np.random.Generator | None = None
) -> pfeife.OpGraph:
    rng = rng or np.random.default_rng(0)
    f = np.geomspace(0.2, 3.2, n) * rng.uniform(0.8, 1.2, n)
    return pfeife.synthetic_graph(
        f,
        2.0 * f,
        rng.integers(100, 1000, n),
        rng.integers(1000, 5000, n),
        edge_bytes=rng.integers(1000, 20_000, n - 1),
    )


# ---------------------------------------------------------------------------- schedules


@pytest.mark.parametrize(
    "D,M,S,lb,p",
    [
        (2, 8, 2, 8, 0),
        (2, 8, 2, 8, 1),
        (2, 8, 4, 2, 0),
        (2, 8, 4, 4, 1),
        (3, 6, 6, 3, 2),
        (4, 8, 8, 4, 3),
        (4, 8, 12, 8, 0),
        (1, 3, 2, 3, 0),
    ],
)
def test_make_schedule_is_valid_and_deadlock_free(D, M, S, lb, p):
    sched = pfeife.make_schedule(D, M, S, lb, p)
    pfeife.check_schedule(sched, S, M)
    g = pfeife.synthetic_graph(np.ones(S * 3), edge_bytes=np.full(S * 3 - 1, 10))
    splits = pfeife.uniform_count_splits(g.n, S)
    T, busy, ev = pfeife.simulate(
        g, np.arange(g.n), splits, sched, pfeife.CommModel(0.1, 0.0, 0.0)
    )
    assert len(ev) == 2 * S * M and T >= busy.max()


def test_one_f_one_b_keeps_at_most_D_in_flight_and_gpipe_M():
    for D, M in [(2, 8), (3, 9), (4, 4), (4, 16)]:
        assert pfeife.in_flight(pfeife.one_f_one_b_schedule(D, M)) == [
            min(D - r, M) for r in range(D)
        ]
        assert pfeife.in_flight(pfeife.gpipe_schedule(D, M)) == [M] * D


def test_schedule_bad_inputs():
    with pytest.raises(ValueError, match="S must be a multiple of D"):
        pfeife.make_schedule(2, 8, 3, 8, 0)
    with pytest.raises(ValueError, match="multiple of loop_batch"):
        pfeife.make_schedule(2, 8, 4, 3, 0)
    with pytest.raises(ValueError, match="prefetch_fwd"):
        pfeife.make_schedule(2, 8, 2, 8, 2)
    with pytest.raises(ValueError, match="loop_batch must be >= D"):
        pfeife.make_schedule(4, 8, 8, 2, 0)
    with pytest.raises(TypeError):
        pfeife.make_schedule(2.5, 8, 2, 8, 0)
    with pytest.raises(ValueError, match="M"):
        pfeife.gpipe_schedule(2, 0)
    with pytest.raises(ValueError, match="before its F"):
        pfeife.check_schedule([[(0, 0, "B"), (0, 0, "F")]], 1, 1)
    with pytest.raises(ValueError, match="does not run on rank"):
        pfeife.check_schedule(
            [[(1, 0, "F"), (1, 0, "B")], [(0, 0, "F"), (0, 0, "B")]], 2, 1
        )
    with pytest.raises(TypeError):
        pfeife.check_schedule("x", 1, 1)
    with pytest.raises(TypeError):
        pfeife.in_flight(None)


def test_schedule_candidates():
    assert pfeife.schedule_candidates(2, 8, 2) == [(8, 0), (8, 1)]
    assert pfeife.schedule_candidates(2, 8, 4) == [
        (2, 0),
        (2, 1),
        (4, 0),
        (4, 1),
        (8, 0),
        (8, 1),
    ]


# --------------------------------------------------------------------------- cost model


def _nx_makespan(g, order, splits, sched, comm):
    """The makespan as networkx's longest path on an explicitly built event DAG (independent)."""
    sc = pfeife.stage_costs(g, order, splits, len(sched))
    D, S = len(sched), len(splits) + 1
    G = nx.DiGraph()
    dur = lambda e: sc.F[e[0]] if e[2] == "F" else sc.B[e[0]]  # noqa: E731
    t = lambda nb: float(comm.time(nb)) if nb > 0 else 0.0  # noqa: E731
    for r, evs in enumerate(sched):
        G.add_edge("src", evs[0], weight=0.0)
        for a, b in zip(evs[:-1], evs[1:]):
            G.add_edge(a, b, weight=dur(a))
        G.add_edge(evs[-1], "sink", weight=dur(evs[-1]) + sc.opt[r])
    for j, k, kind in [e for evs in sched for e in evs]:
        if kind == "F":
            for i in range(j):
                if sc.C[i, j] > 0:
                    G.add_edge(
                        (i, k, "F"),
                        (j, k, "F"),
                        weight=sc.F[i] + (0.0 if i % D == j % D else t(sc.C[i, j])),
                    )
        else:
            G.add_edge((j, k, "F"), (j, k, "B"), weight=sc.F[j])
            for i in range(j + 1, S):
                if sc.C[j, i] > 0:
                    G.add_edge(
                        (i, k, "B"),
                        (j, k, "B"),
                        weight=sc.B[i] + (0.0 if i % D == j % D else t(sc.C[j, i])),
                    )
    assert nx.is_directed_acyclic_graph(G)
    return nx.dag_longest_path_length(G, weight="weight")


def test_simulate_equals_networkx_longest_path():
    rng = np.random.default_rng(3)
    for trial in range(25):
        n = 20
        edges = [(i, i + 1) for i in range(n - 1)] + [
            (i, j) for i in range(n) for j in range(i + 2, n) if rng.random() < 0.05
        ]
        g = pfeife.synthetic_graph(
            rng.uniform(0.1, 2, n),
            rng.uniform(0.1, 4, n),
            edges=edges,
            edge_bytes=rng.integers(1, 100_000, len(edges)),
        )
        D = int(rng.integers(2, 4))
        L = int(rng.integers(1, 3))
        M = 2 * D
        S = L * D
        sched = pfeife.make_schedule(
            D, M, S, M if L == 1 else D, int(rng.integers(0, D))
        )
        comm = pfeife.CommModel(0.3, 2e-5, 1e4)
        splits = np.sort(rng.choice(np.arange(1, n), S - 1, replace=False))
        T, _, _ = pfeife.simulate(g, np.arange(n), splits, sched, comm)
        assert T == pytest.approx(
            _nx_makespan(g, np.arange(n), splits, sched, comm), rel=1e-12
        )


@pytest.mark.parametrize("D,M", [(2, 8), (3, 5), (4, 12)])
def test_bubble_closed_form(D, M):
    g = pfeife.synthetic_graph(np.full(D * 4, 0.5), np.full(D * 4, 1.0))
    splits = pfeife.uniform_count_splits(g.n, D)
    for sched in (pfeife.gpipe_schedule(D, M), pfeife.one_f_one_b_schedule(D, M)):
        T, busy, _ = pfeife.simulate(g, np.arange(g.n), splits, sched, ZERO)
        assert pfeife.bubble_fraction(T, busy) == pytest.approx(
            (D - 1) / (M + D - 1), rel=1e-9
        )


def test_contention_never_faster_and_equal_without_transfers():
    g = pfeife.synthetic_graph(
        np.ones(16),
        edges=[(i, i + 1) for i in range(15)] + [(0, 15), (1, 14), (2, 13)],
        edge_bytes=np.full(18, 50_000),
    )
    order, splits = np.arange(16), np.array([4, 8, 12])
    sched = pfeife.make_schedule(2, 4, 4, 2, 0)
    comm = pfeife.CommModel(0.5, 1e-4, 0.0)
    a = pfeife.simulate(g, order, splits, sched, comm)[0]
    b = pfeife.simulate_contention(g, order, splits, sched, comm)[0]
    assert b >= a
    assert (
        pfeife.simulate_contention(g, order, splits, sched, ZERO)[0]
        == pfeife.simulate(g, order, splits, sched, ZERO)[0]
    )


def test_peak_memory_by_hand():
    n = 8
    g = pfeife.synthetic_graph(
        np.ones(n), w_bytes=np.full(n, 10), act_bytes=np.full(n, 100)
    )
    s = np.array([4])
    gp = pfeife.peak_memory(g, np.arange(n), s, pfeife.gpipe_schedule(2, 6))
    fb = pfeife.peak_memory(g, np.arange(n), s, pfeife.one_f_one_b_schedule(2, 6))
    # weights + M stashed micro-batches
    np.testing.assert_array_equal(gp, [40 + 6 * 400, 40 + 6 * 400])
    # rank r stashes D - r
    np.testing.assert_array_equal(fb, [40 + 2 * 400, 40 + 1 * 400])


def test_comm_model_fit_recovers_known_parameters():
    true = pfeife.CommModel(0.2, 3e-6, 40_000.0)
    x = np.array([1e3, 1e4, 2e4, 3e4, 6e4, 1e5, 3e5, 1e6, 3e6])
    fit = pfeife.CommModel.fit(x, true.time(x))
    assert fit.c_ms == pytest.approx(0.2, rel=1e-3)
    assert fit.m_ms_per_byte == pytest.approx(3e-6, rel=1e-3)
    assert fit.x0_bytes == pytest.approx(40_000, rel=0.05)
    assert float(true.time(10)) == 0.2 and float(true.time(140_000)) == pytest.approx(
        0.5
    )


def test_comm_and_cost_bad_inputs():
    with pytest.raises(ValueError, match="distinct"):
        pfeife.CommModel.fit([1, 1, 2], [1, 1, 2])
    with pytest.raises(ValueError, match="ms"):
        pfeife.CommModel.fit([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="c_ms"):
        pfeife.CommModel(-1.0)
    with pytest.raises(ValueError, match="nbytes"):
        ZERO.time([-1])
    g = pfeife.synthetic_graph(np.ones(6))
    sched = pfeife.one_f_one_b_schedule(2, 2)
    with pytest.raises(ValueError, match="order"):
        pfeife.simulate(g, np.array([1, 0, 2, 3, 4, 5]), [3], sched, ZERO)
    with pytest.raises(ValueError, match="splits"):
        pfeife.simulate(g, np.arange(6), [6], sched, ZERO)
    with pytest.raises(ValueError, match="multiple"):
        pfeife.simulate(g, np.arange(6), [2, 3], sched, ZERO)
    with pytest.raises(ValueError, match="splits"):
        pfeife.simulate(
            g, np.arange(6), [3, 2, 4], pfeife.one_f_one_b_schedule(4, 2), ZERO
        )
    with pytest.raises(TypeError, match="comm"):
        pfeife.simulate(g, np.arange(6), [3], sched, 1.0)
    with pytest.raises(TypeError, match="OpGraph"):
        pfeife.peak_memory("g", np.arange(6), [3], sched)
    with pytest.raises(ValueError, match="makespan_ms"):
        pfeife.bubble_fraction(0.0, [1.0])
    with pytest.raises(ValueError, match="dur_ms"):
        pfeife.replay_makespan(sched, np.ones((2, 2)), np.zeros((2, 2), np.int64), ZERO)
    with pytest.raises(ValueError, match="edges"):
        pfeife.synthetic_graph(np.ones(3), edges=[(2, 1)])
    with pytest.raises(ValueError, match="f_ms"):
        pfeife.synthetic_graph([-1.0])


def test_replay_equals_simulate_on_profiled_durations():
    g = _hetero_graph()
    order, splits = np.arange(g.n), np.array([12])
    sched = pfeife.one_f_one_b_schedule(2, 4)
    sc = pfeife.stage_costs(g, order, splits, 2)
    dur = np.stack([np.repeat(sc.F[:, None], 4, 1), np.repeat(sc.B[:, None], 4, 1)])
    assert (
        pfeife.replay_makespan(sched, dur, sc.C, ZERO, sc.opt)[0]
        == pfeife.simulate(g, order, splits, sched, ZERO)[0]
    )


# ------------------------------------------------------------------- splits and planner


def test_dp_matches_brute_force():
    rng = np.random.default_rng(5)
    for _ in range(40):
        n, S = int(rng.integers(3, 11)), int(rng.integers(1, 4))
        if S > n:
            continue
        c = rng.uniform(0, 1, n)
        best = min(
            max(c[a:b].sum() for a, b in zip((0, *cut), (*cut, n)))
            for cut in itertools.combinations(range(1, n), S - 1)
        )
        s = pfeife.optimal_splits_dp(c, S)
        got = max(c[a:b].sum() for a, b in zip((0, *s), (*s, n)))
        assert got == pytest.approx(best, abs=1e-12)


def test_baseline_splits():
    assert pfeife.uniform_count_splits(10, 2).tolist() == [5]
    c = np.array([1.0] * 6 + [5.0] * 2)
    # prefix 6 is closest to 16 / 2
    assert pfeife.balanced_time_splits(c, 2).tolist() == [6]
    s = pfeife.balanced_time_splits(np.ones(9), 3)
    assert s.tolist() == [3, 6]
    with pytest.raises(ValueError, match="S"):
        pfeife.uniform_count_splits(3, 4)
    with pytest.raises(ValueError, match="costs"):
        pfeife.optimal_splits_dp([-1.0, 1.0], 2)
    with pytest.raises(ValueError, match="S"):
        pfeife.balanced_time_splits([1.0], 2)


def test_plan_beats_baselines_and_is_memory_valid():
    g = _hetero_graph(48)
    comm = pfeife.CommModel(0.05, 1e-6, 1000.0)
    order = np.arange(g.n)
    p = pfeife.plan(g, 2, 8, 1e9, comm, np.random.default_rng(0), loop_cnts=(1,))
    cost = g.f_ms + g.b_ms
    pred = {
        name: pfeife.fixed_plan(g, order, s, 2, 8, comm).predicted_ms
        for name, s in [
            ("uniform", pfeife.uniform_count_splits(g.n, 2)),
            ("balanced", pfeife.balanced_time_splits(cost, 2)),
            ("dp", pfeife.optimal_splits_dp(cost, 2)),
        ]
    }
    assert p.predicted_ms <= pred["uniform"] and p.predicted_ms <= pred["balanced"]
    assert p.predicted_ms <= 1.02 * pred["dp"]
    assert p.predicted_ms == pytest.approx(
        pfeife.simulate(g, order, p.splits, p.schedule, comm)[0], rel=0, abs=0
    )
    assert np.all(pfeife.peak_memory(g, order, p.splits, p.schedule) < 0.85 * 1e9)


def test_plan_respects_memory_and_reports_the_capacity_needed():
    g = _hetero_graph(30)
    comm = pfeife.CommModel()
    p0 = pfeife.plan(g, 2, 4, 1e12, comm, np.random.default_rng(0), loop_cnts=(1,))
    cap = float(p0.peak_bytes.max()) / 0.85 * 1.01
    p = pfeife.plan(g, 2, 4, cap, comm, np.random.default_rng(0), loop_cnts=(1,))
    assert p.peak_bytes.max() < 0.85 * cap
    with pytest.raises(ValueError, match="capacity_bytes >="):
        pfeife.plan(g, 2, 4, 100.0, comm, np.random.default_rng(0))


def test_plan_skips_looped_schedules_below_3ms():
    g = pfeife.synthetic_graph(np.full(40, 0.1))
    p = pfeife.plan(g, 2, 4, 1e12, ZERO, np.random.default_rng(0))
    assert p.L == 1 and "skipped" in p.info["L=2"]
    p2 = pfeife.plan(
        g,
        2,
        4,
        1e12,
        ZERO,
        np.random.default_rng(0),
        loop_cnts=(2,),
        fwd_avg_min_ms=0.0,
    )
    assert p2.L == 2 and p2.S == 4


def test_plan_bad_inputs():
    g = _hetero_graph(10)
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="g"):
        pfeife.plan("g", 2, 4, 1e9, ZERO, rng)
    with pytest.raises(ValueError, match="capacity_bytes"):
        pfeife.plan(g, 2, 4, 0.0, ZERO, rng)
    with pytest.raises(TypeError, match="rng"):
        pfeife.plan(g, 2, 4, 1e9, ZERO, 0)
    with pytest.raises(TypeError, match="comm"):
        pfeife.plan(g, 2, 4, 1e9, None, rng)
    with pytest.raises(ValueError, match="loop_cnts"):
        pfeife.plan(g, 2, 4, 1e9, ZERO, rng, loop_cnts=())
    with pytest.raises(ValueError, match="beam"):
        pfeife.plan(g, 2, 4, 1e9, ZERO, rng, beam=0)
    with pytest.raises(ValueError, match="schedule"):
        pfeife.fixed_plan(g, np.arange(10), [5], 2, 4, ZERO, schedule="dfs")
    with pytest.raises(TypeError, match="comm"):
        pfeife.score_splits(
            g, np.arange(10), [[5]], pfeife.one_f_one_b_schedule(2, 4), "c"
        )


# ---------------------------------------------------------- capture, profile, linearise


def test_capture_dynamo_and_symbolic_trace_agree_with_the_model():
    torch.manual_seed(0)
    m = pfeife.TinyUNet(ch=4, cond_dim=3)
    x, c = torch.randn(2, 3, 8, 8), torch.randn(2, 3)
    want = m(x, c)
    for method in ("dynamo", "symbolic_trace"):
        gm, names = pfeife.capture_graph(m, (x, c), method=method)
        out = gm(x, c)
        out = out[0] if isinstance(out, tuple) else out
        torch.testing.assert_close(out, want)
        assert set(names) <= {n for n, _ in m.named_parameters()}
    assert set(names) == {n for n, _ in m.named_parameters()}


class _Breaks(torch.nn.Module):
    def forward(self, x):
        if x.sum().item() > 0:  # data-dependent control flow: a graph break
            return x * 2
        return x


def test_capture_graph_break_is_named():
    with pytest.raises(ValueError, match="graph break"):
        pfeife.capture_graph(_Breaks(), (torch.ones(2),))
    with pytest.raises(TypeError, match="model"):
        pfeife.capture_graph("m", (torch.ones(2),))
    with pytest.raises(TypeError, match="example_inputs"):
        pfeife.capture_graph(_Breaks(), ([1.0],))
    with pytest.raises(ValueError, match="method"):
        pfeife.capture_graph(_Breaks(), (torch.ones(2),), method="jit")


def test_profile_graph_records_the_graph():
    torch.manual_seed(0)
    m = pfeife.HeteroMLP(n_blocks=4, width=16, growth=2, out_dim=4)
    x = torch.randn(8, m.widths[0])
    gm, names = pfeife.capture_graph(m, (x,), method="symbolic_trace")
    g = pfeife.profile_graph(gm, (x,), n_reps=1)
    assert g.n == 9 and g.is_chain  # 4 x (linear, tanh) + head
    assert g.f_ms.dtype == np.float64 and g.w_bytes.dtype == np.int64
    lin = [i for i, n in enumerate(g.names) if "linear" in n]
    # weights + grads, float32
    assert g.w_bytes[lin[0]] == 2 * 4 * (16 * m.widths[1] + m.widths[1])
    assert g.act_bytes[lin[0]] == 4 * x.numel()  # linear saves its input
    np.testing.assert_array_equal(g.edge_bytes, g.out_bytes[g.edges[:, 0]])
    assert g.fb_ratio > 0 and np.allclose(g.b_ms, g.fb_ratio * g.f_ms)
    with pytest.raises(ValueError, match="inputs"):
        pfeife.profile_graph(gm, (x, x))
    with pytest.raises(ValueError, match="n_reps"):
        pfeife.profile_graph(gm, (x,), n_reps=0)


def test_linearize_modes_are_topological_orders():
    rng = np.random.default_rng(2)
    n = 30
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.1]
    g = pfeife.synthetic_graph(
        np.ones(n), edges=edges, edge_bytes=rng.integers(1, 100, len(edges))
    )
    for mode in pfeife.LINEARIZE_MODES:
        order = pfeife.linearize(g, mode)
        pos = np.empty(n, int)
        pos[order] = np.arange(n)
        assert sorted(order.tolist()) == list(range(n))
        assert all(pos[u] < pos[v] for u, v in edges)
    with pytest.raises(ValueError, match="mode"):
        pfeife.linearize(g, "random")
    with pytest.raises(TypeError):
        pfeife.linearize(None)


def test_models_shapes_and_bad_sizes():
    assert pfeife.hetero_widths(24, 128, 4.0)[-1] == 512
    assert pfeife.TinyUNet(ch=4, cond_dim=5)(
        torch.randn(1, 3, 8, 8), torch.randn(1, 5)
    ).shape == (1, 3, 8, 8)
    assert pfeife.GPT2LargeLike(n_layers=1, d=16, heads=2)(
        torch.randn(1, 3, 16)
    ).shape == (1, 3, 16)
    with pytest.raises(ValueError, match="growth"):
        pfeife.hetero_widths(4, 8, 0.5)
    with pytest.raises(ValueError, match="n_blocks"):
        pfeife.HeteroMLP(n_blocks=0)


# -------------------------------------------------------- runtime (one pair of workers)


@pytest.fixture(scope="module")
def runner():
    r = pfeife.PipelineRunner(2, timeout_s=180)
    yield r
    r.shutdown()


def _setup(model, inputs, M, S, rng):
    gm, _ = pfeife.capture_graph(model, tuple(t[: t.shape[0] // M] for t in inputs))
    mb = tuple(t[: t.shape[0] // M] for t in inputs)
    g = pfeife.profile_graph(gm, mb, n_reps=1)
    p = pfeife.plan(
        g,
        2,
        M,
        1e12,
        pfeife.CommModel(0.1, 1e-6, 0.0),
        rng,
        loop_cnts=(S // 2,),
        fwd_avg_min_ms=0.0,
        max_iter=3,
    )
    return gm, g, p, mb


def test_runner_gradients_match_single_process_hetero_mlp(runner):
    torch.manual_seed(0)
    m = pfeife.HeteroMLP(n_blocks=6, width=16, growth=4, out_dim=4)
    x, y = torch.randn(16, m.widths[0]), torch.randn(16, 4)
    gm, g, p, mb = _setup(m, (x,), 4, 2, np.random.default_rng(0))
    runner.load_plan(gm, p, mb)
    res = runner.step((x,), y, return_grads=True)
    loss, ref = pfeife.grads_single_process(gm, (x,), y)
    assert res["loss"] == pytest.approx(loss, rel=1e-5)
    assert set(res["grads"]) == set(ref)
    for k in ref:
        torch.testing.assert_close(res["grads"][k], ref[k], atol=1e-5, rtol=0)
    assert res["dur_ms"].shape == (2, 2, 4) and np.all(res["busy_cpu_ms"] > 0)
    assert res["peak_live_mb"].tolist() == pfeife.in_flight(p.schedule)
    out = runner.run_torch_pipelining(gm, p.order, p.splits, (x,), y, 4, "1f1b")
    for k in ref:
        torch.testing.assert_close(out["grads"][k], ref[k], atol=1e-5, rtol=0)


def test_runner_gradients_match_single_process_unet_four_stages(runner):
    torch.manual_seed(1)
    m = pfeife.TinyUNet(ch=4, cond_dim=3)
    x, c, y = torch.randn(8, 3, 8, 8), torch.randn(8, 3), torch.randn(8, 3, 8, 8)
    gm, g, p, mb = _setup(m, (x, c), 4, 4, np.random.default_rng(0))
    assert p.S == 4
    sc = pfeife.stage_costs(g, p.order, p.splits, 2)
    assert np.any(np.triu(sc.C, 2) > 0)  # a skip crosses more than one stage boundary
    runner.load_plan(gm, p, mb)
    res = runner.step((x, c), y, return_grads=True)
    _, ref = pfeife.grads_single_process(gm, (x, c), y)
    for k in ref:
        torch.testing.assert_close(res["grads"][k], ref[k], atol=1e-5, rtol=0)


def test_runner_bad_inputs(runner):
    with pytest.raises(TypeError, match="plan"):
        runner.load_plan(None, "p", ())
    with pytest.raises(ValueError, match="D"):
        pfeife.PipelineRunner(1)
    with pytest.raises(ValueError, match="sizes"):
        runner.benchmark_p2p([])
    with pytest.raises(ValueError, match="schedule"):
        runner.run_torch_pipelining(None, [0], [], (), torch.ones(1), 1, "dfs")
    ms = runner.benchmark_p2p([1024, 1 << 16], n_reps=2)[1]
    assert ms.shape == (2,) and np.all(ms > 0)


def test_shutdown_leaves_no_child():
    r = pfeife.PipelineRunner(2, timeout_s=180)
    pids = list(r.pids)
    assert r.alive
    r.shutdown()
    r.shutdown()  # idempotent
    assert not r.alive
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not [c for c in mp.active_children() if c.pid in pids]
    with pytest.raises(RuntimeError, match="shut down"):
        r.benchmark_p2p([10])


def _fake_step(cpus: list[list[float]], opt: list[float]) -> dict:
    return dict(
        events=[[(j, 0, 0, 0.0, 0.0, 0.0, c) for j, c in enumerate(r)] for r in cpus],
        opt_ms=np.array(opt),
    )


def test_min_busy_ms_takes_each_events_minimum_over_steps():
    # rank 0: events (2, 5) then (4, 1); a load spike on one event
    # in one step must not count
    steps = [
        _fake_step([[2.0, 4.0], [3.0]], [0.5, 0.2]),
        _fake_step([[5.0, 1.0], [9.0]], [0.1, 0.3]),
    ]
    np.testing.assert_allclose(pfeife.min_busy_ms(steps), [2.0 + 1.0 + 0.1, 3.0 + 0.2])
    # never more than any single step's busy time, equal when the steps agree
    one = _fake_step([[2.0, 4.0], [3.0]], [0.5, 0.2])
    np.testing.assert_allclose(pfeife.min_busy_ms([one, one]), [6.5, 3.2])


def test_min_busy_ms_bad_inputs():
    with pytest.raises(ValueError, match="step_reports"):
        pfeife.min_busy_ms([])
    a = _fake_step([[2.0, 4.0], [3.0]], [0.5, 0.2])
    b = _fake_step([[2.0], [3.0]], [0.5, 0.2])
    with pytest.raises(ValueError, match="step_reports"):
        pfeife.min_busy_ms([a, b])


def test_min_event_ms_takes_each_events_minimum_over_steps():
    a = {
        "dur_ms": np.array([[[1.0, 5.0]], [[2.0, 2.0]]]),
        "opt_ms": np.array([0.5, 0.7]),
    }
    b = {
        "dur_ms": np.array([[[3.0, 4.0]], [[1.0, 2.5]]]),
        "opt_ms": np.array([0.6, 0.4]),
    }
    dur, opt = pfeife.min_event_ms([a, b])
    np.testing.assert_array_equal(dur, [[[1.0, 4.0]], [[1.0, 2.0]]])
    np.testing.assert_array_equal(opt, [0.5, 0.4])
    with pytest.raises(ValueError, match="step_reports"):
        pfeife.min_event_ms([])
