"""Train PepMDLM on a p2smi corpus and save the checkpoint (``python -m icml25.peptune.train``).

Used (a) to build the shipped checkpoint ``data/18-peptune/`` on CPU outside CI, (b) by the
chapter (:func:`train_model`) for its short training runs and ablations, (c) by the ``gpu``
profile at larger scale.

Reconstructions (labelled): AdamW ``lr`` 1e-3 with 200 warm-up steps (the paper: 3e-4, 2 500
warm-up steps, for a model 100x larger and far more steps), weight decay 0.075, betas
(0.9, 0.999), gradient clip 1.0 (paper values), fp32 (paper fp64), fixed-length batches (paper:
length-bucketed dynamic batching).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from icml25.checks import check_int, check_real

from .chem import SmilesTokenizer, peptide_corpus, validity
from .model import (
    MaskedDiffusionTransformer,
    load_checkpoint,
    mdlm_loss,
    sample_smiles,
    save_checkpoint,
)
from .schedules import BondDependentSchedule

__all__ = ["encode_corpus", "train_model", "main"]


def encode_corpus(
    smiles: list[str], tokenizer: SmilesTokenizer, length: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids (n, length) int64, bond_mask (n, length) bool)`` as torch tensors."""
    ids, bonds = tokenizer.encode_batch(smiles, length)
    return torch.from_numpy(ids), torch.from_numpy(bonds)


def train_model(
    model: MaskedDiffusionTransformer,
    ids: torch.Tensor,
    bonds: torch.Tensor,
    n_steps: int,
    batch: int = 64,
    lr: float = 1e-3,
    warmup: int = 200,
    weight_decay: float = 0.075,
    uniform_schedule: bool = False,
    invalid_loss: bool = True,
    rng: torch.Generator | None = None,
    max_seconds: float | None = None,
    log_every: int = 50,
    callback: Callable | None = None,
    optimizer: torch.optim.Optimizer | None = None,
) -> list[dict]:
    """AdamW training of ``model`` on ``ids``/``bonds`` for ``n_steps`` steps (or ``max_seconds``).

    Args:
        model: the denoiser (trained in place).
        ids, bonds: (N, L) encoded corpus and its peptide-bond mask.
        n_steps: optimiser steps (>= 1). batch: batch size.
        lr, warmup, weight_decay: AdamW with linear warm-up then constant (paper's shape).
        uniform_schedule: ablation, every token log-linear. invalid_loss: ablation switch.
        rng: torch generator for batches, times and masks (None: torch's global one).
        max_seconds: stop early after this wall time.
        log_every: a log row every this many steps. callback: ``callback(step, model)`` at each log.

    Returns:
        The log: rows ``{"step", "loss", "nll", "invalid", "argmax_valid", "seconds"}`` (means
        over the last ``log_every`` steps).

    Raises:
        ValueError: ``n_steps``/``batch`` < 1, mismatched shapes, non-bool ``bonds``, ``lr <= 0``,
            ``warmup < 0``, ``weight_decay < 0``, ``max_seconds <= 0``.
    """
    n_steps = check_int(n_steps, "n_steps", low=1)
    batch = check_int(batch, "batch", low=1)
    check_real(lr, "lr", low=0.0, low_open=True)
    warmup = check_int(warmup, "warmup", low=0)
    check_real(weight_decay, "weight_decay", low=0.0)
    if max_seconds is not None:
        check_real(max_seconds, "max_seconds", low=0.0, low_open=True)
    if not isinstance(ids, torch.Tensor) or not isinstance(bonds, torch.Tensor):
        raise ValueError("ids and bonds must be torch tensors (see encode_corpus)")
    if ids.shape != bonds.shape or ids.dim() != 2:
        raise ValueError(
            f"ids and bonds must be (N, L) of one shape, got {tuple(ids.shape)}, {tuple(bonds.shape)}"
        )
    if bonds.dtype != torch.bool:
        raise ValueError(
            f"bonds must be a bool tensor (the peptide-bond mask), got {bonds.dtype}"
        )
    g = rng
    sched = BondDependentSchedule(uniform=uniform_schedule)
    opt = optimizer or torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(0.9, 0.999), weight_decay=weight_decay
    )
    warm = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / max(1, warmup))
    )
    model.train()
    log, acc, t0 = [], [], time.perf_counter()
    for step in range(1, n_steps + 1):
        idx = torch.randint(0, ids.shape[0], (batch,), generator=g)
        dev = model.pos.device
        parts = mdlm_loss(
            model,
            ids[idx].to(dev),
            bonds[idx].to(dev),
            sched,
            invalid_loss=invalid_loss,
            rng=g,
        )
        opt.zero_grad(set_to_none=True)
        parts.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        warm.step()
        acc.append(
            (float(parts.loss.detach()), parts.nll, parts.invalid, parts.argmax_valid)
        )
        done = max_seconds is not None and time.perf_counter() - t0 > max_seconds
        if step % log_every == 0 or step == n_steps or done:
            a = np.mean(acc, axis=0)
            log.append(
                {
                    "step": step,
                    "loss": float(a[0]),
                    "nll": float(a[1]),
                    "invalid": float(a[2]),
                    "argmax_valid": float(a[3]),
                    "seconds": time.perf_counter() - t0,
                }
            )
            acc = []
            if callback is not None:
                callback(step, model)
        if done:
            break
    model.eval()
    return log


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> None:
    """CLI: build the corpus, train, evaluate unguided validity periodically, save the checkpoint."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("data/18-peptune/pepmdlm.pt"))
    ap.add_argument("--n-corpus", type=int, default=16_000)
    ap.add_argument("--corpus-seed", type=int, default=1234)
    ap.add_argument("--residues", type=int, nargs=2, default=(3, 5))
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--minutes", type=float, default=40.0)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--eval-n", type=int, default=64)
    ap.add_argument("--eval-steps", type=int, default=32)
    ap.add_argument("--uniform-schedule", action="store_true")
    ap.add_argument("--no-invalid-loss", action="store_true")
    ap.add_argument("--resume", type=Path, default=None)
    ap.add_argument(
        "--corpus-cache",
        type=Path,
        default=None,
        help="text file of the corpus: read if it exists (and matches --n-corpus), else written",
    )
    args = ap.parse_args(argv)

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(args.seed)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    cache = args.corpus_cache
    if (
        cache is not None
        and cache.exists()
        and len(cache.read_text().split()) == args.n_corpus
    ):
        corpus = cache.read_text().split()
    else:
        corpus = peptide_corpus(
            args.n_corpus,
            residues=tuple(args.residues),
            rng=args.corpus_seed,
            max_tokens=args.max_tokens,
        )
        if cache is not None:
            cache.write_text("\n".join(corpus) + "\n")
    print(
        f"corpus: {len(corpus)} peptides in {time.perf_counter() - t_start:.0f} s",
        flush=True,
    )
    if args.resume is not None:
        model, extra = load_checkpoint(args.resume)
        tok = model.tokenizer
    else:
        tok = SmilesTokenizer.from_corpus(corpus)
        model = MaskedDiffusionTransformer(
            tok, d=args.d, layers=args.layers, heads=args.heads, max_len=args.max_tokens
        )
        extra = {}
    ids, bonds = encode_corpus(corpus, tok, args.max_tokens)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    evals: list[dict] = list(extra.get("evals", []))
    prev_steps = int(extra.get("steps", 0))
    g_eval = torch.Generator().manual_seed(10_000 + args.seed)

    def evaluate(step: int, m: MaskedDiffusionTransformer) -> None:
        if step % args.eval_every:
            return
        smi = sample_smiles(
            m, args.eval_n, args.max_tokens, args.eval_steps, rng=g_eval
        )
        row = {
            "step": prev_steps + step,
            "valid_strict": validity(smi, True),
            "valid_lenient": validity(smi, False),
            "seconds": time.perf_counter() - t_start,
        }
        evals.append(row)
        print(json.dumps(row), flush=True)
        _save(m, prev_steps + step)

    log_all: list[dict] = []

    def _save(m, step):
        save_checkpoint(
            m,
            args.out,
            extra={
                "steps": step,
                "evals": evals,
                "log": log_all[-200:],
                "corpus_seed": args.corpus_seed,
                "n_corpus": len(corpus),
                "residues": list(args.residues),
                "max_tokens": args.max_tokens,
                "seed": args.seed,
                "lr": args.lr,
                "batch": args.batch,
                "uniform_schedule": args.uniform_schedule,
                "invalid_loss": not args.no_invalid_loss,
                "cpu_seconds": time.process_time() - cpu_start,
                "wall_seconds": time.perf_counter() - t_start,
            },
        )

    budget = args.minutes * 60 - (time.perf_counter() - t_start)

    def cb2(step, m):
        print(
            json.dumps(
                {"step": prev_steps + step, "t": round(time.perf_counter() - t_start)}
            ),
            flush=True,
        )
        evaluate(step, m)

    log = train_model(
        model,
        ids,
        bonds,
        args.steps,
        batch=args.batch,
        lr=args.lr,
        warmup=0 if args.resume else 200,
        uniform_schedule=args.uniform_schedule,
        invalid_loss=not args.no_invalid_loss,
        rng=torch.Generator().manual_seed(args.seed),
        max_seconds=budget,
        log_every=50,
        callback=cb2,
    )
    log_all.extend(log)
    for row in log[-3:]:
        print(json.dumps(row), flush=True)
    final = log[-1]["step"] if log else 0
    smi = sample_smiles(model, 256, args.max_tokens, args.eval_steps, rng=g_eval)
    evals.append(
        {
            "step": prev_steps + final,
            "valid_strict": validity(smi, True),
            "valid_lenient": validity(smi, False),
            "seconds": time.perf_counter() - t_start,
            "n": 256,
        }
    )
    print(json.dumps(evals[-1]), flush=True)
    _save(model, prev_steps + final)
    print(
        f"saved {args.out} sha256={_sha256(args.out)} cpu_s={time.process_time() - cpu_start:.0f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
