"""UniVLG: one language-conditioned mask decoder for 2D and 3D grounding (chapter 08).

Jain, Swerdlow, Wang, Arnaud, Martin, Sax, Meier and Fragkiadaki, "UniVLG: Unifying 2D and 3D
Vision-Language Understanding", ICML 2025 (arXiv 2503.10745). The paper's tables were not
retrieved; the architecture follows the chapter's paper note, which read the official code
(facebookresearch/univlg, CC-BY-NC: facts only, no code copied). Every module says what it
reconstructs at this book's scale.

Modules: ``defaults`` (:data:`DEFAULTS`), ``geometry`` (lifting, voxels, kNN), ``data`` (the ray-cast
scenes and expressions), ``text`` (MiniLM + projection, positive maps), ``model`` (3D layers,
decoder, UniVLG), ``losses``, ``metrics``, ``baselines``, ``experiments``, ``claims``, ``train``
(the script that trains the shipped weights).
"""

from . import (
    baselines,
    claims,
    data,
    defaults,
    experiments,
    geometry,
    losses,
    metrics,
    model,
    text,
)
from .baselines import *  # noqa: F401,F403
from .claims import CLAIMS
from .data import *  # noqa: F401,F403
from .defaults import DEFAULTS, UniVLGDefaults
from .experiments import *  # noqa: F401,F403
from .geometry import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403
from .metrics import *  # noqa: F401,F403
from .model import *  # noqa: F401,F403
from .text import *  # noqa: F401,F403

__all__ = [
    "CLAIMS",
    "DEFAULTS",
    "UniVLGDefaults",
    *geometry.__all__,
    *data.__all__,
    *text.__all__,
    *model.__all__,
    *losses.__all__,
    *metrics.__all__,
    *baselines.__all__,
    *experiments.__all__,
]
