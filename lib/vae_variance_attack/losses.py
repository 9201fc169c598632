"""The attack objectives, one signature: ``loss(mu_adv, logvar_adv, mu_clean, logvar_clean) -> scalar``.

PGD *ascends* every loss. Tensors are ``(B, C, h, w)`` float32 posterior means and clamped
log-variances of the protected (``_adv``) and clean images.

The paper's two losses (**reconstructions**: its LA and LE formulas were not available; the
surrogates follow the chapter's paper note and can be replaced here, behind the same signature):

- :func:`loss_la` (Laplace-based, LA): a strictly increasing function of each image's total
  posterior variance, ``mean_b log(mean_j sigma_bj^2)``, so ``grad L`` is a positive multiple of
  ``grad V`` image by image and each sign step is the l-infinity steepest ascent of ``V``.
- :func:`loss_le` (Lagrange-entropy-based, LE): the Gaussian entropy per element,
  ``mean_j log sigma_j``, minus a Lagrange penalty ``lam mean_j [log sigma_j^2 - c_max]_+`` that
  keeps the log-variances below the clamp, where gradients vanish.

Baselines, from PID's ``PID.py`` (``PKU-ML/Diffusion-PID-Protection``; its attack types ``add-log``,
``var``, ``KL``; our code) and the encoder attacks:

- :func:`loss_pid_addlog`: ``MSE(log sigma^2_adv, log sigma^2_clean) + MSE(mu_adv, mu_clean)`` (PID's default);
- :func:`loss_pid_var`: ``MSE(sigma_adv, sigma_clean)``;
- :func:`loss_pid_kl`: ``mean KL(N(mu_clean, sigma_clean^2) || N(mu_adv, sigma_adv^2))``;
- :func:`loss_encoder_mean`: ``MSE(mu_adv, mu_clean)``, an untargeted push of the latent mean
  (PhotoGuard's encoder attack is targeted; PID's ``mean`` type is this one);
- :func:`loss_variance_sum`: ``V = sum sigma^2`` over the batch, the naive objective; LA is
  ``log`` of it per image, so both take the same sign steps.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from icml25.checks import check_real, check_tensor

from .defaults import DEFAULTS

__all__ = [
    "LOSSES",
    "loss_la",
    "loss_le",
    "make_loss_le",
    "loss_pid_addlog",
    "loss_pid_var",
    "loss_pid_kl",
    "loss_encoder_mean",
    "loss_variance_sum",
    "get_loss",
]


def _check_posteriors(
    mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any
) -> tuple[Any, ...]:
    out = []
    for name, t in (
        ("mu_adv", mu_adv),
        ("logvar_adv", logvar_adv),
        ("mu_clean", mu_clean),
        ("logvar_clean", logvar_clean),
    ):
        t = check_tensor(t, name, ndim=4)
        if out and tuple(t.shape) != tuple(out[0].shape):
            raise ValueError(
                f"{name} must have the shape of mu_adv {tuple(out[0].shape)}, got {tuple(t.shape)}"
            )
        out.append(t)
    return tuple(out)


# ------------------------------------------------------------------- the paper's losses


def _la(mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any) -> Any:
    """LA surrogate: ``mean_b log(mean_j sigma_bj^2)`` (reconstruction; paper's Laplace form not read).

    ``d L / d logvar_bj = sigma_bj^2 / (B * sum_j sigma_bj^2) > 0``: the gradient w.r.t. image
    b's pixels is ``grad_b V / (B V_b)``, a positive multiple of ``grad_b V``.
    """
    B = logvar_adv.shape[0]
    return logvar_adv.reshape(B, -1).logsumexp(1).mean() - _log_numel(logvar_adv)


def _log_numel(t: Any) -> float:
    import math

    return math.log(t[0].numel())


def _le(
    mu_adv: Any,
    logvar_adv: Any,
    mu_clean: Any,
    logvar_clean: Any,
    lam: float = DEFAULTS.le_lam,
    c_max: float = DEFAULTS.le_c_max,
) -> Any:
    """LE surrogate: ``mean_j log sigma_j - lam mean_j [log sigma_j^2 - c_max]_+`` (reconstruction).

    ``log sigma = logvar / 2``: the Gaussian entropy ``sum_j 1/2 log(2 pi e sigma_j^2)`` up to
    constants; every element gets the same say, whatever its scale. The hinge is the Lagrange
    term of the constraint ``log sigma^2 <= c_max`` (just below the clamp at 20).
    """
    import torch

    return (0.5 * logvar_adv).mean() - lam * torch.relu(logvar_adv - c_max).mean()


# ---------------------------------------------------------------------------- baselines


def _pid_addlog(mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any) -> Any:
    """PID ``add-log``: ``MSE(log var_clean, log var_adv) + MSE(mu_clean, mu_adv)``."""
    return ((logvar_adv - logvar_clean) ** 2).mean() + ((mu_adv - mu_clean) ** 2).mean()


def _pid_var(mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any) -> Any:
    """PID ``var``: ``MSE(std_clean, std_adv)`` with ``std = exp(logvar / 2)``."""
    import torch

    return ((torch.exp(0.5 * logvar_adv) - torch.exp(0.5 * logvar_clean)) ** 2).mean()


def _pid_kl(mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any) -> Any:
    """PID ``KL``: ``mean[log(s2 / s1) - 1/2 + (s1^2 + (m1 - m2)^2) / (2 s2^2)]``, 1 = clean, 2 = adv."""
    import torch

    return (
        0.5 * (logvar_adv - logvar_clean)
        - 0.5
        + (torch.exp(logvar_clean) + (mu_clean - mu_adv) ** 2)
        / (2 * torch.exp(logvar_adv))
    ).mean()


def _encoder_mean(
    mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any
) -> Any:
    """Latent-mean push: ``MSE(mu_adv, mu_clean)`` (PID ``mean``; untargeted PhotoGuard encoder attack)."""
    return ((mu_adv - mu_clean) ** 2).mean()


def _variance_sum(
    mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any
) -> Any:
    """``V = sum_{b, j} sigma_bj^2``: the naive objective, dominated by the largest variances."""
    import torch

    return torch.exp(logvar_adv).sum()


#: loss name -> loss (the trusting math; the public ``loss_*`` functions validate first)
LOSSES: dict[str, Callable[..., Any]] = {
    "la": _la,
    "le": _le,
    "pid_addlog": _pid_addlog,
    "pid_var": _pid_var,
    "pid_kl": _pid_kl,
    "encoder_mean": _encoder_mean,
    "variance_sum": _variance_sum,
}


def _public(math: Callable[..., Any], what: str) -> Callable[..., Any]:
    def loss(mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any) -> Any:
        return math(*_check_posteriors(mu_adv, logvar_adv, mu_clean, logvar_clean))

    loss.__doc__ = what
    return loss


def loss_la(mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any) -> Any:
    """LA (the paper's Laplace-based loss; our surrogate ``mean_b log mean_j sigma_bj^2``, Sec. "LA").

    Args:
        mu_adv, logvar_adv, mu_clean, logvar_clean: ``(B, C, h, w)`` float tensors of one shape.

    Returns:
        a scalar tensor (ascended by PGD).

    Raises:
        ValueError: shapes differ or not 4-D, non-finite values; TypeError: not tensors of floats.
    """
    return _la(*_check_posteriors(mu_adv, logvar_adv, mu_clean, logvar_clean))


def loss_le(
    mu_adv: Any,
    logvar_adv: Any,
    mu_clean: Any,
    logvar_clean: Any,
    lam: float = DEFAULTS.le_lam,
    c_max: float = DEFAULTS.le_c_max,
) -> Any:
    """LE (the paper's Lagrange-entropy loss; our surrogate, see :func:`_le`).

    Args:
        mu_adv, logvar_adv, mu_clean, logvar_clean: as :func:`loss_la`.
        lam: Lagrange multiplier (>= 0); c_max: the log-variance threshold (< 20, the clamp).

    Returns:
        a scalar tensor.

    Raises:
        ValueError: as :func:`loss_la`, ``lam < 0``, ``c_max > 20``.
    """
    lam = check_real(lam, "lam", low=0.0)
    c_max = check_real(c_max, "c_max", high=DEFAULTS.logvar_clamp[1])
    return _le(
        *_check_posteriors(mu_adv, logvar_adv, mu_clean, logvar_clean),
        lam=lam,
        c_max=c_max,
    )


def make_loss_le(
    lam: float = DEFAULTS.le_lam, c_max: float = DEFAULTS.le_c_max
) -> Callable[..., Any]:
    """LE with its own ``lam`` and ``c_max``, as a loss of the common signature (for :func:`pgd_protect`).

    Raises:
        ValueError: ``lam < 0`` or ``c_max > 20``.
    """
    lam = check_real(lam, "lam", low=0.0)
    c_max = check_real(c_max, "c_max", high=DEFAULTS.logvar_clamp[1])
    return functools.partial(_le, lam=lam, c_max=c_max)


def loss_pid_addlog(
    mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any
) -> Any:
    """PID's ``add-log`` objective (Li et al. 2024, ``PID.py``); args and errors as :func:`loss_la`."""
    return _pid_addlog(*_check_posteriors(mu_adv, logvar_adv, mu_clean, logvar_clean))


def loss_pid_var(mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any) -> Any:
    """PID's ``var`` objective, ``MSE(sigma_adv, sigma_clean)``; args and errors as :func:`loss_la`."""
    return _pid_var(*_check_posteriors(mu_adv, logvar_adv, mu_clean, logvar_clean))


def loss_pid_kl(mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any) -> Any:
    """PID's ``KL`` objective, ``mean KL(q_clean || q_adv)``; args and errors as :func:`loss_la`."""
    return _pid_kl(*_check_posteriors(mu_adv, logvar_adv, mu_clean, logvar_clean))


def loss_encoder_mean(
    mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any
) -> Any:
    """Latent-mean push ``MSE(mu_adv, mu_clean)``; args and errors as :func:`loss_la`."""
    return _encoder_mean(*_check_posteriors(mu_adv, logvar_adv, mu_clean, logvar_clean))


def loss_variance_sum(
    mu_adv: Any, logvar_adv: Any, mu_clean: Any, logvar_clean: Any
) -> Any:
    """``V = sum sigma^2`` over the batch; args and errors as :func:`loss_la`."""
    return _variance_sum(*_check_posteriors(mu_adv, logvar_adv, mu_clean, logvar_clean))


def get_loss(loss: Any) -> Callable[..., Any]:
    """A loss of :data:`LOSSES` by name, or ``loss`` itself if it is callable.

    Raises:
        ValueError: unknown name; TypeError: neither a string nor a callable.
    """
    from ._checks import _check_loss

    return _check_loss(loss)


del _public
