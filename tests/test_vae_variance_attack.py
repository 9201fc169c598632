"""icml25.vae_variance_attack (chapter 03): losses by hand, PGD invariants, the clamp, the victim, metrics, data."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from icml25 import vae_variance_attack as vaa

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "03-vae-variance-attack"


@pytest.fixture(scope="module")
def vae():
    torch.manual_seed(0)
    v = (
        vaa.make_vae((8, 8), latent_channels=2, image_size=8)
        .eval()
        .requires_grad_(False)
    )
    return v


@pytest.fixture(scope="module")
def x():
    return torch.from_numpy(vaa.synthetic_faces(2, 2, 8, np.random.default_rng(0))[0])


def _post(seed=0, shape=(3, 2, 4, 4)):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(shape, generator=g),
        torch.randn(shape, generator=g) - 2,
        torch.randn(shape, generator=g),
        torch.randn(shape, generator=g) - 2,
    )


# ---------------------------------------------------------------------------- posterior


def test_encode_posterior_matches_diffusers_latent_dist(vae, x):
    mu, lv, raw = vaa.encode_posterior(vae, x, raw=True)
    dist = vae.encode(2 * x - 1).latent_dist
    assert torch.allclose(mu, dist.mean, atol=1e-6) and torch.allclose(
        lv, dist.logvar, atol=1e-6
    )
    assert torch.equal(lv, raw.clamp(-30, 20))
    assert mu.shape == (4, 2, 4, 4)


def test_posterior_variance_and_ratio(vae, x):
    v = vaa.posterior_variance(vae, x)
    _, lv = vaa.encode_posterior(vae, x)
    assert np.allclose(v, np.exp(lv.double().numpy()).reshape(4, -1).sum(1))
    assert vaa.latent_variance_ratio(vae, x, x) == 1.0
    assert np.all(vaa.latent_variance_ratio(vae, x, x, per_image=True) == 1.0)


# ----------------------------------------------------------------------- losses by hand


def test_each_loss_by_hand():
    ma, la, mc, lc = _post()
    A = {
        k: v.double().numpy()
        for k, v in zip(("ma", "la", "mc", "lc"), (ma, la, mc, lc))
    }
    B = A["la"].shape[0]
    hand = {
        "la": np.mean([np.log(np.mean(np.exp(A["la"][b]))) for b in range(B)]),
        "le": np.mean(0.5 * A["la"]) - 1.0 * np.mean(np.maximum(A["la"] - 18.0, 0)),
        "pid_addlog": np.mean((A["la"] - A["lc"]) ** 2)
        + np.mean((A["ma"] - A["mc"]) ** 2),
        "pid_var": np.mean((np.exp(A["la"] / 2) - np.exp(A["lc"] / 2)) ** 2),
        "encoder_mean": np.mean((A["ma"] - A["mc"]) ** 2),
        "variance_sum": np.sum(np.exp(A["la"])),
    }
    public = {
        "la": vaa.loss_la,
        "le": vaa.loss_le,
        "pid_addlog": vaa.loss_pid_addlog,
        "pid_var": vaa.loss_pid_var,
        "encoder_mean": vaa.loss_encoder_mean,
        "variance_sum": vaa.loss_variance_sum,
    }
    for name, want in hand.items():
        assert float(public[name](ma, la, mc, lc)) == pytest.approx(want, rel=1e-5), (
            name
        )
        assert float(vaa.LOSSES[name](ma, la, mc, lc)) == pytest.approx(
            want, rel=1e-5
        ), name


def test_pid_kl_is_torch_distributions_kl_clean_to_adv():
    ma, la, mc, lc = _post(1)
    p = torch.distributions.Normal(mc, torch.exp(0.5 * lc))
    q = torch.distributions.Normal(ma, torch.exp(0.5 * la))
    want = torch.distributions.kl_divergence(p, q).mean()
    assert float(vaa.loss_pid_kl(ma, la, mc, lc)) == pytest.approx(
        float(want), rel=1e-5
    )


def test_le_penalty_switches_on_above_c_max():
    ma, _, mc, lc = _post(2)
    lv = torch.full_like(ma, 19.0)
    assert float(vaa.loss_le(ma, lv, mc, lc, lam=0.0)) == pytest.approx(9.5)
    assert float(vaa.loss_le(ma, lv, mc, lc, lam=2.0, c_max=18.0)) == pytest.approx(
        9.5 - 2.0
    )
    assert float(vaa.make_loss_le(2.0, 18.0)(ma, lv, mc, lc)) == pytest.approx(7.5)


def test_losses_bad_input():
    ma, la, mc, lc = _post()
    with pytest.raises(ValueError, match="logvar_clean"):
        vaa.loss_la(ma, la, mc, lc[:1])
    with pytest.raises(ValueError, match="mu_adv"):
        vaa.loss_pid_addlog(ma[0], la, mc, lc)
    bad = la.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="logvar_adv"):
        vaa.loss_encoder_mean(ma, bad, mc, lc)
    with pytest.raises(ValueError, match="lam"):
        vaa.loss_le(ma, la, mc, lc, lam=-1.0)
    with pytest.raises(ValueError, match="c_max"):
        vaa.make_loss_le(1.0, 25.0)
    with pytest.raises(ValueError, match="loss"):
        vaa.get_loss("nope")
    with pytest.raises(TypeError, match="loss"):
        vaa.get_loss(3)


# ----------------------------------------------------------------------------- PGD


@pytest.mark.parametrize("loss", sorted(vaa.LOSSES))
def test_pgd_protect_invariants(vae, x, loss):
    eps = 0.05
    x_adv, tr = vaa.pgd_protect(
        vae, x, loss, np.random.default_rng(0), eps=eps, alpha=0.01, n_steps=4
    )
    assert float((x_adv - x).abs().max()) <= eps + 1e-6
    assert float(x_adv.min()) >= 0.0 and float(x_adv.max()) <= 1.0
    assert set(tr) == {"v_ratio", "dlogvar", "agreement", "n_clamped"}
    assert all(v.shape == (5, 4) for v in tr.values())
    assert np.all(np.isnan(tr["agreement"][-1])) and np.all(
        np.isfinite(tr["agreement"][:-1])
    )
    assert np.allclose(
        tr["v_ratio"][-1],
        vaa.latent_variance_ratio(vae, x, x_adv, per_image=True),
        rtol=1e-5,
    )


def test_zero_start_leaves_two_sided_losses_stuck(vae, x):
    """At delta = 0 the MSE losses have zero gradient: sign steps never move (why PID starts uniformly)."""
    x_adv, _ = vaa.pgd_protect(vae, x, "pid_addlog", None, n_steps=3, init="zero")
    assert torch.equal(x_adv, x)
    x_la, _ = vaa.pgd_protect(vae, x, "la", None, n_steps=3, init="zero")
    assert float((x_la - x).abs().max()) > 0


@pytest.mark.parametrize(
    "g",
    [
        lambda V: V,
        lambda V: V**3,
        torch.log,
        torch.sqrt,
        lambda V: torch.exp(V / V.detach()),
    ],
)
def test_agreement_is_one_for_any_increasing_function_of_v(vae, x, g):
    def loss(ma, la, mc, lc):
        return g(torch.exp(la).sum())

    d = torch.from_numpy(
        np.random.default_rng(1).uniform(-0.03, 0.03, x.shape).astype(np.float32)
    )
    d = torch.clamp(d, -x, 1 - x)
    # the math says exactly 1; float rounding can flip a sign where grad V
    # is at the rounding floor
    assert vaa.sign_alignment(vae, x, d, loss) >= 0.999


def test_agreement_of_a_decreasing_function_is_zero(vae, x):
    d = torch.clamp(torch.full_like(x, 0.01), -x, 1 - x)
    a = vaa.sign_alignment(vae, x, d, lambda ma, la, mc, lc: -torch.exp(la).sum())
    assert a <= 0.001


def test_la_and_variance_sum_take_the_same_steps(vae, x):
    a, ta = vaa.pgd_protect(
        vae, x, "la", np.random.default_rng(3), n_steps=5, alpha=0.01
    )
    b, tb = vaa.pgd_protect(
        vae, x, "variance_sum", np.random.default_rng(3), n_steps=5, alpha=0.01
    )
    assert np.allclose(ta["v_ratio"], tb["v_ratio"], rtol=1e-4)
    # at most one step apart at a rounding-level flip
    assert float((a - b).abs().max()) <= 0.02 + 1e-6


def test_clamped_entries_get_zero_gradient(vae, x):
    v = vaa.make_vae((8, 8), latent_channels=2, image_size=8)
    v.load_state_dict(vae.state_dict())
    with torch.no_grad():  # push the log-variance half of the moments above 20
        v.quant_conv.bias[2] += 20.5
    mu, lv, raw = vaa.encode_posterior(v, x.clone().requires_grad_(True), raw=True)
    raw.retain_grad()
    vaa.loss_la(mu, lv, mu.detach(), lv.detach()).backward()
    assert bool((raw > 20).any())
    assert torch.all(raw.grad[raw > 20] == 0) and bool((raw.grad[raw < 20] != 0).any())


def test_pgd_protect_bad_input(vae, x):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="images"):
        vaa.pgd_protect(vae, x[:, :2], "la", rng)
    with pytest.raises(ValueError, match="images"):
        vaa.pgd_protect(vae, x + 1.5, "la", rng)
    bad = x.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="images"):
        vaa.pgd_protect(vae, bad, "la", rng)
    with pytest.raises(ValueError, match="eps"):
        vaa.pgd_protect(vae, x, "la", rng, eps=0.0)
    with pytest.raises(ValueError, match="alpha"):
        vaa.pgd_protect(vae, x, "la", rng, alpha=-0.1)
    with pytest.raises(ValueError, match="n_steps"):
        vaa.pgd_protect(vae, x, "la", rng, n_steps=0)
    with pytest.raises(ValueError, match="loss"):
        vaa.pgd_protect(vae, x, "photoguard", rng)
    with pytest.raises(ValueError, match="init"):
        vaa.pgd_protect(vae, x, "la", rng, init="gauss")
    with pytest.raises(TypeError, match="rng"):
        vaa.pgd_protect(vae, x, "la", 0)
    with pytest.raises(ValueError, match="x"):
        vaa.encode_posterior(vae, x[0])
    with pytest.raises(ValueError, match="delta"):
        vaa.sign_alignment(vae, x, torch.zeros(1, 3, 8, 8), "la")
    with pytest.raises(ValueError, match="x_adv"):
        vaa.latent_variance_ratio(vae, x, x[:2])


# ----------------------------------------------------------------- baselines and victim


@pytest.fixture(scope="module")
def unet():
    torch.manual_seed(1)
    return vaa.make_unet(4, latent_channels=2, latent_size=4, channels=(8, 16)).eval()


def test_advdm_and_aspl_stay_in_the_ball(unet, vae, x):
    for fn, kw in (
        (vaa.advdm_protect, {"n_steps": 2}),
        (vaa.aspl_protect, {"n_outer": 1, "surrogate_steps": 1, "pgd_steps": 2}),
    ):
        x_adv = fn(unet, vae, x, 3, np.random.default_rng(0), eps=0.03, **kw)
        assert (
            float((x_adv - x).abs().max()) <= 0.03 + 1e-6
            and 0 <= float(x_adv.min())
            and float(x_adv.max()) <= 1
        )
        assert float((x_adv - x).abs().max()) > 0
    with pytest.raises(ValueError, match="class_id"):
        vaa.advdm_protect(unet, vae, x, 9, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_outer"):
        vaa.aspl_protect(unet, vae, x, 3, np.random.default_rng(0), n_outer=0)
    with pytest.raises(TypeError, match="rng"):
        vaa.advdm_protect(unet, vae, x, 3, 5)


def test_dreambooth_finetune_copies_and_binds_the_token(unet, vae, x):
    before = {k: v.clone() for k, v in unet.state_dict().items()}
    ft = vaa.dreambooth_finetune(
        unet, vae, x, 3, 2, np.random.default_rng(0), latents="mode"
    )
    # original untouched
    assert all(torch.equal(before[k], v) for k, v in unet.state_dict().items())
    assert not torch.equal(ft.class_embedding.weight[3], unet.class_embedding.weight[3])
    gen = vaa.generate(ft, vae, 3, 2, np.random.default_rng(1), n_steps=3)
    assert gen.shape == (2, 3, 8, 8) and float(gen.min()) >= 0 and float(gen.max()) <= 1
    with pytest.raises(ValueError, match="latents"):
        vaa.dreambooth_finetune(
            unet, vae, x, 3, 2, np.random.default_rng(0), latents="mean"
        )
    with pytest.raises(ValueError, match="class_id"):
        vaa.generate(ft, vae, 4, 2, np.random.default_rng(1))
    with pytest.raises(ValueError, match="n_steps"):
        vaa.dreambooth_finetune(unet, vae, x, 3, 0, np.random.default_rng(0))


def test_train_vae_sets_a_unit_latent_scale(x):
    v = vaa.train_vae(
        x, np.random.default_rng(0), channels=(8, 8), n_steps=2, batch_size=4
    )
    with torch.no_grad():
        z = v.encode(2 * x - 1).latent_dist.sample(
            generator=torch.Generator().manual_seed(0)
        )
    # fresh draws
    assert (
        vaa.latent_scale(v) > 0 and abs(float(z.std()) * vaa.latent_scale(v) - 1) < 0.3
    )
    with pytest.raises(ValueError, match="n_steps"):
        vaa.train_vae(x, np.random.default_rng(0), channels=(8, 8), n_steps=0)
    with pytest.raises(ValueError, match="channels"):
        vaa.make_vae((12, 8))


def test_save_and_load_round_trip(tmp_path, unet, vae):
    sums = vaa.save_models(
        {"vaes": [vae], "unet": unet, "n_train": 2}, tmp_path, {"seed": 0}
    )
    m = vaa.load_models(tmp_path)
    assert set(sums) == {"vae0.safetensors", "unet.safetensors", "models.json"}
    for k, v in vae.state_dict().items():
        # fp16 on disk
        assert torch.allclose(m["vaes"][0].state_dict()[k], v, atol=1e-2, rtol=1e-3)
    with pytest.raises(FileNotFoundError):
        vaa.load_models(tmp_path / "none")


def test_shipped_models_load_and_match_their_readme_sha256():
    readme = (DATA / "README.md").read_text()
    listed = dict(re.findall(r"`([\w.]+)`\s*\|[^|]*\|\s*`([0-9a-f]{64})`", readme))
    assert {
        "vae0.safetensors",
        "vae1.safetensors",
        "unet.safetensors",
        "models.json",
    } <= set(listed)
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name
    assert sum(p.stat().st_size for p in DATA.iterdir()) <= 5 * 2**20
    m = vaa.load_models(DATA)
    meta = json.loads((DATA / "models.json").read_text())["meta"]
    x, _ = vaa.synthetic_faces(2, 2, meta["size"], np.random.default_rng(0))
    x = torch.from_numpy(x)
    mu, lv = vaa.encode_posterior(m["vaes"][0], x)
    assert mu.shape == (4, 4, meta["size"] // 4, meta["size"] // 4) and bool(
        torch.isfinite(lv).all()
    )
    with torch.no_grad():
        rec = (m["vaes"][0].decode(mu).sample + 1) / 2
    assert float(((rec - x) ** 2).mean()) < 0.01  # a trained autoencoder
    assert int(m["unet"].config.num_class_embeds) == m["n_train"] + 2


# --------------------------------------------------------------------- metrics and data


def test_psnr_matches_skimage():
    from skimage.metrics import peak_signal_noise_ratio

    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 8, 8)).astype(np.float32)
    b = np.clip(a + 0.05 * rng.normal(size=a.shape), 0, 1).astype(np.float32)
    got = vaa.psnr(torch.from_numpy(a), torch.from_numpy(b))
    want = [
        peak_signal_noise_ratio(
            a[i].astype(np.float64), b[i].astype(np.float64), data_range=1.0
        )
        for i in range(2)
    ]
    assert np.allclose(got, want, rtol=1e-6)
    with pytest.raises(ValueError, match="y"):
        vaa.psnr(torch.from_numpy(a), torch.from_numpy(b[:1]))


def test_classifiers_and_scores():
    x, y = vaa.synthetic_faces(3, 12, 16, np.random.default_rng(0))
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    clf = vaa.identity_classifier(
        x, y, np.random.default_rng(0), n_epochs=25, batch_size=12
    )
    assert vaa.identity_accuracy(clf, x[y == 1], 1) >= 0.9  # learnable identities
    assert vaa.identity_accuracy(clf, x[y == 1], 0) <= 0.1
    assert vaa.ism(clf, x[y == 2][:1], x[y == 2][:1]) == pytest.approx(1.0, abs=1e-5)
    lfw, face = vaa.lfw_faces(16)
    fc = vaa.face_classifier(lfw, face, x, np.random.default_rng(0), n_epochs=3)
    f = vaa.fdfr_proxy(fc, x)
    assert 0.0 <= f <= 1.0
    with pytest.raises(ValueError, match="labels"):
        vaa.identity_classifier(x, y[:3], np.random.default_rng(0))
    with pytest.raises(ValueError, match="identity"):
        vaa.identity_accuracy(clf, x, -1)
    with pytest.raises(ValueError, match="lfw_is_face"):
        vaa.face_classifier(lfw, face * 2, x, np.random.default_rng(0))


def test_synthetic_faces_are_fixed_identities_with_jitter():
    a, la = vaa.synthetic_faces([3, 5], 2, 16, np.random.default_rng(0), noise=0.0)
    b, _ = vaa.synthetic_faces([3, 5], 2, 16, np.random.default_rng(1), noise=0.0)
    assert (
        a.shape == (4, 3, 16, 16) and a.dtype == np.float32 and list(la) == [3, 3, 5, 5]
    )
    assert 0 <= a.min() and a.max() <= 1 and not np.array_equal(a, b)
    assert np.array_equal(vaa.identity_params(6)[3], vaa.identity_params(4)[3])
    # two images of one identity are closer than images of two identities (on average)
    same = np.abs(a[0] - a[1]).mean()
    other = np.abs(a[0] - a[2]).mean()
    assert same < other
    with pytest.raises(TypeError, match="rng"):
        vaa.synthetic_faces(2, 2, 16, 0)
    with pytest.raises(ValueError, match="size"):
        vaa.synthetic_faces(2, 2, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="identities"):
        vaa.synthetic_faces([], 2, 16, np.random.default_rng(0))


def test_lfw_subset_faces():
    imgs, face = vaa.lfw_faces(32)
    assert (
        imgs.shape == (200, 3, 32, 32)
        and face.sum() == 100
        and np.allclose(imgs[:, 0], imgs[:, 1])
    )


def test_experiments_compare_losses_share_a_start(vae, x):
    res = vaa.compare_losses(
        vae,
        x,
        ["la", "variance_sum", "pid_addlog"],
        np.random.default_rng(0),
        0.05,
        0.01,
        3,
    )
    assert res["la"]["v_ratio_median"] == pytest.approx(
        res["variance_sum"]["v_ratio_median"], rel=1e-4
    )
    assert res["la"]["linf"] <= 0.05 + 1e-6
    rows = vaa.sweep(
        vae, x, ["la"], np.random.default_rng(0), [0.02, 0.05], [1, 3], 0.01
    )
    assert {(r["eps"], r["n_steps"]) for r in rows} == {(0.02, 3), (0.05, 1), (0.05, 3)}
    tr = vaa.transfer(vae, x, {"la": res["la"]["x_adv"]})
    assert tr["la"] == pytest.approx(res["la"]["v_ratio_median"], rel=1e-5)
    with pytest.raises(ValueError, match="losses"):
        vaa.compare_losses(vae, x, ["nope"], np.random.default_rng(0), 0.05, 0.01, 3)


def test_experiments_bad_input(vae, x):
    """Mismatched batches used to broadcast silently (transfer, mean_shift); empty loss lists returned {}."""
    with pytest.raises(ValueError, match="x_adv"):
        vaa.mean_shift(vae, x, x[:1])
    with pytest.raises(ValueError, match="protected"):
        vaa.transfer(vae, x, {"la": x[:1]})
    with pytest.raises(ValueError, match="protected"):
        vaa.transfer(vae, x, {"la": x + 2.0})
    with pytest.raises(ValueError, match="losses"):
        vaa.compare_losses(vae, x, [], np.random.default_rng(0), 0.05, 0.01, 1)
    with pytest.raises(TypeError, match="losses"):
        vaa.compare_losses(vae, x, "la", np.random.default_rng(0), 0.05, 0.01, 1)
    with pytest.raises(ValueError, match="losses"):
        vaa.sweep(vae, x, [], np.random.default_rng(0), [0.05], [1], 0.01)
    with pytest.raises(ValueError, match="losses"):
        vaa.sweep(vae, x, ["nope"], np.random.default_rng(0), [0.05], [1], 0.01)
