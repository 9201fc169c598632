"""The paper's settings for chapter 12 (Braverman, Ergun, Wang, Zhou, ICML 2025).

The paper is a theory paper: it states no experimental grid. The values below are the knobs of
the chapter's notes (``p`` grid, ``K`` samples per pair, the noise models) and the sizes the
reconstructed experiments use at paper scale; the notebook's ``gpu`` profile reads them from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HCOraclesDefaults:
    """Settings of the splitting-oracle experiments (reconstructed; the paper gives no grid).

    Attributes:
        ps: success probabilities of one oracle answer.
        hsbm_depth, hsbm_q0, hsbm_decay: the planted model at paper scale, ``n = 2^depth`` and
            edge probability ``q0 decay^(h - 1)`` for a pair whose LCA has height ``h``.
        Ks: third vertices sampled per pair by the sampled algorithms; ``mw_K`` the one used by
            the near-linear MW algorithm.
        noises: ``"uniform"`` (a wrong answer is uniform over the triple) or ``"decoy"`` (it
            follows a fixed decoy tree).
        gpu_count_n: the largest ``n`` whose triples the gpu profile counts exactly (the subset DP
            stops at ``n = 14`` and the tree enumeration at ``n = 7`` on every profile).
    """

    ps: tuple[float, ...] = (1.0, 0.9, 0.75, 0.6, 0.5)
    hsbm_depth: int = 10
    hsbm_q0: float = 0.9
    hsbm_decay: float = 0.5
    Ks: tuple[int, ...] = (16, 64)
    mw_K: int = 64
    noises: tuple[str, ...] = ("uniform", "decoy")
    gpu_count_n: int = 2048


DEFAULTS = HCOraclesDefaults()
