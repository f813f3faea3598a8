"""``Result``: one answer, as the contract's dict and as a pandas DataFrame."""

from __future__ import annotations

import copy
import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported when a frame is asked for, so the CLI and MCP server start fast
    import pandas as pd

__all__ = ["Result"]


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
        if self._frame is None:
            from knowtk.frames import frame_for

            self._frame = frame_for(self.tool, self._data)
        return self._frame.copy()

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def keys(self) -> Any:
        return self._data.keys()

    def plot(self, **kwargs: Any) -> Any:
        """Draw the result on a matplotlib date axis (timeline and chronicle tools)."""
        # the front ends are imported only when a plot is asked for: results never import them at load
        if self.tool == "knowledge_chronicle_day":
            from knowtk.notebook.chronicle import plot_chronicle

            kwargs.setdefault("tz", self.args.get("time_zone") or "UTC")
            return plot_chronicle(self.to_frame(), **kwargs)
        if self.tool in ("knowledge_timeline", "knowledge_chronicle_since", "knowledge_chronicle_last_seen"):
            from knowtk.notebook.timeline import plot_timeline

            return plot_timeline(self.to_frame(), **kwargs)
        raise TypeError(f"{self.tool} results have no plot; use to_frame()")

    def summary(self) -> str:
        d = self._data
        if "status" in d and "candidates" in d:
            return f"{self.tool}: {d['status']} ({len(d['candidates'])} candidate(s))"
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
        return text

    def __repr__(self) -> str:
        return f"<Result {self.summary()}>"

    def _repr_html_(self) -> str:
        frame = self.to_frame()
        return f"<p><b>{html.escape(self.summary())}</b></p>" + frame.to_html(max_rows=50, max_cols=20)


_LEAVES = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    """A deep copy of an answer: its dicts and lists copied, immutable leaves shared.

    The caller may change what it gets without touching the engine's caches (a record's
    frontmatter is shared with the snapshot); five times faster than ``copy.deepcopy``.
    """
    kind = type(value)
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    if kind in _LEAVES:
        return value
    return copy.deepcopy(value)
