"""Problem generators of chapter 19: shapes segmentation, digits inpainting, spring n-body, a linear toy.

All draw from a ``numpy.random.Generator`` and return NumPy arrays (float32 inputs, int64 or
float32 labels). ``digits_inpainting`` uses scikit-learn's bundled 8x8 digits (no download).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import (
    check_array,
    check_budget,
    check_int,
    check_probability,
    check_real,
    check_rng,
)

__all__ = [
    "SHAPE_NAMES",
    "synthetic_shapes",
    "digits_inpainting",
    "spring_nbody",
    "linear_gaussian",
    "linear_gaussian_posterior",
]

SHAPE_NAMES = ("background", "disk", "square", "triangle")


def synthetic_shapes(
    n: int,
    rng: np.random.Generator,
    size: int = 32,
    K: int = 4,
    noise: float = 0.3,
    max_shapes: int = 3,
) -> dict[str, np.ndarray]:
    """Images of 1..max_shapes disks, squares and triangles of one intensity on a noisy background.

    Every shape has intensity 1 and the background is ``N(0, noise^2)`` plus a smooth random
    gradient, so a pixel's class (0 background, 1 disk, 2 square, 3 triangle) depends on the
    *form* of the shape around it, not on its brightness: a complex, structured label map. Later
    shapes are drawn over earlier ones. ``K < 4`` keeps the first ``K - 1`` shape kinds.

    Args:
        n: images >= 1. rng: NumPy generator. size: side >= 8, a multiple of 4 (the U-Net pools
            twice). K: classes in [2, 4]. noise: background standard deviation >= 0.
        max_shapes: shapes per image drawn uniformly from 1..max_shapes (>= 1).

    Returns:
        ``{"x": (n, 1, size, size) float32, "y": (n, size, size) int64}``.

    Raises:
        ValueError / TypeError naming the argument; TooLargeError beyond memory.
    """
    n, size = check_int(n, "n", low=1), check_int(size, "size", low=8)
    if size % 4:
        raise ValueError(f"size must be a multiple of 4, got {size}")
    K, noise = check_int(K, "K", low=2, high=4), check_real(noise, "noise", low=0.0)
    max_shapes, rng = check_int(max_shapes, "max_shapes", low=1), check_rng(rng)
    check_budget(
        f"synthetic_shapes(n={n}, size={size})", n_bytes=12.0 * n * size * size
    )
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    X = np.empty((n, 1, size, size), np.float32)
    Y = np.zeros((n, size, size), np.int64)
    for i in range(n):
        gx, gy = rng.normal(0.0, 0.15, 2)
        img = rng.normal(0.0, noise, (size, size)).astype(np.float32) + (
            gx * (xx / size - 0.5) + gy * (yy / size - 0.5)
        )
        lab = np.zeros((size, size), np.int64)
        for _ in range(int(rng.integers(1, max_shapes + 1))):
            kind = int(rng.integers(1, K))
            r = rng.uniform(0.12, 0.24) * size
            cx, cy = rng.uniform(r, size - r, 2)
            if kind == 1:
                mask = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
            elif kind == 2:
                h = 0.85 * r
                mask = (np.abs(xx - cx) <= h) & (np.abs(yy - cy) <= h)
            else:
                top, bottom = cy - r, cy + r
                frac = (yy - top) / (bottom - top)
                mask = (
                    (yy >= top) & (yy <= bottom) & (np.abs(xx - cx) <= frac * r * 1.1)
                )
            img[mask] = 1.0
            lab[mask] = kind
        X[i, 0], Y[i] = img, lab
    return {"x": X, "y": Y}


def digits_inpainting(
    rng: np.random.Generator, mask_frac: float = 0.5
) -> dict[str, np.ndarray]:
    """scikit-learn's 1797 8x8 digits with a random fraction of pixels hidden: recover the image.

    Input ``x = [image * (1 - mask), mask]`` (128 features, pixels scaled to [0, 1]); label the
    whole image mapped to [-1, 1] (``y = 2 image - 1``, 64 values), a continuous label.

    Args:
        rng: NumPy generator (draws the masks). mask_frac: hidden fraction in [0, 1].

    Returns:
        ``{"x": (1797, 128) float32, "y": (1797, 64) float32, "mask": (1797, 64) bool}``.

    Raises:
        ValueError / TypeError naming the argument.
    """
    rng, mask_frac = check_rng(rng), check_probability(mask_frac, "mask_frac")
    from sklearn.datasets import load_digits

    img = (load_digits().data / 16.0).astype(np.float32)
    mask = rng.random(img.shape) < mask_frac
    x = np.concatenate([img * (~mask), mask.astype(np.float32)], axis=1).astype(
        np.float32
    )
    return {"x": x, "y": (2.0 * img - 1.0).astype(np.float32), "mask": mask}


def spring_nbody(
    n_traj: int,
    rng: np.random.Generator,
    n_particles: int = 5,
    dt: float = 0.001,
    n_sim: int = 1000,
    k: float = 1.0,
) -> dict[str, np.ndarray]:
    """Particles joined by random springs (NRI-style), integrated with leapfrog; label = displacement.

    Each pair is joined with probability 1/2 by a spring of stiffness ``k``; ``F_i = -k sum_j
    a_ij (x_i - x_j)``. Positions and velocities start ``N(0, 0.5^2)`` in 3-D; after ``n_sim``
    steps of ``dt`` the label is ``x(n_sim dt) - x(0)``. The paper's *constrained* systems (sticks
    and hinges) are not reproduced: springs only.

    Args:
        n_traj: trajectories >= 1. rng: NumPy generator. n_particles >= 2. dt > 0. n_sim >= 1. k > 0.

    Returns:
        ``{"pos", "vel": (n_traj, N, 3), "adj": (n_traj, N, N), "y": (n_traj, N * 3)}``, float32.

    Raises:
        ValueError / TypeError naming the argument; TooLargeError beyond the work budget.
    """
    n_traj, rng = check_int(n_traj, "n_traj", low=1), check_rng(rng)
    N, n_sim = (
        check_int(n_particles, "n_particles", low=2),
        check_int(n_sim, "n_sim", low=1),
    )
    dt, k = (
        check_real(dt, "dt", low=0.0, low_open=True),
        check_real(k, "k", low=0.0, low_open=True),
    )
    check_budget(
        f"spring_nbody(n_traj={n_traj}, n_sim={n_sim})",
        n_operations=10.0 * n_traj * N * N * n_sim,
    )
    upper = np.triu(rng.random((n_traj, N, N)) < 0.5, 1)
    adj = (upper | upper.transpose(0, 2, 1)).astype(np.float64)
    pos = rng.normal(0.0, 0.5, (n_traj, N, 3))
    vel = rng.normal(0.0, 0.5, (n_traj, N, 3))
    x, v = pos.copy(), vel.copy()

    def force(z: np.ndarray) -> np.ndarray:
        return -k * (adj.sum(2)[..., None] * z - adj @ z)

    a = force(x)
    for _ in range(n_sim):  # leapfrog (velocity Verlet)
        v = v + 0.5 * dt * a
        x = x + dt * v
        a = force(x)
        v = v + 0.5 * dt * a
    return {
        "pos": pos.astype(np.float32),
        "vel": vel.astype(np.float32),
        "adj": adj.astype(np.float32),
        "y": (x - pos).reshape(n_traj, N * 3).astype(np.float32),
    }


def linear_gaussian(
    n: int, rng: np.random.Generator, a: float = 1.5, s: float = 0.5
) -> dict[str, np.ndarray]:
    """The linear-Gaussian toy ``x ~ N(0, 1)``, ``y = a x + eta``, ``eta ~ N(0, s^2)`` (scalars).

    Args:
        n: samples >= 1. rng: NumPy generator. a: slope. s: noise sd > 0.

    Returns:
        ``{"x": (n, 1), "y": (n, 1)}`` float32.

    Raises:
        ValueError / TypeError naming the argument.
    """
    n, rng = check_int(n, "n", low=1), check_rng(rng)
    a, s = check_real(a, "a"), check_real(s, "s", low=0.0, low_open=True)
    check_budget(f"linear_gaussian(n={n})", n_bytes=32.0 * n)
    x = rng.normal(size=(n, 1))
    return {
        "x": x.astype(np.float32),
        "y": (a * x + s * rng.normal(size=(n, 1))).astype(np.float32),
    }


def linear_gaussian_posterior(
    x: Any, y_t: Any, alpha_bar_t: float, a: float = 1.5, s: float = 0.5
) -> np.ndarray:
    """Bayes-optimal ``E[y | x, y_t]`` of the linear-Gaussian toy (the MSE-optimal PCL network).

    Given ``x``, ``y ~ N(a x, s^2)``; the hint ``y_t = sqrt(ab) y + sqrt(1 - ab) eps`` says
    ``y_t / sqrt(ab) ~ N(y, (1 - ab) / ab)``. The precision-weighted mean is
    ``(a x (1 - ab) + s^2 sqrt(ab) y_t) / ((1 - ab) + s^2 ab)``; at ``ab = 0`` it is ``a x = E[y | x]``,
    the SL target.

    Args:
        x, y_t: arrays of one shape. alpha_bar_t: in [0, 1]. a, s: the toy's slope and noise sd.

    Returns:
        float64 array like ``x``.

    Raises:
        ValueError: shapes differ, NaN/inf in ``x`` or ``y_t``, ``alpha_bar_t`` outside [0, 1], ``s <= 0``.
    """
    x, y_t = check_array(x, "x", kind="float"), check_array(y_t, "y_t", kind="float")
    if x.shape != y_t.shape:
        raise ValueError(f"y_t must have the shape of x {x.shape}, got {y_t.shape}")
    ab = check_probability(alpha_bar_t, "alpha_bar_t")
    a, s = check_real(a, "a"), check_real(s, "s", low=0.0, low_open=True)
    return (a * x * (1.0 - ab) + s * s * np.sqrt(ab) * y_t) / ((1.0 - ab) + s * s * ab)
