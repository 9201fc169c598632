"""Flow and divergence matching (FDM), chapter 07 of the book.

Huang et al., "Improving Flow Matching by Aligning Flow Divergence" (ICML 2025). Official code:
``Utah-Math-Data-Science/Flow_Div_Matching``.

The package re-exports its public API, so ``icml25.flow_divergence.<name>`` works for every name
(the notebook imports it as ``fdm``):

- :mod:`.defaults`: ``FlowDivergenceDefaults`` and ``DEFAULTS``, the paper's settings;
- :mod:`.method`: the affine path, the velocity MLP, the divergence estimators, the CFM and
  divergence-matching losses, the ODE sampler and the likelihood (the functions the chapter shows);
- :mod:`.data`: the Gaussian mixture with an exact path, the checkerboard, Lorenz and
  FitzHugh-Nagumo trajectories;
- :mod:`.experiments`: training (CFM is the baseline: the same loop with ``lam_div = 0``), the TV
  bound's integrand, density grids and the histogram distances;
- :mod:`.claims`: ``CLAIMS``, the paper's claims as the book judges them (:mod:`icml25.claims`).
"""

from __future__ import annotations

from .claims import CLAIMS
from .data import (
    GaussianMixture2D,
    TrajectoryData,
    checkerboard,
    fitzhugh_nagumo_trajectories,
    lorenz_trajectories,
)
from .defaults import (
    DEFAULTS,
    EvaluationDefaults,
    FitzHughNagumoDefaults,
    FlowDivergenceDefaults,
    LorenzDefaults,
    ModelDefaults,
    TrainingDefaults,
)
from .experiments import (
    grid_tv,
    hist_kl,
    hist_tv,
    model_density_grid,
    time_train_step,
    train_flow,
    tv_bound_integrand,
)
from .method import (
    ESTIMATORS,
    FDM_VARIANTS,
    PROBE_DISTS,
    SCHEDULES,
    PathSample,
    VelocityMLP,
    affine_path,
    cfm_loss,
    divergence_exact,
    divergence_hutchinson,
    divergence_matching_loss,
    divergence_residual,
    fdm_loss,
    log_likelihood,
    sample_ode,
)

# the pure math the chapter shows with show_source (book/authoring.md)
from .method import _affine_path, _dm_loss, _fdm_loss, _residual  # noqa: F401

from . import claims, data, defaults, experiments, method  # noqa: E402

__all__ = [
    "CLAIMS",
    *defaults.__all__,
    *method.__all__,
    *data.__all__,
    *experiments.__all__,
]
