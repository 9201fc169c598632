"""Grokking beyond the Euclidean norm (Tikeng Notsawo, Dumas & Rabusseau, ICML 2025).

A model trained by (sub)gradient descent on ``loss + beta * h`` with a *small* penalty ``h`` that
favours a property P (sparsity: ``||a||_1``; low rank: ``||A||_*``) first memorises the training
data (phase 1, ending at ``t1``) and only later drifts to the P-solution that generalises (phase 2,
ending at ``t2 ~ t1 + ||a_ls - a*||_inf / (alpha beta)``).

The package holds

- :mod:`.defaults`: the paper's settings, ``DEFAULTS`` (``DEFAULTS.sparse.n == 100``);
- :mod:`.data`: the problems (sparse recovery, matrix completion, modular arithmetic);
- :mod:`.method`: the optimisers (batched over configurations, float64);
- :mod:`.metrics`: the run record :class:`History`, ``t1``, ``t2``, norms, the ``t2`` predictor;
- :mod:`.baselines`: the references (min-norm least squares, ridge, scikit-learn's Lasso, basis
  pursuit by linear programming), each answer checked before it is returned;
- :mod:`.networks`: the modular-arithmetic MLP, its penalties and training loop.

Everything follows the official code (``Tikquuss/grokking_beyong_l2_norm``) except where a
docstring says otherwise; the one deliberate change is the deep Hadamard initialisation
(:func:`deep_hadamard_gd`): the official identical-factor ("identity") start keeps every entry of
``a = a_1 * a_2`` non-negative for depth 2, so it is offered only to show that trap.
"""

from __future__ import annotations

from .baselines import basis_pursuit, lasso_solution, min_norm_solution, ridge_solution
from .data import (
    completion_mask,
    local_coherence,
    low_rank_matrix,
    measurements,
    modular_dataset,
    sparse_problems,
    sparse_signal,
)
from .defaults import DEFAULTS, CompletionDefaults, GrokkingDefaults, MLPDefaults, SparseDefaults
from .method import (
    _matrix_subgradient,
    _subgradient_descent,
    deep_hadamard_gd,
    matrix_subgradient,
    stability_bound,
    subgradient_descent,
)
from .metrics import (
    History,
    grokking_times,
    l0_norm,
    l1_norm,
    l2_norm,
    loglog_slope,
    nuclear_norm,
    predicted_t2,
    rel_recovery_error,
    rel_train_error,
)
from .networks import EncoderDecoderMLP, regularisation, train_grokking

__all__ = [
    "DEFAULTS",
    "GrokkingDefaults",
    "SparseDefaults",
    "CompletionDefaults",
    "MLPDefaults",
    "History",
    "sparse_signal",
    "measurements",
    "sparse_problems",
    "low_rank_matrix",
    "local_coherence",
    "completion_mask",
    "modular_dataset",
    "min_norm_solution",
    "ridge_solution",
    "lasso_solution",
    "basis_pursuit",
    "stability_bound",
    "subgradient_descent",
    "deep_hadamard_gd",
    "matrix_subgradient",
    "rel_train_error",
    "rel_recovery_error",
    "l0_norm",
    "l1_norm",
    "l2_norm",
    "nuclear_norm",
    "grokking_times",
    "predicted_t2",
    "loglog_slope",
    "EncoderDecoderMLP",
    "regularisation",
    "train_grokking",
]

# the private functions the chapter shows (common.show_source): the pure math of the public ones
_SHOWN = (_subgradient_descent, _matrix_subgradient)
