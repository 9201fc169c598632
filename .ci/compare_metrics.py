"""Compare two folders of chapter metrics (``NN-cpu.json`` from ``record_metrics``), timings aside.

Used when a refactor must leave every recorded result unchanged::

    python .ci/compare_metrics.py BEFORE_DIR AFTER_DIR [--rtol 1e-6] [--allow KEY ...]

A metric whose name says it is a time (``time``, ``seconds``, ``wall``, ``_s``, ``_ms``, ``speed``,
``per_s``) is skipped; every other leaf must agree: equal for strings, ints and bools, within
``rtol`` (relative) for floats. ``--allow CHAPTER:KEY`` lists a metric expected to change (a bug
fix), shown but not counted. Exit status 1 when anything else differs or a chapter is missing.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

TIMING = re.compile(
    r"(time|seconds|wall|cost_ratio|_s$|_s_|_ms$|_ms_|speed|per_s|throughput|elapsed)",
    re.IGNORECASE,
)


def _leaves(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{prefix}[{i}]")
    else:
        yield prefix, value


def _same(a, b, rtol: float) -> bool:
    if (
        isinstance(a, bool)
        or isinstance(b, bool)
        or isinstance(a, str)
        or isinstance(b, str)
    ):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) or isinstance(b, float):
            if math.isnan(a) and math.isnan(b):
                return True
            return math.isclose(a, b, rel_tol=rtol, abs_tol=rtol * 1e-3)
        return a == b
    return a == b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument(
        "--only", nargs="*", default=None, help="chapters to compare (two digits each)"
    )
    ap.add_argument(
        "--allow", nargs="*", default=[], help="CHAPTER:KEY prefixes expected to change"
    )
    args = ap.parse_args(argv)
    failures = 0
    for before in sorted(args.before.glob("[0-9][0-9]-cpu.json")):
        after = args.after / before.name
        chapter = before.name[:2]
        if args.only is not None and chapter not in args.only:
            continue
        if not after.exists():
            print(f"{chapter}: MISSING in {args.after}")
            failures += 1
            continue
        a = dict(_leaves(json.loads(before.read_text())["metrics"]))
        b = dict(_leaves(json.loads(after.read_text())["metrics"]))
        compared = skipped = changed = allowed = 0
        for key in sorted(set(a) | set(b)):
            if TIMING.search(key):
                skipped += 1
                continue
            compared += 1
            if key not in a or key not in b:
                print(f"{chapter}: {key}: only in {'after' if key in b else 'before'}")
                changed += 1
                continue
            if not _same(a[key], b[key], args.rtol):
                ok = any(f"{chapter}:{key}".startswith(p) for p in args.allow)
                print(
                    f"{chapter}: {key}: {a[key]!r} -> {b[key]!r}{'  (allowed: listed fix)' if ok else ''}"
                )
                allowed += ok
                changed += not ok
        failures += changed
        print(
            f"{chapter}: {compared} metrics compared, {skipped} timings skipped, "
            f"{changed} changed, {allowed} allowed changes"
        )
    print(
        "metrics unchanged" if failures == 0 else f"{failures} unexpected differences"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
