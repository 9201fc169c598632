"""Benchmark: the fused critic ensemble against a per-member loop, and a PARS update against d3rlpy's TD3PlusBC.

- Ensemble: one critic update (forward, TD-style MSE, backward, Adam step) of
  :class:`icml25.pars.EnsembleCritic` (every member's hidden layer in one batched einsum through
  the :func:`icml25.kernels.pars_kernels.ensemble_layer` dispatcher) against a Python loop over ``E``
  separate ``nn.Sequential`` LayerNorm MLPs of the same shape, for ``E in {1, 4, 10}``, batch 256,
  width 256, two hidden layers (the paper's MuJoCo critic). Best of ``n_reps`` blocks of updates.
- Against d3rlpy: one full PARS offline update (``E = 10``, k = 2, PA on, actor every 2 steps)
  against one d3rlpy ``TD3PlusBC`` update (two critics) of the same width on the same data.

Against the machine's limit (``_limits``, measured once in this process, one thread): the updates
are compute-bound, FLOPs by torch's ``FlopCounterMode`` over one update (matmuls, forward and
backward; LayerNorm, Adam and elementwise work not counted, so the fractions are lower bounds),
per second over the fp32 BLAS rate. Baseline ratios: the per-member loop's time over the fused
ensemble's; d3rlpy TD3+BC's update time over PARS's.

Writes ``benchmarks/results/pars.json``.

Usage: ``python benchmarks/pars.py [--Es 1 4 10] [--n-updates 12] [--n-reps 3]``

Blocks of 12 updates (was 30; an even number, so the actor's every-other-step update is counted
in the same share) keep ``make bench`` under its 10 minutes on the shared 2-core machine, where
this script took 135 s of 1910 (a PARS update alone is about 0.3 s there). Time per update is the
best of the same 3 blocks; ``n_updates`` and ``n_reps`` are recorded in the JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from icml25 import pars
from icml25.common import backend_label, device_name, profile_config

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()
LOOPS: list = []  # hot-loop entries, filled by the measurements


def _time(fn, n_updates: int, n_reps: int) -> float:
    fn()  # warm-up
    best = np.inf
    for _ in range(n_reps):
        t0 = time.perf_counter()
        for _ in range(n_updates):
            fn()
        best = min(best, (time.perf_counter() - t0) / n_updates)
    return best


def bench_ensemble(
    E: int, n_updates: int, n_reps: int, hidden: int = 256, B: int = 256
):
    ds, da = 17, 6
    s, a, y = torch.randn(B, ds), torch.rand(B, da) * 2 - 1, torch.randn(B)
    fused = pars.EnsembleCritic(ds, da, hidden=hidden, n_layers=2, E=E)
    opt_f = torch.optim.Adam(fused.parameters(), lr=3e-4)

    def step_fused():
        loss = ((fused(s, a) - y) ** 2).mean()
        opt_f.zero_grad()
        loss.backward()
        opt_f.step()

    members = [
        nn.Sequential(
            nn.Linear(ds + da, hidden),
            nn.LayerNorm(hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.LayerNorm(hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )
        for _ in range(E)
    ]
    opt_l = torch.optim.Adam([p for m in members for p in m.parameters()], lr=3e-4)
    x = torch.cat([s, a], 1)

    def step_loop():
        loss = sum(((m(x)[:, 0] - y) ** 2).mean() for m in members) / E
        opt_l.zero_grad()
        loss.backward()
        opt_l.step()

    t_f, t_l = _time(step_fused, n_updates, n_reps), _time(step_loop, n_updates, n_reps)
    size = f"E={E}, batch {B}, width {hidden}"
    LOOPS.append(
        _limits.compute_bound(
            "fused critic ensemble update",
            size,
            _limits.torch_flops(step_fused),
            t_f,
            LIMITS,
            precision="fp32",
            baseline="per-member loop",
            ratio=t_l / t_f,
            counted="torch FlopCounterMode (matmuls, fwd+bwd)",
        )
    )
    LOOPS.append(
        _limits.compute_bound(
            "per-member critic loop update",
            size,
            _limits.torch_flops(step_loop),
            t_l,
            LIMITS,
            precision="fp32",
            counted="torch FlopCounterMode (matmuls, fwd+bwd)",
        )
    )
    return dict(
        E=E,
        fused_updates_per_s=1 / t_f,
        loop_updates_per_s=1 / t_l,
        loop_over_fused=t_l / t_f,
    )


def bench_vs_d3rlpy(n_updates: int, n_reps: int, rng):
    env = pars.PointMazeLite(step_size=0.25)
    buf = pars.generate_dataset(
        env, pars.waypoint_controller, 0.5, 20_000, "medium", rng
    )
    agent = pars.PARS(
        pars.PARSConfig(
            2, 2, hidden=256, E=10, k_target=2, c_reward=100.0, alpha=1e-3, q_min=0.0
        ),
        rng,
    )
    t_pars = _time(
        lambda: agent.offline_update(buf.sample(256, rng)), n_updates, n_reps
    )
    algo = pars.d3rlpy_train("td3plusbc", buf, 10, rng, hidden=(256, 256))
    ds = pars.to_mdp_dataset(buf)
    from d3rlpy.dataset import TransitionMiniBatch

    def step_d3():
        eps = [ds.sample_transition() for _ in range(256)]
        algo.update(TransitionMiniBatch.from_transitions(eps))

    # d3rlpy's own sampling is part of its update loop; time it
    # separately and subtract it
    t_sample = _time(
        lambda: TransitionMiniBatch.from_transitions(
            [ds.sample_transition() for _ in range(256)]
        ),
        n_updates,
        n_reps,
    )
    t_d3 = _time(step_d3, n_updates, n_reps) - t_sample
    LOOPS.append(
        _limits.compute_bound(
            "PARS offline update",
            "E=10, batch 256, width 256",
            _limits.torch_flops(lambda: agent.offline_update(buf.sample(256, rng))),
            t_pars,
            LIMITS,
            precision="fp32",
            baseline="d3rlpy TD3PlusBC update",
            ratio=t_d3 / t_pars,
            counted="torch FlopCounterMode (matmuls, fwd+bwd)",
        )
    )
    return dict(
        E=10,
        pars_ms_per_update=1e3 * t_pars,
        d3rlpy_td3plusbc_ms_per_update=1e3 * t_d3,
        d3rlpy_sampling_ms=1e3 * t_sample,
        pars_over_d3rlpy=t_pars / t_d3,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--Es", type=int, nargs="+", default=[1, 4, 10])
    ap.add_argument("--n-updates", type=int, default=12)
    ap.add_argument("--n-reps", type=int, default=3)
    args = ap.parse_args()
    profile_config("cpu")  # one thread, as the cpu profile
    global LIMITS
    LIMITS = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(LIMITS), flush=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    out = {
        "device": device_name(),
        "backend": backend_label(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "threads": torch.get_num_threads(),
        "n_updates": args.n_updates,
        "n_reps": args.n_reps,
        "ensemble": [bench_ensemble(E, args.n_updates, args.n_reps) for E in args.Es],
        "vs_d3rlpy": bench_vs_d3rlpy(args.n_updates, args.n_reps, rng),
    }
    _limits.attach(out, LIMITS, LOOPS)
    path = Path(__file__).resolve().parent / "results" / "pars.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
