"""Train the chapter's shipped models: ``python -m icml25.vae_variance_attack.train --out data/03-vae-variance-attack``.

Two tiny ``AutoencoderKL`` (VAE 0 for the attack, VAE 1 for transfer) on the synthetic faces of all
``--identities`` identities, and the class-conditional latent UNet on the first ``--n-train``
identities (the rest are held out for the DreamBooth victim). Writes fp16 safetensors, ``models.json``
(configs, scales, the command, seed and CPU seconds) and prints the sha256 of every file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> dict:
    """Command-line entry point (see the module docstring); returns the sha256 of the files written."""
    import numpy as np
    import torch

    from icml25.common import seed_everything

    from .data import synthetic_faces
    from .defaults import DEFAULTS
    from .victim import save_models, train_base_models

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="data/03-vae-variance-attack")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--identities", type=int, default=20)
    ap.add_argument("--n-train", type=int, default=16)
    ap.add_argument("--per-identity", type=int, default=40)
    ap.add_argument("--size", type=int, default=DEFAULTS.image_size)
    ap.add_argument("--vae-steps", type=int, default=160)
    ap.add_argument("--unet-steps", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    rng = seed_everything(a.seed)
    t0 = time.process_time()
    x, y = synthetic_faces(a.identities, a.per_identity, a.size, rng)
    xt = torch.from_numpy(x)
    yt = torch.from_numpy(y)
    models = train_base_models(
        xt,
        yt,
        rng,
        a.n_train,
        vae_steps=a.vae_steps,
        unet_steps=a.unet_steps,
        batch_size=a.batch_size,
        device=a.device,
    )
    meta = {
        "command": "python -m icml25.vae_variance_attack.train "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "seed": a.seed,
        "identities": a.identities,
        "n_train": a.n_train,
        "per_identity": a.per_identity,
        "size": a.size,
        "vae_steps": a.vae_steps,
        "unet_steps": a.unet_steps,
        "batch_size": a.batch_size,
        "cpu_seconds": {k: round(v, 1) for k, v in models["seconds"].items()},
        "total_cpu_s": round(time.process_time() - t0, 1),
        "torch": torch.__version__,
    }
    sums = save_models(
        {
            k: v.cpu()
            if hasattr(v, "cpu")
            else ([m.cpu() for m in v] if isinstance(v, list) else v)
            for k, v in models.items()
        },
        Path(a.out),
        meta,
    )
    print(json.dumps({"meta": meta, "sha256": sums}, indent=1))
    del np
    return sums


if __name__ == "__main__":
    main()
