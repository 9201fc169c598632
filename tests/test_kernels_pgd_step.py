"""Kernels of kernels/pgd_step.cu: references against independent NumPy loops, NVRTC, GPU parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25.kernels import compile_ptx
from icml25.kernels import pgd_step as kern


def _args(shape=(3, 3, 8, 8), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random(shape).astype(np.float32)
    x[0, 0, :2] = 0.0  # pixels at the box edges
    x[0, 1, :2] = 1.0
    delta = rng.uniform(-0.05, 0.05, shape).astype(np.float32)
    grad = rng.normal(size=shape).astype(np.float32)
    grad[1, 0, 0, :4] = 0.0  # sign(0) = 0
    return delta, grad, x


def _step_loop(delta, grad, x, eps, alpha):
    """The update written element by element in float32 (independent of torch)."""
    out = np.empty_like(delta)
    e, a = np.float32(eps), np.float32(alpha)
    for i, (d, g, xi) in enumerate(zip(delta.ravel(), grad.ravel(), x.ravel())):
        s = (
            np.float32(1.0)
            if g > 0
            else (np.float32(-1.0) if g < 0 else np.float32(0.0))
        )
        v = np.float32(d + a * s)
        v = min(max(v, -e), e)
        v = min(max(v, np.float32(-xi)), np.float32(np.float32(1.0) - xi))
        out.ravel()[i] = v
    return out


def test_compiles_with_nvrtc():
    ptx = compile_ptx("pgd_step")
    for name in ("pgd_step", "posterior_stats"):
        assert f".entry {name}" in ptx


@pytest.mark.parametrize("eps,alpha", [(0.05, 1 / 255), (0.01, 0.02), (0.1, 0.003)])
def test_pgd_step_reference_equals_an_elementwise_loop_exactly(eps, alpha):
    delta, grad, x = _args()
    got = kern.pgd_step_reference(delta, grad, x, eps, alpha)
    assert got.dtype == np.float32
    assert np.array_equal(got, _step_loop(delta, grad, x, eps, alpha))
    assert (
        np.all(np.abs(got) <= np.float32(eps))
        and np.all(x + got >= -1e-7)
        and np.all(x + got <= 1 + 1e-7)
    )


def test_pgd_step_dispatcher_torch_and_numpy_paths_agree_bitwise():
    delta, grad, x = _args(seed=1)
    want = kern.pgd_step_reference(delta, grad, x, 0.05, 1 / 255)
    got_np = kern.pgd_step(delta, grad, x, 0.05, 1 / 255)
    got_t = kern.pgd_step(
        *(torch.from_numpy(a) for a in (delta, grad, x)), 0.05, 1 / 255
    )
    assert (
        isinstance(got_t, torch.Tensor)
        and np.array_equal(got_t.numpy(), want)
        and np.array_equal(got_np, want)
    )
    assert np.array_equal(
        kern.pgd_step(
            *(torch.from_numpy(a) for a in (delta, grad, x)),
            0.05,
            1 / 255,
            validate=False,
        ).numpy(),
        want,
    )


def test_pgd_step_zero_gradient_keeps_delta_inside_the_ball():
    delta, _, x = _args(seed=2)
    got = kern.pgd_step(delta, np.zeros_like(delta), x, 0.05, 0.01)
    assert np.array_equal(got, np.clip(delta, -x, 1 - x))


def test_pgd_step_bad_input():
    delta, grad, x = _args()
    with pytest.raises(ValueError, match="grad"):
        kern.pgd_step(delta, grad[:1], x, 0.05, 0.01)
    with pytest.raises(ValueError, match="x"):
        kern.pgd_step(delta, grad, x[:, :1], 0.05, 0.01)
    with pytest.raises(ValueError, match="eps"):
        kern.pgd_step(delta, grad, x, 0.0, 0.01)
    with pytest.raises(ValueError, match="alpha"):
        kern.pgd_step(delta, grad, x, 0.05, -1.0)
    bad = grad.copy()
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="grad"):
        kern.pgd_step(delta, bad, x, 0.05, 0.01)
    with pytest.raises(TypeError, match="delta"):
        kern.pgd_step(np.array(["a"]), grad, x, 0.05, 0.01)
    with pytest.raises(ValueError, match=r"x must be a clean image in \[0, 1\]"):
        kern.pgd_step(delta, grad, x + 1.5, 0.05, 0.01)
    # torch and NumPy mixed: a clear TypeError naming the odd
    # argument, not a silent conversion
    with pytest.raises(TypeError, match="grad"):
        kern.pgd_step(torch.from_numpy(delta), grad, torch.from_numpy(x), 0.05, 0.01)
    with pytest.raises(TypeError, match="x"):
        kern.pgd_step_reference(delta, grad, torch.from_numpy(x), 0.05, 0.01)


def _stats_loop(logvar, g1, g2, lo, hi):
    B = logvar.shape[0]
    out = np.zeros((B, 4))
    for b in range(B):
        lv = logvar[b].ravel().astype(np.float64)
        out[b, 0] = sum(np.exp(v) for v in lv)
        out[b, 1] = sum(0.5 * v for v in lv)
        out[b, 2] = sum(1 for v in lv if v <= lo or v >= hi)
        if g2 is not None:
            out[b, 3] = sum(
                1
                for p, q in zip(g1[b].ravel(), g2[b].ravel())
                if np.sign(p) == np.sign(q)
            )
    return out


@pytest.mark.parametrize("with_g2", [True, False])
def test_posterior_stats_reference_matches_loops(with_g2):
    rng = np.random.default_rng(3)
    logvar = rng.normal(-4, 3, size=(5, 4, 4, 4)).astype(np.float32)
    logvar[0, 0, 0, :3] = 20.0  # at the clamp
    logvar[1, 0, 0, 0] = -30.0
    g1 = rng.normal(size=(5, 3, 8, 8)).astype(np.float32)
    g2 = (
        np.where(rng.random(g1.shape) < 0.3, -g1, g1).astype(np.float32)
        if with_g2
        else None
    )
    if with_g2:
        g1[0, 0, 0, 0] = 0.0
        g2[0, 0, 0, 0] = 0.0
    want = _stats_loop(logvar, g1, g2, -30.0, 20.0)
    got = kern.posterior_stats_reference(logvar, g1, g2)
    assert got.shape == (5, 4) and got.dtype == np.float64
    assert np.allclose(got, want, rtol=1e-6, atol=0)
    assert got[0, 2] == 3 and got[1, 2] == 1
    got_t = kern.posterior_stats(
        torch.from_numpy(logvar),
        torch.from_numpy(g1),
        None if g2 is None else torch.from_numpy(g2),
    )
    assert isinstance(got_t, torch.Tensor) and np.allclose(
        got_t.numpy(), want, rtol=1e-6
    )
    assert np.allclose(kern.posterior_stats(logvar, g1, g2), want, rtol=1e-6)


def test_posterior_stats_bad_input():
    lv = np.zeros((2, 4), np.float32)
    with pytest.raises(ValueError, match="g1"):
        kern.posterior_stats(lv, np.zeros((3, 5), np.float32))
    with pytest.raises(ValueError, match="g2"):
        kern.posterior_stats(
            lv, np.zeros((2, 5), np.float32), np.zeros((2, 6), np.float32)
        )
    with pytest.raises(ValueError, match="logvar"):
        kern.posterior_stats(np.zeros(4, np.float32), np.zeros((4, 1), np.float32))
    with pytest.raises(ValueError, match="logvar"):
        kern.posterior_stats(
            np.full((2, 4), np.inf, np.float32), np.zeros((2, 5), np.float32)
        )


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    import cupy as cp

    delta, grad, x = _args((8, 3, 32, 32), seed=4)
    got = cp.asnumpy(kern.pgd_step_gpu(delta, grad, x, 0.05, 1 / 255))
    # exact
    assert np.array_equal(got, kern.pgd_step_reference(delta, grad, x, 0.05, 1 / 255))
    rng = np.random.default_rng(5)
    lv = rng.normal(-4, 3, size=(8, 4, 8, 8)).astype(np.float32)
    g1, g2 = (
        grad,
        np.where(rng.random(grad.shape) < 0.4, -grad, grad).astype(np.float32),
    )
    got = cp.asnumpy(kern.posterior_stats_gpu(lv, g1, g2, -30.0, 20.0))
    assert np.allclose(got, kern.posterior_stats_reference(lv, g1, g2), rtol=1e-6)
    t = kern.pgd_step(
        *(torch.from_numpy(a).cuda() for a in (delta, grad, x)), 0.05, 1 / 255
    )
    assert t.is_cuda and np.array_equal(
        t.cpu().numpy(), kern.pgd_step_reference(delta, grad, x, 0.05, 1 / 255)
    )
