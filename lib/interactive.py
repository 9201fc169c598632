"""The interactive sections (book/authoring.md, "Interactive"): one static figure with
controls that redraw it in place under a kernel, or, when a chapter becomes a page of the
book, figures pre-rendered for a grid of control values that plain HTML controls swap
(``book/_static/frames.js``). Re-exported by :mod:`icml25.common`, where chapters import
:func:`static_or_interactive` from.
"""

from __future__ import annotations

import html
import json
import os
import time
from typing import Any, Callable, Mapping

import numpy as np

__all__ = [
    "MAX_FRAMES",
    "PRERENDER_BUDGET_ENV",
    "PRERENDER_ENV",
    "static_or_interactive",
]


#: environment variable: "1" when a chapter runs to become a page of the
#: book (make book, make test)
PRERENDER_ENV = "ICML25_PRERENDER"
#: seconds a chapter may spend pre-rendering one interactive
#: section's figures (default 20)
PRERENDER_BUDGET_ENV = "ICML25_PRERENDER_BUDGET_S"
#: at most this many figures per interactive section in the book
MAX_FRAMES = 25


def static_or_interactive(
    plot: Callable[..., Any],
    controls: Mapping[str, Any],
    *,
    describe: Mapping[str, str] | None = None,
    **defaults: Any,
) -> None:
    """Draw ``plot(**defaults)`` as a figure, then add controls that redraw that same figure.

    The figure is what the rendered book, papermill and nbval see (an ordinary image output). With
    a live kernel (JupyterLab), moving a control redraws it *in place*: the image output is
    updated through its display id, so no second figure appears below the controls.

    When the chapter runs to become a page of the book (``ICML25_PRERENDER=1``, set by ``make
    book`` and ``make test``), there is no kernel behind the page, so instead of widgets it draws
    the figure for a small grid of control values (at most :data:`MAX_FRAMES`, fewer when one
    figure is slow: ``ICML25_PRERENDER_BUDGET_S`` seconds per section, default 20) and writes them
    with plain HTML controls; ``book/_static/frames.js`` swaps the figure when a control moves,
    offline and without a kernel. Sliders get up to five values (always including the default),
    dropdowns and selection sliders their options, checkboxes both states. Set
    ``ICML25_NO_WIDGETS=1`` to draw the static figure only.

    Args:
        plot: callable drawing one new matplotlib figure from keyword arguments (or
            returning it). It needs no ``plt.show()``: one inside it does nothing here.
        controls: name -> ``ipywidgets`` widget (e.g. ``FloatSlider(min=0, max=10)``); the
            widget's value is set to the default.
        describe: name -> what moving that control shows (the caption above the controls); a
            control without one is captioned by its description.
        **defaults: the values of the first figure; every control needs one.

    Raises:
        ValueError: a control has no default value, a default outside its control's range
            or options, ``describe`` names no control, or ``plot`` draws no new figure.
        TypeError: a control is not an ipywidgets widget.
    """
    if not callable(plot):
        raise TypeError(
            f"plot must be a function drawing a figure, got {type(plot).__name__}"
        )
    if not isinstance(controls, Mapping):
        raise TypeError(
            f"controls must be a mapping name -> ipywidgets widget, got {type(controls).__name__}"
        )
    missing = sorted(set(controls) - set(defaults))
    if missing:
        raise ValueError(f"controls without a default value: {missing}")
    if describe is not None and not isinstance(describe, Mapping):
        raise TypeError(
            f"describe must be a mapping control name -> text, got {type(describe).__name__}"
        )
    describe = dict(describe or {})
    unknown = sorted(set(describe) - set(controls))
    if unknown:
        raise ValueError(f"describe names no control: {unknown}")
    bad = sorted(k for k, v in describe.items() if not isinstance(v, str))
    if bad:
        raise TypeError(f"describe: the captions of {bad} are not strings")
    no_widgets = os.environ.get("ICML25_NO_WIDGETS", "0") not in ("", "0")
    prerender = os.environ.get(PRERENDER_ENV, "0") not in ("", "0")
    if not no_widgets:
        import ipywidgets as widgets

        for name, w in controls.items():
            if not isinstance(w, widgets.ValueWidget):
                raise TypeError(
                    f"control {name!r} must be an ipywidgets value widget, got {type(w).__name__}"
                )
            _check_default_fits(name, w, defaults[name])
    import matplotlib.pyplot as plt
    from IPython.display import display

    def draw(values: Mapping[str, Any]) -> Any:
        return _draw_figure(plot, values)

    t0 = time.perf_counter()
    fig = draw(defaults)
    t_draw = time.perf_counter() - t0
    handle = display(fig, display_id=True)
    plt.close(fig)
    if no_widgets:
        return
    import ipywidgets as widgets

    items = []
    for name, w in controls.items():
        what = (
            describe.get(name)
            or f"redraws the figure for another value of {getattr(w, 'description', '') or name}"
        )
        items.append(
            f"<li><code>{html.escape(name)}</code>: {html.escape(what, quote=False)}</li>"
        )
    if prerender:
        _prerendered_controls(draw, controls, defaults, items, t_draw)
        return
    for name, w in controls.items():
        w.value = defaults[name]
        if hasattr(w, "continuous_update"):
            w.continuous_update = False

    def redraw(_change: Any = None) -> None:
        values = {**defaults, **{k: w.value for k, w in controls.items()}}
        new = draw(values)
        if handle is not None:
            handle.update(new)
        plt.close(new)

    for w in controls.values():
        w.observe(redraw, names="value")
    caption = (
        "<b>Move a control to redraw the figure above, in place</b> (with a running kernel):"
        f"<ul style='margin:0'>{''.join(items)}</ul>"
    )
    display(widgets.VBox([widgets.HTML(caption), *controls.values()]))


def _option_values(w: Any) -> list[Any]:
    """The values (not the labels) a selection widget offers, in order."""
    return list(
        getattr(w, "_options_values", None)
        or [o[1] if isinstance(o, tuple) else o for o in w.options]
    )


def _check_default_fits(name: str, w: Any, default: Any) -> None:
    """A default the control cannot show is refused (a slider would clamp it silently, and
    the static figure would not be the one its controls say).

    Raises:
        ValueError: ``default`` lies outside a slider's range, is not among a selection
            widget's options, is not a bool for a checkbox, not an integer for an integer
            slider, or not a number for a number slider.
    """
    kind = type(w).__name__
    if kind in ("Checkbox", "ToggleButton"):
        if not isinstance(default, (bool, np.bool_)):
            raise ValueError(f"default {name}={default!r} must be True or False")
        return
    if kind.endswith("RangeSlider") or kind == "SelectionRangeSlider":
        return  # a pair: ipywidgets validates it when the value is set
    options = getattr(w, "options", None)
    if options is not None and not isinstance(w, (str, bytes)):
        values = _option_values(w)
        if values and default not in values:
            raise ValueError(
                f"default {name}={default!r} is not one of the control's options {values}"
            )
        return
    lo, hi = getattr(w, "min", None), getattr(w, "max", None)
    if lo is None or hi is None:
        return
    if isinstance(default, (bool, np.bool_, str, bytes)) or not isinstance(
        default, (int, float, np.integer, np.floating)
    ):
        raise ValueError(f"default {name}={default!r} is not a number")
    if (
        kind in ("IntSlider", "BoundedIntText", "IntText")
        and not float(default).is_integer()
    ):
        raise ValueError(
            f"default {name}={default!r} is not an integer (the slider would show "
            f"{int(default)} while the figure used {default!r})"
        )
    if kind == "FloatLogSlider":
        base = float(getattr(w, "base", 10.0))
        lo, hi = base**lo, base**hi
    try:
        inside = (
            float(lo) - 1e-12 * abs(float(lo))
            <= float(default)
            <= float(hi) + (1e-12 * abs(float(hi)))
        )
    except (TypeError, ValueError):
        raise ValueError(f"default {name}={default!r} is not a number") from None
    if not inside:
        raise ValueError(
            f"default {name}={default!r} lies outside the control's range [{lo}, {hi}]"
        )


def _no_show(*args: Any, **kwargs: Any) -> None:
    """Stands in for ``plt.show`` while :func:`static_or_interactive` draws a figure."""


def _draw_figure(plot: Callable[..., Any], values: Mapping[str, Any]) -> Any:
    """Call ``plot(**values)`` and return the figure it drew (the last new one).

    ``plt.show`` does nothing during the call: under the inline backend it would display
    the figure and close it, so the figure captured here (the book's frame, the widget's
    redraw) would be a fresh, empty one. A figure ``plot`` returns is used as is; other
    new figures are closed so that none is displayed twice.

    Raises:
        ValueError: ``plot`` drew no new figure and returned none (a frame would be blank).
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    before = set(plt.get_fignums())
    show = plt.show
    plt.show = _no_show
    try:
        returned = plot(**values)
    except BaseException:
        # a plot that fails leaves no half-drawn figure behind (the next figure cell
        # would display it)
        for n in set(plt.get_fignums()) - before:
            plt.close(n)
        raise
    finally:
        plt.show = show
    new = [plt.figure(n) for n in plt.get_fignums() if n not in before]
    if isinstance(returned, Figure):
        fig = returned
    elif new:
        fig = new[-1]
    else:
        name = getattr(plot, "__name__", repr(plot))
        raise ValueError(
            f"static_or_interactive: {name}({', '.join(map(str, values))}) drew no new "
            "matplotlib figure: create one in the plot function (fig, ax = "
            "plt.subplots()) or return it"
        )
    for other in new:
        if other is not fig:
            plt.close(other)
    return fig


def _control_values(w: Any, default: Any, k: int) -> list[Any]:
    """Up to ``k`` values of one control for the book's pre-rendered grid, always with ``default``."""
    import ipywidgets as widgets

    if isinstance(w, (widgets.Checkbox, widgets.ToggleButton)):
        vals = [False, True]
    elif isinstance(
        w,
        (
            widgets.SelectionSlider,
            widgets.Dropdown,
            widgets.RadioButtons,
            widgets.ToggleButtons,
            widgets.Select,
            widgets.SelectionRangeSlider,
        ),
    ):
        vals = _option_values(w)
    elif isinstance(w, (widgets.FloatLogSlider,)):
        grid = np.linspace(float(w.min), float(w.max), max(k, 1))
        vals = [float(w.base) ** g for g in grid]
    elif isinstance(
        w,
        (
            widgets.IntSlider,
            widgets.FloatSlider,
            widgets.BoundedIntText,
            widgets.BoundedFloatText,
        ),
    ):
        lo, hi = float(w.min), float(w.max)
        step = float(getattr(w, "step", 0) or 0)
        grid = np.linspace(lo, hi, max(k, 1))
        if step > 0:
            # snap to the slider's steps, never past its max
            # (0..999 by 10 once gave 1000)
            top = lo + np.floor((hi - lo) / step + 1e-9) * step
            grid = np.minimum(lo + np.round((grid - lo) / step) * step, top)
            # and drop the float residue of lo + k * step (0.1 * 3 - 0.3 = 5.6e-17 once
            # labelled a slider "alpha = 1.11e-16" where the reader set 0)
            grid = np.round(grid, 12)
        is_int = isinstance(w, (widgets.IntSlider, widgets.BoundedIntText))
        vals = [int(round(g)) if is_int else float(g) for g in grid]
    else:
        return [default]
    if not vals:
        return [default]
    # keep the default: replace the nearest value by it (numbers)
    # or put it first (options)
    if default not in vals:
        if all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals
        ) and isinstance(default, (int, float)):
            nearest = int(np.argmin([abs(float(v) - float(default)) for v in vals]))
            vals[nearest] = default
        else:
            vals = [default, *vals]
    uniq: list[Any] = []
    for v in vals:
        if not any(v == u for u in uniq):
            uniq.append(v)
    # options beyond k: keep the default and its neighbours in the list
    if len(uniq) > k:
        i = next(j for j, u in enumerate(uniq) if u == default)
        lo = min(max(0, i - k // 2), len(uniq) - k)
        uniq = uniq[lo : lo + k]
    return uniq


def _frame_grid(
    controls: Mapping[str, Any], defaults: Mapping[str, Any], n_max: int
) -> dict[str, list[Any]]:
    """Values per control whose product is at most ``n_max`` (sliders start at 5, options at 6)."""
    import ipywidgets as widgets

    ks = {}
    for name, w in controls.items():
        ks[name] = (
            2
            if isinstance(w, (widgets.Checkbox, widgets.ToggleButton))
            else (
                6
                if isinstance(
                    w,
                    (
                        widgets.SelectionSlider,
                        widgets.Dropdown,
                        widgets.RadioButtons,
                        widgets.ToggleButtons,
                        widgets.Select,
                    ),
                )
                else 5
            )
        )
    grid = {n: _control_values(w, defaults[n], ks[n]) for n, w in controls.items()}
    while int(np.prod([len(v) for v in grid.values()])) > max(n_max, 1):
        name = max(grid, key=lambda n: len(grid[n]))
        ks[name] = len(grid[name]) - 1
        grid[name] = _control_values(controls[name], defaults[name], ks[name])
    return grid


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _prerendered_controls(
    draw: Callable[[Mapping[str, Any]], Any],
    controls: Mapping[str, Any],
    defaults: Mapping[str, Any],
    items: list[str],
    t_draw: float,
) -> None:
    """The book's kernel-free interactive section: figures for a grid of values, plain HTML controls."""
    import base64
    import html
    import io
    import itertools

    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    try:
        budget = float(os.environ.get(PRERENDER_BUDGET_ENV, "20"))
    except ValueError:
        budget = 20.0
    n_max = min(MAX_FRAMES, int(budget / max(t_draw, 1e-3)))
    names = list(controls)
    if n_max < 2:
        display(
            HTML(
                f"<p class='icml25-frames-note'>This figure takes {t_draw:.0f} s to draw, too long to "
                "pre-render other values for the book: run the notebook with a kernel to move its controls "
                f"({', '.join(names)}).</p>"
            )
        )
        return
    grid = _frame_grid(controls, defaults, n_max)
    frames = {}
    for combo in itertools.product(*[range(len(grid[n])) for n in names]):
        values = {**defaults, **{n: grid[n][i] for n, i in zip(names, combo)}}
        fig = draw(values)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        plt.close(fig)
        frames[",".join(map(str, combo))] = (
            "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
        )
    e = html.escape
    rows = []
    for n in names:
        vals = grid[n]
        i0 = next(j for j, v in enumerate(vals) if v == defaults[n])
        label = e(getattr(controls[n], "description", "") or n)
        if len(vals) == 1:
            rows.append(
                f"<div class='icml25-frames-control'><span>{label}</span> <output>{e(_fmt_value(vals[0]))}"
                "</output> <small>(one value in the book)</small></div>"
            )
            continue
        labels = e(json.dumps([_fmt_value(v) for v in vals]))
        rows.append(
            f"<div class='icml25-frames-control'><label>{label} <input type='range' min='0' "
            f"max='{len(vals) - 1}' step='1' value='{i0}' data-name='{e(n)}' data-labels='{labels}'>"
            f"</label> <output>{e(_fmt_value(vals[i0]))}</output></div>"
        )
    caption = (
        f"<b>Move a control to see the figure above for other values</b> ({len(frames)} figures drawn "
        "when this page was built; with a running kernel the notebook redraws any value):"
        f"<ul style='margin:0'>{''.join(items)}</ul>"
    )
    payload = e(json.dumps({"names": names, "frames": frames}))
    display(
        HTML(
            f"<div class='icml25-frames' data-frames='{payload}'>{caption}{''.join(rows)}</div>"
        )
    )
