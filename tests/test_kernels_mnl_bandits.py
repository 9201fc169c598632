"""Kernel references of chapter 11 against independent definitions; NVRTC compile; GPU parity."""

from __future__ import annotations

import numpy as np
import pytest

from icml25 import mnl_bandits as mnl
from icml25.kernels import mnl_bandits


def _utilities_instance(seed, R, N, d):
    """Random (X, w, H_inv, beta) of optimistic_utilities: H_inv symmetric positive definite."""
    rng = np.random.default_rng(seed)
    X, w = rng.normal(size=(R, N, d)), rng.normal(size=(R, d))
    A = rng.normal(size=(R, d, d))
    H_inv = np.linalg.inv(A @ A.transpose(0, 2, 1) + np.eye(d))
    return X, w, H_inv, rng.random(R) * 5


def test_optimistic_utilities_reference_matches_loop():
    R, N, d = 3, 7, 4
    X, w, H_inv, beta = _utilities_instance(0, R, N, d)
    alpha = mnl_bandits.optimistic_utilities_reference(X, w, H_inv, beta)
    for r in range(R):
        for i in range(N):
            x = X[r, i]
            assert alpha[r, i] == pytest.approx(
                x @ w[r] + beta[r] * np.sqrt(x @ H_inv[r] @ x), abs=1e-12
            )


def test_assortment_reference_matches_lp_and_brute_force():
    rng = np.random.default_rng(1)
    R, N = 30, 8
    v, r, v0 = (
        np.exp(rng.normal(size=(R, N))),
        rng.random((R, N)),
        rng.uniform(0.2, 4, R),
    )
    for K in (1, 3, 8):
        mask, rev = mnl_bandits.assortment_bisection_reference(v, r, K, v0)
        for i in range(R):
            _, brute = mnl.optimal_assortment(v[i], r[i], K, v0[i], method="brute")
            _, lp = mnl.optimal_assortment(v[i], r[i], K, v0[i], method="lp")
            assert rev[i] == pytest.approx(brute, abs=1e-12)
            assert rev[i] == pytest.approx(lp, abs=1e-8)
            assert mask[i].sum() <= K
            assert mnl.expected_revenue(
                v[i], r[i], np.flatnonzero(mask[i]), v0[i]
            ) == pytest.approx(rev[i])


def test_kernel_reference_bad_shapes():
    with pytest.raises(ValueError, match="w"):
        mnl_bandits.optimistic_utilities_reference(
            np.ones((2, 3, 4)), np.ones((2, 3)), np.ones((2, 4, 4)), np.ones(2)
        )
    with pytest.raises(ValueError, match="K"):
        mnl_bandits.assortment_bisection_reference(
            np.ones((2, 3)), np.ones((2, 3)), 4, np.ones(2)
        )


def test_kernel_reference_refuses_non_finite_negative_or_mistyped_input():
    v, r = np.ones((2, 3)), np.ones((2, 3))
    with pytest.raises(ValueError, match="v must be finite"):
        mnl_bandits.assortment_bisection_reference(
            np.array([[1.0, np.nan, 1.0]] * 2), r, 2, np.ones(2)
        )
    with pytest.raises(ValueError, match="v must be >= 0"):
        mnl_bandits.assortment_bisection_reference(-v, r, 2, np.ones(2))
    with pytest.raises(ValueError, match="v0"):
        mnl_bandits.assortment_bisection_reference(v, r, 2, -np.ones(2))
    with pytest.raises(TypeError, match="K"):
        mnl_bandits.assortment_bisection_reference(v, r, 2.0, np.ones(2))
    X, w, H_inv, beta = _utilities_instance(5, 2, 3, 2)
    X[0, 1, 0] = np.inf
    with pytest.raises(ValueError, match="X must be finite"):
        mnl_bandits.optimistic_utilities_reference(X, w, H_inv, beta)


def test_dispatcher_uses_reference_without_gpu(monkeypatch):
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    rng = np.random.default_rng(2)
    v, r = np.exp(rng.normal(size=(2, 10))), rng.random((2, 10))
    mask, rev = mnl_bandits.assortment_bisection(v, r, 3, np.ones(2))
    assert isinstance(rev, np.ndarray) and mask.shape == (2, 10)
    alpha = mnl_bandits.optimistic_utilities(*_utilities_instance(6, 2, 4, 3))
    assert isinstance(alpha, np.ndarray) and alpha.shape == (2, 4)


@pytest.mark.gpu
def test_dispatchers_return_numpy_on_a_gpu():
    rng = np.random.default_rng(7)
    v, r = np.exp(rng.normal(size=(3, 20))), rng.random((3, 20))
    mask, rev = mnl_bandits.assortment_bisection(v, r, 4, np.ones(3))
    alpha = mnl_bandits.optimistic_utilities(*_utilities_instance(8, 3, 20, 4))
    assert all(type(a) is np.ndarray for a in (mask, rev, alpha))


def test_kernel_compiles_with_nvrtc():
    pytest.importorskip("cupy")
    from icml25.kernels import compile_ptx

    ptx = compile_ptx("mnl_bandits")
    assert "optimistic_utilities" in ptx and "assortment_bisection" in ptx


@pytest.mark.gpu
def test_optimistic_utilities_gpu_matches_reference():
    import cupy as cp

    X, w, H_inv, beta = _utilities_instance(3, 64, 300, 5)
    ref = mnl_bandits.optimistic_utilities_reference(X, w, H_inv, beta)
    out = cp.asnumpy(mnl_bandits.optimistic_utilities_gpu(X, w, H_inv, beta))
    np.testing.assert_allclose(out, ref, atol=1e-10, rtol=1e-10)


@pytest.mark.gpu
def test_assortment_bisection_gpu_matches_reference():
    import cupy as cp

    rng = np.random.default_rng(4)
    for R, N, K in ((50, 100, 5), (20, 1000, 20), (10, 7, 7)):
        v, r, v0 = (
            np.exp(rng.normal(size=(R, N))),
            rng.random((R, N)),
            rng.uniform(0.5, 3, R),
        )
        mask_ref, rev_ref = mnl_bandits.assortment_bisection_reference(v, r, K, v0)
        mask, rev = mnl_bandits.assortment_bisection_gpu(v, r, K, v0)
        np.testing.assert_allclose(cp.asnumpy(rev), rev_ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(cp.asnumpy(mask), mask_ref)
    # uniform rewards: top-K by v
    v = np.exp(rng.normal(size=(8, 50)))
    mask, rev = mnl_bandits.assortment_bisection_gpu(v, np.ones((8, 50)), 4, np.ones(8))
    top = np.argsort(-v, axis=1)[:, :4]
    for i in range(8):
        assert set(np.flatnonzero(cp.asnumpy(mask[i]))) == set(top[i])
