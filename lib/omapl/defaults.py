"""The paper's settings for chapter 10 (Bui, Mai, Nguyen, "O-MAPL", ICML 2025).

The learner's settings are the official code's (``vietbt/OMAPL``, ``config.py``), read through the
chapter's notes; the paper states none of them in its text. The CoopGrid sizes are the notes' own
(a reconstruction: the paper's SMAC and MaMuJoCo buffers are not available offline).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LearnerSettings:
    """O-MAPL's learner (official code, ``config.py``).

    Attributes:
        lr: Adam step size of all three optimisers (preference/Q, V, actor).
        gamma: discount. tau: Polyak rate of the target networks. grad_clip: gradient-norm clip.
        beta: temperature of the extreme-V loss and the weighted BC (the code's ``alpha``).
        z_clip: clip of ``z = w (q - v) / beta``. reg: weight of the reward regulariser.
        batch_size: preference pairs per update. hidden: width of the local nets (2 hidden layers).
        mixer_hidden: width of the mixer's hypernetwork. epochs: passes over the pair set.
        n_reps: seeds per experiment. action_scale: MaMuJoCo action scale (Ant).
    """

    lr: float = 1e-4
    gamma: float = 0.99
    tau: float = 0.005
    grad_clip: float = 1.0
    beta: float = 10.0
    z_clip: float = 10.0
    reg: float = 0.5
    batch_size: int = 32
    hidden: int = 256
    mixer_hidden: int = 64
    epochs: int = 100
    n_reps: int = 4
    action_scale: float = 0.7


@dataclass(frozen=True)
class GridSettings:
    """CoopGrid and its offline data (the notes' reconstruction; ``gpu_*`` the paper-scale grid).

    Attributes:
        size, n_agents, n_landmarks, horizon: the game. eps: the eps-expert's random-action
        probabilities of the expert / medium / poor datasets. n_traj: trajectories per dataset.
        n_pairs: preference pairs. flip_prob: label flips of the noisy annotator.
        gpu_size, gpu_agents, gpu_horizon, gpu_pairs, gpu_eval_episodes: the gpu profile's game and sizes
        (the notes' 10 x 10 grid with 6 agents; a horizon of 20 leaves room for the 18-move diagonal).
    """

    size: int = 5
    n_agents: int = 3
    n_landmarks: int = 3
    horizon: int = 12
    eps: tuple[float, ...] = (0.0, 0.4, 1.0)
    n_traj: int = 500
    n_pairs: int = 1500
    flip_prob: float = 0.1
    gpu_size: int = 10
    gpu_agents: int = 6
    gpu_horizon: int = 20
    gpu_pairs: int = 20_000
    gpu_eval_episodes: int = 100_000


@dataclass(frozen=True)
class OMAPLDefaults:
    """All settings of chapter 10: ``learner`` (official code), ``grid`` (the notes' CoopGrid),
    and the paper's MPE-free headline numbers are quoted in the chapter, not here."""

    learner: LearnerSettings = field(default_factory=LearnerSettings)
    grid: GridSettings = field(default_factory=GridSettings)


DEFAULTS = OMAPLDefaults()
