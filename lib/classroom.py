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

Grading is offline and container-free: :func:`grade` calls ``otter.api.grade_submission`` (what
``otter run`` does) once per submission and writes one CSV row per student with one column per
question. Tests call the exercise's named functions (their parameters are looked up by name in the
student's final global environment), so grading survives students adding, moving, duplicating or
deleting cells.

Command line::

    python -m icml25.classroom assign [NOTEBOOK ...] [--out _build/assignments] [--run-tests]
    python -m icml25.classroom grade  AUTOGRADER_ZIP SUBMISSIONS_DIR [--csv scores.csv] [--jobs N]
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
    "strip_solutions",
    "chapter_notebooks",
    "main",
]

SOLUTION_TAG = "solution"
CHECK_TAG = "exercise-check"
HIDDEN_TAG = "exercise-hidden"
SETUP_TAG = "exercise-setup"
PARAMETERS_TAG = "parameters"

_FENCE = r"(?:`{3,}|:{3,})"
_EXERCISE_RE = re.compile(rf"^{_FENCE}\{{exercise(?:-start)?\}}[ \t]*(?P<title>[^\n]*)$", re.M)
_SOLUTION_START_RE = re.compile(rf"^{_FENCE}\{{solution-start\}}[ \t]*(?P<label>\S+)", re.M)
_SOLUTION_END_RE = re.compile(rf"^{_FENCE}\{{solution-end\}}", re.M)
_EXERCISE_END_RE = re.compile(rf"^{_FENCE}\{{exercise-end\}}", re.M)
_LABEL_RE = re.compile(r"^:label:[ \t]*(?P<label>\S+)", re.M)
_CHECK_LABEL_RE = re.compile(r"exercise\s+`?(?P<label>[A-Za-z0-9_.:-]+?)`?(?=[\s:,;.)]|$)")
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
        return "\n\n\n".join(s.strip("\n") for s in self.starter if names & set(signatures(s)))

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


# ------------------------------------------------------------------------------------------------
# Source analysis helpers
# ------------------------------------------------------------------------------------------------


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
    except SyntaxError as exc:  # pragma: no cover - a chapter that does not parse fails elsewhere too
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
                stack.extend(d for d in args.defaults + args.kw_defaults if d is not None)
                if not isinstance(node, ast.Lambda):
                    stack.extend(a.annotation for a in _all_args(args) if a.annotation is not None)
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
        inner_params = set() if isinstance(sc, ast.ClassDef) else {a.arg for a in _all_args(sc.args)}
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
    return [ast.unparse(st) for st in tree.body if isinstance(st, (ast.Import, ast.ImportFrom))]


# ------------------------------------------------------------------------------------------------
# Stubs and signatures
# ------------------------------------------------------------------------------------------------


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
            msg = f"exercise {label}: write {node.name}" if label else f"write {node.name}"
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
                b.name: sig(b) for b in node.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            out[node.name] = f"class({bases}) {methods}"
    return out


# ------------------------------------------------------------------------------------------------
# Parsing a chapter
# ------------------------------------------------------------------------------------------------


def _exercise_from_markdown(src: str, where: str) -> Exercise:
    m = _EXERCISE_RE.search(src)
    assert m is not None
    title = m.group("title").strip()
    body_lines = []
    lab = None
    fence = re.match(r"`{3,}|:{3,}", src[m.start():]).group(0)  # type: ignore[union-attr]
    rest = src[m.end():].split("\n")[1:]
    in_options = True
    for line in rest:
        if line.strip() == fence or line.strip().startswith(fence) and not line.strip().lstrip(fence[0]):
            break
        if in_options and line.startswith(":"):
            lm = _LABEL_RE.match(line)
            if lm:
                lab = lm.group("label")
            continue
        in_options = False
        body_lines.append(line)
    if not lab:
        raise ClassroomFormatError(f"{where}: the exercise {title!r} has no :label: option")
    return Exercise(label=lab, title=title, prompt="\n".join(body_lines).strip())


def _check_label(src: str, exercises: dict[str, Exercise], current: Exercise | None, where: str) -> Exercise:
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


def chapter_notebooks(root: str | Path | None = None) -> list[Path]:
    """The chapter notebooks ``notebooks/NN_*.ipynb`` under ``root`` (default: the current
    directory when it has ``notebooks/``, else the repository this module lives in)."""
    if root is None:
        root = Path.cwd() if (Path.cwd() / "notebooks").is_dir() else Path(__file__).resolve().parents[1]
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
    name = path.stem
    title = name
    parameters = ""
    exercises: dict[str, Exercise] = {}
    current: Exercise | None = None
    in_solution: Exercise | None = None
    chapter_cells: list[tuple[int, str]] = []  # (cell index, source) of ordinary code cells
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
                    raise ClassroomFormatError(f"{where}: exercise label {ex.label!r} is used twice")
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
                    raise ClassroomFormatError(f"{where}: solution-start names unknown exercise {label!r}")
                in_solution = exercises[label]
                after = re.split(r"^(?:`{3,}|:{3,})\s*$", src[sm.end():], maxsplit=1, flags=re.M)
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
                raise ClassroomFormatError(f"{where}: a cell tagged 'solution' precedes every exercise")
            target.solution = (target.solution + "\n\n\n" + src).strip() if target.solution else src
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
        if current is not None and in_solution is None and not current.solution and not current.checks:
            current.starter.append(src)
            continue
        chapter_cells.append((i, src))

    for ex in exercises.values():
        if not ex.solution:
            raise ClassroomFormatError(f"{path.name}: exercise {ex.label!r} has no code cell tagged 'solution'")
        if not ex.checks:
            raise ClassroomFormatError(f"{path.name}: exercise {ex.label!r} has no cell tagged 'exercise-check'")
        if not signatures(ex.solution):
            raise ClassroomFormatError(
                f"{path.name}: the solution of {ex.label!r} defines no named function (tests call named functions)"
            )

    setup, notes = _build_setup(path.name, parameters, tagged_setup, chapter_cells, list(exercises.values()),
                                first_exercise_cell)
    return Chapter(path=path, name=name, title=title, parameters=parameters, setup=setup,
                   setup_notes=notes, exercises=list(exercises.values()))


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
        # a name nobody defines stays unresolved: the check fails loudly when run (NameError)
    blocks: list[tuple[int, str]] = [(i, _drop_imports(s, imports)) for i, s in tagged] + [
        (i, _drop_imports(s, imports)) for i, s in chosen.items()
    ]
    blocks.sort()
    setup = []
    if imports:
        setup.append("\n".join(imports))
    setup.extend(f"# from the chapter, cell {i}\n{s.strip()}" for i, s in blocks)
    return setup, notes


# ------------------------------------------------------------------------------------------------
# The otter-assign master notebook
# ------------------------------------------------------------------------------------------------


def _identifier(label: str) -> str:
    ident = re.sub(r"\W", "_", label)
    return ident if not ident[0].isdigit() else f"q_{ident}"


def _test_cell(src: str, label: str, kind: str, k: int) -> str:
    """An exception-based otter test: the check cell as a function whose parameters are the names
    it reads, looked up in the student's final global environment (missing names become None)."""
    tree = _parse(src, f"exercise {label} {kind} test")
    free = sorted(_free_names(tree))
    fname = f"test_{_identifier(label)}_{kind}_{k}"
    body = _without_magics(src).strip("\n")
    hidden = "true" if kind == "hidden" else "false"
    params = ", ".join(free)
    return (
        '""" # BEGIN TEST CONFIG\n'
        f"hidden: {hidden}\n"
        '""" # END TEST CONFIG\n'
        f"def {fname}({params}):\n"
        + "\n".join(("    " + line) if line.strip() else "" for line in body.split("\n"))
        + "\n\n"
        + f"{fname}({params})"
    )


_ROLE_RE = re.compile(r"\{(?P<role>[A-Za-z:_-]+)\}`(?P<text>[^`]+)`")


def _plain_markdown(text: str) -> str:
    """MyST roles as plain Jupyter markdown: {math}`x` -> $x$, {prf:ref}`thm` / {cite}`key` -> `thm`."""
    return _ROLE_RE.sub(lambda m: f"${m['text']}$" if m["role"] == "math" else f"`{m['text']}`", text)


def _prompt_markdown(k: int, ex: Exercise) -> str:
    funcs = ", ".join(f"`{n}`" for n in ex.functions)
    return (
        f"### Exercise {k}: {ex.title} (`{ex.label}`)\n\n{_plain_markdown(ex.prompt)}\n\n"
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
        "generate": {"pdf": False, "filtering": False, "pagebreaks": False, "show_stdout": True},
    }
    cells = [
        nbv4.new_raw_cell("# ASSIGNMENT CONFIG\n" + json.dumps(config, indent=2)),
        nbv4.new_markdown_cell(
            f"# {chapter.name[:2]} · {chapter.title}: exercises\n\n"
            f"The exercises of the chapter `notebooks/{chapter.path.name}`. Run the setup cell, then "
            "write each function where the cell says so; `grader.check(\"LABEL\")` runs the public "
            "tests of an exercise. The grader runs the whole notebook and then calls your functions "
            "by name, so you may add, move or delete cells freely. Hidden tests are run at grading time."
        ),
    ]
    setup = "\n\n".join(s for s in [chapter.parameters.strip(), *chapter.setup] if s)
    if setup:
        cells.append(nbv4.new_code_cell(setup))
    for k, ex in enumerate(chapter.exercises, start=1):
        cells.append(nbv4.new_raw_cell(f"# BEGIN QUESTION\nname: {ex.label}\npoints: {points}"))
        cells.append(nbv4.new_markdown_cell(_prompt_markdown(k, ex)))
        cells.append(nbv4.new_raw_cell("# BEGIN SOLUTION"))
        stub = ex.student_stub()
        quote = '"""' if '"""' not in stub else "'''"
        if quote in stub:
            stub = stub_source(ex.solution, ex.label)
        sol = "# BEGIN SOLUTION NO PROMPT\n" + ex.solution.strip("\n") + "\n# END SOLUTION"
        sol += f"\nr{quote} # BEGIN PROMPT\n" + stub + f"\n{quote} # END PROMPT"
        cells.append(nbv4.new_code_cell(sol))
        for text in ex.solution_text:
            cells.append(nbv4.new_markdown_cell(_plain_markdown(text)))
        cells.append(nbv4.new_raw_cell("# END SOLUTION"))
        cells.append(nbv4.new_raw_cell("# BEGIN TESTS"))
        for j, src in enumerate(ex.checks, start=1):
            cells.append(nbv4.new_code_cell(_test_cell(src, ex.label, "public", j)))
        for j, src in enumerate(ex.hidden, start=1):
            cells.append(nbv4.new_code_cell(_test_cell(src, ex.label, "hidden", j)))
        cells.append(nbv4.new_raw_cell("# END TESTS"))
        cells.append(nbv4.new_raw_cell("# END QUESTION"))
        for src in ex.other_starter:
            cells.append(nbv4.new_code_cell(src))
    nb = nbv4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


# ------------------------------------------------------------------------------------------------
# Editions
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Editions:
    """Where :func:`assign` wrote a chapter's editions."""

    name: str
    student: Path  # the student notebook
    instructor: Path  # the instructor notebook (solutions)
    autograder: Path  # autograder.zip
    master: Path  # the otter master notebook
    notes: list[str]


_PROMPT_BLOCK_RE = re.compile(r"^r?(\"\"\"|''') # BEGIN PROMPT\n.*?^\1 # END PROMPT\n?", re.M | re.S)


def _clean_instructor_notebook(path: Path) -> None:
    """Drop otter's solution markers and the student-stub block from the instructor notebook
    (they only steer ``otter assign``; the autograder does not read this notebook)."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "otter_assign_solution_cell" in _tags(cell):
            src = _PROMPT_BLOCK_RE.sub("", _source(cell))
            src = "\n".join(
                line for line in src.split("\n")
                if line.strip() not in ("# BEGIN SOLUTION NO PROMPT", "# BEGIN SOLUTION", "# END SOLUTION")
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
        master.cells[0].source = cfg_src.replace('"run_tests": false', '"run_tests": true')
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
                otter_assign(str(master_path), str(tmpd / "dist"), no_pdfs=True, no_run_tests=not run_tests)
        except Exception as exc:
            raise RuntimeError(f"otter assign failed for {chapter.name}: {exc}\n{log.getvalue()}") from exc
        dist = tmpd / "dist"
        for d in (student_dir, instructor_dir):
            if d.exists():
                shutil.rmtree(d)
        shutil.copytree(dist / "student", student_dir)
        shutil.copytree(dist / "autograder", instructor_dir)
        zips = sorted(instructor_dir.glob("*.zip"))
        if not zips:
            raise RuntimeError(f"otter assign wrote no autograder zip for {chapter.name}:\n{log.getvalue()}")
        if zips[0].name != "autograder.zip":
            zips[0].rename(instructor_dir / "autograder.zip")
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


# ------------------------------------------------------------------------------------------------
# Grading
# ------------------------------------------------------------------------------------------------


_CHECK_CALL_RE = re.compile(r"^(\s*)(?:\w+\s*=\s*)?grader\.check(?:_all)?\(.*\)\s*(?:#.*)?$", re.M)


def _final_state_only(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a submission whose ``grader.check(...)`` lines are disabled.

    In grading mode otter records the result of every ``grader.check`` call made while the notebook
    runs and does not run a question's tests again at the end. A check cell the student moved
    above their answer would then score the stub. Disabling the calls makes every question be
    graded once, against the final global environment, whatever the cell order.
    """
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _CHECK_CALL_RE.sub(r"\1pass  # grader.check: run at the end by the grader", _source(cell))
    return nb


def grade_one(submission: str | Path, autograder: str | Path) -> dict[str, float]:
    """Grade one submission offline, without containers (``otter run``'s code path).

    The notebook is executed top to bottom (errors in cells are ignored; ``grader.check`` calls
    are disabled), then every test of every question runs once against the final global
    environment.

    Args:
        submission: a student notebook (``.ipynb``) or otter export zip.
        autograder: the chapter's ``autograder.zip``.

    Returns:
        ``{question: score, ..., "total": score, "possible": points}``.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    from otter.api import grade_submission

    submission, autograder = Path(submission).resolve(), Path(autograder).resolve()
    for arg, p in (("submission", submission), ("autograder", autograder)):
        if not p.exists():
            raise FileNotFoundError(f"{arg}: {p} does not exist")
    with tempfile.TemporaryDirectory(prefix="icml25-grade-") as tmp:
        if submission.suffix == ".ipynb":
            nb = nbformat.read(submission, as_version=4)
            nbformat.write(_final_state_only(nb), Path(tmp) / submission.name)
            submission = Path(tmp) / submission.name
        results = grade_submission(str(submission), str(autograder), quiet=True)
    row: dict[str, float] = {}
    for q, r in results.results.items():
        row[q] = float(r.score)
    row["total"] = float(results.total)
    row["possible"] = float(results.possible)
    return row


def _grade_task(args: tuple[str, str]) -> tuple[str, dict[str, float] | str]:
    sub, ag = args
    try:
        return sub, grade_one(sub, ag)
    except Exception as exc:  # one broken submission must not stop the others
        return sub, f"{type(exc).__name__}: {exc}"


def grade(
    autograder: str | Path,
    submissions: str | Path | Sequence[str | Path],
    csv: str | Path | None = None,
    *,
    jobs: int = 1,
) -> "pd.DataFrame":
    """Grade a folder (or a list) of submissions offline and tabulate the scores.

    Each ``*.ipynb`` (or ``*.zip``) under ``submissions`` is one student's submission; the student
    is the file's path relative to the folder without its suffix (``alice.ipynb`` -> ``alice``,
    ``alice/02_vmf_exploration.ipynb`` -> ``alice/02_vmf_exploration``).

    Args:
        autograder: the chapter's ``autograder.zip``.
        submissions: a folder, or a list of notebook paths.
        csv: where to write the table (one row per student), or None.
        jobs: submissions graded in parallel (separate processes).

    Returns:
        ``pandas.DataFrame`` indexed by student with one column per question, ``total``,
        ``possible``, ``percent`` and ``error`` (empty unless grading itself failed).

    Raises:
        FileNotFoundError: ``autograder`` or ``submissions`` does not exist.
        ValueError: no submission found, or ``jobs`` < 1.
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
            files = sorted(p for p in base.rglob("*") if p.suffix in (".ipynb", ".zip")
                           and ".ipynb_checkpoints" not in p.parts)
    else:
        files = [Path(p) for p in submissions]
        base = None
    if not files:
        raise ValueError(f"submissions: no .ipynb or .zip found in {submissions}")

    tasks = [(str(f.resolve()), str(ag)) for f in files]
    if jobs == 1 or len(tasks) == 1:
        results = [_grade_task(t) for t in tasks]
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
            row.update({"total": 0.0, "possible": float("nan"), "error": res})
        else:
            row.update(res)
            row["error"] = ""
        rows.append(row)
    df = pd.DataFrame(rows).set_index("student")
    questions = [c for c in df.columns if c not in ("total", "possible", "error")]
    df["percent"] = 100.0 * df["total"] / df["possible"]
    df = df[[*questions, "total", "possible", "percent", "error"]]
    if csv is not None:
        Path(csv).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(csv)
    return df


# ------------------------------------------------------------------------------------------------
# Reader edition without solutions
# ------------------------------------------------------------------------------------------------


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a chapter notebook with every solution removed: the cells from each
    ``{solution-start}`` to its ``{solution-end}`` (inclusive), every cell tagged ``solution`` and
    every cell tagged ``exercise-hidden``. Exercise prompts and public checks stay.

    Args:
        nb: a chapter notebook (executed or not).

    Returns:
        The stripped copy.
    """
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


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m icml25.classroom assign|grade|reader ...`` (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m icml25.classroom", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    pa = sub.add_parser("assign", help="build the student and instructor editions")
    pa.add_argument("notebooks", nargs="*", type=Path,
                    help="chapter notebooks (default: every notebooks/NN_*.ipynb that has exercises)")
    pa.add_argument("--out", type=Path, default=Path("_build/assignments"))
    pa.add_argument("--run-tests", action="store_true", help="also run all tests on the solutions")
    pa.add_argument("--points", type=float, default=1.0, help="points per question")
    pg = sub.add_parser("grade", help="grade a folder of submissions offline; writes a CSV")
    pg.add_argument("autograder", type=Path, help="the chapter's autograder.zip")
    pg.add_argument("submissions", type=Path, help="a folder of .ipynb submissions (or one notebook)")
    pg.add_argument("--csv", type=Path, default=None, help="default: SUBMISSIONS/../scores.csv")
    pg.add_argument("--jobs", type=int, default=1)
    pr = sub.add_parser("reader", help="copy notebooks with solutions removed (reader edition)")
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
            print(f"{ed.name}: {len(ch.exercises)} exercises -> {ed.student} ; {ed.instructor.parent}/")
            for note in ed.notes:
                print(f"  setup pulls in {note}")
        if failed:
            print(f"failed: {', '.join(failed)}", file=sys.stderr)
            return 1
        return 0
    if args.cmd == "grade":
        csv = args.csv or args.submissions.resolve().parent / "scores.csv"
        df = grade(args.autograder, args.submissions, csv, jobs=args.jobs)
        import pandas as pd

        with pd.option_context("display.width", 200, "display.max_columns", 50):
            print(df.drop(columns=["error"]) if not df["error"].any() else df)
        print(f"scores -> {csv}")
        return 0
    if args.cmd == "reader":
        args.dest.mkdir(parents=True, exist_ok=True)
        for p in sorted(args.src.glob("*.ipynb")):
            nbformat.write(strip_solutions(nbformat.read(p, as_version=4)), args.dest / p.name)
            print(f"{p.name}: solutions removed")
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
