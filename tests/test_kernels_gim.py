"""Kernel family ``gim_kernels``: the sufficient-statistic likelihood against the unfused per-cell sum, the
MMD block sums against ``scipy.spatial.distance.cdist``, bad inputs, and GPU parity (marked ``gpu``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist
from scipy.stats import norm

from icml25.kernels import gim_kernels


def _ll_inputs(seed, K=6, S=5, n=40, d=7, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    R = torch.randn(K, n, d, generator=g, dtype=dtype)
    shift = torch.randn(K, S, d, generator=g, dtype=dtype)
    sigma = torch.rand(d, generator=g, dtype=dtype) + 0.3
    return R, shift, sigma


def test_context_loglik_reference_matches_unfused_float64():
    R, shift, sigma = _ll_inputs(0)
    fused = gim_kernels.context_loglik_reference(
        R.sum(1), (R**2).sum(1), shift, sigma, R.shape[1]
    )
    assert torch.allclose(
        fused, gim_kernels.context_loglik_unfused(R, shift, sigma), rtol=1e-10, atol=0
    )


def test_context_loglik_reference_matches_unfused_float32():
    R, shift, sigma = _ll_inputs(1, dtype=torch.float32)
    fused = gim_kernels.context_loglik_reference(
        R.sum(1), (R**2).sum(1), shift, sigma, R.shape[1]
    )
    assert torch.allclose(
        fused, gim_kernels.context_loglik_unfused(R, shift, sigma), rtol=1e-5, atol=0
    )


def test_unfused_loglik_is_a_sum_of_scipy_normal_logpdfs():
    R, shift, sigma = _ll_inputs(2, K=2, S=3, n=5, d=3)
    want = np.array(
        [
            [
                norm.logpdf(R[k].numpy() - shift[k, s].numpy(), 0, sigma.numpy()).sum()
                for s in range(3)
            ]
            for k in range(2)
        ]
    )
    assert np.allclose(
        gim_kernels.context_loglik_unfused(R, shift, sigma).numpy(), want, rtol=1e-12
    )


def test_context_loglik_dispatcher_is_differentiable_on_cpu():
    R, shift, sigma = _ll_inputs(3)
    shift.requires_grad_(True)
    ll = gim_kernels.context_loglik(R.sum(1), (R**2).sum(1), shift, sigma, R.shape[1])
    ll.sum().backward()
    # d ll / d u_j = (SR_j - n u_j) / sigma_j^2
    want = (R.sum(1)[:, None, :] - R.shape[1] * shift.detach()) / sigma**2
    assert torch.allclose(shift.grad, want, rtol=1e-10)


def test_context_loglik_refuses_bad_input():
    R, shift, sigma = _ll_inputs(4)
    SR, SR2 = R.sum(1), (R**2).sum(1)
    with pytest.raises(ValueError, match="SR2"):
        gim_kernels.context_loglik(SR, SR2[:, :-1], shift, sigma, 40)
    with pytest.raises(ValueError, match="shift"):
        gim_kernels.context_loglik(SR, SR2, shift[:-1], sigma, 40)
    with pytest.raises(ValueError, match="sigma"):
        gim_kernels.context_loglik(SR, SR2, shift, -sigma, 40)
    with pytest.raises(ValueError, match="n"):
        gim_kernels.context_loglik(SR, SR2, shift, sigma, 0)
    bad = SR.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="SR"):
        gim_kernels.context_loglik(bad, SR2, shift, sigma, 40)


def _mmd_inputs(seed, C=4, n=30, m=25, d=6, dtype=np.float64):
    g = np.random.default_rng(seed)
    return g.normal(size=(C, n, d)).astype(dtype), (
        g.normal(size=(C, m, d)) + 0.5
    ).astype(dtype)


def test_mmd_sums_reference_matches_a_python_loop():
    X, Y = _mmd_inputs(5, C=2, n=6, m=4, d=3)
    h = 0.9
    for c in range(2):
        loop = [
            sum(np.exp(-np.sum((a - b) ** 2) / (2 * h * h)) for a in A for b in B)
            for A, B in ((X[c], X[c]), (Y[c], Y[c]), (X[c], Y[c]))
        ]
        assert np.allclose(gim_kernels.mmd_sums_reference(X, Y, h)[c], loop, rtol=1e-12)


def test_mmd_sums_dispatcher_equals_cdist():
    X, Y = _mmd_inputs(6)
    out = gim_kernels.mmd_sums(X, Y, 1.7)
    assert out.shape == (4, 3) and out.dtype == np.float64
    assert np.isclose(
        out[3, 2],
        np.exp(-cdist(X[3], Y[3], "sqeuclidean") / (2 * 1.7**2)).sum(),
        rtol=1e-12,
    )


def test_mmd_sums_refuses_bad_input():
    X, Y = _mmd_inputs(7)
    with pytest.raises(ValueError, match="Y"):
        gim_kernels.mmd_sums(X, Y[:, :, :-1], 1.0)
    with pytest.raises(ValueError, match="h"):
        gim_kernels.mmd_sums(X, Y, 0.0)
    with pytest.raises(ValueError, match="X"):
        gim_kernels.mmd_sums(X[0], Y, 1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,rtol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_context_loglik_gpu_matches_reference(dtype, rtol):  # pragma: no cover - GPU
    import cupy as cp

    R, shift, sigma = _ll_inputs(8, K=300, S=64, n=50, d=30, dtype=dtype)
    args = [R.sum(1), (R**2).sum(1), shift, sigma]
    ref = gim_kernels.context_loglik_reference(*args, 50)
    out = gim_kernels.context_loglik_gpu(
        *[cp.asarray(a.numpy()) for a in args], 50
    ).get()
    assert np.allclose(out, ref.numpy(), rtol=rtol, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-10)])
def test_mmd_sums_gpu_matches_reference(dtype, rtol):  # pragma: no cover - GPU
    X, Y = _mmd_inputs(9, C=280, n=50, m=130, d=20, dtype=dtype)
    assert np.allclose(
        gim_kernels.mmd_sums_gpu(X, Y, 2.5).get(),
        gim_kernels.mmd_sums_reference(X, Y, 2.5),
        rtol=rtol,
        atol=0,
    )
