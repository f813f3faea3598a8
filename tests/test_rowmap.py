"""The rowid at each stored position (``FtsProjection.rowmap``): a new process's facet filters find their keyword
rows from it and the stored facet columns, without reading the rows table or matching ids.

A build writes it; any write of the rows table drops it (triggers), so it is never another version's; a record
whose facets changed while its row stayed (a file moved to another folder) is answered from its own facets.
Every answer is checked against a reference store opened on a new state.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from array import array
from pathlib import Path
from typing import Any

import knowtk
from knowtk.index import rowmap
from knowtk.index.fts import FtsProjection
from knowtk.state import STATE_FILE
from tests.test_facets import answer, copy_fixture, filter_forms, query_words
from tests.test_persist import reference

ROWMAP = "keyword_rowmap_v1"
LOG = "keyword_rowmap_log_v1"
TABLES = {"keyword_root": "keyword_rows_v1_root", "keyword_history_root": "keyword_history_rows_v1_root"}


def _sql(state: Path, sql: str, *params: Any) -> list[Any]:
    conn = sqlite3.connect(state / STATE_FILE)
    try:
        with conn:
            return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _build(root: Path, state: Path) -> None:
    """A process that builds the state (its first query) and exits."""
    with knowtk.open_store(root, state_dir=state) as built:
        built.grep("search")


def _main(store: knowtk.Store) -> FtsProjection:
    index = store.engine._keyword
    assert index is not None
    return index.main


def _same_answers(tested: knowtk.Store, root: Path, ref_state: Path) -> int:
    """Every filter form and lifecycle of ``tested`` answers as a reference store does; how many forms."""
    ref = reference(root, ref_state, tested)
    try:
        snap = ref.snapshot()
        forms, word = filter_forms(snap), query_words(snap)[0]
        for form in forms:
            for lifecycle in ("active", "superseded", "all"):
                got = answer(tested, word, lifecycle=lifecycle, **form)
                assert got == answer(ref, word, lifecycle=lifecycle, **form), (form, lifecycle)
        return len(forms)
    finally:
        ref.close()


def test_a_build_writes_the_rowid_of_each_stored_id(tmp_path: Path) -> None:
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    with knowtk.open_store(root, state_dir=state) as built:
        built.grep("search")
    image = json.loads(_sql(state, "SELECT data FROM snapshot_image_v1 WHERE part = 'meta'")[0][0])
    stored = json.loads(_sql(state, "SELECT data FROM snapshot_image_v1 WHERE part = 'record_ids'")[0][0])
    found = _sql(state, f"SELECT projection, base, top, rowids FROM {ROWMAP}")
    maps = {p: (base, blob) for p, base, _, blob in found}
    tops = {p: top for p, _, top, _ in found}
    assert not _sql(state, f"SELECT * FROM {LOG}")
    assert set(maps) == {"keyword_root", "keyword_history_root"}
    for projection, (base, blob) in maps.items():
        assert base == image["parts"]["record_ids"]
        packed = array("i")
        packed.frombytes(blob)
        rowids, tokens = packed[: len(stored)], packed[len(stored) :]  # (a rowid, then a token count, per stored id)
        table = TABLES[projection]
        rowid_of = {rid: (rowid, size) for rowid, rid, size in _sql(state, f"SELECT rowid, id, tokens FROM {table}")}
        assert rowid_of, projection
        assert list(rowids) == [rowid_of.get(rid, (0, 0))[0] for rid in stored], projection
        assert list(tokens) == [rowid_of.get(rid, (0, 0))[1] for rid in stored], projection
        assert tops[projection] == max(rowid for rowid, _ in rowid_of.values())


def test_a_new_process_filters_from_the_rowmap_as_from_the_rows(tmp_path: Path) -> None:
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert fresh.grep("search", kind="claim", scope="claims").to_dict()["total"] > 0
        main = _main(fresh)
        assert main.rowmaps.last is not None and main.rowmaps.last[2] is not None  # (the rowmap answered)
        assert not main.stored_rows.whole  # the rows table was not read whole
        _token_array_is_the_table_s(fresh, state)
        assert _same_answers(fresh, root, tmp_path / "ref") > 10


def test_a_moved_file_keeps_its_row_and_filters_see_its_new_folder(tmp_path: Path) -> None:
    """A file moved to another folder keeps its row (same id, same content) and so the rowmap: its stored
    position says the old folder, its own facets the new one."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    moved = sorted((root / "claims").glob("*.md"))[0]
    (root / "elsewhere").mkdir()
    moved.rename(root / "elsewhere" / moved.name)
    with knowtk.open_store(root, state_dir=state) as fresh:
        found = fresh.grep("mateus", mode="any", scope="elsewhere", lifecycle="all").to_dict()
        assert [h["id"] for h in found["hits"]] == [moved.stem]  # (its title names Mateus)
        left = fresh.grep("mateus", mode="any", scope="claims", lifecycle="all", limit=50).to_dict()
        assert moved.stem not in {h["id"] for h in left["hits"]} and left["total"] <= 50
        assert len(_sql(state, f"SELECT * FROM {ROWMAP}")) == 2  # (no row was written: the rowmap stands)
        main = _main(fresh)
        assert main.rowmaps.last is not None and main.rowmaps.last[2] is not None  # (the rowmap answered)
        assert not main.stored_rows.whole
        kept = fresh.engine.snapshot()._positions.values()
        assert any(found is not None and moved.stem in found.apart for found in kept)  # (its own facets answered)
        assert _same_answers(fresh, root, tmp_path / "ref") > 10


def _token_array_is_the_table_s(store: knowtk.Store, state: Path) -> None:
    """``token_array`` made from the rowmap (and what changed since) is the rows table's tokens by rowid."""
    table = dict(_sql(state, "SELECT rowid, tokens FROM keyword_rows_v1_root"))
    made = _main(store).arrays._token_array_by_rowmap()
    assert made is not None
    assert len(made) == max(table) + 1
    assert {i: v for i, v in enumerate(made.tolist()) if v != -1.0} == {r: float(t) for r, t in table.items()}


def _logged(state: Path, projection: str = "keyword_root") -> set[int]:
    return {r for (r,) in _sql(state, f"SELECT rowid FROM {LOG} WHERE projection = ?", projection)}


def test_rows_written_since_the_build_are_logged_and_answered_by_id(tmp_path: Path) -> None:
    """An edit rewrites its record's rows: the rowids it deleted are logged, its new rows lie past the build's
    top rowid; a new process's filters take the rowmap but at those rows, answered from their ids' facets."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    assert not _logged(state)
    claims = sorted((root / "claims").glob("*.md"))
    before = dict(_sql(state, "SELECT id, rowid FROM keyword_rows_v1_root"))
    claims[1].write_text(claims[1].read_text(encoding="utf-8") + "\nzebra quagga\n", encoding="utf-8")
    with knowtk.open_store(root, state_dir=state) as store:
        assert store.grep("quagga").to_dict()["total"] == 1  # (this process wrote the edited record's rows)
    assert before[claims[1].stem] in _logged(state)
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _same_answers(fresh, root, tmp_path / "ref1") > 10
        main = _main(fresh)
        assert main.rowmaps.last is not None and main.rowmaps.last[2] is not None and main.rowmaps.last[2].newer
        assert not main.stored_rows.whole  # (the rowmap and the rows written since answered)
        _token_array_is_the_table_s(fresh, state)

    # a copy duplicates an id (both drop out: rows deleted without their file changing), a file is removed
    shutil.copy(claims[2], root / "notes" / f"copy-{claims[2].name}")
    claims[3].unlink()
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _same_answers(fresh, root, tmp_path / "ref2") > 10
        assert not _main(fresh).stored_rows.whole
        _token_array_is_the_table_s(fresh, state)
    assert {before[claims[2].stem], before[claims[3].stem]} <= _logged(state)

    # a hand write of the rows (an older knowtk, a repair by hand) is logged too
    rowid = before[claims[4].stem]
    _sql(state, "UPDATE keyword_rows_v1_root SET tokens = tokens WHERE rowid = ?", rowid)
    assert rowid in _logged(state)
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _same_answers(fresh, root, tmp_path / "ref3") > 10


def test_too_many_rows_written_since_the_build_read_the_rows_by_id(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(rowmap, "ROWMAP_CHANGES_MAX", 1)
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    for path in sorted((root / "claims").glob("*.md"))[:3]:
        path.write_text(path.read_text(encoding="utf-8") + "\nzebra\n", encoding="utf-8")
    with knowtk.open_store(root, state_dir=state) as store:
        assert store.grep("zebra").to_dict()["total"] == 3
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _same_answers(fresh, root, tmp_path / "ref") > 10
        main = _main(fresh)
        assert main.rowmaps.last is not None and main.rowmaps.last[2] is None and main.stored_rows.whole


def test_a_state_without_the_rowmap_triggers_forgets_its_rowmap(tmp_path: Path) -> None:
    """A state whose triggers are missing (written before them, or dropped): its rowmap is not taken on trust."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    for op in ("insert", "delete", "update"):
        _sql(state, f"DROP TRIGGER keyword_fts_v1_root_rowmap_{op}")
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _same_answers(fresh, root, tmp_path / "ref") > 10
        assert _main(fresh).stored_rows.whole  # (found by id)
    names = {n for (n,) in _sql(state, "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert {f"keyword_fts_v1_root_rowmap_{op}" for op in ("insert", "delete", "update")} <= names
    assert {p for (p,) in _sql(state, f"SELECT projection FROM {ROWMAP}")} == {"keyword_history_root"}
    assert not _logged(state)


def test_a_rowmap_of_other_ids_or_damaged_is_not_used(tmp_path: Path) -> None:
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    (blob,) = _sql(state, f"SELECT rowids FROM {ROWMAP} WHERE projection = 'keyword_root'")[0]
    huge = (2**31 - 1).to_bytes(4, "little") + blob[4:]  # (a rowid past every row's: no array that large is made)
    for label, sql, params in [
        ("other ids", f"UPDATE {ROWMAP} SET base = 'other' WHERE projection = 'keyword_root'", ()),
        ("short", f"UPDATE {ROWMAP} SET rowids = ? WHERE projection = 'keyword_root'", (blob[:-4],)),
        ("no tokens", f"UPDATE {ROWMAP} SET rowids = ? WHERE projection = 'keyword_root'", (blob[: len(blob) // 2],)),
        ("text", f"UPDATE {ROWMAP} SET rowids = 'x' WHERE projection = 'keyword_root'", ()),
        ("huge rowid", f"UPDATE {ROWMAP} SET rowids = ? WHERE projection = 'keyword_root'", (huge,)),
        ("huge top", f"UPDATE {ROWMAP} SET top = 2000000000 WHERE projection = 'keyword_root'", ()),
        ("text log", f"INSERT INTO {LOG} (projection, rowid) VALUES ('keyword_root', 'x')", ()),
    ]:
        copy = tmp_path / f"state-{label}"
        copy.mkdir()
        (copy / STATE_FILE).write_bytes((state / STATE_FILE).read_bytes())
        _sql(copy, sql, *params)
        with knowtk.open_store(root, state_dir=copy) as fresh:
            assert _same_answers(fresh, root, tmp_path / f"ref-{label}") > 10, label
            main = _main(fresh)
            assert main.rowmaps.last is not None, label
            if label != "huge rowid":  # (a rowid past the top is refused where the rowids are used, not read)
                assert main.rowmaps.last[2] is None, label  # (read, not taken)
            assert main.stored_rows.whole, label


def test_a_new_process_sums_and_reads_some_rows_without_the_whole_table(tmp_path: Path) -> None:
    """``tokens_in`` of rows summed by SQLite and ``prefetch`` of a page's rows, as the table has them."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    table = {
        rowid: (rid, size) for rowid, rid, size in _sql(state, "SELECT rowid, id, tokens FROM keyword_rows_v1_root")
    }
    every = sorted(table)
    with knowtk.open_store(root, state_dir=state) as fresh:
        fresh.grep("search")
        main = _main(fresh)
        for rows in [set(every[::3]), set(every[5:40]), {every[0]}, set(every)]:
            assert main.tokens_in(rows) == sum(table[r][1] for r in rows)
        assert main.tokens_in({every[-1] + 1000, every[0]}) == table[every[0]][1] - 1  # (no such row: -1)
        page = [*every[1::4], every[-1] + 7]
        main.prefetch(page)
        reads = main.stored_rows.reads
        assert [main.id_of.get(r) for r in page] == [table[r][0] if r in table else None for r in page]
        assert [main.tokens.get(r) for r in page] == [table[r][1] if r in table else None for r in page]
        assert main.stored_rows.reads == reads and not main.stored_rows.whole  # (answered from what was read)
