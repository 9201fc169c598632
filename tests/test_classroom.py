"""Classroom editions (icml25.classroom): student / instructor editions and the offline autograder.

For every chapter with exercises (and the small fixture chapter tests/fixtures/99_demo_chapter):
the instructor edition scores full marks, the untouched student edition scores zero on every
question without crashing, a student edition filled with the solutions and then reshuffled
(duplicated, moved, deleted cells, a cell that raises) still scores full marks, no line of a
solution or of a hidden test reaches a file a student receives (student edition, reader edition),
every exercise has a hidden test, each stub keeps its solution's signature, and broken solution
gates are errors naming the cell.

Grading runs one sandbox per submission (tests/test_grading_sandbox.py attacks it): 2 per chapter
(instructor, untouched student) and 5 for the cheap fixture chapter, which also covers every
reshuffling edit; the reshuffled filled notebook of each real chapter is marked slow. The
editions are built once per chapter. Grading tests skip, saying why, where no sandbox can be made
(bubblewrap missing: `make system-deps`).
"""

from __future__ import annotations

import ast
import copy
import json
import re
import zipfile
from pathlib import Path

import nbformat
import pytest

from icml25 import classroom as cr

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "99_demo_chapter.ipynb"


def _has_exercises(nb: Path) -> bool:
    try:
        return bool(cr.parse_chapter(nb).exercises)
    except cr.ClassroomFormatError:
        return True  # a malformed chapter must fail the tests below, not be skipped


NO_SANDBOX = cr.sandbox_available()
needs_sandbox = pytest.mark.skipif(
    NO_SANDBOX is not None, reason=f"no grading sandbox here: {NO_SANDBOX}"
)
CHAPTERS = [FIXTURE] + [nb for nb in cr.chapter_notebooks(ROOT) if _has_exercises(nb)]
IDS = [p.stem for p in CHAPTERS]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Editions and grades, built lazily once per chapter for this module."""
    cache: dict[Path, dict] = {}
    out = tmp_path_factory.mktemp("assignments")

    def get(nb: Path) -> dict:
        entry = cache.get(nb)
        if entry is None:
            chapter = cr.parse_chapter(nb)
            editions = cr.assign(nb, out)
            entry = cache[nb] = {
                "chapter": chapter,
                "editions": editions,
                "out": out / nb.stem,
            }
        return entry

    return get


# --------------------------------------------------------------------------------------
# Building submissions the way students change notebooks
# --------------------------------------------------------------------------------------


def _answer_cells(nb) -> list[int]:
    return [
        i
        for i, c in enumerate(nb.cells)
        if "otter_answer_cell" in c.metadata.get("tags", [])
    ]


def _filled(student_nb, chapter: cr.Chapter):
    """The student edition with every answer cell replaced by the exercise's solution."""
    nb = copy.deepcopy(student_nb)
    by_name = {name: ex for ex in chapter.exercises for name in ex.functions}
    for i in _answer_cells(nb):
        names = set(cr.signatures(nb.cells[i].source))
        ex = next(by_name[n] for n in names if n in by_name)
        nb.cells[i].source = ex.solution
    return nb


def _shuffled(nb):
    """Duplicate the setup and an answer cell, move answers below the check cells and one check
    above everything, delete every markdown cell and the check-all cell, add a failing cell and
    a cell with a syntax error."""
    nb = copy.deepcopy(nb)
    cells = nb.cells
    answers = [cells[i] for i in _answer_cells(nb)]
    setup = next(c for c in cells if c.cell_type == "code" and "PROFILE" in c.source)
    checks = [c for c in cells if c.cell_type == "code" and "grader.check(" in c.source]
    rest = [
        c
        for c in cells
        if c.cell_type == "code"
        and c not in answers
        and c not in checks
        and "check_all" not in c.source
    ]
    moved_check = copy.deepcopy(checks[0])
    new = [
        moved_check,
        *rest,
        copy.deepcopy(setup),
        *checks[1:],
        nbformat.v4.new_code_cell("raise RuntimeError('a student cell that fails')"),
        nbformat.v4.new_code_cell("def broken(:\n    pass"),
        *answers[::-1],
        copy.deepcopy(answers[0]),
    ]
    nb.cells = new
    return nb


def _fresh_ids(nb):
    for cell in nb.cells:
        cell["id"] = nbformat.v4.new_code_cell().id
    return nb


def _grade_variants(chapter: cr.Chapter, ed: cr.Editions, subs: Path, names: list[str]):
    subs.mkdir(parents=True, exist_ok=True)
    student = nbformat.read(ed.student, as_version=4)
    make = {
        "instructor": lambda: nbformat.read(ed.instructor, as_version=4),
        "untouched": lambda: student,
        "filled": lambda: _filled(student, chapter),
        "filled_shuffled": lambda: _shuffled(_filled(student, chapter)),
        "untouched_shuffled": lambda: _shuffled(student),
    }
    for name in names:
        nbformat.write(_fresh_ids(make[name]()), subs / f"{name}.ipynb")
    df = cr.grade(ed.autograder, subs, subs / "scores.csv")
    return {
        "df": df,
        "csv": subs / "scores.csv",
        "questions": [ex.label for ex in chapter.exercises],
    }


def _assert_scores(s: dict, full: list[str], zero: list[str]) -> None:
    df, questions = s["df"], s["questions"]
    assert set(questions) <= set(df.columns), (questions, list(df.columns))
    assert (df["error"] == "").all(), df["error"].to_dict()
    for who in full:
        for q in questions:
            assert df.loc[who, q] == pytest.approx(1.0), (who, q, df.loc[who].to_dict())
        assert df.loc[who, "total"] == pytest.approx(len(questions)) and df.loc[
            who, "possible"
        ] == len(questions)
    for who in zero:
        for q in questions:
            assert df.loc[who, q] == 0.0, (who, q, df.loc[who].to_dict())
        assert df.loc[who, "possible"] == len(questions)


# --------------------------------------------------------------------------------------
# Grading
# --------------------------------------------------------------------------------------


@needs_sandbox
@pytest.mark.parametrize("nb", CHAPTERS, ids=IDS)
def test_instructor_scores_full_marks_and_student_zero(built, nb):
    entry = built(nb)
    names = ["instructor", "untouched"]
    # the fixture is cheap: every edit a student makes, in one grading run
    if nb == FIXTURE:
        names += ["filled", "filled_shuffled", "untouched_shuffled"]
    entry["scores"] = s = _grade_variants(
        entry["chapter"], entry["editions"], entry["out"] / "subs", names
    )
    _assert_scores(
        s,
        full=[n for n in names if n in ("instructor", "filled", "filled_shuffled")],
        zero=[n for n in names if n.startswith("untouched")],
    )


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("nb", CHAPTERS[1:], ids=IDS[1:])
def test_shuffled_filled_student_notebook_scores_full_marks(built, nb):
    """A student who pasted the solutions, duplicated, moved and deleted cells and left a failing
    cell still gets full marks (slow: runs the chapter's solutions once more)."""
    entry = built(nb)
    s = _grade_variants(
        entry["chapter"],
        entry["editions"],
        entry["out"] / "subs-shuffled",
        ["filled_shuffled"],
    )
    _assert_scores(s, full=["filled_shuffled"], zero=[])


@needs_sandbox
def test_scores_csv_has_one_row_per_student_and_one_column_per_question(built):
    entry = built(FIXTURE)
    if "scores" not in entry:
        test_instructor_scores_full_marks_and_student_zero(built, FIXTURE)
    s = entry["scores"]
    text = s["csv"].read_text().splitlines()
    header = text[0].split(",")
    assert header[0] == "student" and set(s["questions"]) <= set(header)
    assert {"total", "possible", "percent", "error", "notes"} <= set(header)
    assert sorted(line.split(",")[0] for line in text[1:]) == sorted(s["df"].index)


# --------------------------------------------------------------------------------------
# What the student edition holds
# --------------------------------------------------------------------------------------


def _strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)] + [
            k for k in obj if isinstance(k, str)
        ]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


def _student_parts(student_dir: Path) -> list[str]:
    parts = []
    for f in sorted(student_dir.rglob("*")):
        if not f.is_file():
            continue
        if f.suffix == ".ipynb":
            nb = json.loads(f.read_text())
            for cell in nb.get("cells", []):  # a cell's source, whole (a list of lines)
                if isinstance(cell.get("source"), list):
                    cell["source"] = "".join(cell["source"])
            parts.extend(_strings(nb))
        else:
            parts.append(f.read_bytes().decode("utf-8", errors="replace"))
    return parts


def _student_text(student_dir: Path) -> str:
    return "\n".join(_student_parts(student_dir))


def _public_text(nb_path: Path) -> str:
    """What a reader of the book sees anyway: every cell but solutions and hidden checks."""
    stripped = cr.strip_solutions(nbformat.read(nb_path, as_version=4))
    return "\n".join(c.source for c in stripped.cells)


def _signature_lines(src: str) -> set[int]:
    """0-based line numbers of def/class headers (decorators, multi-line signatures)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(src)):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.body
        ):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if node.body[0].lineno > node.lineno:
                lines.update(range(start - 1, node.body[0].lineno - 1))
    return lines


def _secret_lines(code: str, *, skip_signatures: bool) -> list[str]:
    skip = _signature_lines(code) if skip_signatures else set()
    out = [line.strip() for k, line in enumerate(code.split("\n")) if k not in skip]
    # the forms ast.unparse gives (otter rewrites test bodies so)
    for st in ast.parse(code).body:
        if not (
            skip_signatures
            and isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ):
            out.extend(line.strip() for line in ast.unparse(st).split("\n"))
    return out


def _leaks(lines: list[str], haystack: str, public: str) -> list[str]:
    public_lines = {line.strip() for line in public.split("\n")}
    return sorted(
        {
            line
            for line in lines
            if len(re.sub(r"\s", "", line)) >= 6
            and line not in public_lines
            and line not in public
            and line in haystack
        }
    )


@pytest.mark.parametrize("nb", CHAPTERS, ids=IDS)
def test_student_edition_holds_no_solution_and_no_hidden_test(built, nb):
    entry = built(nb)
    chapter, ed = entry["chapter"], entry["editions"]
    text = _student_text(ed.student.parent)
    public = _public_text(nb)
    for ex in chapter.exercises:
        sol = _secret_lines(ex.solution, skip_signatures=True)
        sol += [line.strip() for t in ex.solution_text for line in t.split("\n")]
        assert not _leaks(sol, text, public), (
            f"{ex.label}: solution lines in the student edition: {_leaks(sol, text, public)}"
        )
        for hidden in ex.hidden:
            hid = _secret_lines(hidden, skip_signatures=False)
            assert not _leaks(hid, text, public), (
                f"{ex.label}: hidden-test lines in the student edition: {_leaks(hid, text, public)}"
            )
    assert "hidden=True" not in text and "hidden: true" not in text
    # and the instructor side does hold them (the search above
    # can find what it looks for)
    with zipfile.ZipFile(ed.autograder) as zf:
        bundle = "\n".join(
            zf.read(n).decode() for n in zf.namelist() if n.startswith("tests/")
        )
    inst = _student_text(ed.instructor.parent) + bundle
    for ex in chapter.exercises:
        sol = [
            line
            for line in _secret_lines(ex.solution, skip_signatures=True)
            if len(line) >= 6
        ]
        assert any(line in inst for line in sol), ex.label
        if ex.hidden:
            assert "hidden=True" in inst


_COMPOUND_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(code: str) -> list[tuple[set[int], str]]:
    """(0-based lines, text) of each statement of ``code`` as ``ast.unparse`` writes it (for a
    compound one, its header: ``if x:``, ``def f(a):``), so that a statement reads the same
    however it is laid out: ruff format spreads a long one over several lines (``print(`` on
    a line of its own), adds parentheses and trailing commas, and otter rewrites test bodies
    through ``ast.unparse``. Raises SyntaxError where ``code`` is not Python."""
    out = []
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, (ast.stmt, ast.ExceptHandler)):
            continue
        if any(getattr(node, f, None) for f in _COMPOUND_FIELDS):
            head = copy.copy(node)
            for f in _COMPOUND_FIELDS:
                if getattr(head, f, None):
                    setattr(head, f, [] if f != "body" else [ast.Pass()])
            if isinstance(head, ast.ExceptHandler):
                text = ast.unparse(
                    ast.Try(body=[ast.Pass()], handlers=[head], orelse=[], finalbody=[])
                )
                text = text.split("\n")[2]
            else:
                text = "\n".join(
                    line
                    for line in ast.unparse(head).split("\n")
                    if line.strip() != "pass"
                )
            first = min(
                [node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]
            )
            last = max(first, node.body[0].lineno - 1)
        else:
            text = ast.unparse(node)
            first, last = node.lineno, node.end_lineno or node.lineno
        out.append((set(range(first - 1, last)), re.sub(r"\s+", " ", text).strip()))
    return out


def _statement_texts(text: str) -> set[str]:
    """The statements of ``text``; where it is not Python as a whole (markdown, a notebook's
    metadata), those of each of its lines that is (a compound statement's header too)."""
    try:
        return {st for _, st in _statements(text)}
    except SyntaxError:
        out = set()
        for line in text.split("\n"):
            for attempt in (line.strip(), line.strip() + " pass"):
                try:
                    out |= {st for _, st in _statements(attempt)}
                    break
                except SyntaxError:
                    pass
        return out


def _received_statements(student_dir: Path, chapter_nb: Path) -> set[str]:
    """Every statement of every file a student receives: the student edition's files and the
    reader edition of the chapter (the book without solutions)."""
    texts = _student_parts(student_dir)
    texts += [
        c.source
        for c in cr.strip_solutions(nbformat.read(chapter_nb, as_version=4)).cells
    ]
    return {st for t in texts for st in _statement_texts(t)}


@pytest.mark.parametrize("nb", CHAPTERS, ids=IDS)
def test_no_solution_or_hidden_test_line_reaches_a_student(built, nb):
    """No statement of a solution cell (but its def/class headers, which the stub keeps) and no
    statement of a hidden test appears in any file a student receives, compared as
    ``ast.unparse`` writes them (layout, parentheses, quotes and comments aside: a statement
    ruff format spreads over several lines is compared whole, not line by line); only
    statements of fewer than 6 visible characters (``else:``, ``x = 1``) are exempt. No
    exemption for statements the chapter shows elsewhere: a public check that repeats a line
    of the solution's formula gives it away."""
    entry = built(nb)
    chapter, ed = entry["chapter"], entry["editions"]
    received = _received_statements(ed.student.parent, nb)

    def statements(code: str, skip: set[int]) -> list[str]:
        try:
            sts = _statements(code)
        except SyntaxError:  # a solution's markdown text
            return sorted(_statement_texts(code))
        return [st for rows, st in sts if not rows <= skip]

    def leaks(code: str, skip: set[int]) -> list[str]:
        return sorted(
            {
                st
                for st in statements(code, skip)
                if len(st.replace(" ", "")) >= 6 and st in received
            }
        )

    for ex in chapter.exercises:
        sol = cr._without_magics(ex.solution)
        found = leaks(sol, _signature_lines(sol))
        found += [st for t in ex.solution_text for st in leaks(t, set())]
        assert not found, (
            f"{nb.name} {ex.label}: solution statements a student receives: {found}"
        )
        for hidden in ex.hidden:
            found = leaks(cr._without_magics(hidden), set())
            assert not found, (
                f"{nb.name} {ex.label}: hidden-test statements a student receives: {found}"
            )
    # the search finds what it looks for: every solution is in the instructor's files
    inst = {
        st for t in _student_parts(ed.instructor.parent) for st in _statement_texts(t)
    }
    for ex in chapter.exercises:
        sol = cr._without_magics(ex.solution)
        body = statements(sol, _signature_lines(sol))
        assert any(st in inst for st in body if len(st.replace(" ", "")) >= 6), ex.label


@pytest.mark.parametrize("nb", CHAPTERS, ids=IDS)
def test_every_exercise_has_a_hidden_test_in_the_autograder_only(built, nb):
    entry = built(nb)
    chapter, ed = entry["chapter"], entry["editions"]
    spec = cr._read_spec(ed.autograder)
    for ex, sx in zip(chapter.exercises, spec["exercises"]):
        assert ex.hidden, (
            f"{nb.name} {ex.label}: no cell tagged exercise-hidden (see the instructor guide)"
        )
        assert sx["label"] == ex.label and [t["hidden"] for t in sx["tests"]].count(
            True
        ) == len(ex.hidden)
    student = nbformat.read(ed.student, as_version=4)
    assert "Hidden check" not in "\n".join(c.source for c in student.cells)


@pytest.mark.parametrize("nb", CHAPTERS, ids=IDS)
def test_checks_read_only_the_setup_and_the_exercise_functions(nb):
    """A check (public or hidden) runs in the grader's test process: it sees the chapter's setup and
    the functions the exercises name, not a value the student's notebook computed at top level nor
    another check's local variable."""
    chapter = cr.parse_chapter(nb)
    spec = cr.grading_spec(chapter)
    known = (
        cr._module_bindings(ast.parse(spec["setup"]))
        if spec["setup"].strip()
        else set()
    )
    known |= {f for ex in chapter.exercises for f in ex.functions}
    for sx in spec["exercises"]:
        for t in sx["tests"]:
            unknown = cr._free_names(ast.parse(t["source"])) - known
            assert not unknown, (
                f"{nb.name} {t['name']}: reads {sorted(unknown)}, which neither the setup nor an exercise defines"
            )


def test_masks_name_what_the_setup_defines():
    """Every '# Grading masks:' name resolves in the chapter's setup (an alias it imports) or is a
    module path, so a misspelt mask cannot silently mask nothing."""
    import importlib

    for nb in CHAPTERS:
        chapter = cr.parse_chapter(nb)
        setup = "\n\n".join(s for s in [chapter.parameters, *chapter.setup] if s)
        bound = cr._module_bindings(ast.parse(cr._without_magics(setup)))
        for sx in cr.grading_spec(chapter)["exercises"]:
            for dotted in sx["masks"]:
                head = dotted.split(".")[0]
                if head in bound:
                    continue
                importlib.import_module(head)  # raises for a name that is neither


@pytest.mark.parametrize("nb", CHAPTERS, ids=IDS)
def test_each_stub_keeps_its_solution_signature(built, nb):
    entry = built(nb)
    student = nbformat.read(entry["editions"].student, as_version=4)
    stubs: dict[str, str] = {}
    for i in _answer_cells(student):
        stubs.update(cr.signatures(student.cells[i].source))
    for ex in entry["chapter"].exercises:
        for name, sig in cr.signatures(ex.solution).items():
            assert name in stubs, (
                f"{ex.label}: the student edition has no stub for {name}"
            )
            assert stubs[name] == sig, (
                f"{ex.label}: stub {name}{stubs[name]} != solution {name}{sig}"
            )


@pytest.mark.parametrize("nb", CHAPTERS, ids=IDS)
def test_student_edition_has_public_checks_for_every_exercise(built, nb):
    entry = built(nb)
    student = nbformat.read(entry["editions"].student, as_version=4)
    calls = re.findall(
        r'grader\.check\("([^"]+)"\)',
        "\n".join(c.source for c in student.cells if c.cell_type == "code"),
    )
    assert calls == [ex.label for ex in entry["chapter"].exercises]
    tests = student.metadata["otter"]["tests"]
    assert set(tests) == set(calls)


# --------------------------------------------------------------------------------------
# The converter itself (no kernel)
# --------------------------------------------------------------------------------------


def test_free_names_are_scope_aware():
    tree = ast.parse(
        "def f(rng):\n    return rng.normal() + k\nx = [y for y in data]\nrng2 = rng\nf(rng)"
    )
    assert cr._free_names(tree) == {"k", "data", "rng"}


def test_stub_keeps_signature_and_drops_everything_else():
    src = (
        "import math\n\n@staticmethod\ndef f(a, b: int = 2, *args, c, d=None, **kw) -> float:\n"
        '    """secret doc"""\n    return math.pi * a\n\nclass K(Base):\n    def m(self, x):\n        return x\n\nprint(f(1, c=2))'
    )
    stub = cr.stub_source(src, "ex-1")
    assert cr.signatures(stub) == cr.signatures(src)
    for secret in ("math.pi", "secret doc", "print(", "return x"):
        assert secret not in stub
    ns: dict = {"Base": object}
    exec(stub, ns)
    with pytest.raises(NotImplementedError, match="ex-1"):
        ns["f"](1, c=2)


def _nb(*cells):
    nb = nbformat.v4.new_notebook(cells=list(cells))
    return nb


def _tag(cell, tag):
    cell.metadata["tags"] = [tag]
    return cell


def test_malformed_chapters_raise_clear_errors(tmp_path):
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    no_label = _nb(md("```{exercise} T\nbody\n```"))
    nbformat.write(no_label, tmp_path / "01_a.ipynb")
    with pytest.raises(cr.ClassroomFormatError, match="no :label:"):
        cr.parse_chapter(tmp_path / "01_a.ipynb")
    no_check = _nb(
        md("```{exercise} T\n:label: ex-a\nbody\n```"),
        _tag(code("def f(x):\n    return x"), "solution"),
    )
    nbformat.write(no_check, tmp_path / "01_b.ipynb")
    with pytest.raises(cr.ClassroomFormatError, match="exercise-check"):
        cr.parse_chapter(tmp_path / "01_b.ipynb")
    no_function = _nb(
        md("```{exercise} T\n:label: ex-a\nbody\n```"),
        _tag(code("x = 1"), "solution"),
        _tag(code("# Check: exercise ex-a\nassert x == 1"), "exercise-check"),
    )
    nbformat.write(no_function, tmp_path / "01_c.ipynb")
    with pytest.raises(cr.ClassroomFormatError, match="named function"):
        cr.parse_chapter(tmp_path / "01_c.ipynb")
    drift = _nb(
        md("```{exercise} T\n:label: ex-a\nbody\n```"),
        code("def f(x, y):\n    raise NotImplementedError"),
        md("```{solution-start} ex-a\n```"),
        _tag(code("def f(x):\n    return x"), "solution"),
        md("```{solution-end}\n```"),
        _tag(code("# Check: exercise ex-a\nassert f(1) == 1"), "exercise-check"),
    )
    nbformat.write(drift, tmp_path / "01_d.ipynb")
    with pytest.raises(cr.ClassroomFormatError, match="signatures differ"):
        cr.build_master(cr.parse_chapter(tmp_path / "01_d.ipynb"))
    with pytest.raises(FileNotFoundError):
        cr.parse_chapter(tmp_path / "missing.ipynb")


def _gated(*gates):
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [md("# 01 · T"), md("```{exercise} T\n:label: ex-a\nbody\n```")]
    cells += [
        md(g)
        if g.startswith(("```", ":::"))
        else _tag(code("def f(x):\n    return x"), "solution")
        for g in gates
    ]
    cells += [_tag(code("# Check: exercise ex-a\nassert f(1) == 1"), "exercise-check")]
    cells += [
        md("## Summary"),
        code("print('the rest of the chapter')"),
        md("more"),
        md("and more"),
    ]
    return _nb(*cells)


@pytest.mark.parametrize(
    "gates, match",
    [
        (
            ["```{solution-start} ex-a\n:class: dropdown\n```", "SOL"],
            "cell 2: this {solution-start} is never closed",
        ),
        (
            ["```{solution-start} ex-a\n```", "SOL", "```{soluton-end}\n```"],
            r"cell 4: unknown directive \{soluton-end\}",
        ),
        (
            ["```{solution-strat} ex-a\n```", "SOL", "```{solution-end}\n```"],
            r"cell 2: unknown directive \{solution-strat\}",
        ),
        (["SOL", "```{solution-end}\n```"], r"cell 3: \{solution-end\} with no open"),
    ],
)
def test_broken_solution_gates_are_errors_naming_the_cell(tmp_path, gates, match):
    nb = _gated(*gates)
    nbformat.write(nb, tmp_path / "01_g.ipynb")
    with pytest.raises(cr.ClassroomFormatError, match=match):
        cr.parse_chapter(tmp_path / "01_g.ipynb")
    with pytest.raises(
        cr.ClassroomFormatError, match=match.replace("cell", "notebook cell")
    ):
        cr.strip_solutions(nb)  # never a silent drop of the rest of the chapter


def test_misspelt_exercise_tag_is_an_error(tmp_path):
    nb = _gated("```{solution-start} ex-a\n```", "SOL", "```{solution-end}\n```")
    nb.cells[-4].metadata["tags"] = ["exercise-hiden"]
    with pytest.raises(
        cr.ClassroomFormatError,
        match="unknown exercise tag 'exercise-hiden'.*exercise-hidden",
    ):
        cr.check_gates(nb)
    well_formed = _gated(
        "```{solution-start} ex-a\n```", "SOL", "```{solution-end}\n```"
    )
    assert len(cr.strip_solutions(well_formed).cells) == len(well_formed.cells) - 3


def test_setup_pulls_in_only_the_cells_the_exercises_need():
    ch = cr.parse_chapter(FIXTURE)
    setup = "\n".join(ch.setup)
    assert "data = rng.normal" in setup and "cfg = profile_config" in setup
    assert "data.mean() - 1.5" not in setup  # the chapter's own check cell stays out
    assert [ex.label for ex in ch.exercises] == [
        "ex99-mean",
        "ex99-softmax",
        "ex99-runmax",
    ]
    assert [len(ex.hidden) for ex in ch.exercises] == [1, 1, 1]


def test_reader_edition_removes_solutions_and_hidden_checks():
    nb = nbformat.read(FIXTURE, as_version=4)
    out = cr.strip_solutions(nb)
    text = "\n".join(c.source for c in out.cells)
    assert (
        "solution-start" not in text
        and "total += v" not in text
        and "Hidden check" not in text
    )
    assert text.count("{exercise}") == 3 and text.count("# Check: exercise") == 3
    # gates + solution + hidden check per exercise
    assert len(nb.cells) - len(out.cells) == 3 * 3 + 3
