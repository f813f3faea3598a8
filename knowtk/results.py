"""``Result``: one answer, as the contract's dict and as a pandas DataFrame; its picture through the plotters.

A result's frame is its tool's (``Tool.frame``, from the registry); its picture is the plotter a plug-in
registered for its tool (the ``knowtk_plotters`` hook; knowtk's own are ``knowtk.notebook.plotters``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from knowtk import plugins
from knowtk.errors import InvalidArgument
from knowtk.query import TOOLS

if TYPE_CHECKING:  # pandas is imported when a frame is asked for, so the CLI and MCP server start fast
    import pandas as pd

__all__ = ["PLOTTERS", "Plotter", "Result", "frame_for", "plotter_for", "register_plotter"]

#: ``plotter(result, **kwargs)`` draws a result and returns what it drew on (a matplotlib Axes).
Plotter = Callable[..., Any]
#: tool -> the plotter of its results, added with :func:`register_plotter`; the plug-ins' come after.
PLOTTERS: dict[str, Plotter] = {}
_plugged: dict[str, Plotter] | None = None


def register_plotter(tool: str, plotter: Plotter) -> None:
    """Make ``plotter`` draw the results of ``tool`` (``Result.plot``)."""
    PLOTTERS[tool] = plotter


def _plugin_plotters() -> dict[str, Plotter]:
    """The plug-ins' plotters (matplotlib comes with them: read at the first plot, once)."""
    global _plugged
    with plugins.LOCK:
        if _plugged is None:
            found: dict[str, Plotter] = {}
            for _, made in plugins.hook_results("knowtk_plotters", outside=True):
                for tool, plotter in dict(made).items():
                    found.setdefault(tool, plotter)
            _plugged = found
        return _plugged


def plotter_for(tool: str) -> Plotter | None:
    """What draws ``tool``'s results: one registered here, else a plug-in's; None when nothing does."""
    return PLOTTERS.get(tool) or _plugin_plotters().get(tool)


def frame_for(tool: str, data: dict[str, Any]) -> pd.DataFrame:
    """``data``, an answer of ``tool``, as its tool's DataFrame."""
    return TOOLS[tool].frame(data)


class Result:
    """The answer of one tool call.

    ``to_dict()`` is exactly what ``Store.call`` returns; ``to_frame()`` has one
    row per hit, row or candidate. Keys of the dict can be read directly
    (``res["total"]``).
    """

    def __init__(self, tool: str, data: dict[str, Any], args: dict[str, Any] | None = None) -> None:
        self.tool = tool
        self.args = dict(args or {})
        self._data = data
        self._frame: pd.DataFrame | None = None

    def to_dict(self) -> dict[str, Any]:
        copied: dict[str, Any] = _copied(self._data)
        return copied

    def to_frame(self) -> pd.DataFrame:
        if self._frame is None:  # pandas comes with the first frame, not with ``import knowtk``
            self._frame = frame_for(self.tool, self._data)
        return self._frame.copy()

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def keys(self) -> Any:
        return self._data.keys()

    def plot(self, **kwargs: Any) -> Any:
        """Draw the result on a matplotlib date axis (timeline and chronicle tools); returns the Axes.

        ``kwargs`` go to the picture (:func:`knowtk.notebook.plot_timeline`, or
        :func:`~knowtk.notebook.plot_chronicle` in the tool's time zone). The pictures are plug-ins
        (``plotter_for``): ``store.timeline().plot()`` works without importing :mod:`knowtk.notebook`
        first, and ``import knowtk`` loads no matplotlib. Another tool's results raise ``InvalidArgument``.
        """
        plotter = plotter_for(self.tool)
        if plotter is None:
            allowed = sorted({*PLOTTERS, *_plugin_plotters()})
            raise InvalidArgument("tool", f"{self.tool} results have no plot; use to_frame()", allowed=allowed)
        return plotter(self, **kwargs)

    def summary(self) -> str:
        d = self._data
        if "status" in d and "candidates" in d:
            close = ", ".join(x["id"] for x in d.get("suggestions") or [])
            return f"{self.tool}: {d['status']} ({len(d['candidates'])} candidate(s))" + (
                f"\nnot a match, but close: {close}" if close else ""
            )
        if "status" in d and "record" in d:
            return f"{self.tool}: {d['status']}"
        items = d.get("hits", d.get("rows", d.get("results", []))) or []
        n = sum(len(v) for v in items.values()) if isinstance(items, dict) else len(items)
        total = d.get("total")
        text = f"{self.tool}: {n} of {total if total is not None else '?'}"
        index = d.get("index")
        if isinstance(index, dict) and index.get("state") != "ready":
            text += f" — index {index.get('state')}"
        coverage = d.get("coverage")
        if isinstance(coverage, dict) and not coverage.get("complete", True):
            text += f" — coverage incomplete ({len(coverage['issues'])} issue(s))"
            if coverage.get("hint"):
                text += f"\nhint: {coverage['hint']}"
        if d.get("why"):  # an empty answer, or one ranked by nothing: why
            text += f"\nwhy: {d['why']}"
        return text

    def __repr__(self) -> str:
        return f"<Result {self.summary()}>"

    def _repr_html_(self) -> str:
        frame = self.to_frame()
        import html  # a notebook's: never a command line's

        from knowtk.tidy import tidy_html  # pandas is here already: the frame above imported it

        return f"<p><b>{html.escape(self.summary())}</b></p>" + tidy_html(frame, max_rows=50)


_LEAVES = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    """A deep copy of an answer: its dicts and lists copied, immutable leaves shared.

    The caller may change what it gets without touching the engine's caches (a record's
    frontmatter is shared with the snapshot); five times faster than ``copy.deepcopy``. A dict is
    copied in C and only its values that are not leaves copied again (a store's 1,351 coverage
    issues cost every answer 1.9 ms copied key by key, 0.7 ms so).
    """
    kind = type(value)
    if kind is dict:
        out = value.copy()
        for key, item in value.items():
            if type(item) not in _LEAVES:
                out[key] = _copied(item)
        return out
    if kind is list:
        return [item if type(item) in _LEAVES else _copied(item) for item in value]
    if kind in _LEAVES:
        return value
    return copy.deepcopy(value)
