"""``.knowtk/state.sqlite``: what knowtk keeps beside the Markdown.

Two kinds of tables live here, and the difference matters:

- *projections* (rebuildable from the Markdown): the scan cache
  ``scan_files_v1``, the keyword tables ``keyword_fts_v1_*``,
  ``keyword_rows_v1_*``, ``keyword_history_fts_v1_*``,
  ``keyword_history_rows_v1_*``, ``keyword_state_v1``, the temporal tables and
  the embedding cache. Missing tables or a changed fingerprint are rebuilt on
  the next query.
- *state that Markdown cannot give back*: store identity (``knowtk_meta``) and
  the lifecycle safeguards ``keyword_withdrawals_v1`` and
  ``lifecycle_guards_v1``. These are never dropped or rebuilt.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from .datevalues import format_utc
from .errors import StateError

__all__ = ["SCHEMA_VERSION", "STATE_DIR", "StateDB"]

STATE_DIR = ".knowtk"
STATE_FILE = "state.sqlite"
SCHEMA_VERSION = 1
FORMAT = "knowtk-state"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS knowtk_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS keyword_withdrawals_v1 (
    id TEXT PRIMARY KEY, revision INTEGER NOT NULL, path TEXT NOT NULL, seen_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lifecycle_guards_v1 (
    id TEXT PRIMARY KEY, revision INTEGER NOT NULL, superseded_by TEXT,
    path TEXT NOT NULL, seen_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scan_files_v1 (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT,
    meta TEXT, body_line INTEGER, problem_code TEXT, problem TEXT);
"""


def now_utc() -> datetime:
    return datetime.now(UTC)


class StateDB:
    """One connection to a store's state.sqlite, created on first use."""

    def __init__(self, path: str) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA busy_timeout = 10000")
            tables = {row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            raise StateError(path, f"not a readable SQLite database ({exc}); move it aside to start afresh") from exc
        self._check_identity(tables)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        with self.transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            meta = dict(self.conn.execute("SELECT key, value FROM knowtk_meta"))
            if not meta:
                created = format_utc(now_utc())
                self.conn.executemany(
                    "INSERT INTO knowtk_meta (key, value) VALUES (?, ?)",
                    [
                        ("format", FORMAT),
                        ("schema_version", str(SCHEMA_VERSION)),
                        ("store_id", str(uuid.uuid4())),
                        ("created_at", created),
                    ],
                )
        self.store_id: str = self.meta("store_id") or ""

    def _check_identity(self, tables: set[str]) -> None:
        if not tables:
            return  # a new state
        if "knowtk_meta" not in tables:
            raise StateError(self.path, "this SQLite file is not a knowtk state (no knowtk_meta table)")
        meta = dict(self.conn.execute("SELECT key, value FROM knowtk_meta"))
        if meta.get("format") != FORMAT:
            raise StateError(self.path, f"unknown state format {meta.get('format')!r}")
        version = int(meta.get("schema_version", "0"))
        if version > SCHEMA_VERSION:
            raise StateError(
                self.path,
                f"written by a newer knowtk (schema {version}, this one reads {SCHEMA_VERSION}); upgrade knowtk",
            )

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM knowtk_meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def data_version(self) -> int:
        """Changes when another connection commits: in-memory mirrors must then be reloaded."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def table_exists(self, name: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return row is not None

    def close(self) -> None:
        self.conn.close()
