"""The claims of chapter 06 (Niaparast et al., ICML 2025), as the book judges them (icml25.claims).

The paper reports its experiments as plots whose values could not be read, so "paper" states the
direction of each claim and where it is shown. Thresholds that stand for "orders of magnitude" or
"O(1)" are this book's reading, stated in the claim.
"""

from __future__ import annotations

from icml25.claims import Claim

CLAIMS = [
    Claim(
        id="speedup_eta0",
        claim="with perfect predictions (eta = 0), boosted Karger needs at least 10x fewer trials than Karger",
        paper="orders of magnitude fewer trials at eta = 0 (matching graphs, n = 600; Sec. 5 figure)",
        metric="matching_speedup_eta0",
        holds=lambda m: m["matching_speedup_eta0"] >= 10,
        direction=lambda m: m["matching_speedup_eta0"] > 1,
        judged_by="check: with perfect cut-edge predictions (eta = 0) boosted Karger needs at most 2 trials "
        "on average and at most a tenth of Karger's trials",
    ),
    Claim(
        id="eta1_meets_karger",
        claim="as eta -> 1 the boosted trials return to Karger's (within a factor 2 at eta = 1, rho = 0)",
        paper="the curves meet Karger's as eta -> 1 (Sec. 5 figure)",
        metric="matching_boosted_mean_trials_eta1_rho0",
        holds=lambda m: (
            0.5
            <= m["matching_boosted_mean_trials_eta1_rho0"]
            / m["matching_karger_mean_trials"]
            <= 2
        ),
        direction=lambda m: (
            m["matching_boosted_mean_trials_eta1_rho0"]
            > m["matching_boosted_mean_trials_eta0"]
        ),
    ),
    Claim(
        id="robust_threshold",
        claim="with the threshold t = Theta(1 + rho), adversarial predictions cost at most 3x Karger's trials",
        paper="O(1) x Karger's trials whatever the predictions (robustness theorem, Sec. 4)",
        metric="adversarial_threshold_over_karger",
        holds=lambda m: m["adversarial_threshold_over_karger"] <= 3,
        judged_by="check: with the threshold t = Theta(1 + rho), adversarial predictions cost at most 3x "
        "Karger's mean trials",
    ),
    Claim(
        id="threshold_needed",
        claim="boosting all the way (t = 2) costs more under adversarial predictions than the thresholded version",
        paper="the reason for the threshold (Sec. 4)",
        metric="adversarial_t2_over_karger",
        holds=lambda m: (
            m["adversarial_t2_over_karger"] > m["adversarial_threshold_over_karger"]
        ),
        judged_by="check: with the threshold t = Theta(1 + rho), adversarial predictions cost at most 3x "
        "Karger's mean trials",
    ),
    Claim(
        id="tsp_more_solved",
        claim="on the TSP LP instances, boosted Karger solves more (instance, run) pairs within 10 trials",
        paper="boosted solves more TSP instances in few trials (Sec. 5 figure)",
        metric="tsp_solved_within_10_boosted",
        holds=lambda m: (
            m["tsp_solved_within_10_boosted"] > m["tsp_solved_within_10_karger"]
        ),
        judged_by="check: on the TSP LP instances boosted Karger solves at least as many (instance, run) pairs "
        "as Karger within 10 trials",
    ),
    Claim(
        id="dense_fewer_trials",
        claim="on a dense graph (a random stand-in for sanr400-0-7) boosted Karger needs fewer trials (median)",
        paper="boosted < Karger on sanr400-0-7 (Sec. 5 figure)",
        metric="dense_boosted_median",
        holds=lambda m: m["dense_boosted_median"] < m["dense_karger_median"],
    ),
    Claim(
        id="learned_predictions",
        claim="predictions learned over a family of instances cut the mean trials to at most a third of Karger's",
        paper="learned predictions approach the best fixed prediction (Sec. 5)",
        metric="learned_over_karger",
        holds=lambda m: m["learned_over_karger"] <= 1 / 3,
        direction=lambda m: m["learned_over_karger"] < 1,
        judged_by="check: predictions learned by OGD over the family cut the mean trials on fresh instances to "
        "at most a third of Karger's",
    ),
]
