"""The loops the chapter's cells call: data, training, evaluation, and the theory checks."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import torch
from scipy import optimize, stats
from scipy.special import logsumexp

from icml25.checks import (
    check_array,
    check_budget,
    check_choice,
    check_int,
    check_probability,
    check_real,
    check_rng,
)

from ._checks import PairBatch
from .baselines import BC, IIPL, SLMARL
from .data import (
    NoisyOracleAnnotator,
    PreferencePairs,
    Trajectories,
    annotate_pairs,
    concat_trajectories,
    generate_mpe_dataset,
    generate_offline_dataset,
    make_preference_pairs,
    pair_batch,
    subset,
)
from .defaults import DEFAULTS
from .envs import CoopGridEnv, MPESpreadAdapter
from .method import OMAPL, OMAPLConfig, _extreme_v

__all__ = [
    "GridData",
    "make_grid_data",
    "make_agent",
    "train",
    "evaluate_grid",
    "evaluate_mpe",
    "reward_spearman",
    "preference_accuracy",
    "bt_hessian_eigs",
    "hessian_search",
    "extreme_v_minimiser",
    "METHODS",
    "make_mpe_data",
    "run_methods",
]

METHODS = ("O-MAPL", "BC", "IIPL", "IPL-VDN", "SL-MARL")


@dataclass
class GridData:
    """Training pool and pairs, held-out pool and pairs, and the full training batch (tensors)."""

    pool: Trajectories
    pairs: PreferencePairs
    test_pool: Trajectories
    test_pairs: PreferencePairs
    batch: PairBatch
    env: CoopGridEnv

    def sample(
        self, rng: np.random.Generator, batch_size: int, fraction: float = 1.0
    ) -> PairBatch:
        """A minibatch of ``batch_size`` training pairs (the first ``fraction`` of them).

        Raises:
            TypeError: ``rng`` not a Generator. ValueError: ``batch_size < 1``, ``fraction``
                outside (0, 1], a batch too large for memory."""
        rng = check_rng(rng)
        batch_size = check_int(batch_size, "batch_size", low=1)
        fraction = check_real(fraction, "fraction", low=0.0, low_open=True, high=1.0)
        per_pair = sum(
            x[:, :1].numel() * x.element_size()
            for x in (
                self.batch.obs,
                self.batch.next_obs,
                self.batch.state,
                self.batch.next_state,
                self.batch.actions,
                self.batch.dones,
                self.batch.mask,
            )
            if x is not None
        )
        check_budget(
            f"GridData.sample(batch_size={batch_size})",
            n_bytes=float(per_pair) * batch_size,
        )
        n = max(1, int(round(fraction * len(self.pairs))))
        sel = torch.from_numpy(rng.integers(0, n, batch_size))
        b = self.batch
        pick = lambda x: None if x is None else x.index_select(1, sel)  # noqa: E731
        return PairBatch(
            pick(b.obs),
            pick(b.next_obs),
            pick(b.state),
            pick(b.next_state),
            pick(b.actions),
            pick(b.dones),
            pick(b.mask),
            pick(b.avail),
            b.y.index_select(0, sel),
        )


def _split(
    parts: list[Trajectories], rng: np.random.Generator, test_frac: float
) -> tuple[Trajectories, Trajectories]:
    pool = concat_trajectories(parts)
    perm = rng.permutation(len(pool))
    n_test = int(round(test_frac * len(pool)))
    return subset(pool, np.sort(perm[n_test:])), subset(pool, np.sort(perm[:n_test]))


def make_grid_data(
    rng: np.random.Generator,
    n_traj: int,
    n_pairs: int,
    labels: str = "rule",
    flip_prob: float = 0.0,
    size: int = DEFAULTS.grid.size,
    n_agents: int = DEFAULTS.grid.n_agents,
    horizon: int = DEFAULTS.grid.horizon,
    eps: tuple[float, ...] = DEFAULTS.grid.eps,
    test_frac: float = 0.2,
) -> GridData:
    """CoopGrid datasets (one per ``eps``, quality 0 = expert), split 80/20 into train and held-out
    trajectories, with ``n_pairs`` training pairs (and ``n_pairs // 4`` held-out pairs).

    ``labels="rule"``: better-quality dataset preferred (the code's rule), then ``flip_prob``
    flips; ``"noisy"``: :class:`NoisyOracleAnnotator` on the prompts (BT on returns + flips).
    Held-out pairs are always labelled by the noiseless rule of the same kind (for ``"noisy"``: the
    larger true return, pairs whose returns differ by less than 0.1 left out).

    Raises:
        TypeError: ``rng`` not a Generator. ValueError: ``labels``, ``flip_prob``, ``eps``, a size
            or ``test_frac`` out of range (named), or a split with fewer than 2 trajectories a side.
    """
    rng = check_rng(rng)
    labels = check_choice(labels, "labels", ("rule", "noisy"))
    flip_prob = check_probability(flip_prob, "flip_prob")
    env = CoopGridEnv(1, size, n_agents, n_agents, horizon)
    parts = [
        generate_offline_dataset(env, e, n_traj, rng, quality=q)
        for q, e in enumerate(eps)
    ]
    pool, test = _split(
        parts, rng, check_real(test_frac, "test_frac", low=0.0, high=0.9)
    )
    if len(test) < 2 or len(pool) < 2:
        raise ValueError(
            f"test_frac = {test_frac} with n_traj = {n_traj} per level leaves {len(pool)} training and "
            f"{len(test)} held-out trajectories; both need at least 2"
        )
    if labels == "rule":
        pairs = make_preference_pairs(pool, n_pairs, rng, "quality", flip_prob)
        test_pairs = make_preference_pairs(
            test, max(1, n_pairs // 4), rng, "quality", 0.0
        )
    else:
        pairs = annotate_pairs(
            pool, n_pairs, NoisyOracleAnnotator(flip_prob, 1.0, rng), rng
        )
        cand = make_preference_pairs(
            test, max(1, n_pairs // 2), rng, "return_bt", 0.0, temperature=1e-3
        )
        R = test.returns
        keep = np.flatnonzero(np.abs(R[cand.idx1] - R[cand.idx2]) >= 0.1 - 1e-9)[
            : max(1, n_pairs // 4)
        ]
        # ties (equal returns) have no right answer: left out
        test_pairs = cand.take(keep)
    return GridData(
        pool,
        pairs,
        test,
        test_pairs,
        pair_batch(pool, pairs, np.arange(len(pairs))),
        env,
    )


def make_mpe_data(
    rng: np.random.Generator,
    n_traj: int,
    n_pairs: int,
    noises: tuple[float, ...] = (0.1, 0.5, 2.0),
    max_cycles: int = 25,
) -> tuple[GridData, MPESpreadAdapter]:
    """simple_spread datasets (expert + Gaussian noise per quality level) with rule labels."""
    rng = check_rng(rng)
    ad = MPESpreadAdapter(3, max_cycles)
    parts = [
        generate_mpe_dataset(ad, s, n_traj, rng, quality=q)
        for q, s in enumerate(noises)
    ]
    pool, test = _split(parts, rng, 0.2)
    pairs = make_preference_pairs(pool, n_pairs, rng, "quality")
    test_pairs = make_preference_pairs(test, max(1, n_pairs // 4), rng, "quality")
    return GridData(
        pool,
        pairs,
        test,
        test_pairs,
        pair_batch(pool, pairs, np.arange(len(pairs))),
        None,
    ), ad


def make_agent(
    method: str,
    data: GridData,
    hidden: int,
    n_updates: int,
    device: str = "cpu",
    **overrides: Any,
) -> Any:
    """The learner of ``method`` (one of :data:`METHODS`, or ``"O-MAPL two-layer"``) sized for ``data``.

    ``overrides`` replace :class:`OMAPLConfig` fields (``beta``, ``lr``, ``mixer_input``...).

    Raises:
        TypeError: ``data`` not :class:`GridData`, an unknown override. ValueError: an unknown
            method, a config value out of range or nets too large for memory (named)."""
    method = check_choice(method, "method", (*METHODS, "O-MAPL two-layer"))
    if not isinstance(data, GridData):
        raise TypeError(
            f"data must be GridData (make_grid_data), got {type(data).__name__}"
        )
    unknown = sorted(set(overrides) - set(OMAPLConfig.__dataclass_fields__))
    if unknown:
        raise TypeError(f"unknown OMAPLConfig overrides: {unknown}")
    discrete = data.pool.avail is not None
    act_dim = data.pool.avail.shape[-1] if discrete else data.pool.actions.shape[-1]
    cfg = OMAPLConfig(
        obs_dim=data.pool.obs.shape[-1],
        state_dim=data.pool.state.shape[-1],
        n_agents=data.pool.obs.shape[2],
        act_dim=int(act_dim),
        discrete=discrete,
        hidden=check_int(hidden, "hidden", low=1),
        **overrides,
    )
    if method == "BC":
        return BC(cfg, device)
    if method == "IIPL":
        return IIPL(cfg, device)
    if method == "IPL-VDN":
        return OMAPL(replace(cfg, mixer="vdn"), device)
    if method == "SL-MARL":
        return SLMARL(cfg, reward_updates=n_updates // 2, device=device)
    if method == "O-MAPL two-layer":
        return OMAPL(replace(cfg, mixer="two_layer"), device)
    return OMAPL(cfg, device)


def train(
    agent: Any,
    data: GridData,
    n_updates: int,
    batch_size: int,
    rng: np.random.Generator,
    fraction: float = 1.0,
    callback: Callable[[int, Any], None] | None = None,
    every: int = 0,
) -> list[dict[str, float]]:
    """``n_updates`` updates on minibatches of ``data`` (first ``fraction`` of its pairs);
    ``callback(step, agent)`` every ``every`` updates (0: never). Returns the loss records.

    Raises:
        TypeError: ``agent`` without ``update``/``device`` (not a learner of :func:`make_agent`),
            ``data`` not :class:`GridData`, ``rng`` not a Generator, ``callback`` not callable.
        ValueError: ``n_updates < 0``, ``batch_size < 1``, ``fraction`` outside (0, 1], ``every < 0``."""
    if not (callable(getattr(agent, "update", None)) and hasattr(agent, "device")):
        raise TypeError(
            f"agent must be a learner of make_agent (with update and device), got {type(agent).__name__}"
        )
    if not isinstance(data, GridData):
        raise TypeError(
            f"data must be GridData (make_grid_data), got {type(data).__name__}"
        )
    if callback is not None and not callable(callback):
        raise TypeError(
            f"callback must be callable or None, got {type(callback).__name__}"
        )
    every = check_int(every, "every", low=0)
    rng = check_rng(rng)
    n_updates = check_int(n_updates, "n_updates", low=0)
    batch_size = check_int(batch_size, "batch_size", low=1)
    fraction = check_real(fraction, "fraction", low=0.0, low_open=True, high=1.0)
    hist = []
    for k in range(n_updates):
        hist.append(
            agent.update(data.sample(rng, batch_size, fraction).to(agent.device))
        )
        if callback is not None and every and (k + 1) % every == 0:
            callback(k + 1, agent)
    return hist


def evaluate_grid(
    agent: Any, env_sizes: CoopGridEnv, n_episodes: int, rng: np.random.Generator
) -> dict[str, float]:
    """Greedy decentralised roll-outs: success rate and mean team return over ``n_episodes`` games.

    Raises:
        TypeError: ``env_sizes`` not a :class:`CoopGridEnv`, ``agent`` without ``act``, ``rng`` not
            a Generator. ValueError: ``n_episodes < 1`` or more games than memory holds."""
    if not isinstance(env_sizes, CoopGridEnv):
        raise TypeError(
            f"env_sizes must be a CoopGridEnv, got {type(env_sizes).__name__}"
        )
    if not callable(getattr(agent, "act", None)):
        raise TypeError(f"agent must have an act method, got {type(agent).__name__}")
    rng = check_rng(rng)
    env = CoopGridEnv(
        check_int(n_episodes, "n_episodes", low=1),
        env_sizes.size,
        env_sizes.n_agents,
        env_sizes.n_landmarks,
        env_sizes.horizon,
    )
    obs, _, avail = env.reset(rng)
    ret = np.zeros(env.n_envs)
    cov = np.zeros(env.n_envs, dtype=bool)
    for _ in range(env.horizon):
        obs, _, avail, r, _, cov = env.step(agent.act(obs, avail, True))
        ret += r
    return {"success": float(cov.mean()), "return": float(ret.mean())}


def evaluate_mpe(
    agent: Any, adapter: MPESpreadAdapter, n_episodes: int, rng: np.random.Generator
) -> dict[str, float]:
    """Greedy roll-outs in simple_spread: mean team return and our success rate (landmarks within 0.1).

    Raises:
        TypeError: ``adapter`` not an :class:`MPESpreadAdapter`, ``rng`` not a Generator.
        ValueError: ``n_episodes < 1``."""
    if not isinstance(adapter, MPESpreadAdapter):
        raise TypeError(
            f"adapter must be an MPESpreadAdapter, got {type(adapter).__name__}"
        )
    rng = check_rng(rng)
    rets, succ = [], []
    N = adapter.n_agents
    for _ in range(check_int(n_episodes, "n_episodes", low=1)):
        o, _ = adapter.reset(int(rng.integers(0, 2**31 - 1)))
        total, done = 0.0, False
        while not done:
            last = o
            o, _, r, done = adapter.step(agent.act(o[None], None, True)[0])
            total += r
        rel = last[:, 4 : 4 + 2 * N].reshape(N, N, 2)
        succ.append(bool((np.linalg.norm(rel, axis=-1).min(axis=0) < 0.1).all()))
        rets.append(total)
    return {"success": float(np.mean(succ)), "return": float(np.mean(rets))}


def _self_pairs(pool: Trajectories) -> PairBatch:
    idx = np.arange(len(pool))
    return pair_batch(
        pool, PreferencePairs(idx, idx, np.zeros(len(pool), dtype=np.int64)), idx
    )


def reward_spearman(agent: Any, pool: Trajectories) -> float:
    """Spearman correlation of ``sum_t r_hat_t`` with the true return over ``pool``'s trajectories.

    Raises:
        TypeError: ``pool`` not Trajectories, ``agent`` without ``segment_returns`` (BC learns no reward).
        ValueError: fewer than 2 trajectories."""
    if not isinstance(pool, Trajectories):
        raise TypeError(f"pool must be Trajectories, got {type(pool).__name__}")
    if not callable(getattr(agent, "segment_returns", None)):
        raise TypeError(
            f"agent must learn a reward (segment_returns), got {type(agent).__name__}"
        )
    if len(pool) < 2:
        raise ValueError(
            f"pool must hold at least 2 trajectories for a correlation, got {len(pool)}"
        )
    scores = agent.segment_returns(_self_pairs(pool).to(agent.device))[0].cpu().numpy()
    return float(stats.spearmanr(scores, pool.returns).statistic)


def preference_accuracy(
    agent: Any, pool: Trajectories, pairs: PreferencePairs
) -> float:
    """Fraction of ``pairs`` whose label the agent's segment scores reproduce.

    Raises:
        TypeError: ``agent`` without ``segment_returns``, ``pool``/``pairs`` of the wrong kind.
        ValueError: no pairs, or pairs that index past ``pool``."""
    if not callable(getattr(agent, "segment_returns", None)):
        raise TypeError(
            f"agent must learn a reward (segment_returns), got {type(agent).__name__}"
        )
    if not isinstance(pairs, PreferencePairs):
        raise TypeError(f"pairs must be PreferencePairs, got {type(pairs).__name__}")
    if len(pairs) == 0:
        raise ValueError("pairs must hold at least one pair")
    seg = (
        agent.segment_returns(
            pair_batch(pool, pairs, np.arange(len(pairs))).to(agent.device)
        )
        .cpu()
        .numpy()
    )
    return float(((seg[0] > seg[1]).astype(np.int64) == pairs.y).mean())


# --------------------------------------------------------------------------------------
# Theory checks (Prop. 4.1 / 4.2, the extreme-V minimiser)
# --------------------------------------------------------------------------------------


def bt_hessian_eigs(
    q: np.ndarray,
    pairs: np.ndarray,
    y: np.ndarray,
    mixer: str,
    w: np.ndarray,
    W1: np.ndarray | None = None,
    b1: np.ndarray | None = None,
) -> np.ndarray:
    """Eigenvalues of the Hessian of the BT loss in the local Q-tables of a one-step game, mixer fixed.

    Two agents with ``A`` actions each; ``q (2, A)``; ``pairs (P, 2, 2)`` joint actions of the two
    segments; ``y (P,)``. ``mixer="linear"``: ``Q_tot = w_1 q_1(a_1) + w_2 q_2(a_2)`` (``w >= 0``);
    ``"two_layer"``: ``Q_tot = w^T elu(W1^T q(a) + b1)`` (``W1 (2, K) >= 0``, ``w (K,) >= 0``).

    Returns:
        the ``2 A`` eigenvalues in increasing order (float64).

    Raises:
        ValueError: shapes (named), no pairs, an action outside ``0..A-1``, ``y`` outside {0, 1},
            negative weights, ``A > 500`` (the dense Hessian is refused). TypeError: wrong kinds.
    """
    q = check_array(q, "q", ndim=2, dtype=np.float64)
    if q.shape[0] != 2:
        raise ValueError(f"q must have shape (2, A), got {q.shape}")
    A = q.shape[1]
    if not 1 <= A <= 500:
        raise ValueError(
            f"q must have shape (2, A) with 1 <= A <= 500 (a dense (2A, 2A) Hessian), got {q.shape}"
        )
    pairs = check_array(
        pairs, "pairs", kind="int", ndim=3, low=0, high=A - 1, min_size=1
    )
    if pairs.shape[1:] != (2, 2):
        raise ValueError(f"pairs must have shape (P, 2, 2), got {pairs.shape}")
    y = check_array(y, "y", kind="number", shape=(pairs.shape[0],)).astype(np.float64)
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must hold only 0 and 1")
    mixer = check_choice(mixer, "mixer", ("linear", "two_layer"))
    w = torch.as_tensor(check_array(w, "w", ndim=1, low=0.0, dtype=np.float64))
    if mixer == "two_layer":
        W1t = torch.as_tensor(
            check_array(W1, "W1", shape=(2, w.shape[0]), low=0.0, dtype=np.float64)
        )
        b1t = torch.as_tensor(
            check_array(b1, "b1", shape=(w.shape[0],), dtype=np.float64)
        )
    elif w.shape[0] != 2:
        raise ValueError(
            f"w must have shape (2,) for the linear mixer, got {tuple(w.shape)}"
        )
    pa = torch.as_tensor(pairs)
    yt = torch.as_tensor(y)

    def loss(flat: torch.Tensor) -> torch.Tensor:
        qt = flat.reshape(2, A)
        # (P, 2 segments, 2 agents)
        loc = torch.stack([qt[0][pa[:, :, 0]], qt[1][pa[:, :, 1]]], -1)
        if mixer == "linear":
            tot = (loc * w).sum(-1)
        else:
            tot = (torch.nn.functional.elu(loc @ W1t + b1t) * w).sum(-1)
        return torch.nn.functional.binary_cross_entropy_with_logits(
            tot[:, 0] - tot[:, 1], yt
        )

    H = torch.autograd.functional.hessian(loss, torch.as_tensor(q.reshape(-1)))
    return np.linalg.eigvalsh(H.numpy())


def hessian_search(
    rng: np.random.Generator,
    n_points: int = 200,
    A: int = 3,
    P: int = 8,
    K: int = 4,
    scale: float = 3.0,
) -> dict[str, float]:
    """Random one-step games and points: the smallest Hessian eigenvalue seen for each mixer.

    Args: rng; n_points >= 1 random games; A (1 to 500) actions per agent; P >= 1 pairs; K >= 1
    hidden units of the two-layer mixer; scale > 0 of the random Q-tables.

    Raises:
        TypeError: ``rng`` not a Generator. ValueError: a size or ``scale`` out of range (named)."""
    rng = check_rng(rng)
    A = check_int(A, "A", low=1, high=500)
    P = check_int(P, "P", low=1, high=10**6)
    K = check_int(K, "K", low=1, high=10**4)
    scale = check_real(scale, "scale", low=0.0, low_open=True)
    out = {"linear": np.inf, "two_layer": np.inf}
    for _ in range(check_int(n_points, "n_points", low=1)):
        q = scale * rng.standard_normal((2, A))
        pairs = rng.integers(0, A, (P, 2, 2))
        y = rng.integers(0, 2, P)
        out["linear"] = min(
            out["linear"], bt_hessian_eigs(q, pairs, y, "linear", rng.random(2))[0]
        )
        out["two_layer"] = min(
            out["two_layer"],
            bt_hessian_eigs(
                q,
                pairs,
                y,
                "two_layer",
                rng.random(K),
                rng.random((2, K)),
                rng.standard_normal(K),
            )[0],
        )
    return {k: float(v) for k, v in out.items()}


def extreme_v_minimiser(q: np.ndarray, beta: float) -> dict[str, float]:
    """Minimise the extreme-V loss over a scalar ``v`` for samples ``q`` (no clipping reached) and
    return it beside the closed form ``beta log mean exp(q / beta)``."""
    q = check_array(q, "q", ndim=1, dtype=np.float64, min_size=1)
    beta = check_real(beta, "beta", low=0.0, low_open=True)
    qt = torch.as_tensor(q)
    ones = torch.ones_like(qt)
    big = 1e9

    def J(v: float) -> float:
        return float(
            _extreme_v(qt, torch.full_like(qt, v), ones, beta, big, ones, False)
        )

    res = optimize.minimize_scalar(
        J, bracket=(q.min() - beta, q.max() + beta), tol=1e-12
    )
    return {
        "argmin": float(res.x),
        "closed_form": float(beta * (logsumexp(q / beta) - np.log(q.size))),
    }


def run_methods(
    data: GridData,
    methods: tuple[str, ...],
    n_updates: int,
    batch_size: int,
    hidden: int,
    rng: np.random.Generator,
    n_eval: int,
    eval_every: int,
    fraction: float = 1.0,
    device: str = "cpu",
    adapter: MPESpreadAdapter | None = None,
    **overrides: Any,
) -> list[dict[str, Any]]:
    """Train each of ``methods`` for ``n_updates`` on ``data`` and evaluate every ``eval_every`` updates.

    Each method's nets are initialised from a torch seed drawn from ``rng`` and its minibatches from
    a child generator, so the runs are independent and reproducible. Evaluation: ``n_eval`` greedy
    episodes (CoopGrid, or simple_spread when ``adapter`` is given), the held-out Spearman
    correlation of ``sum_t r_hat`` with the true return and the held-out preference accuracy
    (``nan`` for BC, which learns no reward).

    Returns:
        one record per (method, evaluation step): ``method, step, success, return, spearman, accuracy``.

    Raises:
        TypeError: ``methods`` a string or empty, ``data`` not :class:`GridData`, ``rng`` not a
            Generator. ValueError: an unknown method, a size out of range (named).
    """
    if (
        isinstance(methods, str)
        or not isinstance(methods, (tuple, list))
        or not methods
    ):
        raise TypeError(
            f"methods must be a non-empty tuple of method names (e.g. ('O-MAPL',)), got {methods!r}"
        )
    for m in methods:
        check_choice(m, "methods", (*METHODS, "O-MAPL two-layer"))
    if not isinstance(data, GridData):
        raise TypeError(
            f"data must be GridData (make_grid_data), got {type(data).__name__}"
        )
    rng = check_rng(rng)
    eval_every = check_int(eval_every, "eval_every", low=1)
    n_eval = check_int(n_eval, "n_eval", low=1)
    rows: list[dict[str, Any]] = []
    for m in methods:
        torch.manual_seed(int(rng.integers(0, 2**31 - 1)))
        agent = make_agent(m, data, hidden, n_updates, device, **overrides)
        g_train, g_eval = rng.spawn(2)

        def record(step: int, a: Any, m: str = m) -> None:
            ev = (
                evaluate_grid(
                    a, data.env, n_eval, np.random.default_rng(g_eval.integers(2**31))
                )
                if adapter is None
                else evaluate_mpe(
                    a, adapter, n_eval, np.random.default_rng(g_eval.integers(2**31))
                )
            )
            learns_reward = m != "BC"
            rows.append(
                {
                    "method": m,
                    "step": step,
                    **ev,
                    "spearman": reward_spearman(a, data.test_pool)
                    if learns_reward
                    else float("nan"),
                    "accuracy": preference_accuracy(a, data.test_pool, data.test_pairs)
                    if learns_reward
                    else float("nan"),
                }
            )

        train(agent, data, n_updates, batch_size, g_train, fraction, record, eval_every)
    return rows
