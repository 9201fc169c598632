"""Bulk Tanimoto similarity on packed fingerprints (``tanimoto.cu``), shared by chapters 14 and 18.

A fingerprint of ``n_bits`` bits is stored as ``W = ceil(n_bits / 64)`` uint64 words, bit ``j`` in word
``j // 64`` at position ``j % 64`` (:func:`pack_bits`). On such rows the Tanimoto (Jaccard) similarity

    T(a, b) = |a & b| / (|a| + |b| - |a & b|)      (0 when both are empty, as RDKit gives it)

is three popcounts per word. Two kernel functions, each with a NumPy reference (the contract), a CuPy
launcher and a dispatcher (the GPU when :func:`icml25.common.gpu_available` says so):

- :func:`bulk_tanimoto`: the full ``(n, m)`` matrix, float32, equal bit for bit to
  ``float32(rdkit.DataStructs.BulkTanimotoSimilarity)`` (the ratio is formed in float64 and rounded once).
- :func:`max_tanimoto`: its row maximum ``(n,)``, the similarity / novelty objective, without the matrix.

NumPy in, NumPy out on both paths. :func:`pack_bits` and :func:`pack_fingerprints` (from RDKit bit vectors)
are host helpers, not kernels.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from icml25.checks import check_array, check_budget
from icml25.common import gpu_available

__all__ = [
    "pack_bits",
    "pack_fingerprints",
    "bulk_tanimoto",
    "bulk_tanimoto_reference",
    "bulk_tanimoto_gpu",
    "max_tanimoto",
    "max_tanimoto_reference",
    "max_tanimoto_gpu",
]

_BLOCK = 128
_CHUNK_BYTES = 32 * 2**20  # the reference's (rows, m, W) uint64 work array per chunk


# ----------------------------------------------------------------------------- packing


def pack_bits(bits: Any) -> np.ndarray:
    """Pack binary fingerprints into uint64 words.

    Args:
        bits: (n, n_bits) bool, or integer with values in {0, 1}.

    Returns:
        (n, W) uint64 with ``W = ceil(n_bits / 64)``: bit ``j`` of row ``i`` is bit ``j % 64`` (value
        ``2**(j % 64)``) of word ``j // 64``; the padding bits are 0.

    Raises:
        TypeError: ``bits`` is not boolean or integer. ValueError: not 2-D, ``n_bits == 0``, or
        integer values outside {0, 1}.
    """
    arr = np.asarray(bits)
    if arr.dtype != np.bool_:
        arr = check_array(arr, "bits", ndim=2, kind="int")
        if arr.size and (arr.min() < 0 or arr.max() > 1):
            raise ValueError(
                f"bits must hold only 0 and 1, got values in [{arr.min()}, {arr.max()}]"
            )
        arr = arr.astype(np.bool_)
    else:
        arr = check_array(arr, "bits", ndim=2, kind="bool")
    n, n_bits = arr.shape
    if n_bits == 0:
        raise ValueError("bits must have at least one column (n_bits >= 1)")
    W = -(-n_bits // 64)
    padded = np.zeros((n, W * 64), dtype=np.bool_)
    padded[:, :n_bits] = arr
    by = np.packbits(padded, axis=1, bitorder="little")  # byte k holds bits 8k .. 8k+7
    return (
        np.ascontiguousarray(by).view("<u8").astype(np.uint64, copy=False).reshape(n, W)
    )


def pack_fingerprints(fps: Sequence[Any]) -> np.ndarray:
    """Pack a list of RDKit ``ExplicitBitVect`` (all of one length) into ``(n, W)`` uint64 (see :func:`pack_bits`).

    Raises:
        ValueError: empty list or bit vectors of different lengths. TypeError: not bit vectors.
    """
    fps = list(fps)
    if not fps:
        raise ValueError("fps must hold at least one fingerprint")
    try:
        lengths = {fp.GetNumBits() for fp in fps}
        text = "".join(fp.ToBitString() for fp in fps)
    except AttributeError as err:
        raise TypeError(
            f"fps must be RDKit ExplicitBitVect objects, got {type(fps[0]).__name__}"
        ) from err
    if len(lengths) != 1:
        raise ValueError(
            f"fps must all have the same number of bits, got {sorted(lengths)}"
        )
    n_bits = lengths.pop()
    bits = (np.frombuffer(text.encode("ascii"), dtype=np.uint8) - ord("0")).reshape(
        len(fps), n_bits
    )
    return pack_bits(bits.astype(np.bool_))


# --------------------------------------------------------------------------- validation


def _check_packed(a: Any, name: str) -> np.ndarray:
    if not isinstance(a, np.ndarray) and type(a).__module__.startswith("cupy"):
        a = a.get()
    arr = np.asarray(a)
    if arr.dtype != np.uint64:
        raise TypeError(
            f"{name} must be a uint64 array of packed fingerprints (see pack_bits), got dtype {arr.dtype}"
        )
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(
            f"{name} must have shape (rows, W) with W >= 1 words, got {arr.shape}"
        )
    return np.ascontiguousarray(arr)


def _check_pair(
    A: Any, B: Any, what: str, matrix: bool
) -> tuple[np.ndarray, np.ndarray]:
    A = _check_packed(A, "A")
    B = _check_packed(B, "B")
    if A.shape[1] != B.shape[1]:
        raise ValueError(
            f"A and B must have the same number of words W, got A {A.shape} and B {B.shape}"
        )
    out_bytes = 4.0 * A.shape[0] * (B.shape[0] if matrix else 1) + _CHUNK_BYTES * 3
    check_budget(
        f"{what}(n={A.shape[0]}, m={B.shape[0]})",
        n_bytes=out_bytes,
        n_operations=3.0 * A.shape[0] * B.shape[0] * A.shape[1],
    )
    return A, B


def _popcount_rows(X: np.ndarray) -> np.ndarray:
    return np.bitwise_count(X).sum(axis=1, dtype=np.int64)


def _tanimoto_block(
    A: np.ndarray, B: np.ndarray, pa: np.ndarray, pb: np.ndarray
) -> np.ndarray:
    """``T[i, j] = c / (a + b - c)`` for one block of rows of ``A`` (0 where the union is empty)."""
    # |a & b|
    c = np.bitwise_count(A[:, None, :] & B[None, :, :]).sum(axis=2, dtype=np.int64)
    union = pa[:, None] + pb[None, :] - c  # |a | b|
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(union > 0, c / np.maximum(union, 1), 0.0)  # float64, one rounding
    return t.astype(np.float32)


def _row_chunks(n: int, m: int, W: int):
    rows = max(1, int(_CHUNK_BYTES // max(1, 8 * m * W)))
    for s in range(0, n, rows):
        yield slice(s, min(n, s + rows))


# -------------------------------------------------------------------------- bulk matrix


def bulk_tanimoto_reference(A: Any, B: Any) -> np.ndarray:
    """All Tanimoto similarities between the rows of ``A`` and ``B`` (NumPy reference).

    Args:
        A: (n, W) uint64 packed fingerprints (:func:`pack_bits`); B: (m, W) uint64, the same W.

    Returns:
        (n, m) float32, ``T[i, j] = |A_i & B_j| / |A_i | B_j|``, 0 for two empty fingerprints (RDKit's
        convention), equal to ``float32`` of RDKit's ``BulkTanimotoSimilarity``.

    Raises:
        TypeError: not uint64. ValueError: not 2-D, W == 0 or different W. TooLargeError: the matrix or the
        work does not fit.
    """
    A, B = _check_pair(A, B, "bulk_tanimoto", True)
    return _bulk_math(A, B)


def _bulk_math(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    n, m, W = A.shape[0], B.shape[0], A.shape[1]
    pa, pb = _popcount_rows(A), _popcount_rows(B)
    out = np.empty((n, m), dtype=np.float32)
    for sl in _row_chunks(n, m, W):
        out[sl] = _tanimoto_block(A[sl], B, pa[sl], pb)
    return out


def bulk_tanimoto_gpu(A: Any, B: Any) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`bulk_tanimoto` (CuPy arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    A = cp.ascontiguousarray(cp.asarray(A, dtype=cp.uint64))
    B = cp.ascontiguousarray(cp.asarray(B, dtype=cp.uint64))
    n, m, W = int(A.shape[0]), int(B.shape[0]), int(A.shape[1])
    out = cp.empty((n, m), dtype=cp.float32)
    if n * m == 0:
        return out
    grid = max(1, min((n * m + _BLOCK - 1) // _BLOCK, 65535))
    load_module("tanimoto").get_function("bulk_tanimoto")(
        (grid,), (_BLOCK,), (A, B, out, np.int64(n), np.int64(m), np.int64(W))
    )
    return out


def bulk_tanimoto(A: Any, B: Any) -> np.ndarray:
    """All Tanimoto similarities (contract of :func:`bulk_tanimoto_reference`); the kernel on a GPU."""
    A, B = _check_pair(A, B, "bulk_tanimoto", True)
    if gpu_available() and A.shape[0] * B.shape[0] > 0:  # pragma: no cover - GPU
        return bulk_tanimoto_gpu(A, B).get()
    return _bulk_math(A, B)


# -------------------------------------------------------------------------- row maximum


def _max_math(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    n, m, W = A.shape[0], B.shape[0], A.shape[1]
    pa, pb = _popcount_rows(A), _popcount_rows(B)
    out = np.empty(n, dtype=np.float32)
    for sl in _row_chunks(n, m, W):
        out[sl] = _tanimoto_block(A[sl], B, pa[sl], pb).max(axis=1)
    return out


def _check_max(A: Any, B: Any) -> tuple[np.ndarray, np.ndarray]:
    A, B = _check_pair(A, B, "max_tanimoto", False)
    if B.shape[0] == 0:
        raise ValueError(
            "B must hold at least one fingerprint (the maximum over an empty set is undefined)"
        )
    return A, B


def max_tanimoto_reference(A: Any, B: Any) -> np.ndarray:
    """Largest Tanimoto similarity of each row of ``A`` to any row of ``B`` (NumPy reference).

    Args:
        A: (n, W) uint64; B: (m, W) uint64 with m >= 1.

    Returns:
        (n,) float32, ``max_j T(A_i, B_j)`` (the row max of :func:`bulk_tanimoto_reference`, exactly).

    Raises:
        as :func:`bulk_tanimoto_reference`; ValueError also when ``B`` has no rows.
    """
    A, B = _check_max(A, B)
    return _max_math(A, B)


def max_tanimoto_gpu(A: Any, B: Any) -> Any:  # pragma: no cover - GPU
    """CuPy launcher of :func:`max_tanimoto` (CuPy arrays in and out; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    A = cp.ascontiguousarray(cp.asarray(A, dtype=cp.uint64))
    B = cp.ascontiguousarray(cp.asarray(B, dtype=cp.uint64))
    n, m, W = int(A.shape[0]), int(B.shape[0]), int(A.shape[1])
    out = cp.empty(n, dtype=cp.float32)
    if n == 0:
        return out
    grid = max(1, min(n, 65535))
    load_module("tanimoto").get_function("max_tanimoto")(
        (grid,),
        (_BLOCK,),
        (A, B, out, np.int64(n), np.int64(m), np.int64(W)),
        shared_mem=_BLOCK * 4,
    )
    return out


def max_tanimoto(A: Any, B: Any) -> np.ndarray:
    """Row maximum of the Tanimoto matrix (contract of :func:`max_tanimoto_reference`); the kernel on a GPU."""
    A, B = _check_max(A, B)
    if gpu_available() and A.shape[0] > 0:  # pragma: no cover - GPU
        return max_tanimoto_gpu(A, B).get()
    return _max_math(A, B)
