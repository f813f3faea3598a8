"""``.knowtk/state.sqlite``: what knowtk keeps beside the Markdown.

Two kinds of tables live here, and the difference matters:

- *projections* (rebuildable from the Markdown): the scan cache
  ``scan_files_v1`` (and its rows packed by folder, ``scan_folders_v1``), the keyword tables ``keyword_fts_v1_*``,
  ``keyword_rows_v1_*``, ``keyword_history_fts_v1_*``,
  ``keyword_history_rows_v1_*``, ``keyword_state_v1``, the temporal tables and
  the embedding cache (the keyword tables' texts are kept deflated: ``deflate``,
  and every connection has the SQL function ``knowtk_inflate`` that reads them).
  Missing, damaged or inconsistent tables are rebuilt on the next query.
- *state that Markdown cannot give back*: store identity (``knowtk_meta``) and
  the lifecycle safeguards ``keyword_withdrawals_v1`` and
  ``lifecycle_guards_v1``. These are never dropped or rebuilt. Every safeguard
  is also appended to ``safeguards.jsonl`` beside state.sqlite (the *journal*,
  written before the database commits), so a lost table or a lost or truncated
  state.sqlite is restored from it; a loss neither can make good is refused with
  a ``StateError`` until accepted explicitly (docs/reliability.md).

A state is bound to one store (``knowtk_meta.store``: ``"."`` for the usual
``<store>/.knowtk``, else the store's absolute path): another store pointed at
it is refused.

Concurrency: every process has its own connection; SQLite's locks order them
(WAL, a busy timeout, ``BEGIN IMMEDIATE`` for every write, so one writer at a
time). A query runs inside one read transaction (``Engine.run``): it sees one
state from start to end, and a write it needs upgrades that transaction. When
another process committed in between, the upgrade fails with
``SQLITE_BUSY_SNAPSHOT``; that surfaces as ``Contention`` and the query is run
again, never reported.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import Any

from knowtk.errors import SafeguardLoss, StateError, StoreChanged
from knowtk.model.datevalues import format_utc

__all__ = [
    "JOURNAL_FILE",
    "SCHEMA_VERSION",
    "STATE_DIR",
    "Contention",
    "JournalEntries",
    "SafeguardJournal",
    "StateDB",
    "accept_hint",
    "deflate",
    "inflate",
    "inflate_bytes",
    "inflate_opening",
    "is_busy",
]

STATE_DIR = ".knowtk"
STATE_FILE = "state.sqlite"
JOURNAL_FILE = "safeguards.jsonl"
SCHEMA_VERSION = 1
FORMAT = "knowtk-state"
JOURNAL_FORMAT = "knowtk-safeguards"
BUSY_TIMEOUT_MS = 120_000  # a cold build in another process can hold the write lock this long
WAL_LIMIT_BYTES = 64 * 2**20  # the WAL kept after a checkpoint
# a WAL grown past this by a call (a cold build, a snapshot image, many files re-indexed) is checkpointed
# and truncated when the call ends: the state at rest holds no second copy of what the build wrote
WAL_TRIM_BYTES = 16 * 2**20

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

SAFEGUARD_TABLES = ("keyword_withdrawals_v1", "lifecycle_guards_v1")
# the write layer's state (knowtk.write.journal): receipts, unfinished intents, kept file versions; like the
# safeguards, never rebuilt from the Markdown, so never dropped with the projections
WRITE_TABLES = ("receipts_v1", "receipt_records_v1", "write_intents_v1", "file_versions_v1")


# -- the texts kept in the state: deflated (zlib's fastest level: a cold build compresses every body) ------
def deflate(data: bytes) -> bytes:
    return zlib.compress(data, 1)


def inflate_bytes(blob: bytes) -> bytes:
    """What ``deflate`` kept; a blob that does not inflate raises ``sqlite3.DatabaseError`` (damage)."""
    try:
        return zlib.decompress(blob)
    except (zlib.error, TypeError) as exc:
        raise sqlite3.DatabaseError(f"a kept text does not inflate ({exc})") from exc


def inflate(blob: bytes) -> str:
    """A text ``deflate`` kept (UTF-8); a blob that does not inflate raises ``sqlite3.DatabaseError`` (damage)."""
    try:
        return inflate_bytes(blob).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise sqlite3.DatabaseError(f"a kept text does not inflate ({exc})") from exc


def inflate_opening(blob: bytes, chars: int) -> str:
    """The first ``chars`` characters of a text ``deflate`` kept, inflating no more than they need."""
    try:
        head = zlib.decompressobj().decompress(blob, 4 * chars)  # a character is at most 4 bytes of UTF-8
    except (zlib.error, TypeError) as exc:
        raise sqlite3.DatabaseError(f"a kept text does not inflate ({exc})") from exc
    return head.decode("utf-8", "ignore")[:chars]  # (only a character cut at the end is ignored)


def _sql_inflate(blob: bytes | None) -> str | None:
    """``knowtk_inflate(blob)`` in SQL: an FTS5 table reads its external content through it."""
    return None if blob is None else inflate(blob)


def now_utc() -> datetime:
    return datetime.now(UTC)


def accept_hint(root: str, state_dir: str | None) -> str:
    """How a user accepts a loss knowtk cannot make good (named in every such StateError)."""
    where = f", state_dir={state_dir!r}" if state_dir else ""
    return (
        f"to accept the loss, call store.accept_safeguard_loss() (or open with "
        f"knowtk.open_store({root!r}{where}, accept_safeguard_loss=True), or run "
        "`knowtk state accept-loss`)"
    )


class Contention(Exception):
    """Another process changed the state under this query; the query is run again (never shown to a user)."""


class RecordChanged(Contention, StoreChanged):
    """A record's file changed since the record was read, and what the record reads back of it is gone: in a
    call, the call runs again on the file as it is now (a Contention); a record held outside a call raises it
    as a StoreChanged (take the record again from a new snapshot)."""


def is_busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED (any extended code): another connection holds what this one needs."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc)


class StateDB:
    """One connection to a store's state.sqlite, created on first use, bound to one store."""

    def __init__(
        self,
        path: str,
        *,
        store: str | None = None,
        hint: str = "",
        accept_loss: bool = False,
        rebind: bool = False,
    ) -> None:
        self.path = path
        self.hint = hint or accept_hint("<store>", None)  # how to accept a loss, in every refusal
        self.folder = os.path.dirname(path)
        self.journal = SafeguardJournal(os.path.join(self.folder, JOURNAL_FILE))
        self.writes = 0  # write transactions begun (a rollback of the query's transaction undoes them)
        self.created = False  # the database was empty when opened (new, truncated or deleted)
        self.moved_aside: str | None = None  # where an unreadable state.sqlite was put
        os.makedirs(self.folder, exist_ok=True)
        try:
            tables = self._connect()
        except SafeguardLoss:
            if not (self.journal.exists() or accept_loss):
                raise
            # the journal holds the safeguards (or the user accepted their loss): keep the
            # unreadable file for inspection and start a new database beside it
            self.moved_aside = self._move_aside()
            tables = self._connect()
        self._check_identity(tables)
        try:
            self._create(store, rebind)
        except Contention as exc:
            self.conn.close()
            raise StateError(path, f"another process held the state's write lock too long ({exc}); try again") from exc
        self.store_id: str = self.meta("store_id") or ""
        self.store = store
        self.rebind = rebind
        self.writes_at_begin = -1  # ``writes`` when the query's transaction began (``unwritten``)
        self._side: sqlite3.Connection | None = None  # ``side_reader``
        self.side_lock = threading.Lock()  # held by the one thread using it

    def _create(self, store: str | None, rebind: bool) -> None:
        path = self.path
        self._enable_wal()
        self.conn.execute("PRAGMA synchronous = NORMAL")
        with self.transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            meta = dict(self.conn.execute("SELECT key, value FROM knowtk_meta"))
            if not meta:
                self.created = True
                created = format_utc(now_utc())
                # a lost state.sqlite: the journal knows its identity and its store (one transaction,
                # so a process opening the state meanwhile never sees another identity)
                header = self.journal.header if self.journal.read() else None
                store_id = str(header["store_id"]) if header and header.get("store_id") else _new_id()
                self.conn.executemany(
                    "INSERT INTO knowtk_meta (key, value) VALUES (?, ?)",
                    [
                        ("format", FORMAT),
                        ("schema_version", str(SCHEMA_VERSION)),
                        ("store_id", store_id),
                        ("created_at", created),
                    ],
                )
                if header is not None:
                    meta = {"store": header.get("store")}
            if store is not None:
                bound = meta.get("store")
                if bound is None or rebind:
                    self.conn.execute("INSERT OR REPLACE INTO knowtk_meta (key, value) VALUES ('store', ?)", (store,))
                elif bound != store:
                    raise StateError(
                        path,
                        f"this state belongs to the store {bound!r}, not {store!r}; give each store its own "
                        "state_dir (if that store was moved here, open with rebind_state=True "
                        "or run `knowtk state rebind`)",
                    )

    def _enable_wal(self) -> None:
        """Put the database in WAL mode. Two processes opening a new state at once both switch it, and
        SQLite refuses the second switch at once ("database is locked") without waiting: wait and retry."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if time.monotonic() > deadline:
                    raise Contention(str(exc)) from exc
                time.sleep(random.uniform(0.005, 0.05))

    def _connect(self) -> set[str]:
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.conn.create_function("knowtk_inflate", 1, _sql_inflate, deterministic=True)
            # the keyword tables' views call it: allowed even where SQLite was built to trust no schema function
            self.conn.execute("PRAGMA trusted_schema = ON")
            # after a checkpoint the WAL is cut back to this size (else it stays as large as the largest
            # write ever made: a cold build or a snapshot image, hundreds of MB at 100k records)
            self.conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")
            return {row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):  # transient: never taken for damage
                raise StateError(self.path, f"the state is busy ({exc}); try again") from exc
            raise SafeguardLoss(
                self.path,
                f"not a readable SQLite database ({exc}), and there is no safeguard journal "
                f"({JOURNAL_FILE}) beside it to restore withdrawals and supersession guards from; {self.hint}",
            ) from exc

    def _move_aside(self) -> str:
        with suppress(AttributeError, sqlite3.Error):
            self.conn.close()
        stamp = now_utc().strftime("%Y%m%dT%H%M%S%fZ")
        aside = f"{self.path}.damaged-{stamp}"
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.replace(self.path + suffix, aside + suffix)
        return aside

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

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO knowtk_meta (key, value) VALUES (?, ?)", (key, value))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write: ``BEGIN IMMEDIATE`` (one writer at a time), or a savepoint inside the query's transaction.

        A write that another process's commit makes impossible raises ``Contention``.
        """
        conn = self.conn
        self.writes += 1
        if conn.in_transaction:
            name = f"knowtk_{id(conn)}_{os.getpid()}"
            conn.execute(f"SAVEPOINT {name}")
            try:
                yield conn
            except BaseException as exc:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
                if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
                    raise Contention(str(exc)) from exc
                raise
            conn.execute(f"RELEASE {name}")
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise Contention(str(exc)) from exc
            raise
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent read (one snapshot of the database), or the query's own transaction when inside one."""
        conn = self.conn
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        self.writes_at_begin = self.writes
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # starts the read snapshot
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def begin_query(self, *, immediate: bool) -> None:
        """Open the transaction a whole query runs in (see the module docstring)."""
        try:
            self.conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            self.writes_at_begin = self.writes
            self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if is_busy(exc):
                raise Contention(str(exc)) from exc
            raise

    def end_query(self, *, commit: bool) -> None:
        conn = self.conn
        if not conn.in_transaction:
            return
        if commit:
            try:
                conn.execute("COMMIT")
                return
            except sqlite3.OperationalError as exc:
                conn.execute("ROLLBACK")
                if is_busy(exc):
                    raise Contention(str(exc)) from exc
                raise
        conn.execute("ROLLBACK")

    def trim_wal(self) -> bool:
        """Checkpoint the WAL and truncate it to nothing when it grew past ``WAL_TRIM_BYTES``; never waits.

        Outside a transaction only. A reader of another process still using the WAL makes the
        checkpoint busy: it is then left as it is (a later call, or the last connection's close, trims it).
        True when the WAL was truncated.
        """
        if self.conn.in_transaction:
            return False
        try:
            if os.stat(self.path + "-wal").st_size <= WAL_TRIM_BYTES:
                return False
        except OSError:
            return False
        self.conn.execute("PRAGMA busy_timeout = 0")
        try:
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.OperationalError:
            busy = 1
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return not busy

    def data_version(self) -> int:
        """Changes when another connection commits: in-memory mirrors must then be reloaded."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def drop_projections(self) -> None:
        """Drop every table but the safeguards and the write layer's (the others are rebuilt from the Markdown).

        Used when the store is read with other profiles than the state's projections were built with: the
        same bytes then make other records, and a projection keyed by a file's hash would not see it.
        """
        keep = {"knowtk_meta", *SAFEGUARD_TABLES, *WRITE_TABLES}
        with self.transaction() as conn:
            rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
            virtual = [
                name for name, sql in rows if name not in keep and (sql or "").upper().startswith("CREATE VIRTUAL")
            ]
            for name in virtual:  # an FTS5 table drops its shadow tables with it
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
                conn.execute(f'DROP VIEW IF EXISTS "{name}"')
            for name, _ in rows:
                if name not in keep and not name.startswith("sqlite_"):
                    conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            conn.execute("DELETE FROM knowtk_meta WHERE key LIKE '%:image'")
            # the scan cache's change counter moves on, so that no process takes the new table for the one it loaded
            conn.execute("UPDATE knowtk_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'scan_token'")

    def table_exists(self, name: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return row is not None

    def unwritten(self) -> bool:
        """Whether the connection is in a query's transaction that has begun no write yet (``transaction``: every
        write of the state goes through it; the TEMP tables a query tokenizes its words in are not the state's):
        what it reads is then what the database held when it began, which another connection can be checked
        to read too."""
        return self.conn.in_transaction and self.writes == self.writes_at_begin

    def side_reader(self) -> sqlite3.Connection:
        """A second connection, for reads a query runs beside its own (``knowtk.index.parallel_read.ParallelRead``);
        opened on first use, used under ``side_lock``, never written through."""
        if self._side is None:
            side = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            side.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            side.create_function("knowtk_inflate", 1, _sql_inflate, deterministic=True)
            side.execute("PRAGMA trusted_schema = ON")
            self._side = side
        return self._side

    def close(self) -> None:
        with self.side_lock:
            if self._side is not None:
                self._side.close()
                self._side = None
        self.conn.close()


# -- the safeguard journal ------------------------------------------------------------------------

# id -> (revision, superseded_by (None for withdrawals), path, seen_at)
JournalEntries = dict[str, tuple[int, str | None, str, str]]


class SafeguardJournal:
    """``safeguards.jsonl``: a header line, then one JSON line per safeguard written; append-only, fsynced.

    Lines: ``{"format": "knowtk-safeguards", "version": 1, "store_id": ..., "store": ...}`` first, then
    ``{"w": id, "rev": n, "path": p, "seen": t}`` (a withdrawal) or
    ``{"g": id, "rev": n, "by": id|null, "path": p, "seen": t}`` (a supersession guard). A guard
    seen again at a higher revision is appended again; the highest revision wins on reading.
    ``{"lift": id, "what": "w"|"g", "receipt": id, "at": t}`` lifts one (only ``reinstate`` writes it,
    with its receipt): the entries before it no longer bind.
    Read incrementally: only the lines appended since the last read are parsed.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._reset()

    def _reset(self) -> None:
        self.header: dict[str, Any] | None = None
        self.withdrawn: JournalEntries = {}
        self.guards: JournalEntries = {}
        self.problem: str | None = None  # why the journal cannot be trusted (a damaged line)
        self._offset = 0
        self._ident: tuple[int, int] | None = None  # (device, inode) read so far
        self._lines = 0

    def exists(self) -> bool:
        try:
            return os.path.getsize(self.path) > 0
        except OSError:
            return False

    def read(self) -> bool:
        """Bring the in-memory entries up to date with the file; False when there is no journal."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._reset()
            return False
        ident = (st.st_dev, st.st_ino)
        if ident != self._ident or st.st_size < self._offset:
            self._reset()
            self._ident = ident
        if st.st_size == self._offset:
            return self.header is not None or st.st_size > 0
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a torn last line (a crash mid-append) is not read; its write never committed
        for raw in data[:end].splitlines():
            self._lines += 1
            self._take(raw)
        self._offset += end
        return True

    def _take(self, raw: bytes) -> None:
        try:
            try:  # text, so that json does not detect the encoding of each line (a tenth of a journal's read)
                text: str | bytes = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw  # (json reads another encoding, or says what is wrong)
            item = json.loads(text)
            if not isinstance(item, dict):
                raise ValueError("not an object")
            if self._lines == 1:
                if item.get("format") != JOURNAL_FORMAT:
                    raise ValueError("no knowtk-safeguards header")
                self.header = item
            elif "w" in item:
                rid = str(item["w"])
                if rid not in self.withdrawn:
                    self.withdrawn[rid] = (int(item["rev"]), None, str(item["path"]), str(item["seen"]))
            elif "g" in item:
                rid = str(item["g"])
                known = self.guards.get(rid)
                if known is None or int(item["rev"]) > known[0]:
                    by = item.get("by")
                    self.guards[rid] = (
                        int(item["rev"]),
                        None if by is None else str(by),
                        str(item["path"]),
                        str(item["seen"]),
                    )
            elif "lift" in item:  # a safeguard lifted by a journalled reinstate (knowtk.write)
                rid = str(item["lift"])
                if item.get("what") == "w":
                    self.withdrawn.pop(rid, None)
                elif item.get("what") == "g":
                    self.guards.pop(rid, None)
                else:
                    raise ValueError("a lift of neither a withdrawal nor a guard")
            else:
                raise ValueError("neither a withdrawal nor a guard")
        except (ValueError, KeyError, TypeError) as exc:
            if self.problem is None:
                self.problem = f"line {self._lines} of {self.path} is damaged ({exc})"

    def append(self, withdrawn: JournalEntries, guards: JournalEntries) -> None:
        """Append entries (one write, fsynced) before the database commits them."""
        lines = [
            json.dumps({"w": rid, "rev": rev, "path": path, "seen": seen}, ensure_ascii=False)
            for rid, (rev, _, path, seen) in withdrawn.items()
        ]
        lines += [
            json.dumps({"g": rid, "rev": rev, "by": by, "path": path, "seen": seen}, ensure_ascii=False)
            for rid, (rev, by, path, seen) in guards.items()
        ]
        if not lines:
            return
        self._append(lines)

    def _append(self, lines: list[str]) -> None:
        """Append ``lines`` to the journal and fsync it: durable before the database changes."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ("\n".join(lines) + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def append_lifts(self, lifts: list[tuple[str, str, str, str]]) -> None:
        """Append (id, "w"|"g", receipt, at) lifts, fsynced, before the database deletes the rows."""
        if not lifts:
            return
        lines = [json.dumps({"lift": rid, "what": what, "receipt": rec, "at": at}) for rid, what, rec, at in lifts]
        self._append(lines)

    def rewrite(self, header: dict[str, Any], withdrawn: JournalEntries, guards: JournalEntries) -> None:
        """Write the whole journal anew (atomically: a temporary file renamed over it)."""
        tmp = f"{self.path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps({"format": JOURNAL_FORMAT, "version": 1, **header}) + "\n")
        self.path, real = tmp, self.path
        try:
            self.append(withdrawn, guards)
        finally:
            self.path = real
        os.replace(tmp, self.path)
        self._reset()


def _new_id() -> str:
    """A random store id (uuid imported here: most processes open a state that has one)."""
    import uuid

    return str(uuid.uuid4())
