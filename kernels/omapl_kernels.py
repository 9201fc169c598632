"""CoopGrid steps and scripted roll-outs, and the fused implied reward + Bradley-Terry logit (chapter 10).

CoopGrid is the chapter's own cooperative grid game (a reconstruction after the notes: the paper
uses SMAC and MaMuJoCo). ``E`` games run side by side on a ``size x size`` grid with ``N`` agents
and ``L`` landmarks. Actions: 0 stay, 1 up (``y+1``), 2 down, 3 right (``x+1``), 4 left; a move off
the grid is unavailable and, if taken, leaves the agent where it is. After the joint move the
team reward is ``r = -D/10 - 0.5 C`` (float32), ``D`` the sum over landmarks of the Manhattan
distance to the nearest agent and ``C`` the number of agent pairs on one cell; ``covered`` says
that every landmark holds an agent.

Kernels (``omapl_kernels.cu``), each with a reference (the contract), a CuPy launcher and a dispatcher:

- :func:`coopgrid_step`: one joint step of ``E`` games (NumPy in, NumPy out; bit-identical).
- :func:`coopgrid_rollout`: ``horizon`` steps of the scripted eps-expert, with eps-random actions
  from the book's counter-based hash :func:`icml25.kernels._splitmix64`, so the same ``seed``
  gives the same data on the CPU and on the GPU (bit-identical).
- :func:`segment_logits`: ``r_t = (sum_i w_i q_i + b - gamma (1 - d_t)(sum_i w'_i v'_i + b')) m_t``
  and the BT logit ``sum_t r^1_t - sum_t r^2_t`` (torch in, torch out; 1e-5 of the reference in
  float32). The training loss keeps PyTorch's autograd version, ``icml25.omapl.implied_reward``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml25.checks import check_array, check_budget, check_int, check_real, check_tensor
from icml25.common import gpu_available
from icml25.kernels import _splitmix64

__all__ = [
    "N_ACTIONS",
    "MOVES",
    "available_actions",
    "eps_threshold",
    "coopgrid_step",
    "coopgrid_step_reference",
    "coopgrid_step_gpu",
    "coopgrid_rollout",
    "coopgrid_rollout_reference",
    "coopgrid_rollout_gpu",
    "segment_logits",
    "segment_logits_reference",
    "segment_logits_gpu",
]

_BLOCK = 256
#: number of CoopGrid actions (stay, up, down, right, left)
N_ACTIONS = 5
#: (dx, dy) of each action
MOVES = np.array([[0, 0], [0, 1], [0, -1], [1, 0], [-1, 0]], dtype=np.int32)
#: the CUDA source keeps per-thread arrays of this many agents
_MAX_AGENTS = 32


def eps_threshold(eps: float) -> int:
    """``floor(eps 2^53)``: an action is replaced by a random one iff ``(h >> 11) < eps_threshold(eps)``."""
    return int(math.floor(float(eps) * 2.0**53))


def available_actions(pos: np.ndarray, size: int) -> np.ndarray:
    """``(..., N, 5)`` bool: which actions keep each agent of ``pos (..., N, 2)`` on the grid."""
    nxt = pos[..., None, :] + MOVES
    return ((nxt >= 0) & (nxt < size)).all(axis=-1)


def _team_reward(
    pos: np.ndarray, landmarks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Reward ``-D/10 - 0.5 C`` (float32, the kernel's order of operations) and ``covered``."""
    dist = np.abs(pos[:, :, None, :] - landmarks[:, None, :, :]).sum(-1)  # (E, N, L)
    nearest = dist.min(axis=1)  # (E, L)
    D = nearest.sum(axis=1)
    same = (pos[:, :, None, :] == pos[:, None, :, :]).all(-1)  # (E, N, N)
    C = np.triu(same, k=1).sum(axis=(1, 2))
    r = (-D.astype(np.float32)) / np.float32(10.0) - np.float32(0.5) * C.astype(
        np.float32
    )
    return r.astype(np.float32), (nearest == 0).all(axis=1)


def _apply(pos: np.ndarray, actions: np.ndarray, size: int) -> np.ndarray:
    ok = np.take_along_axis(available_actions(pos, size), actions[..., None], axis=-1)[
        ..., 0
    ]
    return (pos + MOVES[actions] * ok[..., None]).astype(np.int32)


def _check_game(
    pos: Any, landmarks: Any, size: Any
) -> tuple[np.ndarray, np.ndarray, int]:
    size = check_int(size, "size", low=2, high=2**20)
    pos = check_array(
        pos, "pos", kind="int", ndim=3, dtype=np.int32, low=0, high=size - 1
    )
    if pos.shape[2] != 2 or not 1 <= pos.shape[1] <= _MAX_AGENTS:
        raise ValueError(
            f"pos must have shape (E, N, 2) with 1 <= N <= {_MAX_AGENTS}, got {pos.shape}"
        )
    E = pos.shape[0]
    landmarks = check_array(
        landmarks, "landmarks", kind="int", ndim=3, dtype=np.int32, low=0, high=size - 1
    )
    if landmarks.shape[0] != E or landmarks.shape[2] != 2 or landmarks.shape[1] < 1:
        raise ValueError(
            f"landmarks must have shape ({E}, L, 2), got {landmarks.shape}"
        )
    check_budget(
        f"coopgrid(E={E})", n_bytes=64.0 * E * pos.shape[1] * landmarks.shape[1]
    )
    return np.ascontiguousarray(pos), np.ascontiguousarray(landmarks), size


def _check_step(
    pos: Any, actions: Any, landmarks: Any, size: Any
) -> tuple[np.ndarray, ...]:
    pos, landmarks, size = _check_game(pos, landmarks, size)
    actions = check_array(
        actions,
        "actions",
        kind="int",
        shape=pos.shape[:2],
        dtype=np.int32,
        low=0,
        high=N_ACTIONS - 1,
    )
    return pos, np.ascontiguousarray(actions), landmarks, size


def coopgrid_step_reference(
    pos: np.ndarray, actions: np.ndarray, landmarks: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One joint step of ``E`` CoopGrid games (vectorised NumPy, the contract).

    Args:
        pos: (E, N, 2) int agent positions in ``[0, size)``.
        actions: (E, N) int actions in ``{0..4}``.
        landmarks: (E, L, 2) int landmark positions.
        size: grid side.

    Returns:
        ``(new_pos (E, N, 2) int32, reward (E,) float32, covered (E,) bool)``.

    Raises:
        TypeError: non-integer arrays. ValueError: shapes or values out of range.
    """
    pos, actions, landmarks, size = _check_step(pos, actions, landmarks, size)
    new = _apply(pos, actions, size)
    r, cov = _team_reward(new, landmarks)
    return new, r, cov


def coopgrid_step_gpu(
    pos: Any, actions: Any, landmarks: Any, size: int
) -> tuple[Any, Any, Any]:  # pragma: no cover - GPU
    """CuPy launcher of :func:`coopgrid_step` (one thread per game; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    pos = cp.ascontiguousarray(cp.asarray(pos, dtype=cp.int32))
    actions = cp.ascontiguousarray(cp.asarray(actions, dtype=cp.int32))
    landmarks = cp.ascontiguousarray(cp.asarray(landmarks, dtype=cp.int32))
    E, N = int(pos.shape[0]), int(pos.shape[1])
    new = cp.empty_like(pos)
    r = cp.empty(E, dtype=cp.float32)
    cov = cp.empty(E, dtype=cp.int32)
    grid = min(max(1, (E + _BLOCK - 1) // _BLOCK), 65535)
    load_module("omapl_kernels").get_function("coopgrid_step")(
        (grid,),
        (_BLOCK,),
        (
            pos,
            actions,
            landmarks,
            new,
            r,
            cov,
            np.int64(E),
            np.int32(N),
            np.int32(landmarks.shape[1]),
            np.int32(size),
        ),
    )
    return new, r, cov


def coopgrid_step(
    pos: np.ndarray, actions: np.ndarray, landmarks: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One joint CoopGrid step (contract of :func:`coopgrid_step_reference`): CUDA when usable.

    Returns:
        ``(new_pos (E, N, 2) int32, reward (E,) float32, covered (E,) bool)`` NumPy, equal bit for
        bit on both paths.
    """
    pos, actions, landmarks, size = _check_step(pos, actions, landmarks, size)
    if gpu_available():  # pragma: no cover - GPU
        new, r, cov = coopgrid_step_gpu(pos, actions, landmarks, size)
        return new.get(), r.get(), cov.get().astype(bool)
    new = _apply(pos, actions, size)
    r, cov = _team_reward(new, landmarks)
    return new, r, cov


def _check_rollout(
    pos0: Any, landmarks: Any, size: Any, horizon: Any, eps: Any, seed: Any
) -> tuple[np.ndarray, np.ndarray, int, int, float, int]:
    pos0, landmarks, size = _check_game(pos0, landmarks, size)
    horizon = check_int(horizon, "horizon", low=1, high=10_000)
    eps = check_real(eps, "eps", low=0.0, high=1.0)
    seed = check_int(seed, "seed", low=0, high=2**64 - 1)
    E, N = pos0.shape[:2]
    check_budget(
        f"coopgrid_rollout(E={E}, horizon={horizon})",
        n_bytes=4.0 * E * (horizon + 1) * N * 12,
    )
    return pos0, landmarks, size, horizon, eps, seed


def _expert_actions(pos: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
    """Agent ``i < L`` heads for landmark ``i``, along x first, then y; agents ``i >= L`` stay."""
    N, L = pos.shape[1], landmarks.shape[1]
    k = min(N, L)
    dx = landmarks[:, :k, 0] - pos[:, :k, 0]
    dy = landmarks[:, :k, 1] - pos[:, :k, 1]
    a = np.zeros(pos.shape[:2], dtype=np.int32)
    a[:, :k] = np.select([dx > 0, dx < 0, dy > 0, dy < 0], [3, 4, 1, 2], default=0)
    return a


def _rollout_cpu(
    pos0: np.ndarray,
    landmarks: np.ndarray,
    size: int,
    horizon: int,
    eps: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    E, N = pos0.shape[:2]
    thr = np.uint64(eps_threshold(eps))
    mixed = _splitmix64(np.array([seed], dtype=np.uint64))[0]
    actions = np.zeros((E, horizon, N), dtype=np.int32)
    rewards = np.zeros((E, horizon), dtype=np.float32)
    positions = np.zeros((E, horizon + 1, N, 2), dtype=np.int32)
    positions[:, 0] = pos0
    pos = pos0.copy()
    cov = np.zeros(E, dtype=bool)
    e_idx = np.arange(E, dtype=np.uint64)[:, None]
    i_idx = np.arange(N, dtype=np.uint64)[None, :]
    for t in range(horizon):
        a = _expert_actions(pos, landmarks)
        key = (e_idx * np.uint64(horizon) + np.uint64(t)) * np.uint64(N) + i_idx
        h = _splitmix64(mixed ^ key)
        rand = (h >> np.uint64(11)) < thr
        av = available_actions(pos, size)  # (E, N, 5)
        pick = (_splitmix64(h) % av.sum(-1).astype(np.uint64)).astype(np.int64)
        # the pick-th available action: first k with cumsum(av)[k] == pick + 1
        rank = np.cumsum(av, axis=-1) - 1
        draw = np.argmax(av & (rank == pick[..., None]), axis=-1).astype(np.int32)
        a = np.where(rand, draw, a)
        actions[:, t] = a
        pos = _apply(pos, a, size)
        positions[:, t + 1] = pos
        rewards[:, t], cov = _team_reward(pos, landmarks)
    return actions, rewards, positions, cov


def coopgrid_rollout_reference(
    pos0: np.ndarray,
    landmarks: np.ndarray,
    size: int,
    horizon: int,
    eps: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``horizon`` steps of the scripted eps-expert in ``E`` games (NumPy, the contract).

    Agent ``i < L`` is assigned landmark ``i`` (a fixed assignment, our choice: the notes' greedy
    assignment is not representable by a decentralised policy that sees the agents in a fixed
    order) and moves along x, then along y, towards it; agents ``i >= L`` stay. Agent ``i`` of game ``e`` at step ``t`` acts at random iff
    ``(h >> 11) < floor(eps 2^53)`` with ``h = splitmix64(splitmix64(seed) ^ ((e horizon + t) N + i))``,
    and then takes the ``(splitmix64(h) mod n_avail)``-th available action.

    Args:
        pos0: (E, N, 2) int start positions; landmarks: (E, L, 2) int; size: grid side;
        horizon: steps; eps: probability of a random action in [0, 1]; seed: 64-bit key.

    Returns:
        ``(actions (E, horizon, N) int32, rewards (E, horizon) float32, positions
        (E, horizon + 1, N, 2) int32, success (E,) bool)``.

    Raises:
        TypeError / ValueError: bad shapes, values or kinds (the argument is named).
    """
    args = _check_rollout(pos0, landmarks, size, horizon, eps, seed)
    return _rollout_cpu(*args)


def coopgrid_rollout_gpu(
    pos0: Any, landmarks: Any, size: int, horizon: int, eps: float, seed: int
) -> tuple[Any, Any, Any, Any]:  # pragma: no cover - GPU
    """CuPy launcher of :func:`coopgrid_rollout` (one thread per game; trusts its arguments)."""
    import cupy as cp

    from icml25.kernels import load_module

    pos0 = cp.ascontiguousarray(cp.asarray(pos0, dtype=cp.int32))
    landmarks = cp.ascontiguousarray(cp.asarray(landmarks, dtype=cp.int32))
    E, N = int(pos0.shape[0]), int(pos0.shape[1])
    actions = cp.empty((E, horizon, N), dtype=cp.int32)
    rewards = cp.empty((E, horizon), dtype=cp.float32)
    positions = cp.empty((E, horizon + 1, N, 2), dtype=cp.int32)
    success = cp.empty(E, dtype=cp.int32)
    grid = min(max(1, (E + _BLOCK - 1) // _BLOCK), 65535)
    load_module("omapl_kernels").get_function("coopgrid_rollout")(
        (grid,),
        (_BLOCK,),
        (
            pos0,
            landmarks,
            actions,
            rewards,
            positions,
            success,
            np.int64(E),
            np.int32(N),
            np.int32(landmarks.shape[1]),
            np.int32(size),
            np.int32(horizon),
            np.uint64(seed),
            np.uint64(eps_threshold(eps)),
        ),
    )
    return actions, rewards, positions, success


def coopgrid_rollout(
    pos0: np.ndarray,
    landmarks: np.ndarray,
    size: int,
    horizon: int,
    eps: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scripted eps-expert roll-outs (contract of :func:`coopgrid_rollout_reference`): CUDA when usable.

    Returns:
        NumPy ``(actions, rewards, positions, success)``, bit-identical on both paths.
    """
    args = _check_rollout(pos0, landmarks, size, horizon, eps, seed)
    if gpu_available():  # pragma: no cover - GPU
        out = coopgrid_rollout_gpu(*args)
        return out[0].get(), out[1].get(), out[2].get(), out[3].get().astype(bool)
    return _rollout_cpu(*args)


_SEG_NAMES = ("q", "w", "b", "v_next", "w_next", "b_next", "dones")


def _check_segments(
    q: Any,
    w: Any,
    b: Any,
    v_next: Any,
    w_next: Any,
    b_next: Any,
    dones: Any,
    gamma: Any,
) -> tuple[Any, ...]:
    q = check_tensor(q, "q", ndim=4)
    if q.shape[0] != 2:
        raise ValueError(
            f"q must have shape (2, B, T, N) (the two segments of each pair), got {tuple(q.shape)}"
        )
    full, seg = tuple(q.shape), tuple(q.shape[:3])
    w = check_tensor(w, "w", shape=full)
    v_next = check_tensor(v_next, "v_next", shape=full)
    w_next = check_tensor(w_next, "w_next", shape=full)
    for name, x in (("w", w), ("w_next", w_next)):
        if bool((x < 0).any()):
            raise ValueError(f"{name} must be >= 0 (a monotone mixer)")
    b = check_tensor(b, "b", shape=seg)
    b_next = check_tensor(b_next, "b_next", shape=seg)
    dones = check_tensor(dones, "dones", shape=seg)
    if bool(((dones != 0) & (dones != 1)).any()):
        raise ValueError("dones must hold only 0 and 1")
    gamma = check_real(gamma, "gamma", low=0.0, high=1.0, high_open=True)
    return q, w, b, v_next, w_next, b_next, dones, gamma


def segment_logits_reference(
    q: Any,
    w: Any,
    b: Any,
    v_next: Any,
    w_next: Any,
    b_next: Any,
    dones: Any,
    gamma: float,
) -> tuple[Any, Any]:
    """Implied rewards of both segments and the BT logit, one loop over time (torch, the contract).

    ``r_t = (sum_i w_ti q_ti + b_t - gamma (1 - d_t)(sum_i w'_ti v'_ti + b'_t)) m_t`` with
    ``m_t = 1`` up to and including the first done and 0 after; ``logit = sum_t r^1_t - sum_t r^2_t``.

    Args:
        q, w, v_next, w_next: (2, B, T, N) float tensors (chosen local Q, mixer weights, target
            local V at t+1 and its mixer weights); b, b_next, dones: (2, B, T).
        gamma: discount in [0, 1).

    Returns:
        ``(r (2, B, T), logit (B,))`` on the input's device and dtype.

    Raises:
        TypeError / ValueError: shapes, non-binary dones, gamma outside [0, 1).
    """
    q, w, b, v_next, w_next, b_next, dones, gamma = _check_segments(
        q, w, b, v_next, w_next, b_next, dones, gamma
    )
    return _segments_torch(q, w, b, v_next, w_next, b_next, dones, gamma)


def _segments_torch(
    q: Any,
    w: Any,
    b: Any,
    v_next: Any,
    w_next: Any,
    b_next: Any,
    dones: Any,
    gamma: float,
) -> tuple[Any, Any]:
    import torch

    T = q.shape[2]
    alive = torch.ones(q.shape[:2], dtype=q.dtype, device=q.device)
    cols = []
    for t in range(T):
        q_tot = b[:, :, t] + (w[:, :, t] * q[:, :, t]).sum(-1)
        v_tot = b_next[:, :, t] + (w_next[:, :, t] * v_next[:, :, t]).sum(-1)
        cols.append((q_tot - gamma * (1.0 - dones[:, :, t]) * v_tot) * alive)
        alive = alive * (dones[:, :, t] < 0.5).to(q.dtype)
    r = torch.stack(cols, dim=2)
    seg = r.sum(dim=2)
    return r, seg[0] - seg[1]


def segment_logits_gpu(
    q: Any,
    w: Any,
    b: Any,
    v_next: Any,
    w_next: Any,
    b_next: Any,
    dones: Any,
    gamma: float,
) -> tuple[Any, Any]:  # pragma: no cover - GPU
    """CuPy launcher of :func:`segment_logits`: CUDA torch tensors in (float32), CUDA tensors out."""
    import cupy as cp
    import torch

    from icml25.kernels import load_module

    ts = [
        x.detach().to(torch.float32).contiguous()
        for x in (q, w, b, v_next, w_next, b_next, dones)
    ]
    _, B, T, N = ts[0].shape
    r = torch.empty((2, B, T), dtype=torch.float32, device=ts[0].device)
    seg = torch.empty(2 * B, dtype=torch.float32, device=ts[0].device)
    logit = torch.empty(B, dtype=torch.float32, device=ts[0].device)
    cps = [cp.from_dlpack(x) for x in (*ts, r, seg, logit)]
    mod = load_module("omapl_kernels")
    grid = min(max(1, (2 * B + _BLOCK - 1) // _BLOCK), 65535)
    mod.get_function("segment_rewards")(
        (grid,),
        (_BLOCK,),
        (
            *cps[:7],
            np.float32(gamma),
            cps[7],
            cps[8],
            np.int64(2 * B),
            np.int32(T),
            np.int32(N),
        ),
    )
    mod.get_function("bt_logits")(
        (min(max(1, (B + _BLOCK - 1) // _BLOCK), 65535),),
        (_BLOCK,),
        (cps[8], cps[9], np.int64(B)),
    )
    return r, logit


def segment_logits(
    q: Any,
    w: Any,
    b: Any,
    v_next: Any,
    w_next: Any,
    b_next: Any,
    dones: Any,
    gamma: float,
) -> tuple[Any, Any]:
    """Implied rewards and BT logits (contract of :func:`segment_logits_reference`), no autograd.

    Torch in, torch out, on the input's device: the CUDA kernel for CUDA tensors on a GPU machine
    (float32, within 1e-5 of the reference), the reference otherwise. Used to score held-out pairs
    at scale; the training loss differentiates ``icml25.omapl.implied_reward`` instead.
    """
    args = _check_segments(q, w, b, v_next, w_next, b_next, dones, gamma)
    if gpu_available() and args[0].is_cuda:  # pragma: no cover - GPU
        return segment_logits_gpu(*args)
    import torch

    with torch.no_grad():
        return _segments_torch(*args)
