"""``KnowlWidget``: knowl_query in a notebook, with the reading rules of its two numbers in view.

    from knowtk.widgets_knowl import KnowlWidget
    w = KnowlWidget(store_or_workspace)
    w            # displays: query, filters, results table, item picker, detail pane
    w.result     # the last search as a Result (w.frame: its DataFrame)

Choosing an id in the item picker fetches that item whole (``id`` fetch) into
the detail pane; ``w.item`` is that answer. Every value is plain widget state,
so the widget can be driven without a browser (set ``.value``, ``.click()``).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W
import pandas as pd

from .errors import KnowtkError
from .query.knowl import PROVENANCE, STATUSES
from .results import Result
from .store import Store
from .workspace import Workspace

__all__ = ["KnowlWidget"]

PREVIEW = 240  # characters of content shown per row; the whole item is one pick away


class KnowlWidget:
    """Query, filters and results of knowl_query over a Store or a Workspace."""

    def __init__(self, target: Store | Workspace, *, limit: int = 3) -> None:
        self.target = target
        self.result: Result | None = None
        self.item: Result | None = None
        self.query = W.Text(description="query", placeholder="the words that name the subject")
        self.tags = W.Text(description="tags", placeholder="all of: tag1, tag2")
        self.status = W.Dropdown(description="status", options=list(STATUSES), value="active")
        self.category = W.Text(description="category", placeholder="optional hint")
        self.as_of = W.Text(description="asOf", placeholder="2026-03-01 or 2026-03-01T12:00:00Z")
        self.limit = W.BoundedIntText(description="limit", value=limit, min=1, max=50)
        self.explain = W.ToggleButton(description="explain", value=False)
        self.search_button = W.Button(description="Search", button_style="primary")
        self.id_picker = W.Dropdown(description="item", options=[("(choose a result)", None)], value=None)
        self.message = W.HTML()
        self.reading = W.HTML()
        self.table = W.HTML()
        self.detail = W.HTML()
        self.provenance = W.HTML(f"<p style='font-size:smaller'><i>{html.escape(PROVENANCE)}</i></p>")
        self.search_button.on_click(lambda _: self.search())
        self.id_picker.observe(self._picked, names="value")
        self._filling = False
        self.box = W.VBox(
            [
                W.HBox([self.query, self.search_button, self.explain]),
                W.HBox([self.tags, self.status, self.category]),
                W.HBox([self.as_of, self.limit]),
                self.message,
                self.reading,
                self.table,
                self.provenance,
                self.id_picker,
                self.detail,
            ]
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)

    @property
    def frame(self) -> pd.DataFrame | None:
        return self.result.to_frame() if self.result is not None else None

    # -- actions ------------------------------------------------------------------------------------
    def search(self) -> Result | None:
        """Run the query the controls describe; a refused argument is shown, not raised."""
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
            self.message.value = f"<p style='color:#b00'>{html.escape(str(exc))}</p>"
            return None
        self.result = result
        data = result.to_dict()
        self.message.value = "".join(f"<p>{html.escape(note)}</p>" for note in data["notes"])
        self.reading.value = _reading(data)
        self.table.value = _table(data)
        self._filling = True
        try:
            ids = [(f"{row.get('_store') or ''} {row['id']}".strip(), row["id"]) for row in _rows(data)]
            self.id_picker.options = [("(choose a result)", None), *ids]
            self.id_picker.value = None
        finally:
            self._filling = False
        self.detail.value = ""
        return result

    def fetch(self, item_id: str) -> Result | None:
        """Fetch one item whole (``id``) into the detail pane."""
        try:
            self.item = self.target.knowl(id=item_id, include_evidence=True)
        except KnowtkError as exc:
            self.detail.value = f"<p style='color:#b00'>{html.escape(str(exc))}</p>"
            return None
        self.detail.value = _detail(self.item.to_dict())
        return self.item

    def _picked(self, change: dict[str, Any]) -> None:
        if not self._filling and change["new"]:
            self.fetch(change["new"])


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
        return (
            f"<p><b>score: {html.escape(ranking['score'])}</b>: the ranker has an order but no opinion on "
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
        text += f"<p style='color:#b60'>The best cosine is {max(cosines):.2f}: the best match is weak.</p>"
    return text


def _number(value: Any) -> str:
    if isinstance(value, str):  # uncalibrated (...): the reading line above says why
        return "uncalibrated"
    return f"{value:.3f}" if isinstance(value, float) else ""


def _table(data: dict[str, Any]) -> str:
    rows = _rows(data)
    if not rows:
        return "<p>No items.</p>"
    keyed = isinstance(data["results"], dict)
    heads = ["store"] if keyed else []
    heads += ["id", "title", "score", "cosine", "status", "category", "tags", "content"]
    out = ["<table class='knowtk-knowl'><thead><tr>", *(f"<th>{h}</th>" for h in heads), "</tr></thead><tbody>"]
    for row in rows:
        cells = [row["_store"]] if keyed else []
        cells += [row["id"], row["title"] or "", _number(row["score"]), _number(row.get("cosine"))]
        cells += [row["status"], row["category"], ", ".join(row["tags"])]
        content = row["content"][:PREVIEW] + ("…" if len(row["content"]) > PREVIEW or row["truncated"] else "")
        marker = " <i>(truncated: pick its id below to read it whole)</i>" if row["truncated"] else ""
        out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells))
        out.append(f"<td>{html.escape(content)}{marker}</td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _detail(data: dict[str, Any]) -> str:
    (item,) = _rows(data)
    owner = item.get("foreign", {}).get("owner")
    lines = [
        f"<h4>{html.escape(item['title'] or item['id'])} <code>{html.escape(item['id'])}</code></h4>",
        f"<p>status {html.escape(item['status'])} · category {html.escape(item['category'])}"
        + (f" · owned by <b>{html.escape(owner)}</b> (read-only here)" if owner else "")
        + "</p>",
        f"<pre style='white-space:pre-wrap'>{html.escape(item['content'])}</pre>",
    ]
    for name in ("reasoning", "alternatives", "provenance", "timestamps", "affectedPaths", "evidence"):
        value = item.get(name)
        if value:
            lines.append(f"<p><b>{name}</b>: {html.escape(str(value))}</p>")
    return "".join(lines)
