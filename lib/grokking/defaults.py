"""The paper's settings for chapter 16, in one place (official code ``Tikquuss/grokking_beyong_l2_norm``).

Notebooks read them from here (``grok.DEFAULTS.sparse.n``) instead of retyping them; the cpu
profile scales the step counts down, the gpu profile uses these values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "SparseDefaults",
    "CompletionDefaults",
    "MLPDefaults",
    "GrokkingDefaults",
    "DEFAULTS",
]


@dataclass(frozen=True)
class SparseDefaults:
    """Compressed-sensing setting of the paper's Figs 3-4 (official notebook values)."""

    n: int = 100  # signal dimension
    s: int = 5  # non-zeros of a*
    N: int = 30  # measurements
    alpha: float = 0.1  # step size
    beta1: float = 1e-5  # l1 penalty
    beta2: float = 0.0  # l2 penalty
    init: float = 1e-6  # a_0 = init * ones ("identity" init)
    n_steps: int = 10**6
    eval_every: int = 10**3
    #: the official grid of the t2 ~ 1/(alpha beta) law (Fig. 4)
    alpha_grid: tuple[float, ...] = (0.005, 0.01, 0.0275, 0.055, 0.0825, 0.1)
    beta1_grid: tuple[float, ...] = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


@dataclass(frozen=True)
class CompletionDefaults:
    """Matrix-completion setting of the paper's Figs 5-6 (official notebook values)."""

    n1: int = 10
    n2: int = 10
    r: int = 2
    N: int = 80  # observed entries
    alpha: float = 0.1
    beta_star: float = 1e-4
    init: float = 1e-6
    n_steps: int = 10**7
    eval_every: int = 10**4


@dataclass(frozen=True)
class MLPDefaults:
    """Modular-addition MLP of the paper's Figs 1-2 (official notebook values)."""

    p: int = 97
    d: int = 64
    train_fraction: float = 0.4
    lr: float = 1e-2
    epochs: int = 10_001
    batch_size: int = 2048


@dataclass(frozen=True)
class GrokkingDefaults:
    """All of the chapter's paper settings: ``sparse`` (Figs 3-4), ``completion`` (Figs 5-6) and
    ``mlp`` (Figs 1-2)."""

    sparse: SparseDefaults = field(default_factory=SparseDefaults)
    completion: CompletionDefaults = field(default_factory=CompletionDefaults)
    mlp: MLPDefaults = field(default_factory=MLPDefaults)


#: the paper's settings (``DEFAULTS.sparse.n == 100``)
DEFAULTS = GrokkingDefaults()
