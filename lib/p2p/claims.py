"""The claims of chapter 09 (Vandenhirtz and Vogt, ICML 2025), as the book judges them (icml25.claims).

The paper's tables could not be read, so "paper" states each claim's direction and where it is
made. Where the paper's claim is qualitative ("retains the accuracy", "small masks"), the book's
threshold is stated in the claim.
"""

from __future__ import annotations

from icml25.claims import Claim

__all__ = ["CLAIMS"]

CLAIMS = [
    Claim(
        id="accuracy_retained",
        claim="P2P at kappa = 0.9 is within 8 accuracy points of the black box (same classifier, trained from scratch)",
        paper="P2P retains the black box's accuracy (CIFAR-10, ImageNet, BAM, COCO-10; tables not read)",
        metric="p2p_accuracy_k09",
        holds=lambda m: m["p2p_accuracy_k09"] >= m["blackbox_accuracy"] - 0.08,
        judged_by="check: P2P (kappa = 0.9) stays within 8 accuracy points of the black box",
    ),
    Claim(
        id="small_masks",
        claim="P2P at kappa = 0.9 keeps at most 25% of the pixels (at most 50%: direction only)",
        paper="instance-wise masks keep a small part of the image (numbers not read)",
        metric="p2p_kept_k09",
        holds=lambda m: m["p2p_kept_k09"] <= 0.25,
        direction=lambda m: m["p2p_kept_k09"] <= 0.5,
    ),
    Claim(
        id="localisation_above_chance",
        claim="P2P's localisation precision (mask_perc_corr) is at least 3x the object-area fraction",
        paper="P2P localises the object best (ImageNet-9, BAM, COCO-10; tables not read)",
        metric="p2p_localization",
        holds=lambda m: m["p2p_localization"] >= 3 * m["object_area"],
        direction=lambda m: m["p2p_localization"] > m["object_area"],
        judged_by="check: P2P's kept pixels lie on the object at least 3x as often as chance",
    ),
    Claim(
        id="localisation_beats_posthoc",
        claim="P2P's localisation precision beats every captum top-k mask at its kept fraction by at least 0.02",
        paper="built-in masks localise better than post-hoc attributions (tables not read)",
        metric="p2p_minus_best_captum_localization",
        holds=lambda m: m["p2p_minus_best_captum_localization"] >= 0.02,
        direction=lambda m: m["p2p_minus_best_captum_localization"] > 0,
    ),
    Claim(
        id="superpixels_beat_pixels",
        claim=(
            "superpixel P2P localises at least as well as pixel-group (2 x 2 patch) P2P, judged only when the "
            "pixel-group ablation learned (test accuracy >= 0.5; below that its masks say nothing)"
        ),
        paper="grouping by superpixels gives better masks than pixel-wise selection (tables not read)",
        metric="pixel_group_localization",
        holds=lambda m: (
            m["pixel_group_accuracy"] >= 0.5
            and m["p2p_localization"] >= m["pixel_group_localization"]
        ),
    ),
    Claim(
        id="superpixels_more_accurate",
        claim=(
            "superpixel P2P is more accurate than pixel-group P2P, judged only when the pixel-group ablation "
            "learned (test accuracy >= 0.5; it trains on a third of the images for a third of the epochs)"
        ),
        paper="pixel-level instance-wise selection is the weaker baseline (tables not read)",
        metric="pixel_group_accuracy",
        holds=lambda m: (
            m["pixel_group_accuracy"] >= 0.5
            and m["p2p_accuracy_k09"] > m["pixel_group_accuracy"]
        ),
    ),
    Claim(
        id="deletion_faithful",
        claim="deleting superpixels in P2P's order destroys its prediction faster than a random order (lower AUC)",
        paper="P2P's masks are faithful: insertion and deletion (tables not read)",
        metric="p2p_deletion_auc",
        holds=lambda m: m["p2p_deletion_auc"] < m["random_deletion_auc"],
        judged_by="check: deleting superpixels in P2P's order destroys its prediction faster than a random order",
    ),
    Claim(
        id="insertion_faithful",
        claim="inserting superpixels in P2P's order restores its prediction faster than a random order (higher AUC)",
        paper="P2P's masks are faithful: insertion and deletion (tables not read)",
        metric="p2p_insertion_auc",
        holds=lambda m: m["p2p_insertion_auc"] > m["random_insertion_auc"],
    ),
    Claim(
        id="dynamic_tau",
        claim="the budget chosen by the threshold search varies across images (standard deviation of tau > 0.02)",
        paper="dynamic, instance-specific sparsity (Sec. on dynamic thresholds)",
        metric="tau_std",
        holds=lambda m: m["tau_std"] > 0.02,
        judged_by="check: the chosen budget varies across instances",
    ),
]
