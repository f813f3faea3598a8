"""STORE.md §1: every validity rule is a coverage issue, and excluded records are excluded in every mode."""

from __future__ import annotations

import pytest

from tests.helpers import StoreBuilder, codes

MODES = ("all", "any", "phrase")


def visible_ids(store, query: str = "zebra") -> dict[str, set[str]]:
    """Where a record can be seen: grep in every mode and lifecycle, lookup, records."""
    seen = {}
    for mode in MODES:
        for lifecycle in ("active", "superseded", "all"):
            hits = store.call("knowledge_grep", {"query": query, "mode": mode, "lifecycle": lifecycle})["hits"]
            seen[f"grep-{mode}-{lifecycle}"] = {h["id"] for h in hits}
    seen["records"] = {r["id"] for r in store.call("knowledge_records", {"lifecycle": "all"})["rows"]}
    return seen


def assert_excluded(store, rid: str) -> None:
    for where, ids in visible_ids(store).items():
        assert rid not in ids, f"{rid} visible in {where}"
    assert store.call("knowledge_lookup", {"query": rid, "lifecycle": "all"})["status"] == "missing"
    assert store.call("knowledge_record", {"id": rid})["status"] != "found"


def test_valid_record_is_visible_everywhere(builder: StoreBuilder) -> None:
    builder.page("ok-1", "Zebra crossing", "zebra body")
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in res["hits"]] == ["ok-1"]
    assert res["coverage"] == {"complete": True, "issues": []}
    assert all("ok-1" in ids for where, ids in visible_ids(store).items() if "superseded" not in where)


@pytest.mark.parametrize(
    "raw_id",
    ["-starts-with-dash", "has space", "_underscore", "slash/id", "x" * 129, "ümlaut"],
)
def test_invalid_id_is_excluded_and_reported(builder: StoreBuilder, raw_id: str) -> None:
    builder.write("bad.md", {"id": raw_id, "kind": "page", "title": "Zebra"}, "zebra")
    builder.page("ok-1", "Other", "zebra")
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in res["hits"]] == ["ok-1"]
    assert res["coverage"]["complete"] is False
    assert codes(res) == ["id_invalid"]
    assert res["coverage"]["issues"][0]["path"] == "bad.md"
    assert_excluded(store, raw_id)


def test_id_of_128_characters_is_valid_and_ids_are_case_sensitive(builder: StoreBuilder) -> None:
    long_id = "a" + "b" * 127
    builder.page(long_id, "Zebra long")
    builder.page("Case-ID", "Zebra case")
    store = builder.open()
    assert store.call("knowledge_lookup", {"query": long_id})["status"] == "found"
    assert store.call("knowledge_lookup", {"query": "Case-ID"})["status"] == "found"
    assert store.call("knowledge_lookup", {"query": "case-id"})["status"] == "missing"


def test_non_string_id_is_invalid(builder: StoreBuilder) -> None:
    builder.write("n.md", "id: 2024\nkind: page\ntitle: Zebra", "zebra")
    res = builder.open().call("knowledge_grep", {"query": "zebra"})
    assert res["hits"] == [] and codes(res) == ["id_invalid"]


def test_every_file_of_a_duplicated_id_is_excluded(builder: StoreBuilder) -> None:
    builder.page("dup", "Zebra one", path="a/dup.md")
    builder.page("dup", "Zebra two", path="b/dup.md")
    builder.page("ok", "Zebra three")
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in res["hits"]] == ["ok"]
    assert codes(res) == ["id_duplicate", "id_duplicate"]
    assert {i["path"] for i in res["coverage"]["issues"]} == {"a/dup.md", "b/dup.md"}
    assert_excluded(store, "dup")
    # removing one copy makes the other valid again
    builder.remove("b/dup.md")
    assert [h["id"] for h in store.call("knowledge_grep", {"query": "zebra"})["hits"]] == ["dup", "ok"]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"no frontmatter, zebra\n", "frontmatter_missing"),
        (b"---\nid: x\nkind: page\ntitle: zebra\n", "frontmatter_unclosed"),
        (b"---\n- a list\n- zebra\n---\nzebra\n", "frontmatter_not_mapping"),
        (b"---\nid: x\ntitle: [unclosed\n---\nzebra\n", "frontmatter_invalid"),
        (b"---\nid: x\nkind: page\ntitle: zebra\n---\n\xff\xfe zebra\n", "not_utf8"),
        (b"---\nid: x\ntitle: zebra\n---\nzebra\n", "kind_invalid"),
        (b"---\nid: x\nkind: note\ntitle: zebra\n---\nzebra\n", "kind_invalid"),
        (b"---\nid: x\nkind: page\nstatus: retired\ntitle: zebra\n---\nzebra\n", "status_invalid"),
        (b"---\nid: x\nkind: page\nrevision: 0\ntitle: zebra\n---\nzebra\n", "revision_invalid"),
        (b"---\nid: x\nkind: relationship\nfrom: a\ntitle: zebra\n---\nzebra\n", "endpoints_missing"),
        (b"---\nkind: page\ntitle: zebra\n---\nzebra\n", "id_missing"),
    ],
)
def test_files_that_cannot_be_records(builder: StoreBuilder, data: bytes, code: str) -> None:
    builder.raw("broken.md", data)
    builder.page("ok", "Zebra")
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in res["hits"]] == ["ok"]
    assert codes(res) == [code]
    assert res["coverage"]["issues"][0]["path"] == "broken.md"
    assert store.call("knowledge_records", {})["total"] == 1


def test_an_impossible_unquoted_date_costs_only_that_date(builder: StoreBuilder) -> None:
    builder.write(
        "r.md",
        "id: r\nkind: claim\ntitle: Zebra claim\noccurred_at: 2023-02-30\nrecorded_at: 2023-03-01T10:00:00Z",
        "zebra",
    )
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in res["hits"]] == ["r"]
    assert codes(res) == ["date_invalid"]
    assert "occurred_at" in res["coverage"]["issues"][0]["message"]
    rec = store.call("knowledge_record", {"id": "r"})["record"]
    assert set(rec["dates"]) == {"recorded_at"}


@pytest.mark.parametrize(
    "value",
    [
        "2024-05-01T10:00",
        "2024-05-01T10:00:00",
        "2024-05-01 10:00:00+00:00",
        "31/12/2024",
        "2024-13-01",
        "2022-02-29T08:00:00Z",
        "2024-05-01T25:00:00Z",
        "2024-05-01T10:00:00+0100",
    ],
)
def test_dates_without_seconds_or_offset_are_dropped(builder: StoreBuilder, value: str) -> None:
    builder.page("r", "Zebra", "zebra", occurred_at=value)
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in res["hits"]] == ["r"]
    assert codes(res) == ["date_invalid"]
    assert store.call("knowledge_record", {"id": "r"})["record"]["dates"] == {}


@pytest.mark.parametrize("value", ["2024-02-29", "2024-05-01T10:00:00Z", "2024-05-01T10:00:00.250+05:30"])
def test_valid_dates_are_kept(builder: StoreBuilder, value: str) -> None:
    builder.page("r", "Zebra", occurred_at=value)
    res = builder.open().call("knowledge_record", {"id": "r"})
    assert res["coverage"]["complete"] is True
    assert res["record"]["dates"]["occurred_at"]["value"] == value


def test_dot_and_underscore_names_are_not_records(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra visible")
    builder.page("b", "Zebra hidden", path=".trash/b.md")
    builder.page("c", "Zebra template", path="_templates/c.md")
    builder.page("d", "Zebra draft", path="team/_drafts/d.md")
    builder.page("e", "Zebra dotfile", path="team/.e.md")
    builder.raw("notes.txt", "zebra")
    res = builder.open().call("knowledge_records", {})
    assert [r["id"] for r in res["rows"]] == ["a"]
    assert res["coverage"]["complete"] is True


def test_withdrawn_records_are_excluded_in_every_mode(builder: StoreBuilder) -> None:
    builder.page("w", "Zebra withdrawn", "zebra", status="withdrawn")
    builder.page("ok", "Zebra")
    store = builder.open()
    assert_excluded(store, "w")
    assert store.call("knowledge_record", {"id": "w"})["reason"]["code"] == "withdrawn"
    # withdrawal is a lifecycle, not a defect
    assert store.call("knowledge_grep", {"query": "zebra"})["coverage"]["complete"] is True


def test_expired_assertions_are_excluded(builder: StoreBuilder) -> None:
    builder.page("old", "Zebra expired", kind="claim", expires_at="2020-01-01")
    builder.page("new", "Zebra in force", kind="claim", expires_at="2999-01-01")
    store = builder.open()
    assert_excluded(store, "old")
    assert [h["id"] for h in store.call("knowledge_grep", {"query": "zebra"})["hits"]] == ["new"]
    assert store.call("knowledge_record", {"id": "old"})["reason"]["code"] == "expired"


def test_dependencies_must_exist_and_be_available(builder: StoreBuilder) -> None:
    builder.page("person-a", "Ada")
    builder.page("gone", "Withdrawn source", status="withdrawn")
    builder.page("c-ok", "Zebra fine", kind="claim", owner="person-a", entities=["person-a"])
    builder.page("c-missing-owner", "Zebra orphan", kind="claim", owner="person-nobody")
    builder.page("c-missing-entity", "Zebra entity", kind="claim", entities=["person-a", "proj-x"])
    builder.page("c-withdrawn-dep", "Zebra depends", kind="claim", depends_on=["gone"])
    builder.page("c-source", "Zebra sourced", kind="claim", source="gone")
    builder.page("c-chain", "Zebra second hand", kind="claim", depends_on=["c-withdrawn-dep"])
    builder.write(
        "rel.md", {"id": "rel", "kind": "relationship", "from": "person-a", "to": "nobody", "title": "Zebra link"}
    )
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in res["hits"]] == ["c-ok"]
    assert codes(res) == ["dependency_missing"] * 3
    for rid in ("c-missing-owner", "c-missing-entity", "c-withdrawn-dep", "c-source", "c-chain", "rel"):
        assert_excluded(store, rid)
    reasons = {rid: store.call("knowledge_record", {"id": rid})["reason"] for rid in ("c-chain", "c-source")}
    assert reasons["c-chain"] == {"code": "dependency_unavailable", "detail": "c-withdrawn-dep"}
    assert reasons["c-source"] == {"code": "dependency_unavailable", "detail": "gone"}


def test_a_dependency_on_a_duplicated_id_is_missing(builder: StoreBuilder) -> None:
    builder.page("dup", "One", path="a.md")
    builder.page("dup", "Two", path="b.md")
    builder.page("c", "Zebra", kind="claim", depends_on=["dup"])
    res = builder.open().call("knowledge_grep", {"query": "zebra"})
    assert res["hits"] == []
    assert "dependency_missing" in codes(res)


def test_supersession_cycles_are_reported_and_resolve_to_nothing(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra alpha", status="superseded", superseded_by="b")
    builder.page("b", "Beta", status="superseded", superseded_by="a")
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert res["hits"] == [] and res["total"] == 0
    assert codes(res) == ["supersession_cycle", "supersession_cycle"]
    rec = store.call("knowledge_record", {"id": "a"})["record"]
    assert rec["chain"]["end"] == "cycle" and rec["chain"]["current"] is None


def test_superseded_without_target_is_reported(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra", status="superseded")
    res = builder.open().call("knowledge_grep", {"query": "zebra", "lifecycle": "superseded"})
    assert [h["id"] for h in res["hits"]] == ["a"]
    assert codes(res) == ["superseded_by_missing"]


def test_broken_config_is_reported_and_defaults_used(builder: StoreBuilder) -> None:
    builder.raw("knowtk.yaml", "name: [unclosed\n")
    builder.page("a", "Zebra")
    res = builder.open().call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in res["hits"]] == ["a"]
    assert codes(res) == ["config_invalid"]


def test_issues_are_limited_to_the_scope(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra", path="team/a.md")
    builder.raw("other/broken.md", "not a record")
    store = builder.open()
    assert store.call("knowledge_grep", {"query": "zebra", "scope": "team"})["coverage"]["complete"] is True
    assert store.call("knowledge_grep", {"query": "zebra"})["coverage"]["complete"] is False
