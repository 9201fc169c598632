"""Kernels of kernels/pars_kernels.cu: references against independent loops and torch modules, NVRTC, GPU parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25.kernels import compile_ptx, pars_kernels

MASK = (1 << 64) - 1


def _splitmix_py(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _layer_args(E=3, B=5, I=4, H=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(E, B, I, generator=g),
        torch.randn(E, I, H, generator=g),
        torch.randn(E, H, generator=g),
        1 + 0.1 * torch.randn(E, H, generator=g),
        0.1 * torch.randn(E, H, generator=g),
    )


def test_compiles_with_nvrtc():
    ptx = compile_ptx("pars_kernels")
    for name in ("ensemble_layer", "td_target", "infeasible_actions"):
        assert f".entry {name}" in ptx


@pytest.mark.parametrize("layer_norm", [True, False])
def test_ensemble_layer_matches_per_member_torch_modules(layer_norm):
    x, W, b, g, beta = _layer_args()
    y = pars_kernels.ensemble_layer_reference(x, W, b, g, beta, layer_norm=layer_norm)
    for e in range(x.shape[0]):
        lin = torch.nn.Linear(4, 16)
        ln = torch.nn.LayerNorm(16, eps=pars_kernels.LN_EPS)
        with torch.no_grad():
            lin.weight.copy_(W[e].T)
            lin.bias.copy_(b[e])
            ln.weight.copy_(g[e])
            ln.bias.copy_(beta[e])
        z = lin(x[e])
        want = torch.relu(ln(z) if layer_norm else z)
        assert torch.allclose(y[e], want, atol=1e-5)


def test_ensemble_layer_dispatcher_equals_reference_and_keeps_gradient():
    x, W, b, g, beta = _layer_args(seed=1)
    W.requires_grad_(True)
    y = pars_kernels.ensemble_layer(x, W, b, g, beta)
    assert torch.equal(y, pars_kernels.ensemble_layer_reference(x, W, b, g, beta))
    assert torch.equal(pars_kernels.ensemble_layer(x, W, b, g, beta, validate=False), y)
    y.sum().backward()
    assert W.grad is not None and torch.isfinite(W.grad).all()


def test_ensemble_layer_bad_input():
    x, W, b, g, beta = _layer_args()
    with pytest.raises(ValueError, match="W"):
        pars_kernels.ensemble_layer(x, W[:, :2], b, g, beta)
    with pytest.raises(ValueError, match="beta"):
        pars_kernels.ensemble_layer(x, W, b, g, beta[:, :3])
    with pytest.raises(ValueError, match="x"):
        pars_kernels.ensemble_layer(x[0], W, b, g, beta)


def test_td_target_against_a_per_member_loop():
    rng = np.random.default_rng(0)
    E, B = 10, 64
    q = rng.normal(size=(E, B)).astype(np.float32) * 50
    r = rng.normal(size=B).astype(np.float32)
    d = (rng.random(B) < 0.2).astype(np.float32)
    members = rng.choice(E, size=3, replace=False)
    y = pars_kernels.td_target(q, members, r, d, 10.0, 0.99)
    for j in range(B):
        m = min(float(q[e, j]) for e in members)
        assert abs(y[j] - (10.0 * r[j] + 0.99 * (1 - d[j]) * m)) < 1e-3
    yt = pars_kernels.td_target(
        torch.as_tensor(q),
        torch.as_tensor(members),
        torch.as_tensor(r),
        torch.as_tensor(d),
        10.0,
        0.99,
    )
    assert isinstance(yt, torch.Tensor) and np.allclose(yt.numpy(), y, atol=1e-4)


def test_td_target_bad_input():
    q = np.zeros((4, 8), np.float32)
    r = d = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="members"):
        pars_kernels.td_target(q, [0, 4], r, d, 1.0, 0.9)
    with pytest.raises(ValueError, match="members"):
        pars_kernels.td_target(q, [1, 1], r, d, 1.0, 0.9)
    with pytest.raises(ValueError, match="r"):
        pars_kernels.td_target(q, [0], np.zeros(7, np.float32), d, 1.0, 0.9)
    with pytest.raises(ValueError, match="c"):
        pars_kernels.td_target(q, [0], r, d, 0.0, 0.9)
    with pytest.raises(ValueError, match="gamma"):
        pars_kernels.td_target(q, [0], r, d, 1.0, 1.5)


def test_infeasible_sampler_is_the_hash_written_out_and_never_lands_in_the_box():
    a = pars_kernels.infeasible_actions(300, 3, 100.0, seed=12345)
    assert a.shape == (300, 3) and a.dtype == np.float32
    mixed = _splitmix_py(12345)
    for i in (0, 1, 7, 899):
        h = _splitmix_py(mixed ^ i)
        mag = 100.0 * (1.0 + (h >> 11) / 2.0**53)
        assert abs(a.flat[i] - (-mag if h & 1 else mag)) < 1e-3
    assert (np.abs(a) >= 100.0).all() and (np.abs(a) <= 200.0).all()


def test_infeasible_sampler_distribution():
    """Signs fair and magnitudes uniform on [U, 2U]: Kolmogorov-Smirnov against scipy's uniform."""
    from scipy import stats

    a = pars_kernels.infeasible_actions(20_000, 2, 1000.0, seed=7).ravel()
    assert abs((a > 0).mean() - 0.5) < 0.02  # 40k fair signs: sd 0.0025
    assert (
        stats.kstest(np.abs(a), stats.uniform(loc=1000.0, scale=1000.0).cdf).pvalue
        > 1e-3
    )


def test_infeasible_sampler_bad_input():
    with pytest.raises(ValueError, match="U"):
        pars_kernels.infeasible_actions(4, 2, 1.0, seed=0)
    with pytest.raises(ValueError, match="B"):
        pars_kernels.infeasible_actions(0, 2, 10.0, seed=0)
    with pytest.raises(ValueError, match="seed"):
        pars_kernels.infeasible_actions(4, 2, 10.0, seed=-1)


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    import cupy as cp

    x, W, b, g, beta = _layer_args(E=4, B=33, I=6, H=256, seed=3)
    for ln in (True, False):
        want = pars_kernels.ensemble_layer_reference(
            x, W, b, g, beta, layer_norm=ln
        ).numpy()
        got = cp.asnumpy(
            pars_kernels.ensemble_layer_gpu(
                *(t.numpy() for t in (x, W, b, g, beta)), layer_norm=ln
            )
        )
        assert np.allclose(got, want, atol=1e-4)
    rng = np.random.default_rng(1)
    q = rng.normal(size=(10, 500)).astype(np.float32)
    r, d = (
        rng.normal(size=500).astype(np.float32),
        (rng.random(500) < 0.1).astype(np.float32),
    )
    want = pars_kernels.td_target_reference(q, [2, 5, 7], r, d, 100.0, 0.99)
    assert np.allclose(
        cp.asnumpy(pars_kernels.td_target_gpu(q, [2, 5, 7], r, d, 100.0, 0.99)),
        want,
        atol=1e-3,
    )
    want = pars_kernels.infeasible_actions_reference(1000, 4, 100.0, 99)
    assert np.allclose(
        cp.asnumpy(pars_kernels.infeasible_actions_gpu(1000, 4, 100.0, 99)),
        want,
        rtol=1e-6,
    )


def test_review_kernel_inputs_refused_up_front():
    """Review: a dtype mix used to fail inside torch.baddbmm, a huge sampler size inside NumPy,
    and U > 1e37 gave infinite float32 samples."""
    from icml25.checks import TooLargeError

    x = torch.randn(2, 3, 4, dtype=torch.float64)
    W, b, g, beta = (
        torch.randn(2, 4, 5),
        torch.randn(2, 5),
        torch.ones(2, 5),
        torch.zeros(2, 5),
    )
    with pytest.raises(TypeError, match="W must have the dtype of x"):
        pars_kernels.ensemble_layer(x, W, b, g, beta)
    with pytest.raises(TooLargeError, match="B="):
        pars_kernels.infeasible_actions(10**12, 2, 100.0, 0)
    with pytest.raises(ValueError, match="U"):
        pars_kernels.infeasible_actions(4, 2, 1e39, 0)
    assert np.isfinite(pars_kernels.infeasible_actions(4, 2, 1e37, 0)).all()
