"""A past store seeded from the present store's state answers as a cold build of the same commit (a checkout)
would, reads again only the files that differ, and holds the safeguards its own files establish."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.state import STATE_FILE
from knowtk.write.checkpoint import Repo
from knowtk.write.past import GitPast
from knowtk.write.past_absent import ABSENT_FILE, absent_files
from knowtk.write.past_seed import seed_state
from tests.helpers import StoreBuilder, inspector_bin
from tests.test_known_time import T1, T2, T3, build_history, checkout, decision, everything, git
from tests.test_seen import outside_edits


def safeguards(store: knowtk.Store) -> tuple[dict[str, int], dict[str, tuple[int, str | None]]]:
    guards = store.engine.safeguards
    guards.refresh()
    return dict(guards.withdrawn), dict(guards.superseded)


def differing(then: Path, now: Path) -> set[str]:
    """The record files of ``then`` whose bytes the present folder ``now`` does not hold at the same path."""
    out = set()
    for dirpath, dirs, names in os.walk(then):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for name in names:
            if name.endswith(".md") and not name.startswith((".", "_")):
                past = Path(dirpath) / name
                present = now / past.relative_to(then)
                if not present.is_file() or present.read_bytes() != past.read_bytes():
                    out.add(str(past.relative_to(then)))
    return out


def same_as_checkout(
    store: knowtk.Store, when: str, top: Path, folder: str, tmp: Path, seeded: bool = True, **opened: Any
) -> None:
    """``store.at(when)`` answers as the checkout of its commit does, safeguards included; ``seeded``: it parsed
    only the files the present store does not hold as they stood then (else: every file)."""
    past = store.at(when)
    commit = past.known_at["commit"]
    clone = checkout(top, commit, tmp / f"clone-{commit[:8]}")
    with knowtk.open_store(clone / folder, state_dir=tmp / f"state-{commit[:8]}", **opened) as cold:
        assert everything(past) == everything(cold), when
        assert safeguards(past) == safeguards(cold), when
    report = past.check()  # the seeded state checks whole: safeguards and journal agree, projections sound
    assert report["ok"] and not report["found"], (when, report)
    parsed = differing(clone / folder, top / folder if seeded else tmp / "nowhere")
    assert past.engine.scanner.parses == len(parsed), when


@pytest.mark.parametrize("profile", [None, "adr"])
def test_a_seeded_past_equals_a_checkout_and_parses_only_what_differs(tmp_path: Path, profile: str | None) -> None:
    top = tmp_path / "repo"
    b = build_history(top)  # leaves a staged file and a file never added
    b.remove("0003-postgres.md")  # deleted, not committed
    b.write("0004-grpc.md", decision("adr-4", "Use gRPC, edited"), "gRPC, edited.\n")  # edited, not committed
    opened = {"profile": profile} if profile else {}
    with b.open(**opened) as store:
        assert store.stats()["total"] == 6  # the present state: what the pasts are seeded from
        for when in ("2026-01-31", "2026-02-28", "2026-03-31"):
            same_as_checkout(store, when, top, "docs/adr", tmp_path, **opened)
        past, later = store.at("2026-02-28"), store.at("2026-03-31")
        assert (Path(past.engine.state_path).parent / STATE_FILE).is_file()
        assert past.engine.scanner.parses < len(list(Path(past.engine.root).rglob("*.md")))  # a seed was used
        # the files the present holds with the same bytes are listed, not written (until read); a file alike in
        # two kept pasts but not in the present is one file: the later one linked it
        assert set(absent_files(past.engine.root)) == {"0001-sqlite.md"}
        # (told by their blobs, as what knowtk saw last holds the files the present read: none streamed from Git)
        assert set(absent_files(later.engine.root)) == {"0001-sqlite.md", "0002-rest.md", "notes/bench.md"}
        alike, changed = "0003-postgres.md", "0002-rest.md"
        assert Path(later.engine.root, alike).stat().st_ino == Path(past.engine.root, alike).stat().st_ino
        assert Path(past.engine.root, changed).is_file() and not Path(later.engine.root, changed).exists()


def test_files_alike_with_the_present_are_written_when_first_read(tmp_path: Path) -> None:
    """A past lists the files the present holds alike without writing them: a query that needs no bytes writes
    none, a record's body and a citation's check write the file they read (from Git, with the listed stat)."""
    top = tmp_path / "repo"
    b = build_history(top)
    with b.open() as store:
        assert store.stats()["total"] == 7 and store.call("knowledge_grep", {"query": "use"})["total"] > 0
        then = store.at("2026-03-31")
        root = Path(then.engine.root)
        listed = absent_files(str(root))
        assert {"0001-sqlite.md", "notes/bench.md"} <= set(listed)
        assert not any((root / path).exists() for path in listed)
        assert then.stats()["total"] == 5 and then.call("knowledge_grep", {"query": "postgres"})["total"] == 1
        assert not any((root / path).exists() for path in listed)  # the seeded state answered: nothing read
        body = then.record("adr-1")["record"]["body"]
        assert body == "SQLite.\n" and (root / "0001-sqlite.md").is_file()
        st = (root / "0001-sqlite.md").stat()
        assert (st.st_size, st.st_mtime_ns) == listed["0001-sqlite.md"][1:]
        assert not (root / "notes/bench.md").exists()
        evidence = then.record("adr-4")["record"]["evidence"]
        assert [e["verified"] for e in evidence] == [True]  # read from the file written on demand
        blob = git(top, "rev-parse", "HEAD:docs/adr/notes/bench.md").strip()
        assert listed["notes/bench.md"][0] == blob
        assert (root / "notes/bench.md").read_bytes() == (top / "docs/adr/notes/bench.md").read_bytes()
        seen = everything(then)
    with b.open() as again:  # another store: the list is read again, and what was written stays
        later = again.at("2026-03-31")
        assert later.record("adr-3")["record"]["body"] == "Postgres.\n" and (root / "0003-postgres.md").is_file()
        assert everything(later) == seen
        assert again.check()["ok"]  # the kept past, with files still unwritten, is whole


def test_the_past_keeps_the_safeguards_of_its_files_not_the_presents(tmp_path: Path) -> None:
    """Files brought back, unchanged since the first commit, to what a safeguard of the present overrules: the
    present keeps adr-2 withdrawn and adr-1 superseded; the store at the first commit has them active."""
    top = tmp_path / "repo"
    b = StoreBuilder(top)
    git(top, "init", "-q", "-b", "main")
    git(top, "config", "user.email", "ada@example.org")
    git(top, "config", "user.name", "Ada")
    (top / ".gitignore").write_text(".knowtk/\n")
    first = {
        "0001.md": b.write("0001.md", decision("adr-1", "Use SQLite"), "SQLite.\n").read_bytes(),
        "0002.md": b.write("0002.md", decision("adr-2", "Use REST"), "REST.\n").read_bytes(),
    }
    git(top, "add", "-A")
    git(top, "commit", "-qm", "first", date=T1)
    with b.open() as store:
        assert store.stats()["total"] == 2
        b.write("0001.md", decision("adr-1", "Use SQLite", status="superseded", superseded_by="adr-3"), "SQLite.\n")
        b.write("0003.md", decision("adr-3", "Use Postgres", supersedes=["adr-1"]), "Postgres.\n")
        b.write("0002.md", decision("adr-2", "Use REST", status="withdrawn", withdrawn_reason="gRPC"), "REST.\n")
        git(top, "add", "-A")
        git(top, "commit", "-qm", "second", date=T2)
        assert store.stats()["total"] == 3  # the present sees the withdrawal and the supersession
        for name, data in first.items():
            (top / name).write_bytes(data)
        git(top, "commit", "-qam", "back", date=T3)
    with b.open() as store:  # a new process: the snapshot image it stores holds what the safeguards overrule
        assert store.record("adr-1")["record"]["lifecycle"] == "superseded"  # the present's safeguards hold
        assert store.call("knowledge_record", {"id": "adr-2"})["reason"]["code"] == "withdrawn"
        assert safeguards(store)[0].keys() == {"adr-2"} and safeguards(store)[1].keys() == {"adr-1"}
        then = store.at("2026-01-31")
        assert then.record("adr-1")["record"]["lifecycle"] == "active"
        assert then.record("adr-2")["record"]["lifecycle"] == "active"
        assert then.engine.scanner.parses == 0  # both files are the present's: nothing read again
        same_as_checkout(store, "2026-01-31", top, "", tmp_path)
        same_as_checkout(store, "2026-02-28", top, "", tmp_path)
        assert safeguards(store.at("2026-02-28"))[0].keys() == {"adr-2"}  # established by its own files


def test_a_present_state_that_cannot_be_read_seeds_nothing(tmp_path: Path) -> None:
    top = tmp_path / "repo"
    b = build_history(top)
    with b.open() as store:
        assert store.stats()["total"] == 7
        state = Path(store.engine.state_path)
        state.write_bytes(b"not a database, " * 4096)  # damaged under the open store, its WAL gone too
        for name in (f"{state.name}-wal", f"{state.name}-shm"):
            (state.parent / name).unlink(missing_ok=True)
        same_as_checkout(store, "2026-02-28", top, "docs/adr", tmp_path, seeded=False)  # built cold
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"\0garbage" * 1000)
    assert seed_state(str(garbage), str(tmp_path / "seed"), str(tmp_path / "store")) == {}
    assert not any((tmp_path / "seed").iterdir())


def test_a_past_read_under_other_profiles_than_the_present_is_read_whole(tmp_path: Path) -> None:
    """knowtk.yaml names a profile since the last commit: the past before it reads its files as records of another
    profile, so nothing of the seed's projections serves it; the past after it is seeded as usual."""
    top = tmp_path / "repo"
    b = build_history(top)
    (b.root / "knowtk.yaml").write_text("profile: adr\n")
    git(top, "add", "docs/adr/knowtk.yaml")
    git(top, "commit", "-qm", "the adr profile", date="2026-03-25T00:00:00Z")
    with b.open() as store:
        assert store.engine.profile_map().key().startswith("adr")
        store.stats()
        same_as_checkout(store, "2026-03-31", top, "docs/adr", tmp_path)
        same_as_checkout(store, "2026-02-28", top, "docs/adr", tmp_path, seeded=False)


def test_a_blob_git_stops_sending_midway_is_no_blob(tmp_path: Path) -> None:
    """A ``git`` that dies while sending a blob (here a stand-in that sends one whole and half of the next): only
    the whole one is read, so the past is refused as damaged rather than written with half a file."""
    whole, half = "a" * 40, "b" * 40
    fake = tmp_path / "git"
    fake.write_text(f"#!/bin/sh\nprintf '{whole} blob 5\\nhello\\n{half} blob 10\\nhalf'\n")
    fake.chmod(0o755)
    git_past = GitPast(Repo(str(fake), str(tmp_path)), "")
    assert dict(git_past.stream([whole, half])) == {whole: b"hello"}
    assert git_past.contents([whole, half]) == {whole: b"hello"}


def test_a_store_outside_git_writes_its_past_files_from_what_knowtk_saw(builder: StoreBuilder) -> None:
    outside_edits(builder)  # p1 retitled at T2; p2 removed and p3 added at T3
    with builder.open() as store:
        assert store.call("knowledge_grep", {"query": "words"})["total"] == 2
        then = store.at("2026-06-01T11:30:00Z")
        root = Path(then.engine.root)
        assert "p1.md" in absent_files(str(root)) and not (root / "p1.md").exists()  # as the present holds it
        assert (root / "p2.md").is_file()  # gone from the present: written
        assert then.record("p1")["record"]["body"].strip() == "First words."
        assert (root / "p1.md").read_bytes() == (builder.root / "p1.md").read_bytes()
        assert then.record("p2")["record"]["title"] == "Two"


def test_a_record_of_what_knowtk_saw_out_of_step_tells_files_alike_by_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files alike with the present are told by their blob, unread, only when what knowtk saw last holds the
    scan cache's files (its mark says so); out of step, every past file is read from Git and told by its hash."""
    streamed: list[str] = []
    stream = GitPast.stream

    def counted(self: GitPast, blobs: list[str]) -> Any:
        streamed.extend(blobs)
        return stream(self, blobs)

    monkeypatch.setattr(GitPast, "stream", counted)
    top = tmp_path / "repo"
    b = build_history(top)
    alike = {"0001-sqlite.md", "0003-postgres.md"}  # at 2026-02-28, as the present holds them
    with b.open() as store:
        assert store.call("knowledge_grep", {"query": "use"})["total"] > 0
        blob_of = {path: git(top, "rev-parse", f"HEAD~1:docs/adr/{path}").strip() for path in alike}
        assert set(absent_files(store.at("2026-02-28").engine.root)) == alike
        assert streamed and not set(blob_of.values()) & set(streamed)  # told by their blobs: never read
        shutil.rmtree(Path(store.engine.state_path).parent / "past")
        mark = Path(store.engine.state_path).parent / "seen.git" / "knowtk-scan"
        tip, token = mark.read_text().split()
        mark.write_text(f"{tip} {int(token) + 1}\n")  # as if the scan cache had moved on since
        streamed.clear()
    with b.open() as store:
        same_as_checkout(store, "2026-02-28", top, "docs/adr", tmp_path)
        assert set(absent_files(store.at("2026-02-28").engine.root)) == alike
        assert set(blob_of.values()) <= set(streamed)  # read from Git and hashed


def test_a_damaged_list_of_unwritten_files_is_refused_and_repaired_by_check(tmp_path: Path) -> None:
    top = tmp_path / "repo"
    b = build_history(top)
    with b.open() as store:
        assert store.call("knowledge_grep", {"query": "use"})["total"] > 0
        root = Path(store.at("2026-02-28").engine.root)
        listed = root / ABSENT_FILE
        assert listed.is_file()
    listed.write_bytes(listed.read_bytes()[:-9])  # cut short
    with b.open() as store:
        with pytest.raises(knowtk.StoreUnavailable, match="knowtk check"):
            store.at("2026-02-28")
        report = store.check()
        assert not report["ok"] and any("not written yet is damaged" in f for f in report["found"])
        assert store.at("2026-02-28").stats()["total"] == 4  # written again
        assert store.check()["ok"]


def test_a_past_answers_the_inspector_writing_only_what_it_reads(tmp_path: Path) -> None:
    """Through the TypeScript MCP Inspector CLI (a server process of its own): a record at ``knownAt`` answers with
    its body, its file written then from Git; the files the answer did not need stay unwritten."""
    from tests.test_valid_at_mcp import _inspect

    bin_dir = inspector_bin()
    top = tmp_path / "repo"
    b = build_history(top)
    with b.open() as store:  # the present store as a user left it: queried, so a past is seeded from it
        assert store.call("knowledge_grep", {"query": "use"})["total"] > 0
    code, reply = _inspect(bin_dir, b.root, "knowledge_record", {"id": "adr-1", "knownAt": "2026-03-31"})
    assert code == 0, reply
    answer = reply["result"]["structuredContent"]
    assert answer["record"]["body"] == "SQLite.\n" and answer["knownAt"]["commit"]
    past = next((b.root / ".knowtk" / "past").glob("*/adr"))
    listed = absent_files(str(past))
    assert "0001-sqlite.md" in listed and (past / "0001-sqlite.md").is_file()
    assert not (past / "notes/bench.md").exists() and "notes/bench.md" in listed


def test_two_stores_share_a_past_and_its_writer_until_the_last_closes(tmp_path: Path) -> None:
    top = tmp_path / "repo"
    b = build_history(top)
    first, second = b.open(), b.open()
    try:
        assert first.call("knowledge_grep", {"query": "use"})["total"] > 0
        one, two = first.at("2026-03-31"), second.at("2026-03-31")
        root = Path(one.engine.root)
        assert {"0001-sqlite.md", "0003-postgres.md"} <= set(absent_files(str(root)))
        assert one.record("adr-1")["record"]["body"] == "SQLite.\n"
        first.close()  # its view closes: the other view still has its files written when read
        assert not (root / "0003-postgres.md").exists()
        assert two.record("adr-3")["record"]["body"] == "Postgres.\n"
    finally:
        first.close()
        second.close()
    assert (root / "0003-postgres.md").is_file()
