"""The paper's settings for chapter 13 (Jhoo, Hur and Lopes, "Pfeife", ICML 2025).

Provenance. The paper's Table 1 was not retrievable. The constants below were read from the
official code (``MerHS/pfeife``, MIT licence, one-commit snapshot as summarised in the chapter's
paper note: ``pfeife/schedule/planner.py``, ``scheduler.py``, ``option.py``, ``device_bench.py``)
and its README/benchmark scripts. Values marked *(ours)* are this book's choices.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PfeifeDefaults:
    """Pfeife's planner and runtime constants.

    Attributes:
        reserve_mem_ratio: a plan is memory-valid iff each rank's peak < ratio x capacity
            (``RESERVE_MEM_RATIO`` = 0.85).
        fwd_avg_min_ms: looped schedules (L > 1) are skipped when the mean stage forward time is
            at most this (``FWD_AVG_MIN`` = 3 ms).
        loop_cnts: loop counts L tried by the planner (S = L D stages).
        beam: beam width of the split search (2).
        max_iter: beam-search iterations (100).
        move_range: a neighbour moves one split point by up to this many ops (10).
        min_gap_div: the minimum stage length is ``n / ((S + 1) * min_gap_div)`` ops (8).
        init_repair_steps: times the initial memory-balanced splits are moved earlier when they are
            memory-invalid (10).
        early_stop_gain: a loop-count family stops the search when it improves the best plan by
            less than this fraction (1 %).
        rescale_factors: the proportional gap rescalings among the neighbours *(ours: the code's
            exact factors were not recorded in the note)*.
        comm_bench_b, comm_bench_wh: the p2p benchmark transfers 4 b w h bytes for b in
            ``comm_bench_b`` and w, h in ``comm_bench_wh`` (``device_bench.py``).
        repo_configs: benchmark configurations of the repository's scripts (D, micro-batch, M, L).
        readme_vit: the README's cost-model example (ViT-L, D = 2, M = 3): predicted and measured
            ms, search time s.
    """

    reserve_mem_ratio: float = 0.85
    fwd_avg_min_ms: float = 3.0
    loop_cnts: tuple[int, ...] = (1, 2, 3)
    beam: int = 2
    max_iter: int = 100
    move_range: int = 10
    min_gap_div: int = 8
    init_repair_steps: int = 10
    early_stop_gain: float = 0.01
    rescale_factors: tuple[float, ...] = (0.9, 0.95, 1.05, 1.1)
    comm_bench_b: tuple[int, ...] = (1, 2, 4)
    comm_bench_wh: tuple[int, ...] = (100, 400, 800, 3200)
    repo_configs: dict = field(
        default_factory=lambda: {
            "llama-7b": dict(D=8, micro_batch=1, M=8, L=2, seq=256),
            "sdxl": dict(D=8, micro_batch=8, M=8, L=1, px=128),
            "vit": dict(D=2, micro_batch=24, M=2, L=1),
        }
    )
    readme_vit: dict = field(
        default_factory=lambda: {
            "predicted_ms": 850.2,
            "measured_ms": 896.6,
            "search_s": 0.07,
        }
    )
    speedup_vs_sota: float = 0.22


DEFAULTS = PfeifeDefaults()
