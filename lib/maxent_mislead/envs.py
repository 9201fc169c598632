"""The chapter's environments (gymnasium API), registered under the project namespace ``icml25/``.

- :class:`TwoBranchMDP` (Toy A, reconstruction): two steps, s0 -> robust or precise branch.
- :class:`PrecisionBandit`: a one-step bandit on [-1, 1] with any reward function (Toy B).
- :class:`Obstacle2D`: reach a goal behind a thin wall (semantics of the official code).
- :class:`ContinuousAcrobot`: the acrobot with a continuous torque, balanced upright (official
  constants; the initial state is our choice, labelled).
- :class:`BicycleTracking`: a dynamic bicycle tracking a target on a circle (official reward and
  target schedule; the tyre model's constants are our reconstruction).

The official repository registers ``Acrobot-v0`` and friends, ids that collide with gymnasium's
own families; here every id lives under ``icml25/`` (:func:`register_envs`).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from scipy.interpolate import CubicSpline

from icml25.checks import check_array, check_real

from ._checks import _check_width

__all__ = [
    "TwoBranchMDP",
    "PrecisionBandit",
    "Obstacle2D",
    "ContinuousAcrobot",
    "BicycleTracking",
    "segment_hits_box",
    "ENV_IDS",
    "register_envs",
]


class _ProjectEnv(gym.Env):
    """Shared ``reset`` of the chapter's environments: gymnasium's signature (its keyword ``seed``
    seeds ``self.np_random``), then the subclass's :meth:`_reset` builds the first observation."""

    metadata = {"render_modes": []}

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict]:
        """gymnasium's reset: seed ``np_random`` when ``seed`` is given, then start an episode.

        Returns ``(obs, {})``."""
        super().reset(seed=seed)
        return self._reset(), {}

    def _reset(self) -> np.ndarray:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _action(self, action: Any) -> np.ndarray:
        """``action`` as a finite float64 vector of the action space's size (else ValueError/TypeError
        naming ``action``); clipping to the space's bounds is each ``step``'s business."""
        n = int(np.prod(self.action_space.shape))
        a = check_array(action, "action", dtype=np.float64)
        if a.size != n:
            raise ValueError(
                f"action must hold {n} value(s) (action space {self.action_space.shape}), "
                f"got shape {a.shape}"
            )
        return a.reshape(n)


class TwoBranchMDP(_ProjectEnv):
    """Toy A (reconstruction). Observation: one-hot of {s0, robust, precise} (float32, (3,)).

    Step 1 at s0: action ``a < 0`` enters the robust branch, ``a >= 0`` the precise one (reward 0).
    Step 2: robust pays ``r_mid`` for every action; precise pays ``r_hi`` if ``|a| <= w`` else
    ``r_fail``; the episode ends. Actions: Box([-1], [1]).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        w: float = 0.05,
        r_mid: float = 1.0,
        r_hi: float = 2.0,
        r_fail: float = -1.0,
    ) -> None:
        self.w = _check_width(w)
        self.r_mid, self.r_hi, self.r_fail = (
            check_real(r_mid, "r_mid"),
            check_real(r_hi, "r_hi"),
            check_real(r_fail, "r_fail"),
        )
        self.observation_space = spaces.Box(0.0, 1.0, (3,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._state = 0

    def _obs(self) -> np.ndarray:
        o = np.zeros(3, dtype=np.float32)
        o[self._state] = 1.0
        return o

    def _reset(self) -> np.ndarray:
        self._state = 0
        return self._obs()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One step (see the class docstring). Returns ``(obs, reward, terminated, truncated, info)``."""
        a = float(np.clip(self._action(action)[0], -1.0, 1.0))
        if self._state == 0:
            self._state = 1 if a < 0 else 2
            return self._obs(), 0.0, False, False, {}
        reward = (
            self.r_mid
            if self._state == 1
            else (self.r_hi if abs(a) <= self.w else self.r_fail)
        )
        return (
            self._obs(),
            float(reward),
            True,
            False,
            {"branch": "robust" if self._state == 1 else "precise"},
        )


class PrecisionBandit(_ProjectEnv):
    """One-step bandit: action ``a`` in [-1, 1], reward ``reward_fn(a)``, then the episode ends.

    Observation: a constant ``[0.0]`` (float32, (1,)), so a policy is one action distribution.

    Args:
        reward_fn: vectorised reward, float64 array -> float64 array of the same shape.
    """

    metadata = {"render_modes": []}

    def __init__(self, reward_fn: Callable[[np.ndarray], np.ndarray]) -> None:
        if not callable(reward_fn):
            raise TypeError(
                f"reward_fn must be callable, got {type(reward_fn).__name__}"
            )
        self.reward_fn = reward_fn
        self.observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _reset(self) -> np.ndarray:
        return np.zeros(1, dtype=np.float32)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Pay ``reward_fn(a)`` and end. Returns ``(obs, reward, True, False, {})``.

        Raises:
            ValueError/TypeError: ``action`` not one finite real; ``reward_fn`` returning a
            non-finite or non-real reward.
        """
        a = np.clip(self._action(action), -1.0, 1.0)
        r = np.asarray(self.reward_fn(a)).reshape(-1)
        if r.size < 1 or r.dtype.kind not in "biuf" or not np.isfinite(r[0]):
            raise ValueError(
                f"reward_fn must return a finite real reward, got {r[:1]!r} at action {float(a[0])}"
            )
        return np.zeros(1, dtype=np.float32), float(r[0]), True, False, {}


def segment_hits_box(
    p0: np.ndarray, p1: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> bool:
    """Does the segment ``p0 -> p1`` meet the closed axis-aligned box ``[lo, hi]``? (Liang-Barsky.)

    Args:
        p0, p1: (2,) float64 end points; lo, hi: (2,) float64 box corners, ``lo <= hi``.

    Returns:
        True when some point ``p0 + t (p1 - p0)``, ``t`` in [0, 1], lies in the box (no tunnelling
        through a thin wall, whatever the step length).

    Raises:
        ValueError/TypeError: a point or corner not a finite real (2,) array, or ``lo > hi``
        somewhere (each naming the argument).
    """
    p0, p1, lo, hi = (
        check_array(v, k, shape=(2,), dtype=np.float64)
        for v, k in ((p0, "p0"), (p1, "p1"), (lo, "lo"), (hi, "hi"))
    )
    if np.any(lo > hi):
        raise ValueError(
            f"lo must be <= hi elementwise, got lo={lo.tolist()}, hi={hi.tolist()}"
        )
    return _segment_hits_box(p0, p1, lo, hi)


def _segment_hits_box(
    p0: np.ndarray, p1: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> bool:
    """Liang-Barsky clipping of the segment against the box (arguments trusted)."""
    t0, t1 = 0.0, 1.0
    d = p1 - p0
    for k in range(2):
        if d[k] == 0.0:
            if p0[k] < lo[k] or p0[k] > hi[k]:
                return False
            continue
        ta, tb = (lo[k] - p0[k]) / d[k], (hi[k] - p0[k]) / d[k]
        if ta > tb:
            ta, tb = tb, ta
        t0, t1 = max(t0, ta), min(t1, tb)
        if t0 > t1:
            return False
    return True


class Obstacle2D(_ProjectEnv):
    """Reach the goal (3, 0) from (0, 0) past a wall ``x in [2, 2.05], |y| <= 2`` (official semantics).

    Action: velocity in [-3, 3]^2, ``dt = 1``. The reward is computed from the *planned* segment
    before the state moves: -200 (and the episode ends) if the segment meets the wall; +500 (end)
    if it ends within 0.1 of the goal; otherwise the decrease of the distance to the goal. After
    50 steps the episode is truncated with reward 0 on that step. Observation:
    ``[(x - 2.025) / 2.025, y / 3]`` (float32).
    """

    metadata = {"render_modes": []}
    GOAL = np.array([3.0, 0.0])
    WALL_LO = np.array([2.0, -2.0])
    WALL_HI = np.array([2.05, 2.0])
    MAX_STEPS = 50

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = spaces.Box(-3.0, 3.0, (2,), np.float32)
        self._pos = np.zeros(2)
        self._t = 0

    def _obs(self) -> np.ndarray:
        return np.array(
            [(self._pos[0] - 2.025) / 2.025, self._pos[1] / 3.0], dtype=np.float32
        )

    def _reset(self) -> np.ndarray:
        self._pos = np.zeros(2)
        self._t = 0
        return self._obs()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Move by the (clipped) velocity unless the planned segment meets the wall.

        Returns ``(obs, reward, terminated, truncated, info)``; ``info`` has ``collision`` and ``goal``.
        """
        v = np.clip(self._action(action), -3.0, 3.0)
        self._t += 1
        start, end = self._pos.copy(), self._pos + v  # dt = 1
        if _segment_hits_box(start, end, self.WALL_LO, self.WALL_HI):
            return self._obs(), -200.0, True, False, {"collision": True, "goal": False}
        d0, d1 = np.linalg.norm(start - self.GOAL), np.linalg.norm(end - self.GOAL)
        self._pos = end
        if d1 <= 0.1:
            return self._obs(), 500.0, True, False, {"collision": False, "goal": True}
        if self._t >= self.MAX_STEPS:
            return self._obs(), 0.0, False, True, {"collision": False, "goal": False}
        return (
            self._obs(),
            float(d0 - d1),
            False,
            False,
            {"collision": False, "goal": False},
        )


class ContinuousAcrobot(_ProjectEnv):
    """Acrobot with a continuous torque on the second joint, rewarded for balancing upright.

    Official constants: torque in [-20, 20], ``dt = 0.2``, RK4 integration, reward
    ``-[(theta1 - pi/2)^2 + theta2^2 + 0.1 dtheta1^2 + 0.1 dtheta2^2]`` with ``theta1`` measured
    from the horizontal (so ``pi/2`` is upright), 400 steps. Link masses, lengths and inertias are
    gymnasium's acrobot (the book formulation). Reconstruction: the start, near hanging down
    (``theta1 = -pi/2``) with uniform noise of 0.1 on every coordinate, and the velocity limits
    (4 pi and 9 pi, gymnasium's). Observation: ``[cos t1, sin t1, cos t2, sin t2, dt1, dt2]``.
    """

    metadata = {"render_modes": []}
    DT, MAX_TORQUE, MAX_STEPS = 0.2, 20.0, 400
    M1 = M2 = 1.0
    L1 = 1.0
    LC1 = LC2 = 0.5
    I1 = I2 = 1.0
    G = 9.8
    MAX_V1, MAX_V2 = 4 * math.pi, 9 * math.pi

    def __init__(self) -> None:
        high = np.array([1, 1, 1, 1, self.MAX_V1, self.MAX_V2], dtype=np.float32)
        self.observation_space = spaces.Box(-high, high, dtype=np.float32)
        self.action_space = spaces.Box(
            -self.MAX_TORQUE, self.MAX_TORQUE, (1,), np.float32
        )
        self._s = np.zeros(4)
        self._t = 0

    def _dsdt(self, s: np.ndarray, tau: float) -> np.ndarray:
        t1, t2, dt1, dt2 = s
        t1d = t1 + math.pi / 2  # gymnasium's angle: 0 hanging down
        m1, m2, l1, lc1, lc2, I1, I2, g = (
            self.M1,
            self.M2,
            self.L1,
            self.LC1,
            self.LC2,
            self.I1,
            self.I2,
            self.G,
        )
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * math.cos(t2)) + I1 + I2
        d2 = m2 * (lc2**2 + l1 * lc2 * math.cos(t2)) + I2
        phi2 = m2 * lc2 * g * math.cos(t1d + t2 - math.pi / 2)
        phi1 = (
            -m2 * l1 * lc2 * dt2**2 * math.sin(t2)
            - 2 * m2 * l1 * lc2 * dt2 * dt1 * math.sin(t2)
            + (m1 * lc1 + m2 * l1) * g * math.cos(t1d - math.pi / 2)
            + phi2
        )
        ddt2 = (tau + d2 / d1 * phi1 - m2 * l1 * lc2 * dt1**2 * math.sin(t2) - phi2) / (
            m2 * lc2**2 + I2 - d2**2 / d1
        )
        ddt1 = -(d2 * ddt2 + phi1) / d1
        return np.array([dt1, dt2, ddt1, ddt2])

    def _obs(self) -> np.ndarray:
        t1, t2, dt1, dt2 = self._s
        return np.array(
            [math.cos(t1), math.sin(t1), math.cos(t2), math.sin(t2), dt1, dt2],
            dtype=np.float32,
        )

    def _reset(self) -> np.ndarray:
        self._s = self.np_random.uniform(-0.1, 0.1, 4) + np.array(
            [-math.pi / 2, 0.0, 0.0, 0.0]
        )
        self._t = 0
        return self._obs()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One RK4 step of ``dt = 0.2`` under the clipped torque. Returns the gymnasium 5-tuple."""
        tau = float(np.clip(self._action(action)[0], -self.MAX_TORQUE, self.MAX_TORQUE))
        s, h = self._s, self.DT
        k1 = self._dsdt(s, tau)
        k2 = self._dsdt(s + h / 2 * k1, tau)
        k3 = self._dsdt(s + h / 2 * k2, tau)
        k4 = self._dsdt(s + h * k3, tau)
        s = s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        s[0] = (s[0] + math.pi) % (2 * math.pi) - math.pi
        s[1] = (s[1] + math.pi) % (2 * math.pi) - math.pi
        s[2] = float(np.clip(s[2], -self.MAX_V1, self.MAX_V1))
        s[3] = float(np.clip(s[3], -self.MAX_V2, self.MAX_V2))
        self._s = s
        self._t += 1
        t1, t2, dt1, dt2 = s
        # angle error to upright, wrapped
        e1 = (t1 - math.pi / 2 + math.pi) % (2 * math.pi) - math.pi
        reward = -(e1**2 + t2**2 + 0.1 * dt1**2 + 0.1 * dt2**2)
        return self._obs(), float(reward), False, self._t >= self.MAX_STEPS, {}


class BicycleTracking(_ProjectEnv):
    """A dynamic bicycle tracking a target that moves on the radius-10 circle (20 s, ``dt = 0.05``).

    Official: the target's speed ``min(6, 1 + 0.1 t)`` m/s along the circle, the reward
    ``-0.3 |x^2 + y^2 - 100| - |p - p_target|``. The target's path is a periodic
    ``scipy.interpolate.CubicSpline`` through 64 circle points parametrised by arc length.
    Reconstruction (the official vehicle constants were not read): a linear-tyre dynamic bicycle
    (mass 1500 kg, yaw inertia 3000 kg m^2, axle distances 1.2/1.6 m, cornering stiffness
    8e4 N/rad), actions ``[acceleration in [-4, 4] m/s^2, steering in [-0.5, 0.5] rad]``, start on
    the circle at the target, heading along it at 1 m/s. Observation (float32, (8,)): the target's
    offset in the car frame, ``cos/sin`` of the heading error, ``vx, vy, yaw rate``, radius error.
    """

    metadata = {"render_modes": []}
    DT, T_END, RADIUS = 0.05, 20.0, 10.0
    MASS, IZ, LF, LR, CF, CR = 1500.0, 3000.0, 1.2, 1.6, 8e4, 8e4

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, (8,), np.float32)
        self.action_space = spaces.Box(
            np.array([-4.0, -0.5], np.float32), np.array([4.0, 0.5], np.float32)
        )
        theta = np.linspace(0.0, 2 * math.pi, 65)
        pts = self.RADIUS * np.stack([np.cos(theta), np.sin(theta)], axis=1)
        pts[-1] = pts[0]
        self._path = CubicSpline(self.RADIUS * theta, pts, bc_type="periodic")
        self._perimeter = 2 * math.pi * self.RADIUS
        self._x = np.zeros(6)
        self._t, self._s_target = 0.0, 0.0

    def _target(self) -> tuple[np.ndarray, float]:
        s = self._s_target % self._perimeter
        p, d = self._path(s), self._path(s, 1)
        return p, math.atan2(d[1], d[0])

    def _obs(self) -> np.ndarray:
        x, y, psi, vx, vy, r = self._x
        p, heading = self._target()
        dx, dy = p[0] - x, p[1] - y
        c, s = math.cos(psi), math.sin(psi)
        err = heading - psi
        return np.array(
            [
                c * dx + s * dy,
                -s * dx + c * dy,
                math.cos(err),
                math.sin(err),
                vx,
                vy,
                r,
                math.hypot(x, y) - self.RADIUS,
            ],
            dtype=np.float32,
        )

    def _reset(self) -> np.ndarray:
        self._x = np.array([self.RADIUS, 0.0, math.pi / 2, 1.0, 0.0, 0.0])
        self._t, self._s_target = 0.0, 0.0
        return self._obs()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Euler step of the dynamic bicycle; the target advances at ``min(6, 1 + 0.1 t)``."""
        acc, delta = np.clip(
            self._action(action), self.action_space.low, self.action_space.high
        )
        x, y, psi, vx, vy, r = self._x
        vxs = max(vx, 0.5)  # slip angles need forward speed
        af = delta - math.atan2(vy + self.LF * r, vxs)
        ar = -math.atan2(vy - self.LR * r, vxs)
        Ff, Fr = self.CF * af, self.CR * ar
        h = self.DT
        dvx = acc + vy * r - Ff * math.sin(delta) / self.MASS
        dvy = (Ff * math.cos(delta) + Fr) / self.MASS - vx * r
        dr = (self.LF * Ff * math.cos(delta) - self.LR * Fr) / self.IZ
        x += h * (vx * math.cos(psi) - vy * math.sin(psi))
        y += h * (vx * math.sin(psi) + vy * math.cos(psi))
        psi += h * r
        vx = max(0.0, vx + h * dvx)
        vy += h * dvy
        r += h * dr
        self._x = np.array([x, y, psi, vx, vy, r])
        self._s_target += h * min(6.0, 1.0 + 0.1 * self._t)
        self._t += h
        p, _ = self._target()
        reward = -0.3 * abs(x * x + y * y - self.RADIUS**2) - float(
            np.hypot(x - p[0], y - p[1])
        )
        ok = bool(np.all(np.isfinite(self._x)))
        return self._obs(), float(reward), not ok, self._t >= self.T_END - 1e-9, {}


#: project ids -> entry points (gymnasium registry)
ENV_IDS: dict[str, Any] = {
    "icml25/TwoBranch-v0": TwoBranchMDP,
    "icml25/PrecisionBandit-v0": PrecisionBandit,
    "icml25/Obstacle2D-v0": Obstacle2D,
    "icml25/ContinuousAcrobot-v0": ContinuousAcrobot,
    "icml25/BicycleTracking-v0": BicycleTracking,
}
_MAX_STEPS = {
    "icml25/TwoBranch-v0": 2,
    "icml25/PrecisionBandit-v0": 1,
    "icml25/Obstacle2D-v0": 50,
    "icml25/ContinuousAcrobot-v0": 400,
    "icml25/BicycleTracking-v0": 400,
}


def register_envs() -> list[str]:
    """Register the chapter's environments with gymnasium under ``icml25/`` (idempotent).

    Returns:
        the registered ids (``gym.make("icml25/Obstacle2D-v0")`` then works;
        ``icml25/PrecisionBandit-v0`` needs ``reward_fn=`` as a keyword).
    """
    for env_id, cls in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(
                id=env_id, entry_point=cls, max_episode_steps=_MAX_STEPS[env_id] + 1
            )
    return list(ENV_IDS)
