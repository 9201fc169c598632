"""Kernel tests for kernels/grokking: the NumPy reference against a naive per-configuration loop
(the official code's update), NVRTC compilation, and GPU parity (marked gpu)."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.kernels import compile_ptx
from icml25.kernels.grokking import grok_steps, grok_steps_reference


def _problem(B: int, shared: bool, seed: int = 0, N: int = 20, n: int = 50):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, n) if shared else (B, N, n)) / np.sqrt(N)
    a_star = np.zeros((B, n))
    for b in range(B):
        a_star[b, rng.choice(n, 3, replace=False)] = rng.standard_normal(3) / np.sqrt(n)
    y = a_star @ X.T if shared else np.einsum("bjn,bn->bj", X, a_star)
    a0 = 1e-3 * rng.standard_normal((B, n))
    alpha = rng.uniform(0.05, 0.15, B)
    beta1 = 10.0 ** rng.uniform(-5, -3, B)
    beta2 = np.where(np.arange(B) % 2 == 0, 0.0, 1e-3)
    return X, y, a0, alpha, beta1, beta2, a_star


def _naive(X, y, a, alpha, beta1, beta2, steps, method):
    """One configuration, written like the official NumPy loop."""
    a = a.copy()
    P = X.T @ np.linalg.inv(X @ X.T)
    for _ in range(steps):
        grad = X.T @ (X @ a - y)
        if method == "ista":
            v = a - alpha * (grad + beta2 * a)
            a = np.sign(v) * np.maximum(np.abs(v) - alpha * beta1, 0.0)
        else:
            a = a - alpha * (grad + beta2 * a + beta1 * np.sign(a))
            if method == "proj":
                a = a - P @ (X @ a - y)
    return a


@pytest.mark.parametrize("method", ["sub", "ista", "proj"])
@pytest.mark.parametrize("shared", [True, False])
def test_grok_steps_reference_matches_naive_loop(method, shared):
    B, steps = 4, 300
    X, y, a0, alpha, beta1, beta2, a_star = _problem(B, shared)
    P = None
    if method == "proj":
        P = (
            X.T @ np.linalg.inv(X @ X.T)
            if shared
            else np.stack([Xb.T @ np.linalg.inv(Xb @ Xb.T) for Xb in X])
        )
    a, rec = grok_steps_reference(
        X, y, a0, alpha, beta1, beta2, a_star, steps, 100, method, P
    )
    for b in range(B):
        Xb = X if shared else X[b]
        want = _naive(Xb, y[b], a0[b], alpha[b], beta1[b], beta2[b], steps, method)
        np.testing.assert_allclose(a[b], want, rtol=1e-10, atol=1e-14)
        # the last record is the final state
        assert rec[-1, b, 0] == pytest.approx(
            np.linalg.norm(Xb @ want - y[b]) / np.linalg.norm(y[b]), rel=1e-8
        )
        assert rec[-1, b, 1] == pytest.approx(
            np.linalg.norm(want - a_star[b]) / np.linalg.norm(a_star[b]), rel=1e-8
        )
        assert rec[-1, b, 3] == pytest.approx(np.abs(want).sum(), rel=1e-10)


def test_grok_steps_records_shape_and_initial_state():
    X, y, a0, alpha, beta1, beta2, a_star = _problem(3, True)
    a, rec = grok_steps_reference(X, y, a0, alpha, beta1, beta2, a_star, 250, 50)
    assert rec.shape == (6, 3, 5)
    np.testing.assert_allclose(rec[0, :, 4], np.linalg.norm(a0, axis=1))
    assert np.all(rec[:, :, 2] <= X.shape[1])


def test_grok_steps_dispatcher_uses_reference_without_gpu(monkeypatch):
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    X, y, a0, alpha, beta1, beta2, a_star = _problem(2, False)
    a1, r1 = grok_steps(X, y, a0, alpha, beta1, beta2, a_star, 100, 10)
    a2, r2 = grok_steps_reference(X, y, a0, alpha, beta1, beta2, a_star, 100, 10)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(r1, r2)


def test_grokking_cu_compiles_with_nvrtc():
    ptx = compile_ptx("grokking")
    assert "grok_steps" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["sub", "ista", "proj"])
@pytest.mark.parametrize("shared", [True, False])
def test_grok_steps_gpu_matches_reference_after_1e4_steps(
    method, shared
):  # pragma: no cover - needs a GPU
    from icml25.kernels.grokking import grok_steps_gpu

    B, steps = 8, 10_000
    X, y, a0, alpha, beta1, beta2, a_star = _problem(B, shared, seed=1)
    P = None
    if method == "proj":
        P = (
            X.T @ np.linalg.inv(X @ X.T)
            if shared
            else np.stack([Xb.T @ np.linalg.inv(Xb @ Xb.T) for Xb in X])
        )
    a_ref, rec_ref = grok_steps_reference(
        X, y, a0, alpha, beta1, beta2, a_star, steps, 1000, method, P
    )
    a_gpu, rec_gpu = grok_steps_gpu(
        X, y, a0, alpha, beta1, beta2, a_star, steps, 1000, method, P
    )
    a_gpu, rec_gpu = a_gpu.get(), rec_gpu.get()
    rel = np.linalg.norm(a_gpu - a_ref, axis=1) / np.linalg.norm(a_ref, axis=1)
    assert np.all(rel < 1e-10), rel
    np.testing.assert_allclose(
        rec_gpu[:, :, [0, 1, 3, 4]], rec_ref[:, :, [0, 1, 3, 4]], rtol=1e-8, atol=1e-14
    )


def test_grok_steps_reference_trajectory_agrees_after_1e4_steps():
    # the contract the GPU kernel is held to, here for the batched
    # reference vs the per-config loop
    B, steps = 2, 10_000
    X, y, a0, alpha, beta1, beta2, a_star = _problem(B, False, seed=3)
    a, _ = grok_steps_reference(X, y, a0, alpha, beta1, beta2, a_star, steps, 1000)
    for b in range(B):
        want = _naive(X[b], y[b], a0[b], alpha[b], beta1[b], beta2[b], steps, "sub")
        assert np.linalg.norm(a[b] - want) / np.linalg.norm(want) < 1e-10


def _official_loop(X, y, a, alpha, beta1, beta2, n_steps):
    """The official code's loop for one problem (grad = X^T (X a - y) + beta2 a + beta1 sign(a))."""
    a = a.copy()
    for _ in range(n_steps):
        grad = X.T @ (X @ a - y)
        grad = grad + beta2 * a
        grad = grad + beta1 * np.sign(a)
        a = a - alpha * grad
    return a


@pytest.mark.parametrize("beta2", [0.0, 1e-3])
def test_one_problem_reference_is_the_official_loop_bit_for_bit(beta2):
    X, y, a0, alpha, beta1, _, a_star = _problem(1, True)
    want = _official_loop(X, y[0], a0[0], alpha[0], beta1[0], beta2, 2000)
    b2 = np.array([beta2])
    a_shared, rec_shared = grok_steps_reference(
        X, y, a0, alpha, beta1, b2, a_star, 2000, 500
    )
    a_stack, rec_stack = grok_steps_reference(
        X[None], y, a0, alpha, beta1, b2, a_star, 2000, 500
    )
    assert a_shared.shape == (1, X.shape[1]) and rec_shared.shape == (5, 1, 5)
    np.testing.assert_array_equal(a_shared[0], want)
    np.testing.assert_array_equal(a_stack, a_shared)
    np.testing.assert_array_equal(rec_stack, rec_shared)


@pytest.mark.parametrize("fn", [grok_steps, grok_steps_reference])
def test_grok_steps_refuses_records_that_cannot_fit_before_any_step(fn):
    """Newcomer: n_steps=10**12 raised MemoryError inside grok_steps_reference (np.empty of the records)."""
    import time

    from icml25.checks import TooLargeError

    X, y, a0, alpha, beta1, beta2, a_star = _problem(2, True)
    t0 = time.perf_counter()
    with pytest.raises(TooLargeError, match=r"grok_steps.*n_steps=1000000000000"):
        fn(X, y, a0, alpha, beta1, beta2, a_star, 10**12, 100)
    assert time.perf_counter() - t0 < 1.0
