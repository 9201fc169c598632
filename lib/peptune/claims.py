"""The claims of chapter 18 (Tang et al., PepTune, ICML 2025), as the book judges them (icml25.claims).

The paper's result tables could not be read: "paper" states each claim's direction and where the
paper makes it (from the paper note's reading of the text and the official code); thresholds are
this book's reading, stated in the claim.
"""

from __future__ import annotations

from icml25.claims import Claim

__all__ = ["CLAIMS"]

_CHECK_SCHED = (
    "check: at t = 0.5 the bond-dependent schedule masks a peptide-bond token with probability "
    "0.1249 and any other token with 0.4995"
)

CLAIMS = [
    Claim(
        id="bond_schedule_t05",
        claim="the bond-dependent schedule (w = 3, eps = 1e-3) masks bonds with probability 0.1249 and other tokens with 0.4995 at t = 0.5",
        paper="log-polynomial masking of peptide bonds, (1 - eps) t^3 vs (1 - eps) t (Sec. 3.2)",
        metric="mask_prob_bond_t05",
        holds=lambda m: (
            abs(m["mask_prob_bond_t05"] - 0.124875) < 1e-6
            and abs(m["mask_prob_other_t05"] - 0.4995) < 1e-6
        ),
        judged_by=_CHECK_SCHED,
    ),
    Claim(
        id="unguided_validity",
        claim="most unguided PepMDLM samples are valid peptides (strict backbone rule, at least 50 %)",
        paper="bond-dependent masking and the invalid loss keep generated peptides valid (Sec. 3.2-3.3; Table 7 not read)",
        metric="unguided_validity",
        holds=lambda m: m["unguided_validity"] >= 0.5,
        direction=lambda m: m["unguided_validity"] > 0,
    ),
    Claim(
        id="unguided_uniqueness",
        claim="valid unguided samples are unique (at least 90 % distinct)",
        paper="higher uniqueness and diversity than HELM-GPT (Table 7, numbers not read)",
        metric="unguided_uniqueness",
        holds=lambda m: m["unguided_uniqueness"] >= 0.9,
    ),
    Claim(
        id="ablation_validity",
        claim="bond-dependent masking plus the invalid loss give more valid samples than either ablation",
        paper="both components raise validity (Sec. 3.2-3.3, ablations; numbers not read)",
        metric="ablation_valid_peptune",
        holds=lambda m: (
            m["ablation_valid_peptune"]
            > max(m["ablation_valid_uniform"], m["ablation_valid_noinvalid"])
        ),
    ),
    Claim(
        id="mctg_validity_rises",
        claim="the valid fraction of MCTG children rises to at least 90 % (last 5 iterations)",
        paper="reaches 100 % after about 20 MCTS iterations (text)",
        metric="mctg_valid_last5",
        holds=lambda m: m["mctg_valid_last5"] >= 0.9,
        direction=lambda m: m["mctg_valid_last5"] > m["mctg_valid_first5"],
    ),
    Claim(
        id="front_beats_unguided",
        claim="every objective's mean over the MCTG front exceeds its mean over valid unguided samples",
        paper="MCTG improves every guided property over unconditional samples (Sec. 5 figures, numbers not read)",
        metric="front_minus_unguided_min",
        holds=lambda m: m["front_minus_unguided_min"] > 0,
    ),
    Claim(
        id="hv_vs_best_of_n",
        claim="the MCTG front has a larger hypervolume than best-of-N unguided sampling at equal classifier calls",
        paper="guidance beats unguided generation (Sec. 5; no best-of-N baseline in the paper: this book's test)",
        metric="hv_mctg",
        holds=lambda m: m["hv_mctg"] > m["hv_bon"],
    ),
    Claim(
        id="hv_vs_nsga2",
        claim="the MCTG front has a larger hypervolume than NSGA-II over residue sequences at equal classifier calls",
        paper="no GA baseline in the paper (this book's test)",
        metric="hv_nsga",
        holds=lambda m: m["hv_mctg"] > m["hv_nsga"],
    ),
]
