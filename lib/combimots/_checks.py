"""Validators of this chapter's own structures (objective matrices, SMILES lists), built on icml25.checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array

__all__: list[str] = []


def _check_objectives(F: Any, name: str = "F", D: int | None = None) -> np.ndarray:
    """``F`` as a finite, non-negative float64 (n, D) matrix (the Pareto UCB multiplies its bonus by
    the prior, so objectives must be >= 0: the paper maps every objective to [0, 1])."""
    F = check_array(F, name, ndim=2, dtype=np.float64, low=0.0)
    if F.shape[1] == 0:
        raise ValueError(
            f"{name} must have at least one objective column, got shape {F.shape}"
        )
    if D is not None and F.shape[1] != D:
        raise ValueError(f"{name} must have {D} objective columns, got {F.shape[1]}")
    return F


def _check_smiles(
    smiles: Any, name: str = "smiles", allow_empty: bool = True
) -> list[str]:
    """A list of SMILES strings (a single string is refused: it would be read as characters)."""
    if isinstance(smiles, str):
        raise TypeError(f"{name} must be a list of SMILES strings, not one string")
    try:
        out = list(smiles)
    except TypeError as err:
        raise TypeError(
            f"{name} must be a list of SMILES strings, got {type(smiles).__name__}"
        ) from err
    bad = [s for s in out if not isinstance(s, str)]
    if bad:
        raise TypeError(f"{name} must hold only strings, got {type(bad[0]).__name__}")
    if not allow_empty and not out:
        raise ValueError(f"{name} must hold at least one SMILES")
    return out
