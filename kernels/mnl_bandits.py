"""Chapter 11 kernels: batched optimism and batched assortment oracle over R replicate runs.

For each kernel function ``f`` in ``mnl_bandits.cu``: ``f_reference`` (NumPy, the readable
definition), ``f_gpu`` (CuPy launcher) and ``f`` (dispatcher: GPU when
:func:`icml25.common.gpu_available`, else the reference).

- ``optimistic_utilities(X (R,N,d), w (R,d), H_inv (R,d,d), beta (R,)) -> alpha (R,N)``:
  alpha_ri = x_ri^T w_r + beta_r ||x_ri||_{H_r^{-1}} (the optimistic utilities of OFU-MNL++).
- ``assortment_bisection(v (R,N), r (R,N), K, v0 (R,)) -> (mask (R,N) bool, revenue (R,))``:
  the capacitated-MNL assortment problem per replicate, by bisection on the revenue level z
  with a top-K selection of the positive v_i (r_i - z) and a Dinkelbach polish.
"""

from __future__ import annotations

import numpy as np

from icml25.common import gpu_available, to_numpy

__all__ = [
    "optimistic_utilities",
    "optimistic_utilities_reference",
    "optimistic_utilities_gpu",
    "assortment_bisection",
    "assortment_bisection_reference",
    "assortment_bisection_gpu",
]

THREADS = 256
TOL = 1e-4  # coarse: the Dinkelbach polish makes the result exact
MAX_ITER = 100
MAX_POLISH = 50


def _check_shapes(X, w, H_inv, beta):
    if X.ndim != 3:
        raise ValueError(f"X must have shape (R, N, d), got {X.shape}")
    R, N, d = X.shape
    if w.shape != (R, d):
        raise ValueError(f"w must have shape ({R}, {d}), got {w.shape}")
    if H_inv.shape != (R, d, d):
        raise ValueError(f"H_inv must have shape ({R}, {d}, {d}), got {H_inv.shape}")
    if beta.shape != (R,):
        raise ValueError(f"beta must have shape ({R},), got {beta.shape}")
    return R, N, d


def optimistic_utilities_reference(X, w, H_inv, beta) -> np.ndarray:
    """alpha[r, i] = X[r,i] . w[r] + beta[r] sqrt(max(X[r,i]^T H_inv[r] X[r,i], 0)) (NumPy, float64).

    Args:
        X: (R, N, d); w: (R, d); H_inv: (R, d, d) symmetric PSD; beta: (R,) radii.

    Returns:
        (R, N) float64.

    Raises:
        ValueError: inconsistent shapes.
    """
    X, w, H_inv, beta = (np.asarray(to_numpy(a), dtype=np.float64) for a in (X, w, H_inv, beta))
    _check_shapes(X, w, H_inv, beta)
    mean = np.einsum("rnd,rd->rn", X, w)
    quad = np.einsum("rnd,rde,rne->rn", X, H_inv, X)
    return mean + beta[:, None] * np.sqrt(np.maximum(quad, 0.0))


def optimistic_utilities_gpu(X, w, H_inv, beta):
    """CuPy launcher of ``optimistic_utilities`` (one thread per (replicate, item))."""
    import cupy as cp

    from icml25.kernels import load_module

    X, w, H_inv, beta = (cp.ascontiguousarray(cp.asarray(a, dtype=cp.float64)) for a in (X, w, H_inv, beta))
    R, N, d = _check_shapes(X, w, H_inv, beta)
    alpha = cp.empty((R, N), dtype=cp.float64)
    kernel = load_module("mnl_bandits").get_function("optimistic_utilities")
    blocks = min(max((R * N + THREADS - 1) // THREADS, 1), 65535)
    kernel((blocks,), (THREADS,), (X, w, H_inv, beta, alpha, np.int32(R), np.int32(N), np.int32(d)))
    return alpha


def optimistic_utilities(X, w, H_inv, beta):
    """Dispatcher: CUDA kernel when a GPU is usable, else :func:`optimistic_utilities_reference`."""
    if gpu_available():  # pragma: no cover - needs a GPU
        return optimistic_utilities_gpu(X, w, H_inv, beta)
    return optimistic_utilities_reference(X, w, H_inv, beta)


def _select(v, r, z, K):
    score = v * (r - z)
    pos = np.flatnonzero(score > 0)
    if pos.size > K:
        pos = np.sort(pos[np.argsort(-score[pos], kind="stable")[:K]])
    return pos, score


def _bisection_one(v, r, K, v0):
    """Exactly the kernel's algorithm for one replicate."""
    hi = max(float(r.max()), 0.0)
    S, _ = _select(v, r, 0.0, K)
    best = S
    best_rev = float(v[S] @ r[S] / (v0 + v[S].sum())) if S.size else 0.0
    lo = best_rev
    for _ in range(MAX_ITER):
        if hi - lo <= TOL * max(hi, 1.0):
            break
        z = 0.5 * (lo + hi)
        S, score = _select(v, r, z, K)
        if S.size and score[S].sum() >= v0 * z:
            rev = float(v[S] @ r[S] / (v0 + v[S].sum()))
            if rev > best_rev:
                best, best_rev = S, rev
            lo = max(z, rev)
        else:
            hi = z
    for _ in range(MAX_POLISH):
        S, _ = _select(v, r, best_rev, K)
        if S.size == 0:
            break
        rev = float(v[S] @ r[S] / (v0 + v[S].sum()))
        if rev <= best_rev * (1 + 1e-15) + 1e-300:
            break
        best, best_rev = S, rev
    return best, best_rev


def _check_oracle(v, r, K, v0):
    if v.ndim != 2:
        raise ValueError(f"v must have shape (R, N), got {v.shape}")
    R, N = v.shape
    if r.shape != (R, N):
        raise ValueError(f"r must have shape ({R}, {N}), got {r.shape}")
    if v0.shape != (R,):
        raise ValueError(f"v0 must have shape ({R},), got {v0.shape}")
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or not 1 <= K <= N:
        raise ValueError(f"K must be an integer in [1, N={N}], got {K!r}")
    return R, N


def assortment_bisection_reference(v, r, K: int, v0) -> tuple[np.ndarray, np.ndarray]:
    """Per-replicate optimal MNL assortment (NumPy; the kernel's algorithm, step by step).

    Args:
        v: (R, N) positive attraction weights; r: (R, N) revenues; K: max size (1 <= K <= N);
        v0: (R,) positive outside-option weights.

    Returns:
        ``(mask, revenue)``: (R, N) bool membership and (R,) float64 optimal expected revenue.

    Raises:
        ValueError: inconsistent shapes or K out of range.
    """
    v, r, v0 = (np.asarray(to_numpy(a), dtype=np.float64) for a in (v, r, v0))
    R, N = _check_oracle(v, r, K, v0)
    mask = np.zeros((R, N), dtype=bool)
    revenue = np.zeros(R)
    for i in range(R):
        S, revenue[i] = _bisection_one(v[i], r[i], int(K), float(v0[i]))
        mask[i, S] = True
    return mask, revenue


def assortment_bisection_gpu(v, r, K: int, v0):
    """CuPy launcher of ``assortment_bisection`` (one block of 256 threads per replicate)."""
    import cupy as cp

    from icml25.kernels import load_module

    v, r, v0 = (cp.ascontiguousarray(cp.asarray(a, dtype=cp.float64)) for a in (v, r, v0))
    R, N = _check_oracle(v, r, K, v0)
    mask = cp.zeros((R, N), dtype=cp.uint8)
    revenue = cp.zeros(R, dtype=cp.float64)
    shared = 8 * (N + 3 * THREADS) + N
    kernel = load_module("mnl_bandits").get_function("assortment_bisection")
    kernel((R,), (THREADS,), (v, r, v0, np.int32(R), np.int32(N), np.int32(K), np.float64(TOL),
                              np.int32(MAX_ITER), np.int32(MAX_POLISH), mask, revenue),
           shared_mem=shared)
    return mask.astype(cp.bool_), revenue


def assortment_bisection(v, r, K: int, v0):
    """Dispatcher: CUDA kernel when a GPU is usable, else :func:`assortment_bisection_reference`."""
    if gpu_available():  # pragma: no cover - needs a GPU
        return assortment_bisection_gpu(v, r, K, v0)
    return assortment_bisection_reference(v, r, K, v0)
