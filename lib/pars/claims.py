"""The claims of chapter 15 (Kim et al., PARS, ICML 2025), as the book judges them (icml25.claims).

Only the paper's abstract and the first page of its arXiv HTML were readable (re-checked in review:
the official code ``LGAI-Research/pars`` has no obtainable snapshot, and no stored page holds the
appendix Tables 8-11): "paper" states each claim's direction and where the
paper makes it, with the numbers of the chapter's prototype or of secondary summaries where
those are all we have. Thresholds are this book's reading, stated in the claim.
"""

from __future__ import annotations

from icml25.claims import Claim

__all__ = ["CLAIMS"]

_CHECK_A = (
    "check: (i) the plain critic at c = 100 exceeds its in-data maximum in the feasible box off the "
    "data; (ii) with LN no probe point"
)
_CHECK_B = (
    "check: PARS's mean Q on infeasible actions is below its mean on dataset actions, by a larger gap "
    "(in units of c) than TD3+BC's"
)

CLAIMS = [
    Claim(
        id="relu_overshoots",
        claim="a plain ReLU critic (c = 100) exceeds its in-data maximum on feasible actions off the data",
        paper="linear extrapolation of Q beyond the data range is the problem (abstract; Sec. 3 figures not read)",
        metric="a_plain_c100_box_over_id",
        holds=lambda m: m["a_plain_c100_box_over_id"] > 1,
        judged_by=_CHECK_A,
    ),
    Claim(
        id="ln_bounds_ood",
        claim="with LayerNorm no probe point (box or rays to |a| = 100) exceeds the in-data maximum by more than 0.005 c",
        paper="LN bounds the critic's extrapolation (Sec. 4, as the paper note reads it)",
        metric="a_ln_max_excess_over_c",
        holds=lambda m: m["a_ln_max_excess_over_c"] <= 0.005,
        judged_by=_CHECK_A,
    ),
    Claim(
        id="pa_anchors_far_field",
        claim="with LN + PA the mean Q over rays at |a| = U is within 10% of Q_min (= -c)",
        paper="PA guides Q down outside the data (abstract); prototype ray Q/c at |a| = 100: -1.00",
        metric="a_lnpa_c100_ray_end_over_c",
        holds=lambda m: abs(m["a_lnpa_c100_ray_end_over_c"] + 1.0) <= 0.1,
        judged_by=_CHECK_A,
    ),
    Claim(
        id="rs_lowers_plateau",
        claim="under LN the far-field plateau Q/c falls as c grows (c = 1 > 10 > 100)",
        paper="reward scaling with LN separates in-data from out-of-data values (Sec. 4, argument)",
        metric="a_ln_c100_ray_end_over_c",
        holds=lambda m: (
            m["a_ln_c100_ray_end_over_c"]
            < m["a_ln_c10_ray_end_over_c"]
            < m["a_ln_c1_ray_end_over_c"]
        ),
        direction=lambda m: m["a_ln_c100_ray_end_over_c"] < m["a_ln_c1_ray_end_over_c"],
    ),
    Claim(
        id="pars_infeasible_below_data",
        claim="PARS's Q at infeasible actions lies below its Q at dataset actions, by a larger gap (per unit c) than TD3+BC's",
        paper="PARS makes Q decrease outside the data (abstract)",
        metric="b_gap_over_c_pars",
        holds=lambda m: (
            m["b_gap_over_c_pars"] > 0
            and m["b_gap_over_c_pars"] > m["b_gap_over_c_td3bc"]
        ),
        judged_by=_CHECK_B,
    ),
    Claim(
        id="pars_beats_td3bc",
        claim=(
            "PARS succeeds more often than TD3+BC offline (by more than 0.05 on PointMazeLite; at 1.5k updates "
            "both use the BC weight beta = 0.4, so success is dominated by behaviour cloning and our TD3+BC "
            "swings across seeds: one run of 50 episodes per seed, not a test of the paper's claim)"
        ),
        paper="AntMaze average 81.6 offline, above the baselines (secondary summary; Tables 1-2 not read)",
        metric="b_pars_minus_td3bc_success",
        holds=lambda m: m["b_pars_minus_td3bc_success"] > 0.05,
        direction=lambda m: m["b_pars_minus_td3bc_success"] > 0,
    ),
    Claim(
        id="o2o_keeps_or_improves",
        claim="online fine-tuning keeps or improves the offline success",
        paper="AntMaze average 95.2 after offline-to-online (secondary summary; Table 3 not read)",
        metric="c_success_after",
        holds=lambda m: m["c_success_after"] >= m["c_success_before"],
    ),
    Claim(
        id="hopper_q_min",
        claim="Q_min = c r_min / (1 - gamma) gives Hopper's -166 (r_min = -0.166, c = 10, gamma = 0.99)",
        paper="Hopper Q_min -166 (Table 8 as transcribed by a third party)",
        metric="hopper_q_min",
        holds=lambda m: abs(m["hopper_q_min"] + 166.0) < 1e-6,
    ),
]
