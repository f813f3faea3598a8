"""The fast paths give the answers of the slow ones: snapshots updated file by file equal a full
build, a parallel first scan equals a serial one, and filtered BM25 stays exact for large counts."""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import knowtk
from knowtk.engine.desired import PatchedMap
from knowtk.engine.desired import derive as derive_desired
from knowtk.engine.engine import Engine
from knowtk.model import shapes
from knowtk.scan import pool
from knowtk.snapshot import image_write, overlay
from knowtk.snapshot.build import build_snapshot
from knowtk.snapshot.model import Snapshot
from knowtk.snapshot.overlay import Deferred, Overlaid
from knowtk.snapshot.stored import StoredSnapshot
from knowtk.state import STATE_FILE
from tests.helpers import StoreBuilder
from tests.test_bm25 import reference_scores

FIELDS = [f.name for f in shapes.fields(Snapshot) if not f.name.startswith("_")]
COMPARED = [f for f in FIELDS if f not in ("generation", "changed_ids", "previous_generation", "image_key")]
FOLDERS = ["team", "team/notes", "ops", "ops/old", "misc"]
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]


def snapshot_state(engine: Engine, snap: Snapshot) -> dict:
    out = {name: getattr(snap, name) for name in COMPARED}
    out["folders"] = snap.folders
    out["fingerprints"] = {scope: snap.fingerprint(scope) for scope in [(), *[(f,) for f in snap.folders]]}
    out["desired"] = engine._desired(snap)
    return out


def full_state(engine: Engine, snap: Snapshot) -> dict:
    """What a from-scratch build of the same files (same safeguards, same instant) gives."""
    full = build_snapshot(engine.scanner.files, engine.config, engine.safeguards, generation=0, now=snap.evaluated_at)
    saved = engine._keyword_desired, engine._keyword_base
    engine._keyword_desired = None
    try:
        return snapshot_state(engine, full)
    finally:
        engine._keyword_desired, engine._keyword_base = saved


class RandomStore:
    """A store of small records that link to each other, edited at random."""

    def __init__(self, builder: StoreBuilder, seed: int) -> None:
        self.b, self.rng = builder, random.Random(seed)
        self.paths: dict[str, str] = {}  # path -> id it holds
        self.serial = 0

    def meta(self, rid: str) -> dict:
        rng = self.rng
        ids = sorted(set(self.paths.values())) or [rid]
        meta: dict = {"id": rid, "kind": "page", "title": f"{rng.choice(WORDS)} {rid}"}
        if rng.random() < 0.3:
            meta["aliases"] = [f"{rng.choice(WORDS)} alias", rid.upper()]
        if rng.random() < 0.25:
            meta["entities"] = rng.sample(ids, min(len(ids), rng.randint(1, 2)))
        if rng.random() < 0.15:
            meta["depends_on"] = [rng.choice([*ids, "missing-one"])]
        if rng.random() < 0.1:
            meta.update(kind="relationship", **{"from": rng.choice(ids), "to": rng.choice(ids)})
        if rng.random() < 0.15:
            meta.update(status="superseded", superseded_by=rng.choice([*ids, "nowhere"]))
        elif rng.random() < 0.08:
            meta["status"] = "withdrawn"
        if rng.random() < 0.1:
            meta["expires_at"] = rng.choice(["2001-01-01", "2999-01-01", "2024-02-30"])
        if rng.random() < 0.2:
            meta["revision"] = rng.randint(1, 4)
        return meta

    def write(self, path: str, rid: str) -> None:
        self.serial += 1
        body = " ".join(self.rng.choices(WORDS, k=8)) + f" serial{self.serial}"
        self.b.write(path, self.meta(rid), body)
        self.paths[path] = rid

    def new_path(self) -> str:
        self.serial += 1
        return f"{self.rng.choice(FOLDERS)}/f{self.serial}.md"

    def step(self) -> str:
        rng, paths = self.rng, self.paths
        action = rng.choice(["edit", "edit", "add", "remove", "rename", "duplicate", "break", "restate"])
        if not paths or action == "add":
            self.write(self.new_path(), f"r{self.serial}")
        elif action == "edit":
            path = rng.choice(sorted(paths))
            self.write(path, paths[path])
        elif action == "remove":
            path = rng.choice(sorted(paths))
            self.b.remove(path)
            del paths[path]
        elif action == "rename":
            path = rng.choice(sorted(paths))
            target = self.new_path()
            (self.b.root / path).rename(self.b.root / target)
            paths[target] = paths.pop(path)
        elif action == "duplicate":
            self.write(self.new_path(), rng.choice(sorted(paths.values())))
        elif action == "break":
            path = rng.choice(sorted(paths))
            self.b.raw(path, "---\nid: [broken\n---\n")
            paths[path] = ""
        else:  # a superseded or withdrawn id comes back as active: the safeguards decide
            path = rng.choice(sorted(paths))
            if paths[path]:
                self.b.page(paths[path], "Back again", path=path, revision=rng.randint(1, 6))
        return action


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_updated_snapshots_equal_a_full_build(builder: StoreBuilder, seed: int) -> None:
    store = RandomStore(builder, seed)
    for _ in range(40):
        store.write(store.new_path(), f"r{store.serial}")
    builder.write("knowtk.yaml", "name: x")  # not a record
    engine = Engine(builder.root)
    snap = engine.snapshot()
    assert snap.changed_ids is None
    assert snapshot_state(engine, snap) == full_state(engine, snap)
    for i in range(60):
        action = store.step()
        before = engine.snapshot()
        snap = engine.snapshot()
        assert snap is before  # nothing changed between the two calls
        assert snapshot_state(engine, snap) == full_state(engine, snap), (i, action)
        assert snap.changed_ids is not None and snap.previous_generation == snap.generation - 1
        assert engine._keyword_base is not None  # reconcile compares the changed ids only
        engine.keyword(snap)  # the projections follow the patched desired maps
        index = engine._keyword
        assert index is not None
        assert (index.main.shas, index.history.shas) == engine._desired(snap)
    engine.close()


def test_one_edit_changes_only_its_record(builder: StoreBuilder) -> None:
    for i in range(20):
        builder.page(f"r{i}", f"Record {i}", "words", entities=["person"] if i % 2 else [])
    builder.page("person", "A person")
    engine = Engine(builder.root)
    engine.snapshot()
    builder.page("r3", "Record 3", "other words", entities=["person"])
    assert engine.snapshot().changed_ids == {"r3"}
    builder.page("person", "A person", status="withdrawn")  # every record that names it goes too
    snap = engine.snapshot()
    assert snap.changed_ids == {"person", *(f"r{i}" for i in range(20) if i % 2 or i == 3)}
    engine.close()


def test_a_sighting_by_another_process_reaches_records_this_one_did_not_touch(builder: StoreBuilder, tmp_path) -> None:
    builder.page("c", "Zebra claim", kind="claim")
    builder.page("d", "Other")
    late = Engine(builder.root)
    late.snapshot()
    active = (builder.root / "c.md").read_bytes()
    builder.page("c", "Zebra claim", kind="claim", status="withdrawn")
    other = Engine(builder.root)  # another process sees the withdrawal and records it
    other.snapshot()
    other.close()
    (builder.root / "c.md").write_bytes(active)  # the same bytes as `late` last saw: not touched for it
    builder.page("d", "Other, edited")
    snap = late.snapshot()
    assert snap.lifecycle["c"] == "withdrawn" and "c" in snap.changed_ids
    assert snapshot_state(late, snap) == full_state(late, snap)
    late.close()


def build_varied_store(builder: StoreBuilder) -> None:
    for i in range(70):
        folder = ["a", "b", "b/c"][i % 3]
        builder.page(f"r{i:02d}", f"Alpha {i}", f"alpha beta {'gamma ' * (i % 5)}", path=f"{folder}/r{i:02d}.md")
    builder.page("r05", "Duplicate of r05", path="a/dup.md")
    builder.raw("a/broken.md", "---\nid: [\n---\n")
    builder.raw("b/latin1.md", b"---\nid: x\nkind: page\n---\ncaf\xe9\n")
    builder.page("big", "Too big", "alpha " * 400, path="b/big.md")


@pytest.mark.parametrize("threaded", [False, True], ids=["fork", "forkserver"])
def test_a_parallel_first_scan_equals_a_serial_one(
    make_builder, tmp_path, monkeypatch: pytest.MonkeyPatch, threaded: bool
) -> None:
    builder = make_builder("store")
    build_varied_store(builder)
    if threaded:  # as in a Jupyter kernel: workers come from a fork server, not from this process
        monkeypatch.setattr(threading, "active_count", lambda: 2)
    context = pool._pool_context()
    if context is None:
        pytest.skip("this process cannot start parse workers (a script's __main__ would run again in them)")
    assert context.get_start_method() == ("forkserver" if threaded else "fork")
    answers = []
    for parallel in (False, True):
        engine = Engine(builder.root, state_dir=tmp_path / f"state-{parallel}", max_file_bytes=1500)
        engine.scanner.parallel_min_files = 1 if parallel else 10**9
        snap = engine.snapshot()
        index = engine.keyword(snap)
        rows = sorted((rid, index.main.tokens[rowid]) for rid, rowid in index.main.ids.items())
        state = {k: v for k, v in snapshot_state(engine, snap).items() if k not in ("scanned_at", "evaluated_at")}
        answers.append((state, rows, engine.scanner.reads, engine.scanner.parses))
        engine.close()
    assert answers[0] == answers[1]
    assert answers[0][2] == 73 and answers[0][3] == 73  # every file read and parsed once, the big one never


@pytest.mark.parametrize(
    ("query", "mode", "expression"),
    [("alpha", "all", '"alpha"'), ("alpha beta", "any", '"alpha" OR "beta"'), ("beta alpha", "phrase", '"beta alpha"')],
)
def test_filtered_bm25_is_exact_for_large_counts(builder: StoreBuilder, query: str, mode: str, expression: str) -> None:
    rng = random.Random(5)
    for i in range(30):
        body = " ".join(rng.choices(["alpha", "beta", "other", "words"], k=rng.choice([3, 50, 5000, 40000])))
        title = " ".join(["alpha"] * rng.randint(0, 30))
        kind, aliases = ["page", "claim"][i % 2], ["beta alpha"] * (i % 3)
        builder.page(f"r{i:02d}", title or "none", body, kind=kind, aliases=aliases)
    res = builder.open().call("knowledge_grep", {"query": query, "mode": mode, "kind": "claim", "limit": 50})
    expected = reference_scores(builder, lambda p, m: m["kind"] == "claim", expression)
    assert res["total"] == len(expected)
    assert [h["id"] for h in res["hits"]] == [i for i, _ in expected]
    for hit, (_, theirs) in zip(res["hits"], expected, strict=True):
        assert hit["score"] == pytest.approx(theirs, rel=1e-12, abs=1e-15)


def test_a_page_is_the_slice_of_the_whole_ranking(builder: StoreBuilder) -> None:
    """grep orders only the first offset + limit direct matches; pages must still be slices of the whole."""
    from knowtk.query.common import RecordFilter
    from knowtk.query.grep import parse_terms, ranked_matches

    rng = random.Random(11)
    for i in range(60):
        meta, body = {"kind": ["page", "claim"][i % 2]}, " ".join(rng.choices(WORDS, k=6))
        if i % 4 == 0 and i:  # superseded, worded as the query; its replacement may match or not
            meta.update(status="superseded", superseded_by=f"r{rng.randrange(60):02d}")
            body += " zulu"
        elif i % 3 == 0:
            body += " zulu"
        builder.page(f"r{i:02d}", " ".join(rng.choices(WORDS, k=2)), body, **meta)
    store = builder.open()
    engine = store.engine
    for query, mode, filters in [("zulu", "all", {}), ("zulu beta", "any", {}), ("zulu", "all", {"kind": "claim"})]:
        snap = engine.snapshot()
        index = engine.keyword(snap)
        flt = RecordFilter.from_args(snap, {"kind": (filters["kind"],)} if filters else {})
        terms = parse_terms(engine.state.conn, query, mode)
        whole = [
            (m.id, current) for m, current in ranked_matches(snap, flt, "active", terms, index.main, index.history)
        ]
        assert any(current for _, current in whole)  # the case under test: replacements after direct matches
        for offset, limit in [(0, 1), (0, 5), (3, 7), (10, 20), (0, 50)]:
            args = {"query": query, "mode": mode, "offset": offset, "limit": limit, **filters}
            res = store.call("knowledge_grep", args)
            assert res["total"] == len(whole)
            page = [(h["id"], None) if h["via"] is None else (h["via"]["id"], h["id"]) for h in res["hits"]]
            assert page == whole[offset : offset + limit]


def test_parse_workers_that_cannot_start_fall_back_to_this_process(
    make_builder, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder = make_builder("store")
    build_varied_store(builder)
    monkeypatch.setattr(pool, "_pool_context", lambda: object())

    class NoWorkers:
        def __init__(self, *args, **kwargs) -> None:
            raise OSError("fork: resource temporarily unavailable")

    import concurrent.futures  # pool_map imports the executor when it starts workers

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", NoWorkers)
    engine = Engine(builder.root, state_dir=tmp_path / "state", max_file_bytes=1500)
    engine.scanner.parallel_min_files = 1
    snap = engine.snapshot()
    assert engine.scanner.reads == engine.scanner.parses == 73
    assert len(snap.records) > 0
    engine.close()


def _tables(snap: Snapshot) -> dict:
    return {name: getattr(snap, name) for name in COMPARED}


@pytest.mark.parametrize("seed", [4, 5])
def test_layered_maps_keep_every_generation_and_collapse(
    builder: StoreBuilder, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An update's per-record maps (lifecycle, superseded by) lie over the previous snapshot's, which
    no later build changes: every snapshot kept still equals the full build of its own files after
    the 150 that followed it; and past an eighth of the map, the layers become one dict again."""
    monkeypatch.setattr(overlay, "OVERLAID_MIN", 4)  # a small store's layers collapse too
    store = RandomStore(builder, seed)
    for _ in range(30):
        store.write(store.new_path(), f"r{store.serial}")
    engine = Engine(builder.root)
    kept: list[tuple[Snapshot, dict]] = []
    layered = collapsed = 0
    previous = engine.snapshot()
    for i in range(150):
        action = store.step()
        snap = engine.snapshot()
        full = build_snapshot(
            engine.scanner.files, engine.config, engine.safeguards, generation=0, now=snap.evaluated_at
        )
        expected = _tables(full)
        assert _tables(snap) == expected, (i, action)
        for name in ("lifecycle", "superseded_by"):
            if snap is previous:  # the step changed nothing a snapshot holds
                break
            now, before = getattr(snap, name), getattr(previous, name)
            if isinstance(now, Overlaid):
                layered += 1
                assert now is not before  # a build never writes into the previous snapshot's map
                assert not isinstance(before, Overlaid) or now.top is not before.top
            elif isinstance(before, Overlaid):
                collapsed += 1
        kept.append((snap, expected))
        previous = snap
    for i, (snap, expected) in enumerate(kept):  # what readers of an old snapshot see has not moved
        assert _tables(snap) == expected, i
        assert dict(snap.lifecycle) == dict(expected["lifecycle"]) and len(snap.lifecycle) == len(expected["lifecycle"])
    assert layered > 100 and collapsed >= 2
    engine.close()


def test_the_first_change_of_a_new_process_copies_no_per_record_map(builder: StoreBuilder, tmp_path) -> None:
    """A process that opened a stored snapshot and sees one edit parses no superseded_by table of the
    image and copies no lifecycle (the first query read its hits' lifecycles where they lie, not parsing
    it); the new maps lie over the stored ones, and it answers as a fresh build does."""
    for i in range(40):
        extra = {"status": "superseded", "superseded_by": f"r{i + 1}"} if i % 7 == 3 else {}
        builder.page(f"r{i}", f"Record {i}", f"alpha words {i}", **extra)
    state = tmp_path / "state"
    first = knowtk.open_store(builder.root, state_dir=state)
    first.call("knowledge_grep", {"query": "alpha"})
    first.close()
    store = knowtk.open_store(builder.root, state_dir=state)
    store.call("knowledge_grep", {"query": "alpha"})
    engine = store.engine
    stored = engine._snapshot  # (not engine.snapshot(), which parses every part before it returns one)
    assert isinstance(stored, StoredSnapshot)
    assert "superseded_by" not in stored.parts.parsed and "lifecycle" not in stored.parts.parsed
    builder.page("r12", "Record 12", "alpha zebra words", revision=2)  # on no supersession chain
    hits = store.call("knowledge_grep", {"query": "zebra"})["hits"]
    assert [h["id"] for h in hits] == ["r12"]
    assert "superseded_by" not in stored.parts.parsed
    snap = engine._snapshot
    assert snap is not None and snap.previous_generation == stored.generation
    assert isinstance(snap.superseded_by, Overlaid) and not snap.superseded_by.loaded
    assert set(snap.superseded_by.top) == {"r12"} and snap.superseded_by["r12"] is None
    assert isinstance(snap.lifecycle, Overlaid) and not snap.lifecycle.loaded
    assert snap.lifecycle.shares_base(stored.lifecycle) and set(snap.lifecycle.top) == {"r12"}
    fresh = knowtk.open_store(builder.root, state_dir=tmp_path / "fresh")
    for args in ({"query": "alpha", "lifecycle": "all"}, {"query": "words", "limit": 50}):
        assert store.call("knowledge_grep", args)["hits"] == fresh.call("knowledge_grep", args)["hits"]
    engine.scanner.fill_all()  # a new process's entries are stubs until read: the full build needs them all
    full = build_snapshot(engine.scanner.files, engine.config, engine.safeguards, generation=0, now=snap.evaluated_at)
    assert _tables(snap) == _tables(full)
    fresh.close()
    store.close()


LAZY_PARTS = {"paths", "names", "index.id_at", "index.claims", "index.referrers"}


def _index_tables(snap: Snapshot) -> dict:
    ix = snap.index
    assert ix is not None
    maps = ("id_at", "claims", "referrers", "base", "expiring", "folders", "file_issues", "dup_issues")
    out: dict = {name: dict(getattr(ix, name)) for name in maps}
    out["superseded"] = set(ix.superseded)
    return out


def _keyword_rows(state: Path) -> tuple[dict[str, str], dict[str, str]]:
    conn = sqlite3.connect(state / STATE_FILE)
    try:
        main, history = (
            "SELECT id, sha256 FROM keyword_rows_v1_root",
            "SELECT id, sha256 FROM keyword_history_rows_v1_root",
        )
        return dict(conn.execute(main)), dict(conn.execute(history))
    finally:
        conn.close()


def _desired_of(snap: Snapshot) -> tuple[dict[str, str], dict[str, str]]:
    maps: tuple[dict[str, str], dict[str, str]] = ({}, {})
    derive_desired(snap, snap.records, *maps)
    return maps


@pytest.mark.parametrize("seed", [6, 7])
def test_edits_over_a_stored_image_parse_no_per_record_map_and_stay_exact(
    builder: StoreBuilder, seed: int, tmp_path
) -> None:
    """A new process over a stored image: its first change (an edit) parses none of the per-record maps
    (paths, names, id_at, claims, referrers; probed at the changed keys or deferred), and neither do the
    60 random edits after it (none reads them: each is answered by a grep); every snapshot of the chain,
    read only at the end, equals the full build of its own files, index included."""
    store = RandomStore(builder, seed)
    for _ in range(40):
        store.write(store.new_path(), f"r{store.serial}")
    builder.write("knowtk.yaml", "name: x")  # (without it, a store with issues counts its files for a hint)
    for path in builder.root.rglob("*.md"):  # (a file written the second it is scanned is read again after)
        os.utime(path, (time.time() - 60, time.time() - 60))
    state = tmp_path / "state"
    first = knowtk.open_store(builder.root, state_dir=state)
    first.call("knowledge_grep", {"query": "alpha"})
    first.close()
    opened = knowtk.open_store(builder.root, state_dir=state)
    opened.call("knowledge_grep", {"query": "alpha"})
    engine = opened.engine
    stored = engine._snapshot
    assert isinstance(stored, StoredSnapshot)
    assert not LAZY_PARTS & stored.parts.parsed.keys()  # (the files are as the image was built from them)
    # an edit of a record's text, on no walk of the unavailable records (which would read the referrers)
    edited = next(p for p, rid in sorted(store.paths.items()) if rid and rid not in stored.unavailable)
    (builder.root / edited).write_text((builder.root / edited).read_text() + "\nzebra words\n")
    kept: list[tuple[Snapshot, dict, dict]] = []
    deferred = 0  # builds over a names map still deferred (not parsed)
    for i in range(61):
        if i:
            store.step()
        opened.call("knowledge_grep", {"query": "alpha"})
        snap = engine._snapshot
        assert snap is not None
        if i == 0:  # the first change: one edit, not one of these parts parsed, nor the projections' rows read
            assert snap.previous_generation == stored.generation
            assert not LAZY_PARTS & stored.parts.parsed.keys(), sorted(stored.parts.parsed)
            assert engine._keyword_desired is not None
            for desired in engine._keyword_desired[1:]:
                assert isinstance(desired, PatchedMap) and desired._map is None and desired._base._map is None
        engine.scanner.fill_all()  # (a new process's entries are stubs until read: the full build needs them)
        full = build_snapshot(
            engine.scanner.files, engine.config, engine.safeguards, generation=0, now=snap.evaluated_at
        )
        assert _keyword_rows(state) == _desired_of(full), i  # the projections hold what a fresh build wants
        expected = _tables(full)
        assert dict(snap.records) == expected.pop("records"), i  # (an old stored record is gone once its file is)
        kept.append((snap, expected, _index_tables(full)))
        deferred += isinstance(snap.names, Deferred) and not snap.names.lazy.loaded
    assert deferred >= 2
    for i, (snap, expected, expected_index) in enumerate(kept):  # read now: what the chain left in each is exact
        assert {name: getattr(snap, name) for name in expected} == expected, i
        assert _index_tables(snap) == expected_index, i
    opened.close()


def test_a_record_hash_read_where_it_lies_equals_the_parsed_one(
    builder: StoreBuilder, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored image's record hashes read one by one (record_sha not parsed), over patches too, are the
    parsed table's."""
    monkeypatch.setattr(image_write, "PATCH_SHARE", 1)  # a small image is patched too
    for i in range(30):
        builder.page(f"r{i}", f"Record {i}", f"alpha words {i}")
    state = tmp_path / "state"
    for step in range(3):  # a whole image, then patches: files changed while no process ran
        if step:
            builder.page(f"r{step}", f"Record {step}", f"alpha beta {step}", revision=2)
            builder.page(f"n{step}", f"New {step}", "alpha new")
        opened = knowtk.open_store(builder.root, state_dir=state)
        opened.call("knowledge_grep", {"query": "alpha"})
        opened.close()
    opened = knowtk.open_store(builder.root, state_dir=state)
    opened.call("knowledge_grep", {"query": "alpha"})
    stored = opened.engine._snapshot
    assert isinstance(stored, StoredSnapshot) and stored.parts.meta["patches"]
    records = stored.records
    points = {rid: records._sha_point(rid) for rid in records.ids}
    assert "record_sha" not in stored.parts.parsed
    assert points == records._sha and len(points) == 32
    assert records._sha_point("nowhere") is None
    opened.close()
