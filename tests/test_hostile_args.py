"""Hostile arguments: every bad value raises InvalidArgument naming the argument, before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.query import TOOLS
from knowtk.query.args import MAX_PAGE_OFFSET
from knowtk.query.explain import explain
from tests.helpers import StoreBuilder, commit_all


@pytest.fixture
def store(builder: StoreBuilder) -> knowtk.Store:
    builder.page("good", "Good vector index", "vector index body", occurred_at="2026-03-04", entities=["good"])
    return builder.open()


def string_args(tool: str) -> list[str]:
    """Arguments of a tool that take text (their names, camelCase)."""
    skip = {"limit", "offset", "week", "includeSources", "explain", "includeInactive", "group", "maxChars"}
    return [p.name for p in TOOLS[tool].params if p.name not in skip]


@pytest.mark.parametrize("tool", sorted(TOOLS.reads()))
@pytest.mark.parametrize("bad", ["a\ud800b", "\udfff", "a\x00b"])
def test_lone_surrogates_and_nul_in_any_string(store: knowtk.Store, tool: str, bad: str) -> None:
    required = {p.name: "good" for p in TOOLS[tool].params if p.required}
    if tool == "knowledge_chronicle_day":
        required["date"] = "2026-03-04"
    for name in string_args(tool):
        for value in (bad, [bad]):
            with pytest.raises(knowtk.InvalidArgument) as caught:
                store.call(tool, {**required, name: value})
            assert caught.value.argument == name
            assert caught.value.allowed is not None


@pytest.mark.parametrize(
    "zone", ["Europe", "America", "Etc", "x" * 300, "Europe/" + "x" * 200, "../UTC", "Europe//Berlin", "UTC\n", ""]
)
def test_time_zone_folders_and_long_names(store: knowtk.Store, zone: str) -> None:
    with pytest.raises(knowtk.InvalidArgument) as caught:
        store.call("knowledge_chronicle_day", {"date": "2026-03-04", "timeZone": zone})
    assert caught.value.argument == "timeZone" and "Europe/Berlin" in str(caught.value)


def test_real_time_zones_still_work(store: knowtk.Store) -> None:
    for zone in ("UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "America/Port-au-Prince"):
        out = store.call("knowledge_chronicle_day", {"date": "2026-03-04", "timeZone": zone})
        assert out["timeZone"] == zone and [r["id"] for r in out["rows"]] == ["good"]


@pytest.mark.parametrize("tool", [None, 3, ["knowledge_grep"], {"knowledge_grep": 1}, b"knowledge_grep", "nope"])
def test_tool_name_that_is_not_a_tool(store: knowtk.Store, tool: Any) -> None:
    with pytest.raises(knowtk.InvalidArgument) as caught:
        store.call(tool, {"query": "x"})
    assert caught.value.argument == "tool" and "knowledge_grep" in str(caught.value)


@pytest.mark.parametrize("rid", [None, 5, ["good"], {"id": "good"}, b"good", "", "a\x00", "\ud800"])
def test_explain_id_must_be_text(store: knowtk.Store, rid: Any) -> None:
    with pytest.raises(knowtk.InvalidArgument) as caught:
        explain(store, rid, query="vector")
    assert caught.value.argument == "id"


def test_argument_names_that_are_not_strings(store: knowtk.Store) -> None:
    with pytest.raises(knowtk.InvalidArgument) as caught:
        store.call("knowledge_grep", {1: "x", "query": "x"})  # type: ignore[dict-item]
    assert caught.value.argument == "1"


@pytest.mark.parametrize("value", [2**70, -(2**70), 10**5000], ids=["2**70", "-2**70", "10**5000"])
def test_integers_of_any_size(store: knowtk.Store, value: int) -> None:
    with pytest.raises(knowtk.InvalidArgument) as caught:
        store.call("knowledge_grep", {"query": "vector", "limit": value})
    assert caught.value.argument == "limit" and "1 to 50" in str(caught.value)


@pytest.mark.parametrize("tool", [name for name, tool in TOOLS.items() if any(p.name == "offset" for p in tool.params)])
@pytest.mark.parametrize("offset", [10**30, 2**63, 2**70])
def test_an_offset_past_64_bits_is_refused_with_its_range(store: knowtk.Store, tool: str, offset: int) -> None:
    """No offset reaches SQLite unchecked: one past its bound is refused, naming the range allowed."""
    required = {p.name: "good" for p in TOOLS[tool].params if p.required}
    if "since" in required:
        required["since"] = "2026-01-01"
    high = 500 if tool == "knowledge_grep" else MAX_PAGE_OFFSET  # grep's bound is the contract's
    with pytest.raises(knowtk.InvalidArgument) as caught:
        store.call(tool, {**required, "offset": offset})
    assert caught.value.argument == "offset" and f"0 to {high}" in str(caught.value)
    commit_all(Path(store.root), "2025-06-01T00:00:00Z")  # a past, for the tools of known time
    out = store.call(tool, {**required, "offset": high})  # the bound itself is a page past the last row
    assert not out.get("hits", out.get("rows", out.get("receipts"))) and out["nextOffset"] is None


def test_a_python_call_names_its_arguments_in_snake_case_after_the_checks_too(store: knowtk.Store) -> None:
    """A refusal that needs two arguments together (raised while the tool runs) names them as the caller did."""
    with pytest.raises(knowtk.InvalidArgument) as caught:
        store.timeline(entity="person-x", group="source", time_field="recorded_at")
    assert caught.value.argument == "time_field" and str(caught.value).startswith("time_field:")
    with pytest.raises(knowtk.InvalidArgument) as caught:
        store.call("knowledge_timeline", {"entity": "person-x", "group": "source", "timeField": "recorded_at"})
    assert caught.value.argument == "timeField"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("knowledge_grep", {"query": "vector", "until": "9999-12-31"}),
        ("knowledge_grep", {"query": "vector", "since": "0001-01-01", "until": "9999-12-31"}),
        ("knowledge_records", {"since": "0001-01-01T00:00:00Z", "until": "9999-12-31T23:59:59Z"}),
        ("knowledge_timeline", {"until": "9999-12-31"}),
        ("knowledge_chronicle_since", {"since": "0001-01-01", "until": "9999-12-31"}),
        ("knowledge_chronicle_last_seen", {"entity": "good", "occurredOnOrBefore": "9999-12-31"}),
        ("knowledge_chronicle_day", {"date": "9999-12-31", "week": True, "timeZone": "Pacific/Kiritimati"}),
        ("knowledge_chronicle_day", {"date": "0001-01-01", "week": True, "timeZone": "America/New_York"}),
    ],
)
def test_real_dates_at_the_edges_answer_normally(store: knowtk.Store, tool: str, args: dict[str, Any]) -> None:
    out = store.call(tool, args)
    expected = [] if tool == "knowledge_chronicle_day" else ["good"]
    assert sorted(r["id"] for r in out.get("hits", out.get("rows", []))) == expected


@pytest.mark.parametrize("bound", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "10000-01-01"])
def test_instants_outside_the_calendar_are_invalid_bounds(store: knowtk.Store, bound: str) -> None:
    with pytest.raises(knowtk.InvalidArgument) as caught:
        store.call("knowledge_grep", {"query": "vector", "since": bound})
    assert caught.value.argument == "since" and "0001 to 9999" in str(caught.value)


def test_python_methods_refuse_the_same(store: knowtk.Store) -> None:
    with pytest.raises(knowtk.InvalidArgument, match="query"):
        store.grep("vec\ud800tor")
    with pytest.raises(knowtk.InvalidArgument, match="time_zone"):
        store.chronicle_day("2026-03-04", time_zone="Europe")
    with pytest.raises(knowtk.InvalidArgument, match="scope"):
        store.records(scope=["notes", "x\x00"])
