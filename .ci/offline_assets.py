"""Fetch the book's browser assets from the npm registry so the HTML book reads fully offline.

The rendered book needs three JavaScript libraries that Jupyter Book and MyST-NB otherwise load
from CDNs at read time: MathJax 3 (math), RequireJS and the Jupyter widget manager
(``@jupyter-widgets/html-manager``'s ``embed-amd.js``, which renders saved widget state; its
Font Awesome fonts sit next to it). This script downloads each package's tarball with
``npm pack`` (the registry's own client; exact versions, sha512 integrity checked here), unpacks
the files the book uses into DEST, adds our glue script ``offline_assets.widgets.js`` (as
``html-manager/widgets-offline.js``), and writes ``DEST/.stamp``. ``_config.yml`` lists DEST in
``html_static_path`` ("../offline-assets", relative to the staged book source ``_build/src``), so
Sphinx copies the files to ``_build/html/_static/`` and the pages reference them by relative URL.

It runs before ``make test`` enters its offline namespace (like ``pip install``); with the stamp
up to date it does nothing. Nothing is ever fetched from a CDN, at build or at read time.

Usage: python .ci/offline_assets.py [DEST]      (default: _build/offline-assets)
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name, exact version, npm dist.integrity (sha512), licence, files to keep
# (prefixes inside package/)
PACKAGES: list[dict] = [
    {
        "name": "mathjax",
        "version": "3.2.2",
        "integrity": "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        "license": "Apache-2.0",
        "keep": [
            "es5/tex-mml-chtml.js",
            "es5/core.js",
            "es5/loader.js",
            "es5/startup.js",
            "es5/a11y/",
            "es5/adaptors/",
            "es5/input/",
            "es5/output/",
            "es5/sre/",
            "es5/ui/",
            "LICENSE",
            "package.json",
        ],
        "dest": "mathjax",
    },
    {
        "name": "requirejs",
        "version": "2.3.8",
        "integrity": "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        "license": "MIT",
        "keep": ["require.js", "package.json"],
        "dest": "requirejs",
    },
    {
        "name": "@jupyter-widgets/html-manager",
        "version": "1.0.15",
        "integrity": "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        "license": "BSD-3-Clause",
        # embed-amd.js and the Font Awesome files it references relative to itself
        "keep": [
            "dist/embed-amd.js",
            "dist/*.woff2",
            "dist/*.woff",
            "dist/*.ttf",
            "dist/*.eot",
            "dist/*.svg",
            "LICENSE",
            "package.json",
        ],
        "dest": "html-manager",
    },
]


def _wanted(member: str, keep: list[str]) -> str | None:
    """Path of a tarball member relative to package/, if the book needs it."""
    if not member.startswith("package/"):
        return None
    rel = member[len("package/") :]
    for pattern in keep:
        if pattern.endswith("/") and rel.startswith(pattern):
            return rel
        if "*" in pattern:
            folder, _, suffix = pattern.partition("*")
            if (
                rel.startswith(folder)
                and rel.endswith(suffix)
                and "/" not in rel[len(folder) :]
            ):
                return rel
        elif rel == pattern:
            return rel
    return None


# our glue script (RequireJS path of the widget manager, MathJax
# 2 API for widget labels)
GLUE = Path(__file__).with_name("offline_assets.widgets.js")
GLUE_DEST = "html-manager/widgets-offline.js"


def _stamp_text() -> str:
    glue = hashlib.sha256(GLUE.read_bytes()).hexdigest()
    return json.dumps(
        [(p["name"], p["version"], p["integrity"]) for p in PACKAGES]
        + [GLUE_DEST, glue],
        indent=1,
    )


def fetch(dest: Path) -> None:
    stamp = dest / ".stamp"
    if stamp.exists() and stamp.read_text() == _stamp_text():
        print(f"offline_assets: {dest} is up to date")
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "offline_assets: npm is missing (Debian: apt-get install -y npm)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp) / "assets"
        for pkg in PACKAGES:
            spec = f"{pkg['name']}@{pkg['version']}"
            out = subprocess.run(
                [npm, "pack", spec, "--json", "--silent", "--pack-destination", tmp],
                capture_output=True,
                text=True,
                cwd=tmp,
                timeout=600,
            )
            if out.returncode != 0:
                raise SystemExit(
                    f"offline_assets: npm pack {spec} failed:\n{out.stderr}"
                )
            filename = (
                json.loads(out.stdout)[0]["filename"].replace("@", "").replace("/", "-")
            )
            tarball = Path(tmp) / filename
            data = tarball.read_bytes()
            digest = (
                "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
            )
            if digest != pkg["integrity"]:
                raise SystemExit(
                    f"offline_assets: {spec}: integrity {digest} != pinned {pkg['integrity']}"
                )
            n = 0
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                for member in tar.getmembers():
                    rel = _wanted(member.name, pkg["keep"]) if member.isfile() else None
                    if rel is None:
                        continue
                    target = staging / pkg["dest"] / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
                    n += 1
            print(
                f"offline_assets: {spec} ({pkg['license']}): {n} files -> {dest / pkg['dest']}"
            )
        shutil.copy2(GLUE, staging / GLUE_DEST)
        (staging / ".stamp").write_text(_stamp_text())
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, dest)


if __name__ == "__main__":
    fetch(
        Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "offline-assets"
    )
