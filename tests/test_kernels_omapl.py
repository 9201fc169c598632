"""Kernels of kernels/omapl_kernels.cu: the references against per-agent loops and torch, NVRTC compile, GPU parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25.kernels import _splitmix64, compile_ptx, omapl_kernels

MASK = (1 << 64) - 1
MOVE = {0: (0, 0), 1: (0, 1), 2: (0, -1), 3: (1, 0), 4: (-1, 0)}


def _splitmix_py(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _step_loop(pos, actions, landmarks, size):
    """One game at a time, one agent at a time, Python ints."""
    E, N, _ = pos.shape
    new = pos.copy()
    rew = np.zeros(E, np.float32)
    cov = np.zeros(E, bool)
    for e in range(E):
        for i in range(N):
            dx, dy = MOVE[int(actions[e, i])]
            x, y = int(pos[e, i, 0]) + dx, int(pos[e, i, 1]) + dy
            if 0 <= x < size and 0 <= y < size:
                new[e, i] = (x, y)
        D, allc = 0, True
        for lx, ly in landmarks[e]:
            best = min(
                abs(int(new[e, i, 0]) - lx) + abs(int(new[e, i, 1]) - ly)
                for i in range(N)
            )
            D += best
            allc &= best == 0
        C = sum(
            1
            for i in range(N)
            for j in range(i + 1, N)
            if tuple(new[e, i]) == tuple(new[e, j])
        )
        rew[e] = np.float32(np.float32(-D) / np.float32(10)) - np.float32(
            0.5
        ) * np.float32(C)
        cov[e] = allc
    return new, rew, cov


def _game(rng, E=40, N=3, L=3, size=5):
    return (
        rng.integers(0, size, (E, N, 2)).astype(np.int32),
        rng.integers(0, size, (E, L, 2)).astype(np.int32),
    )


def test_compiles_with_nvrtc():
    ptx = compile_ptx("omapl_kernels")
    for name in ("coopgrid_step", "coopgrid_rollout", "segment_rewards", "bt_logits"):
        assert f".entry {name}" in ptx


def test_step_equals_per_agent_loop():
    rng = np.random.default_rng(0)
    for size, N, L in ((5, 3, 3), (4, 4, 2), (7, 2, 1)):
        pos, lm = _game(rng, 60, N, L, size)
        acts = rng.integers(0, 5, (60, N))
        got = omapl_kernels.coopgrid_step_reference(pos, acts, lm, size)
        want = _step_loop(pos, acts, lm, size)
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])  # bit-identical float32
        assert np.array_equal(got[2], want[2])


def test_dispatcher_matches_reference():
    rng = np.random.default_rng(1)
    pos, lm = _game(rng)
    acts = rng.integers(0, 5, (40, 3))
    for a, b in zip(
        omapl_kernels.coopgrid_step(pos, acts, lm, 5),
        omapl_kernels.coopgrid_step_reference(pos, acts, lm, 5),
    ):
        assert np.array_equal(a, b)


def test_rollout_hash_and_expert_by_hand():
    """eps = 1: every action is the hashed draw over available actions, recomputed with Python ints."""
    rng = np.random.default_rng(2)
    pos, lm = _game(rng, 5)
    seed, H = 12345, 6
    acts, rews, P, succ = omapl_kernels.coopgrid_rollout_reference(
        pos, lm, 5, H, 1.0, seed
    )
    mixed = _splitmix_py(seed)
    for e in range(5):
        for t in range(H):
            for i in range(3):
                h = _splitmix_py(mixed ^ ((e * H + t) * 3 + i))
                x, y = P[e, t, i]
                av = [
                    k
                    for k in range(5)
                    if 0 <= x + MOVE[k][0] < 5 and 0 <= y + MOVE[k][1] < 5
                ]
                assert acts[e, t, i] == av[_splitmix_py(h) % len(av)]
    assert np.array_equal(
        _splitmix64(np.array([7], np.uint64)), np.array([_splitmix_py(7)], np.uint64)
    )


def test_expert_reaches_landmarks():
    rng = np.random.default_rng(3)
    pos, lm = _game(rng, 200)
    lm = np.stack([rng.permutation(25)[:3] for _ in range(200)])
    lm = np.stack([lm % 5, lm // 5], -1).astype(np.int32)
    acts, rews, P, succ = omapl_kernels.coopgrid_rollout(pos, lm, 5, 12, 0.0, 0)
    assert succ.all()  # 8 moves at most on a 5 x 5 grid, horizon 12
    # rewards of the roll-out are those of stepping its actions one by one
    for t in range(12):
        _, r, _ = omapl_kernels.coopgrid_step_reference(P[:, t], acts[:, t], lm, 5)
        assert np.array_equal(r, rews[:, t])


def test_bad_inputs_are_named():
    rng = np.random.default_rng(4)
    pos, lm = _game(rng)
    with pytest.raises(ValueError, match="actions"):
        omapl_kernels.coopgrid_step(pos, np.full((40, 3), 7), lm, 5)
    with pytest.raises(ValueError, match="pos"):
        omapl_kernels.coopgrid_step(pos + 10, np.zeros((40, 3), int), lm, 5)
    with pytest.raises(ValueError, match="landmarks"):
        omapl_kernels.coopgrid_step(pos, np.zeros((40, 3), int), lm[:3], 5)
    with pytest.raises(TypeError, match="actions"):
        omapl_kernels.coopgrid_step(pos, np.zeros((40, 3)), lm, 5)
    with pytest.raises(ValueError, match="eps"):
        omapl_kernels.coopgrid_rollout(pos, lm, 5, 12, 1.5, 0)
    with pytest.raises(ValueError, match="seed"):
        omapl_kernels.coopgrid_rollout(pos, lm, 5, 12, 0.5, -1)


def _segments(B=6, T=5, N=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, v = torch.randn(2, B, T, N, generator=g), torch.randn(2, B, T, N, generator=g)
    w, wn = torch.rand(2, B, T, N, generator=g), torch.rand(2, B, T, N, generator=g)
    b, bn = torch.randn(2, B, T, generator=g), torch.randn(2, B, T, generator=g)
    d = torch.zeros(2, B, T)
    d[0, 0, 2] = 1.0
    d[1, 3, 0] = 1.0
    d[:, :, -1] = 1.0
    return q, w, b, v, wn, bn, d


def test_segment_logits_against_lib_and_bce():
    from icml25 import omapl as om

    args = _segments()
    r, logit = omapl_kernels.segment_logits_reference(*args, 0.9)
    q, w, b, v, wn, bn, d = args
    want_r = om.implied_reward(q, w, b, v, wn, bn, d, 0.9) * om.segment_mask(d)
    assert torch.allclose(r, want_r, atol=1e-6)
    assert torch.allclose(logit, want_r.sum(-1)[0] - want_r.sum(-1)[1], atol=1e-5)
    assert float(r[0, 0, 3:].abs().max()) == 0.0  # masked after the done at t = 2
    r2, logit2 = omapl_kernels.segment_logits(*args, 0.9)
    assert torch.equal(r2, r) and torch.equal(logit2, logit)


def test_segment_logits_bad_inputs():
    q, w, b, v, wn, bn, d = _segments()
    with pytest.raises(ValueError, match="gamma"):
        omapl_kernels.segment_logits(q, w, b, v, wn, bn, d, 1.0)
    with pytest.raises(ValueError, match="w_next"):
        omapl_kernels.segment_logits(q, w, b, v, wn[:, :2], bn, d, 0.9)
    with pytest.raises(ValueError, match="dones"):
        omapl_kernels.segment_logits(q, w, b, v, wn, bn, d * 0.5 + 0.25, 0.9)
    with pytest.raises(ValueError, match="q"):
        omapl_kernels.segment_logits(q[:1], w, b, v, wn, bn, d, 0.9)


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    import cupy as cp

    rng = np.random.default_rng(5)
    pos, lm = _game(rng, 5000, 6, 6, 10)
    acts = rng.integers(0, 5, (5000, 6))
    g = [x.get() for x in omapl_kernels.coopgrid_step_gpu(pos, acts, lm, 10)]
    c = omapl_kernels.coopgrid_step_reference(pos, acts, lm, 10)
    assert (
        np.array_equal(g[0], c[0])
        and np.array_equal(g[1], c[1])
        and np.array_equal(g[2].astype(bool), c[2])
    )
    g = [x.get() for x in omapl_kernels.coopgrid_rollout_gpu(pos, lm, 10, 20, 0.3, 99)]
    c = omapl_kernels.coopgrid_rollout_reference(pos, lm, 10, 20, 0.3, 99)
    for a, b in zip(g[:3], c[:3]):
        assert np.array_equal(a, b)
    assert np.array_equal(g[3].astype(bool), c[3])
    args = [x.cuda() for x in _segments(64, 12, 6)]
    r, logit = omapl_kernels.segment_logits_gpu(*args, 0.99)
    r0, l0 = omapl_kernels.segment_logits_reference(*[x.cpu() for x in args], 0.99)
    assert torch.allclose(r.cpu(), r0, atol=1e-5) and torch.allclose(
        logit.cpu(), l0, atol=1e-5
    )
    del cp
