"""Tests of icml25.lowra (chapter 01): codebooks, Lloyd-Max, precision assignment, packing, LoRA."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from icml25 import lowra as L

torch.set_num_threads(1)


def _student_t(rng, m, n, df=4.0):
    return (rng.standard_t(df, size=(m, n)) * 0.02).astype(np.float32)


# ------------------------------------------------------------------------------------------------
# NormalFloat levels
# ------------------------------------------------------------------------------------------------
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
    assert np.allclose(q[:3], [-1.0, -0.6961928009986877, -0.5250730514526367], atol=1e-6)
    assert np.allclose(q[-2:], [0.7229568362236023, 1.0], atol=1e-6)


# ------------------------------------------------------------------------------------------------
# Weighted Lloyd-Max
# ------------------------------------------------------------------------------------------------
def test_lloyd_sse_is_non_increasing():
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = np.clip(rng.standard_t(3, 500) / 5, -1, 1)
        w = rng.uniform(0.1, 2.0, 500)
        _, _, sse, hist = L.lloyd_max_weighted(x, w, L.nf_levels(2), iters=30, tol=0.0, return_history=True)
        # exact monotonicity up to floating-point round-off of the prefix sums
        assert np.all(np.diff(hist) <= 1e-12 * hist[0])
        assert sse == pytest.approx(hist[-1])


def test_lloyd_sse_matches_direct_computation():
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=300), rng.uniform(0, 1, 300)
    levels, thr, sse = L.lloyd_max_weighted(x, w, np.array([-1.0, -0.2, 0.3, 1.0]), iters=7)
    k = np.searchsorted(thr, x, side="left")
    assert sse == pytest.approx(float((w * (x - levels[k]) ** 2).sum()), rel=1e-10)
    assert np.allclose(thr, 0.5 * (levels[1:] + levels[:-1]))


def test_lloyd_empty_bin_keeps_level():
    x = np.array([-1.0, -0.9, 0.9, 1.0])
    levels, _, _ = L.lloyd_max_weighted(x, np.ones(4), np.array([-1.0, 0.0, 0.05, 1.0]), iters=1)
    assert levels[1] == 0.0 and levels[2] == 0.05  # the two middle bins are empty
    assert np.allclose(levels[[0, 3]], [-0.95, 0.95])


def test_lloyd_bad_inputs():
    with pytest.raises(ValueError, match="w must be non-negative"):
        L.lloyd_max_weighted(np.zeros(3), -np.ones(3), [-1, 1])
    with pytest.raises(ValueError, match="finite"):
        L.lloyd_max_weighted(np.array([np.nan, 0, 1]), np.ones(3), [-1, 1])
    with pytest.raises(ValueError, match="at least 2"):
        L.lloyd_max_weighted(np.zeros(3), np.ones(3), [0.0])


# ------------------------------------------------------------------------------------------------
# Channel codebooks
# ------------------------------------------------------------------------------------------------
def test_channel_codebooks_error_table_is_real_space_sse():
    rng = np.random.default_rng(2)
    W = _student_t(rng, 12, 128)
    cb = L.learn_channel_codebooks(W, group=32, weight_power=1)
    Wn, s = L.blockwise_absmax(W, 32)
    S = np.repeat(s, 32, axis=1).astype(np.float64)
    for j, b in enumerate(cb.bits):
        k = np.array([np.searchsorted(cb.thresholds[b][c], Wn[c], side="left") for c in range(12)])
        W_hat = np.take_along_axis(cb.levels[b], k, axis=1) * S
        assert np.allclose(cb.errors[:, j], ((W - W_hat) ** 2).sum(1), rtol=1e-6)


def test_learned_codebooks_beat_nf_with_exact_weights():
    # weight_power=2 minimises the real-space SSE starting from NF: never worse than NF (b >= 2)
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


# ------------------------------------------------------------------------------------------------
# Precision assignment
# ------------------------------------------------------------------------------------------------
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
    E = np.stack([e1, e1 * rng.uniform(0.2, 0.4, C), e1 * rng.uniform(0.01, 0.05, C)], axis=1)
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
            for fn in (lambda *a: L.assign_precision(*a, n_clusters=8), L.assign_precision_exact):
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


# ------------------------------------------------------------------------------------------------
# Packed weights
# ------------------------------------------------------------------------------------------------
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
    expected = np.take_along_axis(q.lut, codes.astype(np.int64), axis=1) * np.repeat(q.absmax, 64, axis=1)
    assert np.array_equal(q.dequantize(), expected.astype(np.float32))
    assert all(codes[c].max() < 2 ** rb[c] for c in range(len(rb)))
    # fp16 storage of LUT/absmax costs little: the SSE stays within 1% of the e-table's
    assert ((W - q.dequantize()) ** 2).sum() == pytest.approx(cb.sse(rb), rel=1e-2)
    # re-quantizing the dequantized weight is a fixed point up to fp16 rounding of the scales
    assert q.bits_per_param(False) == pytest.approx((rb * 256).sum() / (10 * 256))


def test_mixed_precision_nbytes_equals_accounting():
    rng = np.random.default_rng(10)
    _, _, rb, q = _random_mixed(rng, m=7, n=192)
    n, m, g = 192, 7, 64
    expected = (np.ceil(n * rb / 8).sum() + 2 * (2**rb).sum() + 2 * (2**rb - 1).sum() + 2 * m * n // g + m)
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


# ------------------------------------------------------------------------------------------------
# LoftQ and the LoRA layer
# ------------------------------------------------------------------------------------------------
def test_loftq_init_reduces_error_vs_no_lora():
    rng = np.random.default_rng(13)
    W = _student_t(rng, 64, 128)

    def quant(X):
        return L.nf_quantize_tensor(X, 2)

    Q0 = quant(W).dequantize()
    base = np.linalg.norm(W - Q0)
    for T in (1, 3):
        Q, A, B = L.loftq_init(W, quant, rank=8, iters=T)
        assert A.shape == (64, 8) and B.shape == (128, 8)
        assert np.linalg.norm(W - Q.dequantize() - A @ B.T) < base


def test_loftq_bad_inputs():
    W = np.ones((8, 16), np.float32)
    with pytest.raises(ValueError, match="rank"):
        L.loftq_init(W, lambda X: X, rank=9)
    with pytest.raises(ValueError, match="iters"):
        L.loftq_init(W, lambda X: X, rank=2, iters=0)


def test_lowra_linear_forward_is_dense_dequant_plus_lora():
    rng = np.random.default_rng(14)
    _, _, _, q = _random_mixed(rng, m=10, n=128)
    A, B = rng.normal(size=(4, 128)).astype(np.float32), rng.normal(size=(10, 4)).astype(np.float32)
    bias = torch.randn(10)
    layer = L.LowRALinear(q, bias, rank=4, alpha=8.0, lora_A=A, lora_B=B)
    x = torch.randn(5, 128)
    W = torch.from_numpy(q.dequantize())
    expected = x @ W.T + bias + 2.0 * (x @ torch.from_numpy(A).T) @ torch.from_numpy(B).T
    assert torch.allclose(layer(x), expected, atol=1e-5)
    assert {n for n, p in layer.named_parameters() if p.requires_grad} == {"lora_A", "lora_B"}


def test_lowra_linear_matches_peft_lora():
    from peft import LoraConfig, get_peft_model

    rng = np.random.default_rng(15)
    _, _, _, q = _random_mixed(rng, m=10, n=128)
    A, B = rng.normal(size=(4, 128)).astype(np.float32), rng.normal(size=(10, 4)).astype(np.float32)
    base = nn.Sequential(nn.Linear(128, 10))
    with torch.no_grad():
        base[0].weight.copy_(torch.from_numpy(q.dequantize()))
        base[0].bias.zero_()
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["0"], lora_dropout=0.0))
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
    model, report = L.apply_lowra(model, 1.75, rank=4, loftq_iters=2, n_clusters=8)
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
    n_lin = sum(isinstance(m, nn.Linear) for n, m in model.named_modules() if n.startswith("encoder"))
    assert n_lin == 36
    assert math.isclose(float(nn.functional.cosine_similarity(e[0], e[1], dim=0)), 1.0) is False
