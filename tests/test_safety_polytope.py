"""Tests of icml25.safety_polytope (chapter 05) against hand computations, scipy and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml25 import safety_polytope as sap


def _poly(d=5, K=4, F=6, **kw):
    return sap.SafetyPolytope(d, K, F, rng=torch.Generator().manual_seed(0), **kw)


def test_loss_matches_hand_computation():
    poly = _poly(
        entropy_assignment=False,
        margin=0.5,
        unsafe_weight=3.0,
        l1_feat=0.2,
        l1_phi=0.01,
    )
    rng = np.random.default_rng(0)
    h = torch.tensor(rng.normal(size=(8, 5)), dtype=torch.float32)
    y = torch.tensor([1, 1, 0, 0, 1, 0, 1, 0])
    loss, info = poly.loss(h, y, rng)
    with torch.no_grad():
        E = torch.relu(poly.encoder.linear(h)).numpy()
        V = E @ poly.phi.numpy().T - poly.xi.numpy()
    want = 0.0
    for i in range(8):
        want += (
            sum(max(0, 0.5 + v) for v in V[i])
            if y[i] == 1
            else 3.0 * max(0, 0.5 - V[i].max())
        )
    f = V[y.numpy() == 0].argmax(1)
    p = np.bincount(f, minlength=4) / len(f)
    H = -sum(q * math.log2(q) for q in p if q > 0)
    want += (
        0.2 * np.abs(E).sum(1).mean()
        + 0.01 * np.abs(poly.phi.detach().numpy()).sum(1).mean()
        - H
    )
    assert abs(float(loss.detach()) - want) < 1e-4
    assert abs(info["entropy"] - H) < 1e-9


def test_entropy_term_has_no_gradient():
    poly = _poly(entropy_weight=5.0)
    h, y = torch.randn(12, 5), torch.tensor([0, 1] * 6)
    l1, _ = poly.loss(h, y, np.random.default_rng(0))
    g1 = torch.autograd.grad(l1, poly.phi)[0]
    poly.entropy_weight = 0.0
    l0, _ = poly.loss(h, y, np.random.default_rng(0))
    g0 = torch.autograd.grad(l0, poly.phi)[0]
    torch.testing.assert_close(g1, g0)


def test_reassignment_never_lowers_entropy():
    rng = np.random.default_rng(1)
    poly = _poly(K=6)
    for _ in range(20):
        v = torch.tensor(rng.normal(size=(40, 6)), dtype=torch.float32)
        y = torch.tensor(rng.integers(0, 2, 40))
        H0 = sap.entropy_bits(v.argmax(1)[y == 0], 6)
        _, facets, H, n = poly.assign_facets(v, y, rng)
        assert H >= H0 - 1e-12
        assert abs(H - sap.entropy_bits(facets[y == 0], 6)) < 1e-12
        assert torch.equal(facets[y == 1], v.argmax(1)[y == 1])


def test_entropy_bits_closed_forms():
    assert sap.entropy_bits(np.arange(8), 8) == pytest.approx(3.0)
    assert sap.entropy_bits(np.zeros(5, int), 3) == 0.0


def test_fit_polytope_separates_mixture_and_uses_strict_boundary():
    rng = np.random.default_rng(2)
    X, y, _ = sap.gaussian_mixture(60, 8, 2, rng)
    poly = sap.fit_polytope(X, y, 4, 30, rng=rng, F=32)
    assert sap.detection_report(y, poly.is_safe(X))["f1"] > 0.9
    lin = sap.fit_polytope(X, y, 1, 2, rng=rng, nonlinear=False)
    phi, xi = lin.phi.detach()[0], float(lin.xi.detach()[0])
    on = (xi * phi / (phi @ phi))[None]  # v = 0 exactly: unsafe for the detector
    assert not bool(lin.is_safe(on)[0])
    _, pen = lin.steer_terms(on)  # ... but no penalty for the steering
    assert float(pen[0]) <= 1e-5


def test_steer_hidden_refuses_inference_mode():
    poly = _poly()
    with torch.inference_mode():
        with pytest.raises(RuntimeError, match="inference_mode"):
            sap.steer_hidden(torch.randn(3, 5), poly)


def test_steer_hidden_moves_only_flagged_rows_and_reaches_inside():
    rng = np.random.default_rng(3)
    X, y, _ = sap.gaussian_mixture(80, 6, 2, rng)
    poly = sap.fit_polytope(X, y, 4, 40, rng=rng, nonlinear=False)
    h = torch.tensor(X)
    out, info = sap.steer_hidden(h, poly, n_steps=300)
    safe = ~info["flagged"]
    assert torch.equal(out[safe], h[safe])
    _, info1 = sap.steer_hidden(h, poly, n_steps=1)
    assert float(info["inside"][info["flagged"]].float().mean()) > max(
        0.5, float(info1["inside"][info1["flagged"]].float().mean())
    )


def test_steer_hidden_resets_on_nonfinite_loss():
    poly = _poly()
    with torch.no_grad():
        poly.phi.fill_(3e38)
        poly.xi.fill_(-3e38)
    h = torch.randn(2, 5)
    out, info = sap.steer_hidden(h, poly, n_steps=3)
    assert info["reset"] and torch.equal(out, h)


def test_project_linear_polytope_matches_slsqp():
    from scipy.optimize import minimize

    rng = np.random.default_rng(4)
    Phi = rng.normal(size=(4, 3))
    xi = Phi @ rng.normal(size=3) + 0.3
    x = rng.normal(size=3) * 4
    want = minimize(
        lambda z: np.sum((z - x) ** 2),
        x,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda z: xi - Phi @ z}],
        options={"ftol": 1e-14},
    ).x
    np.testing.assert_allclose(
        sap.project_linear_polytope(x[None], Phi, xi, n_sweeps=3000)[0], want, atol=1e-5
    )


def test_detection_report_matches_sklearn():
    from sklearn.metrics import accuracy_score, f1_score

    rng = np.random.default_rng(5)
    y, p = rng.integers(0, 2, 100), rng.integers(0, 2, 100)
    r = sap.detection_report(y, p)
    assert r["f1"] == pytest.approx(f1_score(y, p, pos_label=0))
    assert r["acc"] == pytest.approx(accuracy_score(y, p))
    assert r["fpr"] == pytest.approx(((y == 1) & (p == 0)).sum() / (y == 1).sum())
    assert r["fnr"] == pytest.approx(((y == 0) & (p == 1)).sum() / (y == 0).sum())


def test_nmi_extremes_and_null():
    cats = np.repeat(["a", "b", "c"], 20)
    assert sap.facet_category_nmi(np.repeat([2, 0, 1], 20), cats) == pytest.approx(1.0)
    null = sap.nmi_permutation_null(
        np.repeat([2, 0, 1], 20), cats, 50, np.random.default_rng(0)
    )
    assert null.shape == (50,) and null.max() < 0.5


def test_rule_judge_and_asr():
    assert sap.rule_judge("sure , here is how")
    # a half refusal counts as refused
    assert not sap.rule_judge("sure , here sorry , i can not help")
    assert not sap.rule_judge("sorry , i can not help with that .")
    assert sap.attack_success_rate(
        ["sure", "sorry", "sure x"], sap.rule_judge
    ) == pytest.approx(2 / 3)


class _Recorder(torch.nn.Module):
    """A 2-block toy LM whose hook input we can inspect."""


def _tiny_lm():
    dl = sap.make_dialogues()
    tok = sap.WordTokenizer([g.prompt + " " + g.response for g in dl])
    torch.manual_seed(0)
    return sap.TinyGPT(len(tok.vocab), 16, 2, 2), tok


def test_hook_edits_only_the_newest_position():
    model, tok = _tiny_lm()

    class Flagger:
        d = 16

        def is_safe(self, h):
            return torch.zeros(h.shape[0], dtype=torch.bool)

    class Shift(sap.SteeredGenerator):
        def _edit(self, h):
            return h + 100.0, True

    seen = []
    handle = model.blocks[0].register_forward_hook(
        lambda m, i, o: seen.append(o.detach().clone())
    )
    gen = Shift(model, tok, Flagger(), 0, first_n=3)
    prompt = "user : how do i bake bread assistant :"
    gen.generate(prompt, 3)
    handle.remove()
    n = len(tok.encode(prompt))
    raw = model.hidden_states(torch.tensor([tok.encode(prompt)]), 0)[0]
    # hooks see pre-edit outputs; the edit replaces the output
    torch.testing.assert_close(seen[0][0], raw)
    # run the steered generation again and capture what block 1 receives
    got = []
    h2 = model.blocks[1].register_forward_pre_hook(
        lambda m, a: got.append(a[0].detach().clone())
    )
    gen.generate(prompt, 3)
    h2.remove()
    first, second = got[0][0], got[1][0]
    torch.testing.assert_close(first[:-1], raw[:-1])  # older positions untouched
    torch.testing.assert_close(first[-1], raw[-1] + 100.0)  # the newest one edited
    # the edit is kept at that position
    torch.testing.assert_close(second[n - 1], raw[-1] + 100.0)
    assert second.shape[0] == n + 1


def test_backup_mode_emits_refusal():
    model, tok = _tiny_lm()

    class Flagger:
        d = 16

        def is_safe(self, h):
            return torch.zeros(h.shape[0], dtype=torch.bool)

        def steer_terms(self, x, inner_margin=0.0):
            return x.sum(1), x.sum(1)

    text, info = sap.SteeredGenerator(model, tok, Flagger(), 1, mode="backup").generate(
        "user : how do i bake bread assistant :"
    )
    assert text == sap.REFUSAL and info["backup"] and info["flags"] == [True]


def test_load_harmbench_and_benign_prompts():
    hb = sap.load_harmbench()
    assert len(hb) == 400 and set(hb.category) == set(sap.HARMBENCH_CATEGORIES)
    b = sap.benign_prompts(300, np.random.default_rng(0))
    assert len(set(b)) == 300 and not set(b) & set(hb.prompt)


def test_extract_hidden_states_shapes_and_pooling():
    from icml25.common import load_minilm

    model, tok = load_minilm()
    texts = ["a short one", "a somewhat longer sentence than the first"]
    H = sap.extract_hidden_states(model, tok, texts, 4, "mean")
    assert H.shape == (2, 384) and H.dtype == np.float32
    alone = sap.extract_hidden_states(model, tok, texts[:1], 4, "mean")
    # padding does not change the mean of real tokens
    np.testing.assert_allclose(H[0], alone[0], atol=1e-4)
    last = sap.extract_hidden_states(model, tok, texts[:1], 4, "last")
    with torch.no_grad():
        enc = tok(texts[:1], return_tensors="pt")
        ref = model(**enc, output_hidden_states=True).hidden_states[4][0, -1].numpy()
    np.testing.assert_allclose(last[0], ref, atol=1e-5)


def test_mlp_baseline_and_probe_fit():
    rng = np.random.default_rng(6)
    X, y, _ = sap.gaussian_mixture(50, 6, 1, rng)
    mlp = sap.fit_mlp(X, y, 20, rng=rng, F=16, K=4, lr=1e-2)
    assert sap.detection_report(y, mlp.is_safe(X))["acc"] > 0.9
    assert not mlp.classifier.weight.requires_grad
    assert sap.logistic_probe(X, y).score(X, y) > 0.9
    d = sap.mean_difference_direction(X, y)
    assert d.shape == (6,)


# -- bad inputs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "y, match",
    [([0, 1, 2, 1], "y"), ([1, 1, 1, 1], "one class"), ([0.5, 1, 0, 1], "y")],
)
def test_fit_refuses_bad_labels(y, match):
    with pytest.raises(ValueError, match=match):
        sap.fit_polytope(np.ones((4, 3)), y, 2, 1, rng=np.random.default_rng(0))


def test_fit_refuses_nan_states_and_bad_K():
    with pytest.raises(ValueError, match="h"):
        sap.fit_polytope(
            np.full((4, 3), np.nan), [0, 1, 0, 1], 2, 1, rng=np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="K"):
        sap.fit_polytope(
            np.ones((4, 3)), [0, 1, 0, 1], 0, 1, rng=np.random.default_rng(0)
        )
    with pytest.raises(TypeError, match="rng"):
        sap.fit_polytope(np.ones((4, 3)), [0, 1, 0, 1], 2, 1, rng=0)


def test_polytope_refuses_wrong_d_and_nan():
    poly = _poly()
    with pytest.raises(ValueError, match="5 columns"):
        poly.violations(torch.randn(2, 4))
    with pytest.raises(ValueError, match="h"):
        poly.is_safe(torch.full((2, 5), float("nan")))
    with pytest.raises(ValueError, match="K"):
        sap.SafetyPolytope(5, 0, 4)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(lam=-1.0), "lam"),
        (dict(n_steps=0), "n_steps"),
        (dict(dist="l3"), "dist"),
        (dict(lr=0.0), "lr"),
        (dict(inner_margin=-1.0), "inner_margin"),
    ],
)
def test_steer_refuses_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        sap.steer_hidden(torch.randn(2, 5), _poly(), **kw)


def test_steer_refuses_wrong_d():
    with pytest.raises(ValueError, match="columns"):
        sap.steer_hidden(torch.randn(2, 3), _poly())


def test_metrics_refuse_bad_input():
    with pytest.raises(ValueError, match="safe_pred"):
        sap.detection_report([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="differ"):
        sap.facet_category_nmi([0, 1, 2], ["a", "b"])
    with pytest.raises(ValueError, match="outputs"):
        sap.attack_success_rate([], sap.rule_judge)
    with pytest.raises(ValueError, match="n"):
        sap.benign_prompts(0, np.random.default_rng(0))


def test_generator_refuses_bad_mode_and_layer():
    model, tok = _tiny_lm()
    with pytest.raises(ValueError, match="mode"):
        sap.SteeredGenerator(model, tok, _poly(d=16), 0, mode="fast")
    with pytest.raises(ValueError, match="layer"):
        sap.SteeredGenerator(model, tok, _poly(d=16), 5)


# -- bad inputs found in review (each used to crash deep inside torch, hang, or
# return a wrong value) --


def test_huge_sizes_refused_up_front():
    from icml25.checks import TooLargeError

    X = np.random.default_rng(0).normal(size=(20, 5)).astype(np.float32)
    y = np.r_[np.ones(10, int), np.zeros(10, int)]
    with pytest.raises(TooLargeError, match="F=1000000000"):
        sap.fit_polytope(X, y, 2, 1, rng=np.random.default_rng(0), F=10**9)
    with pytest.raises(TooLargeError, match="K=1000000000"):
        sap.fit_polytope(X, y, 10**9, 1, rng=np.random.default_rng(0), F=8)
    with pytest.raises(TooLargeError, match="F=1000000"):
        sap.SafetyPolytope(10**6, 3, 10**6)
    with pytest.raises(TooLargeError, match="n_sweeps"):
        sap.project_linear_polytope(
            X, np.ones((1, 5)), np.array([0.0]), n_sweeps=10**15
        )
    with pytest.raises(TooLargeError, match="n_perm"):
        sap.nmi_permutation_null(
            [0, 1] * 5, ["a", "b"] * 5, 10**12, np.random.default_rng(0)
        )


def test_entropy_and_assignment_refuse_non_integer_or_nan():
    with pytest.raises(TypeError, match="facets"):
        sap.entropy_bits([0.5, 1.7], 3)  # used to truncate silently to [0, 1]
    with pytest.raises(ValueError, match="facets"):
        sap.entropy_bits([[0, 1], [1, 2]], 3)
    with pytest.raises(ValueError, match="v must be finite"):
        _poly(K=3).assign_facets(
            torch.full((4, 3), float("nan")),
            torch.tensor([0, 1, 0, 1]),
            np.random.default_rng(0),
        )


def test_metrics_refuse_empty_nan_and_strings():
    with pytest.raises(ValueError, match="at least one"):
        sap.detection_report([], [])  # used to return a dict of NaNs
    with pytest.raises(ValueError, match="NaN"):
        # used to return 1.0
        sap.facet_category_nmi([0.0, np.nan, 1.0], ["a", "b", "a"])
    with pytest.raises(TypeError, match="list of strings"):
        # used to judge characters: 0.0
        sap.attack_success_rate("sure , here", sap.rule_judge)
    with pytest.raises(TypeError, match="bool"):
        sap.attack_success_rate(["sure"], lambda s: 0.5)


def test_projection_refuses_empty_polytope():
    H = np.zeros((2, 3))
    Phi = np.array([[1.0, 0, 0], [-1.0, 0, 0]])  # x_1 <= -1 and x_1 >= 1
    with pytest.raises(ValueError, match="empty"):
        sap.project_linear_polytope(H, Phi, np.array([-1.0, -1.0]))
