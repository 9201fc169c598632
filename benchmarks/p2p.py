"""Benchmark (chapter 09): superpixel pooling and correlated-logit sampling.

- Segment mean: pixels per second of :func:`icml25.kernels.superpixel.segment_mean` (the CUDA kernel when
  a GPU is usable; on a CPU machine the dispatcher runs torch's ``scatter_reduce``, so the first
  two rows coincide there), torch's ``scatter_reduce(mean, include_self=False)`` called directly,
  and the NumPy ``bincount`` reference, for a P2P batch (B = 64, C = 4 channels, 32 x 32 and
  64 x 64 pixels, G = 25 and 100 groups).
- Sampling: ``l = mu + U xi + sqrt(eps) zeta`` (:func:`icml25.p2p.low_rank_logits`) against the
  official code's ``MultivariateNormal(mu, U U^T + jitter I).rsample()`` (construction, i.e. the
  Cholesky factorisation, included), for B = 64 and G in {25, 100, 400}, rank 3.

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
        return torch.zeros(B, C, G).scatter_reduce(2, idx, vt, reduce="mean", include_self=False)

    t_ours = _best(lambda: superpixel.segment_mean(vt, lt, G), n_reps)
    t_scatter = _best(direct, n_reps)
    t_bincount = _best(lambda: superpixel.segment_mean_reference(values, labels, G), n_reps)
    px = B * N
    return dict(side=side, G=G, batch=B, channels=C, ours_pixels_per_s=px / t_ours, scatter_reduce_pixels_per_s=px / t_scatter,
                bincount_pixels_per_s=px / t_bincount, ours_over_scatter=t_scatter / t_ours, ours_over_bincount=t_bincount / t_ours)


def bench_sampling(G, n_reps, gen):
    B, r, eps = 64, 3, 1e-6
    mu = torch.randn(B, G, generator=gen)
    U = torch.randn(B, G, r, generator=gen) / np.sqrt(r)

    def mvn():
        cov = U @ U.transpose(1, 2) + 1e-4 * torch.eye(G)  # jitter large enough for float32 Cholesky
        return torch.distributions.MultivariateNormal(mu, cov).rsample()

    t_low = _best(lambda: p2p_lib.low_rank_logits(mu, U, eps, rng=gen), n_reps)
    t_mvn = _best(mvn, n_reps)
    return dict(G=G, batch=B, rank=r, low_rank_seconds=t_low, mvn_seconds=t_mvn, mvn_over_low_rank=t_mvn / t_low)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "p2p.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    mean = []
    for side, G in ((32, 25), (32, 100), (64, 100)):
        mean.append(bench_mean(side, G, args.n_reps, rng))
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in mean[-1].items()}))
    sampling = []
    for G in (25, 100, 400):
        sampling.append(bench_sampling(G, args.n_reps, gen))
        print(json.dumps({k: round(v, 6) if isinstance(v, float) else v for k, v in sampling[-1].items()}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = dict(benchmark="p2p", device=device_name(), backend=backend_label(), n_reps=args.n_reps, seed=args.seed,
                  utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), segment_mean=mean, sampling=sampling)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
