"""Learning-augmented hierarchical clustering with a splitting oracle (chapter 12).

Braverman, Ergun, Wang and Zhou, "Learning-Augmented Hierarchical Clustering", ICML 2025
(arXiv 2506.05495). The paper's body was not readable for this chapter: its theorems are quoted
from the abstract, and the noise model and the algorithms here are labelled reconstructions.

Modules: ``defaults`` (:data:`DEFAULTS`), ``trees`` (trees, objectives, the exact DP), ``oracle``
(the splitting oracle), ``method`` (the oracle algorithms), ``baselines``, ``data``, ``experiments``,
``claims`` (:data:`CLAIMS`, the paper's claims as the book judges them, :mod:`icml25.claims`).
"""

# trees first: it and _checks import each other (_checks needs the Tree class)
from .trees import (
    Tree,
    balanced_tree,
    dasgupta_cost,
    enumerate_binary_trees,
    mw_revenue,
    optimal_tree,
    random_binary_tree,
    same_tree,
    triplet_revenue,
)
from .baselines import LINKAGES, linkage_tree, random_tree, spectral_tree
from .claims import CLAIMS
from .data import hard_instance_search, hsbm, linkage_gap, random_graph
from .defaults import DEFAULTS, HCOraclesDefaults
from .experiments import (
    decoy_comparison,
    hsbm_comparison,
    insertion_queries,
    mw_scaling,
    ratio_sweep,
)
from .method import (
    all_triplet_counts,
    build_from_counts,
    build_insertion,
    build_nearlinear_mw,
    debiased_lca_sizes,
)
from .oracle import AmplifiedOracle, SplittingOracle, amplify

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "HCOraclesDefaults",
    "Tree",
    "random_binary_tree",
    "balanced_tree",
    "enumerate_binary_trees",
    "same_tree",
    "dasgupta_cost",
    "mw_revenue",
    "triplet_revenue",
    "optimal_tree",
    "SplittingOracle",
    "AmplifiedOracle",
    "amplify",
    "build_insertion",
    "build_from_counts",
    "build_nearlinear_mw",
    "debiased_lca_sizes",
    "all_triplet_counts",
    "LINKAGES",
    "linkage_tree",
    "spectral_tree",
    "random_tree",
    "hsbm",
    "random_graph",
    "hard_instance_search",
    "linkage_gap",
    "insertion_queries",
    "ratio_sweep",
    "hsbm_comparison",
    "mw_scaling",
    "decoy_comparison",
]
