"""Predictive consistency learning (chapter 19).

Li, Ma, Yang, Wu, Zha, Yan, "Generative Modeling Reinvents Supervised Learning: Label Repurposing
with Predictive Consistency Learning", ICML 2025. The official code and the full text could not be
read for this chapter: the loss and the two algorithms follow the paper as quoted; the schedule,
categorical kernel, law of ``t, t'``, stop-gradient, consistency distance, inference times and
re-corruption are labelled reconstructions, each an option (see :data:`DEFAULTS`).

Modules: ``defaults``, ``method`` (corruption, loss, inference), ``networks``, ``baselines``,
``metrics``, ``data``, ``experiments``, ``claims`` (:data:`CLAIMS`, the paper's claims as the book
judges them, :mod:`icml25.claims`).
"""

from .baselines import ensemble_predict, sl_loss, sl_predict
from .claims import CLAIMS
from .data import (
    SHAPE_NAMES,
    digits_inpainting,
    linear_gaussian,
    linear_gaussian_posterior,
    spring_nbody,
    synthetic_shapes,
)
from .defaults import DEFAULTS, PCLDefaults
from .experiments import (
    EVAL_TS,
    digits_experiment,
    nbody_experiment,
    shapes_experiment,
    to_torch,
    train,
)
from .method import (
    CONSISTENCIES,
    LABEL_TYPES,
    RECORRUPTS,
    STOPGRADS,
    T_LAWS,
    categorical_label_noise,
    ddpm_alpha_bar,
    embedding_label_noise,
    gaussian_label_noise,
    hint_dependence,
    inference_times,
    pcl_loss,
    pcl_predict,
    predict_from_hint,
    sample_times,
)
from .metrics import confusion, miou, mse, pixel_acc
from .networks import HintedEGNN, HintedMLP, HintedUNet, TimeEmbedding, n_parameters

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "PCLDefaults",
    "LABEL_TYPES",
    "T_LAWS",
    "STOPGRADS",
    "CONSISTENCIES",
    "RECORRUPTS",
    "ddpm_alpha_bar",
    "gaussian_label_noise",
    "categorical_label_noise",
    "embedding_label_noise",
    "sample_times",
    "pcl_loss",
    "inference_times",
    "pcl_predict",
    "predict_from_hint",
    "hint_dependence",
    "TimeEmbedding",
    "HintedUNet",
    "HintedMLP",
    "HintedEGNN",
    "n_parameters",
    "sl_loss",
    "sl_predict",
    "ensemble_predict",
    "miou",
    "pixel_acc",
    "mse",
    "confusion",
    "SHAPE_NAMES",
    "synthetic_shapes",
    "digits_inpainting",
    "spring_nbody",
    "linear_gaussian",
    "linear_gaussian_posterior",
    "train",
    "to_torch",
    "shapes_experiment",
    "digits_experiment",
    "nbody_experiment",
    "EVAL_TS",
]
