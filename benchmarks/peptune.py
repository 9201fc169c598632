"""Benchmark: the fused MDLM reverse step against the two-pass reference, and one MCTG iteration.

- Reverse step, for ``B in {12, 50, 512}`` children, ``L = 96``, ``V`` the shipped vocabulary:
  ``kernel`` is the dispatcher :func:`icml25.kernels.mdlm_sampler.reverse_step_kernel` (the CUDA
  kernel on a GPU, the Gumbel-max reference on a CPU); ``reference`` is the same reference called
  directly; ``two_pass`` is MDLM's original step (normalise ``q(z_s | z_t)``, draw with
  ``torch.multinomial``, copy visible tokens). Best of ``n_reps`` blocks.
- MCTG iteration: one select-expand-rollout-score-backup iteration of :class:`icml25.peptune.MCTG`
  with ``M = B`` children, 32 reverse steps, on the shipped checkpoint and the five stand-in
  objectives; its share spent in the denoiser's forward passes.

Times are CPU seconds of this process (``time.process_time``; one thread).

Against the machine's limits (``_limits``, measured in this process after the thread policy):
the reverse step is memory-bound; bytes = the float32 probabilities and Gumbel noise read
(``2 x 4 B L V``) + the int64 tokens read and written (``2 x 8 B L``), over the measured copy
bandwidth. Baseline ratio: the two-pass step's time over the dispatcher's.

Writes ``benchmarks/results/peptune.json``.

Usage: ``python benchmarks/peptune.py [--Bs 12 50 512] [--n-reps 3] [--mctg-reps 1]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml25 import peptune as pt
from icml25.common import backend_label, device_name, profile_config
from icml25.kernels import mdlm_sampler

import _limits

LIMITS: dict = {}  # the machine's limits, measured once in main()


def _time(fn, n: int, n_reps: int) -> float:
    fn()
    best = np.inf
    for _ in range(n_reps):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t0) / n)
    return best


def _two_pass(p, z, t, s, mask_id):
    q = p * (t - s)
    q[..., mask_id] = s
    q = q / q.sum(-1, keepdim=True)
    draw = torch.multinomial(q.reshape(-1, q.shape[-1]), 1).reshape(z.shape)
    return torch.where(z == mask_id, draw, z)


def bench_step(B: int, L: int, V: int, mask_id: int, n_reps: int) -> dict:
    g = torch.Generator().manual_seed(B)
    p = torch.rand(B, L, V, generator=g)
    p[..., mask_id] = 0
    p /= p.sum(-1, keepdim=True)
    z = torch.full((B, L), mask_id)
    z[:, : L // 3] = 3
    u = torch.rand(B, L, V, generator=g).clamp(1e-10, 1 - 1e-7)
    gum = -torch.log(-torch.log(u))
    n = max(3, 2000 // B)
    tk = _time(
        lambda: mdlm_sampler.reverse_step_kernel(p, z, 0.6, 0.55, gum, mask_id),
        n,
        n_reps,
    )
    tr = _time(
        lambda: mdlm_sampler.reverse_step_reference(p, z, 0.6, 0.55, gum, mask_id),
        n,
        n_reps,
    )
    t2 = _time(lambda: _two_pass(p, z, 0.6, 0.55, mask_id), n, n_reps)
    return {
        "B": B,
        "L": L,
        "V": V,
        "kernel_s": tk,
        "reference_s": tr,
        "two_pass_s": t2,
        "reference_over_kernel": tr / tk,
        "two_pass_over_kernel": t2 / tk,
        "hot_loops": [
            _limits.memory_bound(
                "MDLM reverse step, dispatcher (Gumbel-max)",
                f"B={B}, L={L}, V={V}",
                2.0 * 4 * B * L * V + 2.0 * 8 * B * L,
                tk,
                LIMITS,
                baseline="two-pass step (normalise + multinomial)",
                ratio=t2 / tk,
                counted="float32 probabilities + Gumbel noise read, int64 tokens read "
                "and written",
            )
        ],
    }


def bench_mctg(model, objectives, B: int, n_reps: int) -> dict:
    fwd = [0.0]
    orig = model.forward

    def timed(z):
        t0 = time.perf_counter()
        out = orig(z)
        fwd[0] += time.perf_counter() - t0
        return out

    model.forward = timed
    try:
        best, share = np.inf, np.nan
        for r in range(n_reps):
            mc = pt.MCTG(
                model,
                objectives.score_fns(),
                num_children=B,
                num_iter=1,
                n_steps=32,
                front_size=32,
                rng=np.random.default_rng(r),
            )
            fwd[0] = 0.0
            t0 = time.perf_counter()
            mc.iterate()
            dt = time.perf_counter() - t0
            if dt < best:
                best, share = dt, fwd[0] / dt
    finally:
        model.forward = orig
    return {"B": B, "steps": 32, "iteration_s": best, "forward_share": share}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--Bs", type=int, nargs="+", default=[12, 50, 512])
    ap.add_argument("--n-reps", type=int, default=3)
    ap.add_argument("--mctg-reps", type=int, default=1)
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "peptune.json",
    )
    args = ap.parse_args()
    profile_config("cpu")  # one thread, as the chapter's cpu profile
    global LIMITS
    LIMITS = _limits.measure()  # once, after the thread policy is set
    print(_limits.describe(LIMITS), flush=True)
    model, _ = pt.load_shipped()
    tok = model.tokenizer
    corpus = pt.corpus_for(tok, 200, np.random.default_rng(7))
    objectives = pt.PeptideObjectives(n_estimators=30).fit(
        corpus, np.random.default_rng(0)
    )
    L = model.config["max_len"]
    out = {
        "device": device_name(),
        "backend": backend_label(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "threads": torch.get_num_threads(),
        "reverse_step": [],
        "mctg_iteration": [],
    }
    loops = []
    for B in args.Bs:
        out["reverse_step"].append(
            bench_step(B, L, tok.vocab_size, tok.mask_id, args.n_reps)
        )
        loops += out["reverse_step"][-1].pop("hot_loops")
        print(json.dumps(out["reverse_step"][-1]), flush=True)
    _limits.attach(out, LIMITS, loops)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # written after every size, so a run cut short keeps what it measured
    for B in args.Bs:
        out["mctg_iteration"].append(
            bench_mctg(model, objectives, B, 1 if B > 100 else args.mctg_reps)
        )
        print(json.dumps(out["mctg_iteration"][-1]), flush=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
