"""A past store's state seeded from the present store's, so that a new instant builds what differs only.

A cold build of the store at an instant reads, parses and indexes every file. Most of them are the files the
present store has read already: ``seed_state`` copies the present ``state.sqlite`` (SQLite's backup API: one
consistent copy while other processes read and write it) into the past store's state folder, and makes it a
state of its own:

- its safeguards are emptied: the past store's are only those its own files establish (its first snapshot
  records the withdrawals and supersessions its records say; ``Engine(seeded=True)`` reads again every record
  that a safeguard of the present may have decided);
- the write layer's tables (receipts, intents, kept file versions) are dropped: a view of the past writes nothing;
- it gets an identity of its own, bound to the past store's folder, and a journal of no safeguards.

What it keeps are projections, each rebuilt or patched by the engine as when files changed while no process ran:
the scan cache, the snapshot image, the keyword rows. The scan cache's ``(size, mtime_ns, sha256)`` by path is
returned, so that the past files whose bytes the cache has read can be given that stat (``os.utime``): the
engine's walk then reads only the files that differ. A file the cache knows with other bytes gets a stat the
cache does not hold, so it is read. Anything that fails leaves no seed: the past store is built cold.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from urllib.request import pathname2url

from knowtk.scan.packs import digest_sorted
from knowtk.scan.rows import TOKEN_KEY, hashed_stats
from knowtk.state import JOURNAL_FILE, SAFEGUARD_TABLES, STATE_FILE, WRITE_TABLES, SafeguardJournal

__all__ = ["Known", "hashed_by", "seed_state"]

Known = dict[str, tuple[int, int, str]]  # path -> (size, mtime_ns, sha256) the seeded scan cache holds
_COPY_TIMEOUT_S = 30.0  # a writer holding the present state longer: no seed, the past is built cold


def seed_state(present_state: str, folder: str, store: str) -> Known:
    """Copy ``present_state`` (a state.sqlite) into ``folder`` as the state of the past store at ``store`` (its
    folder); the scan cache's stats by path. ``{}`` when no seed could be made (``folder`` then holds none) or its
    scan cache holds nothing (a present store never queried): the caller then builds the past cold."""
    if not os.path.isfile(present_state):
        return {}
    target = os.path.join(folder, STATE_FILE)
    try:
        os.makedirs(folder, exist_ok=True)
        _copy(present_state, target)
        dst = sqlite3.connect(target, isolation_level=None)
        try:
            store_id = _make_own(dst, store)
            known = hashed_stats(dst)
        finally:
            dst.close()
        SafeguardJournal(os.path.join(folder, JOURNAL_FILE)).rewrite({"store_id": store_id, "store": store}, {}, {})
    except (sqlite3.Error, OSError):  # a damaged or busy present state: the past is built cold
        for name in (STATE_FILE, f"{STATE_FILE}-wal", f"{STATE_FILE}-shm", JOURNAL_FILE):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(folder, name))
        return {}
    return known


def _copy(source: str, target: str) -> None:
    """``source`` copied whole into ``target`` as one read transaction sees it (other writers go on meanwhile)."""
    src = sqlite3.connect(f"file:{pathname2url(os.path.abspath(source))}?mode=ro", uri=True, timeout=_COPY_TIMEOUT_S)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


PAST_CRISIS_MERGE = 1000  # segments of one level past which FTS5 merges them at once (default 16)
# the keyword index's FTS5 tables (knowtk.index.fts_tables)
_KEYWORD_TABLES = (
    "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE % USING fts5(%'"
)


def _make_own(conn: sqlite3.Connection, store: str) -> str:
    """The copy made the past store's state: no safeguard, no write-layer table, its own id, bound to ``store``."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table in SAFEGUARD_TABLES:
            conn.execute(f"DELETE FROM {table}")
        for table in WRITE_TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        store_id = str(uuid.uuid4())
        meta = [("safeguards", "0"), ("store_id", store_id), ("store", store)]
        conn.executemany("INSERT OR REPLACE INTO knowtk_meta (key, value) VALUES (?, ?)", meta)
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'scan_folders_v1'").fetchone():
            digest_sorted(conn)  # (the past's walk lists each folder sorted, not in the present's order)
        for (table,) in conn.execute(_KEYWORD_TABLES).fetchall():
            # the past writes the rows of the files that differ once, as one small segment of its own: the merge
            # FTS5 would start with the present's large segments cost a first question at 100k 4 of its 10 s
            for setting, value in (("automerge", 0), ("crisismerge", PAST_CRISIS_MERGE)):
                conn.execute(f'INSERT INTO "{table}" ("{table}", rank) VALUES (?, ?)', (setting, value))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return store_id


def hashed_by(present_state: str) -> tuple[Known, int | None]:
    """The scan cache's stats by path in ``present_state`` (a state.sqlite), read without writing it, and its change
    counter (``knowtk.scan.rows.TOKEN_KEY``) as one read: the files a past leaves unwritten (``knowtk.write.past``);
    ``({}, None)`` when it cannot be read."""
    if not os.path.isfile(present_state):
        return {}, None
    try:
        url = f"file:{pathname2url(os.path.abspath(present_state))}?mode=ro"
        conn = sqlite3.connect(url, uri=True, isolation_level=None)
    except sqlite3.Error:
        return {}, None
    try:
        conn.execute("BEGIN")
        found = conn.execute("SELECT value FROM knowtk_meta WHERE key = ?", (TOKEN_KEY,)).fetchone()
        token = int(found[0]) if found is not None and str(found[0]).isdigit() else None
        return hashed_stats(conn), token
    except sqlite3.Error:
        return {}, None
    finally:
        conn.close()
