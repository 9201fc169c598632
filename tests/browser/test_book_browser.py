"""The rendered HTML book in a real browser, with the network cut off (issue 9).

Debian's ``chromium`` (never a downloaded browser) is driven by Playwright over ``file://`` URLs.
Every request that is not ``file:``/``data:``/``blob:`` is aborted and counted as a failure, and
chromium's host resolver maps every host name to NOTFOUND, so a page that needs a CDN fails here.

Checked on every page of ``_toc.yml``: no failed or blocked request, no console error or uncaught
exception; every ``.math`` element typeset by MathJax (an ``mjx-container``) and no raw ``$$`` left
in the text; every image loaded (``naturalWidth > 0``); every widget either rendered from its saved
state or, when the notebook saved none, the cell shows the chapter's static figure. Chapter pages
offer their ``.ipynb`` for download, and launch links exactly when ``_config.yml`` names launch targets. The search page finds
"Voronoi" in chapter 02. A static scan checks that the HTML and CSS use only relative URLs for
local resources. Screenshots of chapter 02's opening and of its first experiment plot go to
``_build/screenshots/``; counts and timings to ``_build/browser-report.json``.

Skips unless ICML25_BOOK_HTML names the built HTML folder (``make test-browser`` sets it after
the render, for ``_build/test-render/_build/html`` or ``_build/html``); ICML25_CHROMIUM overrides
``/usr/bin/chromium``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from _book import REPORT, ROOT, book_html, toc_docnames

HTML = book_html()
pytestmark = pytest.mark.skipif(
    HTML is None,
    reason="ICML25_BOOK_HTML is not set: run `make test-browser` after rendering the book",
)
CHROMIUM = os.environ.get("ICML25_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(
    os.environ.get("ICML25_SCREENSHOTS", ROOT / "_build" / "screenshots")
)
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
DOCNAMES = toc_docnames()
CHAPTERS = [d for d in DOCNAMES if d.startswith("notebooks/")]
SEARCH_TERM = "Voronoi"
# Chromium flags: no DNS (every host is NOTFOUND), no proxy
# auto-detection, no background traffic.
OFFLINE_ARGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--no-proxy-server",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider",
]
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")

# Wait until MathJax has typeset the page (when it loaded), every image has loaded or
# failed (lazy images are made eager first), and every widget view
# rendered or 20 s passed.
READY_JS = """
async () => {
  for (const img of document.images) { img.loading = 'eager'; }
  await Promise.all(Array.from(document.images).map(img => img.decode().catch(() => null)));
  if (document.querySelector('.math') && !window.MathJax) {
    await new Promise(r => setTimeout(r, 1000));
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  const hasState = !!document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  if (views.length && hasState) {
    const t0 = Date.now();
    const rendered = () => Array.from(views).every(s => {
      const el = s.previousElementSibling;
      return el && el.classList.contains('widget-subarea') && el.children.length > 0;
    });
    while (!rendered() && Date.now() - t0 < 20000) { await new Promise(r => setTimeout(r, 100)); }
  }
  return true;
}
"""

INSPECT_JS = """
() => {
  const out = {};
  const maths = Array.from(document.querySelectorAll('.math'));
  out.math = maths.length;
  out.mathUntypeset = maths.filter(m => !m.querySelector('mjx-container'))
                           .map(m => m.textContent.slice(0, 80));
  out.mjx = document.querySelectorAll('mjx-container').length;
  const main = (document.querySelector('main') || document.body).cloneNode(true);
  main.querySelectorAll('pre, code, script, style, textarea, mjx-container, .highlight').forEach(e => e.remove());
  const text = main.textContent;
  out.rawDollars = (text.match(/\\$\\$/g) || []).length;
  out.rawDelims = (text.match(/\\\\\\(|\\\\\\[/g) || []).length;
  out.images = document.images.length;
  out.brokenImages = Array.from(document.images)
    .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src'));
  const views = Array.from(document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  out.hasWidgetState = !!document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  out.widgets = views.length;
  out.widgetProblems = [];
  views.forEach((s, k) => {
    const el = s.previousElementSibling;
    const rendered = el && el.classList.contains('widget-subarea') && el.children.length > 0
                     && el.getBoundingClientRect().height > 0;
    const cell = s.closest('.cell') || s.parentElement;
    const figure = Array.from(cell.querySelectorAll('img')).some(i => i.complete && i.naturalWidth > 0);
    if (out.hasWidgetState ? !rendered : !figure) {
      out.widgetProblems.push(`widget ${k}: ` + (out.hasWidgetState ? 'saved state not rendered'
                                                                     : 'no saved state and no static figure in its cell'));
    }
  });
  // display math and code that run past their box without a scrollbar (clipped at the page edge)
  out.clipped = Array.from(document.querySelectorAll('mjx-container[display="true"], div.math, pre'))
    .filter(e => e.getBoundingClientRect().width > 0 && e.scrollWidth > e.clientWidth + 2
                 && !['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
    .map(e => `${e.tagName.toLowerCase()}: ${(e.textContent || '').trim().slice(0, 60)}`);
  out.downloads = Array.from(document.querySelectorAll('a.btn-download-source-button')).map(a => a.href);
  out.links = Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'));
  out.title = document.title;
  return out;
}
"""


@pytest.fixture(scope="module")
def browser():
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        pytest.skip(
            f"{CHROMIUM} is not installed and could not be installed (Debian: apt-get install -y chromium)"
        )
    from playwright.sync_api import sync_playwright

    REPORT.update(
        html=str(HTML),
        pages_checked=0,
        requests_total=0,
        requests_blocked=0,
        requests_failed=0,
        console_errors=0,
        pages={},
    )
    t0 = time.perf_counter()
    args = OFFLINE_ARGS + (
        ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    )
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        REPORT["chromium"] = b.version
        yield b
        b.close()
    REPORT["seconds"] = round(time.perf_counter() - t0, 1)


class Visit:
    """One page load with every request, failure and console message recorded."""

    def __init__(self, browser, url: str, viewport: dict | None = None) -> None:
        self.context = browser.new_context(
            viewport=viewport or {"width": 1280, "height": 900}
        )
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []

        def route(r) -> None:  # noqa: ANN001
            if r.request.url.startswith(LOCAL_SCHEMES):
                r.continue_()
            else:
                self.blocked.append(r.request.url)
                r.abort("blockedbyclient")

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on(
            "requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})")
        )
        self.page.on(
            "console",
            lambda m: (
                self.errors.append(f"console.{m.type}: {m.text}")
                if m.type == "error"
                else None
            ),
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.goto(url, wait_until="load", timeout=60_000)
        self.page.evaluate(READY_JS)

    def close(self) -> None:
        self.context.close()

    def record(self, name: str) -> None:
        REPORT["pages_checked"] += 1
        REPORT["requests_total"] += len(self.requests)
        REPORT["requests_blocked"] += len(self.blocked)
        REPORT["requests_failed"] += len(self.failed)
        REPORT["console_errors"] += len(self.errors)
        REPORT["pages"][name] = {
            "requests": len(self.requests),
            "blocked": self.blocked,
            "failed": self.failed,
            "errors": self.errors,
        }


def page_url(docname: str) -> str:
    path = HTML / f"{docname}.html"
    assert path.exists(), f"{docname} of _toc.yml was not rendered: {path} is missing"
    return path.as_uri()


@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_reads_offline(browser, docname: str) -> None:
    visit = Visit(browser, page_url(docname))
    try:
        info = visit.page.evaluate(INSPECT_JS)
        visit.record(docname)
        REPORT["pages"][docname].update(
            math=info["math"],
            mjx=info["mjx"],
            images=info["images"],
            widgets=info["widgets"],
        )
        problems = [f"blocked (not file://): {u}" for u in visit.blocked]
        problems += [f"failed request: {u}" for u in visit.failed]
        problems += visit.errors
        problems += [f"math not typeset: {t!r}" for t in info["mathUntypeset"]]
        if info["math"]:
            problems += [] if info["mjx"] else ["page has math but no mjx-container"]
        problems += (
            [f"raw $$ in the text ({info['rawDollars']}x)"]
            if info["rawDollars"]
            else []
        )
        problems += (
            [f"raw \\( or \\[ in the text ({info['rawDelims']}x)"]
            if info["rawDelims"]
            else []
        )
        problems += [f"image did not load: {s}" for s in info["brokenImages"]]
        problems += info["widgetProblems"]
        problems += [
            f"clipped (runs past its box, no scrollbar): {c}" for c in info["clipped"]
        ]
        assert not problems, f"{docname}:\n  " + "\n  ".join(problems)
    finally:
        visit.close()


@pytest.mark.parametrize("docname", CHAPTERS)
def test_chapter_download_and_launch_links(browser, docname: str) -> None:
    visit = Visit(browser, page_url(docname))
    try:
        info = visit.page.evaluate(INSPECT_JS)
    finally:
        visit.close()
    ipynb = [u for u in info["downloads"] if u.endswith(".ipynb")]
    assert ipynb, f"{docname}: no .ipynb download button"
    path = Path(unquote(urlsplit(ipynb[0]).path))
    assert path.is_file() and path.is_relative_to(HTML), (
        f"{docname}: download {ipynb[0]} is not in the book"
    )
    nb = json.loads(path.read_text())
    assert nb.get("nbformat") == 4 and nb.get("cells"), (
        f"{docname}: the downloaded file is not a notebook"
    )
    launch = CONFIG.get("launch_buttons", {})
    repo = CONFIG.get("repository", {}).get("url", "")
    assert repo.startswith("https://github.com/"), (
        "_config.yml repository.url must be a GitHub URL (Binder, Colab)"
    )
    org_repo = repo.removeprefix("https://github.com/").strip("/")
    expected = {
        "Binder": (launch.get("binderhub_url", ""), "/v2/gh/{org_repo}/"),
        "Colab": (launch.get("colab_url", ""), "/github/{org_repo}/blob/"),
        "JupyterHub": (
            launch.get("jupyterhub_url", ""),
            "/hub/user-redirect/git-pull?",
        ),
    }
    for name, (base, tail) in expected.items():
        if base:  # a launch target is configured: its link must be on the page
            prefix = base.rstrip("/") + tail.format(org_repo=org_repo)
            hits = [
                h
                for h in info["links"]
                if h.startswith(prefix) and f"{docname}.ipynb" in h
            ]
            assert hits, f"{docname}: no {name} launch link starting with {prefix}"
        else:  # not published: no button may point at a repository that does not exist
            stray = [
                h
                for h in info["links"]
                if org_repo in h and f"{docname}.ipynb" in h and "github.com" not in h
            ]
            assert not stray, (
                f"{docname}: {name} is not configured but the page links {stray}"
            )


def test_search_finds_chapter_02(browser) -> None:
    search = HTML / "search.html"
    assert search.exists(), "search.html was not rendered"
    visit = Visit(browser, f"{search.as_uri()}?q={SEARCH_TERM}")
    try:
        visit.page.wait_for_function(
            "() => document.querySelectorAll('#search-results ul.search li').length > 0 || "
            "/Search finished|did not match/.test((document.querySelector('#search-results') || {}).textContent || '')",
            timeout=30_000,
        )
        hits = visit.page.eval_on_selector_all(
            "#search-results ul.search li a", "as => as.map(a => a.href)"
        )
        visit.record("search.html")
        assert not visit.blocked and not visit.failed and not visit.errors, (
            visit.blocked,
            visit.failed,
            visit.errors,
        )
    finally:
        visit.close()
    chapter02 = [c for c in CHAPTERS if Path(c).name.startswith("02_")]
    assert chapter02, "chapter 02 is not in _toc.yml"
    assert any(chapter02[0] in h for h in hits), (
        f"search for {SEARCH_TERM!r} did not find {chapter02[0]}: {hits}"
    )
    REPORT["search_hits"] = len(hits)


def test_reproduction_page_sorts_and_filters(browser) -> None:
    """The reproduction report (book/reproduction.md): one row per claim, counts per verdict, and
    the page's own script (offline) sorts by a column and filters by text and by verdict."""
    assert "book/reproduction" in DOCNAMES, "book/reproduction is not in _toc.yml"
    visit = Visit(browser, page_url("book/reproduction"))
    try:
        page = visit.page
        rows = page.locator("#reproduction tbody tr")
        n = rows.count()
        assert n >= len(CHAPTERS), (
            f"the reproduction table has {n} rows for {len(CHAPTERS)} chapters"
        )
        assert page.locator("#repro-controls").is_visible(), (
            "the sorting/filtering script did not run"
        )
        assert page.locator("table.repro-counts tbody tr").count() == 5
        page.fill("#repro-filter", "Karger")
        page.wait_for_timeout(200)
        visible = page.locator("#reproduction tbody tr:visible").count()
        assert 0 < visible < n or n == visible == 1, (visible, n)
        page.fill("#repro-filter", "")
        page.select_option("#repro-verdict", "holds")
        shown = page.eval_on_selector_all(
            "#reproduction tbody tr",
            "rs => rs.filter(r => r.style.display !== 'none')"
            ".map(r => r.getAttribute('data-verdict'))",
        )
        assert all(v == "holds" for v in shown), shown
        page.select_option("#repro-verdict", "")
        page.click("#reproduction thead th:nth-child(2)")
        # the second click sorts descending
        page.click("#reproduction thead th:nth-child(2)")
        assert (
            page.get_attribute("#reproduction thead th:nth-child(2)", "data-order")
            == "desc"
        )
        assert page.eval_on_selector_all(
            "#reproduction tbody tr td:nth-child(2)",
            "ts => ts.map(t => t.textContent.trim()).every((t, i, a) => i === 0 || a[i - 1].localeCompare(t) >= 0)",
        ), "clicking the claim header twice did not sort the rows in descending order"
        visit.record("book/reproduction")
        assert not visit.blocked and not visit.failed and not visit.errors, (
            visit.blocked,
            visit.failed,
            visit.errors,
        )
    finally:
        visit.close()
    REPORT["reproduction_rows"] = n


def test_screenshots_of_chapter_02(browser) -> None:
    chapter02 = next(c for c in CHAPTERS if Path(c).name.startswith("02_"))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    visit = Visit(browser, page_url(chapter02))
    try:
        opening = SCREENSHOTS / "02_opening.png"
        visit.page.screenshot(path=str(opening))
        # the first figure after the "Experiments" heading
        plot = visit.page.locator("section#experiments img").first
        assert plot.count() == 1, f"{chapter02}: no figure in its Experiments section"
        plot.scroll_into_view_if_needed()
        figure = SCREENSHOTS / "02_experiment_plot.png"
        plot.screenshot(path=str(figure))
        shots = [opening, figure]
        widget = visit.page.locator("div.widget-subarea").first
        if widget.count():  # the saved widget state, as rendered offline (for review)
            widget.scroll_into_view_if_needed()
            shots.append(SCREENSHOTS / "02_widget.png")
            widget.screenshot(path=str(shots[-1]))
    finally:
        visit.close()
    for shot in shots:
        assert shot.stat().st_size > 5_000, f"{shot} looks empty"
    REPORT["screenshots"] = [str(s) for s in shots]


# --------------------------------------------------------------------------------------
# Relative links only: a static scan of every HTML and CSS file of the book
# --------------------------------------------------------------------------------------

RESOURCE_ATTRS = {"href", "src", "srcset", "data-src", "poster", "action", "data"}


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.bad: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name not in RESOURCE_ATTRS or not value:
                continue
            for url in (
                [v.strip().split(" ")[0] for v in value.split(",")]
                if name == "srcset"
                else [value.strip()]
            ):
                absolute_path = url.startswith("/")  # "/x" and "//host/x"
                remote = re.match(
                    r"^[a-zA-Z][a-zA-Z0-9+.-]*://", url
                ) is not None and not url.startswith("file:")
                # <a href="https://..."> is navigation
                # (citations, launch links): allowed
                if absolute_path or (remote and tag != "a") or url.startswith("file:"):
                    self.bad.append(f"<{tag} {name}={url!r}>")


def test_relative_links_only() -> None:
    pages = sorted(HTML.rglob("*.html"))
    assert pages, f"no HTML pages under {HTML}"
    bad: list[str] = []
    for page in pages:
        if "_static" in page.relative_to(HTML).parts:
            continue  # template fragments shipped by themes
        parser = _Links()
        parser.feed(page.read_text(errors="replace"))
        bad += [f"{page.relative_to(HTML)}: {b}" for b in parser.bad]
    css_url = re.compile(
        r"url\(\s*['\"]?((?:[a-zA-Z][a-zA-Z0-9+.-]*:)?//[^)'\"]*|/[^)'\"]*)"
    )
    for css in sorted(HTML.rglob("*.css")):
        text = re.sub(r"/\*.*?\*/", "", css.read_text(errors="replace"), flags=re.S)
        bad += [f"{css.relative_to(HTML)}: url({m})" for m in css_url.findall(text)]
    assert not bad, "absolute or remote resource URLs in the book:\n  " + "\n  ".join(
        bad[:40]
    )
    REPORT["html_files_scanned"] = len(pages)


@pytest.mark.parametrize("docname", CHAPTERS)
def test_one_search_entry_per_page(browser, docname: str) -> None:
    """One visible search control per page at desktop width; the theme's sidebar field is left out
    (`html_sidebars` in _config.yml), so readers never meet two search boxes on one screen."""
    visit = Visit(browser, page_url(docname))
    try:
        shown = visit.page.evaluate(
            "() => [...document.querySelectorAll('.search-button-field, .search-button')]"
            ".filter(e => e.offsetParent !== null && e.getBoundingClientRect().width > 0).length"
        )
    finally:
        visit.close()
    assert shown == 1, f"{docname}: {shown} visible search controls (want exactly one)"


class _Anchors(HTMLParser):
    """Ids of a page and the hrefs of its links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if tag == "a" and name == "href" and value:
                self.hrefs.append(value.strip())


def test_every_internal_link_resolves() -> None:
    """Each link inside the book reaches an existing page and, with a #fragment, an element with
    that id; external links are listed in the report, never followed."""
    pages = [
        p
        for p in sorted(HTML.rglob("*.html"))
        if "_static" not in p.relative_to(HTML).parts
    ]
    assert pages, f"no HTML pages under {HTML}"
    parsed: dict[Path, _Anchors] = {}

    def anchors(page: Path) -> _Anchors:
        if page not in parsed:
            a = _Anchors()
            a.feed(page.read_text(errors="replace"))
            parsed[page] = a
        return parsed[page]

    dead: list[str] = []
    external: set[str] = set()
    for page in pages:
        for href in anchors(page).hrefs:
            # http:, mailto:, javascript: ...
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", href):
                if href.startswith(("http:", "https:")):
                    external.add(href)
                continue
            path_part, _, frag = href.partition("#")
            target = (
                page
                if not path_part
                else (page.parent / unquote(path_part.split("?")[0])).resolve()
            )
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                dead.append(f"{page.relative_to(HTML)}: {href} (no such file)")
            elif (
                frag
                and target.suffix == ".html"
                and unquote(frag) not in anchors(target).ids
            ):
                dead.append(
                    f"{page.relative_to(HTML)}: {href} (no element with id {frag!r})"
                )
    REPORT["external_links"] = sorted(external)
    assert not dead, f"{len(dead)} dead internal links:\n  " + "\n  ".join(dead[:40])


def test_sliders_work_without_a_kernel(browser) -> None:
    """Every chapter's interactive section has pre-rendered figures (icml25.common, ICML25_PRERENDER);
    moving a slider swaps the figure above it, offline, with no kernel."""
    checked, missing = 0, []
    for docname in CHAPTERS:
        visit = Visit(browser, page_url(docname))
        try:
            found = visit.page.evaluate(
                "() => document.querySelectorAll('.icml25-frames').length"
            )
            note = visit.page.evaluate(
                "() => document.querySelectorAll('.icml25-frames-note').length"
            )
            if not found:
                if not note:
                    missing.append(docname)
                continue
            result = visit.page.evaluate(
                """() => {
                  const panel = document.querySelector('.icml25-frames');
                  if (!panel.classList.contains('icml25-frames-ready')) return 'frames.js did not run';
                  const input = panel.querySelector('input[type=range]');
                  if (!input) return 'no slider';
                  const cell = panel.closest('.cell') || panel.parentElement;
                  const imgs = Array.from(cell.querySelectorAll('img')).filter(i => !panel.contains(i));
                  const img = imgs[imgs.length - 1];
                  const before = img.src;
                  input.value = String((+input.value + 1) % (+input.max + 1));
                  input.dispatchEvent(new Event('input'));
                  return img.src !== before && img.src.startsWith('data:image/png') ? 'ok' : 'image unchanged';
                }"""
            )
            assert not visit.blocked and not visit.failed and not visit.errors, (
                visit.blocked,
                visit.failed,
                visit.errors,
            )
        finally:
            visit.close()
        assert result == "ok", f"{docname}: {result}"
        checked += 1
    assert not missing, (
        f"chapters whose interactive section has no pre-rendered figures: {missing}"
    )
    REPORT["sliders_checked"] = checked


#: share of a frame's pixels that must differ from its corner pixel (the background):
#: a figure that plt.show() had emptied saves as a plain white image (share 0)
MIN_INK = 0.01
FRAMES_JS = """async (minInk) => {
  const problems = [];
  const panels = document.querySelectorAll('.icml25-frames');
  for (const [p, panel] of Array.from(panels).entries()) {
    const data = JSON.parse(panel.getAttribute('data-frames'));
    const inputs = {};
    panel.querySelectorAll('input[type=range][data-name]').forEach(
      el => { inputs[el.getAttribute('data-name')] = el; });
    const start = data.names.map(n => inputs[n] ? +inputs[n].value : 0);
    const at = idx => data.frames[idx.join(',')];
    if (!at(start)) { problems.push(`panel ${p}: no frame for the defaults`); continue; }
    for (const [i, name] of data.names.entries()) {
      if (!inputs[name]) continue;  // one value only in the book: nothing to move
      let moved = false;
      for (let v = 0; v <= +inputs[name].max; v++) {
        const idx = start.slice(); idx[i] = v;
        if (v !== start[i] && at(idx) && at(idx) !== at(start)) { moved = true; break; }
      }
      if (!moved) problems.push(`panel ${p}: moving ${name} never changes the figure`);
    }
    for (const [key, src] of Object.entries(data.frames)) {
      const img = new Image();
      img.src = src;
      try { await img.decode(); } catch (e) {
        problems.push(`panel ${p}, frame ${key}: not a decodable image`); continue; }
      const c = document.createElement('canvas');
      c.width = img.naturalWidth; c.height = img.naturalHeight;
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      const px = g.getImageData(0, 0, c.width, c.height).data;
      let ink = 0;
      for (let k = 0; k < px.length; k += 4) {
        if (Math.abs(px[k] - px[0]) + Math.abs(px[k + 1] - px[1])
            + Math.abs(px[k + 2] - px[2]) > 24) ink++;
      }
      const share = ink / (px.length / 4);
      if (!(share >= minInk)) {
        problems.push(`panel ${p}, frame ${key}: blank (${(100 * share).toFixed(2)} % drawn)`);
      }
    }
  }
  return {panels: panels.length, problems};
}"""


def test_slider_frames_are_distinct_and_drawn(browser) -> None:
    """Every pre-rendered frame of every chapter's interactive section is a drawn figure
    (not a blank image: plot functions that called plt.show() once gave only blank frames,
    and the image still 'changed' when a slider moved), and moving each slider from its
    default, the others kept, shows a different figure."""
    problems, panels = [], 0
    for docname in CHAPTERS:
        visit = Visit(browser, page_url(docname))
        try:
            found = visit.page.evaluate(FRAMES_JS, MIN_INK)
        finally:
            visit.close()
        panels += found["panels"]
        problems += [f"{docname}: {p}" for p in found["problems"]]
    assert panels, "no pre-rendered interactive section in the book"
    assert not problems, "\n  ".join(["slider frames:", *problems[:40]])
    REPORT["slider_panels_with_drawn_frames"] = panels
