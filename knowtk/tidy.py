"""How knowtk's DataFrames look in a notebook: ``TidyFrame``, a DataFrame whose HTML is formatted for reading.

The values are never changed; only the picture is: text left-aligned (pandas right-aligns every cell),
identifiers and paths on one line (``dec-2026-021`` never wraps to ``dec-2026-`` / ``021``), floats
rounded to three decimals, a SHA-256 or commit shown by its first 12 hex digits with the whole value
on hover (the ``title`` attribute), missing values as ``—``. A frame derived from one (a column
selection, ``assign``, ``query``, ``head``) stays a ``TidyFrame``. ``tidy_html(frame)`` renders any
DataFrame so. Imported when a frame is built (``knowtk.frames.build_frame``): it needs pandas.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Hashable
from typing import Any

import pandas as pd

__all__ = ["MAX_ROWS", "TidyFrame", "tidy_html"]

#: rows drawn before the rest is summarised in a line (pandas' own default display cuts at 60 too)
MAX_ROWS = 60
_HASH_DIGITS = 12
_ONE_LINE = {"id", "path", "receipt", "chain", "case", "via", "expected_id", "counted_id", "record", "value"}


def _is_hash(name: str) -> bool:
    return "sha256" in name or name in ("checkpoint", "commit", "plan", "snapshot")


def _one_line(name: str) -> bool:
    return name in _ONE_LINE or name.endswith(("_id", "_path", "_at", "_date")) or name in ("at", "start", "end")


def _short_hash(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return "—"
    text = str(value)
    if len(text) <= _HASH_DIGITS:
        return html.escape(text)
    return f"<span title='{html.escape(text)}'>{html.escape(text[:_HASH_DIGITS])}…</span>"


def tidy_html(frame: pd.DataFrame, *, max_rows: int = MAX_ROWS, index: bool = True) -> str:
    """``frame`` as an HTML table for reading (see the module); rows past ``max_rows`` summarised in one line;
    ``index=False`` leaves the row labels out."""
    shown = frame.head(max_rows)
    names = [str(c) for c in shown.columns]
    # a table id from its columns, not random: a notebook run again stores the same HTML
    uuid = hashlib.sha1(repr(names).encode()).hexdigest()[:10]
    styler = shown.style.set_uuid(uuid).format(precision=3, na_rep="—", escape="html")
    hashes: list[Hashable] = [c for c, n in zip(shown.columns, names, strict=True) if _is_hash(n)]
    if hashes:
        styler = styler.format(_short_hash, subset=hashes)
    text = [c for c in shown.columns if not pd.api.types.is_numeric_dtype(shown[c].dtype) or c in hashes]
    keep = [c for c, n in zip(shown.columns, names, strict=True) if _one_line(n) or c in hashes]
    # one rule per column (not per cell): the page stays small
    rules: dict[Any, Any] = {}
    for column in text:
        rules.setdefault(column, []).append({"selector": "", "props": "text-align: left"})
    for column in keep:
        rules.setdefault(column, []).append({"selector": "", "props": "white-space: nowrap"})
    styler = styler.set_table_styles(
        [{"selector": "th", "props": "text-align: left"}, {"selector": "td", "props": "vertical-align: top"}]
    )
    if rules:
        styler = styler.set_table_styles(rules, overwrite=False)
    if not index:
        styler = styler.hide(axis="index")
    table = styler.to_html()
    if len(frame) > len(shown):
        table += f"<p>… {len(frame) - len(shown)} more rows ({len(frame)} in all; the frame holds every one)</p>"
    return table


class TidyFrame(pd.DataFrame):
    """A ``pandas.DataFrame`` that draws itself with :func:`tidy_html` in a notebook; everything else as pandas."""

    @property
    def _constructor(self) -> Any:
        return TidyFrame

    def _repr_html_(self) -> str:
        return tidy_html(self)
