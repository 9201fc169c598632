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
- :mod:`.networks`: the modular-arithmetic MLP, its penalties and training loop;
- :mod:`.claims`: ``CLAIMS``, the paper's claims as the book judges them (:mod:`icml25.claims`).

Everything follows the official code (``Tikquuss/grokking_beyong_l2_norm``) except where a
docstring says otherwise; the one deliberate change is the deep Hadamard initialisation
(:func:`deep_hadamard_gd`): the official identical-factor ("identity") start keeps every entry of
``a = a_1 * a_2`` non-negative for depth 2, so it is offered only to show that trap.
"""

from __future__ import annotations

from .baselines import basis_pursuit, lasso_solution, min_norm_solution, ridge_solution
from .claims import CLAIMS
from .data import (
    completion_mask,
    local_coherence,
    low_rank_matrix,
    measurements,
    modular_dataset,
    sparse_problems,
    sparse_signal,
)
from .defaults import (
    DEFAULTS,
    CompletionDefaults,
    GrokkingDefaults,
    MLPDefaults,
    SparseDefaults,
)
from .method import (
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

# the pure math the chapter shows with show_source (book/authoring.md)
from .method import _matrix_subgradient, _subgradient_descent  # noqa: F401

from . import baselines, claims, data, defaults, method, metrics, networks  # noqa: E402

__all__ = [
    "CLAIMS",
    *defaults.__all__,
    *data.__all__,
    *method.__all__,
    *metrics.__all__,
    *baselines.__all__,
    *networks.__all__,
]
