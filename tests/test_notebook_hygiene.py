"""Every chapter follows the contract of book/authoring.md (the mechanical parts of it)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
REQUIRED_HEADINGS = [
    "What you will learn",
    "The problem",
    "Theory",
    "Implementation",
    "Experiments",
    "Results",
    "Interactive",
    "Exercises",
    "Summary",
]
CITE_RE = re.compile(r"\{cite(?::\w+)?\}`([\w\-:.]+(?:,\s*[\w\-:.]+)*)`")


def cells(nb_path: Path) -> list[dict]:
    return json.loads(nb_path.read_text())["cells"]


def source(cell: dict) -> str:
    return (
        "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    )


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections", []))

    for part in toc.get("parts", []):
        walk(part["chapters"])
    return files


def test_there_is_at_least_one_chapter():
    assert NOTEBOOKS, "no notebooks/NN_slug.ipynb found"


def test_every_toc_entry_exists():
    for f in toc_files():
        assert any((ROOT / f"{f}{ext}").exists() for ext in (".md", ".ipynb")), (
            f"_toc.yml names missing file {f}"
        )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_is_in_toc(nb):
    assert f"notebooks/{nb.stem}" in toc_files(), f"{nb.name} is not listed in _toc.yml"


def _as_committed(nb_path: Path) -> list[dict]:
    """The cells as git stores the notebook: through this clone's nbstripout filter when `make`
    installed it (then outputs saved in JupyterLab never reach git), else the file itself."""
    import subprocess

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    clean = git("config", "--get", "filter.nbstripout.clean")
    attr = git("check-attr", "filter", "--", str(nb_path.relative_to(ROOT)))
    if "nbstripout" in clean and attr.endswith(": nbstripout"):
        out = subprocess.run(
            clean,
            shell=True,
            cwd=ROOT,
            input=nb_path.read_text(),
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, (
            f"{nb_path.name}: the nbstripout filter failed: {out.stderr[-500:]}"
        )
        return json.loads(out.stdout)["cells"]
    return cells(nb_path)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_are_stripped(nb):
    dirty = [
        i
        for i, c in enumerate(_as_committed(nb))
        if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))
    ]
    assert not dirty, (
        f"{nb.name}: code cells {dirty} carry outputs or execution counts (strip them)"
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_kernelspec_is_python3(nb):
    meta = json.loads(nb.read_text())["metadata"]
    assert meta.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_holds_profile_and_seed_only(nb):
    tagged = [
        c for c in cells(nb) if "parameters" in c.get("metadata", {}).get("tags", [])
    ]
    assert len(tagged) == 1, (
        f"{nb.name}: expected exactly one cell tagged 'parameters', found {len(tagged)}"
    )
    tree = ast.parse(source(tagged[0]))
    assigned = {
        t.id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
    }
    assert assigned == {"PROFILE": "cpu", "SEED": 0}, (
        f"{nb.name}: parameters cell must be PROFILE = 'cpu', SEED = 0; got {assigned}"
    )
    assert all(isinstance(node, ast.Assign) for node in tree.body), (
        f"{nb.name}: parameters cell may only assign"
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_title_and_citation(nb):
    first = cells(nb)[0]
    assert first["cell_type"] == "markdown"
    text = source(first)
    assert text.startswith(f"# {nb.stem[:2]} · "), (
        f"{nb.name}: title must start with '# {nb.stem[:2]} · '"
    )
    assert CITE_RE.search(text), (
        f"{nb.name}: the first cell must cite the paper with {{cite}}"
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_required_sections_in_order(nb):
    headings = [
        line[3:].strip()
        for c in cells(nb)
        if c["cell_type"] == "markdown"
        for line in source(c).splitlines()
        if line.startswith("## ")
    ]
    positions = []
    for req in REQUIRED_HEADINGS:
        found = [i for i, h in enumerate(headings) if h.startswith(req)]
        assert found, f"{nb.name}: missing section '## {req}' (have {headings})"
        positions.append(found[0])
    assert positions == sorted(positions), (
        f"{nb.name}: sections out of order: {list(zip(REQUIRED_HEADINGS, positions))}"
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_uses_profile_config_and_seed(nb):
    code = "\n".join(source(c) for c in cells(nb) if c["cell_type"] == "code")
    # \s*: ruff format puts the arguments of a long call on their own lines
    assert re.search(r"profile_config\(\s*PROFILE\b", code), (
        f"{nb.name}: sizes must come from profile_config(PROFILE, ...)"
    )
    assert re.search(r"seed_everything\(\s*SEED\b", code), (
        f"{nb.name}: must call seed_everything(SEED)"
    )
    assert "record_metrics(" in code and (
        "results_table(" in code or "claims_table(" in code
    ), (
        f"{nb.name}: results table (claims_table from the chapter's claim records, or results_table) and metrics missing"
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_check_cells_assert_something(nb):
    checks = [
        source(c)
        for c in cells(nb)
        if c["cell_type"] == "code" and source(c).lstrip().startswith("# Check:")
    ]
    assert len(checks) >= 3, (
        f"{nb.name}: at least three '# Check:' cells required, found {len(checks)}"
    )
    empty = [c.splitlines()[0] for c in checks if "assert" not in c]
    assert not empty, f"{nb.name}: check cells without an assert: {empty}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_exercises_have_solutions_and_checks(nb):
    cs = cells(nb)
    text = "\n".join(source(c) for c in cs if c["cell_type"] == "markdown")
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: ([\w-]+)", text)
    assert len(labels) >= 3, (
        f"{nb.name}: at least three exercises with :label: required, found {labels}"
    )
    for label in labels:
        assert re.search(r"```\{solution-start\} " + re.escape(label) + r"\b", text), (
            f"{nb.name}: no solution for {label}"
        )
        checks = [
            c
            for c in cs
            if "exercise-check" in c.get("metadata", {}).get("tags", [])
            and label in source(c)
        ]
        assert checks, f"{nb.name}: no cell tagged 'exercise-check' mentioning {label}"
    solutions = [c for c in cs if "solution" in c.get("metadata", {}).get("tags", [])]
    assert len(solutions) >= len(labels), (
        f"{nb.name}: every exercise needs a code cell tagged 'solution'"
    )


def test_every_citation_is_in_references_bib():
    keys = set(
        re.findall(
            r"^@\w+\{([^,]+),", (ROOT / "book" / "references.bib").read_text(), re.M
        )
    )
    texts = [
        source(c) for nb in NOTEBOOKS for c in cells(nb) if c["cell_type"] == "markdown"
    ]
    texts += [p.read_text() for p in (ROOT / "book").glob("*.md")]
    cited = {
        k.strip()
        for t in texts
        for group in CITE_RE.findall(t)
        for k in group.split(",")
    }
    assert cited <= keys, (
        f"cited but not in book/references.bib: {sorted(cited - keys)}"
    )


def test_references_bib_has_all_19_papers():
    bib = (ROOT / "book" / "references.bib").read_text()
    n_conf = len(
        re.findall(
            r"booktitle\s*=\s*\{Proceedings of the 42nd International Conference on Machine Learning\}",
            bib,
        )
    )
    assert n_conf >= 19, (
        f"references.bib has {n_conf} ICML 2025 entries, expected all 19 papers"
    )
