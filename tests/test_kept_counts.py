"""Kept per-row counts of a common word, and the rows a filter allows, survive a change of a few rows, exactly.

A long-lived store keeps each asked phrase's per-row weighted counts (``FtsProjection.keep_counts``).
When a reconcile changes a few rows (a file edited, added or removed by hand, or a ``knowledge_mutation``),
the counts are patched for just those rows instead of ranked afresh. After every change the long-lived
store's whole answers (unfiltered and filtered; modes all, any and phrase; lifecycles active, all and
superseded) must be a freshly opened store's, which ranks everything from scratch: order, scores, ties.
The rows a filter allows are patched the same way, from the rows changed and the records the snapshot changed.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.index import bm25
from knowtk.index.fts import FtsProjection
from tests.helpers import StoreBuilder
from tests.test_live_exactness import fresh_walk

WORDS = ["alpha", "beta", "gamma", "delta", "river", "stone", "quiet", "orbit", "maple", "cafe"]
QUERIES: list[dict[str, Any]] = [
    {"query": "the"},
    {"query": "the", "kind": "claim"},
    {"query": "the", "lifecycle": "all"},
    {"query": "the", "lifecycle": "superseded"},
    {"query": "the alpha", "mode": "any"},
    {"query": "the alpha", "mode": "any", "lifecycle": "all"},
    {"query": "the alpha"},
    {"query": "the alpha", "mode": "phrase"},
    {"query": "the alpha", "mode": "phrase", "type": "note"},
    {"query": "the", "scope": "r"},
    {"query": "the alpha", "mode": "any", "kind": "page", "lifecycle": "all"},
]


def _body(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(4, 30))
    if rng.random() < 0.9:  # "the" is in nine records in ten, "the alpha" in some
        words += ["the"] * rng.randint(1, 4) + ["the alpha"] * rng.randint(0, 2)
    rng.shuffle(words)
    return " ".join(words) + "\n"


def _meta(rng: random.Random, rid: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "id": rid,
        "kind": rng.choice(["page", "claim"]),
        "type": rng.choice(["note", "memo"]),
        "title": " ".join(rng.choices([*WORDS, "the"], k=rng.randint(1, 3))),
    }
    if rng.random() < 0.3:
        meta["aliases"] = [f"the {rng.choice(WORDS)}"]
    return meta


def _build(builder: StoreBuilder, rng: random.Random, n: int) -> None:
    for i in range(n):
        builder.write(f"r/r{i:03d}.md", _meta(rng, f"r{i:03d}"), _body(rng))
    for i in range(4):  # superseded records: the history projection, and superseded wording
        builder.write(
            f"old/o{i}.md",
            {**_meta(rng, f"o{i}"), "status": "superseded", "superseded_by": f"r{i:03d}"},
            _body(rng),
        )


def _answers(store: knowtk.Store) -> list[dict[str, Any]]:
    out = []
    for args in QUERIES:
        answer = store.call("knowledge_grep", {**args, "limit": 50})
        answer.pop("freshness", None)
        out.append(answer)
    return out


KEPT = (("the", "all"), ("the alpha", "any"), ("the alpha", "phrase"))  # every phrase of ``QUERIES``


def _keep_counts(store: knowtk.Store, queries: tuple[tuple[str, str], ...] = KEPT) -> None:
    """Keep the counts of the phrases of ``queries`` (a query pays for its own ranking alone: these read every
    row holding each phrase, in both projections, so numpy keeps their counts as arrays)."""
    for query, mode in queries:
        store.call("knowledge_grep", {"query": query, "mode": mode, "lifecycle": "all", "limit": 50})


def _carried_calls(monkeypatch: pytest.MonkeyPatch, store: knowtk.Store) -> list[bool]:
    """For each filter's rows asked of ``store``'s searched projection after a change: whether they were patched."""
    calls: list[bool] = []
    carried = FtsProjection.carried

    def spy(self: FtsProjection, key: Any, generation: int | None) -> Any:
        found = carried(self, key, generation)
        if self.state is store.engine.state and self.fts == "keyword_fts_v1_root":
            calls.append(found is not None)
        return found

    monkeypatch.setattr(FtsProjection, "carried", spy)
    return calls


def _native_calls(monkeypatch: pytest.MonkeyPatch, store: knowtk.Store) -> list[str]:
    """The projections of ``store`` that ranked a query with bm25() over the whole table (nothing kept used)."""
    calls: list[str] = []
    native, native_top = FtsProjection.native_rows, FtsProjection.native_top

    def spy(self: FtsProjection, terms: Any) -> list[tuple[int, float]]:
        if self.state is store.engine.state:
            calls.append(self.fts)
        return native(self, terms)

    def spy_top(self: FtsProjection, terms: Any, k: int) -> list[tuple[int, float]] | None:
        if self.state is store.engine.state:  # (SQLite's page of a phrase asked once since the rows changed)
            calls.append(self.fts)
        return native_top(self, terms, k)

    monkeypatch.setattr(FtsProjection, "native_rows", spy)
    monkeypatch.setattr(FtsProjection, "native_top", spy_top)
    return calls


def _edit_files(builder: StoreBuilder, rng: random.Random, step: int) -> None:
    """One or two outside changes: a record rewritten by hand, added, removed, or moved to another folder."""
    files = sorted((builder.root / "r").glob("*.md"))  # n*.md, then r000.md ...: the last is never a chain's end
    for _ in range(rng.randint(1, 2)):
        roll = rng.random()
        if roll < 0.4:
            path = rng.choice(files)
            builder.write(f"r/{path.name}", _meta(rng, path.stem), _body(rng))
        elif roll < 0.65:
            builder.write(f"r/n{step}.md", _meta(rng, f"n{step}"), _body(rng))
        elif roll < 0.85:
            builder.remove(f"r/{files.pop().name}")
        else:  # the same bytes elsewhere: its row stays, its record's path (and scope) changes
            path = files.pop()
            (builder.root / "s").mkdir(exist_ok=True)
            path.rename(builder.root / "s" / path.name)


def _mutate(store: knowtk.Store, rng: random.Random, step: int) -> None:
    """One knowledge_mutation: update, create, supersede, withdraw or reinstate."""
    snap = store.snapshot()
    active = sorted(rid for rid, life in snap.lifecycle.items() if life == "active" and rid.startswith("r"))
    lifted = sorted(rid for rid, life in snap.lifecycle.items() if life != "active" and rid.startswith(("r", "n")))
    op = ["update", "create", "supersede", "withdraw", "reinstate"][step % 5]
    if op == "reinstate" and not lifted:
        op = "update"
    rid = rng.choice(lifted if op == "reinstate" else active[4:])
    sha = snap.records[rid].sha256
    body = {"body": _body(rng)}
    if op == "update":
        store.update(rid, {"title": f"the {rng.choice(WORDS)} {step}", **body}, expected_sha256=sha)
    elif op == "create":
        store.create(f"n{step}", {"kind": "page", "type": "note", "title": f"the new {step}", **body})
    elif op == "supersede":
        new = {"kind": "claim", "type": "memo", "title": f"the alpha {step}", **body}
        store.supersede(rid, by=f"s{step}", record=new, expected_sha256=sha)
    elif op == "withdraw":
        store.withdraw(rid, reason="test", expected_sha256=sha)
    else:
        store.reinstate(rid, reason="test", expected_sha256=sha)


@pytest.mark.parametrize("how", ["files", "mutation"])
def test_a_common_word_after_a_change_answers_as_a_fresh_store(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 1)  # "a common word" for this small store: its counts are kept
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: True)
    rng = random.Random(18)
    _build(builder, rng, 120)
    store = builder.open()
    _keep_counts(store)
    native = _native_calls(monkeypatch, store)
    assert _answers(store) and native == []  # the answers use them
    patched = _carried_calls(monkeypatch, store)
    for step in range(10):
        if how == "files":
            _edit_files(builder, rng, step)
        else:
            _mutate(store, rng, step)
        got = _answers(store)
        assert patched and all(patched), f"step {step}: a filter's rows were derived again, not patched"
        patched.clear()
        reference = fresh_walk(builder.root, tmp_path / f"fresh{step}", store)
        assert got == _answers(reference), f"step {step}"
        reference.close()
        shutil.rmtree(tmp_path / f"fresh{step}")
        assert native == [], f"step {step}: the kept counts were dropped, not patched"
    assert store.engine.keyword(store.snapshot()).main.has_counts(("the",))


def test_kept_counts_are_dropped_when_many_rows_change(builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past a share of the rows, ranking afresh costs less than patching: the counts are dropped, answers exact."""
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 1)
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: True)
    rng = random.Random(3)
    _build(builder, rng, 60)
    store = builder.open()
    _keep_counts(store, KEPT[:1])
    native = _native_calls(monkeypatch, store)
    for i in range(20):  # a third of the rows
        builder.write(f"r/r{i:03d}.md", _meta(rng, f"r{i:03d}"), _body(rng))
    got = store.call("knowledge_grep", {"query": "the", "limit": 50})
    assert native == ["keyword_fts_v1_root"]  # ranked afresh by bm25()
    fresh = builder.open(state_dir=builder.root.parent / "fresh")
    want = fresh.call("knowledge_grep", {"query": "the", "limit": 50})
    assert [(h["id"], h["score"]) for h in got["hits"]] == [(h["id"], h["score"]) for h in want["hits"]]


def test_a_reused_rowid_is_counted_again(builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last row changed: deleted, then inserted at the same rowid (max + 1). Its count is the new one."""
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 1)
    monkeypatch.setattr(bm25, "arrays_loaded", lambda: True)
    for i in range(40):
        builder.page(f"r{i}", "Note", "the " * (i % 9 + 1) + "rest", path=f"r{i}.md")
    store = builder.open()
    _keep_counts(store, KEPT[:1])
    native = _native_calls(monkeypatch, store)
    main = store.engine.keyword(store.snapshot()).main
    last = max(main.id_of)
    rid = main.id_of[last]
    for n in (20, 1, 7):
        builder.page(rid, "Note", "the " * n + "rest", path=f"{rid}.md")
        hits = store.call("knowledge_grep", {"query": "the", "limit": 50})["hits"]
        assert main.ids[rid] == last  # the same rowid, given again
        fresh = builder.open(state_dir=builder.root.parent / f"fresh{n}")
        want = fresh.call("knowledge_grep", {"query": "the", "limit": 50})["hits"]
        assert [(h["id"], h["score"]) for h in hits] == [(h["id"], h["score"]) for h in want]
        assert main.has_counts(("the",))
        rowids, counts = main.phrase_arrays(("the",), None)
        assert dict(zip(rowids.tolist(), counts.tolist(), strict=True))[last] == n
    assert native == []  # patched each time, never ranked afresh


@pytest.mark.parametrize("mode", ["all", "any", "phrase"])
def test_matching_from_kept_counts_is_fts5s_answer(builder: StoreBuilder, mode: str) -> None:
    """Superseded wording asks which current records match: read from kept counts, it is FTS5's own answer."""
    from knowtk.index.fts_tables import QueryTerms

    rng = random.Random(7)
    _build(builder, rng, 80)
    store = builder.open()
    main = store.engine.keyword(store.snapshot()).main
    rowids = sorted(main.id_of)
    for words in (("the",), ("the", "alpha"), ("alpha", "river", "cafe"), ("the", "absent")):
        terms = QueryTerms(words, mode)
        asked = rng.sample(rowids, 50)
        by_fts5 = main.matching(terms, asked)
        for phrase in terms.phrases:
            main.phrase_arrays(phrase, None)  # keeps its counts
        assert all(main.has_counts(phrase) for phrase in terms.phrases)
        assert main.matching(terms, asked) == by_fts5
        assert by_fts5 or words[-1] == "absent" or mode == "phrase"
