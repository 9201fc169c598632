"""Training, evaluation and metrics of chapter 07: the loops the notebook's experiments call.

:func:`train_flow` trains CFM (``loss="cfm"``, the baseline: the same code with ``lam_div = 0``) or
FDM with the official 2-D recipe; :func:`tv_bound_integrand` measures the TV bound's integrand
against the analytic Gaussian-mixture path; :func:`model_density_grid` tabulates a learned density;
:func:`grid_tv`, :func:`hist_tv` and :func:`hist_kl` are the paper's distances.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import Tensor, nn

from icml25.checks import (
    check_array,
    check_bool,
    check_budget,
    check_choice,
    check_int,
    check_positive,
    check_real,
    check_torch_generator,
)

from .data import GaussianMixture2D
from .defaults import DEFAULTS
from .method import (
    _STEP_OVERHEAD,
    ESTIMATORS,
    VelocityMLP,
    VFn,
    _check_fdm_options,
    _check_model,
    _fdm_loss,
    _model_flops,
    _torch_tensor,
    divergence_exact,
    divergence_hutchinson,
    log_likelihood,
)

__all__ = [
    "train_flow",
    "time_train_step",
    "tv_bound_integrand",
    "model_density_grid",
    "grid_tv",
    "hist_tv",
    "hist_kl",
]

_LOSSES: tuple[str, ...] = ("cfm", "fdm")


def _check_module(model: Any) -> nn.Module:
    """A trainable velocity network: an ``nn.Module`` with at least one parameter."""
    if not isinstance(model, nn.Module) or next(model.parameters(), None) is None:
        raise TypeError(
            f"model must be an nn.Module with parameters, got {type(model).__name__}"
        )
    return model


def _activation_bytes(model: nn.Module, batch: int) -> float:
    """Estimated bytes of one step's activations: ``batch`` x the network's widths (its biases'
    sizes) x 4 bytes x 8 (values, gradients and the divergence's graph)."""
    widths = sum(p.numel() for p in model.parameters() if p.ndim == 1) or 1
    return 32.0 * batch * widths


def _check_batch(x1: Any, batch: int, model: nn.Module, step: int) -> Tensor:
    """What ``sampler(batch, rng)`` returned at ``step``: a finite (batch, d) float tensor, d the model's."""
    if (
        not isinstance(x1, Tensor)
        or x1.ndim != 2
        or x1.shape[0] != batch
        or not torch.is_floating_point(x1)
    ):
        raise ValueError(
            f"sampler(batch, rng) must return a ({batch}, d) float torch.Tensor, got "
            f"{type(x1).__name__} {tuple(getattr(x1, 'shape', ()))} at step {step}"
        )
    if isinstance(model, VelocityMLP) and x1.shape[1] != model.dim:
        raise ValueError(
            f"sampler returns d = {x1.shape[1]} but model is a VelocityMLP of dim {model.dim}"
        )
    if not bool(torch.isfinite(x1).all()):
        raise ValueError(f"sampler(batch, rng) returned NaN or inf at step {step}")
    return x1


# --------------------------------------------------------------------------------------
# Training (official 2-D recipe: Adam, 10-step linear warm-up, StepLR(10, 0.999))
# --------------------------------------------------------------------------------------


def train_flow(
    model: nn.Module,
    sampler: Callable[[int, torch.Generator | None], Tensor],
    n_steps: int,
    batch: int,
    lr: float = DEFAULTS.training.lr,
    loss: str = "cfm",
    rng: torch.Generator | None = None,
    *,
    lam_cfm: float = DEFAULTS.training.lam_cfm,
    lam_div: float = DEFAULTS.training.lam_div,
    estimator: str = "exact",
    variant: str = "derived",
    schedule: str = "cond_ot",
    n_probes: int = 1,
    dist: str = "rademacher",
    t_max: float = DEFAULTS.training.t_max,
    warmup: int = DEFAULTS.training.warmup,
    lr_step: int = DEFAULTS.training.lr_step,
    lr_gamma: float = DEFAULTS.training.lr_gamma,
) -> dict[str, Any]:
    """Train ``model`` with CFM (``loss="cfm"``) or FDM (``loss="fdm"``), in place.

    Each step draws ``x1 = sampler(batch, rng)``, ``x0 ~ N(0, I)``, ``t ~ U[0, t_max]`` and
    takes one Adam step on :func:`fdm_loss` (``lam_div = 0`` for CFM). The learning rate follows
    the official 2-D code (``DEFAULTS.training``): linear warm-up over ``warmup`` steps times
    ``StepLR(lr_step, lr_gamma)``.

    Args:
        model: the velocity network (e.g. :class:`VelocityMLP`).
        sampler: ``(n, torch.Generator) -> (n, d)`` float32 data points.
        n_steps, batch: number of Adam steps and batch size.
        lr: base learning rate.
        loss: ``"cfm"`` or ``"fdm"``.
        rng: torch.Generator (CPU) for every draw of this run: data, noise, times and probes
            (``None``: torch's global generator).
        lam_cfm, lam_div, estimator, variant, schedule, n_probes, dist: passed to :func:`fdm_loss`.
        t_max: largest training time (< 1 keeps sigma_t > 0).
        warmup, lr_step, lr_gamma: learning-rate schedule.

    Returns:
        ``{"loss": (n_steps,) array, "cfm": (n_steps,), "div": (n_steps,), "seconds": float,
        "sec_per_step": float}``.

    Raises:
        TypeError: ``model`` not an nn.Module with parameters, ``sampler`` not callable, ``rng``
            not a torch.Generator, a size or rate of the wrong type.
        ValueError: bad sizes, unknown loss/estimator/variant/schedule/dist, ``n_probes < 1``,
            ``t_max`` outside (0, 1), ``lr`` not finite and positive, negative lambdas,
            ``warmup < 0``, ``lr_step < 1``, ``lr_gamma`` outside (0, 1], a sampler that does not
            return a finite (batch, d) float tensor of the model's dimension (the message names
            the step).
        TooLargeError: ``n_steps`` or ``batch`` so large that the loss history or the work
            (about ``3 n_steps batch (2 x parameters)`` operations, times ``1 + 2 d`` for the exact
            divergence) cannot fit.
        RuntimeError: the loss is not finite (NaN or inf) at some step (the message names it):
            training diverged, the parameters are no longer usable.
    """
    _check_module(model)
    if not callable(sampler):
        raise TypeError(
            f"sampler must be a callable (n, torch.Generator) -> (n, d), got {type(sampler).__name__}"
        )
    n_steps, batch = (
        check_int(n_steps, "n_steps", low=1),
        check_int(batch, "batch", low=1),
    )
    check_choice(loss, "loss", _LOSSES)
    t_max = check_real(t_max, "t_max", low=0, high=1, low_open=True, high_open=True)
    lr = check_positive(lr, "lr")
    lam_cfm, lam_div = (
        check_real(lam_cfm, "lam_cfm", low=0),
        check_real(lam_div, "lam_div", low=0),
    )
    n_probes = _check_fdm_options(estimator, variant, schedule, n_probes, dist)
    warmup, lr_step = (
        check_int(warmup, "warmup", low=0),
        check_int(lr_step, "lr_step", low=1),
    )
    lr_gamma = check_real(lr_gamma, "lr_gamma", low=0, high=1, low_open=True)
    gen = check_torch_generator(rng, "rng")
    dim = model.dim if isinstance(model, VelocityMLP) else 1
    div_cost = (
        1 + 2 * (dim if estimator == "exact" else n_probes) if loss == "fdm" else 1
    )
    check_budget(
        f"train_flow(n_steps={n_steps}, batch={batch})",
        n_bytes=3 * 8 * n_steps + _activation_bytes(model, batch),
        n_operations=n_steps
        * (3 * batch * _model_flops(model, dim) * div_cost + _STEP_OVERHEAD),
    )
    param = next(model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    warm = max(warmup, 1)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / warm) * lr_gamma ** (k // lr_step)
    )
    lam = lam_div if loss == "fdm" else 0.0
    hist = {
        "loss": np.empty(n_steps),
        "cfm": np.empty(n_steps),
        "div": np.empty(n_steps),
    }
    start = time.perf_counter()
    model.train()
    for k in range(n_steps):
        x1 = _check_batch(sampler(batch, gen), batch, model, k)
        x1 = x1.to(param.device, param.dtype)
        x0 = torch.randn(x1.shape, generator=gen, dtype=x1.dtype).to(param.device)
        t = torch.rand(batch, generator=gen, dtype=x1.dtype).to(param.device) * t_max
        opt.zero_grad(set_to_none=True)
        total, parts = _fdm_loss(
            model,
            x0,
            x1,
            t,
            lam_cfm,
            lam,
            estimator,
            variant,
            schedule,
            n_probes,
            dist,
            gen,
            True,
        )
        if not bool(torch.isfinite(total.detach())):
            raise RuntimeError(
                f"train_flow: the loss is not finite ({float(total.detach())}) at step {k} of "
                f"{n_steps}; lower lr or check the data"
            )
        total.backward()
        opt.step()
        sched.step()
        hist["loss"][k] = float(total.detach())
        hist["cfm"][k], hist["div"][k] = parts["cfm"], parts["div"]
    model.eval()
    secs = time.perf_counter() - start
    return {**hist, "seconds": secs, "sec_per_step": secs / n_steps}


def time_train_step(
    model: nn.Module,
    x1: Tensor,
    loss: str = "cfm",
    estimator: str = "exact",
    n_reps: int = 5,
    variant: str = "sigma_l2",
    rng: torch.Generator | None = None,
) -> float:
    """Median wall seconds of one forward+backward+Adam step on the batch ``x1`` (for the cost table).

    One untimed warm-up step, then ``n_reps`` timed steps, each on fresh noise and times drawn
    from ``rng`` (a CPU torch.Generator; ``None``: torch's global generator). The model's
    parameters move (Adam, lr 1e-6).

    Raises:
        TypeError / ValueError: ``model`` not an nn.Module, ``x1`` not a (B, d) finite float tensor
        (B >= 1), unknown loss, estimator or variant, ``n_reps < 1``, ``rng`` not a torch.Generator.
        TooLargeError: ``n_reps`` so large that the work cannot fit.
    """
    _check_module(model)
    x1 = _torch_tensor(x1, "x1", ndim=2)
    if x1.shape[0] < 1:
        raise ValueError("x1 must hold at least one point")
    _check_model(model, x1)
    check_choice(loss, "loss", _LOSSES)
    _check_fdm_options(estimator, variant, "cond_ot", 1, "rademacher")
    n_reps = check_int(n_reps, "n_reps", low=1)
    gen = check_torch_generator(rng, "rng")
    d = x1.shape[1]
    check_budget(
        f"time_train_step(n_reps={n_reps})",
        n_operations=(n_reps + 1)
        * (3 * x1.shape[0] * _model_flops(model, d) * (1 + 2 * d) + _STEP_OVERHEAD),
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-6)
    times = []
    sync = torch.cuda.synchronize if x1.is_cuda else (lambda: None)
    for _ in range(n_reps + 1):
        x0 = torch.randn(x1.shape, generator=gen, dtype=x1.dtype).to(x1.device)
        t = (torch.rand(x1.shape[0], generator=gen, dtype=x1.dtype) * 0.999).to(
            x1.device
        )
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = _fdm_loss(
            model,
            x0,
            x1,
            t,
            1.0,
            0.1 if loss == "fdm" else 0.0,
            estimator,
            variant,
            "cond_ot",
            1,
            "rademacher",
            gen,
            False,
        )
        out.backward()
        opt.step()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


# --------------------------------------------------------------------------------------
# Evaluation against the analytic path
# --------------------------------------------------------------------------------------


def _model_device(model: Any) -> torch.device:
    """The device of an nn.Module's parameters (CPU for plain callables)."""
    if isinstance(model, nn.Module):
        for p in model.parameters():
            return p.device
    return torch.device("cpu")


def tv_bound_integrand(
    model: VFn,
    gmm: GaussianMixture2D,
    t_grid: ArrayLike,
    n_mc: int = 2000,
    rng: torch.Generator | None = None,
    estimator: str = "exact",
) -> dict[str, np.ndarray]:
    """Monte-Carlo ``E_{p_t} |div v - div u_t + (v - u_t) . grad log p_t|`` at each ``t`` of ``t_grid``.

    This is ``||L_t||_1`` of the error PDE (Sec. 3): its time integral, halved, bounds
    ``TV(p_t, p_hat_t)``. Also returns the plain divergence gap ``E|div v - div u_t|``, the
    velocity error ``E ||v - u_t||^2`` and the Monte-Carlo standard errors.

    Args:
        model: velocity field; gmm: the analytic target; t_grid: (T,) times in [0, 1].
        n_mc: samples of ``p_t`` per time; rng: torch.Generator for the samples and probes.
        estimator: divergence of the model, ``"exact"`` or ``"hutchinson"`` (one Rademacher probe).

    Returns:
        dict of (T,) float64 arrays: ``t``, ``integrand``, ``integrand_se``, ``div_gap``,
        ``velocity_mse``.

    Raises:
        TypeError: ``gmm`` not a GaussianMixture2D, ``rng`` not a torch.Generator.
        ValueError: times outside [0, 1] or NaN, ``n_mc < 1``, unknown estimator, a
            :class:`VelocityMLP` of another dimension than ``gmm``.
        TooLargeError: ``n_mc`` (times the grid's length) so large that the memory or work cannot fit.
    """
    tg = check_array(
        t_grid, "t_grid", dtype=np.float64, low=0, high=1, min_size=1
    ).reshape(-1)
    if not isinstance(gmm, GaussianMixture2D):
        raise TypeError(f"gmm must be a GaussianMixture2D, got {type(gmm).__name__}")
    n_mc = check_int(n_mc, "n_mc", low=1)
    check_choice(estimator, "estimator", ESTIMATORS)
    check_torch_generator(rng, "rng")
    if isinstance(model, VelocityMLP) and model.dim != gmm.d:
        raise ValueError(
            f"model is a VelocityMLP of dim {model.dim} but gmm has d = {gmm.d}"
        )
    check_budget(
        f"tv_bound_integrand(n_mc={n_mc})",
        n_bytes=64.0 * n_mc * (gmm.K + 4) * gmm.d,
        n_operations=tg.size
        * (
            n_mc * (_model_flops(model, gmm.d) * (1 + 2 * gmm.d) + 40 * gmm.K * gmm.d)
            + _STEP_OVERHEAD
        ),
    )
    out = {
        k: np.empty(tg.size)
        for k in ("integrand", "integrand_se", "div_gap", "velocity_mse")
    }
    dev = _model_device(model)
    for i, t in enumerate(tg):
        x = gmm.sample_path(n_mc, float(t), rng)
        xd, tv = x.to(dev), torch.full((n_mc,), float(t), device=dev)
        if estimator == "exact":
            dv, v = divergence_exact(model, xd, tv, return_velocity=True)
        else:
            dv, v = divergence_hutchinson(model, xd, tv, 1, rng=rng)
        dv, v = dv.cpu(), v.cpu()
        u = gmm.marginal_velocity(x, t)
        du = gmm.marginal_divergence(x, t)
        s = gmm.marginal_score(x, t)
        r = (dv.double() - du + ((v.double() - u) * s).sum(1)).abs()
        out["integrand"][i] = float(r.mean())
        out["integrand_se"][i] = float(r.std() / math.sqrt(n_mc))
        out["div_gap"][i] = float((dv.double() - du).abs().mean())
        out["velocity_mse"][i] = float(((v.double() - u) ** 2).sum(1).mean())
    return {"t": tg, **out}


def model_density_grid(
    model: VFn,
    lim: float = 4.0,
    n: int = 100,
    t1: float = 1.0,
    n_steps: int = 50,
    chunk: int = 4096,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Learned density ``p_hat_{t1}`` on an ``n x n`` grid over ``[-lim, lim]^2`` (exact divergence).

    Returns:
        ``(xs (n,), ys (n,), density (n, n))`` with ``density[j, i] = p_hat(xs[i], ys[j])``.

    Raises:
        TypeError: a size of the wrong type.
        ValueError: ``lim`` not finite and > 0, ``n < 2``, ``chunk < 1``, ``n_steps < 1``,
            ``t1`` outside (0, 1], a :class:`VelocityMLP` that is not 2-D.
        TooLargeError: ``n`` (the grid holds ``n**2`` points) or ``n_steps`` so large that the
            memory or work cannot fit.
        RuntimeError: the likelihood ODE diverges.
    """
    lim = check_positive(lim, "lim")
    n, chunk = check_int(n, "n", low=2), check_int(chunk, "chunk", low=1)
    n_steps = check_int(n_steps, "n_steps", low=1)
    if isinstance(model, VelocityMLP) and model.dim != 2:
        raise ValueError(
            f"model must be 2-D for a density grid, got a VelocityMLP of dim {model.dim}"
        )
    n_pts = n * n
    check_budget(
        f"model_density_grid(n={n}, n_steps={n_steps})",
        n_bytes=56.0 * n_pts,
        n_operations=n_steps
        * (
            5 * n_pts * _model_flops(model, 2)
            + math.ceil(n_pts / chunk) * _STEP_OVERHEAD
        ),
    )
    xs = np.linspace(-lim, lim, n)
    X, Y = np.meshgrid(xs, xs)
    pts = torch.tensor(
        np.stack([X.ravel(), Y.ravel()], 1),
        dtype=torch.float32,
        device=_model_device(model),
    )
    logs = [
        log_likelihood(model, pts[i : i + chunk], n_steps, exact=True, t1=t1).cpu()
        for i in range(0, len(pts), chunk)
    ]
    return xs, xs, torch.exp(torch.cat(logs)).double().numpy().reshape(n, n)


# --------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------


def grid_tv(density_a: ArrayLike, density_b: ArrayLike, cell_area: float) -> float:
    """``1/2 sum |a - b| * cell_area``: TV distance of two densities tabulated on the same grid.

    Raises:
        TypeError: not arrays of real numbers.
        ValueError: shapes differ, a density is negative or not finite, or ``cell_area <= 0``.
    """
    a = check_array(density_a, "density_a", dtype=np.float64, low=0)
    b = check_array(density_b, "density_b", dtype=np.float64, shape=a.shape, low=0)
    return float(0.5 * np.abs(a - b).sum() * check_positive(cell_area, "cell_area"))


_HistRange = tuple[tuple[float, float], tuple[float, float]]


def _check_hist_args(
    a: Any, b: Any, bins: Any, range_: Any, what: str
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Two finite (n, 2) sample sets (n >= 1), a bin count >= 1 that fits and a (2, 2) histogram range."""
    a = check_array(a, "a", shape=(None, 2), dtype=np.float64, min_size=1)
    b = check_array(b, "b", shape=(None, 2), dtype=np.float64, min_size=1)
    bins = check_int(bins, "bins", low=1)
    # two float64 histograms, their difference and np.histogram2d's work arrays
    check_budget(
        f"{what}(bins={bins})",
        n_bytes=5 * 8.0 * (bins * bins + 1) + 64.0 * (len(a) + len(b)),
    )
    range_ = check_array(range_, "range", shape=(2, 2), dtype=np.float64)
    if not (range_[:, 0] < range_[:, 1]).all():
        raise ValueError(
            f"range must be ((xmin, xmax), (ymin, ymax)) with min < max, got {range_.tolist()}"
        )
    return a, b, bins, range_


def _hist2(a: np.ndarray, bins: int, range_: np.ndarray, overflow: bool) -> np.ndarray:
    """The 2-D histogram of ``a`` on ``range_`` divided by the sample count: ``(bins, bins)``, mass
    outside ``range_`` dropped (official), or with ``overflow`` flattened to ``(bins * bins + 1,)``
    with a last bin holding the mass outside ``range_`` (so the whole sums to 1)."""
    h, _, _ = np.histogram2d(a[:, 0], a[:, 1], bins=bins, range=range_)
    if overflow:
        return np.append(h.ravel(), len(a) - h.sum()) / len(a)
    return h / len(a)


def _hists(
    a: np.ndarray, b: np.ndarray, bins: int, range_: np.ndarray, overflow: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Both histograms of :func:`_hist2`; without ``overflow``, a sample with no point inside
    ``range_`` is refused: dropping all of its mass would score it as if it matched."""
    pa, pb = _hist2(a, bins, range_, overflow), _hist2(b, bins, range_, overflow)
    if not overflow:
        for p, name, n in ((pa, "a", len(a)), (pb, "b", len(b))):
            if not p.any():
                raise ValueError(
                    f"{name} has no point inside range {range_.tolist()} (all {n} lie outside: a "
                    "diverged sampler?); its distance would be meaningless with the mass outside "
                    "dropped; widen range or pass overflow=True to count that mass"
                )
    return pa, pb


def hist_tv(
    a: ArrayLike | Tensor,
    b: ArrayLike | Tensor,
    bins: int = DEFAULTS.evaluation.hist_bins,
    range: _HistRange = DEFAULTS.evaluation.hist_range,
    *,
    overflow: bool = False,
) -> float:
    """TV between two 2-D sample sets via histograms (official: 200 x 200 on [-5, 5]^2).

    ``1/2 sum_bins |P_a - P_b|`` with each histogram normalised by its sample count. Mass outside
    ``range`` is counted in neither histogram, as in the official code (and the chapter's
    metrics); a sample with *no* point inside ``range`` is refused, since dropping all its mass
    would score nonsense (TV 0.5 for a sampler that went off to infinity). ``overflow=True``
    instead adds one overflow bin holding the mass outside ``range`` to both histograms, so a
    sampler whose points leave the range is charged for them (all of ``a`` outside and all of
    ``b`` inside gives 1). Samples holding NaN or inf (a diverged sampler) are refused: they
    would silently fall outside every bin.

    Args:
        a, b: (n, 2) and (m, 2) finite samples (NumPy or torch), n, m >= 1.
        bins: bins per axis.
        range: ``((xmin, xmax), (ymin, ymax))``.
        overflow: count the mass outside ``range`` in an overflow bin (default: drop it).

    Returns:
        The distance, a float in [0, 1].

    Raises:
        TypeError: samples not real arrays, ``bins`` not an integer, ``overflow`` not a bool.
        ValueError: samples not (n, 2) with n >= 1 or not finite (the message names ``a`` or
            ``b``), ``bins < 1``, a malformed ``range``, and without ``overflow`` a sample with
            no point inside ``range``.
        TooLargeError: ``bins`` so large that the ``bins**2`` histograms cannot fit in memory.
    """
    a, b, bins, range_ = _check_hist_args(a, b, bins, range, "hist_tv")
    pa, pb = _hists(a, b, bins, range_, check_bool(overflow, "overflow"))
    return float(0.5 * np.abs(pa - pb).sum())


def hist_kl(
    a: ArrayLike | Tensor,
    b: ArrayLike | Tensor,
    bins: int = DEFAULTS.evaluation.hist_bins,
    range: _HistRange = DEFAULTS.evaluation.hist_range,
    eps: float = 1e-10,
    *,
    overflow: bool = False,
) -> float:
    """``KL(P_a || P_b)`` of 2-D histograms, with ``eps`` added to every bin of ``P_b``.

    The histograms are those of :func:`hist_tv`, each normalised to sum to 1. Without
    ``overflow`` (official) the mass outside ``range`` is dropped before normalising, and a
    sample with no point inside ``range`` is refused (it used to score KL = 0, perfect). With
    ``overflow=True`` the mass outside is one more bin: mass of ``a`` outside ``range`` where
    ``b`` has none costs about ``log(1 / eps)`` per unit (all of ``a`` outside gives about 23 nats).

    Args:
        a, b: (n, 2) and (m, 2) finite samples (NumPy or torch), n, m >= 1.
        bins, range, overflow: as :func:`hist_tv`.
        eps: smoothing of ``P_b`` (> 0).

    Returns:
        The divergence in nats, a float >= 0.

    Raises:
        TypeError / ValueError: as :func:`hist_tv`, ``eps <= 0``.
        TooLargeError: as :func:`hist_tv`.
    """
    a, b, bins, range_ = _check_hist_args(a, b, bins, range, "hist_kl")
    eps = check_positive(eps, "eps")
    pa, pb = _hists(a, b, bins, range_, check_bool(overflow, "overflow"))
    pa, pb = pa / pa.sum(), (pb + eps) / (pb + eps).sum()
    m = pa > 0
    return float((pa[m] * np.log(pa[m] / pb[m])).sum())
