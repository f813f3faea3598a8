"""Reads run in parallel with a query, on the state's second connection: SQLite works on the other core."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Generic, Protocol, TypeVar

from knowtk.state import StateDB

__all__ = ["PARALLEL_READS", "OnTable", "ParallelRead"]

T = TypeVar("T")

PARALLEL_READS = True  # (tests turn it off to compare)


class OnTable(Protocol):
    """An FTS5 table in a state (a keyword projection or its tables)."""

    @property
    def state(self) -> StateDB: ...

    @property
    def fts(self) -> str: ...


class ParallelRead(Generic[T]):
    """A read run beside the query, on the state's second connection in a thread of its own: SQLite works on
    the other core while this thread goes on (SQLite lets go of the interpreter while it steps).

    What it reads must be what the query reads: the query's own connection is in a transaction that wrote
    nothing (``StateDB.unwritten``), and the second connection's read transaction finds the FTS5 table's
    structure and averages records as the query's finds them (every write to the table rewrites both, its
    structure's cookie counting the writes). Else, or when the read fails, ``result`` runs ``read`` on the
    query's connection itself: the same answer, in turn.
    """

    def __init__(self, table: OnTable, read: Callable[[sqlite3.Connection], T], *, beside: bool = True) -> None:
        self.table, self.read = table, read
        self._value: list[T] = []
        self._thread: threading.Thread | None = None
        if beside and PARALLEL_READS and table.state.unwritten():
            self._marks = table.state.conn.execute(self._marks_sql()).fetchall()
            self._thread = threading.Thread(target=self._run, name="knowtk-parallel-read", daemon=True)
            self._thread.start()

    def _marks_sql(self) -> str:
        return f"SELECT id, block FROM {self.table.fts}_data WHERE id IN (1, 10) ORDER BY id"

    def _run(self) -> None:
        state = self.table.state
        with state.side_lock, suppress(Exception):  # (``result`` then reads it in turn, and raises what it raises)
            side = state.side_reader()
            side.execute("BEGIN")
            try:
                if side.execute(self._marks_sql()).fetchall() == self._marks:
                    self._value.append(self.read(side))
            finally:
                side.execute("ROLLBACK")

    def result(self) -> T:
        """What ``read`` gives over the query's state of the table (read here when it could not be read aside)."""
        if self._thread is not None:
            self._thread.join()
        return self._value[0] if self._value else self.read(self.table.state.conn)
