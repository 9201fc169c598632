"""Data of chapter 07: a Gaussian mixture with an exact CondOT path, the official checkerboard, and
the dynamical systems (Lorenz, coupled FitzHugh-Nagumo) of the paper's dynamics experiments.

Torch samplers take ``rng``, a ``torch.Generator`` (``None``: torch's global generator); the
trajectory generators draw their initial states from ``rng``, a ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import Tensor

from icml25.checks import (
    check_array,
    check_budget,
    check_int,
    check_positive,
    check_real,
    check_rng,
    check_torch_generator,
)

from .defaults import DEFAULTS
from .method import _torch_tensor

__all__ = [
    "GaussianMixture2D",
    "checkerboard",
    "lorenz_trajectories",
    "fitzhugh_nagumo_trajectories",
    "TrajectoryData",
]


def _check_draws(what: str, n: Any, rng: Any, bytes_per_draw: float) -> int:
    """A torch sampler's arguments: ``n`` an integer >= 1 whose draws (``bytes_per_draw`` bytes
    each, intermediates included) fit in memory, ``rng`` a torch.Generator or None."""
    n = check_int(n, "n", low=1)
    check_torch_generator(rng, "rng")
    check_budget(f"{what}(n={n})", n_bytes=n * bytes_per_draw)
    return n


# --------------------------------------------------------------------------------------
# Analytic ground truth: a Gaussian mixture under the CondOT path
# --------------------------------------------------------------------------------------


class GaussianMixture2D:
    """Isotropic Gaussian mixture data ``q = sum_k w_k N(mu_k, s_k^2 I)`` with its exact CondOT path.

    Under ``x_t = t x1 + (1 - t) x0`` each component stays Gaussian: mean ``t mu_k``, variance
    ``v_k(t) = t^2 s_k^2 + (1 - t)^2``. Hence closed forms for the marginal density ``p_t``, the
    marginal velocity ``u_t(x) = sum_k gamma_k(x) [mu_k + a_k (x - t mu_k)]`` with
    ``a_k = (t s_k^2 - (1 - t)) / v_k`` and ``gamma_k`` the posterior responsibilities, the
    score, and ``div u_t``. Any dimension ``d`` works (the name follows the 2-D experiments).
    Computations run in float64.

    Args:
        means: (K, d) component means.
        stds: (K,) positive component standard deviations.
        weights: (K,) positive mixture weights (normalised here).

    Raises:
        TypeError: an argument is not an array of real numbers.
        ValueError: inconsistent shapes, non-finite means, non-positive or non-finite stds or
            weights. The methods raise ValueError for points that are not (N, d) or times not in
            [0, 1] (scalar or (N,)).
    """

    def __init__(
        self,
        means: ArrayLike | Tensor,
        stds: ArrayLike | Tensor,
        weights: ArrayLike | Tensor | None = None,
    ) -> None:
        mu = check_array(means, "means", ndim=2, dtype=np.float64, min_size=1)
        K = mu.shape[0]
        s = check_array(
            np.reshape(check_array(stds, "stds", dtype=np.float64), -1),
            "stds",
            shape=(K,),
        )
        if not (s > 0).all():
            raise ValueError(
                f"stds must be ({K},) positive, got a minimum of {s.min()!r}"
            )
        if weights is None:
            w = np.full(K, 1.0 / K)
        else:
            w = check_array(
                np.reshape(check_array(weights, "weights", dtype=np.float64), -1),
                "weights",
                shape=(K,),
            )
            if not (w > 0).all():
                raise ValueError(
                    f"weights must be ({K},) positive, got a minimum of {w.min()!r}"
                )
        self.means, self.stds = torch.as_tensor(mu), torch.as_tensor(s)
        w = torch.as_tensor(w)
        self.weights = w / w.sum()
        self.K, self.d = K, mu.shape[1]

    @classmethod
    def ring(
        cls, k: int = 8, radius: float = 3.0, std: float = 0.3
    ) -> "GaussianMixture2D":
        """``k`` equal-weight modes of standard deviation ``std`` on a circle of ``radius`` in 2-D.

        Raises:
            TypeError / ValueError: ``k < 1``, ``radius < 0`` or ``std <= 0``.
        """
        k = check_int(k, "k", low=1)
        radius, std = check_real(radius, "radius", low=0), check_positive(std, "std")
        ang = 2 * np.pi * np.arange(k) / k
        return cls(
            np.stack([radius * np.cos(ang), radius * np.sin(ang)], 1), np.full(k, std)
        )

    def sample(self, n: int, rng: torch.Generator | None = None) -> Tensor:
        """(n, d) float32 draws of the data distribution q (a valid ``sampler`` for train_flow).

        Raises:
            TypeError / ValueError: ``n`` not an integer >= 1, ``rng`` not a torch.Generator.
            TooLargeError: ``n`` so large that the draws cannot fit in memory.
        """
        n = _check_draws("GaussianMixture2D.sample", n, rng, 8.0 * (1 + 4 * self.d))
        comp = torch.multinomial(self.weights, n, replacement=True, generator=rng)
        eps = torch.randn((n, self.d), generator=rng, dtype=torch.float64)
        return (self.means[comp] + self.stds[comp, None] * eps).float()

    def _path_args(self, x: Tensor, t: Tensor | float) -> tuple[Tensor, Tensor]:
        """(N, d) float64 points and (N or 1, 1) float64 times in [0, 1]."""
        x = _torch_tensor(x, "x", shape=(None, self.d)).to(torch.float64)
        t = torch.as_tensor(t, dtype=torch.float64).reshape(-1, 1)  # (N or 1, 1)
        if t.shape[0] not in (1, x.shape[0]):
            raise ValueError(
                f"t must be a scalar or have shape ({x.shape[0]},), got {t.shape[0]} values"
            )
        if not bool((torch.isfinite(t) & (t >= 0) & (t <= 1)).all()):
            raise ValueError("t must lie in [0, 1]")
        return x, t

    def _parts(
        self, x: Tensor, t: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """Per component: ``v_k(t) = t^2 s_k^2 + (1 - t)^2``, ``x - t mu_k``, ``log p_t`` and the
        responsibilities ``gamma_k = w_k N(x; t mu_k, v_k I) / p_t(x)``."""
        m = t[:, None, :] * self.means[None]  # (N, K, d)
        var = t**2 * self.stds[None] ** 2 + (1 - t) ** 2  # (N, K)
        diff = x[:, None, :] - m
        logn = -0.5 * (diff**2).sum(-1) / var - 0.5 * self.d * torch.log(
            2 * math.pi * var
        )
        logj = torch.log(self.weights)[None] + logn
        logp = torch.logsumexp(logj, dim=1)
        gamma = torch.exp(logj - logp[:, None])
        return t, var, diff, logp, gamma

    def log_path_density(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``log p_t(x)``; x (N, d), t scalar or (N,) -> (N,) float64.

        Raises:
            TypeError: ``x`` not a torch.Tensor of real numbers.
            ValueError: ``x`` not a finite (N, d) tensor, ``t`` neither a scalar nor (N,), a time
                outside [0, 1] or NaN.
        """
        return self._parts(*self._path_args(x, t))[3]

    def path_density(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``p_t(x)`` (N,) float64 (t = 1 is the data density q).

        Raises:
            TypeError / ValueError: bad ``x`` or ``t``, as :meth:`log_path_density`.
        """
        return torch.exp(self.log_path_density(x, t))

    def marginal_velocity(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``u_t(x) = E[x1 - x0 | x_t = x]`` (N, d) float64.

        Raises:
            TypeError / ValueError: bad ``x`` or ``t``, as :meth:`log_path_density`.
        """
        tt, var, diff, _, gamma = self._parts(*self._path_args(x, t))
        a = (tt * self.stds[None] ** 2 - (1 - tt)) / var  # (N, K)
        uk = self.means[None] + a[..., None] * diff
        return (gamma[..., None] * uk).sum(1)

    def marginal_score(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``grad_x log p_t(x)`` (N, d) float64.

        Raises:
            TypeError / ValueError: bad ``x`` or ``t``, as :meth:`log_path_density`.
        """
        _, var, diff, _, gamma = self._parts(*self._path_args(x, t))
        return (gamma[..., None] * (-diff / var[..., None])).sum(1)

    def marginal_divergence(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``div u_t(x) = sum_k gamma_k [d a_k + u_k . (s_k - s)]`` (N,) float64.

        Raises:
            TypeError / ValueError: bad ``x`` or ``t``, as :meth:`log_path_density`.
        """
        tt, var, diff, _, gamma = self._parts(*self._path_args(x, t))
        a = (tt * self.stds[None] ** 2 - (1 - tt)) / var
        uk = self.means[None] + a[..., None] * diff
        sk = -diff / var[..., None]
        s = (gamma[..., None] * sk).sum(1)
        return (gamma * (self.d * a + (uk * (sk - s[:, None, :])).sum(-1))).sum(1)

    def sample_path(
        self, n: int, t: float, rng: torch.Generator | None = None
    ) -> Tensor:
        """(n, d) float32 draws of the marginal ``p_t`` (``t x1 + (1 - t) x0``); t in [0, 1].

        Raises:
            TypeError / ValueError: ``t`` not a number in [0, 1], bad ``n`` or ``rng``.
            TooLargeError: ``n`` so large that the draws cannot fit in memory.
        """
        t = check_real(t, "t", low=0, high=1)
        n = _check_draws(
            "GaussianMixture2D.sample_path", n, rng, 8.0 * (1 + 6 * self.d)
        )
        x1 = self.sample(n, rng)
        x0 = torch.randn(x1.shape, generator=rng)
        return t * x1 + (1 - t) * x0


# --------------------------------------------------------------------------------------
# The official checkerboard
# --------------------------------------------------------------------------------------


def checkerboard(n: int, rng: torch.Generator | None = None) -> Tensor:
    """(n, 2) float32 draws of the official 2-D checkerboard (8 squares on [-2, 2]^2, / 0.45).

    Raises:
        TypeError / ValueError: ``n`` not an integer >= 1, ``rng`` not a torch.Generator.
        TooLargeError: ``n`` so large that the draws cannot fit in memory.
    """
    # three float32 and one int64 (n,) draws, their stack and the float32 result
    n = _check_draws("checkerboard", n, rng, 48.0)
    x1 = torch.rand(n, generator=rng) * 4 - 2
    x2 = torch.rand(n, generator=rng) - torch.randint(0, 2, (n,), generator=rng) * 2
    x2 = x2 + torch.floor(x1) % 2
    return (torch.stack([x1, x2], 1) / 0.45).float()


# --------------------------------------------------------------------------------------
# Dynamical systems (the paper's dynamics experiments)
# --------------------------------------------------------------------------------------


def _lorenz_rhs(
    rho: float, sigma: float, beta: float, scale: float
) -> Callable[[float, np.ndarray], np.ndarray]:
    """Lorenz ``x' = sigma (y - x), y' = x (rho - z) - y, z' = x y - beta z`` in ``z = x / scale``."""

    def rhs(_t: float, z: np.ndarray) -> np.ndarray:
        x = scale * z.reshape(-1, 3)
        dz = np.stack(
            [
                sigma * (x[:, 1] - x[:, 0]),
                x[:, 0] * (rho - x[:, 2]) - x[:, 1],
                x[:, 0] * x[:, 1] - beta * x[:, 2],
            ],
            1,
        )
        return (dz / scale).ravel()

    return rhs


def _fhn_rhs(
    a: tuple[float, float] = (-0.025794, -0.025794),
    b: tuple[float, float] = (0.0065, 0.0135),
    c: tuple[float, float] = (0.02, 0.02),
    k: float = 0.128,
    coupling: float = 1.0,
) -> Callable[[float, np.ndarray], np.ndarray]:
    """Two diffusively coupled FitzHugh-Nagumo units, state scaled by 5 (official parameters)."""
    a, b, c = (np.asarray(v)[None] for v in (a, b, c))

    def rhs(_t: float, z: np.ndarray) -> np.ndarray:
        z = z.reshape(-1, 4) / 5.0
        xs, ys = z[:, :2], z[:, 2:]
        xdot = xs * (a - xs) * (xs - 1) - ys + k * coupling * (xs[:, ::-1] - xs)
        ydot = b * xs - c * ys
        return (np.concatenate([xdot, ydot], 1) * 5.0).ravel()

    return rhs


def _check_trajectory_budget(what: str, n: int, T: int, n_drop: int, dim: int) -> None:
    """Refuse trajectories whose solver state cannot fit: ``solve_ivp`` keeps the (n dim, n_drop + T)
    float64 samples, a dozen (n dim,) RK45 stage vectors, and the float32 result."""
    check_budget(what, n_bytes=8.0 * n * dim * (n_drop + T + 12) + 4.0 * n * dim * T)


def _trajectories(
    rhs: Callable[[float, np.ndarray], np.ndarray],
    z0: np.ndarray,
    dt: float,
    n_keep: int,
    n_drop: int,
) -> np.ndarray:
    """(n, n_keep, dim) samples every ``dt`` of the RK45 solution from ``z0``, first ``n_drop`` dropped;
    the solver's answer is used only when it succeeded and is finite."""
    from scipy.integrate import solve_ivp

    n, dim = z0.shape
    ts = dt * np.arange(n_drop + n_keep)
    sol = solve_ivp(
        rhs, (0.0, ts[-1]), z0.ravel(), t_eval=ts, rtol=1e-6, atol=1e-8, method="RK45"
    )
    if not sol.success:  # pragma: no cover - solver failure
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    if sol.y.shape != (n * dim, ts.size) or not np.isfinite(sol.y).all():
        raise RuntimeError(
            f"solve_ivp returned {sol.y.shape} values for {(n * dim, ts.size)} or non-finite "
            "states: the trajectories diverge"
        )
    return sol.y.reshape(n, dim, -1).transpose(0, 2, 1)[:, n_drop:].astype(np.float32)


def lorenz_trajectories(
    n: int,
    T: int = DEFAULTS.lorenz.T,
    *,
    rng: np.random.Generator,
    dt: float = DEFAULTS.lorenz.dt,
    n_drop: int = DEFAULTS.lorenz.n_drop,
    rho: float = DEFAULTS.lorenz.rho,
    sigma: float = DEFAULTS.lorenz.sigma,
    beta: float = DEFAULTS.lorenz.beta,
    rescaling: float = DEFAULTS.lorenz.rescaling,
) -> np.ndarray:
    """(n, T, 3) float32 Lorenz trajectories in the official scaled coordinates ``z = x / 20``.

    Initial states ``z0 ~ N(0, I_3)`` drawn from ``rng``; integrated with
    ``scipy.integrate.solve_ivp`` (RK45, rtol 1e-6), sampled every ``dt``, the first ``n_drop``
    samples dropped (official, ``DEFAULTS.lorenz``: dt 0.1, 90 steps, 30 dropped -> T = 60).

    Raises:
        TypeError: ``rng`` not a numpy Generator, a size not an integer.
        ValueError: ``n`` or ``T`` < 1, ``n_drop < 0``, ``dt <= 0``, ``rescaling <= 0``.
        TooLargeError: ``n``, ``T`` or ``n_drop`` so large that the solver's states cannot fit.
        RuntimeError: the ODE solver failed.
    """
    n, T, n_drop = (
        check_int(n, "n", low=1),
        check_int(T, "T", low=1),
        check_int(n_drop, "n_drop", low=0),
    )
    dt, rescaling = check_positive(dt, "dt"), check_positive(rescaling, "rescaling")
    rho, sigma, beta = (
        check_real(v, name)
        for v, name in ((rho, "rho"), (sigma, "sigma"), (beta, "beta"))
    )
    _check_trajectory_budget(
        f"lorenz_trajectories(n={n}, T={T}, n_drop={n_drop})", n, T, n_drop, 3
    )
    z0 = check_rng(rng, "rng").standard_normal((n, 3))
    return _trajectories(_lorenz_rhs(rho, sigma, beta, rescaling), z0, dt, T, n_drop)


def fitzhugh_nagumo_trajectories(
    n: int,
    T: int = DEFAULTS.fitzhugh_nagumo.T,
    *,
    rng: np.random.Generator,
    dt: float = DEFAULTS.fitzhugh_nagumo.dt,
    n_drop: int = DEFAULTS.fitzhugh_nagumo.n_drop,
) -> np.ndarray:
    """(n, T, 4) float32 coupled FitzHugh-Nagumo trajectories (official parameters, state x 5).

    Initial states ``0.2 N(0, I_4)`` drawn from ``rng``; ``solve_ivp`` RK45; every ``dt`` = 6
    time units, first ``n_drop`` = 250 samples dropped (official config, ``DEFAULTS.fitzhugh_nagumo``:
    310 steps -> T = 60).

    Raises:
        TypeError: ``rng`` not a numpy Generator, a size not an integer.
        ValueError: ``n`` or ``T`` < 1, ``n_drop < 0``, ``dt <= 0``.
        TooLargeError: ``n``, ``T`` or ``n_drop`` so large that the solver's states cannot fit.
        RuntimeError: the ODE solver failed.
    """
    n, T, n_drop = (
        check_int(n, "n", low=1),
        check_int(T, "T", low=1),
        check_int(n_drop, "n_drop", low=0),
    )
    dt = check_positive(dt, "dt")
    _check_trajectory_budget(
        f"fitzhugh_nagumo_trajectories(n={n}, T={T}, n_drop={n_drop})", n, T, n_drop, 4
    )
    z0 = 0.2 * check_rng(rng, "rng").standard_normal((n, 4))
    return _trajectories(_fhn_rhs(), z0, dt, T, n_drop)


@dataclass
class TrajectoryData:
    """Flattened, standardised trajectories as a data sampler for :func:`train_flow`.

    Attributes:
        X: (n, T * dim) float32 standardised vectors (mean 0, per-coordinate std 1).
        mean, std: (T * dim,) the affine standardisation (so ``raw = X * std + mean``).
    """

    X: Tensor
    mean: Tensor
    std: Tensor

    @classmethod
    def from_trajectories(cls, traj: np.ndarray) -> "TrajectoryData":
        """From (n, T, dim) finite trajectories (n >= 2).

        Raises:
            TypeError: not an array of real numbers.
            ValueError: another shape, n < 2, an empty axis, NaN/inf.
        """
        arr = check_array(traj, "traj", ndim=3, dtype=np.float32)
        if arr.shape[0] < 2 or min(arr.shape) < 1:
            raise ValueError(
                f"traj must be a finite (n, T, dim) array with n >= 2, got shape {arr.shape}"
            )
        flat = torch.tensor(arr.reshape(len(arr), -1))
        mean, std = flat.mean(0), flat.std(0).clamp_min(1e-6)
        return cls((flat - mean) / std, mean, std)

    def __call__(self, n: int, rng: torch.Generator | None = None) -> Tensor:
        """(n, T * dim) rows drawn uniformly with replacement (a ``sampler`` for :func:`train_flow`).

        Raises:
            TypeError / ValueError: ``n`` not an integer >= 1, ``rng`` not a torch.Generator.
            TooLargeError: ``n`` so large that the rows cannot fit in memory.
        """
        n = _check_draws(
            "TrajectoryData", n, rng, 8.0 + self.X.shape[1] * self.X.element_size()
        )
        idx = torch.randint(0, self.X.shape[0], (n,), generator=rng)
        return self.X[idx]

    def log_det_std(self) -> float:
        """``sum log std``: subtract from a standardised-space log-density to get raw units.

        Raises:
            Nothing: ``std`` is clamped to >= 1e-6 at construction, so the log is finite.
        """
        return float(torch.log(self.std).sum())
