"""The scanner: every record file's parsed state, kept in step with the folder and cached in ``scan_files_v1``.

Every query scans, so this is the hot path: the change source says what changed, and only those
files are read (``load_file``; in a process pool when there are many). Parsed frontmatter is
cached in ``scan_files_v1`` (a projection: deleting it costs one full parse, never a record), so a
new process does not parse YAML again for files it has seen; it loads each file's frontmatter
only when a query needs that record.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from operator import itemgetter
from typing import Any

from knowtk.model.profile import ProfileMap
from knowtk.model.records import FileProblem, body_of, read_regular
from knowtk.scan.changes import ChangeSource, Stat, StatWalk
from knowtk.scan.entry import DEFAULT_MAX_FILE_BYTES, FileEntry, Loaded, load_file
from knowtk.scan.pool import PARALLEL_MIN_FILES, collector_paused, pool_map
from knowtk.scan.progress import progress
from knowtk.state import Contention, StateDB

__all__ = ["Scanner"]


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
        self._stats: dict[str, Stat] = {}
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
                lazy = self._lazy
                if lazy is not None:
                    self._files, self._lazy = lazy.whole(), None
        return self._files

    def file_count(self) -> int:
        """len(files), without making every entry."""
        return len(self._lazy) if self._lazy is not None else len(self._files)

    def _get(self, path: str) -> FileEntry | None:
        lazy = self._lazy
        return self._files.get(path) if lazy is None else lazy.get(path)

    def _has(self, path: str) -> bool:
        lazy = self._lazy
        return path in self._files if lazy is None else lazy.has(path)

    def _set(self, path: str, entry: FileEntry) -> None:
        lazy = self._lazy
        if lazy is None:
            self._files[path] = entry
        else:
            lazy.set(path, entry)

    def _pop(self, path: str) -> FileEntry | None:
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
            rows = conn.execute(
                "SELECT path, size, mtime_ns, sha256, problem_code, problem FROM scan_files_v1"
            ).fetchall()
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

    @property
    def saved_token(self) -> int | None:
        """scan_files_v1's change counter when the table holds exactly ``files``, else None."""
        return self.token if not self._unsaved and not self._unremoved else None

    def entry(self, path: str) -> FileEntry | None:
        """The entry of a file with its record built (filled from scan_files_v1 on first use)."""
        entry = self._files.get(path) if self._lazy is None else None
        if entry is None and self._lazy is not None:
            with self.lock:  # made once, whichever thread asks first
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
        meta = _cached_meta(row[1]) if row is not None and row[0] == entry.sha256 else None
        if meta is not None:
            body_line = row[2] or 0
        else:  # another process cached a newer version since: the file itself, if it still has this content
            loaded = load_file(self.root, self.max_file_bytes, path, entry.stat, None, self.profiles.for_path(path))
            fresh = loaded.entry if loaded is not None else None
            if fresh is None or fresh.sha256 != entry.sha256 or fresh.meta is None:
                self.forget([path])  # the next scan reads it again
                raise Contention(f"{path} changed since the scan")
            meta, body_line = fresh.meta, fresh.body_line
        entry.meta, entry.body_line = meta, body_line
        entry.rebuild(path)

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
        except sqlite3.Error:
            pass  # the cache was dropped or damaged since it was loaded: each file is read below
        for path, entry in files.items():
            if not entry.filled:
                self._fill(path, entry)

    def scan(self, *, keep_bodies: int = sys.maxsize) -> tuple[set[str], dict[str, str]]:
        """Bring ``files`` up to date: (paths whose content changed or vanished, bodies read this time).

        At most ``keep_bodies`` characters of bodies are returned; ``read_body`` gives the others.
        """
        if not self._loaded:
            self._load_cache()
        delta = self.source.changes(self._stats)
        if not delta.changed and not delta.removed and not self._touched:
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
        self._touched = set()
        return touched, bodies

    def reread_all(self, profiles: ProfileMap) -> None:
        """Read every file again, under these profiles, at the next scan (the same bytes make other records)."""
        with self.lock:
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
        except (sqlite3.Error, Contention):
            self.token = None
            return  # kept in _unsaved: written by the next scan (the cache only saves parsing)
        # the table now holds exactly `files` if it held it before this write
        self.token = token + 1 if token == self.token else None
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

    def whole(self) -> dict[str, FileEntry]:
        made = self.made
        out = {path: made.pop(path) if path in made else _made(row) for path, row in self.rows.items()}
        out.update(made)  # the paths set anew, in the order they were set
        self.rows, self.made, self.added = {}, {}, 0
        return out


_TOKEN = "scan_token"  # knowtk_meta key: bumped by every write to scan_files_v1


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
    problem = entry.problem
    return (
        path,
        entry.stat[0],
        entry.stat[1],
        entry.sha256,
        json.dumps(entry.meta, ensure_ascii=False) if entry.meta is not None else None,
        entry.body_line,
        problem.code if problem else None,
        problem.message if problem else None,
    )
