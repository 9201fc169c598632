"""PointMazeLite (our NumPy U-maze), its controllers and datasets, replay buffers, mixed batches.

D4RL's AntMaze data are downloads, so the chapter builds its own AntMaze-like task: a point in a
3 x 3 grid of unit cells with the two middle cells of the bottom rows walled off (a U), started
in the bottom-left cell, rewarded 1 (and terminated) within ``goal_radius`` of the bottom-right
cell's centre. Actions are velocities in [-1, 1]^2, moved ``step_size`` per unit; a move into
a wall slides along it. Episodes time out after ``horizon`` steps (a time-out, not a terminal).
The datasets imitate AntMaze's: a noisy waypoint controller heading for random goals
("diverse"), for the true goal ("medium"), or a mixture of noise levels ("replay"); rewards
are relabelled for the true goal.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from icml25.checks import (
    check_array,
    check_choice,
    check_int,
    check_probability,
    check_real,
    check_rng,
)

from ._checks import _check_transitions

__all__ = [
    "PointMazeLite",
    "waypoint_controller",
    "generate_dataset",
    "ReplayBuffer",
    "OfflineBuffer",
    "OnlineBuffer",
    "mixed_batch",
    "normalized_score",
    "evaluate_policy",
]


class PointMazeLite:
    """A vectorised point-mass U-maze (our construction, AntMaze-like; see the module docstring).

    Args:
        scale: cells per side of the maze's 3 x 3 layout (1 = 3 x 3 units; 2 doubles every length
            and the horizon).
        step_size: distance moved per unit action (> 0); horizon: steps before the time-out;
        goal_radius: success radius (> 0).
    """

    def __init__(
        self,
        scale: int = 1,
        step_size: float = 0.15,
        horizon: int = 100,
        goal_radius: float = 0.3,
    ) -> None:
        self.scale = check_int(scale, "scale", low=1)
        self.step_size = check_real(step_size, "step_size", low=0.0, low_open=True)
        self.horizon = check_int(horizon, "horizon", low=1) * self.scale
        self.goal_radius = check_real(
            goal_radius, "goal_radius", low=0.0, low_open=True
        )
        self.size = 3.0 * self.scale
        self.start = np.array([0.5, 0.5]) * self.scale
        self.goal = np.array([2.5, 0.5]) * self.scale
        self.state_dim, self.act_dim = 2, 2
        self.pos = np.zeros((0, 2))
        self.t = np.zeros(0, dtype=np.int64)

    def in_wall(self, p: np.ndarray) -> np.ndarray:
        """Bool mask of points (N, 2) inside the wall block [1, 2] x [0, 2] (times ``scale``)."""
        s = self.scale
        return (p[:, 0] > 1.0 * s) & (p[:, 0] < 2.0 * s) & (p[:, 1] < 2.0 * s)

    def cell(self, p: np.ndarray) -> np.ndarray:
        """Cell index ``3 j + i`` of points (N, 2) in the 3 x 3 layout."""
        ij = np.clip((p / self.scale).astype(int), 0, 2)
        return ij[:, 1] * 3 + ij[:, 0]

    def reset(
        self, n: int, rng: np.random.Generator, random_start: bool = False
    ) -> np.ndarray:
        """Start ``n`` episodes; returns positions (n, 2) (the start cell's centre + U(-0.1, 0.1)^2,
        or uniform over the free space when ``random_start``)."""
        n = check_int(n, "n", low=1)
        rng = check_rng(rng)
        if random_start:
            p = self.free_positions(n, rng)
        else:
            p = self.start[None, :] + rng.uniform(-0.1, 0.1, size=(n, 2)) * self.scale
        self.pos = p.astype(np.float64)
        self.t = np.zeros(n, dtype=np.int64)
        return self.pos.astype(np.float32)

    def free_positions(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n, 2) float64 positions uniform over the free space (rejection sampling); no state change."""
        n = check_int(n, "n", low=1)
        rng = check_rng(rng)
        p = rng.uniform(0.0, self.size, size=(n, 2))
        bad = self.in_wall(p)
        while bad.any():
            p[bad] = rng.uniform(0.0, self.size, size=(int(bad.sum()), 2))
            bad = self.in_wall(p)
        return p

    def _move(self, p: np.ndarray, a: np.ndarray) -> np.ndarray:
        q = np.clip(p + self.step_size * a, 1e-6, self.size - 1e-6)
        hit = self.in_wall(q)
        if hit.any():  # slide: keep the coordinate move that stays free, else stay
            qx = np.stack([q[:, 0], p[:, 1]], axis=1)
            qy = np.stack([p[:, 0], q[:, 1]], axis=1)
            okx, oky = ~self.in_wall(qx), ~self.in_wall(qy)
            q = np.where(
                hit[:, None],
                np.where(okx[:, None], qx, np.where(oky[:, None], qy, p)),
                q,
            )
        return q

    def step(self, a: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Advance every episode by one step.

        Args:
            a: (n, 2) actions in [-1, 1].

        Returns:
            ``(next_positions (n, 2) float32, rewards (n,), terminals (n,), timeouts (n,))``;
            rewards 1 and terminals 1 within ``goal_radius`` of the goal.

        Raises:
            ValueError: wrong shape or actions outside the box (naming ``a``).
        """
        a = check_array(
            a,
            "a",
            shape=(self.pos.shape[0], 2),
            dtype=np.float64,
            low=-1.0 - 1e-6,
            high=1.0 + 1e-6,
        )
        self.pos = self._move(self.pos, a)
        self.t = self.t + 1
        at_goal = np.linalg.norm(self.pos - self.goal[None], axis=1) <= self.goal_radius
        timeout = (self.t >= self.horizon) & ~at_goal
        return (
            self.pos.astype(np.float32),
            at_goal.astype(np.float32),
            at_goal.astype(np.float32),
            timeout.astype(np.float32),
        )

    def reward_of(self, p: np.ndarray) -> np.ndarray:
        """Sparse reward (N,) of positions (N, 2) for the true goal (the relabelling)."""
        return (np.linalg.norm(p - self.goal[None], axis=1) <= self.goal_radius).astype(
            np.float32
        )

    def next_cell_table(self) -> np.ndarray:
        """(9, 9) int: the next cell on a shortest cell path from cell i to cell j (BFS on free cells)."""
        free = [c for c in range(9) if c not in (1, 4)]
        nbr = {
            c: [d for d in free if abs(d % 3 - c % 3) + abs(d // 3 - c // 3) == 1]
            for c in free
        }
        table = np.full((9, 9), -1, dtype=np.int64)
        for goal in free:
            dist = {goal: 0}
            queue = deque([goal])
            while queue:
                x = queue.popleft()
                for y in nbr[x]:
                    if y not in dist:
                        dist[y] = dist[x] + 1
                        queue.append(y)
            for c in free:
                table[c, goal] = (
                    goal if c == goal else min(nbr[c], key=lambda y: dist[y])
                )
        return table


def waypoint_controller(
    env: PointMazeLite, pos: np.ndarray, goals: np.ndarray
) -> np.ndarray:
    """Noise-free expert actions (N, 2): head for the centre of the next cell on the cell path to
    ``goals`` (N, 2), or straight for the goal inside its cell; unit speed, clipped to the box."""
    if not isinstance(env, PointMazeLite):
        raise TypeError(f"env must be a PointMazeLite, got {type(env).__name__}")
    pos = check_array(pos, "pos", shape=(None, 2))
    goals = check_array(goals, "goals", shape=(pos.shape[0], 2))
    table = env.next_cell_table()
    c_from, c_goal = env.cell(pos), env.cell(goals)
    nxt = table[c_from, c_goal]
    centre = (np.stack([nxt % 3, nxt // 3], axis=1) + 0.5) * env.scale
    target = np.where((c_from == c_goal)[:, None], goals, centre)
    d = target - pos
    return np.clip(
        d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-9), -1.0, 1.0
    )


def generate_dataset(
    env: PointMazeLite,
    controller: Any,
    noise: float,
    n: int,
    kind: str,
    rng: np.random.Generator,
    n_envs: int = 64,
) -> "ReplayBuffer":
    """An offline dataset of ``n`` transitions from ``controller`` plus Gaussian action noise.

    ``kind``: ``"medium"`` (heads for the true goal from random starts), ``"diverse"`` (random goals,
    resampled when reached: AntMaze-diverse-like) or ``"replay"`` (as diverse, the noise std of each
    episode uniform in [0, 2 noise]). Rewards and terminals are relabelled for the true goal; the
    transitions of each parallel episode stream are stored contiguously, so episodes end exactly
    where ``terminals`` or ``timeouts`` say.

    Args:
        env: a :class:`PointMazeLite`; controller: ``f(env, pos (N, 2), goals (N, 2)) -> actions``;
        noise: action-noise std (>= 0); n: transitions (>= 1); kind: see above; rng: Generator;
        n_envs: parallel streams.

    Returns:
        a :class:`ReplayBuffer` holding the transitions (and ``timeouts``).
    """
    if not isinstance(env, PointMazeLite):
        raise TypeError(f"env must be a PointMazeLite, got {type(env).__name__}")
    if not callable(controller):
        raise TypeError("controller must be callable f(env, pos, goals)")
    noise = check_real(noise, "noise", low=0.0)
    n = check_int(n, "n", low=1)
    kind = check_choice(kind, "kind", ("medium", "diverse", "replay"))
    rng = check_rng(rng)
    n_envs = check_int(n_envs, "n_envs", low=1)
    T = -(-n // n_envs)

    def new_goals(m: int) -> np.ndarray:
        if kind == "medium":
            return np.repeat(env.goal[None], m, axis=0)
        return env.free_positions(m, rng)

    pos = env.free_positions(n_envs, rng)
    goals = new_goals(n_envs)
    sig = (
        rng.uniform(0, 2 * noise, n_envs)
        if kind == "replay"
        else np.full(n_envs, noise)
    )
    env.pos = pos.copy()
    env.t = np.zeros(n_envs, dtype=np.int64)
    cols = {
        k: []
        for k in (
            "observations",
            "actions",
            "rewards",
            "next_observations",
            "terminals",
            "timeouts",
        )
    }
    for t in range(T):
        s = env.pos.copy()
        a_c = check_array(
            controller(env, s, goals), "controller's output", shape=(n_envs, 2)
        )
        a = np.clip(a_c + sig[:, None] * rng.standard_normal((n_envs, 2)), -1.0, 1.0)
        s2, r, term, tout = env.step(a)
        if t == T - 1:
            # each stream's last step ends its episode
            tout = np.where(term > 0, 0.0, 1.0).astype(np.float32)
        for k, v in zip(cols, (s, a, r, s2, term, tout)):
            cols[k].append(np.asarray(v, dtype=np.float32))
        reached = np.linalg.norm(env.pos - goals, axis=1) <= env.goal_radius
        if kind != "medium" and reached.any():
            goals[reached] = new_goals(int(reached.sum()))
        done = (term > 0) | (tout > 0)
        if done.any():
            m = int(done.sum())
            env.pos[done] = env.free_positions(m, rng)
            goals[done] = new_goals(m)
            if kind == "replay":
                sig[done] = rng.uniform(0, 2 * noise, m)
            env.t = np.where(done, 0, env.t)
    data = {
        k: np.stack(v, axis=1).reshape(n_envs * T, -1).squeeze(-1)
        if v[0].ndim == 1
        else np.stack(v, axis=1).reshape(n_envs * T, -1)
        for k, v in cols.items()
    }
    data = {k: v[:n] for k, v in data.items()}
    data["timeouts"][-1] = 0.0 if data["terminals"][-1] > 0 else 1.0
    return ReplayBuffer(data)


class ReplayBuffer:
    """Transitions as NumPy arrays (observations, actions in [-1, 1], rewards, next_observations,
    terminals, and optional timeouts), with uniform minibatches; ``add`` appends (online buffer).

    Raises:
        TypeError / ValueError naming the field: missing fields, mismatched lengths, actions
        outside the box, terminals not 0/1.
    """

    def __init__(
        self, data: dict | None = None, state_dim: int = 2, act_dim: int = 2
    ) -> None:
        if data is None:
            data = {
                "observations": np.zeros((0, state_dim)),
                "actions": np.zeros((0, act_dim)),
                "rewards": np.zeros(0),
                "next_observations": np.zeros((0, state_dim)),
                "terminals": np.zeros(0),
            }
        checked = _check_transitions(data, "data")
        tout = data.get("timeouts")
        checked["timeouts"] = (
            np.zeros(len(checked["rewards"]), np.float32)
            if tout is None
            else check_array(
                tout,
                "data['timeouts']",
                shape=(len(checked["rewards"]),),
                dtype=np.float32,
            )
        )
        self.data = checked

    def __len__(self) -> int:
        return int(self.data["rewards"].shape[0])

    def add(self, transitions: dict) -> None:
        """Append a mapping of transition arrays (the five fields; optional ``timeouts``)."""
        new = ReplayBuffer(transitions).data
        for k in ("observations", "actions"):
            if new[k].shape[1] != self.data[k].shape[1]:
                raise ValueError(
                    f"transitions['{k}'] must have {self.data[k].shape[1]} columns like the buffer, "
                    f"got {new[k].shape[1]}"
                )
        self.data = {k: np.concatenate([self.data[k], new[k]]) for k in self.data}

    def sample(
        self, batch_size: int, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """A uniform minibatch (with replacement) of the five fields."""
        batch_size = check_int(batch_size, "batch_size", low=1)
        rng = check_rng(rng)
        if len(self) == 0:
            raise ValueError("cannot sample from an empty buffer")
        idx = rng.integers(0, len(self), size=batch_size)
        return {k: v[idx] for k, v in self.data.items() if k != "timeouts"}


#: the offline dataset and the online replay are the same structure
OfflineBuffer = ReplayBuffer
OnlineBuffer = ReplayBuffer


def mixed_batch(
    off: ReplayBuffer,
    on: ReplayBuffer,
    batch_size: int,
    offline_ratio: float,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Symmetric sampling: ``round(offline_ratio B)`` rows from ``off``, the rest from ``on`` (all from
    ``off`` while ``on`` is empty). Returns the concatenated batch."""
    if not isinstance(off, ReplayBuffer) or not isinstance(on, ReplayBuffer):
        raise TypeError("off and on must be ReplayBuffers")
    B = check_int(batch_size, "batch_size", low=1)
    ratio = check_probability(offline_ratio, "offline_ratio")
    rng = check_rng(rng)
    for k in ("observations", "actions"):
        if len(on) and off.data[k].shape[1] != on.data[k].shape[1]:
            raise ValueError(
                f"off and on must have the same width of '{k}', got {off.data[k].shape[1]} and {on.data[k].shape[1]}"
            )
    n_off = B if len(on) == 0 else int(round(ratio * B))
    parts = [
        p
        for p in (
            off.sample(n_off, rng) if n_off else None,
            on.sample(B - n_off, rng) if B > n_off else None,
        )
        if p
    ]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def normalized_score(ret: Any, rand: float, expert: float) -> np.ndarray:
    """D4RL's normalised score ``100 (ret - rand) / (expert - rand)``.

    Raises:
        ValueError: ``expert == rand`` or non-finite values (naming the argument).
    """
    ret = check_array(ret, "ret", ndim=(0, 1))
    rand = check_real(rand, "rand")
    expert = check_real(expert, "expert")
    if expert == rand:
        raise ValueError("expert must differ from rand")
    return 100.0 * (ret - rand) / (expert - rand)


def evaluate_policy(
    policy: Any, env: PointMazeLite, n_episodes: int, rng: np.random.Generator
) -> dict[str, float]:
    """Run ``policy`` (``f(obs (N, 2)) -> actions (N, 2)``) for ``n_episodes`` parallel episodes from the
    start cell; returns ``success`` (fraction reaching the goal), ``return`` (mean undiscounted) and
    ``steps`` (mean episode length)."""
    if not callable(policy):
        raise TypeError("policy must be callable")
    if not isinstance(env, PointMazeLite):
        raise TypeError(f"env must be a PointMazeLite, got {type(env).__name__}")
    n = check_int(n_episodes, "n_episodes", low=1)
    rng = check_rng(rng)
    obs = env.reset(n, rng)
    alive = np.ones(n, dtype=bool)
    ret = np.zeros(n)
    steps = np.zeros(n)
    for _ in range(env.horizon):
        a = np.clip(
            check_array(policy(obs), "policy's output", shape=(n, 2), dtype=np.float64),
            -1.0,
            1.0,
        )
        a[~alive] = 0.0
        obs, r, term, tout = env.step(a)
        ret += r * alive
        steps += alive
        alive &= (term == 0) & (tout == 0)
        if not alive.any():
            break
    return {
        "success": float((ret > 0).mean()),
        "return": float(ret.mean()),
        "steps": float(steps.mean()),
    }
