"""O-MAPL's networks: local Q, V and actor nets shared across agents, and the mixers (Sec. 4).

Every local net is shared by the ``N`` agents; agent ``i`` sees its observation with a one-hot id
appended (official code). Two hidden ReLU layers (256 units in the code; the cpu profile uses 64).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from icml25.checks import check_choice, check_int

__all__ = [
    "LocalQNet",
    "LocalVNet",
    "LocalActor",
    "HyperMixer",
    "VDNMixer",
    "TwoLayerMixer",
    "with_agent_id",
]

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0  # official code's tanh-Gaussian limits
MEAN_MAX = 9.0
ACTION_EPS = 1e-6


def with_agent_id(obs: torch.Tensor) -> torch.Tensor:
    """``obs (..., N, o)`` with the one-hot agent id appended: ``(..., N, o + N)``.

    Raises:
        TypeError: ``obs`` not a floating-point tensor. ValueError: fewer than 2 dimensions."""
    if not isinstance(obs, torch.Tensor) or not obs.is_floating_point():
        raise TypeError(
            f"obs must be a floating-point torch tensor (..., N, o), got {type(obs).__name__}"
            + (f" of dtype {obs.dtype}" if isinstance(obs, torch.Tensor) else "")
        )
    if obs.ndim < 2:
        raise ValueError(f"obs must have shape (..., N, o), got {tuple(obs.shape)}")
    N = obs.shape[-2]
    eye = torch.eye(N, dtype=obs.dtype, device=obs.device).expand(*obs.shape[:-1], N)
    return torch.cat([obs, eye], dim=-1)


def _mlp(d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(d_in, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, d_out),
    )


def _check_obs(obs: torch.Tensor, n_agents: int, obs_dim: int) -> None:
    if (
        not isinstance(obs, torch.Tensor)
        or obs.ndim < 2
        or tuple(obs.shape[-2:]) != (n_agents, obs_dim)
    ):
        got = tuple(obs.shape) if isinstance(obs, torch.Tensor) else type(obs).__name__
        raise ValueError(f"obs must have shape (..., {n_agents}, {obs_dim}), got {got}")


class LocalQNet(nn.Module):
    """``q_i(o_i, a_i)``: one output per action (discrete) or the action as an input (continuous)."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        n_agents: int,
        hidden: int = 256,
        discrete: bool = True,
    ) -> None:
        """Args: obs_dim ``o``; act_dim (actions ``A`` or action dimension ``a``); n_agents ``N``;
        hidden width; discrete. Raises ValueError on non-positive sizes."""
        super().__init__()
        self.discrete = bool(discrete)
        d_in = check_int(obs_dim, "obs_dim", low=1) + check_int(
            n_agents, "n_agents", low=1
        )
        act_dim = check_int(act_dim, "act_dim", low=1)
        self.net = _mlp(
            d_in if discrete else d_in + act_dim,
            check_int(hidden, "hidden", low=1),
            act_dim if discrete else 1,
        )
        self.obs_dim, self.n_agents = int(obs_dim), int(n_agents)

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``q_i(o_i, a_i)`` of the taken actions: obs (..., N, o), actions (..., N) int64 or
        (..., N, a) float -> (..., N).

        Raises:
            ValueError: ``obs`` not (..., N, o) for this net's ``N`` and ``o``."""
        _check_obs(obs, self.n_agents, self.obs_dim)
        x = with_agent_id(obs)
        if self.discrete:
            return self.net(x).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        return self.net(torch.cat([x, actions], dim=-1)).squeeze(-1)

    def all_actions(self, obs: torch.Tensor) -> torch.Tensor:
        """``q_i(o_i, .)`` over every action (discrete only): (..., N, A)."""
        return self.net(with_agent_id(obs))


class LocalVNet(nn.Module):
    """``v_i(o_i)``: (..., N, o) -> (..., N)."""

    def __init__(self, obs_dim: int, n_agents: int, hidden: int = 256) -> None:
        """Args: obs_dim ``o``; n_agents ``N``; hidden width."""
        super().__init__()
        self.net = _mlp(
            check_int(obs_dim, "obs_dim", low=1)
            + check_int(n_agents, "n_agents", low=1),
            check_int(hidden, "hidden", low=1),
            1,
        )
        self.obs_dim, self.n_agents = int(obs_dim), int(n_agents)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Local values (..., N). Raises ValueError: ``obs`` not (..., N, o)."""
        _check_obs(obs, self.n_agents, self.obs_dim)
        return self.net(with_agent_id(obs)).squeeze(-1)


class LocalActor(nn.Module):
    """``pi_i(a_i | o_i)``: a masked categorical (discrete) or a tanh-Gaussian (continuous).

    Discrete: ``log(avail)`` is added to the logits (official code). Continuous: mean clipped to
    [-9, 9], log-std to [-5, 2], and actions clipped to ``±(1 - 1e-6)`` before ``atanh``.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        n_agents: int,
        hidden: int = 256,
        discrete: bool = True,
    ) -> None:
        """Args as :class:`LocalQNet`."""
        super().__init__()
        self.discrete = bool(discrete)
        act_dim = check_int(act_dim, "act_dim", low=1)
        self.net = _mlp(
            check_int(obs_dim, "obs_dim", low=1)
            + check_int(n_agents, "n_agents", low=1),
            check_int(hidden, "hidden", low=1),
            act_dim if discrete else 2 * act_dim,
        )
        self.obs_dim, self.n_agents = int(obs_dim), int(n_agents)

    def _dist(
        self, obs: torch.Tensor, avail: torch.Tensor | None
    ) -> tuple[torch.Tensor, ...]:
        _check_obs(obs, self.n_agents, self.obs_dim)
        out = self.net(with_agent_id(obs))
        if self.discrete:
            return (out.masked_fill(~avail, -1e9) if avail is not None else out,)
        mean, log_std = out.chunk(2, dim=-1)
        return mean.clamp(-MEAN_MAX, MEAN_MAX), log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def log_prob(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        avail: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``log pi_i(a_i | o_i)`` of the taken actions: (..., N)."""
        if self.discrete:
            (logits,) = self._dist(obs, avail)
            return (
                torch.log_softmax(logits, -1)
                .gather(-1, actions.unsqueeze(-1))
                .squeeze(-1)
            )
        mean, log_std = self._dist(obs, None)
        a = actions.clamp(-1 + ACTION_EPS, 1 - ACTION_EPS)
        u = torch.atanh(a)
        logp = (
            -0.5 * ((u - mean) / log_std.exp()) ** 2
            - log_std
            - 0.5 * math.log(2 * math.pi)
        )
        logp = logp - torch.log1p(-a.pow(2) + ACTION_EPS)
        return logp.sum(-1)

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None = None,
        deterministic: bool = True,
        rng: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Actions (..., N) int64 (discrete) or (..., N, a) in (-1, 1): the mode, or a draw from
        ``rng`` (torch's global generator when ``None``)."""
        if self.discrete:
            (logits,) = self._dist(obs, avail)
            if deterministic:
                return logits.argmax(-1)
            p = torch.softmax(logits, -1)
            return torch.multinomial(
                p.reshape(-1, p.shape[-1]), 1, generator=rng
            ).reshape(p.shape[:-1])
        mean, log_std = self._dist(obs, None)
        if deterministic:
            return torch.tanh(mean)
        noise = torch.randn(
            mean.shape, generator=rng, dtype=mean.dtype, device=mean.device
        )
        return torch.tanh(mean + log_std.exp() * noise)


class HyperMixer(nn.Module):
    """``w(x) = |W_2 relu(W_1 x)| >= 0`` (N weights) and ``b(x)`` (a scalar), a hypernetwork on ``x``.

    ``x`` is the global state ``s`` (official code: one mixer on ``s`` for Q and V) or, for the
    paper's Q-mixer, ``s`` with the joint one-hot action appended (``extra_dim = N A``).
    """

    def __init__(
        self, state_dim: int, n_agents: int, hidden: int = 64, extra_dim: int = 0
    ) -> None:
        """Args: state_dim ``s``; n_agents ``N``; hidden width; extra_dim of appended inputs."""
        super().__init__()
        d = check_int(state_dim, "state_dim", low=1) + check_int(
            extra_dim, "extra_dim", low=0
        )
        hidden = check_int(hidden, "hidden", low=1)
        self.w = nn.Sequential(
            nn.Linear(d, hidden),
            nn.ReLU(),
            nn.Linear(hidden, check_int(n_agents, "n_agents", low=1)),
        )
        self.b = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(w (..., N) >= 0, b (...))`` for inputs (..., s [+ extra])."""
        return self.w(x).abs(), self.b(x).squeeze(-1)

    @staticmethod
    def mix(local: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``sum_i w_i local_i + b``: (..., N), (..., N), (...) -> (...)."""
        return (w * local).sum(-1) + b


class VDNMixer(nn.Module):
    """``w = 1``, ``b = 0``: the value-decomposition sum (IPL-VDN)."""

    def __init__(self, n_agents: int) -> None:
        """Args: n_agents ``N``."""
        super().__init__()
        self.n_agents = check_int(n_agents, "n_agents", low=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ones (..., N), zeros (...))``."""
        return (
            torch.ones(*x.shape[:-1], self.n_agents, dtype=x.dtype, device=x.device),
            torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device),
        )

    mix = staticmethod(HyperMixer.mix)


class TwoLayerMixer(nn.Module):
    """A QMIX-style two-layer mixer (Prop. 4.2's ablation): ``W_2(s)^T elu(W_1(s) local + b_1(s)) + b_2(s)``,
    ``W_1, W_2 >= 0`` (absolute values), hidden ``K`` mixing units. Not linear in the local values,
    so the preference objective is no longer concave in them."""

    def __init__(
        self, state_dim: int, n_agents: int, hidden: int = 64, embed: int = 8
    ) -> None:
        """Args: state_dim ``s``; n_agents ``N``; hidden width of the hypernetworks; embed ``K``."""
        super().__init__()
        d, N = (
            check_int(state_dim, "state_dim", low=1),
            check_int(n_agents, "n_agents", low=1),
        )
        self.N, self.K = N, check_int(embed, "embed", low=1)
        hidden = check_int(hidden, "hidden", low=1)
        self.w1 = nn.Sequential(
            nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, N * self.K)
        )
        self.b1 = nn.Linear(d, self.K)
        self.w2 = nn.Sequential(
            nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, self.K)
        )
        self.b2 = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Mixer parameters of state ``x (..., s)``: ``(W_1 (..., N, K), b_1, W_2 (..., K), b_2 (...))``."""
        W1 = self.w1(x).abs().reshape(*x.shape[:-1], self.N, self.K)
        return W1, self.b1(x), self.w2(x).abs(), self.b2(x).squeeze(-1)

    @staticmethod
    def mix_params(
        local: torch.Tensor,
        W1: torch.Tensor,
        b1: torch.Tensor,
        W2: torch.Tensor,
        b2: torch.Tensor,
    ) -> torch.Tensor:
        """``W_2^T elu(local W_1 + b_1) + b_2``: (..., N) -> (...)."""
        h = F.elu(torch.einsum("...n,...nk->...k", local, W1) + b1)
        return (h * W2).sum(-1) + b2


def make_mixer(
    kind: str, state_dim: int, n_agents: int, hidden: int, extra_dim: int = 0
) -> nn.Module:
    """The mixer of ``kind`` ``"linear"`` (:class:`HyperMixer`), ``"vdn"`` or ``"two_layer"``."""
    kind = check_choice(kind, "mixer", ("linear", "vdn", "two_layer"))
    if kind == "linear":
        return HyperMixer(state_dim, n_agents, hidden, extra_dim)
    if kind == "vdn":
        return VDNMixer(n_agents)
    return TwoLayerMixer(state_dim + extra_dim, n_agents, hidden)
