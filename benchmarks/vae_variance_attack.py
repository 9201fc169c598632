"""Benchmark: protection cost of the variance attack (LA, LE) against PID add-log and ASPL at equal steps.

On the shipped models (``data/03-vae-variance-attack``), protects the same 4 images of one
identity with 30 PGD steps of each method (ASPL: 5 rounds x 6 PGD steps, with 2 x 3 surrogate
fine-tune steps per round, Anti-DreamBooth's schedule at our scale) and reports CPU (process)
seconds per image, the wall seconds, the median V ratio reached, and V-ratio gain per CPU-second;
ratios to LA come from the same run. ``--n-reps`` calls per method: the first one runs under
torch's FLOP counter (it is also the warm-up), the times are the best of the others (the
counter's per-op hook adds time; that call's CPU seconds are kept beside them).

Each method's protection is compute-bound (convolutions of the encoder, and for ASPL the UNet,
forward and backward): its FLOPs are counted by torch's FLOP counter over the first protection
call (``_limits.torch_flops``: convolutions and matrix products only, so the fraction of the
measured fp32 BLAS rate is a lower bound) and recorded as a hot loop with the machine's limits.

Writes ``benchmarks/results/vae_variance_attack.json``.

Usage: ``python benchmarks/vae_variance_attack.py [--n-images 4] [--n-reps 2]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml25 import vae_variance_attack as vaa
from icml25.common import backend_label, device_name, profile_config, repo_root

import _limits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-images", type=int, default=4)
    ap.add_argument("--n-reps", type=int, default=2)
    ap.add_argument(
        "--out",
        default=str(
            repo_root() / "benchmarks" / "results" / "vae_variance_attack.json"
        ),
    )
    a = ap.parse_args()
    profile_config("cpu")
    limits = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(limits), flush=True)
    models = vaa.load_models(repo_root() / "data" / "03-vae-variance-attack")
    vae, unet, n_train = models["vaes"][0], models["unet"], models["n_train"]
    x = torch.from_numpy(
        vaa.synthetic_faces(
            [n_train], a.n_images, vae.config.sample_size, np.random.default_rng(0)
        )[0]
    )
    d = vaa.DEFAULTS
    methods = {
        "la": lambda r: vaa.pgd_protect(
            vae, x, "la", r, n_steps=d.n_steps, align_every=d.n_steps + 1
        )[0],
        "le": lambda r: vaa.pgd_protect(
            vae, x, "le", r, n_steps=d.n_steps, align_every=d.n_steps + 1
        )[0],
        "pid_addlog": lambda r: vaa.pgd_protect(
            vae, x, "pid_addlog", r, n_steps=d.n_steps, align_every=d.n_steps + 1
        )[0],
        "aspl": lambda r: vaa.aspl_protect(
            unet, vae, x, n_train + 1, r, prior_class=n_train
        ),
    }
    rows, flops = {}, {}
    for name, fn in methods.items():
        # repetition 0 runs under the FLOP counter (and warms up); the timings are the
        # best of the others, since the counter's Python hook on every aten op adds
        # time (its CPU seconds are recorded beside them); one repetition: its own time
        best_cpu, best_wall, x_adv = np.inf, np.inf, None
        for rep in range(a.n_reps):
            c0, w0 = time.process_time(), time.perf_counter()
            if rep == 0:
                box = []
                flops[name] = _limits.torch_flops(
                    lambda: box.append(fn(np.random.default_rng(rep)))
                )
                x_adv = box[0]
                counted_cpu = time.process_time() - c0
            else:
                x_adv = fn(np.random.default_rng(rep))
            if rep > 0 or a.n_reps == 1:
                best_cpu = min(best_cpu, time.process_time() - c0)
                best_wall = min(best_wall, time.perf_counter() - w0)
        ratio = vaa.latent_variance_ratio(vae, x, x_adv)
        rows[name] = {
            "cpu_s_per_image": best_cpu / a.n_images,
            "wall_s_per_image": best_wall / a.n_images,
            "flop_counted_rep_cpu_s_per_image": counted_cpu / a.n_images,
            "v_ratio_median": ratio,
            "v_gain_per_cpu_s": (ratio - 1) / best_cpu,
        }
    for name, r in rows.items():
        r["cpu_time_over_la"] = r["cpu_s_per_image"] / rows["la"]["cpu_s_per_image"]
    out = {
        "device": device_name(),
        "backend": backend_label(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "n_images": a.n_images,
        "n_steps": d.n_steps,
        "n_reps": a.n_reps,
        "torch_threads": torch.get_num_threads(),
        "methods": rows,
    }
    loops = [
        _limits.compute_bound(
            f"{name} protection ({'5 rounds x 6 PGD steps + surrogate fine-tunes' if name == 'aspl' else f'{d.n_steps} PGD steps'})",
            f"{a.n_images} images {tuple(x.shape[1:])}",
            flops[name],
            rows[name]["cpu_s_per_image"] * a.n_images,
            limits,
            precision="fp32",
            baseline=None if name == "la" else "LA",
            ratio=None
            if name == "la"
            else rows["la"]["cpu_s_per_image"] / rows[name]["cpu_s_per_image"],
            counted="torch FLOP counter over one protection call (convolutions and matmuls, fwd+bwd)",
        )
        for name in rows
    ]
    _limits.attach(out, limits, loops)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
