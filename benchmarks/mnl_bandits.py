"""Per-round time of each MNL bandit algorithm at t in {100, 1000, 10000} (chapter 11).

The state at round t is built cheaply and honestly: OMD-based methods (OFU-MNL++, OFU-MNL+)
are run for t - 1 rounds on random assortments (their state is (w, H) whatever t is);
history-based methods (OFU-M²NL, UCB-MNL, TS-MNL) get t - 1 random rounds of feedback put
into their history and one fit. Then ``reps`` rounds of select + update are timed.

The random rounds are drawn once (the largest t - 1 of them, on the environment every timing
uses) and every algorithm at every t is brought to round t with the first t - 1 of the same
rounds: drawing them again for each of the 5 algorithms and 3 values of t was about 55 000
environment rounds, a large share of this script's 90 s of a 1910 s ``make bench`` on the shared
2-core machine (target: 10 minutes); now 9 999. The states are built from the same kind of
feedback as before, and the five algorithms now see identical histories.

    .venv/bin/python benchmarks/mnl_bandits.py [--quick]

writes ``benchmarks/results/mnl_bandits.json``.

Against the machine's limit (``_limits``, measured once in this process, one thread): a round is
counted as compute, FLOPs = 2 N d^2 + 2 N d (the utility x^T w and the bonus x^T H^{-1} x of each of
the N items, which every algorithm computes in its select; its fit or update is not counted, so
this is a lower bound), per second over the fp64 BLAS rate: at N = 100, d = 5 the fraction says
how much of a round is Python and call overhead. Baseline ratio: UCB-MNL's round time at the same
t over the algorithm's.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from icml25 import mnl_bandits as mnl
from icml25.common import device_name, gpu_available

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()


def random_feedback(
    env: mnl.MNLBanditEnv, n_rounds: int, rng: np.random.Generator
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_rounds`` rounds of random-assortment feedback ``(X[S], y)`` from a reset ``env``."""
    env.reset()
    out = []
    for _ in range(n_rounds):
        X, r = env.contexts()
        S = np.sort(rng.choice(env.N, env.K, replace=False))
        y, _ = env.step(S)
        out.append((X[S], y))
    return out


def prefill(alg, feedback: list, t: int) -> None:
    """Bring ``alg`` to round t with the first t - 1 rounds of ``feedback``."""
    if len(feedback) < t - 1:
        raise ValueError(f"need {t - 1} rounds of feedback, got {len(feedback)}")
    if isinstance(alg, (mnl.OFUMNLPlus, mnl.OFUMNLPlusPlus)):
        for XS, y in feedback[: t - 1]:
            alg.est.update(XS, y)
        alg.t = t
        return
    for XS, y in feedback[: t - 1]:
        alg.hist.add(XS, y)
        if hasattr(alg, "V"):
            alg.V += XS.T @ XS
    alg.t = t
    if isinstance(alg, mnl.OFUM2NL):
        alg.newton_steps = 20
        alg._refit()
        alg.newton_steps = 3
    else:
        from scipy.optimize import minimize

        alg.V_inv = np.linalg.inv(alg.V)
        X, m, y = alg.hist.arrays()
        alg.w = minimize(
            mnl._batch_nll,
            alg.w,
            args=(X, m, y, alg.v0, alg.lam),
            jac=True,
            method="L-BFGS-B",
        ).x


def time_rounds(alg, env: mnl.MNLBanditEnv, reps: int) -> float:
    """Median CPU seconds (``time.process_time``) of select + update over ``reps`` rounds."""
    times = []
    for i in range(reps + 3):  # 3 warm-up rounds, not recorded
        X, r = env.contexts()
        t0 = time.process_time()
        S = alg.select(X, r)
        t1 = time.process_time()
        y, _ = env.step(S)
        t2 = time.process_time()
        alg.update(S, y)
        if i >= 3:
            times.append((t1 - t0) + (time.process_time() - t2))
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="t in {100, 1000} only, fewer reps"
    )
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "mnl_bandits.json")
    )
    args = parser.parse_args()
    ts = (100, 1000) if args.quick else (100, 1000, 10000)
    reps = 10 if args.quick else 30
    N, d, K = mnl.DEFAULTS.N, mnl.DEFAULTS.d, mnl.DEFAULTS.K
    rng = np.random.default_rng(0)
    results: dict[str, dict[str, float]] = {}
    with mnl._single_thread_blas():
        global LIMITS
        LIMITS = _limits.measure()  # once, under the thread policy of the timings
        print(_limits.describe(LIMITS), flush=True)
        feedback = random_feedback(
            mnl.MNLBanditEnv(N, d, K, 1.0, "uniform", rng=np.random.default_rng(1)),
            max(ts) - 1,
            rng,
        )
        for name in mnl.ALGORITHMS:
            results[name] = {}
            for t in ts:
                env = mnl.MNLBanditEnv(
                    N, d, K, 1.0, "uniform", rng=np.random.default_rng(1)
                )
                alg = mnl.make_algorithm(name, N, K, d, rng=np.random.default_rng(2))
                prefill(alg, feedback, t)
                results[name][str(t)] = 1e3 * time_rounds(alg, env, reps)
                print(
                    f"{name:10s} t={t:6d}: {results[name][str(t)]:.3f} ms/round",
                    flush=True,
                )
    ratios = {
        name: results[name][str(ts[-1])] / results[name][str(ts[0])] for name in results
    }
    flops = 2.0 * N * d * d + 2.0 * N * d
    loops = [
        _limits.compute_bound(
            f"{name} round (select + update)",
            f"t={t}, N={N}, d={d}, K={K}",
            flops,
            results[name][str(t)] / 1e3,
            LIMITS,
            baseline="UCB-MNL round",
            ratio=results["UCB-MNL"][str(t)] / results[name][str(t)],
            counted="2 N d^2 + 2 N d (utilities and bonuses of select)",
        )
        for name in results
        for t in (ts[0], ts[-1])
    ]
    record = {
        "benchmark": "mnl_bandits",
        "what": "median CPU milliseconds (process_time) of one select+update round at round t (N=100, d=5, K=5, uniform rewards)",
        "ms_per_round": results,
        "ratio_last_over_first": ratios,
        "t_values": list(ts),
        "timed_rounds": reps,
        "prefill": "the first t - 1 of one shared sequence of random-assortment rounds",
        "device": device_name(),
        "gpu_available": gpu_available(),
        "python": platform.python_version(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    _limits.attach(record, LIMITS, loops)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(ratios, indent=2))


if __name__ == "__main__":
    main()
