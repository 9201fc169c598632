"""The chapter's experiments, one call each (the loops live here, the notebook shows the results)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from icml25.checks import check_int, check_positive, check_rng

from ._checks import _check_images, _check_loss
from .method import _encode, pgd_protect, posterior_variance
from .metrics import fdfr_proxy, identity_accuracy, ism, psnr
from .victim import dreambooth_finetune, generate

__all__ = [
    "summarize",
    "compare_losses",
    "sweep",
    "transfer",
    "mean_shift",
    "victim_experiment",
]


def _same_shape(x: Any, x_adv: Any, name: str) -> None:
    """``x_adv`` must pair image by image with ``x`` (else the ratios would broadcast silently)."""
    if tuple(x_adv.shape) != tuple(x.shape):
        raise ValueError(
            f"{name} must have the shape of the clean images {tuple(x.shape)}, got {tuple(x_adv.shape)}"
        )


def _nonempty_losses(losses: Any) -> list:
    if isinstance(losses, str) or not hasattr(losses, "__iter__"):
        raise TypeError(
            f"losses must be a sequence of loss names, got {type(losses).__name__}"
        )
    losses = list(losses)
    if not losses:
        raise ValueError("losses must name at least one loss, got an empty sequence")
    return losses


def mean_shift(vae: Any, x: Any, x_adv: Any) -> float:
    """Relative move of the posterior mean (what ``.mode()`` latents see): ``||mu(x_adv) - mu(x)|| / ||mu(x)||``,
    averaged over images.

    Raises:
        ValueError: bad images, ``x_adv`` of another shape than ``x``.
    """
    import torch

    x, x_adv = _check_images(x, "x"), _check_images(x_adv, "x_adv")
    _same_shape(x, x_adv, "x_adv")
    with torch.no_grad():
        m0, _ = _encode(vae, x)
        m1, _ = _encode(vae, x_adv)
    return float(((m1 - m0).flatten(1).norm(dim=1) / m0.flatten(1).norm(dim=1)).mean())


def summarize(
    vae: Any, x: Any, x_adv: Any, trace: dict[str, np.ndarray]
) -> dict[str, float]:
    """The numbers the chapter reports for one protected batch.

    Returns:
        ``v_ratio_median`` (final ``V(x_adv)/V(x)``, median over images), ``v_ratio_mean``,
        ``dlogvar_mean`` (final mean change of ``log sigma^2``), ``agreement`` (mean over measured
        steps and images), ``agreement_min``, ``n_clamped`` (final, summed), ``psnr_db`` (mean),
        ``linf`` (largest ``|x_adv - x|``), ``mean_shift`` (see :func:`mean_shift`), ``x_min``, ``x_max``.

    Raises:
        ValueError: bad images.
    """
    x, x_adv = _check_images(x, "x"), _check_images(x_adv, "x_adv")
    agree = trace["agreement"][np.isfinite(trace["agreement"])]
    return {
        "v_ratio_median": float(np.median(trace["v_ratio"][-1])),
        "v_ratio_mean": float(np.mean(trace["v_ratio"][-1])),
        "dlogvar_mean": float(np.mean(trace["dlogvar"][-1])),
        "agreement": float(agree.mean()) if agree.size else float("nan"),
        "agreement_min": float(agree.min()) if agree.size else float("nan"),
        "n_clamped": float(trace["n_clamped"][-1].sum()),
        "psnr_db": float(np.mean(psnr(x, x_adv))),
        "linf": float((x_adv - x).abs().max()),
        "mean_shift": mean_shift(vae, x, x_adv),
        "x_min": float(x_adv.min()),
        "x_max": float(x_adv.max()),
    }


def compare_losses(
    vae: Any,
    images: Any,
    losses: Sequence[str],
    rng: np.random.Generator,
    eps: float,
    alpha: float,
    n_steps: int,
    align_every: int = 1,
) -> dict[str, dict[str, Any]]:
    """Protect ``images`` with every loss from the *same* uniform start (one draw of ``rng``).

    Returns:
        loss name -> ``{"x_adv", "trace", **summarize(...)}``.

    Raises:
        ValueError: unknown loss names and the errors of :func:`pgd_protect`.
    """
    rng = check_rng(rng)
    losses = _nonempty_losses(losses)
    for name in losses:
        _check_loss(name, "losses")
    start = int(rng.integers(2**63))
    out = {}
    for name in losses:
        x_adv, trace = pgd_protect(
            vae,
            images,
            name,
            np.random.default_rng(start),
            eps=eps,
            alpha=alpha,
            n_steps=n_steps,
            align_every=align_every,
        )
        out[name] = {
            "x_adv": x_adv,
            "trace": trace,
            **summarize(vae, images, x_adv, trace),
        }
    return out


def sweep(
    vae: Any,
    images: Any,
    losses: Sequence[str],
    rng: np.random.Generator,
    eps_grid: Sequence[float],
    steps_grid: Sequence[int],
    alpha: float,
    steps_eps: float | None = None,
) -> list[dict[str, Any]]:
    """Median V ratio for each loss over an ``eps`` grid (at ``max(steps_grid)`` steps) and a steps
    grid (at ``steps_eps``, default the largest ``eps``, which must be in ``eps_grid``); one PGD run per
    (loss, eps): the steps grid is read off the trace of the run at ``steps_eps``.

    Returns:
        rows ``{"loss", "eps", "n_steps", "v_ratio_median", "dlogvar_mean"}``.

    Raises:
        ValueError: empty grids, eps <= 0, steps < 1.
    """
    rng = check_rng(rng)
    losses = _nonempty_losses(losses)
    for name in losses:
        _check_loss(name, "losses")
    eps_grid = [check_positive(e, "eps_grid") for e in eps_grid]
    steps_grid = [check_int(s, "steps_grid", low=1) for s in steps_grid]
    if not eps_grid or not steps_grid:
        raise ValueError("eps_grid and steps_grid must be non-empty")
    s_eps = (
        max(eps_grid) if steps_eps is None else check_positive(steps_eps, "steps_eps")
    )
    if s_eps not in eps_grid:
        raise ValueError(f"steps_eps must be one of eps_grid {eps_grid}, got {s_eps}")
    T = max(steps_grid)
    start = int(rng.integers(2**63))
    rows = []
    for name in losses:
        for e in eps_grid:
            _, tr = pgd_protect(
                vae,
                images,
                name,
                np.random.default_rng(start),
                eps=e,
                alpha=alpha,
                n_steps=T,
                align_every=T + 1,
            )
            for s in steps_grid if e == s_eps else [T]:
                rows.append(
                    {
                        "loss": name,
                        "eps": e,
                        "n_steps": s,
                        "v_ratio_median": float(np.median(tr["v_ratio"][s])),
                        "dlogvar_mean": float(np.mean(tr["dlogvar"][s])),
                    }
                )
    return rows


def transfer(
    vae_target: Any, images: Any, protected: dict[str, Any]
) -> dict[str, float]:
    """Median ``V(x_adv)/V(x)`` on another VAE for each protected batch (``name -> x_adv``).

    Raises:
        ValueError: bad images, a protected batch of another shape than ``images``.
    """
    x = _check_images(images, "images")
    checked = {}
    for k, v in protected.items():
        checked[k] = _check_images(v, f"protected[{k!r}]")
        _same_shape(x, checked[k], f"protected[{k!r}]")
    v0 = posterior_variance(vae_target, x)
    return {
        k: float(np.median(posterior_variance(vae_target, v) / v0))
        for k, v in checked.items()
    }


def victim_experiment(
    models: dict[str, Any],
    protected: dict[str, Any],
    class_id: int,
    identity: int,
    classifier: Any,
    face_clf: Any,
    reference: Any,
    rng: np.random.Generator,
    n_steps: int,
    n_generate: int,
    ddim_steps: int,
    mode_too: Sequence[str] = (),
) -> dict[str, dict[str, float]]:
    """Fine-tune the victim on each protected set and score its generations.

    Args:
        models: ``load_models`` output (``vaes[0]`` is the attacker's VAE, ``unet`` the base UNet).
        protected: method name -> ``(B, 3, H, W)`` images the attacker fine-tunes on (include the clean set).
        class_id: the ``sks`` token; identity: the held-out identity's classifier label.
        classifier, face_clf: from :func:`identity_classifier`, :func:`face_classifier`.
        reference: clean images of the identity (ISM centroid).
        rng: generator; n_steps: fine-tune steps; n_generate: images per method; ddim_steps: sampler steps.
        mode_too: methods also fine-tuned on ``.mode()`` latents (keys ``"<name>@mode"``).

    Returns:
        method -> ``{"identity_accuracy", "ism", "fdfr", "gen_std"}`` and the generations under
        ``"images"``.

    Raises:
        ValueError: bad images or counts.
    """
    rng = check_rng(rng)
    n_steps = check_int(n_steps, "n_steps", low=1)
    n_generate = check_int(n_generate, "n_generate", low=1)
    runs = [(k, v, "sample") for k, v in protected.items()] + [
        (f"{k}@mode", protected[k], "mode") for k in mode_too
    ]
    out = {}
    for (name, x, latents), child in zip(runs, rng.spawn(len(runs))):
        x = _check_images(x, name)
        ft = dreambooth_finetune(
            models["unet"],
            models["vaes"][0],
            x,
            class_id,
            n_steps,
            child,
            latents=latents,
        )
        gen = generate(
            ft, models["vaes"][0], class_id, n_generate, child, n_steps=ddim_steps
        )
        out[name] = {
            "identity_accuracy": identity_accuracy(classifier, gen, identity),
            "ism": ism(classifier, gen, reference),
            "fdfr": fdfr_proxy(face_clf, gen),
            "gen_std": float(gen.std(dim=(1, 2, 3)).mean()),
            "images": gen,
        }
    return out
