"""The scanner's folder packs, ``scan_folders_v1``: ``scan_files_v1``'s rows (but the frontmatter) by folder.

Each folder's rows are kept as one marshal blob with a digest of its (name, size, mtime_ns)
entries: a new process walks by folder and keeps a folder whose walk gives the stored digest packed
(unpacked only when a path in it is needed), so an unchanged folder costs no per-file work past the
walk's own. ``scan_folders_token`` says which ``scan_token`` the packs were written at: a write to
scan_files_v1 that did not write the packs too (an older knowtk, a repair) leaves them aside until
they are written again. The ``Scanner`` (``knowtk.scan.cache``) decides when to read and write them.
"""

from __future__ import annotations

import hashlib
import marshal
import sqlite3
import zlib
from collections.abc import Iterator, Mapping
from itertools import repeat
from operator import itemgetter, sub
from typing import Any

from knowtk.scan.changes import ChangeSource, FolderWalk, ScanDelta, Stat, folder_of
from knowtk.scan.entry import FileEntry
from knowtk.scan.rows import ROWS_SQL, LazyEntries, entry_from_row, is_stat_row, read_token, stat_row
from knowtk.state import Contention, StateDB

__all__ = [
    "FOLDERS_SCHEMA",
    "FOLDERS_TOKEN_KEY",
    "FolderPacks",
    "KnownStats",
    "Pack",
    "digest_sorted",
    "folder_digest",
    "unpacked_rows",
]

FOLDERS_TOKEN_KEY = "scan_folders_token"  # knowtk_meta key: the scan_token scan_folders_v1 holds the rows of

# a folder's pack: digest of its {name: (size, mtime_ns)}, 1 when that digest is of the names sorted (else of
# the order the last walk listed them in), how many rows, the rows (scan_files_v1's, but the frontmatter:
# marshal), kept as loaded until a path in the folder is needed
Pack = tuple[bytes, int, int, bytes]

FOLDERS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS scan_folders_v1 (folder TEXT PRIMARY KEY, digest BLOB NOT NULL, "
    "sorted INTEGER NOT NULL, count INTEGER NOT NULL, crc INTEGER NOT NULL, rows BLOB NOT NULL)"
)


def folder_digest(names: dict[str, Stat]) -> bytes:
    """A folder's digest: marshal's version 2 writes the same bytes for the same names and stats in the same order
    (no references, no interning marks)."""
    return hashlib.blake2b(marshal.dumps(names, 2), digest_size=16).digest()


def unpacked_rows(folder: str, pack: Pack) -> list[tuple[Any, ...]] | None:
    """A pack's rows, or None when they are not rows of this folder (damaged)."""
    try:
        rows = marshal.loads(pack[3])
    except (ValueError, EOFError, TypeError):
        return None
    if type(rows) is not list or len(rows) != pack[2]:
        return None
    if not rows:
        return rows
    # each row a 6-tuple (path, size, mtime_ns, ...) of a path in this folder, checked column by column in C
    if set(map(type, rows)) != {tuple} or set(map(len, rows)) != {6}:
        return None
    paths, sizes, mtimes = list(zip(*rows, strict=True))[:3]
    if set(map(type, paths)) != {str} or not {*map(type, sizes), *map(type, mtimes)} <= {int}:
        return None
    # folder_of(path) == folder: the last '/' before a path's last character ends the folder's prefix
    lasts = map(str.rfind, paths, repeat("/"), repeat(0), map(sub, map(len, paths), repeat(1)))
    if set(lasts) != {len(folder) - 1} or set(map(itemgetter(slice(0, len(folder))), paths)) != {folder}:
        return None
    return rows


def digest_sorted(conn: sqlite3.Connection) -> None:
    """Give every pack the digest of its names sorted (in the caller's transaction): for a state copied to a folder
    whose walk lists the same files in another order (a past of the store, listed sorted by ``SettledWalk``), an
    unchanged folder then stays packed. A pack that is not rows of its folder is left as it is."""
    found = conn.execute("SELECT folder, digest, sorted, count, rows FROM scan_folders_v1 WHERE sorted = 0").fetchall()
    for folder, digest, in_order, count, blob in found:
        rows = unpacked_rows(folder, (digest, in_order, count, blob))
        if rows is not None:
            names = dict(sorted((row[0][len(folder) :], (row[1], row[2])) for row in rows))
            sql = "UPDATE scan_folders_v1 SET digest = ?, sorted = 1 WHERE folder = ?"
            conn.execute(sql, (folder_digest(names), folder))


class FolderPacks:
    """The ``Scanner``'s folder packs: which folders are still packed, comparing a walk with them, unpacking
    a folder when a path in it is needed, reading a single row of a packed folder, writing the packs.

    Mixed into ``knowtk.scan.cache.Scanner``, whose state it shares: the attributes below are the
    scanner's (set in its ``__init__``), declared here for what these methods read.
    """

    state: StateDB
    source: ChangeSource
    token: int | None
    loaded_token: int | None
    _loaded: bool
    _files: dict[str, FileEntry]
    _lazy: LazyEntries | None
    _stats: dict[str, Stat]
    _packed: dict[str, Pack]
    _peeked: dict[str, dict[str, FileEntry]]
    _members: dict[str, set[str]]
    _walked: dict[str, dict[str, Stat]]
    _packs_ok: bool
    _members_unpacked: bool
    _packs_tried: bool
    _unsaved: set[str]
    _unremoved: set[str]

    def forget(self, paths: list[str]) -> None:
        """Read these files again at the next scan (the ``Scanner``'s)."""
        raise NotImplementedError

    def _load_packs(self) -> dict[str, Pack] | None:
        """scan_folders_v1's packs, when they hold scan_files_v1's rows (else None: the rows are loaded instead)."""
        state = self.state
        try:
            with state.reading():
                token = read_token(state)
                if state.meta(FOLDERS_TOKEN_KEY) != str(token) or not state.table_exists("scan_files_v1"):
                    return None
                found = state.conn.execute("SELECT folder, digest, sorted, count, crc, rows FROM scan_folders_v1")
                packs: dict[str, Pack] = {}
                for folder, digest, in_order, count, crc, blob in found:
                    if not (isinstance(blob, bytes) and isinstance(folder, str) and type(count) is int) or (
                        zlib.crc32(blob) != crc
                    ):
                        return None  # damaged: the rows are loaded from scan_files_v1, the packs written again
                    packs[folder] = (digest, in_order, count, blob)
        except sqlite3.Error:
            return None
        self.loaded_token = self.token = token
        self._packed, self._lazy, self._packs_ok, self._loaded = packs, LazyEntries({}), True, True
        self._peeked = {}
        return packs

    def _compare(self, walked: FolderWalk) -> ScanDelta:
        """The walk against what the scanner knows: a packed folder by its digest, the others path by path."""
        folders, forced, stats, packed = walked.folders, walked.forced, self._stats, self._packed
        changed: dict[str, Stat] = {}
        self._walked = {}
        for folder, names in folders.items():
            pack = packed.get(folder)
            if pack is not None:
                if not forced and folder_digest(dict(sorted(names.items())) if pack[1] else names) == pack[0]:
                    continue  # unchanged: its rows stay packed
                self._unpack(folder)
            self._walked[folder] = names
            for name, st in names.items():
                path = folder + name
                if stats.get(path) != st or path in forced:
                    changed[path] = st
        for folder in [f for f in packed if f not in folders]:  # folders gone: their files too
            self._unpack(folder)
        removed = [p for p in stats if (f := folder_of(p)) not in folders or p[len(f) :] not in folders[f]]
        return ScanDelta(changed, removed)

    def _unpack_of(self, path: str) -> None:
        folder = folder_of(path)
        if folder in self._packed:
            self._unpack(folder)

    def _unpack_all(self) -> bool:
        """Unpack every folder still packed; True if this scanner's rows came from packs (not in the table's order)."""
        for folder in list(self._packed):
            self._unpack(folder)
        return self._members_unpacked

    def _unpack(self, folder: str) -> None:
        """Make a packed folder's rows known path by path (as ``_load_cache`` makes every row)."""
        pack = self._packed.pop(folder)
        self._peeked.pop(folder, None)  # (its entries are made from its rows now)
        rows = unpacked_rows(folder, pack)
        damaged = rows is None
        if rows is None:  # damaged, for all its CRC: the table's rows, and every file read again at the next scan
            rows = self._table_rows(folder)
        lazy = self._lazy
        if lazy is None:  # (never while folders are packed) the entries made so far are kept as set anew
            lazy = self._lazy = LazyEntries({})
            lazy.made, lazy.added, self._files = self._files, len(self._files), {}
        paths = list(map(itemgetter(0), rows))  # (in C: a folder of ~900 rows, unpacked for one of its records)
        self._stats.update(zip(paths, map(itemgetter(1, 2), rows), strict=True))
        lazy.rows.update(zip(paths, rows, strict=True))
        self._members[folder] = set(paths)
        self._members_unpacked = True
        if damaged:
            self.forget(paths)

    def _table_rows(self, folder: str) -> list[tuple[Any, ...]]:
        try:
            with self.state.reading() as conn:
                found = conn.execute(
                    f"{ROWS_SQL} WHERE path >= ? AND path < ?", (folder, folder + "\U0010ffff")
                ).fetchall()
        except sqlite3.Error:
            return []  # every file of the folder is read as a new one
        return [row for row in found if folder_of(row[0]) == folder]

    def _packs_due(self) -> bool:
        """scan_folders_v1 is to be written in full (missing, damaged, or behind the rows) and can be."""
        return not self._packs_ok and not self._packs_tried and self.token is not None and self._walks

    @property
    def _walks(self) -> bool:
        """The change source walks by folder (else the packs are of no use: not written)."""
        return hasattr(self.source, "folder_walk")

    def _save_packs(self) -> None:
        """Write scan_folders_v1 in full, the rows unchanged (scan_token stays: a stored image still matches)."""
        self._packs_tried = True  # once: a failure here costs the next process the rows' load, as before
        try:
            with self.state.transaction() as conn:
                token = read_token(self.state)
                members = self._write_packs(conn, token, token) if token == self.token else None
        except (sqlite3.Error, Contention):
            return
        if members is not None:
            self._packs_ok = True
            self._members.update(members)
            self._walked = {}

    def _write_packs(self, conn: sqlite3.Connection, token: int, written: int) -> dict[str, set[str]]:
        """Write the packs of the folders this save changed (all, when the packs were not the table's at
        ``token``), as the table's at ``written``; the paths of each folder written. In the transaction
        that wrote the rows."""
        conn.execute(FOLDERS_SCHEMA)
        groups: dict[str, list[tuple[Any, ...]]] = {}
        if self._packs_ok and self.state.meta(FOLDERS_TOKEN_KEY) == str(token):
            saved: dict[str, list[str]] = {}
            for path in self._unsaved:
                saved.setdefault(folder_of(path), []).append(path)
            for folder in saved.keys() | {folder_of(p) for p in self._unremoved}:
                paths = self._members.get(folder, set()) - self._unremoved
                paths.update(saved.get(folder, ()))
                groups[folder] = [row for p in sorted(paths) if (row := self._row(p)) is not None]
        else:
            conn.execute("DELETE FROM scan_folders_v1")
            self._unpack_all()
            for row in sorted(self._all_rows()):  # (unpacked in the table's order)
                groups.setdefault(folder_of(row[0]), []).append(row)
        conn.executemany(
            "DELETE FROM scan_folders_v1 WHERE folder = ?", [(f,) for f, rows in groups.items() if not rows]
        )
        conn.executemany(  # (each pack made as it is written: a cold build's are not all held at once)
            "INSERT OR REPLACE INTO scan_folders_v1 (folder, digest, sorted, count, crc, rows) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (self._pack_row(folder, rows) for folder, rows in groups.items() if rows),
        )
        self.state.set_meta(FOLDERS_TOKEN_KEY, str(written))
        return {folder: {row[0] for row in rows} for folder, rows in groups.items()}

    def _pack_row(self, folder: str, rows: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        names = {row[0][len(folder) :]: (row[1], row[2]) for row in rows}
        walked = self._walked.get(folder)
        if walked is not None and walked == names:  # in the order a walk lists them: no sort to compare
            data, in_order = walked, 0
        else:
            data, in_order = dict(sorted(names.items())), 1
        blob = marshal.dumps(rows)
        return (folder, folder_digest(data), in_order, len(rows), zlib.crc32(blob), blob)

    def _row(self, path: str) -> tuple[Any, ...] | None:
        """scan_files_v1's row of a path (but the frontmatter), from the entry or the row it was loaded from."""
        lazy = self._lazy
        entry: FileEntry | None
        if lazy is None:
            entry = self._files.get(path)
        else:
            entry = lazy.made.get(path)
            if entry is None:
                return lazy.rows.get(path)
        return stat_row(path, entry) if entry is not None else None

    def _all_rows(self) -> Iterator[tuple[Any, ...]]:
        lazy = self._lazy
        if lazy is None:
            for path, entry in self._files.items():
                yield stat_row(path, entry)
            return
        made = lazy.made
        for path, row in lazy.rows.items():
            had = made.get(path)
            yield row if had is None else stat_row(path, had)
        for path, had in made.items():
            if path not in lazy.rows:
                yield stat_row(path, had)

    def _peeked_entry(self, path: str) -> FileEntry | None:
        """The entry of a path of a packed folder made from its scan_files_v1 row, the folder left packed; None
        when the folder is not packed or the table may hold other rows than its pack (another process wrote
        it since this scanner loaded it: its change counter moved), or the row is not one (then unpacked).

        The pack holds the table's rows as they were at ``token`` and a change to any of its paths unpacks
        it first, so while the counter has not moved the row is the pack's."""
        folder = folder_of(path)
        if folder not in self._packed:
            return None
        peeked = self._peeked.get(folder)
        found = peeked.get(path) if peeked is not None else None
        if found is not None:
            return found
        try:
            if self.token is None or read_token(self.state) != self.token:
                return None
            row = self.state.conn.execute(f"{ROWS_SQL} WHERE path = ?", (path,)).fetchone()
        except sqlite3.Error:
            return None
        if row is None or not is_stat_row(row):
            return None
        entry = self._peeked.setdefault(folder, {})[path] = entry_from_row(tuple(row))
        return entry


class KnownStats(Mapping[str, Stat]):
    """A scanner's path -> stat while folders are packed: a folder is unpacked when a path in it is looked up."""

    def __init__(self, scanner: FolderPacks) -> None:
        self._scanner = scanner

    def __getitem__(self, path: str) -> Stat:
        scanner = self._scanner
        if scanner._packed:
            scanner._unpack_of(path)
        return scanner._stats[path]

    def __iter__(self) -> Iterator[str]:
        self._scanner._unpack_all()
        return iter(self._scanner._stats)

    def __len__(self) -> int:
        return len(self._scanner._stats) + sum(pack[2] for pack in self._scanner._packed.values())
