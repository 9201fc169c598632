"""Grading time for N submissions of one chapter (issue 14's measurement).

    .venv/bin/python .ci/grade_timing.py CHAPTER [--n 30] [--jobs 2] [--module PATH] [--out JSON]

Builds the chapter's editions, writes N submissions (a third each: the instructor edition, the
untouched student edition, the student edition filled with the solutions), grades them with
``grade(..., jobs=JOBS)`` and prints the wall time. ``--module`` grades with another copy of
``classroom.py`` (for example the code before the sandbox) instead of ``icml25.classroom``.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def _load(module: str | None):
    if module is None:
        from icml25 import classroom

        return classroom
    # importable by name, so that spawned grading workers find it
    path = Path(module).resolve()
    sys.path.insert(0, str(path.parent))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(path.parent), os.environ.get("PYTHONPATH", "")]
    )
    return importlib.import_module(path.stem)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("chapter")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--module", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cr = _load(args.module)
    nb = next((ROOT / "notebooks").glob(f"{args.chapter}_*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="grade-timing-") as tmp:
        tmp = Path(tmp)
        ed = cr.assign(nb, tmp / "out")
        chapter = cr.parse_chapter(nb)
        student = nbformat.read(ed.student, as_version=4)
        filled = copy.deepcopy(student)
        by_name = {n: ex for ex in chapter.exercises for n in ex.functions}
        for cell in filled.cells:
            if "otter_answer_cell" in cell.metadata.get("tags", []):
                names = set(cr.signatures(cell.source))
                cell.source = next(by_name[n] for n in names if n in by_name).solution
        kinds = {
            "instructor": nbformat.read(ed.instructor, as_version=4),
            "untouched": student,
            "filled": filled,
        }
        subs = tmp / "subs"
        subs.mkdir()
        for k in range(args.n):
            kind = list(kinds)[k % 3]
            nbformat.write(kinds[kind], subs / f"{kind}_{k:02d}.ipynb")
        t0 = time.perf_counter()
        df = cr.grade(ed.autograder, subs, tmp / "scores.csv", jobs=args.jobs)
        wall = time.perf_counter() - t0
    res = {
        "chapter": nb.stem,
        "n": args.n,
        "jobs": args.jobs,
        "module": args.module or "icml25.classroom",
        "wall_s": round(wall, 2),
        "per_submission_s": round(wall / args.n, 3),
        "mean_percent": {
            k: float(df.loc[[i for i in df.index if i.startswith(k)], "percent"].mean())
            for k in kinds
        },
        "errors": int((df["error"] != "").sum()),
    }
    print(json.dumps(res, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
