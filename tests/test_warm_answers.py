"""What a warm store keeps between calls never changes an answer: after edits it answers as a fresh store.

knowl_query and knowledge_records keep derived maps per snapshot (the record catalog, the eligible
rows of each filter, the stacked embedding vectors) and patch them at the ids an edit changed. A
store that answered every call before an edit must, after it, give exactly the answers of a store
opened fresh on the same files (its own, empty state); ``freshness`` (the instants of the query) is
the only part left out.
"""

from __future__ import annotations

import math
import random
import re
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml

import knowtk
from knowtk.index import semantic
from knowtk.scan.changes import StatWalk

WORDS = ["alpha", "beta", "gamma", "delta", "river", "stone", "quiet", "orbit", "maple", "sqlite"]
TYPES = ["note", "meeting", "decision", "runbook"]


class WordEmbedder:
    """A deterministic bag of hashed words (L2-normalised), standing in for the model."""

    name = "words-1"
    dim = 8

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dim
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                vec[zlib.crc32(word.encode()) % self.dim] += 1.0
            norm = math.sqrt(sum(x * x for x in vec)) or 1.0
            out.append([x / norm for x in vec])
        return out


def write(root: Path, rid: str, meta: dict[str, Any], body: str) -> None:
    text = "---\n" + yaml.safe_dump({"id": rid, **meta}, sort_keys=False) + "---\n" + body
    (root / f"{rid}.md").write_text(text, "utf-8")


def records(rng: random.Random, n: int) -> dict[str, tuple[dict[str, Any], str]]:
    out: dict[str, tuple[dict[str, Any], str]] = {}
    for i in range(n):
        meta: dict[str, Any] = {
            "kind": rng.choice(["page", "page", "claim"]),
            "title": f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i}",
            "type": rng.choice(TYPES),
        }
        if rng.random() < 0.2:
            meta["category"] = rng.choice(["runbook", "howto"])
        if rng.random() < 0.6:
            meta["tags"] = rng.sample(["x", "y", "z"], rng.randint(1, 2))
        if rng.random() < 0.85:
            meta["recorded_at"] = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00Z"
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30))) + "\n"
        out[f"r{i:02d}"] = (meta, body)
    for old, new in (("r01", "r02"), ("r05", "r06"), ("r10", "r11"), ("r12", "r40")):  # supersessions
        out[old][0].update(status="superseded", superseded_by=new)
    out["r03"][0]["status"] = "withdrawn"
    return out


KNOWL_CALLS: list[dict[str, Any]] = [
    {"query": "river stone", "limit": 10, "explain": True},
    {"query": "sqlite", "status": "all", "limit": 50},
    {"query": "alpha", "tags": ["x"], "limit": 20},
    {"query": "maple orbit", "asOf": "2024-06-30", "status": "all", "explain": True, "limit": 50},
    {"query": "gamma", "category": "runbook", "limit": 10},
    {},
    {"limit": 50, "status": "all"},
    {"tags": ["y", "z"], "limit": 50},
    {"asOf": "2024-06-30", "status": "superseded", "limit": 50},
    {"asOf": "2024-09-01", "limit": 50, "tags": ["x"], "explain": True},
    {"id": "r02"},
]
RECORDS_CALLS: list[dict[str, Any]] = [
    {"kind": ["claim"], "limit": 5},
    {"kind": ["claim"], "limit": 5, "offset": 5},
    {"type": ["meeting"], "limit": 100},
    {"tag": ["x", "y"], "lifecycle": "all", "limit": 7, "offset": 2},
    {"tag": ["z"], "kind": ["page"], "limit": 100},
    {"lifecycle": "superseded", "limit": 100},
    {"limit": 10, "offset": 30},
    {"since": "2024-03-01", "until": "2024-08-01", "timeField": "recorded_at", "limit": 100},
]


def answers(store: knowtk.Store) -> list[Any]:
    out = []
    for args in KNOWL_CALLS:
        res = store.call("knowl_query", args)
        out.append(("knowl_query", args, {k: v for k, v in res.items() if k != "freshness"}))
    for args in RECORDS_CALLS:
        res = store.call("knowledge_records", args)
        out.append(("knowledge_records", args, {k: v for k, v in res.items() if k != "freshness"}))
    return out


def edits(root: Path, recs: dict[str, tuple[dict[str, Any], str]]) -> list[Any]:
    """One change per step, each something a kept map depends on."""

    def change(rid: str, body_extra: str = "", **meta: Any) -> None:
        old_meta, body = recs[rid]
        new_meta = {**old_meta, **meta}
        for key in [k for k, v in new_meta.items() if v is None]:
            del new_meta[key]
        recs[rid] = (new_meta, body + body_extra)
        write(root, rid, *recs[rid])

    def remove(rid: str) -> None:
        del recs[rid]
        (root / f"{rid}.md").unlink()

    return [
        lambda: change("r07", "river river stone sqlite quiet words added\n"),
        lambda: change("r08", tags=["x", "z"], type="runbook"),
        lambda: change("r09", kind="claim", category="runbook", recorded_at="2024-05-05T00:00:00Z"),
        lambda: change("r02", recorded_at="2024-12-20T00:00:00Z"),  # moves r01's supersession in time
        lambda: change("r13", status="superseded", superseded_by="r14"),
        lambda: remove("r15"),
        lambda: change("r16", recorded_at=None, body_extra="undated now, alpha\n"),
        lambda: change("r11", status="withdrawn"),
        lambda: (
            recs.__setitem__("r60", ({"kind": "claim", "title": "River new", "type": "decision"}, "river maple\n")),
            write(root, "r60", *recs["r60"]),
        ),
    ]


@pytest.mark.parametrize("hybrid", [False, True], ids=["bm25", "bm25+cosine"])
def test_a_warm_store_answers_as_a_fresh_one_after_each_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hybrid: bool
) -> None:
    if hybrid:
        monkeypatch.delenv("KNOWTK_SEMANTIC", raising=False)
        monkeypatch.setattr(semantic, "load_embedder", lambda: WordEmbedder())
    else:
        monkeypatch.setenv("KNOWTK_SEMANTIC", "0")
    root = tmp_path / "store"
    root.mkdir()
    (root / "knowtk.yaml").write_text("name: warm\nontology:\n  runbook: {aliases: [howto]}\n", "utf-8")
    recs = records(random.Random(20), 45)
    for rid, (meta, body) in recs.items():
        write(root, rid, meta, body)
    warm = knowtk.open_store(root, state_dir=tmp_path / "warm", change_source=StatWalk)
    first = answers(warm)
    assert answers(warm) == first  # repeated calls: the kept maps give the same answers
    assert any(item[2].get("total") for item in first)
    for step, edit in enumerate(edits(root, recs)):
        edit()
        got = answers(warm)
        fresh = knowtk.open_store(root, state_dir=tmp_path / f"fresh-{step}", change_source=StatWalk)
        try:
            want = answers(fresh)
        finally:
            fresh.close()
        for (tool, args, a), (_, _, b) in zip(got, want, strict=True):
            assert a == b, f"step {step}: {tool} {args}"
    warm.close()


@pytest.mark.parametrize("seed", range(6))
def test_fuse_page_is_the_first_page_of_fuse(seed: int) -> None:
    rng = random.Random(seed)
    n = [60, 2000][seed % 2]
    ids = [f"d{i}" for i in range(n)]
    bm25 = rng.sample(ids, n * 2 // 3)
    cosine = rng.sample(ids, n // 2)  # equal fused scores happen: ids at the same ranks of the two lists
    if seed >= 4:  # a repeated id counts at its first rank
        bm25 += bm25[:5]
        cosine.insert(3, cosine[10])
    whole = semantic.fuse(bm25, cosine, k=60)
    for limit in (1, 3, 10, 50, 100, 5000):
        total, page = semantic.fuse_page(bm25, cosine, k=60, limit=limit)
        assert total == len(whole)
        assert list(page.items()) == list(whole.items())[:limit]
    for a, b in ((["a", "b"], ["b", "a"]), ([], ["x", "y"]), (["x"], []), ([], [])):
        tied = semantic.fuse(a, b, k=60)
        assert semantic.fuse_page(a, b, k=60, limit=1) == (len(tied), dict(list(tied.items())[:1]))
        assert semantic.fuse_page(a, b, k=0, limit=2) == (len(tied), dict(list(semantic.fuse(a, b, k=0).items())[:2]))
