"""Each row's weighted count of a phrase, solved from SQLite's own ``bm25()`` of the phrase alone, and kept.

For a matching row ``bm25()`` is ``idf * w * (k1 + 1) / (w + K)`` with ``K = k1 * (1 - b + b * D / avgdl)``
(``K1``, ``B``, ``WEIGHTS``: ``knowtk.index.fts_tables``): w is an integer and the score strictly increases with
it, so solving for w and rounding gives it exactly. A phrase's counts are kept (``PhraseCounts.kept_counts``)
and patched across reconciles from the rows they changed (``knowtk.index.row_changes``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from knowtk.index.fts_tables import K1, B, FtsTables, columns, quoted_phrase
from knowtk.index.row_arrays import RowArrays
from knowtk.index.row_changes import ChangeLog
from knowtk.index.stored_rows import StoredRows

if TYPE_CHECKING:  # numpy is imported by the scoring that needs arrays, not with the projection (a CLI grep)
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["PHRASE_ENTRIES", "PhraseCounts"]

PHRASE_ENTRIES = 32  # phrases whose per-row counts are kept (16 bytes per row holding the phrase)


class PhraseCounts:
    """A projection's per-row counts of phrases: solved from ``bm25()``, kept per phrase, patched to the rows."""

    def __init__(
        self,
        tables: FtsTables,
        stored_rows: StoredRows,
        tokens: Mapping[int, int],
        arrays: RowArrays,
        changes: ChangeLog,
    ) -> None:
        self.tables, self.stored_rows, self.tokens, self.arrays, self.changes = (
            tables,
            stored_rows,
            tokens,
            arrays,
            changes,
        )
        # phrase -> (rowids holding it, their weighted counts, the rows_version they are of): patched to the rows
        # as they are at the phrase's next use, from the change log (``kept``)
        self.kept_counts: dict[tuple[str, ...], tuple[NDArray[np.int64], NDArray[np.float64], int]] = {}

    def kept_versions(self) -> list[int]:
        """The rows versions of the counts kept (the change log reaches back to the oldest)."""
        return [at for _, _, at in self.kept_counts.values()]

    def counts_of(self, rows: list[tuple[int, float]], *, hits: int) -> dict[int, float]:
        """rowid -> weighted count of a phrase, solved from ``bm25()`` of that phrase alone for these rows
        (``hits``: the rows holding it in the whole table), as ``Matches.counts_among`` solves them."""
        out = self.solved_in_python(rows, hits=hits)
        if out is None:
            raise self.tables.disagreement()
        return out

    def term_frequencies(self, term: str, allowed: set[int] | None) -> dict[int, float]:
        """rowid -> weighted count of the term's instances (title 8, aliases 6, body 1)."""
        return self.phrase_frequencies((term,), allowed)

    def phrase_frequencies(self, phrase: tuple[str, ...], allowed: set[int] | None) -> dict[int, float]:
        """rowid -> weighted count w of the phrase's instances (title 8, aliases 6, body 1), for the allowed rows.

        Read back from SQLite's own ``bm25()`` of the phrase alone over the whole table, which for
        a matching row is ``idf * w * (k1 + 1) / (w + K)`` with ``K = k1 * (1 - b + b * D / avgdl)``:
        w is an integer and the score strictly increases with it, so solving for w and rounding
        gives it exactly. Phrase matching stays SQLite's, and a common word costs one pass over
        the rows that hold it instead of reading each of its (perhaps a million) instances.
        """
        rowids, counts = self.phrase_arrays(phrase, allowed)
        return dict(zip(rowids.tolist(), counts.tolist(), strict=True))

    def phrase_arrays(
        self, phrase: tuple[str, ...], allowed: set[int] | None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """``phrase_frequencies`` as (rowids, weighted counts) arrays, evaluated with numpy (same operations)."""
        rowids, counts = self.phrase_counts(phrase)
        if allowed is not None and len(rowids):
            keep = self.arrays.allowed_mask(allowed)[rowids]
            rowids, counts = rowids[keep], counts[keep]
        return rowids, counts

    def has_counts(self, phrase: tuple[str, ...]) -> bool:
        """True when the phrase's per-row counts are kept for the rows as they are (patched to them if need be)."""
        return self.kept(phrase) is not None

    def kept(self, phrase: tuple[str, ...]) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
        """The phrase's kept counts, brought up to the rows as they are; None when not kept or not patchable.

        A count belongs to one row's text, so across a reconcile only the deleted rows drop out and the
        inserted ones (a changed record is deleted and inserted again) are counted, by ``bm25()`` of the
        phrase over just those rows. The corpus figures (rows, tokens) are the mirror's, as for any query.
        """
        entry = self.kept_counts.get(phrase)
        if entry is None:
            return None
        rowids, counts, at = entry
        if at == self.tables.rows_version:
            return rowids, counts
        changes = self.changes.since(at)
        patched = None if changes is None else self._patched(phrase, rowids, counts, *changes)
        if patched is None:
            del self.kept_counts[phrase]
            return None
        self.kept_counts[phrase] = (*patched, self.tables.rows_version)
        return patched

    def _patched(
        self,
        phrase: tuple[str, ...],
        rowids: NDArray[np.int64],
        counts: NDArray[np.float64],
        deleted: set[int],
        inserted: set[int],
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
        """Kept counts made those of the rows as they are: ``deleted`` rows dropped, ``inserted`` ones counted."""
        import numpy as np

        if deleted and len(rowids):
            gone = np.fromiter(deleted, np.int64, len(deleted))
            if bool((rowids[1:] > rowids[:-1]).all()):  # in rowid order, as FTS5 gives them: found by bisection
                at = np.minimum(np.searchsorted(rowids, gone), len(rowids) - 1)
                at = at[rowids[at] == gone]
                rowids, counts = np.delete(rowids, at), np.delete(counts, at)
            else:
                keep = ~np.isin(rowids, gone)
                rowids, counts = rowids[keep], counts[keep]
        if not inserted:
            return rowids, counts
        # every row at or above the least inserted rowid is an inserted one (rowids are given from max + 1 on)
        sql = self.tables.scored_sql(" AND rowid >= ?")
        found = self.tables.conn.execute(sql, (quoted_phrase(phrase), min(inserted))).fetchall()
        if not found:
            return rowids, counts
        scores, new_rowids = columns(found)
        if not inserted.issuperset(new_rowids.tolist()):
            return None  # the rows are not what the log says: rank afresh
        new_counts = self.solved(scores, new_rowids, hits=len(rowids) + len(new_rowids))
        if new_counts is None:
            return None
        # still in rowid order: a row kept since ``at`` has a lower rowid than any inserted after it
        return np.concatenate([rowids, new_rowids]), np.concatenate([counts, new_counts])

    def phrase_counts(self, phrase: tuple[str, ...]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Every row holding the phrase and its weighted count, kept until the rows change (``rows_version``).

        A count belongs to a row's text alone, so it stays exact for as long as the rows do; a common
        word asked again (another filter, another query that holds it) costs no pass over its rows.
        """
        kept = self.kept(phrase)
        if kept is not None:
            return kept
        sql = self.tables.scored_sql()
        scores, rowids = columns(self.tables.conn.execute(sql, (quoted_phrase(phrase),)).fetchall())
        counts = self.solved(scores, rowids)
        if counts is None:
            raise self.tables.disagreement()
        self.keep_counts(phrase, rowids, counts)
        return rowids, counts

    def plain_counts(self, phrase: tuple[str, ...], limit: int) -> dict[int, float] | None:
        """rowid -> weighted count of the phrase, in plain Python, when fewer than ``limit`` rows hold it.

        None when its counts are kept already or ``limit`` rows or more hold it (those are then kept
        as arrays, as ``phrase_arrays`` would keep them). The same operations, in the same order, as
        ``solved`` (Python floats are the doubles numpy computes elementwise).
        """
        if self.has_counts(phrase):
            return None
        sql = self.tables.scored_sql()
        rows = self.tables.conn.execute(sql, (quoted_phrase(phrase),)).fetchall()
        if len(rows) >= limit:
            scores, rowids = columns(rows)
            counts = self.solved(scores, rowids)
            if counts is None:
                raise self.tables.disagreement()
            self.keep_counts(phrase, rowids, counts)
            return None
        out = self.solved_in_python(rows)
        if out is None:
            raise self.tables.disagreement()
        return out

    def counts_left(
        self, rows: list[tuple[int, float]], known: list[tuple[float, dict[int, float]]], idf: float
    ) -> dict[int, float] | None:
        """rowid -> weighted count of one phrase of a query, where the counts of the others are ``known``
        ([(IDF over the whole table, rowid -> count)]) and ``idf`` is its own, solved from ``bm25()`` of the
        whole query for these rows (``rows``): its score less the others' terms is this phrase's (to the
        rounding of a sum in another order, far below the 1e-3 a count must come within). None where a row
        does not solve to a whole count (then the phrase is counted as the others are)."""
        n_rows = len(self.tokens)
        if not n_rows or not self.stored_rows.total_tokens():
            return None
        avgdl = float(self.stored_rows.total_tokens()) / float(n_rows)
        tokens, k1, b = self.tokens, K1, B
        out: dict[int, float] = {}
        for rowid, score in rows:
            size = tokens.get(rowid)
            if size is None:
                return None
            norm = k1 * (1 - b + b * float(size) / avgdl)
            others = 0.0
            for weight, per_row in known:
                f = per_row.get(rowid, 0.0)
                others += weight * ((f * (k1 + 1.0)) / (f + norm))
            s = (-score - others) / idf
            f = norm * s / (k1 + 1.0 - s)
            count = float(round(f))
            if count < 0 or abs(f - count) > 1e-3:
                return None
            if count:
                out[rowid] = count
        return out

    def _avgdl_and_idf(self, n_hit: int) -> tuple[float, float] | None:
        """BM25's average row length and the IDF of a phrase in ``n_hit`` rows, as SQLite's ``bm25()`` takes
        them (a non-positive IDF floored); None when the rows are not loaded."""
        n_rows = len(self.tokens)
        if not n_rows or not self.stored_rows.total_tokens():
            return None
        avgdl = float(self.stored_rows.total_tokens()) / float(n_rows)
        idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        return avgdl, (idf if idf > 0.0 else 1e-6)

    def solved_in_python(self, rows: list[tuple[int, float]], *, hits: int | None = None) -> dict[int, float] | None:
        """rowid -> count solved from ``bm25()`` of one phrase; ``hits``: the rows holding it in the whole
        table when ``rows`` are only some of them (else all of them). None if out of step."""
        if not rows:
            return {}
        weights = self._avgdl_and_idf(len(rows) if hits is None else hits)
        if weights is None:
            return None
        avgdl, idf = weights
        self.stored_rows.prefetch([rowid for rowid, _ in rows])  # (their lengths read at once, not one by one)
        out: dict[int, float] = {}
        tokens, k1, b = self.tokens, K1, B  # locals: the same values, looked up faster
        for rowid, score in rows:
            size = tokens.get(rowid)
            if size is None:  # a row the mirror does not hold
                return None
            s = -score / idf
            f = k1 * (1 - b + b * float(size) / avgdl) * s / (k1 + 1.0 - s)
            count = float(round(f))
            if count < 1 or abs(f - count) > 1e-3:
                return None  # the table changed under the mirror (another process)
            out[rowid] = count
        return out

    def counts_from_scores(
        self, phrase: tuple[str, ...], scores: NDArray[np.float64], rowids: NDArray[np.int64]
    ) -> None:
        """Keep the phrase's counts read back from ``bm25()`` of the phrase alone (rows a query already fetched)."""
        counts = self.solved(scores, rowids)
        if counts is not None:  # rows out of step with the mirror are simply not kept
            self.keep_counts(phrase, rowids, counts)

    def keep_counts(self, phrase: tuple[str, ...], rowids: NDArray[np.int64], counts: NDArray[np.float64]) -> None:
        """Keep the phrase's counts of the rows as they are (``rows_version``): patched across changes (``kept``)."""
        self.kept_counts.pop(phrase, None)
        if len(self.kept_counts) >= PHRASE_ENTRIES:
            del self.kept_counts[next(iter(self.kept_counts))]  # the oldest
        self.kept_counts[phrase] = (rowids, counts, self.tables.rows_version)

    def solved(
        self, scores: NDArray[np.float64], rowids: NDArray[np.int64], *, hits: int | None = None
    ) -> NDArray[np.float64] | None:
        """Weighted counts solved from ``bm25()`` of one phrase; None if out of step.

        ``rowids`` are every row holding the phrase, or some of them when ``hits`` says how many hold it
        in the whole table (bm25()'s IDF counts them all).
        """
        if not len(rowids):
            return scores
        weights = self._avgdl_and_idf(len(rowids) if hits is None else hits)
        if weights is None:
            return None
        avgdl, idf = weights
        sizes = self.arrays.token_array()
        if int(rowids.max()) >= len(sizes):
            return None
        d = sizes[rowids]
        if (d < 0).any():  # a row the mirror does not hold
            return None
        import numpy as np

        s = -scores / idf
        f = K1 * (1 - B + B * d / avgdl) * s / (K1 + 1.0 - s)
        counts = np.rint(f)
        if (counts < 1).any() or (np.abs(f - counts) > 1e-3).any():
            return None  # the table changed under the mirror (another process)
        return counts
