"""Benchmark of chapter 05 (SaP): training epoch, SafeFlow per token (SaP vs the MLP), projection throughput.

Writes ``benchmarks/results/safety_polytope.json``. Every ratio is measured side by side in one run:

- time of one ``fit_polytope`` epoch against one ``fit_mlp`` epoch (N = 640 MiniLM-sized states, F = 512);
- SafeFlow time per token (one state, 50 SGD steps) with the SaP polytope against the code's MLP;
- Dykstra projection throughput (points per second) of the NumPy reference against the dispatcher
  (the CUDA kernel on a GPU machine; on a CPU-only machine the dispatcher *is* the reference and
  the ratio is ~1, recorded as such);
- the fused violation statistics (reference) against the same torch expressions.

Against the machine's limits (``_limits``, measured once in this process, one thread): the Dykstra
projection is compute-bound, FLOPs = 6 K d per point per sweep (per constraint: the residual's
inner product with the normal, 2d, and the correction and its bookkeeping, 4d), per second over
the fp64 BLAS rate, baseline ratio the reference's time over the dispatcher's; the violation
statistics are memory-bound, bytes = the (N, K) float32 scores and (N,) labels read and the (N,)
statistic written, over the copy bandwidth, baseline ratio the torch expressions' time over the
dispatcher's. The training epochs and SafeFlow (autograd, small batches) are not given a limit.

Run: ``nice -n 10 .venv/bin/python benchmarks/safety_polytope.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch

from icml25 import safety_polytope as sap
from icml25.common import backend_label, device_name, profile_config
from icml25.kernels import polytope

import _limits


def _best(fn, n_reps=3):
    out = []
    for _ in range(n_reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main() -> None:
    profile_config("cpu")  # one thread, as the chapter's cpu profile
    limits = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(limits), flush=True)
    rng = np.random.default_rng(0)
    N, d, F, K = 640, 384, 512, 10
    X = rng.normal(size=(N, d)).astype(np.float32)
    y = np.r_[np.zeros(N // 2, int), np.ones(N // 2, int)]
    X[y == 0] += 0.5
    rows = []
    t_sap = (
        _best(lambda: sap.fit_polytope(X, y, K, 2, rng=np.random.default_rng(1), F=F))
        / 2
    )
    t_mlp = (
        _best(lambda: sap.fit_mlp(X, y, 2, rng=np.random.default_rng(1), F=F, K=K)) / 2
    )
    rows.append(
        {
            "what": "training epoch (N=640, d=384, F=512)",
            "a": "SaP",
            "a_s": t_sap,
            "b": "MLP (5 x F)",
            "b_s": t_mlp,
            "ratio_b_over_a": t_mlp / t_sap,
        }
    )
    poly = sap.fit_polytope(X, y, K, 3, rng=np.random.default_rng(2), F=F)
    mlp = sap.fit_mlp(X, y, 3, rng=np.random.default_rng(2), F=F, K=K)
    h = torch.tensor(X[y == 0][:1]) + 3.0
    t_s = _best(lambda: sap.method._safeflow(h, poly, 2.0, 1e-4, 1e-2, 50, "l1", 0.0))
    t_m = _best(lambda: sap.method._safeflow(h, mlp, 2.0, 1e-4, 1e-2, 50, "l1", 0.0))
    rows.append(
        {
            "what": "SafeFlow per token (50 SGD steps)",
            "a": "SaP",
            "a_s": t_s,
            "b": "MLP",
            "b_s": t_m,
            "ratio_b_over_a": t_m / t_s,
        }
    )
    Phi = rng.normal(size=(8, 64))
    xi = rng.normal(size=8)
    P = rng.normal(size=(512, 64)) * 3
    t_ref = _best(lambda: polytope.dykstra_project_reference(P, Phi, xi, 50))
    t_dis = _best(lambda: polytope.dykstra_project(P, Phi, xi, 50))
    rows.append(
        {
            "what": "Dykstra projection, 512 points, K=8, d=64, 50 sweeps (points/s)",
            "a": "NumPy reference",
            "a_s": t_ref,
            "b": f"dispatcher ({backend_label()})",
            "b_s": t_dis,
            "ratio_b_over_a": t_dis / t_ref,
            "a_points_per_s": 512 / t_ref,
            "b_points_per_s": 512 / t_dis,
        }
    )
    C = rng.normal(size=(100_000, 50)).astype(np.float32)
    xiv = rng.normal(size=50).astype(np.float32)
    yv = rng.integers(0, 2, 100_000)
    t_k = _best(lambda: polytope.polytope_violations(C, xiv, yv, 1.0, 2.0))

    def torch_expr():
        v = torch.from_numpy(C) - torch.from_numpy(xiv)
        mx, _ = v.max(1)
        torch.where(
            torch.from_numpy(yv) == 1,
            torch.relu(1.0 + v).sum(1),
            2.0 * torch.relu(1.0 - mx),
        )

    t_t = _best(torch_expr)
    loops = [
        _limits.compute_bound(
            "Dykstra projection (NumPy reference)",
            "512 points, K=8, d=64, 50 sweeps",
            6.0 * 8 * 64 * 50 * 512,
            t_ref,
            limits,
            counted="6 K d FLOPs per point per sweep",
        ),
        _limits.compute_bound(
            f"Dykstra projection (dispatcher, {backend_label()})",
            "512 points, K=8, d=64, 50 sweeps",
            6.0 * 8 * 64 * 50 * 512,
            t_dis,
            limits,
            baseline="NumPy reference",
            ratio=t_ref / t_dis,
            counted="6 K d FLOPs per point per sweep",
        ),
        _limits.memory_bound(
            "polytope violation statistics (dispatcher)",
            "N=1e5, K=50",
            C.nbytes + xiv.nbytes + yv.nbytes + 4.0 * C.shape[0],
            t_k,
            limits,
            baseline="torch expressions",
            ratio=t_t / t_k,
            counted="scores + labels read, (N,) written",
        ),
    ]
    rows.append(
        {
            "what": "violation statistics, N=1e5, K=50",
            "a": "torch expressions",
            "a_s": t_t,
            "b": f"dispatcher ({backend_label()})",
            "b_s": t_k,
            "ratio_b_over_a": t_k / t_t,
        }
    )
    out = {
        "device": device_name(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rows": rows,
    }
    _limits.attach(out, limits, loops)
    path = Path(__file__).resolve().parent / "results" / "safety_polytope.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
