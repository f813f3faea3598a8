"""The keyword mirror read by need: an open store reads the rows it shows, never rows of another version.

A new process reads a projection's rows a key at a time (``knowtk.index.stored_rows.StoredRows``) and trusts the image
mark without reading them (triggers clear the mark on any other write). These tests change the rows under
an open store (another process, a hand edit) and compare its answers with a fresh build of the files
(``tests/test_persist.py``'s ``assert_same``).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

import knowtk
from knowtk.index.fts_tables import ProjectionChanged
from knowtk.state import STATE_FILE
from tests.helpers import REPO
from tests.test_persist import Clock, assert_same, clock, how_adopted

__all__ = ["clock"]  # the fixture, used by name

# another process: it deletes one record, adds another and queries (its reconcile writes the rows)
OTHER_PROCESS = """
import sys
from pathlib import Path
import knowtk
root, state, gone, word = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
(root / f"{gone}.md").unlink()
(root / "new.md").write_text(f"---\\nid: new\\nkind: page\\ntitle: New page\\n---\\n{word} alpha\\n", encoding="utf-8")
with knowtk.open_store(root, state_dir=state) as store:
    assert [h["id"] for h in store.grep(word).to_dict()["hits"]] == ["new"]
"""


def _write(root: Path, n: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        fields = {"id": f"r{i}", "kind": "page", "title": f"Page {i}"}
        text = f"---\n{yaml.safe_dump(fields).rstrip()}\n---\nalpha word{i}\n"
        (root / f"r{i}.md").write_text(text, encoding="utf-8")


def _rows(state_dir: Path) -> dict[int, str]:
    conn = sqlite3.connect(state_dir / STATE_FILE)
    try:
        return dict(conn.execute("SELECT rowid, id FROM keyword_rows_v1_root"))
    finally:
        conn.close()


def _hits(store: knowtk.Store, query: str) -> list[str]:
    return [h["id"] for h in store.grep(query).to_dict()["hits"]]


def test_a_rowid_another_process_gave_to_another_record_is_read_again(tmp_path: Path, clock: Clock) -> None:
    """An open store read record X at the last rowid; another process withdraws X and indexes Y, which takes
    the same rowid. The open store must answer Y there, never X (a row kept from before the write)."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _write(root, 8)
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    rows = _rows(state_dir)
    last = max(rows)
    gone = rows[last]
    store = knowtk.open_store(root, state_dir=state_dir)
    assert _hits(store, f"word{gone[1:]}") == [gone]  # the open store has read X's row
    assert how_adopted(store) == "image"
    _other_process(root, state_dir, gone, "zebra")
    assert _rows(state_dir)[last] == "new"  # the rowid X had is Y's now
    try:
        assert _hits(store, "zebra") == ["new"]
        assert _hits(store, f"word{gone[1:]}") == []
        assert_same([store], root, tmp_path / "ref", 1, "rowid reused by another process")
    finally:
        store.close()


def test_a_record_deleted_by_hand_from_every_keyword_table_is_indexed_again(tmp_path: Path, clock: Clock) -> None:
    """The tables stay consistent with each other, only the record is gone: the mark still names the image,
    but the write cleared it (the triggers), so a new process compares the rows instead of trusting them."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _write(root, 6)
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    conn = sqlite3.connect(state_dir / STATE_FILE, isolation_level=None)
    conn.create_function("knowtk_inflate", 1, lambda blob: knowtk.state.inflate(blob) if blob is not None else None)
    conn.execute("PRAGMA trusted_schema = ON")
    rowid = conn.execute("SELECT rowid FROM keyword_rows_v1_root WHERE id = 'r3'").fetchone()[0]
    conn.execute("BEGIN IMMEDIATE")
    for table in ("keyword_fts_v1_root", "keyword_fts_v1_root_text", "keyword_rows_v1_root"):
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
    conn.execute("COMMIT")
    assert conn.execute("SELECT value FROM knowtk_meta WHERE key = 'keyword_root:image'").fetchone() is None
    conn.close()
    store = knowtk.open_store(root, state_dir=state_dir)
    try:
        assert _hits(store, "word3") == ["r3"]
        assert_same([store], root, tmp_path / "ref", 1, "a record deleted by hand")
    finally:
        store.close()


def test_threads_on_a_new_store_get_the_single_caller_answers(tmp_path: Path, clock: Clock) -> None:
    """Threads share one newly opened store (its mirror not read yet): each gets the answer one caller gets."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _write(root, 40)
    queries = [f"word{i}" for i in range(0, 40, 3)] + ["alpha", "page"]
    with knowtk.open_store(root, state_dir=state_dir) as first:
        expected = {q: first.grep(q).to_dict()["hits"] for q in queries}
    store = knowtk.open_store(root, state_dir=state_dir)
    got: dict[str, list[Any]] = {}
    errors: list[BaseException] = []

    def ask(q: str) -> None:
        try:
            got[q] = store.grep(q).to_dict()["hits"]
        except BaseException as exc:  # the main thread reports it
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(q,)) for q in queries]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    store.close()
    assert not errors, errors
    assert got == expected


def _other_process(root: Path, state_dir: Path, gone: str, word: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(root), str(state_dir), gone, word],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_rows_read_before_another_process_wrote_are_never_served_after(tmp_path: Path, clock: Clock) -> None:
    """The mirror's rows, read one at a time, belong to the version they were read at: once another process
    wrote, a row is read again after the projection is loaded again, and a row read before that is refused
    (the query runs again) rather than mixed with rows of the earlier version."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _write(root, 8)
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    rows = _rows(state_dir)
    last, other = max(rows), min(rows)
    gone = rows[last]
    store = knowtk.open_store(root, state_dir=state_dir)
    try:
        assert _hits(store, f"word{gone[1:]}") == [gone]
        main = store.engine._keyword.main  # type: ignore[union-attr]
        assert main.id_of[last] == gone  # read (and kept) at this version of the rows
        _other_process(root, state_dir, gone, "zebra")
        with pytest.raises(ProjectionChanged):  # not loaded again yet: no row of the new version is mixed in
            main.id_of.get(other)

        def read() -> str:
            main.ensure()
            return main.id_of[last]

        assert store.engine.run(read) == "new"  # the kept row was dropped with its version
    finally:
        store.close()


def test_rowids_of_many_ids_read_in_one_query_are_the_table_s(tmp_path: Path, clock: Clock) -> None:
    """``rowids_of`` (superseded wording's current records) reads the rows of the ids it is given, not the
    table: the same rowids as the table holds, none for an id it does not hold, and nothing read whole."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _write(root, 40)
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    table = {rid: rowid for rowid, rid in _rows(state_dir).items()}
    with knowtk.open_store(root, state_dir=state_dir) as store:
        store.grep("alpha")
        main = store.engine._keyword.main  # type: ignore[union-attr]
        asked = ["r3", "r17", "nowhere", "r3", "r39", ""]
        assert main.rowids_of(asked) == {rid: table[rid] for rid in asked if rid in table}
        assert main.rowids_of(["r5"]) == {"r5": table["r5"]}
        assert not main.stored_rows.whole  # (read row by row: the table was not read whole)
        assert main.rowids_of([]) == {}


def _drop_rowmaps(state_dir: Path) -> None:
    conn = sqlite3.connect(state_dir / STATE_FILE)
    try:
        with conn:
            assert conn.execute("DELETE FROM keyword_rowmap_v1").rowcount >= 1  # (the build wrote one)
    finally:
        conn.close()


def _table(state_dir: Path) -> tuple[dict[str, str], dict[int, str], dict[int, int]]:
    """The rows table as it is: id -> sha256, rowid -> id, rowid -> tokens."""
    conn = sqlite3.connect(state_dir / STATE_FILE)
    try:
        rows = conn.execute("SELECT rowid, id, sha256, tokens FROM keyword_rows_v1_root").fetchall()
    finally:
        conn.close()
    return {r[1]: r[2] for r in rows}, {r[0]: r[1] for r in rows}, {r[0]: r[3] for r in rows}


def test_hashes_read_apart_from_the_rest_of_the_rows_stay_the_table_s_across_writes(
    tmp_path: Path, clock: Clock
) -> None:
    """A filter reads ids, rowids and token counts of every row without their hashes; the hashes read one at a
    time before this process writes rows are patched with the write (or dropped), never served stale."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _write(root, 40)
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    _drop_rowmaps(state_dir)  # (as after another process's edit: a filter then reads the rows table)
    with knowtk.open_store(root, state_dir=state_dir) as store:
        assert store.grep("alpha", kind="page").to_dict()["total"] == 40
        main = store.engine._keyword.main  # type: ignore[union-attr]
        rows = main.stored_rows
        assert rows.whole and not rows.shas_whole  # (the filter read the table whole, the hashes apart)
        shas, id_of, tokens = _table(state_dir)
        assert main.shas["r3"] == shas["r3"] and main.shas["r4"] == shas["r4"] and "gone" not in main.shas
        path = root / "r3.md"
        path.write_text(path.read_text(encoding="utf-8") + "zebra\n", encoding="utf-8")
        assert _hits(store, "zebra") == ["r3"]  # this process wrote r3's rows again
        assert rows.whole and not rows.shas_whole  # patched, not dropped
        shas, id_of, tokens = _table(state_dir)
        assert main.shas["r3"] == shas["r3"] and main.shas["r4"] == shas["r4"]
        assert dict(main.id_of.items()) == id_of and dict(main.tokens.items()) == tokens
        assert dict(main.shas.items()) == shas and rows.shas_whole


class _Refused:
    """An aggregate that fails, registered over SQLite's own ``json_group_array`` (an application's function
    of the same name and arity is used instead of the built-in): the rows table read whole must fall back."""

    steps = 0

    def step(self, value: Any) -> None:
        _Refused.steps += 1
        raise ValueError("refused")

    def finalize(self) -> None:
        return None


@pytest.mark.parametrize("aggregate", ["sqlite", "refused"])
def test_the_rows_table_read_whole_is_the_table_s(tmp_path: Path, clock: Clock, aggregate: str) -> None:
    """Read whole (a filter, a phrase's counts), the rows come as one JSON array per column; where SQLite cannot
    make them (a value JSON cannot hold), row by row. Either way: every row's id, rowid and tokens, exactly."""
    _Refused.steps = 0
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _write(root, 30)
    (root / "odd.md").write_text(
        "---\nid: Odd:id.v-1_X\nkind: page\ntitle: Odd ✓\n---\nalpha\n", encoding="utf-8"
    )  # (every character an id may hold: STORE.md)
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    _, id_of, tokens = _table(state_dir)
    assert "Odd:id.v-1_X" in id_of.values()
    with knowtk.open_store(root, state_dir=state_dir) as store:
        store.grep("alpha")
        main = store.engine._keyword.main  # type: ignore[union-attr]
        if aggregate == "refused":
            main.conn.create_aggregate("json_group_array", 1, _Refused)
        assert not main.stored_rows.whole
        assert dict(main.id_of.items()) == id_of  # (iterated: read whole)
        assert main.stored_rows.whole
        assert dict(main.tokens.items()) == tokens
        assert dict(main.ids.items()) == {rid: rowid for rowid, rid in id_of.items()}
        assert (_Refused.steps > 0) == (aggregate == "refused")  # (the fallback was taken where it was refused)
