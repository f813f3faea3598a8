"""Several knowtk processes on one store and one state while another edits Markdown.

Runs ``bench/soak.py`` briefly (its 60-second run is the soak of docs/reliability.md):
reader processes query a copy of the demo store through one shared state_dir while an editor
process rewrites, adds and removes records. Every count must be zero: raw exceptions,
``unavailable`` answers, answers that differ from a single process on a clean state, and
final answers (once edits stop) that differ from a clean rebuild.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import knowtk
from tests.helpers import DEMO, REPO

SOAK = REPO / "bench" / "soak.py"


def soak(*args: str, semantic: bool = False) -> dict:
    env = dict(os.environ)
    if not semantic:
        env["KNOWTK_SEMANTIC"] = "0"  # the embedding model loads once per process: too slow for CI here
    done = subprocess.run(
        [sys.executable, str(SOAK), "--json", *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.stdout, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_clean(result: dict) -> None:
    counts = {k: result[k] for k in ("exceptions", "unavailable", "mismatches", "final_mismatches")}
    assert counts == dict.fromkeys(counts, 0), result["errors"]
    assert result["calls"] > 0 and result["edits"] > 0


def test_three_query_processes_and_an_editor() -> None:
    assert_clean(soak("--seconds", "4", "--readers", "3", "--seed", "7"))


def test_processes_with_threads_and_semantic_search() -> None:
    assert_clean(soak("--seconds", "4", "--readers", "2", "--threads", "2", "--seed", "11", semantic=True))


def _cold_query(root: str, state: str, out: multiprocessing.Queue) -> None:
    try:
        store = knowtk.open_store(root, state_dir=state)
        out.put(
            (
                store.call("knowledge_grep", {"query": "vector index"}),
                store.call("knowledge_timeline", {"entity": "person-ada-okafor", "limit": 50}),
            )
        )
    except Exception as exc:  # the test reports it
        out.put(f"{type(exc).__name__}: {exc}")


def _race(state: Path, n: int = 4) -> list:
    """The answers of ``n`` processes that open ``state`` and query at once (none may fail)."""
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_cold_query, args=(str(DEMO), str(state), out)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(not isinstance(r, str) for r in results), results
    return results


@pytest.mark.parametrize("seed", [1, 2])
def test_processes_racing_to_create_one_state(tmp_path: Path, seed: int) -> None:
    """Four processes open a state that does not exist yet, at once: one state, one journal, equal answers."""
    state = tmp_path / "state"
    results = _race(state)
    strip = {"freshness"}
    answers = {json.dumps([{k: v for k, v in a.items() if k not in strip} for a in r], sort_keys=True) for r in results}
    assert len(answers) == 1
    grep = results[0][0]
    assert grep["index"]["state"] == "ready" and grep["total"] == 5
    store = knowtk.open_store(DEMO, state_dir=state)
    assert store.check()["ok"] is True
    journal = (state / "safeguards.jsonl").read_text().splitlines()
    assert sum('"format": "knowtk-safeguards"' in line for line in journal) == 1


def _open_at_once(root: str, state: str, barrier: Any, out: Any) -> None:
    try:
        barrier.wait(timeout=60)
        knowtk.open_store(root, state_dir=state).close()
        out.put("ok")
    except Exception as exc:  # the test reports it
        out.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_a_new_state_at_the_same_instant(tmp_path: Path) -> None:
    """Processes released together on a state that does not exist: each switches it to WAL, and SQLite
    refuses all but one switch at once ("database is locked", without waiting); each must wait instead."""
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    n = 4
    for round_ in range(16):
        barrier, out = ctx.Barrier(n), ctx.Queue()
        state = str(tmp_path / f"state{round_}")
        procs = [ctx.Process(target=_open_at_once, args=(str(DEMO), state, barrier, out)) for _ in range(n)]
        for p in procs:
            p.start()
        results = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert results == ["ok"] * n, results


def test_processes_opening_a_truncated_state_at_once(tmp_path: Path) -> None:
    """state.sqlite truncated to 0 bytes, four processes open it at once: all restore the one identity."""
    state = tmp_path / "state"
    with knowtk.open_store(DEMO, state_dir=state) as store:
        store.grep("vector index")
        store_id = store.engine.state.store_id
        withdrawn = dict(store.engine.safeguards.withdrawn)
    for suffix in ("-wal", "-shm"):
        Path(f"{state / 'state.sqlite'}{suffix}").unlink(missing_ok=True)
    (state / "state.sqlite").write_bytes(b"")
    _race(state)  # every process answers (asserted inside)
    store = knowtk.open_store(DEMO, state_dir=state)
    assert store.engine.state.store_id == store_id
    assert store.engine.safeguards.withdrawn == withdrawn
    assert store.check()["ok"] is True
