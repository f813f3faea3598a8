"""validAt: what was in force at an instant, on knowledge_grep, knowledge_records, knowledge_lookup and
knowledge_timeline, from Python, the command line and MCP."""

from __future__ import annotations

import json
from typing import Any

import pytest

import knowtk
from knowtk.cli import main
from knowtk.errors import InvalidArgument
from tests.helpers import StoreBuilder, markdown_digest


def _policies(b: StoreBuilder) -> None:
    """A chain of three without expires_at; a chain of three with one (its first record overlaps the second)."""
    common = {"kind": "claim", "type": "policy", "tags": ["policy"]}
    b.page("pol-1", "Retention policy one", "Keep logs thirty days.", path="policies/pol-1.md",
           occurred_at="2024-01-01", status="superseded", superseded_by="pol-2", **common)  # fmt: skip
    b.page("pol-2", "Retention policy two", "Keep logs sixty days.", path="policies/pol-2.md",
           occurred_at="2024-06-01", status="superseded", superseded_by="pol-3", **common)  # fmt: skip
    b.page("pol-3", "Retention policy three", "Keep logs ninety days.", path="policies/pol-3.md",
           occurred_at="2025-01-01", **common)  # fmt: skip
    # cur-1 holds through 2024-12-31 although cur-2 took over on 2024-09-30T22:00Z: both in force in between
    b.page("cur-1", "Currency one", "The old coin circulates.", path="currency/cur-1.md", kind="claim",
           type="currency", occurred_at="2024-01-01", expires_at="2024-12-31", status="superseded",
           superseded_by="cur-2")  # fmt: skip
    b.page("cur-2", "Currency two", "The new coin circulates.", path="currency/cur-2.md", kind="claim",
           type="currency", occurred_at="2024-10-01T00:00:00+02:00", status="superseded",
           superseded_by="cur-3")  # fmt: skip
    b.page(
        "cur-3",
        "Currency three",
        "The digital coin circulates.",
        path="currency/cur-3.md",
        kind="claim",
        type="currency",
        recorded_at="2025-03-01T12:00:00Z",
    )  # fmt: skip (only recorded_at)


@pytest.fixture
def store(builder: StoreBuilder) -> knowtk.Store:
    _policies(builder)
    builder.page(
        "memo", "Undated retention memo", "Retention without a date.", path="notes/memo.md", updated_at="2024-02-02"
    )  # fmt: skip (neither occurred_at nor recorded_at)
    builder.page("gone", "Withdrawn retention rule", "Retention rule withdrawn.", path="notes/gone.md",
                 occurred_at="2020-01-01", status="withdrawn")  # fmt: skip
    builder.page("tz", "Late evening call", "A call about retention.", path="notes/tz.md",
                 occurred_at="2024-03-10T23:30:00-05:00", expires_at="2024-03-20T10:00:00+01:00")  # fmt: skip
    builder.page("day", "Day-only note", "A dated note.", path="notes/day.md", occurred_at="2024-03-10",
                 expires_at="2024-03-12")  # fmt: skip
    return builder.open()


def records_at(store: knowtk.Store, when: str, **args: Any) -> dict[str, str]:
    """id -> lifecycle of every row knowledge_records gives at ``when``."""
    res = store.call("knowledge_records", {"validAt": when, "limit": 1000, **args})
    assert res["total"] == len(res["rows"])
    return {r["id"]: r["lifecycle"] for r in res["rows"]}


def test_chains_of_three_with_and_without_expires_at(store: knowtk.Store) -> None:
    everything = {"lifecycle": "all", "type": ["policy", "currency"]}
    assert records_at(store, "2024-03-01", **everything) == {"pol-1": "active", "cur-1": "active"}
    # a record superseded today but in force then is answered as it was: active
    assert records_at(store, "2024-07-01", **everything) == {"pol-1": "superseded", "pol-2": "active",
                                                             "cur-1": "active"}  # fmt: skip
    # overlapping validity: cur-1's own expires_at keeps it in force after its replacement started
    overlap = records_at(store, "2024-11-15T12:00:00Z", type="currency")
    assert overlap == {"cur-1": "active", "cur-2": "active"}
    after = records_at(store, "2025-02-01", **everything)
    assert after == {"pol-1": "superseded", "pol-2": "superseded", "pol-3": "active", "cur-2": "active"}
    # cur-1 expired (not superseded) after its expires_at; cur-2 ends where cur-3 (only recorded_at) starts
    later = records_at(store, "2025-03-01T12:00:00Z", **everything)
    assert later == {"pol-1": "superseded", "pol-2": "superseded", "pol-3": "active", "cur-2": "superseded",
                     "cur-3": "active"}  # fmt: skip
    assert records_at(store, "2025-03-01T11:59:59Z", type="currency") == {"cur-2": "active"}


def test_the_lifecycle_filter_applies_to_the_lifecycle_then(store: knowtk.Store) -> None:
    assert records_at(store, "2024-07-01", type="policy") == {"pol-2": "active"}
    assert records_at(store, "2024-07-01", type="policy", lifecycle="superseded") == {"pol-1": "superseded"}
    rows = store.call("knowledge_records", {"validAt": "2024-07-01", "lifecycle": "all", "type": "policy"})["rows"]
    assert {r["id"]: r["supersededBy"] for r in rows} == {"pol-1": "pol-2", "pol-2": None}  # pol-2 not yet replaced
    now = {r["id"]: r["lifecycle"] for r in store.call("knowledge_records", {"lifecycle": "all"})["rows"]}
    assert now["pol-2"] == "superseded"  # and without validAt, today's lifecycle


def test_replacement_starts_are_exclusive_and_expiry_inclusive(store: knowtk.Store) -> None:
    assert records_at(store, "2024-05-31T23:59:59.999999Z", type="policy") == {"pol-1": "active"}
    assert records_at(store, "2024-06-01T00:00:00Z", type="policy") == {"pol-2": "active"}
    assert records_at(store, "2024-06-01T01:00:00+01:00", type="policy") == {"pol-2": "active"}  # the same instant
    assert records_at(store, "2024-06-01T00:30:00+01:00", type="policy") == {"pol-1": "active"}  # 23:30Z the day before
    # a timestamped expires_at holds through that instant, in whatever offset it was written
    assert "tz" in records_at(store, "2024-03-20T09:00:00Z") and "tz" in records_at(store, "2024-03-20T05:00:00-04:00")
    assert "tz" not in records_at(store, "2024-03-20T09:00:00.000001Z")


def test_date_only_and_timestamped_values_at_day_boundaries_in_several_zones(store: knowtk.Store) -> None:
    # tz starts 2024-03-10T23:30-05:00 = 2024-03-11T04:30Z
    assert "tz" not in records_at(store, "2024-03-11T04:29:59Z")
    assert "tz" in records_at(store, "2024-03-11T04:30:00Z")
    assert "tz" in records_at(store, "2024-03-11T13:30:00+09:00")  # the same instant in Tokyo
    assert "tz" not in records_at(store, "2024-03-10T23:29:59-05:00")
    assert "tz" not in records_at(store, "2024-03-10")  # a date asks about its UTC day: tz starts the next one
    assert "tz" in records_at(store, "2024-03-11")
    # day: a date-only start covers its whole UTC day, a date-only expires_at holds through its whole UTC day
    assert "day" not in records_at(store, "2024-03-09T23:59:59Z")
    assert "day" in records_at(store, "2024-03-09T23:59:59-01:00")  # 2024-03-10T00:59:59Z
    assert "day" not in records_at(store, "2024-03-10T08:00:00+09:00")  # 2024-03-09T23:00Z
    assert "day" in records_at(store, "2024-03-09T23:00:00-01:00")  # 2024-03-10T00:00Z, its first instant
    assert "day" in records_at(store, "2024-03-12T23:59:59.999999Z")
    assert "day" in records_at(store, "2024-03-13T00:30:00+01:00")  # 2024-03-12T23:30Z
    assert "day" not in records_at(store, "2024-03-13T00:00:00Z")
    assert "day" not in records_at(store, "2024-03-12T20:00:00-05:00")  # 2024-03-13T01:00Z
    assert "day" in records_at(store, "2024-03-12") and "day" not in records_at(store, "2024-03-13")


def test_records_that_cannot_be_placed_are_left_out_and_counted(store: knowtk.Store) -> None:
    res = store.call("knowledge_records", {"validAt": "2024-07-01"})
    assert "memo" not in {r["id"] for r in res["rows"]} and res["unplaced"] == 1
    assert store.call("knowledge_records", {"validAt": "2024-07-01", "type": "policy"})["unplaced"] == 0
    assert "unplaced" not in store.call("knowledge_records", {})  # nothing changes without validAt
    lookup = store.call("knowledge_lookup", {"query": "Undated retention memo", "validAt": "2024-07-01"})
    assert (lookup["status"], lookup["unplaced"]) == ("missing", 1)
    assert store.call("knowledge_lookup", {"query": "Undated retention memo"})["status"] == "found"


def test_only_recorded_at_places_a_record(builder: StoreBuilder) -> None:
    builder.page("r", "Recorded only", recorded_at="2023-05-05T10:00:00+02:00")
    builder.page("both", "Both dates", occurred_at="2023-01-01", recorded_at="2023-09-09")  # occurred_at wins
    store = builder.open()
    assert records_at(store, "2023-05-05T07:59:59Z") == {"both": "active"}
    assert records_at(store, "2023-05-05T08:00:00Z") == {"both": "active", "r": "active"}
    assert records_at(store, "2023-02-01") == {"both": "active"}


def test_withdrawn_records_and_far_instants(store: knowtk.Store) -> None:
    assert all("gone" not in records_at(store, when, lifecycle="all") for when in ("2020-01-01", "2030-01-01"))
    far_before = store.call("knowledge_records", {"validAt": "0001-01-01", "lifecycle": "all"})
    assert (far_before["total"], far_before["rows"], far_before["unplaced"]) == (0, [], 1)
    assert records_at(store, "9999-12-31", lifecycle="all", type=["policy", "currency"]) == {
        "pol-1": "superseded", "pol-2": "superseded", "pol-3": "active", "cur-2": "superseded", "cur-3": "active"
    }  # fmt: skip
    assert records_at(store, "9999-12-31T23:59:59.999999Z", type=["policy", "currency"]) == {
        "pol-3": "active", "cur-3": "active"
    }  # fmt: skip
    for tool, args in (("knowledge_grep", {"query": "retention"}), ("knowledge_timeline", {})):
        assert store.call(tool, {**args, "validAt": "1000-01-01"})["total"] == 0


@pytest.mark.parametrize("value", ["yesterday", "2024-02-30", "2024-01-01T10:00Z", "2024-01-01T10:00:00", 20240101])
def test_anything_else_is_refused_naming_valid_at(store: knowtk.Store, value: Any) -> None:
    for tool, args in (
        ("knowledge_grep", {"query": "retention"}),
        ("knowledge_records", {}),
        ("knowledge_lookup", {"query": "x"}),
        ("knowledge_timeline", {}),
    ):
        with pytest.raises(InvalidArgument) as err:
            store.call(tool, {**args, "validAt": value})
        assert err.value.argument == "validAt" and "YYYY-MM-DD" in str(err.value)
    with pytest.raises(InvalidArgument) as err:
        store.records(valid_at=value)
    assert err.value.argument == "valid_at"


def test_composes_with_every_filter_and_paging(store: knowtk.Store) -> None:
    at = "2024-11-15"
    assert records_at(store, at, kind="page") == {}
    assert records_at(store, at, kind="claim") == {"pol-2": "active", "cur-1": "active", "cur-2": "active"}
    assert records_at(store, at, type="currency") == {"cur-1": "active", "cur-2": "active"}
    assert records_at(store, at, tag="policy") == {"pol-2": "active"}
    assert records_at(store, at, scope="currency") == {"cur-1": "active", "cur-2": "active"}
    assert records_at(store, at, since="2024-09-30", timeField="occurred_at") == {"cur-2": "active"}
    assert records_at(store, at, until="2024-03-01") == {"cur-1": "active"}  # occurred_at by default
    assert records_at(store, at, lifecycle="superseded") == {"pol-1": "superseded"}
    pages, offset = [], 0
    while offset is not None:
        page = store.call("knowledge_records", {"validAt": at, "lifecycle": "all", "limit": 2, "offset": offset})
        assert page["total"] == 4  # pol-1 (superseded then), pol-2, cur-1, cur-2
        pages += [r["id"] for r in page["rows"]]
        offset = page["nextOffset"]
    assert pages == ["cur-1", "cur-2", "pol-1", "pol-2"]


def test_grep_ranks_what_was_in_force_and_follows_wording_to_it(store: knowtk.Store) -> None:
    def hits(when: str, query: str, **args: Any) -> list[tuple[str, str, str | None]]:
        res = store.call("knowledge_grep", {"query": query, "validAt": when, **args})
        assert res["total"] == len(res["hits"])
        return [(h["id"], h["lifecycle"], h["via"] and h["via"]["id"]) for h in res["hits"]]

    assert hits("2024-03-01", "thirty") == [("pol-1", "active", None)]
    # superseded wording then leads to the record in force then, superseded since or not
    assert hits("2024-07-01", "thirty") == [("pol-2", "active", "pol-1")]
    assert hits("2025-02-01", "thirty") == [("pol-3", "active", "pol-1")]
    assert hits("2024-07-01", "thirty", lifecycle="superseded") == [("pol-1", "superseded", None)]
    assert hits("2024-07-01", "thirty", lifecycle="all") == [("pol-1", "superseded", None)]
    assert hits("2024-07-01", "thirty", type="currency") == []  # filters judge the record in force
    assert hits("2024-07-01", "thirty", scope="currency") == []
    # cur-1, in force then, has expired since: searched too (tests/test_valid_at_expired.py)
    assert sorted(hits("2024-11-15", "coin")) == [("cur-1", "active", None), ("cur-2", "active", None)]
    assert hits("2025-02-01", "logs") == [("pol-3", "active", None)]  # its own words and its predecessors': once
    # memo left out (and counted), gone never; tz, expired since, was in force then
    assert sorted(h[0] for h in hits("2024-03-15", "retention")) == ["pol-1", "tz"]
    res = store.call("knowledge_grep", {"query": "retention", "validAt": "2024-03-15"})
    assert res["unplaced"] == 1 and "unsearched" not in res  # memo has no date
    assert "unplaced" not in store.call("knowledge_grep", {"query": "retention"})
    args = {"query": "logs", "validAt": "2025-02-01", "lifecycle": "all", "limit": 2}
    first = store.call("knowledge_grep", args)
    assert (first["total"], first["nextOffset"], len(first["hits"])) == (3, 2, 2)
    second = store.call("knowledge_grep", {**args, "offset": 2})
    assert (len(second["hits"]), second["nextOffset"]) == (1, None)
    assert sorted(h["id"] for h in first["hits"] + second["hits"]) == ["pol-1", "pol-2", "pol-3"]


def test_lookup_and_timeline_at_an_instant(store: knowtk.Store) -> None:
    found = store.call("knowledge_lookup", {"query": "Retention policy two", "validAt": "2024-07-01"})
    assert (found["status"], found["record"]["lifecycle"]) == ("found", "active")
    assert store.call("knowledge_lookup", {"query": "pol-2", "validAt": "2025-02-01"})["status"] == "missing"
    later = store.call("knowledge_lookup", {"query": "pol-2", "validAt": "2025-02-01", "lifecycle": "superseded"})
    assert later["record"]["lifecycle"] == "superseded"
    assert (
        store.call("knowledge_lookup", {"query": "pol-2", "validAt": "2024-03-01", "lifecycle": "all"})["status"]
        == "missing"
    )  # not yet

    def timeline(when: str, **args: Any) -> list[tuple[str, str]]:
        res = store.call("knowledge_timeline", {"validAt": when, **args})
        return [(r["id"], r["lifecycle"]) for r in res["rows"]]

    assert timeline("2024-11-15", kind="currency") == [("cur-1", "active"), ("cur-2", "active")]
    assert timeline("2025-02-01", kind="policy") == [("pol-3", "active")]
    assert timeline("2025-02-01", kind="policy", eligibility="include_inactive") == [
        ("pol-1", "superseded"), ("pol-2", "superseded"), ("pol-3", "active")
    ]  # fmt: skip
    assert timeline("2025-02-01", kind="currency", eligibility="include_inactive") == [
        ("cur-1", "expired"), ("cur-2", "active")
    ]  # fmt: skip
    paged = store.call("knowledge_timeline", {"validAt": "2025-02-01", "eligibility": "include_inactive", "limit": 2})
    assert paged["total"] == 7 and paged["nextOffset"] == 2 and len(paged["rows"]) == 2  # tz and day expired too
    # the undated memo has an updated_at: left out of that timeline, and counted
    upd = store.call("knowledge_timeline", {"validAt": "2024-03-01", "timeField": "updated_at"})
    assert (upd["total"], upd["unplaced"]) == (0, 1)
    assert store.call("knowledge_timeline", {"timeField": "updated_at"})["total"] == 1


def test_a_later_snapshot_patches_what_was_in_force(builder: StoreBuilder) -> None:
    _policies(builder)
    store = builder.open()
    assert records_at(store, "2024-07-01", type="policy") == {"pol-2": "active"}
    builder.page(
        "pol-2",
        "Retention policy two",
        "Keep logs sixty days.",
        path="policies/pol-2.md",
        kind="claim",
        type="policy",
        tags=["policy"],
        occurred_at="2024-08-01",
        status="superseded",
        superseded_by="pol-3",
    )  # fmt: skip (its start moves: pol-1 holds longer)
    assert records_at(store, "2024-07-01", type="policy") == {"pol-1": "active"}
    assert records_at(store, "2024-08-01", type="policy") == {"pol-2": "active"}


def test_the_adr_profile_dates_decisions_by_occurred_at(builder: StoreBuilder) -> None:
    builder.raw("docs/adr/0001-use-postgres.md", "# 1. Use Postgres\n\nDate: 2021-03-01\n\n## Status\n\n"
                "Superseded by [ADR-0002](0002-use-sqlite.md)\n\n## Decision\n\nPostgres.\n")  # fmt: skip
    builder.raw("docs/adr/0002-use-sqlite.md", "# 2. Use SQLite\n\nDate: 2023-05-01\n\n## Status\n\nAccepted\n\n"
                "## Decision\n\nSQLite.\n")  # fmt: skip
    store = builder.open(profile="adr")
    ids = store.call("knowledge_records", {"lifecycle": "all"})["rows"]
    first, second = sorted(r["id"] for r in ids)
    assert records_at(store, "2022-01-01") == {first: "active"}
    assert records_at(store, "2023-05-01") == {second: "active"}
    assert records_at(store, "2023-05-01", lifecycle="all") == {first: "superseded", second: "active"}


def test_queries_at_an_instant_write_no_markdown(builder: StoreBuilder) -> None:
    _policies(builder)
    before = markdown_digest(builder.root)
    store = builder.open()
    for tool, args in (("knowledge_grep", {"query": "coin"}), ("knowledge_records", {}), ("knowledge_timeline", {})):
        store.call(tool, {**args, "validAt": "2024-11-15"})
    assert markdown_digest(builder.root) == before


def test_the_command_line_takes_valid_at(store: knowtk.Store, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(store.root)
    assert main(["--store", root, "records", "--valid-at", "2024-07-01", "--type", "policy", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["lifecycle"]) for r in answer["rows"]] == [("pol-2", "active")]
    assert main(["--store", root, "records", "--valid-at", "2024-07-01"]) == 0
    assert "1 record(s) left out" in capsys.readouterr().out
    assert main(["--store", root, "grep", "thirty", "--valid-at", "2025-02-01"]) == 0
    text = capsys.readouterr().out
    assert "pol-3" in text and "matched via superseded pol-1" in text
    # missing exits 1 (no record answers the name); the line says why this one is left out
    assert main(["--store", root, "lookup", "Undated retention memo", "--valid-at", "2024-07-01"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "missing"
    assert "1 record(s) of that name left out: neither occurred_at nor recorded_at" in lines
    assert main(["--store", root, "timeline", "--valid-at", "2024-07-01", "--time-field", "updated_at"]) == 0
    assert "1 record(s) left out" in capsys.readouterr().out
    assert main(["--store", root, "records", "--valid-at", "last week"]) != 0
    assert "--valid-at" in capsys.readouterr().err


def test_the_timeline_counts_unplaced_rows_again_after_a_change(builder: StoreBuilder) -> None:
    builder.page("m", "Memo", updated_at="2024-02-02")
    store = builder.open()
    for _ in range(2):  # the second answer from what the first kept
        assert store.call("knowledge_timeline", {"validAt": "2024-03-01", "timeField": "updated_at"})["unplaced"] == 1
    builder.page("m2", "Memo two", updated_at="2024-02-03")
    assert store.call("knowledge_timeline", {"validAt": "2024-03-01", "timeField": "updated_at"})["unplaced"] == 2


def test_valid_at_and_as_of_differ(builder: StoreBuilder) -> None:
    """The example of docs/time.md: taken on 1 March, written down on 20 March."""
    builder.page("dec", "Adopt the new retention", occurred_at="2024-03-01", recorded_at="2024-03-20T09:00:00Z",
                 kind="claim", type="decision")  # fmt: skip
    store = builder.open()
    assert [r["id"] for r in store.records(valid_at="2024-03-10").to_dict()["rows"]] == ["dec"]
    assert store.knowl(as_of="2024-03-10").to_dict()["results"] == []
    assert [r["id"] for r in store.knowl(as_of="2024-03-21").to_dict()["results"]] == ["dec"]


def test_grep_composes_with_every_filter_at_an_instant(store: knowtk.Store) -> None:
    def ids(**args: Any) -> list[str]:
        res = store.call("knowledge_grep", {"query": "logs retention coin", "mode": "any", "validAt": "2024-07-01",
                                            **args})  # fmt: skip
        return sorted(h["id"] for h in res["hits"])

    # cur-2 starts on 2024-09-30: not in force yet; cur-1 was (it has expired since)
    assert ids() == ["cur-1", "pol-2"]
    assert ids(kind="page") == [] and ids(kind="claim") == ["cur-1", "pol-2"]
    assert ids(type="policy") == ["pol-2"] and ids(type="currency") == ["cur-1"]
    assert ids(tag="policy") == ["pol-2"] and ids(tag="nothing") == []
    assert ids(scope="policies") == ["pol-2"] and ids(scope="notes") == [] and ids(scope="currency") == ["cur-1"]
    assert ids(since="2024-05-01") == ["pol-2"] and ids(until="2024-05-01") == ["cur-1"]  # pol-2's, cur-1's occurred_at
    assert ids(timeField="recorded_at", since="2020-01-01") == []  # none of them has a recorded_at
    assert ids(lifecycle="superseded") == ["pol-1"] and ids(lifecycle="all") == ["cur-1", "pol-1", "pol-2"]
    assert ids(mode="phrase", query="sixty days") == ["pol-2"]


def test_lookup_and_timeline_compose_with_their_filters(builder: StoreBuilder) -> None:
    builder.page("person-ada", "Ada", path="people/ada.md")
    for n, (day, by) in enumerate((("2024-01-01", "m-2"), ("2024-03-01", None)), 1):
        extra = {"status": "superseded", "superseded_by": by} if by else {}
        builder.page(f"m-{n}", f"Meeting rule {n}", path=f"rules/m-{n}.md", type="meeting", kind="claim",
                     occurred_at=day, entities=["person-ada"], aliases=["the meeting rule"], **extra)  # fmt: skip
    builder.page("m-old", "Meeting rule archived", path="archive/m-old.md", type="meeting", kind="claim",
                 occurred_at="2023-01-01", entities=["person-ada"], aliases=["the meeting rule"])  # fmt: skip
    store = builder.open()

    def look(**args: Any) -> tuple[str, list[str]]:
        res = store.call("knowledge_lookup", {"query": "the meeting rule", **args})
        return res["status"], [c["id"] for c in res["candidates"]]

    assert look() == ("ambiguous", ["m-2", "m-old"])
    assert look(validAt="2024-02-01") == ("ambiguous", ["m-1", "m-old"])
    assert look(validAt="2024-02-01", scope="rules") == ("found", ["m-1"])
    assert look(validAt="2024-04-01", scope="rules", lifecycle="superseded") == ("found", ["m-1"])
    assert look(validAt="2023-06-01") == ("found", ["m-old"])

    def rows(**args: Any) -> list[str]:
        return [r["id"] for r in store.call("knowledge_timeline", {"validAt": "2024-02-01", **args})["rows"]]

    assert rows(entity="person-ada") == ["m-old", "m-1"]
    assert rows(entity="person-ada", order="desc") == ["m-1", "m-old"]
    assert rows(entity="person-ada", kind="meeting", since="2023-06-01") == ["m-1"]
    assert rows(entity="person-ada", eligibility="include_inactive", validAt="2024-04-01") == ["m-old", "m-1", "m-2"]
    paged = store.call("knowledge_timeline", {"validAt": "2024-02-01", "entity": "person-ada", "limit": 1,
                                              "includeSources": True})  # fmt: skip
    assert (paged["total"], paged["nextOffset"], [r["id"] for r in paged["rows"]]) == (2, 1, ["m-old"])


@pytest.mark.parametrize("when", ["2025-10-01", "2026-01-14", "2026-03-01T12:00:00-08:00"])
def test_every_tool_answers_only_what_was_in_force_on_the_demo(demo_store: knowtk.Store, when: str) -> None:
    in_force = set(records_at(demo_store, when))
    assert in_force
    for args in ({"entity": "proj-lumen"}, {"entity": "proj-lumen", "group": "source"}, {"kind": "decision"}):
        rows = demo_store.call("knowledge_timeline", {**args, "validAt": when, "limit": 200})["rows"]
        assert rows and {r["id"] for r in rows} <= in_force and {r["lifecycle"] for r in rows} == {"active"}
    hits = demo_store.call("knowledge_grep", {"query": "search", "validAt": when, "limit": 50})["hits"]
    assert hits and {h["id"] for h in hits} <= in_force


def test_the_timeline_at_an_instant_ends_its_range_there(builder: StoreBuilder) -> None:
    """A row that occurred after the instant is not in force then, one at it is (to the microsecond), and a
    record that cannot be placed is counted whatever its occurrence."""
    builder.page("old", "Old note", "Dated by day.", path="n/old.md", occurred_at="2024-03-10")
    builder.page("at", "Call", "Dated by instant.", path="n/at.md", occurred_at="2024-03-11T04:30:00+01:00")
    builder.page("late", "Late note", "Replaced by an undated one.", path="n/late.md", occurred_at="2025-01-01",
                 status="superseded", superseded_by="undated")  # fmt: skip
    builder.page("undated", "Undated note", "No date.", path="n/undated.md", updated_at="2024-01-01")
    store = builder.open()

    def timeline(when: str, **args: Any) -> tuple[list[str], int, int]:
        res = store.call("knowledge_timeline", {"validAt": when, **args})
        assert res["total"] == len(res["rows"])
        return [r["id"] for r in res["rows"]], res["total"], res["unplaced"]

    assert timeline("2024-03-11T03:30:00Z") == (["old", "at"], 2, 1)
    assert timeline("2024-03-11T03:29:59.999999Z") == (["old"], 1, 1)
    assert timeline("2024-03-10") == (["old"], 1, 1)  # a date: its whole UTC day, before the call
    assert timeline("2024-03-11", order="desc") == (["at", "old"], 2, 1)
    assert timeline("2024-03-11", until="2024-03-11T00:00:00Z") == (["old"], 1, 0)
    assert timeline("2024-03-11", since="2024-06-01") == ([], 0, 1)  # late occurred in range: counted, not shown
    assert timeline("2026-01-01", eligibility="include_inactive") == (["old", "at"], 2, 1)
