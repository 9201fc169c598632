"""icml25.gim (chapter 04): simulators, the SCM likelihood, the GIM fit and read-outs, metrics,
baselines, and every bad input the docstrings name. References: scipy, sklearn, closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import integrate, stats
from scipy.spatial.distance import cdist

from icml25 import gim
from icml25.gim import method


@pytest.fixture(scope="module")
def small_bench():
    return gim.make_benchmark(
        np.random.default_rng(0),
        d=5,
        n_train_drugs=8,
        n_new_drugs=4,
        n_k=20,
        n0=200,
        q=6,
    )


@pytest.fixture(scope="module")
def small_fit(small_bench):
    return gim.fit_gim(small_bench, np.random.default_rng(1), n_steps=150, hidden=16)


# --------------------------------------------------------------------------------- data


def test_random_dag_is_acyclic_with_the_expected_density():
    rng = np.random.default_rng(0)
    Ws = [gim.random_dag(12, 2.0, rng) for _ in range(40)]
    assert all(gim.notears_h((W != 0).astype(float)) < 1e-9 for W in Ws)
    mean_edges = np.mean([np.count_nonzero(W) for W in Ws])
    assert abs(mean_edges - 12 * 2.0 / 2) < 2.0  # E[edges] = d * degree / 2 = 12
    nz = np.concatenate([np.abs(W[W != 0]) for W in Ws])
    assert nz.min() >= 0.5 and nz.max() <= 1.5


def test_shift_moves_the_mean_by_the_closed_form():
    rng = np.random.default_rng(1)
    W = gim.random_dag(5, 2.0, rng)
    scm = gim.LinearSCM(W, np.zeros(5), np.full(5, 0.5))
    I, psi = np.array([1.0, 0, 0, 1, 0]), np.array([2.0, 0, 0, -1.0, 0])
    want = np.linalg.inv(np.eye(5) - W).T @ (I * psi)
    X = scm.sample(40_000, rng, I, psi)
    se = np.sqrt(np.diag(scm.covariance()) / 40_000)
    assert np.all(np.abs(X.mean(0) - want) <= 4 * se)
    assert np.allclose(scm.mean(I, psi), want)
    assert np.allclose(np.cov(X.T), scm.covariance(), atol=0.05)


def test_mlp_scm_shift_changes_only_descendants():
    rng = np.random.default_rng(2)
    W = np.zeros((4, 4))
    W[0, 1] = W[1, 2] = 1.0  # 0 -> 1 -> 2, and 3 isolated
    scm = gim.MLPSCM.from_graph(W, rng)
    a = scm.sample(5000, np.random.default_rng(3))
    b = scm.sample(
        5000,
        np.random.default_rng(3),
        np.array([0, 1.0, 0, 0]),
        np.array([0, 2.0, 0, 0]),
    )
    # same noise: non-descendants unchanged
    assert np.allclose(a[:, [0, 3]], b[:, [0, 3]])
    assert np.allclose(b[:, 1] - a[:, 1], 2.0)


def test_hill_matches_its_formula_and_half_saturates_at_K():
    assert np.isclose(gim.hill(1.3, 2.0, 1.3, 2.5), 1.0)
    c = np.linspace(0, 3, 7)
    assert np.allclose(gim.hill(c, -1.5, 0.8, 2.0), -1.5 * c**2 / (0.8**2 + c**2))


def test_benchmark_has_the_papers_sizes_and_standardised_d0():
    b = gim.make_benchmark(np.random.default_rng(4))
    assert (
        b.train.X.shape == (160, 50, 10)
        and b.partial.X.shape == (200, 50, 10)
        and b.full.X.shape == (80, 50, 10)
    )
    assert b.D0.shape == (800, 10)
    assert np.allclose(b.D0.mean(0), 0, atol=1e-12) and np.allclose(b.D0.std(0), 1)
    assert b.train.gammas.shape == (160, 17)
    assert set(b.partial.dose) == {0.25, 0.75, 1.25, 1.75, 2.25}
    assert np.all(b.train.targets.sum(1) >= 1) and np.all(b.train.targets.sum(1) <= 2)
    # the new drugs share the feature map of the training drugs
    assert np.array_equal(b.library.A, b.new_library.A)


def test_standardised_benchmark_keeps_a_linear_scm_with_rescaled_weights():
    b = gim.make_benchmark(
        np.random.default_rng(5), d=4, n_train_drugs=2, n_new_drugs=1, n_k=5, n0=50, q=3
    )
    s = b.scale
    scm_std = gim.LinearSCM(
        b.W, (b.scm.b - b.loc + b.loc @ b.scm.W) / s, b.scm.sigma / s
    )
    assert np.allclose(scm_std.mean(), (b.scm.mean() - b.loc) / s)


# -------------------------------------------------------------------------------- model


def test_linear_log_prob_matches_scipy_multivariate_normal():
    rng = np.random.default_rng(6)
    W = gim.random_dag(4, 2.0, rng)
    sigma = np.array([0.5, 0.8, 1.2, 0.9])
    b = np.array([0.1, -0.3, 0.0, 0.4])
    scm = gim.LinearSCM(W, b, sigma)
    I = np.array([[[0, 1, 0, 1.0], [1, 0, 0, 0.0]]])
    psi = np.array([[[0, 1.5, 0, -2.0], [0.7, 0, 0, 0.0]]])
    X = scm.sample(30, rng, I[0, 0], psi[0, 0])
    mod = gim.SCMModule(4)
    with torch.no_grad():
        mod.W.copy_(torch.as_tensor(W))
        mod.b.copy_(torch.as_tensor(b))
        mod.log_sigma.copy_(torch.as_tensor(np.log(sigma)))
    ll = mod.log_prob(X[None], I, psi).detach().numpy()[0]
    for s in range(2):
        want = (
            stats.multivariate_normal(scm.mean(I[0, s], psi[0, s]), scm.covariance())
            .logpdf(X)
            .sum()
        )
        assert np.isclose(ll[s], want, rtol=1e-10)


def test_moment_path_equals_cell_path():
    rng = np.random.default_rng(7)
    mod = gim.SCMModule(5)
    with torch.no_grad():
        mod.W.copy_(torch.as_tensor(rng.normal(size=(5, 5))))
        mod.b.copy_(torch.as_tensor(rng.normal(size=5)))
    X = torch.as_tensor(rng.normal(size=(3, 20, 5)))
    a = mod._residual_sums(X)
    b = mod._residual_sums(method._moments(X))
    assert torch.allclose(a[0], b[0]) and torch.allclose(a[1], b[1]) and a[2] == b[2]


def test_notears_h_is_zero_on_dags_and_positive_on_cycles():
    rng = np.random.default_rng(8)
    for _ in range(10):
        assert abs(gim.notears_h(gim.random_dag(7, 3.0, rng))) < 1e-10
    C = np.zeros((3, 3))
    C[0, 1] = C[1, 2] = C[2, 0] = 0.8
    assert gim.notears_h(C) > 1e-3
    # closed form for a 2-cycle with weights a, b: tr exp(A) - 2 = 2 (cosh(a b) - 1)
    A = np.array([[0, 0.7], [1.1, 0]])
    assert np.isclose(gim.notears_h(A), 2 * (np.cosh(0.7 * 1.1) - 1))


def test_prune_to_dag_drops_the_weakest_edge_of_a_cycle():
    A = np.array([[0, 0.9, 0], [0, 0, 0.8], [0.4, 0, 0]])
    G = gim.prune_to_dag(A, 0.3)
    assert G.sum() == 2 and not G[2, 0]


def test_posterior_target_probs_match_numerical_integration(small_fit, small_bench):
    tr = small_bench.train
    post = small_fit.posterior_target_probs(tr.X[:2], tr.gammas[:2])
    with torch.no_grad():
        logits, m = small_fit.net(torch.as_tensor(tr.gammas[:2]))
        SR, SR2, n = small_fit.scm._residual_sums(torch.as_tensor(tr.X[:2]))
    s, sig = (
        np.exp(small_fit.net.log_s.detach().numpy()),
        small_fit.scm.sigma().detach().numpy(),
    )
    k, j = 1, 2
    f = lambda p: (  # noqa: E731
        stats.norm.pdf(p, m[k, j], s[j])
        * np.exp(-(-2 * p * SR[k, j].item() + n * p * p) / (2 * sig[j] ** 2))
    )
    lo, hi = m[k, j].item() - 12 * s[j], m[k, j].item() + 12 * s[j]
    bf = integrate.quad(f, lo, hi, points=[SR[k, j].item() / n], limit=200)[0]
    want = 1 / (1 + np.exp(-(logits[k, j].item() + np.log(bf))))
    assert np.isclose(post[k, j], want, rtol=1e-6)


def test_fit_reduces_the_objective_and_reads_out_consistent_shapes(
    small_fit, small_bench
):
    hist = small_fit.history
    assert hist[-1]["nll"] < hist[0]["nll"]
    G = small_fit.graph(0.3)
    assert (
        G.dtype == bool and G.shape == (5, 5) and gim.notears_h(G.astype(float)) < 1e-9
    )
    p = small_fit.target_probs(small_bench.full.gammas)
    assert p.shape == (16, 5) and np.all((p >= 0) & (p <= 1))
    X = small_fit.predict(small_bench.full.gammas[:3], 7, np.random.default_rng(0))
    assert X.shape == (3, 7, 5) and np.isfinite(X).all()


@pytest.mark.parametrize("mode", ["mc", "free"])
def test_other_modes_run(small_bench, mode):
    m = gim.fit_gim(
        small_bench, np.random.default_rng(2), n_steps=20, mode=mode, S=4, hidden=8
    )
    assert m.history and np.isfinite(m.history[-1]["nll"])
    assert (m.context_probs is None) == (mode == "mc")


def test_mlp_scm_module_fits(small_bench):
    m = gim.fit_gim(
        small_bench, np.random.default_rng(3), n_steps=20, kind="mlp", hidden=8
    )
    assert np.isfinite(m.history[-1]["nll"]) and m.predict(
        small_bench.full.gammas[:2], 4, np.random.default_rng(0)
    ).shape == (2, 4, 5)


def test_known_graph_keeps_the_support(small_bench):
    m = gim.fit_gim(
        small_bench, np.random.default_rng(4), n_steps=30, known_graph=True, hidden=8
    )
    assert np.all(m.weighted_adjacency()[small_bench.W == 0] == 0)


# ------------------------------------------------------------------------------ metrics


def test_mmd_equals_its_double_sum_definition():
    g = np.random.default_rng(9)
    X, Y = g.normal(size=(12, 3)), g.normal(size=(9, 3)) + 0.3
    h = 1.1
    k = lambda A, B: np.exp(-cdist(A, B, "sqeuclidean") / (2 * h * h))  # noqa: E731
    Kxx, Kyy, Kxy = k(X, X), k(Y, Y), k(X, Y)
    biased = Kxx.mean() + Kyy.mean() - 2 * Kxy.mean()
    unbiased = (Kxx.sum() - 12) / (12 * 11) + (Kyy.sum() - 9) / (9 * 8) - 2 * Kxy.mean()
    assert np.isclose(gim.mmd_rbf(X, Y, h), biased, rtol=1e-12)
    assert np.isclose(gim.mmd_rbf(X, Y, h, unbiased=True), unbiased, rtol=1e-12)


def test_unbiased_mmd_against_a_permutation_estimate():
    g = np.random.default_rng(10)
    X, Y = g.normal(size=(60, 2)), g.normal(size=(60, 2)) + np.array([0.8, 0])
    h = gim.median_bandwidth(np.vstack([X, Y]))
    stat = gim.mmd_rbf(X, Y, h, unbiased=True)
    Z = np.vstack([X, Y])
    perms = np.array(
        [
            gim.mmd_rbf(*np.split(Z[g.permutation(120)], 2), h, unbiased=True)
            for _ in range(200)
        ]
    )
    assert stat > np.quantile(perms, 0.99)  # a real shift is detected
    # the null is centred at 0 (unbiased)
    assert abs(perms.mean()) < 3 * perms.std() / np.sqrt(200)
    same = gim.mmd_rbf(X, g.normal(size=(60, 2)), h, unbiased=True)
    assert same < np.quantile(perms, 0.99)


def test_energy_distance_matches_scipy_in_one_dimension():
    g = np.random.default_rng(11)
    x, y = g.normal(size=40), g.normal(size=30) + 1
    assert np.isclose(
        np.sqrt(gim.energy_distance(x[:, None], y[:, None])),
        stats.energy_distance(x, y),
        rtol=1e-10,
    )


def test_wasserstein2_matches_sorted_matching_in_one_dimension():
    g = np.random.default_rng(12)
    x, y = g.normal(size=25), g.normal(size=25) * 2
    assert np.isclose(
        gim.wasserstein2(x[:, None], y[:, None]),
        np.sqrt(np.mean((np.sort(x) - np.sort(y)) ** 2)),
        rtol=1e-8,
    )


def test_target_auroc_matches_sklearn_and_brute_force():
    from sklearn.metrics import roc_auc_score

    g = np.random.default_rng(13)
    t = g.random((8, 5)) < 0.3
    s = g.random((8, 5)) + t
    pos, neg = s[t], s[~t]
    brute = np.mean([(p > q) + 0.5 * (p == q) for p in pos for q in neg])
    assert np.isclose(gim.target_auroc(s, t), roc_auc_score(t.ravel(), s.ravel()))
    assert np.isclose(gim.target_auroc(s, t), brute)


def test_shd_counts_missing_extra_reversed_and_undirected():
    T = np.zeros((4, 4), bool)
    T[0, 1] = T[1, 2] = T[2, 3] = True
    E = T.copy()
    assert gim.shd(E, T) == 0
    E[0, 1], E[1, 0] = False, True  # reversed: 1
    E[0, 3] = True  # extra: 1
    E[2, 3] = False  # missing: 1
    E[2, 1] = True  # undirected 1 - 2: 1
    assert gim.shd(E, T) == 4


# ---------------------------------------------------------------------------- baselines


def test_z_test_scores_match_the_formula_and_flag_descendants():
    W = np.array([[0, 1.0, 0], [0, 0, 1.0], [0, 0, 0]])
    scm = gim.LinearSCM(W, np.zeros(3), np.ones(3))
    g = np.random.default_rng(14)
    D0, Dk = (
        scm.sample(1000, g),
        scm.sample(100, g, np.array([0, 1.0, 0]), np.array([0, 1.5, 0])),
    )
    z = gim.z_test_scores(D0, Dk[None])[0]
    want = np.abs(Dk.mean(0) - D0.mean(0)) / np.sqrt(
        D0.var(0, ddof=1) / 100 + D0.var(0, ddof=1) / 1000
    )
    assert np.allclose(z, want)
    assert z[1] > 3 and z[2] > 3 and z[0] < 3


def test_black_box_learns_a_feature_to_shift_map():
    g = np.random.default_rng(15)
    D0 = g.normal(size=(300, 2))
    G = g.uniform(-1, 1, (60, 1))
    X = (
        D0[g.integers(0, 300, (60, 40))]
        + np.column_stack([2 * G[:, 0], -G[:, 0]])[:, None, :]
    )
    bb = gim.BlackBoxShift(g).fit(D0, X, G)
    P = bb.predict(np.array([[0.5]]), 2000, g)
    assert np.allclose(P.mean((0, 1)), [1.0, -0.5], atol=0.2)


def test_ges_and_pc_return_the_chain_skeleton():
    g = np.random.default_rng(16)
    W = np.array([[0, 1.2, 0], [0, 0, -1.0], [0, 0, 0]])
    X = gim.LinearSCM(W, np.zeros(3), np.ones(3)).sample(2000, g)
    for A in (gim.graph_ges(X), gim.graph_pc(X)):
        skeleton = A | A.T
        assert skeleton[0, 1] and skeleton[1, 2] and not skeleton[0, 2]


# --------------------------------------------------------------------------- bad inputs


def test_cyclic_w_is_refused_by_the_samplers():
    C = np.array([[0, 1.0], [1.0, 0]])
    with pytest.raises(ValueError, match="W has a directed cycle"):
        gim.LinearSCM(C, np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="W has a directed cycle"):
        gim.MLPSCM.from_graph(C, np.random.default_rng(0))


def test_rng_must_be_a_generator(small_bench):
    with pytest.raises(TypeError, match="rng"):
        gim.random_dag(4, 1.0, 0)
    with pytest.raises(TypeError, match="rng"):
        gim.LinearSCM(np.zeros((2, 2)), np.zeros(2), np.ones(2)).sample(
            3, np.random.RandomState(0)
        )
    with pytest.raises(TypeError, match="rng"):
        gim.make_benchmark(1)
    m = gim.GIM(gim.SCMModule(5), gim.GIMNet(7, 5, 8))
    with pytest.raises(TypeError, match="rng"):
        m.fit(
            small_bench.D0,
            small_bench.train.X,
            small_bench.train.gammas,
            2,
            2,
            0.0,
            0.0,
            "map",
            0,
        )


def test_fit_refuses_shapes_that_disagree_and_bad_settings(small_bench):
    b, r = small_bench, np.random.default_rng(0)
    m = gim.GIM(gim.SCMModule(5), gim.GIMNet(7, 5, 8))
    with pytest.raises(ValueError, match="X_ctx"):
        m.fit(b.D0, b.train.X[:, :, :4], b.train.gammas, 2, 2, 0.0, 0.0, "map", r)
    with pytest.raises(ValueError, match="gammas"):
        m.fit(b.D0, b.train.X, b.train.gammas[:-1], 2, 2, 0.0, 0.0, "map", r)
    with pytest.raises(ValueError, match="gammas"):
        m.fit(b.D0, b.train.X, b.train.gammas[:, :-1], 2, 2, 0.0, 0.0, "map", r)
    with pytest.raises(ValueError, match="D0"):
        m.fit(b.D0[:, :3], b.train.X, b.train.gammas, 2, 2, 0.0, 0.0, "map", r)
    with pytest.raises(ValueError, match="S"):
        m.fit(b.D0, b.train.X, b.train.gammas, 2, 0, 0.0, 0.0, "map", r)
    with pytest.raises(ValueError, match="mode"):
        m.fit(b.D0, b.train.X, b.train.gammas, 2, 2, 0.0, 0.0, "vi", r)
    bad = b.train.X.copy()
    bad[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="X_ctx"):
        m.fit(b.D0, bad, b.train.gammas, 2, 2, 0.0, 0.0, "map", r)
    with pytest.raises(ValueError, match="d = 5"):
        gim.GIM(gim.SCMModule(5), gim.GIMNet(7, 4, 8))


def test_log_prob_refuses_shapes_that_disagree():
    mod = gim.SCMModule(3)
    X = np.zeros((2, 4, 3))
    with pytest.raises(ValueError, match="X"):
        mod.log_prob(np.zeros((2, 4, 2)), np.zeros((2, 1, 3)), np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match="I"):
        mod.log_prob(X, np.zeros((3, 1, 3)), np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match="psi"):
        mod.log_prob(X, np.zeros((2, 1, 3)), np.zeros((2, 1, 2)))
    with pytest.raises(ValueError, match="X"):
        mod.log_prob(
            np.full((2, 4, 3), np.nan), np.zeros((2, 1, 3)), np.zeros((2, 1, 3))
        )


def test_graph_threshold_must_lie_in_the_open_unit_interval(small_fit):
    for t in (0.0, 1.0, -0.2, 1.5):
        with pytest.raises(ValueError, match="threshold"):
            small_fit.graph(t)


def test_metrics_and_generators_refuse_bad_input():
    with pytest.raises(ValueError, match="bandwidth"):
        gim.mmd_rbf(np.zeros((3, 2)), np.ones((3, 2)), 0.0)
    with pytest.raises(ValueError, match="Y"):
        gim.mmd_rbf(np.zeros((3, 2)), np.ones((3, 3)), 1.0)
    with pytest.raises(ValueError, match="targets"):
        gim.target_auroc(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="true"):
        gim.shd(np.zeros((3, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="exp_degree"):
        gim.random_dag(4, 5.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="d"):
        gim.random_dag(0, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="K"):
        gim.hill(1.0, 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="I and psi"):
        gim.LinearSCM(np.zeros((2, 2)), np.zeros(2), np.ones(2)).sample(
            3, np.random.default_rng(0), I=np.ones(2)
        )
    with pytest.raises(ValueError, match="sigma"):
        gim.LinearSCM(np.zeros((2, 2)), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="kind"):
        gim.make_benchmark(np.random.default_rng(0), kind="quadratic")


def test_sizes_that_cannot_fit_are_refused_up_front():
    """Review fix: these used to reach numpy and fail with a MemoryError (or swap) deep inside."""
    from icml25.checks import TooLargeError

    rng = np.random.default_rng(0)
    with pytest.raises(TooLargeError, match="d=1000000"):
        gim.random_dag(10**6, 1.0, rng)
    scm = gim.LinearSCM(gim.random_dag(4, 1.0, rng), np.zeros(4), np.ones(4))
    with pytest.raises(TooLargeError, match="n=1000000000000"):
        scm.sample(10**12, rng)
    with pytest.raises(TooLargeError, match="cells"):
        gim.wasserstein2(np.zeros((300_000, 2)), np.zeros((300_000, 2)))
    with pytest.raises(TooLargeError, match="cells"):
        gim.energy_distance(np.zeros((300_000, 2)), np.zeros((300_000, 2)))
    model = gim.GIM(gim.SCMModule(4), gim.GIMNet(3, 4, 8))
    with pytest.raises(TooLargeError, match="n=10000000000"):
        model.predict(np.zeros((4, 3)), 10**10, rng)
    with pytest.raises(ValueError, match="n"):
        model.predict(np.zeros(3), 0, rng)


def test_bad_values_are_refused_with_the_argument_named():
    """Review fix: I > 1 in log_prob was silently accepted, a wrong-width gamma crashed inside
    torch.nn.Linear, an empty sample gave energy distance NaN, a constant D0 gave z = inf."""
    rng = np.random.default_rng(0)
    mod = gim.SCMModule(3)
    X = torch.randn(2, 5, 3, dtype=torch.float64)
    ok = torch.full((2, 4, 3), 0.5, dtype=torch.float64)
    with pytest.raises(ValueError, match="I must lie in"):
        mod.log_prob(X, 2 * ok + 1, ok)
    with pytest.raises(ValueError, match="psi must be finite"):
        mod.log_prob(X, ok, ok * float("nan"))
    with pytest.raises(ValueError, match="X must be finite"):
        mod.log_prob(X * float("inf"), ok, ok)
    with pytest.raises(ValueError, match=r"gamma must be a \(B, 3\) tensor"):
        gim.GIMNet(3, 4, 8)(torch.zeros(5, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="X"):
        gim.energy_distance(np.zeros((0, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="Y"):
        gim.wasserstein2(np.ones((3, 2)), np.zeros((0, 2)))
    with pytest.raises(ValueError, match="D0 must vary"):
        gim.z_test_scores(np.zeros((10, 3)), rng.normal(size=(2, 10, 3)))
