"""Browser tests of the rendered book (tests/browser): a terminal summary of what they measured.

These tests need the rendered book; they skip unless ICML25_BOOK_HTML names its HTML folder
(``make test-browser`` sets it after the render). See test_book_browser.py.
"""

from __future__ import annotations

import json

from _book import REPORT, ROOT


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    if REPORT:
        out = ROOT / "_build" / "browser-report.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        previous = json.loads(out.read_text()) if out.exists() else {}
        if previous.get("html", REPORT.get("html")) != REPORT.get("html"):
            previous = {}  # another book: start afresh
        out.write_text(json.dumps({**previous, **REPORT}, indent=1))
        terminalreporter.write_sep("-", "browser test of the rendered book")
        for key in (
            "html",
            "pages_checked",
            "requests_total",
            "requests_blocked",
            "requests_failed",
            "console_errors",
            "pdf_pages",
            "seconds",
        ):
            if key in REPORT:
                terminalreporter.write_line(f"{key}: {REPORT[key]}")
        terminalreporter.write_line(f"report: {out}")
