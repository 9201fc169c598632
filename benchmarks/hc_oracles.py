"""Benchmark: triplet counting (NumPy reference vs a naive per-triple loop) and the near-linear MW
algorithm vs SciPy's average linkage.

- Counting: for n in {64, 128, 256}, triple evaluations per second (``n (n-1) (n-2)`` ordered
  ``(u, v, x)``) of :func:`icml25.kernels.triplets.triplet_counts` (the GPU kernel when a GPU is
  usable, else the chunked NumPy reference) against a naive Python loop that hashes one triple at
  a time. The naive loop is timed on the first few rows of ``u`` and its rate extrapolated.
- MW: for sparse HSBM graphs (one sample per pair, depth 6..10), the wall time of
  ``build_nearlinear_mw`` (K = 64, p = 0.75) and of SciPy's average linkage, with their MW ratios
  to the best tree found.

Against the machine's limit (``_limits``, measured once in this process, one thread): triplet
counting is a gather over the LCA-size matrix, memory-bound in form: bytes = 24 per ordered
triple (three int64 entries of S read; the hashes are computed, the (n, n) counts written once),
per second over the copy bandwidth (S fits in cache at these n, so this says how far the hashing
keeps the loop from streaming). Baseline ratio: the naive loop's time over the reference's.
The MW comparison (Python-level tree building) is not given a limit.

Writes ``benchmarks/results/hc_oracles.json``.

Usage: ``python benchmarks/hc_oracles.py [--sizes 64 128 256] [--depths 6 7 8 9 10] [--n-reps 3]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from icml25 import hc_oracles as hco
from icml25.common import backend_label, device_name
from icml25.kernels import triplets

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()

MASK = (1 << 64) - 1


def _splitmix_py(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def naive_rows(S, p, seed, rows):
    """The counts of rows ``u in rows`` by a per-triple Python loop (the naive definition)."""
    n = S.shape[0]
    thr = int(np.floor(p * 2.0**53))
    mixed = _splitmix_py(seed)
    out = np.zeros((len(rows), n), dtype=np.int32)
    for i, u in enumerate(rows):
        for v in range(n):
            if v == u:
                continue
            for x in range(n):
                if x == u or x == v:
                    continue
                a, b, c = sorted((u, v, x))
                h = _splitmix_py(mixed ^ ((a * n + b) * n + c))
                if (h >> 11) < thr:
                    ans = c if S[a, b] < S[a, c] else (b if S[a, c] < S[a, b] else a)
                else:
                    ans = (a, b, c)[_splitmix_py(h) % 3]
                out[i, v] += ans != x
    return out


def bench_counts(n, n_reps, rng):
    S = hco.random_binary_tree(n, rng).lca_size_matrix()
    S_list = S.tolist()
    S_np = np.array(S_list)
    evals = n * (n - 1) * (n - 2)
    best = np.inf
    for _ in range(n_reps):
        t0 = time.perf_counter()
        C = triplets.triplet_counts(S, 0.75, 1)
        best = min(best, time.perf_counter() - t0)
    rows = list(range(2))
    t0 = time.perf_counter()
    naive = naive_rows(S_np, 0.75, 1, rows)
    t_naive = time.perf_counter() - t0
    assert np.array_equal(naive, C[rows]), "naive loop and reference disagree"
    naive_rate = len(rows) * (n - 1) * (n - 2) / t_naive
    loop = _limits.memory_bound(
        "triplet counts (dispatcher)",
        f"n={n}",
        24.0 * evals + 4.0 * n * n,
        best,
        LIMITS,
        baseline="naive per-triple loop",
        ratio=(evals / best) / naive_rate,
        counted="24 bytes per ordered triple + counts written",
    )
    return dict(
        hot_loops=[loop],
        n=n,
        triple_evaluations=evals,
        reference_seconds=best,
        reference_triples_per_s=evals / best,
        naive_triples_per_s=naive_rate,
        reference_over_naive=(evals / best) / naive_rate,
    )


def bench_mw(depth, n_reps, rng):
    rows = []
    for _ in range(n_reps):
        rows.append(hco.mw_scaling([depth], 0.9, 0.5, 1, 0.75, 64, rng)[0])
    r = {k: float(np.median([x[k] for x in rows])) for k in rows[0]}
    r["n"], r["m"] = int(r["n"]), int(r["m"])
    r["mw_over_avg_seconds"] = r["mw_seconds"] / r["avg_seconds"]
    return r


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--depths", type=int, nargs="+", default=[6, 7, 8, 9, 10])
    parser.add_argument("--n-reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "hc_oracles.json",
    )
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)
    global LIMITS
    LIMITS = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(LIMITS), flush=True)
    rng = np.random.default_rng(args.seed)
    counts, loops = [], []
    for n in args.sizes:
        counts.append(bench_counts(n, args.n_reps, rng))
        loops += counts[-1].pop("hot_loops")
        print(
            json.dumps(
                {
                    k: round(v, 5) if isinstance(v, float) else v
                    for k, v in counts[-1].items()
                }
            )
        )
    mw = []
    for depth in args.depths:
        mw.append(bench_mw(depth, args.n_reps, rng))
        print(
            json.dumps(
                {
                    k: round(v, 5) if isinstance(v, float) else v
                    for k, v in mw[-1].items()
                }
            )
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = dict(
        benchmark="hc_oracles",
        device=device_name(),
        backend=backend_label(),
        n_reps=args.n_reps,
        seed=args.seed,
        utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        counts=counts,
        mw=mw,
    )
    _limits.attach(record, LIMITS, loops)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
