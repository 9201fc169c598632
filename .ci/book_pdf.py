"""The whole book as one PDF, printed by headless chromium from the built HTML (issue 9).

Jupyter Book's ``pdfhtml`` builder drives pyppeteer, which downloads its own Chromium; this
prints with Debian's ``/usr/bin/chromium`` through Playwright instead, offline (every request
that is not file:/data:/blob: is aborted). A cover page (title, author, contents with the page
number of every entry) comes first, then every page of ``_toc.yml`` in order, each printed after
MathJax has typeset it, its images have loaded and its saved widgets have rendered; pypdf
concatenates them, adds one bookmark per page and stamps the book's page numbers in the footer
(chromium's own footer would restart at 1 on every page of the book; the cover is page 1, so the
printed number of a page is also its number in a PDF viewer). Writes OUT (default
``_build/pdf/book.pdf``) and OUT with ``.json``: the page range of every entry, for the test
(tests/browser/test_book_pdf.py).

Usage: python .ci/book_pdf.py [HTML_DIR] [OUT]     (default: _build/html _build/pdf/book.pdf)
"""

from __future__ import annotations

import html
import io
import json
import os
import sys
import time
from pathlib import Path

import yaml

from toc import toc_docnames  # .ci/toc.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("ICML25_CHROMIUM", "/usr/bin/chromium")
LOCAL = ("file:", "data:", "blob:", "about:")
ARGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--no-proxy-server",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

READY_JS = """
async () => {
  for (const img of document.images) { img.loading = 'eager'; }
  await Promise.all(Array.from(document.images).map(img => img.decode().catch(() => null)));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  if (views.length && document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]')) {
    const t0 = Date.now();
    const done = () => Array.from(views).every(s => s.previousElementSibling &&
                                                     s.previousElementSibling.children.length > 0);
    while (!done() && Date.now() - t0 < 20000) { await new Promise(r => setTimeout(r, 100)); }
  }
  // open every collapsed toggle (hidden inputs, solutions) so the PDF shows them
  document.querySelectorAll('details').forEach(d => d.open = true);
  await document.fonts.ready;
  return document.title;
}
"""

PRINT_CSS = """
@media print {
  .bd-header-announcement, .bd-header, .bd-sidebar-primary, .bd-sidebar-secondary,
  .header-article, .prev-next-area, .bd-footer, .bd-footer-content, .bd-footer-article,
  #pst-back-to-top, .toggle-button, button.copybtn { display: none !important; }
  .bd-main .bd-content .bd-article-container { max-width: 100% !important; }
  div.cell_output img { max-width: 100% !important; }
  pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
}
"""


def cover_html(title: str, author: str, entries: list[tuple[str, str, int]]) -> str:
    """The cover: title, author and the contents, each entry with the page it starts on."""
    rows = "\n".join(
        f'<li><span class="t">{html.escape(t)}</span><span class="p">{page}</span></li>'
        for _, t, page in entries
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body {{ font-family: sans-serif; margin: 2cm 1.5cm; }} h1 {{ font-size: 30pt; }}
ol {{ list-style: none; padding: 0; }}
li {{ display: flex; align-items: flex-end; margin: 3pt 0; font-size: 10.5pt; }}
li .t {{ flex: 1; }} li .p {{ padding-left: 1em; font-variant-numeric: tabular-nums; }}</style></head>
<body><h1>{html.escape(title)}</h1><p>{html.escape(author)}</p>
<p>Printed {time.strftime("%Y-%m-%d")} from the rendered book.</p>
<h2>Contents</h2><ol>{rows}</ol></body></html>"""


def numbers_html(title: str, first: int, count: int) -> str:
    """``count`` blank A4 pages whose footers read "title · n" from ``first`` on (stamped onto
    the printed pages, so the numbers run through the whole book)."""
    pages = "".join(
        f'<div class="pg"><span>{html.escape(title)} · {n}</span></div>'
        for n in range(first, first + count)
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
@page {{ size: A4; margin: 0; }} body {{ margin: 0; }}
.pg {{ height: 296mm; position: relative; break-after: page; overflow: hidden; }}
.pg:last-child {{ break-after: auto; }}
.pg span {{ position: absolute; bottom: 6mm; width: 100%; text-align: center;
           font: 7pt sans-serif; color: #666; }}</style></head><body>{pages}</body></html>"""


def build(html_dir: Path, out: Path) -> dict:
    from playwright.sync_api import sync_playwright
    from pypdf import PdfReader, PdfWriter

    if not Path(CHROMIUM).exists():
        raise SystemExit(
            f"book_pdf: {CHROMIUM} is missing (Debian: apt-get install -y chromium)"
        )
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    title, author = config.get("title", "Book"), config.get("author", "")
    docnames = toc_docnames()
    missing = [d for d in docnames if not (html_dir / f"{d}.html").exists()]
    if missing:
        raise SystemExit(
            f"book_pdf: pages of _toc.yml missing in {html_dir}: {missing}"
        )
    t0 = time.perf_counter()
    blocked: list[str] = []
    parts: list[tuple[str, str, bytes]] = []
    args = ARGS + (
        ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=args)
        context = browser.new_context(viewport={"width": 1100, "height": 1400})

        def route(r) -> None:  # noqa: ANN001
            if r.request.url.startswith(LOCAL):
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort("blockedbyclient")

        context.route("**/*", route)
        page = context.new_page()
        pdf_opts = dict(
            format="A4",
            print_background=True,
            prefer_css_page_size=False,
            margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"},
        )
        for docname in docnames:
            page.goto(
                (html_dir / f"{docname}.html").as_uri(),
                wait_until="load",
                timeout=60_000,
            )
            page.add_style_tag(content=PRINT_CSS)
            page_title = page.evaluate(READY_JS)
            page.emulate_media(media="print")
            parts.append(
                (docname, page_title.split(" — ")[0].strip(), page.pdf(**pdf_opts))
            )
            page.emulate_media(media="screen")
        counts = [len(PdfReader(io.BytesIO(data)).pages) for _, _, data in parts]
        n_cover = 1
        for _ in range(3):  # the cover's length decides where the chapters start
            starts = [n_cover + 1 + sum(counts[:k]) for k in range(len(parts))]
            entries = [(d, t, s) for (d, t, _), s in zip(parts, starts)]
            page.set_content(cover_html(title, author, entries))
            cover = page.pdf(**pdf_opts)
            if len(PdfReader(io.BytesIO(cover)).pages) == n_cover:
                break
            n_cover = len(PdfReader(io.BytesIO(cover)).pages)
        page.set_content(numbers_html(title, n_cover + 1, sum(counts)))
        numbers = PdfReader(io.BytesIO(page.pdf(format="A4", print_background=False)))
        browser.close()
    if len(numbers.pages) != sum(counts):
        raise SystemExit(
            f"book_pdf: {len(numbers.pages)} footers printed for {sum(counts)} pages"
        )

    writer = PdfWriter()
    ranges = []
    for docname, page_title, data in [("cover", title, cover), *parts]:
        start = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(data)))
        writer.add_outline_item(title=page_title, page_number=start)
        ranges.append(
            {
                "docname": docname,
                "title": page_title,
                "first_page": start + 1,
                "pages": len(writer.pages) - start,
            }
        )
    for k, stamp in enumerate(numbers.pages):
        writer.pages[n_cover + k].merge_page(stamp)
    writer.add_metadata({"/Title": title, "/Author": author})
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as f:
        writer.write(f)
    summary = {
        "pdf": str(out),
        "pages": len(writer.pages),
        "entries": ranges,
        "blocked_requests": blocked,
        "seconds": round(time.perf_counter() - t0, 1),
        "html": str(html_dir),
    }
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    if blocked:
        raise SystemExit(f"book_pdf: the pages asked for the network: {blocked[:5]}")
    return summary


if __name__ == "__main__":
    html_dir = Path(
        sys.argv[1] if len(sys.argv) > 1 else ROOT / "_build" / "html"
    ).resolve()
    out = Path(
        sys.argv[2] if len(sys.argv) > 2 else ROOT / "_build" / "pdf" / "book.pdf"
    ).resolve()
    s = build(html_dir, out)
    print(
        f"book_pdf: {s['pages']} pages from {len(s['entries']) - 1} pages of _toc.yml in {s['seconds']} s -> {out}"
    )
