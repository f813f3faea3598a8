"""knowledge_grep at ``validAt``: the keyword ranking over the records in force at an instant.

The same order as the present's (``knowtk.query.grep``): the direct matches among the records whose lifecycle
at that instant the query asks for (score descending, then id), then, for ``lifecycle: active``, the records in
force then that superseded wording leads to: ``superseded_by`` followed from a record superseded by then to the
record in force then, which must pass the filters. Only the records the keyword index holds are searched (the
available active and superseded ones): a record expired since is found by knowledge_records and lookup.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from knowtk.index.bm25 import Match, Source, rank, top_matches
from knowtk.index.filtered import allowed_rows
from knowtk.index.fts import FtsProjection
from knowtk.index.fts_tables import QueryTerms
from knowtk.query.common import RecordFilter
from knowtk.query.validity import ACTIVE, SUPERSEDED, ValidAt, Validity, in_force_ids
from knowtk.snapshot.model import Snapshot

__all__ = ["valid_ranking", "valid_unplaced", "valid_unsearched"]


def _rows(
    found: Validity, proj: FtsProjection, snap: Snapshot, record_filter: RecordFilter, ids: Collection[str], name: Any
) -> set[int]:
    """The projection's rows of ``ids`` that pass the filters (kept with the instant's answer under ``name``)."""
    key = (name, proj.key, proj.rows_version, record_filter)
    rows = found.memo.get(key)
    if rows is None:
        of = proj.ids
        allowed = allowed_rows(proj, snap, record_filter)
        rows = {rowid for rid in ids if (rowid := of.get(rid)) is not None and (allowed is None or rowid in allowed)}
        found.memo[key] = rows
    return rows


def _or_unfiltered(proj: FtsProjection, snap: Snapshot, record_filter: RecordFilter, rows: set[int]) -> set[int] | None:
    """``rows``, or the filters' own rows (None: every row) when every one of those is in force: the ranking
    then takes the path of a query without validAt (SQLite's own order where nothing is filtered out)."""
    allowed = allowed_rows(proj, snap, record_filter)
    return allowed if len(rows) == (len(proj.ids) if allowed is None else len(allowed)) else rows


def _leads(
    found: Validity,
    snap: Snapshot,
    record_filter: RecordFilter,
    history: FtsProjection,
    when: ValidAt,
    passing: set[str],
) -> dict[int, str]:
    """Superseded wording then: history rowid of a record superseded by ``when`` -> the record in force then it
    leads to, where that one passes the filters and the earlier one lies in the scope (kept)."""
    key = ("leads", when.first, when.last, history.key, history.rows_version, record_filter)
    leads = found.memo.get(key)
    if leads is None:
        leads = {}
        earlier = found.selected(when, (SUPERSEDED,))
        scoped = RecordFilter(scope=record_filter.scope)
        for rowid in _rows(found, history, snap, scoped, earlier, ("earlier", when.first, when.last)):
            current = found.current(snap, history.id_of[rowid], when)
            if current is not None and current in passing:
                leads[rowid] = current
        found.memo[key] = leads
    return leads


def valid_ranking(
    found: Validity,
    snap: Snapshot,
    record_filter: RecordFilter,
    lifecycle: str,
    terms: QueryTerms,
    projections: tuple[FtsProjection, FtsProjection],
    when: ValidAt,
    end: int | None,
) -> tuple[int, list[tuple[Match, str | None]]]:
    """(total, the result up to ``end`` at least) at ``when``, as ``knowtk.query.grep`` ranks the present."""
    history = projections[1]
    wanted = (ACTIVE, SUPERSEDED) if lifecycle == "all" else (lifecycle,)
    ids = found.selected(when, wanted)
    name = ("direct", when.first, when.last, wanted)
    sources = []
    for proj in projections:
        rows = _rows(found, proj, snap, record_filter, ids, name)
        if rows:
            sources.append(Source(proj, _or_unfiltered(proj, snap, record_filter, rows)))
    n_direct, direct = top_matches(sources, terms, end) if sources else (0, [])
    ranked: list[tuple[Match, str | None]] = [(m, None) for m in direct]
    if lifecycle != ACTIVE:
        return n_direct, ranked
    passing = set(in_force_ids(found, snap, record_filter, (ACTIVE,), when))
    leads = _leads(found, snap, record_filter, history, when, passing)
    earlier = rank([Source(history, set(leads))], terms) if leads else []
    if not earlier:
        return n_direct, ranked
    # a record in force then that matches itself is a direct match already: it appears once, there
    currents = {leads[m.rowid] for m in earlier}
    seen = {rid for proj in projections for rid in _matching_ids(proj, terms, currents)}
    replacements = 0
    for m in earlier:
        current = leads[m.rowid]
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
    return {proj.id_of[rowid] for rowid in _rows(found, proj, snap, record_filter, found.unplaced, "unplaced")}


def valid_unsearched(
    found: Validity,
    snap: Snapshot,
    record_filter: RecordFilter,
    lifecycle: str,
    projections: tuple[FtsProjection, ...],
    when: ValidAt,
) -> int:
    """How many records the query asks for at ``when`` (their lifecycle then, the filters) the keyword index
    does not hold, so that no search could find them: those that expired since (kept)."""
    wanted = (ACTIVE, SUPERSEDED) if lifecycle == "all" else (lifecycle,)
    key = ("unsearched", when.first, when.last, record_filter, wanted, *(p.rows_version for p in projections))
    count = found.memo.get(key)
    if count is None:
        ids = in_force_ids(found, snap, record_filter, wanted, when)
        count = found.memo[key] = sum(1 for rid in ids if all(rid not in p.ids for p in projections))
    return int(count)
