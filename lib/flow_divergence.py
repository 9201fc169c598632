"""Flow and divergence matching (FDM): flow matching that also aligns the flow's divergence.

Chapter 07: Huang, Transue, Wang, Feldman, Zhang & Wang, "Improving Flow Matching by Aligning
Flow Divergence" (ICML 2025). Official code: ``Utah-Math-Data-Science/Flow_Div_Matching``.

Conditional flow matching (CFM, Lipman et al. 2023) regresses a network ``v_theta(x, t)`` onto
conditional velocities ``u_t(x | x1)``. The density ``p_hat_t`` transported by ``v_theta`` evolves
through the *divergence* of the field, which an L2 velocity fit does not control. The error
``eps_t = p_t - p_hat_t`` solves ``d_t eps + div(eps v) = L_t`` with source

    L_t = p_t [ (div v_t - div u_t) + (v_t - u_t) . grad log p_t ]                   (error PDE)

so that ``TV(p_t, p_hat_t) <= 1/2 int_0^t E_{p_s} |div v - div u + (v - u) . grad log p_s| ds``.
Replacing the marginal quantities by conditional ones gives the simulation-free divergence loss

    L_DM = E_{t, x1, x ~ p_t(.|x1)} | div v(x,t) - div u_t(x|x1) + (v(x,t) - u_t(x|x1)) . s_t(x|x1) |

and FDM trains ``lam_cfm * L_CFM + lam_div * L_DM``.

What is the paper's loss and what is the released code's (both are here, labelled):

- ``variant="derived"`` (the default of :func:`fdm_loss`): the loss above, absolute value
  (``norm="l1"``), no weighting, no stop-gradient: the quantity that upper-bounds the TV source
  term by Jensen's inequality. Its conditional residual has standard deviation ~ 1/sigma_t, so
  ``t`` is drawn from ``[0, t_max]`` with ``t_max < 1``.
- ``variant="sigma_l2"``: the core of the released 2-D code: the residual multiplied by
  ``sigma_t``, **squared**, with a stop-gradient on ``v`` inside ``(v - u) . s`` (``freeze=True``).
  Because it is squared, its minimiser sets the conditional *mean* of the residual, i.e. the
  marginal residual, to zero.
- ``variant="released_2d"``: the full loss of ``flow_matching_2d_Synthetic_FDM/main_fm_2d.py``:
  ``L_CFM + reg * (L_diff + L_der + mean((d (v - u))^2))`` where ``L_der`` is the sigma-weighted
  squared Hutchinson-"sliced" residual, ``L_diff`` a per-coordinate variant that uses
  ``grad_x (1^T v)`` in place of the divergence, and the last term is ``d^2`` times the CFM loss.
- ``variant="inv_rate_l1"``: the dynamics (JAX) code: absolute residual weighted by
  ``1 / |sigma_dot / sigma| / d``.

Conventions: ``x0 ~ N(0, I_d)`` is the source (noise), ``x1 ~ q`` the data, time runs from 0
(noise) to 1 (data), ``x_t = alpha_t x1 + sigma_t x0``. Points are ``(B, d)`` torch tensors, times
``(B,)``, divergences and log-densities ``(B,)``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor, nn

__all__ = [
    "SCHEDULES",
    "FDM_VARIANTS",
    "PathSample",
    "affine_path",
    "VelocityMLP",
    "divergence_exact",
    "divergence_hutchinson",
    "cfm_loss",
    "divergence_residual",
    "divergence_matching_loss",
    "fdm_loss",
    "train_flow",
    "sample_ode",
    "log_likelihood",
    "GaussianMixture2D",
    "tv_bound_integrand",
    "model_density_grid",
    "grid_tv",
    "hist_tv",
    "hist_kl",
    "checkerboard",
    "lorenz_trajectories",
    "fitzhugh_nagumo_trajectories",
    "TrajectoryData",
    "time_train_step",
]

SCHEDULES: tuple[str, ...] = ("cond_ot", "linear_vp")
FDM_VARIANTS: tuple[str, ...] = ("derived", "sigma_l2", "released_2d", "inv_rate_l1")


# --------------------------------------------------------------------------------------------
# Validation helpers (public boundary only)
# --------------------------------------------------------------------------------------------


def _check_points(x: Any, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B, d), got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (B, d), got {tuple(x.shape)}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite (it contains NaN or inf)")
    return x


def _check_pair(x0: Tensor, x1: Tensor, n0: str = "x0", n1: str = "x1") -> None:
    if x0.shape != x1.shape:
        raise ValueError(f"{n0} and {n1} must have the same shape, got {tuple(x0.shape)} and {tuple(x1.shape)}")
    if x0.dtype != x1.dtype:
        raise TypeError(f"{n0} and {n1} must have the same dtype, got {x0.dtype} and {x1.dtype}")
    if x0.device != x1.device:
        raise ValueError(f"{n0} and {n1} must be on the same device, got {x0.device} and {x1.device}")


def _check_model(model: Any, x: Tensor, name: str = "model") -> None:
    """``model`` is callable; a :class:`VelocityMLP` must match ``x``'s dimension, dtype and device."""
    if not callable(model):
        raise TypeError(f"{name} must be a callable (x (B, d), t (B,)) -> (B, d), got {type(model).__name__}")
    if isinstance(model, VelocityMLP):
        if model.dim != x.shape[1]:
            raise ValueError(f"{name} is a VelocityMLP of dim {model.dim} but the points have d = {x.shape[1]}")
        p = model.linears[0].weight
        if p.dtype != x.dtype:
            raise TypeError(f"{name}'s weights are {p.dtype} but the points are {x.dtype}; cast one of them")
        if p.device != x.device:
            raise ValueError(f"{name} is on {p.device} but the points are on {x.device}")


def _check_generator(generator: Any, name: str = "generator") -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"{name} must be None or a torch.Generator, got {type(generator).__name__}")


def _check_fdm_options(estimator: str, variant: str, schedule: str, n_probes: Any, dist: str) -> None:
    if estimator not in ("exact", "hutchinson"):
        raise ValueError(f"estimator must be 'exact' or 'hutchinson', got {estimator!r}")
    if variant not in FDM_VARIANTS:
        raise ValueError(f"variant must be one of {FDM_VARIANTS}, got {variant!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    _check_positive_int(n_probes, "n_probes")
    if dist not in ("rademacher", "gaussian"):
        raise ValueError(f"dist must be 'rademacher' or 'gaussian', got {dist!r}")


def _check_times(t: Any, batch: int, name: str = "t", *, allow_one: bool = True) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B,), got {type(t).__name__}")
    if t.ndim != 1 or t.shape[0] != batch:
        raise ValueError(f"{name} must have shape ({batch},), got {tuple(t.shape)}")
    if not torch.isfinite(t).all() or (t < 0).any() or (t > 1).any():
        raise ValueError(f"{name} must lie in [0, 1]; got min {float(t.min()):.4g}, max {float(t.max()):.4g}")
    if not allow_one and (t >= 1).any():
        raise ValueError(f"{name} must be < 1 here (sigma_t = 0 at t = 1 makes the score infinite)")
    return t


def _check_lam(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _torch_generator(rng: Any, device: torch.device | str = "cpu") -> torch.Generator:
    """A torch.Generator from an int seed, a numpy Generator (one draw) or a torch.Generator."""
    if isinstance(rng, torch.Generator):
        return rng
    if isinstance(rng, np.random.Generator):
        seed = int(rng.integers(0, 2**62))
    elif isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        seed = int(rng)
    else:
        raise TypeError(f"rng must be a non-negative int, numpy Generator or torch.Generator, got {rng!r}")
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


# --------------------------------------------------------------------------------------------
# Affine probability paths (Sec. 2 of the paper; Lipman et al. 2023)
# --------------------------------------------------------------------------------------------


@dataclass
class PathSample:
    """One batch drawn from the conditional path ``p_t(x | x1)`` and its closed-form quantities.

    Attributes:
        xt: (B, d) ``x_t = alpha_t x1 + sigma_t x0``.
        ut: (B, d) conditional velocity ``u_t(x_t | x1) = alpha_dot x1 + sigma_dot x0``.
        score: (B, d) conditional score ``grad log p_t(x_t | x1) = -(x_t - alpha_t x1) / sigma_t^2``.
        div_u: (B,) conditional divergence ``div u_t(. | x1) = d sigma_dot / sigma`` (constant in x).
        sigma_t, alpha_t, d_sigma_t, d_alpha_t: (B,) schedule values and time derivatives.
        t, x0, x1: the inputs.
    """

    xt: Tensor
    ut: Tensor
    score: Tensor
    div_u: Tensor
    sigma_t: Tensor
    alpha_t: Tensor
    d_sigma_t: Tensor
    d_alpha_t: Tensor
    t: Tensor
    x0: Tensor
    x1: Tensor


def _schedule(t: Tensor, schedule: str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(alpha_t, sigma_t, d_alpha_t, d_sigma_t) of an affine schedule, shapes like ``t``."""
    if schedule == "cond_ot":  # alpha = t, sigma = 1 - t
        return t, 1.0 - t, torch.ones_like(t), -torch.ones_like(t)
    if schedule == "linear_vp":  # alpha = t, sigma = sqrt(1 - t^2)  (flow_matching.LinearVPScheduler)
        s = torch.sqrt(1.0 - t**2)
        return t, s, torch.ones_like(t), -t / s
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")


def affine_path(x0: Tensor, x1: Tensor, t: Tensor, schedule: str = "cond_ot") -> PathSample:
    """Sample the affine conditional path and return its velocity, score and divergence.

    ``x_t = alpha_t x1 + sigma_t x0`` with ``x0 ~ N(0, I)``; then ``p_t(x | x1) =
    N(alpha_t x1, sigma_t^2 I)``, ``u_t(x | x1) = (sigma_dot/sigma)(x - alpha_t x1) + alpha_dot x1``,
    ``s_t(x | x1) = -(x - alpha_t x1)/sigma_t^2`` and ``div u_t(x | x1) = d sigma_dot / sigma``
    (Sec. 2-3 of the paper; the same quantities as ``path_sample.d_log_p_t`` and ``d_u_t`` of the
    official 2-D code, where ``d_u_t`` is per coordinate and the divergence is its sum).

    Args:
        x0: (B, d) finite float source (noise) points.
        x1: (B, d) finite float data points, same shape, dtype and device as ``x0``.
        t: (B,) times in [0, 1]. At ``t = 1`` ``sigma_t = 0``: the score and ``div_u`` are
            infinite there (and ``ut`` too for ``linear_vp``); losses draw ``t < 1``.
        schedule: ``"cond_ot"`` (alpha = t, sigma = 1 - t) or ``"linear_vp"``
            (alpha = t, sigma = sqrt(1 - t^2)).

    Returns:
        :class:`PathSample`.

    Raises:
        TypeError: inputs are not floating torch tensors, or ``x0`` and ``x1`` dtypes differ.
        ValueError: shapes or devices differ, NaN/inf in the points, ``t`` is not (B,) or lies
            outside [0, 1], unknown schedule.
    """
    _check_points(x0, "x0")
    _check_points(x1, "x1")
    _check_pair(x0, x1)
    _check_times(t, x0.shape[0])
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    return _affine_path(x0, x1, t.to(x0.dtype), schedule)


def _affine_path(x0: Tensor, x1: Tensor, t: Tensor, schedule: str) -> PathSample:
    alpha, sigma, d_alpha, d_sigma = _schedule(t, schedule)
    a, s, da, ds = (z[:, None] for z in (alpha, sigma, d_alpha, d_sigma))
    xt = a * x1 + s * x0
    ut = da * x1 + ds * x0
    score = -(xt - a * x1) / s**2
    div_u = x0.shape[1] * d_sigma / sigma
    return PathSample(xt=xt, ut=ut, score=score, div_u=div_u, sigma_t=sigma, alpha_t=alpha,
                      d_sigma_t=d_sigma, d_alpha_t=d_alpha, t=t, x0=x0, x1=x1)


# --------------------------------------------------------------------------------------------
# The velocity network (shared interface with kernels/flow_divergence.py)
# --------------------------------------------------------------------------------------------

_ACTS = {"swish": nn.SiLU, "silu": nn.SiLU, "tanh": nn.Tanh}


class VelocityMLP(nn.Module):
    """The velocity field ``v_theta(x, t)``: an MLP on ``concat([x, t])`` (official 2-D model).

    Architecture (the contract of ``icml25.kernels.flow_divergence``): ``Linear(d+1, hidden) ->
    act -> [Linear(hidden, hidden) -> act] x (depth - 1) -> Linear(hidden, d)``; ``depth + 1``
    ``nn.Linear`` layers in ``self.linears`` (in order), no activation after the last one.
    The official checkerboard model is ``hidden=512, depth=4`` with Swish (= SiLU).

    Args:
        dim: data dimension ``d >= 1``.
        hidden: hidden width.
        depth: number of hidden layers (>= 1).
        act: ``"swish"`` (alias ``"silu"``; what the fused kernel supports) or ``"tanh"``.

    Raises:
        ValueError: non-positive sizes or an unknown activation.
    """

    def __init__(self, dim: int, hidden: int = 128, depth: int = 3, act: str = "swish") -> None:
        super().__init__()
        _check_positive_int(dim, "dim")
        _check_positive_int(hidden, "hidden")
        _check_positive_int(depth, "depth")
        if act not in _ACTS:
            raise ValueError(f"act must be one of {sorted(_ACTS)}, got {act!r}")
        self.dim, self.hidden, self.depth = int(dim), int(hidden), int(depth)
        self.act = "swish" if act == "silu" else act
        sizes = [dim + 1] + [hidden] * depth + [dim]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self._act = _ACTS[act]()

    def forward(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``v(x, t)``: x (B, d), t (B,) or a scalar -> (B, d), same dtype as the weights.

        Raises:
            ValueError: ``x`` is not (B, dim) or ``t`` has neither 1 nor B elements.
        """
        if not isinstance(t, Tensor):
            t = torch.tensor(float(t), dtype=x.dtype, device=x.device)
        if t.ndim == 0:
            t = t.expand(x.shape[0])
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (B, {self.dim}), got {tuple(x.shape)}")
        if t.numel() != x.shape[0]:
            raise ValueError(f"t must be a scalar or have shape ({x.shape[0]},), got {tuple(t.shape)}")
        h = torch.cat([x, t.reshape(-1, 1).to(x.dtype)], dim=1)
        for layer in self.linears[:-1]:
            h = self._act(layer(h))
        return self.linears[-1](h)

    def linear_params(self) -> list[tuple[Tensor, Tensor]]:
        """[(weight (out, in), bias (out,)), ...] of every layer in order, detached float32."""
        return [(lin.weight.detach().float(), lin.bias.detach().float()) for lin in self.linears]


# --------------------------------------------------------------------------------------------
# Divergence estimators (Sec. 4 of the paper; FFJORD's Hutchinson trick)
# --------------------------------------------------------------------------------------------

VFn = Callable[[Tensor, Tensor], Tensor]


def _prepare_x(x: Tensor) -> Tensor:
    return x if x.requires_grad else x.detach().requires_grad_(True)


def divergence_exact(v_fn: VFn, x: Tensor, t: Tensor, *, create_graph: bool = False,
                     return_velocity: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Exact divergence ``div_x v(x, t) = tr(dv/dx)`` by ``d`` vector-Jacobian products.

    Cost: one forward and ``d`` backward passes; use for small ``d`` (the 2-D experiments).

    Args:
        v_fn: callable ``(x (B, d), t (B,)) -> (B, d)``, differentiable in ``x`` (e.g. a
            :class:`VelocityMLP`).
        x: (B, d) float points.
        t: (B,) times.
        create_graph: keep the graph so the result can be differentiated again (training).
        return_velocity: also return ``v(x, t)``.

    Returns:
        (B,) divergence, or ``(div (B,), v (B, d))`` with ``return_velocity``.

    Raises:
        TypeError / ValueError: ``x`` not (B, d) finite float, ``t`` not a (B,) tensor in [0, 1],
        ``v_fn`` not callable (or a :class:`VelocityMLP` of another dimension or dtype).
    """
    _check_points(x, "x")
    _check_times(t, x.shape[0])
    _check_model(v_fn, x, "v_fn")
    with torch.enable_grad():
        xg = _prepare_x(x)
        v = v_fn(xg, t)
        div = _exact_div(v, xg, create_graph)
    if not create_graph:
        div, v = div.detach(), v.detach()
    return (div, v) if return_velocity else div


def _exact_div(v: Tensor, x: Tensor, create_graph: bool) -> Tensor:
    div = torch.zeros(x.shape[0], dtype=v.dtype, device=v.device)
    d = x.shape[1]
    for i in range(d):
        g = torch.autograd.grad(v[:, i].sum(), x, create_graph=create_graph, retain_graph=True)[0]
        div = div + g[:, i]
    return div


def _probes(shape: tuple[int, ...], dist: str, generator: torch.Generator | None, like: Tensor) -> Tensor:
    """Probes drawn on the generator's device (CPU by default), then moved to ``like``'s device."""
    dev = generator.device if generator is not None else like.device
    if dist == "rademacher":
        z = torch.randint(0, 2, shape, generator=generator, device=dev).to(like.dtype) * 2 - 1
    elif dist == "gaussian":
        z = torch.randn(shape, generator=generator, device=dev, dtype=like.dtype)
    else:
        raise ValueError(f"dist must be 'rademacher' or 'gaussian', got {dist!r}")
    return z.to(like.device)


def divergence_hutchinson(v_fn: VFn, x: Tensor, t: Tensor, n_probes: int = 1, dist: str = "rademacher",
                          *, generator: torch.Generator | None = None, create_graph: bool = False,
                          return_probes: bool = False):
    """Hutchinson estimate ``mean_k z_k^T (dv/dx) z_k`` of the divergence (unbiased: E[z z^T] = I).

    One vector-Jacobian product per probe (the official PyTorch code; the JAX code uses one
    JVP with Gaussian probes). Variance for a linear field ``v = A x``: Rademacher
    ``sum_{i<j} (A_ij + A_ji)^2``, Gaussian ``2 sum_i A_ii^2 + sum_{i<j}(A_ij + A_ji)^2``, each
    divided by ``n_probes``.

    Args:
        v_fn: callable ``(x, t) -> (B, d)``.
        x: (B, d) float points; t: (B,) times.
        n_probes: number of independent probes averaged per point.
        dist: ``"rademacher"`` (entries +-1) or ``"gaussian"``.
        generator: torch.Generator for the probes (default: torch's global generator).
        create_graph: keep the graph for a second differentiation (training).
        return_probes: also return the probes, shape (n_probes, B, d).

    Returns:
        ``(div (B,), v (B, d))`` or ``(div, v, probes)``.

    Raises:
        TypeError / ValueError: as :func:`divergence_exact`, ``n_probes < 1``, unknown ``dist``,
        ``generator`` not a torch.Generator.
    """
    _check_points(x, "x")
    _check_times(t, x.shape[0])
    _check_model(v_fn, x, "v_fn")
    _check_positive_int(n_probes, "n_probes")
    if dist not in ("rademacher", "gaussian"):
        raise ValueError(f"dist must be 'rademacher' or 'gaussian', got {dist!r}")
    _check_generator(generator)
    with torch.enable_grad():
        xg = _prepare_x(x)
        v = v_fn(xg, t)
        z = _probes((n_probes, *x.shape), dist, generator, v)
        div = _hutch_div(v, xg, z, create_graph)
    if not create_graph:
        div, v = div.detach(), v.detach()
    return (div, v, z) if return_probes else (div, v)


def _hutch_div(v: Tensor, x: Tensor, z: Tensor, create_graph: bool) -> Tensor:
    acc = torch.zeros(x.shape[0], dtype=v.dtype, device=v.device)
    for k in range(z.shape[0]):
        g = torch.autograd.grad((v * z[k]).sum(), x, create_graph=create_graph, retain_graph=True)[0]
        acc = acc + (g * z[k]).sum(dim=1)
    return acc / z.shape[0]


# --------------------------------------------------------------------------------------------
# Losses (Sec. 3-4 of the paper; step 7 of the notes for the released variants)
# --------------------------------------------------------------------------------------------


def cfm_loss(v: Tensor, ut: Tensor) -> Tensor:
    """Conditional flow matching loss ``mean_{b, i} (v - u_t(x | x1))^2`` (Lipman et al. 2023).

    The mean runs over the batch *and* the coordinates (``E ||v - u||^2 / d``), as in Meta's
    ``flow_matching`` examples and the official FDM 2-D code.

    Args:
        v: (B, d) predicted velocity; ut: (B, d) conditional target.

    Returns:
        scalar tensor.

    Raises:
        TypeError: ``v`` or ``ut`` is not a torch tensor.
        ValueError: shapes differ.
    """
    if not isinstance(v, Tensor) or not isinstance(ut, Tensor):
        raise TypeError("v and ut must be torch tensors")
    if v.shape != ut.shape:
        raise ValueError(f"v and ut must have the same shape, got {tuple(v.shape)} and {tuple(ut.shape)}")
    return ((v - ut) ** 2).mean()


def divergence_residual(v: Tensor, div_v: Tensor, ut: Tensor, score: Tensor, div_u: Tensor, *,
                        stopgrad_v: bool = False, probe: Tensor | None = None) -> Tensor:
    """Conditional residual ``div v - div u + (v - u) . s`` (B,), the integrand of L_DM.

    With ``probe`` (B, d) the target terms are "sliced" with the same probe as a Hutchinson
    ``div_v`` (official code): ``(z.s)(z.(v - u)) - (div_u / d) |z|^2``; unbiased because
    ``E[z z^T] = I``. ``stopgrad_v`` detaches ``v`` inside the score term (``freeze=True``).

    Args:
        v, ut, score: (B, d) model velocity, conditional velocity and conditional score.
        div_v, div_u: (B,) model and conditional divergences.
        stopgrad_v: detach ``v`` in the score term.
        probe: optional (B, d) Hutchinson probe.

    Returns:
        (B,) residual.

    Raises:
        TypeError: an input is not a torch tensor.
        ValueError: inconsistent shapes (no broadcasting: a (B, 1) ``div_v`` would silently give
            a (B, B) residual).
    """
    _check_residual_inputs(v, div_v, ut, score, div_u, None, probe)
    vv = v.detach() if stopgrad_v else v
    if probe is None:
        return div_v - div_u + ((vv - ut) * score).sum(dim=1)
    d = v.shape[1]
    return div_v + (probe * score).sum(1) * (probe * (vv - ut)).sum(1) - div_u / d * (probe**2).sum(1)


def _check_residual_inputs(v, div_v, ut, score, div_u, sigma_t, probe) -> None:
    for name, a in (("v", v), ("ut", ut), ("score", score), ("div_v", div_v), ("div_u", div_u),
                    ("sigma_t", sigma_t), ("probe", probe)):
        if a is not None and not isinstance(a, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(a).__name__}")
    for name, a in (("v", v), ("ut", ut), ("score", score)):
        if a.ndim != 2:
            raise ValueError(f"{name} must be a (B, d) tensor, got shape {tuple(a.shape)}")
    if not (v.shape == ut.shape == score.shape):
        raise ValueError(f"v, ut, score must share a shape, got {tuple(v.shape)}, {tuple(ut.shape)}, {tuple(score.shape)}")
    B = v.shape[0]
    for name, a in (("div_v", div_v), ("div_u", div_u), ("sigma_t", sigma_t)):
        if a is not None and a.shape != (B,):
            raise ValueError(f"{name} must be a ({B},) tensor, got {tuple(a.shape)}")
    if probe is not None and probe.shape != v.shape:
        raise ValueError(f"probe must be a {tuple(v.shape)} tensor, got {tuple(probe.shape)}")


def divergence_matching_loss(v: Tensor, div_v: Tensor, ut: Tensor, score: Tensor, div_u: Tensor,
                             sigma_t: Tensor, norm: str = "l1", weight: str | None = None,
                             stopgrad_v: bool = False, probe: Tensor | None = None) -> Tensor:
    """Divergence matching loss ``L_DM`` (the conditional bound of the TV source term).

    ``residual = div v - div u_t(x|x1) + (v - u_t(x|x1)) . s_t(x|x1)`` (see
    :func:`divergence_residual`), then ``mean(|w * residual|)`` (``norm="l1"``, the paper's
    derived loss) or ``mean((w * residual)^2)`` (``norm="l2"``, the released 2-D code), with
    weight ``w``: ``None`` (1, paper), ``"sigma"`` (``sigma_t``, released 2-D code) or
    ``"inv_rate"`` (``1 / |sigma_dot / sigma| / d``, released dynamics code).

    Args:
        v: (B, d) model velocity at ``x_t``; div_v: (B,) its divergence (exact or Hutchinson).
        ut, score: (B, d) conditional velocity and score; div_u: (B,) conditional divergence.
        sigma_t: (B,) path noise scale.
        norm: ``"l1"`` or ``"l2"``.
        weight: ``None``, ``"sigma"`` or ``"inv_rate"``.
        stopgrad_v: detach ``v`` inside ``(v - u) . s`` (the code's ``freeze=True``).
        probe: optional (B, d) probe for the sliced (Hutchinson) form of the target terms.

    Returns:
        scalar tensor.

    Raises:
        TypeError: an input is not a torch tensor.
        ValueError: inconsistent shapes, unknown ``norm`` or ``weight``.
    """
    _check_residual_inputs(v, div_v, ut, score, div_u, sigma_t, probe)
    if norm not in ("l1", "l2"):
        raise ValueError(f"norm must be 'l1' or 'l2', got {norm!r}")
    if weight not in (None, "sigma", "inv_rate"):
        raise ValueError(f"weight must be None, 'sigma' or 'inv_rate', got {weight!r}")
    return _dm_loss(v, div_v, ut, score, div_u, sigma_t, norm, weight, stopgrad_v, probe)


def _dm_loss(v, div_v, ut, score, div_u, sigma_t, norm, weight, stopgrad_v, probe) -> Tensor:
    r = divergence_residual(v, div_v, ut, score, div_u, stopgrad_v=stopgrad_v, probe=probe)
    d = v.shape[1]
    if weight == "sigma":
        r = r * sigma_t
    elif weight == "inv_rate":  # 1 / |sigma_dot / sigma| / d, with sigma_dot / sigma = div_u / d
        r = r / (div_u.abs() / d).clamp_min(1e-12) / d
    return r.abs().mean() if norm == "l1" else (r**2).mean()


_VARIANT_SETTINGS = {
    # variant: (norm, weight, stopgrad_v)
    "derived": ("l1", None, False),
    "sigma_l2": ("l2", "sigma", True),
    "released_2d": ("l2", "sigma", True),
    "inv_rate_l1": ("l1", "inv_rate", False),
}


def fdm_loss(model: VFn, x0: Tensor, x1: Tensor, t: Tensor, lam_cfm: float = 1.0, lam_div: float = 0.1,
             estimator: str = "exact", *, variant: str = "derived", schedule: str = "cond_ot",
             n_probes: int = 1, dist: str = "rademacher", generator: torch.Generator | None = None,
             return_parts: bool = False):
    """FDM objective ``lam_cfm * L_CFM + lam_div * L_DM`` on one batch (Sec. 4 of the paper).

    ``lam_div = 0`` is plain CFM through the same code (the divergence is then not computed).
    ``variant`` picks the divergence term (see the module docstring):
    ``"derived"`` (default; paper: L1, unweighted, no stop-gradient), ``"sigma_l2"`` (released
    2-D core: sigma-weighted squared residual, stop-gradient on v), ``"released_2d"`` (the exact
    released 2-D objective with its two extra terms; always uses one Rademacher probe for its
    sliced term, whatever ``estimator``) and ``"inv_rate_l1"`` (released dynamics code).

    Args:
        model: velocity field ``(x (B, d), t (B,)) -> (B, d)``.
        x0: (B, d) noise; x1: (B, d) data; t: (B,) times in [0, 1) (``sigma_t > 0``).
        lam_cfm, lam_div: non-negative weights (official 2-D code: 1 and ``reg = 0.1``).
        estimator: ``"exact"`` (d VJPs) or ``"hutchinson"`` (``n_probes`` VJPs, probes ``dist``).
        variant, schedule, n_probes, dist, generator: see above.
        return_parts: also return ``{"cfm": float, "div": float}``.

    Returns:
        scalar loss tensor (differentiable w.r.t. the model's parameters), or
        ``(loss, parts)`` with ``return_parts``.

    Raises:
        TypeError / ValueError: bad shapes, dtypes or devices, NaN/inf in the points, an empty
        batch, ``t`` outside [0, 1), negative lambdas, unknown estimator/variant/schedule/dist,
        ``n_probes < 1``, ``generator`` not a torch.Generator, a :class:`VelocityMLP` ``model``
        of another dimension or dtype.
    """
    _check_points(x0, "x0")
    _check_points(x1, "x1")
    _check_pair(x0, x1)
    if x0.shape[0] < 1:
        raise ValueError("x0 and x1 must hold at least one point (B >= 1): the loss is a mean over the batch")
    _check_times(t, x0.shape[0], allow_one=False)
    _check_model(model, x0)
    lam_cfm = _check_lam(lam_cfm, "lam_cfm")
    lam_div = _check_lam(lam_div, "lam_div")
    _check_fdm_options(estimator, variant, schedule, n_probes, dist)
    _check_generator(generator)
    return _fdm_loss(model, x0, x1, t.to(x0.dtype), lam_cfm, lam_div, estimator, variant, schedule,
                     n_probes, dist, generator, return_parts)


def _fdm_loss(model, x0, x1, t, lam_cfm, lam_div, estimator, variant, schedule, n_probes, dist,
              generator, return_parts):
    ps = _affine_path(x0, x1, t, schedule)
    if lam_div == 0.0:
        v = model(ps.xt, t)
        l_cfm = cfm_loss(v, ps.ut)
        loss = lam_cfm * l_cfm
        return (loss, {"cfm": float(l_cfm.detach()), "div": 0.0}) if return_parts else loss
    x = ps.xt.detach().requires_grad_(True)
    v = model(x, t)
    l_cfm = cfm_loss(v, ps.ut)
    if variant == "released_2d":
        l_div = _released_2d_term(v, x, ps, generator)
    else:
        norm, weight, stopgrad = _VARIANT_SETTINGS[variant]
        probe = None
        if estimator == "exact":
            div_v = _exact_div(v, x, create_graph=True)
        else:
            z = _probes((n_probes, *x.shape), dist, generator, v)
            div_v = _hutch_div(v, x, z, create_graph=True)
            probe = z[0] if n_probes == 1 else None  # slice targets only with a single probe
        l_div = _dm_loss(v, div_v, ps.ut, ps.score, ps.div_u, ps.sigma_t, norm, weight, stopgrad, probe)
    loss = lam_cfm * l_cfm + lam_div * l_div
    return (loss, {"cfm": float(l_cfm.detach()), "div": float(l_div.detach())}) if return_parts else loss


def _released_2d_term(v: Tensor, x: Tensor, ps: PathSample, generator) -> Tensor:
    """``L_diff + L_der + mean((d (v - u))^2)`` of ``main_fm_2d.py`` (freeze=True)."""
    d = x.shape[1]
    s, u, sig = ps.score, ps.ut, ps.sigma_t[:, None]
    rate = (ps.div_u / d)[:, None]  # per-coordinate d_u_t = sigma_dot / sigma
    # L_diff: per-coordinate residual with grad_x(1^T v) in place of the divergence
    g1 = torch.autograd.grad(v, x, grad_outputs=torch.ones_like(v), create_graph=True, retain_graph=True)[0]
    l_diff = (((g1 + s * v.detach() - u * s - rate) * sig) ** 2).mean()
    # L_der: sigma-weighted squared Hutchinson-sliced residual, one Rademacher probe
    z = _probes((1, *x.shape), "rademacher", generator, v)
    div_v = _hutch_div(v, x, z, create_graph=True)
    r = divergence_residual(v, div_v, u, s, ps.div_u, stopgrad_v=True, probe=z[0]) * ps.sigma_t
    l_der = (r**2).mean() + ((d * (v - u)) ** 2).mean()
    return l_diff + l_der


# --------------------------------------------------------------------------------------------
# Training (official 2-D recipe: Adam, 10-step linear warm-up, StepLR(10, 0.999))
# --------------------------------------------------------------------------------------------


def train_flow(model: nn.Module, sampler: Callable[[int, torch.Generator], Tensor], steps: int, batch: int,
               lr: float = 1e-3, loss: str = "cfm", rng: Any = 0, *, lam_cfm: float = 1.0,
               lam_div: float = 0.1, estimator: str = "exact", variant: str = "derived",
               schedule: str = "cond_ot", n_probes: int = 1, dist: str = "rademacher",
               t_max: float = 1.0 - 1e-3, warmup: int = 10, lr_step: int = 10,
               lr_gamma: float = 0.999) -> dict[str, Any]:
    """Train ``model`` with CFM (``loss="cfm"``) or FDM (``loss="fdm"``), in place.

    Each step draws ``x1 = sampler(batch, gen)``, ``x0 ~ N(0, I)``, ``t ~ U[0, t_max]`` and
    takes one Adam step on :func:`fdm_loss` (``lam_div = 0`` for CFM). The learning rate follows
    the official 2-D code: linear warm-up over ``warmup`` steps times ``StepLR(lr_step, lr_gamma)``.

    Args:
        model: the velocity network (e.g. :class:`VelocityMLP`).
        sampler: ``(n, torch.Generator) -> (n, d)`` float32 data points.
        steps, batch: number of Adam steps and batch size.
        lr: base learning rate.
        loss: ``"cfm"`` or ``"fdm"``.
        rng: int seed, numpy Generator or torch.Generator for all draws of this run.
        lam_cfm, lam_div, estimator, variant, schedule, n_probes, dist: passed to :func:`fdm_loss`.
        t_max: largest training time (< 1 keeps sigma_t > 0).
        warmup, lr_step, lr_gamma: learning-rate schedule.

    Returns:
        ``{"loss": (steps,) array, "cfm": (steps,), "div": (steps,), "seconds": float,
        "sec_per_step": float}``.

    Raises:
        TypeError: ``model`` not an nn.Module with parameters, ``sampler`` not callable, bad ``rng``.
        ValueError: bad sizes, unknown loss/estimator/variant/schedule/dist, ``n_probes < 1``,
            ``t_max`` outside (0, 1), ``lr`` not finite and positive, negative lambdas,
            ``warmup < 0``, ``lr_step < 1``, ``lr_gamma`` outside (0, 1], a sampler that does not
            return a (batch, d) float tensor of the model's dimension.
    """
    if not isinstance(model, nn.Module) or next(model.parameters(), None) is None:
        raise TypeError(f"model must be an nn.Module with parameters, got {type(model).__name__}")
    if not callable(sampler):
        raise TypeError(f"sampler must be a callable (n, torch.Generator) -> (n, d), got {type(sampler).__name__}")
    steps = _check_positive_int(steps, "steps")
    batch = _check_positive_int(batch, "batch")
    if loss not in ("cfm", "fdm"):
        raise ValueError(f"loss must be 'cfm' or 'fdm', got {loss!r}")
    if not (0.0 < t_max < 1.0):
        raise ValueError(f"t_max must lie in (0, 1), got {t_max!r}")
    if isinstance(lr, bool) or not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    _check_lam(lam_cfm, "lam_cfm")
    _check_lam(lam_div, "lam_div")
    _check_fdm_options(estimator, variant, schedule, n_probes, dist)
    if isinstance(warmup, bool) or not isinstance(warmup, (int, np.integer)) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")
    lr_step = _check_positive_int(lr_step, "lr_step")
    if isinstance(lr_gamma, bool) or not isinstance(lr_gamma, (int, float)) or not (0.0 < lr_gamma <= 1.0):
        raise ValueError(f"lr_gamma must lie in (0, 1], got {lr_gamma!r}")
    gen = _torch_generator(rng)
    param = next(model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    warm = max(int(warmup), 1)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / warm) * lr_gamma ** (k // lr_step))
    lam = lam_div if loss == "fdm" else 0.0
    hist = {"loss": np.empty(steps), "cfm": np.empty(steps), "div": np.empty(steps)}
    start = time.perf_counter()
    model.train()
    for k in range(steps):
        x1 = sampler(batch, gen)
        if not isinstance(x1, Tensor) or x1.ndim != 2 or x1.shape[0] != batch or not torch.is_floating_point(x1):
            raise ValueError(f"sampler(batch, generator) must return a ({batch}, d) float torch.Tensor, got "
                             f"{type(x1).__name__} {tuple(getattr(x1, 'shape', ()))}")
        if isinstance(model, VelocityMLP) and x1.shape[1] != model.dim:
            raise ValueError(f"sampler returns d = {x1.shape[1]} but model is a VelocityMLP of dim {model.dim}")
        x1 = x1.to(param.device, param.dtype)
        x0 = torch.randn(x1.shape, generator=gen, dtype=x1.dtype).to(param.device)
        t = torch.rand(batch, generator=gen, dtype=x1.dtype).to(param.device) * t_max
        opt.zero_grad(set_to_none=True)
        total, parts = _fdm_loss(model, x0, x1, t, lam_cfm, lam, estimator, variant, schedule,
                                 n_probes, dist, gen, True)
        total.backward()
        opt.step()
        sched.step()
        hist["loss"][k] = float(total.detach())
        hist["cfm"][k], hist["div"][k] = parts["cfm"], parts["div"]
    model.eval()
    secs = time.perf_counter() - start
    return {**hist, "seconds": secs, "sec_per_step": secs / steps}


def time_train_step(model: nn.Module, x1: Tensor, loss: str = "cfm", estimator: str = "exact",
                    repeats: int = 5, variant: str = "sigma_l2", seed: int = 0) -> float:
    """Median wall seconds of one forward+backward+Adam step on the batch ``x1`` (for the cost table).

    Raises:
        TypeError / ValueError: ``model`` not an nn.Module, ``x1`` not a (B, d) finite float tensor
        (B >= 1), unknown loss, estimator or variant, ``repeats < 1``.
    """
    if not isinstance(model, nn.Module) or next(model.parameters(), None) is None:
        raise TypeError(f"model must be an nn.Module with parameters, got {type(model).__name__}")
    _check_points(x1, "x1")
    if x1.shape[0] < 1:
        raise ValueError("x1 must hold at least one point")
    _check_model(model, x1)
    if loss not in ("cfm", "fdm"):
        raise ValueError(f"loss must be 'cfm' or 'fdm', got {loss!r}")
    _check_fdm_options(estimator, variant, "cond_ot", 1, "rademacher")
    repeats = _check_positive_int(repeats, "repeats")
    gen = _torch_generator(seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-6)
    times = []
    sync = torch.cuda.synchronize if x1.is_cuda else (lambda: None)
    for _ in range(repeats + 1):
        x0 = torch.randn(x1.shape, generator=gen, dtype=x1.dtype).to(x1.device)
        t = (torch.rand(x1.shape[0], generator=gen, dtype=x1.dtype) * 0.999).to(x1.device)
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = _fdm_loss(model, x0, x1, t, 1.0, 0.1 if loss == "fdm" else 0.0, estimator, variant,
                        "cond_ot", 1, "rademacher", gen, False)
        out.backward()
        opt.step()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


# --------------------------------------------------------------------------------------------
# Sampling and likelihood (continuous normalising flow; Chen et al. 2018, FFJORD)
# --------------------------------------------------------------------------------------------


@torch.no_grad()
def sample_ode(model: VFn, x0: Tensor, n_steps: int = 100, method: str = "euler", *, t0: float = 0.0,
               t1: float = 1.0, return_path: bool = False) -> Tensor:
    """Integrate ``dx/dt = v(x, t)`` from ``t0`` to ``t1`` with fixed steps.

    Args:
        model: velocity field ``(x (B, d), t (B,)) -> (B, d)``.
        x0: (B, d) initial points (source samples at ``t0``).
        n_steps: number of steps.
        method: ``"euler"`` (the official sampler, step 0.01), ``"midpoint"`` or ``"rk4"``.
        t0, t1: integration interval within [0, 1] (``t1 < t0`` integrates backwards).
        return_path: return every state, shape (n_steps + 1, B, d).

    Returns:
        (B, d) points at ``t1`` (or the path).

    Raises:
        TypeError / ValueError: bad shapes, NaN/inf in ``x0``, ``n_steps < 1``, unknown method,
        times outside [0, 1], a :class:`VelocityMLP` of another dimension or dtype.
    """
    _check_points(x0, "x0")
    _check_model(model, x0)
    n_steps = _check_positive_int(n_steps, "n_steps")
    if method not in ("euler", "midpoint", "rk4"):
        raise ValueError(f"method must be 'euler', 'midpoint' or 'rk4', got {method!r}")
    if not (0.0 <= t0 <= 1.0 and 0.0 <= t1 <= 1.0):
        raise ValueError(f"t0 and t1 must lie in [0, 1], got {t0!r}, {t1!r}")
    h = (t1 - t0) / n_steps
    x = x0.clone()
    B = x.shape[0]
    path = [x.clone()] if return_path else None

    def f(xx: Tensor, tt: float) -> Tensor:
        return model(xx, torch.full((B,), tt, dtype=xx.dtype, device=xx.device))

    for k in range(n_steps):
        tk = t0 + k * h
        if method == "euler":
            x = x + h * f(x, tk)
        elif method == "midpoint":
            x = x + h * f(x + 0.5 * h * f(x, tk), tk + 0.5 * h)
        else:
            k1 = f(x, tk)
            k2 = f(x + 0.5 * h * k1, tk + 0.5 * h)
            k3 = f(x + 0.5 * h * k2, tk + 0.5 * h)
            k4 = f(x + h * k3, tk + h)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if path is not None:
            path.append(x.clone())
    return torch.stack(path) if path is not None else x


def _std_normal_logpdf(x: Tensor) -> Tensor:
    d = x.shape[1]
    return -0.5 * (x**2).sum(1) - 0.5 * d * math.log(2 * math.pi)


def log_likelihood(model: VFn, x1: Tensor, n_steps: int = 100, exact: bool = True, *, method: str = "euler",
                   t1: float = 1.0, n_probes: int = 1, dist: str = "rademacher",
                   generator: torch.Generator | None = None, use_kernel: bool = True) -> Tensor:
    """``log p_hat_{t1}(x1)`` by the instantaneous change of variables, standard-normal base.

    Integrates the pair ``(x, l)`` backwards from ``t1`` to 0 with ``dx/dt = v(x, t)`` and
    ``dl/dt = div v(x, t)``, then ``log p_hat_{t1}(x1) = log N(x(0); 0, I) - int_0^{t1} div v dt``
    (because ``d/dt log p(x_t) = -div v(x_t, t)`` along trajectories; Chen et al. 2018).
    ``method="euler"`` uses the left point of each step going backwards (x_{k+1} = x_k - h v(x_k,
    t_k), t_k = t1 - k h), the same scheme as the fused kernel: with ``exact=True``, ``t1 = 1``,
    a :class:`VelocityMLP` with Swish and ``use_kernel``, this calls
    ``icml25.kernels.flow_divergence.euler_log_likelihood`` (GPU kernel when available, else its
    torch reference). Otherwise the torch path here runs (``"midpoint"`` also available; with
    ``exact=False`` the divergence is a Hutchinson estimate, as in the official NLL evaluation).

    Args:
        model: velocity field.
        x1: (B, d) float points.
        n_steps: Euler/midpoint steps on [0, t1].
        exact: exact divergence (d VJPs) or Hutchinson (``n_probes``, ``dist``).
        method: ``"euler"`` or ``"midpoint"``.
        t1: time of the density (1 = the model's data distribution).
        n_probes, dist, generator: Hutchinson settings.
        use_kernel: allow the kernels dispatcher for the exact Euler case.

    Returns:
        (B,) log-density in nats (float32 or the model's dtype).

    Raises:
        TypeError / ValueError: bad shapes, NaN/inf in ``x1``, ``n_steps < 1``, unknown method or
        dist, ``n_probes < 1``, ``t1`` outside (0, 1], a :class:`VelocityMLP` of another
        dimension or dtype.
    """
    _check_points(x1, "x1")
    _check_model(model, x1)
    n_steps = _check_positive_int(n_steps, "n_steps")
    if method not in ("euler", "midpoint"):
        raise ValueError(f"method must be 'euler' or 'midpoint', got {method!r}")
    if not (0.0 < t1 <= 1.0):
        raise ValueError(f"t1 must lie in (0, 1], got {t1!r}")
    _check_positive_int(n_probes, "n_probes")
    if dist not in ("rademacher", "gaussian"):
        raise ValueError(f"dist must be 'rademacher' or 'gaussian', got {dist!r}")
    _check_generator(generator)
    if (exact and method == "euler" and t1 == 1.0 and use_kernel and isinstance(model, VelocityMLP)
            and model.act == "swish"):
        from icml25.kernels.flow_divergence import MAX_DIM, MAX_HIDDEN, euler_log_likelihood

        if model.dim > MAX_DIM or model.hidden > MAX_HIDDEN:  # beyond the fused kernel's shared memory
            return _log_likelihood_torch(model, x1, n_steps, exact, method, t1, n_probes, dist, generator)

        out = euler_log_likelihood(model.linear_params(), x1.detach().float(), n_steps)
        return out.to(x1.device)
    return _log_likelihood_torch(model, x1, n_steps, exact, method, t1, n_probes, dist, generator)


def _log_likelihood_torch(model, x1, n_steps, exact, method, t1, n_probes, dist, generator) -> Tensor:
    B = x1.shape[0]
    h = t1 / n_steps
    x = x1.detach().clone()
    integral = torch.zeros(B, dtype=x.dtype, device=x.device)

    def vdiv(xx: Tensor, tt: float) -> tuple[Tensor, Tensor]:
        tv = torch.full((B,), tt, dtype=xx.dtype, device=xx.device)
        with torch.enable_grad():
            xg = xx.detach().requires_grad_(True)
            v = model(xg, tv)
            if exact:
                dv = _exact_div(v, xg, False)
            else:
                z = _probes((n_probes, *xx.shape), dist, generator, v)
                dv = _hutch_div(v, xg, z, False)
        return v.detach(), dv.detach()

    for k in range(n_steps):
        tk = t1 - k * h
        if method == "euler":
            v, dv = vdiv(x, tk)
        else:
            v0, _ = vdiv(x, tk)
            v, dv = vdiv(x - 0.5 * h * v0, tk - 0.5 * h)
        x = x - h * v
        integral = integral + h * dv
    return _std_normal_logpdf(x) - integral


# --------------------------------------------------------------------------------------------
# Analytic ground truth: a Gaussian mixture under the CondOT path
# --------------------------------------------------------------------------------------------


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
        ValueError: inconsistent shapes, non-finite means, non-positive or non-finite stds or
            weights. The methods raise ValueError for points that are not (N, d) or times not in
            [0, 1] (scalar or (N,)).
    """

    def __init__(self, means: Any, stds: Any, weights: Any | None = None) -> None:
        mu = torch.as_tensor(np.asarray(means, dtype=np.float64))
        if mu.ndim != 2 or mu.shape[0] < 1 or mu.shape[1] < 1:
            raise ValueError(f"means must have shape (K, d) with K, d >= 1, got {tuple(mu.shape)}")
        if not bool(torch.isfinite(mu).all()):
            raise ValueError("means must be finite")
        K = mu.shape[0]
        s = torch.as_tensor(np.asarray(stds, dtype=np.float64)).reshape(-1)
        if s.shape != (K,) or not (s > 0).all() or not bool(torch.isfinite(s).all()):
            raise ValueError(f"stds must be ({K},) positive, got {tuple(s.shape)}")
        w = torch.full((K,), 1.0 / K, dtype=torch.float64) if weights is None else \
            torch.as_tensor(np.asarray(weights, dtype=np.float64)).reshape(-1)
        if w.shape != (K,) or not (w > 0).all() or not bool(torch.isfinite(w).all()):
            raise ValueError(f"weights must be ({K},) positive")
        self.means, self.stds, self.weights = mu, s, w / w.sum()
        self.K, self.d = K, mu.shape[1]

    @classmethod
    def ring(cls, k: int = 8, radius: float = 3.0, std: float = 0.3) -> "GaussianMixture2D":
        """``k`` equal-weight modes on a circle of ``radius`` in 2-D."""
        ang = 2 * np.pi * np.arange(k) / k
        return cls(np.stack([radius * np.cos(ang), radius * np.sin(ang)], 1), np.full(k, std))

    def sample(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """(n, d) float32 draws of the data distribution q (a valid ``sampler`` for train_flow)."""
        n = _check_positive_int(n, "n")
        _check_generator(generator)
        comp = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        eps = torch.randn((n, self.d), generator=generator, dtype=torch.float64)
        return (self.means[comp] + self.stds[comp, None] * eps).float()

    def _parts(self, x: Tensor, t: Tensor):
        if not isinstance(x, Tensor) or x.ndim != 2 or x.shape[1] != self.d:
            raise ValueError(f"x must be a torch.Tensor of shape (N, {self.d}), got {tuple(getattr(x, 'shape', ()))}")
        x = x.to(torch.float64)
        t = torch.as_tensor(t, dtype=torch.float64).reshape(-1, 1)  # (N or 1, 1)
        if t.shape[0] not in (1, x.shape[0]):
            raise ValueError(f"t must be a scalar or have shape ({x.shape[0]},), got {t.shape[0]} values")
        if not bool((torch.isfinite(t) & (t >= 0) & (t <= 1)).all()):
            raise ValueError("t must lie in [0, 1]")
        m = t[:, None, :] * self.means[None]  # (N, K, d)
        var = t**2 * self.stds[None] ** 2 + (1 - t) ** 2  # (N, K)
        diff = x[:, None, :] - m
        logn = (-0.5 * (diff**2).sum(-1) / var - 0.5 * self.d * torch.log(2 * math.pi * var))
        logj = torch.log(self.weights)[None] + logn
        logp = torch.logsumexp(logj, dim=1)
        gamma = torch.exp(logj - logp[:, None])
        return t, var, diff, logp, gamma

    def log_path_density(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``log p_t(x)``; x (N, d), t scalar or (N,) -> (N,) float64."""
        return self._parts(x, t)[3]

    def path_density(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``p_t(x)`` (N,) float64 (t = 1 is the data density q)."""
        return torch.exp(self.log_path_density(x, t))

    def marginal_velocity(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``u_t(x) = E[x1 - x0 | x_t = x]`` (N, d) float64."""
        tt, var, diff, _, gamma = self._parts(x, t)
        a = (tt * self.stds[None] ** 2 - (1 - tt)) / var  # (N, K)
        uk = self.means[None] + a[..., None] * diff
        return (gamma[..., None] * uk).sum(1)

    def marginal_score(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``grad_x log p_t(x)`` (N, d) float64."""
        _, var, diff, _, gamma = self._parts(x, t)
        return (gamma[..., None] * (-diff / var[..., None])).sum(1)

    def marginal_divergence(self, x: Tensor, t: Tensor | float) -> Tensor:
        """``div u_t(x) = sum_k gamma_k [d a_k + u_k . (s_k - s)]`` (N,) float64."""
        tt, var, diff, _, gamma = self._parts(x, t)
        a = (tt * self.stds[None] ** 2 - (1 - tt)) / var
        uk = self.means[None] + a[..., None] * diff
        sk = -diff / var[..., None]
        s = (gamma[..., None] * sk).sum(1)
        return (gamma * (self.d * a + (uk * (sk - s[:, None, :])).sum(-1))).sum(1)

    def sample_path(self, n: int, t: float, generator: torch.Generator | None = None) -> Tensor:
        """(n, d) float32 draws of the marginal ``p_t`` (``t x1 + (1 - t) x0``); t in [0, 1]."""
        if not (isinstance(t, (int, float, np.floating)) and 0.0 <= t <= 1.0):
            raise ValueError(f"t must be a number in [0, 1], got {t!r}")
        x1 = self.sample(n, generator)
        x0 = torch.randn(x1.shape, generator=generator)
        return t * x1 + (1 - t) * x0


def tv_bound_integrand(model: VFn, gmm: GaussianMixture2D, t_grid: Any, n_mc: int = 2000,
                       generator: torch.Generator | None = None, estimator: str = "exact") -> dict[str, np.ndarray]:
    """Monte-Carlo ``E_{p_t} |div v - div u_t + (v - u_t) . grad log p_t|`` at each ``t`` of ``t_grid``.

    This is ``||L_t||_1`` of the error PDE (Sec. 3): its time integral, halved, bounds
    ``TV(p_t, p_hat_t)``. Also returns the plain divergence gap ``E|div v - div u_t|``, the
    velocity error ``E ||v - u_t||^2`` and the Monte-Carlo standard errors.

    Args:
        model: velocity field; gmm: the analytic target; t_grid: (T,) times in [0, 1].
        n_mc: samples of ``p_t`` per time; generator: torch.Generator.
        estimator: divergence of the model, ``"exact"`` or ``"hutchinson"`` (one Rademacher probe).

    Returns:
        dict of (T,) float64 arrays: ``t``, ``integrand``, ``integrand_se``, ``div_gap``,
        ``velocity_mse``.

    Raises:
        TypeError: ``gmm`` not a GaussianMixture2D, ``generator`` not a torch.Generator.
        ValueError: times outside [0, 1] or NaN, ``n_mc < 1``, unknown estimator, a
            :class:`VelocityMLP` of another dimension than ``gmm``.
    """
    tg = np.asarray(t_grid, dtype=np.float64).reshape(-1)
    if tg.size == 0 or not np.all(np.isfinite(tg) & (tg >= 0) & (tg <= 1)):
        raise ValueError("t_grid must be non-empty with finite entries in [0, 1]")
    if not isinstance(gmm, GaussianMixture2D):
        raise TypeError(f"gmm must be a GaussianMixture2D, got {type(gmm).__name__}")
    n_mc = _check_positive_int(n_mc, "n_mc")
    if estimator not in ("exact", "hutchinson"):
        raise ValueError(f"estimator must be 'exact' or 'hutchinson', got {estimator!r}")
    _check_generator(generator)
    if isinstance(model, VelocityMLP) and model.dim != gmm.d:
        raise ValueError(f"model is a VelocityMLP of dim {model.dim} but gmm has d = {gmm.d}")
    out = {k: np.empty(tg.size) for k in ("integrand", "integrand_se", "div_gap", "velocity_mse")}
    dev = _model_device(model)
    for i, t in enumerate(tg):
        x = gmm.sample_path(n_mc, float(t), generator)
        xd, tv = x.to(dev), torch.full((n_mc,), float(t), device=dev)
        if estimator == "exact":
            dv, v = divergence_exact(model, xd, tv, return_velocity=True)
        else:
            dv, v = divergence_hutchinson(model, xd, tv, 1, generator=generator)
        dv, v = dv.cpu(), v.cpu()
        u = gmm.marginal_velocity(x, t)
        du = gmm.marginal_divergence(x, t)
        s = gmm.marginal_score(x, t)
        r = (dv.double() - du + ((v.double() - u) * s).sum(1)).abs()
        out["integrand"][i] = float(r.mean())
        out["integrand_se"][i] = float(r.std() / math.sqrt(n_mc))
        out["div_gap"][i] = float((dv.double() - du).abs().mean())
        out["velocity_mse"][i] = float(((v.double() - u) ** 2).sum(1).mean())
    return {"t": tg, **out}


def model_density_grid(model: VFn, lim: float = 4.0, n: int = 100, t1: float = 1.0, n_steps: int = 50,
                       chunk: int = 4096) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Learned density ``p_hat_{t1}`` on an ``n x n`` grid over ``[-lim, lim]^2`` (exact divergence).

    Returns:
        ``(xs (n,), ys (n,), density (n, n))`` with ``density[j, i] = p_hat(xs[i], ys[j])``.

    Raises:
        ValueError: ``lim`` not finite and > 0, ``n < 2``, ``chunk < 1``, ``n_steps < 1``,
            ``t1`` outside (0, 1], a :class:`VelocityMLP` that is not 2-D.
    """
    if isinstance(lim, bool) or not (isinstance(lim, (int, float)) and math.isfinite(lim) and lim > 0):
        raise ValueError(f"lim must be a finite number > 0, got {lim!r}")
    n = _check_positive_int(n, "n")
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    chunk = _check_positive_int(chunk, "chunk")
    if isinstance(model, VelocityMLP) and model.dim != 2:
        raise ValueError(f"model must be 2-D for a density grid, got a VelocityMLP of dim {model.dim}")
    xs = np.linspace(-lim, lim, n)
    X, Y = np.meshgrid(xs, xs)
    pts = torch.tensor(np.stack([X.ravel(), Y.ravel()], 1), dtype=torch.float32, device=_model_device(model))
    logs = [log_likelihood(model, pts[i:i + chunk], n_steps, exact=True, t1=t1).cpu() for i in range(0, len(pts), chunk)]
    return xs, xs, torch.exp(torch.cat(logs)).double().numpy().reshape(n, n)


def _model_device(model: Any) -> torch.device:
    """The device of an nn.Module's parameters (CPU for plain callables)."""
    if isinstance(model, nn.Module):
        for p in model.parameters():
            return p.device
    return torch.device("cpu")


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def grid_tv(density_a: Any, density_b: Any, cell_area: float) -> float:
    """``1/2 sum |a - b| * cell_area``: TV distance of two densities tabulated on the same grid.

    Raises:
        ValueError: shapes differ, a density is negative or not finite, or ``cell_area <= 0``.
    """
    a, b = np.asarray(density_a, dtype=np.float64), np.asarray(density_b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"density_a and density_b must share a shape, got {a.shape} and {b.shape}")
    for name, arr in (("density_a", a), ("density_b", b)):
        if not np.all(np.isfinite(arr)) or (arr < 0).any():
            raise ValueError(f"{name} must be finite and non-negative")
    if not cell_area > 0:
        raise ValueError(f"cell_area must be > 0, got {cell_area!r}")
    return float(0.5 * np.abs(a - b).sum() * cell_area)


def _hist2(a: Any, bins: int, range_: tuple[tuple[float, float], ...]) -> np.ndarray:
    a = np.asarray(a.detach().cpu() if isinstance(a, Tensor) else a, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 2 or a.shape[0] < 1:
        raise ValueError(f"samples must have shape (n, 2) with n >= 1, got {a.shape}")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ValueError(f"bins must be a positive int, got {bins!r}")
    h, _, _ = np.histogram2d(a[:, 0], a[:, 1], bins=bins, range=range_)
    return h / max(len(a), 1)


def hist_tv(a: Any, b: Any, bins: int = 200, range: tuple = ((-5, 5), (-5, 5))) -> float:
    """TV between two 2-D sample sets via histograms (official: 200 x 200 on [-5, 5]^2).

    Mass outside ``range`` is counted in neither histogram (both are normalised by sample count).

    Raises:
        ValueError: samples not (n, 2) with n >= 1, ``bins < 1``.
    """
    return float(0.5 * np.abs(_hist2(a, bins, range) - _hist2(b, bins, range)).sum())


def hist_kl(a: Any, b: Any, bins: int = 200, range: tuple = ((-5, 5), (-5, 5)), eps: float = 1e-10) -> float:
    """``KL(P_a || P_b)`` of 2-D histograms, with ``eps`` added to empty bins of ``P_b``.

    Raises:
        ValueError: samples not (n, 2) with n >= 1, ``bins < 1``, ``eps <= 0``.
    """
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps!r}")
    pa, pb = _hist2(a, bins, range), _hist2(b, bins, range)
    pa, pb = pa / pa.sum(), (pb + eps) / (pb + eps).sum()
    m = pa > 0
    return float((pa[m] * np.log(pa[m] / pb[m])).sum())


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def checkerboard(n: int, generator: torch.Generator | None = None) -> Tensor:
    """(n, 2) float32 draws of the official 2-D checkerboard (8 squares on [-2, 2]^2, / 0.45).

    Raises:
        ValueError: ``n < 1``.
    """
    n = _check_positive_int(n, "n")
    _check_generator(generator)
    x1 = torch.rand(n, generator=generator) * 4 - 2
    x2 = torch.rand(n, generator=generator) - torch.randint(0, 2, (n,), generator=generator) * 2
    x2 = x2 + torch.floor(x1) % 2
    return (torch.stack([x1, x2], 1) / 0.45).float()


def _lorenz_rhs(rho: float, sigma: float, beta: float, scale: float):
    def rhs(_t, z):
        x = scale * z.reshape(-1, 3)
        dz = np.stack([sigma * (x[:, 1] - x[:, 0]), x[:, 0] * (rho - x[:, 2]) - x[:, 1],
                       x[:, 0] * x[:, 1] - beta * x[:, 2]], 1)
        return (dz / scale).ravel()
    return rhs


def _fhn_rhs(a=(-0.025794, -0.025794), b=(0.0065, 0.0135), c=(0.02, 0.02), k=0.128, coupling=1.0):
    a, b, c = (np.asarray(v)[None] for v in (a, b, c))

    def rhs(_t, z):
        z = z.reshape(-1, 4) / 5.0
        xs, ys = z[:, :2], z[:, 2:]
        xdot = xs * (a - xs) * (xs - 1) - ys + k * coupling * (xs[:, ::-1] - xs)
        ydot = b * xs - c * ys
        return (np.concatenate([xdot, ydot], 1) * 5.0).ravel()
    return rhs


def _trajectories(rhs, z0: np.ndarray, dt: float, n_keep: int, n_drop: int) -> np.ndarray:
    from scipy.integrate import solve_ivp

    n, dim = z0.shape
    ts = dt * np.arange(n_drop + n_keep)
    sol = solve_ivp(rhs, (0.0, ts[-1]), z0.ravel(), t_eval=ts, rtol=1e-6, atol=1e-8, method="RK45")
    if not sol.success:  # pragma: no cover - solver failure
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return sol.y.reshape(n, dim, -1).transpose(0, 2, 1)[:, n_drop:].astype(np.float32)


def _check_trajectory_args(n: int, T: int, rng: Any, dt: float, n_drop: int) -> tuple[int, int, np.random.Generator]:
    n, T = _check_positive_int(n, "n"), _check_positive_int(T, "T")
    if n_drop < 0 or not dt > 0:
        raise ValueError("n_drop must be >= 0 and dt > 0")
    return n, T, rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def lorenz_trajectories(n: int, T: int = 60, rng: Any = 0, *, dt: float = 0.1, n_drop: int = 30,
                        rho: float = 28.0, sigma: float = 10.0, beta: float = 8.0 / 3.0,
                        rescaling: float = 20.0) -> np.ndarray:
    """(n, T, 3) float32 Lorenz trajectories in the official scaled coordinates ``z = x / 20``.

    Initial states ``z0 ~ N(0, I_3)``; integrated with ``scipy.integrate.solve_ivp`` (RK45,
    rtol 1e-6), sampled every ``dt``, the first ``n_drop`` samples dropped (official: dt 0.1,
    90 steps, 30 dropped -> T = 60).

    Raises:
        ValueError: ``n`` or ``T`` < 1, ``n_drop < 0``, ``dt <= 0``.
    """
    n, T, g = _check_trajectory_args(n, T, rng, dt, n_drop)
    z0 = g.standard_normal((n, 3))
    return _trajectories(_lorenz_rhs(rho, sigma, beta, rescaling), z0, dt, T, n_drop)


def fitzhugh_nagumo_trajectories(n: int, T: int = 60, rng: Any = 0, *, dt: float = 6.0,
                                 n_drop: int = 250) -> np.ndarray:
    """(n, T, 4) float32 coupled FitzHugh-Nagumo trajectories (official parameters, state x 5).

    Initial states ``0.2 N(0, I_4)``; ``solve_ivp`` RK45; every ``dt`` = 6 time units, first
    ``n_drop`` = 250 samples dropped (official config: 310 steps -> T = 60).

    Raises:
        ValueError: ``n`` or ``T`` < 1, ``n_drop < 0``, ``dt <= 0``.
    """
    n, T, g = _check_trajectory_args(n, T, rng, dt, n_drop)
    z0 = 0.2 * g.standard_normal((n, 4))
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
        """From (n, T, dim) trajectories (n >= 2); raises ValueError for another shape or NaN/inf."""
        arr = np.asarray(traj, dtype=np.float32)
        if arr.ndim != 3 or arr.shape[0] < 2 or min(arr.shape) < 1 or not np.all(np.isfinite(arr)):
            raise ValueError(f"traj must be a finite (n, T, dim) array with n >= 2, got shape {arr.shape}")
        flat = torch.tensor(np.asarray(traj, dtype=np.float32).reshape(len(traj), -1))
        mean, std = flat.mean(0), flat.std(0).clamp_min(1e-6)
        return cls((flat - mean) / std, mean, std)

    def __call__(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        idx = torch.randint(0, self.X.shape[0], (n,), generator=generator)
        return self.X[idx]

    def log_det_std(self) -> float:
        """``sum log std``: subtract from a standardised-space log-density to get raw units."""
        return float(torch.log(self.std).sum())
