"""The scanner: every record file's parsed state, kept in step with the folder and cached in ``scan_files_v1``.

Every query scans, so this is the hot path: the change source says what changed, and only those
files are read (``load_file``; in a process pool when there are many). Parsed frontmatter is
cached in ``scan_files_v1`` (a projection: deleting it costs one full parse, never a record), so a
new process does not parse YAML again for files it has seen; it loads each file's frontmatter
only when a query needs that record. No process holds the frontmatter mappings past that: a
parsed one is kept as its row's JSON text until the row is written, and a record reads it back
from the row when asked (``frontmatter_of``; the records' other fields are what queries read).

``scan_folders_v1`` holds the same rows (not the frontmatter) packed by folder, each folder with a
digest of its (name, size, mtime_ns) entries: a new process walks by folder (``FolderWalk``) and
keeps a folder whose walk gives the stored digest packed (unpacked only when a path in it is
needed), so an unchanged folder costs no per-file work past the walk's own. ``scan_folders_token``
says which ``scan_token`` the packs were written at: a write to scan_files_v1 that did not write
the packs too (an older knowtk, a repair) leaves them aside until they are written again.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sqlite3
import sys
import threading
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping
from functools import partial
from itertools import repeat
from operator import itemgetter, sub
from typing import Any

from knowtk.model.profile import ProfileMap
from knowtk.model.records import FileProblem, Record, body_of, read_regular
from knowtk.scan.changes import ChangeSource, FolderWalk, ScanDelta, Stat, StatWalk, flatten, folder_of
from knowtk.scan.entry import DEFAULT_MAX_FILE_BYTES, FileEntry, Loaded, load_file
from knowtk.scan.pool import PARALLEL_MIN_FILES, collector_paused, give_back_memory, pool_map
from knowtk.scan.progress import progress
from knowtk.state import Contention, RecordChanged, StateDB

__all__ = ["Scanner"]

# entries whose frontmatter a scan let go past which the freed memory is given back to the system
BULK_RELEASE = 50_000


class Scanner:
    """Keeps the parsed state of every record file in step with the folder."""

    def __init__(
        self,
        root: str,
        state: StateDB,
        *,
        source: ChangeSource | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        lock: threading.RLock | None = None,
        profiles: ProfileMap | None = None,
    ) -> None:
        self.root = root
        self.profiles = profiles or ProfileMap()  # which profile reads which file (knowtk.model.profile)
        # the engine's lock: entries are filled from state.sqlite, also when a record of a snapshot
        # someone holds is read outside a call (the connection's transactions are one per engine)
        self.lock = lock if lock is not None else threading.RLock()
        self.state = state
        self.source: ChangeSource = source or StatWalk(root)
        self.max_file_bytes = max_file_bytes
        self._files: dict[str, FileEntry] = {}
        self._lazy: _Lazy | None = None  # the cache's rows, each made an entry when first used (a new process)
        self._stats: dict[str, Stat] = {}  # path -> stat of every path known, but those of packed folders
        # scan_folders_v1: the folders still packed (their paths are in no other field), the paths of each
        # folder unpacked or written by this scanner, the last walk by folder (its order makes the digests)
        self._packed: dict[str, _Pack] = {}
        # entries of single paths of packed folders, read from their scan_files_v1 row (``_peeked_entry``): the
        # record a query shows, without unpacking its folder (~2 ms a folder of 1,200 rows); dropped with the pack
        self._peeked: dict[str, dict[str, FileEntry]] = {}
        self._members: dict[str, set[str]] = {}
        self._walked: dict[str, dict[str, Stat]] = {}
        self._packs_ok = False  # scan_folders_v1 held the table's rows at `token` when this scanner last looked
        self._members_unpacked = False  # some rows were unpacked from packs
        self._packs_tried = False  # a write of the packs alone was tried
        self._touched: set[str] = set()  # paths changed in `files` and not yet returned by scan()
        self._unsaved: set[str] = set()  # paths whose entry is not yet in scan_files_v1
        self._unremoved: set[str] = set()  # paths gone from the folder, still in scan_files_v1
        self._loaded = False
        # scan_files_v1's change counter as this scanner knows it (None: the table may hold what
        # `files` does not); loaded_token: its value when the cache was loaded
        self.token: int | None = None
        self.loaded_token: int | None = None
        self.parallel_min_files = PARALLEL_MIN_FILES
        self.parsed: Mapping[str, FileEntry] = _Filled(self)  # `files`, each entry filled when read
        self.changes = 0  # bumped whenever an entry of `files` is replaced or removed (a new content)
        self.reads = 0  # files read since the engine started (observability for tests and benchmarks)
        self.parses = 0  # frontmatter parses since the engine started

    @property
    def files(self) -> dict[str, FileEntry]:
        """path -> entry of every record file the scan knows (all made now, if the cache's rows were loaded lazily)."""
        if self._lazy is not None:
            with self.lock:  # (the engine's lock: a record may be read outside a call, see entry())
                by_folder = self._unpack_all()
                lazy = self._lazy
                if lazy is not None:  # (rows unpacked by folder are put in the table's order, as loaded rows are)
                    self._files, self._lazy = lazy.whole(by_folder), None
        return self._files

    def file_count(self) -> int:
        """len(files), without making every entry."""
        packed = sum(pack[2] for pack in self._packed.values())
        return packed + (len(self._lazy) if self._lazy is not None else len(self._files))

    def _get(self, path: str) -> FileEntry | None:
        if self._packed:
            self._unpack_of(path)
        lazy = self._lazy
        return self._files.get(path) if lazy is None else lazy.get(path)

    def _has(self, path: str) -> bool:
        if self._packed:
            self._unpack_of(path)
        lazy = self._lazy
        return path in self._files if lazy is None else lazy.has(path)

    def _set(self, path: str, entry: FileEntry) -> None:
        if self._packed:
            self._unpack_of(path)
        lazy = self._lazy
        if lazy is None:
            self._files[path] = entry
        else:
            lazy.set(path, entry)

    def _pop(self, path: str) -> FileEntry | None:
        if self._packed:
            self._unpack_of(path)
        lazy = self._lazy
        return self._files.pop(path, None) if lazy is None else lazy.pop(path)

    def _load_cache(self) -> None:
        """Load what the walk compares against: (size, mtime, sha256) of every file seen before.

        The rows are kept as they are (``_Lazy``): the walk compares against their stats, built in C,
        and an entry is made only for a file a query or a change needs (or all, by ``files``). The
        frontmatter stays in the table until a query needs the record (``entry``), so a new process
        on a large built store does not parse and validate every record first.
        """
        conn = self.state.conn
        conn.execute(_CACHE_SCHEMA)  # a dropped cache costs one parse of every file, never an error
        conn.execute(_CACHE_INDEX)
        with self.state.reading():
            rows = conn.execute(_ROWS_SQL).fetchall()
            self.loaded_token = self.token = _token(self.state)
        if self._files or self._lazy is not None or self._stats:  # (never the case today) entries made one by one
            for row in rows:
                self._set(row[0], _made(row))
                self._stats[row[0]] = (row[1], row[2])
        elif rows:
            paths = list(map(itemgetter(0), rows))  # the dicts built in C, no Python loop
            self._stats = dict(zip(paths, map(itemgetter(1, 2), rows), strict=True))
            self._lazy = _Lazy(dict(zip(paths, rows, strict=True)))
        self._loaded = True

    def _changes(self) -> ScanDelta:
        """What changed since the last scan: compared by folder on a new scanner and while folders are packed."""
        folder_walk = getattr(self.source, "folder_walk", None)
        walked: FolderWalk | None = None
        if not self._loaded:  # the cache is read before the walk: a file changed meanwhile is read again
            packs = self._load_packs() if folder_walk is not None else None
            if packs is None:
                self._load_cache()
            known = {folder: pack[2] for folder, pack in packs.items()} if packs else None
            walked = folder_walk(known) if folder_walk is not None else None
            if walked is not None and packs is None:
                self._walked = walked.folders  # (the packs are written in its order)
                return _flat_delta(flatten(walked.folders), walked.forced, self._stats)
        elif folder_walk is not None and self._packed:
            walked = folder_walk()
        if walked is None:
            return self.source.changes(self._stats if not self._packed else _Known(self))
        return self._compare(walked)

    def _load_packs(self) -> dict[str, _Pack] | None:
        """scan_folders_v1's packs, when they hold scan_files_v1's rows (else None: the rows are loaded instead)."""
        state = self.state
        try:
            with state.reading():
                token = _token(state)
                if state.meta(_FOLDERS_TOKEN) != str(token) or not state.table_exists("scan_files_v1"):
                    return None
                found = state.conn.execute("SELECT folder, digest, sorted, count, crc, rows FROM scan_folders_v1")
                packs: dict[str, _Pack] = {}
                for folder, digest, in_order, count, crc, blob in found:
                    if not (isinstance(blob, bytes) and isinstance(folder, str) and type(count) is int) or (
                        zlib.crc32(blob) != crc
                    ):
                        return None  # damaged: the rows are loaded from scan_files_v1, the packs written again
                    packs[folder] = (digest, in_order, count, blob)
        except sqlite3.Error:
            return None
        self.loaded_token = self.token = token
        self._packed, self._lazy, self._packs_ok, self._loaded = packs, _Lazy({}), True, True
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
                if not forced and _digest(dict(sorted(names.items())) if pack[1] else names) == pack[0]:
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
        rows = _unpacked(folder, pack)
        damaged = rows is None
        if rows is None:  # damaged, for all its CRC: the table's rows, and every file read again at the next scan
            rows = self._table_rows(folder)
        lazy = self._lazy
        if lazy is None:  # (never while folders are packed) the entries made so far are kept as set anew
            lazy = self._lazy = _Lazy({})
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
                    f"{_ROWS_SQL} WHERE path >= ? AND path < ?", (folder, folder + "\U0010ffff")
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
                token = _token(self.state)
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
        conn.execute(_FOLDERS_SCHEMA)
        groups: dict[str, list[tuple[Any, ...]]] = {}
        if self._packs_ok and self.state.meta(_FOLDERS_TOKEN) == str(token):
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
        self.state.set_meta(_FOLDERS_TOKEN, str(written))
        return {folder: {row[0] for row in rows} for folder, rows in groups.items()}

    def _pack_row(self, folder: str, rows: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        names = {row[0][len(folder) :]: (row[1], row[2]) for row in rows}
        walked = self._walked.get(folder)
        if walked is not None and walked == names:  # in the order a walk lists them: no sort to compare
            data, in_order = walked, 0
        else:
            data, in_order = dict(sorted(names.items())), 1
        blob = marshal.dumps(rows)
        return (folder, _digest(data), in_order, len(rows), zlib.crc32(blob), blob)

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
        return _stat_row(path, entry) if entry is not None else None

    def _all_rows(self) -> Iterator[tuple[Any, ...]]:
        lazy = self._lazy
        if lazy is None:
            for path, entry in self._files.items():
                yield _stat_row(path, entry)
            return
        made = lazy.made
        for path, row in lazy.rows.items():
            had = made.get(path)
            yield row if had is None else _stat_row(path, had)
        for path, had in made.items():
            if path not in lazy.rows:
                yield _stat_row(path, had)

    @property
    def saved_token(self) -> int | None:
        """scan_files_v1's change counter when the table holds exactly ``files``, else None."""
        return self.token if not self._unsaved and not self._unremoved else None

    def entry(self, path: str) -> FileEntry | None:
        """The entry of a file with its record built (filled from scan_files_v1 on first use)."""
        entry = self._files.get(path) if self._lazy is None and not self._packed else None
        if entry is None and (self._lazy is not None or self._packed):
            with self.lock:  # made once, whichever thread asks first
                entry = self._peeked_entry(path) if self._packed else None
                if entry is None:
                    entry = self._get(path)
        if entry is not None and not entry.filled:
            with self.lock:
                if not entry.filled:
                    self._fill(path, entry)
        return entry

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
            if self.token is None or _token(self.state) != self.token:
                return None
            row = self.state.conn.execute(f"{_ROWS_SQL} WHERE path = ?", (path,)).fetchone()
        except sqlite3.Error:
            return None
        if row is None or not _a_row(row):
            return None
        entry = self._peeked.setdefault(folder, {})[path] = _made(tuple(row))
        return entry

    def _fill(self, path: str, entry: FileEntry) -> None:
        try:
            row = self.state.conn.execute(
                "SELECT sha256, meta, body_line FROM scan_files_v1 WHERE path = ? AND problem_code IS NULL", (path,)
            ).fetchone()
        except sqlite3.Error:  # the cache was dropped or damaged since it was loaded: the file itself
            row = None
        meta = _cached_meta(row[1]) if row is not None and row[0] == entry.sha256 else None
        if meta is not None:
            body_line = row[2] or 0
        else:  # another process cached a newer version since: the file itself, if it still has this content
            loaded = load_file(self.root, self.max_file_bytes, path, entry.stat, None, self.profiles.for_path(path))
            fresh = loaded.entry if loaded is not None else None
            if fresh is None or fresh.sha256 != entry.sha256 or fresh.meta is None:
                self.forget([path])  # the next scan reads it again
                raise RecordChanged(f"{path} changed since the scan: take its record again")
            meta, body_line = fresh.meta, fresh.body_line
        entry.meta, entry.body_line = meta, body_line
        entry.rebuild(path)
        entry.release(self)

    def frontmatter_of(self, record: Record) -> dict[str, Any]:
        """The frontmatter of a record whose entry let it go (``FileEntry.release``): its scan_files_v1 row at
        the record's hash, else its file while the file still has that hash; RecordChanged when neither has it
        (the file changed since the record was read: the query runs again, on the file as it is now)."""
        path = record.path
        with self.lock:
            # (a packed folder's rows are all written: no text held, and nothing to unpack it for)
            entry = None if folder_of(path) in self._packed else self._get(path)
            if entry is not None and entry.meta_text is not None and entry.sha256 == record.sha256:
                found = _cached_meta(entry.meta_text)  # (its row is not written yet)
                if found is not None:
                    return found
            try:
                row = self.state.conn.execute(
                    "SELECT meta FROM scan_files_v1 WHERE path = ? AND sha256 = ? AND problem_code IS NULL",
                    (path, record.sha256),
                ).fetchone()
            except sqlite3.Error:  # dropped or damaged: the file itself
                row = None
            meta = _cached_meta(row[0]) if row is not None else None
            if meta is None:
                loaded = load_file(self.root, self.max_file_bytes, path, (0, 0), None, self.profiles.for_path(path))
                fresh = loaded.entry if loaded is not None else None
                if fresh is None or fresh.sha256 != record.sha256 or fresh.meta is None:
                    raise RecordChanged(f"{path} changed since its record was read: take the record again")
                meta = fresh.meta
        return meta

    def fill_all(self) -> None:
        """Fill every entry (a full build needs them all): one pass over scan_files_v1."""
        if all(e.filled for e in self.files.values()):
            return
        with self.lock, collector_paused():
            self._fill_all()

    def _fill_all(self) -> None:
        files = self.files
        try:
            with self.state.reading():
                rows = self.state.conn.execute(
                    "SELECT path, sha256, meta, body_line FROM scan_files_v1 WHERE problem_code IS NULL"
                )
                for path, sha, meta, body_line in rows:
                    entry = files.get(path)
                    if entry is not None and not entry.filled and entry.sha256 == sha:
                        parsed = _cached_meta(meta)
                        if parsed is not None:  # else read from the file below
                            entry.meta, entry.body_line = parsed, body_line or 0
                            entry.rebuild(path)
                            entry.release(self)
        except sqlite3.Error:
            pass  # the cache was dropped or damaged since it was loaded: each file is read below
        for path, entry in files.items():
            if not entry.filled:
                self._fill(path, entry)

    def scan(self, *, keep_bodies: int = sys.maxsize) -> tuple[set[str], dict[str, str]]:
        """Bring ``files`` up to date: (paths whose content changed or vanished, bodies read this time).

        At most ``keep_bodies`` characters of bodies are returned; ``read_body`` gives the others.
        """
        delta = self._changes()
        if not delta.changed and not delta.removed and not self._touched:
            if self._packs_due():
                self.save()
            return set(), {}
        touched = self._touched  # kept on self until returned, so that a failed scan loses none
        bodies: dict[str, str] = {}
        written = self._unsaved  # kept on self until committed, so that a failed write is made again
        removed = self._unremoved
        for path, st, loaded in progress(self._load(delta.changed), total=len(delta.changed), desc="knowtk: reading"):
            entry = self._get(path)
            if loaded is None:  # vanished between the walk and the read
                if self._has(path):
                    delta.removed.append(path)
                continue
            fresh = loaded.entry
            fresh.stat = st  # (the walk's tuple, equal: one object a file, not one more from the worker)
            if fresh.sha256 is not None:
                self.reads += 1
            if loaded.parsed:
                self.parses += 1
            if loaded.body is not None and len(loaded.body) <= keep_bodies:
                bodies[path] = loaded.body
                keep_bodies -= len(loaded.body)
            if entry is None or fresh.sha256 != entry.sha256 or fresh.problem != entry.problem:
                touched.add(path)
                fresh.rebuild(path)
                fresh.hold_as_text(self)
                self._set(path, fresh)
                self.changes += 1
            else:
                entry.stat = st
            self._stats[path] = st
            written.add(path)
            removed.discard(path)
        for path in delta.removed:
            if self._pop(path) is not None:
                touched.add(path)
                self.changes += 1
            self._stats.pop(path, None)
            removed.add(path)
            written.discard(path)
        self.save()
        self._release(touched)
        self._touched = set()
        return touched, bodies

    def _release(self, paths: Collection[str]) -> None:
        """Let go of the frontmatter of these entries where scan_files_v1 holds it (the 1M cold build's memory)."""
        unsaved = self._unsaved
        for path in paths:
            if path not in unsaved and (entry := self._get(path)) is not None:
                entry.release(self)
        if len(paths) >= BULK_RELEASE:
            give_back_memory()

    def reread_all(self, profiles: ProfileMap) -> None:
        """Read every file again, under these profiles, at the next scan (the same bytes make other records)."""
        with self.lock:
            self._unpack_all()
            self.profiles = profiles
            paths = list(self._stats)
            self._files.clear()
            self._lazy = None
            self._unsaved, self._unremoved = set(), set()
            self.token = None
            self.changes += 1
            self.forget(paths)

    def forget(self, paths: list[str]) -> None:
        """Read these files again at the next scan (their cached entry proved wrong)."""
        for path in paths:
            if self._packed:
                self._unpack_of(path)
            self._stats[path] = (-1, -1)
        recheck = getattr(self.source, "recheck", None)
        if recheck is not None:  # a notified source looks only at the paths it is told about
            recheck(paths)

    def mark_unsaved(self, paths: Iterable[str]) -> None:
        """Write these paths to scan_files_v1 again at the next ``save``: the entry of each path in
        ``files``, the removal of the others (a repair, when the table disagrees with the files)."""
        for path in paths:
            if self._has(path):
                self._unsaved.add(path)
            else:
                self._unremoved.add(path)

    def save(self) -> None:
        """Write the parsed files not yet in ``scan_files_v1`` (a projection: a failure here fails no query)."""
        if not self._unsaved and not self._unremoved and self.state.table_exists("scan_files_v1"):
            if self._packs_due():
                self._save_packs()
            return
        try:
            if not self.state.table_exists("scan_files_v1"):
                self.fill_all()
            with self.state.transaction() as conn:
                if not self.state.table_exists("scan_files_v1"):
                    conn.execute(_CACHE_SCHEMA)
                    conn.execute(_CACHE_INDEX)
                    self._unsaved |= self.files.keys()
                token = _token(self.state)
                saved = [(path, entry) for path in self._unsaved if (entry := self._get(path)) is not None]
                conn.executemany(
                    "INSERT OR REPLACE INTO scan_files_v1 "
                    "(path, size, mtime_ns, sha256, meta, body_line, problem_code, problem) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (_cache_row(path, entry) for path, entry in saved if entry.filled),
                )
                conn.executemany(  # the same content with a new stat: the row keeps its frontmatter
                    "UPDATE scan_files_v1 SET size = ?, mtime_ns = ? WHERE path = ? AND sha256 = ?",
                    [(*entry.stat, path, entry.sha256) for path, entry in saved if not entry.filled],
                )
                conn.executemany("DELETE FROM scan_files_v1 WHERE path = ?", [(p,) for p in self._unremoved])
                self.state.set_meta(_TOKEN, str(token + 1))
                # the packs, when the table held exactly `files` before this write (else left aside until then)
                members = self._write_packs(conn, token, token + 1) if token == self.token and self._walks else None
        except (sqlite3.Error, Contention):
            self.token = None
            self._packs_ok = False
            return  # kept in _unsaved: written by the next scan (the cache only saves parsing)
        # the table now holds exactly `files` if it held it before this write
        self.token = token + 1 if token == self.token else None
        self._packs_ok = members is not None
        if members is not None:
            self._members.update(members)
            self._walked = {}
        self._unsaved, self._unremoved = set(), set()

    def _load(self, changed: Mapping[str, Stat]) -> Iterator[tuple[str, Stat, Loaded | None]]:
        """(path, stat, load_file's answer) for every changed file, in a process pool when there are many."""
        paths, stats = list(changed), list(changed.values())
        known = []
        for path in paths:
            entry = self._get(path)
            known.append(entry.sha256 if entry is not None and entry.problem is None else None)
        load = partial(load_file, self.root, self.max_file_bytes)
        names = [self.profiles.for_path(path) for path in paths]
        answers = pool_map(load, paths, stats, known, names, parallel_min=self.parallel_min_files)
        return zip(paths, stats, answers, strict=True)

    def read_body(self, path: str, sha256: str) -> str | None:
        """The body of a record file as it is now, or None if it no longer has this hash."""
        data = read_regular(os.path.join(self.root, path), self.max_file_bytes)
        if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != sha256:
            return None
        return body_of(data)


class _Known(Mapping[str, Stat]):
    """A scanner's path -> stat while folders are packed: a folder is unpacked when a path in it is looked up."""

    def __init__(self, scanner: Scanner) -> None:
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


def _flat_delta(listing: dict[str, Stat], forced: set[str], known: Mapping[str, Stat]) -> ScanDelta:
    if listing == known and not forced:  # the usual case, settled by one comparison in C
        return ScanDelta({}, [])
    changed = {path: st for path, st in listing.items() if known.get(path) != st or path in forced}
    return ScanDelta(changed, [path for path in known if path not in listing])


class _Filled(Mapping[str, FileEntry]):
    """A scanner's files with every entry read filled in (a snapshot build reads records through it)."""

    def __init__(self, scanner: Scanner) -> None:
        self._scanner = scanner

    def __getitem__(self, path: str) -> FileEntry:
        entry = self._scanner.entry(path)
        if entry is None:
            raise KeyError(path)
        return entry

    def __iter__(self) -> Iterator[str]:
        return iter(self._scanner.files)

    def __len__(self) -> int:
        return self._scanner.file_count()


# the columns of a scan_files_v1 row as an entry is made from it (``_made``; a pack holds the same)
_ROWS_SQL = "SELECT path, size, mtime_ns, sha256, problem_code, problem FROM scan_files_v1"


def _a_row(row: tuple[Any, ...]) -> bool:
    """Whether a scan_files_v1 row has the types ``_made`` takes (as ``_unpacked`` checks a pack's)."""
    return (
        len(row) == 6
        and type(row[0]) is str
        and type(row[1]) is int
        and type(row[2]) is int
        and (row[3] is None or type(row[3]) is str)
        and (row[4] is None or type(row[4]) is str)
    )


def _made(row: tuple[Any, ...]) -> FileEntry:
    """The entry of one scan_files_v1 row (path, size, mtime_ns, sha256, problem_code, problem)."""
    path, size, mtime_ns, sha, problem_code, problem = row
    if problem_code or sha is None:  # nothing to parse: complete now
        entry = FileEntry((size, mtime_ns), sha, None, 0, FileProblem(problem_code, problem) if problem_code else None)
        entry.rebuild(path)
        return entry
    return FileEntry((size, mtime_ns), sha)  # filled from the row's frontmatter when its record is needed


class _Lazy:
    """A scanner's entries while they are the cache's rows: each made on first use, all by ``whole``.

    ``whole`` gives the dict the rows would have made one by one and then been changed into: a
    row's path keeps its place, a path set anew (or again after it was removed) comes after them all.
    """

    __slots__ = ("added", "made", "rows")

    def __init__(self, rows: dict[str, tuple[Any, ...]]) -> None:
        self.rows = rows  # path -> its row, for the paths still known from the cache
        self.made: dict[str, FileEntry] = {}  # entries made or set, of rows' paths and of new ones
        self.added = 0  # paths in made and not in rows

    def __len__(self) -> int:
        return len(self.rows) + self.added

    def get(self, path: str) -> FileEntry | None:
        entry = self.made.get(path)
        if entry is None:
            row = self.rows.get(path)
            if row is not None:
                entry = self.made[path] = _made(row)
        return entry

    def has(self, path: str) -> bool:
        return path in self.rows or path in self.made

    def set(self, path: str, entry: FileEntry) -> None:
        if path not in self.rows and path not in self.made:
            self.added += 1
        self.made[path] = entry

    def pop(self, path: str) -> FileEntry | None:
        entry = self.get(path)
        if entry is not None:
            if self.rows.pop(path, None) is None:
                self.added -= 1
            del self.made[path]
        return entry

    def whole(self, in_table_order: bool = False) -> dict[str, FileEntry]:
        made = self.made
        rows = sorted(self.rows.items()) if in_table_order else self.rows.items()
        out = {path: made.pop(path) if path in made else _made(row) for path, row in rows}
        out.update(made)  # the paths set anew, in the order they were set
        self.rows, self.made, self.added = {}, {}, 0
        return out


_TOKEN = "scan_token"  # knowtk_meta key: bumped by every write to scan_files_v1
_FOLDERS_TOKEN = "scan_folders_token"  # knowtk_meta key: the scan_token scan_folders_v1 holds the rows of

# a folder's pack: digest of its {name: (size, mtime_ns)}, 1 when that digest is of the names sorted (else of
# the order the last walk listed them in), how many rows, the rows (scan_files_v1's, but the frontmatter:
# marshal), kept as loaded until a path in the folder is needed
_Pack = tuple[bytes, int, int, bytes]

_FOLDERS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS scan_folders_v1 (folder TEXT PRIMARY KEY, digest BLOB NOT NULL, "
    "sorted INTEGER NOT NULL, count INTEGER NOT NULL, crc INTEGER NOT NULL, rows BLOB NOT NULL)"
)


def _digest(names: dict[str, Stat]) -> bytes:
    """A folder's digest: marshal's version 2 writes the same bytes for the same names and stats in the same order
    (no references, no interning marks)."""
    return hashlib.blake2b(marshal.dumps(names, 2), digest_size=16).digest()


def _unpacked(folder: str, pack: _Pack) -> list[tuple[Any, ...]] | None:
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


def _stat_row(path: str, entry: FileEntry) -> tuple[Any, ...]:
    """The row ``_load_cache`` reads of a path (path, size, mtime_ns, sha256, problem_code, problem)."""
    problem = entry.problem
    return (
        path,
        entry.stat[0],
        entry.stat[1],
        entry.sha256,
        *((problem.code, problem.message) if problem else (None, None)),
    )


def _token(state: StateDB) -> int:
    value = state.meta(_TOKEN)
    return int(value) if value and value.isdigit() else 0


_CACHE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS scan_files_v1 (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "mtime_ns INTEGER NOT NULL, sha256 TEXT, meta TEXT, body_line INTEGER, problem_code TEXT, problem TEXT)"
)


# what a new process reads of every row (not the frontmatter): read from this index, not the wide rows
_CACHE_INDEX = (
    "CREATE INDEX IF NOT EXISTS scan_files_v1_stat ON scan_files_v1 "
    "(path, size, mtime_ns, sha256, problem_code, problem)"
)


def _cached_meta(text: str | None) -> dict[str, Any] | None:
    """A row's frontmatter, or None when it cannot be taken (absent, or damaged: the file is read instead)."""
    if text is None:
        return None
    try:
        meta = json.loads(text)
    except ValueError:
        return None
    return meta if isinstance(meta, dict) else None


def _cache_row(path: str, entry: FileEntry) -> tuple[Any, ...]:
    """The row of scan_files_v1: ``_stat_row``'s columns with the frontmatter and body line between."""
    stat = _stat_row(path, entry)
    return (*stat[:4], entry.meta_json(), entry.body_line, *stat[4:])
