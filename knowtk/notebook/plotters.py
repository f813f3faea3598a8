"""The pictures of results: ``Result.plot`` for the timeline, chronicle and history tools.

A default plug-in (``knowtk.plugins``): its ``knowtk_plotters`` hook is read the first time a result is plotted.
"""

from __future__ import annotations

from typing import Any

from matplotlib.axes import Axes

from knowtk.notebook.chronicle import plot_chronicle
from knowtk.notebook.history_plot import plot_history
from knowtk.notebook.timeline import plot_timeline
from knowtk.results import Plotter, Result

__all__ = [
    "CHRONICLE_TOOLS",
    "TIMELINE_TOOLS",
    "knowtk_plotters",
    "plot_chronicle_result",
    "plot_history_result",
    "plot_timeline_result",
]

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


def knowtk_plotters() -> dict[str, Plotter]:
    """The plug-in hook: tool -> its picture."""
    plotters: dict[str, Plotter] = {"knowledge_history": plot_history_result}
    plotters.update(dict.fromkeys(TIMELINE_TOOLS, plot_timeline_result))
    plotters.update(dict.fromkeys(CHRONICLE_TOOLS, plot_chronicle_result))
    return plotters
