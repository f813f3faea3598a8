"""validAt from a stored snapshot: a new process places records by the starts its image keeps (no record built
for them), a snapshot built since patches them, and every answer is the one a fresh build of the files gives.

A new ``Store`` on the same state dir stands for a new process; the reference is a store opened on an empty
state dir of its own (a cold build).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.snapshot.stored import StoredRecords
from knowtk.state import STATE_FILE
from tests.helpers import StoreBuilder

INSTANTS = ["2019-06-01", "2024-03-01", "2024-07-01", "2024-11-15T12:00:00Z", "2025-02-01", "2025-03-01T12:00:00Z",
            "2026-01-01"]  # fmt: skip


def _files(b: StoreBuilder) -> None:
    """Chains with and without expires_at, records with one date, with neither, withdrawn, and filler records."""
    policy = {"kind": "claim", "type": "policy", "tags": ["policy"]}
    b.page("pol-1", "Retention policy one", "Keep logs thirty days.", path="policies/pol-1.md",
           occurred_at="2024-01-01", status="superseded", superseded_by="pol-2", **policy)  # fmt: skip
    b.page("pol-2", "Retention policy two", "Keep logs sixty days.", path="policies/pol-2.md",
           occurred_at="2024-06-01", status="superseded", superseded_by="pol-3", **policy)  # fmt: skip
    b.page("pol-3", "Retention policy three", "Keep logs ninety days.", path="policies/pol-3.md",
           occurred_at="2025-01-01", **policy)  # fmt: skip
    b.page("cur-1", "Currency one", "The old coin circulates.", path="currency/cur-1.md", kind="claim",
           type="currency", occurred_at="2024-01-01", expires_at="2024-12-31", status="superseded",
           superseded_by="cur-2")  # fmt: skip
    b.page("cur-2", "Currency two", "The new coin circulates.", path="currency/cur-2.md", kind="claim",
           type="currency", recorded_at="2024-10-01T00:00:00+02:00")  # fmt: skip
    b.page("memo", "Undated retention memo", "Retention without a date.", path="notes/memo.md")
    b.page("gone", "Withdrawn retention rule", "Retention rule withdrawn.", path="notes/gone.md",
           occurred_at="2020-01-01", status="withdrawn")  # fmt: skip
    for n in range(300):
        b.page(f"log-{n:03d}", f"Log entry {n}", "A retention log line.", path=f"logs/log-{n:03d}.md",
               occurred_at=f"20{19 + n % 7}-0{1 + n % 9}-1{n % 10}")  # fmt: skip


def _answers(store: knowtk.Store) -> dict[str, Any]:
    """Every tool's answer at each instant: rows with their lifecycle then, hits, spans, unplaced counts."""
    out: dict[str, Any] = {}
    for when in INSTANTS:
        records = store.call("knowledge_records", {"validAt": when, "lifecycle": "all", "limit": 1000})
        grep = store.call("knowledge_grep", {"query": "retention", "validAt": when, "limit": 50})
        timeline: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            args = {"validAt": when, "eligibility": "include_inactive", "limit": 200, "offset": offset}
            page = store.call("knowledge_timeline", args)
            timeline, offset = timeline + page["rows"], page["nextOffset"]
        lookup = store.call("knowledge_lookup", {"query": "Retention policy two", "validAt": when})
        out[when] = {
            "records": ([(r["id"], r["lifecycle"]) for r in records["rows"]], records["total"], records["unplaced"]),
            "grep": ([(h["id"], h["lifecycle"]) for h in grep["hits"]], grep["total"], grep["unplaced"]),
            "timeline": [(r["id"], r["lifecycle"], r["validFrom"], r["validUntil"]) for r in timeline],
            "lookup": (lookup["status"], lookup["record"] and lookup["record"]["lifecycle"], lookup["unplaced"]),
        }
    return out


def _reference(root: Path, state_dir: Path) -> dict[str, Any]:
    with knowtk.open_store(root, state_dir=state_dir) as fresh:
        return _answers(fresh)


def _image_parts(state_dir: Path) -> dict[str, Any]:
    conn = sqlite3.connect(state_dir / STATE_FILE)
    try:
        meta = json.loads(conn.execute("SELECT data FROM snapshot_image_v1 WHERE part = 'meta'").fetchone()[0])
    finally:
        conn.close()
    assert isinstance(meta, dict)
    return meta


@pytest.fixture
def built(builder: StoreBuilder, tmp_path: Path) -> tuple[StoreBuilder, Path]:
    """The store, cold built once on its state dir (which keeps its image)."""
    _files(builder)
    state_dir = tmp_path / "state"
    with builder.open(state_dir=state_dir) as store:
        store.records()
    assert "record_starts" in _image_parts(state_dir)["parts"]
    return builder, state_dir


def test_a_new_process_places_records_by_the_stored_starts_without_building_them(
    built: tuple[StoreBuilder, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder, state_dir = built
    expected = _reference(builder.root, tmp_path / "ref")
    built_ids: list[str] = []
    original = StoredRecords.__getitem__

    def counted(self: StoredRecords, rid: str) -> Any:
        built_ids.append(rid)
        return original(self, rid)

    with builder.open(state_dir=state_dir) as store:
        store.records(limit=1)  # the image adopted
        assert isinstance(store.snapshot().records, StoredRecords)
        monkeypatch.setattr(StoredRecords, "__getitem__", counted)
        rows = store.call("knowledge_records", {"validAt": "2024-07-01", "limit": 2})["rows"]
        # the page's records and the one that cannot be placed (its filters judged): not the 300 others
        assert len(rows) == 2 and len(set(built_ids)) <= 3
        monkeypatch.setattr(StoredRecords, "__getitem__", original)
        assert _answers(store) == expected


def test_spans_follow_changes_in_the_process_and_in_the_next_ones(
    built: tuple[StoreBuilder, Path], tmp_path: Path
) -> None:
    """Edited dates, a new replacement, a removed record: patched in the process that sees them. Then an edit made
    while no process runs: the next process takes the image with it as its drift and writes a patch, which the one
    after reads."""
    builder, state_dir = built
    with builder.open(state_dir=state_dir) as store:
        before = _answers(store)
        assert before == _reference(builder.root, tmp_path / "ref0")
        policy = {"kind": "claim", "type": "policy", "tags": ["policy"]}
        # pol-2 ends where pol-3 now starts; pol-3 is superseded by a new pol-4; cur-1 gone (cur-2 placed alone)
        builder.page("pol-3", "Retention policy three", "Keep logs ninety days.", path="policies/pol-3.md",
                     occurred_at="2024-09-01T08:00:00Z", status="superseded", superseded_by="pol-4",
                     **policy)  # fmt: skip
        builder.page("pol-4", "Retention policy four", "Keep logs a year.", path="policies/pol-4.md",
                     recorded_at="2025-02-01", **policy)  # fmt: skip
        builder.remove("currency/cur-1.md")
        after = _answers(store)
        assert after != before
        assert after == _reference(builder.root, tmp_path / "ref1")
    with builder.open(state_dir=state_dir) as store:
        assert _answers(store) == after
    # the undated record placed
    builder.page(
        "memo", "Dated retention memo", "Retention with a date.", path="notes/memo.md", recorded_at="2024-02-02"
    )
    dated = _reference(builder.root, tmp_path / "ref2")
    assert dated != after
    for _ in range(2):  # the image with its drift (a patch written), then the patched image
        with builder.open(state_dir=state_dir) as store:
            store.records(limit=1)
            assert _answers(store) == dated
        assert _image_parts(state_dir)["patches"]


def test_an_image_stored_without_starts_is_answered_from_its_records(
    built: tuple[StoreBuilder, Path], tmp_path: Path
) -> None:
    """An image an earlier knowtk wrote has no starts: its snapshot builds its records for them."""
    builder, state_dir = built
    conn = sqlite3.connect(state_dir / STATE_FILE)
    with conn:
        meta = json.loads(conn.execute("SELECT data FROM snapshot_image_v1 WHERE part = 'meta'").fetchone()[0])
        del meta["parts"]["record_starts"]
        conn.execute("DELETE FROM snapshot_image_v1 WHERE part = 'record_starts'")
        conn.execute("UPDATE snapshot_image_v1 SET data = ? WHERE part = 'meta'", (json.dumps(meta),))
    conn.close()
    with builder.open(state_dir=state_dir) as store:
        store.records(limit=1)
        assert isinstance(store.snapshot().records, StoredRecords)
        assert _answers(store) == _reference(builder.root, tmp_path / "ref")
