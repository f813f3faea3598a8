"""The inventory's catalog, patched at a snapshot's changed ids, answers as a store built fresh does.

knowledge_records and knowl_query read a catalog of the available records whose indexes (ids, kind, type,
tag and category groups, the newest order, the active records by recorded_at) are built on first use and
then patched when the files change. Every index is built here first, then the files are edited, removed
and added outside knowtk, and each answer of the patched catalog must equal a fresh store's; a second
store on the same state (the stored snapshot a new process opens) must answer alike too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import knowtk
from tests.helpers import copy_demo, record_text, records_built

VOLATILE = ("freshness", "queriedAt")

RECORDS_ARGS: list[dict[str, Any]] = [
    {"limit": 500},
    {"limit": 500, "lifecycle": "all"},
    {"limit": 500, "lifecycle": "superseded"},
    {"limit": 500, "kind": ["claim"]},
    {"limit": 500, "type": ["decision"], "lifecycle": "all"},
    {"limit": 500, "tag": ["search"]},
    {"limit": 500, "tag": ["patched"], "lifecycle": "all"},
    {"limit": 500, "scope": ["claims"], "kind": ["claim"]},
    {"limit": 500, "since": "2025-10-01", "until": "2026-03-31", "timeField": "recorded_at"},
    {"limit": 500, "kind": ["claim"], "since": "2025-01-01", "timeField": "recorded_at", "lifecycle": "all"},
]
KNOWL_ARGS: list[dict[str, Any]] = [
    {"limit": 50},
    {"limit": 50, "status": "all"},
    {"limit": 50, "tags": ["search"]},
    {"limit": 50, "tags": ["patched"], "status": "all"},
    {"limit": 50, "category": "decision", "status": "all"},
    {"limit": 50, "asOf": "2026-01-15"},
    {"limit": 50, "asOf": "2026-02-20", "status": "all", "tags": ["search"]},
]


def _answers(store: knowtk.Store) -> list[Any]:
    out = []
    for args in RECORDS_ARGS:
        out.append(_stable(store.call("knowledge_records", args)))
    for args in KNOWL_ARGS:
        out.append(_stable(store.call("knowl_query", args)))
    return out


def _stable(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key not in VOLATILE}


def _edit(path: Path, change: Any) -> None:
    text = path.read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    change(meta)
    path.write_text(record_text(meta, body), encoding="utf-8")


def _claims(root: Path) -> list[Path]:
    return sorted((root / "claims").glob("*.md"))


def test_a_patched_catalog_answers_as_a_fresh_store(tmp_path: Path) -> None:
    root = copy_demo(tmp_path / "demo")
    store = knowtk.open_store(root, state_dir=tmp_path / "state")
    before = _answers(store)  # builds every index of the catalog
    assert any(a.get("total") for a in before[: len(RECORDS_ARGS)])

    claims = _claims(root)
    _edit(claims[0], lambda m: m.update(tags=[*(m.get("tags") or []), "patched"]))
    _edit(claims[1], lambda m: m.update(tags=["patched"], recorded_at="2026-02-01"))
    _edit(claims[2], lambda m: m.update(type="decision", category="decision"))
    claims[3].unlink()
    _edit(claims[4], lambda m: m.update(status="withdrawn", tags=["patched", "search"]))
    (root / "claims" / "new-patched.md").write_text(
        record_text(
            {
                "id": "new-patched",
                "kind": "claim",
                "type": "decision",
                "title": "A record added while the catalog was built",
                "tags": ["patched", "search"],
                "recorded_at": "2026-01-10",
            },
            "Added outside knowtk.\n",
        ),
        encoding="utf-8",
    )

    patched = _answers(store)
    assert patched != before  # the edits show
    fresh = knowtk.open_store(root, state_dir=tmp_path / "fresh")
    assert patched == _answers(fresh)
    fresh.close()
    store.close()

    reopened = knowtk.open_store(root, state_dir=tmp_path / "state")  # the stored snapshot, as a new process
    assert _answers(reopened) == patched
    reopened.close()


def test_the_inventory_of_a_stored_snapshot_builds_only_the_records_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_demo(tmp_path / "demo")
    pages = [{**args, "limit": 1} for args in RECORDS_ARGS if "since" not in args]
    with knowtk.open_store(root, state_dir=tmp_path / "state") as first:
        want = [_stable(first.call("knowledge_records", args)) for args in pages]
    built = records_built(monkeypatch)
    with knowtk.open_store(root, state_dir=tmp_path / "state") as store:
        got = [_stable(store.call("knowledge_records", args)) for args in pages]
    assert got == want
    shown = {row["path"] for answer in got for row in answer["rows"]}
    assert shown and set(built) <= shown  # a filter on facets builds no record it does not show


def test_knowl_without_a_query_or_at_an_instant_builds_only_the_records_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored snapshot's newest order and recorded_at instants come from the temporal projection: the same
    answers as built records give, files edited since the stored image included."""
    root = copy_demo(tmp_path / "demo")
    asked = [
        {"limit": 3},
        {"limit": 3, "status": "all"},
        {"limit": 3, "asOf": "2026-01-15"},
        {"limit": 3, "asOf": "2026-02-20", "status": "all"},
        {"limit": 3, "asOf": "2026-02-20", "status": "superseded"},
    ]
    with knowtk.open_store(root, state_dir=tmp_path / "state") as first:
        first.call("knowledge_timeline", {"timeField": "recorded_at"})  # the stored image, the temporal projection
        first.call("knowl_query", {"query": "search", "limit": 1})  # the keyword projections
    claims = _claims(root)
    _edit(claims[0], lambda m: m.update(recorded_at="2026-12-01"))  # now the newest
    _edit(claims[1], lambda m: m.pop("recorded_at", None))  # now undated: listed last
    with knowtk.open_store(root, state_dir=tmp_path / "fresh") as fresh:
        want = [_stable(fresh.call("knowl_query", args)) for args in asked]
        snap = fresh.snapshot()
        # a replacement no date tool shows (withdrawn) is not in the temporal projection: its record says its date
        hidden = {snap.records[by].path for by in snap.superseded_by.values() if by in snap.unavailable_inactive}
    built = records_built(monkeypatch)
    with knowtk.open_store(root, state_dir=tmp_path / "state") as store:
        got = [_stable(store.call("knowl_query", args)) for args in asked]
    assert got == want
    assert want[0]["results"][0]["id"] == yaml.safe_load(claims[0].read_text().split("---\n")[1])["id"]
    shown = {item["path"] for answer in got for item in answer["results"] if item.get("path")}
    edited = {p.relative_to(root).as_posix() for p in claims[:2]}
    assert built and set(built) <= shown | edited | hidden  # the page's records, the files the scan read again


def test_knowl_newest_order_patched_in_a_process_that_read_it_from_the_temporal_projection(tmp_path: Path) -> None:
    """A stored snapshot's newest order, read from the temporal projection, is patched from the changed records
    themselves when files change in the same process: the answers stay those of a fresh store."""
    root = copy_demo(tmp_path / "demo")
    asked = [{"limit": 3}, {"limit": 3, "asOf": "2026-01-15"}, {"limit": 3, "asOf": "2026-12-02", "status": "all"}]
    with knowtk.open_store(root, state_dir=tmp_path / "state") as first:
        first.call("knowledge_timeline", {"timeField": "recorded_at"})
        first.call("knowl_query", {"query": "search", "limit": 1})
    with knowtk.open_store(root, state_dir=tmp_path / "state") as store:  # a new process: the stored snapshot
        before = [_stable(store.call("knowl_query", args)) for args in asked]  # the order read from the projection
        claims = _claims(root)
        _edit(claims[0], lambda m: m.update(recorded_at="2026-12-01"))  # now the newest
        _edit(claims[1], lambda m: m.pop("recorded_at", None))  # now undated
        got = [_stable(store.call("knowl_query", args)) for args in asked]
    with knowtk.open_store(root, state_dir=tmp_path / "fresh") as fresh:
        want = [_stable(fresh.call("knowl_query", args)) for args in asked]
    assert got == want and got != before
    assert got[0]["results"][0]["id"] == yaml.safe_load(claims[0].read_text().split("---\n")[1])["id"]
