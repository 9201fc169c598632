"""Kernels of kernels/adaent.cu: the references against independent formulas, NVRTC, GPU parity."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cosine as scipy_cosine_distance
from scipy.special import logsumexp

from icml25.common import gpu_available
from icml25.kernels import adaent, compile_ptx


def _require_gpu() -> None:
    if not gpu_available():
        pytest.skip("needs a GPU")


def _cos_by_hand(x, y):
    """Row-min shift, then scipy's cosine distance (1 - cos); flat rows: cosine 0."""
    out = []
    for a, b in zip(np.asarray(x, float), np.asarray(y, float)):
        a, b = a - a.min(), b - b.min()
        out.append(
            0.0
            if np.linalg.norm(a) * np.linalg.norm(b) < 1e-8
            else 1.0 - scipy_cosine_distance(a, b)
        )
    return np.array(out)


def test_compiles_with_nvrtc():
    ptx = compile_ptx("adaent")
    for name in ("adaent_similarity", "grid_soft_value"):
        assert f".entry {name}" in ptx


@pytest.mark.parametrize("B,M", [(1, 2), (7, 16), (33, 100)])
def test_similarity_matches_scipy_cosine(B, M):
    rng = np.random.default_rng(B * M)
    qs = rng.normal(size=(B, M)).astype(np.float32)
    qp = (qs + rng.normal(scale=0.7, size=(B, M))).astype(np.float32)
    cos, mask = adaent.landscape_similarity_reference(qs, qp, 0.9)
    want = _cos_by_hand(qs, qp)
    np.testing.assert_allclose(cos, want, atol=1e-5)
    np.testing.assert_array_equal(mask, want < 0.9)
    assert cos.dtype == np.float32 and mask.dtype == np.bool_


def test_similarity_is_shift_and_scale_invariant_and_flat_rows_give_zero():
    rng = np.random.default_rng(3)
    qs = rng.normal(size=(5, 20)).astype(np.float32)
    # same landscape: cosine 1
    cos, _ = adaent.landscape_similarity(qs, 3.0 * qs + 7.0, 0.9)
    np.testing.assert_allclose(cos, 1.0, atol=1e-5)
    flat = np.ones((2, 20), dtype=np.float32)
    cos0, mask0 = adaent.landscape_similarity(flat, rng.normal(size=(2, 20)), 0.0)
    np.testing.assert_array_equal(cos0, [0.0, 0.0])
    assert not mask0.any()  # 0 < 0 is false


def test_torch_in_torch_out_equals_numpy_path():
    rng = np.random.default_rng(4)
    qs, qp = rng.normal(size=(9, 16)), rng.normal(size=(9, 16))
    cos_t, mask_t = adaent.landscape_similarity(torch.tensor(qs), torch.tensor(qp), 0.2)
    assert isinstance(cos_t, torch.Tensor) and isinstance(mask_t, torch.Tensor)
    cos_n, mask_n = adaent.landscape_similarity(qs, qp, 0.2)
    np.testing.assert_allclose(cos_t.numpy(), cos_n, atol=1e-6)
    np.testing.assert_array_equal(mask_t.numpy(), mask_n)


def test_threshold_extremes():
    rng = np.random.default_rng(5)
    qs, qp = rng.normal(size=(50, 8)), rng.normal(size=(50, 8))
    # a cosine is never below -1
    assert not adaent.landscape_similarity(qs, qp, -1.0)[1].any()
    cos, mask = adaent.landscape_similarity(qs, qp, 1.0)
    np.testing.assert_array_equal(mask, cos < 1.0)


@pytest.mark.parametrize(
    "bad,match",
    [
        (dict(q_plain=np.zeros((3, 5))), "q_plain"),
        (dict(q_soft=np.zeros((3, 1)), q_plain=np.zeros((3, 1))), "M >= 2"),
        (dict(q_soft=np.full((3, 4), np.nan)), "q_soft"),
        (dict(q_plain=np.full((3, 4), np.inf)), "q_plain"),
        (dict(threshold=1.5), "threshold"),
        (dict(threshold=-1.01), "threshold"),
        (dict(q_soft=np.zeros(4)), "q_soft"),
    ],
)
def test_similarity_refuses_bad_input(bad, match):
    args = dict(q_soft=np.zeros((3, 4)), q_plain=np.zeros((3, 4)), threshold=0.9) | bad
    with pytest.raises(ValueError, match=match):
        adaent.landscape_similarity(**args)
    with pytest.raises(ValueError, match=match):
        adaent.landscape_similarity_reference(**args)


def test_similarity_refuses_non_finite_torch():
    with pytest.raises(ValueError, match="q_soft"):
        adaent.landscape_similarity(
            torch.full((2, 3), float("nan")), torch.zeros(2, 3), 0.9
        )


@pytest.mark.parametrize("alpha,da", [(0.5, 0.01), (0.05, 1.0), (2.0, 0.1)])
def test_grid_soft_value_matches_python_loop(alpha, da):
    rng = np.random.default_rng(6)
    Q = rng.normal(size=(4, 50))
    want = [alpha * math.log(sum(math.exp(q / alpha) * da for q in row)) for row in Q]
    np.testing.assert_allclose(adaent.grid_soft_value(Q, alpha, da), want, rtol=1e-10)
    np.testing.assert_allclose(
        adaent.grid_soft_value_reference(Q, alpha, da),
        alpha * (logsumexp(Q / alpha, axis=1) + np.log(da)),
        rtol=1e-12,
    )


def test_grid_soft_value_at_zero_is_max_and_large_q_does_not_overflow():
    Q = np.array([[1000.0, 999.0, -5.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(adaent.grid_soft_value(Q, 0.0, 0.5), [1000.0, 0.0])
    v = adaent.grid_soft_value(Q, 0.01, 1.0)
    assert np.all(np.isfinite(v)) and abs(v[0] - 1000.0) < 1e-6


@pytest.mark.parametrize(
    "bad,err,match",
    [
        (dict(alpha=-0.1), ValueError, "alpha"),
        (dict(da=0.0), ValueError, "da"),
        (dict(Q=np.ones(3)), ValueError, "Q"),
        (dict(Q=np.array([[np.nan, 1.0]])), ValueError, "Q"),
        (dict(alpha="big"), TypeError, "alpha"),
    ],
)
def test_grid_soft_value_refuses_bad_input(bad, err, match):
    args = dict(Q=np.ones((2, 3)), alpha=0.5, da=1.0) | bad
    with pytest.raises(err, match=match):
        adaent.grid_soft_value(**args)


@pytest.mark.gpu
@pytest.mark.parametrize("B", [256, 4096])
def test_gpu_similarity_equals_reference(B):  # pragma: no cover - GPU
    _require_gpu()
    rng = np.random.default_rng(B)
    qs = rng.normal(size=(B, 100)).astype(np.float32)
    qp = (qs + rng.normal(scale=0.5, size=(B, 100))).astype(np.float32)
    cos_g, mask_g = adaent.landscape_similarity_gpu(qs, qp, 0.9)
    cos_r, mask_r = adaent.landscape_similarity_reference(qs, qp, 0.9)
    np.testing.assert_allclose(cos_g.get(), cos_r, atol=1e-5)
    far = np.abs(cos_r - 0.9) > 1e-4  # rows within rounding of the threshold may flip
    np.testing.assert_array_equal(mask_g.get()[far], mask_r[far])


@pytest.mark.gpu
def test_gpu_torch_path_returns_cuda_tensors():  # pragma: no cover - GPU
    _require_gpu()
    qs = torch.randn(64, 16, device="cuda")
    cos, mask = adaent.landscape_similarity(qs, 2 * qs + 1, 0.9)
    assert cos.is_cuda and mask.dtype == torch.bool
    np.testing.assert_allclose(cos.cpu().numpy(), 1.0, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("B", [256, 4096])
def test_gpu_grid_soft_value_equals_reference(B):  # pragma: no cover - GPU
    _require_gpu()
    rng = np.random.default_rng(B + 1)
    Q = rng.normal(size=(B, 1000))
    for alpha in (0.0, 0.05, 1.0):
        np.testing.assert_allclose(
            adaent.grid_soft_value_gpu(Q, alpha, 0.002).get(),
            adaent.grid_soft_value_reference(Q, alpha, 0.002),
            rtol=1e-9,
        )


def test_grid_soft_value_reference_shifts_before_dividing_by_alpha():
    # Q / alpha overflowed to inf before the row-max shift (review);
    # the shifted sum is exact
    Q = np.array([[1e300, -1e300, 0.0], [3.0, 1.0, 2.0]])
    V = adaent.grid_soft_value_reference(Q, 1e-300, 1.0)
    assert V[0] == 1e300 and V[1] == 3.0
    np.testing.assert_allclose(
        adaent.grid_soft_value(Q[1:], 0.5, 0.1),
        0.5 * (logsumexp(Q[1] / 0.5) + math.log(0.1)),
        rtol=1e-12,
    )
