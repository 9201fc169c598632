"""icml25.omapl: losses against hand computations and torch, environments, labels, learners, bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import logsumexp
from torch.nn import functional as F

from icml25 import omapl


def test_implied_reward_tabular_chain():
    """A 3-step chain with tabular Q_tot and V_tot (w = 1 for a single agent, b = 0), by hand."""
    Q = torch.tensor([[1.0, 2.0, 3.0]]).unsqueeze(-1)  # (B=1, T=3, N=1)
    V_next = torch.tensor([[0.5, 1.5, 9.0]]).unsqueeze(-1)  # V(s_1), V(s_2), V(s_3)
    ones, zeros = torch.ones_like(Q), torch.zeros(1, 3)
    dones = torch.tensor([[0.0, 0.0, 1.0]])
    r = omapl.implied_reward(Q, ones, zeros, V_next, ones, zeros, dones, 0.9)
    assert torch.allclose(r, torch.tensor([[1.0 - 0.9 * 0.5, 2.0 - 0.9 * 1.5, 3.0]]))
    # weights and biases enter linearly
    w = torch.full_like(Q, 2.0)
    r2 = omapl.implied_reward(Q, w, zeros + 1, V_next, w, zeros + 1, dones, 0.9)
    assert torch.allclose(r2, torch.tensor([[3.0 - 0.9 * 2.0, 5.0 - 0.9 * 4.0, 7.0]]))


def test_preference_loss_is_bce_plus_regulariser():
    g = torch.Generator().manual_seed(0)
    r1, r2 = torch.randn(8, 5, generator=g), torch.randn(8, 5, generator=g)
    y = torch.tensor([1, 0, 1, 1, 0, 0, 1, 0.0])
    want = F.binary_cross_entropy_with_logits(r1.sum(1) - r2.sum(1), y)
    assert torch.allclose(omapl.preference_loss(r1, r2, y, reg=0.0), want, atol=1e-6)
    allr = torch.cat([r1.flatten(), r2.flatten()])
    code = omapl.preference_loss(r1, r2, y, reg=0.5, form="code")
    assert torch.allclose(code, want + 0.5 * allr.pow(2).mean(), atol=1e-6)
    paper = omapl.preference_loss(r1, r2, y, reg=0.5, form="paper")
    phi = allr - allr.pow(2) / 2
    assert torch.allclose(paper, want - phi.mean(), atol=1e-6)


def test_masking_after_done():
    dones = torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    m = omapl.segment_mask(dones)
    assert torch.equal(m, torch.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]))
    assert np.array_equal(omapl.alive_mask(dones.numpy()), m.numpy())
    r1 = torch.tensor([[1.0, 2.0, 100.0, -100.0]])
    r2 = torch.zeros(1, 4)
    mask = torch.stack([m[:1], torch.ones(1, 4)])
    got = omapl.preference_loss(r1, r2, torch.ones(1), mask=mask, reg=0.0)
    assert torch.allclose(got, F.softplus(-torch.tensor(3.0)))


def test_extreme_v_minimiser_is_soft_value():
    rng = np.random.default_rng(0)
    for beta in (0.5, 2.0, 10.0):
        q = rng.normal(size=50) * 3
        out = omapl.extreme_v_minimiser(q, beta)
        assert abs(out["argmin"] - beta * (logsumexp(q / beta) - np.log(q.size))) < 1e-4
        assert abs(out["argmin"] - out["closed_form"]) < 1e-4


def test_extreme_v_normalised_has_same_gradient_direction():
    qb, v = torch.randn(20), torch.zeros(20, requires_grad=True)
    ga = torch.autograd.grad(omapl.extreme_v_loss(qb, v, 1.0, 1.0), v)[0]
    gb = torch.autograd.grad(omapl.extreme_v_loss(qb, v, 1.0, 1.0, normalise=True), v)[
        0
    ]
    ratio = gb / ga
    assert (
        torch.allclose(ratio, ratio[0].expand_as(ratio), rtol=1e-5)
        and float(ratio[0]) > 0
    )


def test_wbc_loss_weights():
    logp = torch.log(torch.tensor([[[0.5, 0.25]]]))
    z = torch.tensor([[[0.0, 1.0]]])
    want = -(np.log(0.5) + np.e * np.log(0.25)) / 2
    assert abs(float(omapl.wbc_loss(logp, z)) - want) < 1e-6


def test_env_step_equals_per_agent_loop():
    env = omapl.CoopGridEnv(30, 5, 3, 3, 12)
    rng = np.random.default_rng(1)
    obs, state, avail = env.reset(rng)
    assert (
        obs.shape == (30, 3, env.obs_dim)
        and state.shape == (30, env.state_dim)
        and avail.shape == (30, 3, 5)
    )
    for _ in range(12):
        pos = env.pos.copy()
        a = np.array(
            [
                [rng.choice(np.flatnonzero(avail[e, i])) for i in range(3)]
                for e in range(30)
            ]
        )
        obs, state, avail, r, done, cov = env.step(a)
        for e in range(30):
            moved = [
                pos[e, i] + omapl.envs.omapl_kernels.MOVES[a[e, i]] for i in range(3)
            ]
            assert np.array_equal(np.array(moved), env.pos[e])
            D = sum(min(np.abs(np.array(moved) - lm).sum(1)) for lm in env.landmarks[e])
            C = sum(
                int((moved[i] == moved[j]).all())
                for i in range(3)
                for j in range(i + 1, 3)
            )
            assert abs(r[e] - (-D / 10 - 0.5 * C)) < 1e-6
    assert done.all()
    with pytest.raises(RuntimeError):
        env.step(a)


def test_observations_by_hand():
    pos = np.array([[[0, 0], [2, 1], [4, 4]]])
    lm = np.array([[[1, 1], [3, 0], [0, 4]]])
    obs, state = omapl.grid_observations(pos, lm, 5)
    assert np.allclose(obs[0, 1, :2], [0.4, 0.2])
    assert np.allclose(obs[0, 1, 2:4], [-0.2, 0.0])  # landmark 0 relative to agent 1
    assert np.allclose(obs[0, 1, 8:10], [-0.4, -0.2])  # agent 0 relative to agent 1
    assert np.allclose(state[0], np.concatenate([pos[0].ravel(), lm[0].ravel()]) / 5)


def _data(rng, labels="rule", flip=0.0, n_traj=40, n_pairs=60):
    return omapl.make_grid_data(rng, n_traj, n_pairs, labels, flip)


def test_rule_labels_follow_quality_without_flips():
    rng = np.random.default_rng(2)
    d = _data(rng)
    q1, q2 = d.pool.quality[d.pairs.idx1], d.pool.quality[d.pairs.idx2]
    assert (q1 != q2).all()
    assert np.array_equal(d.pairs.y, (q1 < q2).astype(int))
    flipped = omapl.make_preference_pairs(
        d.pool, 2000, np.random.default_rng(0), "quality", flip_prob=0.3
    )
    truth = (d.pool.quality[flipped.idx1] < d.pool.quality[flipped.idx2]).astype(int)
    # 4 sigma of a binomial(2000, 0.3)
    assert abs((flipped.y != truth).mean() - 0.3) < 0.04


def test_expert_beats_random_and_bt_labels():
    rng = np.random.default_rng(3)
    d = _data(rng)
    R = d.pool.returns
    assert R[d.pool.quality == 0].mean() > R[d.pool.quality == 2].mean()
    assert d.pool.success[d.pool.quality == 0].all()
    pairs = omapl.make_preference_pairs(d.pool, 500, rng, "return_bt", temperature=1e-6)
    clear = np.abs(R[pairs.idx1] - R[pairs.idx2]) > 1e-3  # ties are a coin flip
    assert clear.sum() > 100
    assert np.array_equal(
        pairs.y[clear], (R[pairs.idx1] > R[pairs.idx2]).astype(int)[clear]
    )


def test_prompt_and_annotator():
    rng = np.random.default_rng(4)
    d = _data(rng)
    s1, s2 = (
        omapl.summarise_trajectory(d.pool, 0),
        omapl.summarise_trajectory(d.pool, 1),
    )
    prompt = omapl.build_llm_prompt(s1, s2)
    assert "[Trajectory1]" in prompt and "[Trajectory2]" in prompt and "#1" in prompt
    ann = omapl.NoisyOracleAnnotator(0.0, 1e-6, np.random.default_rng(0))
    want = "#1" if d.pool.returns[0] > d.pool.returns[1] else "#2"
    if abs(d.pool.returns[0] - d.pool.returns[1]) > 1e-3:
        assert ann.answer(prompt) == want
    always_flip = omapl.NoisyOracleAnnotator(1.0, 1e-6, np.random.default_rng(0))
    if abs(d.pool.returns[0] - d.pool.returns[1]) > 1e-3:
        assert always_flip.answer(prompt) != want
    with pytest.raises(ValueError, match="two team rewards"):
        ann.answer("no numbers here")


@pytest.mark.parametrize("method", [*omapl.METHODS, "O-MAPL two-layer"])
def test_learners_update_and_act(method):
    rng = np.random.default_rng(5)
    d = _data(rng)
    torch.manual_seed(0)
    agent = omapl.make_agent(method, d, 16, 4, lr=1e-3)
    hist = omapl.train(agent, d, 4, 8, rng)
    assert len(hist) == 4 and all(np.isfinite(v) for h in hist for v in h.values())
    obs, _, avail = d.env.reset(rng)
    a = agent.act(obs, avail)
    assert a.shape == (1, 3) and avail[0, np.arange(3), a[0]].all()
    if method != "BC":
        assert -1.0 <= omapl.reward_spearman(agent, d.test_pool) <= 1.0


def test_code_form_options_run():
    rng = np.random.default_rng(6)
    d = _data(rng)
    agent = omapl.make_agent(
        "O-MAPL", d, 16, 3, mixer_input="state", reg_form="code", v_normalise=True
    )
    omapl.train(agent, d, 3, 8, rng)
    assert agent.q_mixer is agent.v_mixer
    paper = omapl.make_agent("O-MAPL", d, 16, 3)
    assert paper.q_mixer is not paper.v_mixer


def test_mixer_outputs_nonnegative_weights():
    mix = omapl.HyperMixer(6, 3, 8)
    w, b = mix(torch.randn(4, 5, 6))
    assert w.shape == (4, 5, 3) and b.shape == (4, 5) and bool((w >= 0).all())


def test_hessian_linear_psd_two_layer_not():
    rng = np.random.default_rng(7)
    out = omapl.hessian_search(rng, n_points=60)
    assert out["linear"] >= -1e-8
    assert out["two_layer"] < -1e-6
    # the linear Hessian against finite differences of the BCE at one point
    q = rng.normal(size=(2, 3))
    pairs = rng.integers(0, 3, (5, 2, 2))
    y = rng.integers(0, 2, 5)
    w = np.array([0.7, 1.3])

    def f(flat):
        qq = flat.reshape(2, 3)
        tot = w[0] * qq[0][pairs[:, :, 0]] + w[1] * qq[1][pairs[:, :, 1]]
        x = tot[:, 0] - tot[:, 1]
        return np.mean(np.logaddexp(0, x) - y * x)

    h, x0 = 1e-4, q.reshape(-1)
    H = np.zeros((6, 6))
    for i in range(6):
        for j in range(6):
            ei, ej = np.eye(6)[i] * h, np.eye(6)[j] * h
            H[i, j] = (
                f(x0 + ei + ej) - f(x0 + ei - ej) - f(x0 - ei + ej) + f(x0 - ei - ej)
            ) / (4 * h * h)
    assert np.allclose(
        np.linalg.eigvalsh(H),
        omapl.bt_hessian_eigs(q, pairs, y, "linear", w),
        atol=1e-5,
    )


def test_bad_inputs_are_named():
    t = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match="gamma"):
        omapl.implied_reward(t, t, t[..., 0], t, t, t[..., 0], t[..., 0], 1.0)
    with pytest.raises(ValueError, match="w_next"):
        omapl.implied_reward(t, t, t[..., 0], t, t[:1], t[..., 0], t[..., 0], 0.9)
    with pytest.raises(ValueError, match="w must be >= 0"):
        omapl.implied_reward(t, -t - 1, t[..., 0], t, t, t[..., 0], t[..., 0], 0.9)
    r = torch.zeros(3, 4)
    with pytest.raises(ValueError, match="y"):
        omapl.preference_loss(r, r, torch.tensor([0.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="r2"):
        omapl.preference_loss(r, r[:2], torch.zeros(3))
    with pytest.raises(ValueError, match="beta"):
        omapl.extreme_v_loss(r, r, 1.0, 0.0)
    with pytest.raises(ValueError, match="beta"):
        omapl.extreme_v_loss(r, r, 1.0, -1.0)
    with pytest.raises(ValueError, match="v"):
        omapl.extreme_v_loss(r, r[:1], 1.0, 1.0)
    with pytest.raises(ValueError, match="z"):
        omapl.wbc_loss(torch.zeros(2, 3, 4), torch.zeros(2, 3, 5))
    with pytest.raises(TypeError, match="rng"):
        omapl.make_grid_data(0, 10, 10)
    with pytest.raises(TypeError, match="rng"):
        omapl.NoisyOracleAnnotator(0.1, 1.0, 42)
    with pytest.raises(ValueError, match="flip_prob"):
        omapl.NoisyOracleAnnotator(1.5, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="gamma"):
        omapl.OMAPL(omapl.OMAPLConfig(4, 4, 2, 3, gamma=1.0))
    with pytest.raises(ValueError, match="beta"):
        omapl.OMAPL(omapl.OMAPLConfig(4, 4, 2, 3, beta=0.0))
    with pytest.raises(ValueError, match="mixer"):
        omapl.OMAPL(omapl.OMAPLConfig(4, 4, 2, 3, mixer="qmix"))


def test_pair_batch_validation():
    rng = np.random.default_rng(8)
    d = _data(rng)
    b = d.batch
    args = [
        x.numpy()
        for x in (b.obs, b.next_obs, b.state, b.next_state, b.actions, b.dones)
    ]
    avail, y = b.avail.numpy(), b.y.numpy()
    omapl.make_pair_batch(*args, avail, y)
    with pytest.raises(ValueError, match="y"):
        omapl.make_pair_batch(*args, avail, y + 2)
    with pytest.raises(ValueError, match="every action masked"):
        omapl.make_pair_batch(*args, np.zeros_like(avail), y)
    with pytest.raises(ValueError, match="next_obs"):
        omapl.make_pair_batch(args[0], args[1][:, :2], *args[2:], avail, y)
    with pytest.raises(ValueError, match="state"):
        omapl.make_pair_batch(args[0], args[1], args[2][:, :, :3], *args[3:], avail, y)
    masked = avail.copy()
    masked[0, 0, 0, 0, :] = False
    masked[0, 0, 0, 0, (args[4][0, 0, 0, 0] + 1) % 5] = True
    with pytest.raises(ValueError, match="avail masks out"):
        omapl.make_pair_batch(*args, masked, y)
    agent = omapl.make_agent("O-MAPL", d, 8, 1)
    with pytest.raises(ValueError, match="every action masked"):
        agent.act(
            np.zeros((1, 3, d.env.obs_dim), np.float32), np.zeros((1, 3, 5), bool)
        )
    with pytest.raises(ValueError, match="obs"):
        agent.act(np.zeros((1, 3, 5), np.float32))
    with pytest.raises(TypeError, match="batch"):
        agent.update({"obs": 1})


def test_mpe_adapter_and_continuous_learner():
    pytest.importorskip("mpe2")
    rng = np.random.default_rng(9)
    ad = omapl.MPESpreadAdapter(3, 5)
    pool = omapl.generate_mpe_dataset(ad, 0.2, 3, rng)
    assert (
        pool.obs.shape == (3, 6, 3, ad.obs_dim)
        and pool.actions.shape == (3, 5, 3, 2)
        and pool.avail is None
    )
    assert np.abs(pool.actions).max() <= 1.0
    data, ad2 = omapl.make_mpe_data(rng, 4, 10, max_cycles=5)
    agent = omapl.make_agent("O-MAPL", data, 16, 2)
    omapl.train(agent, data, 2, 4, rng)
    assert agent.act(pool.obs[0, :1]).shape == (1, 3, 2)
    assert np.isfinite(omapl.evaluate_mpe(agent, ad2, 1, rng)["return"])


# ---- review (issue 24) ---------------------------------------------------------------
# inputs that used to pass silently or crash deep inside numpy / torch


def test_losses_refuse_negative_next_weights_non_binary_masks_and_empty_batches():
    t = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match="w_next must be >= 0"):
        omapl.implied_reward(t, t, t[..., 0], t, -t - 1, t[..., 0], t[..., 0], 0.9)
    with pytest.raises(ValueError, match="q_loc"):
        omapl.implied_reward(
            torch.zeros(4),
            torch.zeros(4),
            torch.zeros(()),
            torch.zeros(4),
            torch.zeros(4),
            torch.zeros(()),
            torch.zeros(()),
            0.9,
        )
    r = torch.zeros(3, 4)
    with pytest.raises(ValueError, match="mask"):
        omapl.preference_loss(r, r, torch.zeros(3), torch.full((2, 3, 4), 3.0))
    with pytest.raises(ValueError, match="r1"):
        omapl.preference_loss(torch.zeros(0, 4), torch.zeros(0, 4), torch.zeros(0))
    with pytest.raises(ValueError, match="mask"):
        omapl.extreme_v_loss(r, r, 1.0, 1.0, mask=-torch.ones(3, 4))
    with pytest.raises(ValueError, match="q_bar"):
        omapl.extreme_v_loss(torch.zeros(0), torch.zeros(0), 1.0, 1.0)
    with pytest.raises(ValueError, match="mask"):
        omapl.wbc_loss(
            -torch.ones(2, 3, 4), torch.zeros(2, 3, 4), torch.full((2, 3, 4), 5.0)
        )
    with pytest.raises(ValueError, match="logp"):
        omapl.wbc_loss(torch.zeros(0, 3, 4), torch.zeros(0, 3, 4))
    with pytest.raises(ValueError, match="dones"):
        omapl.segment_mask(torch.tensor([0.5, 0.7]))
    with pytest.raises(ValueError, match="dones"):
        omapl.segment_mask(torch.tensor(1.0))
    from icml25.kernels import omapl_kernels

    q4, s3 = torch.zeros(2, 4, 5, 3), torch.zeros(2, 4, 5)
    with pytest.raises(ValueError, match="w must be >= 0"):
        omapl_kernels.segment_logits(
            q4, -torch.ones_like(q4), s3, q4, torch.ones_like(q4), s3, s3, 0.9
        )


def test_sizes_that_cannot_fit_are_refused_up_front():
    from icml25.checks import TooLargeError

    rng = np.random.default_rng(0)
    with pytest.raises(TooLargeError, match="CoopGrid starts"):
        omapl.CoopGridEnv(10**12).reset(rng)
    with pytest.raises(ValueError, match="size"):
        omapl.CoopGridEnv(1, size=10**7)
    with pytest.raises(TooLargeError, match="CoopGrid starts"):
        omapl.make_grid_data(rng, 10**10, 10)
    d = _data(np.random.default_rng(1))
    with pytest.raises(TooLargeError, match="make_preference_pairs"):
        omapl.make_preference_pairs(d.pool, 10**10, rng)
    with pytest.raises(TooLargeError, match="GridData.sample"):
        d.sample(rng, 10**10)
    with pytest.raises(TooLargeError, match="OMAPL"):
        omapl.make_agent("O-MAPL", d, 10**7, 1)
    agent = omapl.make_agent("BC", d, 8, 1)
    with pytest.raises(TooLargeError):
        omapl.evaluate_grid(agent, d.env, 10**11, rng)
    with pytest.raises(ValueError, match="n_agents"):
        omapl.MPESpreadAdapter(10**5)
    with pytest.raises(ValueError, match="A"):
        omapl.hessian_search(rng, 1, A=10**6)


def test_bad_arguments_are_named_not_crashes_deep_inside():
    rng = np.random.default_rng(2)
    d = _data(rng)
    with pytest.raises(ValueError, match="batch_size"):
        d.sample(rng, 0)
    with pytest.raises(ValueError, match="fraction"):
        d.sample(rng, 4, float("nan"))
    with pytest.raises(TypeError, match="rng"):
        d.sample(None, 4)
    with pytest.raises(ValueError, match="test_frac"):
        omapl.make_grid_data(rng, 5, 10, test_frac=0.0)
    with pytest.raises(TypeError, match="pool"):
        omapl.summarise_trajectory("x", 0)
    with pytest.raises(TypeError, match="pool"):
        omapl.annotate_pairs("x", 3, omapl.NoisyOracleAnnotator(0.1, 1.0, rng), rng)
    with pytest.raises(ValueError, match="sel"):
        omapl.pair_batch(d.pool, d.pairs, np.array([], dtype=np.int64))
    with pytest.raises(TypeError, match="overrides"):
        omapl.make_agent("O-MAPL", d, 8, 1, foo=1)
    agent = omapl.make_agent("O-MAPL", d, 8, 1)
    with pytest.raises(TypeError, match="agent"):
        omapl.train("x", d, 1, 4, rng)
    with pytest.raises(TypeError, match="data"):
        omapl.train(agent, "x", 1, 4, rng)
    with pytest.raises(TypeError, match="env_sizes"):
        omapl.evaluate_grid(agent, "x", 3, rng)
    with pytest.raises(TypeError, match="pool"):
        omapl.reward_spearman(agent, "x")
    with pytest.raises(ValueError, match="at least 2"):
        omapl.reward_spearman(agent, omapl.subset(d.pool, np.array([0])))
    with pytest.raises(TypeError, match="pairs"):
        omapl.preference_accuracy(agent, d.pool, "x")
    with pytest.raises(ValueError, match="another pool"):
        omapl.preference_accuracy(
            agent, omapl.subset(d.pool, np.array([0, 1])), d.pairs
        )
    with pytest.raises(ValueError, match="pairs"):
        omapl.bt_hessian_eigs(
            np.zeros((2, 3)),
            np.zeros((0, 2, 2), int),
            np.array([]),
            "linear",
            np.ones(2),
        )
    with pytest.raises(ValueError, match="P"):
        omapl.hessian_search(rng, 2, P=0)
    with pytest.raises(TypeError, match="methods"):
        omapl.run_methods(d, "O-MAPL", 1, 4, 8, rng, 2, 1)
    with pytest.raises(TypeError, match="methods"):
        omapl.run_methods(d, (), 1, 4, 8, rng, 2, 1)
    with pytest.raises(TypeError, match="cfg"):
        omapl.IIPL("x")
    with pytest.raises(TypeError, match="pos"):
        omapl.grid_observations(np.zeros((2, 3, 2)), np.zeros((2, 3, 2), int), 5)
    with pytest.raises(ValueError, match="size"):
        omapl.grid_observations(np.zeros((2, 3, 2), int), np.zeros((2, 3, 2), int), 0)
    with pytest.raises(ValueError, match="obs"):
        omapl.mpe_expert_actions(np.zeros(5), 3)
    with pytest.raises(ValueError, match="n_landmarks"):
        omapl.mpe_expert_actions(np.zeros((3, 18)), -1)
    with pytest.raises(TypeError, match="adapter"):
        omapl.generate_mpe_dataset("x", 0.1, 2, rng)
    b = d.batch
    args = [
        x.numpy()[:, :0]
        for x in (b.obs, b.next_obs, b.state, b.next_state, b.actions, b.dones, b.avail)
    ]
    with pytest.raises(ValueError, match="B, T, N, o >= 1"):
        omapl.make_pair_batch(*args, b.y.numpy()[:0])


def test_networks_name_a_wrong_observation_shape():
    q, v = omapl.LocalQNet(4, 3, 2, 8), omapl.LocalVNet(4, 2, 8)
    pi = omapl.LocalActor(4, 3, 2, 8)
    good, bad = torch.zeros(5, 2, 4), torch.zeros(5, 3, 4)
    assert q(good, torch.zeros(5, 2, dtype=torch.int64)).shape == (5, 2) and v(
        good
    ).shape == (5, 2)
    with pytest.raises(ValueError, match=r"obs must have shape \(\.\.\., 2, 4\)"):
        q(bad, torch.zeros(5, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="obs"):
        v(torch.zeros(5, 2, 6))
    with pytest.raises(ValueError, match="obs"):
        pi.act(bad)
    with pytest.raises(TypeError, match="obs"):
        omapl.with_agent_id(torch.zeros(5, 2, 4, dtype=torch.int64))
