"""Known time: ``store.at(when)`` answers as a checkout of the commit in force would, and leaves Git alone.

Each test builds a small Git repository in tmp_path with commits at set dates (GIT_COMMITTER_DATE), the store
in a subfolder (``docs/adr``) or at the root.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

import knowtk
from knowtk.cli import main
from knowtk.scan.changes import SettledWalk
from tests.helpers import StoreBuilder, markdown_digest, records_built, required_in_ci

T1, T2, T3 = "2026-01-10T10:00:00Z", "2026-02-15T10:00:00+01:00", "2026-03-20T18:30:00Z"


def git(root: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    if date is not None:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True, env=env).stdout


def decision(rid: str, title: str, **meta: Any) -> dict[str, Any]:
    return {"id": rid, "kind": "claim", "type": "decision", "title": title, **meta}


def build_history(top: Path, folder: str = "docs/adr") -> StoreBuilder:
    """Three commits: two decisions; one superseded by a third and a title changed; one withdrawn and one added,
    its evidence's file changed. Then a staged change and an uncommitted one that no past may show."""
    b = StoreBuilder(top / folder if folder else top)
    git(top, "init", "-q", "-b", "main")
    git(top, "config", "user.email", "ada@example.org")
    git(top, "config", "user.name", "Ada")
    (top / ".gitignore").write_text(".knowtk/\n")
    b.write("0001-sqlite.md", decision("adr-1", "Use SQLite", recorded_at="2026-01-09"), "SQLite for the index.\n")
    b.write("0002-rest.md", decision("adr-2", "Use REST"), "REST between services.\n")
    b.raw("notes/bench.md", "---\nid: note-1\nkind: page\ntitle: Bench\n---\nWAL is fast.\nIt is.\n")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "first decisions", date=T1)
    b.write("0001-sqlite.md", decision("adr-1", "Use SQLite", status="superseded", superseded_by="adr-3"), "SQLite.\n")
    b.write("0003-postgres.md", decision("adr-3", "Use Postgres", supersedes=["adr-1"]), "Postgres.\n")
    b.write("0002-rest.md", decision("adr-2", "Use REST everywhere"), "REST between services.\n")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "postgres", date=T2)
    evidence = [{"path": "notes/bench.md", "lines": [6, 6], "quote": "WAL is fast."}]
    b.write("0002-rest.md", decision("adr-2", "Use REST everywhere", status="withdrawn", withdrawn_reason="gRPC"), "")
    b.write("0004-grpc.md", decision("adr-4", "Use gRPC", evidence=evidence, occurred_at="2026-03-19"), "gRPC.\n")
    b.raw("notes/bench.md", "---\nid: note-1\nkind: page\ntitle: Bench\n---\nWAL is fast.\nIt is, measured.\n")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "grpc", date=T3)
    b.write("0005-staged.md", decision("adr-5", "Staged only"), "x\n")
    git(top, "add", "-A")
    b.write("0006-loose.md", decision("adr-6", "Not even staged"), "y\n")
    return b


def git_state(top: Path) -> dict[str, Any]:
    """Everything of the repository a reader could change: HEAD, refs, the index and every file under .git, the
    work tree's Markdown, and what git status says."""
    files = {}
    for dirpath, _, names in os.walk(top / ".git"):
        for name in names:
            p = Path(dirpath) / name
            files[str(p.relative_to(top))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return {
        "head": git(top, "rev-parse", "HEAD"),
        "refs": git(top, "for-each-ref"),
        "git": files,
        "tree": {path: sha for path, sha in markdown_digest(top).items() if ".knowtk" not in path},  # not knowtk's
        "status": git(top, "status", "--porcelain"),
    }


def everything(store: knowtk.Store) -> dict[str, Any]:
    """What a reader sees: every record whole (title, lifecycle, chain, dates, hash, citations), counts, a search."""
    ids = sorted(store.snapshot().records)
    records = {}
    for rid in ids:
        answer = store.call("knowledge_record", {"id": rid})
        records[rid] = {k: v for k, v in answer.items() if k not in ("freshness", "knownAt")}
    grep = store.call("knowledge_grep", {"query": "use", "lifecycle": "all"})
    return {
        "records": records,
        "stats": store.call("knowledge_stats", {})["rows"],
        "grep": [(h["id"], h["lifecycle"], h["sha256"]) for h in grep["hits"]],
    }


def checkout(top: Path, commit: str, out: Path) -> Path:
    """A clone of the repository with ``commit`` checked out: what ``at`` must equal (the original untouched)."""
    if out.exists():
        return out
    subprocess.run(["git", "clone", "-q", str(top), str(out)], check=True, capture_output=True)
    git(out, "checkout", "-q", commit)
    return out


@pytest.mark.parametrize("folder", ["docs/adr", ""])
def test_at_equals_a_checkout_of_the_commit_in_force(tmp_path: Path, folder: str) -> None:
    top = tmp_path / "repo"
    build_history(top, folder)
    commits = git(top, "log", "--format=%H", "HEAD").split()[::-1]  # oldest first
    asked = [  # (instant, the commit in force then)
        ("2026-01-10T10:00:00Z", commits[0]),  # the very second of the first commit
        ("2026-02-01", commits[0]),  # a date: the end of that UTC day
        ("2026-02-15T09:00:00Z", commits[1]),  # T2 is 09:00 UTC
        ("2026-03-20T19:29:59+01:00", commits[1]),  # a second before T3, in another offset
        ("2026-03-21", commits[2]),
    ]
    root = top / folder
    with knowtk.open_store(root) as store:
        before = git_state(top)
        for when, commit in asked:
            past = store.at(when)
            assert past.known_at["commit"] == commit and past.known_at["source"] == "git"
            clone = checkout(top, commit, tmp_path / f"clone-{commit[:8]}")
            with knowtk.open_store(clone / folder, state_dir=tmp_path / f"state-{commit[:8]}") as then:
                assert everything(past) == everything(then), when
            answer = past.stats().to_dict()
            assert answer["knownAt"]["commit"] == commit
        assert git_state(top) == before  # work tree, index, HEAD, refs and .git untouched
        now = everything(store)
    assert set(now["records"]) == {"adr-1", "adr-2", "adr-3", "adr-4", "adr-5", "adr-6", "note-1"}


def test_the_past_shows_what_changed(tmp_path: Path) -> None:
    """The facts the three commits made, read back at each instant."""
    b = build_history(tmp_path / "repo")
    with b.open() as store:
        first, second, third = store.at("2026-01-31"), store.at("2026-02-28"), store.at("2026-03-31")
        assert sorted(first.snapshot().records) == ["adr-1", "adr-2", "note-1"]
        assert first.record("adr-1")["record"]["lifecycle"] == "active"
        assert second.record("adr-1")["record"]["lifecycle"] == "superseded"
        assert second.record("adr-1")["record"]["supersededBy"] == "adr-3"
        assert second.record("adr-2")["record"]["title"] == "Use REST everywhere"
        assert third.call("knowledge_stats", {})["total"] == 5
        withdrawn = third.call("knowledge_record", {"id": "adr-2"})
        assert withdrawn["status"] == "unavailable" and withdrawn["reason"]["code"] == "withdrawn"
        assert second.call("knowledge_record", {"id": "adr-2"})["record"]["lifecycle"] == "active"
        # a second view of the same past reuses its files and its state
        assert store.at("2026-02-20").engine is second.engine
        assert repr(second).endswith(f"(commit {second.known_at['commit'][:12]})>")


def test_bad_instants_are_refused_naming_the_argument(tmp_path: Path) -> None:
    b = build_history(tmp_path / "repo")
    with b.open() as store:
        for bad in ("yesterday", "2026-02-30", "2026-01-10T10:00Z", "2026-01-10 10:00:00", 20260110, None):
            with pytest.raises(knowtk.InvalidArgument) as err:
                store.at(bad)  # type: ignore[arg-type]
            assert err.value.argument == "when"
        with pytest.raises(knowtk.InvalidArgument, match="lies in the future") as err:
            store.at("2999-01-01T00:00:00Z")
        assert err.value.argument == "when"
        with pytest.raises(knowtk.NoKnownPast) as past:
            store.at("2026-01-10T09:59:59Z")  # a second before the first commit
        assert past.value.earliest == "2026-01-10T10:00:00Z" and "2026-01-10T10:00:00Z" in str(past.value)


def test_today_is_now_and_a_store_outside_git_has_no_known_past(tmp_path: Path, builder: StoreBuilder) -> None:
    b = build_history(tmp_path / "repo")
    with b.open() as store:
        today = datetime.now(UTC).date().isoformat()
        assert store.at(today).known_at["commit"] == git(b.root, "rev-parse", "HEAD").strip()
    builder.page("p1", "Alone")
    with builder.open() as alone:
        with pytest.raises(knowtk.NoKnownPast) as err:
            alone.at("2026-01-01")
        assert err.value.earliest is None and "no Git work tree" in str(err.value)
        assert alone.stats()["total"] == 1


def test_a_view_of_the_past_writes_nothing(tmp_path: Path) -> None:
    b = build_history(tmp_path / "repo")
    with b.open() as store:
        past = store.at("2026-02-28")
        sha = past.record("adr-2")["record"]["sha256"]
        before = markdown_digest(b.root)
        refusals = [
            lambda: past.withdraw("adr-2", reason="x", expected_sha256=sha),
            lambda: past.create("adr-9", {"kind": "claim", "title": "New"}),
            lambda: past.call("knowledge_mutation", {"operation": "withdraw", "id": "adr-2", "reason": "x"}),
            lambda: past.preview("withdraw", "adr-2", reason="x", expected_sha256=sha),
            lambda: past.adopt(dry_run=True),
            lambda: past.accept_safeguard_loss(),
        ]
        for refused in refusals:
            with pytest.raises(knowtk.PastIsReadOnly, match=r"2026-02-28T23:59:59\.999999Z"):
                refused()
        assert markdown_digest(b.root) == before
        present = store.record("adr-4")["record"]  # the present store still writes
        store.withdraw("adr-4", reason="gone", expected_sha256=present["sha256"])
        assert store.record("adr-4")["reason"]["code"] == "withdrawn"


def test_damaged_or_missing_history_leaves_the_present_answering(tmp_path: Path) -> None:
    b = build_history(tmp_path / "repo")
    top = b.root.parent.parent
    first = git(top, "rev-list", "--max-parents=0", "HEAD").strip()
    blob = git(top, "rev-parse", f"{first}:docs/adr/0002-rest.md").strip()
    loose = top / ".git" / "objects" / blob[:2] / blob[2:]
    with b.open() as store:
        assert store.at("2026-03-31").stats()["total"] == 5
        os.chmod(loose, 0o644)
        loose.write_bytes(b"not a git object")  # the first commit's version of one file is damaged
        with pytest.raises(knowtk.KnowtkError):
            store.at("2026-01-31")
        assert not any(p.name.startswith(".writing") for p in (b.root / ".knowtk" / "past").rglob("*"))
        assert store.stats()["total"] == 7  # the present store still answers
        assert store.at("2026-03-31").stats()["total"] == 5  # and an intact past too
    (top / ".git" / "HEAD").unlink()  # no repository any more: no past at all
    with b.open() as store:
        with pytest.raises(knowtk.NoKnownPast):
            store.at("2026-03-31")
        assert store.stats()["total"] == 7


def test_the_command_line_asks_the_past(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = build_history(tmp_path / "repo")
    third = git(b.root, "rev-parse", "HEAD").strip()
    assert main(["--store", str(b.root), "--at", "2026-03-31", "stats", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["total"] == 5 and answer["knownAt"]["commit"] == third
    assert main(["--store", str(b.root), "record", "adr-1", "--at", "2026-01-31T00:00:00Z"]) == 0
    out = capsys.readouterr().out
    assert "Use SQLite" in out and "known at 2026-01-31T00:00:00Z: commit " in out
    assert main(["--store", str(b.root), "--at", "2999-01-01", "stats"]) == 2
    assert capsys.readouterr().err.startswith("knowtk: --at: '2999-01-01' lies in the future")
    assert main(["--store", str(b.root), "--at", "2020-01-01", "stats"]) == 1
    assert "the earliest instant known is 2026-01-10T10:00:00Z" in capsys.readouterr().err


def test_mcp_takes_known_at_on_the_read_tools(tmp_path: Path) -> None:
    try:
        from mcp import Client
    except ImportError as exc:  # CI installs every extra: there this fails rather than skips
        required_in_ci(f"the MCP SDK is not installed ({exc})")
        raise
    from knowtk.mcp.server import build_server
    from knowtk.workspace import open_target

    b = build_history(tmp_path / "repo")

    async def scenario() -> None:
        async with Client(build_server(open_target(b.root))) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            asked = {name for name, t in tools.items() if "knownAt" in t.input_schema["properties"]}
            assert asked == set(tools) - {"knowledge_changes", "knowledge_history"}  # their own since/until
            res = await client.call_tool("knowledge_stats", {"knownAt": "2026-01-31"})
            assert not res.is_error and res.structured_content["total"] == 3
            assert res.structured_content["knownAt"]["committedAt"] == "2026-01-10T10:00:00Z"
            grep = await client.call_tool("knowledge_grep", {"query": "postgres", "knownAt": "2026-01-31"})
            assert grep.structured_content["hits"] == []
            grep = await client.call_tool("knowledge_grep", {"query": "postgres", "knownAt": "2026-02-28"})
            assert [h["id"] for h in grep.structured_content["hits"]] == ["adr-3"]
            bad = await client.call_tool("knowledge_stats", {"knownAt": "soon"})
            assert bad.is_error and bad.content[0].text.startswith("invalid_argument: knownAt: ")
            early = await client.call_tool("knowledge_stats", {"knownAt": "2001-01-01"})
            assert early.is_error and early.content[0].text.startswith("no_known_past: ")
            now = await client.call_tool("knowledge_stats", {})
            assert now.structured_content["total"] == 7 and "knownAt" not in now.structured_content
            unset = await client.call_tool("knowledge_stats", {"knownAt": None})  # null: the store as it is
            assert unset.structured_content == now.structured_content
            changes = await client.call_tool("knowledge_changes", {"since": "2026-01-31", "knownAt": "2026-02-28"})
            assert changes.is_error and "knownAt" in changes.content[0].text  # it compares two instants of its own

    anyio.run(scenario)


@pytest.mark.usefixtures("close_figures")
def test_lifecycle_over_time_counts_each_step_and_draws_it(tmp_path: Path) -> None:
    from knowtk.notebook import plot_lifecycle_over_time

    b = build_history(tmp_path / "repo")
    with b.open() as store:
        frame = store.lifecycle_over_time("M", until="2026-04-30")
        assert [t.isoformat()[:10] for t in frame["at"]] == [
            "2026-01-10",  # the earliest instant known: the first commit
            "2026-01-31",
            "2026-02-28",
            "2026-03-31",
            "2026-04-30",
        ]
        counts = frame[["active", "superseded", "withdrawn", "total"]].values.tolist()
        assert counts == [[3, 0, 0, 3], [3, 0, 0, 3], [3, 1, 0, 4], [3, 1, 1, 5], [3, 1, 1, 5]]
        assert frame["commit"].nunique() == 3
        weekly = store.lifecycle_over_time("W", since="2026-02-10", until="2026-02-20")
        assert list(weekly["total"]) == [3, 4, 4]  # 10 Feb, Sunday 15 Feb (after the second commit), 20 Feb
        with pytest.raises(knowtk.InvalidArgument) as err:
            store.lifecycle_over_time("fortnight")
        assert err.value.argument == "freq"
        with pytest.raises(knowtk.InvalidArgument) as err:
            store.lifecycle_over_time("D", since="2026-03-01", until="2026-02-01")
        assert err.value.argument == "since"
        ax = plot_lifecycle_over_time(frame)
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["active", "superseded", "withdrawn"]
        assert ax.get_ylim()[1] >= 5


@pytest.mark.usefixtures("close_figures")
def test_the_chain_widget_draws_the_chain_as_it_stood_and_steps_through_its_changes(tmp_path: Path) -> None:
    from knowtk.notebook import ChainWidget

    b = build_history(tmp_path / "repo")
    with b.open() as store:
        widget = ChainWidget(store, "adr-3")
        assert widget.actions.children  # the present store: the record's actions
        assert widget.steps() == ["2026-01-10T10:00:00+00:00", "2026-02-15T10:00:00+01:00"]  # its files' commits
        assert widget.step(-1) == "2026-02-15T10:00:00+01:00"
        assert set(widget.edges["from_id"]) == {"adr-1"} and "as the files stood at" in widget.note.value
        assert not widget.actions.children  # the past writes nothing
        widget.known_at.value = "2026-01-31"  # before the chain: adr-3 was no record yet
        assert widget.error is not None and "adr-3" in widget.error and "REFUSED" in widget.note.value
        widget.record.value = "(all chains)"
        assert widget.edges.empty and widget.error is None
        assert widget.step(1) == "2026-02-15T10:00:00+01:00"
        assert widget.step(1) == ""  # past the last change: now
        assert set(widget.edges["from_id"]) == {"adr-1"} and widget.note.value == ""
        widget.known_at.value = "soon"
        assert widget.error is not None and widget.error.startswith("known at: 'soon' is not a real date")


def test_the_grep_widget_asks_the_store_as_it_stood(tmp_path: Path) -> None:
    from knowtk.notebook import GrepWidget

    b = build_history(tmp_path / "repo")
    with b.open() as store:
        widget = GrepWidget(store, "postgres")
        assert [h["id"] for h in widget.result["hits"]] == ["adr-3"]
        widget.rows.select("adr-3")
        assert widget.actions.children  # the present store: the record's actions
        widget.known_at.value = "2026-01-31"
        assert widget.result is not None and widget.result["hits"] == []
        widget.query.value = "sqlite"
        assert [h["id"] for h in widget.result["hits"]] == ["adr-1"]
        assert "as the files stood at 2026-01-31T23:59:59.999999Z" in widget.status.value
        widget.rows.select("adr-1")
        assert not widget.actions.children and "for the index" in widget.detail.value
        widget.known_at.value = "2999-01-01"
        assert widget.result is None and widget.error is not None and widget.error.startswith("known at: ")


def test_a_moved_store_keeps_asking_its_past(tmp_path: Path) -> None:
    """The past files are kept in a folder named as the store (its name); a store moved and renamed with its
    state writes its pasts again under its new name, beside the old."""
    build_history(tmp_path / "repo", folder="")
    with knowtk.open_store(tmp_path / "repo") as store:
        assert store.at("2026-01-31").name == "repo"
    (tmp_path / "repo").rename(tmp_path / "renamed")
    with knowtk.open_store(tmp_path / "renamed", rebind_state=True) as store:
        past = store.at("2026-01-31")
        assert past.name == "renamed" and past.stats()["total"] == 3


def test_a_relative_state_folder_keeps_its_past_after_a_change_of_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state folder given relative to the working directory is that folder, wherever the caller goes next."""
    build_history(tmp_path / "repo", folder="")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    with knowtk.open_store("repo", state_dir="kept-state") as store:
        monkeypatch.chdir(tmp_path / "elsewhere")
        assert store.at("2026-01-31").stats()["total"] == 3
        assert store.stats()["total"] == 7  # the staged and the loose decision too
    assert (tmp_path / "kept-state" / "state.sqlite").is_file()
    assert not (tmp_path / "elsewhere" / "kept-state").exists()


def test_a_view_of_the_past_walks_its_files_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A past's files are written once: its first query walks them, later ones answer from that walk."""
    build_history(tmp_path / "repo", folder="")
    walked: list[str] = []
    listed_alone = SettledWalk._listed_alone

    def counted(self: SettledWalk, prefix: str, root_fd: int | None) -> Any:
        walked.append(prefix)
        return listed_alone(self, prefix, root_fd)

    monkeypatch.setattr(SettledWalk, "_listed_alone", counted)
    with knowtk.open_store(tmp_path / "repo") as store:
        past = store.at("2026-02-28")
        first = (past.stats().to_dict()["rows"], past.grep("REST").to_dict()["hits"])
        assert walked and past.freshness_mode == "settled" and store.freshness_mode != "settled"
        walked.clear()
        again = (past.stats().to_dict()["rows"], past.grep("REST").to_dict()["hits"])
        assert store.at("2026-02-20").stats().to_dict()["rows"] == first[0]
    assert again == first and first[1]
    assert walked == []


def test_changes_build_only_the_records_that_differ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stored pasts are told apart by file hash and lifecycle: a record alike on both sides is never built."""
    build_history(tmp_path / "repo", folder="")
    with knowtk.open_store(tmp_path / "repo") as store:
        want = store.changes("2026-02-28", until="2026-03-31").to_dict()["rows"]  # both pasts kept
        later = store.at("2026-03-31").snapshot()
        alike = {r.path for rid, r in later.records.items() if rid not in {row["id"] for row in want}}
    built = records_built(monkeypatch)
    with knowtk.open_store(tmp_path / "repo") as store:
        got = store.changes("2026-02-28", until="2026-03-31").to_dict()["rows"]
        compared = len(built)
        counts = store.lifecycle_counts("2026-03-31")  # counted from the lifecycles: nothing more built
    assert len(built) == compared and (counts["total"], counts["withdrawn"]) == (len(later.records), 1)
    assert got == want and {row["change"] for row in got} == {"added", "changed"}
    assert alike == {"0001-sqlite.md", "0003-postgres.md"}  # superseded before, and its replacement
    assert built and not set(built) & alike


def test_check_finds_and_removes_past_files_that_differ_from_git(tmp_path: Path) -> None:
    b = build_history(tmp_path / "repo")
    with b.open() as store:
        assert store.at("2026-01-31").stats()["total"] == 3
        assert store.at("2026-02-28").stats()["total"] == 4
        report = store.check()
        assert report["ok"] and not [f for f in report["found"] if f.startswith("past/")]
        assert store.at("2026-01-31").check()["ok"]  # a view checks its own state
        kept = b.root / ".knowtk" / "past"
        tampered = next(kept.glob("*/adr/0001-sqlite.md"))
        tampered.write_text(tampered.read_text().replace("Use SQLite", "Use Oracle"))
        report = store.check()
        assert not report["ok"]
        assert [f for f in report["found"] if f.startswith("past/")] == [
            f"past/{tampered.parent.parent.name[:12]}: 1 file(s) differ from Git's, e.g. 0001-sqlite.md"
        ]
        assert not tampered.exists() and len(list(kept.iterdir())) == 1  # the other past is kept
        titles = {store.at(when).record("adr-1")["record"]["title"] for when in ("2026-01-31", "2026-02-28")}
        assert titles == {"Use SQLite"}  # written again from Git
        assert store.check()["ok"]


def test_threads_asking_one_instant_at_once_share_one_past(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    b = build_history(tmp_path / "repo")
    with b.open() as store:
        with ThreadPoolExecutor(4) as pool:
            views = list(pool.map(lambda _: store.at("2026-02-28"), range(8)))
        assert len({id(view.engine) for view in views}) == 1
        with ThreadPoolExecutor(4) as pool:
            totals = list(pool.map(lambda view: view.stats()["total"], views))
        assert totals == [4] * 8
        assert len(list((b.root / ".knowtk" / "past").iterdir())) == 1


@pytest.mark.parametrize("command", [["mcp"], ["serve"], ["serve", "--status"]])
def test_the_servers_hold_the_present_store_and_refuse_at(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    b = build_history(tmp_path / "repo")
    assert main(["--store", str(b.root), "--at", "2026-01-31", *command]) == 2
    assert capsys.readouterr().err.startswith("knowtk: --at: ")
