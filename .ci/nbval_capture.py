"""pytest plugin: keep what nbval executes, so a chapter runs once per test run.

``make test`` copies this file as ``conftest.py`` into the folder of papermill-prepared
notebooks. After every cell nbval runs, the outputs it received are stored on the cell; when the
last cell of a notebook has run, the notebook, with its outputs, is written to
``$ICML25_EXECUTED_DIR/<name>.ipynb``. The book's render check then renders those notebooks
instead of executing the chapters a second time.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest


def _clean(out: nbformat.NotebookNode, count: int) -> nbformat.NotebookNode:
    # nbval builds outputs from kernel messages; give them the
    # fields nbformat v4 requires.
    if out.get("output_type") in ("display_data", "execute_result"):
        out.setdefault("metadata", {})
    if out.get("output_type") == "execute_result":
        out["execution_count"] = count
    return out


# makereport is firstresult: run before the default, return None
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    if (
        call.when != "call"
        or not hasattr(item, "test_outputs")
        or not hasattr(item, "cell")
    ):
        return
    count = item.cell_num + 1
    item.cell.outputs = [_clean(o, count) for o in (item.test_outputs or [])]
    item.cell.execution_count = count


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    out_dir = os.environ.get("ICML25_EXECUTED_DIR")
    notebook = getattr(item, "parent", None)
    if not out_dir or not hasattr(item, "cell") or not hasattr(notebook, "nb"):
        return
    if nextitem is not None and getattr(nextitem, "parent", None) is notebook:
        return
    path = Path(out_dir) / Path(str(notebook.fspath)).name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook.nb, str(path))
