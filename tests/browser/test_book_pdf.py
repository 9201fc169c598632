"""The PDF of the whole book (``make pdf``: .ci/book_pdf.py, headless chromium), opened and checked.

Skips unless ICML25_BOOK_PDF names the PDF (``make pdf`` runs this test after printing). Checks:
the first page names the book's title; one bookmark per page of ``_toc.yml`` in order, each with at
least one page; the chapters carry their figures (image objects) where their HTML page has
figures, and their math was typeset before printing (no raw ``$$`` or ``\\(`` in the text); the
cover's contents give each entry's first page, whose footer carries that number; and, after
``make pdf`` rendered the HTML again, every HTML page links this PDF (``downloads/``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from _book import REPORT, ROOT, book_html, toc_docnames

PDF = (
    Path(os.environ["ICML25_BOOK_PDF"]).resolve()
    if os.environ.get("ICML25_BOOK_PDF")
    else None
)
pytestmark = pytest.mark.skipif(
    PDF is None, reason="ICML25_BOOK_PDF is not set: run `make pdf`"
)


@pytest.fixture(scope="module")
def book():
    from pypdf import PdfReader

    assert PDF.exists(), f"{PDF} is missing: run `make pdf`"
    reader = PdfReader(str(PDF))
    REPORT["pdf_pages"] = len(reader.pages)
    return reader


def _entries(reader) -> list[tuple[str, int, int]]:
    """(title, first page index, number of pages) of every top-level bookmark, in order."""
    outline = [o for o in reader.outline if not isinstance(o, list)]
    starts = [reader.get_destination_page_number(o) for o in outline]
    ends = starts[1:] + [len(reader.pages)]
    return [(o.title, s, e - s) for o, s, e in zip(outline, starts, ends)]


def test_first_page_has_the_title(book) -> None:
    title = yaml.safe_load((ROOT / "_config.yml").read_text())["title"]
    text = book.pages[0].extract_text()
    assert title in text, (
        f"the first page does not name the book {title!r}: {text[:200]!r}"
    )


def test_every_toc_page_is_printed(book) -> None:
    entries = _entries(book)
    docnames = toc_docnames()
    assert len(entries) == len(docnames) + 1, (
        f"{len(entries)} bookmarks for a cover and {len(docnames)} pages of _toc.yml: {[e[0] for e in entries]}"
    )
    empty = [title for title, _, n in entries if n <= 0]
    assert not empty, f"entries without a page: {empty}"
    sidecar = PDF.with_suffix(".json")
    if sidecar.exists():  # the printer's own record of which page is which
        recorded = [e["docname"] for e in json.loads(sidecar.read_text())["entries"]]
        assert recorded == ["cover", *docnames], (
            f"the PDF is not in _toc.yml order: {recorded}"
        )
    REPORT["pdf_entries"] = {title: n for title, _, n in entries}


def _images_on(page) -> int:
    try:
        return len(page.images)
    except Exception:  # noqa: BLE001  (an image pypdf cannot decode still counts)
        resources = page.get("/Resources") or {}
        xobjects = resources.get("/XObject") or {}
        return sum(
            1 for x in xobjects.values() if x.get_object().get("/Subtype") == "/Image"
        )


def test_chapters_carry_figures_and_typeset_math(book) -> None:
    entries = _entries(book)[1:]
    docnames = toc_docnames()
    html = book_html()
    problems = []
    for docname, (title, first, n) in zip(docnames, entries):
        text = "\n".join(book.pages[i].extract_text() for i in range(first, first + n))
        if re.search(r"\$\$|\\\(|\\\[", text):
            problems.append(f"{docname}: raw TeX delimiters in the printed text")
        page_html = (html / f"{docname}.html") if html else None
        if page_html and page_html.exists():
            # distinct images: Chromium embeds an image shown twice once (chapter 09
            # showed one PNG twice: 24 in the HTML, 23 in the PDF, none missing)
            figures = len(
                set(
                    re.findall(
                        r'<img[^>]+src="([^"]*_images/[^"]+)"', page_html.read_text()
                    )
                )
            )
            if figures:
                images = sum(_images_on(book.pages[i]) for i in range(first, first + n))
                if images < figures:
                    problems.append(
                        f"{docname}: {figures} figures in the HTML, {images} images in the PDF"
                    )
    assert not problems, "\n".join(problems)


def _printed_number(page_index: int) -> str:
    """The number stamped in the footer of a page (the cover is page 1)."""
    return str(page_index + 1)


def test_contents_lists_page_numbers(book) -> None:
    """The cover's contents give every entry the page it starts on, and that page's footer
    carries the same number (numbers run through the whole book)."""
    entries = _entries(book)
    first_chapter = entries[1][1]
    contents = " ".join(book.pages[i].extract_text() for i in range(first_chapter))
    contents = re.sub(r"\s+", " ", contents)
    pos, problems = contents.find("Contents"), []
    assert pos >= 0, "the cover has no contents"
    for title, start, _ in entries[1:]:
        name = re.sub(r"\s+", " ", title).strip()
        at = contents.find(name, pos)
        if at < 0:
            problems.append(f"{title!r} is not in the contents (in order)")
            continue
        number = re.search(r"\b(\d+)\b", contents[at + len(name) :])
        if number is None or number.group(1) != _printed_number(start):
            problems.append(
                f"{title!r}: contents say page {number and number.group(1)}, it starts"
                f" on page {_printed_number(start)}"
            )
        footer = re.sub(r"\s+", " ", book.pages[start].extract_text())
        if f"· {_printed_number(start)}" not in footer:
            problems.append(
                f"{title!r}: page {_printed_number(start)} does not carry its number"
            )
        pos = at + len(name)
    assert not problems, "\n".join(problems)


def test_html_links_this_pdf() -> None:
    """After `make pdf` every page of the HTML book links this PDF (downloads/, relative)."""
    html = book_html()
    if html is None:
        pytest.skip("ICML25_BOOK_HTML is not set")
    link = re.compile(r'class="[^"]*icml25-download-pdf"[^>]*href="([^"]+)"')
    data = PDF.read_bytes()
    problems = []
    for docname in toc_docnames():
        page = html / f"{docname}.html"
        found = link.search(page.read_text())
        if found is None:
            problems.append(f"{docname}: no link to the book's PDF")
            continue
        target = (page.parent / found.group(1)).resolve()
        if not (target.is_file() and target.is_relative_to(html)):
            problems.append(f"{docname}: {found.group(1)} is not a file of the book")
        elif target.read_bytes() != data:
            problems.append(f"{docname}: {found.group(1)} is not the PDF just printed")
    assert not problems, "\n".join(problems[:20])
