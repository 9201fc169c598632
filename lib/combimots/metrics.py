"""Evaluation metrics of the paper's ``10-evaluate.py``: validity, uniqueness, novelty, diversity, and
the hypervolume of a set of objective vectors (``icml25.kernels.dominance.hypervolume``, pymoo's HV)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from icml25.checks import check_int, check_real
from icml25.kernels import dominance, tanimoto

from ._checks import _check_smiles
from .defaults import DEFAULTS
from .objectives import _packed
from .space import Reaction, replay_recipe

__all__ = ["validity", "uniqueness", "novelty", "diversity", "hypervolume"]

hypervolume = dominance.hypervolume


def validity(recipes: Sequence[dict], reactions: Sequence[Reaction]) -> float:
    """Share of recipes whose logged reaction, re-run on the logged blocks, gives the logged molecule.

    Stricter than RDKit parsability (the paper's validity): a molecule counts only when its synthesis
    recipe reproduces it. Returns a float in [0, 1].

    Raises:
        ValueError: no recipes; KeyError / ValueError from :func:`icml25.combimots.replay_recipe`.
    """
    recipes = list(recipes)
    if not recipes:
        raise ValueError("recipes must hold at least one recipe")
    return float(np.mean([replay_recipe(r, reactions) for r in recipes]))


def uniqueness(smiles: Sequence[str]) -> float:
    """Share of distinct SMILES among ``smiles`` (canonical SMILES assumed). Raises ValueError if empty."""
    smiles = _check_smiles(smiles, allow_empty=False)
    return len(set(smiles)) / len(smiles)


def novelty(
    gen: Sequence[str],
    train: Sequence[str],
    thr: float = DEFAULTS.novelty_threshold,
    radius: int = DEFAULTS.metric_radius,
    n_bits: int = DEFAULTS.metric_n_bits,
) -> float:
    """Share of generated molecules whose largest Morgan Tanimoto to every training molecule is below ``thr``.

    The paper's training set is its ExCAPE-DB dual actives; this chapter's is the reference inhibitors.

    Args:
        gen: generated SMILES (>= 1). train: training SMILES (>= 1). thr: threshold in [0, 1] (0.4).
        radius, n_bits: Morgan fingerprint (3 and 2048 as in the paper's evaluation).

    Raises:
        ValueError: empty lists, an invalid SMILES, threshold outside [0, 1].
    """
    gen = _check_smiles(gen, "gen", allow_empty=False)
    train = _check_smiles(train, "train", allow_empty=False)
    thr = check_real(thr, "thr", low=0.0, high=1.0)
    A, ok_a = _packed(
        gen, check_int(radius, "radius", low=0), check_int(n_bits, "n_bits", low=1)
    )
    B, ok_b = _packed(train, radius, n_bits)
    _refuse_invalid(gen, ok_a, "gen")
    _refuse_invalid(train, ok_b, "train")
    return float(np.mean(tanimoto.max_tanimoto(A, B) < np.float32(thr)))


def diversity(
    smiles: Sequence[str],
    radius: int = DEFAULTS.metric_radius,
    n_bits: int = DEFAULTS.metric_n_bits,
) -> float:
    """``1 - mean pairwise Tanimoto`` over distinct pairs (Morgan radius 3, 2048 bits, as the paper's
    evaluation); 0.0 for fewer than two molecules (nothing to be diverse about)."""
    smiles = _check_smiles(smiles)
    if len(smiles) < 2:
        return 0.0
    P, ok = _packed(
        smiles, check_int(radius, "radius", low=0), check_int(n_bits, "n_bits", low=1)
    )
    _refuse_invalid(smiles, ok, "smiles")
    return _diversity(tanimoto.bulk_tanimoto(P, P).astype(np.float64))


def _refuse_invalid(smiles: list[str], ok: np.ndarray, name: str) -> None:
    """An unparsable SMILES has an all-zero fingerprint (Tanimoto 0 to everything): it would count as
    novel and diverse, so it is refused."""
    if not ok.all():
        raise ValueError(
            f"{name} holds an invalid SMILES: {smiles[int(np.flatnonzero(~ok)[0])]!r}"
        )


def _diversity(S: np.ndarray) -> float:
    """``1 - (sum_{i<j} S_ij) / (n (n-1) / 2)`` from the (n, n) similarity matrix ``S``."""
    n = S.shape[0]
    return 1.0 - float(np.triu(S, k=1).sum()) / (n * (n - 1) / 2)
