"""What changed in a keyword projection's rows, and what queries derived from them: patched, not derived again.

``ChangeLog`` logs the rows each reconcile deleted and inserted, by ``rows_version``: a count or a set kept at
an earlier version is brought up to date from those rows alone. ``DerivedMemo`` keeps what queries derive from
the rows and one snapshot (the rows a filter allows), and hands the previous snapshot's entry over with the
changes since (``carried``), for the caller to patch.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from knowtk.index.fts_tables import FtsTables

__all__ = ["MEMO_ENTRIES", "PATCH_SHARE", "ChangeLog", "DerivedMemo"]

MEMO_ENTRIES = 16  # derived sets kept per projection (each can hold a rowid per record)
PATCH_SHARE = 0.1  # kept counts are patched across changes of up to this share of the rows, dropped beyond


class ChangeLog:
    """The rows reconciles deleted and inserted, as (rows_version after, rowids deleted, rowids inserted), since
    rows version ``start``: a count kept at that version or later is brought up to date from them alone."""

    def __init__(self, tables: FtsTables) -> None:
        self.tables = tables
        self.entries: list[tuple[int, tuple[int, ...], range]] = []
        self.start = 0

    def restart(self) -> None:
        """Rows loaded afresh: no count kept before is patched."""
        self.entries, self.start = [], self.tables.rows_version

    def record(self, deleted: list[int], inserted: range, kept_versions: list[int], row_count: int) -> None:
        """Log the rows a reconcile deleted and inserted (the rows version is bumped already); ``kept_versions``:
        the versions of the counts and memo kept, ``row_count``: the rows now."""
        rows_version = self.tables.rows_version
        # the log starts at the oldest count or memo kept: earlier changes are in all of them already
        oldest = min((at for at in kept_versions if at >= self.start), default=rows_version - 1)
        self.entries = [c for c in self.entries if c[0] > oldest]
        self.start = max(self.start, oldest)
        self.entries.append((rows_version, tuple(deleted), inserted))
        if sum(len(d) + len(i) for _, d, i in self.entries) > PATCH_SHARE * max(row_count, 1):
            self.restart()  # many rows changed: ranking afresh costs less

    def since(self, at: int) -> tuple[set[int], set[int]] | None:
        """(rowids deleted, rowids inserted and present now) since rows version ``at``; None when the log does not
        reach back to it. A row changed is deleted and inserted again (under a new rowid, or the same one)."""
        if at < self.start:
            return None
        deleted: set[int] = set()
        inserted: set[int] = set()
        for version, gone, new in self.entries:
            if version > at:
                deleted.update(gone)
                inserted.difference_update(gone)
                inserted.update(new)
        return deleted, inserted


class DerivedMemo:
    """A cache for what queries derive from the rows and one snapshot generation, and the one it replaced."""

    def __init__(self, tables: FtsTables, changes: ChangeLog) -> None:
        self.tables, self.changes = tables, changes
        self.key: tuple[int, int] | None = None  # (snapshot generation, rows_version) of ``entries``
        self.entries: dict[Hashable, Any] = {}
        self.before: tuple[tuple[int, int], dict[Hashable, Any]] | None = None  # the memo the last one replaced

    def memo(self, generation: int) -> dict[Hashable, Any]:
        """The cache of snapshot ``generation`` and the rows as they are.

        Emptied when the rows or the snapshot change, and when it grows past MEMO_ENTRIES.
        """
        key = (generation, self.tables.rows_version)
        if self.key != key or len(self.entries) >= MEMO_ENTRIES:
            if self.key is not None and self.key != key:
                self.before = (self.key, self.entries)
            self.key, self.entries = key, {}
        return self.entries

    def kept_version(self) -> int | None:
        """The rows version the memo's entries are of (None: it holds none)."""
        return self.key[1] if self.key is not None and self.entries else None

    def carried(self, key: Hashable, generation: int | None) -> tuple[Any, set[int], set[int]] | None:
        """An entry of the memo of snapshot ``generation`` (the one before the current memo's), with the rows
        deleted and inserted since it was made: what a caller needs to patch it instead of deriving it again.

        None when there is no such entry or the rows since are unknown (loaded afresh, or many changed).
        """
        before = self.before
        if generation is None or before is None or before[0][0] != generation or key not in before[1]:
            return None
        changes = self.changes.since(before[0][1])
        return None if changes is None else (before[1][key], *changes)
