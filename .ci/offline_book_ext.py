"""Sphinx extension of the book (issue 9): pages that load without a console error, offline.

Loaded through ``sphinx.local_extensions`` in ``_config.yml`` (path "../../.ci", relative to the
staged source ``_build/<src>/``). It removes duplicate inline ``<script>`` blocks: Sphinx 7.4 adds
every body-only script that an extension registers after the builder started (sphinx-thebe's
``const THEBE_JS_URL = ...``, sphinx-togglebutton's selector) once with filename ``None`` and again
with ``''`` at ``prepare_writing``, and the second ``const`` declaration throws "Identifier
'THEBE_JS_URL' has already been declared" on every page.
"""

from __future__ import annotations

from typing import Any


def _script_key(js: Any) -> tuple:
    filename = getattr(js, "filename", js) or ""
    attributes = getattr(js, "attributes", {}) or {}
    return (filename, tuple(sorted((k, str(v)) for k, v in attributes.items())))


def dedupe_scripts(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """Keep the first of identical script entries of ``context['script_files']``."""
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set[tuple] = set()
    unique = []
    for js in scripts:
        key = _script_key(js)
        if key in seen:
            continue
        seen.add(key)
        unique.append(js)
    scripts[:] = unique


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", dedupe_scripts, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
