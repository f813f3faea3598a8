"""``plot_history``: a record's (or the store's) changes on a date axis: one lane per record, a mark per receipt
(by operation) and per Git commit; ``store.history(id).plot()`` draws it."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import matplotlib.dates as mdates
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from knowtk.notebook.draw import MIN_FONT, date_axis, draw_empty, new_axes, palette

__all__ = ["OPERATION_MARKERS", "plot_history"]

OPERATION_MARKERS = {
    "create": "o",
    "update": "s",
    "supersede": ">",
    "withdraw": "X",
    "reinstate": "P",
    "commit": "|",
}


def plot_history(frame: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None) -> Axes:
    """``frame``: ``Result.to_frame()`` of ``knowledge_history`` (a row per record a receipt touched, per commit)."""
    ids = [i for i in dict.fromkeys(frame["id"].dropna()) if isinstance(i, str)] if len(frame) else []
    lanes = ids or ["(commits)"]
    ax, _new = new_axes(ax, 10.0, max(2.0, 0.6 * len(lanes) + 1.5))
    title = title or "Changes made through knowtk"
    if frame.empty:
        return draw_empty(ax, "no receipt yet", title)
    colors = dict(zip(OPERATION_MARKERS, palette(len(OPERATION_MARKERS)), strict=True))
    lane_of = {rid: n for n, rid in enumerate(lanes)}
    for _, row in frame.iterrows():
        operation = str(row["operation"])
        lane = lane_of.get(row["id"], 0) if isinstance(row["id"], str) else 0
        when = mdates.date2num(pd.Timestamp(row["at"]).to_pydatetime())
        ax.plot(
            [when],
            [lane],
            marker=OPERATION_MARKERS.get(operation, "o"),
            markersize=11,
            color=colors.get(operation, "#555555"),
            linestyle="none",
            gid=f"{operation}:{row['receipt']}",
        )
    ax.set_yticks(range(len(lanes)), lanes, fontsize=MIN_FONT + 1)
    ax.set_ylim(-0.7, len(lanes) - 0.3)
    ax.invert_yaxis()
    date_axis(ax, UTC)
    used = [op for op in OPERATION_MARKERS if op in set(frame["operation"])]
    handles: list[Any] = [
        Line2D([], [], marker=OPERATION_MARKERS[op], color=colors[op], linestyle="none", markersize=9, label=op)
        for op in used
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=MIN_FONT, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title)
    return ax
