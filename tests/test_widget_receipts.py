"""The widgets' write actions after Confirm: the receipt stays (with its diff and ``indexed``), the selection stays,
Undo puts the bytes back with a receipt of its own; a read-only store or widget offers no action at all."""

from __future__ import annotations

from pathlib import Path

import knowtk
from knowtk.notebook import ChainWidget, GrepWidget, LookupWidget, RecordActions
from tests.helpers import DEMO, StoreBuilder, markdown_digest


def _store(builder: StoreBuilder) -> knowtk.Store:
    builder.write("decisions/old.md", {"id": "old", "kind": "claim", "title": "Old budget"}, "Budget\n")
    builder.write("decisions/new.md", {"id": "new", "kind": "claim", "title": "New budget"}, "Budget\n")
    builder.write("decisions/other.md", {"id": "other", "kind": "claim", "title": "Other budget"}, "Budget\n")
    return builder.open()


def _withdraw(actions: RecordActions, reason: str = "duplicate") -> dict:
    actions.action.value = "Withdraw"
    actions.reason.value = reason
    assert actions.preview() is not None
    receipt = actions.confirm()
    assert receipt is not None
    return receipt


def test_grep_keeps_the_selection_and_the_receipt_and_undo_restores_the_bytes(builder: StoreBuilder) -> None:
    store = _store(builder)
    path = builder.root / "decisions/new.md"
    original = path.read_bytes()
    grep = GrepWidget(store, "budget")
    grep.rows.select("new")
    actions = grep.actions.children[0]
    receipt = _withdraw(actions)
    # the record left the active answer: nothing else is selected in its place, and its receipt stays in view
    assert "new" not in [h["id"] for h in grep.result["hits"]]
    assert grep.select.value is None and grep.rows.selected is None
    assert actions in grep.changed.children
    shown = actions.output.value
    assert "SAVED" in shown and receipt["id"] in shown and "+status: withdrawn" in shown
    assert "decisions/new.md" in shown and "<b>indexed</b>" in shown  # the search after the save indexed it
    assert not actions.undo_button.disabled and actions.undo_button.layout.display is None
    undone = actions.undo()
    assert undone is not None and undone["operation"] == "undo" and undone["id"] != receipt["id"]
    assert path.read_bytes() == original
    assert "UNDONE" in actions.output.value and undone["id"] in actions.output.value
    assert "-status: withdrawn" in actions.output.value
    # back in the answer, selected again, under its row with the same panel (the undo's receipt still shown)
    assert grep.select.value == "new" and grep.rows.selected == "new"
    assert grep.actions.children[0] is actions and grep.changed.children == ()
    assert [r["operation"] for r in store.history("new")["receipts"]] == ["undo", "withdraw"]


def test_grep_keeps_a_selection_that_stays_in_the_answer(builder: StoreBuilder) -> None:
    store = _store(builder)
    grep = GrepWidget(store, "budget")
    grep.rows.select("other")
    actions = grep.actions.children[0]
    actions.fields.value = "summary: The other one"
    actions.preview()
    receipt = actions.confirm()
    assert receipt is not None
    assert grep.select.value == "other" and grep.actions.children[0] is actions
    assert receipt["id"] in actions.output.value and "+summary: The other one" in actions.output.value


def test_chain_and_lookup_widgets_keep_the_receipt(builder: StoreBuilder) -> None:
    store = _store(builder)
    chain = ChainWidget(store)
    chain.record.options = [*chain.record.options, "old"]
    chain.record.value = "old"
    actions = chain.actions.children[0]
    actions.action.value = "Supersede by…"
    actions.by.value = "new"
    actions.preview()
    receipt = actions.confirm()
    assert receipt is not None and chain.actions.children[0] is actions and receipt["id"] in actions.output.value
    assert set(chain.edges["from_id"]) == {"old"}  # the chain was drawn again
    actions.undo()
    assert store.record("old")["record"]["lifecycle"] == "active"
    lookup = LookupWidget(store, "other")
    panel = lookup.actions.children[0]
    receipt = _withdraw(panel)
    assert lookup.status == "missing" and panel in lookup.changed.children and receipt["id"] in panel.output.value
    panel.undo()
    assert lookup.status == "found" and lookup.actions.children[0] is panel and lookup.changed.children == ()


def test_undo_is_refused_when_the_file_changed_since(builder: StoreBuilder) -> None:
    store = _store(builder)
    actions = RecordActions(store, "new")
    _withdraw(actions)
    path = builder.root / "decisions/new.md"
    edited = path.read_bytes() + b"edited meanwhile\n"
    path.write_bytes(edited)
    assert actions.undo() is None
    assert "publication_conflict" in actions.output.value and path.read_bytes() == edited


def test_a_read_only_store_or_widget_offers_no_change_action(builder: StoreBuilder, tmp_path: Path) -> None:
    before = markdown_digest(DEMO)
    with knowtk.open_store(DEMO, state_dir=tmp_path / "state", read_only=True) as store:
        grep = GrepWidget(store, "vector index")
        assert grep.select.value is not None and grep.actions.children == ()
        chain = ChainWidget(store, "dec-2025-030")
        assert chain.actions.children == ()
        lookup = LookupWidget(store, "dec-2026-021")
        assert lookup.status == "found" and lookup.actions.children == ()
        panel = RecordActions(store, "dec-2026-021")
        assert "read-only" in panel.html() or "read-only" in panel.children[0].value
    assert markdown_digest(DEMO) == before
    writable = _store(builder)
    grep = GrepWidget(writable, "budget", read_only=True)
    assert grep.select.value is not None and grep.actions.children == ()
    assert ChainWidget(writable, "old", read_only=True).actions.children == ()
    assert LookupWidget(writable, "old", read_only=True).actions.children == ()


def test_an_edit_that_changes_nothing_says_so_and_offers_no_undo(builder: StoreBuilder) -> None:
    store = _store(builder)
    actions = RecordActions(store, "new")
    actions.fields.value = "title: New budget"  # what the file says already
    shown = actions.preview()
    assert shown is not None and not shown["changes"] and actions.confirm() is None  # nothing to confirm
    actions.fields.value = "summary: S"
    actions.preview()
    actions.confirm()
    assert not actions.undo_button.disabled
    actions.preview()  # a new preview: the last receipt's Undo is no longer offered
    assert actions.undo_button.disabled and actions.undo_button.layout.display == "none"
