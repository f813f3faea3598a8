"""The scan: which record files changed since the last query, and their parsed frontmatter.

Every query scans, so this is the hot path. An unchanged store costs one
``os.scandir`` walk with a ``stat`` per file and a dictionary comparison; a
changed file costs one read, one SHA-256 and one YAML parse. "What changed"
comes from a ``ChangeSource``: ``StatWalk`` here, or ``knowtk.scan.watch.InotifyWatch``,
which learns it from the kernel and walks only when it must.

Parsed frontmatter is cached in ``scan_files_v1`` (a projection: deleting it
costs one full parse, never a record), so a new process does not parse YAML
again for files it has seen. When many files need reading at once (a first
scan), they are read and parsed in a pool of processes, one per core.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import json
import multiprocessing
import os
import signal
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, Protocol

from knowtk.errors import ScanLimitExceeded, StoreUnavailable
from knowtk.model.records import FileProblem, Issue, Record, body_of, build_record, load_frontmatter, read_regular
from knowtk.scan.progress import progress
from knowtk.state import Contention, StateDB

__all__ = [
    "DEFAULT_MAX_FILES",
    "ChangeSource",
    "FileEntry",
    "Loaded",
    "ScanDelta",
    "Scanner",
    "StatWalk",
    "collector_paused",
    "load_file",
]

DEFAULT_MAX_FILES = 1_000_000
DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
# below this many files to read, a process pool costs more to start than it saves
PARALLEL_MIN_FILES = 2000

Stat = tuple[int, int]  # (size, mtime_ns)

# objects created while the collector was paused past which they are frozen (see collector_paused)
FREEZE_AFTER_OBJECTS = 200_000


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the store is (re)loaded.

    A first scan creates millions of small objects (records, their frontmatter, index rows),
    none of them in reference cycles; meanwhile the collector would walk the growing heap over
    and over, which took about half the time of loading the scan cache.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_count()[0] > FREEZE_AFTER_OBJECTS:
                # a large load: move what exists to the permanent generation, or the collector's next full
                # pass walks all of it once (~1 s at 100k records, in whichever query comes next).
                # Records and snapshots hold no cycles: refcounting still frees them when replaced.
                gc.freeze()
            gc.enable()


@dataclass(slots=True)
class ScanDelta:
    changed: dict[str, Stat]  # new or modified record files
    removed: list[str]


class ChangeSource(Protocol):
    """Tells the scanner what changed; ``known`` is what it saw last time (path -> stat)."""

    def changes(self, known: Mapping[str, Stat]) -> ScanDelta: ...


class StatWalk:
    """The portable change source: walk the store and compare (size, mtime_ns) of every record file."""

    def __init__(self, root: str, *, max_files: int = DEFAULT_MAX_FILES) -> None:
        self.root = root
        self.max_files = max_files
        self._root_real: str | None = None

    def listing(
        self, *, enter: Callable[[str], object] | None = None, symlinks: set[str] | None = None
    ) -> dict[str, Stat]:
        """Every record file (relative path with '/') and its stat; names starting with '.' or '_' skipped.

        What cannot be read as a record is listed too, under a stat whose size is a negative
        ``LISTED_PROBLEMS`` code, so that the scan reports it as that path's coverage issue: a FIFO,
        socket or device named ``*.md``, a symlink leaving the store or leading nowhere, a folder
        that cannot be listed (its path ends with '/'), a name that is not UTF-8, a path the
        system cannot open. Symlinks are never followed: one that stays inside the store needs no
        following, its target is read at its own path.

        ``enter`` is called with each folder ('' or 'a/b/') before it is listed (a watcher adds
        its watch there: one pass instead of two); ``symlinks`` collects every ``*.md`` symlink.
        """
        out: dict[str, Stat] = {}
        stack = [("", self.root)]
        limit = self.max_files
        while stack:
            prefix, folder = stack.pop()
            if enter is not None:
                enter(prefix)
            try:
                it = os.scandir(folder)
            except FileNotFoundError:
                if not prefix:
                    raise StoreUnavailable(self.root, "the store folder does not exist") from None
                continue  # a folder removed while we walk
            except NotADirectoryError:
                if not prefix:
                    raise StoreUnavailable(self.root, "the store path is not a folder") from None
                continue  # replaced by a file while we walk
            except OSError as exc:
                if not prefix:
                    raise StoreUnavailable(folder, f"cannot list the folder ({exc.strerror})") from None
                out[prefix] = _problem_stat(_FOLDER_UNREADABLE if exc.errno != errno.ENAMETOOLONG else _TOO_LONG)
                continue
            try:
                with it:
                    for entry in it:
                        name = entry.name  # the usual entry, a regular *.md file, without a method call
                        if (
                            name.endswith(".md")
                            and name.isascii()
                            and name[0] not in "._"
                            and entry.is_file(follow_symlinks=False)
                        ):
                            try:
                                st = entry.stat(follow_symlinks=False)
                            except OSError:
                                pass  # _list_entry says what it means
                            else:
                                out[prefix + name] = (st.st_size, st.st_mtime_ns)
                                continue
                        self._list_entry(prefix, entry, out, stack, symlinks)
            except OSError as exc:  # the listing broke off part way (an I/O error): the folder is not covered
                if not prefix:
                    raise StoreUnavailable(folder, f"cannot list the folder ({exc.strerror})") from None
                out[prefix] = _problem_stat(_FOLDER_UNREADABLE, exc.errno or 0)
            if len(out) > limit:
                raise ScanLimitExceeded("max_files", len(out), limit)
        return out

    def _list_entry(
        self,
        prefix: str,
        entry: os.DirEntry[str],
        out: dict[str, Stat],
        stack: list[tuple[str, str]],
        symlinks: set[str] | None,
    ) -> None:
        name = entry.name
        if name[0] in "._":
            return
        if not name.isascii() and not _is_text(name):  # bytes that are not UTF-8 (surrogate-escaped)
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            if entry.is_dir(follow_symlinks=False):
                out[prefix + shown + "/"] = _problem_stat(_NAME_NOT_UTF8)
            elif shown.endswith(".md"):
                out[prefix + shown] = _problem_stat(_NAME_NOT_UTF8)
            return
        if entry.is_symlink():
            if symlinks is not None and name.endswith(".md"):
                symlinks.add(prefix + name)
            self._list_symlink(prefix, entry, out)
        elif entry.is_dir(follow_symlinks=False):
            stack.append((prefix + name + "/", entry.path))
        elif name.endswith(".md"):
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                return
            except OSError as exc:
                out[prefix + name] = _problem_stat(_TOO_LONG if exc.errno == errno.ENAMETOOLONG else _UNREADABLE)
                return
            if entry.is_file(follow_symlinks=False):
                out[prefix + name] = (st.st_size, st.st_mtime_ns)
            else:  # a FIFO, socket or device: opening it could wait forever or read without end
                out[prefix + name] = _problem_stat(_NOT_REGULAR, st.st_mtime_ns)

    def _list_symlink(self, prefix: str, entry: os.DirEntry[str], out: dict[str, Stat]) -> None:
        """A symlink inside the store is skipped (its target is walked); others are reported, never followed."""
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime_ns
        except OSError:
            return
        listed = self._symlink_listed(entry.path, mtime, is_record=entry.name.endswith(".md"))
        if listed is not None:
            out[prefix + entry.name + listed[0]] = listed[1]

    def _symlink_listed(self, full: str, mtime: int, *, is_record: bool) -> tuple[str, Stat] | None:
        """(suffix, stat) a symlink is listed under ('/' when it leads to a folder), or None: not listed."""
        try:
            target = os.stat(full)
        except OSError:  # dangling, or a loop
            return ("", _problem_stat(_SYMLINK_BROKEN, mtime)) if is_record else None
        is_dir = stat.S_ISDIR(target.st_mode)
        if not is_dir and not is_record:
            return None
        if self._root_real is None:
            self._root_real = os.path.realpath(self.root)
        real = os.path.realpath(full)
        if real == self._root_real or real.startswith(self._root_real.rstrip(os.sep) + os.sep):
            return None
        return ("/" if is_dir else "", _problem_stat(_SYMLINK_OUTSIDE, mtime))

    def stat_path(self, path: str) -> Stat | None:
        """What ``listing`` lists at this record file path ('a/b.md'), or None when it lists nothing there.

        For a change source that is told which paths changed (``knowtk.scan.watch``): the walk's rules, one path.
        A name that is not UTF-8, or a symlink to a folder, is listed under another key: such a source walks.
        """
        name = path.rpartition("/")[2]
        if not name or name[0] in "._" or not name.endswith(".md") or not _is_text(path):
            return None
        full = os.path.join(self.root, path)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return _problem_stat(_TOO_LONG if exc.errno == errno.ENAMETOOLONG else _UNREADABLE)
        if stat.S_ISLNK(st.st_mode):
            listed = self._symlink_listed(full, st.st_mtime_ns, is_record=True)
            return listed[1] if listed is not None and not listed[0] else None
        if stat.S_ISDIR(st.st_mode):
            return None
        if stat.S_ISREG(st.st_mode):
            return (st.st_size, st.st_mtime_ns)
        return _problem_stat(_NOT_REGULAR, st.st_mtime_ns)  # a FIFO, socket or device: never opened

    def changes(self, known: Mapping[str, Stat]) -> ScanDelta:
        listing = self.listing()
        if listing == known:  # the usual case, settled by one comparison in C
            return ScanDelta({}, [])
        changed = {path: st for path, st in listing.items() if known.get(path) != st}
        removed = [path for path in known if path not in listing]
        return ScanDelta(changed, removed)


@dataclass(slots=True)
class FileEntry:
    """What the scan knows of one record file."""

    stat: Stat
    sha256: str | None = None
    meta: dict[str, Any] | None = None
    body_line: int = 0
    problem: FileProblem | None = None
    record: Record | None = None
    issues: list[Issue] = field(default_factory=list)

    @property
    def filled(self) -> bool:
        """False for an entry loaded from scan_files_v1 without its frontmatter (a new process loads those
        only for the files a query needs): ``Scanner.entry`` fills it in."""
        return self.meta is not None or self.problem is not None or self.sha256 is None

    def rebuild(self, path: str) -> None:
        if self.problem is not None or self.meta is None:
            problem = self.problem or FileProblem("unreadable", "the file could not be read")
            self.record, self.issues = None, [Issue(path, None, problem.code, problem.message)]
        else:
            self.record, self.issues = build_record(path, self.sha256 or "", self.meta, self.body_line)


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
    ) -> None:
        self.root = root
        # the engine's lock: entries are filled from state.sqlite, also when a record of a snapshot
        # someone holds is read outside a call (the connection's transactions are one per engine)
        self.lock = lock if lock is not None else threading.RLock()
        self.state = state
        self.source: ChangeSource = source or StatWalk(root)
        self.max_file_bytes = max_file_bytes
        self.files: dict[str, FileEntry] = {}
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

    def _load_cache(self) -> None:
        """Load what the walk compares against: (size, mtime, sha256) of every file seen before.

        The frontmatter stays in the table until a query needs the record (``entry``), so a
        new process on a large built store does not parse and validate every record first.
        """
        conn = self.state.conn
        conn.execute(_CACHE_SCHEMA)  # a dropped cache costs one parse of every file, never an error
        conn.execute(_CACHE_INDEX)
        with self.state.reading():
            rows = conn.execute("SELECT path, size, mtime_ns, sha256, problem_code, problem FROM scan_files_v1")
            files, stats = self.files, self._stats
            for path, size, mtime_ns, sha, problem_code, problem in rows:
                stat = (size, mtime_ns)
                if problem_code or sha is None:  # nothing to parse: complete now
                    entry = FileEntry(stat, sha, None, 0, FileProblem(problem_code, problem) if problem_code else None)
                    entry.rebuild(path)
                else:
                    entry = FileEntry(stat, sha)  # positional: 100k of these at 100k records
                files[path] = entry
                stats[path] = stat
            self.loaded_token = self.token = _token(self.state)
        self._loaded = True

    @property
    def saved_token(self) -> int | None:
        """scan_files_v1's change counter when the table holds exactly ``files``, else None."""
        return self.token if not self._unsaved and not self._unremoved else None

    def entry(self, path: str) -> FileEntry | None:
        """The entry of a file with its record built (filled from scan_files_v1 on first use)."""
        entry = self.files.get(path)
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
            loaded = load_file(self.root, self.max_file_bytes, path, entry.stat, None)
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
            entry = self.files.get(path)
            if loaded is None:  # vanished between the walk and the read
                if path in self.files:
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
                self.files[path] = fresh
                self.changes += 1
            else:
                entry.stat = st
            self._stats[path] = st
            written.add(path)
            removed.discard(path)
        for path in delta.removed:
            if self.files.pop(path, None) is not None:
                touched.add(path)
                self.changes += 1
            self._stats.pop(path, None)
            removed.add(path)
            written.discard(path)
        self.save()
        self._touched = set()
        return touched, bodies

    def forget(self, paths: list[str]) -> None:
        """Read these files again at the next scan (their cached entry proved wrong)."""
        for path in paths:
            self._stats[path] = (-1, -1)
        recheck = getattr(self.source, "recheck", None)
        if recheck is not None:  # a notified source looks only at the paths it is told about
            recheck(paths)

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
                files = self.files
                saved = [path for path in self._unsaved if path in files]
                conn.executemany(
                    "INSERT OR REPLACE INTO scan_files_v1 "
                    "(path, size, mtime_ns, sha256, meta, body_line, problem_code, problem) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (_cache_row(path, files[path]) for path in saved if files[path].filled),
                )
                conn.executemany(  # the same content with a new stat: the row keeps its frontmatter
                    "UPDATE scan_files_v1 SET size = ?, mtime_ns = ? WHERE path = ? AND sha256 = ?",
                    [(*files[p].stat, p, files[p].sha256) for p in saved if not files[p].filled],
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
        known = []
        for path in changed:
            entry = self.files.get(path)
            known.append(entry.sha256 if entry is not None and entry.problem is None else None)
        load = partial(load_file, self.root, self.max_file_bytes)
        workers = min(os.cpu_count() or 1, 8)
        context = _pool_context() if len(changed) >= self.parallel_min_files and workers > 1 else None
        if context is None:
            yield from zip(changed, changed.values(), map(load, changed, changed.values(), known), strict=True)
            return
        paths, stats, done = list(changed), list(changed.values()), 0
        try:
            with ProcessPoolExecutor(
                workers, mp_context=context, initializer=_die_with_parent, initargs=(os.getpid(),)
            ) as pool:
                for answer in pool.map(load, paths, stats, known, chunksize=128):
                    yield paths[done], stats[done], answer
                    done += 1
        except (BrokenProcessPool, OSError):  # no worker could start (a sandbox, a limit): parse here
            rest = zip(paths[done:], stats[done:], known[done:], strict=True)
            yield from ((path, st, load(path, st, sha)) for path, st, sha in rest)

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
        return len(self._scanner.files)


class Loaded(NamedTuple):
    entry: FileEntry
    body: str | None = None  # the body, when the frontmatter was parsed into a mapping
    parsed: bool = False  # the frontmatter was parsed (successfully or not)


def load_file(root: str, max_file_bytes: int, path: str, st: Stat, known_sha256: str | None) -> Loaded | None:
    """Read one record file, or None if it vanished. Runs in pool workers too.

    The frontmatter is parsed only when the bytes differ from ``known_sha256``: the caller
    keeps the entry it has for a file whose content did not change.
    """
    if st[0] < 0:  # the listing found it cannot be read as a record
        code, message = LISTED_PROBLEMS[-st[0]]
        return Loaded(FileEntry(st, None, None, 0, FileProblem(code, message)))
    if st[0] > max_file_bytes:
        message = f"{st[0]:,} bytes is over the {max_file_bytes:,}-byte limit for a record"
        return Loaded(FileEntry(st, None, None, 0, FileProblem("file_too_large", message)))
    data = read_regular(os.path.join(root, path), max_file_bytes)
    if data is None:
        return None
    if isinstance(data, FileProblem):
        return Loaded(FileEntry(st, None, None, 0, data))
    sha = hashlib.sha256(data).hexdigest()
    if sha == known_sha256:
        return Loaded(FileEntry(st, sha))
    loaded = load_frontmatter(data)
    if isinstance(loaded, FileProblem):
        return Loaded(FileEntry(st, sha, None, 0, loaded), None, True)
    meta, body, body_line = loaded
    return Loaded(FileEntry(st, sha, meta, body_line), body, True)


# what the listing found unreadable, by the negative size it lists the path under
LISTED_PROBLEMS = {
    1: ("not_regular_file", "a FIFO, socket or device, not a regular file; not opened"),
    2: ("symlink_outside", "a symlink that leaves the store; not followed"),
    3: ("symlink_broken", "a symlink to nothing (dangling, or a loop); not followed"),
    4: ("folder_unreadable", "a folder that cannot be listed (no permission, an I/O error); its records are not read"),
    5: ("name_invalid", "the name is not UTF-8; not read"),
    6: ("path_too_long", "the path is longer than the system allows; not read"),
    7: ("unreadable", "the file's status cannot be read"),
}
_NOT_REGULAR, _SYMLINK_OUTSIDE, _SYMLINK_BROKEN, _FOLDER_UNREADABLE, _NAME_NOT_UTF8, _TOO_LONG, _UNREADABLE = range(
    1, 8
)


def _problem_stat(code: int, mtime_ns: int = 0) -> Stat:
    return (-code, mtime_ns)


def _is_text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _die_with_parent(parent: int) -> None:
    """Initializer of a parse worker: it must not outlive the process that started the parse.

    A forked worker asks Linux for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``); every
    worker also runs a thread that watches the parent (a forkserver's worker is the child of the
    server, not of the caller) and exits when it is gone.
    """
    direct = os.getppid() == parent
    if direct and sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass

    def gone() -> bool:
        if direct:
            return os.getppid() != parent
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    if gone():
        os._exit(1)

    def watch() -> None:
        while not gone():
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="knowtk-parent-watch", daemon=True).start()


def _pool_context() -> Any:
    """How to start parse workers, or None to parse in this process.

    ``fork`` (Linux) when this process runs one thread: no lock can be inherited mid-use and
    the main module is not run again. Otherwise (a Jupyter kernel runs several threads)
    ``forkserver``, which imports the main module again in every worker: fine for a module
    run with ``-m`` (``ipykernel_launcher``), not for a script that may lack an
    ``if __name__ == "__main__":`` guard, so a threaded script parses in its own process.
    """
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if "forkserver" in methods and main_spec is not None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])  # import knowtk once in the server, not in every worker
        return context
    return None


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
