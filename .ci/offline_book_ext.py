"""Sphinx extension of the book (issue 9): pages that load without a console error, offline.

Loaded through ``sphinx.local_extensions`` in ``_config.yml`` (path "../../.ci", relative to the
staged source ``_build/<src>/``). It removes duplicate inline ``<script>`` blocks: Sphinx 7.4 adds
every body-only script that an extension registers after the builder started (sphinx-thebe's
``const THEBE_JS_URL = ...``, sphinx-togglebutton's selector) once with filename ``None`` and again
with ``''`` at ``prepare_writing``, and the second ``const`` declaration throws "Identifier
'THEBE_JS_URL' has already been declared" on every page.

It also drops the ``NN · `` that opens a chapter's title (``# 02 · <paper title>``, the chapter
contract) from the rendered page: the Chapters part of ``_toc.yml`` is numbered, so Sphinx already
prints the chapter's number before its title, in the sidebar and in the numbers of its figures,
definitions, theorems, equations and exercises (2.1, 2.2, ...). The notebook keeps its ``NN · ``.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes

CHAPTER = re.compile(r"notebooks/(\d\d)_")


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


def drop_chapter_prefix(app: Any, doctree: nodes.document) -> None:
    """Remove the leading ``NN · `` of a chapter's first title (Sphinx numbers the chapter)."""
    match = CHAPTER.match(app.env.docname)
    if match is None:
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not isinstance(section[0], nodes.title):
        return
    title = section[0]
    prefix = f"{match.group(1)} · "
    first = title[0] if len(title) else None
    if isinstance(first, nodes.Text) and first.astext().startswith(prefix):
        title.replace(first, nodes.Text(first.astext()[len(prefix) :]))


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", dedupe_scripts, priority=900)
    # before the title and toctree collectors (priority 500) read the title
    app.connect("doctree-read", drop_chapter_prefix, priority=400)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
