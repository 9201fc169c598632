"""icml25.pars: the LN bound, the sampler, the losses against independent loops, the ablation flags,
the maze, the buffers, the d3rlpy bridge and every bad input."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from icml25 import pars


def _batch(rng, B=32, ds=3, da=2):
    return {
        "observations": rng.normal(size=(B, ds)).astype(np.float32),
        "actions": rng.uniform(-1, 1, size=(B, da)).astype(np.float32),
        "rewards": rng.normal(size=B).astype(np.float32),
        "next_observations": rng.normal(size=(B, ds)).astype(np.float32),
        "terminals": (rng.random(B) < 0.3).astype(np.float32),
    }


def _tensors(b):
    return {k: torch.as_tensor(v) for k, v in b.items()}


def test_layer_norm_bounds_the_output_for_any_input():
    """|Q| <= ||w_out|| sqrt(h) + |b_out| on 10^4 inputs of norm up to 10^4 (unit gain, zero shift)."""
    torch.manual_seed(0)
    critic = pars.EnsembleCritic(3, 2, hidden=32, n_layers=2, E=3, layer_norm=True)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(10_000, 5, generator=g)
    x = x / x.norm(dim=1, keepdim=True) * torch.rand(10_000, 1, generator=g) * 1e4
    with torch.no_grad():
        q = critic(x[:, :3], x[:, 3:])
        bound = critic.w_out.norm(dim=1) * np.sqrt(32) + critic.b_out.abs()
    assert (q.abs() <= bound[:, None] + 1e-4).all()
    plain = pars.EnsembleCritic(3, 2, hidden=32, n_layers=2, E=3, layer_norm=False)
    with torch.no_grad():
        qp = plain(x[:, :3], x[:, 3:])
        bp = plain.w_out.norm(dim=1) * np.sqrt(32) + plain.b_out.abs()
    # without LN the same bound fails: it is not vacuous
    assert (qp.abs() > bp[:, None]).any()


def test_sampler_never_lands_inside_the_box():
    rng = np.random.default_rng(0)
    a = pars.sample_infeasible_actions(5000, 4, 100.0, rng)
    assert a.shape == (5000, 4)
    assert (np.abs(a) >= 100.0).all() and (np.abs(a) <= 200.0).all()
    assert not (np.abs(a) <= 1.0).all(axis=1).any()


def test_q_min_hopper():
    assert abs(pars.q_min_from_data(-0.166, 10.0, 0.99) + 166.0) < 1e-9
    assert (
        abs(
            pars.q_min_from_data(pars.DEFAULTS.hopper_r_min, 10.0, 0.99)
            - pars.DEFAULTS.q_min["hopper"]
        )
        < 1e-9
    )


def _loop_td_loss(b, critic, critic_tgt, actor_tgt, c, gamma, eps, members):
    """TD loss written member by member with Python loops (the independent reference)."""
    s, a, r, s2, d = (
        b[k]
        for k in (
            "observations",
            "actions",
            "rewards",
            "next_observations",
            "terminals",
        )
    )
    with torch.no_grad():
        a2 = (actor_tgt(s2) + eps).clamp(-1, 1)
        q2 = critic_tgt(s2, a2)
        y = torch.stack(
            [
                c * r[j] + gamma * (1 - d[j]) * min(q2[e, j] for e in members)
                for j in range(len(r))
            ]
        )
    q = critic(s, a)
    return sum(((q[e] - y) ** 2).mean() for e in range(critic.E)) / critic.E


def test_critic_loss_equals_a_per_member_loop_with_pa_off():
    rng_np = np.random.default_rng(3)
    torch.manual_seed(3)
    b = _tensors(_batch(rng_np))
    critic = pars.EnsembleCritic(3, 2, hidden=16, E=5)
    critic_tgt = copy.deepcopy(critic)
    actor_tgt = pars.Actor(3, 2, hidden=(16,))
    loss, info = pars.pars_critic_loss(
        b,
        critic,
        critic_tgt,
        actor_tgt,
        c_reward=7.0,
        alpha=0.0,
        q_min=-10.0,
        k_target=3,
        policy_noise=0.2,
        U=50.0,
        rng=np.random.default_rng(11),
    )
    # replay the same draws: noise first, then the subset
    g = np.random.default_rng(11)
    eps = torch.as_tensor(
        np.clip(0.2 * g.standard_normal((32, 2)), -0.5, 0.5), dtype=torch.float32
    )
    members = np.sort(g.choice(5, size=3, replace=False))
    want = _loop_td_loss(b, critic, critic_tgt, actor_tgt, 7.0, 0.99, eps, members)
    assert abs(float(loss.detach()) - float(want.detach())) < 1e-4 * max(
        1.0, float(want.detach())
    )


def test_pa_term_adds_alpha_times_the_squared_gap():
    rng_np = np.random.default_rng(4)
    torch.manual_seed(4)
    b = _tensors(_batch(rng_np))
    critic = pars.EnsembleCritic(3, 2, hidden=16, E=2)
    args = (b, critic, copy.deepcopy(critic), pars.Actor(3, 2, hidden=(8,)))
    l0, _ = pars.pars_critic_loss(
        *args, 1.0, 0.0, -5.0, 2, 0.0, 100.0, np.random.default_rng(1)
    )
    l1, info = pars.pars_critic_loss(
        *args, 1.0, 0.5, -5.0, 2, 0.0, 100.0, np.random.default_rng(1)
    )
    g = np.random.default_rng(1)
    g.standard_normal((32, 2))
    g.choice(2, size=2, replace=False)
    a_inf = torch.as_tensor(pars.sample_infeasible_actions(32, 2, 100.0, g))
    with torch.no_grad():
        q_inf = critic(b["observations"], a_inf)
    pa = float(((q_inf + 5.0) ** 2).mean())
    assert abs(float(l1.detach()) - float(l0.detach()) - 0.5 * pa) < 1e-4 * max(1.0, pa)


def _plain_td3bc_step(actor, critic1, critic2, actor_tgt, t1, t2, b, rng, beta=0.4):
    """TD3+BC critic loss with two separate critics (Fujimoto & Gu), same draws as PARS."""
    s, a, r, s2, d = (
        b[k]
        for k in (
            "observations",
            "actions",
            "rewards",
            "next_observations",
            "terminals",
        )
    )
    eps = torch.as_tensor(
        np.clip(0.2 * rng.standard_normal(a.shape), -0.5, 0.5), dtype=torch.float32
    )
    rng.choice(2, size=2, replace=False)
    with torch.no_grad():
        a2 = (actor_tgt(s2) + eps).clamp(-1, 1)
        y = r + 0.99 * (1 - d) * torch.minimum(t1(s2, a2)[0], t2(s2, a2)[0])
    return ((critic1(s, a)[0] - y) ** 2).mean() + ((critic2(s, a)[0] - y) ** 2).mean()


def test_ablation_flags_reproduce_plain_td3bc():
    """With TD3BC_FLAGS the PARS critic loss (times E = 2) is TD3+BC's sum of two MSEs, and the actor
    loss is beta ||pi - a||^2 - Q1 / mean|Q1|."""
    cfg = pars.PARSConfig(3, 2, hidden=16, actor_hidden=(16,)).with_flags(
        **pars.TD3BC_FLAGS
    )
    torch.manual_seed(5)
    agent = pars.PARS(cfg, np.random.default_rng(0))
    assert (
        not agent.critic.layer_norm
        and agent.critic.E == 2
        and cfg.alpha == 0
        and cfg.c_reward == 1
    )
    # split the ensemble into two single critics
    singles = []
    for e in range(2):
        c1 = pars.EnsembleCritic(3, 2, hidden=16, E=1, layer_norm=False)
        with torch.no_grad():
            for name, p in c1.named_parameters():
                p.copy_(dict(agent.critic.named_parameters())[name][e : e + 1])
        singles.append(c1)
    b = _tensors(_batch(np.random.default_rng(6)))
    loss, _ = pars.pars_critic_loss(
        b,
        agent.critic,
        agent.critic_tgt,
        agent.actor_tgt,
        1.0,
        0.0,
        0.0,
        2,
        0.2,
        100.0,
        np.random.default_rng(9),
    )
    want = _plain_td3bc_step(
        agent.actor,
        singles[0],
        singles[1],
        agent.actor_tgt,
        singles[0],
        singles[1],
        b,
        np.random.default_rng(9),
    )
    assert abs(2 * float(loss.detach()) - float(want.detach())) < 1e-4 * max(
        1.0, float(want.detach())
    )
    la = pars.td3bc_actor_loss(
        b["observations"], b["actions"], agent.actor, agent.critic, 0.4, reduce="first"
    )
    pi = agent.actor(b["observations"])
    q1 = singles[0](b["observations"], pi)[0]
    want_a = (
        0.4 * ((pi - b["actions"]) ** 2).sum(1).mean() - q1.mean() / q1.abs().mean()
    )
    assert abs(float(la.detach()) - float(want_a.detach())) < 1e-5


def test_offline_update_lowers_the_infeasible_q_with_pa():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    env = pars.PointMazeLite()
    buf = pars.generate_dataset(env, pars.waypoint_controller, 0.3, 2000, "medium", rng)
    cfg = pars.PARSConfig(
        2,
        2,
        hidden=32,
        E=2,
        actor_hidden=(32,),
        c_reward=10.0,
        alpha=0.1,
        q_min=-5.0,
        batch_size=64,
    )
    agent = pars.PARS(cfg, rng)
    infos = pars.train_offline(agent, buf, 200, log_every=50)
    assert len(infos) == 4 and np.isfinite(infos[-1]["td"])
    assert abs(infos[-1]["q_infeasible"] + 5.0) < abs(infos[0]["q_infeasible"] + 5.0)


def test_extrapolation_probe_equals_direct_evaluation():
    torch.manual_seed(1)
    critic = pars.EnsembleCritic(2, 2, hidden=8, E=3)
    s = np.random.default_rng(0).normal(size=(4, 2)).astype(np.float32)
    out = pars.extrapolation_probe(critic, s, [[1.0, 0.0], [0.0, 2.0]], [0.0, 5.0])
    with torch.no_grad():
        direct = critic(
            torch.as_tensor(s),
            torch.full((4, 2), 0.0).index_fill_(1, torch.tensor([1]), 5.0),
        ).mean()
    assert out.shape == (2, 2) and abs(out[1, 1] - float(direct)) < 1e-5
    with pytest.raises(ValueError, match="directions"):
        pars.extrapolation_probe(critic, s, [[0.0, 0.0]], [1.0])


def test_maze_walls_goal_and_expert():
    env = pars.PointMazeLite()
    rng = np.random.default_rng(0)
    p = env.free_positions(5000, rng)
    assert not env.in_wall(p).any()
    env.reset(3, rng)
    for _ in range(30):  # push right into the wall: never enters it
        s2, r, term, tout = env.step(np.tile([1.0, 0.0], (3, 1)))
        assert not env.in_wall(s2.astype(float)).any()
    expert = pars.evaluate_policy(
        lambda o: pars.waypoint_controller(
            env, o.astype(float), np.tile(env.goal, (len(o), 1))
        ),
        env,
        10,
        rng,
    )
    assert expert["success"] == 1.0
    assert (
        pars.evaluate_policy(lambda o: np.zeros_like(o), env, 5, rng)["success"] == 0.0
    )


def test_dataset_episodes_are_contiguous_and_d3rlpy_reads_them():
    rng = np.random.default_rng(2)
    env = pars.PointMazeLite()
    buf = pars.generate_dataset(
        env, pars.waypoint_controller, 0.3, 3000, "replay", rng, n_envs=8
    )
    d = buf.data
    assert len(buf) == 3000 and (np.abs(d["actions"]) <= 1).all()
    cont = (d["terminals"][:-1] == 0) & (d["timeouts"][:-1] == 0)
    assert np.allclose(d["next_observations"][:-1][cont], d["observations"][1:][cont])
    assert np.array_equal(
        d["rewards"], env.reward_of(d["next_observations"].astype(float))
    )
    ds = pars.to_mdp_dataset(buf)
    assert len(ds.episodes) == int(d["terminals"].sum() + d["timeouts"].sum())


def test_mixed_batch_ratio_and_normalized_score():
    rng = np.random.default_rng(0)
    off = pars.ReplayBuffer(_batch(rng, B=50, ds=2))
    on = pars.ReplayBuffer(state_dim=2, act_dim=2)
    # empty online buffer: all offline
    assert len(pars.mixed_batch(off, on, 16, 0.5, rng)["rewards"]) == 16
    on.add(
        {
            k: v + 100
            for k, v in _batch(rng, B=20, ds=2).items()
            if k not in ("actions", "terminals")
        }
        | {"actions": np.zeros((20, 2)), "terminals": np.zeros(20)}
    )
    b = pars.mixed_batch(off, on, 40, 0.25, rng)
    assert (b["observations"][:, 0] > 50).sum() == 30
    assert np.allclose(pars.normalized_score([0.0, 5.0, 10.0], 0.0, 10.0), [0, 50, 100])


def test_d3rlpy_td3plusbc_trains_on_our_buffer():
    rng = np.random.default_rng(0)
    env = pars.PointMazeLite()
    buf = pars.generate_dataset(env, pars.waypoint_controller, 0.3, 1000, "medium", rng)
    algo = pars.d3rlpy_train("td3plusbc", buf, 20, rng, hidden=(16, 16), batch_size=32)
    a = pars.d3rlpy_policy(algo)(buf.data["observations"][:4])
    assert a.shape == (4, 2) and (np.abs(a) <= 1).all()
    assert np.isfinite(
        pars.d3rlpy_q_values(algo, buf.data["observations"][:4], 150 * np.ones((4, 2)))
    ).all()


def test_bad_inputs_name_the_argument():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="U"):
        pars.sample_infeasible_actions(4, 2, 1.0, rng)
    with pytest.raises(TypeError, match="rng"):
        pars.sample_infeasible_actions(4, 2, 10.0, 0)
    with pytest.raises(ValueError, match="c_reward"):
        pars.q_min_from_data(-1.0, 0.0, 0.99)
    with pytest.raises(ValueError, match="gamma"):
        pars.q_min_from_data(-1.0, 1.0, 1.0)
    torch.manual_seed(0)
    b = _tensors(_batch(rng))
    critic = pars.EnsembleCritic(3, 2, hidden=8, E=3)
    args = (b, critic, copy.deepcopy(critic), pars.Actor(3, 2, hidden=(8,)))
    good = dict(
        c_reward=1.0,
        alpha=0.0,
        q_min=0.0,
        k_target=2,
        policy_noise=0.2,
        U=10.0,
        rng=rng,
    )
    for field, bad, err in (
        ("c_reward", 0.0, ValueError),
        ("alpha", -1.0, ValueError),
        ("k_target", 4, ValueError),
        ("U", 1.0, ValueError),
        ("rng", 3, TypeError),
    ):
        with pytest.raises(err, match=field):
            pars.pars_critic_loss(*args, **{**good, field: bad})
    wide = dict(b, actions=b["actions"] * 3)
    with pytest.raises(ValueError, match="actions"):
        pars.pars_critic_loss(wide, *args[1:], **good)
    short = dict(b, rewards=b["rewards"][:5])
    with pytest.raises(ValueError, match="rewards"):
        pars.pars_critic_loss(short, *args[1:], **good)
    with pytest.raises(ValueError, match="actions"):
        pars.ReplayBuffer(dict(_batch(rng), actions=np.full((32, 2), 1.5, np.float32)))
    with pytest.raises(ValueError, match="terminals"):
        pars.ReplayBuffer(dict(_batch(rng), terminals=np.full(32, 0.5, np.float32)))
    with pytest.raises(ValueError, match="k_target"):
        pars.PARS(pars.PARSConfig(2, 2, E=2, k_target=3), rng)
    with pytest.raises(ValueError, match="alpha"):
        pars.PARS(pars.PARSConfig(2, 2, alpha=-0.1), rng)
    with pytest.raises(TypeError, match="rng"):
        pars.PARS(pars.PARSConfig(2, 2), 0)
    with pytest.raises(ValueError, match="kind"):
        pars.generate_dataset(
            pars.PointMazeLite(), pars.waypoint_controller, 0.1, 10, "expert", rng
        )
    with pytest.raises(ValueError, match="reduce"):
        pars.td3bc_actor_loss(
            b["observations"], b["actions"], args[3], critic, 0.1, reduce="max"
        )
    with pytest.raises(ValueError, match="a"):
        pars.PointMazeLite().step(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="name"):
        pars.d3rlpy_algo("bcq")
    with pytest.raises(ValueError, match="finite"):
        critic(b["observations"], torch.full((32, 2), float("nan")))
    with pytest.raises(ValueError, match="a must have shape"):
        critic(b["observations"], torch.zeros(32, 3))
    with pytest.raises(ValueError, match="expert"):
        pars.normalized_score([1.0], 2.0, 2.0)


def test_review_bad_inputs_are_refused_up_front():
    """Bugs found in review: each used to pass silently or fail deep inside torch/NumPy."""
    from icml25.checks import TooLargeError

    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    # sizes that cannot fit are refused before any allocation
    with pytest.raises(TooLargeError, match="B="):
        pars.sample_infeasible_actions(10**12, 2, 100.0, rng)
    with pytest.raises(ValueError, match="U"):  # 2U would overflow float32
        pars.sample_infeasible_actions(4, 2, 1e38, rng)
    with pytest.raises(TooLargeError, match="hidden"):
        pars.EnsembleCritic(2, 2, hidden=10**6, E=10**4)
    critic = pars.EnsembleCritic(2, 2, hidden=8, E=3)
    with pytest.raises(TooLargeError, match="extrapolation_probe"):
        pars.extrapolation_probe(
            critic, np.zeros((10**4, 2)), np.ones((10**3, 2)), np.ones(10**3)
        )
    # empty probes used to return NaN with a warning
    with pytest.raises(ValueError, match="radii"):
        pars.extrapolation_probe(critic, np.zeros((1, 2)), np.ones((1, 2)), [])
    with pytest.raises(ValueError, match="s must hold"):
        pars.extrapolation_probe(critic, np.zeros((0, 2)), np.ones((1, 2)), [1.0])
    # dtypes and widths name the argument
    with pytest.raises(TypeError, match="a must have the critic's dtype"):
        critic(
            torch.zeros(4, 2, dtype=torch.float64),
            torch.zeros(4, 2, dtype=torch.float64),
        )
    with pytest.raises(ValueError, match="s must have shape"):
        pars.Actor(2, 2, hidden=(8,))(torch.zeros(4, 3))
    # config fields that used to be accepted
    base = pars.PARSConfig(2, 2, hidden=8, E=3, actor_hidden=(8,))
    for field, bad in (
        ("gamma", 1.5),
        ("gamma", float("nan")),
        ("lr", 0.0),
        ("policy_noise", -1.0),
        ("noise_clip", -1.0),
        ("q_min", float("nan")),
        ("expl_noise", -1.0),
        ("device", "tpu"),
        ("hidden", 0),
    ):
        with pytest.raises(ValueError, match=f"cfg.{field}"):
            pars.PARS(base.with_flags(**{field: bad}), rng)
    agent = pars.PARS(base, rng)
    good = dict(
        observations=np.zeros((4, 2), np.float32),
        actions=np.zeros((4, 2), np.float32),
        rewards=np.zeros(4, np.float32),
        next_observations=np.zeros((4, 2), np.float32),
        terminals=np.zeros(4, np.float32),
    )
    for bad, match in (
        (dict(good, terminals=np.full(4, 0.5, np.float32)), "terminals"),
        (dict(good, observations=np.zeros((4, 3), np.float32)), "observations"),
        (
            dict(good, next_observations=np.zeros((4, 3), np.float32)),
            "next_observations",
        ),
        ({k: v[:0] for k, v in good.items()}, "at least one"),
    ):
        with pytest.raises(ValueError, match=match):
            agent.offline_update(bad)
    with pytest.raises(TypeError, match="batch"):
        agent.offline_update([1, 2])
    with pytest.raises(TypeError, match="critic must be"):
        pars.pars_critic_loss(
            good,
            "critic",
            agent.critic_tgt,
            agent.actor_tgt,
            1.0,
            0.0,
            0.0,
            2,
            0.2,
            100.0,
            rng,
        )
    with pytest.raises(ValueError, match="critic_tgt must match"):
        pars.pars_critic_loss(
            good,
            agent.critic,
            pars.EnsembleCritic(2, 2, hidden=8, E=1),
            agent.actor_tgt,
            1.0,
            0.0,
            0.0,
            2,
            0.2,
            100.0,
            rng,
        )
    with pytest.raises(ValueError, match="state must have 2 columns"):
        pars.td3bc_actor_loss(
            torch.zeros(4, 3), torch.zeros(4, 2), agent.actor, agent.critic, 0.4
        )
    with pytest.raises(ValueError, match="state must hold"):
        pars.td3bc_actor_loss(
            torch.zeros(0, 2), torch.zeros(0, 2), agent.actor, agent.critic, 0.4
        )
    # data: a controller or policy of the wrong shape used to be broadcast silently
    env = pars.PointMazeLite()
    with pytest.raises(ValueError, match="controller's output"):
        pars.generate_dataset(env, lambda e, p, g: np.zeros(2), 0.5, 100, "medium", rng)
    with pytest.raises(ValueError, match="policy's output"):
        pars.evaluate_policy(lambda o: np.zeros((1, 2)), env, 3, rng)
    with pytest.raises(ValueError, match="goals"):
        pars.waypoint_controller(env, np.zeros((3, 2)), np.zeros((2, 2)))
    buf = pars.generate_dataset(env, pars.waypoint_controller, 0.5, 64, "medium", rng)
    with pytest.raises(ValueError, match="observations"):
        pars.ReplayBuffer(state_dim=3).add(buf.data)
    narrow = pars.ReplayBuffer(
        {
            k: (
                np.zeros((3, 3), np.float32) if v.ndim == 2 else np.zeros(3, np.float32)
            )
            for k, v in buf.data.items()
            if k != "timeouts"
        }
    )
    with pytest.raises(ValueError, match="same width"):
        pars.mixed_batch(buf, narrow, 8, 0.5, rng)
    with pytest.raises(ValueError, match="a must have shape"):
        pars.toy_q_target(np.zeros((3, 2)), np.zeros((2, 2)), 1.0)
    with pytest.raises(ValueError, match=r"variants\[0\]"):
        pars.extrapolation_experiment([dict(name="x")], 10, rng)
