"""Tests of icml25.lowra (chapter 01): codebooks, Lloyd-Max, precision assignment, packing, LoRA."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from icml25 import lowra as L
from icml25.checks import TooLargeError

torch.set_num_threads(1)


def _student_t(rng, m, n, df=4.0):
    return (rng.standard_t(df, size=(m, n)) * 0.02).astype(np.float32)


# --------------------------------------------------------------------------------------
# NormalFloat levels
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("bits", [1, 2, 4])
def test_nf_levels_sorted_in_range_with_zero(bits):
    q = L.nf_levels(bits)
    assert q.shape == (2**bits,)
    assert np.all(np.diff(q) > 0)
    assert q.min() >= -1 and q.max() <= 1
    if bits >= 2:
        assert 0.0 in q and q[0] == -1.0 and q[-1] == 1.0


def test_nf4_matches_qlora_table():
    # the first values of bitsandbytes' NF4 table (QLoRA, App. E)
    q = L.nf_levels(4)
    assert np.allclose(
        q[:3], [-1.0, -0.6961928009986877, -0.5250730514526367], atol=1e-6
    )
    assert np.allclose(q[-2:], [0.7229568362236023, 1.0], atol=1e-6)


# --------------------------------------------------------------------------------------
# Weighted Lloyd-Max
# --------------------------------------------------------------------------------------
def test_lloyd_sse_is_non_increasing():
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = np.clip(rng.standard_t(3, 500) / 5, -1, 1)
        w = rng.uniform(0.1, 2.0, 500)
        _, _, sse, hist = L.lloyd_max_weighted(
            x, w, L.nf_levels(2), n_steps=30, tol=0.0, return_history=True
        )
        # exact monotonicity up to floating-point round-off of the prefix sums
        assert np.all(np.diff(hist) <= 1e-12 * hist[0])
        assert sse == pytest.approx(hist[-1])


def test_lloyd_sse_matches_direct_computation():
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=300), rng.uniform(0, 1, 300)
    levels, thr, sse = L.lloyd_max_weighted(
        x, w, np.array([-1.0, -0.2, 0.3, 1.0]), n_steps=7
    )
    k = np.searchsorted(thr, x, side="left")
    assert sse == pytest.approx(float((w * (x - levels[k]) ** 2).sum()), rel=1e-10)
    assert np.allclose(thr, 0.5 * (levels[1:] + levels[:-1]))


def test_lloyd_empty_bin_keeps_level():
    x = np.array([-1.0, -0.9, 0.9, 1.0])
    levels, _, _ = L.lloyd_max_weighted(
        x, np.ones(4), np.array([-1.0, 0.0, 0.05, 1.0]), n_steps=1
    )
    assert levels[1] == 0.0 and levels[2] == 0.05  # the two middle bins are empty
    assert np.allclose(levels[[0, 3]], [-0.95, 0.95])


def test_lloyd_bad_inputs():
    with pytest.raises(ValueError, match="w must be >= 0"):
        L.lloyd_max_weighted(np.zeros(3), -np.ones(3), [-1, 1])
    with pytest.raises(ValueError, match="finite"):
        L.lloyd_max_weighted(np.array([np.nan, 0, 1]), np.ones(3), [-1, 1])
    with pytest.raises(ValueError, match="at least 2"):
        L.lloyd_max_weighted(np.zeros(3), np.ones(3), [0.0])


# --------------------------------------------------------------------------------------
# Channel codebooks
# --------------------------------------------------------------------------------------
def test_channel_codebooks_error_table_is_real_space_sse():
    rng = np.random.default_rng(2)
    W = _student_t(rng, 12, 128)
    cb = L.learn_channel_codebooks(W, group=32, weight_power=1)
    Wn, s = L.blockwise_absmax(W, 32)
    S = np.repeat(s, 32, axis=1).astype(np.float64)
    for j, b in enumerate(cb.bits):
        k = np.array(
            [
                np.searchsorted(cb.thresholds[b][c], Wn[c], side="left")
                for c in range(12)
            ]
        )
        W_hat = np.take_along_axis(cb.levels[b], k, axis=1) * S
        assert np.allclose(cb.errors[:, j], ((W - W_hat) ** 2).sum(1), rtol=1e-6)


def test_learned_codebooks_beat_nf_with_exact_weights():
    # weight_power=2 minimises the real-space SSE starting from NF:
    # never worse than NF (b >= 2)
    rng = np.random.default_rng(3)
    W = _student_t(rng, 16, 256)
    learned = L.learn_channel_codebooks(W, weight_power=2)
    nf = L.nf_channel_codebooks(W)
    assert np.all(learned.errors[:, 1:] <= nf.errors[:, 1:] * (1 + 1e-9))
    assert learned.errors.sum() < nf.errors.sum()


def test_batched_codebooks_equal_single_layer():
    rng = np.random.default_rng(4)
    Ws = [_student_t(rng, 8, 128), _student_t(rng, 6, 256), _student_t(rng, 5, 128)]
    many = L.learn_channel_codebooks(Ws)
    for W, cb in zip(Ws, many):
        one = L.learn_channel_codebooks(W)
        assert np.allclose(cb.errors, one.errors, rtol=1e-9)
        assert all(np.allclose(cb.levels[b], one.levels[b]) for b in cb.bits)


def test_codebooks_bad_inputs():
    W = np.ones((4, 128), np.float32)
    with pytest.raises(ValueError, match="bits"):
        L.learn_channel_codebooks(W, bits=(1, 3))
    with pytest.raises(ValueError, match="divide"):
        L.learn_channel_codebooks(W, group=48)
    W[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        L.learn_channel_codebooks(W)


# --------------------------------------------------------------------------------------
# Precision assignment
# --------------------------------------------------------------------------------------
def _brute_force(E, nc, target):
    best, best_b = np.inf, None
    for combo in itertools.product(range(3), repeat=E.shape[0]):
        b = np.array([1, 2, 4])[list(combo)]
        if (b * nc).sum() <= target * nc.sum() + 1e-9:
            val = E[np.arange(E.shape[0]), list(combo)].sum()
            if val < best:
                best, best_b = val, b
    return best, best_b


def _tiny_instance(rng, C):
    nc = rng.choice([64, 128, 192], size=C)
    e1 = rng.uniform(1, 10, C) * nc
    E = np.stack(
        [e1, e1 * rng.uniform(0.2, 0.4, C), e1 * rng.uniform(0.01, 0.05, C)], axis=1
    )
    return E, nc


def _sse(E, b):
    return E[np.arange(E.shape[0]), np.searchsorted([1, 2, 4], b)].sum()


def test_assign_precision_exact_matches_brute_force():
    rng = np.random.default_rng(5)
    for _ in range(6):
        E, nc = _tiny_instance(rng, 6)
        for target in (1.0, 1.3, 1.75, 2.0, 2.9, 3.5):
            best, _ = _brute_force(E, nc, target)
            b = L.assign_precision_exact(E, nc, target)
            assert (b * nc).sum() <= target * nc.sum() + 1e-9
            assert _sse(E, b) == pytest.approx(best, rel=1e-9)


def test_assign_precision_two_level_is_exact_with_one_channel_per_cluster():
    rng = np.random.default_rng(6)
    for _ in range(4):
        E, nc = _tiny_instance(rng, 6)
        for target in (1.25, 2.0, 3.0):
            best, _ = _brute_force(E, nc, target)
            b = L.assign_precision(E, nc, target, n_clusters=6)
            assert _sse(E, b) == pytest.approx(best, rel=1e-9)


def test_assign_precision_never_exceeds_budget():
    rng = np.random.default_rng(7)
    for _ in range(5):
        E, nc = _tiny_instance(rng, 200)
        for target in (1.0, 1.15, 1.5, 1.75, 2.0, 2.5, 3.3, 4.0, 5.0):
            for fn in (
                lambda *a: L.assign_precision(*a, n_clusters=8),
                L.assign_precision_exact,
            ):
                b = fn(E, nc, target)
                assert set(np.unique(b)) <= {1, 2, 4}
                assert (b * nc).sum() <= target * nc.sum() + 1e-9


def test_assign_precision_two_level_not_worse_than_uniform_at_integer_budget():
    rng = np.random.default_rng(8)
    E, nc = _tiny_instance(rng, 300)
    for j, target in enumerate((1, 2, 4)):
        b = L.assign_precision(E, nc, target, n_clusters=5)
        assert _sse(E, b) <= E[:, j].sum() * (1 + 1e-12)


def test_assign_precision_bad_inputs():
    E, nc = np.ones((3, 3)), np.array([64, 64, 64])
    with pytest.raises(ValueError, match="infeasible"):
        L.assign_precision(E, nc, 0.9)
    with pytest.raises(ValueError, match="infeasible"):
        L.assign_precision_exact(E, nc, 0.5)
    with pytest.raises(ValueError, match="errors must have shape"):
        L.assign_precision(np.ones((3, 2)), nc, 2.0)
    with pytest.raises(ValueError, match="n_params"):
        L.assign_precision(E, np.array([64, 0, 64]), 2.0)
    with pytest.raises(ValueError, match="bits"):
        L.assign_precision(E, nc, 2.0, bits=(1, 2, 8))


# --------------------------------------------------------------------------------------
# Packed weights
# --------------------------------------------------------------------------------------
def _random_mixed(rng, m=10, n=256, group=64):
    W = _student_t(rng, m, n)
    cb = L.learn_channel_codebooks(W, group=group)
    rb = rng.choice([1, 2, 4], size=m)
    lut, thr = cb.tables(rb)
    return W, cb, rb, L.MixedPrecisionWeight.quantize(W, rb, lut, thr, group)


def test_mixed_precision_weight_round_trip():
    rng = np.random.default_rng(9)
    W, cb, rb, q = _random_mixed(rng)
    codes = q.codes()
    # an independent dequantization: levels[code] * absmax, per row
    expected = np.take_along_axis(q.lut, codes.astype(np.int64), axis=1) * np.repeat(
        q.absmax, 64, axis=1
    )
    assert np.array_equal(q.dequantize(), expected.astype(np.float32))
    assert all(codes[c].max() < 2 ** rb[c] for c in range(len(rb)))
    # fp16 storage of LUT/absmax costs little: the SSE stays within 1% of the e-table's
    assert ((W - q.dequantize()) ** 2).sum() == pytest.approx(cb.sse(rb), rel=1e-2)
    # re-quantizing the dequantized weight is a fixed point up to
    # fp16 rounding of the scales
    assert q.bits_per_param(False) == pytest.approx((rb * 256).sum() / (10 * 256))


def test_mixed_precision_nbytes_equals_accounting():
    rng = np.random.default_rng(10)
    _, _, rb, q = _random_mixed(rng, m=7, n=192)
    n, m, g = 192, 7, 64
    expected = (
        np.ceil(n * rb / 8).sum()
        + 2 * (2**rb).sum()
        + 2 * (2**rb - 1).sum()
        + 2 * m * n // g
        + m
    )
    assert q.nbytes == expected
    assert sum(a.nbytes for a in q.to_compact().values()) == q.nbytes
    assert q.packed.nbytes == np.ceil(n * rb / 8).sum()
    assert q.bits_per_param(True) == pytest.approx(8 * expected / (m * n))


def test_nf_quantize_tensor_is_nearest_level():
    rng = np.random.default_rng(11)
    W = _student_t(rng, 4, 128)
    q = L.nf_quantize_tensor(W, 2)
    Wn, s = L.blockwise_absmax(W)
    levels = L.nf_levels(2)
    nearest = levels[np.abs(Wn[..., None] - levels).argmin(-1)] * np.repeat(s, 64, 1)
    # fp16 rounding of LUT and scales: 1e-3 relative
    assert np.allclose(q.dequantize(), nearest, rtol=2e-3, atol=1e-6)


def test_mixed_precision_bad_inputs():
    rng = np.random.default_rng(12)
    W = _student_t(rng, 4, 128)
    lut, thr = np.zeros((4, 16)), np.full((4, 15), np.inf)
    with pytest.raises(ValueError, match="row_bits"):
        L.MixedPrecisionWeight.quantize(W, np.array([1, 2, 3, 4]), lut, thr)
    with pytest.raises(ValueError, match="divide"):
        L.MixedPrecisionWeight.quantize(W, np.full(4, 2), lut, thr, group=96)
    with pytest.raises(ValueError, match="bits"):
        L.nf_quantize_tensor(W, 3)
    W[1, 1] = np.inf
    with pytest.raises(ValueError, match="NaN or inf"):
        L.nf_quantize_tensor(W, 2)


# --------------------------------------------------------------------------------------
# LoftQ and the LoRA layer
# --------------------------------------------------------------------------------------
def test_loftq_init_reduces_error_vs_no_lora():
    rng = np.random.default_rng(13)
    W = _student_t(rng, 64, 128)

    def quant(X):
        return L.nf_quantize_tensor(X, 2)

    Q0 = quant(W).dequantize()
    base = np.linalg.norm(W - Q0)
    for T in (1, 3):
        Q, A, B = L.loftq_init(W, quant, rank=8, n_steps=T)
        assert A.shape == (64, 8) and B.shape == (128, 8)
        assert np.linalg.norm(W - Q.dequantize() - A @ B.T) < base


def test_loftq_bad_inputs():
    W = np.ones((8, 16), np.float32)
    with pytest.raises(ValueError, match="rank"):
        L.loftq_init(W, lambda X: X, rank=9)
    with pytest.raises(ValueError, match="n_steps"):
        L.loftq_init(W, lambda X: X, rank=2, n_steps=0)


def test_lowra_linear_forward_is_dense_dequant_plus_lora():
    rng = np.random.default_rng(14)
    _, _, _, q = _random_mixed(rng, m=10, n=128)
    A, B = (
        rng.normal(size=(4, 128)).astype(np.float32),
        rng.normal(size=(10, 4)).astype(np.float32),
    )
    bias = torch.randn(10)
    layer = L.LowRALinear(q, bias, rank=4, alpha=8.0, lora_A=A, lora_B=B)
    x = torch.randn(5, 128)
    W = torch.from_numpy(q.dequantize())
    expected = (
        x @ W.T + bias + 2.0 * (x @ torch.from_numpy(A).T) @ torch.from_numpy(B).T
    )
    assert torch.allclose(layer(x), expected, atol=1e-5)
    assert {n for n, p in layer.named_parameters() if p.requires_grad} == {
        "lora_A",
        "lora_B",
    }


def test_lowra_linear_matches_peft_lora():
    from peft import LoraConfig, get_peft_model

    rng = np.random.default_rng(15)
    _, _, _, q = _random_mixed(rng, m=10, n=128)
    A, B = (
        rng.normal(size=(4, 128)).astype(np.float32),
        rng.normal(size=(10, 4)).astype(np.float32),
    )
    base = nn.Sequential(nn.Linear(128, 10))
    with torch.no_grad():
        base[0].weight.copy_(torch.from_numpy(q.dequantize()))
        base[0].bias.zero_()
    peft_model = get_peft_model(
        base, LoraConfig(r=4, lora_alpha=8, target_modules=["0"], lora_dropout=0.0)
    )
    lora_layer = peft_model.base_model.model[0]
    with torch.no_grad():
        lora_layer.lora_A["default"].weight.copy_(torch.from_numpy(A))
        lora_layer.lora_B["default"].weight.copy_(torch.from_numpy(B))
    ours = L.LowRALinear(q, torch.zeros(10), rank=4, alpha=8.0, lora_A=A, lora_B=B)
    x = torch.randn(6, 128)
    assert torch.allclose(ours(x), peft_model(x), atol=1e-5)


def test_lowra_linear_rank_too_large():
    rng = np.random.default_rng(16)
    _, _, _, q = _random_mixed(rng, m=6, n=128)
    with pytest.raises(ValueError, match="rank"):
        L.LowRALinear(q, None, rank=7)


def test_apply_lowra_on_small_mlp_respects_budget_and_freezes_base():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 128))
    x = torch.randn(4, 128)
    ref = model(x)
    model, report = L.apply_lowra(model, 1.75, rank=4, loftq_n_steps=2, n_clusters=8)
    code_bits = sum(r["code_bits"] for r in report.values())
    n_params = sum(r["n_params"] for r in report.values())
    assert code_bits <= 1.75 * n_params
    assert isinstance(model[0], L.LowRALinear) and isinstance(model[2], L.LowRALinear)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"0.lora_A", "0.lora_B", "2.lora_A", "2.lora_B"}
    assert model(x).shape == ref.shape
    with pytest.raises(ValueError, match="infeasible"):
        L.apply_lowra(nn.Sequential(nn.Linear(128, 64)), 0.5, rank=2)
    with pytest.raises(ValueError, match="too large"):
        L.apply_lowra(nn.Sequential(nn.Linear(128, 64)), 2, rank=65)
    with pytest.raises(ValueError, match="needs target_bits"):
        L.apply_lowra(nn.Sequential(nn.Linear(128, 64)), 1.5, rank=2, method="nf")


def test_make_sentences_distinct_and_seeded():
    a = L.make_sentences(50, np.random.default_rng(0))
    b = L.make_sentences(50, np.random.default_rng(0))
    assert a == b and len(set(a)) == 50
    with pytest.raises(ValueError):
        L.make_sentences(0, np.random.default_rng(0))


@pytest.mark.slow
def test_load_minilm_offline_embeds():
    model, tok = L.load_minilm()
    enc = tok(["A cat sits.", "A dog runs."], padding=True, return_tensors="pt")
    with torch.no_grad():
        e = L.mean_pool_embed(model, enc["input_ids"], enc["attention_mask"])
    assert e.shape == (2, 384) and torch.isfinite(e).all()
    n_lin = sum(
        isinstance(m, nn.Linear)
        for n, m in model.named_modules()
        if n.startswith("encoder")
    )
    assert n_lin == 36
    assert (
        math.isclose(float(nn.functional.cosine_similarity(e[0], e[1], dim=0)), 1.0)
        is False
    )


# --------------------------------------------------------------------------------------
# Review fixes (newcomer review of chapter 01): bad inputs get clear
# errors, never silent results
# --------------------------------------------------------------------------------------
def test_assign_precision_columns_follow_the_given_bits_order():
    # column j of errors belongs to bits[j]; an unsorted bits tuple
    # must not relabel the columns
    rng = np.random.default_rng(21)
    E, nc = _tiny_instance(rng, 6)
    for target in (1.3, 2.0, 2.9):
        for fn in (
            L.assign_precision_exact,
            lambda *a, **k: L.assign_precision(*a, n_clusters=6, **k),
        ):
            ref = fn(E, nc, target)
            rev = fn(E[:, ::-1], nc, target, bits=(4, 2, 1))
            assert _sse(E, rev) == pytest.approx(_sse(E, ref), rel=1e-9)
            assert (rev * nc).sum() <= target * nc.sum() + 1e-9
    # a two-channel instance where relabelling the columns changes the answer
    # columns: 4, 2, 1 bits
    E2, nc2 = np.array([[0.0, 5.0, 10.0], [0.0, 5.0, 10.0]]), np.array([10, 10])
    b = L.assign_precision_exact(E2, nc2, 2.5, bits=(4, 2, 1))
    assert (b * nc2).sum() <= 50 and E2[
        np.arange(2), [{4: 0, 2: 1, 1: 2}[int(v)] for v in b]
    ].sum() == 10.0


def test_assign_precision_more_bad_inputs():
    E, nc = np.ones((3, 3)), np.array([64, 64, 64])
    # the wrong kind: TypeError (icml25.checks)
    with pytest.raises(TypeError, match="seed"):
        L.assign_precision(E, nc, 1.5, seed="a")
    with pytest.raises(ValueError, match="seed"):
        L.assign_precision(E, nc, 1.5, seed=-1)
    with pytest.raises(ValueError, match="time_limit"):
        L.assign_precision(E, nc, 1.5, time_limit=-1)
    with pytest.raises(ValueError, match="time_limit"):
        L.assign_precision_exact(E, nc, 1.5, time_limit=0)
    with pytest.raises(ValueError, match="n_clusters"):
        L.assign_precision(E, nc, 1.5, n_clusters=0)
    with pytest.raises(ValueError, match="target_bits"):
        L.assign_precision(E, nc, float("nan"))


def test_channel_codebooks_sse_rejects_unknown_precisions():
    rng = np.random.default_rng(22)
    cb = L.learn_channel_codebooks(_student_t(rng, 4, 128))
    with pytest.raises(ValueError, match="row_bits"):
        cb.sse(np.full(4, 3))
    with pytest.raises(ValueError, match="row_bits"):
        cb.sse(np.full(3, 2))
    assert cb.sse(np.full(4, 2)) == pytest.approx(cb.errors[:, 1].sum())


def test_codebooks_accept_bfloat16_and_reject_complex_and_fractional_iters():
    rng = np.random.default_rng(23)
    W = torch.from_numpy(_student_t(rng, 4, 128))
    a = L.learn_channel_codebooks(W.bfloat16())
    b = L.learn_channel_codebooks(W.bfloat16().float())
    assert np.array_equal(a.errors, b.errors)
    with pytest.raises(TypeError, match="W must be an array of real"):
        L.learn_channel_codebooks(W.numpy().astype(np.complex64))
    # the wrong kind: TypeError (icml25.checks)
    with pytest.raises(TypeError, match="n_steps"):
        L.learn_channel_codebooks(W, n_steps=2.5)
    with pytest.raises(ValueError, match="tol"):
        L.learn_channel_codebooks(W, tol=float("nan"))
    with pytest.raises(ValueError, match="tol"):
        L.lloyd_max_weighted(
            np.linspace(-1, 1, 9), np.ones(9), [0.0, 1.0], tol=float("nan")
        )
    with pytest.raises(TypeError, match="n_steps"):
        L.lloyd_max_weighted(np.linspace(-1, 1, 9), np.ones(9), [0.0, 1.0], n_steps=1.5)
    with pytest.raises(ValueError, match="n_steps"):
        L.lloyd_max_weighted(np.linspace(-1, 1, 9), np.ones(9), [0.0, 1.0], n_steps=-1)


def test_mixed_precision_weight_rejects_values_beyond_fp16():
    rng = np.random.default_rng(24)
    W, cb, rb, _ = _random_mixed(rng, m=4, n=128)
    lut, thr = cb.tables(rb)
    with pytest.raises(ValueError, match="fp16"):
        L.MixedPrecisionWeight.quantize(W * 1e6, rb, lut, thr, 64)
    with pytest.raises(ValueError, match="lut"):
        L.MixedPrecisionWeight.quantize(W, rb, lut * 1e6, thr, 64)


def test_loftq_rejects_bad_quantizer():
    W = _student_t(np.random.default_rng(25), 8, 64)
    with pytest.raises(TypeError, match="quantizer"):
        L.loftq_init(W, None, rank=2, n_steps=1)
    with pytest.raises(ValueError, match="quantizer"):
        L.loftq_init(W, lambda X: X[:4], rank=2, n_steps=1)
    with pytest.raises(ValueError, match="quantizer"):
        L.loftq_init(W, lambda X: X * np.nan, rank=2, n_steps=1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_lowra_linear_forward_in_other_dtypes(dtype):
    rng = np.random.default_rng(26)
    _, _, _, q = _random_mixed(rng, m=10, n=128)
    A, B = (
        rng.normal(size=(4, 128)).astype(np.float32),
        rng.normal(size=(10, 4)).astype(np.float32),
    )
    layer = L.LowRALinear(q, torch.randn(10), rank=4, alpha=8.0, lora_A=A, lora_B=B)
    x = torch.randn(5, 128)
    ref = layer(x)
    y = layer(x.to(dtype))
    assert y.dtype == dtype and y.shape == ref.shape
    tol = 1e-6 if dtype == torch.float64 else 5e-2
    assert torch.allclose(
        y.detach().float(),
        ref.detach(),
        atol=tol * float(ref.detach().abs().max()),
        rtol=0,
    )
    y.float().sum().backward()
    assert layer.lora_A.grad is not None and torch.isfinite(layer.lora_A.grad).all()


def test_lowra_linear_bad_inputs():
    rng = np.random.default_rng(27)
    W, _, _, q = _random_mixed(rng, m=6, n=128)
    with pytest.raises(TypeError, match="qweight"):
        L.LowRALinear(W, None, rank=2)
    with pytest.raises(ValueError, match="bias"):
        L.LowRALinear(q, torch.zeros(5), rank=2)
    with pytest.raises(TypeError, match="bias"):
        L.LowRALinear(q, np.zeros(6), rank=2)
    with pytest.raises(ValueError, match="alpha"):
        L.LowRALinear(q, None, rank=2, alpha=float("nan"))
    layer = L.LowRALinear(q, None, rank=2)
    with pytest.raises(ValueError, match="x must have last dimension"):
        layer(torch.zeros(3, 100))
    with pytest.raises(TypeError, match="x must be a floating-point"):
        layer(torch.zeros(3, 128, dtype=torch.int64))


def test_apply_lowra_bad_inputs():
    mlp = lambda: nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 128))  # noqa: E731
    with pytest.raises(ValueError, match="alpha"):
        L.apply_lowra(mlp(), 2, rank=4, alpha=0)
    with pytest.raises(ValueError, match="alpha"):
        L.apply_lowra(mlp(), 2, rank=4, alpha=float("nan"))
    with pytest.raises(ValueError, match="loftq_n_steps"):
        L.apply_lowra(mlp(), 2, rank=4, loftq_n_steps=-1)
    with pytest.raises(ValueError, match="rank must be an integer >= 1"):
        L.apply_lowra(mlp(), 2, rank=0)
    with pytest.raises(TypeError, match="model"):
        L.apply_lowra(None, 2, rank=4)
    with pytest.raises(ValueError, match="target_bits"):
        L.apply_lowra(mlp(), float("nan"), rank=4)
    with pytest.raises(ValueError, match="no nn.Linear"):
        L.apply_lowra(mlp(), 2, rank=4, target_modules=["q_proj"])
    with pytest.raises(TypeError, match="target_modules"):
        L.apply_lowra(mlp(), 2, rank=4, target_modules=[0])
    rng = np.random.default_rng(28)
    wrong_shape = L.learn_channel_codebooks(_student_t(rng, 8, 128))
    with pytest.raises(ValueError, match=r"codebooks\['0'\]"):
        L.apply_lowra(mlp(), 2, rank=4, codebooks={"0": wrong_shape})
    wrong_group = L.learn_channel_codebooks(_student_t(rng, 64, 128), group=32)
    with pytest.raises(ValueError, match=r"codebooks\['0'\]"):
        L.apply_lowra(mlp(), 2, rank=4, codebooks={"0": wrong_group})
    only_two = L.learn_channel_codebooks(_student_t(rng, 64, 128), bits=(2,))
    with pytest.raises(ValueError, match="same candidate bits"):
        L.apply_lowra(mlp(), 2, rank=4, codebooks={"0": only_two})
    with pytest.raises(TypeError, match="rng"):
        L.make_sentences(3, 0)


def test_apply_lowra_single_name_and_bfloat16_model():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 128))
    _, report = L.apply_lowra(
        model, 2, rank=4, target_modules="2", n_clusters=4, loftq_n_steps=1
    )
    assert (
        list(report) == ["2"]
        and isinstance(model[2], L.LowRALinear)
        and isinstance(model[0], nn.Linear)
    )
    ref = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 128)).bfloat16()
    qmodel, report = L.apply_lowra(ref, 1.5, rank=4, n_clusters=4, loftq_n_steps=1)
    assert sum(r["code_bits"] for r in report.values()) <= 1.5 * sum(
        r["n_params"] for r in report.values()
    )
    y = qmodel(torch.randn(3, 128, dtype=torch.bfloat16))
    assert y.dtype == torch.bfloat16 and torch.isfinite(y.float()).all()


def test_distill_finetune_and_sse_vs_budget_bad_inputs():
    model = nn.Sequential(nn.Linear(4, 4))
    batch = {
        "input_ids": torch.zeros(3, 2, dtype=torch.long),
        "attention_mask": torch.ones(3, 2, dtype=torch.long),
    }
    # the wrong kind: TypeError (icml25.checks)
    with pytest.raises(TypeError, match="n_steps"):
        L.distill_finetune(model, batch, torch.zeros(3, 4), n_steps=2.5)
    for kw, match in (
        ({"n_steps": 0}, "n_steps"),
        ({"n_steps": 2, "batch_size": 0}, "batch_size"),
        ({"n_steps": 2, "lr": -1.0}, "lr"),
        ({"n_steps": 2, "lr": float("nan")}, "lr"),
    ):
        with pytest.raises(ValueError, match=match):
            L.distill_finetune(model, batch, torch.zeros(3, 4), **kw)
    with pytest.raises(ValueError, match="teacher"):
        L.distill_finetune(model, batch, torch.zeros(5, 4), n_steps=1)
    rng = np.random.default_rng(29)
    W = _student_t(rng, 4, 128)
    with pytest.raises(ValueError, match="same"):
        L.sse_vs_budget(
            [L.learn_channel_codebooks(W)],
            [L.nf_channel_codebooks(W, bits=(1, 2))],
            [1.5],
        )
    with pytest.raises(ValueError, match="same"):
        L.sse_vs_budget([], [], [1.5])


# --------------------------------------------------------------------------------------
# issue 13: refused inputs, checked solver results, LoftQ's best iterate
# --------------------------------------------------------------------------------------
def test_assignment_bits_refuses_bits_outside_the_allowed_set_and_negative_counts():
    assert L.assignment_bits([1, 2, 4], [10, 10, 10]) == 70
    with pytest.raises(ValueError, match="row_bits"):
        L.assignment_bits([1, 3, 4], [10, 10, 10])
    with pytest.raises(ValueError, match="row_bits"):
        L.assignment_bits([8], [10])
    with pytest.raises(ValueError, match="n_params"):
        L.assignment_bits([1, 2, 4], [10, -5, 10])
    with pytest.raises(ValueError, match="n_params"):
        L.assignment_bits([1, 2, 4], [10, 10])
    with pytest.raises(TypeError, match="n_params"):
        L.assignment_bits([1, 2, 4], [10.5, 10, 10])


class _FakeMilpResult:
    def __init__(self, x, status=0, message="fake"):
        self.x, self.status, self.message = x, status, message
        self.success = status == 0


def _patch_milp(monkeypatch, make_x, status=0):
    import scipy.optimize

    def fake_milp(c, *args, **kwargs):
        return _FakeMilpResult(make_x(np.asarray(c).size), status)

    monkeypatch.setattr(scipy.optimize, "milp", fake_milp)


@pytest.mark.parametrize(
    "case",
    ["infeasible", "no_precision", "two_precisions", "fractional", "over_budget"],
)
def test_assigners_refuse_an_infeasible_or_failed_solver_result(monkeypatch, case):
    rng = np.random.default_rng(30)
    E, nc = _tiny_instance(rng, 6)  # 6 channels x 3 precisions, budget 1.5 bits
    make = {
        "infeasible": lambda k: None,
        "no_precision": lambda k: np.zeros(k),  # a channel with no precision
        # a channel with two
        "two_precisions": lambda k: np.tile([1.0, 1.0, 0.0], k // 3),
        "fractional": lambda k: np.tile([0.5, 0.5, 0.0], k // 3),
        # every channel at 4 bits
        "over_budget": lambda k: np.tile([0.0, 0.0, 1.0], k // 3),
    }[case]
    _patch_milp(monkeypatch, make, status=2 if case == "infeasible" else 0)
    match = {
        "infeasible": "no usable solution",
        "no_precision": "equality row",
        "two_precisions": "equality row",
        "fractional": "non-integral",
        "over_budget": "bit budget",
    }[case]
    with pytest.raises(RuntimeError, match=match):
        L.assign_precision_exact(E, nc, 1.5)
    with pytest.raises(RuntimeError, match=match):
        L.assign_precision(E, nc, 1.5, n_clusters=6)


def test_assigners_accept_a_time_limited_incumbent(monkeypatch):
    rng = np.random.default_rng(31)
    E, nc = _tiny_instance(rng, 6)
    # every channel at 1 bit
    _patch_milp(monkeypatch, lambda k: np.tile([1.0, 0.0, 0.0], k // 3), status=1)
    assert (L.assign_precision_exact(E, nc, 1.5) == 1).all()


def test_loftq_returns_its_best_iterate_when_the_objective_rises():
    # Gaussian 64x64, rank 8, NF2: the LoftQ objective falls for
    # 2 iterations, then rises
    W = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)

    def quant(X):
        return L.nf_quantize_tensor(X, 2)

    def J(Q, A, B):
        return float(((W - Q.dequantize() - A @ B.T).astype(np.float64) ** 2).sum())

    # every iterate of the plain loop (what the old loftq_init returned the last of)
    AB, iterates = np.zeros_like(W), []
    for _ in range(6):
        Q = quant(W - AB)
        U, S, V = np.linalg.svd(W - Q.dequantize(), full_matrices=False)
        A, B = U[:, :8] * np.sqrt(S[:8]), V[:8].T * np.sqrt(S[:8])
        AB = A @ B.T
        iterates.append(J(Q, A, B))
    assert int(np.argmin(iterates)) < 5 and iterates[-1] > 1.05 * min(iterates)
    got = J(*L.loftq_init(W, quant, rank=8, n_steps=6))
    assert got == pytest.approx(min(iterates), rel=1e-4)
    assert got < iterates[-1]
    # best-so-far: more iterations are never worse
    Js = [J(*L.loftq_init(W, quant, rank=8, n_steps=T)) for T in range(1, 7)]
    assert all(b <= a for a, b in zip(Js, Js[1:]))


# --------------------------------------------------------------------------------------
# issue 13, second round: exact bit totals, integer bits, rng
# streams, sizes refused up front
# --------------------------------------------------------------------------------------
def test_assignment_bits_is_exact_beyond_int64():
    # int64 would wrap to 0
    assert L.assignment_bits(np.array([4]), np.array([2**62])) == 2**64
    assert L.assignment_bits([1, 2, 4], [2**62, 2**62, 2**61]) == 2**62 + 2**63 + 2**63
    assert L.assignment_bits([], []) == 0


def test_float_row_bits_are_refused():
    with pytest.raises(TypeError, match="row_bits"):
        L.assignment_bits([1.0, 2.0, 4.0], [10, 10, 10])
    with pytest.raises(TypeError, match="row_bits"):
        L.assignment_bits(np.array([1.5]), [10])
    assert L.assignment_bits(np.array([1, 2, 4], dtype=np.int8), [10, 10, 10]) == 70


def test_assign_precision_budget_exact_for_huge_counts():
    # sum n_c overflows int64 without Python integers: the uniform 4-bit
    # answer must stay feasible
    E = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]])
    out = L.assign_precision(E, np.array([2**62, 2**62]), 4.0, n_clusters=1)
    assert out.tolist() == [4, 4]


def _mlp():
    return nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 128))


def test_apply_lowra_rng_seeds_the_adapter_init_and_kmeans_seed_the_clustering():
    torch.manual_seed(0)
    base = _mlp()
    kw = dict(rank=4, loftq_n_steps=0, n_clusters=4, kmeans_seed=3)
    a, _ = L.apply_lowra(
        copy.deepcopy(base), 1.75, rng=torch.Generator().manual_seed(7), **kw
    )
    b, _ = L.apply_lowra(
        copy.deepcopy(base), 1.75, rng=torch.Generator().manual_seed(7), **kw
    )
    c, _ = L.apply_lowra(
        copy.deepcopy(base), 1.75, rng=torch.Generator().manual_seed(8), **kw
    )
    assert torch.equal(a[0].lora_A, b[0].lora_A) and not torch.equal(
        a[0].lora_A, c[0].lora_A
    )
    with pytest.raises(TypeError, match="rng"):
        L.apply_lowra(copy.deepcopy(base), 1.75, rng=7, **kw)
    with pytest.raises(TypeError, match="rng"):
        L.apply_lowra(copy.deepcopy(base), 1.75, rng=np.random.default_rng(7), **kw)


def test_distill_finetune_takes_a_torch_generator():
    torch.manual_seed(0)
    model, _ = L.apply_lowra(
        nn.Sequential(nn.Linear(4, 4)),
        2,
        rank=2,
        loftq_n_steps=1,
        group=4,
        n_clusters=1,
    )

    class _Enc(nn.Module):  # a stand-in encoder: last_hidden_state from embedded ids
        def __init__(self, inner):
            super().__init__()
            self.emb, self.inner = nn.Embedding(10, 4), inner
            self.emb.weight.requires_grad_(False)

        def forward(self, input_ids, attention_mask):
            return type(
                "Out", (), {"last_hidden_state": self.inner(self.emb(input_ids))}
            )()

    batch = {
        "input_ids": torch.randint(0, 10, (12, 3)),
        "attention_mask": torch.ones(12, 3, dtype=torch.long),
    }
    teacher = torch.randn(12, 4)
    runs = []
    for s in (5, 5, 6):
        enc = _Enc(copy.deepcopy(model))
        torch.manual_seed(0)
        enc.emb.weight.copy_(torch.randn(10, 4))
        runs.append(
            L.distill_finetune(
                enc,
                batch,
                teacher,
                n_steps=5,
                batch_size=4,
                rng=torch.Generator().manual_seed(s),
            )
        )
    assert runs[0] == runs[1] and runs[0] != runs[2]
    with pytest.raises(TypeError, match="rng"):
        L.distill_finetune(enc, batch, teacher, n_steps=2, rng=0)
    with pytest.raises(TypeError, match="seed"):
        # the old int seed is gone
        L.distill_finetune(enc, batch, teacher, n_steps=2, seed=0)


def test_apply_lowra_checks_every_argument_before_any_work(monkeypatch):
    import icml25.lowra.experiments as X

    def boom(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(X, "learn_channel_codebooks", boom)
    monkeypatch.setattr(X, "nf_channel_codebooks", boom)
    for kw, err in (
        ({"kmeans_seed": 2.5}, TypeError),
        ({"kmeans_seed": -1}, ValueError),
        ({"n_clusters": 0}, ValueError),
        ({"n_clusters": 1.5}, TypeError),
        ({"group": 48}, ValueError),
        ({"group": "64"}, TypeError),
        ({"weight_power": 3}, ValueError),
        ({"cache_dequantized": "yes"}, TypeError),
        ({"rng": 0}, TypeError),
        ({"codebooks": [1]}, TypeError),
    ):
        name = next(iter(kw))
        with pytest.raises(err, match=name):
            L.apply_lowra(_mlp(), 1.75, rank=4, **kw)


# a view: 4 TB if ever converted
_BIG = np.broadcast_to(np.float32(0.01), (10**6, 10**6))


@pytest.mark.parametrize(
    "call",
    [
        lambda: L.learn_channel_codebooks(_BIG),
        lambda: L.learn_channel_codebooks([_BIG]),
        lambda: L.nf_channel_codebooks(_BIG),
        lambda: L.learn_channel_codebooks(
            np.ones((4, 128), np.float32), n_steps=10**15
        ),
        lambda: L.loftq_init(
            np.ones((64, 128), np.float32), lambda X: X, 4, n_steps=10**12
        ),
        lambda: L.apply_lowra(
            nn.Sequential(nn.Linear(2**17, 2**17, device="meta")), 2, rank=4
        ),
        lambda: L.apply_lowra(_mlp(), 1.75, rank=4, loftq_n_steps=10**12),
        lambda: L.assign_precision_exact(np.ones((10**6, 3)), np.full(10**6, 64), 2.0),
        lambda: L.assign_precision(
            np.ones((10**6, 3)), np.full(10**6, 64), 2.0, n_clusters=10**6
        ),
    ],
    ids=[
        "learn",
        "learn_list",
        "nf",
        "lloyd_n_steps",
        "loftq_n_steps",
        "apply_huge_layer",
        "apply_loftq_n_steps",
        "assign_exact",
        "assign_n_clusters",
    ],
)
def test_sizes_that_cannot_fit_are_refused_at_once(call):
    import time

    t0 = time.perf_counter()
    with pytest.raises(TooLargeError, match="would"):
        call()
    assert time.perf_counter() - t0 < 1.0


def test_distill_finetune_refuses_a_run_that_cannot_finish():
    import time

    model, _ = L.apply_lowra(
        nn.Sequential(nn.Linear(4, 4)),
        2,
        rank=2,
        loftq_n_steps=1,
        group=4,
        n_clusters=1,
    )
    batch = {
        "input_ids": torch.zeros(3, 2, dtype=torch.long),
        "attention_mask": torch.ones(3, 2, dtype=torch.long),
    }
    t0 = time.perf_counter()
    with pytest.raises(TooLargeError, match="n_steps"):
        L.distill_finetune(model, batch, torch.zeros(3, 4), n_steps=10**15)
    with pytest.raises(TooLargeError, match="batch_size"):
        L.distill_finetune(
            model, batch, torch.zeros(3, 4), n_steps=1, batch_size=10**13
        )
    assert time.perf_counter() - t0 < 1.0
