"""Compact, selectable result rows: click one and its detail opens directly under it.

Used for grep hits, lookup candidates and knowl results. Each row is one line: a button with
the rank and title (cut with an ellipsis; the full title on hover) and a line of facts beside
it. The button's click area covers the whole row (a CSS overlay, ``.knowtk-pick::after``), so a
click on the id or the facts selects the row too. Clicking selects the row; the list then moves
its ``detail`` widget directly under that row, so the record and its "why" are read next to the
hit, not below a long table.
Everything is plain widget state: ``select(key)`` is what a click does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ipywidgets as W

from knowtk.ui.style import STYLE, escape

__all__ = ["Row", "RowList"]


@dataclass(frozen=True)
class Row:
    key: str  # what selecting the row selects (an id)
    label: str  # the one-line button text: rank and title
    tooltip: str  # the full title, shown on hover
    meta: str = ""  # one line of HTML beside the button: id, type, score, snippet
    tone: str = ""  # "replacement": reached through a superseded record


class RowList(W.VBox):
    """Rows of ``Row``; ``.selected`` is the selected key, ``.detail`` sits under its row."""

    def __init__(self, detail: W.Widget, on_select: Callable[[str | None], None]) -> None:
        self.detail = detail
        self.detail.add_class("knowtk-inline")
        self.selected: str | None = None
        self.rows: list[Row] = []
        self.boxes: dict[str, W.HBox] = {}
        self.buttons: dict[str, W.Button] = {}
        self._on_select = on_select
        self._style = W.HTML(STYLE, layout=W.Layout(height="0px", overflow="hidden"))
        super().__init__(children=[self._style])
        self.add_class("knowtk-rows")

    def set_rows(self, rows: list[Row], *, selected: str | None = None) -> None:
        """Show ``rows`` and select ``selected`` (quietly: the caller fills the detail itself)."""
        self.rows = rows
        self.boxes, self.buttons = {}, {}
        for row in rows:
            button = W.Button(
                description=row.label, tooltip=row.tooltip, layout=W.Layout(width="40%", min_width="220px")
            )
            button.add_class("knowtk-pick")
            button.on_click(lambda _b, key=row.key: self.select(key))
            meta = W.HTML(
                f"<div title='{escape(row.tooltip)}'>{row.meta}</div>", layout=W.Layout(flex="1 1 0%", min_width="0")
            )
            meta.add_class("knowtk-meta")
            box = W.HBox([button, meta], layout=W.Layout(width="100%"))
            box.add_class("knowtk-row")
            if row.tone:
                box.add_class(f"knowtk-{row.tone}")
            self.boxes[row.key], self.buttons[row.key] = box, button
        self.selected = selected if selected in self.boxes else None
        self._arrange()

    def select(self, key: str | None) -> None:
        """What clicking the row ``key`` does: mark it, move the detail under it, tell the widget."""
        self.mark(key)
        self._on_select(self.selected)

    def mark(self, key: str | None) -> None:
        """Mark ``key`` as selected and move the detail under it, without telling the widget."""
        key = key if key in self.boxes else None
        if key != self.selected or (key is not None and self.detail not in self.children):
            self.selected = key
            self._arrange()

    def _arrange(self) -> None:
        children: list[W.Widget] = [self._style]
        for row in self.rows:
            box = self.boxes[row.key]
            if row.key == self.selected:
                box.add_class("knowtk-selected")
                children += [box, self.detail]
            else:
                box.remove_class("knowtk-selected")
                children.append(box)
        self.children = tuple(children)
