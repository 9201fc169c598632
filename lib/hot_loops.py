"""A benchmark's hot loops against the machine's measured limits, as every chapter shows them.

``make bench`` writes ``benchmarks/results/<benchmark>.json`` with the rows of
``benchmarks/_limits.py``; a chapter's benchmark section calls :func:`show_hot_loops` to print
the run's limits and show its table, and ``benchmarks/_summary.py`` builds the cross-chapter
table from the same rows. The row fields (:data:`KEYS`), the check of one row
(:func:`loop_problems`) and the rate format (:func:`si`) live here once, for both.
Re-exported by :mod:`icml25.common`.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "KEYS",
    "NUMBERS",
    "loop_problems",
    "percent",
    "si",
    "hot_loops_table",
    "show_hot_loops",
]

#: fields every hot-loop row of ``benchmarks/_limits.py`` holds
KEYS = (
    "loop",
    "size",
    "kind",
    "achieved_per_s",
    "unit",
    "limit_per_s",
    "limit",
    "fraction_of_limit",
)
#: the fields among :data:`KEYS` that must be finite numbers
NUMBERS = ("achieved_per_s", "limit_per_s", "fraction_of_limit")
#: a benchmark name: a plain identifier a file name can hold (100 characters at most)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


def _finite(x: Any) -> bool:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer too large for a float (a 400-digit JSON number)
        return False


def loop_problems(loop: Any) -> list[str]:
    """What is wrong with one hot-loop row (an empty list when nothing is).

    A row is a dict holding every field of :data:`KEYS`, the fields of :data:`NUMBERS` finite
    numbers (``achieved_per_s`` and ``limit_per_s`` > 0), ``loop``/``size``/``unit``/``limit``
    strings, and ``ratio_to_baseline`` absent, ``None`` or a finite number.
    """
    if not isinstance(loop, dict):
        return [f"a row must be an object, got {type(loop).__name__}"]
    problems = [f"missing {k!r}" for k in KEYS if k not in loop]
    for k in NUMBERS:
        if k in loop and not _finite(loop[k]):
            problems.append(f"{k!r} must be a finite number, got {loop[k]!r}")
        elif k in loop and k != "fraction_of_limit" and loop[k] <= 0:
            problems.append(f"{k!r} must be positive, got {loop[k]!r}")
    for k in ("loop", "size", "unit", "limit", "kind"):
        if k in loop and not isinstance(loop[k], str):
            problems.append(f"{k!r} must be a string, got {loop[k]!r}")
    ratio = loop.get("ratio_to_baseline")
    if ratio is not None and not _finite(ratio):
        problems.append(f"'ratio_to_baseline' must be null or finite, got {ratio!r}")
    if not problems and not math.isclose(
        loop["fraction_of_limit"],
        loop["achieved_per_s"] / loop["limit_per_s"],
        rel_tol=1e-6,
    ):
        problems.append(
            f"'fraction_of_limit' {loop['fraction_of_limit']!r} is not achieved_per_s / "
            f"limit_per_s = {loop['achieved_per_s'] / loop['limit_per_s']!r}"
        )
    return problems


def percent(fraction: float) -> str:
    """A fraction of a limit as a percentage a reader can compare across rows: ``22.7%``,
    ``0.34%``, ``0.012%``, ``4.9e-04%`` (three significant digits at most, never a bare
    decimal); ``"n/a"`` for anything that is not a finite number."""
    if not _finite(fraction):
        return "n/a"
    pct = 100 * fraction
    if pct == 0 or abs(pct) >= 10:
        return f"{pct:.1f}%"
    if abs(pct) >= 1e-3:
        return f"{float(f'{pct:.3g}'):g}%"
    return f"{pct:.1e}%"


def si(value: float, unit: str) -> str:
    """``1.23 GB/s``, ``45.6 GFLOP/s``: three significant digits and a decimal SI prefix;
    ``"n/a"`` for anything that is not a finite number. ``unit`` is ``"B/s"`` or
    ``"FLOP/s"`` (any ``"X/s"``)."""
    if not _finite(value):
        return "n/a"
    base = unit.replace("/s", "")
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{base}/s"
    return f"{value:.3g} {base}/s"


def _checked_run(path: Path) -> dict[str, Any] | None:
    """The record at ``path`` with its hot loops checked; ``None`` when it has none.

    Raises:
        ValueError: not JSON (NaN included), not an object, ``hot_loops`` not a list, a row
            that :func:`loop_problems` faults, or missing/malformed ``machine_limits`` /
            ``limits_provenance``; the message names the file and the key.
    """
    try:
        run = json.loads(path.read_text(), parse_constant=_refuse_constant)
    except (ValueError, OverflowError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror})") from None
    if not isinstance(run, dict):
        raise ValueError(f"{path}: the record must be a JSON object")
    loops = run.get("hot_loops")
    if not loops:
        return None
    if not isinstance(loops, list):
        raise ValueError(f"{path}: 'hot_loops' must be a list of rows")
    for i, row in enumerate(loops):
        problems = loop_problems(row)
        if problems:
            name = row.get("loop") if isinstance(row, dict) else None
            raise ValueError(
                f"{path}: hot_loops[{i}] ({name!r}): " + "; ".join(problems)
            )
    machine = run.get("machine_limits")
    need = ("copy_Bps", "fp64_flops", "fp32_flops")
    if not isinstance(machine, dict) or not all(
        _finite(machine.get(k)) and machine[k] > 0 for k in need
    ):
        raise ValueError(
            f"{path}: 'machine_limits' must hold finite positive {', '.join(need)}"
        )
    prov = run.get("limits_provenance")
    if not isinstance(prov, dict) or not (
        isinstance(prov.get("utc"), str) and prov["utc"].strip()
    ):
        raise ValueError(f"{path}: 'limits_provenance' must hold 'utc' (a time)")
    load = prov.get("load_average")
    if load is not None and not (isinstance(load, list) and load and _finite(load[0])):
        raise ValueError(f"{path}: 'limits_provenance.load_average' must be a list")
    command = prov.get("command")
    if command is not None and not (isinstance(command, str) and command.strip()):
        raise ValueError(f"{path}: 'limits_provenance.command' must be a command line")
    cores = prov.get("cpu_count")
    if cores is not None and (
        isinstance(cores, bool) or not isinstance(cores, int) or cores < 1
    ):
        raise ValueError(
            f"{path}: 'limits_provenance.cpu_count' must be an integer >= 1"
        )
    return run


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a result may hold")


def _vs_baseline(row: dict[str, Any]) -> str:
    """``"2.96x NumPy reference"``: the loop's speed against its baseline, one cell."""
    ratio, name = row.get("ratio_to_baseline"), row.get("baseline")
    if ratio is None or not _finite(ratio):
        return "-"
    return f"{float(ratio):.3g}x {name}" if name else f"{float(ratio):.3g}x"


def hot_loops_table(
    benchmark: str, folder: str | os.PathLike | None = None
) -> "tuple[pd.DataFrame, str] | None":
    """A benchmark's hot loops against this machine's limits: the table and its summary.

    Reads ``benchmarks/results/<benchmark>.json`` (written by ``make bench``; the row fields
    are those of ``benchmarks/_limits.py``, :data:`KEYS`).

    Args:
        benchmark: the JSON's stem, a plain identifier such as ``"flow_divergence"``.
        folder: where the JSON lies; default ``benchmarks/results`` of this checkout.

    Returns:
        ``(table, sentence)``: one row per hot loop (loop, size, achieved of limit, fraction
        of the limit, vs baseline as "2.96x NumPy reference", what its bytes or operations
        count: six columns, so that the table fits the page) and a
        sentence naming the command that measured them (from the record's provenance), the limits measured in that run and
        the range of fractions reached; ``None`` when the JSON is absent or records no hot
        loops.

    Raises:
        TypeError: ``benchmark`` is not a string.
        ValueError: ``benchmark`` is not a plain identifier (``"../x"``, ``""``), or the JSON
            is malformed (not JSON, NaN, a row missing a field of :data:`KEYS` or holding a
            non-finite number, ``hot_loops`` not a list, limits or provenance missing); the
            message names the file and the key.
    """
    import pandas as pd

    if not isinstance(benchmark, str):
        raise TypeError(f"benchmark must be a string, got {type(benchmark).__name__}")
    if not _NAME.fullmatch(benchmark):
        raise ValueError(
            "benchmark must be a plain identifier of at most 100 characters (a result's "
            f"file stem), got {benchmark!r}"
        )
    # here, not at the top: icml25.common re-exports this module
    from icml25.common import repo_root

    base = (
        Path(folder) if folder is not None else repo_root() / "benchmarks" / "results"
    )
    path = base / f"{benchmark}.json"
    run = _checked_run(path) if path.exists() else None
    if run is None:
        return None
    loops = run["hot_loops"]
    table = pd.DataFrame(
        [
            {
                "loop": r["loop"],
                "size": r["size"],
                "achieved of limit": f"{si(r['achieved_per_s'], r['unit'])} of "
                f"{si(r['limit_per_s'], r['unit'])} ({r['limit']})",
                "fraction of the limit": float(r["fraction_of_limit"]),
                "vs baseline": _vs_baseline(r),
                "counted": r.get("counted") or "-",
            }
            for r in loops
        ]
    )
    fractions = table["fraction of the limit"]
    best = table.loc[fractions.idxmax()]
    machine = run["machine_limits"]
    prov = run["limits_provenance"]
    command = prov.get("command") or f"{benchmark}.py"
    load = prov.get("load_average")
    where = f"{prov['utc']}"
    if load:
        where += f", load average {load[0]:.1f}"
    if isinstance(prov.get("cpu_count"), int):
        where += f" on {prov['cpu_count']} cores"
    closest = (
        f"{best['loop']} ({best['size']}) at {percent(best['fraction of the limit'])}"
    )
    reach = (
        f"The one hot loop is {closest}."
        if len(table) == 1
        else f"The {len(table)} hot loops reach {percent(fractions.min())} to "
        f"{percent(fractions.max())} of their limit; the closest is {closest}."
    )
    sentence = (
        f"Measured by `python benchmarks/{command}` ({where}): copy bandwidth "
        f"{machine['copy_Bps'] / 1e9:.1f} GB/s, fp64 BLAS "
        f"{machine['fp64_flops'] / 1e9:.1f} GFLOP/s, fp32 BLAS "
        f"{machine['fp32_flops'] / 1e9:.1f} GFLOP/s. {reach}"
    )
    if fractions.max() > 1:
        sentence += (
            " A fraction above 100% means the limit measured at the start of that run was"
            " depressed by other load on the machine: rerun `make bench` on a quiet machine."
        )
    return table, sentence


def show_hot_loops(benchmark: str, folder: str | os.PathLike | None = None) -> None:
    """Print :func:`hot_loops_table`'s sentence and display its table, as every chapter does.

    It binds no name in the caller's namespace, so a chapter's own variables are never
    shadowed (a cell copied into thirteen chapters once rebound chapter 07's plot extent
    ``lim``). Prints a line saying how to record them when no hot loops are recorded.

    Raises:
        as :func:`hot_loops_table`.
    """
    found = hot_loops_table(benchmark, folder)
    if found is None:
        where = (
            Path(folder) / f"{benchmark}.json"
            if folder is not None
            else f"benchmarks/results/{benchmark}.json"
        )
        print(f"no hot-loop limits recorded yet in {where}: `make bench` writes them")
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
            table.style.format({"fraction of the limit": percent}, na_rep="-")
            .set_table_attributes('class="dataframe"')
            .hide(axis="index")
        )
