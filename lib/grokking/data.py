"""Problem generators of chapter 16: sparse recovery (Sec. 3, 5), matrix completion (Sec. 3, low
rank) and modular arithmetic (Sec. 6), following the official code's generators."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import (
    check_array,
    check_budget,
    check_choice,
    check_int,
    check_probability,
    check_real,
    check_rng,
)

__all__ = [
    "sparse_signal",
    "measurements",
    "sparse_problems",
    "low_rank_matrix",
    "local_coherence",
    "completion_mask",
    "modular_dataset",
]


def sparse_signal(n: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """An s-sparse signal a* with non-zeros drawn i.i.d. N(0, 1) / sqrt(n) (official scaling).

    Args:
        n: dimension; s: number of non-zeros, 1 <= s <= n; rng: NumPy generator.

    Returns:
        (n,) float64 vector with exactly s non-zero entries at uniformly random positions.

    Raises:
        ValueError: n or s not positive integers, or s > n. TypeError: non-integer n or s, rng not
        a Generator. TooLargeError: the (n,) vector cannot fit in memory.
    """
    n = check_int(n, "n", low=1)
    s = check_int(s, "s", low=1)
    if s > n:
        raise ValueError(f"s must be <= n = {n}, got {s}")
    check_budget(f"sparse_signal(n={n})", n_bytes=16.0 * n)
    rng = check_rng(rng)
    a = np.zeros(n)
    idx = rng.choice(n, size=s, replace=False)
    vals = rng.standard_normal(s)
    while np.any(vals == 0):  # measure-zero event; keep exactly s non-zeros
        vals = rng.standard_normal(s)
    a[idx] = vals / math.sqrt(n)
    return a


def measurements(
    N: int,
    n: int,
    tau: float,
    rng: np.random.Generator,
    basis: np.ndarray | None = None,
) -> np.ndarray:
    """Measurement matrix X (N, n) with a coherent fraction tau (Sec. 5 "data selection").

    The first ``floor(tau N)`` rows are columns of the sparsity basis ``Phi`` (``basis``, identity
    by default: single coordinates, maximally coherent with sparse signals); the remaining rows
    are i.i.d. N(0, 1/N), so that ``X^T X`` has spectrum near ``[(1 - sqrt(n/N))^2,
    (1 + sqrt(n/N))^2]``. The whole matrix is then multiplied by ``Phi`` (``X = M Phi``) as in the
    official ``get_measures``. tau = 0 gives a plain Gaussian design.

    Args:
        N: number of measurements; n: dimension; tau: coherent fraction in [0, 1];
        rng: generator; basis: (n, n) float64 basis Phi or None for the identity.

    Returns:
        (N, n) float64.

    Raises:
        ValueError: bad sizes, tau outside [0, 1], basis of the wrong shape or not finite.
        TypeError: non-integer sizes, rng not a Generator. TooLargeError: the (N, n) matrix and
        the (n, n) basis, or the ``2 N n^2`` operations of ``M Phi``, cannot fit.
    """
    N = check_int(N, "N", low=1)
    n = check_int(n, "n", low=1)
    check_budget(
        f"measurements(N={N}, n={n})",
        n_bytes=8.0 * (2.0 * N * n + float(n) * n),
        n_operations=2.0 * N * n * n,
    )
    tau = check_probability(tau, "tau")
    rng = check_rng(rng)
    Phi = (
        np.eye(n)
        if basis is None
        else check_array(basis, "basis", shape=(n, n), dtype=np.float64)
    )
    N1 = int(tau * N)
    M = np.empty((N, n))
    if N1 > 0:
        cols = rng.choice(n, size=N1, replace=N1 > n)
        M[:N1] = Phi[:, cols].T
    M[N1:] = rng.standard_normal((N - N1, n)) / math.sqrt(N)
    return M @ Phi


def sparse_problems(
    B: int,
    n: int,
    s: int,
    N: int,
    tau: float | ArrayLike,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """B independent noiseless compressed-sensing problems ``y_b = X_b a*_b``.

    Args:
        B: number of problems; n, s, N: as in :func:`sparse_signal` / :func:`measurements`;
        tau: coherent fraction, scalar or (B,) (one per problem); rng: generator.

    Returns:
        ``(X (B, N, n), y (B, N), a_star (B, n))`` float64.

    Raises:
        ValueError: bad sizes, tau not a scalar or (B,) or outside [0, 1]. TypeError: non-integer
        sizes, non-numeric tau, rng not a Generator. TooLargeError: the B problems (about
        ``3 B N n`` float64 and an (n, n) basis) or their ``2 B N n^2`` operations cannot fit.
    """
    B = check_int(B, "B", low=1)
    n = check_int(n, "n", low=1)
    s = check_int(s, "s", low=1)
    N = check_int(N, "N", low=1)
    check_budget(
        f"sparse_problems(B={B}, n={n}, N={N})",
        n_bytes=8.0 * (3.0 * B * N * n + 2.0 * B * n + float(B) * N + float(n) * n),
        n_operations=float(B) * (2.0 * N * n * n + N * n),
    )
    taus = check_array(tau, "tau", dtype=np.float64, finite=False)
    if taus.ndim == 0:
        taus = np.full(B, float(taus))
    if taus.shape != (B,):
        raise ValueError(
            f"tau must be a scalar or have shape (B,) = ({B},), got shape {taus.shape}"
        )
    if not np.all((taus >= 0) & (taus <= 1)):  # also rejects NaN
        raise ValueError(f"tau must be in [0, 1], got {taus}")
    a_star = np.stack([sparse_signal(n, s, rng) for _ in range(B)])
    X = np.stack([measurements(N, n, float(t), rng) for t in taus])
    y = np.matmul(X, a_star[:, :, None])[:, :, 0]
    return X, y, a_star


def low_rank_matrix(n1: int, n2: int, r: int, rng: np.random.Generator) -> np.ndarray:
    """A rank-r matrix ``A* = U V^T`` with Gaussian factors, scaled to ``||A*||_F = sqrt(n1 n2 / 10)``.

    (The scale is a choice of this book: entries are O(0.3), so penalty weights are comparable
    with the official ones; every error we report is relative.)

    Args:
        n1, n2: shape; r: rank, 1 <= r <= min(n1, n2); rng: generator.

    Returns:
        (n1, n2) float64 of rank r (almost surely).

    Raises:
        ValueError: bad sizes or rank. TypeError: non-integer sizes, rng not a Generator.
        TooLargeError: the (n1, n2) matrix or its ``2 n1 n2 r`` operations cannot fit.
    """
    n1 = check_int(n1, "n1", low=1)
    n2 = check_int(n2, "n2", low=1)
    r = check_int(r, "r", low=1)
    if r > min(n1, n2):
        raise ValueError(f"r must be <= min(n1, n2) = {min(n1, n2)}, got {r}")
    check_budget(
        f"low_rank_matrix(n1={n1}, n2={n2}, r={r})",
        n_bytes=8.0 * (2.0 * n1 * n2 + float(r) * (n1 + n2)),
        n_operations=2.0 * n1 * n2 * r,
    )
    rng = check_rng(rng)
    A = rng.standard_normal((n1, r)) @ rng.standard_normal((r, n2))
    return A * math.sqrt(n1 * n2 / 10.0) / np.linalg.norm(A)


def local_coherence(
    A: np.ndarray, tol: float = 1e-10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Local coherences ``mu_i = n1/r ||U_i||^2``, ``nu_j = n2/r ||V_j||^2`` and ``P_ij = mu_i + nu_j``.

    From the compact SVD ``A = U Sigma V^T`` (rank r = number of singular values above
    ``tol * sigma_max``), as in the official ``calculate_local_coherence``.

    Args:
        A: (n1, n2) float64 matrix, finite and non-zero; tol: relative rank threshold >= 0.

    Returns:
        ``(mu (n1,), nu (n2,), P (n1, n2))`` float64.

    Raises:
        ValueError: A not a non-empty finite matrix, or zero; tol negative.
    """
    A = check_array(A, "A", ndim=2, dtype=np.float64, min_size=1)
    tol = check_real(tol, "tol", low=0.0)
    return _local_coherence(A, tol)


def _local_coherence(
    A: np.ndarray, tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``mu_i = n1/r ||U_i||^2``, ``nu_j = n2/r ||V_j||^2``, ``P_ij = mu_i + nu_j`` (U, V: top-r singular vectors)."""
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    r = int(np.sum(s > tol * s.max()))
    if r == 0:
        raise ValueError("A must not be zero")
    n1, n2 = A.shape
    mu = n1 / r * np.sum(U[:, :r] ** 2, axis=1)
    nu = n2 / r * np.sum(Vt[:r].T ** 2, axis=1)
    return mu, nu, mu[:, None] + nu[None, :]


def completion_mask(
    A: np.ndarray, N: int, tau: float, rng: np.random.Generator
) -> np.ndarray:
    """Observed entries for matrix completion, a fraction tau chosen by local coherence.

    The ``floor(tau N)`` entries with the largest ``P_ij = mu_i + nu_j`` (:func:`local_coherence`)
    are observed, and ``N - floor(tau N)`` more are drawn uniformly from the rest (official
    ``get_measures_matrix_completion``; ties in P are broken by a random permutation).

    Args:
        A: (n1, n2) float64 target matrix; N: number of observed entries, 1 <= N <= n1 n2;
        tau: coherent fraction in [0, 1]; rng: generator.

    Returns:
        (n1, n2) bool mask with exactly N True entries.

    Raises:
        ValueError: N out of range, tau outside [0, 1], A not a finite non-zero matrix.
        TypeError: non-integer N, rng not a Generator.
    """
    A = check_array(A, "A", ndim=2, dtype=np.float64, min_size=1)
    N = check_int(N, "N", low=1)
    if N > A.size:
        raise ValueError(f"N must be <= n1 * n2 = {A.size}, got {N}")
    tau = check_probability(tau, "tau")
    rng = check_rng(rng)
    _, _, P = _local_coherence(A, 1e-10)
    perm = rng.permutation(A.size)
    order = perm[np.argsort(-P.ravel()[perm], kind="stable")]
    N1 = int(tau * N)
    chosen = list(order[:N1])
    rest = order[N1:]
    chosen += list(rng.choice(rest, size=N - N1, replace=False))
    mask = np.zeros(A.size, dtype=bool)
    mask[np.asarray(chosen, dtype=int)] = True
    return mask.reshape(A.shape)


def modular_dataset(
    p: int, op: str, train_fraction: float, rng: np.random.Generator
) -> dict[str, Any]:
    """All pairs (x, y) in Z_p x Z_p labelled by ``x op y mod p``, split into train and test.

    Args:
        p: modulus (>= 2); op: ``"+"``, ``"-"`` or ``"*"``; train_fraction: in (0, 1);
        rng: generator for the split.

    Returns:
        dict with ``x_train`` (M, 2) int64, ``y_train`` (M,) int64, ``x_test``, ``y_test`` and the
        modulus ``p`` (int); M = round(train_fraction p^2).

    Raises:
        ValueError: p < 2, unknown op, train_fraction outside (0, 1). TypeError: non-integer p,
        rng not a Generator. TooLargeError: the p^2 pairs (about ``80 p^2`` bytes with the split)
        cannot fit.
    """
    p = check_int(p, "p", low=2)
    check_budget(f"modular_dataset(p={p})", n_bytes=80.0 * float(p) * p)
    check_choice(op, "op", ("+", "-", "*"))
    f = check_probability(
        train_fraction, "train_fraction", open_low=True, open_high=True
    )
    rng = check_rng(rng)
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    x = np.stack([a.ravel(), b.ravel()], axis=1).astype(np.int64)
    y = {"+": x[:, 0] + x[:, 1], "-": x[:, 0] - x[:, 1], "*": x[:, 0] * x[:, 1]}[op] % p
    perm = rng.permutation(len(x))
    M = int(round(f * len(x)))
    tr, te = perm[:M], perm[M:]
    return {
        "x_train": x[tr],
        "y_train": y[tr],
        "x_test": x[te],
        "y_test": y[te],
        "p": p,
    }
