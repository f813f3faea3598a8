"""A stored snapshot reads a query's few records from the image's points, not parsing the per-record parts.

``StoredRecords._path`` (a record's path), ``StoredSnapshot.lifecycle_at`` and ``StoredRecords._sha_point``
(its file hash) read the ``points.<k>`` part their id hashes to; they must give exactly what the parsed parts
(``record_ids``, ``record_paths``, ``lifecycle``, ``record_sha``) give, for every id and for ids the image does
not hold, paths of any characters included; a key a patch wrote over is read from the last patch that names it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

import knowtk
from knowtk.snapshot import image_write, stored
from knowtk.snapshot.stored import StoredSnapshot
from knowtk.state import STATE_FILE, inflate_bytes


def _page(root: Path, path: str, rid: str, **meta: Any) -> None:
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    fields = {"id": rid, "kind": "page", "title": f"Title {rid}", **meta}
    full.write_text(f"---\n{yaml.safe_dump(fields, sort_keys=False).rstrip()}\n---\nalpha words\n", encoding="utf-8")


def _store(root: Path, odd_path: str) -> None:
    _page(root, "a/one.md", "one", status="superseded", superseded_by="two", revision=2)
    _page(root, "a/two.md", "two")
    _page(root, "b/x.y-z_1.md", "x.y-z_1")
    _page(root, "b/colon.md", "ns:colon")
    _page(root, "c/gone.md", "gone", status="withdrawn")
    _page(root, "d/été à.md", "ete")  # not ASCII: JSON keeps it as it is (ensure_ascii=False)
    _page(root, odd_path, "odd")
    for i in range(30):
        _page(root, f"e/n{i}.md", f"n-{i}")


def _stored(state_dir: Path) -> tuple[list[str], list[str], dict[str, str]]:
    conn = sqlite3.connect(state_dir / STATE_FILE)
    try:
        texts = dict(conn.execute("SELECT part, data FROM snapshot_image_v1"))
    finally:
        conn.close()
    ids = json.loads(texts["record_ids"])  # (kept as its text: ``image_format.STORED_PLAIN``)
    paths = json.loads(inflate_bytes(texts["record_paths"]))
    return ids, paths, json.loads(inflate_bytes(texts["lifecycle"]))


@pytest.mark.parametrize("odd_path", ["f/plain name.md", 'f/a "quoted" \\ name.md', "f/\u00e9t\u00e9 \U0001f600.md"])
def test_records_read_where_they_lie_are_the_parsed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd_path: str
) -> None:
    monkeypatch.setattr(stored, "POINTS", 10_000)
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _store(root, odd_path)
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    ids, paths, lifecycle = _stored(state_dir)
    assert "gone" in lifecycle and "odd" in ids
    store = knowtk.open_store(root, state_dir=state_dir)
    engine = store.engine

    def check() -> None:
        snap = engine.snapshot()
        assert isinstance(snap, StoredSnapshot)
        records = snap.records
        for rid, path in zip(ids, paths, strict=True):
            assert records._path(rid) == path
            assert records[rid].path == path
        for rid, life in lifecycle.items():
            assert snap.lifecycle_at(rid) == life
        for missing in ("nope", "n-", "-1", "n-1.md", 'one", "two'):
            with pytest.raises(KeyError):
                records._path(missing)
            with pytest.raises(KeyError):
                snap.lifecycle_at(missing)
        # every path and lifecycle came from the image's points (any character in a path): nothing was parsed
        assert "_where" not in vars(records) and "lifecycle" not in vars(snap)
        assert not {"record_ids", "record_paths", "lifecycle", "record_sha"} & snap.parts.parsed.keys()

    try:
        engine.run(check)
        assert [h["id"] for h in store.grep("alpha", lifecycle="all", limit=50).to_dict()["hits"]].count("one") == 1
    finally:
        store.close()


def test_a_patched_image_is_read_where_it_lies_with_the_patches_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch changes what a part says without changing its text: a key a patch names is read from the patch
    (the last one that names it), any other from the text, and both give what the parsed, patched part gives."""
    monkeypatch.setattr(image_write, "PATCH_SHARE", 0)  # every later image a patch
    monkeypatch.setattr(stored, "POINTS", 10_000)
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _store(root, "f/plain.md")
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    edits = [
        lambda: _page(root, "e/n3.md", "n-3", status="withdrawn"),  # a lifecycle set by a patch
        lambda: _page(root, "e/n4.md", "n-4-moved"),  # an id gone, another come: a record removed and one added
        lambda: (root / "e/n5.md").unlink(),  # a record removed
        lambda: _page(root, "e/n3.md", "n-3"),  # not set back: the withdrawal's safeguard holds it
        lambda: _page(root, "g/new.md", "n-new", status="withdrawn"),  # a new record
        lambda: _page(root, "e/n6.md", "n-6-again"),  # moved twice: the last patch wins
        lambda: (root / "e/n6.md").unlink() or _page(root, "h/n6.md", "n-6-again"),
    ]
    for edit in edits:
        edit()
        with knowtk.open_store(root, state_dir=state_dir) as second:  # finds the image behind the files: patches it
            second.grep("alpha")
    conn = sqlite3.connect(state_dir / STATE_FILE)
    meta = json.loads(conn.execute("SELECT data FROM snapshot_image_v1 WHERE part = 'meta'").fetchone()[0])
    conn.close()
    assert len(meta["patches"]) >= len(edits), meta
    ids, _, lifecycle = _stored(state_dir)
    asked = [*ids, "n-4-moved", "n-new", "n-6-again", "nope", "n-"]
    store = knowtk.open_store(root, state_dir=state_dir)
    engine = store.engine

    def check() -> None:
        snap = engine.snapshot()
        assert isinstance(snap, StoredSnapshot)
        records = snap.records
        paths, lives = {}, {}
        for rid in asked:
            try:
                paths[rid] = records._path(rid)
            except KeyError:
                paths[rid] = None
        for rid in [*lifecycle, *asked]:
            try:
                lives[rid] = snap.lifecycle_at(rid)
            except KeyError:
                lives[rid] = None
        shas = {rid: records._sha_point(rid) for rid in asked}
        holds = {rid: rid in records for rid in asked}
        assert "_where" not in vars(records) and "lifecycle" not in vars(snap)  # nothing parsed for them
        assert "record_sha" not in snap.parts.parsed
        assert paths == {rid: records._where.get(rid) for rid in asked}
        assert holds == {rid: rid in records._where for rid in asked}
        assert shas == {rid: records._sha.get(rid) for rid in asked}
        assert lives == {rid: snap.lifecycle.get(rid) for rid in lives}
        assert (paths["n-4"], paths["n-5"], paths["n-6"], paths["n-6-again"]) == (None, None, None, "h/n6.md")
        assert (lives["n-3"], lives["n-new"], lives["n-7"]) == ("withdrawn", "withdrawn", "active")
        assert records["n-4-moved"].path == "e/n4.md"

    try:
        engine.run(check)
    finally:
        store.close()


def test_a_new_processs_first_filter_reads_the_facets_not_the_ids_or_paths(tmp_path: Path) -> None:
    """A filter over a stored snapshot reads the records' facets, answered by stored position (the rowmap): not
    their ids (``record_ids``) nor their paths (``record_paths``, some twice the ids' bytes): the answer is the
    one of a snapshot built whole."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _store(root, "f/plain name.md")
    _page(root, "g/memo.md", "memo", type="memo")
    args = {"query": "alpha", "type": "memo", "lifecycle": "all", "limit": 50}
    with knowtk.open_store(root, state_dir=state_dir) as first:
        built = first.call("knowledge_grep", args)
    store = knowtk.open_store(root, state_dir=state_dir)
    try:
        again = store.call("knowledge_grep", args)
        assert again["hits"] == built["hits"] and again["total"] == built["total"] == 1
        assert [h["id"] for h in built["hits"]] == ["memo"]

        def check() -> None:
            snap = store.engine.snapshot()
            assert isinstance(snap, StoredSnapshot)
            assert "record_facets" in snap.parts.parsed
            assert "record_ids" not in snap.parts.parsed and "record_paths" not in snap.parts.parsed

        store.engine.run(check)
    finally:
        store.close()
