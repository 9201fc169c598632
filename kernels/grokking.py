"""Batched (sub)gradient descent for the sparse-recovery experiments of chapter 16.

One call runs ``steps`` updates of B independent configurations (alpha_b, beta1_b, beta2_b, seed,
tau, ...) of the penalised least-squares problem of Tikeng Notsawo et al. (ICML 2025, Sec. 3)

    min_a  1/2 ||X a - y||^2 + beta2/2 ||a||^2 + beta1 ||a||_1

and records the relative train and recovery errors and the l0/l1/l2 norms every ``eval_every``
steps. ``grok_steps_reference`` is the readable NumPy loop, ``grok_steps_gpu`` launches
``grokking.cu`` (one thread block per configuration, the whole loop inside the kernel) and
``grok_steps`` dispatches. The error norms are reduced inside the kernel, so nothing leaves the
GPU between records.
"""

from __future__ import annotations

import numpy as np

from icml25.common import gpu_available

__all__ = ["METHODS", "RECORD_FIELDS", "grok_steps_reference", "grok_steps_gpu", "grok_steps"]

METHODS = {"sub": 0, "ista": 1, "proj": 2}
RECORD_FIELDS = ("train_error", "recovery_error", "l0", "l1", "l2")
_THREADS = 128


def _record(a: np.ndarray, R: np.ndarray, y: np.ndarray, a_star: np.ndarray, thr: float) -> np.ndarray:
    out = np.empty((a.shape[0], 5))
    out[:, 0] = np.linalg.norm(R, axis=1) / np.linalg.norm(y, axis=1)
    out[:, 1] = np.linalg.norm(a - a_star, axis=1) / np.linalg.norm(a_star, axis=1)
    out[:, 2] = (np.abs(a) > thr).sum(axis=1)
    out[:, 3] = np.abs(a).sum(axis=1)
    out[:, 4] = np.linalg.norm(a, axis=1)
    return out


def grok_steps_reference(
    X: np.ndarray,
    y: np.ndarray,
    a: np.ndarray,
    alpha: np.ndarray,
    beta1: np.ndarray,
    beta2: np.ndarray,
    a_star: np.ndarray,
    steps: int,
    eval_every: int,
    method: str = "sub",
    P: np.ndarray | None = None,
    l0_threshold: float = 1e-4,
) -> tuple[np.ndarray, np.ndarray]:
    """NumPy reference of the batched update (the contract of ``grokking.cu``).

    Per step, for every configuration b: ``R = X a - y``, ``G = X^T R``, then
    ``a <- a - alpha (G + beta2 a + beta1 sign(a))`` (``"sub"``, ``"proj"``) or
    ``a <- soft(a - alpha (G + beta2 a), alpha beta1)`` (``"ista"``); ``"proj"`` then projects
    onto ``{a : X a = y}`` with ``a <- a - P (X a - y)``, ``P = X^T (X X^T)^{-1}``.

    Args:
        X: (N, n) shared or (B, N, n) per-configuration float64 measurements.
        y: (B, N) float64 targets.
        a: (B, n) float64 initial iterate (not modified).
        alpha, beta1, beta2: (B,) float64 step sizes and penalty weights.
        a_star: (B, n) float64 ground truth for the recovery error.
        steps: number of updates; eval_every: record period (steps).
        method: ``"sub"``, ``"ista"`` or ``"proj"``.
        P: (n, N) or (B, n, N) projector factor, needed for ``"proj"``.
        l0_threshold: |a_i| above it counts in the l0 norm.

    Returns:
        ``(a_final (B, n), records (T, B, 5))`` with ``T = steps // eval_every + 1`` and the
        fields of :data:`RECORD_FIELDS`; record t is the state after ``t * eval_every`` steps.
    """
    shared = X.ndim == 2
    a = np.array(a, dtype=np.float64, copy=True)
    al, b1, b2 = (np.asarray(v, dtype=np.float64)[:, None] for v in (alpha, beta1, beta2))
    code = METHODS[method]

    def resid(v: np.ndarray) -> np.ndarray:
        return (v @ X.T if shared else np.matmul(X, v[:, :, None])[:, :, 0]) - y

    T = steps // eval_every + 1
    rec = np.empty((T, a.shape[0], 5))
    R = resid(a)
    rec[0] = _record(a, R, y, a_star, l0_threshold)
    for t in range(1, steps + 1):
        G = R @ X if shared else np.matmul(R[:, None, :], X)[:, 0, :]
        if code == 1:
            v = a - al * (G + b2 * a)
            a = np.sign(v) * np.maximum(np.abs(v) - al * b1, 0.0)
        else:
            a = a - al * (G + b2 * a + b1 * np.sign(a))
        R = resid(a)
        if code == 2:
            a = a - (R @ P.T if shared else np.matmul(P, R[:, :, None])[:, :, 0])
            R = resid(a)
        if t % eval_every == 0:
            rec[t // eval_every] = _record(a, R, y, a_star, l0_threshold)
    return a, rec


def grok_steps_gpu(X, y, a, alpha, beta1, beta2, a_star, steps, eval_every, method="sub", P=None,
                   l0_threshold=1e-4):  # pragma: no cover - needs a GPU
    """CuPy launcher of ``grokking.cu::grok_steps``; same contract as the reference.

    Inputs may be NumPy or CuPy arrays; the results are CuPy arrays ``(a_final, records)``.
    """
    import cupy as cp

    from icml25.kernels import load_module

    X = cp.ascontiguousarray(cp.asarray(X, dtype=cp.float64))
    y = cp.ascontiguousarray(cp.asarray(y, dtype=cp.float64))
    a_io = cp.array(a, dtype=cp.float64, copy=True, order="C")
    s = cp.ascontiguousarray(cp.asarray(a_star, dtype=cp.float64))
    al, b1, b2 = (cp.ascontiguousarray(cp.asarray(v, dtype=cp.float64)) for v in (alpha, beta1, beta2))
    B, n = a_io.shape
    N = y.shape[1]
    x_batched = int(X.ndim == 3)
    if METHODS[method] == 2:
        P = cp.ascontiguousarray(cp.asarray(P, dtype=cp.float64))
    else:
        P = cp.zeros(1, dtype=cp.float64)
    T = steps // eval_every + 1
    rec = cp.empty((T, B, 5), dtype=cp.float64)
    shared_bytes = (n + N + _THREADS) * 8
    if shared_bytes > 48 * 1024:
        raise ValueError(f"n + N = {n + N} too large for the fused kernel's shared memory (max ~6000)")
    kernel = load_module("grokking").get_function("grok_steps")
    kernel((B,), (_THREADS,), (X, y, s, P, a_io, al, b1, b2, rec, np.int32(B), np.int32(N), np.int32(n),
                              np.int32(steps), np.int32(eval_every), np.int32(METHODS[method]),
                              np.int32(x_batched), np.float64(l0_threshold)),
           shared_mem=shared_bytes)
    return a_io, rec


def grok_steps(X, y, a, alpha, beta1, beta2, a_star, steps, eval_every, method="sub", P=None,
               l0_threshold=1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Dispatcher: the CUDA kernel when :func:`icml25.common.gpu_available`, else the reference.

    Same arguments and NumPy results as :func:`grok_steps_reference`.
    """
    if gpu_available():  # pragma: no cover - needs a GPU
        a_out, rec = grok_steps_gpu(X, y, a, alpha, beta1, beta2, a_star, steps, eval_every, method, P,
                                    l0_threshold)
        return a_out.get(), rec.get()
    return grok_steps_reference(X, y, a, alpha, beta1, beta2, a_star, steps, eval_every, method, P,
                                l0_threshold)
