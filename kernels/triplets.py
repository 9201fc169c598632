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

from icml25.checks import check_array, check_budget, check_int, check_real
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
    "CPU_MAX_TRIPLES",
    "GPU_MAX_TRIPLES",
]

_BLOCK = 256
#: elements of one (u-block, v-block, x) block of the reference: about a dozen
#: int64/uint64 temporaries of 8 MiB each, so ~100 MB at any n (blocks over both u and
#: v, so this also holds above n = 1448, where one u-row alone has
#: more than 2^21 elements)
_CHUNK_ELEMENTS = 1 << 20
#: bytes of temporaries per element of a block (about a dozen 8-byte arrays)
_BYTES_PER_ELEMENT = 96
#: ordered triples the NumPy reference may plan. ``benchmarks/hc_oracles.py`` measured
#: 5e6-2.2e7 triples a second on one core of the book's CPU machine (n = 64..256, old
#: and blocked reference), so 5e9 is about 4-17 minutes; n = 1709 is the largest n
#: accepted (n = 3000, 2.7e10 triples, is refused)
CPU_MAX_TRIPLES = 5e9
#: the CUDA kernel's limit: the book's default work limit (minutes of an
#: H200 at ~1e11 triples/s)
GPU_MAX_TRIPLES = 1e13


def noise_threshold(p: float) -> int:
    """``floor(p 2^53)``: a hashed answer is correct iff ``(h >> 11) < noise_threshold(p)``."""
    return int(math.floor(float(p) * 2.0**53))


def _true_answer(
    S: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> np.ndarray:
    """The vertex of the sorted triple ``a < b < c`` that splits away first in the tree of ``S``."""
    sab, sac = S[a, b], S[a, c]
    return np.where(sab < sac, c, np.where(sac < sab, b, a))


def oracle_answers(
    S: np.ndarray,
    lo: np.ndarray,
    mid: np.ndarray,
    hi: np.ndarray,
    threshold: int,
    seed: int,
    D: np.ndarray | None = None,
    counter: np.ndarray | None = None,
) -> np.ndarray:
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
        key = key ^ _splitmix64(
            counter.astype(np.uint64) + np.uint64(0x632BE59BD9B4E019)
        )
    h = _splitmix64(mixed ^ key)
    correct = (h >> np.uint64(11)) < np.uint64(threshold)
    truth = _true_answer(S, lo, mid, hi)
    if D is not None:
        wrong = _true_answer(D, lo, mid, hi)
    else:
        k = (_splitmix64(h) % np.uint64(3)).astype(np.int64)
        wrong = np.where(k == 0, lo, np.where(k == 1, mid, hi))
    return np.where(correct, truth, wrong).astype(np.int64)


def _check_lca(S: Any, name: str, n: int | None = None) -> np.ndarray:
    """``S`` as a square (n, n) int32 matrix of LCA sizes; shape and dtype first (cheap), values
    (``1 <= S <= n``) after the caller's budget check."""
    if not isinstance(S, np.ndarray):
        S = check_array(S, name, kind="int", ndim=2, dtype=np.int32)
    elif not np.issubdtype(S.dtype, np.integer) or S.dtype == np.bool_:
        raise TypeError(
            f"{name} must be an array of integers (LCA sizes), got dtype {S.dtype}"
        )
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 1:
        raise ValueError(f"{name} must be a square (n, n) matrix, got shape {S.shape}")
    if n is not None and S.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n}, {n}), got shape {S.shape}")
    return S


def _check_lca_values(S: np.ndarray, name: str) -> np.ndarray:
    n = S.shape[0]
    S = check_array(S, name, kind="int", low=1, high=max(n, 1), dtype=np.int32)
    return np.ascontiguousarray(S)


def _check_count_args(
    S: Any, p: Any, seed: Any, D: Any
) -> tuple[np.ndarray, float, int, np.ndarray | None]:
    S = _check_lca(S, "S")
    p = check_real(p, "p", low=0.0, low_open=True, high=1.0)
    seed = check_int(seed, "seed", low=0, high=2**64 - 1)
    D = None if D is None else _check_lca(D, "D", S.shape[0])
    return S, p, seed, D


def _count_budget(n: int, path: str, max_triples: float) -> None:
    """Refuse ``n`` whose ``n^3`` ordered triples or whose memory cannot fit on ``path``."""
    what = f"triplet_counts(S of n={n}, {path})"
    n_bytes = 4.0 * n * n * 3 + (
        _BYTES_PER_ELEMENT * min(float(n) ** 3, _CHUNK_ELEMENTS) if path == "cpu" else 0
    )
    check_budget(what, n_bytes=n_bytes)
    check_budget(what, n_operations=float(n) ** 3, max_operations=max_triples)


def _counts_cpu(S: np.ndarray, p: float, seed: int, D: np.ndarray | None) -> np.ndarray:
    """The reference's loop over (u-block, v-block) blocks of ``_CHUNK_ELEMENTS`` triples."""
    n = S.shape[0]
    thr = noise_threshold(p)
    C = np.zeros((n, n), dtype=np.int32)
    per_pair = max(1, _CHUNK_ELEMENTS // max(1, n))  # (u, v) pairs per block
    bv = min(n, per_pair)
    bu = max(1, per_pair // bv)
    x = np.arange(n, dtype=np.int64)[None, None, :]
    for us in range(0, n, bu):
        u = np.arange(us, min(n, us + bu), dtype=np.int64)[:, None, None]
        for vs in range(0, n, bv):
            v = np.arange(vs, min(n, vs + bv), dtype=np.int64)[None, :, None]
            uu, vv, xx = np.broadcast_arrays(u, v, x)
            lo = np.minimum(np.minimum(uu, vv), xx)
            hi = np.maximum(np.maximum(uu, vv), xx)
            mid = uu + vv + xx - lo - hi
            ans = oracle_answers(S, lo, mid, hi, thr, seed, D)
            valid = (xx != uu) & (xx != vv) & (uu != vv)
            C[us : us + u.shape[0], vs : vs + v.shape[1]] = ((ans != xx) & valid).sum(
                axis=2
            )
    return C


def triplet_counts_reference(
    S: np.ndarray, p: float, seed: int, D: np.ndarray | None = None
) -> np.ndarray:
    """``C[u, v] = #{x not in {u, v} : O(u, v, x) != x}`` for the hashed oracle (NumPy reference).

    Blocked over ``(u, v)``: each block evaluates :func:`oracle_answers` on at most
    ``_CHUNK_ELEMENTS`` triples ``(u, v, x)`` (temporaries near 100 MB at any ``n``), ``n^3``
    evaluations in all (each unordered triple is seen six times, with one answer). With ``p = 1``
    this is ``S - 2`` off the diagonal (the triplet identity). At the benchmark's 5e6-2.2e7 triples
    a second, ``n^3`` above :data:`CPU_MAX_TRIPLES` (minutes of work; ``n > 1709``) is refused.

    Args:
        S: (n, n) integer LCA sizes of the oracle's tree (values in [1, n]).
        p: success probability of one answer, in (0, 1].
        seed: 64-bit seed of the hash (an integer in [0, 2^64)).
        D: (n, n) integer LCA sizes of a decoy tree, or ``None`` (uniform noise).

    Returns:
        (n, n) int32 counts, zero diagonal.

    Raises:
        TypeError: ``S``/``D`` not integer arrays, ``p``/``seed`` of the wrong kind.
        ValueError: ``S`` not square, ``D`` of another shape, values outside [1, n], ``p`` outside
            (0, 1], ``seed`` outside [0, 2^64).
        TooLargeError: ``n^3`` beyond :data:`CPU_MAX_TRIPLES` or memory beyond what is available.
    """
    S, p, seed, D = _check_count_args(S, p, seed, D)
    _count_budget(S.shape[0], "cpu", CPU_MAX_TRIPLES)
    S = _check_lca_values(S, "S")
    D = None if D is None else _check_lca_values(D, "D")
    return _counts_cpu(S, p, seed, D)


def triplet_counts_gpu(
    S: Any, p: float, seed: int, D: Any = None
) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`triplet_counts`: one thread per ordered pair (CuPy (n, n) int32 out).

    Trusts its arguments (validated by :func:`triplet_counts`)."""
    import cupy as cp

    from icml25.kernels import load_module

    S = cp.ascontiguousarray(cp.asarray(S, dtype=cp.int32))
    n = int(S.shape[0])
    # S: unused
    Dp = cp.ascontiguousarray(cp.asarray(D, dtype=cp.int32)) if D is not None else S
    C = cp.empty((n, n), dtype=cp.int32)
    grid = min(max(1, (n * n + _BLOCK - 1) // _BLOCK), 65535 * 4)
    fn = load_module("triplets").get_function("triplet_counts")
    fn(
        (grid,),
        (_BLOCK,),
        (
            S,
            Dp,
            np.int32(D is not None),
            C,
            np.int64(n),
            np.uint64(seed % 2**64),
            np.uint64(noise_threshold(p)),
        ),
    )
    return C


def triplet_counts(
    S: np.ndarray, p: float, seed: int, D: np.ndarray | None = None
) -> np.ndarray:
    """Triplet counts (contract of :func:`triplet_counts_reference`): CUDA when a GPU is usable.

    Args:
        S: (n, n) integer LCA sizes; p: success probability in (0, 1]; seed: 64-bit seed;
        D: (n, n) integer decoy LCA sizes or ``None``.

    Returns:
        (n, n) int32 NumPy counts, identical on both paths.

    Raises:
        as :func:`triplet_counts_reference`; the GPU path allows ``n^3`` up to
        :data:`GPU_MAX_TRIPLES`, the CPU path up to :data:`CPU_MAX_TRIPLES`.
    """
    S, p, seed, D = _check_count_args(S, p, seed, D)
    on_gpu = gpu_available()
    _count_budget(
        S.shape[0],
        "gpu" if on_gpu else "cpu",
        GPU_MAX_TRIPLES if on_gpu else CPU_MAX_TRIPLES,
    )
    S = _check_lca_values(S, "S")
    D = None if D is None else _check_lca_values(D, "D")
    if on_gpu:  # pragma: no cover - GPU
        return triplet_counts_gpu(S, p, seed, D).get()
    return _counts_cpu(S, p, seed, D)


def _check_sum_args(W: Any, S: Any) -> tuple[np.ndarray, np.ndarray]:
    S = _check_lca(S, "S")
    n = S.shape[0]
    check_budget(f"lca_sums(n={n})", n_bytes=8.0 * n * n * 4)
    W = check_array(W, "W", shape=(n, n), dtype=np.float64)
    return W, _check_lca_values(S, "S")


def _sums_cpu(W: np.ndarray, S: np.ndarray) -> np.ndarray:
    n = S.shape[0]
    iu = np.triu_indices(n, 1)
    w = W[iu]
    s = S[iu].astype(np.float64)
    return np.array([w @ s, w @ (n - s)], dtype=np.float64)


def lca_sums_reference(W: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``[sum_{u<v} W S, sum_{u<v} W (n - S)]``: Dasgupta cost and MW revenue (NumPy reference).

    Args:
        W: (n, n) float64 weights (only the strict upper triangle is read).
        S: (n, n) integer LCA sizes of a binary tree (values in [1, n]).

    Returns:
        (2,) float64 ``[cost, revenue]``.

    Raises:
        TypeError: ``S`` not integers, ``W`` not real. ValueError: ``S`` not square, ``W`` of
        another shape or not finite. TooLargeError: ``n^2`` beyond memory.
    """
    W, S = _check_sum_args(W, S)
    return _sums_cpu(W, S)


def lca_sums_gpu(W: Any, S: Any) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`lca_sums`: CuPy (2, grid) float64 per-block partial sums.

    Each block reduces its grid-stride share in a fixed order and writes its own partial (no
    atomics), so the partials, and their host sum in :func:`lca_sums`, are bit-reproducible."""
    import cupy as cp

    from icml25.kernels import load_module

    W = cp.ascontiguousarray(cp.asarray(W, dtype=cp.float64))
    S = cp.ascontiguousarray(cp.asarray(S, dtype=cp.int32))
    n = int(S.shape[0])
    grid = min(max(1, (n * n + _BLOCK - 1) // _BLOCK), 1024)
    out = cp.zeros((2, grid), dtype=cp.float64)
    fn = load_module("triplets").get_function("lca_sums")
    fn((grid,), (_BLOCK,), (W, S, np.int64(n), out))
    return out


def lca_sums(W: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Cost and revenue sums (contract of :func:`lca_sums_reference`): CUDA when a GPU is usable.

    The GPU path sums its per-block partials on the host in a fixed order, so repeated calls
    give identical bits (a hill climb comparing two sums sees no reduction-order noise).

    Returns:
        (2,) float64 NumPy ``[cost, revenue]``, equal on both paths to 1e-9 relative.

    Raises:
        as :func:`lca_sums_reference`.
    """
    W, S = _check_sum_args(W, S)
    if gpu_available():  # pragma: no cover - GPU
        return np.asarray(lca_sums_gpu(W, S).get(), dtype=np.float64).sum(axis=1)
    return _sums_cpu(W, S)
