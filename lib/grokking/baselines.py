"""What chapter 16 compares the grokking dynamics against: the closed forms and solvers of the
penalised least-squares problem (min-norm interpolant, ridge, Lasso, basis pursuit).

Every solver's answer is checked before it is returned: a solution that does not satisfy its own
optimality or feasibility conditions raises ``RuntimeError`` instead of being used, with a message
that names the public function, the solver it called and the test that failed (with the numbers).
"""

from __future__ import annotations

import numpy as np

from icml25.checks import check_array, check_positive

from ._checks import _check_single_problem

__all__ = ["min_norm_solution", "ridge_solution", "lasso_solution", "basis_pursuit"]

#: relative tolerance of the checks on a solver's answer
#: (backward-stable solvers reach ~1e-14)
_SOLVER_RTOL = 1e-8


def _check_solver_answer(a: np.ndarray, what: str, solver: str) -> np.ndarray:
    """``a`` unchanged when every entry is finite, else RuntimeError naming ``what`` and its ``solver``."""
    if not np.all(np.isfinite(a)):
        raise RuntimeError(
            f"{what}: {solver} returned {int(np.sum(~np.isfinite(a)))} non-finite entries "
            f"(failed test: every entry of the answer finite)"
        )
    return a


def min_norm_solution(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Minimum-l2-norm least-squares solution ``X^+ y`` (``numpy.linalg.pinv``): where phase 1 ends.

    For noiseless data (``y`` in the range of ``X``) it is the minimum-norm interpolant.

    Args:
        X: (N, n) or (B, N, n) float64; y: (N,) or (B, N) float64.

    Returns:
        (n,) or (B, n) float64.

    Raises:
        ValueError: the shapes do not match or the inputs are not finite.
        RuntimeError: ``numpy.linalg.pinv`` fails (its SVD does not converge), returns non-finite
            entries, or its answer fails the normal equations ``X^T (X a - y) = 0`` (to 1e-8
            relative); the message names the solver and the failed test.
    """
    X = check_array(X, "X", ndim=(2, 3), dtype=np.float64)
    y = check_array(y, "y", dtype=np.float64)
    if not (
        (X.ndim == 2 and y.shape == (X.shape[0],))
        or (X.ndim == 3 and y.shape == (X.shape[0], X.shape[1]))
    ):
        raise ValueError(
            f"X must be (N, n) with y (N,), or (B, N, n) with y (B, N); got {X.shape} and {y.shape}"
        )
    try:
        a = _check_solver_answer(
            _min_norm(X, y), "min_norm_solution", "numpy.linalg.pinv"
        )
    except np.linalg.LinAlgError as err:
        raise RuntimeError(
            f"min_norm_solution: numpy.linalg.pinv failed ({err}) (failed test: the SVD "
            f"converges)"
        ) from None
    Xb, ab, yb = (X, a, y) if X.ndim == 3 else (X[None], a[None], y[None])
    r = np.einsum("bjn,bn->bj", Xb, ab) - yb
    normal = np.linalg.norm(np.einsum("bjn,bj->bn", Xb, r), axis=1)
    scale = np.linalg.norm(Xb, axis=(1, 2)) * (
        np.linalg.norm(Xb, axis=(1, 2)) * np.linalg.norm(ab, axis=1)
        + np.linalg.norm(yb, axis=1)
    )
    if np.any(normal > _SOLVER_RTOL * scale + 1e-300):
        worst = int(np.argmax(normal / (scale + 1e-300)))
        raise RuntimeError(
            f"min_norm_solution: numpy.linalg.pinv's answer fails the normal equations "
            f"(failed test: ||X^T (X a - y)|| = {normal[worst]:.3g} <= {_SOLVER_RTOL:g} * "
            f"{scale[worst]:.3g}, problem {worst})"
        )
    return a


def _min_norm(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``a_ls = X^+ y``, the minimum-norm least-squares solution (batched over a leading axis)."""
    if X.ndim == 2 and y.ndim == 1:
        return np.linalg.pinv(X) @ y
    Xp = np.linalg.pinv(X)
    return Xp @ y if Xp.ndim == 2 else np.einsum("bnj,bj->bn", Xp, y)


def ridge_solution(X: np.ndarray, y: np.ndarray, beta2: float) -> np.ndarray:
    """Ridge solution ``(X^T X + beta2 I)^{-1} X^T y``: where l2-only GD converges (any init).

    Args:
        X: (N, n) float64; y: (N,) float64; beta2: l2 penalty > 0.

    Returns:
        (n,) float64.

    Raises:
        ValueError: beta2 not > 0, shapes mismatch, non-finite inputs. TypeError: non-numeric beta2.
        RuntimeError: ``numpy.linalg.solve`` fails (``X^T X + beta2 I`` numerically singular),
            returns non-finite entries, or its residual ``||K a - X^T y||`` exceeds 1e-8 relative;
            the message names the solver and the failed test.
    """
    X, y = _check_single_problem(X, y)
    beta2 = check_positive(beta2, "beta2")
    K = X.T @ X + beta2 * np.eye(X.shape[1])
    rhs = X.T @ y
    try:
        a = _check_solver_answer(
            np.linalg.solve(K, rhs), "ridge_solution", "numpy.linalg.solve"
        )
    except np.linalg.LinAlgError as err:
        raise RuntimeError(
            f"ridge_solution: numpy.linalg.solve failed on K = X^T X + beta2 I ({err}) "
            f"(failed test: K numerically non-singular; beta2 = {beta2:.3g})"
        ) from None
    resid = float(np.linalg.norm(K @ a - rhs))
    tol = _SOLVER_RTOL * (np.linalg.norm(K) * np.linalg.norm(a) + np.linalg.norm(rhs))
    if resid > tol:
        raise RuntimeError(
            f"ridge_solution: numpy.linalg.solve's answer fails the linear system "
            f"(failed test: ||K a - X^T y|| = {resid:.3g} <= {tol:.3g})"
        )
    return a


def lasso_solution(
    X: np.ndarray, y: np.ndarray, beta1: float, tol: float = 1e-12
) -> np.ndarray:
    """Minimiser of ``1/2 ||X a - y||^2 + beta1 ||a||_1`` by scikit-learn's coordinate descent.

    scikit-learn's ``Lasso`` minimises ``1/(2N) ||y - X a||^2 + alpha_sk ||a||_1``, so
    ``alpha_sk = beta1 / N``; no intercept.

    Args:
        X: (N, n) float64; y: (N,) float64; beta1: l1 penalty > 0; tol: scikit-learn's tolerance > 0.

    Returns:
        (n,) float64.

    Raises:
        ValueError: mismatched shapes, non-finite inputs, beta1 or tol not > 0.
        RuntimeError: scikit-learn's ``Lasso`` (coordinate descent) did not converge, returned
            non-finite entries, or its answer violates the Lasso's optimality conditions
            ``|X_j^T (y - X a)| <= beta1`` by more than 1 %; the message names the solver and the
            failed test.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso

    X, y = _check_single_problem(X, y)
    beta1 = check_positive(beta1, "beta1")
    tol = check_positive(tol, "tol")
    model = Lasso(
        alpha=beta1 / X.shape[0], fit_intercept=False, tol=tol, max_iter=1_000_000
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        try:
            model.fit(X, y)
        except ConvergenceWarning as err:
            raise RuntimeError(
                f"lasso_solution: sklearn.linear_model.Lasso did not converge (failed test: "
                f"duality gap below tol = {tol:g} within max_iter): {err}"
            ) from None
    a = _check_solver_answer(
        model.coef_.astype(np.float64), "lasso_solution", "sklearn.linear_model.Lasso"
    )
    corr = np.abs(X.T @ (y - X @ a))
    if np.max(corr) > 1.01 * beta1 + 1e-12:
        raise RuntimeError(
            f"lasso_solution: sklearn.linear_model.Lasso's answer violates the optimality "
            f"conditions (failed test: max |X^T (y - X a)| = {np.max(corr):.3g} <= 1.01 beta1 "
            f"= {1.01 * beta1:.3g})"
        )
    return a


def basis_pursuit(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``argmin ||a||_1 s.t. X a = y`` by linear programming (``scipy.optimize.linprog``, HiGHS).

    Writes a = u - v with u, v >= 0 and minimises sum(u + v).

    Args:
        X: (N, n) float64; y: (N,) float64.

    Returns:
        (n,) float64.

    Raises:
        ValueError: mismatched shapes or non-finite inputs.
        RuntimeError: ``scipy.optimize.linprog`` (HiGHS) reports failure (e.g. ``X a = y`` is
            infeasible), returns non-finite entries, or its answer violates ``X a = y`` by more than
            1e-6 relative; the message names the solver and the failed test.
    """
    from scipy.optimize import linprog

    X, y = _check_single_problem(X, y)
    n = X.shape[1]
    res = linprog(
        np.ones(2 * n),
        A_eq=np.hstack([X, -X]),
        b_eq=y,
        bounds=(0, None),
        method="highs",
    )
    if not res.success:
        raise RuntimeError(
            f"basis_pursuit: scipy.optimize.linprog (HiGHS) failed (failed test: the LP solved, "
            f"status {res.status}; an infeasible X a = y gives status 2): {res.message}"
        )
    a = _check_solver_answer(
        res.x[:n] - res.x[n:], "basis_pursuit", "scipy.optimize.linprog (HiGHS)"
    )
    viol, tol = (
        float(np.max(np.abs(X @ a - y))),
        1e-6 * (1.0 + float(np.max(np.abs(y)))),
    )
    if viol > tol:
        raise RuntimeError(
            f"basis_pursuit: scipy.optimize.linprog (HiGHS)'s answer violates X a = y "
            f"(failed test: max |X a - y| = {viol:.3g} <= {tol:.3g})"
        )
    return a
