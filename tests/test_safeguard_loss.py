"""Safeguards are the store's memory: restored from their journal, or their loss refused loudly."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

import knowtk
from knowtk.state import JOURNAL_FILE
from tests.helpers import StoreBuilder, codes


def ids(res: dict) -> list[str]:
    return sorted(h["id"] for h in res["hits"])


def remembered(builder: StoreBuilder, **kwargs) -> knowtk.Store:
    """A store that has seen a withdrawal (w) and a supersession (old -> new), then met stale copies of both."""
    builder.page("a", "Zebra")
    builder.page("w", "Zebra w", status="withdrawn")
    builder.page("new", "Current wording")
    builder.page("old", "Zebra old", revision=2, status="superseded", superseded_by="new")
    store = builder.open(**kwargs)
    assert ids(store.grep("zebra").to_dict()) == ["a", "new"]
    store.close()
    builder.page("w", "Zebra w")  # a stale copy presents both as active again
    builder.page("old", "Zebra old", revision=2)
    return builder.open(**kwargs)


def assert_guarded(store: knowtk.Store) -> None:
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert ids(res) == ["a", "new"]
    assert codes(res) == ["stale_revision", "stale_withdrawn"]


def state_file(builder: StoreBuilder) -> Path:
    return builder.root / ".knowtk" / "state.sqlite"


def no_deletion_advice(exc: BaseException) -> None:
    text = str(exc).lower()
    assert "delete" not in text and "remove" not in text and "rm -" not in text


def sql(path: Path, *statements: str) -> None:
    con = sqlite3.connect(path)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()


def test_every_safeguard_goes_to_the_journal_and_the_stale_copies_stay_overruled(builder: StoreBuilder) -> None:
    store = remembered(builder)
    assert_guarded(store)
    lines = (builder.root / ".knowtk" / JOURNAL_FILE).read_text().splitlines()
    assert '"format": "knowtk-safeguards"' in lines[0]
    assert any('"w": "w"' in line for line in lines) and any('"g": "old"' in line for line in lines)
    assert store.check()["ok"] is True


@pytest.mark.parametrize(
    "damage",
    [
        "DROP TABLE keyword_withdrawals_v1",
        "DROP TABLE lifecycle_guards_v1",
        "DELETE FROM keyword_withdrawals_v1",
        "DELETE FROM lifecycle_guards_v1",
    ],
)
def test_a_dropped_or_emptied_safeguard_table_is_restored_from_the_journal(builder: StoreBuilder, damage: str) -> None:
    store = remembered(builder)
    assert_guarded(store)
    sql(state_file(builder), damage)
    assert_guarded(store)  # this process notices the change and restores
    sql(state_file(builder), damage)
    fresh = builder.open()  # so does a new one
    assert_guarded(fresh)
    assert any("restored" in r or "recreated" in r for r in fresh.engine.safeguards.repairs)
    assert fresh.check()["ok"] is True


@pytest.mark.parametrize("how", ["truncated", "deleted", "garbage"])
def test_a_lost_state_file_is_rebuilt_with_its_safeguards_from_the_journal(builder: StoreBuilder, how: str) -> None:
    store = remembered(builder)
    store_id = store.engine.state.store_id
    store.close()
    path = state_file(builder)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if how == "truncated":
        path.write_bytes(b"")
    elif how == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"not sqlite at all " * 300)
    store = builder.open()
    assert_guarded(store)
    assert store.engine.state.store_id == store_id  # the identity comes back with the safeguards
    if how == "garbage":
        assert [p.name for p in path.parent.iterdir() if ".damaged-" in p.name]  # kept aside, never deleted
    assert store.check()["ok"] is True


def test_a_lost_journal_is_written_again_from_the_state(builder: StoreBuilder) -> None:
    store = remembered(builder)
    journal = builder.root / ".knowtk" / JOURNAL_FILE
    journal.unlink()
    assert_guarded(store)
    assert journal.exists() and '"w": "w"' in journal.read_text()
    assert_guarded(builder.open())


def test_safeguards_lost_with_their_journal_are_refused_until_accepted(builder: StoreBuilder) -> None:
    store = remembered(builder)
    store.close()
    (builder.root / ".knowtk" / JOURNAL_FILE).unlink()
    sql(state_file(builder), "DELETE FROM keyword_withdrawals_v1")
    store = builder.open()
    with pytest.raises(knowtk.StateError) as refused:
        store.grep("zebra")
    message = str(refused.value)
    assert "1 withdrawals" not in message and "0 withdrawals and 1 supersession guards where 2" in message
    assert "accept_safeguard_loss" in message and "knowtk state accept-loss" in message
    no_deletion_advice(refused.value)
    with pytest.raises(knowtk.StateError):  # every tool, every time
        store.records()
    report = store.check()
    assert not report["ok"] and report["unrepaired"]
    accepted = store.accept_safeguard_loss()
    assert accepted["accepted"] and accepted["guards"] == 1 and accepted["withdrawals"] == 0
    res = store.call("knowledge_grep", {"query": "zebra"})
    assert ids(res) == ["a", "new", "w"]  # the lost withdrawal no longer binds; the guard still does
    assert builder.open().grep("zebra")["total"] == 3  # and the acceptance is durable


def test_a_damaged_journal_is_refused_and_accepting_keeps_every_readable_line(builder: StoreBuilder) -> None:
    store = remembered(builder)
    store.close()
    journal = builder.root / ".knowtk" / JOURNAL_FILE
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    store = builder.open()
    with pytest.raises(knowtk.StateError, match="journal cannot be read") as refused:
        store.grep("zebra")
    no_deletion_advice(refused.value)
    store.accept_safeguard_loss()
    assert_guarded(store)
    assert "{not json" not in journal.read_text()


def test_a_torn_last_journal_line_is_ignored(builder: StoreBuilder) -> None:
    store = remembered(builder)
    store.close()
    journal = builder.root / ".knowtk" / JOURNAL_FILE
    with journal.open("a") as f:
        f.write('{"w": "half-writ')  # a crash in the middle of an append: its transaction never committed
    assert_guarded(builder.open())


def test_an_unreadable_state_without_journal_is_refused_until_accepted(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    folder = builder.root / ".knowtk"
    folder.mkdir()
    (folder / "state.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(knowtk.StateError) as refused:
        builder.open()
    assert "accept_safeguard_loss" in str(refused.value)
    no_deletion_advice(refused.value)
    store = builder.open(accept_safeguard_loss=True)
    assert store.grep("zebra")["total"] == 1
    assert [p for p in folder.iterdir() if ".damaged-" in p.name]


def test_a_state_serves_one_store(make_builder, tmp_path: Path) -> None:
    one, two = make_builder("one"), make_builder("two")
    one.page("a", "Zebra")
    two.page("b", "Zebra")
    shared = tmp_path / "state"
    assert one.open(state_dir=shared).grep("zebra")["total"] == 1
    with pytest.raises(knowtk.StateError, match="belongs to the store") as refused:
        two.open(state_dir=shared)
    no_deletion_advice(refused.value)
    # the journal remembers its store even when state.sqlite is gone
    (shared / "state.sqlite").unlink()
    with pytest.raises(knowtk.StateError, match="belongs to the store"):
        two.open(state_dir=shared)
    assert one.open(state_dir=shared).grep("zebra")["total"] == 1


def test_a_store_moved_with_its_dot_knowtk_keeps_its_state(builder: StoreBuilder, tmp_path: Path) -> None:
    store = remembered(builder)
    store.close()
    moved = tmp_path / "moved"
    os.rename(builder.root, moved)
    builder.root = moved
    assert_guarded(builder.open())


def test_a_moved_store_with_an_outside_state_is_rebound_explicitly(make_builder, tmp_path: Path) -> None:
    one = make_builder("one")
    one.page("a", "Zebra")
    state = tmp_path / "state"
    one.open(state_dir=state).close()
    moved = tmp_path / "moved"
    os.rename(one.root, moved)
    with pytest.raises(knowtk.StateError, match="rebind_state=True"):
        knowtk.open_store(moved, state_dir=state)
    assert knowtk.open_store(moved, state_dir=state, rebind_state=True).grep("zebra")["total"] == 1
    assert knowtk.open_store(moved, state_dir=state).grep("zebra")["total"] == 1


def test_a_safeguard_write_that_fails_fails_the_query(builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    builder.page("a", "Zebra")
    store = builder.open()
    assert store.grep("zebra")["total"] == 1
    builder.page("w", "Zebra w", status="withdrawn")

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("knowtk.state.SafeguardJournal.append", full)
    with pytest.raises(knowtk.StateError, match="could not record 1 safeguards"):
        store.grep("zebra")
    assert "w" not in store.engine.safeguards.withdrawn  # nothing remembered that is not on disk
    with sqlite3.connect(state_file(builder)) as con:
        assert con.execute("SELECT count(*) FROM keyword_withdrawals_v1").fetchone()[0] == 0
    monkeypatch.undo()
    assert ids(store.grep("zebra").to_dict()) == ["a"]
    with sqlite3.connect(state_file(builder)) as con:
        assert con.execute("SELECT id FROM keyword_withdrawals_v1").fetchall() == [("w",)]
    builder.page("w", "Zebra w")
    assert_ids = ids(builder.open().grep("zebra").to_dict())
    assert assert_ids == ["a"]


def test_a_database_write_that_fails_fails_the_query_too(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder.page("a", "Zebra")
    store = builder.open()
    store.grep("zebra")
    builder.page("w", "Zebra w", status="withdrawn")
    trigger = "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    sql(state_file(builder), f"CREATE TRIGGER no_w BEFORE INSERT ON keyword_withdrawals_v1 {trigger}")
    with pytest.raises(knowtk.StateError, match="disk says no"):
        store.grep("zebra")
    assert "w" not in store.engine.safeguards.withdrawn
    sql(state_file(builder), "DROP TRIGGER no_w")
    assert ids(store.grep("zebra").to_dict()) == ["a"]
