"""knowledge_grep at ``validAt``: the keyword ranking over the records in force at an instant.

The same order as the present's (``knowtk.query.grep``): the direct matches among the records whose lifecycle
at that instant the query asks for (score descending, then id), then, for ``lifecycle: active``, the records in
force then that superseded wording leads to: ``superseded_by`` followed from a record superseded by then to the
record in force then, which must pass the filters.

Every record in force then is searched, wherever the keyword index keeps it: the available active records (main),
the available superseded ones (history), and those unavailable today only because an expiry passed (the expired
projection, ``knowtk.engine.desired.ExpiredKeyword``). Their rows in force then are the sources of one ranking, so
BM25's statistics (row count, average length, how many rows hold each phrase) are those of every record in force
then, as if one table held exactly them: a record expired since scores what it would if it had never expired.
(Scoring such records on the fly from their text was the other way: it needs their texts tokenized as FTS5 does and
each phrase counted in them at every query, where a projection of the same kind is ranked by the same code as main
and history, and costs nothing to a store without expired records: it has no such tables.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any

from knowtk.index.bm25 import Match, Source, rank, top_matches
from knowtk.index.filtered import allowed_rows, rows_at_positions
from knowtk.index.fts import FtsProjection
from knowtk.index.fts_tables import QueryTerms
from knowtk.query.common import RecordFilter
from knowtk.query.validity import ACTIVE, SUPERSEDED, ValidAt, Validity
from knowtk.snapshot.model import Snapshot

__all__ = ["valid_ranking", "valid_unplaced"]

SMALL_SHARE = 4  # a projection holding fewer rows than a quarter of the records is gone through whole, by id


def _rows(
    found: Validity,
    proj: FtsProjection,
    snap: Snapshot,
    record_filter: RecordFilter,
    ids: Callable[[], Collection[str]],
    name: Any,
    wanted: tuple[ValidAt, Collection[str]] | None = None,
) -> set[int]:
    """The projection's rows of the records ``ids()`` gives that pass the filters (kept with the instant's answer
    under ``name``).

    ``wanted`` (the instant, the lifecycles then): ``ids()`` are the records selected so, and their rows are found
    by stored position where the rowmap answers (``rows_at_positions``): neither the rows table is read nor each
    id looked up (a new process's first search at an instant read the rows one at a time, then whole: ~0.3 s at
    100k records). Else a small projection is gone through whole (the expired one: a few rows), each of its ids
    judged by the instant's answer."""
    key = (name, proj.key, proj.rows_version, record_filter)
    rows = found.memo.get(key)
    if rows is None:
        allowed = allowed_rows(proj, snap, record_filter)
        placed = None if wanted is None else _placed_rows(found, proj, snap, *wanted)
        if placed is not None:
            rows = placed if allowed is None else placed & allowed
        elif wanted is not None and len(proj.ids) * SMALL_SHARE < len(found.ids):
            then, (_, lifecycles) = found.at(wanted[0]), wanted
            rows = {rowid for rid, rowid in proj.ids.items() if then.get(rid) in lifecycles}
            rows = rows if allowed is None else rows & allowed
        elif len(selected := ids()) > len(proj.ids):
            rows = {rowid for rid, rowid in proj.ids.items() if rid in selected}
            rows = rows if allowed is None else rows & allowed
        else:
            of = proj.ids
            rows = {rowid for rid in selected if (rowid := of.get(rid)) is not None}
            rows = rows if allowed is None else rows & allowed
        found.memo[key] = rows
    return rows


def _placed_rows(
    found: Validity, proj: FtsProjection, snap: Snapshot, when: ValidAt, lifecycles: Collection[str]
) -> set[int] | None:
    """The rows of the records whose lifecycle at ``when`` is one of ``lifecycles``, by stored position; None where
    the positions or the rowmap do not answer."""
    positions = found.positions(when, lifecycles)
    if positions is None:
        return None
    then = found.at(when)
    return rows_at_positions(proj, snap, positions, lambda rid: then.get(rid) in lifecycles)


def _or_unfiltered(proj: FtsProjection, snap: Snapshot, record_filter: RecordFilter, rows: set[int]) -> set[int] | None:
    """``rows``, or the filters' own rows (None: every row) when every one of those is in force: the ranking
    then takes the path of a query without validAt (SQLite's own order where nothing is filtered out)."""
    allowed = allowed_rows(proj, snap, record_filter)
    return allowed if len(rows) == (len(proj.ids) if allowed is None else len(allowed)) else rows


def _leads(
    found: Validity,
    snap: Snapshot,
    record_filter: RecordFilter,
    earlier_rows: FtsProjection,
    when: ValidAt,
) -> dict[int, str]:
    """Superseded wording then: rowid (in ``earlier_rows``, history or expired) of a record superseded by ``when``
    -> the record in force then it leads to, where that one passes the filters and the earlier one lies in the
    scope (kept)."""
    key = ("leads", when.first, when.last, earlier_rows.key, earlier_rows.rows_version, record_filter)
    leads = found.memo.get(key)
    if leads is None:
        leads = {}
        passing = _passing(found, snap, record_filter, when)
        earlier = functools.partial(found.selected, when, (SUPERSEDED,))
        scoped = RecordFilter(scope=record_filter.scope)
        name = ("earlier", when.first, when.last)
        for rowid in _rows(found, earlier_rows, snap, scoped, earlier, name, (when, (SUPERSEDED,))):
            current = found.current(snap, earlier_rows.id_of[rowid], when)
            if current is not None and passing(current):
                leads[rowid] = current
        found.memo[key] = leads
    return leads


def _passing(found: Validity, snap: Snapshot, record_filter: RecordFilter, when: ValidAt) -> Callable[[str], bool]:
    """id -> whether its record was in force at ``when`` and passes the filters (``in_force_set``'s test, one id
    at a time: a new instant's few leads need no set of every record in force then)."""
    then = found.at(when)
    matching = snap.matching(record_filter.criteria) if record_filter.scope or not record_filter.is_trivial else None
    records = snap.records

    def passing(rid: str) -> bool:
        if then.get(rid) != ACTIVE or (matching is not None and rid not in matching):
            return False
        return record_filter.time_field is None or record_filter.passes(records[rid])

    return passing


def valid_ranking(
    found: Validity,
    snap: Snapshot,
    record_filter: RecordFilter,
    lifecycle: str,
    terms: QueryTerms,
    projections: tuple[FtsProjection, ...],
    when: ValidAt,
    end: int | None,
) -> tuple[int, list[tuple[Match, str | None]]]:
    """(total, the result up to ``end`` at least) at ``when``, as ``knowtk.query.grep`` ranks the present.

    ``projections``: main, history, then the expired projection when there is one.
    """
    wanted = (ACTIVE, SUPERSEDED) if lifecycle == "all" else (lifecycle,)
    ids = functools.partial(found.selected, when, wanted)
    name = ("direct", when.first, when.last, wanted)
    sources = []
    for proj in projections:
        rows = _rows(found, proj, snap, record_filter, ids, name, (when, wanted))
        if rows:
            sources.append(Source(proj, _or_unfiltered(proj, snap, record_filter, rows)))
    n_direct, direct = top_matches(sources, terms, end) if sources else (0, [])
    ranked: list[tuple[Match, str | None]] = [(m, None) for m in direct]
    if lifecycle != ACTIVE:
        return n_direct, ranked
    # records superseded by then: in history, or in the expired projection when they rest on a record expired since
    leads = {proj.key: _leads(found, snap, record_filter, proj, when) for proj in projections[1:]}
    led = [Source(proj, set(leads[proj.key])) for proj in projections[1:] if leads[proj.key]]
    earlier = rank(led, terms) if led else []
    if not earlier:
        return n_direct, ranked
    # a record in force then that matches itself is a direct match already: it appears once, there
    currents = {leads[m.source.key][m.rowid] for m in earlier}
    seen = {rid for proj in projections for rid in _matching_ids(proj, terms, currents)}
    replacements = 0
    for m in earlier:
        current = leads[m.source.key][m.rowid]
        if current not in seen:
            seen.add(current)
            ranked.append((m, current))
            replacements += 1
    return n_direct + replacements, ranked


def _matching_ids(proj: FtsProjection, terms: QueryTerms, ids: Collection[str]) -> set[str]:
    rows = {rowid for rid in ids if (rowid := proj.ids.get(rid)) is not None}
    return {proj.id_of[rowid] for rowid in proj.matching(terms, rows)} if rows else set()


def valid_unplaced(
    found: Validity,
    snap: Snapshot,
    record_filter: RecordFilter,
    terms: QueryTerms,
    projections: tuple[FtsProjection, ...],
) -> int:
    """How many records that cannot be placed in time pass the filters and match the query."""
    if not found.unplaced:
        return 0
    matched: set[str] = set()
    for proj in projections:
        matched |= _matching_ids(proj, terms, found.unplaced & _ids(found, proj, snap, record_filter))
    return len(matched)


def _ids(found: Validity, proj: FtsProjection, snap: Snapshot, record_filter: RecordFilter) -> set[str]:
    """The ids of the projection's rows of unplaced records that pass the filters."""
    unplaced = _rows(found, proj, snap, record_filter, lambda: found.unplaced, "unplaced")
    return {proj.id_of[rowid] for rowid in unplaced}
