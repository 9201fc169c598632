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


# --------------------------------------------------------------------------------------
# Folding (book/authoring.md, "Folded cells"): a cell is folded (tag hide-input) exactly
# when it only draws or formats output, a figure, a table or a generated caption.
# --------------------------------------------------------------------------------------

#: figure-making calls of matplotlib (plt.<name>) and the interactive section's call
FIGURE_CALLS = {"subplots", "figure", "subplot_mosaic"}
#: calls that make a cell part of the lesson, never folded
LESSON_CALLS = {
    "show_source",
    "record_metrics",
    "claims_table",
    "results_table",
    "show_hot_loops",
    "profile_config",
    "seed_everything",
}
#: tags of cells that are never folded
LESSON_TAGS = {
    "parameters",
    "solution",
    "exercise-check",
    "exercise-hidden",
    "exercise-setup",
}
#: names of DataFrame methods or pandas that mark a table being formatted
TABLE_MARKS = re.compile(r"\bpd\.|DataFrame|\.round\(|\.style\b|show_table\(")


def code_trees(nb_cells: list[dict]) -> list[tuple[int, dict, ast.Module]]:
    """``(index, cell, syntax tree)`` of every code cell that parses."""
    out = []
    for i, cell in enumerate(nb_cells):
        if cell["cell_type"] != "code":
            continue
        try:
            out.append((i, cell, ast.parse(source(cell))))
        except SyntaxError:
            continue
    return out


def chapter_aliases(nb_cells: list[dict]) -> set[str]:
    """Names a chapter binds to its own code: ``from icml25[.kernels] import x [as y]``,
    but the shared ``icml25.common`` and ``icml25.claims``."""
    names = set()
    for _, _cell, tree in code_trees(nb_cells):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in (
                "icml25",
                "icml25.kernels",
            ):
                names |= {
                    a.asname or a.name
                    for a in node.names
                    if a.name not in ("common", "claims")
                }
    return names


def _called(node: ast.AST) -> list[ast.expr]:
    return [n.func for n in ast.walk(node) if isinstance(n, ast.Call)]


def _makes_figure(node: ast.AST) -> bool:
    for f in _called(node):
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id == "plt"
            and f.attr in FIGURE_CALLS
        ) or (isinstance(f, ast.Name) and f.id == "static_or_interactive"):
            return True
    return False


def _calls_chapter(node: ast.AST, aliases: set[str]) -> bool:
    """A call into the chapter's own modules outside a function definition."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    for child in ast.iter_child_nodes(node):
        if _calls_chapter(child, aliases):
            return True
    if isinstance(node, ast.Call):
        f = node.func
        while isinstance(f, ast.Attribute):
            f = f.value
        return isinstance(f, ast.Name) and f.id in aliases and f is not node.func
    return False


def _name_of(f: ast.expr | None) -> str:
    if isinstance(f, ast.Call):
        f = f.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def fold_kind(cell: dict, aliases: set[str], first_code: bool = False) -> str | None:
    """What a code cell only shows ('figure', 'caption', 'table'), or None for a cell of
    the lesson: a check, shown source, the parameters or set-up, an exercise cell, the
    results, or one that calls the chapter's own code outside a plot function (a figure
    cell's drawing starts at its first figure: the chapter calls must come before it,
    in an open cell)."""
    src = source(cell)
    tags = set(cell.get("metadata", {}).get("tags", []))
    if first_code or tags & LESSON_TAGS:
        return None
    if src.lstrip().startswith(("# Check", "# Hidden check", "# Reported")):
        return None
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    if any(isinstance(n, ast.Assert) for n in ast.walk(tree)):
        return None
    if any(_name_of(f) in LESSON_CALLS for f in _called(tree)):
        return None
    body = tree.body
    if not body:
        return None
    first_fig = next((i for i, st in enumerate(body) if _makes_figure(st)), None)
    if first_fig is not None:
        before = body[:first_fig]
        if any(_calls_chapter(st, aliases) for st in before):
            return None
        return "figure"
    if any(_calls_chapter(st, aliases) for st in body):
        return None
    last = body[-1]
    if not isinstance(last, ast.Expr):
        return None
    call = last.value
    if (
        isinstance(call, ast.Call)
        and _name_of(call.func) == "display"
        and call.args
        and isinstance(call.args[0], ast.Call)
        and _name_of(call.args[0].func) == "Markdown"
    ):
        return "caption"
    if TABLE_MARKS.search(ast.unparse(last)) or (
        isinstance(call, ast.Name) and TABLE_MARKS.search(src)
    ):
        return "table"
    return None


def split_point(cell: dict, aliases: set[str]) -> int | None:
    """For a figure cell that first calls the chapter's code: the index of the first
    top-level statement after the last such call (the cell splits there, the calls
    open above, the drawing folded below); None when the cell needs no split."""
    try:
        body = ast.parse(source(cell)).body
    except SyntaxError:
        return None
    first_fig = next((i for i, st in enumerate(body) if _makes_figure(st)), None)
    if first_fig is None:
        return None
    calls = [i for i, st in enumerate(body[:first_fig]) if _calls_chapter(st, aliases)]
    if not calls:
        return None
    k = max(calls) + 1
    while k < first_fig and _name_of(getattr(body[k], "value", None)) == "print":
        k += 1  # a print of what was computed stays with it, open
    return k


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_output_cells_fold_and_lesson_cells_stay_open(nb):
    """hide-input exactly on the cells that only draw a figure or format a table or a
    caption (fold_kind); checks, shown source, exercise cells, the results and every cell
    that calls the chapter's code (outside a plot function) stay open."""
    nb_cells = cells(nb)
    aliases = chapter_aliases(nb_cells)
    code = [(i, c) for i, c in enumerate(nb_cells) if c["cell_type"] == "code"]
    first = next(
        i for i, c in code if "parameters" not in c["metadata"].get("tags", [])
    )
    unfolded, overfolded = [], []
    for i, c in code:
        kind = fold_kind(c, aliases, first_code=i == first)
        folded = "hide-input" in c["metadata"].get("tags", [])
        head = source(c).split("\n", 1)[0][:60]
        if kind and not folded:
            unfolded.append(f"cell {i} ({kind}): {head}")
        if folded and not kind:
            overfolded.append(f"cell {i}: {head}")
    assert not unfolded, f"{nb.name}: output cells without hide-input: {unfolded}"
    assert not overfolded, f"{nb.name}: lesson cells folded: {overfolded}"


def test_fold_kind_tells_output_from_lesson():
    """The rule on hand-made cells, so that a change to it shows here first."""

    def cell(src, *tags):
        return {"cell_type": "code", "source": src, "metadata": {"tags": list(tags)}}

    aliases = {"mc", "mips"}
    drawing = "fig, ax = plt.subplots()\nax.plot(x, mc.f(x))\n"
    assert fold_kind(cell(drawing), aliases) == "figure"
    assert fold_kind(cell("y = mc.run(x)\n" + drawing), aliases) is None
    assert split_point(cell("y = mc.run(x)\nz = 2\n" + drawing), aliases) == 1
    assert split_point(cell("y = mc.run(x)\nprint(y)\n" + drawing), aliases) == 2
    assert split_point(cell(drawing), aliases) is None
    widget = "def plot(k=1):\n    fig, ax = plt.subplots()\n    ax.plot(mc.f(k))\n\n"
    widget += "static_or_interactive(plot, dict(k=w), k=1)\n"
    assert fold_kind(cell(widget), aliases) == "figure"
    caption = "r = a / b\ndisplay(Markdown(f'*Figure 2. ratio {r:.2f}*'))\n"
    assert fold_kind(cell(caption), aliases) == "caption"
    assert fold_kind(cell("df = pd.DataFrame(rows)\ndf.round(3)\n"), aliases) == "table"
    assert fold_kind(cell("res = mips.run(V)\npd.DataFrame(res)\n"), aliases) is None
    assert (
        fold_kind(cell("# Check: it holds\n" + drawing + "assert x\n"), aliases) is None
    )
    assert fold_kind(cell("show_source(mc._boost)\n"), aliases) is None
    assert fold_kind(cell(drawing, "solution"), aliases) is None
    assert fold_kind(cell("display(claims_table('06', m))\n"), aliases) is None
    assert fold_kind(cell(drawing), aliases, first_code=True) is None


NUMERIC_FONT = re.compile(r"\b(?:fontsize|labelsize|title_fontsize)\s*=\s*\d")


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_figure_text_sizes_follow_the_books_style(nb):
    """Legible figures (issue 17): a chapter sets the book's style (set_plot_style, whose
    figure hook scales every text with the figure's width so that it renders at 9 pt or
    more on the page, tests/test_common.py) and gives text sizes only relative to it
    ("small", "medium", "large"): a size in points would not scale."""
    code = [source(c) for c in cells(nb) if c["cell_type"] == "code"]
    assert any("set_plot_style()" in s for s in code), (
        f"{nb.name}: call icml25.common.set_plot_style() before the first figure"
    )
    fixed = [
        f"{m.group(0)} in: {line.strip()[:70]}"
        for s in code
        for line in s.splitlines()
        for m in NUMERIC_FONT.finditer(line)
    ]
    assert not fixed, f"{nb.name}: text sizes in points (use 'small'/'medium'): {fixed}"


#: the page column in figure inches (icml25.common.PAGE_WIDTH_IN): a wider figure is
#: shrunk to it on the page, and its text with it
PAGE_WIDTH_IN = 6.88
ANY_FIGSIZE = re.compile(r"figsize=\(([^()]*)\)")


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_fits_the_page(nb):
    """Every figure is at most the page's width (6.88 in), so its "small" text reads at
    9 pt or more; a wider one is shrunk and its text with it (issue 17 re-laid out the 63
    that were wider). Its width is a number the test can read: a ``figsize`` computed from
    the run (``5.2 * n_panels``) once grew to 15.6 in on the gpu profile unseen."""
    wide, unreadable = [], []
    for c in cells(nb):
        if c["cell_type"] != "code":
            continue
        for m in ANY_FIGSIZE.finditer(source(c)):
            width = m.group(1).split(",")[0].strip()
            try:
                w = float(width)
            except ValueError:
                unreadable.append(m.group(0))
                continue
            if w > PAGE_WIDTH_IN:
                wide.append(w)
    assert not wide, (
        f"{nb.name}: figures wider than the page ({PAGE_WIDTH_IN} in): {sorted(wide)}; "
        "fewer panels a row, stacked rows, shorter titles"
    )
    assert not unreadable, (
        f"{nb.name}: figure widths the test cannot read (write the number): {unreadable}"
    )


# --------------------------------------------------------------------------------------
# Numbered figures (book/authoring.md, "Numbering, figures and equations") and what a
# folded cell may compute
# --------------------------------------------------------------------------------------

FIG_NAME = re.compile(r"^fig(\d\d)-[a-z0-9][a-z0-9-]*$")
TYPED_FIGURE = re.compile(r"\b(?:Figure|Fig\.)\s*\d")
NUMREF = re.compile(r"\{numref\}`(?:[^`<]*<)?(fig\d\d-[a-z0-9-]+)>?`")
GLUE_FIGURE = re.compile(r"```\{glue:figure\}\s+(fig\d\d-[a-z0-9-]+)")


def _figure_cells(nb_cells: list[dict]) -> list[tuple[int, dict]]:
    """Code cells that draw a figure of the text (not the interactive section's)."""
    out = []
    for i, c, tree in code_trees(nb_cells):
        if "static_or_interactive" in source(c):
            continue
        if any(_makes_figure(st) for st in tree.body):
            out.append((i, c))
    return out


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_figures_are_numbered_captioned_and_referenced(nb):
    """Every figure of the text is a numbered MyST figure: its cell carries
    ``mystnb.figure`` (name ``figNN-<what>``, a caption) or glues it to a
    ``{glue:figure}`` block; the cell has no other output (no print or display: each
    output would become a figure of that name); the text refers to each figure with
    ``{numref}`` and types no "Figure 3" of its own."""
    nb_cells = cells(nb)
    md = "\n".join(source(c) for c in nb_cells if c["cell_type"] == "markdown")
    glued = set(GLUE_FIGURE.findall(md))
    nn = nb.name[:2]
    problems, names = [], []
    for i, c in _figure_cells(nb_cells):
        src = source(c)
        fig = c["metadata"].get("mystnb", {}).get("figure", {})
        name = fig.get("name", "")
        if not name:
            name = next((n for n in glued if f'"{n}"' in src or f"'{n}'" in src), "")
            if not name:
                problems.append(f"cell {i}: no mystnb.figure metadata and no glue")
                continue
        elif not str(fig.get("caption", "")).strip():
            problems.append(f"cell {i}: figure {name} has no caption")
        m = FIG_NAME.match(name)
        if not m or m.group(1) != nn:
            problems.append(f"cell {i}: name {name!r} is not fig{nn}-<what>")
        if fig and re.search(r"^\s*(print|display)\(", src, re.M):
            problems.append(f"cell {i}: {name} also prints or displays")
        names.append(name)
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        problems.append(f"figure names used twice: {sorted(dup)}")
    unref = [n for n in names if n not in set(NUMREF.findall(md))]
    if unref:
        problems.append(f"figures the text never refers to with {{numref}}: {unref}")
    typed = sorted(set(TYPED_FIGURE.findall(md)))
    if typed:
        problems.append(f"typed figure numbers (use {{numref}}): {typed}")
    assert not problems, f"{nb.name}: " + "; ".join(problems)


#: names a folded cell may leave behind: the figure's own handles
PLOT_NAMES = {"fig", "ax", "axes", "ax2", "axs", "im", "cb", "cbar", "lines", "handles"}


def _assigned(tree: ast.Module) -> set[str]:
    """Top-level names a cell binds (assignments, for targets, defs, imports)."""
    out: set[str] = set()
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(st.name)
            continue
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in st.names}
            continue
        out |= _stored(st, into_comprehensions=False)
    return out


def _stored(node: ast.AST, into_comprehensions: bool = True) -> set[str]:
    """Names bound anywhere in ``node`` (a comprehension's own names only if asked:
    they do not outlive it)."""
    out: set[str] = set()
    for n in ast.iter_child_nodes(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if not into_comprehensions and isinstance(
            n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        out |= _stored(n, into_comprehensions)
    return out


def _loaded(tree: ast.Module) -> set[str]:
    """Names a cell reads that it does not bind itself (anywhere in the cell)."""
    return {
        n.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    } - {
        n.id if isinstance(n, ast.Name) else n.arg
        for n in ast.walk(tree)
        if (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        or isinstance(n, ast.arg)
    }


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_folded_cells_compute_nothing_the_lesson_uses(nb):
    """A folded cell only draws or formats: no open cell after it (a check, the results,
    an exercise) reads a value it computed. Such a computation belongs in an open cell
    above the drawing, where the reader sees it."""
    last_bound: dict[str, tuple[int, bool]] = {}
    leaks = []
    for i, c, tree in code_trees(cells(nb)):
        folded = "hide-input" in c["metadata"].get("tags", [])
        if not folded:
            for name in sorted(_loaded(tree)):
                j, was_folded = last_bound.get(name, (-1, False))
                if was_folded and name not in PLOT_NAMES:
                    leaks.append(f"{name} (folded cell {j}, used by open cell {i})")
        for name in _assigned(tree):
            last_bound[name] = (i, folded)
    assert not leaks, f"{nb.name}: open cells read values of folded cells: {leaks}"
