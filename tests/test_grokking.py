"""Tests of icml25.grokking against independent references: scikit-learn's Lasso, the ridge
closed form, basis pursuit by linear programming, brute-force labels and definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25 import grokking as grok


def _cs(seed=0, n=60, s=3, N=30, tau=0.0):
    rng = np.random.default_rng(seed)
    a = grok.sparse_signal(n, s, rng)
    X = grok.measurements(N, n, tau, rng)
    return X, X @ a, a


# ------------------------------------------------------------------------------ data


def test_sparse_signal_has_exactly_s_nonzeros_and_official_scale():
    rng = np.random.default_rng(0)
    a = np.stack([grok.sparse_signal(100, 5, rng) for _ in range(400)])
    assert np.all((a != 0).sum(axis=1) == 5)
    assert np.std(a[a != 0]) == pytest.approx(0.1, rel=0.1)  # N(0, 1)/sqrt(n), n = 100


def test_measurements_coherent_rows_are_coordinates_and_rest_gaussian():
    rng = np.random.default_rng(1)
    X = grok.measurements(40, 100, 0.5, rng)
    assert X.shape == (40, 100)
    top = X[:20]
    assert np.all((top == 1.0).sum(axis=1) == 1) and np.all((top != 0).sum(axis=1) == 1)
    assert np.var(X[20:]) == pytest.approx(1 / 40, rel=0.15)


def test_measurements_with_basis_multiplies_by_phi():
    rng = np.random.default_rng(2)
    Phi = np.linalg.qr(rng.standard_normal((30, 30)))[0]
    X = grok.measurements(10, 30, 1.0, np.random.default_rng(3), basis=Phi)
    # each row is (a column of Phi)^T Phi, i.e. a row of Phi^T
    # Phi = e_i^T for orthogonal Phi
    np.testing.assert_allclose(np.abs(X).max(axis=1), 1.0, atol=1e-12)


def test_low_rank_matrix_rank_and_scale():
    A = grok.low_rank_matrix(10, 12, 2, np.random.default_rng(0))
    assert np.linalg.matrix_rank(A) == 2
    assert np.linalg.norm(A) == pytest.approx(np.sqrt(120 / 10))


def test_completion_mask_count_and_coherent_entries():
    rng = np.random.default_rng(0)
    A = grok.low_rank_matrix(10, 10, 2, rng)
    for tau in (0.0, 0.5, 1.0):
        m = grok.completion_mask(A, 40, tau, np.random.default_rng(1))
        assert m.dtype == bool and m.sum() == 40
    _, _, P = grok.local_coherence(A)
    m = grok.completion_mask(A, 30, 1.0, np.random.default_rng(1))
    # the observed entries are the 30 with the largest local coherence
    assert P[m].min() >= np.sort(P.ravel())[-30] - 1e-12


def test_local_coherence_sums_to_dimension():
    A = grok.low_rank_matrix(8, 6, 3, np.random.default_rng(0))
    mu, nu, _ = grok.local_coherence(A)
    # sum_i ||U_i||^2 = r, so sum_i mu_i = n1
    assert mu.sum() == pytest.approx(8) and nu.sum() == pytest.approx(6)


@pytest.mark.parametrize("op", ["+", "-", "*"])
def test_modular_dataset_labels_brute_force(op):
    d = grok.modular_dataset(7, op, 0.4, np.random.default_rng(0))
    x = np.concatenate([d["x_train"], d["x_test"]])
    y = np.concatenate([d["y_train"], d["y_test"]])
    assert len(x) == 49 and len(d["x_train"]) == round(0.4 * 49)
    assert len({tuple(r) for r in x}) == 49
    for (i, j), lab in zip(x, y):
        assert lab == eval(f"({i} {op} {j}) % 7")


# ------------------------------------------------------------- optimisers vs references


def test_ista_reaches_sklearn_lasso():
    X, y, a = _cs(0)
    beta1 = 1e-3
    alpha = 0.9 * float(grok.stability_bound(X))
    h = grok.subgradient_descent(
        X,
        y,
        a,
        alpha=alpha,
        beta1=beta1,
        init=0.0,
        n_steps=20_000,
        method="ista",
        eval_every=1000,
    )
    ref = grok.lasso_solution(X, y, beta1)
    np.testing.assert_allclose(h.final[0], ref, atol=1e-8)


def test_l2_only_gd_reaches_ridge_closed_form_from_large_init():
    X, y, a = _cs(1)
    beta2 = 1e-2
    alpha = 0.9 * float(grok.stability_bound(X, beta2))
    h = grok.subgradient_descent(
        X, y, a, alpha=alpha, beta2=beta2, init=10.0, n_steps=20_000, eval_every=1000
    )
    np.testing.assert_allclose(h.final[0], grok.ridge_solution(X, y, beta2), atol=1e-9)


def test_l1_path_recovers_basis_pursuit_solution():
    X, y, a = _cs(2)
    bp = grok.basis_pursuit(X, y)
    # exact recovery: s = 3, N = 30, n = 60
    np.testing.assert_allclose(bp, a, atol=1e-8)
    h = grok.subgradient_descent(
        X, y, a, alpha=0.1, beta1=1e-4, init=1e-6, n_steps=20_000, eval_every=100
    )
    err = np.linalg.norm(h.final[0] - bp) / np.linalg.norm(bp)
    # the subgradient iterate oscillates at O(alpha beta1) around the solution
    assert err < 1e-2
    # ... while the l2-only path stays at the min-norm interpolant, far from it
    a_ls = grok.min_norm_solution(X, y)
    assert np.linalg.norm(a_ls - bp) / np.linalg.norm(bp) > 0.3


def test_projected_subgradient_stays_feasible():
    X, y, a = _cs(3)
    h = grok.subgradient_descent(
        X, y, a, alpha=0.1, beta1=1e-3, n_steps=2000, method="proj", eval_every=100
    )
    assert np.all(h.train_error[1:] < 1e-10)


def test_batched_and_unbatched_runs_agree():
    cases = [_cs(s) for s in range(3)]
    X = np.stack([c[0] for c in cases])
    y = np.stack([c[1] for c in cases])
    A = np.stack([c[2] for c in cases])
    alphas = np.array([0.05, 0.1, 0.08])
    betas = np.array([1e-4, 3e-4, 1e-3])
    hb = grok.subgradient_descent(
        X, y, A, alpha=alphas, beta1=betas, n_steps=3000, eval_every=100
    )
    for b, (Xb, yb, ab) in enumerate(cases):
        h1 = grok.subgradient_descent(
            Xb, yb, ab, alpha=alphas[b], beta1=betas[b], n_steps=3000, eval_every=100
        )
        np.testing.assert_allclose(hb.final[b], h1.final[0], rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(
            hb.recovery_error[:, b], h1.recovery_error[:, 0], rtol=1e-9
        )


def test_subgradient_two_phases_and_t2_law():
    X, y, a = _cs(4)
    a_ls = grok.min_norm_solution(X, y)
    betas = np.array([5e-5, 2e-4])
    h = grok.subgradient_descent(
        X, y, a, alpha=0.1, beta1=betas, n_steps=20_000, eval_every=50
    )
    t1, t2 = grok.grokking_times(h, 1e-2)
    assert t2[0] >= 10 * t1[0]  # memorise early, generalise much later
    assert t2[0] / t2[1] == pytest.approx(4.0, rel=0.5)  # t2 ~ 1/(alpha beta)
    pred = grok.predicted_t2(a_ls, a, 0.1, betas)
    assert np.all((t2 > pred / 3) & (t2 < 3 * pred))


def test_deep_identity_init_trap_and_fix():
    X, y, a = _cs(5, s=4)
    while np.all(a >= 0):  # pragma: no cover - needs a negative entry
        X, y, a = _cs(int(np.random.default_rng().integers(100)), s=4)
    hid = grok.deep_hadamard_gd(
        X,
        y,
        a,
        depth=2,
        init=1e-3,
        parametrisation="identity",
        alpha=0.1,
        n_steps=3000,
        eval_every=100,
    )
    assert np.all(hid.final >= 0)  # identical factors: a = a_1^2 never turns negative
    huv = grok.deep_hadamard_gd(
        X,
        y,
        a,
        depth=2,
        init=1e-3,
        parametrisation="u*u-v*v",
        alpha=0.1,
        n_steps=20_000,
        eval_every=1000,
    )
    assert huv.recovery_error[-1, 0] < 0.05 < hid.recovery_error[-1, 0]


def test_matrix_completion_svt_without_penalty_fits_observed_entries_only():
    rng = np.random.default_rng(0)
    A = grok.low_rank_matrix(8, 8, 2, rng)
    m = grok.completion_mask(A, 40, 0.0, rng)
    h = grok.matrix_subgradient(
        m, A, alpha=1.0, beta_star=0.0, init=0.0, n_steps=5, method="svt", eval_every=1
    )
    assert h.train_error[-1, 0] < 1e-12
    np.testing.assert_allclose(h.final[0][~m], 0.0, atol=1e-12)
    assert h.norms["nuclear"][-1, 0] == pytest.approx(
        np.linalg.svd(h.final[0], compute_uv=False).sum()
    )


def test_matrix_nuclear_penalty_recovers_low_rank():
    rng = np.random.default_rng(0)
    A = grok.low_rank_matrix(10, 10, 2, rng)
    m = grok.completion_mask(A, 80, 0.0, rng)
    h = grok.matrix_subgradient(
        m, A, alpha=0.5, beta_star=1e-3, n_steps=4000, eval_every=100
    )
    h0 = grok.matrix_subgradient(
        m, A, alpha=0.5, beta_star=0.0, n_steps=4000, eval_every=100
    )
    assert h.recovery_error[-1, 0] < 0.05 < h0.recovery_error[-1, 0]


# ------------------------------------------------------------------------------ metrics


def test_grokking_times_rules():
    steps = np.arange(6) * 10
    tr = np.array([[1.0], [0.5], [1e-3], [1e-3], [1e-3], [1e-3]])
    re = np.array([[1.0], [1e-3], [0.5], [1e-3], [1e-3], [1e-3]])
    h = grok.History(steps, tr, re, {}, np.zeros((1, 2)))
    assert grok.grokking_times(h, 1e-2) == (
        pytest.approx([20.0]),
        pytest.approx([10.0]),
    )
    t1, t2 = grok.grokking_times(h, 1e-2, rule="stays-below")
    assert t1[0] == 20 and t2[0] == 30
    t1, t2 = grok.grokking_times(h, 1e-4)
    assert np.isnan(t1[0]) and np.isnan(t2[0])


def test_predicted_t2_formula_and_norms():
    a_ls = np.array([0.3, -0.1, 0.0])
    a_star = np.array([0.1, 0.0, 0.0])
    assert grok.predicted_t2(a_ls, a_star, 0.1, 1e-3) == pytest.approx(0.2 / 1e-4)
    v = np.array([0.0, -3.0, 4.0, 1e-6])
    assert grok.l0_norm(v) == 2 and grok.l1_norm(v) == pytest.approx(7.000001)
    assert grok.l2_norm(v) == pytest.approx(5.0, rel=1e-9)
    M = np.diag([3.0, 2.0])
    assert grok.nuclear_norm(M) == pytest.approx(5.0)
    assert grok.loglog_slope([1, 10, 100], [5, 0.5, 0.05]) == pytest.approx(-1.0)


# ----------------------------------------------------------------------------- networks


def test_encoder_decoder_shapes_and_regularisation_matches_manual():
    model = grok.EncoderDecoderMLP(11, 16, rng=torch.Generator().manual_seed(0))
    x = torch.tensor([[1, 2], [3, 4]])
    assert model(x).shape == (2, 11)
    Ws = [W for W in model.parameters() if W.ndim == 2]
    want = sum(
        1e-3 * W.abs().sum() + 1e-2 * W.norm() + 1e-4 * torch.linalg.svdvals(W).sum()
        for W in Ws
    ).detach()
    got = grok.regularisation(model, l1=1e-3, l2=1e-2, nuclear=1e-4).detach()
    assert float(got) == pytest.approx(float(want), rel=1e-5)


def test_train_grokking_fits_training_set():
    torch.manual_seed(0)
    data = grok.modular_dataset(7, "+", 0.5, np.random.default_rng(0))
    model = grok.EncoderDecoderMLP(7, 16, rng=torch.Generator().manual_seed(0))
    logs = grok.train_grokking(model, data, lr=1e-2, epochs=200, eval_every=50)
    assert logs["train_acc"][-1] == 1.0 and logs["epoch"].tolist() == [
        0,
        50,
        100,
        150,
        200,
    ]


# --------------------------------------------------------------------------- bad inputs


def test_bad_inputs_raise_clear_errors():
    X, y, a = _cs(0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="alpha"):
        grok.subgradient_descent(X, y, a, alpha=0.0)
    with pytest.raises(ValueError, match="stability bound"):
        grok.subgradient_descent(X, y, a, alpha=1.01 * float(grok.stability_bound(X)))
    with pytest.raises(ValueError, match="y must have shape"):
        grok.subgradient_descent(X, y[:-1], a)
    with pytest.raises(ValueError, match="a_star"):
        grok.subgradient_descent(X, y, a[:-1])
    with pytest.raises(ValueError, match="beta1"):
        grok.subgradient_descent(X, y, a, beta1=-1.0)
    with pytest.raises(ValueError, match="method"):
        grok.subgradient_descent(X, y, a, method="adam")
    with pytest.raises(ValueError, match="init"):
        grok.subgradient_descent(X, y, a, init=np.ones(3))
    with pytest.raises(ValueError, match="eval_every"):
        grok.subgradient_descent(X, y, a, n_steps=10, eval_every=100)
    with pytest.raises(ValueError, match="s must be"):
        grok.sparse_signal(5, 6, rng)
    with pytest.raises(TypeError, match="rng"):
        grok.sparse_signal(5, 2, 0)
    with pytest.raises(ValueError, match="tau"):
        grok.measurements(10, 20, 1.5, rng)
    with pytest.raises(ValueError, match="N must be"):
        grok.completion_mask(np.eye(3), 10, 0.0, rng)
    with pytest.raises(ValueError, match="op"):
        grok.modular_dataset(7, "/", 0.5, rng)
    with pytest.raises(ValueError, match="perfect square"):
        grok.EncoderDecoderMLP(7, 10)
    with pytest.raises(ValueError, match="parametrisation"):
        grok.deep_hadamard_gd(X, y, a, parametrisation="ones")
    with pytest.raises(ValueError, match="rng"):
        grok.deep_hadamard_gd(X, y, a, parametrisation="random")
    with pytest.raises(TypeError, match="mask"):
        grok.matrix_subgradient(np.ones((3, 3)), np.eye(3))
    with pytest.raises(ValueError, match="alpha"):
        grok.matrix_subgradient(np.eye(3, dtype=bool), np.eye(3), alpha=2.5)
    with pytest.raises(ValueError, match="rule"):
        h = grok.History(
            np.arange(2), np.ones((2, 1)), np.ones((2, 1)), {}, np.zeros((1, 1))
        )
        grok.grokking_times(h, rule="x")
    with pytest.raises(ValueError, match="l1"):
        grok.regularisation(grok.EncoderDecoderMLP(5, 4), l1=-1.0)
    with pytest.raises(ValueError, match="beta2"):
        grok.ridge_solution(X, y, 0.0)


def test_loglog_slope_with_groups_removes_problem_constants():
    x = np.tile([1e-5, 2e-5, 4e-5], 2)
    y = np.concatenate([1.0 / x[:3], 7.0 / x[3:]])
    y[5] = np.nan  # a run that never generalised
    assert grok.loglog_slope(x, y, groups=np.repeat([0, 1], 3)) == pytest.approx(-1.0)
    # the pooled fit is biased
    assert grok.loglog_slope(x, y) != pytest.approx(-1.0, abs=0.05)


# ---------------------------------------------------------- bad inputs: named arguments


def test_subgradient_descent_rejects_nonfinite_init():
    X, y, a = _cs(0)
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="init must be finite"):
            grok.subgradient_descent(X, y, a, init=bad, n_steps=10, eval_every=5)
    with pytest.raises(ValueError, match="init must be finite"):
        grok.subgradient_descent(
            X, y, a, init=np.full(X.shape[1], np.nan), n_steps=10, eval_every=5
        )


def test_subgradient_descent_rejects_string_hyperparameters():
    X, y, a = _cs(0)
    for name in ("alpha", "beta1", "beta2", "init"):
        with pytest.raises(TypeError, match=name):
            grok.subgradient_descent(X, y, a, n_steps=10, eval_every=5, **{name: "0.1"})
    for name in ("n_steps", "eval_every"):
        kw = {"n_steps": 10, "eval_every": 5}
        kw[name] = "5"
        with pytest.raises(TypeError, match=name):
            grok.subgradient_descent(X, y, a, **kw)
    with pytest.raises(TypeError, match="n_steps"):
        grok.subgradient_descent(X, y, a, n_steps=10.0, eval_every=5)


def test_sparse_problems_rejects_wrong_length_tau():
    rng = np.random.default_rng(0)
    with pytest.raises(
        ValueError, match=r"tau must be a scalar or have shape \(B,\) = \(3,\)"
    ):
        grok.sparse_problems(3, 10, 2, 5, [0.1, 0.2], rng)
    with pytest.raises(ValueError, match="tau must be in"):
        grok.sparse_problems(2, 10, 2, 5, [0.1, np.nan], rng)
    # a valid (B,) tau still works
    X, y, a = grok.sparse_problems(2, 10, 2, 5, [0.0, 1.0], rng)
    assert X.shape == (2, 5, 10) and y.shape == (2, 5) and a.shape == (2, 10)


def test_matrix_subgradient_rejects_mask_of_wrong_shape():
    A = grok.low_rank_matrix(10, 10, 2, np.random.default_rng(0))
    mask = grok.completion_mask(A, 40, 0.0, np.random.default_rng(1))
    with pytest.raises(ValueError, match=r"mask must have shape \(10, 10\)"):
        grok.matrix_subgradient(mask[:3], A, n_steps=2, eval_every=1)
    with pytest.raises(ValueError, match="init must be a finite"):
        grok.matrix_subgradient(mask, A, init=np.nan, n_steps=2, eval_every=1)


def test_stability_bound_rejects_non_matrix():
    with pytest.raises(ValueError, match="X must be a non-empty 2-D"):
        grok.stability_bound(np.ones(3))
    with pytest.raises(ValueError, match="beta2"):
        grok.stability_bound(np.eye(3), beta2=-1.0)


def test_loglog_slope_rejects_mismatched_x_and_y():
    with pytest.raises(
        ValueError, match="x and y must have the same number of entries"
    ):
        grok.loglog_slope([1.0, 10.0, 100.0], [5.0, 0.5])


def test_train_grokking_rejects_non_module_and_malformed_data():
    data = grok.modular_dataset(5, "+", 0.5, np.random.default_rng(0))
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        grok.train_grokking(None, data)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        grok.train_grokking(object(), {})
    model = grok.EncoderDecoderMLP(5, 4, rng=torch.Generator().manual_seed(0))
    with pytest.raises(TypeError, match="data must be a dict"):
        grok.train_grokking(model, [1, 2])
    with pytest.raises(ValueError, match="data is missing key"):
        grok.train_grokking(model, {})
    with pytest.raises(ValueError, match=r"data\['x_train'\]"):
        grok.train_grokking(model, {**data, "x_train": data["x_train"][:, :1]})
    with pytest.raises(TypeError, match="lr"):
        grok.train_grokking(model, data, lr="0.01")


def test_predicted_t2_rejects_nonfinite_alpha_and_mismatched_shapes():
    with pytest.raises(ValueError, match="alpha must be finite"):
        grok.predicted_t2(np.ones(3), np.zeros(3), np.nan, 1e-3)
    with pytest.raises(ValueError, match="a_ls and a_star"):
        grok.predicted_t2(np.ones(3), np.zeros(2), 0.1, 1e-3)


def test_deep_hadamard_gd_rejects_infinite_init():
    X, y, a = _cs(0)
    with pytest.raises(ValueError, match="init must be a finite"):
        grok.deep_hadamard_gd(X, y, a, init=np.inf, n_steps=2, eval_every=1)


def test_grokking_times_rejects_non_history_and_nan_threshold():
    with pytest.raises(TypeError, match="history"):
        grok.grokking_times({"steps": []})
    h = grok.History(
        np.arange(2), np.ones((2, 1)), np.ones((2, 1)), {}, np.zeros((1, 1))
    )
    with pytest.raises(ValueError, match="threshold must be a finite"):
        grok.grokking_times(h, threshold=np.nan)


def test_rel_recovery_error_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="a and a_star"):
        grok.rel_recovery_error(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="y must have shape"):
        grok.rel_train_error(np.ones((4, 3)), np.ones(3), np.ones(5))


def test_regularisation_rejects_non_module_and_nonfinite_weight():
    with pytest.raises(TypeError, match="model"):
        grok.regularisation(object(), l1=1e-3)
    with pytest.raises(ValueError, match="l2 must be a finite"):
        grok.regularisation(grok.EncoderDecoderMLP(5, 4), l2=np.inf)


# ------------------------------------------------------ issue 13: conventions and fixes


def test_defaults_are_one_frozen_value_with_the_paper_settings():
    import dataclasses

    d = grok.DEFAULTS
    assert isinstance(d, grok.GrokkingDefaults)
    assert (d.sparse.n, d.sparse.s, d.sparse.N, d.sparse.alpha, d.sparse.beta1) == (
        100,
        5,
        30,
        0.1,
        1e-5,
    )
    assert (d.completion.n1, d.completion.n2, d.completion.r, d.completion.N) == (
        10,
        10,
        2,
        80,
    )
    assert (d.mlp.p, d.mlp.d, d.mlp.train_fraction) == (97, 64, 0.4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.sparse.n = 50  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.sparse = grok.SparseDefaults(n=50)  # type: ignore[misc]


def test_l0_norm_refuses_nan_instead_of_counting_zero():
    # bug: l0_norm([nan, nan]) was 0 (NaN > threshold is False), a
    # silent "all zero" answer
    for norm in (grok.l0_norm, grok.l1_norm, grok.l2_norm):
        with pytest.raises(ValueError, match="finite"):
            norm(np.array([np.nan, np.nan]))
        with pytest.raises(ValueError, match="finite"):
            norm(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="finite"):
        grok.nuclear_norm(np.full((2, 2), np.nan))
    assert grok.l0_norm(np.array([[0.0, 1.0], [2.0, 3.0]])).tolist() == [1, 2]


def test_loglog_slope_of_constant_x_is_nan_as_documented():
    # bug: np.polyfit raised LinAlgError for x = [1, 1, 1] and returned a
    # meaningless slope for [2, 2, 2]
    assert np.isnan(grok.loglog_slope([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert np.isnan(grok.loglog_slope([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]))
    assert np.isnan(
        grok.loglog_slope(
            [0.1, 0.1, 0.1, 5.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0], groups=[0, 0, 0, 1, 1]
        )
    )
    # a constant group carries no slope; the others still give theirs
    x = np.array([0.1, 0.1, 1.0, 10.0])
    assert grok.loglog_slope(
        x, [3.0, 4.0, 2.0, 0.2], groups=[0, 0, 1, 1]
    ) == pytest.approx(-1.0)
    # constant y: slope 0, defined
    assert grok.loglog_slope([1.0, 2.0, 4.0], [5.0, 5.0, 5.0]) == 0.0


def test_train_grokking_refuses_data_for_another_modulus():
    # bug: data for p = 7 with a model for p = 5 failed inside torch
    # (one_hot / cross_entropy)
    model = grok.EncoderDecoderMLP(5, 4, rng=torch.Generator().manual_seed(0))
    data7 = grok.modular_dataset(7, "+", 0.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="p = 7"):
        grok.train_grokking(model, data7, epochs=1)
    # the same arrays without the modulus
    no_p = {k: v for k, v in data7.items() if k != "p"}
    with pytest.raises(ValueError, match=r"data\['x_train'\] must be <= 4"):
        grok.train_grokking(model, no_p, epochs=1)
    bad = {**grok.modular_dataset(5, "+", 0.5, np.random.default_rng(0))}
    bad["y_test"] = bad["y_test"] - 1  # a label -1
    with pytest.raises(ValueError, match=r"data\['y_test'\] must be >= 0"):
        grok.train_grokking(model, bad, epochs=1)


def test_encoder_decoder_rng_is_a_torch_generator_and_leaves_the_global_stream_alone():
    state = torch.get_rng_state()
    m1 = grok.EncoderDecoderMLP(7, 16, rng=torch.Generator().manual_seed(3))
    assert torch.equal(state, torch.get_rng_state())
    # the weights are those of PyTorch's own init from torch.manual_seed(3)
    torch.manual_seed(3)
    m2 = grok.EncoderDecoderMLP(7, 16)
    assert all(torch.equal(a, b) for a, b in zip(m1.parameters(), m2.parameters()))
    with pytest.raises(TypeError, match="rng"):
        grok.EncoderDecoderMLP(7, 16, rng=3)


def test_solver_answers_are_checked_before_use(monkeypatch):
    import scipy.optimize
    import sklearn.linear_model

    X, y, a = _cs(0)
    with monkeypatch.context() as m:
        m.setattr(np.linalg, "solve", lambda K, b: np.zeros_like(b))
        with pytest.raises(RuntimeError, match="ridge_solution"):
            grok.ridge_solution(X, y, 1e-2)
    with monkeypatch.context() as m:
        m.setattr(np.linalg, "pinv", lambda A: np.zeros(A.shape[::-1]))
        with pytest.raises(RuntimeError, match="normal equations"):
            grok.min_norm_solution(X, y)

    def fake_fit(self, X, y):
        self.coef_ = np.ones(X.shape[1])
        return self

    with monkeypatch.context() as m:
        m.setattr(sklearn.linear_model.Lasso, "fit", fake_fit)
        with pytest.raises(RuntimeError, match="lasso_solution"):
            grok.lasso_solution(X, y, 1e-3)
    real_linprog = scipy.optimize.linprog

    def off_linprog(*args, **kwargs):
        res = real_linprog(*args, **kwargs)
        res.x = 1.5 * res.x  # "success", but X a = 1.5 y
        return res

    with monkeypatch.context() as m:
        m.setattr(scipy.optimize, "linprog", off_linprog)
        with pytest.raises(RuntimeError, match="violates X a = y"):
            grok.basis_pursuit(X, y)
    # the real solvers pass their checks
    assert np.allclose(X @ grok.min_norm_solution(X, y), y)
    grok.lasso_solution(X, y, 1e-3)
    grok.basis_pursuit(X, y)


def test_projected_method_refuses_x_without_full_row_rank():
    X, y, a = _cs(0)
    X = np.vstack([X, X[:1]])  # a repeated measurement: X X^T is singular
    y = X @ a
    with pytest.raises(ValueError, match="full row rank"):
        grok.subgradient_descent(
            X, y, a, alpha=0.05, beta1=1e-3, method="proj", n_steps=10, eval_every=5
        )


def _objective(h, y, beta1, beta2):
    """1/2 ||X a - y||^2 + beta2/2 ||a||^2 + beta1 ||a||_1 at each record, from the records."""
    return (
        0.5 * (h.train_error[:, 0] * np.linalg.norm(y)) ** 2
        + 0.5 * beta2 * h.norms["l2"][:, 0] ** 2
        + beta1 * h.norms["l1"][:, 0]
    )


def test_which_fits_are_monotone_and_so_end_at_their_best_iterate():
    # GD (beta1 = 0) and ISTA below the stability bound decrease the objective at every
    # step, so their last iterate (History.final) is their best; the l1 subgradient
    # method is not monotone (it oscillates around the solution), and the chapter reads
    # its trajectory, not a fit
    X, y, a = _cs(0)
    alpha = 0.9 * float(grok.stability_bound(X, 1e-2))
    gd = grok.subgradient_descent(
        X, y, a, alpha=alpha, beta2=1e-2, init=1.0, n_steps=2000, eval_every=1
    )
    ista = grok.subgradient_descent(
        X,
        y,
        a,
        alpha=alpha,
        beta1=1e-3,
        init=1.0,
        n_steps=2000,
        method="ista",
        eval_every=1,
    )
    for h, b1, b2 in ((gd, 0.0, 1e-2), (ista, 1e-3, 0.0)):
        F = _objective(h, y, b1, b2)
        assert np.all(np.diff(F) <= 1e-12 * F[:-1])
    sub = grok.subgradient_descent(
        X, y, a, alpha=0.1, beta1=1e-3, init=1e-6, n_steps=20_000, eval_every=1
    )
    assert np.any(np.diff(_objective(sub, y, 1e-3, 0.0)) > 0)


# ---------------------------------------------------------- newcomer findings (round 2)


def _tiny_model_and_data():
    data = grok.modular_dataset(7, "+", 0.5, np.random.default_rng(0))
    return grok.EncoderDecoderMLP(7, 4, rng=torch.Generator().manual_seed(0)), data


_X0, _y0, _a0 = _cs(0)
_A0 = grok.low_rank_matrix(6, 6, 2, np.random.default_rng(0))
_M0 = grok.completion_mask(_A0, 20, 0.0, np.random.default_rng(1))
_TOO_LARGE = {
    "measurements(N)": lambda: grok.measurements(
        10**12, 100, 0.0, np.random.default_rng(0)
    ),
    "measurements(n)": lambda: grok.measurements(
        10, 10**9, 0.0, np.random.default_rng(0)
    ),
    "sparse_signal(n)": lambda: grok.sparse_signal(10**13, 5, np.random.default_rng(0)),
    "sparse_problems(B)": lambda: grok.sparse_problems(
        10**12, 100, 5, 30, 0.0, np.random.default_rng(0)
    ),
    "low_rank_matrix(n1, n2)": lambda: grok.low_rank_matrix(
        10**7, 10**7, 2, np.random.default_rng(0)
    ),
    "modular_dataset(p)": lambda: grok.modular_dataset(
        10**6, "+", 0.5, np.random.default_rng(0)
    ),
    "subgradient_descent(n_steps)": lambda: grok.subgradient_descent(
        _X0, _y0, _a0, n_steps=10**12
    ),
    "subgradient_descent(n_steps, eval_every)": lambda: grok.subgradient_descent(
        _X0, _y0, _a0, n_steps=10**10, eval_every=10**10
    ),
    "deep_hadamard_gd(n_steps)": lambda: grok.deep_hadamard_gd(
        _X0, _y0, _a0, n_steps=10**12
    ),
    "deep_hadamard_gd(depth)": lambda: grok.deep_hadamard_gd(
        _X0, _y0, _a0, depth=10**12, n_steps=10, eval_every=10
    ),
    "matrix_subgradient(n_steps)": lambda: grok.matrix_subgradient(
        _M0, _A0, n_steps=10**12
    ),
    "EncoderDecoderMLP(p)": lambda: grok.EncoderDecoderMLP(10**9, 64),
    "train_grokking(epochs)": lambda: grok.train_grokking(
        *_tiny_model_and_data(), epochs=10**12, device="cpu"
    ),
}


@pytest.mark.parametrize("call", list(_TOO_LARGE), ids=list(_TOO_LARGE))
def test_sizes_that_cannot_fit_are_refused_before_any_work(call):
    """Newcomer: MemoryError (measurements, sparse_problems, modular_dataset, the steppers) or a hang
    (train_grokking) for sizes that cannot fit; now TooLargeError quoting the estimate, at once."""
    import time

    from icml25.checks import TooLargeError

    t0 = time.perf_counter()
    with pytest.raises(TooLargeError, match=call.split("(")[0]):
        _TOO_LARGE[call]()
    assert time.perf_counter() - t0 < 1.0


def test_the_papers_sizes_stay_within_the_budget():
    """The gpu profile runs the paper's settings: none of them may be refused."""
    from icml25.checks import check_budget
    from icml25.kernels import grokking

    p = grok.DEFAULTS
    # Fig. 4 grid
    nbytes, nops = grokking.grok_steps_cost(
        36, p.sparse.N, p.sparse.n, 2_000_000, 1_000, "sub"
    )
    check_budget("law", n_bytes=nbytes, n_operations=nops)
    model = grok.EncoderDecoderMLP(
        p.mlp.p, p.mlp.d, rng=torch.Generator().manual_seed(0)
    )
    data = grok.modular_dataset(
        p.mlp.p, "+", p.mlp.train_fraction, np.random.default_rng(0)
    )
    from icml25.grokking.networks import _check_modular_data, _training_cost

    arrs, _ = _check_modular_data(data, p.mlp.p)
    check_budget("mlp", **_training_cost(model, arrs, p.mlp.epochs, 10, 1e-3))


def test_solver_failures_name_the_solver_and_the_failed_test(monkeypatch):
    """Newcomer: basis_pursuit's 'basis pursuit LP failed' and min_norm_solution's message named neither
    the public function with the solver nor the failed test; each solver lists RuntimeError under Raises."""
    import inspect

    X = np.array([[1.0, 0.0], [1.0, 0.0]])
    with pytest.raises(
        RuntimeError,
        match=r"basis_pursuit: scipy\.optimize\.linprog \(HiGHS\) failed \(failed test",
    ):
        grok.basis_pursuit(X, np.array([1.0, 2.0]))  # x_0 = 1 and x_0 = 2: infeasible
    X, y, _ = _cs(0)
    with monkeypatch.context() as m:
        m.setattr(np.linalg, "pinv", lambda A: np.zeros(A.shape[::-1]))
        with pytest.raises(
            RuntimeError,
            match=r"min_norm_solution: numpy\.linalg\.pinv.*failed test: \|\|X\^T",
        ):
            grok.min_norm_solution(X, y)
    with monkeypatch.context() as m:
        m.setattr(np.linalg, "pinv", lambda A: np.full(A.shape[::-1], np.nan))
        with pytest.raises(
            RuntimeError,
            match=r"min_norm_solution: numpy\.linalg\.pinv returned .* non-finite",
        ):
            grok.min_norm_solution(X, y)

    def no_svd(A):
        raise np.linalg.LinAlgError("SVD did not converge")

    with monkeypatch.context() as m:
        m.setattr(np.linalg, "pinv", no_svd)
        with pytest.raises(
            RuntimeError, match=r"min_norm_solution: numpy\.linalg\.pinv failed"
        ):
            grok.min_norm_solution(X, y)
    with monkeypatch.context() as m:
        m.setattr(np.linalg, "solve", lambda K, b: np.zeros_like(b))
        with pytest.raises(
            RuntimeError, match=r"ridge_solution: numpy\.linalg\.solve.*failed test"
        ):
            grok.ridge_solution(X, y, 1e-2)

    def singular(K, b):
        raise np.linalg.LinAlgError("Singular matrix")

    with monkeypatch.context() as m:
        m.setattr(np.linalg, "solve", singular)
        with pytest.raises(
            RuntimeError, match=r"ridge_solution: numpy\.linalg\.solve failed"
        ):
            grok.ridge_solution(X, y, 1e-2)
    for fn in (
        grok.min_norm_solution,
        grok.ridge_solution,
        grok.lasso_solution,
        grok.basis_pursuit,
    ):
        raises = inspect.getdoc(fn).split("Raises:")[1]
        assert "RuntimeError:" in raises, fn.__name__


def test_public_hyperparameters_have_precise_type_hints():
    """Newcomer: alpha, beta*, init and tau were typed Any; a float or an array of them is known."""
    import typing

    fns = (
        grok.subgradient_descent,
        grok.deep_hadamard_gd,
        grok.matrix_subgradient,
        grok.stability_bound,
        grok.predicted_t2,
        grok.sparse_problems,
    )
    for fn in fns:
        hints = typing.get_type_hints(fn)
        for name in ("alpha", "beta", "beta1", "beta2", "beta_star", "init", "tau"):
            if name in hints:
                assert hints[name] is not typing.Any, (fn.__name__, name)
                assert float in typing.get_args(hints[name]) or hints[name] is float, (
                    fn.__name__,
                    name,
                )


def _notebook_code_cells():
    import json
    from pathlib import Path

    nb = json.loads(
        (
            Path(__file__).resolve().parents[1]
            / "notebooks"
            / "16_grokking_regularization.ipynb"
        ).read_text()
    )
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_notebook_setup_cell_prints_the_backend_label_with_the_config():
    """Newcomer: the first output printed only the config dict; the label first appeared at output 5."""
    cells = _notebook_code_cells()
    setup = next(c for c in cells if "profile_config" in c)
    # right after the parameters cell: its print is the first output
    assert cells.index(setup) == 1
    # a top-level print call, whole (ruff format spreads a long one over several lines)
    import ast

    prints = [
        ast.unparse(st)
        for st in ast.parse(setup).body
        if isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and getattr(st.value.func, "id", None) == "print"
    ]
    assert any(
        "cfg.as_dict()" in call and "backend_label()" in call for call in prints
    ), prints


def test_notebook_reads_the_papers_alpha_and_init_from_defaults():
    """Newcomer: alpha=0.1 and init=1e-6 were retyped in several cells instead of read from DEFAULTS."""
    import io
    import re
    import tokenize

    # the cell without its strings and comments (labels may quote the paper)
    def code_only(src: str) -> str:
        toks = tokenize.generate_tokens(io.StringIO(src).readline)
        return " ".join(
            t.string for t in toks if t.type not in (tokenize.STRING, tokenize.COMMENT)
        )

    retyped = [
        c.splitlines()[0]
        for c in _notebook_code_cells()
        if re.search(r"\balpha = 0?\.1\b(?!\d)|\binit = 1e-6\b|\( 1e-6 ,", code_only(c))
    ]
    assert not retyped, retyped
