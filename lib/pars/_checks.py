"""Validators of chapter 15's own structures (transition batches, the action box), built on icml25.checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array

#: the fields of a transition batch and their ranks
BATCH_FIELDS = {
    "observations": 2,
    "actions": 2,
    "rewards": 1,
    "next_observations": 2,
    "terminals": 1,
}


def _check_actions_in_box(
    actions: Any, name: str = "actions", act_dim: int | None = None
) -> np.ndarray:
    """(N, act_dim) float32 actions inside the feasible box [-1, 1]^act_dim (a PARS rule: the box
    is what makes an action with |a_i| >= U > 1 infeasible)."""
    a = check_array(actions, name, ndim=2, dtype=np.float32)
    if act_dim is not None and a.shape[1] != act_dim:
        raise ValueError(f"{name} must have {act_dim} columns, got shape {a.shape}")
    if a.size and float(np.abs(a).max()) > 1.0 + 1e-6:
        raise ValueError(
            f"{name} must lie in the action box [-1, 1]^{a.shape[1]}; largest |a_i| = {float(np.abs(a).max()):.4g}"
        )
    return a


def _check_transitions(data: Any, name: str = "batch") -> dict[str, np.ndarray]:
    """A mapping with the five transition fields, consistent lengths and dimensions, actions in the box."""
    if not hasattr(data, "keys"):
        raise TypeError(
            f"{name} must be a mapping with keys {sorted(BATCH_FIELDS)}, got {type(data).__name__}"
        )
    missing = [k for k in BATCH_FIELDS if k not in data]
    if missing:
        raise ValueError(f"{name} lacks the fields {missing}")
    out = {}
    for k, nd in BATCH_FIELDS.items():
        out[k] = (
            _check_actions_in_box(data[k], f"{name}['{k}']")
            if k == "actions"
            else check_array(data[k], f"{name}['{k}']", ndim=nd, dtype=np.float32)
        )
    n = out["observations"].shape[0]
    for k, v in out.items():
        if v.shape[0] != n:
            raise ValueError(
                f"{name}['{k}'] has {v.shape[0]} rows, {name}['observations'] has {n}"
            )
    if out["next_observations"].shape[1] != out["observations"].shape[1]:
        raise ValueError(
            f"{name}['next_observations'] must have the width of {name}['observations'] "
            f"({out['observations'].shape[1]}), got {out['next_observations'].shape[1]}"
        )
    if not np.isin(out["terminals"], (0.0, 1.0)).all():
        raise ValueError(
            f"{name}['terminals'] must hold 0 or 1 (true terminals only; time-outs are not terminals)"
        )
    return out
