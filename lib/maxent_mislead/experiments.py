"""The loops the chapter's cells call: exact toys (A, B), the learned precision bandit (C), the
Obstacle2D comparison (D) and the gpu profile's control benchmark (parallel processes)."""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from icml25.checks import check_int, check_real, check_rng

from ._checks import _check_gamma, _check_width
from .baselines import ALGORITHMS, evaluate, make_agent, policy_action, start_actor_at
from .data import make_toy_b_reward, two_branch_tables
from .defaults import DEFAULTS
from .envs import Obstacle2D, PrecisionBandit, register_envs
from .method import _action_grid, _branch_values, _mass_near, _soft_policy, _soft_vi

__all__ = [
    "toy_a_sweep",
    "toy_b_sweep",
    "precision_bandit_runs",
    "obstacle_comparison",
    "control_benchmark",
]


def toy_a_sweep(
    alphas: Sequence[float],
    w: float,
    *,
    n_actions: int = DEFAULTS.toy_a.n_actions,
    gamma: float = DEFAULTS.toy_a.gamma,
) -> list[dict[str, Any]]:
    """Toy A at each ``alpha``: closed-form branch values and soft / plain value iteration's choice.

    The choice at s0 is the branch holding more than half of the policy's mass (soft VI) or the
    greedy branch (plain VI, ``alpha = 0``).

    Args:
        alphas: temperatures >= 0; w: half-width of the precise set in (0, 1].
        n_actions: action-grid points; gamma: discount in [0, 1).

    Returns:
        one dict per alpha: ``alpha, v_robust, v_precise`` (closed form), ``vi_v_robust,
        vi_v_precise`` (soft VI), ``p_precise`` (soft policy's mass on the precise half at s0),
        ``soft_choice``, ``plain_choice``.

    Raises:
        ValueError: a negative alpha, ``w`` outside (0, 1], ``gamma`` outside [0, 1).
    """
    t = DEFAULTS.toy_a
    w, gamma = _check_width(w), _check_gamma(gamma)
    alphas = [check_real(a, "alphas", low=0.0) for a in alphas]
    P, R, term, da, a = two_branch_tables(w, t.r_mid, t.r_hi, t.r_fail, n_actions)
    plain = _soft_vi(P, R, 0.0, gamma, da, term, 1e-13, 10_000)
    plain_choice = (
        "precise" if plain.Q[0, a >= 0].max() > plain.Q[0, a < 0].max() else "robust"
    )
    rows = []
    for alpha in alphas:
        vr, vp = _branch_values(alpha, t.r_mid, t.r_hi, t.r_fail, w)
        soft = _soft_vi(P, R, alpha, gamma, da, term, 1e-13, 10_000)
        p_precise = float(soft.policy[0, a >= 0].sum())
        rows.append(
            dict(
                alpha=alpha,
                v_robust=vr,
                v_precise=vp,
                vi_v_robust=float(soft.V[1]),
                vi_v_precise=float(soft.V[2]),
                p_precise=p_precise,
                soft_choice="precise" if p_precise > 0.5 else "robust",
                plain_choice=plain_choice,
            )
        )
    return rows


def toy_b_sweep(
    alphas: Sequence[float],
    *,
    sigma: float = DEFAULTS.toy_b.sigma,
    radius: float = DEFAULTS.toy_b.radius,
    n_grid: int = DEFAULTS.toy_b.n_grid,
) -> list[dict[str, Any]]:
    """Toy B's exact soft-optimal policy ``pi propto exp(r / alpha)`` at each ``alpha``.

    Args:
        alphas: temperatures > 0; sigma: narrow-peak width > 0; radius: "near" radius > 0;
        n_grid: grid points on [-1, 1].

    Returns:
        one dict per alpha: ``alpha, mass_near`` (within ``radius`` of the narrow peak),
        ``expected_reward`` (``E_pi[r]``), ``mode`` (the policy's most likely action).

    Raises:
        ValueError: alpha <= 0, sigma <= 0, radius <= 0, n_grid < 2.
    """
    alphas = [check_real(al, "alphas", low=0.0, low_open=True) for al in alphas]
    radius, n_grid = (
        check_real(radius, "radius", low=0.0, low_open=True),
        check_int(n_grid, "n_grid", low=2),
    )
    a = _action_grid(n_grid)
    r = make_toy_b_reward(sigma)(a)
    rows = []
    for alpha in alphas:
        p = _soft_policy(r, alpha)
        rows.append(
            dict(
                alpha=alpha,
                mass_near=_mass_near(r, a, alpha, DEFAULTS.toy_b.c_narrow, radius),
                expected_reward=float(p @ r),
                mode=float(a[np.argmax(p)]),
            )
        )
    return rows


class _ActionTrace(BaseCallback):
    """Records the deterministic action at the bandit's observation every ``every`` steps."""

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every, self.trace = every, []

    def _on_step(self) -> bool:
        if self.num_timesteps % self.every == 0:
            self.trace.append(
                (
                    int(self.num_timesteps),
                    float(policy_action(self.model, np.zeros(1))[0]),
                )
            )
        return True


_BANDIT_ALGORITHMS = ("td3", "sac", "sac_auto", "sac_adaent")


def _check_bandit_configs(configs: Any) -> list[dict[str, Any]]:
    """Each config a dict with a str ``name`` and an off-policy ``algorithm`` (see the caller)."""
    if isinstance(configs, (str, bytes, dict)) or not isinstance(configs, Sequence):
        raise TypeError(
            f"configs must be a list of dicts, got {type(configs).__name__}"
        )
    out = []
    for i, cfg in enumerate(configs):
        if (
            not isinstance(cfg, dict)
            or not isinstance(cfg.get("name"), str)
            or "algorithm" not in cfg
        ):
            raise TypeError(
                f"configs[{i}] must be a dict with a str 'name' and an 'algorithm', got {cfg!r}"
            )
        if cfg["algorithm"] not in _BANDIT_ALGORITHMS:
            raise ValueError(
                f"configs[{i}]['algorithm'] must be one of {list(_BANDIT_ALGORITHMS)}, "
                f"got {cfg['algorithm']!r}"
            )
        out.append(cfg)
    return out


def precision_bandit_runs(
    configs: Sequence[dict[str, Any]],
    n_steps: int,
    rng: np.random.Generator,
    *,
    sigma: float = DEFAULTS.toy_b.sigma_learned,
    start: float = DEFAULTS.toy_b.c_narrow,
    net_arch: tuple[int, ...] = (64, 64),
    n_samples: int = 16,
    trace_every: int = 100,
    batch_size: int = 64,
    learning_starts: int = 10,
    device: str = "cpu",
) -> list[dict[str, Any]]:
    """Experiment (C): SB3 learners on the precision bandit, one run each, one after another.

    Each config is ``{"name": str, "algorithm": "td3" | "sac" | "sac_auto" | "sac_adaent",
    "alpha": float (SAC kinds), "start": bool, "learning_starts": int (optional, overrides the
    argument)}``; ``start=True`` starts the actor at ``start`` with a small spread
    (:func:`start_actor_at`), ``False`` keeps SB3's neutral initialisation.

    Args:
        configs: the runs; n_steps: environment steps per run (>= 200); rng: NumPy generator.
        sigma: the narrow peak's width; start: the starting action.
        net_arch, n_samples, device: as :func:`make_agent`; trace_every: steps between recorded
            actions; batch_size: replay minibatch of the off-policy learners; learning_starts:
            uniformly random steps before the first update (SB3's knob, default 100 there). The
            chapter's 10 was chosen after trial runs: with SB3's 100 (and with 1000), SAC with
            alpha = 0.05 left the narrow peak on seed 1 while TD3 stayed; with 10 the critic
            learns mostly from the started actor's own samples.

    Returns:
        one dict per config: ``name, algorithm, alpha, start, learning_starts, final_action`` (deterministic),
        ``trace`` (list of ``(step, action)``), ``switched`` (SAC-AdaEnt's mean switched fraction,
        else NaN), ``seconds`` (wall), ``cpu_seconds`` (this process's CPU time).

    Raises:
        ValueError/TypeError: bad sizes, a config that is not a dict with a ``name`` and an
        off-policy ``algorithm`` (``td3``, ``sac``, ``sac_auto``, ``sac_adaent``: PPO has no
        replay buffer to start from the optimum), a negative ``alpha``, bad ``rng``.
    """
    configs = _check_bandit_configs(configs)
    n_steps = check_int(n_steps, "n_steps", low=200)
    trace_every = check_int(trace_every, "trace_every", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    learning_starts = check_int(learning_starts, "learning_starts", low=0)
    rng = check_rng(rng)
    reward_fn = make_toy_b_reward(sigma)
    rows = []
    for i, cfg in enumerate(configs):
        t0, c0 = time.perf_counter(), time.process_time()
        env = PrecisionBandit(reward_fn)
        alpha = float(cfg.get("alpha", DEFAULTS.agent.alpha))
        starts = check_int(
            cfg.get("learning_starts", learning_starts),
            f"configs[{i}]['learning_starts']",
            low=0,
        )
        model = make_agent(
            cfg["algorithm"],
            env,
            rng,
            alpha=alpha,
            net_arch=tuple(net_arch),
            n_samples=n_samples,
            learning_starts=starts,
            device=device,
            batch_size=batch_size,
        )
        if cfg.get("start", True):
            start_actor_at(model, start, log_std=-2.0)
        cb = _ActionTrace(trace_every)
        model.learn(n_steps, callback=cb)
        rows.append(
            dict(
                name=cfg["name"],
                algorithm=cfg["algorithm"],
                alpha=alpha,
                start=bool(cfg.get("start", True)),
                learning_starts=starts,
                final_action=float(policy_action(model, np.zeros(1))[0]),
                trace=cb.trace,
                switched=float(np.mean(model.switched))
                if hasattr(model, "switched") and model.switched
                else float("nan"),
                seconds=time.perf_counter() - t0,
                cpu_seconds=time.process_time() - c0,
            )
        )
    return rows


def obstacle_comparison(
    algorithms: Sequence[str],
    n_steps: int,
    rng: np.random.Generator,
    *,
    alpha: float = DEFAULTS.agent.alpha,
    net_arch: tuple[int, ...] = (64, 64),
    n_samples: int = 16,
    n_eval: int = 1,
    batch_size: int = 64,
    device: str = "cpu",
) -> list[dict[str, Any]]:
    """Experiment (D): each algorithm trains ``n_steps`` on Obstacle2D, then deterministic episodes.

    Args:
        algorithms: names from :data:`ALGORITHMS`; n_steps: steps per run (>= 100); rng: generator.
        alpha: SAC's fixed temperature; net_arch, n_samples, device: as :func:`make_agent`;
        n_eval: evaluation episodes (env and policy are deterministic: one suffices);
        batch_size: replay minibatch of the off-policy learners (PPO: 64 of 256-step rollouts).

    Returns:
        one dict per algorithm: ``algorithm, return, return_std, goal_rate, collision_rate,
        switched, seconds, cpu_seconds``.

    Raises:
        ValueError/TypeError: bad sizes, unknown algorithm, bad ``rng``.
    """
    n_steps, n_eval = (
        check_int(n_steps, "n_steps", low=100),
        check_int(n_eval, "n_eval", low=1),
    )
    batch_size = check_int(batch_size, "batch_size", low=1)
    rng = check_rng(rng)
    rows = []
    for algorithm in algorithms:
        t0, c0 = time.perf_counter(), time.process_time()
        extra = (
            {"n_steps": 256, "batch_size": 64}
            if algorithm == "ppo"
            else {"batch_size": batch_size}
        )
        model = make_agent(
            algorithm,
            Obstacle2D(),
            rng,
            alpha=alpha,
            net_arch=tuple(net_arch),
            n_samples=n_samples,
            device=device,
            **extra,
        )
        model.learn(n_steps)
        res = evaluate(model, Obstacle2D(), n_eval, rng)
        rows.append(
            dict(
                algorithm=algorithm,
                **res,
                switched=float(np.mean(model.switched))
                if getattr(model, "switched", None)
                else float("nan"),
                seconds=time.perf_counter() - t0,
                cpu_seconds=time.process_time() - c0,
            )
        )
    return rows


class _Deadline(BaseCallback):
    def __init__(self, deadline: float) -> None:
        super().__init__()
        self.deadline = deadline

    def _on_step(self) -> bool:
        return time.perf_counter() < self.deadline


def _control_job(job: dict[str, Any]) -> dict[str, Any]:
    """One (env, algorithm, rep) run in a worker process: train until ``n_steps`` or the deadline."""
    import torch

    torch.set_num_threads(1)
    register_envs()
    rng = np.random.default_rng(job["seed_seq"])
    env = gym.make(job["env_id"])
    model = make_agent(
        job["algorithm"],
        env,
        rng,
        alpha=job["alpha"],
        net_arch=tuple(job["net_arch"]),
        n_samples=job["n_samples"],
        device="cpu",
    )
    t0 = time.perf_counter()
    model.learn(job["n_steps"], callback=_Deadline(t0 + job["seconds"]))
    res = evaluate(model, gym.make(job["env_id"]), job["n_eval"], rng)
    return dict(
        env=job["env_id"],
        algorithm=job["algorithm"],
        rep=job["rep"],
        steps=int(model.num_timesteps),
        seconds=time.perf_counter() - t0,
        **res,
    )


def control_benchmark(
    env_ids: Sequence[str],
    algorithms: Sequence[str],
    n_steps: int,
    n_reps: int,
    rng: np.random.Generator,
    *,
    seconds: float,
    n_workers: int | None = None,
    alpha: float = DEFAULTS.agent.alpha,
    net_arch: tuple[int, ...] = DEFAULTS.agent.net_arch,
    n_samples: int = DEFAULTS.agent.n_samples,
    n_eval: int = 3,
) -> list[dict[str, Any]]:
    """The gpu profile's benchmark: every (env, algorithm, rep) in parallel worker processes.

    SB3 runs about 190 SAC steps a second per process, so the notes' 300k-1M steps cannot fit a
    10-minute profile: each job trains until ``n_steps`` or ``seconds`` of wall time, whichever
    comes first, and reports the steps it reached.

    Args:
        env_ids: gymnasium ids (the chapter's ``icml25/`` ids, ``Hopper-v5``); algorithms: names
            from :data:`ALGORITHMS`; n_steps: step cap per job; n_reps: seeds per pair;
        rng: generator (each job gets a child seed); seconds: wall budget per job (> 0);
        n_workers: processes (default: the CPU count); alpha, net_arch, n_samples: agents;
        n_eval: deterministic evaluation episodes per job.

    Returns:
        one dict per job: ``env, algorithm, rep, steps, seconds, return, return_std, goal_rate,
        collision_rate``.

    Raises:
        ValueError/TypeError: unknown algorithm, bad sizes, bad ``rng``.
    """
    for a in algorithms:
        if a not in ALGORITHMS:
            raise ValueError(
                f"algorithms must be names from {sorted(ALGORITHMS)}, got {a!r}"
            )
    n_steps, n_reps = (
        check_int(n_steps, "n_steps", low=1),
        check_int(n_reps, "n_reps", low=1),
    )
    rng = check_rng(rng)
    seconds = check_real(seconds, "seconds", low=0.0, low_open=True)
    n_workers = check_int(
        n_workers if n_workers is not None else (os.cpu_count() or 1),
        "n_workers",
        low=1,
    )
    seeds = rng.integers(2**31 - 1, size=len(env_ids) * len(algorithms) * n_reps)
    jobs = [
        dict(
            env_id=e,
            algorithm=a,
            rep=k,
            n_steps=n_steps,
            seconds=seconds,
            alpha=alpha,
            net_arch=list(net_arch),
            n_samples=n_samples,
            n_eval=n_eval,
            seed_seq=int(seeds[i]),
        )
        for i, (e, a, k) in enumerate(
            (e, a, k) for e in env_ids for a in algorithms for k in range(n_reps)
        )
    ]
    import multiprocessing as mp

    with ProcessPoolExecutor(
        max_workers=n_workers, mp_context=mp.get_context("spawn")
    ) as pool:
        return list(pool.map(_control_job, jobs))
