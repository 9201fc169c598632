"""icml25.mincut_predictions against independent references: brute force, Stoer–Wagner, exact
cut distributions, hand-built prediction errors, and every documented bad input."""

from __future__ import annotations

import itertools
import re
import time

import networkx as nx
import numpy as np
import pytest

from icml25 import mincut_predictions as mc
from icml25.checks import TooLargeError


def _random_connected(n, density, rng):
    while True:
        pairs = np.array(
            [
                (i, j)
                for i, j in itertools.combinations(range(n), 2)
                if rng.random() < density
            ],
            dtype=np.int64,
        ).reshape(-1, 2)
        if (
            len(pairs)
            and nx.is_connected(nx.Graph(pairs.tolist()))
            and len(set(pairs.ravel())) == n
        ):
            return pairs, rng.uniform(0.5, 3.0, size=len(pairs))


# ------------------------------------------------------------------ exact references


@pytest.mark.parametrize("n", [2, 3, 5, 7, 10])
def test_stoer_wagner_wrapper_matches_brute_force(n):
    rng = np.random.default_rng(n)
    for _ in range(3):
        edges, w = _random_connected(n, 0.6, rng)
        value, side = mc.stoer_wagner(edges, w, n)
        brute, _ = mc.brute_force_min_cut(edges, w, n)
        assert value == pytest.approx(brute, rel=1e-12)
        assert side[0] and mc.cut_value(edges, w, side) == pytest.approx(value)


@pytest.mark.parametrize(
    "method", ["karger", "karger_stein", "fpz", "boosted_karger", "boosted_fpz"]
)
def test_min_cut_finds_brute_force_optimum_on_small_graphs(method):
    rng = np.random.default_rng(42)
    for n in range(4, 11):
        edges, w = _random_connected(n, 0.5, rng)
        brute, _ = mc.brute_force_min_cut(edges, w, n)
        p = rng.random(len(w))
        value, side = mc.min_cut(edges, w, n, method=method, p=p, threshold=3, rng=rng)
        assert value == pytest.approx(brute, rel=1e-9)
        assert mc.cut_value(edges, w, side) == pytest.approx(value)


@pytest.mark.parametrize("method", ["karger_stein", "fpz"])
def test_recursive_methods_match_stoer_wagner_on_larger_graph(method):
    rng = np.random.default_rng(7)
    edges, w = _random_connected(24, 0.3, rng)
    opt, _ = mc.stoer_wagner(edges, w, 24)
    value, side = mc.min_cut(edges, w, 24, method=method, n_trials=8, rng=rng)
    assert value == pytest.approx(opt, rel=1e-9)
    # every returned cut is a real cut, never below the optimum
    for _ in range(5):
        v, s = (mc.karger_stein if method == "karger_stein" else mc.fpz)(
            edges, w, 24, rng=rng
        )
        assert v >= opt - 1e-9 and v == pytest.approx(mc.cut_value(edges, w, s))


def _exact_karger_distribution(edges, w, n):
    """Exact distribution of Karger's output bipartition by recursion over contraction sequences."""
    from functools import lru_cache

    def canon(groups):
        return tuple(sorted(tuple(sorted(g)) for g in groups))

    @lru_cache(maxsize=None)
    def dist(groups):
        if len(groups) == 2:
            return {frozenset(next(g for g in groups if 0 in g)): 1.0}
        where = {v: i for i, g in enumerate(groups) for v in g}
        total, out = 0.0, {}
        crossing = [
            (e, where[int(a)], where[int(b)])
            for e, (a, b) in enumerate(edges)
            if where[int(a)] != where[int(b)]
        ]
        total = sum(w[e] for e, _, _ in crossing)
        for e, i, j in crossing:
            merged = [g for t, g in enumerate(groups) if t not in (i, j)] + [
                groups[i] + groups[j]
            ]
            for cut, prob in dist(canon(merged)).items():
                out[cut] = out.get(cut, 0.0) + prob * w[e] / total
        return out

    return dist(canon([(v,) for v in range(n)]))


def test_karger_cut_distribution_matches_exact_on_six_vertices():
    edges = np.array(
        [[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [4, 5], [5, 3], [0, 5], [1, 4]]
    )
    w = np.array([2.0, 1.0, 3.0, 0.5, 1.5, 2.0, 1.0, 0.7, 0.4])
    exact = _exact_karger_distribution(edges, w, 6)
    _, sides = mc.contraction_batch(edges, w, 6, 20000, rng=np.random.default_rng(0))
    counts = {}
    for s in sides:
        key = frozenset(np.flatnonzero(s).tolist())
        counts[key] = counts.get(key, 0) + 1
    keys = set(exact) | set(counts)
    tv = 0.5 * sum(abs(exact.get(c, 0.0) - counts.get(c, 0) / 20000) for c in keys)
    assert tv < 0.02  # sampling TV for ~20 cells with 20k draws is ~0.01


def test_karger_success_rate_respects_lower_bound():
    rng = np.random.default_rng(3)
    edges, w = _random_connected(9, 0.5, rng)
    opt, _ = mc.brute_force_min_cut(edges, w, 9)
    cut, _ = mc.contraction_batch(edges, w, 9, 4000, rng=rng)
    assert np.mean(cut <= opt + 1e-9) >= mc.karger_success_bound(9) * 0.9


def test_boosted_with_perfect_predictions_always_succeeds_on_planted_cut():
    rng = np.random.default_rng(1)
    edges, w = mc.matching_graph(40, 8, 3, rng)
    opt, side = mc.stoer_wagner(edges, w, 40)
    p, eta, rho = mc.inject_errors(edges, w, side, 0.0, 0.0, rng=rng)
    assert eta == 0 and rho == 0
    cut, _ = mc.contraction_batch(edges, w, 40, 200, rng=rng, p=p, boost_factor=1e6)
    assert np.mean(cut <= opt + 1e-9) > 0.95


def test_boost_factor_one_is_plain_karger():
    rng = np.random.default_rng(0)
    edges, w = _random_connected(12, 0.4, rng)
    c1, s1 = mc.contraction_batch(edges, w, 12, 50, rng=np.random.default_rng(5))
    c2, s2 = mc.contraction_batch(
        edges,
        w,
        12,
        50,
        rng=np.random.default_rng(5),
        p=rng.random(len(w)),
        boost_factor=1.0,
    )
    np.testing.assert_array_equal(s1, s2)


def test_karger_trial_and_boosted_trial_return_real_cuts():
    rng = np.random.default_rng(2)
    edges, w = _random_connected(15, 0.4, rng)
    opt, _ = mc.stoer_wagner(edges, w, 15)
    for _ in range(10):
        v, s = mc.karger_trial(edges, w, 15, rng=rng)
        assert s.shape == (15,) and s[0] and not s.all() and v >= opt - 1e-9
        assert v == pytest.approx(mc.cut_value(edges, w, s))
        v, s = mc.boosted_karger_trial(
            edges, w, 15, rng.random(len(w)), 15.0, 4, rng=rng
        )
        assert v >= opt - 1e-9 and v == pytest.approx(mc.cut_value(edges, w, s))


# ------------------------------------------------------------------ predictions


def test_boosted_weights_formula():
    w = np.array([1.0, 2.0, 3.0])
    p = np.array([0.0, 0.5, 1.0])
    np.testing.assert_allclose(mc.boosted_weights(w, p, 5.0), [5.0, 2.0 * 3.0, 3.0])


def test_prediction_errors_hand_built():
    # path 0-1-2-3 plus chord; side {0}: cut = edge (0,1) of weight 2
    # and chord (0,3) of weight 1
    edges = np.array([[0, 1], [1, 2], [2, 3], [0, 3]])
    w = np.array([2.0, 4.0, 1.0, 1.0])
    side = np.array([True, False, False, False])
    # chord missed (fn = 1), (1,2) half predicted (fp = 2)
    p = np.array([1.0, 0.5, 0.0, 0.0])
    eta, rho = mc.prediction_errors(edges, w, p, side)
    assert eta == pytest.approx(1.0 / 3.0) and rho == pytest.approx(2.0 / 3.0)
    assert mc.prediction_errors(edges, w, np.array([1.0, 0, 0, 1.0]), side) == (
        0.0,
        0.0,
    )
    assert mc.prediction_errors(edges, w, np.zeros(4), side) == (1.0, 0.0)


def test_inject_errors_realises_at_least_the_targets():
    rng = np.random.default_rng(4)
    edges, w = mc.matching_graph(60, 10, 2, rng)
    _, side = mc.stoer_wagner(edges, w, 60)
    for eta_t, rho_t in [(0.0, 0.0), (0.3, 2.0), (0.7, 10.0), (1.0, 0.5)]:
        p, eta, rho = mc.inject_errors(edges, w, side, eta_t, rho_t, rng=rng)
        assert eta >= eta_t - 1e-12 and rho >= rho_t - 1e-12
        assert (eta, rho) == pytest.approx(mc.prediction_errors(edges, w, p, side))
        assert set(np.unique(p)) <= {0.0, 1.0}


def test_boosted_success_bound_reduces_to_karger_at_eta_one():
    assert mc.boosted_success_bound(50, 1.0, 0.0, 50.0, 2) == pytest.approx(
        mc.karger_success_bound(50)
    )
    good = mc.boosted_success_bound(50, 0.0, 0.0, 1e9, 2)
    assert good > 0.99
    # needs t > 2 (1 + rho)
    assert mc.boosted_success_bound(50, 0.0, 30.0, 1e9, 2) == 0.0


def test_learn_predictions_ogd_recovers_consistent_cut():
    rng = np.random.default_rng(8)
    edges, w = mc.matching_graph(40, 10, 4, rng)  # vertex 0: degree 6, the others 10
    family = mc.jitter_instances(edges, w, 40, 6, 0.1, rng=rng)
    assert all(si.sum() == 1 for wi, si, _ in family)  # every instance cuts off {0}
    p, losses = mc.learn_predictions_ogd(
        edges, 40, [(wi, si) for wi, si, _ in family], lr=1.0, epochs=3, shuffle=False
    )
    side = np.arange(40) == 0
    eta, rho = mc.prediction_errors(edges, w, p, side)
    assert eta < 0.05 and rho < 0.5
    assert losses[-1] < losses[0]


def test_predict_by_sampling_marks_only_sampled_edges():
    rng = np.random.default_rng(9)
    edges, w = _random_connected(30, 0.3, rng)
    p = mc.predict_by_sampling(edges, w, 30, rng=rng, frac=0.5, n_trials=20)
    assert (
        p.shape == (len(w),)
        and set(np.unique(p)) <= {0.0, 1.0}
        and 0 < p.sum() <= len(w) // 2
    )


# ---------------------------------------------------------------- generators and metric


def test_matching_graph_planted_singleton():
    rng = np.random.default_rng(0)
    edges, w = mc.matching_graph(40, 10, 4, rng)
    deg = np.bincount(edges.ravel(), weights=np.repeat(w, 2), minlength=40)
    # t neighbours lose 1
    assert deg[0] == 6 and np.sum(deg[1:] == 9) == 4 and np.sum(deg[1:] == 10) == 35
    assert np.all((edges[:, 0] < 20) & (edges[:, 1] >= 20))
    value, side = mc.stoer_wagner(edges, w, 40)
    assert value == 6 and side.sum() in (1, 39)


def test_cycles_graph_degrees_and_sides():
    rng = np.random.default_rng(0)
    edges, w = mc.cycles_graph(30, 4, 15, 0.5, rng)
    side = np.arange(30) < 15
    crossing = side[edges[:, 0]] != side[edges[:, 1]]
    assert w[crossing].sum() == 2 * 4  # k cycles cross exactly twice
    deg = np.bincount(edges.ravel(), weights=np.repeat(w, 2), minlength=30)
    # every vertex lies on 2k Hamiltonian cycles (its side's and the crossing ones)
    assert np.all(deg >= 4 * 4)


def test_tsp_lp_instances_end_with_two_connected_support():
    rng = np.random.default_rng(1)
    edges, cost = mc.cycles_graph(24, 4, 12, 0.5, rng)
    inst = mc.tsp_lp_instances(edges, cost, 24, max_rounds=15)
    assert len(inst) >= 1
    for it in inst:
        deg = np.bincount(it.edges.ravel(), weights=np.repeat(it.x, 2), minlength=24)
        np.testing.assert_allclose(deg, 2.0, atol=1e-6)  # degree constraints hold
        assert it.min_cut == pytest.approx(mc.stoer_wagner(it.edges, it.x, 24)[0])
    assert all(a.min_cut < 2 - 1e-7 for a in inst[:-1])


def test_trials_until_min_cut_counts_and_censors():
    rng = np.random.default_rng(2)
    edges, w = mc.matching_graph(30, 6, 2, rng)
    res = mc.trials_until_min_cut(edges, w, 30, "karger", n_reps=5, rng=rng)
    assert (
        res.n_trials.shape == (5,)
        and np.all(res.n_trials >= 1)
        and not res.censored.any()
    )
    # an impossible optimum is never reached: every run censored at the cap
    res = mc.trials_until_min_cut(
        edges, w, 30, "karger", n_reps=3, cap=7, opt_value=-1.0, rng=rng
    )
    assert (
        np.all(res.n_trials == 7)
        and res.censored.all()
        and res.censored_fraction == 1.0
    )


def test_disconnected_graph_returns_zero_and_component():
    edges = np.array([[0, 1], [1, 2], [3, 4]])
    w = np.ones(3)
    value, side = mc.min_cut(edges, w, 5, n_trials=3, rng=np.random.default_rng(0))
    assert value == 0.0 and side.tolist() == [True, True, True, False, False]
    assert mc.stoer_wagner(edges, w, 5)[0] == 0.0


def test_repetitions_from_success_prob():
    rng = np.random.default_rng(0)
    edges, w = _random_connected(8, 0.6, rng)
    brute, _ = mc.brute_force_min_cut(edges, w, 8)
    value, _ = mc.min_cut(edges, w, 8, method="karger", success_prob=0.999, rng=rng)
    assert value == pytest.approx(brute)


def test_from_networkx_roundtrip():
    g = nx.les_miserables_graph()
    edges, w, n, nodes = mc.from_networkx(g)
    assert n == g.number_of_nodes() and len(w) == g.number_of_edges()
    value, _ = mc.stoer_wagner(edges, w, n)
    assert value == pytest.approx(nx.stoer_wagner(g)[0])


# ------------------------------------------------------------------ bad input


GOOD_E = np.array([[0, 1], [1, 2], [2, 0]])
GOOD_W = np.ones(3)


@pytest.mark.parametrize(
    "edges, weights, n, exc, match",
    [
        (GOOD_E, GOOD_W, 1, ValueError, "n must be an integer >= 2"),
        (GOOD_E, GOOD_W, 2.5, TypeError, "n must be an integer"),
        (GOOD_E, GOOD_W, 2, ValueError, "outside"),
        (np.array([[0, 1], [1, 1], [2, 0]]), GOOD_W, 3, ValueError, "self loop"),
        (np.array([[0, 1], [1, 0], [2, 0]]), GOOD_W, 3, ValueError, "repeated pair"),
        (np.array([[0, -1], [1, 2], [2, 0]]), GOOD_W, 3, ValueError, "outside"),
        (GOOD_E[:, :1], GOOD_W, 3, ValueError, r"edges must have shape \(\?, 2\)"),
        (GOOD_E, np.array([1.0, -1.0, 1.0]), 3, ValueError, "weights must be > 0"),
        (GOOD_E, np.array([1.0, np.nan, 1.0]), 3, ValueError, "weights must be finite"),
        (GOOD_E, np.array([1.0, np.inf, 1.0]), 3, ValueError, "weights must be finite"),
        (GOOD_E, np.ones(2), 3, ValueError, "weights must have shape"),
        (np.zeros((0, 2), dtype=int), np.zeros(0), 3, ValueError, "empty"),
    ],
)
def test_bad_graph_rejected(edges, weights, n, exc, match):
    with pytest.raises(exc, match=match):
        mc.min_cut(edges, weights, n, n_trials=1, rng=np.random.default_rng(0))
    with pytest.raises(exc, match=match):
        mc.stoer_wagner(edges, weights, n)


@pytest.mark.parametrize(
    "p",
    [
        np.array([0.5, 1.5, 0.0]),
        np.array([-0.1, 0.5, 0.5]),
        np.array([0.5, np.nan, 0.5]),
        np.ones(2),
        None,
    ],
)
def test_bad_predictions_rejected(p):
    with pytest.raises(ValueError, match="p"):
        mc.min_cut(
            GOOD_E,
            GOOD_W,
            3,
            method="boosted_karger",
            p=p,
            n_trials=1,
            rng=np.random.default_rng(0),
        )
    if p is not None:
        with pytest.raises(ValueError):
            mc.boosted_weights(GOOD_W, p, 2.0)


def test_bad_parameters_rejected():
    rng = np.random.default_rng(0)
    p = np.full(3, 0.5)
    with pytest.raises(ValueError, match="boost_factor"):
        mc.boosted_karger_trial(GOOD_E, GOOD_W, 3, p, 0.5, 2, rng=rng)
    with pytest.raises(ValueError, match="threshold"):
        mc.boosted_karger_trial(GOOD_E, GOOD_W, 3, p, 2.0, 1, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        mc.karger_trial(GOOD_E, GOOD_W, 3, rng=0)
    with pytest.raises(ValueError, match="method"):
        mc.min_cut(GOOD_E, GOOD_W, 3, method="dinic", n_trials=1, rng=rng)
    with pytest.raises(ValueError, match="n_trials"):
        mc.min_cut(GOOD_E, GOOD_W, 3, n_trials=0, rng=rng)
    with pytest.raises(ValueError, match="success_prob"):
        mc.min_cut(GOOD_E, GOOD_W, 3, success_prob=1.0, rng=rng)
    with pytest.raises(ValueError, match="n_reps"):
        mc.trials_until_min_cut(GOOD_E, GOOD_W, 3, n_reps=0, rng=rng)
    with pytest.raises(ValueError, match="eta"):
        mc.inject_errors(
            GOOD_E, GOOD_W, np.array([True, False, False]), 1.5, 0.0, rng=rng
        )
    with pytest.raises(ValueError, match="rho"):
        mc.inject_errors(
            GOOD_E, GOOD_W, np.array([True, False, False]), 0.5, -1.0, rng=rng
        )
    with pytest.raises(ValueError, match="side"):
        mc.prediction_errors(GOOD_E, GOOD_W, p, np.array([True, True, True]))
    with pytest.raises(ValueError, match="n must be"):
        mc.matching_graph(7, 3, 1, rng)
    with pytest.raises(ValueError, match="t must"):
        mc.matching_graph(8, 2, 5, rng)
    with pytest.raises(ValueError, match="n <= 20|n must be <= 20"):
        mc.brute_force_min_cut(
            np.array([[i, i + 1] for i in range(21)]), np.ones(21), 22
        )


def test_family_and_learning_bad_inputs_rejected():
    rng = np.random.default_rng(0)
    edges, w = mc.matching_graph(12, 4, 1, rng)
    with pytest.raises(ValueError, match="noise"):
        mc.jitter_instances(edges, w, 12, 2, 1.5, rng=rng)
    with pytest.raises(ValueError, match="weak_vertices"):
        mc.jitter_instances(edges, w, 12, 2, 0.1, rng=rng, weak_vertices=[12])
    with pytest.raises(ValueError, match="weak_factor"):
        mc.jitter_instances(
            edges, w, 12, 2, 0.1, rng=rng, weak_vertices=[1], weak_factor=0.0
        )
    with pytest.raises(ValueError, match="instances"):
        mc.learn_predictions_ogd(edges, 12, [])
    with pytest.raises(ValueError, match="lr"):
        mc.learn_predictions_ogd(edges, 12, [(w, np.arange(12) == 0)], lr=0.0)
    with pytest.raises(ValueError, match="frac"):
        mc.predict_by_sampling(edges, w, 12, rng=rng, frac=0.0)
    with pytest.raises(ValueError, match="max_rounds"):
        mc.tsp_lp_instances(edges, w, 12, max_rounds=0)


def test_jitter_instances_weak_vertices_round_robin():
    rng = np.random.default_rng(3)
    edges, w = mc.matching_graph(40, 10, 0, rng)
    fam = mc.jitter_instances(
        edges, w, 40, 6, 0.05, rng=rng, weak_vertices=[5, 25], weak_factor=0.6
    )
    lone = [int(np.flatnonzero(s if s.sum() == 1 else ~s)[0]) for _, s, _ in fam]
    # weakened vertex (degree 6 vs 10 +- 5%) is the min cut
    assert lone == [5, 25, 5, 25, 5, 25]


# --------------------------------------------------------------- the graph value object


def test_weighted_graph_is_validated_once_and_read_only():
    g = mc.WeightedGraph(GOOD_E.tolist(), [1, 2, 3], 3)
    assert (
        g.edges.dtype == np.int64
        and g.weights.dtype == np.float64
        and g.n == 3
        and g.m == 3
    )
    with pytest.raises(ValueError):
        g.weights[0] = -1.0  # read-only: a graph that exists stays valid
    w = np.ones(3)
    mc.WeightedGraph(GOOD_E, w, 3)
    w[0] = 2.0  # the caller's arrays are copied, never frozen
    with pytest.raises(ValueError, match="self loop"):
        mc.WeightedGraph(np.array([[0, 0]]), [1.0], 2)
    assert mc.validate_graph(g) is g
    with pytest.raises(TypeError, match="not both"):
        mc.validate_graph(g, GOOD_W, 3)
    with pytest.raises(TypeError, match="required"):
        mc.validate_graph(GOOD_E)


def test_public_functions_accept_the_graph_or_the_arrays_alike():
    rng = np.random.default_rng(5)
    edges, w = mc.matching_graph(30, 6, 2, rng)
    g = mc.WeightedGraph(edges, w, 30)
    opt, side = mc.stoer_wagner(edges, w, 30)
    assert mc.stoer_wagner(g) == (opt, pytest.approx(side))
    p = np.linspace(0, 1, len(w))
    assert mc.prediction_errors(g, p=p, side=side) == mc.prediction_errors(
        edges, w, p, side
    )
    assert mc.cut_value(g, side=side) == mc.cut_value(edges, w, side) == opt
    a = mc.min_cut(
        g, method="boosted_karger", p=p, n_trials=20, rng=np.random.default_rng(1)
    )
    b = mc.min_cut(
        edges,
        w,
        30,
        method="boosted_karger",
        p=p,
        n_trials=20,
        rng=np.random.default_rng(1),
    )
    assert a[0] == b[0] and np.array_equal(a[1], b[1])
    r1 = mc.trials_until_min_cut(
        g, n_reps=3, opt_value=opt, rng=np.random.default_rng(2)
    )
    r2 = mc.trials_until_min_cut(
        edges, w, 30, n_reps=3, opt_value=opt, rng=np.random.default_rng(2)
    )
    np.testing.assert_array_equal(r1.n_trials, r2.n_trials)
    c1, _ = mc.contraction_batch(g, n_trials=8, rng=np.random.default_rng(3))
    c2, _ = mc.contraction_batch(edges, w, 30, 8, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(c1, c2)


# ---------------------------------------------------------------- fixed bugs (issue 13)


def test_cut_value_with_a_side_of_the_wrong_length_names_side():
    # used to raise a bare IndexError from the fancy indexing
    with pytest.raises(ValueError, match="side"):
        mc.cut_value(GOOD_E, GOOD_W, np.array([True, False]))
    g = mc.WeightedGraph(GOOD_E, GOOD_W, 3)
    for bad in (np.array([True, False]), np.array([True, False, False, True])):
        with pytest.raises(ValueError, match="side"):
            mc.cut_value(g, side=bad)
    with pytest.raises(ValueError, match="side"):
        mc.prediction_errors(GOOD_E, GOOD_W, np.full(3, 0.5), np.array([True, False]))
    with pytest.raises(TypeError, match="side"):
        mc.cut_value(GOOD_E, GOOD_W, np.array([1, 0, 0]))
    assert mc.cut_value(GOOD_E, GOOD_W, np.array([True, False, False])) == 2.0


def test_min_cut_refuses_a_trial_count_that_cannot_finish():
    # used to start 10**12 trials; now refused before any work, quoting the estimate
    for method in ("karger", "karger_stein"):
        with pytest.raises(TooLargeError, match="n_trials=1000000000000"):
            mc.min_cut(
                GOOD_E,
                GOOD_W,
                3,
                method=method,
                n_trials=10**12,
                rng=np.random.default_rng(0),
            )
    rng = np.random.default_rng(0)
    edges, w = mc.matching_graph(40, 8, 2, rng)
    with pytest.raises(TooLargeError, match="elementary operations"):
        mc.min_cut(
            edges,
            w,
            40,
            method="boosted_karger",
            p=np.full(len(w), 0.5),
            n_trials=10**11,
            rng=rng,
        )


def test_trials_until_min_cut_refuses_an_unbounded_cap():
    with pytest.raises(TooLargeError, match="cap"):
        mc.trials_until_min_cut(
            GOOD_E, GOOD_W, 3, n_reps=10, cap=10**13, rng=np.random.default_rng(0)
        )
    with pytest.raises(TooLargeError, match="n_reps"):
        mc.trials_until_min_cut(
            GOOD_E,
            GOOD_W,
            3,
            method="fpz",
            n_reps=10**10,
            cap=10**4,
            rng=np.random.default_rng(0),
        )


def test_one_batch_of_too_many_trials_is_refused_for_memory():
    rng = np.random.default_rng(0)
    with pytest.raises(TooLargeError, match="GiB"):
        mc.contraction_batch(GOOD_E, GOOD_W, 3, 10**12, rng=rng)
    with pytest.raises(TooLargeError, match="n_trials"):
        mc.predict_by_sampling(GOOD_E, GOOD_W, 3, rng=rng, n_trials=10**12)
    with pytest.raises(TooLargeError, match="matching_graph"):
        mc.matching_graph(10**6, 10**9, 1, rng)
    with pytest.raises(TooLargeError, match="cycles_graph"):
        mc.cycles_graph(10**6, 10**9, 10, 0.5, rng)
    with pytest.raises(TooLargeError, match="epochs"):
        mc.learn_predictions_ogd(
            GOOD_E,
            3,
            [(GOOD_W, np.array([True, False, False]))],
            epochs=10**13,
            rng=rng,
        )


def test_tsp_lp_solution_is_checked_before_use(monkeypatch):
    import scipy.optimize

    # "solved", but x = 0 breaks every degree constraint x(delta(v)) = 2
    class Infeasible:
        status, message = 0, "Optimization terminated successfully."

        def __init__(self, m):
            self.x = np.zeros(m)

    rng = np.random.default_rng(1)
    edges, cost = mc.cycles_graph(16, 3, 8, 0.5, rng)
    monkeypatch.setattr(scipy.optimize, "linprog", lambda c, **kw: Infeasible(len(c)))
    with pytest.raises(ValueError, match="infeasible"):
        mc.tsp_lp_instances(edges, cost, 16)


def test_stoer_wagner_answer_is_checked_before_use(monkeypatch):
    real = nx.stoer_wagner
    monkeypatch.setattr(
        nx, "stoer_wagner", lambda graph: (real(graph)[0] - 1.0, real(graph)[1])
    )
    with pytest.raises(RuntimeError, match="stoer_wagner"):
        mc.stoer_wagner(GOOD_E, GOOD_W, 3)


def test_boosted_weights_is_the_formula_behind_its_checks():
    rng = np.random.default_rng(2)
    w, p = rng.uniform(0.5, 2.0, 7), rng.random(7)
    np.testing.assert_array_equal(mc.boosted_weights(w, p, 4.0), mc._boost(w, p, 4.0))
    with pytest.raises(ValueError, match="weights"):
        mc.boosted_weights(np.ones((2, 2)), np.ones(4), 2.0)
    with pytest.raises(ValueError, match="weights must be > 0"):
        mc.boosted_weights(np.array([1.0, 0.0]), np.ones(2), 2.0)
    with pytest.raises(TypeError, match="boost_factor"):
        mc.boosted_weights(w, p, "2")
    with pytest.raises(ValueError, match="boost_factor"):
        mc.boosted_weights(w, p, np.nan)


def test_rng_must_be_a_generator_everywhere():
    rng_bad = 0
    p = np.full(3, 0.5)
    side = np.array([True, False, False])
    for call in (
        lambda: mc.contraction_batch(GOOD_E, GOOD_W, 3, 2, rng=rng_bad),
        lambda: mc.boosted_karger_trial(GOOD_E, GOOD_W, 3, p, 2.0, 2, rng=rng_bad),
        lambda: mc.karger_stein(GOOD_E, GOOD_W, 3, rng=rng_bad),
        lambda: mc.fpz(GOOD_E, GOOD_W, 3, rng=rng_bad),
        lambda: mc.boosted_fpz(GOOD_E, GOOD_W, 3, p, 2.0, 2, rng=rng_bad),
        lambda: mc.min_cut(GOOD_E, GOOD_W, 3, n_trials=1, rng=rng_bad),
        lambda: mc.trials_until_min_cut(GOOD_E, GOOD_W, 3, rng=rng_bad),
        lambda: mc.inject_errors(GOOD_E, GOOD_W, side, 0.1, 0.0, rng=rng_bad),
        lambda: mc.predict_by_sampling(GOOD_E, GOOD_W, 3, rng=rng_bad),
        lambda: mc.matching_graph(8, 2, 1, rng_bad),
        lambda: mc.cycles_graph(10, 2, 5, 0.0, rng_bad),
    ):
        with pytest.raises(TypeError, match="rng"):
            call()


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda: mc.min_cut(
                GOOD_E, GOOD_W, 3, n_trials=2.0, rng=np.random.default_rng(0)
            ),
            TypeError,
            "n_trials",
        ),
        (
            lambda: mc.trials_until_min_cut(
                GOOD_E, GOOD_W, 3, n_reps=1.5, rng=np.random.default_rng(0)
            ),
            TypeError,
            "n_reps",
        ),
        (
            lambda: mc.trials_until_min_cut(
                GOOD_E, GOOD_W, 3, cap=0, rng=np.random.default_rng(0)
            ),
            ValueError,
            "cap",
        ),
        (
            lambda: mc.boosted_success_bound(10, 0.5, 0.0, 2.0, 2.5),
            TypeError,
            "threshold",
        ),
        (lambda: mc.boosted_success_bound(10, 1.5, 0.0, 2.0, 2), ValueError, "eta"),
    ],
)
def test_counts_and_errors_are_checked(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --------------------------------------------------------- fixed bugs (newcomer review)

_E5 = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])
_W5 = np.ones(5)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "call, named",
    [
        # n itself: the per-vertex arrays of WeightedGraph's users
        # (used to MemoryError or hang)
        (lambda rng: mc.WeightedGraph(_E5, _W5, 10**12), "n=1000000000000"),
        (lambda rng: mc.karger_stein(_E5, _W5, 10**12, rng=rng), "n=1000000000000"),
        (
            lambda rng: mc.min_cut(_E5, _W5, 10**12, n_trials=1, rng=rng),
            "n=1000000000000",
        ),
        (lambda rng: mc.fpz(_E5, _W5, 10**12, rng=rng), "n=1000000000000"),
        (lambda rng: mc.stoer_wagner(_E5, _W5, 10**9), "n=1000000000"),
        (lambda rng: mc.karger_trial(_E5, _W5, 10**12, rng=rng), "n=1000000000000"),
        # sizes whose arrays fit but whose work cannot finish: each
        # algorithm's own estimate
        (lambda rng: mc.stoer_wagner(_E5, _W5, 10**7), "stoer_wagner\\(n=10000000"),
        (
            lambda rng: mc.karger_stein(_E5, _W5, 10**7, rng=rng),
            "karger_stein\\(n=10000000",
        ),
        (lambda rng: mc.fpz(_E5, _W5, 10**7, rng=rng), "fpz\\(n=10000000"),
        (
            lambda rng: mc.boosted_fpz(_E5, _W5, 10**7, p=np.full(5, 0.5), rng=rng),
            "boosted_fpz\\(n=10000000",
        ),
        (
            lambda rng: mc.min_cut(
                _E5, _W5, 10**7, method="karger_stein", n_trials=1, rng=rng
            ),
            "n=10000000",
        ),
        (
            lambda rng: mc.min_cut(_E5, _W5, 10**8, n_trials=10**4, rng=rng),
            "n=100000000",
        ),
        (
            lambda rng: mc.boosted_success_bound(10**12, 0.0, 0.0, 2.0, 2),
            "n=1000000000000",
        ),
        (
            lambda rng: mc.tsp_lp_instances(_E5, _W5, 4, max_rounds=10**12),
            "max_rounds=1000000000000",
        ),
        (
            lambda rng: mc.jitter_instances(_E5, _W5, 4, 10**12, 0.1, rng=rng),
            "n_instances=1000000000000",
        ),
    ],
)
def test_sizes_that_cannot_fit_are_refused_within_a_second(call, named):
    start = time.perf_counter()
    with pytest.raises(TooLargeError, match=named):
        call(np.random.default_rng(0))
    assert time.perf_counter() - start < 1.0


def test_a_trial_on_a_graph_too_large_names_n_not_the_internal_trial_count():
    # karger_trial used to blame "contraction_batch(n_trials=1)", an
    # argument its caller never passed
    with pytest.raises(TooLargeError) as err:
        mc.karger_trial(_E5, _W5, 10**12, rng=np.random.default_rng(0))
    assert "n=1000000000000" in str(err.value) and "contraction_batch" not in str(
        err.value
    )
    with pytest.raises(
        TooLargeError, match=r"contraction_batch\(n=4, m=5, n_trials=1000000000000\)"
    ):
        mc.contraction_batch(_E5, _W5, 4, 10**12, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    "call",
    [
        # used to draw from default_rng(0) silently
        lambda: mc.min_cut(_E5, _W5, 4, n_trials=3),
        lambda: mc.trials_until_min_cut(_E5, _W5, 4, n_reps=2),  # likewise
        lambda: mc.contraction_batch(_E5, _W5, 4, 2),
        lambda: mc.karger_trial(_E5, _W5, 4),
        lambda: mc.boosted_karger_trial(_E5, _W5, 4, np.full(5, 0.5)),
        lambda: mc.karger_stein(_E5, _W5, 4),
        lambda: mc.fpz(_E5, _W5, 4),
        lambda: mc.boosted_fpz(_E5, _W5, 4, np.full(5, 0.5)),
        lambda: mc.inject_errors(
            _E5, _W5, np.array([True, False, False, False]), 0.0, 0.0
        ),
        lambda: mc.predict_by_sampling(_E5, _W5, 4),
        lambda: mc.jitter_instances(_E5, _W5, 4, 2, 0.1),
        lambda: mc.learn_predictions_ogd(
            _E5, 4, [(_W5, np.array([True, False, False, False]))]
        ),
        lambda: mc.min_cut(_E5, _W5, 4, n_trials=3, rng=None),
        lambda: mc.learn_predictions_ogd(
            _E5, 4, [(_W5, np.array([True, False, False, False]))], rng=None
        ),
    ],
)
def test_rng_is_required_wherever_a_draw_happens(call):
    with pytest.raises(TypeError, match="rng"):
        call()


def test_rng_has_no_default_stream_in_any_signature():
    import inspect

    for name in mc.__all__:
        obj = getattr(mc, name)
        if not callable(obj) or isinstance(obj, type):
            continue
        param = inspect.signature(obj).parameters.get("rng")
        if param is None:
            continue
        # None only with shuffle=False (no draw); refused otherwise
        if name == "learn_predictions_ogd":
            assert param.kind is inspect.Parameter.KEYWORD_ONLY
            continue
        assert param.default is inspect.Parameter.empty, name
    side = np.array([True, False, False, False])
    # the given order: no rng needed
    p, _ = mc.learn_predictions_ogd(_E5, 4, [(_W5, side)], shuffle=False)
    assert p.shape == (5,)


def test_from_networkx_refuses_what_is_not_an_undirected_graph():
    with pytest.raises(
        TypeError, match="graph must be an undirected networkx.Graph, got list"
    ):
        mc.from_networkx([1, 2, 3])  # used to be a bare AttributeError
    with pytest.raises(TypeError, match="graph"):
        mc.from_networkx(nx.DiGraph([(0, 1), (1, 0)]))
    with pytest.raises(TypeError, match="graph"):
        mc.from_networkx(nx.MultiGraph([(0, 1), (0, 1)]))
    bad = nx.Graph()
    bad.add_edge(0, 1, weight="heavy")
    with pytest.raises(TypeError, match="'weight' attribute of edge"):
        mc.from_networkx(bad)


def test_fpz_branch_probability_checks_r():
    with pytest.raises(ValueError, match="r must be an integer >= 2"):
        mc.fpz_branch_probability(-1)  # used to return 1.0
    with pytest.raises(TypeError, match="r"):
        mc.fpz_branch_probability(5.0)
    assert mc.fpz_branch_probability(4) == 1.0 and mc.fpz_branch_probability(12) == 0.2


def test_learn_predictions_ogd_names_the_bad_instance():
    rng = np.random.default_rng(0)
    side = np.array([True, False, False, False])
    with pytest.raises(
        ValueError, match=r"instances\[0\] weights must have shape \(5,\)"
    ):
        mc.learn_predictions_ogd(_E5, 4, [(np.ones(3), np.ones(2))], rng=rng)
    with pytest.raises(ValueError, match=r"instances\[1\] side"):
        mc.learn_predictions_ogd(_E5, 4, [(_W5, side), (_W5, side[:3])], rng=rng)
    with pytest.raises(ValueError, match=r"instances\[1\] side must split"):
        mc.learn_predictions_ogd(
            _E5, 4, [(_W5, side), (_W5, np.ones(4, dtype=bool))], rng=rng
        )
    with pytest.raises(TypeError, match=r"instances\[0\] must be a pair"):
        mc.learn_predictions_ogd(_E5, 4, [_W5], rng=rng)
    with pytest.raises(TypeError, match="instances must be a sequence"):
        mc.learn_predictions_ogd(_E5, 4, 3, rng=rng)


def test_empty_graph_is_refused_by_boosted_weights_as_everywhere():
    with pytest.raises(ValueError, match="weights must have at least 1"):
        mc.boosted_weights([], [], 2.0)  # used to return []
    with pytest.raises(ValueError, match="empty"):
        mc.WeightedGraph(np.zeros((0, 2), dtype=int), [], 2)


def test_jitter_instances_counts_n_instances():
    rng = np.random.default_rng(0)
    assert len(mc.jitter_instances(_E5, _W5, 4, n_instances=3, noise=0.1, rng=rng)) == 3
    with pytest.raises(TypeError):
        # the old name is gone
        mc.jitter_instances(_E5, _W5, 4, count=3, noise=0.1, rng=rng)
    with pytest.raises(ValueError, match="n_instances"):
        mc.jitter_instances(_E5, _W5, 4, n_instances=0, noise=0.1, rng=rng)


def test_notebook_imports_the_chapter_in_the_books_one_form():
    import json
    from pathlib import Path

    nb = json.loads(
        (
            Path(__file__).resolve().parents[1]
            / "notebooks"
            / "06_mincut_predictions.ipynb"
        ).read_text()
    )
    code = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
    )
    assert "from icml25 import mincut_predictions as mc" in code
    assert not re.search(r"^\s*import icml25\.\w+ as ", code, flags=re.M)
