"""What a record costs in memory: the frontmatter of records read back from the scan cache shares
its keys and its repeated values (one string object each), and stays what the file says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import knowtk
from knowtk.model.records import build_record
from knowtk.snapshot.persist import StoredSnapshot
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


def test_a_new_process_shares_the_frontmatter_keys(tmp_path: Path) -> None:
    """The records a second process builds from the scan cache share their keys, and answer as before."""
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
    for r in records[1:]:
        assert [k for k in r.frontmatter] == list(META)
        assert all(a is b for a, b in zip(records[0].frontmatter, r.frontmatter, strict=True))
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
