"""knowledge_mutation across processes: a store this process cannot write, writers in other processes, a crash
whose files changed before the next open, and a seeded random run of mutations, outside edits and
concurrent writers checked after every step against a model of the files."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

import knowtk
from knowtk.write.splice import REMOVE, splice
from tests.helpers import REPO, StoreBuilder, markdown_digest, sha256_hex


def run_child(code: str, *args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


READ_ONLY_CHILD = """
    import json, os, shutil, sys, tempfile
    import knowtk
    root, state, as_nobody = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    if as_nobody:  # nobody may not read the interpreter's files: load every module and codec first, on a copy
        scratch = tempfile.mkdtemp()
        shutil.copytree(root, scratch + "/s")
        w = knowtk.open_store(scratch + "/s", state_dir=scratch + "/state")
        w.update("p-1", {"summary": "warm"}, expected_sha256=w.record("p-1")["record"]["sha256"])
        w.history()
        w.close()
        shutil.rmtree(scratch)
        os.setgid(65534)
        os.setuid(65534)
    s = knowtk.open_store(root, state_dir=state)
    rec = s.record("p-1")["record"]
    try:
        s.update("p-1", {"summary": "x"}, expected_sha256=rec["sha256"])
        print(json.dumps({"error": None}))
    except knowtk.KnowtkError as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc), "history": s.history()["total"]}))
"""


def test_a_store_this_process_cannot_write_is_refused_before_anything_is_touched():
    base = Path(tempfile.mkdtemp(prefix="knowtk-ro-"))
    try:
        os.chmod(base, 0o755)
        builder = StoreBuilder(base / "store")
        builder.page("p-1", "One", path="pages/p-1.md")
        state = base / "state"
        state.mkdir()
        os.chmod(state, 0o777)
        as_nobody = os.geteuid() == 0  # root writes anywhere: the child drops to nobody
        if not as_nobody:
            for folder in (builder.root, builder.root / "pages"):
                os.chmod(folder, 0o555)
        before = markdown_digest(builder.root)
        proc = run_child(READ_ONLY_CHILD, str(builder.root), str(state), "1" if as_nobody else "0")
        assert proc.returncode == 0, proc.stderr
        answer = json.loads(proc.stdout)
        assert answer["error"] == "StoreUnavailable" and "nothing was written" in answer["message"]
        assert answer["history"] == 0
        assert markdown_digest(builder.root) == before
        assert [p.name for p in (builder.root / "pages").iterdir()] == ["p-1.md"]  # not even a temporary file
    finally:
        for folder in base.rglob("*"):
            if folder.is_dir():
                os.chmod(folder, 0o755)
        shutil.rmtree(base)


RACER = """
    import sys
    import knowtk
    root, expected, n = sys.argv[1], sys.argv[2], sys.argv[3]
    s = knowtk.open_store(root)
    try:
        r = s.update("dec-2", {"summary": "process " + n}, expected_sha256=expected)
        print("won", r["receipt"]["records"][0]["sha256After"])
    except knowtk.PublicationConflict:
        print("conflict")
"""


def test_processes_racing_on_one_record_lose_no_write(builder):
    builder.write("decisions/dec-2.md", {"id": "dec-2", "kind": "claim", "title": "Two"}, "Two\n")
    builder.open().close()  # the state exists: the racers do not also race to create it
    expected = sha256_hex((builder.root / "decisions/dec-2.md").read_bytes())
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(RACER), str(builder.root), expected, str(n)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    lines = [o[0].strip() for o in outs]
    won = [line for line in lines if line.startswith("won")]
    assert len(won) == 1 and lines.count("conflict") == 3
    assert sha256_hex((builder.root / "decisions/dec-2.md").read_bytes()) == won[0].split()[1]
    s = builder.open()
    assert s.history("dec-2")["total"] == 1
    s.close()


KILLED = """
    import os, signal, sys
    import knowtk
    from knowtk.write import mutation
    root = sys.argv[1]
    mutation.set_step_hook(lambda step: os.kill(os.getpid(), signal.SIGKILL) if step == "file:0" else None)
    s = knowtk.open_store(root)
    rec = s.record("dec-2")["record"]
    s.supersede("dec-2", by="dec-7", expected_sha256=rec["sha256"], record={"kind": "claim", "title": "Seven"})
"""


def test_a_crash_whose_file_was_edited_meanwhile_is_rolled_back(builder):
    builder.write("decisions/dec-2.md", {"id": "dec-2", "kind": "claim", "title": "Two"}, "Two\n")
    proc = run_child(KILLED, str(builder.root))
    assert proc.returncode == -9, proc.stderr
    old = builder.root / "decisions/dec-2.md"
    assert b"status: superseded" in old.read_bytes()  # the first file was written, the second not
    edited = b"---\nid: dec-2\nkind: claim\ntitle: Two, edited by hand\n---\nTwo\n"
    old.write_bytes(edited)  # an editor saves before knowtk opens again
    s = builder.open()
    assert old.read_bytes() == edited  # the editor's file is kept
    assert not (builder.root / "claims/dec-7.md").exists()
    assert s.record("dec-2")["record"]["lifecycle"] == "active"  # the guard the crash recorded is lifted
    assert s.history()["total"] == 0
    report = s.check()
    assert report["ok"] is True
    assert any("rolled back" in line for line in report["earlier"])
    s.close()


# -- a seeded random run against a model of the files ----------------------------------------------


class Model:
    """What every Markdown file must hold, and each record's lifecycle, as the mutations so far make it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = {p: (root / p).read_bytes() for p in markdown_digest(root)}
        self.life = {f"n-{i}": "active" for i in range(6)}

    def path(self, rid: str) -> str:
        return next(p for p in self.files if p.endswith(f"/{rid}.md"))

    def sha256_hex(self, rid: str) -> str:
        return sha256_hex(self.files[self.path(rid)])

    def check(self, store: knowtk.Store) -> None:
        on_disk = {p: (self.root / p).read_bytes() for p in markdown_digest(self.root)}
        assert on_disk == self.files
        for rid, life in self.life.items():
            found = store.lookup(rid)["status"] == "found"
            assert found == (life == "active"), (rid, life)
            if life == "superseded":
                assert store.record(rid)["record"]["lifecycle"] == "superseded"


def _random_step(rng: random.Random, store: knowtk.Store, model: Model, n: int) -> str:
    rid = rng.choice(sorted(model.life))
    path = model.path(rid)
    life = model.life[rid]
    roll = rng.random()
    if roll < 0.12:  # a stale hash: refused, nothing changes
        with pytest.raises(knowtk.PublicationConflict):
            store.update(rid, {"summary": f"stale {n}"}, expected_sha256="f" * 64)
        return "stale"
    if roll < 0.25:  # an outside edit (an editor appends to the body)
        model.files[path] += f"edited outside at step {n}\n".encode()
        (model.root / path).write_bytes(model.files[path])
        return "outside edit"
    if life == "active" and roll < 0.55:
        value: object = rng.choice([f"summary {n}", None, [f"t{n}", "x"]])
        key = rng.choice(["summary", "tags"]) if value is not None else "summary"
        if key == "summary" and isinstance(value, list):
            value = f"summary {n}"
        res = store.update(rid, {key: value}, expected_sha256=model.sha256_hex(rid))
        if res["written"]:
            model.files[path] = splice(model.files[path], {key: REMOVE if value is None else value})
        return "update"
    if life == "active" and roll < 0.70:
        res = store.withdraw(rid, reason=f"step {n}", expected_sha256=model.sha256_hex(rid))
        model.files[path] = (model.root / path).read_bytes()
        assert res["receipt"]["records"][0]["sha256After"] == sha256_hex(model.files[path])
        assert b"status: withdrawn\n" in model.files[path]
        model.life[rid] = "withdrawn"
        return "withdraw"
    if life == "active" and roll < 0.80:
        new = f"m-{n}"
        store.supersede(rid, by=new, expected_sha256=model.sha256_hex(rid), record={"kind": "page", "title": f"M {n}"})
        model.files[path] = (model.root / path).read_bytes()
        model.files[f"pages/{new}.md"] = (model.root / f"pages/{new}.md").read_bytes()
        model.life[rid] = "superseded"
        return "supersede"
    if life != "active":
        store.reinstate(rid, reason=f"step {n}", expected_sha256=model.sha256_hex(rid))
        model.files[path] = (model.root / path).read_bytes()
        model.life[rid] = "active"
        return "reinstate"
    return _racing_writers(store, model, rid, n)


def _racing_writers(store: knowtk.Store, model: Model, rid: str, n: int) -> str:
    """Two threads and a second process write one record on the same hash: one lands, two are refused."""
    path, expected = model.path(rid), model.sha256_hex(rid)
    outcomes: list[str] = []

    def thread_write(k: int) -> None:
        try:
            store.update(rid, {"summary": f"thread {n}.{k}"}, expected_sha256=expected)
            outcomes.append(f"thread {n}.{k}")
        except knowtk.PublicationConflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=thread_write, args=(k,)) for k in range(2)]
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(RACER.replace('"dec-2"', repr(rid))), str(model.root), expected, str(n)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    outcomes.append(f"process {n}" if out.startswith("won") else "conflict")
    winners = [o for o in outcomes if o != "conflict"]
    assert len(winners) == 1, outcomes
    model.files[path] = splice(model.files[path], {"summary": winners[0]})
    return "race"


@pytest.mark.parametrize("seed", [7, 18])
def test_a_seeded_random_run_loses_nothing_and_refuses_every_conflict(builder, seed):
    for i in range(6):
        builder.write(f"pages/n-{i}.md", f"id: n-{i}\nkind: page  # a comment\ntitle: 'N {i}'\nsummary: s", "Body\n")
    store = builder.open()
    model = Model(builder.root)
    rng = random.Random(seed)
    done = []
    for n in range(40):
        done.append(_random_step(rng, store, model, n))
        model.check(store)
    assert store.check()["ok"] is True
    ops = [r["operation"] for r in store.history(limit=1000)["receipts"]]
    for op in ("withdraw", "supersede", "reinstate"):
        assert ops.count(op) == done.count(op)
    assert ops.count("update") >= done.count("race")
    assert {"stale", "outside edit", "update", "withdraw", "reinstate", "supersede", "race"} <= set(done), done
    store.close()
    again = builder.open()  # a new process sees the same store and the same lifecycles
    model.check(again)
    again.close()
