"""PARS: reward scaling with layer norm and penalising infeasible actions (chapter 15).

Kim, Shin, Jung, Hong, Yoon, Sung, Lee and Lim, "Penalizing Infeasible Actions and Reward Scaling
in Reinforcement Learning with Offline Data", ICML 2025 (arXiv 2507.08761). The official JAX code
and the paper's body could not be read here: the method follows the chapter's paper note (a
third-party transcription), and every hyper-parameter in :data:`DEFAULTS` is unverified.

Modules: ``defaults`` (:data:`DEFAULTS`), ``method`` (critic ensemble, losses, the agent, the
probe), ``claims`` (:data:`CLAIMS`, the paper's claims as the book judges them), ``data`` (PointMazeLite, datasets, buffers), ``baselines`` (d3rlpy 2.8.1), ``experiments``.
"""

from . import baselines, claims, data, defaults, experiments, method
from .baselines import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .claims import CLAIMS
from .defaults import DEFAULTS, ParsDefaults
from .experiments import *  # noqa: F401,F403
from .method import *  # noqa: F401,F403

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "ParsDefaults",
    *method.__all__,
    *data.__all__,
    *baselines.__all__,
    *experiments.__all__,
]
