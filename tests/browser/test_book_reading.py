"""The rendered book as a reader meets it (issue 17): numbering, page width, downloads.

- Numbering per chapter: chapter NN's title carries Sphinx's number NN, and its definitions,
  theorems, algorithms, exercises, figures and equations read NN.1, NN.2, ... (the Chapters part of
  ``_toc.yml`` is numbered; counters no longer run across the book).
- Nothing runs past the page: on every page of ``_toc.yml``, at a desktop and a laptop width, no
  math, code, table or image reaches beyond the article's right edge unless it sits in a box that
  scrolls sideways, and no display equation needs that scrolling at the desktop width (long ones
  are split into aligned lines; the CSS of ``book/_static/book.css`` only catches what is left).
- Figures: every image of a chapter's text is a numbered, captioned figure ("Fig. NN.k").
- Downloads: every page links the zip of the chapters' notebooks and, once ``make pdf`` printed
  it, the whole book as PDF (relative links into ``downloads/``); otherwise it says ``make pdf``.

Skips unless ICML25_BOOK_HTML names the built HTML folder (``make test-browser``).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import zipfile
from pathlib import Path
from urllib.parse import unquote

import pytest

from _book import REPORT, ROOT, book_html, toc_docnames

HTML = book_html()
pytestmark = pytest.mark.skipif(
    HTML is None,
    reason="ICML25_BOOK_HTML is not set: run `make test-browser` after rendering the book",
)
CHROMIUM = os.environ.get("ICML25_CHROMIUM", "/usr/bin/chromium")
DOCNAMES = toc_docnames()
CHAPTERS = [d for d in DOCNAMES if d.startswith("notebooks/")]
WIDTHS = {"desktop": 1280, "laptop": 1024}

CAPTION = re.compile(
    r'<span class="caption-number">([A-Za-z]+)\.? ([0-9.]+?)\.?\s*</span>'
)
EQNO = re.compile(r'<span class="eqno">\(([0-9.]+)\)')
H1 = re.compile(r'<h1><span class="section-number">([0-9.]+)\s*</span>')


@pytest.mark.parametrize("docname", CHAPTERS)
def test_numbering_per_chapter(docname: str) -> None:
    """Chapter NN is number NN and numbers its items NN.1, NN.2, ... for each kind."""
    page = (HTML / f"{docname}.html").read_text()
    nn = int(Path(docname).name[:2])
    title = H1.search(page)
    assert title and title.group(1).rstrip(".") == str(nn), (
        f"{docname}: its title is numbered {title and title.group(1)!r}, want {nn}"
        " (the order of _toc.yml's numbered Chapters part must follow NN)"
    )
    items = [(kind, number) for kind, number in CAPTION.findall(page)]
    items += [("Equation", number) for number in EQNO.findall(page)]
    assert items, f"{docname}: no numbered definition, exercise, figure or equation"
    seen: dict[str, list[str]] = {}
    for kind, number in items:
        seen.setdefault(kind, []).append(number)
    problems = []
    for kind, numbers in seen.items():
        if numbers[0] != f"{nn}.1":
            problems.append(f"the first {kind} reads {numbers[0]}, want {nn}.1")
        stray = [n for n in numbers if not n.startswith(f"{nn}.")]
        if stray:
            problems.append(f"{kind} numbered outside chapter {nn}: {stray}")
    assert not problems, f"{docname}:\n  " + "\n  ".join(problems)
    REPORT.setdefault("numbering", {})[docname] = {k: len(v) for k, v in seen.items()}


@pytest.mark.parametrize("docname", CHAPTERS)
def test_every_figure_is_a_numbered_figure(docname: str) -> None:
    """Each image of a chapter's text is a numbered figure with a caption ("Fig. NN.k");
    only the interactive section's pre-rendered frames and its static figure are not."""
    import bs4

    page = bs4.BeautifulSoup((HTML / f"{docname}.html").read_text(), "html.parser")
    nn = int(Path(docname).name[:2])
    loose = []
    for img in page.select("article img"):
        if any(
            sec.get("id") == "interactive" for sec in img.find_parents("section")
        ) or img.find_parent(class_="icml25-frames"):
            continue
        fig = img.find_parent("figure")
        number = fig.select_one(".caption-number") if fig else None
        text = fig.select_one("figcaption") if fig else None
        if (
            number is None
            or not number.get_text().strip().startswith(f"Fig. {nn}.")
            or text is None
            or len(text.get_text(strip=True)) < len(number.get_text(strip=True)) + 20
        ):
            loose.append(img.get("src", "")[:60])
    assert not loose, (
        f"{docname}: images that are not numbered, captioned figures: {loose}"
    )


# Elements of the article that reach past its right edge without a box that scrolls them.
OVERFLOW_JS = """() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('main');
  const limit = art.getBoundingClientRect().right + 2;
  const scrolls = a => ['auto', 'scroll'].includes(getComputedStyle(a).overflowX);
  const label = e => e.tagName.toLowerCase() + ': '
    + (e.textContent || e.getAttribute('src') || '').replace(/\\s+/g, ' ').trim().slice(0, 70);
  const past = [];
  for (const e of art.querySelectorAll(
      'mjx-container, div.math, pre, code, table, img, div.highlight, div.cell_output > *')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.right <= limit) continue;
    let a = e.parentElement, held = false;
    while (a && a !== art) {
      if (scrolls(a) && a.getBoundingClientRect().right <= limit) { held = true; break; }
      a = a.parentElement;
    }
    if (!held) past.push(`${label(e)} (${Math.round(r.right - limit)} px past the page)`);
  }
  const scrolling = Array.from(document.querySelectorAll('mjx-container[display="true"]'))
    .filter(e => e.getBoundingClientRect().width > 0 && e.scrollWidth > e.clientWidth + 2)
    .map(e => `${label(e)} (${e.scrollWidth - e.clientWidth} px wider than the column)`);
  return {past, scrolling};
}"""


@pytest.fixture(scope="module")
def pages():
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        pytest.skip(
            f"{CHROMIUM} is not installed (Debian: apt-get install -y chromium)"
        )
    from playwright.sync_api import sync_playwright

    args = [
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--no-proxy-server",
        "--disable-background-networking",
    ] + (["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        contexts = {}
        for name, width in WIDTHS.items():
            context = browser.new_context(viewport={"width": width, "height": 900})
            context.route(
                "**/*",
                lambda r: (
                    r.continue_()
                    if r.request.url.startswith(("file:", "data:", "blob:", "about:"))
                    else r.abort("blockedbyclient")
                ),
            )
            contexts[name] = context.new_page()
        yield contexts
        browser.close()


@pytest.mark.parametrize("docname", DOCNAMES)
def test_nothing_runs_past_the_page(pages, docname: str) -> None:
    problems = []
    for name, page in pages.items():
        page.goto(
            (HTML / f"{docname}.html").as_uri(), wait_until="load", timeout=60_000
        )
        page.evaluate(
            "async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise)"
            " { await MathJax.startup.promise; } }"
        )
        found = page.evaluate(OVERFLOW_JS)
        problems += [f"{name} ({WIDTHS[name]} px): {p}" for p in found["past"]]
        if name == "desktop":
            problems += [
                f"display equation scrolls at {WIDTHS[name]} px, split it into aligned"
                f" lines: {p}"
                for p in found["scrolling"]
            ]
    assert not problems, f"{docname}:\n  " + "\n  ".join(problems)


DOWNLOAD = re.compile(
    r'<a class="[^"]*icml25-download-(pdf|notebooks)"[^>]*href="([^"]+)"'
)


def _downloads(docname: str) -> dict[str, Path]:
    page = HTML / f"{docname}.html"
    text = page.read_text()
    found = {
        kind: (page.parent / unquote(href)).resolve()
        for kind, href in DOWNLOAD.findall(text)
    }
    if "pdf" not in found:
        assert "icml25-download-pdf-missing" in text, (
            f"{docname}: neither a link to the book's PDF nor the `make pdf` hint"
        )
    return found


def test_every_page_links_the_downloads() -> None:
    """Each page links the notebooks' zip (and the PDF when built) by a relative link that
    resolves inside the book; the zip holds every chapter's notebook."""
    targets: dict[str, set[Path]] = {}
    for docname in DOCNAMES:
        links = _downloads(docname)
        assert "notebooks" in links, f"{docname}: no link to the notebooks' zip"
        for kind, path in links.items():
            assert path.is_file() and path.is_relative_to(HTML), (
                f"{docname}: the {kind} download {path} is not a file of the book"
            )
            targets.setdefault(kind, set()).add(path)
    assert all(len(paths) == 1 for paths in targets.values()), targets
    (zip_path,) = targets["notebooks"]
    with zipfile.ZipFile(zip_path) as zf:
        names = {Path(n).name: n for n in zf.namelist()}
        wanted = sorted(
            nb.name for nb in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
        )
        missing = [n for n in wanted if n not in names]
        assert not missing, f"{zip_path.name} lacks {missing}"
        for name in wanted:
            nb = json.load(io.BytesIO(zf.read(names[name])))
            assert nb.get("nbformat") == 4 and nb.get("cells"), (
                f"{zip_path.name}: {name} is not a notebook"
            )
    if "pdf" in targets:
        (pdf_path,) = targets["pdf"]
        assert pdf_path.read_bytes()[:5] == b"%PDF-", f"{pdf_path} is not a PDF"
    REPORT["downloads"] = {k: str(next(iter(v))) for k, v in targets.items()}
