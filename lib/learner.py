"""The learner's path: a chapter copied for JupyterLab, with exercises that can be attempted.

``make learn CHAPTER=NN`` calls :func:`make_learner_copy`, which writes the *learner copy* of a
chapter to ``work/NN_slug/NN_slug.ipynb`` (``work/`` is untracked). It is the whole chapter, so
that it reads like the book (with ``jupyterlab-myst`` the definitions, theorems and exercises
render as they do there), except that

- each exercise's solution is replaced by its stub (the signature kept, the body raising
  ``NotImplementedError``), so *Run All* never overwrites the learner's function with the answer;
- each exercise's public check becomes ``grader.check("LABEL")``, which runs the exercise's public
  tests (the student edition's, stored in the notebook's metadata); hidden checks are dropped;
- citations, which JupyterLab cannot resolve, are written out as "Author et al. (year)", and
  references to labels the notebook does not hold are written out by their kind and title.

The public tests give feedback a learner can act on (:func:`feedback_test_source`): a stub not yet
written says which function is still to write; a failing assertion shows the call, what the
learner's function returned and the values it was compared with (and a variable the check set
from the learner's call); an error raised inside the learner's function is blamed on it, with its
line and inputs, once it has escaped the check (so a check's own ``except`` clauses see it
unchanged). Hidden tests (at grading time) say only pass or fail.

Command line::

    python -m icml25.learner notebooks/02_vmf_exploration.ipynb [--dest work] [--force]
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Mapping, Sequence

import nbformat

__all__ = [
    "StillToWrite",
    "ErrorInYourFunction",
    "your_function_raised",
    "guard",
    "require_written",
    "explain",
    "fail",
    "feedback_test_source",
    "label_index",
    "write_out_roles",
    "learner_notebook",
    "make_learner_copy",
    "main",
]

_GUARD_ALIAS = "_icml25_learner"
_RAISED_ATTR = "_icml25_raised_in"
_VAR = "_fb"


class StillToWrite(AssertionError):
    """A public test called an exercise function that is still a stub (or is not defined)."""


# --------------------------------------------------------------------------------------
# Feedback at run time (called from the public tests of the student
# edition and the learner copy)
# --------------------------------------------------------------------------------------


def guard(fn: Any, name: str, label: str) -> Any:
    """Wrap an exercise function so that calling its unwritten stub says so.

    Args:
        fn: the learner's function as the test found it (``None`` when it is not defined).
        name: its name in the exercise.
        label: the exercise label.

    Returns:
        ``fn`` itself when it is not a plain Python function (a class, a builtin), else a wrapper
        that behaves exactly like ``fn`` (an exception it raises goes on unchanged, so that a
        check's ``except`` clauses see what they would have seen) and records on the exception
        which call raised it, for :func:`your_function_raised`. When ``fn`` is ``None``, a callable
        that raises :class:`StillToWrite` saying the function is not defined.
    """
    if fn is None:

        def missing(*_args: Any, **_kwargs: Any) -> Any:
            raise StillToWrite(
                f"`{name}` is not defined: run the cell of exercise {label} that defines it "
                "(or write it there), then run this check again"
            )

        return missing
    if not isinstance(fn, types.FunctionType):
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            # the exception goes on unchanged (a check may catch it); only an attribute
            # records where it came from, for your_function_raised
            # once it has escaped the test
            if not hasattr(exc, _RAISED_ATTR):
                try:
                    setattr(
                        exc,
                        _RAISED_ATTR,
                        (fn, name, label, args, kwargs, exc.__traceback__),
                    )
                except Exception:  # noqa: BLE001 - an exception that takes no attributes
                    pass
            raise

    return wrapper


class ErrorInYourFunction(Exception):
    """A public test failed because an exercise function raised (the error is in the learner's code)."""


def _where(fn: Any, tb: Any) -> tuple[str, str]:
    """(the line of ``fn`` the exception passed through, the deepest line it came from)."""
    import linecache

    mine = deepest = ""
    while tb is not None:
        f = tb.tb_frame
        line = linecache.getline(
            f.f_code.co_filename, tb.tb_lineno, f.f_globals
        ).strip()
        if f.f_code is fn.__code__:
            mine = f"line {tb.tb_lineno - fn.__code__.co_firstlineno + 1} of your {fn.__name__}: {line}"
            deepest = ""
        elif mine:
            deepest = f"{Path(f.f_code.co_filename).name}:{tb.tb_lineno}: {line}"
        tb = tb.tb_next
    return mine, deepest


def your_function_raised(exc: BaseException) -> None:
    """Explain an exception that escaped a public test from one of the learner's functions.

    Called by the rewritten test (:func:`feedback_test_source`) only once ``exc`` has left the
    check's own code, so the explanation cannot change whether the test passes. Returns (and the
    test re-raises ``exc`` as it was) when ``exc`` did not come from a guarded function.

    Raises:
        StillToWrite: the function raised ``NotImplementedError`` from its own body.
        ErrorInYourFunction: it raised anything else.
    """
    info = getattr(exc, _RAISED_ATTR, None)
    if info is None:
        return
    fn, name, label, args, kwargs, tb = info
    mine, deepest = _where(fn, tb)
    try:
        import inspect

        bound = inspect.signature(fn).bind(*args, **kwargs).arguments
        call = [f"      with {k} = {_show(v)}" for k, v in bound.items()]
    except (TypeError, ValueError):
        shown = [_show(a, 120) for a in args] + [
            f"{k}={_show(v, 120)}" for k, v in kwargs.items()
        ]
        call = [f"      with arguments {', '.join(shown)}"]
    text = " ".join(str(exc).split())
    text = text if len(text) <= 400 else text[:399] + "…"
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    # raised by its own body
    if isinstance(exc, NotImplementedError) and mine and not deepest:
        if _is_stub(fn):
            head = (
                f"`{name}` is still to write (exercise {label}): its body only raises NotImplementedError. "
                "Write it in its cell, run that cell, then run this check again."
            )
        else:
            head = f"`{name}` raised {what} (exercise {label}): a part of it is still to write"
        raise StillToWrite(
            "\n".join([head, *([f"  at {mine}"] if mine else []), *call])
        ) from None
    if not mine:  # the call itself failed: the signature does not match the exercise's
        lines = [
            f"exercise {label}: calling your `{name}` raised {what}",
            "  (does its signature match the one the exercise asks for?)",
            *call,
        ]
    else:
        lines = [
            f"exercise {label}: your `{name}` raised {what}",
            f"  at {mine}",
            *([f"  from {deepest}"] if deepest else []),
            *call,
        ]
    raise ErrorInYourFunction("\n".join(lines)) from None


def _show(value: Any, width: int = 240) -> str:
    """A short, readable rendering of a value (arrays and tensors with their shape and dtype)."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency of the book
        np = None
    mod = type(value).__module__
    if mod.startswith("torch") and hasattr(value, "detach"):
        try:
            arr = value.detach().cpu().numpy()
            return (
                f"tensor of shape {tuple(arr.shape)}, {value.dtype}: "
                + _show(arr, width).split(": ", 1)[-1]
            )
        except Exception:  # noqa: BLE001 - fall back to repr
            pass
    if np is not None and isinstance(value, np.ndarray):
        body = np.array2string(
            value, threshold=8, edgeitems=3, precision=6, max_line_width=10**6
        )
        text = f"array of shape {value.shape}, {value.dtype}: {' '.join(body.split())}"
    elif isinstance(value, float):
        text = f"{value:.10g}"
    else:
        try:
            text = repr(value)
        except Exception as exc:  # noqa: BLE001
            text = f"<{type(value).__name__}: repr failed ({exc})>"
        text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


_UNSET = object()


def explain(
    label: str,
    test: str,
    bound: Sequence[tuple[str, str, str]],
    env: Mapping[str, Any],
    note: Any = _UNSET,
) -> str:
    """The message of a failed public assertion.

    Args:
        label: the exercise label.
        test: the assertion's condition, as written in the check.
        bound: ``(variable, expression text, role)`` for each sub-expression the rewritten test
            kept (:func:`feedback_test_source`); role is ``"returned"``, ``"input"``, ``"value"``
            or ``"assigned"`` (then ``variable`` is a name of the check that an earlier statement
            set from a call of the learner's, and ``expression text`` is that call).
        env: the test function's ``locals()`` when the assertion failed.
        note: the assertion's own message, if it had one.

    Returns:
        Lines: the condition, what each of the learner's calls returned (with its inputs), and the
        values the condition compared. Sub-expressions never evaluated (short-circuits) are left out.
    """
    lines = [f"exercise {label}: a public test failed", f"    assert {test}"]
    for var, text, role in bound:
        if var not in env:
            continue
        v = _show(env[var])
        # a literal: already in the condition's text
        if v == text and role != "returned":
            continue
        if role == "returned":
            lines.append(f"  your {text} returned {v}")
        elif role == "input":
            lines.append(f"      with {text} = {v}")
        elif role == "assigned":
            lines.append(f"  {var} is {v}   (from your {text})")
        else:
            lines.append(f"  {text} is {v}")
    if note is not _UNSET and note is not None and str(note):
        lines.append(f"  the test's note: {_show(note, 400)}")
    return "\n".join(lines)


def fail(
    why: tuple[str, str, Sequence[tuple[str, str, str]]],
    env: Mapping[str, Any],
    note: Any = _UNSET,
) -> None:
    """Raise the explained ``AssertionError`` of a failed public assertion (see :func:`explain`).

    Args:
        why: ``(label, condition text, bound sub-expressions)`` written by :func:`feedback_test_source`.
        env: the test's ``locals()``.
        note: the assertion's own message, if any.

    Raises:
        AssertionError: always.
    """
    label, test, bound = why
    raise AssertionError(explain(label, test, bound, env, note))


_STUB_OPS = {
    "RESUME",
    "NOP",
    "CACHE",
    "PUSH_NULL",
    "LOAD_GLOBAL",
    "LOAD_NAME",
    "LOAD_CONST",
    "PRECALL",
    "CALL",
    "CALL_FUNCTION",
    "RAISE_VARARGS",
    "LOAD_ASSERTION_ERROR",
    "EXTENDED_ARG",
}


def _is_stub(fn: Any) -> bool:
    """True when ``fn``'s body does nothing but ``raise NotImplementedError(...)`` (a docstring aside)."""
    import dis

    if not isinstance(fn, types.FunctionType):
        return False
    code = fn.__code__
    if set(code.co_names) != {"NotImplementedError"}:
        return False
    return all(ins.opname in _STUB_OPS for ins in dis.get_instructions(code))


def require_written(fn: Any, name: str, label: str) -> None:
    """Raise :class:`StillToWrite` when the exercise function ``name`` is missing or still its stub.

    Raises:
        StillToWrite: ``fn`` is ``None`` (not defined) or its body only raises ``NotImplementedError``.
    """
    if fn is None:
        raise StillToWrite(
            f"`{name}` is not defined: run the cell of exercise {label} that defines it "
            "(or write it there), then run this check again"
        )
    if _is_stub(fn):
        raise StillToWrite(
            f"`{name}` is still to write (exercise {label}): its body only raises "
            "NotImplementedError. Write it in its cell, run that cell, then run this check again."
        )


class _Unwalrus(ast.NodeTransformer):
    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.expr:
        if node.target.id.startswith(_VAR):
            return self.visit(node.value)
        self.generic_visit(node)
        return node


def _text(node: ast.expr) -> str:
    """The source text of an expression as the check wrote it (our walrus bindings removed)."""
    import copy

    return ast.unparse(_Unwalrus().visit(copy.deepcopy(node)))


class _Binder(ast.NodeTransformer):
    """Wraps sub-expressions of one assertion in walrus assignments to fresh names."""

    def __init__(self, functions: set[str], counter: list[int]):
        self.functions = functions
        self.counter = counter
        self.bound: list[tuple[str, str, str]] = []

    def fresh(self) -> str:
        self.counter[0] += 1
        return f"{_VAR}{self.counter[0]}"

    def bind(self, node: ast.expr, role: str) -> ast.expr:
        # constants are in the condition's text already; a generator or
        # lambda has no value to show
        if isinstance(
            node,
            (ast.Constant, ast.Starred, ast.NamedExpr, ast.Lambda, ast.GeneratorExp),
        ):
            return node
        var = self.fresh()
        self.bound.append((var, _text(node), role))
        return ast.NamedExpr(target=ast.Name(id=var, ctx=ast.Store()), value=node)

    # walrus is not allowed in a comprehension's iterable or inside a lambda's own scope
    def visit_comprehension(self, node: ast.comprehension) -> ast.comprehension:
        node.ifs = [self.visit(i) for i in node.ifs]
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        is_exercise = isinstance(node.func, ast.Name) and node.func.id in self.functions
        if is_exercise:
            text = _text(node)
            start = len(self.bound)
            node.args = [self.bind(a, "input") for a in node.args]
            for kw in node.keywords:
                kw.value = self.bind(kw.value, "input")
            inputs = self.bound[start:]
            del self.bound[start:]
            var = self.fresh()
            self.bound.append((var, text, "returned"))
            self.bound.extend(inputs)
            return ast.NamedExpr(target=ast.Name(id=var, ctx=ast.Store()), value=node)
        self.generic_visit(node)
        return node


def _rewrite_assert(
    node: ast.Assert,
    label: str,
    functions: set[str],
    counter: list[int],
    assigned: Mapping[str, str] | None = None,
) -> list[ast.stmt]:
    """``assert cond, msg`` -> ``_fbwN = (label, text, bound)`` and ``if not cond: fail(_fbwN, locals(), msg)``.

    The failing line otter prints is then the short ``fail(...)`` call, and :func:`fail` raises the
    explained ``AssertionError``."""
    text = ast.unparse(node.test)
    binder = _Binder(functions, counter)
    test = binder.visit(node.test)
    top = test
    while isinstance(top, ast.UnaryOp) and isinstance(top.op, ast.Not):
        top = top.operand
    if isinstance(top, ast.Compare):
        top.left = binder.bind(top.left, "value")
        top.comparators = [binder.bind(c, "value") for c in top.comparators]
    elif isinstance(top, ast.Call) and not (
        isinstance(top.func, ast.Name) and top.func.id in functions
    ):
        top.args = [binder.bind(a, "value") for a in top.args]
    # names the condition reads that an earlier statement set from
    # one of the learner's calls
    shown = {v for v, _, _ in binder.bound}
    for n in dict.fromkeys(
        x.id
        for x in ast.walk(node.test)
        if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load)
    ):
        if assigned and n in assigned and n not in shown:
            binder.bound.append((n, assigned[n], "assigned"))
    counter[0] += 1
    why = f"{_VAR}w{counter[0]}"
    assign = ast.parse(f"{why} = {(label, text, binder.bound)!r}").body[0]
    args = [
        ast.Name(id=why, ctx=ast.Load()),
        ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]),
    ]
    if node.msg is not None:
        args.append(node.msg)
    call = ast.Expr(
        ast.Call(
            func=ast.Attribute(
                value=ast.Name(id=_GUARD_ALIAS, ctx=ast.Load()),
                attr="fail",
                ctx=ast.Load(),
            ),
            args=args,
            keywords=[],
        )
    )
    return [
        assign,
        ast.If(test=ast.UnaryOp(op=ast.Not(), operand=test), body=[call], orelse=[]),
    ]


class _AssertRewriter(ast.NodeTransformer):
    def __init__(self, label: str, functions: set[str]):
        self.label, self.functions, self.counter = label, functions, [0]

        self.assigned: dict[str, str] = {}

    def _calls_exercise(self, node: ast.AST) -> bool:
        return any(
            isinstance(c, ast.Call)
            and isinstance(c.func, ast.Name)
            and c.func.id in self.functions
            for c in ast.walk(node)
        )

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        # `p = f(x)` then `assert p.sum() == 1`: on failure, show p
        # as from the learner's call
        targets = [
            n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)
        ]
        for n in targets:
            self.assigned.pop(n, None)
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and self._calls_exercise(node.value)
        ):
            self.assigned[node.targets[0].id] = (
                f"{node.targets[0].id} = {ast.unparse(node.value)}"
            )
        self.generic_visit(node)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AugAssign:
        if isinstance(node.target, ast.Name):
            self.assigned.pop(node.target.id, None)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        # another scope: locals() there holds none of these
        outer, self.assigned = self.assigned, {}
        self.generic_visit(node)
        self.assigned = outer
        return node

    def visit_Assert(self, node: ast.Assert) -> list[ast.stmt]:
        return _rewrite_assert(
            node, self.label, self.functions, self.counter, self.assigned
        )


def feedback_test_source(src: str, label: str, functions: Sequence[str]) -> str:
    """A public check rewritten to explain its failures (the check's logic is unchanged).

    Every ``assert`` keeps its condition, evaluated once and in the same order; sub-expressions
    are bound by walrus assignments so that, on failure, :func:`explain` can show the learner's
    calls (:data:`functions`) with their inputs and return values, and the compared values. The
    exercise's functions the check reads are first wrapped by :func:`guard`, so that an unwritten
    stub says "still to write".

    Args:
        src: the ``exercise-check`` cell (IPython magics already removed).
        label: the exercise label.
        functions: the names the exercise asks the learner to write.

    Returns:
        Python source; ``src`` unchanged when it does not parse or the rewrite does not compile.
    """
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src
    names = set(functions)
    # the names the test receives as parameters
    from icml25.classroom import _free_names

    reads = sorted(names & _free_names(tree))
    new = _AssertRewriter(label, names).visit(tree)
    ast.fix_missing_locations(new)
    body = ast.unparse(new)
    if reads:  # an exception escaping the check from a learner's function is explained
        body = (
            "try:\n"
            + "\n".join("    " + ln for ln in body.split("\n"))
            + f"\nexcept Exception as _fbx:\n    {_GUARD_ALIAS}.your_function_raised(_fbx)\n    raise"
        )
    pre = [f"from icml25 import learner as {_GUARD_ALIAS}"]
    pre += [f"{_GUARD_ALIAS}.require_written({n}, {n!r}, {label!r})" for n in reads]
    pre += [f"{n} = {_GUARD_ALIAS}.guard({n}, {n!r}, {label!r})" for n in reads]
    out = "\n".join(pre) + "\n" + body
    try:
        compile(out, "<feedback>", "exec")
        # as the body of a function too (how the tests run): a walrus
        # may not rebind a parameter
        compile(
            "def _t():\n" + "\n".join("    " + ln for ln in out.split("\n")),
            "<feedback>",
            "exec",
        )
    except SyntaxError:
        return src
    return out


# --------------------------------------------------------------------------------------
# Labels and citations the notebook cannot resolve
# --------------------------------------------------------------------------------------

_DIRECTIVE_RE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<kind>[A-Za-z:_-]+)\}[ \t]*(?P<title>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.M | re.S,
)
_TARGET_RE = re.compile(
    r"^\((?P<label>[A-Za-z0-9_.:-]+)\)=\s*\n#+\s*(?P<title>[^\n]+)", re.M
)
_ROLE_RE = re.compile(r"\{(?P<role>[A-Za-z:_-]+)\}`(?P<text>[^`]+)`")
_KIND_NAMES = {
    "prf:definition": "definition",
    "prf:theorem": "theorem",
    "prf:lemma": "lemma",
    "prf:proposition": "proposition",
    "prf:corollary": "corollary",
    "prf:algorithm": "algorithm",
    "prf:remark": "remark",
    "prf:example": "example",
    "prf:proof": "proof",
    "prf:assumption": "assumption",
    "prf:property": "property",
    "prf:observation": "observation",
    "prf:conjecture": "conjecture",
    "prf:axiom": "axiom",
    "prf:criterion": "criterion",
    "exercise": "exercise",
    "figure": "figure",
    "math": "equation",
    "table": "table",
}


def label_index(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Each ``:label:`` and ``(label)=`` target of a notebook's markdown, written out.

    Returns:
        label -> e.g. ``'the theorem "P0 of the vMF sampler"'`` or ``'the section "Experiments"'``.

    Raises:
        TypeError: ``nb`` is not a notebook (a path, a plain dict).
    """
    if not hasattr(nb, "cells") or not isinstance(getattr(nb, "cells", None), list):
        raise TypeError(
            f"nb: expected a notebook read by nbformat (nbformat.read(path, as_version=4)), "
            f"got {type(nb).__name__}"
        )
    out: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        src = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        for m in _DIRECTIVE_RE.finditer(src):
            lab = re.search(r"^:label:[ \t]*(\S+)", m["body"], re.M)
            if lab:
                kind = _KIND_NAMES.get(m["kind"], m["kind"].split(":")[-1])
                title = m["title"].strip()
                title = _ROLE_RE.sub(
                    lambda r: f"${r['text']}$" if r["role"] == "math" else r["text"],
                    title,
                )
                out[lab.group(1)] = (
                    f'the {kind} "{title}"' if title else f"the {kind} `{lab.group(1)}`"
                )
        for m in _TARGET_RE.finditer(src):
            out[m["label"]] = f'the section "{m["title"].strip()}"'
    return out


def _bib_index(bib_path: Path) -> dict[str, str]:
    """``key -> "Author et al. (year)"`` from a BibTeX file (author and year fields only)."""
    if not bib_path.is_file():
        return {}
    text = bib_path.read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for m in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,(.*?)(?=^@|\Z)", text, re.S | re.M):
        key, body = m.group(1), m.group(2)
        a = re.search(r"\bauthor\s*=\s*[{\"](.+?)[}\"]\s*,?\s*$", body, re.M | re.I)
        y = re.search(r"\byear\s*=\s*[{\"]?(\d{4})", body, re.I)
        if not a:
            continue
        authors = [
            s.strip()
            for s in re.split(
                r"\s+and\s+", a.group(1).replace("{", "").replace("}", "")
            )
        ]
        first = (
            authors[0].split(",")[0].strip()
            if "," in authors[0]
            else authors[0].split()[-1]
        )
        name = first + (
            " et al."
            if len(authors) > 2
            else f" and {authors[1].split(',')[0].split()[-1]}"
            if len(authors) == 2
            else ""
        )
        out[key] = f"{name} ({y.group(1)})" if y else name
    return out


def write_out_roles(
    text: str,
    labels: Mapping[str, str],
    bib: Mapping[str, str],
    *,
    keep_local: bool = False,
) -> str:
    """Replace MyST roles a notebook cannot resolve with plain words.

    ``{cite}`k1,k2``` becomes "Author et al. (year); ..."; ``{prf:ref}``, ``{ref}``, ``{numref}`` and
    ``{eq}`` to a label in ``labels`` become its written-out kind and title (or stay as they are
    when ``keep_local``, for a notebook that holds the target); ``{math}`x``` becomes ``$x$``;
    anything else keeps its text.

    Args:
        text: markdown.
        labels: from :func:`label_index`.
        bib: from the book's ``references.bib``.
        keep_local: leave references to labels in ``labels`` as MyST (jupyterlab-myst resolves them).

    Returns:
        The markdown with those roles replaced.

    Raises:
        TypeError: ``text`` is not a str, or ``labels`` / ``bib`` is not a mapping.
    """

    if not isinstance(text, str):
        raise TypeError(f"text: expected markdown as a str, got {type(text).__name__}")
    for arg, value in (("labels", labels), ("bib", bib)):
        if not isinstance(value, Mapping):
            raise TypeError(
                f"{arg}: expected a mapping (label_index / the bibliography), got {type(value).__name__}"
            )

    def sub(m: re.Match) -> str:
        role, body = m["role"], m["text"]
        if role == "math":
            return f"${body}$"
        if role in ("cite", "cite:p", "cite:t"):
            keys = [k.strip() for k in body.split(",")]
            return "; ".join(bib.get(k, k) for k in keys)
        if role in ("prf:ref", "ref", "numref", "eq", "doc"):
            shown = re.match(r"^(?P<t>.*?)\s*<(?P<l>[^>]+)>$", body)
            target = shown["l"] if shown else body
            if keep_local and target in labels:
                return m.group(0)
            if shown and shown["t"]:
                return shown["t"]
            if target in labels:
                return labels[target]
            return "equation " + f"({target})" if role == "eq" else f"`{target}`"
        return body

    return _ROLE_RE.sub(sub, text)


# --------------------------------------------------------------------------------------
# The learner copy
# --------------------------------------------------------------------------------------


def learner_notebook(
    chapter_path: str | Path, student: nbformat.NotebookNode
) -> nbformat.NotebookNode:
    """The learner copy of a chapter: the whole chapter, solutions replaced by stubs.

    Args:
        chapter_path: the chapter notebook (``notebooks/NN_slug.ipynb``).
        student: its student edition (:func:`icml25.classroom.assign`), whose metadata holds the
            public tests ``grader.check`` runs.

    Returns:
        The notebook (outputs cleared; the chapter's tags kept, so plotting code stays folded).

    Raises:
        FileNotFoundError: ``chapter_path`` does not exist.
        icml25.classroom.ClassroomFormatError: the chapter's exercises break the authoring format.
    """
    from icml25 import classroom

    chapter_path = Path(chapter_path)
    chapter = classroom.parse_chapter(chapter_path)
    nb = nbformat.read(chapter_path, as_version=4)
    labels = label_index(nb)
    bib = _bib_index(classroom._project_root() / "book" / "references.bib")
    by_label = {ex.label: ex for ex in chapter.exercises}
    cells: list[Any] = []
    in_solution = False
    current = None
    checked: set[str] = set()
    grader_added = False
    for cell in nb.cells:
        src = classroom._source(cell)
        tags = classroom._tags(cell)
        if cell.cell_type == "markdown":
            if classroom._EXERCISE_RE.search(src):
                lab = re.search(r"^:label:[ \t]*(\S+)", src, re.M)
                current = by_label.get(lab.group(1)) if lab else None
                if not grader_added:
                    cells.append(
                        nbformat.v4.new_markdown_cell(
                            "Your copy of the exercises. Write each function in the cell below its exercise and "
                            'run that cell; `grader.check("LABEL")` then runs the exercise\'s public tests. '
                            "Hidden tests run only when your notebook is graded."
                        )
                    )
                    cells.append(
                        nbformat.v4.new_code_cell(
                            f'import otter\n\ngrader = otter.Notebook("{chapter.name}.ipynb")'
                        )
                    )
                    grader_added = True
            if classroom._SOLUTION_START_RE.search(src):
                in_solution = True
                continue
            if classroom._SOLUTION_END_RE.search(src):
                in_solution = False
                continue
            if in_solution:
                continue
            new = nbformat.v4.new_markdown_cell(
                write_out_roles(src, labels, bib, keep_local=True)
            )
            new.metadata = dict(cell.get("metadata", {}))
            cells.append(new)
            continue
        if cell.cell_type != "code":
            cells.append(cell)
            continue
        if classroom.SOLUTION_TAG in tags:
            ex = current
            if ex is not None and not ex.authored_stub and ex.label not in checked:
                stub = nbformat.v4.new_code_cell(ex.student_stub())
                stub.metadata = {"tags": ["learner-stub"]}
                cells.append(stub)
                checked.add(ex.label)
            continue
        if classroom.HIDDEN_TAG in tags:
            continue
        if classroom.CHECK_TAG in tags:
            m = classroom._CHECK_LABEL_RE.search(src)
            lab = m.group("label") if m else (current.label if current else None)
            if lab in by_label and f"check:{lab}" not in checked:
                cells.append(nbformat.v4.new_code_cell(f'grader.check("{lab}")'))
                checked.add(f"check:{lab}")
            continue
        new = nbformat.v4.new_code_cell(src)
        new.metadata = dict(cell.get("metadata", {}))
        cells.append(new)
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata = dict(nb.metadata)
    if "otter" in student.metadata:
        out.metadata["otter"] = student.metadata["otter"]
    return out


def make_learner_copy(
    chapter: str | Path, dest: str | Path = "work", *, force: bool = False
) -> Path:
    """Write the learner copy of a chapter to ``DEST/NN_slug/NN_slug.ipynb``.

    A copy that exists already is the learner's work: it is left as it is unless ``force``.

    Args:
        chapter: the chapter notebook, or its two-digit number (``"06"`` or ``6``; looked up in
            ``notebooks/``).
        dest: the work folder (``work/`` of the repository is in ``.gitignore``).
        force: overwrite an existing copy.

    Returns:
        The path of the learner copy.

    Raises:
        FileNotFoundError: no such chapter (or the number names no single notebook).
        ValueError: ``chapter`` is not an ``.ipynb`` file.
        TypeError: ``chapter`` or ``dest`` is neither a path nor (``chapter``) a number.
    """
    from icml25 import classroom

    if (
        isinstance(chapter, int)
        and not isinstance(chapter, bool)
        and 0 <= chapter <= 99
    ):
        chapter = f"{chapter:02d}"
    if not isinstance(chapter, (str, Path)):
        raise TypeError(
            f"chapter: expected a notebook path or a two-digit number, got {type(chapter).__name__}"
        )
    if not isinstance(dest, (str, Path)):
        raise TypeError(f"dest: expected a folder path, got {type(dest).__name__}")
    path = Path(chapter)
    if not path.suffix and not path.is_dir():
        found = sorted(
            (classroom._project_root() / "notebooks").glob(f"{chapter}_*.ipynb")
        )
        if len(found) != 1:
            raise FileNotFoundError(
                f"chapter: no single notebook notebooks/{chapter}_*.ipynb (found {len(found)})"
            )
        path = found[0]
    if not path.is_file():
        raise FileNotFoundError(f"chapter: no notebook at {path}")
    if path.suffix != ".ipynb":
        raise ValueError(f"chapter: {path} is not a notebook (.ipynb)")
    target = Path(dest) / path.stem / path.name
    if target.exists() and not force:
        return target
    with tempfile.TemporaryDirectory(prefix="icml25-learn-") as tmp:
        editions = classroom.assign(path, tmp)
        student = nbformat.read(editions.student, as_version=4)
    nb = learner_notebook(path, student)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write the learner copy of one chapter (see the module docstring).

    Returns:
        0 on success. Raises as :func:`make_learner_copy` does.
    """
    p = argparse.ArgumentParser(
        prog="python -m icml25.learner", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("chapter", help="a chapter notebook, or its two-digit number")
    p.add_argument("--dest", default="work", help="the work folder (default work/)")
    p.add_argument(
        "--force", action="store_true", help="overwrite an existing learner copy"
    )
    a = p.parse_args(argv)
    from icml25 import classroom

    chapter = Path(a.chapter)
    # a number: the notebook it names, to tell whether a copy exists
    if not chapter.suffix:
        found = sorted(
            (classroom._project_root() / "notebooks").glob(f"{a.chapter}_*.ipynb")
        )
        chapter = found[0] if len(found) == 1 else chapter
    existed = (Path(a.dest) / chapter.stem / chapter.name).exists()
    out = make_learner_copy(a.chapter, a.dest, force=a.force)
    print(f"{'kept your copy' if existed and not a.force else 'wrote'} {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
