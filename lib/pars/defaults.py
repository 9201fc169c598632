"""The paper's settings for chapter 15 (Kim et al., "PARS", ICML 2025).

Provenance. The official JAX code (``LGAI-Research/pars``) could not be fetched here and the
paper's appendix tables (Tables 8-11) could not be read: only the abstract and the opening of the
arXiv HTML were reachable (re-checked in review: ``fetch github:LGAI-Research/pars`` gives no
snapshot; searching stored pages and code for Tables 8-11 found only abstract pages, a blog
summary and unofficial re-implementations). Every
hyper-parameter below comes from the chapter's paper note, which transcribed them from a
third-party re-implementation of the official YAML configs; they are **unverified** against the
paper and the official code. Values marked *(inferred)* are ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ParsDefaults:
    """PARS hyper-parameters (third-party transcription of Tables 8-11; unverified).

    Attributes:
        hidden, n_layers, E: critic MLP width, hidden layers and ensemble size (MuJoCo/Adroit:
            256 x 2, E = 10; AntMaze: 256 x 3, E = 4).
        antmaze_n_layers, antmaze_E: the AntMaze variant.
        actor_hidden: actor MLP (256, 256) with a tanh output.
        k_target: members of the random subset in the TD target's min (2 or 10 per task).
        c_reward: reward scale per domain (HalfCheetah 5, Hopper/Walker2d/Adroit 10, AntMaze 1e3-1e4).
        q_min: the PA target per domain (Table 8 as transcribed).
        U: infeasible guard (MuJoCo/Adroit 100, AntMaze 1000); actions are sampled with |a_i| in [U, 2U].
        alpha_grid: PA weights searched (1e-4 ... 1e-2).
        beta_antmaze, beta_adroit: TD3+BC behaviour-cloning weights (MuJoCo configs reportedly 0).
        gamma, gamma_antmaze, tau, lr, batch_size, policy_noise, noise_clip, policy_freq: TD3 settings.
        offline_updates: 3M offline gradient steps.
        online_utd, online_offline_ratio, online_expl_noise, online_steps: fine-tuning settings
            (UTD 20, symmetric sampling with half offline data, exploration noise 0.1 MuJoCo /
            0.05 AntMaze and Adroit; online_steps is the D4RL o2o convention, *(inferred)*).
        hopper_r_min: Hopper's smallest reward used to derive its Q_min (-0.166 * 10 / 0.01 = -166,
            *(inferred)* from Q_min = c r_min / (1 - gamma)).
    """

    hidden: int = 256
    n_layers: int = 2
    E: int = 10
    antmaze_n_layers: int = 3
    antmaze_E: int = 4
    actor_hidden: tuple[int, ...] = (256, 256)
    k_target: tuple[int, ...] = (2, 10)
    c_reward: dict = field(
        default_factory=lambda: {
            "halfcheetah": 5.0,
            "hopper": 10.0,
            "walker2d": 10.0,
            "adroit": 10.0,
            "antmaze": (1e3, 1e4),
        }
    )
    q_min: dict = field(
        default_factory=lambda: {
            "halfcheetah": -366.0,
            "hopper": -166.0,
            "walker2d": -229.0,
            "pen": -715.0,
            "door": -42.0,
            "hammer": -348.0,
            "relocate": 0.0,
            "antmaze": 0.0,
        }
    )
    U: dict = field(
        default_factory=lambda: {"mujoco": 100.0, "adroit": 100.0, "antmaze": 1000.0}
    )
    alpha_grid: tuple[float, ...] = (1e-4, 1e-3, 1e-2)
    beta_antmaze: tuple[float, ...] = (0.005, 0.01)
    beta_adroit: tuple[float, ...] = (0.01, 0.1)
    gamma: float = 0.99
    gamma_antmaze: float = 0.995
    tau: float = 0.005
    lr: float = 3e-4
    batch_size: int = 256
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_freq: int = 2
    offline_updates: int = 3_000_000
    online_utd: int = 20
    online_offline_ratio: float = 0.5
    online_expl_noise: tuple[float, ...] = (0.1, 0.05)
    online_steps: int = 1_000_000
    hopper_r_min: float = -0.166


DEFAULTS = ParsDefaults()
