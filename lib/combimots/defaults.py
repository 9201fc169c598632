"""The paper's settings (CombiMOTS, Southiratn et al., ICML 2025), read from the official code's
``legacy`` branch (``pmcts/generate/generate.py`` defaults, ``node.py``, ``generator.py``, ``10-evaluate.py``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CombiMOTSDefaults", "DEFAULTS"]


@dataclass(frozen=True)
class CombiMOTSDefaults:
    """Settings of the paper's generator and evaluation (official ``legacy`` code).

    Attributes:
        c: exploration weight of the Pareto UCB (``explore_weight``).
        variant: Pareto UCB formula, ``"pmcts"`` (default) or ``"aizynthfinder"``.
        max_reactions: reactions per molecule (1 = the one-step Enamine REAL space).
        n_rollouts: rollouts of a generation run (README).
        diversity_decay: the building-block diversity factor is ``exp(-(count - 1) / diversity_decay)``.
        sim_threshold: Tanimoto threshold of the search-space reduction (blocks similar to a fragment).
        novelty_threshold: a molecule is novel when its max Tanimoto to the training actives is below it.
        metric_radius, metric_n_bits: Morgan fingerprint of novelty and diversity (radius 3, 2048 bits).
        objective_radius, objective_n_bits: Morgan fingerprint of the similarity stand-in oracles.
        dock_scale: docking objective ``-Vina / dock_scale`` (kcal/mol).
        dual_active_threshold: predicted activity for a dual active (post-processing).
        n_real_blocks: Enamine REAL building blocks shipped by synthemol 1.0.4.
        n_reactions: REAL reaction templates.
    """

    c: float = 10.0
    variant: str = "pmcts"
    max_reactions: int = 1
    n_rollouts: int = 5000
    diversity_decay: float = 100.0
    sim_threshold: float = 0.4
    novelty_threshold: float = 0.4
    metric_radius: int = 3
    metric_n_bits: int = 2048
    objective_radius: int = 2
    objective_n_bits: int = 2048
    dock_scale: float = 20.0
    dual_active_threshold: float = 0.5
    n_real_blocks: int = 139_493
    n_reactions: int = 13


DEFAULTS = CombiMOTSDefaults()
