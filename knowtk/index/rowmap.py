"""The rowmap: the rowid and tokens of each stored id's row, by the id's stored position, as a build wrote them.

A stored snapshot image lists its ids in a stored order (knowtk.snapshot.facets ``Positions``); when a build
writes every row of a projection, which rowid each id got is known without reading the rows, and is written
beside them (``keyword_rowmap_v1``). Triggers on the rows table log every rowid whose row may differ from it
since (``keyword_rowmap_log_v1``, ``knowtk.index.fts_storage``), so the rowmap and its log are the rows as they
are, whoever wrote them: a new process's first filter finds its rows by position without reading the table.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import sys
import zlib
from array import array
from collections.abc import Mapping, Sequence
from itertools import compress
from typing import Any, NamedTuple

from knowtk.index.filter_sums import SUMS_SCHEMA, SUMS_TABLE, FacetGroups, read_sums, stored_sums, summed_by_value
from knowtk.index.fts_tables import FtsTables
from knowtk.state import Contention, is_busy

__all__ = [
    "ROWMAP_CHANGES_MAX",
    "ROWMAP_LOG",
    "ROWMAP_LOG_SCHEMA",
    "ROWMAP_SCHEMA",
    "ROWMAP_TABLE",
    "RowMap",
    "Rowmaps",
    "packed_rowmap",
    "unpacked_rowmap",
]

ROWMAP_TABLE = "keyword_rowmap_v1"  # per projection: the rowid at each stored position (``Rowmaps.rowmap``)
ROWMAP_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {ROWMAP_TABLE} "
    "(projection TEXT PRIMARY KEY, base TEXT NOT NULL, top INTEGER NOT NULL, rowids BLOB)"
)
ROWMAP_LOG = "keyword_rowmap_log_v1"  # per projection: the rowids whose row may differ from its rowmap
ROWMAP_LOG_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {ROWMAP_LOG} "
    "(projection TEXT NOT NULL, rowid INTEGER NOT NULL, PRIMARY KEY (projection, rowid)) WITHOUT ROWID"
)
ROWMAP_CHANGES_MAX = 5000  # rows changed since the rowmap past which a filter's rows are found by id (read whole)
ROWMAP_TYPE = "i"  # 4-byte rowids and tokens, little-endian (past 2**31, none is stored: the rows are read instead)


class RowMap(NamedTuple):
    """By stored position (``Rowmaps.rowmap``): the rowid of each stored id's row as a build wrote them (0:
    none), and its tokens; ``changed``, the rowids whose row may differ since (deleted, written again), and
    ``newer``, the rows now at those rowids or past the build's (rowid -> id).

    ``held`` (a byte per stored position, 1 where it has a row) and ``positions`` (the stored position of each
    rowid the build wrote, from ``first``; -1: an id not stored) let a filter answer how many rows it allows and
    whether a row is one without making their set (``knowtk.index.filtered.AllowedRows``). A rowmap written
    without them has ``positions`` None."""

    rowids: array[int]
    tokens: array[int]
    changed: frozenset[int] = frozenset()
    newer: Mapping[int, str] = {}
    changed_at: Sequence[int] = ()  # the stored positions of the changed rowids
    top: int = 0  # the build's last rowid: a rowid past it is no build's (a reader refuses such a rowmap)
    held: bytes = b""
    positions: array[int] | None = None
    first: int = 0  # the build's first rowid (``positions[rowid - first]``)
    checksum: int = 0  # the stored rowmap's CRC-32 (0: written without positions): which build's it is

    def position_of(self, rowid: int) -> int:
        """The stored position of a rowid the build wrote (-1: none, or the rowmap has no positions); checked
        against ``rowids``, so a damaged rowmap answers -1 rather than another row's position."""
        positions, at = self.positions, rowid - self.first
        if positions is None or not 0 <= at < len(positions):
            return -1
        found = positions[at]
        return found if 0 <= found < len(self.rowids) and self.rowids[found] == rowid else -1


def unpacked_rowmap(
    data: bytes, size: int | None, changed: frozenset[int] = frozenset(), newer: Mapping[int, str] | None = None
) -> RowMap | None:
    """A stored rowmap back (``size``: how many stored ids, None: as many as it holds): the rowids then their
    tokens, and where written (``packed_rowmap``), a held byte per stored position, the position of each rowid
    written, then their count and checksum; None: not that many of the stored width, or a checksum that differs."""
    rowids, tokens, positions = array(ROWMAP_TYPE), array(ROWMAP_TYPE), array(ROWMAP_TYPE)
    if rowids.itemsize != 4:
        return None
    whole = _trailer(data)
    stored = whole if whole is not None else len(data) // 8  # (without a trailer: as an older build wrote it)
    if (size is not None and size != stored) or (whole is None and len(data) != 8 * stored):
        return None
    size = stored
    rowids.frombytes(data[: 4 * size])
    tokens.frombytes(data[4 * size : 8 * size])
    if whole is not None:
        positions.frombytes(data[9 * size : -8])
    if sys.byteorder != "little":
        for packed in (rowids, tokens, positions):
            packed.byteswap()
    if whole is None:
        return RowMap(rowids, tokens, changed, newer or {})
    checksum = int.from_bytes(data[-4:], "little")
    return RowMap(
        rowids, tokens, changed, newer or {}, held=data[8 * size : 9 * size], positions=positions, checksum=checksum
    )


def _trailer(data: bytes) -> int | None:
    """How many stored ids a rowmap with positions holds, from its trailer; None: not such a rowmap (its checksum
    differs, or its parts are not whole)."""
    if len(data) < 8 or zlib.crc32(memoryview(data)[:-4]) != int.from_bytes(data[-4:], "little"):
        return None
    size = int.from_bytes(data[-8:-4], "little")
    rest = len(data) - 9 * size - 8
    return size if rest >= 0 and rest % 4 == 0 else None


def packed_rowmap(rowids: array[int], tokens: array[int], first: int, written: int) -> bytes:
    """The stored form of a rowmap (``unpacked_rowmap``): the rowids and tokens by stored position, a byte per
    position (1: it has a row), the stored position of each of the ``written`` rowids from ``first`` (-1: its id
    is not stored), how many stored positions, then a CRC-32 of the rest. The positions cost a build a pass over
    the stored ids; a filter then tests a row in constant time, where making the set of the rows it allows cost
    15-20 ms at 300k records. The checksum (1 ms at 300k) stands for testing every rowid against the build's
    last (8 ms)."""
    positions = array(ROWMAP_TYPE, [-1]) * written
    for at, rowid in enumerate(rowids):
        if rowid:
            positions[rowid - first] = at
    held = bytes(map(bool, rowids))
    if sys.byteorder != "little":
        rowids, tokens = array(ROWMAP_TYPE, rowids), array(ROWMAP_TYPE, tokens)
        for packed in (rowids, tokens, positions):
            packed.byteswap()
    data = rowids.tobytes() + tokens.tobytes() + held + positions.tobytes() + len(rowids).to_bytes(4, "little")
    return data + zlib.crc32(data).to_bytes(4, "little")


class Rowmaps:
    """A projection's rowmap: read once a rows version, and written after a build that wrote every row."""

    def __init__(self, tables: FtsTables) -> None:
        self.tables = tables
        # (rows_version, stored ids' digest, the rowmap or None): ``rowmap``, read once a rows version
        self.last: tuple[int, str, RowMap | None] | None = None
        # (rows_version, the first rowid, the ids written from it in order, rowid -> tokens) when the last
        # reconcile wrote every row
        self.build: tuple[int, int, list[str], dict[int, int]] | None = None
        # (rows_version, base, facets digest, the rowmap's checksum, the sums or None): ``sums``, read once a rows
        # version and rowmap
        self.last_sums: tuple[int, str, str, int, dict[str, Any] | None] | None = None

    def rowmap(self, base: str, size: int) -> RowMap | None:
        """The rowid and tokens of the row of each stored id (0: none), by the stored position of the ids whose
        digest is ``base`` (knowtk.snapshot.facets ``Positions``), as a build wrote them, with what changed in
        the rows since (``RowMap.changed``, ``RowMap.newer``); None where none was written for those ids, or
        the rows changed too much since. The triggers log every change of the rows (``FtsStorage.create_triggers``),
        so the rowmap and its log are the rows as they are, whoever wrote them."""
        kept = self.last
        if kept is None or kept[0] != self.tables.rows_version or kept[1] != base:
            kept = self.last = (self.tables.rows_version, base, self.read(base, size))
        return kept[2] if kept[2] is not None and len(kept[2].rowids) == size else None

    def sums(self, base: str, size: int, facets: str) -> dict[str, Any] | None:
        """The build's tokens and rowid runs per facet value (``knowtk.index.filter_sums``) beside the rowmap
        ``rowmap`` answers, where written with it for these stored ids and facet columns (``facets``: the part's
        digest)."""
        rowmap = self.rowmap(base, size)
        if rowmap is None or not rowmap.checksum:
            return None
        kept, key = self.last_sums, (self.tables.rows_version, base, facets, rowmap.checksum)
        if kept is None or kept[:4] != key:
            try:
                with self.tables.state.reading():
                    self.tables.check_current()
                    found = read_sums(self.tables.conn, self.tables.key, base, facets, rowmap.checksum)
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    raise
                found = None
            kept = self.last_sums = (*key, found)
        return kept[4]

    def any_rowmap(self) -> RowMap | None:
        """The rowmap read at this rows version, else the rowmap of whatever stored ids it was written for."""
        kept = self.last
        rowmap = kept[2] if kept is not None and kept[0] == self.tables.rows_version else None
        return rowmap if rowmap is not None else self.read(None, None)

    def read(self, base: str | None, size: int | None) -> RowMap | None:
        """The rowmap (of any stored ids where ``base`` is None: its rows alone are wanted), read in the query's
        transaction; None where there is none (a state without its tables: the rows are read instead)."""
        try:
            with self.tables.state.reading():
                self.tables.check_current()
                return self._stored(base, size)
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise
            return None

    def _stored(self, base: str | None, size: int | None) -> RowMap | None:
        conn, key, rows_table = self.tables.conn, self.tables.key, self.tables.rows
        sql = f"SELECT base, top, rowids FROM {ROWMAP_TABLE} WHERE projection = ?"
        row = conn.execute(sql, (key,)).fetchone()
        if row is None or (base is not None and row[0] != base):
            return None
        if not isinstance(row[1], int) or not isinstance(row[2], bytes):
            return None
        changed = frozenset(r for (r,) in conn.execute(f"SELECT rowid FROM {ROWMAP_LOG} WHERE projection = ?", (key,)))
        if len(changed) > ROWMAP_CHANGES_MAX or not all(isinstance(r, int) for r in changed):
            return None
        # (a damaged top, or rowids past it, would make rows that are not there: a rowid past every row's is
        # no build's, since a row deleted since is logged)
        highest = conn.execute(f"SELECT max(rowid) FROM {rows_table}").fetchone()[0] or 0
        if row[1] > max(highest, max(changed, default=0)):
            return None
        sql = f"SELECT rowid, id FROM {rows_table} WHERE rowid > ? OR rowid IN (SELECT value FROM json_each(?))"
        newer = dict(conn.execute(sql, (row[1], json.dumps(sorted(changed)))).fetchall())
        if len(newer) > ROWMAP_CHANGES_MAX:
            return None
        found = unpacked_rowmap(row[2], size, changed, newer)
        if found is None:
            return None
        # (a rowid past the top is refused where the rowids are used, for the rows used: ``max`` of every
        # rowid here cost a new process's first filter 8 to 15 ms at 300k records; a rowmap with positions
        # has its checksum checked instead)
        found = found._replace(top=row[1], first=row[1] - len(found.positions) + 1 if found.positions else 0)
        if changed:  # where the logged rowids were (one pass in C)
            where = list(compress(itertools.count(), map(changed.__contains__, found.rowids)))
            found = found._replace(changed_at=where)
        return found

    def note_build(self, first: int, inserted: list[str], sizes: dict[int, int], *, whole: bool) -> None:
        """What the reconcile that just moved the rows version on wrote: every row (``whole``) from ``first`` on,
        so which id has which rowid is known without reading them; else nothing is kept."""
        self.build = (self.tables.rows_version, first, inserted, sizes) if whole else None

    def built_whole(self) -> bool:
        """Whether the last write of the rows wrote every one (and nothing moved the rows version on since)."""
        return self.build is not None and self.build[0] == self.tables.rows_version

    def write(self, base: str, stored: Sequence[str], facets: tuple[str, FacetGroups] | None = None) -> bool:
        """Write the rowmap of the stored ids ``stored`` (digest ``base``) when the last reconcile wrote every row
        (which rowid each id got, and its tokens, are known without reading the rows); False when it cannot be.
        ``facets``: (the digest of the image's facet columns, the stored positions of each facet value), of which
        the sums per value are written beside it (``knowtk.index.filter_sums``)."""
        tables, built = self.tables, self.build
        if built is None or built[0] != tables.rows_version:
            return False
        self.build = None  # (its ids and sizes are let go: written once)
        first, inserted, sizes = built[1:]
        rowid_of = dict(zip(inserted, itertools.count(first)))
        try:
            rowids = array(ROWMAP_TYPE, map(rowid_of.get, stored, itertools.repeat(0)))
            tokens = array(ROWMAP_TYPE, map(sizes.get, rowids, itertools.repeat(0)))
            packed = packed_rowmap(rowids, tokens, first, len(inserted))
        except OverflowError:
            return False
        finally:
            del rowid_of, sizes
        sums = None
        if facets is not None:
            text, check = stored_sums(summed_by_value(rowids, tokens, facets[1]))
            sums = (tables.key, base, facets[0], int.from_bytes(packed[-4:], "little"), text, check)
        try:
            with tables.state.transaction():
                if tables.state.data_version() != tables.loaded_at:
                    return False  # another process wrote since: its rows may be others
                tables.conn.execute(
                    f"INSERT OR REPLACE INTO {ROWMAP_TABLE} (projection, base, top, rowids) VALUES (?, ?, ?, ?)",
                    (tables.key, base, first + len(inserted) - 1, packed),
                )
                tables.conn.execute(f"DELETE FROM {ROWMAP_LOG} WHERE projection = ?", (tables.key,))
                tables.conn.execute(SUMS_SCHEMA)
                if sums is None:
                    tables.conn.execute(f"DELETE FROM {SUMS_TABLE} WHERE projection = ?", (tables.key,))
                else:
                    tables.conn.execute(
                        f"INSERT OR REPLACE INTO {SUMS_TABLE} (projection, base, facets, rowmap, sums, checksum) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        sums,
                    )
        except (sqlite3.Error, Contention):
            return False
        return True

    def clear(self) -> None:
        """Forget the stored rowmap and its log (in the caller's transaction)."""
        conn, key = self.tables.conn, self.tables.key
        conn.execute(f"DELETE FROM {ROWMAP_TABLE} WHERE projection = ?", (key,))
        conn.execute(f"DELETE FROM {ROWMAP_LOG} WHERE projection = ?", (key,))
        conn.execute(SUMS_SCHEMA)
        conn.execute(f"DELETE FROM {SUMS_TABLE} WHERE projection = ?", (key,))
