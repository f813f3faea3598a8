"""What a keyword projection has read of its rows table (id, rowid, sha256, tokens), by need: a row at a time,
or the whole table (``StoredRows``), and its columns as mappings (``RowsColumn``: id -> rowid, rowid -> tokens...).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence, ValuesView
from typing import Any

from knowtk.index.fts_tables import FtsTables, fts5_varints
from knowtk.state import is_busy

__all__ = ["IDS", "ID_OF", "SHAS", "TOKENS", "RowsColumn", "StoredRows"]

IDS, SHAS, ID_OF, TOKENS = range(
    4
)  # the four views of a rows table (``RowsColumn``), by their place in ``StoredRows.known``
LOAD_AFTER = 2000  # rows read one at a time (~6 us each at 100k) past which the whole table is read at once (~140 ms)
WHOLE_SHARE = 0.25  # rows prefetched past which share of the table the whole table is read instead
ABSENT: Any = object()  # a key known to be in no row
UNREAD: Any = object()


class StoredRows:
    """What a projection has read of its rows table, by need: a row at a time, or the whole table.

    A new process's first query needs a few rows (the ids of the hits it shows), not the 100k its open
    used to load (~150 ms). What was read belongs to one ``rows_version`` of the projection: a reload (another
    process wrote, a rollback) or a write of its own moves the rows version on and drops it, except a whole
    table, which a write of this projection patches (a long-lived process reads it once). A row is read
    in the query's transaction, after checking that no other process wrote since the projection was
    loaded (``FtsTables.check_current``): never a row of another version than the ones read before.

    The file hashes are read whole apart from the other columns (``load_shas``): a filter and a phrase's
    counts need ids, rowids and token counts of every row, and the 64-character hashes made reading the
    table whole ~25% slower for them.
    """

    def __init__(self, tables: FtsTables) -> None:
        self.tables = tables
        self.version = -1  # the rows_version of the projection what follows belongs to
        self.whole = False  # every row's id, rowid and tokens are in ``known``
        self.shas_whole = False  # every row's sha256 is in ``known``
        self.known: tuple[dict[Any, Any], ...] = ({}, {}, {}, {})  # ids, shas, id_of, tokens (or ABSENT)
        self.count: int | None = None
        self.total: int | None = None
        self.reads = 0
        self.columns: list[RowsColumn] = []

    def current(self) -> tuple[dict[Any, Any], ...]:
        """``known`` for the projection's present rows version (emptied when it moved on)."""
        if self.version != self.tables.rows_version:
            self.version, self.whole, self.shas_whole, self.known = (
                self.tables.rows_version,
                False,
                False,
                ({}, {}, {}, {}),
            )
            self.count = self.total = None
            self.reads = 0
            for column in self.columns:  # their lookups go through ``RowsColumn.get`` again
                column.__dict__.pop("get", None)
        return self.known

    def read(self, slot: int, sql: str, key: Any) -> Any:
        """One row's value (``ABSENT`` if none), read and kept; past LOAD_AFTER reads, the whole table."""
        self.reads += 1
        if self.reads > LOAD_AFTER:
            return self.load(slot)[slot].get(key, ABSENT)
        rows = self._select(sql, key)
        value = rows[0][0] if rows else ABSENT
        self.known[slot][key] = value
        return value

    def rowids_of(self, ids: Collection[str]) -> dict[str, int]:
        """id -> rowid of those of ``ids`` the table holds: from the whole table when read, else one query for
        them all (an index lookup each: a few thousand ids do not read a 300k-row table whole), kept."""
        known = self.current()[IDS]
        if not self.whole:
            unread = [rid for rid in ids if rid not in known]
            if unread:
                sql = f"SELECT id, rowid FROM {self.tables.rows} WHERE id IN (SELECT value FROM json_each(?))"
                found = dict(self._select(sql, json.dumps(unread)))
                for rid in unread:
                    known[rid] = found.get(rid, ABSENT)
        return {rid: rowid for rid in ids if (rowid := known.get(rid, ABSENT)) is not ABSENT}

    def prefetch(self, rowids: Collection[int]) -> None:
        """The id and tokens of these rows, read in one statement where not read yet (the rows a page is scored
        from: one at a time, past ``LOAD_AFTER`` of them, would read the table whole); past ``WHOLE_SHARE`` of
        the table's rows, the table whole (each row sought costs a few times a row of the whole table)."""
        known = self.current()
        if self.whole:
            return
        id_of, tokens = known[ID_OF], known[TOKENS]
        unread = [rowid for rowid in rowids if rowid not in id_of or rowid not in tokens]
        if not unread:
            return
        if len(unread) > LOAD_AFTER and len(unread) > WHOLE_SHARE * self.length():
            self.load_whole()
            return
        sql = f"SELECT rowid, id, tokens FROM {self.tables.rows} WHERE rowid IN (SELECT value FROM json_each(?))"
        found = {rowid: (rid, size) for rowid, rid, size in self._select(sql, json.dumps(unread))}
        for rowid in unread:
            rid, size = found.get(rowid, (ABSENT, ABSENT))
            id_of[rowid], tokens[rowid] = rid, size
            if rid is not ABSENT:
                known[IDS][rid] = rowid

    def is_whole(self, slot: int) -> bool:
        return self.shas_whole if slot == SHAS else self.whole

    def load(self, slot: int) -> tuple[dict[Any, Any], ...]:
        """``known`` with ``slot`` read whole."""
        return self.load_shas() if slot == SHAS else self.load_whole()

    def load_whole(self) -> tuple[dict[Any, Any], ...]:
        """``known`` with every row's id, rowid and tokens (the hashes read so far kept as they are)."""
        known = self.current()
        if self.whole:
            return known
        rowids, ids, tokens = self._columns()
        self.known = (
            dict(zip(ids, rowids, strict=True)),
            known[SHAS],
            dict(zip(rowids, ids, strict=True)),
            dict(zip(rowids, tokens, strict=True)),
        )
        self.whole, self.count = True, len(rowids)
        self._bind(IDS, ID_OF, TOKENS)
        return self.known

    def _columns(self) -> tuple[Sequence[Any], Sequence[Any], Sequence[Any]]:
        """Every row's rowid, id and tokens, aligned. Each column comes as one JSON array (the same scan, so the
        same order), parsed in C: a tuple per row cost about twice as much (a new process's first filter reads
        the table whole: 281k rows at 300k records). A value JSON cannot hold (a BLOB written into a damaged
        state) is read as before, row by row."""
        table = self.tables.rows
        try:
            arrays = self._select(
                f"SELECT json_group_array(rowid), json_group_array(id), json_group_array(tokens) FROM {table}"
            )[0]
        except sqlite3.OperationalError as exc:
            if is_busy(exc) or getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT:
                raise  # (the row by row read would meet it too)
            rows = self._select(f"SELECT rowid, id, tokens FROM {table}")
            return tuple(zip(*rows, strict=True)) if rows else ((), (), ())  # type: ignore[return-value]
        rowids, ids, tokens = (json.loads(array) for array in arrays)
        return rowids, ids, tokens

    def load_shas(self) -> tuple[dict[Any, Any], ...]:
        """``known`` with every row's sha256."""
        known = self.current()
        if self.shas_whole:
            return known
        shas = dict(self._select(f"SELECT id, sha256 FROM {self.tables.rows}"))
        self.known = (known[IDS], shas, known[ID_OF], known[TOKENS])
        self.shas_whole = True
        self._bind(SHAS)
        return self.known

    def select_one(self, sql: str, *params: Any) -> Any:
        """The first row of ``sql``, read as ``_select`` reads."""
        return self._select(sql, *params)[0]

    def _select(self, sql: str, *params: Any) -> list[Any]:
        """The rows of ``sql``, read in the query's transaction from the tables the rows were loaded from."""
        tables = self.tables
        with tables.state.reading():
            tables.check_current()
            return tables.conn.execute(sql, params).fetchall()

    def _bind(self, *slots: int) -> None:
        for column in self.columns:  # a lookup is then the dict's own (in C: a bulk caller maps over it)
            if column.slot in slots:
                column.__dict__["get"] = self.known[column.slot].get

    def length(self) -> int:
        self.current()
        if self.count is None:
            self.count = int(self._select(f"SELECT count(*) FROM {self.tables.rows}")[0][0])
        return self.count

    def total_tokens(self) -> int:
        """Tokens in every row: FTS5's own total (its averages record), read once per rows version.

        The record is current outside a write of the projection (FTS5 writes it when a write's savepoint or
        transaction ends); summing the rows table's column instead reads every row (~10 ms at 100k).
        """
        self.current()
        if self.total is None:
            if self.whole:
                self.total = sum(self.known[TOKENS].values())
            else:
                rows = self._select(f"SELECT block FROM {self.tables.fts}_data WHERE id = 1")
                self.total = sum(fts5_varints(rows[0][0])[1:]) if rows else 0
        return self.total

    def written(self, deleted: list[tuple[str, int]], inserted: Iterable[tuple[int, str, str, int]]) -> None:
        """The projection wrote these rows (its rows version moved on): a whole table is patched, rows read one at
        a time are dropped (read again from the table as it is now). The hashes read so far are patched too
        when the rest is whole: a hash of a row the write left alone is still its row's."""
        if not self.whole or self.version != self.tables.rows_version - 1:
            self.current()
            return
        ids, shas, id_of, tokens = self.known
        for rid, rowid in deleted:
            del ids[rid], id_of[rowid], tokens[rowid]
            shas.pop(rid, None)
        for rowid, rid, sha, size in inserted:
            ids[rid], shas[rid], id_of[rowid], tokens[rowid] = rowid, sha, rid, size
        self.version, self.count, self.total = self.tables.rows_version, len(ids), None


class RowsColumn(Mapping[Any, Any]):
    """One column of a projection's rows table by another (id -> rowid, rowid -> tokens, ...), read by need
    through ``StoredRows``: a lookup reads one row, an iteration the whole table."""

    def __init__(self, rows: StoredRows, slot: int, key: str, value: str) -> None:
        self._rows, self.slot = rows, slot
        self._sql = f"SELECT {value} FROM {rows.tables.rows} WHERE {key} = ?"
        rows.columns.append(self)

    def get(self, key: Any, default: Any = None) -> Any:
        rows = self._rows
        value = rows.current()[self.slot].get(key, ABSENT if rows.is_whole(self.slot) else UNREAD)
        if value is UNREAD:
            value = rows.read(self.slot, self._sql, key)
        return default if value is ABSENT else value

    def __getitem__(self, key: Any) -> Any:
        value = self.get(key, ABSENT)
        if value is ABSENT:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return self.get(key, ABSENT) is not ABSENT

    def __len__(self) -> int:
        return self._rows.length()

    def _whole(self) -> dict[Any, Any]:
        return self._rows.load(self.slot)[self.slot]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._whole())

    def keys(self) -> KeysView[Any]:
        return self._whole().keys()

    def items(self) -> ItemsView[Any, Any]:
        return self._whole().items()

    def values(self) -> ValuesView[Any]:
        return self._whole().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RowsColumn):
            other = other._whole()
        return self._whole() == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]
