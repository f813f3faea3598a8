"""Git checkpoints: exactly the touched paths committed, the user's staged changes left alone, a clear refusal
without git or a work tree, and a record's commits merged into knowledge_history."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import knowtk
from tests.helpers import StoreBuilder


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(builder: StoreBuilder) -> StoreBuilder:
    builder.write("decisions/dec-1.md", {"id": "dec-1", "kind": "claim", "title": "One"}, "One\n")
    builder.write("decisions/dec-2.md", {"id": "dec-2", "kind": "claim", "title": "Two"}, "Two\n")
    (builder.root / ".gitignore").write_text(".knowtk/\n")
    git(builder.root, "init", "-q", "-b", "main")
    git(builder.root, "config", "user.email", "ada@example.org")
    git(builder.root, "config", "user.name", "Ada")
    git(builder.root, "add", "-A")
    git(builder.root, "commit", "-qm", "initial")
    return builder


def test_a_checkpoint_commits_exactly_the_touched_paths(repo: StoreBuilder) -> None:
    root = repo.root
    (root / "decisions/dec-2.md").write_text((root / "decisions/dec-2.md").read_text() + "staged by the user\n")
    git(root, "add", "decisions/dec-2.md")  # the user's staged change: never committed by knowtk
    (root / "notes.txt").write_text("untracked\n")
    s = repo.open()
    rec = s.record("dec-1")["record"]
    res = s.withdraw("dec-1", reason="wrong", expected_sha256=rec["sha256"], checkpoint=True, actor="ada")
    commit = res["receipt"]["checkpoint"]
    assert commit == git(root, "rev-parse", "HEAD")
    assert git(root, "show", "--name-only", "--format=", commit) == "decisions/dec-1.md"
    message = git(root, "log", "-1", "--format=%B")
    assert (
        message.startswith("knowtk withdraw dec-1") and res["receipt"]["id"] in message and "reason: wrong" in message
    )
    status = git(root, "status", "--porcelain")
    assert "M  decisions/dec-2.md" in status.splitlines()  # still staged, not committed
    assert "decisions/dec-1.md" not in status  # committed and in the index: clean
    assert s.history()["receipts"][0]["checkpoint"] == commit
    history = s.history("dec-1")["receipts"]
    assert [(e["source"], e.get("operation") or e["message"]) for e in history][:1] == [("receipt", "withdraw")]
    assert {e["source"] for e in history} == {"receipt", "git"}
    assert [e["message"] for e in history if e["source"] == "git"][-1] == "initial"
    frame = s.history("dec-1").to_frame()
    assert set(frame["source"]) == {"receipt", "git"}
    s.close()


def test_a_checkpoint_commit_of_a_later_second_follows_its_receipt_in_the_history(
    repo: StoreBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Git keeps whole seconds: a checkpoint commit made in the second after its receipt (here dated a minute
    on) still comes right after the receipt, newest first, and older commits after both."""
    later = datetime.now(UTC) + timedelta(minutes=1)
    monkeypatch.setenv("GIT_AUTHOR_DATE", later.strftime("%Y-%m-%dT%H:%M:%S+00:00"))
    s = repo.open()
    rec = s.record("dec-1")["record"]
    res = s.withdraw("dec-1", reason="wrong", expected_sha256=rec["sha256"], checkpoint=True, actor="ada")
    history = s.history("dec-1")["receipts"]
    assert [(e["source"], e.get("commit") or e["id"]) for e in history] == [
        ("receipt", res["receipt"]["id"]),
        ("git", res["receipt"]["checkpoint"]),
        ("git", git(repo.root, "rev-parse", "HEAD~1")),
    ]
    s.close()


def test_checkpoint_always_in_the_config(repo: StoreBuilder) -> None:
    (repo.root / "knowtk.yaml").write_text("checkpoint: always\n")
    git(repo.root, "add", "knowtk.yaml")
    git(repo.root, "commit", "-qm", "config")
    s = repo.open()
    rec = s.record("dec-2")["record"]
    res = s.update("dec-2", {"summary": "s"}, expected_sha256=rec["sha256"])
    assert res["receipt"]["checkpoint"] == git(repo.root, "rev-parse", "HEAD")
    s.close()


def test_a_checkpoint_outside_a_work_tree_or_without_git_is_refused_first(builder: StoreBuilder, monkeypatch) -> None:
    builder.write("decisions/dec-1.md", {"id": "dec-1", "kind": "claim", "title": "One"}, "One\n")
    before = (builder.root / "decisions/dec-1.md").read_bytes()
    s = builder.open()
    rec = s.record("dec-1")["record"]
    with pytest.raises(knowtk.InvalidArgument) as err:
        s.update("dec-1", {"summary": "s"}, expected_sha256=rec["sha256"], checkpoint=True)
    assert err.value.argument == "checkpoint" and "not inside a Git work tree" in str(err.value)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(knowtk.InvalidArgument) as err:
        s.update("dec-1", {"summary": "s"}, expected_sha256=rec["sha256"], checkpoint=True)
    assert "needs the git command" in str(err.value)
    assert (builder.root / "decisions/dec-1.md").read_bytes() == before
    assert s.history()["total"] == 0
    s.close()
