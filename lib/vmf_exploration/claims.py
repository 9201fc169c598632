"""The claims of chapter 02 (Bendada et al., ICML 2025), as the book judges them (icml25.claims).

The paper's values are read off its figures (as the reading note summarises them), so "paper"
states the direction and where it is shown. The tolerances are this book's: the Monte Carlo
standard errors of the run (recorded with the ratios) and, for the equivalence at d = 4, the size
of the first-order correction P1/P0 - 1 that P0 neglects at the run's n.
"""

from __future__ import annotations

from icml25.claims import Claim

__all__ = ["CLAIMS"]

_A_CHECK = (
    "check: at d = 4 both explorations agree with P0 (Proposition 4.2) at n = a_n_eval."
)
_B_CHECK = "check: at the largest dimension, the sign of P_vMF - P_B is the sign of P1 - P0 (Prop. 4.4),"
_D_CHECK = "check: truncated Boltzmann never plays an action ranked beyond m"

CLAIMS = [
    Claim(
        id="equivalence_vmf",
        claim="at d = 4 the probability that vMF-exp plays an action of similarity alpha matches P0 (within 4 "
        "standard errors plus |P1/P0 - 1|, a tolerance under 10 %)",
        paper="P_vMF ~ P0 at d = 4, n up to 1e6 (Prop. 4.2, Fig. 2a)",
        metric="A_ratio_vmf_p0",
        holds=lambda m: abs(m["A_ratio_vmf_p0"] - 1) < m["A_tolerance_vmf"] < 0.10,
        judged_by=_A_CHECK,
    ),
    Claim(
        id="equivalence_boltzmann",
        claim="at d = 4 the probability that B-exp plays that action matches P0 (same tolerance)",
        paper="P_B ~ P0 at d = 4 (Prop. 4.2, Fig. 2a)",
        metric="A_ratio_boltzmann_p0",
        holds=lambda m: abs(m["A_ratio_boltzmann_p0"] - 1) < m["A_tolerance_boltzmann"],
        judged_by=_A_CHECK,
    ),
    Claim(
        id="deviation_close_action",
        claim="at the largest dimension vMF-exp gives the close action (alpha = 0.6) less probability than "
        "B-exp, by more than 4 standard errors",
        paper="P_vMF < P_B for alpha > 0 in high dimension, the sign of P1 - P0 (Prop. 4.4, Fig. 2/3)",
        metric="B_ratio_vmf_boltzmann_close",
        holds=lambda m: m["B_ratio_vmf_boltzmann_close"] < 1 - 4 * m["B_se_close"],
        direction=lambda m: m["B_ratio_vmf_boltzmann_close"] < 1,
        judged_by=_B_CHECK,
    ),
    Claim(
        id="deviation_far_action",
        claim="at the largest dimension vMF-exp gives the far action (alpha = -0.2) more probability than "
        "B-exp, by more than 4 standard errors",
        paper="P_vMF > P_B for alpha < 0 in high dimension (Prop. 4.4, Fig. 2/3)",
        metric="B_ratio_vmf_boltzmann_far",
        holds=lambda m: m["B_ratio_vmf_boltzmann_far"] > 1 + 4 * m["B_se_far"],
        direction=lambda m: m["B_ratio_vmf_boltzmann_far"] > 1,
        judged_by=_B_CHECK,
    ),
    Claim(
        id="deviation_grows_with_d",
        claim="the deviation |P_vMF/P_B - 1| is larger at the largest dimension than at d = 4, for both actions",
        paper="the gap between vMF-exp and B-exp grows with d (Fig. 2/3)",
        metric="B_deviation_growth_min",
        holds=lambda m: m["B_deviation_growth_min"] > 1,
    ),
    Claim(
        id="exact_index_faster",
        claim="vMF-exp with an exact index is faster per decision than exact Boltzmann sampling at the largest "
        "catalogue",
        paper="vMF-exp needs one nearest-neighbour query, B-exp every score (property P1, Sec. 3)",
        metric="C_speedup_vmf_exact_vs_boltzmann",
        holds=lambda m: m["C_speedup_vmf_exact_vs_boltzmann"] > 1,
        judged_by="check: vMF-exp with an exact index is faster than exact Boltzmann sampling at the largest size",
    ),
    Claim(
        id="hnsw_faster",
        claim="vMF-exp with an HNSW index is faster per decision than exact Boltzmann sampling at the largest "
        "catalogue indexed by HNSW",
        paper="millisecond-scale decisions over millions of tracks with an ANN index (Sec. 6; no ratio given)",
        metric="C_speedup_vmf_hnsw_vs_boltzmann",
        holds=lambda m: m["C_speedup_vmf_hnsw_vs_boltzmann"] > 1,
    ),
    Claim(
        id="support_beyond_top_m",
        claim="truncated Boltzmann never plays an action ranked beyond m = 100, vMF-exp does",
        paper="property P2: vMF-exp keeps the whole catalogue reachable, TB-exp cannot (Sec. 3)",
        metric="D_vmf_share_beyond_top_m",
        holds=lambda m: (
            m["D_tb_share_beyond_top_m"] == 0 and m["D_vmf_share_beyond_top_m"] > 0
        ),
        judged_by=_D_CHECK,
    ),
    Claim(
        id="support_matches_boltzmann",
        claim="vMF-exp plays the actions beyond the top m within a factor 2 of full Boltzmann's share",
        paper="asymptotically equivalent to B-exp (Prop. 4.2)",
        metric="D_vmf_over_boltzmann_beyond",
        holds=lambda m: 0.5 < m["D_vmf_over_boltzmann_beyond"] < 2.0,
        judged_by=_D_CHECK,
    ),
]
