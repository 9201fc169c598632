"""Before/after screenshots of issue 17 (maintainer material, not a book page).

Usage: python .ci/screenshots/issue17/shoot.py HTML_DIR PREFIX
Writes PREFIX-results-table.png (chapter 06's claims table), PREFIX-plotting-cell.png (chapter
06's first plotting cell with its figure), PREFIX-slider.png (chapter 06's interactive section),
PREFIX-equation-02.png and PREFIX-equation-07.png (the long equations of chapters 02 and 07, with
the width of the text column) beside this script, at 1280 x 900 px, offline, in Debian's chromium.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CH02 = "notebooks/02_vmf_exploration.html"
CH06 = "notebooks/06_mincut_predictions.html"
CH07 = "notebooks/07_flow_divergence_matching.html"

# the display equation whose speech text contains `needle`, with the text column around it
EQUATION_BOX = """(needle) => {
  const eq = Array.from(document.querySelectorAll('mjx-container[display="true"]'))
    .find(e => (e.textContent || '').replace(/\\s+/g, '').includes(needle));
  if (!eq) return null;
  eq.scrollIntoView({block: 'center'});
  const art = document.querySelector('article.bd-article').getBoundingClientRect();
  const r = (eq.closest('.math') || eq).getBoundingClientRect();
  return {x: Math.max(0, art.left - 10), y: Math.max(0, r.top - 30),
          width: art.width + 20, height: r.height + 60};
}"""


def main(html: Path, prefix: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    args = ["--host-resolver-rules=MAP * ~NOTFOUND", "--no-proxy-server"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")
    shots = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()

        def load(doc: str) -> None:
            page.goto((html / doc).as_uri(), wait_until="load")
            page.evaluate(
                "async () => { if (window.MathJax && MathJax.startup)"
                " { await MathJax.startup.promise; } }"
            )

        def element(selector: str, name: str) -> None:
            target = page.locator(selector).first
            target.scroll_into_view_if_needed()
            shots.append(HERE / f"{prefix}-{name}.png")
            target.screenshot(path=str(shots[-1]))

        load(CH06)
        element("section#results table", "results-table")
        # the first cell whose output is an image in "The problem": folded after issue 17
        element(
            "section#the-problem div.cell:has(div.cell_output img)", "plotting-cell"
        )
        element("div.cell:has(.icml25-frames)", "slider")
        for doc, needle, name in (
            (CH02, "n−2/(d−1)", "equation-02"),
            (CH07, "∇⋅ut(x∣x1)=d", "equation-07"),
        ):
            load(doc)
            box = page.evaluate(EQUATION_BOX, needle)
            if box is None:
                raise SystemExit(f"{doc}: no display equation with {needle!r}")
            page.wait_for_timeout(300)
            box = page.evaluate(EQUATION_BOX, needle)
            shots.append(HERE / f"{prefix}-{name}.png")
            page.screenshot(path=str(shots[-1]), clip=box)
        browser.close()
    return shots


if __name__ == "__main__":
    for shot in main(Path(sys.argv[1]).resolve(), sys.argv[2]):
        print(shot)
