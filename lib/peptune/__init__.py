"""PepTune: masked discrete diffusion with multi-objective tree guidance (chapter 18).

Tang, Zhang and Chatterjee, "PepTune: De Novo Generation of Therapeutic Peptides with
Multi-Objective-Guided Discrete Diffusion", ICML 2025 (arXiv 2412.17780). Facts and constants come
from the chapter's paper note and the official code ``sophtang/PepTune``; the paper's result
tables were not read. Where the code departs from the paper, the paper is implemented and the
code's variant is a labelled option (``LogPoly(derivative="code")``, ``q_xt(max_mask_frac=0.75)``,
``MCTG(rollout_restart=True)``, ``is_valid_peptide(strict=False)``).

Modules: ``chem`` (p2smi corpus, validity, bond masks, tokenizer), ``schedules``, ``model``
(denoiser, NELBO + invalid loss, sampler), ``train`` (``python -m icml25.peptune.train``),
``objectives`` (stand-in classifiers), ``mctg`` (Monte Carlo Tree Guidance), ``baselines``
(best-of-N, NSGA-II, metrics), ``experiments``, ``defaults``, ``claims``.
"""

from . import (
    baselines,
    chem,
    claims,
    defaults,
    experiments,
    mctg,
    model,
    objectives,
    schedules,
    train,
)
from .baselines import *  # noqa: F401,F403
from .chem import *  # noqa: F401,F403
from .claims import CLAIMS
from .defaults import DEFAULTS, PepTuneDefaults
from .experiments import *  # noqa: F401,F403
from .mctg import *  # noqa: F401,F403
from .model import *  # noqa: F401,F403
from .objectives import *  # noqa: F401,F403
from .schedules import *  # noqa: F401,F403
from .train import encode_corpus, train_model

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "PepTuneDefaults",
    "encode_corpus",
    "train_model",
    *chem.__all__,
    *schedules.__all__,
    *model.__all__,
    *objectives.__all__,
    *mctg.__all__,
    *baselines.__all__,
    *experiments.__all__,
]
