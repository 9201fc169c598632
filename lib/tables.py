"""Tables as every chapter shows them: numbers formatted once, no 0..n-1 index column.

:func:`icml25.common.set_plot_style` registers :func:`table_html` as IPython's HTML
formatter for DataFrames, so a chapter's ``df`` or ``display(df)`` renders through
:func:`format_table` (book/authoring.md, "Tables"). Re-exported by :mod:`icml25.common`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["format_number", "format_table", "table_html"]


def format_number(v: Any) -> str:
    """A number as the book's tables show it: 4 significant digits, thousands separated.

    Integers (and integral floats up to 1e15) keep every digit (``40,000``); other floats
    are rounded to 4 significant digits, without padding zeros (``0.1235``, ``12.35``,
    ``1,235``, ``1,000``, ``0.273``; ``1.235e-05`` below 1e-4); NaN, None and pandas'
    ``NA``/``NaT`` show as an en dash.
    Anything else (dates, time spans, strings) is ``str(v)``.
    """
    if v is None or (isinstance(v, (float, np.floating)) and np.isnan(v)):
        return "\u2013"
    if type(v).__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return "\u2013"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(
        v, (np.timedelta64, np.datetime64)
    ):  # np.timedelta64 is an np.integer
        return str(v)
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        x = float(v)
        if np.isinf(x):
            return str(x)
        if x == 0:
            return "0"
        if abs(x) < 1e3:
            # 4 significant digits first, so that 9.99995 shows 10 (not 10.000); larger
            # values keep every integer digit (12,346)
            x = float(f"{x:.4g}")
        if x.is_integer() and abs(x) < 1e15:
            return f"{x:,.0f}"
        if 1e-4 <= abs(x) < 1e15:
            digits = max(0, 3 - int(np.floor(np.log10(abs(x)))))
            # no padding zeros: a value rounded to 0.273 upstream shows 0.273, not 0.2730
            text = f"{x:,.{digits}f}"
            # strip padding zeros of the decimals only: 1000.3 once read "1," (issue 17)
            return text.rstrip("0").rstrip(".") if digits > 0 else text
        return f"{x:.4g}"
    return str(v)


def format_table(df: "pd.DataFrame") -> "pd.io.formats.style.Styler":
    """The book's one way to show a table: numbers by :func:`format_number`, no 0..n-1 index.

    A DataFrame whose index is the default ``RangeIndex`` (0, 1, 2, ... without a name) is
    shown without it; a meaningful index (method names, a named column) stays. Numeric row
    and column labels are formatted like the cells.
    :func:`set_plot_style` makes this the HTML of every DataFrame a chapter shows.

    Args:
        df: a ``pandas.DataFrame``.

    Returns:
        a ``pandas`` Styler (its ``to_html()`` is what the book renders).

    Raises:
        TypeError: ``df`` is not a DataFrame.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(
            f"format_table takes a pandas DataFrame, got {type(df).__name__}"
        )
    # the class pandas gives its own HTML tables, which the book's theme styles, and the
    # table's kind where its maker names one (df.attrs["icml25_class"], e.g. the claims
    # tables' "icml25-claims", which book/_static/book.css lays out)
    kind = df.attrs.get("icml25_class", "")
    if not (isinstance(kind, str) and re.fullmatch(r"[a-z0-9-]*", kind)):
        raise ValueError(f"df.attrs['icml25_class'] must be a CSS class, got {kind!r}")
    styler = df.style.format(format_number).set_table_attributes(
        f'class="{" ".join(["dataframe", kind]).strip()}"'
    )
    # numeric row and column labels too (an eta grid of 0.30000000000000004 reads 0.3)
    styler = styler.format_index(format_number, axis=0).format_index(
        format_number, axis=1
    )
    if isinstance(df.index, pd.RangeIndex) and df.index.name is None:
        if df.index.start == 0 and df.index.step == 1:
            styler = styler.hide(axis="index")
    return styler


#: a longer or wider table keeps pandas' own (truncated) HTML: a Styler renders every cell
MAX_ROWS, MAX_COLUMNS = 60, 30


def table_html(df: Any) -> str:
    """The HTML of :func:`format_table` (IPython's formatter for DataFrames); pandas' own
    truncated HTML for a table over :data:`MAX_ROWS` rows or :data:`MAX_COLUMNS` columns,
    or one the Styler cannot render (a repeated row or column label)."""
    if len(df) > MAX_ROWS or df.shape[1] > MAX_COLUMNS:
        return df._repr_html_()
    try:
        return format_table(df).to_html()
    except (KeyError, ValueError):
        return df._repr_html_()
