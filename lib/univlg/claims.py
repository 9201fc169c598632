"""The claims of chapter 08 (Jain et al., UniVLG, ICML 2025), as the book judges them.

The paper's result tables were not retrievable; "paper" gives the direction the abstract states
and, for ScanRefer, a public leaderboard snapshot. Thresholds are this book's.
"""

from __future__ import annotations

from icml25.claims import Claim

__all__ = ["CLAIMS"]

CLAIMS = [
    Claim(
        id="zero_init_identity",
        claim="at step 0 the 3D model's outputs equal the model without 3D layers (zero-initialised adapter, atol 1e-6)",
        paper="the adapter's last Linear is zero-initialised so that pretrained 2D features are kept at step 0 (code)",
        metric="zero_init_max_abs_diff",
        holds=lambda m: m["zero_init_max_abs_diff"] <= 1e-6,
        judged_by="check: at step 0 the 3D model's outputs equal the 2D model's",
    ),
    Claim(
        id="translation_invariant",
        claim="RelPos3DAttention is translation invariant (atol 1e-5)",
        paper="keys see only relative offsets p_j - p_i (Sec. 3.2)",
        metric="translation_max_abs_diff",
        holds=lambda m: m["translation_max_abs_diff"] <= 1e-5,
        judged_by="check: RelPos3DAttention is translation invariant",
    ),
    Claim(
        id="relational_beats_heuristic",
        claim="relational Acc@0.25 of the full model is at least the keyword heuristic's + 20 points",
        paper="state of the art on SR3D/NR3D/ScanRefer, > 15% over prior sensor-point-cloud methods (abstract); "
        "ScanRefer overall Acc@0.25 65.88 (leaderboard snapshot)",
        metric="rel_acc25_full",
        holds=lambda m: m["rel_acc25_full"] >= m["rel_acc25_heuristic"] + 0.20,
        direction=lambda m: m["rel_acc25_full"] > m["rel_acc25_heuristic"],
    ),
    Claim(
        id="3d_layers_help",
        claim="with 3D layers relational Acc@0.25 is at least that without them (judged only when the full model grounds some: > 0)",
        paper="3D layers over sensor point clouds improve grounding (ablation; table not read)",
        metric="rel_acc25_full",
        holds=lambda m: (
            m["rel_acc25_full"] > 0 and m["rel_acc25_full"] >= m["rel_acc25_no3d"]
        ),
    ),
    Claim(
        id="cotraining_no_harm",
        claim="in the 3D-scarce regime, 2D co-training is not significantly worse than 3D-only (paired bootstrap 95% upper bound >= 0)",
        paper="2D+3D co-training improves 3D grounding with no loss on 2D (abstract)",
        metric="scarce_cotrain_minus_3donly_acc25",
        holds=lambda m: m["scarce_cotrain_minus_3donly_hi"] >= 0.0,
        direction=lambda m: m["scarce_cotrain_minus_3donly_acc25"] >= 0.0,
    ),
    Claim(
        id="cotraining_gain",
        claim="in the 3D-scarce regime, 2D co-training gains at least 3 points of Acc@0.25 over 3D-only",
        paper="co-training helps 3D grounding in and out of domain (abstract)",
        metric="scarce_cotrain_minus_3donly_acc25",
        holds=lambda m: m["scarce_cotrain_minus_3donly_acc25"] >= 0.03,
        direction=lambda m: m["scarce_cotrain_minus_3donly_acc25"] > 0.0,
    ),
    Claim(
        id="mask_beats_box",
        claim="the mask decoder's Acc@0.5 is at least the box decoder's (judged only when the mask decoder grounds some: > 0)",
        paper="decoding masks outperforms decoding boxes (ablation; table not read)",
        metric="acc50_full",
        holds=lambda m: m["acc50_full"] > 0 and m["acc50_full"] >= m["acc50_box"],
    ),
    Claim(
        id="one_decoder_2d_3d",
        claim="one decoder (the same weights) returns masks over pixels for images and over points for scenes",
        paper="a single decoder shared by 2D and 3D (Sec. 3.3)",
        metric="shared_decoder_ok",
        holds=lambda m: bool(m["shared_decoder_ok"]),
        judged_by="check: one decoder gives pixel and point masks",
    ),
]
