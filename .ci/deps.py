"""Write the make rules saying which sources each chapter's executed notebook depends on.

A chapter depends on its notebook, on every ``icml25`` module it imports (found by scanning the
notebook's code cells), transitively on the modules and kernels those import, and always on
``lib/common.py``, ``kernels/__init__.py`` and the pins. ``make book`` uses these rules so that
a change re-executes exactly the chapters it affects.

Usage: python .ci/deps.py OUTPUT.mk
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALWAYS = [
    "lib/common.py",
    # what lib/common.py re-exports
    "lib/interactive.py",
    "lib/tables.py",
    "lib/hot_loops.py",
    "lib/checks.py",
    "lib/__init__.py",
    "kernels/__init__.py",
    "constraints.txt",
    "pyproject.toml",
]


def _parse(code: str) -> ast.Module:
    """``code`` parsed, IPython magics and shell escapes (``%``, ``!``) blanked out first."""
    lines = [
        "" if line.lstrip().startswith(("%", "!")) else line
        for line in code.splitlines()
    ]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        # one cell that does not parse must not hide the others:
        # parse cell by cell upstream
        return ast.Module(body=[], type_ignores=[])


def _module_paths(dotted: str) -> list[Path]:
    """Source files of ``icml25.<dotted>`` (a module, a package's every file, or a kernel)."""
    parts = dotted.split(".")
    if parts[0] == "kernels":
        if len(parts) == 1:
            return [ROOT / "kernels" / "__init__.py"]
        return [
            ROOT / "kernels" / f"{parts[1]}.py",
            ROOT / "kernels" / f"{parts[1]}.cu",
        ]
    base = ROOT / "lib" / Path(*parts)
    return (
        [base.with_suffix(".py"), *sorted(base.rglob("*.py"))]
        if base.is_dir()
        else [base.with_suffix(".py")]
    )


def module_files(code: str) -> set[str]:
    """Files of the icml25 modules that ``code`` imports (found with ``ast``, not a pattern)."""
    names: set[str] = set()
    for node in ast.walk(_parse(code)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("icml25.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "icml25":
                names |= {f"icml25.{a.name}" for a in node.names}
            elif node.module.startswith("icml25."):
                names.add(node.module)
                # from icml25.kernels import mips: mips is a module; from
                # icml25.x import f is not
                names |= {f"{node.module}.{a.name}" for a in node.names}
    files: set[str] = set()
    for name in names:
        dotted = name.removeprefix("icml25.")
        files.update(
            str(p.relative_to(ROOT)) for p in _module_paths(dotted) if p.is_file()
        )
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
        found: set[str] = set()
        for c in cells:
            if c["cell_type"] == "code":
                found |= module_files("".join(c["source"]))
        deps = sorted(closure(found) | set(ALWAYS))
        lines.append(f"_build/executed/{nb.name}: notebooks/{nb.name} {' '.join(deps)}")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
