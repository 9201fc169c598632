"""vMF-exp: exploring large action sets by von Mises-Fisher sampling and nearest-neighbour search.

Implements Bendada et al., "Exploring Large Action Sets with Hyperspherical Embeddings using
von Mises-Fisher Sampling" (ICML 2025). Actions ``X`` (n, d) and a state ``V`` (d,) live on the
unit sphere S^{d-1}. Instead of Boltzmann exploration (B-exp: sample action ``a`` with
probability softmax(kappa <V, X_a>), an O(n) pass per decision), vMF-exp

1. draws a perturbed state ``V~ ~ vMF(mu=V, kappa)`` (Wood 1994 rejection sampler), and
2. plays the action closest to ``V~``: ``argmax_i <V~, X_i>`` (one exact or approximate
   maximum-inner-product search).

Action ``a`` is then played with the vMF mass of its Voronoi cell. For action sets drawn
uniformly on the sphere both schemes share the leading term ``P0 = f(A) |S^{d-1}| / n``
(``f`` the vMF density, Sec. 4 of the paper); :func:`p1` adds the first-order correction used in
the authors' code. :func:`mc_prob_curve` estimates both probabilities for every action-set size
``n = 1..n_max`` at once (the "prefix trick" of the official code).

The package:

- ``defaults``: :class:`VMFDefaults` and ``DEFAULTS`` (the paper's Figure 2a setting, the HNSW
  and Monte Carlo defaults);
- ``method``: vMF densities and sampling, :class:`VMFExplorer`, the closed forms :func:`p0`, :func:`p1`;
- ``baselines``: B-exp, TB-exp, epsilon-greedy, uniform exploration;
- ``data``: uniform action sets on the sphere, actions at a given cosine;
- ``experiments``: :func:`mc_prob_curve`;
- ``claims``: ``CLAIMS``, the paper's claims as the book judges them (:mod:`icml25.claims`).

Conventions: ``rng`` is a ``numpy.random.Generator``; ``d`` the dimension, ``n`` the number of
actions, ``B`` a batch of states. State vectors ``V`` / mean directions ``mu`` are normalised to
unit length on entry (a zero or non-finite vector is an error); action rows are used as given by
the Boltzmann functions (unit rows in the paper) and normalised by :class:`VMFExplorer`.
Arguments go in and results come out as NumPy arrays; exact search, Boltzmann sampling and the
prefix-survival counter run through the dispatchers of :mod:`icml25.kernels.mips`, which use the
CUDA kernels when a GPU is usable. vMF draws always come from the NumPy generator.
"""

from __future__ import annotations

from . import baselines, claims, data, defaults, experiments, method
from .baselines import *  # noqa: F403 - the public API, listed in each module's __all__
from .claims import CLAIMS
from .data import *  # noqa: F403
from .defaults import *  # noqa: F403
from .experiments import *  # noqa: F403
from .method import *  # noqa: F403

# private pieces the chapter shows (show_source) and the tests call
from .data import _orthogonal_unit, _uniform_sphere  # noqa: E402,F401
from .method import _log_iv, _sample_vmf_rows, _top_m, _wood_cosines  # noqa: E402,F401

__all__ = [
    "CLAIMS",
    *defaults.__all__,
    *method.__all__,
    *baselines.__all__,
    *data.__all__,
    *experiments.__all__,
]
