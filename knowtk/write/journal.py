"""Receipts, intents and file versions in state.sqlite: what the Markdown cannot give back about writes.

- ``receipts_v1`` (with ``receipt_records_v1``, one row per record a receipt touched): every finished
  mutation, newest last; ``indexed`` turns 1 once a query reconciled the index past it.
- ``write_intents_v1``: a mutation under way (its files' bytes before and after, the safeguards it adds);
  a row left here by a crash is finished or rolled back at the next open (``knowtk.write.mutation``).
- ``file_versions_v1``: the bytes of each file a mutation wrote or replaced, by SHA-256, for ``diff``.

These are state, not projections: never rebuilt from the Markdown, never dropped by a repair.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from knowtk.state import StateDB

if TYPE_CHECKING:
    from knowtk.snapshot.model import Snapshot

__all__ = [
    "add_versions",
    "ensure_tables",
    "insert_intent",
    "intents",
    "mark_indexed",
    "mark_reconciled",
    "pending_receipts",
    "receipt",
    "receipt_rows",
    "save_receipt",
    "set_checkpoint",
    "version",
]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS receipts_v1 (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, "
    "operation TEXT NOT NULL, at TEXT NOT NULL, actor TEXT, reason TEXT, records TEXT NOT NULL, "
    "checkpoint TEXT, indexed INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS receipts_v1_pending ON receipts_v1 (indexed) WHERE indexed = 0",
    "CREATE TABLE IF NOT EXISTS receipt_records_v1 (record TEXT NOT NULL, seq INTEGER NOT NULL, "
    "PRIMARY KEY (record, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS write_intents_v1 (id TEXT PRIMARY KEY, created TEXT NOT NULL, payload TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS file_versions_v1 (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL)",
)


def ensure_tables(state: StateDB) -> None:
    if state.table_exists("receipts_v1") and state.table_exists("file_versions_v1"):
        return
    with state.transaction() as conn:
        for statement in _SCHEMA:
            conn.execute(statement)


def insert_intent(state: StateDB, rid: str, created: str, payload: dict[str, Any]) -> None:
    with state.transaction() as conn:
        conn.execute(
            "INSERT INTO write_intents_v1 (id, created, payload) VALUES (?, ?, ?)", (rid, created, json.dumps(payload))
        )


def intents(state: StateDB) -> list[tuple[str, dict[str, Any]]]:
    """The mutations under way (or left unfinished by a crash), oldest first."""
    if not state.table_exists("write_intents_v1"):
        return []
    rows = state.conn.execute("SELECT id, payload FROM write_intents_v1 ORDER BY created, id").fetchall()
    return [(rid, json.loads(payload)) for rid, payload in rows]


def drop_intent(state: StateDB, rid: str) -> None:
    with state.transaction() as conn:
        conn.execute("DELETE FROM write_intents_v1 WHERE id = ?", (rid,))


def add_versions(conn: sqlite3.Connection, blobs: dict[str, bytes]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO file_versions_v1 (sha256, data) VALUES (?, ?)", [(k, v) for k, v in blobs.items()]
    )


def version(state: StateDB, sha256: str) -> bytes | None:
    if not state.table_exists("file_versions_v1"):
        return None
    row = state.conn.execute("SELECT data FROM file_versions_v1 WHERE sha256 = ?", (sha256,)).fetchone()
    return None if row is None else bytes(row[0])


def save_receipt(state: StateDB, receipt: dict[str, Any], blobs: dict[str, bytes]) -> None:
    """The finished mutation: its receipt, the file versions, and its intent gone, in one transaction."""
    with state.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO receipts_v1 (id, operation, at, actor, reason, records, checkpoint) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                receipt["id"],
                receipt["operation"],
                receipt["at"],
                receipt["actor"],
                receipt["reason"],
                json.dumps(receipt["records"]),
                receipt["checkpoint"],
            ),
        )
        seq = cur.lastrowid
        conn.executemany(
            "INSERT OR IGNORE INTO receipt_records_v1 (record, seq) VALUES (?, ?)",
            [(r["id"], seq) for r in receipt["records"]],
        )
        add_versions(conn, blobs)
        conn.execute("DELETE FROM write_intents_v1 WHERE id = ?", (receipt["id"],))


def set_checkpoint(state: StateDB, rid: str, commit: str) -> None:
    with state.transaction() as conn:
        conn.execute("UPDATE receipts_v1 SET checkpoint = ? WHERE id = ?", (commit, rid))


def _receipt(row: tuple[Any, ...]) -> dict[str, Any]:
    rid, operation, at, actor, reason, records, checkpoint, indexed = row
    return {
        "id": rid,
        "operation": operation,
        "at": at,
        "actor": actor,
        "reason": reason,
        "records": json.loads(records),
        "indexed": bool(indexed),
        "checkpoint": checkpoint,
    }


_COLUMNS = "r.id, r.operation, r.at, r.actor, r.reason, r.records, r.checkpoint, r.indexed"


def receipt_rows(
    state: StateDB, *, record: str | None, since: str | None, until: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """(a page of receipts, newest first; how many match in all)."""
    if not state.table_exists("receipts_v1"):
        return [], 0
    where, params = [], []
    join = ""
    if record is not None:
        join = " JOIN receipt_records_v1 x ON x.seq = r.seq AND x.record = ?"
        params.append(record)
    if since is not None:
        where.append("r.at >= ?")
        params.append(since)
    if until is not None:
        where.append("r.at <= ?")
        params.append(until)
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    with state.reading() as conn:
        total = conn.execute(f"SELECT count(*) FROM receipts_v1 r{join}{clause}", params).fetchone()[0]
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM receipts_v1 r{join}{clause} ORDER BY r.seq DESC LIMIT ? OFFSET ?",
            [*params, limit, min(offset, total)],  # capped: SQLite takes no integer past 64 bits
        ).fetchall()
    return [_receipt(row) for row in rows], int(total)


def pending_receipts(state: StateDB) -> list[tuple[int, list[dict[str, Any]], str]]:
    """(seq, records, at) of the receipts no query has reconciled yet."""
    rows = state.conn.execute("SELECT seq, records, at FROM receipts_v1 WHERE indexed = 0").fetchall()
    return [(seq, json.loads(records), at) for seq, records, at in rows]


def mark_indexed(state: StateDB, seqs: list[int]) -> None:
    with state.transaction() as conn:
        conn.executemany("UPDATE receipts_v1 SET indexed = 1 WHERE seq = ?", [(s,) for s in seqs])


def receipt(state: StateDB, rid: str) -> dict[str, Any] | None:
    """One receipt by its id, or None."""
    if not state.table_exists("receipts_v1"):
        return None
    row = state.conn.execute(f"SELECT {_COLUMNS} FROM receipts_v1 r WHERE r.id = ?", (rid,)).fetchone()
    return None if row is None else _receipt(row)


def mark_reconciled(state: StateDB, snap: Snapshot) -> None:
    """Mark indexed the pending receipts a reconciled snapshot is past: every file moved on from its before.

    Here, not in ``history``: every query runs it, and this module is light. ``snap.paths`` is read only
    when a receipt is pending (a stored image parses that map at its first use).
    """
    if not state.table_exists("receipts_v1"):
        return
    pending = pending_receipts(state)
    if not pending:
        return
    paths = snap.paths
    done = [
        seq
        for seq, records, _ in pending
        if all(paths.get(r["path"]) != r["sha256Before"] for r in records if r["sha256Before"] != r["sha256After"])
    ]
    if done:
        mark_indexed(state, done)
