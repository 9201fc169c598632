"""Tests of icml25.flow_divergence (chapter 07, flow and divergence matching)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.linalg import expm
from scipy.stats import multivariate_normal

import icml25.flow_divergence as F

torch.set_num_threads(1)


class LinearField(torch.nn.Module):
    """v(x, t) = A x + b (time-independent)."""

    def __init__(self, A: np.ndarray, b: np.ndarray | None = None) -> None:
        super().__init__()
        self.A = torch.tensor(A, dtype=torch.float64)
        self.b = (
            torch.zeros(len(A), dtype=torch.float64)
            if b is None
            else torch.tensor(b, dtype=torch.float64)
        )

    def forward(self, x, t):
        return x @ self.A.T.to(x.dtype) + self.b.to(x.dtype)


def _rng_tensor(seed, *shape):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )


# ---------------------------------------------------------------- divergence estimators


def test_divergence_exact_linear_field_is_trace():
    A = np.random.default_rng(0).normal(size=(4, 4))
    x = _rng_tensor(1, 7, 4)
    div = F.divergence_exact(LinearField(A), x, torch.rand(7, dtype=torch.float64))
    assert torch.allclose(
        div, torch.full((7,), np.trace(A), dtype=torch.float64), atol=1e-12
    )


def test_divergence_exact_quadratic_field_closed_form():
    # v_i(x) = x^T Q_i x + t x_i  ->  div v = sum_i ((Q_i + Q_i^T) x)_i + d t
    rng = np.random.default_rng(2)
    d = 3
    Q = torch.tensor(rng.normal(size=(d, d, d)))
    x, t = _rng_tensor(3, 5, d), torch.rand(5, dtype=torch.float64)

    def v(xx, tt):
        return torch.einsum("bj,ijk,bk->bi", xx, Q, xx) + tt[:, None] * xx

    expected = (
        torch.einsum("ijk,bk->bij", Q + Q.transpose(1, 2), x)
        .diagonal(dim1=1, dim2=2)
        .sum(1)
        + d * t
    )
    assert torch.allclose(F.divergence_exact(v, x, t), expected, atol=1e-10)


def test_divergence_hutchinson_unbiased_within_standard_error():
    A = np.random.default_rng(4).normal(size=(5, 5))
    field = LinearField(A)
    x = _rng_tensor(5, 1, 5).expand(4000, 5).contiguous()
    t = torch.zeros(4000, dtype=torch.float64)
    for dist in ("rademacher", "gaussian"):
        est, v = F.divergence_hutchinson(
            field, x, t, 1, dist, rng=torch.Generator().manual_seed(6)
        )
        se = float(est.std()) / math.sqrt(len(est))
        assert abs(float(est.mean()) - np.trace(A)) < 4 * se
        assert v.shape == (4000, 5)


def test_divergence_hutchinson_rademacher_variance_formula():
    A = np.random.default_rng(7).normal(size=(4, 4))
    x = torch.zeros(20000, 4, dtype=torch.float64)
    est, _ = F.divergence_hutchinson(
        LinearField(A),
        x,
        torch.zeros(20000, dtype=torch.float64),
        1,
        rng=torch.Generator().manual_seed(8),
    )
    S = A + A.T
    theory = sum(S[i, j] ** 2 for i in range(4) for j in range(i + 1, 4))
    # 20k probes: relative s.e. of a variance ~1.4 %
    assert abs(float(est.var()) / theory - 1) < 0.05


def test_velocity_mlp_interface():
    m = F.VelocityMLP(3, hidden=16, depth=2)
    assert len(m.linears) == 3 and isinstance(m.linears, torch.nn.ModuleList)
    params = m.linear_params()
    assert [tuple(w.shape) for w, _ in params] == [(16, 4), (16, 16), (3, 16)]
    assert all(w.dtype == torch.float32 and not w.requires_grad for w, _ in params)
    x, t = torch.randn(5, 3), torch.rand(5)
    h = torch.cat([x, t[:, None]], 1)
    for i, (w, b) in enumerate(params):
        h = h @ w.T + b
        if i < len(params) - 1:
            h = h * torch.sigmoid(h)
    assert torch.allclose(m(x, t), h, atol=1e-6)


# ------------------------------------------------------------------ affine path


def test_affine_path_matches_meta_flow_matching():
    from flow_matching.path import AffineProbPath
    from flow_matching.path.scheduler import CondOTScheduler, LinearVPScheduler

    x0, x1 = _rng_tensor(9, 32, 3), _rng_tensor(10, 32, 3)
    t = (
        torch.rand(32, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
        * 0.99
    )
    for name, sched in (
        ("cond_ot", CondOTScheduler()),
        ("linear_vp", LinearVPScheduler()),
    ):
        ref = AffineProbPath(scheduler=sched).sample(x_0=x0, x_1=x1, t=t)
        ours = F.affine_path(x0, x1, t, name)
        assert torch.allclose(ours.xt, ref.x_t, atol=1e-12)
        assert torch.allclose(ours.ut, ref.dx_t, atol=1e-12)  # the CFM target
        # the CFM loss on a constant prediction agrees with the
        # direct MSE on Meta's target
        v = torch.zeros_like(x0)
        assert torch.isclose(F.cfm_loss(v, ours.ut), ((v - ref.dx_t) ** 2).mean())


def test_conditional_score_and_divergence_match_autograd():
    d, B = 3, 6
    x0, x1 = _rng_tensor(12, B, d), _rng_tensor(13, B, d)
    t = torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9, 0.95], dtype=torch.float64)
    for schedule in F.SCHEDULES:
        ps = F.affine_path(x0, x1, t, schedule)
        x = ps.xt.clone().requires_grad_(True)
        a, s = ps.alpha_t[:, None], ps.sigma_t[:, None]
        logp = (-((x - a * x1) ** 2).sum(1) / (2 * s[:, 0] ** 2)).sum()
        score = torch.autograd.grad(logp, x)[0]
        assert torch.allclose(score, ps.score, atol=1e-10)
        u_fn = lambda xx, tt: (  # noqa: E731
            ps.d_sigma_t[:, None] / s * (xx - a * x1) + ps.d_alpha_t[:, None] * x1
        )
        assert torch.allclose(u_fn(ps.xt, t), ps.ut, atol=1e-10)
        assert torch.allclose(F.divergence_exact(u_fn, ps.xt, t), ps.div_u, atol=1e-10)


# -------------------------------------------------------- Gaussian-mixture ground truth


@pytest.fixture(scope="module")
def gmm():
    return F.GaussianMixture2D(
        np.array([[-2.0, 0.5], [1.5, -1.0], [0.0, 2.0]]),
        [0.4, 0.7, 0.5],
        [0.2, 0.5, 0.3],
    )


def test_gmm_path_density_integrates_to_one(gmm):
    xs = np.linspace(-9, 9, 361)
    X, Y = np.meshgrid(xs, xs)
    pts = torch.tensor(np.stack([X.ravel(), Y.ravel()], 1))
    for t in (0.0, 0.4, 1.0):
        mass = float(gmm.path_density(pts, t).sum()) * (xs[1] - xs[0]) ** 2
        assert abs(mass - 1) < 1e-6


def test_gmm_path_density_matches_monte_carlo(gmm):
    # P(x_t in box) by Monte Carlo samples of t x1 + (1 - t) x0 vs
    # the grid integral of p_t
    t, n = 0.6, 200_000
    x = gmm.sample_path(n, t, torch.Generator().manual_seed(14)).double()
    box = (
        ((x[:, 0] > -1) & (x[:, 0] < 1) & (x[:, 1] > 0) & (x[:, 1] < 2))
        .double()
        .mean()
        .item()
    )
    xs, ys = np.linspace(-1, 1, 201), np.linspace(0, 2, 201)
    X, Y = np.meshgrid(0.5 * (xs[1:] + xs[:-1]), 0.5 * (ys[1:] + ys[:-1]))
    dens = gmm.path_density(torch.tensor(np.stack([X.ravel(), Y.ravel()], 1)), t)
    integral = float(dens.sum()) * 0.01**2
    se = math.sqrt(integral * (1 - integral) / n)
    assert abs(box - integral) < 4 * se + 1e-4


def test_gmm_score_and_divergence_match_autograd(gmm):
    x = _rng_tensor(15, 10, 2) * 2
    for t in (0.05, 0.5, 0.97):
        xg = x.clone().requires_grad_(True)
        score = torch.autograd.grad(gmm.log_path_density(xg, t).sum(), xg)[0]
        assert torch.allclose(score, gmm.marginal_score(x, t), atol=1e-9)
        div = F.divergence_exact(
            lambda xx, tt: gmm.marginal_velocity(xx, t), x, torch.full((10,), t)
        )
        assert torch.allclose(div, gmm.marginal_divergence(x, t), atol=1e-9)


def test_gmm_marginal_velocity_is_posterior_mean_of_conditional_velocity(gmm):
    # u_t(x) = E[p_t(x|x1) u_t(x|x1)] / E[p_t(x|x1)], x1 ~ q,
    # estimated with 400k data draws
    t = 0.5
    x1 = gmm.sample(400_000, torch.Generator().manual_seed(16)).double()
    x = torch.tensor([[0.3, -0.2], [-1.0, 0.5]], dtype=torch.float64)
    for xi, ui in zip(x, gmm.marginal_velocity(x, t)):
        sig = 1 - t
        w = torch.exp(-((xi - t * x1) ** 2).sum(1) / (2 * sig**2))
        uc = (xi - t * x1) * (-1 / sig) + x1
        est = (w[:, None] * uc).sum(0) / w.sum()
        assert torch.allclose(est, ui, atol=0.02)


def test_gmm_satisfies_continuity_equation(gmm):
    # d/dt log p_t + div u_t + u_t . grad log p_t = 0 (central difference in t)
    x = _rng_tensor(17, 50, 2) * 1.5
    for t in (0.2, 0.5, 0.8):
        h = 1e-5
        dlogp = (gmm.log_path_density(x, t + h) - gmm.log_path_density(x, t - h)) / (
            2 * h
        )
        res = (
            dlogp
            + gmm.marginal_divergence(x, t)
            + (gmm.marginal_velocity(x, t) * gmm.marginal_score(x, t)).sum(1)
        )
        assert res.abs().max() < 1e-6


def test_conditional_residual_averages_to_marginal_residual(gmm):
    # With v = the true marginal field, the divergence-matching residual has mean zero
    # over the joint (x0, x1): E[div u(.|x1) + u(.|x1).s(.|x1) | x] = div u + u.s
    # (the loss's key identity).
    n, t = 200_000, 0.6
    g = torch.Generator().manual_seed(18)
    x1 = gmm.sample(n, g).double()
    x0 = torch.randn(n, 2, generator=g, dtype=torch.float64)
    ps = F.affine_path(x0, x1, torch.full((n,), t, dtype=torch.float64))
    v = gmm.marginal_velocity(ps.xt, t)
    r = F.divergence_residual(
        v, gmm.marginal_divergence(ps.xt, t), ps.ut, ps.score, ps.div_u
    )
    assert abs(float(r.mean())) < 4 * float(r.std()) / math.sqrt(n)


# ------------------------------------------------------------------ losses


def test_fdm_loss_with_zero_lam_div_is_cfm():
    torch.manual_seed(0)
    m = F.VelocityMLP(2, 16, 2)
    x0, x1, t = torch.randn(64, 2), torch.randn(64, 2), torch.rand(64) * 0.9
    ps = F.affine_path(x0, x1, t)
    assert torch.isclose(
        F.fdm_loss(m, x0, x1, t, 1.0, 0.0), F.cfm_loss(m(ps.xt, t), ps.ut)
    )


def test_fdm_loss_variants_differentiable_and_distinct():
    torch.manual_seed(1)
    m = F.VelocityMLP(2, 16, 2)
    x0, x1, t = torch.randn(64, 2), torch.randn(64, 2), torch.rand(64) * 0.9
    vals = {}
    for variant in F.FDM_VARIANTS:
        for est in ("exact", "hutchinson"):
            loss = F.fdm_loss(
                m,
                x0,
                x1,
                t,
                1.0,
                0.1,
                est,
                variant=variant,
                rng=torch.Generator().manual_seed(2),
            )
            m.zero_grad()
            loss.backward()
            assert all(
                p.grad is not None and torch.isfinite(p.grad).all()
                for p in m.parameters()
            )
            vals[variant, est] = float(loss.detach())
    assert len({round(v, 6) for (k, e), v in vals.items() if e == "exact"}) == len(
        F.FDM_VARIANTS
    )


def test_divergence_matching_loss_norms_and_weights():
    B, d = 8, 2
    v, ut, s = torch.randn(B, d), torch.randn(B, d), torch.randn(B, d)
    div_v, div_u, sig = (
        torch.randn(B),
        torch.full((B,), -d / 0.5),
        torch.full((B,), 0.5),
    )
    r = div_v - div_u + ((v - ut) * s).sum(1)
    assert torch.isclose(
        F.divergence_matching_loss(v, div_v, ut, s, div_u, sig), r.abs().mean()
    )
    assert torch.isclose(
        F.divergence_matching_loss(v, div_v, ut, s, div_u, sig, "l2", "sigma"),
        ((0.5 * r) ** 2).mean(),
    )
    # inv_rate: 1 / |sigma_dot / sigma| / d = sigma / d for CondOT
    assert torch.isclose(
        F.divergence_matching_loss(v, div_v, ut, s, div_u, sig, "l1", "inv_rate"),
        (r * 0.5 / d).abs().mean(),
    )


def test_train_flow_reduces_cfm_loss():
    gm = F.GaussianMixture2D.ring(4, 2.0, 0.5)
    torch.manual_seed(3)
    m = F.VelocityMLP(2, 32, 2)
    hist = F.train_flow(
        m,
        gm.sample,
        80,
        64,
        3e-3,
        "fdm",
        torch.Generator().manual_seed(4),
        lam_div=0.1,
        variant="sigma_l2",
    )
    assert hist["cfm"][-20:].mean() < hist["cfm"][:10].mean()
    assert np.isfinite(hist["loss"]).all()


# ---------------------------------------------------------- ODE sampling and likelihood


def test_sample_ode_linear_field_matches_matrix_exponential():
    A = np.array([[-0.5, 1.0], [-1.0, -0.2]])
    x0 = _rng_tensor(19, 10, 2)
    exact = x0.numpy() @ expm(A).T
    rk4 = F.sample_ode(LinearField(A), x0, 50, "rk4").numpy()
    assert np.abs(rk4 - exact).max() < 1e-8
    err = [
        np.abs(F.sample_ode(LinearField(A), x0, n, "euler").numpy() - exact).max()
        for n in (100, 200)
    ]
    assert 1.8 < err[0] / err[1] < 2.2  # first order


def test_log_likelihood_identity_flow_is_base_density():
    x = _rng_tensor(20, 30, 3)
    ll = F.log_likelihood(LinearField(np.zeros((3, 3))), x, 10)
    assert torch.allclose(
        ll,
        torch.tensor(multivariate_normal(np.zeros(3), np.eye(3)).logpdf(x.numpy())),
        atol=1e-10,
    )


def test_log_likelihood_linear_flow_matches_pushforward():
    # x1 = expm(A) x0 with x0 ~ N(0, I)  =>  x1 ~ N(0, M M^T), M = expm(A)
    A = np.array([[0.3, 0.5], [-0.2, -0.4]])
    M = expm(A)
    x = _rng_tensor(21, 40, 2)
    ref = multivariate_normal(np.zeros(2), M @ M.T).logpdf(x.numpy())
    # O(h) and O(h^2) errors
    for method, n, tol in (("euler", 400, 3e-3), ("midpoint", 50, 1e-4)):
        ll = F.log_likelihood(LinearField(A), x, n, method=method).numpy()
        assert np.abs(ll - ref).max() < tol
    # Hutchinson: unbiased, 50 probes per step; sd of the integral ~ 0.01 here
    llh = F.log_likelihood(
        LinearField(A),
        x,
        20,
        exact=False,
        method="midpoint",
        n_probes=50,
        rng=torch.Generator().manual_seed(22),
    ).numpy()
    assert np.abs(llh - ref).mean() < 0.03


def test_log_likelihood_kernel_dispatch_matches_torch_path():
    torch.manual_seed(5)
    m = F.VelocityMLP(2, 32, 2)
    x = torch.randn(16, 2)
    a = F.log_likelihood(m, x, 20)  # kernels dispatcher
    b = F.log_likelihood(m, x, 20, use_kernel=False)  # torch path, same Euler scheme
    assert torch.allclose(a, b, atol=1e-4)


def test_log_likelihood_beyond_kernel_limits_uses_torch_path():
    # d = 33 > MAX_DIM of the fused kernel: log_likelihood must fall back, not raise
    torch.manual_seed(7)
    m = F.VelocityMLP(33, 8, 1)
    x = torch.randn(3, 33)
    a = F.log_likelihood(m, x, 4)
    b = F.log_likelihood(m, x, 4, use_kernel=False)
    assert torch.allclose(a, b)


def test_log_likelihood_of_trained_like_density_integrates_to_about_one():
    torch.manual_seed(6)
    m = F.VelocityMLP(2, 16, 2)
    xs, ys, dens = F.model_density_grid(m, lim=6.0, n=60, n_steps=40)
    mass = dens.sum() * (xs[1] - xs[0]) ** 2
    # a random small MLP barely moves N(0, I); Euler + grid error
    assert abs(mass - 1) < 0.05


# ------------------------------------------------------------------ metrics and data


def test_grid_and_hist_metrics():
    a = np.random.default_rng(23).normal(size=(50_000, 2))
    b = np.random.default_rng(24).normal(size=(50_000, 2))
    # eps smoothing of empty bins
    assert F.hist_tv(a, a) == 0.0 and F.hist_kl(a, a) == pytest.approx(0.0, abs=1e-4)
    assert F.hist_tv(a, b, bins=20) < 0.05
    # disjoint supports
    assert F.hist_tv(a, b + 20, bins=60, range=((-30, 30), (-30, 30))) > 0.99
    assert F.grid_tv(np.ones((2, 2)), np.zeros((2, 2)), 0.5) == 1.0


def test_checkerboard_support():
    x = F.checkerboard(10_000, torch.Generator().manual_seed(25)) * 0.45
    assert x.shape == (10_000, 2) and (x.abs() <= 2).all()
    cell = (torch.floor(x[:, 0]) + torch.floor(x[:, 1])) % 2
    assert (cell == 1).all() or (cell == 0).all()


def test_dynamical_trajectories_shapes_and_determinism():
    lz = F.lorenz_trajectories(4, T=5, rng=np.random.default_rng(0), n_drop=2)
    assert lz.shape == (4, 5, 3) and np.isfinite(lz).all()
    assert np.array_equal(
        lz, F.lorenz_trajectories(4, T=5, rng=np.random.default_rng(0), n_drop=2)
    )
    fh = F.fitzhugh_nagumo_trajectories(3, T=4, rng=np.random.default_rng(1), n_drop=5)
    assert fh.shape == (3, 4, 4) and np.isfinite(fh).all()
    data = F.TrajectoryData.from_trajectories(lz)
    assert data(7, torch.Generator().manual_seed(0)).shape == (7, 15)


# ------------------------------------------------------------------ bad inputs


def test_bad_inputs_raise():
    x, t = torch.randn(4, 2), torch.rand(4)
    m = F.VelocityMLP(2, 8, 1)
    with pytest.raises(ValueError, match="same shape"):
        F.affine_path(x, torch.randn(4, 3), t)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        F.affine_path(x, x, torch.tensor([0.1, 0.2, 1.5, 0.3]))
    with pytest.raises(ValueError, match="shape"):
        F.affine_path(x, x, torch.rand(3))
    with pytest.raises(TypeError, match="x0"):
        F.affine_path(x.numpy(), x, t)
    with pytest.raises(ValueError, match="schedule"):
        F.affine_path(x, x, t, "vp_cosine")
    with pytest.raises(ValueError, match="lam_div"):
        F.fdm_loss(m, x, x, t * 0.5, 1.0, -0.1)
    with pytest.raises(ValueError, match="lam_cfm"):
        F.fdm_loss(m, x, x, t * 0.5, -1.0, 0.1)
    with pytest.raises(ValueError, match="< 1"):
        F.fdm_loss(m, x, x, torch.ones(4))
    with pytest.raises(ValueError, match="estimator"):
        F.fdm_loss(m, x, x, t * 0.5, estimator="trace")
    with pytest.raises(ValueError, match="variant"):
        F.fdm_loss(m, x, x, t * 0.5, variant="paper")
    with pytest.raises(ValueError, match="dist"):
        F.divergence_hutchinson(m, x, t, 1, "uniform")
    with pytest.raises(ValueError, match="n_probes"):
        F.divergence_hutchinson(m, x, t, 0)
    with pytest.raises(ValueError, match="ut must have shape"):
        F.cfm_loss(x, torch.randn(4, 3))
    with pytest.raises(ValueError, match="norm"):
        F.divergence_matching_loss(x, t, x, x, t, t, norm="l3")
    with pytest.raises(ValueError, match="div_u"):
        F.divergence_matching_loss(x, t, x, x, torch.rand(3), t)
    with pytest.raises(ValueError, match="loss"):
        F.train_flow(m, F.checkerboard, 1, 4, loss="ddpm")
    with pytest.raises(ValueError, match="act"):
        F.VelocityMLP(2, act="relu")
    with pytest.raises(ValueError, match="method"):
        F.sample_ode(m, x, 10, "heun")
    with pytest.raises(ValueError, match="stds"):
        F.GaussianMixture2D([[0.0, 0.0]], [-1.0])
    with pytest.raises(ValueError, match="shape"):
        F.grid_tv(np.ones(3), np.ones(4), 1.0)


# ------------------------------ bad inputs found in review (each was silent or obscure)


def test_nan_points_and_times_are_rejected():
    x, t = torch.randn(4, 2), torch.rand(4) * 0.9
    xn = x.clone()
    xn[1, 0] = float("nan")
    m = F.VelocityMLP(2, 8, 1)
    with pytest.raises(ValueError, match="x0 must be finite"):
        F.affine_path(xn, x, t)
    with pytest.raises(ValueError, match="x1 must be finite"):
        F.fdm_loss(m, x, xn, t)
    with pytest.raises(ValueError, match="x must be finite"):
        F.divergence_exact(m, xn, t)
    with pytest.raises(ValueError, match="x0 must be finite"):
        F.sample_ode(m, xn, 5)
    with pytest.raises(ValueError, match="x1 must be finite"):
        F.log_likelihood(m, xn, 5)
    with pytest.raises(ValueError, match=r"t must lie in \[0, 1\]"):
        F.divergence_exact(m, x, t + 2)  # was accepted silently
    with pytest.raises(TypeError, match="t must be a torch.Tensor"):
        F.divergence_hutchinson(m, x, t.numpy())
    with pytest.raises(ValueError, match="t_grid"):
        # was a NaN row
        F.tv_bound_integrand(
            m, F.GaussianMixture2D.ring(), [0.5, float("nan")], n_mc=10
        )


def test_fdm_loss_rejects_mismatched_model_dtype_rng_and_empty_batch():
    x, t = torch.randn(4, 2), torch.rand(4) * 0.9
    m = F.VelocityMLP(2, 8, 1)
    with pytest.raises(ValueError, match="dim 2 but the points have d = 3"):
        F.fdm_loss(m, torch.randn(4, 3), torch.randn(4, 3), t)
    with pytest.raises(TypeError, match="same dtype"):
        F.fdm_loss(m, x.double(), x, t)
    with pytest.raises(TypeError, match="weights are torch.float32"):
        F.divergence_exact(m, x.double(), t.double())
    with pytest.raises(TypeError, match="rng must be a torch.Generator"):
        F.fdm_loss(m, x, x, t, estimator="hutchinson", rng=5)
    with pytest.raises(ValueError, match="B >= 1"):
        F.fdm_loss(m, x[:0], x[:0], t[:0])  # was a NaN loss
    with pytest.raises(TypeError, match="model must be a callable"):
        F.fdm_loss(None, x, x, t)
    with pytest.raises(ValueError, match="x must have shape"):
        m(torch.randn(4, 3), t)
    with pytest.raises(ValueError, match="t must be a scalar or have shape"):
        m(x, t[:3])


def test_divergence_residual_does_not_broadcast():
    v, B = torch.randn(5, 2), 5
    with pytest.raises(ValueError, match="div_v"):
        # was a silent (B, B) result
        F.divergence_residual(v, torch.zeros(B, 1), v, v, torch.zeros(B))
    with pytest.raises(ValueError, match="score must have shape"):
        F.divergence_residual(v, torch.zeros(B), v, v[:1], torch.zeros(B))
    with pytest.raises(TypeError, match="v must be a torch.Tensor"):
        F.divergence_matching_loss(
            v.numpy(), torch.zeros(B), v, v, torch.zeros(B), torch.ones(B)
        )
    assert F.divergence_residual(v, torch.zeros(B), v, v, torch.zeros(B)).shape == (B,)


def test_train_flow_validates_every_option_before_training():
    def fresh():
        return F.VelocityMLP(2, 8, 1)

    def samp(n, g):
        return torch.randn(n, 2, generator=g)

    # was silently the Hutchinson estimator
    with pytest.raises(ValueError, match="estimator"):
        F.train_flow(fresh(), samp, 2, 8, loss="fdm", estimator="bogus")
    with pytest.raises(ValueError, match="variant"):  # was a KeyError
        F.train_flow(fresh(), samp, 2, 8, loss="fdm", variant="bogus")
    with pytest.raises(ValueError, match="n_probes"):  # was a NaN loss history
        F.train_flow(
            fresh(), samp, 2, 8, loss="fdm", estimator="hutchinson", n_probes=0
        )
    with pytest.raises(ValueError, match="lr"):
        F.train_flow(fresh(), samp, 2, 8, lr=float("inf"))
    with pytest.raises(ValueError, match="lr_gamma"):
        F.train_flow(fresh(), samp, 2, 8, lr_gamma=-1.0)
    with pytest.raises(ValueError, match="warmup"):
        F.train_flow(fresh(), samp, 2, 8, warmup=-5)
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        F.train_flow(lambda x, t: x, samp, 2, 8)
    with pytest.raises(ValueError, match="sampler returns d = 3"):
        F.train_flow(fresh(), lambda n, g: torch.randn(n, 3), 2, 8)
    with pytest.raises(ValueError, match="sampler"):
        F.train_flow(fresh(), lambda n, g: np.zeros((n, 2)), 2, 8)
    with pytest.raises(ValueError, match="variant"):
        F.time_train_step(fresh(), torch.randn(8, 2), "fdm", variant="bogus")
    with pytest.raises(TypeError, match="x1"):
        F.time_train_step(fresh(), np.zeros((8, 2)))
    with pytest.raises(ValueError, match="n_probes"):  # was a NaN log-likelihood
        F.log_likelihood(fresh(), torch.randn(4, 2), 5, exact=False, n_probes=0)


def test_gmm_metrics_and_grid_bad_inputs():
    g = F.GaussianMixture2D.ring()
    with pytest.raises(ValueError, match="means"):
        F.GaussianMixture2D([[float("nan"), 0.0]], [1.0])
    with pytest.raises(ValueError, match="weights"):
        F.GaussianMixture2D([[0.0, 0.0], [1.0, 1.0]], [1.0, 1.0], [float("inf"), 1.0])
    with pytest.raises(ValueError, match=r"x must have shape \(\?, 2\)"):
        g.marginal_velocity(torch.randn(4, 3), 0.5)
    with pytest.raises(ValueError, match=r"t must lie in \[0, 1\]"):
        g.marginal_velocity(torch.randn(4, 2), 2.0)
    with pytest.raises(ValueError, match="t must be a scalar"):
        g.marginal_score(torch.randn(4, 2), torch.rand(3))
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        g.sample(0)
    with pytest.raises(ValueError, match="t must be a finite real number"):
        g.sample_path(5, 3.0)
    with pytest.raises(ValueError, match="gmm has d = 2"):
        F.tv_bound_integrand(F.VelocityMLP(3, 8, 1), g, [0.5], n_mc=10)
    with pytest.raises(ValueError, match="chunk"):
        F.model_density_grid(F.VelocityMLP(2, 8, 1), n=4, n_steps=2, chunk=0)
    with pytest.raises(ValueError, match="density_a"):
        F.grid_tv([float("nan"), 1.0], [1.0, 1.0], 1.0)
    with pytest.raises(ValueError, match="density_a"):
        F.grid_tv([-1.0, 1.0], [1.0, 1.0], 1.0)
    with pytest.raises(ValueError, match="a must have at least 1 element"):
        F.hist_tv(np.zeros((0, 2)), np.zeros((5, 2)))  # was 0.5
    with pytest.raises(ValueError, match="bins"):
        F.hist_kl(np.zeros((5, 2)), np.zeros((5, 2)), bins=0)
    with pytest.raises(ValueError, match="traj"):
        F.TrajectoryData.from_trajectories(np.zeros((5, 3)))


# ---------------------------------------- issue 13: silent results and the book's names


def test_hist_metrics_refuse_samples_holding_nan_or_inf():
    # NaN/inf samples (a diverged sampler) used to fall outside every
    # bin and give a finite score
    a = np.random.default_rng(26).normal(size=(2000, 2))
    for bad in (np.nan, np.inf, -np.inf):
        b = a.copy()
        b[3, 1] = bad
        with pytest.raises(ValueError, match="b must be finite"):
            F.hist_tv(a, b, bins=10)
        with pytest.raises(ValueError, match="a must be finite"):
            F.hist_tv(b, a, bins=10)
        with pytest.raises(ValueError, match="a must be finite"):
            F.hist_kl(b, a, bins=10)
        with pytest.raises(ValueError, match="b must be finite"):
            F.hist_kl(a, torch.tensor(b), bins=10)  # torch samples too
    with pytest.raises(ValueError, match=r"b must have shape \(\?, 2\)"):
        F.hist_tv(a, np.zeros((5, 3)))
    with pytest.raises(ValueError, match="range"):
        F.hist_tv(a, a, range=((5, -5), (-5, 5)))
    assert F.hist_tv(torch.tensor(a), a, bins=10) == 0.0


def test_divergence_matching_loss_refuses_non_positive_sigma():
    B, d = 6, 2
    g = torch.Generator().manual_seed(27)
    v, ut, s = (torch.randn(B, d, generator=g) for _ in range(3))
    div_v, div_u = torch.randn(B, generator=g), torch.full((B,), -d / 0.5)
    for bad in (0.0, -0.5):
        sig = torch.full((B,), 0.5)
        sig[2] = bad
        for norm, weight in (("l1", None), ("l2", "sigma"), ("l1", "inv_rate")):
            with pytest.raises(ValueError, match="sigma_t must be > 0"):
                F.divergence_matching_loss(v, div_v, ut, s, div_u, sig, norm, weight)
    with pytest.raises(ValueError, match="sigma_t must have shape"):
        F.divergence_matching_loss(v, div_v, ut, s, div_u, torch.full((B - 1,), 0.5))
    assert torch.isfinite(
        F.divergence_matching_loss(v, div_v, ut, s, div_u, torch.full((B,), 1e-6))
    )


def test_ode_solutions_are_checked_before_use():
    # dx/dt = 50 x^2 blows up at t = 1/(50 x0): the Euler states overflow to inf/NaN
    # (forwards for the sampler; the likelihood integrates
    # backwards, where -50 x^2 blows up)
    blow_up = lambda x, t: 50 * x**2  # noqa: E731
    x0 = torch.full((3, 2), 2.0, dtype=torch.float64)
    with pytest.raises(
        RuntimeError, match="sample_ode: the ODE solution is not finite"
    ):
        F.sample_ode(blow_up, x0, 100)
    with pytest.raises(
        RuntimeError, match="log_likelihood: the ODE solution is not finite"
    ):
        F.log_likelihood(lambda x, t: -blow_up(x, t), x0, 100)
    lin = LinearField(-np.eye(2))
    assert (
        torch.isfinite(F.sample_ode(lin, x0, 10)).all()
        and torch.isfinite(F.log_likelihood(lin, x0, 10)).all()
    )


def test_random_generators_are_named_rng_and_are_generators():
    m = F.VelocityMLP(2, 8, 1)
    x, t = torch.randn(4, 2), torch.rand(4) * 0.9
    with pytest.raises(TypeError, match="generator"):  # the old keyword is gone
        F.divergence_hutchinson(m, x, t, generator=torch.Generator())
    with pytest.raises(TypeError, match="rng must be a torch.Generator"):
        F.divergence_hutchinson(m, x, t, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng must be a torch.Generator"):
        F.train_flow(m, F.checkerboard, 1, 4, rng=4)  # an int seed was accepted before
    with pytest.raises(TypeError, match="rng must be a torch.Generator"):
        F.checkerboard(4, 0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        F.lorenz_trajectories(2, T=3, rng=0)  # an int seed was accepted before
    with pytest.raises(TypeError, match="rng"):
        F.fitzhugh_nagumo_trajectories(2, T=3)  # rng is required
    # the same generator gives the same run
    gm = F.GaussianMixture2D.ring(4, 2.0, 0.5)
    runs = []
    for _ in range(2):
        torch.manual_seed(3)
        runs.append(
            F.train_flow(
                F.VelocityMLP(2, 8, 1),
                gm.sample,
                3,
                16,
                rng=torch.Generator().manual_seed(5),
            )
        )
    assert np.array_equal(runs[0]["loss"], runs[1]["loss"])
    with pytest.raises(ValueError, match="n_reps"):
        F.time_train_step(m, x, n_reps=0)


def test_defaults_hold_the_official_settings():
    D = F.DEFAULTS
    assert (D.model.hidden, D.model.depth, D.model.act) == (512, 4, "swish")
    assert (D.training.batch, D.training.lr, D.training.lam_div) == (512, 1e-3, 0.1)
    assert (D.evaluation.hist_bins, D.evaluation.ode_steps) == (200, 100)
    assert (D.lorenz.T, D.lorenz.dt, D.lorenz.n_drop) == (60, 0.1, 30)
    with pytest.raises(AttributeError):
        D.model.hidden = 3  # frozen


# -------------------------------------------------------------- round 2: hostile inputs


def test_hist_metrics_refuse_or_charge_mass_outside_the_range():
    # a sampler whose points all left the range used to score KL
    # 0.0 (perfect) and TV 0.5
    b = np.random.default_rng(0).standard_normal((1000, 2))
    far = b * 0 + 1e6
    for fn in (F.hist_kl, F.hist_tv):
        with pytest.raises(ValueError, match="a has no point inside range"):
            fn(far, b)
        with pytest.raises(ValueError, match="b has no point inside range"):
            fn(b, far)
    with pytest.raises(TypeError, match="overflow"):
        F.hist_tv(b, b, overflow="yes")
    # overflow=True: the mass outside is one more bin, so it is charged
    assert F.hist_tv(far, b, overflow=True) == pytest.approx(1.0)
    assert F.hist_tv(b, far, overflow=True) == pytest.approx(1.0)
    assert F.hist_kl(far, b, overflow=True) > 20.0  # about log(1 / eps) = 23 nats
    half = b.copy()
    half[:500] = 1e6
    assert F.hist_tv(half, b, bins=20, overflow=True) >= 0.5
    assert F.hist_kl(half, b, bins=20, overflow=True) > 5.0
    # default: the official value, mass outside dropped (what the chapter reports)
    c = np.random.default_rng(1).standard_normal((1000, 2))
    c[:10] = 7.0  # 1 % outside [-5, 5]^2
    h = lambda x: (  # noqa: E731
        np.histogram2d(x[:, 0], x[:, 1], bins=30, range=((-5, 5), (-5, 5)))[0] / len(x)
    )
    assert F.hist_tv(b, c, bins=30) == pytest.approx(
        0.5 * np.abs(h(b) - h(c)).sum(), rel=1e-12
    )
    assert F.hist_tv(b, c, bins=30, overflow=True) == pytest.approx(
        F.hist_tv(b, c, bins=30) + 0.005, rel=1e-12
    )
    pa, pb = h(c), h(b) + 1e-10
    pa, pb = pa / pa.sum(), pb / pb.sum()
    m = pa > 0
    assert F.hist_kl(c, b, bins=30) == pytest.approx(
        (pa[m] * np.log(pa[m] / pb[m])).sum(), rel=1e-12
    )


def test_train_flow_refuses_non_finite_batches_and_losses():
    m = F.VelocityMLP(2, 8, 1)
    with pytest.raises(ValueError, match="NaN or inf at step 0"):
        F.train_flow(m, lambda n, g: torch.full((n, 2), float("nan")), 2, 8)
    calls = []

    def late_nan(n, g):  # finite at step 0, inf at step 1
        calls.append(n)
        x = torch.randn(n, 2, generator=g)
        return x if len(calls) == 1 else x * float("inf")

    with pytest.raises(ValueError, match="at step 1"):
        F.train_flow(m, late_nan, 3, 8, rng=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match=r"\(8, d\) float torch.Tensor"):
        F.train_flow(m, lambda n, g: torch.zeros(n + 1, 2), 2, 8)
    bad = F.VelocityMLP(2, 8, 1)
    with torch.no_grad():
        bad.linears[0].weight.fill_(float("nan"))
    with pytest.raises(RuntimeError, match="loss is not finite .* at step 0"):
        F.train_flow(bad, F.checkerboard, 2, 8, rng=torch.Generator().manual_seed(0))


def _huge_calls():
    rng = np.random.default_rng(0)
    m = F.VelocityMLP(2, 16, 2)
    x0 = torch.randn(4, 2)
    b = rng.standard_normal((100, 2))
    gmm = F.GaussianMixture2D.ring()
    traj = F.TrajectoryData.from_trajectories(
        np.random.default_rng(1).standard_normal((4, 3, 2))
    )
    return {
        "hist_tv(bins)": lambda: F.hist_tv(b, b, bins=10**6),
        "hist_kl(bins)": lambda: F.hist_kl(b, b, bins=10**6),
        "checkerboard(n)": lambda: F.checkerboard(10**12),
        "gmm.sample(n)": lambda: gmm.sample(10**12),
        "gmm.sample_path(n)": lambda: gmm.sample_path(10**12, 0.5),
        "TrajectoryData(n)": lambda: traj(10**12),
        "lorenz(n)": lambda: F.lorenz_trajectories(10**12, rng=rng),
        "lorenz(T)": lambda: F.lorenz_trajectories(1, T=10**12, rng=rng),
        "fitzhugh_nagumo(n)": lambda: F.fitzhugh_nagumo_trajectories(10**12, rng=rng),
        "train_flow(n_steps)": lambda: F.train_flow(m, F.checkerboard, 10**12, 512),
        "train_flow(batch)": lambda: F.train_flow(m, F.checkerboard, 1, 10**12),
        "time_train_step(n_reps)": lambda: F.time_train_step(m, x0, n_reps=10**12),
        "tv_bound_integrand(n_mc)": lambda: F.tv_bound_integrand(m, gmm, [0.5], 10**12),
        "model_density_grid(n)": lambda: F.model_density_grid(m, n=10**6),
        "model_density_grid(n_steps)": lambda: F.model_density_grid(
            m, n=10, n_steps=10**12
        ),
        "sample_ode(n_steps)": lambda: F.sample_ode(m, x0, n_steps=10**12),
        "sample_ode(callable)": lambda: F.sample_ode(
            lambda x, t: x, x0, n_steps=10**12
        ),
        "sample_ode(return_path)": lambda: F.sample_ode(
            m, torch.randn(10**4, 2), n_steps=10**6, return_path=True
        ),
        "log_likelihood(n_steps)": lambda: F.log_likelihood(m, x0, n_steps=10**12),
        "log_likelihood(torch path)": lambda: F.log_likelihood(
            m, x0, n_steps=10**12, use_kernel=False
        ),
        "log_likelihood(hutchinson)": lambda: F.log_likelihood(
            m, x0, n_steps=10**12, exact=False
        ),
    }


@pytest.mark.parametrize("name", list(_huge_calls()))
def test_sizes_that_cannot_fit_are_refused_before_any_work(name):
    import time

    from icml25.checks import TooLargeError

    call = _huge_calls()[name]
    start = time.perf_counter()
    with pytest.raises(
        TooLargeError, match=r"n_steps=|n=|bins=|batch=|n_reps=|n_mc=|T="
    ):
        call()
    assert time.perf_counter() - start < 1.0


def test_package_docstring_summary_is_one_line():
    import pydoc

    text = pydoc.render_doc(F, renderer=pydoc.plaintext).splitlines()
    name_line = text[text.index("NAME") + 1]
    assert name_line.strip().startswith(
        "icml25.flow_divergence - Flow and divergence matching"
    )
    assert name_line.rstrip().endswith(".")


def test_public_api_has_precise_hints_and_raises_sections():
    import inspect

    for fn in (F.hist_tv, F.hist_kl, F.GaussianMixture2D.__init__):
        for p in list(inspect.signature(fn).parameters.values())[:3]:
            if p.name != "self":
                assert "Any" not in str(p.annotation), (
                    fn.__qualname__,
                    p.name,
                    p.annotation,
                )
    assert "tuple[tuple[float, float], tuple[float, float]]" in str(
        inspect.signature(F.hist_tv, eval_str=True).parameters["range"].annotation
    )
    for name in F.__all__:
        obj = getattr(F, name)
        if inspect.isfunction(obj):
            members = [obj]
        elif inspect.isclass(obj):
            members = [
                v
                for k, v in vars(obj).items()
                if not k.startswith("_")
                and (inspect.isfunction(v) or isinstance(v, classmethod))
            ]
        else:
            continue
        for f in members:
            f = getattr(f, "__func__", f)
            assert "Raises:" in (f.__doc__ or ""), f.__qualname__
