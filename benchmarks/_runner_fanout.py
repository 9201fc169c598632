"""Benchmark: ``make execute-all`` on Ray against the same tasks run one after the other.

Issue 15's measurement at a size this 2-core machine can afford in one sitting: the chapters given
(default 06 and 11, two of the lighter cpu profiles) for seeds 0, 1 and 2, first one task after
another through :func:`icml25.runner.run_task` (papermill in its own process, exactly what a Ray
task calls), then all of them through :func:`icml25.runner.execute_all` on a local Ray cluster
(``--force``: nothing skipped). Ray's overhead per task is measured the same way on a notebook
that does almost nothing (``tests/fixtures/runner/98_tiny.ipynb``): the fan-out's wall time minus the
ideal (sequential sum / CPUs), per task, and the whole Ray start-up included.

Writes ``benchmarks/results/runner/fanout.json`` (wall seconds, the ratio, per-task records,
provenance). ``--chapters`` and ``--seeds`` change the set; the whole book (19 chapters x 3 seeds)
takes hours on two cores, so the default is a sample.

    .venv/bin/python benchmarks/_runner_fanout.py [--chapters 06 11] [--seeds 0 1 2]

Run by hand, not by ``make bench`` (the underscore keeps it out of that loop): it executes whole
chapters, about ten minutes for the default sample on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from icml25 import runner
from icml25.common import repo_root

import _limits

# a subfolder: benchmarks/_summary.py reads the hot loops of results/*.json, and this run has none
RESULTS = Path(__file__).resolve().parent / "results" / "runner" / "fanout.json"


def sequential(
    notebooks: list[Path], seeds: list[int], work: Path
) -> tuple[float, list[dict]]:
    """Every (notebook, seed) one after the other through run_task; wall seconds and records."""
    t0 = time.perf_counter()
    rows = []
    for nb in notebooks:
        for seed in seeds:
            task = runner.Task(str(nb), "cpu", seed)
            r = runner.run_task(
                task, str(work / "results"), str(work / "executed"), 900.0, 4.0
            )
            rows.append({"task": r.task, "status": r.status, "wall_s": r.wall_s})
            print(f"  sequential {r.task}: {r.status} {r.wall_s:.1f} s", flush=True)
    return time.perf_counter() - t0, rows


def fanned_out(
    notebooks: list[Path], seeds: list[int], work: Path
) -> tuple[float, list[dict]]:
    """The same tasks through execute_all on a local Ray cluster (start-up included)."""
    t0 = time.perf_counter()
    res = runner.execute_all(
        notebooks,
        "cpu",
        seeds,
        results=work / "results",
        out_dir=work / "executed",
        force=True,
        progress=False,
    )
    wall = time.perf_counter() - t0
    return wall, [{"task": r.task, "status": r.status, "wall_s": r.wall_s} for r in res]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapters", nargs="+", default=["06", "11"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args()
    notebooks = runner.chapter_notebooks(a.chapters)
    tiny = [repo_root() / "tests" / "fixtures" / "runner" / "98_tiny.ipynb"]
    cpus = os.cpu_count() or 1
    record: dict = {
        "benchmark": "runner_fanout",
        "chapters": a.chapters,
        "seeds": a.seeds,
        "cpus": cpus,
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp_p = Path(tmp)
        for name, nbs in (("tiny", tiny), ("chapters", notebooks)):
            seeds = list(range(2 * cpus)) if name == "tiny" else a.seeds
            print(f"== {name}: {len(nbs) * len(seeds)} tasks", flush=True)
            seq_wall, seq_rows = sequential(nbs, seeds, tmp_p / f"{name}-seq")
            ray_wall, ray_rows = fanned_out(nbs, seeds, tmp_p / f"{name}-ray")
            n = len(seq_rows)
            ideal = seq_wall / min(cpus, n)
            record[name] = {
                "n_tasks": n,
                "sequential_wall_s": seq_wall,
                "ray_wall_s": ray_wall,
                "sequential_over_ray": seq_wall / ray_wall,
                "ideal_ray_wall_s": ideal,
                "ray_overhead_per_task_s": (ray_wall - ideal) / n,
                "sequential": seq_rows,
                "ray": ray_rows,
            }
            print(
                f"{name}: sequential {seq_wall:.1f} s, Ray {ray_wall:.1f} s, ratio {seq_wall / ray_wall:.2f}x "
                f"(ideal on {min(cpus, n)} CPUs: {ideal:.1f} s; overhead {(ray_wall - ideal) / n:.1f} s per task)",
                flush=True,
            )
    record["provenance"] = _limits.provenance()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
