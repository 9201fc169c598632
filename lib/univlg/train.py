"""Train the shipped weights of chapter 08: ``python -m icml25.univlg.train --out DIR``.

Renders the training sets (seeded, disjoint from the chapter's test scenes, which use the
notebook's ``SEED``), pretrains the 2D backbone on the 2D set's dense labels, then trains the
variants the chapter evaluates, each for at most ``--cpu-seconds`` of process CPU time:

- ``full``: UniVLG, 3D scenes co-trained with lifted 2D images;
- ``no3d``: the same without 3D layers (2D features unprojected);
- ``box``: the box decoder, same data;
- ``scarce_3donly`` / ``scarce_cotrain``: ``--n-scarce`` 3D scenes alone / with the 2D set.

``--variants`` picks a subset (so two processes can share the work) and ``--merge`` joins their
files into ``univlg_weights.pt`` (fp16) with a manifest.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

__all__ = ["main"]

VARIANTS = ("full", "no3d", "box", "scarce_3donly", "scarce_cotrain")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring). Returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="data/08-univlg")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--n-scenes", type=int, default=400)
    ap.add_argument("--n-scarce", type=int, default=100)
    ap.add_argument("--n-2d", type=int, default=600)
    ap.add_argument("--n-steps", type=int, default=3000)
    ap.add_argument(
        "--cpu-seconds",
        type=str,
        default="300",
        help="CPU-second limit per variant (one value, or one per variant, comma-separated)",
    )
    ap.add_argument("--pretrain-steps", type=int, default=150)
    ap.add_argument("--data-seed", type=int, default=1000)
    ap.add_argument(
        "--n-val", type=int, default=60, help="validation scenes (a seed of their own)"
    )
    ap.add_argument(
        "--merge",
        nargs="*",
        default=None,
        help="partial files to merge into univlg_weights.pt",
    )
    a = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from icml25.common import load_minilm
    from icml25.univlg import experiments as ex
    from icml25.univlg.data import Synthetic2DRef, SyntheticRGBDScenes
    from icml25.univlg.model import Backbone2D, UniVLG, UniVLGConfig

    out = Path(a.out)
    if a.merge is not None:
        blobs = [torch.load(p, map_location="cpu", weights_only=True) for p in a.merge]
        # every partial run pretrains the same backbone (same seeds, one thread)
        for b in blobs[1:]:
            if any(
                not torch.equal(b["backbone"][k], blobs[0]["backbone"][k])
                for k in blobs[0]["backbone"]
            ):
                raise SystemExit(
                    "the partial runs' backbones differ: rerun them with the same --data-seed and sizes"
                )
        merged = {
            "backbone": blobs[0]["backbone"],
            "variants": {},
            "meta": {"runs": []},
        }
        for b in blobs:
            merged["variants"].update(b["variants"])
            merged["meta"]["runs"].append(b["meta"])
        path = out / "univlg_weights.pt"
        torch.save(merged, path)
        print(
            json.dumps(
                {
                    "path": str(path),
                    "bytes": path.stat().st_size,
                    "sha256": ex.file_sha256(path),
                    "variants": sorted(merged["variants"]),
                },
                indent=1,
            )
        )
        return 0
    t0, c0 = time.time(), time.process_time()
    seed = int(a.data_seed)
    rng = np.random.default_rng(seed)
    ds3 = SyntheticRGBDScenes(a.n_scenes, 3, 32, rng)
    ds2 = Synthetic2DRef(a.n_2d, 32, rng)
    minilm = load_minilm()
    torch.manual_seed(seed)
    backbone = Backbone2D(64)
    pre = ex.pretrain_backbone(
        backbone, ds2, a.pretrain_steps, np.random.default_rng(seed + 1)
    )
    c3, c2 = ex.build_cache(ds3, backbone), ex.build_cache(ds2, backbone)
    scarce = ex.build_cache(
        SyntheticRGBDScenes(a.n_scarce, 3, 32, np.random.default_rng(seed + 2)),
        backbone,
    )
    val = ex.build_cache(
        SyntheticRGBDScenes(a.n_val, 3, 32, np.random.default_rng(seed + 3)), backbone
    )
    setup = {
        "full": (dict(), [c3, c2]),
        "no3d": (dict(use_3d=False), [c3, c2]),
        "box": (dict(decoder="box"), [c3, c2]),
        "scarce_3donly": (dict(), [scarce]),
        "scarce_cotrain": (dict(), [scarce, c2]),
    }
    models, meta = (
        {},
        {
            "command": " ".join(
                [
                    "python -m icml25.univlg.train",
                    *(argv if argv is not None else sys.argv[1:]),
                ]
            ),
            "data_seed": seed,
            "n_scenes": a.n_scenes,
            "n_scarce": a.n_scarce,
            "n_2d": a.n_2d,
            "pretrain_final_loss": pre[-1],
            "variants": {},
        },
    )
    names = a.variants.split(",")
    limits = [float(x) for x in a.cpu_seconds.split(",")]
    limits = limits * len(names) if len(limits) == 1 else limits
    if len(limits) != len(names):
        raise SystemExit("--cpu-seconds: give one value or one per variant")
    for name, limit in zip(names, limits):
        kw, sources = setup[name]
        torch.manual_seed(seed + 10 + VARIANTS.index(name))
        m = UniVLG(UniVLGConfig(**kw), minilm)
        m.backbone = backbone
        h = ex.train_grounding(
            m,
            sources,
            a.n_steps,
            np.random.default_rng(seed + 20 + VARIANTS.index(name)),
            time_limit_s=limit,
        )
        r = ex.evaluate_grounding(m, val)
        rel = np.array([k == "relational" for k in r["kind"]])
        meta["variants"][name] = {
            "steps": h["steps"],
            "cpu_s": round(h["cpu_s"], 1),
            "final_loss": float(np.mean(h["loss"][-20:])),
            "val_acc25": r["acc25"],
            "val_acc50": r["acc50"],
            "val_rel_acc25": float((r["iou"][rel] >= 0.25).mean()),
        }
        print(name, json.dumps(meta["variants"][name]), flush=True)
        models[name] = m
        meta["wall_s"] = round(time.time() - t0, 1)
        meta["cpu_s"] = round(time.process_time() - c0, 1)
        path = out / f"partial_{a.variants.replace(',', '+')}.pt"
        # after every variant: a killed run keeps its work
        sha = ex.save_weights(path, backbone, models, meta)
    print(
        json.dumps(
            {
                "path": str(path),
                "sha256": sha,
                **{k: v for k, v in meta.items() if k != "variants"},
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
