"""Tests of icml25.mnl_bandits against independent references (brute force, scipy, finite differences)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from icml25 import mnl_bandits as mb


def _softmax_with_outside(X, w, v0):
    logits = np.append(X @ w, np.log(v0))
    e = np.exp(logits - logits.max())
    return e / e.sum()


def test_mnl_probs_sum_to_one_and_match_softmax():
    rng = np.random.default_rng(0)
    for k in (1, 3, 7):
        X, w, v0 = rng.normal(size=(k, 4)), rng.normal(size=4), float(rng.uniform(0.1, 10))
        p = mb.mnl_probs(X, w, v0)
        assert p.shape == (k + 1,)
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(p, _softmax_with_outside(X, w, v0), rtol=1e-12)


def test_mnl_probs_stable_for_large_utilities():
    p = mb.mnl_probs(np.array([[800.0], [799.0]]), np.array([1.0]))
    assert np.all(np.isfinite(p)) and p[-1] < 1e-300 + 1e-12


def test_mnl_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(1)
    X, w = rng.normal(size=(5, 3)), rng.normal(size=3) * 0.5
    y = np.zeros(6)
    y[2] = 1.0
    loss, g, H = mb.mnl_loss_grad_hess(X, y, w, v0=2.0)
    h = 1e-6
    g_fd = np.array([(mb.mnl_loss_grad_hess(X, y, w + h * e, 2.0)[0]
                      - mb.mnl_loss_grad_hess(X, y, w - h * e, 2.0)[0]) / (2 * h) for e in np.eye(3)])
    H_fd = np.array([(mb.mnl_loss_grad_hess(X, y, w + h * e, 2.0)[1]
                      - mb.mnl_loss_grad_hess(X, y, w - h * e, 2.0)[1]) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-8)
    assert np.linalg.eigvalsh(H).min() > -1e-12  # PSD
    assert loss == pytest.approx(-np.log(_softmax_with_outside(X, w, 2.0)[2]))


def test_revenue_and_variance_by_hand():
    v, r = np.array([1.0, 2.0, 3.0]), np.array([0.9, 0.5, 0.2])
    assert mb.expected_revenue(v, r, np.array([0, 1]), 1.0) == pytest.approx(0.475)
    assert mb.reward_variance(v, r, np.array([0, 1]), 1.0) == pytest.approx((0.81 + 0.5) / 4 - 0.475**2)
    assert mb.expected_revenue(v, r, np.array([], dtype=int)) == 0.0


@pytest.mark.parametrize("N", range(1, 9))
def test_optimal_assortment_matches_brute_force_on_small_instances(N):
    rng = np.random.default_rng(100 + N)
    for _ in range(25):
        v = np.exp(rng.normal(size=N) * 1.5)
        r = rng.random(N)
        v0 = float(rng.uniform(0.1, 5.0))
        for K in range(1, N + 1):
            best = max((mb.expected_revenue(v, r, np.array(S), v0)
                        for k in range(1, K + 1) for S in itertools.combinations(range(N), k)), default=0.0)
            S, rev = mb.optimal_assortment(v, r, K, v0)
            assert len(S) <= K
            assert rev == pytest.approx(best, rel=1e-12, abs=1e-14)
            assert mb.expected_revenue(v, r, S, v0) == pytest.approx(rev, rel=1e-12)


def test_optimal_assortment_matches_linprog():
    rng = np.random.default_rng(2)
    for _ in range(40):
        N, K = 50, int(rng.integers(1, 12))
        v, r = np.exp(rng.normal(size=N)), rng.random(N)
        S_b, rev_b = mb.optimal_assortment(v, r, K, 1.0, method="bisection")
        S_l, rev_l = mb.optimal_assortment(v, r, K, 1.0, method="lp")
        assert rev_b == pytest.approx(rev_l, abs=1e-8)
        assert mb.expected_revenue(v, r, S_l, 1.0) == pytest.approx(rev_l, abs=1e-7)


def test_uniform_rewards_give_top_k():
    v = np.array([0.5, 3.0, 1.0, 2.0])
    S, rev = mb.optimal_assortment(v, np.ones(4), 2, 1.0)
    assert S.tolist() == [1, 3] and rev == pytest.approx(5.0 / 6.0)


def test_projection_matches_scipy():
    rng = np.random.default_rng(3)
    for _ in range(10):
        A = rng.normal(size=(4, 4))
        M = A @ A.T + 0.1 * np.eye(4)
        w = rng.normal(size=4) * 3
        u = mb.project_to_ball(w, M, 1.0)
        ref = minimize(lambda z: (z - w) @ M @ (z - w), np.zeros(4), method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda z: 1.0 - z @ z}], options={"ftol": 1e-14})
        assert np.linalg.norm(u) <= 1.0 + 1e-9
        assert (u - w) @ M @ (u - w) <= ref.fun + 1e-7


def test_omd_step_decreases_online_loss_on_fixed_sample():
    rng = np.random.default_rng(4)
    for _ in range(20):
        X = np.clip(rng.normal(size=(5, 5)), -0.45, 0.45)
        y = np.zeros(6)
        y[rng.integers(6)] = 1.0
        est = mb.OMDEstimator(5, eta=2.0, lam=4.0, B=1.0)
        est.w = rng.uniform(-0.2, 0.2, 5)
        before = mb.mnl_loss_grad_hess(X, y, est.w)[0]
        est.update(X, y)
        assert mb.mnl_loss_grad_hess(X, y, est.w)[0] < before
        assert np.linalg.norm(est.w) <= 1.0 + 1e-9
        np.testing.assert_allclose(est.H_inv @ est.H, np.eye(5), atol=1e-10)


def test_radii_orders():
    # OFU-MNL++ radius has no K and grows like sqrt(log t); OFU-MNL+ grows with K.
    assert mb.ofu_mnl_plus_beta(100, 15, 5) > mb.ofu_mnl_plus_beta(100, 5, 5) > 10 * mb.ofu_mnl_pp_beta(100, 5)
    b1, b2 = mb.ofu_mnl_pp_beta(10**3, 5), mb.ofu_mnl_pp_beta(10**6, 5)
    assert b1 < b2 < 2 * b1


@pytest.mark.parametrize("name", mb.ALGORITHMS)
@pytest.mark.parametrize("reward", ["uniform", "nonuniform"])
def test_algorithms_run_and_return_valid_assortments(name, reward):
    env = mb.MNLBanditEnv(20, 3, 4, 1.0, reward, rng=0)
    alg = mb.make_algorithm(name, 20, 4, 3, rng=np.random.default_rng(0))
    res = mb.run_bandit(alg, env, 30)
    assert res["regret"].shape == (30,) and np.all(np.diff(res["regret"]) >= -1e-12)
    assert np.all(res["sigma2"] >= 0) and np.all(res["time"] > 0)


def test_ofu_mnl_pp_learns_quickly_on_easy_instance():
    env = mb.MNLBanditEnv(30, 3, 3, 1.0, "uniform", rng=5)
    res_pp = mb.run_bandit(mb.OFUMNLPlusPlus(30, 3, 3), env, 300)
    inst = np.diff(res_pp["regret"], prepend=0.0)
    assert inst[-100:].mean() < inst[:100].mean()


def test_m2nl_exact_optimism_is_at_least_the_mle_and_feasible():
    env = mb.MNLBanditEnv(8, 2, 2, 1.0, "uniform", rng=1)
    alg = mb.OFUM2NL(8, 2, 2, optimism="exact")
    mb.run_bandit(alg, env, 15)
    X, _ = env.contexts()
    alpha = alg._exact_alpha(X, 2.0)
    assert np.all(alpha >= X @ alg.w - 1e-9)


def test_env_reset_replays_contexts():
    env = mb.MNLBanditEnv(10, 3, 2, rng=7)
    X1, _ = env.contexts()
    env.reset()
    X2, _ = env.contexts()
    np.testing.assert_array_equal(X1, X2)
    assert np.all(np.abs(X1) <= 1 / np.sqrt(3) + 1e-15)


def test_batched_runner_matches_shapes_on_cpu():
    res = mb.run_ofu_mnl_pp_batched(2, 12, 3, 3, 20, seed=0, xp=np)
    assert res["regret"].shape == (2, 20) and res["time"].shape == (20,)
    assert np.all(np.diff(res["regret"], axis=1) >= -1e-12)


# ------------------------------------------------------------------------- bad inputs


def test_bad_inputs_raise():
    v, r = np.ones(4), np.ones(4)
    with pytest.raises(ValueError, match="K"):
        mb.optimal_assortment(v, r, 0)
    with pytest.raises(ValueError, match="K"):
        mb.optimal_assortment(v, r, 5)
    with pytest.raises(TypeError, match="K"):
        mb.optimal_assortment(v, r, 2.5)
    with pytest.raises(ValueError, match="v0"):
        mb.optimal_assortment(v, r, 2, v0=-1.0)
    with pytest.raises(ValueError, match="finite"):
        mb.optimal_assortment(np.array([1.0, np.nan, 1, 1]), r, 2)
    with pytest.raises(ValueError, match="positive"):
        mb.optimal_assortment(np.array([1.0, 0.0, 1, 1]), r, 2)
    with pytest.raises(ValueError, match="method"):
        mb.optimal_assortment(v, r, 2, method="greedy")
    with pytest.raises(ValueError, match="X_S"):
        mb.mnl_probs(np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="y"):
        mb.mnl_loss_grad_hess(np.ones((3, 2)), np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="K"):
        mb.MNLBanditEnv(5, 2, 6)
    with pytest.raises(ValueError, match="v0"):
        mb.MNLBanditEnv(5, 2, 2, v0=0.0)
    with pytest.raises(ValueError, match="reward"):
        mb.MNLBanditEnv(5, 2, 2, reward="random")
    alg = mb.OFUMNLPlusPlus(5, 2, 2)
    with pytest.raises(ValueError, match="contexts"):
        alg.select(np.ones((4, 2)))
    with pytest.raises(ValueError, match="finite"):
        alg.select(np.full((5, 2), np.inf))
    with pytest.raises(ValueError, match="before select"):
        alg.update(np.array([0]), np.array([1.0, 0.0]))
    alg.select(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="K=2"):
        alg.update(np.array([0, 1, 2]), np.zeros(4))
    with pytest.raises(ValueError, match="K"):
        mb.OFUMNLPlus(3, 4, 2)
    with pytest.raises(ValueError, match="optimism"):
        mb.OFUM2NL(5, 2, 2, optimism="sampled")
    with pytest.raises(ValueError, match="unknown algorithm"):
        mb.make_algorithm("LinUCB", 5, 2, 2)


# ------------------------------------------------------------------------- argument checks (one per case)


@pytest.mark.parametrize("bad", ["abc", np.random.RandomState(0), 1.5, True])
def test_MNLBanditEnv_rejects_non_generator_rng(bad):
    with pytest.raises(TypeError, match="rng"):
        mb.MNLBanditEnv(5, 3, 2, rng=bad)


def test_MNLBanditEnv_rejects_negative_seed():
    with pytest.raises(ValueError, match="rng"):
        mb.MNLBanditEnv(5, 3, 2, rng=-1)


def test_MNLBanditEnv_accepts_generator_int_and_none():
    a = mb.MNLBanditEnv(5, 3, 2, rng=np.random.default_rng(3)).contexts()[0]
    b = mb.MNLBanditEnv(5, 3, 2, rng=np.int64(3)).contexts()[0]
    assert a.shape == b.shape == (5, 3)
    assert mb.MNLBanditEnv(5, 3, 2, rng=None).contexts()[0].shape == (5, 3)


def test_compare_algorithms_rejects_non_generator_rng():
    with pytest.raises(TypeError, match="rng"):
        mb.compare_algorithms(["OFU-MNL++"], N=5, d=2, K=2, T=3, rng=0)


def test_compare_algorithms_rejects_string_names():
    with pytest.raises(TypeError, match="names"):
        mb.compare_algorithms("OFU-MNL++", N=5, d=2, K=2, T=3, rng=np.random.default_rng(0))


def test_compare_algorithms_rejects_unknown_or_empty_names():
    with pytest.raises(ValueError, match="names"):
        mb.compare_algorithms(["OFU-MNL++", "LinUCB"], N=5, d=2, K=2, T=3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="names"):
        mb.compare_algorithms([], N=5, d=2, K=2, T=3, rng=np.random.default_rng(0))


@pytest.mark.parametrize("n_seeds", [0, -2])
def test_compare_algorithms_rejects_non_positive_n_seeds(n_seeds):
    with pytest.raises(ValueError, match="n_seeds"):
        mb.compare_algorithms(["OFU-MNL++"], N=5, d=2, K=2, T=3, rng=np.random.default_rng(0), n_seeds=n_seeds)


@pytest.mark.parametrize("B", [-1.0, 0.0, np.nan])
def test_project_to_ball_rejects_non_positive_radius(B):
    with pytest.raises(ValueError, match="B"):
        mb.project_to_ball(np.ones(3) * 5, np.eye(3), B)


@pytest.mark.parametrize("t", [-5, 0])
def test_ofu_mnl_pp_beta_rejects_non_positive_round(t):
    with pytest.raises(ValueError, match="t must be"):
        mb.ofu_mnl_pp_beta(t, 3)


@pytest.mark.parametrize("delta", [2.0, 1.0, 0.0, -0.1])
def test_ofu_mnl_pp_beta_rejects_delta_outside_unit_interval(delta):
    with pytest.raises(ValueError, match="delta"):
        mb.ofu_mnl_pp_beta(10, 3, delta=delta)


def test_ofu_mnl_plus_beta_rejects_non_positive_round_and_sizes():
    with pytest.raises(ValueError, match="t must be"):
        mb.ofu_mnl_plus_beta(0, 5, 3)
    with pytest.raises(ValueError, match="K must be"):
        mb.ofu_mnl_plus_beta(10, 0, 3)
    with pytest.raises(ValueError, match="B"):
        mb.ofu_mnl_plus_beta(10, 5, 3, B=-1.0)


def test_m2nl_beta_rejects_bad_round_and_delta():
    with pytest.raises(ValueError, match="t must be"):
        mb.m2nl_beta(-1, 3)
    with pytest.raises(ValueError, match="delta"):
        mb.m2nl_beta(10, 3, delta=1.5)


def test_algorithms_reject_delta_outside_unit_interval():
    with pytest.raises(ValueError, match="delta"):
        mb.OFUMNLPlusPlus(5, 2, 2, delta=2.0)
    with pytest.raises(ValueError, match="delta"):
        mb.OFUM2NL(5, 2, 2, delta=1.0)


def test_TSMNL_rejects_non_generator_rng():
    with pytest.raises(TypeError, match="rng"):
        mb.TSMNL(5, 2, 2, rng=0)
    with pytest.raises(TypeError, match="rng"):
        mb.make_algorithm("TS-MNL", 5, 2, 2, rng=np.random.RandomState(0))


def test_make_algorithm_rejects_non_string_name():
    with pytest.raises(TypeError, match="name"):
        mb.make_algorithm(["OFU-MNL++"], 5, 2, 2)


def test_run_bandit_rejects_bad_algorithm_and_env():
    env = mb.MNLBanditEnv(5, 2, 2, rng=0)
    with pytest.raises(TypeError, match="algorithm"):
        mb.run_bandit("OFU-MNL++", env, 3)
    with pytest.raises(TypeError, match="env"):
        mb.run_bandit(mb.OFUMNLPlusPlus(5, 2, 2), None, 3)


def test_run_ofu_mnl_pp_batched_rejects_bad_seed_and_scales():
    with pytest.raises(ValueError, match="seed"):
        mb.run_ofu_mnl_pp_batched(2, 6, 2, 2, 3, seed=-1, xp=np)
    with pytest.raises(TypeError, match="seed"):
        mb.run_ofu_mnl_pp_batched(2, 6, 2, 2, 3, seed=0.5, xp=np)
    with pytest.raises(ValueError, match="beta_scale"):
        mb.run_ofu_mnl_pp_batched(2, 6, 2, 2, 3, beta_scale=-1.0, xp=np)
