"""The victim: a tiny latent diffusion model built from diffusers parts, trained by us.

The paper fine-tunes Stable Diffusion (its VAE ``AutoencoderKL``, UNet and text encoder) with
DreamBooth. No SD weights are reachable offline, so this chapter trains a miniature of the same
pipeline (our construction): a small :class:`diffusers.AutoencoderKL` (KL weight 1e-6, as SD's
VAE is nearly deterministic), a class-conditional latent :class:`diffusers.UNet2DModel` on its
scaled latents with a :class:`diffusers.DDPMScheduler`, and DDIM sampling. Class labels replace
prompts: ids ``0 .. n_train - 1`` are the pre-training identities, ``n_train`` is the generic
"a face" class (the DreamBooth class prior) and ``n_train + 1`` is the new token ``sks``, which
:func:`dreambooth_finetune` initialises from the "face" embedding and binds to the protected images.
The latents of the fine-tune are ``latent_dist.sample() * scaling_factor`` as in diffusers'
``train_dreambooth.py`` (or ``.mode()``, the attacker's way around a variance attack).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from icml25.checks import (
    check_budget,
    check_choice,
    check_int,
    check_real,
    check_rng,
    check_tensor,
)

from ._checks import _check_images
from .defaults import DEFAULTS

__all__ = [
    "make_vae",
    "make_unet",
    "make_scheduler",
    "train_vae",
    "train_unet",
    "train_base_models",
    "dreambooth_finetune",
    "generate",
    "save_models",
    "load_models",
    "latent_scale",
]


def _torch_gen(rng: np.random.Generator) -> Any:
    import torch

    return torch.Generator().manual_seed(int(rng.integers(2**62)))


def make_vae(
    channels: tuple[int, ...] = DEFAULTS.vae_channels,
    latent_channels: int = DEFAULTS.latent_channels,
    image_size: int = DEFAULTS.image_size,
    scaling_factor: float = 1.0,
) -> Any:
    """A diffusers ``AutoencoderKL`` with ``len(channels)`` levels (``2**(len - 1)`` down-sampling).

    Args:
        channels: ``block_out_channels`` (each a multiple of 8: GroupNorm uses 8 groups).
        latent_channels: latent channels (SD: 4).
        image_size: input side; the latent side is ``image_size / 2**(len(channels) - 1)``.
        scaling_factor: the latent scale stored in the config (SD1.x: 0.18215).

    Raises:
        ValueError: channels empty or not multiples of 8, sizes < 1.
    """
    from diffusers import AutoencoderKL

    chans = tuple(check_int(c, "channels", low=8) for c in channels)
    if not chans or any(c % 8 for c in chans):
        raise ValueError(f"channels must be non-empty multiples of 8, got {channels!r}")
    n = len(chans)
    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * n,
        up_block_types=("UpDecoderBlock2D",) * n,
        block_out_channels=chans,
        layers_per_block=1,
        latent_channels=check_int(latent_channels, "latent_channels", low=1),
        norm_num_groups=8,
        sample_size=check_int(image_size, "image_size", low=8),
        scaling_factor=check_real(
            scaling_factor, "scaling_factor", low=0.0, low_open=True
        ),
    )


def make_unet(
    n_classes: int,
    latent_channels: int = DEFAULTS.latent_channels,
    latent_size: int = 8,
    channels: tuple[int, ...] = (32, 64),
) -> Any:
    """A class-conditional latent ``UNet2DModel`` (attention at the coarse level).

    Args:
        n_classes: number of class embeddings (pre-training identities + "face" + ``sks``).
        latent_channels, latent_size: the latent tensor's shape ``(C, s, s)``.
        channels: ``block_out_channels`` (multiples of 8).

    Raises:
        ValueError: bad sizes.
    """
    from diffusers import UNet2DModel

    chans = tuple(check_int(c, "channels", low=8) for c in channels)
    if len(chans) < 2 or any(c % 8 for c in chans):
        raise ValueError(f"channels must be >= 2 multiples of 8, got {channels!r}")
    down = ("DownBlock2D",) * (len(chans) - 1) + ("AttnDownBlock2D",)
    up = ("AttnUpBlock2D",) + ("UpBlock2D",) * (len(chans) - 1)
    return UNet2DModel(
        sample_size=check_int(latent_size, "latent_size", low=2),
        in_channels=check_int(latent_channels, "latent_channels", low=1),
        out_channels=latent_channels,
        block_out_channels=chans,
        layers_per_block=1,
        down_block_types=down,
        up_block_types=up,
        num_class_embeds=check_int(n_classes, "n_classes", low=1),
        norm_num_groups=8,
    )


def make_scheduler() -> Any:
    """The ``DDPMScheduler`` of the victim (1000 steps, cosine schedule, epsilon prediction)."""
    from diffusers import DDPMScheduler

    return DDPMScheduler(
        num_train_timesteps=1000,
        beta_schedule="squaredcos_cap_v2",
        prediction_type="epsilon",
    )


def train_vae(
    images: Any,
    rng: np.random.Generator,
    channels: tuple[int, ...] = DEFAULTS.vae_channels,
    n_steps: int = 500,
    batch_size: int = 32,
    lr: float = 2e-3,
    kl_weight: float = 1e-6,
    device: str = "cpu",
) -> Any:
    """Train a tiny ``AutoencoderKL`` on ``images`` (MSE on [-1, 1] plus ``kl_weight`` KL), then set
    its ``scaling_factor`` to ``1 / std`` of the sampled latents (how SD's 0.18215 was chosen).

    Args:
        images: ``(N, 3, H, W)`` float tensor in [0, 1].
        rng: generator for the initialisation, batches and posterior samples.
        channels, n_steps, batch_size, lr, kl_weight: architecture and optimiser settings.
        device: ``"cpu"`` or ``"cuda"`` (from ``icml25.common.torch_device``).

    Returns:
        the trained model in eval mode, on ``device``.

    Raises:
        ValueError: bad images or settings; TypeError: ``rng`` not a Generator.
    """
    import torch

    rng = check_rng(rng)
    x = _check_images(images, "images").to(device)
    n_steps = check_int(n_steps, "n_steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    torch.manual_seed(int(rng.integers(2**62)))
    vae = make_vae(channels, image_size=int(x.shape[-1])).to(device)
    opt = torch.optim.Adam(
        vae.parameters(), lr=check_real(lr, "lr", low=0.0, low_open=True)
    )
    kl_weight = check_real(kl_weight, "kl_weight", low=0.0)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, n_steps)
    g = _torch_gen(rng)
    vae.train()
    for _ in range(n_steps):
        idx = torch.from_numpy(rng.integers(0, x.shape[0], size=batch_size)).to(device)
        xb = 2 * x[idx] - 1
        post = vae.encode(xb).latent_dist
        z = post.mean + post.std * torch.randn(post.mean.shape, generator=g).to(device)
        rec = vae.decode(z).sample
        loss = torch.mean((rec - xb) ** 2) + kl_weight * post.kl().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    vae.eval()
    with torch.no_grad():
        z = vae.encode(2 * x[:512] - 1).latent_dist.sample(generator=None)
    vae.register_to_config(scaling_factor=float(1.0 / z.std()))
    return vae


def latent_scale(vae: Any) -> float:
    """The VAE's latent scaling factor (``vae.config.scaling_factor``)."""
    return float(vae.config.scaling_factor)


def _encode_latents(vae: Any, x: Any, latents: str, g: Any) -> Any:
    """``latent_dist.sample() * s`` (DreamBooth) or ``latent_dist.mode() * s`` for ``x`` in [0, 1]."""
    import torch

    with torch.no_grad():
        post = vae.encode(2 * x - 1).latent_dist
        if latents == "sample":
            z = post.mean + post.std * torch.randn(post.mean.shape, generator=g).to(
                x.device
            )
        else:
            z = post.mode()
    return z * latent_scale(vae)


def _denoise_loss(unet: Any, sched: Any, z: Any, labels: Any, g: Any) -> Any:
    """The DDPM epsilon-prediction loss ``E ||eps - eps_theta(sqrt(abar) z + sqrt(1 - abar) eps, t, c)||^2``."""
    import torch

    dev = z.device
    noise = torch.randn(z.shape, generator=g).to(dev)
    t = torch.randint(
        0, sched.config.num_train_timesteps, (z.shape[0],), generator=g
    ).to(dev)
    zt = sched.add_noise(z, noise, t)
    pred = unet(zt, t, class_labels=labels).sample
    return torch.mean((pred - noise) ** 2)


def train_unet(
    vae: Any,
    images: Any,
    labels: Any,
    rng: np.random.Generator,
    n_train: int,
    channels: tuple[int, ...] = (32, 64),
    n_steps: int = 1500,
    batch_size: int = 64,
    lr: float = 1e-3,
    p_face: float = 0.3,
    device: str = "cpu",
) -> Any:
    """Pre-train the class-conditional latent UNet on ``vae``'s sampled latents of ``images``.

    A fraction ``p_face`` of each batch is labelled with the generic class ``n_train`` ("a face"),
    the rest with its identity; class ``n_train + 1`` (``sks``) is left for the fine-tune.

    Args:
        vae: the trained ``AutoencoderKL``; images: ``(N, 3, H, W)`` in [0, 1];
        labels: ``(N,)`` int identities in ``[0, n_train)``; rng: generator.
        n_train: number of pre-training identities.
        channels, n_steps, batch_size, lr, p_face, device: settings.

    Returns:
        the trained ``UNet2DModel`` in eval mode.

    Raises:
        ValueError: labels out of range or of the wrong length, bad settings.
    """
    import torch

    rng = check_rng(rng)
    x = _check_images(images, "images").to(device)
    n_train = check_int(n_train, "n_train", low=1)
    lab = (
        check_tensor(labels, "labels", ndim=1, floating=False)
        .to(torch.int64)
        .to(device)
    )
    if lab.shape[0] != x.shape[0] or int(lab.min()) < 0 or int(lab.max()) >= n_train:
        raise ValueError(f"labels must be {x.shape[0]} ints in [0, {n_train})")
    n_steps = check_int(n_steps, "n_steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    p_face = check_real(p_face, "p_face", low=0.0, high=1.0)
    g = _torch_gen(rng)
    torch.manual_seed(int(rng.integers(2**62)))
    z_all = torch.cat(
        [
            _encode_latents(vae, x[i : i + 256], "mode", g)
            for i in range(0, x.shape[0], 256)
        ]
    )
    std = torch.cat(
        [
            vae.encode(2 * x[i : i + 256] - 1).latent_dist.std.detach()
            for i in range(0, x.shape[0], 256)
        ]
    )
    std = std * latent_scale(vae)
    unet = make_unet(
        n_train + 2, int(z_all.shape[1]), int(z_all.shape[-1]), channels
    ).to(device)
    sched = make_scheduler()
    opt = torch.optim.AdamW(
        unet.parameters(), lr=check_real(lr, "lr", low=0.0, low_open=True)
    )
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, n_steps)
    unet.train()
    for _ in range(n_steps):
        idx = torch.from_numpy(rng.integers(0, x.shape[0], size=batch_size)).to(device)
        z = z_all[idx] + std[idx] * torch.randn(z_all[idx].shape, generator=g).to(
            device
        )
        c = lab[idx].clone()
        c[torch.from_numpy(rng.random(batch_size) < p_face).to(device)] = n_train
        loss = _denoise_loss(unet, sched, z, c, g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        cos.step()
    unet.eval()
    return unet


def train_base_models(
    images: Any,
    labels: Any,
    rng: np.random.Generator,
    n_train: int,
    n_vaes: int = 2,
    vae_channels: tuple[int, ...] = DEFAULTS.vae_channels,
    vae_steps: int = 500,
    unet_channels: tuple[int, ...] = (32, 64),
    unet_steps: int = 1200,
    batch_size: int = 32,
    device: str = "cpu",
) -> dict[str, Any]:
    """Train ``n_vaes`` VAEs (independent initialisations and batches) on all ``images`` and the
    UNet on VAE 0's latents of the identities ``< n_train`` (the others are held out).

    Args:
        images, labels: the pre-training faces (identities in ``[0, n_train)``).
        rng: generator; each model gets a child stream (``rng.spawn``).
        n_train, n_vaes, vae_channels, vae_steps, unet_channels, unet_steps, batch_size, device: settings.

    Returns:
        ``{"vaes": [AutoencoderKL, ...], "unet": UNet2DModel, "n_train": int, "seconds": {...}}``.

    Raises:
        ValueError: bad settings (see :func:`train_vae`, :func:`train_unet`).
    """
    import torch

    rng = check_rng(rng)
    n_vaes = check_int(n_vaes, "n_vaes", low=1)
    x = _check_images(images, "images")
    check_budget(
        f"train_base_models(vae_steps={vae_steps}, unet_steps={unet_steps})",
        n_operations=float(vae_steps * n_vaes + unet_steps) * 64 * x[0].numel() * 2e3,
    )
    secs: dict[str, float] = {}
    vaes = []
    for k, child in enumerate(rng.spawn(n_vaes)):
        t0 = time.process_time()
        vaes.append(
            train_vae(
                x,
                child,
                vae_channels,
                n_steps=vae_steps,
                batch_size=batch_size,
                device=device,
            )
        )
        secs[f"vae{k}_cpu_s"] = time.process_time() - t0
    lab = check_tensor(labels, "labels", ndim=1, floating=False).to(torch.int64)
    keep = lab < n_train  # the UNet never sees the held-out identities
    t0 = time.process_time()
    unet = train_unet(
        vaes[0],
        x[keep],
        lab[keep],
        rng.spawn(1)[0],
        n_train,
        unet_channels,
        n_steps=unet_steps,
        batch_size=batch_size,
        device=device,
    )
    secs["unet_cpu_s"] = time.process_time() - t0
    return {"vaes": vaes, "unet": unet, "n_train": int(n_train), "seconds": secs}


def dreambooth_finetune(
    unet: Any,
    vae: Any,
    images: Any,
    class_id: int,
    n_steps: int,
    rng: np.random.Generator,
    latents: str = "sample",
    lr: float = DEFAULTS.db_lr,
    prior_class: int | None = None,
    batch_size: int = 4,
) -> Any:
    """DreamBooth-style fine-tune of a copy of ``unet`` on a few (protected) images (the attacker).

    The token ``class_id`` starts from the embedding of ``prior_class`` (the generic "face" class,
    as DreamBooth's "a sks person" starts from "person"); every UNet weight is then trained on
    the denoising loss of the images' latents, ``latent_dist.sample() * s`` (``latents="sample"``,
    diffusers' ``train_dreambooth.py``) or ``latent_dist.mode() * s`` (``"mode"``). Prior
    preservation is omitted (our simplification). fp32 throughout (large sigma overflows fp16).

    Args:
        unet: the pre-trained ``UNet2DModel`` (not modified); vae: the attacker's VAE.
        images: ``(B, 3, H, W)`` in [0, 1], the images to learn.
        class_id: the new token's class index; prior_class: defaults to ``class_id - 1``.
        n_steps: optimiser steps (>= 1); rng: generator; latents: ``"sample"`` or ``"mode"``.
        lr: AdamW learning rate; batch_size: images per step (drawn with replacement).

    Returns:
        the fine-tuned copy in eval mode.

    Raises:
        ValueError: bad images, class ids out of range, unknown ``latents``, ``n_steps`` < 1.
    """
    import copy

    import torch

    rng = check_rng(rng)
    x = _check_images(images, "images")
    n_cls = int(unet.config.num_class_embeds)
    class_id = check_int(class_id, "class_id", low=0, high=n_cls - 1)
    prior = (
        class_id - 1
        if prior_class is None
        else check_int(prior_class, "prior_class", low=0, high=n_cls - 1)
    )
    latents = check_choice(latents, "latents", ("sample", "mode"))
    n_steps = check_int(n_steps, "n_steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    dev = next(unet.parameters()).device
    x = x.to(dev)
    g = _torch_gen(rng)
    model = copy.deepcopy(unet)
    with torch.no_grad():
        model.class_embedding.weight[class_id] = model.class_embedding.weight[prior]
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    sched = make_scheduler()
    model.train()
    for _ in range(n_steps):
        idx = torch.from_numpy(rng.integers(0, x.shape[0], size=batch_size)).to(dev)
        z = _encode_latents(vae, x[idx], latents, g)
        loss = _denoise_loss(
            model, sched, z, torch.full((batch_size,), class_id, device=dev), g
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model


def generate(
    unet: Any,
    vae: Any,
    class_id: int,
    n: int,
    rng: np.random.Generator,
    n_steps: int = DEFAULTS.ddim_steps,
) -> Any:
    """Sample ``n`` images of class ``class_id`` with DDIM (eta = 0) and decode them.

    Returns:
        ``(n, 3, H, W)`` float32 tensor in [0, 1] (decoded ``z / s``, clipped).

    Raises:
        ValueError: ``class_id`` out of range, ``n`` or ``n_steps`` < 1.
    """
    import torch
    from diffusers import DDIMScheduler

    rng = check_rng(rng)
    n = check_int(n, "n", low=1)
    n_steps = check_int(n_steps, "n_steps", low=1)
    class_id = check_int(
        class_id, "class_id", low=0, high=int(unet.config.num_class_embeds) - 1
    )
    dev = next(unet.parameters()).device
    ddim = DDIMScheduler.from_config(make_scheduler().config)
    ddim.set_timesteps(n_steps)
    g = _torch_gen(rng)
    c, s = int(unet.config.in_channels), int(unet.config.sample_size)
    z = torch.randn((n, c, s, s), generator=g).to(dev)
    labels = torch.full((n,), class_id, device=dev)
    with torch.no_grad():
        for t in ddim.timesteps:
            eps = unet(z, t, class_labels=labels).sample
            z = ddim.step(eps, t, z, eta=0.0).prev_sample
        img = vae.decode(z / latent_scale(vae)).sample
    return ((img + 1) / 2).clamp(0, 1).float()


def save_models(
    models: dict[str, Any], out: str | Path, meta: dict[str, Any] | None = None
) -> dict[str, str]:
    """Write the VAEs and the UNet as fp16 safetensors plus ``models.json`` (configs, scales, meta).

    Returns:
        file name -> sha256 of every file written.
    """
    import hashlib

    import torch
    from safetensors.torch import save_file

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "vaes": [],
        "unet": None,
        "n_train": models["n_train"],
        "meta": meta or {},
    }
    files = {}
    for k, vae in enumerate(models["vaes"]):
        name = f"vae{k}.safetensors"
        save_file(
            {
                n: t.detach().to(torch.float16).cpu().contiguous()
                for n, t in vae.state_dict().items()
            },
            out / name,
        )
        record["vaes"].append(
            {
                "file": name,
                "config": {
                    k2: (list(v) if isinstance(v, tuple) else v)
                    for k2, v in dict(vae.config).items()
                    if not k2.startswith("_")
                },
            }
        )
        files[name] = name
    save_file(
        {
            n: t.detach().to(torch.float16).cpu().contiguous()
            for n, t in models["unet"].state_dict().items()
        },
        out / "unet.safetensors",
    )
    record["unet"] = {
        "file": "unet.safetensors",
        "config": {
            k2: (list(v) if isinstance(v, tuple) else v)
            for k2, v in dict(models["unet"].config).items()
            if not k2.startswith("_")
        },
    }
    (out / "models.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.glob("*"))
        if p.suffix in (".safetensors", ".json")
    }


def load_models(folder: str | Path, device: str = "cpu") -> dict[str, Any]:
    """Load what :func:`save_models` wrote (fp16 on disk, fp32 in memory), in eval mode.

    Returns:
        ``{"vaes": [...], "unet": ..., "n_train": int, "meta": dict}``.

    Raises:
        FileNotFoundError: no ``models.json`` in ``folder``.
    """
    import torch
    from diffusers import AutoencoderKL, UNet2DModel
    from safetensors.numpy import load_file

    def f32(arrays: dict) -> dict:
        # float16 -> float32 in NumPy (exact): torch's half conversion asks cpuinfo for
        # F16C, which fails where /proc and /sys are hidden (the
        # classroom's grading sandbox)
        return {
            n: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
            for n, a in arrays.items()
        }

    folder = Path(folder)
    if not (folder / "models.json").exists():
        raise FileNotFoundError(
            f"no models.json in {folder}: train with `python -m icml25.vae_variance_attack.train`"
        )
    rec = json.loads((folder / "models.json").read_text())
    vaes = []
    for v in rec["vaes"]:
        m = AutoencoderKL.from_config(v["config"])
        m.load_state_dict(f32(load_file(folder / v["file"])))
        vaes.append(m.to(device).eval().requires_grad_(False))
    u = UNet2DModel.from_config(rec["unet"]["config"])
    u.load_state_dict(f32(load_file(folder / rec["unet"]["file"])))
    return {
        "vaes": vaes,
        "unet": u.to(device).eval(),
        "n_train": int(rec["n_train"]),
        "meta": rec.get("meta", {}),
    }
