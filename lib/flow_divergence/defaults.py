"""The paper's settings for chapter 07 (Huang et al., ICML 2025), in one frozen dataclass.

Every value is the official code's (``Utah-Math-Data-Science/Flow_Div_Matching``): the 2-D model,
optimiser and loss weight of ``flow_matching_2d_Synthetic_FDM/main_fm_2d.py``, its evaluation
(Euler sampler with step 0.01, 200 x 200 histograms on ``[-5, 5]^2``) and the dynamical systems of
the dynamics code. The functions of :mod:`icml25.flow_divergence` take their defaults from here and
the notebook reads the ``gpu``-profile sizes from ``DEFAULTS``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ModelDefaults",
    "TrainingDefaults",
    "EvaluationDefaults",
    "LorenzDefaults",
    "FitzHughNagumoDefaults",
    "FlowDivergenceDefaults",
    "DEFAULTS",
]


@dataclass(frozen=True)
class ModelDefaults:
    """The official 2-D velocity network: an MLP on ``[x, t]``, 4 hidden layers of 512, Swish."""

    hidden: int = 512
    depth: int = 4
    act: str = "swish"


@dataclass(frozen=True)
class TrainingDefaults:
    """The official 2-D recipe: Adam, 10-step linear warm-up times ``StepLR(10, 0.999)``.

    ``lam_div`` is the code's ``reg``; ``t_max < 1`` keeps ``sigma_t > 0`` (CondOT).
    """

    n_steps: int = 30_001
    batch: int = 512
    lr: float = 1e-3
    lam_cfm: float = 1.0
    lam_div: float = 0.1
    warmup: int = 10
    lr_step: int = 10
    lr_gamma: float = 0.999
    t_max: float = 1.0 - 1e-3


@dataclass(frozen=True)
class EvaluationDefaults:
    """Sampling and metrics of the official 2-D evaluation: 100 Euler steps (step 0.01),
    histogram TV/KL with 200 x 200 bins on ``[-5, 5]^2``, 500 k samples."""

    ode_steps: int = 100
    hist_bins: int = 200
    hist_range: tuple[tuple[float, float], tuple[float, float]] = (
        (-5.0, 5.0),
        (-5.0, 5.0),
    )
    n_samples: int = 500_000


@dataclass(frozen=True)
class LorenzDefaults:
    """Lorenz trajectories of the dynamics code: dt 0.1, 90 steps with 30 dropped (T = 60),
    coordinates scaled by 1/20."""

    T: int = 60
    dt: float = 0.1
    n_drop: int = 30
    rho: float = 28.0
    sigma: float = 10.0
    beta: float = 8.0 / 3.0
    rescaling: float = 20.0


@dataclass(frozen=True)
class FitzHughNagumoDefaults:
    """Coupled FitzHugh-Nagumo trajectories of the dynamics code: dt 6, 310 steps with 250 dropped."""

    T: int = 60
    dt: float = 6.0
    n_drop: int = 250


@dataclass(frozen=True)
class FlowDivergenceDefaults:
    """All of chapter 07's paper settings (``icml25.flow_divergence.DEFAULTS``)."""

    model: ModelDefaults = field(default_factory=ModelDefaults)
    training: TrainingDefaults = field(default_factory=TrainingDefaults)
    evaluation: EvaluationDefaults = field(default_factory=EvaluationDefaults)
    lorenz: LorenzDefaults = field(default_factory=LorenzDefaults)
    fitzhugh_nagumo: FitzHughNagumoDefaults = field(
        default_factory=FitzHughNagumoDefaults
    )


DEFAULTS = FlowDivergenceDefaults()
