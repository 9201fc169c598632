"""P2P: interpretable classification by instance-wise selection of superpixels (chapter 09).

Vandenhirtz and Vogt, "From Pixels to Perception: Interpretable Predictions via Instance-wise
Grouped Feature Selection", ICML 2025. The method follows the official code ``mvandenhi/P2P``
(loss, annealing, correlated logits, threshold search); the networks, the BAM-like data and the
low-rank sampler are labelled reconstructions (see :mod:`icml25.p2p.method` and :data:`DEFAULTS`).

Modules: ``defaults``, ``claims`` (the claim records), ``method`` (pooling, loss, model), ``metrics``, ``baselines``, ``data``,
``experiments``.
"""

from . import baselines, claims, data, defaults, experiments, method, metrics
from .baselines import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .claims import CLAIMS
from .defaults import DEFAULTS, P2PDefaults
from .experiments import *  # noqa: F401,F403
from .method import *  # noqa: F401,F403
from .metrics import *  # noqa: F401,F403

__all__ = [
    "DEFAULTS",
    "P2PDefaults",
    "CLAIMS",
    *baselines.__all__,
    *data.__all__,
    *experiments.__all__,
    *method.__all__,
    *metrics.__all__,
]
