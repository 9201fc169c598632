"""Environments: CoopGrid (vectorised NumPy, the notes' spec) and PettingZoo MPE ``simple_spread``.

CoopGrid is our reconstruction of a small cooperative task (the paper's SMAC and MaMuJoCo need
StarCraft II and offline buffers that are not available): ``N`` agents cover ``L`` landmarks on a
``size x size`` grid within ``horizon`` steps. Its step and its scripted expert are the kernels of
``icml25.kernels.omapl_kernels`` (NumPy reference on the CPU, CUDA on a GPU).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget, check_int, check_real, check_rng
from icml25.kernels import omapl_kernels

__all__ = ["CoopGridEnv", "grid_observations", "MPESpreadAdapter", "mpe_expert_actions"]


def grid_observations(
    pos: np.ndarray, landmarks: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Local observations and global states of CoopGrid games (divided by ``size``).

    Agent ``i`` sees its own position (2), the offsets of the ``L`` landmarks (2 L) and of its
    ``N - 1`` teammates (2 (N - 1)); the state is every agent's and landmark's position.

    Args:
        pos: (..., N, 2) int; landmarks: (..., L, 2) int; size: grid side.

    Returns:
        ``(obs (..., N, 2 + 2 L + 2 (N - 1)) float32, state (..., 2 N + 2 L) float32)``.

    Raises:
        ValueError: ``pos``/``landmarks`` not (..., N, 2)/(..., L, 2) with the same leading axes,
            ``size < 1``. TypeError: non-integer positions.
    """
    size = check_int(size, "size", low=1)
    pos = check_array(pos, "pos", kind="int")
    landmarks = check_array(landmarks, "landmarks", kind="int")
    if pos.ndim < 2 or pos.shape[-1] != 2 or pos.shape[-2] < 1:
        raise ValueError(f"pos must have shape (..., N, 2), got {pos.shape}")
    if (
        landmarks.ndim != pos.ndim
        or landmarks.shape[-1] != 2
        or landmarks.shape[:-2] != pos.shape[:-2]
    ):
        raise ValueError(
            f"landmarks must have shape ({', '.join(map(str, pos.shape[:-2]))}, L, 2), got {landmarks.shape}"
        )
    N = pos.shape[-2]
    p = pos.astype(np.float32) / size
    lm = landmarks.astype(np.float32) / size
    rel_l = lm[..., None, :, :] - p[..., :, None, :]  # (..., N, L, 2)
    rel_a = p[..., None, :, :] - p[..., :, None, :]  # (..., N, N, 2)
    keep = ~np.eye(N, dtype=bool)
    rel_a = rel_a[..., keep, :].reshape(*pos.shape[:-2], N, N - 1, 2)
    obs = np.concatenate(
        [p, rel_l.reshape(*rel_l.shape[:-2], -1), rel_a.reshape(*rel_a.shape[:-2], -1)],
        -1,
    )
    state = np.concatenate(
        [p.reshape(*p.shape[:-2], -1), lm.reshape(*lm.shape[:-2], -1)], -1
    )
    return obs.astype(np.float32), state.astype(np.float32)


class CoopGridEnv:
    """``n_envs`` CoopGrid games stepped together (vectorised; one kernel call per step).

    Reward per step ``-D/10 - 0.5 C`` (``D``: summed landmark-to-nearest-agent distance, ``C``:
    agent pairs sharing a cell); an episode lasts ``horizon`` steps and succeeds iff every landmark
    is covered after the last one.
    """

    n_actions = omapl_kernels.N_ACTIONS

    def __init__(
        self,
        n_envs: int,
        size: int = 5,
        n_agents: int = 3,
        n_landmarks: int = 3,
        horizon: int = 12,
    ) -> None:
        """Args: n_envs, size (>= 2), n_agents, n_landmarks (<= n_agents), horizon (>= 1).

        Raises:
            ValueError: a size out of range (named)."""
        self.n_envs = check_int(n_envs, "n_envs", low=1)
        self.size = check_int(size, "size", low=2, high=2**15)
        self.n_agents = check_int(n_agents, "n_agents", low=1, high=32)
        self.n_landmarks = check_int(
            n_landmarks, "n_landmarks", low=1, high=self.n_agents
        )
        self.horizon = check_int(horizon, "horizon", low=1)
        self.obs_dim = 2 + 2 * self.n_landmarks + 2 * (self.n_agents - 1)
        self.state_dim = 2 * self.n_agents + 2 * self.n_landmarks
        self.pos = self.landmarks = None
        self.t = 0

    def sample_starts(
        self, rng: np.random.Generator, n: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Uniform start positions (n, N, 2) and distinct landmark cells (n, L, 2) from ``rng``.

        Raises:
            TypeError: ``rng`` not a Generator. ValueError: ``n < 1``, more games than memory holds."""
        rng = check_rng(rng)
        n = self.n_envs if n is None else check_int(n, "n", low=1)
        check_budget(
            f"CoopGrid starts (n={n}, size={self.size})",
            n_bytes=16.0
            * n
            * (self.size * self.size + 2 * self.n_agents + 2 * self.n_landmarks),
        )
        pos = rng.integers(0, self.size, size=(n, self.n_agents, 2)).astype(np.int32)
        cells = np.argsort(rng.random((n, self.size * self.size)), axis=1)[
            :, : self.n_landmarks
        ]
        lm = np.stack([cells % self.size, cells // self.size], -1).astype(np.int32)
        return pos, lm

    def _observe(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        obs, state = grid_observations(self.pos, self.landmarks, self.size)
        return obs, state, omapl_kernels.available_actions(self.pos, self.size)

    def reset(
        self, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """New games from ``rng``: ``(obs (E, N, o), state (E, s), avail (E, N, 5) bool)``."""
        self.pos, self.landmarks = self.sample_starts(rng)
        self.t = 0
        return self._observe()

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Joint step: ``(obs, state, avail, reward (E,) float32, done (E,) bool, covered (E,) bool)``.

        Raises:
            RuntimeError: stepped before :meth:`reset` or after the horizon. ValueError: bad actions.
        """
        if self.pos is None or self.t >= self.horizon:
            raise RuntimeError(
                "call reset() first (the episode is over or not started)"
            )
        self.pos, r, cov = omapl_kernels.coopgrid_step(
            self.pos, actions, self.landmarks, self.size
        )
        self.t += 1
        done = np.full(self.n_envs, self.t >= self.horizon)
        return (*self._observe(), r, done, cov)


# --------------------------------------------------------------------------------------
# PettingZoo MPE simple_spread (package mpe2), continuous actions
# --------------------------------------------------------------------------------------


def mpe_expert_actions(obs: np.ndarray, n_landmarks: int) -> np.ndarray:
    """A scripted simple_spread expert: each agent heads for a landmark (greedy assignment by
    distance, agents in order), action in [-1, 1]^2 (x, y velocity) -> (N, 2).

    ``obs (N, o)``: simple_spread's ``[vel(2), pos(2), landmark offsets (2 L), ...]``.

    Raises:
        ValueError: ``obs`` not 2-D with at least ``4 + 2 L`` columns, ``n_landmarks < 1``."""
    n_landmarks = check_int(n_landmarks, "n_landmarks", low=1)
    obs = check_array(obs, "obs", ndim=2, dtype=np.float32)
    if obs.shape[1] < 4 + 2 * n_landmarks:
        raise ValueError(
            f"obs must have at least {4 + 2 * n_landmarks} columns for {n_landmarks} landmarks, "
            f"got shape {obs.shape}"
        )
    N = obs.shape[0]
    rel = obs[:, 4 : 4 + 2 * n_landmarks].reshape(N, n_landmarks, 2)
    d = np.linalg.norm(rel, axis=-1)
    taken = np.zeros(n_landmarks, dtype=bool)
    out = np.zeros((N, 2), dtype=np.float32)
    for i in np.argsort(d.min(axis=1)):
        di = np.where(taken, np.inf, d[i])
        l = int(np.argmin(di))
        taken[l] = True
        out[i] = np.clip(3.0 * rel[i, l], -1.0, 1.0)
    return out


class MPESpreadAdapter:
    """A thin adapter of ``mpe2.simple_spread_v3`` (continuous actions) to O-MAPL's arrays.

    The learner's action ``u in [-1, 1]^2`` is mapped to simple_spread's 5 non-negative forces
    ``[0, max(-u_x, 0), max(u_x, 0), max(-u_y, 0), max(u_y, 0)]``. Observations are (N, 18) for
    3 agents; the state is PettingZoo's ``state()`` (all observations concatenated).
    """

    act_dim = 2

    def __init__(
        self, n_agents: int = 3, max_cycles: int = 25, local_ratio: float = 0.5
    ) -> None:
        """Args: n_agents (= landmarks, 1 to 64), max_cycles (horizon, 1 to 10^5), local_ratio (simple_spread's).

        Raises:
            ValueError: a size or ``local_ratio`` out of range (named)."""
        from mpe2 import simple_spread_v3

        self.n_agents = check_int(n_agents, "n_agents", low=1, high=64)
        self.horizon = check_int(max_cycles, "max_cycles", low=1, high=100_000)
        self.env = simple_spread_v3.parallel_env(
            N=self.n_agents,
            max_cycles=self.horizon,
            continuous_actions=True,
            local_ratio=check_real(local_ratio, "local_ratio", low=0.0, high=1.0),
        )
        self.agents = [f"agent_{i}" for i in range(self.n_agents)]
        self.obs_dim = int(self.env.observation_space(self.agents[0]).shape[0])
        self.state_dim = int(self.env.state_space.shape[0])

    def _pack(self, obs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        o = np.stack([np.asarray(obs[a], dtype=np.float32) for a in self.agents])
        return o, np.asarray(self.env.state(), dtype=np.float32)

    def reset(self, key: int) -> tuple[np.ndarray, np.ndarray]:
        """Reset with the integer ``key`` (PettingZoo's ``reset(seed=key)``): ``(obs (N, o), state (s,))``."""
        obs, _ = self.env.reset(seed=check_int(key, "key", low=0))
        return self._pack(obs)

    def step(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, bool]:
        """Apply ``u (N, 2)`` in [-1, 1]: ``(obs, state, team reward, done)``."""
        u = check_array(u, "u", shape=(self.n_agents, 2), dtype=np.float32)
        u = np.clip(u, -1.0, 1.0)
        forces = np.stack(
            [
                np.zeros(self.n_agents),
                np.maximum(-u[:, 0], 0),
                np.maximum(u[:, 0], 0),
                np.maximum(-u[:, 1], 0),
                np.maximum(u[:, 1], 0),
            ],
            -1,
        ).astype(np.float32)
        obs, rew, term, trunc, _ = self.env.step(
            {a: forces[i] for i, a in enumerate(self.agents)}
        )
        done = not self.env.agents or any(term.values()) or any(trunc.values())
        o, s = (
            self._pack(obs)
            if obs
            else (
                np.zeros((self.n_agents, self.obs_dim), np.float32),
                np.zeros(self.state_dim, np.float32),
            )
        )
        return o, s, float(np.mean([rew[a] for a in self.agents])), bool(done)
