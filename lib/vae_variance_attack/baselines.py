"""UNet-loss baselines: AdvDM and Anti-DreamBooth's ASPL (our code; no maintained library exists).

Both ascend the latent-diffusion denoising loss ``E_{t, e} ||e - e_theta(z_t(x + delta), t, c)||^2``
with ``z = E(x + delta).sample() * s`` by sign PGD under the same projection as the variance attack:

- :func:`advdm_protect` (Liang et al. 2023): against a fixed pre-trained UNet.
- :func:`aspl_protect` (Van Le et al. 2023, Anti-DreamBooth's "alternating surrogate and
  perturbation learning"): each round copies the surrogate, fine-tunes the copy on the clean
  images, takes PGD steps against the copy, then fine-tunes the surrogate on the perturbed
  images. Round counts and steps: :data:`DEFAULTS` (``aspl_*``; Anti-DreamBooth uses 50 rounds x
  (3 fine-tune, 6 PGD) steps at SD scale; ours is 5 x (3, 6) = 30 PGD steps, to match the paper's 30).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from icml25.checks import check_int, check_positive, check_rng
from icml25.kernels import pgd_step

from ._checks import _check_images
from .defaults import DEFAULTS
from .method import _encode
from .victim import (
    _denoise_loss,
    _encode_latents,
    _torch_gen,
    latent_scale,
    make_scheduler,
)

__all__ = ["advdm_protect", "aspl_protect"]


def _unet_pgd(
    unet: Any,
    vae: Any,
    x: Any,
    delta: Any,
    class_id: int,
    eps: float,
    alpha: float,
    n_steps: int,
    g: Any,
) -> Any:
    """``n_steps`` sign-ascent steps of the denoising loss of ``unet`` w.r.t. ``delta``."""
    import torch

    sched = make_scheduler()
    labels = torch.full((x.shape[0],), class_id, device=x.device)
    for _ in range(n_steps):
        d = delta.detach().requires_grad_(True)
        mu, lv = _encode(vae, x + d)
        z = (
            mu + torch.exp(0.5 * lv) * torch.randn(mu.shape, generator=g).to(x.device)
        ) * latent_scale(vae)
        loss = _denoise_loss(unet, sched, z, labels, g)
        (grad,) = torch.autograd.grad(loss, d)
        delta = pgd_step.pgd_step(delta, grad, x, eps, alpha, validate=False)
    return delta


def _finetune_steps(
    unet: Any,
    vae: Any,
    x: Any,
    class_id: int,
    n_steps: int,
    lr: float,
    g: Any,
    rng: np.random.Generator,
) -> None:
    import torch

    opt = torch.optim.AdamW(unet.parameters(), lr=lr)
    sched = make_scheduler()
    labels = torch.full((x.shape[0],), class_id, device=x.device)
    unet.train()
    for _ in range(n_steps):
        z = _encode_latents(vae, x, "sample", g)
        loss = _denoise_loss(unet, sched, z, labels, g)
        opt.zero_grad()
        loss.backward()
        opt.step()
    unet.eval()


def _start(
    unet: Any, images: Any, class_id: int, rng: np.random.Generator, eps: float
) -> tuple[Any, ...]:
    import torch

    x = _check_images(images, "images")
    rng = check_rng(rng)
    n_cls = int(unet.config.num_class_embeds)
    class_id = check_int(class_id, "class_id", low=0, high=n_cls - 1)
    dev = next(unet.parameters()).device
    x = x.to(dev)
    u = torch.from_numpy(
        rng.uniform(-eps, eps, size=tuple(x.shape)).astype(np.float32)
    ).to(dev)
    return x, torch.clamp(u, -x, 1 - x), class_id, _torch_gen(rng)


def advdm_protect(
    unet: Any,
    vae: Any,
    images: Any,
    class_id: int,
    rng: np.random.Generator,
    eps: float = DEFAULTS.eps,
    alpha: float = DEFAULTS.alpha,
    n_steps: int = DEFAULTS.n_steps,
) -> Any:
    """AdvDM: sign PGD ascent of a fixed UNet's denoising loss (uniform start in the eps-ball).

    Args:
        unet: the pre-trained ``UNet2DModel`` (class-conditional); vae: the ``AutoencoderKL``.
        images: ``(B, 3, H, W)`` float tensor in [0, 1]; class_id: the condition (the token).
        rng: generator (start, noise, timesteps). eps, alpha, n_steps: as :func:`pgd_protect`.

    Returns:
        ``x_adv`` ``(B, 3, H, W)``, ``||x_adv - x||_inf <= eps``, in [0, 1].

    Raises:
        ValueError: bad images, eps/alpha <= 0, n_steps < 1, class_id out of range; TypeError: rng.
    """
    eps, alpha = check_positive(eps, "eps"), check_positive(alpha, "alpha")
    n_steps = check_int(n_steps, "n_steps", low=1)
    x, delta, class_id, g = _start(unet, images, class_id, rng, eps)
    unet = copy.deepcopy(unet).requires_grad_(False)
    return (
        x + _unet_pgd(unet, vae, x, delta, class_id, eps, alpha, n_steps, g)
    ).detach()


def aspl_protect(
    unet: Any,
    vae: Any,
    images: Any,
    class_id: int,
    rng: np.random.Generator,
    eps: float = DEFAULTS.eps,
    alpha: float = DEFAULTS.aspl_alpha,
    n_outer: int = DEFAULTS.aspl_outer,
    surrogate_steps: int = DEFAULTS.aspl_surrogate_steps,
    pgd_steps: int = DEFAULTS.aspl_pgd_steps,
    lr: float = DEFAULTS.db_lr,
    prior_class: int | None = None,
) -> Any:
    """Anti-DreamBooth's ASPL (alternating surrogate fine-tuning and PGD on the denoising loss).

    Each of ``n_outer`` rounds: copy the surrogate, fine-tune the copy ``surrogate_steps`` steps on
    the clean images, take ``pgd_steps`` sign steps against the copy, then fine-tune the surrogate
    ``surrogate_steps`` steps on the perturbed images. The token ``class_id`` starts from
    ``prior_class`` (default ``class_id - 1``), as in :func:`dreambooth_finetune`.

    Returns:
        ``x_adv`` ``(B, 3, H, W)`` in [0, 1] within ``eps`` of ``images`` (``n_outer * pgd_steps`` PGD steps).

    Raises:
        ValueError: bad images, eps/alpha/lr <= 0, counts < 1, class ids out of range; TypeError: rng.
    """
    import torch

    eps, alpha, lr = (
        check_positive(eps, "eps"),
        check_positive(alpha, "alpha"),
        check_positive(lr, "lr"),
    )
    n_outer = check_int(n_outer, "n_outer", low=1)
    surrogate_steps = check_int(surrogate_steps, "surrogate_steps", low=1)
    pgd_steps = check_int(pgd_steps, "pgd_steps", low=1)
    x, delta, class_id, g = _start(unet, images, class_id, rng, eps)
    n_cls = int(unet.config.num_class_embeds)
    prior = (
        class_id - 1
        if prior_class is None
        else check_int(prior_class, "prior_class", low=0, high=n_cls - 1)
    )
    f = copy.deepcopy(unet)
    with torch.no_grad():
        f.class_embedding.weight[class_id] = f.class_embedding.weight[prior]
    for _ in range(n_outer):
        f_sur = copy.deepcopy(f)
        # on clean images
        _finetune_steps(f_sur, vae, x, class_id, surrogate_steps, lr, g, rng)
        f_sur.requires_grad_(False)
        delta = _unet_pgd(f_sur, vae, x, delta, class_id, eps, alpha, pgd_steps, g)
        # on perturbed
        _finetune_steps(
            f, vae, (x + delta).detach(), class_id, surrogate_steps, lr, g, rng
        )
    return (x + delta).detach()
