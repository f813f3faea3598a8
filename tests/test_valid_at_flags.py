"""A validAt timeline tests the records kept then by a flag per temporal row, read by rowid in SQL: the same answers
as the set's own membership test (the path taken where rowids cannot be flagged) and as the records in force then,
after records change (a rowid taken by another record), after another process rewrote or rebuilt the projection,
and for superseded and expired records."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.index.temporal import DATE_ROW_SHIFT
from knowtk.query.validity import Validity, valid_at, validity
from knowtk.state import STATE_FILE
from tests.helpers import StoreBuilder

INSTANTS = ["2019-01-01", "2024-03-01", "2024-07-01", "2024-11-15T12:00:00Z", "2025-02-01", "2025-03-01T12:00:00Z",
            "2030-01-01"]  # fmt: skip
SHAPES: list[dict[str, Any]] = [
    {"kind": "policy"},  # a range that cannot end at the instant: filtered by kind
    {"kind": "policy", "eligibility": "include_inactive"},
    {"timeField": "recorded_at", "eligibility": "include_inactive"},  # nor on recorded_at
    {"timeField": "recorded_at"},
    {},
    {"entity": "person-ada", "order": "desc"},
]
RECORDS = "temporal_records_v1_root"
DATES = "temporal_dates_v1_root"


def _files(b: StoreBuilder) -> None:
    """Chains with and without expires_at, records recorded after they occurred, undated and withdrawn ones."""
    b.page("person-ada", "Ada", path="people/ada.md")
    policy = {"kind": "claim", "type": "policy", "entities": ["person-ada"]}
    b.page("pol-1", "Policy one", "Thirty days.", path="p/pol-1.md", occurred_at="2024-01-01",
           recorded_at="2024-01-05", status="superseded", superseded_by="pol-2", **policy)  # fmt: skip
    b.page("pol-2", "Policy two", "Sixty days.", path="p/pol-2.md", occurred_at="2024-06-01",
           recorded_at="2024-06-02T09:00:00Z", status="superseded", superseded_by="pol-3", **policy)  # fmt: skip
    b.page("pol-3", "Policy three", "Ninety days.", path="p/pol-3.md", occurred_at="2025-01-01",
           recorded_at="2025-01-01T08:00:00+01:00", **policy)  # fmt: skip
    b.page("cur-1", "Currency one", "Old coin.", path="c/cur-1.md", kind="claim", type="currency",
           occurred_at="2024-01-01", recorded_at="2024-02-01", expires_at="2024-12-31", status="superseded",
           superseded_by="cur-2")  # fmt: skip
    b.page("cur-2", "Currency two", "New coin.", path="c/cur-2.md", kind="claim", type="currency",
           recorded_at="2024-10-01T00:00:00+02:00", entities=["person-ada"])  # fmt: skip
    b.page("late", "Late record", "Recorded a year on.", path="n/late.md", type="policy", occurred_at="2023-06-01",
           recorded_at="2025-02-20", expires_at="2025-03-01T00:00:00Z")  # fmt: skip
    b.page("memo", "Undated memo", "No date.", path="n/memo.md", type="policy", updated_at="2024-02-02")
    b.page("gone", "Withdrawn rule", "Withdrawn.", path="n/gone.md", type="policy", occurred_at="2020-01-01",
           recorded_at="2020-01-01", status="withdrawn")  # fmt: skip
    for n in range(12):
        b.page(f"log-{n:02d}", f"Log {n}", "A log line.", path=f"l/log-{n:02d}.md", type="policy" if n % 3 else "log",
               occurred_at=f"2024-{1 + n:02d}-15", recorded_at=f"2024-{1 + n:02d}-16")  # fmt: skip


def _timeline(store: knowtk.Store, when: str, shape: dict[str, Any]) -> dict[str, Any]:
    """Every page of the timeline at ``when`` (two rows a page), with its totals and the unplaced count."""
    pages, offset = [], 0
    while offset is not None:
        res = store.call("knowledge_timeline", {**shape, "validAt": when, "limit": 2, "offset": offset})
        pages.append((res["rows"], res["total"], res["nextOffset"], res["unplaced"]))
        offset = res["nextOffset"]
    return {"pages": pages}


def _answers(store: knowtk.Store) -> list[dict[str, Any]]:
    return [_timeline(store, when, shape) for when in INSTANTS for shape in SHAPES]


def _flagged(store: knowtk.Store, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, Any]], int]:
    """The answers, and how many instants were answered by flags per row."""
    made: list[bytes] = []
    original = Validity.flags_by_row

    def counted(self: Validity, *args: Any) -> bytes | None:
        flags = original(self, *args)
        made.extend([flags] if flags is not None else [])
        return flags

    with monkeypatch.context() as m:
        m.setattr(Validity, "flags_by_row", counted)
        answers = _answers(store)
    return answers, len(made)


def _asked(store: knowtk.Store, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The answers where no rowid can be flagged: the set's own membership test, asked per row."""
    with monkeypatch.context() as m:
        m.setattr(Validity, "flags_by_row", lambda self, *args: None)
        return _answers(store)


def _in_force(store: knowtk.Store, when: str, shape: dict[str, Any]) -> list[str]:
    """The oracle: the timeline without validAt, every lifecycle, kept where the record's lifecycle then (the spans'
    own answer, asked in Python) is one the eligibility wants."""
    inactive = shape.get("eligibility") == "include_inactive"
    then = validity(store.engine, store.snapshot()).at(valid_at("validAt", when))
    rows = store.call("knowledge_timeline", {**shape, "eligibility": "include_inactive", "limit": 200})["rows"]
    return [
        r["id"] for r in rows if then.get(r["id"]) in (("active", "superseded", "expired") if inactive else ("active",))
    ]


def _rowids(state: Path) -> tuple[dict[str, int], list[tuple[str, int]]]:
    conn = sqlite3.connect(state / STATE_FILE)
    try:
        records = dict(conn.execute(f"SELECT id, rowid FROM {RECORDS}"))
        dates = conn.execute(f"SELECT id, rowid FROM {DATES}").fetchall()
    finally:
        conn.close()
    return records, dates


@pytest.fixture
def store(builder: StoreBuilder) -> knowtk.Store:
    _files(builder)
    return builder.open()


def test_flags_answer_as_the_membership_test_and_the_records_in_force(
    store: knowtk.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    flagged, made = _flagged(store, monkeypatch)
    assert made  # (each instant and lifecycles made once, then kept)
    assert flagged == _asked(store, monkeypatch)
    for when in INSTANTS:
        for shape in (SHAPES[0], SHAPES[1], SHAPES[2]):
            shown = [r["id"] for rows, *_ in _timeline(store, when, shape)["pages"] for r in rows]
            assert shown == _in_force(store, when, shape), (when, shape)
    # the two shapes show superseded and expired records at the instants after their ends
    at = {r["id"]: r["lifecycle"] for rows, *_ in _timeline(store, "2025-03-01T12:00:00Z", SHAPES[2])["pages"]
          for r in rows}  # fmt: skip
    assert at["pol-1"] == at["pol-2"] == "superseded" and at["cur-1"] == at["late"] == "expired"
    assert at["pol-3"] == at["cur-2"] == "active" and "gone" not in at and "memo" not in at


def test_a_date_row_is_numbered_after_its_record(store: knowtk.Store) -> None:
    store.call("knowledge_timeline", {"validAt": "2024-07-01"})
    records, dates = _rowids(Path(store.engine.state_path).parent)
    assert dates and all(rowid >> DATE_ROW_SHIFT == records[rid] for rid, rowid in dates)


def test_flags_follow_records_written_again_and_a_rowid_taken_by_another(
    builder: StoreBuilder, store: knowtk.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = Path(store.engine.state_path).parent
    before, made = _flagged(store, monkeypatch)
    assert made
    records, _ = _rowids(state)
    last = max(records, key=records.__getitem__)  # its rowid, the largest, is the next new record's
    kept = records["pol-2"]
    builder.remove(next(p.relative_to(builder.root).as_posix() for p in builder.root.rglob(f"{last}.md")))
    builder.page("pol-4", "Policy four", "A year.", path="p/pol-4.md", kind="claim", type="policy",
                 occurred_at="2024-08-01", recorded_at="2024-08-01", entities=["person-ada"])  # fmt: skip
    # pol-2 now ends at pol-4's start, and was recorded later
    builder.page("pol-2", "Policy two", "Sixty days.", path="p/pol-2.md", kind="claim", type="policy",
                 occurred_at="2024-06-01", recorded_at="2024-07-20", status="superseded", superseded_by="pol-4",
                 entities=["person-ada"])  # fmt: skip
    after, made = _flagged(store, monkeypatch)
    records_after, _ = _rowids(state)
    assert records_after["pol-4"] == records[last] and records_after["pol-2"] == kept
    assert made and after != before
    assert after == _asked(store, monkeypatch)
    with knowtk.open_store(builder.root, state_dir=tmp_path / "fresh") as fresh:
        assert after == _answers(fresh)


def test_flags_follow_another_process_that_rewrote_or_rebuilt_the_projection(
    builder: StoreBuilder, store: knowtk.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = Path(store.engine.state_path).parent
    _flagged(store, monkeypatch)  # this process keeps the rowids it read
    with builder.open() as other:  # another process, whose mirror holds no rowids: it numbers records anew
        builder.page("pol-2", "Policy two", "Sixty days.", path="p/pol-2.md", kind="claim", type="policy",
                     occurred_at="2024-05-01", recorded_at="2024-05-02", status="superseded", superseded_by="pol-3",
                     entities=["person-ada"])  # fmt: skip
        builder.remove("p/pol-1.md")
        other.call("knowledge_timeline", {})
    records, _ = _rowids(state)
    assert records["pol-2"] > max(rowid for rid, rowid in records.items() if rid != "pol-2")
    rewritten, made = _flagged(store, monkeypatch)
    assert made and rewritten == _asked(store, monkeypatch)
    with knowtk.open_store(builder.root, state_dir=tmp_path / "fresh") as fresh:
        assert rewritten == _answers(fresh)
    with builder.open() as other:  # the projection dropped and made again: every record numbered from 1
        other.call("knowledge_timeline", {})
        other.engine.extensions["temporal"].rebuild()
        builder.remove("c/cur-1.md")
        other.call("knowledge_timeline", {})
    assert min(_rowids(state)[0].values()) == 1
    rebuilt, made = _flagged(store, monkeypatch)
    assert made and rebuilt == _asked(store, monkeypatch)
    with knowtk.open_store(builder.root, state_dir=tmp_path / "fresh2") as fresh:
        assert rebuilt == _answers(fresh)


def test_check_rebuilds_date_rows_numbered_after_another_record(store: knowtk.Store) -> None:
    expected = _answers(store)
    conn = sqlite3.connect(Path(store.engine.state_path))
    with conn:
        conn.execute(f"UPDATE {DATES} SET rowid = rowid + 1000000 WHERE id = 'pol-3'")
    conn.close()
    report = store.check()
    assert any("numbered" in line for line in report["found"]) and "temporal tables rebuilt" in report["repaired"]
    records, dates = _rowids(Path(store.engine.state_path).parent)
    assert all(rowid >> DATE_ROW_SHIFT == records[rid] for rid, rowid in dates)
    assert _answers(store) == expected


@pytest.mark.parametrize("rowid", [0, 1 << 40])
def test_rowids_that_cannot_be_flagged_are_asked_per_row(
    store: knowtk.Store, rowid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rowid below 1 (SQL's substr reads none, or counts from the end) or far past the records: the same answers,
    from the set's own membership test."""
    expected = _asked(store, monkeypatch)
    conn = sqlite3.connect(Path(store.engine.state_path))
    with conn:  # pol-3 renumbered, its dates with it (as the tables number them)
        conn.execute(f"UPDATE {RECORDS} SET rowid = ? WHERE id = 'pol-3'", (rowid,))
        conn.execute(
            f"UPDATE {DATES} SET rowid = (? << {DATE_ROW_SHIFT}) | (rowid & {(1 << DATE_ROW_SHIFT) - 1}) "
            "WHERE id = 'pol-3'",
            (rowid,),
        )
    conn.close()
    assert not store.check()["found"]
    answers, made = _flagged(store, monkeypatch)
    assert not made and answers == expected


def test_flags_answer_as_the_membership_test_on_the_demo_with_sources(
    demo_store: knowtk.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entity's timeline grouped by source (its source details read the flags too) and the other shapes."""
    shapes = [
        {"entity": "proj-lumen", "group": "source", "limit": 5, "includeSources": True},
        {"entity": "proj-lumen", "eligibility": "include_inactive", "limit": 5},
        {"kind": "decision", "eligibility": "include_inactive", "limit": 5},
        {"timeField": "recorded_at", "limit": 5},
    ]

    def answers() -> list[Any]:
        out = []
        for when in ("2025-10-01", "2026-01-14", "2026-03-01T12:00:00-08:00"):
            for shape in shapes:
                res = demo_store.call("knowledge_timeline", {**shape, "validAt": when})
                out.append((res["rows"], res["sources"], res["total"], res["nextOffset"], res["unplaced"]))
        return out

    made: list[bytes] = []
    original = Validity.flags_by_row
    with monkeypatch.context() as m:
        m.setattr(Validity, "flags_by_row", lambda self, *a: made.append(original(self, *a)) or made[-1])
        flagged = answers()
    assert made and all(f is not None for f in made)
    assert any(r.get("claims") for rows, *_ in flagged[::4] for r in rows)  # sources with claims counted then
    with monkeypatch.context() as m:
        m.setattr(Validity, "flags_by_row", lambda self, *a: None)
        assert answers() == flagged
