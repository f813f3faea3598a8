"""``ChainWidget``: the supersession chains of a store, or of one record: the picture, the chains, the edges."""

from __future__ import annotations

import base64
import io
import struct
from typing import Any

import ipywidgets as W
import matplotlib.pyplot as plt
import pandas as pd

from knowtk.errors import KnowtkError
from knowtk.notebook.actions import RecordActions
from knowtk.notebook.base import text_control
from knowtk.notebook.chain_plot import plot_chains
from knowtk.notebook.history_plot import plot_history
from knowtk.query.chains import chain_edges, chain_summary
from knowtk.store import Store
from knowtk.ui.front import Front
from knowtk.ui.style import banner, escape, wrap

__all__ = ["ALL_CHAINS", "ChainWidget", "readable_edges"]

ALL_CHAINS = "(all chains)"
_DPI = 100  # the figure's inches times this is its size on screen (the inline backend's default)
_SCALE = 2  # pixels per screen pixel in the PNG, so it stays sharp on high-density screens


def _when(value: Any) -> str | None:
    """A node date as a person writes it: a date-only value (midnight UTC) as its date, an instant to the minute."""
    if value is None or pd.isna(value):
        return None
    stamp = pd.Timestamp(value)
    if stamp.tzinfo is not None and stamp == stamp.normalize() and stamp.utcoffset() == pd.Timedelta(0):
        return f"{stamp:%Y-%m-%d}"
    return f"{stamp:%Y-%m-%d %H:%M %Z}".strip()


def readable_edges(edges: pd.DataFrame) -> pd.DataFrame:
    """``edges`` for reading: node dates as text (``2025-09-30`` for a date-only value), titles dropped."""
    shown = edges.drop(columns=[c for c in ("from_title", "to_title") if c in edges.columns])
    for column in ("from_date", "to_date"):
        if column in shown.columns:
            shown[column] = pd.Series([_when(v) for v in shown[column]], index=shown.index, dtype="string")
    return shown


def _png_size(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])
    return width, height


class ChainWidget(Front):
    """Supersession chains of the store, or of one record: the picture, a summary per chain, the edges.

    ``.edges`` is :func:`knowtk.query.chains.chain_edges` for the selection, ``.summary`` its
    :func:`~knowtk.query.chains.chain_summary`, ``.png`` the drawn figure (rendered at twice its screen
    size and shown at its screen size: sharp, never stretched to the column). ``.valid_at``, a date or
    timestamp, names the records of the drawn chains in force then (``.in_force``) above the table.
    """

    def __init__(self, store: Store, id: str | None = None, *, valid_at: str = "") -> None:
        self.store = store
        self.in_force: list[str] = []  # the chains' records in force at valid at (knowtk.Store.in_force)
        self.edges = chain_edges(store, id)  # raises RecordNotFound for an id the store does not know
        self.summary = chain_summary(self.edges)
        self.png = b""
        self._quiet = False
        self.record = W.Dropdown(options=self._choices(id), value=id or ALL_CHAINS, description="chain of")
        self.refresh_button = W.Button(description="↻ refresh", layout=W.Layout(width="90px"))
        self.valid_at = text_control("valid at", "YYYY-MM-DD or timestamp: which was in force", valid_at, "340px")
        self.image = W.Image(format="png")
        self.table = W.HTML()
        self.actions = W.VBox()  # Supersede by…, Withdraw, Reinstate, Edit fields for the selected record
        top = W.HBox([self.record, self.refresh_button, self.valid_at])
        super().__init__(children=[top, self.image, self.actions, self.table])
        self.record.observe(lambda _change: None if self._quiet else self.draw(), "value")
        self.valid_at.observe(lambda _change: self.draw(), "value")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.draw()

    def _choices(self, keep: str | None) -> list[str]:
        """The menu: every record on a chain (and ``keep``, even when it is on none)."""
        edges = chain_edges(self.store)
        ids = set(edges["from_id"]) | set(edges["to_id"]) | ({keep} if keep and keep != ALL_CHAINS else set())
        return [ALL_CHAINS, *sorted(ids)]

    def refresh(self) -> pd.DataFrame:
        """Read the store again: the menu's records and the drawn chains."""
        keep, self._quiet = self.record.value, True
        try:
            self.record.options = self._choices(keep)
            self.record.value = keep if keep in self.record.options else ALL_CHAINS
        finally:
            self._quiet = False
        return self.draw()

    def _saved(self, receipt: dict[str, Any]) -> None:
        """A change was saved from the selected record's actions: draw the chains again."""
        self.refresh()

    def draw(self) -> pd.DataFrame:
        """Read the selected chains from the current snapshot and draw them; returns the edges."""
        rid = None if self.record.value == ALL_CHAINS else self.record.value
        self.edges = chain_edges(self.store, rid)
        self.summary = chain_summary(self.edges)
        title = f"Supersession chain of {rid}" if rid else f"Supersession chains of {self.store.name}"
        ax = plot_chains(self.edges, title=title)
        fig = ax.get_figure(root=True)
        buffer = io.BytesIO()
        if fig is not None:
            fig.savefig(buffer, format="png", dpi=_DPI * _SCALE, bbox_inches="tight")
            plt.close(fig)
        self.png = self.image.value = buffer.getvalue()
        self.actions.children = [RecordActions(self.store, rid, on_saved=self._saved)] if rid else []
        if self.png:
            width, _height = _png_size(self.png)
            self.image.layout = W.Layout(width=f"{width // _SCALE}px", max_width="100%", height="auto")
        self.table.value = wrap(
            self._in_force_line()
            + "<b>chains, dead ends first</b>"
            + self.summary.to_html(index=False, na_rep="—")
            + "<b>edges</b>"
            + readable_edges(self.edges).to_html(index=False, na_rep="—")
        )
        return self.edges

    def _in_force_line(self) -> str:
        """Which of the drawn chains' records were in force at ``valid_at`` (``.in_force``), as one line."""
        when = self.valid_at.value.strip()
        self.in_force = []
        if not when:
            return ""
        try:
            frame = self.store.in_force(valid_at=when)
        except KnowtkError as exc:  # a refused date is shown, never raised from a callback
            return banner("bad", "REFUSED", escape(exc))
        on_chains = set(self.edges["from_id"].dropna()) | set(self.edges["to_id"].dropna())
        held = frame[frame["in_force"].fillna(False).astype(bool)]
        self.in_force = sorted(rid for rid in held["id"] if rid in on_chains)
        shown = ", ".join(self.in_force) or "none of them"
        return f"<p><b>in force at {escape(when)}</b>: {escape(shown)}</p>"

    def history(self) -> pd.DataFrame:
        """The receipts (and commits) of every record on the drawn chains, newest first: a chain's revisions."""
        ids = sorted(set(self.edges["from_id"].dropna()) | set(self.edges["to_id"].dropna()))
        frames = [self.store.history(rid, limit=1000).to_frame() for rid in ids]
        if not frames:
            return self.store.history(limit=1).to_frame().iloc[0:0]
        frame = pd.concat(frames, ignore_index=True).drop_duplicates(["receipt", "id"])
        return frame.sort_values("at", ascending=False, kind="stable").reset_index(drop=True)

    def plot_history(self) -> Any:
        """The chain's revisions on a date axis (one lane per record); returns the Axes."""
        rid = None if self.record.value == ALL_CHAINS else self.record.value
        return plot_history(self.history(), title=f"Changes on the chain of {rid}" if rid else "Changes on the chains")

    def html(self) -> str:
        picture = base64.b64encode(self.png).decode("ascii")
        width = _png_size(self.png)[0] // _SCALE if self.png else 0
        return f"<img src='data:image/png;base64,{picture}' style='width:{width}px;max-width:100%'/>" + self.table.value

    def __repr__(self) -> str:
        return f"<ChainWidget {self.record.value}: {self.summary['chain'].nunique()} chain(s)>"
