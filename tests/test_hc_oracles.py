"""icml25.hc_oracles: trees, objectives, the exact DP, the oracle, the algorithms, bad inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.cluster.hierarchy import is_valid_linkage, linkage
from scipy.spatial.distance import pdist

from icml25 import hc_oracles as hco


def _random_W(n, rng, density=1.0):
    return hco.random_graph(n, rng, density)


# ---------------------------------------------------------------- trees and objectives


def test_sibling_pair_costs_twice_its_weight():
    W = np.zeros((3, 3))
    W[0, 1] = W[1, 0] = 2.5
    T = hco.Tree(np.array([[0, 1], [3, 2]]), 3)  # ((0, 1), 2)
    assert hco.dasgupta_cost(T, W) == pytest.approx(5.0)
    assert hco.mw_revenue(T, W) == pytest.approx(2.5)


def test_cost_plus_revenue_is_n_times_total_weight():
    rng = np.random.default_rng(0)
    W = _random_W(15, rng)
    T = hco.random_binary_tree(15, rng)
    assert hco.dasgupta_cost(T, W) + hco.mw_revenue(T, W) == pytest.approx(
        15 * np.triu(W, 1).sum()
    )


def test_triplet_revenue_equals_mw_revenue_on_random_trees():
    rng = np.random.default_rng(1)
    for _ in range(20):
        W = _random_W(12, rng)
        T = hco.random_binary_tree(12, rng)
        assert hco.triplet_revenue(T, W) == pytest.approx(
            hco.mw_revenue(T, W), rel=1e-9
        )


def test_sparse_weights_give_the_dense_objectives():
    rng = np.random.default_rng(2)
    W = _random_W(20, rng, 0.3)
    T = hco.random_binary_tree(20, rng)
    assert hco.dasgupta_cost(T, sp.csr_matrix(W)) == pytest.approx(
        hco.dasgupta_cost(T, W), rel=1e-12
    )
    assert hco.mw_revenue(T, sp.csr_matrix(W)) == pytest.approx(
        hco.mw_revenue(T, W), rel=1e-12
    )


def test_lca_size_matrix_matches_scipy_cophenetic_sizes():
    rng = np.random.default_rng(3)
    T = hco.random_binary_tree(30, rng)
    S = T.lca_size_matrix()
    Z = T.to_linkage()  # height = |cluster|: the cophenetic distance is the LCA size
    from scipy.cluster.hierarchy import cophenet
    from scipy.spatial.distance import squareform

    np.testing.assert_array_equal(
        squareform(cophenet(Z)), np.where(np.eye(30, dtype=bool), 0, S)
    )


def test_linkage_round_trip():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(25, 3))
    Z = linkage(pdist(X), "average")
    T = hco.Tree.from_linkage(Z)
    assert is_valid_linkage(T.to_linkage())
    np.testing.assert_array_equal(T.to_linkage()[:, :2], Z[:, :2])
    assert hco.same_tree(hco.Tree.from_linkage(T.to_linkage()), T)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_enumeration_counts_double_factorial_distinct_trees(n):
    trees = hco.enumerate_binary_trees(n)
    assert len(trees) == math.prod(range(1, 2 * n - 2, 2))  # (2n - 3)!!
    assert len({t.lca_size_matrix().tobytes() for t in trees}) == len(trees)


@pytest.mark.parametrize("n", [3, 5, 6, 7])
def test_dp_matches_enumeration_of_all_trees(n):
    rng = np.random.default_rng(n)
    for _ in range(3):
        W = _random_W(n, rng, 0.7)
        brute = min(hco.dasgupta_cost(t, W) for t in hco.enumerate_binary_trees(n))
        assert hco.dasgupta_cost(hco.optimal_tree(W), W) == pytest.approx(
            brute, rel=1e-12
        )


def test_random_binary_tree_is_uniform_on_four_leaves():
    rng = np.random.default_rng(5)
    keys = [
        hco.random_binary_tree(4, rng).lca_size_matrix().tobytes() for _ in range(3000)
    ]
    counts = np.unique(keys, return_counts=True)[1]
    assert len(counts) == 15
    assert stats.chisquare(counts).pvalue > 1e-3


# ---------------------------------------------------------------- oracle


def test_perfect_oracle_answers_the_vertex_that_splits_away():
    T = hco.Tree(np.array([[0, 1], [4, 2], [5, 3]]), 4)  # (((0, 1), 2), 3)
    o = hco.SplittingOracle(T, 1.0)
    assert (
        o.query(0, 1, 2) == 2
        and o.query(2, 0, 1) == 2
        and o.query(0, 2, 3) == 3
        and o.query(1, 2, 3) == 3
    )
    assert o.n_queries == 4


def test_oracle_answers_persist_under_permuted_queries():
    rng = np.random.default_rng(6)
    T = hco.random_binary_tree(20, rng)
    o = hco.SplittingOracle(T, 0.5, seed=11)
    trip = np.array(list(itertools.combinations(range(20), 3)))
    first = o.query_batch(trip[:, 0], trip[:, 1], trip[:, 2])
    for perm in itertools.permutations(range(3)):
        t = trip[:, perm]
        order = rng.permutation(len(t))
        again = np.empty_like(first)
        again[order] = o.query_batch(t[order, 0], t[order, 1], t[order, 2])
        np.testing.assert_array_equal(again, first)


def test_uniform_error_rate_is_two_thirds_of_one_minus_p():
    rng = np.random.default_rng(7)
    T = hco.random_binary_tree(40, rng)
    truth = hco.SplittingOracle(T, 1.0)
    trip = np.array(list(itertools.combinations(range(40), 3)))  # 9880 triples
    t = truth.query_batch(trip[:, 0], trip[:, 1], trip[:, 2])
    for p in (0.9, 0.6):
        o = hco.SplittingOracle(T, p, seed=3)
        k = int((o.query_batch(trip[:, 0], trip[:, 1], trip[:, 2]) != t).sum())
        ci = stats.binomtest(k, len(trip)).proportion_ci(0.999)
        assert ci.low <= (1 - p) * 2 / 3 <= ci.high, (p, k / len(trip))


def test_decoy_errors_follow_the_decoy_tree():
    rng = np.random.default_rng(8)
    T, D = hco.random_binary_tree(15, rng), hco.random_binary_tree(15, rng)
    trip = np.array(list(itertools.combinations(range(15), 3)))
    a = hco.SplittingOracle(T, 0.3, noise="decoy", decoy_tree=D, seed=1).query_batch(
        *trip.T
    )
    t = hco.SplittingOracle(T, 1.0).query_batch(*trip.T)
    d = hco.SplittingOracle(D, 1.0).query_batch(*trip.T)
    assert np.all((a == t) | (a == d))


def test_amplification_fixes_independent_but_not_persistent_noise():
    rng = np.random.default_rng(9)
    T = hco.random_binary_tree(12, rng)
    trip = np.array(list(itertools.combinations(range(12), 3)))
    t = hco.SplittingOracle(T, 1.0).query_batch(*trip.T)
    fresh = hco.amplify(hco.SplittingOracle(T, 0.6, persistent=False, seed=2), 101)
    assert np.array_equal(fresh.query_batch(*trip.T), t)
    assert fresh.n_queries == 101 * len(trip)
    stuck = hco.amplify(hco.SplittingOracle(T, 0.6, seed=2), 101)
    single = hco.SplittingOracle(T, 0.6, seed=2).query_batch(*trip.T)
    np.testing.assert_array_equal(stuck.query_batch(*trip.T), single)


# ---------------------------------------------------------------- algorithms


@pytest.mark.parametrize("n", [3, 8, 33, 64])
def test_perfect_oracle_builders_return_the_oracle_tree(n):
    rng = np.random.default_rng(n)
    for T in (hco.random_binary_tree(n, rng), hco.balanced_tree(n)):
        assert hco.same_tree(
            hco.build_insertion(hco.SplittingOracle(T, 1.0), n, rng), T
        )
        assert hco.same_tree(
            hco.build_from_counts(hco.SplittingOracle(T, 1.0), n, 1.0), T
        )


def test_insertion_queries_within_2n_log_n_on_balanced_trees():
    rng = np.random.default_rng(10)
    for n in (16, 50, 128):
        o = hco.SplittingOracle(hco.balanced_tree(n), 1.0)
        hco.build_insertion(o, n, rng)
        assert o.n_queries <= 2 * n * math.ceil(math.log2(n))


def test_kernel_counts_equal_generic_query_counts():
    rng = np.random.default_rng(11)
    T = hco.random_binary_tree(18, rng)
    a = hco.all_triplet_counts(hco.SplittingOracle(T, 0.7, seed=4))
    b = hco.all_triplet_counts(hco.amplify(hco.SplittingOracle(T, 0.7, seed=4), 1))
    np.testing.assert_array_equal(a, b)


def test_debiased_sizes_are_unbiased_on_average():
    rng = np.random.default_rng(12)
    T = hco.balanced_tree(64)
    S = T.lca_size_matrix().astype(float)
    s_hat = np.mean(
        [
            hco.debiased_lca_sizes(
                hco.all_triplet_counts(hco.SplittingOracle(T, 0.7, seed=int(s))), 0.7
            )
            for s in rng.integers(2**62, size=8)
        ],
        axis=0,
    )
    off = ~np.eye(64, dtype=bool)
    assert abs((s_hat - S)[off].mean()) < 0.5


def test_nearlinear_mw_is_near_optimal_on_dense_hsbm_and_exact_at_p1():
    rng = np.random.default_rng(13)
    W, planted = hco.hsbm(6, 0.9, 0.5, 20, rng)
    T1 = hco.build_nearlinear_mw(
        hco.SplittingOracle(planted, 1.0), sp.csr_matrix(W), 64, 1.0, rng
    )
    assert hco.mw_revenue(T1, W) >= 0.97 * hco.mw_revenue(planted, W)
    T = hco.build_nearlinear_mw(
        hco.SplittingOracle(planted, 0.75, seed=1), sp.csr_matrix(W), 64, 0.75, rng
    )
    assert hco.mw_revenue(T, W) >= 0.95 * hco.mw_revenue(planted, W)


def test_baselines_return_trees_on_all_leaves():
    rng = np.random.default_rng(14)
    W = _random_W(70, rng, 0.2)
    for m in hco.LINKAGES:
        assert hco.linkage_tree(W, m).n == 70
    assert hco.spectral_tree(W).n == 70
    assert hco.random_tree(W, rng).n == 70


def test_spectral_splits_two_cliques_first():
    W = np.zeros((10, 10))
    W[:5, :5] = W[5:, 5:] = 1.0
    W[0, 5] = W[5, 0] = 0.01
    np.fill_diagonal(W, 0)
    S = hco.spectral_tree(W).lca_size_matrix()
    assert S[0, 5] == 10 and S[:5, :5].max() <= 5


def test_hsbm_and_hard_instances():
    rng = np.random.default_rng(15)
    W, planted = hco.hsbm(4, 0.9, 0.5, 5, rng)
    assert W.shape == (16, 16) and np.allclose(W, W.T) and planted.n == 16
    W2, ratio = hco.hard_instance_search(7, rng, 200)
    assert ratio >= 1.0 and ratio == pytest.approx(hco.linkage_gap(W2))


# ---------------------------------------------------------------- bad inputs


def test_bad_weights_are_refused_naming_W():
    T = hco.balanced_tree(3)
    good = np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]], float)
    for bad in (
        np.array([[0, 1, 0], [2, 0, 2], [0, 2, 0]], float),  # asymmetric
        -good,  # negative
        np.where(good == 2, np.nan, good),  # non-finite
        good + np.eye(3),  # diagonal
    ):
        with pytest.raises(ValueError, match="W"):
            hco.dasgupta_cost(T, bad)
    with pytest.raises(ValueError, match="W_sparse"):
        hco.build_nearlinear_mw(
            hco.SplittingOracle(T, 1.0),
            sp.csr_matrix(good + np.eye(3)),
            4,
            1.0,
            np.random.default_rng(0),
        )


def test_bad_p_is_refused():
    T = hco.balanced_tree(4)
    for p in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="p"):
            hco.SplittingOracle(T, p)
        with pytest.raises(ValueError, match="p"):
            hco.build_from_counts(hco.SplittingOracle(T, 1.0), 4, p)


def test_bad_triples_are_refused():
    o = hco.SplittingOracle(hco.balanced_tree(5), 0.9)
    with pytest.raises(ValueError, match="repeats a vertex"):
        o.query(1, 1, 2)
    with pytest.raises(ValueError, match="X"):
        o.query(0, 1, 5)
    with pytest.raises(ValueError, match="U"):
        o.query_batch([-1], [2], [3])


def test_non_binary_trees_are_refused():
    with pytest.raises(ValueError, match="binary tree"):
        hco.Tree(np.array([[0, 1], [0, 2]]), 3)  # leaf 0 used twice
    with pytest.raises(ValueError, match="binary tree"):
        hco.Tree(np.array([[0, 1], [2, 4]]), 3)  # a merge uses itself
    with pytest.raises(ValueError, match="binary tree"):
        hco.Tree.from_linkage(np.array([[0, 1, 1, 2]], float).repeat(2, axis=0))
    with pytest.raises(ValueError, match="binary tree"):
        hco.Tree(np.array([[0, 1, 2]]), 3)


def test_optimal_tree_refuses_n_above_14():
    with pytest.raises(ValueError, match="n <= 14"):
        hco.optimal_tree(np.zeros((15, 15)))


def test_rng_must_be_a_generator():
    T = hco.balanced_tree(6)
    with pytest.raises(TypeError, match="rng"):
        hco.build_insertion(hco.SplittingOracle(T, 1.0), 6, 0)
    with pytest.raises(TypeError, match="rng"):
        hco.random_binary_tree(6, np.random.RandomState(0))
    with pytest.raises(TypeError, match="rng"):
        hco.hsbm(3, 0.9, 0.5, 1, 42)


def test_other_bad_arguments():
    T = hco.balanced_tree(6)
    with pytest.raises(ValueError, match="noise"):
        hco.SplittingOracle(T, 0.5, noise="adversarial")
    with pytest.raises(TypeError, match="tree_star"):
        hco.SplittingOracle("tree", 0.5)
    with pytest.raises(ValueError, match="r must"):
        hco.amplify(hco.SplittingOracle(T, 0.5), 0)
    with pytest.raises(ValueError, match="n = 7"):
        hco.build_insertion(hco.SplittingOracle(T, 1.0), 7, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n must"):
        hco.enumerate_binary_trees(8)
    with pytest.raises(TypeError, match="rng"):
        hco.build_from_counts(hco.SplittingOracle(T, 1.0), 6, 1.0, K=3)
    with pytest.raises(ValueError, match="method"):
        hco.linkage_tree(np.zeros((4, 4)), "median")


# ---------------------------------------------- review fixes: sizes refused before work

import inspect  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import icml25.checks  # noqa: E402
from icml25.checks import TooLargeError  # noqa: E402
from icml25.kernels import triplets  # noqa: E402


def _refused_fast(call):
    t0 = time.perf_counter()
    with pytest.raises(TooLargeError):
        call()
    assert time.perf_counter() - t0 < 1.0


class _GenericOracle:
    """An oracle that is not a persistent SplittingOracle (counted through query_batch)."""

    def __init__(self, n):
        self.n = n
        self.n_queries = 0

    def query_batch(self, U, V, X):
        return np.asarray(X)


def _small_memory(monkeypatch, n_bytes=2**20):
    monkeypatch.setattr(icml25.checks, "available_memory_bytes", lambda: n_bytes)


@pytest.mark.parametrize(
    "case",
    [
        "generic n=3000 (CPU rate)",
        "persistent n=3000 (CPU reference)",
        "generic n=10**5 (bytes)",
    ],
)
def test_all_triplet_counts_refuses_what_the_cpu_cannot_count(case, monkeypatch):
    if case.startswith("persistent"):
        O = hco.SplittingOracle(hco.balanced_tree(3000), 0.9)
        monkeypatch.setattr(triplets, "gpu_available", lambda: False)
        _refused_fast(lambda: hco.all_triplet_counts(O))
        assert O.n_queries == 0
    else:
        _refused_fast(
            lambda: hco.all_triplet_counts(
                _GenericOracle(3000 if "3000" in case else 10**5)
            )
        )


@pytest.mark.parametrize(
    "call",
    [
        lambda O, rng: hco.build_from_counts(O, 6, 0.9, K=10**12, rng=rng),
        lambda O, rng: hco.build_nearlinear_mw(
            O, hco.random_graph(6, rng), 10**12, 0.9, rng
        ),
        lambda O, rng: hco.amplify(O, 10**10).query(0, 1, 2),
        lambda O, rng: hco.AmplifiedOracle(O, 10**6).query_batch(
            np.zeros(10**5, int), np.ones(10**5, int), np.full(10**5, 2)
        ),
    ],
    ids=[
        "build_from_counts K",
        "build_nearlinear_mw m K",
        "amplify r",
        "AmplifiedOracle B r",
    ],
)
def test_sampling_budgets_are_checked(call):
    O = hco.SplittingOracle(hco.balanced_tree(6), 0.9)
    _refused_fast(lambda: call(O, np.random.default_rng(0)))


@pytest.mark.parametrize(
    "call",
    [
        lambda T, W: T.lca_size_matrix(),
        lambda T, W: hco.SplittingOracle(T, 0.9),
        lambda T, W: hco.dasgupta_cost(T, W),
    ],
    ids=["Tree.lca_size_matrix", "SplittingOracle", "dasgupta_cost dense"],
)
def test_dense_lca_matrices_are_budgeted(call, monkeypatch):
    T = hco.balanced_tree(1000)
    # drawn before the memory is cut
    W = hco.random_graph(1000, np.random.default_rng(0))
    _small_memory(monkeypatch, 3 * 10**6)  # 4 n^2 = 4 MB > 3 MB
    _refused_fast(lambda: call(T, W))


def test_sparse_objectives_never_build_the_dense_lca_matrix(monkeypatch):
    rng = np.random.default_rng(7)
    for n in (2, 3, 17, 300):
        W = _random_W(n, rng, 0.05 if n > 20 else 1.0)
        W[0, 1] = W[1, 0] = 1.0
        for T in (hco.random_binary_tree(n, rng), hco.balanced_tree(n)):
            dense = (hco.dasgupta_cost(T, W), hco.mw_revenue(T, W))
            T2 = hco.Tree(T.children, n)  # no cached matrix
            with monkeypatch.context() as m:
                m.setattr(
                    hco.Tree,
                    "lca_size_matrix",
                    lambda self: (_ for _ in ()).throw(AssertionError("dense")),
                )
                assert hco.dasgupta_cost(T2, sp.csr_matrix(W)) == pytest.approx(
                    dense[0], rel=1e-12
                )
                assert hco.mw_revenue(T2, sp.csr_matrix(W)) == pytest.approx(
                    dense[1], rel=1e-12
                )


def _huge_sparse():
    return sp.csr_matrix((np.ones(2), ([0, 1], [1, 0])), shape=(10**6, 10**6))


@pytest.mark.parametrize(
    "call",
    [
        lambda rng: hco.linkage_tree(_huge_sparse()),
        lambda rng: hco.spectral_tree(_huge_sparse()),
        lambda rng: hco.random_graph(10**6, rng),
        lambda rng: hco.random_binary_tree(10**9, rng),
        lambda rng: hco.balanced_tree(10**9),
        lambda rng: hco.hsbm(14, 0.9, 0.5, 1, rng),
        lambda rng: hco.hard_instance_search(6, rng, 10**12),
        lambda rng: hco.triplet_revenue(
            hco.balanced_tree(800), np.ones((800, 800)) - np.eye(800)
        ),
    ],
    ids=[
        "linkage_tree sparse",
        "spectral_tree sparse",
        "random_graph",
        "random_binary_tree",
        "balanced_tree",
        "hsbm depth 14",
        "hard_instance_search",
        "triplet_revenue n=800",
    ],
)
def test_sizes_that_cannot_fit_are_refused_up_front(call, monkeypatch):
    # hsbm(14) needs ~13 GB: refused on an 8 GiB budget
    _small_memory(monkeypatch, 8 * 2**30)
    _refused_fast(lambda: call(np.random.default_rng(0)))


def test_triplet_revenue_accepts_n_400_as_documented():
    T = hco.balanced_tree(400)
    W = np.zeros((400, 400))
    W[0, 1] = W[1, 0] = 1.0
    assert hco.triplet_revenue(T, W) == pytest.approx(hco.mw_revenue(T, W))


def _low_recursion_limit(extra=80):
    depth = len(inspect.stack(0))
    return depth + extra


def test_deep_trees_do_not_recurse():
    W = np.zeros((150, 150))  # a star: spectral peels one leaf per split, depth 149
    W[0, 1:] = W[1:, 0] = 1.0
    nested = 0
    for k in range(1, 400):
        nested = (nested, k)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_low_recursion_limit())
    try:
        T = hco.spectral_tree(W)
        C = hco.trees._from_nested(nested, 400)
    finally:
        sys.setrecursionlimit(old)
    assert T.n == 150 and T.depth() == 149
    assert C.depth() == 399


@pytest.mark.parametrize(
    "call, err",
    [
        (lambda O: hco.amplify("oracle", 3), TypeError),
        (lambda O: hco.amplify(None, 3), TypeError),
        (lambda O: hco.AmplifiedOracle(O, 0), ValueError),
        (lambda O: hco.AmplifiedOracle(O, -1), ValueError),
        (lambda O: hco.AmplifiedOracle("oracle", 3), TypeError),
        (lambda O: hco.AmplifiedOracle(O, 2.0), TypeError),
    ],
    ids=["amplify str", "amplify None", "r=0", "r=-1", "base str", "r float"],
)
def test_amplify_validates_r_and_the_oracle(call, err):
    O = hco.SplittingOracle(hco.balanced_tree(6), 0.9)
    with pytest.raises(err, match="oracle|base|r must"):
        call(O)


def _rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: hco.hsbm(3, 0.9, 0.5, 2**63, _rng()), ValueError, "n_samples"),
        (
            lambda: hco.ratio_sweep([hco.random_graph(5, _rng())], [0.9], "2", _rng()),
            TypeError,
            "n_oracle_seeds",
        ),
        (
            lambda: hco.ratio_sweep([hco.random_graph(5, _rng())], [0.9], -1, _rng()),
            ValueError,
            "n_oracle_seeds",
        ),
        (
            lambda: hco.decoy_comparison(
                hco.random_graph(5, _rng()), hco.balanced_tree(5), [0.9], "1", _rng()
            ),
            TypeError,
            "n_oracle_seeds",
        ),
        (lambda: hco.insertion_queries(5, _rng()), ValueError, "ns"),
        (lambda: hco.insertion_queries(["a"], _rng()), TypeError, "ns"),
        (lambda: hco.linkage_gap(np.zeros((5, 5))), ValueError, "no positive weight"),
        (lambda: hco.debiased_lca_sizes(-np.ones((3, 3)), 0.5), ValueError, "C must"),
        (
            lambda: hco.debiased_lca_sizes(np.full((4, 4), 3.0), 0.5),
            ValueError,
            "C must",
        ),
        (
            lambda: hco.build_from_counts(
                hco.SplittingOracle(hco.balanced_tree(6), 0.9), 6, 0.9, rng=0
            ),
            TypeError,
            "rng",
        ),
        (
            lambda: hco.SplittingOracle(
                hco.balanced_tree(6), 0.5, noise="uniform", decoy_tree="x"
            ),
            TypeError,
            "decoy_tree",
        ),
        (
            lambda: hco.Tree.from_linkage(np.array([[0, 1, 1, 2], [1e30, 2, 2, 3]])),
            ValueError,
            "Z",
        ),
        (
            lambda: hco.Tree.from_linkage(np.array([[0, 1, 1], [3, 2, 2]], float)),
            ValueError,
            "Z",
        ),
        (
            lambda: hco.Tree.from_linkage(
                np.array([[0, 1, 1, 2], [3, 2, 2, 7]], float)
            ),
            ValueError,
            "Z",
        ),
    ],
    ids=[
        "hsbm n_samples 2**63",
        "ratio_sweep seeds str",
        "ratio_sweep seeds -1",
        "decoy_comparison seeds str",
        "insertion_queries int",
        "insertion_queries str",
        "linkage_gap zero W",
        "debias negative counts",
        "debias counts above n-2",
        "build_from_counts rng=0",
        "decoy_tree ignored",
        "from_linkage id 1e30",
        "from_linkage 3 columns",
        "from_linkage size column",
    ],
)
def test_bad_arguments_are_refused_by_name(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_from_linkage_still_reads_scipy_linkages():
    rng = np.random.default_rng(11)
    Z = linkage(pdist(rng.random((9, 2))), "average")
    T = hco.Tree.from_linkage(Z)
    assert hco.same_tree(hco.Tree.from_linkage(T.to_linkage()), T)


def test_validators_live_in_the_package_checks_module():
    root = pathlib.Path(hco.__file__).parent
    assert (root / "_checks.py").exists()
    for path in root.glob("*.py"):
        src = path.read_text()
        # module-level only
        assert "\n    from icml25" not in src and "\n        from icml25" not in src, (
            path.name
        )
        if path.name != "_checks.py":
            assert "def _check_" not in src, path.name
