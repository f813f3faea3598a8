"""`knowtk adopt`: the keys a profile derived written into the files, through the mutation machinery.

After adopt, the default profile reads every adopted file as the profile read it; the bodies are
byte-identical; the dry run's diff is the review; a second run changes nothing; the change is all
or nothing (a conflict, a crash at any step) and undone from its receipt.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.cli import main
from knowtk.errors import InvalidArgument, PublicationConflict
from knowtk.model.records import Record
from knowtk.write import mutation
from knowtk.write.splice import split_file
from tests.helpers import REPO, StoreBuilder, markdown_digest, sha256_hex

PROFILES = REPO / "data" / "fixtures" / "profiles"


def fixture(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(PROFILES / name, root)
    return root


def reading(r: Record) -> dict[str, Any]:
    return {
        "id": r.id,
        "kind": r.kind,
        "type": r.type,
        "title": r.title,
        "status": r.status,
        "superseded_by": r.superseded_by,
        "aliases": r.aliases,
        "tags": r.tags,
        "dates": {k: v.text for k, v in r.dates.items()},
    }


def files(root: Path) -> dict[str, bytes]:
    return {p: (root / p).read_bytes() for p in markdown_digest(root)}


def body_of(data: bytes) -> bytes:
    return split_file(data).body


CASES = [("adr-tools", "adr"), ("madr", "adr"), ("log4brains", "adr"), ("plain", "plain"), ("vault", "obsidian")]


@pytest.mark.parametrize(("name", "profile"), CASES)
def test_after_adopt_the_default_profile_reads_the_same_records(tmp_path: Path, name: str, profile: str) -> None:
    root = fixture(tmp_path, name)
    original = files(root)
    store = knowtk.open_store(root, profile=profile, state_dir=tmp_path / "state")
    before = {r.path: reading(r) for r in store.snapshot().records.values()}
    answer = store.adopt(skip_issues=True)
    assert answer["written"] is True and answer["receipt"]["operation"] == "adopt"
    skipped = {s["path"] for s in answer["skipped"]}
    adopted = {r["path"] for r in answer["receipt"]["records"]}
    assert adopted and not adopted & skipped
    assert all("template" in p or "0007" in p for p in skipped)  # the templates, and adr-tools' broken ADR 7
    default = knowtk.open_store(root, state_dir=tmp_path / "state-default")
    snap = default.snapshot()
    after = {r.path: reading(r) for r in snap.records.values()}
    for path in adopted:
        assert after[path] == before[path], path
    assert not [i for i in snap.issues if i.path in adopted]  # no frontmatter_missing (or any) issue for them
    now = files(root)
    for path, data in original.items():
        if path not in adopted:
            assert now[path] == data  # skipped files untouched
        elif data.startswith(b"---"):
            assert body_of(now[path]) == body_of(data)  # the body (ADR status lines included) byte for byte
        else:
            assert now[path].endswith(data) and body_of(now[path]) == data  # a new block before the first line
    assert store.adopt(skip_issues=True)["written"] is False  # a second run changes nothing
    assert store.history()["total"] == 1
    default.close()
    store.close()


def test_lookup_by_adr_number_and_chains_work_under_the_default_profile_after_adopt(tmp_path: Path) -> None:
    root = fixture(tmp_path, "madr")
    with knowtk.open_store(root, profile="adr", state_dir=tmp_path / "s1") as store:
        store.adopt(skip_issues=True)
    with knowtk.open_store(root, state_dir=tmp_path / "s2") as store:
        assert store.lookup("ADR-6")["record"]["id"] == "docs:decisions:0006"
        assert store.lookup("0004", lifecycle="all")["record"]["id"] == "docs:decisions:0004"
        old = store.record("docs:decisions:0001")["record"]
        assert old["lifecycle"] == "superseded" and old["supersededBy"] == "docs:decisions:0004"
        assert store.snapshot().chain_ends["docs:decisions:0001"].current == "docs:decisions:0006"
        assert [r["id"] for r in store.records(tag="adr/deprecated").to_dict()["rows"]] == ["docs:decisions:0008"]


def diff_lines(diff: str, sign: str) -> list[str]:
    return [line for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3)]


@pytest.mark.parametrize(("name", "profile"), [("adr-tools", "adr"), ("log4brains", "adr")])
def test_the_dry_run_diff_only_adds_frontmatter_lines_and_writes_nothing(tmp_path, name, profile) -> None:
    root = fixture(tmp_path, name)
    digest = markdown_digest(root)
    with knowtk.open_store(root, profile=profile, state_dir=tmp_path / "state") as store:
        answer = store.adopt(dry_run=True, skip_issues=True)
        assert answer["written"] is False and answer["dryRun"] is True and answer["receipt"]["id"] is None
        diff = answer["diff"]
        assert diff_lines(diff, "+") and not diff_lines(diff, "-")
        for path in (r["path"] for r in answer["receipt"]["records"]):
            assert f"+++ {path}" in diff
        assert store.history()["total"] == 0
        assert len(answer.to_frame()) == len(answer["receipt"]["records"])
    assert markdown_digest(root) == digest


def test_a_key_written_in_the_other_tools_form_changes_in_place_and_is_kept_under_fields(tmp_path) -> None:
    root = fixture(tmp_path, "madr")
    path = "docs/decisions/0004-deploy-with-container-images.md"
    old = (root / path).read_bytes()
    with knowtk.open_store(root, profile="adr", state_dir=tmp_path / "state") as store:
        diff = store.adopt(dry_run=True, skip_issues=True)["diff"]
        removed = diff_lines(diff, "-")
        assert removed and all(line.split(":")[0] in ("-status", "-tags") for line in removed)
        store.adopt(skip_issues=True)
    new = (root / path).read_bytes()
    assert b'status: "superseded by ADR-0006"\n' in old and b"status: superseded\n" in new
    assert b"  status: superseded by ADR-0006\n" in new  # under fields
    assert b"decision-makers: Ines\n" in new and body_of(new) == body_of(old)


def test_expect_writes_exactly_what_the_dry_run_showed_or_nothing(tmp_path: Path) -> None:
    root = fixture(tmp_path, "plain")
    with knowtk.open_store(root, profile="plain", state_dir=tmp_path / "state") as store:
        shown = store.adopt(dry_run=True)
        path = root / "guides/onboarding.md"
        path.write_bytes(path.read_bytes() + b"\nEdited after the review.\n")
        digest = markdown_digest(root)
        with pytest.raises(PublicationConflict, match="not as the dry run saw them"):
            store.adopt(expect=shown["plan"])
        assert markdown_digest(root) == digest and store.history()["total"] == 0
        again = store.adopt(dry_run=True)
        done = store.adopt(expect=again["plan"])
        assert done["written"] and done["plan"] == again["plan"]
        assert [r["sha256After"] for r in done["receipt"]["records"]] == [
            r["sha256After"] for r in again["receipt"]["records"]
        ]


def test_files_with_coverage_issues_refuse_adopt_unless_skipped(tmp_path: Path) -> None:
    root = fixture(tmp_path, "adr-tools")
    digest = markdown_digest(root)
    with knowtk.open_store(root, profile="adr", state_dir=tmp_path / "state") as store:
        with pytest.raises(InvalidArgument) as refused:
            store.adopt()
        assert refused.value.argument == "skip_issues"
        assert "0007-ship-a-windows-installer.md" in str(refused.value) and "date_invalid" in str(refused.value)
        assert markdown_digest(root) == digest
        answer = store.adopt(skip_issues=True)
        assert [(s["path"], s["id"]) for s in answer["skipped"]] == [
            ("doc/adr/0007-ship-a-windows-installer.md", "doc:adr:0007")
        ]


def test_id_collisions_are_listed_naming_both_files(builder: StoreBuilder) -> None:
    builder.raw("a b.md", "# One\n")
    builder.raw("a-b.md", "# Two\n")
    builder.raw("c.md", "# Three\n")
    with builder.open(profile="plain") as store:
        with pytest.raises(InvalidArgument) as refused:
            store.adopt()
        assert "a b.md" in str(refused.value) and "a-b.md" in str(refused.value)
        answer = store.adopt(skip_issues=True)
        assert [r["path"] for r in answer["receipt"]["records"]] == ["c.md"]
        assert {s["path"] for s in answer["skipped"]} == {"a b.md", "a-b.md"}


def test_a_record_whose_replacement_is_not_adopted_is_left_out_too(builder: StoreBuilder) -> None:
    builder.raw("adr/0001-a.md", "# 1. A\n\nDate: 2024-01-01\n\n## Status\n\nSuperseded by [2. B](0002-b.md)\n")
    builder.raw("adr/0002-b.md", "# 2. B\n\nDate: not a date\n\n## Status\n\nAccepted\n")
    builder.raw("adr/0003-c.md", "# 3. C\n\nDate: 2024-03-01\n\n## Status\n\nAccepted\n")
    with builder.open(profile="adr") as store:
        answer = store.adopt(skip_issues=True)
    assert [r["path"] for r in answer["receipt"]["records"]] == ["adr/0003-c.md"]
    reasons = {s["path"]: s["reason"] for s in answer["skipped"]}
    assert "date_invalid" in reasons["adr/0002-b.md"]
    assert reasons["adr/0001-a.md"] == "its replacement adr:0002 is not adopted"


def test_crlf_and_a_bom_are_kept_in_a_new_frontmatter_block(builder: StoreBuilder) -> None:
    data = b"\xef\xbb\xbf# Title here\r\n\r\nText.\r\n"
    builder.raw("notes/n.md", data)
    with builder.open(profile="plain") as store:
        store.adopt()
    new = (builder.root / "notes/n.md").read_bytes()
    assert new.startswith(b"\xef\xbb\xbf---\r\nid: 'notes:n'\r\n") and new.endswith(data[3:])
    with knowtk.open_store(builder.root, state_dir=builder.root.parent / "s2") as store:
        assert store.record("notes:n")["record"]["title"] == "Title here"


def test_the_profile_must_be_the_one_the_store_is_open_with(tmp_path: Path) -> None:
    root = fixture(tmp_path, "plain")
    with knowtk.open_store(root, state_dir=tmp_path / "s1") as store:
        with pytest.raises(InvalidArgument) as refused:
            store.adopt()
        assert refused.value.argument == "profile" and "knowtk's own format" in str(refused.value)
        with pytest.raises(InvalidArgument, match="open it with profile='plain'"):
            store.adopt(profile="plain")
    with knowtk.open_store(root, profile="plain", state_dir=tmp_path / "s2") as store:
        with pytest.raises(InvalidArgument) as refused:
            store.adopt(profile="knowtk")
        assert refused.value.argument == "profile"


def test_knowtk_yaml_is_left_as_it_is_and_the_answer_says_so(tmp_path: Path) -> None:
    root = fixture(tmp_path, "plain")
    (root / "knowtk.yaml").write_text("name: handbook\nprofile: plain  # read as plain Markdown\n")
    config = (root / "knowtk.yaml").read_bytes()
    with knowtk.open_store(root, state_dir=tmp_path / "state") as store:
        answer = store.adopt()
    assert answer["written"] and "knowtk.yaml still says profile: plain" in answer["note"]
    assert (root / "knowtk.yaml").read_bytes() == config


def test_a_file_changed_between_plan_and_write_refuses_everything(tmp_path: Path) -> None:
    root = fixture(tmp_path, "log4brains")
    original = files(root)
    victim = "docs/adr/20230320-keep-a-changelog.md"  # the third file the plan writes (by path)
    edited = original[victim] + b"\nEdited meanwhile.\n"

    def hook(step: str) -> None:
        if step == "intent":
            (root / victim).write_bytes(edited)

    with knowtk.open_store(root, profile="adr", state_dir=tmp_path / "state") as store:
        mutation.set_step_hook(hook)
        try:
            with pytest.raises(PublicationConflict) as refused:
                store.adopt()
        finally:
            mutation.set_step_hook(None)
        assert refused.value.path == victim
        assert store.history()["total"] == 0
    assert files(root) == {**original, victim: edited}


def test_undo_puts_every_file_back_only_while_each_is_as_adopt_left_it(tmp_path: Path) -> None:
    root = fixture(tmp_path, "vault")
    original = files(root)
    with knowtk.open_store(root, profile="obsidian", state_dir=tmp_path / "state") as store:
        rid = store.adopt()["receipt"]["id"]
        adopted = files(root)
        shown = store.adopt(undo=rid, dry_run=True)
        assert diff_lines(shown["diff"], "-") and files(root) == adopted
        one = sorted(adopted)[0]
        (root / one).write_bytes(adopted[one] + b"\nedited\n")
        with pytest.raises(PublicationConflict, match="nothing was undone"):
            store.adopt(undo=rid)
        assert files(root) == {**adopted, one: adopted[one] + b"\nedited\n"}
        (root / one).write_bytes(adopted[one])
        undone = store.adopt(undo=rid)
        assert undone["written"] and undone["receipt"]["operation"] == "adopt-undo"
        assert undone["receipt"]["reason"] == f"undo of {rid}"
        assert files(root) == original
        assert store.adopt(undo=rid)["written"] is False  # undone already: nothing to undo
        with pytest.raises(InvalidArgument) as refused:
            store.adopt(undo=undone["receipt"]["id"])
        assert refused.value.argument == "undo"
        assert [r["operation"] for r in store.history()["receipts"]] == ["adopt-undo", "adopt"]


KILLED = textwrap.dedent(
    """
    import os, signal, sys
    import knowtk
    from knowtk.write import mutation
    root, state, step = sys.argv[1], sys.argv[2], sys.argv[3]
    s = knowtk.open_store(root, profile="adr", state_dir=state)
    mutation.set_step_hook(lambda name: os.kill(os.getpid(), signal.SIGKILL) if name == step else None)
    s.adopt(skip_issues=True)
    print("finished")
    """
)


def kill_at(root: Path, state: Path, step: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(root), str(state), step],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


@pytest.mark.parametrize("step", ["intent", "file:0", "file:5", "receipt"])
def test_sigkill_at_any_step_of_adopt_is_finished_at_the_next_open(tmp_path: Path, step: str) -> None:
    root = fixture(tmp_path, "madr")
    state = tmp_path / "state"
    with knowtk.open_store(root, profile="adr", state_dir=state) as store:
        planned = {
            r["path"]: r["sha256After"] for r in store.adopt(dry_run=True, skip_issues=True)["receipt"]["records"]
        }
    original = files(root)
    kill_at(root, state, step)
    with knowtk.open_store(root, profile="adr", state_dir=state) as store:
        now = files(root)
        assert {p: sha256_hex(now[p]) for p in planned} == planned  # every file adopted
        assert all(now[p] == data for p, data in original.items() if p not in planned)
        assert [r["operation"] for r in store.history()["receipts"]] == ["adopt"]
        assert store.check()["ok"] is True


def test_a_crash_is_finished_and_undone_when_the_store_is_next_opened_without_the_profile(tmp_path: Path) -> None:
    root = fixture(tmp_path, "madr")
    state = tmp_path / "state"  # one state: opening it with another profile rebuilds its projections only
    original = files(root)
    kill_at(root, state, "file:2")
    with knowtk.open_store(root, state_dir=state) as store:  # the default profile: the point of adopting
        receipts = store.history()["receipts"]
        # ten ADRs: the template and the index beside them are not records (DEFAULT_NOT_RECORDS)
        assert [r["operation"] for r in receipts] == ["adopt"] and len(receipts[0]["records"]) == 10
        assert store.lookup("ADR-6")["record"]["id"] == "docs:decisions:0006"
        store.adopt(undo=receipts[0]["id"])
        assert files(root) == original
        assert store.history()["total"] == 2


def test_sigkill_then_an_edit_rolls_the_whole_adopt_back(tmp_path: Path) -> None:
    root = fixture(tmp_path, "madr")
    state = tmp_path / "state"
    with knowtk.open_store(root, profile="adr", state_dir=state) as store:
        planned = [r["path"] for r in store.adopt(dry_run=True, skip_issues=True)["receipt"]["records"]]
    original = files(root)
    kill_at(root, state, "file:3")
    first = root / planned[0]
    assert first.read_bytes() != original[planned[0]]  # written before the kill
    edited = b"# Rewritten by hand after the crash\n"
    first.write_bytes(edited)
    with knowtk.open_store(root, profile="adr", state_dir=state) as store:
        assert files(root) == {**original, planned[0]: edited}  # the others put back, the editor's file kept
        assert store.history()["total"] == 0
        report = store.check()
        assert any("rolled back" in line for line in report["earlier"])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_adopt_on_the_command_line_dry_run_run_again_and_undo(tmp_path: Path, capsys) -> None:
    root = fixture(tmp_path, "adr-tools")
    original = files(root)
    store = ["--store", str(root), "--state-dir", str(tmp_path / "state"), "--profile", "adr"]
    code, out, err = run(capsys, *store, "adopt", "--dry-run")
    assert code == 2 and "--skip-issues" in err and "0007" in err
    code, out, _ = run(capsys, *store, "adopt", "--dry-run", "--skip-issues")
    assert code == 0 and "+++ doc/adr/0002-store-the-index-in-flat-files.md" in out and "+superseded_by:" in out
    assert "nothing was written" in out and files(root) == original
    plan = out.split("knowtk adopt --expect ")[1].split()[0]
    code, out, _ = run(capsys, *store, "adopt", "--skip-issues", "--actor", "ada", "--expect", plan)
    assert code == 0 and "adopt" in out and "by ada" in out and "skipped doc/adr/0007" in out
    receipt = out.split("knowtk adopt --undo ")[1].split()[0]
    code, out, _ = run(capsys, *store, "adopt", "--skip-issues")
    assert code == 0 and "nothing to adopt" in out
    code, out, _ = run(capsys, *store, "adopt", "--undo", receipt)
    assert code == 0 and "adopt-undo" in out and files(root) == original
    code, out, err = run(capsys, "--store", str(root), "--state-dir", str(tmp_path / "state"), "adopt", "--undo", "x")
    assert code == 2 and "--undo" in err and "not a receipt id" in err
