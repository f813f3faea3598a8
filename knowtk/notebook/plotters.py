"""The pictures of results: registers ``Result.plot`` for the timeline, chronicle and history tools when imported.

``knowtk.results`` imports this module by name (``PLOT_PLUGINS``) the first time a result is plotted.
"""

from __future__ import annotations

from typing import Any

from matplotlib.axes import Axes

from knowtk.notebook.chronicle import plot_chronicle
from knowtk.notebook.history_plot import plot_history
from knowtk.notebook.timeline import plot_timeline
from knowtk.results import Result, register_plotter

__all__ = ["CHRONICLE_TOOLS", "TIMELINE_TOOLS", "plot_chronicle_result", "plot_history_result", "plot_timeline_result"]

TIMELINE_TOOLS = ("knowledge_timeline", "knowledge_chronicle_since", "knowledge_chronicle_last_seen")
CHRONICLE_TOOLS = ("knowledge_chronicle_day",)


def plot_timeline_result(result: Result, **kwargs: Any) -> Axes:
    return plot_timeline(result.to_frame(), **kwargs)


def plot_chronicle_result(result: Result, **kwargs: Any) -> Axes:
    """The day or week in the time zone the tool was asked in, unless ``tz`` says otherwise."""
    kwargs.setdefault("tz", result.args.get("time_zone") or "UTC")
    return plot_chronicle(result.to_frame(), **kwargs)


def plot_history_result(result: Result, **kwargs: Any) -> Axes:
    """A record's receipts (and commits) on a date axis; the title names the record asked for."""
    rid = result.args.get("id")
    kwargs.setdefault("title", f"Changes of {rid}" if rid else "Changes made through knowtk")
    return plot_history(result.to_frame(), **kwargs)


register_plotter("knowledge_history", plot_history_result)
for _tool in TIMELINE_TOOLS:
    register_plotter(_tool, plot_timeline_result)
for _tool in CHRONICLE_TOOLS:
    register_plotter(_tool, plot_chronicle_result)
