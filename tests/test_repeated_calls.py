"""A query asked again costs no more than its first call: the same answer, and no SQL statement the first did not run.

A second ask used to read every row holding a common phrase (to keep its counts for later queries) and import
numpy: 2.6x SQLite's own ranking. Here each query's statements are counted (``sqlite3`` trace callback, FTS5's
own nested statements included) on its first call and when asked again: the second may only run fewer.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

import knowtk
from knowtk.index import bm25, parallel_read
from tests.helpers import StoreBuilder
from tests.test_ranking_ties import _common_store, _random_filters

QUERIES = [
    ("alpha", "all"),
    ("alpha beta gamma", "all"),
    ("beta cafe", "any"),
    ("beta gamma", "phrase"),
    ("alpha absentword", "all"),
]


def _calls() -> list[dict[str, Any]]:
    rng = random.Random(41)
    calls: list[dict[str, Any]] = []
    for query, mode in QUERIES:
        for lifecycle in ("active", "all", "superseded"):
            calls.append({"query": query, "mode": mode, "lifecycle": lifecycle, "limit": 5})
        for f in _random_filters(rng, 3):
            calls.append({"query": query, "mode": mode, "limit": 5, **f})
    return calls


def _traced(store: knowtk.Store, args: dict[str, Any]) -> tuple[Any, Counter[str]]:
    """(the page and total, every statement the call ran on the state's connection, counted)."""
    statements: list[str] = []
    conn = store.engine.state.conn
    conn.set_trace_callback(statements.append)
    try:
        answer = store.call("knowledge_grep", args)
    finally:
        conn.set_trace_callback(None)
    page = [(h["id"], h["score"], h["snippet"]) for h in answer["hits"]]
    # (the query's words are tokenized by a temporary FTS5 table: its own segments vary from call to call)
    return (page, answer["total"]), Counter(s for s in statements if "temp" not in s)


@pytest.mark.parametrize("order", ["each-twice", "all-then-again"])
@pytest.mark.parametrize("loaded", [False, True])
def test_a_query_asked_again_does_no_work_its_first_call_did_not(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, loaded: bool, order: str
) -> None:
    """Common words (most rows hold them), filtered or not, every lifecycle, numpy loaded or not; each query
    asked twice in a row, or every query once and then every one again (as an analyst re-runs a list)."""
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)  # "a common word" for this store
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: loaded)
    monkeypatch.setattr(parallel_read, "PARALLEL_READS", False)  # (every read on the traced connection)
    _common_store(builder)
    store = builder.open()
    store.call("knowledge_grep", {"query": "omega"})  # the open's own work, before any timed call
    calls = _calls()
    if order == "each-twice":
        pairs = [(_traced(store, args), _traced(store, args)) for args in calls]
    else:
        firsts = [_traced(store, args) for args in calls]
        pairs = list(zip(firsts, [_traced(store, args) for args in calls], strict=True))
    assert any(first[0][1] > 5 for first, _ in pairs)  # (pages of many hits among them)
    for args, ((answer, statements), (again, again_statements)) in zip(calls, pairs, strict=True):
        assert again == answer, args
        more = again_statements - statements
        assert not more, f"{args}: asked again, it ran {sorted(more.elements())[:5]}"


def test_every_row_of_two_projections_counts_a_common_word_for_the_candidates_alone(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``lifecycle: all`` ranks the searched and the superseded records as one corpus: in mode ``all`` a common word
    beside a rarer one is solved for the rows matching both from bm25() of the query (not by a pass over every row
    holding it), the rows table is not read whole for them (their lengths read at once), and the answer is the one
    counting every row."""
    from knowtk.index.fts import FtsProjection

    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 5)
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: False)
    for i in range(60):  # "common" in every record, "rare" in one in six
        words = "common filler " * (i % 4 + 1) + ("rare" if i % 6 == 0 else "other")
        old = {"status": "superseded", "superseded_by": f"n{i - 1}"} if i % 5 == 4 else {}
        builder.page(f"n{i}", f"Note {i}", words, path=f"n/n{i}.md", **old)
    args = {"query": "common rare", "mode": "all", "lifecycle": "all", "limit": 5}
    every_row: list[tuple[str, ...]] = []
    plain_counts = FtsProjection.plain_counts

    def spy(self: FtsProjection, phrase: tuple[str, ...], limit: int) -> dict[int, float] | None:
        every_row.append(phrase)
        return plain_counts(self, phrase, limit)

    monkeypatch.setattr(FtsProjection, "plain_counts", spy)
    among: list[tuple[str, ...]] = []
    counts_among = FtsProjection.counts_among

    def among_spy(self: FtsProjection, phrase: tuple[str, ...], rows: Any, *, hits: int) -> dict[int, float]:
        among.append(phrase)
        return counts_among(self, phrase, rows, hits=hits)

    monkeypatch.setattr(FtsProjection, "counts_among", among_spy)
    store = builder.open()
    got = store.call("knowledge_grep", args)
    assert ("common",) not in every_row and got["total"] == 10
    assert ("common",) not in among  # solved from bm25() of the query for its matches, less the rarer word's terms
    index = store.engine._keyword
    assert not index.main.stored_rows.whole and not index.history.stored_rows.whole
    queries = ["common rare", "common filler rare", "filler common other", "common filler", "rare other"]
    answers = [store.call("knowledge_grep", {**args, "query": query, "limit": 50}) for query in queries]
    monkeypatch.setattr(bm25, "_counts_over_filter", lambda *a: None)  # every row holding each word counted
    every = builder.open()
    for query, found in zip(queries, answers, strict=True):
        want = every.call("knowledge_grep", {**args, "query": query, "limit": 50})
        assert [(h["id"], h["score"]) for h in found["hits"]] == [(h["id"], h["score"]) for h in want["hits"]], query
        assert found["total"] == want["total"]
    assert ("common",) in every_row
