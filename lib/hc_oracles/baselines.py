"""What the oracle algorithms are compared with: SciPy's linkages, recursive spectral sparsest
cut (the classic Dasgupta heuristic), and a uniformly random tree (expected MW ratio about 1/3).

Linkage on a *similarity* ``W``: SciPy wants a distance, and ``d = max(W) - W`` is a decreasing
affine map, so average, single and complete linkage on ``d`` are exactly average, single and
complete linkage on the similarities (the average of ``c - w`` is ``c`` minus the average of
``w``). Ward's method assumes Euclidean distances; on ``d`` it is only a heuristic.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.cluster.hierarchy import linkage
from scipy.sparse.linalg import eigsh
from scipy.spatial.distance import squareform

from icml25.checks import check_budget, check_choice, check_rng

from ._checks import _check_weights
from .trees import Tree, _relabelled, random_binary_tree

__all__ = ["linkage_tree", "spectral_tree", "random_tree", "LINKAGES"]

#: SciPy linkage methods used as baselines
LINKAGES: tuple[str, ...] = ("average", "single", "complete", "ward")


def _linkage(W: np.ndarray, method: str) -> Tree:
    """SciPy ``linkage`` on the condensed distance ``max(W) - W`` (see the module doc)."""
    d = float(W.max()) - W
    np.fill_diagonal(d, 0.0)
    return Tree.from_linkage(linkage(squareform(d, checks=False), method=method))


def linkage_tree(W: Any, method: str = "average") -> Tree:
    """Agglomerative clustering of the similarities ``W`` with SciPy (``average`` by default).

    Args:
        W: (n, n) weights (dense or sparse; densified), symmetric, >= 0, zero diagonal.
        method: one of :data:`LINKAGES`.

    Returns:
        the dendrogram as a :class:`Tree`.

    Raises:
        ValueError: bad ``W`` or unknown ``method``. TooLargeError: the dense (n, n) copies
        (about ``40 n^2`` bytes) or SciPy's ``O(n^2)`` linkage do not fit.
    """
    W = _check_weights(W)
    method = check_choice(method, "method", LINKAGES)
    n = W.shape[0]
    check_budget(
        f"linkage_tree(n={n}, densified)",
        n_bytes=40.0 * n * n,
        n_operations=100.0 * n * n,
    )
    return _linkage(W.toarray() if sp.issparse(W) else W, method)


def _fiedler_split(W: np.ndarray) -> np.ndarray:
    """Boolean side of the sweep cut of the Fiedler vector minimising ``w(A, B) / (|A| |B|)``."""
    k = W.shape[0]
    L = np.diag(W.sum(axis=1)) - W
    if k > 64:
        _, vecs = eigsh(sp.csr_matrix(L), k=2, sigma=-1e-6, which="LM")
        f = vecs[:, 1]
    else:
        f = np.linalg.eigh(L)[1][:, 1]
    order = np.argsort(f, kind="stable")
    Wo = W[np.ix_(order, order)]
    # cut(i) = weight between the first i and the rest, for every prefix, in O(k^2)
    inside = np.cumsum(np.cumsum(Wo, axis=0), axis=1).diagonal()  # w(prefix) * 2
    deg = np.cumsum(Wo.sum(axis=1))
    sizes = np.arange(1, k)
    cut = deg[:-1] - inside[:-1]
    i = int(np.argmin(cut / (sizes * (k - sizes)))) + 1
    side = np.zeros(k, dtype=bool)
    side[order[:i]] = True
    return side


def _spectral(W: np.ndarray) -> Tree:
    """Split by :func:`_fiedler_split`, then split both sides, until single vertices (an explicit
    stack, so a chain of one-vertex splits, as on a star graph, never recurses)."""
    n = W.shape[0]
    kids: dict[int, tuple[int, int]] = {}
    nxt = n + 1
    stack = [(n, np.arange(n))]  # (internal node id >= n, its vertices)
    while stack:
        node, idx = stack.pop()
        if len(idx) == 2:
            parts = (idx[:1], idx[1:])
        else:
            side = _fiedler_split(W[np.ix_(idx, idx)])
            parts = (idx[side], idx[~side])
        ids = []
        for part in parts:
            if len(part) == 1:
                ids.append(int(part[0]))
            else:
                ids.append(nxt)
                stack.append((nxt, part))
                nxt += 1
        kids[node] = (ids[0], ids[1])
    return _relabelled(n, kids, n)


def spectral_tree(W: Any) -> Tree:
    """Recursive spectral sparsest cut: split by the Fiedler vector's best sweep cut (uniform
    sparsity ``w(A, B)/(|A||B|)``, the cut Dasgupta's objective rewards), recurse on both sides
    (an explicit stack: no Python recursion, whatever the depth).

    ``scipy.sparse.linalg.eigsh`` (shift-invert) for more than 64 vertices, dense ``eigh`` below.

    Args:
        W: (n, n) weights as :func:`linkage_tree`.

    Returns:
        a :class:`Tree`.

    Raises:
        ValueError: bad ``W``. TooLargeError: the dense copies (about ``48 n^2`` bytes) or the
        ``O(n^3)`` worst case (a split per vertex, each ``O(n^2)``) do not fit.
    """
    W = _check_weights(W)
    n = W.shape[0]
    check_budget(
        f"spectral_tree(n={n}, densified)",
        n_bytes=48.0 * n * n,
        n_operations=float(n) ** 3,
    )
    W = W.toarray() if sp.issparse(W) else W
    return _spectral(W)


def random_tree(W: Any, rng: np.random.Generator) -> Tree:
    """A uniformly random binary tree on the vertices of ``W`` (the trivial baseline).

    Raises:
        ValueError: bad ``W``. TypeError: ``rng`` not a Generator.
    """
    W = _check_weights(W)
    return random_binary_tree(W.shape[0], check_rng(rng))
