"""The scanner: every record file's parsed state, kept in step with the folder and cached in ``scan_files_v1``.

Every query scans, so this is the hot path: the change source says what changed, and only those
files are read (``load_file``; in a process pool when there are many). Parsed frontmatter is
cached in ``scan_files_v1`` (a projection: deleting it costs one full parse, never a record), so a
new process does not parse YAML again for files it has seen; it loads each file's frontmatter
only when a query needs that record. No process holds the frontmatter mappings past that: a
parsed one is kept as its row's JSON text until the row is written, and a record reads it back
from the row when asked (``frontmatter_of``; the records' other fields are what queries read).

``scan_folders_v1`` holds the same rows (not the frontmatter) packed by folder (``knowtk.scan.packs``): a
new process walks by folder (``FolderWalk``) and keeps a folder whose walk gives the stored digest packed,
unpacked only when a path in it is needed. The table's rows, and the entries made of them, are in
``knowtk.scan.rows``.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping
from functools import partial
from operator import itemgetter
from typing import Any

from knowtk.model.profile import ProfileMap
from knowtk.model.records import Record, body_of, read_regular
from knowtk.scan.changes import ChangeSource, FolderWalk, ScanDelta, Stat, StatWalk, flatten, folder_of
from knowtk.scan.entry import DEFAULT_MAX_FILE_BYTES, FileEntry, Loaded, load_file
from knowtk.scan.packs import FolderPacks, KnownStats, Pack
from knowtk.scan.pool import PARALLEL_MIN_FILES, collector_paused, give_back_memory, pool_map
from knowtk.scan.progress import progress
from knowtk.scan.rows import (
    FILES_INDEX,
    FILES_SCHEMA,
    ROWS_SQL,
    TOKEN_KEY,
    LazyEntries,
    cached_frontmatter,
    entry_from_row,
    files_row,
    read_token,
)
from knowtk.state import Contention, RecordChanged, StateDB

__all__ = ["Scanner"]

# entries whose frontmatter a scan let go past which the freed memory is given back to the system
BULK_RELEASE = 50_000


class Scanner(FolderPacks):
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
        self._lazy: LazyEntries | None = None  # the cache's rows, each made an entry when first used (a new process)
        self._stats: dict[str, Stat] = {}  # path -> stat of every path known, but those of packed folders
        # scan_folders_v1: the folders still packed (their paths are in no other field), the paths of each
        # folder unpacked or written by this scanner, the last walk by folder (its order makes the digests)
        self._packed: dict[str, Pack] = {}
        # entries of single paths of packed folders, read from their scan_files_v1 row (``_peeked_entry``): the
        # record a query shows, without unpacking its folder (~2 ms a folder of 1,200 rows); dropped with the pack
        self._peeked: dict[str, dict[str, FileEntry]] = {}
        self._members: dict[str, set[str]] = {}
        self._walked: dict[str, dict[str, Stat]] = {}
        self._packs_ok = False  # scan_folders_v1 held the table's rows at `token` when this scanner last looked
        self._members_unpacked = False  # some rows were unpacked from packs
        self._packs_tried = False  # a write of the packs alone was tried
        self._touched: set[str] = set()  # paths changed in `files` and not yet returned by scan()
        # the walk of a settled source (``SettledWalk.settled_walk``) the last scan took in whole: until the source
        # walks again, or a file is to be read again (``forget``), nothing can differ from it
        self._settled_at: int | None = None
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

        The rows are kept as they are (``LazyEntries``): the walk compares against their stats, built in C,
        and an entry is made only for a file a query or a change needs (or all, by ``files``). The
        frontmatter stays in the table until a query needs the record (``entry``), so a new process
        on a large built store does not parse and validate every record first.
        """
        conn = self.state.conn
        conn.execute(FILES_SCHEMA)  # a dropped cache costs one parse of every file, never an error
        conn.execute(FILES_INDEX)
        with self.state.reading():
            rows = conn.execute(ROWS_SQL).fetchall()
            self.loaded_token = self.token = read_token(self.state)
        if self._files or self._lazy is not None or self._stats:  # (never the case today) entries made one by one
            for row in rows:
                self._set(row[0], entry_from_row(row))
                self._stats[row[0]] = (row[1], row[2])
        elif rows:
            paths = list(map(itemgetter(0), rows))  # the dicts built in C, no Python loop
            self._stats = dict(zip(paths, map(itemgetter(1, 2), rows), strict=True))
            self._lazy = LazyEntries(dict(zip(paths, rows, strict=True)))
        self._loaded = True

    def _changes(self) -> ScanDelta:
        """What changed since the last scan: compared by folder on a new scanner and while folders are packed."""
        settled = getattr(self.source, "settled_walk", None)
        if settled is not None and settled == self._settled_at and self._loaded:
            return ScanDelta({}, [])  # (compared path by path, a settled past of 100k files cost 0.2 s a query)
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
            return self.source.changes(self._stats if not self._packed else KnownStats(self))
        return self._compare(walked)

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

    def _fill(self, path: str, entry: FileEntry) -> None:
        try:
            row = self.state.conn.execute(
                "SELECT sha256, meta, body_line FROM scan_files_v1 WHERE path = ? AND problem_code IS NULL", (path,)
            ).fetchone()
        except sqlite3.Error:  # the cache was dropped or damaged since it was loaded: the file itself
            row = None
        meta = cached_frontmatter(row[1]) if row is not None and row[0] == entry.sha256 else None
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
                found = cached_frontmatter(entry.meta_text)  # (its row is not written yet)
                if found is not None:
                    return found
            try:
                row = self.state.conn.execute(
                    "SELECT meta FROM scan_files_v1 WHERE path = ? AND sha256 = ? AND problem_code IS NULL",
                    (path, record.sha256),
                ).fetchone()
            except sqlite3.Error:  # dropped or damaged: the file itself
                row = None
            meta = cached_frontmatter(row[0]) if row is not None else None
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
                        parsed = cached_frontmatter(meta)
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
            self._settled_at = getattr(self.source, "settled_walk", None)
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
        self._settled_at = getattr(self.source, "settled_walk", None)
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
        self._settled_at = None
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
                    conn.execute(FILES_SCHEMA)
                    conn.execute(FILES_INDEX)
                    self._unsaved |= self.files.keys()
                token = read_token(self.state)
                saved = [(path, entry) for path in self._unsaved if (entry := self._get(path)) is not None]
                conn.executemany(
                    "INSERT OR REPLACE INTO scan_files_v1 "
                    "(path, size, mtime_ns, sha256, meta, body_line, problem_code, problem) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (files_row(path, entry) for path, entry in saved if entry.filled),
                )
                conn.executemany(  # the same content with a new stat: the row keeps its frontmatter
                    "UPDATE scan_files_v1 SET size = ?, mtime_ns = ? WHERE path = ? AND sha256 = ?",
                    [(*entry.stat, path, entry.sha256) for path, entry in saved if not entry.filled],
                )
                conn.executemany("DELETE FROM scan_files_v1 WHERE path = ?", [(p,) for p in self._unremoved])
                self.state.set_meta(TOKEN_KEY, str(token + 1))
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
