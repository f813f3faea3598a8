"""knowledge_grep: keyword search with exact filtered BM25, superseded wording, and citations.

The order of a result: every direct match (score descending, then id), then
the replacements reached through superseded records that matched (ranked by
the earlier record's BM25 among earlier records whose current record passes
the filters, then by the earlier record's id), each record once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from itertools import compress
from typing import Any, cast

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument
from knowtk.index.bm25 import Match, Source, rank, top_matches
from knowtk.index.fts import Aside, FtsProjection, QueryTerms, tokenize_query
from knowtk.query.citations import (
    LARGE_BODY_BYTES,
    EvidenceVerifier,
    body_snippet,
    citation,
    field_snippet,
    opening_excerpt,
    spans,
)
from knowtk.query.common import (
    RecordFilter,
    coverage,
    freshness,
    next_offset,
    record_summary,
)
from knowtk.query.tools.grep import MAX_OFFSET, MAX_TOKENS
from knowtk.snapshot.model import Snapshot
from knowtk.state import now_utc

__all__ = ["grep", "parse_terms", "ranked_matches"]

APART_MAX = 5000  # records changed since the stored image past which a filter's rows are found by id (read whole)
LOOKUP_SHARE = 0.2  # a filter selecting more than this share of a projection's rows finds them in one pass


def parse_terms(conn: sqlite3.Connection, query: str, mode: str) -> QueryTerms:
    tokens = tokenize_query(conn, query)
    if not tokens:
        raise InvalidArgument("query", "has no word tokens (punctuation only separates words)", allowed="1 to 64 words")
    if len(tokens) > MAX_TOKENS:
        raise InvalidArgument("query", f"has {len(tokens)} word tokens", allowed=f"1 to {MAX_TOKENS} words")
    return QueryTerms(tuple(tokens), mode)


def grep(engine: Engine, a: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    queried_at = now_utc()
    snap = engine.snapshot()
    flt = RecordFilter.from_args(snap, a)
    out: dict[str, Any] = {
        "hits": [],
        "total": None,
        "offset": a["offset"],
        "nextOffset": None,
        "snapshot": snap.fingerprint(flt.scope),
        "index": {"state": "unavailable", "lag": False},
        "coverage": coverage(snap, flt.scope),
        "freshness": freshness(snap, queried_at),
    }
    try:
        terms = parse_terms(engine.state.conn, a["query"], a["mode"])
    except sqlite3.Error as exc:
        out["index"]["error"] = f"the FTS5 tokenizer is unavailable: {exc}"
        return out
    index = engine.keyword(snap)
    out["freshness"]["indexedAt"] = index.indexed_at
    if index.error:
        out["index"]["error"] = index.error
        return out
    try:
        end = a["offset"] + a["limit"]
        total, ranked = _ranking(snap, flt, a["lifecycle"], terms, index.main, index.history, end)
        out["hits"] = _hits(snap, terms, ranked[a["offset"] : end], index.main, verifier)
    except sqlite3.Error as exc:
        out["index"]["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["index"] = {"state": "ready", "lag": False}
    out["total"] = total
    out["nextOffset"] = next_offset(a["offset"], a["limit"], total, max_offset=MAX_OFFSET)
    return out


def _allowed(proj: FtsProjection, snap: Snapshot, flt: RecordFilter) -> set[int] | None:
    """The rows of the projection that pass the filters (None: all), computed once per snapshot and filter."""
    if not flt.scope and flt.is_trivial:
        return None
    memo = proj.memo(snap.generation)
    found = memo.get(("allowed", flt))
    if found is None:
        found = memo["allowed", flt] = _allowed_rows(proj, snap, flt)
    return found


def _allowed_rows(proj: FtsProjection, snap: Snapshot, flt: RecordFilter) -> set[int]:
    """The rows that pass the filters: the previous snapshot's set patched where rows or records changed.

    Whether a row passes depends on its record alone, so only the rows inserted since (a changed record is
    inserted again) and the records the snapshot changed (``changed_ids``: a file moved to another scope
    keeps its row) are tested again; the others keep their answer. Without a time range the records'
    facets answer (``Snapshot.facets``): a stored snapshot's records are not built for it.
    """
    changed = snap.changed_ids
    carried = proj.carried(("allowed", flt), snap.previous_generation) if changed is not None else None
    if carried is None or changed is None:
        if flt.by_facets:
            found = _by_position(proj, snap, flt)
            if found is not None:
                return found
        ids = proj.ids
        if flt.by_facets:  # the snapshot's matching ids (shared by its projections)
            selected = snap.matching(flt.criteria)
            if LOOKUP_SHARE * len(ids) < len(selected):
                # one pass over the rows' ids in C, each looked up in the (smaller) set: a lookup of each selected
                # id in the rows' larger dict cost ~3x more a row (12 vs 7 ms for 30k of 93k rows at 100k)
                return set(compress(ids.values(), map(selected.__contains__, ids)))
            rows: set[int | None] = set(map(ids.get, selected))  # (in C: about twice as fast as a comprehension)
            rows.discard(None)
            return cast(set[int], rows)
        records = snap.records
        return {rowid for rid, rowid in ids.items() if flt.passes(records[rid])}
    passes = _passes(snap, flt)
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


def _by_position(proj: FtsProjection, snap: Snapshot, flt: RecordFilter) -> set[int] | None:
    """The rows that pass facet filters, from the rowid at each stored position (``FtsProjection.rowmap``) and the
    positions that pass (``Snapshot.positions``): neither the rows table is read nor every id matched (a new
    process's first filter read the table whole: ~200 ms at 300k records). None where either is missing.

    Records changed since the image (their facets may differ from their stored position's) and rows written
    since the build (their rowid may differ from the rowmap's) are answered by id, from their own facets."""
    found = snap.positions(flt.criteria)
    if found is None or len(found.apart) > APART_MAX:
        return None
    rowmap = proj.rowmap(found.base, found.size)
    if rowmap is None:
        return None
    flags, tokens = found.flags, rowmap.tokens
    rows = set(rowmap.rowids if flags is None else compress(rowmap.rowids, flags))
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
        extra, apart, passes = set(found.extra), found.apart, _passes(snap, flt)
        added = {now[rid] for rid in now if rid in extra or (rid not in apart and rid in snap.records and passes(rid))}
        rows.update(added)
        proj.prefetch([*gone, *added])
        total += sum(map(proj.tokens.__getitem__, added)) - sum(map(proj.tokens.__getitem__, gone))
    proj.know_tokens_in(rows, total)
    return rows


def _passes(snap: Snapshot, flt: RecordFilter) -> Callable[[str], bool]:
    """id -> whether its record passes the filters: from its facets unless a time range needs the record."""
    if flt.by_facets:
        of, criteria = snap.facets().of, flt.criteria
        return lambda rid: criteria.passes(of(rid))
    records = snap.records
    return lambda rid: flt.passes(records[rid])


def _replaced(snap: Snapshot, flt: RecordFilter, main: FtsProjection, history: FtsProjection) -> dict[int, str]:
    """Superseded wording: history rowid -> the current record it leads to, where that one passes the filters."""
    memo = history.memo(snap.generation)
    key = ("replaced", flt, main.mirror)  # it also depends on which ids the main projection holds
    found = memo.get(key)
    if found is None:
        found = memo[key] = {}
        # the current record passes the filters (main's allowed rows), the earlier one lies in the scope (history's
        # rows in it): sets kept for this snapshot, and from facets, so that no record is built for them
        passing = _allowed(main, snap, flt)  # None: everything passes
        in_scope = _allowed(history, snap, RecordFilter(scope=flt.scope)) if flt.scope else None
        chain_ends, leads = snap.chain_ends, {}
        for rid, rowid in history.ids.items():
            end = chain_ends.get(rid)
            if end is not None and end.current is not None and (in_scope is None or rowid in in_scope):
                leads[rowid] = end.current
        ids = main.rowids_of(set(leads.values()))  # (one query: the main rows are not read whole for them)
        for rowid, current in leads.items():
            at = ids.get(current)
            if at is not None and (passing is None or at in passing):
                found[rowid] = current
    return found


def ranked_matches(
    snap: Snapshot,
    flt: RecordFilter,
    lifecycle: str,
    terms: QueryTerms,
    main: FtsProjection,
    history: FtsProjection,
) -> list[tuple[Match, str | None]]:
    """The whole result in order: [(match, current id for a replacement else None)]."""
    return _ranking(snap, flt, lifecycle, terms, main, history, None)[1]


def _ranking(
    snap: Snapshot,
    flt: RecordFilter,
    lifecycle: str,
    terms: QueryTerms,
    main: FtsProjection,
    history: FtsProjection,
    end: int | None,
) -> tuple[int, list[tuple[Match, str | None]]]:
    """(total, the result up to ``end`` at least; all of it when None) as ``ranked_matches`` gives it.

    Only the first ``end`` direct matches are put in order; the replacements, few, follow them all.
    """
    if lifecycle == "superseded":
        sources = [Source(history, _allowed(history, snap, flt))]
    elif lifecycle == "all":
        sources = [Source(main, _allowed(main, snap, flt)), Source(history, _allowed(history, snap, flt))]
    else:
        sources = [Source(main, _allowed(main, snap, flt))]
    # superseded wording: earlier records rank among those whose current record passes the filters; which of
    # those current records match directly is read beside the ranking (``Aside``)
    current_of = _replaced(snap, flt, main, history) if lifecycle == "active" else {}
    direct_currents = _direct_currents(main, terms, {main.ids[c] for c in current_of.values()}, sources, end)
    n_direct, direct = top_matches(sources, terms, end)
    ranked: list[tuple[Match, str | None]] = [(m, None) for m in direct]
    if direct_currents is None:
        return n_direct, ranked
    if end is not None and n_direct >= end:  # the page is direct matches alone: the replacements are counted only
        return n_direct + _replacements(terms, current_of, main, history, direct_currents.result()), ranked
    earlier = rank([Source(history, set(current_of))], terms)
    if not earlier:
        return n_direct, ranked
    # a current record that is itself a direct match (it passes the filters already) appears once, there
    currents = {main.ids[current_of[m.rowid]] for m in earlier}
    seen = {main.id_of[rowid] for rowid in direct_currents.result() & currents}
    replacements = 0
    for m in earlier:
        current = current_of[m.rowid]
        if current not in seen:
            seen.add(current)
            ranked.append((m, current))
            replacements += 1
    return n_direct + replacements, ranked


class _Among:
    """The current records' rows that match, from every row the expression matches (read beside)."""

    def __init__(self, everything: Aside[list[int]], rowids: set[int]) -> None:
        self.everything, self.rowids = everything, rowids

    def result(self) -> set[int]:
        return self.rowids.intersection(self.everything.result())


def _direct_currents(
    main: FtsProjection, terms: QueryTerms, rowids: set[int], sources: list[Source], end: int | None
) -> Aside[set[int]] | _Among | None:
    """Which of superseded wording's current records (their rows) match the query themselves, read beside the
    ranking: from every row the expression matches where SQLite pages an unfiltered query (``top_matches``: its
    count is then their number, ``matches_aside``), else among those rows alone (from the phrases' counts where
    they are kept)."""
    if not rowids:
        return None
    phrases = terms.phrases
    paged = (
        end is not None
        and len(sources) == 1
        and sources[0].allowed is None
        and sources[0].projection is main
        and not all(main.has_counts(phrase) for phrase in phrases)
        and not (len(phrases) == 1 and main.was_asked(phrases[0]))
    )
    return _Among(main.matches_aside(terms), rowids) if paged else main.matching_aside(terms, rowids)


def _replacements(
    terms: QueryTerms, current_of: dict[int, str], main: FtsProjection, history: FtsProjection, matching: set[int]
) -> int:
    """How many current records superseded wording adds after the direct matches: those an earlier record's
    wording matches and their own does not (``matching``: the main rows of every current record that match),
    the ranked path's count, without scoring the earlier records."""
    currents = {current_of[rowid] for rowid in history.matching(terms, set(current_of))}
    if not currents:
        return 0
    rowids = {main.ids[current] for current in currents}
    return len(currents) - len(matching & rowids)


def _hits(
    snap: Snapshot,
    terms: QueryTerms,
    page: list[tuple[Match, str | None]],
    main: FtsProjection,
    verifier: EvidenceVerifier,
) -> list[dict[str, Any]]:
    by_source: dict[int, tuple[FtsProjection, list[int]]] = {}
    for m, current in page:
        if current is None:
            by_source.setdefault(id(m.source), (m.source, []))[1].append(m.rowid)
    marked: dict[tuple[int, int], tuple[str, str, str | None]] = {}
    originals: dict[tuple[int, int], tuple[str, str, str]] = {}
    body_matched: set[tuple[int, int]] = set()  # bodies over 64 KiB that hold a match
    for proj, rowids in by_source.values():
        large = []
        for rowid, cols in proj.highlights(terms, rowids, body_limit=LARGE_BODY_BYTES).items():
            marked[(id(proj), rowid)] = cols
            if cols[2] is None:
                large.append(rowid)
        body_matched.update((id(proj), rowid) for rowid in proj.body_matches(terms, large))
        for rowid, cols in proj.texts(rowids, body_limit=LARGE_BODY_BYTES).items():
            originals[(id(proj), rowid)] = cols
    currents = [main.ids[c] for _, c in page if c is not None]
    current_texts = main.texts(currents, body_limit=LARGE_BODY_BYTES)
    hits = []
    for m, current in page:
        if current is None:
            r = snap.records[m.id]
            key = (id(m.source), m.rowid)
            hit = _direct_hit(snap, r, m.score, originals[key], marked.get(key), key in body_matched)
        else:
            r = snap.records[current]
            earlier = snap.records[m.id]
            hit = record_summary(r, snap)
            excerpt = opening_excerpt(r, current_texts[main.ids[current]][2])
            hit.update(
                score=None,
                matches=["superseded"],
                snippet=excerpt,
                citation=citation(r, excerpt),
            )
            hit["via"] = {
                "id": earlier.id,
                "revision": earlier.revision,
                "title": earlier.title,
                "path": earlier.path,
                "sha256": earlier.sha256,
            }
        evidence, truncated = verifier.for_hit(r)
        hit["evidence"], hit["evidenceTruncated"] = evidence, truncated
        hit["attribution"], hit["origin"] = r.author, r.origin
        hit.setdefault("via", None)
        hits.append({k: hit[k] for k in HIT_KEYS})
    return hits


HIT_KEYS = (
    "id",
    "kind",
    "type",
    "title",
    "summary",
    "lifecycle",
    "tags",
    "path",
    "revision",
    "sha256",
    "score",
    "matches",
    "snippet",
    "citation",
    "evidence",
    "evidenceTruncated",
    "attribution",
    "origin",
    "via",
)


def _direct_hit(
    snap: Snapshot,
    r: Any,
    score: float,
    texts: tuple[str, str, str],
    marked: tuple[str, str, str | None] | None,
    large_body_matched: bool,
) -> dict[str, Any]:
    """``texts`` holds only the opening of a body over 64 KiB, whose highlight is None in ``marked``."""
    title, aliases, body = texts
    found: dict[str, list[tuple[int, int]]] = {}
    large = marked is not None and marked[2] is None
    if marked is not None:
        for name, original, highlighted in zip(("title", "aliases", "body"), texts, marked, strict=True):
            located = spans(highlighted, original) if highlighted is not None else None
            if located:
                found[name] = located
    if large and large_body_matched:
        found["body"] = []  # it matched; where is not looked for in a body this large
    if "body" in found and not large:
        snippet = body_snippet(r, body, found["body"])
    elif "title" in found:
        snippet = field_snippet("title", title, found["title"])
    elif "aliases" in found:
        snippet = field_snippet("aliases", aliases, found["aliases"])
    else:  # a body over 64 KiB, or highlight() could not be lined up with the text
        snippet = opening_excerpt(r, body)
    hit = record_summary(r, snap)
    hit.update(
        score=score,
        matches=[name for name in ("title", "aliases", "body") if name in found],
        snippet=snippet,
        citation=citation(r, snippet),
    )
    return hit
