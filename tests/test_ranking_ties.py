"""A page is picked without ordering every match: ties at its edge are settled by id, as a full sort would."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from knowtk.index.fts_tables import QueryTerms
from tests.helpers import StoreBuilder
from tests.test_bm25 import CASES, QUERIES, WORDS, build_random_store, reference_scores


@pytest.mark.parametrize("filters", [{}, {"kind": "claim"}, {"lifecycle": "all"}])
def test_pages_cut_through_tied_scores_in_id_order(builder: StoreBuilder, filters: dict) -> None:
    for i in range(30):  # three groups of identical records: identical scores within each
        group = i % 3
        builder.page(f"r{29 - i:02d}", "Same", "tied " * (group + 1) + "filler words", kind=["page", "claim"][i % 2])
    store = builder.open()
    whole = store.call("knowledge_grep", {"query": "tied", "limit": 50, **filters})
    expected = sorted((-h["score"], h["id"]) for h in whole["hits"])
    assert [h["id"] for h in whole["hits"]] == [rid for _, rid in expected]
    assert len({h["score"] for h in whole["hits"]}) == 3
    pages = []
    for offset in range(0, whole["total"], 7):
        page = store.call("knowledge_grep", {"query": "tied", "limit": 7, "offset": offset, **filters})
        assert page["total"] == whole["total"]
        pages += [h["id"] for h in page["hits"]]
    assert pages == [h["id"] for h in whole["hits"]]


def test_kept_word_counts_follow_every_edit(builder: StoreBuilder) -> None:
    """Per-record counts of a word are kept between queries; after an edit, scores are bm25() over the new rows."""
    from tests.test_bm25 import reference_scores

    for i in range(12):
        builder.page(f"r{i:02d}", "Note", "word " * (i % 4 + 1) + "rest", kind=["page", "claim"][i % 2])
    store = builder.open()
    claims = {"query": "word", "kind": "claim", "limit": 50}
    for edit in range(3):
        res = store.call("knowledge_grep", claims)
        expected = reference_scores(builder, lambda p, m: m["kind"] == "claim", '"word"')
        assert [(h["id"], h["score"]) for h in res["hits"]] == [
            (rid, pytest.approx(score, rel=1e-12)) for rid, score in expected
        ]
        builder.page("r01", "Note", "word " * (7 + edit), kind="claim")  # its count changes, the others' do not
        builder.page(f"new{edit}", "Note", "word word", kind="claim")


@pytest.mark.parametrize("mode", ["all", "any", "phrase"])
def test_scores_from_kept_counts_are_bm25_bit_for_bit(builder: StoreBuilder, mode: str) -> None:
    """Unfiltered queries are scored from kept phrase counts when they can: the doubles must be SQLite's own."""
    import numpy as np

    from knowtk.index.bm25 import Source, filtered_bm25
    from knowtk.index.fts_tables import QueryTerms
    from tests.test_bm25 import build_random_store

    build_random_store(builder, 150, seed=3)
    store = builder.open()
    index = store.engine.keyword(store.snapshot())
    for words in (("alpha",), ("beta", "gamma"), ("sigma", "omega", "cafe"), ("naive", "alpha")):
        terms = QueryTerms(words, mode)
        native, rowids = index.main.native_arrays(terms)
        counted, counted_rowids, _ = filtered_bm25([Source(index.main, None)], terms)
        order, counted_order = np.argsort(rowids), np.argsort(counted_rowids)
        assert rowids[order].tolist() == counted_rowids[counted_order].tolist()
        assert native[order].tolist() == counted[counted_order].tolist()  # equal doubles, not approximately


@pytest.mark.parametrize("loaded", [False, True])
def test_an_unfiltered_query_asked_again_is_paged_by_sqlite_again(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, loaded: bool
) -> None:
    """Asked again, numpy loaded or not, an unfiltered query takes SQLite's page as the first time: no call
    reads every matching row (to keep the word's counts), nothing is kept, the answers are the same."""
    from knowtk.index import bm25, fts

    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 1)
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: loaded)
    build_random_store(builder, 120, seed=5)
    store = builder.open()
    args = {"query": "alpha", "limit": 50}
    whole: list[str] = []
    native_rows = fts.FtsProjection.native_rows

    def spy(self: fts.FtsProjection, terms: QueryTerms) -> list[tuple[int, float]]:
        whole.append(" ".join(terms.tokens))
        return native_rows(self, terms)

    monkeypatch.setattr(fts.FtsProjection, "native_rows", spy)
    first = store.call("knowledge_grep", args)
    main = store.engine._keyword.main
    for _ in range(2):
        again = store.call("knowledge_grep", args)
        assert (again["hits"], again["total"]) == (first["hits"], first["total"])
        assert not main.has_counts(("alpha",))
    assert whole == []
    builder.page("zz", "alpha alpha alpha", "alpha " * 5, path="x/zz.md")  # the rows change
    after = store.call("knowledge_grep", args)
    assert after["total"] == first["total"] + 1 and after["hits"][0]["id"] == "zz"


@pytest.mark.parametrize("lifecycle", ["active", "all", "superseded"])
def test_plain_python_and_numpy_rankings_are_the_same_doubles(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, lifecycle: str
) -> None:
    """Fewer than KEEP_FROM_ROWS rows are ranked without numpy (a new process need not import it): same answers."""
    from knowtk.index import bm25
    from tests.test_bm25 import build_random_store

    build_random_store(builder, 150, seed=11)
    for i in range(6):  # superseded wording: earlier records whose words lead to their replacements
        body = "alpha cafe " * (i + 1)
        builder.page(f"old{i}", "Alpha sigma", body, status="superseded", superseded_by=f"new{i}", path=f"x/old{i}.md")
        builder.page(f"new{i}", "Replacement", "other words", path=f"x/new{i}.md", kind=["page", "claim"][i % 2])
    queries = [("alpha", "all"), ("beta gamma", "all"), ("gamma cafe sigma", "any"), ("beta gamma", "phrase")]
    filters: list[dict] = [{}, {"kind": "claim"}, {"scope": "x"}, {"tag": "a"}]
    answers = {}
    for keep in (bm25.KEEP_FROM_ROWS, 0):  # 0 (with numpy loaded): every query takes the numpy path
        monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", keep)
        monkeypatch.setattr(bm25, "arrays_loaded", lambda keep=keep: keep == 0)
        store = builder.open()
        answers[keep] = [
            store.call("knowledge_grep", {"query": q, "mode": m, "limit": 50, "lifecycle": lifecycle, **f})
            for q, m in queries
            for f in filters
        ]
    plain, arrays = answers.values()
    assert any(a["total"] for a in plain)
    if lifecycle == "active":  # superseded wording ranked its earlier records among the hits
        assert any(h["via"] for a in plain for h in a["hits"])
    for one, two in zip(plain, arrays, strict=True):
        assert [(h["id"], h["score"]) for h in one["hits"]] == [(h["id"], h["score"]) for h in two["hits"]]
        assert one["total"] == two["total"]


def test_a_common_word_is_paged_by_sqlite_each_time_it_is_asked(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many rows: SQLite orders them and hands over the page (ties cut by id here), numpy loaded or not, and
    asked again in the same process, the same: nothing is kept. Same answers."""
    from knowtk.index import bm25

    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)  # "many rows" for this store
    for i in range(40):
        builder.page(f"r{39 - i:02d}", "Same", "tied " * (i % 3 + 1) + "filler words")
    answers = []
    for loaded in (False, True):
        monkeypatch.setattr(bm25, "arrays_loaded", lambda loaded=loaded: loaded)
        pages = []
        for offset in (0, 7, 35):  # each asked by a store opened for it (a new process's first query), then again
            store = builder.open()
            pages.append(store.call("knowledge_grep", {"query": "tied", "limit": 7, "offset": offset}))
            again = store.call("knowledge_grep", {"query": "tied", "limit": 7, "offset": offset})
            assert not store.engine._keyword.main.has_counts(("tied",))  # SQLite's page both times: nothing kept
            pages.append(again)
        answers.append(pages)
    plain, arrays = answers
    assert [[(h["id"], h["score"]) for h in a["hits"]] for a in plain] == [
        [(h["id"], h["score"]) for h in a["hits"]] for a in arrays
    ]
    assert [a["total"] for a in plain] == [40] * 6
    assert plain[0]["hits"] == plain[1]["hits"]


@pytest.mark.parametrize("lifecycle", ["active", "all"])
def test_a_filter_on_a_common_word_is_scored_in_plain_python_without_numpy(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, lifecycle: str
) -> None:
    """Filtered, a phrase many rows hold is scored in plain Python in a process without numpy (importing numpy
    would cost the query more than the scoring), asked once or again: nothing is kept; every ask answers as
    numpy does."""
    from knowtk.index import bm25

    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)  # "many rows" for this store
    for i in range(40):
        builder.page(f"r{39 - i:02d}", "Same", "tied " * (i % 3 + 1) + "filler words", tags=["a"] if i % 2 else [])
    builder.page("old", "Tied", "tied tied", status="superseded", superseded_by="r03", path="x/old.md")
    args = {"query": "tied filler", "mode": "any", "tag": "a", "limit": 7, "lifecycle": lifecycle}
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: True)
    with_numpy = builder.open()
    expected = with_numpy.call("knowledge_grep", args)
    again = with_numpy.call("knowledge_grep", args)
    assert (again["hits"], again["total"]) == (expected["hits"], expected["total"])
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: False)  # a process without numpy
    store = builder.open()
    first = store.call("knowledge_grep", args)
    main = store.engine._keyword.main
    assert not main.has_counts(("tied",))  # plain Python, nothing kept
    second = store.call("knowledge_grep", args)
    assert not main.has_counts(("tied",))  # asked again: the same
    for found in (first, second):
        assert [(h["id"], h["score"]) for h in found["hits"]] == [(h["id"], h["score"]) for h in expected["hits"]]
        assert found["total"] == expected["total"] > 7


# a filtered call with a common word: the allowed rows alone are counted (bm25._counts_over_filter)
COMMON_QUERIES = [
    ("alpha beta gamma", "all"),
    ("alpha", "all"),
    ("beta cafe", "any"),
    ("gamma sigma omega", "any"),
    ("beta gamma", "phrase"),
    ("alpha absentword", "all"),
    ("absentword theta", "any"),
]


def _common_store(builder: StoreBuilder) -> None:
    build_random_store(builder, 150, seed=23)  # 13 words: each is in most of the rows
    rng = random.Random(29)
    for i in range(40):  # superseded records (their own projection), and wording that leads to replacements
        body = " ".join(rng.choices(WORDS, k=rng.randint(3, 20)))
        folder, kind, tags = rng.choice(["x", "y", "y/z"]), rng.choice(["page", "claim"]), rng.sample("abc", 1)
        builder.page(
            f"old{i}",
            "Alpha beta",
            body,
            status="superseded",
            superseded_by=f"new{i}",
            path=f"{folder}/old{i}.md",
            kind=kind,
            tags=tags,
        )
        builder.page(f"new{i}", "Replacement", "other words", path=f"{folder}/new{i}.md", kind=kind, tags=tags)
    for i in range(30):  # a folder of its own: indexed in order, its rows are a range of rowids
        body = " ".join(rng.choices(WORDS, k=rng.randint(3, 20)))
        builder.page(f"w{i:02d}", " ".join(rng.choices(WORDS, k=2)), body, path=f"w/w{i:02d}.md", tags=["a"])


def _random_filters(rng: random.Random, n: int) -> list[dict]:
    out: list[dict] = []
    for _ in range(n):
        f: dict = {}
        if rng.random() < 0.5:
            f["kind"] = rng.choice(["page", "claim"])
        if rng.random() < 0.5:
            f["scope"] = rng.choice(["x", "y", "y/z", "w"])
        if rng.random() < 0.3:
            f["tag"] = rng.choice(["a", "b", "c"])
        if rng.random() < 0.3:
            f["type"] = rng.choice(["note", "decision", "meeting"])
        out.append(f or {"kind": "claim"})
    return out


def _asked(builder: StoreBuilder, calls: list[dict]) -> list[list[tuple[str, float]]]:
    """Each call as the first query of its own store (nothing kept, nothing asked before): (id, score) pages."""
    out = []
    for args in calls:
        res = builder.open().call("knowledge_grep", args)
        out.append([(h["id"], h["score"]) for h in res["hits"]] + [("total", float(res["total"]))])
    return out


@pytest.mark.parametrize("lifecycle", ["active", "all", "superseded"])
def test_a_common_word_over_a_narrow_filter_scores_as_every_other_path(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, lifecycle: str
) -> None:
    """Counted over the allowed rows alone (bm25() of the candidates, the IDF solved with the whole table's
    row count): bit for bit the scores and order of counting every row holding the word, in plain Python
    and with numpy."""
    from knowtk.index import bm25, row_arrays
    from knowtk.index.among import Among
    from knowtk.index.fts import FtsProjection

    _common_store(builder)
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)  # "a common word" for this store: most words are
    monkeypatch.setattr(bm25, "_bounded_page", lambda *a: None)  # (the path of a page it does not settle)
    rng = random.Random(lifecycle)
    calls = [
        {"query": q, "mode": m, "limit": 50, "lifecycle": lifecycle, **f}
        for q, m in COMMON_QUERIES
        for f in _random_filters(rng, 3)
    ]
    narrowed: list[str] = []
    counts_among = FtsProjection.counts_among

    def spy(self: FtsProjection, phrase: tuple[str, ...], among: Among, *, hits: int) -> dict[int, float]:
        narrowed.append(" ".join(phrase))
        return counts_among(self, phrase, among, hits=hits)

    monkeypatch.setattr(FtsProjection, "counts_among", spy)
    clauses: set[str] = set()
    rows_among = bm25.rows_among

    def among_spy(rowids: set[int]) -> Among:
        among = rows_among(rowids)
        clauses.add("BETWEEN" if among.clause == "rowid BETWEEN ? AND ?" else "IN")  # a range alone, or rows listed
        return among

    monkeypatch.setattr(bm25, "rows_among", among_spy)
    monkeypatch.setattr(row_arrays, "rows_among", among_spy)  # a filter's rows, kept per set (FtsProjection.among)
    answers = {}
    for path in ("narrowed", "plain", "numpy"):
        if path != "narrowed":
            monkeypatch.setattr(bm25, "_counts_over_filter", lambda *a: None)  # every row holding the word, as before
        monkeypatch.setattr(bm25, "arrays_loaded", lambda path=path: path == "numpy")
        answers[path] = _asked(builder, calls)
        if path == "narrowed":
            assert {"alpha", "beta", "gamma"} <= set(narrowed)  # the new path was taken
            assert clauses == {"BETWEEN", "IN"}  # some filters keep to a range of rowids (a folder, indexed in order)
    assert sum(len(a) > 1 for a in answers["narrowed"]) > len(calls) // 2
    assert answers["narrowed"] == answers["plain"] == answers["numpy"]


@pytest.mark.parametrize("bounded", [False, True])  # the page settled from SQLite's best rows (bm25._bounded_page)
@pytest.mark.parametrize(("filters", "keep"), [c for c in CASES if c[0]])
@pytest.mark.parametrize(("query", "mode", "expression"), QUERIES)
def test_a_common_word_over_a_narrow_filter_is_bm25_over_only_the_filtered_records(
    builder: StoreBuilder,
    monkeypatch: pytest.MonkeyPatch,
    filters: dict,
    keep,
    query: str,
    mode: str,
    expression: str,
    bounded: bool,
) -> None:
    from knowtk.index import bm25, matching

    if bounded:  # a few rows handed over, every bound tried: settled or not, the same answer
        for module in (bm25, matching):
            monkeypatch.setattr(module, "TIES_ROWS", 0)
        monkeypatch.setattr(bm25, "BOUNDED_ROWS", 4)
        monkeypatch.setattr(bm25, "BOUND_MAX", float("inf"))
    else:
        monkeypatch.setattr(bm25, "_bounded_page", lambda *a: None)
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)
    monkeypatch.setattr(bm25, "NARROW_SHARE", 1.0)  # every filter counts over its rows alone, even a wide one
    build_random_store(builder, 80, seed=7)
    res = builder.open().call("knowledge_grep", {"query": query, "mode": mode, "limit": 50, **filters})
    expected = reference_scores(builder, keep, expression)
    assert res["total"] == len(expected)
    assert [(h["id"], h["score"]) for h in res["hits"]] == expected[:50]  # bit for bit


def test_threads_asking_common_words_over_filters_at_once_answer_as_alone(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowtk.index import bm25

    _common_store(builder)
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: False)
    rng = random.Random(5)
    calls = [{"query": q, "mode": m, "limit": 50, **f} for q, m in COMMON_QUERIES for f in _random_filters(rng, 2)]
    expected = _asked(builder, calls)
    store = builder.open()
    got: dict[int, list[tuple[str, float]]] = {}

    def ask(i: int) -> None:
        res = store.call("knowledge_grep", calls[i])
        got[i] = [(h["id"], h["score"]) for h in res["hits"]] + [("total", float(res["total"]))]

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(ask, range(len(calls))))
    assert [got[i] for i in range(len(calls))] == expected


def test_a_wide_filter_or_a_phrase_of_words_counts_every_row_holding_it_as_before(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past NARROW_SHARE of the rows allowed, or for a phrase of several words, one pass over the phrase's
    rows costs less than counting the allowed ones: not narrowed, the same answers."""
    from knowtk.index import bm25
    from knowtk.index.fts import FtsProjection

    _common_store(builder)
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)
    monkeypatch.setattr(bm25, "_bounded_page", lambda *a: None)  # (the path of a page it does not settle)
    narrowed: list[tuple[str, ...]] = []
    counts_among = FtsProjection.counts_among
    monkeypatch.setattr(
        FtsProjection,
        "counts_among",
        lambda self, phrase, among, *, hits: narrowed.append(phrase) or counts_among(self, phrase, among, hits=hits),
    )
    claims = {"query": "alpha", "mode": "any", "limit": 50, "kind": "claim"}  # under half the rows, over a fifth
    for args in (claims, {"query": "beta gamma", "mode": "phrase", "limit": 50, "scope": "w"}):
        monkeypatch.setattr(bm25, "NARROW_SHARE", 0.2)
        got = builder.open().call("knowledge_grep", args)
        assert narrowed == [] and got["total"] > 0
        monkeypatch.setattr(bm25, "NARROW_SHARE", 0.5)
        assert builder.open().call("knowledge_grep", args)["hits"] == got["hits"]
        assert narrowed == ([("alpha",)] if args is claims else [])  # a phrase of words never is
        narrowed.clear()
