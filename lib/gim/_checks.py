"""Validators of this chapter's own structures (adjacency matrices, context tensors), built on
:mod:`icml25.checks`. Public functions call them once, at their boundary."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array

__all__: list[str] = []


def _topological_order(A: np.ndarray) -> list[int] | None:
    """A topological order of the directed graph ``A[i, j] != 0`` (edge i -> j), ``None`` if cyclic."""
    A = np.asarray(A) != 0
    indeg = A.sum(axis=0).astype(int)
    order, ready = [], [j for j in range(A.shape[0]) if indeg[j] == 0]
    while ready:
        i = ready.pop()
        order.append(i)
        for j in np.flatnonzero(A[i]):
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(int(j))
    return order if len(order) == A.shape[0] else None


def _check_dag(W: Any, name: str = "W", d: int | None = None) -> np.ndarray:
    """``W`` as a square float64 weighted adjacency (edge i -> j where ``W[i, j] != 0``) of a DAG."""
    W = check_array(W, name, ndim=2, dtype=np.float64)
    if W.shape[0] != W.shape[1] or W.shape[0] < 1:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {W.shape}")
    if d is not None and W.shape[0] != d:
        raise ValueError(f"{name} must have shape ({d}, {d}), got shape {W.shape}")
    if _topological_order(W) is None:
        raise ValueError(
            f"{name} has a directed cycle: a structural causal model needs an acyclic graph"
        )
    return W


def _check_contexts(X: Any, name: str = "X", d: int | None = None) -> np.ndarray:
    """``X`` as a finite float array of shape ``(K, n, d)`` with ``K, n >= 1``."""
    X = check_array(X, name, ndim=3)
    if min(X.shape) < 1:
        raise ValueError(
            f"{name} must have shape (K, n, d) with every size >= 1, got shape {X.shape}"
        )
    if d is not None and X.shape[2] != d:
        raise ValueError(f"{name} has d = {X.shape[2]} variables, expected d = {d}")
    return X


def _check_gammas(
    gammas: Any, K: int | None = None, q: int | None = None, name: str = "gammas"
) -> np.ndarray:
    """``gammas`` as a finite float array ``(K, q)`` of perturbation features."""
    g = check_array(gammas, name, ndim=2)
    if K is not None and g.shape[0] != K:
        raise ValueError(f"{name} has {g.shape[0]} rows but there are K = {K} contexts")
    if q is not None and g.shape[1] != q:
        raise ValueError(f"{name} has q = {g.shape[1]} features, expected q = {q}")
    return g
