"""Distances between predicted and true interventional samples, and target/graph recovery scores.

The MMD bandwidth is fixed once, by the median heuristic on the observational data ``D0``, and
used for every method (a bandwidth per method would make their MMDs incomparable).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget, check_positive
from icml25.kernels import gim_kernels

__all__ = [
    "median_bandwidth",
    "mmd_rbf",
    "mmd_rbf_many",
    "energy_distance",
    "wasserstein2",
    "target_auroc",
    "shd",
]


def median_bandwidth(D0: Any) -> float:
    """The median heuristic ``h = median_{i<j} |x_i - x_j|`` on ``D0 (n, d)`` (first 1000 rows).

    Raises:
        ValueError: fewer than 2 rows, non-finite values, all rows equal.
    """
    from scipy.spatial.distance import pdist

    D0 = check_array(D0, "D0", ndim=2)
    if D0.shape[0] < 2:
        raise ValueError(f"D0 needs at least 2 rows, got {D0.shape[0]}")
    h = float(np.median(pdist(D0[:1000])))
    if h <= 0:
        raise ValueError("D0 has all rows equal: the median distance is 0")
    return h


def _mmd_from_sums(sums: np.ndarray, n: int, m: int, unbiased: bool) -> np.ndarray:
    """``MMD^2`` from the block sums ``[sum k(X,X), sum k(Y,Y), sum k(X,Y)]`` (diagonals included)."""
    kxx, kyy, kxy = sums[..., 0], sums[..., 1], sums[..., 2]
    if unbiased:  # drop the diagonals, k(x, x) = 1
        return (
            (kxx - n) / (n * (n - 1)) + (kyy - m) / (m * (m - 1)) - 2.0 * kxy / (n * m)
        )
    return kxx / n**2 + kyy / m**2 - 2.0 * kxy / (n * m)


def mmd_rbf(X: Any, Y: Any, bandwidth: float, unbiased: bool = False) -> float:
    """``MMD^2`` between samples ``X (n, d)`` and ``Y (m, d)`` with ``k = exp(-|a - b|^2 / (2 h^2))``.

    The biased (V-statistic) estimate by default, which is >= 0; ``unbiased=True`` drops the
    diagonal terms (needs ``n, m >= 2``).

    Raises:
        ValueError: shapes disagree, non-finite values, ``bandwidth <= 0``.
    """
    X = check_array(X, "X", ndim=2)
    Y = check_array(Y, "Y", shape=(None, X.shape[1]))
    return float(mmd_rbf_many(X[None], Y[None], bandwidth, unbiased)[0])


def mmd_rbf_many(
    X: Any, Y: Any, bandwidth: float, unbiased: bool = False
) -> np.ndarray:
    """``MMD^2`` of each of ``C`` context pairs ``X (C, n, d)``, ``Y (C, m, d)``, (C,) float64.

    The block sums come from the kernel dispatcher :func:`icml25.kernels.gim_kernels.mmd_sums` (a tiled
    CUDA kernel on a GPU, ``scipy.spatial.distance.cdist`` otherwise).

    Raises:
        ValueError: shapes disagree, non-finite values, ``bandwidth <= 0``, ``unbiased`` with a
            sample of one.
    """
    X = check_array(X, "X", ndim=3)
    Y = check_array(Y, "Y", shape=(X.shape[0], None, X.shape[2]))
    h = check_positive(bandwidth, "bandwidth")
    if unbiased and min(X.shape[1], Y.shape[1]) < 2:
        raise ValueError("the unbiased MMD needs at least 2 samples on each side")
    return _mmd_from_sums(
        gim_kernels.mmd_sums(X, Y, h), X.shape[1], Y.shape[1], bool(unbiased)
    )


def energy_distance(X: Any, Y: Any) -> float:
    """The energy distance ``2 E|x - y| - E|x - x'| - E|y - y'|`` (V-statistics), >= 0.

    Raises:
        ValueError: shapes disagree, an empty sample or non-finite values.
        TooLargeError (a ValueError): the pairwise distance matrices cannot fit in memory.
    """
    from scipy.spatial.distance import cdist

    X = check_array(X, "X", ndim=2, min_size=1)
    Y = check_array(Y, "Y", shape=(None, X.shape[1]), min_size=1)
    check_budget(
        f"energy_distance({X.shape[0]} x {Y.shape[0]} cells)",
        n_bytes=8.0 * (X.shape[0] + Y.shape[0]) ** 2,
    )
    return float(2 * cdist(X, Y).mean() - cdist(X, X).mean() - cdist(Y, Y).mean())


def wasserstein2(X: Any, Y: Any) -> float:
    """The 2-Wasserstein distance between the empirical measures of ``X`` and ``Y`` (POT ``ot.emd2``).

    Raises:
        ValueError: shapes disagree, an empty sample or non-finite values.
        TooLargeError (a ValueError): the ``(n_X, n_Y)`` cost matrix cannot fit in memory.
    """
    import ot

    X = check_array(X, "X", ndim=2, min_size=1)
    Y = check_array(Y, "Y", shape=(None, X.shape[1]), min_size=1)
    check_budget(
        f"wasserstein2({X.shape[0]} x {Y.shape[0]} cells)",
        n_bytes=3 * 8.0 * X.shape[0] * Y.shape[0],
    )
    M = ot.dist(X, Y, metric="sqeuclidean")
    a, b = np.full(X.shape[0], 1.0 / X.shape[0]), np.full(Y.shape[0], 1.0 / Y.shape[0])
    return float(np.sqrt(max(ot.emd2(a, b, M), 0.0)))


def target_auroc(scores: Any, targets: Any) -> float:
    """AUROC of per-variable target scores against the true direct targets, pooled over contexts.

    Args:
        scores: (K, d) real scores (probabilities, |z|). targets: (K, d) 0/1 or bool.

    Returns:
        The AUROC in [0, 1] (``sklearn.metrics.roc_auc_score``).

    Raises:
        ValueError: shapes disagree, non-finite scores, ``targets`` not 0/1 or of one class only.
    """
    from sklearn.metrics import roc_auc_score

    s = check_array(scores, "scores", ndim=2)
    t = check_array(
        np.asarray(targets, dtype=float), "targets", shape=s.shape, low=0.0, high=1.0
    )
    if not np.all((t == 0) | (t == 1)):
        raise ValueError("targets must be 0/1")
    if t.min() == t.max():
        raise ValueError("targets must contain both targets and non-targets")
    return float(roc_auc_score(t.ravel(), s.ravel()))


def shd(est: Any, true: Any) -> int:
    """Structural Hamming distance: over unordered pairs ``{i, j}``, the number whose state differs.

    A pair's state is none, ``i -> j``, ``j -> i`` or both; "both" is how a CPDAG's undirected edge
    is written, so an undirected edge counts as one error against a DAG's directed one (and a
    reversed edge counts once).

    Args:
        est, true: (d, d) adjacencies (nonzero = edge ``i -> j``).

    Raises:
        ValueError: not square, or shapes that differ.
    """
    E = check_array(np.asarray(est, dtype=float), "est", ndim=2) != 0
    T = check_array(np.asarray(true, dtype=float), "true", shape=E.shape) != 0
    if E.shape[0] != E.shape[1]:
        raise ValueError(f"est must be square, got shape {E.shape}")
    iu = np.triu_indices(E.shape[0], 1)
    state_e = E[iu].astype(int) + 2 * E.T[iu].astype(int)
    state_t = T[iu].astype(int) + 2 * T.T[iu].astype(int)
    return int((state_e != state_t).sum())
