"""What the GIM is compared against, built from libraries (scikit-learn, causal-learn, gcastle).

Which baselines the paper used could not be read here; these are the chapter's choices, one per
question: a black-box shift predictor (can structure match it out of distribution?), a two-stage
causal pipeline (does learning the feature map jointly help?), a naive marginal test (does the
causal model help find *direct* targets?) and observational structure learners (the graph).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_choice, check_int, check_real, check_rng

from ._checks import _check_contexts, _check_gammas
from .method import GIM, GIMNet, SCMModule

__all__ = [
    "BlackBoxShift",
    "no_shift_predict",
    "z_test_scores",
    "TwoStage",
    "graph_pc",
    "graph_ges",
    "graph_notears",
]


class BlackBoxShift:
    """``x_hat = x_obs + Delta(gamma)``: a ``sklearn`` ``MLPRegressor`` from features to the mean shift.

    Trained on the per-context mean shifts ``mean(D_k) - mean(D0)``; predicts by adding the
    predicted shift to resampled observational cells (an unstructured, black-box predictor).

    Args:
        hidden: widths of the hidden layers. rng: seeds scikit-learn's ``random_state``.
    """

    def __init__(
        self, rng: np.random.Generator, hidden: tuple[int, ...] = (64, 64)
    ) -> None:
        from sklearn.neural_network import MLPRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        rng = check_rng(rng)
        self.model = make_pipeline(
            StandardScaler(),
            MLPRegressor(
                hidden_layer_sizes=tuple(hidden),
                max_iter=2000,
                random_state=int(rng.integers(2**31)),
            ),
        )
        self.D0: np.ndarray | None = None

    def fit(self, D0: Any, X_ctx: Any, gammas: Any) -> "BlackBoxShift":
        """Fit the regressor on ``(gammas (K, q), mean(X_ctx, 1) - mean(D0, 0))``.

        Raises:
            ValueError: shapes that disagree or non-finite data.
        """
        X = _check_contexts(X_ctx, "X_ctx")
        D0 = check_array(D0, "D0", shape=(None, X.shape[2]))
        G = _check_gammas(gammas, K=X.shape[0])
        self.D0 = D0
        self.model.fit(G, X.mean(1) - D0.mean(0))
        return self

    def predict(self, gamma: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        """(B, n, d): ``n`` resampled observational cells plus the predicted shift, per feature row."""
        if self.D0 is None:
            raise ValueError("call fit before predict")
        G = check_array(gamma, "gamma", ndim=2)
        n, rng = check_int(n, "n", low=1), check_rng(rng)
        delta = self.model.predict(G).reshape(G.shape[0], -1)
        idx = rng.integers(0, self.D0.shape[0], (G.shape[0], n))
        return self.D0[idx] + delta[:, None, :]


def no_shift_predict(
    D0: Any, n_contexts: int, n: int, rng: np.random.Generator
) -> np.ndarray:
    """(n_contexts, n, d) resampled observational cells: the "nothing changes" predictor."""
    D0 = check_array(D0, "D0", ndim=2)
    n_contexts, n, rng = (
        check_int(n_contexts, "n_contexts", low=1),
        check_int(n, "n", low=1),
        check_rng(rng),
    )
    return D0[rng.integers(0, D0.shape[0], (n_contexts, n))]


def z_test_scores(D0: Any, X_ctx: Any) -> np.ndarray:
    """``|z|`` of the two-sample mean-shift test per context and variable, (K, d).

    ``z = (mean(D_k) - mean(D0)) / sqrt(v0 / n_k + v0 / n0)`` with ``v0`` the observational
    variance. It flags every variable whose *marginal* moves, so descendants of a target too.

    Raises:
        ValueError: shapes that disagree, non-finite data, or a variable constant in ``D0``.
    """
    X = _check_contexts(X_ctx, "X_ctx")
    D0 = check_array(D0, "D0", shape=(None, X.shape[2]))
    v0 = D0.var(0, ddof=1)
    if not np.all(v0 > 0):
        raise ValueError(
            f"D0 must vary in every variable (zero observational variance in {np.flatnonzero(v0 <= 0).tolist()})"
        )
    return np.abs(X.mean(1) - D0.mean(0)) / np.sqrt(v0 / X.shape[1] + v0 / D0.shape[0])


class TwoStage:
    """Two stages: per-context ``(I_k, psi_k)`` fits with the same SCM, then a regressor from ``gamma``.

    Stage 1 is :meth:`GIM.fit` with ``mode="free"`` (no feature map); stage 2 maps features to
    the inferred target probabilities and shifts with ``sklearn`` ``MLPRegressor`` or
    ``KNeighborsRegressor`` (``regressor="mlp"`` / ``"knn"``). Prediction thresholds the
    regressed probabilities at 1/2 and samples the stage-1 SCM.
    """

    def __init__(
        self,
        d: int,
        q: int,
        rng: np.random.Generator,
        kind: str = "linear",
        regressor: str = "mlp",
    ) -> None:
        self.rng = check_rng(rng)
        self.regressor = check_choice(regressor, "regressor", ("mlp", "knn"))
        self.gim = GIM(SCMModule(d, kind, rng=self.rng), GIMNet(q, d, 8, rng=self.rng))
        self.models: list[Any] = []

    def fit(
        self,
        D0: Any,
        X_ctx: Any,
        gammas: Any,
        n_steps: int,
        S: int,
        lam1: float,
        lamI: float,
        lr: float = 1e-2,
        device: str = "cpu",
    ) -> "TwoStage":
        """Stage 1 then stage 2 (arguments as :meth:`GIM.fit`). Raises as :meth:`GIM.fit`."""
        self.gim.fit(
            D0,
            X_ctx,
            gammas,
            n_steps,
            S,
            lam1,
            lamI,
            "free",
            self.rng,
            lr=lr,
            device=device,
        )
        self.fit_stage2(gammas)
        return self

    def fit_stage2(self, gammas: Any) -> "TwoStage":
        """Refit only the regressors (e.g. with other features) on the stage-1 estimates."""
        from sklearn.neighbors import KNeighborsRegressor
        from sklearn.neural_network import MLPRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        G = _check_gammas(gammas, K=self.gim.context_probs.shape[0])
        self.models = []
        for y in (
            self.gim.context_probs,
            self.gim.context_psi * (self.gim.context_probs > 0.5),
        ):
            reg = (
                MLPRegressor(
                    hidden_layer_sizes=(64, 64),
                    max_iter=2000,
                    random_state=int(self.rng.integers(2**31)),
                )
                if self.regressor == "mlp"
                else KNeighborsRegressor(n_neighbors=4)
            )
            self.models.append(make_pipeline(StandardScaler(), reg).fit(G, y))
        return self

    def target_probs(self, gamma: Any) -> np.ndarray:
        """(B, d) regressed target probabilities, clipped to [0, 1]."""
        G = check_array(gamma, "gamma", ndim=2)
        return np.clip(self.models[0].predict(G), 0.0, 1.0)

    def predict(
        self, gamma: Any, n: int, rng: np.random.Generator, threshold: float = 0.3
    ) -> np.ndarray:
        """(B, n, d) cells of the stage-1 SCM under the regressed MAP interventions."""
        G = check_array(gamma, "gamma", ndim=2)
        I = (self.target_probs(G) > 0.5).astype(float)
        psi = self.models[1].predict(G)
        return self.gim.scm.sample(n, I, psi, check_rng(rng), self.gim.graph(threshold))


def _causallearn_to_adjacency(G: np.ndarray) -> np.ndarray:
    """causal-learn's endpoint matrix -> bool adjacency (``i -> j``: ``G[j, i] = 1, G[i, j] = -1``;
    an undirected ``i - j`` (both -1) becomes both directions)."""
    d = G.shape[0]
    A = np.zeros((d, d), dtype=bool)
    for i in range(d):
        for j in range(d):
            if i != j and G[i, j] == -1 and G[j, i] in (1, -1):
                A[i, j] = True
    return A


def graph_pc(X: Any, alpha: float = 0.05) -> np.ndarray:
    """The CPDAG of causal-learn's PC (Fisher-z tests at level ``alpha``) as a bool adjacency (d, d)."""
    from causallearn.search.ConstraintBased.PC import pc

    X = check_array(X, "X", ndim=2)
    alpha = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    cg = pc(X, alpha, "fisherz", show_progress=False)
    return _causallearn_to_adjacency(cg.G.graph)


def graph_ges(X: Any) -> np.ndarray:
    """The CPDAG of causal-learn's GES (BIC score) as a bool adjacency (d, d)."""
    from causallearn.search.ScoreBased.GES import ges

    X = check_array(X, "X", ndim=2)
    return _causallearn_to_adjacency(ges(X, score_func="local_score_BIC")["G"].graph)


def graph_notears(X: Any, lam1: float = 0.1, threshold: float = 0.3) -> np.ndarray:
    """gcastle's linear NOTEARS (l2 loss, ``lambda1 = lam1``, ``w_threshold = threshold``), bool (d, d)."""
    import logging
    import os

    os.environ.setdefault("CASTLE_BACKEND", "pytorch")
    # imported before the level is set: its basicConfig puts the root logger at INFO
    import castle  # noqa: F401

    # castle logs its backend and every iteration at INFO
    logging.getLogger().setLevel(logging.WARNING)
    from castle.algorithms import Notears

    X = check_array(X, "X", ndim=2)
    lam1 = check_real(lam1, "lam1", low=0.0)
    threshold = check_real(
        threshold, "threshold", low=0.0, high=1.0, low_open=True, high_open=True
    )
    model = Notears(lambda1=lam1, w_threshold=threshold)
    model.learn(X)
    return np.asarray(model.causal_matrix) != 0
