"""The notebook's write actions: preview shows the change and writes nothing, confirm writes on the previewed
hash and shows the receipt, a file changed in between is refused, and the chain and grep widgets carry them."""

from __future__ import annotations

import hashlib

import knowtk
from knowtk.notebook import ChainWidget, GrepWidget, RecordActions
from tests.helpers import StoreBuilder, markdown_digest


def _store(builder: StoreBuilder) -> knowtk.Store:
    builder.write("decisions/old.md", {"id": "old", "kind": "claim", "title": "Old budget"}, "Budget\n")
    builder.write("decisions/new.md", {"id": "new", "kind": "claim", "title": "New budget"}, "Budget\n")
    return builder.open()


def test_preview_writes_nothing_and_confirm_leaves_a_receipt(builder: StoreBuilder) -> None:
    store = _store(builder)
    w = RecordActions(store, "old")
    w.action.value = "Supersede by…"
    w.by.value = "new"
    before = markdown_digest(builder.root)
    shown = w.preview()
    assert shown is not None and "+status: superseded" in shown["records"][0]["diff"]
    assert "+superseded_by: new" in w.output.value and not w.confirm_button.disabled
    assert markdown_digest(builder.root) == before  # a preview writes nothing
    receipt = w.confirm()
    assert receipt is not None and receipt["operation"] == "supersede"
    assert "receipt" in w.output.value and receipt["id"] in w.output.value
    assert store.record("old")["record"]["supersededBy"] == "new"
    assert w.confirm() is None and "Preview the change first" in w.output.value  # one confirm per preview


def test_a_file_changed_after_the_preview_is_refused_at_confirm(builder: StoreBuilder) -> None:
    store = _store(builder)
    w = RecordActions(store, "new")
    w.action.value = "Withdraw"
    w.reason.value = "duplicate"
    assert w.preview() is not None
    path = builder.root / "decisions/new.md"
    edited = path.read_bytes() + b"edited meanwhile\n"
    path.write_bytes(edited)
    assert w.confirm() is None
    assert "publication_conflict" in w.output.value and hashlib.sha256(edited).hexdigest() in w.output.value
    assert path.read_bytes() == edited


def test_edit_fields_and_reinstate_a_withdrawn_record(builder: StoreBuilder) -> None:
    store = _store(builder)
    w = RecordActions(store, "new")
    w.fields.value = "summary: A summary\ntags: [budget]"
    w.preview()
    w.confirm()
    assert store.record("new")["record"]["tags"] == ["budget"]
    w.action.value = "Withdraw"
    w.reason.value = "wrong"
    w.preview()
    w.confirm()
    assert store.lookup("new")["status"] == "missing"
    back = RecordActions(store, "new")  # the record no query returns: its hash comes from the snapshot
    back.action.value = "Reinstate"
    back.reason.value = "withdrawn by mistake"
    shown = back.preview()
    assert shown is not None and shown["lifts"] == ["new"] and "lifts the safeguard" in back.output.value
    back.confirm()
    assert store.lookup("new")["status"] == "found"
    w.fields.value = "due_at: soon"
    w.action.value = "Edit fields"
    assert w.preview() is None and "record.due_at" in w.output.value and w.confirm_button.disabled


def test_the_chain_and_grep_widgets_offer_the_actions(builder: StoreBuilder) -> None:
    store = _store(builder)
    chain = ChainWidget(store)
    assert chain.actions.children == ()
    grep = GrepWidget(store, "budget")
    grep.rows.select("old")
    actions = grep.actions.children[0]
    assert isinstance(actions, RecordActions) and actions.id == "old"
    actions.action.value = "Supersede by…"
    actions.by.value = "new"
    actions.preview()
    actions.confirm()
    assert [h["id"] for h in grep.result["hits"]] == ["new"]  # the search ran again after the save
    chain.record.options = [*chain.record.options, "old"]
    chain.record.value = "old"
    assert isinstance(chain.actions.children[0], RecordActions) and chain.actions.children[0].id == "old"


def test_history_plots_receipts_on_a_date_axis(builder: StoreBuilder) -> None:
    import matplotlib.pyplot as plt

    store = _store(builder)
    w = RecordActions(store, "old")
    w.action.value = "Supersede by…"
    w.by.value = "new"
    w.preview()
    w.confirm()
    rec = store.snapshot().records["old"]
    store.reinstate("old", reason="mistake", expected_sha256=rec.sha256)
    ax = store.history("old").plot()
    gids = sorted(str(line.get_gid()).split(":")[0] for line in ax.get_lines())
    assert gids == ["reinstate", "supersede"] and ax.get_title() == "Changes of old"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["old"]
    plt.close("all")
    empty = store.history("new").plot()  # no receipt names "new" (it replaced "old" as it was): said so
    assert [t.get_text() for t in empty.texts] == ["no receipt yet"]
    plt.close("all")


def test_the_lookup_widget_offers_the_actions(builder: StoreBuilder) -> None:
    from knowtk.notebook import LookupWidget

    store = _store(builder)
    w = LookupWidget(store, "new")
    actions = w.actions.children[0]
    assert isinstance(actions, RecordActions) and actions.id == "new"
    actions.action.value = "Withdraw"
    actions.reason.value = "entered twice"
    actions.preview()
    assert actions.confirm() is not None
    assert w.status == "missing"  # looked up again after the save


def test_a_gold_run_before_and_after_a_mutation_is_one_call(tmp_path) -> None:
    import shutil

    from knowtk.lab import compare_mutation, load_gold
    from tests.helpers import DEMO, REPO

    work = tmp_path / "demo"
    shutil.copytree(DEMO, work, ignore=shutil.ignore_patterns(".knowtk"))
    store = knowtk.open_store(work)
    gold = load_gold(REPO / "data/fixtures/gold/demo.yaml")
    rec = store.record("dec-2026-021")["record"]
    frame = compare_mutation(
        gold, store, "withdraw", "dec-2026-021", variants=["default"], reason="test", expected_sha256=rec["sha256"]
    )
    assert frame.attrs["receipt"]["operation"] == "withdraw"
    row = frame.set_index("case").loc["vector-index-decision"]
    assert row["change"] == "worse" and row["ndcg@k_delta"] < 0
    assert frame.iloc[0]["change"] == "worse"  # changed cases first


def test_a_chains_revisions_on_a_date_axis(builder: StoreBuilder) -> None:
    import matplotlib.pyplot as plt

    store = _store(builder)
    old = store.record("old")["record"]["sha256"]
    store.supersede("old", by="new", expected_sha256=old)
    new = store.record("new")["record"]["sha256"]
    store.update("new", {"summary": "s"}, expected_sha256=new)
    chain = ChainWidget(store, "old")
    frame = chain.history()
    assert list(zip(frame["operation"], frame["id"], strict=True)) == [("update", "new"), ("supersede", "old")]
    ax = chain.plot_history()
    assert ax.get_title() == "Changes on the chain of old"
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == ["new", "old"]
    plt.close("all")


def _shown(w: RecordActions) -> dict[str, bool]:
    """Which inputs the panel shows (their synced layout), by name."""
    return {name: getattr(w, name).layout.display != "none" for name in ("fields", "by", "reason")}


def test_the_panel_shows_only_what_the_chosen_action_takes(builder: StoreBuilder) -> None:
    store = _store(builder)
    w = RecordActions(store, "old")
    assert w.action.value == "Edit fields" and _shown(w) == {"fields": True, "by": False, "reason": False}
    w.action.value = "Supersede by…"
    assert _shown(w) == {"fields": False, "by": True, "reason": False}  # the tool takes no reason for supersede
    w.action.value = "Withdraw"
    assert _shown(w) == {"fields": False, "by": False, "reason": True}
    w.by.value = "new"  # a value typed into a hidden input is not sent
    w.reason.value = "duplicate"
    shown = w.preview()
    assert shown is not None and shown["operation"] == "withdraw" and "superseded_by" not in shown["records"][0]["diff"]


def test_reinstate_is_offered_only_for_a_withdrawn_or_superseded_record(builder: StoreBuilder) -> None:
    store = _store(builder)
    active = RecordActions(store, "old")
    assert list(active.action.options) == ["Edit fields", "Supersede by…", "Withdraw"]
    active.action.value = "Supersede by…"
    active.by.value = "new"
    active.preview()
    assert active.confirm() is not None
    # saved: the same panel now offers the way back, and shows its reason
    assert list(active.action.options) == ["Edit fields", "Reinstate"]
    assert active.action.value == "Edit fields" and _shown(active)["fields"]
    superseded = RecordActions(store, "old")
    assert list(superseded.action.options) == ["Edit fields", "Reinstate"]
    superseded.action.value = "Reinstate"
    assert _shown(superseded) == {"fields": False, "by": False, "reason": True}
    withdrawn = RecordActions(store, "new")
    withdrawn.action.value = "Withdraw"
    withdrawn.reason.value = "entered twice"
    withdrawn.preview()
    withdrawn.confirm()
    assert list(RecordActions(store, "new").action.options) == ["Edit fields", "Reinstate"]
    superseded.reason.value = "superseded by mistake"
    superseded.preview()
    assert superseded.confirm() is not None
    assert list(RecordActions(store, "old").action.options) == ["Edit fields", "Supersede by…", "Withdraw"]


def test_a_safeguarded_record_whose_file_says_active_is_offered_reinstate(builder: StoreBuilder) -> None:
    store = _store(builder)
    sha = store.record("new")["record"]["sha256"]
    store.withdraw("new", reason="wrong", expected_sha256=sha)
    path = builder.root / "decisions/new.md"
    path.write_text(path.read_text().replace("status: withdrawn", "status: active"))  # put back by hand
    assert store.lookup("new")["status"] == "missing"  # the safeguard holds
    assert list(RecordActions(store, "new").action.options) == ["Edit fields", "Reinstate"]
