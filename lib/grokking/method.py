"""Grokking beyond the Euclidean norm (Tikeng Notsawo, Dumas & Rabusseau, ICML 2025).

A model trained by (sub)gradient descent on ``loss + beta * h`` with a *small* penalty ``h`` that
favours a property P (sparsity: ``||a||_1``; low rank: ``||A||_*``) first memorises the training
data (phase 1, ending at ``t1``) and only later drifts to the P-solution that generalises (phase 2,
ending at ``t2 ~ t1 + ||a_ls - a*||_inf / (alpha beta)``). This module holds the problems (sparse
recovery, matrix completion, modular arithmetic), the optimisers (batched over configurations,
float64), the metrics (``t1``, ``t2``, norms) and the references (min-norm least squares, ridge,
scikit-learn's Lasso, basis pursuit by linear programming).

Everything follows the official code (``Tikquuss/grokking_beyong_l2_norm``) except where a
docstring says otherwise; the one deliberate change is the deep Hadamard initialisation
(:func:`deep_hadamard_gd`): the official identical-factor ("identity") start keeps every entry of
``a = a_1 * a_2`` non-negative for depth 2, so it is offered only to show that trap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from icml25.kernels.grokking import grok_steps

__all__ = [
    "SparseDefaults",
    "CompletionDefaults",
    "MLPDefaults",
    "History",
    "sparse_signal",
    "measurements",
    "sparse_problems",
    "low_rank_matrix",
    "local_coherence",
    "completion_mask",
    "modular_dataset",
    "min_norm_solution",
    "ridge_solution",
    "lasso_solution",
    "basis_pursuit",
    "stability_bound",
    "subgradient_descent",
    "deep_hadamard_gd",
    "matrix_subgradient",
    "rel_train_error",
    "rel_recovery_error",
    "l0_norm",
    "l1_norm",
    "l2_norm",
    "nuclear_norm",
    "grokking_times",
    "predicted_t2",
    "loglog_slope",
    "EncoderDecoderMLP",
    "regularisation",
    "train_grokking",
]


# --------------------------------------------------------------------------------------------
# Defaults (official code; the chapter scales steps down for the cpu profile)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparseDefaults:
    """Compressed-sensing setting of the paper's Figs 3-4 (official notebook values)."""

    n: int = 100  # signal dimension
    s: int = 5  # non-zeros of a*
    N: int = 30  # measurements
    alpha: float = 0.1  # step size
    beta1: float = 1e-5  # l1 penalty
    beta2: float = 0.0  # l2 penalty
    init: float = 1e-6  # a_0 = init * ones ("identity" init)
    steps: int = 10**6
    eval_every: int = 10**3


@dataclass(frozen=True)
class CompletionDefaults:
    """Matrix-completion setting of the paper's Figs 5-6 (official notebook values)."""

    n1: int = 10
    n2: int = 10
    r: int = 2
    N: int = 80  # observed entries
    alpha: float = 0.1
    beta_star: float = 1e-4
    init: float = 1e-6
    steps: int = 10**7
    eval_every: int = 10**4


@dataclass(frozen=True)
class MLPDefaults:
    """Modular-addition MLP of the paper's Figs 1-2 (official notebook values)."""

    p: int = 97
    d: int = 64
    train_fraction: float = 0.4
    lr: float = 1e-2
    epochs: int = 10_001
    batch_size: int = 2048


@dataclass
class History:
    """Trajectory of B optimisation runs, recorded every ``eval_every`` steps.

    Attributes:
        steps: (T,) int64 step index of each record (0, eval_every, 2 eval_every, ...).
        train_error: (T, B) relative train error ``||X a - y|| / ||y||``.
        recovery_error: (T, B) relative recovery (test) error ``||a - a*|| / ||a*||``.
        norms: name -> (T, B) norm trajectories (``l0``, ``l1``, ``l2``; ``nuclear`` for matrices).
        final: (B, n) or (B, n1, n2) final iterate.
        config: the run's arguments (method, alpha, beta, ...), for the record.
    """

    steps: np.ndarray
    train_error: np.ndarray
    recovery_error: np.ndarray
    norms: dict[str, np.ndarray]
    final: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def B(self) -> int:
        return self.train_error.shape[1]


# --------------------------------------------------------------------------------------------
# Validation helpers (public boundary only)
# --------------------------------------------------------------------------------------------


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _pos_int(name: str, v: Any, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {type(v).__name__} {v!r}")
    if v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {v!r}")
    return int(v)


def _real(name: str, v: Any, minimum: float | None = None, strict: bool = False) -> float:
    """A finite real scalar (not bool, not a string); optionally ``> minimum`` / ``>= minimum``."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__} {v!r}")
    x = float(v)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {v!r}")
    if minimum is not None and (x <= minimum if strict else x < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {v!r}")
    return x


def _real_array(name: str, v: Any) -> np.ndarray:
    """A float64 array from real numbers; strings, bools and objects raise TypeError naming ``name``."""
    if isinstance(v, (str, bytes)):
        raise TypeError(f"{name} must be a real number or array of real numbers, got str {v!r}")
    try:
        arr = np.asarray(v)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise ValueError(f"{name} must be a real number or a rectangular array of real numbers: {exc}") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or array of real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _fraction(name: str, v: Any) -> float:
    x = _real(name, v)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {v!r}")
    return x


def _per_config(name: str, v: Any, B: int, positive: bool) -> np.ndarray:
    arr = _real_array(name, v)
    if arr.ndim == 0:
        arr = np.full(B, float(arr))
    if arr.shape != (B,):
        raise ValueError(f"{name} must be a scalar or have shape ({B},), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr}")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got {arr}")
    if not positive and np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got {arr}")
    return arr


def _batch_problem(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, int]:
    X = _real_array("X", X)
    y = _real_array("y", y)
    if X.ndim not in (2, 3):
        raise ValueError(f"X must have shape (N, n) or (B, N, n), got {X.shape}")
    N = X.shape[-2]
    if y.ndim == 1:
        y = y[None, :]
    if y.ndim != 2 or y.shape[1] != N:
        raise ValueError(f"y must have shape (N,) or (B, N) with N = {N} (rows of X), got {y.shape}")
    B = y.shape[0]
    if X.ndim == 3 and X.shape[0] != B:
        if B == 1:
            y = np.broadcast_to(y, (X.shape[0], N)).copy()
            B = X.shape[0]
        else:
            raise ValueError(f"X has {X.shape[0]} configurations but y has {B}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    if X.ndim == 3 and X.shape[0] == 1:
        X = X[0]  # one problem: the faster shared-X path
    if np.any(np.linalg.norm(y, axis=1) == 0):
        raise ValueError("y must not be all zeros (the relative train error divides by ||y||)")
    return X, y, B


def _broadcast_configs(X: np.ndarray, y: np.ndarray, B: int, *params: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """One problem (B = 1) with K > 1 hyperparameter values: repeat the problem K times."""
    sizes = {np.asarray(v).shape[0] for v in params if np.asarray(v).ndim == 1}
    if B == 1 and len(sizes) == 1:
        K = sizes.pop()
        if K > 1:
            y = np.repeat(y, K, axis=0)
            if X.ndim == 3:
                X = np.repeat(X, K, axis=0)
            return X, y, K
    return X, y, B


def _init_vector(init: Any, B: int, n: int) -> np.ndarray:
    arr = _real_array("init", init)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"init must be finite, got {init!r}")
    if arr.ndim == 0:
        return np.full((B, n), float(arr))  # the official "identity" init: init * ones
    if arr.shape == (n,):
        return np.broadcast_to(arr, (B, n)).copy()
    if arr.shape == (B, n):
        return arr.copy()
    raise ValueError(f"init must be a scalar, shape ({n},) or ({B}, {n}), got {arr.shape}")


def _batch_target(a_star: Any, B: int, n: int) -> np.ndarray:
    a_star = _real_array("a_star", a_star)
    if a_star.shape == (n,):
        a_star = np.broadcast_to(a_star, (B, n)).copy()
    if a_star.shape != (B, n):
        raise ValueError(f"a_star must have shape ({n},) or ({B}, {n}), got {a_star.shape}")
    if not np.all(np.isfinite(a_star)):
        raise ValueError("a_star must be finite")
    if np.any(np.linalg.norm(a_star, axis=1) == 0):
        raise ValueError("a_star must not be zero (the recovery error divides by ||a*||)")
    return a_star


def stability_bound(X: np.ndarray, beta2: float = 0.0) -> np.ndarray:
    """Largest stable step size ``2 / lambda_max(X^T X + beta2 I)`` of gradient descent.

    Args:
        X: (N, n) or (B, N, n) float64 measurements.
        beta2: l2 penalty (>= 0), scalar or (B,).

    Returns:
        () or (B,) float64 bound; GD on the quadratic diverges for ``alpha`` above it.

    Raises:
        ValueError: X not 2-D or 3-D, empty or non-finite; beta2 negative, non-finite or of the
        wrong shape. TypeError: non-numeric X or beta2.
    """
    X = _real_array("X", X)
    if X.ndim not in (2, 3) or X.shape[-1] == 0 or X.shape[-2] == 0:
        raise ValueError(f"X must be a non-empty 2-D (N, n) or 3-D (B, N, n) array, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite")
    b2 = _real_array("beta2", beta2)
    if b2.ndim != 0 and not (X.ndim == 3 and b2.shape == (X.shape[0],)) and not (X.ndim == 2 and b2.ndim == 1):
        raise ValueError(f"beta2 must be a scalar or have shape (B,) = ({X.shape[0] if X.ndim == 3 else 'B'},), "
                         f"got shape {b2.shape}")
    if not np.all(np.isfinite(b2)) or np.any(b2 < 0):
        raise ValueError(f"beta2 must be finite and >= 0, got {beta2!r}")
    s = np.linalg.svd(X, compute_uv=False)
    lam = s.max(axis=-1) ** 2 + b2
    return 2.0 / lam


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def sparse_signal(n: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """An s-sparse signal a* with non-zeros drawn i.i.d. N(0, 1) / sqrt(n) (official scaling).

    Args:
        n: dimension; s: number of non-zeros, 1 <= s <= n; rng: NumPy generator.

    Returns:
        (n,) float64 vector with exactly s non-zero entries at uniformly random positions.

    Raises:
        ValueError: n or s not positive integers, or s > n. TypeError: rng not a Generator.
    """
    n = _pos_int("n", n)
    s = _pos_int("s", s)
    if s > n:
        raise ValueError(f"s must be <= n = {n}, got {s}")
    rng = _check_rng(rng)
    a = np.zeros(n)
    idx = rng.choice(n, size=s, replace=False)
    vals = rng.standard_normal(s)
    while np.any(vals == 0):  # measure-zero event; keep exactly s non-zeros
        vals = rng.standard_normal(s)
    a[idx] = vals / math.sqrt(n)
    return a


def measurements(N: int, n: int, tau: float, rng: np.random.Generator, basis: np.ndarray | None = None) -> np.ndarray:
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
        ValueError: bad sizes, tau outside [0, 1], basis of the wrong shape.
    """
    N = _pos_int("N", N)
    n = _pos_int("n", n)
    tau = _fraction("tau", tau)
    rng = _check_rng(rng)
    Phi = np.eye(n) if basis is None else np.asarray(basis, dtype=np.float64)
    if Phi.shape != (n, n):
        raise ValueError(f"basis must have shape ({n}, {n}), got {Phi.shape}")
    if not np.all(np.isfinite(Phi)):
        raise ValueError("basis must be finite")
    N1 = int(tau * N)
    M = np.empty((N, n))
    if N1 > 0:
        cols = rng.choice(n, size=N1, replace=N1 > n)
        M[:N1] = Phi[:, cols].T
    M[N1:] = rng.standard_normal((N - N1, n)) / math.sqrt(N)
    return M @ Phi


def sparse_problems(B: int, n: int, s: int, N: int, tau: Any, rng: np.random.Generator,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """B independent noiseless compressed-sensing problems ``y_b = X_b a*_b``.

    Args:
        B: number of problems; n, s, N: as in :func:`sparse_signal` / :func:`measurements`;
        tau: coherent fraction, scalar or (B,) (one per problem); rng: generator.

    Returns:
        ``(X (B, N, n), y (B, N), a_star (B, n))`` float64.

    Raises:
        ValueError: bad sizes, tau not a scalar or (B,) or outside [0, 1]. TypeError: non-integer
        sizes, non-numeric tau, rng not a Generator.
    """
    B = _pos_int("B", B)
    taus = _real_array("tau", tau)
    if taus.ndim == 0:
        taus = np.full(B, float(taus))
    if taus.shape != (B,):
        raise ValueError(f"tau must be a scalar or have shape (B,) = ({B},), got shape {taus.shape}")
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
        ValueError: bad sizes or rank.
    """
    n1 = _pos_int("n1", n1)
    n2 = _pos_int("n2", n2)
    r = _pos_int("r", r)
    if r > min(n1, n2):
        raise ValueError(f"r must be <= min(n1, n2) = {min(n1, n2)}, got {r}")
    rng = _check_rng(rng)
    A = rng.standard_normal((n1, r)) @ rng.standard_normal((r, n2))
    return A * math.sqrt(n1 * n2 / 10.0) / np.linalg.norm(A)


def local_coherence(A: np.ndarray, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Local coherences ``mu_i = n1/r ||U_i||^2``, ``nu_j = n2/r ||V_j||^2`` and ``P_ij = mu_i + nu_j``.

    From the compact SVD ``A = U Sigma V^T`` (rank r = number of singular values above
    ``tol * sigma_max``), as in the official ``calculate_local_coherence``.

    Returns:
        ``(mu (n1,), nu (n2,), P (n1, n2))`` float64.
    """
    A = _real_array("A", A)
    if A.ndim != 2 or A.size == 0:
        raise ValueError(f"A must be a non-empty matrix (n1, n2), got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("A must be finite")
    tol = _real("tol", tol, minimum=0.0)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    r = int(np.sum(s > tol * s.max()))
    if r == 0:
        raise ValueError("A must not be zero")
    n1, n2 = A.shape
    mu = n1 / r * np.sum(U[:, :r] ** 2, axis=1)
    nu = n2 / r * np.sum(Vt[:r].T ** 2, axis=1)
    return mu, nu, mu[:, None] + nu[None, :]


def completion_mask(A: np.ndarray, N: int, tau: float, rng: np.random.Generator) -> np.ndarray:
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
        ValueError: N out of range, tau outside [0, 1], A not a matrix.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"A must be a matrix (n1, n2), got shape {A.shape}")
    N = _pos_int("N", N)
    if N > A.size:
        raise ValueError(f"N must be <= n1 * n2 = {A.size}, got {N}")
    tau = _fraction("tau", tau)
    rng = _check_rng(rng)
    _, _, P = local_coherence(A)
    perm = rng.permutation(A.size)
    order = perm[np.argsort(-P.ravel()[perm], kind="stable")]
    N1 = int(tau * N)
    chosen = list(order[:N1])
    rest = order[N1:]
    chosen += list(rng.choice(rest, size=N - N1, replace=False))
    mask = np.zeros(A.size, dtype=bool)
    mask[np.asarray(chosen, dtype=int)] = True
    return mask.reshape(A.shape)


def modular_dataset(p: int, op: str, train_fraction: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """All pairs (x, y) in Z_p x Z_p labelled by ``x op y mod p``, split into train and test.

    Args:
        p: modulus (>= 2); op: ``"+"``, ``"-"`` or ``"*"``; train_fraction: in (0, 1);
        rng: generator for the split.

    Returns:
        dict with ``x_train`` (M, 2) int64, ``y_train`` (M,) int64, ``x_test``, ``y_test`` and ``p``;
        M = round(train_fraction p^2).

    Raises:
        ValueError: bad p, unknown op, train_fraction outside (0, 1).
    """
    p = _pos_int("p", p, minimum=2)
    if op not in ("+", "-", "*"):
        raise ValueError(f"op must be '+', '-' or '*', got {op!r}")
    f = _fraction("train_fraction", train_fraction)
    if not 0.0 < f < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction!r}")
    rng = _check_rng(rng)
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    x = np.stack([a.ravel(), b.ravel()], axis=1).astype(np.int64)
    y = {"+": x[:, 0] + x[:, 1], "-": x[:, 0] - x[:, 1], "*": x[:, 0] * x[:, 1]}[op] % p
    perm = rng.permutation(len(x))
    M = int(round(f * len(x)))
    tr, te = perm[:M], perm[M:]
    return {"x_train": x[tr], "y_train": y[tr], "x_test": x[te], "y_test": y[te], "p": p}


# --------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------


def _single_problem(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = _real_array("X", X)
    y = _real_array("y", y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (N, n) and y (N,), got {X.shape} and {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    return X, y


def min_norm_solution(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Minimum-l2-norm interpolant ``X^+ y`` (``numpy.linalg.pinv``): where phase 1 ends.

    Args: X (N, n) or (B, N, n); y (N,) or (B, N). Returns (n,) or (B, n) float64.

    Raises: ValueError if the shapes do not match or the inputs are not finite.
    """
    X = _real_array("X", X)
    y = _real_array("y", y)
    if not ((X.ndim == 2 and y.shape == (X.shape[0],))
            or (X.ndim == 3 and y.shape == (X.shape[0], X.shape[1]))):
        raise ValueError(f"X must be (N, n) with y (N,), or (B, N, n) with y (B, N); got {X.shape} and {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    if X.ndim == 2 and y.ndim == 1:
        return np.linalg.pinv(X) @ y
    Xp = np.linalg.pinv(X)
    return Xp @ y if Xp.ndim == 2 else np.einsum("bnj,bj->bn", Xp, y)


def ridge_solution(X: np.ndarray, y: np.ndarray, beta2: float) -> np.ndarray:
    """Ridge solution ``(X^T X + beta2 I)^{-1} X^T y``: where l2-only GD converges (any init).

    Args: X (N, n); y (N,); beta2 > 0. Returns (n,) float64.

    Raises: ValueError if beta2 <= 0 or shapes mismatch.
    """
    X, y = _single_problem(X, y)
    beta2 = _real("beta2", beta2, minimum=0.0, strict=True)
    n = X.shape[1]
    return np.linalg.solve(X.T @ X + beta2 * np.eye(n), X.T @ y)


def lasso_solution(X: np.ndarray, y: np.ndarray, beta1: float, tol: float = 1e-12) -> np.ndarray:
    """Minimiser of ``1/2 ||X a - y||^2 + beta1 ||a||_1`` by scikit-learn's coordinate descent.

    scikit-learn's ``Lasso`` minimises ``1/(2N) ||y - X a||^2 + alpha_sk ||a||_1``, so
    ``alpha_sk = beta1 / N``; no intercept.

    Args: X (N, n); y (N,); beta1 > 0. Returns (n,) float64.

    Raises: ValueError for mismatched shapes, non-finite inputs, beta1 or tol not > 0.
    """
    from sklearn.linear_model import Lasso

    X, y = _single_problem(X, y)
    beta1 = _real("beta1", beta1, minimum=0.0, strict=True)
    tol = _real("tol", tol, minimum=0.0, strict=True)
    model = Lasso(alpha=beta1 / X.shape[0], fit_intercept=False, tol=tol, max_iter=1_000_000)
    model.fit(X, y)
    return model.coef_.astype(np.float64)


def basis_pursuit(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``argmin ||a||_1 s.t. X a = y`` by linear programming (``scipy.optimize.linprog``, HiGHS).

    Writes a = u - v with u, v >= 0 and minimises sum(u + v). Args: X (N, n); y (N,).
    Returns (n,) float64. Raises RuntimeError if the LP fails (e.g. infeasible).
    """
    from scipy.optimize import linprog

    X, y = _single_problem(X, y)
    n = X.shape[1]
    res = linprog(np.ones(2 * n), A_eq=np.hstack([X, -X]), b_eq=y, bounds=(0, None), method="highs")
    if not res.success:
        raise RuntimeError(f"basis pursuit LP failed: {res.message}")
    return res.x[:n] - res.x[n:]


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def rel_train_error(X: np.ndarray, a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``||X a - y|| / ||y||`` for (N, n) X, (n,) or (B, n) a and (N,) or (B, N) y; returns () or (B,).

    Raises: ValueError if X is not 2-D or the shapes of a or y do not match X.
    """
    X = _real_array("X", X)
    a = _real_array("a", a)
    y = _real_array("y", y)
    if X.ndim != 2:
        raise ValueError(f"X must be (N, n), got shape {X.shape}")
    if a.ndim not in (1, 2) or a.shape[-1] != X.shape[1]:
        raise ValueError(f"a must have shape (n,) or (B, n) with n = {X.shape[1]}, got {a.shape}")
    if y.ndim not in (1, 2) or y.shape[-1] != X.shape[0]:
        raise ValueError(f"y must have shape (N,) or (B, N) with N = {X.shape[0]}, got {y.shape}")
    if a.ndim == 2 and y.ndim == 2 and y.shape[0] not in (1, a.shape[0]):
        raise ValueError(f"a has {a.shape[0]} rows but y has {y.shape[0]}")
    return np.linalg.norm(a @ X.T - y, axis=-1) / np.linalg.norm(y, axis=-1)


def rel_recovery_error(a: np.ndarray, a_star: np.ndarray, matrix: bool = False) -> np.ndarray:
    """``||a - a*|| / ||a*||`` over the last axis, or the last two (Frobenius) when ``matrix``."""
    axes = (-2, -1) if matrix else -1
    a = _real_array("a", a)
    a_star = _real_array("a_star", a_star)
    k = 2 if matrix else 1
    if a.ndim < k or a_star.ndim < k or a.shape[-k:] != a_star.shape[-k:]:
        raise ValueError(f"a and a_star must share their last {k} dimension(s), got {a.shape} and {a_star.shape}")
    try:
        np.broadcast_shapes(a.shape, a_star.shape)
    except ValueError:
        raise ValueError(f"a {a.shape} and a_star {a_star.shape} have incompatible batch shapes") from None
    return np.linalg.norm(a - a_star, axis=axes) / np.linalg.norm(a_star, axis=axes)


def l0_norm(a: np.ndarray, threshold: float = 1e-4) -> np.ndarray:
    """Number of entries with ``|a_i| > threshold`` (last axis). Raises ValueError if threshold < 0."""
    threshold = _real("threshold", threshold, minimum=0.0)
    return np.sum(np.abs(a) > threshold, axis=-1)


def l1_norm(a: np.ndarray) -> np.ndarray:
    """``sum |a_i|`` over the last axis."""
    return np.sum(np.abs(a), axis=-1)


def l2_norm(a: np.ndarray) -> np.ndarray:
    """Euclidean norm over the last axis."""
    return np.linalg.norm(a, axis=-1)


def nuclear_norm(A: np.ndarray) -> np.ndarray:
    """Sum of singular values of (..., n1, n2) matrices."""
    return np.linalg.svd(A, compute_uv=False).sum(axis=-1)


def grokking_times(history: History, threshold: float = 1e-2,
                   rule: Literal["first-below", "stays-below"] = "first-below",
                   train_threshold: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Memorisation time t1 and generalisation time t2 of each run, with the detection rule named.

    ``t1`` is when the relative train error gets below ``train_threshold`` (default: ``threshold``),
    ``t2`` when the relative recovery error gets below ``threshold``. Rule ``"first-below"``: the
    first recorded step below the threshold (the official Fig. 3 rule, threshold 1e-3 there).
    ``"stays-below"``: the first recorded step after which the error never exceeds the
    threshold again. Times are resolved to the record period; NaN when never reached.

    Returns:
        ``(t1 (B,), t2 (B,))`` float64 step counts.

    Raises:
        ValueError: unknown rule or non-positive threshold.
    """
    if not isinstance(history, History):
        raise TypeError(f"history must be a History, got {type(history).__name__}")
    if rule not in ("first-below", "stays-below"):
        raise ValueError(f"rule must be 'first-below' or 'stays-below', got {rule!r}")
    threshold = _real("threshold", threshold, minimum=0.0, strict=True)
    tt = threshold if train_threshold is None else _real("train_threshold", train_threshold, minimum=0.0, strict=True)

    def detect(err: np.ndarray, thr: float) -> np.ndarray:
        below = err < thr  # (T, B)
        if rule == "stays-below":
            below = np.flip(np.logical_and.accumulate(np.flip(below, 0), axis=0), 0)
        out = np.full(err.shape[1], np.nan)
        hit = below.any(axis=0)
        out[hit] = history.steps[np.argmax(below, axis=0)[hit]]
        return out

    return detect(history.train_error, tt), detect(history.recovery_error, threshold)


def predicted_t2(a_ls: np.ndarray, a_star: np.ndarray, alpha: Any, beta: Any) -> np.ndarray:
    """Phase-2 duration predicted by the sign drift: ``||a_ls - a*||_inf / (alpha beta)``.

    The official Fig. 4 predictor: after memorisation the iterate sits near the least-squares
    solution ``a_ls``; the l1 subgradient moves each coordinate by at most ``alpha beta`` per step,
    so reaching ``a*`` takes at least ``||a_ls - a*||_inf / (alpha beta)`` steps.

    Args: a_ls, a_star: (n,) or (B, n); alpha, beta: positive scalars or (B,).

    Returns: () or (B,) float64 steps.

    Raises: ValueError for mismatched shapes or alpha, beta not finite and > 0; TypeError for
    non-numeric input.
    """
    a_ls = _real_array("a_ls", a_ls)
    a_star = _real_array("a_star", a_star)
    if a_ls.ndim not in (1, 2) or a_star.ndim not in (1, 2) or a_ls.shape[-1] != a_star.shape[-1] or (
            a_ls.ndim == 2 and a_star.ndim == 2 and a_ls.shape[0] != a_star.shape[0]):
        raise ValueError(f"a_ls and a_star must have shape (n,) or (B, n) with the same n (and B), "
                         f"got {a_ls.shape} and {a_star.shape}")
    gap = np.max(np.abs(a_ls - a_star), axis=-1)
    alpha = _real_array("alpha", alpha)
    beta = _real_array("beta", beta)
    for name, v in (("alpha", alpha), ("beta", beta)):
        if not (np.all(np.isfinite(v)) and np.all(v > 0)):
            raise ValueError(f"{name} must be finite and > 0, got {v}")
        if v.ndim > 1 or (v.ndim == 1 and gap.ndim == 1 and v.shape != gap.shape):
            raise ValueError(f"{name} must be a scalar or (B,) = {gap.shape}, got shape {v.shape}")
    try:
        return gap / (alpha * beta)
    except ValueError:
        raise ValueError(f"alpha {alpha.shape} and beta {beta.shape} must be scalars or the same (B,)") from None


def loglog_slope(x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> float:
    """Least-squares slope of log y against log x over the finite, positive pairs.

    With ``groups`` (one label per pair, e.g. the problem index), each group gets its own
    intercept (log x and log y are centred within the group before the pooled fit). This is the
    estimator to use for ``t2 ~ C_problem / (alpha beta)``: problems differ in ``C``, and a run that
    never generalised (NaN) would otherwise bias a pooled fit.

    Returns:
        the slope, or NaN when fewer than two usable pairs (per group, with groups) remain.

    Raises:
        ValueError: x and y (or groups) of different sizes. TypeError: non-numeric x or y.
    """
    x = _real_array("x", x).ravel()
    y = _real_array("y", y).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same number of entries, got {x.size} and {y.size}")
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if groups is None:
        if ok.sum() < 2:
            return float("nan")
        return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])
    groups = np.asarray(groups).ravel()
    if groups.shape != x.shape:
        raise ValueError(f"groups must have one label per pair ({x.size}), got {groups.size}")
    lx, ly = [], []
    for lab in np.unique(groups[ok]):
        m = ok & (groups == lab)
        if m.sum() >= 2:
            lx.append(np.log(x[m]) - np.log(x[m]).mean())
            ly.append(np.log(y[m]) - np.log(y[m]).mean())
    if not lx:
        return float("nan")
    lx_all, ly_all = np.concatenate(lx), np.concatenate(ly)
    if np.all(lx_all == 0):
        return float("nan")
    return float(np.sum(lx_all * ly_all) / np.sum(lx_all ** 2))


# --------------------------------------------------------------------------------------------
# Optimisers
# --------------------------------------------------------------------------------------------


def _check_steps(steps: Any, eval_every: Any) -> tuple[int, int]:
    steps = _pos_int("steps", steps)
    eval_every = _pos_int("eval_every", eval_every)
    if eval_every > steps:
        raise ValueError(f"eval_every must be <= steps = {steps}, got {eval_every}")
    return steps, eval_every


def subgradient_descent(
    X: np.ndarray,
    y: np.ndarray,
    a_star: np.ndarray,
    alpha: Any = 0.1,
    beta1: Any = 0.0,
    beta2: Any = 0.0,
    init: Any = 1e-6,
    steps: int = 10_000,
    method: Literal["sub", "proj", "ista"] = "sub",
    eval_every: int = 100,
    l0_threshold: float = 1e-4,
) -> History:
    """(Sub)gradient descent on ``1/2||Xa - y||^2 + beta2/2 ||a||^2 + beta1 ||a||_1``, batched.

    The update of the paper's Sec. 3, ``a <- a - alpha (X^T(Xa - y) + beta2 a + beta1 sign(a))``
    (``method="sub"``), its projected version (``"proj"``: then ``a <- a - X^T(XX^T)^{-1}(Xa-y)``)
    and ISTA (``"ista"``: gradient step on the smooth part, then soft-threshold at
    ``alpha beta1``). B configurations run at once (one row of y, alpha, beta1, beta2, init per
    configuration); the loop is :func:`icml25.kernels.grokking.grok_steps` (CUDA when a GPU is
    present, else NumPy).

    Args:
        X: (N, n) shared or (B, N, n) float64 measurements.
        y: (N,) or (B, N) float64 targets (not all zero).
        a_star: (n,) or (B, n) ground truth, for the recovery error.
        alpha: step size(s) > 0, scalar or (B,); must be below ``2 / lambda_max(X^T X + beta2)``.
        beta1, beta2: penalties >= 0, scalar or (B,).
        init: scalar c (start at ``c * ones``, the official "identity" init), (n,) or (B, n).
        steps: number of updates; eval_every: record period (steps).
        method: ``"sub"``, ``"proj"`` or ``"ista"``.
        l0_threshold: |a_i| above it counts as non-zero.

    Returns:
        :class:`History` with ``train_error``, ``recovery_error`` and norms ``l0``, ``l1``, ``l2``
        of shape (T, B), T = steps // eval_every + 1, and ``final`` (B, n).

    Raises:
        ValueError: shape mismatches, non-positive alpha or steps, negative penalties, alpha at or
        above the stability bound, unknown method, all-zero y or a_star, non-finite alpha, beta1,
        beta2, init or data. TypeError: non-numeric alpha, beta1, beta2, init or l0_threshold
        (strings included), non-integer steps or eval_every.
    """
    if method not in ("sub", "proj", "ista"):
        raise ValueError(f"method must be 'sub', 'proj' or 'ista', got {method!r}")
    X, y, B = _batch_problem(X, y)
    X, y, B = _broadcast_configs(X, y, B, alpha, beta1, beta2)
    n = X.shape[-1]
    steps, eval_every = _check_steps(steps, eval_every)
    l0_threshold = _real("l0_threshold", l0_threshold, minimum=0.0)
    alpha = _per_config("alpha", alpha, B, positive=True)
    beta1 = _per_config("beta1", beta1, B, positive=False)
    beta2 = _per_config("beta2", beta2, B, positive=False)
    bound = np.broadcast_to(stability_bound(X, beta2), (B,))
    if np.any(alpha >= bound):
        bad = int(np.argmax(alpha >= bound))
        raise ValueError(
            f"alpha = {alpha[bad]:.4g} is at or above the stability bound 2/lambda_max(X^T X + beta2) = "
            f"{bound[bad]:.4g} (configuration {bad}); gradient descent would diverge"
        )
    a0 = _init_vector(init, B, n)
    a_star = _batch_target(a_star, B, n)
    P = None
    if method == "proj":
        if X.ndim == 2:
            P = X.T @ np.linalg.inv(X @ X.T)
        else:
            P = np.einsum("bjn,bjk->bnk", X, np.linalg.inv(np.einsum("bjn,bkn->bjk", X, X)))
    final, rec = grok_steps(X, y, a0, alpha, beta1, beta2, a_star, steps, eval_every, method, P, l0_threshold)
    T = rec.shape[0]
    return History(
        steps=np.arange(T, dtype=np.int64) * eval_every,
        train_error=rec[:, :, 0],
        recovery_error=rec[:, :, 1],
        norms={"l0": rec[:, :, 2], "l1": rec[:, :, 3], "l2": rec[:, :, 4]},
        final=final,
        config={"method": method, "alpha": alpha, "beta1": beta1, "beta2": beta2, "steps": steps,
                "eval_every": eval_every},
    )


def deep_hadamard_gd(
    X: np.ndarray,
    y: np.ndarray,
    a_star: np.ndarray,
    depth: int = 2,
    init: float = 1e-3,
    parametrisation: Literal["u*u-v*v", "random", "identity"] = "u*u-v*v",
    alpha: Any = 0.1,
    steps: int = 10_000,
    eval_every: int = 100,
    rng: np.random.Generator | None = None,
    l0_threshold: float = 1e-4,
) -> History:
    """Gradient descent on a depth-L Hadamard factorisation with no explicit penalty (Sec. 4).

    Loss ``1/2 ||X a - y||^2`` with ``a`` built from L factors:

    * ``"u*u-v*v"`` (default, this book's fix): ``a = u_1*...*u_L - v_1*...*v_L``, every factor
      starting at ``init * ones``, so ``a_0 = 0`` and each entry can take either sign. Small init
      biases GD towards sparse solutions (Woodworth et al., 2020).
    * ``"random"``: ``a = a_1*...*a_L``, factors ``init * N(0, 1/n)`` i.i.d. (the official
      ``init_method="random"``).
    * ``"identity"``: ``a = a_1*...*a_L``, every factor ``init * ones`` (the official default).
      **Flawed**: identical factors stay identical under GD, so for even L, ``a = a_1^L >= 0``
      forever and negative entries of ``a*`` can never be fitted; for L >= 3 the gradients scale
      like ``init^(L-1)`` and training stalls. Kept to show the trap.

    Batched over B problems like :func:`subgradient_descent`; NumPy only.

    Args:
        X: (N, n) or (B, N, n); y: (N,) or (B, N); a_star: (n,) or (B, n).
        depth: L >= 1; init: factor scale > 0; parametrisation: see above;
        alpha: step size(s) > 0; steps, eval_every: as in :func:`subgradient_descent`;
        rng: generator, required for ``"random"``.

    Returns:
        :class:`History` (final = the product vector a, (B, n)).

    Raises:
        ValueError: bad depth, init (must be finite and > 0), alpha, steps, shapes or
        parametrisation; missing rng. TypeError: non-numeric init/alpha, non-integer depth/steps.
    """
    if parametrisation not in ("u*u-v*v", "random", "identity"):
        raise ValueError(f"parametrisation must be 'u*u-v*v', 'random' or 'identity', got {parametrisation!r}")
    X, y, B = _batch_problem(X, y)
    X, y, B = _broadcast_configs(X, y, B, alpha)
    n = X.shape[-1]
    depth = _pos_int("depth", depth)
    init = _real("init", init, minimum=0.0, strict=True)
    steps, eval_every = _check_steps(steps, eval_every)
    l0_threshold = _real("l0_threshold", l0_threshold, minimum=0.0)
    alpha = _per_config("alpha", alpha, B, positive=True)[:, None]
    a_star = _batch_target(a_star, B, n)
    shared = X.ndim == 2
    if parametrisation == "random":
        if rng is None:
            raise ValueError("rng is required for parametrisation='random'")
        _check_rng(rng)
        U = [init * rng.standard_normal((B, n)) / math.sqrt(n) for _ in range(depth)]
        V: list[np.ndarray] = []
    elif parametrisation == "identity":
        U = [np.full((B, n), float(init)) for _ in range(depth)]
        V = []
    else:
        U = [np.full((B, n), float(init)) for _ in range(depth)]
        V = [np.full((B, n), float(init)) for _ in range(depth)]

    def product(fs: list[np.ndarray]) -> np.ndarray:
        out = np.ones((B, n))
        for f in fs:
            out = out * f
        return out

    def assemble() -> np.ndarray:
        return product(U) - product(V) if V else product(U)

    def resid(a: np.ndarray) -> np.ndarray:
        return (a @ X.T if shared else np.matmul(X, a[:, :, None])[:, :, 0]) - y

    T = steps // eval_every + 1
    tr = np.empty((T, B))
    re = np.empty((T, B))
    norms = {k: np.empty((T, B)) for k in ("l0", "l1", "l2")}

    def rec(k: int, a: np.ndarray, R: np.ndarray) -> None:
        tr[k] = np.linalg.norm(R, axis=1) / np.linalg.norm(y, axis=1)
        re[k] = np.linalg.norm(a - a_star, axis=1) / np.linalg.norm(a_star, axis=1)
        norms["l0"][k] = l0_norm(a, l0_threshold)
        norms["l1"][k] = l1_norm(a)
        norms["l2"][k] = l2_norm(a)

    a = assemble()
    R = resid(a)
    rec(0, a, R)
    for t in range(1, steps + 1):
        g = R @ X if shared else np.matmul(R[:, None, :], X)[:, 0, :]  # dL/da
        newU = [f - alpha * g * product(U[:k] + U[k + 1:]) for k, f in enumerate(U)]
        newV = [f + alpha * g * product(V[:k] + V[k + 1:]) for k, f in enumerate(V)]
        U, V = newU, newV
        a = assemble()
        R = resid(a)
        if not np.all(np.isfinite(a)):
            raise FloatingPointError(f"deep_hadamard_gd diverged at step {t}; lower alpha")
        if t % eval_every == 0:
            rec(t // eval_every, a, R)
    return History(np.arange(T, dtype=np.int64) * eval_every, tr, re, norms, a,
                   {"depth": depth, "init": init, "parametrisation": parametrisation, "alpha": alpha[:, 0]})


def matrix_subgradient(
    mask: np.ndarray,
    A_star: np.ndarray,
    alpha: Any = 0.1,
    beta_star: Any = 1e-4,
    init: float = 1e-6,
    steps: int = 10_000,
    method: Literal["sub", "svt"] = "sub",
    eval_every: int = 100,
) -> History:
    """Matrix completion by (sub)gradient descent with a nuclear-norm penalty (Sec. 3, low rank).

    Minimises ``1/2 sum_{(i,j) observed} (A_ij - A*_ij)^2 + beta* ||A||_*``. ``"sub"``:
    ``A <- A - alpha (M o (A - A*) + beta* U V^T)`` with ``A = U S V^T`` the full SVD (a valid
    subgradient of the nuclear norm, also at rank-deficient A); ``"svt"``: gradient step, then
    singular-value soft-thresholding at ``alpha beta*`` (proximal gradient). B problems at once
    (batched ``numpy.linalg.svd``).

    Args:
        mask: (n1, n2) or (B, n1, n2) bool observed entries.
        A_star: (n1, n2) or (B, n1, n2) float64 ground truth (only observed entries enter the loss).
        alpha: step(s) in (0, 2) (the loss Hessian is a 0/1 projection); beta_star: >= 0.
        init: start at ``init * ones``; steps, eval_every: as in :func:`subgradient_descent`.
        method: ``"sub"`` or ``"svt"``.

    Returns:
        :class:`History` with ``train_error`` = error on observed entries, ``recovery_error``
        = full Frobenius error, norms ``nuclear`` and ``rank`` (singular values > 1e-3 sigma_max).

    Raises:
        ValueError: shapes (mask must match A_star's (n1, n2) and batch size), alpha outside
        (0, 2), negative beta, unknown method, empty mask, non-finite or all-zero A_star, non-finite
        init. TypeError: non-boolean mask, non-numeric alpha/beta_star/init, non-integer steps.
    """
    if method not in ("sub", "svt"):
        raise ValueError(f"method must be 'sub' or 'svt', got {method!r}")
    mask = np.asarray(mask)
    A_star = _real_array("A_star", A_star)
    if mask.dtype != bool:
        raise TypeError(f"mask must be a boolean array, got dtype {mask.dtype}")
    if A_star.ndim not in (2, 3) or 0 in A_star.shape:
        raise ValueError(f"A_star must have shape (n1, n2) or (B, n1, n2), got {A_star.shape}")
    n1, n2 = A_star.shape[-2:]
    if mask.ndim not in (2, 3) or mask.shape[-2:] != (n1, n2):
        raise ValueError(f"mask must have shape ({n1}, {n2}) or (B, {n1}, {n2}) to match A_star {A_star.shape}, "
                         f"got {mask.shape}")
    if mask.ndim == 2:
        mask = mask[None]
    if A_star.ndim == 2:
        A_star = A_star[None]
    if mask.shape[0] != A_star.shape[0]:
        if mask.shape[0] != 1 and A_star.shape[0] != 1:
            raise ValueError(f"mask has {mask.shape[0]} problems but A_star has {A_star.shape[0]}")
        Bm = max(mask.shape[0], A_star.shape[0])
        mask = np.broadcast_to(mask, (Bm, n1, n2)).copy()
        A_star = np.broadcast_to(A_star, (Bm, n1, n2)).copy()
    if not np.all(np.isfinite(A_star)):
        raise ValueError("A_star must be finite")
    B = mask.shape[0]
    if np.any(np.linalg.norm(A_star.reshape(B, -1), axis=1) == 0):
        raise ValueError("A_star must not be zero (the recovery error divides by ||A*||)")
    init = _real("init", init)
    if np.any(mask.reshape(B, -1).sum(axis=1) == 0):
        raise ValueError("mask must observe at least one entry per problem")
    if np.any(np.linalg.norm((mask * A_star).reshape(B, -1), axis=1) == 0):
        raise ValueError("A_star must not be zero on the observed entries (the train error divides by their norm)")
    steps, eval_every = _check_steps(steps, eval_every)
    alpha = _per_config("alpha", alpha, B, positive=True)
    if np.any(alpha >= 2.0):
        raise ValueError(f"alpha must be < 2 (stability bound of the completion loss), got {alpha}")
    beta = _per_config("beta_star", beta_star, B, positive=False)
    al, be = alpha[:, None, None], beta[:, None, None]
    M = mask.astype(np.float64)
    A = np.full(A_star.shape, init)
    obs_norm = np.linalg.norm((M * A_star).reshape(B, -1), axis=1)
    full_norm = np.linalg.norm(A_star.reshape(B, -1), axis=1)
    T = steps // eval_every + 1
    tr = np.empty((T, B))
    re = np.empty((T, B))
    nuc = np.empty((T, B))
    rank = np.empty((T, B))

    def rec(k: int) -> None:
        tr[k] = np.linalg.norm((M * (A - A_star)).reshape(B, -1), axis=1) / obs_norm
        re[k] = np.linalg.norm((A - A_star).reshape(B, -1), axis=1) / full_norm
        s = np.linalg.svd(A, compute_uv=False)
        nuc[k] = s.sum(axis=1)
        rank[k] = (s > 1e-3 * s[:, :1]).sum(axis=1)

    rec(0)
    for t in range(1, steps + 1):
        G = M * (A - A_star)
        if method == "sub":
            U, _, Vt = np.linalg.svd(A, full_matrices=False)
            A = A - al * (G + be * (U @ Vt))
        else:
            U, s, Vt = np.linalg.svd(A - al * G, full_matrices=False)
            s = np.maximum(s - al[:, :, 0] * be[:, :, 0], 0.0)
            A = (U * s[:, None, :]) @ Vt
        if t % eval_every == 0:
            rec(t // eval_every)
    return History(np.arange(T, dtype=np.int64) * eval_every, tr, re, {"nuclear": nuc, "rank": rank}, A,
                   {"method": method, "alpha": alpha, "beta_star": beta})


# --------------------------------------------------------------------------------------------
# Networks: modular arithmetic (Sec. 6, Figs 1-2)
# --------------------------------------------------------------------------------------------


def _torch():
    import torch

    return torch


def EncoderDecoderMLP(p: int, d: int = 64, seed: int | None = None):
    """The official modular-arithmetic MLP: two embeddings combined by a matrix product.

    ``x = (i, j)``: one-hot e_i, e_j -> two bias-free linear embeddings ``E1, E2 : R^p -> R^d``;
    their (sqrt d x sqrt d) reshapes are multiplied, ``h = vec(mat(E1 e_i) @ mat(E2 e_j))``; then
    ``Linear(d, d, bias=False) -> ReLU -> Linear(d, p, bias=False)``. Embeddings keep PyTorch's
    default init; the decoder layers are ``N(0, 1/fan_out)``, as in the official
    ``Encoder_Decoder(aggregation_mode="matrix_product")``.

    Args:
        p: modulus / number of classes (>= 2); d: width, a perfect square; seed: torch seed for init.

    Returns:
        a ``torch.nn.Module`` mapping (M, 2) int64 to (M, p) logits (float32).

    Raises:
        ValueError: d not a perfect square, p < 2.
    """
    torch = _torch()
    nn = torch.nn
    p = _pos_int("p", p, minimum=2)
    d = _pos_int("d", d)
    k = math.isqrt(d)
    if k * k != d:
        raise ValueError(f"d must be a perfect square (it is reshaped to sqrt(d) x sqrt(d)), got {d}")

    class _Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p, self.d, self.k = p, d, k
            self.embed = nn.ModuleList([nn.Linear(p, d, bias=False) for _ in range(2)])
            self.hidden = nn.Linear(d, d, bias=False)
            self.out = nn.Linear(d, p, bias=False)

        def forward(self, x: "torch.Tensor") -> "torch.Tensor":
            oh = torch.nn.functional.one_hot(x, self.p).to(self.hidden.weight.dtype)  # (M, 2, p)
            h1 = self.embed[0](oh[:, 0]).reshape(-1, self.k, self.k)
            h2 = self.embed[1](oh[:, 1]).reshape(-1, self.k, self.k)
            h = torch.bmm(h1, h2).flatten(1)
            return self.out(torch.relu(self.hidden(h)))

    gen_state = None
    if seed is not None:
        gen_state = torch.get_rng_state()
        torch.manual_seed(int(seed))
    model = _Model()
    with torch.no_grad():
        for layer in (model.hidden, model.out):
            layer.weight.normal_(0.0, 1.0 / math.sqrt(layer.weight.shape[0]))
    if gen_state is not None:
        torch.set_rng_state(gen_state)
    return model


def regularisation(model: Any, l1: float = 0.0, l2: float = 0.0, nuclear: float = 0.0):
    """``sum_W l1 ||W||_1 + l2 ||W||_F + nuclear ||W||_*`` over the model's weight matrices.

    As in the official code (``torch.norm(W, p)``), the norms are **not squared**: the l2 term is
    the Frobenius norm itself, whose gradient ``W / ||W||_F`` has unit scale (unlike weight decay).

    Args:
        model: a torch module; l1, l2, nuclear: penalty weights >= 0.

    Returns:
        a scalar torch tensor (0 when all weights are 0).

    Raises:
        ValueError: a negative or non-finite weight. TypeError: model not a torch module, a
        non-numeric weight.
    """
    torch = _torch()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for name, v in (("l1", l1), ("l2", l2), ("nuclear", nuclear)):
        _real(name, v, minimum=0.0)
    total = None
    for W in model.parameters():
        if W.ndim != 2:
            continue
        terms = []
        if l1:
            terms.append(l1 * W.abs().sum())
        if l2:
            terms.append(l2 * torch.linalg.matrix_norm(W, "fro"))
        if nuclear:
            terms.append(nuclear * torch.linalg.matrix_norm(W, "nuc"))
        for term in terms:
            total = term if total is None else total + term
    if total is None:
        device = next(iter(model.parameters())).device if any(True for _ in model.parameters()) else "cpu"
        return torch.zeros((), device=device)
    return total


def train_grokking(
    model: Any,
    data: dict[str, np.ndarray],
    lr: float = 1e-2,
    epochs: int = 3000,
    eval_every: int = 10,
    l1: float = 0.0,
    l2: float = 0.0,
    nuclear: float = 0.0,
    weight_decay: float = 0.0,
    device: str | None = None,
) -> dict[str, np.ndarray]:
    """Full-batch Adam on cross-entropy + :func:`regularisation`, logging accuracies and norms.

    Args:
        model: e.g. :func:`EncoderDecoderMLP`; data: :func:`modular_dataset` output;
        lr: Adam step size > 0; epochs: full-batch steps; eval_every: logging period;
        l1, l2, nuclear: penalty weights; weight_decay: AdamW decoupled decay (the "classic"
            baseline; 0 = plain Adam, the paper's setting).
        device: torch device; default ``"cuda"`` when torch sees a GPU, else ``"cpu"``.

    Returns:
        dict of (T,) arrays: ``epoch``, ``train_acc``, ``test_acc``, ``train_loss``, ``test_loss``,
        ``l1_norm``, ``l2_norm`` (Frobenius norm of all parameters), ``nuclear_norm`` (sum over
        weight matrices).

    Raises:
        TypeError: model not a ``torch.nn.Module``; data not a mapping, or its arrays not integer;
        non-numeric lr/penalties, non-integer epochs/eval_every, device not a str.
        ValueError: data missing one of ``x_train, y_train, x_test, y_test`` or with the wrong
        shapes ((M, 2) pairs, (M,) labels, non-empty train split); non-positive or non-finite
        lr, non-positive epochs/eval_every, negative penalties.
    """
    torch = _torch()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (e.g. EncoderDecoderMLP), got {type(model).__name__}")
    from collections.abc import Mapping

    if not isinstance(data, Mapping):
        raise TypeError(f"data must be a dict from modular_dataset (keys x_train, y_train, x_test, y_test), "
                        f"got {type(data).__name__}")
    keys = ("x_train", "y_train", "x_test", "y_test")
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"data is missing key(s) {missing}; expected the modular_dataset dict with keys {list(keys)}")
    arrs = {}
    for k in keys:
        v = np.asarray(data[k].detach().cpu() if isinstance(data[k], torch.Tensor) else data[k])
        if v.dtype.kind not in "iu":
            raise TypeError(f"data[{k!r}] must be an integer array, got dtype {v.dtype}")
        arrs[k] = v
    for split in ("train", "test"):
        xs, ys = arrs[f"x_{split}"], arrs[f"y_{split}"]
        if xs.ndim != 2 or xs.shape[1] != 2 or ys.shape != (xs.shape[0],):
            raise ValueError(f"data['x_{split}'] must be (M, 2) and data['y_{split}'] (M,), "
                             f"got {xs.shape} and {ys.shape}")
    if arrs["x_train"].shape[0] == 0:
        raise ValueError("data['x_train'] must not be empty")
    lr = _real("lr", lr, minimum=0.0, strict=True)
    weight_decay = _real("weight_decay", weight_decay, minimum=0.0)
    epochs = _pos_int("epochs", epochs)
    eval_every = _pos_int("eval_every", eval_every)
    regularisation(model, l1, l2, nuclear)  # validates the weights
    if device is not None and not isinstance(device, str):
        raise TypeError(f"device must be a str such as 'cpu' or 'cuda', or None, got {type(device).__name__}")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    xtr, ytr, xte, yte = (torch.as_tensor(arrs[k], dtype=torch.int64).to(device) for k in keys)
    opt = (torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay) if weight_decay
           else torch.optim.Adam(model.parameters(), lr=lr))
    ce = torch.nn.functional.cross_entropy
    logs: dict[str, list[float]] = {k: [] for k in ("epoch", "train_acc", "test_acc", "train_loss", "test_loss",
                                                    "l1_norm", "l2_norm", "nuclear_norm")}

    def log(epoch: int) -> None:
        with torch.no_grad():
            out_tr, out_te = model(xtr), model(xte)
            logs["epoch"].append(epoch)
            logs["train_acc"].append((out_tr.argmax(1) == ytr).float().mean().item())
            logs["test_acc"].append((out_te.argmax(1) == yte).float().mean().item())
            logs["train_loss"].append(ce(out_tr, ytr).item())
            logs["test_loss"].append(ce(out_te, yte).item())
            Ws = [W for W in model.parameters() if W.ndim == 2]
            logs["l1_norm"].append(sum(W.abs().sum().item() for W in Ws))
            logs["l2_norm"].append(math.sqrt(sum((W ** 2).sum().item() for W in model.parameters())))
            logs["nuclear_norm"].append(sum(torch.linalg.matrix_norm(W, "nuc").item() for W in Ws))

    log(0)
    for epoch in range(1, epochs + 1):
        opt.zero_grad(set_to_none=True)
        loss = ce(model(xtr), ytr) + regularisation(model, l1, l2, nuclear)
        loss.backward()
        opt.step()
        if epoch % eval_every == 0:
            log(epoch)
    return {k: np.asarray(v) for k, v in logs.items()}
