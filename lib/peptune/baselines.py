"""Baselines and metrics of chapter 18: unguided sampling, best-of-N, NSGA-II over residues.

- :func:`best_of_n`: draw unguided samples until the classifier budget is spent (each valid
  sample costs one call, as in MCTG), keep the non-dominated set.
- :func:`nsga2_residues`: NSGA-II (``pymoo``) over residue sequences: a real genome decoded to a
  length, residue letters (p2smi's canonical L/D lists) and a cyclisation, built into SMILES by
  p2smi, scored by the same objectives; same number of classifier calls.
- Metrics: :func:`generation_metrics` (validity, uniqueness, diversity = 1 − mean pairwise
  Tanimoto, SNN = mean nearest-neighbour Tanimoto to the training set) and
  :func:`front_hypervolume` (shared ``kernels/dominance`` hypervolume, pymoo's exact HV).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from icml25.checks import check_int, check_rng
from icml25.kernels import dominance, tanimoto

from .chem import CYCLIZATIONS, _smiles_list, is_valid_peptide
from .model import MaskedDiffusionTransformer, sample
from .objectives import morgan_bits

__all__ = ["best_of_n", "front_hypervolume", "generation_metrics", "nsga2_residues"]


def front_hypervolume(S: np.ndarray, ref: np.ndarray | None = None) -> float:
    """Hypervolume of score rows ``S (n, K)`` (maximised) above ``ref`` (default zeros)."""
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2:
        raise ValueError(f"S must be (n, K), got shape {S.shape}")
    if S.shape[0] == 0:
        return 0.0
    ref = np.zeros(S.shape[1]) if ref is None else np.asarray(ref, dtype=np.float64)
    return float(dominance.hypervolume(S, ref))


def generation_metrics(
    smiles: Sequence[str], train_smiles: Sequence[str], strict: bool = True
) -> dict:
    """Validity, uniqueness, diversity and SNN of generated ``smiles``.

    Returns:
        ``{"validity", "uniqueness", "diversity", "snn", "n"}``: validity over all; uniqueness =
        distinct valid / valid; diversity = 1 − mean pairwise Tanimoto of distinct valid ones; SNN
        = mean over distinct valid of the max Tanimoto to ``train_smiles`` (NaN where undefined).
    """
    smiles = _smiles_list(smiles)
    train_smiles = _smiles_list(train_smiles, "train_smiles")
    valid = [s for s in smiles if is_valid_peptide(s, strict=strict)]
    uniq = list(dict.fromkeys(valid))
    out = {
        "n": len(smiles),
        "validity": len(valid) / max(1, len(smiles)),
        "uniqueness": len(uniq) / len(valid) if valid else float("nan"),
        "diversity": float("nan"),
        "snn": float("nan"),
    }
    if uniq:
        P = tanimoto.pack_bits(morgan_bits(uniq))
        if len(uniq) > 1:
            T = tanimoto.bulk_tanimoto(P, P).astype(np.float64)
            n = len(uniq)
            out["diversity"] = float(1.0 - (T.sum() - np.trace(T)) / (n * (n - 1)))
        out["snn"] = float(
            np.mean(
                tanimoto.max_tanimoto(
                    P, tanimoto.pack_bits(morgan_bits(list(train_smiles)))
                )
            )
        )
    return out


def best_of_n(
    model: MaskedDiffusionTransformer,
    score: Callable[[list[str]], np.ndarray],
    calls: int,
    L: int,
    n_steps: int,
    rng: np.random.Generator,
    batch: int = 64,
    max_samples: int | None = None,
    strict: bool = True,
) -> dict:
    """Best-of-N unguided sampling at a classifier budget of ``calls`` valid samples.

    Args:
        model: the denoiser. score: ``list[str] -> (n, K)`` scores.
        calls: classifier calls (valid samples scored), >= 1.
        L, n_steps: sampler length and reverse steps. rng: NumPy generator.
        batch: samples per draw. max_samples: stop drawing after this many samples (default
            ``20 * calls``), so a model with low validity ends with fewer calls.

    Returns:
        ``{"smiles", "scores" (front), "all_scores", "samples", "calls", "validity"}``.
    """
    calls = check_int(calls, "calls", low=1)
    rng = check_rng(rng)
    g = torch.Generator().manual_seed(int(rng.integers(2**62)))
    cap = max_samples or 20 * calls
    valid_smiles: list[str] = []
    drawn = 0
    while len(valid_smiles) < calls and drawn < cap:
        n = min(batch, cap - drawn)
        smi = model.tokenizer.decode_batch(sample(model, n, L, n_steps, rng=g).numpy())
        drawn += n
        valid_smiles += [s for s in smi if is_valid_peptide(s, strict=strict)]
    valid_smiles = valid_smiles[:calls]
    S = (
        np.asarray(score(valid_smiles), dtype=np.float64)
        if valid_smiles
        else np.zeros((0, 1))
    )
    if len(valid_smiles) == 0:
        return {
            "smiles": [],
            "scores": S,
            "all_scores": S,
            "samples": drawn,
            "calls": 0,
            "validity": 0.0,
        }
    m = dominance.pareto_mask(S)
    return {
        "smiles": [s for s, k in zip(valid_smiles, m) if k],
        "scores": S[m],
        "all_scores": S,
        "samples": drawn,
        "calls": len(valid_smiles),
        "validity": len(valid_smiles) / drawn,
    }


def _decode_genome(
    x: np.ndarray, letters: Sequence[str], residues: tuple[int, int], p_cyclic: float
) -> str | None:
    import p2smi.utilities.smilesgen as smilesgen
    from p2smi import fasta2smi

    lo, hi = residues
    n = lo + min(hi - lo, int(x[0] * (hi - lo + 1)))
    seq = "".join(
        letters[min(len(letters) - 1, int(v * len(letters)))] for v in x[2 : 2 + n]
    )
    want = ""
    if x[1] < p_cyclic:
        want = CYCLIZATIONS[
            min(len(CYCLIZATIONS) - 1, int(x[1] / p_cyclic * len(CYCLIZATIONS)))
        ]
    try:
        s, constr = fasta2smi.constraint_resolver(seq, want)
        ok, _ = fasta2smi.validate_constraint_pattern(s, constr)
        if not ok:
            s, constr = seq, ""
        return smilesgen.constrained_peptide_smiles(s, constr)[2]
    except Exception:
        return None


def nsga2_residues(
    score: Callable[[list[str]], np.ndarray],
    K: int,
    pop_size: int,
    n_gen: int,
    rng: np.random.Generator,
    residues: tuple[int, int] = (3, 5),
    p_cyclic: float = 0.5,
) -> dict:
    """NSGA-II (pymoo) over residue sequences, ``pop_size * n_gen`` classifier calls.

    Genome (reals in [0, 1)): length, cyclisation, ``residues[1]`` residue slots over p2smi's
    canonical L and D letters; decoded to SMILES by p2smi. Objectives are negated (pymoo
    minimises). A genome that fails to build scores zeros.

    Returns:
        ``{"smiles", "scores" (front), "calls"}``.
    """
    from p2smi import genPeps
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.problem import Problem
    from pymoo.optimize import minimize

    K = check_int(K, "K", low=1)
    pop_size = check_int(pop_size, "pop_size", low=2)
    n_gen = check_int(n_gen, "n_gen", low=1)
    rng = check_rng(rng)
    canon, canon_d, _, _ = genPeps.get_amino_acid_lists()
    letters = list(canon) + list(canon_d)
    seen: dict[str, np.ndarray] = {}
    calls = [0]

    class _P(Problem):
        def __init__(self):
            super().__init__(n_var=2 + residues[1], n_obj=K, xl=0.0, xu=1.0 - 1e-9)

        def _evaluate(self, X, out, *args, **kwargs):
            smi = [_decode_genome(x, letters, residues, p_cyclic) for x in X]
            F = np.zeros((len(X), K))
            idx = [
                i for i, s in enumerate(smi) if s is not None and is_valid_peptide(s)
            ]
            if idx:
                S = np.asarray(score([smi[i] for i in idx]), dtype=np.float64)
                calls[0] += len(idx)
                for j, i in enumerate(idx):
                    F[i] = S[j]
                    seen[smi[i]] = S[j]
            out["F"] = -F

    minimize(
        _P(),
        NSGA2(pop_size=pop_size),
        ("n_gen", n_gen),
        seed=int(rng.integers(2**31)),
        verbose=False,
    )
    smiles = list(seen)
    S = np.stack([seen[s] for s in smiles]) if smiles else np.zeros((0, K))
    if len(smiles):
        m = dominance.pareto_mask(S)
        smiles, S = [s for s, k in zip(smiles, m) if k], S[m]
    return {"smiles": smiles, "scores": S, "calls": calls[0]}
