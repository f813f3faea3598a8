"""knowledge_lookup in a notebook: FOUND, AMBIGUOUS or MISSING, and ``LookupWidget``.

A MISSING answer whose query is the id of a record that exists but is not eligible (superseded,
withdrawn, unavailable) says so, and names the current record its supersession chain ends at
(from ``store.explain``, which reads the snapshot's ``chain_ends``); the contract's answer stays
``missing``: lookup never returns an ineligible record.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W
import pandas as pd

from knowtk.errors import KnowtkError, RecordNotFound
from knowtk.notebook.actions import keep_out_of_answer, panel_in, record_actions
from knowtk.notebook.base import text_control
from knowtk.notebook.panes import record_html
from knowtk.notebook.text import citation_text
from knowtk.query.common import LIFECYCLES
from knowtk.results import Result, frame_for
from knowtk.store import Store
from knowtk.ui.front import Front
from knowtk.ui.rows import Row, RowList
from knowtk.ui.style import banner, escape, wrap

__all__ = ["LookupWidget", "known_html", "lookup_html"]


def known_html(known: dict[str, Any]) -> str:
    """Why an existing id is not an eligible answer, and where its chain ends (a ``store.explain`` dict)."""
    rid = escape(known["id"])
    chain = known.get("chain") or {}
    rules = {r["rule"] for r in known.get("reasons") or []}
    if chain:
        what = "superseded"
    elif "withdrawn" in rules:
        what = "withdrawn"
    else:
        what = "not eligible here"
    lead = f"<b>{rid}</b> exists, and is {what}."
    if known.get("asked") and known["asked"] != known["id"]:  # asked by title or alias
        lead = f"“{escape(known['asked'])}” names <b>{rid}</b>, which exists and is {what}."
    text = f"{lead} {escape(known.get('message') or '')}"
    if chain.get("current"):
        steps = " → ".join(escape(s) for s in chain.get("steps") or [])
        text += (
            f"<br>Its supersession chain ({rid} → {steps}) ends at the current record "
            f"<b class='current'>{escape(chain['current'])}</b>: look that up."
        )
    elif chain:
        text += f"<br>Its supersession chain ends in nothing ({escape(chain.get('end'))}): no current record."
    return banner("warn", what.upper() if what != "not eligible here" else "NOT ELIGIBLE", text)


_LOOKUP_COLUMNS = ("id", "title", "type", "lifecycle", "path", "aliases")


def lookup_html(
    data: dict[str, Any], *, query: str | None = None, known: dict[str, Any] | None = None, table: bool = True
) -> str:
    """A knowledge_lookup dict: FOUND, AMBIGUOUS (with every candidate) or MISSING, each shown its own way.

    ``known`` is ``store.explain(query)`` when a MISSING query is nonetheless a record's id (a
    superseded, withdrawn or unavailable record): it is shown under the MISSING banner, with the
    record the chain ends at. The answer itself stays ``missing``. ``table=False`` leaves the
    candidates' table out (the widget lists them as rows).
    """
    status, asked = data["status"], f" “{escape(query)}”" if query else ""
    candidates = data.get("candidates") or []
    if status == "found":
        head = f"<div class='box good'><b>FOUND</b>{asked} by {escape(data['matchedBy'])}</div>"
    elif status == "ambiguous":
        head = (
            f"<div class='box warn'><b>AMBIGUOUS</b>{asked}: {len(candidates)} records share this "
            f"{escape(data['matchedBy'])}; every candidate is listed, pick one by id</div>"
        )
    else:
        head = (
            f"<div class='box bad'><b>MISSING</b>{asked}: no eligible record has this id, title or alias. "
            "Lookup is exact (ids case-sensitive; names normalised, never fuzzy); grep searches words.</div>"
        )
    if known is not None:
        head += known_html(known)
    if not candidates or not table:  # table=False: the widget shows the candidates as rows
        return wrap(head)
    cells = "".join(f"<th>{c}</th>" for c in (*_LOOKUP_COLUMNS, "cite"))
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{escape(', '.join(c[k]) if k == 'aliases' else c[k])}</td>" for k in _LOOKUP_COLUMNS)
        + f"<td class='muted'>{escape(citation_text(c.get('citation')))}</td></tr>"
        for c in candidates
    )
    return wrap(f"{head}<table><tr>{cells}</tr>{rows}</table>")


# -- the widget -------------------------------------------------------------------------------------


def candidate_row(candidate: dict[str, Any]) -> Row:
    title = candidate["title"] or candidate["id"]
    facts = [candidate["id"], candidate["type"], candidate["lifecycle"], candidate["path"]]
    if candidate.get("aliases"):
        facts.append("aliases: " + ", ".join(candidate["aliases"]))
    return Row(key=candidate["id"], label=title, tooltip=title, meta=" · ".join(escape(f) for f in facts))


class LookupWidget(Front):
    """knowledge_lookup in a notebook: FOUND, AMBIGUOUS (every candidate) or MISSING, shown distinctly.

    ``.result`` is the ``Result`` of ``store.lookup(...)``, ``.frame`` its DataFrame, ``.status`` its
    status, ``.known`` the ``store.explain`` of a MISSING id that exists but is not eligible (its
    current record in ``.current``; ``.follow_button`` looks that one up). ``.valid_at``, a date or timestamp,
    looks up what was in force then (``validAt``). Candidates are rows:
    clicking one (``.rows.select(id)``) shows the record under it. A refusal replaces the answer.
    ``read_only=True`` (or a store opened read-only) shows no change actions.
    """

    def __init__(
        self, store: Store, query: str = "", *, lifecycle: str = "active", valid_at: str = "", read_only: bool = False
    ) -> None:
        self.store = store
        self.read_only = read_only  # True: no change actions under the opened record (so for a read-only store)
        self.result: Result | None = None
        self.error: str | None = None
        self.known: dict[str, Any] | None = None
        self.query = text_control("lookup", "an id, a full title or an alias, then Enter", query, "420px")
        self.lifecycle = W.ToggleButtons(options=LIFECYCLES, value=lifecycle, description="lifecycle")
        self.valid_at = text_control("valid at", "YYYY-MM-DD or timestamp: in force then", valid_at, "320px")
        self.button = W.Button(description="Look up", button_style="primary", layout=W.Layout(width="90px"))
        self.output = W.HTML()  # the whole answer as static HTML (.html())
        self.head = W.HTML()  # the status banner, shown above the rows
        self.follow_button = W.Button(description="", layout=W.Layout(display="none", width="auto"))
        self.detail = W.HTML()
        self.actions = W.VBox()  # Edit fields, Supersede by…, Withdraw, Reinstate for the opened record
        self.rows = RowList(W.VBox([self.detail, self.actions]), self._show)
        self.changed = W.VBox()  # the receipt of a change that took the record out of the answer
        super().__init__(
            children=[
                W.HBox([self.query, self.button]),
                W.HBox([self.lifecycle, self.valid_at]),
                self.head,
                self.follow_button,
                self.changed,
                self.rows,
            ]
        )
        self.query.observe(lambda _change: self.lookup(), "value")
        self.lifecycle.observe(lambda _change: self.lookup(), "value")
        self.valid_at.observe(lambda _change: self.lookup(), "value")
        self.button.on_click(lambda _b: self.lookup())
        self.follow_button.on_click(lambda _b: self.follow())
        self.lookup()

    @property
    def status(self) -> str | None:
        return None if self.result is None else self.result["status"]

    @property
    def current(self) -> str | None:
        """The current record a MISSING (superseded) id's chain ends at, if any."""
        return ((self.known or {}).get("chain") or {}).get("current")

    @property
    def frame(self) -> pd.DataFrame:
        if self.result is None:
            return frame_for("knowledge_lookup", {"status": None, "matchedBy": None, "candidates": []})
        return self.result.to_frame()

    def lookup(self) -> Result | None:
        query = self.query.value.strip()
        self.result, self.error, self.known = None, None, None
        if not query:
            self._render(wrap(banner("warn", "NO QUERY", "Type an id, a full title or an alias and press Enter.")))
            return None
        try:
            when = self.valid_at.value.strip() or None
            self.result = self.store.lookup(query, lifecycle=self.lifecycle.value, valid_at=when)
        except KnowtkError as exc:
            self.error = str(exc)
            self._render(wrap(banner("bad", "REFUSED", escape(exc))))
            return None
        data = self.result.to_dict()
        if data["status"] == "missing" and not self.valid_at.value.strip():  # (why, today: not at valid at)
            self.known = self._known(query)
        self._render(lookup_html(data, query=query, known=self.known))
        return self.result

    def _known(self, query: str) -> dict[str, Any] | None:
        """``store.explain`` of the one record a missing query names (its id, or else its title or alias)."""
        named = self.store.snapshot().lookup_names(query)
        for rid in (query, *(named if len(named) == 1 else ())):
            try:
                return {**self.store.explain(rid, lifecycle=self.lifecycle.value), "asked": query}
            except RecordNotFound:  # no file carries it
                continue
        return None

    def follow(self) -> Result | None:
        """Look up the current record a superseded id's chain ends at."""
        if self.current is None:
            return None
        self.query.value = self.current  # -> lookup()
        return self.result

    def _render(self, whole: str) -> None:
        self.output.value = whole
        data = self.result.to_dict() if self.result is not None else None
        if data is None:
            self.head.value = whole
        else:
            # the banner (and what is known of a missing id) above the rows; the rows are the candidates
            asked = self.query.value.strip()
            self.head.value = lookup_html(data, query=asked, known=self.known, table=False)
        current = self.current
        self.follow_button.description = f"→ look up {current}" if current else ""
        self.follow_button.layout.display = None if current else "none"
        candidates = (data or {}).get("candidates") or []
        only = candidates[0]["id"] if len(candidates) == 1 else None
        self.rows.set_rows([candidate_row(c) for c in candidates], selected=only)
        self._show(only)

    def _show(self, rid: str | None) -> None:
        self.detail.value = record_html(self.store.record(rid).to_dict()) if rid else ""
        self.actions.children = record_actions(
            self.store,
            rid,
            on_saved=self._saved,
            read_only=self.read_only,
            keep=panel_in(self.actions, self.changed),  # a receipt shown stays after a save
        )

    def _saved(self, receipt: dict[str, Any]) -> None:
        """A change was saved from the opened record's actions: look up again; the receipt stays in view."""
        panel = panel_in(self.actions, self.changed)
        self.lookup()
        keep_out_of_answer(self.changed, panel, self.actions)

    def html(self) -> str:
        return wrap(f"<p><b>LookupWidget</b> · {escape(repr(self.query.value))}</p>") + self.output.value

    def __repr__(self) -> str:
        return f"<LookupWidget {self.query.value!r}: {self.status}>"
