"""knowledge_grep in a notebook: the results table, what changed between two runs, and ``GrepWidget``.

Every view is a pure function from a result dict to an HTML string (``grep_table_html``,
``diff_html``), so it can be tested and reused without a browser. The widget only wires
ipywidgets controls to ``Store`` calls: the rows are ``store.grep(...)``, a row's record
``store.record(id)``, its "why" ``store.explain(id, query=...)``. There is no second query path.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W
import pandas as pd

from knowtk.errors import KnowtkError
from knowtk.notebook.actions import keep_out_of_answer, panel_in, record_actions
from knowtk.notebook.base import joined, listed, text_control
from knowtk.notebook.panes import explain_html, issues_html, record_html
from knowtk.notebook.text import highlight, query_words
from knowtk.query.common import KINDS, LIFECYCLES, TIME_FIELDS
from knowtk.results import Result, frame_for
from knowtk.store import Store
from knowtk.ui.front import Front
from knowtk.ui.rows import Row, RowList
from knowtk.ui.style import banner, escape, wrap

__all__ = ["GrepWidget", "diff_answers", "diff_frame", "diff_html", "grep_table_html", "known_types"]


# -- the results table ------------------------------------------------------------------------------

# The table is the widget's static copy, shown where a page strips <style> (a stored notebook opened in
# JupyterLab before it runs is untrusted: its sanitizer keeps style attributes only), so its tidy look is
# written on each cell too: text left-aligned (JupyterLab right-aligns table cells), ids and paths on one line.
_CELL = " style='text-align:left;vertical-align:top'"
_NUM = " class='num' style='text-align:right;vertical-align:top;white-space:nowrap'"
_ONE_LINE = " style='text-align:left;vertical-align:top;white-space:nowrap'"
_NOWRAP = " style='white-space:nowrap'"


def _lines(hit: dict[str, Any]) -> str:
    snip, cite = hit.get("snippet") or {}, hit.get("citation") or {}
    start, end = snip.get("lineStart"), snip.get("lineEnd")
    if start is None:
        start, end = cite.get("lineStart"), cite.get("lineEnd")
    return "" if start is None else f"L{start}–{end}"


def _hit_row(rank: int, hit: dict[str, Any], words: frozenset[str], selected: str | None) -> str:
    via = hit.get("via")
    classes = " ".join(c for c in ("replacement" if via else "", "selected" if hit["id"] == selected else "") if c)
    title = (
        f"<b>{escape(hit['title'] or hit['id'])}</b><br><span class='muted nowrap'{_NOWRAP}>{escape(hit['id'])}</span>"
    )
    if via:
        title += (
            f"<div class='via'>↳ replaces {escape(via['id'])} r{escape(via['revision'])} “{escape(via['title'])}”, "
            "which matched (superseded wording)</div>"
        )
    score = "—" if hit["score"] is None else f"{hit['score']:.3f}"
    matched = ", ".join(hit["matches"])
    snip = hit.get("snippet") or {}
    text = highlight(snip.get("text") or "", words)
    if snip.get("field") in ("title", "aliases"):
        text = f"<span class='muted'>[{escape(snip['field'])}]</span> {text}"
    if snip and not snip.get("matchLocated", True):
        text = f"<span class='muted'>[opening excerpt]</span> {text}"
    full = escape(hit["title"] or hit["id"])
    return (
        f"<tr class='{classes}'><td{_NUM}>{rank}</td><td class='title' title='{full}'{_CELL}>{title}</td>"
        f"<td{_ONE_LINE}>{escape(hit['type'])}</td>"
        f"<td{_CELL}><span class='nowrap'{_NOWRAP}>{score}</span><br><span class='muted'>{escape(matched)}</span></td>"
        f"<td{_CELL}>{text}</td><td{_ONE_LINE}>{escape(hit['lifecycle'])}</td>"
        f"<td{_CELL}><span class='nowrap'{_NOWRAP}>{escape(hit['path'])}</span>"
        f"<br><span class='muted nowrap'{_NOWRAP}>{_lines(hit)}</span></td></tr>"
    )


def _left_out(data: dict[str, Any]) -> str:
    """What a search at validAt left out (docs/time.md): records without a date."""
    parts = []
    if data.get("unplaced"):
        parts.append(f"{data['unplaced']} without occurred_at or recorded_at left out")
    return "".join(f" · {escape(p)}" for p in parts)


def grep_table_html(data: dict[str, Any], *, query: str | None = None, selected: str | None = None) -> str:
    """The results table of a knowledge_grep dict: one row per hit, query words highlighted in snippets."""
    index = data.get("index") or {}
    if index.get("state") != "ready":
        why = escape(index.get("error") or "no reason given")
        return wrap(f"<div class='box bad'><b>INDEX UNAVAILABLE</b>: {why}. total is null: retry the query.</div>")
    hits, offset, total = data["hits"], data["offset"], data["total"]
    if not hits:
        beyond = f" at offset {offset}" if offset else ""
        why = f"<p class='muted'>why: {escape(data['why'])}</p>" if data.get("why") else ""
        return wrap(f"<p><b>no hits</b>{beyond} (total {total})</p>{why}")
    words = query_words(query)
    shown = f"{offset + 1}–{offset + len(hits)}"
    head = (
        f"<p><b>{total}</b> hit{'s' if total != 1 else ''} · showing {shown} · "
        f"<span class='muted'>snapshot {escape(data['snapshot'])}{_left_out(data)}</span></p>"
    )
    rows = "".join(_hit_row(offset + i + 1, hit, words, selected) for i, hit in enumerate(hits))
    columns = "".join(f"<th{_CELL}>{c}</th>" for c in ("#", "title", "type", "score", "snippet", "lifecycle", "path"))
    return wrap(f"{head}<table class='hits'><thead><tr>{columns}</tr></thead><tbody>{rows}</tbody></table>")


# -- prototyping: what changed between two answers of the same query ---------------------------------


def diff_answers(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """New, removed, moved and edited hits between two knowledge_grep answers of the same query.

    Keys: ``new``, ``removed`` (ids), ``moved`` (``{id, before, after}`` ranks), ``edited`` (ids in
    both whose file hash changed), ``unchanged`` (ids), ``total`` (``{before, after}``),
    ``snapshotChanged``, and ``rows`` (one dict per id of either answer, for :func:`diff_frame`).
    """

    def ranked(d: dict[str, Any]) -> dict[str, tuple[int, dict[str, Any]]]:
        return {h["id"]: (d["offset"] + i + 1, h) for i, h in enumerate(d["hits"])}

    old, new = ranked(before), ranked(after)
    rows = []
    for rid in [*new, *(r for r in old if r not in new)]:
        b, a = old.get(rid), new.get(rid)
        hit = a[1] if a is not None else old[rid][1]
        if b is None:
            change = "new"
        elif a is None:
            change = "removed"
        else:
            change = "moved" if a[0] != b[0] else "same"
        rows.append(
            {
                "id": rid,
                "title": hit["title"],
                "change": change,
                "before_rank": b[0] if b else None,
                "after_rank": a[0] if a else None,
                "before_score": b[1]["score"] if b else None,
                "after_score": a[1]["score"] if a else None,
                "edited": bool(a and b and a[1]["sha256"] != b[1]["sha256"]),
                "via": (hit.get("via") or {}).get("id"),
            }
        )
    return {
        "new": [r["id"] for r in rows if r["change"] == "new"],
        "removed": [r["id"] for r in rows if r["change"] == "removed"],
        "moved": [
            {"id": r["id"], "before": r["before_rank"], "after": r["after_rank"]}
            for r in rows
            if r["change"] == "moved"
        ],
        "edited": [r["id"] for r in rows if r["edited"]],
        "unchanged": [r["id"] for r in rows if r["change"] == "same" and not r["edited"]],
        "total": {"before": before["total"], "after": after["total"]},
        "snapshotChanged": before["snapshot"] != after["snapshot"],
        "rows": rows,
    }


_DIFF_COLUMNS = {
    "id": "string",
    "title": "string",
    "change": "string",
    "before_rank": "Int64",
    "after_rank": "Int64",
    "before_score": "Float64",
    "after_score": "Float64",
    "edited": "boolean",
    "via": "string",
}


def diff_frame(diff: dict[str, Any] | None) -> pd.DataFrame:
    """A diff_answers() dict as a DataFrame, one row per hit of either answer (``change``: new/removed/moved/same)."""
    rows = (diff or {}).get("rows") or []
    return pd.DataFrame(
        {name: pd.Series([r[name] for r in rows], dtype=dtype) for name, dtype in _DIFF_COLUMNS.items()}
    )


def diff_html(diff: dict[str, Any] | None) -> str:
    """What changed since the previous answer of the same query; a hint when there is nothing to compare."""
    if diff is None:
        return wrap("<p class='muted'>Edit a record, then re-run the same query (↻) to see what changed.</p>")
    counts = (
        f"+{len(diff['new'])} new, −{len(diff['removed'])} removed, {len(diff['moved'])} moved, "
        f"{len(diff['edited'])} edited · total {diff['total']['before']} → {diff['total']['after']}"
    )
    if not diff["snapshotChanged"]:
        counts += " · store unchanged"
    changed = [r for r in diff["rows"] if r["change"] != "same" or r["edited"]]
    if not changed:
        return wrap(f"<p><b>no change</b> · {counts}</p>")

    def rank(value: int | None) -> str:
        return "—" if value is None else str(value)

    rows = "".join(
        f"<tr><td><b>{escape(r['change'])}</b>{' · edited' if r['edited'] else ''}</td><td>{escape(r['id'])}</td>"
        f"<td>{escape(r['title'])}</td><td>{rank(r['before_rank'])} → {rank(r['after_rank'])}</td></tr>"
        for r in changed
    )
    head = "<tr><th>change</th><th>id</th><th>title</th><th>rank</th></tr>"
    return wrap(f"<p>{counts}</p><table>{head}{rows}</table>")


# -- the widget -------------------------------------------------------------------------------------


def known_types(store: Store) -> list[str]:
    """Every type the store knows: its records' types and the ontology's types and aliases (knowtk.yaml)."""
    snap = store.snapshot()
    return sorted({r.type for r in snap.records.values() if r.type} | set(snap.config.type_groups))


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hit_row(rank: int, hit: dict[str, Any], query: str | None) -> Row:
    """One compact row of a grep hit: rank and title, then id, type, lifecycle, score and the snippet."""
    title = hit["title"] or hit["id"]
    score = "—" if hit["score"] is None else f"{hit['score']:.3f}"
    facts = [f"<b>{escape(hit['id'])}</b>", escape(hit["type"]), escape(hit["lifecycle"]), f"score {score}"]
    via = hit.get("via")
    if via:
        facts.append(f"<span class='via'>↳ replaces {escape(via['id'])}</span>")
    snippet = highlight(_one_line((hit.get("snippet") or {}).get("text") or ""), query)
    return Row(
        key=hit["id"],
        label=f"{rank}. {_one_line(title, 120)}",
        tooltip=title,
        meta=" · ".join(facts) + f" · <span class='muted'>{snippet}</span>",
        tone="replacement" if via else "",
    )


class GrepWidget(Front):
    """knowledge_grep in a notebook: query, mode and filters, pages by nextOffset, rows that open in place.

    ``.result`` is the current page's :class:`~knowtk.Result` (``store.grep(...)``), ``.frame`` its
    DataFrame, ``.explained`` the last ``store.explain`` dict, ``.diff`` what changed between the
    last two answers of the same query and arguments (None until a re-run). A refused argument
    replaces the answer: ``.error`` says why (so does the status line), ``.result`` is None and
    ``.frame`` empty; nothing is raised from a callback. Clicking a row (``.rows.select(id)``, or
    setting ``.select.value``) shows that record and why it is there directly under the row. The "known at"
    field (or ``known_at=``) asks the store as its files stood then (``store.at``); its rows have no actions.
    """

    def __init__(
        self,
        store: Store,
        query: str = "",
        *,
        limit: int = 10,
        known_at: str | None = None,
        read_only: bool = False,
        **grep_args: Any,
    ) -> None:
        self.store = store
        self.asked: Store = store  # the store the current answer came from: this one, or a view of its past
        self.read_only = read_only  # True: no change actions under the selected record (so for a read-only store)
        self._holding: str | None = None  # after a save: the changed record, kept selected (never the first hit)
        self.result: Result | None = None
        self.explained: dict[str, Any] | None = None
        self.diff: dict[str, Any] | None = None
        self.error: str | None = None
        self.offset = 0
        self._answers: list[tuple[str, Result]] = []
        self._quiet = False
        self._build_query_controls(query, limit, grep_args)
        self.known_at = text_control("known at", "now, or YYYY-MM-DD", known_at or "", "240px")
        self._build_answer_panes()
        super().__init__(
            children=[
                W.HBox([self.query, self.search_button, self.rerun_button]),
                W.HBox([self.mode, self.lifecycle, self.known_at]),
                W.HBox([self.kind, self.type, self.tag, self.scope]),
                W.HBox([self.time_field, self.since, self.until, self.limit]),
                self.valid_at,
                self.status,
                self.issues,
                W.HBox([self.prev_button, self.page_label, self.next_button]),
                self.changed,
                self.rows,
                self.select,
                self.why,
                self.why_answer,
                self.changes,
            ]
        )
        self._wire()
        if query:
            self.search()
        else:
            self._render()

    def _build_query_controls(self, query: str, limit: int, grep_args: dict[str, Any]) -> None:
        """The query, its buttons, and one control per grep argument, set from ``grep_args``."""
        self.query = text_control("query", "words to search, then Enter", query, "420px")
        self.search_button = W.Button(description="Search", button_style="primary", layout=W.Layout(width="90px"))
        self.rerun_button = W.Button(
            description="↻ re-run", tooltip="same query, same page", layout=W.Layout(width="90px")
        )
        self.mode = W.ToggleButtons(
            options=("all", "any", "phrase"), value=grep_args.get("mode", "all"), description="mode"
        )
        self.lifecycle = W.ToggleButtons(
            options=LIFECYCLES, value=grep_args.get("lifecycle", "active"), description="lifecycle"
        )
        self.kind = W.Dropdown(
            options=[("any", ""), *((k, k) for k in KINDS)],
            value=grep_args.get("kind") or "",
            description="kind",
            layout=W.Layout(width="200px"),
        )
        self.type = text_control("type", "decision, meeting", joined(grep_args.get("type")), "220px")
        self.tag = text_control("tag", "all must match", joined(grep_args.get("tag")))
        folders = sorted(self.store.snapshot().folders)
        self.scope = W.Combobox(
            options=folders,
            value=grep_args.get("scope") or "",
            description="scope",
            placeholder="whole store",
            continuous_update=False,
            ensure_option=False,
            layout=W.Layout(width="240px"),
        )
        self.time_field = W.Dropdown(
            options=[("—", ""), *((f, f) for f in TIME_FIELDS)],
            value=grep_args.get("time_field") or "",
            description="date",
            layout=W.Layout(width="200px"),
        )
        self.since = text_control("since", "YYYY-MM-DD", grep_args.get("since") or "", "200px")
        self.until = text_control("until", "YYYY-MM-DD", grep_args.get("until") or "", "200px")
        self.limit = W.BoundedIntText(
            value=limit, min=1, max=50, description="per page", layout=W.Layout(width="160px")
        )
        hint = "YYYY-MM-DD or timestamp: in force then"
        self.valid_at = text_control("valid at", hint, grep_args.get("valid_at") or "", "320px")

    def _build_answer_panes(self) -> None:
        """Paging, status, the rows (each opens its record and why under it), why-not, and the diff."""
        self.prev_button = W.Button(description="◀ prev", disabled=True, layout=W.Layout(width="80px"))
        self.next_button = W.Button(description="next ▶", disabled=True, layout=W.Layout(width="80px"))
        self.page_label = W.HTML()
        self.status = W.HTML()
        self.issues = W.HTML()
        self.table = W.HTML()  # the page as one static table: the widget's HTML copy (.html())
        # the selection's state; the rows are what a person clicks, this keeps the id (and its old API)
        self.select = W.Dropdown(options=[], description="record", layout=W.Layout(display="none"))
        self.detail = W.HTML()
        self.explanation = W.HTML()
        self.actions = W.VBox()  # Edit fields, Supersede by…, Withdraw, Reinstate for the selected record
        self.changed = W.VBox()  # the receipt of a change that took the selected record out of the answer
        self.rows = RowList(W.VBox([self.explanation, self.detail, self.actions]), self._row_clicked)
        self.why = text_control("why?", "any id: why is it (not) here? Enter", "", "420px")
        self.why_answer = W.HTML()
        self.changes = W.HTML(diff_html(None))

    def _wire(self) -> None:
        """A changed control searches again; the buttons page, re-run and search; the rows select."""
        controls = (self.query, self.mode, self.lifecycle, self.kind, self.type, self.tag, self.scope)
        for control in (*controls, self.time_field, self.since, self.until, self.limit, self.known_at, self.valid_at):
            control.observe(lambda _change: self.search(), "value")
        self.search_button.on_click(lambda _b: self.search())
        self.rerun_button.on_click(lambda _b: self.refresh())
        self.prev_button.on_click(lambda _b: self.prev_page())
        self.next_button.on_click(lambda _b: self.next_page())
        self.select.observe(self._selected, "value")
        self.why.observe(self._why, "value")

    # -- what the controls say ----------------------------------------------------------------------
    def args(self) -> dict[str, Any]:
        """grep's keyword arguments as the controls set them (None for unset filters); no query, no offset."""
        return {
            "mode": self.mode.value,
            "lifecycle": self.lifecycle.value,
            "kind": self.kind.value or None,
            "type": listed(self.type.value),
            "tag": listed(self.tag.value),
            "scope": self.scope.value.strip() or None,
            "time_field": self.time_field.value or None,
            "since": self.since.value.strip() or None,
            "until": self.until.value.strip() or None,
            "valid_at": self.valid_at.value.strip() or None,
            "limit": self.limit.value,
        }

    @property
    def frame(self) -> pd.DataFrame:
        """The current page as ``Result.to_frame()`` (empty before the first search and after a refusal)."""
        if self.result is None:
            return frame_for("knowledge_grep", {"hits": [], "offset": 0})
        return self.result.to_frame()

    # -- actions ------------------------------------------------------------------------------------
    def search(self, offset: int = 0) -> Result | None:
        """Run the query from the controls at ``offset``; returns the Result (None when empty or refused)."""
        self.offset = offset
        if not self.query.value.strip():
            self.result, self.error = None, None
            self._render()
            return None
        try:
            when = self.known_at.value.strip()
            self.asked = self.store.at(when, argument="known at") if when else self.store
            result = self.asked.grep(self.query.value, **self.args(), offset=offset)
        except KnowtkError as exc:  # a refusal replaces the answer: no stale rows under a REFUSED banner
            self.result, self.error = None, str(exc)
            self._render()
            return None
        self.error, self.result = None, result
        self._remember(result)
        self._render()
        return result

    def refresh(self) -> Result | None:
        """Re-run the same query on the same page (after editing a record): ``.diff`` says what changed."""
        return self.search(self.offset)

    def next_page(self) -> Result | None:
        if self.result is None or self.result["nextOffset"] is None:
            return None
        return self.search(self.result["nextOffset"])

    def prev_page(self) -> Result | None:
        if self.result is None or self.offset == 0:
            return None
        return self.search(max(0, self.offset - self.limit.value))

    def explain(self, id: str, *, pane: W.HTML | None = None) -> dict[str, Any] | None:
        """``store.explain(id)`` for the current query and filters, shown in ``pane`` (the row's "why")."""
        pane = self.explanation if pane is None else pane
        if not self.query.value.strip():
            pane.value = wrap(banner("warn", "NO QUERY", "type words to search first: why is asked of a query"))
            return None
        try:
            present = {k: v for k, v in self.args().items() if k != "valid_at"}  # explain answers for today
            self.explained = self.asked.explain(id, query=self.query.value, **present)
        except KnowtkError as exc:
            self.explained = None
            pane.value = wrap(banner("bad", "UNKNOWN", escape(exc)))
            return None
        pane.value = explain_html(self.explained)
        return self.explained

    # -- rendering ----------------------------------------------------------------------------------
    def _remember(self, result: Result) -> None:
        key = repr(sorted(result.args.items()))
        last = self._answers[-1] if self._answers else None
        self._answers = [last, (key, result)] if last and last[0] == key else [(key, result)]
        self.diff = diff_answers(self._answers[0][1].to_dict(), result.to_dict()) if len(self._answers) == 2 else None

    def _type_hint(self) -> str:
        """Asked types the store has never heard of: say so, with the ones it knows (not just "no hits")."""
        asked = listed(self.type.value) or []
        known = known_types(self.store)
        unknown = [t for t in asked if t not in known]
        if not unknown:
            return ""
        names = ", ".join(repr(t) for t in unknown)
        return banner(
            "warn",
            "UNKNOWN TYPE",
            f"{escape(names)} {'is' if len(unknown) == 1 else 'are'} not in this store's ontology "
            f"(no record has {'it' if len(unknown) == 1 else 'them'} and knowtk.yaml does not name "
            f"{'it' if len(unknown) == 1 else 'them'}). Known types: {escape(', '.join(known))}.",
        )

    def _render_status(self) -> None:
        if self.error:
            self.status.value = wrap(
                banner("bad", "REFUSED", escape(self.error) + " — no answer is shown until the input is fixed.")
            )
        elif self.result is not None:
            known = self.result.to_dict().get("knownAt")
            summary = self.result.summary() + (f" · as the files stood at {known['instant']}" if known else "")
            self.status.value = wrap(f"<p class='muted'>{escape(summary)}</p>{self._type_hint()}")
        else:
            self.status.value = wrap(
                banner("warn", "NO QUERY", "Type one or more words and press Enter: an empty query has no answer.")
            )

    def _render(self) -> None:
        self._render_status()
        res = self.result
        self.changes.value = diff_html(self.diff)
        if res is None:
            self.table.value = self.issues.value = self.page_label.value = ""
            self.prev_button.disabled = self.next_button.disabled = True
            self._set_options([], [])
            return
        hits = res["hits"]
        self.issues.value = issues_html(res["coverage"])
        if hits:
            self.page_label.value = f"&nbsp;hits {self.offset + 1}–{self.offset + len(hits)} of {res['total']}&nbsp;"
        else:
            self.page_label.value = f"&nbsp;no hits (total {res['total']})&nbsp;"
        self.prev_button.disabled = self.offset == 0
        self.next_button.disabled = res["nextOffset"] is None
        labels = [
            (f"{self.offset + i + 1}. {h['id']}" + (f"  ↳ via {h['via']['id']}" if h["via"] else ""), h["id"])
            for i, h in enumerate(hits)
        ]
        rows = [hit_row(self.offset + i + 1, h, self.query.value) for i, h in enumerate(hits)]
        self._set_options(labels, rows)

    def _set_options(self, labels: list[tuple[str, str]], rows: list[Row]) -> None:
        keep = self.select.value
        self._quiet = True
        try:
            self.select.options = labels
            ids = [rid for _, rid in labels]
            first = (self._holding if self._holding in ids else None) if self._holding else (ids[0] if ids else None)
            self.select.value = keep if keep in ids else first
        finally:
            self._quiet = False
        self.rows.set_rows(rows, selected=self.select.value)
        self._show(self.select.value)

    def _why(self, change: dict[str, Any]) -> None:
        rid = change["new"].strip()
        if rid:
            self.explain(rid, pane=self.why_answer)
        else:
            self.why_answer.value = ""

    def _row_clicked(self, rid: str | None) -> None:
        if rid is not None and rid != self.select.value:
            self.select.value = rid  # -> _selected -> _show
        else:
            self._show(rid)

    def _selected(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self._show(change["new"])

    def _saved(self, receipt: dict[str, Any]) -> None:
        """A change was saved from the record's actions: search again (the next query reconciles it), keeping the
        selection and the receipt in view."""
        panel = panel_in(self.actions, self.changed)
        self._holding = panel.id if panel is not None else None
        try:
            self.refresh()
        finally:
            self._holding = None
        keep_out_of_answer(self.changed, panel, self.actions)

    def _show(self, rid: str | None) -> None:
        """Fill the record and "why" panes under the selected row, and mark it in the rows and the table."""
        res = self.result
        query = self.query.value
        self.table.value = grep_table_html(res.to_dict(), query=query, selected=rid) if res is not None else ""
        hit = next((h for h in res["hits"] if h["id"] == rid), None) if res is not None else None
        self.rows.mark(hit["id"] if hit else None)
        if hit is None:
            self.detail.value = self.explanation.value = ""
            self.actions.children = []
            return
        present = self.asked is self.store  # the past is read only: no actions on it
        self.actions.children = record_actions(
            self.store,
            hit["id"],
            on_saved=self._saved,
            read_only=self.read_only or not present,
            keep=panel_in(self.actions, self.changed),  # a receipt shown stays after a save
        )
        self.detail.value = record_html(self.asked.record(hit["id"]).to_dict(), hit=hit, query=query)
        self.explain(hit["id"])

    def html(self) -> str:
        """The widget's current state as static HTML (what GitHub shows of an executed notebook)."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.args().items() if v is not None)
        head = wrap(f"<p><b>GrepWidget</b> · query {escape(repr(self.query.value))} · {escape(args)}</p>")
        panes = [self.status.value, self.issues.value, self.table.value]
        if self.select.value:
            panes += [
                wrap(f"<p><b>selected</b> {escape(self.select.value)}</p>"),
                self.explanation.value,
                self.detail.value,
            ]
        if self.diff is not None:
            panes.append(self.changes.value)
        return head + "".join(panes)

    def __repr__(self) -> str:
        answer = self.result.summary() if self.result else ("refused: " + self.error if self.error else "no answer")
        return f"<GrepWidget {self.query.value!r}: {answer}>"
