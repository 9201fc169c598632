"""The paper's settings for chapter 03 (Yang et al., "Variance as a Catalyst", ICML 2025).

Provenance. No official code exists and the paper's PDF could not be read here: the PGD budget
(``eps = 12.75/255``, ``alpha = 1/255``, uniform start) is PID's default (``PKU-ML/Diffusion-PID-Protection``,
``PID.py`` and ``PID.sh``), assumed shared *(inferred)*; the 30 steps are the paper's (abstract and
summaries); the clamp ``[-30, 20]`` and the scale factor ``0.18215`` are diffusers'/SD1.x's. The LE
multiplier ``lam`` and threshold ``c_max`` are ours *(inferred)*, as are the ASPL settings (taken
from the Anti-DreamBooth defaults as we recall them, rescaled from [-1, 1] to [0, 1] pixels).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VarianceAttackDefaults:
    """PGD, loss, victim and model settings (see the module docstring for the provenance).

    Attributes:
        eps: l-infinity budget in [0, 1] pixel units (PID: 12.75/255 = 0.05).
        alpha: sign-step size (PID: 1/255).
        n_steps: PGD steps (the paper: 30).
        init: ``"uniform"`` in [-eps, eps] (PID) or ``"zero"``.
        logvar_clamp: diffusers' ``DiagonalGaussianDistribution`` clamp of log sigma^2.
        sd_scaling_factor: SD1.x latent scale (our tiny VAEs compute their own).
        le_lam, le_c_max: LE's Lagrange multiplier and the log-variance threshold below the clamp.
        aspl_outer, aspl_surrogate_steps, aspl_pgd_steps, aspl_alpha: Anti-DreamBooth ASPL loop
            (outer rounds, surrogate fine-tune steps, PGD steps per round, step size).
        db_lr, db_steps: DreamBooth-style fine-tune learning rate and steps (paper scale 400, ours).
        ddim_steps: sampler steps for the generations.
        vae_channels, latent_channels, image_size: the tiny AutoencoderKL of the cpu profile.
        gpu_vae_channels, gpu_image_size, gpu_n_identities: the SD-like gpu profile.
    """

    eps: float = 12.75 / 255
    alpha: float = 1.0 / 255
    n_steps: int = 30
    init: str = "uniform"
    logvar_clamp: tuple[float, float] = (-30.0, 20.0)
    sd_scaling_factor: float = 0.18215
    le_lam: float = 1.0
    le_c_max: float = 18.0
    aspl_outer: int = 5
    aspl_surrogate_steps: int = 3
    aspl_pgd_steps: int = 6
    aspl_alpha: float = 1.0 / 255
    db_lr: float = 2e-4
    db_steps: int = 400
    ddim_steps: int = 25
    vae_channels: tuple[int, ...] = (16, 32, 32)
    latent_channels: int = 4
    image_size: int = 32
    gpu_vae_channels: tuple[int, ...] = (64, 128, 256)
    gpu_image_size: int = 64
    gpu_n_identities: int = 100


DEFAULTS = VarianceAttackDefaults()
