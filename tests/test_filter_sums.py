"""The build's sums per facet value (``knowtk.index.filter_sums``): a filter of one facet takes its rows' tokens and
rowid runs from them, and makes no set of its rows where no row changed since the build.

Each sum is checked against the rows table and the records' facets; each filter's answer against its set, and a
query's against a reference store opened on a new state.
"""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path
from typing import Any

import knowtk
from knowtk.index import bm25
from knowtk.index.among import merged_runs, runs_among, runs_of
from knowtk.index.filter_sums import SUMS_TABLE
from knowtk.index.filtered import AllowedRows, allowed_view, rows_passing
from knowtk.index.fts import FtsProjection
from knowtk.query.common import RecordFilter
from knowtk.snapshot.facets import facet_of
from knowtk.state import STATE_FILE
from tests.test_facets import copy_fixture, edit, filter_forms
from tests.test_rowmap import ROWMAP, TABLES, _build, _same_answers, _sql

COLUMNS = ("folder", "kind", "type", "tags")


def _rows_of(proj: FtsProjection, among: Any) -> set[int]:
    """The rows a statement kept to ``among`` reads."""
    sql = f"SELECT rowid FROM {proj.tables.rows} WHERE {among.clause}"
    return {r for (r,) in proj.tables.conn.execute(sql, among.params)}


def test_a_build_sums_the_rows_of_each_facet_value(tmp_path: Path) -> None:
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    image = json.loads(_sql(state, "SELECT data FROM snapshot_image_v1 WHERE part = 'meta'")[0][0])
    blobs = dict(_sql(state, f"SELECT projection, rowids FROM {ROWMAP}"))
    found = _sql(state, f"SELECT projection, base, facets, rowmap, sums, checksum FROM {SUMS_TABLE}")
    assert {row[0] for row in found} == set(TABLES)
    with knowtk.open_store(root, state_dir=tmp_path / "ref") as ref:
        records = ref.snapshot().records
    facets = {rid: facet_of(r) for rid, r in records.items()}
    for projection, base, digest, checksum, text, check in found:
        assert (base, digest) == (image["parts"]["record_ids"], image["parts"]["record_facets"])
        assert checksum == int.from_bytes(blobs[projection][-4:], "little")  # (the rowmap it was summed with)
        assert check == zlib.crc32(text.encode())
        sums = json.loads(text)
        rows = {
            rid: (rowid, size)
            for rowid, rid, size in _sql(state, f"SELECT rowid, id, tokens FROM {TABLES[projection]}")
        }
        assert rows, projection
        for at, name in enumerate(COLUMNS):
            holders: dict[str, set[str]] = {}
            for rid, f in facets.items():
                for value in f.tags if name == "tags" else (f[at],):
                    holders.setdefault(value, set()).add(rid)
            assert set(sums[name]) == set(holders), (projection, name)
            for value, ids in holders.items():
                tokens, ranges, extra = sums[name][value]
                held = {rows[rid][0] for rid in ids if rid in rows}
                assert tokens == sum(rows[rid][1] for rid in ids if rid in rows), (projection, name, value)
                if ranges is not None:
                    spanned = {r for a, b in ranges for r in range(a, b + 1)}
                    assert spanned | set(extra) == held and not spanned & set(extra), (projection, name, value)
                else:
                    assert runs_of(held) is None  # (too many runs: left to the set)


def _one_facet(form: dict[str, Any]) -> bool:
    return len(form) == 1 and (next(iter(form)) != "tag" or len(set(form["tag"])) == 1)


def _views_take_sums(store: knowtk.Store, *, runs: bool) -> int:
    """Every filter form's view: one facet takes the sums (its tokens known before any is summed, its runs the set's
    rows where ``runs``), two facets do not; every answer the set's. How many forms took the sums."""
    snap = store.engine.snapshot()
    index = store.engine.keyword(snap)
    took = 0
    for proj in (index.main, index.history):
        table = {rowid: proj.tokens[rowid] for rowid in proj.ids.values()}
        for form in filter_forms(snap):
            flt = RecordFilter.from_args(snap, {k: v if k == "scope" else tuple(v) for k, v in form.items()})
            view = allowed_view(proj, snap, flt)
            if not isinstance(view, AllowedRows):
                continue
            expected = rows_passing(proj, snap, flt)
            restricting = [name for name, value in form.items() if value]
            if view.summed is not None:
                took += 1
                assert _one_facet({k: form[k] for k in restricting}), form  # (two facets: summed by position)
            else:
                assert not _one_facet(form) or len(expected) == len(table), form
            assert view.tokens == sum(table[r] for r in expected), (proj.key, form)
            among = view.among()
            if runs and view.summed is not None and among is not None:
                assert _rows_of(proj, among) == expected, (proj.key, form)
            if not runs:
                assert among is None, form
            assert ("allowed", flt) not in proj.memo(snap.generation), form  # (no set made)
    return took


def test_a_one_facet_filter_takes_the_build_s_sums(tmp_path: Path) -> None:
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _views_take_sums(fresh, runs=True) > 10
    edit(root, 1)  # (records whose facets or rows changed since: their rows answered by id, no runs)
    with knowtk.open_store(root, state_dir=state) as fresh:
        assert _views_take_sums(fresh, runs=False) > 10


def test_merged_runs_are_the_runs_of_the_union() -> None:
    rng = random.Random(7)
    for _ in range(300):
        rows = set(rng.sample(range(1, 3000), rng.randint(0, 400)))
        rows |= set(range(rng.randint(1, 2000), rng.randint(2000, 2600)))
        parts: list[set[int]] = [set(), set(), set()]
        for r in rows:
            parts[rng.randrange(3)].add(r)
        each = [runs_of(p) for p in parts]
        if any(r is None for r in each):
            continue
        merged = merged_runs([r for r in each if r is not None])
        assert merged == runs_of(rows)
        if merged is not None and rows:
            among = runs_among(*merged)
            ranges, extra = merged
            assert {r for a, b in ranges for r in range(a, b + 1)} | set(extra) == rows
            assert among.params[:2] == (min(rows), max(rows))


def test_sums_of_other_facets_or_damaged_are_not_used(tmp_path: Path) -> None:
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    for label, sql in [
        ("other facets", f"UPDATE {SUMS_TABLE} SET facets = 'other'"),
        ("other rowmap", f"UPDATE {SUMS_TABLE} SET rowmap = rowmap + 1"),
        ("damaged", f"UPDATE {SUMS_TABLE} SET sums = replace(sums, '[', '[1')"),
        ("not json", f"UPDATE {SUMS_TABLE} SET sums = 'x', checksum = {zlib.crc32(b'x')}"),
        ("a column missing", f"UPDATE {SUMS_TABLE} SET sums = '{{}}', checksum = {zlib.crc32(b'{}')}"),
        ("no table", f"DROP TABLE {SUMS_TABLE}"),
    ]:
        copy = tmp_path / f"state-{label}"
        copy.mkdir()
        (copy / STATE_FILE).write_bytes((state / STATE_FILE).read_bytes())
        _sql(copy, sql)
        with knowtk.open_store(root, state_dir=copy) as fresh:
            snap = fresh.engine.snapshot()
            main = fresh.engine.keyword(snap).main
            flt = RecordFilter.from_args(snap, {"kind": ("claim",)})
            view = allowed_view(main, snap, flt)
            assert isinstance(view, AllowedRows) and view.summed is None and view.among() is None, label
            assert _same_answers(fresh, root, tmp_path / f"ref-{label}") > 10, label


def test_a_common_word_under_one_facet_answers_as_a_reference_does(tmp_path: Path, monkeypatch: Any) -> None:
    """Common words (``KEEP_FROM_ROWS`` lowered) under every filter form: a page settled from SQLite's order over
    the sums' runs where a filter of one facet has them, without the set of its rows; every answer a reference's."""
    monkeypatch.setattr(bm25, "KEEP_FROM_ROWS", 4)
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    _build(root, state)
    settled: list[Any] = []
    bounded = bm25._bounded_page

    def counting(src: bm25.Source, terms: Any, k: int) -> Any:
        found = bounded(src, terms, k)
        if found is not None and isinstance(src.allowed, AllowedRows) and src.allowed._runs is not None:
            settled.append(src.allowed._rows)  # (the set, had this page made it)
        return found

    monkeypatch.setattr(bm25, "_bounded_page", counting)
    with knowtk.open_store(root, state_dir=state) as fresh:
        snap = fresh.engine.snapshot()
        main = fresh.engine.keyword(snap).main
        words = {w for r in snap.records.values() for w in (r.title or "").lower().split() if w.isalpha()}
        common = sorted(words, key=lambda w: (-main.hit_count((w,)), w))[:3]
        assert main.hit_count((common[0],)) >= 4
        queries = [(common[0], "all"), (" ".join(common[:2]), "all"), (" ".join(common[:2]), "any")]
        ref = knowtk.open_store(root, state_dir=tmp_path / "ref")
        try:
            for form in filter_forms(snap):
                for words_, mode in queries:
                    got = fresh.grep(words_, mode=mode, limit=3, **form).to_dict()
                    want = ref.grep(words_, mode=mode, limit=3, **form).to_dict()
                    assert (got["total"], got["hits"]) == (want["total"], want["hits"]), (form, words_, mode)
        finally:
            ref.close()
    assert settled and all(rows is None for rows in settled)  # (pages settled over the runs, no set made for them)
