"""The Ray fan-out of chapter runs (icml25.runner) on a local Ray cluster, with fixture notebooks.

A notebook that kills its kernel is reported failed (well within 30 s) and does not stop the
others; a timeout is reported as such; a rerun with nothing changed executes nothing; a record
written by a Ray task equals the one `make execute` (papermill with ICML25_RESULTS_DIR) writes
for the same seed, timings and host aside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")
from icml25 import runner  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "runner"


def _strip(rec: dict) -> dict:
    rec = json.loads(json.dumps(rec))
    # measurements of the run itself, not its results: wall time and
    # the kernel's peak memory
    for k in ("wall_time_s", "peak_rss_mib", "utc", "host", "git_commit"):
        rec["provenance"].pop(k, None)
    return rec


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    res = tmp_path_factory.mktemp("results")
    out = tmp_path_factory.mktemp("executed")
    t0 = time.perf_counter()
    rs = runner.execute_all(
        [FIX / "98_tiny.ipynb", FIX / "97_dies.ipynb", FIX / "96_slow.ipynb"],
        "cpu",
        [0, 1],
        results=res,
        out_dir=out,
        wall_s=30,
        memory_gib=4,
        num_cpus=2,
        progress=False,
    )
    return res, out, rs, time.perf_counter() - t0


def test_failures_are_reported_and_do_not_stop_the_others(first_run):
    res, _, rs, _ = first_run
    by = {r.task: r for r in rs}
    assert [r.task for r in rs] == [
        "98-cpu-seed0",
        "98-cpu-seed1",
        "97-cpu-seed0",
        "97-cpu-seed1",
        "96-cpu-seed0",
        "96-cpu-seed1",
    ]
    assert by["98-cpu-seed0"].status == by["98-cpu-seed1"].status == "ok"
    for s in (0, 1):
        dead = by[f"97-cpu-seed{s}"]
        assert dead.status == "failed" and "kernel died" in dead.error, dead
        assert dead.wall_s < 30, dead.wall_s
        slow = by[f"96-cpu-seed{s}"]
        assert (
            slow.status == "timeout"
            and "wall-time limit 30 s" in slow.error
            and "code cell" in slow.error
        )
    rec = json.loads((res / "97-cpu.json").read_text())
    assert rec["status"] == "failed" and "kernel died" in rec["error"]
    table = json.loads((res / "execute-all-cpu.json").read_text())
    assert [t["status"] for t in table] == [r.status for r in rs]


def test_a_rerun_with_nothing_changed_executes_nothing(first_run):
    res, out, _, _ = first_run
    rs = runner.execute_all(
        [FIX / "98_tiny.ipynb"], "cpu", [0, 1], results=res, out_dir=out, progress=False
    )
    assert [r.status for r in rs] == ["skipped", "skipped"]
    # a failed task is not skipped on a rerun (its inputs are
    # unchanged, but it did not succeed)
    assert not runner._unchanged(runner.Task(str(FIX / "97_dies.ipynb"), "cpu", 0), res)


def test_ray_records_equal_make_execute(first_run, tmp_path):
    res, _, _, _ = first_run
    env = {**os.environ, "ICML25_RESULTS_DIR": str(tmp_path)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            "--log-level",
            "WARNING",
            "--cwd",
            str(FIX),
            "-p",
            "PROFILE",
            "cpu",
            "-p",
            "SEED",
            "1",
            str(FIX / "98_tiny.ipynb"),
            str(tmp_path / "out.ipynb"),
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    mine = _strip(json.loads((tmp_path / "98-cpu-seed1.json").read_text()))
    ray_rec = _strip(json.loads((res / "98-cpu-seed1.json").read_text()))
    assert mine == ray_rec


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        runner.execute_all([FIX / "98_tiny.ipynb"], "tpu", [0], results=tmp_path)
    with pytest.raises(ValueError, match="seeds"):
        runner.execute_all([FIX / "98_tiny.ipynb"], "cpu", [], results=tmp_path)
    with pytest.raises(ValueError, match="seeds"):
        runner.execute_all([FIX / "98_tiny.ipynb"], "cpu", [-1], results=tmp_path)
    with pytest.raises(ValueError, match="notebooks"):
        runner.execute_all([tmp_path / "nope.ipynb"], "cpu", [0], results=tmp_path)
    with pytest.raises(ValueError, match="wall_s"):
        runner.execute_all(
            [FIX / "98_tiny.ipynb"], "cpu", [0], results=tmp_path, wall_s=0
        )
    with pytest.raises(ValueError, match="chapters"):
        runner.chapter_notebooks(["98"])


def test_inputs_hash_changes_with_seed_and_notebook(tmp_path):
    a = runner.inputs_hash(runner.Task(str(FIX / "98_tiny.ipynb"), "cpu", 0))
    b = runner.inputs_hash(runner.Task(str(FIX / "98_tiny.ipynb"), "cpu", 1))
    c = runner.inputs_hash(
        runner.Task(str(ROOT / "notebooks" / "06_mincut_predictions.ipynb"), "cpu", 0)
    )
    assert len({a, b, c}) == 3


def test_ray_start_that_times_out_is_tried_again():
    """Ray's fixed 30 s wait for its raylet ran out once on a loaded CI machine and failed
    the whole run: such a start is shut down and tried again; other errors are raised."""
    calls = []

    class FakeRay:
        def init(self, **kw):
            calls.append("init")
            if len(calls) < 2:
                raise Exception("The current node timed out during startup. This ...")

        def shutdown(self):
            calls.append("shutdown")

    runner._ray_init(FakeRay(), {}, attempts=3)
    assert calls == ["init", "shutdown", "init"]

    class Broken(FakeRay):
        def init(self, **kw):
            raise ValueError("bad argument")

    with pytest.raises(ValueError, match="bad argument"):
        runner._ray_init(Broken(), {}, attempts=3)

    class Never(FakeRay):
        def init(self, **kw):
            raise Exception("The current node timed out during startup.")

    with pytest.raises(Exception, match="timed out during startup"):
        runner._ray_init(Never(), {}, attempts=2)
