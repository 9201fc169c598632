"""Benchmark: kNN + neighbour attention at N points, three ways, and the training step rate.

- kNN (k = 8) of N points against themselves, N in {1e3, 1e4, 1e5}, 10 scenes of N/10 points (the
  per-scene offsets the model uses): the tiled torch reference (exact squared distances, stable
  sort), ``scipy.spatial.cKDTree`` per scene, and the CUDA kernel (``knn_attention.knn``, only
  when a GPU is usable; else "not recorded"). Then the neighbour attention (c = 64, 4 heads) on
  those neighbours: the gather + broadcast reference, and the kernel on a GPU.
- Training: UniVLG updates per second at the cpu profile (batch 8, 3 views, 768 points).

Ratios are measured side by side in one run. Times are CPU seconds of this process
(``time.process_time``, one thread), best of ``--n-reps`` after a warm-up (one run for the
torch kNN reference from N = 1e4 on: 15 s a call). N = 1e5 is not in the default sizes: the
reference's per-scene brute force grows with the square of the scene (10^4 points a scene,
about 100x the N = 1e4 time, some 25 minutes), and a run of it never finished within
``make bench``.

Against the machine's limits (``_limits``, measured in this process after the thread policy):

- kNN reference: memory-bound; bytes = the float64 squared-distance matrix of each scene
  (``n_s^2`` entries) written once and read once by the sort, ``16 n_s^2`` per scene. A lower
  bound of what it moves (the broadcast differences and the sort's own passes are not
  counted), so its fraction of the copy bandwidth is an upper bound of how close it comes.
  Baseline: cKDTree (ratio = cKDTree seconds / reference seconds, < 1 = slower).
- neighbour attention reference: memory-bound (gathers, broadcast products and sums; torch's
  FLOP counter sees none of it, no matrix product): bytes = the neighbours' keys, values and
  positional encodings read once, queries read, outputs written, indices read (a lower bound).
- a training update: compute-bound, FLOPs counted by torch's FLOP counter
  (``_limits.torch_flops``: matrix products and convolutions, a lower bound) over the fp32
  BLAS rate.

Writes ``benchmarks/results/univlg.json``.

Usage: ``python benchmarks/univlg.py [--Ns 1000 10000] [--n-reps 3]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from scipy.spatial import cKDTree

from icml25.common import backend_label, device_name, gpu_available, profile_config
from icml25.kernels import knn_attention

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()


def _best(fn, n_reps: int) -> float:
    """Best CPU seconds (``time.process_time``) of ``n_reps`` calls after one warm-up."""
    fn()
    best = np.inf
    for _ in range(n_reps):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def bench_knn(N: int, n_reps: int, rng: np.random.Generator) -> dict:
    n_sc = 10
    pts = rng.uniform(-2, 2, (N, 3)).astype(np.float32)
    b = np.repeat(np.arange(n_sc), N // n_sc)
    pts = pts[: len(b)]
    t_ref = _best(
        lambda: knn_attention.knn_reference(pts, pts, 8, b, b),
        n_reps if N < 10_000 else 1,
    )

    def kd():
        for s in range(n_sc):
            sel = pts[b == s]
            cKDTree(sel).query(sel, 8)

    t_kd = _best(kd, n_reps)
    out = {
        "N": int(len(b)),
        "torch_reference_s": t_ref,
        "ckdtree_s": t_kd,
        "reference_over_ckdtree": t_ref / t_kd,
    }
    idx, _ = knn_attention.knn_reference(pts, pts, 8, b, b)
    c = 64
    q, k, v = (torch.randn(len(b), c) for _ in range(3))
    pe = torch.randn(len(b), 8, c)
    it = torch.from_numpy(idx)

    def attention():
        return knn_attention.neighbour_attention_reference(q, k, v, it, pe, heads=4)

    with torch.no_grad():
        out["attention_reference_s"] = _best(attention, n_reps)
    n_s = len(b) // n_sc
    size = f"N={len(b)} ({n_sc} scenes of {n_s}), k=8"
    out["hot_loops"] = [
        _limits.memory_bound(
            "kNN, tiled torch reference (squared distances + stable sort)",
            size,
            16.0 * n_sc * n_s * n_s,
            t_ref,
            LIMITS,
            baseline="cKDTree per scene",
            ratio=t_kd / t_ref,
            counted="float64 distance matrix written once + read once by the sort "
            "(16 n_s^2 per scene; a lower bound)",
        ),
        _limits.memory_bound(
            "neighbour attention, gather + broadcast reference",
            f"{size}, c=64, 4 heads",
            4.0 * len(b) * 8 * c * 3 + 4.0 * len(b) * c * 2 + 8.0 * len(b) * 8,
            out["attention_reference_s"],
            LIMITS,
            counted="float32 neighbour keys, values and PE read once (3 x 4 N k c), "
            "queries read and outputs written (2 x 4 N c), int64 indices (8 N k); "
            "a lower bound",
        ),
    ]
    if gpu_available():  # pragma: no cover - GPU
        import cupy as cp

        def gk():
            knn_attention.knn(pts, pts, 8, b, b)
            cp.cuda.Device().synchronize()

        out["kernel_s"] = _best(gk, n_reps)
        out["reference_over_kernel"] = t_ref / out["kernel_s"]
        out["ckdtree_over_kernel"] = t_kd / out["kernel_s"]
        qc, kc, vc, ic, pc = (cp.asarray(t.numpy()) for t in (q, k, v, it, pe))

        def ga():
            knn_attention.neighbour_attention_gpu(qc, kc, vc, ic, pc, heads=4)
            cp.cuda.Device().synchronize()

        out["attention_kernel_s"] = _best(ga, n_reps)
        out["attention_reference_over_kernel"] = (
            out["attention_reference_s"] / out["attention_kernel_s"]
        )
    else:
        out["kernel_s"] = "not recorded (no GPU)"
    return out


def bench_training(n_updates: int, rng: np.random.Generator) -> dict:
    from icml25 import univlg

    ds = univlg.SyntheticRGBDScenes(12, 3, 32, rng)
    model = univlg.UniVLG(univlg.UniVLGConfig())
    for p in model.backbone.parameters():
        p.requires_grad_(False)
    cache = univlg.build_cache(ds, model.backbone)
    # two warm-up updates, under the FLOP counter (an update's FLOPs do not depend on
    # the data drawn)
    per_update = _limits.torch_flops(
        lambda: univlg.train_grounding(model, [cache], 1, rng)
    )
    univlg.train_grounding(model, [cache], 1, rng)
    t0, c0 = time.perf_counter(), time.process_time()
    h = univlg.train_grounding(model, [cache], n_updates, rng)
    cpu = time.process_time() - c0
    return {
        "updates": h["steps"],
        "updates_per_s_wall": h["steps"] / (time.perf_counter() - t0),
        "updates_per_cpu_s": h["steps"] / cpu,
        "batch": 8,
        "points": 768,
        "hot_loops": [
            _limits.compute_bound(
                "UniVLG grounding training update (forward + backward + Adam)",
                f"{h['steps']} updates, batch 8, 3 views, 768 points",
                per_update * h["steps"],
                cpu,
                LIMITS,
                precision="fp32",
                counted="torch FLOP counter over one update (matrix products and "
                "convolutions; a lower bound) x updates",
            )
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--Ns", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--n-reps", type=int, default=3)
    ap.add_argument("--n-updates", type=int, default=10)
    a = ap.parse_args()
    profile_config("cpu")  # one thread, as the chapter runs
    global LIMITS
    LIMITS = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(LIMITS), flush=True)
    rng = np.random.default_rng(0)
    res = {
        "device": device_name(),
        "backend": backend_label(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "threads": torch.get_num_threads(),
        "knn_attention": [],
        "training": "not recorded (run stopped)",
    }
    path = Path(__file__).resolve().parent / "results" / "univlg.json"
    res["training"] = bench_training(a.n_updates, rng)
    loops = res["training"].pop("hot_loops")
    _limits.attach(res, LIMITS, loops)
    path.write_text(json.dumps(res, indent=2) + "\n")
    for N in a.Ns:  # written after every size, so a stopped run keeps what it measured
        res["knn_attention"].append(bench_knn(N, a.n_reps, rng))
        loops += res["knn_attention"][-1].pop("hot_loops")
        _limits.attach(res, LIMITS, loops)
        path.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
