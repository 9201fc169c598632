"""The book's pages in reading order, read from _toc.yml (shared by the PDF printer and the browser test)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_docnames(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """Every ``file`` of _toc.yml (root first), in reading order, without suffix."""
    toc = yaml.safe_load(toc_path.read_text())
    names = [toc["root"]]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                names.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key, []))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return [
        str(Path(n).with_suffix("")) if Path(n).suffix in (".md", ".ipynb") else n
        for n in names
    ]
