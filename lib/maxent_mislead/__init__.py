"""When maximum entropy misleads policy optimisation (chapter 17).

Zhang, Chang and Gao, "When Maximum Entropy Misleads Policy Optimization", ICML 2025 (arXiv
2506.05615). Only the paper's abstract and introduction and its reviews were readable: the toy
constructions (Toy A, Toy B) and the bifurcation extension here are labelled reconstructions;
SAC-AdaEnt and the environments follow the official code (``ruipengz/maxent-mislead``, read
through the code index).

Modules: ``defaults`` (:data:`DEFAULTS`), ``method`` (soft values, thresholds, (soft) value
iteration, the extension), ``envs`` (gymnasium environments under ``icml25/``), ``data`` (toy
tables and rewards), ``sac_adaent`` (:class:`SACAdaEnt`), ``baselines`` (SB3 agents),
``experiments`` (the chapter's loops), ``claims`` (:data:`CLAIMS`, the paper's claims as the book judges
them, :mod:`icml25.claims`).
"""

import contextlib as _contextlib
import io as _io

# stable-baselines3 imports the old ``gym`` wherever it is installed (d3rlpy, chapter 15,
# requires it), and gym prints a deprecation notice to stderr on import: a load message
# that would sit in the chapter's first output. The book uses gymnasium only.
with _contextlib.redirect_stderr(_io.StringIO()):
    import stable_baselines3 as _stable_baselines3  # noqa: F401

from .defaults import (  # noqa: E402
    DEFAULTS,
    AgentDefaults,
    ControlDefaults,
    MaxEntMisleadDefaults,
    ToyADefaults,
    ToyBDefaults,
)
from .method import (
    ValueIterationResult,
    bifurcation_extension,
    branch_threshold_alpha,
    branch_values,
    grid_mass_near,
    half_mass_alpha,
    soft_policy,
    soft_value,
    soft_value_iteration,
    value_iteration,
)
from .envs import (
    ENV_IDS,
    BicycleTracking,
    ContinuousAcrobot,
    Obstacle2D,
    PrecisionBandit,
    TwoBranchMDP,
    register_envs,
    segment_hits_box,
)
from .data import make_toy_b_reward, toy_b_reward, two_branch_tables
from .sac_adaent import SACAdaEnt
from .baselines import ALGORITHMS, evaluate, make_agent, policy_action, start_actor_at
from .claims import CLAIMS
from .experiments import (
    control_benchmark,
    obstacle_comparison,
    precision_bandit_runs,
    toy_a_sweep,
    toy_b_sweep,
)

from . import baselines, claims, data, defaults, envs, experiments, method, sac_adaent

__all__ = sorted(
    set(defaults.__all__ if hasattr(defaults, "__all__") else [])
    | {
        "DEFAULTS",
        "MaxEntMisleadDefaults",
        "ToyADefaults",
        "ToyBDefaults",
        "AgentDefaults",
        "ControlDefaults",
    }
    | {"CLAIMS"}
    | set(method.__all__)
    | set(envs.__all__)
    | set(data.__all__)
    | set(sac_adaent.__all__)
    | set(baselines.__all__)
    | set(experiments.__all__)
)

register_envs()
