"""Benchmark: steps per second of the batched sparse-recovery optimiser vs a loop of single runs.

For B in {1, 16, 256} configurations of the official compressed-sensing problem (n = 100,
N = 30, s = 5; each configuration its own X), it times

- ``batched``: one :func:`icml25.grokking.subgradient_descent` call on the (B, N, n) stack
  (the CUDA kernel when a GPU is present, else the NumPy reference), and
- ``loop``: B calls on the single problems, one after the other,

and reports configuration-steps per second (B * steps / seconds) and the speed-up. Writes
``benchmarks/results/grokking.json``.

Usage: ``python benchmarks/grokking.py [--steps 2000] [--sizes 1 16 256]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from icml25 import grokking as g
from icml25.common import device_name, gpu_available


def _time(fn, repeats: int = 1) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(sizes: list[int], steps: int, seed: int = 0) -> dict:
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass
    rng = np.random.default_rng(seed)
    rows = []
    for B in sizes:
        X, y, a = g.sparse_problems(B, 100, 5, 30, 0.0, rng)
        alpha, beta = 0.1, 1e-5
        batched = _time(lambda: g.subgradient_descent(X, y, a, alpha=alpha, beta1=beta, steps=steps,
                                                      eval_every=steps // 10), repeats=3)
        loop_B = min(B, 16)  # time at most 16 single runs and scale: the loop is linear in B
        loop = _time(lambda: [g.subgradient_descent(X[b], y[b], a[b], alpha=alpha, beta1=beta, steps=steps,
                                                    eval_every=steps // 10) for b in range(loop_B)], repeats=3)
        loop *= B / loop_B
        rows.append({
            "B": B,
            "steps": steps,
            "batched_s": batched,
            "loop_s": loop,
            "batched_config_steps_per_s": B * steps / batched,
            "loop_config_steps_per_s": B * steps / loop,
            "speedup": loop / batched,
            "loop_extrapolated_from": loop_B,
        })
        print(f"B={B:4d}: batched {B * steps / batched:12.0f} config-steps/s, loop {B * steps / loop:12.0f}, "
              f"speed-up {loop / batched:6.1f}x")
    return {"benchmark": "grokking batched subgradient descent", "device": device_name(),
            "backend": "cuda kernel" if gpu_available() else "numpy reference", "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 256])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "grokking.json")
    args = parser.parse_args()
    result = run(args.sizes, args.steps)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print("written", args.out)


if __name__ == "__main__":
    main()
