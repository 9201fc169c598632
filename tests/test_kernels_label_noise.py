"""Tests of kernels/label_noise: the PyTorch references against independent formulas, bad inputs,
and (on a GPU) the CUDA kernels against the references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25.kernels import compile_ptx, label_noise


def _u(shape, seed=0):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed))


def test_categorical_labels_match_a_per_element_loop():
    y = torch.randint(0, 5, (3, 4, 6), generator=torch.Generator().manual_seed(1))
    a = torch.tensor([0.0, 0.4, 1.0])
    u = _u((3, 2, 4, 6))
    out = label_noise.categorical_corrupt_reference(y, a, 5, u)
    want = np.zeros((3, 5, 4, 6), np.float32)
    for b in range(3):
        for i in range(4):
            for j in range(6):
                c = (
                    int(y[b, i, j])
                    if float(u[b, 0, i, j]) < float(a[b])
                    else min(int(float(u[b, 1, i, j]) * 5), 4)
                )
                want[b, c, i, j] = 1.0
    np.testing.assert_array_equal(out.numpy(), want)


def test_categorical_probs_inverse_cdf_matches_a_loop_and_one_hot_equals_labels():
    g = torch.Generator().manual_seed(2)
    p = torch.softmax(torch.randn(2, 3, 5, 5, generator=g), dim=1)
    a = torch.tensor([0.7, 0.2])
    u = _u((2, 2, 5, 5), 3)
    out = label_noise.categorical_corrupt_reference(p, a, 3, u).argmax(1)
    for b in range(2):
        for i in range(5):
            for j in range(5):
                if float(u[b, 0, i, j]) < float(a[b]):
                    cdf = np.cumsum(p[b, :, i, j].numpy())
                    c = int(np.searchsorted(cdf, float(u[b, 1, i, j]), side="right"))
                    c = min(c, 2)
                else:
                    c = min(int(float(u[b, 1, i, j]) * 3), 2)
                assert int(out[b, i, j]) == c
    y = torch.randint(0, 3, (2, 5, 5), generator=g)
    onehot = torch.nn.functional.one_hot(y, 3).movedim(-1, 1).float()
    assert torch.equal(
        label_noise.categorical_corrupt_reference(onehot, a, 3, u),
        label_noise.categorical_corrupt_reference(y, a, 3, u),
    )


def test_categorical_marginal_by_monte_carlo():
    n, K, ab = 200_000, 4, 0.3
    y = torch.full((n,), 2, dtype=torch.long)
    out = label_noise.categorical_corrupt(
        y, torch.full((n,), ab), K, rng=torch.Generator().manual_seed(4)
    )
    freq = out.mean(0).numpy()  # (K,)
    want = np.full(K, (1 - ab) / K)
    want[2] += ab
    se = np.sqrt(want * (1 - want) / n)
    assert np.all(np.abs(freq - want) < 5 * se), (freq, want)


def test_dispatcher_numpy_in_numpy_out_and_uniforms_drawn_from_rng():
    y = np.array([[0, 1], [2, 3]])
    out = label_noise.categorical_corrupt(
        y, np.array([1.0, 1.0]), 4, rng=torch.Generator().manual_seed(0)
    )
    assert isinstance(out, np.ndarray) and out.shape == (2, 4, 2)
    np.testing.assert_array_equal(out.argmax(1), y)  # alpha_bar = 1 keeps every label
    a = label_noise.categorical_corrupt(
        torch.as_tensor(y), torch.zeros(2), 4, rng=torch.Generator().manual_seed(5)
    )
    b = label_noise.categorical_corrupt(
        torch.as_tensor(y), torch.zeros(2), 4, rng=torch.Generator().manual_seed(5)
    )
    assert torch.equal(a, b)


def test_gaussian_reference_is_the_closed_form():
    g = torch.Generator().manual_seed(6)
    y, e = torch.randn(3, 7, generator=g), torch.randn(3, 7, generator=g)
    a = torch.tensor([0.1, 0.5, 0.99])
    out = label_noise.gaussian_corrupt_reference(y, a, e)
    want = (
        np.sqrt(a.numpy())[:, None] * y.numpy()
        + np.sqrt(1 - a.numpy())[:, None] * e.numpy()
    )
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    out_np = label_noise.gaussian_corrupt(y.numpy(), a.numpy(), e.numpy())
    assert isinstance(out_np, np.ndarray)
    np.testing.assert_allclose(out_np, want, rtol=1e-6, atol=1e-6)


def test_gaussian_marginal_moments():
    n = 100_000
    y = torch.full((n, 1), 2.0)
    out = label_noise.gaussian_corrupt(
        y, torch.full((n,), 0.25), rng=torch.Generator().manual_seed(7)
    ).numpy()
    assert abs(out.mean() - 1.0) < 5 * np.sqrt(0.75 / n)  # sqrt(0.25) * 2
    assert abs(out.var() - 0.75) < 0.02


def test_pcl_terms_match_numpy():
    rng = np.random.default_rng(8)
    a, b, y = rng.normal(size=(3, 50)).astype(np.float32)
    got = label_noise.pcl_terms(a, b, y)
    a64, b64, y64 = a.astype(float), b.astype(float), y.astype(float)
    want = [
        np.mean((a64 - y64) ** 2),
        np.mean((b64 - y64) ** 2),
        np.mean((a64 - b64) ** 2),
    ]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(
        label_noise.pcl_terms_reference(
            torch.as_tensor(a), torch.as_tensor(b), torch.as_tensor(y)
        ),
        want,
        rtol=1e-12,
    )


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.tensor([[0, 4]]), torch.tensor([0.5]), 4, _u((1, 2, 2))
            ),
            "y",
        ),
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.tensor([[0, -1]]), torch.tensor([0.5]), 4, _u((1, 2, 2))
            ),
            "y",
        ),
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.tensor([[0, 1]]), torch.tensor([1.5]), 4, _u((1, 2, 2))
            ),
            "alpha_bar_t",
        ),
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.tensor([[0, 1]]), torch.tensor([0.5, 0.5]), 4, _u((1, 2, 2))
            ),
            "alpha_bar_t",
        ),
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.tensor([[0, 1]]), torch.tensor([0.5]), 4, _u((1, 2, 3))
            ),
            "uniforms",
        ),
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.tensor([[0, 1]]), torch.tensor([0.5]), 4, torch.ones(1, 2, 2)
            ),
            "uniforms",
        ),
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.tensor([[0, 1]]), torch.tensor([0.5]), 1, _u((1, 2, 2))
            ),
            "K",
        ),
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.rand(1, 3, 2), torch.tensor([0.5]), 4, _u((1, 2, 2))
            ),
            "y",
        ),
        (
            lambda: label_noise.gaussian_corrupt_reference(
                torch.ones(2, 3), torch.tensor([0.5]), torch.ones(2, 3)
            ),
            "alpha_bar_t",
        ),
        (
            lambda: label_noise.gaussian_corrupt_reference(
                torch.ones(2, 3), torch.tensor([0.5, 0.5]), torch.ones(2, 4)
            ),
            "eps",
        ),
        (
            lambda: label_noise.gaussian_corrupt_reference(
                torch.ones(2, 3), torch.tensor([0.5, -0.1]), torch.ones(2, 3)
            ),
            "alpha_bar_t",
        ),
        (lambda: label_noise.pcl_terms(np.ones(3), np.ones(4), np.ones(3)), "b"),
        (lambda: label_noise.pcl_terms(np.ones(3), np.ones(3), np.ones(2)), "y"),
        (
            lambda: label_noise.categorical_corrupt(
                torch.tensor([[0, 1]]), torch.tensor([0.5]), 4, rng=3
            ),
            "rng",
        ),
    ],
)
def test_bad_inputs_are_refused_naming_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_gaussian_refuses_integer_labels():
    with pytest.raises(TypeError, match="y"):
        label_noise.gaussian_corrupt_reference(
            torch.ones(2, 3, dtype=torch.long),
            torch.tensor([0.5, 0.5]),
            torch.ones(2, 3),
        )


def test_label_noise_compiles_with_nvrtc():
    ptx = compile_ptx("label_noise")
    for fn in (
        "categorical_corrupt_labels",
        "categorical_corrupt_probs",
        "gaussian_corrupt",
        "pcl_terms",
    ):
        assert fn in ptx


def _require_gpu():  # pragma: no cover - GPU
    cupy = pytest.importorskip("cupy")
    if not cupy.is_available():
        pytest.skip("no GPU")
    return cupy


@pytest.mark.gpu
def test_gpu_categorical_equals_reference():  # pragma: no cover - GPU
    cupy = _require_gpu()
    g = torch.Generator().manual_seed(9)
    y = torch.randint(0, 6, (4, 16, 16), generator=g)
    p = torch.softmax(torch.randn(4, 6, 16, 16, generator=g), dim=1)
    a = torch.rand(4, generator=g)
    u = torch.rand(4, 2, 16, 16, generator=g)
    for src in (y.int(), p):
        got = label_noise.categorical_corrupt_gpu(
            cupy.asarray(src.numpy()),
            cupy.asarray(a.numpy()),
            6,
            cupy.asarray(u.numpy()),
        )
        np.testing.assert_array_equal(
            cupy.asnumpy(got),
            label_noise.categorical_corrupt_reference(
                src.long() if not src.is_floating_point() else src, a, 6, u
            ).numpy(),
        )


@pytest.mark.gpu
def test_gpu_gaussian_and_terms_match_reference():  # pragma: no cover - GPU
    cupy = _require_gpu()
    g = torch.Generator().manual_seed(10)
    y, e = torch.randn(8, 300, generator=g), torch.randn(8, 300, generator=g)
    a = torch.rand(8, generator=g)
    got = label_noise.gaussian_corrupt_gpu(
        cupy.asarray(y.numpy()), cupy.asarray(a.numpy()), cupy.asarray(e.numpy())
    )
    np.testing.assert_allclose(
        cupy.asnumpy(got),
        label_noise.gaussian_corrupt_reference(y, a, e).numpy(),
        rtol=1e-6,
        atol=1e-6,
    )
    b = torch.randn(8, 300, generator=g)
    np.testing.assert_allclose(
        label_noise.pcl_terms_gpu(
            cupy.asarray(y.numpy()), cupy.asarray(b.numpy()), cupy.asarray(e.numpy())
        ),
        label_noise.pcl_terms_reference(y, b, e),
        rtol=1e-6,
    )
    if torch.cuda.is_available():
        yc = y.cuda()
        out = label_noise.gaussian_corrupt(yc, a.cuda(), e.cuda())
        assert out.is_cuda


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: label_noise.categorical_corrupt(
                torch.zeros(2, 4, dtype=torch.long), torch.full((2,), float("nan")), 4
            ),
            "alpha_bar_t",
        ),
        (
            lambda: label_noise.gaussian_corrupt(
                torch.ones(2, 3), torch.full((2,), float("nan"))
            ),
            "alpha_bar_t",
        ),
        (
            lambda: label_noise.categorical_corrupt_reference(
                torch.zeros(2, 4, dtype=torch.long),
                torch.full((2,), 0.5),
                4,
                torch.full((2, 2, 4), float("nan")),
            ),
            "uniforms",
        ),
        (
            lambda: label_noise.categorical_corrupt(
                torch.full((2, 4, 3), 0.7), torch.full((2,), 0.5), 4
            ),
            "sum to 1",
        ),
        (
            lambda: label_noise.pcl_terms(
                torch.full((2, 3), float("nan")), torch.ones(2, 3), torch.ones(2, 3)
            ),
            "a must be finite",
        ),
    ],
)
def test_review_non_finite_and_unnormalised_inputs_are_refused(call, match):
    """Review of chapter 19: NaN keep-probabilities or uniforms, unnormalised probabilities and NaN
    loss inputs used to give a silent result (or a RuntimeError deep in torch.multinomial)."""
    with pytest.raises((ValueError, TypeError), match=match):
        call()
