"""Some rows of a keyword projection as a statement keeps to them: a range, a few ranges, or a JSON array.

``rows_among`` picks the form that lets FTS5 read the least of a phrase's rows (``Among``'s docstring says
why each form costs what it does); ``Among`` carries the SQL clause and its parameters.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from typing import cast

__all__ = ["EXTRA_CLAUSE", "Among", "extra_params", "merged_runs", "rows_among", "runs_among", "runs_of"]


class Among:
    """Some rows of a projection, as a query keeps to them (``hit_count``, ``matches_among``, ``counts_among``):
    a rowid range when they are every rowid of one (FTS5 then reads that stretch of a phrase's rows alone),
    else a JSON array SQLite reads with ``json_each`` (a query never writes a table for it, not even a TEMP one),
    within the range from their first rowid to their last (FTS5 reads that stretch alone: a folder's rows,
    indexed in order, lie close together). The unary + keeps FTS5 on one pass over the phrase's rows, each
    looked up in the array: without it, FTS5 would seek every listed rowid in the phrase's rows (11.5 s for
    14k rows and a word 90k rows hold).

    ``runs``: the ranges of rows that lie in a few (``rows_among``), each of which a count or a match without a
    score reads alone (FTS5 seeks to it: only the rows in them are read, none tested against the others), and
    ``extra`` the rows besides them, sought one by one.

    ``rows``: the rows of a JSON array themselves (None for a range), where a count or a match may look up
    the rows an expression matches instead (``looked_up_here``); the array's text is made when a statement
    first needs it (16 ms for a scope's 83k rows at 300k records, not needed where they are looked up here).
    """

    __slots__ = ("_params", "clause", "extra", "rows", "runs")

    def __init__(
        self,
        clause: str,
        params: tuple[int | str, ...] | None,
        rows: Collection[int] | None = None,
        runs: list[tuple[int, int]] | None = None,
        extra: tuple[int, ...] = (),
    ):
        self.clause, self._params, self.rows, self.runs, self.extra = clause, params, rows, runs, extra

    @property
    def params(self) -> tuple[int | str, ...]:
        if self._params is None:
            rows = cast(Collection[int], self.rows)
            self._params = (min(rows), max(rows), "[" + ",".join(map(str, rows)) + "]")
        return self._params

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Among) and (self.clause, self.params) == (other.clause, other.params)

    def __hash__(self) -> int:
        return hash((self.clause, self.params))

    def __repr__(self) -> str:
        return f"Among({self.clause!r}, {len(self.rows) if self.rows is not None else 'range'})"

    def looked_up_here(self, matching: int | None) -> bool:
        """Whether the rows an expression matches (at most ``matching`` of them, None: unknown) are better read
        as one JSON array and looked up in ``rows`` (~0.18 us a matching row at 300k records) than looked up by
        SQLite in its ``json_each`` of ``rows`` (~0.44 us a row of the array, which SQLite indexes again for
        every statement: 40 ms for a scope's 83k rows, where the word's 63k rows read here took 13 ms)."""
        return self.rows is not None and matching is not None and LOOKUP_RATIO * len(self.rows) > matching


LOOKUP_RATIO = 3  # (Among.looked_up_here: an array row costs SQLite ~3 times what a matching row read costs here)


def rows_among(rowids: Collection[int]) -> Among:
    """The rows as ``Among``: distinct rowids (a set), a range when they fill it, a few ranges and a few rows
    besides when they fill those (``runs_of``: a filter's rows, clustered as ``reconcile`` writes them, and the
    rows of records edited since, written after the others), else an array."""
    if rowids:
        low, high = min(rowids), max(rowids)
        if high - low + 1 == len(rowids):
            return Among("rowid BETWEEN ? AND ?", (low, high))
        found = runs_of(rowids)
        if found is not None:
            return runs_among(*found)
    rows = rowids if isinstance(rowids, (set, frozenset)) else set(rowids)  # (looked up: ``looked_up_here``)
    if not rows:
        return Among("+rowid IN (SELECT value FROM json_each(?))", ("[]",), rows)
    # within their range: FTS5 seeks to its start and stops at its end (a folder's rows lie close together)
    return Among("rowid BETWEEN ? AND ? AND +rowid IN (SELECT value FROM json_each(?))", None, rows)


def runs_among(ranges: list[tuple[int, int]], extra: tuple[int, ...]) -> Among:
    """The rows of some runs of rowids [(first, last)] and some rows besides, as ``rows_among`` gives them (``runs_of``:
    in order, none touching another)."""
    if not ranges and not extra:
        return rows_among(())
    ends = [*((ranges[0][0], ranges[-1][1]) if ranges else ()), *((extra[0], extra[-1]) if extra else ())]
    low, high = min(ends), max(ends)
    if len(ranges) == 1 and not extra:
        return Among("rowid BETWEEN ? AND ?", (low, high))
    # FTS5 reads the stretch from the first to the last; SQLite tests each row against a few ranges
    # (~0.02 us a range, where an array of 82k rows cost ~25 ms to index for every statement)
    either = ["rowid BETWEEN ? AND ?"] * len(ranges) + ([f"+rowid IN ({','.join('?' * len(extra))})"] if extra else [])
    params = (low, high, *itertools.chain(*ranges), *extra)
    return Among(f"rowid BETWEEN ? AND ? AND ({' OR '.join(either)})", params, runs=ranges, extra=extra)


def merged_runs(
    parts: list[tuple[list[tuple[int, int]], tuple[int, ...]]],
) -> tuple[list[tuple[int, int]], tuple[int, ...]] | None:
    """The runs of several sets of rows, each as ``runs_of`` gives them and none sharing a row, as ``runs_of`` gives
    their union (runs that touch joined); None past ``RUNS_AT_MOST`` ranges or ``EXTRA_AT_MOST`` rows besides."""
    spans = sorted([*(run for ranges, _ in parts for run in ranges), *((r, r) for _, extra in parts for r in extra)])
    joined: list[tuple[int, int]] = []
    for first, last in spans:
        if joined and joined[-1][1] + 1 == first:
            joined[-1] = (joined[-1][0], last)
        else:
            joined.append((first, last))
    ranges = [run for run in joined if run[1] - run[0] + 1 >= LONG_RUN]
    extra = tuple(r for first, last in joined if last - first + 1 < LONG_RUN for r in range(first, last + 1))
    return (ranges, extra) if len(ranges) <= RUNS_AT_MOST and len(extra) <= EXTRA_AT_MOST else None


EXTRA_CLAUSE = "rowid BETWEEN ? AND ? AND +rowid IN ({marks})"  # an Among's extra rows alone (``extra_params``)


def extra_params(extra: tuple[int, ...]) -> tuple[int, ...]:
    return (extra[0], extra[-1], *extra)  # (in order: the first and the last bound their range)


RUNS_AT_MOST = 16  # (rows_among: past this many ranges, testing each row against all of them costs more)
LONG_RUN = 32  # rows from which a run of consecutive rowids is passed as a range, not row by row
EXTRA_AT_MOST = 256  # rows in shorter runs passed one by one, at most


def runs_of(rowids: Collection[int]) -> tuple[list[tuple[int, int]], tuple[int, ...]] | None:
    """The distinct rowids as their runs of ``LONG_RUN`` consecutive values or more [(first, last)] and the
    rows of shorter runs, in order; None past ``RUNS_AT_MOST`` ranges or ``EXTRA_AT_MOST`` rows besides.

    Sorted, a stretch ``ordered[i..j]`` is one run exactly when ``ordered[j] - ordered[i] == j - i`` (distinct
    integers): stretches that are not are halved, so a few runs cost a few dozen steps after the sort."""
    ordered = sorted(rowids)
    ranges: list[tuple[int, int]] = []
    extra: list[int] = []
    run: tuple[int, int] | None = None  # the run being extended

    def close(first: int, last: int) -> bool:
        if last - first + 1 >= LONG_RUN:
            ranges.append((first, last))
        else:
            extra.extend(range(first, last + 1))
        return len(ranges) <= RUNS_AT_MOST and len(extra) <= EXTRA_AT_MOST

    todo = [(0, len(ordered) - 1)] if ordered else []
    while todo:  # (depth first, right half last in: runs come out in order)
        lo, hi = todo.pop()
        if ordered[hi] - ordered[lo] == hi - lo:
            if run is not None and run[1] == ordered[lo] - 1:
                run = (run[0], ordered[hi])
            else:
                if run is not None and not close(*run):
                    return None
                run = (ordered[lo], ordered[hi])
            continue
        mid = (lo + hi) // 2
        todo += [(mid + 1, hi), (lo, mid)]
    if run is not None and not close(*run):
        return None
    return ranges, tuple(extra)
