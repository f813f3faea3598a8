"""knowledge_mutation: splice edits keep every byte, conflicts are refused, invalid records never written,
safeguards recorded before the files change and lifted only by reinstate, writes bounded to the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import knowtk
from knowtk.write import mutation
from tests.helpers import REPO, StoreBuilder, sha256_hex

HOSTILE = (
    b"---\r\n"
    b"id: dec-1   # the id, with a comment\r\n"
    b"kind: claim\r\n"
    b"type: decision\r\n"
    b"# a comment line between keys\r\n"
    b"title:  'Use SQLite'\r\n"
    b"tags: [ search,  storage ]\r\n"
    b"weird_key: {b: 1,  a: 2}\r\n"
    b"aliases:\r\n"
    b"    - first\r\n"
    b"    - second\r\n"
    b"revision: 1\r\n"
    b"---\r\n"
    b"# Body\r\n"
    b"\r\n"
    b"Text with trailing spaces   \r\n"
)


@pytest.fixture
def store(builder: StoreBuilder):
    builder.raw("decisions/dec-1.md", HOSTILE)
    builder.page("person-ada", "Ada Okafor", path="people/person-ada.md")
    builder.write("decisions/dec-2.md", {"id": "dec-2", "kind": "claim", "type": "decision", "title": "Two"}, "Two\n")
    s = builder.open()
    yield s
    s.close()


def test_update_changes_only_the_lines_of_changed_keys(store, builder):
    path = builder.root / "decisions/dec-1.md"
    res = store.update(
        "dec-1", {"title": "Use SQLite FTS5", "owner": "person-ada"}, expected_sha256=sha256_hex(HOSTILE)
    )
    after = path.read_bytes()
    before_lines, after_lines = HOSTILE.splitlines(True), after.splitlines(True)
    changed = [line for line in after_lines if line not in before_lines]
    assert changed == [b"title: Use SQLite FTS5\r\n", b"owner: person-ada\r\n"]
    assert [line for line in before_lines if line not in after_lines] == [b"title:  'Use SQLite'\r\n"]
    assert after.endswith(b"---\r\n# Body\r\n\r\nText with trailing spaces   \r\n")
    receipt = res["receipt"]
    assert res["written"] is True and receipt["operation"] == "update"
    assert receipt["records"] == [
        {
            "id": "dec-1",
            "path": "decisions/dec-1.md",
            "revisionBefore": 1,
            "revisionAfter": 1,
            "sha256Before": sha256_hex(HOSTILE),
            "sha256After": sha256_hex(after),
        }
    ]
    assert store.record("dec-1")["record"]["title"] == "Use SQLite FTS5"


def test_null_removes_a_key_and_restate_raises_the_revision(store, builder):
    path = builder.root / "decisions/dec-1.md"
    store.update("dec-1", {"weird_key": None}, expected_sha256=sha256_hex(HOSTILE), restate=True)
    after = path.read_bytes()
    assert b"weird_key" not in after and b"revision: 2\r\n" in after
    assert b"aliases:\r\n    - first\r\n    - second\r\n" in after
    assert store.record("dec-1")["record"]["revision"] == 2


def test_an_update_with_no_change_writes_nothing(store, builder):
    path = builder.root / "decisions/dec-1.md"
    stat = path.stat()
    res = store.update(
        "dec-1", {"title": "Use SQLite", "tags": ["search", "storage"]}, expected_sha256=sha256_hex(HOSTILE)
    )
    assert res["written"] is False and res["receipt"]["id"] is None
    assert path.read_bytes() == HOSTILE and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert store.history()["total"] == 0


def test_a_stale_hash_is_a_publication_conflict_naming_both(store, builder):
    path = builder.root / "decisions/dec-1.md"
    stale = "0" * 64
    with pytest.raises(knowtk.PublicationConflict) as err:
        store.update("dec-1", {"title": "X"}, expected_sha256=stale)
    assert err.value.path == "decisions/dec-1.md"
    assert err.value.expected == stale and err.value.actual == sha256_hex(HOSTILE)
    assert stale in str(err.value) and sha256_hex(HOSTILE) in str(err.value)
    assert path.read_bytes() == HOSTILE
    with pytest.raises(knowtk.InvalidArgument) as missing:
        store.call("knowledge_mutation", {"operation": "update", "id": "dec-1", "record": {"title": "X"}})
    assert missing.value.argument == "expectedSha256"


def test_create_refuses_an_existing_id_or_path(store, builder):
    with pytest.raises(knowtk.IdentityConflict) as err:
        store.create("dec-2", {"kind": "claim", "title": "again"})
    assert err.value.id == "dec-2" and err.value.path == "decisions/dec-2.md"
    with pytest.raises(knowtk.IdentityConflict):
        store.create("dec-9", {"kind": "claim"}, path="decisions/dec-2.md")
    res = store.create("dec-3", {"kind": "claim", "type": "decision", "title": "Three", "body": "# Three\n"})
    assert res["receipt"]["records"][0]["path"] == "decisions/dec-3.md"
    assert (builder.root / "decisions/dec-3.md").read_text() == (
        "---\nid: dec-3\nkind: claim\ntype: decision\ntitle: Three\n---\n# Three\n"
    )
    assert store.lookup("Three")["status"] == "found"


@pytest.mark.parametrize(
    ("record", "argument"),
    [
        ({"occurred_at": "March 4"}, "record.occurred_at"),
        ({"depends_on": ["no-such-record"]}, "record.depends_on"),
        ({"owner": "nobody-here"}, "record.owner"),
        ({"revision": 0}, "record.revision"),
        ({"kind": "novel"}, "record.kind"),
        ({"tags": 3}, "record.tags"),
    ],
)
def test_an_invalid_record_is_never_written(store, builder, record, argument):
    path = builder.root / "decisions/dec-1.md"
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.update("dec-1", record, expected_sha256=sha256_hex(HOSTILE))
    assert err.value.argument == argument
    assert path.read_bytes() == HOSTILE
    assert store.history()["total"] == 0


def test_create_needs_a_kind_and_valid_fields(store, builder):
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.create("dec-5", {"title": "no kind"}, path="decisions/dec-5.md")
    assert err.value.argument == "record.kind"
    assert not (builder.root / "decisions/dec-5.md").exists()


def test_lifecycle_keys_change_only_through_their_operations(store, builder):
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.update("dec-1", {"status": "withdrawn"}, expected_sha256=sha256_hex(HOSTILE))
    assert err.value.argument == "record.status"
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.create("dec-8", {"kind": "claim", "status": "withdrawn"})
    assert err.value.argument == "record.status"
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.create("dec-8", {"kind": "claim", "superseded_by": "dec-2"})
    assert err.value.argument == "record.superseded_by"
    assert not list(builder.root.rglob("dec-8.md"))


def test_supersede_writes_both_sides_and_a_cycle_is_refused(store, builder):
    d2 = sha256_hex((builder.root / "decisions/dec-2.md").read_bytes())
    res = store.supersede("dec-2", by="dec-4", expected_sha256=d2, record={"kind": "claim", "title": "Four"})
    records = res["receipt"]["records"]
    assert [r["id"] for r in records] == ["dec-2", "dec-4"]
    assert records[1]["sha256Before"] is None
    rec = store.record("dec-2")["record"]
    assert rec["lifecycle"] == "superseded" and rec["supersededBy"] == "dec-4"
    d4 = records[1]["sha256After"]
    with pytest.raises(knowtk.InvalidArgument) as err:  # dec-2 is superseded: it cannot replace dec-4
        store.supersede("dec-4", by="dec-2", expected_sha256=d4)
    assert err.value.argument == "by"
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.supersede("dec-4", by="missing-one", expected_sha256=d4)
    assert err.value.argument == "by"


def test_withdraw_records_its_safeguard_before_the_file_changes(store, builder):
    path = builder.root / "decisions/dec-1.md"
    journal = Path(store.state_path).parent / "safeguards.jsonl"
    seen = {}

    def hook(step: str) -> None:
        if step == "safeguards":
            seen["file"] = path.read_bytes()
            seen["journal"] = journal.read_text()
            raise KeyboardInterrupt  # the process is stopped here

    mutation.set_step_hook(hook)
    try:
        with pytest.raises(KeyboardInterrupt):
            store.withdraw("dec-1", reason="wrong", expected_sha256=sha256_hex(HOSTILE))
    finally:
        mutation.set_step_hook(None)
    assert seen["file"] == HOSTILE and '"w": "dec-1"' in seen["journal"]
    store.close()
    again = builder.open()  # the next open finishes the mutation the interruption left
    assert b"status: withdrawn\r\n" in path.read_bytes()
    assert again.lookup("dec-1")["status"] == "missing"
    assert again.history()["receipts"][0]["operation"] == "withdraw"
    again.close()


def test_only_reinstate_lifts_a_withdrawal(store, builder):
    path = builder.root / "decisions/dec-1.md"
    res = store.withdraw("dec-1", reason="wrong", expected_sha256=sha256_hex(HOSTILE))
    assert store.lookup("dec-1")["status"] == "missing"
    path.write_bytes(HOSTILE)  # put back to active by hand: stays withdrawn
    assert store.lookup("dec-1")["status"] == "missing"
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.reinstate("dec-1", reason="  ", expected_sha256=sha256_hex(HOSTILE))
    assert err.value.argument == "reason"
    back = store.reinstate("dec-1", reason="withdrawn by mistake", expected_sha256=sha256_hex(HOSTILE))
    assert back["receipt"]["reason"] == "withdrawn by mistake"
    assert store.lookup("dec-1")["status"] == "found"
    journal = (Path(store.state_path).parent / "safeguards.jsonl").read_text()
    lift = [json.loads(line) for line in journal.splitlines() if '"lift"' in line]
    assert lift == [{"lift": "dec-1", "what": "w", "receipt": back["receipt"]["id"], "at": back["receipt"]["at"]}]
    assert store.check()["ok"] is True
    store.close()
    reopened = builder.open()  # the lift holds in a new process too
    assert reopened.lookup("dec-1")["status"] == "found"
    assert [r["operation"] for r in reopened.history("dec-1")["receipts"]] == ["reinstate", "withdraw"]
    assert "+status: withdrawn" in reopened.diff("dec-1", a=sha256_hex(HOSTILE), b=res["receipt"]["id"])
    reopened.close()


@pytest.mark.parametrize(
    "path",
    ["../outside.md", "/etc/x.md", "a/../b.md", ".knowtk/x.md", "_drafts/x.md", "notes/x.txt", "state/x.md"],
)
def test_writes_stay_inside_the_store(builder, path):
    builder.page("p-1", "One")
    s = builder.open(state_dir=builder.root / "state")
    with pytest.raises(knowtk.InvalidArgument) as err:
        s.create("new-1", {"kind": "page"}, path=path)
    assert err.value.argument == "path"
    s.close()
    assert not (builder.root.parent / "outside.md").exists()


def test_a_symlink_is_never_written_through(builder, tmp_path):
    builder.page("p-1", "One")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, builder.root / "linked")
    s = builder.open()
    with pytest.raises(knowtk.InvalidArgument) as err:
        s.create("new-1", {"kind": "page"}, path="linked/new-1.md")
    assert err.value.argument == "path" and "symlink" in str(err.value)
    assert list(elsewhere.iterdir()) == []
    s.close()


def test_history_is_newest_first_with_paging_and_marked_indexed_after_a_query(store, builder):
    d2 = sha256_hex((builder.root / "decisions/dec-2.md").read_bytes())
    first = store.update("dec-2", {"summary": "one"}, expected_sha256=d2)
    second = store.update("dec-2", {"summary": "two"}, expected_sha256=first["receipt"]["records"][0]["sha256After"])
    page = store.history("dec-2", limit=1)
    assert page["total"] == 2 and page["nextOffset"] == 1
    assert page["receipts"][0]["id"] == second["receipt"]["id"]
    assert page["receipts"][0]["indexed"] is False
    store.grep("two")
    assert all(r["indexed"] for r in store.history("dec-2")["receipts"])
    frame = store.history().to_frame()
    assert list(frame["receipt"]) == [second["receipt"]["id"], first["receipt"]["id"]]
    assert str(frame["at"].dtype) == "datetime64[us, UTC]"
    assert "-summary: one" in store.diff("dec-2", a=first["receipt"]["id"])


def test_threads_racing_on_one_record_lose_no_write(store, builder):
    import threading

    d2 = sha256_hex((builder.root / "decisions/dec-2.md").read_bytes())
    outcomes: list[str] = []

    def write(n: int) -> None:
        try:
            store.update("dec-2", {"summary": f"writer {n}"}, expected_sha256=d2)
            outcomes.append(f"won {n}")
        except knowtk.PublicationConflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [o for o in outcomes if o.startswith("won")]
    assert len(won) == 1 and outcomes.count("conflict") == 5
    assert f"summary: writer {won[0].split()[1]}" in (builder.root / "decisions/dec-2.md").read_text()


def test_an_editor_saving_between_check_and_write_keeps_its_file(store, builder):
    path = builder.root / "decisions/dec-1.md"
    edited = HOSTILE.replace(b"Use SQLite", b"Edited by hand")

    def hook(step: str) -> None:
        if step == "safeguards":
            tmp = path.with_name(".editor-save")
            tmp.write_bytes(edited)
            os.replace(tmp, path)  # an editor's atomic save

    mutation.set_step_hook(hook)
    try:
        with pytest.raises(knowtk.PublicationConflict) as err:
            store.withdraw("dec-1", reason="r", expected_sha256=sha256_hex(HOSTILE))
    finally:
        mutation.set_step_hook(None)
    assert err.value.actual == sha256_hex(edited)
    assert path.read_bytes() == edited
    assert store.record("dec-1")["record"]["lifecycle"] == "active"  # the safeguard was rolled back
    assert store.history()["total"] == 0


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import knowtk
    from knowtk.write import mutation
    root, step, op = sys.argv[1], sys.argv[2], sys.argv[3]
    s = knowtk.open_store(root)
    rec = s.record("dec-2")["record"]
    if op == "reinstate":  # withdrawn first (not killed), then reinstated (killed)
        sha = s.withdraw("dec-2", reason="first", expected_sha256=rec["sha256"])["receipt"]["records"][0]["sha256After"]
    mutation.set_step_hook(lambda name: os.kill(os.getpid(), signal.SIGKILL) if name == step else None)
    if op == "supersede":
        s.supersede("dec-2", by="dec-7", expected_sha256=rec["sha256"], record={"kind": "claim", "title": "Seven"})
    elif op == "reinstate":
        s.reinstate("dec-2", reason="mistake", expected_sha256=sha)
    else:
        s.withdraw("dec-2", reason="killed", expected_sha256=rec["sha256"])
    print("finished")
    """
)


@pytest.mark.parametrize(
    ("op", "step"),
    [
        ("supersede", "intent"),
        ("supersede", "safeguards"),
        ("supersede", "file:0"),
        ("supersede", "file:1"),
        ("supersede", "receipt"),
        ("withdraw", "safeguards"),
        ("withdraw", "file:0"),
        ("reinstate", "intent"),
        ("reinstate", "file:0"),
        ("reinstate", "lift"),
    ],
)
def test_sigkill_at_any_step_leaves_all_or_nothing(builder, op, step):
    builder.write("decisions/dec-2.md", {"id": "dec-2", "kind": "claim", "title": "Two"}, "Two\n")
    builder.page("p-1", "One")
    before = (builder.root / "decisions/dec-2.md").read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(builder.root), step, op],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr
    s = builder.open()  # the next open finishes the mutation (every file is as the intent left it)
    old = (builder.root / "decisions/dec-2.md").read_bytes()
    new = builder.root / "claims/dec-7.md"  # a claim without a type: the kind's folder
    if op == "reinstate":
        assert old == before and s.lookup("dec-2")["status"] == "found"  # the status line the withdraw added: gone
        assert [r["operation"] for r in s.history()["receipts"]] == ["reinstate", "withdraw"]
        assert s.check()["ok"] is True
        s.close()
        return
    if op == "supersede":
        rec = s.record("dec-2")["record"]
        assert b"status: superseded\n" in old and b"superseded_by: dec-7\n" in old and new.exists()
        assert rec["lifecycle"] == "superseded" and rec["supersededBy"] == "dec-7"
    else:
        assert b"status: withdrawn\n" in old and old != before
        assert s.lookup("dec-2")["status"] == "missing"
        rec = {"lifecycle": "withdrawn", "supersededBy": None}
    receipts = s.history()["receipts"]
    assert [r["operation"] for r in receipts] == [op]
    assert s.check()["ok"] is True
    s.close()
