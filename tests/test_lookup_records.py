"""knowledge_lookup (exact, never fuzzy), knowledge_records (the inventory) and knowledge_record (one, whole)."""

from __future__ import annotations

import pytest

import knowtk
from tests.helpers import StoreBuilder


@pytest.fixture
def store(builder: StoreBuilder) -> knowtk.Store:
    builder.page("dec-1", "Use SQLite  FTS5", "body", aliases=["FTS decision"], kind="claim", type="decision")
    builder.page("dec-2", "Vector index", aliases=["fts decision"], kind="claim", type="decision")
    builder.page("p-1", "Ｆｕｌｌｗｉｄｔｈ Title")
    builder.page("old", "Old wording", status="superseded", superseded_by="dec-1", kind="claim")
    builder.page("gone", "Gone", status="withdrawn")
    return builder.open()


def test_exact_id_is_case_sensitive(store) -> None:
    res = store.call("knowledge_lookup", {"query": "dec-1"})
    assert res["status"] == "found" and res["matchedBy"] == "id" and res["record"]["id"] == "dec-1"
    assert res["candidates"] == [res["record"]]
    assert store.call("knowledge_lookup", {"query": "DEC-1"})["status"] == "missing"


def test_titles_are_normalised_but_never_fuzzy(store) -> None:
    for query in ("use sqlite fts5", "  USE   SQLite\tFTS5 ", "Use SQLite FTS5"):
        res = store.call("knowledge_lookup", {"query": query})
        assert (res["status"], res["matchedBy"], res["record"]["id"]) == ("found", "title", "dec-1")
    assert store.call("knowledge_lookup", {"query": "fullwidth title"})["record"]["id"] == "p-1"  # NFKC
    for query in ("Use SQLite", "use sqlite fts", "Use SQLite FTS5!", "sqlite"):
        assert store.call("knowledge_lookup", {"query": query})["status"] == "missing"


def test_ambiguity_lists_every_candidate(store) -> None:
    res = store.call("knowledge_lookup", {"query": "FTS Decision"})
    assert res["status"] == "ambiguous" and res["record"] is None
    assert [c["id"] for c in res["candidates"]] == ["dec-1", "dec-2"]


def test_lifecycle_and_availability_apply_to_lookup(store) -> None:
    assert store.call("knowledge_lookup", {"query": "old"})["status"] == "missing"
    res = store.call("knowledge_lookup", {"query": "old", "lifecycle": "superseded"})
    assert res["status"] == "found" and res["record"]["lifecycle"] == "superseded"
    assert store.call("knowledge_lookup", {"query": "gone", "lifecycle": "all"})["status"] == "missing"


def test_lookup_limits(store) -> None:
    assert store.call("knowledge_lookup", {"query": "x" * 200})["status"] == "missing"
    for bad in ("", "x" * 201):
        with pytest.raises(knowtk.InvalidArgument) as err:
            store.call("knowledge_lookup", {"query": bad})
        assert err.value.argument == "query" and "200" in str(err.value)


def test_records_is_the_exhaustive_sorted_inventory(builder: StoreBuilder) -> None:
    for i in range(250):
        builder.page(f"r{i:03d}", f"Record {i}", kind="claim" if i % 2 else "page")
    builder.page("s", "Superseded", status="superseded", superseded_by="r000")
    store = builder.open()
    seen, offset = [], 0
    while offset is not None:
        res = store.call("knowledge_records", {"limit": 100, "offset": offset})
        assert res["total"] == 250
        seen += [r["id"] for r in res["rows"]]
        offset = res["nextOffset"]
    assert seen == sorted(f"r{i:03d}" for i in range(250))
    assert store.records(kind="claim")["total"] == 125
    assert store.records(lifecycle="all")["total"] == 251
    row = store.records(lifecycle="superseded")["rows"][0]
    assert row["id"] == "s" and row["supersededBy"] == "r000"
    assert store.records(offset=10_000)["rows"] == []  # offsets are not capped: the inventory is exhaustive


def test_record_returns_the_record_whole(builder: StoreBuilder) -> None:
    builder.page("p", "Ada", type="person")
    builder.page("v1", "First", "first body", kind="claim", status="superseded", superseded_by="v2")
    builder.page(
        "v2",
        "Second",
        "second body\nline two\n",
        kind="claim",
        revision=2,
        status="superseded",
        superseded_by="v3",
        owner="p",
        reasoning="because",
        alternatives=["a", "b"],
        fields={"x": 1},
    )
    builder.page("v3", "Third", kind="claim", revision=3)
    store = builder.open()
    res = store.call("knowledge_record", {"id": "v2"})
    rec = res["record"]
    lines = (builder.root / "v2.md").read_text().split("\n")
    assert lines[rec["bodyLine"] - 1] == "second body" and lines[rec["bodyLine"] - 2] == "---"
    assert res["status"] == "found" and res["reason"] is None
    assert rec["lifecycle"] == "superseded" and rec["supersededBy"] == "v3" and rec["supersedes"] == ["v1"]
    assert rec["chain"] == {"current": "v3", "end": "current", "steps": ["v3"]}
    assert rec["body"] == "second body\nline two\n" and rec["bodyLine"] == 16
    assert rec["citation"]["lineStart"] == 1 and rec["citation"]["lineEnd"] == 17
    assert rec["frontmatter"]["fields"] == {"x": 1} and rec["reasoning"] == "because"
    assert rec["owner"] == "p" and rec["category"] == "claim"
    assert store.call("knowledge_record", {"id": "v1"})["record"]["chain"]["steps"] == ["v2", "v3"]
    assert store.call("knowledge_record", {"id": "nope"}) | {"freshness": None} == {
        "status": "missing",
        "record": None,
        "reason": None,
        "coverage": {"complete": True, "issues": []},
        "freshness": None,
        "file": None,
        "suggestions": [],  # no id is close to "nope"
    }


def test_duplicated_id_record_reports_why(builder: StoreBuilder) -> None:
    builder.page("d", "One", path="a.md")
    builder.page("d", "Two", path="b.md")
    res = builder.open().call("knowledge_record", {"id": "d"})
    assert res["status"] == "unavailable" and res["reason"]["code"] == "id_duplicate"


def test_frames_hold_far_future_dates(builder: StoreBuilder) -> None:
    builder.page("f", "Far", kind="claim", occurred_at="2999-01-01", recorded_at="0001-01-01T00:00:00Z")
    frame = builder.open().records().to_frame()
    assert frame.loc[0, "occurred_at"].year == 2999 and frame.loc[0, "recorded_at"].year == 1


def test_frames_have_stable_columns_and_dtypes(store) -> None:
    full = store.grep("fts5 decision", mode="any").to_frame()
    empty = store.grep("nothingmatches").to_frame()
    assert list(full.columns) == list(empty.columns) and len(empty) == 0
    assert dict(full.dtypes) == dict(empty.dtypes)
    assert str(full["revision"].dtype) == "Int64" and str(full["score"].dtype) == "Float64"
    assert isinstance(full["tags"].iloc[0], list) and isinstance(full["matches"].iloc[0], list)
    records = store.records(lifecycle="all").to_frame()
    assert len(records) == 4 and str(records["occurred_at"].dtype) == "datetime64[us, UTC]"
    lookup = store.lookup("fts decision").to_frame()
    assert list(lookup["id"]) == ["dec-1", "dec-2"] and set(lookup["status"]) == {"ambiguous"}
    one = store.record("dec-1").to_frame()
    assert len(one) == 1 and one["body"].iloc[0] == "body"
