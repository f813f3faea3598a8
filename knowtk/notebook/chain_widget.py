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
from knowtk.notebook.actions import panel_in, record_actions
from knowtk.notebook.base import text_control
from knowtk.notebook.chain_plot import plot_chains
from knowtk.notebook.history_plot import plot_history
from knowtk.query.chains import chain_edges, chain_summary
from knowtk.store import Store
from knowtk.tidy import tidy_html
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


def _instant(text: str) -> pd.Timestamp:
    """A known-time instant as a UTC timestamp: a date is the end of its UTC day (as ``store.at`` reads it)."""
    stamp = pd.Timestamp(text)
    if len(text) == 10:
        return (stamp + pd.Timedelta(days=1, microseconds=-1)).tz_localize("UTC")
    return stamp.tz_convert("UTC")


def _png_size(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])
    return width, height


class ChainWidget(Front):
    """Supersession chains of the store, or of one record: the picture, a summary per chain, the edges.

    ``read_only=True`` (or a store opened read-only) shows no change actions.
    ``.edges`` is :func:`knowtk.query.chains.chain_edges` for the selection, ``.summary`` its
    :func:`~knowtk.query.chains.chain_summary`, ``.png`` the drawn figure (rendered at twice its screen
    size and shown at its screen size: sharp, never stretched to the column). The "known at" field (or
    ``known_at=``: a date or a timestamp) draws the chains as the store's files stood then (``store.at``);
    ``.error`` says why an instant was refused. ``.valid_at``, a date or timestamp, names the records of the
    drawn chains in force then (``.in_force``) above the table.
    """

    def __init__(
        self,
        store: Store,
        id: str | None = None,
        *,
        known_at: str | None = None,
        valid_at: str = "",
        read_only: bool = False,
    ) -> None:
        self.store = store
        self.error: str | None = None
        self.read_only = read_only  # True: no change actions under the selected record (so for a read-only store)
        self.in_force: list[str] = []  # the chains' records in force at valid at (knowtk.Store.in_force)
        self.edges = chain_edges(store.at(known_at) if known_at else store, id)  # RecordNotFound for an unknown id
        self.summary = chain_summary(self.edges)
        self.png = b""
        self._quiet = False
        self.known_at = text_control("known at", "now, or YYYY-MM-DD", known_at or "", "260px")
        self.record = W.Dropdown(options=self._choices(id), value=id or ALL_CHAINS, description="chain of")
        self.refresh_button = W.Button(description="↻ refresh", layout=W.Layout(width="90px"))
        self.valid_at = text_control("valid at", "YYYY-MM-DD or timestamp: which was in force", valid_at, "340px")
        self.image = W.Image(format="png")
        self.table = W.HTML()
        self.actions = W.VBox()  # Supersede by…, Withdraw, Reinstate, Edit fields for the selected record
        self.note = W.HTML()
        self.earlier_button = W.Button(description="◀ change", tooltip="the chain one change earlier")
        self.later_button = W.Button(description="change ▶", tooltip="the chain one change later (then now)")
        for button in (self.earlier_button, self.later_button):
            button.layout = W.Layout(width="90px")
        self.earlier_button.on_click(lambda _b: self.step(-1))
        self.later_button.on_click(lambda _b: self.step(1))
        controls = W.HBox([self.record, self.known_at, self.earlier_button, self.later_button, self.refresh_button])
        super().__init__(children=[controls, self.valid_at, self.note, self.image, self.actions, self.table])
        self.record.observe(lambda _change: None if self._quiet else self.draw(), "value")
        self.known_at.observe(lambda _change: self.refresh(), "value")
        self.valid_at.observe(lambda _change: self.draw(), "value")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.draw()

    def viewed(self) -> Store:
        """The store the widget draws: as its files stood at the "known at" instant, else as it is."""
        when = self.known_at.value.strip()
        return self.store.at(when, argument="known at") if when else self.store

    def _choices(self, keep: str | None) -> list[str]:
        """The menu: every record on a chain (and ``keep``, even when it is on none)."""
        try:
            edges = chain_edges(self.viewed())
        except KnowtkError:  # a refused instant: draw() says why
            edges = self.edges
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
        try:
            store = self.viewed()
            self.edges = chain_edges(store, rid)
        except KnowtkError as exc:  # an instant refused, or a record the store did not hold then
            self.error = str(exc)
            self.note.value = wrap(banner("bad", "REFUSED", escape(exc)))
            return self.edges
        self.error, past = None, getattr(store, "known_at", None)
        self.note.value = "" if past is None else wrap(f"as the files stood at {escape(past['instant'])}")
        self.summary = chain_summary(self.edges)
        title = f"Supersession chain of {rid}" if rid else f"Supersession chains of {self.store.name}"
        title += "" if past is None else f" at {past['instant'][:10]}"
        ax = plot_chains(self.edges, title=title)
        fig = ax.get_figure(root=True)
        buffer = io.BytesIO()
        if fig is not None:
            fig.savefig(buffer, format="png", dpi=_DPI * _SCALE, bbox_inches="tight")
            plt.close(fig)
        self.png = self.image.value = buffer.getvalue()
        # the past is read only: no actions on it; in the present a receipt shown stays after a save
        self.actions.children = record_actions(
            self.store,
            rid,
            on_saved=self._saved,
            read_only=self.read_only or past is not None,
            keep=panel_in(self.actions),
        )
        if self.png:
            width, _height = _png_size(self.png)
            self.image.layout = W.Layout(width=f"{width // _SCALE}px", max_width="100%", height="auto")
        self.table.value = wrap(
            self._in_force_line()
            + "<b>chains, dead ends first</b>"
            + tidy_html(self.summary, index=False)
            + "<b>edges</b>"
            + tidy_html(readable_edges(self.edges), index=False)
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

    def steps(self) -> list[str]:
        """The instants at which a file of a record on the selected chains (as they are now) changed: their Git
        commits, oldest first."""
        rid = None if self.record.value == ALL_CHAINS else self.record.value
        try:
            edges = chain_edges(self.store, rid)
        except KnowtkError:  # a record the store no longer holds: the chains drawn
            edges = self.edges
        ids = sorted(set(edges["from_id"].dropna()) | set(edges["to_id"].dropna()))
        stamps = {
            entry["at"]
            for rid in ids
            for entry in self.store.history(rid, limit=1000)["receipts"]
            if entry.get("source") == "git"
        }
        return sorted(stamps, key=_instant)

    def step(self, by: int) -> str:
        """Move "known at" to the next (``by`` 1) or the previous (-1) instant of ``steps``; past the last, to
        now (an empty field). Returns the field's new value."""
        steps, asked = self.steps(), self.known_at.value.strip()
        now = _instant(asked) if asked else None
        if by < 0:
            earlier = [s for s in steps if now is None or _instant(s) < now]
            self.known_at.value = earlier[-1] if earlier else asked
        else:
            later = [s for s in steps if now is not None and _instant(s) > now]
            self.known_at.value = later[0] if later else ""
        return self.known_at.value

    def html(self) -> str:
        picture = base64.b64encode(self.png).decode("ascii")
        width = _png_size(self.png)[0] // _SCALE if self.png else 0
        return f"<img src='data:image/png;base64,{picture}' style='width:{width}px;max-width:100%'/>" + self.table.value

    def __repr__(self) -> str:
        return f"<ChainWidget {self.record.value}: {self.summary['chain'].nunique()} chain(s)>"
