"""Store.export: the snapshot's tables as Parquet, read back with pyarrow and joined across stores in DuckDB."""

from __future__ import annotations

import importlib
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

import knowtk
from knowtk.errors import InvalidArgument, MissingDependency
from tests.helpers import StoreBuilder, markdown_digest


def optional(module: str):  # type: ignore[no-untyped-def]
    """The module; skipped when it is missing, except under CI=true (.ci/run installs knowtk[export])."""
    if os.environ.get("CI") == "true":
        return importlib.import_module(module)
    return pytest.importorskip(module)


pq = optional("pyarrow.parquet")


def build(builder: StoreBuilder, name: str) -> StoreBuilder:
    builder.raw("knowtk.yaml", f"name: {name}\n")
    builder.page("person-ada", "Ada Okafor", "Ada leads search.", aliases=["Ada"], tags=["people"])
    builder.page("dec-1", "First decision", "Old wording.", status="superseded", superseded_by="dec-2")
    builder.page("dec-2", "Second decision", "New wording.", kind="claim", type="decision", occurred_at="2026-03-04")
    builder.page("note", "A note", "Body.", recorded_at="2026-03-05T09:12:00Z", entities=["person-ada"])
    builder.raw("broken.md", "---\nid: [unclosed\n---\nbody\n")
    return builder


def test_export_writes_every_table_of_one_snapshot(builder: StoreBuilder, tmp_path: Path) -> None:
    store = build(builder, "alpha").open()
    before = markdown_digest(builder.root)
    written = store.export(tmp_path / "out")
    assert sorted(written) == ["chains", "coverage_issues", "dates", "records"]
    snap = store.snapshot()
    records = pq.read_table(written["records"]).to_pylist()
    assert [r["id"] for r in records] == sorted(snap.records)
    assert {r["store"] for r in records} == {"alpha"}
    by_id = {r["id"]: r for r in records}
    assert by_id["dec-1"]["status"] == "superseded" and by_id["dec-1"]["superseded_by"] == "dec-2"
    assert by_id["dec-2"]["lifecycle"] == "active" and by_id["dec-2"]["kind"] == "claim"
    assert by_id["person-ada"]["aliases"] == ["Ada"] and by_id["note"]["entities"] == ["person-ada"]
    assert all(r["available"] for r in records)
    dates = pq.read_table(written["dates"]).to_pylist()
    occurred = next(d for d in dates if d["id"] == "dec-2" and d["field"] == "occurred_at")
    assert occurred["date_only"] and occurred["value"] == "2026-03-04"
    assert occurred["start"] == datetime(2026, 3, 4, tzinfo=UTC) and occurred["end"] == datetime(2026, 3, 5, tzinfo=UTC)
    recorded = next(d for d in dates if d["id"] == "note" and d["field"] == "recorded_at")
    assert recorded["start"] == recorded["end"] == datetime(2026, 3, 5, 9, 12, tzinfo=UTC)
    chains = pq.read_table(written["chains"]).to_pylist()
    assert [(c["id"], c["current"], c["reason"], c["length"]) for c in chains] == [("dec-1", "dec-2", "current", 1)]
    issues = pq.read_table(written["coverage_issues"]).to_pylist()
    assert [(i["path"], i["code"]) for i in issues] == [(i.path, i.code) for i in snap.issues]
    assert any(i["path"] == "broken.md" for i in issues)
    meta = pq.read_schema(written["records"]).metadata
    grep = store.call("knowledge_grep", {"query": "wording"})
    assert meta[b"knowtk.snapshot"].decode() == grep["snapshot"]  # the same snapshot a query answers from
    assert markdown_digest(builder.root) == before  # an export writes no Markdown
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(f"{t}.parquet" for t in written)


def test_export_again_replaces_the_files_with_the_store_as_it_is_now(builder: StoreBuilder, tmp_path: Path) -> None:
    store = build(builder, "alpha").open()
    store.export(tmp_path / "out")
    builder.page("new", "A new record", "Fresh.")
    builder.remove("note.md")
    written = store.export(tmp_path / "out")
    ids = [r["id"] for r in pq.read_table(written["records"]).to_pylist()]
    assert "new" in ids and "note" not in ids


def test_export_refuses_a_bad_format_or_path(builder: StoreBuilder, tmp_path: Path) -> None:
    store = build(builder, "alpha").open()
    with pytest.raises(InvalidArgument) as bad:
        store.export(tmp_path / "out", format="csv")
    assert bad.value.argument == "format" and "'parquet'" in str(bad.value)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgument) as not_folder:
        store.export(tmp_path / "file")
    assert not_folder.value.argument == "path"
    assert not (tmp_path / "out").exists()


def test_export_without_pyarrow_names_the_extra(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = build(builder, "alpha").open()
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(MissingDependency) as missing:
        store.export(tmp_path / "out")
    assert missing.value.extra == "export" and "knowtk[export]" in str(missing.value)
    assert isinstance(missing.value, knowtk.KnowtkError)


def test_two_stores_joined_in_duckdb(make_builder, tmp_path: Path) -> None:
    """The docs example (docs/export.md): records of two stores stacked, and joined on a shared entity."""
    duckdb = optional("duckdb")
    one = build(make_builder("one"), "team-one")
    two = make_builder("two")
    two.raw("knowtk.yaml", "name: team-two\n")
    two.page("person-ada", "Ada Okafor", "Ada, seen from team two.")
    two.page("meeting", "Weekly call", "With Ada.", type="meeting", entities=["person-ada"], occurred_at="2026-03-06")
    one.open().export(tmp_path / "export" / "team-one")
    two.open().export(tmp_path / "export" / "team-two")
    con = duckdb.connect()
    records = f"read_parquet('{tmp_path}/export/*/records.parquet')"
    counts = con.execute(f"SELECT store, count(*) FROM {records} GROUP BY store ORDER BY store").fetchall()
    assert counts == [("team-one", 4), ("team-two", 2)]
    shared = con.execute(
        f"SELECT a.id, a.store, b.store FROM {records} a JOIN {records} b ON a.id = b.id AND a.store < b.store"
    ).fetchall()
    assert shared == [("person-ada", "team-one", "team-two")]
    mentions = con.execute(
        f"SELECT r.store, r.id FROM {records} r, unnest(r.entities) AS e(entity) "
        "WHERE e.entity = 'person-ada' ORDER BY r.store"
    ).fetchall()
    assert mentions == [("team-one", "note"), ("team-two", "meeting")]
