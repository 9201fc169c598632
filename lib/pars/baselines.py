"""Baselines from d3rlpy 2.8.1 (TD3+BC, IQL, CQL, ReBRAC, Cal-QL) trained on our own data.

d3rlpy is used as a well-kept reference implementation; no dataset is downloaded: our
:class:`icml25.pars.ReplayBuffer` is turned into a d3rlpy ``MDPDataset`` (episodes end at the
buffer's terminals or time-outs). Our own TD3+BC, TD3+BC+LN and RS-LN are flags of
:class:`icml25.pars.PARS` (``method.TD3BC_FLAGS``).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

import numpy as np

from icml25.checks import check_bool, check_choice, check_int, check_real, check_rng

from .data import ReplayBuffer

__all__ = [
    "D3RLPY_ALGOS",
    "to_mdp_dataset",
    "d3rlpy_algo",
    "d3rlpy_train",
    "d3rlpy_policy",
    "d3rlpy_q_values",
]

#: the d3rlpy algorithms the chapter can run
D3RLPY_ALGOS = ("td3plusbc", "iql", "cql", "rebrac", "calql")


def _import_d3rlpy() -> Any:
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        import d3rlpy
    return d3rlpy


def to_mdp_dataset(buf: ReplayBuffer) -> Any:
    """A d3rlpy ``MDPDataset`` of the buffer (observations, actions, rewards, terminals, timeouts).

    d3rlpy cuts episodes at ``terminals | timeouts``; CalQL's Monte-Carlo returns are computed
    from those episodes by d3rlpy itself.
    """
    if not isinstance(buf, ReplayBuffer):
        raise TypeError(f"buf must be a ReplayBuffer, got {type(buf).__name__}")
    d3rlpy = _import_d3rlpy()
    d = buf.data
    tout = d["timeouts"].copy()
    if d["terminals"][-1] == 0 and tout[-1] == 0:
        tout[-1] = 1.0
    return d3rlpy.dataset.MDPDataset(
        observations=d["observations"],
        actions=d["actions"],
        rewards=d["rewards"],
        terminals=d["terminals"],
        timeouts=tout,
        action_space=d3rlpy.constants.ActionSpace.CONTINUOUS,
    )


def d3rlpy_algo(
    name: str,
    device: str = "cpu",
    layer_norm: bool = False,
    reward_scale: float | None = None,
    hidden: tuple[int, ...] = (256, 256),
    batch_size: int = 256,
    gamma: float = 0.99,
) -> Any:
    """A d3rlpy algorithm, built (not trained), with the library's defaults except the arguments.

    Args:
        name: one of :data:`D3RLPY_ALGOS`.
        device: ``"cpu"`` or ``"cuda"`` (d3rlpy's ``"cpu:0"`` / ``"cuda:0"``).
        layer_norm: a ``VectorEncoderFactory(use_layer_norm=True)`` critic (the RS-LN check).
        reward_scale: ``MultiplyRewardScaler(reward_scale)``, or none.
        hidden: encoder widths (actor and critic); batch_size, gamma: as d3rlpy's configs.

    Raises:
        ValueError naming the argument.
    """
    name = check_choice(name, "name", D3RLPY_ALGOS)
    device = check_choice(device, "device", ("cpu", "cuda"))
    layer_norm = check_bool(layer_norm, "layer_norm")
    batch_size = check_int(batch_size, "batch_size", low=1)
    gamma = check_real(gamma, "gamma", low=0.0, high=1.0)
    d3rlpy = _import_d3rlpy()
    enc = d3rlpy.models.encoders.VectorEncoderFactory(hidden_units=list(hidden))
    critic_enc = d3rlpy.models.encoders.VectorEncoderFactory(
        hidden_units=list(hidden), use_layer_norm=layer_norm
    )
    kw: dict[str, Any] = dict(
        batch_size=batch_size,
        gamma=gamma,
        actor_encoder_factory=enc,
        critic_encoder_factory=critic_enc,
    )
    if reward_scale is not None:
        kw["reward_scaler"] = d3rlpy.preprocessing.MultiplyRewardScaler(
            check_real(reward_scale, "reward_scale", low=0.0, low_open=True)
        )
    if name == "iql":
        kw["value_encoder_factory"] = critic_enc
    config = {
        "td3plusbc": d3rlpy.algos.TD3PlusBCConfig,
        "iql": d3rlpy.algos.IQLConfig,
        "cql": d3rlpy.algos.CQLConfig,
        "rebrac": d3rlpy.algos.ReBRACConfig,
        "calql": d3rlpy.algos.CalQLConfig,
    }[name]
    return config(**kw).create(device="cuda:0" if device == "cuda" else "cpu:0")


def d3rlpy_train(
    name: str,
    buf: ReplayBuffer,
    n_steps: int,
    rng: np.random.Generator,
    device: str = "cpu",
    **algo_kw: Any,
) -> Any:
    """Train a d3rlpy algorithm offline on ``buf`` for ``n_steps`` updates (no logs written, no progress bar).

    d3rlpy draws minibatches from NumPy's and torch's global generators: both are seeded here from
    one integer drawn from ``rng`` (``d3rlpy.seed``).

    Returns:
        the trained algorithm.
    """
    rng = check_rng(rng)
    n_steps = check_int(n_steps, "n_steps", low=1)
    d3rlpy = _import_d3rlpy()
    d3rlpy.seed(int(rng.integers(0, 2**31 - 1)))
    algo = d3rlpy_algo(name, device=device, **algo_kw)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        algo.fit(
            to_mdp_dataset(buf),
            n_steps=n_steps,
            n_steps_per_epoch=n_steps,
            show_progress=False,
            logger_adapter=d3rlpy.logging.NoopAdapterFactory(),
            save_interval=10**9,
        )
    return algo


def d3rlpy_policy(algo: Any) -> Any:
    """``f(obs (N, ds)) -> actions (N, da)``: the algorithm's greedy policy."""
    return lambda obs: algo.predict(np.asarray(obs, dtype=np.float32))


def d3rlpy_q_values(algo: Any, s: Any, a: Any) -> np.ndarray:
    """The algorithm's Q (N,) at states (N, ds) and actions (N, da); infeasible actions allowed.

    Note: a reward scaler makes d3rlpy's Q live on the scaled rewards, as ours does."""
    s = np.asarray(s, dtype=np.float32)
    a = np.asarray(a, dtype=np.float32)
    if s.ndim != 2 or a.ndim != 2 or s.shape[0] != a.shape[0]:
        raise ValueError(
            f"s and a must be (N, ds) and (N, da) with one N, got {s.shape} and {a.shape}"
        )
    return np.asarray(algo.predict_value(s, a), dtype=np.float64)
