"""The paper's settings for chapter 05 (SaP, Chen, As and Krause, ICML 2025).

From the official HarmBench pipeline configuration and the class defaults of the public code
(``lasgroup/SafetyPolytope``, read in the fork ``Anderson-Lee-Git/SafetyPolytope``): see
``../shared/papers/05-safety-polytope.md``. The notebook's ``gpu`` profile reads these.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SafetyPolytopeDefaults:
    """Settings of SaP's polytope training and SafeFlow steering.

    Attributes:
        layer: hidden layer the paper reads (20, for all three LLMs; the chapter's MiniLM has 6).
        K: facets (50 for Llama-2-7B-chat and Qwen2-1.5B, 30 for Ministral-8B).
        F: width of the concept encoder ``E(h) = ReLU(W_e h + b_e)``.
        margin: hinge margin ``m`` (60 / 30 / 20 for Llama / Qwen / Ministral on raw states;
            1.0 in the BeaverTails config, the one used here on standardised states).
        unsafe_weight: ``w_u`` (2; 4 for Qwen).
        l1_feat: ``lambda_f``, weight of ``mean ||E(h)||_1`` (1.0 in the config, 0.1 class default).
        l1_phi: ``lambda_phi``, weight of ``mean ||phi_k||_1``.
        entropy_weight: ``lambda_H``, weight of ``-H(p)`` (no gradient: see ``SafetyPolytope.loss``).
        entropy_threshold_frac: re-assignment runs while ``H < frac log2 K``.
        max_attempts: re-assignment proposals per batch.
        lr, batch: Adam step size and batch size of the polytope fit.
        epochs_beavertails, epochs_harmbench: 20 on BeaverTails, 1 in the HarmBench pipeline.
        lam, mu, steer_lr, steer_n_steps, first_n: SafeFlow's ``lambda``, ``mu``, SGD step size,
            iterations (the code's ``num_iterations=1``) and the number of new tokens checked.
        refusal: the fixed string of ``use_backup_response`` mode.
    """

    layer: int = 20
    K: int = 50
    F: int = 16384
    margin: float = 1.0
    unsafe_weight: float = 2.0
    l1_feat: float = 0.1
    l1_phi: float = 1e-4
    entropy_weight: float = 1.0
    entropy_threshold_frac: float = 0.5
    max_attempts: int = 100
    lr: float = 1e-2
    batch: int = 128
    epochs_beavertails: int = 20
    epochs_harmbench: int = 1
    lam: float = 2.0
    mu: float = 1e-4
    steer_lr: float = 1e-2
    steer_n_steps: int = 1
    first_n: int = 20
    refusal: str = "Sorry, I can't answer your request."


DEFAULTS = SafetyPolytopeDefaults()
