"""Benchmark (chapter 13, Pfeife): step time of four pipeline plans on two runtimes, prediction
error, planner time and the batched scorer's throughput.

- Plans for HeteroMLP (24 blocks, width 128 -> 512, batch 512, D = 2, M = 8): uniform-count,
  balanced-time, min-max DP and Pfeife's planner. Each is run on our gloo runtime and on core
  PyTorch's ``Schedule1F1B`` (same splits, same two worker processes), ``--n-steps`` steps per
  round after a warm-up, ``--n-rounds`` rounds interleaving the plans so that the machine's load
  hits them alike. Reported: median step wall time, median over rounds of the bottleneck busy CPU time (per
  round: each compute event's minimum thread CPU time over its steps, ``pfeife.min_busy_ms``), the
  prediction error against the cost model replayed from measured events, and ratios to the
  uniform plan measured in this one run.
- Planner: wall time of ``pfeife.plan`` for D = 2 and virtual D = 8 on the same profile.
- Scorer: candidates per second of ``pipeline_sim.batched_makespan`` (the NumPy reference, and
  the CUDA kernel when a GPU is usable) on 20 000 random split vectors, S = 4, M = 8.

Against the machine's limits (``_limits``, measured in this process after the thread policy):
a pipeline training step is compute-bound; its FLOPs are torch's FLOP counter over one forward
and backward pass of the whole HeteroMLP on the batch (matrix products only, so a lower bound;
the pipeline splits the same work over its stages), and its rate is those FLOPs over the median
step wall time, against D x the one-thread fp32 BLAS rate (D worker processes, one thread each).
Baseline ratio: the uniform plan's step time over the plan's.

Writes ``benchmarks/results/pfeife.json``.

Usage: ``python benchmarks/pfeife.py [--n-steps 3] [--n-rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml25 import pfeife
from icml25.common import (
    backend_label,
    device_name,
    gpu_available,
    profile_config,
    seed_everything,
)
from icml25.kernels import pipeline_sim

import _limits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-steps", type=int, default=3)
    ap.add_argument("--n-rounds", type=int, default=3)
    args = ap.parse_args()
    profile_config("cpu")
    limits = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(limits), flush=True)
    rng = seed_everything(0)
    D, M, B = 2, 8, 512
    torch.manual_seed(0)
    mlp = pfeife.HeteroMLP()
    x, y = torch.randn(B, mlp.widths[0]), torch.randn(B, 16)
    step_flops = _limits.torch_flops(
        lambda: torch.nn.functional.mse_loss(mlp(x), y).backward()
    )
    mlp.zero_grad(set_to_none=True)
    mb = (x[: B // M],)
    gm, _ = pfeife.capture_graph(mlp, mb)
    g = pfeife.profile_graph(gm, mb, n_reps=5)
    runner = pfeife.PipelineRunner(D, timeout_s=300)
    try:
        comm, _, _ = pfeife.fit_comm_model(runner, pfeife.comm_bench_sizes(0.01))
        plans = pfeife.baseline_plans(g, D, M, comm)
        t0 = time.perf_counter()
        plans["pfeife"] = pfeife.plan(g, D, M, 64 * 2**30, comm, rng)
        plan_s_d2 = time.perf_counter() - t0
        rec: dict[str, dict[str, list]] = {
            k: {"wall": [], "busy": [], "replay": [], "twall": [], "tbusy": []}
            for k in plans
        }
        for _round in range(args.n_rounds):
            for name, p in plans.items():
                r = pfeife.run_plan(runner, gm, g, p, (x,), y, comm, args.n_steps)
                rec[name]["wall"].append(r["wall_ms"])
                rec[name]["busy"].append(r["bottleneck_ms"])
                rec[name]["replay"].append(r["replay_ms"])
                if p.S == D:
                    out = runner.run_torch_pipelining(
                        gm,
                        p.order,
                        p.splits,
                        (x,),
                        y,
                        M,
                        "1f1b",
                        n_steps=args.n_steps + 1,
                    )
                    rec[name]["twall"] += [s["wall_ms"] for s in out["steps"][1:]]
                    rec[name]["tbusy"] += [
                        float(np.max(s["busy_cpu_ms"])) for s in out["steps"][1:]
                    ]
    finally:
        runner.shutdown()
    med = {
        k: {q: float(np.median(v)) if v else float("nan") for q, v in d.items()}
        for k, d in rec.items()
    }
    rows = []
    for name, p in plans.items():
        m = med[name]
        rows.append(
            dict(
                plan=name,
                S=p.S,
                splits=p.splits.tolist(),
                predicted_ms=p.predicted_ms,
                replay_ms=m["replay"],
                pred_err=abs(p.predicted_ms - m["replay"]) / m["replay"],
                wall_ms=m["wall"],
                bottleneck_ms=m["busy"],
                wall_over_uniform=m["wall"] / med["uniform"]["wall"],
                busy_over_uniform=m["busy"] / med["uniform"]["busy"],
                torch_wall_ms=m["twall"],
                torch_bottleneck_ms=m["tbusy"],
                torch_wall_over_uniform=m["twall"] / med["uniform"]["twall"],
                ours_wall_over_torch=m["wall"] / m["twall"]
                if m["twall"] == m["twall"]
                else float("nan"),
            )
        )
    t0 = time.perf_counter()
    p8 = pfeife.plan(g, 8, 16, 64 * 2**30, comm, rng, loop_cnts=(1, 2))
    plan_s_d8 = time.perf_counter() - t0
    # scorer throughput
    S, K = 4, 20_000
    sched = pfeife.make_schedule(2, M, S, 2, 0)
    ev = pipeline_sim.event_table(sched, S, M)
    t = pfeife.kernel_tables(g, np.arange(g.n))
    cands = np.sort(
        np.stack(
            [rng.choice(np.arange(1, g.n), S - 1, replace=False) for _ in range(K)]
        ),
        1,
    ).astype(np.int32)
    a = (
        t.fp,
        t.bp,
        t.op,
        t.ap,
        t.wp,
        t.tmp,
        t.es,
        t.ed,
        t.eb,
        cands,
        ev,
        np.array(comm.params),
        2,
        M,
    )
    t0 = time.perf_counter()
    pipeline_sim.batched_makespan_reference(*a)
    ref_s = time.perf_counter() - t0
    scorer = dict(K=K, S=S, M=M, numpy_s=ref_s, numpy_candidates_per_s=K / ref_s)
    if gpu_available():  # pragma: no cover - GPU
        pipeline_sim.batched_makespan(*a)
        t0 = time.perf_counter()
        pipeline_sim.batched_makespan(*a)
        gs = time.perf_counter() - t0
        scorer.update(
            kernel_s=gs,
            kernel_candidates_per_s=K / gs,
            kernel_over_numpy_speed=ref_s / gs,
        )
    out = {
        "device": device_name(),
        "backend": backend_label(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "setup": dict(
            model="HeteroMLP(24, 128, x4)",
            batch=B,
            D=D,
            M=M,
            n_steps=args.n_steps,
            n_rounds=args.n_rounds,
            comm=dict(
                c_ms=comm.c_ms, m_ms_per_byte=comm.m_ms_per_byte, x0_bytes=comm.x0_bytes
            ),
        ),
        "plans": rows,
        "planner": dict(
            D2_s=plan_s_d2, D8_s=plan_s_d8, D8_S=p8.S, D8_evaluated=p8.n_evaluated
        ),
        "scorer": scorer,
    }
    loops = []
    for r in rows:
        loop = _limits.compute_bound(
            f"pipeline training step, {r['plan']} plan (our gloo runtime, 1F1B)",
            f"HeteroMLP, batch {B}, D={D}, M={M}",
            step_flops,
            r["wall_ms"] / 1e3,
            {"fp32_flops": D * limits["fp32_flops"]},
            precision="fp32",
            baseline=None if r["plan"] == "uniform" else "uniform plan",
            ratio=None if r["plan"] == "uniform" else 1.0 / r["wall_over_uniform"],
            counted="torch FLOP counter over one forward + backward of the whole model "
            "(matrix products; a lower bound)",
        )
        loop["limit"] = f"fp32 BLAS matmul x {D} workers"
        loops.append(loop)
    out["step_flops"] = step_flops
    _limits.attach(out, limits, loops)
    path = Path(__file__).resolve().parent / "results" / "pfeife.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
