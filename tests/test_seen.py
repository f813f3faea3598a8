"""What knowtk saw: every revision a scan observes is kept with the instant first seen (``STATE/seen.git``), so a
store outside Git has a past, a store in Git has its uncommitted states, and the store's own ``.git`` is untouched.

Instants come from the keeper's clock (``store.seen.clock``), set to seconds of the past: no sleeps.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

import knowtk
import knowtk.write.seen
from tests.helpers import REPO, StoreBuilder, required_in_ci
from tests.test_known_time import build_history, decision, git, git_state

T1, T2, T3 = "2026-06-01T10:00:00Z", "2026-06-01T11:00:00Z", "2026-06-01T12:00:00Z"


def clock_at(store: knowtk.Store, when: str) -> None:
    """Every observation of ``store`` from now on is dated ``when``."""
    stamp = datetime.fromisoformat(when).timestamp()
    store.seen.clock = lambda: stamp


def seen_git(root: Path) -> Callable[..., str]:
    folder = root / ".knowtk" / "seen.git"
    return lambda *args: (
        subprocess.run(["git", "--git-dir", str(folder), *args], capture_output=True, text=True, check=True).stdout
    )


def in_new_process(root: Path, code: str) -> Any:
    """Run ``code`` (it has ``store`` open on ``root``, and sets ``out``) in a new Python process; ``out`` back."""
    script = f"import json, knowtk\nstore = knowtk.open_store({str(root)!r})\n{textwrap.dedent(code)}\n"
    script += "print(json.dumps(out))\n"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[-1])


def outside_edits(builder: StoreBuilder) -> None:
    """Two pages seen at T1; one retitled, seen at T2; the other deleted and a third added, seen at T3."""
    builder.page("p1", "One", "First words.")
    builder.page("p2", "Two", "Second words.")
    with builder.open() as store:
        clock_at(store, T1)
        assert store.stats()["total"] == 2
        builder.page("p1", "One, retitled", "First words.")
        clock_at(store, T2)
        assert store.record("p1")["record"]["title"] == "One, retitled"
        builder.remove("p2.md")
        builder.page("p3", "Three", "Third words.")
        clock_at(store, T3)
        assert sorted(store.snapshot().records) == ["p1", "p3"]


def test_a_store_outside_git_answers_its_past_from_what_knowtk_saw(builder: StoreBuilder) -> None:
    outside_edits(builder)
    answer = in_new_process(
        builder.root,
        """
        out = {}
        for when in ["2026-06-01T10:00:00Z", "2026-06-01T10:59:59Z", "2026-06-01T11:00:00Z",
                     "2026-06-01T11:30:00+00:00", "2026-06-01T12:00:00Z", "2026-06-02"]:
            past = store.at(when)
            snap = past.snapshot()
            out[when] = {rid: r.title for rid, r in snap.records.items()}
            out[when + " knownAt"] = past.stats().to_dict()["knownAt"]
        try:
            store.at("2026-06-01T09:59:59Z")
        except knowtk.NoKnownPast as exc:
            out["early"] = exc.earliest
        rows = store.changes("2026-06-01T10:00:00Z", until="2026-06-01T12:00:00Z").to_dict()["rows"]
        out["changes"] = [(r["id"], r["change"], r["fields"], [c["at"] for c in r["commits"]]) for r in rows]
        """,
    )
    first = {"p1": "One", "p2": "Two"}
    assert answer["2026-06-01T10:00:00Z"] == answer["2026-06-01T10:59:59Z"] == first
    assert answer["2026-06-01T11:00:00Z"] == answer["2026-06-01T11:30:00+00:00"] == {"p1": "One, retitled", "p2": "Two"}
    assert answer["2026-06-01T12:00:00Z"] == answer["2026-06-02"] == {"p1": "One, retitled", "p3": "Three"}
    known = answer["2026-06-01T11:30:00+00:00 knownAt"]
    assert known["source"] == "seen" and known["seenAt"] == T2 and known["instant"] == "2026-06-01T11:30:00Z"
    assert len(known["observation"]) == 40 and "commit" not in known
    assert answer["early"] == T1
    assert answer["changes"] == [
        ["p1", "changed", ["title"], [T2]],
        ["p2", "removed", [], [T3]],
        ["p3", "added", [], [T3]],
    ]


def test_a_store_in_git_adds_its_uncommitted_states_the_newer_witness_winning(tmp_path: Path) -> None:
    """Git answers before the first observation; after it, the newer of the last observation and the last commit."""
    b = build_history(tmp_path / "repo")  # commits of 10 Jan, 15 Feb, 20 Mar; adr-5 staged, adr-6 not
    top = tmp_path / "repo"
    before = git_state(top)
    objects = git(top, "count-objects", "-v")
    with b.open() as store:
        clock_at(store, "2026-03-25T00:00:00Z")
        assert store.stats()["total"] == 7  # the first observation: the files as they are, uncommitted ones too
        assert git_state(top) == before and git(top, "count-objects", "-v") == objects
        assert store.at("2026-03-24").known_at["source"] == "git"  # before knowtk looked: Git alone
        seen = store.at("2026-03-26")
        assert seen.known_at["source"] == "seen" and seen.stats()["total"] == 7
        assert seen.known_at["seenAt"] == "2026-03-25T00:00:00Z"
        git(top, "add", "-A")
        git(top, "commit", "-qm", "adr-5 and adr-6", date="2026-04-01T00:00:00Z")
        head = git(top, "rev-parse", "HEAD").strip()
        assert store.at("2026-04-02").known_at["commit"] == head  # committed after the observation: Git wins
        b.write("0001-sqlite.md", {"id": "adr-1", "kind": "claim", "title": "Use SQLite (edited)"}, "x\n")
        clock_at(store, "2026-04-10T00:00:00Z")
        assert store.record("adr-1")["record"]["title"] == "Use SQLite (edited)"
        assert store.at("2026-04-05").record("adr-1")["record"]["title"] != "Use SQLite (edited)"
        edited = store.at("2026-04-11")
        assert (
            edited.known_at["source"] == "seen" and edited.record("adr-1")["record"]["title"] == "Use SQLite (edited)"
        )
        rows = store.changes("2026-03-21", until="2026-04-11").to_dict()["rows"]
        made = {r["id"]: [c.get("commit") or c["at"] for c in r["commits"]] for r in rows}
        assert made["adr-5"] == [head] and made["adr-1"] == ["2026-04-10T00:00:00Z"]
    after = git_state(top)  # the commit made above moved HEAD and the index: nothing else of .git changed
    assert after["refs"] == git(top, "for-each-ref") and "knowtk" not in after["refs"]
    assert git(top, "count-objects", "-v") != objects  # (the commit's own objects)
    # the committed files were not copied: the record's own packs hold only the blobs Git's HEAD had not
    own = seen_git(b.root)
    packs = (b.root / ".knowtk" / "seen.git" / "objects" / "pack").glob("*.idx")
    listed = "".join(own("verify-pack", "-v", str(idx)) for idx in packs)
    blobs = {line.split()[0] for line in listed.splitlines() if " blob " in line}
    wanted = {git(top, "hash-object", str(b.root / name)).strip() for name in ("0001-sqlite.md",)}
    wanted |= {git(top, "rev-parse", f"{head}:docs/adr/{name}").strip() for name in ("0005-staged.md", "0006-loose.md")}
    assert blobs == wanted
    assert (b.root / ".knowtk" / "seen.git" / "objects" / "info" / "alternates").read_text().strip() == str(
        top / ".git" / "objects"
    )


def test_an_answer_survives_a_sigkill_right_after_it(builder: StoreBuilder) -> None:
    builder.page("p1", "One")
    with builder.open() as store:
        assert store.stats()["total"] == 1
    script = textwrap.dedent(
        f"""
        import os, signal, sys, knowtk
        from pathlib import Path
        store = knowtk.open_store({str(builder.root)!r})
        Path({str(builder.root / "p2.md")!r}).write_text("---\\nid: p2\\nkind: page\\ntitle: Two\\n---\\n")
        total = store.stats()["total"]
        print(total, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL and proc.stdout.strip() == "2", proc.stderr
    with builder.open() as store:  # at() scans nothing: the observation is the killed process's
        assert store.at(datetime.now(UTC).date().isoformat()).stats()["total"] == 2
    assert seen_git(builder.root)("log", "--format=%s", "HEAD").splitlines()[0].startswith("knowtk saw a change")


def test_a_damaged_or_missing_record_leaves_the_present_answering_and_check_repairs_it(builder: StoreBuilder) -> None:
    outside_edits(builder)
    folder = builder.root / ".knowtk" / "seen.git"
    with builder.open() as store:
        for pack in (folder / "objects" / "pack").iterdir():
            os.chmod(pack, 0o644)
            pack.write_bytes(b"not a pack")
        builder.page("p4", "Four")
        assert store.stats()["total"] == 3  # the present store still answers
        with pytest.raises(knowtk.KnowtkError):
            store.at(T2)
        report = store.check()
        assert not report["ok"]
        assert [f for f in report["found"] if f.startswith("seen.git: damaged")]
        assert [r for r in report["repaired"] if r.startswith("seen.git: started again")]
        assert [u for u in report["unrepaired"] if "moved aside" in u]
        assert list(builder.root.glob(".knowtk/seen.git.damaged-*"))
        now = store.at(datetime.now(UTC).date().isoformat())
        assert now.known_at["source"] == "seen" and sorted(now.snapshot().records) == ["p1", "p3", "p4"]
        with pytest.raises(knowtk.NoKnownPast) as err:  # the observations before are lost
            store.at(T3)
        assert err.value.earliest is not None and err.value.earliest > T3
        assert store.check()["ok"]
        shutil.rmtree(folder)  # a missing record: kept again, whole, by the next query
        assert store.stats()["total"] == 3
        assert store.at(datetime.now(UTC).date().isoformat()).stats()["total"] == 3
        assert store.check()["ok"]


def test_mcp_asks_a_store_outside_git_at_an_instant_it_saw(builder: StoreBuilder) -> None:
    try:
        from mcp import Client
    except ImportError as exc:  # CI installs every extra: there this fails rather than skips
        required_in_ci(f"the MCP SDK is not installed ({exc})")
        raise
    from knowtk.mcp.server import build_server
    from knowtk.workspace import open_target

    outside_edits(builder)

    async def scenario() -> None:
        async with Client(build_server(open_target(builder.root))) as client:
            res = await client.call_tool("knowledge_record", {"id": "p1", "knownAt": "2026-06-01T10:30:00Z"})
            assert not res.is_error and res.structured_content["record"]["title"] == "One"
            assert res.structured_content["knownAt"]["source"] == "seen"
            assert res.structured_content["knownAt"]["seenAt"] == T1
            gone = await client.call_tool("knowledge_stats", {"knownAt": "2026-06-01T12:30:00Z"})
            assert gone.structured_content["total"] == 2
            early = await client.call_tool("knowledge_stats", {"knownAt": "2026-05-01"})
            assert early.is_error and T1 in early.content[0].text

    anyio.run(scenario)


def test_a_write_keeps_what_it_wrote_at_its_instant(builder: StoreBuilder) -> None:
    builder.page("p1", "One")
    with builder.open() as store:
        clock_at(store, T1)
        sha = store.record("p1")["record"]["sha256"]
        clock_at(store, T2)
        store.update("p1", {"title": "One, updated"}, expected_sha256=sha)  # no query after it
    log = seen_git(builder.root)("log", "--format=%ct %s", "HEAD").splitlines()
    stamps = [datetime.fromtimestamp(int(line.split()[0]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for line in log]
    assert stamps == [T2, T1]
    with builder.open() as store:
        assert store.at("2026-06-01T10:30:00Z").record("p1")["record"]["title"] == "One"
        assert store.at(T2).record("p1")["record"]["title"] == "One, updated"


def test_without_git_the_present_store_answers_and_check_says_why(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder.page("p1", "One")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))  # no git to run
    with builder.open() as store:
        assert store.stats()["total"] == 1
        builder.page("p2", "Two")
        assert store.stats()["total"] == 2
        report = store.check()
        why = "seen.git: an observation could not be kept (the git command is not installed or not on PATH)"
        assert report["found"].count(why) == 1 and not report["ok"]
        assert [u for u in report["unrepaired"] if u.startswith("seen.git: could not be started again")]
        monkeypatch.undo()  # git back: the next change keeps the whole store
        builder.page("p3", "Three")
        assert store.stats()["total"] == 3
        assert store.at(datetime.now(UTC).date().isoformat()).stats()["total"] == 3


@pytest.mark.parametrize("in_git", [False, True], ids=["outside-git", "in-git"])
def test_a_whole_observation_read_in_a_process_of_its_own_keeps_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_git: bool
) -> None:
    """A whole observation of many files is read and streamed by ``knowtk.write.seen_feed`` in a process of its own
    (the threshold lowered here): the tip holds every record file as it is (a committed one by HEAD's blob), and a
    feeder that fails costs the record, never the answer."""
    monkeypatch.setattr(knowtk.write.seen, "FEED_APART_FROM", 1)
    top = tmp_path / "repo"
    b = build_history(top, folder="") if in_git else StoreBuilder(top)
    if not in_git:
        for i in range(5):
            b.page(f"p{i}", f"Page {i}", f"Words {i}.")
    b.write("0009-odd name.md", decision("adr-9", "A name with a space"), "x\n")
    with b.open() as store:
        assert store.stats()["total"] >= 6
        assert store.seen.last_error is None and store.seen.kept == 1
        kept = seen_git(top)("ls-tree", "-r", "refs/knowtk/seen")
        blobs = {line.split("\t")[1]: line.split()[2] for line in kept.splitlines()}
        on_disk = {str(p.relative_to(top)): p for p in top.rglob("*.md") if ".knowtk" not in p.parts}
        assert blobs.keys() - {"knowtk.yaml"} == on_disk.keys()
        for path, full in on_disk.items():
            assert (
                blobs[path]
                == subprocess.run(
                    ["git", "hash-object", str(full)], capture_output=True, text=True, check=True
                ).stdout.strip()
            )
    shutil.rmtree(top / ".knowtk" / "seen.git")  # lost: kept again, whole, here when no feeder can start
    with monkeypatch.context() as patched:
        patched.setattr(sys, "executable", str(tmp_path / "no-python"))
        with b.open() as store:
            assert store.stats()["total"] >= 6 and store.seen.last_error is None and store.seen.kept == 1
    assert seen_git(top)("ls-tree", "-r", "refs/knowtk/seen") == kept
    monkeypatch.setattr(knowtk.write.seen, "write_plan", lambda path, *rest: Path(path).write_bytes(b"x"))
    shutil.rmtree(top / ".knowtk" / "seen.git")  # a lost record: kept again, whole, through a feeder that fails
    with b.open() as store:
        assert store.stats()["total"] >= 6  # the query answers
        assert store.seen.last_error is not None and "could not be read" in store.seen.last_error
