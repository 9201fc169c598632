"""Benchmark (chapter 09): superpixel pooling and correlated-logit sampling.

- Segment mean: pixels per second of :func:`icml25.kernels.superpixel.segment_mean` (the CUDA kernel when
  a GPU is usable; on a CPU machine the dispatcher runs torch's ``scatter_reduce``, so the first
  two rows coincide there), torch's ``scatter_reduce(mean, include_self=False)`` called directly,
  and the NumPy ``bincount`` reference, for a P2P batch (B = 64, C = 4 channels, 32 x 32 and
  64 x 64 pixels, G = 25 and 100 groups).
- Sampling: ``l = mu + U xi + sqrt(eps) zeta`` (:func:`icml25.p2p.low_rank_logits`) against the
  official code's ``MultivariateNormal(mu, U U^T + jitter I).rsample()`` (construction, i.e. the
  Cholesky factorisation, included), for B = 64 and G in {25, 100, 400}, rank 3.

Against the machine's limit (``_limits``, measured once in this process, one thread): both loops
are memory-bound: segment mean bytes = the float32 values (B, C, N) and int64 labels (B, N) read
and the (B, C, G) means written; low-rank sampling bytes = mu (B, G), U (B, G, r) and the
Gaussian draws (B, r + G) read and the (B, G) logits written (float32); per second over the copy
bandwidth. Baseline ratios: the NumPy bincount reference's time over the dispatcher's, and the
MultivariateNormal route's time over the low-rank sampler's.

Writes ``benchmarks/results/p2p.json``. Usage: ``python benchmarks/p2p.py [--n-reps 5]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml25 import p2p as p2p_lib
from icml25.common import backend_label, device_name
from icml25.kernels import superpixel

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()
LOOPS: list = []  # hot-loop entries, filled by the measurements


def _best(fn, n_reps):
    fn()  # warm-up
    best = np.inf
    for _ in range(n_reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_mean(side, G, n_reps, rng):
    B, C, N = 64, 4, side * side
    values = rng.normal(size=(B, C, N)).astype(np.float32)
    labels = rng.integers(0, G, size=(B, N))
    vt, lt = torch.as_tensor(values), torch.as_tensor(labels)
    idx = lt.unsqueeze(1).expand(-1, C, -1)

    def direct():
        return torch.zeros(B, C, G).scatter_reduce(
            2, idx, vt, reduce="mean", include_self=False
        )

    t_ours = _best(lambda: superpixel.segment_mean(vt, lt, G), n_reps)
    t_scatter = _best(direct, n_reps)
    t_bincount = _best(
        lambda: superpixel.segment_mean_reference(values, labels, G), n_reps
    )
    px = B * N
    LOOPS.append(
        _limits.memory_bound(
            "superpixel segment mean (dispatcher)",
            f"B={B}, C={C}, {side}x{side}, G={G}",
            values.nbytes + labels.nbytes + 4.0 * B * C * G,
            t_ours,
            LIMITS,
            baseline="NumPy bincount reference",
            ratio=t_bincount / t_ours,
            counted="values + labels read, means written",
        )
    )
    return dict(
        side=side,
        G=G,
        batch=B,
        channels=C,
        ours_pixels_per_s=px / t_ours,
        scatter_reduce_pixels_per_s=px / t_scatter,
        bincount_pixels_per_s=px / t_bincount,
        ours_over_scatter=t_scatter / t_ours,
        ours_over_bincount=t_bincount / t_ours,
    )


def bench_sampling(G, n_reps, gen):
    B, r, eps = 64, 3, 1e-6
    mu = torch.randn(B, G, generator=gen)
    U = torch.randn(B, G, r, generator=gen) / np.sqrt(r)

    def mvn():
        # jitter large enough for float32 Cholesky
        cov = U @ U.transpose(1, 2) + 1e-4 * torch.eye(G)
        return torch.distributions.MultivariateNormal(mu, cov).rsample()

    t_low = _best(lambda: p2p_lib.low_rank_logits(mu, U, eps, rng=gen), n_reps)
    t_mvn = _best(mvn, n_reps)
    LOOPS.append(
        _limits.memory_bound(
            "low-rank correlated logits",
            f"B={B}, G={G}, r={r}",
            4.0 * (B * G + B * G * r + B * (r + G) + B * G),
            t_low,
            LIMITS,
            baseline="MultivariateNormal rsample",
            ratio=t_mvn / t_low,
            counted="mu, U, draws read + logits written (float32)",
        )
    )
    return dict(
        G=G,
        batch=B,
        rank=r,
        low_rank_seconds=t_low,
        mvn_seconds=t_mvn,
        mvn_over_low_rank=t_mvn / t_low,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "p2p.json",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    global LIMITS
    LIMITS = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(LIMITS), flush=True)
    rng = np.random.default_rng(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    mean = []
    for side, G in ((32, 25), (32, 100), (64, 100)):
        mean.append(bench_mean(side, G, args.n_reps, rng))
        print(
            json.dumps(
                {
                    k: round(v, 4) if isinstance(v, float) else v
                    for k, v in mean[-1].items()
                }
            )
        )
    sampling = []
    for G in (25, 100, 400):
        sampling.append(bench_sampling(G, args.n_reps, gen))
        print(
            json.dumps(
                {
                    k: round(v, 6) if isinstance(v, float) else v
                    for k, v in sampling[-1].items()
                }
            )
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = dict(
        benchmark="p2p",
        device=device_name(),
        backend=backend_label(),
        n_reps=args.n_reps,
        seed=args.seed,
        utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        segment_mean=mean,
        sampling=sampling,
    )
    _limits.attach(record, LIMITS, LOOPS)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
