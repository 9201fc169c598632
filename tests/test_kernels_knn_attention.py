"""Kernels of kernels/knn_attention.cu: kNN against scipy's cKDTree and brute force, neighbour
attention against an explicit per-point loop, NVRTC, GPU parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial import cKDTree

from icml25.kernels import compile_ptx, knn_attention


def test_compiles_with_nvrtc():
    ptx = compile_ptx("knn_attention")
    for name in ("knn_topk", "neighbour_attention"):
        assert f".entry {name}" in ptx


@pytest.mark.parametrize("k", [1, 8, 16])
def test_knn_matches_ckdtree(k):
    rng = np.random.default_rng(k)
    q, ref = (
        rng.normal(size=(300, 3)).astype(np.float32),
        rng.normal(size=(500, 3)).astype(np.float32),
    )
    idx, d2 = knn_attention.knn_reference(q, ref, k)
    dd, ii = cKDTree(ref.astype(np.float64)).query(q.astype(np.float64), k)
    ii = np.asarray(ii).reshape(300, k)
    assert np.array_equal(idx, ii)
    assert np.allclose(d2, np.asarray(dd).reshape(300, k) ** 2, rtol=1e-5, atol=1e-6)


def test_knn_respects_scenes_and_breaks_ties_by_index():
    ref = np.array(
        [
            [0, 0, 0],
            [1, 0, 0],
            [-1, 0, 0],
            [0, 1, 0],  # scene 0: three points at distance 1 from the origin
            [5, 5, 5],  # scene 1
            [5, 5, 6],
            [5, 5, 4],
        ],
        dtype=np.float32,
    )
    rb = np.array([0, 0, 0, 0, 1, 1, 1])
    q = np.array([[0, 0, 0], [5, 5, 5]], dtype=np.float32)
    idx, _ = knn_attention.knn(q, ref, 3, np.array([0, 1]), rb)
    # the tie between 1, 2 and 3 goes to the lower indices
    assert idx[0].tolist() == [0, 1, 2]
    # scene 1's points only, although scene 0's are listed first
    assert idx[1].tolist() == [4, 5, 6]


def test_knn_tiled_matches_untiled(monkeypatch):
    rng = np.random.default_rng(3)
    q, ref = (
        rng.normal(size=(200, 3)).astype(np.float32),
        rng.normal(size=(300, 3)).astype(np.float32),
    )
    full, _ = knn_attention.knn_reference(q, ref, 8)
    monkeypatch.setattr(knn_attention, "_TILE_BYTES", 8 * 300 * 7)  # tiles of 7 queries
    tiled, _ = knn_attention.knn_reference(q, ref, 8)
    assert np.array_equal(full, tiled)


@pytest.mark.parametrize(
    "bad, err",
    [
        (dict(q=np.zeros((4, 2))), ValueError),
        (dict(ref=np.zeros((4, 2))), ValueError),
        (dict(k=0), ValueError),
        (dict(k=17), ValueError),
        (dict(k=5), ValueError),  # more than the 4 reference points
        (dict(q_batch=np.zeros(3, int)), ValueError),  # only one of the batch arrays
        # unsorted
        (
            dict(q_batch=np.zeros(3, int), ref_batch=np.array([1, 0, 0, 0])),
            ValueError,
        ),
        (dict(q=np.full((3, 3), np.nan)), ValueError),
    ],
)
def test_knn_refuses_bad_input(bad, err):
    args = dict(
        q=np.zeros((3, 3)),
        ref=np.arange(12.0).reshape(4, 3),
        k=2,
        q_batch=None,
        ref_batch=None,
    )
    args.update(bad)
    with pytest.raises(err):
        knn_attention.knn(**args)


def _attn_args(N=20, M=30, kn=6, c=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (
        torch.randn(N, c, generator=g),
        torch.randn(M, c, generator=g),
        torch.randn(M, c, generator=g),
    )
    idx = torch.randint(0, M, (N, kn), generator=g)
    pe = torch.randn(N, kn, c, generator=g)
    return q, k, v, idx, pe


@pytest.mark.parametrize("heads", [1, 2, 4])
def test_neighbour_attention_matches_loop(heads):
    q, k, v, idx, pe = _attn_args()
    out = knn_attention.neighbour_attention_reference(q, k, v, idx, pe, heads=heads)
    c = q.shape[1]
    dh = c // heads
    want = torch.zeros_like(q)
    for i in range(q.shape[0]):
        for h in range(heads):
            sl = slice(h * dh, (h + 1) * dh)
            logits = torch.tensor(
                [
                    float(q[i, sl] @ (k[j, sl] + pe[i, t, sl])) / np.sqrt(dh)
                    for t, j in enumerate(idx[i])
                ]
            )
            a = torch.exp(logits - logits.max())
            a = a / a.sum()
            want[i, sl] = sum(
                a[t] * (v[j, sl] + pe[i, t, sl]) for t, j in enumerate(idx[i])
            )
    assert torch.allclose(out, want, atol=1e-5)


def test_neighbour_attention_is_differentiable_and_dispatcher_agrees():
    q, k, v, idx, pe = _attn_args()
    q.requires_grad_(True)
    out = knn_attention.neighbour_attention(q, k, v, idx, pe, heads=2)
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()
    assert torch.allclose(
        out,
        knn_attention.neighbour_attention_reference(q, k, v, idx, pe, heads=2),
        atol=1e-6,
    )


@pytest.mark.parametrize(
    "bad",
    [
        dict(k=torch.zeros(30, 7)),
        dict(idx=torch.zeros(20, 6)),
        dict(idx=torch.full((20, 6), 30)),
        dict(idx=torch.zeros(20, 17, dtype=torch.long)),
        dict(pe=torch.zeros(20, 5, 8)),
        dict(heads=3),
    ],
)
def test_neighbour_attention_refuses_bad_input(bad):
    q, k, v, idx, pe = _attn_args()
    args = dict(q=q, k=k, v=v, idx=idx, pe=pe, heads=1)
    args.update(bad)
    if "idx" in bad and bad["idx"].shape[1] == 17:
        args["pe"] = torch.zeros(20, 17, 8)
    with pytest.raises(ValueError):
        knn_attention.neighbour_attention_reference(**args)


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    import cupy as cp

    rng = np.random.default_rng(0)
    q, ref = (
        rng.normal(size=(5000, 3)).astype(np.float32),
        rng.normal(size=(7000, 3)).astype(np.float32),
    )
    qb = np.sort(rng.integers(0, 3, 5000))
    rb = np.sort(rng.integers(0, 3, 7000))
    want, _ = knn_attention.knn_reference(q, ref, 16, qb, rb)
    got, _ = knn_attention.knn(q, ref, 16, qb, rb)
    assert np.array_equal(got, want)
    args = _attn_args(N=4000, M=5000, kn=8, c=64)
    want = knn_attention.neighbour_attention_reference(*args, heads=4)
    got = cp.asnumpy(
        knn_attention.neighbour_attention_gpu(
            *(cp.asarray(t.numpy()) for t in args), heads=4
        )
    )
    assert np.allclose(got, want.numpy(), atol=1e-5)
