"""SaP: a learned safety polytope as detector and steering corrector (chapter 05).

Chen, As and Krause, "SaP: Safety Polytope — Learning Safety Constraints for Large Language
Models", ICML 2025 (arXiv 2505.24445; official code ``lasgroup/SafetyPolytope``, read in the fork
``Anderson-Lee-Git/SafetyPolytope``). The method (polytope, loss, entropy re-assignment, SafeFlow
steering, backup response, the MLP baseline) follows the public code; the data (HarmBench
behaviours with MiniLM states, generated benign prompts) and the small language model of
Experiment D are this chapter's reconstructions at CPU scale.

Modules: ``defaults`` (:data:`DEFAULTS`), ``method`` (polytope, loss, fit, steering, projection),
``generation`` (hidden states, :class:`SteeredGenerator`), ``baselines``, ``metrics``, ``data``,
``lm`` (the small causal LM), ``experiments`` (the loops the notebook calls), ``claims`` (:data:`CLAIMS`,
the paper's claims as the book judges them, :mod:`icml25.claims`).
"""

from . import (
    baselines,
    claims,
    data,
    defaults,
    experiments,
    generation,
    lm,
    method,
    metrics,
)
from .baselines import *  # noqa: F401,F403
from .claims import CLAIMS
from .data import *  # noqa: F401,F403
from .defaults import DEFAULTS, SafetyPolytopeDefaults
from .experiments import *  # noqa: F401,F403
from .generation import *  # noqa: F401,F403
from .lm import *  # noqa: F401,F403
from .method import *  # noqa: F401,F403
from .metrics import *  # noqa: F401,F403

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "SafetyPolytopeDefaults",
    *method.__all__,
    *generation.__all__,
    *baselines.__all__,
    *metrics.__all__,
    *data.__all__,
    *lm.__all__,
    *experiments.__all__,
]
