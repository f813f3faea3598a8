"""What a record costs in memory: the frontmatter of records read back from the scan cache shares
its keys and its repeated values (one string object each), and stays what the file says."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.model.records import build_record
from knowtk.snapshot.stored import StoredSnapshot
from tests.helpers import StoreBuilder

META = {
    "id": "mtg-1",
    "kind": "page",
    "type": "meeting",
    "title": "Planning",
    "tags": ["q3", "ops"],
    "entities": ["person-ada"],
    "author": "Ada Lovelace",
    "fields": {"occurred_at": "2024-05-01", "room": "blue"},
}


def _from_json(meta: dict) -> dict:
    """A mapping as the scan cache gives it back: json.loads makes every key and value anew."""
    loaded: dict = json.loads(json.dumps(meta))
    return loaded


def test_records_from_json_share_keys_and_repeated_values() -> None:
    one, _ = build_record("a/one.md", "0" * 64, _from_json(META), 5)
    two, _ = build_record("a/two.md", "1" * 64, _from_json({**META, "id": "mtg-2"}), 5)
    assert one is not None and two is not None
    assert one.frontmatter == META and two.frontmatter == {**META, "id": "mtg-2"}
    assert list(one.frontmatter) == list(META)  # the order as written
    assert list(one.frontmatter["fields"]) == list(META["fields"])
    for k1, k2 in zip(one.frontmatter, two.frontmatter, strict=True):
        assert k1 is k2
    for k1, k2 in zip(one.fields, two.fields, strict=True):
        assert k1 is k2
    assert one.kind is two.kind and one.type is two.type and one.author is two.author
    assert one.frontmatter["kind"] is two.frontmatter["kind"]
    assert all(a is b for a, b in zip(one.tags, two.tags, strict=True))
    assert one.frontmatter["tags"][0] is two.frontmatter["tags"][0]
    assert one.entities[0] is two.entities[0]
    # unique values are not interned: they are the record's own
    assert one.title == two.title and one.id != two.id


def test_a_shared_mapping_keeps_its_table() -> None:
    """A mapping whose keys are interned already (YAML's, or one a record holds) is not re-keyed:
    another thread may be reading it."""
    meta = _from_json(META)
    one, _ = build_record("a/one.md", "0" * 64, meta, 5)
    assert one is not None and one.frontmatter is meta
    keys = list(meta)
    again, _ = build_record("a/one.md", "0" * 64, meta, 5)
    assert again is not None and again.frontmatter is meta
    assert all(a is b for a, b in zip(keys, meta, strict=True))
    assert again == one


def test_a_new_process_lets_the_frontmatter_go_and_reads_it_back(tmp_path: Path) -> None:
    """The records a second process builds from the scan cache share their repeated values, hold no
    frontmatter mapping (scan_files_v1 has it), read it back as the file says, and answer as before."""
    b = StoreBuilder(tmp_path / "store")
    b.page("person-ada", "Ada")
    for i in range(4):
        b.write(f"notes/n{i}.md", {**META, "id": f"mtg-{i}", "title": f"Planning {i}"}, "Body words.")
    state = tmp_path / "state"
    first = knowtk.open_store(b.root, state_dir=state)
    expected = first.call("knowledge_grep", {"query": "planning", "tag": "ops"})["hits"]
    assert len(expected) == 4
    first.close()
    second = knowtk.open_store(b.root, state_dir=state)
    assert second.call("knowledge_grep", {"query": "planning", "tag": "ops"})["hits"] == expected
    records = [r for r in second.snapshot().records.values() if r.id.startswith("mtg-")]
    assert len(records) == 4
    for r in records:
        assert not isinstance(r.frontmatter_or_source, dict)  # let go
        assert r.frontmatter == {**META, "id": r.id, "title": f"Planning {r.id[-1]}"}
        assert [k for k in r.frontmatter] == list(META)  # the order as written
        assert r.tags[0] is records[0].tags[0]
    second.close()


def test_records_share_equal_dates_and_tuples() -> None:
    """Equal date-only values, tags, entities and references are one object across records (all immutable);
    a timestamp is each record's own, and every value is still what the file says."""
    stamped = {**META, "recorded_at": "2024-05-01T10:00:00+02:00"}
    one, _ = build_record("a/one.md", "0" * 64, _from_json(stamped), 5)
    two, _ = build_record("a/two.md", "1" * 64, _from_json({**stamped, "id": "mtg-2"}), 5)
    assert one is not None and two is not None
    assert one.dates["occurred_at"] is two.dates["occurred_at"]
    assert one.dates["occurred_at"].text == "2024-05-01" and one.dates["occurred_at"].date_only
    assert one.dates["recorded_at"] == two.dates["recorded_at"]
    assert one.tags is two.tags and one.tags == ("q3", "ops")
    assert one.entities is two.entities and one.references is two.references == ("person-ada",)


def test_the_shared_values_cache_is_bounded(monkeypatch: Any) -> None:
    """Past their bound the caches start again: the values read after are equal to those before."""
    from knowtk.model import datevalues, records

    monkeypatch.setattr(datevalues, "_DAYS_MAX", 2)
    monkeypatch.setattr(records, "_TUPLES_MAX", 2)
    built = []
    for day in range(1, 6):
        meta = {**META, "id": f"mtg-{day}", "tags": [f"t{day}"], "fields": {"occurred_at": f"2024-05-0{day}"}}
        record, _ = build_record("a/one.md", "0" * 64, _from_json(meta), 5)
        assert record is not None
        built.append(record)
    assert len(datevalues._DAYS) <= 2 and len(records._TUPLES) <= 2
    again, _ = build_record("a/one.md", "0" * 64, _from_json({**META, "id": "mtg-1", "tags": ["t1"]}), 5)
    assert again is not None and again.tags == built[0].tags == ("t1",)
    assert [r.dates["occurred_at"].text for r in built] == [f"2024-05-0{day}" for day in range(1, 6)]
    assert built[0].dates["occurred_at"] == datevalues.parse_date_value("2024-05-01")


def test_a_stored_image_drops_the_bytes_of_the_parts_it_parsed(tmp_path: Path) -> None:
    """A new process keeps a stored part's bytes only until it parses the part; all parsed, none is kept."""
    b = StoreBuilder(tmp_path / "store")
    for i in range(4):
        b.write(f"notes/n{i}.md", {**META, "id": f"mtg-{i}", "title": f"Planning {i}"}, "Body words.")
    state = tmp_path / "state"
    first = knowtk.open_store(b.root, state_dir=state)
    expected = first.snapshot()
    first.close()
    second = knowtk.open_store(b.root, state_dir=state)
    snap = second.snapshot()  # handed out of a call: every stored part parsed
    assert isinstance(snap, StoredSnapshot)
    assert snap.parts.texts == {}
    assert dict(snap.records) == dict(expected.records)
    assert dict(snap.lifecycle) == dict(expected.lifecycle)


def _frontmatter_on_disk(path: Path) -> dict[str, Any]:
    from knowtk.model.records import load_frontmatter

    loaded = load_frontmatter(path.read_bytes())
    assert isinstance(loaded, tuple)
    return loaded[0]


def test_the_building_process_lets_the_frontmatter_go_once_the_scan_cache_holds_it(tmp_path: Path) -> None:
    """The process that parsed the files holds no frontmatter mapping once scan_files_v1 has it (what keeps
    a cold build of a million files in memory); the record whole still shows it as the file says, and an edit
    shows the new one."""
    b = StoreBuilder(tmp_path / "store")
    b.page("person-ada", "Ada")
    path = b.write("notes/m.md", {**META, "id": "mtg-1"}, "Body words.")
    store = knowtk.open_store(b.root, state_dir=tmp_path / "state")
    assert store.call("knowledge_record", {"id": "mtg-1"})["record"]["frontmatter"] == _frontmatter_on_disk(path)
    record = store.snapshot().records["mtg-1"]
    assert not isinstance(record.frontmatter_or_source, dict)
    assert record.frontmatter == _frontmatter_on_disk(path) and list(record.frontmatter) == list(META)
    b.write("notes/m.md", {**META, "id": "mtg-1", "tags": ["q4"]}, "Body words.")
    assert store.call("knowledge_record", {"id": "mtg-1"})["record"]["frontmatter"]["tags"] == ["q4"]
    store.close()


def test_a_record_read_before_its_file_changed_does_not_give_the_new_frontmatter(tmp_path: Path) -> None:
    """A record let go of its frontmatter reads it back only at its own hash: after an edit (the scan cache
    holding the new version) it raises RecordChanged: a Contention in a call (which runs again on the file as
    it is now), a StoreChanged for a record held outside one."""
    from knowtk.errors import StoreChanged
    from knowtk.state import Contention

    b = StoreBuilder(tmp_path / "store")
    b.page("person-ada", "Ada")
    b.write("notes/m.md", {**META, "id": "mtg-1"}, "Body words.")
    store = knowtk.open_store(b.root, state_dir=tmp_path / "state")
    store.call("knowledge_grep", {"query": "body"})
    old = store.snapshot().records["mtg-1"]
    b.write("notes/m.md", {**META, "id": "mtg-1", "title": "Renamed"}, "Body words.")
    assert store.call("knowledge_record", {"id": "mtg-1"})["record"]["frontmatter"]["title"] == "Renamed"
    with pytest.raises(StoreChanged, match=r"notes/m\.md changed since its record was read") as raised:
        _ = old.frontmatter
    assert isinstance(raised.value, Contention)
    store.close()


def test_a_frontmatter_kept_as_text_until_its_row_is_written(tmp_path: Path, monkeypatch: Any) -> None:
    """While scan_files_v1 cannot be written, an entry keeps its frontmatter as the row's JSON text (not the
    mapping); the record reads it from there, and the next write stores it."""
    from knowtk.scan.cache import Scanner

    b = StoreBuilder(tmp_path / "store")
    b.page("person-ada", "Ada")
    path = b.write("notes/m.md", {**META, "id": "mtg-1"}, "Body words.")
    saved = Scanner.save
    monkeypatch.setattr(Scanner, "save", lambda self: None)
    store = knowtk.open_store(b.root, state_dir=tmp_path / "state")
    store.call("knowledge_grep", {"query": "body"})
    scanner = store.engine.scanner
    entry = scanner.entry("notes/m.md")
    assert entry is not None and entry.meta is None and entry.meta_text is not None
    assert json.loads(entry.meta_text) == _frontmatter_on_disk(path)
    assert store.snapshot().records["mtg-1"].frontmatter == _frontmatter_on_disk(path)
    monkeypatch.setattr(Scanner, "save", saved)
    scanner.save()
    scanner._release(["notes/m.md"])
    assert entry.meta_text is None
    row = store.engine.state.conn.execute("SELECT meta FROM scan_files_v1 WHERE path = 'notes/m.md'").fetchone()
    assert json.loads(row[0]) == _frontmatter_on_disk(path)
    assert store.snapshot().records["mtg-1"].frontmatter == _frontmatter_on_disk(path)
    store.close()


def test_a_scan_cache_written_again_whole_keeps_the_frontmatter_let_go(tmp_path: Path) -> None:
    """scan_files_v1 dropped (a repair writes it again from the entries): the rows of records that let their
    frontmatter go hold it again, read back from their files, and a new process answers the same."""
    b = StoreBuilder(tmp_path / "store")
    b.page("person-ada", "Ada")
    path = b.write("notes/m.md", {**META, "id": "mtg-1"}, "Body words.")
    state = tmp_path / "state"
    store = knowtk.open_store(b.root, state_dir=state)
    store.call("knowledge_grep", {"query": "body"})
    engine = store.engine
    with engine.state.transaction() as conn:
        conn.execute("DROP TABLE scan_files_v1")
    engine.scanner.save()
    row = engine.state.conn.execute("SELECT meta FROM scan_files_v1 WHERE path = 'notes/m.md'").fetchone()
    assert row is not None and json.loads(row[0]) == _frontmatter_on_disk(path)
    store.close()
    again = knowtk.open_store(b.root, state_dir=state)
    assert again.call("knowledge_record", {"id": "mtg-1"})["record"]["frontmatter"] == _frontmatter_on_disk(path)
    again.close()


def test_records_without_fields_share_one_empty_mapping_and_answers_copy_it(tmp_path: Path) -> None:
    """A record without ``fields`` holds the one shared empty mapping; what an answer gives is a copy, so a
    caller changing it changes no record."""
    plain = {k: v for k, v in META.items() if k != "fields"}
    one, _ = build_record("a/one.md", "0" * 64, _from_json(plain), 5)
    two, _ = build_record("a/two.md", "1" * 64, _from_json({**plain, "id": "mtg-2"}), 5)
    assert one is not None and two is not None and one.fields is two.fields and one.fields == {}
    b = StoreBuilder(tmp_path / "store")
    b.page("person-ada", "Ada")
    b.write("notes/a.md", {**plain, "id": "mtg-1"}, "Body.")
    b.write("notes/b.md", {**plain, "id": "mtg-2"}, "Body.")
    store = knowtk.open_store(b.root, state_dir=tmp_path / "state")
    store.call("knowledge_record", {"id": "mtg-1"})["record"]["fields"]["added"] = 1
    assert store.call("knowledge_record", {"id": "mtg-2"})["record"]["fields"] == {}
    assert store.snapshot().records["mtg-1"].fields == {}
    store.close()


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's"
)
def test_memory_a_bulk_load_let_go_is_given_back_to_the_system() -> None:
    """Texts past Python's small-object size freed in the middle of the C heap stay counted in the process
    until ``give_back_memory`` returns their pages (what a cold build does after it lets the frontmatter go)."""
    from knowtk.scan.pool import give_back_memory

    texts = ["x" * 600 + str(i) for i in range(200_000)]  # ~125 MB, in the C heap (over 512 bytes each)
    kept = texts[::100]  # a few keep the heap's top where it is, as the rest of a build's objects do
    del texts
    before = _rss_bytes()
    give_back_memory()
    assert before - _rss_bytes() > 50 * 2**20
    assert len(kept) == 2000
