"""Helpers of the browser tests: the book's pages in _toc.yml order, the shared report."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORT: dict = {}

sys.path.insert(0, str(ROOT / ".ci"))
# .ci/toc.py, shared with the PDF printer; re-exported to the browser tests
from toc import toc_docnames  # noqa: E402, F401


def book_html() -> Path | None:
    value = os.environ.get("ICML25_BOOK_HTML", "")
    return Path(value).resolve() if value else None
