"""Pfeife: automatic pipeline parallelism for PyTorch (chapter 13).

Jhoo, Hur and Lopes, "Pfeife: Automatic Pipeline Parallelism for PyTorch", ICML 2025. The paper's
Table 1 was not readable; the method follows the chapter's paper note and the official code
``MerHS/pfeife`` (MIT; read for facts and constants only, no code copied). Every reconstruction is
labelled in the docstring where it is made.

Modules: ``defaults`` (:data:`DEFAULTS`), ``models`` (HeteroMLP, TinyUNet, gpu shapes), ``graph``
(capture, profiling, linearisation), ``schedule`` (GPipe, 1F1B, Pfeife's looped schedules),
``cost`` (communication, cost and memory models), ``planner`` (Algorithm 1 and the split
baselines), ``runtime`` (the multi-process gloo pipeline and core PyTorch's
``torch.distributed.pipelining`` on the same workers), ``claims`` (:data:`CLAIMS`),
``experiments`` (the loops the chapter calls).
"""

from . import (
    claims,
    cost,
    defaults,
    experiments,
    graph,
    models,
    planner,
    runtime,
    schedule,
)
from .claims import CLAIMS
from .cost import *  # noqa: F401,F403
from .defaults import DEFAULTS, PfeifeDefaults
from .experiments import *  # noqa: F401,F403
from .graph import *  # noqa: F401,F403
from .models import *  # noqa: F401,F403
from .planner import *  # noqa: F401,F403
from .runtime import *  # noqa: F401,F403
from .schedule import *  # noqa: F401,F403

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "PfeifeDefaults",
    *graph.__all__,
    *models.__all__,
    *schedule.__all__,
    *cost.__all__,
    *planner.__all__,
    *runtime.__all__,
    *experiments.__all__,
]
