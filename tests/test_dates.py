"""Dates and Chronicle: the temporal projection, the four date tools, their frames and plots."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import json
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import matplotlib.dates as mdates
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from matplotlib.patches import Rectangle

import knowtk
from knowtk import InvalidArgument
from knowtk.query.dates import BUDGET_BYTES, LAST_SEEN_ROWS
from tests.helpers import StoreBuilder

pytestmark = pytest.mark.usefixtures("close_figures")

ROW_KEYS = {
    "id", "kind", "type", "title", "summary", "lifecycle", "path", "timeField", "value", "dateOnly", "start", "end",
    "entities",
}  # fmt: skip
RESPONSE_KEYS = {"rows", "total", "offset", "nextOffset", "snapshot", "coverage", "freshness"}
BERLIN, NEW_YORK = "Europe/Berlin", "America/New_York"


def ids(result: dict[str, Any] | knowtk.Result) -> list[str]:
    return [row["id"] for row in result["rows"]]


def claim(b: StoreBuilder, rid: str, type_: str = "decision", body: str = "", **meta: Any) -> None:
    b.write(f"claims/{rid}.md", {"id": rid, "kind": "claim", "type": type_, **meta}, body)


def dated(b: StoreBuilder, *items: tuple[str, str]) -> None:
    for rid, when in items:
        claim(b, rid, "event", occurred_at=when, summary=f"{rid} happened")


def team(b: StoreBuilder) -> knowtk.Store:
    """Ada's small world: meetings with an event claim, sourced claims, relationships, a co-mention."""
    (b.root / "knowtk.yaml").write_text("ontology:\n  decision: {aliases: [adr]}\n")
    b.page("person-ada", "Ada", type="person", recorded_at="2026-01-01T09:00:00Z", path="people/ada.md")
    b.page("person-bob", "Bob", type="person", path="people/bob.md")
    b.page("proj-search", "Search", type="project", owner="person-ada", occurred_at="2026-02-01", path="p/search.md")
    b.page(
        "mtg-1",
        "Search sync",
        "# Search sync\n\nNotes.\n",
        type="meeting",
        summary="Weekly search sync.",
        entities=["person-bob"],
        recorded_at="2026-03-05T09:00:00Z",
        fields={"occurred_at": "2026-03-04T15:00:00+01:00"},
        path="meetings/m1.md",
    )
    b.page(
        "mtg-2", "Timings review", type="meeting", entities=["person-bob"],
        fields={"occurred_at": "2026-03-10T10:00:00Z"}, path="meetings/m2.md",
    )  # fmt: skip
    event_body = "# Search sync took place\n\nStands for [[mtg-1]] with [[person-bob]] and [[note-gone]].\n"
    claim(b, "evt-1", "event", event_body, source="mtg-1", source_event=True, entities=["person-bob"],
          occurred_at="2026-03-04T15:00:00+01:00")  # fmt: skip
    claim(b, "dec-1", occurred_at="2026-03-04", entities=["person-ada"], source="mtg-1", title="Use FTS5")
    claim(b, "dec-late", occurred_at="2026-03-20T12:00:00Z", owner="person-ada", source="mtg-1")
    claim(b, "act-1", "action_item", due_at="2026-03-11", owner="person-ada", source="mtg-1")
    claim(b, "bob-only", occurred_at="2026-03-07", entities=["person-bob"], source="mtg-1")
    claim(b, "adr-1", "adr", occurred_at="2026-03-08")
    claim(b, "fut", "plan", occurred_at="2999-01-01", entities=["person-ada"])
    claim(b, "dec-old", occurred_at="2026-02-15", entities=["person-ada"], status="superseded", superseded_by="dec-1")
    claim(b, "dec-exp", occurred_at="2026-01-15", entities=["person-ada"], expires_at="2026-01-31")
    claim(b, "dec-wd", occurred_at="2026-01-20", entities=["person-ada"], status="withdrawn")
    b.write(
        "relations/rel-1.md",
        {"id": "rel-1", "kind": "relationship", "from": "person-ada", "to": "mtg-2", "relation": "presented_at"},
        "\n# Ada presented at the review\n\nAda presented the timings; see [[dec-1]] and [[note-gone]].\n",
    )
    b.write(
        "relations/rel-2.md",
        {"id": "rel-2", "kind": "relationship", "from": "person-bob", "to": "person-ada", "relation": "mentors",
         "occurred_at": "2026-01-10"},
    )  # fmt: skip
    b.page(
        "note-mention", "Mention", "Ada ([[person-ada]]) came up; person-ada.\n\n- 2026-03-01: prose date only\n",
        type="note", occurred_at="2026-03-06", entities=["person-bob"], path="notes/mention.md",
    )  # fmt: skip
    return b.open()


# -- ranges and bounds ---------------------------------------------------------------------------


@pytest.fixture
def ranges(builder: StoreBuilder) -> knowtk.Store:
    dated(
        builder,
        ("d", "2026-03-04"),
        ("i0", "2026-03-04T00:00:00Z"),
        ("i1", "2026-03-04T23:59:59Z"),
        ("i2", "2026-03-05T00:00:00Z"),
        ("i3", "2026-03-03T23:59:59.5Z"),
    )
    return builder.open()


@pytest.mark.parametrize(
    ("since", "until", "expected"),
    [
        (None, None, ["i3", "i0", "d", "i1", "i2"]),  # start, then end: the instant at midnight before the day
        ("2026-03-04", "2026-03-04", ["i0", "d", "i1"]),  # a date-only until covers its whole UTC day
        ("2026-03-04T12:00:00Z", "2026-03-04T12:00:00Z", ["d"]),  # the day overlaps; it claims no instant
        ("2026-03-04T12:00:00+01:00", "2026-03-04T23:59:59Z", ["d", "i1"]),  # inclusive at the instant
        ("2026-03-05", None, ["i2"]),  # the day ends where since begins
        (None, "2026-03-04T00:00:00Z", ["i3", "i0", "d"]),
        ("2026-03-03T23:59:59.5Z", "2026-03-03T23:59:59.5Z", ["i3"]),
    ],
)
def test_bounds_are_inclusive_and_date_only_values_match_overlapping_ranges(
    ranges: knowtk.Store, since: str | None, until: str | None, expected: list[str]
) -> None:
    assert ids(ranges.timeline(since=since, until=until)) == expected


def test_order_desc_reverses_start_end_and_id(ranges: knowtk.Store) -> None:
    assert ids(ranges.timeline(order="desc")) == ["i2", "i1", "d", "i0", "i3"]


def test_a_date_only_row_is_an_interval_and_an_instant_is_not(ranges: knowtk.Store) -> None:
    rows = {r["id"]: r for r in ranges.call("knowledge_timeline", {})["rows"]}
    assert (rows["d"]["value"], rows["d"]["dateOnly"]) == ("2026-03-04", True)
    assert (rows["d"]["start"], rows["d"]["end"]) == ("2026-03-04T00:00:00Z", "2026-03-05T00:00:00Z")
    assert (rows["i3"]["dateOnly"], rows["i3"]["start"], rows["i3"]["end"]) == (
        False,
        "2026-03-03T23:59:59.500Z",
        "2026-03-03T23:59:59.500Z",
    )


@pytest.mark.parametrize(
    ("tool", "args", "argument"),
    [
        ("knowledge_timeline", {"since": "2026-02-30"}, "since"),
        ("knowledge_timeline", {"since": "2026-03-04T15:00Z"}, "since"),  # no seconds
        ("knowledge_timeline", {"until": "2026-03-04T15:00:00"}, "until"),  # no offset
        ("knowledge_timeline", {"until": "yesterday"}, "until"),
        ("knowledge_timeline", {"since": "2026-3-4"}, "since"),
        ("knowledge_timeline", {"since": "2026-03-05", "until": "2026-03-04"}, "since"),
        ("knowledge_timeline", {"timeField": "expires_at"}, "timeField"),
        ("knowledge_chronicle_since", {"since": "2026-03-04 10:00:00+01:00"}, "since"),
        ("knowledge_chronicle_since", {}, "since"),
        ("knowledge_chronicle_day", {"date": "2026-02-29"}, "date"),
        ("knowledge_chronicle_day", {"date": "2026-03-04T00:00:00Z"}, "date"),
        ("knowledge_chronicle_day", {"date": "2026-03-04", "timeZone": "Mars/Olympus"}, "timeZone"),
        ("knowledge_chronicle_last_seen", {"entity": "x", "occurredOnOrBefore": "2026-03-04T25:00:00Z"},
         "occurredOnOrBefore"),
    ],
)  # fmt: skip
def test_bad_bounds_raise_invalid_argument_naming_the_argument(
    ranges: knowtk.Store, tool: str, args: dict[str, Any], argument: str
) -> None:
    with pytest.raises(InvalidArgument) as err:
        ranges.call(tool, args)
    assert err.value.argument == argument
    assert argument in str(err.value)


def test_python_methods_refuse_the_same_bounds(ranges: knowtk.Store) -> None:
    with pytest.raises(InvalidArgument, match="until") as err:
        ranges.timeline(until="2026-03-04T15:00:00")
    assert err.value.argument == "until"
    with pytest.raises(InvalidArgument) as err:
        ranges.chronicle_last_seen("x", occurred_on_or_before="soon")
    assert err.value.argument == "occurred_on_or_before"


# -- what is dated, and what is not --------------------------------------------------------------


def test_malformed_and_zoneless_dates_are_dropped_and_reported(builder: StoreBuilder) -> None:
    builder.page("zoneless", "Z", occurred_at="2026-03-04T15:00:00", recorded_at="2026-03-05T09:00:00Z")
    builder.page("no-seconds", "S", occurred_at="2026-03-04T15:00+01:00")
    builder.write("impossible.md", "id: impossible\nkind: page\noccurred_at: 2026-02-30\nrecorded_at: 2026-03-01")
    builder.page("good", "G", occurred_at="2026-03-04")
    store = builder.open()
    res = store.call("knowledge_timeline", {})
    assert ids(res) == ["good"]
    bad = sorted((i["id"], i["code"]) for i in res["coverage"]["issues"])
    assert bad == [("impossible", "date_invalid"), ("no-seconds", "date_invalid"), ("zoneless", "date_invalid")]
    assert res["coverage"]["complete"] is False
    # the record survives its bad date: its other dates still count
    assert ids(store.timeline(time_field="recorded_at")) == ["impossible", "zoneless"]
    for tool, args in [
        ("knowledge_chronicle_day", {"date": "2026-03-04"}),
        ("knowledge_chronicle_since", {"since": "2026-01-01"}),
        ("knowledge_chronicle_last_seen", {"entity": "good"}),
    ]:
        issues = store.call(tool, args)["coverage"]["issues"]
        assert {i["id"] for i in issues} == {"impossible", "no-seconds", "zoneless"}


def test_recording_time_never_stands_in_and_prose_dates_create_nothing(builder: StoreBuilder) -> None:
    store = team(builder)
    occurred = ids(store.timeline(limit=200))
    assert "person-ada" not in occurred and "act-1" not in occurred  # recorded_at / due_at only
    assert ids(store.timeline(time_field="recorded_at")) == ["person-ada", "mtg-1"]
    assert ids(store.timeline(time_field="due_at")) == ["act-1"]
    assert store.call("knowledge_chronicle_day", {"date": "2026-03-01"})["rows"] == []  # a date in a body
    assert ids(store.chronicle_day("2026-03-06")) == ["note-mention"]


def test_kind_is_the_exact_record_type(builder: StoreBuilder) -> None:
    store = team(builder)
    assert ids(store.timeline(kind="claim")) == []
    assert ids(store.timeline(kind="decision")) == ["dec-1", "bob-only", "dec-late"]  # no ontology alias
    assert ids(store.timeline(kind="adr")) == ["adr-1"]
    assert ids(store.chronicle_since("2026-01-01", kind="event")) == ["evt-1"]
    assert ids(store.chronicle_day("2026-03-04", kind="decision")) == ["dec-1"]


# -- entities and event claims -------------------------------------------------------------------

ADA = ["rel-2", "proj-search", "dec-1", "evt-1", "mtg-2", "dec-late", "fut"]


def test_entity_uses_explicit_associations_never_co_mentions(builder: StoreBuilder) -> None:
    store = team(builder)
    rows = {r["id"]: r for r in store.timeline(entity="person-ada")["rows"]}
    # entities (dec-1), owner (proj-search, dec-late), endpoint (rel-2), source of its claims (mtg-1, shown by
    # its event claim evt-1), far end of its relationship (mtg-2); never the note that only names Ada
    assert list(rows) == ADA
    assert "note-mention" not in rows and "bob-only" not in rows and "mtg-1" not in rows
    assert rows["rel-2"]["entities"] == ["person-bob", "person-ada"]
    assert rows["proj-search"]["entities"] == ["person-ada"]
    assert ids(store.timeline(entity="mtg-1")) == ["dec-1", "evt-1", "bob-only", "dec-late"]  # drawn from it
    assert ids(store.timeline(entity="person-nobody")) == []


def test_event_claim_replaces_its_meeting_on_occurrence_timelines_only(builder: StoreBuilder) -> None:
    store = team(builder)
    everything = ids(store.timeline(limit=200))
    assert "evt-1" in everything and "mtg-1" not in everything
    assert ids(store.timeline(kind="meeting")) == ["mtg-1", "mtg-2"]
    assert ids(store.chronicle_day("2026-03-04", kind="meeting")) == ["mtg-1"]
    assert ids(store.chronicle_day("2026-03-04", time_zone=BERLIN)) == ["dec-1", "evt-1"]
    assert ids(store.chronicle_since("2026-03-04", until="2026-03-04")) == ["dec-1", "evt-1"]
    assert "mtg-1" in ids(store.timeline(time_field="recorded_at"))
    # Bob is on the page and on the claim: the claim's row stands in for both
    assert ids(store.timeline(entity="person-bob", since="2026-03-04", until="2026-03-04")) == ["evt-1"]


def test_an_event_claim_without_its_own_date_replaces_nothing(builder: StoreBuilder) -> None:
    builder.page("mtg", "M", type="meeting", fields={"occurred_at": "2026-03-04T10:00:00Z"})
    claim(builder, "evt", "event", source="mtg", source_event=True)
    assert ids(builder.open().timeline()) == ["mtg"]


def test_eligibility_include_inactive_adds_superseded_and_expired_never_withdrawn(builder: StoreBuilder) -> None:
    store = team(builder)
    assert ids(store.timeline(entity="person-ada")) == ADA
    res = store.timeline(entity="person-ada", eligibility="include_inactive")
    lifecycles = {r["id"]: r["lifecycle"] for r in res["rows"]}
    assert ids(res) == ["rel-2", "dec-exp", "proj-search", "dec-old", "dec-1", "evt-1", "mtg-2", "dec-late", "fut"]
    assert (lifecycles["dec-exp"], lifecycles["dec-old"], lifecycles["dec-1"]) == ("expired", "superseded", "active")
    assert "dec-wd" not in lifecycles
    assert "dec-wd" not in ids(store.timeline(eligibility="include_inactive", limit=200))


# -- group: "source" -----------------------------------------------------------------------------


def test_group_source_one_row_per_dated_source(builder: StoreBuilder) -> None:
    store = team(builder)
    res = store.call("knowledge_timeline", {"entity": "person-ada", "group": "source"})
    rows = {r["id"]: r for r in res["rows"]}
    # dec-1 and evt-1 fold into mtg-1 (same date); dec-late is dated outside it and keeps its row
    assert ids(res) == ["rel-2", "proj-search", "mtg-1", "mtg-2", "dec-late", "fut"]
    assert res["total"] == 6
    mtg1, mtg2 = rows["mtg-1"], rows["mtg-2"]
    assert set(mtg1) == ROW_KEYS | {"claims", "links"}
    assert mtg1["summary"] == "Stands for [[mtg-1]] with [[person-bob]] and [[note-gone]]."  # its event claim
    assert mtg1["claims"] == 3  # dec-1, dec-late, act-1 (not the event claim, not Bob's claim)
    assert mtg1["links"] == ["mtg-1", "person-bob"]  # note-gone does not resolve
    assert mtg1["value"] == "2026-03-04T15:00:00+01:00"  # dated by the source
    assert mtg2["summary"] == "Ada presented the timings; see [[dec-1]] and [[note-gone]]."  # the relationship
    assert (mtg2["claims"], mtg2["links"]) == (0, ["dec-1"])
    assert set(rows["dec-late"]) == ROW_KEYS


def test_group_source_keeps_claims_whose_source_row_is_out_of_range(builder: StoreBuilder) -> None:
    store = team(builder)
    res = store.timeline(entity="person-ada", group="source", since="2026-03-04T20:00:00Z", until="2026-03-04")
    assert ids(res) == ["dec-1"]  # its source meeting (14:00Z) is outside the range


def test_group_source_folds_claims_dated_on_the_sources_own_calendar_day(builder: StoreBuilder) -> None:
    builder.page("person-kim", "Kim", type="person")
    builder.page("mtg", "Handover", type="meeting", fields={"occurred_at": "2026-03-23T00:15:00+01:00"})
    days = {
        "same-day": "2026-03-23",
        "day-before": "2026-03-22",
        "late-that-day": "2026-03-23T22:30:00Z",
        "next-local-day": "2026-03-23T23:00:00Z",
    }
    for rid, when in days.items():
        claim(builder, rid, occurred_at=when, entities=["person-kim"], source="mtg")
    res = builder.open().timeline(entity="person-kim", group="source")
    # 00:15+01:00 is on the 23rd where it was written (23:15Z on the 22nd in UTC)
    assert ids(res) == ["day-before", "mtg", "next-local-day"]
    assert res["rows"][1]["claims"] == 4


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ({"group": "source"}, "group"),
        ({"group": "source", "entity": "person-ada", "kind": "meeting"}, "kind"),
        ({"group": "source", "entity": "person-ada", "timeField": "recorded_at"}, "timeField"),
        ({"group": "day"}, "group"),
    ],
)
def test_group_source_refusals(builder: StoreBuilder, args: dict[str, Any], argument: str) -> None:
    store = team(builder)
    with pytest.raises(InvalidArgument) as err:
        store.call("knowledge_timeline", args)
    assert err.value.argument == argument


# -- includeSources, budget, pagination ----------------------------------------------------------


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def test_include_sources_deduplicates_and_pages_stay_within_the_budget(builder: StoreBuilder) -> None:
    for m in range(3):
        builder.page(f"src-{m}", f"Source {m}", type="meeting", summary=f"Source {m}.")
    source_of, start_of = {}, {}
    for n in range(80):
        rid, source_of[rid] = f"c-{n:02d}", f"src-{(n // 2) % 3}"
        start_of[rid] = f"2026-01-{1 + n % 28:02d}T{n // 28:02d}:00:00Z"
        claim(builder, rid, occurred_at=start_of[rid], source=source_of[rid], summary="ü" * 250)
    store = builder.open()
    first = store.call("knowledge_timeline", {"includeSources": True, "limit": 200})
    rows, sources = first["rows"], first["sources"]
    assert first["total"] == 80
    assert 10 < len(rows) < 80 and first["nextOffset"] == len(rows)
    assert size(rows) + size(sources) <= BUDGET_BYTES
    expected = list(dict.fromkeys(source_of[r["id"]] for r in rows))
    assert [s["id"] for s in sources] == expected and len(expected) == 3
    assert set(sources[0]) == ROW_KEYS and sources[0]["value"] is None  # undated sources are still summarised
    assert first["sourcesTruncated"] is False
    seen, offset, snapshot = [], 0, first["snapshot"]
    while offset is not None:
        page = store.call("knowledge_timeline", {"includeSources": True, "limit": 200, "offset": offset})
        assert page["snapshot"] == snapshot and page["offset"] == offset
        seen += ids(page)
        offset = page["nextOffset"]
    assert seen == sorted(start_of, key=start_of.__getitem__)  # every row once, in order
    plain = store.call("knowledge_timeline", {"limit": 5})
    assert (plain["sources"], plain["sourcesTruncated"]) == (None, None)


def test_a_page_carries_the_sources_of_its_rows_within_the_budget(builder: StoreBuilder) -> None:
    for m in range(6):
        builder.page(f"src-{m}", f"Source {m}", summary="x" * 6000, occurred_at="2026-01-01")
        claim(builder, f"c-{m}", occurred_at=f"2026-02-0{m + 1}", source=f"src-{m}")
    store = builder.open()
    res = store.call("knowledge_timeline", {"includeSources": True, "kind": "decision"})
    assert ids(res) == ["c-0", "c-1", "c-2"] and res["nextOffset"] == 3  # a fourth source would not fit
    assert [s["id"] for s in res["sources"]] == ["src-0", "src-1", "src-2"] and res["sourcesTruncated"] is False
    assert res["sources"][0]["value"] == "2026-01-01"
    assert size(res["rows"]) + size(res["sources"]) <= BUDGET_BYTES
    assert ids(store.call("knowledge_timeline", {"kind": "decision"})) == [f"c-{m}" for m in range(6)]
    builder.page("src-huge", "Huge", summary="y" * BUDGET_BYTES)
    claim(builder, "c-huge", occurred_at="2026-01-01", source="src-huge")
    res = store.call("knowledge_timeline", {"includeSources": True, "kind": "decision", "limit": 2})
    assert ids(res) == ["c-huge", "c-0"]  # the first row always; its source cannot fit, the next one does
    assert [s["id"] for s in res["sources"]] == ["src-0"] and res["sourcesTruncated"] is True


def test_pagination_follows_next_offset_with_a_stable_snapshot(ranges: knowtk.Store, builder: StoreBuilder) -> None:
    full = ids(ranges.timeline())
    pages, offset = [], 0
    snapshots = set()
    while offset is not None:
        res = ranges.call("knowledge_timeline", {"limit": 2, "offset": offset})
        assert res["total"] == 5
        pages.append(ids(res))
        snapshots.add(res["snapshot"])
        offset = res["nextOffset"]
    assert pages == [full[0:2], full[2:4], full[4:]]
    assert len(snapshots) == 1
    since = ranges.call("knowledge_chronicle_since", {"since": "2026-03-04", "limit": 3, "offset": 3})
    assert (ids(since), since["total"], since["nextOffset"]) == (["i2"], 4, None)
    assert ranges.call("knowledge_timeline", {"offset": 50})["rows"] == []
    dated(builder, ("i4", "2026-03-06T00:00:00Z"))
    assert ranges.call("knowledge_timeline", {"limit": 2})["snapshot"] not in snapshots


# -- chronicle ------------------------------------------------------------------------------------


@pytest.fixture
def dst(builder: StoreBuilder) -> knowtk.Store:
    dated(
        builder,
        # Europe/Berlin: clocks go from 02:00 to 03:00 on Sunday 2026-03-29
        ("b-sun-before", "2026-03-22T23:30:00+01:00"),
        ("b-mon-early", "2026-03-23T00:15:00+01:00"),  # Monday in Berlin, Sunday in UTC
        ("b-night", "2026-03-29T01:30:00+01:00"),
        ("b-after", "2026-03-29T03:30:00+02:00"),  # one real hour after b-night
        ("b-late", "2026-03-29T23:30:00+02:00"),
        ("b-next", "2026-03-30T00:30:00+02:00"),  # next Monday in Berlin, still Sunday in UTC
        ("d-22", "2026-03-22"),
        ("d-29", "2026-03-29"),
        ("d-30", "2026-03-30"),
        # America/New_York: clocks go from 02:00 to 03:00 on Sunday 2026-03-08
        ("n-sun-before", "2026-03-01T23:30:00-05:00"),
        ("n-mon", "2026-03-02T00:30:00-05:00"),
        ("n-watch", "2026-03-08T01:30:00-05:00"),
        ("n-done", "2026-03-08T03:30:00-04:00"),
        ("n-late", "2026-03-08T23:30:00-04:00"),
        ("n-next", "2026-03-09T00:30:00-04:00"),
    )
    return builder.open()


def test_chronicle_week_in_berlin_crossing_the_summer_time_change(dst: knowtk.Store) -> None:
    res = dst.call("knowledge_chronicle_day", {"date": "2026-03-26", "week": True, "timeZone": BERLIN})
    assert res["timeZone"] == BERLIN and (res["offset"], res["nextOffset"]) == (0, None)
    assert ids(res) == ["b-mon-early", "d-29", "b-night", "b-after", "b-late"]
    local = {r["id"]: (r["localStart"], r["localEnd"]) for r in res["rows"]}
    assert local["b-mon-early"][0] == "2026-03-23T00:15:00+01:00"
    assert local["b-night"][0] == "2026-03-29T01:30:00+01:00"
    assert local["b-after"] == ("2026-03-29T03:30:00+02:00", "2026-03-29T03:30:00+02:00")
    assert local["b-late"][0] == "2026-03-29T23:30:00+02:00"
    assert local["d-29"] == ("2026-03-29", "2026-03-30")  # a calendar day, not an instant
    # the same week in UTC is another set of rows
    utc = dst.chronicle_day("2026-03-29", week=True)
    assert utc["timeZone"] == "UTC"
    assert ids(utc) == ["d-29", "b-night", "b-after", "b-late", "b-next"]
    # the 23-hour Sunday itself
    assert ids(dst.chronicle_day("2026-03-29", time_zone=BERLIN)) == ["d-29", "b-night", "b-after", "b-late"]
    assert ids(dst.chronicle_day("2026-03-30", time_zone=BERLIN)) == ["b-next", "d-30"]  # 22:30Z sorts first


def test_chronicle_week_in_new_york_crossing_the_us_change(dst: knowtk.Store) -> None:
    res = dst.chronicle_day("2026-03-05", week=True, time_zone=NEW_YORK)
    assert ids(res) == ["n-mon", "n-watch", "n-done", "n-late"]
    local = {r["id"]: r["localStart"] for r in res["rows"]}
    assert (local["n-watch"], local["n-done"]) == ("2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00")
    assert ids(dst.chronicle_day("2026-03-08", week=True)) == ["n-sun-before", "n-mon", "n-watch", "n-done"]


def test_chronicle_since_is_occurrence_time_oldest_first(builder: StoreBuilder) -> None:
    store = team(builder)
    res = store.call("knowledge_chronicle_since", {"since": "2026-03-04T12:00:00Z", "until": "2026-03-10"})
    assert ids(res) == ["dec-1", "evt-1", "note-mention", "bob-only", "adr-1", "mtg-2"]
    assert ids(store.chronicle_since("2026-03-05T00:00:00Z", entity="person-ada")) == ["mtg-2", "dec-late", "fut"]


def test_last_seen_is_the_latest_context_at_or_before_now_by_default(builder: StoreBuilder) -> None:
    store = team(builder)
    now = datetime.now(UTC).isoformat()
    res = store.call("knowledge_chronicle_last_seen", {"entity": "person-ada"})
    past = [r for r in reversed(store.timeline(entity="person-ada")["rows"]) if r["start"] <= now]
    assert ids(res) == [r["id"] for r in past][:LAST_SEEN_ROWS] and "fut" not in ids(res)
    assert res["total"] == len(past) and res["nextOffset"] is None
    on_day = store.chronicle_last_seen("person-ada", occurred_on_or_before="2026-03-04")
    assert ids(on_day) == ["evt-1", "dec-1", "proj-search", "rel-2"]
    morning = store.chronicle_last_seen("person-ada", occurred_on_or_before="2026-03-04T10:00:00+01:00")
    assert ids(morning) == ["dec-1", "proj-search", "rel-2"]  # the date-only decision overlaps the morning


# -- the projection -------------------------------------------------------------------------------


def test_projection_reconciles_only_changed_records_and_rebuilds(builder: StoreBuilder) -> None:
    store = team(builder)
    before = ids(store.timeline(limit=200))
    proj = store.engine.extensions["temporal"]
    projected = set(proj.written)
    assert {"person-ada", "act-1", "dec-exp", "dec-old"} <= projected and "dec-wd" not in projected
    store.timeline()
    assert proj.written == ()
    claim(builder, "dec-late", occurred_at="2026-03-21T12:00:00Z", owner="person-ada", source="mtg-1", title="Later")
    res = store.chronicle_since("2026-03-21")
    assert proj.written == ("dec-late",)
    assert ids(res) == ["dec-late", "fut"] and res["rows"][0]["title"] == "Later"
    builder.remove("notes/mention.md")
    store.timeline()
    assert proj.written == ("note-mention",)

    with sqlite3.connect(store.state_path) as other:  # another process drops the tables: rebuilt
        assert other.execute("SELECT count(*) FROM temporal_dates_v1_root WHERE id = 'dec-late'").fetchone() == (1,)
        other.execute("DROP TABLE temporal_dates_v1_root")
    other.close()
    assert ids(store.timeline(limit=200)) == [i for i in before if i != "note-mention"]
    assert set(proj.written) == projected - {"note-mention"}
    store.engine.state.conn.execute("DROP TABLE temporal_links_v1_root")  # even through our own connection
    assert ids(store.timeline(entity="person-ada"))[0] == "rel-2" and proj.written
    store.engine.state.conn.execute("UPDATE temporal_state_v1 SET fingerprint = 'old'")
    store.timeline()
    assert set(proj.written) == projected - {"note-mention"}

    fresh = knowtk.open_store(builder.root)  # a new process reuses the projection as it is
    assert ids(fresh.timeline(limit=200)) == ids(store.timeline(limit=200))
    assert fresh.engine.extensions["temporal"].written == ()


def test_an_expiry_passing_re_projects_that_record_alone(builder: StoreBuilder) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    claim(builder, "brief", occurred_at="2026-03-04", expires_at=soon.strftime("%Y-%m-%dT%H:%M:%SZ"))
    claim(builder, "lasting", occurred_at="2026-03-05")
    store = builder.open()
    assert ids(store.timeline()) == ["brief", "lasting"]
    time.sleep(max(0.0, (soon - datetime.now(UTC)).total_seconds()) + 0.05)
    assert ids(store.timeline()) == ["lasting"]
    assert store.engine.extensions["temporal"].written == ("brief",)  # no file changed
    inactive = store.timeline(eligibility="include_inactive")
    assert [(r["id"], r["lifecycle"]) for r in inactive["rows"]] == [("brief", "expired"), ("lasting", "active")]


def test_range_filters_run_in_sqlite(builder: StoreBuilder) -> None:
    store = team(builder)
    store.timeline()
    conn = store.engine.state.conn
    conn.execute("UPDATE temporal_dates_v1_root SET start_us = 0, end_us = 0 WHERE id = 'dec-late'")
    assert "dec-late" not in ids(store.timeline(since="2026-03-01"))  # read from the table, not from the files


# -- shapes, frames, plots ------------------------------------------------------------------------


def test_every_response_has_the_contract_keys_and_freshness(builder: StoreBuilder) -> None:
    store = team(builder)
    calls = {
        "knowledge_timeline": {"entity": "person-ada"},
        "knowledge_chronicle_day": {"date": "2026-03-04", "week": True},
        "knowledge_chronicle_since": {"since": "2026-01-01"},
        "knowledge_chronicle_last_seen": {"entity": "person-ada"},
    }
    for tool, args in calls.items():
        res = store.call(tool, args)
        assert set(res) >= RESPONSE_KEYS, tool
        assert res["rows"], tool
        extra = {"localStart", "localEnd"} if tool == "knowledge_chronicle_day" else set()
        assert all(set(r) == ROW_KEYS | extra for r in res["rows"]), tool
        fresh = res["freshness"]
        assert set(fresh) == {"queriedAt", "scannedAt", "indexedAt"} and all(fresh.values()), tool
        assert fresh["scannedAt"] <= fresh["queriedAt"]
        assert res["coverage"] == {"complete": True, "issues": []}
        assert res["snapshot"] == store.call("knowledge_records", {})["snapshot"]


def test_frames_have_tz_aware_intervals(builder: StoreBuilder) -> None:
    store = team(builder)
    frame = store.timeline(entity="person-ada", group="source").to_frame()
    assert str(frame["start"].dtype) == str(frame["end"].dtype) == "datetime64[us, UTC]"
    assert (str(frame["date_only"].dtype), str(frame["claims"].dtype)) == ("boolean", "Int64")
    by_id = frame.set_index("id")
    assert by_id.loc["proj-search", "end"] - by_id.loc["proj-search", "start"] == pd.Timedelta(days=1)
    assert by_id.loc["mtg-1", "end"] == by_id.loc["mtg-1", "start"] == pd.Timestamp("2026-03-04T14:00:00Z")
    assert by_id.loc["mtg-1", "claims"] == 3 and pd.isna(by_id.loc["dec-late", "claims"])
    # microsecond resolution holds dates far beyond datetime64[ns]'s 2262
    assert (
        by_id.loc["fut", "start"] == pd.Timestamp("2999-01-01", tz="UTC") and by_id.loc["fut", "value"] == "2999-01-01"
    )
    assert by_id.loc["mtg-1", "links"] == ["mtg-1", "person-bob"]
    assert by_id.loc["rel-2", "entities"] == ["person-bob", "person-ada"]
    empty = store.timeline(entity="person-nobody").to_frame()
    assert list(empty.columns) == list(frame.columns) and (empty.dtypes == frame.dtypes).all()
    for res in (store.chronicle_day("2026-03-04"), store.chronicle_since("2026-03-01"), store.chronicle_last_seen("x")):
        assert str(res.to_frame()["start"].dtype) == "datetime64[us, UTC]"


def test_result_plot_draws_a_timeline_on_a_date_axis(ranges: knowtk.Store) -> None:
    ax = ranges.timeline().plot()
    bars = {p.get_gid(): p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() == "d"}
    assert bars["d"].get_width() == pytest.approx(1.0)  # one day wide
    assert bars["d"].get_x() == pytest.approx(mdates.date2num(datetime(2026, 3, 4)))
    points = [c for c in ax.collections if isinstance(c, PathCollection) and str(c.get_gid()).startswith("instants")]
    assert sum(len(c.get_offsets()) for c in points) == 4
    assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)  # a date axis
    since = ranges.chronicle_since("2026-03-04").plot()
    assert [p.get_gid() for p in since.patches if isinstance(p, Rectangle) and p.get_gid() == "d"] == ["d"]


def test_result_plot_draws_a_chronicle_week_in_its_time_zone(dst: knowtk.Store) -> None:
    ax = dst.chronicle_day("2026-03-26", week=True, time_zone=BERLIN).plot()
    assert [p.get_gid() for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() == "d-29"] == ["d-29"]
    hours = sorted(
        float(y)
        for c in ax.collections
        if isinstance(c, PathCollection) and str(c.get_gid()).startswith("instants")
        for _, y in c.get_offsets()
    )
    assert hours == [0.25, 1.5, 3.5, 23.5]  # local times of day across the change
    assert BERLIN in ax.get_title()


# -- the same answers as a plain reference implementation, on a generated store ---------------------------

# The reference SQL (simple, and costlier than the date tools' queries, which cost what the answer needs):
# the eligible records as a common table expression, every row fetched, paged in Python. Kept here as
# the reference the current queries must agree with, row for row.
_OLD_ELIG = "elig"


def _old_ctes(p: Any, s: Any) -> str:
    strict = "" if s.inactive else " WHERE lifecycle = 'active' AND strict = 1"
    ctes = [f"elig AS (SELECT id, kind, type, source, source_event FROM {p.records}{strict})"]
    if s.entity is not None:
        ctes += [
            f"about AS (SELECT DISTINCT l.id FROM {p.links} l JOIN elig e ON e.id = l.id "
            "WHERE l.target = :entity AND l.role IN ('entity', 'owner', 'from', 'to'))",
            f"sources AS (SELECT l.target AS id FROM {p.links} l JOIN about a ON a.id = l.id WHERE l.role = 'source' "
            f"UNION SELECT o.target FROM {p.links} l JOIN elig e ON e.id = l.id JOIN {p.links} o ON o.id = l.id "
            "WHERE l.target = :entity AND l.role IN ('from', 'to') AND o.role IN ('from', 'to') "
            "AND o.target != :entity)",
            "direct AS (SELECT id FROM about UNION SELECT id FROM elig WHERE source = :entity "
            "UNION SELECT id FROM sources)",
            "matched AS (SELECT id FROM direct UNION SELECT e.id FROM elig e JOIN direct d ON d.id = e.source "
            "WHERE e.source_event = 1)",
        ]
    return "WITH " + ", ".join(ctes) + " "


def _old_fetch(p: Any, snap: Any, s: Any) -> list[Any]:
    from knowtk.query.dates import OCCURRED, Hit

    where = ["d.field = :field"]
    if s.since is not None:
        where.append("(d.start_us >= :since OR d.end_us > :since)")
    if s.until is not None:
        where.append("d.start_us <= :until")
    if s.calendar is not None:
        where.append(
            "(CASE d.date_only WHEN 1 THEN d.start_us >= :d0 AND d.start_us < :d1 "
            "ELSE d.start_us >= :t0 AND d.start_us < :t1 END)"
        )
    if s.kind is not None:
        where.append("e.type = :kind")
    if s.entity is not None:
        where.append("d.id IN (SELECT id FROM matched)")
    if s.field == OCCURRED and s.kind is None:
        represented = (
            f"NOT EXISTS (SELECT 1 FROM elig c JOIN {p.dates} cd ON cd.id = c.id AND cd.field = '{OCCURRED}' "
            "WHERE c.source = d.id AND c.source_event = 1)"
        )
        where.append(f"(d.id IN (SELECT id FROM sources) OR {represented})" if s.group else represented)
    is_source = "d.id IN (SELECT id FROM sources)" if s.entity is not None else "0"
    desc = " DESC" if s.descending else ""
    sql = (
        f"{_old_ctes(p, s)}SELECT d.id, d.value, d.date_only, d.start_us, d.end_us, e.kind, e.source, {is_source} "
        f"FROM {p.dates} d JOIN elig e ON e.id = d.id WHERE {' AND '.join(where)} "
        f"ORDER BY d.start_us{desc}, d.end_us{desc}, d.id{desc}"
    )
    params = dict(field=s.field, since=s.since, until=s.until, kind=s.kind, entity=s.entity)
    params.update(zip(("d0", "d1", "t0", "t1"), s.calendar or (None,) * 4, strict=True))
    rows = p.state.conn.execute(sql, params).fetchall()
    return [Hit(r[0], r[1], bool(r[2]), r[3], r[4], r[5], r[6], bool(r[7])) for r in rows if r[0] in snap.records]


def _old_select(
    engine: Any, snap: Any, s: Any, page: tuple[int, int] | None = None, kept: Any = None
) -> tuple[Any, list[Any], int]:
    from knowtk.index.temporal import reconciled

    assert kept is None  # (the first implementation had no validAt)

    proj = reconciled(engine, snap)
    hits = _old_fetch(proj, snap, s)
    window = hits if page is None else hits[page[0] : page[0] + page[1]]
    return proj, window, len(hits)


def _random_when(rng: Any) -> str:
    """A date-only value or an instant written in some offset, around two months (DST change included)."""
    day = datetime(2026, 3, 1, tzinfo=UTC) + timedelta(days=rng.randrange(60))
    if rng.random() < 0.4:
        return day.date().isoformat()
    at = day + timedelta(minutes=rng.choice([0, 15, 59, 60 * 12, 60 * 23 + 59]))
    offset = rng.choice(["Z", "+01:00", "-05:00", "+02:00"])
    return at.strftime("%Y-%m-%dT%H:%M:%S") + offset


def _generated(b: StoreBuilder, seed: int) -> knowtk.Store:
    """People, meetings (some standing behind an event claim), sourced and superseded claims, relationships."""
    import random

    rng = random.Random(seed)
    people = [f"person-{i}" for i in range(5)]
    for p in people:
        b.page(p, p.title(), type="person", path=f"people/{p}.md")
    meetings = [f"mtg-{i}" for i in range(20)]
    for m in meetings:
        when = {"fields": {"occurred_at": _random_when(rng)}} if rng.random() < 0.85 else {}
        b.page(m, m, f"# {m}\n\nWith [[{rng.choice(people)}]].\n", type="meeting",
               entities=rng.sample(people, 2), path=f"meetings/{m}.md", **when)  # fmt: skip
        if rng.random() < 0.5:
            event = {"occurred_at": _random_when(rng)} if rng.random() < 0.8 else {}
            claim(b, f"evt-{m}", "event", f"# {m} happened\n\nSee [[{m}]].\n", source=m, source_event=True,
                  entities=[rng.choice(people)], **event)  # fmt: skip
    for i in range(60):
        meta: dict[str, Any] = {"entities": rng.sample(people, rng.randrange(3))}
        if rng.random() < 0.8:
            meta["occurred_at"] = _random_when(rng)
        if rng.random() < 0.6:
            meta["source"] = rng.choice(meetings)
        if rng.random() < 0.3:
            meta["owner"] = rng.choice(people)
        if rng.random() < 0.3:
            meta["due_at"] = _random_when(rng)
        if i > 5 and rng.random() < 0.1:
            meta.update(status="superseded", superseded_by=f"c-{rng.randrange(i)}")
        elif rng.random() < 0.08:
            meta["expires_at"] = "2026-01-31"
        claim(b, f"c-{i}", rng.choice(["decision", "note", "event"]), **meta)
    for i in range(10):
        ends = rng.sample(people + meetings, 2)
        extra = {"occurred_at": _random_when(rng)} if rng.random() < 0.5 else {}
        b.write(f"relations/rel-{i}.md", {"id": f"rel-{i}", "kind": "relationship", "from": ends[0], "to": ends[1],
                "relation": "met", **extra}, f"# rel-{i}\n\nAbout [[{ends[1]}]].\n")  # fmt: skip
    return b.open()


def _calls(seed: int) -> list[tuple[str, dict[str, Any]]]:
    import random

    rng = random.Random(seed)
    out: list[tuple[str, dict[str, Any]]] = []
    for _ in range(60):
        since = rng.choice([None, "2026-03-01", "2026-03-29", "2026-03-29T01:30:00+02:00", "2026-04-15"])
        until = rng.choice([None, "2026-03-31", "2026-04-10T12:00:00Z", "2026-05-01"])
        if since is not None and until is not None and since > until:
            since, until = until, since
        entity = rng.choice([None, None, "person-0", "person-3", "mtg-4"])
        page = {"limit": rng.choice([1, 3, 50]), "offset": rng.choice([0, 0, 2, 7, 500])}
        timeline = {"since": since, "until": until, "entity": entity, "order": rng.choice(["asc", "desc"]),
                    "eligibility": rng.choice(["active", "include_inactive"]), **page}  # fmt: skip
        field = rng.choice(["occurred_at", "occurred_at", "due_at", "recorded_at"])
        kind = rng.choice([None, None, "meeting", "event"])
        if entity is not None and field == "occurred_at" and kind is None and rng.random() < 0.5:
            timeline["group"] = "source"
        else:
            timeline.update(timeField=field, kind=kind, includeSources=rng.random() < 0.5)
        out.append(("knowledge_timeline", {k: v for k, v in timeline.items() if v is not None}))
        chronicle = {"since": since or "2026-03-10", "until": until, "kind": kind, "entity": entity, **page}
        out.append(("knowledge_chronicle_since", {k: v for k, v in chronicle.items() if v is not None}))
        zone = rng.choice([None, "Europe/Berlin", "America/New_York", "Asia/Kolkata"])
        day = {"date": rng.choice(["2026-03-29", "2026-03-30", "2026-04-02"]), "week": rng.random() < 0.5,
               "timeZone": zone, "entity": entity}  # fmt: skip
        out.append(("knowledge_chronicle_day", {k: v for k, v in day.items() if v is not None}))
        seen = {"entity": entity or "person-1", "occurredOnOrBefore": until}
        out.append(("knowledge_chronicle_last_seen", {k: v for k, v in seen.items() if v is not None}))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_date_tools_answer_as_the_first_implementation_did(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    import knowtk.query.dates as dates

    store = _generated(builder, seed)
    calls = _calls(seed)
    got = [store.call(tool, args) for tool, args in calls]
    with monkeypatch.context() as m:
        m.setattr(dates, "_select", _old_select)
        m.setattr(dates, "_ctes", _old_ctes)
        m.setattr(dates, "_eligible", lambda p, s: _OLD_ELIG)
        want = [store.call(tool, args) for tool, args in calls]
    assert sum(len(w["rows"]) for w in want) > 200  # the calls show rows, not only empty pages
    for (tool, args), g, w in zip(calls, got, want, strict=True):
        g, w = ({k: v for k, v in x.items() if k != "freshness"} for x in (g, w))
        assert g == w, (tool, args)
