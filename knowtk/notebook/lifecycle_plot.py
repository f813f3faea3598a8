"""``plot_lifecycle_over_time``: how many records were active, superseded and withdrawn as the store's files stood
at each step (``Store.lifecycle_over_time``), stacked on a date axis."""

from __future__ import annotations

from datetime import UTC

import pandas as pd
from matplotlib.axes import Axes

from knowtk.notebook.draw import MIN_FONT, date_axis, draw_empty, new_axes, require_columns

__all__ = ["LIFECYCLE_COLORS", "plot_lifecycle_over_time"]

LIFECYCLE_COLORS = {"active": "#2e7d32", "superseded": "#f9a825", "withdrawn": "#9e9e9e"}


def plot_lifecycle_over_time(frame: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None) -> Axes:
    """``frame``: ``store.lifecycle_over_time(...)``. Each period is drawn with the counts at its end (a step plot)."""
    frame = require_columns(frame, "frame", ["at", *LIFECYCLE_COLORS])
    ax, _new = new_axes(ax, 9.5, 4.0)
    title = title or "Records by lifecycle, as the files stood"
    if frame.empty:
        return draw_empty(ax, "no instant asked", title)
    when = pd.to_datetime(frame["at"], utc=True)
    counts = [frame[name].astype(int).to_numpy() for name in LIFECYCLE_COLORS]
    ax.stackplot(
        when,
        *counts,
        labels=list(LIFECYCLE_COLORS),
        colors=list(LIFECYCLE_COLORS.values()),
        step="pre",
        alpha=0.85,
    )
    ax.set_ylabel("records", fontsize=MIN_FONT + 1)
    ax.set_ylim(0, max(1, int(sum(c.max() for c in counts))) * 1.1)
    date_axis(ax, UTC)
    ax.legend(loc="upper left", fontsize=MIN_FONT, frameon=False)
    ax.set_title(title)
    return ax
