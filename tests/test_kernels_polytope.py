"""Kernels of kernels/polytope.cu: references against torch and scipy, bad inputs, NVRTC, GPU parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from icml25.kernels import compile_ptx, polytope


def _slsqp(x, Phi, xi):
    res = minimize(
        lambda z: 0.5 * np.sum((z - x) ** 2),
        x,
        jac=lambda z: z - x,
        method="SLSQP",
        constraints=[
            {"type": "ineq", "fun": lambda z: xi - Phi @ z, "jac": lambda z: -Phi}
        ],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    return res.x


def test_dykstra_matches_slsqp_on_20_instances():
    rng = np.random.default_rng(0)
    for _ in range(20):
        d, K = rng.integers(2, 7), rng.integers(1, 6)
        Phi = rng.normal(size=(K, d))
        # a non-empty polytope
        xi = Phi @ rng.normal(size=d) + rng.uniform(0.1, 1.0, size=K)
        X = rng.normal(size=(3, d)) * 3
        P = polytope.dykstra_project_reference(X, Phi, xi, n_sweeps=2000)
        for i in range(3):
            np.testing.assert_allclose(P[i], _slsqp(X[i], Phi, xi), atol=1e-5)


def test_dykstra_closed_form_for_one_facet_and_identity_inside():
    rng = np.random.default_rng(1)
    phi, xi = rng.normal(size=(1, 4)), np.array([0.2])
    X = rng.normal(size=(30, 4)) * 2
    want = X - np.maximum(X @ phi[0] - xi[0], 0)[:, None] * phi[0] / (phi[0] @ phi[0])
    np.testing.assert_allclose(polytope.dykstra_project(X, phi, xi), want, atol=1e-12)
    inside = X[(X @ phi[0]) <= xi[0]]
    np.testing.assert_array_equal(polytope.dykstra_project(inside, phi, xi), inside)


def test_violations_match_torch_expressions():
    rng = np.random.default_rng(2)
    C = rng.normal(size=(50, 9)).astype(np.float32)
    xi = rng.normal(size=9).astype(np.float32)
    y = rng.integers(0, 2, 50)
    out = polytope.polytope_violations_reference(C, xi, y, 0.7, 3.0)
    v = torch.tensor(C) - torch.tensor(xi)
    np.testing.assert_allclose(
        out["safe_hinge"], torch.relu(0.7 + v).sum(1).numpy(), rtol=1e-6, atol=1e-6
    )
    mx, k = v.max(1)
    np.testing.assert_array_equal(out["argmax"], k.numpy())
    np.testing.assert_allclose(
        out["unsafe_hinge"], (3.0 * torch.relu(0.7 - mx)).numpy(), rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(
        out["loss_row"], np.where(y == 1, out["safe_hinge"], out["unsafe_hinge"])
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(C=np.ones((3, 2)), xi=np.ones(3), y=np.ones(3, int)), "xi"),
        (dict(C=np.ones((3, 2)), xi=np.ones(2), y=np.array([0, 1, 2])), "y"),
        (dict(C=np.full((3, 2), np.nan), xi=np.ones(2), y=np.ones(3, int)), "C"),
    ],
)
def test_violations_refuse_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        polytope.polytope_violations(margin=1.0, unsafe_weight=1.0, **kwargs)


def test_violations_refuse_negative_margin():
    with pytest.raises(ValueError, match="margin"):
        polytope.polytope_violations(
            np.ones((2, 2)), np.ones(2), np.ones(2, int), -1.0, 1.0
        )


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.ones((2, 3)), np.ones((2, 4)), np.ones(2)), "Phi"),
        ((np.ones((2, 3)), np.zeros((1, 3)), np.ones(1)), "zero row"),
        ((np.ones((2, 3)), np.ones((2, 3)), np.ones(3)), "xi"),
        ((np.full((2, 3), np.nan), np.ones((2, 3)), np.ones(2)), "X"),
    ],
)
def test_dykstra_refuses_bad_input(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        polytope.dykstra_project(*args)


def test_dykstra_refuses_zero_sweeps():
    with pytest.raises(ValueError, match="n_sweeps"):
        polytope.dykstra_project(np.ones((1, 2)), np.ones((1, 2)), np.ones(1), 0)


def test_polytope_kernels_compile():
    assert "polytope_violations" in compile_ptx(
        "polytope"
    ) and "dykstra_project" in compile_ptx("polytope")


@pytest.mark.gpu
def test_gpu_parity():  # pragma: no cover - GPU
    rng = np.random.default_rng(3)
    C = rng.normal(size=(1000, 50)).astype(np.float32)
    xi = rng.normal(size=50).astype(np.float32)
    y = rng.integers(0, 2, 1000)
    ref = polytope.polytope_violations_reference(C, xi, y, 1.0, 2.0)
    gpu = {
        k: v.get()
        for k, v in polytope.polytope_violations_gpu(C, xi, y, 1.0, 2.0).items()
    }
    np.testing.assert_array_equal(gpu["argmax"], ref["argmax"])
    np.testing.assert_allclose(gpu["loss_row"], ref["loss_row"], rtol=1e-4, atol=1e-4)
    X, Phi, xi2 = (
        rng.normal(size=(64, 300)) * 3,
        rng.normal(size=(8, 300)),
        rng.normal(size=8),
    )
    np.testing.assert_allclose(
        polytope.dykstra_project_gpu(X, Phi, xi2, 100).get(),
        polytope.dykstra_project_reference(X, Phi, xi2, 100),
        rtol=1e-3,
        atol=1e-3,
    )
