"""Index behaviour: reconcile at every query, only changed records re-indexed, rebuildable projections,
safeguards that are never rebuilt, freshness, and a query that never writes Markdown."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
import zlib

import pytest

import knowtk
from knowtk.engine.engine import Engine
from tests.helpers import StoreBuilder, codes, markdown_digest


def ids(res: dict) -> list[str]:
    return [h["id"] for h in res["hits"]]


def bump_mtime(path) -> None:
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_state_lives_in_dot_knowtk_and_tables_are_named_as_the_seed(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    builder.page("b", "Old zebra", status="superseded", superseded_by="a")
    store = builder.open()
    store.grep("zebra")
    assert store.state_path == str(builder.root / ".knowtk" / "state.sqlite")
    names = {r[0] for r in sqlite3.connect(store.state_path).execute("SELECT name FROM sqlite_master")}
    for table in (
        "keyword_fts_v1_root",
        "keyword_rows_v1_root",
        "keyword_history_fts_v1_root",
        "keyword_history_rows_v1_root",
        "keyword_state_v1",
        "keyword_withdrawals_v1",
        "lifecycle_guards_v1",
        "knowtk_meta",
    ):
        assert table in names


def test_keyword_tables_keep_a_builds_new_terms_in_memory_up_to_their_bound(builder: StoreBuilder) -> None:
    # FTS5's default (1 MiB) wrote a first build out in many small segments that merges then rewrote
    from knowtk.index.fts_storage import PENDING_TERMS_BYTES

    builder.page("a", "Zebra", "a body")
    store = builder.open()
    assert store.grep("zebra")["total"] == 1
    conn = sqlite3.connect(store.state_path)
    for fts in ("keyword_fts_v1_root", "keyword_history_fts_v1_root"):
        config = dict(conn.execute(f"SELECT k, v FROM {fts}_config"))
        assert config["hashsize"] == PENDING_TERMS_BYTES > 2**20


def test_only_changed_records_are_reindexed(builder: StoreBuilder) -> None:
    for i in range(30):
        builder.page(f"r{i:02d}", f"Record {i}", f"common words and zebra{i}")
    store = builder.open()
    engine = store.engine
    assert store.grep("common")["total"] == 30
    assert engine._keyword is not None and engine._keyword.written == 30
    parses = engine.scanner.parses
    # nothing changed: no parse, no index write, scannedAt reused
    first = store.call("knowledge_grep", {"query": "common"})
    second = store.call("knowledge_grep", {"query": "common"})
    assert engine.scanner.parses == parses and engine._keyword.written == 0
    assert first["freshness"]["scannedAt"] == second["freshness"]["scannedAt"]
    assert first["freshness"]["indexedAt"] == second["freshness"]["indexedAt"]
    assert second["freshness"]["queriedAt"] >= second["freshness"]["scannedAt"]
    # one file changed: one parse, one row out and one in
    time.sleep(0.002)
    builder.page("r07", "Record 7", "common words and a brand new quagga")
    res = store.call("knowledge_grep", {"query": "quagga"})
    assert ids(res) == ["r07"]
    assert engine.scanner.parses == parses + 1
    assert engine._keyword.written == 2
    assert res["freshness"]["scannedAt"] > second["freshness"]["scannedAt"]
    assert store.grep("zebra7")["total"] == 0


def test_touching_a_file_without_changing_it_reads_but_does_not_reindex(builder: StoreBuilder) -> None:
    path = builder.page("a", "Zebra")
    store = builder.open()
    store.grep("zebra")
    parses, snap = store.engine.scanner.parses, store.snapshot()
    bump_mtime(path)
    store.grep("zebra")
    assert store.engine.scanner.parses == parses
    assert store.snapshot() is snap  # same content: the snapshot is reused


def test_a_new_process_reuses_the_scan_cache(builder: StoreBuilder) -> None:
    for i in range(5):
        builder.page(f"r{i}", f"Zebra {i}")
    builder.open().grep("zebra")
    again = builder.open()
    assert again.grep("zebra")["total"] == 5
    assert again.engine.scanner.parses == 0
    assert again.engine._keyword is not None and again.engine._keyword.written == 0


def test_deleted_and_renamed_files(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra a", path="x/a.md")
    builder.page("b", "Zebra b")
    store = builder.open()
    assert store.grep("zebra")["total"] == 2
    builder.remove("b.md")
    assert ids(store.call("knowledge_grep", {"query": "zebra"})) == ["a"]
    os.rename(builder.root / "x/a.md", builder.root / "x/renamed.md")
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert ids(res) == ["a"] and res["hits"][0]["path"] == "x/renamed.md"


@pytest.mark.parametrize("table", ["keyword_fts_v1_root", "keyword_rows_v1_root", "keyword_state_v1"])
def test_missing_projection_tables_are_rebuilt(builder: StoreBuilder, table: str) -> None:
    builder.page("a", "Zebra")
    builder.page("w", "Gone", status="withdrawn")
    store = builder.open()
    assert store.grep("zebra")["total"] == 1
    store.close()
    con = sqlite3.connect(builder.root / ".knowtk" / "state.sqlite")
    con.execute(f"DROP TABLE {table}")
    con.commit()
    con.close()
    again = builder.open()
    assert ids(again.call("knowledge_grep", {"query": "zebra"})) == ["a"]
    # the safeguards survived the rebuild
    con = sqlite3.connect(again.state_path)
    assert con.execute("SELECT id FROM keyword_withdrawals_v1").fetchall() == [("w",)]


def test_a_changed_fingerprint_rebuilds(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    builder.open().grep("zebra")
    con = sqlite3.connect(builder.root / ".knowtk" / "state.sqlite")
    con.create_function("knowtk_inflate", 1, lambda blob: zlib.decompress(blob).decode())  # FTS5 reads its text
    con.execute("UPDATE keyword_state_v1 SET fingerprint = 'old'")
    con.execute("DELETE FROM keyword_fts_v1_root")  # stale content that must not survive
    con.commit()
    con.close()
    store = builder.open()
    assert ids(store.call("knowledge_grep", {"query": "zebra"})) == ["a"]
    assert store.engine._keyword is not None and store.engine._keyword.written == 1


def test_a_state_of_the_earlier_format_is_rebuilt_and_its_copy_of_the_bodies_dropped(builder: StoreBuilder) -> None:
    """In the earlier state format the FTS5 table kept its own content (a second copy of every body): it is rebuilt."""
    builder.page("a", "Zebra", "a zebra body")
    builder.page("b", "Lion", "a lion body")
    builder.open().grep("zebra")
    con = sqlite3.connect(builder.root / ".knowtk" / "state.sqlite", isolation_level=None)
    for family in ("keyword", "keyword_history"):  # the earlier format's tables, as it wrote them
        for name in (f"{family}_fts_v1_root", f"{family}_fts_v1_root_view", f"{family}_fts_v1_root_text"):
            kind = "VIEW" if name.endswith("_view") else "TABLE"
            con.execute(f"DROP {kind} {name}")
        con.execute(f"CREATE VIRTUAL TABLE {family}_fts_v1_root USING fts5(title, aliases, body)")
    con.execute("INSERT INTO keyword_fts_v1_root (rowid, title, aliases, body) VALUES (1, 'Zebra', '', 'stale lion')")
    con.execute("UPDATE keyword_state_v1 SET fingerprint = '458f381c209b6f8a'")  # the earlier format's own
    con.close()
    store = builder.open()
    assert ids(store.call("knowledge_grep", {"query": "zebra"})) == ["a"]
    assert ids(store.call("knowledge_grep", {"query": "lion"})) == ["b"]
    hit = store.call("knowledge_grep", {"query": "zebra body"})["hits"][0]
    assert hit["snippet"]["text"] == "a zebra body" and hit["matches"] == ["title", "body"]
    names = {n for (n,) in sqlite3.connect(store.state_path).execute("SELECT name FROM sqlite_master")}
    assert "keyword_fts_v1_root_content" not in names and "keyword_fts_v1_root_text" in names
    assert store.check()["ok"] is True


def test_another_process_writing_the_state_is_picked_up(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra a")
    one, two = builder.open(), builder.open()
    assert one.grep("zebra")["total"] == 1
    builder.page("b", "Zebra b")
    assert two.grep("zebra")["total"] == 2  # two reconciles the shared projection
    assert ids(one.call("knowledge_grep", {"query": "zebra"})) == ["a", "b"]


def test_withdrawn_ids_never_come_back(builder: StoreBuilder) -> None:
    builder.page("c", "Zebra claim", kind="claim", status="withdrawn")
    store = builder.open()
    assert store.grep("zebra")["total"] == 0
    # a stale copy (or a restore from backup) presents it as active again
    builder.page("c", "Zebra claim", kind="claim", revision=5)
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert res["hits"] == []
    assert codes(res) == ["stale_withdrawn"]
    # even from a new process
    assert builder.open().grep("zebra")["total"] == 0


def test_superseded_ids_stay_superseded_unless_a_higher_revision_restates_them(builder: StoreBuilder) -> None:
    builder.page("new", "Current wording")
    builder.page("old", "Zebra wording", revision=2, status="superseded", superseded_by="new")
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [(h["id"], h["via"]["id"]) for h in res["hits"]] == [("new", "old")]
    # a stale file presents the old record as active at the same revision
    builder.page("old", "Zebra wording", revision=2)
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert [(h["id"], h["via"]["id"]) for h in res["hits"]] == [("new", "old")]
    assert codes(res) == ["stale_revision"]
    assert store.call("knowledge_record", {"id": "old"})["record"]["supersededBy"] == "new"
    # a higher revision is a real restatement
    builder.page("old", "Zebra wording", revision=3)
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert ids(res) == ["old"] and res["coverage"]["complete"] is True


def test_deleting_dot_knowtk_loses_safeguards_never_records(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    builder.page("w", "Zebra w", status="withdrawn")
    builder.open().grep("zebra")
    builder.page("w", "Zebra w")
    shutil.rmtree(builder.root / ".knowtk")
    store = builder.open()
    assert sorted(ids(store.call("knowledge_grep", {"query": "zebra"}))) == ["a", "w"]


def test_queries_never_write_markdown(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra", "body", evidence=[{"path": "b.md", "lines": [1, 2], "quote": "x"}])
    builder.page("b", "Old", status="superseded", superseded_by="a")
    builder.raw("broken.md", "---\nid: [\n---\n")
    before = markdown_digest(builder.root)
    store = builder.open()
    for tool, args in [
        ("knowledge_grep", {"query": "zebra"}),
        ("knowledge_grep", {"query": "old", "lifecycle": "all"}),
        ("knowledge_lookup", {"query": "Zebra"}),
        ("knowledge_records", {}),
        ("knowledge_record", {"id": "a"}),
    ]:
        store.call(tool, args)
    assert markdown_digest(builder.root) == before


def test_index_unavailable_is_reported_and_lookup_and_records_still_work(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder.page("a", "Zebra")
    store = builder.open()

    def broken(self, *args, **kwargs):
        raise sqlite3.OperationalError("no such module: fts5")

    monkeypatch.setattr("knowtk.index.fts.FtsProjection.ensure", broken)
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert res["index"]["state"] == "unavailable"
    assert res["total"] is None and res["hits"] == [] and res["nextOffset"] is None
    assert store.call("knowledge_lookup", {"query": "zebra"})["status"] == "found"
    assert store.call("knowledge_records", {})["total"] == 1
    monkeypatch.undo()
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert res["index"] == {"state": "ready", "lag": False} and res["total"] == 1


def test_refusals_raise_instead_of_answering_empty(builder: StoreBuilder, tmp_path) -> None:
    with pytest.raises(knowtk.StoreUnavailable) as missing:
        knowtk.open_store(tmp_path / "nowhere")
    assert isinstance(missing.value, knowtk.KnowtkError) and missing.value.code == "store_unavailable"
    for i in range(5):
        builder.page(f"r{i}", "Zebra")
    store = builder.open(max_files=3)
    with pytest.raises(knowtk.ScanLimitExceeded) as limit:
        store.grep("zebra")
    assert limit.value.limit == "max_files" and "max_files" in str(limit.value)
    # the folder disappearing between queries is refused, not answered with nothing
    store = builder.open()
    assert store.grep("zebra")["total"] == 5
    shutil.rmtree(builder.root)
    with pytest.raises(knowtk.StoreUnavailable):
        store.grep("zebra")


def test_a_state_file_that_is_not_ours_is_refused(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    (builder.root / ".knowtk").mkdir()
    (builder.root / ".knowtk" / "state.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(knowtk.StateError):
        builder.open()
    elsewhere = builder.root.parent / "other-state"
    elsewhere.mkdir()
    other = sqlite3.connect(elsewhere / "state.sqlite")
    other.execute("CREATE TABLE foreign_data (x)")
    other.commit()
    with pytest.raises(knowtk.StateError, match="not a knowtk state"):
        Engine(builder.root, state_dir=elsewhere)
    newer = builder.root.parent / "newer-state"
    Engine(builder.root, state_dir=newer).close()
    con = sqlite3.connect(newer / "state.sqlite")
    con.execute("UPDATE knowtk_meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    with pytest.raises(knowtk.StateError, match="newer knowtk"):
        Engine(builder.root, state_dir=newer)


def test_state_dir_keeps_a_store_untouched(builder: StoreBuilder, tmp_path) -> None:
    builder.page("a", "Zebra")
    store = builder.open(state_dir=tmp_path / "elsewhere")
    assert store.grep("zebra")["total"] == 1
    assert not (builder.root / ".knowtk").exists()
    assert (tmp_path / "elsewhere" / "state.sqlite").exists()


def test_large_files_are_reported_not_read(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra", "x" * 5000)
    builder.page("b", "Zebra small")
    res = builder.open(max_file_bytes=1000).call("knowledge_grep", {"query": "zebra"})
    assert ids(res) == ["b"] and codes(res) == ["file_too_large"]


def test_a_withdrawal_seen_by_another_process_binds_this_one(builder: StoreBuilder) -> None:
    builder.page("c", "Zebra claim", kind="claim", status="withdrawn")
    late = builder.open()  # loaded its safeguards before anyone saw the withdrawal
    builder.open().grep("zebra")  # another process sees it and records it
    builder.page("c", "Zebra claim", kind="claim")  # then a stale copy comes back
    res = late.call("knowledge_grep", {"query": "zebra"})
    assert res["hits"] == [] and codes(res) == ["stale_withdrawn"]
