"""The claims of chapter 07 (Huang et al., ICML 2025), as the book judges them (icml25.claims).

Only the paper's abstract and introduction were reachable, so "paper" states the claim's direction
or quotes the official repository's notebook outputs (other models, other units: only the
direction compares). The slack in the bound check (10 %) and the "not worse by more than 0.02" of
the TV comparison are this book's, stated in the claim.
"""

from __future__ import annotations

from icml25.claims import Claim

__all__ = ["CLAIMS"]

CLAIMS = [
    Claim(
        id="tv_bound",
        claim="the TV between the analytic and each learned path stays under the bound 1/2 int E|r_t| dt (10 % "
        "slack for Monte Carlo and Euler error), for every model at every evaluated t",
        paper="TV(p_t, p_hat_t) is bounded by the divergence residual integrated over time (main theorem; "
        "statement reconstructed from the abstract)",
        metric="gmm_tv_over_bound_max",
        holds=lambda m: m["gmm_tv_over_bound_max"] <= 1.10,
        judged_by="check: the TV bound holds for every model at every evaluated t.",
    ),
    Claim(
        id="residual_lower",
        claim="at equal steps, from the same initial weights and data, FDM's divergence residual (the bound's "
        "integrand averaged over 11 times) is lower than CFM's",
        paper="FDM controls the divergence error that flow matching leaves (abstract)",
        metric="gmm_residual_fdm",
        holds=lambda m: m["gmm_residual_fdm"] < m["gmm_residual_cfm"],
        judged_by="check: at equal steps, FDM's divergence residual",
    ),
    Claim(
        id="tv_not_worse",
        claim="FDM's TV at t = 1 is not worse than CFM's by more than 0.02 (the seed-to-seed spread is ~0.03)",
        paper="FDM improves the learned density over flow matching (abstract)",
        metric="gmm_tv_fdm",
        holds=lambda m: m["gmm_tv_fdm"] <= m["gmm_tv_cfm"] + 0.02,
        judged_by="check: FDM's final TV is not worse than CFM's beyond noise",
    ),
    Claim(
        id="tv_lower",
        claim="FDM's TV at t = 1 is lower than CFM's",
        paper="FDM improves the learned density over flow matching (abstract)",
        metric="gmm_tv_fdm",
        holds=lambda m: m["gmm_tv_fdm"] < m["gmm_tv_cfm"],
    ),
    Claim(
        id="derived_loss_helps",
        claim="the paper's derived loss (absolute, unweighted residual) also gives a lower TV at t = 1 than CFM",
        paper="the FDM loss as derived in the paper (Sec. 3; form reconstructed)",
        metric="gmm_tv_fdm_derived",
        holds=lambda m: m["gmm_tv_fdm_derived"] < m["gmm_tv_cfm"],
    ),
    Claim(
        id="checkerboard_learned",
        claim="both flows learn the checkerboard: histogram TV to the data at most half the N(0, I) source's",
        paper="both models learn the 2-D benchmarks (figure only)",
        metric="checkerboard_tv_fdm",
        holds=lambda m: (
            max(m["checkerboard_tv_fdm"], m["checkerboard_tv_cfm"])
            < 0.5 * m["checkerboard_tv_source"]
        ),
        judged_by="check: both flows learned the checkerboard",
    ),
    Claim(
        id="checkerboard_fdm_better",
        claim="on the checkerboard FDM's histogram TV to the data is lower than CFM's",
        paper="FDM's samples are closer to the data than FM's (2-D figure; numbers not read)",
        metric="checkerboard_tv_fdm",
        holds=lambda m: m["checkerboard_tv_fdm"] < m["checkerboard_tv_cfm"],
    ),
    Claim(
        id="lorenz_beats_gaussian",
        claim="both flows model the Lorenz chunks better than a full-covariance Gaussian (held-out NLL lower by "
        "more than 1 nat)",
        paper="(a sanity baseline of this book, not in the paper)",
        metric="lorenz_nll_fdm",
        holds=lambda m: (
            max(m["lorenz_nll_fdm"], m["lorenz_nll_cfm"]) < m["lorenz_nll_gaussian"] - 1
        ),
        judged_by="check: both flows model the 3T-dimensional trajectory distribution better",
    ),
    Claim(
        id="lorenz_fdm_better",
        claim="on held-out Lorenz chunks FDM's NLL is lower than CFM's",
        paper="FDM -14.408 vs FM -13.942 nats (0.47 better; repo nll.ipynb, UNet on 60-step chunks, other units)",
        metric="lorenz_nll_fdm",
        holds=lambda m: m["lorenz_nll_fdm"] < m["lorenz_nll_cfm"],
    ),
    Claim(
        id="training_cost",
        claim="an FDM training step (exact divergence, d = 2) costs more wall time than a CFM step",
        paper="extra cost at training, none at sampling (abstract)",
        metric="step_cost_ratio_exact_d2",
        holds=lambda m: m["step_cost_ratio_exact_d2"] > 1,
    ),
]
