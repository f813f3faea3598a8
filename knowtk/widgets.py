"""Notebook front ends: grep, lookup and chain widgets over the same ``Result`` objects as the API.

Every view is a pure function from a result dict to an HTML string (``grep_table_html``,
``lookup_html``, ``record_html``, ``explain_html``, ``diff_html``, ``issues_html``), so it can be
tested and reused without a browser. The widgets only wire ipywidgets controls to ``Store``
calls and put those strings into ``HTML`` widgets: the grep table is ``store.grep(...)``, its
detail pane ``store.record(id)``, its "why" pane ``store.explain(id, query=...)``. There is no
second query path.

A widget's MIME bundle carries a static ``text/html`` rendering beside the live view, so an
executed notebook still shows the answer where widgets do not run (GitHub, nbviewer).
Meaning never rests on colour alone: statuses are written out (FOUND, AMBIGUOUS, MISSING,
"↳ replaces …").
"""

from __future__ import annotations

import base64
import html
import io
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import ipywidgets as W
import pandas as pd

from .chains import chain_edges, chain_summary
from .errors import KnowtkError
from .frames import frame_for
from .query.common import KINDS, LIFECYCLES, TIME_FIELDS
from .results import Result
from .widgets_knowl import KnowlWidget  # written alongside; re-exported so every widget imports from here

if TYPE_CHECKING:
    from .store import Store

__all__ = [
    "ChainWidget",
    "GrepWidget",
    "KnowlWidget",
    "LookupWidget",
    "citation_text",
    "diff_answers",
    "diff_frame",
    "diff_html",
    "explain_html",
    "fold",
    "grep_table_html",
    "highlight",
    "issues_html",
    "lookup_html",
    "query_words",
    "record_html",
]

# -- text ------------------------------------------------------------------------------------------

# a word as the FTS5 unicode61 tokenizer sees one: letters and digits (combining marks stay attached)
_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")

_STYLE = """<style>
.knowtk table{border-collapse:collapse;font-size:12px;margin:4px 0}
.knowtk th,.knowtk td{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
.knowtk mark{background:#fde68a;padding:0 1px}
.knowtk tr.replacement td{background:#f5f3ff}
.knowtk tr.selected td{background:#e0f2fe}
.knowtk .muted{color:#666;font-size:11px}
.knowtk .via{color:#6b21a8;font-size:11px}
.knowtk .box{border-left:4px solid #999;padding:4px 8px;margin:4px 0;background:#fafafa}
.knowtk .good{border-left-color:#16a34a}.knowtk .warn{border-left-color:#d97706}.knowtk .bad{border-left-color:#dc2626}
.knowtk .issues{max-height:16em;overflow:auto}
.knowtk pre{white-space:pre-wrap;max-height:32em;overflow:auto;font-size:12px;background:#fafafa;padding:6px}
</style>"""


def _wrap(body: str) -> str:
    return f'<div class="knowtk">{_STYLE}{body}</div>'


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def fold(text: str) -> str:
    """Case- and diacritic-folded text: how the FTS5 tokenizer (``remove_diacritics 2``) compares words."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def query_words(query: str | None) -> frozenset[str]:
    """The folded words of a query (punctuation separates words, as in grep)."""
    return frozenset(_WORD.findall(fold(query or "")))


def highlight(text: str, query: str | Iterable[str] | None) -> str:
    """``text`` as escaped HTML with each word of ``query`` in ``<mark>`` (case and diacritics folded)."""
    words = query_words(query) if isinstance(query, str) or query is None else frozenset(fold(w) for w in query)
    out, last = [], 0
    for m in _WORD.finditer(text):
        if fold(m.group()) in words:
            out += [html.escape(text[last : m.start()]), "<mark>", html.escape(m.group()), "</mark>"]
            last = m.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def citation_text(citation: dict[str, Any] | None) -> str:
    """``id r2 · path L12–14 · sha256 1a2b3c4d5e6f`` — what to quote when citing a hit or record."""
    if not citation:
        return ""
    lines = ""
    if citation.get("lineStart") is not None:
        lines = f" L{citation['lineStart']}–{citation['lineEnd']}"
    sha = (citation.get("sha256") or "")[:12]
    return f"{citation['id']} r{citation['revision']} · {citation['path']}{lines} · sha256 {sha}"


# -- grep ------------------------------------------------------------------------------------------


def _lines(hit: dict[str, Any]) -> str:
    snip, cite = hit.get("snippet") or {}, hit.get("citation") or {}
    start, end = snip.get("lineStart"), snip.get("lineEnd")
    if start is None:
        start, end = cite.get("lineStart"), cite.get("lineEnd")
    return "" if start is None else f"L{start}–{end}"


def _hit_row(rank: int, hit: dict[str, Any], words: frozenset[str], selected: str | None) -> str:
    via = hit.get("via")
    classes = " ".join(c for c in ("replacement" if via else "", "selected" if hit["id"] == selected else "") if c)
    title = f"<b>{_e(hit['title'] or hit['id'])}</b><br><span class='muted'>{_e(hit['id'])}</span>"
    if via:
        title += (
            f"<div class='via'>↳ replaces {_e(via['id'])} r{_e(via['revision'])} “{_e(via['title'])}”, "
            "which matched (superseded wording)</div>"
        )
    score = "—" if hit["score"] is None else f"{hit['score']:.3f}"
    matched = ", ".join(hit["matches"])
    snip = hit.get("snippet") or {}
    text = highlight(snip.get("text") or "", words)
    if snip.get("field") in ("title", "aliases"):
        text = f"<span class='muted'>[{_e(snip['field'])}]</span> {text}"
    if snip and not snip.get("matchLocated", True):
        text = f"<span class='muted'>[opening excerpt]</span> {text}"
    return (
        f"<tr class='{classes}'><td>{rank}</td><td>{title}</td><td>{_e(hit['type'])}</td>"
        f"<td>{score}<br><span class='muted'>{_e(matched)}</span></td><td>{text}</td>"
        f"<td>{_e(hit['lifecycle'])}</td><td>{_e(hit['path'])}<br><span class='muted'>{_lines(hit)}</span></td></tr>"
    )


def grep_table_html(data: dict[str, Any], *, query: str | None = None, selected: str | None = None) -> str:
    """The results table of a knowledge_grep dict: one row per hit, query words highlighted in snippets."""
    index = data.get("index") or {}
    if index.get("state") != "ready":
        why = _e(index.get("error") or "no reason given")
        return _wrap(f"<div class='box bad'><b>INDEX UNAVAILABLE</b>: {why}. total is null: retry the query.</div>")
    hits, offset, total = data["hits"], data["offset"], data["total"]
    if not hits:
        beyond = f" at offset {offset}" if offset else ""
        return _wrap(f"<p><b>no hits</b>{beyond} (total {total})</p>")
    words = query_words(query)
    shown = f"{offset + 1}–{offset + len(hits)}"
    head = (
        f"<p><b>{total}</b> hit{'s' if total != 1 else ''} · showing {shown} · "
        f"<span class='muted'>snapshot {_e(data['snapshot'])}</span></p>"
    )
    rows = "".join(_hit_row(offset + i + 1, hit, words, selected) for i, hit in enumerate(hits))
    columns = "".join(f"<th>{c}</th>" for c in ("#", "title", "type", "score", "snippet", "lifecycle", "path"))
    return _wrap(f"{head}<table><thead><tr>{columns}</tr></thead><tbody>{rows}</tbody></table>")


def issues_html(coverage: dict[str, Any] | None) -> str:
    """coverage.issues as a visible list: an incomplete answer says so, with every issue."""
    issues = (coverage or {}).get("issues") or []
    if not issues:
        return _wrap("<p class='muted'>coverage complete: no validation issues in this scope</p>")
    rows = "".join(
        f"<tr><td>{_e(i['code'])}</td><td>{_e(i['path'])}</td><td>{_e(i['id'])}</td><td>{_e(i['message'])}</td></tr>"
        for i in issues
    )
    head = "<tr><th>code</th><th>path</th><th>id</th><th>message</th></tr>"
    return _wrap(
        f"<div class='box warn issues'><b>COVERAGE INCOMPLETE</b>: {len(issues)} issue{'s' if len(issues) != 1 else ''}"
        f" in this scope<table>{head}{rows}</table></div>"
    )


def record_html(data: dict[str, Any], *, hit: dict[str, Any] | None = None, query: str | None = None) -> str:
    """A knowledge_record dict as a detail pane: the record whole, its citation(s), query words highlighted."""
    record = data.get("record")
    if record is None:
        reason = data.get("reason") or {}
        what = f"{_e(reason.get('code'))} {_e(reason.get('detail') or '')}".strip()
        return _wrap(f"<div class='box bad'><b>{_e(data['status']).upper()}</b> {what}</div>")
    facts = [record["id"], f"{record['kind']}/{record['type']}", record["lifecycle"], f"r{record['revision']}"]
    parts = [f"<h4 style='margin:2px 0'>{_e(record['title'] or record['id'])}</h4>"]
    parts.append(f"<p class='muted'>{' · '.join(_e(f) for f in facts)}</p>")
    if record.get("summary"):
        parts.append(f"<p>{_e(record['summary'])}</p>")
    chain = record.get("chain")
    if record.get("supersededBy"):
        end = (
            f"ends at current {chain['current']}" if chain and chain["current"] else f"ends in {chain and chain['end']}"
        )
        parts.append(f"<p>superseded by <b>{_e(record['supersededBy'])}</b>; its chain {_e(end)}</p>")
    if record.get("supersedes"):
        parts.append(f"<p>supersedes {_e(', '.join(record['supersedes']))}</p>")
    cites = []
    if hit is not None:
        cites.append(f"cite this hit: <code>{_e(citation_text(hit['citation']))}</code>")
    cites.append(f"whole record: <code>{_e(citation_text(record['citation']))}</code>")
    parts.append("<p>" + "<br>".join(cites) + "</p>")
    if record.get("tags"):
        parts.append(f"<p class='muted'>tags: {_e(', '.join(record['tags']))}</p>")
    parts.append(f"<pre>{highlight(record.get('body') or '', query)}</pre>")
    return _wrap("".join(parts))


_STATUS_STYLE = {
    "hit": "good",
    "replacement": "good",
    "eligible": "good",
    "not_matched": "warn",
    "excluded": "bad",
}


def explain_html(ex: dict[str, Any]) -> str:
    """An explain() dict: the status in words, its one-line message, and every rule that applies."""
    style = _STATUS_STYLE.get(ex["status"], "")
    rule = f" · rule <b>{_e(ex['rule'])}</b>" if ex.get("rule") else ""
    rank = f" · rank {ex['rank']} of {ex['total']}" if ex.get("rank") else ""
    parts = [
        f"<div class='box {style}'><b>{_e(ex['status']).upper()}</b>{rule}{rank} — {_e(ex['id'])}"
        f"<br>{_e(ex['message'])}</div>"
    ]
    if len(ex.get("reasons") or []) > 1:
        rows = "".join(f"<tr><td>{_e(r['rule'])}</td><td>{_e(r['message'])}</td></tr>" for r in ex["reasons"])
        parts.append(f"<table><tr><th>rule</th><th>why</th></tr>{rows}</table>")
    return _wrap("".join(parts))


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
        return _wrap("<p class='muted'>Edit a record, then re-run the same query (↻) to see what changed.</p>")
    counts = (
        f"+{len(diff['new'])} new, −{len(diff['removed'])} removed, {len(diff['moved'])} moved, "
        f"{len(diff['edited'])} edited · total {diff['total']['before']} → {diff['total']['after']}"
    )
    if not diff["snapshotChanged"]:
        counts += " · store unchanged"
    changed = [r for r in diff["rows"] if r["change"] != "same" or r["edited"]]
    if not changed:
        return _wrap(f"<p><b>no change</b> · {counts}</p>")

    def rank(value: int | None) -> str:
        return "—" if value is None else str(value)

    rows = "".join(
        f"<tr><td><b>{_e(r['change'])}</b>{' · edited' if r['edited'] else ''}</td><td>{_e(r['id'])}</td>"
        f"<td>{_e(r['title'])}</td><td>{rank(r['before_rank'])} → {rank(r['after_rank'])}</td></tr>"
        for r in changed
    )
    head = "<tr><th>change</th><th>id</th><th>title</th><th>rank</th></tr>"
    return _wrap(f"<p>{counts}</p><table>{head}{rows}</table>")


# -- lookup ----------------------------------------------------------------------------------------

_LOOKUP_COLUMNS = ("id", "title", "type", "lifecycle", "path", "aliases")


def lookup_html(data: dict[str, Any], *, query: str | None = None) -> str:
    """A knowledge_lookup dict: FOUND, AMBIGUOUS (with every candidate) or MISSING, each shown its own way."""
    status, asked = data["status"], f" “{_e(query)}”" if query else ""
    candidates = data.get("candidates") or []
    if status == "found":
        head = f"<div class='box good'><b>FOUND</b>{asked} by {_e(data['matchedBy'])}</div>"
    elif status == "ambiguous":
        head = (
            f"<div class='box warn'><b>AMBIGUOUS</b>{asked}: {len(candidates)} records share this "
            f"{_e(data['matchedBy'])}; every candidate is listed, pick one by id</div>"
        )
    else:
        head = (
            f"<div class='box bad'><b>MISSING</b>{asked}: no eligible record has this id, title or alias. "
            "Lookup is exact (ids case-sensitive; names normalised, never fuzzy); grep searches words.</div>"
        )
    if not candidates:
        return _wrap(head)
    cells = "".join(f"<th>{c}</th>" for c in (*_LOOKUP_COLUMNS, "cite"))
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{_e(', '.join(c[k]) if k == 'aliases' else c[k])}</td>" for k in _LOOKUP_COLUMNS)
        + f"<td class='muted'>{_e(citation_text(c.get('citation')))}</td></tr>"
        for c in candidates
    )
    return _wrap(f"{head}<table><tr>{cells}</tr>{rows}</table>")


# -- widgets ---------------------------------------------------------------------------------------


def _joined(value: str | list[str] | tuple[str, ...] | None) -> str:
    return ", ".join([value] if isinstance(value, str) else value or [])


def _listed(text: str) -> list[str] | None:
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items or None


def _text(description: str, placeholder: str, value: str = "", width: str = "220px") -> W.Text:
    return W.Text(
        value=value,
        description=description,
        placeholder=placeholder,
        continuous_update=False,
        layout=W.Layout(width=width),
    )


class _Front(W.VBox):
    """A VBox whose MIME bundle adds a static HTML rendering, for places where widgets do not run."""

    def html(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.html()
        return bundle


class GrepWidget(_Front):
    """knowledge_grep in a notebook: query, mode and filters, pages by nextOffset, a detail and a "why" pane.

    ``.result`` is the current page's :class:`~knowtk.Result` (``store.grep(...)``), ``.frame`` its
    DataFrame, ``.explained`` the last ``store.explain`` dict, ``.diff`` what changed between the
    last two answers of the same query and arguments (None until a re-run). Bad arguments are
    shown in ``.error`` (and the status line), never raised from a callback.
    """

    def __init__(self, store: Store, query: str = "", *, limit: int = 10, **grep_args: Any) -> None:
        self.store = store
        self.result: Result | None = None
        self.explained: dict[str, Any] | None = None
        self.diff: dict[str, Any] | None = None
        self.error: str | None = None
        self.offset = 0
        self._answers: list[tuple[str, Result]] = []
        self._quiet = False
        self.query = _text("query", "words to search", query, "420px")
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
        self.type = _text("type", "decision, meeting", _joined(grep_args.get("type")), "220px")
        self.tag = _text("tag", "all must match", _joined(grep_args.get("tag")))
        folders = sorted(store.snapshot().folders)
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
        self.since = _text("since", "YYYY-MM-DD", grep_args.get("since") or "", "200px")
        self.until = _text("until", "YYYY-MM-DD", grep_args.get("until") or "", "200px")
        self.limit = W.BoundedIntText(
            value=limit, min=1, max=50, description="per page", layout=W.Layout(width="160px")
        )
        self.prev_button = W.Button(description="◀ prev", disabled=True, layout=W.Layout(width="80px"))
        self.next_button = W.Button(description="next ▶", disabled=True, layout=W.Layout(width="80px"))
        self.page_label = W.HTML()
        self.status = W.HTML()
        self.issues = W.HTML()
        self.table = W.HTML()
        self.select = W.Dropdown(options=[], description="record", layout=W.Layout(width="420px"))
        self.why = _text("why?", "any id: why is it (not) here?", "", "420px")
        self.detail = W.HTML()
        self.explanation = W.HTML()
        self.changes = W.HTML(diff_html(None))
        self.panes = W.Tab(children=[self.detail, self.explanation, self.changes], titles=("record", "why", "changes"))
        super().__init__(
            children=[
                W.HBox([self.query, self.search_button, self.rerun_button]),
                W.HBox([self.mode, self.lifecycle]),
                W.HBox([self.kind, self.type, self.tag, self.scope]),
                W.HBox([self.time_field, self.since, self.until, self.limit]),
                W.HBox([self.prev_button, self.page_label, self.next_button]),
                self.status,
                self.issues,
                self.table,
                W.HBox([self.select, self.why]),
                self.panes,
            ]
        )
        controls = (self.query, self.mode, self.lifecycle, self.kind, self.type, self.tag, self.scope)
        for control in (*controls, self.time_field, self.since, self.until, self.limit):
            control.observe(lambda _change: self.search(), "value")
        self.search_button.on_click(lambda _b: self.search())
        self.rerun_button.on_click(lambda _b: self.refresh())
        self.prev_button.on_click(lambda _b: self.prev_page())
        self.next_button.on_click(lambda _b: self.next_page())
        self.select.observe(self._selected, "value")
        self.why.observe(self._why, "value")
        if query:
            self.search()

    # -- what the controls say ----------------------------------------------------------------------
    def args(self) -> dict[str, Any]:
        """grep's keyword arguments as the controls set them (None for unset filters); no query, no offset."""
        return {
            "mode": self.mode.value,
            "lifecycle": self.lifecycle.value,
            "kind": self.kind.value or None,
            "type": _listed(self.type.value),
            "tag": _listed(self.tag.value),
            "scope": self.scope.value.strip() or None,
            "time_field": self.time_field.value or None,
            "since": self.since.value.strip() or None,
            "until": self.until.value.strip() or None,
            "limit": self.limit.value,
        }

    @property
    def frame(self) -> pd.DataFrame:
        """The current page as ``Result.to_frame()`` (an empty grep frame before the first search)."""
        if self.result is None:
            return frame_for("knowledge_grep", {"hits": [], "offset": 0})
        return self.result.to_frame()

    # -- actions ------------------------------------------------------------------------------------
    def search(self, offset: int = 0) -> Result | None:
        """Run the query from the controls at ``offset``; returns the Result (None when empty or refused)."""
        if not self.query.value.strip():
            self.result, self.error = None, None
            self._render()
            return None
        try:
            result = self.store.grep(self.query.value, **self.args(), offset=offset)
        except KnowtkError as exc:
            self.error = str(exc)
            self._render_status()
            return None
        self.error, self.result, self.offset = None, result, offset
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

    def explain(self, id: str) -> dict[str, Any] | None:
        """``store.explain(id)`` for the current query and filters, shown in the "why" pane."""
        if not self.query.value.strip():
            return None
        try:
            self.explained = self.store.explain(id, query=self.query.value, **self.args())
        except KnowtkError as exc:
            self.explained = None
            self.explanation.value = _wrap(f"<div class='box bad'><b>UNKNOWN</b> {_e(exc)}</div>")
            return None
        self.explanation.value = explain_html(self.explained)
        return self.explained

    # -- rendering ----------------------------------------------------------------------------------
    def _remember(self, result: Result) -> None:
        key = repr(sorted(result.args.items()))
        last = self._answers[-1] if self._answers else None
        self._answers = [last, (key, result)] if last and last[0] == key else [(key, result)]
        self.diff = diff_answers(self._answers[0][1].to_dict(), result.to_dict()) if len(self._answers) == 2 else None

    def _render_status(self) -> None:
        if self.error:
            self.status.value = _wrap(f"<div class='box bad'><b>REFUSED</b> {_e(self.error)}</div>")
        elif self.result is not None:
            self.status.value = _wrap(f"<p class='muted'>{_e(self.result.summary())}</p>")
        else:
            self.status.value = ""

    def _render(self) -> None:
        self._render_status()
        res = self.result
        self.changes.value = diff_html(self.diff)
        if res is None:
            self.table.value = self.issues.value = self.page_label.value = ""
            self.prev_button.disabled = self.next_button.disabled = True
            self._set_options([])
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
        self._set_options(labels)

    def _set_options(self, labels: list[tuple[str, str]]) -> None:
        keep = self.select.value
        self._quiet = True
        try:
            self.select.options = labels
            ids = [rid for _, rid in labels]
            self.select.value = keep if keep in ids else (ids[0] if ids else None)
        finally:
            self._quiet = False
        self._show(self.select.value)

    def _why(self, change: dict[str, Any]) -> None:
        if change["new"].strip():
            self.explain(change["new"].strip())
            self.panes.selected_index = 1

    def _selected(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self._show(change["new"])

    def _show(self, rid: str | None) -> None:
        """Fill the detail and "why" panes for the selected hit, and mark its row in the table."""
        res = self.result
        query = self.query.value
        if res is not None:
            self.table.value = grep_table_html(res.to_dict(), query=query, selected=rid)
        hit = next((h for h in res["hits"] if h["id"] == rid), None) if res is not None else None
        if hit is None:
            self.detail.value = self.explanation.value = ""
            return
        self.detail.value = record_html(self.store.record(hit["id"]).to_dict(), hit=hit, query=query)
        self.explain(hit["id"])

    def html(self) -> str:
        """The widget's current state as static HTML (what GitHub shows of an executed notebook)."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.args().items() if v is not None)
        head = _wrap(f"<p><b>GrepWidget</b> · query {_e(repr(self.query.value))} · {_e(args)}</p>")
        panes = [self.status.value, self.issues.value, self.table.value]
        if self.select.value:
            panes += [
                _wrap(f"<p><b>selected</b> {_e(self.select.value)}</p>"),
                self.explanation.value,
                self.detail.value,
            ]
        if self.diff is not None:
            panes.append(self.changes.value)
        return head + "".join(panes)

    def __repr__(self) -> str:
        return f"<GrepWidget {self.query.value!r}: {self.result.summary() if self.result else 'no answer'}>"


class LookupWidget(_Front):
    """knowledge_lookup in a notebook: FOUND, AMBIGUOUS (every candidate) or MISSING, shown distinctly.

    ``.result`` is the ``Result`` of ``store.lookup(...)``, ``.frame`` its DataFrame, ``.status`` its status.
    """

    def __init__(self, store: Store, query: str = "", *, lifecycle: str = "active") -> None:
        self.store = store
        self.result: Result | None = None
        self.error: str | None = None
        self.query = _text("lookup", "an id, a full title or an alias", query, "420px")
        self.lifecycle = W.ToggleButtons(options=LIFECYCLES, value=lifecycle, description="lifecycle")
        self.button = W.Button(description="Look up", button_style="primary", layout=W.Layout(width="90px"))
        self.output = W.HTML()
        super().__init__(children=[W.HBox([self.query, self.button]), self.lifecycle, self.output])
        self.query.observe(lambda _change: self.lookup(), "value")
        self.lifecycle.observe(lambda _change: self.lookup(), "value")
        self.button.on_click(lambda _b: self.lookup())
        if query:
            self.lookup()

    @property
    def status(self) -> str | None:
        return None if self.result is None else self.result["status"]

    @property
    def frame(self) -> pd.DataFrame:
        if self.result is None:
            return frame_for("knowledge_lookup", {"status": None, "matchedBy": None, "candidates": []})
        return self.result.to_frame()

    def lookup(self) -> Result | None:
        query = self.query.value.strip()
        if not query:
            self.result, self.output.value = None, ""
            return None
        try:
            self.result = self.store.lookup(query, lifecycle=self.lifecycle.value)
        except KnowtkError as exc:
            self.result, self.error = None, str(exc)
            self.output.value = _wrap(f"<div class='box bad'><b>REFUSED</b> {_e(exc)}</div>")
            return None
        self.error = None
        self.output.value = lookup_html(self.result.to_dict(), query=query)
        return self.result

    def html(self) -> str:
        return _wrap(f"<p><b>LookupWidget</b> · {_e(repr(self.query.value))}</p>") + self.output.value

    def __repr__(self) -> str:
        return f"<LookupWidget {self.query.value!r}: {self.status}>"


ALL_CHAINS = "(all chains)"


class ChainWidget(_Front):
    """Supersession chains of the store, or of one record: the picture, a summary per chain, the edges.

    ``.edges`` is :func:`knowtk.chains.chain_edges` for the selection, ``.summary`` its
    :func:`~knowtk.chains.chain_summary`, ``.png`` the drawn figure.
    """

    def __init__(self, store: Store, id: str | None = None) -> None:
        self.store = store
        self.edges = chain_edges(store, id)  # raises RecordNotFound for an id the store does not know
        self.summary = chain_summary(self.edges)
        self.png = b""
        self._quiet = False
        self.record = W.Dropdown(options=self._choices(id), value=id or ALL_CHAINS, description="chain of")
        self.refresh_button = W.Button(description="↻ refresh", layout=W.Layout(width="90px"))
        self.image = W.Image(format="png")
        self.table = W.HTML()
        super().__init__(children=[W.HBox([self.record, self.refresh_button]), self.image, self.table])
        self.record.observe(lambda _change: None if self._quiet else self.draw(), "value")
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

    def draw(self) -> pd.DataFrame:
        """Read the selected chains from the current snapshot and draw them; returns the edges."""
        import matplotlib.pyplot as plt

        from . import plots

        rid = None if self.record.value == ALL_CHAINS else self.record.value
        self.edges = chain_edges(self.store, rid)
        self.summary = chain_summary(self.edges)
        title = f"Supersession chain of {rid}" if rid else f"Supersession chains of {self.store.name}"
        ax = plots.plot_chains(self.edges, title=title)
        fig = ax.get_figure(root=True)
        buffer = io.BytesIO()
        if fig is not None:
            fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
            plt.close(fig)
        self.png = self.image.value = buffer.getvalue()
        shown = self.edges.drop(columns=["from_title", "to_title"])
        self.table.value = _wrap(
            "<b>chains, dead ends first</b>"
            + self.summary.to_html(index=False, na_rep="—")
            + "<b>edges</b>"
            + shown.to_html(index=False, na_rep="—")
        )
        return self.edges

    def html(self) -> str:
        picture = base64.b64encode(self.png).decode("ascii")
        return f"<img src='data:image/png;base64,{picture}'/>" + self.table.value

    def __repr__(self) -> str:
        return f"<ChainWidget {self.record.value}: {self.summary['chain'].nunique()} chain(s)>"
