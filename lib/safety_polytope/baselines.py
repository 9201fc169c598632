"""What SaP is compared with: the code's MLP detector, a logistic probe, mean-difference steering."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as Fn
from torch import nn

from icml25.checks import check_int, check_real, check_rng, check_torch_generator

from ._checks import _check_labels, _check_states
from .generation import SteeredGenerator

__all__ = [
    "BaselineMLP",
    "fit_mlp",
    "logistic_probe",
    "mean_difference_direction",
    "MeanDifferenceGenerator",
]


class BaselineMLP(nn.Module):
    """The public code's ``BaselineMLP``: ``n_hidden`` ReLU layers of width F, a K-unit ReLU layer,
    then a *frozen* random linear read-out to one logit (probability of *safe*), trained with BCE.

    Xavier-uniform weights, zero biases (as the code). ``n_hidden = 5`` in the code.
    """

    def __init__(
        self,
        d: int,
        F: int,
        K: int,
        n_hidden: int = 5,
        rng: torch.Generator | None = None,
    ) -> None:
        """Args: d input width, F hidden width, K width of the facet-like layer, n_hidden layers,
        rng torch.Generator of the init (``None``: torch's global one).

        Raises: ValueError: a size < 1.
        """
        super().__init__()
        self.d, F, K = (
            check_int(d, "d", low=1),
            check_int(F, "F", low=1),
            check_int(K, "K", low=1),
        )
        n_hidden = check_int(n_hidden, "n_hidden", low=1)
        rng = check_torch_generator(rng)
        dims = [self.d] + [F] * n_hidden
        self.layers = nn.ModuleList(
            [nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])]
        )
        self.hidden = nn.Linear(F, K)
        self.classifier = nn.Linear(K, 1, bias=False)
        for lin in [*self.layers, self.hidden, self.classifier]:
            bound = math.sqrt(6.0 / (lin.in_features + lin.out_features))
            with torch.no_grad():
                lin.weight.copy_(
                    (torch.rand(lin.weight.shape, generator=rng) * 2 - 1) * bound
                )
                if lin.bias is not None:
                    lin.bias.zero_()
        self.classifier.weight.requires_grad_(False)  # frozen read-out, as in the code

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """(N, d) -> (N,) logit of *safe*. Trusts its argument."""
        x = h
        for lin in self.layers:
            x = torch.relu(lin(x))
        return self.classifier(torch.relu(self.hidden(x))).squeeze(1)

    def is_safe(self, h: Any) -> torch.Tensor:
        """``sigmoid(logit) >= 0.5``: (N, d) -> (N,) bool. Raises: ValueError: wrong d, NaN."""
        with torch.no_grad():
            return self.logits(_check_states(h, "h", self.d)) >= 0

    def steer_terms(
        self, x: torch.Tensor, inner_margin: float = 0.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The code's MLP steering terms per row: ``(-sigmoid(logit), [inner_margin - logit]_+)``."""
        z = self.logits(x)
        return -torch.sigmoid(z), torch.relu(inner_margin - z)


def fit_mlp(
    h: Any,
    y: Any,
    epochs: int,
    *,
    rng: np.random.Generator,
    F: int = 256,
    K: int = 10,
    n_hidden: int = 5,
    lr: float = 1e-3,
    batch: int = 128,
) -> BaselineMLP:
    """Train :class:`BaselineMLP` with Adam on BCE (label 1 = safe); returns the best-loss epoch.

    Args:
        h: (N, d) states. y: (N,) labels in {0, 1}, both present. epochs (>= 1). rng: numpy
        Generator. F, K, n_hidden: sizes. lr, batch: Adam settings.

    Returns:
        the fitted MLP (eval mode).

    Raises:
        ValueError: labels outside {0, 1}, one class only, NaN states. TypeError: rng.
    """
    rng = check_rng(rng)
    h = _check_states(h, "h")
    y = _check_labels(y, h.shape[0]).float()
    epochs, batch = check_int(epochs, "epochs", low=1), check_int(batch, "batch", low=1)
    lr = check_real(lr, "lr", low=0.0, low_open=True)
    mlp = BaselineMLP(
        h.shape[1],
        F,
        K,
        n_hidden,
        rng=torch.Generator().manual_seed(int(rng.integers(2**62))),
    )
    opt = torch.optim.Adam([p for p in mlp.parameters() if p.requires_grad], lr=lr)
    best, best_state = math.inf, None
    for _ in range(epochs):
        perm = torch.from_numpy(rng.permutation(h.shape[0]))
        for s in range(0, h.shape[0], batch):
            idx = perm[s : s + batch]
            loss = Fn.binary_cross_entropy_with_logits(mlp.logits(h[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            full = float(Fn.binary_cross_entropy_with_logits(mlp.logits(h), y))
        if full < best:
            best, best_state = full, {k: v.clone() for k, v in mlp.state_dict().items()}
    mlp.load_state_dict(best_state)
    return mlp.eval()


def logistic_probe(h: Any, y: Any, C: float = 1.0) -> Any:
    """A scikit-learn ``LogisticRegression`` (lbfgs, L2 penalty ``C``) on the states: the linear
    probe that gauges how hard the detection task is.

    Args: h (N, d) states; y (N,) labels in {0, 1}, both present; C inverse regularisation (> 0).

    Returns: the fitted estimator (``predict`` gives 1 = safe).

    Raises: ValueError: labels outside {0, 1}, one class only, NaN states, C <= 0.
    """
    from sklearn.linear_model import LogisticRegression

    h = _check_states(h, "h").numpy()
    y = _check_labels(y, h.shape[0]).numpy()
    return LogisticRegression(
        C=check_real(C, "C", low=0.0, low_open=True), max_iter=2000
    ).fit(h, y)


def mean_difference_direction(h: Any, y: Any) -> torch.Tensor:
    """RepE-style steering direction ``mean(h | safe) - mean(h | unsafe)`` (d,) float32.

    Raises: ValueError: labels outside {0, 1}, one class only, NaN states.
    """
    h = _check_states(h, "h")
    y = _check_labels(y, h.shape[0])
    return h[y == 1].mean(0) - h[y == 0].mean(0)


class MeanDifferenceGenerator(SteeredGenerator):
    """Activation steering baseline: add ``alpha * direction`` to the newest state of block ``layer``.

    ``gate=None`` edits every checked step (ungated); with a gate (a detector with ``is_safe``) only
    the steps it flags, in the gate's (standardised) coordinates via ``scale``.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        direction: torch.Tensor,
        layer: int,
        alpha: float = 1.0,
        first_n: int = 20,
        gate: Any = None,
        scale: Any = None,
    ) -> None:
        """Args: model, tokenizer, layer, first_n: as :class:`SteeredGenerator`; direction (d,)
        raw-state direction; alpha (>= 0) its multiple; gate: detector or ``None``; scale: the
        gate's standardisation ``(mean, std)``.

        Raises: ValueError: bad sizes.
        """
        super().__init__(model, tokenizer, gate, layer, first_n, "steer", scale=scale)
        self.direction = direction.float()
        self.alpha = check_real(alpha, "alpha", low=0.0)
        self.gate = gate

    def _edit(self, h: torch.Tensor) -> tuple[torch.Tensor, bool]:
        flagged = (
            True
            if self.gate is None
            else not bool(self.gate.is_safe(self._to_poly(h))[0])
        )
        return (h + self.alpha * self.direction, True) if flagged else (h, False)
