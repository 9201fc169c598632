"""The execution-statistics page (.ci/execution_stats.py): a row per chapter, gaps spelt out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".ci"))
from icml25 import common  # noqa: E402

import execution_stats as es  # noqa: E402


def _write(folder: Path, chapter: str, profile: str, **prov) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rec = {"chapter": chapter, "profile": profile, "metrics": {}, "provenance": prov}
    (folder / f"{chapter}-{profile}.json").write_text(json.dumps(rec))


def test_every_chapter_has_a_row_and_missing_runs_say_so(tmp_path):
    chapters = sorted(es.chapter_titles())
    assert len(chapters) >= 14
    cpu, gpu = tmp_path / "cpu", tmp_path / "gpu"
    _write(cpu, chapters[0], "cpu", wall_time_s=123.4, peak_rss_mib=812.3, device="cpu")
    # a NaN wall time
    _write(cpu, chapters[1], "cpu", wall_time_s=float("nan"), device="cpu")
    _write(gpu, chapters[0], "gpu", wall_time_s=300.0, device="NVIDIA H200")
    rows = {r["chapter"]: r for r in es.rows(cpu, gpu)}
    assert set(rows) == set(chapters)
    assert (
        rows[chapters[0]]["cpu_wall_s"] == "123"
        and rows[chapters[0]]["cpu_peak_mib"] == "812"
    )
    assert (
        rows[chapters[0]]["gpu_minutes"] == "5.0"
        and rows[chapters[0]]["gpu_device"] == "NVIDIA H200"
    )
    assert rows[chapters[1]]["cpu_wall_s"] == es.NOT_RECORDED  # NaN is not a time
    # an older record without it
    assert rows[chapters[1]]["cpu_peak_mib"] == es.NOT_RECORDED
    assert rows[chapters[2]]["cpu_wall_s"] == es.NOT_RECORDED  # no record at all
    assert rows[chapters[2]]["gpu_minutes"] == es.NOT_RECORDED


def test_page_renders_every_chapter(tmp_path):
    cpu = tmp_path / "cpu"
    _write(cpu, "06", "cpu", wall_time_s=61.0, peak_rss_mib=400.0, device="cpu")
    out = tmp_path / "execution.md"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / ".ci" / "execution_stats.py"),
            str(ROOT / "book" / "execution.md"),
            str(out),
            "--cpu",
            str(cpu),
            "--gpu",
            str(tmp_path / "none"),
        ],
        check=True,
    )
    text = out.read_text()
    assert es.MARKER not in text
    assert text.count("<tr><td><a href=") == len(es.chapter_titles())
    assert 'href="../notebooks/06_mincut_predictions.html"' in text
    assert "<td>61</td><td>400</td>" in text


def test_record_metrics_stores_peak_memory(tmp_path):
    path = common.record_metrics(
        "06", {"x": 1.0}, "cpu", seed=0, wall_time_s=1.0, out_dir=tmp_path
    )
    prov = json.loads(path.read_text())["provenance"]
    assert prov["peak_rss_mib"] > 10  # this test process holds NumPy and torch at least
