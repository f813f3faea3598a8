"""Filters and scope apply before corpus statistics: every hit scores exactly as SQLite's bm25() would
over a table holding only the records that pass the filters."""

from __future__ import annotations

import random
import sqlite3

import pytest

from knowtk.model.records import load_frontmatter
from tests.helpers import StoreBuilder

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
    "café",
    "naïve",
]


def build_random_store(builder: StoreBuilder, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(n):
        body = "\n".join(" ".join(rng.choices(WORDS, k=rng.randint(3, 30))) for _ in range(rng.randint(1, 4)))
        meta = {
            "id": f"r{i:03d}",
            "kind": rng.choice(["page", "claim"]),
            "type": rng.choice(["note", "decision", "meeting"]),
            "title": " ".join(rng.choices(WORDS, k=rng.randint(1, 4))),
            "tags": rng.sample(["a", "b", "c"], rng.randint(0, 2)),
            "occurred_at": f"2026-0{rng.randint(1, 3)}-1{rng.randint(0, 9)}",
        }
        if rng.random() < 0.5:
            meta["aliases"] = [" ".join(rng.choices(WORDS, k=2)) for _ in range(rng.randint(1, 2))]
        builder.write(f"{rng.choice(['x', 'y', 'y/z'])}/r{i:03d}.md", meta, body)


def reference_scores(builder: StoreBuilder, keep, expression: str) -> list[tuple[str, float]]:
    """bm25() over a fresh FTS5 table holding only the records `keep` accepts."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(title, aliases, body, tokenize='unicode61 remove_diacritics 2')")
    ids = {}
    for path in sorted(builder.root.rglob("*.md")):
        meta, body, _ = load_frontmatter(path.read_bytes())
        rel = path.relative_to(builder.root).as_posix()
        if keep(rel, meta):
            cur = db.execute(
                "INSERT INTO t (title, aliases, body) VALUES (?, ?, ?)",
                (meta.get("title") or "", "\n".join(meta.get("aliases") or []), body),
            )
            ids[cur.lastrowid] = meta["id"]
    rows = db.execute("SELECT rowid, bm25(t, 8.0, 6.0, 1.0) FROM t WHERE t MATCH ?", (expression,)).fetchall()
    return sorted(((ids[r], -s) for r, s in rows), key=lambda x: (-x[1], x[0]))


CASES = [
    ({}, lambda p, m: True),
    ({"scope": "y"}, lambda p, m: p.startswith("y/")),
    ({"scope": "y/z"}, lambda p, m: p.startswith("y/z/")),
    ({"kind": "claim"}, lambda p, m: m["kind"] == "claim"),
    ({"type": "decision", "scope": "x"}, lambda p, m: m["type"] == "decision" and p.startswith("x/")),
    ({"tag": "a"}, lambda p, m: "a" in m["tags"]),
    (
        {"timeField": "occurred_at", "since": "2026-02-01", "until": "2026-02-28"},
        lambda p, m: m["occurred_at"].startswith("2026-02"),
    ),
]
QUERIES = [
    ("alpha", "all", '"alpha"'),
    ("alpha beta", "all", '"alpha" AND "beta"'),
    ("gamma cafe sigma", "any", '"gamma" OR "cafe" OR "sigma"'),
    ("beta gamma", "phrase", '"beta gamma"'),
    ("NAIVE", "all", '"naive"'),
]


@pytest.mark.parametrize(("filters", "keep"), CASES)
@pytest.mark.parametrize(("query", "mode", "expression"), QUERIES)
def test_filtered_scores_equal_bm25_over_only_the_filtered_records(
    builder: StoreBuilder, filters, keep, query, mode, expression
) -> None:
    build_random_store(builder, 80, seed=7)
    store = builder.open()
    res = store.call("knowledge_grep", {"query": query, "mode": mode, "limit": 50, **filters})
    expected = reference_scores(builder, keep, expression)
    got = [(h["id"], h["score"]) for h in res["hits"]]
    assert res["total"] == len(expected)
    assert [i for i, _ in got] == [i for i, _ in expected[:50]]
    for (_, ours), (_, theirs) in zip(got, expected, strict=False):
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)


def test_other_scopes_never_affect_rank_counts_or_snippets(make_builder) -> None:
    small = make_builder("small")
    big = make_builder("big")
    for b in (small, big):
        b.page("a", "Alpha report", "alpha beta gamma", path="team/a.md")
        b.page("b", "Beta report", "alpha alpha delta", path="team/b.md")
    for i in range(40):  # another scope, full of the query's words
        big.page(f"o{i}", "alpha alpha alpha", "alpha beta " * (i + 1), path=f"other/o{i}.md")
    one = small.open().call("knowledge_grep", {"query": "alpha beta", "mode": "any", "scope": "team"})
    two = big.open().call("knowledge_grep", {"query": "alpha beta", "mode": "any", "scope": "team"})
    for key in ("hits", "total", "nextOffset"):
        assert one[key] == two[key]
    whole = big.open().call("knowledge_grep", {"query": "alpha beta", "mode": "any"})
    assert [h["score"] for h in whole["hits"] if h["id"] == "a"] != [h["score"] for h in one["hits"] if h["id"] == "a"]
