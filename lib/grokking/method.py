"""The paper's method: (sub)gradient descent with a small penalty that favours a property P, on
sparse recovery (``||a||_1``), a deep Hadamard factorisation (depth as implicit regulariser) and
matrix completion (``||A||_*``) (Tikeng Notsawo, Dumas & Rabusseau, ICML 2025, Secs 3-5).

Each public function checks its arguments and calls a private function holding the update; the
chapter shows those private functions. All optimisers run in float64 and are batched over B
configurations.

Monotonicity of the objective, and why ``History.final`` is the last iterate: with ``beta1 = 0``
(gradient descent) and with ISTA, a step ``alpha < 2 / lambda_max`` (enforced) decreases the
objective at every step, so the last iterate is the best. The subgradient and projected methods
with ``beta1 > 0``, the nuclear-norm subgradient and the deep Hadamard parametrisation are not
monotone: their last iterate oscillates at ``O(alpha beta)`` around the solution. The chapter
studies that trajectory and its end state (the error left after the budget, Fig. 4), never uses
their ``final`` as the solution of a fit, and compares against the closed forms of
:mod:`icml25.grokking.baselines` instead.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import (
    check_array,
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_rng,
)
from icml25.kernels import grokking

from ._checks import (
    _check_init,
    _check_per_config,
    _check_problem_batch,
    _check_schedule,
    _check_target,
)
from .metrics import History

__all__ = [
    "stability_bound",
    "subgradient_descent",
    "deep_hadamard_gd",
    "matrix_subgradient",
]


def stability_bound(X: ArrayLike, beta2: float | ArrayLike = 0.0) -> np.ndarray:
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
    X = check_array(X, "X", dtype=np.float64)
    if X.ndim not in (2, 3) or X.shape[-1] == 0 or X.shape[-2] == 0:
        raise ValueError(
            f"X must be a non-empty 2-D (N, n) or 3-D (B, N, n) array, got shape {X.shape}"
        )
    b2 = check_array(beta2, "beta2", dtype=np.float64, low=0.0)
    if (
        b2.ndim != 0
        and not (X.ndim == 3 and b2.shape == (X.shape[0],))
        and not (X.ndim == 2 and b2.ndim == 1)
    ):
        raise ValueError(
            f"beta2 must be a scalar or have shape (B,) = ({X.shape[0] if X.ndim == 3 else 'B'},), "
            f"got shape {b2.shape}"
        )
    return _stability_bound(X, b2)


def _stability_bound(X: np.ndarray, beta2: np.ndarray) -> np.ndarray:
    """``2 / (sigma_max(X)^2 + beta2)``: GD on the quadratic contracts iff ``alpha`` is below it."""
    s = np.linalg.svd(X, compute_uv=False)
    return 2.0 / (s.max(axis=-1) ** 2 + beta2)


def _broadcast_configs(
    X: np.ndarray,
    y: np.ndarray,
    B: int,
    *params: float | ArrayLike,
) -> tuple[np.ndarray, np.ndarray, int]:
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


def _projector(X: np.ndarray) -> np.ndarray:
    """``P = X^T (X X^T)^{-1}``, (n, N) or (B, n, N), checked: ``X P = I`` to 1e-8 (X of full row rank)."""
    try:
        if X.ndim == 2:
            P = X.T @ np.linalg.inv(X @ X.T)
        else:
            P = np.einsum(
                "bjn,bjk->bnk", X, np.linalg.inv(np.einsum("bjn,bkn->bjk", X, X))
            )
    except np.linalg.LinAlgError:
        P = None
    N = X.shape[-2]
    XP = None if P is None else (X @ P if X.ndim == 2 else np.matmul(X, P))
    if (
        XP is None
        or not np.all(np.isfinite(XP))
        or np.max(np.abs(XP - np.eye(N))) > 1e-8
    ):
        raise ValueError(
            "method='proj' needs X of full row rank: X X^T is singular or too ill-conditioned "
            "to project onto {a : X a = y}"
        )
    return P


def subgradient_descent(
    X: ArrayLike,
    y: ArrayLike,
    a_star: ArrayLike,
    alpha: float | ArrayLike = 0.1,
    beta1: float | ArrayLike = 0.0,
    beta2: float | ArrayLike = 0.0,
    init: float | ArrayLike = 1e-6,
    n_steps: int = 10_000,
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

    ``final`` is the last iterate. With ``beta1 = 0``, or with ISTA, the objective decreases at
    every step (``alpha`` is below the stability bound), so it is also the best; with ``"sub"`` or
    ``"proj"`` and ``beta1 > 0`` it is not monotone and ``final`` oscillates at ``O(alpha beta1)``
    around the solution, which is what the paper measures.

    Args:
        X: (N, n) shared or (B, N, n) float64 measurements.
        y: (N,) or (B, N) float64 targets (not all zero).
        a_star: (n,) or (B, n) ground truth, for the recovery error.
        alpha: step size(s) > 0, scalar or (B,); must be below ``2 / lambda_max(X^T X + beta2)``.
        beta1, beta2: penalties >= 0, scalar or (B,).
        init: scalar c (start at ``c * ones``, the official "identity" init), (n,) or (B, n).
        n_steps: number of updates; eval_every: record period (steps), <= n_steps.
        method: ``"sub"``, ``"proj"`` or ``"ista"``.
        l0_threshold: |a_i| above it counts as non-zero.

    Returns:
        :class:`History` with ``train_error``, ``recovery_error`` and norms ``l0``, ``l1``, ``l2``
        of shape (T, B), T = n_steps // eval_every + 1, and ``final`` (B, n).

    Raises:
        ValueError: shape mismatches, non-positive alpha or n_steps, negative penalties, alpha at
        or above the stability bound, unknown method, all-zero y or a_star, non-finite alpha,
        beta1, beta2, init or data, X without full row rank for ``"proj"``.
        TypeError: non-numeric alpha, beta1, beta2, init or l0_threshold (strings included),
        non-integer n_steps or eval_every.
        TooLargeError: the records (T, B, 5) or the ``n_steps B (4 N n)`` operations cannot fit
            (:func:`icml25.kernels.grokking.grok_steps_cost`), refused before any step.
        FloatingPointError: the iterate left the finite numbers (cannot happen below the bound).
    """
    check_choice(method, "method", ("sub", "proj", "ista"))
    X, y, B = _check_problem_batch(X, y)
    X, y, B = _broadcast_configs(X, y, B, alpha, beta1, beta2)
    n = X.shape[-1]
    n_steps, eval_every = _check_schedule(n_steps, eval_every)
    n_bytes, n_operations = grokking.grok_steps_cost(
        B, X.shape[-2], n, n_steps, eval_every, method
    )
    check_budget(
        f"subgradient_descent(n_steps={n_steps}, eval_every={eval_every}) for {B} configurations",
        n_bytes=n_bytes,
        n_operations=n_operations,
    )
    l0_threshold = check_real(l0_threshold, "l0_threshold", low=0.0)
    alpha = _check_per_config(alpha, "alpha", B, positive=True)
    beta1 = _check_per_config(beta1, "beta1", B, positive=False)
    beta2 = _check_per_config(beta2, "beta2", B, positive=False)
    bound = np.broadcast_to(_stability_bound(X, beta2), (B,))
    if np.any(alpha >= bound):
        bad = int(np.argmax(alpha >= bound))
        raise ValueError(
            f"alpha = {alpha[bad]:.4g} is at or above the stability bound 2/lambda_max(X^T X + beta2) = "
            f"{bound[bad]:.4g} (configuration {bad}); gradient descent would diverge"
        )
    a0 = _check_init(init, B, n)
    a_star = _check_target(a_star, B, n)
    P = _projector(X) if method == "proj" else None
    history = _subgradient_descent(
        X,
        y,
        a0,
        alpha,
        beta1,
        beta2,
        a_star,
        n_steps,
        eval_every,
        method,
        P,
        l0_threshold,
    )
    if not (
        np.all(np.isfinite(history.final)) and np.all(np.isfinite(history.train_error))
    ):
        raise FloatingPointError(
            f"subgradient_descent ({method}) diverged; lower alpha"
        )
    return history


def _subgradient_descent(
    X: np.ndarray,
    y: np.ndarray,
    a0: np.ndarray,
    alpha: np.ndarray,
    beta1: np.ndarray,
    beta2: np.ndarray,
    a_star: np.ndarray,
    n_steps: int,
    eval_every: int,
    method: str,
    P: np.ndarray | None,
    l0_threshold: float,
) -> History:
    """``a <- a - alpha (X^T (X a - y) + beta2 a + beta1 sign(a))`` for ``n_steps`` steps (Sec. 3).

    ``"ista"`` soft-thresholds at ``alpha beta1`` instead of the sign term; ``"proj"`` then maps
    back onto ``{a : X a = y}`` with ``a <- a - P (X a - y)``, ``P = X^T (X X^T)^{-1}``. The loop
    itself is the kernel ``grok_steps`` (its NumPy reference is the readable definition).
    """
    final, rec = grokking.grok_steps(
        X,
        y,
        a0,
        alpha,
        beta1,
        beta2,
        a_star,
        n_steps,
        eval_every,
        method,
        P,
        l0_threshold,
    )
    T = rec.shape[0]
    return History(
        steps=np.arange(T, dtype=np.int64) * eval_every,
        train_error=rec[:, :, 0],
        recovery_error=rec[:, :, 1],
        norms={"l0": rec[:, :, 2], "l1": rec[:, :, 3], "l2": rec[:, :, 4]},
        final=final,
        config={
            "method": method,
            "alpha": alpha,
            "beta1": beta1,
            "beta2": beta2,
            "n_steps": n_steps,
            "eval_every": eval_every,
        },
    )


def deep_hadamard_gd(
    X: ArrayLike,
    y: ArrayLike,
    a_star: ArrayLike,
    depth: int = 2,
    init: float = 1e-3,
    parametrisation: Literal["u*u-v*v", "random", "identity"] = "u*u-v*v",
    alpha: float | ArrayLike = 0.1,
    n_steps: int = 10_000,
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

    Batched over B problems like :func:`subgradient_descent`; NumPy only. The loss is not convex
    in the factors and GD on it is not monotone in general; ``final`` is the last iterate (the
    chapter studies where the dynamics go, not a fit).

    Args:
        X: (N, n) or (B, N, n); y: (N,) or (B, N); a_star: (n,) or (B, n).
        depth: L >= 1; init: factor scale > 0; parametrisation: see above;
        alpha: step size(s) > 0; n_steps, eval_every: as in :func:`subgradient_descent`;
        rng: NumPy generator, required for ``"random"``; l0_threshold: >= 0.

    Returns:
        :class:`History` (final = the product vector a, (B, n)).

    Raises:
        ValueError: bad depth, init (must be finite and > 0), alpha, n_steps, shapes or
        parametrisation; missing rng. TypeError: non-numeric init/alpha, non-integer
        depth/n_steps, rng not a Generator. FloatingPointError: the iterate diverged.
        TooLargeError: the 2 L factors, the records or the ``n_steps B (4 N n + 4 L^2 n)``
        operations cannot fit (``depth`` or ``n_steps`` too large), refused before any step.
    """
    check_choice(parametrisation, "parametrisation", ("u*u-v*v", "random", "identity"))
    X, y, B = _check_problem_batch(X, y)
    X, y, B = _broadcast_configs(X, y, B, alpha)
    n = X.shape[-1]
    depth = check_int(depth, "depth", low=1)
    init = check_real(init, "init", low=0.0, low_open=True)
    n_steps, eval_every = _check_schedule(n_steps, eval_every)
    N, T = X.shape[-2], n_steps // eval_every + 1
    check_budget(
        f"deep_hadamard_gd(depth={depth}, n_steps={n_steps}, eval_every={eval_every}) for {B} problems",
        n_bytes=8.0 * (5.0 * T * B + (6.0 * depth + 8.0) * B * n),
        n_operations=float(n_steps)
        * B
        * (4.0 * N * n + 4.0 * depth * depth * n + 10.0 * n),
    )
    l0_threshold = check_real(l0_threshold, "l0_threshold", low=0.0)
    alpha = _check_per_config(alpha, "alpha", B, positive=True)[:, None]
    a_star = _check_target(a_star, B, n)
    if parametrisation == "random":
        if rng is None:
            raise ValueError("rng is required for parametrisation='random'")
        check_rng(rng)
        U = [init * rng.standard_normal((B, n)) / math.sqrt(n) for _ in range(depth)]
        V: list[np.ndarray] = []
    elif parametrisation == "identity":
        U = [np.full((B, n), float(init)) for _ in range(depth)]
        V = []
    else:
        U = [np.full((B, n), float(init)) for _ in range(depth)]
        V = [np.full((B, n), float(init)) for _ in range(depth)]
    tr, re, norms, a = _deep_hadamard_gd(
        X, y, a_star, U, V, alpha, n_steps, eval_every, l0_threshold
    )
    T = n_steps // eval_every + 1
    return History(
        np.arange(T, dtype=np.int64) * eval_every,
        tr,
        re,
        norms,
        a,
        {
            "depth": depth,
            "init": init,
            "parametrisation": parametrisation,
            "alpha": alpha[:, 0],
        },
    )


def _deep_hadamard_gd(
    X: np.ndarray,
    y: np.ndarray,
    a_star: np.ndarray,
    U: list[np.ndarray],
    V: list[np.ndarray],
    alpha: np.ndarray,
    n_steps: int,
    eval_every: int,
    l0_threshold: float,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """GD on ``a = u_1*...*u_L - v_1*...*v_L``: ``u_k <- u_k - alpha g * prod_{j != k} u_j``,
    ``v_k <- v_k + alpha g * prod_{j != k} v_j``, with ``g = X^T (X a - y)`` (Sec. 4)."""
    B, n = a_star.shape
    shared = X.ndim == 2

    def product(fs: list[np.ndarray]) -> np.ndarray:
        out = np.ones((B, n))
        for f in fs:
            out = out * f
        return out

    def assemble() -> np.ndarray:
        return product(U) - product(V) if V else product(U)

    def resid(a: np.ndarray) -> np.ndarray:
        return (a @ X.T if shared else np.matmul(X, a[:, :, None])[:, :, 0]) - y

    T = n_steps // eval_every + 1
    tr = np.empty((T, B))
    re = np.empty((T, B))
    norms = {k: np.empty((T, B)) for k in ("l0", "l1", "l2")}

    def rec(k: int, a: np.ndarray, R: np.ndarray) -> None:
        tr[k] = np.linalg.norm(R, axis=1) / np.linalg.norm(y, axis=1)
        re[k] = np.linalg.norm(a - a_star, axis=1) / np.linalg.norm(a_star, axis=1)
        norms["l0"][k] = np.sum(np.abs(a) > l0_threshold, axis=-1)
        norms["l1"][k] = np.sum(np.abs(a), axis=-1)
        norms["l2"][k] = np.linalg.norm(a, axis=-1)

    a = assemble()
    R = resid(a)
    rec(0, a, R)
    for t in range(1, n_steps + 1):
        g = R @ X if shared else np.matmul(R[:, None, :], X)[:, 0, :]  # dL/da
        newU = [f - alpha * g * product(U[:k] + U[k + 1 :]) for k, f in enumerate(U)]
        newV = [f + alpha * g * product(V[:k] + V[k + 1 :]) for k, f in enumerate(V)]
        U, V = newU, newV
        a = assemble()
        R = resid(a)
        if not np.all(np.isfinite(a)):
            raise FloatingPointError(
                f"deep_hadamard_gd diverged at step {t}; lower alpha"
            )
        if t % eval_every == 0:
            rec(t // eval_every, a, R)
    return tr, re, norms, a


def matrix_subgradient(
    mask: ArrayLike,
    A_star: ArrayLike,
    alpha: float | ArrayLike = 0.1,
    beta_star: float | ArrayLike = 1e-4,
    init: float = 1e-6,
    n_steps: int = 10_000,
    method: Literal["sub", "svt"] = "sub",
    eval_every: int = 100,
) -> History:
    """Matrix completion by (sub)gradient descent with a nuclear-norm penalty (Sec. 3, low rank).

    Minimises ``1/2 sum_{(i,j) observed} (A_ij - A*_ij)^2 + beta* ||A||_*``. ``"sub"``:
    ``A <- A - alpha (M o (A - A*) + beta* U V^T)`` with ``A = U S V^T`` the full SVD (a valid
    subgradient of the nuclear norm, also at rank-deficient A); ``"svt"``: gradient step, then
    singular-value soft-thresholding at ``alpha beta*`` (proximal gradient). B problems at once
    (batched ``numpy.linalg.svd``). ``"svt"`` decreases the objective at every step (alpha < 2);
    ``"sub"`` is not monotone, and ``final`` is its last iterate (the trajectory is the object).

    Args:
        mask: (n1, n2) or (B, n1, n2) bool observed entries.
        A_star: (n1, n2) or (B, n1, n2) float64 ground truth (only observed entries enter the loss).
        alpha: step(s) in (0, 2) (the loss Hessian is a 0/1 projection); beta_star: >= 0.
        init: start at ``init * ones``; n_steps, eval_every: as in :func:`subgradient_descent`.
        method: ``"sub"`` or ``"svt"``.

    Returns:
        :class:`History` with ``train_error`` = error on observed entries, ``recovery_error``
        = full Frobenius error, norms ``nuclear`` and ``rank`` (singular values > 1e-3 sigma_max).

    Raises:
        ValueError: shapes (mask must match A_star's (n1, n2) and batch size), alpha outside
        (0, 2), negative beta, unknown method, empty mask, non-finite or all-zero A_star, non-finite
        init. TypeError: non-boolean mask, non-numeric alpha/beta_star/init, non-integer n_steps.
        TooLargeError: the ``n_steps`` batched SVDs (about ``10 n1 n2 min(n1, n2)`` operations each)
        or the records cannot fit, refused before any step.
    """
    check_choice(method, "method", ("sub", "svt"))
    mask = check_array(mask, "mask", kind="bool")
    A_star = check_array(A_star, "A_star", dtype=np.float64)
    if A_star.ndim not in (2, 3) or 0 in A_star.shape:
        raise ValueError(
            f"A_star must have shape (n1, n2) or (B, n1, n2), got {A_star.shape}"
        )
    n1, n2 = A_star.shape[-2:]
    if mask.ndim not in (2, 3) or mask.shape[-2:] != (n1, n2):
        raise ValueError(
            f"mask must have shape ({n1}, {n2}) or (B, {n1}, {n2}) to match A_star {A_star.shape}, "
            f"got {mask.shape}"
        )
    if mask.ndim == 2:
        mask = mask[None]
    if A_star.ndim == 2:
        A_star = A_star[None]
    if mask.shape[0] != A_star.shape[0]:
        if mask.shape[0] != 1 and A_star.shape[0] != 1:
            raise ValueError(
                f"mask has {mask.shape[0]} problems but A_star has {A_star.shape[0]}"
            )
        Bm = max(mask.shape[0], A_star.shape[0])
        mask = np.broadcast_to(mask, (Bm, n1, n2)).copy()
        A_star = np.broadcast_to(A_star, (Bm, n1, n2)).copy()
    B = mask.shape[0]
    if np.any(np.linalg.norm(A_star.reshape(B, -1), axis=1) == 0):
        raise ValueError(
            "A_star must not be zero (the recovery error divides by ||A*||)"
        )
    init = check_real(init, "init")
    if np.any(mask.reshape(B, -1).sum(axis=1) == 0):
        raise ValueError("mask must observe at least one entry per problem")
    if np.any(np.linalg.norm((mask * A_star).reshape(B, -1), axis=1) == 0):
        raise ValueError(
            "A_star must not be zero on the observed entries (the train error divides by their norm)"
        )
    n_steps, eval_every = _check_schedule(n_steps, eval_every)
    T, svd = n_steps // eval_every + 1, 10.0 * n1 * n2 * min(n1, n2) + 6.0 * n1 * n2
    check_budget(
        f"matrix_subgradient(n_steps={n_steps}, eval_every={eval_every}) for {B} problems",
        n_bytes=8.0 * (4.0 * T * B + 10.0 * B * n1 * n2),
        n_operations=(float(n_steps) + T) * B * svd,
    )
    alpha = _check_per_config(alpha, "alpha", B, positive=True)
    if np.any(alpha >= 2.0):
        raise ValueError(
            f"alpha must be < 2 (stability bound of the completion loss), got {alpha}"
        )
    beta = _check_per_config(beta_star, "beta_star", B, positive=False)
    A0 = np.full(A_star.shape, init)
    tr, re, nuc, rank, A = _matrix_subgradient(
        mask.astype(np.float64),
        A_star,
        A0,
        alpha[:, None, None],
        beta[:, None, None],
        n_steps,
        eval_every,
        method,
    )
    return History(
        np.arange(n_steps // eval_every + 1, dtype=np.int64) * eval_every,
        tr,
        re,
        {"nuclear": nuc, "rank": rank},
        A,
        {"method": method, "alpha": alpha, "beta_star": beta},
    )


def _matrix_subgradient(
    M: np.ndarray,
    A_star: np.ndarray,
    A: np.ndarray,
    al: np.ndarray,
    be: np.ndarray,
    n_steps: int,
    eval_every: int,
    method: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``A <- A - alpha (M o (A - A*) + beta* U V^T)`` (``"sub"``), or the gradient step followed by
    singular-value soft-thresholding ``s <- max(s - alpha beta*, 0)`` (``"svt"``); ``M``: the 0/1 mask."""
    B = A.shape[0]
    obs_norm = np.linalg.norm((M * A_star).reshape(B, -1), axis=1)
    full_norm = np.linalg.norm(A_star.reshape(B, -1), axis=1)
    T = n_steps // eval_every + 1
    tr, re, nuc, rank = (np.empty((T, B)) for _ in range(4))

    def rec(k: int) -> None:
        tr[k] = np.linalg.norm((M * (A - A_star)).reshape(B, -1), axis=1) / obs_norm
        re[k] = np.linalg.norm((A - A_star).reshape(B, -1), axis=1) / full_norm
        s = np.linalg.svd(A, compute_uv=False)
        nuc[k] = s.sum(axis=1)
        rank[k] = (s > 1e-3 * s[:, :1]).sum(axis=1)

    rec(0)
    for t in range(1, n_steps + 1):
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
    return tr, re, nuc, rank, A
