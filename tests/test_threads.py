"""One Store shared by threads answers exactly as one thread would, with or without an editor."""

from __future__ import annotations

import random
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import knowtk
from tests.helpers import DEMO

# (tool, args, stable): the editor only writes churn/, which the stable calls leave out of scope
CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("knowledge_grep", {"query": "vector index", "scope": ["decisions", "notes", "claims"]}, True),
    ("knowledge_grep", {"query": "search sync", "mode": "any", "scope": ["claims", "meetings"]}, True),
    ("knowledge_grep", {"query": "index", "lifecycle": "all", "scope": ["decisions", "notes"]}, True),
    ("knowledge_grep", {"query": "columnar storage", "mode": "phrase", "scope": ["decisions", "notes"]}, True),
    ("knowledge_lookup", {"query": "person-ada-okafor"}, True),
    ("knowledge_records", {"kind": "claim", "scope": "claims", "limit": 50}, True),
    ("knowledge_record", {"id": "dec-2026-021"}, True),
    ("knowledge_chronicle_day", {"date": "2026-03-29", "week": True, "timeZone": "Europe/Berlin"}, False),
    ("knowledge_timeline", {"entity": "person-ada-okafor", "limit": 50}, False),
    ("knowledge_grep", {"query": "vector index"}, False),
    ("knowledge_records", {"limit": 100}, False),
    ("knowl_query", {"query": "vector index", "limit": 5}, False),
]
VOLATILE = {"freshness", "indexedAt", "queriedAt", "scannedAt", "snapshot"}
THREADS = 6
CALLS_PER_THREAD = 40


def strip(answer: Any) -> Any:
    if isinstance(answer, dict):
        return {k: strip(v) for k, v in answer.items() if k not in VOLATILE}
    if isinstance(answer, list):
        return [strip(v) for v in answer]
    if isinstance(answer, float):  # an embedding depends on its batch in the last float32 bits
        return round(answer, 5)
    return answer


def unavailable(answer: dict[str, Any]) -> bool:
    return answer.get("index", {}).get("state") == "unavailable" or bool(answer.get("errors"))


@pytest.fixture
def store_copy(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(DEMO, root)
    return root


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    with knowtk.open_store(DEMO, state_dir=tmp_path_factory.mktemp("single")) as store:
        return [strip(store.call(tool, args)) for tool, args, _ in CALLS]


def hammer(threads: int, work: Callable[[random.Random], None]) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run(k: int) -> None:
        rng = random.Random(k)
        start.wait()
        try:
            work(rng)
        except BaseException as exc:  # reported below, with its type and message
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread never finished (deadlock?)"
    return errors


def test_threads_sharing_a_store_get_the_single_threaded_answers(store_copy: Path, expected: list[Any]) -> None:
    store = knowtk.open_store(store_copy)  # cold: the first calls race to build everything
    mismatches: list[tuple[str, dict[str, Any]]] = []

    def work(rng: random.Random) -> None:
        for _ in range(CALLS_PER_THREAD):
            i = rng.randrange(len(CALLS))
            tool, args, _ = CALLS[i]
            if strip(store.call(tool, args)) != expected[i]:
                mismatches.append((tool, args))

    errors = hammer(THREADS, work)
    assert [f"{type(e).__name__}: {e}" for e in errors] == []
    assert mismatches == []


def test_threads_and_python_methods_mixed(store_copy: Path) -> None:
    store = knowtk.open_store(store_copy)
    single = knowtk.open_store(store_copy, state_dir=store_copy.parent / "single")
    want = {
        "grep": single.grep("vector index").to_dict()["total"],
        "lookup": single.lookup("Sam").to_dict()["status"],
        "records": single.records(kind="claim").to_dict()["total"],
        "explain": single.explain("dec-2025-012", query="vector index")["status"],
    }

    def work(rng: random.Random) -> None:
        for _ in range(15):
            which = rng.choice(sorted(want))
            if which == "grep":
                got = store.grep("vector index").to_dict()["total"]
            elif which == "lookup":
                got = store.lookup("Sam").to_dict()["status"]
            elif which == "records":
                got = store.records(kind="claim").to_dict()["total"]
            else:
                got = store.explain("dec-2025-012", query="vector index")["status"]
            assert got == want[which], which

    assert hammer(4, work) == []


def test_threads_with_an_editor_thread(store_copy: Path, expected: list[Any]) -> None:
    store = knowtk.open_store(store_copy)
    stop = threading.Event()
    churn = store_copy / "churn"
    churn.mkdir()
    words = ["vector", "index", "retrieval", "churn", "columnar", "storage", "search", "sync"]

    def edit() -> None:
        rng = random.Random(99)
        while not stop.is_set():
            n = rng.randrange(12)
            path = churn / f"churn-{n:02d}.md"
            if rng.random() < 0.2 and path.exists():
                path.unlink()
            else:
                body = " ".join(rng.choice(words) for _ in range(rng.randrange(3, 30)))
                text = (
                    f"---\nid: churn-{n:02d}\nkind: page\ntitle: Churn {n}\noccurred_at: '2026-02-{1 + n:02d}'\n"
                    f"entities: [person-ada-okafor]\n---\n{body}\n"
                )
                tmp = path.with_suffix(".tmp")
                tmp.write_text(text)
                tmp.replace(path)
            stop.wait(0.002)

    editor = threading.Thread(target=edit)
    editor.start()
    problems: list[str] = []

    def work(rng: random.Random) -> None:
        for _ in range(CALLS_PER_THREAD):
            i = rng.randrange(len(CALLS))
            tool, args, stable = CALLS[i]
            answer = store.call(tool, args)
            if unavailable(answer):
                problems.append(f"unavailable: {tool} {answer.get('index') or answer.get('errors')}")
            elif stable and strip(answer) != expected[i]:
                problems.append(f"mismatch: {tool} {args}")

    try:
        errors = hammer(THREADS, work)
    finally:
        stop.set()
        editor.join()
    assert [f"{type(e).__name__}: {e}" for e in errors] == []
    assert problems == []
    # once edits stop, every answer equals a clean rebuild of the edited store
    with knowtk.open_store(store_copy, state_dir=store_copy.parent / "rebuild") as clean:
        want = [strip(clean.call(tool, args)) for tool, args, _ in CALLS]
    assert [strip(store.call(tool, args)) for tool, args, _ in CALLS] == want


@pytest.mark.parametrize(
    "target",
    [
        "knowtk.index.fts_storage.FtsStorage.docsizes",  # in the middle of writing the keyword projection
        "knowtk.snapshot.build._Build._derive",  # in the middle of building a snapshot
        "knowtk.index.temporal.TemporalProjection.desired",  # before the temporal tables are written
        "knowtk.scan.cache.Scanner.save",  # after the scan, before the snapshot
    ],
)
def test_an_exception_mid_call_leaves_nothing_half_updated(
    store_copy: Path, expected: list[Any], monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    store = knowtk.open_store(store_copy)
    assert [strip(store.call(tool, args)) for tool, args, _ in CALLS] == expected
    # an edit the next call takes in, interrupted once
    (store_copy / "claims" / "zz-new.md").write_text("---\nid: zz-new\nkind: claim\ntitle: Zebra\n---\nvector index\n")
    module, _, attr = target.rpartition(".")
    owner_path, _, cls = module.rpartition(".")
    import importlib

    owner = getattr(importlib.import_module(owner_path), cls)
    real = getattr(owner, attr)
    calls = {"n": 0}

    def boom(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt("interrupted mid-call")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, attr, boom)
    with pytest.raises(KeyboardInterrupt):
        for tool, args in [("knowledge_timeline", {"entity": "person-ada-okafor"}), ("knowledge_grep", {"query": "x"})]:
            store.call(tool, args)
    with knowtk.open_store(store_copy, state_dir=store_copy.parent / "rebuild") as clean:
        want = [strip(clean.call(tool, args)) for tool, args, _ in CALLS]
    assert [strip(store.call(tool, args)) for tool, args, _ in CALLS] == want
    assert store.check()["ok"] is True


def test_workspaces_sharing_stores_in_opposite_orders_do_not_deadlock(make_builder) -> None:
    alpha, beta = make_builder("alpha"), make_builder("beta")
    for b, name in ((alpha, "alpha"), (beta, "beta")):
        b.raw("knowtk.yaml", f"name: {name}\nshare: true\n")
        for i in range(20):
            b.page(f"{name}-{i}", f"Vector index {name} {i}", f"vector index note {i}")
    a_store, b_store = alpha.open(), beta.open()
    one = knowtk.Workspace(a_store, linked={"beta": b_store})
    two = knowtk.Workspace(b_store, linked={"alpha": a_store})
    want_one = one.knowl("vector index", scope="workspace", limit=10).to_dict()
    want_two = two.knowl("vector index", scope="workspace", limit=10).to_dict()

    def work(rng: random.Random) -> None:
        for _ in range(15):
            choice = rng.randrange(3)
            if choice == 0:
                got = one.knowl("vector index", scope="workspace", limit=10).to_dict()
                assert strip(got) == strip(want_one)
            elif choice == 1:
                got = two.knowl("vector index", scope="workspace", limit=10).to_dict()
                assert strip(got) == strip(want_two)
            else:
                assert a_store.grep("vector index").to_dict()["total"] == 20

    assert hammer(4, work) == []
