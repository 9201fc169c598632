"""The loops the chapter's cells call (Experiments A-D of chapter 05)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from icml25.checks import check_int, check_rng

from .baselines import (
    MeanDifferenceGenerator,
    fit_mlp,
    logistic_probe,
    mean_difference_direction,
)
from .generation import SteeredGenerator
from .lm import WordTokenizer, make_dialogues, train_lm
from .method import fit_polytope, project_linear_polytope, steer_hidden
from .metrics import (
    attack_success_rate,
    detection_report,
    facet_category_nmi,
    nmi_permutation_null,
    rule_judge,
)

__all__ = [
    "split_standardise",
    "detection_experiment",
    "specialisation_experiment",
    "steering_geometry",
    "lm_states",
    "generation_experiment",
]


def split_standardise(
    H: np.ndarray, y: np.ndarray, rng: np.random.Generator, test_frac: float = 0.2
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An 80/20 split (stratified by label) and the states standardised by the training mean/std.

    Returns: ``(Z (N, d) float32, train_idx, test_idx, (mean, std) stacked (2, d))``.

    Raises: ValueError: test_frac outside (0, 1). TypeError: rng.
    """
    rng = check_rng(rng)
    if not 0 < test_frac < 1:
        raise ValueError(f"test_frac must lie in (0, 1), got {test_frac}")
    y = np.asarray(y)
    te = np.concatenate(
        [
            rng.permutation(np.flatnonzero(y == c))[
                : int(round(test_frac * (y == c).sum()))
            ]
            for c in (0, 1)
        ]
    )
    tr = np.setdiff1d(np.arange(len(y)), te)
    mu, sd = H[tr].mean(0), H[tr].std(0) + 1e-6
    return (
        ((H - mu) / sd).astype(np.float32),
        rng.permutation(tr),
        np.sort(te),
        np.stack([mu, sd]),
    )


def detection_experiment(
    Z: np.ndarray,
    y: np.ndarray,
    tr: np.ndarray,
    te: np.ndarray,
    Ks: list[int],
    epochs: int,
    F: int,
    rng: np.random.Generator,
    **poly_kw: Any,
) -> tuple[list[dict], dict]:
    """Experiment A: SaP for each K against the code's MLP (K = max Ks) and a logistic probe.

    Returns: ``(rows, polytopes by K)``; a row holds ``method, K, acc, fpr, fnr, f1, recall, fit_s``.
    """
    rng = check_rng(rng)
    rows, polys = [], {}
    for K in Ks:
        t0 = time.perf_counter()
        poly = fit_polytope(Z[tr], y[tr], K, epochs, rng=rng, F=F, **poly_kw)
        polys[K] = poly
        rows.append(
            {
                "method": "SaP",
                "K": K,
                **detection_report(y[te], poly.is_safe(Z[te])),
                "fit_s": time.perf_counter() - t0,
            }
        )
    t0 = time.perf_counter()
    mlp = fit_mlp(Z[tr], y[tr], epochs, rng=rng, F=F, K=max(Ks))
    rows.append(
        {
            "method": "MLP (code)",
            "K": max(Ks),
            **detection_report(y[te], mlp.is_safe(Z[te])),
            "fit_s": time.perf_counter() - t0,
        }
    )
    t0 = time.perf_counter()
    probe = logistic_probe(Z[tr], y[tr])
    rows.append(
        {
            "method": "logistic probe",
            "K": 1,
            **detection_report(y[te], probe.predict(Z[te])),
            "fit_s": time.perf_counter() - t0,
        }
    )
    polys["mlp"] = mlp
    return rows, polys


def specialisation_experiment(
    Z: np.ndarray,
    y: np.ndarray,
    categories: np.ndarray,
    tr: np.ndarray,
    te: np.ndarray,
    K: int,
    epochs: int,
    F: int,
    rng: np.random.Generator,
    n_perm: int = 200,
    n_reps: int = 1,
) -> list[dict]:
    """Experiment B: NMI of the argmax facet with the HarmBench category on unsafe test prompts,
    with the entropy term and re-assignment on and off, beside a permutation null's 95th percentile.

    Returns: rows ``entropy, rep, nmi, null95, n_reassigned, facets_used, final_entropy``.
    """
    rng = check_rng(rng)
    n_reps = check_int(n_reps, "n_reps", low=1)
    unsafe_te = te[y[te] == 0]
    rows = []
    for rep in range(n_reps):
        for on in (True, False):
            poly = fit_polytope(
                Z[tr],
                y[tr],
                K,
                epochs,
                rng=rng,
                F=F,
                entropy_weight=1.0 if on else 0.0,
                entropy_assignment=on,
            )
            fac = poly.facet_of(Z[unsafe_te]).numpy()
            null = nmi_permutation_null(fac, categories[unsafe_te], n_perm, rng)
            rows.append(
                {
                    "entropy": on,
                    "rep": rep,
                    "nmi": facet_category_nmi(fac, categories[unsafe_te]),
                    "null95": float(np.quantile(null, 0.95)),
                    "n_reassigned": int(sum(poly.history["n_reassigned"])),
                    "facets_used": int(len(set(fac.tolist()))),
                    "final_entropy": poly.history["entropy"][-1],
                }
            )
    return rows


def steering_geometry(
    X: np.ndarray,
    y: np.ndarray,
    poly: Any,
    n_steps_list: list[int],
    lam: float = 2.0,
    lr: float = 1e-2,
    linear: bool = True,
) -> list[dict]:
    """Experiment C: SafeFlow on the flagged unsafe states after each number of SGD steps.

    For each ``n_steps``: the fraction of flagged unsafe states inside (no positive violation)
    after steering, the mean L1 shift, and the mean L1 "centroid jump" (to the mean safe state).
    For a linear polytope (``E = Id``) the exact Euclidean projection is a last row.

    Returns: rows ``how, n_steps, inside, mean_l1_shift, mean_l2_shift, centroid_jump_l1``.
    """
    Xu = torch.as_tensor(X[y == 0], dtype=torch.float32)
    flagged = ~poly.is_safe(Xu)
    Xu = Xu[flagged]
    centroid = torch.as_tensor(X[y == 1], dtype=torch.float32).mean(0)
    jump = float((Xu - centroid).abs().sum(1).mean())
    rows = []
    for n in n_steps_list:
        Xs, info = steer_hidden(Xu, poly, lam=lam, lr=lr, n_steps=n)
        rows.append(
            {
                "how": "SafeFlow (L1)",
                "n_steps": n,
                "inside": float(info["inside"].float().mean()),
                "mean_l1_shift": float(info["shift_l1"].mean()),
                "mean_l2_shift": float((Xs - Xu).norm(dim=1).mean()),
                "centroid_jump_l1": jump,
            }
        )
    if linear and not poly.encoder.nonlinear:
        P = torch.as_tensor(
            project_linear_polytope(Xu, poly.phi, poly.xi), dtype=torch.float32
        )
        rows.append(
            {
                "how": "exact projection (L2)",
                "n_steps": np.nan,
                "inside": float((poly.violations(P) <= 1e-4).all(1).float().mean()),
                "mean_l1_shift": float((P - Xu).abs().sum(1).mean()),
                "mean_l2_shift": float((P - Xu).norm(dim=1).mean()),
                "centroid_jump_l1": jump,
            }
        )
    return rows


def lm_states(
    model: Any, tokenizer: WordTokenizer, dialogues: list, layer: int
) -> tuple[torch.Tensor, np.ndarray]:
    """Layer-``layer`` states of the prompt's last token of each dialogue (the state that decides the
    first new token); label 0 (unsafe) for harmful + trigger, the contexts the model complies in.

    Returns: ``(X (n, d) float32, y (n,) int64)``.
    """
    X, y = [], []
    for g in dialogues:
        ids = tokenizer.encode(g.prompt)
        X.append(model.hidden_states(torch.tensor([ids]), layer)[0, -1])
        y.append(0 if (g.harmful and g.trigger) else 1)
    return torch.stack(X), np.array(y, dtype=np.int64)


def generation_experiment(
    rng: np.random.Generator,
    *,
    d: int = 64,
    n_layers: int = 2,
    lm_steps: int = 200,
    layer: int = 1,
    K: int = 8,
    F: int = 128,
    epochs: int = 30,
    n_test_tasks: int = 4,
    settings: list[dict] | None = None,
    first_n: int = 1,
    first_n_long: int = 8,
    max_new_tokens: int = 16,
    alpha: float = 1.0,
) -> dict:
    """Experiment D: train the small LM, fit SaP on its layer-``layer`` prompt states (tasks not held
    out), generate on the held-out tasks' prompts, and judge every whole generation.

    The detector is trained on prompt states only, so by default only the first new token's
    state is checked (``first_n = 1``); one backup row checks ``first_n_long`` tokens, where the
    generated states lie outside the detector's training distribution.
    ``settings``: SafeFlow variants, dicts of :class:`SteeredGenerator` keywords (``dist``,
    ``inner_margin``, ``n_steps``, ``lr``, ``lam``, and ``first_n`` to override the default). Also run: no defence, ``backup``, and
    mean-difference steering (``alpha`` x direction) ungated and gated by the detector.

    Returns: dict ``rows`` (one per defence: ``defence, asr, benign_compliance, flag_first``),
    ``detector`` (detection report on held-out prompt states), ``recall_first`` (flags at the prompt's
    last token on triggered held-out prompts), ``lm_loss``, ``examples`` and timings.
    """
    rng = check_rng(rng)
    t0 = time.perf_counter()
    dialogues = make_dialogues()
    tok = WordTokenizer([g.prompt + " " + g.response for g in dialogues])
    model, losses = train_lm(
        dialogues, tok, rng, d=d, n_layers=n_layers, n_steps=lm_steps
    )
    t_lm = time.perf_counter() - t0
    test_tasks = set(rng.choice(16, n_test_tasks, replace=False).tolist())
    train = [g for g in dialogues if g.task not in test_tasks]
    test = [g for g in dialogues if g.task in test_tasks]
    X, y = lm_states(model, tok, train, layer)
    # raw states, as the paper's code
    poly = fit_polytope(X, y, K, epochs, rng=rng, F=F)
    Xt, yt = lm_states(model, tok, test, layer)
    detector = detection_report(yt, poly.is_safe(Xt))
    trig = [g for g in test if g.harmful and g.trigger]
    benign = [g for g in test if not g.harmful]
    direction = mean_difference_direction(X, y)

    def run(name: str, gen: SteeredGenerator) -> dict:
        a = [gen.generate(g.prompt, max_new_tokens) for g in trig]
        b = [gen.generate(g.prompt, max_new_tokens)[0] for g in benign]
        return {
            "defence": name,
            "asr": attack_success_rate([o for o, _ in a], rule_judge),
            "benign_compliance": attack_success_rate(b, rule_judge),
            "flag_first": float(
                np.mean([bool(i["flags"][0]) if i["flags"] else False for _, i in a])
            ),
            "example": a[0][0],
        }

    rows = [run("none", SteeredGenerator(model, tok, poly, layer, first_n, "off"))]
    rows.append(
        run("SaP backup", SteeredGenerator(model, tok, poly, layer, first_n, "backup"))
    )
    rows.append(
        run(
            f"SaP backup, first_n={first_n_long}",
            SteeredGenerator(model, tok, poly, layer, first_n_long, "backup"),
        )
    )
    for s in settings or [{}]:
        s = dict(s)
        label = "SaP steer " + ", ".join(f"{k}={v}" for k, v in s.items())
        n_checked = s.pop("first_n", first_n)  # a setting may check more tokens
        rows.append(
            run(
                label,
                SteeredGenerator(model, tok, poly, layer, n_checked, "steer", **s),
            )
        )
    rows.append(
        run(
            f"mean-diff x{alpha:g}, ungated",
            MeanDifferenceGenerator(model, tok, direction, layer, alpha, first_n),
        )
    )
    rows.append(
        run(
            f"mean-diff x{alpha:g}, gated by SaP",
            MeanDifferenceGenerator(
                model, tok, direction, layer, alpha, first_n, gate=poly
            ),
        )
    )
    recall_first = float((~poly.is_safe(Xt[yt == 0])).float().mean())
    return {
        "rows": rows,
        "detector": detector,
        "recall_first": recall_first,
        "lm_loss": float(np.mean(losses[-20:])),
        "lm_s": t_lm,
        "total_s": time.perf_counter() - t0,
        "n_trig": len(trig),
        "n_benign": len(benign),
        "polytope": poly,
        "model": model,
        "tokenizer": tok,
        "X": X,
        "y": y,
    }
