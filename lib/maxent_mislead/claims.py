"""The claims of chapter 17 (Zhang, Chang and Gao, ICML 2025), as the book judges them (icml25.claims).

Only the abstract, introduction and reviews were readable: "paper" quotes its findings in words,
and the exact numbers of the toys are the reading notes' own computations (Toy A, Toy B and the
bifurcation extension are reconstructions). The thresholds (within 0.05 of the optimum for
"stays", more than 0.3 away for "leaves") are this book's, stated in the claim.
"""

from __future__ import annotations

from icml25.claims import Claim

__all__ = ["CLAIMS"]

_TOY_A_CHECK = (
    "check: alpha* matches the notes' 0.3341 (w = 0.05) and 0.2172 (w = 0.01) to 1e-3"
)
_BANDIT_CHECK = "check: started at the optimum, TD3 and SAC with alpha = 0.05 stay within 0.05 of a = 0.6, while"

CLAIMS = [
    Claim(
        id="threshold_alpha",
        claim="in Toy A MaxEnt switches from the precise to the robust branch at alpha* = 0.3341 (w = 0.05; soft VI "
        "flips there, plain VI never)",
        paper="MaxEnt prefers the robust branch above a temperature threshold (Sec. 5; the notes' Toy A: 0.3341)",
        metric="alpha_star_w005",
        holds=lambda m: abs(m["alpha_star_w005"] - 0.3341) < 1e-3,
        judged_by=_TOY_A_CHECK,
    ),
    Claim(
        id="narrower_lower_threshold",
        claim="a narrower precise set (w = 0.01) lowers the threshold, to 0.2172",
        paper="the narrower the precise region, the smaller the misleading temperature (Sec. 5; notes: 0.2172)",
        metric="alpha_star_w001",
        holds=lambda m: (
            abs(m["alpha_star_w001"] - 0.2172) < 1e-3
            and m["alpha_star_w001"] < m["alpha_star_w005"]
        ),
        judged_by=_TOY_A_CHECK,
    ),
    Claim(
        id="soft_optimum_drains",
        claim="in Toy B the exact soft optimum keeps > 85 % of its mass near the narrow peak at alpha = 0.2, < 35 % "
        "at alpha = 0.5, half at alpha = 0.3479",
        paper="the soft optimum leaves a narrow optimum as alpha grows (Sec. 5; notes' Toy B: 0.3479)",
        metric="toy_b_half_mass_alpha",
        holds=lambda m: (
            m["toy_b_mass_alpha02"] > 0.85
            and m["toy_b_mass_alpha05"] < 0.35
            and abs(m["toy_b_half_mass_alpha"] - 0.3479) < 5e-4
        ),
        judged_by="check: Toy B's exact soft-optimal mass within 0.1 of the narrow peak",
    ),
    Claim(
        id="extension_misleads",
        claim="the bifurcation extension of a random MDP makes the soft policy (alpha = 1) rank the plain-optimal "
        "action below another one at state 0",
        paper="any MDP can be extended so that MaxEnt is steered to a suboptimal action (Sec. 5; construction not read)",
        metric="ext_rank_astar_largest_alpha",
        holds=lambda m: m["ext_rank_astar_largest_alpha"] > 1,
        direction=lambda m: (
            m["ext_p_astar_extended_largest_alpha"]
            < m["ext_p_astar_original_largest_alpha"]
        ),
    ),
    Claim(
        id="sac_misled",
        claim="on the precision bandit, started at the optimum a = 0.6, SAC with alpha = 1 leaves it (|a - 0.6| > 0.3)",
        paper="SAC is misled on precision control (Fig. 1, Sec. 6)",
        metric="bandit_sac1_final_action",
        holds=lambda m: abs(m["bandit_sac1_final_action"] - 0.6) > 0.3,
        judged_by=_BANDIT_CHECK,
    ),
    Claim(
        id="non_maxent_stays",
        claim="TD3 and SAC with alpha = 0.05 stay within 0.05 of the optimum",
        paper="non-MaxEnt methods (TD3/PPO) succeed where SAC fails (Sec. 6)",
        metric="bandit_td3_final_action",
        holds=lambda m: (
            abs(m["bandit_td3_final_action"] - 0.6) <= 0.05
            and abs(m["bandit_sac005_final_action"] - 0.6) <= 0.05
        ),
        judged_by=_BANDIT_CHECK,
    ),
    Claim(
        id="adaent_recovers",
        claim="SAC-AdaEnt (alpha = 1) stays within 0.05 of the bandit's optimum (direction: it ends at most half as "
        "far from it as SAC with alpha = 1)",
        paper="SAC-AdaEnt recovers much of the gap on the misleading tasks (Sec. 7)",
        metric="bandit_adaent1_final_action",
        holds=lambda m: abs(m["bandit_adaent1_final_action"] - 0.6) <= 0.05,
        direction=lambda m: (
            abs(m["bandit_adaent1_final_action"] - 0.6)
            <= 0.5 * abs(m["bandit_sac1_final_action"] - 0.6)
        ),
    ),
    Claim(
        id="obstacle_td3_ppo_reach",
        claim="on Obstacle2D TD3 or PPO reaches the goal while SAC does not (short cpu runs)",
        paper="Obstacle2D: PPO/TD3 reach the goal, SAC does not (Sec. 6; figures not read)",
        metric="obstacle_goal_rates",
        holds=lambda m: (
            max(m["obstacle_goal_rates"]["td3"], m["obstacle_goal_rates"]["ppo"]) > 0
            and m["obstacle_goal_rates"]["sac"] == 0
        ),
    ),
]
