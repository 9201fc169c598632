"""Kernels of chapter 18 (``kernels/mdlm_sampler``): the fused reverse step and the Pareto reward."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from icml25.kernels import compile_ptx
from icml25.kernels import mdlm_sampler as ks

MASK = 1


def _inputs(B=4, L=7, V=9, seed=0, frac_masked=0.6):
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(B, L, V, generator=g)
    p[..., MASK] = 0
    p = p / p.sum(-1, keepdim=True)
    z = torch.randint(2, V, (B, L), generator=g)
    z[torch.rand(B, L, generator=g) < frac_masked] = MASK
    u = torch.rand(B, L, V, generator=g).clamp(1e-10, 1 - 1e-7)
    return p, z, -torch.log(-torch.log(u))


def _brute_step(p, z, t, s, gum):
    """Per-position loop over the unnormalised weights p (t - s) and s, by Gumbel-max."""
    out = z.clone()
    B, L, V = p.shape
    for b, l in itertools.product(range(B), range(L)):
        if int(z[b, l]) != MASK:
            continue
        w = [float(p[b, l, v]) * (t - s) if v != MASK else s for v in range(V)]
        sc = [
            (math.log(x) if x > 0 else -math.inf) + float(gum[b, l, v])
            for v, x in enumerate(w)
        ]
        out[b, l] = int(np.argmax(sc))
    return out


def test_reverse_step_matches_brute_force():
    p, z, g = _inputs()
    got = ks.reverse_step_reference(p, z, 0.7, 0.4, g, MASK)
    assert torch.equal(got, _brute_step(p, z, 0.7, 0.4, g))


def test_reverse_step_keeps_visible_tokens_and_final_step_unmasks_all():
    p, z, g = _inputs(B=16, L=20)
    got = ks.reverse_step_kernel(p, z, 0.5, 0.2, g, MASK)
    vis = z != MASK
    assert torch.equal(got[vis], z[vis])
    last = ks.reverse_step_kernel(p, z, 0.3, 0.0, g, MASK)  # s = 0: [MASK] has weight 0
    assert not (last == MASK).any()


def test_reverse_step_unmasks_at_rate_and_samples_p():
    """Chi-square: a masked position stays masked w.p. s/t and otherwise draws v w.p. p_v."""
    from scipy import stats

    V, n = 6, 40_000
    g = torch.Generator().manual_seed(3)
    pv = torch.tensor([0.4, 0.0, 0.3, 0.15, 0.1, 0.05])
    p = pv.expand(1, n, V).clone()
    z = torch.full((1, n), MASK)
    u = torch.rand(1, n, V, generator=g).clamp(1e-10, 1 - 1e-7)
    t, s = 0.8, 0.5
    out = ks.reverse_step_reference(p, z, t, s, -torch.log(-torch.log(u)), MASK)[0]
    counts = np.bincount(out.numpy(), minlength=V)
    expected = (
        np.array([float(pv[v]) * (t - s) / t if v != MASK else s / t for v in range(V)])
        * n
    )
    keep = expected > 0
    assert counts[~keep].sum() == 0
    chi2, pval = stats.chisquare(counts[keep], expected[keep])
    assert pval > 1e-3, (counts, expected)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(t=1.2), "t"),
        (dict(s=-0.1), "s"),
        (dict(t=0.3, s=0.3), "s must be < t"),
        (dict(mask_id=99), "mask_id"),
    ],
)
def test_reverse_step_bad_scalars(kw, match):
    p, z, g = _inputs()
    args = dict(t=0.6, s=0.3, mask_id=MASK) | kw
    with pytest.raises(ValueError, match=match):
        ks.reverse_step_reference(p, z, args["t"], args["s"], g, args["mask_id"])


def test_reverse_step_bad_shapes():
    p, z, g = _inputs()
    with pytest.raises(ValueError, match="z_t"):
        ks.reverse_step_reference(p, z[:, :-1], 0.6, 0.3, g, MASK)
    with pytest.raises(ValueError, match="gumbel"):
        ks.reverse_step_reference(p, z, 0.6, 0.3, g[..., :-1], MASK)
    with pytest.raises(ValueError, match="p_x0"):
        ks.reverse_step_reference(p[0], z, 0.6, 0.3, g, MASK)
    bad = p.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="p_x0"):
        ks.reverse_step_reference(bad, z, 0.6, 0.3, g, MASK)
    with pytest.raises(ValueError, match="integer"):
        ks.reverse_step_reference(p, z.float(), 0.6, 0.3, g, MASK)
    with pytest.raises(ValueError, match="gumbel"):
        ks.reverse_step_reference(
            p, z, 0.6, 0.3, torch.full_like(g, float("nan")), MASK
        )
    with pytest.raises(ValueError, match="z_t"):
        ks.reverse_step_reference(
            p, torch.full_like(z, p.shape[-1] + 3), 0.6, 0.3, g, MASK
        )
    with pytest.raises(ValueError, match="z_t"):
        ks.reverse_step_reference(p, torch.full_like(z, -1), 0.6, 0.3, g, MASK)


def _brute_reward(S, F):
    n, K = S.shape
    if len(F) == 0:
        return np.ones((n, K)), np.zeros(n, bool)
    R = np.array(
        [[sum(S[i, k] >= f[k] for f in F) / len(F) for k in range(K)] for i in range(n)]
    )
    dom = np.array(
        [
            any(
                all(f[k] >= S[i, k] for k in range(K))
                and any(f[k] > S[i, k] for k in range(K))
                for f in F
            )
            for i in range(n)
        ]
    )
    return R, dom


def test_pareto_reward_by_hand():
    F = np.array([[0.2, 0.9], [0.5, 0.5], [0.9, 0.1]])
    S = np.array([[0.5, 0.5], [0.1, 0.95]])
    R, dom = ks.pareto_reward(S, F)
    # candidate 0: x >= 0.2, 0.5 (2 of 3); y >= 0.5, 0.1 (2 of 3); it equals a member:
    # not dominated candidate 1: x >= none (0 of 3); y >= all (3 of 3)
    assert np.allclose(R, [[2 / 3, 2 / 3], [0.0, 1.0]])
    assert dom.tolist() == [False, False]
    R, dom = ks.pareto_reward(np.array([[0.1, 0.1]]), F)
    assert dom.tolist() == [True] and np.allclose(R, [[0.0, 1 / 3]])


def test_pareto_reward_random_and_empty_front():
    rng = np.random.default_rng(0)
    for _ in range(20):
        S = rng.integers(0, 4, size=(7, 3)).astype(float)
        F = rng.integers(0, 4, size=(rng.integers(0, 6), 3)).astype(float)
        R, dom = ks.pareto_reward(S, F)
        R0, dom0 = _brute_reward(S, F)
        assert np.allclose(R, R0) and np.array_equal(dom, dom0)
    R, dom = ks.pareto_reward(np.zeros((2, 4)), np.zeros((0, 4)))
    assert np.array_equal(R, np.ones((2, 4))) and not dom.any()


@pytest.mark.parametrize(
    "S, F, match",
    [
        (np.zeros(3), np.zeros((1, 3)), "S"),
        (np.zeros((2, 3)), np.zeros((1, 2)), "F"),
        (np.array([[np.nan, 0.0]]), np.zeros((1, 2)), "S"),
        (np.zeros((1, 2)), np.array([[np.inf, 0.0]]), "F"),
    ],
)
def test_pareto_reward_bad_inputs(S, F, match):
    with pytest.raises(ValueError, match=match):
        ks.pareto_reward(S, F)


def test_compiles():
    ptx = compile_ptx("mdlm_sampler")
    assert "reverse_step" in ptx and "pareto_reward" in ptx


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    import cupy as cp

    for seed in range(3):
        p, z, g = _inputs(B=50, L=96, V=40, seed=seed)
        want = ks.reverse_step_reference(p, z, 0.6, 0.55, g, MASK)
        got = cp.asnumpy(
            ks.reverse_step_gpu(
                cp.asarray(p.numpy()),
                cp.asarray(z.numpy().astype(np.int32)),
                0.6,
                0.55,
                cp.asarray(g.numpy()),
                MASK,
            )
        )
        assert (got == want.numpy()).mean() > 0.9999
        got0 = cp.asnumpy(
            ks.reverse_step_gpu(
                cp.asarray(p.numpy()),
                cp.asarray(z.numpy().astype(np.int32)),
                0.3,
                0.0,
                cp.asarray(g.numpy()),
                MASK,
            )
        )
        assert (got0 != MASK).all()
    rng = np.random.default_rng(1)
    S, F = (
        rng.random((500, 5)).astype(np.float32),
        rng.random((100, 5)).astype(np.float32),
    )
    R, dom = ks.pareto_reward_gpu(S, F)
    R0, dom0 = ks.pareto_reward_reference(S, F)
    assert np.allclose(cp.asnumpy(R), R0, atol=1e-6) and np.array_equal(
        cp.asnumpy(dom), dom0
    )
    R, dom = ks.pareto_reward_gpu(S, np.zeros((0, 5), np.float32))
    assert np.allclose(cp.asnumpy(R), 1.0) and not cp.asnumpy(dom).any()
