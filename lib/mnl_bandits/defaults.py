"""Chapter 11's paper settings, in one place (book/authoring.md: ``<Method>Defaults``, ``DEFAULTS``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MNLDefaults", "DEFAULTS"]


@dataclass(frozen=True)
class MNLDefaults:
    """Harness settings of the authors' code (Lee & Oh 2024, reused by Lee & Oh, ICML 2025).

    Attributes:
        N: items offered to choose from each round (100).
        d: feature dimension (5).
        K: maximum assortment size, the authors' default with non-uniform revenues (5).
        K_uniform: maximum assortment size, the authors' default with uniform revenues (15).
        v0: weight of the outside (no-purchase) option (1).
        B: norm bound on the true parameter, ``||w*|| <= B`` (1).
        delta: confidence level of the radii, in (0, 1) (0.05).
        T: horizon of the authors' harness, in rounds (3000).
    """

    N: int = 100
    d: int = 5
    K: int = 5
    K_uniform: int = 15
    v0: float = 1.0
    B: float = 1.0
    delta: float = 0.05
    T: int = 3000


#: The one instance the library's signatures and the chapter read.
DEFAULTS = MNLDefaults()
