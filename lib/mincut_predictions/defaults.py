"""The paper's settings and the method's fixed constants, in one frozen dataclass (``DEFAULTS``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MatchingDefaults", "MinCutDefaults", "DEFAULTS", "METHODS"]

#: the contraction methods :func:`~icml25.mincut_predictions.min_cut` can repeat
METHODS = ("karger", "boosted_karger", "karger_stein", "fpz", "boosted_fpz")


@dataclass(frozen=True)
class MatchingDefaults:
    """The matching-graph family of the paper's first experiment set (Sec. 5):
    :func:`~icml25.mincut_predictions.matching_graph` with these sizes."""

    #: vertices (two halves of ``n / 2``)
    n: int = 600
    #: random perfect matchings between the halves
    k: int = 100
    #: unit weights removed at vertex 0, so
    #: ``{0}`` is the minimum cut, of value ``k - t``
    t: int = 10

    @property
    def min_cut(self) -> int:
        """The planted minimum cut ``k - t``: the weighted degree of vertex 0."""
        return self.k - self.t


@dataclass(frozen=True)
class MinCutDefaults:
    """Defaults, as in the official experiment script.

    Attributes:
        brute_force_size: graphs with at most this many super-vertices are solved exactly by
            enumeration inside Karger–Stein and FPZ.
        rel_tol: a cut counts as minimum when ``value <= opt (1 + rel_tol) + abs_tol``.
        abs_tol: see ``rel_tol``.
        success_prob: the success probability :func:`~icml25.mincut_predictions.min_cut` aims
            for when no trial count is given.
        matching: the matching-graph family of the first experiment set.

    How many trials one kernel call draws is the kernel's decision
    (``icml25.kernels.contraction.max_batch``), not a paper setting.
    """

    brute_force_size: int = 10
    rel_tol: float = 1e-9
    abs_tol: float = 1e-12
    success_prob: float = 0.99
    matching: MatchingDefaults = field(default_factory=MatchingDefaults)


DEFAULTS = MinCutDefaults()
