"""Render the book's reproduction page: every claim of every chapter, on one page.

``book/reproduction.md`` is the template: the text above and below the marker line
``<!-- reproduction-table -->`` is kept; the marker is replaced by counts per verdict and one
HTML table (claim records: ``icml25.claims``; this build's cpu records from ``--cpu``; the
recorded GPU runs from ``data/results``). The table is plain HTML (readable with scripts off);
``book/_static/reproduction.js`` adds sorting and filtering.

Usage: python .ci/reproduction.py TEMPLATE OUT --cpu _build/results [--gpu data/results]
"""

from __future__ import annotations

import argparse
import html
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- reproduction-table -->"


def verdict_class(v: str) -> str:
    from icml25 import claims

    for name, cls in (
        (claims.HOLDS, "holds"),
        (claims.DIRECTION, "direction"),
        (claims.NOT_REPRODUCED, "not-reproduced"),
    ):
        if v == name:
            return cls
    return "failed" if v.startswith("chapter failed") else "not-recorded"


def verdict_group(v: str) -> str:
    from icml25 import claims

    if v in (claims.HOLDS, claims.DIRECTION, claims.NOT_REPRODUCED):
        return v
    return "chapter failed" if v.startswith("chapter failed") else claims.NOT_RECORDED


def chapter_pages() -> dict[str, str]:
    return {
        p.stem[:2]: p.stem
        for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    }


def _value_cell(value: str, metric: str) -> str:
    """A run's value with the name of the metric it is (sorted by ``data-value``)."""
    e = html.escape
    name = f'<br><code class="repro-metric">{e(metric)}</code>' if metric else ""
    return f'<td data-value="{e(value)}">{e(value)}{name}</td>'


def render(rows: list[dict[str, str]]) -> str:
    pages = chapter_pages()
    e = html.escape
    cpu_counts = Counter(
        verdict_group(r["cpu_verdict"]) for r in rows if r["id"] != "-"
    )
    gpu_counts = Counter(
        verdict_group(r["gpu_verdict"]) for r in rows if r["id"] != "-"
    )
    n_claims = sum(1 for r in rows if r["id"] != "-")
    groups = [
        "holds",
        "holds in direction only",
        "does not reproduce at this scale",
        "not recorded",
        "chapter failed",
    ]
    counts = "".join(
        f"<tr><td>{e(g)}</td><td>{cpu_counts.get(g, 0)}</td><td>{gpu_counts.get(g, 0)}</td></tr>"
        for g in groups
    )
    out = [
        f'<p class="repro-summary">{n_claims} claims in {len({r["chapter"] for r in rows})} chapters.</p>',
        '<table class="repro-counts"><thead><tr><th>verdict</th><th>cpu run (this build)</th>'
        f"<th>GPU run</th></tr></thead><tbody>{counts}</tbody></table>",
        '<div id="repro-controls" hidden><label>Filter <input id="repro-filter" type="search" '
        'placeholder="chapter, claim, verdict"></label> <label>Verdict (cpu) <select id="repro-verdict">'
        '<option value="">all</option>'
        + "".join(f'<option value="{e(g)}">{e(g)}</option>' for g in groups)
        + '</select></label> <span id="repro-shown"></span></div>',
        '<table id="reproduction" class="repro-table"><thead><tr>'
        '<th data-sort="text">chapter</th><th data-sort="text">claim</th><th data-sort="text">paper</th>'
        '<th data-sort="num">cpu run</th><th data-sort="text">cpu verdict</th>'
        '<th data-sort="num">GPU run</th><th data-sort="text">GPU verdict</th><th data-sort="text">judged by</th>'
        "</tr></thead><tbody>",
    ]
    for r in rows:
        page = pages.get(r["chapter"])
        link = (
            f'<a href="../notebooks/{page}.html#results">{e(r["chapter"])}</a>'
            if page
            else e(r["chapter"])
        )
        out.append(
            f'<tr data-verdict="{e(verdict_group(r["cpu_verdict"]))}">'
            f"<td>{link}</td><td>{e(r['claim'])}</td><td>{e(r['paper'])}</td>"
            f"{_value_cell(r['cpu'], r['metric'])}"
            f'<td class="verdict {verdict_class(r["cpu_verdict"])}">{e(r["cpu_verdict"])}</td>'
            f"{_value_cell(r['gpu'], r['metric'])}"
            f'<td class="verdict {verdict_class(r["gpu_verdict"])}">{e(r["gpu_verdict"])}</td>'
            f"<td>{e(r['judged_by'])}</td></tr>"
        )
    out.append("</tbody></table>")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("template")
    p.add_argument("out")
    p.add_argument(
        "--cpu", required=True, help="folder of this build's NN-cpu.json records"
    )
    p.add_argument(
        "--gpu",
        default=str(ROOT / "data" / "results"),
        help="folder of NN-gpu.json records",
    )
    a = p.parse_args(argv)
    from icml25 import claims

    text = Path(a.template).read_text()
    if MARKER not in text:
        raise SystemExit(f"reproduction: {a.template} has no marker line {MARKER}")
    table = render(claims.reproduction_rows(a.cpu, a.gpu))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    new = text.replace(MARKER, "\n" + table + "\n")
    if not Path(a.out).exists() or Path(a.out).read_text() != new:
        Path(a.out).write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
