"""Undo and read-only stores: ``store.undo(receipt)`` puts every file back to its bytes (conflict-checked, judged,
with its own receipt), ``reinstate`` removes a status line a withdrawal added, ``read_only=True`` refuses writes."""

from __future__ import annotations

from pathlib import Path

import pytest

import knowtk
from tests.helpers import DEMO, StoreBuilder, markdown_digest, sha256_hex

GPU_REPORT = "notes/gpu-usage-report.md"


def test_withdraw_then_undo_gives_the_bytes_back_and_its_own_receipt(demo_copy: Path) -> None:
    path = demo_copy / GPU_REPORT
    original = path.read_bytes()
    assert b"\nstatus:" not in original  # the demo record has no status line: active by default
    with knowtk.open_store(demo_copy) as store:
        rid = "note-gpu-usage-report"
        gone = store.withdraw(rid, reason="test", expected_sha256=sha256_hex(original))
        assert store.lookup(rid)["status"] == "missing"
        back = store.undo(gone)
        assert path.read_bytes() == original
        receipt = back["receipt"]
        assert receipt["operation"] == "undo" and receipt["reason"] == f"undo of {gone['receipt']['id']}"
        assert receipt["records"][0]["sha256After"] == sha256_hex(original)
        assert store.lookup(rid)["status"] == "found"  # the withdrawal's safeguard lifted
        assert rid not in store.engine.safeguards.withdrawn
        # an undo can be undone: withdrawn again, its safeguard recorded again
        again = store.undo(back["receipt"]["id"])
        assert again["receipt"]["operation"] == "undo"
        assert b"status: withdrawn" in path.read_bytes()
        assert rid in store.engine.safeguards.withdrawn
        assert [r["operation"] for r in store.history(rid)["receipts"]] == ["undo", "undo", "withdraw"]


def test_reinstate_removes_the_status_line_the_withdrawal_added(demo_copy: Path) -> None:
    path = demo_copy / GPU_REPORT
    original = path.read_bytes()
    with knowtk.open_store(demo_copy) as store:
        rid = "note-gpu-usage-report"
        gone = store.withdraw(rid, reason="test", expected_sha256=sha256_hex(original))
        store.reinstate(rid, reason="by mistake", expected_sha256=gone["receipt"]["records"][0]["sha256After"])
        assert path.read_bytes() == original
        assert store.lookup(rid)["status"] == "found"


def test_reinstate_keeps_a_status_line_the_file_had(builder: StoreBuilder) -> None:
    fields = {"id": "dec-1", "kind": "claim", "type": "decision", "title": "One", "status": "active"}
    builder.write("decisions/dec-1.md", fields, "One\n")
    path = builder.root / "decisions/dec-1.md"
    before = path.read_bytes()
    with builder.open() as store:
        gone = store.withdraw("dec-1", reason="test", expected_sha256=sha256_hex(before))
        assert b"status: withdrawn" in path.read_bytes()
        store.reinstate("dec-1", reason="back", expected_sha256=gone["receipt"]["records"][0]["sha256After"])
        assert path.read_bytes() == before


def test_undo_of_a_reinstate_brings_the_dead_end_back(demo_copy: Path) -> None:
    """The review notebook's fix undone: the superseded record and its guard are back, bytes and issue included."""
    with knowtk.open_store(demo_copy) as store:
        rec = store.snapshot().records["dec-2025-030"]
        before = (demo_copy / rec.path).read_bytes()
        fixed = store.reinstate("dec-2025-030", reason="never decided", expected_sha256=rec.sha256)
        assert "dec-2025-030" in [h["id"] for h in store.grep("GPU budget")["hits"]]
        store.undo(fixed["receipt"]["id"])
        assert (demo_copy / rec.path).read_bytes() == before
        assert "dec-2025-030" in store.engine.safeguards.superseded
        assert "dec-2025-030" not in [h["id"] for h in store.grep("GPU budget")["hits"]]


def test_undo_of_a_create_removes_the_file_and_update_restores_bytes(demo_copy: Path) -> None:
    with knowtk.open_store(demo_copy) as store:
        made = store.create("dec-2026-777", {"kind": "claim", "type": "decision", "title": "Seven"})
        created = demo_copy / made["receipt"]["records"][0]["path"]
        assert created.exists()
        store.undo(made)
        assert not created.exists()
        rec = store.record("dec-2026-021")["record"]
        before = (demo_copy / rec["path"]).read_bytes()
        changed = store.update("dec-2026-021", {"summary": "changed"}, expected_sha256=rec["sha256"])
        store.undo(changed["receipt"])
        assert (demo_copy / rec["path"]).read_bytes() == before


def test_undo_is_conflict_checked_and_judged(demo_copy: Path) -> None:
    with knowtk.open_store(demo_copy) as store:
        rec = store.record("dec-2026-021")["record"]
        path = demo_copy / rec["path"]
        changed = store.update("dec-2026-021", {"summary": "changed"}, expected_sha256=rec["sha256"])
        path.write_bytes(path.read_bytes() + b"\nedited by hand\n")
        edited = path.read_bytes()
        with pytest.raises(knowtk.PublicationConflict):
            store.undo(changed)
        assert path.read_bytes() == edited
        with pytest.raises(knowtk.InvalidArgument, match="receipt"):
            store.undo("rcpt-nothing")
        with pytest.raises(knowtk.InvalidArgument, match="receipt"):
            store.undo({"no": "id"})
        # a created record another one now depends on: removing it would break that one, so it is refused
        made = store.create("dec-2026-778", {"kind": "claim", "type": "decision", "title": "Base"})
        store.create(
            "dec-2026-779", {"kind": "claim", "type": "decision", "title": "On it", "depends_on": ["dec-2026-778"]}
        )
        with pytest.raises(knowtk.InvalidArgument):
            store.undo(made)
        assert (demo_copy / made["receipt"]["records"][0]["path"]).exists()


def test_a_read_only_store_refuses_every_write(tmp_path: Path) -> None:
    before = markdown_digest(DEMO)
    with knowtk.open_store(DEMO, state_dir=tmp_path / "state", read_only=True) as store:
        assert store.read_only
        rec = store.record("dec-2026-021")["record"]
        attempts = [
            lambda: store.withdraw("dec-2026-021", reason="x", expected_sha256=rec["sha256"]),
            lambda: store.update("dec-2026-021", {"summary": "x"}, expected_sha256=rec["sha256"]),
            lambda: store.create("dec-2026-900", {"kind": "claim", "title": "x"}),
            lambda: store.call(
                "knowledge_mutation",
                {"operation": "withdraw", "id": "dec-2026-021", "reason": "x", "expectedSha256": rec["sha256"]},
            ),
            lambda: store.preview("withdraw", "dec-2026-021", reason="x", expected_sha256=rec["sha256"]),
            lambda: store.undo("rcpt-anything"),
        ]
        for attempt in attempts:
            with pytest.raises(knowtk.StoreUnavailable, match="read-only"):
                attempt()
        assert store.grep("vector index")["total"] > 0  # reads answer as ever
        assert store.history()["total"] == 0
    assert markdown_digest(DEMO) == before
