"""Benchmark: kNN + neighbour attention at N points, three ways, and the training step rate.

- kNN (k = 8) of N points against themselves, N in {1e3, 1e4, 1e5}, 10 scenes of N/10 points (the
  per-scene offsets the model uses): the tiled torch reference (exact squared distances, stable
  sort), ``scipy.spatial.cKDTree`` per scene, and the CUDA kernel (``knn_attention.knn``, only
  when a GPU is usable; else "not recorded"). Then the neighbour attention (c = 64, 4 heads) on
  those neighbours: the gather + einsum reference, and the kernel on a GPU.
- Training: UniVLG updates per second at the cpu profile (batch 8, 3 views, 768 points).

Ratios are measured side by side in one run. Writes ``benchmarks/results/univlg.json``.

Usage: ``python benchmarks/univlg.py [--Ns 1000 10000 100000] [--n-reps 3]``
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


def _best(fn, n_reps: int) -> float:
    fn()
    best = np.inf
    for _ in range(n_reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_knn(N: int, n_reps: int, rng: np.random.Generator) -> dict:
    n_sc = 10
    pts = rng.uniform(-2, 2, (N, 3)).astype(np.float32)
    b = np.repeat(np.arange(n_sc), N // n_sc)
    pts = pts[: len(b)]
    t_ref = _best(
        lambda: knn_attention.knn_reference(pts, pts, 8, b, b),
        n_reps if N <= 10_000 else 1,
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
    with torch.no_grad():
        out["attention_reference_s"] = _best(
            lambda: knn_attention.neighbour_attention_reference(
                q, k, v, it, pe, heads=4
            ),
            n_reps,
        )
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
    univlg.train_grounding(model, [cache], 2, rng)
    t0, c0 = time.perf_counter(), time.process_time()
    h = univlg.train_grounding(model, [cache], n_updates, rng)
    return {
        "updates": h["steps"],
        "updates_per_s_wall": h["steps"] / (time.perf_counter() - t0),
        "updates_per_cpu_s": h["steps"] / (time.process_time() - c0),
        "batch": 8,
        "points": 768,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--Ns", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--n-reps", type=int, default=3)
    ap.add_argument("--n-updates", type=int, default=10)
    a = ap.parse_args()
    profile_config("cpu")  # one thread, as the chapter runs
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
    path.write_text(json.dumps(res, indent=2) + "\n")
    for N in a.Ns:  # written after every size, so a stopped run keeps what it measured
        res["knn_attention"].append(bench_knn(N, a.n_reps, rng))
        path.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
