"""Generative intervention models for causal perturbation modelling (chapter 04).

Schneider, Lorch, Kilbertus, Schölkopf and Krause, "Generative Intervention Models for Causal
Perturbation Modeling", ICML 2025 (arXiv 2411.14003). The paper's body and its official code
(``NoraSchneider/gim``) could not be read for this chapter: the benchmark sizes are the paper's
(verified), the concrete likelihood, GIM family, objectives and generators are labelled
reconstructions (see :mod:`icml25.gim.method`).

Modules: ``defaults`` (:data:`DEFAULTS`), ``data`` (SCMs, Hill drugs, the benchmark), ``method``
(the SCM module, the GIM network and the joint fit), ``metrics``, ``baselines``, ``experiments``, ``claims`` (:data:`CLAIMS`).
"""

from . import baselines, claims, data, experiments, method, metrics
from .baselines import (
    BlackBoxShift,
    TwoStage,
    graph_ges,
    graph_notears,
    graph_pc,
    no_shift_predict,
    z_test_scores,
)
from .data import (
    Benchmark,
    DrugLibrary,
    LinearSCM,
    MLPSCM,
    Split,
    hill,
    make_benchmark,
    make_drug_library,
    random_dag,
)
from .claims import CLAIMS
from .defaults import DEFAULTS, GIMDefaults
from .experiments import (
    dose_response,
    features,
    fit_baselines,
    fit_gim,
    graph_comparison,
    ood_mmd,
    target_inference_observed,
    target_prediction_unseen,
)
from .method import GIM, GIMNet, SCMModule, notears_h, prune_to_dag
from .metrics import (
    energy_distance,
    median_bandwidth,
    mmd_rbf,
    mmd_rbf_many,
    shd,
    target_auroc,
    wasserstein2,
)

__all__ = [
    "DEFAULTS",
    "GIMDefaults",
    "CLAIMS",
    *data.__all__,
    *method.__all__,
    *metrics.__all__,
    *baselines.__all__,
    *experiments.__all__,
]
