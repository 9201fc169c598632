"""Claim records (icml25.claims) and the reproduction page (.ci/reproduction.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from icml25 import claims

ROOT = Path(__file__).resolve().parents[1]


def _claim(**kw):
    base = dict(
        id="x",
        claim="x beats y",
        paper="x > y (Table 1)",
        metric="x",
        holds=lambda m: m["x"] > m["y"],
        direction=lambda m: m["x"] > 0.9 * m["y"],
    )
    return claims.Claim(**{**base, **kw})


def test_verdicts():
    c = _claim()
    assert claims.verdict(c, {"x": 2, "y": 1}) == claims.HOLDS
    assert claims.verdict(c, {"x": 0.95, "y": 1}) == claims.DIRECTION
    assert claims.verdict(c, {"x": 0.5, "y": 1}) == claims.NOT_REPRODUCED
    assert (
        claims.verdict(_claim(direction=None), {"x": 0.95, "y": 1})
        == claims.NOT_REPRODUCED
    )
    assert claims.verdict(c, None) == claims.NOT_RECORDED
    assert claims.verdict(c, {"x": 2}) == "not recorded (y not recorded)"
    assert claims.verdict(c, {"x": float("nan"), "y": 1}) == "not recorded (x is NaN)"
    # NaN as record_metrics writes it
    assert claims.verdict(c, {"x": "nan", "y": 1}) == "not recorded (x is NaN)"
    # numpy bool
    assert (
        claims.verdict(_claim(holds=lambda m: np.float64(m["x"]) > 1), {"x": 2})
        == claims.HOLDS
    )


def test_shown_value_names_what_the_judge_compared_with():
    """A claim judged on x against y shows both sides; one judged on x alone shows x."""
    c = _claim()
    assert claims.shown_value(c, {"x": 2, "y": 1.25, "z": 9}) == "2 (vs y 1.25)"
    alone = _claim(holds=lambda m: m["x"] > 1, direction=None)
    assert claims.shown_value(alone, {"x": 2, "y": 1}) == "2"
    assert claims.shown_value(c, None) == claims.NOT_RECORDED
    assert claims.shown_value(c, {"y": 1}) == claims.NOT_RECORDED
    # the compared value missing: the value alone, and the verdict says why
    assert claims.shown_value(c, {"x": 2}) == "2"
    # a judge that fails on the run shows the value; verdict() reports the failure
    broken = _claim(holds=lambda m: m["x"] > m["y"] > m["no such"])
    assert claims.shown_value(broken, {"x": 2, "y": 1}) == "2 (vs y 1)"
    # direction() is read only where holds() is false, as verdict() reads it
    two = _claim(holds=lambda m: m["x"] > 1, direction=lambda m: m["x"] > m["z"])
    assert claims.shown_value(two, {"x": 2, "z": 5}) == "2"
    assert claims.shown_value(two, {"x": 0.5, "z": 0.1}) == "0.5 (vs z 0.1)"
    # a dict or list the judge read is not printed raw; numpy integers read as integers
    d = _claim(holds=lambda m: m["x"] > m["y"]["a"])
    assert claims.shown_value(d, {"x": 2, "y": {"a": 1}}) == "2"
    assert claims.shown_value(c, {"x": np.int64(1234567), "y": 1}) == "1234567 (vs y 1)"
    with pytest.raises(TypeError, match="metrics"):
        claims.shown_value(c, [("x", 1)])
    with pytest.raises(TypeError, match="claim"):
        claims.shown_value("x", {"x": 1})


def test_a_judge_that_returns_no_bool_is_an_error():
    with pytest.raises(TypeError, match="returned float"):
        claims.verdict(_claim(holds=lambda m: m["x"]), {"x": 1.0})


@pytest.mark.parametrize(
    "kw, err",
    [
        (dict(id=""), ValueError),
        (dict(claim=" "), ValueError),
        (dict(holds=3), TypeError),
        (dict(direction="yes"), TypeError),
        (dict(judged_by="asserted"), ValueError),
    ],
)
def test_bad_claims_are_refused(kw, err):
    with pytest.raises(err):
        _claim(**kw)


def test_unknown_chapter():
    with pytest.raises(ValueError, match="chapter"):
        claims.chapter_claims("98")


def _record(folder: Path, chapter: str, metrics=None, status=None, error=None):
    rec = {"chapter": chapter, "profile": "cpu", "metrics": metrics or {}}
    if status:
        rec["status"], rec["error"] = status, error
    (folder / f"{chapter}-cpu.json").write_text(json.dumps(rec))


def test_reproduction_rows_show_missing_failed_and_nan_never_drop(tmp_path):
    n06 = len(claims.chapter_claims("06"))
    empty = tmp_path / "none"
    empty.mkdir()
    rows = [r for r in claims.reproduction_rows(empty, empty, ["06"])]
    assert len(rows) == n06 and all(
        r["cpu_verdict"] == claims.NOT_RECORDED for r in rows
    )

    failed = tmp_path / "failed"
    failed.mkdir()
    _record(failed, "06", status="failed", error="cell 24: AssertionError")
    rows = claims.reproduction_rows(failed, empty, ["06"])
    assert len(rows) == n06 and all(
        r["cpu_verdict"] == "chapter failed: cell 24: AssertionError" for r in rows
    )

    nan = tmp_path / "nan"
    nan.mkdir()
    _record(nan, "06", {"matching_speedup_eta0": "nan", "learned_over_karger": 0.1})
    rows = {r["id"]: r for r in claims.reproduction_rows(nan, empty, ["06"])}
    assert len(rows) == n06
    assert (
        rows["speedup_eta0"]["cpu_verdict"]
        == "not recorded (matching_speedup_eta0 is NaN)"
    )
    assert rows["speedup_eta0"]["cpu"] == "NaN"
    assert rows["learned_predictions"]["cpu_verdict"] == claims.HOLDS
    assert rows["robust_threshold"]["cpu_verdict"].startswith("not recorded (")


def test_a_chapter_without_claims_is_listed(tmp_path):
    rows = claims.reproduction_rows(tmp_path, tmp_path)
    chapters = {r["chapter"] for r in rows}
    assert chapters == set(claims.CHAPTER_MODULES)


def test_reproduction_page_renders_every_row(tmp_path):
    cpu = tmp_path / "cpu"
    cpu.mkdir()
    _record(
        cpu,
        "06",
        {
            "matching_speedup_eta0": 41.7,
            "matching_karger_mean_trials": 43.1,
            "matching_boosted_mean_trials_eta0": 1.03,
            "matching_boosted_mean_trials_eta1_rho0": float("nan"),
        },
    )
    out = tmp_path / "reproduction.md"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / ".ci" / "reproduction.py"),
            str(ROOT / "book" / "reproduction.md"),
            str(out),
            "--cpu",
            str(cpu),
            "--gpu",
            str(tmp_path),
        ],
        check=True,
    )
    text = out.read_text()
    assert "<!-- reproduction-table -->" not in text
    rows = claims.reproduction_rows(cpu, tmp_path)
    assert text.count("<tr data-verdict=") == len(rows)
    assert "not recorded (matching_boosted_mean_trials_eta1_rho0 is NaN)" in text
    assert 'href="../notebooks/06_mincut_predictions.html#results"' in text
    assert "<td>holds</td><td>1</td>" in text.replace("\n", "")
    # each run's value names its metric and keeps the bare number for sorting
    assert (
        '<td data-value="41.7">41.7<br><code class="repro-metric">'
        "matching_speedup_eta0</code></td>"
    ) in text


def _claims_or_skip(chapter: str) -> list:
    """The chapter's claims; skipped where its module does not import here (its own
    tests report that)."""
    try:
        return claims.chapter_claims(chapter)
    except ImportError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("chapter", sorted(claims.CHAPTER_MODULES))
def test_claims_name_metrics_the_chapter_records(chapter):
    """Every claim's metrics appear in the chapter notebook (where its metrics dict is built)."""
    cl = _claims_or_skip(chapter)
    nbs = list((ROOT / "notebooks").glob(f"{chapter}_*.ipynb"))
    if not cl or not nbs:
        pytest.skip("no claim records yet")
    src = nbs[0].read_text()
    for c in cl:
        assert f'\\"{c.metric}\\"' in src, (
            f"claim {c.id}: metric {c.metric!r} is not recorded by the chapter"
        )
        if c.judged_by.startswith("check: "):
            title = c.judged_by[len("check: ") :]
            assert " ".join(title.split())[:60] in " ".join(
                json.loads(src)
                and "".join("".join(x["source"]) for x in json.loads(src)["cells"])
                .replace("#", " ")
                .split()
            ), f"claim {c.id}: no check cell reads {title[:60]!r}"


def test_judged_by_shows_the_checks_whole_first_sentence(tmp_path):
    """A claim's title is the check's opening words; the tables show its whole first
    sentence (parentheses and abbreviations kept), and a title no check starts with is
    shown as given."""
    cell = {
        "cell_type": "code",
        "source": [
            "# Check: at equal steps, FDM's residual (averaged over 11 t. values) is\n",
            "# lower than CFM's, i.e. the bound is tighter. Tolerance: none.\n",
            "assert True\n",
        ],
    }
    (tmp_path / "01_x.ipynb").write_text(json.dumps({"cells": [cell]}))
    got = claims.judged_by_text("01", "check: at equal steps, FDM's residual", tmp_path)
    assert got == (
        "check: at equal steps, FDM's residual (averaged over 11 t. values) is lower "
        "than CFM's, i.e. the bound is tighter."
    )
    assert claims.judged_by_text("01", "check: no such check", tmp_path) == (
        "check: no such check"
    )
    # words from the middle of a check are not its title
    assert claims.judged_by_text("01", "check: FDM's residual", tmp_path) == (
        "check: FDM's residual"
    )
    assert claims.judged_by_text("01", "check: ", tmp_path) == "check: "
    assert claims.judged_by_text("01", "reported only", tmp_path) == "reported only"
    assert claims.judged_by_text("02", "check: x", tmp_path) == "check: x"
    with pytest.raises(ValueError, match="chapter"):
        claims.judged_by_text("97", "check: x", tmp_path)
    with pytest.raises(TypeError, match="judged_by"):
        claims.judged_by_text("01", None, tmp_path)


@pytest.mark.parametrize("chapter", sorted(claims.CHAPTER_MODULES))
def test_every_check_title_expands_to_its_check(chapter):
    for c in _claims_or_skip(chapter):
        if c.judged_by.startswith("check: "):
            text = claims.judged_by_text(chapter, c.judged_by)
            title = " ".join(c.judged_by.split())
            blocks = claims._check_comments(chapter, ROOT / "notebooks")
            # a whole sentence: it ends with a full stop or is all of its check's comment
            assert text.startswith(title) and (
                text.endswith(".") or any(b.endswith(text[7:]) for b in blocks)
            ), (c.id, text)
