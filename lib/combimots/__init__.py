"""CombiMOTS: Pareto Monte Carlo tree search for dual-target molecules in a synthesizable space (chapter 14).

Southiratn, Koo, Lu and Kim, "CombiMOTS: Combinatorial Multi-Objective Tree Search for Dual-Target
Molecule Generation", ICML 2025. The method is reconstructed from the official code (``Tibogoss/CombiMOTS``,
branch ``legacy``; facts only, nothing copied); the paper's result tables were not read.

Modules: ``defaults`` (:data:`DEFAULTS`), ``space`` (Enamine REAL blocks and templates from ``synthemol``),
``objectives`` (stand-in oracles, QED, SA, DOCKSTRING docking), ``method`` (Pareto UCB, the tree search),
``metrics``, ``baselines`` (SyntheMol's Generator, random products, NSGA-II), ``experiments``, ``claims``.
The Pareto mask, non-dominated sort, hypervolume and bulk Tanimoto live in :mod:`icml25.kernels.dominance`
and :mod:`icml25.kernels.tanimoto` (shared with chapter 18).
"""

from . import (
    baselines,
    claims,
    defaults,
    experiments,
    method,
    metrics,
    objectives,
    space,
)
from .baselines import *  # noqa: F401,F403
from .claims import CLAIMS
from .defaults import DEFAULTS, CombiMOTSDefaults
from .experiments import *  # noqa: F401,F403
from .method import *  # noqa: F401,F403
from .metrics import *  # noqa: F401,F403
from .objectives import *  # noqa: F401,F403
from .space import *  # noqa: F401,F403

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "CombiMOTSDefaults",
    *space.__all__,
    *objectives.__all__,
    *method.__all__,
    *metrics.__all__,
    *baselines.__all__,
    *experiments.__all__,
]
