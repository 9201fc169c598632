"""The paper's attack: raise the VAE posterior variance with sign PGD (Yang et al., ICML 2025).

The protector owns ``x in [0, 1]^(3 x H x W)`` and solves ``max_delta L(mu(x + delta), sigma(x + delta); x)``
s.t. ``||delta||_inf <= eps`` and ``0 <= x + delta <= 1`` by projected sign ascent (PID's update):
``delta <- clip(clip(delta + alpha sign(grad L), -eps, eps), -x, 1 - x)`` (:func:`icml25.kernels.pgd_step.pgd_step`).
The losses live in :mod:`.losses`; the trace records what the chapter teaches: the variance ratio
``V(x + delta) / V(x)``, the mean change of ``log sigma^2``, the sign agreement of ``grad L`` with
``grad V`` (1 means every step is the steepest l-infinity ascent of ``V``) and the clamped count.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from icml25.checks import (
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_positive,
    check_rng,
    check_tensor,
)
from icml25.kernels import pgd_step

from ._checks import _check_images, _check_loss
from .defaults import DEFAULTS

__all__ = [
    "encode_posterior",
    "pgd_protect",
    "sign_alignment",
    "latent_variance_ratio",
    "posterior_variance",
]


def _encode(vae: Any, x: Any, raw: bool = False) -> tuple[Any, ...]:
    """``(mu, logvar[, raw logvar])`` of ``q(z | x) = N(mu, diag sigma^2)`` for ``x`` in [0, 1].

    diffusers: ``moments = quant_conv(encoder(2x - 1))``, ``mu, logvar = moments.chunk(2)``, then
    ``DiagonalGaussianDistribution`` clamps ``logvar`` to [-30, 20] (zero gradient outside).
    """
    import torch

    h = vae.encoder(2 * x - 1)  # pixels [0, 1] -> [-1, 1], as diffusers expects
    if getattr(vae, "quant_conv", None) is not None:
        h = vae.quant_conv(h)
    mu, raw_logvar = torch.chunk(h, 2, dim=1)
    logvar = torch.clamp(raw_logvar, *DEFAULTS.logvar_clamp)  # diffusers' clamp
    return (mu, logvar, raw_logvar) if raw else (mu, logvar)


def encode_posterior(vae: Any, x: Any, raw: bool = False) -> tuple[Any, ...]:
    """The VAE posterior of images ``x``: what ``vae.encode(2x - 1).latent_dist`` holds.

    Args:
        vae: a diffusers ``AutoencoderKL``.
        x: ``(B, 3, H, W)`` float tensor in [0, 1].
        raw: also return the pre-clamp log-variance (to watch the clamp at 20).

    Returns:
        ``(mu, logvar)`` (``(B, C, h, w)`` float32, ``logvar`` clamped to [-30, 20]), plus
        ``raw_logvar`` when ``raw``. Differentiable w.r.t. ``x``.

    Raises:
        ValueError: ``x`` not ``(B, 3, H, W)``, outside [0, 1] or non-finite; TypeError: not a tensor.
    """
    return _encode(vae, _check_images(x, "x"), check_bool(raw, "raw"))


def posterior_variance(vae: Any, x: Any) -> np.ndarray:
    """Per-image total posterior variance ``V_b = sum_j sigma_bj^2`` (no gradient).

    Returns:
        ``(B,)`` float64.

    Raises:
        ValueError: as :func:`encode_posterior`.
    """
    import torch

    with torch.no_grad():
        _, lv = _encode(vae, _check_images(x, "x"))
    return torch.exp(lv.double()).flatten(1).sum(1).cpu().numpy()


def latent_variance_ratio(vae: Any, x: Any, x_adv: Any, per_image: bool = False) -> Any:
    """``V(x_adv) / V(x)`` per image, or its median over the batch (a float).

    Raises:
        ValueError: bad images or shapes that differ.
    """
    x = _check_images(x, "x")
    x_adv = _check_images(x_adv, "x_adv")
    if tuple(x.shape) != tuple(x_adv.shape):
        raise ValueError(
            f"x_adv must have the shape of x {tuple(x.shape)}, got {tuple(x_adv.shape)}"
        )
    r = posterior_variance(vae, x_adv) / posterior_variance(vae, x)
    return r if check_bool(per_image, "per_image") else float(np.median(r))


def _grads(
    vae: Any, x: Any, delta: Any, loss: Callable, mu0: Any, lv0: Any, want_v: bool
) -> tuple[Any, ...]:
    """``(logvar, grad_delta L, grad_delta V or None)`` at ``x + delta`` (one forward, one or two backwards)."""
    import torch

    d = delta.detach().requires_grad_(True)
    mu, lv = _encode(vae, x + d)
    L = loss(mu, lv, mu0, lv0)
    if not want_v:
        (gL,) = torch.autograd.grad(L, d)
        return lv.detach(), gL, None
    (gL,) = torch.autograd.grad(L, d, retain_graph=True)
    (gV,) = torch.autograd.grad(torch.exp(lv).sum(), d)  # grad of V = sum_j sigma_j^2
    return lv.detach(), gL, gV


def _pgd(
    vae: Any,
    x: Any,
    loss: Callable,
    eps: float,
    alpha: float,
    n_steps: int,
    delta: Any,
    align_every: int,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Sign PGD ascent of ``loss`` from ``delta`` (the loop; :func:`pgd_protect` documents it).

    Per step ``t``: ``g = grad_delta L(x + delta_t)``; ``delta_{t+1} = clip(clip(delta_t + alpha sign g,
    -eps, eps), -x, 1 - x)``; the statistics of ``x + delta_t`` come from one fused reduction.
    """
    import torch

    with torch.no_grad():
        mu0, lv0 = _encode(vae, x)
    B = x.shape[0]
    n_pix = x[0].numel()
    V0 = torch.exp(lv0.double()).flatten(1).sum(1)
    S0 = (0.5 * lv0.double()).flatten(1).sum(1)
    n_lat = lv0[0].numel()
    rows = {"v_ratio": [], "dlogvar": [], "agreement": [], "n_clamped": []}
    for t in range(n_steps + 1):
        last = t == n_steps
        want_v = (not last) and (t % align_every == 0)
        if last:
            with torch.no_grad():
                _, lv = _encode(vae, x + delta)
            gL = gV = torch.zeros_like(x)
        else:
            lv, gL, gV = _grads(vae, x, delta, loss, mu0, lv0, want_v)
        # (B, 4) float64
        st = pgd_step.posterior_stats(
            lv, gL, gV, *DEFAULTS.logvar_clamp, validate=False
        )
        rows["v_ratio"].append((st[:, 0] / V0).cpu().numpy())
        # mean delta log sigma^2
        rows["dlogvar"].append((2 * (st[:, 1] - S0) / n_lat).cpu().numpy())
        rows["n_clamped"].append(st[:, 2].cpu().numpy())
        rows["agreement"].append(
            (st[:, 3] / n_pix).cpu().numpy() if want_v else np.full(B, np.nan)
        )
        if not last:
            delta = pgd_step.pgd_step(delta, gL, x, eps, alpha, validate=False)
    trace = {k: np.stack(v) for k, v in rows.items()}  # (n_steps + 1, B) each
    return (x + delta).detach(), trace


def pgd_protect(
    vae: Any,
    images: Any,
    loss: Any = "la",
    rng: np.random.Generator | None = None,
    eps: float = DEFAULTS.eps,
    alpha: float = DEFAULTS.alpha,
    n_steps: int = DEFAULTS.n_steps,
    init: str = DEFAULTS.init,
    align_every: int = 1,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Protect ``images`` by sign PGD on a posterior loss (the paper's attack; Sec. 3, PID's update).

    Args:
        vae: the protector's ``AutoencoderKL`` (its weights are not changed).
        images: ``(B, 3, H, W)`` float tensor in [0, 1].
        loss: a name of :data:`icml25.vae_variance_attack.LOSSES` or a callable
            ``(mu_adv, logvar_adv, mu_clean, logvar_clean) -> scalar`` (ascended).
        rng: ``numpy.random.Generator`` for the uniform start (required for ``init="uniform"``).
        eps: l-infinity budget in pixel units (> 0; paper/PID 0.05); alpha: step (> 0; 1/255).
        n_steps: PGD steps (>= 1; paper 30). init: ``"uniform"`` in [-eps, eps] (PID) or ``"zero"``.
        align_every: measure the sign agreement every this many steps (each costs a second backward).

    Returns:
        ``(x_adv, trace)``: ``x_adv (B, 3, H, W)`` float32 with ``||x_adv - x||_inf <= eps`` and
        values in [0, 1]; ``trace`` maps ``"v_ratio"``, ``"dlogvar"``, ``"agreement"``,
        ``"n_clamped"`` to ``(n_steps + 1, B)`` float arrays (row ``t``: at ``delta_t``; the
        agreement is NaN where not measured and on the last row).

    Raises:
        ValueError: bad images, ``eps`` or ``alpha`` <= 0, ``n_steps`` < 1, unknown ``loss`` or ``init``.
        TypeError: ``rng`` not a Generator (for ``init="uniform"``), ``loss`` neither a name nor callable.
    """
    import torch

    x = _check_images(images, "images")
    loss_fn = _check_loss(loss, "loss")
    eps = check_positive(eps, "eps")
    alpha = check_positive(alpha, "alpha")
    n_steps = check_int(n_steps, "n_steps", low=1)
    init = check_choice(init, "init", ("uniform", "zero"))
    align_every = check_int(align_every, "align_every", low=1)
    check_budget(
        f"pgd_protect(images of shape {tuple(x.shape)})", n_bytes=x.numel() * 4.0 * 400
    )
    dev = next(vae.parameters()).device
    x = x.to(dev)
    if init == "uniform":
        rng = check_rng(rng)
        u = torch.from_numpy(
            rng.uniform(-eps, eps, size=tuple(x.shape)).astype(np.float32)
        ).to(dev)
        delta = torch.clamp(u, -x, 1 - x)  # start inside [0, 1] too
    else:
        check_rng(rng, allow_none=True)
        delta = torch.zeros_like(x)
    return _pgd(vae, x, loss_fn, eps, alpha, n_steps, delta, align_every)


def sign_alignment(vae: Any, x: Any, delta: Any, loss: Any) -> float:
    """Fraction of pixels where ``sign(grad L) == sign(grad V)`` at ``x + delta``.

    1 means the sign step of ``L`` is the l-infinity steepest ascent of ``V = sum sigma^2``.

    Raises:
        ValueError: bad images, ``delta`` of another shape, ``x + delta`` outside [0, 1], unknown loss.
    """
    x = _check_images(x, "x")
    d = check_tensor(delta, "delta", shape=tuple(x.shape))
    _check_images(x + d, "x + delta")
    loss_fn = _check_loss(loss, "loss")
    import torch

    with torch.no_grad():
        mu0, lv0 = _encode(vae, x)
    _, gL, gV = _grads(vae, x, d.float(), loss_fn, mu0, lv0, True)
    return float((torch.sign(gL) == torch.sign(gV)).double().mean())
