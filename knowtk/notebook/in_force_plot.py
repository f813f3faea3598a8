"""The "decisions in force" picture: one bar per record from its start to its end, the supersession links drawn.

It draws ``Store.in_force(...)`` (``knowtk.query.in_force``): a record in force without an end runs to the
right edge with an arrow; a span that ended because a replacement started is shaded and hatched, one that
expired is hatched the other way; an arrow goes from each superseded record's end to the start of the record
that superseded it. With ``valid_at`` a vertical line marks the instant and the bars in force then are drawn
bold. Artists carry ``gid``s (``span:<id>``, ``link:<from>-><to>``, ``valid-at``) for tests and tools.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import matplotlib.dates as mdates
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch, Patch

from knowtk.model.datevalues import parse_bound
from knowtk.notebook.draw import (
    COLUMN_INCHES,
    MIN_FONT,
    count_argument,
    date_axis,
    draw_empty,
    is_missing,
    legend_below,
    new_axes,
    require_columns,
    set_title,
    shorten,
    text_or_none,
    time_zone,
)

__all__ = ["EMPTY_IN_FORCE_TEXT", "plot_in_force"]

EMPTY_IN_FORCE_TEXT = "no record placed in time"
_COLORS = {None: "#2f6db5", "superseded": "#9aa5b1", "expired": "#c98b3a"}
_HATCH = {None: "", "superseded": "///", "expired": "xxx"}


def _num(stamp: Any) -> float:
    return float(mdates.date2num(pd.Timestamp(stamp).tz_convert("UTC").tz_localize(None).to_pydatetime()))


def _placed(frame: pd.DataFrame, max_rows: int) -> tuple[pd.DataFrame, int, int]:
    """(the rows to draw, in the frame's order, how many had no start, how many were left past max_rows)."""
    placed = frame[frame["start"].notna()].reset_index(drop=True)
    unplaced = len(frame) - len(placed)
    left = max(0, len(placed) - max_rows)
    return placed.iloc[:max_rows], unplaced, left


def _in_force(rows: pd.DataFrame, valid_at: str | None, marked: datetime | None) -> set[str]:
    """The ids in force at ``valid_at``: the frame's own answer when it was asked with one (``in_force``), else
    read from the spans (a replacement's start exclusive, any other end inclusive)."""
    if marked is None:
        return set()
    if "in_force" in rows.columns and rows["in_force"].notna().any():
        return {
            str(rid) for rid, held in zip(rows["id"], rows["in_force"], strict=True) if not is_missing(held) and held
        }
    last = parse_bound("valid_at", valid_at, upper=True)
    assert last is not None
    held = set()
    for rid, start, end, ended in zip(rows["id"], rows["start"], rows["end"], rows["ended_by"], strict=True):
        after = is_missing(end) or (end > marked if ended == "superseded" else end >= marked)
        if start <= pd.Timestamp(last) and after:
            held.add(str(rid))
    return held


def _right_edge(rows: pd.DataFrame, marked: datetime | None) -> float:
    """Where an open span ends on the picture: a little past the latest start, end or the marked instant."""
    stamps = [*rows["start"].dropna(), *rows["end"].dropna()]
    if marked is not None:
        stamps.append(pd.Timestamp(marked))
    nums = [_num(s) for s in stamps]
    low, high = min(nums), max(nums)
    return high + max((high - low) * 0.08, 10.0)


def _draw_spans(ax: Axes, rows: pd.DataFrame, right: float, in_force: set[str]) -> dict[str, tuple[float, float, int]]:
    """One bar per row (y = its position); returns id -> (x0, x1, y) for the links."""
    where: dict[str, tuple[float, float, int]] = {}
    for y, (_, row) in enumerate(rows.iterrows()):
        rid = str(row["id"])
        ended = text_or_none(row.get("ended_by"))
        x0 = _num(row["start"])
        x1 = right if is_missing(row["end"]) else max(_num(row["end"]), x0 + 0.5)
        bold = rid in in_force
        ax.barh(y, x1 - x0, left=x0, height=0.6, color=_COLORS.get(ended, _COLORS[None]), alpha=0.9 if bold else 0.6,
                hatch=_HATCH.get(ended, ""), edgecolor="#1b1b1b" if bold else "#555555",
                linewidth=2.0 if bold else 0.6, gid=f"span:{rid}")  # fmt: skip
        if is_missing(row["end"]):
            ax.annotate("", xy=(right, y), xytext=(right - (right - x0) * 0.02 - 1, y),
                        arrowprops={"arrowstyle": "->", "color": "#1b1b1b"})  # fmt: skip
        where[rid] = (x0, x1, y)
    return where


def _draw_links(ax: Axes, rows: pd.DataFrame, where: dict[str, tuple[float, float, int]]) -> int:
    """An arrow from each superseded record's end to its replacement's start; returns how many were drawn."""
    drawn = 0
    for _, row in rows.iterrows():
        rid, to = str(row["id"]), text_or_none(row.get("superseded_by"))
        if to is None or rid not in where or to not in where:
            continue
        (_, x1, y0), (x0, _, y1) = where[rid], where[to]
        link = FancyArrowPatch((x1, y0), (x0, y1), arrowstyle="-|>", mutation_scale=10, color="#444444",
                               linewidth=1.0, connectionstyle="arc3,rad=-0.2", gid=f"link:{rid}->{to}")  # fmt: skip
        ax.add_patch(link)
        drawn += 1
    return drawn


def plot_in_force(
    frame: pd.DataFrame,
    *,
    valid_at: str | None = None,
    tz: str = "UTC",
    ax: Axes | None = None,
    title: str | None = None,
    max_rows: int = 60,
) -> Axes:
    """Draw ``Store.in_force(...)``'s frame: a bar per record from start to end, supersession links, and with
    ``valid_at`` (what ``validAt`` takes) the instant marked and the records in force then in bold. Rows without
    a start are counted in the title. Returns the Axes (a new figure sized to the rows when ``ax`` is None)."""
    require_columns(frame, "frame", ("id", "title", "start", "end", "ended_by", "superseded_by"))
    zone = time_zone(tz)
    max_rows = count_argument("max_rows", max_rows, minimum=1)
    marked = None if valid_at is None else parse_bound("valid_at", valid_at, upper=False)
    main_title = title if title is not None else "In force"
    rows, unplaced, left = _placed(frame, max_rows)
    if rows.empty:
        ax, _ = new_axes(ax, COLUMN_INCHES, 2.6)
        return draw_empty(ax, EMPTY_IN_FORCE_TEXT, main_title)
    ax, _ = new_axes(ax, COLUMN_INCHES, min(max(2.2 + 0.32 * len(rows), 3.0), 16.0))
    in_force = _in_force(rows, valid_at, marked)
    right = _right_edge(rows, marked)
    where = _draw_spans(ax, rows, right, in_force)
    links = _draw_links(ax, rows, where)
    if marked is not None:
        ax.axvline(_num(marked), color="#c0392b", linewidth=1.4, linestyle="--", gid="valid-at")
    labels = [f"{row['id']}  {shorten(text_or_none(row['title']) or '', 40)}" for _, row in rows.iterrows()]
    ax.set_yticks(range(len(rows)), labels, fontsize=MIN_FONT)
    ax.set_ylim(len(rows) - 0.4, -0.6)
    date_axis(ax, zone)
    notes = [f"{len(rows)} record{'s' if len(rows) != 1 else ''}", f"{links} link{'s' if links != 1 else ''}"]
    if marked is not None:
        notes.append(f"{len(in_force)} in force at {valid_at}")
    if unplaced:
        notes.append(f"{unplaced} without a start left out")
    if left:
        notes.append(f"{left} more past max_rows")
    set_title(ax, main_title, notes, COLUMN_INCHES)
    drawn = {text_or_none(v) for v in rows["ended_by"]}
    kinds = ((None, "in force (to its end)"), ("superseded", "ended: superseded"), ("expired", "ended: expires_at"))
    handles: list[Artist] = [
        Patch(facecolor=_COLORS[k], hatch=_HATCH[k], edgecolor="#555555", label=label)
        for k, label in kinds
        if k in drawn
    ]
    legend_below(ax, handles, 2.6)
    return ax
