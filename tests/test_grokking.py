"""Tests of icml25.grokking against independent references: scikit-learn's Lasso, the ridge
closed form, basis pursuit by linear programming, brute-force labels and definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25 import grokking as g


def _cs(seed=0, n=60, s=3, N=30, tau=0.0):
    rng = np.random.default_rng(seed)
    a = g.sparse_signal(n, s, rng)
    X = g.measurements(N, n, tau, rng)
    return X, X @ a, a


# ------------------------------------------------------------------------------ data


def test_sparse_signal_has_exactly_s_nonzeros_and_official_scale():
    rng = np.random.default_rng(0)
    a = np.stack([g.sparse_signal(100, 5, rng) for _ in range(400)])
    assert np.all((a != 0).sum(axis=1) == 5)
    assert np.std(a[a != 0]) == pytest.approx(0.1, rel=0.1)  # N(0, 1)/sqrt(n), n = 100


def test_measurements_coherent_rows_are_coordinates_and_rest_gaussian():
    rng = np.random.default_rng(1)
    X = g.measurements(40, 100, 0.5, rng)
    assert X.shape == (40, 100)
    top = X[:20]
    assert np.all((top == 1.0).sum(axis=1) == 1) and np.all((top != 0).sum(axis=1) == 1)
    assert np.var(X[20:]) == pytest.approx(1 / 40, rel=0.15)


def test_measurements_with_basis_multiplies_by_phi():
    rng = np.random.default_rng(2)
    Phi = np.linalg.qr(rng.standard_normal((30, 30)))[0]
    X = g.measurements(10, 30, 1.0, np.random.default_rng(3), basis=Phi)
    # each row is (a column of Phi)^T Phi, i.e. a row of Phi^T Phi = e_i^T for orthogonal Phi
    np.testing.assert_allclose(np.abs(X).max(axis=1), 1.0, atol=1e-12)


def test_low_rank_matrix_rank_and_scale():
    A = g.low_rank_matrix(10, 12, 2, np.random.default_rng(0))
    assert np.linalg.matrix_rank(A) == 2
    assert np.linalg.norm(A) == pytest.approx(np.sqrt(120 / 10))


def test_completion_mask_count_and_coherent_entries():
    rng = np.random.default_rng(0)
    A = g.low_rank_matrix(10, 10, 2, rng)
    for tau in (0.0, 0.5, 1.0):
        m = g.completion_mask(A, 40, tau, np.random.default_rng(1))
        assert m.dtype == bool and m.sum() == 40
    _, _, P = g.local_coherence(A)
    m = g.completion_mask(A, 30, 1.0, np.random.default_rng(1))
    # the observed entries are the 30 with the largest local coherence
    assert P[m].min() >= np.sort(P.ravel())[-30] - 1e-12


def test_local_coherence_sums_to_dimension():
    A = g.low_rank_matrix(8, 6, 3, np.random.default_rng(0))
    mu, nu, _ = g.local_coherence(A)
    # sum_i ||U_i||^2 = r, so sum_i mu_i = n1
    assert mu.sum() == pytest.approx(8) and nu.sum() == pytest.approx(6)


@pytest.mark.parametrize("op", ["+", "-", "*"])
def test_modular_dataset_labels_brute_force(op):
    d = g.modular_dataset(7, op, 0.4, np.random.default_rng(0))
    x = np.concatenate([d["x_train"], d["x_test"]])
    y = np.concatenate([d["y_train"], d["y_test"]])
    assert len(x) == 49 and len(d["x_train"]) == round(0.4 * 49)
    assert len({tuple(r) for r in x}) == 49
    for (i, j), lab in zip(x, y):
        assert lab == eval(f"({i} {op} {j}) % 7")


# ------------------------------------------------------------------------------ optimisers vs references


def test_ista_reaches_sklearn_lasso():
    X, y, a = _cs(0)
    beta1 = 1e-3
    alpha = 0.9 * float(g.stability_bound(X))
    h = g.subgradient_descent(X, y, a, alpha=alpha, beta1=beta1, init=0.0, steps=20_000, method="ista",
                              eval_every=1000)
    ref = g.lasso_solution(X, y, beta1)
    np.testing.assert_allclose(h.final[0], ref, atol=1e-8)


def test_l2_only_gd_reaches_ridge_closed_form_from_large_init():
    X, y, a = _cs(1)
    beta2 = 1e-2
    alpha = 0.9 * float(g.stability_bound(X, beta2))
    h = g.subgradient_descent(X, y, a, alpha=alpha, beta2=beta2, init=10.0, steps=20_000, eval_every=1000)
    np.testing.assert_allclose(h.final[0], g.ridge_solution(X, y, beta2), atol=1e-9)


def test_l1_path_recovers_basis_pursuit_solution():
    X, y, a = _cs(2)
    bp = g.basis_pursuit(X, y)
    np.testing.assert_allclose(bp, a, atol=1e-8)  # exact recovery: s = 3, N = 30, n = 60
    h = g.subgradient_descent(X, y, a, alpha=0.1, beta1=1e-4, init=1e-6, steps=20_000, eval_every=100)
    err = np.linalg.norm(h.final[0] - bp) / np.linalg.norm(bp)
    assert err < 1e-2  # the subgradient iterate oscillates at O(alpha beta1) around the solution
    # ... while the l2-only path stays at the min-norm interpolant, far from it
    a_ls = g.min_norm_solution(X, y)
    assert np.linalg.norm(a_ls - bp) / np.linalg.norm(bp) > 0.3


def test_projected_subgradient_stays_feasible():
    X, y, a = _cs(3)
    h = g.subgradient_descent(X, y, a, alpha=0.1, beta1=1e-3, steps=2000, method="proj", eval_every=100)
    assert np.all(h.train_error[1:] < 1e-10)


def test_batched_and_unbatched_runs_agree():
    cases = [_cs(s) for s in range(3)]
    X = np.stack([c[0] for c in cases])
    y = np.stack([c[1] for c in cases])
    A = np.stack([c[2] for c in cases])
    alphas = np.array([0.05, 0.1, 0.08])
    betas = np.array([1e-4, 3e-4, 1e-3])
    hb = g.subgradient_descent(X, y, A, alpha=alphas, beta1=betas, steps=3000, eval_every=100)
    for b, (Xb, yb, ab) in enumerate(cases):
        h1 = g.subgradient_descent(Xb, yb, ab, alpha=alphas[b], beta1=betas[b], steps=3000, eval_every=100)
        np.testing.assert_allclose(hb.final[b], h1.final[0], rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(hb.recovery_error[:, b], h1.recovery_error[:, 0], rtol=1e-9)


def test_subgradient_two_phases_and_t2_law():
    X, y, a = _cs(4)
    a_ls = g.min_norm_solution(X, y)
    betas = np.array([5e-5, 2e-4])
    h = g.subgradient_descent(X, y, a, alpha=0.1, beta1=betas, steps=20_000, eval_every=50)
    t1, t2 = g.grokking_times(h, 1e-2)
    assert t2[0] >= 10 * t1[0]  # memorise early, generalise much later
    assert t2[0] / t2[1] == pytest.approx(4.0, rel=0.5)  # t2 ~ 1/(alpha beta)
    pred = g.predicted_t2(a_ls, a, 0.1, betas)
    assert np.all((t2 > pred / 3) & (t2 < 3 * pred))


def test_deep_identity_init_trap_and_fix():
    X, y, a = _cs(5, s=4)
    while np.all(a >= 0):  # pragma: no cover - needs a negative entry
        X, y, a = _cs(int(np.random.default_rng().integers(100)), s=4)
    hid = g.deep_hadamard_gd(X, y, a, depth=2, init=1e-3, parametrisation="identity", alpha=0.1, steps=3000,
                             eval_every=100)
    assert np.all(hid.final >= 0)  # identical factors: a = a_1^2 never turns negative
    huv = g.deep_hadamard_gd(X, y, a, depth=2, init=1e-3, parametrisation="u*u-v*v", alpha=0.1, steps=20_000,
                             eval_every=1000)
    assert huv.recovery_error[-1, 0] < 0.05 < hid.recovery_error[-1, 0]


def test_matrix_completion_svt_without_penalty_fits_observed_entries_only():
    rng = np.random.default_rng(0)
    A = g.low_rank_matrix(8, 8, 2, rng)
    m = g.completion_mask(A, 40, 0.0, rng)
    h = g.matrix_subgradient(m, A, alpha=1.0, beta_star=0.0, init=0.0, steps=5, method="svt", eval_every=1)
    assert h.train_error[-1, 0] < 1e-12
    np.testing.assert_allclose(h.final[0][~m], 0.0, atol=1e-12)
    assert h.norms["nuclear"][-1, 0] == pytest.approx(np.linalg.svd(h.final[0], compute_uv=False).sum())


def test_matrix_nuclear_penalty_recovers_low_rank():
    rng = np.random.default_rng(0)
    A = g.low_rank_matrix(10, 10, 2, rng)
    m = g.completion_mask(A, 80, 0.0, rng)
    h = g.matrix_subgradient(m, A, alpha=0.5, beta_star=1e-3, steps=4000, eval_every=100)
    h0 = g.matrix_subgradient(m, A, alpha=0.5, beta_star=0.0, steps=4000, eval_every=100)
    assert h.recovery_error[-1, 0] < 0.05 < h0.recovery_error[-1, 0]


# ------------------------------------------------------------------------------ metrics


def test_grokking_times_rules():
    steps = np.arange(6) * 10
    tr = np.array([[1.0], [0.5], [1e-3], [1e-3], [1e-3], [1e-3]])
    re = np.array([[1.0], [1e-3], [0.5], [1e-3], [1e-3], [1e-3]])
    h = g.History(steps, tr, re, {}, np.zeros((1, 2)))
    assert g.grokking_times(h, 1e-2) == (pytest.approx([20.0]), pytest.approx([10.0]))
    t1, t2 = g.grokking_times(h, 1e-2, rule="stays-below")
    assert t1[0] == 20 and t2[0] == 30
    t1, t2 = g.grokking_times(h, 1e-4)
    assert np.isnan(t1[0]) and np.isnan(t2[0])


def test_predicted_t2_formula_and_norms():
    a_ls = np.array([0.3, -0.1, 0.0])
    a_star = np.array([0.1, 0.0, 0.0])
    assert g.predicted_t2(a_ls, a_star, 0.1, 1e-3) == pytest.approx(0.2 / 1e-4)
    v = np.array([0.0, -3.0, 4.0, 1e-6])
    assert g.l0_norm(v) == 2 and g.l1_norm(v) == pytest.approx(7.000001) and g.l2_norm(v) == pytest.approx(5.0, rel=1e-9)
    M = np.diag([3.0, 2.0])
    assert g.nuclear_norm(M) == pytest.approx(5.0)
    assert g.loglog_slope([1, 10, 100], [5, 0.5, 0.05]) == pytest.approx(-1.0)


# ------------------------------------------------------------------------------ networks


def test_encoder_decoder_shapes_and_regularisation_matches_manual():
    model = g.EncoderDecoderMLP(11, 16, seed=0)
    x = torch.tensor([[1, 2], [3, 4]])
    assert model(x).shape == (2, 11)
    Ws = [W for W in model.parameters() if W.ndim == 2]
    want = sum(1e-3 * W.abs().sum() + 1e-2 * W.norm() + 1e-4 * torch.linalg.svdvals(W).sum() for W in Ws).detach()
    got = g.regularisation(model, l1=1e-3, l2=1e-2, nuclear=1e-4).detach()
    assert float(got) == pytest.approx(float(want), rel=1e-5)


def test_train_grokking_fits_training_set():
    torch.manual_seed(0)
    data = g.modular_dataset(7, "+", 0.5, np.random.default_rng(0))
    logs = g.train_grokking(g.EncoderDecoderMLP(7, 16, seed=0), data, lr=1e-2, epochs=200, eval_every=50)
    assert logs["train_acc"][-1] == 1.0 and logs["epoch"].tolist() == [0, 50, 100, 150, 200]


# ------------------------------------------------------------------------------ bad inputs


def test_bad_inputs_raise_clear_errors():
    X, y, a = _cs(0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="alpha"):
        g.subgradient_descent(X, y, a, alpha=0.0)
    with pytest.raises(ValueError, match="stability bound"):
        g.subgradient_descent(X, y, a, alpha=1.01 * float(g.stability_bound(X)))
    with pytest.raises(ValueError, match="y must have shape"):
        g.subgradient_descent(X, y[:-1], a)
    with pytest.raises(ValueError, match="a_star"):
        g.subgradient_descent(X, y, a[:-1])
    with pytest.raises(ValueError, match="beta1"):
        g.subgradient_descent(X, y, a, beta1=-1.0)
    with pytest.raises(ValueError, match="method"):
        g.subgradient_descent(X, y, a, method="adam")
    with pytest.raises(ValueError, match="init"):
        g.subgradient_descent(X, y, a, init=np.ones(3))
    with pytest.raises(ValueError, match="eval_every"):
        g.subgradient_descent(X, y, a, steps=10, eval_every=100)
    with pytest.raises(ValueError, match="s must be"):
        g.sparse_signal(5, 6, rng)
    with pytest.raises(TypeError, match="rng"):
        g.sparse_signal(5, 2, 0)
    with pytest.raises(ValueError, match="tau"):
        g.measurements(10, 20, 1.5, rng)
    with pytest.raises(ValueError, match="N must be"):
        g.completion_mask(np.eye(3), 10, 0.0, rng)
    with pytest.raises(ValueError, match="op"):
        g.modular_dataset(7, "/", 0.5, rng)
    with pytest.raises(ValueError, match="perfect square"):
        g.EncoderDecoderMLP(7, 10)
    with pytest.raises(ValueError, match="parametrisation"):
        g.deep_hadamard_gd(X, y, a, parametrisation="ones")
    with pytest.raises(ValueError, match="rng"):
        g.deep_hadamard_gd(X, y, a, parametrisation="random")
    with pytest.raises(TypeError, match="mask"):
        g.matrix_subgradient(np.ones((3, 3)), np.eye(3))
    with pytest.raises(ValueError, match="alpha"):
        g.matrix_subgradient(np.eye(3, dtype=bool), np.eye(3), alpha=2.5)
    with pytest.raises(ValueError, match="rule"):
        g.grokking_times(g.History(np.arange(2), np.ones((2, 1)), np.ones((2, 1)), {}, np.zeros((1, 1))), rule="x")
    with pytest.raises(ValueError, match="l1"):
        g.regularisation(g.EncoderDecoderMLP(5, 4), l1=-1.0)
    with pytest.raises(ValueError, match="beta2"):
        g.ridge_solution(X, y, 0.0)


def test_loglog_slope_with_groups_removes_problem_constants():
    x = np.tile([1e-5, 2e-5, 4e-5], 2)
    y = np.concatenate([1.0 / x[:3], 7.0 / x[3:]])
    y[5] = np.nan  # a run that never generalised
    assert g.loglog_slope(x, y, groups=np.repeat([0, 1], 3)) == pytest.approx(-1.0)
    assert g.loglog_slope(x, y) != pytest.approx(-1.0, abs=0.05)  # the pooled fit is biased


# ------------------------------------------------------------------------------ bad inputs: named arguments


def test_subgradient_descent_rejects_nonfinite_init():
    X, y, a = _cs(0)
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="init must be finite"):
            g.subgradient_descent(X, y, a, init=bad, steps=10, eval_every=5)
    with pytest.raises(ValueError, match="init must be finite"):
        g.subgradient_descent(X, y, a, init=np.full(X.shape[1], np.nan), steps=10, eval_every=5)


def test_subgradient_descent_rejects_string_hyperparameters():
    X, y, a = _cs(0)
    for name in ("alpha", "beta1", "beta2", "init"):
        with pytest.raises(TypeError, match=name):
            g.subgradient_descent(X, y, a, steps=10, eval_every=5, **{name: "0.1"})
    for name in ("steps", "eval_every"):
        kw = {"steps": 10, "eval_every": 5}
        kw[name] = "5"
        with pytest.raises(TypeError, match=name):
            g.subgradient_descent(X, y, a, **kw)
    with pytest.raises(TypeError, match="steps"):
        g.subgradient_descent(X, y, a, steps=10.0, eval_every=5)


def test_sparse_problems_rejects_wrong_length_tau():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"tau must be a scalar or have shape \(B,\) = \(3,\)"):
        g.sparse_problems(3, 10, 2, 5, [0.1, 0.2], rng)
    with pytest.raises(ValueError, match="tau must be in"):
        g.sparse_problems(2, 10, 2, 5, [0.1, np.nan], rng)
    X, y, a = g.sparse_problems(2, 10, 2, 5, [0.0, 1.0], rng)  # a valid (B,) tau still works
    assert X.shape == (2, 5, 10) and y.shape == (2, 5) and a.shape == (2, 10)


def test_matrix_subgradient_rejects_mask_of_wrong_shape():
    A = g.low_rank_matrix(10, 10, 2, np.random.default_rng(0))
    mask = g.completion_mask(A, 40, 0.0, np.random.default_rng(1))
    with pytest.raises(ValueError, match=r"mask must have shape \(10, 10\)"):
        g.matrix_subgradient(mask[:3], A, steps=2, eval_every=1)
    with pytest.raises(ValueError, match="init must be finite"):
        g.matrix_subgradient(mask, A, init=np.nan, steps=2, eval_every=1)


def test_stability_bound_rejects_non_matrix():
    with pytest.raises(ValueError, match="X must be a non-empty 2-D"):
        g.stability_bound(np.ones(3))
    with pytest.raises(ValueError, match="beta2"):
        g.stability_bound(np.eye(3), beta2=-1.0)


def test_loglog_slope_rejects_mismatched_x_and_y():
    with pytest.raises(ValueError, match="x and y must have the same number of entries"):
        g.loglog_slope([1.0, 10.0, 100.0], [5.0, 0.5])


def test_train_grokking_rejects_non_module_and_malformed_data():
    data = g.modular_dataset(5, "+", 0.5, np.random.default_rng(0))
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        g.train_grokking(None, data)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        g.train_grokking(object(), {})
    model = g.EncoderDecoderMLP(5, 4, seed=0)
    with pytest.raises(TypeError, match="data must be a dict"):
        g.train_grokking(model, [1, 2])
    with pytest.raises(ValueError, match="data is missing key"):
        g.train_grokking(model, {})
    with pytest.raises(ValueError, match=r"data\['x_train'\]"):
        g.train_grokking(model, {**data, "x_train": data["x_train"][:, :1]})
    with pytest.raises(TypeError, match="lr"):
        g.train_grokking(model, data, lr="0.01")


def test_predicted_t2_rejects_nonfinite_alpha_and_mismatched_shapes():
    with pytest.raises(ValueError, match="alpha must be finite"):
        g.predicted_t2(np.ones(3), np.zeros(3), np.nan, 1e-3)
    with pytest.raises(ValueError, match="a_ls and a_star"):
        g.predicted_t2(np.ones(3), np.zeros(2), 0.1, 1e-3)


def test_deep_hadamard_gd_rejects_infinite_init():
    X, y, a = _cs(0)
    with pytest.raises(ValueError, match="init must be finite"):
        g.deep_hadamard_gd(X, y, a, init=np.inf, steps=2, eval_every=1)


def test_grokking_times_rejects_non_history_and_nan_threshold():
    with pytest.raises(TypeError, match="history"):
        g.grokking_times({"steps": []})
    h = g.History(np.arange(2), np.ones((2, 1)), np.ones((2, 1)), {}, np.zeros((1, 1)))
    with pytest.raises(ValueError, match="threshold must be finite"):
        g.grokking_times(h, threshold=np.nan)


def test_rel_recovery_error_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="a and a_star"):
        g.rel_recovery_error(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="y must have shape"):
        g.rel_train_error(np.ones((4, 3)), np.ones(3), np.ones(5))


def test_regularisation_rejects_non_module_and_nonfinite_weight():
    with pytest.raises(TypeError, match="model"):
        g.regularisation(object(), l1=1e-3)
    with pytest.raises(ValueError, match="l2 must be finite"):
        g.regularisation(g.EncoderDecoderMLP(5, 4), l2=np.inf)
