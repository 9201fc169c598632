"""Grading that no submission can fool (issue 14): the adversarial suite.

On the fixture chapter (tests/fixtures/99_demo_chapter: ex99-mean, ex99-softmax, ex99-runmax, each
with a public and a hidden test), submissions that attack the grader are graded next to an honest
one, the untouched student edition and each attack's twin (the same notebook without the attack):

- the five attacks of the issue: replace otter's test runner; rebind the module the tests read
  (with wrong answers); call the library functions the exercises ask for; edit the test files
  while being graded; write outside the submission's folder (rewrite ``autograder.zip``, change
  another student's notebook);
- in the functions the tests call: sleep forever, fork without end, allocate 50 GiB, read the
  autograder and the instructor edition from disk, fetch the solutions over a network socket.

Each attack scores exactly as its twin, the honest submission scores full marks, the untouched
edition zero, and every instructor file, every other submission and the project's sources are
byte-identical afterwards. The same attacks graded by otter's unsandboxed path (``sandbox=False``)
do fool it (each scores above its twin there), so every check above can fail.
"""

from __future__ import annotations

import copy
import hashlib
import json
import socket
import sys
import threading
from pathlib import Path

import nbformat
import pytest

from icml25 import classroom as cr

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "99_demo_chapter.ipynb"
QUESTIONS = ["ex99-mean", "ex99-softmax", "ex99-runmax"]
LIMITS = cr.Limits(wall=120, exercise=6, memory=4 << 30, processes=64)

pytestmark = pytest.mark.skipif(
    cr.sandbox_available() is not None,
    reason=f"no sandbox here: {cr.sandbox_available()}",
)

# --------------------------------------------------------------------------------------
# The attacks (cells appended to, or replacing the answers of, the student edition)
# --------------------------------------------------------------------------------------

RUNNER = """
from otter.test_files import abstract_test, exception_test
def _always_pass(self, global_environment):
    self.test_case_results = [abstract_test.TestCaseResult(test_case=tc, message="ok", passed=True)
                              for tc in self.test_cases]
exception_test.ExceptionTestFile.run = _always_pass
"""

WRONG = """
def sample_mean(x):
    return 0.0


def running_max(xs, *, start=None):
    return [3, 3, 4, 4, 5] if start is None else [7, 7]   # the public answers, hard-coded
"""

REBIND = """
import numpy as _real_np
class _Numpy:
    def __getattr__(self, name):
        return getattr(_real_np, name)
    @staticmethod
    def mean(x):
        return 0.0
np = _Numpy()
"""

LIBRARY = """
def sample_mean(x):
    return float(np.mean(x))


def softmax(z, temperature=1.0):
    import scipy.special
    return scipy.special.softmax(np.asarray(z, dtype=float) / temperature)


def running_max(xs, *, start=None):
    import itertools
    return list(itertools.accumulate(xs, max, initial=start))[1:] if start is not None else list(itertools.accumulate(xs, max))
"""

EDIT_TESTS = """
import glob, os
for _f in set(glob.glob("**/tests/*.py", recursive=True) + glob.glob("/tmp/**/tests/*.py", recursive=True)):
    try:
        _src = open(_f).read()
        open(_f, "w").write(_src.replace("assert ", "assert True or "))
    except OSError:
        pass
"""

ESCAPE = """
def _escape():
    import zipfile, io
    open({outside!r}, "w").write("written by a submission")
    with open({other!r}) as f:
        text = f.read()
    open({other!r}, "w").write(text.replace("raise NotImplementedError", "return 0.0  # edited by another student"))
    buf = io.BytesIO()
    with zipfile.ZipFile({ag!r}) as zin, zipfile.ZipFile(buf, "w") as zout:
        for item in zin.namelist():
            data = zin.read(item)
            if item.startswith("tests/") or item == "icml25_grading.json":
                data = data.replace(b"assert ", b"assert True or ")
            zout.writestr(item, data)
    open({ag!r}, "wb").write(buf.getvalue())


try:
    _escape()
except OSError:
    pass


def sample_mean(x):
    _escape()
    raise NotImplementedError
"""

SLEEP = """
def sample_mean(x):
    import time
    time.sleep(10 ** 6)
"""

FORK = """
def sample_mean(x):
    import os
    while True:
        try:
            os.fork()
        except OSError:
            pass
"""

ALLOC = """
def sample_mean(x):
    big = np.ones(50 * 2 ** 30 // 8)          # 50 GiB
    return float(big[: len(x)].sum() * 0 + sum(x) / len(x))
"""

SOLUTIONS_FROM = """
def _solutions(text):
    import json
    nb = json.loads(text)
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
            and "otter_assign_solution_cell" in c["metadata"].get("tags", [])]


def _cheat(name):
    ns = {{"np": np}}
    for src in _solutions(_fetch()):
        try:
            exec(src, ns)
        except Exception:
            pass
    return ns[name]
"""

READ_DISK = (
    SOLUTIONS_FROM
    + """

def _fetch():
    open({ag!r}, "rb").read()                  # the autograder ...
    return open({instructor!r}).read()         # ... and the instructor edition


def sample_mean(x):
    return _cheat("sample_mean")(x)
"""
)

NETWORK = (
    SOLUTIONS_FROM
    + """

def _fetch():
    import socket
    with socket.create_connection(("127.0.0.1", {port}), timeout=5) as s:
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                return b"".join(chunks).decode()
            chunks.append(b)


def sample_mean(x):
    return _cheat("sample_mean")(x)
"""
)

# Attacks found in review (each scored above its twin before the fix named with it)

KWDEFAULTS = """
import operator
_orig = operator.attrgetter("__kwdefaults__")          # the mask kept the original in its defaults
def sample_mean(x):
    return float(_orig(np.mean)["__orig"](x))
"""

NUMPY_HOF = """
def sample_mean(x):                                    # numpy calls np.mean: the guard saw a numpy frame
    return float(np.apply_along_axis(np.mean, 0, np.asarray(x, dtype=float)))
"""

THREAD = """
def sample_mean(x):                                    # no frame of the submission on the thread's stack
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        return float(pool.submit(np.mean, x).result())
"""

STDIN = """
def sample_mean(x):                                    # the test process's buffered stdin held the tests
    import sys
    seen = sys.__stdin__.read()
    if "np.full(5, 3.25)" in seen:
        return 3.25
    raise NotImplementedError
"""

DAEMON = r"""
import os, socket, json
def _daemon():                                         # forked by the first exercise's worker, whose
    s = socket.socket(socket.AF_UNIX)                  # masks are not the later exercises' ones
    try:
        s.bind("\0icml25-cheat")
    except OSError:
        return 0
    s.listen(4)
    if os.fork():
        return 1
    os.setsid()
    if os.fork():
        os._exit(0)
    import itertools
    while True:
        c, _ = s.accept()
        xs, start = json.loads(c.makefile().readline())
        out = list(itertools.accumulate(xs, max, initial=start))[1:] if start is not None else list(itertools.accumulate(xs, max))
        c.sendall((json.dumps(out) + "\n").encode())
        c.close()
_started = _daemon()
def sample_mean(x):
    _started
    raise NotImplementedError
def running_max(xs, *, start=None):
    _started
    c = socket.socket(socket.AF_UNIX)
    c.connect("\0icml25-cheat")
    c.sendall((json.dumps([[float(v) for v in xs], start]) + "\n").encode())
    return json.loads(c.makefile().readline())
"""


# --------------------------------------------------------------------------------------
# Building the submissions
# --------------------------------------------------------------------------------------


def _answers(nb) -> list[int]:
    return [
        i
        for i, c in enumerate(nb.cells)
        if "otter_answer_cell" in c.metadata.get("tags", [])
    ]


def _with_answers(
    student, chapter, *, replace: dict[str, str] | None = None, keep_stub=()
):
    """The student edition with the solutions in (or the given sources for the named functions)."""
    nb = copy.deepcopy(student)
    by_name = {n: ex for ex in chapter.exercises for n in ex.functions}
    for i in _answers(nb):
        names = set(cr.signatures(nb.cells[i].source))
        name = next(n for n in names if n in by_name)
        if name in keep_stub:
            continue
        nb.cells[i].source = (replace or {}).get(name, by_name[name].solution)
    return nb


def _append(nb, *sources):
    nb = copy.deepcopy(nb)
    nb.cells.extend(nbformat.v4.new_code_cell(s) for s in sources)
    return nb


class _SolutionServer:
    """A TCP server on the grader's loopback that hands out the instructor edition."""

    def __init__(self, payload: bytes):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.payload = payload
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.sendall(self.payload)


def _digest(paths) -> dict[str, str]:
    out = {}
    for base in paths:
        base = Path(base)
        files = (
            [base]
            if base.is_file()
            else sorted(p for p in base.rglob("*") if p.is_file())
        )
        for f in files:
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adversarial")
    chapter = cr.parse_chapter(FIXTURE)
    ed = cr.assign(FIXTURE, tmp / "assignments")
    student = nbformat.read(ed.student, as_version=4)
    honest = _with_answers(student, chapter)
    mean_stub = _with_answers(student, chapter, keep_stub=("sample_mean",))
    server = _SolutionServer(ed.instructor.read_bytes())
    return {
        "tmp": tmp,
        "chapter": chapter,
        "ed": ed,
        "student": student,
        "honest": honest,
        "mean_stub": mean_stub,
        "server": server,
    }


def _submissions(s, folder: Path) -> dict[str, str]:
    """Write every submission into ``folder``; returns {attack: its twin}."""
    folder.mkdir(parents=True)
    ed, student, chapter = s["ed"], s["student"], s["chapter"]
    other = folder / "zz_other_student.ipynb"
    wrong = _with_answers(
        student, chapter, replace={"sample_mean": WRONG, "running_max": WRONG}
    )
    fmt = {
        "ag": str(ed.autograder),
        "instructor": str(ed.instructor),
        "other": str(other),
        "outside": str(folder.parent / "written-by-a-submission.txt"),
        "port": s["server"].port,
    }
    subs = {
        "honest": s["honest"],
        "untouched": student,
        "zz_other_student": student,
        "attack_runner": _append(student, RUNNER),
        "wrong_answers": wrong,
        "attack_rebind": _append(wrong, REBIND),
        "attack_library": _with_answers(
            student,
            chapter,
            replace={n: LIBRARY for n in ("sample_mean", "softmax", "running_max")},
        ),
        "attack_edit_tests": _append(student, EDIT_TESTS),
        "attack_escape": _with_answers(
            student,
            chapter,
            replace={"sample_mean": ESCAPE.format(**fmt)},
            keep_stub=("softmax", "running_max"),
        ),
        "mean_stub": s["mean_stub"],
        "attack_sleep": _with_answers(student, chapter, replace={"sample_mean": SLEEP}),
        "attack_fork": _with_answers(student, chapter, replace={"sample_mean": FORK}),
        "attack_alloc": _with_answers(student, chapter, replace={"sample_mean": ALLOC}),
        "attack_read_disk": _with_answers(
            student,
            chapter,
            replace={"sample_mean": READ_DISK.format(**fmt)},
            keep_stub=("softmax", "running_max"),
        ),
        "attack_network": _with_answers(
            student,
            chapter,
            replace={"sample_mean": NETWORK.format(**fmt)},
            keep_stub=("softmax", "running_max"),
        ),
        "attack_kwdefaults": _with_answers(
            student,
            chapter,
            replace={"sample_mean": KWDEFAULTS},
            keep_stub=("softmax", "running_max"),
        ),
        "attack_numpy_hof": _with_answers(
            student,
            chapter,
            replace={"sample_mean": NUMPY_HOF},
            keep_stub=("softmax", "running_max"),
        ),
        "attack_thread": _with_answers(
            student,
            chapter,
            replace={"sample_mean": THREAD},
            keep_stub=("softmax", "running_max"),
        ),
        "attack_stdin": _with_answers(
            student,
            chapter,
            replace={"sample_mean": STDIN},
            keep_stub=("softmax", "running_max"),
        ),
        "attack_daemon": _with_answers(
            student,
            chapter,
            replace={"sample_mean": DAEMON, "running_max": DAEMON},
            keep_stub=("softmax",),
        ),
    }
    for name, nb in subs.items():
        for cell in nb.cells:
            cell["id"] = nbformat.v4.new_code_cell().id
        nbformat.write(nb, folder / f"{name}.ipynb")
    return {
        "attack_runner": "untouched",
        "attack_rebind": "wrong_answers",
        "attack_library": "untouched",
        "attack_edit_tests": "untouched",
        "attack_escape": "untouched",
        "attack_sleep": "mean_stub",
        "attack_fork": "mean_stub",
        "attack_alloc": "mean_stub",
        "attack_read_disk": "untouched",
        "attack_network": "untouched",
        "attack_kwdefaults": "untouched",
        "attack_numpy_hof": "untouched",
        "attack_thread": "untouched",
        "attack_stdin": "untouched",
        "attack_daemon": "untouched",
    }


def _row(df, who) -> list[float]:
    return [float(df.loc[who, q]) for q in QUESTIONS]


def test_every_attack_scores_as_its_twin_and_changes_no_file(setup):
    s = setup
    folder = s["tmp"] / "sandboxed"
    twins = _submissions(s, folder)
    watched = [s["ed"].instructor.parent, s["ed"].student.parent, ROOT / "lib", FIXTURE]
    watched += [p for p in folder.iterdir() if p.suffix == ".ipynb"]
    before = _digest(watched)
    connections = s["server"].connections
    df = cr.grade(
        s["ed"].autograder, folder, folder.parent / "scores.csv", jobs=2, limits=LIMITS
    )
    assert (df["error"] == "").all(), df["error"].to_dict()
    notes = df["notes"].to_dict()
    assert _row(df, "honest") == [1.0, 1.0, 1.0], notes["honest"]
    assert _row(df, "untouched") == [0.0, 0.0, 0.0] and _row(
        df, "zz_other_student"
    ) == [0.0, 0.0, 0.0]
    assert _row(df, "mean_stub") == [0.0, 1.0, 1.0]
    # hard-coded public answers fail the hidden test
    assert _row(df, "wrong_answers") == [0.0, 1.0, 0.5]
    for attack, twin in twins.items():
        assert _row(df, attack) == _row(df, twin), (
            attack,
            _row(df, attack),
            twin,
            _row(df, twin),
            notes[attack],
        )
    # the reasons are in the table
    assert (
        "ex99-mean" in notes["attack_library"]
        and "asks you to write" in notes["attack_library"]
    )
    assert (
        "ex99-softmax" in notes["attack_library"]
        and "ex99-runmax" in notes["attack_library"]
    )
    assert "time limit" in notes["attack_sleep"], notes["attack_sleep"]
    assert "time limit" in notes["attack_fork"] or "ended" in notes["attack_fork"], (
        notes["attack_fork"]
    )
    assert "MemoryError" in notes["attack_alloc"], notes["attack_alloc"]
    assert "FileNotFoundError" in notes["attack_read_disk"], notes["attack_read_disk"]
    assert (
        "review by hand" in notes["attack_read_disk"]
        and "exec()" in notes["attack_read_disk"]
    )
    assert "Error" in notes["attack_network"], notes["attack_network"]
    assert (
        "review by hand" in notes["attack_kwdefaults"]
        and "__kwdefaults__" in notes["attack_kwdefaults"]
    )
    for attack in ("attack_numpy_hof", "attack_thread"):
        assert "asks you to write" in notes[attack], (attack, notes[attack])
    assert s["server"].connections == connections, (
        "a sandboxed submission reached the grader's network"
    )
    assert not (folder.parent / "written-by-a-submission.txt").exists()
    assert _digest(watched) == before


@pytest.mark.slow
def test_the_attacks_do_fool_the_unsandboxed_path(setup):
    """The checks above can fail: graded by otter's own path (sandbox=False), every attack scores above
    its twin, and the escape changes the autograder for the submissions graded after it."""
    s = setup
    folder = s["tmp"] / "unsafe"
    twins = _submissions(s, folder)
    keep = {
        "untouched",
        "wrong_answers",
        "zz_other_student",
        "attack_runner",
        "attack_rebind",
        "attack_library",
        "attack_edit_tests",
        "attack_escape",
        "attack_read_disk",
        "attack_network",
    }
    for p in folder.iterdir():
        if p.stem not in keep:
            p.unlink()
    # the escape rewrites this copy, not the fixture's
    ag_copy = s["tmp"] / "unsafe-autograder" / "autograder.zip"
    ag_copy.parent.mkdir()
    ag_copy.write_bytes(s["ed"].autograder.read_bytes())
    for p in folder.iterdir():  # point the escape at the copy
        p.write_text(
            p.read_text().replace(
                json.dumps(str(s["ed"].autograder))[1:-1], str(ag_copy)
            )
        )
    # graded last, in this order
    later = [folder / "attack_escape.ipynb", folder / "zz_other_student.ipynb"]
    first = sorted(
        p for p in folder.iterdir() if p.suffix == ".ipynb" and p not in later
    )
    df = cr.grade(ag_copy, first, None, jobs=2, sandbox=False)
    for attack in (keep & set(twins)) - {"attack_escape"}:
        assert sum(_row(df, attack)) > sum(_row(df, twins[attack])), (
            attack,
            _row(df, attack),
            _row(df, twins[attack]),
        )
    df = cr.grade(ag_copy, later, None, jobs=1, sandbox=False)
    # graded after the escape: the autograder was rewritten
    assert sum(_row(df, "zz_other_student")) > 0


# --------------------------------------------------------------------------------------
# The sandbox itself, probed directly (what the attacks above rely on)
# --------------------------------------------------------------------------------------

PROBE = r"""
import json, os, socket, time
out = {"uid": os.getuid(), "tmp": sorted(os.listdir("/tmp"))}
root = @ROOT@
out["lib_readable"] = os.path.isfile(os.path.join(root, "lib", "classroom.py"))
for d in ("notebooks", "tests", "_build", ".git"):
    p = os.path.join(root, d)
    out["hidden_" + d] = (not os.path.exists(p)) or os.listdir(p) == []
out["hidden_secret"] = not os.path.exists(@SECRET@)
try:
    open(os.path.join(root, "lib", "pwned.py"), "w")
    out["project_writable"] = True
except OSError:
    out["project_writable"] = False
open("/tmp/left-behind", "w").write("x")
try:
    socket.create_connection(("127.0.0.1", @PORT@), timeout=3)
    out["network"] = True
except OSError:
    out["network"] = False
try:
    bytearray(50 << 30)
    out["alloc_50g"] = True
except MemoryError:
    out["alloc_50g"] = False
n = 0
try:
    while n < 500:
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
        n += 1
except OSError:
    pass
out["forks"] = n
written = 0
for d in ("/tmp", "/dev/shm"):
    for i in range(8):
        try:
            with open(f"{d}/fill-{i}", "wb") as f:
                for _ in range(16):
                    f.write(bytes(8 << 20))
                    written += 8 << 20
        except OSError:
            break
out["tmp_written"] = written
print(json.dumps(out), flush=True)
os.write(2, b"x" * (64 << 20))                          # output without end: the grader reads its end only
"""


def test_the_sandbox_hides_isolates_and_limits(setup, tmp_path):
    secret_dir = tmp_path / "instructor"
    secret_dir.mkdir()
    secret = secret_dir / "autograder.zip"
    secret.write_bytes(b"hidden tests")
    limits = cr.Limits(
        wall=60, exercise=5, memory=2 << 30, processes=32, tmp_size=256 << 20
    )
    code = (
        PROBE.replace("@ROOT@", repr(str(ROOT)))
        .replace("@SECRET@", repr(str(secret)))
        .replace("@PORT@", str(setup["server"].port))
    )
    connections = setup["server"].connections
    rc, stdout, stderr = cr.sandbox_exec(limits, [secret_dir], b"", code)
    assert rc == 0, stderr.decode()[-2000:]
    out = json.loads(stdout.decode().strip().splitlines()[-1])
    # /tmp is a private RAM disk: it holds nothing of the host's /tmp but the mount
    # points of the project and the Python it runs, when those live
    # under /tmp (a CI clone does)
    bound = [Path(p).resolve() for p in (ROOT, sys.prefix, sys.base_prefix)]
    allowed = {
        b.relative_to("/tmp").parts[0] for b in bound if Path("/tmp") in b.parents
    }
    assert out["uid"] == 65534 and set(out["tmp"]) <= allowed, (out["tmp"], allowed)
    assert out["lib_readable"] and not out["project_writable"]
    assert (
        out["hidden_notebooks"]
        and out["hidden_tests"]
        and out["hidden__build"]
        and out["hidden_.git"]
    )
    assert out["hidden_secret"]
    assert not out["network"] and setup["server"].connections == connections
    assert not out["alloc_50g"]
    assert out["forks"] < 32, out["forks"]
    # /tmp and /dev/shm are bounded RAM disks
    assert out["tmp_written"] <= 2 * (256 << 20), out["tmp_written"]
    assert len(stderr) <= 64 << 10
    assert (
        not (ROOT / "lib" / "pwned.py").exists()
        and not Path("/tmp/left-behind").exists()
    )


def test_a_runaway_test_process_is_stopped_at_the_wall_time_limit(setup):
    limits = cr.Limits(wall=4, exercise=60)
    import time

    t0 = time.perf_counter()
    res, why = cr._run_sandboxed(
        {
            "setup": "import time\ntime.sleep(600)",
            "definitions": [],
            "exercise_s": 60,
            "exercises": [],
        },
        {},
        limits,
        [],
    )
    assert res is None and "wall-time limit (4 s)" in why
    assert time.perf_counter() - t0 < 30


def test_the_screen_flags_routes_past_the_masks():
    """Unflagged before review: a getter built from a string, strings naming dunders, private
    library names (chapter 11: ``from icml25.mnl_bandits.model import _variance`` scored with no
    note). The screen only adds a note; the solutions of every chapter raise none."""
    found = cr.screen(
        [
            'import operator\n_g = operator.attrgetter("__kwdefaults__")',
            "from icml25.mnl_bandits.model import _variance",
            "def f(v):\n    return mnl._oracle(v)",
            "def g(self):\n    return self._cache",
        ]
    )
    assert ".attrgetter()" in found and "the string '__kwdefaults__'" in found
    assert "a private name (from icml25.mnl_bandits.model import _variance)" in found
    assert "a private name (mnl._oracle)" in found
    assert not any("self._cache" in f for f in found)
