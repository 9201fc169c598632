"""PARS: reward scaling with layer norm (RS-LN) and penalising infeasible actions (PA), on TD3+BC.

Kim et al., ICML 2025 (arXiv 2507.08761). The method as the chapter's paper note transcribes it
from a third-party re-implementation of the official JAX code (which could not be read here):

- critic ensemble ``Q_e``, ``e = 1..E``, MLPs with LayerNorm after every hidden linear layer,
  before the ReLU; a linear output layer;
- TD target ``y = c r + gamma (1 - d) min_{e in K} Q'_e(s', pi'(s') + eps)`` on scaled rewards,
  ``K`` a random k-subset, ``eps = clip(N(0, sigma^2), +-0.5)`` (policy smoothing), ``d`` the true
  terminals (time-outs are not terminals);
- PA: ``L_PA = E_{s, a_I} (Q_e(s, a_I) - Q_min)^2`` with every ``|a_I,i|`` in ``[U, 2U]``;
  critic loss ``L_TD + alpha L_PA``;
- actor (TD3+BC): ``beta ||pi(s) - a||^2 - Q(s, pi(s)) / mean|Q|``, Q the minimum over all members
  offline and the mean over ``k_actor`` random members online (reconstruction).

With ``layer_norm=False, c_reward=1, alpha=0, E=2, k_target=2, actor_reduce="first", beta=0.4``
the class is TD3+BC (Fujimoto & Gu 2021, whose ``alpha = 2.5`` is our ``1 / beta``).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.checks import (
    check_array,
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_rng,
    check_tensor,
)
from icml25.kernels import pars_kernels

__all__ = [
    "EnsembleCritic",
    "Actor",
    "sample_infeasible_actions",
    "q_min_from_data",
    "pars_critic_loss",
    "td3bc_actor_loss",
    "PARSConfig",
    "PARS",
    "extrapolation_probe",
    "TD3BC_FLAGS",
]

#: the flags that turn PARS into plain TD3+BC (Fujimoto & Gu's
#: alpha = 2.5 is beta = 0.4)
TD3BC_FLAGS = dict(
    layer_norm=False,
    c_reward=1.0,
    alpha=0.0,
    E=2,
    k_target=2,
    actor_reduce="first",
    beta=0.4,
)


class EnsembleCritic(nn.Module):
    """E independent MLP critics evaluated at once: ``Q(s, a) -> (E, B)``.

    Hidden layers ``relu(LN(W x + b))`` (LN before the ReLU, hidden layers only) through the fused
    kernel dispatcher :func:`icml25.kernels.pars_kernels.ensemble_layer`; the output layer is linear with a
    small uniform initialisation (+-3e-3).

    Args:
        state_dim, act_dim: input sizes (>= 1; ``state_dim`` may be 0 for an action-only critic).
        hidden: width; n_layers: number of hidden layers (>= 1); E: ensemble size (>= 1);
        layer_norm: LayerNorm on the hidden layers (PARS) or none (TD3+BC).

    Raises:
        TypeError / ValueError naming the argument; TooLargeError when the parameters (with their
        gradients, Adam moments and a target copy) cannot fit in memory.
    """

    def __init__(
        self,
        state_dim: int,
        act_dim: int,
        hidden: int = 256,
        n_layers: int = 2,
        E: int = 10,
        layer_norm: bool = True,
    ) -> None:
        super().__init__()
        self.state_dim = check_int(state_dim, "state_dim", low=0)
        self.act_dim = check_int(act_dim, "act_dim", low=1)
        self.hidden = check_int(hidden, "hidden", low=1)
        self.n_layers = check_int(n_layers, "n_layers", low=1)
        self.E = check_int(E, "E", low=1)
        self.layer_norm = check_bool(layer_norm, "layer_norm")
        sizes = [self.state_dim + self.act_dim] + [self.hidden] * self.n_layers
        n_params = self.E * (
            sum((i + 3) * o for i, o in zip(sizes[:-1], sizes[1:])) + self.hidden + 1
        )
        # parameters, gradients, two Adam moments and a target
        # copy: about 5 float32 copies
        check_budget(
            f"EnsembleCritic(hidden={self.hidden}, n_layers={self.n_layers}, E={self.E})",
            n_bytes=20.0 * n_params,
        )
        self.W = nn.ParameterList()
        self.b = nn.ParameterList()
        self.g = nn.ParameterList()
        self.beta = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = 1.0 / math.sqrt(fan_in)  # torch.nn.Linear's default range
            self.W.append(
                nn.Parameter(
                    torch.empty(self.E, fan_in, fan_out).uniform_(-bound, bound)
                )
            )
            self.b.append(
                nn.Parameter(torch.empty(self.E, fan_out).uniform_(-bound, bound))
            )
            self.g.append(
                nn.Parameter(torch.ones(self.E, fan_out), requires_grad=self.layer_norm)
            )
            self.beta.append(
                nn.Parameter(
                    torch.zeros(self.E, fan_out), requires_grad=self.layer_norm
                )
            )
        self.w_out = nn.Parameter(
            torch.empty(self.E, self.hidden).uniform_(-3e-3, 3e-3)
        )
        self.b_out = nn.Parameter(torch.empty(self.E).uniform_(-3e-3, 3e-3))

    def features(self, s: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """(E, B, hidden) last hidden features of ``(s, a)``; ``s`` (B, state_dim), ``a`` (B, act_dim)."""
        x = torch.cat([s, a], dim=-1) if self.state_dim else a
        h = x.unsqueeze(0).expand(self.E, *x.shape)
        for W, b, g, beta in zip(self.W, self.b, self.g, self.beta):
            h = pars_kernels.ensemble_layer(
                h, W, b, g, beta, layer_norm=self.layer_norm, validate=False
            )
        return h

    def forward(self, s: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """Q-values (E, B) of states ``s`` (B, state_dim) and actions ``a`` (B, act_dim).

        Both are float tensors of the parameters' dtype (float32) on the critic's device; NumPy
        arrays are converted. Raises TypeError / ValueError naming ``s`` or ``a`` (shape, dtype,
        NaN/inf)."""
        if not isinstance(a, torch.Tensor):
            a = check_tensor(a, "a", ndim=2)
        if not isinstance(s, torch.Tensor):
            s = check_tensor(s, "s", ndim=2)
        if a.ndim != 2 or a.shape[1] != self.act_dim:
            raise ValueError(
                f"a must have shape (B, {self.act_dim}), got {tuple(a.shape)}"
            )
        if self.state_dim and (s.ndim != 2 or s.shape != (a.shape[0], self.state_dim)):
            raise ValueError(
                f"s must have shape ({a.shape[0]}, {self.state_dim}), got {tuple(s.shape)}"
            )
        dt = self.w_out.dtype
        for name, t in (("a", a), ("s", s)) if self.state_dim else (("a", a),):
            if t.dtype != dt:
                raise TypeError(
                    f"{name} must have the critic's dtype {dt}, got {t.dtype}"
                )
        if not (
            torch.isfinite(a).all() and (not self.state_dim or torch.isfinite(s).all())
        ):
            raise ValueError("s and a must be finite")
        h = self.features(s, a)
        return torch.einsum("ebh,eh->eb", h, self.w_out) + self.b_out[:, None]


class Actor(nn.Module):
    """Deterministic policy ``pi(s) = max_action tanh(MLP(s))`` (TD3's actor).

    Args:
        state_dim, act_dim: sizes (>= 1); hidden: widths of the hidden layers; max_action: > 0.
    """

    def __init__(
        self,
        state_dim: int,
        act_dim: int,
        hidden: tuple[int, ...] = (256, 256),
        max_action: float = 1.0,
    ) -> None:
        super().__init__()
        self.state_dim = check_int(state_dim, "state_dim", low=1)
        self.act_dim = check_int(act_dim, "act_dim", low=1)
        self.max_action = check_real(max_action, "max_action", low=0.0, low_open=True)
        layers: list[nn.Module] = []
        prev = state_dim
        for h in hidden:
            layers += [nn.Linear(prev, check_int(h, "hidden", low=1)), nn.ReLU()]
            prev = h
        layers += [nn.Linear(prev, act_dim), nn.Tanh()]
        self.net = nn.Sequential(*layers)

    def forward(self, s: torch.Tensor) -> torch.Tensor:
        """Actions (B, act_dim) in ``[-max_action, max_action]`` for states (B, state_dim).

        Raises ValueError naming ``s`` when its shape is not (B, state_dim)."""
        if not isinstance(s, torch.Tensor):
            s = check_tensor(s, "s", ndim=2)
        if s.ndim != 2 or s.shape[1] != self.state_dim:
            raise ValueError(
                f"s must have shape (B, {self.state_dim}), got {tuple(s.shape)}"
            )
        return self.max_action * self.net(s)


def sample_infeasible_actions(
    B: int, act_dim: int, U: float, rng: np.random.Generator
) -> np.ndarray:
    """Infeasible actions for the PA loss: every coordinate uniform in ``[-2U, -U] u [U, 2U]``.

    The draws come from the counter-based sampler :func:`icml25.kernels.pars_kernels.infeasible_actions`
    keyed by one integer drawn from ``rng`` (reconstruction of the official sampler, unverified).

    Args:
        B: number of actions (>= 1); act_dim: dimension (>= 1); U: guard, > 1 (the box is [-1, 1]);
        rng: a NumPy Generator.

    Returns:
        (B, act_dim) float32 with every |a_i| in [U, 2U].

    Raises:
        TypeError: ``rng`` not a Generator. ValueError naming the argument: ``U <= 1``, ``B`` or ``act_dim`` < 1.
    """
    rng = check_rng(rng)
    U = check_real(U, "U", low=1.0, low_open=True)
    return pars_kernels.infeasible_actions(
        check_int(B, "B", low=1),
        check_int(act_dim, "act_dim", low=1),
        U,
        int(rng.integers(0, 2**63)),
    )


def q_min_from_data(r_min: float, c_reward: float, gamma: float) -> float:
    """``Q_min = c r_min / (1 - gamma)``, the value of collecting the smallest scaled reward forever.

    Our reading of the paper's Table 8 (Hopper: r_min = -0.166, c = 10, gamma = 0.99 gives -166);
    the relation is inferred, not quoted.

    Raises:
        ValueError naming the argument: ``c_reward <= 0``, ``gamma`` outside [0, 1), non-finite ``r_min``.
    """
    r_min = check_real(r_min, "r_min")
    c = check_real(c_reward, "c_reward", low=0.0, low_open=True)
    gamma = check_real(gamma, "gamma", low=0.0, high=1.0, high_open=True)
    return c * r_min / (1.0 - gamma)


def _td_loss(q: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``L_TD = (1/E) sum_e E_B (Q_e(s, a) - y)^2``; ``q`` (E, B), ``y`` (B,) (no gradient through ``y``)."""
    return ((q - y.detach()[None, :]) ** 2).mean(dim=1).sum() / q.shape[0]


def _pa_loss(q_inf: torch.Tensor, q_min: float) -> torch.Tensor:
    """``L_PA = (1/E) sum_e E_{s, a_I} (Q_e(s, a_I) - Q_min)^2``; ``q_inf`` (E, B) at infeasible actions."""
    return ((q_inf - q_min) ** 2).mean(dim=1).sum() / q_inf.shape[0]


def _actor_objective(
    q_pi: torch.Tensor, pi: torch.Tensor, a: torch.Tensor, beta: float
) -> torch.Tensor:
    """``L_pi = beta E ||pi(s) - a||^2 - E Q(s, pi(s)) / mean|Q|`` (TD3+BC with the Q term normalised
    by its detached mean magnitude, as the paper's actor; ``beta`` is the BC weight)."""
    lam = q_pi.abs().mean().detach().clamp_min(1e-6)
    return beta * ((pi - a) ** 2).sum(dim=1).mean() - q_pi.mean() / lam


def _to_torch(batch: dict, device: Any) -> dict[str, torch.Tensor]:
    return {
        k: torch.as_tensor(np.asarray(v), dtype=torch.float32, device=device)
        for k, v in batch.items()
    }


def _check_batch_tensors(
    batch: Any, act_dim: int, state_dim: int | None = None
) -> dict[str, torch.Tensor]:
    if not hasattr(batch, "keys"):
        raise TypeError(
            f"batch must be a mapping of transition fields, got {type(batch).__name__}"
        )
    need = ("observations", "actions", "rewards", "next_observations", "terminals")
    missing = [k for k in need if k not in batch]
    if missing:
        raise ValueError(f"batch lacks the fields {missing}")
    out = {
        k: check_tensor(
            batch[k],
            f"batch['{k}']",
            ndim=2 if k in ("observations", "actions", "next_observations") else 1,
        )
        for k in need
    }
    B = out["observations"].shape[0]
    if B == 0:
        raise ValueError("batch must hold at least one transition, got 0 rows")
    for k, v in out.items():
        if v.shape[0] != B:
            raise ValueError(
                f"batch['{k}'] has {v.shape[0]} rows, batch['observations'] has {B}"
            )
    for k in ("observations", "next_observations"):
        if state_dim is not None and out[k].shape[1] != state_dim:
            raise ValueError(
                f"batch['{k}'] must have {state_dim} columns, got {out[k].shape[1]}"
            )
    if out["next_observations"].shape[1] != out["observations"].shape[1]:
        raise ValueError(
            "batch['next_observations'] must have the width of batch['observations']"
        )
    if not bool(((out["terminals"] == 0) | (out["terminals"] == 1)).all()):
        raise ValueError(
            "batch['terminals'] must hold 0 or 1 (true terminals only; time-outs are not terminals)"
        )
    if out["actions"].shape[1] != act_dim:
        raise ValueError(
            f"batch['actions'] must have {act_dim} columns, got {out['actions'].shape[1]}"
        )
    if float(out["actions"].abs().max()) > 1.0 + 1e-6:
        raise ValueError("batch['actions'] must lie in the action box [-1, 1]")
    return out


def pars_critic_loss(
    batch: dict,
    critic: EnsembleCritic,
    critic_tgt: EnsembleCritic,
    actor_tgt: Actor,
    c_reward: float,
    alpha: float,
    q_min: float,
    k_target: int,
    policy_noise: float,
    U: float,
    rng: np.random.Generator,
    gamma: float = 0.99,
    noise_clip: float = 0.5,
) -> tuple[torch.Tensor, dict]:
    """The PARS critic loss ``L_TD + alpha L_PA`` on one batch (Sec. 4; reconstruction, see module).

    Args:
        batch: torch tensors ``observations`` (B, ds), ``actions`` (B, da) in [-1, 1], ``rewards``
            (B,), ``next_observations`` (B, ds), ``terminals`` (B,) (true terminals only).
        critic, critic_tgt: the ensemble and its Polyak copy; actor_tgt: the target actor.
        c_reward: reward scale (> 0); alpha: PA weight (>= 0; 0 switches PA off);
        q_min: the PA target; k_target: subset size in [1, E]; policy_noise: sigma of the target
        smoothing (>= 0); U: infeasible guard (> 1); rng: NumPy Generator (subset, noise, a_I);
        gamma: discount; noise_clip: smoothing clip.

    Returns:
        ``(loss, info)``: a scalar tensor with gradient into ``critic``, and floats ``td``, ``pa``,
        ``q_data`` (mean Q at dataset actions) and ``q_infeasible`` (mean Q at a_I).

    Raises:
        ValueError / TypeError naming the argument: ``c_reward <= 0``, ``alpha < 0``, ``k_target > E``,
        ``U <= 1``, actions outside the box, shape mismatches, ``rng`` not a Generator.
    """
    rng = check_rng(rng)
    for name, net, cls in (
        ("critic", critic, EnsembleCritic),
        ("critic_tgt", critic_tgt, EnsembleCritic),
        ("actor_tgt", actor_tgt, Actor),
    ):
        if not isinstance(net, cls):
            raise TypeError(
                f"{name} must be an {cls.__name__}, got {type(net).__name__}"
            )
    if (critic_tgt.E, critic_tgt.state_dim, critic_tgt.act_dim) != (
        critic.E,
        critic.state_dim,
        critic.act_dim,
    ):
        raise ValueError(
            f"critic_tgt must match critic (E, state_dim, act_dim) = {(critic.E, critic.state_dim, critic.act_dim)}, "
            f"got {(critic_tgt.E, critic_tgt.state_dim, critic_tgt.act_dim)}"
        )
    if (actor_tgt.state_dim, actor_tgt.act_dim) != (critic.state_dim, critic.act_dim):
        raise ValueError(
            f"actor_tgt must map {critic.state_dim} state columns to {critic.act_dim} actions, "
            f"got {(actor_tgt.state_dim, actor_tgt.act_dim)}"
        )
    c = check_real(c_reward, "c_reward", low=0.0, low_open=True)
    alpha = check_real(alpha, "alpha", low=0.0)
    q_min = check_real(q_min, "q_min")
    k = check_int(k_target, "k_target", low=1, high=critic.E)
    sigma = check_real(policy_noise, "policy_noise", low=0.0)
    U = check_real(U, "U", low=1.0, low_open=True)
    gamma = check_real(gamma, "gamma", low=0.0, high=1.0)
    clip = check_real(noise_clip, "noise_clip", low=0.0)
    b = _check_batch_tensors(batch, critic.act_dim, critic.state_dim)
    return _critic_step_loss(
        b, critic, critic_tgt, actor_tgt, c, alpha, q_min, k, sigma, U, rng, gamma, clip
    )


def _critic_step_loss(
    b: dict,
    critic: EnsembleCritic,
    critic_tgt: EnsembleCritic,
    actor_tgt: Actor,
    c: float,
    alpha: float,
    q_min: float,
    k: int,
    sigma: float,
    U: float,
    rng: np.random.Generator,
    gamma: float,
    clip: float,
) -> tuple[torch.Tensor, dict]:
    s, a, r, s2, d = (
        b[n]
        for n in (
            "observations",
            "actions",
            "rewards",
            "next_observations",
            "terminals",
        )
    )
    B, da = a.shape
    with torch.no_grad():
        eps = torch.as_tensor(
            np.clip(sigma * rng.standard_normal((B, da)), -clip, clip),
            dtype=torch.float32,
            device=a.device,
        )
        a2 = (actor_tgt(s2) + eps).clamp(-1.0, 1.0)
        # the random subset K
        members = np.sort(rng.choice(critic.E, size=k, replace=False))
        y = pars_kernels.td_target(critic_tgt(s2, a2), members, r, d, c, gamma)
    q = critic(s, a)
    loss = _td_loss(q, y)
    info = {"td": float(loss.detach()), "q_data": float(q.detach().mean())}
    a_inf = torch.as_tensor(sample_infeasible_actions(B, da, U, rng), device=a.device)
    if alpha > 0:
        q_inf = critic(s, a_inf)
        pa = _pa_loss(q_inf, q_min)
        loss = loss + alpha * pa
        info.update(pa=float(pa.detach()), q_infeasible=float(q_inf.detach().mean()))
    else:
        with torch.no_grad():
            q_inf = critic(s, a_inf)
        info.update(pa=float(_pa_loss(q_inf, q_min)), q_infeasible=float(q_inf.mean()))
    return loss, info


def td3bc_actor_loss(
    state: torch.Tensor,
    action: torch.Tensor,
    actor: Actor,
    critic: EnsembleCritic,
    beta: float,
    reduce: str = "min",
    k_actor: int = 2,
    rng: np.random.Generator | None = None,
) -> torch.Tensor:
    """The TD3+BC actor loss of PARS: ``beta ||pi(s) - a||^2 - Q(s, pi(s)) / mean|Q|``.

    Args:
        state: (B, ds) tensor; action: (B, da) dataset actions in [-1, 1].
        actor, critic: the networks; beta: BC weight (>= 0).
        reduce: how the members make one Q: ``"min"`` (offline, all members), ``"mean_k"`` (online:
            the mean of ``k_actor`` random members, needs ``rng``) or ``"first"`` (TD3+BC's Q1).

    Returns:
        A scalar tensor with gradient into ``actor``.

    Raises:
        ValueError / TypeError naming the argument.
    """
    beta = check_real(beta, "beta", low=0.0)
    reduce = check_choice(reduce, "reduce", ("min", "mean_k", "first"))
    if not isinstance(actor, Actor):
        raise TypeError(f"actor must be an Actor, got {type(actor).__name__}")
    if not isinstance(critic, EnsembleCritic):
        raise TypeError(
            f"critic must be an EnsembleCritic, got {type(critic).__name__}"
        )
    state = check_tensor(state, "state", ndim=2)
    if state.shape[0] == 0:
        raise ValueError("state must hold at least one row, got 0")
    if state.shape[1] != critic.state_dim or actor.state_dim != critic.state_dim:
        raise ValueError(
            f"state must have {critic.state_dim} columns (the critic's and actor's state_dim), "
            f"got {state.shape[1]}"
        )
    action = check_tensor(action, "action", shape=(state.shape[0], critic.act_dim))
    if float(action.abs().max()) > 1.0 + 1e-6:
        raise ValueError("action must lie in the action box [-1, 1]")
    if reduce == "mean_k":
        rng = check_rng(rng)
        k_actor = check_int(k_actor, "k_actor", low=1, high=critic.E)
    return _actor_step_loss(state, action, actor, critic, beta, reduce, k_actor, rng)


def _actor_step_loss(
    s: torch.Tensor,
    a: torch.Tensor,
    actor: Actor,
    critic: EnsembleCritic,
    beta: float,
    reduce: str,
    k_actor: int,
    rng: np.random.Generator | None,
) -> torch.Tensor:
    pi = actor(s)
    q_all = critic(s, pi)
    if reduce == "min":
        q_pi = q_all.min(dim=0).values
    elif reduce == "first":
        q_pi = q_all[0]
    else:
        q_pi = q_all[
            torch.as_tensor(rng.choice(critic.E, size=k_actor, replace=False))
        ].mean(dim=0)
    return _actor_objective(q_pi, pi, a, beta)


@dataclass(frozen=True)
class PARSConfig:
    """Settings of one :class:`PARS` agent; flags make TD3+BC, TD3+BC+LN, RS-LN and PARS one class.

    ``layer_norm`` (LN), ``c_reward`` (RS), ``alpha`` (PA, 0 = off), ``E``/``k_target`` (ensemble).
    The rest are TD3 settings (``DEFAULTS`` holds the paper's). ``online_beta`` is the BC weight
    of fine-tuning (the released code reportedly passes the offline ``beta`` instead; we use
    ``online_beta``); ``online_reduce`` the actor's Q online.
    """

    state_dim: int
    act_dim: int
    hidden: int = 256
    n_layers: int = 2
    E: int = 10
    k_target: int = 2
    layer_norm: bool = True
    c_reward: float = 10.0
    alpha: float = 1e-3
    q_min: float = 0.0
    U: float = 100.0
    beta: float = 0.01
    gamma: float = 0.99
    tau: float = 0.005
    lr: float = 3e-4
    batch_size: int = 256
    policy_noise: float = 0.2
    noise_clip: float = 0.5
    policy_freq: int = 2
    actor_hidden: tuple[int, ...] = (256, 256)
    actor_reduce: str = "min"
    online_beta: float = 0.0
    online_reduce: str = "mean_k"
    k_actor: int = 2
    expl_noise: float = 0.1
    offline_ratio: float = 0.5
    device: str = "cpu"

    def with_flags(self, **flags: Any) -> "PARSConfig":
        """A copy with some fields changed (``cfg.with_flags(**TD3BC_FLAGS)``)."""
        return replace(self, **flags)


def _check_config(cfg: Any) -> PARSConfig:
    if not isinstance(cfg, PARSConfig):
        raise TypeError(f"cfg must be a PARSConfig, got {type(cfg).__name__}")
    check_int(cfg.state_dim, "cfg.state_dim", low=1)
    check_int(cfg.act_dim, "cfg.act_dim", low=1)
    E = check_int(cfg.E, "cfg.E", low=1)
    check_int(cfg.k_target, "cfg.k_target", low=1, high=E)
    check_int(cfg.k_actor, "cfg.k_actor", low=1, high=E)
    check_real(cfg.c_reward, "cfg.c_reward", low=0.0, low_open=True)
    check_real(cfg.alpha, "cfg.alpha", low=0.0)
    check_real(cfg.U, "cfg.U", low=1.0, low_open=True)
    check_real(cfg.beta, "cfg.beta", low=0.0)
    check_real(cfg.online_beta, "cfg.online_beta", low=0.0)
    check_real(cfg.tau, "cfg.tau", low=0.0, high=1.0)
    check_real(cfg.gamma, "cfg.gamma", low=0.0, high=1.0)
    check_real(cfg.lr, "cfg.lr", low=0.0, low_open=True)
    check_real(cfg.q_min, "cfg.q_min")
    check_real(cfg.policy_noise, "cfg.policy_noise", low=0.0)
    check_real(cfg.noise_clip, "cfg.noise_clip", low=0.0)
    check_real(cfg.expl_noise, "cfg.expl_noise", low=0.0)
    check_int(cfg.hidden, "cfg.hidden", low=1)
    check_int(cfg.n_layers, "cfg.n_layers", low=1)
    try:
        torch.device(cfg.device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(
            f"cfg.device must be a torch device string such as 'cpu' or 'cuda', got {cfg.device!r}"
        ) from err
    check_real(cfg.offline_ratio, "cfg.offline_ratio", low=0.0, high=1.0)
    check_choice(cfg.actor_reduce, "cfg.actor_reduce", ("min", "mean_k", "first"))
    check_choice(cfg.online_reduce, "cfg.online_reduce", ("min", "mean_k", "first"))
    check_int(cfg.policy_freq, "cfg.policy_freq", low=1)
    check_int(cfg.batch_size, "cfg.batch_size", low=1)
    return cfg


class PARS:
    """The PARS agent (TD3+BC + critic ensemble + RS-LN + PA); its flags give the ablations.

    Args:
        cfg: a :class:`PARSConfig`.
        rng: NumPy Generator for every draw of the updates (subsets, noise, infeasible actions,
            minibatches); network initialisation uses torch's global generator
            (seeded by :func:`icml25.common.seed_everything`).

    Raises:
        TypeError / ValueError naming the field.
    """

    def __init__(self, cfg: PARSConfig, rng: np.random.Generator) -> None:
        self.cfg = _check_config(cfg)
        self.rng = check_rng(rng)
        dev = torch.device(cfg.device)
        self.critic = EnsembleCritic(
            cfg.state_dim, cfg.act_dim, cfg.hidden, cfg.n_layers, cfg.E, cfg.layer_norm
        ).to(dev)
        self.actor = Actor(cfg.state_dim, cfg.act_dim, cfg.actor_hidden).to(dev)
        self.critic_tgt = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_tgt = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic_opt = torch.optim.Adam(
            [p for p in self.critic.parameters() if p.requires_grad], lr=cfg.lr
        )
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.lr)
        self.device = dev
        self.n_updates = 0

    def _polyak(self) -> None:
        tau = self.cfg.tau
        with torch.no_grad():
            for net, tgt in (
                (self.critic, self.critic_tgt),
                (self.actor, self.actor_tgt),
            ):
                for p, pt in zip(net.parameters(), tgt.parameters()):
                    pt.mul_(1.0 - tau).add_(p.detach(), alpha=tau)

    def _critic_update(self, b: dict) -> dict:
        cfg = self.cfg
        loss, info = _critic_step_loss(
            b,
            self.critic,
            self.critic_tgt,
            self.actor_tgt,
            cfg.c_reward,
            cfg.alpha,
            cfg.q_min,
            cfg.k_target,
            cfg.policy_noise,
            cfg.U,
            self.rng,
            cfg.gamma,
            cfg.noise_clip,
        )
        self.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.critic_opt.step()
        return info

    def _actor_update(self, b: dict, beta: float, reduce: str) -> float:
        loss = _actor_step_loss(
            b["observations"],
            b["actions"],
            self.actor,
            self.critic,
            beta,
            reduce,
            self.cfg.k_actor,
            self.rng,
        )
        self.actor_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.actor_opt.step()
        return float(loss.detach())

    def offline_update(self, batch: dict) -> dict:
        """One offline step: a critic update, and every ``policy_freq`` steps an actor update and
        the Polyak step of both targets (TD3's delayed updates).

        Args:
            batch: a transition batch (NumPy arrays or tensors; see :func:`pars_critic_loss`).

        Returns:
            floats ``td``, ``pa``, ``q_data``, ``q_infeasible`` and, on actor steps, ``actor``.

        Raises:
            TypeError / ValueError naming the field: not a mapping, missing fields, an empty batch,
            mismatched rows or widths, NaN/inf, actions outside the box, terminals not 0/1.
        """
        b = {
            k: v.to(self.device, torch.float32)
            for k, v in _check_batch_tensors(
                batch, self.cfg.act_dim, self.cfg.state_dim
            ).items()
        }
        info = self._critic_update(b)
        self.n_updates += 1
        if self.n_updates % self.cfg.policy_freq == 0:
            info["actor"] = self._actor_update(b, self.cfg.beta, self.cfg.actor_reduce)
            self._polyak()
        return info

    def online_update(self, off: Any, on: Any, utd: int = 20) -> dict:
        """One fine-tuning step: ``utd`` critic updates on mixed batches, then one actor update.

        Args:
            off, on: the offline and online buffers (:class:`icml25.pars.ReplayBuffer`); each
                batch draws ``offline_ratio`` of its rows from ``off`` (symmetric sampling).
            utd: critic updates per environment step (>= 1; the paper's 20).

        Returns:
            the last critic step's floats and ``actor``.
        """
        from .data import mixed_batch

        utd = check_int(utd, "utd", low=1)
        info: dict = {}
        for _ in range(utd):
            b = _to_torch(
                mixed_batch(
                    off, on, self.cfg.batch_size, self.cfg.offline_ratio, self.rng
                ),
                self.device,
            )
            info = self._critic_update(b)
            self._polyak()
        info["actor"] = self._actor_update(
            b, self.cfg.online_beta, self.cfg.online_reduce
        )
        self.n_updates += utd
        return info

    def act(self, s: Any, noise: float = 0.0) -> np.ndarray:
        """Actions (B, act_dim) in [-1, 1] for states ``s`` (B, state_dim) or (state_dim,), plus
        Gaussian exploration noise of std ``noise`` (drawn from the agent's rng), clipped to the box."""
        s = check_array(s, "s", ndim=(1, 2), dtype=np.float32)
        noise = check_real(noise, "noise", low=0.0)
        single = s.ndim == 1
        s2 = s[None] if single else s
        if s2.shape[1] != self.cfg.state_dim:
            raise ValueError(
                f"s must have {self.cfg.state_dim} columns, got shape {s.shape}"
            )
        with torch.no_grad():
            a = self.actor(torch.as_tensor(s2, device=self.device)).cpu().numpy()
        if noise > 0:
            a = np.clip(
                a + noise * self.rng.standard_normal(a.shape), -1.0, 1.0
            ).astype(np.float32)
        return a[0] if single else a

    def q_values(self, s: Any, a: Any) -> np.ndarray:
        """Ensemble Q-values (E, B) at states ``s`` (B, ds) and any actions ``a`` (B, da) (infeasible allowed)."""
        s = check_array(s, "s", ndim=2, dtype=np.float32)
        a = check_array(a, "a", shape=(s.shape[0], self.cfg.act_dim), dtype=np.float32)
        with torch.no_grad():
            return (
                self.critic(
                    torch.as_tensor(s, device=self.device),
                    torch.as_tensor(a, device=self.device),
                )
                .cpu()
                .numpy()
            )


def extrapolation_probe(
    critic: EnsembleCritic, s: Any, directions: Any, radii: Any, center: Any = None
) -> np.ndarray:
    """Mean Q along rays ``a = center + r u`` through and beyond the data (the paper's Fig. 2 view).

    Args:
        critic: an :class:`EnsembleCritic`.
        s: (N, state_dim) probe states (ignored columns when ``state_dim == 0``; pass shape (N, 0)).
        directions: (D, act_dim) ray directions (normalised here; a zero row is refused).
        radii: (R,) non-negative distances from ``center``; center: (act_dim,) origin (default 0).

    Returns:
        (D, R) float64: Q averaged over the ensemble and the N states at each ray point.

    Raises:
        TypeError / ValueError naming the argument (empty ``s``, ``directions`` or ``radii`` too);
        TooLargeError when the N * D * R evaluations cannot fit in memory (all run in one batch).
    """
    if not isinstance(critic, EnsembleCritic):
        raise TypeError(
            f"critic must be an EnsembleCritic, got {type(critic).__name__}"
        )
    s = check_array(s, "s", ndim=2, dtype=np.float32)
    if s.shape[1] != critic.state_dim:
        raise ValueError(f"s must have {critic.state_dim} columns, got shape {s.shape}")
    if s.shape[0] == 0:
        raise ValueError("s must hold at least one probe state, got 0 rows")
    u = check_array(
        directions,
        "directions",
        shape=(None, critic.act_dim),
        dtype=np.float64,
        min_size=1,
    )
    norms = np.linalg.norm(u, axis=1)
    if (norms == 0).any():
        raise ValueError("directions must not contain a zero row")
    radii = check_array(radii, "radii", ndim=1, dtype=np.float64, low=0.0, min_size=1)
    n_eval = s.shape[0] * len(u) * len(radii)
    check_budget(
        f"extrapolation_probe(N={s.shape[0]}, D={len(u)}, R={len(radii)})",
        n_bytes=4.0
        * n_eval
        * (critic.state_dim + critic.act_dim + 2 * critic.E * critic.hidden),
    )
    c0 = (
        np.zeros(critic.act_dim)
        if center is None
        else check_array(center, "center", shape=(critic.act_dim,), dtype=np.float64)
    )
    u = u / norms[:, None]
    pts = c0[None, None, :] + radii[None, :, None] * u[:, None, :]  # (D, R, da)
    flat = pts.reshape(-1, critic.act_dim).astype(np.float32)
    N, P = s.shape[0], flat.shape[0]
    ss = torch.as_tensor(np.repeat(s, P, axis=0))
    aa = torch.as_tensor(np.tile(flat, (N, 1)))
    dev = next(critic.parameters()).device
    with torch.no_grad():
        q = critic(ss.to(dev), aa.to(dev)).mean(dim=0).cpu().numpy().astype(np.float64)
    return q.reshape(N, P).mean(axis=0).reshape(len(u), len(radii))
