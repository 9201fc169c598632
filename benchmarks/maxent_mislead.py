"""Benchmark: SAC-AdaEnt's actor-update cost against SB3's SAC, and the AdaEnt landscape test
(dispatcher: CUDA kernel on a GPU, torch reference otherwise) against a per-row scipy loop.

- Update cost: SAC and SAC-AdaEnt (M in {16, 100} sampled actions per state) on Obstacle2D with
  a 64x64 MLP and batch 256; the replay buffer is filled with 1000 random steps, then
  ``train(gradient_steps=...)`` is timed (best of ``n_reps``). SAC-AdaEnt's update also trains the
  plain critic pair, so the ratio is the whole update's, measured side by side in one run.
- Landscape test: ``B in {256, 4096}`` states, ``M = 100``: :func:`icml25.kernels.adaent.landscape_similarity`
  against a Python loop of ``scipy.spatial.distance.cosine`` per row; and
  :func:`~icml25.kernels.adaent.grid_soft_value` against ``np.log(np.sum(np.exp(...)))`` row by row.

Against the machine's limit (``_limits``, measured once in this process, one thread): the
landscape test and the soft value are memory-bound: bytes = the inputs read once and the outputs
written once (similarity: two (B, 100) float32 arrays in, (B,) cosines and flags out; soft value:
the (B, 1000) float64 grid in, (B,) out), per second over the copy bandwidth; baseline ratios: the
naive per-row loops' times over the dispatcher's. The SAC updates (SB3, framework-bound) are not
given a limit.

Writes ``benchmarks/results/maxent_mislead.json``.

Usage: ``python benchmarks/maxent_mislead.py [--ms 16 100] [--bs 256 4096] [--n-reps 3]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from scipy.spatial.distance import cosine

from icml25 import maxent_mislead as maxent
from icml25.common import backend_label, device_name
from icml25.kernels import adaent

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()


def _filled(model, n_fill: int = 1000):
    model.learning_starts = n_fill
    model.learn(n_fill)
    return model


def _time_train(model, gradient_steps: int, n_reps: int) -> float:
    best = np.inf
    for _ in range(n_reps):
        t0 = time.perf_counter()
        model.train(gradient_steps=gradient_steps, batch_size=256)
        best = min(best, time.perf_counter() - t0)
    return best / gradient_steps


def bench_updates(ms, gradient_steps, n_reps, rng):
    sac = _filled(maxent.make_agent("sac", maxent.Obstacle2D(), rng, net_arch=(64, 64)))
    t_sac = _time_train(sac, gradient_steps, n_reps)
    rows = []
    for M in ms:
        ada = _filled(
            maxent.make_agent(
                "sac_adaent", maxent.Obstacle2D(), rng, net_arch=(64, 64), n_samples=M
            )
        )
        t_ada = _time_train(ada, gradient_steps, n_reps)
        rows.append(
            dict(
                n_samples=M,
                sac_ms_per_update=1e3 * t_sac,
                adaent_ms_per_update=1e3 * t_ada,
                adaent_over_sac=t_ada / t_sac,
            )
        )
    return rows


def _naive_similarity(qs, qp):
    out = np.empty(qs.shape[0])
    for b in range(qs.shape[0]):
        x, y = qs[b] - qs[b].min(), qp[b] - qp[b].min()
        out[b] = 1.0 - cosine(x, y)
    return out


def bench_landscape(B, n_reps, rng):
    qs = rng.normal(size=(B, 100)).astype(np.float32)
    qp = (qs + rng.normal(scale=0.5, size=(B, 100))).astype(np.float32)
    best = np.inf
    for _ in range(n_reps):
        t0 = time.perf_counter()
        cos, _ = adaent.landscape_similarity(qs, qp, 0.9)
        best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    naive = _naive_similarity(qs, qp)
    t_naive = time.perf_counter() - t0
    assert np.allclose(cos, naive, atol=1e-4)
    Q = rng.normal(size=(B, 1000))
    best_v = np.inf
    for _ in range(n_reps):
        t0 = time.perf_counter()
        v = adaent.grid_soft_value(Q, 0.3, 0.002)
        best_v = min(best_v, time.perf_counter() - t0)
    t0 = time.perf_counter()
    naive_v = np.array([0.3 * np.log(np.sum(np.exp(row / 0.3)) * 0.002) for row in Q])
    t_naive_v = time.perf_counter() - t0
    assert np.allclose(v, naive_v, rtol=1e-9)
    loops = [
        _limits.memory_bound(
            "AdaEnt landscape similarity (dispatcher)",
            f"B={B}, M=100",
            2 * qs.nbytes + 5.0 * B,
            best,
            LIMITS,
            baseline="per-row scipy cosine loop",
            ratio=t_naive / best,
            counted="two (B, M) float32 in + (B,) out",
        ),
        _limits.memory_bound(
            "AdaEnt grid soft value (dispatcher)",
            f"B={B}, grid=1000",
            Q.nbytes + 8.0 * B,
            best_v,
            LIMITS,
            baseline="per-row NumPy logsumexp",
            ratio=t_naive_v / best_v,
            counted="(B, 1000) float64 in + (B,) out",
        ),
    ]
    return dict(
        hot_loops=loops,
        B=B,
        M=100,
        similarity_ms=1e3 * best,
        naive_similarity_ms=1e3 * t_naive,
        naive_over_dispatcher=t_naive / best,
        soft_value_ms=1e3 * best_v,
        naive_soft_value_ms=1e3 * t_naive_v,
        naive_over_soft_value=t_naive_v / best_v,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", type=int, nargs="+", default=[16, 100])
    parser.add_argument("--bs", type=int, nargs="+", default=[256, 4096])
    parser.add_argument("--gradient-steps", type=int, default=20)
    parser.add_argument("--n-reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "maxent_mislead.json",
    )
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)
    torch.set_num_threads(1)
    global LIMITS
    LIMITS = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(LIMITS), flush=True)
    rng = np.random.default_rng(args.seed)
    updates = bench_updates(args.ms, args.gradient_steps, args.n_reps, rng)
    for r in updates:
        print(
            json.dumps(
                {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}
            )
        )
    landscape = [bench_landscape(B, args.n_reps, rng) for B in args.bs]
    loops = [loop for r in landscape for loop in r.pop("hot_loops")]
    for r in landscape:
        print(
            json.dumps(
                {k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}
            )
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = dict(
        benchmark="maxent_mislead",
        device=device_name(),
        backend=backend_label(),
        n_reps=args.n_reps,
        seed=args.seed,
        utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        updates=updates,
        landscape=landscape,
    )
    _limits.attach(record, LIMITS, loops)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
