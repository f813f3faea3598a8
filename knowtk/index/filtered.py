"""The rows of a keyword projection that pass a query's record filters, kept per snapshot and patched across them.

A filter's rows are found by stored position where the stored image and the rowmap answer
(``knowtk.index.rowmap``: neither the rows table is read nor every id matched), else from the snapshot's
matching ids, and a later snapshot patches the previous one's set where rows or records changed.

A query that needs only how many rows a filter allows, their tokens and whether a few rows are among them (a
ranking of rare words, superseded wording's leads) takes ``allowed_view``: where the rowmap holds each rowid's
stored position, an ``AllowedRows`` answers those from the filter's flags by position, and the set of rows is
made only if a later step needs it (a new process's first filter spent 15-20 ms at 300k records making it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import compress
from typing import Protocol, cast

from knowtk.index.among import Among, runs_among
from knowtk.index.filter_sums import FilterSums, filter_sums
from knowtk.index.fts import FtsProjection
from knowtk.index.rowmap import RowMap
from knowtk.model.records import Record
from knowtk.snapshot.facets import Criteria, Positions, both_flags
from knowtk.snapshot.model import Snapshot

__all__ = [
    "APART_MAX",
    "LOOKUP_SHARE",
    "Allowed",
    "AllowedRows",
    "RecordFilterLike",
    "allowed_rows",
    "allowed_view",
    "holding",
    "rows_at_positions",
    "rows_of",
    "rows_passing",
]

APART_MAX = 5000  # records changed since the stored image past which a filter's rows are found by id (read whole)
LOOKUP_SHARE = 0.2  # a filter selecting more than this share of a projection's rows finds them in one pass


class RecordFilterLike(Hashable, Protocol):
    """A query's record filters (``knowtk.query.common.RecordFilter``): the facets' criteria and a time range."""

    @property
    def scope(self) -> tuple[str, ...]: ...

    @property
    def is_trivial(self) -> bool:
        """True when every record passes (scope aside)."""
        ...

    @property
    def by_facets(self) -> bool:
        """True when a record's facets answer the filters (no time range)."""
        ...

    @property
    def criteria(self) -> Criteria: ...

    def passes(self, r: Record) -> bool: ...


class AllowedRows:
    """The rows of a projection a filter allows, answered by stored position without their set: how many
    (``len``), their tokens (``tokens``, summed when first asked), whether a row is one (``in``); ``rows()``
    makes the set (once, shared with ``allowed_rows``) for a step that needs it."""

    __slots__ = (
        "_added",
        "_among",
        "_delta",
        "_flags",
        "_make",
        "_redone",
        "_rows",
        "_runs",
        "_tokens",
        "count",
        "rowmap",
    )

    def __init__(
        self,
        rowmap: RowMap,
        flags: bytes | None,
        by_id: tuple[set[int], set[int], int],
        count: int,
        make: Callable[[], set[int]],
        sums: FilterSums | None = None,
    ) -> None:
        """``by_id``: (the rows answered by id that pass, every row answered by id, the tokens they add to the
        flagged positions' sum); ``make``: the set of the rows; ``sums``: the flagged positions' tokens and rowid
        runs, summed by the build (``knowtk.index.filter_sums``), where known (runs only where they are the rows:
        none answered by id)."""
        self.rowmap, self._flags, self.count, self._make = rowmap, flags, count, make
        self._added, self._redone, self._delta = by_id
        self._rows: set[int] | None = None
        self._tokens: int | None = None if sums is None else sums.tokens + self._delta
        self._runs = sums.runs if sums is not None else None
        self._among: Among | None = None

    def __len__(self) -> int:
        return self.count

    @property
    def summed(self) -> int | None:
        """``tokens`` where summed already, else None."""
        return self._tokens

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            tokens, flags = self.rowmap.tokens, self._flags
            self._tokens = sum(tokens if flags is None else compress(tokens, flags)) + self._delta
        return self._tokens

    def __contains__(self, rowid: object) -> bool:
        if self._rows is not None:
            return rowid in self._rows
        if not isinstance(rowid, int):
            return False
        if rowid in self._redone or rowid in self.rowmap.changed:  # (answered by id: not the build's row)
            return rowid in self._added
        return _at_flag(self.rowmap, self._flags, rowid)

    def holding(self, rowids: Sequence[int]) -> list[bool]:
        """``rowid in self`` for each of ``rowids``: the build's rows tested in one comprehension (a method call
        each cost superseded wording's 5.5k leads 3 ms at 300k records)."""
        rowmap, flags = self.rowmap, self._flags
        if self._rows is not None or self._redone or rowmap.changed or rowmap.positions is None:
            return [rowid in self for rowid in rowids]
        positions, first, at_rows = rowmap.positions, rowmap.first, rowmap.rowids
        n, size = len(positions), len(at_rows)
        return [
            0 <= (i := rowid - first) < n
            and 0 <= (at := positions[i]) < size
            and at_rows[at] == rowid
            and (flags is None or flags[at] == 1)
            for rowid in rowids
        ]

    def among(self) -> Among | None:
        """The rows as a statement keeps to them (``rows_among``) where the build's sums give their runs (no set
        made), else None."""
        if self._among is None and self._runs is not None and self._rows is None:
            self._among = runs_among(*self._runs)
        return self._among

    def rows(self) -> set[int]:
        """The set of the rows (``allowed_rows``'s, made once and shared with it)."""
        if self._rows is None:
            self._rows = self._make()
        return self._rows


Allowed = set[int] | AllowedRows  # the rows a filter allows, as a set or answered by position


def holding(allowed: Allowed | None, rowids: Sequence[int]) -> list[bool]:
    """Whether each of ``rowids`` is allowed (``allowed`` None: all are)."""
    if isinstance(allowed, AllowedRows):
        return allowed.holding(rowids)
    return [True] * len(rowids) if allowed is None else [rowid in allowed for rowid in rowids]


def rows_of(allowed: Allowed | None) -> set[int] | None:
    """The allowed rows as a set (None: all)."""
    return allowed.rows() if isinstance(allowed, AllowedRows) else allowed


def allowed_rows(proj: FtsProjection, snap: Snapshot, record_filter: RecordFilterLike) -> set[int] | None:
    """The rows of the projection that pass the filters (None: all), computed once per snapshot and filter."""
    if not record_filter.scope and record_filter.is_trivial:
        return None
    memo = proj.memo(snap.generation)
    found: set[int] | None = memo.get(("allowed", record_filter))
    if found is None:
        view = memo.get(("allowed_view", record_filter))  # (its tokens, where summed, are the set's)
        summed = view.summed if isinstance(view, AllowedRows) else None
        found = memo["allowed", record_filter] = rows_passing(proj, snap, record_filter, tokens=summed)
    return found


def allowed_view(proj: FtsProjection, snap: Snapshot, record_filter: RecordFilterLike) -> Allowed | None:
    """``allowed_rows``, as an ``AllowedRows`` where the stored positions answer and no set is kept yet (a
    previous snapshot's is patched rather: ``rows_passing``); kept for this snapshot and filter."""
    if not record_filter.scope and record_filter.is_trivial:
        return None
    memo = proj.memo(snap.generation)
    key = ("allowed", record_filter)
    found: Allowed | None = memo.get(key)
    if found is None:
        found = memo.get(("allowed_view", record_filter))
    if found is not None:
        return found
    if record_filter.by_facets and (snap.changed_ids is None or proj.carried(key, snap.previous_generation) is None):
        view = _view_by_position(proj, snap, record_filter)
        if view is not None:
            memo["allowed_view", record_filter] = view
            return view
    return allowed_rows(proj, snap, record_filter)


def rows_passing(
    proj: FtsProjection, snap: Snapshot, record_filter: RecordFilterLike, *, tokens: int | None = None
) -> set[int]:
    """The rows that pass the filters: the previous snapshot's set patched where rows or records changed.

    Whether a row passes depends on its record alone, so only the rows inserted since (a changed record is
    inserted again) and the records the snapshot changed (``changed_ids``: a file moved to another scope
    keeps its row) are tested again; the others keep their answer. Without a time range the records'
    facets answer (``Snapshot.facets``): a stored snapshot's records are not built for it. ``tokens``: the rows'
    tokens where known (an ``AllowedRows`` of the same filter summed them).
    """
    changed = snap.changed_ids
    carried = proj.carried(("allowed", record_filter), snap.previous_generation) if changed is not None else None
    if carried is None or changed is None:
        if record_filter.by_facets:
            found = _rows_by_position(proj, snap, record_filter, tokens)
            if found is not None:
                return found
        ids = proj.ids
        if record_filter.by_facets:  # the snapshot's matching ids (shared by its projections)
            selected = snap.matching(record_filter.criteria)
            if LOOKUP_SHARE * len(ids) < len(selected):
                # one pass over the rows' ids in C, each looked up in the (smaller) set: a lookup of each selected
                # id in the rows' larger dict cost ~3x more a row (12 vs 7 ms for 30k of 93k rows at 100k)
                return set(compress(ids.values(), map(selected.__contains__, ids)))
            rows: set[int | None] = set(map(ids.get, selected))  # (in C: about twice as fast as a comprehension)
            rows.discard(None)
            return cast(set[int], rows)
        records = snap.records
        return {rowid for rid, rowid in ids.items() if record_filter.passes(records[rid])}
    passes = _passes(snap, record_filter)
    before, deleted, inserted = carried
    found = before - deleted
    id_of = proj.id_of
    found.update(rowid for rowid in inserted if passes(id_of[rowid]))
    for rid in changed:
        rowid = proj.ids.get(rid)
        if rowid is not None and passes(rid):
            found.add(rowid)
        elif rowid is not None:
            found.discard(rowid)
    return found


def _rows_by_position(
    proj: FtsProjection, snap: Snapshot, record_filter: RecordFilterLike, tokens: int | None
) -> set[int] | None:
    """The rows that pass facet filters, from the rowid at each stored position (``FtsProjection.rowmap``) and the
    positions that pass (``Snapshot.positions``): neither the rows table is read nor every id matched (a new
    process's first filter read the table whole: ~200 ms at 300k records). None where either is missing.

    Records changed since the image (their facets may differ from their stored position's) and rows written
    since the build (their rowid may differ from the rowmap's) are answered by id, from their own facets."""
    found = snap.positions(record_filter.criteria)
    if found is None:
        return None
    return rows_at_positions(proj, snap, found, _passes(snap, record_filter), tokens=tokens)


def rows_at_positions(
    proj: FtsProjection, snap: Snapshot, found: Positions, passes: Callable[[str], bool], *, tokens: int | None = None
) -> set[int] | None:
    """The rows of the records ``found`` holds by stored position (``Positions``), from the rowmap; ``passes``
    answers a record whose row was written since the build, by id. None where the rowmap does not answer.
    ``tokens``: their tokens where known (else summed here)."""
    if len(found.apart) > APART_MAX:
        return None
    rowmap = proj.rowmap(found.base, found.size)
    if rowmap is None:
        return None
    flags, sizes = found.flags, rowmap.tokens
    rows = set(rowmap.rowids if flags is None else compress(rowmap.rowids, flags))
    if rowmap.positions is None and rows and max(rows) > rowmap.top:
        return None  # (a damaged rowmap: a rowid no build wrote; one with positions has its checksum checked)
    rows.discard(0)  # (a stored id without a row here)
    # their tokens too (a filtered ranking's average length), by position: the rows as the build wrote them
    total = sum(sizes if flags is None else compress(sizes, flags)) if tokens is None else tokens
    if rowmap.changed:  # rows deleted or written again since: not the build's
        rows.difference_update(rowmap.changed)
        if tokens is None:
            total -= sum(sizes[at] for at in rowmap.changed_at if flags is None or flags[at])
    _, gone, added = _by_id(proj, snap, found, rowmap, passes, rows.__contains__)
    rows.difference_update(gone)
    rows.update(added)
    if tokens is None:
        total += _tokens_of(proj, added) - _tokens_of(proj, gone)
    proj.know_tokens_in(rows, total)
    return rows


def _view_by_position(proj: FtsProjection, snap: Snapshot, record_filter: RecordFilterLike) -> AllowedRows | None:
    """``rows_at_positions`` as an ``AllowedRows``: the rows counted from the filter's flags and the rowmap's held
    bytes, their tokens summed by position, and the records answered by id (changed since the image, rows written
    since the build) tested by id now, as ``rows_at_positions`` tests them. None where the rowmap has no
    positions (written by an older build) or does not answer."""
    found = snap.positions(record_filter.criteria)
    if found is None or len(found.apart) > APART_MAX:
        return None
    rowmap = proj.rowmap(found.base, found.size)
    if rowmap is None or rowmap.positions is None or len(rowmap.held) != found.size:
        return None
    flags, tokens = found.flags, rowmap.tokens
    count = (rowmap.held if flags is None else both_flags(flags, rowmap.held)).count(1)
    delta = 0  # tokens to add to the flagged positions' (summed when asked: ``AllowedRows.tokens``)
    if rowmap.changed:  # rows deleted or written again since: not the build's
        gone_at = [at for at in rowmap.changed_at if flags is None or flags[at]]
        count -= len(gone_at)
        delta -= sum(tokens[at] for at in gone_at)

    def held_before(rowid: int) -> bool:  # (a build's row the flags pass, not changed since)
        return rowid not in rowmap.changed and _at_flag(rowmap, flags, rowid)

    redone, gone, added = _by_id(proj, snap, found, rowmap, _passes(snap, record_filter), held_before)
    count += len(added) - len(gone)
    delta += _tokens_of(proj, added) - _tokens_of(proj, gone)

    def make() -> set[int]:  # (a view's filter is not trivial: it has a set)
        return cast(set[int], allowed_rows(proj, snap, record_filter))

    sums = None
    if found.facets is not None and flags is not None:
        stored = proj.filter_sums(found.base, found.size, found.facets)
        sums = filter_sums(stored, record_filter.criteria) if stored is not None else None
        if sums is not None and (redone or rowmap.changed or found.apart or found.extra):
            sums = sums._replace(runs=None)  # (rows or records answered by id: the runs are not the rows)
    return AllowedRows(rowmap, flags, (added, redone, delta), count, make, sums)


def _by_id(
    proj: FtsProjection,
    snap: Snapshot,
    found: Positions,
    rowmap: RowMap,
    passes: Callable[[str], bool],
    held_before: Callable[[int], bool],
) -> tuple[set[int], set[int], set[int]]:
    """The rows answered by id, not by stored position: the records set apart from theirs (changed since the image)
    and the rows written since the build. (each such row as it is now, those of them ``held_before`` says the
    positions gave, which leave, and those that pass), their ids and tokens read at once."""
    redo = found.apart.union(rowmap.newer.values())
    if not redo:
        return set(), set(), set()
    now = proj.rowids_of(redo)  # (each id's row as it is now)
    redone = set(now.values())
    gone = set(filter(held_before, redone))
    extra, apart = set(found.extra), found.apart
    added = {now[rid] for rid in now if rid in extra or (rid not in apart and rid in snap.records and passes(rid))}
    proj.prefetch([*gone, *added])
    return redone, gone, added


def _tokens_of(proj: FtsProjection, rows: set[int]) -> int:
    return sum(map(proj.tokens.__getitem__, rows))


def _at_flag(rowmap: RowMap, flags: bytes | None, rowid: int) -> bool:
    """Whether a rowid the build wrote lies at a stored position the flags pass."""
    at = rowmap.position_of(rowid)
    return at >= 0 and (flags is None or flags[at] == 1)


def _passes(snap: Snapshot, record_filter: RecordFilterLike) -> Callable[[str], bool]:
    """id -> whether its record passes the filters: from its facets unless a time range needs the record."""
    if record_filter.by_facets:
        of, criteria = snap.facets().of, record_filter.criteria
        return lambda rid: criteria.passes(of(rid))
    records = snap.records
    return lambda rid: record_filter.passes(records[rid])
