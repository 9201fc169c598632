"""The loops the chapter's cells call: one run, a comparison over replicates, and the batched
OFU-MNL++ over many replicates in lockstep (the ``gpu`` profile; the kernels' dispatchers)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from icml25.checks import (
    check_budget,
    check_choice,
    check_int,
    check_positive,
    check_rng,
)
from icml25.kernels import mnl_bandits

from .baselines import TSMNL, UCBMNL, OFUMNLPlus
from .data import MNLBanditEnv, _round_cost
from .defaults import DEFAULTS
from .method import (
    OFUM2NL,
    OFUMNLPlusPlus,
    _project,
    ofu_mnl_pp_beta,
    ofu_mnl_pp_constants,
)
from .model import _finite_result, _variance

__all__ = [
    "ALGORITHMS",
    "run_bandit",
    "make_algorithm",
    "compare_algorithms",
    "run_ofu_mnl_pp_batched",
]

ALGORITHMS: tuple[str, ...] = ("OFU-MNL++", "OFU-M2NL", "OFU-MNL+", "UCB-MNL", "TS-MNL")

_CLASSES = {
    "OFU-MNL++": OFUMNLPlusPlus,
    "OFU-M2NL": OFUM2NL,
    "OFU-MNL+": OFUMNLPlus,
    "UCB-MNL": UCBMNL,
    "TS-MNL": TSMNL,
}

#: the algorithms that refit on their whole history (per-round work grows with t)
_HISTORY_BASED = ("OFU-M2NL", "UCB-MNL", "TS-MNL")


def _run_cost(
    N: int, d: int, K: int, T: int, history: bool, refit_every: int = 1
) -> tuple[float, float]:
    """Peak bytes and operations of one T-round run (estimates for :func:`check_budget`).

    Every algorithm: four (T,) float64 records, one environment round and, per round, the
    optimism (N d^2), the OMD step (d^3) and the oracle (~100 N). A history-based one also keeps
    a padded (T, K, d + 2) history (doubling: up to 3x) and refits on it every ``refit_every``
    rounds: sum_t t K d^2 x ~100 (Newton or L-BFGS-B iterations) ~ 50 T^2 K d^2 / refit_every.
    """
    round_bytes, round_ops = _round_cost(N, d)
    n_bytes = 32.0 * T + round_bytes
    n_ops = float(T) * (round_ops + N * d * d + d**3 + 100.0 * N)
    if history:
        n_bytes += 24.0 * T * K * (d + 2)
        n_ops += 50.0 * float(T) * T * K * d * d / refit_every
    return n_bytes, n_ops


def run_bandit(algorithm: Any, env: MNLBanditEnv, T: int) -> dict[str, np.ndarray]:
    """Run ``algorithm`` for T rounds on ``env`` (after ``env.reset()``).

    Args:
        algorithm: object with ``select(X, r) -> S`` and ``update(S, y)``.
        env: the environment (reset first, so all algorithms see the same contexts).
        T: horizon >= 1.

    Returns:
        dict with (T,) float64 arrays: ``regret`` (cumulative expected regret, revenue units),
        ``time`` (CPU seconds of select + update per round, ``time.process_time``), ``sigma2``
        (variance of the reward of the offered assortment under w*), ``revenue`` (expected
        revenue per round).

    Raises:
        ValueError / TypeError: T not a positive integer; TypeError: algorithm without
            select/update, env not an :class:`MNLBanditEnv`.
        TooLargeError: the records and the work of T rounds cannot fit (see :func:`_run_cost`).
    """
    T = check_int(T, "T", low=1)
    if not (
        callable(getattr(algorithm, "select", None))
        and callable(getattr(algorithm, "update", None))
    ):
        raise TypeError(
            f"algorithm must have select(X, r) and update(S, y) methods, got {type(algorithm).__name__}"
        )
    if not isinstance(env, MNLBanditEnv):
        raise TypeError(f"env must be an MNLBanditEnv, got {type(env).__name__}")
    refit_every = getattr(algorithm, "refit_every", 1)
    n_bytes, n_ops = _run_cost(
        env.N,
        env.d,
        env.K,
        T,
        history=hasattr(algorithm, "hist"),
        refit_every=refit_every
        if isinstance(refit_every, int) and refit_every >= 1
        else 1,
    )
    check_budget(f"run_bandit(T={T})", n_bytes=n_bytes, n_operations=n_ops)
    with _single_thread_blas():
        return _run_bandit(algorithm, env, T)


class _single_thread_blas:
    """Limit BLAS to one thread: on tiny d x d problems OpenBLAS threads only add overhead
    (L-BFGS-B ran ~20x slower with two threads on the 2-core machine)."""

    def __enter__(self):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - threadpoolctl ships with scipy's stack
            self._ctx = None
            return self
        self._ctx = threadpool_limits(limits=1, user_api="blas")
        return self

    def __exit__(self, *exc):
        if self._ctx is not None:
            self._ctx.restore_original_limits()
        return False


# CPU time of this process (all threads), not wall time: on a shared machine wall time
# also counts the time the process waits for a core, which has nothing
# to do with the algorithm.
_clock = time.process_time


def _run_bandit(algorithm: Any, env: MNLBanditEnv, T: int) -> dict[str, np.ndarray]:
    """Reg(T) = sum_t R_t(S_t*, w*) - R_t(S_t, w*), with per-round CPU time and sigma_t^2."""
    env.reset()
    inst = np.zeros(T)
    times = np.zeros(T)
    sigma2 = np.zeros(T)
    rev = np.zeros(T)
    for t in range(T):
        X, r = env.contexts()
        t0 = _clock()
        S = algorithm.select(X, r)
        t1 = _clock()
        y, rev[t] = env.step(S)
        t2 = _clock()
        algorithm.update(S, y)
        times[t] = (t1 - t0) + (_clock() - t2)
        inst[t] = env.opt_revenue() - rev[t]
        sigma2[t] = _variance(
            env.true_weights(), r, np.asarray(S, dtype=np.int64), env.v0
        )
    return {"regret": np.cumsum(inst), "time": times, "sigma2": sigma2, "revenue": rev}


def make_algorithm(
    name: str,
    N: int,
    K: int,
    d: int,
    v0: float = DEFAULTS.v0,
    B: float = DEFAULTS.B,
    rng: np.random.Generator | None = None,
    **kwargs: Any,
) -> Any:
    """Build one of :data:`ALGORITHMS` by name (extra keywords go to its constructor).

    Args:
        name: one of :data:`ALGORITHMS`.
        N, K, d, v0, B: as the algorithms' constructors.
        rng: ``numpy.random.Generator`` for TS-MNL's samples (required for TS-MNL; ignored by the
            others, which accept None).
        **kwargs: further constructor keywords.

    Returns:
        The bandit object (``select(X, r)``, ``update(S, y)``).

    Raises:
        TypeError: name not a string; rng not a Generator or None.
        ValueError: unknown name (plus the constructor's own checks).
    """
    if not isinstance(name, str):
        raise TypeError(
            f"name must be a string, one of {ALGORITHMS}; got {type(name).__name__}"
        )
    rng = check_rng(rng, "rng", allow_none=True)
    if name not in _CLASSES:
        raise ValueError(f"unknown algorithm {name!r}; known: {ALGORITHMS}")
    if name == "TS-MNL":
        kwargs = {**kwargs, "rng": rng}
    return _CLASSES[name](N, K, d, B=B, v0=v0, **kwargs)


def compare_algorithms(
    names: list[str] | tuple[str, ...],
    *,
    N: int,
    d: int,
    K: int,
    T: int,
    v0: float = DEFAULTS.v0,
    reward: str = "uniform",
    context: str = "gaussian",
    rng: np.random.Generator,
    n_reps: int = 3,
    options: dict[str, dict] | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """Run every named algorithm on ``n_reps`` environments drawn from ``rng``.

    Args:
        names: list/tuple of names from :data:`ALGORITHMS` (not a single string).
        N, d, K, T, v0, reward, context: as :class:`MNLBanditEnv` and :func:`run_bandit`.
        rng: ``numpy.random.Generator``; one child per replicate is spawned from it.
        n_reps: number of replicates (environments) >= 1.
        options: name -> extra constructor keywords.

    Returns:
        name -> {"regret", "time", "sigma2"}: (n_reps, T) arrays; replicate i is shared by
        all algorithms (same w*, contexts and choice noise).

    Raises:
        TypeError: names a string or not a list/tuple of strings; rng not a Generator; options
            not a dict; non-integer sizes.
        ValueError: empty names, unknown algorithm name, n_reps < 1, bad sizes (K > N, ...).
        TooLargeError: n_reps x names x T rounds cannot fit in memory or time (checked before
            any replicate is drawn).
    """
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise TypeError(
            f"names must be a list or tuple of algorithm names (e.g. [{names!r}] for one), "
            f"got {type(names).__name__}"
        )
    if len(names) == 0:
        raise ValueError(f"names must not be empty; known: {ALGORITHMS}")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"names must contain strings, got {type(name).__name__}")
        if name not in ALGORITHMS:
            raise ValueError(
                f"names contains unknown algorithm {name!r}; known: {ALGORITHMS}"
            )
    rng = check_rng(rng, "rng")
    n_reps = check_int(n_reps, "n_reps", low=1)
    T = check_int(T, "T", low=1)
    N, d = check_int(N, "N", low=1), check_int(d, "d", low=1)
    K = check_int(K, "K", low=1, high=N)
    if options is not None and not isinstance(options, dict):
        raise TypeError(
            f"options must be a dict name -> keywords, got {type(options).__name__}"
        )
    options = options or {}
    n_bytes, n_ops = 0.0, 0.0
    for name in names:
        opt = options.get(name, {})
        every = opt.get("refit_every", 1) if isinstance(opt, dict) else 1
        b, o = _run_cost(
            N,
            d,
            K,
            T,
            history=name in _HISTORY_BASED,
            refit_every=every if isinstance(every, int) and every >= 1 else 1,
        )
        n_bytes, n_ops = max(n_bytes, b), n_ops + o
    # the records of every run are kept (3 (T,) arrays, twice while stacked)
    check_budget(
        f"compare_algorithms(n_reps={n_reps}, T={T})",
        n_bytes=n_bytes + 48.0 * n_reps * len(names) * T,
        n_operations=n_reps * n_ops,
    )
    env_rngs = rng.spawn(n_reps)
    out: dict[str, dict[str, list]] = {
        n: {"regret": [], "time": [], "sigma2": []} for n in names
    }
    for i in range(n_reps):
        env = MNLBanditEnv(N, d, K, v0, reward, context, rng=env_rngs[i])
        alg_rng = np.random.default_rng(env_rngs[i].integers(2**63))
        for name in names:
            alg = make_algorithm(
                name, N, K, d, v0=v0, rng=alg_rng, **options.get(name, {})
            )
            res = run_bandit(alg, env, T)
            for key in out[name]:
                out[name][key].append(res[key])
    return {n: {k: np.asarray(v) for k, v in res.items()} for n, res in out.items()}


# --------------------------------------------------------------------------------------
# Batched OFU-MNL++ over n_reps replicate runs (the gpu profile; uses the kernels)
# --------------------------------------------------------------------------------------


def _batched_grad_hess(
    w: np.ndarray, X: np.ndarray, mask: np.ndarray, y: np.ndarray, v0: float
) -> tuple[np.ndarray, np.ndarray]:
    """g_t and G_t of every replicate, the offered items marked by ``mask`` (R, N) (Sec. 2)."""
    e = mask * np.exp(np.einsum("rnd,rd->rn", X, w))
    p = e / (v0 + e.sum(axis=1))[:, None]
    px = np.einsum("rn,rnd->rd", p, X)
    G = np.einsum("rn,rnd,rne->rde", p, X, X) - px[:, :, None] * px[:, None, :]
    return np.einsum("rn,rnd->rd", p - y, X), G


def run_ofu_mnl_pp_batched(
    n_reps: int,
    N: int,
    d: int,
    K: int,
    T: int,
    v0: float = DEFAULTS.v0,
    reward: str = "uniform",
    *,
    rng: np.random.Generator,
    beta_scale: float = 1.0,
    B: float = DEFAULTS.B,
) -> dict[str, np.ndarray]:
    """``n_reps`` independent OFU-MNL++ runs in lockstep, with the batched optimism and oracle kernels.

    Same algorithm as :class:`OFUMNLPlusPlus` (Gaussian contexts clipped to 1/sqrt(d),
    w* ~ U[-1/sqrt(d), 1/sqrt(d)]^d per replicate), vectorised over replicates. The arrays are
    NumPy; :mod:`icml25.kernels.mnl_bandits`'s dispatchers run the CUDA kernels when a GPU is
    usable and their references otherwise.

    Args:
        n_reps: replicates >= 1; N, d, K, T: items, dimension, assortment size (1 <= K <= N), horizon.
        v0: outside-option weight > 0; reward: ``"uniform"`` | ``"nonuniform"``.
        rng: ``numpy.random.Generator`` for w*, the contexts, the revenues and the choices.
        beta_scale: radius multiplier > 0; B: norm bound > 0.

    Returns:
        dict of NumPy arrays: ``regret`` (n_reps, T) cumulative, ``sigma2`` (n_reps, T),
        ``time`` (T,) wall seconds per round for all replicates together.

    Raises:
        ValueError: bad sizes (K > N, ...), bad reward, v0 <= 0, non-positive beta_scale or B.
        TypeError: non-integer sizes; rng not a Generator.
        TooLargeError: the (n_reps, T) records, one round's (n_reps, N, d) arrays or the
            T n_reps (N d^2 + d^3 + 100 N) operations cannot fit (checked before any draw).
        numpy.linalg.LinAlgError: a Newton solve or an inverse Hessian was not finite.
    """
    R, N, d = (
        check_int(n_reps, "n_reps", low=1),
        check_int(N, "N", low=1),
        check_int(d, "d", low=1),
    )
    K, T = check_int(K, "K", low=1, high=N), check_int(T, "T", low=1)
    check_budget(
        f"run_ofu_mnl_pp_batched(n_reps={R}, T={T}, N={N})",
        n_bytes=8.0 * (2.0 * R * T + T + R * N * (3.0 * d + 15.0) + 8.0 * R * d * d),
        n_operations=float(T)
        * R
        * (4.0 * N * d * d + 4.0 * d**3 + 100.0 * N + 60.0 * d),
    )
    v0 = check_positive(v0, "v0")
    reward = check_choice(reward, "reward", ("uniform", "nonuniform"))
    g = check_rng(rng, "rng")
    beta_scale, B = check_positive(beta_scale, "beta_scale"), check_positive(B, "B")
    s = 1.0 / math.sqrt(d)
    w_star = s * (2.0 * g.random((R, d)) - 1.0)
    eta, lam = ofu_mnl_pp_constants(B)
    w = np.zeros((R, d))
    H = np.broadcast_to(lam * np.eye(d), (R, d, d)).copy()
    H_inv = np.broadcast_to(np.eye(d) / lam, (R, d, d)).copy()
    regret = np.zeros((R, T))
    sigma2 = np.zeros((R, T))
    times = np.zeros(T)
    v0_arr = np.full(R, v0)
    rows = np.arange(R)
    for t in range(T):
        X = np.clip(g.standard_normal((R, N, d)), -s, s)
        r = np.ones((R, N)) if reward == "uniform" else g.random((R, N))
        t0 = time.perf_counter()
        beta = np.full(R, beta_scale * ofu_mnl_pp_beta(t + 1, d, B))
        alpha = mnl_bandits.optimistic_utilities(X, w, H_inv, beta)
        alpha_max = alpha.max(axis=1, keepdims=True)
        mask, _ = mnl_bandits.assortment_bisection(
            np.exp(alpha - alpha_max), r, K, v0_arr * np.exp(-alpha_max[:, 0])
        )
        mask = mask.astype(np.float64)
        # customers' choices under w* (outside option when the
        # uniform draw exceeds sum p_i)
        v_true = np.exp(np.einsum("rnd,rd->rn", X, w_star))
        den_true = v0 + (mask * v_true).sum(axis=1)
        p_true = mask * v_true / den_true[:, None]
        u = g.random((R, 1))
        cdf = np.cumsum(p_true, axis=1)
        chosen = (cdf > u).argmax(axis=1)
        bought = cdf[:, -1] > u[:, 0]
        y = np.zeros((R, N))
        y[rows, chosen] = bought.astype(np.float64)
        # OMD step (Eq. 5), batched; each solve checked before it is used
        gvec, G = _batched_grad_hess(w, X, mask, y, v0)
        H_tilde = H + eta * G
        step = _finite_result(
            np.linalg.solve(H_tilde, gvec[..., None])[..., 0],
            "the Newton steps H~^{-1} g",
        )
        w = _project(w - eta * step, H_tilde, B, 60)
        _, G_new = _batched_grad_hess(w, X, mask, y, v0)
        H = H + G_new
        H_inv = _finite_result(np.linalg.inv(H), "the inverse Hessians H^{-1}")
        times[t] = time.perf_counter() - t0
        # bookkeeping (not timed): regret and variance under w*
        _, opt_rev = mnl_bandits.assortment_bisection(v_true, r, K, v0_arr)
        rev = (p_true * r).sum(axis=1)
        regret[:, t] = opt_rev - rev
        sigma2[:, t] = np.maximum((p_true * r * r).sum(axis=1) - rev * rev, 0.0)
    return {"regret": np.cumsum(regret, axis=1), "sigma2": sigma2, "time": times}
