"""O-MAPL: the implied reward, the three losses and the learner (Bui, Mai, Nguyen, ICML 2025, Sec. 4).

Paper vs official code (both implemented, labelled; the paper's form is the default):

- mixer conditioning: ``mixer_input="state_action"`` (paper: the Q-mixer reads ``(s, a)``, a
  second mixer reads ``s`` for ``V_tot``; the extreme-V loss then fits the *global* ``V_tot``)
  or ``"state"`` (code: one mixer on ``s`` for Q and V, extreme-V per agent on ``w_i (q_i - v_i)``);
- regulariser: ``reg_form="paper"`` (the chi^2 term ``-E[phi(r)]``, ``phi(x) = x - x^2/2``, as a
  third-party reading of the paper gives it) or ``"code"`` (``+ 0.5 E[r^2]``);
- extreme-V: ``v_normalise=False`` (paper) or ``True`` (code: the loss divided by ``e^{max z}``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml25.checks import (
    check_array,
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_tensor,
)

from ._checks import PairBatch, check_beta, check_gamma
from .defaults import DEFAULTS
from .networks import (
    HyperMixer,
    LocalActor,
    LocalQNet,
    LocalVNet,
    TwoLayerMixer,
    make_mixer,
)

__all__ = [
    "OMAPLConfig",
    "OMAPL",
    "implied_reward",
    "preference_loss",
    "extreme_v_loss",
    "wbc_loss",
    "segment_mask",
]

_L = DEFAULTS.learner


@dataclass(frozen=True)
class OMAPLConfig:
    """Sizes and settings of an O-MAPL learner (defaults: the official code's, :data:`DEFAULTS`).

    Attributes:
        obs_dim, state_dim, n_agents: ``o``, ``s``, ``N``. act_dim: actions ``A`` (discrete) or the
        action dimension ``a``. discrete: action kind. hidden, mixer_hidden: widths.
        mixer: ``"linear"`` (O-MAPL), ``"vdn"`` (IPL-VDN) or ``"two_layer"`` (Prop. 4.2 ablation).
        mixer_input: ``"state_action"`` (paper) or ``"state"`` (code). reg, reg_form: regulariser.
        lr, gamma, tau, grad_clip, beta, z_clip: as :class:`~icml25.omapl.defaults.LearnerSettings`.
        v_normalise: the code's ``e^{max z}`` division of the extreme-V loss.
    """

    obs_dim: int
    state_dim: int
    n_agents: int
    act_dim: int
    discrete: bool = True
    hidden: int = _L.hidden
    mixer_hidden: int = _L.mixer_hidden
    mixer: str = "linear"
    mixer_input: str = "state_action"
    reg: float = _L.reg
    reg_form: str = "paper"
    lr: float = _L.lr
    gamma: float = _L.gamma
    tau: float = _L.tau
    grad_clip: float = _L.grad_clip
    beta: float = _L.beta
    z_clip: float = _L.z_clip
    v_normalise: bool = False

    def validated(self) -> "OMAPLConfig":
        """The same config with every field checked (errors name the field)."""
        for name in (
            "obs_dim",
            "state_dim",
            "n_agents",
            "act_dim",
            "hidden",
            "mixer_hidden",
        ):
            check_int(getattr(self, name), name, low=1)
        check_bool(self.discrete, "discrete")
        check_bool(self.v_normalise, "v_normalise")
        check_choice(self.mixer, "mixer", ("linear", "vdn", "two_layer"))
        check_choice(self.mixer_input, "mixer_input", ("state_action", "state"))
        check_choice(self.reg_form, "reg_form", ("paper", "code"))
        check_real(self.reg, "reg", low=0.0)
        check_real(self.lr, "lr", low=0.0, low_open=True)
        check_gamma(self.gamma)
        check_real(self.tau, "tau", low=0.0, low_open=True, high=1.0)
        check_real(self.grad_clip, "grad_clip", low=0.0, low_open=True)
        check_beta(self.beta)
        check_real(self.z_clip, "z_clip", low=0.0, low_open=True)
        # parameters of the widest nets (q, v, actor and their targets, two mixers) with
        # Adam's two moments: refuse a size that cannot fit before
        # torch tries to allocate it
        width = (
            self.obs_dim
            + self.n_agents
            + self.act_dim
            + self.state_dim
            + self.n_agents * self.act_dim
        )
        n_params = 6 * (self.hidden * (self.hidden + width)) + 4 * self.mixer_hidden * (
            width + self.n_agents + 1
        )
        check_budget(
            f"OMAPL(hidden={self.hidden}, mixer_hidden={self.mixer_hidden})",
            n_bytes=4.0 * 3 * n_params,
        )
        return self


def _check_binary(x: torch.Tensor, name: str) -> torch.Tensor:
    if bool(((x != 0) & (x != 1)).any()):
        raise ValueError(f"{name} must hold only 0 and 1")
    return x


# --------------------------------------------------------------------------------------
# The losses (public: validated; private: the math the chapter shows)
# --------------------------------------------------------------------------------------


def segment_mask(dones: torch.Tensor) -> torch.Tensor:
    """1 up to and including the first done of each segment, 0 after: ``dones (..., T)`` -> ``(..., T)``.

    Raises:
        ValueError: ``dones`` 0-D, non-finite or outside {0, 1}. TypeError: not a float tensor."""
    dones = _check_binary(check_tensor(dones, "dones"), "dones")
    if dones.ndim < 1:
        raise ValueError("dones must have shape (..., T), got a 0-D tensor")
    return (torch.cumsum(dones, -1) - dones < 0.5).to(dones.dtype)


def implied_reward(
    q_loc: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    v_next_loc: torch.Tensor,
    w_next: torch.Tensor,
    b_next: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
) -> torch.Tensor:
    """Implied reward ``r_t = Q_tot(s_t, a_t) - gamma (1 - d_t) V_tot(s_{t+1})`` (inverse soft Bellman, Sec. 4.1).

    Args:
        q_loc: (..., T, N) local ``q_i(o_i, a_i)``; w: (..., T, N) mixer weights >= 0; b: (..., T).
        v_next_loc, w_next, b_next: the same at ``t + 1`` for ``V_tot`` (the target nets).
        dones: (..., T) in {0, 1}. gamma: discount in [0, 1).

    Returns:
        (..., T) implied rewards (differentiable in ``q_loc``, ``w``, ``b``).

    Raises:
        ValueError: shape mismatches (named), ``w < 0`` or ``w_next < 0``, ``dones`` not binary,
            ``gamma`` outside [0, 1).
        TypeError: a non-tensor or an integer tensor.
    """
    q_loc = check_tensor(q_loc, "q_loc")
    if q_loc.ndim < 2:
        raise ValueError(
            f"q_loc must have shape (..., T, N), got shape {tuple(q_loc.shape)}"
        )
    w = check_tensor(w, "w", shape=q_loc.shape)
    if bool((w < 0).any()):
        raise ValueError("w must be >= 0 (a monotone mixer)")
    v_next_loc = check_tensor(v_next_loc, "v_next_loc", shape=q_loc.shape)
    w_next = check_tensor(w_next, "w_next", shape=q_loc.shape)
    if bool((w_next < 0).any()):
        raise ValueError("w_next must be >= 0 (a monotone mixer)")
    b = check_tensor(b, "b", shape=q_loc.shape[:-1])
    b_next = check_tensor(b_next, "b_next", shape=q_loc.shape[:-1])
    dones = check_tensor(dones, "dones", shape=q_loc.shape[:-1])
    if bool(((dones != 0) & (dones != 1)).any()):
        raise ValueError("dones must hold only 0 and 1")
    return _implied_reward(
        q_loc, w, b, v_next_loc, w_next, b_next, dones, check_gamma(gamma)
    )


def _implied_reward(
    q_loc: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    v_next_loc: torch.Tensor,
    w_next: torch.Tensor,
    b_next: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
) -> torch.Tensor:
    """``r_t = (sum_i w_i q_i + b) - gamma (1 - d_t) (sum_i w'_i vbar'_i + b')``.

    The paper's ``Q^tot = M_theta[q]`` and ``V^tot = M_theta[v]`` with one linear mixing layer;
    ``vbar'`` comes from the target value nets (no gradient)."""
    q_tot = (w * q_loc).sum(-1) + b
    v_tot_next = (w_next * v_next_loc).sum(-1) + b_next
    return q_tot - gamma * (1.0 - dones) * v_tot_next


def preference_loss(
    r1: torch.Tensor,
    r2: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor | None = None,
    reg: float = 0.5,
    form: str = "paper",
) -> torch.Tensor:
    """Bradley-Terry loss on segment sums plus the reward regulariser (Sec. 4.1).

    ``BCE(sum_t m1 r1 - sum_t m2 r2, y)`` plus ``reg * mean(r^2 - 2 r)`` (``form="paper"``:
    ``-2 reg E[phi(r)]``, ``phi(x) = x - x^2/2``, the chi^2 term) or ``reg * mean(r^2)`` (``"code"``),
    the means over unmasked steps of both segments.

    Args:
        r1, r2: (B, T) implied rewards of the two segments; y: (B,) in {0, 1} (1: segment 1
        preferred); mask: (2, B, T) in {0, 1} or ``None`` (all steps); reg >= 0; form.

    Returns:
        the scalar loss.

    Raises:
        ValueError: shape mismatches, an empty batch, ``y`` or ``mask`` outside {0, 1}, ``reg < 0``,
            unknown ``form``.
    """
    r1 = check_tensor(r1, "r1", ndim=2)
    if r1.shape[0] == 0 or r1.shape[1] == 0:
        raise ValueError(
            f"r1 must hold at least one segment of at least one step, got shape {tuple(r1.shape)}"
        )
    r2 = check_tensor(r2, "r2", shape=r1.shape)
    y = check_tensor(y, "y", shape=r1.shape[:1])
    if bool(((y != 0) & (y != 1)).any()):
        raise ValueError("y must hold only 0 and 1")
    if mask is None:
        mask = torch.ones((2, *r1.shape), dtype=r1.dtype, device=r1.device)
    mask = _check_binary(check_tensor(mask, "mask", shape=(2, *r1.shape)), "mask")
    return _preference_loss(
        torch.stack([r1, r2]),
        y.to(r1.dtype),
        mask.to(r1.dtype),
        check_real(reg, "reg", low=0.0),
        check_choice(form, "form", ("paper", "code")),
    )


def _preference_loss(
    r: torch.Tensor, y: torch.Tensor, mask: torch.Tensor, reg: float, form: str
) -> torch.Tensor:
    """``-[y log sigma(R1 - R2) + (1 - y) log sigma(R2 - R1)] + reg E[r^2 (- 2 r)]``, ``R = sum_t m r``.

    ``r`` (2, B, T) stacks the two segments; the paper maximises the BT log-likelihood plus
    ``E[phi(r)]`` (``phi(x) = x - x^2/2``); the code adds ``0.5 E[r^2]`` instead."""
    seg = (r * mask).sum(-1)  # (2, B): sum_t r_t
    bce = F.binary_cross_entropy_with_logits(seg[0] - seg[1], y)
    n = mask.sum().clamp_min(1.0)
    reg_term = (mask * r.pow(2)).sum() / n
    if form == "paper":
        reg_term = reg_term - 2.0 * (mask * r).sum() / n
    return bce + reg * reg_term


def extreme_v_loss(
    q_bar: torch.Tensor,
    v: torch.Tensor,
    w: torch.Tensor | float,
    beta: float,
    clip: float = 10.0,
    mask: torch.Tensor | None = None,
    normalise: bool = False,
) -> torch.Tensor:
    """Extreme-V (Gumbel) regression ``E[e^z - z]``, ``z = clip(w (qbar - v) / beta, -clip, clip)`` (Sec. 4.2).

    Its minimiser in ``v`` (``w = 1``, no clipping) is the soft value ``beta log E_mu[e^{qbar/beta}]``.

    Args:
        q_bar: (...) target Q values (no gradient flows into them); v: (...) values;
        w: (...) mixer weights >= 0 or a scalar; beta > 0; clip > 0; mask: (...) or ``None``;
        normalise: divide by ``e^{max z}`` (max floored at -1, detached; official code).

    Returns:
        the scalar loss.

    Raises:
        ValueError: shapes, an empty ``q_bar``, ``beta <= 0``, ``clip <= 0``, ``w < 0``, ``mask``
            outside {0, 1}.
    """
    q_bar = check_tensor(q_bar, "q_bar")
    if q_bar.numel() == 0:
        raise ValueError("q_bar must hold at least one value")
    v = check_tensor(v, "v", shape=q_bar.shape)
    if not isinstance(w, torch.Tensor):
        w = torch.full_like(q_bar, check_real(w, "w", low=0.0))
    w = check_tensor(w, "w", shape=q_bar.shape)
    if bool((w < 0).any()):
        raise ValueError("w must be >= 0")
    mask = (
        torch.ones_like(q_bar)
        if mask is None
        else _check_binary(check_tensor(mask, "mask", shape=q_bar.shape), "mask")
    )
    return _extreme_v(
        q_bar.detach(),
        v,
        w.detach(),
        check_beta(beta),
        check_real(clip, "clip", low=0.0, low_open=True),
        mask,
        check_bool(normalise, "normalise"),
    )


def _z(
    q_bar: torch.Tensor, v: torch.Tensor, w: torch.Tensor, beta: float, clip: float
) -> torch.Tensor:
    """``z = clip(w (qbar - v) / beta, -clip, clip)`` (the code's ``alpha`` is ``beta``)."""
    return (w * (q_bar - v) / beta).clamp(-clip, clip)


def _extreme_v(
    q_bar: torch.Tensor,
    v: torch.Tensor,
    w: torch.Tensor,
    beta: float,
    clip: float,
    mask: torch.Tensor,
    normalise: bool,
) -> torch.Tensor:
    """``J(v) = E_mu[e^z - z]``: convex in ``v``; ``dJ/dv = 0`` iff ``E[w e^z] = E[w]``, i.e. for ``w = 1``
    ``v = beta log E[e^{qbar/beta}]`` (the MaxEnt soft value, XQL's Gumbel regression)."""
    z = _z(q_bar, v, w, beta, clip)
    n = mask.sum().clamp_min(1.0)
    # official code: e^z / e^m - z / e^m with m = max(max z, -1), detached
    if normalise:
        m = z.detach().max().clamp_min(-1.0)
        return (mask * (torch.exp(z - m) - z * torch.exp(-m))).sum() / n
    return (mask * (torch.exp(z) - z)).sum() / n


def wbc_loss(
    logp: torch.Tensor, z: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Weighted behaviour cloning ``-E[e^{z_i} log pi_i(a_i | o_i)]`` with ``e^z`` detached (Sec. 4.3).

    Args:
        logp: (B, T, N) log-probabilities of the dataset actions; z: (B, T, N) the extreme-V ``z``;
        mask: (B, T, N) or ``None``.

    Returns:
        the scalar loss.

    Raises:
        ValueError: shape mismatches, an empty ``logp``, ``mask`` outside {0, 1}.
    """
    logp = check_tensor(logp, "logp", ndim=3)
    if logp.numel() == 0:
        raise ValueError("logp must hold at least one value")
    z = check_tensor(z, "z", shape=logp.shape)
    mask = (
        torch.ones_like(logp)
        if mask is None
        else _check_binary(check_tensor(mask, "mask", shape=logp.shape), "mask")
    )
    return _wbc(logp, z, mask)


def _wbc(logp: torch.Tensor, z: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``max_omega E[e^{z_i} log pi_omega(a_i|o_i)]``: the local policy extraction whose optima compose
    to the global one (global-local consistency, Thms 4.3-4.4)."""
    return -(mask * torch.exp(z.detach()) * logp).sum() / mask.sum().clamp_min(1.0)


# --------------------------------------------------------------------------------------
# The learner
# --------------------------------------------------------------------------------------


def _soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    with torch.no_grad():
        for pt, ps in zip(target.parameters(), source.parameters()):
            pt.mul_(1.0 - tau).add_(ps, alpha=tau)


class OMAPL:
    """O-MAPL (Alg. 1): preference step on (q, mixer), extreme-V step on v, WBC step on the actors,
    then a Polyak update of the targets; one loop, no reward model.

    ``mixer="vdn"`` is IPL-VDN; ``mixer="two_layer"`` the Prop. 4.2 ablation (its extreme-V and
    WBC use the global ``z = (Qbar_tot - V_tot) / beta`` for every agent: our choice, a reconstruction).
    """

    def __init__(self, cfg: OMAPLConfig, device: str = "cpu") -> None:
        """Build the nets and optimisers of ``cfg`` on ``device``. Raises as :meth:`OMAPLConfig.validated`."""
        if not isinstance(cfg, OMAPLConfig):
            raise TypeError(f"cfg must be an OMAPLConfig, got {type(cfg).__name__}")
        self.cfg = c = cfg.validated()
        self.device = device
        self.q = LocalQNet(c.obs_dim, c.act_dim, c.n_agents, c.hidden, c.discrete).to(
            device
        )
        self.v = LocalVNet(c.obs_dim, c.n_agents, c.hidden).to(device)
        self.actor = LocalActor(
            c.obs_dim, c.act_dim, c.n_agents, c.hidden, c.discrete
        ).to(device)
        self.two_mixers = c.mixer_input == "state_action" and c.mixer != "vdn"
        extra = c.n_agents * c.act_dim if self.two_mixers else 0
        self.q_mixer = make_mixer(
            c.mixer, c.state_dim, c.n_agents, c.mixer_hidden, extra
        ).to(device)
        self.v_mixer = (
            make_mixer(c.mixer, c.state_dim, c.n_agents, c.mixer_hidden).to(device)
            if self.two_mixers
            else self.q_mixer
        )
        self.q_target, self.v_target = copy.deepcopy(self.q), copy.deepcopy(self.v)
        self.q_mixer_target = copy.deepcopy(self.q_mixer)
        self.v_mixer_target = (
            copy.deepcopy(self.v_mixer) if self.two_mixers else self.q_mixer_target
        )
        q_params = list(self.q.parameters()) + list(self.q_mixer.parameters())
        v_params = list(self.v.parameters()) + (
            list(self.v_mixer.parameters()) if self.two_mixers else []
        )
        self.opt_q = torch.optim.Adam(q_params, lr=c.lr) if q_params else None
        self.opt_v = torch.optim.Adam(v_params, lr=c.lr)
        self.opt_pi = torch.optim.Adam(self.actor.parameters(), lr=c.lr)
        self.n_updates = 0

    # -- mixing ------------------------------------------------------------------------
    def _q_input(self, state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        if not self.two_mixers:
            return state
        a = (
            F.one_hot(actions, self.cfg.act_dim).to(state.dtype)
            if self.cfg.discrete
            else actions
        )
        return torch.cat([state, a.flatten(-2)], dim=-1)

    def _total(
        self, mixer: nn.Module, local: torch.Tensor, x: torch.Tensor
    ) -> tuple[torch.Tensor, Any]:
        """``(total (...), w (..., N) or None)`` of local values under ``mixer`` at inputs ``x``."""
        if isinstance(mixer, TwoLayerMixer):
            return TwoLayerMixer.mix_params(local, *mixer(x)), None
        w, b = mixer(x)
        return HyperMixer.mix(local, w, b), w

    def implied_rewards(self, batch: PairBatch) -> torch.Tensor:
        """``r_hat (2, B, T)`` of a batch under the current Q and the target V (differentiable in Q)."""
        c = self.cfg
        q_loc = self.q(batch.obs, batch.actions)
        q_tot, _ = self._total(
            self.q_mixer, q_loc, self._q_input(batch.state, batch.actions)
        )
        with torch.no_grad():
            v_next = self.v_target(batch.next_obs)
            v_tot_next, _ = self._total(self.v_mixer_target, v_next, batch.next_state)
        return q_tot - c.gamma * (1.0 - batch.dones) * v_tot_next

    def _z(
        self, batch: PairBatch, v_loc: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(z (2, B, T, N), extreme-V loss)`` for the current v (nets' outputs)."""
        c = self.cfg
        mask = batch.mask
        with torch.no_grad():
            q_bar = self.q_target(batch.obs, batch.actions)
            x_q = self._q_input(batch.state, batch.actions)
            q_tot_bar, w_q = self._total(self.q_mixer_target, q_bar, x_q)
        if isinstance(self.v_mixer, TwoLayerMixer) or self.two_mixers:
            v_tot, w_v = self._total(self.v_mixer, v_loc, batch.state)
            loss = _extreme_v(
                q_tot_bar,
                v_tot,
                torch.ones_like(v_tot),
                c.beta,
                c.z_clip,
                mask,
                c.v_normalise,
            )
            if w_v is None:  # two-layer: the global z for every agent
                z = _z(q_tot_bar, v_tot, torch.ones_like(v_tot), c.beta, c.z_clip)
                z = z.unsqueeze(-1).expand_as(v_loc)
            else:  # paper: local z_i = (w^q_i qbar_i - w^v_i v_i) / beta
                z = ((w_q * q_bar - w_v.detach() * v_loc) / c.beta).clamp(
                    -c.z_clip, c.z_clip
                )
            return z, loss
        with torch.no_grad():
            _, w = self._total(self.q_mixer, q_bar, batch.state)
        m = mask.unsqueeze(-1).expand_as(v_loc)
        loss = _extreme_v(q_bar, v_loc, w, c.beta, c.z_clip, m, c.v_normalise)
        return _z(q_bar, v_loc, w, c.beta, c.z_clip), loss

    def _step(self, opt: torch.optim.Optimizer, loss: torch.Tensor) -> None:
        opt.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for g in opt.param_groups for p in g["params"]]
        nn.utils.clip_grad_norm_(params, self.cfg.grad_clip)
        opt.step()

    def _value_policy_step(self, batch: PairBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The learner's steps after the Q step (shared with SL-MARL's phase 2): extreme-V step,
        weighted-BC actor step, Polyak update of the targets; counts the update.

        Returns:
            ``(loss_v, loss_pi)``.
        """
        c = self.cfg
        z, loss_v = self._z(batch, self.v(batch.obs))
        self._step(self.opt_v, loss_v)
        logp = self.actor.log_prob(batch.obs, batch.actions, batch.avail)
        m = batch.mask.unsqueeze(-1).expand_as(logp)
        loss_pi = _wbc(logp.flatten(0, 1), z.detach().flatten(0, 1), m.flatten(0, 1))
        self._step(self.opt_pi, loss_pi)
        for tgt, src in (
            (self.q_target, self.q),
            (self.v_target, self.v),
            (self.q_mixer_target, self.q_mixer),
        ):
            _soft_update(tgt, src, c.tau)
        if self.two_mixers:
            _soft_update(self.v_mixer_target, self.v_mixer, c.tau)
        self.n_updates += 1
        return loss_v, loss_pi

    def update(self, batch: PairBatch) -> dict[str, float]:
        """One O-MAPL update on ``batch`` (a :class:`~icml25.omapl._checks.PairBatch`).

        Returns:
            ``{"pref": ..., "v": ..., "pi": ..., "acc": ...}`` losses and the batch's preference accuracy.
        """
        if not isinstance(batch, PairBatch):
            raise TypeError(
                f"batch must be a PairBatch (icml25.omapl.make_pair_batch), got {type(batch).__name__}"
            )
        c = self.cfg
        r = self.implied_rewards(batch)
        loss_q = _preference_loss(r, batch.y, batch.mask, c.reg, c.reg_form)
        if self.opt_q is not None:
            self._step(self.opt_q, loss_q)
        loss_v, loss_pi = self._value_policy_step(batch)
        with torch.no_grad():
            seg = (r * batch.mask).sum(-1)
            acc = ((seg[0] > seg[1]).float() == batch.y).float().mean()
        return {
            "pref": float(loss_q.detach()),
            "v": float(loss_v.detach()),
            "pi": float(loss_pi.detach()),
            "acc": float(acc),
        }

    @torch.no_grad()
    def segment_returns(self, batch: PairBatch) -> torch.Tensor:
        """``sum_t m_t r_hat_t`` of both segments: (2, B)."""
        return (self.implied_rewards(batch) * batch.mask).sum(-1)

    def act(
        self,
        obs: np.ndarray,
        avail: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> np.ndarray:
        """Decentralised actions ``pi_i(. | o_i)``: obs (E, N, o) -> (E, N) int64 or (E, N, a).

        Raises:
            ValueError: shapes, a row of ``avail`` with every action masked.
        """
        return _act(self.actor, obs, avail, deterministic, self.cfg, self.device)


def _act(
    actor: LocalActor,
    obs: Any,
    avail: Any,
    deterministic: bool,
    cfg: OMAPLConfig,
    device: str,
) -> np.ndarray:
    obs = check_array(obs, "obs", ndim=3, dtype=np.float32)
    if obs.shape[1:] != (cfg.n_agents, cfg.obs_dim):
        raise ValueError(
            f"obs must have shape (E, {cfg.n_agents}, {cfg.obs_dim}), got {obs.shape}"
        )
    av = None
    if cfg.discrete:
        if avail is None:
            avail = np.ones((*obs.shape[:2], cfg.act_dim), dtype=bool)
        avail = check_array(
            avail, "avail", kind="bool", shape=(*obs.shape[:2], cfg.act_dim)
        )
        if not avail.any(-1).all():
            raise ValueError("avail has a row with every action masked")
        av = torch.from_numpy(avail).to(device)
    out = actor.act(
        torch.from_numpy(obs).to(device), av, check_bool(deterministic, "deterministic")
    )
    return out.cpu().numpy()
