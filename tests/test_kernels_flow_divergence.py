"""Kernel tests for kernels/flow_divergence: the forward-mode reference against torch.func.jacrev,
the Euler likelihood against closed forms and an adaptive ODE solver, bad inputs, a NumPy
emulation of the CUDA kernel's packed-buffer indexing, NVRTC compilation, and GPU parity
(marked gpu; tolerance 1e-4 * max(1, |ref|), float32)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from scipy.linalg import expm

from icml25.kernels import compile_ptx
from icml25.kernels.flow_divergence import (
    GPU_RTOL,
    MAX_DIM,
    MAX_HIDDEN,
    euler_log_likelihood,
    euler_log_likelihood_reference,
    mlp_velocity_divergence,
    mlp_velocity_divergence_reference,
    pack_params,
    shared_memory_bytes,
)

LOG_2PI = math.log(2 * math.pi)


class _MLP(torch.nn.Module):
    """The network of the chapter's interface, written here so these tests do not import lib:
    z = [x, t] -> Linear(d+1, hidden) -> SiLU -> [Linear(hidden, hidden) -> SiLU] x (depth-1)
    -> Linear(hidden, d)."""

    def __init__(
        self, d: int, hidden: int = 32, depth: int = 3, gain: float = 1.5, seed: int = 0
    ):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        sizes = [d + 1] + [hidden] * depth + [d]
        self.linears = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])
        )
        # a bit larger than the default init, so that SiLU is not ~linear
        with torch.no_grad():
            for lin in self.linears:
                fan_in = lin.weight.shape[1]
                lin.weight.copy_(
                    gain
                    * torch.randn(lin.weight.shape, generator=gen)
                    / math.sqrt(fan_in)
                )
                lin.bias.copy_(0.5 * torch.randn(lin.bias.shape, generator=gen))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        z = torch.cat([x, t[:, None]], dim=1)
        for lin in self.linears[:-1]:
            z = torch.nn.functional.silu(lin(z))
        return self.linears[-1](z)

    def linear_params(self):
        return [(lin.weight.detach(), lin.bias.detach()) for lin in self.linears]


def _jacrev_divergence(
    model: torch.nn.Module, x: torch.Tensor, t: torch.Tensor
) -> torch.Tensor:
    def f(xi, ti):
        return model(xi[None], ti[None])[0]

    J = torch.func.vmap(torch.func.jacrev(f, argnums=0))(x, t)  # (B, d, d)
    return J.diagonal(dim1=1, dim2=2).sum(-1)


def _linear_params(W: np.ndarray, b: np.ndarray):
    """A single Linear layer (no hidden layer): v(x, t) = W[:, :d] x + W[:, d] t + b."""
    return [
        (
            torch.as_tensor(W, dtype=torch.float64),
            torch.as_tensor(b, dtype=torch.float64),
        )
    ]


def _log_normal(x: np.ndarray) -> np.ndarray:
    return -0.5 * (x * x).sum(-1) - 0.5 * x.shape[-1] * LOG_2PI


# --------------------------------------------------------------------------------------
# single step: forward-mode tangents vs reverse-mode jacrev
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 8])
@pytest.mark.parametrize("depth", [1, 3])
def test_mlp_velocity_divergence_reference_matches_jacrev_trace(d, depth):
    model = _MLP(d, hidden=24, depth=depth, seed=d + 10 * depth).double()
    gen = torch.Generator().manual_seed(1)
    x = 1.5 * torch.randn(17, d, generator=gen, dtype=torch.float64)
    t = torch.rand(17, generator=gen, dtype=torch.float64)
    v, div = mlp_velocity_divergence_reference(model.linear_params(), x, t)
    with torch.no_grad():
        v_want = model(x, t)
    div_want = _jacrev_divergence(model, x, t)
    assert v.dtype == torch.float64 and v.shape == (17, d) and div.shape == (17,)
    # float64: the two modes differ only by rounding
    torch.testing.assert_close(v, v_want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(div, div_want, rtol=1e-10, atol=1e-10)
    assert div_want.abs().max() > 0.05  # the check is not vacuous


@pytest.mark.parametrize("d", [2, 8])
def test_mlp_velocity_divergence_reference_float32_within_1e5_of_jacrev(d):
    model = _MLP(d, hidden=64, depth=3, seed=3)
    gen = torch.Generator().manual_seed(2)
    x, t = torch.randn(64, d, generator=gen), torch.rand(64, generator=gen)
    v, div = mlp_velocity_divergence_reference(model.linear_params(), x, t)
    assert v.dtype == torch.float32
    torch.testing.assert_close(
        div, _jacrev_divergence(model, x, t), rtol=1e-5, atol=1e-5
    )


def test_mlp_velocity_divergence_reference_is_differentiable():
    # the reference can serve as the exact divergence inside a training loss
    model = _MLP(2, hidden=16, depth=2, seed=4).double()
    params = [(lin.weight, lin.bias) for lin in model.linears]
    x = torch.randn(5, 2, dtype=torch.float64)
    t = torch.rand(5, dtype=torch.float64)
    _, div = mlp_velocity_divergence_reference(params, x, t)
    div.sum().backward()
    g_ours = model.linears[0].weight.grad.clone()
    model.zero_grad()
    _jacrev_divergence(model, x, t).sum().backward()
    torch.testing.assert_close(
        g_ours, model.linears[0].weight.grad, rtol=1e-9, atol=1e-10
    )


def test_mlp_velocity_divergence_accepts_numpy_and_scalar_t(monkeypatch):
    # input conversion of the CPU path (GPU: see below)
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    model = _MLP(3, hidden=8, depth=2, seed=5)
    params = [(W.numpy(), b.numpy()) for W, b in model.linear_params()]
    x = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    v, div = mlp_velocity_divergence(params, x, 0.25)
    v2, div2 = mlp_velocity_divergence_reference(
        model.linear_params(), torch.from_numpy(x), torch.full((6,), 0.25)
    )
    assert isinstance(v, torch.Tensor) and v.device.type == "cpu"
    torch.testing.assert_close(v, v2)
    torch.testing.assert_close(div, div2)


def _chapter_module():
    fd = pytest.importorskip("icml25.flow_divergence")
    if not hasattr(fd, "VelocityMLP"):
        pytest.skip("lib/flow_divergence.py has no VelocityMLP yet")
    return fd


def test_matches_the_chapter_velocity_mlp():
    fd = _chapter_module()
    torch.manual_seed(0)
    model = fd.VelocityMLP(3, hidden=32, depth=3).double()
    x, t = torch.randn(9, 3, dtype=torch.float64), torch.rand(9, dtype=torch.float64)
    assert [tuple(W.shape) for W, _ in model.linear_params()] == [
        (32, 4),
        (32, 32),
        (32, 32),
        (3, 32),
    ]
    # float64 here
    params = [(lin.weight.detach(), lin.bias.detach()) for lin in model.linears]
    v, div = mlp_velocity_divergence_reference(params, x, t)
    with torch.no_grad():
        torch.testing.assert_close(v, model(x, t), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(
        div, _jacrev_divergence(model, x, t), rtol=1e-10, atol=1e-10
    )


def test_euler_reference_matches_the_chapter_vjp_likelihood():
    # lib's torch path (d VJPs per step, its own loop) against
    # the forward-mode reference
    fd = _chapter_module()
    torch.manual_seed(1)
    model = fd.VelocityMLP(2, hidden=32, depth=3)
    x1 = 2 * torch.randn(50, 2)
    want = fd.log_likelihood(model, x1, 25, exact=True, use_kernel=False)
    # the kernel when a GPU is present
    got = euler_log_likelihood(model.linear_params(), x1, 25)
    torch.testing.assert_close(got, want, rtol=GPU_RTOL, atol=GPU_RTOL)
    torch.testing.assert_close(
        fd.log_likelihood(model, x1, 25, exact=True), got, rtol=1e-6, atol=1e-6
    )


# --------------------------------------------------------------------------------------
# Euler likelihood: closed forms, an independent loop, an adaptive solver, normalisation
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_steps", [1, 7, 50])
def test_euler_log_likelihood_constant_field_is_gaussian_shifted_by_b(n_steps):
    # last layer W = 0: v(x, t) = b whatever the hidden layers do,
    # div = 0, x0 = x1 - b exactly
    model = _MLP(3, hidden=16, depth=3, seed=6).double()
    params = model.linear_params()
    b = torch.tensor([0.7, -1.2, 0.3], dtype=torch.float64)
    params[-1] = (torch.zeros_like(params[-1][0]), b)
    x1 = torch.randn(11, 3, dtype=torch.float64)
    logp, x0, integral = euler_log_likelihood_reference(
        params, x1, n_steps, return_all=True
    )
    want = _log_normal((x1 - b).numpy())
    np.testing.assert_allclose(logp.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(integral.numpy(), 0.0, atol=1e-14)


@pytest.mark.parametrize("n_steps", [1, 4, 25])
def test_euler_log_likelihood_time_grid_on_v_equals_c_t(n_steps):
    # v = c t: the reverse Euler sum over t_k = 1 - k h gives x0 = x1 - c
    # (n+1) / (2n) (-> x1 - c/2)
    c = np.array([1.0, -2.0])
    W = np.zeros((2, 3))
    W[:, 2] = c
    x1 = np.random.default_rng(1).standard_normal((5, 2))
    logp, x0, _ = euler_log_likelihood_reference(
        _linear_params(W, np.zeros(2)), x1, n_steps, return_all=True
    )
    x0_want = x1 - c * (n_steps + 1) / (2 * n_steps)
    np.testing.assert_allclose(x0.numpy(), x0_want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(logp.numpy(), _log_normal(x0_want), rtol=1e-12)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_euler_log_likelihood_linear_field_closed_form_and_convergence(d):
    # v = A x: Euler gives x0 = (I - A/n)^n x1, integral = tr A; the exact flow gives
    # x0 = expm(-A) x1 and log p1(x1) = log N(expm(-A) x1) - tr A.
    rng = np.random.default_rng(d)
    A = 0.6 * rng.standard_normal((d, d))
    W = np.concatenate([A, np.zeros((d, 1))], axis=1)
    params = _linear_params(W, np.zeros(d))
    x1 = rng.standard_normal((8, d))
    errors = []
    for n in (50, 200, 800):
        logp, x0, integral = euler_log_likelihood_reference(
            params, x1, n, return_all=True
        )
        x0_euler = x1 @ np.linalg.matrix_power(np.eye(d) - A / n, n).T
        np.testing.assert_allclose(x0.numpy(), x0_euler, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(integral.numpy(), np.trace(A), rtol=1e-12)
        exact = _log_normal(x1 @ expm(-A).T) - np.trace(A)
        errors.append(np.abs(logp.numpy() - exact).max())
    # first-order scheme: the error shrinks ~4x per 4x more steps
    assert errors[1] < errors[0] / 3 and errors[2] < errors[1] / 3, errors


def test_euler_log_likelihood_reference_matches_a_naive_jacrev_loop():
    model = _MLP(2, hidden=32, depth=3, seed=7).double()
    x1 = torch.randn(13, 2, dtype=torch.float64)
    n = 20
    logp = euler_log_likelihood_reference(model.linear_params(), x1, n)
    x, acc = x1.clone(), torch.zeros(13, dtype=torch.float64)
    for k in range(n):
        t = torch.full((13,), 1 - k / n, dtype=torch.float64)
        with torch.no_grad():
            v = model(x, t)
        acc += _jacrev_divergence(model, x, t) / n
        x = x - v / n
    want = -0.5 * (x * x).sum(1) - LOG_2PI - acc
    torch.testing.assert_close(logp, want, rtol=1e-11, atol=1e-11)


def test_euler_log_likelihood_converges_to_adaptive_ode_solution():
    torchdiffeq = pytest.importorskip("torchdiffeq")
    model = _MLP(2, hidden=32, depth=2, gain=1.0, seed=8).double()
    x1 = torch.randn(
        6, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(3)
    )

    def rhs(t, state):
        x = state[:, :2]
        tt = t.expand(x.shape[0])
        with torch.no_grad():
            v = model(x, tt)
        return torch.cat([v, _jacrev_divergence(model, x, tt)[:, None]], dim=1)

    state0 = torch.cat([x1, torch.zeros(6, 1, dtype=torch.float64)], dim=1)
    end = torchdiffeq.odeint(
        rhs,
        state0,
        torch.tensor([1.0, 0.0], dtype=torch.float64),
        rtol=1e-9,
        atol=1e-9,
        method="dopri5",
    )[-1]
    # end[:, 2] = -int_0^1 div dt
    exact = -0.5 * (end[:, :2] ** 2).sum(1) - LOG_2PI + end[:, 2]
    err = [
        (euler_log_likelihood_reference(model.linear_params(), x1, n) - exact)
        .abs()
        .max()
        .item()
        for n in (50, 400)
    ]
    assert err[1] < err[0] / 4, err  # ~8x expected for a first-order scheme
    assert err[1] < 5e-3, err


def test_euler_density_integrates_to_one_in_1d():
    # the sign convention: exp(logp) must be a probability density up to the O(h) Euler
    # error (about 4e-4 here); the wrong sign of the divergence
    # term gives a mass far from 1
    model = _MLP(1, hidden=32, depth=2, gain=1.0, seed=9).double()
    grid = torch.linspace(-12, 12, 2001, dtype=torch.float64)[:, None]
    logp, _, integral = euler_log_likelihood_reference(
        model.linear_params(), grid, 100, return_all=True
    )
    mass = torch.trapezoid(logp.exp(), grid[:, 0]).item()
    assert abs(mass - 1) < 2e-3, mass
    wrong_sign = torch.trapezoid((logp + 2 * integral).exp(), grid[:, 0]).item()
    assert abs(wrong_sign - 1) > 0.1, wrong_sign  # the check can tell the two apart


# --------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------


def _params(d=2, hidden=8, depth=2):
    return _MLP(d, hidden=hidden, depth=depth).linear_params()


@pytest.mark.parametrize(
    "fn", [mlp_velocity_divergence, mlp_velocity_divergence_reference]
)
def test_mlp_velocity_divergence_rejects_bad_shapes(fn):
    p = _params()
    x, t = torch.zeros(4, 2), torch.zeros(4)
    with pytest.raises(ValueError, match="x must be 2-D"):
        fn(p, torch.zeros(4), t)
    with pytest.raises(ValueError, match="t must have shape"):
        fn(p, x, torch.zeros(3))
    with pytest.raises(ValueError, match=r"params\[0\].*in = 3"):
        # d = 3 but the first layer takes 3 = 2 + 1
        fn(p, torch.zeros(4, 3), t.expand(4))
    with pytest.raises(ValueError, match=r"params\[1\]"):
        fn([p[0], (torch.zeros(8, 5), torch.zeros(8)), p[2]], x, t)
    with pytest.raises(ValueError, match=r"params\[0\]: b"):
        fn([(p[0][0], torch.zeros(7))] + p[1:], x, t)
    with pytest.raises(ValueError, match=r"params\[-1\]"):
        fn(p[:-1], x, t)
    with pytest.raises(ValueError, match="non-empty"):
        fn([], x, t)
    with pytest.raises(ValueError, match="act"):
        fn(p, x, t, act="tanh")
    with pytest.raises(TypeError, match="real"):
        fn(p, torch.zeros(4, 2, dtype=torch.complex64), t)


@pytest.mark.parametrize("fn", [euler_log_likelihood, euler_log_likelihood_reference])
def test_euler_log_likelihood_rejects_bad_inputs(fn):
    p = _params()
    x1 = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="n_steps"):
        fn(p, x1, 0)
    with pytest.raises(TypeError, match="n_steps"):
        fn(p, x1, 2.5)
    with pytest.raises(TypeError, match="n_steps"):
        fn(p, x1, True)
    with pytest.raises(ValueError, match="x1 must be 2-D"):
        fn(p, torch.zeros(2), 3)
    with pytest.raises(ValueError, match=r"params\[-1\]"):
        fn(p[:2] + [(torch.zeros(3, 8), torch.zeros(3))], x1, 3)
    with pytest.raises(ValueError, match="act"):
        fn(p, x1, 3, act="relu")


@pytest.mark.parametrize("fn", [euler_log_likelihood, euler_log_likelihood_reference])
def test_euler_log_likelihood_refuses_step_counts_that_cannot_finish(fn):
    import time

    from icml25.checks import TooLargeError

    start = time.perf_counter()
    with pytest.raises(TooLargeError, match=r"n_steps=1000000000000"):
        fn(_params(), torch.zeros(4, 2), 10**12)
    assert time.perf_counter() - start < 1.0


def test_dispatchers_reject_sizes_beyond_the_kernel_limits():
    big_d = MAX_DIM + 1
    with pytest.raises(ValueError, match=f"d = {big_d}"):
        mlp_velocity_divergence(_params(d=big_d), torch.zeros(2, big_d), torch.zeros(2))
    with pytest.raises(ValueError, match="hidden width"):
        euler_log_likelihood(
            _params(d=2, hidden=MAX_HIDDEN + 1, depth=1), torch.zeros(2, 2), 2
        )
    # the references have no such limit
    v, div = mlp_velocity_divergence_reference(
        _params(d=big_d), torch.zeros(2, big_d), torch.zeros(2)
    )
    assert v.shape == (2, big_d)
    # and the limits themselves are accepted
    euler_log_likelihood(
        _params(d=MAX_DIM, hidden=MAX_HIDDEN, depth=1), torch.zeros(1, MAX_DIM), 1
    )


def test_shared_memory_at_the_limits_fits_a100_and_h100_opt_in():
    d, hidden = MAX_DIM, MAX_HIDDEN
    smem = shared_memory_bytes(d, [d + 1, hidden, hidden, d])
    assert smem == 4 * (2 * 36 * 512 + 34)
    # A100 and H100/H200 per-block opt-in limits (bytes)
    assert smem <= 166_912 <= 232_448
    # the launcher's automatic S stays within 64 KiB: 8 samples of
    # the chapter's 2-D model fit
    assert shared_memory_bytes(2, [3, 128, 128, 2], samples_per_block=8) <= 64 * 1024
    assert shared_memory_bytes(2, [3, 128, 128, 2], 8) == 8 * shared_memory_bytes(
        2, [3, 128, 128, 2], 1
    )


def test_dispatchers_use_the_reference_without_gpu(monkeypatch):
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    model = _MLP(2, hidden=16, depth=3, seed=11)
    x = torch.randn(7, 2)
    t = torch.rand(7)
    for a, b in zip(
        mlp_velocity_divergence(model.linear_params(), x, t),
        mlp_velocity_divergence_reference(model.linear_params(), x, t),
    ):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(
        euler_log_likelihood(model.linear_params(), x, 5),
        euler_log_likelihood_reference(model.linear_params(), x, 5),
        rtol=0,
        atol=0,
    )


# --------------------------------------------------------------------------------------
# the CUDA kernel's index arithmetic, emulated in NumPy on the launcher's packed buffer
# --------------------------------------------------------------------------------------


def _emulate_forward(buf, offsets, widths, xs, ts, d, tile=4):
    """flow_divergence.cu::fdm_set_input + fdm_forward + fdm_trace for one group of
    S = len(ts) samples, loop for loop (float32); xs (S, d), ts (S,)."""
    S = len(ts)
    ncols = tile * ((d + 1 + tile - 1) // tile)
    ld = max(int(widths.max()), d + 1)
    cur, nxt = (
        np.full(S * ncols * ld, np.nan, np.float32),
        np.full(S * ncols * ld, np.nan, np.float32),
    )
    rows = d + 1
    for idx in range(S * ncols * rows):
        c, i = divmod(idx, rows)
        s, k = divmod(c, ncols)
        cur[c * ld + i] = (
            (xs[s, i] if i < d else ts[s])
            if k == 0
            else (1.0 if (k <= d and i == k - 1) else 0.0)
        )
    L = len(offsets)
    for l in range(L):
        nin, nout = int(widths[l]), int(widths[l + 1])
        Wt = buf[offsets[l] : offsets[l] + nin * nout]
        bias = buf[offsets[l] + nin * nout : offsets[l] + nin * nout + nout]
        for e in range(nout * (S * ncols // tile)):
            j, c0 = e % nout, (e // nout) * tile
            for u in range(tile):
                col = cur[(c0 + u) * ld : (c0 + u) * ld + nin]
                acc = np.float32(np.dot(Wt[np.arange(nin) * nout + j], col))
                nxt[(c0 + u) * ld + j] = acc + (
                    bias[j] if (c0 % ncols == 0 and u == 0) else 0
                )
        if l < L - 1:
            for e in range(S * nout):
                s, j = divmod(e, nout)
                base = s * ncols * ld + j
                a = nxt[base]
                sg = 1 / (1 + np.exp(-a))
                for k in range(1, ncols):
                    nxt[base + k * ld] *= sg * (1 + a * (1 - sg))
                nxt[base] = a * sg
        cur, nxt = nxt, cur
    v = np.stack([cur[s * ncols * ld : s * ncols * ld + d] for s in range(S)])
    div = np.array(
        [
            sum(cur[s * ncols * ld + (j + 1) * ld + j] for j in range(d))
            for s in range(S)
        ],
        np.float32,
    )
    return v, div


@pytest.mark.parametrize(
    "d,hidden,depth,S",
    [(1, 5, 1, 1), (3, 7, 2, 2), (4, 9, 3, 3), (2, 6, 0, 1), (2, 6, 2, 4)],
)
def test_packed_layout_emulation_matches_reference(d, hidden, depth, S):
    # odd widths and d + 1 not a multiple of the tile exercise the padding; depth
    # 0 = one Linear; S > 1 samples per block share the column buffers
    if depth == 0:
        gen = torch.Generator().manual_seed(0)
        params = [(torch.randn(d, d + 1, generator=gen), torch.randn(d, generator=gen))]
    else:
        params = _MLP(d, hidden=hidden, depth=depth, seed=d).linear_params()
    buf, offsets, widths = pack_params(params)
    assert (
        buf.dtype == np.float32
        and offsets.dtype == np.int32
        and widths.dtype == np.int32
    )
    assert buf.size == sum(W.numel() + b.numel() for W, b in params)
    rng = np.random.default_rng(d)
    x = rng.standard_normal((2 * S, d)).astype(np.float32)
    t = rng.random(2 * S).astype(np.float32)
    v_ref, div_ref = mlp_velocity_divergence_reference(
        params, torch.from_numpy(x), torch.from_numpy(t)
    )
    for g in range(2):
        rows = slice(g * S, (g + 1) * S)
        v, div = _emulate_forward(buf, offsets, widths, x[rows], t[rows], d)
        # no read of an unset (NaN) slot
        assert np.all(np.isfinite(v)) and np.all(np.isfinite(div))
        np.testing.assert_allclose(v, v_ref[rows].numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(div, div_ref[rows].numpy(), rtol=1e-5, atol=1e-5)


def test_euler_emulation_matches_reference():
    d, n, S = 2, 6, 2
    params = _MLP(d, hidden=10, depth=2, seed=12).linear_params()
    buf, offsets, widths = pack_params(params)
    x1 = np.random.default_rng(4).standard_normal((S, d)).astype(np.float32)
    want = euler_log_likelihood_reference(params, torch.from_numpy(x1), n).numpy()
    h = np.float32(1.0 / n)
    xs, acc = x1.copy(), np.zeros(S, np.float32)
    for k in range(n):
        v, div = _emulate_forward(
            buf, offsets, widths, xs, np.full(S, 1.0 - k / n, np.float32), d
        )
        acc += h * div
        xs -= h * v
    logp = -0.5 * (xs * xs).sum(1) - np.float32(0.91893853320467274) * d - acc
    np.testing.assert_allclose(logp, want, rtol=1e-5, atol=1e-5)


class _FakeKernel:
    """Stands in for the CuPy RawKernel: checks the launch configuration and argument types,
    then runs the kernel's grid-stride loop over sample groups with :func:`_emulate_forward`."""

    def __init__(self, name: str, smem: int):
        self.name, self.smem = name, smem

    def __call__(self, grid, block, args, shared_mem):
        assert shared_mem == self.smem and block[0] % 32 == 0 and 32 <= block[0] <= 1024
        buf, offsets, widths, L = args[:4]
        assert buf.dtype == np.float32 and offsets.dtype == widths.dtype == np.int32
        assert isinstance(L, np.int32) and L == len(offsets)
        assert all(isinstance(a, np.int32) for a in args[-5:])  # B, d, NCOLS, LD, S
        B, d, ncols, ld, S = (int(a) for a in args[-5:])
        assert ncols % 4 == 0 and ncols >= d + 1 and ld >= int(widths.max())
        # the kernel's shared layout fits
        assert 4 * (2 * S * ncols * ld + S * (d + 2)) <= shared_mem
        if self.name == "mlp_velocity_divergence_kernel":
            x, t, v, div = args[4:8]
            assert x.dtype == t.dtype == v.dtype == div.dtype == np.float32
        else:
            x, n_steps, x0, integral, logp = args[4:9]
            assert isinstance(n_steps, np.int32)
        n_groups = -(-B // S)
        for block_id in range(grid[0]):
            for g in range(block_id, n_groups, grid[0]):  # grid-stride over groups
                idx = np.arange(g * S, g * S + S)
                ok = idx < B
                xs = np.zeros((S, d), np.float32)
                xs[ok] = x[idx[ok]]
                if self.name == "mlp_velocity_divergence_kernel":
                    ts = np.zeros(S, np.float32)
                    ts[ok] = t[idx[ok]]
                    vv, dd = _emulate_forward(buf, offsets, widths, xs, ts, d)
                    v[idx[ok]], div[idx[ok]] = vv[ok], dd[ok]
                else:
                    h, acc = np.float32(1.0 / int(n_steps)), np.zeros(S, np.float32)
                    for k in range(int(n_steps)):
                        vv, dd = _emulate_forward(
                            buf,
                            offsets,
                            widths,
                            xs,
                            np.full(S, 1 - k / int(n_steps), np.float32),
                            d,
                        )
                        acc += h * dd
                        xs -= h * vv
                    x0[idx[ok]], integral[idx[ok]] = xs[ok], acc[ok]
                    logp[idx[ok]] = (
                        -0.5 * (xs * xs).sum(1)
                        - np.float32(0.91893853320467274) * d
                        - acc
                    )[ok]


@pytest.fixture
def fake_cupy(monkeypatch):
    """A NumPy-backed stand-in for the parts of CuPy the launchers use (132 SMs, 227 KiB opt-in)."""
    import sys
    import types

    import icml25.kernels.flow_divergence as kfd

    fake = types.ModuleType("cupy")
    fake.float32 = np.float32
    fake.asarray = lambda a, dtype=None: np.asarray(a, dtype=dtype)
    fake.ascontiguousarray = lambda a, dtype=None: np.ascontiguousarray(a, dtype=dtype)
    fake.empty = np.empty
    runtime = types.SimpleNamespace(
        cudaDevAttrMultiProcessorCount=16,
        cudaDevAttrMaxSharedMemoryPerBlockOptin=97,
        deviceGetAttribute=lambda attr, dev: {16: 132, 97: 232_448}[attr],
    )
    fake.cuda = types.SimpleNamespace(
        runtime=runtime, Device=lambda: types.SimpleNamespace(id=0)
    )
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(kfd, "_get_kernel", lambda name, smem: _FakeKernel(name, smem))
    # fewer blocks than groups: exercises the grid-stride loop
    monkeypatch.setattr(kfd, "_MAX_GRID", 3)
    return kfd


@pytest.mark.parametrize("samples_per_block", [None, 1, 3])
def test_gpu_launchers_with_emulated_kernel_match_reference(
    fake_cupy, samples_per_block
):
    # the launchers' argument order, dtypes, launch configuration and
    # tail handling, end to end
    kfd = fake_cupy
    params = _MLP(3, hidden=9, depth=2, seed=14).linear_params()
    gen = torch.Generator().manual_seed(5)
    # 11: partial last group
    x, t = torch.randn(11, 3, generator=gen), torch.rand(11, generator=gen)
    v, div = kfd.mlp_velocity_divergence_gpu(
        params, x, t, samples_per_block=samples_per_block
    )
    v_ref, div_ref = mlp_velocity_divergence_reference(params, x, t)
    np.testing.assert_allclose(v, v_ref.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(div, div_ref.numpy(), rtol=1e-5, atol=1e-5)
    out = kfd.euler_log_likelihood_gpu(
        params, x.numpy(), 4, return_all=True, samples_per_block=samples_per_block
    )
    for o, r in zip(out, euler_log_likelihood_reference(params, x, 4, return_all=True)):
        np.testing.assert_allclose(o, r.numpy(), rtol=1e-5, atol=1e-5)


def test_gpu_launch_config_limits(fake_cupy):
    kfd = fake_cupy
    w = np.array([33, 512, 512, 32], np.int32)
    ncols, ld, S, smem, threads, grid = kfd._launch_config(32, w, 10_000, None)
    assert (
        (ncols, ld, S) == (36, 512, 1)
        and smem == shared_memory_bytes(32, w.tolist())
        and threads == 512
    )
    ncols, ld, S, smem, threads, grid = kfd._launch_config(
        2, np.array([3, 128, 128, 2], np.int32), 10**6, None
    )
    assert S == 8 and smem <= 64 * 1024 and grid == 3  # (_MAX_GRID patched to 3)
    # few samples: S = 1
    assert kfd._launch_config(2, np.array([3, 128, 2], np.int32), 100, None)[2] == 1
    with pytest.raises(ValueError, match="samples_per_block"):
        kfd._launch_config(2, np.array([3, 128, 2], np.int32), 100, 0)
    with pytest.raises(ValueError, match="shared memory"):
        kfd._launch_config(2, np.array([3, 512, 2], np.int32), 100, 64)


def test_flow_divergence_cu_entry_points_in_ptx():
    for arch in ("compute_80", "compute_90"):
        ptx = compile_ptx("flow_divergence", arch=arch)
        entries = set(re.findall(r"\.entry\s+(\w+)\s*\(", ptx))
        assert {
            "mlp_velocity_divergence_kernel",
            "euler_log_likelihood_kernel",
        } <= entries
        # the per-thread tile accumulators stay in registers
        assert "ld.local" not in ptx


# --------------------------------------------------------------------------------------
# GPU parity (float32, |gpu - ref| <= GPU_RTOL * max(1, |ref|))
# --------------------------------------------------------------------------------------


def _assert_parity(gpu, ref):  # pragma: no cover - needs a GPU
    gpu = np.asarray(gpu.get() if hasattr(gpu, "get") else gpu, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    bound = GPU_RTOL * np.maximum(1.0, np.abs(ref))
    assert np.all(np.abs(gpu - ref) <= bound), np.max(np.abs(gpu - ref) / bound)


@pytest.mark.gpu
@pytest.mark.parametrize("samples_per_block", [None, 1, 3])
@pytest.mark.parametrize(
    "d,hidden,depth",
    [
        (1, 64, 3),
        (2, 128, 3),
        (3, 33, 2),
        (8, 128, 3),
        (2, 512, 4),
        (32, 512, 2),
        (5, 16, 0),
    ],
)
def test_mlp_velocity_divergence_gpu_matches_reference(
    d, hidden, depth, samples_per_block
):  # pragma: no cover - needs a GPU
    from icml25.kernels.flow_divergence import mlp_velocity_divergence_gpu

    if depth == 0:
        params = [(torch.randn(d, d + 1), torch.randn(d))]
    else:
        params = _MLP(d, hidden=hidden, depth=depth, seed=d).linear_params()
    gen = torch.Generator().manual_seed(0)
    # 301: a partial group
    x, t = 1.5 * torch.randn(301, d, generator=gen), torch.rand(301, generator=gen)
    v_ref, div_ref = mlp_velocity_divergence_reference(params, x, t)
    v, div = mlp_velocity_divergence_gpu(
        params, x, t, samples_per_block=samples_per_block
    )
    _assert_parity(v, v_ref.numpy())
    _assert_parity(div, div_ref.numpy())


@pytest.mark.gpu
@pytest.mark.parametrize("samples_per_block", [None, 1, 3])
@pytest.mark.parametrize(
    "d,hidden,n_steps", [(2, 128, 50), (8, 128, 20), (3, 512, 10), (1, 32, 1)]
)
def test_euler_log_likelihood_gpu_matches_reference(
    d, hidden, n_steps, samples_per_block
):  # pragma: no cover - needs a GPU
    from icml25.kernels.flow_divergence import euler_log_likelihood_gpu

    params = _MLP(d, hidden=hidden, depth=3, gain=1.0, seed=d).linear_params()
    x1 = torch.randn(501, d, generator=torch.Generator().manual_seed(1))
    ref = euler_log_likelihood_reference(params, x1, n_steps, return_all=True)
    out = euler_log_likelihood_gpu(
        params, x1, n_steps, return_all=True, samples_per_block=samples_per_block
    )
    for o, r in zip(out, ref):
        _assert_parity(o, r.numpy())


@pytest.mark.gpu
def test_dispatchers_on_gpu_return_torch_on_the_input_device():  # pragma: no cover - needs a GPU
    params = _MLP(2, hidden=32, depth=3, seed=13).linear_params()
    x, t = torch.randn(2000, 2), torch.rand(2000)
    v, div = mlp_velocity_divergence(params, x, t)
    assert (
        isinstance(v, torch.Tensor)
        and v.device.type == "cpu"
        and v.dtype == torch.float32
    )
    _assert_parity(
        div.numpy(), mlp_velocity_divergence_reference(params, x, t)[1].numpy()
    )
    logp = euler_log_likelihood(params, x.numpy(), 30)
    assert isinstance(logp, torch.Tensor) and logp.shape == (2000,)
    _assert_parity(logp.numpy(), euler_log_likelihood_reference(params, x, 30).numpy())


def test_bad_times_points_and_helper_arguments_raise():
    """Found in review: these were accepted silently (or failed deep inside torch)."""
    torch.manual_seed(0)
    params = [(torch.randn(8, 3), torch.randn(8)), (torch.randn(2, 8), torch.randn(2))]
    x, t = torch.randn(5, 2), torch.rand(5)
    xn = x.clone()
    xn[0, 1] = float("nan")
    with pytest.raises(ValueError, match=r"t must be finite and lie in \[0, 1\]"):
        mlp_velocity_divergence(params, x, t + 3)
    with pytest.raises(ValueError, match=r"t must be finite"):
        mlp_velocity_divergence_reference(params, x, torch.full((5,), float("nan")))
    with pytest.raises(TypeError, match="t must be"):
        mlp_velocity_divergence_reference(params, x, None)
    with pytest.raises(ValueError, match="x must be finite"):
        mlp_velocity_divergence(params, xn, t)
    with pytest.raises(ValueError, match="x1 must be finite"):
        euler_log_likelihood(params, xn, 3)
    with pytest.raises(ValueError, match="d must be"):
        shared_memory_bytes(0, [1])
    with pytest.raises(ValueError, match="samples_per_block"):
        shared_memory_bytes(2, [3, 8, 2], 0)
    with pytest.raises(ValueError, match="widths"):
        shared_memory_bytes(2, [])
    with pytest.raises(ValueError, match="params"):
        pack_params([(1, 2)])
    # valid edge cases still work: t exactly 0 and 1, a scalar t
    v, div = mlp_velocity_divergence_reference(
        params, x, torch.tensor([0.0, 1.0, 0.5, 0.2, 1.0])
    )
    assert v.shape == (5, 2) and div.shape == (5,)
    assert mlp_velocity_divergence_reference(params, x, 0.5)[1].shape == (5,)


def test_arguments_are_checked_with_the_shared_validators():
    """Issue 13: the kernel's checks come from icml25.checks (TypeError for the wrong kind,
    ValueError for a wrong value, the argument named)."""
    params = _params()
    x, t = torch.zeros(4, 2), torch.zeros(4)
    bad = [(W.clone(), b.clone()) for W, b in params]
    bad[1][0][0, 0] = float("nan")
    # was a silent NaN result
    with pytest.raises(ValueError, match=r"params\[1\]\[0\] must be finite"):
        mlp_velocity_divergence_reference(bad, x, t)
    with pytest.raises(ValueError, match=r"params\[1\]\[0\] must be finite"):
        euler_log_likelihood(bad, x, 2)
    with pytest.raises(TypeError, match="d must be an integer"):
        shared_memory_bytes(2.0, [3, 8, 2])
    with pytest.raises(TypeError, match=r"widths\[1\] must be an integer"):
        shared_memory_bytes(2, [3, 8.5, 2])
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        mlp_velocity_divergence(params, "not an array", t)
    # NumPy inputs are converted (the dispatchers return torch tensors)
    v, div = mlp_velocity_divergence(params, x.numpy(), t.numpy())
    assert isinstance(v, torch.Tensor) and div.shape == (4,)
