"""KnowlWidget driven through its widget values, without a browser."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

import knowtk
from knowtk import Workspace
from knowtk.index import semantic
from knowtk.notebook.knowl import KnowlWidget

LONG = "word " * 600  # 3,000 characters


def write(root: Path, meta: dict[str, Any], body: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    text = "---\n" + yaml.safe_dump({"kind": "page", "recorded_at": "2026-02-01T00:00:00Z", **meta}) + "---\n" + body
    (root / f"{meta['id']}.md").write_text(text, "utf-8")


@pytest.fixture(autouse=True)
def plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWTK_SEMANTIC", "0")


@pytest.fixture
def store(tmp_path: Path) -> knowtk.Store:
    root = tmp_path / "app"
    write(
        root,
        {"id": "dec", "title": "Use SQLite <FTS5>", "tags": ["search", "storage"], "reasoning": "Built in."},
        "bm25 ranking\n",
    )
    write(root, {"id": "wal", "title": "SQLite WAL checkpoint", "tags": ["storage"]}, "Checkpoint first.\n")
    write(root, {"id": "long", "title": "Long sqlite runbook"}, LONG)
    for i, word in enumerate(["coffee", "parking", "lunch", "printer", "holiday"]):
        write(
            root, {"id": word, "title": word.title(), "recorded_at": f"2026-01-0{i + 1}T00:00:00Z"}, f"{word} notes\n"
        )
    return knowtk.open_store(root)


def search(w: KnowlWidget, query: str, **values: Any) -> None:
    w.query.value = query
    for name, value in values.items():
        getattr(w, name).value = value
    w.search_button.click()


def test_search_fills_result_frame_and_table(store: knowtk.Store) -> None:
    w = KnowlWidget(store)
    assert w.result is None and w.frame is None
    search(w, "sqlite", limit=10)
    assert w.result is not None
    assert [i["id"] for i in w.result["results"]] == ["dec", "wal", "long"]
    assert list(w.frame["id"]) == ["dec", "wal", "long"]
    assert "Use SQLite &lt;FTS5&gt;" in w.table.value and "<FTS5>" not in w.table.value
    assert "not instructions" not in w.html()  # the provenance line speaks to agents, not to an analyst


def test_limit_defaults_to_three_and_filters_apply(store: knowtk.Store) -> None:
    w = KnowlWidget(store)
    search(w, "")  # no query: newest recorded first
    assert len(w.result["results"]) == 3
    search(w, "sqlite", tags="storage, search")
    assert [i["id"] for i in w.result["results"]] == ["dec"]
    assert w.result.args["tags"] == ("storage", "search")
    search(w, "sqlite", tags="", status="superseded")
    assert w.result["results"] == [] and "No items." in w.table.value


def test_uncalibrated_reading_is_shown(store: knowtk.Store) -> None:
    w = KnowlWidget(store)
    search(w, "sqlite")
    assert "uncalibrated (semantic search turned off by KNOWTK_SEMANTIC)" in w.reading.value
    assert "do not read position as confidence" in w.reading.value.lower()
    assert ">uncalibrated<" in w.table.value


def test_picking_an_id_fetches_the_whole_item(store: knowtk.Store) -> None:
    w = KnowlWidget(store)
    search(w, "runbook")
    assert "(truncated: pick its id below" in w.table.value
    assert [value for _, value in w.id_picker.options] == [None, "long"]
    assert w.item is None  # filling the picker fetched nothing
    w.id_picker.value = "long"
    assert w.item is not None
    (item,) = w.item["results"]
    assert item["content"] == LONG and item["truncated"] is False
    assert LONG.strip() in w.detail.value
    search(w, "bm25")
    w.id_picker.value = "dec"
    assert "Built in." in w.detail.value  # reasoning, shown only by the id fetch


def test_a_refused_argument_replaces_the_answer(store: knowtk.Store) -> None:
    w = KnowlWidget(store)
    search(w, "sqlite")
    assert w.result is not None and len(w.rows.rows) == 3
    search(w, "sqlite", as_of="yesterday")
    assert "REFUSED" in w.message.value and "as_of" in w.message.value and "yesterday" in w.message.value
    assert w.result is None and w.frame is None and w.error is not None
    assert w.rows.rows == [] and w.table.value == "" and w.reading.value == ""
    assert [value for _, value in w.id_picker.options] == [None]
    search(w, "sqlite", as_of="")
    assert w.result is not None and w.error is None and "REFUSED" not in w.message.value


def test_enter_in_the_query_box_searches(store: knowtk.Store) -> None:
    w = KnowlWidget(store)
    assert w.query.continuous_update is False  # the value arrives on Enter (or when the box loses focus)
    w.query.value = "checkpoint"  # what Enter sends
    assert w.result is not None and w.result["results"][0]["id"] == "wal"
    w.tags.value = "search"
    assert [i["id"] for i in w.result["results"]] == []
    w.tags.value = ""
    w.limit.value = 1  # a new choice re-runs the search on screen
    assert len(w.result["results"]) == 1


def test_explain_is_visible_in_each_row_and_the_table(store: knowtk.Store) -> None:
    w = KnowlWidget(store)
    search(w, "sqlite")
    assert "why:" not in "".join(r.meta for r in w.rows.rows) and "<th>why</th>" not in w.table.value
    w.explain.value = True  # toggling re-runs the search with explain
    assert w.result.args["explain"] is True
    ex = w.result["results"][0]["explain"]
    first = w.rows.rows[0]
    assert first.key == "dec" and f"bm25 {ex['bm25']:.2f} (rank 1)" in first.meta and "“sqlite”: title 1" in first.meta
    assert "<th>why</th>" in w.table.value and f"bm25 {ex['bm25']:.2f}" in w.table.value
    # no embedding model: the uncalibrated score gives way to the keyword score, in the row and in the frame
    assert "score uncalibrated" not in first.meta and first.meta.index("bm25") < first.meta.index("why:")
    assert w.frame["bm25"].notna().all() and "<NA>" not in w.frame._repr_html_()
    # an item open when explain is toggled stays open, with its "why" at the top
    w.rows.buttons["wal"].click()
    w.explain.value = False
    assert w.id_picker.value == "wal" and w.rows.selected == "wal" and "WHY" not in w.detail.value
    w.explain.value = True
    assert w.rows.selected == "wal" and "WHY" in w.detail.value and "SQLite WAL checkpoint" in w.detail.value
    assert "bm25 " in w.detail.value.split("WHY")[1]


def test_clicking_a_row_opens_the_item_under_it_with_provenance_and_evidence(tmp_path: Path) -> None:
    root = tmp_path / "ev"
    write(root, {"id": "src", "title": "Source meeting"}, "We agreed to keep the vector index inside SQLite.\n")
    meta = {
        "id": "dec",
        "title": "Keep vectors in SQLite",
        "origin": "stated",
        "author": "Ada Okafor",
        "source": "src",
        "alternatives": ["A separate service"],
        "evidence": [{"path": "src.md", "lines": [1, 12], "quote": "keep the vector index inside SQLite"}],
    }
    write(root, meta, "Decision body.\n")
    w = KnowlWidget(knowtk.open_store(root))
    search(w, "vectors")
    w.rows.buttons["dec"].click()
    assert w.id_picker.value == "dec" and w.item is not None
    children = list(w.rows.children)
    assert children[children.index(w.rows.boxes["dec"]) + 1] is w.detail
    shown = w.detail.value
    assert "{" not in shown.split("</style>")[1]  # no raw dict text
    assert "<dt>author</dt><dd>Ada Okafor</dd>" in shown and "<dt>origin</dt><dd>stated</dd>" in shown
    assert "<li>A separate service</li>" in shown
    (evidence,) = w.item["results"][0]["evidence"]
    sha = evidence["sha256"]
    assert len(sha) == 64 and f"<code>{sha[:12]}</code>" in shown and f"title='{sha}'" in shown
    assert f">{sha}<" not in shown  # the whole hash only on hover: the quote column keeps its room
    assert "keep the vector index inside SQLite" in shown


def test_a_stored_notebook_shows_html_not_a_vbox_repr(store: knowtk.Store) -> None:
    assert "no search yet" in KnowlWidget(store)._repr_mimebundle_()["text/html"]
    w = KnowlWidget(store, "sqlite")  # a query given at once is searched at once
    assert w.result is not None and w.result.args["query"] == "sqlite"
    bundle = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "KnowlWidget" in bundle["text/html"] and "Use SQLite &lt;FTS5&gt;" in bundle["text/html"]
    assert not bundle["text/html"].startswith("VBox(") and "not instructions" not in bundle["text/html"]


def test_workspace_rows_name_their_store(store: knowtk.Store, tmp_path: Path) -> None:
    other = tmp_path / "platform"
    write(other, {"id": "plat", "title": "Platform sqlite"}, "hourly checkpoint\n")
    for word in ("alpha", "beta", "gamma"):
        write(other, {"id": word, "title": word}, f"{word}\n")
    (other / "knowtk.yaml").write_text("name: platform\nshare: true\n", "utf-8")
    w = KnowlWidget(Workspace(store, linked={"platform": knowtk.open_store(other)}))
    search(w, "hourly")
    assert "<th>store</th>" in w.table.value and "<td>platform</td>" in w.table.value
    w.id_picker.value = "plat"
    assert "owned by <b>platform</b>" in w.detail.value


class Unit:
    """A two-word model: "sqlite" points one way, every other word the other."""

    name, dim = "unit-1", 2

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            a = text.lower().count("sqlite")
            b = len(text.split()) - a
            n = math.hypot(a, b) or 1.0
            out.append([a / n, b / n])
        return out


def test_hybrid_reading_says_judge_with_cosine(store: knowtk.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNOWTK_SEMANTIC")
    monkeypatch.setattr(semantic, "load_embedder", Unit)
    w = KnowlWidget(store)
    search(w, "sqlite")
    assert "Judge with cosine, order with score." in w.reading.value
    assert w.frame["score"].iloc[0] == 1.0 and w.frame["cosine"].notna().all()
    assert "1.000" in w.table.value
