"""Render the book's execution-statistics page: what each chapter cost in this build.

``book/execution.md`` is the template: the marker line ``<!-- execution-table -->`` is replaced
by one table, a row per chapter of ``notebooks/``: the cpu-profile run of this build (``--cpu``:
its ``NN-cpu.json`` record, wall time and peak memory from its provenance) and the recorded GPU
run (``--gpu``, default ``data/results``: device, minutes). A chapter without a record says "not
recorded", never disappears. With ``--bench`` (``benchmarks/results/limits_summary.json``, written
by ``make bench``) a second table lists each benchmarked loop against the machine's measured limit.

Usage: python .ci/execution_stats.py TEMPLATE OUT --cpu _build/results [--gpu data/results]
       [--bench benchmarks/results/limits_summary.json]
"""

from __future__ import annotations

import argparse
import html
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- execution-table -->"
NOT_RECORDED = "not recorded"


def chapter_titles() -> dict[str, tuple[str, str]]:
    """chapter number -> (notebook stem, title from the notebook's first heading)."""
    out = {}
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        title = nb.stem
        try:
            cells = json.loads(nb.read_text())["cells"]
            first = "".join(cells[0]["source"]).splitlines()[0] if cells else ""
            if first.startswith("# "):
                title = first[2:].strip()
        except (ValueError, KeyError, IndexError):
            pass
        out[nb.stem[:2]] = (nb.stem, title)
    return out


def _record(folder: Path | None, chapter: str, profile: str) -> dict | None:
    if folder is None:
        return None
    path = folder / f"{chapter}-{profile}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError:
        return {"unreadable": str(path.name)}


def _num(x: object, fmt: str) -> str:
    if (
        isinstance(x, (int, float))
        and not isinstance(x, bool)
        and math.isfinite(float(x))
    ):
        return format(float(x), fmt)
    return NOT_RECORDED


def rows(cpu: Path | None, gpu: Path | None) -> list[dict[str, str]]:
    """One row per chapter (every notebook), the missing pieces spelt out."""
    out = []
    for ch, (stem, title) in chapter_titles().items():
        c = _record(cpu, ch, "cpu")
        g = _record(gpu, ch, "gpu")
        cp = (c or {}).get("provenance", {})
        gp = (g or {}).get("provenance", {})
        gpu_wall = gp.get("wall_time_s")
        out.append(
            {
                "chapter": ch,
                "page": stem,
                "title": title,
                "cpu_wall_s": _num(cp.get("wall_time_s"), ".0f") if c else NOT_RECORDED,
                "cpu_peak_mib": _num(cp.get("peak_rss_mib"), ".0f")
                if c
                else NOT_RECORDED,
                "cpu_device": str(cp.get("device", NOT_RECORDED))
                if c
                else NOT_RECORDED,
                "cpu_utc": str(cp.get("utc", "")) if c else "",
                "gpu_device": str(gp.get("device", NOT_RECORDED))
                if g
                else NOT_RECORDED,
                "gpu_minutes": _num(gpu_wall / 60.0, ".1f")
                if isinstance(gpu_wall, (int, float))
                else NOT_RECORDED,
                "gpu_utc": str(gp.get("utc", "")) if g else "",
            }
        )
    return out


def render(table: list[dict[str, str]], bench: list[dict] | None) -> str:
    e = html.escape
    n_cpu = sum(r["cpu_wall_s"] != NOT_RECORDED for r in table)
    total = sum(
        float(r["cpu_wall_s"]) for r in table if r["cpu_wall_s"] != NOT_RECORDED
    )
    n_gpu = sum(r["gpu_minutes"] != NOT_RECORDED for r in table)
    lines = [
        f'<p class="exec-summary">{n_cpu} of {len(table)} chapters recorded a cpu run in this build '
        f"({total / 60:.1f} minutes of wall time in all); {n_gpu} have a recorded GPU run.</p>",
        '<table class="exec-table"><thead><tr><th>chapter</th><th>cpu wall time (s)</th>'
        "<th>cpu peak memory (MiB)</th><th>cpu run on</th><th>GPU run: device</th>"
        "<th>GPU run: minutes</th></tr></thead><tbody>",
    ]
    for r in table:
        link = f'<a href="../notebooks/{e(r["page"])}.html">{e(r["title"])}</a>'
        lines.append(
            f"<tr><td>{link}</td><td>{e(r['cpu_wall_s'])}</td><td>{e(r['cpu_peak_mib'])}</td>"
            f"<td>{e(r['cpu_device'])}</td><td>{e(r['gpu_device'])}</td><td>{e(r['gpu_minutes'])}</td></tr>"
        )
    lines.append("</tbody></table>")
    if bench is not None:
        lines.append(
            "<p>Benchmarked hot loops against this machine's measured limits (<code>make bench</code>):</p>"
        )
        lines.append(
            '<table class="exec-bench"><thead><tr><th>benchmark</th><th>loop</th><th>size</th>'
            "<th>achieved</th>"
            "<th>limit</th><th>fraction of the limit</th><th>ratio to its baseline</th></tr></thead><tbody>"
        )
        for b in bench:
            cells = [
                b.get(k, "")
                for k in (
                    "benchmark",
                    "loop",
                    "size",
                    "achieved",
                    "limit",
                    "fraction",
                    "ratio",
                )
            ]
            lines.append(
                "<tr>" + "".join(f"<td>{e(str(x))}</td>" for x in cells) + "</tr>"
            )
        lines.append("</tbody></table>")
    return "\n".join(lines)


def _bench_rows(path: Path | None) -> list[dict] | None:
    if path is None or not path.is_file():
        return None
    data = json.loads(path.read_text())
    return data.get("rows", data) if isinstance(data, dict) else data


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("template")
    ap.add_argument("out")
    ap.add_argument("--cpu", type=Path, default=None)
    ap.add_argument("--gpu", type=Path, default=ROOT / "data" / "results")
    ap.add_argument("--bench", type=Path, default=None)
    a = ap.parse_args(argv)
    text = Path(a.template).read_text()
    if MARKER not in text:
        raise SystemExit(f"execution_stats: {a.template} has no {MARKER} line")
    bench = _bench_rows(a.bench)
    Path(a.out).write_text(
        text.replace(
            MARKER,
            render(rows(a.cpu, a.gpu), bench if isinstance(bench, list) else None),
        )
    )


if __name__ == "__main__":
    main()
