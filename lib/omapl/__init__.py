"""O-MAPL: offline multi-agent preference learning (chapter 10).

Bui, Mai and Nguyen, "O-MAPL: Offline Multi-agent Preference Learning", ICML 2025 (arXiv
2501.18944). The soft Q-function is learned directly from segment preferences through the
inverse soft Bellman identity ``r = Q - gamma V'``, factorised by a non-negative linear mixer, with
extreme-V regression for V and weighted behaviour cloning for the local policies. Settings follow
the official code (``vietbt/OMAPL``); the environments (CoopGrid) and the LLM stand-in are
labelled reconstructions.

Modules: ``defaults``, ``networks``, ``method`` (losses, :class:`OMAPL`), ``baselines`` (BC, IIPL,
SL-MARL), ``envs`` (CoopGrid, MPE adapter), ``data`` (datasets, pairs, prompts), ``experiments``, ``claims``
(the paper's claims as the book judges them).
"""

from . import baselines, claims, data, envs, experiments, method, networks
from ._checks import PairBatch, alive_mask, check_beta, check_gamma, make_pair_batch
from .baselines import *  # noqa: F401,F403
from .claims import CLAIMS
from .data import *  # noqa: F401,F403
from .defaults import DEFAULTS, GridSettings, LearnerSettings, OMAPLDefaults
from .envs import *  # noqa: F401,F403
from .experiments import *  # noqa: F401,F403
from .method import *  # noqa: F401,F403
from .networks import *  # noqa: F401,F403

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "OMAPLDefaults",
    "LearnerSettings",
    "GridSettings",
    "PairBatch",
    "make_pair_batch",
    "alive_mask",
    "check_beta",
    "check_gamma",
    *baselines.__all__,
    *data.__all__,
    *envs.__all__,
    *experiments.__all__,
    *method.__all__,
    *networks.__all__,
]
