"""Problem generators of the chapter: uniform action sets on the sphere, actions at a given cosine."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from icml25.checks import check_array, check_budget, check_int, check_rng

from ._checks import _check_dim, _check_state

__all__ = ["uniform_sphere", "sample_with_similarity"]


def _uniform_sphere(
    n: int, d: int, rng: np.random.Generator, dtype: Any = np.float64
) -> np.ndarray:
    """z / |z| with z ~ N(0, I_d): uniform on S^{d-1} by rotation invariance of the Gaussian."""
    z = rng.standard_normal((n, d))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return z.astype(dtype, copy=False)


def uniform_sphere(
    n: int, d: int, rng: np.random.Generator, dtype: Any = np.float64
) -> np.ndarray:
    """n points drawn uniformly on the unit sphere S^{d-1} (normalised Gaussians).

    Args:
        n: number of points >= 0.
        d: dimension >= 2.
        rng: numpy Generator.
        dtype: float32 or float64 (default) output dtype.

    Returns:
        (n, d) array of unit rows.

    Raises:
        ValueError: n < 0, d < 2, or a non-float dtype.
        TooLargeError: the (n, d) float64 draw cannot fit in memory.
        TypeError: rng is not a numpy Generator.
    """
    n = check_int(n, "n", low=0)
    d = _check_dim(d)
    check_rng(rng)
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    check_budget(f"uniform_sphere(n={n}, d={d})", n_bytes=16.0 * n * d)
    return _uniform_sphere(n, d, rng, dtype)


def _orthogonal_unit(mu: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For unit rows mu (B, d): unit rows u, uniform on the great sphere orthogonal to each mu."""
    while True:
        z = rng.standard_normal(mu.shape)
        z -= np.sum(z * mu, axis=1, keepdims=True) * mu
        norms = np.linalg.norm(z, axis=1, keepdims=True)
        if np.all(norms > 1e-12):  # a zero norm has probability 0; redraw to be safe
            return z / norms


def sample_with_similarity(
    V: ArrayLike, alpha: float | ArrayLike, rng: np.random.Generator
) -> np.ndarray:
    """A unit vector A with <V, A> = alpha exactly (up to rounding), uniform among such vectors.

    A = alpha V + sqrt(1 - alpha^2) u, u a uniform unit vector orthogonal to V: the fixed
    action of the paper's analysis (Sec. 4) and of the official Monte Carlo protocol.

    Args:
        V: (d,) or (B, d) states; normalised.
        alpha: cosine similarity in [-1, 1]; a scalar or one per row (B,).
        rng: numpy Generator.

    Returns:
        (d,) or (B, d) float64 unit vectors, matching V's shape.

    Raises:
        ValueError: alpha outside [-1, 1] or the wrong shape; V zero/non-finite; d < 2.
        TypeError: rng not a numpy Generator.
    """
    check_rng(rng)
    a = check_array(
        alpha, "alpha (a cosine similarity)", low=-1.0, high=1.0, dtype=np.float64
    )
    Vu, single = _check_state(V, "V")
    if a.ndim > 1 or (a.ndim == 1 and a.shape[0] != Vu.shape[0]):
        raise ValueError(
            f"alpha must be a scalar or have shape ({Vu.shape[0]},), got shape {a.shape}"
        )
    A = _with_similarity(Vu, np.broadcast_to(a, (Vu.shape[0],)), rng)
    return A[0] if single else A


def _with_similarity(
    Vu: np.ndarray, a: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A_b = a_b V_b + sqrt(1 - a_b^2) u_b, u_b uniform on the unit vectors orthogonal to V_b."""
    u = _orthogonal_unit(Vu, rng)
    A = a[:, None] * Vu + np.sqrt(1.0 - a * a)[:, None] * u
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    return A
