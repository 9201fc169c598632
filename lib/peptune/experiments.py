"""The loops the chapter's cells call (chapter 18): training ablations, unguided pools, MCTG vs baselines."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from icml25.checks import check_int, check_real, check_rng
from icml25.common import repo_root

from .baselines import front_hypervolume, generation_metrics, nsga2_residues
from .chem import SmilesTokenizer, is_valid_peptide, peptide_corpus, validity
from .mctg import MCTG
from .model import MaskedDiffusionTransformer, load_checkpoint, sample
from .objectives import PeptideObjectives
from .train import encode_corpus, train_model

__all__ = [
    "CHECKPOINT",
    "ablation_runs",
    "compare_methods",
    "corpus_for",
    "load_shipped",
    "penalty_grid",
    "repair_validity",
    "unguided_pool",
]

#: The shipped checkpoint (data/18-peptune/README.md gives its provenance).
CHECKPOINT = Path("data") / "18-peptune" / "pepmdlm.pt"


def load_shipped(
    path: str | Path | None = None,
) -> tuple[MaskedDiffusionTransformer, dict]:
    """Load the shipped PepMDLM checkpoint -> ``(model, extra)`` (``extra``: steps, evals, seeds...)."""
    return load_checkpoint(Path(path) if path is not None else repo_root() / CHECKPOINT)


def corpus_for(
    tokenizer: SmilesTokenizer, n: int, rng: np.random.Generator, **kw: object
) -> list[str]:
    """``n`` corpus peptides (:func:`peptide_corpus`) that ``tokenizer`` can encode."""
    n = check_int(n, "n", low=1)
    key = int(check_rng(rng).integers(2**62))
    out: list[str] = []
    extra = 0
    while len(out) < n:
        got = peptide_corpus(n + extra, rng=key, **kw)
        out = [s for s in got if tokenizer.can_encode(s)][:n]
        extra += max(8, n // 10)
    return out


def ablation_runs(
    corpus: list[str],
    n_steps: int,
    d: int,
    layers: int,
    heads: int,
    L: int,
    rng: np.random.Generator,
    eval_n: int,
    eval_steps: int,
    batch: int = 32,
    lr: float = 2e-3,
) -> dict:
    """Train one fresh small model per variant (PepTune, uniform schedule, no invalid loss).

    Returns:
        ``{variant: {"log": [...], "valid_strict", "valid_lenient", "argmax_valid", "loss_first",
        "loss_last", "seconds"}}``, each variant from the same initial weights and batches.
    """
    tok = SmilesTokenizer.from_corpus(corpus)
    ids, bonds = encode_corpus(corpus, tok, L)
    variants = {
        "peptune": {},
        "uniform_schedule": {"uniform_schedule": True},
        "no_invalid_loss": {"invalid_loss": False},
    }
    rng = check_rng(rng)
    key = int(rng.integers(2**62))
    torch.manual_seed(key)
    init = MaskedDiffusionTransformer(
        tok, d=d, layers=layers, heads=heads, max_len=L
    ).state_dict()
    out = {}
    for name, kw in variants.items():
        model = MaskedDiffusionTransformer(
            tok, d=d, layers=layers, heads=heads, max_len=L
        )
        model.load_state_dict(init)
        t0 = time.process_time()
        log = train_model(
            model,
            ids,
            bonds,
            n_steps,
            batch=batch,
            lr=lr,
            warmup=10,
            rng=torch.Generator().manual_seed(key),
            log_every=max(1, n_steps // 10),
            **kw,
        )
        g = torch.Generator().manual_seed(key + 1)
        smi = tok.decode_batch(sample(model, eval_n, L, eval_steps, rng=g).numpy())
        out[name] = {
            "log": log,
            "valid_strict": validity(smi, True),
            "valid_lenient": validity(smi, False),
            "loss_first": log[0]["loss"],
            "loss_last": log[-1]["loss"],
            "nll_first": log[0]["nll"],
            "nll_last": log[-1]["nll"],
            "seconds": time.process_time() - t0,
        }
    return out


def repair_validity(
    model: MaskedDiffusionTransformer,
    smiles: list[str],
    t0s: list[float],
    n_steps: int,
    rng: np.random.Generator,
) -> list[dict]:
    """Mask real peptides to time ``t0`` (bond-dependent schedule) and let the model unmask them again.

    A diagnostic of how far from the data the denoiser stays reliable: for each ``t0``, the reverse
    steps run from ``t0`` (``max(1, round(n_steps * t0))`` of them) and the result is scored.

    Returns:
        One row per ``t0``: ``{"t0", "masked_fraction", "valid_strict", "valid_lenient", "exact"}``.
    """
    from .model import rollout
    from .schedules import BondDependentSchedule

    rng = check_rng(rng)
    smiles = list(smiles)
    if not smiles:
        raise ValueError("smiles must hold at least one peptide")
    t0s = [check_real(t0, "t0s[i]", low=0.0, high=1.0, low_open=True) for t0 in t0s]
    if not t0s:
        raise ValueError("t0s must hold at least one time")
    g = torch.Generator().manual_seed(int(rng.integers(2**62)))
    tok = model.tokenizer
    L = model.config["max_len"]
    ids, bonds = encode_corpus(list(smiles), tok, L)
    sched = BondDependentSchedule()
    rows = []
    for t0 in t0s:
        from .model import q_xt

        z = q_xt(
            ids,
            sched.mask_prob(torch.full(ids.shape, float(t0)), bonds),
            tok.mask_id,
            g,
        )
        out = rollout(
            model,
            z.to(model.pos.device),
            np.linspace(float(t0), 1e-5, max(1, round(n_steps * t0)) + 1),
            g,
        )
        smi = tok.decode_batch(out.cpu().numpy())
        rows.append(
            {
                "t0": float(t0),
                "masked_fraction": float((z == tok.mask_id).float().mean()),
                "valid_strict": validity(smi, True),
                "valid_lenient": validity(smi, False),
                "exact": float(np.mean([a == b for a, b in zip(smi, smiles)])),
            }
        )
    return rows


def unguided_pool(
    model: MaskedDiffusionTransformer,
    n: int,
    L: int,
    n_steps: int,
    rng: np.random.Generator,
) -> list[str]:
    """``n`` unguided samples (SMILES) from ``model``."""
    rng = check_rng(rng)
    g = torch.Generator().manual_seed(int(rng.integers(2**62)))
    return model.tokenizer.decode_batch(sample(model, n, L, n_steps, rng=g).numpy())


def compare_methods(
    model: MaskedDiffusionTransformer,
    objectives: PeptideObjectives,
    pool: list[str],
    train_smiles: list[str],
    num_children: int,
    num_iter: int,
    n_steps: int,
    front_size: int,
    invalid_penalty: float,
    rng: np.random.Generator,
    L: int | None = None,
) -> dict:
    """MCTG, best-of-N (first valid samples of ``pool``, equal calls) and NSGA-II (equal calls).

    Returns a dict with ``mctg`` (the :class:`MCTG` object), ``front_smiles``/``front_scores``,
    ``unguided_scores`` (all valid samples of ``pool``), ``bon`` and ``nsga`` fronts, hypervolumes
    (reference point 0), generation metrics and seconds.
    """
    rng = check_rng(rng)
    t0 = time.process_time()
    mc = MCTG(
        model,
        objectives.score_fns(),
        num_children=num_children,
        num_iter=num_iter,
        n_steps=n_steps,
        invalid_penalty=invalid_penalty,
        front_size=front_size,
        L=L,
        rng=rng,
    )
    front_smiles, front_scores = mc.run()
    t_mctg = time.process_time() - t0
    calls = mc.calls
    valid_pool = [s for s in pool if is_valid_peptide(s)]
    unguided = objectives.score(valid_pool) if valid_pool else np.zeros((0, mc.K))
    from icml25.kernels import dominance

    bon = unguided[: max(calls, 1)] if len(unguided) else unguided
    bon_front = bon[dominance.pareto_mask(bon)] if len(bon) else bon
    t1 = time.process_time()
    nsga = nsga2_residues(
        objectives.score, mc.K, pop_size=num_children, n_gen=num_iter, rng=rng
    )
    t_nsga = time.process_time() - t1
    all_children = [s for s, _ in mc.all_valid]
    return {
        "mctg": mc,
        "front_smiles": front_smiles,
        "front_scores": front_scores,
        "calls": calls,
        "unguided_scores": unguided,
        "bon_scores": bon_front,
        "bon_calls": int(len(bon)),
        "nsga_smiles": nsga["smiles"],
        "nsga_scores": nsga["scores"],
        "nsga_calls": nsga["calls"],
        "hv_mctg": front_hypervolume(front_scores) if len(front_scores) else 0.0,
        "hv_bon": front_hypervolume(bon_front) if len(bon_front) else 0.0,
        "hv_nsga": front_hypervolume(nsga["scores"]) if len(nsga["scores"]) else 0.0,
        "metrics_unguided": generation_metrics(pool, train_smiles),
        "metrics_mctg_children": generation_metrics(all_children, train_smiles)
        if all_children
        else {},
        "seconds_mctg": t_mctg,
        "seconds_nsga": t_nsga,
    }


def penalty_grid(
    model: MaskedDiffusionTransformer,
    objectives: PeptideObjectives,
    penalties: list[float],
    children: list[int],
    num_iter: int,
    n_steps: int,
    front_size: int,
    rng: np.random.Generator,
    L: int | None = None,
) -> dict:
    """Small MCTG runs over a grid of ``invalid_penalty`` x ``num_children`` (for the widget).

    Returns ``{(penalty, children): {"valid_fraction": (iters,), "front": (f, K)}}``.
    """
    rng = check_rng(rng)
    out = {}
    for lam in penalties:
        for m in children:
            mc = MCTG(
                model,
                objectives.score_fns(),
                num_children=int(m),
                num_iter=num_iter,
                n_steps=n_steps,
                invalid_penalty=float(lam),
                front_size=front_size,
                L=L,
                rng=np.random.default_rng(rng.integers(2**62)),
            )
            _, F = mc.run()
            out[(float(lam), int(m))] = {
                "valid_fraction": mc.valid_fraction,
                "front": F,
            }
    return out
