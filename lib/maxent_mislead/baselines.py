"""The agents the paper compares (stable-baselines3): SAC (fixed and auto alpha), TD3, PPO, and
:class:`~icml25.maxent_mislead.SACAdaEnt`; a factory, an actor initialiser and an evaluator."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch as th
from stable_baselines3 import PPO, SAC, TD3

from icml25.checks import check_choice, check_int, check_real, check_rng

from ._checks import _check_alpha
from .defaults import DEFAULTS
from .sac_adaent import SACAdaEnt

__all__ = ["ALGORITHMS", "make_agent", "start_actor_at", "policy_action", "evaluate"]

#: the compared agents: name -> what it is
ALGORITHMS = {
    "td3": "TD3 (no entropy)",
    "ppo": "PPO (on-policy, small entropy bonus 0)",
    "sac": "SAC, fixed alpha",
    "sac_auto": "SAC, auto alpha (target entropy -dim A)",
    "sac_adaent": "SAC-AdaEnt (fixed alpha, landscape switch)",
}


def make_agent(
    algorithm: str,
    env: Any,
    rng: np.random.Generator,
    *,
    alpha: float = DEFAULTS.agent.alpha,
    net_arch: tuple[int, ...] = DEFAULTS.agent.net_arch,
    n_samples: int = DEFAULTS.agent.n_samples,
    threshold: float = DEFAULTS.agent.threshold,
    learning_starts: int = 100,
    device: str = "cpu",
    **kwargs: Any,
) -> Any:
    """A stable-baselines3 agent for ``env`` (``verbose=0``, SB3's defaults unless given).

    Args:
        algorithm: one of :data:`ALGORITHMS`.
        env: a gymnasium environment (or SB3 VecEnv).
        rng: NumPy generator; SB3's integer seed is drawn from it.
        alpha: SAC's fixed temperature (``sac``, ``sac_adaent``), >= 0.
        net_arch: hidden layer widths of actor and critics.
        n_samples, threshold: SAC-AdaEnt's landscape test.
        learning_starts: random steps before the off-policy agents learn, >= 0 (ignored by PPO,
            which has no replay buffer; SB3's own default is 100).
        device: torch device (``icml25.common.torch_device(PROFILE)``).
        **kwargs: passed to the SB3 constructor.

    Returns:
        the SB3 model.

    Raises:
        ValueError/TypeError: unknown ``algorithm``, bad ``rng``, ``alpha < 0``, bad sizes.
    """
    algorithm = check_choice(algorithm, "algorithm", ALGORITHMS)
    rng = check_rng(rng)
    alpha = _check_alpha(alpha)
    arch = [check_int(h, "net_arch", low=1) for h in net_arch]
    learning_starts = check_int(learning_starts, "learning_starts", low=0)
    seed = int(rng.integers(2**31 - 1))  # SB3 takes an integer seed
    common = dict(
        seed=seed, device=device, verbose=0, policy_kwargs=dict(net_arch=arch)
    )
    if algorithm == "ppo":
        return PPO("MlpPolicy", env, **common, **kwargs)
    if algorithm == "td3":
        return TD3(
            "MlpPolicy", env, learning_starts=learning_starts, **common, **kwargs
        )
    if algorithm == "sac":
        return SAC(
            "MlpPolicy",
            env,
            ent_coef=alpha,
            learning_starts=learning_starts,
            **common,
            **kwargs,
        )
    if algorithm == "sac_auto":
        return SAC(
            "MlpPolicy",
            env,
            ent_coef="auto",
            learning_starts=learning_starts,
            **common,
            **kwargs,
        )
    return SACAdaEnt(
        "MlpPolicy",
        env,
        n_samples=n_samples,
        threshold=threshold,
        ent_coef=alpha,
        learning_starts=learning_starts,
        **common,
        **kwargs,
    )


def _last_linear(module: th.nn.Module) -> th.nn.Linear:
    layers = [m for m in module.modules() if isinstance(m, th.nn.Linear)]
    return layers[-1]


def start_actor_at(model: Any, action: float, log_std: float = -2.0) -> None:
    """Start an actor at a given (squashed) action, whatever the observation.

    Sets the last mean layer's weights to 0 and its bias to ``atanh(action)`` (SAC, SAC-AdaEnt,
    TD3 and its target actor), and SAC's log-std layer to a constant ``log_std``. The chapter uses
    it to start every learner at the narrow optimum of the precision bandit.

    Args:
        model: an SB3 ``SAC``/``SACAdaEnt``/``TD3`` model.
        action: the starting action in (-1, 1) (one-dimensional action spaces).
        log_std: SAC's initial log standard deviation (before the tanh).

    Raises:
        ValueError: ``action`` outside (-1, 1). TypeError: another kind of model.
    """
    action = check_real(
        action, "action", low=-1.0, high=1.0, low_open=True, high_open=True
    )
    log_std = check_real(log_std, "log_std", low=-20.0, high=2.0)
    if isinstance(model, SAC):
        heads = [(model.actor.mu, math.atanh(action)), (model.actor.log_std, log_std)]
    elif isinstance(model, TD3):
        heads = [
            (_last_linear(model.actor.mu), math.atanh(action)),
            (_last_linear(model.actor_target.mu), math.atanh(action)),
        ]
    else:
        raise TypeError(
            f"model must be an SB3 SAC, SACAdaEnt or TD3 model, got {type(model).__name__}"
        )
    with th.no_grad():
        for layer, bias in heads:
            layer.weight.zero_()
            layer.bias.fill_(bias)


def policy_action(model: Any, obs: np.ndarray) -> np.ndarray:
    """The deterministic (mean) action of ``model`` at ``obs`` (how the official code evaluates).

    Args:
        model: an SB3 model; obs: one observation.

    Returns:
        the action as a float64 array.
    """
    action, _ = model.predict(np.asarray(obs, dtype=np.float32), deterministic=True)
    return np.asarray(action, dtype=np.float64)


def evaluate(
    model: Any, env: Any, n_episodes: int, rng: np.random.Generator
) -> dict[str, float]:
    """Deterministic-policy episodes: mean return and the fractions ending at the goal / in a collision.

    Args:
        model: an SB3 model; env: a gymnasium env (``info`` may carry ``goal``/``collision``).
        n_episodes: >= 1; rng: NumPy generator for the episodes' reset seeds.

    Returns:
        ``{"return": mean, "return_std": std, "goal_rate": ..., "collision_rate": ...}``.

    Raises:
        ValueError/TypeError: ``n_episodes < 1``, bad ``rng``.
    """
    n_episodes = check_int(n_episodes, "n_episodes", low=1)
    rng = check_rng(rng)
    returns, goals, hits = [], 0, 0
    for _ in range(n_episodes):
        obs, _ = env.reset(seed=int(rng.integers(2**31 - 1)))
        total, done, info = 0.0, False, {}
        while not done:
            obs, r, term, trunc, info = env.step(policy_action(model, obs))
            total += float(r)
            done = term or trunc
        returns.append(total)
        goals += bool(info.get("goal", False))
        hits += bool(info.get("collision", False))
    return {
        "return": float(np.mean(returns)),
        "return_std": float(np.std(returns)),
        "goal_rate": goals / n_episodes,
        "collision_rate": hits / n_episodes,
    }
