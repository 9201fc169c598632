"""Batched (sub)gradient descent for the sparse-recovery experiments of chapter 16.

One call runs ``n_steps`` updates of B independent configurations (alpha_b, beta1_b, beta2_b, seed,
tau, ...) of the penalised least-squares problem of Tikeng Notsawo et al. (ICML 2025, Sec. 3)

    min_a  1/2 ||X a - y||^2 + beta2/2 ||a||^2 + beta1 ||a||_1

and records the relative train and recovery errors and the l0/l1/l2 norms every ``eval_every``
steps. ``grok_steps_reference`` is the readable NumPy loop, ``grok_steps_gpu`` launches
``grokking.cu`` (one thread block per configuration, the whole loop inside the kernel) and
``grok_steps`` dispatches. The error norms are reduced inside the kernel, so nothing leaves the
GPU between records.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_budget
from icml25.common import gpu_available

__all__ = [
    "METHODS",
    "RECORD_FIELDS",
    "grok_steps_cost",
    "grok_steps_reference",
    "grok_steps_gpu",
    "grok_steps",
]

METHODS = {"sub": 0, "ista": 1, "proj": 2}
RECORD_FIELDS = ("train_error", "recovery_error", "l0", "l1", "l2")
_THREADS = 128


def _record(
    a: np.ndarray, R: np.ndarray, y: np.ndarray, a_star: np.ndarray, thr: float
) -> np.ndarray:
    out = np.empty((a.shape[0], 5))
    out[:, 0] = np.linalg.norm(R, axis=1) / np.linalg.norm(y, axis=1)
    out[:, 1] = np.linalg.norm(a - a_star, axis=1) / np.linalg.norm(a_star, axis=1)
    out[:, 2] = (np.abs(a) > thr).sum(axis=1)
    out[:, 3] = np.abs(a).sum(axis=1)
    out[:, 4] = np.linalg.norm(a, axis=1)
    return out


def grok_steps_cost(
    B: int,
    N: int,
    n: int,
    n_steps: int,
    eval_every: int,
    method: str = "sub",
) -> tuple[float, float]:
    """Estimated peak memory (bytes) and work (elementary operations) of one :func:`grok_steps` call.

    Per step and configuration: ``X a`` and ``X^T R`` (``2 N n`` multiply-adds each, twice that
    with the projection of ``"proj"``) and ``O(n)`` for the update; the records are
    ``T = n_steps // eval_every + 1`` rows of ``B x 5`` float64, the working vectors a few
    ``B (n + N)``. Callers pass these to :func:`icml25.checks.check_budget` before any work.

    Args:
        B: configurations; N: measurements; n: dimension; n_steps: updates; eval_every: record
            period; method: ``"sub"``, ``"ista"`` or ``"proj"``.

    Returns:
        ``(n_bytes, n_operations)`` as floats (no overflow for any int sizes).
    """
    B, N, n, n_steps = float(B), float(N), float(n), float(n_steps)
    per_step = (8.0 if method == "proj" else 4.0) * N * n + 8.0 * n
    T = n_steps // max(int(eval_every), 1) + 1.0
    n_bytes = 8.0 * (5.0 * T * B + 8.0 * B * (n + N))
    n_operations = n_steps * B * per_step + T * B * (2.0 * N + 6.0 * n)
    return n_bytes, n_operations


def _check_steps_budget(
    fn: str, y: np.ndarray, a: np.ndarray, n_steps: int, eval_every: int, method: str
) -> None:
    """Refuse (TooLargeError) a run whose records or work cannot fit, before any work (see :func:`grok_steps_cost`)."""
    B, n = np.shape(a)[-2:] if np.ndim(a) == 2 else (1, np.shape(a)[-1])
    n_bytes, n_operations = grok_steps_cost(
        B, np.shape(y)[-1], n, n_steps, eval_every, method
    )
    check_budget(
        f"{fn}(n_steps={n_steps}, eval_every={eval_every}) for {B} configurations",
        n_bytes=n_bytes,
        n_operations=n_operations,
    )


def grok_steps_reference(
    X: np.ndarray,
    y: np.ndarray,
    a: np.ndarray,
    alpha: np.ndarray,
    beta1: np.ndarray,
    beta2: np.ndarray,
    a_star: np.ndarray,
    n_steps: int,
    eval_every: int,
    method: str = "sub",
    P: np.ndarray | None = None,
    l0_threshold: float = 1e-4,
) -> tuple[np.ndarray, np.ndarray]:
    """NumPy reference of the batched update (the contract of ``grokking.cu``).

    Per step, for every configuration b: ``R = X a - y``, ``G = X^T R``, then
    ``a <- a - alpha (G + beta2 a + beta1 sign(a))`` (``"sub"``, ``"proj"``) or
    ``a <- soft(a - alpha (G + beta2 a), alpha beta1)`` (``"ista"``); ``"proj"`` then projects
    onto ``{a : X a = y}`` with ``a <- a - P (X a - y)``, ``P = X^T (X X^T)^{-1}``. A penalty that
    is zero for every configuration is skipped (adding ``0 * a`` changes no value). One problem
    (B = 1, X as (N, n) or (1, N, n)) runs on plain vectors and Python scalars, as the official
    loop does.

    Args:
        X: (N, n) shared or (B, N, n) per-configuration float64 measurements.
        y: (B, N) float64 targets.
        a: (B, n) float64 initial iterate (not modified).
        alpha, beta1, beta2: (B,) float64 step sizes and penalty weights.
        a_star: (B, n) float64 ground truth for the recovery error.
        n_steps: number of updates; eval_every: record period (steps).
        method: ``"sub"``, ``"ista"`` or ``"proj"``.
        P: (n, N) or (B, n, N) projector factor, needed for ``"proj"``.
        l0_threshold: |a_i| above it counts in the l0 norm.

    Returns:
        ``(a_final (B, n), records (T, B, 5))`` with ``T = n_steps // eval_every + 1`` and the
        fields of :data:`RECORD_FIELDS`; record t is the state after ``t * eval_every`` steps.

    Raises:
        TooLargeError: the records or the work of ``n_steps`` steps cannot fit
            (:func:`grok_steps_cost`), before any step.
    """
    _check_steps_budget("grok_steps_reference", y, a, n_steps, eval_every, method)
    B = a.shape[0]
    if X.ndim == 3 and X.shape[0] == 1 == B:
        # a stack of one problem: one shared X
        X, P = X[0], (P[0] if P is not None and np.ndim(P) == 3 else P)
    shared = X.ndim == 2
    a = np.array(a, dtype=np.float64, copy=True)
    # one problem: vectors (n,), (N,) and scalars, no broadcasting
    if shared and B == 1:
        a, y, a_star = a[0], y[0], a_star[0]
        al, b1, b2 = (
            float(np.asarray(v, dtype=np.float64).reshape(-1)[0])
            for v in (alpha, beta1, beta2)
        )
    else:
        al, b1, b2 = (
            np.asarray(v, dtype=np.float64)[:, None] for v in (alpha, beta1, beta2)
        )
    use_l1, use_l2 = (
        bool(np.any(np.asarray(beta1) != 0)),
        bool(np.any(np.asarray(beta2) != 0)),
    )
    code = METHODS[method]

    def resid(v: np.ndarray) -> np.ndarray:  # X a - y
        return (v @ X.T if shared else np.matmul(X, v[..., None])[..., 0]) - y

    def record(v: np.ndarray, R: np.ndarray) -> np.ndarray:
        return _record(
            np.atleast_2d(v),
            np.atleast_2d(R),
            np.atleast_2d(y),
            np.atleast_2d(a_star),
            l0_threshold,
        )

    T = n_steps // eval_every + 1
    rec = np.empty((T, B, 5))
    R = resid(a)
    rec[0] = record(a, R)
    for t in range(1, n_steps + 1):
        G = R @ X if shared else np.matmul(R[:, None, :], X)[:, 0, :]  # X^T (X a - y)
        g = G + b2 * a if use_l2 else G  # gradient of the smooth part
        if code == 1:  # ISTA: gradient step, then soft-threshold at alpha beta1
            v = a - al * g
            a = np.sign(v) * np.maximum(np.abs(v) - al * b1, 0.0)
        else:
            a = a - al * (g + b1 * np.sign(a) if use_l1 else g)
        R = resid(a)
        if code == 2:  # back onto {a : X a = y}
            a = a - (R @ P.T if shared else np.matmul(P, R[:, :, None])[:, :, 0])
            R = resid(a)
        if t % eval_every == 0:
            rec[t // eval_every] = record(a, R)
    return np.atleast_2d(a), rec


def grok_steps_gpu(
    X: Any,
    y: Any,
    a: Any,
    alpha: Any,
    beta1: Any,
    beta2: Any,
    a_star: Any,
    n_steps: int,
    eval_every: int,
    method: str = "sub",
    P: Any = None,
    l0_threshold: float = 1e-4,
) -> tuple[Any, Any]:  # pragma: no cover - needs a GPU
    """CuPy launcher of ``grokking.cu::grok_steps``; same contract as :func:`grok_steps_reference`.

    Inputs may be NumPy or CuPy arrays; the results stay on the device as CuPy arrays
    ``(a_final, records)`` (callers outside ``kernels/`` use :func:`grok_steps`, which returns NumPy).

    Raises:
        ValueError: ``n + N`` too large for the kernel's shared memory (about 6000).
        TooLargeError: the records or the work cannot fit (:func:`grok_steps_cost`).
    """
    import cupy as cp

    _check_steps_budget("grok_steps_gpu", y, a, n_steps, eval_every, method)

    from icml25.kernels import load_module

    X = cp.ascontiguousarray(cp.asarray(X, dtype=cp.float64))
    y = cp.ascontiguousarray(cp.asarray(y, dtype=cp.float64))
    a_io = cp.array(a, dtype=cp.float64, copy=True, order="C")
    s = cp.ascontiguousarray(cp.asarray(a_star, dtype=cp.float64))
    al, b1, b2 = (
        cp.ascontiguousarray(cp.asarray(v, dtype=cp.float64))
        for v in (alpha, beta1, beta2)
    )
    B, n = a_io.shape
    N = y.shape[1]
    x_batched = int(X.ndim == 3)
    if METHODS[method] == 2:
        P = cp.ascontiguousarray(cp.asarray(P, dtype=cp.float64))
    else:
        P = cp.zeros(1, dtype=cp.float64)
    T = n_steps // eval_every + 1
    rec = cp.empty((T, B, 5), dtype=cp.float64)
    shared_bytes = (n + N + _THREADS) * 8
    if shared_bytes > 48 * 1024:
        raise ValueError(
            f"n + N = {n + N} too large for the fused kernel's shared memory (max ~6000)"
        )
    kernel = load_module("grokking").get_function("grok_steps")
    kernel(
        (B,),
        (_THREADS,),
        (
            X,
            y,
            s,
            P,
            a_io,
            al,
            b1,
            b2,
            rec,
            np.int32(B),
            np.int32(N),
            np.int32(n),
            np.int32(n_steps),
            np.int32(eval_every),
            np.int32(METHODS[method]),
            np.int32(x_batched),
            np.float64(l0_threshold),
        ),
        shared_mem=shared_bytes,
    )
    return a_io, rec


def grok_steps(
    X: np.ndarray,
    y: np.ndarray,
    a: np.ndarray,
    alpha: np.ndarray,
    beta1: np.ndarray,
    beta2: np.ndarray,
    a_star: np.ndarray,
    n_steps: int,
    eval_every: int,
    method: str = "sub",
    P: np.ndarray | None = None,
    l0_threshold: float = 1e-4,
) -> tuple[np.ndarray, np.ndarray]:
    """Dispatcher: the CUDA kernel when :func:`icml25.common.gpu_available`, else the reference.

    Same arguments as :func:`grok_steps_reference`; takes and returns NumPy arrays
    ``(a_final (B, n), records (T, B, 5))`` on either path.

    Raises:
        TooLargeError: the records or the work of ``n_steps`` steps cannot fit
            (:func:`grok_steps_cost`), before any step or device transfer.
    """
    _check_steps_budget("grok_steps", y, a, n_steps, eval_every, method)
    if gpu_available():  # pragma: no cover - needs a GPU
        a_out, rec = grok_steps_gpu(
            X,
            y,
            a,
            alpha,
            beta1,
            beta2,
            a_star,
            n_steps,
            eval_every,
            method,
            P,
            l0_threshold,
        )
        return a_out.get(), rec.get()
    return grok_steps_reference(
        X,
        y,
        a,
        alpha,
        beta1,
        beta2,
        a_star,
        n_steps,
        eval_every,
        method,
        P,
        l0_threshold,
    )
