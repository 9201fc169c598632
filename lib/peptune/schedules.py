"""Masking schedules of PepTune's absorbing forward process (Sec. 3.2).

A token is masked by time ``t`` with probability ``1 - alpha_t = 1 - exp(-sigma(t))``:

- :class:`LogLinear`: ``sigma(t) = -log(1 - (1 - eps) t)``, mask probability ``(1 - eps) t``.
- :class:`LogPoly`: ``sigma(t) = -log(1 - (1 - eps) t^w)``, mask probability ``(1 - eps) t^w``.
- :class:`BondDependentSchedule`: peptide-bond tokens follow ``LogPoly(w)``, the rest
  ``LogLinear`` — bonds stay visible longer going forward, so the reverse process fixes the
  backbone first.

``dsigma`` is the exact derivative. The official code's ``LogPolyNoise.rate_noise`` returns
``(w t^(w-1) - eps) / (1 - (1 - eps) t^w)`` instead; it is kept as ``LogPoly(derivative="code")``.
"""

from __future__ import annotations

import torch

from icml25.checks import check_choice, check_real

__all__ = ["BondDependentSchedule", "LogLinear", "LogPoly", "loss_weight"]


def _check_eps(eps: float) -> float:
    return check_real(eps, "eps", low=0.0, high=1.0, low_open=True, high_open=True)


def _as_time(t) -> torch.Tensor:
    t = torch.as_tensor(
        t, dtype=torch.get_default_dtype() if not torch.is_tensor(t) else None
    )
    if not torch.is_floating_point(t):
        t = t.to(torch.get_default_dtype())
    if torch.isnan(t).any() or (t < 0).any() or (t > 1).any():
        raise ValueError("t must lie in [0, 1]")
    return t


class LogPoly:
    """``sigma(t) = -log(1 - (1 - eps) t^w)``; ``w = 1`` is the log-linear schedule.

    Args:
        w: the power (>= 1; the paper's bond schedule uses 3).
        eps: ``(0, 1)``; the mask probability at ``t = 1`` is ``1 - eps``.
        derivative: ``"exact"`` (default) or ``"code"`` (the official ``rate_noise``).

    Raises:
        ValueError: ``w < 1``, ``eps`` outside (0, 1), unknown ``derivative``.
    """

    def __init__(self, w: float = 3.0, eps: float = 1e-3, derivative: str = "exact"):
        self.w = check_real(w, "w", low=1.0)
        self.eps = _check_eps(eps)
        self.derivative = check_choice(derivative, "derivative", ("exact", "code"))

    def mask_prob(self, t: float | torch.Tensor) -> torch.Tensor:
        """``1 - alpha_t = (1 - eps) t^w``; ``t`` in [0, 1] (tensor or float)."""
        t = _as_time(t)
        return (1 - self.eps) * t**self.w

    def sigma(self, t: float | torch.Tensor) -> torch.Tensor:
        """Total noise ``sigma(t) = -log(1 - (1 - eps) t^w)``."""
        return -torch.log1p(-self.mask_prob(t))

    def dsigma(self, t: float | torch.Tensor) -> torch.Tensor:
        """``d sigma / dt`` (exact, or the official code's expression)."""
        t = _as_time(t)
        den = 1 - (1 - self.eps) * t**self.w
        if self.derivative == "code":
            return (self.w * t ** (self.w - 1) - self.eps) / den
        return self.w * (1 - self.eps) * t ** (self.w - 1) / den


class LogLinear(LogPoly):
    """``sigma(t) = -log(1 - (1 - eps) t)``, mask probability ``(1 - eps) t`` (MDLM's default)."""

    def __init__(self, eps: float = 1e-3):
        super().__init__(w=1.0, eps=eps)


def loss_weight(sigma: torch.Tensor, dsigma: torch.Tensor) -> torch.Tensor:
    """The continuous-time NELBO weight ``sigma'(t) / (exp(sigma(t)) - 1)``; ``1/t`` for log-linear."""
    return dsigma / torch.expm1(sigma)


class BondDependentSchedule:
    """Per-token schedule: ``LogPoly(w)`` on peptide-bond tokens, ``LogLinear`` elsewhere.

    ``uniform=True`` is the ablation: every token log-linear.

    Args:
        eps: ``(0, 1)``, shared by both schedules.
        w: the bond power (>= 1).
        uniform: ignore the bond mask.
        derivative: passed to the bond :class:`LogPoly`.

    Raises:
        ValueError: ``eps`` outside (0, 1), ``w < 1``.
    """

    def __init__(
        self,
        eps: float = 1e-3,
        w: float = 3.0,
        uniform: bool = False,
        derivative: str = "exact",
    ):
        self.eps = _check_eps(eps)
        self.base = LogLinear(eps)
        self.bond = LogPoly(w=w, eps=eps, derivative=derivative)
        self.w = self.bond.w
        self.uniform = bool(uniform)

    def _pick(self, fn: str, t, is_bond) -> torch.Tensor:
        t = _as_time(t)
        a = getattr(self.base, fn)(t)
        if is_bond is None:
            return a
        is_bond = torch.as_tensor(is_bond)
        if is_bond.dtype != torch.bool:
            raise ValueError(f"is_bond must be a bool tensor, got {is_bond.dtype}")
        try:
            torch.broadcast_shapes(t.shape, is_bond.shape)
        except RuntimeError:
            raise ValueError(
                f"t of shape {tuple(t.shape)} does not broadcast against is_bond "
                f"of shape {tuple(is_bond.shape)}"
            ) from None
        b = a if self.uniform else getattr(self.bond, fn)(t)
        return torch.where(is_bond, b, a)

    def mask_prob(
        self, t: float | torch.Tensor, is_bond: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mask probability of each token; ``t`` broadcast against ``is_bond`` (bool)."""
        return self._pick("mask_prob", t, is_bond)

    def sigma(
        self, t: float | torch.Tensor, is_bond: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``sigma`` of each token."""
        return self._pick("sigma", t, is_bond)

    def dsigma(
        self, t: float | torch.Tensor, is_bond: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``d sigma / dt`` of each token."""
        return self._pick("dsigma", t, is_bond)
