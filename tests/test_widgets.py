"""knowtk.widgets without a browser: set control values, click buttons, read .result, .frame and the HTML."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re
import subprocess
import sys
from html.parser import HTMLParser
from typing import Any

import pandas as pd
import pytest

import knowtk
from knowtk.notebook.chain_widget import ChainWidget, readable_edges
from knowtk.notebook.grep import GrepWidget, diff_answers, diff_frame, grep_table_html
from knowtk.notebook.lookup import LookupWidget, lookup_html
from knowtk.notebook.panes import issues_html
from knowtk.notebook.text import highlight, query_words
from knowtk.query.chains import chain_edges
from knowtk.ui.style import STYLE, escape
from tests.helpers import StoreBuilder


def same_answer(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two answers equal but for when they were asked."""
    return {k: v for k, v in a.items() if k != "freshness"} == {k: v for k, v in b.items() if k != "freshness"}


# ---------------------------------------------------------------------------
# pure views


def test_highlight_folds_case_and_diacritics_and_escapes() -> None:
    assert highlight("Café CAFE cafés", "cafe") == "<mark>Café</mark> <mark>CAFE</mark> cafés"
    assert highlight("<b>x</b> & x", "x") == "&lt;b&gt;<mark>x</mark>&lt;/b&gt; &amp; <mark>x</mark>"
    assert highlight("Inès Moreau", "ines") == "<mark>Inès</mark> Moreau"
    assert highlight("e\u0301te\u0301 ete", "ÉTÉ") == "<mark>e\u0301te\u0301</mark> <mark>ete</mark>"  # decomposed
    assert query_words("vector-index, FTS5!") == {"vector", "index", "fts5"}  # punctuation separates words
    assert highlight("snake_case", "snake") == "<mark>snake</mark>_case"
    assert highlight("plain", None) == "plain"


def test_results_table_marks_replacements_and_the_selected_row(demo_store: knowtk.Store) -> None:
    data = demo_store.grep("columnar").to_dict()
    table = grep_table_html(data, query="columnar", selected="dec-2026-021")
    assert table.count("<tr class=") == 1
    assert "↳ replaces dec-2025-012 r1" in table and "[opening excerpt]" in table
    assert (
        "class='replacement selected'" in table
        and "><span class='nowrap' style='white-space:nowrap'>—</span><br>" in table
    )
    assert "decisions/dec-2026-021.md" in table and "L28–39" in table
    hits = grep_table_html(demo_store.grep("vector index").to_dict(), query="Vector INDEX")
    assert hits.count("<tr class=") == 5 and "<mark>vector</mark>" in hits and "<mark>index</mark>" in hits
    assert "12.011" in hits and "title, aliases, body" in hits
    down = dict(data, hits=[], total=None, index={"state": "unavailable", "lag": False, "error": "disk I/O error"})
    assert "INDEX UNAVAILABLE" in grep_table_html(down) and "disk I/O error" in grep_table_html(down)
    empty = demo_store.grep("qwertyuiop").to_dict()
    assert "no hits" in grep_table_html(empty) and f"why: {escape(empty['why'])}" in grep_table_html(empty)


def test_results_table_is_tidy_like_a_frame(demo_store: knowtk.Store) -> None:
    """Ids and paths on one line, scores to three decimals, text cells left-aligned (the style's rule outweighs
    JupyterLab's right-aligning one)."""
    data = demo_store.grep("vector index").to_dict()
    table = grep_table_html(data, query="vector index")
    one_line = "style='white-space:nowrap'"
    for hit in data["hits"]:
        assert f"<span class='muted nowrap' {one_line}>{hit['id']}</span>" in table
        assert f"<span class='nowrap' {one_line}>{hit['path']}</span>" in table
        assert f"<span class='nowrap' {one_line}>{hit['score']:.3f}</span>" in table
    scores = re.findall(rf"<span class='nowrap' {one_line}>(-?\d+\.\d+)</span>", table)
    assert len(scores) == len(data["hits"]) and all(len(s.split(".")[1]) == 3 for s in scores)
    # the look is written on each cell too: a stored notebook opened before it runs keeps no <style>
    cells = _Elements(table.split("</style>", 1)[1])
    text_cells = [a for a in cells.named("td") + cells.named("th") if a.get("class") != "num"]
    assert len(text_cells) == 7 * (len(data["hits"]) + 1) - len(data["hits"])  # all but the ranks
    assert all("text-align:left" in (a.get("style") or "") for a in text_cells)
    rules = re.sub(r"\s+", " ", STYLE)
    assert re.search(r"\.knowtk\.knowtk th,\.knowtk\.knowtk td\{[^}]*text-align:left", rules)


def test_issues_are_listed_every_one(demo_store: knowtk.Store) -> None:
    coverage = demo_store.grep("search")["coverage"]
    shown = issues_html(coverage)
    assert "COVERAGE INCOMPLETE" in shown and f"{len(coverage['issues'])} issues" in shown
    assert all(issue["path"] in shown for issue in coverage["issues"])
    assert "coverage complete" in issues_html({"complete": True, "issues": []})


def test_lookup_statuses_are_shown_distinctly(demo_store: knowtk.Store) -> None:
    ambiguous = lookup_html(demo_store.lookup("Sam").to_dict(), query="Sam")
    assert "AMBIGUOUS" in ambiguous and "person-samantha-reyes" in ambiguous and "person-samir-haddad" in ambiguous
    found = lookup_html(demo_store.lookup("IVF index decision").to_dict())
    assert "FOUND" in found and "by alias" in found and "decisions/dec-2026-021.md" in found
    missing = lookup_html(demo_store.lookup("Sam Reyes").to_dict(), query="Sam Reyes")
    assert "MISSING" in missing and "<table>" not in missing and "never fuzzy" in missing


def test_diff_answers_new_removed_moved_edited() -> None:
    def answer(*ids: str, sha: str = "a", snapshot: str = "s1") -> dict[str, Any]:
        hits = [
            {"id": i, "title": i.upper(), "score": 1.0, "sha256": sha if i == "b" else "x", "via": None} for i in ids
        ]
        return {"hits": hits, "offset": 0, "total": len(ids), "snapshot": snapshot}

    diff = diff_answers(answer("a", "b", "c"), answer("b", "a", "d", sha="z", snapshot="s2"))
    assert diff["new"] == ["d"] and diff["removed"] == ["c"] and diff["edited"] == ["b"]
    assert diff["moved"] == [{"id": "b", "before": 2, "after": 1}, {"id": "a", "before": 1, "after": 2}]
    assert diff["total"] == {"before": 3, "after": 3} and diff["snapshotChanged"] is True
    frame = diff_frame(diff)
    assert frame["change"].tolist() == ["moved", "moved", "new", "removed"]
    assert str(frame["before_rank"].dtype) == "Int64" and pd.isna(frame.loc[2, "before_rank"])
    assert diff_frame(None).empty and list(diff_frame(None).columns) == list(frame.columns)


# ---------------------------------------------------------------------------
# GrepWidget


def test_setting_the_query_runs_grep_and_fills_result_frame_and_table(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, limit=5)
    assert w.result is None and w.frame.empty and list(w.frame.columns) == list(demo_store.grep("x").to_frame().columns)
    w.query.value = "vector index"
    assert isinstance(w.result, knowtk.Result)
    assert same_answer(w.result.to_dict(), demo_store.grep("vector index", limit=5).to_dict())
    pd.testing.assert_frame_equal(w.frame, w.result.to_frame())
    assert w.table.value.count("<tr class=") == 5 and "<mark>vector</mark>" in w.table.value
    assert "COVERAGE INCOMPLETE" in w.issues.value  # the demo's defects are shown, not hidden
    assert "hits 1–5 of 5" in w.page_label.value and w.next_button.disabled and w.prev_button.disabled


def test_pages_follow_next_offset(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "search", limit=10)
    first = w.result
    assert first is not None and first["nextOffset"] == 10 and not w.next_button.disabled
    w.next_button.click()
    assert w.result is not None and w.result["offset"] == 10 and w.offset == 10
    assert same_answer(w.result.to_dict(), demo_store.grep("search", limit=10, offset=10).to_dict())
    assert w.frame["rank"].tolist() == list(range(11, 21)) and not w.prev_button.disabled
    while w.result["nextOffset"] is not None:
        w.next_button.click()
    assert w.next_button.disabled and w.result["offset"] + len(w.result["hits"]) == w.result["total"]
    w.prev_button.click()
    assert w.result["offset"] == w.offset == first["total"] // 10 * 10 - 10
    w.query.value = "search index"  # a new query starts at the first page
    assert w.offset == 0 and w.result["offset"] == 0


def test_filters_and_mode_reach_grep(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "search", limit=50)
    w.type.value = "decision, meeting"
    assert set(w.frame["type"]) <= {"decision", "adr", "meeting", "call", "standup"} and len(w.frame) > 0
    assert same_answer(w.result.to_dict(), demo_store.grep("search", type=["decision", "meeting"], limit=50).to_dict())
    w.type.value = ""
    w.kind.value = "page"
    w.scope.value = "meetings"
    assert set(w.frame["kind"]) == {"page"} and all(w.frame["path"].str.startswith("meetings/"))
    w.scope.value = ""
    w.kind.value = ""
    w.tag.value = "search, storage"
    assert all({"search", "storage"} <= set(tags) for tags in w.frame["tags"])
    w.tag.value = ""
    w.time_field.value = "occurred_at"
    w.since.value = "2026-04-01"
    assert w.result["total"] == demo_store.grep("search", since="2026-04-01", limit=50)["total"] > 0
    w.since.value = ""
    w.time_field.value = ""
    w.lifecycle.value = "superseded"
    assert set(w.frame["lifecycle"]) == {"superseded"}
    w.lifecycle.value = "active"
    w.mode.value = "any"
    w.query.value = "zebrafish columnar"
    assert {"lab-log-2026-q1", "dec-2026-021"} <= set(w.frame["id"])


def test_a_refused_input_replaces_the_answer_in_the_view_and_in_result(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "vector index")
    assert w.result is not None and len(w.rows.rows) == 5
    w.time_field.value = "occurred_at"
    w.since.value = "2026-13-45"
    assert w.error is not None and "since" in w.error and "REFUSED" in w.status.value
    assert w.result is None and w.frame.empty and list(w.frame.columns) == list(demo_store.grep("x").to_frame().columns)
    assert w.rows.rows == [] and w.table.value == "" and w.page_label.value == "" and w.issues.value == ""
    assert w.detail.value == w.explanation.value == "" and w.next_button.disabled and w.prev_button.disabled
    assert "hits 1–" not in w.html() and "REFUSED" in w.html() and "refused: since" in repr(w)
    w.since.value = ""
    assert w.error is None and "REFUSED" not in w.status.value and w.result is not None and len(w.rows.rows) > 0
    w.scope.value = "no-such-folder"  # a bad scope is refused the same way
    assert "REFUSED" in w.status.value and "scope" in w.error and w.result is None and w.rows.rows == []


def test_an_empty_query_says_why_there_is_no_answer(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store)
    assert "NO QUERY" in w.status.value and "empty query has no answer" in w.status.value
    w.query.value = "search"
    assert "NO QUERY" not in w.status.value
    w.query.value = "   "
    assert w.result is None and w.rows.rows == [] and "NO QUERY" in w.status.value


def test_an_unknown_type_says_it_is_not_in_the_ontology_and_lists_the_known_ones(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "search")
    w.type.value = "decisoin"
    assert w.result is not None and w.result["total"] == 0
    known = sorted({r.type for r in demo_store.snapshot().records.values()})
    assert "UNKNOWN TYPE" in w.status.value and "&#x27;decisoin&#x27; is not in this store's ontology" in w.status.value
    assert all(t in w.status.value for t in known) and "decision" in known
    w.type.value = "decision"
    assert "UNKNOWN TYPE" not in w.status.value


def test_selecting_a_row_shows_the_record_whole_its_citation_and_why(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "vector index")
    assert w.select.value == w.result["hits"][0]["id"]  # the first hit is selected at once
    w.rows.buttons["dec-2026-021"].click()  # what a click on the row does
    assert w.select.value == w.rows.selected == "dec-2026-021"
    record = demo_store.record("dec-2026-021")["record"]
    hit = next(h for h in w.result["hits"] if h["id"] == "dec-2026-021")
    assert record["title"] in w.detail.value and "decisions/dec-2026-021.md L29–39" in w.detail.value
    assert hit["sha256"][:12] in w.detail.value and "Lumen keeps its" in w.detail.value  # the body, whole
    assert "class='replacement selected'" not in w.table.value and "class='selected'" in w.table.value
    assert w.explained is not None and w.explained["status"] == "hit" and w.explained["rank"] == 2
    assert "HIT" in w.explanation.value and "rank 2 of 5" in w.explanation.value
    # the record and its why sit directly under the clicked row, and only that row is marked
    children = list(w.rows.children)
    row = w.rows.boxes["dec-2026-021"]
    assert children[children.index(row) + 1] is w.rows.detail
    assert w.rows.detail.children == (w.explanation, w.detail, w.actions)  # actions: docs/mutations.md
    assert [k for k, box in w.rows.boxes.items() if "knowtk-selected" in box._dom_classes] == ["dec-2026-021"]
    w.select.value = w.result["hits"][0]["id"]  # the old API moves the detail too
    assert list(w.rows.children).index(w.rows.detail) == 2  # style, first row, detail


def test_rows_are_compact_one_line_titles_with_the_full_title_on_hover(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "search", limit=10)
    hits = w.result["hits"]
    assert [r.key for r in w.rows.rows] == [h["id"] for h in hits]
    for rank, (hit, row) in enumerate(zip(hits, w.rows.rows, strict=True), 1):
        button = w.rows.buttons[hit["id"]]
        assert button.description == f"{rank}. {hit['title']}" and "\n" not in button.description
        assert button.tooltip == hit["title"]  # the whole title on hover
        assert "\n" not in row.meta and hit["id"] in row.meta and hit["type"] in row.meta
    w.next_button.click()
    assert w.rows.rows[0].label.startswith("11. ")


def test_replacement_rows_name_the_record_they_were_reached_through(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "columnar")
    assert w.select.options == (("1. dec-2026-021  ↳ via dec-2025-012", "dec-2026-021"),)
    (row,) = w.rows.rows
    assert row.tone == "replacement" and "↳ replaces dec-2025-012" in row.meta
    assert w.frame["via_id"].tolist() == ["dec-2025-012"]
    assert w.explained["status"] == "replacement" and "REPLACEMENT" in w.explanation.value


def test_why_explains_any_id_for_the_current_query(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "GPU budget")
    w.why.value = "dec-2025-009"
    assert w.explained["rule"] == "chain_dead_end" and "dec-2026-099" in w.why_answer.value
    w.why.value = "no-such-id"
    assert w.explained is None and "UNKNOWN" in w.why_answer.value


def test_rerun_after_an_edit_shows_what_changed(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra facts", "zebra zebra")
    builder.page("b", "Notes", "a zebra once")
    builder.page("c", "Other", "nothing here")
    w = GrepWidget(builder.open(), "zebra")
    assert w.diff is None and "re-run" in w.changes.value
    assert w.frame["id"].tolist() == ["a", "b"]
    builder.page("c", "Zebra zebra zebra", "zebra")  # c now outranks everything
    builder.page("b", "Notes", "no stripes")  # b no longer matches
    w.rerun_button.click()
    assert w.frame["id"].tolist() == ["c", "a"]
    assert w.diff["new"] == ["c"] and w.diff["removed"] == ["b"]
    assert w.diff["moved"] == [{"id": "a", "before": 1, "after": 2}] and w.diff["snapshotChanged"]
    assert "+1 new, −1 removed, 1 moved" in w.changes.value
    w.refresh()  # unchanged store: nothing moved
    assert w.diff["new"] == w.diff["removed"] == w.diff["moved"] == [] and not w.diff["snapshotChanged"]
    assert "no change" in w.changes.value
    w.mode.value = "any"  # other arguments: a different query, nothing to compare with
    assert w.diff is None


def test_static_html_rides_along_in_the_mime_bundle(demo_store: knowtk.Store) -> None:
    w = GrepWidget(demo_store, "columnar")
    bundle = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "GrepWidget" in bundle["text/html"] and "↳ replaces dec-2025-012" in bundle["text/html"]
    assert repr(w).startswith("<GrepWidget 'columnar': knowledge_grep: 1 of 1")


class _Elements(HTMLParser):
    """The start tags of an HTML fragment with their attributes, and its text: what a browser would build."""

    def __init__(self, fragment: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(fragment)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


HOSTILE_BODY = """# Sampling plan

The sampling plan in three steps:

- draw a sample
- weigh the sample

Run `sample --seed 7` first:

```python
print("sample" < "z")
```

Read [the sampling guide](https://example.org/guide) and [this](javascript:alert(1)).

<script>alert("sample")</script> <img src=x onerror=alert(1)> ![chart](https://tracker.example/pixel.png)

averylongtokenwithoutanyspaceaverylongtokenwithoutanyspaceaverylongtokenwithoutanyspace
"""


def test_a_record_body_is_rendered_markdown_with_raw_html_inert(builder: StoreBuilder) -> None:
    builder.page("plan", "Sampling plan", HOSTILE_BODY)
    w = GrepWidget(builder.open(), "sample")
    assert w.select.value == "plan"
    pane = _Elements(w.detail.value)
    assert [a.get("class") for a in pane.named("div")][-1] == "md"  # the body, rendered
    assert pane.named("h1") and len(pane.named("li")) == 2 and pane.named("ul")  # heading and list
    assert pane.named("pre") and "language-python" in [a.get("class") for a in pane.named("code")]  # code block
    assert "<code><mark>sample</mark> --seed 7</code>" in w.detail.value  # inline code, the query word marked
    assert "<li>draw a <mark>sample</mark></li>" in w.detail.value  # marks inside the rendered text nodes
    links = pane.named("a")
    assert [a["href"] for a in links] == ["https://example.org/guide"]  # javascript: is not a link
    assert links[0]["rel"] == "noopener noreferrer nofollow" and links[0]["target"] == "_blank"
    # raw HTML in the source is text, never an element; the image is not fetched
    assert not pane.named("script") and not pane.named("img")
    assert not any(k.startswith("on") for _, attrs in pane.tags for k in attrs)
    text = "".join(pane.text)
    assert '<script>alert("sample")</script>' in text and "<img src=x onerror=alert(1)>" in text
    assert "[image: chart]" in text and "[this](javascript:alert(1))" in text
    # the citations the pane shows are kept, beside the rendered body
    assert (
        "cite this hit: <code>plan r1 · plan.md L" in w.detail.value and "whole record: <code>plan r1" in w.detail.value
    )
    # lookup shows the same pane
    found = LookupWidget(builder.open(), "plan")
    assert found.status == "found" and "<h1>Sampling plan</h1>" in found.detail.value


def test_record_bodies_wrap_between_words() -> None:
    """JupyterLab's output ``pre`` breaks anywhere (word-break: break-all): the body is no ``pre``, and the
    style sheet breaks only a token wider than its line."""
    rules = re.sub(r"\s+", " ", STYLE)
    assert re.search(r"\.knowtk \.md\{\{?[^}]*word-break:normal;overflow-wrap:anywhere", rules)
    assert re.search(r"div\.knowtk pre\{[^}]*word-break:normal;overflow-wrap:anywhere", rules)


# ---------------------------------------------------------------------------
# LookupWidget and ChainWidget


def test_lookup_widget(demo_store: knowtk.Store) -> None:
    w = LookupWidget(demo_store, "Sam")
    assert w.status == "ambiguous" and "AMBIGUOUS" in w.output.value
    pd.testing.assert_frame_equal(w.frame, demo_store.lookup("Sam").to_frame())
    assert w.frame["id"].tolist() == ["person-samantha-reyes", "person-samir-haddad"]
    w.query.value = "dec-2026-021"
    assert w.status == "found" and "FOUND" in w.output.value and "by id" in w.output.value
    w.query.value = "dec-2025-012"
    assert w.status == "missing"  # superseded: not in an active lookup
    w.lifecycle.value = "superseded"
    assert w.status == "found"
    w.query.value = ""
    assert w.result is None and w.frame.empty and "NO QUERY" in w.head.value
    assert "text/html" in w._repr_mimebundle_()


def test_lookup_of_a_superseded_id_says_it_exists_and_names_the_current_record(demo_store: knowtk.Store) -> None:
    w = LookupWidget(demo_store, "dec-2025-012")
    assert w.status == "missing" and w.result["candidates"] == []  # the contract's answer is unchanged
    chain = demo_store.explain("dec-2025-012")["chain"]
    assert w.current == chain["current"] == "dec-2026-021"
    for shown in (w.head.value, w.output.value, w.html()):
        assert "MISSING" in shown and "SUPERSEDED" in shown and "<b>dec-2025-012</b> exists" in shown
        assert "ends at the current record <b class='current'>dec-2026-021</b>" in shown
        assert " → ".join(chain["steps"]) in shown
    assert w.follow_button.description == "→ look up dec-2026-021" and w.follow_button.layout.display is None
    w.follow_button.click()
    assert w.query.value == "dec-2026-021" and w.status == "found" and w.follow_button.layout.display == "none"
    w.query.value = "dec-2025-009"  # superseded, and its chain ends in nothing
    assert w.status == "missing" and w.current is None and "ends in nothing" in w.head.value
    title = demo_store.snapshot().records["dec-2025-012"].title
    w.query.value = title  # its title: the same answer, and the same note
    assert w.status == "missing" and w.current == "dec-2026-021"
    assert f"“{title}” names <b>dec-2025-012</b>, which exists and is superseded." in w.head.value
    w.query.value = "no-such-record"  # no file carries it: plainly missing
    assert w.known is None and "SUPERSEDED" not in w.head.value and "never fuzzy" in w.head.value


def test_lookup_candidates_are_rows_that_open_the_record_under_them(demo_store: knowtk.Store) -> None:
    w = LookupWidget(demo_store, "Sam")
    assert [r.key for r in w.rows.rows] == ["person-samantha-reyes", "person-samir-haddad"]
    assert "AMBIGUOUS" in w.head.value and "2 records share this name" in w.head.value
    assert "<table>" not in w.head.value  # the candidates are the rows below, not a second table
    assert w.rows.selected is None and w.detail.value == ""  # ambiguous: the reader picks
    w.rows.buttons["person-samir-haddad"].click()
    children = list(w.rows.children)
    assert children[children.index(w.rows.boxes["person-samir-haddad"]) + 1] is w.rows.detail
    assert w.rows.detail.children == (w.detail, w.actions)  # the record, then its actions (docs/mutations.md)
    assert demo_store.record("person-samir-haddad")["record"]["title"] in w.detail.value
    w.query.value = "dec-2026-021"  # found: its one candidate is open at once
    assert w.rows.selected == "dec-2026-021" and "Lumen keeps its" in w.detail.value


def test_chain_widget(demo_store: knowtk.Store) -> None:
    w = ChainWidget(demo_store)
    pd.testing.assert_frame_equal(w.edges, chain_edges(demo_store))
    assert w.png.startswith(b"\x89PNG") and w.image.value == w.png
    assert "dec-2026-099" in w.table.value and w.summary["chain_end"].iloc[0] == "withdrawn"
    w.record.value = "dec-2026-008"
    assert w.edges["from_id"].tolist() == ["dec-2025-012", "dec-2025-027", "dec-2026-008"]
    assert len(w.summary) == 1 and "data:image/png;base64," in w._repr_mimebundle_()["text/html"]


def test_chain_widget_shows_dates_as_written_and_the_picture_at_its_own_size(demo_store: knowtk.Store) -> None:
    w = ChainWidget(demo_store, "dec-2026-008")
    dated = w.edges.dropna(subset=["from_date"])
    assert len(dated) > 0
    assert "00:00:00+00:00" not in w.table.value  # a date-only value is a date, not midnight UTC
    shown = readable_edges(w.edges)
    for value, text in zip(w.edges["from_date"], shown["from_date"], strict=True):
        if not pd.isna(value) and value == value.normalize():
            assert text == f"{value:%Y-%m-%d}" and text in w.table.value
    # the PNG holds twice the pixels it is shown at (sharp), and is shown at its own width (not stretched)
    width = int.from_bytes(w.png[16:20], "big")
    assert w.image.layout.width == f"{width // 2}px" and w.image.layout.max_width == "100%"
    assert width // 2 <= 1000


def test_import_knowtk_stays_light() -> None:
    code = "import sys, knowtk; print('ipywidgets' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_initial_arguments_set_the_controls(demo_store: knowtk.Store) -> None:
    args = {"mode": "any", "type": ["decision", "meeting"], "tag": "search", "scope": "decisions"}
    w = GrepWidget(demo_store, "search index", limit=20, **args)
    assert w.args() == {**args, "type": ["decision", "meeting"], "tag": ["search"], "lifecycle": "active",
                        "kind": None, "time_field": None, "since": None, "until": None, "valid_at": None,
                        "limit": 20}  # fmt: skip
    assert same_answer(w.result.to_dict(), demo_store.grep("search index", limit=20, **args).to_dict())
    w.why.value = "dec-2025-009"
    assert "chain_dead_end" in w.why_answer.value  # the answer to "why?" sits under its box


def test_chain_widget_refresh_reads_the_store_again(builder: StoreBuilder) -> None:
    builder.page("a", "A")
    w = ChainWidget(builder.open(), "a")  # a record on no chain: an empty picture, not an error
    assert w.edges.empty and w.record.options == ("(all chains)", "a")
    builder.page("old", "Old", status="superseded", superseded_by="a")
    w.refresh()
    assert w.record.value == "a" and w.record.options == ("(all chains)", "a", "old")
    assert w.edges[["from_id", "to_id", "chain_end"]].values.tolist() == [["old", "a", "current"]]
    with pytest.raises(knowtk.RecordNotFound):
        ChainWidget(builder.open(), "typo")
