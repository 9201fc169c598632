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
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return {canon(r.split("==")[0]): r.split("==")[1] for r in pip if "==" in r}


def direct_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    names = {canon(re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0]) for r in reqs}
    return names - {"icml25"}


def test_environment_yml_pins_equal_constraints():
    pins, env = constraints(), environment_pins()
    mismatched = {n: (v, pins.get(n)) for n, v in env.items() if pins.get(n) != v}
    assert not mismatched, f"environment.yml and constraints.txt disagree (env, constraints): {mismatched}"


def test_environment_yml_lists_every_direct_dependency():
    missing = direct_dependencies() - set(environment_pins())
    assert not missing, f"direct dependencies missing from environment.yml: {sorted(missing)} (run make lock)"


def test_constraints_pin_every_direct_dependency():
    missing = direct_dependencies() - set(constraints())
    assert not missing, f"direct dependencies missing from constraints.txt: {sorted(missing)} (run make lock)"


def test_torch_is_pinned_to_the_cpu_wheel_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_req = [r for r in project["dependencies"] if canon(r).startswith("torch")]
    assert torch_req == ["torch>=2.5,<2.14"]
    major, minor = (int(x) for x in constraints()["torch"].split(".")[:2])
    assert (2, 5) <= (major, minor) < (2, 14)
