"""Keyword projections stored in SQLite FTS5: ``FtsProjection``, one FTS5 table and what is kept of it in memory.

The projections live in state.sqlite, each an FTS5 table (title, aliases,
body) beside a rows table (id, sha256, token count):

- ``keyword_fts_v1_root`` / ``keyword_rows_v1_root``: the searched records
  (available and active);
- ``keyword_history_fts_v1_root`` / ``keyword_history_rows_v1_root``: the
  available superseded records, which ``lifecycle: superseded``/``all``
  search directly and which the superseded-wording rule follows to their
  current replacement;
- ``keyword_expired_fts_v1_root`` / ``keyword_expired_rows_v1_root``: the
  records unavailable only because an expiry passed, which only a search at
  an instant (``validAt``) reads (``knowtk.engine.desired.ExpiredKeyword``), made by the first.

``reconcile`` brings a projection to a desired ``{id: sha256}`` set, touching
only the rows whose hash changed. A missing table or a changed fingerprint
(tokenizer, columns, format) drops and rebuilds the projection.

``FtsProjection`` loads and writes the tables; each other job is a part of it, in a module of its own: the
tables (``fts_storage``), the rows read by need (``stored_rows``), the image mark (``image_mark``), the rowmap
(``rowmap``), the change log and the per-snapshot memo (``row_changes``), arrays over the rows (``row_arrays``),
phrase counts (``phrase_counts``), matches and scores (``matching``) and the rows' texts (``texts``). Its
methods are the one surface the engine, the queries and ``knowtk.index.bm25`` use.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from knowtk.index.among import Among
from knowtk.index.filter_sums import FacetGroups
from knowtk.index.fts_storage import FtsStorage
from knowtk.index.fts_tables import FINGERPRINT, FtsTables, ProjectionChanged, QueryTerms, columns
from knowtk.index.image_mark import ImageMark, marked
from knowtk.index.matching import Matches
from knowtk.index.parallel_read import ParallelRead
from knowtk.index.phrase_counts import PhraseCounts
from knowtk.index.row_arrays import RowArrays
from knowtk.index.row_changes import ChangeLog, DerivedMemo
from knowtk.index.rowmap import RowMap, Rowmaps
from knowtk.index.stored_rows import ID_OF, IDS, SHAS, TOKENS, RowsColumn, StoredRows
from knowtk.index.texts import RowTexts
from knowtk.model.datevalues import format_utc
from knowtk.state import StateDB, now_utc

if TYPE_CHECKING:  # numpy is imported by the scoring that needs arrays, not with the projection (a CLI grep)
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["FtsProjection"]


class FtsProjection:
    """One FTS5 table plus its rows table, with what is kept of them in memory for fast reconcile and scoring."""

    def __init__(self, state: StateDB, family: str, suffix: str = "root") -> None:
        self.tables = tables = FtsTables(state, family, suffix)
        self.state, self.key, self.fts, self.rows = state, tables.key, tables.fts, tables.rows
        self.vocab, self.text, self.view = tables.vocab, tables.text, tables.view
        self.storage = FtsStorage(tables)
        # the rows table, read by need (``StoredRows``): a new process's first query reads the few rows it shows
        self.stored_rows = StoredRows(tables)
        self.ids: Mapping[str, int] = RowsColumn(self.stored_rows, IDS, "id", "rowid")  # id -> rowid
        self.shas: Mapping[str, str] = RowsColumn(self.stored_rows, SHAS, "id", "sha256")  # id -> sha256 of the file
        self.id_of: Mapping[int, str] = RowsColumn(self.stored_rows, ID_OF, "rowid", "id")
        self.tokens: Mapping[int, int] = RowsColumn(self.stored_rows, TOKENS, "rowid", "tokens")  # all columns
        self.marks = ImageMark(tables)
        self.rowmaps = Rowmaps(tables)
        self.changes = ChangeLog(tables)
        self.memos = DerivedMemo(tables, self.changes)
        self.arrays = RowArrays(tables, self.stored_rows, self.tokens, self.rowmaps)
        self.counts = PhraseCounts(tables, self.stored_rows, self.tokens, self.arrays, self.changes)
        self.matches = Matches(tables, self.tokens, self.counts)
        self.row_texts = RowTexts(tables)
        self.indexed_at: str | None = None
        self.rebuilds = 0  # rebuilds of a damaged projection (not counting the first creation)
        self.repairs: list[str] = []  # what was rebuilt and why (Store.check() reports them)

    @property
    def conn(self) -> sqlite3.Connection:
        return self.state.conn

    @property
    def rows_version(self) -> int:
        """Bumped whenever the rows held in memory change (a reload, a write): what is derived from them keeps it."""
        return self.tables.rows_version

    @property
    def image_mark(self) -> str | None:
        """The key of the stored snapshot image whose records the rows are exactly (``knowtk.index.image_mark``)."""
        return self.marks.value

    @property
    def damaged(self) -> bool:
        """Set when a query found the tables inconsistent: rebuilt by the next ``ensure``."""
        return self.tables.damaged

    @damaged.setter
    def damaged(self, value: bool) -> None:
        self.tables.damaged = value

    @property
    def total_tokens(self) -> int:
        """Tokens in every row (all columns): bm25()'s corpus length."""
        return self.stored_rows.total_tokens()

    # -- lifecycle of the tables -------------------------------------------------------------
    def invalidate(self) -> None:
        """Forget what is held in memory (after a rollback or a failure): it is loaded again at the next use."""
        self.tables.invalidate()

    def problems(self) -> list[str]:
        """What is wrong with the tables, by cheap checks (no FTS5 'integrity-check'): [] when they look whole."""
        return self.storage.problems()

    def verify(self, desired: Mapping[str, str]) -> list[str]:
        """``problems``, then FTS5's own integrity-check and the rows against ``desired`` and those held."""
        return self.storage.verify(desired, self.shas)

    def rebuild(self) -> None:
        """Take the tables for damaged: the next use drops and builds them again."""
        self.tables.damaged = True
        self.invalidate()

    def take_repairs(self) -> list[str]:
        """What was rebuilt and why since the last call (then forgotten)."""
        out, self.repairs = self.repairs, []
        return out

    def ensure(self) -> None:
        """Create or rebuild the tables when missing, damaged or of another fingerprint; load what is held.

        Runs in the query's transaction (or a read transaction of its own), so what is held is
        exactly the tables as this query reads them.
        """
        with self.state.reading():
            self._ensure()

    def _ensure(self) -> None:
        tables = self.tables
        version = self.state.data_version()
        if tables.loaded_at is not None and version == tables.loaded_at and not tables.damaged:
            return
        state = self.storage.stored_state()
        try:
            problems = self.storage.problems() if not tables.damaged else ["a query found it damaged"]
        except sqlite3.DatabaseError as exc:
            problems = [f"{type(exc).__name__}: {exc}"]
        if state is None or state[0] != FINGERPRINT or problems:
            if state is not None and state[0] == FINGERPRINT:
                self.repairs.append(f"{self.fts} rebuilt ({'; '.join(problems)})")
            with self.state.transaction():
                self.storage.create()
                self._clear_marks()
            self.rebuilds += state is not None
            tables.damaged = False
            state = (FINGERPRINT, None)
        if self.storage.triggers_missing():  # a state written before them: its mark cannot be taken on trust
            with self.state.transaction():
                self.storage.create_triggers()
                self._clear_marks()
        self.conn.execute(f"DROP TABLE IF EXISTS temp.{self.vocab}")  # it may point at a table dropped since
        self.conn.execute(f"CREATE VIRTUAL TABLE temp.{self.vocab} USING fts5vocab(main, {self.fts}, instance)")
        self.indexed_at = state[1]
        self.marks.load()
        # nothing of the rows is read here: bumping the rows version forgets what was read of them before
        tables.loaded_at = version
        tables.synced = None
        tables.rows_version += 1
        self.stored_rows.current()
        self.changes.restart()  # rows loaded afresh: no count kept before is patched

    def _clear_marks(self) -> None:
        """Forget the image mark and the rowmap (in the caller's transaction): the rows are not taken on trust."""
        self.marks.clear()
        self.rowmaps.clear()

    def reconcile(
        self,
        desired: Mapping[str, str],
        text_of: Callable[[str], tuple[str, str, str] | None],
        *,
        version: int = 0,
        since: tuple[int, Iterable[str]] | None = None,
        mark: str | None = None,
        unsure: Collection[str] = (),
        order: Callable[[list[str]], list[str]] | None = None,
    ) -> int:
        """Make the projection hold exactly ``desired`` ({id: sha256}); returns the rows written.

        The engine hands over the same map object, patched in place, with a ``version`` bumped at
        every patch, so an unchanged store costs an identity check here. ``since`` is (an earlier
        version, the ids at which ``desired`` may differ from it): when the projection holds
        exactly that version, only those ids are compared. ``mark`` names the stored image the rows are
        then exactly (``image_mark``), but at the ids ``unsure`` where they may differ from it (see
        ``unsure_of``). ``order``: the ids to write in the order their rows are given rowids (a build's
        rows clustered the way filters select them: ``rows_among`` reads a filter's rows as a few ranges).
        """
        self.ensure()
        tables = self.tables
        synced = desired is tables.synced
        if synced and version == tables.synced_version:
            return 0
        if since is not None and synced and since[0] == tables.synced_version:
            shas = self.shas
            ids = since[1]
            stale = [rid for rid in ids if rid in shas and desired.get(rid) != shas[rid]]
            fresh = [rid for rid in ids if rid in desired and shas.get(rid) != desired[rid]]
        else:
            stale = [rid for rid, sha in self.shas.items() if desired.get(rid) != sha]
            fresh = [rid for rid, sha in desired.items() if self.shas.get(rid) != sha]
        if order is not None and fresh:
            fresh = order(fresh)
        if not stale and not fresh:
            tables.synced, tables.synced_version = desired, version
            if mark is not None:  # the rows are that image's
                self.marks.record(mark, unsure)
            return 0
        with self.state.transaction():
            if self.state.data_version() != tables.loaded_at:  # another process wrote since the rows were loaded
                raise ProjectionChanged(f"{self.rows} changed before it could be written")
            gone = [(self.ids[rid],) for rid in stale]  # (rowid,) deleted
            written = self.storage.write(gone, fresh, text_of, desired)
            self.indexed_at = format_utc(now_utc())
            self.storage.stamp_indexed(self.indexed_at)
            self.marks.value = marked(mark, unsure) if written.complete and mark is not None else None
            self.marks.write(unsure)  # (after the rows: their triggers clear it)
        tables.rows_version += 1
        first, inserted, sizes = written.first, written.inserted, written.sizes
        # every row written here (none kept): which id has which rowid is known without reading them (``rowmap``)
        self.rowmaps.note_build(first, inserted, sizes, whole=written.complete and written.emptied)
        new_rows = ((rowid, rid, desired[rid], sizes[rowid]) for rowid, rid in enumerate(inserted, first))
        self.stored_rows.written(list(zip(stale, (rowid for (rowid,) in gone), strict=True)), new_rows)
        self._log_written([rowid for (rowid,) in gone], range(first, first + len(inserted)), sizes)
        tables.synced, tables.synced_version = (desired, version) if written.complete else (None, None)
        return len(stale) + len(inserted)

    def _log_written(self, deleted: list[int], inserted: range, sizes: Mapping[int, int]) -> None:
        """Log the rows a reconcile deleted and inserted (the rows version is bumped already), and patch the
        tokens array: kept counts are patched from the log at their next use, exactly (``PhraseCounts.kept``)."""
        kept_versions = self.counts.kept_versions()
        memo_version = self.memos.kept_version()
        if memo_version is not None:
            kept_versions.append(memo_version)
        self.changes.record(deleted, inserted, kept_versions, len(self.tokens))
        self.arrays.patch_tokens(deleted, inserted, sizes)

    def trust(self, desired: Mapping[str, str], version: int) -> None:
        """Take ``desired`` as reconciled: the caller knows the rows are exactly it (the image mark)."""
        self.tables.synced, self.tables.synced_version = desired, version

    def synced_to(self, desired: Mapping[str, str]) -> bool:
        """Whether the rows were last brought to ``desired`` (at some version of it), and nothing wrote them since."""
        return self.tables.synced is desired

    def retarget(self, before: Mapping[str, str], after: Mapping[str, str]) -> None:
        """``after`` holds what ``before`` did: synced to one, the rows are synced to the other."""
        if self.tables.synced is before:
            self.tables.synced = after

    def unsure_of(self, key: str) -> set[str] | None:
        """``ImageMark.unsure_of``: the ids the rows may differ from stored image ``key``'s records at."""
        return self.marks.unsure_of(key)

    # -- the rows held, the rowmap, the memo -------------------------------------------------
    def rowids_of(self, ids: Collection[str]) -> dict[str, int]:
        """id -> rowid of those of ``ids`` the projection holds (``ids`` for many at once)."""
        return self.stored_rows.rowids_of(ids)

    def prefetch(self, rowids: Collection[int]) -> None:
        """Read the ids and token counts of these rows at once (``id_of``, ``tokens`` then answer them)."""
        self.stored_rows.prefetch(rowids)

    def rowmap(self, base: str, size: int) -> RowMap | None:
        """``Rowmaps.rowmap``: the rowid and tokens of each stored id's row, by stored position."""
        return self.rowmaps.rowmap(base, size)

    def built_whole(self) -> bool:
        """Whether the last write of the rows wrote every one (and nothing moved the rows version on since)."""
        return self.rowmaps.built_whole()

    def write_rowmap(self, base: str, stored: Sequence[str], facets: tuple[str, FacetGroups] | None = None) -> bool:
        """``Rowmaps.write``: the rowmap of the stored ids, after a reconcile that wrote every row, and the sums per
        facet value beside it where ``facets`` gives the stored positions of each value (``facet_groups``)."""
        return self.rowmaps.write(base, stored, facets)

    def filter_sums(self, base: str, size: int, facets: str) -> dict[str, Any] | None:
        """``Rowmaps.sums``: the build's tokens and rowid runs per facet value, for these ids and facet columns."""
        return self.rowmaps.sums(base, size, facets)

    def memo(self, generation: int) -> dict[Hashable, Any]:
        """``DerivedMemo.memo``: a cache for what queries derive from these rows and one snapshot."""
        return self.memos.memo(generation)

    def carried(self, key: Hashable, generation: int | None) -> tuple[Any, set[int], set[int]] | None:
        """``DerivedMemo.carried``: an entry of the previous snapshot's memo, with the rows changed since."""
        return self.memos.carried(key, generation)

    # -- reading the texts (``RowTexts``) ------------------------------------------------------
    def texts(self, rowids: Iterable[int], *, body_limit: int | None = None) -> dict[int, tuple[str, str, str]]:
        return self.row_texts.texts(rowids, body_limit=body_limit)

    def highlights(
        self, terms: QueryTerms, rowids: Iterable[int], *, body_limit: int | None = None
    ) -> dict[int, tuple[str, str, str | None]]:
        return self.row_texts.highlights(terms, rowids, body_limit=body_limit)

    # -- matches and scores (``Matches``) ------------------------------------------------------
    def body_matches(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        return self.matches.body_matches(terms, rowids)

    def matching(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        return self.matches.matching(terms, rowids)

    def matching_in_parallel(self, terms: QueryTerms, rowids: Iterable[int]) -> ParallelRead[set[int]]:
        return self.matches.matching_in_parallel(terms, rowids)

    def every_match_in_parallel(self, terms: QueryTerms) -> ParallelRead[list[int]]:
        return self.matches.every_match_in_parallel(terms)

    def native_rows(self, terms: QueryTerms) -> list[tuple[int, float]]:
        return self.matches.native_rows(terms)

    def native_top(self, terms: QueryTerms, k: int) -> list[tuple[int, float]] | None:
        return self.matches.native_top(terms, k)

    def native_arrays(self, terms: QueryTerms) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """``native_rows`` as arrays: (minus the score, rowid)."""
        return columns(self.native_rows(terms))

    def top_among(
        self, terms: QueryTerms, among: Among, limit: int, *, conn: sqlite3.Connection | None = None
    ) -> list[tuple[int, float]]:
        return self.matches.top_among(terms, among, limit, conn=conn)

    def any_match(self, terms: QueryTerms) -> bool:
        return self.matches.any_match(terms)

    def match_count(self, terms: QueryTerms, among: Among | None = None) -> int:
        return self.matches.match_count(terms, among)

    def hit_count(self, phrase: tuple[str, ...], among: Among | None = None, *, whole: int | None = None) -> int:
        return self.matches.hit_count(phrase, among, whole=whole)

    def fewer_than(self, phrase: tuple[str, ...], limit: int) -> bool:
        return self.matches.fewer_than(phrase, limit)

    def matches_among(
        self,
        terms: QueryTerms,
        among: Among,
        *,
        at_most: int | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> set[int]:
        return self.matches.matches_among(terms, among, at_most=at_most, conn=conn)

    def rowids_matching(self, expression: str, *, conn: sqlite3.Connection | None = None) -> list[int]:
        return self.matches.rowids_matching(expression, conn=conn)

    def counts_among(self, phrase: tuple[str, ...], among: Among, *, hits: int) -> dict[int, float]:
        return self.matches.counts_among(phrase, among, hits=hits)

    def scored_among(
        self, phrase: tuple[str, ...], among: Among, *, hits: int, conn: sqlite3.Connection | None = None
    ) -> list[tuple[int, float]]:
        return self.matches.scored_among(phrase, among, hits=hits, conn=conn)

    # -- phrase counts (``PhraseCounts``) ------------------------------------------------------
    def counts_of(self, rows: list[tuple[int, float]], *, hits: int) -> dict[int, float]:
        return self.counts.counts_of(rows, hits=hits)

    def counts_left(
        self, rows: list[tuple[int, float]], known: list[tuple[float, dict[int, float]]], idf: float
    ) -> dict[int, float] | None:
        return self.counts.counts_left(rows, known, idf)

    def term_frequencies(self, term: str, allowed: set[int] | None) -> dict[int, float]:
        return self.counts.term_frequencies(term, allowed)

    def phrase_frequencies(self, phrase: tuple[str, ...], allowed: set[int] | None) -> dict[int, float]:
        return self.counts.phrase_frequencies(phrase, allowed)

    def phrase_arrays(
        self, phrase: tuple[str, ...], allowed: set[int] | None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        return self.counts.phrase_arrays(phrase, allowed)

    def plain_counts(self, phrase: tuple[str, ...], limit: int) -> dict[int, float] | None:
        return self.counts.plain_counts(phrase, limit)

    def has_counts(self, phrase: tuple[str, ...]) -> bool:
        return self.counts.has_counts(phrase)

    def counts_from_scores(
        self, phrase: tuple[str, ...], scores: NDArray[np.float64], rowids: NDArray[np.int64]
    ) -> None:
        self.counts.counts_from_scores(phrase, scores, rowids)

    def keep_counts(self, phrase: tuple[str, ...], rowids: NDArray[np.int64], counts: NDArray[np.float64]) -> None:
        self.counts.keep_counts(phrase, rowids, counts)

    # -- arrays and sums over sets of rows (``RowArrays``) --------------------------------------
    def token_array(self) -> NDArray[np.float64]:
        return self.arrays.token_array()

    def allowed_mask(self, allowed: set[int]) -> NDArray[np.bool_]:
        return self.arrays.allowed_mask(allowed)

    def among(self, allowed: set[int]) -> Among:
        return self.arrays.among(allowed)

    def tokens_in(self, allowed: set[int]) -> int:
        return self.arrays.tokens_in(allowed)

    def know_tokens_in(self, allowed: set[int], total: int) -> None:
        self.arrays.know_tokens_in(allowed, total)

    def allowed_tokens(self, allowed: set[int]) -> int:
        return self.arrays.allowed_tokens(allowed)
