"""The learner's path (icml25.learner): feedback of the public tests, the learner copy, labels.

The rewritten public tests must keep each check's logic (every condition evaluated once, in the
same order, short-circuits kept) while explaining a failure; the learner copy must hold no line
of any solution and no hidden test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from icml25 import classroom, learner

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "99_demo_chapter.ipynb"
CHAPTERS = classroom.chapter_notebooks(ROOT / "notebooks")


def _as_test(src: str, functions: list[str], params: list[str]):
    body = learner.feedback_test_source(src, "ex00-demo", functions)
    code = f"def t({', '.join(params)}):\n" + "\n".join(
        "    " + ln for ln in body.split("\n")
    )
    env: dict = {}
    exec(compile(code, "<t>", "exec"), env)
    return env["t"]


def test_stub_says_still_to_write():
    t = _as_test("assert f(2) == 4", ["f"], ["f"])

    def f(x):
        """docstring"""
        raise NotImplementedError("exercise ex00-demo: write f")

    with pytest.raises(
        learner.StillToWrite, match=r"`f` is still to write \(exercise ex00-demo\)"
    ):
        t(f)
    with pytest.raises(learner.StillToWrite, match="`f` is not defined"):
        t(None)


def test_wrong_answer_shows_call_input_return_and_expected():
    t = _as_test(
        "x = np.arange(3.0)\nassert np.allclose(double(x), 2 * x), 'doubling'",
        ["double"],
        ["np", "double"],
    )
    with pytest.raises(AssertionError) as err:
        t(np, lambda x: x + 1)
    msg = str(err.value)
    assert "assert np.allclose(double(x), 2 * x)" in msg
    assert "your double(x) returned array of shape (3,), float64: [1. 2. 3.]" in msg
    assert "with x = array of shape (3,), float64: [0. 1. 2.]" in msg
    assert "2 * x is array of shape (3,), float64: [0. 2. 4.]" in msg
    assert "the test's note: 'doubling'" in msg
    t(np, lambda x: 2 * x)  # a right answer passes


def test_rewrite_keeps_evaluation_once_and_in_order_and_short_circuits():
    calls = []

    def f(x):
        calls.append(x)
        return x * 10

    src = (
        "assert f(1) + f(2) == 30\n"
        "assert True or f(99)\n"
        "assert all(f(v) == 10 * v for v in [3, 4])\n"
        "for k in range(2):\n"
        "    assert f(k) >= 0\n"
        "assert not f(0)\n"
    )
    _as_test(src, ["f"], ["f"])(f)
    assert calls == [1, 2, 3, 4, 0, 1, 0]


def test_a_failing_genexp_shows_the_failing_input():
    t = _as_test("assert all(sq(v) == v * v for v in [1, 2, 3])", ["sq"], ["sq"])
    with pytest.raises(
        AssertionError, match=r"(?s)your sq\(v\) returned 5.*with v = 2"
    ):
        t(lambda v: v * v if v != 2 else 5)


def test_code_that_is_not_the_stub_raising_notimplemented_is_not_called_a_stub():
    def helper():
        raise NotImplementedError("deep")

    def f(x):
        return helper()

    assert not learner._is_stub(f)
    with pytest.raises(
        learner.ErrorInYourFunction, match="(?s)raised NotImplementedError: deep.*from "
    ):
        _as_test("assert f(1) == 1", ["f"], ["f"])(f)


def test_unparsable_check_is_returned_unchanged():
    assert learner.feedback_test_source("assert (", "ex", ["f"]) == "assert ("


@pytest.mark.parametrize("nb", [*CHAPTERS, FIXTURE], ids=lambda p: p.stem[:2])
def test_every_public_check_is_rewritten_and_every_stub_detected(nb):
    chapter = classroom.parse_chapter(nb)
    for ex in chapter.exercises:
        for src in ex.checks:
            src = classroom._without_magics(src)
            out = learner.feedback_test_source(src, ex.label, ex.functions)
            assert out != src, (
                f"{ex.label}: the rewrite fell back to the original check"
            )
            assert "require_written" in out
        ns: dict = {}
        exec(
            compile(
                "import numpy as np\nfrom typing import *\n" + ex.student_stub(),
                "<stub>",
                "exec",
            ),
            ns,
        )
        for name in ex.functions:
            if callable(ns.get(name)) and not isinstance(ns[name], type):
                assert learner._is_stub(ns[name]), (
                    f"{ex.label}: the stub of {name} is not recognised"
                )


def test_fixture_public_tests_from_the_student_edition_pass_on_solutions_and_explain_stubs(
    tmp_path,
):
    """The tests otter stores in the student notebook: solutions pass, stubs say still to write."""
    ed = classroom.assign(FIXTURE, tmp_path)
    meta = nbformat.read(ed.student, as_version=4).metadata["otter"]["tests"]
    chapter = classroom.parse_chapter(FIXTURE)
    env: dict = {}
    exec("\n\n".join([chapter.parameters, *chapter.setup]), env)
    for ex in chapter.exercises:
        sol_env = dict(env)
        exec(ex.solution, sol_env)
        stub_env = dict(env)
        exec(ex.student_stub(), stub_env)
        src = meta[ex.label]
        for e, should_pass in ((sol_env, True), (stub_env, False)):
            mod: dict = {}
            exec(src, mod)
            tests = [
                v.test_func
                for k, v in mod.items()
                if k.startswith("test_") and "public" in k
            ]
            assert tests, ex.label
            for fn in tests:
                import inspect

                args = [e.get(p) for p in inspect.signature(fn).parameters]
                if should_pass:
                    fn(*args)
                else:
                    with pytest.raises(learner.StillToWrite):
                        fn(*args)
        hidden = [k for k in re.findall(r"def (test_\w+)", src) if "hidden" in k]
        assert all(
            "require_written" not in src.split(f"def {h}")[1].split("\ndef ")[0]
            for h in hidden
        )


def test_roles_written_out():
    labels = {"thm02-p0": 'the theorem "Asymptotic equivalence"'}
    bib = {"bendada2025vmf": "Bendada et al. (2025)"}
    text = "See {prf:ref}`thm02-p0`, {cite}`bendada2025vmf`, {prf:ref}`other`, {math}`x^2` and {ref}`the intro <intro>`."
    out = learner.write_out_roles(text, labels, bib)
    assert (
        out
        == 'See the theorem "Asymptotic equivalence", Bendada et al. (2025), `other`, $x^2$ and the intro.'
    )
    assert learner.write_out_roles(text, labels, bib, keep_local=True).startswith(
        "See {prf:ref}`thm02-p0`"
    )


def test_bib_index_reads_the_book_bibliography():
    bib = learner._bib_index(ROOT / "book" / "references.bib")
    assert len(bib) >= 10
    assert all(re.search(r"\(\d{4}\)$", v) for v in bib.values())


def test_learner_copy_of_the_fixture(tmp_path):
    path = learner.make_learner_copy(FIXTURE, tmp_path)
    assert path == tmp_path / FIXTURE.stem / FIXTURE.name
    nb = nbformat.read(path, as_version=4)
    chapter = classroom.parse_chapter(FIXTURE)
    code = "\n".join(c.source for c in nb.cells)
    flat = " ".join(code.split())
    for ex in chapter.exercises:
        stub = " ".join(ex.student_stub().split())
        for line in ex.solution.splitlines():
            stripped = " ".join(line.split())
            if (
                len(stripped) > 8
                and stripped not in stub
                and not stripped.startswith("import ")
            ):
                assert stripped not in flat, f"solution line leaked: {stripped}"
        assert f'grader.check("{ex.label}")' in code
        for h in ex.hidden:
            assert h.strip() not in code
    assert 'otter.Notebook("99_demo_chapter.ipynb")' in code
    assert set(nb.metadata["otter"]["tests"]) == {ex.label for ex in chapter.exercises}
    assert not any("solution-start" in c.source for c in nb.cells)
    # an existing copy is the learner's work: kept unless forced
    path.write_text(path.read_text().replace("A sample the exercises use.", "my notes"))
    assert "my notes" in learner.make_learner_copy(FIXTURE, tmp_path).read_text()
    assert (
        "my notes"
        not in learner.make_learner_copy(FIXTURE, tmp_path, force=True).read_text()
    )


def test_learner_copy_refuses_an_unknown_chapter(tmp_path):
    with pytest.raises(FileNotFoundError, match="chapter"):
        learner.make_learner_copy("98", tmp_path)
    with pytest.raises(FileNotFoundError, match="chapter"):
        learner.make_learner_copy(tmp_path / "nope.ipynb", tmp_path)


def test_label_index_of_a_chapter():
    nb = nbformat.read(ROOT / "notebooks" / "02_vmf_exploration.ipynb", as_version=4)
    labels = learner.label_index(nb)
    assert labels["thm02-p0"].startswith("the theorem ")
    assert any(v.startswith("the exercise ") for v in labels.values())
    json.dumps(labels)


def test_an_error_inside_the_learners_function_is_blamed_on_it_with_its_line():
    """Not the rewritten (walrus) line of the test: the learner's line, the error and the input."""
    ns: dict = {}
    exec(
        compile(
            "def mean(x):\n    total = sum(x)\n    return total / len(y)\n",
            "<cell-1>",
            "exec",
        ),
        ns,
    )
    t = _as_test("assert mean([1, 2]) == 1.5", ["mean"], ["mean"])
    with pytest.raises(learner.ErrorInYourFunction) as err:
        t(ns["mean"])
    msg = str(err.value)
    assert "your `mean` raised NameError: name 'y' is not defined" in msg
    assert "at line 3 of your mean" in msg
    assert "with x = [1, 2]" in msg
    assert "_fb" not in msg
    # a call that does not match the signature says so
    with pytest.raises(learner.ErrorInYourFunction, match="signature"):
        t(lambda: 1.5)


def test_a_part_still_to_write_is_not_called_an_unwritten_body():
    def rmax(xs, *, start=None):
        if start is not None:
            raise NotImplementedError("start")
        return max(xs)

    t = _as_test(
        "assert rmax([1, 2]) == 2\nassert rmax([1, 2], start=7) == 7",
        ["rmax"],
        ["rmax"],
    )
    with pytest.raises(learner.StillToWrite) as err:
        t(rmax)
    assert "a part of it is still to write" in str(err.value)
    assert "its body only raises" not in str(err.value)


def test_exceptions_the_check_catches_are_unchanged():
    """The check's own except clauses see the learner's exception as it was (same pass/fail)."""
    src = (
        "try:\n"
        "    f(-1)\n"
        "    raised = False\n"
        "except AssertionError:\n"
        "    raised = True\n"
        "assert not raised\n"
        "try:\n"
        "    f(-2)\n"
        "except ValueError as e:\n"
        "    assert 'negative' in str(e)\n"
    )

    def f(x):
        if x == -1:
            # a part still to write: the check must not pass it
            raise NotImplementedError("later")
        raise ValueError("negative input")

    t = _as_test(src, ["f"], ["f"])
    # the original check also fails (NotImplementedError)
    with pytest.raises(learner.StillToWrite):
        t(f)

    def g(x):
        if x == -2:
            raise ValueError("negative input")

    t(g)  # the original passes, and so does the rewrite


def test_own_walrus_kept_in_the_shown_text_and_literals_not_repeated():
    t = _as_test("assert (n := f([3, 1])) == [1, 3], n", ["f"], ["f"])
    with pytest.raises(AssertionError) as err:
        t(lambda v: v)
    msg = str(err.value)
    assert "assert (n := f([3, 1])) == [1, 3]" in msg
    assert "with [3, 1] = [3, 1]" not in msg and "[1, 3] is [1, 3]" not in msg
    assert "the test's note: [3, 1]" in msg


def test_a_variable_set_from_the_learners_call_is_shown_when_an_assertion_on_it_fails():
    t = _as_test(
        "p = sm(np.array([0.0, 1.0]))\nassert abs(p.sum() - 1.0) < 1e-12",
        ["sm"],
        ["np", "sm"],
    )
    with pytest.raises(AssertionError) as err:
        t(np, lambda z: 2 * z)
    msg = str(err.value)
    assert (
        "p is array of shape (2,), float64: [0. 2.]   (from your p = sm(np.array([0.0, 1.0])))"
        in msg
    )
    t(np, lambda z: np.exp(z) / np.exp(z).sum())
    # reassigned from something else: no longer shown as the learner's
    t2 = _as_test("p = sm(1)\np = 5\nassert p == 4", ["sm"], ["sm"])
    with pytest.raises(AssertionError) as err:
        t2(lambda z: z)
    assert "from your" not in str(err.value)


def test_bad_arguments_name_the_argument(tmp_path):
    with pytest.raises(TypeError, match="chapter"):
        learner.make_learner_copy(None, tmp_path)
    with pytest.raises(TypeError, match="dest"):
        learner.make_learner_copy(FIXTURE, None)
    with pytest.raises(ValueError, match="chapter: .*README.md is not a notebook"):
        learner.make_learner_copy(ROOT / "README.md", tmp_path)
    with pytest.raises(FileNotFoundError, match="chapter"):
        # a number as an int is looked up like "98"
        learner.make_learner_copy(98, tmp_path)
    with pytest.raises(TypeError, match="text"):
        learner.write_out_roles(None, {}, {})
    with pytest.raises(TypeError, match="labels"):
        learner.write_out_roles("x", None, {})
    with pytest.raises(TypeError, match="bib"):
        learner.write_out_roles("x", {}, ["k"])
    with pytest.raises(TypeError, match="nb: expected a notebook"):
        learner.label_index(str(FIXTURE))


def test_command_line_says_when_it_kept_a_copy_named_by_number(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(classroom, "_project_root", lambda: tmp_path)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / FIXTURE.name).write_bytes(FIXTURE.read_bytes())
    (tmp_path / "book").mkdir()
    learner.main(["99", "--dest", str(tmp_path / "work")])
    assert capsys.readouterr().out.startswith("wrote ")
    learner.main(["99", "--dest", str(tmp_path / "work")])
    assert capsys.readouterr().out.startswith("kept your copy ")
