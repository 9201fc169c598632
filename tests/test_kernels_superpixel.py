"""Kernels of kernels/superpixel.cu: segment means and fused masking against independent references
(a Python loop, np.bincount, torch.scatter_reduce), NVRTC compile, GPU parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25.kernels import compile_ptx, superpixel


def _loop_mean(values, labels, G):
    B, C, N = values.shape
    out = np.zeros((B, C, G))
    for b in range(B):
        for g in range(G):
            idx = [p for p in range(N) if labels[b, p] == g]
            if idx:
                out[b, :, g] = values[b][:, idx].mean(1)
    return out


def _case(seed=0, B=3, C=4, N=50, G=9):
    r = np.random.default_rng(seed)
    values = r.normal(size=(B, C, N)).astype(np.float32)
    labels = r.integers(0, G - 2, size=(B, N))  # the last two groups stay empty
    return values, labels, G


def test_compiles_with_nvrtc():
    ptx = compile_ptx("superpixel")
    for name in ("segment_sums", "divide_counts", "masked_fill"):
        assert f".entry {name}" in ptx


def test_segment_mean_matches_a_python_loop_numpy_and_torch():
    values, labels, G = _case()
    want = _loop_mean(values, labels, G)
    got_np = superpixel.segment_mean_reference(values, labels, G)
    got_t = superpixel.segment_mean_reference(
        torch.as_tensor(values), torch.as_tensor(labels), G
    )
    assert got_np.dtype == np.float32 and got_np.shape == (3, 4, G)
    np.testing.assert_allclose(got_np, want, atol=1e-5)
    np.testing.assert_allclose(got_t.numpy(), want, atol=1e-5)
    # empty groups are 0, as scatter_reduce(include_self=False)
    assert np.all(got_np[:, :, -2:] == 0)


def test_segment_mean_torch_matches_bincount_and_is_differentiable():
    values, labels, G = _case(1, B=2, C=3, N=200, G=20)
    v = torch.as_tensor(values).requires_grad_(True)
    out = superpixel.segment_mean(v, torch.as_tensor(labels), G)
    counts = np.stack([np.bincount(labels[b], minlength=G) for b in range(2)])
    sums = np.stack(
        [
            [
                np.bincount(labels[b], weights=values[b, c], minlength=G)
                for c in range(3)
            ]
            for b in range(2)
        ]
    )
    np.testing.assert_allclose(
        out.detach().numpy(), sums / np.maximum(counts, 1)[:, None, :], atol=1e-5
    )
    out.sum().backward()
    # d/dv of sum of means: 1/|g(p)| for each pixel
    np.testing.assert_allclose(
        v.grad.numpy(),
        np.broadcast_to(
            1.0 / np.take_along_axis(counts, labels, 1)[:, None, :], values.shape
        ),
        atol=1e-6,
    )


def test_masked_fill_matches_a_loop_and_the_gather():
    r = np.random.default_rng(2)
    B, C, N, G = 2, 3, 30, 6
    x = r.random((B, C, N)).astype(np.float32)
    labels = r.integers(0, G, size=(B, N))
    m = r.random((B, G)).astype(np.float32)
    fill = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    want = np.empty_like(x)
    for b in range(B):
        for p in range(N):
            w = m[b, labels[b, p]]
            want[b, :, p] = w * x[b, :, p] + (1 - w) * fill
    np.testing.assert_allclose(
        superpixel.masked_fill_reference(x, labels, m, fill), want, atol=1e-6
    )
    got = superpixel.masked_fill(
        torch.as_tensor(x),
        torch.as_tensor(labels),
        torch.as_tensor(m),
        torch.as_tensor(fill),
    )
    np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


@pytest.mark.parametrize(
    "bad, err",
    [
        (dict(labels=np.full((3, 50), 9)), ValueError),  # label == G
        (dict(labels=np.full((3, 50), -1)), ValueError),
        (dict(labels=np.zeros((3, 49), dtype=int)), ValueError),
        (dict(labels=np.zeros((3, 50))), TypeError),  # float labels
        (dict(G=0), ValueError),
        (dict(values=np.zeros((3, 50))), ValueError),  # 2-D values
        (dict(values=np.full((3, 4, 50), np.nan)), ValueError),
    ],
)
def test_segment_mean_refuses_bad_input(bad, err):
    values, labels, G = _case()
    kw = dict(values=values, labels=labels, G=G) | bad
    with pytest.raises(err):
        superpixel.segment_mean(**kw)
    with pytest.raises(err):
        superpixel.segment_mean_reference(**kw)


def test_mixing_torch_and_numpy_is_refused():
    values, labels, G = _case()
    with pytest.raises(TypeError, match="both"):
        superpixel.segment_mean(torch.as_tensor(values), labels, G)
    with pytest.raises(ValueError, match="fill"):
        superpixel.masked_fill(
            values[:, :3], labels, np.ones((3, G), np.float32), np.zeros(2, np.float32)
        )
    with pytest.raises(ValueError, match="m must have"):
        superpixel.masked_fill(
            values, labels, np.ones((2, G), np.float32), np.zeros(4, np.float32)
        )


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    values, labels, G = _case(3, B=8, C=4, N=1024, G=40)
    np.testing.assert_allclose(
        superpixel.segment_mean(values, labels, G),
        superpixel.segment_mean_reference(values, labels, G),
        atol=1e-5,
    )
    vt = torch.as_tensor(values, device="cuda").requires_grad_(True)
    lt = torch.as_tensor(labels, device="cuda")
    out = superpixel.segment_mean(vt, lt, G)
    ref = superpixel.segment_mean_reference(vt.detach().cpu(), lt.cpu(), G)
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.numpy(), atol=1e-5)
    (out**2).sum().backward()
    vr = torch.as_tensor(values).requires_grad_(True)
    (
        superpixel.segment_mean_reference(vr, torch.as_tensor(labels), G) ** 2
    ).sum().backward()
    np.testing.assert_allclose(vt.grad.cpu().numpy(), vr.grad.numpy(), atol=1e-5)
    r = np.random.default_rng(4)
    m = r.random((8, G)).astype(np.float32)
    fill = np.zeros(4, np.float32)
    np.testing.assert_allclose(
        superpixel.masked_fill(values, labels, m, fill),
        superpixel.masked_fill_reference(values, labels, m, fill),
        atol=1e-6,
    )
    mt = torch.as_tensor(m, device="cuda").requires_grad_(True)
    xt = torch.as_tensor(values, device="cuda").requires_grad_(True)
    superpixel.masked_fill(xt, lt, mt, torch.zeros(4, device="cuda")).sum().backward()
    mr = torch.as_tensor(m).requires_grad_(True)
    xr = torch.as_tensor(values).requires_grad_(True)
    superpixel.masked_fill_reference(
        xr, torch.as_tensor(labels), mr, torch.zeros(4)
    ).sum().backward()
    np.testing.assert_allclose(mt.grad.cpu().numpy(), mr.grad.numpy(), atol=1e-4)
    np.testing.assert_allclose(xt.grad.cpu().numpy(), xr.grad.numpy(), atol=1e-6)
