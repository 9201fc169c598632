"""Validators of chapter 10's own structures (a pair batch), built on :mod:`icml25.checks`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.checks import check_array, check_real

__all__ = ["PairBatch", "make_pair_batch", "check_gamma", "check_beta"]


def check_gamma(gamma: Any) -> float:
    """``gamma`` as a float in [0, 1) (a discount)."""
    return check_real(gamma, "gamma", low=0.0, high=1.0, high_open=True)


def check_beta(beta: Any) -> float:
    """``beta`` as a float > 0 (a temperature)."""
    return check_real(beta, "beta", low=0.0, low_open=True)


@dataclass(frozen=True)
class PairBatch:
    """A validated batch of ``B`` segment pairs (leading axis 0: segment 1 or 2 of the pair).

    Attributes (torch tensors):
        obs, next_obs: (2, B, T, N, o) float32 local observations at t and t + 1.
        state, next_state: (2, B, T, s) float32 global states.
        actions: (2, B, T, N) int64 (discrete) or (2, B, T, N, a) float32 in [-1, 1] (continuous).
        dones: (2, B, T) float32 in {0, 1}. mask: (2, B, T) float32, 1 up to the first done.
        avail: (2, B, T, N, A) bool action masks (discrete) or ``None``.
        y: (B,) float32, 1 iff segment 1 is preferred.
    """

    obs: torch.Tensor
    next_obs: torch.Tensor
    state: torch.Tensor
    next_state: torch.Tensor
    actions: torch.Tensor
    dones: torch.Tensor
    mask: torch.Tensor
    avail: torch.Tensor | None
    y: torch.Tensor

    @property
    def discrete(self) -> bool:
        """Whether the actions are integer indices."""
        return self.avail is not None

    def to(self, device: str) -> "PairBatch":
        """The same batch on ``device``."""
        return PairBatch(
            *(
                None if x is None else x.to(device)
                for x in (
                    self.obs,
                    self.next_obs,
                    self.state,
                    self.next_state,
                    self.actions,
                    self.dones,
                    self.mask,
                    self.avail,
                    self.y,
                )
            )
        )


def alive_mask(dones: np.ndarray) -> np.ndarray:
    """1 up to and including the first done of each segment, 0 after (``dones (..., T)``)."""
    before = np.cumsum(dones, axis=-1) - dones  # dones strictly before t
    return (before < 0.5).astype(np.float32)


def make_pair_batch(
    obs: Any,
    next_obs: Any,
    state: Any,
    next_state: Any,
    actions: Any,
    dones: Any,
    avail: Any,
    y: Any,
) -> PairBatch:
    """Validate a batch of segment pairs into a :class:`PairBatch` (shapes in its docstring).

    ``avail=None`` means continuous actions (then ``actions`` is (2, B, T, N, a) in [-1, 1]).

    Raises:
        TypeError: wrong kinds. ValueError: shape mismatches (named), an empty batch, ``y`` outside {0, 1},
            ``dones`` outside {0, 1}, a row of ``avail`` with every action masked, a discrete
            action that is not available.
    """
    obs = check_array(obs, "obs", ndim=5, dtype=np.float32)
    if obs.shape[0] != 2:
        raise ValueError(f"obs must have shape (2, B, T, N, o), got {obs.shape}")
    _, B, T, N, o = obs.shape
    if min(B, T, N, o) < 1:
        raise ValueError(
            f"obs must have shape (2, B, T, N, o) with B, T, N, o >= 1, got {obs.shape}"
        )
    next_obs = check_array(next_obs, "next_obs", shape=obs.shape, dtype=np.float32)
    state = check_array(state, "state", ndim=4, dtype=np.float32)
    if state.shape[:3] != (2, B, T):
        raise ValueError(f"state must have shape (2, {B}, {T}, s), got {state.shape}")
    next_state = check_array(
        next_state, "next_state", shape=state.shape, dtype=np.float32
    )
    dones = check_array(dones, "dones", shape=(2, B, T), dtype=np.float32)
    if not np.isin(dones, (0.0, 1.0)).all():
        raise ValueError("dones must hold only 0 and 1")
    y = check_array(y, "y", shape=(B,), kind="number")
    if not np.isin(y, (0, 1)).all():
        raise ValueError(f"y must hold only 0 and 1, got values {np.unique(y)[:5]}")
    if avail is None:
        actions = check_array(
            actions, "actions", ndim=5, dtype=np.float32, low=-1.0, high=1.0
        )
        if actions.shape[:4] != (2, B, T, N):
            raise ValueError(
                f"actions must have shape (2, {B}, {T}, {N}, a), got {actions.shape}"
            )
        avail_t = None
    else:
        avail = check_array(avail, "avail", kind="bool", ndim=5)
        if avail.shape[:4] != (2, B, T, N):
            raise ValueError(
                f"avail must have shape (2, {B}, {T}, {N}, A), got {avail.shape}"
            )
        if not avail.any(axis=-1).all():
            raise ValueError("avail has a row with every action masked")
        actions = check_array(
            actions,
            "actions",
            kind="int",
            shape=(2, B, T, N),
            low=0,
            high=avail.shape[-1] - 1,
        )
        if not np.take_along_axis(avail, actions[..., None], axis=-1).all():
            raise ValueError("actions holds an action that avail masks out")
        avail_t = torch.from_numpy(np.ascontiguousarray(avail))
    t = torch.from_numpy
    return PairBatch(
        t(np.ascontiguousarray(obs)),
        t(np.ascontiguousarray(next_obs)),
        t(np.ascontiguousarray(state)),
        t(np.ascontiguousarray(next_state)),
        t(np.ascontiguousarray(actions)),
        t(dones.copy()),
        t(alive_mask(dones)),
        avail_t,
        t(y.astype(np.float32)),
    )
