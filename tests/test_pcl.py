"""Tests of icml25.pcl against independent references (closed forms, NumPy loops, scikit-learn, SciPy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml25 import pcl
from icml25.pcl.method import _pcl_objective

AB = pcl.ddpm_alpha_bar(1000)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


class _Linear(torch.nn.Module):
    """A hinted toy: f(x, y_t, t) = x W + c y_t (c = 0 ignores the hint)."""

    def __init__(self, d_in, d_out, c=0.0):
        super().__init__()
        self.W = torch.nn.Parameter(torch.randn(d_in, d_out, generator=_gen(11)))
        self.c, self.hint, self.label_type, self.y_dim = c, True, "gaussian", d_out

    def hint_shape(self, x):
        return (x.shape[0], self.y_dim)

    def forward(self, x, y_t=None, t=None):
        return x @ self.W + self.c * y_t


# ------------------------------------------------------------- schedules and corruption


def test_linear_schedule_is_the_cumprod_of_ddpm_betas():
    want = np.cumprod(1 - np.linspace(1e-4, 0.02, 1000))
    np.testing.assert_allclose(AB, want, rtol=1e-12)
    assert AB[0] < 1 and AB[-1] > 0 and np.all(np.diff(AB) < 0)


def test_cosine_schedule_follows_its_closed_form():
    ab = pcl.ddpm_alpha_bar(200, "cosine")
    s, t = 0.008, np.arange(1, 201)
    f = lambda u: np.cos(0.5 * math.pi * (u / 200 + s) / (1 + s)) ** 2  # noqa: E731
    want = f(t) / f(0)
    # betas are clipped at 0.999 near T
    np.testing.assert_allclose(ab[:-5], want[:-5], rtol=1e-6)
    assert np.all(np.diff(ab) < 0) and ab.min() > 0


def test_categorical_label_noise_marginal_by_monte_carlo():
    n, K, t = 100_000, 5, 300
    y = torch.full((n, 1), 3, dtype=torch.long)
    out = pcl.categorical_label_noise(y, t, AB, K, rng=_gen(1))
    freq = out[:, :, 0].mean(0).numpy()
    want = np.full(K, (1 - AB[t]) / K)
    want[3] += AB[t]
    assert np.all(np.abs(freq - want) < 5 * np.sqrt(want * (1 - want) / n))


def test_gaussian_label_noise_moments():
    n, t = 100_000, 500
    out = pcl.gaussian_label_noise(torch.full((n, 1), 1.0), t, AB, rng=_gen(2)).numpy()
    assert abs(out.mean() - math.sqrt(AB[t])) < 5 * math.sqrt((1 - AB[t]) / n)
    assert abs(out.var() - (1 - AB[t])) < 0.02


def test_embedding_label_noise_is_gaussian_noise_on_rows_of_E():
    E = torch.randn(10, 4, generator=_gen(3))
    y = torch.tensor([[1, 2], [3, 9]])
    out = pcl.embedding_label_noise(E, y, 0, AB, rng=_gen(4))
    assert out.shape == (2, 2, 4)
    eps = torch.randn(2, 2, 4, generator=_gen(4))
    np.testing.assert_allclose(
        out.numpy(),
        (math.sqrt(AB[0]) * E[y] + math.sqrt(1 - AB[0]) * eps).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_sample_times_are_distinct_sorted_and_uniform():
    t, t2 = pcl.sample_times(200_000, 10, rng=_gen(5))
    assert bool((t < t2).all())
    # the unordered pair is uniform over the 45 pairs: min has P(min = k) = (9 - k) / 45
    freq = np.bincount(t.numpy(), minlength=10) / len(t)
    want = (9 - np.arange(10)) / 45
    assert np.abs(freq - want).max() < 0.005
    lo, hi = pcl.sample_times(100, 10, "low_high", rng=_gen(6))
    assert bool((hi == 9).all()) and bool((lo < 9).all())


# ---------------------------------------------------------------- the loss


def test_pcl_objective_categorical_terms_by_hand():
    g = _gen(7)
    logits_lo, logits_hi = (
        torch.randn(2, 3, 2, 2, generator=g),
        torch.randn(2, 3, 2, 2, generator=g),
    )
    y = torch.randint(0, 3, (2, 2, 2), generator=g)
    outs = {0: logits_lo, 1: logits_hi}
    model = lambda x, y_t, t: outs[int(t[0])]  # noqa: E731  (t selects the branch)
    loss, terms = _pcl_objective(
        model,
        None,
        y,
        None,
        torch.zeros(2, dtype=torch.long),
        None,
        torch.ones(2, dtype=torch.long),
        0.7,
        0.3,
        "categorical",
        None,
        "kl",
    )
    lp_lo = logits_lo.numpy() - np.log(np.exp(logits_lo.numpy()).sum(1, keepdims=True))
    lp_hi = logits_hi.numpy() - np.log(np.exp(logits_hi.numpy()).sum(1, keepdims=True))
    onehot = np.eye(3)[y.numpy()].transpose(0, 3, 1, 2)
    ce_lo, ce_hi = -(onehot * lp_lo).sum(1).mean(), -(onehot * lp_hi).sum(1).mean()
    kl = (np.exp(lp_lo) * (lp_lo - lp_hi)).sum(1).mean()
    np.testing.assert_allclose(
        [terms["sup_t"], terms["sup_t2"], terms["consistency"]],
        [ce_lo, ce_hi, kl],
        rtol=1e-5,
    )
    np.testing.assert_allclose(float(loss), 0.7 * (ce_lo + ce_hi) + 0.3 * kl, rtol=1e-5)


def test_pcl_loss_gaussian_terms_by_hand_with_a_hint_blind_model():
    x = torch.randn(6, 3, generator=_gen(8))
    y = torch.randn(6, 2, generator=_gen(9))
    model = _Linear(3, 2, c=0.0)
    loss, terms = pcl.pcl_loss(model, x, y, AB, lam1=2.0, lam2=5.0, rng=_gen(10))
    want = float(((x @ model.W.detach() - y) ** 2).mean())
    assert terms["sup_t"] == pytest.approx(want, rel=1e-6) and terms[
        "sup_t2"
    ] == pytest.approx(want, rel=1e-6)
    assert terms["consistency"] == pytest.approx(0.0, abs=1e-12)
    assert float(loss.detach()) == pytest.approx(2.0 * 2 * want, rel=1e-6)


def test_pcl_loss_gaussian_consistency_by_hand_with_a_hint_copying_model():
    x, y = torch.zeros(4, 1), torch.randn(4, 3, generator=_gen(12))
    model = _Linear(1, 3, c=1.0)  # f = y_t exactly
    g = _gen(13)
    _, terms = pcl.pcl_loss(model, x, y, AB, rng=g)
    g2 = _gen(13)  # replay the draws: times, then eps of y_t, then eps of y_t'
    t, t2 = pcl.sample_times(4, 1000, rng=g2)
    yt = pcl.gaussian_label_noise(y, t, AB, rng=g2)
    yt2 = pcl.gaussian_label_noise(y, t2, AB, rng=g2)
    assert terms["sup_t"] == pytest.approx(float(((yt - y) ** 2).mean()), rel=1e-5)
    assert terms["consistency"] == pytest.approx(
        float(((yt - yt2) ** 2).mean()), rel=1e-5
    )


def test_stopgrad_low_blocks_the_gradient_of_the_teacher_branch():
    a = torch.randn(3, 2, requires_grad=True)
    b = torch.randn(3, 2, requires_grad=True)
    outs = {0: a, 1: b}
    model = lambda x, y_t, t: outs[int(t[0])]  # noqa: E731
    y = torch.zeros(3, 2)
    loss, _ = _pcl_objective(
        model,
        None,
        y,
        None,
        torch.zeros(3, dtype=torch.long),
        None,
        torch.ones(3, dtype=torch.long),
        0.0,
        1.0,
        "gaussian",
        "low",
        "mse",
    )
    loss.backward()
    assert float(a.grad.abs().sum()) == 0.0 and float(b.grad.abs().sum()) > 0.0


# ---------------------------------------------------------------- inference


def test_inference_times():
    assert pcl.inference_times(1000, 1) == [999]
    assert pcl.inference_times(1000, 5) == [999, 799, 599, 399, 199]


def test_pcl_predict_one_step_is_one_forward_from_the_prior():
    x = torch.randn(5, 3, generator=_gen(14))
    model = _Linear(3, 2, c=0.5)
    out = pcl.pcl_predict(model, x, AB, n_steps=1, rng=_gen(15))
    assert len(out) == 1
    prior = torch.randn(5, 2, generator=_gen(15))
    torch.testing.assert_close(out[0], x @ model.W.detach() + 0.5 * prior)


def test_pcl_predict_categorical_returns_every_step_and_one_step_uses_a_uniform_prior():
    torch.manual_seed(0)
    net = pcl.HintedUNet(1, 3, base=4)
    x = torch.randn(2, 1, 8, 8, generator=_gen(16))
    outs = pcl.pcl_predict(net, x, AB, n_steps=3, recorrupt="probs", rng=_gen(17))
    assert len(outs) == 3 and all(o.shape == (2, 3, 8, 8) for o in outs)
    one = pcl.pcl_predict(net, x, AB, n_steps=1, rng=_gen(18))[0]
    u = torch.rand(2, 2, 8, 8, generator=_gen(18))
    prior = (
        torch.nn.functional.one_hot(torch.clamp((u[:, 1] * 3).long(), max=2), 3)
        .movedim(-1, 1)
        .float()
    )
    net.eval()
    with torch.no_grad():
        torch.testing.assert_close(one, net(x, prior, torch.full((2,), 999)))


def test_hint_dependence_closed_forms():
    x, y = torch.zeros(50_000, 1), torch.ones(50_000, 1)
    assert pcl.hint_dependence(
        _Linear(1, 1, c=0.0), x, y, 10, 900, AB, rng=_gen(19)
    ) == pytest.approx(0.0, abs=1e-12)
    got = pcl.hint_dependence(_Linear(1, 1, c=1.0), x, y, 10, 900, AB, rng=_gen(20))
    want = (math.sqrt(AB[10]) - math.sqrt(AB[900])) ** 2 + (1 - AB[10]) + (1 - AB[900])
    assert got == pytest.approx(want, rel=0.03)


def test_linear_gaussian_posterior_matches_least_squares():
    rng = np.random.default_rng(21)
    d = pcl.linear_gaussian(200_000, rng, a=1.5, s=0.5)
    ab = float(AB[300])
    yt = math.sqrt(ab) * d["y"] + math.sqrt(1 - ab) * rng.normal(size=d["y"].shape)
    A = np.column_stack([d["x"][:, 0], yt[:, 0]])
    coef = np.linalg.lstsq(A, d["y"][:, 0], rcond=None)[0]
    cx = pcl.linear_gaussian_posterior(1.0, 0.0, ab)
    cy = pcl.linear_gaussian_posterior(0.0, 1.0, ab)
    np.testing.assert_allclose(coef, [cx, cy], rtol=0.02)
    # pure noise: E[y | x] = a x
    assert pcl.linear_gaussian_posterior(2.0, 5.0, 0.0) == pytest.approx(3.0)


# ---------------------------------------------------- metrics, data, networks, training


def test_metrics_match_scikit_learn():
    from sklearn.metrics import accuracy_score, jaccard_score

    rng = np.random.default_rng(22)
    y, p = rng.integers(0, 4, (3, 9, 9)), rng.integers(0, 4, (3, 9, 9))
    assert pcl.miou(p, y, 4) == pytest.approx(
        jaccard_score(y.ravel(), p.ravel(), average="macro")
    )
    assert pcl.pixel_acc(p, y, 4) == pytest.approx(accuracy_score(y.ravel(), p.ravel()))
    assert pcl.mse(p.astype(float), y.astype(float)) == pytest.approx(
        np.mean((p - y) ** 2)
    )


def test_synthetic_shapes_classes_and_intensity():
    d = pcl.synthetic_shapes(20, np.random.default_rng(23), size=16)
    assert d["x"].shape == (20, 1, 16, 16) and d["y"].shape == (20, 16, 16)
    assert set(np.unique(d["y"])) <= {0, 1, 2, 3} and (d["y"] > 0).any()
    # every shape pixel has the one intensity
    np.testing.assert_array_equal(d["x"][:, 0][d["y"] > 0], 1.0)


def test_digits_inpainting_hides_the_masked_pixels():
    d = pcl.digits_inpainting(np.random.default_rng(24), mask_frac=0.5)
    assert d["x"].shape == (1797, 128) and d["y"].shape == (1797, 64)
    assert np.all(d["x"][:, :64][d["mask"]] == 0) and abs(d["mask"].mean() - 0.5) < 0.01
    assert d["y"].min() >= -1 and d["y"].max() <= 1


def test_spring_nbody_matches_scipy_integration():
    from scipy.integrate import solve_ivp

    d = pcl.spring_nbody(
        1, np.random.default_rng(25), n_particles=4, dt=0.001, n_sim=500
    )
    A = d["adj"][0].astype(float)
    L = np.diag(A.sum(1)) - A

    def rhs(_t, z):
        x, v = z[:12].reshape(4, 3), z[12:].reshape(4, 3)
        return np.concatenate([v.ravel(), (-L @ x).ravel()])

    sol = solve_ivp(
        rhs,
        (0, 0.5),
        np.concatenate([d["pos"][0].ravel(), d["vel"][0].ravel()]).astype(float),
        rtol=1e-10,
        atol=1e-10,
    )
    disp = sol.y[:12, -1] - d["pos"][0].ravel()
    np.testing.assert_allclose(d["y"][0], disp, atol=1e-4)


def test_egnn_is_rotation_and_translation_equivariant():
    torch.manual_seed(1)
    net = pcl.HintedEGNN(hidden=16, n_layers=2)
    d = pcl.to_torch(
        pcl.spring_nbody(3, np.random.default_rng(26), n_particles=4, n_sim=5)
    )
    hint = torch.randn(3, 12, generator=_gen(27))
    t = torch.tensor([1, 500, 999])
    Q = torch.linalg.qr(torch.randn(3, 3, generator=_gen(28)))[0]
    out = net((d["pos"], d["vel"], d["adj"]), hint, t).view(3, 4, 3)
    out_r = net(
        (d["pos"] @ Q.T + 1.5, d["vel"] @ Q.T, d["adj"]),
        (hint.view(3, 4, 3) @ Q.T).reshape(3, 12),
        t,
    ).view(3, 4, 3)
    torch.testing.assert_close(out_r, out @ Q.T, atol=1e-4, rtol=1e-4)


def test_sl_network_has_no_hint_inputs_and_train_lowers_the_loss():
    sl = pcl.HintedUNet(1, 4, base=8, hint=False)
    assert (
        sl.e1.c1.in_channels == 1
        and pcl.HintedUNet(1, 4, base=8).e1.c1.in_channels == 5
    )
    d = pcl.to_torch(pcl.synthetic_shapes(64, np.random.default_rng(29), size=16))
    h = pcl.train(
        sl, lambda m, xb, yb, g: pcl.sl_loss(m, xb, yb), d["x"], d["y"], 4, rng=_gen(30)
    )
    assert h["loss"][-1] < h["loss"][0] and h["n_updates"] == 8


def test_ensemble_of_one_is_the_member():
    m = pcl.HintedMLP(3, 2, 8, hint=False)
    x = torch.randn(4, 3)
    torch.testing.assert_close(
        pcl.ensemble_predict([m], x, "gaussian"), pcl.sl_predict(m, x)
    )


# ---------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: pcl.gaussian_label_noise(torch.ones(2, 1), 1000, AB), "t"),
        (lambda: pcl.gaussian_label_noise(torch.ones(2, 1), -1, AB), "t"),
        (
            lambda: pcl.gaussian_label_noise(torch.ones(2, 1), 5, AB[::-1].copy()),
            "alpha_bar",
        ),
        (
            lambda: pcl.gaussian_label_noise(torch.ones(2, 1), 5, np.array([1.0, 0.0])),
            "alpha_bar",
        ),
        (lambda: pcl.categorical_label_noise(torch.tensor([[0, 4]]), 5, AB, 4), "y"),
        (
            lambda: pcl.categorical_label_noise(
                torch.tensor([[0, 1]]), 5, AB, 4, uniforms=torch.rand(1, 2, 3)
            ),
            "uniforms",
        ),
        (
            lambda: pcl.pcl_loss(
                _Linear(2, 2), torch.ones(3, 2), torch.ones(3, 2), AB, lam1=-1.0
            ),
            "lam1",
        ),
        (
            lambda: pcl.pcl_loss(
                _Linear(2, 2), torch.ones(3, 2), torch.ones(3, 2), AB, lam2=-0.5
            ),
            "lam2",
        ),
        (
            lambda: pcl.pcl_loss(_Linear(2, 2), torch.ones(3, 2), torch.ones(4, 2), AB),
            "y",
        ),
        (
            lambda: pcl.pcl_loss(
                _Linear(2, 2), torch.ones(3, 2), torch.ones(3, 2), AB, t_law="beta"
            ),
            "t_law",
        ),
        (
            lambda: pcl.pcl_loss(
                _Linear(2, 2), torch.ones(3, 2), torch.ones(3, 2), AB, stopgrad="both"
            ),
            "stopgrad",
        ),
        (
            lambda: pcl.pcl_loss(
                _Linear(2, 2), torch.ones(3, 2), torch.ones(3, 2), AB, consistency="kl"
            ),
            "consistency",
        ),
        (
            lambda: pcl.pcl_loss(
                pcl.HintedUNet(1, 4, base=4),
                torch.ones(1, 1, 8, 8),
                torch.full((1, 8, 8), 7),
                AB,
            ),
            "y",
        ),
        (
            lambda: pcl.pcl_loss(
                pcl.HintedUNet(1, 4, base=4, hint=False),
                torch.ones(1, 1, 8, 8),
                torch.zeros(1, 8, 8, dtype=torch.long),
                AB,
            ),
            "model",
        ),
        (
            lambda: pcl.pcl_predict(_Linear(2, 2), torch.ones(3, 2), AB, n_steps=0),
            "n_steps",
        ),
        (
            lambda: pcl.pcl_predict(_Linear(2, 2), torch.ones(3, 2), AB, ts=[10, 500]),
            "ts",
        ),
        (
            lambda: pcl.pcl_predict(
                _Linear(2, 2), torch.ones(3, 2), AB, recorrupt="mean"
            ),
            "recorrupt",
        ),
        (lambda: pcl.ddpm_alpha_bar(1), "T"),
        (lambda: pcl.ddpm_alpha_bar(10, "sigmoid"), "kind"),
        (lambda: pcl.inference_times(10, 11), "n_steps"),
        (
            lambda: pcl.sl_loss(
                pcl.HintedMLP(2, 2, 4, hint=False), torch.ones(3, 2), torch.ones(3, 3)
            ),
            "y",
        ),
        (
            lambda: pcl.sl_loss(
                pcl.HintedUNet(1, 4, base=4, hint=False),
                torch.ones(1, 1, 8, 8),
                torch.zeros(1, 8, 8, dtype=torch.long),
                label_smoothing=1.0,
            ),
            "label_smoothing",
        ),
        (lambda: pcl.synthetic_shapes(0, np.random.default_rng(0)), "n"),
        (lambda: pcl.synthetic_shapes(2, np.random.default_rng(0), size=30), "size"),
        (lambda: pcl.synthetic_shapes(2, 0), "rng"),
        (
            lambda: pcl.digits_inpainting(np.random.default_rng(0), mask_frac=1.5),
            "mask_frac",
        ),
        (
            lambda: pcl.spring_nbody(2, np.random.default_rng(0), n_particles=1),
            "n_particles",
        ),
        (lambda: pcl.miou(np.array([0, 5]), np.array([0, 1]), 4), "pred"),
        (lambda: pcl.miou(np.array([0, 1, 2]), np.array([0, 1]), 4), "pred"),
        (lambda: pcl.HintedUNet(1, 4, base=6), "base"),
        (lambda: pcl.TimeEmbedding(7), "dim"),
        (
            lambda: pcl.train(
                _Linear(2, 2), lambda *a: None, torch.ones(2, 2), torch.ones(2, 2), 0
            ),
            "epochs",
        ),
        (lambda: pcl.linear_gaussian_posterior(np.ones(2), np.ones(3), 0.5), "y_t"),
    ],
)
def test_bad_inputs_are_refused_naming_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


_UNET, _MLP = pcl.HintedUNet(1, 4, base=4), pcl.HintedMLP(3, 2, hidden=8)
_XU, _YU = torch.randn(2, 1, 8, 8), torch.randint(0, 4, (2, 8, 8))


# review of chapter 19: each case used to pass silently (a wrong result) or
# crash deep inside torch/numpy
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: pcl.gaussian_label_noise(torch.tensor(1.0), 5, AB), "y"),
        (
            lambda: pcl.categorical_label_noise(-torch.rand(2, 4, 8, 8), 5, AB, 4),
            "probabilities",
        ),
        (
            lambda: pcl.categorical_label_noise(
                torch.full((2, 4, 8, 8), 0.5), 5, AB, 4
            ),
            "sum to 1",
        ),
        (
            lambda: pcl.categorical_label_noise(
                torch.full((2, 4, 8, 8), float("nan")), 5, AB, 4
            ),
            "probabilities",
        ),
        (
            lambda: pcl.categorical_label_noise(
                _YU, 5, AB, 4, uniforms=torch.full((2, 2, 8, 8), float("nan"))
            ),
            "uniforms",
        ),
        (
            lambda: pcl.categorical_label_noise(
                torch.zeros(10, 10_000, dtype=torch.long), 5, AB, 10**6
            ),
            "K=",
        ),
        (
            lambda: pcl.categorical_label_noise(
                torch.zeros(1, 1, dtype=torch.long).expand(10**5, 10**5), 5, AB, 4
            ),
            "y of shape",
        ),
        (lambda: pcl.sample_times(10**12, 10), "B="),
        (lambda: pcl.pcl_loss(_UNET, _XU, _YU[:, :4], AB), "y must have shape"),
        (lambda: pcl.pcl_loss(_UNET, _XU, _YU[:1], AB), "y must have shape"),
        (lambda: pcl.pcl_loss(_UNET, torch.randn(2, 3, 8, 8), _YU, AB), "in_ch"),
        (
            lambda: pcl.pcl_loss(
                _UNET, torch.full((2, 1, 8, 8), float("nan")), _YU, AB
            ),
            "x must be finite",
        ),
        (
            lambda: pcl.pcl_loss(
                _UNET, torch.ones(2, 1, 8, 8, dtype=torch.long), _YU, AB
            ),
            "x must be a floating",
        ),
        (
            lambda: pcl.pcl_loss(
                _UNET, torch.randn(2, 1, 7, 7), torch.randint(0, 4, (2, 7, 7)), AB
            ),
            "divisible by 4",
        ),
        (
            lambda: pcl.pcl_loss(_MLP, torch.randn(4, 3), torch.randn(4, 5), AB),
            "y must have shape",
        ),
        (lambda: pcl.pcl_loss(_MLP, torch.randn(4, 7), torch.randn(4, 2), AB), "x_dim"),
        (
            lambda: pcl.pcl_loss(
                pcl.HintedEGNN(4, 1), torch.randn(2, 5, 3), torch.randn(2, 15), AB
            ),
            "pos, vel, adj",
        ),
        (lambda: pcl.pcl_predict(_UNET, torch.randn(1, 8, 8), AB), "x must be 4-D"),
        (
            lambda: pcl.pcl_predict(_UNET, torch.randn(0, 1, 8, 8), AB),
            "at least one sample",
        ),
        (
            lambda: pcl.pcl_predict(_UNET, torch.full((2, 1, 8, 8), float("inf")), AB),
            "x must be finite",
        ),
        (
            lambda: pcl.predict_from_hint(_UNET, _XU, _YU[:1], 5, AB),
            "y must have shape",
        ),
        (
            lambda: pcl.hint_dependence(
                _MLP, torch.randn(4, 3), torch.randn(4, 5), 5, 10, AB
            ),
            "y must have shape",
        ),
        (
            lambda: pcl.sl_loss(pcl.HintedUNet(1, 4, base=4, hint=False), _XU, _YU[:1]),
            "y must have shape",
        ),
        (
            lambda: pcl.sl_predict(
                pcl.HintedUNet(1, 4, base=4, hint=False), torch.randn(2, 2, 8, 8)
            ),
            "in_ch",
        ),
        (lambda: pcl.miou(np.zeros(0, int), np.zeros(0, int), 4), "empty"),
        (lambda: pcl.mse(np.zeros(0), np.zeros(0)), "empty"),
        (lambda: pcl.HintedUNet(1, 4, base=10**6), "base="),
        (lambda: pcl.linear_gaussian(10**13, np.random.default_rng(0)), "n="),
        (
            lambda: pcl.linear_gaussian_posterior(np.array([np.nan]), np.zeros(1), 0.5),
            "x",
        ),
        (
            lambda: pcl.train(
                _Linear(2, 2), lambda *a: None, torch.ones(4, 2), torch.ones(3, 2), 1
            ),
            "y",
        ),
        (
            lambda: pcl.train(
                _Linear(2, 2), lambda *a: None, torch.ones(0, 2), torch.ones(0, 2), 1
            ),
            "x",
        ),
    ],
)
def test_review_bad_inputs_are_refused_naming_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
