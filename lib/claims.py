"""Claim records: each chapter declares the paper's claims once, and every table judges them.

A chapter module (or package) defines ``CLAIMS``, a list of :class:`Claim`: an identifier, the
claim in words, the paper's number or direction (with its table or figure), the metric shown as
"this run", how the run is judged (the check cell that asserts it, or "reported only") and a
*judge*: a function of the run's metrics that says whether the claim holds, holds in direction
only, or does not reproduce at this scale. The same records and the same judge give

- the chapter's results table (:func:`claims_table`: claim | paper | this run | GPU run |
  verdict, for the cpu run in the notebook and the recorded GPU run in ``data/results/``);
- the book's reproduction page (:func:`reproduction_rows`, rendered by ``.ci/reproduction.py``),
  one row per claim of every chapter, with the verdict of this build's cpu run and of the GPU run.

A metric the run did not record, a NaN, or a chapter whose run failed is shown as such
("not recorded", "not recorded (NaN)", "chapter failed: ..."), never dropped.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

__all__ = [
    "HOLDS",
    "judged_by_text",
    "shown_value",
    "DIRECTION",
    "NOT_REPRODUCED",
    "NOT_RECORDED",
    "VERDICTS",
    "Claim",
    "verdict",
    "chapter_claims",
    "claims_table",
    "load_run",
    "reproduction_rows",
    "CHAPTER_MODULES",
]

HOLDS = "holds"
DIRECTION = "holds in direction only"
NOT_REPRODUCED = "does not reproduce at this scale"
NOT_RECORDED = "not recorded"
VERDICTS = (HOLDS, DIRECTION, NOT_REPRODUCED, NOT_RECORDED)

#: chapter -> module holding its CLAIMS (the book's chapter modules, book/notation.md)
CHAPTER_MODULES = {
    "01": "lowra",
    "02": "vmf_exploration",
    "04": "gim",
    "05": "safety_polytope",
    "06": "mincut_predictions",
    "07": "flow_divergence",
    "09": "p2p",
    "10": "omapl",
    "11": "mnl_bandits",
    "12": "hc_oracles",
    "15": "pars",
    "16": "grokking",
    "17": "maxent_mislead",
    "19": "pcl",
    "03": "vae_variance_attack",
    "08": "univlg",
    "13": "pfeife",
    "14": "combimots",
    "18": "peptune",
}


class _Missing(Exception):
    """A metric the judge needs is absent or not finite."""


class _Metrics(dict):
    """The run's metrics as a judge sees them: a missing or non-finite value stops the judge."""

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise _Missing(f"{key} not recorded")
        value = dict.__getitem__(self, key)
        if _is_nan(value):
            raise _Missing(f"{key} is NaN")
        return value


class _Reading(_Metrics):
    """Metrics that remember which keys a judge read."""

    def __init__(self, metrics: Mapping[str, Any]) -> None:
        super().__init__(metrics)
        self.read: list[str] = []

    def __getitem__(self, key: str) -> Any:
        if key not in self.read:
            self.read.append(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self.keys():
            return default
        return self[key]


def shown_value(claim: "Claim", metrics: Mapping[str, Any] | None) -> str:
    """What a results table shows as a run's value of a claim: the claim's ``metric``, and,
    when its judge compares it with other recorded values, those too, named, e.g.
    ``"0.81 (vs victim_fdfr_clean 0.41)"``: the verdict is on the comparison, so the row
    shows both sides.

    Args:
        claim: the claim.
        metrics: the run's metrics (``None``: no run recorded).
    """
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    if metrics is not None and not isinstance(metrics, Mapping):
        raise TypeError(f"metrics must be a mapping, got {type(metrics).__name__}")
    shown = _value(metrics, claim.metric)
    if metrics is None or shown == NOT_RECORDED:
        return shown
    m = _Reading(metrics)
    try:
        # the values the verdict rests on: holds(), and direction() only where holds()
        # is false, as verdict() reads them
        if not claim.holds(m) and claim.direction is not None:
            claim.direction(m)
    except Exception:  # noqa: BLE001  (verdict() reports a judge's failure)
        pass
    others = [
        k
        for k in m.read
        if k != claim.metric and k in metrics and _is_scalar(metrics[k])
    ]
    if not others:
        return shown
    return f"{shown} (vs " + ", ".join(f"{k} {_fmt(metrics[k])}" for k in others) + ")"


def _is_scalar(value: Any) -> bool:
    """A number, bool or string a table cell can show (not a dict or a list)."""
    return (
        not isinstance(value, (Mapping, list, tuple, set))
        and not hasattr(value, "__len__")
        or isinstance(value, str)
    )


def _is_nan(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in ("nan", "inf", "-inf")
    try:
        return isinstance(value, (int, float)) and not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of a paper, as the book judges it.

    Attributes:
        id: short identifier, unique within the chapter (``"speedup_eta0"``).
        claim: the claim in words (what a reader should check).
        paper: the paper's number or direction, with its table or figure (``"Fig. 3: ..."``).
        metric: the key of the run's metrics shown as "this run".
        holds: ``metrics -> bool``: the claim holds at this run's scale.
        direction: optional ``metrics -> bool``: the weaker statement that the effect points the
            paper's way (then a failed ``holds`` reads "holds in direction only").
        judged_by: ``"check: <the check cell's title>"`` when a ``# Check:`` cell asserts it,
            else ``"reported only"``.
    """

    id: str
    claim: str
    paper: str
    metric: str
    holds: Callable[[Mapping[str, Any]], bool]
    direction: Callable[[Mapping[str, Any]], bool] | None = None
    judged_by: str = "reported only"

    def __post_init__(self) -> None:
        for name in ("id", "claim", "paper", "metric", "judged_by"):
            if (
                not isinstance(getattr(self, name), str)
                or not getattr(self, name).strip()
            ):
                raise ValueError(
                    f"Claim.{name} must be a non-empty string, got {getattr(self, name)!r}"
                )
        if not callable(self.holds):
            raise TypeError(
                f"Claim.holds must be callable (metrics -> bool), got {type(self.holds).__name__}"
            )
        if self.direction is not None and not callable(self.direction):
            raise TypeError("Claim.direction must be callable or None")
        if not (
            self.judged_by == "reported only" or self.judged_by.startswith("check: ")
        ):
            raise ValueError(
                f"Claim.judged_by must be 'reported only' or 'check: <title>', got {self.judged_by!r}"
            )


def verdict(claim: Claim, metrics: Mapping[str, Any] | None) -> str:
    """The verdict of one claim on one run.

    Args:
        claim: the claim.
        metrics: the run's metrics (``None``: no run recorded).

    Returns:
        one of :data:`VERDICTS`, or ``"not recorded (<why>)"`` when a metric the judge reads is
        missing or NaN.

    Raises:
        TypeError: the judge returned something other than a bool (a judge bug, never hidden).
    """
    if metrics is None:
        return NOT_RECORDED
    m = _Metrics(metrics)
    try:
        ok = claim.holds(m)
        if not isinstance(ok, bool):
            ok = _judged_bool(ok, claim, "holds")
        if ok:
            return HOLDS
        if claim.direction is not None:
            d = claim.direction(m)
            if not isinstance(d, bool):
                d = _judged_bool(d, claim, "direction")
            if d:
                return DIRECTION
        return NOT_REPRODUCED
    except _Missing as why:
        return f"{NOT_RECORDED} ({why})"


def _judged_bool(value: Any, claim: Claim, which: str) -> bool:
    try:
        import numpy as np

        if isinstance(value, np.bool_):
            return bool(value)
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(
        f"claim {claim.id!r}: {which}(metrics) returned {type(value).__name__}, not bool"
    )


def chapter_claims(chapter: str) -> list[Claim]:
    """The ``CLAIMS`` of a chapter's module (``[]`` when it declares none yet).

    Raises:
        ValueError: ``chapter`` is not a chapter of the book, or its claims repeat an id.
    """
    if chapter not in CHAPTER_MODULES:
        raise ValueError(
            f"chapter must be one of {sorted(CHAPTER_MODULES)}, got {chapter!r}"
        )
    mod = importlib.import_module(f"icml25.{CHAPTER_MODULES[chapter]}")
    claims = list(getattr(mod, "CLAIMS", []))
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"chapter {chapter}: claim ids repeat: {dup}")
    for c in claims:
        if not isinstance(c, Claim):
            raise TypeError(
                f"chapter {chapter}: CLAIMS holds a {type(c).__name__}, not a Claim"
            )
    return claims


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v}"
    if type(v).__module__ == "numpy" and type(v).__name__.startswith(("int", "uint")):
        return f"{int(v)}"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return "NaN" if math.isnan(f) else str(f)
    return f"{f:.4g}"


def _value(metrics: Mapping[str, Any] | None, key: str) -> str:
    if metrics is None:
        return NOT_RECORDED
    if key not in metrics:
        return NOT_RECORDED
    return _fmt(metrics[key])


def load_run(chapter: str, profile: str, folder: str | os.PathLike) -> dict | None:
    """A recorded run: ``{"metrics", "provenance", "status"}`` or ``None`` when none is recorded.

    A record whose ``status`` is ``"failed"`` (a runner's record of a chapter that did not finish)
    is returned as is, with its ``error``.
    """
    path = Path(folder) / f"{chapter}-{profile}.json"
    if not path.exists():
        return None
    rec = json.loads(path.read_text())
    rec.setdefault("status", "ok")
    return rec


def _run_metrics(run: dict | None) -> tuple[Mapping[str, Any] | None, str | None]:
    if run is None:
        return None, None
    if run.get("status") == "failed":
        return None, f"chapter failed: {run.get('error', 'no error recorded')}"
    return run.get("metrics", {}), None


def claims_table(
    chapter: str,
    metrics: Mapping[str, Any],
    *,
    gpu_folder: str | os.PathLike | None = None,
) -> "Any":
    """The chapter's results table from its claim records.

    Args:
        chapter: two-digit chapter number.
        metrics: this run's metrics (the dict given to :func:`icml25.common.record_metrics`).
        gpu_folder: where the GPU run is recorded (default ``data/results``).

    Returns:
        a ``pandas.DataFrame`` with columns claim, paper, this run, verdict, GPU run, GPU verdict,
        judged by (one row per claim, in the order declared).

    Raises:
        ValueError: the chapter declares no claims, or ``metrics`` is not a mapping.
    """
    import pandas as pd

    from icml25.common import repo_root

    if not isinstance(metrics, Mapping):
        raise ValueError(f"metrics must be a mapping, got {type(metrics).__name__}")
    claims = chapter_claims(chapter)
    if not claims:
        raise ValueError(
            f"chapter {chapter} declares no CLAIMS in icml25.{CHAPTER_MODULES[chapter]}"
        )
    folder = (
        Path(gpu_folder) if gpu_folder is not None else repo_root() / "data" / "results"
    )
    gpu, gpu_fail = _run_metrics(load_run(chapter, "gpu", folder))
    rows = []
    for c in claims:
        rows.append(
            {
                "claim": c.claim,
                "paper": c.paper,
                "this run": shown_value(c, metrics),
                "verdict": verdict(c, metrics),
                "GPU run": gpu_fail or shown_value(c, gpu),
                "GPU verdict": gpu_fail or verdict(c, gpu),
                "judged by": judged_by_text(chapter, c.judged_by),
            }
        )
    pd.set_option("display.max_colwidth", None)
    table = pd.DataFrame(rows)
    table.attrs["icml25_class"] = "icml25-claims"  # its layout in book/_static/book.css
    return table


def _check_comments(chapter: str, notebooks: Path) -> list[str]:
    """The leading comment block of each ``# Check:`` cell of a chapter, one line each."""
    found = sorted(notebooks.glob(f"{chapter}_*.ipynb"))
    if not found:
        return []
    try:
        stamp = found[0].stat().st_mtime_ns
    except OSError:
        return []
    # a table asks once per claim: the notebook is read once per version of the file
    return list(_check_comments_of(found[0], stamp))


@functools.lru_cache(maxsize=64)
def _check_comments_of(path: Path, stamp: int) -> tuple[str, ...]:
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):
        return ()
    blocks = []
    for cell in cells:
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        if cell.get("cell_type") != "code" or not src.lstrip().startswith("# Check"):
            continue
        lines = []
        for line in src.lstrip().splitlines():
            if not line.startswith("#"):
                break
            lines.append(line.lstrip("#").strip())
        blocks.append(" ".join(" ".join(lines).split()))
    return tuple(blocks)


def _first_sentence_from(block: str, start: int, min_end: int) -> str:
    """``block[start:]`` up to the first full stop at or after ``min_end`` outside
    parentheses (the end of the block if none)."""
    depth = 0
    for i, ch in enumerate(block):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif (
            ch == "."
            and i >= min_end
            and depth == 0
            and (i + 1 == len(block) or block[i + 1] == " ")
            and not _ABBREVIATION.search(block[: i + 1])
        ):
            return block[start : i + 1]
    return block[start:]


#: a full stop that ends an abbreviation, not a sentence ("i.e.", "e.g.", "vs.", "Fig.")
_ABBREVIATION = re.compile(r"(?:\b(?:i\.e|e\.g|vs|cf|etc|Fig|Eq|Sec|resp|approx)\.)$")


def judged_by_text(
    chapter: str, judged_by: str, notebooks: str | os.PathLike | None = None
) -> str:
    """What a results table shows under "judged by": for ``"check: <title>"``, the whole
    first sentence of the check cell that starts with that title (a title is only the
    check's opening words, which read cut off mid-sentence); otherwise ``judged_by``.

    Args:
        chapter: two-digit chapter number.
        judged_by: a :class:`Claim`'s ``judged_by``.
        notebooks: the folder of the chapters (default ``<repo>/notebooks``); where the
            chapter's notebook or its check cell is not found, ``judged_by`` is returned
            unchanged.
    """
    if not isinstance(judged_by, str):
        raise TypeError(f"judged_by must be a string, got {type(judged_by).__name__}")
    if chapter not in CHAPTER_MODULES:
        raise ValueError(
            f"chapter must be one of {sorted(CHAPTER_MODULES)}, got {chapter!r}"
        )
    prefix = "check: "
    if not judged_by.startswith(prefix):
        return judged_by
    if notebooks is None:
        from icml25.common import repo_root

        notebooks = repo_root() / "notebooks"
    title = " ".join(judged_by[len(prefix) :].split())
    if not title:
        return judged_by
    for block in _check_comments(chapter, Path(notebooks)):
        body = block[len("Check:") :].lstrip() if block.startswith("Check:") else block
        # the title is the check's opening words, not words found anywhere in it
        if not body.startswith(title):
            continue
        return prefix + _first_sentence_from(body, 0, len(title) - 1)
    return judged_by


def reproduction_rows(
    cpu_folder: str | os.PathLike,
    gpu_folder: str | os.PathLike,
    chapters: Iterable[str] | None = None,
) -> list[dict[str, str]]:
    """One row per claim of every chapter, for the reproduction page.

    Args:
        cpu_folder: this build's cpu records (``NN-cpu.json``).
        gpu_folder: the recorded GPU runs (``NN-gpu.json``).
        chapters: which chapters (default: every chapter of :data:`CHAPTER_MODULES`).

    Returns:
        dicts with chapter, id, claim, paper, metric, cpu, cpu_verdict, gpu, gpu_verdict,
        judged_by. A chapter that declares no claims yet gives one row saying so; a chapter whose
        run is missing or failed keeps its rows, with the verdict saying why.
    """
    out: list[dict[str, str]] = []
    for ch in chapters if chapters is not None else sorted(CHAPTER_MODULES):
        try:
            claims = chapter_claims(ch)
        except ImportError as exc:
            out.append(_placeholder(ch, f"module not importable: {exc}"))
            continue
        if not claims:
            out.append(_placeholder(ch, "no claim records yet"))
            continue
        cpu, cpu_fail = _run_metrics(load_run(ch, "cpu", cpu_folder))
        gpu, gpu_fail = _run_metrics(load_run(ch, "gpu", gpu_folder))
        for c in claims:
            out.append(
                {
                    "chapter": ch,
                    "id": c.id,
                    "claim": c.claim,
                    "paper": c.paper,
                    "metric": c.metric,
                    "cpu": cpu_fail or shown_value(c, cpu),
                    "cpu_verdict": cpu_fail or verdict(c, cpu),
                    "gpu": gpu_fail or shown_value(c, gpu),
                    "gpu_verdict": gpu_fail or verdict(c, gpu),
                    "judged_by": judged_by_text(ch, c.judged_by),
                }
            )
    return out


def _placeholder(ch: str, why: str) -> dict[str, str]:
    return {
        "chapter": ch,
        "id": "-",
        "claim": f"({why})",
        "paper": "",
        "metric": "",
        "cpu": NOT_RECORDED,
        "cpu_verdict": NOT_RECORDED,
        "gpu": NOT_RECORDED,
        "gpu_verdict": NOT_RECORDED,
        "judged_by": "",
    }
