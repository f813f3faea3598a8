"""BM25 ranking over keyword projections, exact over any filtered subset of their rows.

Scoring is SQLite's own ``bm25()`` with weights title 8, aliases 6, body 1,
"as if the table held only the records that pass the filters". When nothing
is filtered out, that *is* ``bm25()`` on the table. Otherwise the same formula
(fts5_aux.c: k1 = 1.2, b = 0.75, IDF floored at 1e-6) is evaluated here from
the index itself: each row's weighted count of each phrase (read back from
``bm25()`` of that phrase alone, see ``FtsProjection.phrase_frequencies``), row
lengths from the FTS5 ``_docsize`` table, and row count, total tokens and
document frequencies taken over the filtered rows only. The tests check both
paths against ``bm25()`` on a table that really holds only the filtered records.

A page of a filtered query whose counts are not kept is settled from the rows ``bm25()`` ranks best
where a bound allows it (``_bounded_page``): their counts are read back for them alone, and no other
row can score as high as the page's last. A query asked again takes the same path (no ask pays for
arrays a later one might use: each call costs its own ranking).
"""

from __future__ import annotations

import heapq
import math
import sqlite3
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from knowtk.index.among import Among, rows_among
from knowtk.index.filtered import Allowed, AllowedRows, rows_of
from knowtk.index.fts import FtsProjection
from knowtk.index.fts_tables import K1, B, QueryTerms, columns
from knowtk.index.matching import TIES_ROWS
from knowtk.index.parallel_read import ParallelRead
from knowtk.model.shapes import shape

if TYPE_CHECKING:  # numpy is imported when arrays are needed (see top_matches), not with knowtk
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["Match", "Scored", "Source", "few_rows", "filtered_bm25", "rank", "top_matches"]

# rows SQLite hands over to ``_bounded_page`` (scored exactly; the page is settled when the k-th of them scores
# above what any other row can) and the relative margin its bound takes over rounding
BOUNDED_ROWS = 2000
BOUND_MARGIN = 1e-9
BOUND_MAX = 2.0  # past this bound (a filter raising a phrase's IDF that much) the page is seldom settled: not tried
KEEP_FROM_ROWS = 1000  # an unfiltered query keeps a phrase's counts from this many rows (fewer cost ~1 ms anyway)
# a filter allowing up to this share of the rows counts a common phrase over them alone
# (``_counts_over_filter``); past it, one pass over every row holding the phrase costs less
NARROW_SHARE = 0.5


@shape(slots=True)
class Source:
    """One projection and the rows of it that pass the query's scope and filters (None: all of them): a set, or
    where few rows hold the query's phrases (``few_rows``), an ``AllowedRows`` that answers without one."""

    projection: FtsProjection
    allowed: Allowed | None


@shape(frozen=True, slots=True)
class Match:
    score: float
    id: str
    rowid: int
    source: FtsProjection


def rank(sources: list[Source], terms: QueryTerms) -> list[Match]:
    """Every match over the union of the sources, best first (score descending, then id)."""
    return top_matches(sources, terms, None)[1]


def top_matches(sources: list[Source], terms: QueryTerms, k: int | None) -> tuple[int, list[Match]]:
    """(how many rows match, the best k of them in rank order; all when k is None).

    A common word matches most of the store; a page needs only its first k, so the rest
    are counted but never ordered. A query that ``bm25()`` scores alone (one source, nothing
    filtered out, its counts not kept) is ordered by SQLite, which hands over only the page
    (``native_top``; SQLite scores every match whatever is asked, a Python tuple per match cost
    ~25 ms more for 65k rows at 300k records), the first time as every time after: a query asked
    again takes the path it took the first time, or a cheaper one where counts are kept, never
    one that reads more (reading every row to keep a phrase's counts made a second ask of a
    common word cost 2.6x SQLite's ranking). A filtered query is scored in plain Python where
    fewer than ``KEEP_FROM_ROWS`` rows hold its phrases, or in a process without numpy: the
    same doubles, the same order, and a process answering it imports no numpy.
    """
    native = _native(sources, terms)
    rows: list[tuple[int, float]] | None = None
    if native:
        proj = sources[0].projection
        if k is not None:  # a page of a query whose counts are not kept: SQLite orders it, asked again or not
            top = proj.native_top(terms, k)
            if top is not None:
                return proj.match_count(terms), _top_native_plain(top, sources, k)[1]
        rows = proj.native_rows(terms)
        if len(rows) < KEEP_FROM_ROWS or not arrays_loaded():
            return _top_native_plain(rows, sources, k)
    if any(isinstance(src.allowed, AllowedRows) for src in sources):
        by_position = _by_position(sources, terms, k)
        if by_position is not None:
            return by_position
    if rows is None and k is not None and len(sources) == 1 and sources[0].allowed is not None:
        bounded = _bounded_page(sources[0], terms, k)
        if bounded is not None:
            return bounded[0], [Match(-neg, rid, rowid, sources[0].projection) for neg, rid, rowid, _ in bounded[1]]
    # (from here on, every filter's rows as a set)
    sources = [
        src if not isinstance(src.allowed, AllowedRows) else Source(src.projection, src.allowed.rows())
        for src in sources
    ]
    if rows is None:
        plain = _filtered_plain(sources, terms)
        if plain is not None:
            return _top_plain(plain, sources, k)
    import numpy as np

    negated, rowids, which = _scored(sources, terms, rows)
    count = len(rowids)
    if k is not None and k < count:
        # every row scoring at least the k-th best score (ties included), then ordered by (score, id)
        kth = np.partition(negated, k - 1)[k - 1] if k > 0 else -np.inf
        chosen = np.flatnonzero(negated <= kth)
    else:
        chosen = np.arange(count)
    keyed: list[Keyed] = []
    negs, picked, srcs = negated[chosen].tolist(), rowids[chosen].tolist(), which[chosen].tolist()
    for neg, rowid, i in zip(negs, picked, srcs, strict=True):
        keyed.append((neg, sources[i].projection.id_of[rowid], rowid, i))
    keyed.sort()
    if k is not None:
        del keyed[k:]
    return count, [Match(-neg, rid, rowid, sources[i].projection) for neg, rid, rowid, i in keyed]


# (-score, id, rowid, source index): sorts in rank order as plain tuples (ids are unique across sources)
Keyed = tuple[float, str, int, int]
Scored = tuple["NDArray[np.float64]", "NDArray[np.int64]", "NDArray[np.int64]"]  # -score, rowid, source index


def _native(sources: list[Source], terms: QueryTerms) -> bool:
    """True when SQLite's ``bm25()`` scores the query: one source, nothing filtered out, some counts not kept."""
    if len(sources) != 1 or sources[0].allowed is not None:
        return False
    proj = sources[0].projection
    return not all(proj.has_counts(phrase) for phrase in terms.phrases)


def few_rows(projections: list[FtsProjection], terms: QueryTerms) -> bool:
    """Whether few rows of each projection can match the query: fewer than ``KEEP_FROM_ROWS`` hold each phrase,
    or in mode ``all``, one of them. A filtered ranking then tests the rows that hold the phrases against the
    filter one by one (``AllowedRows``), where making the set of the rows a filter allows cost a new process's
    first filter more than the ranking (15-20 ms at 300k records for a word a dozen rows hold)."""
    for proj in projections:  # (a common phrase is not counted here: at most KEEP_FROM_ROWS of its rows read)
        fewer = (proj.fewer_than(phrase, KEEP_FROM_ROWS) for phrase in terms.phrases)
        if not (any(fewer) if terms.mode == "all" else all(fewer)):
            return False
    return True


def _by_position(sources: list[Source], terms: QueryTerms, k: int | None) -> tuple[int, list[Match]] | None:
    """``top_matches`` over sources whose allowed rows are answered by position (``AllowedRows``), where few rows
    hold the phrases: their rows read whole and each tested against the filter; in mode ``all``, the matches (as
    few as the rarest phrase's rows) tested first, so that a query no allowed row matches counts nothing more.
    None where a phrase is common and some allowed row matches: then ranked over the sets, as any filter."""
    if not few_rows([src.projection for src in sources], terms):
        return None
    if terms.mode == "all" and len(terms.phrases) > 1:
        matched = (
            src.allowed is None or any(map(src.allowed.__contains__, src.projection.rowids_matching(terms.expression)))
            for src in sources
        )
        if not any(matched):
            return 0, []
    if not all(src.projection.fewer_than(phrase, KEEP_FROM_ROWS) for src in sources for phrase in terms.phrases):
        return None
    plain = _filtered_plain(sources, terms)  # (each phrase's rows read whole, tested by position)
    return _top_plain(plain, sources, k) if plain is not None else None


def arrays_loaded() -> bool:
    """Whether numpy is imported in this process already (then arrays cost nothing more to start)."""
    return "numpy" in sys.modules


def _top_native_plain(rows: list[tuple[int, float]], sources: list[Source], k: int | None) -> tuple[int, list[Match]]:
    """top_matches over ``bm25()``'s own rows in plain Python: the rows scoring at least the k-th
    best (ties included) ordered by (score, id), as the numpy path picks them."""
    count = len(rows)
    if k is not None and k < count:
        kth = heapq.nsmallest(k, (neg for _, neg in rows))[-1] if k > 0 else -math.inf
        rows = [row for row in rows if row[1] <= kth]
    id_of = sources[0].projection.id_of
    keyed = sorted((neg, id_of[rowid], rowid, 0) for rowid, neg in rows)
    if k is not None:
        del keyed[k:]
    return count, [Match(-neg, rid, rowid, sources[0].projection) for neg, rid, rowid, _ in keyed]


def _top_plain(keyed: list[Keyed], sources: list[Source], k: int | None) -> tuple[int, list[Match]]:
    """top_matches over scored rows in plain Python: the same (score, id) order."""
    best = sorted(keyed) if k is None or k >= len(keyed) else heapq.nsmallest(k, keyed)
    return len(keyed), [Match(-neg, rid, rowid, sources[i].projection) for neg, rid, rowid, i in best]


def _filtered_plain(sources: list[Source], terms: QueryTerms) -> list[Keyed] | None:
    """``filtered_bm25`` in plain Python, where fewer than ``KEEP_FROM_ROWS`` rows hold each phrase, or
    in a process without numpy (importing it, ~100 ms, cost a query more than scoring it here; a process
    that has it keeps a common phrase's counts as arrays), or where a narrow filter's rows alone are
    counted (``_counts_over_filter``: by SQLite).

    None otherwise (numpy then scores it). The same operations in the same order, so the same
    doubles (``tests/test_ranking_ties.py`` compares the two paths, ``tests/test_bm25.py`` both with ``bm25()``).
    """
    phrases = terms.phrases
    counts: list[list[dict[int, float]]] = []  # per phrase, per source: rowid -> count, allowed rows only
    hits: list[list[int]] = []  # per phrase, per source: how many allowed rows hold it (or a lower bound: below)
    later: list[list[tuple[int, int]]] = [[] for _ in sources]  # per source: (phrase, whole-table row count) of
    # phrases whose counts only the candidates need (``_counts_over_filter``)
    among: dict[int, Among] = {}  # per source: its allowed rows for SQLite (``rows_among``), made once
    uncounted: list[tuple[int, int]] = []  # (phrase, source) whose hits are a lower bound, counted if need be
    whole_of: dict[tuple[int, int], int] = {}  # (phrase, source) -> rows of the whole table holding it, where counted
    for p, phrase in enumerate(phrases):
        per_source, held = [], []
        for i, src in enumerate(sources):
            first = _counts_over_filter(src, phrase, terms, among, i)
            if first is not None:
                n_held, found, whole = first
                whole_of[p, i] = whole
                if found is None:
                    later[i].append((p, whole))
                if n_held is None:  # not counted yet: at least the allowed rows less those of the table without it
                    n_held = max(0, len(cast(set[int], src.allowed)) - (len(src.projection.tokens) - whole))
                    uncounted.append((p, i))
                per_source.append({} if found is None else found)
                held.append(n_held)
                continue
            proj = src.projection
            limit = KEEP_FROM_ROWS if arrays_loaded() else sys.maxsize
            found = proj.plain_counts(phrase, limit)
            if found is None:
                return None
            allowed = src.allowed
            per_source.append(found if allowed is None else {r: c for r, c in found.items() if r in allowed})
            held.append(len(per_source[-1]))
        counts.append(per_source)
        hits.append(held)
    n_rows = n_tokens = 0
    for src in sources:
        proj = src.projection
        n_rows += len(proj.tokens) if src.allowed is None else len(src.allowed)
        # as allowed_tokens sums token_array (-1 where no row is held)
        n_tokens += proj.total_tokens if src.allowed is None else _tokens_in(proj, src.allowed)
    if n_rows == 0 or not phrases:
        return []
    avgdl = float(n_tokens) / float(n_rows)
    idf = []
    for p, held in enumerate(hits):
        n_hit = sum(held)
        if any(q == p for q, _ in uncounted) and not _lower_bound_floors(n_hit, n_rows):
            # the lower bound does not settle the IDF: count the allowed rows holding the phrase
            for q, i in uncounted:
                if q == p:
                    held[i] = sources[i].projection.hit_count(phrases[p], among[i], whole=whole_of[p, i])
            n_hit = sum(held)
        value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        idf.append(value if value > 0.0 else 1e-6)
    keyed: list[Keyed] = []
    for i, src in enumerate(sources):
        # every row of the source allowed: its candidates are the query's matches, and bm25() of the whole query
        # for them gives the count of the phrase most rows hold (``_solved_later``)
        native = src.projection.native_rows(terms) if later[i] and src.allowed is None else None
        if native is not None:
            candidates = {rowid for rowid, _ in native}
        else:
            candidates = _candidates(src, terms, [per_source[i] for per_source in counts], later[i], among.get(i))
        # their ids and lengths read at once: one at a time, past 2,000 of them, the rows table is read whole
        # (~100 ms at 100k records, on whichever query comes first)
        src.projection.prefetch(candidates)
        if later[i] and candidates:  # counted for the candidates alone (their JSON array made once)
            solved = _solved_later(src.projection, terms, native, [c[i] for c in counts], later[i], candidates)
            for p, per_row in solved.items():
                counts[p][i] = per_row
        weighted = [(idf[p], counts[p][i]) for p in range(len(phrases))]
        _score(src.projection, candidates, weighted, avgdl, i, keyed)
    return keyed


def _tokens_in(proj: FtsProjection, allowed: Allowed) -> int:
    """Tokens in the allowed rows: an ``AllowedRows`` summed them by position."""
    return allowed.tokens if isinstance(allowed, AllowedRows) else proj.tokens_in(allowed)


def _solved_later(
    proj: FtsProjection,
    terms: QueryTerms,
    native: list[tuple[int, float]] | None,
    counted: list[dict[int, float]],
    later: list[tuple[int, int]],
    candidates: set[int],
) -> dict[int, dict[int, float]]:
    """phrase -> rowid -> count of the phrases counted for the candidates alone (``later``: (phrase, rows of the
    table holding it)), read back by ``bm25()`` of each phrase for them; with ``native`` (bm25() of the whole query
    for every match of a source whose every row is allowed), the phrase most rows hold is solved from it instead,
    its score less the other phrases' terms (``counts_left``, as ``_bounded_page`` does): no pass over its rows."""
    kept_to = rows_among(candidates)
    deferred = dict(later)
    if native is None:
        return {p: proj.counts_among(terms.phrases[p], kept_to, hits=whole) for p, whole in later}
    n_table = len(proj.tokens)
    wholes = {p: deferred.get(p, len(counted[p])) for p in range(len(terms.phrases))}  # (the others: every row)

    def table_idf(whole: int) -> float:
        value = math.log((n_table - whole + 0.5) / (whole + 0.5))
        return value if value > 0.0 else 1e-6

    left = max(deferred, key=deferred.__getitem__)
    known = {p: counted[p] for p in wholes if p not in deferred}
    known.update({p: proj.counts_among(terms.phrases[p], kept_to, hits=w) for p, w in later if p != left})
    solved = proj.counts_left(native, [(table_idf(wholes[p]), known[p]) for p in known], table_idf(wholes[left]))
    if solved is None:  # (a row out of step: counted as the others)
        solved = proj.counts_among(terms.phrases[left], kept_to, hits=wholes[left])
    return {p: known[p] if p != left else solved for p in deferred}


def _score(
    proj: FtsProjection,
    rowids: Iterable[int],
    weighted: list[tuple[float, dict[int, float]]],
    avgdl: float,
    i: int,
    keyed: list[Keyed],
) -> None:
    """Append (-score, id, rowid, i) of each row: BM25 with the weighted counts of each phrase and its IDF
    (``weighted``), the operations of fts5_aux.c in its order, so the doubles ``bm25()`` would give."""
    tokens, id_of = proj.tokens, proj.id_of
    for rowid in rowids:
        size = tokens.get(rowid, -1)
        d = float(size) if size > 0 else 0.0  # max(float(size), 0.0)
        norm = K1 * (1 - B + B * d / avgdl)  # the same double for every phrase of the row
        score = 0.0
        for weight, per_row in weighted:
            f = per_row.get(rowid, 0.0)
            score += weight * ((f * (K1 + 1.0)) / (f + norm))
        keyed.append((-score, id_of[rowid], rowid, i))


def _bounded_page(src: Source, terms: QueryTerms, k: int) -> tuple[int, list[Keyed]] | None:
    """The first k matches of a query over a filter, its phrases' counts not kept, scored for a few rows only;
    None where that does not settle them (``filtered_bm25``'s answer is then computed as before).

    ``bm25()`` scores with the whole table's statistics, the filter's (``filtered_bm25``) differ: the
    IDF of each phrase (e_p over the allowed rows, a_p over the table) and the average length. Per
    phrase, ``e_p * G(f, K_f) <= (e_p / a_p) * max(1, K_u / K_f) * a_p * G(f, K_u)`` for
    ``G(f, K) = f (k1 + 1) / (f + K)`` and any count f, and ``K_u / K_f <= max(1, avgdl_f / avgdl_u)``
    over every row length: a row's filtered score is at most ``bound`` times its ``bm25()`` score.
    SQLite orders the allowed matches by ``bm25()`` and hands over the best ``BOUNDED_ROWS``; the first
    of them are scored exactly (each phrase's counts read back for them alone, ``counts_among``). A row
    not scored scores at most ``bound`` times the last one scored: when the k-th exact score is above
    that, no other row can reach the page (nor tie with it), and the page is the one every allowed row
    scored would give. The same inequality the other way (``low``: the least ``e_p / a_p``, and
    ``min(1, avgdl_f / avgdl_u)``) bounds each exact score from below, so the rows scored are the fewest
    that settle the page whatever their exact scores (``_settling_rows``: ~100 of 2,000 for three words
    under a kind at 300k records; reading the ids and lengths of 2,000 rows cost a new process 6 ms).
    Costs SQLite's pass over the matches and a pass over each phrase's rows, where counting every
    candidate cost one scoring pass per phrase (16.6k candidates, 3 words: 185 ms).
    """
    proj, phrases = src.projection, terms.phrases
    if src.allowed is None or not src.allowed or not phrases or k < 1:
        return None
    if any(proj.has_counts(phrase) for phrase in phrases):
        return None  # counted from the kept counts (``filtered_bm25``), as cheap as this
    allowed, n_tokens, among = _filter_of(proj, src.allowed)
    n_table, table_tokens, n_rows = len(proj.tokens), proj.total_tokens, len(allowed)
    if n_table == 0 or table_tokens <= 0 or n_tokens <= 0:
        return None
    avgdl, avgdl_table = float(n_tokens) / float(n_rows), float(table_tokens) / float(n_table)
    limit = max(BOUNDED_ROWS, k + TIES_ROWS)
    # the rows SQLite ranks best, read beside the counts below where the allowed rows are ranges (an array is
    # better read for the matches alone, known after them)
    allowed_rows = among

    def best_rows(conn: sqlite3.Connection) -> list[tuple[int, float]]:
        return proj.top_among(terms, allowed_rows, limit, conn=conn)

    ahead = ParallelRead(proj, best_rows) if among.rows is None else None
    wholes = [proj.hit_count(phrase) for phrase in phrases]
    at_most = min(wholes) if terms.mode == "all" else sum(wholes)
    # the allowed matches counted first where few rows can match (then no phrase's allowed rows are counted for
    # an IDF when none does: 28 ms of a query with no hit under a tag at 300k); else after the bound is settled
    counted = _allowed_matches(proj, terms, allowed, among, at_most) if at_most < KEEP_FROM_ROWS else None
    if counted is not None and counted[0] == 0:
        return 0, []
    idf, table_idf, ratio, least = [], [], 0.0, math.inf
    for phrase, whole in zip(phrases, wholes, strict=True):
        n_hit = max(0, n_rows - (n_table - whole))  # at least these allowed rows hold it (``_filtered_plain``)
        if not _lower_bound_floors(n_hit, n_rows):
            n_hit = proj.hit_count(phrase, among, whole=whole)
        value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        idf.append(value if value > 0.0 else 1e-6)
        table = math.log((n_table - whole + 0.5) / (whole + 0.5))
        table_idf.append(table if table > 0.0 else 1e-6)
        ratio, least = max(ratio, idf[-1] / table_idf[-1]), min(least, idf[-1] / table_idf[-1])
    bound = ratio * max(1.0, avgdl / avgdl_table) * (1.0 + BOUND_MARGIN)
    if bound > BOUND_MAX:
        return None  # the filter changes the weights too much for SQLite's order to settle a page
    total, matched = counted if counted is not None else _allowed_matches(proj, terms, allowed, among, at_most)
    if total == 0:
        return 0, []
    best = ahead.result() if ahead is not None else proj.top_among(terms, matched, limit)
    # each row's filtered score is at least ``low`` times its bm25() score (as ``bound`` bounds it above): the first
    # rows of SQLite's order that settle the page whatever their exact scores are scored, not all it handed over
    low = least * min(1.0, avgdl / avgdl_table) * (1.0 - BOUND_MARGIN)
    scored = best[: _settling_rows(best, k, low, bound)]
    page = _exact_page(proj, terms, scored, wholes, (idf, table_idf), avgdl, k)
    if len(scored) < len(best) and not _settles(page, k, bound * -scored[-1][1]):
        scored = best  # (at the margin's rounding: every row handed over scored)
        page = _exact_page(proj, terms, scored, wholes, (idf, table_idf), avgdl, k)
    if len(scored) < total and not _settles(page, k, bound * -scored[-1][1]):
        return None  # a row not scored might score as high as the k-th: not settled
    return total, page


def _settles(page: list[Keyed], k: int, above: float) -> bool:
    """Whether a page of k is whole and its k-th exact score is above ``above`` (what a row not scored can reach)."""
    return len(page) == k and -page[-1][0] > above


def _settling_rows(best: list[tuple[int, float]], k: int, low: float, bound: float) -> int:
    """How many of ``best`` (rowid, -bm25() score, best first) settle a page of k: the fewest, k at least, whose
    last scores below ``low / bound`` of the k-th's. The k-th exact score is at least ``low`` times the k-th bm25()
    score, and a row past the last scored at most ``bound`` times its own: none can reach the page (at most all)."""
    if len(best) <= k or k < 1:
        return len(best)
    below = -best[k - 1][1] * low / bound
    for at in range(k - 1, len(best)):
        if -best[at][1] < below:  # (the last row scored)
            return at + 1
    return len(best)


def _exact_page(
    proj: FtsProjection,
    terms: QueryTerms,
    rows: list[tuple[int, float]],
    wholes: list[int],
    idfs: tuple[list[float], list[float]],
    avgdl: float,
    k: int,
) -> list[Keyed]:
    """The best k of ``rows`` (rowid, -bm25() score) by their filtered score: each phrase's count read back for
    them alone; ``idfs``: (the filtered IDF, the table's) of each phrase."""
    phrases, (idf, table_idf) = terms.phrases, idfs
    rowids = [rowid for rowid, _ in rows]
    proj.prefetch(rowids)  # (their lengths and ids, read at once: a new process has not read the rows table)
    if len(phrases) == 1:
        counts = [proj.counts_of(rows, hits=wholes[0])]  # bm25() of the phrase alone: solved as they are
    else:  # each phrase counted for them but the one most rows hold (its pass the longest): solved from the
        # whole query's score less the others' terms
        kept_to = rows_among(set(rowids))
        left = max(range(len(phrases)), key=wholes.__getitem__)
        others = [p for p in range(len(phrases)) if p != left]

        def first_scores(conn: sqlite3.Connection) -> list[tuple[int, float]]:
            return proj.scored_among(phrases[others[0]], kept_to, hits=wholes[others[0]], conn=conn)

        beside = ParallelRead(proj, first_scores)  # (one phrase read on the other core while the others are read here)
        known = {p: proj.counts_among(phrases[p], kept_to, hits=wholes[p]) for p in others[1:]}
        known[others[0]] = proj.counts_of(beside.result(), hits=wholes[others[0]])
        solved = proj.counts_left(rows, [(table_idf[p], known[p]) for p in known], table_idf[left])
        known[left] = solved if solved is not None else proj.counts_among(phrases[left], kept_to, hits=wholes[left])
        counts = [known[p] for p in range(len(phrases))]
    keyed: list[Keyed] = []
    _score(proj, rowids, list(zip(idf, counts, strict=True)), avgdl, 0, keyed)
    return heapq.nsmallest(k, keyed)


def _filter_of(proj: FtsProjection, allowed: Allowed) -> tuple[Allowed, int, Among]:
    """(the allowed rows, their tokens, the statement form that keeps to them): from the build's sums where an
    ``AllowedRows`` has them (no set made: ``filter_sums``), else from the set."""
    if isinstance(allowed, AllowedRows):
        among = allowed.among()
        if among is not None:
            return allowed, allowed.tokens, among
        allowed = allowed.rows()
    return allowed, proj.tokens_in(allowed), proj.among(allowed)


def _allowed_matches(
    proj: FtsProjection, terms: QueryTerms, allowed: Allowed, among: Among, at_most: int
) -> tuple[int, Among]:
    """(how many allowed rows match the query, the rows SQLite then scores: the allowed, or the matches alone
    where they are found here; ``at_most``: how many rows of the table match at most)."""
    if among.looked_up_here(at_most):  # the matches found here: their count, and SQLite scores them alone
        matches = list(filter(allowed.__contains__, proj.rowids_matching(terms.expression)))
        return len(matches), rows_among(matches)
    return proj.match_count(terms, among), among


def _lower_bound_floors(n_hit: int, n_rows: int) -> bool:
    """Whether at least ``n_hit`` rows of ``n_rows`` holding a phrase floor its IDF at 1e-6 whatever their exact
    number: log((n_rows - n + 0.5) / (n + 0.5)) <= 0 exactly when 2n >= n_rows, and more rows only lower it."""
    return 2 * n_hit >= n_rows


def _counts_over_filter(
    src: Source, phrase: tuple[str, ...], terms: QueryTerms, among: dict[int, Among], i: int
) -> tuple[int | None, dict[int, float] | None, int] | None:
    """(allowed rows holding the phrase, their counts, rows holding it in the whole table) of a common phrase
    whose counts are not kept, counted by SQLite over the allowed rows alone; None: counted from every row
    holding it (``plain_counts``).

    ``bm25()`` of the phrase alone over every row holding it cost ~150 ms for a word 90% of 100k rows hold:
    here SQLite counts the allowed rows holding it without scoring them, and ``bm25()`` scores
    only the rows that need a count. In mode ``all`` with several phrases those are the candidates (the
    allowed rows matching the whole expression), known later: the counts are then None, and
    ``_filtered_plain`` asks ``counts_among`` for the candidates alone; so are the allowed rows holding it,
    counted only if the IDF needs them (a word most allowed rows hold has its IDF floored at 1e-6 whatever
    their exact number: ``_filtered_plain`` tries a lower bound first). That holds for any filter, and for a
    source of which every row is allowed (``lifecycle: all`` ranks two: "can experiment" cost 250 ms for
    its pass over "can" where ``bm25()`` of the query took 14 ms). Otherwise every row holding the phrase
    needs its count: counted among the allowed rows where the filter allows at most ``NARROW_SHARE`` of
    them, else in one pass over its rows. Asked again, it is counted so again (a second ask costs what the
    first did). Not for a phrase of several words (counting it in the whole table is a pass over its rows,
    matching positions).
    """
    proj, allowed = src.projection, src.allowed
    if len(phrase) > 1 or proj.has_counts(phrase):
        return None
    later = terms.mode == "all" and len(terms.phrases) > 1  # counted for the candidates alone
    if not later and (allowed is None or len(allowed) > NARROW_SHARE * len(proj.tokens)):
        return None
    whole = proj.hit_count(phrase)
    if whole < KEEP_FROM_ROWS:
        return None  # few rows hold it: reading them all costs no more
    if allowed is None:  # (every row allowed: as many hold it as in the whole table)
        return whole, None, whole
    if i not in among:
        among[i] = proj.among(cast(set[int], rows_of(allowed)))
    if later:
        return None, None, whole
    found = proj.counts_among(phrase, among[i], hits=whole)
    return len(found), found, whole


def _candidates(
    src: Source, terms: QueryTerms, found: list[dict[int, float]], later: list[tuple[int, int]], among: Among | None
) -> set[int]:
    """The source's rows that match: the allowed rows matching the whole expression where some phrase's
    counts are known only for them (``later``), else from the rows each phrase's counts hold."""
    if later:  # (mode all: it matches at most the rows of the whole table holding any one of its phrases)
        at_most = min(whole for _, whole in later)
        return src.projection.matches_among(terms, among, at_most=at_most) if among is not None else set()
    holding = [set(f) for f in found]
    return set.union(*holding) if terms.mode == "any" else set.intersection(*holding)


def _scored(sources: list[Source], terms: QueryTerms, rows: list[tuple[int, float]] | None) -> Scored:
    """(-score, rowid, source index) of every match; rows: bm25()'s own, when it scores the query (_native)."""
    import numpy as np

    if rows is not None:  # bm25() already scores over exactly this corpus
        proj = sources[0].projection
        negated, rowids = columns(rows)
        phrases = terms.phrases
        if len(phrases) == 1 and len(rowids) >= KEEP_FROM_ROWS:  # bm25() of the phrase alone: keep its counts
            proj.counts_from_scores(phrases[0], negated, rowids)
        return negated, rowids, np.zeros(len(rowids), dtype=np.int64)
    # every phrase's counts kept: the same doubles bm25() gives (tests/test_ranking_ties.py: bit for bit)
    return filtered_bm25(sources, terms)


def filtered_bm25(sources: list[Source], terms: QueryTerms) -> Scored:
    """bm25() as SQLite computes it, over a corpus made only of the allowed rows of the sources.

    Evaluated on numpy arrays with the operations, in the order, of fts5_aux.c's loop (so the
    doubles are the same): one pass per phrase over the rows that hold it.
    """
    import numpy as np

    empty: Scored = (np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    n_rows = 0
    n_tokens = 0
    for src in sources:
        proj = src.projection
        allowed = rows_of(src.allowed)
        if allowed is None:
            n_rows += len(proj.tokens)
            n_tokens += proj.total_tokens
        else:
            n_rows += len(allowed)
            n_tokens += proj.allowed_tokens(allowed)
    if n_rows == 0:
        return empty
    avgdl = float(n_tokens) / float(n_rows)
    span = max(len(src.projection.token_array()) for src in sources)  # (source, rowid) -> source * span + rowid
    phrases = terms.phrases
    keys: list[NDArray[np.int64]] = []  # per phrase: sorted keys of the allowed rows holding it
    counts: list[NDArray[np.float64]] = []  # the weighted count of each, aligned
    idf = []
    for phrase in phrases:
        parts_k, parts_f = [], []
        for i, src in enumerate(sources):
            rowids, freq = src.projection.phrase_arrays(phrase, rows_of(src.allowed))
            parts_k.append(rowids + i * span)
            parts_f.append(freq)
        key, freq = np.concatenate(parts_k), np.concatenate(parts_f)
        order = np.argsort(key, kind="stable")
        keys.append(key[order])
        counts.append(freq[order])
        n_hit = len(key)
        value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        idf.append(value if value > 0.0 else 1e-6)
    if not phrases:
        return empty
    candidates = keys[0]
    for key in keys[1:]:
        candidates = _union(candidates, key) if terms.mode == "any" else _intersection(candidates, key)
    which = candidates // span
    rowids = candidates - which * span
    d = np.empty(len(candidates))
    for i, src in enumerate(sources):
        here = which == i
        d[here] = np.maximum(src.projection.token_array()[rowids[here]], 0.0)
    score = np.zeros(len(candidates))
    for p in range(len(phrases)):
        at = np.searchsorted(keys[p], candidates)
        hit = at < len(keys[p])
        hit[hit] = keys[p][at[hit]] == candidates[hit]
        f = np.zeros(len(candidates))
        f[hit] = counts[p][at[hit]]
        score += idf[p] * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
    return -score, rowids, which


# np.union1d and np.intersect1d (without assume_unique) call np.unique, which in numpy 2.x imports numpy.ma
# (~65 ms, once per process: a new process's first query that needed them paid it). The keys are sorted and
# distinct already, so both are one sort of the two arrays together: the same sorted distinct values.
def _union(a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
    """The sorted distinct values of two arrays of distinct values (``np.union1d``)."""
    import numpy as np

    both = np.concatenate((a, b))
    both.sort()
    if len(both) < 2:
        return both
    keep = np.empty(len(both), dtype=bool)
    keep[0] = True
    np.not_equal(both[1:], both[:-1], out=keep[1:])
    return both[keep]


def _intersection(a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
    """The sorted values two arrays of distinct values share (``np.intersect1d``)."""
    import numpy as np

    return np.intersect1d(a, b, assume_unique=True)
