"""The paper's baselines, written once (no library implements preference-based MARL).

- :class:`BC`: behaviour cloning of every dataset action (local actors, shared weights).
- :class:`IIPL`: independent IPL: each agent learns its own implied reward ``q_i - gamma v_i'``
  from the team's label (no mixer), then extreme-V and WBC per agent (official code keeps one net
  and mixer per agent; we share the weights with the agent id, a simplification).
- IPL-VDN is :class:`~icml25.omapl.OMAPL` with ``mixer="vdn"``.
- :class:`SLMARL`: two phases. Phase 1 fits a reward net ``R(s, a)`` to the labels, by Bradley-Terry
  on segment sums (default) or by the official code's MSE of the mean step reward onto the binary
  label (``reward_loss="mse"``, a weak variant); phase 2 is the same soft-Q / extreme-V / WBC
  learner as O-MAPL, with ``Q_tot`` regressed on ``R + gamma (1 - d) Vbar_tot'``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml25.checks import check_choice, check_int

from ._checks import PairBatch
from .method import (
    OMAPL,
    OMAPLConfig,
    _act,
    _extreme_v,
    _preference_loss,
    _soft_update,
    _wbc,
    _z,
)
from .networks import LocalActor

__all__ = ["BC", "IIPL", "SLMARL"]


def _check_batch(batch: object) -> PairBatch:
    if not isinstance(batch, PairBatch):
        raise TypeError(
            f"batch must be a PairBatch (icml25.omapl.make_pair_batch), got {type(batch).__name__}"
        )
    return batch


class BC:
    """Behaviour cloning: ``max E[log pi_i(a_i | o_i)]`` over all dataset steps."""

    def __init__(self, cfg: OMAPLConfig, device: str = "cpu") -> None:
        """Args: cfg (sizes, lr); device."""
        if not isinstance(cfg, OMAPLConfig):
            raise TypeError(f"cfg must be an OMAPLConfig, got {type(cfg).__name__}")
        self.cfg, self.device = cfg.validated(), device
        self.actor = LocalActor(
            cfg.obs_dim, cfg.act_dim, cfg.n_agents, cfg.hidden, cfg.discrete
        ).to(device)
        self.opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.lr)
        self.n_updates = 0

    def update(self, batch: PairBatch) -> dict[str, float]:
        """One BC step on both segments of every pair; returns ``{"pi": loss}``."""
        b = _check_batch(batch)
        logp = self.actor.log_prob(b.obs, b.actions, b.avail)
        m = b.mask.unsqueeze(-1).expand_as(logp)
        loss = -(m * logp).sum() / m.sum()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.actor.parameters(), self.cfg.grad_clip)
        self.opt.step()
        self.n_updates += 1
        return {"pi": float(loss.detach())}

    def act(
        self,
        obs: np.ndarray,
        avail: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> np.ndarray:
        """Actions (E, N) as :meth:`OMAPL.act`."""
        return _act(self.actor, obs, avail, deterministic, self.cfg, self.device)


class IIPL(OMAPL):
    """Independent IPL: per-agent BT losses ``BCE(sum_t (q_i - gamma vbar_i'), y)``, no mixer."""

    def __init__(self, cfg: OMAPLConfig, device: str = "cpu") -> None:
        """Args as :class:`OMAPL` (the mixer fields are ignored: no mixing)."""
        if not isinstance(cfg, OMAPLConfig):
            raise TypeError(f"cfg must be an OMAPLConfig, got {type(cfg).__name__}")
        super().__init__(OMAPLConfig(**{**cfg.__dict__, "mixer": "vdn"}), device)

    def implied_rewards(self, batch: PairBatch) -> torch.Tensor:
        """Per-agent implied rewards ``(2, B, T, N)``."""
        q_loc = self.q(batch.obs, batch.actions)
        with torch.no_grad():
            v_next = self.v_target(batch.next_obs)
        return q_loc - self.cfg.gamma * (1.0 - batch.dones).unsqueeze(-1) * v_next

    def update(self, batch: PairBatch) -> dict[str, float]:
        """One IIPL update (per-agent preference, extreme-V and WBC steps)."""
        b, c = _check_batch(batch), self.cfg
        r = self.implied_rewards(b)  # (2, B, T, N)
        N = r.shape[-1]
        loss_q = (
            sum(
                _preference_loss(r[..., i], b.y, b.mask, c.reg, c.reg_form)
                for i in range(N)
            )
            / N
        )
        self._step(self.opt_q, loss_q)
        v_loc = self.v(b.obs)
        with torch.no_grad():
            q_bar = self.q_target(b.obs, b.actions)
        m = b.mask.unsqueeze(-1).expand_as(v_loc)
        ones = torch.ones_like(v_loc)
        loss_v = _extreme_v(q_bar, v_loc, ones, c.beta, c.z_clip, m, c.v_normalise)
        self._step(self.opt_v, loss_v)
        z = _z(q_bar, v_loc.detach(), ones, c.beta, c.z_clip)
        logp = self.actor.log_prob(b.obs, b.actions, b.avail)
        loss_pi = _wbc(logp.flatten(0, 1), z.flatten(0, 1), m.flatten(0, 1))
        self._step(self.opt_pi, loss_pi)
        _soft_update(self.q_target, self.q, c.tau)
        _soft_update(self.v_target, self.v, c.tau)
        self.n_updates += 1
        return {
            "pref": float(loss_q.detach()),
            "v": float(loss_v.detach()),
            "pi": float(loss_pi.detach()),
        }

    @torch.no_grad()
    def segment_returns(self, batch: PairBatch) -> torch.Tensor:
        """Team score of each segment: the agents' implied rewards summed over agents and steps (2, B)."""
        return (self.implied_rewards(batch).sum(-1) * batch.mask).sum(-1)


class SLMARL(OMAPL):
    """Supervised-reward MARL: a reward net first (``reward_updates`` steps), then offline MARL on it."""

    def __init__(
        self,
        cfg: OMAPLConfig,
        reward_updates: int,
        reward_loss: str = "bt",
        device: str = "cpu",
    ) -> None:
        """Args: cfg as :class:`OMAPL`; reward_updates: length of phase 1; reward_loss ``"bt"`` or
        ``"mse"`` (official code's variant)."""
        super().__init__(cfg, device)
        self.reward_updates = check_int(reward_updates, "reward_updates", low=0)
        self.reward_loss = check_choice(reward_loss, "reward_loss", ("bt", "mse"))
        c = self.cfg
        d_in = c.state_dim + c.n_agents * c.act_dim
        self.reward_net = nn.Sequential(
            nn.Linear(d_in, c.hidden),
            nn.ReLU(),
            nn.Linear(c.hidden, c.hidden),
            nn.ReLU(),
            nn.Linear(c.hidden, 1),
        ).to(device)
        self.opt_r = torch.optim.Adam(self.reward_net.parameters(), lr=c.lr)

    def reward(self, state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The learned step reward ``R(s, a)``: (..., s), (..., N) -> (...)."""
        a = (
            F.one_hot(actions, self.cfg.act_dim).to(state.dtype)
            if self.cfg.discrete
            else actions
        )
        return self.reward_net(torch.cat([state, a.flatten(-2)], -1)).squeeze(-1)

    def update(self, batch: PairBatch) -> dict[str, float]:
        """Phase 1 (reward fit) for the first ``reward_updates`` calls, then phase 2 (MARL)."""
        b = _check_batch(batch)
        if self.n_updates < self.reward_updates:
            R = self.reward(b.state, b.actions)
            if self.reward_loss == "bt":
                loss = _preference_loss(R, b.y, b.mask, 0.0, "code")
            else:
                # official code: MSE of the mean step reward of each segment onto its
                # 0/1 label
                mean = (R * b.mask).sum(-1) / b.mask.sum(-1)
                loss = F.mse_loss(mean, torch.stack([b.y, 1.0 - b.y]))
            self._step(self.opt_r, loss)
            self.n_updates += 1
            return {"reward": float(loss.detach())}
        r_hat = self.implied_rewards(b)
        with torch.no_grad():
            target = self.reward(b.state, b.actions)
        loss_q = (b.mask * (r_hat - target).pow(2)).sum() / b.mask.sum()
        self._step(self.opt_q, loss_q)
        loss_v, loss_pi = self._value_policy_step(b)
        return {
            "q": float(loss_q.detach()),
            "v": float(loss_v.detach()),
            "pi": float(loss_pi.detach()),
        }

    @torch.no_grad()
    def segment_returns(self, batch: PairBatch) -> torch.Tensor:
        """Segment sums of the learned reward ``R`` (2, B)."""
        return (self.reward(batch.state, batch.actions) * batch.mask).sum(-1)
