"""Classroom editions of a chapter: student and instructor notebooks and an offline autograder.

Every chapter authors its exercises once, inside the chapter notebook, in the format of
``book/authoring.md`` (see ``book/instructor_guide.md``)::

    markdown  ```{exercise} Title            one per exercise, with :label: LABEL
    markdown  ```{solution-start} LABEL      opens the (folded) solution in the book
    code      tagged "solution"              defines the NAMED functions the exercise asks for
    markdown  ```{solution-end}              closes it
    code      tagged "exercise-check"        "# Check: exercise LABEL ..." + asserts (public test)
    code      tagged "exercise-hidden"       "# Hidden check: exercise LABEL ..." (optional; hidden test)
    code      tagged "exercise-setup"        (optional) chapter code the exercises need

This module turns those cells into an `otter-grader <https://otter-grader.readthedocs.io>`_
*master notebook* (otter-assign format, exception-based tests) holding only what the exercises
need, runs ``otter assign`` on it, and lays out

    _build/assignments/student/NN_slug/NN_slug.ipynb        stubs + public tests only
    _build/assignments/instructor/NN_slug/NN_slug.ipynb     solutions + all tests
    _build/assignments/instructor/NN_slug/autograder.zip    the autograder bundle
    _build/assignments/instructor/NN_slug/master.ipynb      the generated otter master notebook

Grading is offline and sandboxed (bubblewrap; see the Grading section below and the instructor
guide): :func:`grade` reads each submission, loads only the top-level definitions its exercises
name (and what they need) into one masked worker per exercise, runs the public and hidden tests in
a separate test process the submission's code never runs in, and writes one CSV row per student
with one column per question. Tests call the exercise's named functions by name, so grading
survives students adding, moving, duplicating or deleting cells. ``sandbox=False`` keeps otter's
own unsandboxed path (``otter.api.grade_submission``) for trusted notebooks.

Command line::

    python -m icml25.classroom assign [NOTEBOOK ...] [--out _build/assignments] [--run-tests]
    python -m icml25.classroom grade  AUTOGRADER_ZIP SUBMISSIONS_DIR [--csv scores.csv] [--jobs N]
                                      [--wall S] [--exercise-time S] [--memory-gib G] [--processes N] [--tmp-mib M]
    python -m icml25.classroom reader SRC_DIR DEST_DIR     # notebooks with solutions removed
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

import argparse
import ast
import builtins
import contextlib
import copy
import dataclasses
import io
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

import nbformat

__all__ = [
    "Exercise",
    "Chapter",
    "ClassroomFormatError",
    "parse_chapter",
    "stub_source",
    "signatures",
    "build_master",
    "assign",
    "grade",
    "grade_one",
    "grading_spec",
    "submission_definitions",
    "screen",
    "sandbox_available",
    "sandbox_exec",
    "Limits",
    "MaskedFunctionError",
    "strip_solutions",
    "check_gates",
    "chapter_notebooks",
    "main",
]

SOLUTION_TAG = "solution"
CHECK_TAG = "exercise-check"
HIDDEN_TAG = "exercise-hidden"
SETUP_TAG = "exercise-setup"
PARAMETERS_TAG = "parameters"

_FENCE = r"(?:`{3,}|:{3,})"
_EXERCISE_RE = re.compile(
    rf"^{_FENCE}\{{exercise(?:-start)?\}}[ \t]*(?P<title>[^\n]*)$", re.M
)
_SOLUTION_START_RE = re.compile(
    rf"^{_FENCE}\{{solution-start\}}[ \t]*(?P<label>\S+)", re.M
)
_SOLUTION_END_RE = re.compile(rf"^{_FENCE}\{{solution-end\}}", re.M)
_EXERCISE_END_RE = re.compile(rf"^{_FENCE}\{{exercise-end\}}", re.M)
_LABEL_RE = re.compile(r"^:label:[ \t]*(?P<label>\S+)", re.M)
_CHECK_LABEL_RE = re.compile(
    r"exercise\s+`?(?P<label>[A-Za-z0-9_.:-]+?)`?(?=[\s:,;.)]|$)"
)
_CHAPTER_RE = re.compile(r"^(?P<number>\d\d)_(?P<slug>[A-Za-z0-9_]+)$")
_MAGIC_RE = re.compile(r"^\s*[%!]")


class ClassroomFormatError(ValueError):
    """A chapter's exercise cells do not follow the authoring format (the message says where)."""


@dataclasses.dataclass
class Exercise:
    """One exercise of a chapter, as authored in the chapter notebook.

    Attributes:
        label: the sphinx-exercise ``:label:`` (also the otter question name).
        title: the directive's title text.
        prompt: the directive's body (markdown, without the ``:option:`` lines).
        solution: source of the code cell(s) tagged ``solution`` (joined by blank lines).
        solution_text: markdown cells inside the solution block other than the gates.
        checks: sources of the cells tagged ``exercise-check`` (public tests).
        hidden: sources of the cells tagged ``exercise-hidden`` (hidden tests).
        starter: untagged code cells between the exercise prompt and its solution.
    """

    label: str
    title: str
    prompt: str
    solution: str = ""
    solution_text: list[str] = dataclasses.field(default_factory=list)
    checks: list[str] = dataclasses.field(default_factory=list)
    hidden: list[str] = dataclasses.field(default_factory=list)
    starter: list[str] = dataclasses.field(default_factory=list)

    @property
    def functions(self) -> list[str]:
        """Names of the top-level functions and classes the solution defines."""
        return list(signatures(self.solution))

    @property
    def authored_stub(self) -> str:
        """The starter cells that define one of the solution's names (the stub the book shows)."""
        names = set(self.functions)
        return "\n\n\n".join(
            s.strip("\n") for s in self.starter if names & set(signatures(s))
        )

    @property
    def other_starter(self) -> list[str]:
        """Starter cells that define none of the solution's names."""
        names = set(self.functions)
        return [s for s in self.starter if not names & set(signatures(s))]

    def student_stub(self) -> str:
        """The code the student starts from: the authored starter stub when there is one (plus
        generated stubs for any solution name it lacks), else :func:`stub_source` of the solution.

        Raises:
            ClassroomFormatError: the authored stub's signatures differ from the solution's.
        """
        authored = self.authored_stub
        if not authored:
            return stub_source(self.solution, self.label)
        sol, stub = signatures(self.solution), signatures(authored)
        drift = {n: (stub[n], sol[n]) for n in sol if n in stub and stub[n] != sol[n]}
        if drift:
            raise ClassroomFormatError(
                f"exercise {self.label}: the starter cell's signatures differ from the solution's "
                f"(name: (starter, solution)): {drift}"
            )
        missing = [n for n in sol if n not in stub]
        if missing:
            tree = ast.parse(_without_magics(self.solution))
            keep = [n for n in tree.body if getattr(n, "name", None) in missing]
            extra = ast.unparse(ast.Module(body=keep, type_ignores=[]))
            authored += "\n\n\n" + stub_source(extra, self.label)
        return authored


@dataclasses.dataclass
class Chapter:
    """The classroom view of one chapter notebook.

    Attributes:
        path: the chapter notebook.
        name: ``NN_slug`` (the notebook's stem).
        title: the chapter title (first ``# `` heading, without the ``NN ·`` prefix).
        parameters: source of the ``parameters`` cell (``PROFILE``/``SEED``), or ``""``.
        setup: chapter code the exercises need, in chapter order (imports, tagged and sliced cells).
        setup_notes: one line per chapter cell pulled into the setup and why.
        exercises: the exercises, in chapter order.
    """

    path: Path
    name: str
    title: str
    parameters: str
    setup: list[str]
    setup_notes: list[str]
    exercises: list[Exercise]


# --------------------------------------------------------------------------------------
# Source analysis helpers
# --------------------------------------------------------------------------------------


def _source(cell: Any) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _without_magics(src: str) -> str:
    return "\n".join(line for line in src.splitlines() if not _MAGIC_RE.match(line))


def _parse(src: str, where: str) -> ast.Module:
    try:
        return ast.parse(_without_magics(src))
    except (
        SyntaxError
    ) as exc:  # pragma: no cover - a chapter that does not parse fails elsewhere too
        raise ClassroomFormatError(f"{where}: cannot parse the cell: {exc}") from exc


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _scope(nodes: Iterable[ast.AST]) -> tuple[set[str], set[str], list[ast.AST]]:
    """(names bound, names read, nested scopes) of one scope, not descending into nested scopes
    (whose decorators, defaults and annotations belong to this scope). Comprehension variables
    count as bound here (a simplification that only ever hides a name, never invents one)."""
    bound: set[str] = set()
    loads: set[str] = set()
    nested: list[ast.AST] = []
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            nested.append(node)
            if not isinstance(node, ast.Lambda):
                bound.add(node.name)
                stack.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                stack.extend(node.bases)
                stack.extend(k.value for k in node.keywords)
            else:
                args = node.args
                stack.extend(
                    d for d in args.defaults + args.kw_defaults if d is not None
                )
                if not isinstance(node, ast.Lambda):
                    stack.extend(
                        a.annotation
                        for a in _all_args(args)
                        if a.annotation is not None
                    )
                    if node.returns is not None:
                        stack.append(node.returns)
            continue
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        stack.extend(ast.iter_child_nodes(node))
    return bound, loads, nested


def _all_args(args: ast.arguments) -> list[ast.arg]:
    out = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    out += [a for a in (args.vararg, args.kwarg) if a is not None]
    return out


def _scope_free(body: list[ast.AST], params: set[str], enclosing: set[str]) -> set[str]:
    bound, loads, nested = _scope(body)
    local = bound | params
    free = loads - local - enclosing
    for sc in nested:
        inner_body = [sc.body] if isinstance(sc, ast.Lambda) else list(sc.body)
        inner_params = (
            set()
            if isinstance(sc, ast.ClassDef)
            else {a.arg for a in _all_args(sc.args)}
        )
        free |= _scope_free(inner_body, inner_params, enclosing | local)
    return free


def _module_bindings(tree: ast.Module) -> set[str]:
    """Names a cell binds at module level (not inside functions or classes)."""
    return _scope(tree.body)[0]


def _free_names(tree: ast.Module) -> set[str]:
    """Names a cell reads from the global environment without binding them (builtins excluded)."""
    return _scope_free(list(tree.body), set(), set()) - set(dir(builtins))


def _drop_imports(src: str, imports: list[str]) -> str:
    """``src`` without magics and without the top-level imports already in ``imports``."""
    src = _without_magics(src)
    lines = src.split("\n")
    drop: set[int] = set()
    for st in ast.parse(src).body:
        if isinstance(st, (ast.Import, ast.ImportFrom)) and ast.unparse(st) in imports:
            drop.update(range(st.lineno - 1, (st.end_lineno or st.lineno)))
    return "\n".join(line for k, line in enumerate(lines) if k not in drop).strip("\n")


def _top_level_imports(tree: ast.Module) -> list[str]:
    return [
        ast.unparse(st)
        for st in tree.body
        if isinstance(st, (ast.Import, ast.ImportFrom))
    ]


# --------------------------------------------------------------------------------------
# Stubs and signatures
# --------------------------------------------------------------------------------------


def _stub_node(node: ast.stmt, message: str) -> ast.stmt | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise_stmt = ast.parse(f"raise NotImplementedError({message!r})").body[0]
        new = copy.copy(node)
        new.body = [raise_stmt]
        return new
    if isinstance(node, ast.ClassDef):
        body = [s for s in (_stub_node(b, message) for b in node.body) if s is not None]
        new = copy.copy(node)
        new.body = body or [ast.Expr(ast.Constant(...))]
        return new
    return None


def stub_source(solution: str, label: str = "") -> str:
    """The student's stub for a solution cell: every top-level function keeps its signature
    (decorators, parameters, defaults, annotations) and raises ``NotImplementedError``; classes
    keep their bases and method signatures; every other statement (imports, constants, demo calls,
    docstrings, comments) is dropped, so no solution code or text reaches the student.

    Args:
        solution: Python source of the solution cell.
        label: the exercise label, quoted in the ``NotImplementedError`` message.

    Returns:
        Python source of the stub ("" when the solution defines no function or class).

    Raises:
        ClassroomFormatError: the solution does not parse.
    """
    tree = _parse(solution, f"solution of {label or 'an exercise'}")
    parts = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            msg = (
                f"exercise {label}: write {node.name}"
                if label
                else f"write {node.name}"
            )
            stub = _stub_node(node, msg)
            parts.append(ast.unparse(ast.fix_missing_locations(stub)))
    return "\n\n\n".join(parts)


def signatures(source: str) -> dict[str, str]:
    """Signatures of the top-level functions (and classes' methods) defined by ``source``.

    Args:
        source: Python source.

    Returns:
        ``{name: signature}`` where a function's signature is ``"(params)"`` as ``ast.unparse``
        writes it without annotations (names, kinds, defaults), and a class's is
        ``"class(bases) {method: signature, ...}"``. Two sources with equal results define the
        same names with the same parameters.
    """
    tree = ast.parse(_without_magics(source))
    out: dict[str, str] = {}

    def sig(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        args = copy.deepcopy(fn.args)
        for a in _all_args(args):
            a.annotation = None
        return f"({ast.unparse(args)})"

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = sig(node)
        elif isinstance(node, ast.ClassDef):
            methods = {
                b.name: sig(b)
                for b in node.body
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            out[node.name] = f"class({bases}) {methods}"
    return out


# --------------------------------------------------------------------------------------
# Parsing a chapter
# --------------------------------------------------------------------------------------


def _exercise_from_markdown(src: str, where: str) -> Exercise:
    m = _EXERCISE_RE.search(src)
    assert m is not None
    title = m.group("title").strip()
    body_lines = []
    lab = None
    fence = re.match(r"`{3,}|:{3,}", src[m.start() :]).group(0)  # type: ignore[union-attr]
    rest = src[m.end() :].split("\n")[1:]
    in_options = True
    for line in rest:
        if (
            line.strip() == fence
            or line.strip().startswith(fence)
            and not line.strip().lstrip(fence[0])
        ):
            break
        if in_options and line.startswith(":"):
            lm = _LABEL_RE.match(line)
            if lm:
                lab = lm.group("label")
            continue
        in_options = False
        body_lines.append(line)
    if not lab:
        raise ClassroomFormatError(
            f"{where}: the exercise {title!r} has no :label: option"
        )
    return Exercise(label=lab, title=title, prompt="\n".join(body_lines).strip())


def _check_label(
    src: str, exercises: dict[str, Exercise], current: Exercise | None, where: str
) -> Exercise:
    first = src.lstrip().split("\n", 1)[0]
    m = _CHECK_LABEL_RE.search(first)
    if m and m.group("label") in exercises:
        return exercises[m.group("label")]
    if m and m.group("label").rstrip(".:") in exercises:
        return exercises[m.group("label").rstrip(".:")]
    if current is None:
        raise ClassroomFormatError(
            f"{where}: a check cell names no known exercise on its first line "
            f"('# Check: exercise LABEL ...'): {first!r}"
        )
    return current


_DIRECTIVE_RE = re.compile(rf"^{_FENCE}\{{(?P<name>[^}}\s]+)\}}", re.M)
_GATE_NAMES = (
    "exercise",
    "exercise-start",
    "exercise-end",
    "solution",
    "solution-start",
    "solution-end",
)
_KNOWN_TAGS = (SOLUTION_TAG, CHECK_TAG, HIDDEN_TAG, SETUP_TAG)


def check_gates(nb: nbformat.NotebookNode, name: str = "notebook") -> None:
    """Refuse a notebook whose solution gates or exercise tags would make cells vanish silently.

    Raises:
        ClassroomFormatError: naming the cell: a ``{solution-start}`` with no ``{solution-end}``
            before the next exercise or the end of the notebook, a ``{solution-end}`` with no open
            solution, a directive whose name is a misspelling of an exercise/solution directive
            (``{solution-strat}``, ``{soluton-end}``), or a tag that misspells one of
            ``solution``, ``exercise-check``, ``exercise-hidden``, ``exercise-setup``.
    """
    import difflib

    open_at: int | None = None
    for i, cell in enumerate(nb.cells):
        where = f"{name} cell {i}"
        for tag in _tags(cell):
            low = tag.lower()
            if tag not in _KNOWN_TAGS and (
                low.startswith(("exercise", "solution"))
                or difflib.get_close_matches(low, _KNOWN_TAGS, n=1, cutoff=0.8)
            ):
                near = difflib.get_close_matches(low, _KNOWN_TAGS, n=1, cutoff=0.5)
                raise ClassroomFormatError(
                    f"{where}: unknown exercise tag {tag!r}"
                    + (f" (did you mean {near[0]!r}?)" if near else "")
                )
        if cell.get("cell_type") != "markdown":
            continue
        src = _source(cell)
        for m in _DIRECTIVE_RE.finditer(src):
            d = m.group("name")
            if d in _GATE_NAMES:
                continue
            near = difflib.get_close_matches(d.lower(), _GATE_NAMES, n=1, cutoff=0.75)
            if near or d.lower().startswith(("solution", "exercise")):
                raise ClassroomFormatError(
                    f"{where}: unknown directive {{{d}}}"
                    + (f" (did you mean {{{near[0]}}}?)" if near else "")
                )
        starts = bool(_SOLUTION_START_RE.search(src))
        ends = bool(_SOLUTION_END_RE.search(src))
        if (_EXERCISE_RE.search(src) or starts) and open_at is not None:
            raise ClassroomFormatError(
                f"{name} cell {open_at}: this {{solution-start}} is not closed by a "
                f"{{solution-end}} before cell {i}"
            )
        if starts:
            open_at = i
        if ends:
            if open_at is None:
                raise ClassroomFormatError(
                    f"{where}: {{solution-end}} with no open {{solution-start}}"
                )
            open_at = None
    if open_at is not None:
        raise ClassroomFormatError(
            f"{name} cell {open_at}: this {{solution-start}} is never closed by a "
            "{solution-end}"
        )


def chapter_notebooks(root: str | Path | None = None) -> list[Path]:
    """The chapter notebooks ``notebooks/NN_*.ipynb`` under ``root`` (default: the current
    directory when it has ``notebooks/``, else the repository this module lives in)."""
    if root is None:
        root = (
            Path.cwd()
            if (Path.cwd() / "notebooks").is_dir()
            else Path(__file__).resolve().parents[1]
        )
    return sorted((Path(root) / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def parse_chapter(path: str | Path) -> Chapter:
    """Read a chapter notebook's exercises and the chapter code they need.

    The setup is: every top-level import of the chapter's code cells, the ``parameters`` cell,
    every cell tagged ``exercise-setup``, and then (automatically) each chapter code cell that
    defines a name the exercises read but neither they nor the setup define, found backwards from
    the first exercise, transitively. ``setup_notes`` lists the cells pulled in that way: tag a
    cheaper cell ``exercise-setup`` (or define the data inside the check) when one is too slow.

    Args:
        path: a chapter notebook (``NN_slug.ipynb``).

    Returns:
        The :class:`Chapter`.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ClassroomFormatError: an exercise lacks a label, a solution or a check, a label repeats,
            or a check cell names no exercise.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no notebook at {path}")
    nb = nbformat.read(path, as_version=4)
    check_gates(nb, path.name)
    name = path.stem
    title = name
    parameters = ""
    exercises: dict[str, Exercise] = {}
    current: Exercise | None = None
    in_solution: Exercise | None = None
    # (cell index, source) of ordinary code cells
    chapter_cells: list[tuple[int, str]] = []
    first_exercise_cell: int | None = None
    tagged_setup: list[tuple[int, str]] = []

    for i, cell in enumerate(nb.cells):
        src = _source(cell)
        tags = _tags(cell)
        where = f"{path.name} cell {i}"
        if cell.cell_type == "markdown":
            if title == name:
                hm = re.search(r"^#\s+(.+)$", src, re.M)
                if hm:
                    title = re.sub(r"^\d+\s*·\s*", "", hm.group(1).strip())
            if _EXERCISE_RE.search(src):
                ex = _exercise_from_markdown(src, where)
                if ex.label in exercises:
                    raise ClassroomFormatError(
                        f"{where}: exercise label {ex.label!r} is used twice"
                    )
                exercises[ex.label] = ex
                current = ex
                in_solution = None
                if first_exercise_cell is None:
                    first_exercise_cell = i
                continue
            sm = _SOLUTION_START_RE.search(src)
            if sm:
                label = sm.group("label")
                if label not in exercises:
                    raise ClassroomFormatError(
                        f"{where}: solution-start names unknown exercise {label!r}"
                    )
                in_solution = exercises[label]
                after = re.split(
                    r"^(?:`{3,}|:{3,})\s*$", src[sm.end() :], maxsplit=1, flags=re.M
                )
                if len(after) == 2 and after[1].strip():
                    in_solution.solution_text.append(after[1].strip())
                continue
            if _SOLUTION_END_RE.search(src):
                in_solution = None
                continue
            if in_solution is not None and src.strip():
                in_solution.solution_text.append(src)
            continue
        if cell.cell_type != "code":
            continue
        if PARAMETERS_TAG in tags:
            parameters = src
            continue
        if SOLUTION_TAG in tags:
            target = in_solution or current
            if target is None:
                raise ClassroomFormatError(
                    f"{where}: a cell tagged 'solution' precedes every exercise"
                )
            target.solution = (
                (target.solution + "\n\n\n" + src).strip() if target.solution else src
            )
            continue
        if CHECK_TAG in tags:
            _check_label(src, exercises, current, where).checks.append(src)
            continue
        if HIDDEN_TAG in tags:
            _check_label(src, exercises, current, where).hidden.append(src)
            continue
        if SETUP_TAG in tags:
            tagged_setup.append((i, src))
            continue
        if (
            current is not None
            and in_solution is None
            and not current.solution
            and not current.checks
        ):
            current.starter.append(src)
            continue
        chapter_cells.append((i, src))

    for ex in exercises.values():
        if not ex.solution:
            raise ClassroomFormatError(
                f"{path.name}: exercise {ex.label!r} has no code cell tagged 'solution'"
            )
        if not ex.checks:
            raise ClassroomFormatError(
                f"{path.name}: exercise {ex.label!r} has no cell tagged 'exercise-check'"
            )
        if not signatures(ex.solution):
            raise ClassroomFormatError(
                f"{path.name}: the solution of {ex.label!r} defines no named function (tests call named functions)"
            )

    setup, notes = _build_setup(
        path.name,
        parameters,
        tagged_setup,
        chapter_cells,
        list(exercises.values()),
        first_exercise_cell,
    )
    return Chapter(
        path=path,
        name=name,
        title=title,
        parameters=parameters,
        setup=setup,
        setup_notes=notes,
        exercises=list(exercises.values()),
    )


def _build_setup(
    where: str,
    parameters: str,
    tagged: list[tuple[int, str]],
    chapter_cells: list[tuple[int, str]],
    exercises: list[Exercise],
    first_exercise_cell: int | None,
) -> tuple[list[str], list[str]]:
    imports: list[str] = []
    for _, src in chapter_cells + tagged:
        for imp in _top_level_imports(_parse(src, where)):
            if imp not in imports:
                imports.append(imp)
    defined: set[str] = set()
    for imp in imports:
        defined |= _module_bindings(ast.parse(imp))
    if parameters:
        defined |= _module_bindings(_parse(parameters, where))
    for _, src in tagged:
        defined |= _module_bindings(_parse(src, where))

    needed: set[str] = set()
    for ex in exercises:
        code = [ex.solution, *ex.starter, *ex.checks, *ex.hidden]
        trees = [_parse(c, f"{where} exercise {ex.label}") for c in code]
        own: set[str] = set()
        for t in trees:
            own |= _module_bindings(t)
        for t in trees:
            needed |= _free_names(t) - own
    for _, src in tagged:  # what the exercise-setup cells read themselves
        needed |= _free_names(_parse(src, where))
    # names defined by earlier exercises' solutions are fine too
    for ex in exercises:
        needed -= set(signatures(ex.solution))

    limit = first_exercise_cell if first_exercise_cell is not None else 10**9
    candidates = [(i, s) for i, s in chapter_cells if i < limit]
    chosen: dict[int, str] = {}
    notes: list[str] = []
    todo = sorted(needed - defined)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name in defined:
            continue
        seen.add(name)
        for i, src in reversed(candidates):
            if i in chosen:
                if name in _module_bindings(_parse(src, where)):
                    break
                continue
            tree = _parse(src, where)
            if name in _module_bindings(tree):
                chosen[i] = src
                notes.append(f"cell {i} of the chapter (defines {name!r})")
                todo.extend(sorted(_free_names(tree) - defined - seen))
                break
        # a name nobody defines stays unresolved: the check fails
        # loudly when run (NameError)
    blocks: list[tuple[int, str]] = [
        (i, _drop_imports(s, imports)) for i, s in tagged
    ] + [(i, _drop_imports(s, imports)) for i, s in chosen.items()]
    blocks.sort()
    setup = []
    if imports:
        setup.append("\n".join(imports))
    setup.extend(f"# from the chapter, cell {i}\n{s.strip()}" for i, s in blocks)
    return setup, notes


# --------------------------------------------------------------------------------------
# The otter-assign master notebook
# --------------------------------------------------------------------------------------


def _identifier(label: str) -> str:
    ident = re.sub(r"\W", "_", label)
    return ident if not ident[0].isdigit() else f"q_{ident}"


def _test_cell(
    src: str, label: str, kind: str, k: int, functions: Sequence[str] = ()
) -> str:
    """An exception-based otter test: the check cell as a function whose parameters are the names
    it reads, looked up in the student's final global environment (missing names become None).
    A public test is rewritten by :func:`icml25.learner.feedback_test_source` to explain failures
    of the exercise's ``functions``."""
    tree = _parse(src, f"exercise {label} {kind} test")
    free = sorted(_free_names(tree))
    fname = f"test_{_identifier(label)}_{kind}_{k}"
    body = _without_magics(src).strip("\n")
    # feedback a learner can act on (hidden tests: pass or fail)
    if kind == "public" and functions:
        from icml25.learner import feedback_test_source

        body = feedback_test_source(body, label, functions)
    hidden = "true" if kind == "hidden" else "false"
    params = ", ".join(free)
    return (
        '""" # BEGIN TEST CONFIG\n'
        f"hidden: {hidden}\n"
        '""" # END TEST CONFIG\n'
        f"def {fname}({params}):\n"
        + "\n".join(
            ("    " + line) if line.strip() else "" for line in body.split("\n")
        )
        + "\n\n"
        + f"{fname}({params})"
    )


_ROLE_RE = re.compile(r"\{(?P<role>[A-Za-z:_-]+)\}`(?P<text>[^`]+)`")


def _plain_markdown(
    text: str, labels: dict[str, str] | None = None, bib: dict[str, str] | None = None
) -> str:
    """MyST roles as plain Jupyter markdown (the student edition does not hold the chapter's
    targets): {math}`x` -> $x$; {prf:ref}`thm02-p0` -> 'the theorem "P0 ..."' (written out from the
    chapter's labels); {cite}`key` -> 'Author et al. (year)' (from book/references.bib)."""
    from icml25.learner import write_out_roles

    return write_out_roles(text, labels or {}, bib or {})


def _prompt_markdown(
    k: int,
    ex: Exercise,
    labels: dict[str, str] | None = None,
    bib: dict[str, str] | None = None,
) -> str:
    funcs = ", ".join(f"`{n}`" for n in ex.functions)
    return (
        f"### Exercise {k}: {ex.title} (`{ex.label}`)\n\n{_plain_markdown(ex.prompt, labels, bib)}\n\n"
        f"*Write {funcs} in the cell below; the tests call {'it' if len(ex.functions) == 1 else 'them'} by name.*"
    )


def build_master(chapter: Chapter, *, points: float = 1.0) -> nbformat.NotebookNode:
    """The otter-assign master notebook of a chapter's exercises.

    Layout: the assignment config (exception-based tests stored in the notebook, no PDF), a title,
    the setup cell, then per exercise a question block: prompt; solution (``# BEGIN SOLUTION NO
    PROMPT`` around the authored code, followed by a ``# BEGIN PROMPT`` block holding the stubs of
    :func:`stub_source`); public tests from ``exercise-check`` cells; hidden tests from
    ``exercise-hidden`` cells; then any starter cells.

    Args:
        chapter: the parsed chapter.
        points: points per question (split evenly over its tests by otter).

    Returns:
        The master notebook (nbformat v4).

    Raises:
        ValueError: ``points`` is not positive.
    """
    if not points > 0:
        raise ValueError(f"points must be positive, got {points!r}")
    nbv4 = nbformat.v4
    config = {
        "name": chapter.name,
        "export_cell": False,
        "init_cell": True,
        "check_all_cell": True,
        "run_tests": False,
        "tests": {"files": False, "ok_format": False},
        "generate": {
            "pdf": False,
            "filtering": False,
            "pagebreaks": False,
            "show_stdout": True,
        },
    }
    cells = [
        nbv4.new_raw_cell("# ASSIGNMENT CONFIG\n" + json.dumps(config, indent=2)),
        nbv4.new_markdown_cell(
            f"# {chapter.name[:2]} · {chapter.title}: exercises\n\n"
            f"The exercises of the chapter `notebooks/{chapter.path.name}`. Run the setup cell, then "
            'write each function where the cell says so; `grader.check("LABEL")` runs the public '
            "tests of an exercise. The grader runs the whole notebook and then calls your functions "
            "by name, so you may add, move or delete cells freely. Hidden tests are run at grading time."
        ),
    ]
    setup = "\n\n".join(s for s in [chapter.parameters.strip(), *chapter.setup] if s)
    if setup:
        cells.append(nbv4.new_code_cell(setup))
    from icml25.learner import _bib_index, label_index

    labels = (
        label_index(nbformat.read(chapter.path, as_version=4))
        if chapter.path.is_file()
        else {}
    )
    bib = _bib_index(_project_root() / "book" / "references.bib")
    for k, ex in enumerate(chapter.exercises, start=1):
        cells.append(
            nbv4.new_raw_cell(f"# BEGIN QUESTION\nname: {ex.label}\npoints: {points}")
        )
        cells.append(nbv4.new_markdown_cell(_prompt_markdown(k, ex, labels, bib)))
        cells.append(nbv4.new_raw_cell("# BEGIN SOLUTION"))
        stub = ex.student_stub()
        quote = '"""' if '"""' not in stub else "'''"
        if quote in stub:
            stub = stub_source(ex.solution, ex.label)
        sol = (
            "# BEGIN SOLUTION NO PROMPT\n"
            + ex.solution.strip("\n")
            + "\n# END SOLUTION"
        )
        sol += f"\nr{quote} # BEGIN PROMPT\n" + stub + f"\n{quote} # END PROMPT"
        cells.append(nbv4.new_code_cell(sol))
        for text in ex.solution_text:
            cells.append(nbv4.new_markdown_cell(_plain_markdown(text, labels, bib)))
        cells.append(nbv4.new_raw_cell("# END SOLUTION"))
        cells.append(nbv4.new_raw_cell("# BEGIN TESTS"))
        for j, src in enumerate(ex.checks, start=1):
            cells.append(
                nbv4.new_code_cell(_test_cell(src, ex.label, "public", j, ex.functions))
            )
        for j, src in enumerate(ex.hidden, start=1):
            cells.append(nbv4.new_code_cell(_test_cell(src, ex.label, "hidden", j)))
        cells.append(nbv4.new_raw_cell("# END TESTS"))
        cells.append(nbv4.new_raw_cell("# END QUESTION"))
        for src in ex.other_starter:
            cells.append(nbv4.new_code_cell(src))
    nb = nbv4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    return nb


# --------------------------------------------------------------------------------------
# Editions
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Editions:
    """Where :func:`assign` wrote a chapter's editions."""

    name: str
    student: Path  # the student notebook
    instructor: Path  # the instructor notebook (solutions)
    autograder: Path  # autograder.zip
    master: Path  # the otter master notebook
    notes: list[str]


_PROMPT_BLOCK_RE = re.compile(
    r"^r?(\"\"\"|''') # BEGIN PROMPT\n.*?^\1 # END PROMPT\n?", re.M | re.S
)


def _clean_instructor_notebook(path: Path) -> None:
    """Drop otter's solution markers and the student-stub block from the instructor notebook
    (they only steer ``otter assign``; the autograder does not read this notebook)."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "otter_assign_solution_cell" in _tags(cell):
            src = _PROMPT_BLOCK_RE.sub("", _source(cell))
            src = "\n".join(
                line
                for line in src.split("\n")
                if line.strip()
                not in (
                    "# BEGIN SOLUTION NO PROMPT",
                    "# BEGIN SOLUTION",
                    "# END SOLUTION",
                )
            )
            cell.source = src.strip("\n")
    nbformat.write(nb, path)


def assign(
    notebook: str | Path,
    out: str | Path = "_build/assignments",
    *,
    run_tests: bool = False,
    points: float = 1.0,
) -> Editions:
    """Build the student and instructor editions of one chapter with ``otter assign``.

    Writes ``OUT/student/NN_slug/NN_slug.ipynb`` and ``OUT/instructor/NN_slug/`` holding
    ``NN_slug.ipynb`` (solutions), ``autograder.zip`` and ``master.ipynb``.

    Args:
        notebook: the chapter notebook.
        out: the output root (replaces ``OUT/*/NN_slug`` for this chapter).
        run_tests: let ``otter assign`` also execute the instructor notebook against all tests.
        points: points per question.

    Returns:
        The :class:`Editions` paths.

    Raises:
        FileNotFoundError: ``notebook`` does not exist.
        ClassroomFormatError: the chapter has no exercises or they break the authoring format.
        RuntimeError: ``otter assign`` failed (its output is in the message).
    """
    chapter = parse_chapter(notebook)
    if not chapter.exercises:
        raise ClassroomFormatError(f"{Path(notebook).name}: no exercises found")
    master = build_master(chapter, points=points)
    if run_tests:
        cfg_src = master.cells[0].source
        master.cells[0].source = cfg_src.replace(
            '"run_tests": false', '"run_tests": true'
        )
    out = Path(out)
    student_dir = out / "student" / chapter.name
    instructor_dir = out / "instructor" / chapter.name
    with tempfile.TemporaryDirectory(prefix="icml25-assign-") as tmp:
        tmpd = Path(tmp)
        master_path = tmpd / f"{chapter.name}.ipynb"
        nbformat.write(master, master_path)
        from otter.assign import main as otter_assign

        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                otter_assign(
                    str(master_path),
                    str(tmpd / "dist"),
                    no_pdfs=True,
                    no_run_tests=not run_tests,
                )
        except Exception as exc:
            raise RuntimeError(
                f"otter assign failed for {chapter.name}: {exc}\n{log.getvalue()}"
            ) from exc
        dist = tmpd / "dist"
        for d in (student_dir, instructor_dir):
            if d.exists():
                shutil.rmtree(d)
        shutil.copytree(dist / "student", student_dir)
        shutil.copytree(dist / "autograder", instructor_dir)
        zips = sorted(instructor_dir.glob("*.zip"))
        if not zips:
            raise RuntimeError(
                f"otter assign wrote no autograder zip for {chapter.name}:\n{log.getvalue()}"
            )
        if zips[0].name != "autograder.zip":
            zips[0].rename(instructor_dir / "autograder.zip")
        import zipfile

        # what the sandboxed grader reads
        with zipfile.ZipFile(instructor_dir / "autograder.zip", "a") as zf:
            zf.writestr(
                GRADING_SPEC, json.dumps(grading_spec(chapter, points=points), indent=1)
            )
        shutil.copy(master_path, instructor_dir / "master.ipynb")
        _clean_instructor_notebook(instructor_dir / f"{chapter.name}.ipynb")
    return Editions(
        name=chapter.name,
        student=student_dir / f"{chapter.name}.ipynb",
        instructor=instructor_dir / f"{chapter.name}.ipynb",
        autograder=instructor_dir / "autograder.zip",
        master=instructor_dir / "master.ipynb",
        notes=chapter.setup_notes,
    )


# --------------------------------------------------------------------------------------
# Grading
# --------------------------------------------------------------------------------------
#
# A submission is never run as a whole. The grader reads the notebook's source (it does
# not run it), keeps the top-level definitions the exercises name and the ones those
# need, and grades them in a bubblewrap sandbox holding two kinds of process:
#
#   the test process   runs the chapter's setup and the tests (public and hidden, piped
#                      in on stdin and read unbuffered, frame by frame, so that nothing
#                      of them is in memory when the workers fork; the autograder is not
#                      mounted); no submission code ever runs in it; after each exercise
#                      it kills every other process but the workers still to come (a
#                      daemon left by one worker, with that worker's masks only, must
#                      not answer for a later exercise);
#   one worker per     forked from the test process before it reads the tests; it masks
#   exercise           the library functions the exercise asks the student to write,
#                      loads the submission's definitions and answers calls: the tests
#                      call the student's functions through a proxy that sends the
#                      arguments and gets back plain data (numbers, strings, containers,
#                      NumPy arrays, torch tensors, icml25 objects), decoded without
#                      running any of the worker's code.
#
# The score is computed in the test process from what the tests see; a worker can only
# answer calls (or fail to), so it cannot change a test, the test runner, the reference
# library the tests use, or another exercise's worker.

GRADING_SPEC = "icml25_grading.json"
_SUBMISSION_FILE = "<submission>"
_SUBMISSION_MODULE = "__submission__"
_MASKS_RE = re.compile(r"^#\s*Grading masks?:\s*(?P<names>.+?)\s*$", re.M | re.I)


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one submission may use while it is graded.

    Attributes:
        wall: seconds of wall time for the whole submission (setup, every exercise, the tests).
        exercise: seconds of wall time the student's code of one exercise may take, summed over
            all the calls its tests make (also its CPU-time limit).
        memory: bytes of address space per process.
        processes: processes and threads in the whole sandbox (a pids cgroup when the grader runs
            as root and one can be made, else ``RLIMIT_NPROC`` of the unprivileged user).
        file_size: the largest file a process may write, in bytes (the writable places are the
            sandbox's own ``/tmp`` and ``/dev/shm``, RAM disks thrown away afterwards); also the
            most the sandbox's stdout and stderr can hold.
        tmp_size: bytes of the sandbox's ``/tmp`` and of its ``/dev/shm`` each (RAM, outside the
            per-process memory limit).
    """

    wall: float = 900.0
    exercise: float = 120.0
    memory: int = 8 << 30
    processes: int = 128
    file_size: int = 256 << 20
    tmp_size: int = 1 << 30

    def __post_init__(self) -> None:
        for name in (
            "wall",
            "exercise",
            "memory",
            "processes",
            "file_size",
            "tmp_size",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"Limits.{name} must be positive, got {getattr(self, name)!r}"
                )


def _masks(sources: Iterable[str]) -> list[str]:
    out: list[str] = []
    for src in sources:
        for m in _MASKS_RE.finditer(src):
            for name in re.split(r"[,\s]+", m.group("names")):
                if name and name not in out:
                    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", name):
                        raise ClassroomFormatError(
                            f"'# Grading masks:' names dotted paths (module.function), got {name!r}"
                        )
                    out.append(name)
    return out


def grading_spec(chapter: Chapter, *, points: float = 1.0) -> dict[str, Any]:
    """What the sandboxed grader needs, as stored in ``autograder.zip`` (``icml25_grading.json``).

    Args:
        chapter: the parsed chapter.
        points: points per exercise (split evenly over its tests).

    Returns:
        ``{"format": 1, "chapter", "setup", "exercises": [{"label", "functions", "points",
        "masks", "tests": [{"name", "hidden", "source"}]}]}``. ``masks`` are the dotted names that
        the exercise's check cells list on a ``# Grading masks: module.function, ...`` line.
    """
    setup = "\n\n".join(s for s in [chapter.parameters.strip(), *chapter.setup] if s)
    exercises = []
    for ex in chapter.exercises:
        tests = [
            {
                "name": f"test_{_identifier(ex.label)}_public_{j}",
                "hidden": False,
                "source": _without_magics(s),
            }
            for j, s in enumerate(ex.checks, start=1)
        ]
        tests += [
            {
                "name": f"test_{_identifier(ex.label)}_hidden_{j}",
                "hidden": True,
                "source": _without_magics(s),
            }
            for j, s in enumerate(ex.hidden, start=1)
        ]
        exercises.append(
            {
                "label": ex.label,
                "functions": ex.functions,
                "points": float(points),
                "masks": _masks([*ex.checks, *ex.hidden]),
                "tests": tests,
            }
        )
    return {
        "format": 1,
        "chapter": chapter.name,
        "setup": _without_magics(setup),
        "exercises": exercises,
    }


def _read_spec(autograder: Path) -> dict[str, Any]:
    import zipfile

    with zipfile.ZipFile(autograder) as zf:
        if GRADING_SPEC not in zf.namelist():
            raise ValueError(
                f"autograder: {autograder} holds no {GRADING_SPEC} (built before the sandboxed "
                "grader; run `make assignments` again)"
            )
        spec = json.loads(zf.read(GRADING_SPEC).decode())
    if spec.get("format") != 1:
        raise ValueError(
            f"autograder: {GRADING_SPEC} has unknown format {spec.get('format')!r}"
        )
    return spec


# --- what the grader takes from a submission (by reading it, never by running it) -----


def _bound_names(st: ast.stmt) -> set[str]:
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {st.name}
    if isinstance(st, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in st.names if a.name != "*"}
    if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def submission_definitions(
    nb: nbformat.NotebookNode, spec: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """The statements of a submission that grading loads, in notebook order.

    For every name an exercise asks for, the last top-level statement (in cell order) that binds
    it; then, transitively, the last top-level ``def``, ``class``, ``import`` or assignment binding
    each global those statements read that the chapter's setup does not define. Nothing else of
    the notebook runs: other top-level code (prints, plots, experiments, attempts to change the
    grader) is ignored. Cells that do not parse are skipped.

    Args:
        nb: the submission notebook.
        spec: the chapter's grading spec (:func:`grading_spec`).

    Returns:
        ``(sources, notes)``: the statements' source in notebook order and one note per skipped
        cell or missing name.
    """
    notes: list[str] = []
    last: dict[str, tuple[int, int, ast.stmt]] = {}
    for i, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        src = _without_magics(_source(cell))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            if any(
                re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(f)}\b", src, re.M)
                for ex in spec["exercises"]
                for f in ex["functions"]
            ):
                notes.append(f"cell {i} does not parse (skipped)")
            continue
        for k, st in enumerate(tree.body):
            for name in _bound_names(st):
                last[name] = (i, k, st)
    setup_names = (
        _module_bindings(ast.parse(spec["setup"])) if spec["setup"].strip() else set()
    )
    wanted = [f for ex in spec["exercises"] for f in ex["functions"]]
    chosen: dict[tuple[int, int], ast.stmt] = {}
    todo, seen = list(wanted), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in last:
            if name in wanted:
                notes.append(f"{name} is not defined")
            continue
        i, k, st = last[name]
        if (i, k) in chosen:
            continue
        chosen[(i, k)] = st
        free = _free_names(ast.Module(body=[st], type_ignores=[]))
        todo.extend(sorted(free - setup_names - seen))
    return [ast.unparse(chosen[key]) for key in sorted(chosen)], notes


_SCREEN_MODULES = {
    "builtins",
    "code",
    "codeop",
    "ctypes",
    "dill",
    "cloudpickle",
    "gc",
    "importlib",
    "imp",
    "inspect",
    "marshal",
    "pickle",
    "pkgutil",
    "runpy",
    "site",
    "sys",
    "types",
    "zipimport",
}
_SCREEN_NAMES = {
    "__import__",
    "breakpoint",
    "compile",
    "delattr",
    "eval",
    "exec",
    "getattr",
    "globals",
    "locals",
    "reload",
    "setattr",
    "vars",
}
_SCREEN_ATTRS = {
    "ctypeslib",
    "f_back",
    "f_builtins",
    "f_code",
    "f_globals",
    "f_locals",
    "gi_frame",
    "cr_frame",
    "ag_frame",
    "tb_frame",
    "_getframe",
    "modules",
}


_SCREEN_STRING_RE = re.compile(
    r"__\w+|\w+__\b|\b(?:"
    + "|".join(sorted(_SCREEN_ATTRS | _SCREEN_NAMES - {"compile"}))
    + r"|kwdefaults|closure|cell_contents|wrapped|globals|builtins)\b"
)


def screen(sources: Sequence[str]) -> list[str]:
    """What in a submission's loaded code could look past the masks (introspection, code built from
    strings, module reloading): one finding per construct, for the instructor to read.

    A finding does not change a score: the worker that runs the code has nothing to tamper with
    but itself, and honest code uses some of these names too. It flags code for a look by hand.
    """
    found: list[str] = []
    for src in sources:
        for node in ast.walk(ast.parse(src)):
            what = None
            if isinstance(node, ast.Name) and node.id in _SCREEN_NAMES:
                what = f"{node.id}()"
            elif isinstance(node, ast.Attribute) and (
                node.attr in _SCREEN_ATTRS
                or (node.attr.startswith("__") and node.attr.endswith("__"))
            ):
                what = f".{node.attr}"
            elif (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id not in ("self", "cls")
            ):
                what = f"a private name ({node.value.id}.{node.attr})"
            elif isinstance(node, ast.ImportFrom) and any(
                a.name.startswith("_") for a in node.names
            ):
                what = f"a private name (from {node.module} import {next(a.name for a in node.names if a.name.startswith('_'))})"
            elif isinstance(node, ast.Name) and node.id in (
                "attrgetter",
                "methodcaller",
            ):
                what = f"{node.id}()"
            elif isinstance(node, ast.Attribute) and node.attr in (
                "attrgetter",
                "methodcaller",
            ):
                what = f".{node.attr}()"
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _SCREEN_STRING_RE.search(node.value)
            ):
                what = f"the string {_SCREEN_STRING_RE.search(node.value).group(0)!r}"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                what = next(
                    (f"import {m}" for m in mods if m.split(".")[0] in _SCREEN_MODULES),
                    None,
                )
            if what and what not in found:
                found.append(what)
    return found


# --- the sandbox ----------------------------------------------------------------------


def sandbox_available() -> str | None:
    """None when submissions can be sandboxed here, else why not (bwrap missing or not working)."""
    import subprocess

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed: `make system-deps` (Debian package bubblewrap)"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is not installed"
    try:
        r = subprocess.run(
            [
                bwrap,
                "--unshare-all",
                "--unshare-user",
                "--uid",
                "65534",
                "--gid",
                "65534",
                *_system_binds(),
                "--",
                "/bin/true",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if r.returncode != 0:
        return f"bwrap cannot make a sandbox here (user namespaces disabled?): {r.stderr.strip()}"
    return None


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    for d in ("/etc",):
        if Path(d).is_dir():
            args += ["--ro-bind", d, d]
    return args


def _project_root() -> Path:
    return Path(__file__).resolve().parents[1]


_HIDDEN_PROJECT_DIRS = ("_build", "notebooks", "tests", "book", ".git", "benchmarks")


def _pids_cgroup(limit: int) -> Path | None:
    """A fresh pids cgroup (v2 or v1) with ``pids.max = limit``, when this process may make one."""
    import uuid

    name = f"icml25-grade-{uuid.uuid4().hex[:12]}"
    for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids")):
        if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
            continue
        if (
            base == Path("/sys/fs/cgroup")
            and not (base / "cgroup.controllers").exists()
        ):
            continue  # v1 root tmpfs
        try:
            cg = base / name
            cg.mkdir()
            if not (cg / "pids.max").exists():
                cg.rmdir()
                continue
            (cg / "pids.max").write_text(str(limit))
            return cg
        except OSError:
            continue
    return None


def _sandbox_argv(
    limits: Limits, hide: Sequence[Path], code: str | None = None
) -> list[str]:
    """bwrap + prlimit command line running ``python -I -c CODE`` in the sandbox (default: the test
    process). Used as is by the grader; the tests run probes through it."""
    exe = Path(sys.executable)
    binds: list[Path] = []
    for p in (
        Path(sys.base_prefix).resolve(),
        Path(sys.prefix).resolve(),
        exe.resolve().parent.parent,
        _project_root(),
    ):
        if not any(p == b or b in p.parents for b in binds):
            binds.append(p)
    argv = [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "grading",
        *_system_binds(),
    ]
    # The private /tmp and /dev/shm first, then the read-only project and venv on top of
    # them: a checkout that lives under /tmp (a CI clone) stays
    # visible inside the sandbox.
    size = str(limits.tmp_size)
    argv += [
        "--dev",
        "/dev",
        "--size",
        size,
        "--tmpfs",
        "/dev/shm",
        "--size",
        size,
        "--tmpfs",
        "/tmp",
    ]
    for b in binds:
        argv += ["--ro-bind", str(b), str(b)]
    masked = [_project_root() / d for d in _HIDDEN_PROJECT_DIRS] + [
        Path(h).resolve() for h in hide
    ]
    for m in masked:
        if m.is_dir() and any(m == b or b in m.parents for b in binds):
            argv += ["--tmpfs", str(m)]
        elif m.is_file() and any(b in m.parents for b in binds):
            argv += ["--ro-bind", "/dev/null", str(m)]
    argv += [
        "--chdir",
        "/tmp",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "MPLCONFIGDIR",
        "/tmp",
        "--setenv",
        "MPLBACKEND",
        "Agg",
    ]
    for var in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    ):
        argv += ["--setenv", var, "1"]
    argv += [
        "--setenv",
        "ICML25_FORCE_CPU",
        "1",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
    ]
    argv += [
        "prlimit",
        f"--as={limits.memory}",
        f"--cpu={int(limits.wall) + 5}",
        f"--fsize={limits.file_size}",
        f"--nproc={limits.processes}",
        "--core=0",
        "--nofile=1024",
        "--",
    ]
    argv += [
        str(exe),
        "-I",
        "-c",
        code or "from icml25.classroom import _test_process_main; _test_process_main()",
    ]
    return argv


def sandbox_exec(
    limits: Limits,
    hide: Sequence[str | Path],
    stdin: bytes = b"",
    code: str | None = None,
) -> tuple[int | None, bytes, bytes]:
    """Run ``python -I -c CODE`` (default: the grading test process) in the sandbox.

    The process tree is held to ``limits``: wall time by this function (the sandbox is killed),
    processes by a pids cgroup made for the run (when the grader runs as root and may make one;
    otherwise ``RLIMIT_NPROC``, which only binds an unprivileged user), address space, CPU time
    and file size by ``prlimit``.

    Returns:
        ``(exit status, or None when the wall-time limit stopped it; stdout; stderr)``.
    """
    import signal
    import subprocess
    import time

    cgroup = _pids_cgroup(limits.processes) if os.geteuid() == 0 else None

    # runs in the child before exec: the whole sandbox is in the cgroup
    def enter_cgroup() -> None:
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    # stdout and stderr go to files, not pipes: the sandbox's file-size limit (SIGXFSZ)
    # bounds them, and only their ends are read back (a submission printing without end
    # must not fill the grader's memory)
    with tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        proc = subprocess.Popen(
            _sandbox_argv(limits, [Path(h) for h in hide], code),
            stdin=subprocess.PIPE,
            stdout=fout,
            stderr=ferr,
            start_new_session=True,
            preexec_fn=enter_cgroup,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )

        def tail(f: Any, n: int) -> bytes:
            f.seek(0, os.SEEK_END)
            f.seek(max(f.tell() - n, 0))
            return f.read()

        try:
            try:
                proc.communicate(stdin, timeout=limits.wall)
                rc: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                rc = None
            return rc, tail(fout, 16 << 20), tail(ferr, 64 << 10)
        finally:
            if cgroup is not None:
                for _ in range(100):
                    with contextlib.suppress(OSError, ValueError):
                        for pid in (cgroup / "cgroup.procs").read_text().split():
                            os.kill(int(pid), signal.SIGKILL)
                    try:
                        cgroup.rmdir()
                        break
                    except OSError:
                        time.sleep(0.05)


def _run_sandboxed(
    header: dict, tests: dict, limits: Limits, hide: Sequence[Path]
) -> tuple[dict | None, str]:
    """Run the test process in the sandbox; (its result, or None, and a reason when None)."""
    h, t = json.dumps(header).encode(), json.dumps(tests).encode()
    data = len(h).to_bytes(8, "little") + h + len(t).to_bytes(8, "little") + t
    rc, out, err = sandbox_exec(limits, hide, data)
    if rc is None:
        return (
            None,
            f"stopped: the submission ran past the wall-time limit ({limits.wall:g} s)",
        )
    lines = [
        ln
        for ln in out.decode(errors="replace").splitlines()
        if ln.startswith('{"icml25-result"')
    ]
    if rc != 0 or not lines:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        why = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
        return (
            None,
            f"stopped: the test process ended ({why}): {' | '.join(tail)[-400:]}",
        )
    return json.loads(lines[-1])["icml25-result"], ""


# --- inside the sandbox: frames, encoding, the worker, the test process ---------------


def _send(sock: Any, payload: bytes) -> None:
    sock.sendall(len(payload).to_bytes(8, "little") + payload)


def _recv_exact(sock: Any, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("the worker closed its end")
        buf += chunk
    return bytes(buf)


def _recv(sock: Any, max_bytes: int = 1 << 31) -> bytes:
    n = int.from_bytes(_recv_exact(sock, 8), "little")
    if n > max_bytes:
        raise ValueError(f"a reply of {n} bytes is too large")
    return _recv_exact(sock, n)


_BUILTIN_EXCEPTIONS = {
    n: getattr(builtins, n)
    for n in dir(builtins)
    if isinstance(getattr(builtins, n), type)
    and issubclass(getattr(builtins, n), Exception)
}


def _encode(obj: Any, arrays: list, depth: int = 0) -> Any:
    """Plain data the test process can decode without running the worker's code."""
    import numpy as np

    if depth > 64:
        raise TypeError("the value is nested too deeply")
    if obj is None or isinstance(obj, (bool, str)) or type(obj) in (int, float):
        return obj if not isinstance(obj, str) else {"s": obj}
    if type(obj) is complex:
        return {"c": [obj.real, obj.imag]}
    if type(obj) in (bytes, bytearray):
        arrays.append(np.frombuffer(bytes(obj), dtype=np.uint8))
        return {"b": len(arrays) - 1, "ba": type(obj) is bytearray}
    if type(obj) in (list, tuple, set, frozenset):
        return {type(obj).__name__: [_encode(v, arrays, depth + 1) for v in obj]}
    if type(obj) is dict:
        return {
            "dict": [
                [_encode(k, arrays, depth + 1), _encode(v, arrays, depth + 1)]
                for k, v in obj.items()
            ]
        }
    if type(obj) is np.ndarray or isinstance(obj, np.generic):
        a = np.asarray(obj)
        if a.dtype.hasobject:
            return {
                "objarr": _encode(a.tolist(), arrays, depth + 1),
                "shape": list(a.shape),
            }
        arrays.append(np.ascontiguousarray(a))
        return {"nd" if type(obj) is np.ndarray else "np": len(arrays) - 1}
    mod = type(obj).__module__ or ""
    if mod.startswith("torch") and type(obj).__name__ in ("Tensor", "Parameter"):
        t = obj.detach().cpu()
        dtype = str(t.dtype).replace("torch.", "")
        arrays.append(
            np.ascontiguousarray(
                t.float().numpy() if dtype == "bfloat16" else t.numpy()
            )
        )
        return {"torch": len(arrays) - 1, "dtype": dtype}
    if (
        mod.startswith("icml25.")
        and hasattr(obj, "__dict__")
        and not isinstance(obj, type)
    ):
        state = {k: v for k, v in vars(obj).items()}
        return {
            "obj": f"{mod}:{type(obj).__qualname__}",
            "state": _encode(state, arrays, depth + 1),
        }
    if isinstance(obj, tuple) and hasattr(obj, "_fields") and mod.startswith("icml25."):
        return {
            "ntuple": f"{mod}:{type(obj).__qualname__}",
            "v": [_encode(v, arrays, depth + 1) for v in obj],
        }
    raise TypeError(
        f"a {type(obj).__module__}.{type(obj).__qualname__} cannot be returned to the tests "
        "(return numbers, strings, lists/tuples/dicts/sets, NumPy arrays or torch tensors)"
    )


def _decode(obj: Any, arrays: list) -> Any:
    import numpy as np

    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    ((key, val),) = [
        (k, v)
        for k, v in obj.items()
        if k
        in (
            "s",
            "c",
            "b",
            "list",
            "tuple",
            "set",
            "frozenset",
            "dict",
            "nd",
            "np",
            "torch",
            "obj",
            "ntuple",
            "objarr",
        )
    ]
    if key == "s":
        return str(val)
    if key == "c":
        return complex(float(val[0]), float(val[1]))
    if key == "b":
        b = arrays[val].tobytes()
        return bytearray(b) if obj.get("ba") else b
    if key in ("list", "tuple", "set", "frozenset"):
        items = [_decode(v, arrays) for v in val]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[key](
            items
        )
    if key == "dict":
        return {_decode(k, arrays): _decode(v, arrays) for k, v in val}
    if key == "nd":
        return arrays[val]
    if key == "np":
        return arrays[val][()]
    if key == "objarr":
        items = _decode(val, arrays)
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out.reshape(tuple(int(d) for d in obj["shape"]))
    if key == "torch":
        import torch

        t = torch.from_numpy(np.array(arrays[val]))
        return (
            t.to(getattr(torch, obj["dtype"]))
            if isinstance(getattr(torch, obj["dtype"], None), torch.dtype)
            else t
        )
    if key in ("obj", "ntuple"):
        import importlib

        mod, _, qual = str(val if key == "obj" else obj["ntuple"]).partition(":")
        if not mod.startswith("icml25."):
            raise TypeError(f"cannot rebuild a {mod}.{qual}")
        cls: Any = importlib.import_module(mod)
        for part in qual.split("."):
            cls = getattr(cls, part)
        if not isinstance(cls, type) or cls.__module__ != mod:
            raise TypeError(f"{mod}:{qual} is not a class")
        if key == "ntuple":
            return cls(*[_decode(v, arrays) for v in obj["v"]])
        inst = cls.__new__(cls)
        state = _decode(obj["state"], arrays)
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise TypeError("bad object state")
        inst.__dict__.update(state)
        return inst
    raise TypeError(f"cannot decode {key}")  # pragma: no cover


def _pack(header: dict, arrays: list) -> bytes:
    import numpy as np

    out = io.BytesIO()
    h = json.dumps({**header, "n_arrays": len(arrays)}).encode()
    out.write(len(h).to_bytes(8, "little") + h)
    for a in arrays:
        np.lib.format.write_array(out, a, allow_pickle=False)
    return out.getvalue()


def _unpack(payload: bytes) -> tuple[dict, list]:
    import numpy as np

    buf = io.BytesIO(payload)
    n = int.from_bytes(buf.read(8), "little")
    header = json.loads(buf.read(n).decode())
    arrays = [
        np.lib.format.read_array(buf, allow_pickle=False)
        for _ in range(int(header["n_arrays"]))
    ]
    return header, arrays


class MaskedFunctionError(RuntimeError):
    """A submission called a library function that its exercise asks the student to write."""


def _library_dir(obj: Any) -> str | None:
    modname = getattr(obj, "__module__", None) or ""
    top = sys.modules.get(modname.split(".")[0])
    f = getattr(top, "__file__", None)
    return str(Path(f).resolve().parent) + os.sep if f else None


def _attrs_bound_to(mod: Any, obj: Any) -> list[str]:
    try:
        return [k for k, v in vars(mod).items() if v is obj]
    except TypeError:
        return []


def _make_guard(
    orig: Any, message: str, libdir: str | None, names: frozenset[str]
) -> Any:
    """The function that stands for a masked library function in a worker.

    Walking up from its caller: a frame of the submission raises MaskedFunctionError; a frame of
    the function's own library lets the call through only when that frame's code names the
    function (the library calling it by name, ``p0(...)`` or ``vmf.p0(...)``), not when it calls
    a callable it was handed (``np.apply_along_axis(np.mean, ...)``, ``np.vectorize``); a stack
    with neither (a thread or executor started by the submission) raises too. The original is
    held in a closure, not in the guard's defaults (a submission could read ``__kwdefaults__``).
    """

    def guard(*args: Any, **kwargs: Any) -> Any:
        f = sys._getframe(1)
        while f is not None:
            fn = f.f_code.co_filename
            if fn == _SUBMISSION_FILE:
                raise MaskedFunctionError(message)
            if (
                libdir
                and fn.startswith(libdir)
                and names.intersection(f.f_code.co_names)
            ):
                return orig(*args, **kwargs)
            f = f.f_back
        raise MaskedFunctionError(message)

    return guard


def _install_masks(names: Sequence[str], label: str, ns: dict) -> list[str]:
    """Replace each named library function by a guard (:func:`_make_guard`) that raises
    MaskedFunctionError when called from the submission's code (directly, or through map,
    np.vectorize, np.apply_along_axis, a thread, ...); the library's own calls by name go through. Every module attribute and setup name bound to
    the function is replaced."""
    import importlib

    notes = []
    for dotted in names:
        head, *rest = dotted.split(".")
        try:
            parent: Any = ns[head] if head in ns else importlib.import_module(head)
            for part in rest[:-1]:
                parent = getattr(parent, part)
            orig = getattr(parent, rest[-1])
        except (ImportError, AttributeError, KeyError):
            notes.append(f"mask {dotted}: not found")
            continue
        if not callable(orig):
            notes.append(f"mask {dotted}: not callable")
            continue
        libdir = _library_dir(orig)
        message = (
            f"exercise {label}: {dotted} is what this exercise asks you to write; "
            "it is not available to your code while it is graded"
        )
        top = dotted.split(".")[0]
        top_mod = getattr(ns.get(top), "__name__", top).split(".")[0]
        bound = [
            (mod, _attrs_bound_to(mod, orig))
            for mname, mod in list(sys.modules.items())
            if mod is not None and (mname == top_mod or mname.startswith(top_mod + "."))
        ]
        callers = {rest[-1], getattr(orig, "__name__", rest[-1])} | {
            k for _, attrs in bound for k in attrs
        }
        guard = _make_guard(orig, message, libdir, frozenset(callers))
        guard.__name__ = getattr(orig, "__name__", rest[-1])
        guard.__doc__ = f"Masked while grading exercise {label}."
        for mod, attrs in bound:
            for k in attrs:
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(mod, k, guard)
        with contextlib.suppress(AttributeError, TypeError):
            setattr(parent, rest[-1], guard)
        for k, v in list(ns.items()):
            if v is orig:
                ns[k] = guard
    return notes


def _unwrapped_code(fn: Any) -> Any:
    """The code of the function under decorators (``functools.lru_cache``, ``functools.wraps``,
    ``functools.partial``, ``np.vectorize``), or None. A wrapper that is not the submission's own
    may still be named after a function of it: a masked function it calls still raises."""
    import functools

    import numpy as np

    for _ in range(32):
        code = getattr(fn, "__code__", None)
        if code is not None:
            return code
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, np.vectorize):
            fn = fn.pyfunc
        elif getattr(fn, "__wrapped__", None) is not None:
            fn = fn.__wrapped__
        else:
            return None
    return None


def _worker_main(
    sock: Any, ns: dict, exercise: dict, definitions: list[str], exercise_cpu: float
) -> None:
    """A forked worker: mask, load the submission's definitions, answer calls until told to stop."""
    import resource

    import dill

    with contextlib.suppress(OSError):
        resource.setrlimit(
            resource.RLIMIT_CPU, (int(exercise_cpu) + 1, int(exercise_cpu) + 2)
        )
    # wait for the start signal (the test process has read its tests by then)
    _recv(sock)
    notes = _install_masks(exercise["masks"], exercise["label"], ns)
    sns = dict(ns)
    sns["__name__"] = _SUBMISSION_MODULE
    sns["__builtins__"] = builtins
    for src in definitions:
        try:
            exec(compile(src, _SUBMISSION_FILE, "exec"), sns)
        except BaseException as exc:  # noqa: BLE001 - the submission's own failure
            notes.append(
                f"loading `{src.splitlines()[0][:60]}` raised {type(exc).__name__}: {str(exc)[:200]}"
            )
    _send(sock, json.dumps({"notes": notes}).encode())
    while True:
        try:
            msg = _recv(sock)
        except EOFError:
            return
        name, args, kwargs = dill.loads(msg)
        arrays: list = []
        try:
            fn = sns.get(name)
            if fn is None:
                raise NameError(f"name {name!r} is not defined by the submission")
            if isinstance(fn, type):
                if fn.__module__ != _SUBMISSION_MODULE:
                    raise TypeError(f"{name} is not a class the submission defines")
            elif (
                _unwrapped_code(fn) is None
                or _unwrapped_code(fn).co_filename != _SUBMISSION_FILE
            ):
                raise TypeError(
                    f"{name} is not a function the submission defines ({fn!r})"
                )
            result = fn(*args, **kwargs)
            import numpy as np

            states = [
                [i, a.bit_generator.state]
                for i, a in enumerate([*args, *kwargs.values()])
                if isinstance(a, np.random.Generator)
            ]
            reply = {"value": _encode(result, arrays), "rng": states}
        except BaseException as exc:  # noqa: BLE001 - reported to the test as its exception
            arrays = []
            try:
                text = str(exc)[:2000]
            except BaseException:  # noqa: BLE001
                text = "(unprintable)"
            reply = {"exc": type(exc).__name__, "msg": text}
        try:
            _send(sock, _pack(reply, arrays))
        except (TypeError, ValueError) as exc:
            _send(
                sock,
                _pack(
                    {
                        "exc": "TypeError",
                        "msg": f"the returned value cannot be sent: {exc}",
                    },
                    [],
                ),
            )


class _Worker:
    """The test process's side of one exercise's worker."""

    def __init__(self, label: str, pid: int, sock: Any, budget: float):
        self.label, self.pid, self.sock, self.left = label, pid, sock, budget
        self.budget_total = budget
        self.dead: str | None = None

    def _timed(self, fn: Any) -> Any:
        import time

        if self.dead:
            raise RuntimeError(self.dead)
        t0 = time.monotonic()
        self.sock.settimeout(max(self.left, 0.01))
        try:
            return fn()
        except (TimeoutError, OSError, EOFError) as exc:
            import socket as _socket

            if isinstance(exc, _socket.timeout) or isinstance(exc, TimeoutError):
                self.kill(
                    f"stopped: the exercise's code ran past its time limit ({self.budget_total:g} s)"
                )
            else:
                self.kill(
                    f"stopped: the exercise's process ended ({type(exc).__name__}: {exc})"
                )
            raise RuntimeError(self.dead) from None
        finally:
            self.left -= time.monotonic() - t0

    def kill(self, why: str) -> None:
        import signal

        self.dead = self.dead or why
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(OSError, ChildProcessError):
            os.waitpid(self.pid, 0)

    def start(self) -> list[str]:
        def go() -> list[str]:
            _send(self.sock, b"start")
            return list(json.loads(_recv(self.sock).decode())["notes"])

        return self._timed(go)

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        import dill

        payload = dill.dumps((name, args, kwargs))

        def go() -> Any:
            _send(self.sock, payload)
            return _unpack(_recv(self.sock))

        header, arrays = self._timed(go)
        if "exc" in header:
            exc_type = _BUILTIN_EXCEPTIONS.get(str(header["exc"]), RuntimeError)
            if header["exc"] == "MaskedFunctionError":
                exc_type = MaskedFunctionError
            raise exc_type(str(header["msg"]))
        value = _decode(header["value"], arrays)
        import numpy as np

        every = [*args, *kwargs.values()]
        for i, state in header.get("rng", []):
            if (
                isinstance(i, int)
                and 0 <= i < len(every)
                and isinstance(every[i], np.random.Generator)
            ):
                with contextlib.suppress(Exception):
                    every[i].bit_generator.state = state
        return value


def _remote(worker: _Worker, name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return worker.call(name, args, kwargs)

    call.__name__ = name
    return call


def _read_fd_frame(fd: int) -> bytes:
    def exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError("the grader closed the test process's input")
            buf += chunk
        return bytes(buf)

    return exact(int.from_bytes(exact(8), "little"))


def _kill_strays(keep: set[int], pid_max: int) -> None:
    """Kill every process of the sandbox but ``keep`` (and its init, pid 1): what an exercise's
    worker left behind (a daemon that left the worker's process group with ``setsid``) must not
    serve the next exercise, whose masks it does not have. The sandbox has its own PID namespace
    and no /proc, so the pids are probed: up to the pid a fresh fork gets (pids are handed out in
    increasing order), or up to ``pid_max`` when the pids have wrapped or no fork is possible."""
    import errno
    import signal

    for _ in range(4):
        top = pid_max
        try:
            probe = os.fork()
            if probe == 0:
                os._exit(0)
            os.waitpid(probe, 0)
            # small pid spaces are scanned whole (wrap-proof)
            if probe > max(keep) and pid_max > 1 << 16:
                top = probe
        except OSError:
            pass
        found = 0
        for pid in range(2, top + 1):
            if pid in keep:
                continue
            # through a pidfd: pidfd_open refuses a thread id (EINVAL), and kill() on
            # the id of one of the test process's own threads
            # would kill the test process
            try:
                fd = os.pidfd_open(pid)
            except OSError as exc:
                if exc.errno != errno.ENOSYS:
                    continue
                with contextlib.suppress(OSError):  # no pidfds (Linux < 5.3)
                    if os.getpgid(pid) != os.getpgid(0):
                        os.kill(pid, signal.SIGKILL)
                        found += 1
                continue
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                found += 1
            except OSError:
                pass
            finally:
                os.close(fd)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        if not found:
            return


def _test_process_main() -> None:
    """The sandbox's test process (see the comment at the top of this section)."""
    import socket

    # fd 0 is read unbuffered, frame by frame: a buffered reader would read ahead and
    # hold the tests in memory when the workers are forked
    # (sys.__stdin__.buffer.peek() in a worker)
    header = json.loads(_read_fd_frame(0))
    result: dict[str, Any] = {"exercises": {}, "notes": []}
    ns: dict[str, Any] = {"__name__": "__grading_setup__", "__builtins__": builtins}
    setup_error = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            exec(compile(header["setup"], "<chapter setup>", "exec"), ns)
    except BaseException as exc:  # noqa: BLE001
        setup_error = f"the chapter's setup failed: {type(exc).__name__}: {exc}"
    workers: dict[str, _Worker] = {}
    if setup_error is None:
        for ex in header["exercises"]:
            parent, child = socket.socketpair()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            # the worker: nothing of the test process's channels stays open
            if pid == 0:
                try:
                    parent.close()
                    for w in workers.values():
                        w.sock.close()
                    os.setpgid(0, 0)
                    devnull = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(devnull, 0)
                    os.dup2(2, 1)
                    sys.stdin = open(os.devnull)
                    _worker_main(
                        child, ns, ex, header["definitions"], header["exercise_s"]
                    )
                finally:
                    os._exit(0)
            child.close()
            workers[ex["label"]] = _Worker(
                ex["label"], pid, parent, float(header["exercise_s"])
            )
    tests = json.loads(_read_fd_frame(0))
    names = [f for ex in header["exercises"] for f in ex["functions"]]
    for ex in header["exercises"]:
        label = ex["label"]
        rec: dict[str, Any] = {"passed": 0, "n_tests": len(tests[label]), "reasons": []}
        result["exercises"][label] = rec
        if setup_error:
            rec["reasons"].append(setup_error)
            continue
        w = workers[label]
        try:
            rec["reasons"] += w.start()
        except RuntimeError as exc:
            rec["reasons"].append(str(exc))
        proxies = {n: _remote(w, n) for n in names}
        for t in tests[label]:
            if w.dead:
                break
            tree = ast.parse(t["source"])
            params = sorted(_free_names(tree))
            body = t["source"].strip("\n")
            src = (
                f"def {t['name']}({', '.join(params)}):\n"
                + "\n".join(
                    ("    " + line) if line.strip() else "" for line in body.split("\n")
                )
                + "\n    pass\n"
            )
            env: dict[str, Any] = {"__builtins__": builtins}
            try:
                exec(compile(src, f"<{t['name']}>", "exec"), env)
                values = [proxies[p] if p in proxies else ns.get(p) for p in params]
                with contextlib.redirect_stdout(sys.stderr):
                    env[t["name"]](*values)
                rec["passed"] += 1
            except BaseException as exc:  # noqa: BLE001 - a failing test
                kind = "hidden" if t["hidden"] else "public"
                if isinstance(exc, MaskedFunctionError) or w.dead:
                    msg = str(exc)
                elif isinstance(exc, AssertionError):
                    msg = "an assertion failed" + (
                        f": {str(exc)[:160]}" if str(exc) else ""
                    )
                else:
                    msg = f"{type(exc).__name__}: {str(exc)[:160]}"
                if isinstance(exc, MaskedFunctionError) or w.dead:
                    rec["reasons"].append(msg)
                else:
                    rec["reasons"].append(f"{kind} test: {msg}")
        w.kill("done")
        _kill_strays(
            {os.getpid(), *(v.pid for v in workers.values() if not v.dead)},
            int(header.get("pid_max", 1 << 22)),
        )
    sys.stdout.write(json.dumps({"icml25-result": result}) + "\n")
    sys.stdout.flush()
    os._exit(0)


# --- the grader -----------------------------------------------------------------------


def _final_state_only(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a submission whose ``grader.check(...)`` lines are disabled (the unsafe otter
    engine only: otter records the first check of a question and would score a moved check cell
    against the stub)."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _CHECK_CALL_RE.sub(
                r"\1pass  # grader.check: run at the end by the grader", _source(cell)
            )
    return nb


_CHECK_CALL_RE = re.compile(
    r"^(\s*)(?:\w+\s*=\s*)?grader\.check(?:_all)?\(.*\)\s*(?:#.*)?$", re.M
)


def _grade_one_otter(submission: Path, autograder: Path) -> dict[str, Any]:
    from otter.api import grade_submission

    with tempfile.TemporaryDirectory(prefix="icml25-grade-") as tmp:
        if submission.suffix == ".ipynb":
            nb = nbformat.read(submission, as_version=4)
            nbformat.write(_final_state_only(nb), Path(tmp) / submission.name)
            submission = Path(tmp) / submission.name
        results = grade_submission(str(submission), str(autograder), quiet=True)
    row: dict[str, Any] = {q: float(r.score) for q, r in results.results.items()}
    row["total"] = float(results.total)
    row["possible"] = float(results.possible)
    row["notes"] = ""
    return row


def grade_one(
    submission: str | Path,
    autograder: str | Path,
    *,
    sandbox: bool = True,
    limits: Limits | None = None,
    hide: Sequence[str | Path] = (),
) -> dict[str, Any]:
    """Grade one submission.

    With ``sandbox=True`` (the default) the submission's notebook is read, not run: the top-level
    definitions its exercises name (and those they need, :func:`submission_definitions`) are
    loaded into one sandboxed worker per exercise, and the tests run in a sandboxed test process
    that the submission's code never runs in (see the guide, "What the sandbox protects").

    ``sandbox=False`` is otter's own code path (``otter run``): the whole notebook runs as you,
    in your folders, with the tests in the same kernel. Use it only for notebooks you trust.

    Args:
        submission: a student notebook (``.ipynb``).
        autograder: the chapter's ``autograder.zip``.
        sandbox: grade in the sandbox (requires bubblewrap; see :func:`sandbox_available`).
        limits: the sandbox's limits (default :class:`Limits`).
        hide: more paths to hide from the sandbox (the autograder's and the submission's folders
            always are, as are the project's notebooks, tests, book and build folders).

    Returns:
        ``{question: score, ..., "total", "possible", "notes"}``; ``notes`` says why an exercise
        lost points when its code was stopped, masked, missing or did not load, and what the
        screen (:func:`screen`) flagged.

    Raises:
        FileNotFoundError: a path does not exist.
        RuntimeError: ``sandbox=True`` but no sandbox can be made here.
        ValueError: the autograder has no grading spec, or the submission is not a notebook.
    """
    submission, autograder = Path(submission).resolve(), Path(autograder).resolve()
    for arg, p in (("submission", submission), ("autograder", autograder)):
        if not p.exists():
            raise FileNotFoundError(f"{arg}: {p} does not exist")
    if not sandbox:
        return _grade_one_otter(submission, autograder)
    why = sandbox_available()
    if why:
        raise RuntimeError(
            f"cannot sandbox the submissions: {why} (sandbox=False grades without one, unsafely)"
        )
    return _grade_sandboxed(
        submission,
        _read_spec(autograder),
        limits or Limits(),
        [autograder.parent, submission.parent, *map(Path, hide)],
    )


def _grade_sandboxed(
    submission: Path, spec: dict, limits: Limits, hide: Sequence[Path]
) -> dict[str, Any]:
    if submission.suffix != ".ipynb":
        raise ValueError(f"submission: {submission.name} is not a notebook (.ipynb)")
    nb = nbformat.read(submission, as_version=4)
    definitions, notes = submission_definitions(nb, spec)
    flagged = screen(definitions)
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        pid_max = 1 << 22
    header = {
        "setup": spec["setup"],
        "definitions": definitions,
        "exercise_s": limits.exercise,
        "pid_max": pid_max,
        "exercises": [
            {k: ex[k] for k in ("label", "functions", "masks")}
            for ex in spec["exercises"]
        ],
    }
    tests = {ex["label"]: ex["tests"] for ex in spec["exercises"]}
    res, why = _run_sandboxed(header, tests, limits, hide)
    row: dict[str, Any] = {}
    total = possible = 0.0
    for ex in spec["exercises"]:
        label, pts = ex["label"], float(ex["points"])
        possible += pts
        if res is None:
            row[label] = 0.0
            continue
        r = res["exercises"][label]
        score = pts * r["passed"] / r["n_tests"] if r["n_tests"] else 0.0
        row[label] = score
        total += score
        if score < pts:
            notes += [
                f"{label}: {reason}"
                for reason in dict.fromkeys(r["reasons"])
                if reason != "done"
            ][:1]
        notes += [
            f"{label}: {reason}"
            for reason in r["reasons"]
            if reason.startswith("mask ")
        ]
    if why:
        notes.insert(0, why)
    if flagged:
        notes.append("review by hand: the code uses " + ", ".join(flagged))
    row["total"] = total
    row["possible"] = possible
    row["notes"] = "; ".join(notes)
    return row


def _grade_task(args: tuple) -> tuple[str, dict[str, Any] | str]:
    sub, ag, kw = args
    try:
        return sub, grade_one(sub, ag, **kw)
    except Exception as exc:  # one broken submission must not stop the others
        return sub, f"{type(exc).__name__}: {exc}"


def grade(
    autograder: str | Path,
    submissions: str | Path | Sequence[str | Path],
    csv: str | Path | None = None,
    *,
    jobs: int = 1,
    sandbox: bool = True,
    limits: Limits | None = None,
) -> "pd.DataFrame":
    """Grade a folder (or a list) of submissions and tabulate the scores.

    Each ``*.ipynb`` under ``submissions`` is one student's submission; the student is the file's
    path relative to the folder without its suffix (``alice.ipynb`` -> ``alice``,
    ``alice/02_vmf_exploration.ipynb`` -> ``alice/02_vmf_exploration``). Each is graded by
    :func:`grade_one` in its own sandbox.

    Args:
        autograder: the chapter's ``autograder.zip``.
        submissions: a folder, or a list of notebook paths.
        csv: where to write the table (one row per student), or None.
        jobs: submissions graded in parallel.
        sandbox: see :func:`grade_one` (``False``: otter's unsandboxed path, trusted notebooks only).
        limits: the sandbox's limits (default :class:`Limits`).

    Returns:
        ``pandas.DataFrame`` indexed by student with one column per question, ``total``,
        ``possible``, ``percent``, ``error`` (empty unless grading itself failed) and ``notes``
        (why points were lost to a limit, a mask or a missing definition; what to review).

    Raises:
        FileNotFoundError: ``autograder`` or ``submissions`` does not exist.
        ValueError: no submission found, or ``jobs`` < 1.
        RuntimeError: ``sandbox=True`` and no sandbox can be made here.
    """
    import pandas as pd

    ag = Path(autograder).resolve()
    if not ag.is_file():
        raise FileNotFoundError(f"autograder: {ag} does not exist")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if isinstance(submissions, (str, Path)):
        base = Path(submissions)
        if not base.exists():
            raise FileNotFoundError(f"submissions: {base} does not exist")
        if base.is_file():
            files, base = [base], base.parent
        else:
            files = sorted(
                p
                for p in base.rglob("*")
                if p.suffix in (".ipynb", ".zip")
                and ".ipynb_checkpoints" not in p.parts
            )
    else:
        files = [Path(p) for p in submissions]
        base = None
    if not files:
        raise ValueError(f"submissions: no .ipynb or .zip found in {submissions}")
    if sandbox:
        why = sandbox_available()
        if why:
            raise RuntimeError(
                f"cannot sandbox the submissions: {why} (sandbox=False grades without one, unsafely)"
            )
        _read_spec(ag)

    kw = {"sandbox": sandbox, "limits": limits}
    tasks = [(str(f.resolve()), str(ag), kw) for f in files]
    if jobs == 1 or len(tasks) == 1:
        results = [_grade_task(t) for t in tasks]
    # each submission is its own sandboxed process tree: threads suffice here
    elif sandbox:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(jobs, len(tasks))) as pool:
            results = list(pool.map(_grade_task, tasks))
    else:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(min(jobs, len(tasks))) as pool:
            results = pool.map(_grade_task, tasks)

    rows = []
    for f, (_, res) in zip(files, results):
        if base is not None:
            student = str(f.relative_to(base).with_suffix(""))
        elif [g.stem for g in files].count(f.stem) > 1:
            common = Path(os.path.commonpath([str(g.resolve().parent) for g in files]))
            student = str(f.resolve().relative_to(common).with_suffix(""))
        else:
            student = f.stem
        row: dict[str, Any] = {"student": student}
        if isinstance(res, str):
            row.update(
                {"total": 0.0, "possible": float("nan"), "error": res, "notes": ""}
            )
        else:
            row.update(res)
            row["error"] = ""
        rows.append(row)
    df = pd.DataFrame(rows).set_index("student")
    questions = [
        c for c in df.columns if c not in ("total", "possible", "error", "notes")
    ]
    df["percent"] = 100.0 * df["total"] / df["possible"]
    df["notes"] = df["notes"].fillna("")
    df = df[[*questions, "total", "possible", "percent", "error", "notes"]]
    if csv is not None:
        Path(csv).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(csv)
    return df


# --------------------------------------------------------------------------------------
# Reader edition without solutions
# --------------------------------------------------------------------------------------


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a chapter notebook with every solution removed: the cells from each
    ``{solution-start}`` to its ``{solution-end}`` (inclusive), every cell tagged ``solution`` and
    every cell tagged ``exercise-hidden``. Exercise prompts and public checks stay.

    Args:
        nb: a chapter notebook (executed or not).

    Returns:
        The stripped copy.

    Raises:
        ClassroomFormatError: the solution gates or tags are broken (:func:`check_gates`), so that
            a missing ``{solution-end}`` never drops the rest of the chapter.
    """
    check_gates(nb)
    out = copy.deepcopy(nb)
    keep = []
    inside = False
    for cell in out.cells:
        src = _source(cell)
        if cell.cell_type == "markdown" and _SOLUTION_START_RE.search(src):
            inside = True
            continue
        if cell.cell_type == "markdown" and _SOLUTION_END_RE.search(src):
            inside = False
            continue
        if inside or SOLUTION_TAG in _tags(cell) or HIDDEN_TAG in _tags(cell):
            continue
        keep.append(cell)
    out.cells = keep
    return out


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m icml25.classroom assign|grade|reader ...`` (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m icml25.classroom", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    pa = sub.add_parser("assign", help="build the student and instructor editions")
    pa.add_argument(
        "notebooks",
        nargs="*",
        type=Path,
        help="chapter notebooks (default: every notebooks/NN_*.ipynb that has exercises)",
    )
    pa.add_argument("--out", type=Path, default=Path("_build/assignments"))
    pa.add_argument(
        "--run-tests", action="store_true", help="also run all tests on the solutions"
    )
    pa.add_argument("--points", type=float, default=1.0, help="points per question")
    pg = sub.add_parser(
        "grade", help="grade a folder of submissions offline; writes a CSV"
    )
    pg.add_argument("autograder", type=Path, help="the chapter's autograder.zip")
    pg.add_argument(
        "submissions",
        type=Path,
        help="a folder of .ipynb submissions (or one notebook)",
    )
    pg.add_argument(
        "--csv", type=Path, default=None, help="default: SUBMISSIONS/../scores.csv"
    )
    pg.add_argument("--jobs", type=int, default=1)
    pg.add_argument(
        "--wall",
        type=float,
        default=Limits.wall,
        help="seconds per submission (default %(default)s)",
    )
    pg.add_argument(
        "--exercise-time",
        type=float,
        default=Limits.exercise,
        help="seconds the student's code of one exercise may run (default %(default)s)",
    )
    pg.add_argument(
        "--memory-gib",
        type=float,
        default=Limits.memory / 2**30,
        help="address space per process, GiB (default %(default)s)",
    )
    pg.add_argument(
        "--processes",
        type=int,
        default=Limits.processes,
        help="processes and threads per sandbox (default %(default)s)",
    )
    pg.add_argument(
        "--tmp-mib",
        type=int,
        default=Limits.tmp_size >> 20,
        help="size of the sandbox's /tmp and of its /dev/shm (RAM), MiB each (default %(default)s)",
    )
    pg.add_argument(
        "--no-sandbox",
        action="store_true",
        help="otter's own unsandboxed path: the notebooks run as you, in your folders (trusted notebooks only)",
    )
    pr = sub.add_parser(
        "reader", help="copy notebooks with solutions removed (reader edition)"
    )
    pr.add_argument("src", type=Path)
    pr.add_argument("dest", type=Path)
    args = parser.parse_args(argv)

    if args.cmd == "assign":
        explicit = bool(args.notebooks)
        notebooks = args.notebooks or chapter_notebooks()
        failed = []
        for nbp in notebooks:
            try:
                ch = parse_chapter(nbp)
                if not ch.exercises:
                    print(f"skip {nbp}: no exercises")
                    if explicit:
                        failed.append(str(nbp))
                    continue
                ed = assign(nbp, args.out, run_tests=args.run_tests, points=args.points)
            except (ClassroomFormatError, FileNotFoundError, RuntimeError) as exc:
                print(f"error: {nbp}: {exc}", file=sys.stderr)
                failed.append(str(nbp))
                continue
            print(
                f"{ed.name}: {len(ch.exercises)} exercises -> {ed.student} ; {ed.instructor.parent}/"
            )
            for note in ed.notes:
                print(f"  setup pulls in {note}")
        if failed:
            print(f"failed: {', '.join(failed)}", file=sys.stderr)
            return 1
        return 0
    if args.cmd == "grade":
        csv = args.csv or args.submissions.resolve().parent / "scores.csv"
        limits = Limits(
            wall=args.wall,
            exercise=args.exercise_time,
            memory=int(args.memory_gib * 2**30),
            processes=args.processes,
            tmp_size=args.tmp_mib << 20,
        )
        try:
            df = grade(
                args.autograder,
                args.submissions,
                csv,
                jobs=args.jobs,
                sandbox=not args.no_sandbox,
                limits=limits,
            )
        except (RuntimeError, ValueError, FileNotFoundError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        import pandas as pd

        with pd.option_context("display.width", 200, "display.max_columns", 50):
            print(
                df.drop(columns=["error", "notes"])
                if not df["error"].any()
                else df.drop(columns=["notes"])
            )
        for student, note in df["notes"].items():
            if note:
                print(f"{student}: {note}")
        print(f"scores -> {csv}")
        return 0
    if args.cmd == "reader":
        args.dest.mkdir(parents=True, exist_ok=True)
        for p in sorted(args.src.glob("*.ipynb")):
            nb = nbformat.read(p, as_version=4)
            check_gates(nb, p.name)
            nbformat.write(strip_solutions(nb), args.dest / p.name)
            print(f"{p.name}: solutions removed")
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
