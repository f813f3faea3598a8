"""The shortcuts of a query's first call give the answers of the paths they replace.

- ``FtsProjection.matching`` asks for many rows in one pass over the expression's rows (``SCAN_FROM_ROWS``):
  the rows FTS5 finds seeking each of them.
- ``filtered_bm25`` merges the phrases' sorted keys without ``np.union1d``/``np.intersect1d`` (which import
  numpy.ma): the same arrays.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from knowtk.index import among as among_module
from knowtk.index import bm25, filtered, fts, matching, parallel_read
from knowtk.index.fts_tables import QueryTerms
from knowtk.index.matching import Matches
from tests.helpers import StoreBuilder
from tests.test_kept_counts import _build


@pytest.mark.parametrize("mode", ["all", "any", "phrase"])
def test_matching_in_one_pass_is_the_seeks_answer(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    rng = random.Random(11)
    _build(builder, rng, 120)
    store = builder.open()
    main = store.engine.keyword(store.snapshot()).main
    rowids = sorted(main.id_of)
    asked_sets = [
        rng.sample(rowids, 60),  # scattered: a JSON array
        rowids[10:70],  # every rowid of a range: rowid BETWEEN
        rowids,
        [rowids[0]],
        [],
    ]
    for words in (("the",), ("the", "alpha"), ("alpha", "river", "cafe"), ("the", "absent")):
        terms = QueryTerms(words, mode)
        for asked in asked_sets:
            monkeypatch.setattr(matching, "SCAN_FROM_ROWS", 10**9)
            sought = main.matching(terms, asked)
            monkeypatch.setattr(matching, "SCAN_FROM_ROWS", 1)
            assert main.matching(terms, asked) == sought
            assert main.matching(terms, iter(asked)) == sought
    assert main.matching(QueryTerms(("the",), "all"), rowids)  # the test asked something that matches


def test_union_and_intersection_are_numpys() -> None:
    rng = random.Random(5)
    for _ in range(200):
        a = np.array(sorted(rng.sample(range(300), rng.randint(0, 40))), dtype=np.int64)
        b = np.array(sorted(rng.sample(range(300), rng.randint(0, 40))), dtype=np.int64)
        union, meet = bm25._union(a, b), bm25._intersection(a, b)
        assert union.dtype == np.int64 and meet.dtype == np.int64
        assert union.tolist() == np.union1d(a, b).tolist()
        assert meet.tolist() == np.intersect1d(a, b).tolist()


def test_a_word_most_allowed_rows_hold_is_not_counted_among_them_and_scores_the_same(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In mode ``all`` over a filter, the allowed rows holding a common word are counted only where the IDF needs
    them: a lower bound (the allowed rows less the table's rows without the word) past half of the allowed rows
    floors it whatever the count. Bit for bit the answers of counting them, and of counting every row as before."""
    from knowtk.index.among import Among
    from knowtk.index.fts import FtsProjection
    from tests.test_ranking_ties import _asked, _common_store, _random_filters

    _common_store(builder)
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)
    monkeypatch.setattr(bm25, "_bounded_page", lambda *a: None)  # (the path of a page it does not settle)
    rng = random.Random(3)
    calls = [
        {"query": q, "mode": "all", "limit": 50, "lifecycle": lifecycle, **f}
        for q in ("alpha beta gamma", "alpha beta", "alpha absentword", "beta sigma")
        for lifecycle in ("active", "all")
        for f in _random_filters(rng, 4)
    ]
    counted: list[bool] = []  # per hit_count: among some rows (else over the whole table)
    hit_count = FtsProjection.hit_count

    def spy(self: FtsProjection, phrase: tuple[str, ...], among: Among | None = None, **whole: int | None) -> int:
        counted.append(among is not None)
        return hit_count(self, phrase, among, **whole)

    monkeypatch.setattr(FtsProjection, "hit_count", spy)
    bounded = _asked(builder, calls)
    among_bounded = counted.count(True)
    monkeypatch.setattr(bm25, "_lower_bound_floors", lambda *a: False)  # every allowed row holding it counted
    counted.clear()
    exact = _asked(builder, calls)
    assert 0 < among_bounded < counted.count(True)  # the bound settled some IDFs, not all of them
    monkeypatch.setattr(bm25, "_counts_over_filter", lambda *a: None)  # every row holding the word, as before
    assert bounded == exact == _asked(builder, calls)
    assert sum(len(a) > 1 for a in bounded) > len(calls) // 2


def test_rows_looked_up_here_or_by_sqlite_give_the_same_answers(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter's rows that are no range are looked up by SQLite (``json_each``) or, where the rows an expression
    matches are fewer than a few times them, read whole and looked up here (``Among.looked_up_here``): counts,
    matches and scores bit for bit the same, both ways taken."""
    from tests.test_ranking_ties import _asked, _common_store, _random_filters

    _common_store(builder)
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)
    rng = random.Random(8)
    calls = [
        {"query": q, "mode": mode, "limit": 50, "lifecycle": lifecycle, **f}
        for q in ("alpha beta gamma", "alpha beta", "beta", "beta sigma")
        for mode in ("all", "any")
        for lifecycle in ("active", "all")
        for f in _random_filters(rng, 4)
    ]
    read_here: list[str] = []
    rowids_matching = Matches.rowids_matching

    def spy(self: Matches, expression: str, **conn: Any) -> list[int]:
        read_here.append(expression)
        return rowids_matching(self, expression, **conn)

    monkeypatch.setattr(Matches, "rowids_matching", spy)
    monkeypatch.setattr(among_module, "RUNS_AT_MOST", 0)  # (a filter's rows as an array: no ranges, no rows besides)
    monkeypatch.setattr(among_module, "EXTRA_AT_MOST", -1)
    monkeypatch.setattr(among_module, "LOOKUP_RATIO", 0)  # never here
    by_sqlite = _asked(builder, calls)
    assert not read_here
    monkeypatch.setattr(among_module, "LOOKUP_RATIO", 10**9)  # here wherever the matching rows are known
    here = _asked(builder, calls)
    assert len(read_here) > len(calls) // 4
    assert here == by_sqlite
    assert sum(len(a) > 1 for a in here) > len(calls) // 3


@pytest.mark.parametrize("folders", [5, 300])  # codes of one byte, and of two (past 256 folders)
def test_facet_columns_select_what_each_record_passes(folders: int) -> None:
    """``FacetColumns.select`` reads a column's codes in C (a byte table, or a set's lookup for wider codes):
    the records whose facets pass the criteria, in stored order."""
    from knowtk.snapshot.facets import Criteria, Facet, FacetColumns, encode_columns

    rng = random.Random(folders)
    names = [f"f{i}" if i % 3 else f"f{i - 1}/s{i}" for i in range(folders)]
    facets = [
        Facet(
            rng.choice(names),
            rng.choice(["page", "claim"]),
            rng.choice(["note", "memo", "call"]),
            tuple(rng.sample("abcd", rng.randint(0, 2))),
        )
        for _ in range(1500)
    ]
    ids = [f"r{i}" for i in range(len(facets))]
    columns = FacetColumns(encode_columns(facets), ids, {})
    assert (columns.column("folder").typecode == "B") == (folders < 256)
    for criteria in (
        Criteria(scope=(names[1],)),
        Criteria(scope=(names[2], names[-1])),
        Criteria(kinds=frozenset({"claim"})),
        Criteria(types=frozenset({"note", "call"}), kinds=frozenset({"page"})),
        Criteria(scope=(names[1],), tags=("a",)),
        Criteria(tags=("b", "c")),
        Criteria(kinds=frozenset({"nothing"})),
        Criteria(),
    ):
        want = [rid for rid, f in zip(ids, facets, strict=True) if criteria.passes(f)]
        assert columns.select(criteria) == want


def test_allowed_rows_found_in_one_pass_or_looked_up_are_the_same(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter's rows: one pass over the projection's ids (a wide filter) or a lookup of each selected id."""
    from knowtk.query.common import RecordFilter
    from tests.test_ranking_ties import _common_store, _random_filters

    _common_store(builder)
    store = builder.open()
    snap = store.snapshot()
    index = store.engine.keyword(snap)
    filters = _random_filters(random.Random(13), 12)
    sizes = []
    for args in [*filters, {"scope": "w"}, {"kind": "page"}, {"tag": "a"}]:
        flt = RecordFilter.from_args(snap, {k: (v,) if k in ("kind", "tag", "type") else v for k, v in args.items()})
        for proj in (index.main, index.history):
            monkeypatch.setattr(filtered, "LOOKUP_SHARE", 0.0)
            in_one_pass = filtered.rows_passing(proj, snap, flt)
            monkeypatch.setattr(filtered, "LOOKUP_SHARE", 2.0)
            looked_up = filtered.rows_passing(proj, snap, flt)
            assert in_one_pass == looked_up
            want = {rowid for rid, rowid in proj.ids.items() if flt.passes(snap.records[rid])}
            assert in_one_pass == want
            sizes.append(len(want) / max(1, len(proj.ids)))
    assert max(sizes) > 0.2 > min(s for s in sizes if s)  # filters on both sides of the usual share


def test_a_filters_rows_for_sqlite_and_their_tokens_are_kept_for_that_set_and_those_rows(builder: StoreBuilder) -> None:
    """``among`` and ``tokens_in`` are ``rows_among`` and the plain sum of the rows' tokens, made again for
    another set (even an equal one) and after the rows change."""
    rng = random.Random(17)
    _build(builder, rng, 60)
    store = builder.open()
    main = store.engine.keyword(store.snapshot()).main
    rowids = sorted(main.id_of)
    allowed = set(rng.sample(rowids, 25))
    among = main.among(allowed)
    assert among == among_module.rows_among(allowed)
    assert main.among(allowed) is among  # kept
    assert main.among(set(allowed)) is not among  # another set object: made again (a set may be another's later)
    assert main.tokens_in(allowed) == sum(main.tokens[r] for r in allowed)
    assert main.tokens_in(allowed | {max(rowids) + 5}) == main.tokens_in(allowed) - 1  # a row the mirror lacks
    builder.write("r/r000.md", {"id": "r000", "kind": "page", "type": "note", "title": "changed"}, "quite new words\n")
    store.call("knowledge_grep", {"query": "quite"})  # the rows change (reconcile)
    assert main.among(allowed) is not among  # made again for the rows as they are
    assert main.tokens_in(allowed) == sum(main.tokens.get(r, -1) for r in allowed)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("ties_rows", [2, 256])
@pytest.mark.parametrize("k", [1, 3, 10, 40, 500])
def test_a_page_sqlite_orders_is_the_page_of_every_row_ranked(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, k: int, ties_rows: int, split: bool
) -> None:
    """A new process's page of a query ``bm25()`` scores alone is ordered by SQLite (``native_top``: k + 1 rows
    and a count, every row otherwise): the same count, matches and scores as every row ranked, ties past the
    k-th score included (identical records tie: past ``TIES_ROWS`` more rows, every row is read). Ordered in
    two halves (``split``, the lower one read aside), the same."""
    rng = random.Random(k)
    _build(builder, rng, 120)
    for i in range(12):  # ties: the same text, so the same score
        builder.write(f"same/s{i:02d}.md", {"id": f"same-{i:02d}", "kind": "page", "title": "Zebra"}, "zebra crossing")
    store = builder.open()
    main = store.engine.keyword(store.snapshot()).main
    tops: list[bool] = []
    native_top = fts.FtsProjection.native_top

    def spy(self: fts.FtsProjection, terms: QueryTerms, k: int) -> list[tuple[int, float]] | None:
        found = native_top(self, terms, k)
        tops.append(found is not None)
        return found

    def patch() -> None:
        monkeypatch.setattr(fts.FtsProjection, "native_top", spy)
        monkeypatch.setattr(matching, "TIES_ROWS", ties_rows)
        monkeypatch.setattr(matching, "SPLIT_FROM_ROWS", 1 if split else 10**9)

    patch()
    store.engine.state.begin_query(immediate=False)  # (a query's transaction: the lower half may be read aside)
    for words, mode in (
        (("the",), "all"),
        (("zebra",), "all"),
        (("the", "alpha"), "any"),
        (("alpha", "the"), "phrase"),
    ):
        terms = QueryTerms(words, mode)
        sources = [bm25.Source(main, None)]
        expected = bm25.top_matches(sources, terms, None)  # every row ranked
        monkeypatch.setattr(bm25, "arrays_loaded", lambda: False)
        count, page = bm25.top_matches(sources, terms, k)
        monkeypatch.undo()
        patch()
        assert count == expected[0]
        assert [(m.id, m.score) for m in page] == [(m.id, m.score) for m in expected[1][:k]]
    store.engine.state.end_query(commit=False)
    assert True in tops  # SQLite's page taken, and every row read where the ties went past the rows fetched
    if not split:  # (in halves, the tied rows may fall short of a half's rows fetched)
        assert (False in tops) is (ties_rows < 12 and k <= 12)


@pytest.mark.parametrize("rows", [3, 2000])
def test_a_page_settled_from_the_rows_sqlite_ranks_best_is_every_rows_page(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, rows: int
) -> None:
    """A filtered query asked first is scored for the rows ``bm25()`` ranks best (``_bounded_page``), its page
    kept where no other row can reach it: bit for bit the page, scores and total of scoring every allowed row.
    With 3 rows handed over, some pages are settled and some are not (then every row is scored, as before)."""
    from tests.test_ranking_ties import _asked, _common_store, _random_filters

    _common_store(builder)
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)
    monkeypatch.setattr(bm25, "BOUNDED_ROWS", rows)
    monkeypatch.setattr(matching, "TIES_ROWS", 0)
    monkeypatch.setattr(bm25, "TIES_ROWS", 0)
    rng = random.Random(rows)
    calls = [
        {"query": q, "mode": mode, "limit": limit, "lifecycle": lifecycle, **f}
        for q, mode in (("alpha beta gamma", "all"), ("beta", "all"), ("alpha sigma", "any"), ("alpha beta", "phrase"))
        for lifecycle in ("active", "superseded")
        for limit in (1, 5)
        for f in _random_filters(rng, 3)
    ]
    outcomes: list[bool] = []
    bounded_page = bm25._bounded_page

    def spy(src: bm25.Source, terms: QueryTerms, k: int) -> tuple[int, list[bm25.Keyed]] | None:
        found = bounded_page(src, terms, k)
        outcomes.append(found is not None)
        return found

    solved: list[bool] = []  # a phrase's counts solved from the whole query's score (``counts_left``)
    counts_left = fts.FtsProjection.counts_left

    def spy_left(self: fts.FtsProjection, *args: Any) -> dict[int, float] | None:
        found = counts_left(self, *args)
        solved.append(found is not None)
        return found

    scored: list[tuple[int, int]] = []  # (rows scored, rows handed over): the fewest that settle (``_settling_rows``)
    settling_rows = bm25._settling_rows

    def spy_rows(best: list[tuple[int, float]], *args: Any) -> int:
        found = settling_rows(best, *args)
        scored.append((found, len(best)))
        return found

    monkeypatch.setattr(bm25, "_bounded_page", spy)
    monkeypatch.setattr(fts.FtsProjection, "counts_left", spy_left)
    monkeypatch.setattr(bm25, "_settling_rows", spy_rows)
    monkeypatch.setattr(bm25, "BOUND_MAX", float("inf"))
    bounded = _asked(builder, calls)
    settled = outcomes.count(True)
    assert solved and all(solved)  # every row of a page solved to a whole count
    if rows == 2000:  # some pages settled by fewer rows than SQLite handed over
        assert any(found < handed for found, handed in scored)
    monkeypatch.setattr(bm25, "_bounded_page", lambda *a: None)  # every allowed row scored
    assert bounded == _asked(builder, calls)
    assert sum(len(a) > 1 for a in bounded) > len(calls) // 3  # pages with hits, not only empty ones
    if rows == 3:  # some pages settled by 3 rows, some not: those scored whole, the same answers
        assert 0 < settled < len(outcomes)
    else:  # (every match of this small store handed over: settled, unless nothing could be tried)
        assert settled > len(calls) // 2


def test_the_rows_scored_settle_the_page_whatever_their_exact_scores() -> None:
    """``_settling_rows``: whatever each row's exact score between ``low`` and ``bound`` times its ``bm25()`` score,
    the best k of the rows scored are the best k of every row, and no row left out can reach the k-th."""
    rng = random.Random(41)
    truncated = 0
    for _ in range(2000):
        n, k = rng.randint(1, 300), rng.randint(1, 25)
        scores = sorted((rng.uniform(0.1, 20.0) for _ in range(n)), reverse=True)
        if rng.random() < 0.3:  # ties
            scores = sorted((round(s) + 0.5 for s in scores), reverse=True)
        best = [(i, -s) for i, s in enumerate(scores)]
        low, bound = rng.uniform(0.5, 1.0), rng.uniform(1.0, 1.6)
        exact = {i: s * rng.uniform(low, bound) for i, s in enumerate(scores)}
        m = bm25._settling_rows(best, k, low, bound)
        assert min(k, n) <= m <= n
        if m < n:
            truncated += 1
            page = sorted((-exact[i], i) for i, _ in best[:m])[:k]
            assert page == sorted((-exact[i], i) for i, _ in best)[:k]
            assert -page[-1][0] > bound * scores[m - 1]  # (the check ``_bounded_page`` makes)
    assert truncated > 200


def test_a_count_left_to_solve_is_refused_where_the_scores_do_not_fit(builder: StoreBuilder) -> None:
    """``counts_left`` solves one phrase's counts from the whole query's ``bm25()`` less the others' terms: the
    counts SQLite gives for that phrase alone; an IDF that is not the table's makes no whole count (None)."""
    rng = random.Random(4)
    _build(builder, rng, 80)
    store = builder.open()
    main = store.engine.keyword(store.snapshot()).main
    terms = QueryTerms(("the", "alpha"), "all")
    rows = main.native_rows(terms)
    assert rows
    n, wholes = len(main.tokens), [main.hit_count(p) for p in terms.phrases]
    idf = [max(math.log((n - w + 0.5) / (w + 0.5)), 0.0) or 1e-6 for w in wholes]
    among = among_module.rows_among({r for r, _ in rows})
    first = main.counts_among(terms.phrases[0], among, hits=wholes[0])
    assert main.counts_left(rows, [(idf[0], first)], idf[1]) == main.counts_among(
        terms.phrases[1], among, hits=wholes[1]
    )
    assert main.counts_left(rows, [(idf[0], first)], idf[1] * 1.37) is None


def test_rows_as_runs_are_their_consecutive_stretches() -> None:
    """``runs_of`` gives the distinct rowids' stretches of ``LONG_RUN`` consecutive values or more, in order, and
    the rows of shorter ones; None past ``RUNS_AT_MOST`` of them or ``EXTRA_AT_MOST`` rows besides: checked
    against a plain walk over the sorted values."""
    rng = random.Random(23)
    for _ in range(500):
        rows = set(rng.sample(range(1, 3000), rng.randint(1, 400)))
        if rng.random() < 0.7:  # a few long stretches, as a clustered filter's rows lie, and a few edited rows
            starts = rng.sample(range(1, 3000, 100), rng.randint(1, 20))
            rows = {r for start in starts for r in range(start, start + rng.randint(1, 90))}
            rows |= set(rng.sample(range(3000, 4000), rng.randint(0, 300)))
        ordered, stretches = sorted(rows), []
        for r in ordered:
            if stretches and stretches[-1][1] == r - 1:
                stretches[-1] = (stretches[-1][0], r)
            else:
                stretches.append((r, r))
        ranges = [(a, b) for a, b in stretches if b - a + 1 >= among_module.LONG_RUN]
        extra = tuple(r for a, b in stretches if b - a + 1 < among_module.LONG_RUN for r in range(a, b + 1))
        fits = len(ranges) <= among_module.RUNS_AT_MOST and len(extra) <= among_module.EXTRA_AT_MOST
        assert among_module.runs_of(rows) == ((ranges, extra) if fits else None)


def test_rows_in_a_few_runs_are_asked_as_ranges_and_give_the_arrays_answers(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter's rows in a few stretches are read by SQLite as ranges (no JSON array): the counts, matches,
    counts read back and ordered rows of the same rows asked as an array."""
    rng = random.Random(29)
    _build(builder, rng, 150)
    store = builder.open()
    main = store.engine.keyword(store.snapshot()).main
    rowids = sorted(main.id_of)
    sets = [
        set(rowids[5:40]) | set(rowids[60:61]) | set(rowids[90:140]),
        set(rowids[::2][:6]),
        set(rowids[1:-1]) - {rowids[50], rowids[99]},
    ]
    for rows in sets:
        ranged = among_module.rows_among(rows)
        assert "json_each" not in ranged.clause and ranged.rows is None
        monkeypatch.setattr(among_module, "RUNS_AT_MOST", 0)
        monkeypatch.setattr(among_module, "EXTRA_AT_MOST", -1)
        array = among_module.rows_among(rows)
        monkeypatch.undo()
        assert "json_each" in array.clause
        for words, mode in ((("the",), "all"), (("the", "alpha"), "all"), (("alpha", "river"), "any")):
            terms = QueryTerms(words, mode)
            assert (
                main.match_count(terms, ranged)
                == main.match_count(terms, array)
                == len(main.matches_among(terms, array))
            )
            assert main.matches_among(terms, ranged) == main.matches_among(terms, array)
            assert main.top_among(terms, ranged, 1000) == main.top_among(terms, array, 1000)
            for phrase in terms.phrases:
                whole = main.hit_count(phrase)
                assert main.hit_count(phrase, ranged) == main.hit_count(phrase, array)
                assert main.counts_among(phrase, ranged, hits=whole) == main.counts_among(phrase, array, hits=whole)
    assert main.match_count(QueryTerms(("the",), "all"), among_module.rows_among(sets[0]))  # something was matched


def test_a_build_writes_its_rows_clustered_by_kind_type_and_folder_with_the_same_answers(
    builder: StoreBuilder, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reconcile writing many rows gives them rowids by (kind, type, folder, id): each kind and type is one
    stretch of rowids, and a filter by kind is asked as a range. Only the order changes: the answers of an
    unclustered build of the same store, bit for bit."""
    import knowtk
    from knowtk.engine import desired
    from tests.test_kept_counts import _body, _meta

    rng = random.Random(31)
    for i in range(90):
        builder.write(f"{rng.choice(['a', 'b/x', 'b/y'])}/r{i:03d}.md", _meta(rng, f"r{i:03d}"), _body(rng))
    monkeypatch.setattr(desired, "CLUSTER_FROM_ROWS", 1)
    store = builder.open(state_dir=tmp_path / "clustered")
    snap = store.snapshot()
    main = store.engine.keyword(snap).main
    order = sorted(main.id_of)
    keys = [(r.kind, r.type, r.path.rpartition("/")[0], r.id) for r in (snap.records[main.id_of[i]] for i in order)]
    assert keys == sorted(keys) and len({k[:2] for k in keys}) > 2
    claims = {rowid for rid, rowid in main.ids.items() if snap.records[rid].kind == "claim"}
    assert claims and among_module.rows_among(claims).clause == "rowid BETWEEN ? AND ?"
    monkeypatch.setattr(desired, "CLUSTER_FROM_ROWS", 10**9)
    plain = knowtk.open_store(builder.root, state_dir=tmp_path / "plain")
    plain_main = plain.engine.keyword(plain.snapshot()).main
    assert [plain_main.id_of[i] for i in sorted(plain_main.id_of)] != [main.id_of[i] for i in order]
    for args in (
        {"query": "the alpha", "mode": "any", "kind": "claim"},
        {"query": "the", "type": "note", "scope": "b"},
        {"query": "river cafe", "mode": "any", "scope": "a"},
        {"query": "the", "lifecycle": "all"},
    ):
        a, b = store.call("knowledge_grep", {**args, "limit": 50}), plain.call("knowledge_grep", {**args, "limit": 50})
        a.pop("freshness", None), b.pop("freshness", None)
        assert a == b and a["hits"]


def test_a_read_aside_answers_from_the_querys_state_of_the_table(builder: StoreBuilder) -> None:
    """``Aside`` reads on the state's second connection only what the query's own transaction reads: a write
    another connection commits to the table after the query began, or one the query made itself, sends the
    read back to the query's connection (the count as the query sees it, never the newer one)."""
    import sqlite3

    rng = random.Random(37)
    _build(builder, rng, 60)
    store = builder.open()
    main = store.engine.keyword(store.snapshot()).main
    state = main.state
    terms = QueryTerms(("the",), "all")
    before = main.match_count(terms)
    sides: list[bool] = []
    state.begin_query(immediate=False)
    try:
        aside = parallel_read.ParallelRead(main, lambda conn: main.matches.count(terms.expression, None, conn=conn))
        sides.append(aside._thread is not None)
        assert aside.result() == before
        other = sqlite3.connect(state.path, isolation_level=None)  # another writer commits a matching row
        other.create_function("knowtk_inflate", 1, lambda b: b, deterministic=True)
        other.execute(
            f"INSERT INTO {main.fts} (rowid, title, aliases, body) VALUES (?, 'the', '', 'the the')", (10**6,)
        )
        other.close()
        aside = parallel_read.ParallelRead(main, lambda conn: main.matches.count(terms.expression, None, conn=conn))
        sides.append(aside._thread is not None)
        assert aside.result() == before  # the query's snapshot, read in turn
        assert not aside._value  # (not read aside: the table's marks differ)
    finally:
        state.end_query(commit=False)
    # (a new transaction sees the row; counted afresh: match_count keeps a count per rows version, and this
    # row was written behind the projection's back)
    assert main.matches.count(terms.expression, None) == before + 1
    with state.transaction() as conn:  # a query that wrote: read on its own connection
        conn.execute(  # (its content is not in the text table: the delete names what the row held)
            f"INSERT INTO {main.fts} ({main.fts}, rowid, title, aliases, body) VALUES ('delete', ?, ?, '', ?)",
            (10**6, "the", "the the"),
        )
        aside = parallel_read.ParallelRead(main, lambda conn: main.matches.count(terms.expression, None, conn=conn))
        sides.append(aside._thread is not None)
        assert aside.result() == before
    assert sides == [True, True, False]


def test_answers_read_aside_are_the_answers_read_in_turn(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts, the rows SQLite ranks best and superseded wording's direct matches read beside the query give the
    answers of the same reads made in turn (``ASIDE`` off), filtered and not, bounded pages included."""
    from knowtk.engine import desired
    from tests.test_ranking_ties import _common_store, _random_filters

    monkeypatch.setattr(desired, "CLUSTER_FROM_ROWS", 1)  # a filter's rows in ranges: the best rows read aside
    _common_store(builder)
    rng = random.Random(41)
    calls = [
        {"query": q, "mode": mode, "limit": 5, **f}
        for q in ("alpha beta", "beta", "alpha gamma sigma")
        for mode in ("all", "any")
        for f in [{}, *_random_filters(rng, 3)]
    ]

    def answers() -> list[dict[str, Any]]:
        store = builder.open()
        out = []
        for args in calls:
            found = store.call("knowledge_grep", args)
            found.pop("freshness", None)
            out.append(found)
        store.close()
        return out

    read_aside: list[int] = []
    run = parallel_read.ParallelRead._run

    def spy(self: parallel_read.ParallelRead[Any]) -> None:
        run(self)
        read_aside.append(len(self._value))

    monkeypatch.setattr(parallel_read.ParallelRead, "_run", spy)
    beside = answers()
    assert sum(read_aside) >= len(calls) // 2  # (many were read aside: counts, best rows, direct matches)
    monkeypatch.setattr(parallel_read, "PARALLEL_READS", False)
    assert answers() == beside
    assert any(a["hits"] for a in beside)
