"""Variance as a Catalyst: semantic-erasure protection by raising the VAE latent variance (chapter 03).

Yang, Wang, Fang, Dai and Huang, "Variance as a Catalyst: Efficient and Transferable Semantic
Erasure Adversarial Attack for Customized Diffusion Models", ICML 2025. No official code exists and
the paper's LA and LE formulas could not be read: :mod:`.losses` holds labelled surrogates behind
one signature, so the exact equations can replace them. The baselines follow PID's ``PID.py``
(``PKU-ML/Diffusion-PID-Protection``) and Anti-DreamBooth's ASPL (our code).

Modules: ``defaults`` (:data:`DEFAULTS`), ``losses`` (LA, LE, baselines, :data:`LOSSES`), ``method``
(posterior, PGD, alignment), ``baselines`` (AdvDM, ASPL), ``victim`` (tiny LDM, DreamBooth,
DDIM), ``metrics`` (identity classifier, ISM, FDFR proxy, PSNR), ``data`` (synthetic faces, LFW),
``experiments`` (the chapter's loops), ``claims`` (:data:`CLAIMS`), ``train`` (the shipped models).
"""

from . import (
    baselines,
    claims,
    data,
    defaults,
    experiments,
    losses,
    method,
    metrics,
    victim,
)
from .baselines import *  # noqa: F401,F403
from .claims import CLAIMS
from .data import *  # noqa: F401,F403
from .defaults import DEFAULTS, VarianceAttackDefaults
from .experiments import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403
from .method import *  # noqa: F401,F403
from .metrics import *  # noqa: F401,F403
from .victim import *  # noqa: F401,F403

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "VarianceAttackDefaults",
    *losses.__all__,
    *method.__all__,
    *baselines.__all__,
    *victim.__all__,
    *metrics.__all__,
    *data.__all__,
    *experiments.__all__,
]
