"""Tests of icml25.mnl_bandits against independent references (brute force, scipy, finite differences)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from icml25 import mnl_bandits as mnl


def _softmax_with_outside(X, w, v0):
    logits = np.append(X @ w, np.log(v0))
    e = np.exp(logits - logits.max())
    return e / e.sum()


def test_mnl_probs_sum_to_one_and_match_softmax():
    rng = np.random.default_rng(0)
    for k in (1, 3, 7):
        X, w, v0 = (
            rng.normal(size=(k, 4)),
            rng.normal(size=4),
            float(rng.uniform(0.1, 10)),
        )
        p = mnl.mnl_probs(X, w, v0)
        assert p.shape == (k + 1,)
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(p, _softmax_with_outside(X, w, v0), rtol=1e-12)


def test_mnl_probs_stable_for_large_utilities():
    p = mnl.mnl_probs(np.array([[800.0], [799.0]]), np.array([1.0]))
    assert np.all(np.isfinite(p)) and p[-1] < 1e-300 + 1e-12


def test_mnl_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(1)
    X, w = rng.normal(size=(5, 3)), rng.normal(size=3) * 0.5
    y = np.zeros(6)
    y[2] = 1.0
    loss, g, H = mnl.mnl_loss_grad_hess(X, y, w, v0=2.0)
    h = 1e-6
    g_fd = np.array(
        [
            (
                mnl.mnl_loss_grad_hess(X, y, w + h * e, 2.0)[0]
                - mnl.mnl_loss_grad_hess(X, y, w - h * e, 2.0)[0]
            )
            / (2 * h)
            for e in np.eye(3)
        ]
    )
    H_fd = np.array(
        [
            (
                mnl.mnl_loss_grad_hess(X, y, w + h * e, 2.0)[1]
                - mnl.mnl_loss_grad_hess(X, y, w - h * e, 2.0)[1]
            )
            / (2 * h)
            for e in np.eye(3)
        ]
    )
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-8)
    assert np.linalg.eigvalsh(H).min() > -1e-12  # PSD
    assert loss == pytest.approx(-np.log(_softmax_with_outside(X, w, 2.0)[2]))


def test_revenue_and_variance_by_hand():
    v, r = np.array([1.0, 2.0, 3.0]), np.array([0.9, 0.5, 0.2])
    assert mnl.expected_revenue(v, r, np.array([0, 1]), 1.0) == pytest.approx(0.475)
    assert mnl.reward_variance(v, r, np.array([0, 1]), 1.0) == pytest.approx(
        (0.81 + 0.5) / 4 - 0.475**2
    )
    assert mnl.expected_revenue(v, r, np.array([], dtype=int)) == 0.0


@pytest.mark.parametrize("N", range(1, 9))
def test_optimal_assortment_matches_brute_force_on_small_instances(N):
    rng = np.random.default_rng(100 + N)
    for _ in range(25):
        v = np.exp(rng.normal(size=N) * 1.5)
        r = rng.random(N)
        v0 = float(rng.uniform(0.1, 5.0))
        for K in range(1, N + 1):
            best = max(
                (
                    mnl.expected_revenue(v, r, np.array(S), v0)
                    for k in range(1, K + 1)
                    for S in itertools.combinations(range(N), k)
                ),
                default=0.0,
            )
            S, rev = mnl.optimal_assortment(v, r, K, v0)
            assert len(S) <= K
            assert rev == pytest.approx(best, rel=1e-12, abs=1e-14)
            assert mnl.expected_revenue(v, r, S, v0) == pytest.approx(rev, rel=1e-12)


def test_optimal_assortment_matches_linprog():
    rng = np.random.default_rng(2)
    for _ in range(40):
        N, K = 50, int(rng.integers(1, 12))
        v, r = np.exp(rng.normal(size=N)), rng.random(N)
        S_b, rev_b = mnl.optimal_assortment(v, r, K, 1.0, method="bisection")
        S_l, rev_l = mnl.optimal_assortment(v, r, K, 1.0, method="lp")
        assert rev_b == pytest.approx(rev_l, abs=1e-8)
        assert mnl.expected_revenue(v, r, S_l, 1.0) == pytest.approx(rev_l, abs=1e-7)


def test_uniform_rewards_give_top_k():
    v = np.array([0.5, 3.0, 1.0, 2.0])
    S, rev = mnl.optimal_assortment(v, np.ones(4), 2, 1.0)
    assert S.tolist() == [1, 3] and rev == pytest.approx(5.0 / 6.0)


def test_projection_matches_scipy():
    rng = np.random.default_rng(3)
    for _ in range(10):
        A = rng.normal(size=(4, 4))
        M = A @ A.T + 0.1 * np.eye(4)
        w = rng.normal(size=4) * 3
        u = mnl.project_to_ball(w, M, 1.0)
        ref = minimize(
            lambda z: (z - w) @ M @ (z - w),
            np.zeros(4),
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": lambda z: 1.0 - z @ z}],
            options={"ftol": 1e-14},
        )
        assert np.linalg.norm(u) <= 1.0 + 1e-9
        assert (u - w) @ M @ (u - w) <= ref.fun + 1e-7


def test_omd_step_decreases_online_loss_on_fixed_sample():
    rng = np.random.default_rng(4)
    for _ in range(20):
        X = np.clip(rng.normal(size=(5, 5)), -0.45, 0.45)
        y = np.zeros(6)
        y[rng.integers(6)] = 1.0
        est = mnl.OMDEstimator(5, eta=2.0, lam=4.0, B=1.0)
        est.w = rng.uniform(-0.2, 0.2, 5)
        before = mnl.mnl_loss_grad_hess(X, y, est.w)[0]
        est.update(X, y)
        assert mnl.mnl_loss_grad_hess(X, y, est.w)[0] < before
        assert np.linalg.norm(est.w) <= 1.0 + 1e-9
        np.testing.assert_allclose(est.H_inv @ est.H, np.eye(5), atol=1e-10)


def test_radii_orders():
    # OFU-MNL++ radius has no K and grows like sqrt(log t); OFU-MNL+ grows with K.
    assert (
        mnl.ofu_mnl_plus_beta(100, 15, 5)
        > mnl.ofu_mnl_plus_beta(100, 5, 5)
        > 10 * mnl.ofu_mnl_pp_beta(100, 5)
    )
    b1, b2 = mnl.ofu_mnl_pp_beta(10**3, 5), mnl.ofu_mnl_pp_beta(10**6, 5)
    assert b1 < b2 < 2 * b1


@pytest.mark.parametrize("name", mnl.ALGORITHMS)
@pytest.mark.parametrize("reward", ["uniform", "nonuniform"])
def test_algorithms_run_and_return_valid_assortments(name, reward):
    env = mnl.MNLBanditEnv(20, 3, 4, 1.0, reward, rng=np.random.default_rng(0))
    alg = mnl.make_algorithm(name, 20, 4, 3, rng=np.random.default_rng(0))
    res = mnl.run_bandit(alg, env, 30)
    assert res["regret"].shape == (30,) and np.all(np.diff(res["regret"]) >= -1e-12)
    assert np.all(res["sigma2"] >= 0) and np.all(res["time"] > 0)


def test_ofu_mnl_pp_learns_quickly_on_easy_instance():
    env = mnl.MNLBanditEnv(30, 3, 3, 1.0, "uniform", rng=np.random.default_rng(5))
    res_pp = mnl.run_bandit(mnl.OFUMNLPlusPlus(30, 3, 3), env, 300)
    inst = np.diff(res_pp["regret"], prepend=0.0)
    assert inst[-100:].mean() < inst[:100].mean()


def test_m2nl_exact_optimism_is_at_least_the_mle_and_feasible():
    env = mnl.MNLBanditEnv(8, 2, 2, 1.0, "uniform", rng=np.random.default_rng(1))
    alg = mnl.OFUM2NL(8, 2, 2, optimism="exact")
    mnl.run_bandit(alg, env, 15)
    X, _ = env.contexts()
    alpha = alg._exact_alpha(X, 2.0)
    assert np.all(alpha >= X @ alg.w - 1e-9)


def test_env_reset_replays_contexts():
    env = mnl.MNLBanditEnv(10, 3, 2, rng=np.random.default_rng(7))
    X1, _ = env.contexts()
    env.reset()
    X2, _ = env.contexts()
    np.testing.assert_array_equal(X1, X2)
    assert np.all(np.abs(X1) <= 1 / np.sqrt(3) + 1e-15)


def test_batched_runner_matches_shapes_on_cpu():
    res = mnl.run_ofu_mnl_pp_batched(2, 12, 3, 3, 20, rng=np.random.default_rng(0))
    assert res["regret"].shape == (2, 20) and res["time"].shape == (20,)
    assert np.all(np.diff(res["regret"], axis=1) >= -1e-12)


# ------------------------------------------------------------------------- bad inputs


def test_bad_inputs_raise():
    v, r = np.ones(4), np.ones(4)
    with pytest.raises(ValueError, match="K"):
        mnl.optimal_assortment(v, r, 0)
    with pytest.raises(ValueError, match="K"):
        mnl.optimal_assortment(v, r, 5)
    with pytest.raises(TypeError, match="K"):
        mnl.optimal_assortment(v, r, 2.5)
    with pytest.raises(ValueError, match="v0"):
        mnl.optimal_assortment(v, r, 2, v0=-1.0)
    with pytest.raises(ValueError, match="finite"):
        mnl.optimal_assortment(np.array([1.0, np.nan, 1, 1]), r, 2)
    with pytest.raises(ValueError, match="positive"):
        mnl.optimal_assortment(np.array([1.0, 0.0, 1, 1]), r, 2)
    with pytest.raises(ValueError, match="method"):
        mnl.optimal_assortment(v, r, 2, method="greedy")
    with pytest.raises(ValueError, match="X_S"):
        mnl.mnl_probs(np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="y"):
        mnl.mnl_loss_grad_hess(np.ones((3, 2)), np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="K"):
        mnl.MNLBanditEnv(5, 2, 6, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="v0"):
        mnl.MNLBanditEnv(5, 2, 2, v0=0.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="reward"):
        mnl.MNLBanditEnv(5, 2, 2, reward="random", rng=np.random.default_rng(0))
    alg = mnl.OFUMNLPlusPlus(5, 2, 2)
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
        mnl.OFUMNLPlus(3, 4, 2)
    with pytest.raises(ValueError, match="optimism"):
        mnl.OFUM2NL(5, 2, 2, optimism="sampled")
    with pytest.raises(ValueError, match="unknown algorithm"):
        mnl.make_algorithm("LinUCB", 5, 2, 2)


# ------------------------------------------------------- argument checks (one per case)


@pytest.mark.parametrize("bad", ["abc", np.random.RandomState(0), 1.5, True])
def test_MNLBanditEnv_rejects_non_generator_rng(bad):
    with pytest.raises(TypeError, match="rng"):
        mnl.MNLBanditEnv(5, 3, 2, rng=bad)


@pytest.mark.parametrize("bad", [0, 3, -1, np.int64(3), None])
def test_MNLBanditEnv_refuses_int_seeds_and_None(bad):
    # round 2: an int seed and None (fresh entropy) were accepted;
    # the book passes Generators
    with pytest.raises(TypeError, match="rng"):
        mnl.MNLBanditEnv(5, 3, 2, rng=bad)


def test_MNLBanditEnv_needs_its_generator():
    with pytest.raises(TypeError, match="rng"):
        mnl.MNLBanditEnv(5, 3, 2)


def test_MNLBanditEnv_generator_gives_the_stream_the_int_seed_gave():
    # the old int seed s meant default_rng(s): passing default_rng(s) keeps every metric
    a = mnl.MNLBanditEnv(5, 3, 2, rng=np.random.default_rng(3))
    b = mnl.MNLBanditEnv(5, 3, 2, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.contexts()[0], b.contexts()[0])
    np.testing.assert_array_equal(a.w_star, b.w_star)


def test_compare_algorithms_rejects_non_generator_rng():
    with pytest.raises(TypeError, match="rng"):
        mnl.compare_algorithms(["OFU-MNL++"], N=5, d=2, K=2, T=3, rng=0)


def test_compare_algorithms_rejects_string_names():
    with pytest.raises(TypeError, match="names"):
        mnl.compare_algorithms(
            "OFU-MNL++", N=5, d=2, K=2, T=3, rng=np.random.default_rng(0)
        )


def test_compare_algorithms_rejects_unknown_or_empty_names():
    with pytest.raises(ValueError, match="names"):
        mnl.compare_algorithms(
            ["OFU-MNL++", "LinUCB"], N=5, d=2, K=2, T=3, rng=np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="names"):
        mnl.compare_algorithms([], N=5, d=2, K=2, T=3, rng=np.random.default_rng(0))


@pytest.mark.parametrize("n_reps", [0, -2])
def test_compare_algorithms_rejects_non_positive_n_reps(n_reps):
    with pytest.raises(ValueError, match="n_reps"):
        mnl.compare_algorithms(
            ["OFU-MNL++"],
            N=5,
            d=2,
            K=2,
            T=3,
            rng=np.random.default_rng(0),
            n_reps=n_reps,
        )


@pytest.mark.parametrize("B", [-1.0, 0.0, np.nan])
def test_project_to_ball_rejects_non_positive_radius(B):
    with pytest.raises(ValueError, match="B"):
        mnl.project_to_ball(np.ones(3) * 5, np.eye(3), B)


@pytest.mark.parametrize("t", [-5, 0])
def test_ofu_mnl_pp_beta_rejects_non_positive_round(t):
    with pytest.raises(ValueError, match="t must be"):
        mnl.ofu_mnl_pp_beta(t, 3)


@pytest.mark.parametrize("delta", [2.0, 1.0, 0.0, -0.1])
def test_ofu_mnl_pp_beta_rejects_delta_outside_unit_interval(delta):
    with pytest.raises(ValueError, match="delta"):
        mnl.ofu_mnl_pp_beta(10, 3, delta=delta)


def test_ofu_mnl_plus_beta_rejects_non_positive_round_and_sizes():
    with pytest.raises(ValueError, match="t must be"):
        mnl.ofu_mnl_plus_beta(0, 5, 3)
    with pytest.raises(ValueError, match="K must be"):
        mnl.ofu_mnl_plus_beta(10, 0, 3)
    with pytest.raises(ValueError, match="B"):
        mnl.ofu_mnl_plus_beta(10, 5, 3, B=-1.0)


def test_m2nl_beta_rejects_bad_round_and_delta():
    with pytest.raises(ValueError, match="t must be"):
        mnl.m2nl_beta(-1, 3)
    with pytest.raises(ValueError, match="delta"):
        mnl.m2nl_beta(10, 3, delta=1.5)


def test_algorithms_reject_delta_outside_unit_interval():
    with pytest.raises(ValueError, match="delta"):
        mnl.OFUMNLPlusPlus(5, 2, 2, delta=2.0)
    with pytest.raises(ValueError, match="delta"):
        mnl.OFUM2NL(5, 2, 2, delta=1.0)


def test_TSMNL_rejects_non_generator_rng():
    with pytest.raises(TypeError, match="rng"):
        mnl.TSMNL(5, 2, 2, rng=0)
    with pytest.raises(TypeError, match="rng"):
        mnl.make_algorithm("TS-MNL", 5, 2, 2, rng=np.random.RandomState(0))


def test_make_algorithm_rejects_non_string_name():
    with pytest.raises(TypeError, match="name"):
        mnl.make_algorithm(["OFU-MNL++"], 5, 2, 2)


def test_run_bandit_rejects_bad_algorithm_and_env():
    env = mnl.MNLBanditEnv(5, 2, 2, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="algorithm"):
        mnl.run_bandit("OFU-MNL++", env, 3)
    with pytest.raises(TypeError, match="env"):
        mnl.run_bandit(mnl.OFUMNLPlusPlus(5, 2, 2), None, 3)


def test_run_ofu_mnl_pp_batched_rejects_bad_rng_and_scales():
    rng = np.random.default_rng(0)
    # a seed is refused: the book passes a Generator
    with pytest.raises(TypeError, match="rng"):
        mnl.run_ofu_mnl_pp_batched(2, 6, 2, 2, 3, rng=-1)
    with pytest.raises(TypeError, match="rng"):
        mnl.run_ofu_mnl_pp_batched(2, 6, 2, 2, 3, rng=0.5)
    with pytest.raises(ValueError, match="beta_scale"):
        mnl.run_ofu_mnl_pp_batched(2, 6, 2, 2, 3, rng=rng, beta_scale=-1.0)
    with pytest.raises(ValueError, match="n_reps"):
        mnl.run_ofu_mnl_pp_batched(0, 6, 2, 2, 3, rng=rng)


def test_run_ofu_mnl_pp_batched_is_reproducible_from_its_generator():
    a = mnl.run_ofu_mnl_pp_batched(2, 8, 3, 2, 6, rng=np.random.default_rng(4))
    b = mnl.run_ofu_mnl_pp_batched(2, 8, 3, 2, 6, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(a["regret"], b["regret"])


# ------------------------------------------------------------------------- defaults


def test_defaults_are_the_one_frozen_settings_object():
    assert isinstance(mnl.DEFAULTS, mnl.MNLDefaults)
    assert (
        mnl.DEFAULTS.N,
        mnl.DEFAULTS.d,
        mnl.DEFAULTS.K,
        mnl.DEFAULTS.v0,
        mnl.DEFAULTS.B,
    ) == (100, 5, 5, 1.0, 1.0)
    with pytest.raises(Exception):
        mnl.DEFAULTS.N = 3  # frozen


# ----------------------------------------------------------------- bug fixes (issue 13)


def _trained_estimator(rng):
    est = mnl.OMDEstimator(3, eta=2.0, lam=4.0, B=1.0)
    for _ in range(5):
        X = rng.normal(size=(4, 3)) * 0.3
        y = np.eye(5)[rng.integers(5)]
        est.update(X, y)
    return est


def _state(est):
    return est.w.copy(), est.H.copy(), est.H_inv.copy()


def _assert_state(est, state):
    for a, b in zip(_state(est), state):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_OMDEstimator_refuses_non_finite_context_and_keeps_its_state(bad):
    # before the fix one NaN context made w, H and H^{-1} NaN for good
    rng = np.random.default_rng(0)
    est = _trained_estimator(rng)
    state = _state(est)
    X = rng.normal(size=(4, 3)) * 0.3
    X[1, 2] = bad
    with pytest.raises(ValueError, match="X_S"):
        est.update(X, np.eye(5)[0])
    _assert_state(est, state)
    est.update(rng.normal(size=(4, 3)) * 0.3, np.eye(5)[2])  # still learns afterwards
    assert np.all(np.isfinite(est.w)) and np.all(np.isfinite(est.H_inv))


def test_OMDEstimator_refuses_non_finite_or_misshapen_feedback_and_keeps_its_state():
    rng = np.random.default_rng(1)
    est = _trained_estimator(rng)
    state = _state(est)
    X = rng.normal(size=(4, 3)) * 0.3
    with pytest.raises(ValueError, match="y"):
        est.update(X, np.array([np.nan, 0, 0, 0, 1.0]))
    with pytest.raises(ValueError, match="y"):
        est.update(X, np.eye(4)[0])
    with pytest.raises(ValueError, match="X_S"):
        est.update(rng.normal(size=(4, 2)), np.eye(5)[0])
    _assert_state(est, state)


def test_bandit_refuses_non_finite_feedback_and_keeps_its_state():
    alg = mnl.OFUMNLPlusPlus(6, 2, 3)
    S = alg.select(np.random.default_rng(2).normal(size=(6, 3)) * 0.3)
    state, t = _state(alg.est), alg.t
    with pytest.raises(ValueError, match="y"):
        alg.update(S, np.full(S.size + 1, np.nan))
    _assert_state(alg.est, state)
    assert alg.t == t


def test_OMD_step_refuses_a_non_finite_solve_and_keeps_its_state(monkeypatch):
    # every linear-system result is checked before it is used; before the fix a NaN
    # Newton step slipped through the projection (NaN norms are never
    # "outside the ball") into w
    rng = np.random.default_rng(3)
    est = _trained_estimator(rng)
    state = _state(est)
    monkeypatch.setattr(np.linalg, "solve", lambda a, b: np.full(np.shape(b), np.nan))
    with pytest.raises(np.linalg.LinAlgError, match="Newton step"):
        est.update(rng.normal(size=(4, 3)) * 0.3, np.eye(5)[0])
    _assert_state(est, state)


def test_OMD_step_refuses_a_non_finite_inverse_and_keeps_its_state(monkeypatch):
    rng = np.random.default_rng(4)
    est = _trained_estimator(rng)
    state = _state(est)
    monkeypatch.setattr(np.linalg, "inv", lambda a: np.full(np.shape(a), np.nan))
    with pytest.raises(np.linalg.LinAlgError, match="inverse Hessian"):
        est.update(rng.normal(size=(4, 3)) * 0.3, np.eye(5)[0])
    _assert_state(est, state)


def test_OFUM2NL_refit_refuses_a_non_finite_inverse_and_keeps_its_estimate(monkeypatch):
    env = mnl.MNLBanditEnv(8, 2, 2, rng=np.random.default_rng(1))
    alg = mnl.OFUM2NL(8, 2, 2)
    mnl.run_bandit(alg, env, 5)
    w, H_inv = alg.w.copy(), alg.H_inv.copy()
    X, r = env.contexts()
    S = alg.select(X, r)
    y, _ = env.step(S)
    monkeypatch.setattr(np.linalg, "inv", lambda a: np.full(np.shape(a), np.nan))
    with pytest.raises(np.linalg.LinAlgError, match="inverse Hessian"):
        alg.update(S, y)
    np.testing.assert_array_equal(alg.w, w)
    np.testing.assert_array_equal(alg.H_inv, H_inv)


def test_UCBMNL_refuses_a_non_finite_gram_inverse(monkeypatch):
    alg = mnl.UCBMNL(6, 2, 3)
    S = alg.select(np.random.default_rng(5).normal(size=(6, 3)) * 0.3)
    V = alg.V.copy()
    monkeypatch.setattr(np.linalg, "inv", lambda a: np.full(np.shape(a), np.nan))
    with pytest.raises(np.linalg.LinAlgError, match="Gram"):
        alg.update(S, np.eye(S.size + 1)[0])
    np.testing.assert_array_equal(alg.V, V)


def test_project_to_ball_refuses_non_finite_or_misshapen_input():
    # before the fix a NaN point came back unchanged (its norm is never > B)
    with pytest.raises(ValueError, match="w"):
        mnl.project_to_ball(np.array([np.nan, 5.0, 0.0]), np.eye(3), 1.0)
    with pytest.raises(ValueError, match="M"):
        mnl.project_to_ball(np.ones(3) * 5, np.eye(2), 1.0)


def test_project_to_ball_result_is_feasible_and_checked():
    rng = np.random.default_rng(6)
    A = rng.normal(size=(10, 4, 4))
    M = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(4)
    u = mnl.project_to_ball(rng.normal(size=(10, 4)) * 5, M, 1.0)
    assert np.all(np.linalg.norm(u, axis=-1) <= 1.0 + 1e-8)
    with pytest.raises(np.linalg.LinAlgError, match="left the ball"):
        mnl.method._in_ball(np.array([[2.0, 0.0]]), 1.0)


def test_lp_answer_is_checked_for_feasibility():
    from types import SimpleNamespace

    A_ub, A_eq = np.array([[1.0, -1.0]]), np.ones((1, 2))
    ok = SimpleNamespace(status=0, message="", x=np.array([0.5, 0.5]), fun=-0.5)
    mnl.model._check_lp_solution(ok, A_ub, A_eq)
    for x in (np.array([0.9, 0.3]), np.array([np.nan, 0.5]), np.array([-0.2, 1.2])):
        with pytest.raises(RuntimeError, match="linprog"):
            mnl.model._check_lp_solution(
                SimpleNamespace(status=0, message="", x=x, fun=-0.5), A_ub, A_eq
            )


def test_library_oracle_is_the_kernel_dispatcher(monkeypatch):
    # one CPU path: optimal_assortment(method="bisection") and the bandits
    # call the kernel's dispatcher
    from icml25.kernels import mnl_bandits

    calls = []
    real = mnl_bandits.assortment_bisection
    monkeypatch.setattr(
        mnl_bandits, "assortment_bisection", lambda *a: calls.append(a) or real(*a)
    )
    S, rev = mnl.optimal_assortment(np.array([1.0, 2, 3]), np.array([0.9, 0.5, 0.2]), 2)
    assert calls and S.tolist() == [0, 1] and rev == pytest.approx(0.475)
    mnl.OFUMNLPlusPlus(5, 2, 2).select(np.zeros((5, 2)))
    assert len(calls) == 2


def test_assortment_check_keeps_its_value_errors():
    v, r = np.ones(4), np.ones(4)
    for bad in (
        np.array([0.0, 1.0]),
        np.array([[0, 1]]),
        np.array([0, 4]),
        np.array([-1]),
        np.array([1, 1]),
    ):
        with pytest.raises(ValueError, match="S"):
            mnl.expected_revenue(v, r, bad)


# --------------------------------------------------------------- round 2: hostile input


def _bandit(name):
    rng = np.random.default_rng(0)
    alg = mnl.make_algorithm(name, 10, 3, 2, rng=rng)
    env = mnl.MNLBanditEnv(10, 2, 3, rng=np.random.default_rng(1))
    mnl.run_bandit(alg, env, 4)  # some state to keep
    return alg


def _bandit_state(alg):
    arrays = (
        [alg.est.w, alg.est.H, alg.est.H_inv]
        if hasattr(alg, "est")
        else [alg.w, getattr(alg, "H", getattr(alg, "V", None)), *alg.hist.arrays()]
    )
    return [a.copy() for a in arrays], alg.t


def _assert_bandit_state(alg, state):
    arrays, t = _bandit_state(alg)
    assert t == state[1]
    for a, b in zip(arrays, state[0]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", mnl.ALGORITHMS)
@pytest.mark.parametrize(
    "bad", ["negative", "all ones", "fractions", "no choice", "two"]
)
def test_bandit_update_refuses_impossible_feedback_and_keeps_its_state(name, bad):
    # round 2: y = [-50, 0, 0, 0] ran and moved w; [1, 1, 1, 1]
    # (everyone buys everything) too
    alg = _bandit(name)
    S = alg.select(np.random.default_rng(2).normal(size=(10, 2)) * 0.3)
    k = S.size
    y = {
        "negative": np.r_[-50.0, np.zeros(k)],
        "all ones": np.ones(k + 1),
        "fractions": np.full(k + 1, 1.0 / (k + 1)),
        "no choice": np.zeros(k + 1),
        "two": np.r_[2.0, np.zeros(k)],
    }[bad]
    state = _bandit_state(alg)
    with pytest.raises(ValueError, match="y"):
        alg.update(S, y)
    _assert_bandit_state(alg, state)
    alg.update(S, np.eye(k + 1)[-1])  # the round can still be closed with real feedback


@pytest.mark.parametrize("name", mnl.ALGORITHMS)
def test_bandit_update_refuses_an_assortment_it_did_not_offer(name):
    alg = _bandit(name)
    S = alg.select(np.random.default_rng(3).normal(size=(10, 2)) * 0.3)
    other = np.setdiff1d(np.arange(10), S)[: S.size]
    state = _bandit_state(alg)
    with pytest.raises(ValueError, match="S must be the assortment select"):
        alg.update(other, np.eye(S.size + 1)[0])
    _assert_bandit_state(alg, state)
    # the same items in another order (y in that order)
    alg.update(S[::-1], np.eye(S.size + 1)[0])


def test_bandit_update_twice_for_one_select_is_refused():
    alg = mnl.OFUMNLPlusPlus(10, 3, 2)
    S = alg.select(np.ones((10, 2)))
    alg.update(S, np.eye(S.size + 1)[0])
    state = _bandit_state(alg)
    with pytest.raises(ValueError, match="before select"):
        alg.update(S, np.eye(S.size + 1)[0])
    _assert_bandit_state(alg, state)


@pytest.mark.parametrize(
    "y",
    [
        [5.0, 3.0, 0.0],
        [-1.0, 1.0, 1.0],
        [0.5, 0.5, 0.0],
        [0.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
    ],
)
def test_OMDEstimator_refuses_feedback_that_is_not_one_hot(y):
    rng = np.random.default_rng(5)
    est = _trained_estimator(rng)
    state = _state(est)
    with pytest.raises(ValueError, match="y"):
        est.update(rng.normal(size=(2, 3)) * 0.3, np.array(y))
    _assert_state(est, state)


def test_mnl_loss_grad_hess_refuses_feedback_not_summing_to_one():
    # the gradient sum_i (p_i - y_i) x_i assumes sum_i y_i = 1: [1, 1,
    # 1] gave a wrong gradient
    X, w = np.ones((2, 2)) * 0.3, np.zeros(2)
    with pytest.raises(ValueError, match="y must sum to 1"):
        mnl.mnl_loss_grad_hess(X, np.ones(3), w)
    # a probability vector is fine
    mnl.mnl_loss_grad_hess(X, np.array([0.2, 0.3, 0.5]), w)


@pytest.mark.parametrize("scale", [1e155, 1e200])
def test_OMDEstimator_refuses_features_whose_hessian_overflows(scale):
    # round 2: X_S * 1e200 raised LinAlgError from inside the solve;
    # now refused at the boundary
    rng = np.random.default_rng(6)
    est = _trained_estimator(rng)
    state = _state(est)
    with pytest.raises(ValueError, match="X_S is too large"):
        est.update(rng.normal(size=(4, 3)) * scale, np.eye(5)[0])
    _assert_state(est, state)
    # large but representable: learns
    est.update(rng.normal(size=(4, 3)) * 1e100, np.eye(5)[0])


def test_bandit_select_refuses_contexts_whose_hessian_overflows():
    alg = mnl.OFUMNLPlusPlus(5, 2, 2)
    with pytest.raises(ValueError, match="contexts"):
        alg.select(np.ones((5, 2)) * 1e200)


def test_project_to_ball_refuses_a_metric_that_is_not_positive_definite():
    # round 2: -I returned a vector although the docstring promised LinAlgError
    with pytest.raises(np.linalg.LinAlgError, match="M must be positive definite"):
        mnl.project_to_ball(np.ones(3), -np.eye(3), 1.0)
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        mnl.project_to_ball(
            np.ones((2, 3)), np.stack([np.eye(3), np.diag([1.0, 0.0, 1.0])]), 1.0
        )
    with pytest.raises(ValueError, match="M must be symmetric"):
        mnl.project_to_ball(np.ones(2) * 5, np.array([[2.0, 1.0], [0.0, 2.0]]), 1.0)


def test_project_to_ball_takes_n_steps_and_stops_at_the_fixed_point():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(4, 4))
    M, w = A @ A.T + 0.1 * np.eye(4), rng.normal(size=4) * 5
    with pytest.raises(TypeError):
        mnl.project_to_ball(w, M, 1.0, iters=60)
    with pytest.raises(ValueError, match="n_steps"):
        mnl.project_to_ball(w, M, 1.0, n_steps=0)
    import time

    t0 = time.perf_counter()
    # float64 runs out of halvings long before
    far = mnl.project_to_ball(w, M, 1.0, n_steps=10**9)
    assert time.perf_counter() - t0 < 1.0
    np.testing.assert_array_equal(far, mnl.project_to_ball(w, M, 1.0, n_steps=5000))
    np.testing.assert_array_equal(
        mnl.project_to_ball(w, M, 1.0), mnl.method._project(w, M, 1.0, 60)
    )


def _too_large_calls():
    rng = np.random.default_rng(0)
    return {
        "run_bandit(T)": lambda: mnl.run_bandit(
            mnl.OFUMNLPlusPlus(10, 3, 2), mnl.MNLBanditEnv(10, 2, 3, rng=rng), 10**12
        ),
        "run_bandit(T) history": lambda: mnl.run_bandit(
            mnl.OFUM2NL(10, 3, 2), mnl.MNLBanditEnv(10, 2, 3, rng=rng), 10**7
        ),
        "batched(n_reps)": lambda: mnl.run_ofu_mnl_pp_batched(
            10**12, 10, 2, 3, 5, rng=rng
        ),
        "batched(T)": lambda: mnl.run_ofu_mnl_pp_batched(10, 10, 2, 3, 10**12, rng=rng),
        "batched(N)": lambda: mnl.run_ofu_mnl_pp_batched(10, 10**10, 2, 3, 5, rng=rng),
        "compare(n_reps)": lambda: mnl.compare_algorithms(
            ["OFU-MNL++"], N=10, d=2, K=3, T=5, rng=rng, n_reps=10**12
        ),
        "compare(T)": lambda: mnl.compare_algorithms(
            ["OFU-M2NL"], N=10, d=2, K=3, T=10**7, rng=rng
        ),
        "env(N)": lambda: mnl.MNLBanditEnv(10**9, 2, 3, rng=rng),
        "env(N) 1e12": lambda: mnl.MNLBanditEnv(10**12, 2, 3, rng=rng),
        "project(n_steps)": lambda: mnl.project_to_ball(
            np.ones(3) * 5, np.eye(3), 1.0, n_steps=10**12
        ),
    }


@pytest.mark.parametrize("case", list(_too_large_calls()))
def test_sizes_that_cannot_fit_are_refused_at_once(case, monkeypatch):
    # round 2: MemoryError, OverflowError or a hang; now TooLargeError before any work.
    # Memory pinned at 16 GiB so that the verdict does not depend on the machine's RAM.
    import time

    from icml25 import checks

    monkeypatch.setattr(checks, "available_memory_bytes", lambda: 16 * 2**30)
    call = _too_large_calls()[case]
    t0 = time.perf_counter()
    with pytest.raises(checks.TooLargeError):
        call()
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("bad", [None, 0, np.random.RandomState(0)])
def test_TSMNL_requires_a_generator(bad):
    # round 2: rng=None silently meant default_rng(0)
    with pytest.raises(TypeError, match="rng"):
        mnl.TSMNL(5, 2, 2, rng=bad)
    with pytest.raises(TypeError, match="rng"):
        mnl.make_algorithm("TS-MNL", 5, 2, 2, rng=bad)


def test_TSMNL_without_rng_is_refused():
    with pytest.raises(TypeError, match="rng"):
        mnl.TSMNL(5, 2, 2)
