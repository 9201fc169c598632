"""Unit tests of icml25.vmf_exploration (chapter 02, vMF-exp, Bendada et al., ICML 2025).

Statistical tests use fixed seeds and a level of 1e-3 (two-sided), so each fails by chance
with probability ~1e-3 for a correct implementation and with near certainty for a wrong one at
the sample sizes used.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, special, stats

from icml25 import vmf_exploration as vm
from icml25.checks import TooLargeError
from icml25.kernels import mips

LEVEL = 1e-3


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _e1(d: int) -> np.ndarray:
    e = np.zeros(d)
    e[0] = 1.0
    return e


# --------------------------------------------------------------------------------------
# sample_vmf
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [3, 32])
@pytest.mark.parametrize("kappa", [0.5, 10.0, 200.0])
def test_sample_vmf_matches_scipy(d: int, kappa: float) -> None:
    rng = _rng(d * 1000 + int(kappa))
    mu = rng.standard_normal(d)
    mu /= np.linalg.norm(mu)
    ours = vm.sample_vmf(mu, kappa, 4000, rng) @ mu
    ref = stats.vonmises_fisher(mu, kappa).rvs(4000, random_state=rng) @ mu
    assert stats.ks_2samp(ours, ref).pvalue > LEVEL


@pytest.mark.parametrize("sign", [1.0, -1.0, 0.0])
def test_sample_vmf_matches_scipy_at_the_benchmark_setting(sign: float) -> None:
    # d = 32, kappa = 10 (benchmarks/vmf_exploration.py): the cosine to mu and the
    # coordinate along a fixed direction orthogonal to mu against
    # scipy.stats.vonmises_fisher, KS at 20,000 draws; mu with a positive, negative and
    # zero first coordinate (each side of the reflection)
    d, kappa, size = 32, 10.0, 20_000
    rng = _rng(32_010 + int(sign))
    mu = rng.standard_normal(d)
    mu[0] = sign * (abs(mu[0]) + 0.5)
    mu /= np.linalg.norm(mu)
    e = rng.standard_normal(d)
    e -= (e @ mu) * mu
    e /= np.linalg.norm(e)
    ours = vm.sample_vmf(mu, kappa, size, rng)
    ref = stats.vonmises_fisher(mu, kappa).rvs(size, random_state=rng)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-12)
    assert stats.ks_2samp(ours @ mu, ref @ mu).pvalue > LEVEL
    assert stats.ks_2samp(ours @ e, ref @ e).pvalue > LEVEL


def test_sample_vmf_mean_matches_mean_resultant_length() -> None:
    d, kappa, size = 32, 10.0, 100_000
    x = vm.sample_vmf(_e1(d), kappa, size, _rng(1))
    cos = x[:, 0]
    a = vm.mean_resultant_length(d, kappa)
    assert abs(cos.mean() - a) < 4.0 * cos.std() / math.sqrt(size)
    # the mean direction of the other coordinates is 0
    assert np.all(np.abs(x[:, 1:].mean(axis=0)) < 4.0 / math.sqrt(size))


def test_sample_vmf_unit_norm() -> None:
    for d, kappa in [(2, 0.0), (3, 1.0), (64, 50.0), (5, 1e7)]:
        x = vm.sample_vmf(np.arange(1.0, d + 1.0), kappa, 500, _rng(2))
        assert x.shape == (500, d) and x.dtype == np.float64
        np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-12)


def test_sample_vmf_kappa_zero_is_uniform() -> None:
    d, size = 5, 40_000
    x = vm.sample_vmf(_e1(d), 0.0, size, _rng(3))
    assert np.all(np.abs(x.mean(axis=0)) < 4.0 / math.sqrt(size))
    # E[x_1^2] = 1/d for the uniform distribution; Var(x_1^2) <= 1
    assert abs((x[:, 0] ** 2).mean() - 1.0 / d) < 4.0 / math.sqrt(size)
    # (x_1 + 1)/2 ~ Beta((d-1)/2, (d-1)/2) under the uniform distribution
    a = 0.5 * (d - 1)
    assert stats.kstest((x[:, 0] + 1.0) / 2.0, stats.beta(a, a).cdf).pvalue > LEVEL


def test_sample_vmf_large_kappa_is_stable() -> None:
    d, kappa = 3, 1e8
    x = vm.sample_vmf(_e1(d), kappa, 20_000, _rng(4))
    assert np.all(np.isfinite(x))
    # 1 - <x, mu> ~ Gamma((d-1)/2, 1/kappa) as kappa -> inf (mean (d-1)/(2 kappa))
    one_minus_t = 1.0 - x[:, 0]
    assert abs(one_minus_t.mean() * kappa - 0.5 * (d - 1)) < 0.05


def test_sample_vmf_batched_mu_one_per_row() -> None:
    d, B = 4, 3000
    rng = _rng(5)
    mus = rng.standard_normal((B, d))
    mus /= np.linalg.norm(mus, axis=1, keepdims=True)
    x = vm.sample_vmf(mus, 3.0, B, rng)
    cos_rows = np.sum(x * mus, axis=1)
    cos_single = vm.sample_vmf(_e1(d), 3.0, B, rng)[:, 0]
    assert stats.ks_2samp(cos_rows, cos_single).pvalue > LEVEL
    # each row is concentrated around its own mu: far more than around a shuffled mu
    assert cos_rows.mean() > np.sum(x * mus[::-1], axis=1).mean() + 0.3


def test_sample_vmf_normalises_mu() -> None:
    a = vm.sample_vmf(np.array([3.0, 4.0, 0.0]), 2.0, 10, _rng(6))
    b = vm.sample_vmf(np.array([0.6, 0.8, 0.0]), 2.0, 10, _rng(6))
    np.testing.assert_allclose(a, b, atol=1e-14)


# --------------------------------------------------------------------------------------
# Normaliser, density, mean resultant length
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "d,kappa", [(2, 0.3), (3, 1.0), (10, 25.0), (32, 10.0), (100, 500.0)]
)
def test_vmf_logpdf_matches_scipy(d: int, kappa: float) -> None:
    rng = _rng(7)
    mu = rng.standard_normal(d)
    x = stats.vonmises_fisher(mu / np.linalg.norm(mu), kappa).rvs(20, random_state=rng)
    ref = stats.vonmises_fisher(mu / np.linalg.norm(mu), kappa).logpdf(x)
    np.testing.assert_allclose(vm.vmf_logpdf(x, mu, kappa), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("d,kappa", [(3, 4.0), (5, 0.0), (6, 30.0)])
def test_vmf_logpdf_integrates_to_one(d: int, kappa: float) -> None:
    # integral over S^{d-1} = |S^{d-2}| * int_{-1}^{1} f(t) (1 - t^2)^{(d-3)/2} dt
    mu = _e1(d)

    def density(t: float) -> float:
        x = np.zeros(d)
        x[0], x[1] = t, math.sqrt(max(0.0, 1.0 - t * t))
        return math.exp(vm.vmf_logpdf(x, mu, kappa)) * (1.0 - t * t) ** ((d - 3) / 2)

    total = vm.sphere_area(d - 1) * integrate.quad(density, -1.0, 1.0, limit=200)[0]
    assert abs(total - 1.0) < 1e-7


def test_vmf_logpdf_finite_for_large_kappa_and_d() -> None:
    d, kappa = 1000, 1e4
    mu = _e1(d)
    x = vm.sample_vmf(mu, kappa, 5, _rng(8))
    got = vm.vmf_logpdf(x, mu, kappa)
    assert np.all(np.isfinite(got))
    ref = stats.vonmises_fisher(mu, kappa).logpdf(x)
    np.testing.assert_allclose(got, ref, rtol=1e-9)


@pytest.mark.parametrize(
    "d,kappa", [(1000, 1.0), (1000, 50.0), (400, 0.01), (120, 1e-6), (2000, 300.0)]
)
def test_vmf_log_normalizer_matches_mpmath_where_ive_underflows(
    d: int, kappa: float
) -> None:
    nu = d / 2 - 1
    ref = (
        nu * mpmath.log(kappa)
        - (d / 2) * mpmath.log(2 * mpmath.pi)
        - mpmath.log(mpmath.besseli(nu, kappa))
    )
    got = vm.vmf_log_normalizer(d, kappa)
    assert math.isfinite(got)
    assert abs(got - float(ref)) < 1e-8 * max(1.0, abs(float(ref)))


def test_vmf_log_normalizer_kappa_zero_is_uniform() -> None:
    for d in (2, 3, 7, 300):
        uniform = -math.log(vm.sphere_area(d))
        assert vm.vmf_log_normalizer(d, 0.0) == pytest.approx(uniform, rel=1e-12)
        assert vm.vmf_log_normalizer(d, 1e-9) == pytest.approx(uniform, rel=1e-8)
    np.testing.assert_allclose(
        vm.vmf_log_normalizer(3, np.array([0.0, 1.0])),
        [vm.vmf_log_normalizer(3, 0.0), vm.vmf_log_normalizer(3, 1.0)],
    )


def test_mean_resultant_length_matches_exercise_value() -> None:
    assert round(vm.mean_resultant_length(32, 10.0), 4) == 0.2879
    # independent reference: mpmath Bessel ratio
    for d, kappa in [(3, 0.5), (32, 10.0), (1000, 2.0), (10, 1e5)]:
        ref = mpmath.besseli(d / 2, kappa) / mpmath.besseli(d / 2 - 1, kappa)
        assert vm.mean_resultant_length(d, kappa) == pytest.approx(float(ref), rel=1e-9)
    assert vm.mean_resultant_length(5, 0.0) == 0.0
    vals = vm.mean_resultant_length(8, np.array([0.0, 1.0, 10.0, 1e3, 1e6]))
    assert np.all(np.diff(vals) > 0) and vals[-1] < 1.0 and vals[-1] > 0.999


# --------------------------------------------------------------------------------------
# Sphere helpers
# --------------------------------------------------------------------------------------


def test_uniform_sphere_unit_rows_and_zero_mean() -> None:
    x = vm.uniform_sphere(20_000, 6, _rng(9))
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-12)
    assert np.all(np.abs(x.mean(axis=0)) < 4.0 / math.sqrt(20_000))
    assert vm.uniform_sphere(3, 4, _rng(9), dtype=np.float32).dtype == np.float32


def test_sample_with_similarity_exact_alpha() -> None:
    rng = _rng(10)
    V = rng.standard_normal((50, 7)) * 3.0
    for alpha in (-1.0, -0.3, 0.0, 0.5, 1.0):
        A = vm.sample_with_similarity(V, alpha, rng)
        np.testing.assert_allclose(np.linalg.norm(A, axis=1), 1.0, atol=1e-12)
        cos = np.sum(A * V, axis=1) / np.linalg.norm(V, axis=1)
        np.testing.assert_allclose(cos, alpha, atol=1e-12)
    one = vm.sample_with_similarity(V[0], 0.25, rng)
    assert one.shape == (7,) and abs(one @ V[0] / np.linalg.norm(V[0]) - 0.25) < 1e-12


# --------------------------------------------------------------------------------------
# Boltzmann exploration and baselines
# --------------------------------------------------------------------------------------


def test_action_probs_boltzmann_is_stable_softmax() -> None:
    rng = _rng(11)
    X = vm.uniform_sphere(30, 5, rng)
    V = rng.standard_normal(5)
    for kappa in (0.0, 2.0, 1e4):
        p = vm.action_probs_boltzmann(V, X, kappa)
        ref = special.softmax(kappa * X @ (V / np.linalg.norm(V)))
        assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(p, ref, rtol=1e-10, atol=1e-300)
    assert vm.action_probs_boltzmann(np.stack([V, -V]), X, 1.0).shape == (2, 30)


def test_boltzmann_sample_matches_softmax_chisquare() -> None:
    rng = _rng(12)
    X = vm.uniform_sphere(12, 4, rng)
    V = vm.uniform_sphere(1, 4, rng)[0]
    p = vm.action_probs_boltzmann(V, X, 3.0)
    idx = vm.boltzmann_sample(np.broadcast_to(V, (40_000, 4)), X, 3.0, rng)
    assert idx.dtype == np.int64 and idx.shape == (40_000,)
    obs = np.bincount(idx, minlength=12)
    assert stats.chisquare(obs, p * obs.sum()).pvalue > LEVEL
    assert isinstance(vm.boltzmann_sample(V, X, 3.0, rng), np.integer)


def test_truncated_boltzmann_sample_zero_mass_outside_top_m() -> None:
    rng = _rng(13)
    n, m, kappa = 40, 5, 2.0
    X = vm.uniform_sphere(n, 3, rng)
    V = vm.uniform_sphere(1, 3, rng)[0]
    top = set(np.argsort(-(X @ V))[:m].tolist())
    idx = vm.truncated_boltzmann_sample(
        np.broadcast_to(V, (20_000, 3)), X, kappa, m, rng
    )
    assert set(np.unique(idx).tolist()) <= top
    p = vm.action_probs_truncated_boltzmann(V, X, kappa, m)
    assert np.count_nonzero(p) == m and set(np.flatnonzero(p).tolist()) == top
    obs = np.bincount(idx, minlength=n)[sorted(top)]
    assert stats.chisquare(obs, p[sorted(top)] * obs.sum()).pvalue > LEVEL
    # with the HNSW index the same support
    ex = vm.VMFExplorer(X, kappa, index="faiss-hnsw")
    idx2 = vm.truncated_boltzmann_sample(
        np.broadcast_to(V, (200, 3)), X, kappa, m, rng, index=ex
    )
    assert set(np.unique(idx2).tolist()) <= top


def test_epsilon_greedy_and_random_explore_frequencies() -> None:
    rng = _rng(14)
    X = vm.uniform_sphere(10, 3, rng)
    V = X[4] + 0.01
    idx = vm.epsilon_greedy(np.broadcast_to(V, (20_000, 3)), X, 0.2, rng)
    greedy = int(np.argmax(X @ V))
    # P(greedy) = 0.8 + 0.2/10
    assert abs(np.mean(idx == greedy) - 0.82) < 4.0 * math.sqrt(0.82 * 0.18 / 20_000)
    r = vm.random_explore(10, 20_000, rng)
    assert stats.chisquare(np.bincount(r, minlength=10)).pvalue > LEVEL


# --------------------------------------------------------------------------------------
# VMFExplorer and Voronoi masses
# --------------------------------------------------------------------------------------


def test_vmf_explorer_exact_equals_bruteforce_argmax() -> None:
    rng = _rng(15)
    X = vm.uniform_sphere(3000, 8, rng) * 2.5  # non-unit rows are normalised
    V = rng.standard_normal((257, 8))
    ex = vm.VMFExplorer(X, 7.0)
    got = ex.act(V, _rng(99))
    Vt = vm.sample_vmf(V, 7.0, 257, _rng(99))  # the documented random stream of act
    np.testing.assert_array_equal(got, np.argmax(Vt @ X.T, axis=1))
    np.testing.assert_array_equal(ex.greedy(V), np.argmax(V @ X.T, axis=1))
    assert ex.recall(V) == 1.0


def test_vmf_explorer_hnsw_recall_at_least_0_9() -> None:
    import faiss

    faiss.omp_set_num_threads(1)
    rng = _rng(16)
    X = vm.uniform_sphere(5000, 16, rng)
    ex = vm.VMFExplorer(X, 10.0, index="faiss-hnsw")
    queries = vm.sample_vmf(vm.uniform_sphere(500, 16, rng), 10.0, 500, rng)
    assert ex.recall(queries, k=1) >= 0.9
    acts = ex.act(vm.uniform_sphere(100, 16, rng), rng)
    assert (
        acts.shape == (100,)
        and acts.dtype == np.int64
        and acts.min() >= 0
        and acts.max() < 5000
    )


def test_action_probs_vmf_mc_equal_cells_at_kappa_zero() -> None:
    # cross-polytope {+-e_i}: 2d congruent Voronoi cells, each with mass
    # 1/(2d) under any uniform V~
    d = 4
    X = np.concatenate([np.eye(d), -np.eye(d)])
    p = vm.action_probs_vmf_mc(_e1(d), X, 0.0, 40_000, _rng(17))
    assert p.sum() == pytest.approx(1.0)
    assert stats.chisquare(p * 40_000).pvalue > LEVEL


def test_action_probs_vmf_mc_concentrates_on_nearest_for_large_kappa() -> None:
    X = vm.uniform_sphere(50, 3, _rng(18))
    V = X[7] + 0.05 * X[3]
    p = vm.action_probs_vmf_mc(V, X, 1e5, 2000, _rng(19))
    assert p[int(np.argmax(X @ V))] == 1.0


# --------------------------------------------------------------------------------------
# Closed forms and the Monte Carlo curve
# --------------------------------------------------------------------------------------


def test_p0_matches_hand_value() -> None:
    # P0 = e^{kappa alpha} (kappa/2)^{d/2-1} / (Gamma(d/2) I_{d/2-1}(kappa) n); d=4:
    # e^{0.5} * 0.5 / I_1(1) / 1000
    exact = math.exp(0.5) * 0.5 / special.iv(1, 1.0) / 1000
    assert vm.p0(0.5, 4, 1.0, 1000) == pytest.approx(exact, rel=1e-12)
    assert vm.p0(0.5, 4, 1.0, 1000) == pytest.approx(1.459e-3, rel=1e-3)
    n = np.array([1, 10, 1000])
    np.testing.assert_allclose(vm.p0(0.5, 4, 1.0, n) * n, exact * 1000, rtol=1e-12)


def test_p0_is_uniform_at_kappa_zero_and_finite_for_large_kappa() -> None:
    assert vm.p0(0.3, 7, 0.0, 250) == pytest.approx(1 / 250, rel=1e-12)
    # kappa = 1000, d = 64: I_31(1000) overflows a double, P0 does not
    d, kappa, alpha, n = 64, 1000.0, 0.95, 1e6
    nu = d / 2 - 1
    ref = (
        mpmath.e ** (kappa * alpha)
        * (kappa / 2) ** nu
        / (mpmath.gamma(d / 2) * mpmath.besseli(nu, kappa) * n)
    )
    assert vm.p0(alpha, d, kappa, n) == pytest.approx(float(ref), rel=1e-9)


def test_p1_correction_sign_and_alpha_zero() -> None:
    assert vm.p1(0.0, 32, 5.0, 5000) == pytest.approx(
        vm.p0(0.0, 32, 5.0, 5000), rel=1e-12
    )
    assert vm.p1(0.6, 32, 5.0, 5000) < vm.p0(0.6, 32, 5.0, 5000)
    assert vm.p1(-0.2, 32, 5.0, 5000) > vm.p0(-0.2, 32, 5.0, 5000)
    # the correction vanishes like n^{-2/(d-1)}
    n = np.array([1e3, 1e6, 1e9])
    rel = 1 - vm.p1(0.5, 4, 1.0, n) / vm.p0(0.5, 4, 1.0, n)
    np.testing.assert_allclose(
        rel[1:] / rel[:-1], (n[1:] / n[:-1]) ** (-2 / 3), rtol=1e-6
    )


def test_mc_prob_curve_agrees_with_p0_at_d4() -> None:
    d, kappa, alpha, n_max = 4, 1.0, 0.5, 2000
    n = np.array([500, 1000, 2000])
    theory = vm.p0(alpha, d, kappa, n)
    curve, err = vm.mc_prob_curve(
        d, kappa, alpha, n_max, 400_000, _rng(22), "both", return_stderr=True
    )
    assert curve.shape == (2, n_max) and curve[0, 0] == 1.0 and curve[1, 0] == 1.0
    # nested sets: A's chance can only shrink
    assert np.all(np.diff(curve, axis=1) <= 0)
    vmf, boltz = curve[:, n - 1]
    # within 4 standard errors (the vMF MC error at n = 1000 is ~4% relative here)
    assert np.all(np.abs(vmf - theory) < 4 * err[0, n - 1])
    assert np.all(np.abs(boltz - theory) < 4 * err[1, n - 1] + 0.005 * theory)
    assert np.all(np.abs(boltz / theory - 1) < 0.02)


def test_mc_prob_curve_kappa_zero_gives_one_over_n() -> None:
    # with kappa = 0 all actions are exchangeable: P(A) = 1/n exactly
    curve = vm.mc_prob_curve(3, 0.0, 0.3, 50, 20_000, _rng(23), samples_per_trial=50)
    n = np.arange(1, 51)
    se = np.sqrt((1 / n) * (1 - 1 / n) / 20_000)
    assert np.all(np.abs(curve - 1 / n) < 5 * se + 1e-12)
    boltz = vm.mc_prob_curve(
        3, 0.0, 0.3, 50, 10, _rng(23), "boltzmann", samples_per_trial=5
    )
    np.testing.assert_allclose(boltz, 1 / n, rtol=1e-12)


def test_mc_prob_curve_vmf_below_boltzmann_at_d32_positive_alpha() -> None:
    # P1's sign at d = 32: vMF-exp gives close actions (alpha > 0) less mass than B-exp
    curve, err = vm.mc_prob_curve(
        32,
        5.0,
        0.6,
        1000,
        60_000,
        _rng(24),
        "both",
        samples_per_trial=1000,
        return_stderr=True,
    )
    gap = curve[1, -1] - curve[0, -1]
    assert gap > 4 * math.hypot(err[0, -1], err[1, -1])


# --------------------------------------------------------------------------------------
# Bad inputs: every error the docstrings name
# --------------------------------------------------------------------------------------

_X = np.eye(3)
_V = np.array([1.0, 0.0, 0.0])
_R = np.random.default_rng(0)

BAD_INPUTS = [
    ("d", lambda: vm.sample_vmf(np.array([1.0]), 1.0, 5, _R), ValueError),
    ("kappa", lambda: vm.sample_vmf(_V, -1.0, 5, _R), ValueError),
    ("kappa", lambda: vm.sample_vmf(_V, float("nan"), 5, _R), ValueError),
    ("kappa", lambda: vm.sample_vmf(_V, float("inf"), 5, _R), ValueError),
    ("kappa", lambda: vm.sample_vmf(_V, "1", 5, _R), TypeError),
    ("mu", lambda: vm.sample_vmf(np.zeros(3), 1.0, 5, _R), ValueError),
    ("mu", lambda: vm.sample_vmf(np.array([1.0, np.nan, 0.0]), 1.0, 5, _R), ValueError),
    ("mu", lambda: vm.sample_vmf(np.ones((2, 2, 3)), 1.0, 5, _R), ValueError),
    ("size", lambda: vm.sample_vmf(np.ones((4, 3)), 1.0, 5, _R), ValueError),
    ("size", lambda: vm.sample_vmf(_V, 1.0, -1, _R), ValueError),
    ("size", lambda: vm.sample_vmf(_V, 1.0, 2.5, _R), TypeError),
    ("rng", lambda: vm.sample_vmf(_V, 1.0, 5, 0), TypeError),
    ("rng", lambda: vm.sample_vmf(_V, 1.0, 5, np.random.RandomState(0)), TypeError),
    ("d", lambda: vm.vmf_log_normalizer(1, 1.0), ValueError),
    ("kappa", lambda: vm.vmf_log_normalizer(3, -0.1), ValueError),
    ("kappa", lambda: vm.vmf_log_normalizer(3, np.array([1.0, -1.0])), ValueError),
    ("x", lambda: vm.vmf_logpdf(np.ones(4) / 2, _V, 1.0), ValueError),
    ("x", lambda: vm.vmf_logpdf(np.ones(3), _V, 1.0), ValueError),
    ("mu", lambda: vm.vmf_logpdf(_V, np.zeros(3), 1.0), ValueError),
    ("kappa", lambda: vm.mean_resultant_length(3, -2.0), ValueError),
    ("d", lambda: vm.mean_resultant_length(1, 2.0), ValueError),
    ("d", lambda: vm.uniform_sphere(5, 1, _R), ValueError),
    ("n", lambda: vm.uniform_sphere(-1, 3, _R), ValueError),
    ("dtype", lambda: vm.uniform_sphere(2, 3, _R, dtype=np.int32), ValueError),
    ("alpha", lambda: vm.sample_with_similarity(_V, 1.5, _R), ValueError),
    ("alpha", lambda: vm.sample_with_similarity(_V, np.nan, _R), ValueError),
    ("V", lambda: vm.sample_with_similarity(np.zeros(3), 0.5, _R), ValueError),
    ("kappa", lambda: vm.action_probs_boltzmann(_V, _X, -1.0), ValueError),
    ("dimension", lambda: vm.action_probs_boltzmann(np.ones(4), _X, 1.0), ValueError),
    ("X", lambda: vm.action_probs_boltzmann(_V, np.ones(3), 1.0), ValueError),
    (
        "X",
        lambda: vm.boltzmann_sample(_V, np.array([[1.0, np.inf, 0.0]]), 1.0, _R),
        ValueError,
    ),
    ("rng", lambda: vm.boltzmann_sample(_V, _X, 1.0, None), TypeError),
    ("m", lambda: vm.truncated_boltzmann_sample(_V, _X, 1.0, 0, _R), ValueError),
    ("m", lambda: vm.truncated_boltzmann_sample(_V, _X, 1.0, 4, _R), ValueError),
    ("m", lambda: vm.truncated_boltzmann_sample(_V, _X, 1.0, 1.5, _R), TypeError),
    ("m", lambda: vm.action_probs_truncated_boltzmann(_V, _X, 1.0, 9), ValueError),
    (
        "index",
        lambda: vm.truncated_boltzmann_sample(_V, _X, 1.0, 2, _R, index="hnsw"),
        TypeError,
    ),
    ("epsilon", lambda: vm.epsilon_greedy(_V, _X, 1.5, _R), ValueError),
    ("n", lambda: vm.random_explore(0, 3, _R), ValueError),
    ("index", lambda: vm.VMFExplorer(_X, 1.0, index="ivf"), ValueError),
    ("actions", lambda: vm.VMFExplorer(np.array([[0.0, 0.0, 0.0]]), 1.0), ValueError),
    ("actions", lambda: vm.VMFExplorer(np.ones(3), 1.0), ValueError),
    ("kappa", lambda: vm.VMFExplorer(_X, -3.0), ValueError),
    ("M", lambda: vm.VMFExplorer(_X, 1.0, index="faiss-hnsw", M=0), ValueError),
    ("dimension", lambda: vm.VMFExplorer(_X, 1.0).act(np.ones(5), _R), ValueError),
    ("rng", lambda: vm.VMFExplorer(_X, 1.0).act(_V, 3), TypeError),
    ("n_samples", lambda: vm.action_probs_vmf_mc(_V, _X, 1.0, 0, _R), ValueError),
    ("d", lambda: vm.mc_prob_curve(1, 1.0, 0.5, 10, 10, _R), ValueError),
    ("kappa", lambda: vm.mc_prob_curve(3, -1.0, 0.5, 10, 10, _R), ValueError),
    ("alpha", lambda: vm.mc_prob_curve(3, 1.0, -1.5, 10, 10, _R), ValueError),
    (
        "alpha",
        lambda: vm.mc_prob_curve(3, 1.0, np.array([0.1, 0.2]), 10, 10, _R),
        ValueError,
    ),
    (
        "return_stderr",
        lambda: vm.mc_prob_curve(3, 1.0, 0.5, 10, 10, _R, return_stderr=1),
        TypeError,
    ),
    ("n_max", lambda: vm.mc_prob_curve(3, 1.0, 0.5, 0, 10, _R), ValueError),
    ("n_samples", lambda: vm.mc_prob_curve(3, 1.0, 0.5, 10, 0, _R), ValueError),
    (
        "sampler",
        lambda: vm.mc_prob_curve(3, 1.0, 0.5, 10, 10, _R, sampler="gumbel"),
        ValueError,
    ),
    (
        "samples_per_trial",
        lambda: vm.mc_prob_curve(3, 1.0, 0.5, 10, 10, _R, samples_per_trial=0),
        ValueError,
    ),
    ("rng", lambda: vm.mc_prob_curve(3, 1.0, 0.5, 10, 10, 42), TypeError),
    ("alpha", lambda: vm.p0(1.01, 3, 1.0, 10), ValueError),
    ("d", lambda: vm.p0(0.5, 1, 1.0, 10), ValueError),
    ("kappa", lambda: vm.p1(0.5, 3, -1.0, 10), ValueError),
    ("n", lambda: vm.p1(0.5, 3, 1.0, 0), ValueError),
]


@pytest.mark.parametrize(
    "name,call,exc", BAD_INPUTS, ids=[f"{i}-{b[0]}" for i, b in enumerate(BAD_INPUTS)]
)
def test_bad_inputs_raise_naming_the_argument(name: str, call, exc: type) -> None:
    with pytest.raises(exc, match=name):
        call()


class _FakeDevice:
    """Stands in for a CuPy array: the dispatchers call ``.get()`` on what the launchers return."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def get(self) -> np.ndarray:
        return self.a


def _host_or_device(x: "mips.ActionTable") -> np.ndarray:
    return x.values if x.values is not None else x._on_device()


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dispatchers of kernels/mips take their GPU branch; the launchers run the references, and
    NumPy stands in for CuPy where kernels/mips.py uses CuPy's array API (the action sets)."""
    import sys
    import types

    m = mips
    monkeypatch.setattr(m, "gpu_available", lambda: True)
    monkeypatch.setitem(
        sys.modules, "cupy", types.SimpleNamespace(**vars(np), asnumpy=np.asarray)
    )
    monkeypatch.setattr(
        m,
        "_mips_argmax_device",
        lambda q, x: tuple(
            _FakeDevice(a)
            for a in m._mips_argmax(q.astype(np.float32), x.values.astype(np.float32))
        ),
    )
    monkeypatch.setattr(
        m,
        "_gumbel_max_device",
        lambda q, x, k, s, o: _FakeDevice(
            m._gumbel_max(q.astype(np.float32), x.values.astype(np.float32), k, s, o)
        ),
    )
    monkeypatch.setattr(
        m,
        "_first_beater_device",
        lambda q, x, t: _FakeDevice(
            m._first_beater(
                q.astype(np.float32),
                _host_or_device(x).astype(np.float32),
                t.astype(np.float32),
            )
        ),
    )


def test_lib_gets_numpy_from_the_gpu_branch_of_the_dispatchers(fake_gpu: None) -> None:
    """With the dispatchers on their GPU branch, lib still sees NumPy only and keeps its results'
    distribution (the device decision lives in kernels/mips.py, not in lib)."""
    d, kappa, alpha, n_max = 4, 1.0, 0.5, 1000
    curve, err = vm.mc_prob_curve(
        d,
        kappa,
        alpha,
        n_max,
        100_000,
        _rng(25),
        "both",
        samples_per_trial=500,
        return_stderr=True,
    )
    assert (
        isinstance(curve, np.ndarray)
        and curve.shape == (2, n_max)
        and np.all(curve[:, 0] == 1.0)
    )
    theory = vm.p0(alpha, d, kappa, n_max)
    assert abs(curve[0, -1] - theory) < 4 * err[0, -1]
    assert abs(curve[1, -1] / theory - 1) < 0.03
    b = vm.mc_prob_curve(
        d,
        kappa,
        alpha,
        n_max,
        100,
        _rng(26),
        "boltzmann",
        samples_per_trial=1,
        trial_batch=7,
    )
    assert abs(b[-1] / theory - 1) < 0.03
    rng = _rng(27)
    X = vm.uniform_sphere(12, 4, rng)
    V = vm.uniform_sphere(1, 4, rng)[0]
    p = vm.action_probs_boltzmann(V, X, 3.0)
    draws = vm.boltzmann_sample(np.broadcast_to(V, (20_000, 4)), X, 3.0, rng)
    assert isinstance(draws, np.ndarray) and draws.dtype == np.int64
    assert (
        stats.chisquare(np.bincount(draws, minlength=12), p * len(draws)).pvalue > LEVEL
    )
    ex = vm.VMFExplorer(X, 2.0)
    Q = rng.standard_normal((50, 4))
    np.testing.assert_array_equal(
        ex.act(Q, _rng(5)), np.argmax(vm.sample_vmf(Q, 2.0, 50, _rng(5)) @ X.T, axis=1)
    )


# --------------------------------------------------------------------------------------
# Sizes that cannot fit are refused before any work (issue 13)
# --------------------------------------------------------------------------------------


def test_action_probs_vmf_mc_refuses_unbounded_work() -> None:
    """n_samples = 10^12 used to start a loop of 10^12 vMF draws; now refused with the estimate."""
    with pytest.raises(
        TooLargeError,
        match=r"action_probs_vmf_mc\(n_samples=1000000000000\).*operations",
    ):
        vm.action_probs_vmf_mc(_V, _X, 1.0, 10**12, _R)
    # a size that fits still runs
    assert vm.action_probs_vmf_mc(_V, _X, 1.0, 10, _rng(1)).sum() == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, what",
    [
        (
            lambda: vm.mc_prob_curve(32, 1.0, 0.5, 10**12, 10, _R),
            r"mc_prob_curve\(n_max=1000000000000.*GiB",
        ),
        (
            lambda: vm.mc_prob_curve(4, 1.0, 0.5, 100, 10**15, _R),
            r"mc_prob_curve\(.*n_samples=10{15}.*operations",
        ),
        (
            lambda: vm.uniform_sphere(10**12, 32, _R),
            r"uniform_sphere\(n=1000000000000.*GiB",
        ),
        (
            lambda: vm.sample_vmf(_V, 1.0, 10**12, _R),
            r"sample_vmf\(size=1000000000000\).*GiB",
        ),
        (
            lambda: vm.random_explore(10, 10**13, _R),
            r"random_explore\(size=10{13}\).*GiB",
        ),
    ],
)
def test_other_sizes_that_cannot_fit_are_refused(call, what: str) -> None:
    with pytest.raises(TooLargeError, match=what):
        call()


# --------------------------------------------------------------------------------------
# issue 13, second round: huge kappa, the _checks module, the notebook's import form
# --------------------------------------------------------------------------------------
def _log_normalizer_mp(d: int, kappa: float) -> float:
    with mpmath.workdps(40):
        nu, k = mpmath.mpf(d) / 2 - 1, mpmath.mpf(kappa)
        return float(
            nu * mpmath.log(k)
            - mpmath.mpf(d) / 2 * mpmath.log(2 * mpmath.pi)
            - mpmath.log(mpmath.besseli(nu, k))
        )


@pytest.mark.parametrize("d", [2, 3, 4, 10, 101, 1000])
@pytest.mark.parametrize("kappa", [1e3, 1e5, 1e9, 2e10, 1e20, 1e100, 1e300, 1.7e308])
def test_vmf_log_normalizer_is_finite_and_exact_for_huge_kappa(
    d: int, kappa: float
) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow / invalid-value warnings either
        got = vm.vmf_log_normalizer(d, kappa)
        arr = vm.vmf_log_normalizer(d, np.array([kappa, 1.0]))
    ref = _log_normalizer_mp(d, kappa)
    assert math.isfinite(got) and got == pytest.approx(ref, rel=1e-14, abs=1e-9)
    assert arr[0] == got


@pytest.mark.parametrize("nu", [0.0, 0.5, 1.0, 4.0, 30.0])
@pytest.mark.parametrize("x", [1e3, 1e4, 3e4])
def test_hankel_expansion_keeps_its_correction_terms(nu: float, x: float) -> None:
    # x >= max(nu^2, 50): log I_nu(x) to ~1e-13 absolute, where the
    # 1/x terms are still visible
    from icml25.vmf_exploration.method import _hankel_log_iv

    with mpmath.workdps(40):
        ref = float(mpmath.log(mpmath.besseli(nu, x)))
    assert float(_hankel_log_iv(nu, np.array([x]))[0]) == pytest.approx(
        ref, rel=1e-15, abs=1e-11
    )


def test_paper_specific_validators_live_in_checks_module() -> None:
    import importlib
    import importlib.util

    assert importlib.util.find_spec("icml25.vmf_exploration._checks") is not None
    assert importlib.util.find_spec("icml25.vmf_exploration._validate") is None
    checks = importlib.import_module("icml25.vmf_exploration._checks")
    for name in (
        "_check_dim",
        "_check_state",
        "_check_actions",
        "_kappa_array",
        "_unit_rows",
    ):
        assert callable(getattr(checks, name))


def test_notebook_imports_the_chapter_module_in_the_book_form() -> None:
    import json
    from pathlib import Path

    nb = Path(__file__).resolve().parents[1] / "notebooks" / "02_vmf_exploration.ipynb"
    code = "\n".join(
        "".join(c["source"])
        for c in json.loads(nb.read_text())["cells"]
        if c["cell_type"] == "code"
    )
    assert "from icml25 import vmf_exploration as vmf" in code
    assert "import icml25.vmf_exploration" not in code
