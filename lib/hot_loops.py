"""A benchmark's hot loops against the machine's measured limits, as every chapter shows them.

``make bench`` writes ``benchmarks/results/<benchmark>.json`` with the rows of
``benchmarks/_limits.py``; a chapter's benchmark section calls :func:`show_hot_loops` to print the
run's limits and show its table. Re-exported by :mod:`icml25.common`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["hot_loops_table", "show_hot_loops"]


def hot_loops_table(
    benchmark: str, folder: str | os.PathLike | None = None
) -> "tuple[pd.DataFrame, str] | None":
    """A benchmark's hot loops against this machine's limits: the table and its one-sentence summary.

    Reads ``benchmarks/results/<benchmark>.json`` (written by ``make bench``; the row fields are
    those of ``benchmarks/_limits.py``).

    Args:
        benchmark: the JSON's stem, e.g. ``"flow_divergence"``.
        folder: where the JSON lies; default ``benchmarks/results`` of this checkout.

    Returns:
        ``(table, sentence)``: one row per hot loop (loop, size, achieved, limit, fraction of the
        limit, ratio to baseline, baseline) and a sentence naming the limits measured in that run
        and the range of fractions reached; ``None`` when the JSON is absent or records no hot loops.

    Raises:
        TypeError: ``benchmark`` is not a non-empty string.
        ValueError: a hot-loop row lacks a field of ``benchmarks/_limits.py``.
    """
    import pandas as pd

    if not isinstance(benchmark, str) or not benchmark:
        raise TypeError(f"benchmark must be a non-empty string, got {benchmark!r}")
    # here, not at the top: icml25.common re-exports this module
    from icml25.common import repo_root

    base = (
        Path(folder) if folder is not None else repo_root() / "benchmarks" / "results"
    )
    path = base / f"{benchmark}.json"
    run = json.loads(path.read_text()) if path.exists() else {}
    if not run.get("hot_loops"):
        return None
    need = (
        "loop",
        "size",
        "achieved_per_s",
        "unit",
        "limit_per_s",
        "limit",
        "fraction_of_limit",
        "ratio_to_baseline",
        "baseline",
    )
    for r in run["hot_loops"]:
        missing = [k for k in need if k not in r]
        if missing:
            raise ValueError(
                f"{path.name}: hot-loop row {r.get('loop')!r} lacks {missing}"
            )
    table = pd.DataFrame(
        [
            {
                "loop": r["loop"],
                "size": r["size"],
                "achieved": f"{r['achieved_per_s']:.3g} {r['unit']}",
                "limit": f"{r['limit_per_s']:.3g} {r['unit']} ({r['limit']})",
                "fraction of the limit": r["fraction_of_limit"],
                "ratio to baseline": r["ratio_to_baseline"],
                "baseline": r["baseline"] or "-",
            }
            for r in run["hot_loops"]
        ]
    )
    best = table.loc[table["fraction of the limit"].idxmax()]
    machine = run["machine_limits"]
    prov = run["limits_provenance"]
    sentence = (
        f"Measured by `make bench` ({prov['utc']}, load average {prov['load_average'][0]:.1f} on "
        f"{prov['cpu_count']} cores): copy bandwidth {machine['copy_Bps'] / 1e9:.1f} GB/s, fp64 BLAS "
        f"{machine['fp64_flops'] / 1e9:.1f} GFLOP/s, fp32 BLAS {machine['fp32_flops'] / 1e9:.1f} GFLOP/s. "
        f"The {len(table)} hot loops reach {table['fraction of the limit'].min():.2%} to "
        f"{table['fraction of the limit'].max():.1%} of their limit; the closest is {best['loop']} "
        f"({best['size']}) at {best['fraction of the limit']:.1%}."
    )
    return table, sentence


def show_hot_loops(benchmark: str, folder: str | os.PathLike | None = None) -> None:
    """Print :func:`hot_loops_table`'s sentence and display its table, as every chapter does.

    It binds no name in the caller's namespace, so a chapter's own variables are never shadowed
    (a cell copied into thirteen chapters once rebound chapter 07's plot extent ``lim``).
    Prints a line saying how to record them when no hot loops are recorded.

    Raises:
        as :func:`hot_loops_table`.
    """
    found = hot_loops_table(benchmark, folder)
    if found is None:
        print(
            f"no hot-loop limits recorded yet: `make bench` writes them to benchmarks/results/{benchmark}.json"
        )
        return
    table, sentence = found
    print(sentence)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython is a dependency of ipywidgets
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(table.to_string(index=False))
    else:
        display(
            table.style.format(
                {"fraction of the limit": "{:.2%}", "ratio to baseline": "{:.3g}"},
                na_rep="-",
            ).hide(axis="index")
        )
