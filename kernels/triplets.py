"""Triplet counts of a hashed, persistent splitting oracle, and the cost/revenue sums (chapter 12).

A splitting oracle answers a triple ``(u, v, x)`` with the vertex that splits away first in its
tree ``T*`` (the one outside the pair with the lowest common ancestor). In a binary tree the
answer is read off the LCA-size matrix ``S[u, v] = |T*[u v v]|``: ``x`` splits away iff
``S[u, v] < S[u, x]``. The identity ``|T*[u v v]| = 2 + #{x : O*(u, v, x) != x}`` makes the
``O(n^3)`` count the hot loop of the counting algorithm (:func:`triplet_counts`).

Noise is persistent: the answer to a triple is a function of the *sorted* triple and the seed,
``h = splitmix64(splitmix64(seed) ^ ((a n + b) n + c))`` with ``a < b < c``; the answer is
correct iff ``(h >> 11) < floor(p 2^53)``, otherwise it is ``(a, b, c)[splitmix64(h) % 3]``
(uniform noise: error rate ``(1 - p) 2/3``) or the answer of a decoy tree with LCA sizes ``D``
(decoy noise). The hash is the book's shared :func:`icml25.kernels._splitmix64`; the CUDA source
repeats it as a device function.

Kernels (``triplets.cu``), each with a NumPy reference, a CuPy launcher and a dispatcher (NumPy
in, NumPy out):

- :func:`triplet_counts`: ``C (n, n) int32``, ``C[u, v] = #{x not in {u, v} : O(u, v, x) != x}``.
- :func:`lca_sums`: ``(cost, revenue)``, ``sum_{u<v} W S`` and ``sum_{u<v} W (n - S)``.

:func:`oracle_answers` is the per-triple contract both the reference and the chapter's
``SplittingOracle`` use (one copy of the hash rule).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml25.common import gpu_available
from icml25.kernels import _splitmix64

__all__ = [
    "noise_threshold",
    "oracle_answers",
    "triplet_counts",
    "triplet_counts_reference",
    "triplet_counts_gpu",
    "lca_sums",
    "lca_sums_reference",
    "lca_sums_gpu",
]

_BLOCK = 256
#: elements of one (u-chunk, v, x) block of the reference (keeps temporaries near 100 MB)
_CHUNK_ELEMENTS = 1 << 21


def noise_threshold(p: float) -> int:
    """``floor(p 2^53)``: a hashed answer is correct iff ``(h >> 11) < noise_threshold(p)``."""
    return int(math.floor(float(p) * 2.0**53))


def _true_answer(S: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The vertex of the sorted triple ``a < b < c`` that splits away first in the tree of ``S``."""
    sab, sac = S[a, b], S[a, c]
    return np.where(sab < sac, c, np.where(sac < sab, b, a))


def oracle_answers(S: np.ndarray, lo: np.ndarray, mid: np.ndarray, hi: np.ndarray, threshold: int, seed: int,
                   D: np.ndarray | None = None, counter: np.ndarray | None = None) -> np.ndarray:
    """Answers of the hashed splitting oracle to sorted triples ``lo < mid < hi`` (the contract).

    Args:
        S: (n, n) int32 LCA sizes of the oracle's tree.
        lo, mid, hi: int64 arrays of one shape, a sorted triple per element.
        threshold: :func:`noise_threshold` of the success probability ``p``.
        seed: 64-bit seed of the hash.
        D: (n, n) int32 LCA sizes of a decoy tree (decoy noise), or ``None`` (uniform noise).
        counter: int64 array like ``lo`` making repeated queries independent (non-persistent
            answers), or ``None`` (persistent: the answer depends on the triple only).

    Returns:
        int64 array like ``lo``: the answering vertex of each triple.
    """
    n = np.uint64(S.shape[0])
    mixed = _splitmix64(np.array([seed % 2**64], dtype=np.uint64))[0]
    key = (lo.astype(np.uint64) * n + mid.astype(np.uint64)) * n + hi.astype(np.uint64)
    if counter is not None:  # independent repeats: a fresh stream per query number
        key = key ^ _splitmix64(counter.astype(np.uint64) + np.uint64(0x632BE59BD9B4E019))
    h = _splitmix64(mixed ^ key)
    correct = (h >> np.uint64(11)) < np.uint64(threshold)
    truth = _true_answer(S, lo, mid, hi)
    if D is not None:
        wrong = _true_answer(D, lo, mid, hi)
    else:
        k = (_splitmix64(h) % np.uint64(3)).astype(np.int64)
        wrong = np.where(k == 0, lo, np.where(k == 1, mid, hi))
    return np.where(correct, truth, wrong).astype(np.int64)


def triplet_counts_reference(S: np.ndarray, p: float, seed: int, D: np.ndarray | None = None) -> np.ndarray:
    """``C[u, v] = #{x not in {u, v} : O(u, v, x) != x}`` for the hashed oracle (NumPy reference).

    Chunked over ``u``: each chunk evaluates :func:`oracle_answers` on all ``(u, v, x)`` of its
    rows, ``n^3`` evaluations in all (each unordered triple is seen six times, with one answer).
    With ``p = 1`` this is ``S - 2`` off the diagonal (the triplet identity).

    Args:
        S: (n, n) int32 LCA sizes of the oracle's tree.
        p: success probability of one answer, in (0, 1].
        seed: 64-bit seed of the hash.
        D: (n, n) int32 LCA sizes of a decoy tree, or ``None`` (uniform noise).

    Returns:
        (n, n) int32 counts, zero diagonal.
    """
    S = np.ascontiguousarray(S, dtype=np.int32)
    n = S.shape[0]
    thr = noise_threshold(p)
    C = np.zeros((n, n), dtype=np.int32)
    step = max(1, _CHUNK_ELEMENTS // max(1, n * n))
    v = np.arange(n, dtype=np.int64)[None, :, None]
    x = np.arange(n, dtype=np.int64)[None, None, :]
    for start in range(0, n, step):
        u = np.arange(start, min(n, start + step), dtype=np.int64)[:, None, None]
        uu, vv, xx = np.broadcast_arrays(u, v, x)
        lo = np.minimum(np.minimum(uu, vv), xx)
        hi = np.maximum(np.maximum(uu, vv), xx)
        mid = uu + vv + xx - lo - hi
        ans = oracle_answers(S, lo, mid, hi, thr, seed, D)
        valid = (xx != uu) & (xx != vv) & (uu != vv)
        C[start:start + u.shape[0]] = ((ans != xx) & valid).sum(axis=2)
    return C


def triplet_counts_gpu(S: Any, p: float, seed: int, D: Any = None) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`triplet_counts`: one thread per ordered pair (CuPy (n, n) int32 out)."""
    import cupy as cp

    from icml25.kernels import load_module

    S = cp.ascontiguousarray(cp.asarray(S, dtype=cp.int32))
    n = int(S.shape[0])
    Dp = cp.ascontiguousarray(cp.asarray(D, dtype=cp.int32)) if D is not None else S  # S: unused
    C = cp.empty((n, n), dtype=cp.int32)
    grid = min(max(1, (n * n + _BLOCK - 1) // _BLOCK), 65535 * 4)
    fn = load_module("triplets").get_function("triplet_counts")
    fn((grid,), (_BLOCK,), (S, Dp, np.int32(D is not None), C, np.int64(n), np.uint64(seed % 2**64),
                            np.uint64(noise_threshold(p))))
    return C


def triplet_counts(S: np.ndarray, p: float, seed: int, D: np.ndarray | None = None) -> np.ndarray:
    """Triplet counts (contract of :func:`triplet_counts_reference`): CUDA when a GPU is usable.

    Args:
        S: (n, n) int32 LCA sizes; p: success probability in (0, 1]; seed: 64-bit seed;
        D: (n, n) int32 decoy LCA sizes or ``None``.

    Returns:
        (n, n) int32 NumPy counts, identical on both paths.
    """
    if gpu_available():  # pragma: no cover - GPU
        return triplet_counts_gpu(np.asarray(S), p, seed, None if D is None else np.asarray(D)).get()
    return triplet_counts_reference(np.asarray(S), p, seed, None if D is None else np.asarray(D))


def lca_sums_reference(W: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``[sum_{u<v} W S, sum_{u<v} W (n - S)]``: Dasgupta cost and MW revenue (NumPy reference).

    Args:
        W: (n, n) float64 symmetric weights with a zero diagonal.
        S: (n, n) integer LCA sizes of a binary tree.

    Returns:
        (2,) float64 ``[cost, revenue]``.
    """
    n = S.shape[0]
    iu = np.triu_indices(n, 1)
    w = np.asarray(W, dtype=np.float64)[iu]
    s = np.asarray(S, dtype=np.float64)[iu]
    return np.array([w @ s, w @ (n - s)], dtype=np.float64)


def lca_sums_gpu(W: Any, S: Any) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`lca_sums` (CuPy (2,) float64 out)."""
    import cupy as cp

    from icml25.kernels import load_module

    W = cp.ascontiguousarray(cp.asarray(W, dtype=cp.float64))
    S = cp.ascontiguousarray(cp.asarray(S, dtype=cp.int32))
    n = int(S.shape[0])
    out = cp.zeros(2, dtype=cp.float64)
    grid = min(max(1, (n * n + _BLOCK - 1) // _BLOCK), 1024)
    fn = load_module("triplets").get_function("lca_sums")
    fn((grid,), (_BLOCK,), (W, S, np.int64(n), out))
    return out


def lca_sums(W: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Cost and revenue sums (contract of :func:`lca_sums_reference`): CUDA when a GPU is usable.

    Returns:
        (2,) float64 NumPy ``[cost, revenue]``, equal on both paths to 1e-9 relative.
    """
    if gpu_available():  # pragma: no cover - GPU
        return lca_sums_gpu(np.asarray(W), np.asarray(S)).get()
    return lca_sums_reference(np.asarray(W), np.asarray(S))
