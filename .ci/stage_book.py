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

Usage: python .ci/stage_book.py NOTEBOOK_DIR DEST [--results RESULTS_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def without_injected_parameters(path: Path) -> bytes:
    """The notebook with papermill's injected-parameters cell tagged ``remove-cell``.

    The book shows the chapter's own parameters cell; the values it ran with are the defaults
    (``make book`` runs PROFILE="cpu", SEED=0), so the injected copy would only repeat them.
    """
    nb = json.loads(path.read_text())
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


def main(notebook_dir: str, dest: str, results: str | None = None) -> None:
    dest_path = Path(dest)
    wanted: set[Path] = set()
    for name in ("_config.yml", "_toc.yml"):
        sync(ROOT / name, dest_path / name)
        wanted.add(dest_path / name)
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
        sync(chosen, dst, without_injected_parameters(chosen))
        wanted.add(dst)
    for stale in dest_path.rglob("*"):
        if stale.is_file() and stale not in wanted:
            stale.unlink()


if __name__ == "__main__":
    args = sys.argv[1:]
    res = None
    if "--results" in args:
        i = args.index("--results")
        res = args[i + 1]
        del args[i : i + 2]
    main(*args[:2], results=res)
