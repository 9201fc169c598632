"""Chapter 01 kernels: the packed mixed-precision weight format of LowRA (Zhou et al., ICML 2025).

LowRA gives every output channel (row) ``c`` of a weight ``W (m, n)`` its own precision
``b_c in {1, 2, 4}``, its own codebook ("mapping") of ``2^b_c`` levels and decision thresholds
in the normalised space ``[-1, 1]``, and scales each group of ``g`` consecutive weights of a row
by its absmax (Sec. 3-4 of the paper). This module owns the storage format and its two hot loops.

Layout of a quantized ``W (m, n)`` (``g`` divides ``n``):

- ``row_bits`` (m,) int: ``b_c`` in {1, 2, 4}.
- ``row_offsets`` (m+1,) int64: row ``c`` occupies bytes ``[row_offsets[c], row_offsets[c+1])``
  of ``packed``, ``ceil(n b_c / 8)`` of them; ``row_offsets[0] = 0``,
  ``row_offsets[m] = packed.size``.
- ``packed`` (row_offsets[m],) uint8: code ``j`` of row ``c`` sits LSB-first in byte
  ``row_offsets[c] + (j b_c) // 8`` at bit shift ``(j b_c) % 8``, ``b_c`` bits wide (a code never
  straddles two bytes since ``b_c`` divides 8); unused high bits of a row's last byte are 0.
- ``lut`` (m, 16) float32: row ``c``'s levels ``q_0 < ... < q_{2^b_c - 1}``, zero-padded.
- ``thresholds`` (m, 15) float32: row ``c``'s thresholds ``t_0 <= ... <= t_{2^b_c - 2}``, padded
  with ``+inf``.
- ``absmax`` (m, n // g) float32: ``s = max |w|`` over each group.

Quantization: ``w~ = w / s`` (0 when ``s == 0``), ``code = #{k : t_k < w~}`` (a value exactly
on a threshold goes to the lower bin) = ``searchsorted(t, w~, side="left")``.
Dequantization: ``W_hat[c, j] = lut[c, code[c, j]] * absmax[c, j // g]`` in float32, then cast.

The public functions validate their arguments once (with :mod:`icml25.checks`) into a frozen
:class:`PackedLayout` (bits, offsets, ``n``, ``g``) or :class:`PackedWeight` (a layout plus its
code bytes, levels and scales); the private functions that hold the math trust those values.

For each kernel ``f`` in ``lowbit.cu``: ``f_reference`` (NumPy, vectorised per precision class:
all rows with the same ``b`` at once), ``f_gpu`` (CuPy launcher) and ``f`` (dispatcher).
Dequantization also has ``dequantize_mixed_cpu``, the same result from one fused loop compiled
by numba (``_lowbit_fused.py``), which the dispatcher's CPU path runs: the reference makes
several passes over memory and reached under a fifth of the copy bandwidth.
The dispatchers return the kind of array they were given: NumPy in -> NumPy out, torch in ->
torch out (same device), CuPy in -> CuPy out. They run the CUDA kernel when the input lives on
the device (CuPy, CUDA torch), or for NumPy input when :func:`icml25.common.gpu_available` says
so (copied to the device and back); CPU torch tensors always take the CPU path (NumPy, whose
table look-up measured faster than the same gathers written in torch, or the fused loop).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_array, check_int
from icml25.common import gpu_available, to_numpy

__all__ = [
    "ALLOWED_BITS",
    "LUT_WIDTH",
    "PackedLayout",
    "PackedWeight",
    "row_nbytes",
    "make_row_offsets",
    "pack_codes",
    "unpack_codes",
    "blockwise_absmax",
    "quantize_mixed",
    "quantize_mixed_reference",
    "quantize_mixed_gpu",
    "dequantize_mixed",
    "dequantize_mixed_reference",
    "dequantize_mixed_cpu",
    "dequantize_mixed_gpu",
    "launch_dequantize_mixed",
    "dequant_matmul",
    "dequant_matmul_reference",
    "dequant_matmul_gpu",
]

ALLOWED_BITS = (1, 2, 4)
LUT_WIDTH = 16  # levels per row in ``lut`` (2^4), zero-padded
THRESHOLD_WIDTH = 15  # thresholds per row (2^4 - 1), +inf-padded
THREADS = 256
MAX_SHARED_BYTES = 227 * 1024  # opt-in shared memory per block on sm_90 (H100/H200)


# --------------------------------------------------------------------------------------
# the validated layout (public boundary -> trusted values)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PackedLayout:
    """Where every row of a packed ``(m, n)`` weight lives; validated once, then trusted.

    Attributes:
        row_bits: (m,) int64, each in :data:`ALLOWED_BITS`.
        row_offsets: (m+1,) int64, ``[0, cumsum(ceil(n b_c / 8))]`` (:func:`make_row_offsets`).
        n: codes per row, >= 1.
        group: ``g``, the absmax block size, dividing ``n`` (``None`` for a layout of codes
            only, as :func:`unpack_codes` uses).
    """

    row_bits: np.ndarray
    row_offsets: np.ndarray
    n: int
    group: int | None = None

    @property
    def m(self) -> int:
        """Number of rows (output channels)."""
        return int(self.row_bits.size)

    @property
    def nbytes(self) -> int:
        """Size of the code buffer, ``row_offsets[-1]`` bytes."""
        return int(self.row_offsets[-1])

    def classes(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(b, rows)`` for each precision present, ``rows`` the (k,) int64 indices with ``b_c = b``."""
        return _classes(self.row_bits)


@dataclass(frozen=True)
class PackedWeight:
    """A packed weight: a :class:`PackedLayout` and its buffers, validated once, then trusted.

    Attributes:
        layout: the rows' precisions and offsets, ``n`` and ``g``.
        packed: (layout.nbytes,) uint8 codes (NumPy, or CuPy on the GPU path).
        lut: (m, 16) float32 finite levels.
        absmax: (m, n // g) float32 finite group scales.
    """

    layout: PackedLayout
    packed: Any
    lut: Any
    absmax: Any


def _is_torch(a: Any) -> bool:
    return type(a).__module__.startswith("torch")


def _is_cupy(a: Any) -> bool:
    return type(a).__module__.startswith("cupy")


def _real_numpy(a: Any) -> Any:
    """torch floating tensors (bfloat16 included, which NumPy lacks) as float32 NumPy; anything
    else unchanged (the shared validators convert it)."""
    if _is_torch(a) and a.is_floating_point():
        return a.detach().float().cpu().numpy()
    return a


def _check_row_bits(row_bits: ArrayLike, m: int | None = None) -> np.ndarray:
    """(m,) int64 precisions, each in :data:`ALLOWED_BITS` (the format's own rule).

    Integer dtypes only: float bits such as ``[1., 2., 4.]`` raise ``TypeError`` (a float map is
    a caller's mistake, and a fractional one would be silently truncated).
    """
    rb = check_array(
        row_bits, "row_bits", kind="int", shape=None if m is None else (m,), ndim=1
    )
    if rb.size and not np.isin(rb, ALLOWED_BITS).all():
        bad = np.unique(rb[~np.isin(rb, ALLOWED_BITS)])
        raise ValueError(f"row_bits must lie in {ALLOWED_BITS}, got {bad[:5].tolist()}")
    return rb.astype(np.int64)


def _check_group(group: Any, n: int) -> int:
    """``g`` as an int >= 1 dividing the row length ``n`` (the format's own rule)."""
    g = check_int(group, "group", low=1)
    if n % g:
        raise ValueError(f"group={g} must divide the row length n={n}")
    return g


def _check_layout(
    row_offsets: ArrayLike | None,
    row_bits: ArrayLike,
    n: Any,
    group: Any = None,
    m: int | None = None,
) -> PackedLayout:
    """A :class:`PackedLayout` from user arrays; ``row_offsets=None`` derives them from the bits.

    Offsets and bits are (m+1,) and (m,) integers, small, and always checked on host copies.
    """
    n = check_int(n, "n", low=1)
    rb = _check_row_bits(row_bits, m)
    g = None if group is None else _check_group(group, n)
    expected = _row_offsets(rb, n)
    if row_offsets is not None:
        offsets = check_array(
            row_offsets, "row_offsets", kind="int", shape=(rb.size + 1,)
        )
        if not np.array_equal(offsets, expected):
            raise ValueError(
                "row_offsets must start at 0 and step by ceil(n * row_bits / 8) per row "
                f"(n={n}); first mismatch at row {int(np.argmax(offsets != expected))}"
            )
    return PackedLayout(rb, expected, n, g)


def _check_packed_bytes(packed: ArrayLike, layout: PackedLayout) -> np.ndarray:
    """The (layout.nbytes,) uint8 code buffer on the host, contiguous (a strided view such
    as ``buf[::2]`` is copied: the row gathers view it as wider words)."""
    packed = np.ascontiguousarray(to_numpy(packed))
    if packed.ndim != 1 or packed.dtype != np.uint8:
        raise ValueError(
            f"packed must be a 1-D uint8 array, got dtype {packed.dtype} shape {packed.shape}"
        )
    if packed.size != layout.nbytes:
        raise ValueError(
            f"packed must hold row_offsets[-1] = {layout.nbytes} bytes, got {packed.size}"
        )
    return packed


def _check_packed_weight(
    packed: ArrayLike,
    row_offsets: ArrayLike,
    row_bits: ArrayLike,
    lut: ArrayLike,
    absmax: ArrayLike,
    n: Any,
    group: Any,
) -> PackedWeight:
    """A :class:`PackedWeight` on the host: layout, code bytes, finite (m, 16) levels and scales."""
    layout = _check_layout(row_offsets, row_bits, n, group)
    m = layout.m
    return PackedWeight(
        layout,
        _check_packed_bytes(packed, layout),
        check_array(lut, "lut", shape=(m, LUT_WIDTH), dtype=np.float32),
        check_array(
            absmax, "absmax", shape=(m, layout.n // layout.group), dtype=np.float32
        ),
    )


def _check_weight(W: ArrayLike, name: str = "W") -> np.ndarray:
    """A non-empty, finite (m, n) weight as float32 (torch tensors of any float dtype accepted)."""
    return check_array(_real_numpy(W), name, ndim=2, min_size=1, dtype=np.float32)


def _check_thresholds(thresholds: ArrayLike, rb: np.ndarray) -> np.ndarray:
    """(m, 15) float32 thresholds, each row's first ``2^b - 1`` entries non-NaN and non-decreasing."""
    t = check_array(
        thresholds,
        "thresholds",
        shape=(rb.size, THRESHOLD_WIDTH),
        dtype=np.float32,
        finite=False,
    )
    for b, rows in _classes(rb):
        active = t[rows, : (1 << b) - 1]
        if np.isnan(active).any():
            raise ValueError(
                f"thresholds contain NaN in the first 2^b - 1 entries (b={b})"
            )
        # a comparison, so +-inf entries are fine
        if b > 1 and (active[:, 1:] < active[:, :-1]).any():
            raise ValueError(
                f"thresholds must be non-decreasing within each row (b={b})"
            )
    return t


def _check_out_dtype(out_dtype: Any) -> np.dtype:
    """float32 or float16 as a NumPy dtype, from a NumPy or torch dtype."""
    try:
        dt = np.dtype(out_dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in (np.dtype(np.float32), np.dtype(np.float16)):
        # torch dtypes
        name = str(out_dtype).replace("torch.", "")
        if name in ("float32", "float16", "half", "float"):
            return np.dtype(np.float16 if name in ("float16", "half") else np.float32)
        raise ValueError(f"out_dtype must be float32 or float16, got {out_dtype!r}")
    return dt


def _row_offsets(rb: np.ndarray, n: int) -> np.ndarray:
    """``[0, cumsum(ceil(n b_c / 8))]`` (m+1,) int64 for trusted bits."""
    offsets = np.zeros(rb.size + 1, dtype=np.int64)
    np.cumsum((n * rb + 7) // 8, out=offsets[1:])
    return offsets


def row_nbytes(row_bits: ArrayLike, n: int) -> np.ndarray:
    """Bytes per packed row, ``ceil(n b_c / 8)``.

    Args:
        row_bits: (m,) int in {1, 2, 4}.
        n: row length (codes per row), >= 1.

    Returns:
        (m,) int64.

    Raises:
        TypeError: ``n`` not an integer, ``row_bits`` not integers.
        ValueError: bits outside {1, 2, 4}, ``row_bits`` not 1-D, or n < 1.
    """
    n = check_int(n, "n", low=1)
    rb = _check_row_bits(row_bits)
    return (n * rb + 7) // 8


def make_row_offsets(row_bits: ArrayLike, n: int) -> np.ndarray:
    """Byte offsets of the rows in ``packed``: (m+1,) int64, ``[0, cumsum(ceil(n b_c / 8))]``.

    Args:
        row_bits: (m,) int in {1, 2, 4}.
        n: row length (codes per row), >= 1.

    Raises:
        TypeError: ``n`` not an integer, ``row_bits`` not integers.
        ValueError: bits outside {1, 2, 4} or n < 1.
    """
    n = check_int(n, "n", low=1)
    return _row_offsets(_check_row_bits(row_bits), n)


# --------------------------------------------------------------------------------------
# packing
# --------------------------------------------------------------------------------------
def _pack_rows(codes: np.ndarray, b: int) -> np.ndarray:
    """(k, n) uint8 codes < 2^b -> (k, ceil(n b / 8)) uint8, LSB-first."""
    k, n = codes.shape
    if b == 1:
        return np.packbits(codes, axis=1, bitorder="little")
    per = 8 // b
    nbytes = (n * b + 7) // 8
    if n % per:
        padded = np.zeros((k, nbytes * per), dtype=np.uint8)
        padded[:, :n] = codes
        codes = padded
    c = codes.reshape(k, nbytes, per)
    out = c[:, :, 0].copy()
    for i in range(1, per):
        out |= c[:, :, i] << np.uint8(i * b)
    return out


def _unpack_rows(rows: np.ndarray, b: int, n: int) -> np.ndarray:
    """(k, ceil(n b / 8)) uint8 -> (k, n) uint8 codes."""
    if b == 1:
        return np.unpackbits(rows, axis=1, count=n, bitorder="little")
    per = 8 // b
    mask = np.uint8((1 << b) - 1)
    k, nbytes = rows.shape
    out = np.empty((k, nbytes, per), dtype=np.uint8)
    for i in range(per):
        np.bitwise_and(rows >> np.uint8(i * b), mask, out=out[:, :, i])
    return out.reshape(k, nbytes * per)[:, :n]


def _gather_rows(
    packed: np.ndarray, offsets: np.ndarray, rows: np.ndarray, nbytes: int
) -> np.ndarray:
    """The (len(rows), nbytes) bytes of ``rows``; a view when they are contiguous in ``packed``.

    Otherwise a gather in the widest word (8, 4, 2 or 1 bytes) that divides every row start and
    the row length, so that there are up to 8x fewer indices than bytes.
    """
    start = offsets[rows]
    if (
        rows.size
        and start[-1] - start[0] == nbytes * (rows.size - 1)
        and np.all(np.diff(rows) == 1)
    ):
        return packed[start[0] : start[0] + nbytes * rows.size].reshape(
            rows.size, nbytes
        )
    for width, word in ((8, np.uint64), (4, np.uint32), (2, np.uint16), (1, np.uint8)):
        if nbytes % width == 0 and not np.any(start % width):
            break
    usable = packed[: packed.size - packed.size % width].view(word)
    words = usable[(start // width)[:, None] + np.arange(nbytes // width)]
    return words.view(np.uint8).reshape(rows.size, nbytes)


def _classes(rb: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(b, rows with that b) for each precision present."""
    for b in ALLOWED_BITS:
        rows = np.flatnonzero(rb == b)
        if rows.size:
            yield b, rows


def _pack(codes: np.ndarray, layout: PackedLayout) -> np.ndarray:
    """The code buffer of trusted (m, n) uint8 codes, rows of one precision packed together."""
    packed = np.empty(layout.nbytes, dtype=np.uint8)
    for b, rows in layout.classes():
        nbytes = (layout.n * b + 7) // 8
        packed[layout.row_offsets[rows][:, None] + np.arange(nbytes)] = _pack_rows(
            codes[rows], b
        )
    return packed


def pack_codes(codes: ArrayLike, row_bits: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Pack per-row ``b_c``-bit codes into one byte buffer (the format in the module docstring).

    Rows with the same precision are packed together (vectorised); codes go LSB-first.

    Args:
        codes: (m, n) integer array, ``0 <= codes[c, j] < 2^row_bits[c]``.
        row_bits: (m,) int in {1, 2, 4}.

    Returns:
        ``(packed, row_offsets)``: (sum_c ceil(n b_c / 8),) uint8 and (m+1,) int64.

    Raises:
        TypeError: codes not an integer array.
        ValueError: codes not 2-D with n >= 1, row_bits of the wrong shape or outside {1, 2, 4},
            or a code out of range for its row's precision.
    """
    codes = check_array(codes, "codes", kind="int", ndim=2)
    if codes.shape[1] == 0:
        raise ValueError(
            f"codes must be a 2-D array (m, n) with n >= 1, got shape {codes.shape}"
        )
    m, n = codes.shape
    layout = _check_layout(None, row_bits, n, m=m)
    rb = layout.row_bits
    if codes.size:
        bad = (codes < 0) | (codes >= (1 << rb)[:, None])
        if bad.any():
            r, j = np.argwhere(bad)[0]
            raise ValueError(
                f"codes out of range: codes[{r}, {j}] = {int(codes[r, j])} needs "
                f"0 <= code < 2^{int(rb[r])}"
            )
    return _pack(codes.astype(np.uint8), layout), layout.row_offsets


def _unpack(packed: np.ndarray, layout: PackedLayout) -> np.ndarray:
    """(m, n) uint8 codes of a trusted code buffer."""
    n = layout.n
    out = np.empty((layout.m, n), dtype=np.uint8)
    for b, rows in layout.classes():
        nbytes = (n * b + 7) // 8
        out[rows] = _unpack_rows(
            _gather_rows(packed, layout.row_offsets, rows, nbytes), b, n
        )
    return out


def unpack_codes(
    packed: ArrayLike, row_offsets: ArrayLike, row_bits: ArrayLike, n: int
) -> np.ndarray:
    """Inverse of :func:`pack_codes`: the (m, n) uint8 codes.

    Args:
        packed: (row_offsets[-1],) uint8.
        row_offsets: (m+1,) int, as returned by :func:`pack_codes`.
        row_bits: (m,) int in {1, 2, 4}.
        n: codes per row, >= 1.

    Returns:
        (m, n) uint8.

    Raises:
        TypeError: ``n`` not an integer, offsets or bits not integer/numeric arrays.
        ValueError: packed not 1-D uint8, bits outside {1, 2, 4}, or offsets inconsistent with
            ``n`` and ``row_bits`` / the size of ``packed``.
    """
    layout = _check_layout(row_offsets, row_bits, n)
    return _unpack(_check_packed_bytes(packed, layout), layout)


# --------------------------------------------------------------------------------------
# quantize
# --------------------------------------------------------------------------------------
def _blockwise_absmax(W32: np.ndarray, g: int) -> tuple[np.ndarray, np.ndarray]:
    """``s = max_{j in group} |w_j|`` and ``w~ = w / s`` (0 where ``s = 0``), float32."""
    m, n = W32.shape
    blocks = W32.reshape(m, n // g, g)
    absmax = np.abs(blocks).max(axis=2)
    safe = np.where(absmax > 0, absmax, np.float32(1.0))
    W_norm = (blocks / safe[:, :, None]).reshape(m, n)  # 0 / 1 = 0 in the zero groups
    return W_norm, absmax


def blockwise_absmax(W: ArrayLike, group: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Normalise each group of ``group`` consecutive weights of a row by its absmax.

    ``s = max_{j in group} |w_j|`` and ``w~ = w / s`` in float32 (``w~ = 0`` where ``s = 0``),
    so ``w~`` lies in [-1, 1] (the block-wise scaling of QLoRA that LowRA keeps, Sec. 3).

    Args:
        W: (m, n) real array or tensor (cast to float32 first).
        group: g, dividing n.

    Returns:
        ``(W_norm, absmax)``: (m, n) float32 and (m, n // g) float32.

    Raises:
        TypeError: W not real, group not an integer.
        ValueError: W not 2-D/non-empty, NaN or inf in W, or g not dividing n.
    """
    W32 = _check_weight(W)
    return _blockwise_absmax(W32, _check_group(group, W32.shape[1]))


def _codes_from_normalised(
    W_norm: np.ndarray, t: np.ndarray, rb: np.ndarray
) -> np.ndarray:
    """code = #{k < 2^b - 1 : t_k < w~} per row, vectorised per precision class."""
    codes = np.empty(W_norm.shape, dtype=np.uint8)
    for b, rows in _classes(rb):
        x = W_norm[rows]
        tb = t[rows]
        acc = np.zeros(x.shape, dtype=np.uint8)
        for k in range((1 << b) - 1):
            acc += x > tb[:, k : k + 1]
        codes[rows] = acc
    return codes


def quantize_mixed_reference(
    W: ArrayLike, row_bits: ArrayLike, thresholds: ArrayLike, group: int = 64
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quantize ``W`` into the packed format with per-row precisions and thresholds (NumPy).

    Per group: ``w~ = w / absmax`` (:func:`blockwise_absmax`); per row ``c``:
    ``code = #{k < 2^b_c - 1 : t_{c,k} < w~}`` (the LowRA quantizer with the row's learned
    thresholds, Sec. 4.1); then :func:`pack_codes`.

    Args:
        W: (m, n) real array or tensor.
        row_bits: (m,) int in {1, 2, 4}.
        thresholds: (m, 15) float, row c's first 2^b_c - 1 entries non-decreasing (rest ignored).
        group: g, dividing n.

    Returns:
        ``(packed, row_offsets, absmax)``: uint8 (sum_c ceil(n b_c / 8),), int64 (m+1,),
        float32 (m, n // g).

    Raises:
        TypeError: W, row_bits or thresholds not real arrays, group not an integer.
        ValueError: bad shapes, NaN/inf in W, bits outside {1, 2, 4}, g not dividing n, NaN or
            decreasing thresholds.
    """
    W32 = _check_weight(W)
    m, n = W32.shape
    layout = _check_layout(None, row_bits, n, group, m=m)
    t = _check_thresholds(thresholds, layout.row_bits)
    return _quantize(W32, t, layout)


def _quantize(
    W32: np.ndarray, t: np.ndarray, layout: PackedLayout
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalise, bin with the rows' thresholds, pack (trusted inputs)."""
    W_norm, absmax = _blockwise_absmax(W32, layout.group)
    codes = _codes_from_normalised(W_norm, t, layout.row_bits)
    return _pack(codes, layout), layout.row_offsets, absmax


# --------------------------------------------------------------------------------------
# dequantize
# --------------------------------------------------------------------------------------
#: float32 bytes of output per block of rows: a block's indices, look-ups and scaling
#: stay in cache (L2/L3) and its result is written to the output once (measured in
#: ``benchmarks/lowra.py``)
BLOCK_BYTES = 1 << 21


def _level_tables(lut_rows: np.ndarray, b: int) -> tuple[np.ndarray, int]:
    """(k, 16) levels -> ``(table, index_bits)``: a (k * 2^index_bits,) table whose entry
    ``r * 2^index_bits + v`` holds the float32 levels of the codes packed in the value ``v``
    (LSB-first), viewed as one opaque item so that ``np.take`` moves them together (bit-exact).

    ``b = 1`` indexes by half-byte (16 entries of 4 levels: 64 floats a row); ``b = 2, 4`` by byte
    (256 entries of 4 or 2 levels), built from the half-byte tables by two broadcast copies (the
    low half-byte holds the byte's first codes)."""
    k = lut_rows.shape[0]
    if b == 1:
        # (16, 4)
        codes = (
            np.arange(16, dtype=np.uint8)[:, None] >> np.arange(4, dtype=np.uint8)
        ) & 1
        return np.ascontiguousarray(lut_rows[:, codes], dtype=np.float32).view(
            "V16"
        ).reshape(-1), 4
    if b == 2:  # half-byte tables of 2 levels, moved as one uint64
        # (16, 2)
        codes = (
            np.arange(16, dtype=np.uint8)[:, None] >> np.array([0, 2], dtype=np.uint8)
        ) & 3
        half = (
            np.ascontiguousarray(lut_rows[:, codes], dtype=np.float32)
            .view(np.uint64)
            .reshape(k, 16)
        )
        table = np.empty((k, 16, 16, 2), dtype=np.uint64)
    else:  # b == 4: a half-byte is one code, its table the row's 16 levels
        half = np.ascontiguousarray(lut_rows, dtype=np.float32)
        table = np.empty((k, 16, 16, 2), dtype=np.float32)
    # byte v = 16 hi + lo: the low half-byte's levels first
    table[:, :, :, 0] = half[:, None, :]
    table[:, :, :, 1] = half[:, :, None]
    return table.view(f"V{32 // b}").reshape(-1), 8


def _scale_groups(vals: np.ndarray, scale: np.ndarray, g: int) -> None:
    """``vals[r, j] *= scale[r, j // g]`` in place, one float32 product per element (torch's
    vectorised broadcast product when torch is present, NumPy's otherwise; the same IEEE bits)."""
    k, n = vals.shape
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency of the book
        blocks = vals.reshape(k, n // g, g)
        blocks *= scale[:, :, None]
        return
    torch.from_numpy(vals).view(k, n // g, g).mul_(torch.from_numpy(scale)[:, :, None])


def _dequant_rows(
    pw: PackedWeight,
    rows: np.ndarray,
    b: int,
    vals_buf: np.ndarray | None = None,
    idx_buf: np.ndarray | None = None,
) -> np.ndarray:
    """``W_hat[c, j] = lut[c, code[c, j]] * absmax[c, j // g]``, float32 (k, n), for the rows
    ``rows`` (all of precision b), by table look-up.

    Each packed byte (``b = 2, 4``) or half-byte (``b = 1``) indexes a per-row table of the levels
    of the codes it holds (:func:`_level_tables`), so nothing is unpacked code by code: one index
    per 4 (or 2) output values, one ``np.take`` of 16- (or 8-) byte items, then one product with
    the group scales. ``vals_buf``/``idx_buf``: optional flat float32/intp scratch buffers of at
    least ``k * (n + 64)`` and ``k * (n // 2 + 64)`` items (reused across blocks); the result may
    be a view of ``vals_buf``.
    """
    n, g = pw.layout.n, pw.layout.group
    nbytes = (n * b + 7) // 8
    k = rows.size
    # (k, nbytes) uint8
    data = _gather_rows(pw.packed, pw.layout.row_offsets, rows, nbytes)
    table, index_bits = _level_tables(pw.lut[rows], b)
    n_idx = k * nbytes * (2 if index_bits == 4 else 1)
    idx = idx_buf[:n_idx] if idx_buf is not None else np.empty(n_idx, dtype=np.intp)
    if index_bits == 4:  # half-byte indices, low half first (LSB-first order)
        idx = idx.reshape(k, nbytes, 2)
        np.bitwise_and(data, np.uint8(15), out=idx[:, :, 0], casting="unsafe")
        np.right_shift(data, np.uint8(4), out=idx[:, :, 1], casting="unsafe")
        # row r's table
        np.add(idx, (np.arange(k, dtype=np.intp) << 4)[:, None, None], out=idx)
    else:
        idx = idx.reshape(k, nbytes)
        np.copyto(idx, data, casting="unsafe")
        np.add(idx, (np.arange(k, dtype=np.intp) << 8)[:, None], out=idx)
    # codes held by a row's bytes (>= n; the last byte may be padding)
    width = nbytes * 8 // b
    vals = (
        vals_buf[: k * width]
        if vals_buf is not None
        else np.empty(k * width, dtype=np.float32)
    )
    # indices are in range
    np.take(table, idx, out=vals.view(table.dtype).reshape(idx.shape), mode="clip")
    vals = vals.reshape(k, width)
    if width != n:
        vals = np.ascontiguousarray(vals[:, :n])
    # one float32 product per element, as in the kernel
    _scale_groups(vals, pw.absmax[rows], g)
    return vals


def dequantize_mixed_reference(
    packed: ArrayLike,
    row_offsets: ArrayLike,
    row_bits: ArrayLike,
    lut: ArrayLike,
    absmax: ArrayLike,
    n: int,
    group: int = 64,
    out_dtype: Any = np.float32,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Dense ``W_hat (m, n)`` from the packed format (NumPy; vectorised per precision class).

    ``W_hat[c, j] = lut[c, code[c, j]] * absmax[c, j // g]`` computed in float32 (one rounding),
    then cast to ``out_dtype`` (round to nearest even). Each packed byte (or half-byte) is looked
    up in a per-row table of the levels it encodes, so codes are never unpacked one by one
    (the dequantization of LowRA's mixed-precision linear layer, Sec. 4 and Sec. 5 "kernels").

    Args:
        packed: (row_offsets[-1],) uint8.
        row_offsets: (m+1,) int.
        row_bits: (m,) int in {1, 2, 4}.
        lut: (m, 16) float levels (zero-padded).
        absmax: (m, n // g) float group scales.
        n: row length.
        group: g, dividing n.
        out_dtype: float32 or float16 (NumPy or torch dtype).
        out: optional C-contiguous (m, n) NumPy array of ``out_dtype`` to write into; reusing one
            buffer across calls avoids page-faulting a fresh allocation every time.

    Returns:
        (m, n) array of ``out_dtype`` (``out`` itself when given).

    Raises:
        TypeError: ``n``/``group`` not integers, lut/absmax/offsets not numeric arrays.
        ValueError: inconsistent shapes/offsets, bits outside {1, 2, 4}, g not dividing n,
            non-finite lut/absmax, an out_dtype other than float32/float16, or an ``out`` of the
            wrong shape/dtype/layout.
    """
    dt = _check_out_dtype(out_dtype)
    pw = _check_packed_weight(packed, row_offsets, row_bits, lut, absmax, n, group)
    return _dequantize_numpy(pw, dt, _check_out(out, pw.layout, dt))


def _to_float16(src: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """float32 -> float16, round to nearest even. torch's vectorised conversion gives the same
    bits as ``astype`` (IEEE) and is several times faster than NumPy's on x86."""
    if out is None:
        out = np.empty(src.shape, dtype=np.float16)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency of the book
        np.copyto(out, src, casting="unsafe")
        return out
    torch.from_numpy(out).copy_(torch.from_numpy(src))
    return out


def _dequantize_numpy(
    pw: PackedWeight, dt: np.dtype, out: np.ndarray | None = None
) -> np.ndarray:
    """The dense (m, n) weight of a trusted packed weight, in blocks of rows of one precision.

    A block holds about :data:`BLOCK_BYTES` of float32 output, so that its indices, look-ups,
    scaling and (for float16) cast stay in cache and the output is written once.
    """
    m, n = pw.layout.m, pw.layout.n
    out = np.empty((m, n), dtype=dt) if out is None else out
    rows_per = max(1, BLOCK_BYTES // (4 * n))
    vals_buf = np.empty(rows_per * (n + 64), dtype=np.float32)
    idx_buf = np.empty(rows_per * (n // 2 + 64), dtype=np.intp)
    half = np.empty((rows_per, n), dtype=np.float16) if dt == np.float16 else None
    for b, rows in pw.layout.classes():
        for start in range(0, rows.size, rows_per):
            block = rows[start : start + rows_per]
            vals = _dequant_rows(pw, block, b, vals_buf, idx_buf)
            if half is not None:
                vals = _to_float16(vals, half[: block.size])
            if block[-1] - block[0] + 1 == block.size:  # a contiguous run of rows
                out[block[0] : block[-1] + 1] = vals
            else:
                out[block] = vals
    return out


# --------------------------------------------------------------------------------------
# fused CPU loop (numba, kernels/_lowbit_fused.py): one pass, the reference's bits
# --------------------------------------------------------------------------------------
def _fused_kernel() -> Any:
    """``_lowbit_fused.dequantize_words`` (imported, hence numba, on first use), or ``None``
    when numba cannot be imported: the NumPy reference runs instead, with the same result."""
    try:
        from icml25.kernels import _lowbit_fused
    except ImportError:  # pragma: no cover - numba comes with the lowra extra
        return None
    return _lowbit_fused.dequantize_words


def _check_out(out: Any, layout: PackedLayout, dt: np.dtype) -> np.ndarray | None:
    """``out`` when it is a C-contiguous (m, n) NumPy array of ``dt`` (or None)."""
    m, n = layout.m, layout.n
    if out is not None and (
        not isinstance(out, np.ndarray)
        or out.shape != (m, n)
        or out.dtype != dt
        or not out.flags.c_contiguous
        or not out.flags.writeable
    ):
        raise ValueError(
            f"out must be a writeable C-contiguous NumPy array of shape ({m}, {n}) and "
            f"dtype {dt}"
        )
    return out


def dequantize_mixed_cpu(
    packed: ArrayLike,
    row_offsets: ArrayLike,
    row_bits: ArrayLike,
    lut: ArrayLike,
    absmax: ArrayLike,
    n: int,
    group: int = 64,
    out_dtype: Any = np.float32,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`dequantize_mixed_reference` in one fused pass on one CPU thread (numba), bit
    for bit the same result; the CPU path of :func:`dequantize_mixed`.

    The reference makes several passes over each block (widen the byte indices, ``np.take``,
    scale, cast, scatter); this loop reads each code byte once and writes each output once.
    For every group of ``g`` weights of a row it first forms the ``2^b`` values the group can
    take, ``lut[c, k] * absmax[c, q]`` (one float32 product, then float16 bits by round to
    nearest even, as ``astype`` gives), packs them into small tables indexed by a half-byte
    or byte of codes, and writes 8 output bytes per store. It needs ``group % 8 == 0`` (the
    LowRA setting, g = 64) and a little-endian machine; otherwise, or without numba, it
    returns the reference's result computed by the reference.

    Args:
        packed, row_offsets, row_bits, lut, absmax, n, group, out_dtype, out: as
            :func:`dequantize_mixed_reference` (NumPy arrays or CPU torch tensors).

    Returns:
        (m, n) NumPy array of ``out_dtype`` (``out`` itself when given).

    Raises:
        TypeError, ValueError: as :func:`dequantize_mixed_reference`.
    """
    dt = _check_out_dtype(out_dtype)
    pw = _check_packed_weight(packed, row_offsets, row_bits, lut, absmax, n, group)
    out = _check_out(out, pw.layout, dt)
    return _dequantize_fused(pw, dt, out)


def _dequantize_fused(
    pw: PackedWeight, dt: np.dtype, out: np.ndarray | None = None
) -> np.ndarray:
    """The fused loop on a trusted packed weight, or the NumPy path where it does not apply."""
    m, n, g = pw.layout.m, pw.layout.n, pw.layout.group
    kernel = _fused_kernel()
    if kernel is None or g % 8 or sys.byteorder != "little" or m == 0:
        return _dequantize_numpy(pw, dt, out)
    out = np.empty((m, n), dtype=dt) if out is None else out
    kernel(
        np.ascontiguousarray(pw.packed),
        pw.layout.row_offsets,
        pw.layout.row_bits,
        np.ascontiguousarray(pw.lut),
        np.ascontiguousarray(pw.absmax),
        n,
        g,
        out.view(np.uint8).reshape(m, n * dt.itemsize).view(np.uint64),
        dt == np.float16,
    )
    return out


# --------------------------------------------------------------------------------------
# fused dequant-matmul (reference)
# --------------------------------------------------------------------------------------
def dequant_matmul_reference(
    x: ArrayLike,
    packed: ArrayLike,
    row_offsets: ArrayLike,
    row_bits: ArrayLike,
    lut: ArrayLike,
    absmax: ArrayLike,
    n: int,
    group: int = 64,
) -> np.ndarray:
    """``y = x @ W_hat^T`` with ``W_hat`` from :func:`dequantize_mixed_reference` (float32).

    Args:
        x: (B, n) real activations (array or tensor).
        packed, row_offsets, row_bits, lut, absmax, n, group: the packed weight (m, n).

    Returns:
        (B, m) float32.

    Raises:
        TypeError: x not real, or any TypeError of :func:`dequantize_mixed_reference`.
        ValueError: x not (B, n) or not finite, or any error of :func:`dequantize_mixed_reference`.
    """
    pw = _check_packed_weight(packed, row_offsets, row_bits, lut, absmax, n, group)
    x = check_array(_real_numpy(x), "x", shape=(None, pw.layout.n), dtype=np.float32)
    return x @ _dequantize_numpy(pw, np.dtype(np.float32)).T


# --------------------------------------------------------------------------------------
# GPU launchers
# --------------------------------------------------------------------------------------
def _row_grid(n: int, m: int) -> tuple[int, int]:
    """2-D grid of the quantize/dequantize kernels: x covers the n / 8 chunks of 8 weights of a
    row (one thread each), y walks the rows (grid-stride beyond 65535)."""
    chunks = (n + 7) // 8
    return (max((chunks + THREADS - 1) // THREADS, 1), min(m, 65535))


def quantize_mixed_gpu(
    W: Any, row_bits: ArrayLike, thresholds: ArrayLike, group: int = 64
) -> tuple[Any, Any, Any]:  # pragma: no cover - needs a GPU
    """CuPy launcher of ``quantize_mixed``: same arguments, results and errors as
    :func:`quantize_mixed_reference`, bit for bit, as CuPy arrays.

    Two kernels: ``group_absmax`` (one warp per group of a row) and ``quantize_pack`` (one thread
    per 8 consecutive weights of a row: normalises them, counts the thresholds below each, and
    writes the b bytes their codes fill). Validation runs on a host copy, like the reference.

    Args:
        W: (m, n) real NumPy/CuPy array.
        row_bits, thresholds, group: as :func:`quantize_mixed_reference`.

    Returns:
        ``(packed, row_offsets, absmax)`` CuPy arrays: uint8, int64 (m+1,), float32 (m, n // g).

    Raises:
        TypeError, ValueError: as :func:`quantize_mixed_reference`.
    """
    import cupy as cp

    from icml25.kernels import load_module

    W32 = _check_weight(W)
    m, n = W32.shape
    layout = _check_layout(None, row_bits, n, group, m=m)
    t = _check_thresholds(thresholds, layout.row_bits)
    g = layout.group
    mod = load_module("lowbit")
    d_W = cp.ascontiguousarray(cp.asarray(W32))
    d_bits = cp.asarray(layout.row_bits.astype(np.int32))
    d_off = cp.asarray(layout.row_offsets)
    d_t = cp.ascontiguousarray(cp.asarray(t))
    absmax = cp.empty((m, n // g), dtype=cp.float32)
    packed = cp.empty(layout.nbytes, dtype=cp.uint8)
    n_groups = m * (n // g)
    warps_per_block = THREADS // 32
    mod.get_function("group_absmax")(
        (min((n_groups + warps_per_block - 1) // warps_per_block, 1 << 20),),
        (THREADS,),
        (d_W, absmax, np.int64(m), np.int32(n), np.int32(g)),
    )
    if layout.nbytes:
        mod.get_function("quantize_pack")(
            _row_grid(n, m),
            (THREADS,),
            (
                d_W,
                absmax,
                d_t,
                d_bits,
                d_off,
                packed,
                np.int64(m),
                np.int32(n),
                np.int32(g),
            ),
        )
    return packed, d_off, absmax


def dequantize_mixed_gpu(
    packed: Any,
    row_offsets: ArrayLike,
    row_bits: ArrayLike,
    lut: Any,
    absmax: Any,
    n: int,
    group: int = 64,
    out_dtype: Any = np.float32,
) -> Any:  # pragma: no cover - needs a GPU
    """CuPy launcher of ``dequantize_mixed``: same arguments, result and errors as
    :func:`dequantize_mixed_reference` (within 1 ulp; by construction bit for bit), as a CuPy
    (m, n) array of ``out_dtype``.

    One thread per 8 consecutive outputs of a row (it reads the b bytes holding their codes),
    the row's levels staged in shared memory. Validation of offsets and bits runs on host
    copies, the finiteness checks on the device.

    Args:
        packed, lut, absmax: NumPy or CuPy arrays of the packed weight.
        row_offsets, row_bits, n, group, out_dtype: as :func:`dequantize_mixed_reference`.

    Returns:
        (m, n) CuPy array of ``out_dtype``.

    Raises:
        TypeError, ValueError: as :func:`dequantize_mixed_reference`.
    """
    import cupy as cp

    dt = _check_out_dtype(out_dtype)
    pw = _device_packed_weight(packed, row_offsets, row_bits, lut, absmax, n, group)
    out = cp.empty((pw.layout.m, pw.layout.n), dtype=dt)
    launch_dequantize_mixed(
        pw.packed,
        cp.asarray(pw.layout.row_offsets),
        cp.asarray(pw.layout.row_bits.astype(np.int32)),
        pw.lut,
        pw.absmax,
        out,
        pw.layout.group,
    )
    return out


def _device_packed_weight(
    packed: Any,
    row_offsets: ArrayLike,
    row_bits: ArrayLike,
    lut: Any,
    absmax: Any,
    n: Any,
    group: Any,
) -> PackedWeight:  # pragma: no cover - needs a GPU
    """A :class:`PackedWeight` whose buffers are C-contiguous CuPy arrays: the layout (offsets and
    bits) checked on host copies, the buffers' shapes and finiteness on the device."""
    import cupy as cp

    layout = _check_layout(row_offsets, row_bits, n, group)
    m = layout.m
    d_packed = cp.asarray(packed)
    if (
        d_packed.ndim != 1
        or d_packed.dtype != cp.uint8
        or d_packed.size != layout.nbytes
    ):
        raise ValueError(f"packed must be 1-D uint8 with {layout.nbytes} bytes")
    d_lut = cp.ascontiguousarray(cp.asarray(lut, dtype=cp.float32))
    d_abs = cp.ascontiguousarray(cp.asarray(absmax, dtype=cp.float32))
    if d_lut.shape != (m, LUT_WIDTH):
        raise ValueError(f"lut must have shape ({m}, {LUT_WIDTH}), got {d_lut.shape}")
    if d_abs.shape != (m, layout.n // layout.group):
        raise ValueError(
            f"absmax must have shape ({m}, {layout.n // layout.group}), got {d_abs.shape}"
        )
    if not bool(cp.isfinite(d_lut).all()) or not bool(cp.isfinite(d_abs).all()):
        raise ValueError("lut or absmax contains NaN or inf")
    return PackedWeight(layout, d_packed, d_lut, d_abs)


def launch_dequantize_mixed(
    d_packed: Any,
    d_offsets: Any,
    d_bits: Any,
    d_lut: Any,
    d_absmax: Any,
    out: Any,
    group: int,
) -> None:  # pragma: no cover - needs a GPU
    """Launch the dequantize kernel on device arrays as they are, without any check or copy.

    For timing and for callers that validated once: ``d_packed`` uint8, ``d_offsets`` (m+1,)
    int64, ``d_bits`` (m,) int32, ``d_lut`` (m, 16) float32, ``d_absmax`` (m, n // g) float32,
    ``out`` (m, n) float32 or float16, all C-contiguous CuPy arrays; ``group`` is g. Nothing is
    validated: wrong inputs give wrong results or an illegal memory access.
    """
    from icml25.kernels import load_module

    m, n = out.shape
    name = "dequantize_mixed_f32" if out.dtype == np.float32 else "dequantize_mixed_f16"
    load_module("lowbit").get_function(name)(
        _row_grid(n, m),
        (THREADS,),
        (
            d_packed,
            d_offsets,
            d_bits,
            d_lut,
            d_absmax,
            out,
            np.int64(m),
            np.int32(n),
            np.int32(group),
        ),
    )


def dequant_matmul_gpu(
    x: Any,
    packed: Any,
    row_offsets: ArrayLike,
    row_bits: ArrayLike,
    lut: Any,
    absmax: Any,
    n: int,
    group: int = 64,
) -> Any:  # pragma: no cover - needs a GPU
    """CuPy launcher of the fused ``y = x @ W_hat^T``: (B, n) float32 x -> (B, m) float32 y,
    equal to :func:`dequant_matmul_reference` up to float32 summation order.

    One block per output channel c decodes row c once into shared memory, then reduces one dot
    product per batch row. Meant for small B (decode-bound); for large B dequantize then matmul.

    Args:
        x: (B, n) NumPy or CuPy activations.
        packed, row_offsets, row_bits, lut, absmax, n, group: the packed weight (m, n).

    Returns:
        (B, m) float32 CuPy array.

    Raises:
        TypeError, ValueError: as :func:`dequantize_mixed_gpu`; ValueError for x not (B, n), or
            n too long for the block's shared memory (over 227 KiB / 4 floats).
    """
    import cupy as cp

    from icml25.kernels import load_module

    pw = _device_packed_weight(packed, row_offsets, row_bits, lut, absmax, n, group)
    m, n = pw.layout.m, pw.layout.n
    d_x = cp.ascontiguousarray(cp.asarray(x, dtype=cp.float32))
    if d_x.ndim != 2 or d_x.shape[1] != n:
        raise ValueError(f"x must have shape (B, n={n}), got {d_x.shape}")
    B = d_x.shape[0]
    y = cp.empty((B, m), dtype=cp.float32)
    shared = 4 * (n + THREADS // 32)
    if shared > MAX_SHARED_BYTES:
        raise ValueError(
            f"n={n} is too long for the fused kernel's shared-memory row; "
            "use dequantize_mixed and a dense matmul"
        )
    kernel = load_module("lowbit").get_function("dequant_matmul_f32")
    # opt in to the large shared-memory carve-out (up to 227 KiB on H100/H200)
    if shared > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = shared
    kernel(
        (min(m, 1 << 20),),
        (THREADS,),
        (
            d_x,
            pw.packed,
            cp.asarray(pw.layout.row_offsets),
            cp.asarray(pw.layout.row_bits.astype(np.int32)),
            pw.lut,
            pw.absmax,
            y,
            np.int32(B),
            np.int64(m),
            np.int32(n),
            np.int32(pw.layout.group),
        ),
        shared_mem=shared,
    )
    return y


# --------------------------------------------------------------------------------------
# dispatchers
# --------------------------------------------------------------------------------------
def _on_device(*arrays: Any) -> bool:
    for a in arrays:
        if _is_cupy(a) or (_is_torch(a) and a.is_cuda):
            return True
    return False


def _torch_to_cupy(a: Any) -> Any:
    """torch CUDA tensors -> CuPy (zero-copy), torch CPU tensors -> NumPy, anything else as is."""
    if not _is_torch(a):
        return a
    if a.is_cuda:  # pragma: no cover - needs a GPU
        import cupy as cp

        return cp.from_dlpack(a.detach().contiguous())
    return a.detach().numpy()


def _as_kind_of(result: Any, like: Any) -> Any:
    """Return ``result`` (a NumPy or CuPy array) as the array kind of ``like``: CuPy stays CuPy,
    torch gets a zero-copy torch tensor (``from_dlpack`` on the GPU, ``from_numpy`` on the CPU),
    anything else NumPy."""
    if _is_torch(like):
        import torch

        return (
            torch.from_numpy(result)
            if isinstance(result, np.ndarray)
            else torch.from_dlpack(result)
        )
    if _is_cupy(like) or isinstance(result, np.ndarray):
        return result
    return result.get()  # pragma: no cover - needs a GPU


def quantize_mixed(
    W: Any, row_bits: ArrayLike, thresholds: ArrayLike, group: int = 64
) -> tuple[Any, Any, Any]:
    """Dispatcher of :func:`quantize_mixed_reference` / :func:`quantize_mixed_gpu`.

    Args:
        W: (m, n) real NumPy array or torch tensor (or CuPy array).
        row_bits, thresholds, group: as :func:`quantize_mixed_reference`.

    Returns:
        ``(packed, row_offsets, absmax)`` of the same kind as ``W`` (NumPy in -> NumPy out,
        torch in -> torch on ``W``'s device).

    Raises:
        TypeError, ValueError: as :func:`quantize_mixed_reference`.
    """
    if _on_device(W) or (
        gpu_available() and not _is_torch(W)
    ):  # pragma: no cover - needs a GPU
        parts = quantize_mixed_gpu(_torch_to_cupy(W), row_bits, thresholds, group)
    else:
        parts = quantize_mixed_reference(W, row_bits, thresholds, group)
    return tuple(_as_kind_of(a, W) for a in parts)


def dequantize_mixed(
    packed: Any,
    row_offsets: Any,
    row_bits: Any,
    lut: Any,
    absmax: Any,
    n: int,
    group: int = 64,
    out_dtype: Any = np.float32,
) -> Any:
    """Dispatcher of :func:`dequantize_mixed_reference` / :func:`dequantize_mixed_gpu`.

    The CPU path is :func:`dequantize_mixed_cpu` (the fused numba loop, bit for bit the
    reference's result; the NumPy reference where it does not apply), for torch inputs too;
    the tensor shares memory with the NumPy result.

    Args:
        packed, row_offsets, row_bits, lut, absmax: the packed weight's arrays (NumPy arrays or
            torch tensors).
        n, group: row length and absmax block size.
        out_dtype: float32 or float16, a NumPy or torch dtype.

    Returns:
        (m, n) weight of the same kind as ``packed``: a torch tensor (float32/float16, on
        ``packed``'s device) when ``packed`` is a torch tensor, else NumPy.

    Raises:
        TypeError, ValueError: as :func:`dequantize_mixed_reference`.
    """
    if _on_device(packed) or (
        gpu_available() and not _is_torch(packed)
    ):  # pragma: no cover - needs a GPU
        args = [_torch_to_cupy(a) for a in (packed, row_offsets, row_bits, lut, absmax)]
        out = dequantize_mixed_gpu(*args, n=n, group=group, out_dtype=out_dtype)
    else:
        out = dequantize_mixed_cpu(
            packed, row_offsets, row_bits, lut, absmax, n, group, out_dtype
        )
    return _as_kind_of(out, packed)


def dequant_matmul(
    x: Any,
    packed: Any,
    row_offsets: Any,
    row_bits: Any,
    lut: Any,
    absmax: Any,
    n: int,
    group: int = 64,
) -> Any:
    """Dispatcher of :func:`dequant_matmul_reference` / :func:`dequant_matmul_gpu`.

    Args:
        x: (B, n) activations (NumPy array or torch tensor).
        packed, row_offsets, row_bits, lut, absmax, n, group: the packed weight (m, n).

    Returns:
        (B, m) float32 of the same kind as ``x``.

    Raises:
        TypeError, ValueError: as :func:`dequant_matmul_reference`.
    """
    if _on_device(x, packed) or (
        gpu_available() and not _is_torch(x)
    ):  # pragma: no cover - needs a GPU
        args = [
            _torch_to_cupy(a) for a in (x, packed, row_offsets, row_bits, lut, absmax)
        ]
        y = dequant_matmul_gpu(*args, n=n, group=group)
    else:
        y = dequant_matmul_reference(
            x, packed, row_offsets, row_bits, lut, absmax, n, group
        )
    return _as_kind_of(y, x)
