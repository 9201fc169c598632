"""Safety-polytope kernels (chapter 05): fused violation statistics and batched Dykstra projection.

SaP (Chen, As and Krause, ICML 2025) learns a polytope ``{h : phi_k^T E(h) <= xi_k, k = 1..K}``
in a language model's representation space. Two loops recur:

- :func:`polytope_violations`: from ``C = E(H) Phi^T`` (N, K) (a GEMM), the per-row pieces of the
  SaP loss: the safe hinge ``sum_k [m + v_k]_+``, the largest violation ``max_k v_k`` and its facet,
  the unsafe hinge ``w_u [m - max_k v_k]_+`` and the row's loss by label. One warp per row on
  the GPU.
- :func:`dykstra_project`: the exact Euclidean projection of many points onto a linear polytope
  (``E = Id``) by cyclic Dykstra over the K half-spaces; one thread block per point.

Each has a NumPy reference (``*_reference``, the contract), a CuPy launcher (``*_gpu``) and a
dispatcher (NumPy in, NumPy out; the GPU when :func:`icml25.common.gpu_available`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget, check_int, check_real
from icml25.common import gpu_available

__all__ = [
    "polytope_violations",
    "polytope_violations_reference",
    "polytope_violations_gpu",
    "dykstra_project",
    "dykstra_project_reference",
    "dykstra_project_gpu",
]

_BLOCK = 256


def _check_violation_args(
    C: Any, xi: Any, y: Any, margin: Any, unsafe_weight: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    C = check_array(C, "C", ndim=2, dtype=np.float32)
    N, K = C.shape
    if K < 1:
        raise ValueError(f"C must have at least one facet column, got shape {C.shape}")
    xi = check_array(xi, "xi", shape=(K,), dtype=np.float32)
    y = check_array(y, "y", kind="int", shape=(N,), low=0, high=1, dtype=np.int32)
    return (
        C,
        xi,
        y,
        check_real(margin, "margin", low=0.0),
        check_real(unsafe_weight, "unsafe_weight", low=0.0),
    )


def polytope_violations_reference(
    C: np.ndarray, xi: np.ndarray, y: np.ndarray, margin: float, unsafe_weight: float
) -> dict[str, np.ndarray]:
    """Per-row SaP loss pieces from ``C = E(H) Phi^T`` (the contract; NumPy).

    ``v = C - xi``; ``safe_hinge = sum_k [m + v_k]_+``; ``max_v, argmax = max_k v_k`` (first index
    on ties); ``unsafe_hinge = w_u [m - max_v]_+``; ``loss_row = safe_hinge`` where ``y = 1`` else
    ``unsafe_hinge`` (Sec. 3 of the paper, the code's ``forward`` without re-assignment).

    Args:
        C: (N, K) float32 facet costs ``phi_k^T E(h_i)``.
        xi: (K,) float32 offsets.
        y: (N,) int labels in {0, 1} (1 = safe).
        margin: ``m >= 0``. unsafe_weight: ``w_u >= 0``.

    Returns:
        dict of (N,) arrays: ``safe_hinge``, ``max_v``, ``unsafe_hinge``, ``loss_row`` (float32) and
        ``argmax`` (int32).

    Raises:
        ValueError / TypeError: naming the bad argument (shapes, labels outside {0, 1}, NaN).
    """
    C, xi, y, m, wu = _check_violation_args(C, xi, y, margin, unsafe_weight)
    return _violations_cpu(C, xi, y, m, wu)


def _violations_cpu(
    C: np.ndarray, xi: np.ndarray, y: np.ndarray, m: float, wu: float
) -> dict[str, np.ndarray]:
    v = C - xi[None, :]
    safe = np.maximum(np.float32(m) + v, 0).sum(axis=1, dtype=np.float32)
    k = np.argmax(v, axis=1).astype(np.int32)
    mx = v[np.arange(v.shape[0]), k]
    unsafe = (np.float32(wu) * np.maximum(np.float32(m) - mx, 0)).astype(np.float32)
    return {
        "safe_hinge": safe,
        "max_v": mx.astype(np.float32),
        "argmax": k,
        "unsafe_hinge": unsafe,
        "loss_row": np.where(y == 1, safe, unsafe).astype(np.float32),
    }


def polytope_violations_gpu(
    C: Any, xi: Any, y: Any, margin: float, unsafe_weight: float
) -> dict[str, Any]:  # pragma: no cover - GPU
    """CuPy launcher of :func:`polytope_violations`: one warp per row (CuPy arrays out).

    Trusts its arguments (validated by :func:`polytope_violations`)."""
    import cupy as cp

    from icml25.kernels import load_module

    C = cp.ascontiguousarray(cp.asarray(C, dtype=cp.float32))
    xi = cp.ascontiguousarray(cp.asarray(xi, dtype=cp.float32))
    y = cp.ascontiguousarray(cp.asarray(y, dtype=cp.int32))
    N, K = C.shape
    out = {
        name: cp.empty(N, dtype=cp.float32)
        for name in ("safe_hinge", "max_v", "unsafe_hinge", "loss_row")
    }
    out["argmax"] = cp.empty(N, dtype=cp.int32)
    grid = max(1, (N * 32 + _BLOCK - 1) // _BLOCK)
    fn = load_module("polytope").get_function("polytope_violations")
    fn(
        (grid,),
        (_BLOCK,),
        (
            C,
            xi,
            y,
            np.int64(N),
            np.int32(K),
            np.float32(margin),
            np.float32(unsafe_weight),
            out["safe_hinge"],
            out["max_v"],
            out["argmax"],
            out["loss_row"],
        ),
    )
    return out


def polytope_violations(
    C: np.ndarray, xi: np.ndarray, y: np.ndarray, margin: float, unsafe_weight: float
) -> dict[str, np.ndarray]:
    """Per-row SaP loss pieces (contract of :func:`polytope_violations_reference`); CUDA on a GPU.

    Args, Returns and Raises: as :func:`polytope_violations_reference` (NumPy in, NumPy out; float
    sums may differ from the reference by float32 rounding, argmax is the first maximum on both).
    """
    C, xi, y, m, wu = _check_violation_args(C, xi, y, margin, unsafe_weight)
    if gpu_available():  # pragma: no cover - GPU
        return {k: v.get() for k, v in polytope_violations_gpu(C, xi, y, m, wu).items()}
    return _violations_cpu(C, xi, y, m, wu)


def _check_dykstra_args(
    X: Any, Phi: Any, xi: Any, n_sweeps: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    X = check_array(X, "X", ndim=2, dtype=np.float64)
    N, d = X.shape
    Phi = check_array(Phi, "Phi", ndim=2, dtype=np.float64)
    if Phi.shape[1] != d or Phi.shape[0] < 1:
        raise ValueError(
            f"Phi must have shape (K, {d}) with K >= 1 to match X of shape {X.shape}, got {Phi.shape}"
        )
    if np.any(np.einsum("kd,kd->k", Phi, Phi) <= 0):
        raise ValueError("Phi has a zero row: a facet needs a non-zero normal")
    xi = check_array(xi, "xi", shape=(Phi.shape[0],), dtype=np.float64)
    n_sweeps = check_int(n_sweeps, "n_sweeps", low=1)
    check_budget(
        f"dykstra_project(N={N}, K={Phi.shape[0]}, d={d}, n_sweeps={n_sweeps})",
        n_bytes=8.0 * N * Phi.shape[0] * d * 2,
        n_operations=4.0 * N * Phi.shape[0] * d * n_sweeps,
    )
    return X, Phi, xi, n_sweeps


def dykstra_project_reference(
    X: np.ndarray, Phi: np.ndarray, xi: np.ndarray, n_sweeps: int = 200
) -> np.ndarray:
    """Euclidean projection of each row of ``X`` onto ``{x : Phi x <= xi}`` by cyclic Dykstra.

    Dykstra's algorithm (Boyle and Dykstra 1986) over the half-spaces ``H_k = {x : phi_k x <= xi_k}``:
    with increments ``y_k = 0``, repeat ``z = x + y_k``, ``x = P_k(z) = z - [phi_k z - xi_k]_+
    phi_k / |phi_k|^2``, ``y_k = z - x`` over ``k = 1..K``. It converges to the projection onto the
    intersection (plain alternating projections reach a point of it, not the nearest one). All
    points advance together (NumPy over the batch).

    Args:
        X: (N, d) points (float64 internally).
        Phi: (K, d) facet normals (no zero row). xi: (K,) offsets.
        n_sweeps: sweeps over the K facets (>= 1).

    Returns:
        (N, d) float64 projections.

    Raises:
        ValueError / TypeError: naming the bad argument; ``TooLargeError`` for N K d beyond memory or
        N K d n_sweeps beyond hours of compute.
    """
    X, Phi, xi, n_sweeps = _check_dykstra_args(X, Phi, xi, n_sweeps)
    return _dykstra_cpu(X, Phi, xi, n_sweeps)


def _dykstra_cpu(
    X: np.ndarray, Phi: np.ndarray, xi: np.ndarray, n_sweeps: int
) -> np.ndarray:
    x = X.copy()
    K = Phi.shape[0]
    Y = np.zeros((K,) + X.shape)
    sq = np.einsum("kd,kd->k", Phi, Phi)
    for _ in range(n_sweeps):
        for k in range(K):
            z = x + Y[k]
            # how far z is outside H_k, in units of phi_k
            s = np.maximum(z @ Phi[k] - xi[k], 0.0) / sq[k]
            x = z - s[:, None] * Phi[k][None, :]
            Y[k] = z - x
    return x


def dykstra_project_gpu(
    X: Any, Phi: Any, xi: Any, n_sweeps: int
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`dykstra_project` (float32; one block per point; CuPy (N, d) out).

    Trusts its arguments (validated by :func:`dykstra_project`)."""
    import cupy as cp

    from icml25.kernels import load_module

    X = cp.ascontiguousarray(cp.asarray(X, dtype=cp.float32))
    Phi = cp.ascontiguousarray(cp.asarray(Phi, dtype=cp.float32))
    xi = cp.ascontiguousarray(cp.asarray(xi, dtype=cp.float32))
    N, d = X.shape
    K = Phi.shape[0]
    sq = cp.ascontiguousarray((Phi * Phi).sum(axis=1))
    Y = cp.zeros((N, K, d), dtype=cp.float32)
    P = cp.empty((N, d), dtype=cp.float32)
    threads = 32
    while threads < min(d, 256):
        threads *= 2
    fn = load_module("polytope").get_function("dykstra_project")
    fn(
        (N,),
        (threads,),
        (
            X,
            Phi,
            xi,
            sq,
            np.int64(N),
            np.int32(d),
            np.int32(K),
            np.int32(n_sweeps),
            Y,
            P,
        ),
        shared_mem=threads * 4,
    )
    return P


def dykstra_project(
    X: np.ndarray, Phi: np.ndarray, xi: np.ndarray, n_sweeps: int = 200
) -> np.ndarray:
    """Batched Euclidean projection onto a linear polytope (contract of :func:`dykstra_project_reference`).

    NumPy in, NumPy out (float64); the CUDA path computes in float32 (agreement to ~1e-4 relative).

    Raises:
        as :func:`dykstra_project_reference`.
    """
    X, Phi, xi, n_sweeps = _check_dykstra_args(X, Phi, xi, n_sweeps)
    if gpu_available():  # pragma: no cover - GPU
        return dykstra_project_gpu(X, Phi, xi, n_sweeps).get().astype(np.float64)
    return _dykstra_cpu(X, Phi, xi, n_sweeps)
