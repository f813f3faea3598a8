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
import zlib
from array import array
from pathlib import Path
from typing import Any

import knowtk
from knowtk.index import bm25, rowmap
from knowtk.index.filtered import AllowedRows, allowed_rows, allowed_view, rows_passing
from knowtk.index.fts import FtsProjection
from knowtk.query.common import RecordFilter
from knowtk.state import STATE_FILE
from tests.test_facets import answer, copy_fixture, edit, filter_forms, query_words
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
        n = len(stored)
        # a rowid, then a token count, per stored id; a held byte per stored id; the stored position of each rowid
        # written; how many stored ids; a CRC-32 of all that
        assert zlib.crc32(blob[:-4]) == int.from_bytes(blob[-4:], "little")
        assert int.from_bytes(blob[-8:-4], "little") == n
        packed, positions = array("i"), array("i")
        packed.frombytes(blob[: 8 * n])
        positions.frombytes(blob[9 * n : -8])
        rowids, tokens, held = packed[:n], packed[n:], blob[8 * n : 9 * n]
        table = TABLES[projection]
        rowid_of = {rid: (rowid, size) for rowid, rid, size in _sql(state, f"SELECT rowid, id, tokens FROM {table}")}
        assert rowid_of, projection
        assert list(rowids) == [rowid_of.get(rid, (0, 0))[0] for rid in stored], projection
        assert list(tokens) == [rowid_of.get(rid, (0, 0))[1] for rid in stored], projection
        assert list(held) == [int(rid in rowid_of) for rid in stored], projection
        first, top = min(r for r, _ in rowid_of.values()), tops[projection]
        assert top == max(rowid for rowid, _ in rowid_of.values())
        assert len(positions) == top - first + 1
        assert {first + i: at for i, at in enumerate(positions) if at >= 0} == {
            rowid_of[rid][0]: at for at, rid in enumerate(stored) if rid in rowid_of
        }, projection


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
    moved = blob[:-8] + bytes([blob[-8] ^ 1]) + blob[-7:]  # (a row's position changed: its checksum differs)
    for label, sql, params in [
        ("other ids", f"UPDATE {ROWMAP} SET base = 'other' WHERE projection = 'keyword_root'", ()),
        ("short", f"UPDATE {ROWMAP} SET rowids = ? WHERE projection = 'keyword_root'", (blob[:-4],)),
        ("no tokens", f"UPDATE {ROWMAP} SET rowids = ? WHERE projection = 'keyword_root'", (blob[: len(blob) // 2],)),
        ("text", f"UPDATE {ROWMAP} SET rowids = 'x' WHERE projection = 'keyword_root'", ()),
        ("huge rowid", f"UPDATE {ROWMAP} SET rowids = ? WHERE projection = 'keyword_root'", (huge,)),
        ("moved position", f"UPDATE {ROWMAP} SET rowids = ? WHERE projection = 'keyword_root'", (moved,)),
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


def _views_equal_sets(store: knowtk.Store) -> int:
    """For every filter form, each projection's ``allowed_view`` answers by position (an ``AllowedRows``, no set
    made) how many rows, their tokens and which rows, as the set ``rows_passing`` makes; how many forms."""
    snap = store.engine.snapshot()
    index = store.engine.keyword(snap)
    forms = filter_forms(snap)
    for proj in (index.main, index.history):
        table = {rowid: proj.tokens[rowid] for rowid in proj.ids.values()}
        probes = [*table, 0, -1, max(table, default=0) + 1, max(table, default=0) + 1000]
        filters = {
            RecordFilter.from_args(snap, {k: v if k == "scope" else tuple(v) for k, v in form.items()}): form
            for form in forms
        }
        for flt, form in filters.items():  # (a type and its alias make one filter)
            view = allowed_view(proj, snap, flt)
            if flt.is_trivial and not flt.scope:
                assert view is None
                continue
            assert isinstance(view, AllowedRows), form
            expected = rows_passing(proj, snap, flt)  # (made here, not kept: the view made none)
            assert ("allowed", flt) not in proj.memo(snap.generation), form
            assert len(view) == len(expected), (proj.key, form)
            assert view.tokens == sum(table[r] for r in expected), (proj.key, form)
            assert [r in view for r in probes] == [r in expected for r in probes], (proj.key, form)
            assert view.holding(probes) == [r in expected for r in probes], (proj.key, form)
            assert view.rows() == expected == allowed_rows(proj, snap, flt)
            assert proj.tokens_in(view.rows()) == view.tokens  # (the set took the view's sum)
    return len(forms)


def test_a_filter_tests_rows_by_position_as_its_set_holds_them(tmp_path: Path) -> None:
    """``AllowedRows`` from the rowmap's positions: after the build, after rows written since (logged, past the
    top) and records whose facets changed while their rows stayed, each answer equals the set's."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _views_equal_sets(fresh) > 10
    claims = sorted((root / "claims").glob("*.md"))
    claims[1].write_text(claims[1].read_text(encoding="utf-8") + "\nzebra quagga\n", encoding="utf-8")
    with knowtk.open_store(root, state_dir=state) as store:
        assert store.grep("quagga").to_dict()["total"] == 1  # (rows written since the build: logged)
    edit(root, 1)  # (types, tags and folders changed; a copy, a removal)
    with knowtk.open_store(root, state_dir=state) as fresh:
        rowmap_now = fresh.engine.keyword(fresh.engine.snapshot()).main.rowmap
        assert _views_equal_sets(fresh) > 10
        main = _main(fresh)
        assert main.rowmaps.last is not None and main.rowmaps.last[2] is not None and main.rowmaps.last[2].changed
        assert rowmap_now is not None


def test_a_rare_word_beside_a_common_one_answers_as_a_reference_does(tmp_path: Path, monkeypatch: Any) -> None:
    """A rare word and a common one (``KEEP_FROM_ROWS`` lowered so that the demo has both), in modes all and any,
    under every filter form and lifecycle: tested by position, the matches first in mode all, the set made where
    the common word needs it; every answer a reference store's."""
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 4)
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    with knowtk.open_store(root, state_dir=state) as fresh:
        fresh.grep("zzzz")  # (no row holds it: no filter's rows are found, the keyword rows are loaded)
        snap = fresh.engine.snapshot()
        main = _main(fresh)
        words = {w for r in snap.records.values() for w in (r.title or "").lower().split() if w.isalpha()}
        rare = sorted(w for w in words if 0 < main.hit_count((w,)) < 4)[:2]
        common = sorted(words, key=lambda w: -main.hit_count((w,)))[0]
        assert rare and main.hit_count((common,)) >= 4
        ref = reference(root, tmp_path / "ref", fresh)
        try:
            for form in filter_forms(snap):
                for lifecycle in ("active", "all"):
                    for query, mode in [(f"{w} {common}", m) for w in rare for m in ("all", "any")]:
                        got = answer(fresh, query, mode=mode, lifecycle=lifecycle, **form)
                        want = answer(ref, query, mode=mode, lifecycle=lifecycle, **form)
                        assert got == want, (form, lifecycle, query, mode)
        finally:
            ref.close()


def test_a_rare_word_s_filter_ranks_without_the_set_of_allowed_rows(tmp_path: Path) -> None:
    """A word few rows hold, under each filter form and lifecycle: a new process ranks it testing each row by
    position (no set of the allowed rows is made) and answers as a reference store does."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    with knowtk.open_store(root, state_dir=state) as fresh:
        snap = fresh.engine.snapshot()
        words = {w for r in snap.records.values() for w in (r.title or "").lower().split() if w.isalpha()}
        rare = sorted(w for w in words if 1 < fresh.grep(w, lifecycle="all").to_dict()["total"] < 6)[:3]
        assert rare
        ref = reference(root, tmp_path / "ref", fresh)
        try:
            for form in filter_forms(snap):
                for lifecycle in ("active", "superseded", "all"):
                    for word in rare:
                        got = answer(fresh, word, lifecycle=lifecycle, **form)
                        assert got == answer(ref, word, lifecycle=lifecycle, **form), (form, lifecycle, word)
        finally:
            ref.close()
        index = fresh.engine.keyword(fresh.engine.snapshot())
        for proj in (index.main, index.history):
            kept = proj.memo(fresh.engine.snapshot().generation)
            assert any(key[0] == "allowed_view" for key in kept if isinstance(key, tuple))
            assert not any(key[0] == "allowed" for key in kept if isinstance(key, tuple)), proj.key


def test_a_rowmap_written_without_positions_is_still_used(tmp_path: Path) -> None:
    """A rowmap as an older build wrote it (rowids and tokens alone): filters take their set from it."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    n = len(json.loads(_sql(state, "SELECT data FROM snapshot_image_v1 WHERE part = 'record_ids'")[0][0]))
    for projection, blob in _sql(state, f"SELECT projection, rowids FROM {ROWMAP}"):
        _sql(state, f"UPDATE {ROWMAP} SET rowids = ? WHERE projection = ?", blob[: 8 * n], projection)
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _same_answers(fresh, root, tmp_path / "ref") > 10
        main = _main(fresh)
        assert main.rowmaps.last is not None and main.rowmaps.last[2] is not None
        assert main.rowmaps.last[2].positions is None and not main.stored_rows.whole


def test_fewer_than_reads_at_most_the_rows_it_needs_and_answers_as_the_count(tmp_path: Path) -> None:
    """``fewer_than`` (whether few rows hold a phrase, the choice of ``few_rows``) answers as the whole count does,
    before and after that count is kept."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    with knowtk.open_store(root, state_dir=state) as fresh:
        fresh.grep("search")
        main = _main(fresh)
        phrases = [("the",), ("search",), ("mateus",), ("zzzz",), ("vector", "index")]
        asked = [(phrase, limit) for phrase in phrases for limit in (1, 2, 5, 30, 1000)]
        before = [main.fewer_than(phrase, limit) for phrase, limit in asked]
        counts = {phrase: main.hit_count(phrase) for phrase in phrases}
        assert before == [counts[phrase] < limit for phrase, limit in asked]
        assert [main.fewer_than(phrase, limit) for phrase, limit in asked] == before
        assert {counts[("the",)] >= 30, counts[("zzzz",)] == 0} == {True}  # (both sides are asked)


def test_a_filtered_answer_with_no_hit_reads_no_table_of_unavailable_records(tmp_path: Path) -> None:
    """The records ``why`` judges are keyword rows, so available: a new process on the stored image says which
    filter left a word out without parsing the snapshot's table of unavailable records."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    with knowtk.open_store(root, state_dir=tmp_path / "other") as other:  # (the word chosen on another state)
        records = other.snapshot().records.values()
        elsewhere = " ".join((root / r.path).read_text(encoding="utf-8").lower() for r in records if r.kind != "claim")
        titles = [w for r in records if r.kind == "claim" for w in (r.title or "").lower().split()]
        word = next(w for w in titles if w.isalpha() and len(w) > 3 and w not in elsewhere)
    with knowtk.open_store(root, state_dir=state) as fresh:
        args = {"query": word, "kind": ["page", "relationship"], "lifecycle": "all"}
        assert "left out by the kind filter" in fresh.call("knowledge_grep", args).get("why", "")
        snap = fresh.engine._snapshot
        assert type(snap).__name__ == "StoredSnapshot" and "unavailable" not in vars(snap)
