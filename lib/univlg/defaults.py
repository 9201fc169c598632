"""UniVLG's settings as the chapter's paper note reads them (paper tables not retrieved).

Values come from ``../shared/papers/08-univlg.md``, which read the official code's configs and
``scripts/main.sh`` (facebookresearch/univlg, CC-BY-NC: read for facts, nothing copied). The
``cpu_*`` fields are this book's reduced scale, stated beside the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["UniVLGDefaults", "DEFAULTS"]


@dataclass(frozen=True)
class UniVLGDefaults:
    """The paper's settings (Sec. 3 and the launch script) and this book's cpu scale."""

    # encoder (DINOv2 ViT-L/14 with registers, 448 px -> 32 x 32
    # tokens, 4 intermediate blocks)
    backbone: str = "dinov2_vitl14_reg"
    image_size: int = 448
    feature_blocks: tuple[int, ...] = (5, 11, 17, 23)
    # 3D relative attention: one block per feature level, [2, 2,
    # 6, 2] layers, 256-d, k = 8
    relpos_layers: tuple[int, ...] = (2, 2, 6, 2)
    relpos_dim: int = 256
    k: int = 8
    max_depth_m: float = 15.0
    voxel_sizes_m: tuple[float, ...] = (0.02, 0.04, 0.08, 0.16)
    # language-conditioned mask decoder
    n_queries: int = 100
    dim: int = 256
    heads: int = 8
    decoder_layers: int = 9  # 10 prediction stages: the initial queries + 9 layers
    temperature: float = 0.07  # grounding logits cos(W q, t) / 0.07
    mask_threshold: float = 0.5  # masked attention keeps sigmoid(m) >= 0.5
    # loss weights (Hungarian cost and loss)
    cost_weights: dict = field(
        default_factory=lambda: {
            "cls": 2.0,
            "mask_bce": 0.2,
            "dice": 0.2,
            "box_l1": 0.1,
            "giou": 0.1,
        }
    )
    loss_weights: dict = field(
        default_factory=lambda: {
            "token": 2.0,
            "mask_bce": 15.0,
            "dice": 6.0,
            "box_l1": 3.0,
            "giou": 3.0,
        }
    )
    no_object_weight: float = 0.1
    # optimiser
    lr: float = 1e-4
    weight_decay: float = 0.05
    warmup_steps: int = 1000
    max_iterations: int = 200_000
    frames_per_scene: int = 15
    # the fusion variant this book implements (FIX_PANET_BUG, see the chapter)
    fusion_variant: str = (
        "modulated backbone maps feed the decoder (FIX_PANET_BUG=True)"
    )
    # this book's cpu scale
    cpu_n_views: int = 3
    cpu_res: int = 32
    cpu_feature_res: int = 16
    cpu_dim: int = 64
    cpu_n_queries: int = 8
    cpu_heads: int = 4
    cpu_decoder_layers: int = 3
    cpu_relpos_layers: int = 2


DEFAULTS = UniVLGDefaults()
