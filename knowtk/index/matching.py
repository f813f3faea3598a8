"""Which rows of a keyword projection match a query, how many, and their ``bm25()``: read from the FTS5 index.

Counts and matches among some rows (``Among``) read only the stretches of a phrase's rows that can hold them;
large reads run in parallel with the query on the state's second connection (``ParallelRead``).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, cast

from knowtk.index.among import EXTRA_CLAUSE, Among, extra_params, rows_among
from knowtk.index.fts_tables import FtsTables, QueryTerms, quoted_phrase
from knowtk.index.parallel_read import ParallelRead
from knowtk.index.phrase_counts import PhraseCounts

if TYPE_CHECKING:  # numpy is imported by the scoring that needs arrays, not with the projection (a CLI grep)
    pass

__all__ = ["MAX_ROWID", "SCAN_FROM_ROWS", "SPLIT_FROM_ROWS", "TIES_ROWS", "Matches"]

# ``matching`` asks for this many rows or more in one pass over the expression's rows: FTS5 seeks each rowid of
# ``rowid IN (...)`` in every phrase's rows, which for a common word cost more than the pass
SCAN_FROM_ROWS = 200
TIES_ROWS = 256  # rows past the k-th that ``native_top`` fetches to see the k-th score's ties end
SPLIT_FROM_ROWS = 20_000  # rows from which ``native_top`` orders the table's two halves at once
MAX_ROWID = 2**63 - 1
WHOLES_KEPT = 4096  # phrases whose count in the whole table is kept (``hit_count``): a few ints each


class Matches:
    """The matching rows of a projection, their count and their scores, as SQLite's FTS5 index gives them."""

    def __init__(self, tables: FtsTables, tokens: Mapping[int, int], counts: PhraseCounts) -> None:
        self.tables, self.tokens, self.counts = tables, tokens, counts
        self.middle: tuple[int, int] | None = None  # (rows_version, the rowid ``native_top`` splits the table at)
        # (expression, rows_version, its every matching row read in parallel): ``every_match_in_parallel``, the last
        self.every_match: tuple[str, int, ParallelRead[list[int]]] | None = None
        # (rows_version, phrase -> rows of the whole table holding it): ``hit_count``'s, each read once a rows version
        self.wholes: tuple[int, dict[tuple[str, ...], int]] = (-1, {})
        # (rows_version, expression -> rows of the whole table it matches): ``match_count``'s, kept the same way
        self.whole_matches: tuple[int, dict[str, int]] = (-1, {})

    def body_matches(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        """The rows among ``rowids`` where some phrase of the query stands in the body (from the index alone)."""
        rowids = list(rowids)
        if not rowids:
            return set()
        phrases = " OR ".join(quoted_phrase(p) for p in terms.phrases)
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT rowid FROM {self.tables.fts} WHERE {self.tables.fts} MATCH ? AND rowid IN ({marks})"
        return {r for (r,) in self.tables.conn.execute(sql, [f"body : ({phrases})", *rowids])}

    def matching(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        """The rows among ``rowids`` that match.

        When every phrase's counts are kept, they hold every row that matches it: the answer is read from them
        (FTS5 would seek each of the rows in a common word's long doclist). From ``SCAN_FROM_ROWS`` rows on,
        one pass over the expression's rows looks each up among them (``matches_among``); fewer are sought
        one by one (``rowid IN (...)``, in chunks: SQLite bounds the number of parameters).
        """
        rowids = list(rowids)
        kept = [self.counts.kept(phrase) for phrase in terms.phrases]
        if rowids and all(k is not None for k in kept):
            import numpy as np

            asked = np.fromiter(rowids, np.int64, len(rowids))
            held = [np.isin(asked, k[0]) for k in kept if k is not None]
            hit = np.logical_or.reduce(held) if terms.mode == "any" else np.logical_and.reduce(held)
            return set(asked[hit].tolist())
        return self._read_matching(terms, rowids)(self.tables.conn)

    def matching_in_parallel(self, terms: QueryTerms, rowids: Iterable[int]) -> ParallelRead[set[int]]:
        """``matching``, read beside the query (``ParallelRead``) where the phrases' counts do not answer it here."""
        rowids = list(rowids)
        if rowids and all(self.counts.has_counts(phrase) for phrase in terms.phrases):
            found = self.matching(terms, rowids)
            return ParallelRead(self.tables, lambda conn: found, beside=False)
        return ParallelRead(self.tables, self._read_matching(terms, rowids))

    def _read_matching(self, terms: QueryTerms, rowids: list[int]) -> Callable[[sqlite3.Connection], set[int]]:
        """``matching`` from the index, on a connection: many rows in one pass, a few sought one by one."""
        if len(rowids) >= SCAN_FROM_ROWS:  # one pass over the expression's rows, each looked up among them
            among = rows_among(set(rowids))
            return lambda conn: self.matches_among(terms, among, conn=conn)

        def sought(conn: sqlite3.Connection) -> set[int]:
            out: set[int] = set()
            for i in range(0, len(rowids), 10_000):
                chunk = rowids[i : i + 10_000]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT rowid FROM {self.tables.fts} WHERE {self.tables.fts} MATCH ? AND rowid IN ({marks})"
                out.update(r for (r,) in conn.execute(sql, [terms.expression, *chunk]))
            return out

        return sought

    def native_rows(self, terms: QueryTerms) -> list[tuple[int, float]]:
        """(rowid, bm25() as SQLite gives it, i.e. minus the score) of every match."""
        sql = self.tables.scored_sql()
        return self.tables.conn.execute(sql, (terms.expression,)).fetchall()

    def native_top(self, terms: QueryTerms, k: int) -> list[tuple[int, float]] | None:
        """``native_rows`` of the k best scores, every row tied with the k-th included: SQLite orders every
        match and hands over the first k + ``TIES_ROWS`` (a common word's 140k rows are not made into Python
        tuples); None when the k-th best score ties past them (every row is then needed to break the tie by id).

        A large table is ordered in two halves of its rowids at once, the lower one beside the query (``ParallelRead``:
        on the other core; each half's scores are the whole table's, so the best of the two halves' best are the
        table's best)."""
        if k < 1:
            return None
        limit = k + TIES_ROWS
        sql = self.tables.scored_sql(" AND rowid BETWEEN ? AND ? ORDER BY score LIMIT ?")
        expression, mid = terms.expression, self._middle_rowid()
        if mid is None:
            halves = [self.tables.conn.execute(sql, (expression, 0, MAX_ROWID, limit)).fetchall()]
        else:

            def lower(conn: sqlite3.Connection) -> list[tuple[int, float]]:
                return conn.execute(sql, (expression, 0, mid, limit)).fetchall()

            lower_half = ParallelRead(self.tables, lower)
            upper: list[tuple[int, float]] = self.tables.conn.execute(
                sql, (expression, mid + 1, MAX_ROWID, limit)
            ).fetchall()
            halves = [lower_half.result(), upper]
        rows = sorted(itertools.chain.from_iterable(halves), key=lambda row: row[1])
        if len(rows) <= k:
            return rows
        kth = rows[k - 1][1]
        if any(len(half) == limit and half[-1][1] <= kth for half in halves):
            return None  # a half's rows past those handed over may tie with the k-th
        end = next((i for i in range(k, len(rows)) if rows[i][1] != kth), None)
        return rows if end is None else rows[:end]

    def _middle_rowid(self) -> int | None:
        """The rowid splitting the table in two halves for ``native_top`` (None: too small to be worth it)."""
        n = len(self.tokens)
        if n < SPLIT_FROM_ROWS:
            return None
        if self.middle is None or self.middle[0] != self.tables.rows_version:
            top = self.tables.conn.execute(f"SELECT max(rowid) FROM {self.tables.rows}").fetchone()[0] or 0
            self.middle = (self.tables.rows_version, top // 2)
        return self.middle[1]

    def top_among(
        self, terms: QueryTerms, among: Among, limit: int, *, conn: sqlite3.Connection | None = None
    ) -> list[tuple[int, float]]:
        """``native_rows`` of the rows among some (``rows_among``) that match, the ``limit`` best by ``bm25()``
        (over the whole table's statistics) first: SQLite scores every one and hands over those alone."""
        sql = self.tables.scored_sql(f" AND {among.clause} ORDER BY score LIMIT ?")
        params = (terms.expression, *among.params, limit)
        return (conn or self.tables.conn).execute(sql, params).fetchall()

    def match_count(self, terms: QueryTerms, among: Among | None = None) -> int:
        """How many rows match (no score computed); ``among``: how many of some rows (``rows_among``)."""
        if among is not None:
            return self.count(terms.expression, among)
        version, known = self.whole_matches
        if version != self.tables.rows_version:
            known = {}
            self.whole_matches = (self.tables.rows_version, known)
        found = known.get(terms.expression)
        if found is None:  # kept: a query asked again counts its matches no more than its first call did
            expected = self.every_match
            if expected is not None and expected[:2] == (terms.expression, self.tables.rows_version):
                found = len(expected[2].result())  # (every matching row, read in parallel: ``every_match_in_parallel``)
            else:
                found = self.count(terms.expression, None)
            if len(known) >= WHOLES_KEPT:
                known.clear()
            known[terms.expression] = found
        return found

    def every_match_in_parallel(self, terms: QueryTerms) -> ParallelRead[list[int]]:
        """Every row the query's expression matches, read beside the query (``ParallelRead``); this table's
        ``match_count`` of the expression is then its length, until the rows change."""
        expression = terms.expression
        every = ParallelRead(self.tables, lambda conn: self.rowids_matching(expression, conn=conn))
        self.every_match = (expression, self.tables.rows_version, every)
        return every

    def any_match(self, terms: QueryTerms) -> bool:
        """Whether any row matches: SQLite stops at the first, and an expression holding a word no row holds
        ends before it starts."""
        sql = f"SELECT 1 FROM {self.tables.fts} WHERE {self.tables.fts} MATCH ? LIMIT 1"
        return self.tables.conn.execute(sql, (terms.expression,)).fetchone() is not None

    def count(self, expression: str, among: Among | None, *, conn: sqlite3.Connection | None = None) -> int:
        """How many rows (of the whole table, or among some) an expression matches; a few ranges of rows are
        counted one by one (``Among.runs``: no row outside them read)."""
        conn = conn or self.tables.conn
        sql = f"SELECT count(*) FROM {self.tables.fts} WHERE {self.tables.fts} MATCH ?"
        if among is None:
            return int(conn.execute(sql, (expression,)).fetchone()[0])
        if among.runs is not None:
            found = sum(
                int(conn.execute(f"{sql} AND rowid BETWEEN ? AND ?", (expression, *run)).fetchone()[0])
                for run in among.runs
            )
            if among.extra:  # (within their own range: edited records' rows lie together, after the others)
                rest = f"{sql} AND {EXTRA_CLAUSE.format(marks=','.join('?' * len(among.extra)))}"
                found += int(conn.execute(rest, (expression, *extra_params(among.extra))).fetchone()[0])
            return found
        return int(conn.execute(f"{sql} AND {among.clause}", (expression, *among.params)).fetchone()[0])

    def fewer_than(self, phrase: tuple[str, ...], limit: int) -> bool:
        """Whether fewer than ``limit`` rows hold the phrase: from its count where kept (``hit_count``), else by
        reading at most ``limit`` of its rows (a common word's count cost a query ~10 ms a word at 300k records);
        fewer than ``limit`` read are every row holding it, kept as its count."""
        known = self._wholes()
        found = known.get(phrase)
        if found is None:
            fts = self.tables.fts
            sql = f"SELECT count(*) FROM (SELECT rowid FROM {fts} WHERE {fts} MATCH ? LIMIT ?)"
            read = int(self.tables.conn.execute(sql, (quoted_phrase(phrase), limit)).fetchone()[0])
            if read >= limit:
                return False
            found = self._keep_whole(known, phrase, read)
        return found < limit

    def hit_count(self, phrase: tuple[str, ...], among: Among | None = None, *, whole: int | None = None) -> int:
        """How many rows hold the phrase: in the whole table (``among`` None, the n_hit of ``bm25()``'s IDF),
        or among some rows (``rows_among``), counted by SQLite without scoring them; ``whole``: how many hold
        it in the whole table, when known (then the rows holding it may be looked up here instead)."""
        expression = quoted_phrase(phrase)
        if among is None:  # kept: a query asked again, or another holding the word, counts no common word again
            known = self._wholes()
            found = known.get(phrase)
            if found is None:
                found = self._keep_whole(known, phrase, self.count(expression, None))
            return found
        if among.looked_up_here(whole):
            return sum(map(cast(Collection[int], among.rows).__contains__, self.rowids_matching(expression)))
        return self.count(expression, among)

    def _wholes(self) -> dict[tuple[str, ...], int]:
        """phrase -> rows of the whole table holding it, kept while the rows are as they are."""
        version, known = self.wholes
        if version != self.tables.rows_version:
            known = {}
            self.wholes = (self.tables.rows_version, known)
        return known

    @staticmethod
    def _keep_whole(known: dict[tuple[str, ...], int], phrase: tuple[str, ...], count: int) -> int:
        if len(known) >= WHOLES_KEPT:
            known.clear()
        known[phrase] = count
        return count

    def matches_among(
        self,
        terms: QueryTerms,
        among: Among,
        *,
        at_most: int | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> set[int]:
        """The rows among some (``rows_among``) that match the query's whole expression; ``at_most``: how many
        rows of the whole table it matches at most, when known (as ``hit_count``'s ``whole``)."""
        if among.looked_up_here(at_most):
            rows = cast(Collection[int], among.rows)
            return set(filter(rows.__contains__, self.rowids_matching(terms.expression, conn=conn)))
        conn = conn or self.tables.conn
        sql = f"SELECT rowid FROM {self.tables.fts} WHERE {self.tables.fts} MATCH ? AND "
        if among.runs is not None:  # (each range read alone, as ``count`` reads them)
            found = {
                r
                for run in among.runs
                for (r,) in conn.execute(sql + "rowid BETWEEN ? AND ?", (terms.expression, *run))
            }
            if among.extra:
                rest = sql + EXTRA_CLAUSE.format(marks=",".join("?" * len(among.extra)))
                found.update(r for (r,) in conn.execute(rest, (terms.expression, *extra_params(among.extra))))
            return found
        return {r for (r,) in conn.execute(sql + among.clause, (terms.expression, *among.params))}

    def rowids_matching(self, expression: str, *, conn: sqlite3.Connection | None = None) -> list[int]:
        """Every rowid an expression matches, read as one JSON array (a tuple a row cost twice as much)."""
        sql = f"SELECT json_group_array(rowid) FROM {self.tables.fts} WHERE {self.tables.fts} MATCH ?"
        found = json.loads((conn or self.tables.conn).execute(sql, (expression,)).fetchone()[0])
        if not isinstance(found, list):
            raise sqlite3.DatabaseError(f"{self.tables.fts}: json_group_array gave {type(found).__name__}")
        return found

    def counts_among(self, phrase: tuple[str, ...], among: Among, *, hits: int) -> dict[int, float]:
        """rowid -> weighted count of the phrase, for the rows among some (``rows_among``) that hold it.

        ``bm25()`` is computed only for the rows that pass the WHERE, and its value for a row is the one the
        whole table's query gives (FTS5 takes N, avgdl and the phrase's row count from the whole table), so
        the counts are solved as ``plain_counts`` solves them, with ``hits`` (``hit_count(phrase)``, the rows
        holding it in the whole table) as the IDF's n_hit.
        """
        return self.counts.counts_of(self.scored_among(phrase, among, hits=hits), hits=hits)

    def scored_among(
        self, phrase: tuple[str, ...], among: Among, *, hits: int, conn: sqlite3.Connection | None = None
    ) -> list[tuple[int, float]]:
        """``bm25()`` of the phrase alone for the rows among some that hold it, which ``counts_among`` solves."""
        conn = conn or self.tables.conn
        expression = quoted_phrase(phrase)
        if among.looked_up_here(hits):  # SQLite scores only the rows holding it, found here (``Among``)
            rows_in = cast(Collection[int], among.rows)
            among = rows_among(list(filter(rows_in.__contains__, self.rowids_matching(expression, conn=conn))))
        sql = self.tables.scored_sql(f" AND {among.clause}")
        rows: list[tuple[int, float]] = conn.execute(sql, (expression, *among.params)).fetchall()
        return rows
