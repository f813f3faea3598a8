"""knowledge_grep: keyword search with exact filtered BM25, superseded wording, and citations.

The order of a result: every direct match (score descending, then id), then
the replacements reached through superseded records that matched (ranked by
the earlier record's BM25 among earlier records whose current record passes
the filters, then by the earlier record's id), each record once.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument
from knowtk.index.bm25 import Match, Source, rank, top_matches
from knowtk.index.filtered import allowed_view, holding
from knowtk.index.fts import FtsProjection
from knowtk.index.fts_tables import QueryTerms, tokenize_query
from knowtk.index.parallel_read import ParallelRead
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
from knowtk.query.grep_valid import valid_ranking, valid_unplaced
from knowtk.query.tools.grep import MAX_OFFSET, MAX_TOKENS
from knowtk.query.validity import lifecycles_then, validity
from knowtk.snapshot.model import Snapshot
from knowtk.state import now_utc

__all__ = ["grep", "parse_terms", "ranked_matches"]


def parse_terms(conn: sqlite3.Connection, query: str, mode: str) -> QueryTerms:
    tokens = tokenize_query(conn, query)
    if not tokens:
        raise InvalidArgument("query", "has no word tokens (punctuation only separates words)", allowed="1 to 64 words")
    if len(tokens) > MAX_TOKENS:
        raise InvalidArgument("query", f"has {len(tokens)} word tokens", allowed=f"1 to {MAX_TOKENS} words")
    return QueryTerms(tuple(tokens), mode)


def grep(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    queried_at = now_utc()
    snap = engine.snapshot()
    record_filter = RecordFilter.from_args(snap, args)
    out: dict[str, Any] = {
        "hits": [],
        "total": None,
        "offset": args["offset"],
        "nextOffset": None,
        "snapshot": snap.fingerprint(record_filter.scope),
        "index": {"state": "unavailable", "lag": False},
        "coverage": coverage(snap, record_filter.scope),
        "freshness": freshness(snap, queried_at),
    }
    try:
        terms = parse_terms(engine.state.conn, args["query"], args["mode"])
    except sqlite3.Error as exc:
        out["index"]["error"] = f"the FTS5 tokenizer is unavailable: {exc}"
        return out
    index = engine.keyword(snap)
    out["freshness"]["indexedAt"] = index.indexed_at
    if index.error:
        out["index"]["error"] = index.error
        return out
    try:
        end = args["offset"] + args["limit"]
        when = args.get("valid_at")
        projections: tuple[FtsProjection, ...] = (index.main, index.history)
        if when is None:
            total, ranked = _ranking(snap, record_filter, args["lifecycle"], terms, index.main, index.history, end)
        else:  # the records in force then, those expired since too (knowtk.query.grep_valid)
            expired = engine.expired_keyword(snap)
            found, projections = validity(engine, snap), projections + ((expired,) if expired is not None else ())
            lifecycle = args["lifecycle"]
            total, ranked = valid_ranking(found, snap, record_filter, lifecycle, terms, projections, when, end)
            out["unplaced"] = valid_unplaced(found, snap, record_filter, terms, projections)
        out["hits"] = _hits(snap, terms, ranked[args["offset"] : end], verifier, projections)
        if when is not None:
            lifecycles_then(out["hits"], found.at(when))
    except sqlite3.Error as exc:
        out["index"]["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["index"] = {"state": "ready", "lag": False}
    out["total"] = total
    out["nextOffset"] = next_offset(args["offset"], args["limit"], total, max_offset=MAX_OFFSET)
    return out


def _replaced(
    snap: Snapshot, record_filter: RecordFilter, main: FtsProjection, history: FtsProjection
) -> tuple[dict[int, str], set[int]]:
    """Superseded wording: (history rowid -> the current record it leads to, where that one passes the filters;
    the main rows of those current records), kept for this snapshot and filter."""
    memo = history.memo(snap.generation)
    key = ("replaced", record_filter, main.rows_version)  # it also depends on which ids the main projection holds
    found: tuple[dict[int, str], set[int]] | None = memo.get(key)
    if found is None:
        # the current record passes the filters (main's allowed rows, from facets: no record is built for it),
        # each lead tested by its stored position where no set of them is kept (``allowed_view``)
        passing = allowed_view(main, snap, record_filter)  # None: everything passes
        current_of, rows = {}, set()
        leads = _leads(snap, record_filter.scope, main, history)
        ats = [at for _, at in leads.values()]
        for (rowid, (current, at)), passes in zip(leads.items(), holding(passing, ats), strict=True):
            if passes:
                current_of[rowid] = current
                rows.add(at)
        found = memo[key] = (current_of, rows)
    return found


def _leads(
    snap: Snapshot, scope: tuple[str, ...], main: FtsProjection, history: FtsProjection
) -> dict[int, tuple[str, int]]:
    """history rowid -> (the current record it leads to, that record's main rowid) of the earlier records in the
    scope: what every filter of the scope shares (kept for this snapshot; each filter then only tests the rows)."""
    memo = history.memo(snap.generation)
    key = ("replaced_leads", scope, main.rows_version)
    found: dict[int, tuple[str, int]] | None = memo.get(key)
    if found is None:
        # the earlier record lies in the scope (history's rows in it, from facets, each tested by position)
        in_scope = allowed_view(history, snap, RecordFilter(scope=scope)) if scope else None
        chain_ends, earlier = snap.chain_ends, []
        for rid, rowid in history.ids.items():
            end = chain_ends.get(rid)
            if end is not None and end.current is not None:
                earlier.append((rowid, end.current))
        held = holding(in_scope, [rowid for rowid, _ in earlier])
        leads = {rowid: current for (rowid, current), passes in zip(earlier, held, strict=True) if passes}
        ids = main.rowids_of(set(leads.values()))  # (one query: the main rows are not read whole for them)
        found = memo[key] = {rowid: (current, ids[current]) for rowid, current in leads.items() if current in ids}
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
    record_filter: RecordFilter,
    lifecycle: str,
    terms: QueryTerms,
    main: FtsProjection,
    history: FtsProjection,
    end: int | None,
) -> tuple[int, list[tuple[Match, str | None]]]:
    """(total, the result up to ``end`` at least; all of it when None) as ``ranked_matches`` gives it.

    Only the first ``end`` direct matches are put in order; the replacements, few, follow them all.
    """
    if not main.any_match(terms) and not history.any_match(terms):
        # no row holds the words: no filter's rows are found for it (a new process's first filter of a kind
        # cost a query with no hit ~30 ms at 300k records)
        return 0, []
    searched = [history] if lifecycle == "superseded" else [main, history] if lifecycle == "all" else [main]
    # the filter's rows answered by stored position where the rowmap does (``allowed_view``): where few rows hold
    # the words, each is tested against the filter (``few_rows``); a filter of one facet takes its rows' tokens
    # and runs from the build's sums; anything else makes their set
    sources = [Source(proj, allowed_view(proj, snap, record_filter)) for proj in searched]
    # superseded wording: earlier records rank among those whose current record passes the filters; which of
    # those current records match directly is read in parallel with the ranking (``ParallelRead``)
    active = lifecycle == "active"
    current_of, current_rows = _replaced(snap, record_filter, main, history) if active else ({}, set())
    direct_currents = _direct_currents(main, terms, current_rows, sources, end)
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

    def __init__(self, everything: ParallelRead[list[int]], rowids: set[int]) -> None:
        self.everything, self.rowids = everything, rowids

    def result(self) -> set[int]:
        return self.rowids.intersection(self.everything.result())


def _direct_currents(
    main: FtsProjection, terms: QueryTerms, rowids: set[int], sources: list[Source], end: int | None
) -> ParallelRead[set[int]] | _Among | None:
    """Which of superseded wording's current records (their rows) match the query themselves, read beside the
    ranking: from every row the expression matches where SQLite pages an unfiltered query (``top_matches``: its
    count is then their number, ``every_match_in_parallel``), else among those rows alone (from the phrases'
    counts where they are kept)."""
    if not rowids:
        return None
    phrases = terms.phrases
    paged = (
        end is not None
        and len(sources) == 1
        and sources[0].allowed is None
        and sources[0].projection is main
        and not all(main.has_counts(phrase) for phrase in phrases)
    )
    return _Among(main.every_match_in_parallel(terms), rowids) if paged else main.matching_in_parallel(terms, rowids)


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
    verifier: EvidenceVerifier,
    projections: tuple[FtsProjection, ...],
) -> list[dict[str, Any]]:
    """The page's hits; ``projections`` hold the records superseded wording leads to (main, history, expired)."""
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
    current_bodies = _bodies([c for _, c in page if c is not None], *projections)
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
            excerpt = opening_excerpt(r, current_bodies[current])
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


def _bodies(ids: list[str], *projections: FtsProjection) -> dict[str, str]:
    """id -> the body (its opening, past 64 KiB) of each record, from the first projection that holds it (at
    validAt, superseded wording may lead to a record superseded or expired since)."""
    out: dict[str, str] = {}
    for proj in projections:
        rows = {rid: rowid for rid in ids if rid not in out and (rowid := proj.ids.get(rid)) is not None}
        if rows:
            texts = proj.texts(rows.values(), body_limit=LARGE_BODY_BYTES)
            out.update((rid, texts[rowid][2]) for rid, rowid in rows.items())
    return out


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
