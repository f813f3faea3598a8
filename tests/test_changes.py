"""knowledge_changes: one row per record added, removed or changed between two known-time instants, with the
commits that made it; and ``Store.diff`` between two instants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import knowtk
from knowtk.cli import main
from tests.helpers import markdown_digest
from tests.test_known_time import build_history, git


def user_files(root: Path) -> dict[str, str]:
    """The store's Markdown, without knowtk's state (where the past files are kept)."""
    return {path: sha for path, sha in markdown_digest(root).items() if not path.startswith(".knowtk")}


@pytest.fixture
def history(tmp_path: Path) -> tuple[knowtk.Store, list[str]]:
    b = build_history(tmp_path / "repo")
    commits = git(b.root, "log", "--format=%H", "HEAD").split()[::-1]
    return b.open(), commits


def test_changes_between_two_instants(history: tuple[knowtk.Store, list[str]]) -> None:
    store, (first, second, third) = history
    answer = store.call("knowledge_changes", {"since": "2026-01-31", "until": "2026-02-28"})
    assert answer["since"]["commit"] == first and answer["until"]["commit"] == second
    rows = {r["id"]: r for r in answer["rows"]}
    assert set(rows) == {"adr-1", "adr-2", "adr-3"} and answer["total"] == 3
    assert rows["adr-1"]["change"] == "changed"
    assert rows["adr-1"]["fields"] == ["recorded_at", "status", "superseded_by"]
    assert (rows["adr-1"]["lifecycleBefore"], rows["adr-1"]["lifecycleAfter"]) == ("active", "superseded")
    assert rows["adr-2"]["fields"] == ["title"] and rows["adr-2"]["lifecycleAfter"] == "active"
    assert rows["adr-3"]["change"] == "added" and rows["adr-3"]["lifecycleBefore"] is None
    assert [c["commit"] for c in rows["adr-3"]["commits"]] == [second]
    assert rows["adr-3"]["commits"][0]["message"] == "postgres"
    # from the first release to the third: the commits of both changes of adr-2, oldest first
    later = store.changes("2026-01-31", until="2026-03-31", id="adr-2").to_dict()
    assert [c["commit"] for c in later["rows"][0]["commits"]] == [second, third]
    assert later["rows"][0]["lifecycleAfter"] == "withdrawn"
    assert store.changes("2026-02-01", until="2026-02-02").to_dict()["rows"] == []  # one commit in force


def test_changes_to_now_include_what_is_not_committed(history: tuple[knowtk.Store, list[str]]) -> None:
    store, _ = history
    answer = store.changes("2026-03-31").to_dict()
    assert answer["until"]["source"] == "files"
    rows = {r["id"]: r for r in answer["rows"]}
    assert set(rows) == {"adr-5", "adr-6"} and all(not r["commits"] for r in rows.values())
    git_root = Path(store.root).parent.parent
    (Path(store.root) / "0003-postgres.md").unlink()  # a removal seen by the present store
    removed = store.changes("2026-03-31", id="adr-3").to_dict()["rows"]
    seen = removed[0].pop("commits")  # no commit made it: the observation of what knowtk saw that found it gone
    assert removed == [
        {
            "id": "adr-3",
            "path": "0003-postgres.md",
            "change": "removed",
            "fields": [],
            "lifecycleBefore": "active",
            "lifecycleAfter": None,
        }
    ]
    assert [set(item) for item in seen] == [{"observation", "at"}]
    assert store.at(seen[0]["at"]).known_at == {
        "instant": seen[0]["at"],
        "source": "seen",
        "observation": seen[0]["observation"],
        "seenAt": seen[0]["at"],
    }
    assert git(git_root, "status", "--porcelain").count("0003-postgres.md") == 1


def test_paging_and_the_frame(history: tuple[knowtk.Store, list[str]]) -> None:
    store, _ = history
    pages = [store.changes("2026-01-31", limit=2, offset=o).to_dict() for o in (0, 2, 4, 6)]
    assert [p["nextOffset"] for p in pages] == [2, 4, 6, None]
    ids = [r["id"] for p in pages for r in p["rows"]]
    assert ids == ["adr-1", "adr-2", "adr-3", "adr-4", "adr-5", "adr-6", "note-1"]
    frame = store.changes("2026-01-31", until="2026-03-31").to_frame()
    assert list(frame.columns) == ["id", "path", "change", "fields", "lifecycle_before", "lifecycle_after", "commits"]
    assert frame.set_index("id").loc["adr-4", "change"] == "added"


def test_bad_arguments_are_refused_naming_them(history: tuple[knowtk.Store, list[str]]) -> None:
    store, _ = history
    bad = [
        ({"since": "2026-03-01", "until": "2026-02-01"}, "since"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-02-01", "until": "2999-01-01"}, "until"),
        ({"since": "2026-02-01", "limit": 0}, "limit"),
        ({"since": "2026-02-01", "limit": 501}, "limit"),
        ({"since": "2026-02-01", "offset": -1}, "offset"),
        ({"since": "2026-02-01", "offset": 2**70}, "offset"),
        ({}, "since"),
    ]
    for args, argument in bad:
        with pytest.raises(knowtk.InvalidArgument) as err:
            store.call("knowledge_changes", args)
        assert err.value.argument == argument, args
    with pytest.raises(knowtk.NoKnownPast) as early:
        store.call("knowledge_changes", {"since": "2025-12-31"})
    assert early.value.earliest == "2026-01-10T10:00:00Z"


def test_diff_between_instants(history: tuple[knowtk.Store, list[str]]) -> None:
    store, _ = history
    before = user_files(Path(store.root))
    text = store.diff("adr-2", "2026-01-31", "2026-03-31T00:00:00Z")
    assert "-title: Use REST\n" in text and "+title: Use REST everywhere\n" in text and "+status: withdrawn\n" in text
    assert text.startswith("--- 0002-rest.md (2026-01-31T23:59:59.999999Z)\n+++ 0002-rest.md (2026-03-31T00:00:00Z)")
    added = store.diff("adr-4", "2026-01-31")  # to the file now
    assert added.startswith("--- adr-4 (2026-01-31T23:59:59.999999Z: no such record)\n+++ 0004-grpc.md (now)")
    with pytest.raises(knowtk.RecordNotFound):
        store.diff("adr-9", "2026-01-31", "2026-02-28")
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.diff("adr-2", "2026-01-31", "2999-01-01")
    assert err.value.argument == "b"
    assert user_files(Path(store.root)) == before


def test_the_command_line(history: tuple[knowtk.Store, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    store, (_, second, _) = history
    assert main(["--store", store.root, "changes", "2026-01-31", "--until", "2026-02-28", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["total"] == 3 and answer["until"]["commit"] == second
    assert main(["--store", store.root, "changes", "2026-01-31", "--until", "2026-02-28"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 change(s) from 2026-01-31T23:59:59.999999Z to 2026-02-28T23:59:59.999999Z")
    assert "active -> superseded" in out and second[:8] in out
    assert main(["--store", store.root, "changes", "2026-03-01", "--until", "2026-02-01"]) == 2
    assert "since: " in capsys.readouterr().err
