"""The paper's settings for chapter 18 (Tang, Zhang and Chatterjee, "PepTune", ICML 2025).

Provenance: the chapter's paper note, which read the official repository ``sophtang/PepTune``
(``config.yaml``, ``diffusion.py``, ``noise_schedule.py``, ``pareto_mcts.py``, README); the
paper's result tables were not readable. The values below are the code's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULTS", "PepTuneDefaults"]


@dataclass(frozen=True)
class PepTuneDefaults:
    """PepTune hyper-parameters (official code defaults, via the paper note).

    Attributes:
        eps: schedule epsilon (mask probability ``1 - eps`` at ``t = 1``).
        w_bond: power of the log-polynomial bond schedule.
        sampling_eps: smallest training time.
        hidden, layers, heads: RoFormer denoiser (768, 8, 8).
        vocab_size: SMILES Pair-Encoding vocabulary (586).
        lr, weight_decay, betas, warmup, batch, grad_clip: AdamW training.
        num_children, num_iter, steps, invalid_penalty, front_size: MCTG.
        seq_length: generation length of the code (README example 100).
        objectives: the five objectives of the code's default run.
    """

    eps: float = 1e-3
    w_bond: float = 3.0
    sampling_eps: float = 1e-3
    hidden: int = 768
    layers: int = 8
    heads: int = 8
    vocab_size: int = 586
    lr: float = 3e-4
    weight_decay: float = 0.075
    betas: tuple[float, float] = (0.9, 0.999)
    warmup: int = 2500
    batch: int = 64
    grad_clip: float = 1.0
    num_children: int = 50
    num_iter: int = 128
    steps: int = 128
    invalid_penalty: float = 0.5
    front_size: int = 100
    seq_length: int = 200
    objectives: tuple[str, ...] = (
        "binding",
        "solubility",
        "nonhemolysis",
        "nonfouling",
        "permeability",
    )


DEFAULTS = PepTuneDefaults()
