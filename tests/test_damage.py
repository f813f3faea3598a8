"""Damaged projections are rebuilt by the next query; a killed cold build leaves nothing running."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

import knowtk
from tests.helpers import DEMO

SHADOWS = ("data", "idx", "docsize", "config", "text")  # FTS5's shadow tables, and the text it reads through a view
CALLS = [
    ("knowledge_grep", {"query": "vector index"}),
    ("knowledge_grep", {"query": "index", "lifecycle": "superseded"}),
    ("knowledge_grep", {"query": "search sync", "mode": "any", "kind": "claim"}),
    ("knowledge_timeline", {"entity": "person-ada-okafor", "limit": 50}),
    ("knowledge_chronicle_since", {"since": "2025-06-01", "limit": 50}),
    ("knowledge_records", {"limit": 100}),
]


def strip(answer: object) -> object:
    if isinstance(answer, dict):
        return {k: strip(v) for k, v in answer.items() if k not in ("freshness", "indexedAt", "queriedAt")}
    if isinstance(answer, list):
        return [strip(v) for v in answer]
    return answer


def answers(store: knowtk.Store) -> list[object]:
    return [strip(store.call(tool, args)) for tool, args in CALLS]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    with knowtk.open_store(DEMO, state_dir=tmp_path_factory.mktemp("clean")) as store:
        return answers(store)


def damage(state: Path, *statements: str) -> None:
    con = sqlite3.connect(state / "state.sqlite", isolation_level=None)
    for statement in statements:
        con.execute(statement)
    con.close()


def ready(store: knowtk.Store) -> None:
    for tool, args in CALLS:
        res = store.call(tool, args)
        assert res.get("index", {}).get("state", "ready") == "ready"


@pytest.mark.parametrize("family", ["keyword", "keyword_history"])
@pytest.mark.parametrize("shadow", SHADOWS)
@pytest.mark.parametrize("how", ["DROP TABLE {t}", "DELETE FROM {t}"])
def test_a_damaged_fts5_shadow_table_is_rebuilt_by_the_next_query(
    tmp_path: Path, clean: list[object], family: str, shadow: str, how: str
) -> None:
    state = tmp_path / "state"
    store = knowtk.open_store(DEMO, state_dir=state)
    assert answers(store) == clean
    damage(state, how.format(t=f"{family}_fts_v1_root_{shadow}"))
    assert answers(store) == clean  # the same Store, mid-life
    damage(state, how.format(t=f"{family}_fts_v1_root_{shadow}"))
    fresh = knowtk.open_store(DEMO, state_dir=state)  # and a new process
    assert answers(fresh) == clean
    report = fresh.check()
    assert report["ok"] is True and report["integrity"] == ["ok"]


@pytest.mark.parametrize(
    "statements",
    [
        ["DROP TABLE keyword_rows_v1_root"],
        ["DELETE FROM keyword_rows_v1_root WHERE rowid IN (SELECT rowid FROM keyword_rows_v1_root LIMIT 7)"],
        ["UPDATE keyword_rows_v1_root SET tokens = tokens + 3"],
        ["DROP TABLE keyword_state_v1"],
        ["DROP TABLE temporal_records_v1_root"],
        ["DROP TABLE temporal_dates_v1_root"],
        ["DELETE FROM temporal_records_v1_root"],
        ["DELETE FROM temporal_dates_v1_root"],
        ["DELETE FROM temporal_links_v1_root"],
        ["DROP TABLE temporal_state_v1"],
        ["DROP TABLE IF EXISTS scan_files_v1"],  # recreated by the next process (or check())
        ["DELETE FROM scan_files_v1"],
    ],
    ids=lambda s: s[0].split(" WHERE")[0].replace(" ", "_"),
)
def test_damaged_projections_are_rebuilt(tmp_path: Path, clean: list[object], statements: list[str]) -> None:
    state = tmp_path / "state"
    store = knowtk.open_store(DEMO, state_dir=state)
    assert answers(store) == clean
    damage(state, *statements)
    assert answers(store) == clean
    ready(store)
    damage(state, *statements)
    assert answers(knowtk.open_store(DEMO, state_dir=state)) == clean


def test_check_reports_what_it_found_and_repaired(tmp_path: Path, clean: list[object]) -> None:
    state = tmp_path / "state"
    store = knowtk.open_store(DEMO, state_dir=state)
    assert answers(store) == clean
    assert store.check() == {
        "earlier": [],
        "ok": True,
        "state": str(state / "state.sqlite"),
        "integrity": ["ok"],
        "found": [],
        "repaired": [],
        "unrepaired": [],
    }
    store.close()
    damage(
        state,
        "DELETE FROM keyword_history_fts_v1_root_docsize",
        "DELETE FROM temporal_dates_v1_root WHERE rowid % 2 = 0",
        "UPDATE scan_files_v1 SET sha256 = 'x' WHERE rowid % 3 = 0",
    )
    store = knowtk.open_store(DEMO, state_dir=state)
    report = store.check()
    assert report["ok"] is False and not report["unrepaired"]
    found = " | ".join(report["found"])
    assert "keyword_history_fts_v1_root_docsize" in found and "temporal_dates_v1_root" in found
    assert "scan_files_v1" in found
    assert len(report["repaired"]) == 3
    assert store.check()["ok"] is True
    assert answers(store) == clean


def test_fts5_corruption_only_integrity_check_sees_is_repaired_by_check(tmp_path: Path, clean: list[object]) -> None:
    state = tmp_path / "state"
    store = knowtk.open_store(DEMO, state_dir=state)
    assert answers(store) == clean
    # another text in a row of the text table (deflated, as kept): the index no longer matches it
    con = sqlite3.connect(state / "state.sqlite", isolation_level=None)
    con.execute(
        "UPDATE keyword_fts_v1_root_text SET body = ? WHERE rowid = (SELECT min(rowid) FROM keyword_fts_v1_root_text)",
        (zlib.compress(b"nothing here at all"),),
    )
    con.close()
    report = store.check()
    assert any("integrity-check" in line for line in report["found"])
    assert store.check()["ok"] is True
    assert answers(store) == clean


# -- a cold build killed in each phase ---------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import os, sys, time
    import knowtk, knowtk.scan.cache, knowtk.engine.engine, knowtk.index.temporal
    root, state, phase, marker = sys.argv[1:5]

    def mark():
        if not os.path.exists(marker):
            open(marker, "w").write(str(os.getpid()))

    if phase == "parse":  # runs in the pool workers (forked: they inherit this patch)
        real = knowtk.scan.cache.load_file
        def slow(*args):
            mark()
            time.sleep(0.05)
            return real(*args)
        knowtk.scan.cache.load_file = slow
    elif phase == "index":
        real_text = knowtk.engine.engine.Engine._text
        def slow_text(self, r):
            mark()
            time.sleep(0.005)
            return real_text(self, r)
        knowtk.engine.engine.Engine._text = slow_text
    elif phase == "temporal":
        real_desired = knowtk.index.temporal.TemporalProjection.desired
        def slow_desired(self, snap):
            mark()
            time.sleep(60)
        knowtk.index.temporal.TemporalProjection.desired = slow_desired
    store = knowtk.open_store(root, state_dir=state)
    store.engine.scanner.parallel_min_files = 50
    store.grep("vector index")
    store.timeline(entity="person-ada-okafor")
    time.sleep(60)
    """
)


def _children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry))
    return out


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("phase", ["parse", "index", "temporal"])
def test_a_cold_build_killed_in_each_phase_leaves_nothing_running_and_a_correct_state(
    tmp_path: Path, clean: list[object], phase: str
) -> None:
    root = tmp_path / "store"
    shutil.copytree(DEMO, root)
    state, marker = tmp_path / "state", tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(state), phase, str(marker)])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, "the cold build ended before its phase was reached"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        workers = _children(child.pid)
        if phase == "parse":
            assert workers, "the parse ran in no pool"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_running(w) for w in workers):
            assert time.monotonic() < deadline, f"workers outlived their parent: {sorted(workers)}"
            time.sleep(0.05)
    finally:
        if child.poll() is None:
            child.kill()
    store = knowtk.open_store(root, state_dir=state)
    assert answers(store) == clean
    report = store.check()
    assert report["integrity"] == ["ok"] and not report["unrepaired"]


@pytest.mark.parametrize(
    "statement",
    [
        "DROP TABLE knowl_embeddings_v1",
        "DELETE FROM knowl_embeddings_v1",
        "UPDATE knowl_embeddings_v1 SET vector = x'00' WHERE rowid % 2 = 0",
    ],
)
def test_a_damaged_embedding_cache_is_rebuilt(tmp_path: Path, statement: str) -> None:
    from knowtk.index import semantic

    if semantic.load_embedder() is None:
        pytest.skip("no embedding model")
    state = tmp_path / "state"
    store = knowtk.open_store(DEMO, state_dir=state)
    want = strip(store.call("knowl_query", {"query": "vector index", "limit": 5}))
    assert want["results"]
    damage(state, statement)
    assert strip(store.call("knowl_query", {"query": "vector index", "limit": 5})) == want
    damage(state, statement.replace("DROP TABLE", "DROP TABLE IF EXISTS"))
    fresh = knowtk.open_store(DEMO, state_dir=state)
    assert strip(fresh.call("knowl_query", {"query": "vector index", "limit": 5})) == want
