"""Stage the book's sources in one folder for Jupyter Book.

The book's root is the repository (``_config.yml``, ``_toc.yml``, ``book/``), but the chapters it
renders are either the executed notebooks (``make book``: ``_build/executed``) or the stripped
sources (``make test``'s render check, which must not execute anything a second time). This copies
the configuration, the front matter and the chosen notebooks into DEST, writing a file (with a new
modification time) only when its content changed, so that Sphinx's incremental build re-renders
exactly what changed.

The reproduction page (``book/reproduction.md``) is generated on the way from the chapters'
claim records, the cpu records of this build (``--results``, default ``_build/results``) and the
recorded GPU runs (``data/results``): see ``.ci/reproduction.py``. The execution-statistics page
(``book/execution.md``) is generated the same way from the same records (``.ci/execution_stats.py``).

Iterating on prose without executing again: ``--prose-from notebooks`` stages the executed
notebooks with the markdown cells and the cell metadata (tags, figure captions) of the current
sources, matched by cell id; a code cell whose source changed since the run keeps its old outputs
and is named on stderr. Rendering the whole book this way takes well under a minute (the time of
``make book`` is the chapters' execution, not the render)::

    .venv/bin/python .ci/stage_book.py _build/executed _build/prose-src --prose-from notebooks
    .venv/bin/jupyter-book build _build/prose-src --path-output _build/prose -W -n --keep-going

Downloads (the sidebar's "Downloads", ``book/_templates/downloads.html``): DEST/_extra/downloads/
(``html_extra_path``, copied to ``_build/html/downloads/``) gets ``icml25-notebooks.zip``, every
chapter's notebook as in the repository (outputs stripped: what a reader runs), and, with
``--pdf PATH`` naming an existing file (``make pdf`` prints it from the built HTML and renders
again), the whole book as ``icml25-executable.pdf``; the staged ``_config.yml`` then sets
``html_context.book_pdf`` so every page links it. Without a PDF the sidebar says ``make pdf``.

Usage: python .ci/stage_book.py NOTEBOOK_DIR DEST [--results RESULTS_DIR] [--prose-from DIR]
                                [--pdf PDF]
"""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOWNLOADS = Path("_extra") / "downloads"  # html_extra_path "_extra" of _config.yml
NOTEBOOKS_ZIP = "icml25-notebooks.zip"
BOOK_PDF = "icml25-executable.pdf"


def sync(src: Path, dst: Path, content: bytes | None = None) -> None:
    """Write ``content`` (default: the bytes of ``src``) to ``dst`` unless ``dst`` already holds it.

    Writing gives ``dst`` a fresh modification time, so Sphinx re-renders what changed, however
    old the source file is.
    """
    data = src.read_bytes() if content is None else content
    if dst.exists() and dst.read_bytes() == data:
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(data)


def with_prose_of(executed: dict, source: dict, name: str) -> dict:
    """``executed`` with the cells of ``source`` in their order: markdown cells from ``source``,
    code cells with their outputs from ``executed`` (matched by id) and metadata from ``source``.

    Papermill's injected-parameters cell stays after the cell it followed. A code cell that is new
    or changed since the run is staged without outputs or with the old ones, and named on stderr.
    """
    ran = {c.get("id"): c for c in executed["cells"]}
    injected = [
        (k, c)
        for k, c in enumerate(executed["cells"])
        if "injected-parameters" in c.get("metadata", {}).get("tags", [])
    ]
    cells = []
    for cell in source["cells"]:
        old = ran.get(cell.get("id"))
        if cell["cell_type"] == "code" and old is not None:
            if old.get("source") != cell.get("source"):
                print(
                    f"stage_book: {name} cell {cell.get('id')}: code changed since it ran",
                    file=sys.stderr,
                )
            cell = {**old, "metadata": cell.get("metadata", {})}
        elif cell["cell_type"] == "code":
            print(f"stage_book: {name} cell {cell.get('id')}: not run", file=sys.stderr)
        cells.append(cell)
        for k, inj in injected:
            if k > 0 and executed["cells"][k - 1].get("id") == cell.get("id"):
                cells.append(inj)
    return {**executed, "cells": cells}


def without_injected_parameters(path: Path, prose: Path | None = None) -> bytes:
    """The notebook with papermill's injected-parameters cell tagged ``remove-cell``.

    The book shows the chapter's own parameters cell; the values it ran with are the defaults
    (``make book`` runs PROFILE="cpu", SEED=0), so the injected copy would only repeat them.
    """
    nb = json.loads(path.read_text())
    if prose is not None:
        nb = with_prose_of(nb, json.loads(prose.read_text()), path.name)
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode()


def generated_page(script: str, page: str, results: Path, *extra: str) -> bytes:
    """book/<page> rendered by ``.ci/<script>`` from its template, this build's cpu records
    (``results``) and the recorded GPU runs (``data/results``)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / page
        subprocess.run(
            [
                sys.executable,
                str(ROOT / ".ci" / script),
                str(ROOT / "book" / page),
                str(out),
                "--cpu",
                str(results),
                "--gpu",
                str(ROOT / "data" / "results"),
                *extra,
            ],
            check=True,
        )
        return out.read_bytes()


def reproduction_page(results: Path) -> bytes:
    """book/reproduction.md with its table generated from the claim records and the runs."""
    return generated_page("reproduction.py", "reproduction.md", results)


def execution_page(results: Path) -> bytes:
    """book/execution.md with its tables generated from this build's records (``.ci/execution_stats.py``)."""
    bench = ROOT / "benchmarks" / "results" / "limits_summary.json"
    return generated_page(
        "execution_stats.py",
        "execution.md",
        results,
        *(["--bench", str(bench)] if bench.is_file() else []),
    )


def notebooks_zip() -> bytes:
    """Every chapter notebook of the repository (outputs stripped) under ``icml25-notebooks/``,
    byte-for-byte reproducible (fixed dates, sorted), so an unchanged zip is not rewritten."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        readme = (
            "The chapters of 'ICML 2025, executable' as notebooks (outputs stripped).\n"
            "They import the book's package icml25: from a clone of the repository,\n"
            "`make learn CHAPTER=NN` or `pip install -e .` (see the book's Setup page).\n"
        )
        entries = [("icml25-notebooks/README.txt", readme.encode())]
        entries += [
            (f"icml25-notebooks/{nb.name}", nb.read_bytes())
            for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
        ]
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def config_with_pdf(config: Path, pdf_href: str | None) -> bytes:
    """``_config.yml``, with ``html_context.book_pdf`` set when the book's PDF is staged."""
    if pdf_href is None:
        return config.read_bytes()
    data = yaml.safe_load(config.read_text())
    context = data.setdefault("sphinx", {}).setdefault("config", {})
    context.setdefault("html_context", {})["book_pdf"] = pdf_href
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


def main(
    notebook_dir: str,
    dest: str,
    results: str | None = None,
    prose_from: str | None = None,
    pdf: str | None = None,
) -> None:
    dest_path = Path(dest)
    wanted: set[Path] = set()
    downloads = dest_path / DOWNLOADS
    sync(Path(), downloads / NOTEBOOKS_ZIP, notebooks_zip())
    wanted.add(downloads / NOTEBOOKS_ZIP)
    pdf_href = None
    if pdf and Path(pdf).is_file():
        sync(Path(pdf), downloads / BOOK_PDF)
        wanted.add(downloads / BOOK_PDF)
        pdf_href = f"downloads/{BOOK_PDF}"
    sync(
        ROOT / "_config.yml",
        dest_path / "_config.yml",
        config_with_pdf(ROOT / "_config.yml", pdf_href),
    )
    sync(ROOT / "_toc.yml", dest_path / "_toc.yml")
    wanted |= {dest_path / "_config.yml", dest_path / "_toc.yml"}
    for src in (ROOT / "book").rglob("*"):
        if src.is_file():
            dst = dest_path / "book" / src.relative_to(ROOT / "book")
            generate = {
                "reproduction.md": reproduction_page,
                "execution.md": execution_page,
            }.get(src.name)
            if generate is not None and src.parent == ROOT / "book":
                sync(src, dst, generate(Path(results or ROOT / "_build" / "results")))
            else:
                sync(src, dst)
            wanted.add(dst)
    for src in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        chosen = Path(notebook_dir) / src.name
        if not chosen.exists():
            raise SystemExit(
                f"stage_book: {chosen} is missing (execute the chapter first)"
            )
        dst = dest_path / "notebooks" / src.name
        prose = Path(prose_from) / src.name if prose_from else None
        sync(chosen, dst, without_injected_parameters(chosen, prose))
        wanted.add(dst)
    for stale in dest_path.rglob("*"):
        if stale.is_file() and stale not in wanted:
            stale.unlink()


if __name__ == "__main__":
    args = sys.argv[1:]
    options: dict[str, str | None] = {
        "--results": None,
        "--prose-from": None,
        "--pdf": None,
    }
    for flag in options:
        if flag in args:
            i = args.index(flag)
            options[flag] = args[i + 1]
            del args[i : i + 2]
    main(
        *args[:2],
        results=options["--results"],
        prose_from=options["--prose-from"],
        pdf=options["--pdf"],
    )
