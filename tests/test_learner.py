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
    code = f"def t({', '.join(params)}):\n" + "\n".join("    " + ln for ln in body.split("\n"))
    env: dict = {}
    exec(compile(code, "<t>", "exec"), env)
    return env["t"]


def test_stub_says_still_to_write():
    t = _as_test("assert f(2) == 4", ["f"], ["f"])

    def f(x):
        """docstring"""
        raise NotImplementedError("exercise ex00-demo: write f")

    with pytest.raises(learner.StillToWrite, match=r"`f` is still to write \(exercise ex00-demo\)"):
        t(f)
    with pytest.raises(learner.StillToWrite, match="`f` is not defined"):
        t(None)


def test_wrong_answer_shows_call_input_return_and_expected():
    t = _as_test("x = np.arange(3.0)\nassert np.allclose(double(x), 2 * x), 'doubling'", ["double"], ["np", "double"])
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
    with pytest.raises(AssertionError, match=r"(?s)your sq\(v\) returned 5.*with v = 2"):
        t(lambda v: v * v if v != 2 else 5)


def test_code_that_is_not_the_stub_raising_notimplemented_is_not_called_a_stub():
    def helper():
        raise NotImplementedError("deep")

    def f(x):
        return helper()

    assert not learner._is_stub(f)
    with pytest.raises(NotImplementedError, match="deep"):
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
            assert out != src, f"{ex.label}: the rewrite fell back to the original check"
            assert "require_written" in out
        ns: dict = {}
        exec(compile("import numpy as np\nfrom typing import *\n" + ex.student_stub(), "<stub>", "exec"), ns)
        for name in ex.functions:
            if callable(ns.get(name)) and not isinstance(ns[name], type):
                assert learner._is_stub(ns[name]), f"{ex.label}: the stub of {name} is not recognised"


def test_fixture_public_tests_from_the_student_edition_pass_on_solutions_and_explain_stubs(tmp_path):
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
            tests = [v.test_func for k, v in mod.items() if k.startswith("test_") and "public" in k]
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
        assert all("require_written" not in src.split(f"def {h}")[1].split("\ndef ")[0] for h in hidden)


def test_roles_written_out():
    labels = {"thm02-p0": 'the theorem "Asymptotic equivalence"'}
    bib = {"bendada2025vmf": "Bendada et al. (2025)"}
    text = "See {prf:ref}`thm02-p0`, {cite}`bendada2025vmf`, {prf:ref}`other`, {math}`x^2` and {ref}`the intro <intro>`."
    out = learner.write_out_roles(text, labels, bib)
    assert out == 'See the theorem "Asymptotic equivalence", Bendada et al. (2025), `other`, $x^2$ and the intro.'
    assert learner.write_out_roles(text, labels, bib, keep_local=True).startswith("See {prf:ref}`thm02-p0`")


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
            if len(stripped) > 8 and stripped not in stub and not stripped.startswith("import "):
                assert stripped not in flat, f"solution line leaked: {stripped}"
        assert f'grader.check("{ex.label}")' in code
        for h in ex.hidden:
            assert h.strip() not in code
    assert "otter.Notebook(\"99_demo_chapter.ipynb\")" in code
    assert set(nb.metadata["otter"]["tests"]) == {ex.label for ex in chapter.exercises}
    assert not any("solution-start" in c.source for c in nb.cells)
    # an existing copy is the learner's work: kept unless forced
    path.write_text(path.read_text().replace("A sample the exercises use.", "my notes"))
    assert "my notes" in learner.make_learner_copy(FIXTURE, tmp_path).read_text()
    assert "my notes" not in learner.make_learner_copy(FIXTURE, tmp_path, force=True).read_text()


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
