"""Time the chapter-02 MIPS kernels: NumPy references vs CUDA kernels (when a GPU is usable).

For each action-table size n (d = 32 and B = 256 queries by default, the chapter's Exp. C setting)
it times ``mips_argmax``, ``gumbel_max_sample`` and ``first_beater`` (threshold = the query's
score against a random action, so the answer lies somewhere in the table) and writes one JSON
file with the median seconds per call, the seconds per decision (per query) and, on a GPU, the
speed-up of the kernel over the reference. NumPy's BLAS is limited to one thread so that CPU
numbers are comparable between machines.

    .venv/bin/python benchmarks/kernels_mips.py                      # CPU: n = 1e4, 1e5, 2e5
    .venv/bin/python benchmarks/kernels_mips.py --n 100000 1000000   # e.g. on the GPU machine

Output: ``<results_dir>/bench-kernels_mips-<cpu|gpu>.json`` (see :func:`icml25.common.results_dir`),
and the same record as ``benchmarks/results/kernels_mips.json`` for the cross-chapter table.

Against the machine's limits (``_limits``, measured once in this process, one thread): every case
is compute-bound, FLOPs = 2 B n d (the score inner products, float32; the running argmax and
the Gumbel noise are not counted, so the fractions are lower bounds), over the fp32 BLAS rate.
``first_beater`` stops at the first action that beats the threshold, so its work depends on the
data and it is not given a count.
The baseline ratio (with a GPU) is the reference's time over the kernel's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

try:  # limits NumPy's BLAS threads; present in the venv, but not a declared dependency
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    from contextlib import nullcontext

    def threadpool_limits(limits=None):
        return nullcontext()


from icml25.common import device_name, gpu_available, results_dir
from icml25.kernels import mips

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()


def _median_seconds(fn, repeats: int, sync=lambda: None) -> float:
    fn()  # warm-up (compilation, caches)
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(
    ns: list[int],
    B: int,
    d: int,
    repeats: int,
    gumbel_reference_max_n: int,
    seed: int = 0,
) -> dict:
    rng = np.random.default_rng(seed)
    use_gpu = gpu_available()
    rows, loops = [], []
    for n in ns:
        V = rng.standard_normal((B, d)).astype(np.float32)
        X = rng.standard_normal((n, d)).astype(np.float32)
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        thr = np.einsum("bd,bd->b", V, X[rng.integers(0, n, size=B)])
        cases = {
            "mips_argmax": lambda: mips.mips_argmax_reference(V, X),
            "first_beater": lambda: mips.first_beater_reference(V, X, thr),
        }
        if n <= gumbel_reference_max_n:
            cases["gumbel_max_sample"] = lambda: mips.gumbel_max_sample_reference(
                V, X, 1.0, 0
            )
        for name, reference in cases.items():
            row = {"kernel": name, "n": n, "d": d, "B": B}
            row["reference_s"] = _median_seconds(reference, repeats)
            if use_gpu:  # pragma: no cover - needs a GPU
                # the dispatcher with the table already on the device (an ActionTable):
                # the kernel, the queries' validation and transfer, and the
                # result's copy back (which syncs)
                table = mips.ActionTable(X)
                rest = (
                    (thr,)
                    if name == "first_beater"
                    else (1.0, 0)
                    if name == "gumbel_max_sample"
                    else ()
                )
                dispatcher = getattr(mips, name)
                # warm-up: compiles the module, copies the table once
                dispatcher(V, table, *rest)
                row["gpu_s"] = _median_seconds(
                    lambda: dispatcher(V, table, *rest), repeats
                )
                row["speedup"] = row["reference_s"] / row["gpu_s"]
            row["reference_s_per_decision"] = row["reference_s"] / B
            if name != "first_beater":
                row["fraction_of_fp32_blas"] = (
                    2.0 * B * n * d / row["reference_s"] / LIMITS["fp32_flops"]
                )
            # stops at the first beater: its work depends on the data, no count
            if name == "first_beater":
                rows.append(row)
                print(
                    json.dumps(
                        {
                            k: (round(v, 6) if isinstance(v, float) else v)
                            for k, v in row.items()
                        }
                    ),
                    flush=True,
                )
                continue
            loops.append(
                _limits.compute_bound(
                    f"{name} (NumPy reference)",
                    f"n={n}, B={B}, d={d}",
                    2.0 * B * n * d,
                    row["reference_s"],
                    LIMITS,
                    precision="fp32",
                    counted="2 B n d (score inner products)",
                )
            )
            if use_gpu:  # pragma: no cover - needs a GPU
                loops[-1].update(baseline=None)
                loops.append(
                    _limits.compute_bound(
                        f"{name} (CUDA kernel via dispatcher)",
                        f"n={n}, B={B}, d={d}",
                        2.0 * B * n * d,
                        row["gpu_s"],
                        LIMITS,
                        precision="fp32",
                        baseline="NumPy reference",
                        ratio=row["speedup"],
                        counted="2 B n d; against the CPU's fp32 BLAS rate",
                    )
                )
            print(
                json.dumps(
                    {
                        k: (round(v, 6) if isinstance(v, float) else v)
                        for k, v in row.items()
                    }
                ),
                flush=True,
            )
            rows.append(row)
    return _limits.attach(
        {
            "benchmark": "kernels_mips",
            "device": device_name(),
            "gpu": use_gpu,
            "rows": rows,
        },
        LIMITS,
        loops,
    )


def main() -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 200_000])
    parser.add_argument("--B", type=int, default=256)
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--gumbel-reference-max-n",
        type=int,
        default=100_000,
        help="skip the (slow, ~0.1 us per draw) NumPy Philox reference of gumbel_max_sample above this n",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with threadpool_limits(limits=1):
        global LIMITS
        LIMITS = _limits.measure()  # once, under the same thread policy as the timings
        print(_limits.describe(LIMITS), flush=True)
        result = run(args.n, args.B, args.d, args.repeats, args.gumbel_reference_max_n)
    out = (
        args.out
        or results_dir()
        / f"bench-kernels_mips-{'gpu' if result['gpu'] else 'cpu'}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    mirror = Path(__file__).resolve().parent / "results" / "kernels_mips.json"
    mirror.parent.mkdir(parents=True, exist_ok=True)
    mirror.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out} and {mirror}")
    return out


if __name__ == "__main__":
    main()
