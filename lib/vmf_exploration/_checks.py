"""The chapter's own argument rules (the unit sphere), built from :mod:`icml25.checks`."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_int, check_real
from icml25.kernels import mips


def _check_dim(d: Any, name: str = "d") -> int:
    """The dimension ``d`` of R^d: an integer >= 2 (the sphere S^{d-1} needs d >= 2)."""
    return check_int(
        d, f"{name} (the dimension; the sphere S^(d-1) needs d >= 2)", low=2
    )


def _kappa_array(kappa: Any) -> tuple[bool, np.ndarray]:
    """(whether kappa was a scalar, kappa as a 1-D float64 array of values >= 0)."""
    if np.ndim(kappa) == 0:
        return True, np.array([check_real(kappa, "kappa", low=0.0)])
    return False, check_array(kappa, "kappa", low=0.0).astype(
        np.float64, copy=False
    ).ravel()


def _unit_rows(x: np.ndarray, name: str) -> np.ndarray:
    """Rows of the finite array ``x`` scaled to unit norm; a zero row has no direction."""
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"{name} must not contain a zero vector (it has no direction)")
    return x / norms


def _check_state(
    V: Any, name: str = "V", d: int | None = None
) -> tuple[np.ndarray, bool]:
    """(B, d) float64 unit rows of the state(s) ``V`` and whether ``V`` was a single (d,) vector."""
    arr = check_array(V, name, ndim=(1, 2), dtype=np.float64)
    single = arr.ndim == 1
    arr = arr.reshape(1, -1) if single else arr
    check_int(arr.shape[-1], f"the dimension d of {name}", low=2)
    if d is not None and arr.shape[-1] != d:
        raise ValueError(
            f"{name} has dimension {arr.shape[-1]} but the actions have dimension {d}"
        )
    return _unit_rows(arr, name), single


def _check_actions(X: Any, name: str = "X") -> mips.ActionTable:
    """The (n, d) action table ``X`` (n >= 1, d >= 2, finite) as a :class:`mips.ActionTable`."""
    table = X if isinstance(X, mips.ActionTable) else mips.ActionTable(X, name)
    check_int(table.shape[1], f"the dimension d of {name}", low=2)
    return table
