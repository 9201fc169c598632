"""The fused CPU loop of ``lowbit.dequantize_mixed_cpu`` (chapter 01), compiled by numba.

Imported by :mod:`icml25.kernels.lowbit` on first use only (numba takes a moment to import and
compiles on first call; ``cache=True`` keeps the machine code in ``kernels/__pycache__``).
One thread, no fastmath: the float32 products are IEEE products, and the float16 rounding is
written out below in integers, so the result is the NumPy reference's, bit for bit
(``tests/test_kernels_lowbit.py`` checks it). The layout is the one of ``lowbit.py``'s docstring.
"""

from __future__ import annotations

import numba
import numpy as np

U64 = np.uint64
#: lane masks: entry v sets the 16-bit lane t (t < 4) to all ones where bit t of v is 1
LANES16 = np.array(
    [sum(0xFFFF << (16 * t) for t in range(4) if v >> t & 1) for v in range(16)],
    dtype=np.uint64,
)


@numba.njit(cache=True, nogil=True)
def f16_bits(u: np.int64) -> np.int64:  # pragma: no cover - compiled
    """float16 bits of the float32 whose bits are ``u`` (0 <= u < 2^32), round to nearest
    even, as NumPy's ``astype(np.float16)``; any NaN becomes the quiet NaN 0x7E00 (a finite
    level times a finite scale is never NaN). Branch-free, so that a loop of it vectorises."""
    sign = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    # normal float16: rebias the exponent (127 -> 15), round on the 13 dropped bits
    nrm = (a - (112 << 23) + 0xFFF + ((a >> 13) & 1)) >> 13
    # subnormal float16 or zero: the 24-bit significand shifted into place, rounded
    shift = min(max(126 - (a >> 23), 1), 31)
    mant = (a & 0x7FFFFF) | 0x800000
    r = mant >> shift
    rem = mant & ((np.int64(1) << shift) - 1)
    half = np.int64(1) << (shift - 1)
    r += np.int64((rem > half) | ((rem == half) & ((r & 1) == 1)))
    h = nrm if a >= 0x38800000 else r  # 0x38800000 = 2^-14, the least normal float16
    h = 0x7C00 if a >= 0x47800000 else h  # >= 2^16 (inf too): inf
    h = 0x7E00 if a > 0x7F800000 else h  # NaN
    return sign | h


@numba.njit(cache=True, nogil=True)
def row_values(  # pragma: no cover - compiled
    lut_row: np.ndarray,
    absmax_row: np.ndarray,
    nl: int,
    half: bool,
    tf: np.ndarray,
    tu: np.ndarray,
    th: np.ndarray,
) -> None:
    """``th[q nl + k]``: the output bits (uint64) of ``lut_row[k] * absmax_row[q]``, the
    float32 product, as float16 bits when ``half``; ``tf``/``tu`` a float32 scratch and its
    uint32 view of at least ``absmax_row.size * nl`` items."""
    ng = absmax_row.size
    for q in range(ng):
        s = absmax_row[q]
        for k in range(nl):
            tf[q * nl + k] = lut_row[k] * s
    cnt = ng * nl
    if half:
        for i in range(cnt):
            th[i] = U64(f16_bits(np.int64(tu[i])))
    else:
        for i in range(cnt):
            th[i] = U64(tu[i])


@numba.njit(cache=True, nogil=True)
def dequantize_words(  # pragma: no cover - compiled
    packed: np.ndarray,
    offsets: np.ndarray,
    bits: np.ndarray,
    lut: np.ndarray,
    absmax: np.ndarray,
    n: int,
    g: int,
    words: np.ndarray,
    half: bool,
) -> None:
    """Dense rows written as 64-bit words: ``words`` (m, n * itemsize / 8) uint64 is the
    output's memory (float32, or float16 when ``half``). Needs ``g % 8 == 0``, so that a
    group starts on a code byte and on an output word. Per group: its ``2^b`` values
    (:func:`row_values`), then tables of the words a half-byte or byte of codes gives (for
    1-bit rows into float16, each 16-bit lane picks one of the two values through
    :data:`LANES16`), one store per word. Trusted inputs (``lowbit`` validated them)."""
    m = bits.size
    ng = n // g
    tf = np.empty(ng * 16, np.float32)
    tu = tf.view(np.uint32)
    th = np.empty(ng * 16, np.uint64)
    P = np.empty(4, np.uint64)  # 2 codes -> 2 float32
    T = np.empty(16, np.uint64)  # a half-byte of codes -> its outputs
    for c in range(m):
        b = bits[c]
        nl = 1 << b
        row_values(lut[c], absmax[c], nl, half, tf, tu, th)
        base = offsets[c]
        wrow = words[c]
        nb = (g * b) // 8  # code bytes per group
        for q in range(ng):
            o = q * nl  # the group's 2^b output values are th[o : o + nl]
            p = base + q * nb
            if half:  # 4 float16 per word
                w = (q * g) // 4
                if b == 1:  # a byte = 8 codes = 2 words, each lane lo or hi
                    lo = th[o] * U64(0x0001000100010001)
                    flip = (th[o] ^ th[o + 1]) * U64(0x0001000100010001)
                    for k in range(nb):
                        v = packed[p + k]
                        wrow[w + 2 * k] = lo ^ (flip & LANES16[v & 15])
                        wrow[w + 2 * k + 1] = lo ^ (flip & LANES16[v >> 4])
                elif b == 2:  # a byte = 4 codes = 1 word
                    for i in range(16):
                        T[i] = th[o + (i & 3)] | (th[o + (i >> 2)] << U64(16))
                    for k in range(nb):
                        v = packed[p + k]
                        wrow[w + k] = T[v & 15] | (T[v >> 4] << U64(32))
                else:  # two bytes = 4 codes = 1 word
                    for k in range(nb // 2):
                        v0 = packed[p + 2 * k]
                        v1 = packed[p + 2 * k + 1]
                        wrow[w + k] = (
                            th[o + (v0 & 15)]
                            | (th[o + (v0 >> 4)] << U64(16))
                            | (th[o + (v1 & 15)] << U64(32))
                            | (th[o + (v1 >> 4)] << U64(48))
                        )
            else:  # 2 float32 per word
                w = (q * g) // 2
                if b == 1:  # a byte = 8 codes = 4 words
                    for i in range(4):
                        P[i] = th[o + (i & 1)] | (th[o + (i >> 1)] << U64(32))
                    for k in range(nb):
                        v = packed[p + k]
                        wrow[w + 4 * k] = P[v & 3]
                        wrow[w + 4 * k + 1] = P[(v >> 2) & 3]
                        wrow[w + 4 * k + 2] = P[(v >> 4) & 3]
                        wrow[w + 4 * k + 3] = P[v >> 6]
                elif b == 2:  # a byte = 4 codes = 2 words
                    for i in range(16):
                        T[i] = th[o + (i & 3)] | (th[o + (i >> 2)] << U64(32))
                    for k in range(nb):
                        v = packed[p + k]
                        wrow[w + 2 * k] = T[v & 15]
                        wrow[w + 2 * k + 1] = T[v >> 4]
                else:  # a byte = 2 codes = 1 word
                    for k in range(nb):
                        v = packed[p + k]
                        wrow[w + k] = th[o + (v & 15)] | (th[o + (v >> 4)] << U64(32))
