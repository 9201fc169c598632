"""Chapter 11 kernels: batched optimism and batched assortment oracle over R replicate runs.

For each kernel function ``f`` in ``mnl_bandits.cu``: ``f_reference`` (NumPy, the readable
definition and the one CPU path of the book), ``f_gpu`` (CuPy launcher, CuPy arrays out) and
``f`` (dispatcher: the GPU when :func:`icml25.common.gpu_available`, else the reference; NumPy
in, NumPy out either way).

- ``optimistic_utilities(X (R,N,d), w (R,d), H_inv (R,d,d), beta (R,)) -> alpha (R,N)``:
  alpha_ri = x_ri^T w_r + beta_r ||x_ri||_{H_r^{-1}} (the optimistic utilities of OFU-MNL++).
- ``assortment_bisection(v (R,N), r (R,N), K, v0 (R,)) -> (mask (R,N) bool, revenue (R,))``:
  the capacitated-MNL assortment problem per replicate, by bisection on the revenue level z
  with a top-K selection of the positive v_i (r_i - z) and a Dinkelbach polish. The chapter's
  library (``icml25.mnl_bandits.optimal_assortment`` and the bandits' oracle) calls this
  dispatcher with R = 1: there is no second copy of the algorithm.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_int
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


def _utilities_args(X: Any, w: Any, H_inv: Any, beta: Any) -> tuple[np.ndarray, ...]:
    """The four arguments of ``optimistic_utilities`` as float64 NumPy arrays of matching shapes."""
    X = check_array(X, "X", ndim=3, dtype=np.float64)
    R, N, d = X.shape
    w = check_array(w, "w", shape=(R, d), dtype=np.float64)
    H_inv = check_array(H_inv, "H_inv", shape=(R, d, d), dtype=np.float64)
    beta = check_array(beta, "beta", shape=(R,), dtype=np.float64)
    return X, w, H_inv, beta


def _utilities(
    X: np.ndarray, w: np.ndarray, H_inv: np.ndarray, beta: np.ndarray
) -> np.ndarray:
    """alpha_ri = x_ri^T w_r + beta_r sqrt(max(x_ri^T H_r^{-1} x_ri, 0)) (Alg. 1, optimistic utility)."""
    mean = np.einsum("rnd,rd->rn", X, w)
    quad = np.einsum("rnd,rde,rne->rn", X, H_inv, X)
    return mean + beta[:, None] * np.sqrt(np.maximum(quad, 0.0))


def optimistic_utilities_reference(X: Any, w: Any, H_inv: Any, beta: Any) -> np.ndarray:
    """alpha[r, i] = X[r,i] . w[r] + beta[r] sqrt(max(X[r,i]^T H_inv[r] X[r,i], 0)) (NumPy, float64).

    Args:
        X: (R, N, d) item features; w: (R, d) parameters; H_inv: (R, d, d) symmetric PSD inverse
            Hessians; beta: (R,) radii. All finite.

    Returns:
        (R, N) float64 optimistic utilities.

    Raises:
        ValueError: inconsistent shapes or non-finite values.
        TypeError: non-numeric input.
    """
    return _utilities(*_utilities_args(X, w, H_inv, beta))


def optimistic_utilities_gpu(X: Any, w: Any, H_inv: Any, beta: Any) -> Any:
    """CuPy launcher of ``optimistic_utilities`` (one thread per (replicate, item)); CuPy (R, N) out.

    Raises:
        ValueError / TypeError: as :func:`optimistic_utilities_reference`.
    """
    import cupy as cp

    from icml25.kernels import load_module

    X, w, H_inv, beta = (
        cp.ascontiguousarray(cp.asarray(a)) for a in _utilities_args(X, w, H_inv, beta)
    )
    R, N, d = X.shape
    alpha = cp.empty((R, N), dtype=cp.float64)
    kernel = load_module("mnl_bandits").get_function("optimistic_utilities")
    blocks = min(max((R * N + THREADS - 1) // THREADS, 1), 65535)
    kernel(
        (blocks,),
        (THREADS,),
        (X, w, H_inv, beta, alpha, np.int32(R), np.int32(N), np.int32(d)),
    )
    return alpha


def optimistic_utilities(X: Any, w: Any, H_inv: Any, beta: Any) -> np.ndarray:
    """Dispatcher: CUDA kernel when a GPU is usable, else :func:`optimistic_utilities_reference`.

    Takes array-likes (NumPy, or CuPy on a GPU) and returns a NumPy (R, N) float64 array.
    Raises as :func:`optimistic_utilities_reference`.
    """
    if gpu_available():  # pragma: no cover - needs a GPU
        return to_numpy(optimistic_utilities_gpu(X, w, H_inv, beta))
    return optimistic_utilities_reference(X, w, H_inv, beta)


def _select(
    v: np.ndarray, r: np.ndarray, z: float, K: int
) -> tuple[np.ndarray, np.ndarray]:
    """S(z): the (at most) K largest positive scores v_i (r_i - z), ties to the lower index."""
    score = v * (r - z)
    pos = np.flatnonzero(score > 0)
    if pos.size > K:
        pos = np.sort(pos[np.argsort(-score[pos], kind="stable")[:K]])
    return pos, score


def _bisection_one(
    v: np.ndarray, r: np.ndarray, K: int, v0: float
) -> tuple[np.ndarray, float]:
    """max_{|S| <= K} R(S) = sum_{i in S} v_i r_i / (v0 + sum_{j in S} v_j), for one replicate.

    R(S) >= z  <=>  sum_{i in S} v_i (r_i - z) >= v0 z, so the optimal revenue z* is the root of
    phi(z) = max_{|S| <= K} sum_{i in S} v_i (r_i - z) - v0 z (decreasing in z): bisection on z
    with the top-K selection S(z), then the Dinkelbach polish z <- R(S(z)), which increases
    strictly until S(z) is optimal (Rusmevichientong, Shen & Shmoys 2010). Exactly the CUDA
    kernel's steps.
    """
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
            # >= z: an achievable lower bound
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


def _oracle_args(
    v: Any, r: Any, K: Any, v0: Any
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """The arguments of ``assortment_bisection`` checked: v >= 0 and v0 >= 0 (a common rescaling
    exp(-max alpha) may underflow either to 0), everything finite, 1 <= K <= N."""
    v = check_array(v, "v", ndim=2, low=0.0, dtype=np.float64)
    R, N = v.shape
    r = check_array(r, "r", shape=(R, N), dtype=np.float64)
    v0 = check_array(v0, "v0", shape=(R,), low=0.0, dtype=np.float64)
    K = check_int(K, "K", low=1, high=N)
    return v, r, K, v0


def _bisection_batch(
    v: np.ndarray, r: np.ndarray, K: int, v0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The oracle of :func:`_bisection_one` for each replicate: (R, N) membership, (R,) revenue."""
    R, N = v.shape
    mask = np.zeros((R, N), dtype=bool)
    revenue = np.zeros(R)
    for i in range(R):
        S, revenue[i] = _bisection_one(v[i], r[i], K, float(v0[i]))
        mask[i, S] = True
    return mask, revenue


def assortment_bisection_reference(
    v: Any, r: Any, K: int, v0: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Per-replicate optimal MNL assortment (NumPy; the kernel's algorithm, step by step).

    Args:
        v: (R, N) non-negative finite attraction weights; r: (R, N) finite revenues;
        K: max size (integer, 1 <= K <= N); v0: (R,) non-negative finite outside-option weights.

    Returns:
        ``(mask, revenue)``: (R, N) bool membership (at most K per row) and (R,) float64 optimal
        expected revenue.

    Raises:
        ValueError: inconsistent shapes, K out of range, negative or non-finite values.
        TypeError: K not an integer; non-numeric arrays.
    """
    return _bisection_batch(*_oracle_args(v, r, K, v0))


def assortment_bisection_gpu(v: Any, r: Any, K: int, v0: Any) -> tuple[Any, Any]:
    """CuPy launcher of ``assortment_bisection`` (one block of 256 threads per replicate).

    Returns CuPy ``(mask (R, N) bool, revenue (R,))``; raises as the reference.
    """
    import cupy as cp

    from icml25.kernels import load_module

    v, r, K, v0 = _oracle_args(v, r, K, v0)
    v, r, v0 = (cp.ascontiguousarray(cp.asarray(a)) for a in (v, r, v0))
    R, N = v.shape
    mask = cp.zeros((R, N), dtype=cp.uint8)
    revenue = cp.zeros(R, dtype=cp.float64)
    shared = 8 * (N + 3 * THREADS) + N
    kernel = load_module("mnl_bandits").get_function("assortment_bisection")
    kernel(
        (R,),
        (THREADS,),
        (
            v,
            r,
            v0,
            np.int32(R),
            np.int32(N),
            np.int32(K),
            np.float64(TOL),
            np.int32(MAX_ITER),
            np.int32(MAX_POLISH),
            mask,
            revenue,
        ),
        shared_mem=shared,
    )
    return mask.astype(cp.bool_), revenue


def assortment_bisection(
    v: Any, r: Any, K: int, v0: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Dispatcher: CUDA kernel when a GPU is usable, else :func:`assortment_bisection_reference`.

    Takes array-likes and returns NumPy ``(mask (R, N) bool, revenue (R,) float64)``.
    Raises as :func:`assortment_bisection_reference`.
    """
    if gpu_available():  # pragma: no cover - needs a GPU
        mask, revenue = assortment_bisection_gpu(v, r, K, v0)
        return to_numpy(mask), to_numpy(revenue)
    return assortment_bisection_reference(v, r, K, v0)
