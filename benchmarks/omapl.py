"""Benchmark: the cost of one update of each chapter-10 learner, and CoopGrid steps per second.

- Updates: O-MAPL, IPL-VDN, IIPL, SL-MARL (phase 2) and BC at batch 32 pairs, ``T = 12``,
  ``N = 3``, hidden 64, one thread; best of ``n_reps`` timings of ``n_updates`` updates each, all
  in one run so the ratios to BC are measured side by side.
- Environment: ``E`` games stepped with the dispatcher :func:`icml25.kernels.omapl_kernels.coopgrid_step`
  (vectorised NumPy here, the CUDA kernel on a GPU) against a Python loop over games and agents.

Against the machine's limits (``_limits``, measured once in this process, one thread): an update
is compute-bound in form, FLOPs by torch's ``FlopCounterMode`` over one update (matmuls, forward
and backward), per second over the fp32 BLAS rate, baseline ratio BC's update time over the
method's; the CoopGrid step is memory-bound, bytes = 88 per game (positions, actions, landmarks
read as int32; new positions and the float32 reward written), over the copy bandwidth, baseline
ratio the Python loop's time over the dispatcher's.

Writes ``benchmarks/results/omapl.json``.

Usage: ``python benchmarks/omapl.py [--n-updates 20] [--n-reps 3] [--es 256 4096]``

Blocks of 20 updates (was 50) keep ``make bench`` under its 10 minutes on the shared 2-core
machine, where this script took 66 s of 1910 (the four preference learners cost 35-60 ms an
update there); the time per update is the best of the same 3 blocks, and ``n_updates`` and
``n_reps`` are recorded in the JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml25 import omapl
from icml25.common import backend_label, device_name
from icml25.kernels import omapl_kernels

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()
LOOPS: list = []  # hot-loop entries, filled by the measurements

MOVES = omapl_kernels.MOVES


def bench_updates(n_updates: int, n_reps: int, rng: np.random.Generator) -> list[dict]:
    data = omapl.make_grid_data(rng, 100, 300, "rule")
    batches = [data.sample(rng, 32) for _ in range(n_updates)]
    rows, flops = {}, {}
    for m in ("BC", "O-MAPL", "IPL-VDN", "IIPL", "SL-MARL"):
        torch.manual_seed(0)
        # SL-MARL: reward_updates = 0, phase 2 timed
        agent = omapl.make_agent(m, data, 64, 0, lr=3e-3)
        best = np.inf
        for _ in range(n_reps):
            t0 = time.perf_counter()
            for b in batches:
                agent.update(b)
            best = min(best, (time.perf_counter() - t0) / n_updates)
        rows[m] = best
        flops[m] = _limits.torch_flops(lambda: agent.update(batches[0]))
    for m, t in rows.items():
        LOOPS.append(
            _limits.compute_bound(
                f"{m} update",
                "batch 32 pairs, T=12, N=3, hidden 64",
                flops[m],
                t,
                LIMITS,
                precision="fp32",
                baseline=None if m == "BC" else "BC update",
                ratio=None if m == "BC" else rows["BC"] / t,
                counted="torch FlopCounterMode (matmuls, fwd+bwd)",
            )
        )
    return [
        dict(method=m, ms_per_update=1e3 * t, over_bc=t / rows["BC"])
        for m, t in rows.items()
    ]


def _loop_step(pos, actions, landmarks, size):
    E, N, _ = pos.shape
    new = pos.copy()
    rew = np.zeros(E, np.float32)
    for e in range(E):
        for i in range(N):
            x, y = pos[e, i] + MOVES[actions[e, i]]
            if 0 <= x < size and 0 <= y < size:
                new[e, i] = (x, y)
        D = sum(
            min(
                abs(int(new[e, i, 0]) - lx) + abs(int(new[e, i, 1]) - ly)
                for i in range(N)
            )
            for lx, ly in landmarks[e]
        )
        C = sum(
            1
            for i in range(N)
            for j in range(i + 1, N)
            if (new[e, i] == new[e, j]).all()
        )
        rew[e] = -D / 10 - 0.5 * C
    return new, rew


def bench_env(es: list[int], n_reps: int, rng: np.random.Generator) -> list[dict]:
    rows = []
    for E in es:
        pos = rng.integers(0, 5, (E, 3, 2)).astype(np.int32)
        lm = rng.integers(0, 5, (E, 3, 2)).astype(np.int32)
        acts = rng.integers(0, 5, (E, 3)).astype(np.int32)
        t_vec, t_loop = np.inf, np.inf
        for _ in range(n_reps):
            t0 = time.perf_counter()
            for _ in range(20):
                omapl_kernels.coopgrid_step(pos, acts, lm, 5)
            t_vec = min(t_vec, (time.perf_counter() - t0) / 20)
            t0 = time.perf_counter()
            _loop_step(pos, acts, lm, 5)
            t_loop = min(t_loop, time.perf_counter() - t0)
        LOOPS.append(
            _limits.memory_bound(
                "CoopGrid step (dispatcher)",
                f"E={E} games, N=3",
                88.0 * E,
                t_vec,
                LIMITS,
                baseline="Python loop over games",
                ratio=t_loop / t_vec,
                counted="88 bytes per game",
            )
        )
        rows.append(
            dict(
                E=E,
                vectorised_steps_per_s=E / t_vec,
                loop_steps_per_s=E / t_loop,
                vectorised_over_loop=t_loop / t_vec,
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-updates", type=int, default=20)
    ap.add_argument("--n-reps", type=int, default=3)
    ap.add_argument("--es", type=int, nargs="+", default=[256, 4096])
    args = ap.parse_args()
    torch.set_num_threads(1)
    global LIMITS
    LIMITS = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(LIMITS), flush=True)
    rng = np.random.default_rng(0)
    out = {
        "device": device_name(),
        "backend": backend_label(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "one thread; the machine is shared (2 cores, other jobs), so absolute times are inflated; ratios are "
        "from one run",
        "n_updates": args.n_updates,
        "n_reps": args.n_reps,
        "updates": bench_updates(args.n_updates, args.n_reps, rng),
        "env_steps": bench_env(args.es, args.n_reps, rng),
    }
    _limits.attach(out, LIMITS, LOOPS)
    path = Path(__file__).resolve().parent / "results" / "omapl.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
