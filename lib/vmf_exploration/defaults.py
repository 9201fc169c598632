"""The paper's settings and the chapter's defaults, in one place (``icml25.vmf_exploration.DEFAULTS``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["VMFDefaults", "Figure2aSetting", "DEFAULTS"]


@dataclass(frozen=True)
class Figure2aSetting:
    """The small-dimension setting of the paper's Figure 2a (Sec. 5): P_vMF ≈ P_B ≈ P0.

    Attributes:
        d: dimension of the sphere's ambient space.
        kappa: vMF concentration = B-exp inverse temperature.
        alpha: cosine <V, A> of the fixed action A.
        n_max: the largest action-set size of the curve.
    """

    d: int = 4
    kappa: float = 1.0
    alpha: float = 0.5
    n_max: int = 1_000_000


@dataclass(frozen=True)
class VMFDefaults:
    """The chapter's settings: the paper's experiment and the defaults of the methods.

    Attributes:
        fig2a: the setting of Figure 2a (:class:`Figure2aSetting`).
        hnsw_M: HNSW graph degree (faiss ``IndexHNSWFlat`` ``M``).
        hnsw_ef_construction: HNSW build-time beam width (``efConstruction``).
        hnsw_ef_search: HNSW query-time beam width (``efSearch``). With these defaults, on
            50,000 uniform unit vectors at d = 32 and vMF(kappa=10) queries, recall@1 was 0.996
            (0.94 with efSearch = 64, 0.81 with 32); building took ~4 s on one core.
        samples_per_trial: vMF draws per random action set in ``mc_prob_curve`` (the
            official code's ``bs``, 256 there).
        chunk_elements: CPU memory bound, in matrix entries, of one block of inner products.
    """

    fig2a: Figure2aSetting = field(default_factory=Figure2aSetting)
    hnsw_M: int = 16
    hnsw_ef_construction: int = 40
    hnsw_ef_search: int = 128
    samples_per_trial: int = 1000
    chunk_elements: int = 1 << 22


DEFAULTS = VMFDefaults()
