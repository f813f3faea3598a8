"""The scan: which record files changed since the last query, and their parsed frontmatter.

Every query scans, so this is the hot path. An unchanged store costs one
``os.scandir`` walk with a ``stat`` per file and a dictionary comparison; a
changed file costs one read, one SHA-256 and one YAML parse. "What changed"
comes from a ``ChangeSource`` (today ``StatWalk``), the one seam where an OS
change notification could replace the walk.

Parsed frontmatter is cached in ``scan_files_v1`` (a projection: deleting it
costs one full parse, never a record), so a new process does not parse YAML
again for files it has seen.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import ScanLimitExceeded, StoreUnavailable
from .records import FileProblem, Issue, Record, body_of, build_record, load_frontmatter
from .state import StateDB

__all__ = ["DEFAULT_MAX_FILES", "ChangeSource", "FileEntry", "ScanDelta", "Scanner", "StatWalk"]

DEFAULT_MAX_FILES = 1_000_000
DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024

Stat = tuple[int, int]  # (size, mtime_ns)


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

    def listing(self) -> dict[str, Stat]:
        """Every record file (relative path with '/') and its stat; names starting with '.' or '_' skipped."""
        out: dict[str, Stat] = {}
        stack = [("", self.root)]
        limit = self.max_files
        while stack:
            prefix, folder = stack.pop()
            try:
                it = os.scandir(folder)
            except FileNotFoundError:
                if not prefix:
                    raise StoreUnavailable(self.root, "the store folder does not exist") from None
                continue  # a folder removed while we walk
            except NotADirectoryError:
                raise StoreUnavailable(self.root, "the store path is not a folder") from None
            except PermissionError as exc:
                raise StoreUnavailable(folder, f"cannot list the folder ({exc.strerror})") from None
            with it:
                for entry in it:
                    name = entry.name
                    if name[0] in "._":
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((prefix + name + "/", entry.path))
                    elif name.endswith(".md"):
                        try:
                            st = entry.stat()
                        except FileNotFoundError:
                            continue
                        out[prefix + name] = (st.st_size, st.st_mtime_ns)
            if len(out) > limit:
                raise ScanLimitExceeded("max_files", len(out), limit)
        return out

    def changes(self, known: Mapping[str, Stat]) -> ScanDelta:
        listing = self.listing()
        changed = {path: st for path, st in listing.items() if known.get(path) != st}
        removed = [path for path in known if path not in listing] if len(listing) != len(known) or changed else []
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
    ) -> None:
        self.root = root
        self.state = state
        self.source: ChangeSource = source or StatWalk(root)
        self.max_file_bytes = max_file_bytes
        self.files: dict[str, FileEntry] = {}
        self._stats: dict[str, Stat] = {}
        self._loaded = False
        self.reads = 0  # files read since the engine started (observability for tests and benchmarks)
        self.parses = 0  # frontmatter parses since the engine started

    def _load_cache(self) -> None:
        rows = self.state.conn.execute(
            "SELECT path, size, mtime_ns, sha256, meta, body_line, problem_code, problem FROM scan_files_v1"
        )
        for path, size, mtime_ns, sha, meta, body_line, problem_code, problem in rows:
            entry = FileEntry(
                (size, mtime_ns),
                sha,
                json.loads(meta) if meta is not None else None,
                body_line or 0,
                FileProblem(problem_code, problem) if problem_code else None,
            )
            entry.rebuild(path)
            self.files[path] = entry
            self._stats[path] = entry.stat
        self._loaded = True

    def scan(self) -> tuple[set[str], dict[str, str]]:
        """Bring ``files`` up to date: (paths whose content changed or vanished, bodies read this time)."""
        if not self._loaded:
            self._load_cache()
        delta = self.source.changes(self._stats)
        touched: set[str] = set()
        bodies: dict[str, str] = {}
        writes: list[tuple[Any, ...]] = []
        for path, st in delta.changed.items():
            entry = self.files.get(path)
            fresh = self._read(path, st, entry, bodies)
            if fresh is None:  # vanished between the walk and the read
                if path in self.files:
                    delta.removed.append(path)
                continue
            if entry is None or fresh.sha256 != entry.sha256 or fresh.problem != entry.problem:
                touched.add(path)
                fresh.rebuild(path)
                self.files[path] = fresh
            else:
                entry.stat = st
                fresh = entry
            self._stats[path] = st
            writes.append(_cache_row(path, fresh))
        for path in delta.removed:
            if self.files.pop(path, None) is not None:
                touched.add(path)
            self._stats.pop(path, None)
        if writes or delta.removed:
            with self.state.transaction() as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO scan_files_v1 "
                    "(path, size, mtime_ns, sha256, meta, body_line, problem_code, problem) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    writes,
                )
                conn.executemany("DELETE FROM scan_files_v1 WHERE path = ?", [(p,) for p in delta.removed])
        return touched, bodies

    def _read(self, path: str, st: Stat, old: FileEntry | None, bodies: dict[str, str]) -> FileEntry | None:
        if st[0] > self.max_file_bytes:
            problem = FileProblem(
                "file_too_large", f"{st[0]:,} bytes is over the {self.max_file_bytes:,}-byte limit for a record"
            )
            return FileEntry(st, None, None, 0, problem)
        try:
            with open(os.path.join(self.root, path), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return FileEntry(st, None, None, 0, FileProblem("unreadable", f"cannot read the file ({exc.strerror})"))
        self.reads += 1
        sha = hashlib.sha256(data).hexdigest()
        if old is not None and old.sha256 == sha and old.problem is None:
            return FileEntry(st, sha, old.meta, old.body_line, None)
        self.parses += 1
        loaded = load_frontmatter(data)
        if isinstance(loaded, FileProblem):
            return FileEntry(st, sha, None, 0, loaded)
        meta, body, body_line = loaded
        bodies[path] = body
        return FileEntry(st, sha, meta, body_line)

    def read_body(self, path: str, sha256: str) -> str | None:
        """The body of a record file as it is now, or None if it no longer has this hash."""
        try:
            with open(os.path.join(self.root, path), "rb") as f:
                data = f.read()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != sha256:
            return None
        return body_of(data)


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
