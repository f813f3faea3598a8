"""The tables of a keyword projection in state.sqlite: made, checked, dropped, and written.

Each projection is an FTS5 table (title, aliases, body) beside a rows table (id, sha256, token count). The FTS5
table keeps no copy of its own: it is an external-content table over a view of ``<fts>_text`` (title, aliases,
the body deflated with zlib, and its size in bytes). FTS5 reads a row back through the view (``knowtk_inflate``,
a function every state connection has: ``knowtk.state``) for ``highlight()`` and to delete the row's index
entries; the view's rows are exactly what was indexed, so highlights, snippets and deletions are those of a
table holding the text. The bodies were most of the state at 100k records (docs/performance.md, "The state on
disk").

Triggers on the rows table clear the image mark (``knowtk.index.image_mark``) and log for the rowmap
(``knowtk.index.rowmap``) at every change of the rows, whoever writes them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from typing import Any, NamedTuple

from knowtk.index.fts_tables import COLUMNS, FINGERPRINT, SHADOWS, TOKENIZER, FtsTables, fts5_varints
from knowtk.index.rowmap import ROWMAP_LOG, ROWMAP_LOG_SCHEMA, ROWMAP_SCHEMA, ROWMAP_TABLE
from knowtk.scan.progress import progress
from knowtk.state import deflate

__all__ = [
    "PENDING_TERMS_BYTES",
    "FtsStorage",
    "TextWriter",
    "WrittenRows",
    "deflated",
    "drop_fts",
    "set_pending_bytes",
]

# FTS5 keeps a write's new terms in memory up to this many bytes, then writes them out as a segment that
# later merges rewrite: 1 MiB by default, with which a first build of 100k records took 36-40 s against
# 31-32 s (bench/memory.py --groups cold, docs/performance.md). A transaction ends with every term written.
PENDING_TERMS_BYTES = 16 * 2**20
TRIGGER_OPS = ("INSERT", "DELETE", "UPDATE")  # of the rows table: each clears the mark, logs for the rowmap


class WrittenRows(NamedTuple):
    """What ``FtsStorage.write`` wrote: the ids inserted from rowid ``first`` on, in order, their tokens, whether
    every fresh id was written (``complete``: none changed again meanwhile) and whether the table was empty."""

    first: int
    inserted: list[str]
    sizes: dict[int, int]
    complete: bool
    emptied: bool


class FtsStorage:
    """Makes, checks and writes one projection's tables (``FtsTables``), in the caller's transactions."""

    def __init__(self, tables: FtsTables) -> None:
        self.tables = tables

    def stored_state(self) -> tuple[str, str | None] | None:
        """(fingerprint, indexed_at) of the projection as ``keyword_state_v1`` holds it (None: no row)."""
        tables = self.tables
        if not tables.state.table_exists("keyword_state_v1"):
            with tables.state.transaction():
                tables.conn.execute(
                    "CREATE TABLE IF NOT EXISTS keyword_state_v1 "
                    "(projection TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, indexed_at TEXT)"
                )
        row = tables.conn.execute(
            "SELECT fingerprint, indexed_at FROM keyword_state_v1 WHERE projection = ?", (tables.key,)
        )
        found: tuple[str, str | None] | None = row.fetchone()
        return found

    def create(self) -> None:
        """Drop the tables and make them again, empty (in the caller's transaction)."""
        t = self.tables
        conn = t.conn
        drop_fts(conn, t.fts)
        conn.execute(f"DROP VIEW IF EXISTS {t.view}")
        conn.execute(f"DROP TABLE IF EXISTS {t.text}")
        conn.execute(f"DROP TABLE IF EXISTS {t.rows}")
        conn.execute(
            f"CREATE TABLE {t.text} (rowid INTEGER PRIMARY KEY, title TEXT NOT NULL, "
            "aliases TEXT NOT NULL, body BLOB NOT NULL, size INTEGER NOT NULL)"
        )
        conn.execute(
            f"CREATE VIEW {t.view} (rid, {', '.join(COLUMNS)}) AS "
            f"SELECT rowid, title, aliases, knowtk_inflate(body) FROM {t.text}"
        )
        conn.execute(
            f"CREATE VIRTUAL TABLE {t.fts} USING fts5({', '.join(COLUMNS)}, "
            f"content='{t.view}', content_rowid='rid', tokenize='{TOKENIZER}')"
        )
        set_pending_bytes(conn, t.fts)
        conn.execute(
            f"CREATE TABLE {t.rows} (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
            "sha256 TEXT NOT NULL, tokens INTEGER NOT NULL)"
        )
        conn.execute(
            "INSERT OR REPLACE INTO keyword_state_v1 (projection, fingerprint, indexed_at) VALUES (?, ?, NULL)",
            (t.key, FINGERPRINT),
        )
        self.create_triggers()

    def create_triggers(self) -> None:
        """Triggers on the rows table. Any change clears the image mark: a reconcile sets it again after its
        writes, while any other writer (an older knowtk, a hand edit) leaves it cleared, so a mark is proof that
        the rows are exactly that image's records and the engine trusts it without reading the rows. While a
        rowmap is kept, a rowid whose row may differ from it is logged (``Rowmaps.rowmap``): every deleted or
        updated row's, and an inserted row's at or below the rowmap's top rowid (a reconcile's new rows lie above
        it)."""
        t = self.tables
        conn, key = t.conn, t.key
        conn.execute(ROWMAP_SCHEMA)
        conn.execute(ROWMAP_LOG_SCHEMA)
        kept = f"EXISTS (SELECT 1 FROM {ROWMAP_TABLE} WHERE projection = '{key}')"
        below = f"new.rowid <= (SELECT top FROM {ROWMAP_TABLE} WHERE projection = '{key}')"
        log = f"INSERT OR IGNORE INTO {ROWMAP_LOG} (projection, rowid) VALUES ('{key}', {{}});"
        logged = {
            "INSERT": (below, log.format("new.rowid")),
            "DELETE": (kept, log.format("old.rowid")),
            "UPDATE": (kept, log.format("old.rowid") + " " + log.format("new.rowid")),
        }
        for op in TRIGGER_OPS:
            conn.execute(
                f"CREATE TRIGGER IF NOT EXISTS {t.fts}_mark_{op.lower()} AFTER {op} ON {t.rows} "
                f"BEGIN DELETE FROM knowtk_meta WHERE key = '{key}:image'; END"
            )
            when, then = logged[op]
            conn.execute(
                f"CREATE TRIGGER IF NOT EXISTS {t.fts}_rowmap_{op.lower()} AFTER {op} ON {t.rows} "
                f"WHEN {when} BEGIN {then} END"
            )

    def triggers_missing(self) -> bool:
        t = self.tables
        sql = "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? AND name IN ({})"
        names = [f"{t.fts}_{kind}_{op.lower()}" for kind in ("mark", "rowmap") for op in TRIGGER_OPS]
        found = t.conn.execute(sql.format(",".join("?" * len(names))), (t.rows, *names)).fetchone()[0]
        return int(found) != len(names)

    def problems(self) -> list[str]:
        """What is wrong with the tables, by cheap checks (no FTS5 'integrity-check'): [] when they look whole."""
        t = self.tables
        conn, fts = t.conn, t.fts
        names = {
            n
            for (n,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE name = ? OR name LIKE ?", (t.rows, f"{fts}%")
            )
        }
        tables = (fts, t.rows, t.text, t.view, *(f"{fts}_{s}" for s in SHADOWS))
        missing = [name for name in tables if name not in names]
        if missing:
            return [f"missing tables: {', '.join(missing)}"]
        out = []
        if conn.execute(f"SELECT count(*) FROM {fts}_config WHERE k = 'version'").fetchone()[0] != 1:
            out.append(f"{fts}_config has no version")
        if conn.execute(f"SELECT count(*) FROM {fts}_data WHERE id IN (1, 10)").fetchone()[0] != 2:
            out.append(f"{fts}_data lacks its structure records")
        rows = conn.execute(f"SELECT count(*) FROM {t.rows}").fetchone()[0]
        n = conn.execute(f"SELECT count(*) FROM {fts}_docsize").fetchone()[0]
        if n != rows:
            out.append(f"{fts}_docsize holds {n} rows, {t.rows} {rows}")
        # the text table holds every body: counting it reads them all, its first and last rows do not
        # (min and max in one SELECT scan the table: each in its own subquery is one b-tree seek)
        rows_span = f"SELECT (SELECT min(rowid) FROM {t.rows}), (SELECT max(rowid) FROM {t.rows})"
        text_span = f"SELECT (SELECT min(rowid) FROM {t.text}), (SELECT max(rowid) FROM {t.text})"
        if conn.execute(text_span).fetchone() != conn.execute(rows_span).fetchone():
            out.append(f"{t.text} does not span the rows of {t.rows}")
        if rows and conn.execute(f"SELECT 1 FROM {fts}_idx LIMIT 1").fetchone() is None:
            out.append(f"{fts}_idx is empty while the projection holds {rows} rows")
        return out

    def verify(self, desired: Mapping[str, str], held: Mapping[str, str]) -> list[str]:
        """``problems``, then FTS5's own integrity-check and the rows against ``desired`` and the rows held in
        memory (``held``: id -> sha256)."""
        out = self.problems()
        if out:
            return out
        t = self.tables
        conn, fts = t.conn, t.fts
        try:
            with t.state.transaction():
                conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            out.append(f"FTS5 integrity-check of {fts}: {exc}")
        rows = dict(conn.execute(f"SELECT id, sha256 FROM {t.rows}"))
        if rows != dict(desired):
            differing = len(set(rows.items()) ^ set(desired.items()))
            out.append(f"{t.rows} differs from the Markdown at {differing} records")
        if rows != held:
            out.append(f"the in-memory mirror of {t.rows} differs from the table")
        return out

    def write(
        self,
        gone: Sequence[tuple[int]],
        fresh: list[str],
        text_of: Callable[[str], tuple[str, str, str] | None],
        desired: Mapping[str, str],
    ) -> WrittenRows:
        """Delete the rows ``gone`` ((rowid,) each) and insert the ids ``fresh`` (their text from ``text_of``, None
        when a file changed again since the scan), in the caller's transaction."""
        t = self.tables
        conn = t.conn
        inserted: list[str] = []  # the ids inserted, the first at rowid ``first``, each next at the next rowid
        complete = True
        # FTS5 reads what it deletes from its content (the text table, through the view): text rows go after
        conn.executemany(f"DELETE FROM {t.fts} WHERE rowid = ?", gone)
        conn.executemany(f"DELETE FROM {t.text} WHERE rowid = ?", gone)
        conn.executemany(f"DELETE FROM {t.rows} WHERE rowid = ?", gone)
        # rowids are given rather than read back one by one, so that every row goes in one executemany
        first = (conn.execute(f"SELECT max(rowid) FROM {t.rows}").fetchone()[0] or 0) + 1
        emptied = first == 1 and conn.execute(f"SELECT 1 FROM {t.rows} LIMIT 1").fetchone() is None

        texts = TextWriter(conn, t.text)

        def rows() -> Iterator[tuple[Any, ...]]:
            nonlocal complete
            for rid in progress(fresh, total=len(fresh), desc="knowtk: indexing"):
                text = text_of(rid)
                if text is None:  # the file changed again since the scan: the next query indexes it
                    complete = False
                    continue
                rowid = first + len(inserted)
                inserted.append(rid)
                texts.add(rowid, text)
                yield (rowid, *text)

        conn.executemany(f"INSERT INTO {t.fts} (rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?)", rows())
        texts.flush()
        sizes = self.docsizes(first)
        # (rows made as they are written, here and for the rows held in memory: a cold build's million rows are
        # not held as tuples beside its records)
        conn.executemany(
            f"INSERT INTO {t.rows} (rowid, id, sha256, tokens) VALUES (?, ?, ?, ?)",
            ((rowid, rid, desired[rid], sizes[rowid]) for rowid, rid in enumerate(inserted, first)),
        )
        return WrittenRows(first, inserted, sizes, complete, emptied)

    def stamp_indexed(self, indexed_at: str) -> None:
        """Record when the projection was last written (in the caller's transaction)."""
        sql = "UPDATE keyword_state_v1 SET indexed_at = ? WHERE projection = ?"
        self.tables.conn.execute(sql, (indexed_at, self.tables.key))

    def docsizes(self, first: int) -> dict[int, int]:
        """Tokens per row from ``first`` on, as FTS5 counts them: the varints of its _docsize table, summed."""
        sql = f"SELECT id, sz FROM {self.tables.fts}_docsize WHERE id >= ?"
        return {rowid: sum(fts5_varints(blob)) for rowid, blob in self.tables.conn.execute(sql, (first,))}


def set_pending_bytes(conn: sqlite3.Connection, fts: str) -> None:
    """Set the table's ``hashsize`` (``PENDING_TERMS_BYTES``), kept in its _config table."""
    with suppress(sqlite3.OperationalError):  # an SQLite older than the option (3.40 has it): its default then
        conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('hashsize', ?)", (PENDING_TERMS_BYTES,))


class TextWriter:
    """Rows of a projection's text table (the body deflated), written in batches beside the FTS5 insert.

    A full batch is deflated on a thread of its own while the next one is tokenized by FTS5 (zlib and
    SQLite both release the GIL), and inserted when the batch after it is full: a cold build's
    compression of every body runs beside the index build on a second core, not after it.
    """

    BATCH = 256

    def __init__(self, conn: sqlite3.Connection, table: str) -> None:
        self.conn, self.table = conn, table
        self.pending: list[tuple[int, str, str, str]] = []
        self.worker: threading.Thread | None = None
        self.done: list[tuple[int, str, str, bytes, int]] = []

    def add(self, rowid: int, text: tuple[str, str, str]) -> None:
        self.pending.append((rowid, *text))
        if len(self.pending) >= self.BATCH:
            self._insert_done()
            batch, self.pending = self.pending, []
            self.worker = threading.Thread(target=self._deflate, args=(batch,), daemon=True)
            self.worker.start()

    def _deflate(self, batch: list[tuple[int, str, str, str]]) -> None:
        self.done = deflated(batch)

    def _insert_done(self) -> None:
        if self.worker is not None:
            self.worker.join()
            self.worker = None
            rows, self.done = self.done, []
            if len(rows) < self.BATCH:  # the thread failed (it raised, e.g. out of memory): inline, to fail here
                raise sqlite3.DatabaseError("the texts of a batch could not be deflated")
            self._insert(rows)

    def _insert(self, rows: list[tuple[int, str, str, bytes, int]]) -> None:
        sql = f"INSERT INTO {self.table} (rowid, title, aliases, body, size) VALUES (?, ?, ?, ?, ?)"
        self.conn.executemany(sql, rows)

    def flush(self) -> None:
        self._insert_done()
        if self.pending:
            self._insert(deflated(self.pending))
            self.pending = []


def deflated(batch: list[tuple[int, str, str, str]]) -> list[tuple[int, str, str, bytes, int]]:
    out = []
    for rowid, title, aliases, body in batch:
        data = body.encode("utf-8")
        out.append((rowid, title, aliases, deflate(data), len(data)))
    return out


def drop_fts(conn: sqlite3.Connection, fts: str) -> None:
    """Drop an FTS5 table even when a shadow table is missing or damaged (then DROP TABLE itself fails)."""
    try:
        conn.execute(f"DROP TABLE IF EXISTS {fts}")
        return
    except sqlite3.DatabaseError:
        pass
    for shadow in (*SHADOWS, "content"):  # ordinary tables: dropping them frees their pages (an earlier format's too)
        conn.execute(f"DROP TABLE IF EXISTS {fts}_{shadow}")
    # the virtual table itself owns no pages: remove its schema row and make SQLite read the schema again
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    try:
        conn.execute("DELETE FROM sqlite_master WHERE type = 'table' AND name = ?", (fts,))
        conn.execute(f"PRAGMA schema_version = {version + 1}")
    finally:
        conn.execute("PRAGMA writable_schema = RESET")
        conn.execute("PRAGMA writable_schema = OFF")
