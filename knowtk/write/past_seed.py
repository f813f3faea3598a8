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

from knowtk.scan.rows import hashed_stats
from knowtk.state import JOURNAL_FILE, SAFEGUARD_TABLES, STATE_FILE, WRITE_TABLES, SafeguardJournal

__all__ = ["Known", "seed_state"]

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
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return store_id
