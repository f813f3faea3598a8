"""The rows of a keyword projection that pass a query's record filters, kept per snapshot and patched across them.

A filter's rows are found by stored position where the stored image and the rowmap answer
(``knowtk.index.rowmap``: neither the rows table is read nor every id matched), else from the snapshot's
matching ids, and a later snapshot patches the previous one's set where rows or records changed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import compress
from typing import Protocol, cast

from knowtk.index.fts import FtsProjection
from knowtk.model.records import Record
from knowtk.snapshot.facets import Criteria, Positions
from knowtk.snapshot.model import Snapshot

__all__ = ["APART_MAX", "LOOKUP_SHARE", "RecordFilterLike", "allowed_rows", "rows_at_positions", "rows_passing"]

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


def allowed_rows(proj: FtsProjection, snap: Snapshot, record_filter: RecordFilterLike) -> set[int] | None:
    """The rows of the projection that pass the filters (None: all), computed once per snapshot and filter."""
    if not record_filter.scope and record_filter.is_trivial:
        return None
    memo = proj.memo(snap.generation)
    found: set[int] | None = memo.get(("allowed", record_filter))
    if found is None:
        found = memo["allowed", record_filter] = rows_passing(proj, snap, record_filter)
    return found


def rows_passing(proj: FtsProjection, snap: Snapshot, record_filter: RecordFilterLike) -> set[int]:
    """The rows that pass the filters: the previous snapshot's set patched where rows or records changed.

    Whether a row passes depends on its record alone, so only the rows inserted since (a changed record is
    inserted again) and the records the snapshot changed (``changed_ids``: a file moved to another scope
    keeps its row) are tested again; the others keep their answer. Without a time range the records'
    facets answer (``Snapshot.facets``): a stored snapshot's records are not built for it.
    """
    changed = snap.changed_ids
    carried = proj.carried(("allowed", record_filter), snap.previous_generation) if changed is not None else None
    if carried is None or changed is None:
        if record_filter.by_facets:
            found = _rows_by_position(proj, snap, record_filter)
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


def _rows_by_position(proj: FtsProjection, snap: Snapshot, record_filter: RecordFilterLike) -> set[int] | None:
    """The rows that pass facet filters, from the rowid at each stored position (``FtsProjection.rowmap``) and the
    positions that pass (``Snapshot.positions``): neither the rows table is read nor every id matched (a new
    process's first filter read the table whole: ~200 ms at 300k records). None where either is missing.

    Records changed since the image (their facets may differ from their stored position's) and rows written
    since the build (their rowid may differ from the rowmap's) are answered by id, from their own facets."""
    found = snap.positions(record_filter.criteria)
    if found is None:
        return None
    return rows_at_positions(proj, snap, found, _passes(snap, record_filter))


def rows_at_positions(
    proj: FtsProjection, snap: Snapshot, found: Positions, passes: Callable[[str], bool]
) -> set[int] | None:
    """The rows of the records ``found`` holds by stored position (``Positions``), from the rowmap; ``passes``
    answers a record whose row was written since the build, by id. None where the rowmap does not answer."""
    if len(found.apart) > APART_MAX:
        return None
    rowmap = proj.rowmap(found.base, found.size)
    if rowmap is None:
        return None
    flags, tokens = found.flags, rowmap.tokens
    rows = set(rowmap.rowids if flags is None else compress(rowmap.rowids, flags))
    if rows and max(rows) > rowmap.top:
        return None  # (a damaged rowmap: a rowid no build wrote)
    rows.discard(0)  # (a stored id without a row here)
    # their tokens too (a filtered ranking's average length), by position: the rows as the build wrote them
    total = sum(tokens if flags is None else compress(tokens, flags))
    if rowmap.changed:  # rows deleted or written again since: not the build's
        rows.difference_update(rowmap.changed)
        total -= sum(tokens[at] for at in rowmap.changed_at if flags is None or flags[at])
    redo = found.apart.union(rowmap.newer.values())
    if redo:
        now = proj.rowids_of(redo)  # (each id's row as it is now)
        gone = rows.intersection(now.values())
        rows.difference_update(gone)
        extra, apart = set(found.extra), found.apart
        added = {now[rid] for rid in now if rid in extra or (rid not in apart and rid in snap.records and passes(rid))}
        rows.update(added)
        proj.prefetch([*gone, *added])
        total += sum(map(proj.tokens.__getitem__, added)) - sum(map(proj.tokens.__getitem__, gone))
    proj.know_tokens_in(rows, total)
    return rows


def _passes(snap: Snapshot, record_filter: RecordFilterLike) -> Callable[[str], bool]:
    """id -> whether its record passes the filters: from its facets unless a time range needs the record."""
    if record_filter.by_facets:
        of, criteria = snap.facets().of, record_filter.criteria
        return lambda rid: criteria.passes(of(rid))
    records = snap.records
    return lambda rid: record_filter.passes(records[rid])
