"""The state at rest: a WAL grown by a call (a cold build, an image) is checkpointed and cut to nothing."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from knowtk import state
from tests.helpers import StoreBuilder


def wal_size(path: str) -> int:
    try:
        return os.stat(path + "-wal").st_size
    except FileNotFoundError:
        return 0


def build(builder: StoreBuilder, n: int = 40) -> None:
    for i in range(n):
        builder.page(f"n{i:02d}", f"Note {i}", "words about the cold build " * 20)


def test_a_cold_build_leaves_no_wal_behind_while_the_store_stays_open(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "WAL_TRIM_BYTES", 0)  # the small store's build stands for a large one
    build(builder)
    store = builder.open(state_dir=tmp_path / "state")
    assert store.call("knowledge_grep", {"query": "cold"})["total"] == 40
    path = store.state_path
    assert os.path.getsize(path) > 0 and wal_size(path) == 0  # everything is in state.sqlite itself
    builder.page("n99", "Another", "a fresh word: zebra")
    assert [h["id"] for h in store.call("knowledge_grep", {"query": "zebra"})["hits"]] == ["n99"]
    assert wal_size(path) == 0
    other = builder.open(state_dir=tmp_path / "state")  # a second process's view of the same state
    assert other.call("knowledge_grep", {"query": "zebra"})["total"] == 1


def test_a_reader_of_another_connection_is_never_waited_for(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "WAL_TRIM_BYTES", 0)
    build(builder)
    store = builder.open(state_dir=tmp_path / "state")
    store.call("knowledge_grep", {"query": "cold"})
    reader = sqlite3.connect(store.state_path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # holds a read snapshot of the WAL
    builder.page("n00", "Changed", "a changed body with kiwi")
    start = time.monotonic()
    assert store.call("knowledge_grep", {"query": "kiwi"})["total"] == 1
    assert time.monotonic() - start < 5  # the busy checkpoint was skipped, not waited for (busy_timeout 120 s)
    assert wal_size(store.state_path) > 0  # left for a later call
    reader.execute("COMMIT")
    reader.close()
    builder.page("n01", "Changed too", "another body with lime")
    assert store.call("knowledge_grep", {"query": "lime"})["total"] == 1
    assert wal_size(store.state_path) == 0


def test_a_wal_under_the_threshold_is_kept(builder: StoreBuilder, tmp_path: Path) -> None:
    build(builder, 5)
    store = builder.open(state_dir=tmp_path / "state")
    store.call("knowledge_grep", {"query": "cold"})
    assert 0 < wal_size(store.state_path) <= state.WAL_TRIM_BYTES  # a small WAL is reused, not cut every call
