"""The scanner's cache table, ``scan_files_v1``: its schema, its rows, and the entries made from them.

A row is one record file's stat, hash, problem and parsed frontmatter (as JSON text). A new process
reads every row's stat columns (not the frontmatter) from the table's index, keeps them as they are
(``LazyEntries``) and makes a ``FileEntry`` of a row only when a query or a change needs it; the
frontmatter is read from the row when a query needs the record. ``scan_token`` in knowtk_meta is
bumped by every write to the table.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from knowtk.model.records import FileProblem
from knowtk.scan.entry import FileEntry
from knowtk.state import StateDB

__all__ = [
    "FILES_INDEX",
    "FILES_SCHEMA",
    "ROWS_SQL",
    "TOKEN_KEY",
    "LazyEntries",
    "cached_frontmatter",
    "entry_from_row",
    "files_row",
    "hashed_stats",
    "is_stat_row",
    "read_token",
    "stat_row",
]

# the columns of a scan_files_v1 row as an entry is made from it (``entry_from_row``; a pack holds the same)
ROWS_SQL = "SELECT path, size, mtime_ns, sha256, problem_code, problem FROM scan_files_v1"


def hashed_stats(conn: sqlite3.Connection) -> dict[str, tuple[int, int, str]]:
    """path -> (size, mtime_ns, sha256) of every file scan_files_v1 holds the hash of: a file at that path with
    those bytes and that stat is taken as read (a past store seeded from this state, ``knowtk.write.past_seed``)."""
    rows = conn.execute("SELECT path, size, mtime_ns, sha256 FROM scan_files_v1 WHERE sha256 IS NOT NULL")
    return {path: (size, mtime, sha) for path, size, mtime, sha in rows}


def is_stat_row(row: tuple[Any, ...]) -> bool:
    """Whether a scan_files_v1 row has the types ``entry_from_row`` takes (as ``unpacked_rows`` checks a pack's)."""
    return (
        len(row) == 6
        and type(row[0]) is str
        and type(row[1]) is int
        and type(row[2]) is int
        and (row[3] is None or type(row[3]) is str)
        and (row[4] is None or type(row[4]) is str)
    )


def entry_from_row(row: tuple[Any, ...]) -> FileEntry:
    """The entry of one scan_files_v1 row (path, size, mtime_ns, sha256, problem_code, problem)."""
    path, size, mtime_ns, sha, problem_code, problem = row
    if problem_code or sha is None:  # nothing to parse: complete now
        entry = FileEntry((size, mtime_ns), sha, None, 0, FileProblem(problem_code, problem) if problem_code else None)
        entry.rebuild(path)
        return entry
    return FileEntry((size, mtime_ns), sha)  # filled from the row's frontmatter when its record is needed


class LazyEntries:
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
                entry = self.made[path] = entry_from_row(row)
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
        out = {path: made.pop(path) if path in made else entry_from_row(row) for path, row in rows}
        out.update(made)  # the paths set anew, in the order they were set
        self.rows, self.made, self.added = {}, {}, 0
        return out


TOKEN_KEY = "scan_token"  # knowtk_meta key: bumped by every write to scan_files_v1


def stat_row(path: str, entry: FileEntry) -> tuple[Any, ...]:
    """The row ``_load_cache`` reads of a path (path, size, mtime_ns, sha256, problem_code, problem)."""
    problem = entry.problem
    return (
        path,
        entry.stat[0],
        entry.stat[1],
        entry.sha256,
        *((problem.code, problem.message) if problem else (None, None)),
    )


def read_token(state: StateDB) -> int:
    value = state.meta(TOKEN_KEY)
    return int(value) if value and value.isdigit() else 0


FILES_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS scan_files_v1 (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "mtime_ns INTEGER NOT NULL, sha256 TEXT, meta TEXT, body_line INTEGER, problem_code TEXT, problem TEXT)"
)


# what a new process reads of every row (not the frontmatter): read from this index, not the wide rows
FILES_INDEX = (
    "CREATE INDEX IF NOT EXISTS scan_files_v1_stat ON scan_files_v1 "
    "(path, size, mtime_ns, sha256, problem_code, problem)"
)


def cached_frontmatter(text: str | None) -> dict[str, Any] | None:
    """A row's frontmatter, or None when it cannot be taken (absent, or damaged: the file is read instead)."""
    if text is None:
        return None
    try:
        meta = json.loads(text)
    except ValueError:
        return None
    return meta if isinstance(meta, dict) else None


def files_row(path: str, entry: FileEntry) -> tuple[Any, ...]:
    """The row of scan_files_v1: ``stat_row``'s columns with the frontmatter and body line between."""
    stat = stat_row(path, entry)
    return (*stat[:4], entry.meta_json(), entry.body_line, *stat[4:])
