"""``KnowlWidget``: knowl_query in a notebook, with the reading rules of its two numbers in view.

    from knowtk.notebook.knowl import KnowlWidget
    w = KnowlWidget(store_or_workspace)
    w            # displays: query, filters, the result rows, each opening in place
    w.result     # the last search as a Result (w.frame: its DataFrame)

Enter in any text box runs the search. Clicking a result row (``w.rows.select(id)``, or setting
``w.id_picker.value``) fetches that item whole (``id`` fetch, with its evidence) directly under
the row; ``w.item`` is that answer. With ``explain`` on, each row says how it was ranked.
A refused argument replaces the answer. Every value is plain widget state, so the widget can be
driven without a browser (set ``.value``, ``.click()``).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W
import pandas as pd

from knowtk.errors import KnowtkError
from knowtk.notebook.base import text_control
from knowtk.notebook.markdown_body import body_html
from knowtk.query.tools.knowl import STATUSES
from knowtk.results import Result
from knowtk.store import Store
from knowtk.ui.front import Front
from knowtk.ui.rows import Row, RowList
from knowtk.ui.style import banner, escape, wrap
from knowtk.workspace import Workspace

__all__ = ["KnowlWidget", "detail_html", "explain_text", "table_html"]

PREVIEW = 240  # characters of content shown per row; the whole item is one click away
SHA_CHARS = 12  # a sha256 shown in a table: enough to tell files apart, short enough to leave room for quotes


class KnowlWidget(Front):
    """Query, filters and results of knowl_query over a Store or a Workspace."""

    def __init__(self, target: Store | Workspace, query: str = "", *, limit: int = 3) -> None:
        self.target = target
        self.result: Result | None = None
        self.item: Result | None = None
        self.error: str | None = None
        self.query = text_control("query", "the words that name the subject, then Enter", query, "420px")
        self.tags = text_control("tags", "all of: tag1, tag2")
        self.status = W.Dropdown(description="status", options=list(STATUSES), value="active")
        self.category = text_control("category", "optional hint")
        self.as_of = text_control("asOf", "2026-03-01 or 2026-03-01T12:00:00Z")
        self.limit = W.BoundedIntText(description="limit", value=limit, min=1, max=50)
        self.explain = W.ToggleButton(
            description="explain", value=False, tooltip="say how each result was ranked (raw BM25, terms, cosine)"
        )
        self.search_button = W.Button(description="Search", button_style="primary")
        # the picked item's id; rows are what a person clicks, this keeps the state (and its old API)
        self.id_picker = W.Dropdown(
            description="item", options=[("(choose a result)", None)], value=None, layout=W.Layout(display="none")
        )
        self.message = W.HTML()
        self.reading = W.HTML()
        self.table = W.HTML()  # the results as one static table: the widget's HTML copy (.html())
        self.detail = W.HTML()
        self.rows = RowList(self.detail, self._row_clicked)
        self._filling = False
        super().__init__(
            children=[
                W.HBox([self.query, self.search_button, self.explain]),
                W.HBox([self.tags, self.status, self.category]),
                W.HBox([self.as_of, self.limit]),
                self.message,
                self.reading,
                self.rows,
                self.id_picker,
            ]
        )
        self.search_button.on_click(lambda _: self.search())
        for control in (self.query, self.tags, self.category, self.as_of):  # Enter (or leaving the box) searches
            control.observe(lambda _change: self.search(), "value")
        for choice in (self.status, self.limit, self.explain):  # a new choice re-runs a search already shown
            choice.observe(lambda _change: self.search() if self.result is not None or self.error else None, "value")
        self.id_picker.observe(self._picked, names="value")
        self.box = self  # the widget itself: what older code displayed
        if query:
            self.search()

    @property
    def frame(self) -> pd.DataFrame | None:
        return self.result.to_frame() if self.result is not None else None

    # -- actions ------------------------------------------------------------------------------------
    def search(self) -> Result | None:
        """Run the query the controls describe; a refused argument is shown (and replaces the answer), not raised."""
        tags = [t.strip() for t in self.tags.value.split(",") if t.strip()]
        try:
            result = self.target.knowl(
                self.query.value.strip() or None,
                tags=tags or None,
                status=self.status.value,
                category=self.category.value.strip() or None,
                as_of=self.as_of.value.strip() or None,
                limit=self.limit.value,
                explain=self.explain.value,
            )
        except KnowtkError as exc:
            self.result, self.error, self.item = None, str(exc), None
            self.message.value = wrap(
                banner("bad", "REFUSED", escape(exc) + " — no answer is shown until the input is fixed.")
            )
            self.reading.value = self.table.value = self.detail.value = ""
            self._fill([])
            return None
        picked = self.id_picker.value
        self.result, self.error, self.item = result, None, None
        data = result.to_dict()
        notes = "".join(f"<p>{escape(note)}</p>" for note in data["notes"])
        if not self.query.value.strip():
            notes += "<p class='muted'>No query: the newest recorded items first. Type words and press Enter.</p>"
        self.message.value = wrap(notes) if notes else ""
        self.reading.value = _reading(data)
        self.table.value = table_html(data)
        self._fill(_rows(data))
        self.detail.value = ""
        if picked is not None and picked in self.rows.boxes:  # the item open before stays open
            self.id_picker.value = picked
        return result

    def fetch(self, item_id: str) -> Result | None:
        """Fetch one item whole (``id``, with its evidence) into the pane under its row."""
        try:
            self.item = self.target.knowl(id=item_id, include_evidence=True)
        except KnowtkError as exc:
            self.detail.value = wrap(banner("bad", "REFUSED", escape(exc)))
            return None
        row = next((r for r in _rows(self.result.to_dict()) if r["id"] == item_id), None) if self.result else None
        why = explain_text((row or {}).get("explain"))
        head = wrap(banner("good", "WHY", escape(why))) if why else ""
        self.detail.value = head + detail_html(self.item.to_dict())
        return self.item

    # -- rows and the picker ------------------------------------------------------------------------
    def _fill(self, rows: list[dict[str, Any]]) -> None:
        self._filling = True
        try:
            ids = [(f"{row.get('_store') or ''} {row['id']}".strip(), row["id"]) for row in rows]
            self.id_picker.options = [("(choose a result)", None), *ids]
            self.id_picker.value = None
        finally:
            self._filling = False
        self.rows.set_rows([_result_row(i + 1, row) for i, row in enumerate(rows)])

    def _row_clicked(self, item_id: str | None) -> None:
        if item_id is None:
            return
        if item_id != self.id_picker.value:
            self.id_picker.value = item_id  # -> _picked -> fetch
        else:
            self.fetch(item_id)

    def _picked(self, change: dict[str, Any]) -> None:
        if not self._filling and change["new"]:
            self.rows.mark(change["new"])
            self.fetch(change["new"])

    def html(self) -> str:
        """The widget's state as static HTML: what a stored notebook shows where widgets do not run."""
        head = wrap(f"<p><b>KnowlWidget</b> · query {escape(repr(self.query.value))}</p>")
        if self.result is None and self.error is None:
            head += wrap("<p class='muted'>no search yet: type words and press Enter</p>")
        parts = [self.message.value, self.reading.value, wrap(self.table.value), self.detail.value]
        return head + "".join(parts)  # the answer's provenance line speaks to agents: an analyst does not need it

    def __repr__(self) -> str:
        answer = self.result.summary() if self.result else ("refused: " + self.error if self.error else "no answer")
        return f"<KnowlWidget {self.query.value!r}: {answer}>"


# -- rendering ---------------------------------------------------------------------------------------


def _rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    results = data["results"]
    if isinstance(results, dict):
        return [{**item, "_store": store} for store, items in results.items() for item in items]
    return list(results)


def _reading(data: dict[str, Any]) -> str:
    """How to read this answer's numbers: judge with cosine, order with score."""
    ranking = data["ranking"]
    if isinstance(ranking["score"], str) and ranking["score"].startswith("uncalibrated"):
        return wrap(
            f"<p><b>score: {escape(ranking['score'])}</b>: the ranker has an order but no opinion on "
            "strength. Do not read position as confidence; judge the content itself.</p>"
        )
    if ranking["relevanceFloor"] is None:
        return ""
    floor = ranking["relevanceFloor"]
    text = (
        "<p><b>Judge with cosine, order with score.</b> score is the position on this page (top ≈ 1.0, not "
        f"comparable between queries); cosine is absolute similarity (below {floor:.2f} is not a semantic match).</p>"
    )
    cosines = [row["cosine"] for row in _rows(data) if "cosine" in row]
    if cosines and max(cosines) < floor:
        text += banner("warn", "WEAK", f"The best cosine is {max(cosines):.2f}: the best match is weak.")
    return wrap(text)


def _number(value: Any) -> str:
    if isinstance(value, str):  # uncalibrated (...): the reading line above says why
        return "uncalibrated"
    return f"{value:.3f}" if isinstance(value, float) else ""


def explain_text(ex: dict[str, Any] | None) -> str:
    """A result's ``explain`` dict in one line: raw BM25 and rank, each term's field hits, cosine."""
    if not ex:
        return ""
    if "order" in ex:
        return f"{ex['order']} (recorded {ex.get('recordedAt') or '—'})"
    parts = []
    if ex.get("bm25") is not None:
        parts.append(f"bm25 {ex['bm25']:.2f} (rank {ex.get('bm25Rank')})")
    else:
        parts.append("no keyword match")
    for term, hits in (ex.get("terms") or {}).items():
        fields = ", ".join(f"{f} {hits[f]}" for f in ("title", "aliases", "body") if hits.get(f))
        parts.append(f"“{term}”: {fields or 'absent'}")
    if ex.get("cosine") is not None:
        parts.append(f"cosine {ex['cosine']:.2f} (rank {ex.get('cosineRank') or '—'})")
    return " · ".join(parts)


def _result_row(position: int, row: dict[str, Any]) -> Row:
    title = row["title"] or row["id"]
    facts = [f"<b>{escape(row['id'])}</b>"]
    if row.get("_store"):
        facts.insert(0, f"[{escape(row['_store'])}]")
    bm25 = (row.get("explain") or {}).get("bm25")
    if isinstance(row["score"], str) and isinstance(bm25, float):  # uncalibrated: the keyword score says more
        facts.append(f"bm25 {bm25:.2f}")
    else:
        facts.append(f"score {_number(row['score'])}")
    if "cosine" in row:
        facts.append(f"cosine {_number(row['cosine'])}")
    facts += [escape(row["status"]), escape(row["category"])]
    why = explain_text(row.get("explain"))
    meta = " · ".join(facts)
    if why:
        meta += f" · <span class='via'>why: {escape(why)}</span>"
    else:
        meta += f" · <span class='muted'>{escape(' '.join(row['content'].split())[:PREVIEW])}</span>"
    return Row(key=row["id"], label=f"{position}. {title}", tooltip=title, meta=meta)


def table_html(data: dict[str, Any]) -> str:
    """The results as one table (with a "why" column when ``explain`` was asked)."""
    rows = _rows(data)
    if not rows:
        return "<p>No items.</p>"
    keyed = isinstance(data["results"], dict)
    explained = any("explain" in row for row in rows)
    heads = ["store"] if keyed else []
    heads += ["id", "title", "score", "cosine", "status", "category", "tags", "content"]
    heads += ["why"] if explained else []
    out = ["<table class='knowtk-knowl'><thead><tr>", *(f"<th>{h}</th>" for h in heads), "</tr></thead><tbody>"]
    for row in rows:
        cells = [row["_store"]] if keyed else []
        cells += [row["id"], row["title"] or "", _number(row["score"]), _number(row.get("cosine"))]
        cells += [row["status"], row["category"], ", ".join(row["tags"])]
        content = row["content"][:PREVIEW] + ("…" if len(row["content"]) > PREVIEW or row["truncated"] else "")
        marker = " <i>(truncated: pick its id below to read it whole)</i>" if row["truncated"] else ""
        out.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells))
        out.append(f"<td>{escape(content)}{marker}</td>")
        if explained:
            out.append(f"<td class='muted'>{escape(explain_text(row.get('explain')))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _facts(values: dict[str, Any]) -> str:
    """A flat dict as a definition list, leaving out the empty entries."""
    items = [(k, v) for k, v in values.items() if v not in (None, "", [], {})]
    if not items:
        return "<span class='muted'>none</span>"
    return "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items) + "</dl>"


def _evidence_table(evidence: list[dict[str, Any]]) -> str:
    heads = ("quote", "path", "lines", "verified", "sha256")
    rows = []
    for ev in evidence:
        lines = f"L{ev['lineStart']}–{ev['lineEnd']}" if ev.get("lineStart") is not None else ""
        verified = "yes" if ev.get("verified") else f"NO: {ev.get('reason') or 'not verified'}"
        sha = ev.get("sha256") or ""
        rows.append(
            f"<tr><td>{escape(ev.get('quote'))}</td><td>{escape(ev.get('path'))}</td><td>{lines}</td>"
            f"<td>{escape(verified)}</td><td title='{escape(sha)}'><code>{escape(sha[:SHA_CHARS])}</code></td></tr>"
        )
    return "<table><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr>" + "".join(rows) + "</table>"


def detail_html(data: dict[str, Any]) -> str:
    """One item fetched whole: its content, reasoning, alternatives, provenance, dates, paths and evidence."""
    (item,) = _rows(data)
    owner = item.get("foreign", {}).get("owner")
    parts = [
        f"<h4>{escape(item['title'] or item['id'])} <code>{escape(item['id'])}</code></h4>",
        f"<p>status {escape(item['status'])} · category {escape(item['category'])}"
        + (f" · owned by <b>{escape(owner)}</b> (read-only here)" if owner else "")
        + "</p>",
        body_html(item["content"] or ""),  # the record's Markdown, rendered safe
    ]
    if item.get("reasoning"):
        parts.append(f"<p><b>reasoning</b>: {escape(item['reasoning'])}</p>")
    if item.get("alternatives"):
        listed = "".join(f"<li>{escape(a)}</li>" for a in item["alternatives"])
        parts.append(f"<p><b>alternatives</b></p><ul>{listed}</ul>")
    if item.get("provenance"):
        parts.append(f"<p><b>provenance</b></p>{_facts(item['provenance'])}")
    if item.get("timestamps"):
        parts.append(f"<p><b>timestamps</b></p>{_facts(item['timestamps'])}")
    if item.get("affectedPaths"):
        paths = ", ".join(f"<code>{escape(p)}</code>" for p in item["affectedPaths"])
        parts.append(f"<p><b>affectedPaths</b>: {paths}</p>")
    if item.get("evidence"):
        parts.append(f"<p><b>evidence</b></p>{_evidence_table(item['evidence'])}")
    return wrap("".join(parts))
