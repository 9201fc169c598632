"""Packed mixed-precision format of chapter 01 (LowRA): references against naive per-element
loops, validation, NVRTC compile, and GPU parity (bit-exact codes, dequant within 1 ulp)."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.kernels import lowbit as lb

BITS = (1, 2, 4)


# --------------------------------------------------------------------------------------
# naive definitions: one element at a time, straight from the format's wording
# --------------------------------------------------------------------------------------
def naive_pack(codes, row_bits):
    m, n = codes.shape
    sizes = [-(-n * int(b) // 8) for b in row_bits]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    packed = np.zeros(int(offsets[-1]), dtype=np.uint8)
    for c in range(m):
        b = int(row_bits[c])
        for j in range(n):
            packed[offsets[c] + (j * b) // 8] |= int(codes[c, j]) << ((j * b) % 8)
    return packed, offsets


def naive_unpack(packed, offsets, row_bits, n):
    codes = np.zeros((len(row_bits), n), dtype=np.uint8)
    for c, b in enumerate(row_bits):
        b = int(b)
        for j in range(n):
            codes[c, j] = (int(packed[offsets[c] + (j * b) // 8]) >> ((j * b) % 8)) & (
                (1 << b) - 1
            )
    return codes


def naive_quantize_codes(W, row_bits, thresholds, g):
    W = np.asarray(W, dtype=np.float32)
    m, n = W.shape
    codes = np.zeros((m, n), dtype=np.uint8)
    absmax = np.zeros((m, n // g), dtype=np.float32)
    for c in range(m):
        t = thresholds[c, : (1 << int(row_bits[c])) - 1]
        for q in range(n // g):
            block = W[c, q * g : (q + 1) * g]
            s = np.float32(np.max(np.abs(block)))
            absmax[c, q] = s
            normalised = block / s if s > 0 else np.zeros_like(block)
            codes[c, q * g : (q + 1) * g] = np.searchsorted(t, normalised, side="left")
    return codes, absmax


def naive_dequant(codes, lut, absmax, g):
    m, n = codes.shape
    out = np.zeros((m, n), dtype=np.float32)
    for c in range(m):
        for j in range(n):
            out[c, j] = np.float32(lut[c, codes[c, j]]) * np.float32(absmax[c, j // g])
    return out


def random_problem(rng, m, n, g=64, bits=None, df=5.0):
    """Student-t weights, per-row precisions, sorted per-row levels and midpoint thresholds."""
    row_bits = rng.choice(BITS, m) if bits is None else np.full(m, bits)
    lut = np.zeros((m, 16), dtype=np.float32)
    thresholds = np.full((m, 15), np.inf, dtype=np.float32)
    for c in range(m):
        k = 1 << int(row_bits[c])
        levels = np.sort(rng.uniform(-1, 1, k)).astype(np.float32)
        lut[c, :k] = levels
        thresholds[c, : k - 1] = (levels[:-1] + levels[1:]) / 2
    W = rng.standard_t(df, size=(m, n)).astype(np.float32)
    return W, row_bits, lut, thresholds


def random_codes(rng, row_bits, n):
    return (
        rng.integers(0, 16, size=(len(row_bits), n))
        % (1 << np.asarray(row_bits))[:, None]
    ).astype(np.uint8)


# --------------------------------------------------------------------------------------
# packing
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "m,n", [(1, 1), (7, 3), (13, 9), (20, 64), (33, 100), (5, 257)]
)
def test_pack_unpack_round_trip_matches_naive_bit_loop(m, n):
    rng = np.random.default_rng(m * 1000 + n)
    row_bits = rng.choice(BITS, m)
    codes = random_codes(rng, row_bits, n)
    packed, offsets = lb.pack_codes(codes, row_bits)
    ref_packed, ref_offsets = naive_pack(codes, row_bits)
    np.testing.assert_array_equal(offsets, ref_offsets)
    np.testing.assert_array_equal(packed, ref_packed)
    np.testing.assert_array_equal(lb.unpack_codes(packed, offsets, row_bits, n), codes)
    np.testing.assert_array_equal(naive_unpack(packed, offsets, row_bits, n), codes)


def test_nbytes_is_sum_of_ceil_per_row():
    rng = np.random.default_rng(1)
    for n in (1, 5, 8, 63, 384):
        row_bits = rng.choice(BITS, 50)
        packed, offsets = lb.pack_codes(random_codes(rng, row_bits, n), row_bits)
        assert packed.dtype == np.uint8 and offsets.dtype == np.int64
        assert packed.size == sum(-(-n * int(b) // 8) for b in row_bits)
        assert offsets[0] == 0 and offsets[-1] == packed.size
        np.testing.assert_array_equal(np.diff(offsets), lb.row_nbytes(row_bits, n))


def test_pack_accepts_torch_and_wide_integer_codes():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    row_bits = np.array([1, 2, 4, 4])
    codes = random_codes(rng, row_bits, 16)
    packed, offsets = lb.pack_codes(
        torch.from_numpy(codes.astype(np.int64)), torch.from_numpy(row_bits)
    )
    np.testing.assert_array_equal(packed, naive_pack(codes, row_bits)[0])


# --------------------------------------------------------------------------------------
# quantize
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "m,n,g", [(17, 128, 64), (9, 24, 8), (6, 15, 5), (4, 8192, 64)]
)
def test_quantize_reference_matches_naive_searchsorted(m, n, g):
    rng = np.random.default_rng(n + g)
    W, row_bits, _, thresholds = random_problem(rng, m, n, g)
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, row_bits, thresholds, group=g
    )
    ref_codes, ref_absmax = naive_quantize_codes(W, row_bits, thresholds, g)
    np.testing.assert_array_equal(absmax, ref_absmax)
    np.testing.assert_array_equal(
        lb.unpack_codes(packed, offsets, row_bits, n), ref_codes
    )
    np.testing.assert_array_equal(packed, naive_pack(ref_codes, row_bits)[0])


def test_blockwise_absmax_normalises_into_unit_interval():
    rng = np.random.default_rng(3)
    W = rng.standard_t(3, size=(8, 128)) * 10
    W_norm, absmax = lb.blockwise_absmax(W, group=32)
    assert W_norm.dtype == np.float32 and absmax.shape == (8, 4)
    assert np.abs(W_norm).max() == 1.0
    np.testing.assert_array_equal(
        np.abs(W_norm.reshape(8, 4, 32)).max(axis=2), np.ones((8, 4), np.float32)
    )
    np.testing.assert_allclose(
        W_norm.reshape(8, 4, 32) * absmax[:, :, None], W.reshape(8, 4, 32), rtol=1e-6
    )


def test_values_on_thresholds_go_to_the_lower_bin():
    # group of 8 with absmax exactly 1 (the first weight), the rest
    # sit exactly on thresholds
    t = np.array([-0.5, 0.0, 0.25], dtype=np.float32)
    thresholds = np.full((3, 15), np.inf, dtype=np.float32)
    thresholds[0, :1] = [0.0]
    thresholds[1, :3] = t
    thresholds[2, :15] = np.linspace(-0.875, 0.875, 15, dtype=np.float32)
    W = np.zeros((3, 8), dtype=np.float32)
    W[:, 0] = 1.0
    W[0, 1:4] = [0.0, -0.0, np.nextafter(np.float32(0), np.float32(1))]
    W[1, 1:7] = [
        -0.5,
        0.0,
        0.25,
        np.nextafter(np.float32(0.25), np.float32(1)),
        -1.0,
        -0.0,
    ]
    W[2, 1:8] = thresholds[2, [0, 3, 7, 11, 14, 14, 13]]
    W[2, 6] = np.nextafter(W[2, 6], np.float32(2))
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, [1, 2, 4], thresholds, group=8
    )
    codes = lb.unpack_codes(packed, offsets, [1, 2, 4], 8)
    np.testing.assert_array_equal(absmax, np.ones((3, 1), np.float32))
    assert codes[0, :4].tolist() == [1, 0, 0, 1]
    # W[1, 7] = 0.0 sits on t_1 too
    assert codes[1, :8].tolist() == [3, 0, 1, 2, 3, 0, 1, 1]
    assert codes[2].tolist() == [15, 0, 3, 7, 11, 14, 15, 13]


def test_duplicate_thresholds_leave_a_bin_empty():
    thresholds = np.full((1, 15), np.inf, dtype=np.float32)
    thresholds[0, :3] = [0.0, 0.0, 0.5]
    W = np.array([[1.0, -0.3, 0.0, 0.2, 0.6, 0.5]], dtype=np.float32)
    packed, offsets, _ = lb.quantize_mixed_reference(W, [2], thresholds, group=6)
    assert lb.unpack_codes(packed, offsets, [2], 6)[0].tolist() == [3, 0, 0, 2, 3, 2]


def test_zero_groups_quantize_to_the_bin_of_zero_and_dequantize_to_zero():
    rng = np.random.default_rng(4)
    W, row_bits, lut, thresholds = random_problem(rng, 6, 192, 64)
    W[:, 64:128] = 0.0
    W[2] = 0.0
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, row_bits, thresholds, group=64
    )
    assert (absmax[:, 1] == 0).all() and (absmax[2] == 0).all()
    codes = lb.unpack_codes(packed, offsets, row_bits, 192)
    for c in range(6):
        zero_code = np.searchsorted(
            thresholds[c, : (1 << int(row_bits[c])) - 1], 0.0, side="left"
        )
        assert (codes[c, 64:128] == zero_code).all()
    W_hat = lb.dequantize_mixed_reference(
        packed, offsets, row_bits, lut, absmax, 192, group=64
    )
    assert (W_hat[:, 64:128] == 0).all() and (W_hat[2] == 0).all()


def test_quantize_then_dequantize_error_is_bounded_by_the_bin_width():
    rng = np.random.default_rng(5)
    m, n, g = 12, 256, 64
    W = rng.standard_t(5, size=(m, n)).astype(np.float32)
    row_bits = rng.choice(BITS, m)
    lut = np.zeros((m, 16), np.float32)
    thresholds = np.full((m, 15), np.inf, np.float32)
    for c in range(m):  # uniform grid on [-1, 1] with midpoint thresholds
        k = 1 << int(row_bits[c])
        lut[c, :k] = np.linspace(-1, 1, k)
        thresholds[c, : k - 1] = (lut[c, : k - 1] + lut[c, 1:k]) / 2
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, row_bits, thresholds, group=g
    )
    W_hat = lb.dequantize_mixed_reference(
        packed, offsets, row_bits, lut, absmax, n, group=g
    )
    half_step = (1.0 / ((1 << row_bits) - 1))[:, None, None] * absmax[:, :, None]
    err = np.abs(W_hat - W).reshape(m, n // g, g)
    assert (err <= half_step * (1 + 1e-5)).all()


# --------------------------------------------------------------------------------------
# dequantize
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "m,n,g,bits",
    [
        (23, 128, 64, None),
        (7, 15, 5, None),
        (9, 24, 8, None),
        (3, 2048, 64, 4),
        (3, 4096, 64, 2),
        (3, 8192, 64, 1),
        (40, 8192, 128, None),
    ],
)
def test_dequant_reference_matches_naive(m, n, g, bits):
    # the long rows exercise the byte-table path of the reference, the
    # short ones the nibble path
    rng = np.random.default_rng(m + n + g)
    W, row_bits, lut, thresholds = random_problem(rng, m, n, g, bits=bits)
    codes = random_codes(rng, row_bits, n)
    packed, offsets = lb.pack_codes(codes, row_bits)
    absmax = rng.gamma(2.0, 1.0, size=(m, n // g)).astype(np.float32)
    if n * m <= 20_000:
        ref = naive_dequant(codes, lut, absmax, g)
    else:  # same formula, indexed arrays instead of a Python loop
        ref = lut[np.arange(m)[:, None], codes] * np.repeat(absmax, g, axis=1)
    out32 = lb.dequantize_mixed_reference(
        packed, offsets, row_bits, lut, absmax, n, group=g
    )
    assert out32.dtype == np.float32 and out32.shape == (m, n)
    np.testing.assert_array_equal(out32, ref)
    out16 = lb.dequantize_mixed_reference(
        packed, offsets, row_bits, lut, absmax, n, group=g, out_dtype=np.float16
    )
    assert out16.dtype == np.float16
    np.testing.assert_array_equal(out16, ref.astype(np.float16))


def edge_problem(rng):
    """Packed weights whose products land on float16 subnormals, ties, 65504 and overflow."""
    m, n, g = 6, 64, 8
    row_bits = np.array([1, 2, 4, 4, 2, 1])
    lut = np.zeros((m, 16), np.float32)
    for c in range(m):
        k = 1 << int(row_bits[c])
        lut[c, :k] = np.sort(rng.uniform(-1, 1, k))
    lut[3, :16] = np.linspace(-1, 1, 16)
    absmax = np.exp2(rng.uniform(-26, 17, size=(m, n // g))).astype(np.float32)
    absmax[0, 0] = 65504.0
    absmax[1, 0] = np.float32(2.0**-24 * 1.5)  # half-way between float16 subnormals
    codes = random_codes(rng, row_bits, n)
    packed, offsets = lb.pack_codes(codes, row_bits)
    return codes, packed, offsets, row_bits, lut, absmax, n, g


def test_dequant_float16_rounding_matches_astype_on_edge_values():
    codes, packed, offsets, row_bits, lut, absmax, n, g = edge_problem(
        np.random.default_rng(11)
    )
    ref = naive_dequant(codes, lut, absmax, g)
    out = lb.dequantize_mixed_reference(
        packed, offsets, row_bits, lut, absmax, n, group=g, out_dtype=np.float16
    )
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, ref.astype(np.float16))
    assert (
        np.isinf(out).any()
        and (np.abs(out[np.isfinite(out) & (out != 0)]) < 2.0**-14).any()
    )


def test_dequant_writes_into_a_given_buffer():
    rng = np.random.default_rng(12)
    for bits in (None, 2):  # shuffled classes, and one class (gathered in place)
        W, row_bits, lut, thresholds = random_problem(rng, 9, 128, 64, bits=bits)
        packed, offsets, absmax = lb.quantize_mixed_reference(W, row_bits, thresholds)
        ref = lb.dequantize_mixed_reference(packed, offsets, row_bits, lut, absmax, 128)
        for dt in (np.float32, np.float16):
            buf = np.full((9, 128), np.nan, dtype=dt)
            got = lb.dequantize_mixed_reference(
                packed, offsets, row_bits, lut, absmax, 128, out_dtype=dt, out=buf
            )
            assert got is buf
            np.testing.assert_array_equal(buf, ref.astype(dt))
    with pytest.raises(ValueError, match="out"):
        lb.dequantize_mixed_reference(
            packed,
            offsets,
            row_bits,
            lut,
            absmax,
            128,
            out=np.empty((9, 128), np.float16),
        )
    with pytest.raises(ValueError, match="out"):
        lb.dequantize_mixed_reference(
            packed,
            offsets,
            row_bits,
            lut,
            absmax,
            128,
            out=np.empty((128, 9), np.float32).T,
        )


def test_dequant_matmul_reference_is_x_times_dequant_transpose():
    rng = np.random.default_rng(6)
    W, row_bits, lut, thresholds = random_problem(rng, 10, 128, 64)
    packed, offsets, absmax = lb.quantize_mixed_reference(W, row_bits, thresholds)
    x = rng.normal(size=(4, 128)).astype(np.float32)
    y = lb.dequant_matmul_reference(x, packed, offsets, row_bits, lut, absmax, 128)
    W_hat = lb.dequantize_mixed_reference(packed, offsets, row_bits, lut, absmax, 128)
    np.testing.assert_allclose(y, x @ W_hat.T, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="x"):
        lb.dequant_matmul_reference(
            x[:, :64], packed, offsets, row_bits, lut, absmax, 128
        )


# --------------------------------------------------------------------------------------
# the fused CPU loop (numba): the reference's bits
# --------------------------------------------------------------------------------------
def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize(
    "m,n,g,bits",
    [
        (1, 8, 8, None),
        (7, 24, 8, None),  # b = 4 rows with an odd number of code-byte pairs per group
        (13, 40, 8, 1),
        (9, 48, 16, 2),
        (11, 96, 32, 4),
        (37, 200, 8, None),  # shuffled precisions, odd m
        (5, 384, 64, None),
        (3, 12, 4, None),  # g % 8 != 0: the reference runs
        (6, 30, 3, None),
        (4, 7, 7, None),
    ],
)
def test_dequantize_mixed_cpu_matches_reference_bit_for_bit(m, n, g, bits):
    rng = np.random.default_rng(m * 31 + n + g)
    _, row_bits, lut, _ = random_problem(rng, m, n, g, bits=bits)
    codes = random_codes(rng, row_bits, n)
    packed, offsets = lb.pack_codes(codes, row_bits)
    absmax = rng.gamma(2.0, 1.0, size=(m, n // g)).astype(np.float32)
    args = (packed, offsets, row_bits, lut, absmax, n)
    for dt in (np.float32, np.float16):
        ref = lb.dequantize_mixed_reference(*args, group=g, out_dtype=dt)
        got = lb.dequantize_mixed_cpu(*args, group=g, out_dtype=dt)
        assert _same_bits(got, ref), (dt, m, n, g)
        buf = np.full((m, n), np.nan, dtype=dt)
        assert lb.dequantize_mixed_cpu(*args, group=g, out_dtype=dt, out=buf) is buf
        assert _same_bits(buf, ref)


def test_dequantize_mixed_cpu_float16_rounding_on_edge_values():
    # subnormals, ties between float16 values, 65504 and overflow to inf
    codes, packed, offsets, row_bits, lut, absmax, n, g = edge_problem(
        np.random.default_rng(11)
    )
    ref = naive_dequant(codes, lut, absmax, g)
    got = lb.dequantize_mixed_cpu(
        packed, offsets, row_bits, lut, absmax, n, group=g, out_dtype=np.float16
    )
    with np.errstate(over="ignore"):
        assert _same_bits(got, ref.astype(np.float16))
    got32 = lb.dequantize_mixed_cpu(packed, offsets, row_bits, lut, absmax, n, g)
    assert _same_bits(got32, ref)


def test_float16_bits_match_numpy_around_every_float16():
    fused = pytest.importorskip("icml25.kernels._lowbit_fused")
    # every float16 value, the float32 values either side of it, the float32 midpoints
    # between neighbouring float16 values (ties) and their neighbours, both signs
    h = np.arange(0x7C01, dtype=np.uint16).view(np.float16).astype(np.float32)
    mid = ((h[:-1].astype(np.float64) + h[1:]) / 2).astype(np.float32)
    x = np.concatenate([h, mid, np.float32(65520.0)[None], np.float32(1e30)[None]])
    x = np.concatenate([x, np.nextafter(x, np.inf), np.nextafter(x, -np.inf)])
    x = np.concatenate([x, -x, [np.inf, -np.inf, np.float32(1e-45)]]).astype(np.float32)
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [x, rng.integers(0, 2**32, 200_000).astype(np.uint32).view(np.float32)]
    )
    x = x[np.isfinite(x) | np.isinf(x)]
    x = x[~np.isnan(x)]
    got = np.array([fused.f16_bits(int(u)) for u in x.view(np.uint32)], np.int64)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16).astype(np.int64)
    np.testing.assert_array_equal(got, want)


def test_dequantize_mixed_cpu_rejects_bad_input():
    W, row_bits, lut, thresholds, packed, offsets, absmax = _valid()
    with pytest.raises(ValueError, match="row_bits"):
        lb.dequantize_mixed_cpu(packed, offsets, [1, 2, 3, 4], lut, absmax, 128)
    with pytest.raises(ValueError, match="packed"):
        lb.dequantize_mixed_cpu(packed[:-1], offsets, row_bits, lut, absmax, 128)
    with pytest.raises(ValueError, match="row_offsets"):
        lb.dequantize_mixed_cpu(packed, offsets + 1, row_bits, lut, absmax, 128)
    bad = lut.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="lut"):
        lb.dequantize_mixed_cpu(packed, offsets, row_bits, bad, absmax, 128)
    with pytest.raises(ValueError, match="absmax"):
        lb.dequantize_mixed_cpu(packed, offsets, row_bits, lut, absmax[:, :1], 128)
    with pytest.raises(ValueError, match="group"):
        lb.dequantize_mixed_cpu(packed, offsets, row_bits, lut, absmax, 128, group=48)
    with pytest.raises(ValueError, match="out_dtype"):
        lb.dequantize_mixed_cpu(
            packed, offsets, row_bits, lut, absmax, 128, out_dtype=np.float64
        )
    with pytest.raises(ValueError, match="out"):
        lb.dequantize_mixed_cpu(
            packed, offsets, row_bits, lut, absmax, 128, out=np.empty((4, 128))
        )
    with pytest.raises(TypeError, match="n"):
        lb.dequantize_mixed_cpu(packed, offsets, row_bits, lut, absmax, 128.5)
    frozen = np.empty((len(row_bits), 128), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        lb.dequantize_mixed_cpu(packed, offsets, row_bits, lut, absmax, 128, out=frozen)


def test_strided_packed_buffer_is_read_like_a_contiguous_one():
    """A strided view of the codes (``buf[::2]``) gives the same W_hat in the reference
    and the fused path (the reference's row gathers once failed on it)."""
    W, row_bits, lut, thresholds, packed, offsets, absmax = _valid()
    buf = np.zeros(2 * packed.size, np.uint8)
    buf[::2] = packed
    want = lb.dequantize_mixed_reference(packed, offsets, row_bits, lut, absmax, 128)
    for fn in (lb.dequantize_mixed_reference, lb.dequantize_mixed_cpu):
        got = fn(buf[::2], offsets, row_bits, lut, absmax, 128)
        assert _same_bits(got, want), fn.__name__


# --------------------------------------------------------------------------------------
# dispatchers
# --------------------------------------------------------------------------------------
def test_dispatchers_return_the_input_kind_on_cpu(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    rng = np.random.default_rng(7)
    W, row_bits, lut, thresholds = random_problem(rng, 8, 128, 64)
    packed, offsets, absmax = lb.quantize_mixed(W, row_bits, thresholds, group=64)
    assert isinstance(packed, np.ndarray)
    ref = lb.dequantize_mixed(packed, offsets, row_bits, lut, absmax, 128)
    assert isinstance(ref, np.ndarray)
    tp, to, ta = lb.quantize_mixed(torch.from_numpy(W), row_bits, thresholds, group=64)
    assert isinstance(tp, torch.Tensor) and tp.dtype == torch.uint8
    np.testing.assert_array_equal(tp.numpy(), packed)
    out = lb.dequantize_mixed(
        tp,
        to,
        torch.from_numpy(row_bits),
        torch.from_numpy(lut),
        ta,
        128,
        out_dtype=torch.float16,
    )
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float16
    np.testing.assert_array_equal(out.numpy(), ref.astype(np.float16))
    x = torch.randn(3, 128)
    y = lb.dequant_matmul(x, tp, to, row_bits, lut, ta, 128)
    assert isinstance(y, torch.Tensor) and y.shape == (3, 8)


# --------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------
def _valid(m=4, n=128, g=64):
    rng = np.random.default_rng(8)
    W, row_bits, lut, thresholds = random_problem(rng, m, n, g)
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, row_bits, thresholds, group=g
    )
    return W, row_bits, lut, thresholds, packed, offsets, absmax


def test_bad_bits_are_rejected():
    W, row_bits, lut, thresholds, packed, offsets, absmax = _valid()
    for bad in ([1, 2, 3, 4], [0, 1, 2, 4], [8, 1, 1, 1]):
        with pytest.raises(ValueError, match="row_bits"):
            lb.pack_codes(np.zeros((4, 8), np.uint8), bad)
        with pytest.raises(ValueError, match="row_bits"):
            lb.quantize_mixed_reference(W, bad, thresholds)
    with pytest.raises(ValueError, match="row_bits"):
        lb.dequantize_mixed_reference(packed, offsets, [1, 2, 3, 4], lut, absmax, 128)
    with pytest.raises(ValueError, match="row_bits"):
        lb.pack_codes(np.zeros((4, 8), np.uint8), [1, 2, 4])


def test_group_must_divide_the_row():
    W, row_bits, lut, thresholds, packed, offsets, absmax = _valid()
    with pytest.raises(ValueError, match="group"):
        lb.blockwise_absmax(W, group=48)
    with pytest.raises(ValueError, match="group"):
        lb.quantize_mixed_reference(W, row_bits, thresholds, group=0)
    with pytest.raises(ValueError, match="group"):
        lb.dequantize_mixed_reference(
            packed, offsets, row_bits, lut, absmax, 128, group=100
        )
    # a bool is not a count (icml25.checks)
    with pytest.raises(TypeError, match="group"):
        lb.blockwise_absmax(W, group=True)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_rejected(bad):
    W, row_bits, lut, thresholds, packed, offsets, absmax = _valid()
    W = W.copy()
    W[1, 5] = bad
    with pytest.raises(ValueError, match="W"):
        lb.blockwise_absmax(W)
    with pytest.raises(ValueError, match="W"):
        lb.quantize_mixed_reference(W, row_bits, thresholds)
    lut_bad = lut.copy()
    lut_bad[0, 0] = bad
    with pytest.raises(ValueError, match="lut"):
        lb.dequantize_mixed_reference(packed, offsets, row_bits, lut_bad, absmax, 128)
    absmax_bad = absmax.copy()
    absmax_bad[0, 0] = bad
    with pytest.raises(ValueError, match="absmax"):
        lb.dequantize_mixed_reference(packed, offsets, row_bits, lut, absmax_bad, 128)


def test_shape_mismatches_are_rejected():
    W, row_bits, lut, thresholds, packed, offsets, absmax = _valid()
    with pytest.raises(ValueError, match="W"):
        lb.blockwise_absmax(W[0])
    with pytest.raises(ValueError, match="row_bits"):
        lb.quantize_mixed_reference(W, row_bits[:3], thresholds)
    with pytest.raises(ValueError, match="thresholds"):
        lb.quantize_mixed_reference(W, row_bits, thresholds[:, :7])
    with pytest.raises(ValueError, match="lut"):
        lb.dequantize_mixed_reference(
            packed, offsets, row_bits, lut[:, :8], absmax, 128
        )
    with pytest.raises(ValueError, match="absmax"):
        lb.dequantize_mixed_reference(
            packed, offsets, row_bits, lut, absmax[:, :1], 128
        )
    with pytest.raises(ValueError, match="row_offsets"):
        lb.dequantize_mixed_reference(packed, offsets[:-1], row_bits, lut, absmax, 128)
    with pytest.raises(ValueError, match="row_offsets"):
        lb.unpack_codes(packed, offsets, row_bits, 64)  # offsets were made for n = 128
    with pytest.raises(ValueError, match="packed"):
        lb.unpack_codes(packed[:-1], offsets, row_bits, 128)
    with pytest.raises(ValueError, match="packed"):
        lb.unpack_codes(packed.astype(np.int16), offsets, row_bits, 128)
    with pytest.raises(ValueError, match="codes"):
        lb.pack_codes(np.zeros(8, np.uint8), [1])
    # the wrong kind of array (icml25.checks)
    with pytest.raises(TypeError, match="codes"):
        lb.pack_codes(np.zeros((1, 8), np.float32), [1])
    with pytest.raises(ValueError, match="out_dtype"):
        lb.dequantize_mixed_reference(
            packed, offsets, row_bits, lut, absmax, 128, out_dtype=np.float64
        )
    with pytest.raises(ValueError, match="n"):
        lb.unpack_codes(packed, offsets, row_bits, 0)


def test_codes_out_of_range_are_rejected():
    row_bits = np.array([1, 2, 4])
    codes = np.zeros((3, 8), dtype=np.int64)
    for c, value in ((0, 2), (1, 4), (2, 16), (1, -1)):
        bad = codes.copy()
        bad[c, 3] = value
        with pytest.raises(ValueError, match="codes out of range"):
            lb.pack_codes(bad, row_bits)


def test_nan_or_decreasing_thresholds_are_rejected():
    W, row_bits, lut, thresholds, packed, offsets, absmax = _valid()
    row_bits = np.array([4, 2, 1, 1])
    t = np.full((4, 15), np.inf, np.float32)
    t[0] = np.linspace(-0.9, 0.9, 15)
    t[1, :3] = [-0.5, 0.0, 0.5]
    t[2:, 0] = 0.0
    lb.quantize_mixed_reference(W, row_bits, t)  # valid
    bad = t.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="thresholds"):
        lb.quantize_mixed_reference(W, row_bits, bad)
    bad = t.copy()
    bad[0, 5] = 0.99
    with pytest.raises(ValueError, match="thresholds"):
        lb.quantize_mixed_reference(W, row_bits, bad)


# --------------------------------------------------------------------------------------
# CUDA: compile everywhere, parity on a GPU
# --------------------------------------------------------------------------------------
def test_kernel_compiles_with_nvrtc():
    pytest.importorskip("cupy")
    from icml25.kernels import compile_ptx

    ptx = compile_ptx("lowbit")
    for name in (
        "group_absmax",
        "quantize_pack",
        "dequantize_mixed_f32",
        "dequantize_mixed_f16",
        "dequant_matmul_f32",
    ):
        assert f".entry {name}" in ptx
    # no register spills / local arrays
    assert "ld.local" not in ptx and "st.local" not in ptx


GPU_SHAPES = [
    (64, 4096, 64),
    (37, 200, 8),
    (11, 15, 5),
    (5, 8192, 128),
    (70_000, 64, 64),
]


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,g", GPU_SHAPES)
def test_quantize_gpu_is_bit_exact(m, n, g):
    import cupy as cp

    rng = np.random.default_rng(m + n)
    W, row_bits, _, thresholds = random_problem(rng, m, n, g)
    W[0, :g] = 0.0  # a zero group
    if n >= 8:  # values on thresholds: w / s lands exactly on t when s = 1
        W[1, :g] = 0.0
        W[1, 0] = 1.0
        k = (1 << int(row_bits[1])) - 1
        W[1, 1 : 1 + min(k, g - 1)] = thresholds[1, : min(k, g - 1)]
    ref = lb.quantize_mixed_reference(W, row_bits, thresholds, group=g)
    out = lb.quantize_mixed_gpu(W, row_bits, thresholds, group=g)
    for r, o in zip(ref, out):
        np.testing.assert_array_equal(cp.asnumpy(o), r)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,g", GPU_SHAPES)
def test_dequantize_gpu_matches_reference(m, n, g):
    import cupy as cp

    rng = np.random.default_rng(m * n)
    W, row_bits, lut, thresholds = random_problem(rng, m, n, g)
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, row_bits, thresholds, group=g
    )
    for dt in (np.float32, np.float16):
        ref = lb.dequantize_mixed_reference(
            packed, offsets, row_bits, lut, absmax, n, group=g, out_dtype=dt
        )
        out = cp.asnumpy(
            lb.dequantize_mixed_gpu(
                packed, offsets, row_bits, lut, absmax, n, group=g, out_dtype=dt
            )
        )
        assert out.dtype == dt and out.shape == (m, n)
        # both round one float32 product (then one cast): expected
        # identical; 1 ulp is the contract
        np.testing.assert_array_max_ulp(out, ref, maxulp=1)


@pytest.mark.gpu
def test_dequant_matmul_gpu_matches_reference():
    import cupy as cp

    rng = np.random.default_rng(9)
    for m, n, B in ((96, 4096, 3), (10, 13_000, 2), (40, 200, 17)):
        g = 64 if n % 64 == 0 else 8
        W, row_bits, lut, thresholds = random_problem(rng, m, n, g)
        packed, offsets, absmax = lb.quantize_mixed_reference(
            W, row_bits, thresholds, group=g
        )
        x = rng.normal(size=(B, n)).astype(np.float32)
        ref = lb.dequant_matmul_reference(
            x, packed, offsets, row_bits, lut, absmax, n, group=g
        )
        W_hat = lb.dequantize_mixed_reference(
            packed, offsets, row_bits, lut, absmax, n, group=g
        )
        # rounding error of a float32 sum of n terms
        scale = np.abs(x) @ np.abs(W_hat).T
        y = cp.asnumpy(
            lb.dequant_matmul_gpu(x, packed, offsets, row_bits, lut, absmax, n, group=g)
        )
        # orders differ; an indexing bug is O(scale)
        assert (np.abs(y - ref) <= 1e-4 * scale + 1e-6).all()


@pytest.mark.gpu
def test_dispatchers_keep_cupy_on_device():
    import cupy as cp

    rng = np.random.default_rng(10)
    W, row_bits, lut, thresholds = random_problem(rng, 16, 256, 64)
    packed, offsets, absmax = lb.quantize_mixed(cp.asarray(W), row_bits, thresholds)
    assert isinstance(packed, cp.ndarray) and isinstance(absmax, cp.ndarray)
    out = lb.dequantize_mixed(packed, offsets, row_bits, lut, absmax, 256)
    assert isinstance(out, cp.ndarray)
    ref = lb.dequantize_mixed_reference(
        cp.asnumpy(packed), cp.asnumpy(offsets), row_bits, lut, cp.asnumpy(absmax), 256
    )
    np.testing.assert_array_max_ulp(cp.asnumpy(out), ref, maxulp=1)
    assert isinstance(
        lb.dequantize_mixed(
            packed.get(), offsets.get(), row_bits, lut, absmax.get(), 256
        ),
        np.ndarray,
    )


@pytest.mark.gpu
def test_dequantize_gpu_float16_edge_values():
    import cupy as cp

    _, packed, offsets, row_bits, lut, absmax, n, g = edge_problem(
        np.random.default_rng(11)
    )
    for dt in (np.float32, np.float16):
        ref = lb.dequantize_mixed_reference(
            packed, offsets, row_bits, lut, absmax, n, group=g, out_dtype=dt
        )
        out = cp.asnumpy(
            lb.dequantize_mixed_gpu(
                packed, offsets, row_bits, lut, absmax, n, group=g, out_dtype=dt
            )
        )
        np.testing.assert_array_max_ulp(out, ref, maxulp=1)


# --------------------------------------------------------------------------------------
# CUDA source on the CPU: the .cu compiled by g++ against a small emulation of the CUDA
# features it uses (one std::thread per CUDA thread, std::barrier for
# __syncthreads and warp shuffles).
# It checks the kernels' indexing and rounding logic where no GPU is available; it
# cannot see what only hardware shows (alignment faults, the memory model).
# --------------------------------------------------------------------------------------
EMULATION_HEADER = r"""
#include <barrier>
#include <math.h>
#include <cstring>
#include <thread>
#include <vector>
struct dim3 { unsigned x = 1, y = 1, z = 1; };
thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
std::barrier<>* g_block_barrier = nullptr;
std::vector<std::barrier<>*> g_warp_barriers;
float g_warp_buf[32][32];
float smem_storage[1 << 16];
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int off) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    g_warp_buf[warp][lane] = v;
    g_warp_barriers[warp]->arrive_and_wait();
    float r = g_warp_buf[warp][lane ^ off];
    g_warp_barriers[warp]->arrive_and_wait();
    return r;
}
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmul_rn(float a, float b) { return a * b; }
struct float4 { float x, y, z, w; };
struct uint4 { unsigned x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline unsigned short emu_f16_bits(float x) { _Float16 h = (_Float16)x; unsigned short r; std::memcpy(&r, &h, 2); return r; }
template <typename F> void launch(long long gx, long long gy, int threads, F body) {
    gridDim.x = (unsigned)gx; gridDim.y = (unsigned)gy; blockDim.x = (unsigned)threads;
    for (unsigned by = 0; by < gridDim.y; ++by)
        for (unsigned bx = 0; bx < gridDim.x; ++bx) {
            std::barrier<> bar(threads);
            g_block_barrier = &bar;
            std::vector<std::barrier<>*> warps;
            for (int w = 0; w < (threads + 31) / 32; ++w) warps.push_back(new std::barrier<>(32));
            g_warp_barriers = warps;
            std::vector<std::thread> ts;
            for (int tx = 0; tx < threads; ++tx)
                ts.emplace_back([=] { threadIdx.x = tx; blockIdx.x = bx; blockIdx.y = by; body(); });
            for (auto& t : ts) t.join();
            for (auto* w : warps) delete w;
        }
}
"""

EMULATION_ENTRY_POINTS = r"""
extern "C" {
void emu_group_absmax(long long gx, int threads, const float* W, float* absmax, long long m, int n, int g) {
    launch(gx, 1, threads, [=] { group_absmax(W, absmax, m, n, g); });
}
void emu_quantize_pack(long long gx, long long gy, int threads, const float* W, const float* absmax,
                       const float* thr, const int* bits, const long long* offsets, unsigned char* packed,
                       long long m, int n, int g) {
    launch(gx, gy, threads, [=] { quantize_pack(W, absmax, thr, bits, offsets, packed, m, n, g); });
}
void emu_dequant(int half, long long gx, long long gy, int threads, const unsigned char* packed,
                 const long long* offsets, const int* bits, const float* lut, const float* absmax, void* out,
                 long long m, int n, int g) {
    if (half) launch(gx, gy, threads, [=] { dequantize_mixed_f16(packed, offsets, bits, lut, absmax, (unsigned short*)out, m, n, g); });
    else launch(gx, gy, threads, [=] { dequantize_mixed_f32(packed, offsets, bits, lut, absmax, (float*)out, m, n, g); });
}
void emu_matmul(long long gx, int threads, const float* x, const unsigned char* packed, const long long* offsets,
                const int* bits, const float* lut, const float* absmax, float* y, int B, long long m, int n, int g) {
    launch(gx, 1, threads, [=] { dequant_matmul_f32(x, packed, offsets, bits, lut, absmax, y, B, m, n, g); });
}
}
"""


@pytest.fixture(scope="module")
def emulated_kernels(tmp_path_factory):
    import ctypes
    import re
    import shutil
    import subprocess

    from icml25.kernels import kernel_source

    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ not available")
    src = kernel_source("lowbit")
    src = src.replace("extern __shared__ float smem[];", "float* smem = smem_storage;")
    # one block runs at a time: statics are its shared memory
    src = src.replace("__shared__", "static")
    src, n_asm = re.subn(
        r'asm\("cvt\.rn\.f16\.f32 %0, %1;" : "=h"\(h\) : "f"\(x\)\);',
        "h = emu_f16_bits(x);",
        src,
    )
    assert n_asm == 1 and "asm" not in src
    folder = tmp_path_factory.mktemp("lowbit_emu")
    cpp, lib = folder / "lowbit_emu.cpp", folder / "liblowbit_emu.so"
    cpp.write_text(EMULATION_HEADER + src + EMULATION_ENTRY_POINTS)
    done = subprocess.run(
        [
            compiler,
            "-std=c++20",
            "-O1",
            "-ffp-contract=off",
            "-fPIC",
            "-shared",
            "-pthread",
            str(cpp),
            "-o",
            str(lib),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        if "barrier" in done.stderr and "No such file" in done.stderr:
            pytest.skip("g++ without C++20 <barrier>")
        raise AssertionError(done.stderr[-3000:])
    return ctypes.CDLL(str(lib))


def _emulated_quantize(L, W, row_bits, thresholds, g, rows_per_grid=None):
    import ctypes

    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    m, n = W.shape
    W = np.ascontiguousarray(W, np.float32)
    thr = np.ascontiguousarray(thresholds, np.float32)
    bits = np.ascontiguousarray(row_bits, np.int32)
    offsets = lb.make_row_offsets(row_bits, n)
    absmax = np.full((m, n // g), -1.0, np.float32)
    packed = np.full(int(offsets[-1]), 0xAB, np.uint8)  # every byte must be overwritten
    warps = lb.THREADS // 32
    L.emu_group_absmax(
        ctypes.c_longlong((m * (n // g) + warps - 1) // warps),
        ctypes.c_int(lb.THREADS),
        ptr(W),
        ptr(absmax),
        ctypes.c_longlong(m),
        ctypes.c_int(n),
        ctypes.c_int(g),
    )
    gx, gy = lb._row_grid(n, m)
    L.emu_quantize_pack(
        ctypes.c_longlong(gx),
        ctypes.c_longlong(rows_per_grid or gy),
        ctypes.c_int(lb.THREADS),
        ptr(W),
        ptr(absmax),
        ptr(thr),
        ptr(bits),
        ptr(offsets),
        ptr(packed),
        ctypes.c_longlong(m),
        ctypes.c_int(n),
        ctypes.c_int(g),
    )
    return packed, offsets, absmax


def _emulated_dequant(
    L, packed, offsets, row_bits, lut, absmax, n, g, dt, rows_per_grid=None
):
    import ctypes

    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    m = len(row_bits)
    out = np.full((m, n), np.nan, dt)
    arrays = [
        np.ascontiguousarray(a, t)
        for a, t in (
            (packed, np.uint8),
            (offsets, np.int64),
            (row_bits, np.int32),
            (lut, np.float32),
            (absmax, np.float32),
        )
    ]
    gx, gy = lb._row_grid(n, m)
    L.emu_dequant(
        ctypes.c_int(dt == np.float16),
        ctypes.c_longlong(gx),
        ctypes.c_longlong(rows_per_grid or gy),
        ctypes.c_int(lb.THREADS),
        *(ptr(a) for a in arrays),
        ptr(out),
        ctypes.c_longlong(m),
        ctypes.c_int(n),
        ctypes.c_int(g),
    )
    return out


@pytest.mark.parametrize(
    "m,n,g,rows_per_grid",
    [
        (3, 4096, 64, None),
        (9, 200, 8, 4),
        (7, 15, 5, None),
        (5, 9, 3, 2),
        (3, 2100, 7, None),
    ],
)
def test_cuda_source_matches_reference_under_cpu_emulation(
    emulated_kernels, m, n, g, rows_per_grid
):
    rng = np.random.default_rng(m * n)
    W, row_bits, lut, thresholds = random_problem(rng, m, n, g)
    W[0, :g] = 0.0  # a zero group
    W[1, :g] = 0.0  # values exactly on thresholds (s = 1)
    W[1, 0] = 1.0
    k = min((1 << int(row_bits[1])) - 1, g - 1)
    W[1, 1 : 1 + k] = thresholds[1, :k]
    ref = lb.quantize_mixed_reference(W, row_bits, thresholds, group=g)
    got = _emulated_quantize(
        emulated_kernels, W, row_bits, thresholds, g, rows_per_grid
    )
    for r, o in zip(ref, got):
        np.testing.assert_array_equal(o, r)
    for dt in (np.float32, np.float16):
        expected = lb.dequantize_mixed_reference(
            *ref[:2], row_bits, lut, ref[2], n, group=g, out_dtype=dt
        )
        out = _emulated_dequant(
            emulated_kernels,
            ref[0],
            ref[1],
            row_bits,
            lut,
            ref[2],
            n,
            g,
            dt,
            rows_per_grid,
        )
        np.testing.assert_array_equal(out, expected)


def test_cuda_dequant_edge_values_and_fused_matmul_under_cpu_emulation(
    emulated_kernels,
):
    import ctypes

    _, packed, offsets, row_bits, lut, absmax, n, g = edge_problem(
        np.random.default_rng(11)
    )
    for dt in (np.float32, np.float16):
        with np.errstate(over="ignore"):
            expected = lb.dequantize_mixed_reference(
                packed, offsets, row_bits, lut, absmax, n, group=g, out_dtype=dt
            )
        np.testing.assert_array_equal(
            _emulated_dequant(
                emulated_kernels, packed, offsets, row_bits, lut, absmax, n, g, dt
            ),
            expected,
        )
    rng = np.random.default_rng(13)
    m, n, g, B = 5, 1000, 8, 3
    W, row_bits, lut, thresholds = random_problem(rng, m, n, g)
    packed, offsets, absmax = lb.quantize_mixed_reference(
        W, row_bits, thresholds, group=g
    )
    x = rng.normal(size=(B, n)).astype(np.float32)
    y = np.full((B, m), np.nan, np.float32)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    emulated_kernels.emu_matmul(
        ctypes.c_longlong(m),
        ctypes.c_int(lb.THREADS),
        ptr(x),
        ptr(packed),
        ptr(offsets),
        ptr(row_bits.astype(np.int32)),
        ptr(lut),
        ptr(absmax),
        ptr(y),
        ctypes.c_int(B),
        ctypes.c_longlong(m),
        ctypes.c_int(n),
        ctypes.c_int(g),
    )
    ref = lb.dequant_matmul_reference(
        x, packed, offsets, row_bits, lut, absmax, n, group=g
    )
    W_hat = lb.dequantize_mixed_reference(
        packed, offsets, row_bits, lut, absmax, n, group=g
    )
    assert (np.abs(y - ref) <= 1e-5 * (np.abs(x) @ np.abs(W_hat).T) + 1e-7).all()


# --------------------------------------------------------------------------------------
# Review fixes (newcomer review of chapter 01)
# --------------------------------------------------------------------------------------
def test_bfloat16_torch_weights_are_accepted():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(40)
    W = torch.from_numpy(rng.standard_normal((4, 128)).astype(np.float32)).bfloat16()
    Wn, s = lb.blockwise_absmax(W, 64)
    Wn_ref, s_ref = lb.blockwise_absmax(W.float().numpy(), 64)
    assert np.array_equal(Wn, Wn_ref) and np.array_equal(s, s_ref)


def test_dequant_matmul_rejects_complex_x():
    rng = np.random.default_rng(41)
    rb = np.array([2, 4])
    thr = np.full((2, 15), np.inf, np.float32)
    thr[:, :3] = [-0.5, 0.0, 0.5]
    packed, off, absmax = lb.quantize_mixed_reference(
        rng.standard_normal((2, 64)), rb, thr, 64
    )
    lut = np.zeros((2, 16), np.float32)
    with pytest.raises(TypeError, match="x must be an array of real"):
        lb.dequant_matmul_reference(
            np.zeros((3, 64), complex), packed, off, rb, lut, absmax, 64, 64
        )


def test_infinite_thresholds_count_as_non_decreasing_without_warnings():
    import warnings

    rb = np.array([2])
    # every active threshold +inf: every code is 0
    thr = np.full((1, 15), np.inf, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        packed, off, _ = lb.quantize_mixed_reference(np.ones((1, 64)), rb, thr, 64)
    assert not lb.unpack_codes(packed, off, rb, 64).any()
    thr[0, :3] = [np.inf, -np.inf, 0.0]
    with pytest.raises(ValueError, match="non-decreasing"):
        lb.quantize_mixed_reference(np.ones((1, 64)), rb, thr, 64)


def test_packed_layout_is_validated_once_into_a_frozen_value():
    import dataclasses

    W, row_bits, lut, thresholds, packed, offsets, absmax = _valid()
    pw = lb._check_packed_weight(packed, offsets, row_bits, lut, absmax, 128, 64)
    assert isinstance(pw, lb.PackedWeight) and isinstance(pw.layout, lb.PackedLayout)
    assert (pw.layout.m, pw.layout.n, pw.layout.group, pw.layout.nbytes) == (
        4,
        128,
        64,
        packed.size,
    )
    assert pw.layout.row_bits.dtype == np.int64 and pw.lut.dtype == np.float32
    assert [b for b, _ in pw.layout.classes()] == sorted(set(int(b) for b in row_bits))
    with pytest.raises(dataclasses.FrozenInstanceError):
        pw.layout.n = 64
    # the private math trusts the value and gives the public result
    np.testing.assert_array_equal(
        lb._dequantize_numpy(pw, np.dtype(np.float32)),
        lb.dequantize_mixed_reference(packed, offsets, row_bits, lut, absmax, 128),
    )
    np.testing.assert_array_equal(
        lb._unpack(pw.packed, pw.layout),
        lb.unpack_codes(packed, offsets, row_bits, 128),
    )


def test_counts_of_the_wrong_kind_raise_type_errors():
    with pytest.raises(TypeError, match="n"):
        lb.row_nbytes([1, 2], 2.5)
    with pytest.raises(TypeError, match="n"):
        lb.make_row_offsets([1, 2], "8")
    with pytest.raises(TypeError, match="row_offsets"):
        lb.unpack_codes(np.zeros(3, np.uint8), np.array([0.0, 1.0, 3.0]), [1, 2], 8)


@pytest.mark.parametrize(
    "call",
    [
        lambda rb: lb.make_row_offsets(rb, 8),
        lambda rb: lb.row_nbytes(rb, 8),
        lambda rb: lb.pack_codes(np.zeros((3, 8), np.uint8), rb),
    ],
    ids=["make_row_offsets", "row_nbytes", "pack_codes"],
)
def test_float_row_bits_are_refused(call):
    with pytest.raises(TypeError, match="row_bits"):
        call(np.array([1.0, 2.0, 4.0]))
    call(np.array([1, 2, 4]))  # the same precisions as integers are fine
