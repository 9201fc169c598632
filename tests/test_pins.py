"""The three places that pin dependencies agree: pyproject.toml, constraints.txt, environment.yml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canon(name)] = version
    return pins


def environment_pins() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(
        d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d
    )
    return {canon(r.split("==")[0]): r.split("==")[1] for r in pip if "==" in r}


def direct_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [
        r for extra in project["optional-dependencies"].values() for r in extra
    ]
    names = {canon(re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0]) for r in reqs}
    return names - {"icml25"}


def test_environment_yml_pins_equal_constraints():
    pins, env = constraints(), environment_pins()
    mismatched = {n: (v, pins.get(n)) for n, v in env.items() if pins.get(n) != v}
    assert not mismatched, (
        f"environment.yml and constraints.txt disagree (env, constraints): {mismatched}"
    )


def test_environment_yml_lists_every_direct_dependency():
    missing = direct_dependencies() - set(environment_pins())
    assert not missing, (
        f"direct dependencies missing from environment.yml: {sorted(missing)} (run make lock)"
    )


def test_constraints_pin_every_direct_dependency():
    missing = direct_dependencies() - set(constraints())
    assert not missing, (
        f"direct dependencies missing from constraints.txt: {sorted(missing)} (run make lock)"
    )


def test_torch_is_pinned_to_the_cpu_wheel_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_req = [r for r in project["dependencies"] if canon(r).startswith("torch")]
    assert torch_req == ["torch>=2.5,<2.14"]
    major, minor = (int(x) for x in constraints()["torch"].split(".")[:2])
    assert (2, 5) <= (major, minor) < (2, 14)


def _extra_requirements(extra: str) -> list:
    """The requirements of one extra of pyproject.toml, with icml25[...] self-references expanded."""
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    out, todo, seen = list(map(Requirement, project["dependencies"])), [extra], set()
    while todo:
        e = todo.pop()
        if e in seen:
            continue
        seen.add(e)
        for r in map(Requirement, extras[e]):
            if canon(r.name) == "icml25":
                todo.extend(r.extras)
            else:
                out.append(r)
    return out


def test_lab_extra_resolves_under_constraints():
    """The learner's install (`pip install -c constraints.txt -e ".[lab]"`) resolves: every package
    it needs, transitively (from the installed distributions' metadata), is pinned in
    constraints.txt at a version its dependants accept. Offline, so no pip resolution is run."""
    from importlib import metadata

    from packaging.markers import default_environment
    from packaging.requirements import Requirement

    pins = constraints()
    problems, seen = [], set()
    todo = [(r, "pyproject [lab]") for r in _extra_requirements("lab")]
    while todo:
        req, by = todo.pop()
        name = canon(req.name)
        pin = pins.get(name)
        # the venv's own tools (.ci/lock.py)
        if pin is None and name in {"pip", "setuptools", "wheel"}:
            continue
        if pin is None:
            problems.append(f"{name} (needed by {by}) is not pinned")
            continue
        if req.specifier and not req.specifier.contains(pin, prereleases=True):
            problems.append(
                f"{name}=={pin} does not satisfy {req.specifier} (needed by {by})"
            )
        key = (name, tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name} is pinned but not installed in this venv")
            continue
        for dep in map(Requirement, dist.requires or []):
            envs = [{**default_environment(), "extra": e} for e in (req.extras or {""})]
            if dep.marker is None or any(dep.marker.evaluate(env) for env in envs):
                todo.append((dep, f"{name}{list(req.extras) if req.extras else ''}"))
    assert not problems, "\n".join(sorted(set(problems)))
    assert {"jupyterlab", "jupyterlab-myst", "nbstripout", "otter-grader"} <= {
        k[0] for k in seen
    }
