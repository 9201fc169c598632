"""The loops of chapter 15's experiments (A: a fitted critic's extrapolation; B: PointMazeLite
offline; C: offline-to-online smoke), each a function a notebook cell calls."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from icml25.checks import check_array, check_int, check_real, check_rng

from .baselines import d3rlpy_policy, d3rlpy_q_values, d3rlpy_train
from .data import PointMazeLite, ReplayBuffer, evaluate_policy
from .method import (
    PARS,
    EnsembleCritic,
    PARSConfig,
    _pa_loss,
    extrapolation_probe,
    sample_infeasible_actions,
)

__all__ = [
    "toy_q_target",
    "fit_toy_critic",
    "extrapolation_experiment",
    "train_offline",
    "offline_comparison",
    "online_finetune",
]

#: Experiment A: the data region of the actions and the target's peak offset
TOY_HALF_WIDTH = 0.3


def toy_q_target(s: np.ndarray, a: np.ndarray, c: float) -> np.ndarray:
    """Experiment A's ground truth ``Q(s, a) = c (1 - ||a - a0(s)||^2)``, ``a0(s) = (0.1, 0.05) + 0.1 s``
    (our construction: a concave bump whose peak moves with the state)."""
    s = check_array(s, "s", shape=(None, 2))
    a = check_array(a, "a", shape=(s.shape[0], 2))
    c = check_real(c, "c", low=0.0, low_open=True)
    a0 = np.array([0.1, 0.05]) + 0.1 * s
    return c * (1.0 - ((a - a0) ** 2).sum(axis=1))


def fit_toy_critic(
    layer_norm: bool,
    c: float,
    alpha: float,
    n_steps: int,
    rng: np.random.Generator,
    U: float = 100.0,
    hidden: int = 64,
    n_data: int = 2048,
    batch_size: int = 256,
    lr: float = 5e-3,
) -> tuple[EnsembleCritic, dict]:
    """Fit one critic (E = 1) by regression on Experiment A's data, optionally with the PA term.

    Data: states uniform in [-1, 1]^2, actions uniform in [-0.3, 0.3]^2, targets
    :func:`toy_q_target`. Loss ``MSE + alpha L_PA`` with ``Q_min = -c`` (the target's value far
    away would be far below; -c is the PA anchor of a reward in [-1, 1] at this scale).

    Returns:
        ``(critic, data)`` with ``data = {"s", "a", "q"}`` the training set.
    """
    rng = check_rng(rng)
    c = check_real(c, "c", low=0.0, low_open=True)
    alpha = check_real(alpha, "alpha", low=0.0)
    n_steps = check_int(n_steps, "n_steps", low=1)
    s = rng.uniform(-1, 1, size=(n_data, 2)).astype(np.float32)
    a = rng.uniform(-TOY_HALF_WIDTH, TOY_HALF_WIDTH, size=(n_data, 2)).astype(
        np.float32
    )
    q = toy_q_target(s, a, c).astype(np.float32)
    critic = EnsembleCritic(2, 2, hidden=hidden, n_layers=2, E=1, layer_norm=layer_norm)
    opt = torch.optim.Adam([p for p in critic.parameters() if p.requires_grad], lr=lr)
    S, A, Q = (torch.as_tensor(x) for x in (s, a, q))
    for _ in range(n_steps):
        idx = torch.as_tensor(rng.integers(0, n_data, size=batch_size))
        loss = ((critic(S[idx], A[idx])[0] - Q[idx]) ** 2).mean()
        if alpha > 0:
            a_inf = torch.as_tensor(sample_infeasible_actions(batch_size, 2, U, rng))
            loss = loss + alpha * _pa_loss(critic(S[idx], a_inf), -c)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return critic, {"s": s, "a": a, "q": q}


def extrapolation_experiment(
    variants: list[dict],
    n_steps: int,
    rng: np.random.Generator,
    U: float = 100.0,
    n_dirs: int = 16,
    n_probe_states: int = 32,
) -> dict:
    """Experiment A: fit each variant and probe its Q in the data box, in the feasible box outside
    the data, and on rays to ``|a| = U``.

    Args:
        variants: dicts with ``name``, ``layer_norm``, ``c``, ``alpha``.
        n_steps: Adam steps per fit; rng: Generator; U: the infeasible guard (ray end);
        n_dirs: ray directions; n_probe_states: states averaged on the rays.

    Returns:
        ``{"rows": [...], "radii": (R,), "rays": {name: (n_dirs, R)}, "critics": {name: critic}}``;
        each row holds ``id_max`` (max fitted Q on the data), ``ood_box_max`` (max over feasible
        actions outside the data square), ``ray_max`` (max over ray points), ``ray_end_mean`` (mean
        over rays at |a| = U) and ``fit_rmse``, all in Q units, plus ``c``.
    """
    rng = check_rng(rng)
    n_steps = check_int(n_steps, "n_steps", low=1)
    U = check_real(U, "U", low=1.0, low_open=True)
    ang = 2 * np.pi * (np.arange(n_dirs) + 0.5) / n_dirs
    dirs = np.stack([np.cos(ang), np.sin(ang)], axis=1)
    radii = np.concatenate([np.linspace(0, 1.0, 11), np.geomspace(1.5, U, 12)])
    s_probe = rng.uniform(-1, 1, size=(n_probe_states, 2)).astype(np.float32)
    g = np.linspace(-1, 1, 41)
    box = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    # feasible, off the data
    box = box[np.abs(box).max(axis=1) > TOY_HALF_WIDTH + 0.1].astype(np.float32)
    rows, rays, critics = [], {}, {}
    for i, v in enumerate(variants):
        if not hasattr(v, "keys") or any(
            k not in v for k in ("name", "layer_norm", "c", "alpha")
        ):
            raise ValueError(
                f"variants[{i}] must be a dict with keys name, layer_norm, c, alpha, got {v!r}"
            )
        t0 = time.perf_counter()
        critic, data = fit_toy_critic(
            bool(v["layer_norm"]), float(v["c"]), float(v["alpha"]), n_steps, rng, U=U
        )
        with torch.no_grad():
            q_fit = critic(torch.as_tensor(data["s"]), torch.as_tensor(data["a"]))[
                0
            ].numpy()
            sb = np.repeat(s_probe, len(box), axis=0)
            ab = np.tile(box, (len(s_probe), 1))
            q_box = critic(torch.as_tensor(sb), torch.as_tensor(ab))[0].numpy()
        ray = extrapolation_probe(critic, s_probe, dirs, radii)
        rays[v["name"]] = ray
        critics[v["name"]] = critic
        rows.append(
            dict(
                name=v["name"],
                layer_norm=bool(v["layer_norm"]),
                c=float(v["c"]),
                alpha=float(v["alpha"]),
                id_max=float(q_fit.max()),
                ood_box_max=float(q_box.max()),
                ray_max=float(ray.max()),
                ray_end_mean=float(ray[:, -1].mean()),
                fit_rmse=float(np.sqrt(((q_fit - data["q"]) ** 2).mean())),
                seconds=time.perf_counter() - t0,
            )
        )
    return {"rows": rows, "radii": radii, "rays": rays, "critics": critics}


def train_offline(
    agent: PARS, buf: ReplayBuffer, n_updates: int, log_every: int = 0
) -> list[dict]:
    """Run ``n_updates`` offline updates of ``agent`` on minibatches of ``buf``; returns the logged infos."""
    if not isinstance(agent, PARS):
        raise TypeError(f"agent must be a PARS, got {type(agent).__name__}")
    n_updates = check_int(n_updates, "n_updates", low=1)
    log = []
    for i in range(n_updates):
        info = agent.offline_update(buf.sample(agent.cfg.batch_size, agent.rng))
        if log_every and (i + 1) % log_every == 0:
            log.append({"update": i + 1, **info})
    return log


def _q_gap(
    qfun: Any, buf: ReplayBuffer, U: float, rng: np.random.Generator, n: int = 1024
) -> tuple[float, float]:
    """Mean Q at dataset actions and at infeasible actions of the same states."""
    idx = rng.integers(0, len(buf), size=n)
    s, a = buf.data["observations"][idx], buf.data["actions"][idx]
    a_inf = sample_infeasible_actions(n, a.shape[1], U, rng)
    return float(np.mean(qfun(s, a))), float(np.mean(qfun(s, a_inf)))


def offline_comparison(
    configs: list[dict],
    buf: ReplayBuffer,
    env: PointMazeLite,
    n_updates: int,
    rng: np.random.Generator,
    base: PARSConfig,
    n_eval: int = 50,
    device: str = "cpu",
) -> list[dict]:
    """Experiment B: train each config offline on ``buf`` and evaluate it on ``env``.

    Args:
        configs: dicts with ``name`` and either ``flags`` (fields of ``base`` to change: our
            agents) or ``d3rlpy`` (an algorithm name) with optional ``kw`` for :func:`d3rlpy_train`.
        buf: the offline data; env: the maze; n_updates: updates per method; rng: Generator;
        base: the PARS settings the flags modify; n_eval: evaluation episodes.

    Returns:
        one row per config: ``success``, ``return``, ``q_data``, ``q_infeasible`` (mean Q at dataset
        and infeasible actions, in scaled-reward units), ``c_reward`` and ``seconds``; ``agent``
        holds the trained object.
    """
    rng = check_rng(rng)
    n_updates = check_int(n_updates, "n_updates", low=1)
    rows = []
    for conf in configs:
        t0 = time.perf_counter()
        if "d3rlpy" in conf:
            kw = dict(conf.get("kw", {}))
            algo = d3rlpy_train(
                conf["d3rlpy"], buf, n_updates, rng, device=device, **kw
            )
            policy, agent = d3rlpy_policy(algo), algo
            qd, qi = _q_gap(lambda s, a: d3rlpy_q_values(algo, s, a), buf, base.U, rng)
            c = float(kw.get("reward_scale") or 1.0)
        else:
            agent = PARS(base.with_flags(**conf.get("flags", {})), rng)
            train_offline(agent, buf, n_updates)
            policy = agent.act
            qd, qi = _q_gap(
                lambda s, a: agent.q_values(s, a).mean(axis=0), buf, base.U, rng
            )
            c = agent.cfg.c_reward
        ev = evaluate_policy(policy, env, n_eval, rng)
        rows.append(
            dict(
                name=conf["name"],
                success=ev["success"],
                ret=ev["return"],
                steps=ev["steps"],
                q_data=qd,
                q_infeasible=qi,
                c_reward=c,
                seconds=time.perf_counter() - t0,
                agent=agent,
            )
        )
    return rows


def online_finetune(
    agent: PARS,
    off: ReplayBuffer,
    env: PointMazeLite,
    n_steps: int,
    utd: int,
    rng: np.random.Generator,
    n_envs: int = 1,
    n_eval: int = 50,
) -> dict:
    """Experiment C: fine-tune ``agent`` online for ``n_steps`` environment steps (``n_envs`` in parallel),
    ``utd`` critic updates per step on symmetric batches, one actor update per step.

    The actor optimiser is reset first (as in the paper's fine-tuning, reconstruction); exploration
    noise ``agent.cfg.expl_noise``; time-outs are stored as non-terminals.

    Returns:
        ``{"success_before", "success_after", "online_transitions", "updates", "trace"}``.
    """
    if not isinstance(agent, PARS):
        raise TypeError(f"agent must be a PARS, got {type(agent).__name__}")
    n_steps = check_int(n_steps, "n_steps", low=1)
    utd = check_int(utd, "utd", low=1)
    rng = check_rng(rng)
    n_envs = check_int(n_envs, "n_envs", low=1)
    before = evaluate_policy(agent.act, env, n_eval, rng)["success"]
    agent.actor_opt = torch.optim.Adam(agent.actor.parameters(), lr=agent.cfg.lr)
    on = ReplayBuffer(state_dim=agent.cfg.state_dim, act_dim=agent.cfg.act_dim)
    obs = env.reset(n_envs, rng)
    trace = []
    u0 = agent.n_updates
    for t in range(n_steps):
        a = agent.act(obs, noise=agent.cfg.expl_noise)
        s2, r, term, tout = env.step(a)
        on.add(
            {
                "observations": obs,
                "actions": a,
                "rewards": r,
                "next_observations": s2,
                "terminals": term,
            }
        )
        info = agent.online_update(off, on, utd=utd)
        trace.append({"step": t + 1, **{k: float(v) for k, v in info.items()}})
        done = (term > 0) | (tout > 0)
        obs = s2
        if done.any():  # restart the finished episodes only
            t_old, p_old = env.t.copy(), env.pos.copy()
            env.reset(n_envs, rng)
            env.pos = np.where(done[:, None], env.pos, p_old)
            env.t = np.where(done, 0, t_old)
            obs = env.pos.astype(np.float32)
    after = evaluate_policy(agent.act, env, n_eval, rng)["success"]
    return {
        "success_before": before,
        "success_after": after,
        "online_transitions": len(on),
        "updates": agent.n_updates - u0,
        "trace": trace,
    }
