"""Offline data and preference labels: the eps-expert datasets, segment pairs, the rule and the
noisy-annotator labels, and the LLM prompt (its structure follows the official ``llm_generate.py``).

The paper labels SMAC pairs with GPT-4o from a text summary of each trajectory. No model can be
called here, so :class:`NoisyOracleAnnotator` stands in: it reads the same prompt, parses each
trajectory's team return and answers ``#1``/``#2`` by a Bradley-Terry draw on the returns, with a
fraction of answers flipped (a reconstruction of an imperfect annotator, not GPT-4o).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from icml25.checks import (
    check_array,
    check_budget,
    check_choice,
    check_int,
    check_probability,
    check_real,
    check_rng,
)
from icml25.kernels import omapl_kernels

from ._checks import PairBatch, make_pair_batch
from .envs import CoopGridEnv, MPESpreadAdapter, grid_observations, mpe_expert_actions

__all__ = [
    "Trajectories",
    "generate_offline_dataset",
    "generate_mpe_dataset",
    "concat_trajectories",
    "PreferencePairs",
    "make_preference_pairs",
    "annotate_pairs",
    "summarise_trajectory",
    "build_llm_prompt",
    "NoisyOracleAnnotator",
    "pair_batch",
    "subset",
]


@dataclass(frozen=True)
class Trajectories:
    """``n`` offline trajectories of horizon ``H`` (NumPy arrays).

    Attributes:
        obs: (n, H + 1, N, o) float32; state: (n, H + 1, s) float32; actions: (n, H, N) int64 or
        (n, H, N, a) float32; rewards: (n, H) float32 team rewards; avail: (n, H + 1, N, A) bool or
        ``None`` (continuous); dones: (n, H) float32; success: (n,) bool; quality: (n,) int (0 best).
    """

    obs: np.ndarray
    state: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    avail: np.ndarray | None
    dones: np.ndarray
    success: np.ndarray
    quality: np.ndarray

    def __len__(self) -> int:
        """Number of trajectories."""
        return int(self.obs.shape[0])

    @property
    def returns(self) -> np.ndarray:
        """Undiscounted team returns (n,) float64."""
        return self.rewards.astype(np.float64).sum(-1)


def subset(traj: Trajectories, idx: np.ndarray) -> Trajectories:
    """The trajectories ``idx`` of ``traj``."""
    idx = check_array(idx, "idx", kind="int", ndim=1, low=0, high=len(traj) - 1)
    return Trajectories(
        *(
            None if x is None else x[idx]
            for x in (
                traj.obs,
                traj.state,
                traj.actions,
                traj.rewards,
                traj.avail,
                traj.dones,
                traj.success,
                traj.quality,
            )
        )
    )


def concat_trajectories(parts: list[Trajectories]) -> Trajectories:
    """One pool of several datasets (their ``quality`` fields kept)."""
    if not parts or not all(isinstance(p, Trajectories) for p in parts):
        raise TypeError("parts must be a non-empty list of Trajectories")
    cat = lambda xs: None if xs[0] is None else np.concatenate(xs)  # noqa: E731
    return Trajectories(
        *(
            cat([getattr(p, f) for p in parts])
            for f in (
                "obs",
                "state",
                "actions",
                "rewards",
                "avail",
                "dones",
                "success",
                "quality",
            )
        )
    )


def generate_offline_dataset(
    env: CoopGridEnv,
    eps: float,
    n_traj: int,
    rng: np.random.Generator,
    quality: int = 0,
) -> Trajectories:
    """``n_traj`` CoopGrid trajectories of the scripted expert with eps-random actions.

    Start states come from ``rng``; the roll-out is the kernel :func:`icml25.kernels.omapl_kernels.coopgrid_rollout`
    keyed by a 63-bit seed drawn from ``rng`` (so the CPU and the GPU give identical data).

    Args:
        env: the game's sizes; eps in [0, 1]; n_traj >= 1; rng: a NumPy Generator; quality: label
        stored with the data (0 = best).

    Raises:
        TypeError: ``env`` not a CoopGridEnv, ``rng`` not a Generator. ValueError: eps, n_traj.
    """
    if not isinstance(env, CoopGridEnv):
        raise TypeError(f"env must be a CoopGridEnv, got {type(env).__name__}")
    rng = check_rng(rng)
    eps = check_probability(eps, "eps")
    n_traj = check_int(n_traj, "n_traj", low=1)
    pos0, lm = env.sample_starts(rng, n_traj)
    seed = int(rng.integers(0, 2**63 - 1))
    actions, rewards, positions, success = omapl_kernels.coopgrid_rollout(
        pos0, lm, env.size, env.horizon, eps, seed
    )
    lm_t = np.broadcast_to(lm[:, None], (n_traj, env.horizon + 1, *lm.shape[1:]))
    obs, state = grid_observations(positions, lm_t, env.size)
    avail = omapl_kernels.available_actions(positions, env.size)
    dones = np.zeros((n_traj, env.horizon), dtype=np.float32)
    dones[:, -1] = 1.0
    return Trajectories(
        obs,
        state,
        actions.astype(np.int64),
        rewards,
        avail,
        dones,
        success,
        np.full(n_traj, check_int(quality, "quality", low=0)),
    )


def generate_mpe_dataset(
    adapter: MPESpreadAdapter,
    noise: float,
    n_traj: int,
    rng: np.random.Generator,
    quality: int = 0,
) -> Trajectories:
    """simple_spread trajectories of :func:`~icml25.omapl.envs.mpe_expert_actions` plus Gaussian
    noise of scale ``noise`` (clipped to [-1, 1]); episode seeds drawn from ``rng``.

    Success is every landmark within 0.1 of an agent at the end (our definition).

    Raises:
        TypeError: ``adapter`` not an :class:`MPESpreadAdapter`, ``rng`` not a Generator.
        ValueError: ``noise < 0``, ``n_traj < 1``, ``quality < 0``, a dataset too large for memory."""
    if not isinstance(adapter, MPESpreadAdapter):
        raise TypeError(
            f"adapter must be an MPESpreadAdapter, got {type(adapter).__name__}"
        )
    quality = check_int(quality, "quality", low=0)
    rng = check_rng(rng)
    noise = check_real(noise, "noise", low=0.0)
    n_traj = check_int(n_traj, "n_traj", low=1)
    H, N = adapter.horizon, adapter.n_agents
    check_budget(
        f"generate_mpe_dataset(n_traj={n_traj})",
        n_bytes=4.0
        * n_traj
        * (H + 1)
        * (N * adapter.obs_dim + adapter.state_dim + 2 * N + 2),
    )
    obs = np.zeros((n_traj, H + 1, N, adapter.obs_dim), np.float32)
    state = np.zeros((n_traj, H + 1, adapter.state_dim), np.float32)
    acts = np.zeros((n_traj, H, N, 2), np.float32)
    rew = np.zeros((n_traj, H), np.float32)
    success = np.zeros(n_traj, dtype=bool)
    for k in range(n_traj):
        o, s = adapter.reset(int(rng.integers(0, 2**31 - 1)))
        obs[k, 0], state[k, 0] = o, s
        for t in range(H):
            u = np.clip(
                mpe_expert_actions(o, N) + noise * rng.standard_normal((N, 2)), -1, 1
            ).astype(np.float32)
            o, s, r, _ = adapter.step(u)
            obs[k, t + 1], state[k, t + 1], acts[k, t], rew[k, t] = o, s, u, r
        rel = obs[k, H, :, 4 : 4 + 2 * N].reshape(N, N, 2)
        success[k] = bool((np.linalg.norm(rel, axis=-1).min(axis=0) < 0.1).all())
    dones = np.zeros((n_traj, H), np.float32)
    dones[:, -1] = 1.0
    return Trajectories(
        obs, state, acts, rew, None, dones, success, np.full(n_traj, quality)
    )


@dataclass(frozen=True)
class PreferencePairs:
    """Pairs of trajectories of a pool: ``idx1, idx2 (P,) int64`` and labels ``y (P,) int64``
    (1 iff the first is preferred)."""

    idx1: np.ndarray
    idx2: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        """Number of pairs."""
        return int(self.y.shape[0])

    def take(self, sel: np.ndarray) -> "PreferencePairs":
        """The pairs ``sel``."""
        return PreferencePairs(self.idx1[sel], self.idx2[sel], self.y[sel])


def make_preference_pairs(
    pool: Trajectories,
    n_pairs: int,
    rng: np.random.Generator,
    mode: str = "quality",
    flip_prob: float = 0.0,
    temperature: float = 1.0,
) -> PreferencePairs:
    """Segment pairs and their labels (Sec. 5; rule labels as in the official code).

    ``mode="quality"``: the two trajectories come from datasets of different quality, and the
    better one is preferred (the code's rule). ``mode="return_bt"``: two trajectories of the whole
    pool, ``P(1 > 2) = sigmoid((R_1 - R_2) / temperature)`` on true returns. Then each label is
    flipped with probability ``flip_prob``.

    Raises:
        TypeError: ``rng`` not a Generator. ValueError: ``n_pairs``, ``mode``, ``flip_prob``,
            ``temperature``, a pool with a single quality level in ``"quality"`` mode.
    """
    if not isinstance(pool, Trajectories):
        raise TypeError(f"pool must be Trajectories, got {type(pool).__name__}")
    rng = check_rng(rng)
    n_pairs = check_int(n_pairs, "n_pairs", low=1)
    mode = check_choice(mode, "mode", ("quality", "return_bt"))
    flip_prob = check_probability(flip_prob, "flip_prob")
    temperature = check_real(temperature, "temperature", low=0.0, low_open=True)
    check_budget(f"make_preference_pairs(n_pairs={n_pairs})", n_bytes=8.0 * 8 * n_pairs)
    if len(pool) < 2:
        raise ValueError(
            f"pool must hold at least 2 trajectories to pair, got {len(pool)}"
        )
    levels = np.unique(pool.quality)
    if mode == "quality":
        if levels.size < 2:
            raise ValueError(
                "mode='quality' needs a pool with at least two quality levels"
            )
        by = {q: np.flatnonzero(pool.quality == q) for q in levels}
        qa = rng.integers(0, levels.size, n_pairs)
        qb = (qa + rng.integers(1, levels.size, n_pairs)) % levels.size
        i1 = np.array([rng.choice(by[levels[a]]) for a in qa], dtype=np.int64)
        i2 = np.array([rng.choice(by[levels[b]]) for b in qb], dtype=np.int64)
        y = (levels[qa] < levels[qb]).astype(np.int64)
    else:
        i1 = rng.integers(0, len(pool), n_pairs)
        i2 = (i1 + rng.integers(1, len(pool), n_pairs)) % len(pool)
        R = pool.returns
        p = 0.5 * (1.0 + np.tanh(0.5 * (R[i1] - R[i2]) / temperature))
        y = (rng.random(n_pairs) < p).astype(np.int64)
    flip = rng.random(n_pairs) < flip_prob
    return PreferencePairs(
        i1.astype(np.int64), i2.astype(np.int64), np.where(flip, 1 - y, y)
    )


def summarise_trajectory(pool: Trajectories, i: int) -> list[str]:
    """The facts an annotator sees about trajectory ``i`` of a CoopGrid pool (the official prompt
    lists final health and episode length for SMAC; these are CoopGrid's analogues).

    Raises:
        TypeError: ``pool`` not CoopGrid Trajectories. ValueError: ``i`` out of range."""
    if not isinstance(pool, Trajectories) or pool.avail is None:
        raise TypeError(
            f"pool must be CoopGrid Trajectories (discrete actions), got {type(pool).__name__}"
        )
    i = check_int(i, "i", low=0, high=len(pool) - 1)
    N = pool.obs.shape[2]
    L = (pool.obs.shape[3] - 2 - 2 * (N - 1)) // 2
    rel = pool.obs[i, -1, :, 2 : 2 + 2 * L].reshape(N, L, 2)
    covered = int((np.abs(rel).sum(-1).min(axis=0) < 1e-6).sum())
    return [
        f"    1) Landmarks Covered at the End : {covered} of {L}",
        f"    2) Total Team Reward : {pool.returns[i]:.3f}",
        f"    3) Reward of the Last Step : {float(pool.rewards[i, -1]):.3f}",
        f"2. Total Number of Steps : {pool.rewards.shape[1]}",
    ]


def build_llm_prompt(summary1: list[str], summary2: list[str]) -> str:
    """The annotation prompt for one pair, built like the official ``llm_generate.py``: a task
    description, the two trajectories' facts, and an instruction to answer ``#1``, ``#2`` or ``#0``."""
    for name, s in (("summary1", summary1), ("summary2", summary2)):
        if not isinstance(s, list) or not all(isinstance(x, str) for x in s):
            raise TypeError(
                f"{name} must be a list of strings (summarise_trajectory's output)"
            )
    head = [
        "- Team Configuration : a team of agents on a square grid, with as many landmarks as agents.",
        "- Situation Description : the agents move together for a fixed number of steps; each step costs the "
        "distance from every landmark to its nearest agent, and agents sharing a cell collide.",
        "- Objective : cover every landmark with an agent, quickly and without collisions.",
        "* Important Notice : prefer the trajectory with the higher total team reward; when they are close, "
        "prefer the one that covers more landmarks at the end.",
    ]
    ask = [
        "Your task is to inform which one is better between [Trajectory1] and [Trajectory2] based on the "
        "information mentioned above. If [Trajectory1] seems better, output #1; if [Trajectory2] seems better, "
        "output #2; if they seem similar, output #0.",
        "",
        "Omit detailed explanations and just provide the answer.",
    ]
    body = [
        "[Trajectory1]",
        "1. Final State Information",
        *summary1,
        "[Trajectory2]",
        "1. Final State Information",
        *summary2,
    ]
    return "\n".join(head + [""] + body + [""] + ask)


_RETURN = re.compile(r"Total Team Reward : (-?\d+(?:\.\d+)?)")


class NoisyOracleAnnotator:
    """A stand-in for the LLM annotator: parses both team returns from a prompt and answers ``#1``
    with probability ``sigmoid((R_1 - R_2) / temperature)``, then flips with probability
    ``flip_prob`` (a reconstruction; GPT-4o itself is not available)."""

    def __init__(
        self, flip_prob: float, temperature: float, rng: np.random.Generator
    ) -> None:
        """Args: flip_prob in [0, 1]; temperature > 0; rng: a NumPy Generator.

        Raises:
            TypeError: ``rng`` not a Generator. ValueError: out-of-range values."""
        self.flip_prob = check_probability(flip_prob, "flip_prob")
        self.temperature = check_real(
            temperature, "temperature", low=0.0, low_open=True
        )
        self.rng = check_rng(rng)

    def answer(self, prompt: str) -> str:
        """``"#1"`` or ``"#2"`` for one prompt of :func:`build_llm_prompt`.

        Raises:
            ValueError: the prompt does not hold two team rewards."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
        vals = [float(x) for x in _RETURN.findall(prompt)]
        if len(vals) != 2:
            raise ValueError(f"prompt must state two team rewards, found {len(vals)}")
        p = 1.0 / (1.0 + np.exp(-(vals[0] - vals[1]) / self.temperature))
        first = self.rng.random() < p
        if self.rng.random() < self.flip_prob:
            first = not first
        return "#1" if first else "#2"


def annotate_pairs(
    pool: Trajectories,
    n_pairs: int,
    annotator: NoisyOracleAnnotator,
    rng: np.random.Generator,
) -> PreferencePairs:
    """``n_pairs`` random pairs of the pool labelled by ``annotator`` from their prompts.

    Raises:
        TypeError: ``pool``, ``annotator`` or ``rng`` of the wrong kind. ValueError: ``n_pairs < 1``,
            a pool of fewer than 2 trajectories, more pairs than memory holds."""
    if not isinstance(pool, Trajectories):
        raise TypeError(f"pool must be Trajectories, got {type(pool).__name__}")
    rng = check_rng(rng)
    n_pairs = check_int(n_pairs, "n_pairs", low=1)
    check_budget(f"annotate_pairs(n_pairs={n_pairs})", n_bytes=8.0 * 8 * n_pairs)
    if len(pool) < 2:
        raise ValueError(
            f"pool must hold at least 2 trajectories to pair, got {len(pool)}"
        )
    if not isinstance(annotator, NoisyOracleAnnotator):
        raise TypeError(
            f"annotator must be a NoisyOracleAnnotator, got {type(annotator).__name__}"
        )
    i1 = rng.integers(0, len(pool), n_pairs)
    i2 = (i1 + rng.integers(1, len(pool), n_pairs)) % len(pool)
    y = np.array(
        [
            annotator.answer(
                build_llm_prompt(
                    summarise_trajectory(pool, a), summarise_trajectory(pool, b)
                )
            )
            == "#1"
            for a, b in zip(i1, i2)
        ],
        dtype=np.int64,
    )
    return PreferencePairs(i1.astype(np.int64), i2.astype(np.int64), y)


def pair_batch(
    pool: Trajectories, pairs: PreferencePairs, sel: np.ndarray
) -> PairBatch:
    """The :class:`PairBatch` of pairs ``sel`` (whole trajectories as segments, ``T = H``).

    Raises:
        TypeError: ``pool`` or ``pairs`` of the wrong kind. ValueError: ``sel`` empty or out of
            range, a pair that indexes past the pool."""
    if not isinstance(pool, Trajectories):
        raise TypeError(f"pool must be Trajectories, got {type(pool).__name__}")
    if not isinstance(pairs, PreferencePairs):
        raise TypeError(f"pairs must be PreferencePairs, got {type(pairs).__name__}")
    sel = check_array(
        sel, "sel", kind="int", ndim=1, low=0, high=len(pairs) - 1, min_size=1
    )
    top = max(int(pairs.idx1.max()), int(pairs.idx2.max()))
    if top >= len(pool):
        raise ValueError(
            f"pairs index trajectories up to {top}, but pool holds {len(pool)}: pairs of another pool?"
        )
    idx = np.stack([pairs.idx1[sel], pairs.idx2[sel]])  # (2, B)
    get = lambda a: a[idx]  # noqa: E731
    avail = None if pool.avail is None else get(pool.avail)[:, :, :-1]
    return make_pair_batch(
        get(pool.obs)[:, :, :-1],
        get(pool.obs)[:, :, 1:],
        get(pool.state)[:, :, :-1],
        get(pool.state)[:, :, 1:],
        get(pool.actions),
        get(pool.dones),
        avail,
        pairs.y[sel],
    )
