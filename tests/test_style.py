"""The code is formatted and linted with ruff (book/authoring.md, "Code style").

``ruff format`` at the book's code width (88 columns: a wider line scrolls sideways in
the HTML book) and ``ruff check`` with the rules chosen in pyproject.toml
(``[tool.ruff]``), over every Python file and notebook of the repository but build
outputs, virtual environments, learners' copies (``work/``) and ``data/``. To fix a
failure, run from the repository root::

    .venv/bin/ruff format . && .venv/bin/ruff check --fix .

then fix by hand what ``ruff check`` still reports.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: at most this many characters of ruff's report go into a failure message
MAX_REPORT = 20_000


def _ruff(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("ruff") is None:
        pytest.fail(
            f"ruff is not installed in {sys.prefix}: it is in the test extra "
            "(make venv, or pip install -c constraints.txt -e '.[test]')"
        )
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _report(out: subprocess.CompletedProcess) -> str:
    text = (out.stdout + out.stderr).strip()
    if len(text) > MAX_REPORT:
        text = text[:MAX_REPORT] + f"\n... ({len(text) - MAX_REPORT} more characters)"
    return text


def test_code_is_formatted_with_ruff():
    out = _ruff("format", "--diff")
    assert out.returncode == 0, (
        "ruff format would change these files (run `.venv/bin/ruff format .`):\n"
        + _report(out)
    )


def test_code_passes_ruff_check():
    out = _ruff("check", "--no-fix", "--output-format", "concise")
    assert out.returncode == 0, (
        "ruff check reports (run `.venv/bin/ruff check --fix .`, then fix the rest by "
        "hand):\n" + _report(out)
    )
