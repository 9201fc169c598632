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
``(B,)``, divergences and log-densities ``(B,)``. Random draws come from ``rng``, a
``torch.Generator`` (``None``: torch's global generator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor, nn

from icml25.checks import (
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_tensor,
    check_torch_generator,
)

from .defaults import DEFAULTS

__all__ = [
    "SCHEDULES",
    "FDM_VARIANTS",
    "ESTIMATORS",
    "PROBE_DISTS",
    "PathSample",
    "affine_path",
    "VelocityMLP",
    "divergence_exact",
    "divergence_hutchinson",
    "cfm_loss",
    "divergence_residual",
    "divergence_matching_loss",
    "fdm_loss",
    "sample_ode",
    "log_likelihood",
]

SCHEDULES: tuple[str, ...] = ("cond_ot", "linear_vp")
FDM_VARIANTS: tuple[str, ...] = ("derived", "sigma_l2", "released_2d", "inv_rate_l1")
ESTIMATORS: tuple[str, ...] = ("exact", "hutchinson")
PROBE_DISTS: tuple[str, ...] = ("rademacher", "gaussian")
_NORMS: tuple[str, ...] = ("l1", "l2")
_WEIGHTS: tuple[str | None, ...] = (None, "sigma", "inv_rate")

VFn = Callable[[Tensor, Tensor], Tensor]


# --------------------------------------------------------------------------------------
# The chapter's own argument rules, built from icml25.checks (public boundary only)
# --------------------------------------------------------------------------------------


def _torch_tensor(x: Any, name: str, **constraints: Any) -> Tensor:
    """``check_tensor(x, name, **constraints)`` for an argument that must already be a tensor.

    ``check_tensor`` converts arrays; the torch paths here differentiate through their inputs and
    keep them on their device, so a NumPy array is refused (``TypeError``) rather than copied.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return check_tensor(x, name, **constraints)


def _check_pair(x0: Tensor, x1: Tensor, n0: str = "x0", n1: str = "x1") -> None:
    """Source and data points that are paired row by row: same shape, dtype and device."""
    if x0.shape != x1.shape:
        raise ValueError(
            f"{n0} and {n1} must have the same shape, got {tuple(x0.shape)} and {tuple(x1.shape)}"
        )
    if x0.dtype != x1.dtype:
        raise TypeError(
            f"{n0} and {n1} must have the same dtype, got {x0.dtype} and {x1.dtype}"
        )
    if x0.device != x1.device:
        raise ValueError(
            f"{n0} and {n1} must be on the same device, got {x0.device} and {x1.device}"
        )


def _check_model(model: Any, x: Tensor, name: str = "model") -> None:
    """``model`` is callable; a :class:`VelocityMLP` must match ``x``'s dimension, dtype and device."""
    if not callable(model):
        raise TypeError(
            f"{name} must be a callable (x (B, d), t (B,)) -> (B, d), got {type(model).__name__}"
        )
    if isinstance(model, VelocityMLP):
        if model.dim != x.shape[1]:
            raise ValueError(
                f"{name} is a VelocityMLP of dim {model.dim} but the points have d = {x.shape[1]}"
            )
        p = model.linears[0].weight
        if p.dtype != x.dtype:
            raise TypeError(
                f"{name}'s weights are {p.dtype} but the points are {x.dtype}; cast one of them"
            )
        if p.device != x.device:
            raise ValueError(
                f"{name} is on {p.device} but the points are on {x.device}"
            )


def _check_times(
    t: Any, batch: int, name: str = "t", *, allow_one: bool = True
) -> Tensor:
    """(batch,) times of the flow, in [0, 1] (in [0, 1) where ``sigma_t`` must stay > 0)."""
    t = _torch_tensor(t, name, shape=(batch,), finite=False, floating=False)
    if t.numel() and not bool((torch.isfinite(t) & (t >= 0) & (t <= 1)).all()):
        raise ValueError(
            f"{name} must lie in [0, 1]; got min {float(t.min()):.4g}, max {float(t.max()):.4g}"
        )
    if not allow_one and bool((t >= 1).any()):
        raise ValueError(
            f"{name} must be < 1 here (sigma_t = 0 at t = 1 makes the score infinite)"
        )
    return t


def _check_fdm_options(
    estimator: Any, variant: Any, schedule: Any, n_probes: Any, dist: Any
) -> int:
    """The options of an FDM loss (:func:`fdm_loss`); returns ``n_probes`` as an int."""
    check_choice(estimator, "estimator", ESTIMATORS)
    check_choice(variant, "variant", FDM_VARIANTS)
    check_choice(schedule, "schedule", SCHEDULES)
    check_choice(dist, "dist", PROBE_DISTS)
    return check_int(n_probes, "n_probes", low=1)


# --------------------------------------------------------------------------------------
# Affine probability paths (Sec. 2 of the paper; Lipman et al. 2023)
# --------------------------------------------------------------------------------------


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
    # linear_vp: alpha = t, sigma = sqrt(1 - t^2)  (flow_matching.LinearVPScheduler)
    s = torch.sqrt(1.0 - t**2)
    return t, s, torch.ones_like(t), -t / s


def affine_path(
    x0: Tensor, x1: Tensor, t: Tensor, schedule: str = "cond_ot"
) -> PathSample:
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
    x0 = _torch_tensor(x0, "x0", ndim=2)
    x1 = _torch_tensor(x1, "x1", ndim=2)
    _check_pair(x0, x1)
    t = _check_times(t, x0.shape[0])
    check_choice(schedule, "schedule", SCHEDULES)
    return _affine_path(x0, x1, t.to(x0.dtype), schedule)


def _affine_path(x0: Tensor, x1: Tensor, t: Tensor, schedule: str) -> PathSample:
    """The conditional path of Sec. 2: ``x_t = alpha_t x1 + sigma_t x0``,
    ``u_t = alpha_dot x1 + sigma_dot x0``, ``s_t = -(x_t - alpha_t x1) / sigma_t^2`` and
    ``div u_t = d sigma_dot / sigma``."""
    alpha, sigma, d_alpha, d_sigma = _schedule(t, schedule)
    a, s, da, ds = (z[:, None] for z in (alpha, sigma, d_alpha, d_sigma))
    xt = a * x1 + s * x0
    ut = da * x1 + ds * x0
    score = -(xt - a * x1) / s**2
    div_u = x0.shape[1] * d_sigma / sigma
    return PathSample(
        xt=xt,
        ut=ut,
        score=score,
        div_u=div_u,
        sigma_t=sigma,
        alpha_t=alpha,
        d_sigma_t=d_sigma,
        d_alpha_t=d_alpha,
        t=t,
        x0=x0,
        x1=x1,
    )


# --------------------------------------------------------------------------------------
# The velocity network (shared interface with kernels/flow_divergence.py)
# --------------------------------------------------------------------------------------

_ACTS = {"swish": nn.SiLU, "silu": nn.SiLU, "tanh": nn.Tanh}


class VelocityMLP(nn.Module):
    """The velocity field ``v_theta(x, t)``: an MLP on ``concat([x, t])`` (official 2-D model).

    Architecture (the contract of ``icml25.kernels.flow_divergence``): ``Linear(d+1, hidden) ->
    act -> [Linear(hidden, hidden) -> act] x (depth - 1) -> Linear(hidden, d)``; ``depth + 1``
    ``nn.Linear`` layers in ``self.linears`` (in order), no activation after the last one.
    The official checkerboard model is ``hidden=512, depth=4`` with Swish (= SiLU):
    ``DEFAULTS.model``.

    Args:
        dim: data dimension ``d >= 1``.
        hidden: hidden width.
        depth: number of hidden layers (>= 1).
        act: ``"swish"`` (alias ``"silu"``; what the fused kernel supports) or ``"tanh"``.

    Raises:
        TypeError: a size is not an integer.
        ValueError: non-positive sizes or an unknown activation.
    """

    def __init__(
        self, dim: int, hidden: int = 128, depth: int = 3, act: str = DEFAULTS.model.act
    ) -> None:
        super().__init__()
        dim, hidden, depth = (
            check_int(v, n, low=1)
            for v, n in ((dim, "dim"), (hidden, "hidden"), (depth, "depth"))
        )
        check_choice(act, "act", sorted(_ACTS))
        self.dim, self.hidden, self.depth = dim, hidden, depth
        self.act = "swish" if act == "silu" else act
        sizes = [dim + 1] + [hidden] * depth + [dim]
        self.linears = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])
        )
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
            raise ValueError(
                f"t must be a scalar or have shape ({x.shape[0]},), got {tuple(t.shape)}"
            )
        h = torch.cat([x, t.reshape(-1, 1).to(x.dtype)], dim=1)
        for layer in self.linears[:-1]:
            h = self._act(layer(h))
        return self.linears[-1](h)

    def linear_params(self) -> list[tuple[Tensor, Tensor]]:
        """[(weight (out, in), bias (out,)), ...] of every layer in order, detached float32.

        Raises:
            Nothing: it reads the module's own parameters.
        """
        return [
            (lin.weight.detach().float(), lin.bias.detach().float())
            for lin in self.linears
        ]


# --------------------------------------------------------------------------------------
# Divergence estimators (Sec. 4 of the paper; FFJORD's Hutchinson trick)
# --------------------------------------------------------------------------------------


def _prepare_x(x: Tensor) -> Tensor:
    return x if x.requires_grad else x.detach().requires_grad_(True)


def divergence_exact(
    v_fn: VFn,
    x: Tensor,
    t: Tensor,
    *,
    create_graph: bool = False,
    return_velocity: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
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
    x = _torch_tensor(x, "x", ndim=2)
    _check_times(t, x.shape[0])
    _check_model(v_fn, x, "v_fn")
    create_graph = check_bool(create_graph, "create_graph")
    return_velocity = check_bool(return_velocity, "return_velocity")
    with torch.enable_grad():
        xg = _prepare_x(x)
        v = v_fn(xg, t)
        div = _exact_div(v, xg, create_graph)
    if not create_graph:
        div, v = div.detach(), v.detach()
    return (div, v) if return_velocity else div


def _exact_div(v: Tensor, x: Tensor, create_graph: bool) -> Tensor:
    """``div v = sum_i d v_i / d x_i``, one vector-Jacobian product ``e_i^T (dv/dx)`` per coordinate."""
    div = torch.zeros(x.shape[0], dtype=v.dtype, device=v.device)
    d = x.shape[1]
    for i in range(d):
        g = torch.autograd.grad(
            v[:, i].sum(), x, create_graph=create_graph, retain_graph=True
        )[0]
        div = div + g[:, i]
    return div


def _probes(
    shape: tuple[int, ...], dist: str, rng: torch.Generator | None, like: Tensor
) -> Tensor:
    """Probes drawn on the generator's device (CPU by default), then moved to ``like``'s device."""
    dev = rng.device if rng is not None else like.device
    if dist == "rademacher":
        z = torch.randint(0, 2, shape, generator=rng, device=dev).to(like.dtype) * 2 - 1
    else:  # gaussian
        z = torch.randn(shape, generator=rng, device=dev, dtype=like.dtype)
    return z.to(like.device)


def divergence_hutchinson(
    v_fn: VFn,
    x: Tensor,
    t: Tensor,
    n_probes: int = 1,
    dist: str = "rademacher",
    *,
    rng: torch.Generator | None = None,
    create_graph: bool = False,
    return_probes: bool = False,
) -> tuple[Tensor, Tensor] | tuple[Tensor, Tensor, Tensor]:
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
        rng: torch.Generator for the probes (default: torch's global generator).
        create_graph: keep the graph for a second differentiation (training).
        return_probes: also return the probes, shape (n_probes, B, d).

    Returns:
        ``(div (B,), v (B, d))`` or ``(div, v, probes)``.

    Raises:
        TypeError / ValueError: as :func:`divergence_exact`, ``n_probes < 1``, unknown ``dist``,
        ``rng`` not a torch.Generator.
    """
    x = _torch_tensor(x, "x", ndim=2)
    _check_times(t, x.shape[0])
    _check_model(v_fn, x, "v_fn")
    n_probes = check_int(n_probes, "n_probes", low=1)
    check_choice(dist, "dist", PROBE_DISTS)
    check_torch_generator(rng, "rng")
    create_graph = check_bool(create_graph, "create_graph")
    with torch.enable_grad():
        xg = _prepare_x(x)
        v = v_fn(xg, t)
        z = _probes((n_probes, *x.shape), dist, rng, v)
        div = _hutch_div(v, xg, z, create_graph)
    if not create_graph:
        div, v = div.detach(), v.detach()
    return (div, v, z) if return_probes else (div, v)


def _hutch_div(v: Tensor, x: Tensor, z: Tensor, create_graph: bool) -> Tensor:
    """``div v ~ (1/K) sum_k z_k^T (dv/dx) z_k``: one vector-Jacobian product ``z_k^T (dv/dx)`` per probe."""
    acc = torch.zeros(x.shape[0], dtype=v.dtype, device=v.device)
    for k in range(z.shape[0]):
        g = torch.autograd.grad(
            (v * z[k]).sum(), x, create_graph=create_graph, retain_graph=True
        )[0]
        acc = acc + (g * z[k]).sum(dim=1)
    return acc / z.shape[0]


# --------------------------------------------------------------------------------------
# Losses (Sec. 3-4 of the paper; step 7 of the notes for the released variants)
# --------------------------------------------------------------------------------------


def cfm_loss(v: Tensor, ut: Tensor) -> Tensor:
    """Conditional flow matching loss ``mean_{b, i} (v - u_t(x | x1))^2`` (Lipman et al. 2023).

    The mean runs over the batch *and* the coordinates (``E ||v - u||^2 / d``), as in Meta's
    ``flow_matching`` examples and the official FDM 2-D code.

    Args:
        v: (B, d) predicted velocity; ut: (B, d) conditional target (any shape, the same for both).

    Returns:
        scalar tensor.

    Raises:
        TypeError: ``v`` or ``ut`` is not a floating torch tensor.
        ValueError: shapes differ, NaN/inf in ``v`` or ``ut``.
    """
    v = _torch_tensor(v, "v")
    ut = _torch_tensor(ut, "ut", shape=tuple(v.shape))
    return _cfm(v, ut)


def _cfm(v: Tensor, ut: Tensor) -> Tensor:
    """``L_CFM = mean_{b, i} (v_i(x_t, t) - u_t(x_t | x1)_i)^2``."""
    return ((v - ut) ** 2).mean()


def _residual_inputs(
    v: Any, div_v: Any, ut: Any, score: Any, div_u: Any, probe: Any
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor | None]:
    """The inputs of the conditional residual: (B, d) ``v, ut, score, probe`` and (B,) ``div_v,
    div_u``, exact shapes (no broadcasting: a (B, 1) ``div_v`` would silently give a (B, B) result)."""
    v = _torch_tensor(v, "v", ndim=2)
    shape, batch = tuple(v.shape), (v.shape[0],)
    ut, score = (
        _torch_tensor(ut, "ut", shape=shape),
        _torch_tensor(score, "score", shape=shape),
    )
    div_v, div_u = (
        _torch_tensor(div_v, "div_v", shape=batch),
        _torch_tensor(div_u, "div_u", shape=batch),
    )
    probe = None if probe is None else _torch_tensor(probe, "probe", shape=shape)
    return v, div_v, ut, score, div_u, probe


def divergence_residual(
    v: Tensor,
    div_v: Tensor,
    ut: Tensor,
    score: Tensor,
    div_u: Tensor,
    *,
    stopgrad_v: bool = False,
    probe: Tensor | None = None,
) -> Tensor:
    """Conditional residual ``div v - div u + (v - u) . s`` (B,), the integrand of L_DM.

    With ``probe`` (B, d) the target terms are "sliced" with the same probe as a Hutchinson
    ``div_v`` (official code): ``(z.s)(z.(v - u)) - (div_u / d) |z|^2``; unbiased because
    ``E[z z^T] = I``. ``stopgrad_v`` detaches ``v`` inside the score term (``freeze=True``).
    The math is :func:`_residual`.

    Args:
        v, ut, score: (B, d) model velocity, conditional velocity and conditional score.
        div_v, div_u: (B,) model and conditional divergences.
        stopgrad_v: detach ``v`` in the score term.
        probe: optional (B, d) Hutchinson probe.

    Returns:
        (B,) residual.

    Raises:
        TypeError: an input is not a floating torch tensor.
        ValueError: inconsistent shapes (no broadcasting), NaN/inf in an input.
    """
    v, div_v, ut, score, div_u, probe = _residual_inputs(
        v, div_v, ut, score, div_u, probe
    )
    return _residual(
        v, div_v, ut, score, div_u, check_bool(stopgrad_v, "stopgrad_v"), probe
    )


def _residual(
    v: Tensor,
    div_v: Tensor,
    ut: Tensor,
    score: Tensor,
    div_u: Tensor,
    stopgrad_v: bool,
    probe: Tensor | None,
) -> Tensor:
    """``r = div v - div u_t(x|x1) + (v - u_t(x|x1)) . s_t(x|x1)`` (Prop. "conditional divergence
    loss"); with a probe ``z``: ``div v + (z.s)(z.(v - u)) - (div u / d) |z|^2``."""
    vv = v.detach() if stopgrad_v else v
    if probe is None:
        return div_v - div_u + ((vv - ut) * score).sum(dim=1)
    d = v.shape[1]
    return (
        div_v
        + (probe * score).sum(1) * (probe * (vv - ut)).sum(1)
        - div_u / d * (probe**2).sum(1)
    )


def divergence_matching_loss(
    v: Tensor,
    div_v: Tensor,
    ut: Tensor,
    score: Tensor,
    div_u: Tensor,
    sigma_t: Tensor,
    norm: str = "l1",
    weight: str | None = None,
    stopgrad_v: bool = False,
    probe: Tensor | None = None,
) -> Tensor:
    """Divergence matching loss ``L_DM`` (the conditional bound of the TV source term).

    ``residual = div v - div u_t(x|x1) + (v - u_t(x|x1)) . s_t(x|x1)`` (see
    :func:`divergence_residual`), then ``mean(|w * residual|)`` (``norm="l1"``, the paper's
    derived loss) or ``mean((w * residual)^2)`` (``norm="l2"``, the released 2-D code), with
    weight ``w``: ``None`` (1, paper), ``"sigma"`` (``sigma_t``, released 2-D code) or
    ``"inv_rate"`` (``1 / |sigma_dot / sigma| / d``, released dynamics code).

    Args:
        v: (B, d) model velocity at ``x_t``; div_v: (B,) its divergence (exact or Hutchinson).
        ut, score: (B, d) conditional velocity and score; div_u: (B,) conditional divergence.
        sigma_t: (B,) path noise scale, > 0 (``sigma_t = 0`` at ``t = 1``, where the score is
            infinite).
        norm: ``"l1"`` or ``"l2"``.
        weight: ``None``, ``"sigma"`` or ``"inv_rate"``.
        stopgrad_v: detach ``v`` inside ``(v - u) . s`` (the code's ``freeze=True``).
        probe: optional (B, d) probe for the sliced (Hutchinson) form of the target terms.

    Returns:
        scalar tensor.

    Raises:
        TypeError: an input is not a floating torch tensor.
        ValueError: inconsistent shapes, NaN/inf in an input, ``sigma_t <= 0`` anywhere, unknown
            ``norm`` or ``weight``.
    """
    v, div_v, ut, score, div_u, probe = _residual_inputs(
        v, div_v, ut, score, div_u, probe
    )
    sigma_t = _torch_tensor(sigma_t, "sigma_t", shape=(v.shape[0],))
    if sigma_t.numel() and not bool((sigma_t > 0).all()):
        raise ValueError(
            f"sigma_t must be > 0 everywhere (the path's noise scale; sigma_t = 0 at t = 1 "
            f"makes the score infinite), got a minimum of {float(sigma_t.min())!r}"
        )
    check_choice(norm, "norm", _NORMS)
    check_choice(weight, "weight", _WEIGHTS)
    stopgrad_v = check_bool(stopgrad_v, "stopgrad_v")
    return _dm_loss(
        v, div_v, ut, score, div_u, sigma_t, norm, weight, stopgrad_v, probe
    )


def _dm_loss(
    v: Tensor,
    div_v: Tensor,
    ut: Tensor,
    score: Tensor,
    div_u: Tensor,
    sigma_t: Tensor,
    norm: str,
    weight: str | None,
    stopgrad_v: bool,
    probe: Tensor | None,
) -> Tensor:
    """``L_DM = mean |w r|`` (``l1``) or ``mean (w r)^2`` (``l2``) with ``w = 1``, ``sigma_t`` or
    ``1 / |sigma_dot / sigma| / d`` (``sigma_dot / sigma = div u / d``) and ``r`` of :func:`_residual`."""
    r = _residual(v, div_v, ut, score, div_u, stopgrad_v, probe)
    d = v.shape[1]
    if weight == "sigma":
        r = r * sigma_t
    # 1 / |sigma_dot / sigma| / d, with sigma_dot / sigma = div_u / d
    elif weight == "inv_rate":
        r = r / (div_u.abs() / d).clamp_min(1e-12) / d
    return r.abs().mean() if norm == "l1" else (r**2).mean()


_VARIANT_SETTINGS = {
    # variant: (norm, weight, stopgrad_v)
    "derived": ("l1", None, False),
    "sigma_l2": ("l2", "sigma", True),
    "released_2d": ("l2", "sigma", True),
    "inv_rate_l1": ("l1", "inv_rate", False),
}


def fdm_loss(
    model: VFn,
    x0: Tensor,
    x1: Tensor,
    t: Tensor,
    lam_cfm: float = DEFAULTS.training.lam_cfm,
    lam_div: float = DEFAULTS.training.lam_div,
    estimator: str = "exact",
    *,
    variant: str = "derived",
    schedule: str = "cond_ot",
    n_probes: int = 1,
    dist: str = "rademacher",
    rng: torch.Generator | None = None,
    return_parts: bool = False,
) -> Tensor | tuple[Tensor, dict[str, float]]:
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
        variant, schedule, n_probes, dist: see above.
        rng: torch.Generator for the probes (default: torch's global generator).
        return_parts: also return ``{"cfm": float, "div": float}``.

    Returns:
        scalar loss tensor (differentiable w.r.t. the model's parameters), or
        ``(loss, parts)`` with ``return_parts``.

    Raises:
        TypeError / ValueError: bad shapes, dtypes or devices, NaN/inf in the points, an empty
        batch, ``t`` outside [0, 1), negative lambdas, unknown estimator/variant/schedule/dist,
        ``n_probes < 1``, ``rng`` not a torch.Generator, a :class:`VelocityMLP` ``model``
        of another dimension or dtype.
    """
    x0 = _torch_tensor(x0, "x0", ndim=2)
    x1 = _torch_tensor(x1, "x1", ndim=2)
    _check_pair(x0, x1)
    if x0.shape[0] < 1:
        raise ValueError(
            "x0 and x1 must hold at least one point (B >= 1): the loss is a mean over the batch"
        )
    t = _check_times(t, x0.shape[0], allow_one=False)
    _check_model(model, x0)
    lam_cfm = check_real(lam_cfm, "lam_cfm", low=0)
    lam_div = check_real(lam_div, "lam_div", low=0)
    n_probes = _check_fdm_options(estimator, variant, schedule, n_probes, dist)
    check_torch_generator(rng, "rng")
    return_parts = check_bool(return_parts, "return_parts")
    return _fdm_loss(
        model,
        x0,
        x1,
        t.to(x0.dtype),
        lam_cfm,
        lam_div,
        estimator,
        variant,
        schedule,
        n_probes,
        dist,
        rng,
        return_parts,
    )


def _fdm_loss(
    model: VFn,
    x0: Tensor,
    x1: Tensor,
    t: Tensor,
    lam_cfm: float,
    lam_div: float,
    estimator: str,
    variant: str,
    schedule: str,
    n_probes: int,
    dist: str,
    rng: torch.Generator | None,
    return_parts: bool,
) -> Tensor | tuple[Tensor, dict[str, float]]:
    """``lam_cfm L_CFM + lam_div L_DM`` on the batch ``x_t = alpha_t x1 + sigma_t x0`` (Sec. 4);
    ``x_t`` is a leaf that requires grad and ``div v`` keeps its graph (``create_graph=True``)."""
    ps = _affine_path(x0, x1, t, schedule)
    if lam_div == 0.0:
        v = model(ps.xt, t)
        l_cfm = _cfm(v, ps.ut)
        loss = lam_cfm * l_cfm
        return (
            (loss, {"cfm": float(l_cfm.detach()), "div": 0.0}) if return_parts else loss
        )
    x = ps.xt.detach().requires_grad_(True)
    v = model(x, t)
    l_cfm = _cfm(v, ps.ut)
    if variant == "released_2d":
        l_div = _released_2d_term(v, x, ps, rng)
    else:
        norm, weight, stopgrad = _VARIANT_SETTINGS[variant]
        probe = None
        if estimator == "exact":
            div_v = _exact_div(v, x, create_graph=True)
        else:
            z = _probes((n_probes, *x.shape), dist, rng, v)
            div_v = _hutch_div(v, x, z, create_graph=True)
            # slice targets only with a single probe
            probe = z[0] if n_probes == 1 else None
        l_div = _dm_loss(
            v,
            div_v,
            ps.ut,
            ps.score,
            ps.div_u,
            ps.sigma_t,
            norm,
            weight,
            stopgrad,
            probe,
        )
    loss = lam_cfm * l_cfm + lam_div * l_div
    return (
        (loss, {"cfm": float(l_cfm.detach()), "div": float(l_div.detach())})
        if return_parts
        else loss
    )


def _released_2d_term(
    v: Tensor, x: Tensor, ps: PathSample, rng: torch.Generator | None
) -> Tensor:
    """``L_diff + L_der + mean((d (v - u))^2)`` of ``main_fm_2d.py`` (freeze=True)."""
    d = x.shape[1]
    s, u, sig = ps.score, ps.ut, ps.sigma_t[:, None]
    rate = (ps.div_u / d)[:, None]  # per-coordinate d_u_t = sigma_dot / sigma
    # L_diff: per-coordinate residual with grad_x(1^T v) in place of the divergence
    g1 = torch.autograd.grad(
        v, x, grad_outputs=torch.ones_like(v), create_graph=True, retain_graph=True
    )[0]
    l_diff = (((g1 + s * v.detach() - u * s - rate) * sig) ** 2).mean()
    # L_der: sigma-weighted squared Hutchinson-sliced residual, one Rademacher probe
    z = _probes((1, *x.shape), "rademacher", rng, v)
    div_v = _hutch_div(v, x, z, create_graph=True)
    r = _residual(v, div_v, u, s, ps.div_u, True, z[0]) * ps.sigma_t
    l_der = (r**2).mean() + ((d * (v - u)) ** 2).mean()
    return l_diff + l_der


# --------------------------------------------------------------------------------------
# Sampling and likelihood (continuous normalising flow; Chen et al. 2018, FFJORD)
# --------------------------------------------------------------------------------------


#: Elementary operations charged per solver or training step on top of the arithmetic,
#: for dispatching its torch calls (a step costs microseconds even on one point): it
#: makes a step count such as 10**12 too large even for a tiny model.
_STEP_OVERHEAD: float = 1e3

_EVALS_PER_STEP: dict[str, int] = {"euler": 1, "midpoint": 2, "rk4": 4}


def _model_flops(model: Any, d: int) -> float:
    """Estimated operations of one velocity evaluation per point: 2 x the parameters of an
    ``nn.Module`` (a dense network's multiply-adds), else ``d`` (a field given by a formula)."""
    if isinstance(model, nn.Module):
        n_params = sum(p.numel() for p in model.parameters())
        if n_params:
            return 2.0 * n_params
    return float(d)


def _check_solution(x: Tensor, what: str, n_steps: int) -> Tensor:
    """A fixed-step ODE solution is used only when finite (a diverging field gives NaN/inf)."""
    if not bool(torch.isfinite(x).all()):
        raise RuntimeError(
            f"{what}: the ODE solution is not finite (NaN or inf) after {n_steps} steps; "
            "the velocity field diverges along some trajectories (check the model or use "
            "more steps)"
        )
    return x


def sample_ode(
    model: VFn,
    x0: Tensor,
    n_steps: int = DEFAULTS.evaluation.ode_steps,
    method: str = "euler",
    *,
    t0: float = 0.0,
    t1: float = 1.0,
    return_path: bool = False,
) -> Tensor:
    """Integrate ``dx/dt = v(x, t)`` from ``t0`` to ``t1`` with fixed steps (no gradients).

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
        TooLargeError: ``n_steps`` so large that the work (``n_steps`` x evaluations per step x
            ``B`` x 2 x parameters) or, with ``return_path``, the path cannot fit.
        RuntimeError: the solution is not finite (the field diverges).
    """
    x0 = _torch_tensor(x0, "x0", ndim=2)
    _check_model(model, x0)
    n_steps = check_int(n_steps, "n_steps", low=1)
    check_choice(method, "method", tuple(_EVALS_PER_STEP))
    t0, t1 = check_real(t0, "t0", low=0, high=1), check_real(t1, "t1", low=0, high=1)
    return_path = check_bool(return_path, "return_path")
    B, d = x0.shape
    evals = n_steps * _EVALS_PER_STEP[method]
    check_budget(
        f"sample_ode(n_steps={n_steps})",
        n_bytes=(n_steps + 1) * x0.numel() * x0.element_size() if return_path else None,
        n_operations=evals * (B * _model_flops(model, d) + _STEP_OVERHEAD),
    )
    with torch.no_grad():
        out = _sample_ode(model, x0, n_steps, method, t0, t1, return_path)
    return _check_solution(out, "sample_ode", n_steps)


def _sample_ode(
    model: VFn,
    x0: Tensor,
    n_steps: int,
    method: str,
    t0: float,
    t1: float,
    return_path: bool,
) -> Tensor:
    """Fixed steps ``h = (t1 - t0) / n`` of Euler ``x += h v(x, t)``, midpoint or classical RK4."""
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


def log_likelihood(
    model: VFn,
    x1: Tensor,
    n_steps: int = DEFAULTS.evaluation.ode_steps,
    exact: bool = True,
    *,
    method: str = "euler",
    t1: float = 1.0,
    n_probes: int = 1,
    dist: str = "rademacher",
    rng: torch.Generator | None = None,
    use_kernel: bool = True,
) -> Tensor:
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
        n_probes, dist: Hutchinson settings.
        rng: torch.Generator for the Hutchinson probes (default: torch's global generator).
        use_kernel: allow the kernels dispatcher for the exact Euler case.

    Returns:
        (B,) log-density in nats (float32 or the model's dtype).

    Raises:
        TypeError / ValueError: bad shapes, NaN/inf in ``x1``, ``n_steps < 1``, unknown method or
        dist, ``n_probes < 1``, ``t1`` outside (0, 1], a :class:`VelocityMLP` of another
        dimension or dtype.
        TooLargeError: ``n_steps`` so large that the work (``n_steps`` x ``B`` x 2 x parameters x
            ``1 + 2 d`` for the exact divergence, ``1 + 2 n_probes`` for Hutchinson) cannot fit.
        RuntimeError: the solution is not finite (the field diverges).
    """
    x1 = _torch_tensor(x1, "x1", ndim=2)
    _check_model(model, x1)
    n_steps = check_int(n_steps, "n_steps", low=1)
    exact = check_bool(exact, "exact")
    check_choice(method, "method", ("euler", "midpoint"))
    t1 = check_real(t1, "t1", low=0, high=1, low_open=True)
    n_probes = check_int(n_probes, "n_probes", low=1)
    check_choice(dist, "dist", PROBE_DISTS)
    check_torch_generator(rng, "rng")
    use_kernel = check_bool(use_kernel, "use_kernel")
    B, d = x1.shape
    div_cost = 1 + 2 * (d if exact else n_probes)
    check_budget(
        f"log_likelihood(n_steps={n_steps})",
        n_operations=n_steps
        * (1 if method == "euler" else 2)
        * (B * _model_flops(model, d) * div_cost + _STEP_OVERHEAD),
    )
    if (
        exact
        and method == "euler"
        and t1 == 1.0
        and use_kernel
        and isinstance(model, VelocityMLP)
        and model.act == "swish"
    ):
        from icml25.kernels import flow_divergence

        # beyond the fused kernel's shared memory the torch path runs (on every device)
        if (
            model.dim <= flow_divergence.MAX_DIM
            and model.hidden <= flow_divergence.MAX_HIDDEN
        ):
            out = flow_divergence.euler_log_likelihood(
                model.linear_params(), x1.detach().float(), n_steps
            )
            return _check_solution(out.to(x1.device), "log_likelihood", n_steps)
    out = _log_likelihood_torch(
        model, x1, n_steps, exact, method, t1, n_probes, dist, rng
    )
    return _check_solution(out, "log_likelihood", n_steps)


def _log_likelihood_torch(
    model: VFn,
    x1: Tensor,
    n_steps: int,
    exact: bool,
    method: str,
    t1: float,
    n_probes: int,
    dist: str,
    rng: torch.Generator | None,
) -> Tensor:
    """``log p_hat_{t1}(x1) = log N(x(0); 0, I) - int_0^{t1} div v(x_t, t) dt``, integrating
    ``(x, l)`` backwards with ``x <- x - h v(x, t_k)``, ``l <- l + h div v(x, t_k)``, ``t_k = t1 - k h``
    (Euler; midpoint evaluates at ``x - h/2 v``, ``t_k - h/2``)."""
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
                z = _probes((n_probes, *xx.shape), dist, rng, v)
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
