"""The learner's path in JupyterLab itself (issue 18), offline, in Debian's chromium.

``make learn`` as a learner meets it: the learner copy of chapter 02 (icml25.learner) is opened in
a JupyterLab server on 127.0.0.1 (token auth, no other network), every cell is run with
*Run All*, and then:

- the chapter runs without an error output;
- MyST renders (jupyterlab-myst): the chapter's definition and an exercise appear as rendered
  directives, and no raw ``{prf:definition}`` / ``{exercise}`` fence is left in the page text;
- moving a slider of the interactive section redraws the one figure above it (its image
  changes; no second figure appears);
- ``grader.check`` on an unfilled stub says which function is still to write.

Skips without chromium or JupyterLab. ``make test-browser`` runs it after the book's browser test.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("ICML25_CHROMIUM", "/usr/bin/chromium")
CHAPTER = "02_vmf_exploration"
SCREENSHOTS = Path(
    os.environ.get("ICML25_SCREENSHOTS", ROOT / "_build" / "screenshots")
)
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"no chromium at {CHROMIUM} (make system-deps)",
    ),
    pytest.mark.skipif(
        not (BIN / "jupyter-lab").exists(),
        reason="JupyterLab is not installed (the lab extra)",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    from icml25 import learner

    work = tmp_path_factory.mktemp("learn")
    nb = learner.make_learner_copy(ROOT / "notebooks" / f"{CHAPTER}.ipynb", work)
    settings = work / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # render every cell (no windowing), so that the page text holds the whole notebook
    (settings / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"})
    )
    apputils = work / "settings" / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True)
    (apputils / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    port, token = _free_port(), "icml25-learner-test"
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(work / "settings"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        "ICML25_RESULTS_DIR": str(work / "results"),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    log = open(work / "lab.log", "w")
    proc = subprocess.Popen(
        [
            str(BIN / "jupyter-lab"),
            "--no-browser",
            f"--ServerApp.port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={nb.parent}",
            "--LabApp.expose_app_in_browser=True",
            "--ServerApp.port_retries=0",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=nb.parent,
    )
    url = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() - t0 > 60:
                proc.kill()
                pytest.fail(
                    f"JupyterLab did not start: {(work / 'lab.log').read_text()[-2000:]}"
                )
            time.sleep(0.5)
    yield {"url": url, "token": token, "notebook": nb}
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


RUN_ALL_JS = """
async () => {
  const app = window.jupyterapp;
  const t0 = Date.now();
  while (!(app.shell.currentWidget && app.shell.currentWidget.sessionContext
           && app.shell.currentWidget.sessionContext.session
           && app.shell.currentWidget.sessionContext.session.kernel)) {
    if (Date.now() - t0 > 60000) { return 'no kernel'; }
    await new Promise(r => setTimeout(r, 200));
  }
  const panel = app.shell.currentWidget;
  await panel.sessionContext.ready;
  await app.commands.execute('notebook:run-all-cells');
  return 'started';
}
"""

# done when every code cell has an execution count and the kernel is idle
DONE_JS = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = Array.from(panel.content.model.cells);
  const code = cells.filter(c => c.type === 'code');
  const pending = code.filter(c => c.executionCount === null || c.executionCount === undefined);
  const status = panel.sessionContext.session.kernel.status;
  return {n: code.length, pending: pending.length, status};
}
"""

ERRORS_JS = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const out = [];
  Array.from(panel.content.model.cells).forEach((c, i) => {
    if (c.type !== 'code') return;
    const o = c.outputs.toJSON();
    o.forEach(x => { if (x.output_type === 'error') out.push(i + ': ' + x.ename + ': ' + x.evalue); });
  });
  return out;
}
"""


def test_learner_copy_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-proxy-server", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        external = []
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(lab["url"])
                or route.request.url.startswith(("data:", "blob:"))
                else (external.append(route.request.url), route.abort())
            ),
        )
        page.goto(f"{lab['url']}/lab/tree/{lab['notebook'].name}?token={lab['token']}")
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
            "&& window.jupyterapp.shell.currentWidget.content",
            timeout=90_000,
        )
        t0 = time.time()
        # resolves when the last cell has run
        assert page.evaluate(RUN_ALL_JS) == "started"
        while True:
            state = page.evaluate(DONE_JS)
            if state["pending"] == 0 and state["status"] == "idle":
                break
            assert time.time() - t0 < 420, f"the chapter did not finish: {state}"
            time.sleep(1)
        run_s = time.time() - t0
        errors = page.evaluate(ERRORS_JS)
        assert not errors, f"cells with an error output: {errors}"

        notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
        text = notebook.inner_text()
        # MyST rendered: no raw directive fences; the definition
        # and the exercises are there
        for raw in (
            "{prf:definition}",
            "{prf:theorem}",
            "{exercise}",
            "{solution-start}",
        ):
            assert raw not in text, f"raw MyST left in the page: {raw}"
        assert (
            page.locator(".jp-Notebook .jp-MarkdownCell :is(aside, div).proof").count()
            >= 1
            or "Definition" in text
        ), "the chapter's definition is not rendered"
        assert "Exercise" in text

        # grader.check on an unfilled stub says what is still to write
        assert "is still to write (exercise ex02-" in text

        # a slider redraws the one figure above it
        sliders = page.locator(".jp-OutputArea .widget-slider").first
        sliders.scroll_into_view_if_needed()
        out_area = sliders.locator("xpath=ancestor::div[contains(@class,'jp-Cell')][1]")
        imgs = out_area.locator(".jp-OutputArea-output img")
        n_before = imgs.count()
        assert n_before == 1, (
            f"expected one figure in the interactive cell, found {n_before}"
        )
        before = imgs.first.get_attribute("src")
        out_area.screenshot(path=str(SCREENSHOTS / "lab-02-slider-before.png"))
        handle = sliders.locator(".noUi-handle").first
        handle.focus()
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        t1 = time.time()
        while imgs.first.get_attribute("src") == before and time.time() - t1 < 60:
            time.sleep(0.5)
        after = imgs.first.get_attribute("src")
        assert after != before, "moving the slider did not redraw the figure"
        assert imgs.count() == 1, (
            "a second figure appeared instead of the first being redrawn"
        )
        out_area.screenshot(path=str(SCREENSHOTS / "lab-02-slider-after.png"))
        page.screenshot(path=str(SCREENSHOTS / "lab-02-top.png"))
        browser.close()
    assert not external, f"requests outside the local server: {external[:5]}"
    print(f"learner copy of {CHAPTER} ran in JupyterLab in {run_s:.0f} s")
