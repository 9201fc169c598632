"""Every (chapter, seed) run fanned out on Ray: ``make execute-all PROFILE=cpu SEEDS="0 1 2"``.

Each task executes one chapter notebook with papermill (``-p PROFILE -p SEED``) in its own
process group, exactly as ``make execute`` does: the notebook records its metrics with
provenance through :func:`icml25.common.record_metrics` into the results folder (``cpu``:
``_build/results``; ``gpu``: ``data/results``). Per task:

- a wall-time limit and a memory limit (the resident memory of the task's process tree, polled;
  the whole group is killed past either), and the profile's thread policy (one thread per task
  on the cpu profile; ``num_gpus=1`` per task on the gpu profile, so a node with eight GPUs runs
  eight chapters at once);
- a dead kernel, a failing cell, a timeout or the memory limit is that task's failure: its record
  says so, with the failing cell, and the other tasks go on;
- a task whose inputs (the notebook, the ``icml25`` files it imports, transitively, the pins, the
  profile and the seed) are unchanged since a successful run whose record still exists is skipped.

Ray starts a local cluster by default (as many tasks at a time as there are CPUs on the cpu
profile); ``RAY_ADDRESS`` points it at an existing cluster. A ``tqdm`` bar shows tasks done,
running and failed; the end prints one line per task (status, wall time) and writes the table as
JSON (``<results>/execute-all-<profile>.json``).

Command line::

    python -m icml25.runner --profile cpu --seeds 0 1 2 [--chapters 02 06] [--wall 900]
        [--memory-gib 4] [--results DIR] [--force] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from icml25.checks import check_choice, check_int, check_positive

__all__ = [
    "Task",
    "TaskResult",
    "chapter_notebooks",
    "inputs_hash",
    "run_task",
    "execute_all",
    "main",
]

_STATE = ".runner"


def _root() -> Path:
    from icml25.common import repo_root

    return repo_root()


@dataclasses.dataclass(frozen=True)
class Task:
    """One run: a chapter notebook, a profile and a seed."""

    notebook: str
    profile: str
    seed: int

    @property
    def chapter(self) -> str:
        """The two-digit chapter number (the notebook's name starts with it)."""
        return Path(self.notebook).stem[:2]

    @property
    def name(self) -> str:
        """``NN-<profile>-seed<S>``, the task's name in the tables."""
        return f"{self.chapter}-{self.profile}-seed{self.seed}"


@dataclasses.dataclass
class TaskResult:
    """What one task did. ``status``: ``ok``, ``failed``, ``timeout``, ``memory`` or ``skipped``."""

    task: str
    chapter: str
    profile: str
    seed: int
    status: str
    wall_s: float
    error: str | None = None
    record: str | None = None
    inputs: str | None = None


def chapter_notebooks(chapters: Sequence[str] | None = None) -> list[Path]:
    """The chapter notebooks (``notebooks/NN_*.ipynb``), all or the two-digit ``chapters`` given.

    Raises:
        ValueError: a chapter in ``chapters`` has no notebook.
    """
    nbs = sorted((_root() / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if chapters is None:
        return nbs
    by = {p.stem[:2]: p for p in nbs}
    missing = [c for c in chapters if c not in by]
    if missing:
        raise ValueError(f"chapters: no notebook for {missing} (have {sorted(by)})")
    return [by[c] for c in chapters]


def _deps_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_icml25_deps", _root() / ".ci" / "deps.py"
    )
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def inputs_hash(task: Task) -> str:
    """SHA-256 of what a run depends on: the notebook, the ``icml25`` files it imports
    (transitively, as ``.ci/deps.py`` finds them), the pins, the profile and the seed."""
    deps = _deps_module()
    nb = Path(task.notebook)
    cells = json.loads(nb.read_text())["cells"]
    found: set[str] = set()
    for c in cells:
        if c["cell_type"] == "code":
            found |= deps.module_files("".join(c["source"]))
    files = sorted(deps.closure(found) | set(deps.ALWAYS))
    h = hashlib.sha256()
    h.update(nb.read_bytes())
    for f in files:
        p = _root() / f
        h.update(f.encode())
        h.update(p.read_bytes() if p.is_file() else b"<missing>")
    h.update(f"{task.profile}|{task.seed}".encode())
    return h.hexdigest()


def _record_path(task: Task, results: Path) -> Path:
    suffix = f"-seed{task.seed}" if task.seed != 0 else ""
    return results / f"{task.chapter}-{task.profile}{suffix}.json"


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except psutil.Error:
            pass
    return total


def _failing_cell(out_nb: Path) -> str | None:
    """Which cell stopped the run, from papermill's partial output notebook."""
    if not out_nb.exists():
        return None
    try:
        nb = json.loads(out_nb.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for i, c in enumerate(code):
        for o in c.get("outputs", []):
            if o.get("output_type") == "error":
                return f"code cell {i}: {o.get('ename')}: {str(o.get('evalue'))[:200]}"
    for i, c in enumerate(code):
        if c.get("metadata", {}).get("papermill", {}).get("status") == "running":
            return f"code cell {i} was running"
    return None


def run_task(
    task: Task, results: str, out_dir: str, wall_s: float, memory_gib: float
) -> TaskResult:
    """Execute one task with papermill in its own process group (a Ray task calls this).

    Args:
        task: the task.
        results: the folder its record goes to (``ICML25_RESULTS_DIR``).
        out_dir: where the executed notebook goes (``<out_dir>/<task>.ipynb``).
        wall_s: wall-time limit in seconds.
        memory_gib: limit on the resident memory of the task's process tree, GiB.

    Returns:
        The :class:`TaskResult`; a failure writes the task's record with ``status: failed``.
    """
    results_p, out_p = Path(results), Path(out_dir)
    results_p.mkdir(parents=True, exist_ok=True)
    out_p.mkdir(parents=True, exist_ok=True)
    out_nb = out_p / f"{task.name}.ipynb"
    env = {
        **os.environ,
        "ICML25_RESULTS_DIR": str(results_p.resolve()),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    if task.profile == "cpu":
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = "1"
    cmd = [
        sys.executable,
        "-m",
        "papermill",
        "--log-level",
        "WARNING",
        "--no-progress-bar",
        "--cwd",
        str(Path(task.notebook).parent),
        "-p",
        "PROFILE",
        task.profile,
        "-p",
        "SEED",
        str(task.seed),
        task.notebook,
        str(out_nb),
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    limit = int(memory_gib * 2**30)
    why: list[str] = []

    def watch() -> None:
        while proc.poll() is None:
            if time.perf_counter() - t0 > wall_s:
                why.append("timeout")
            elif _tree_rss(proc.pid) > limit:
                why.append("memory")
            if why:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return
            time.sleep(0.5)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    log = proc.communicate()[0].decode(errors="replace")
    th.join(5)
    wall = time.perf_counter() - t0
    inputs = inputs_hash(task)
    record = _record_path(task, results_p)
    if proc.returncode == 0 and not why:
        status, error = "ok", None
        if not record.exists():
            status, error = (
                "failed",
                f"the notebook recorded no metrics ({record.name})",
            )
    else:
        cell = _failing_cell(out_nb)
        if why and why[0] == "timeout":
            status, error = (
                "timeout",
                f"wall-time limit {wall_s:g} s reached ({cell or 'before the first cell ran'})",
            )
        elif why:
            status, error = (
                "memory",
                f"memory limit {memory_gib:g} GiB reached"
                + (f" ({cell})" if cell else ""),
            )
        else:
            status = "failed"
            dead = (
                "DeadKernelError" in log or "Kernel died" in log or "kernel died" in log
            )
            error = ("the kernel died" if dead else "a cell raised") + (
                f" ({cell})" if cell else ""
            )
            if not cell:
                error += ": " + " ".join(log.strip().splitlines()[-3:])[:300]
        record.write_text(
            json.dumps(
                {
                    "chapter": task.chapter,
                    "profile": task.profile,
                    "status": "failed",
                    "error": error,
                    "metrics": {},
                    "provenance": {"seed": task.seed, "wall_time_s": round(wall, 3)},
                },
                indent=2,
            )
            + "\n"
        )
    state = results_p / _STATE
    state.mkdir(exist_ok=True)
    res = TaskResult(
        task=task.name,
        chapter=task.chapter,
        profile=task.profile,
        seed=task.seed,
        status=status,
        wall_s=round(wall, 2),
        error=error,
        record=str(record),
        inputs=inputs,
    )
    (state / f"{task.name}.json").write_text(
        json.dumps(dataclasses.asdict(res), indent=1) + "\n"
    )
    return res


def _unchanged(task: Task, results: Path) -> bool:
    state = results / _STATE / f"{task.name}.json"
    record = _record_path(task, results)
    if not (state.exists() and record.exists()):
        return False
    prev = json.loads(state.read_text())
    rec = json.loads(record.read_text())
    return (
        prev.get("status") == "ok"
        and rec.get("status", "ok") != "failed"
        and prev.get("inputs") == inputs_hash(task)
    )


def _ray_init(ray: Any, kw: dict[str, Any], attempts: int = 3) -> None:
    """``ray.init(**kw)``, tried again when the local node fails to start.

    Ray waits a fixed 30 s for its raylet to register; on a loaded 2-core machine (a CI
    running notebooks in parallel) that wait once ran out and failed the whole run. A
    start that times out is shut down and tried again, up to ``attempts`` times; the last
    failure is raised.
    """
    for attempt in range(1, attempts + 1):
        try:
            ray.init(**kw)
            return
        except Exception as err:  # noqa: BLE001  (ray raises a bare Exception here)
            if "timed out during startup" not in str(err) or attempt == attempts:
                raise
            ray.shutdown()
            time.sleep(2.0 * attempt)


def execute_all(
    notebooks: Sequence[str | Path],
    profile: str,
    seeds: Sequence[int],
    *,
    results: str | Path | None = None,
    out_dir: str | Path | None = None,
    wall_s: float = 900.0,
    memory_gib: float = 4.0,
    force: bool = False,
    num_cpus: int | None = None,
    progress: bool = True,
) -> list[TaskResult]:
    """Run every (notebook, seed) as a Ray task; see the module docstring.

    Args:
        notebooks: chapter notebooks (or any notebook with a ``parameters`` cell).
        profile: ``"cpu"`` or ``"gpu"``.
        seeds: the seeds, each >= 0.
        results: where records go (default ``_build/results``, or ``data/results`` for gpu).
        out_dir: executed notebooks (default ``_build/executed-all-<profile>``).
        wall_s: per-task wall-time limit (s, > 0).
        memory_gib: per-task memory limit (GiB, > 0).
        force: run every task even when its inputs are unchanged.
        num_cpus: CPUs of a local cluster (default: all); ignored with ``RAY_ADDRESS``.
        progress: show the tqdm bar.

    Returns:
        One :class:`TaskResult` per task, in task order.

    Raises:
        ValueError: bad profile, seeds, limits or a missing notebook.
    """
    check_choice(profile, "profile", ("cpu", "gpu"))
    check_positive(wall_s, "wall_s")
    check_positive(memory_gib, "memory_gib")
    if not seeds:
        raise ValueError("seeds: give at least one seed")
    seeds = [check_int(s, "seeds", low=0) for s in seeds]
    paths = [Path(n).resolve() for n in notebooks]
    for p in paths:
        if not p.is_file():
            raise ValueError(f"notebooks: no notebook at {p}")
    root = _root()
    res_dir = (
        Path(results)
        if results is not None
        else root / ("data/results" if profile == "gpu" else "_build/results")
    )
    out = (
        Path(out_dir)
        if out_dir is not None
        else root / "_build" / f"executed-all-{profile}"
    )
    tasks = [Task(str(p), profile, s) for p in paths for s in seeds]
    done: dict[str, TaskResult] = {}
    todo = []
    for t in tasks:
        if not force and _unchanged(t, res_dir):
            done[t.name] = TaskResult(
                task=t.name,
                chapter=t.chapter,
                profile=profile,
                seed=t.seed,
                status="skipped",
                wall_s=0.0,
                record=str(_record_path(t, res_dir)),
            )
        else:
            todo.append(t)
    if todo:
        import ray
        from tqdm.auto import tqdm

        # no usage report: runs stay offline
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        started = not ray.is_initialized()
        if started:
            kw: dict[str, Any] = dict(
                include_dashboard=False, log_to_driver=False, configure_logging=False
            )
            if not os.environ.get("RAY_ADDRESS"):
                kw.update(
                    num_cpus=num_cpus or os.cpu_count(), object_store_memory=100 * 2**20
                )
            _ray_init(ray, kw)
        try:
            remote = ray.remote(
                num_cpus=1, num_gpus=1 if profile == "gpu" else 0, max_retries=0
            )(run_task)
            refs = {
                remote.remote(t, str(res_dir), str(out), wall_s, memory_gib): t
                for t in todo
            }
            bar = tqdm(
                total=len(tasks),
                initial=len(done),
                disable=not progress,
                desc=f"execute-all {profile}",
            )
            failed = 0
            pending = list(refs)
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                r = ray.get(ready[0])
                done[r.task] = r
                failed += r.status not in ("ok", "skipped")
                bar.set_postfix(
                    running=min(len(pending), num_cpus or os.cpu_count() or 1),
                    failed=failed,
                )
                bar.update(1)
            bar.close()
        finally:
            if started:
                ray.shutdown()
    ordered = [done[t.name] for t in tasks]
    res_dir.mkdir(parents=True, exist_ok=True)
    (res_dir / f"execute-all-{profile}.json").write_text(
        json.dumps([dataclasses.asdict(r) for r in ordered], indent=1) + "\n"
    )
    return ordered


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (see the module docstring).

    Returns:
        0 when every task is ok or skipped, else 1.
    """
    p = argparse.ArgumentParser(
        prog="python -m icml25.runner", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "notebooks", nargs="*", help="notebooks (default: every chapter, or --chapters)"
    )
    p.add_argument("--profile", default="cpu", choices=["cpu", "gpu"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--chapters", nargs="+", default=None)
    p.add_argument("--results", default=None)
    p.add_argument("--out", default=None)
    p.add_argument(
        "--wall", type=float, default=900.0, help="per-task wall-time limit, s"
    )
    p.add_argument(
        "--memory-gib", type=float, default=4.0, help="per-task memory limit, GiB"
    )
    p.add_argument("--force", action="store_true")
    a = p.parse_args(argv)
    nbs = a.notebooks or chapter_notebooks(a.chapters)
    t0 = time.perf_counter()
    rs = execute_all(
        nbs,
        a.profile,
        a.seeds,
        results=a.results,
        out_dir=a.out,
        wall_s=a.wall,
        memory_gib=a.memory_gib,
        force=a.force,
    )
    print(f"{'task':<22} {'status':<8} {'wall s':>8}  error")
    for r in rs:
        print(f"{r.task:<22} {r.status:<8} {r.wall_s:>8.1f}  {r.error or ''}")
    print(
        f"{len(rs)} tasks in {time.perf_counter() - t0:.1f} s: "
        + ", ".join(
            f"{s} {sum(r.status == s for r in rs)}"
            for s in ("ok", "skipped", "failed", "timeout", "memory")
        )
    )
    return 0 if all(r.status in ("ok", "skipped") for r in rs) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
