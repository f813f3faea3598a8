"""What a record costs in memory: the frontmatter of records read back from the scan cache shares
its keys and its repeated values (one string object each), and stays what the file says."""

from __future__ import annotations

import json
from pathlib import Path

import knowtk
from knowtk.model.records import build_record
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
