"""The paper's settings of LowRA (Zhou et al., ICML 2025) in one place: :data:`DEFAULTS`."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LowRADefaults", "DEFAULTS"]


@dataclass(frozen=True)
class LowRADefaults:
    """Hyper-parameters of LowRA in one place.

    ``group = 64`` (block size of the absmax scaling, as QLoRA), ``bits = (1, 2, 4)`` (the
    candidate precisions), ``n_clusters = 128`` (K-means clusters of the two-level ILP) follow the
    paper. ``lloyd_n_steps``, ``lloyd_tol`` and ``weight_power`` are reconstructions (the paper gives
    no iteration count and describes the weights as "the absmax"). ``rank = 64``, ``alpha = 16``
    and ``loftq_n_steps = 5`` are LoftQ's reference settings for LLaMA-2 (LowRA's exact values are
    not stated); chapters at CPU scale use smaller ranks. ``time_limit`` (seconds per MILP) is
    ours.
    """

    group: int = 64
    bits: tuple[int, ...] = (1, 2, 4)
    lloyd_n_steps: int = 50
    lloyd_tol: float = 1e-6
    weight_power: int = 1
    n_clusters: int = 128
    rank: int = 64
    alpha: float = 16.0
    loftq_n_steps: int = 5
    half_bytes: int = 2  # bytes per stored fp16 value (LUT levels, thresholds, absmax)
    time_limit: float = 60.0


DEFAULTS = LowRADefaults()
