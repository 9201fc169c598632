"""The loops a notebook cell calls: fitting the models of a benchmark and scoring them."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from icml25.checks import check_choice, check_int, check_rng

from .baselines import (
    BlackBoxShift,
    TwoStage,
    graph_ges,
    graph_notears,
    graph_pc,
    z_test_scores,
)
from .data import Benchmark, Split
from .defaults import DEFAULTS
from .method import GIM, GIMNet, SCMModule
from .metrics import mmd_rbf_many, shd, target_auroc

__all__ = [
    "fit_gim",
    "fit_baselines",
    "ood_mmd",
    "target_inference_observed",
    "target_prediction_unseen",
    "graph_comparison",
    "dose_response",
    "features",
]


def features(split: Split, drop_dose: bool = False) -> np.ndarray:
    """The features of a split, ``[z, c]``, or ``z`` alone (the no-dose ablation)."""
    return split.gammas[:, :-1] if drop_dose else split.gammas


def fit_gim(
    bench: Benchmark,
    rng: np.random.Generator,
    n_steps: int = DEFAULTS.n_steps,
    mode: str = "map",
    S: int | None = None,
    lam1: float = DEFAULTS.lam1,
    lamI: float = DEFAULTS.lamI,
    lr: float = DEFAULTS.lr,
    drop_dose: bool = False,
    use_d0: bool = True,
    known_graph: bool = False,
    kind: str = "linear",
    hidden: int = DEFAULTS.hidden,
    device: str = "cpu",
) -> GIM:
    """A GIM fit on the training split of ``bench`` (ablations: ``drop_dose``, ``use_d0``, ``known_graph``).

    ``S`` defaults to ``DEFAULTS.S`` for ``mode="mc"`` and ``DEFAULTS.S_map`` otherwise.

    Raises:
        ValueError: as :meth:`GIM.fit`. TypeError: ``rng`` not a Generator.
    """
    rng = check_rng(rng)
    S = (DEFAULTS.S if mode == "mc" else DEFAULTS.S_map) if S is None else S
    G = features(bench.train, drop_dose)
    d = bench.D0.shape[1]
    scm = SCMModule(d, kind, rng=rng, mask=(bench.W != 0) if known_graph else None)
    model = GIM(scm, GIMNet(G.shape[1], d, hidden, rng=rng))
    return model.fit(
        bench.D0,
        bench.train.X,
        G,
        n_steps,
        S,
        lam1,
        lamI,
        mode,
        rng,
        lr=lr,
        use_d0=use_d0,
        device=device,
    )


def fit_baselines(
    bench: Benchmark,
    rng: np.random.Generator,
    n_steps: int = DEFAULTS.n_steps,
    S: int = DEFAULTS.S_map,
    kind: str = "linear",
    device: str = "cpu",
) -> dict[str, Any]:
    """The black-box shift MLP and the two-stage pipeline (MLP and kNN second stages share stage 1)."""
    rng = check_rng(rng)
    bb = BlackBoxShift(rng).fit(bench.D0, bench.train.X, bench.train.gammas)
    d, q = bench.D0.shape[1], bench.train.gammas.shape[1]
    two = TwoStage(d, q, rng, kind=kind).fit(
        bench.D0,
        bench.train.X,
        bench.train.gammas,
        n_steps,
        S,
        DEFAULTS.lam1,
        DEFAULTS.lamI,
        device=device,
    )
    knn = TwoStage(d, q, rng, regressor="knn")
    knn.gim = two.gim  # the same stage-1 fit
    knn.fit_stage2(bench.train.gammas)
    return {"black-box": bb, "two-stage (MLP)": two, "two-stage (kNN)": knn}


def ood_mmd(
    predictors: dict[str, Callable[[np.ndarray, int, np.random.Generator], np.ndarray]],
    bench: Benchmark,
    bandwidth: float,
    n_pred: int,
    rng: np.random.Generator,
    splits: tuple[str, ...] = ("partial", "full"),
    unbiased: bool = True,
) -> tuple[list[dict], dict[tuple[str, str], np.ndarray]]:
    """Per-context ``MMD^2`` between each predictor's ``n_pred`` cells and the true cells of a split.

    ``predictors`` maps a name to ``f(split_name, n, rng) -> (K, n, d)``. Returns summary rows
    (median, mean, 25/75% quantiles) and the per-context values by ``(method, split)``.
    """
    rng = check_rng(rng)
    n_pred = check_int(n_pred, "n_pred", low=2)
    rows, per = [], {}
    for split in splits:
        truth = getattr(bench, split).X
        for name, f in predictors.items():
            v = mmd_rbf_many(f(split, n_pred, rng), truth, bandwidth, unbiased=unbiased)
            per[(name, split)] = v
            rows.append(
                dict(
                    method=name,
                    split=split,
                    median_mmd=float(np.median(v)),
                    mean_mmd=float(v.mean()),
                    q25=float(np.quantile(v, 0.25)),
                    q75=float(np.quantile(v, 0.75)),
                )
            )
    return rows, per


def target_inference_observed(
    model: GIM, bench: Benchmark, free: TwoStage
) -> dict[str, float]:
    """Target AUROC on the *training* contexts: the GIM's posterior given the cells
    (:meth:`GIM.posterior_target_probs`), its read-out ``sigmoid(g(gamma_k))``, its
    per-context MAP estimates (``mode="map"``), the z-test on the contexts' cells and the
    feature-free per-context fits (stage 1 of the two-stage pipeline)."""
    tr = bench.train
    out = {
        "GIM posterior": target_auroc(
            model.posterior_target_probs(tr.X, tr.gammas), tr.targets
        ),
        "GIM sigmoid(g(gamma))": target_auroc(
            model.target_probs(tr.gammas), tr.targets
        ),
        "z-test": target_auroc(z_test_scores(bench.D0, tr.X), tr.targets),
        "per-context fits": target_auroc(free.gim.context_probs, tr.targets),
    }
    if model.context_probs is not None:
        out["GIM per-context MAP"] = target_auroc(model.context_probs, tr.targets)
    return out


def target_prediction_unseen(
    model: GIM,
    bench: Benchmark,
    two_stage: dict[str, TwoStage],
    drop_dose: bool = False,
) -> dict[str, float]:
    """Target AUROC on the fully OOD (new-drug) contexts from features alone; chance is 0.5. The
    z-test on those contexts' own cells is returned as a reference it would be unfair to compare."""
    full = bench.full
    out = {
        "GIM": target_auroc(model.target_probs(features(full, drop_dose)), full.targets)
    }
    for name, ts in two_stage.items():
        out[name] = target_auroc(ts.target_probs(full.gammas), full.targets)
    out["chance"] = 0.5
    out["z-test on the test cells (sees the data)"] = target_auroc(
        z_test_scores(bench.D0, full.X), full.targets
    )
    return out


def graph_comparison(
    model: GIM,
    bench: Benchmark,
    threshold: float = DEFAULTS.threshold,
    methods: tuple[str, ...] = ("PC", "GES", "NOTEARS"),
    pooled: tuple[str, ...] = ("PC", "GES"),
) -> list[dict]:
    """SHD to the true graph: the GIM's read-out against PC / GES / NOTEARS on ``D0``, and the
    ``pooled`` ones also on all cells pooled (observational and interventional)."""
    for m in (*methods, *pooled):
        check_choice(m, "methods", ("PC", "GES", "NOTEARS"))
    true = bench.W != 0
    rows = [
        dict(
            method="GIM (D0 + contexts)",
            shd=shd(model.graph(threshold), true),
            edges=int(model.graph(threshold).sum()),
            true_edges=int(true.sum()),
        )
    ]
    fns = {"PC": graph_pc, "GES": graph_ges, "NOTEARS": graph_notears}
    pooled_cells = np.concatenate(
        [bench.D0, bench.train.X.reshape(-1, bench.D0.shape[1])]
    )
    for m in methods:
        for label, data in (
            (("D0", bench.D0), ("pooled", pooled_cells))
            if m in pooled
            else (("D0", bench.D0),)
        ):
            A = fns[m](data)
            rows.append(
                dict(
                    method=f"{m} ({label})",
                    shd=shd(A, true),
                    edges=int(A.sum()),
                    true_edges=int(true.sum()),
                )
            )
    return rows


def dose_response(model: GIM, bench: Benchmark, doses: np.ndarray) -> list[dict]:
    """For every (training drug, true target): the predicted shift ``m_phi(z, c)`` and the target
    probability against the true Hill shift on the dose grid ``doses`` (standardised units)."""
    lib = bench.library
    rows = []
    for i in range(lib.z.shape[0]):
        G = np.column_stack([np.repeat(lib.z[i][None], len(doses), 0), doses])
        m, p = model.shift_mean(G), model.target_probs(G)
        for j in np.flatnonzero(lib.targets[i]):
            true = np.array([lib.shift(i, c)[j] for c in doses]) / bench.scale[j]
            rows.append(
                dict(
                    drug=i,
                    target=int(j),
                    doses=np.asarray(doses),
                    true=true,
                    pred=m[:, j],
                    prob=p[:, j],
                )
            )
    return rows
