"""The paper's settings for chapter 09 (Vandenhirtz and Vogt, ICML 2025), read from the official
code ``mvandenhi/P2P`` (``configs/model/P2P.yaml``, ``configs/data/*.yaml``, ``models/``).

The cpu-scale values at the bottom (32 x 32 images, 25 segments, lr 3e-3, BatchNorm CNNs) are the
chapter's own, not the paper's: the paper fine-tunes ImageNet-pretrained LRASPP-MobileNetV3 and
ViT-tiny at 224 x 224, which are downloads.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class P2PDefaults:
    """Settings of P2P (official code where stated; ours for the cpu scale).

    Attributes:
        n_segments, compactness: SLIC superpixels (code: 100, 20; fast-slic on 224 x 224).
        num_dims: channels of the importance embedding, 1 for the mean logit + 3 for ``U`` (code: 4).
        beta: weight of the sparsity penalty ``reg_weight`` (10), annealed from beta/100.
        gamma: weight of the covariance penalty ``cov_weight`` (0.01).
        reg_variant: ``"kl"`` (the code's default) or ``"l1"``.
        final_temp: final relaxed-Bernoulli temperature (0.5), reached at half of training.
        straight_through: straight-through relaxed Bernoulli (off in the code).
        num_monte_carlo: samples of the selection per image (1).
        jitter: first diagonal jitter tried when ``U U^T`` is not positive definite (1e-6).
        tau_min, tau_max: range of the training budget ``tau ~ U[tau_min, tau_max]`` and the start of
            the threshold search (0.05, 1.0); tau_step: the search's step (0.05, = tau_min in the code).
        kappa: certainty threshold of the dynamic search (0.99); kappas: the values evaluated in
            the paper (0.8, 0.9, 0.95, 0.99).
        fixed_tau: the fixed-budget variant's ``reg_threshold`` (0.2).
        lr, batch, n_epochs: Adam 1e-4, batch 64, 100 epochs (ImageNet: 20).
        fidelity_fractions: area fractions of the insertion/deletion curves (code's list).
        cpu_size, cpu_segments, cpu_compactness, cpu_lr: the chapter's cpu scale (ours).
        pixel_patch: side of the patches of the pixel-group ablation (2: 2 x 2 patches, ours).
    """

    n_segments: int = 100
    compactness: float = 20.0
    num_dims: int = 4
    beta: float = 10.0
    gamma: float = 0.01
    reg_variant: str = "kl"
    final_temp: float = 0.5
    straight_through: bool = False
    num_monte_carlo: int = 1
    jitter: float = 1e-6
    tau_min: float = 0.05
    tau_max: float = 1.0
    tau_step: float = 0.05
    kappa: float = 0.99
    kappas: tuple[float, ...] = (0.8, 0.9, 0.95, 0.99)
    fixed_tau: float = 0.2
    lr: float = 1e-4
    batch: int = 64
    n_epochs: int = 100
    fidelity_fractions: tuple[float, ...] = (
        0.0,
        0.01,
        0.05,
        0.1,
        0.15,
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
        0.55,
        0.6,
        0.7,
        0.8,
        0.9,
        0.99,
        1.0,
    )
    cpu_size: int = 32
    cpu_segments: int = 25
    cpu_compactness: float = 10.0
    cpu_lr: float = 3e-3
    pixel_patch: int = 2


DEFAULTS = P2PDefaults()
