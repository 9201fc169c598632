"""Write the make rules saying which sources each chapter's executed notebook depends on.

A chapter depends on its notebook, on every ``icml25`` module it imports (found by scanning the
notebook's code cells), transitively on the modules and kernels those import, and always on
``lib/common.py``, ``kernels/__init__.py`` and the pins. ``make book`` uses these rules so that
a change re-executes exactly the chapters it affects.

Usage: python .ci/deps.py OUTPUT.mk
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORT_RE = re.compile(r"\bicml25(?:\.(kernels))?(?:\.(\w+))?|\bfrom\s+icml25(?:\.(kernels))?\s+import\s+([\w\s,()]+)")
ALWAYS = ["lib/common.py", "lib/__init__.py", "kernels/__init__.py", "constraints.txt", "pyproject.toml"]


def module_files(code: str) -> set[str]:
    """Files of the icml25 modules named in ``code``."""
    files: set[str] = set()
    for m in IMPORT_RE.finditer(code):
        kernels, name, kernels_from, names = m.groups()
        candidates = [name] if name else []
        if names:
            candidates += [n.strip() for n in re.split(r"[,\s()]+", names) if n.strip()]
        is_kernel = bool(kernels or kernels_from)
        for cand in candidates:
            if is_kernel:
                paths = [ROOT / "kernels" / f"{cand}.py", ROOT / "kernels" / f"{cand}.cu"]
            else:
                paths = [ROOT / "lib" / f"{cand}.py", *sorted((ROOT / "lib" / cand).rglob("*.py"))]
            files.update(str(p.relative_to(ROOT)) for p in paths if p.is_file())
    return files


def closure(files: set[str]) -> set[str]:
    todo, seen = list(files), set(files)
    while todo:
        f = todo.pop()
        if not f.endswith(".py"):
            continue
        for g in module_files((ROOT / f).read_text()):
            cu = g[:-3] + ".cu"
            for h in (g, cu):
                if (ROOT / h).exists() and h not in seen:
                    seen.add(h)
                    todo.append(h)
        if f.startswith("kernels/"):
            cu = f[:-3] + ".cu"
            if (ROOT / cu).exists():
                seen.add(cu)
    return seen


def main(out: str) -> None:
    lines = []
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        deps = sorted(closure(module_files(code)) | set(ALWAYS))
        lines.append(f"_build/executed/{nb.name}: notebooks/{nb.name} {' '.join(deps)}")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
