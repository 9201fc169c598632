"""The paper's settings for chapter 17 (Zhang, Chang and Gao, ICML 2025).

SAC-AdaEnt's settings (``n_samples = 100`` actions per state, ``threshold = 0.9``, ``alpha = 0.2``,
``tau = 0.005``, ``gamma = 0.99``) and the environment constants are read from the official code
(``ruipengz/maxent-mislead``, through the code index; no snapshot could be fetched). The toy
constructions (Toy A's rewards, Toy B's reward) are the chapter's own, labelled reconstructions;
the gpu-scale step counts follow the notes (300k-1M steps, 5 seeds), cut to what fits 10 minutes.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ToyADefaults:
    """Toy A (reconstruction): s0 -> {robust, precise}, actions in [-1, 1].

    Attributes:
        r_mid: reward of every action in the robust branch.
        r_hi: reward of the precise branch's actions with ``|a| <= w``.
        r_fail: reward of the precise branch's other actions.
        ws: half-widths of the precise set.
        alpha_star: the thresholds the notes computed for ``ws`` (checked by the chapter, not used).
        n_actions: action-grid points for value iteration (midpoints; ``2 w n_actions / 2`` must be
            an integer so the grid measures the precise set exactly).
        gamma: discount of the value iterations.
    """

    r_mid: float = 1.0
    r_hi: float = 2.0
    r_fail: float = -1.0
    ws: tuple[float, ...] = (0.05, 0.01)
    alpha_star: tuple[float, ...] = (0.3341, 0.2172)
    n_actions: int = 2000
    gamma: float = 0.9


@dataclass(frozen=True)
class ToyBDefaults:
    """Toy B (reconstruction): one-step bandit on [-1, 1] with a narrow and a broad peak.

    ``r(a) = h_narrow exp(-(a - c_narrow)^2 / (2 sigma^2)) + h_broad exp(-(a - c_broad)^2 / (2 s_broad^2))``.

    Attributes:
        c_narrow, h_narrow, sigma: the narrow peak (centre, height, width).
        c_broad, h_broad, s_broad: the broad bump.
        radius: "near the narrow peak" means within ``radius`` of ``c_narrow``.
        n_grid: grid points on [-1, 1] for the exact soft-optimal policy.
        half_mass_alpha: the notes' value (checked by the chapter, not used).
        sigma_learned: the widened peak of the learned experiment (C).
        radius_learned: the radius of (C)'s soft-optimum statement.
    """

    c_narrow: float = 0.6
    h_narrow: float = 2.0
    sigma: float = 0.03
    c_broad: float = -0.4
    h_broad: float = 1.0
    s_broad: float = 0.4
    radius: float = 0.1
    n_grid: int = 200_000
    half_mass_alpha: float = 0.3479
    sigma_learned: float = 0.1
    radius_learned: float = 0.2


@dataclass(frozen=True)
class AgentDefaults:
    """The agents' settings (official code, SAC-AdaEnt; SB3 defaults elsewhere).

    Attributes:
        alpha: SAC's fixed temperature; alphas: the fixed temperatures compared.
        n_samples: SAC-AdaEnt's actions per state in the landscape test (paper: 100).
        threshold: SAC-AdaEnt's cosine threshold (paper: 0.9).
        tau, gamma: target smoothing and discount.
        net_arch: hidden layers of every actor and critic at paper scale.
        learning_rate, batch_size: optimiser step and minibatch (SB3 defaults).
    """

    alpha: float = 0.2
    alphas: tuple[float, ...] = (0.05, 0.2, 1.0)
    n_samples: int = 100
    threshold: float = 0.9
    tau: float = 0.005
    gamma: float = 0.99
    net_arch: tuple[int, ...] = (256, 256)
    learning_rate: float = 3e-4
    batch_size: int = 256


@dataclass(frozen=True)
class ControlDefaults:
    """The control benchmarks at paper scale (notes: 300k-1M steps, 5 seeds).

    Attributes:
        envs: project ids of the tasks (Hopper-v5 is gymnasium's, the control case).
        n_steps: environment steps per run the paper reports.
        n_reps: seeds per configuration.
        algorithms: the compared agents.
    """

    envs: tuple[str, ...] = (
        "icml25/Obstacle2D-v0",
        "icml25/ContinuousAcrobot-v0",
        "icml25/BicycleTracking-v0",
        "Hopper-v5",
    )
    n_steps: int = 300_000
    n_reps: int = 5
    algorithms: tuple[str, ...] = ("td3", "ppo", "sac", "sac_auto", "sac_adaent")


@dataclass(frozen=True)
class MaxEntMisleadDefaults:
    """All settings of chapter 17: ``toy_a``, ``toy_b``, ``agent``, ``control``."""

    toy_a: ToyADefaults = field(default_factory=ToyADefaults)
    toy_b: ToyBDefaults = field(default_factory=ToyBDefaults)
    agent: AgentDefaults = field(default_factory=AgentDefaults)
    control: ControlDefaults = field(default_factory=ControlDefaults)


DEFAULTS = MaxEntMisleadDefaults()
