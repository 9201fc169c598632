"""Chapter 17 (icml25.maxent_mislead): soft values, thresholds, (soft) VI, envs, SAC-AdaEnt."""

from __future__ import annotations

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from scipy.special import logsumexp
from stable_baselines3 import SAC

from icml25 import maxent_mislead as maxent

# --------------------------------------------------------------------------------------
# Soft values and policies
# --------------------------------------------------------------------------------------


def test_soft_value_matches_scipy_logsumexp():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(3, 4, 30))
    for alpha, da in ((0.3, 0.1), (2.0, 1.0)):
        want = alpha * (logsumexp(q / alpha, axis=-1) + np.log(da))
        np.testing.assert_allclose(maxent.soft_value(q, alpha, da), want, rtol=1e-12)
    assert maxent.soft_value(q[0, 0], 0.5).shape == ()


def test_soft_value_tends_to_max_as_alpha_goes_to_zero():
    q = np.random.default_rng(1).normal(size=200)
    gaps = [float(maxent.soft_value(q, a, 1.0) - q.max()) for a in (0.1, 0.01, 0.001)]
    # with da = 1: 0 <= V - max <= alpha log A, so the gap shrinks to 0 with alpha
    for a, g in zip((0.1, 0.01, 0.001), gaps):
        assert -1e-12 <= g <= a * math.log(200) + 1e-12
    assert float(maxent.soft_value(q, 0.0)) == q.max()


def test_soft_value_is_above_mean_plus_entropy_of_uniform():
    q = np.random.default_rng(2).normal(size=64)
    for alpha in (0.05, 0.5, 5.0):  # Jensen: log mean exp >= mean
        assert (
            float(maxent.soft_value(q, alpha))
            >= q.mean() + alpha * math.log(64) - 1e-12
        )


def test_soft_policy_is_softmax_and_zero_alpha_is_uniform_on_argmax():
    q = np.array([[1.0, 3.0, 3.0, 0.0], [0.0, 1.0, 2.0, 3.0]])
    e = np.exp(q / 0.7)
    np.testing.assert_allclose(
        maxent.soft_policy(q, 0.7), e / e.sum(axis=1, keepdims=True), rtol=1e-12
    )
    np.testing.assert_array_equal(
        maxent.soft_policy(q, 0.0), [[0, 0.5, 0.5, 0], [0, 0, 0, 1]]
    )


# --------------------------------------------------------------------------------------
# Toy A: threshold and value iteration
# --------------------------------------------------------------------------------------


def _gap_by_hand(alpha, w, r_mid=1.0, r_hi=2.0, r_fail=-1.0):
    """V_precise - V_robust written with math.exp (moderate alpha only)."""
    vp = alpha * math.log(
        2 * w * math.exp(r_hi / alpha) + (2 - 2 * w) * math.exp(r_fail / alpha)
    )
    return vp - (r_mid + alpha * math.log(2))


@pytest.mark.parametrize("w,want", [(0.05, 0.3341), (0.01, 0.2172)])
def test_branch_threshold_matches_notes_and_bisection(w, want):
    a_star = maxent.branch_threshold_alpha(1.0, 2.0, -1.0, w)
    assert abs(a_star - want) < 1e-3
    lo, hi = 0.05, 2.0  # plain bisection of the hand-written gap
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _gap_by_hand(mid, w) > 0 else (lo, mid)
    assert abs(a_star - lo) < 1e-9
    assert _gap_by_hand(a_star * 0.99, w) > 0 > _gap_by_hand(a_star * 1.01, w)


def test_soft_vi_equals_closed_form_on_toy_a():
    P, R, term, da, a = maxent.two_branch_tables(0.05)
    for alpha in (0.1, 0.3341, 0.6):
        res = maxent.soft_value_iteration(P, R, alpha, 0.9, da=da, terminal=term)
        vr, vp = maxent.branch_values(alpha, 1.0, 2.0, -1.0, 0.05)
        assert abs(res.V[1] - vr) < 1e-10 and abs(res.V[2] - vp) < 1e-10
        np.testing.assert_allclose(res.Q[0, a < 0], 0.9 * vr, atol=1e-10)
        np.testing.assert_allclose(res.Q[0, a >= 0], 0.9 * vp, atol=1e-10)


def test_soft_vi_flips_at_threshold_and_plain_never_does():
    a_star = maxent.branch_threshold_alpha(1.0, 2.0, -1.0, 0.05)
    rows = maxent.toy_a_sweep([0.1, a_star - 2e-3, a_star + 2e-3, 1.0], 0.05)
    assert [r["soft_choice"] for r in rows] == [
        "precise",
        "precise",
        "robust",
        "robust",
    ]
    assert all(r["plain_choice"] == "precise" for r in rows)


def _brute_force_optimal_values(P, R, gamma):
    """max over all deterministic policies of (I - gamma P_pi)^{-1} R_pi, elementwise."""
    S, A, _ = P.shape
    best = np.full(S, -np.inf)
    for pi in itertools.product(range(A), repeat=S):
        Ppi = P[np.arange(S), pi]
        Rpi = R[np.arange(S), pi]
        best = np.maximum(best, np.linalg.solve(np.eye(S) - gamma * Ppi, Rpi))
    return best


def _random_mdp(rng, S=4, A=3):
    P = rng.random((S, A, S))
    return P / P.sum(axis=2, keepdims=True), rng.normal(size=(S, A))


def test_value_iteration_matches_brute_force_over_policies():
    rng = np.random.default_rng(3)
    P, R = _random_mdp(rng)
    np.testing.assert_allclose(
        maxent.value_iteration(P, R, 0.8).V,
        _brute_force_optimal_values(P, R, 0.8),
        atol=1e-9,
    )


def test_soft_vi_fixed_point_satisfies_entropy_regularised_evaluation():
    rng = np.random.default_rng(4)
    P, R = _random_mdp(rng)
    alpha, gamma = 0.4, 0.85
    res = maxent.soft_value_iteration(P, R, alpha, gamma)
    pi = res.policy
    # V = E_pi[R + gamma P V - alpha log pi]: evaluate pi with its
    # entropy bonus by a linear solve
    S = P.shape[0]
    r_pi = (pi * (R - alpha * np.log(pi))).sum(axis=1)
    P_pi = np.einsum("sa,sat->st", pi, P)
    np.testing.assert_allclose(
        np.linalg.solve(np.eye(S) - gamma * P_pi, r_pi), res.V, atol=1e-9
    )


def test_bifurcation_extension_keeps_plain_optimum_and_misleads_maxent():
    rng = np.random.default_rng(5)
    P, R = _random_mdp(rng, S=4, A=10)
    gamma = 0.9
    base = maxent.value_iteration(P, R, gamma)
    s = 0
    a_opt = int(np.argmax(base.Q[s]))
    P2, R2, term2 = maxent.bifurcation_extension(
        P, R, s, a_opt, w=0.1, r_fail=-20.0, gamma=gamma
    )
    ext = maxent.value_iteration(P2, R2, gamma, terminal=term2)
    np.testing.assert_allclose(ext.V[:4], base.V, atol=1e-9)
    np.testing.assert_allclose(ext.Q[:4], base.Q, atol=1e-9)
    assert int(np.argmax(ext.Q[s])) == a_opt
    soft = maxent.soft_value_iteration(P2, R2, 2.0, gamma, terminal=term2)
    assert int(np.argmax(soft.policy[s])) != a_opt  # MaxEnt now prefers another action


# --------------------------------------------------------------------------------------
# Toy B
# --------------------------------------------------------------------------------------


def test_toy_b_half_mass_alpha_and_mass_at_notes_values():
    f = maxent.make_toy_b_reward(0.03)
    assert abs(maxent.half_mass_alpha(f, 0.6, 0.1) - 0.3479) < 5e-4
    assert maxent.grid_mass_near(f, 0.2, 0.6, 0.1) > 0.85
    assert maxent.grid_mass_near(f, 0.5, 0.6, 0.1) < 0.35
    rows = maxent.toy_b_sweep([0.05, 0.1, 0.2, 0.3, 0.5])
    er = [r["expected_reward"] for r in rows]
    assert all(x > y for x, y in zip(er, er[1:]))


def test_toy_b_reward_is_the_two_gaussians():
    a = np.array([-0.4, 0.6, 1.0])
    want = 2 * np.exp(-((a - 0.6) ** 2) / (2 * 0.1**2)) + np.exp(
        -((a + 0.4) ** 2) / (2 * 0.16)
    )
    np.testing.assert_allclose(maxent.toy_b_reward(a, 0.1), want, rtol=1e-14)


# --------------------------------------------------------------------------------------
# Environments
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", sorted(maxent.ENV_IDS))
def test_check_env_passes_on_every_registered_env(env_id):
    kwargs = {"reward_fn": maxent.make_toy_b_reward(0.1)} if "Bandit" in env_id else {}
    env = gym.make(env_id, **kwargs)
    assert env_id.startswith("icml25/")
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    for _ in range(3):
        obs, r, term, trunc, _ = env.step(env.action_space.sample())
        assert np.isfinite(r) and env.observation_space.contains(obs)
        if term or trunc:
            break


def _run(env, actions):
    env.reset(seed=0)
    return [env.step(np.array(a, dtype=np.float32)) for a in actions]


def test_obstacle_wall_crossings_by_hand():
    env = maxent.Obstacle2D()
    # straight through the thin wall in one long step: no tunnelling
    ((_, r, term, _, info),) = _run(env, [(3.0, 0.0)])
    assert r == -200.0 and term and info["collision"]
    # over the top (y = 3 > 2), then down onto the goal
    out = _run(env, [(1.0, 3.0), (2.0, 0.0), (0.0, -3.0)])
    assert [o[1] for o in out][-1] == 500.0 and out[-1][2] and out[-1][4]["goal"]
    assert not any(o[4]["collision"] for o in out)
    # distance decrease
    np.testing.assert_allclose(out[0][1], 3.0 - math.hypot(2.0, 3.0))
    # grazing the wall's top corner counts as a hit (closed box)
    ((_, r, _, _, _),) = _run(env, [(2.0, 2.0)])
    assert r == -200.0


def test_obstacle_truncates_at_50_steps_with_zero_reward():
    env = maxent.Obstacle2D()
    out = _run(env, [(0.0, 0.0)] * 50)
    assert (
        all(not o[2] for o in out)
        and out[-1][3]
        and out[-1][1] == 0.0
        and not out[-2][3]
    )


def test_segment_hits_box_matches_dense_sampling():
    rng = np.random.default_rng(6)
    lo, hi = np.array([2.0, -2.0]), np.array([2.05, 2.0])
    t = np.linspace(0, 1, 20001)[:, None]
    for _ in range(300):
        p0, p1 = rng.uniform(-1, 5, 2), rng.uniform(-1, 5, 2)
        pts = p0 + t * (p1 - p0)
        dense = bool(np.any(np.all((pts >= lo) & (pts <= hi), axis=1)))
        exact = maxent.segment_hits_box(p0, p1, lo, hi)
        if dense:
            assert exact  # sampling can only miss a hit, never invent one
        assert exact >= dense


def test_two_branch_and_bandit_rewards():
    env = maxent.TwoBranchMDP(w=0.05)
    assert [o[1] for o in _run(env, [(-0.5,), (0.9,)])] == [0.0, 1.0]
    assert [o[1] for o in _run(env, [(0.5,), (0.04,)])] == [0.0, 2.0]
    assert [o[1] for o in _run(env, [(0.0,), (0.3,)])] == [0.0, -1.0]
    bandit = maxent.PrecisionBandit(maxent.make_toy_b_reward(0.1))
    ((_, r, term, _, _),) = _run(bandit, [(0.6,)])
    assert term and abs(r - float(maxent.toy_b_reward(np.array([0.6]), 0.1)[0])) < 1e-6


# --------------------------------------------------------------------------------------
# SAC-AdaEnt and the baselines
# --------------------------------------------------------------------------------------


def _state(model):
    return {
        **{f"a.{k}": v.clone() for k, v in model.actor.state_dict().items()},
        **{f"c.{k}": v.clone() for k, v in model.critic.state_dict().items()},
    }


def test_adaent_with_threshold_minus_one_equals_sb3_sac():
    kw = dict(
        ent_coef=0.2,
        learning_starts=50,
        batch_size=32,
        seed=11,
        device="cpu",
        policy_kwargs=dict(net_arch=[16, 16]),
        verbose=0,
    )
    sac = SAC("MlpPolicy", maxent.Obstacle2D(), **kw)
    sac.learn(200)
    ada = maxent.SACAdaEnt(
        "MlpPolicy", maxent.Obstacle2D(), n_samples=4, threshold=-1.0, **kw
    )
    ada.learn(200)
    assert ada._n_updates == sac._n_updates > 0
    s1, s2 = _state(sac), _state(ada)
    assert s1.keys() == s2.keys()
    for k in s1:
        assert torch.equal(s1[k], s2[k]), k
    assert max(ada.switched) == 0.0


def test_adaent_switches_with_threshold_one_and_differs_from_sac():
    kw = dict(
        ent_coef=0.2,
        learning_starts=50,
        batch_size=32,
        seed=11,
        device="cpu",
        policy_kwargs=dict(net_arch=[16, 16]),
        verbose=0,
    )
    sac = SAC("MlpPolicy", maxent.Obstacle2D(), **kw)
    sac.learn(120)
    ada = maxent.SACAdaEnt(
        "MlpPolicy", maxent.Obstacle2D(), n_samples=4, threshold=1.0, **kw
    )
    ada.learn(120)
    assert np.mean(ada.switched) > 0.5  # cos < 1 almost surely
    assert not torch.equal(ada.actor.mu.weight, sac.actor.mu.weight)


def test_start_actor_at_sets_the_deterministic_action():
    rng = np.random.default_rng(7)
    for algo in ("sac", "td3", "sac_adaent"):
        m = maxent.make_agent(
            algo,
            maxent.PrecisionBandit(maxent.make_toy_b_reward()),
            rng,
            net_arch=(8,),
            n_samples=4,
        )
        maxent.start_actor_at(m, 0.6)
        assert abs(maxent.policy_action(m, np.zeros(1))[0] - 0.6) < 1e-6


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------

P0, R0 = _random_mdp(np.random.default_rng(8), S=3, A=2)


@pytest.mark.parametrize(
    "call,err,match",
    [
        (lambda: maxent.soft_value(np.ones(3), -0.1), ValueError, "alpha"),
        (lambda: maxent.soft_value(np.array([1.0, np.nan]), 0.5), ValueError, "q"),
        (lambda: maxent.soft_value(np.ones(3), 0.5, da=0.0), ValueError, "da"),
        (lambda: maxent.soft_policy(np.array([np.inf, 1.0]), 0.5), ValueError, "q"),
        (lambda: maxent.soft_policy(np.ones(3), -1.0), ValueError, "alpha"),
        (lambda: maxent.branch_threshold_alpha(1.0, 2.0, -1.0, 0.0), ValueError, "w"),
        (lambda: maxent.branch_threshold_alpha(1.0, 2.0, -1.0, 1.5), ValueError, "w"),
        (
            lambda: maxent.branch_threshold_alpha(3.0, 2.0, -1.0, 0.05),
            ValueError,
            "r_mid",
        ),
        (
            lambda: maxent.branch_threshold_alpha(1.0, 2.0, 0.99, 0.9),
            ValueError,
            "threshold",
        ),
        (lambda: maxent.branch_values(-0.5, 1.0, 2.0, -1.0, 0.05), ValueError, "alpha"),
        (lambda: maxent.soft_value_iteration(P0, R0, -0.1, 0.9), ValueError, "alpha"),
        (lambda: maxent.soft_value_iteration(P0, R0, 0.1, 1.0), ValueError, "gamma"),
        (lambda: maxent.value_iteration(P0, R0, -0.1), ValueError, "gamma"),
        (lambda: maxent.soft_value_iteration(P0 * 2, R0, 0.1, 0.9), ValueError, "P"),
        (lambda: maxent.soft_value_iteration(P0, R0[:, :1], 0.1, 0.9), ValueError, "R"),
        (
            lambda: maxent.soft_value_iteration(P0, np.full_like(R0, np.nan), 0.1, 0.9),
            ValueError,
            "R",
        ),
        (
            lambda: maxent.bifurcation_extension(
                P0, R0, 5, 0, w=0.5, r_fail=-9, gamma=0.9
            ),
            ValueError,
            "state",
        ),
        (
            lambda: maxent.bifurcation_extension(
                P0, R0, 0, 0, w=0.0, r_fail=-9, gamma=0.9
            ),
            ValueError,
            "w",
        ),
        (
            lambda: maxent.bifurcation_extension(
                P0, R0, 0, 0, w=0.5, r_fail=99.0, gamma=0.9
            ),
            ValueError,
            "r_fail",
        ),
        (lambda: maxent.two_branch_tables(0.05, n_actions=7), ValueError, "n_actions"),
        (lambda: maxent.toy_b_reward(np.ones(2), sigma=0.0), ValueError, "sigma"),
        (
            lambda: maxent.grid_mass_near(maxent.make_toy_b_reward(), 0.2, 0.6, -0.1),
            ValueError,
            "radius",
        ),
        (lambda: maxent.half_mass_alpha("no", 0.6, 0.1), TypeError, "reward_fn"),
        (
            lambda: maxent.SACAdaEnt("MlpPolicy", maxent.Obstacle2D(), n_samples=1),
            ValueError,
            "n_samples",
        ),
        (
            lambda: maxent.SACAdaEnt("MlpPolicy", maxent.Obstacle2D(), threshold=1.5),
            ValueError,
            "threshold",
        ),
        (
            lambda: maxent.make_agent(
                "ddpg", maxent.Obstacle2D(), np.random.default_rng(0)
            ),
            ValueError,
            "algorithm",
        ),
        (lambda: maxent.make_agent("sac", maxent.Obstacle2D(), 0), TypeError, "rng"),
        (lambda: maxent.start_actor_at(object(), 1.0), ValueError, "action"),
        (lambda: maxent.TwoBranchMDP(w=2.0), ValueError, "w"),
        (lambda: maxent.PrecisionBandit(3), TypeError, "reward_fn"),
        (lambda: maxent.toy_a_sweep([0.1], 0.05, gamma=1.0), ValueError, "gamma"),
        (
            lambda: maxent.precision_bandit_runs([], 10, np.random.default_rng(0)),
            ValueError,
            "n_steps",
        ),
        (
            lambda: maxent.control_benchmark(
                ["icml25/Obstacle2D-v0"],
                ["ddpg"],
                10,
                1,
                np.random.default_rng(0),
                seconds=1.0,
            ),
            ValueError,
            "algorithms",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_hopper_v5_runs_headless_on_the_pinned_gymnasium():
    pytest.importorskip("mujoco")
    env = gym.make("Hopper-v5")
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (11,) and np.isfinite(env.step(env.action_space.sample())[1])


def test_control_benchmark_reports_the_steps_reached():
    rows = maxent.control_benchmark(
        ["icml25/Obstacle2D-v0"],
        ["ppo", "sac"],
        300,
        1,
        np.random.default_rng(9),
        seconds=60.0,
        n_workers=2,
        net_arch=(8,),
        n_samples=4,
        n_eval=1,
    )
    assert [r["algorithm"] for r in rows] == ["ppo", "sac"]
    for r in rows:
        # PPO rounds up to whole rollouts
        assert 0 < r["steps"] <= 2048 and np.isfinite(r["return"])


# --------------------------------------------------------------------------------------
# Bad input found in review (each was a silent wrong result or a
# crash deep inside numpy)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make,action",
    [
        (lambda: maxent.Obstacle2D(), [np.nan, 0.0]),  # was a silent -200 "collision"
        (lambda: maxent.Obstacle2D(), [1.0]),  # was numpy's "cannot reshape"
        # was a NaN reward
        (lambda: maxent.PrecisionBandit(maxent.make_toy_b_reward()), [np.nan]),
        # was a silent move to the precise branch
        (lambda: maxent.TwoBranchMDP(), [np.nan]),
        (lambda: maxent.ContinuousAcrobot(), [np.inf]),  # was a NaN state
        (lambda: maxent.BicycleTracking(), [np.nan, 0.0]),
        (lambda: maxent.BicycleTracking(), [1.0, 0.0, 0.0]),
    ],
)
def test_env_step_refuses_non_finite_or_wrongly_sized_actions(make, action):
    env = make()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.array(action))


def test_bandit_refuses_a_non_finite_reward():
    env = maxent.PrecisionBandit(lambda a: np.full_like(a, np.nan))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="reward_fn"):
        env.step(np.array([0.1]))


@pytest.mark.parametrize(
    "args,match",
    [
        (([np.nan, 0.0], [3.0, 0.0], [2.0, -2.0], [2.05, 2.0]), "p0"),  # was True
        # was a numpy broadcast error
        (([0.0, 0.0, 0.0], [3.0, 0.0], [2.0, -2.0], [2.05, 2.0]), "p0"),
        # lo > hi was a silent False
        (([0.0, 0.0], [3.0, 0.0], [2.05, 2.0], [2.0, -2.0]), "lo"),
    ],
)
def test_segment_hits_box_refuses_bad_points(args, match):
    with pytest.raises(ValueError, match=match):
        maxent.segment_hits_box(*(np.array(a) for a in args))


def test_soft_value_and_policy_stay_finite_for_tiny_alpha():
    q = np.array([1e300, -1e300, 0.0])
    # q / alpha overflowed to inf (value) and NaN (policy) before the row-max shift
    assert float(maxent.soft_value(q, 1e-300)) == 1e300
    np.testing.assert_array_equal(maxent.soft_policy(q, 1e-300), [1.0, 0.0, 0.0])
    P = np.ones((1, 2, 1))
    res = maxent.soft_value_iteration(P, np.array([[700.0, 0.0]]), 1e-3, 0.0)
    assert np.isfinite(res.V).all() and abs(res.V[0] - 700.0) < 1e-9


def test_landscape_similarity_refuses_values_whose_float32_norm_overflows():
    from icml25.kernels import adaent

    q = torch.tensor([[1e30, 0.0, 5.0]])
    # was cos = NaN, mask False, silently
    with pytest.raises(ValueError, match="q_soft"):
        adaent.landscape_similarity(q, q, 0.9)


@pytest.mark.parametrize(
    "call,err,match",
    [
        (
            lambda: maxent.precision_bandit_runs("td3", 200, np.random.default_rng(0)),
            TypeError,
            "configs",
        ),
        (
            lambda: maxent.precision_bandit_runs(
                [dict(algorithm="td3")], 200, np.random.default_rng(0)
            ),
            TypeError,
            r"configs\[0\]",
        ),
        (
            lambda: maxent.precision_bandit_runs(
                [dict(name="p", algorithm="ppo")], 200, np.random.default_rng(0)
            ),
            ValueError,
            "algorithm",
        ),
        (
            lambda: maxent.precision_bandit_runs(
                [dict(name="t", algorithm="td3", learning_starts=-1)],
                200,
                np.random.default_rng(0),
            ),
            ValueError,
            "learning_starts",
        ),
        (
            lambda: maxent.grid_mass_near(
                maxent.make_toy_b_reward(), 0.2, 0.6, 0.1, n_grid=10**13
            ),
            ValueError,
            "n_grid",
        ),
        (lambda: maxent.toy_b_sweep([0.2], n_grid=10**13), ValueError, "n_grid"),
        (
            lambda: maxent.two_branch_tables(0.05, n_actions=10**12),
            ValueError,
            "n_actions",
        ),
        (
            lambda: maxent.SACAdaEnt(
                "MlpPolicy",
                maxent.Obstacle2D(),
                n_samples=10**9,
                batch_size=256,
                policy_kwargs=dict(net_arch=[8]),
            ),
            ValueError,
            "n_samples",
        ),
    ],
)
def test_more_bad_input_is_refused_up_front(call, err, match):
    with pytest.raises(err, match=match):
        call()
