"""Validators of this chapter's own structures (trees, weights, triples, oracles), built on
:mod:`icml25.checks`. Public functions call them once, at their boundary."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from icml25.checks import check_array, check_real

# Tree; a partly-initialised module while trees.py imports this one
from . import trees as _trees

__all__: list[str] = []


def _check_tree(tree: Any, name: str = "tree", n: int | None = None) -> Any:
    """``tree`` if it is a :class:`~icml25.hc_oracles.Tree` (on ``n`` leaves when ``n`` is given)."""
    if not isinstance(tree, _trees.Tree):
        raise TypeError(
            f"{name} must be an icml25.hc_oracles.Tree, got {type(tree).__name__}"
        )
    if n is not None and tree.n != n:
        raise ValueError(f"{name} has {tree.n} leaves, expected {n}")
    return tree


def _check_weights(W: Any, name: str = "W") -> np.ndarray | sp.csr_matrix:
    """``W`` as a dense float64 array or a CSR matrix: square, symmetric, >= 0, finite, zero diagonal."""
    if sp.issparse(W):
        M = sp.csr_matrix(W, dtype=np.float64)
        if M.shape[0] != M.shape[1] or M.shape[0] < 2:
            raise ValueError(f"{name} must be square with n >= 2, got shape {M.shape}")
        data = check_array(M.data, name, ndim=1)  # finite
        if data.size and data.min() < 0:
            raise ValueError(
                f"{name} must be >= 0 everywhere, got a minimum of {data.min()!r}"
            )
        if np.any(M.diagonal() != 0):
            raise ValueError(f"{name} must have a zero diagonal")
        asym = abs(M - M.T)
        if asym.nnz and asym.max() > 1e-12 * max(1.0, abs(M).max()):
            raise ValueError(f"{name} must be symmetric")
        return M
    A = check_array(W, name, ndim=2, low=0.0, dtype=np.float64)
    if A.shape[0] != A.shape[1] or A.shape[0] < 2:
        raise ValueError(f"{name} must be square with n >= 2, got shape {A.shape}")
    if np.any(np.diag(A) != 0):
        raise ValueError(f"{name} must have a zero diagonal")
    if not np.allclose(A, A.T, rtol=0, atol=1e-12 * max(1.0, float(A.max()))):
        raise ValueError(f"{name} must be symmetric")
    return A


def _check_triples(
    U: Any, V: Any, X: Any, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three int64 vectors of one length with distinct entries in ``[0, n)`` per triple."""
    U = check_array(U, "U", kind="int", ndim=1, low=0, high=n - 1)
    V = check_array(V, "V", kind="int", ndim=1, shape=U.shape, low=0, high=n - 1)
    X = check_array(X, "X", kind="int", ndim=1, shape=U.shape, low=0, high=n - 1)
    if np.any((U == V) | (U == X) | (V == X)):
        raise ValueError(
            "a triple (U[i], V[i], X[i]) repeats a vertex: the three vertices must differ"
        )
    return U, V, X


def _check_oracle(oracle: Any, n: int | None = None, name: str = "oracle") -> Any:
    """``oracle`` if it has ``query_batch`` and an integer ``n`` (matching ``n`` when given)."""
    if not callable(getattr(oracle, "query_batch", None)) or not isinstance(
        getattr(oracle, "n", None), int
    ):
        raise TypeError(
            f"{name} must be a SplittingOracle (or have query_batch and an integer n), "
            f"got {type(oracle).__name__}"
        )
    if n is not None and oracle.n != n:
        raise ValueError(f"n = {n} differs from the {name}'s {oracle.n} vertices")
    return oracle


def _check_p(p: Any) -> float:
    """A success probability in (0, 1]."""
    return check_real(p, "p", low=0.0, low_open=True, high=1.0)
