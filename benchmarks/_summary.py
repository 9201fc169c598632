"""One table across chapters: every benchmarked hot loop against the machine's measured limit.

Reads every ``benchmarks/results/*.json`` (except this script's own output) and collects the
``hot_loops`` entries that ``benchmarks/_limits.py`` writes (loop, size, achieved rate, the limit it
is measured against, the fraction of that limit, the ratio to the loop's baseline). A result file
without them (an older run, or a new chapter's benchmark that does not record them yet) is listed
by name, never an error. Prints the table and writes ``benchmarks/results/limits_summary.json``:
``{"rows": [...], "without_limits": [...], "unreadable": [...]}``, each row holding display strings
under ``loop, size, achieved, limit, fraction, ratio`` (the book's execution-statistics page shows
those) and the numbers beside them.

    .venv/bin/python benchmarks/_summary.py [--results benchmarks/results] [--out .../limits_summary.json]
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

# one definition of a hot-loop row, its check and its rate format, shared with the chapters
from icml25.hot_loops import loop_problems, percent, si

RESULTS = Path(__file__).resolve().parent / "results"
OUT_NAME = "limits_summary.json"


def _row(benchmark: str, loop: dict[str, Any]) -> dict[str, Any]:
    fraction, ratio = loop["fraction_of_limit"], loop.get("ratio_to_baseline")
    ok = isinstance(fraction, (int, float)) and math.isfinite(fraction)
    ratio_ok = isinstance(ratio, (int, float)) and math.isfinite(ratio)
    return {
        "benchmark": benchmark,
        "loop": str(loop["loop"]),
        "size": str(loop["size"]),
        "achieved": si(loop["achieved_per_s"], loop["unit"]),
        "limit": f"{si(loop['limit_per_s'], loop['unit'])} ({loop['limit']})",
        "fraction": percent(fraction) if ok else "n/a",
        "ratio": (f"{ratio:.3g}x vs {loop.get('baseline')}" if ratio_ok else "-"),
        "kind": loop["kind"],
        "achieved_per_s": loop["achieved_per_s"],
        "limit_per_s": loop["limit_per_s"],
        "unit": loop["unit"],
        "fraction_of_limit": fraction,
        "baseline": loop.get("baseline"),
        "ratio_to_baseline": ratio,
        "counted": loop.get("counted", ""),
    }


def collect(results: Path) -> dict[str, Any]:
    """The table's rows and the result files that have no (valid) ``hot_loops``."""
    rows: list[dict[str, Any]] = []
    without: list[str] = []
    unreadable: list[dict[str, str]] = []
    limits: dict[str, Any] = {}
    for path in sorted(results.glob("*.json")):
        if path.name == OUT_NAME:
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            unreadable.append(
                {"file": path.name, "error": f"{type(err).__name__}: {err}"[:200]}
            )
            continue
        loops = record.get("hot_loops") if isinstance(record, dict) else None
        loops = loops if isinstance(loops, list) else []
        good = [loop for loop in loops if not loop_problems(loop)]
        for i, loop in enumerate(loops):
            problems = loop_problems(loop)
            if problems:
                unreadable.append(
                    {
                        "file": path.name,
                        "error": f"hot_loops[{i}]: " + "; ".join(problems),
                    }
                )
        if not good:
            without.append(path.name)
            continue
        name = path.stem
        rows += [_row(name, loop) for loop in good]
        lim = record.get("machine_limits")
        if isinstance(lim, dict):
            limits[name] = {
                k: lim.get(k) for k in ("copy_Bps", "fp64_flops", "fp32_flops", "gpu")
            }
            limits[name]["utc"] = (record.get("limits_provenance") or {}).get("utc")
    return {
        "rows": rows,
        "without_limits": without,
        "unreadable": unreadable,
        "limits_by_benchmark": limits,
    }


def render(summary: dict[str, Any]) -> str:
    """The table as fixed-width text."""
    cols = ("loop", "size", "achieved", "limit", "fraction", "ratio")
    rows = summary["rows"]
    widths = {c: min(60, max([len(c)] + [len(r[c]) for r in rows])) for c in cols}
    lines = [
        "  ".join(c.ljust(widths[c]) for c in cols),
        "  ".join("-" * widths[c] for c in cols),
    ]
    for r in rows:
        lines.append("  ".join(r[c][: widths[c]].ljust(widths[c]) for c in cols))
    if summary["without_limits"]:
        lines.append(
            "results without hot-loop limits: " + ", ".join(summary["without_limits"])
        )
    for bad in summary["unreadable"]:
        lines.append(f"unreadable result {bad['file']}: {bad['error']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    summary = collect(args.results)
    summary["utc"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = args.out or args.results / OUT_NAME
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(render(summary))
    print(
        f"wrote {out} ({len(summary['rows'])} loops from {len(summary['limits_by_benchmark'])} benchmarks)"
    )
    return summary


if __name__ == "__main__":
    main()
