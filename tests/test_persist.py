"""The stored snapshot image: a new process that loads it answers exactly as a fresh build of the files.

A new ``Store`` on the same state dir stands for a new process (its own SQLite connection, an
empty scanner, the image loaded from ``snapshot_image_v1``); the reference is a store opened
with ``StatWalk`` on an empty state dir of its own (the safeguard sightings copied over: they are
state the Markdown cannot give back). A fake clock drives expiry, so that an expiry can pass
between two processes without sleeping.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import shutil
import sqlite3
import sys
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

import knowtk
from knowtk.engine import engine as engine_module
from knowtk.engine.desired import PatchedMap
from knowtk.engine.engine import Engine
from knowtk.model import shapes
from knowtk.scan.changes import StatWalk
from knowtk.snapshot import image_format, image_write, stored
from knowtk.snapshot.model import Snapshot
from knowtk.snapshot.overlay import Layered
from knowtk.snapshot.stored import StoredRecords, StoredSnapshot
from knowtk.state import STATE_FILE, StateDB
from tests.helpers import StoreBuilder

FIELDS = [f.name for f in shapes.fields(Snapshot) if not f.name.startswith("_")]
# what two engines built at different instants may differ in (the image keeps the instant it was built at)
COMPARED = [
    f
    for f in FIELDS
    if f not in ("generation", "changed_ids", "previous_generation", "image_key", "scanned_at", "evaluated_at")
]
SAFEGUARDS = ("keyword_withdrawals_v1", "lifecycle_guards_v1")
FOLDERS = ["", "team", "team/notes", "ops", "misc"]
WORDS = ["alpha", "beta", "gamma", "delta", "and", "river", "stone", "quiet", "orbit", "maple"]
TYPES = ["note", "memo", "meeting", "call"]
START = datetime(2030, 1, 1, tzinfo=UTC)


class Clock:
    """The engines' now (knowtk.engine.engine.now_utc, and knowtk.snapshot.stored's), moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(engine_module, "now_utc", c)
    monkeypatch.setattr(stored, "now_utc", c)
    return c


# -- a store edited at random ------------------------------------------------------------------------
class Editor:
    """Seeded changes to a store of small linked records (chains, dependencies, duplicates, expiry)."""

    def __init__(self, root: Path, seed: int, clock: Clock | None) -> None:
        self.root, self.rng, self.clock = root, random.Random(seed), clock
        self.serial = 0
        root.mkdir(parents=True, exist_ok=True)

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*.md") if p.is_file())

    def ids(self) -> list[str]:
        return [f"r{i}" for i in range(1, self.serial + 1)] or ["r1"]

    def text(self, rid: str | None = None) -> str:
        rng = self.rng
        self.serial += 1
        rid = rid or f"r{self.serial}"
        meta: dict[str, Any] = {
            "id": rid,
            "kind": rng.choice(["page", "page", "claim"]),
            "title": f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {rid}",
            "type": rng.choice(TYPES),
        }
        if rng.random() < 0.3:
            meta["aliases"] = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}", rid.upper()]
        if rng.random() < 0.5:
            meta["occurred_at"] = f"2029-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        if rng.random() < 0.3:
            meta["entities"] = rng.sample(self.ids(), min(2, len(self.ids())))
        if rng.random() < 0.2:
            meta["depends_on"] = [rng.choice([*self.ids(), "missing-one"])]
        if rng.random() < 0.3:
            meta["tags"] = rng.sample(["x", "y", "z"], rng.randint(1, 2))
        roll = rng.random()
        if roll < 0.12:
            meta.update(status="superseded", superseded_by=rng.choice([*self.ids(), "nowhere"]))
            meta["revision"] = rng.randint(1, 3)
        elif roll < 0.17:
            meta["status"] = "withdrawn"
        elif roll < 0.25:
            meta["revision"] = rng.randint(1, 4)
        if rng.random() < 0.2 and self.clock is not None:  # expiring within the next steps of the clock
            when = self.clock.now + timedelta(hours=rng.randint(-2, 30))
            meta["expires_at"] = rng.choice([when.strftime("%Y-%m-%dT%H:%M:%SZ"), when.strftime("%Y-%m-%d")])
        body = " ".join(rng.choices(WORDS, k=rng.randint(3, 30)))
        return f"---\n{yaml.safe_dump(meta, sort_keys=False).rstrip()}\n---\n{body}\n"

    def new_path(self) -> Path:
        folder = self.root / self.rng.choice(FOLDERS)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"f{self.serial + 1}-{self.rng.randint(0, 99)}.md"

    def id_of(self, path: Path) -> str | None:
        try:
            return str(yaml.safe_load(path.read_text(encoding="utf-8").split("---")[1])["id"])
        except Exception:
            return None

    def step(self) -> list[str]:
        return [self.change() for _ in range(self.rng.choice([0, 0, 1, 1, 2, 3]))]

    def change(self) -> str:
        rng = self.rng
        files = self.files()
        actions = ["create"] * 3 + ["config"]
        if files:
            actions += ["edit"] * 4 + ["rename", "move", "delete", "duplicate", "unduplicate", "break"]
            actions += ["withdraw", "supersede", "restate", "odd"]
        action = rng.choice(actions)
        if action == "create":
            self.new_path().write_text(self.text(), encoding="utf-8")
        elif action == "edit":
            path = rng.choice(files)
            path.write_text(self.text(self.id_of(path)), encoding="utf-8")
        elif action == "rename":
            path = rng.choice(files)
            path.rename(path.with_name(f"renamed{self.serial}-{rng.randint(0, 99)}.md"))
            self.serial += 1
        elif action == "move":
            path = rng.choice(files)
            target = self.new_path()
            self.serial += 1
            path.rename(target)
        elif action == "delete":
            rng.choice(files).unlink()
        elif action == "duplicate":  # a second file claims an id: neither is a record
            self.new_path().write_text(self.text(self.id_of(rng.choice(files))), encoding="utf-8")
        elif action == "unduplicate":  # one of the files of a duplicated id goes: the other is a record again
            by_id: dict[str | None, list[Path]] = {}
            for p in files:
                by_id.setdefault(self.id_of(p), []).append(p)
            dups = [ps for rid, ps in by_id.items() if rid and len(ps) > 1]
            (rng.choice(dups) if dups else files)[0].unlink()
        elif action == "break":
            rng.choice(files).write_text("---\nid: [broken\n---\nwords and more\n", encoding="utf-8")
        elif action in ("withdraw", "supersede", "restate"):
            path = rng.choice(files)
            rid = self.id_of(path) or f"r{self.serial + 1}"
            meta: dict[str, Any] = {"id": rid, "kind": "page", "title": f"{rng.choice(WORDS).title()} {rid}"}
            if action == "withdraw":
                meta["status"] = "withdrawn"
            elif action == "supersede":
                meta.update(status="superseded", superseded_by=rng.choice(self.ids()), revision=rng.randint(1, 4))
            else:  # back as active: the safeguards decide (a higher revision restates it)
                meta["revision"] = rng.randint(1, 6)
            path.write_text(f"---\n{yaml.safe_dump(meta).rstrip()}\n---\nriver {rid}\n", encoding="utf-8")
        elif action == "odd":  # frontmatter as people write it: unquoted dates, offsets, numbers, shared names
            path, n = rng.choice(files), self.serial
            when = (self.clock.now if self.clock else START) + timedelta(hours=rng.randint(-3, 20))
            path.write_text(
                rng.choice(
                    [
                        f"---\nid: r{n}\nkind: page\ntitle: Alpha river\nexpires_at: {when:%Y-%m-%d}\n---\nalpha\n",
                        f"---\nid: r{n}\nkind: claim\ntitle: Beta\nexpires_at: '{when:%Y-%m-%dT%H:%M:%S}+05:30'\n"
                        "aliases: [Alpha river, alpha river]\n---\nbeta river\n",
                        f"---\nid: {n}\nkind: page\ntitle: [a, b]\n---\nstone\n",
                        f"---\nid: r{n}\nkind: page\ntitle: Gamma\ndepends_on: r{n}\nsuperseded_by: r{n}\n"
                        "status: superseded\n---\ngamma\n",
                        "no frontmatter at all, only alpha words\n",
                        f"---\nid: r{n}\nkind: page\ntitle: Orbit\nrevision: 99\nstatus: active\n---\norbit\n",
                    ]
                ),
                encoding="utf-8",
            )
        elif action == "config":
            self.change_config()
        return action

    def change_config(self) -> None:
        config = self.root / "knowtk.yaml"
        if config.exists() and self.rng.random() < 0.3:
            config.unlink()
        else:
            alias = self.rng.choice(["memo", "call", "minutes"])
            config.write_text(f"name: live\nontology:\n  note: {{aliases: [{alias}]}}\n", encoding="utf-8")


# -- what is compared --------------------------------------------------------------------------------
def reference(root: Path, state_dir: Path, tested: knowtk.Store) -> knowtk.Store:
    """A store opened now with StatWalk on a new state holding the tested state's safeguard sightings."""
    state = StateDB(str(state_dir / STATE_FILE))
    with state.transaction() as conn:
        for table in SAFEGUARDS:
            rows = tested.engine.state.conn.execute(f"SELECT * FROM {table}").fetchall()
            if rows:
                conn.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
    state.close()
    return knowtk.open_store(root, state_dir=state_dir, change_source=StatWalk)


def answers(store: knowtk.Store, seed: int) -> dict[str, Any]:
    """grep in every mode with filters, lookup, records, the timeline: each as the contract's dict."""
    rng = random.Random(seed)
    word, other = rng.choice(WORDS), rng.choice(WORDS)
    calls = {
        "grep": lambda: store.grep(word, limit=50),
        "grep_any": lambda: store.grep(f"{word} {other}", mode="any", lifecycle="all", limit=50),
        "grep_phrase": lambda: store.grep(f'"{word} {other}"', mode="phrase", limit=50),
        "grep_type": lambda: store.grep(word, type="note", tag=["x", "y"], limit=50),
        "grep_scope": lambda: store.grep(word, scope="team", lifecycle="superseded", limit=50),
        "lookup_id": lambda: store.lookup(f"r{rng.randint(1, 40)}", lifecycle="all"),
        "lookup_title": lambda: store.lookup(word.title()),
        "lookup_alias": lambda: store.lookup(f"R{rng.randint(1, 40)}", lifecycle="all"),
        "records": lambda: store.records(lifecycle="all", limit=1000),
        "records_note": lambda: store.records(type="note", limit=1000),
        "timeline": lambda: store.timeline(limit=50),
    }
    out = {}
    for name, call in calls.items():
        try:
            answer = call().to_dict()
        except knowtk.KnowtkError as exc:  # an argument refused: refused the same way by both
            answer = {"error": type(exc).__name__}
        answer.pop("freshness", None)
        out[name] = answer
    return out


def snapshot_state(engine: Engine) -> dict[str, Any]:
    """The snapshot's tables, read inside one call (a stored part found damaged runs it again)."""
    return engine.run(lambda: _snapshot_state(engine, engine.snapshot()))


def _snapshot_state(engine: Engine, snap: Snapshot) -> dict[str, Any]:
    out = {name: getattr(snap, name) for name in COMPARED}
    out["records"] = dict(snap.records.items())
    out["folders"] = snap.folders
    out["fingerprints"] = {scope: snap.fingerprint(scope) for scope in [(), *[(f,) for f in snap.folders]]}
    out["desired"] = engine._desired(snap)
    return out


def keyword_rows(store: knowtk.Store) -> tuple[dict[str, str], dict[str, str]]:
    conn = store.engine.state.conn
    return (
        dict(conn.execute("SELECT id, sha256 FROM keyword_rows_v1_root")),
        dict(conn.execute("SELECT id, sha256 FROM keyword_history_rows_v1_root")),
    )


def assert_same(tested: list[knowtk.Store], root: Path, scratch: Path, seed: int, context: object) -> None:
    """Every tested store answers (and holds a snapshot) as a fresh StatWalk build of the files."""
    seen = [answers(store, seed) for store in tested]
    ref = reference(root, scratch, tested[0])
    try:
        expected = answers(ref, seed)
        expected_state = snapshot_state(ref.engine)
        for store, got in zip(tested, seen, strict=True):
            for name in expected:
                assert got[name] == expected[name], (context, name)
            state = snapshot_state(store.engine)
            for name in expected_state:
                assert state[name] == expected_state[name], (context, name)
            assert keyword_rows(store) == expected_state["desired"], context  # the rows, whatever the mark says
    finally:
        ref.close()
        shutil.rmtree(scratch)


def image_meta(state_dir: Path) -> dict[str, Any] | None:
    conn = sqlite3.connect(state_dir / STATE_FILE)
    try:
        row = conn.execute("SELECT data FROM snapshot_image_v1 WHERE part = 'meta'").fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()
    return json.loads(row[0]) if row else None


def how_adopted(store: knowtk.Store) -> str:
    """What the first snapshot of a new store was made from: the image as is, the image plus drift, a build."""
    records = store.engine._snapshot.records if store.engine._snapshot is not None else None
    if isinstance(records, StoredRecords):
        return "image"
    if isinstance(records, Layered):
        return "drift"
    return "build"


# -- 1. seeded random: new processes on one state ----------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_new_process_answers_as_a_fresh_build(
    tmp_path: Path, clock: Clock, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if seed == 3:  # images written often by long-lived stores too (a drift of 2 files)
        monkeypatch.setattr(engine_module, "IMAGE_DRIFT_FILES", 1)
    if seed == 4:  # stored records filled in bulk after a few single loads
        monkeypatch.setattr(stored, "BULK_AFTER", 3)
    if seed == 2:  # a record whose file changed since the image taken back from the maps inverted at once
        monkeypatch.setattr(stored, "STALE_SCANS", 0)
    if seed in (1, 2):  # the image patched whenever it can be (a small store's patches are large beside it)
        monkeypatch.setattr(image_write, "PATCH_SHARE", 0)
    editor = Editor(tmp_path / "store", seed, clock)
    rng = random.Random(seed * 7)
    for _ in range(25):
        editor.change()
    state_dir = tmp_path / "state"
    first = knowtk.open_store(editor.root, state_dir=state_dir)
    first.grep("alpha")
    open_stores = [first]
    seen: dict[str, int] = {}
    for step in range(90):
        early = rng.random() < 0.4  # the new process (if any) opens before this step's edits, else after
        if early:
            open_stores = _new_process(open_stores, editor.root, state_dir, rng, seen)
        if rng.random() < 0.35:  # time passes (or knowtk.yaml changes) and the open stores answer, files untouched
            clock.now += timedelta(hours=rng.choice([1, 6, 24]))
            if rng.random() < 0.3:
                editor.change_config()
            for store in open_stores:
                store.grep(rng.choice(WORDS), limit=1)
        actions = editor.step()
        clock.now += timedelta(hours=rng.choice([0, 0, 0, 1, 3, 12]))
        if not early:
            open_stores = _new_process(open_stores, editor.root, state_dir, rng, seen)
        assert_same(open_stores, editor.root, tmp_path / f"ref{step}", seed * 1000 + step, (step, actions))
    for store in open_stores:
        store.close()
    assert seen.get("image", 0) >= 1 and seen.get("drift", 0) >= 1, seen  # both ways were taken


def _new_process(
    open_stores: list[knowtk.Store], root: Path, state_dir: Path, rng: random.Random, seen: dict[str, int]
) -> list[knowtk.Store]:
    """Maybe a new process: the old one closed, or still open and querying too; sometimes two at once."""
    if rng.random() >= 0.55:
        return open_stores
    new = knowtk.open_store(root, state_dir=state_dir)
    if rng.random() >= 0.6:
        return [*open_stores[-1:], new]
    for old in open_stores:
        old.close()
    new.engine.snapshot()
    if rng.random() < 0.4:  # and at once another one, on the image that one has just written
        new.close()
        new = knowtk.open_store(root, state_dir=state_dir)
        new.engine.snapshot()
    kind = how_adopted(new)
    seen[kind] = seen.get(kind, 0) + 1
    return [new]


# -- targeted cases ------------------------------------------------------------------------------------
def _built_chain(tmp_path: Path) -> tuple[Path, Path]:
    """(store, state): the chain store, its state built (and its image written) by a first process."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _store_with_chain(root)
    with knowtk.open_store(root, state_dir=state_dir) as first:
        first.grep("alpha")
    return root, state_dir


def _store_with_chain(root: Path) -> None:
    def page(path: str, rid: str, title: str, body: str = "alpha words", **meta: Any) -> None:
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        fields = {"id": rid, "kind": "page", "title": title, **meta}
        full.write_text(f"---\n{yaml.safe_dump(fields, sort_keys=False).rstrip()}\n---\n{body}\n", encoding="utf-8")

    page("a/one.md", "one", "First thing", status="superseded", superseded_by="two", revision=2)
    page("a/two.md", "two", "Second thing", aliases=["The Second"], occurred_at="2029-05-01")
    page("b/three.md", "three", "Third thing", depends_on=["two"], entities=["one"])
    page("b/four.md", "four", "Fourth thing", expires_at="2030-01-01T06:00:00Z", occurred_at="2029-06-01")
    page("c/five.md", "five", "Fifth thing", depends_on=["four"])
    page("c/six.md", "six", "Sixth thing", status="withdrawn")
    for i in range(12):
        page(f"d/n{i}.md", f"n{i}", f"Note {i}", f"beta gamma {i}", type="note", tags=["x"])


def _edit(root: Path, path: str, rid: str, title: str, **meta: Any) -> None:
    fields = {"id": rid, "kind": "page", "title": title, **meta}
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(f"---\n{yaml.safe_dump(fields, sort_keys=False).rstrip()}\n---\nriver alpha\n", encoding="utf-8")


CHANGES = {
    "nothing": lambda root: None,
    "edit": lambda root: _edit(root, "a/two.md", "two", "Renamed second"),
    "remove_old_file": lambda root: (root / "a/two.md").unlink(),
    "rename_old_file": lambda root: (root / "a/two.md").rename(root / "b/two-moved.md"),
    "becomes_duplicate": lambda root: _edit(root, "c/dup.md", "two", "Another second"),
    "broken": lambda root: (root / "b/three.md").write_text("---\nid: [x\n---\n", encoding="utf-8"),
    "withdraw": lambda root: _edit(root, "d/n3.md", "n3", "Note 3", status="withdrawn"),
    "restate_stale": lambda root: _edit(root, "a/one.md", "one", "First thing", revision=1),
    "config": lambda root: (root / "knowtk.yaml").write_text("ontology:\n  note: {aliases: [memo]}\n"),
}
# the second change, made while the new process is open (after its first query)
LATER = {
    "edit_other": lambda root: _edit(root, "d/n5.md", "n5", "Note five again", type="memo"),
    "edit_same": lambda root: _edit(root, "b/three.md", "three", "Third, retitled", depends_on=["nowhere"]),
    "stops_duplicate": lambda root: (root / "c/dup.md").unlink(missing_ok=True),
    "nothing": lambda root: None,
}


@pytest.mark.parametrize("later", sorted(LATER))
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_between_processes(tmp_path: Path, clock: Clock, change: str, later: str) -> None:
    root, state_dir = _built_chain(tmp_path)
    CHANGES[change](root)
    store = knowtk.open_store(root, state_dir=state_dir)
    store.engine.snapshot()
    assert how_adopted(store) == ("image" if change == "nothing" else "drift" if change != "config" else "build")
    assert_same([store], root, tmp_path / "ref1", 1, change)
    clock.now += timedelta(hours=8)  # four.md expires: five depends on it
    LATER[later](root)
    assert_same([store], root, tmp_path / "ref2", 2, (change, later))
    _edit(root, "d/n7.md", "n7", "Seven renamed")
    assert_same([store], root, tmp_path / "ref3", 3, (change, later, "n7"))
    store.close()


@pytest.mark.parametrize("trigger", ["expiry", "config", "safeguard"])
def test_a_rebuild_without_a_file_change_then_an_edit(tmp_path: Path, clock: Clock, trigger: str) -> None:
    """The image taken as is, then rebuilt for a reason other than a file (an expiry passing, knowtk.yaml,
    another process's safeguard), then a file edited: the edit must be seen."""
    root, state_dir = _built_chain(tmp_path)
    store = knowtk.open_store(root, state_dir=state_dir)
    store.grep("alpha")
    assert how_adopted(store) == "image"
    if trigger == "expiry":
        clock.now += timedelta(hours=8)
    elif trigger == "config":
        (root / "knowtk.yaml").write_text("ontology:\n  note: {aliases: [memo]}\n")
    else:  # another process sees n2 withdrawn; the file is back as it was before this one looks again
        original = (root / "d/n2.md").read_bytes()
        _edit(root, "d/n2.md", "n2", "Note 2", status="withdrawn")
        with knowtk.open_store(root, state_dir=state_dir) as other:
            other.grep("alpha")
        (root / "d/n2.md").write_bytes(original)
    store.grep("alpha")
    _edit(root, "d/n8.md", "n8", "Retitled second")
    assert_same([store], root, tmp_path / "ref", 5, trigger)
    assert store.lookup("Retitled second", lifecycle="all")["status"] == "found"
    store.close()


# -- 2. damage -----------------------------------------------------------------------------------------
def _inflated(part: str, raw: bytes) -> bytes:
    """A part's JSON text as the image keeps it: deflated, or as it is (``STORED_PLAIN``)."""
    return raw if part in image_format.STORED_PLAIN else zlib.decompress(raw)


def _damage(state_dir: Path, how: str, part: str, old_parts: dict[str, str]) -> None:
    conn = sqlite3.connect(state_dir / STATE_FILE)
    with conn:
        if how == "bad_json":
            conn.execute("UPDATE snapshot_image_v1 SET data = '{\"not' WHERE part = ?", (part,))
        elif how == "digest":  # valid JSON of the right shape (deflated, as kept), another content
            raw = conn.execute("SELECT data FROM snapshot_image_v1 WHERE part = ?", (part,)).fetchone()[0]
            data = json.loads(_inflated(part, raw))
            if isinstance(data, dict) and part.startswith("patch."):
                data = {**data, "parts": {}}
            elif isinstance(data, dict):
                data = {k: data[k] for k in list(data)[1:]}
            else:
                data = [list(reversed(x)) if isinstance(x, list) else x for x in data][::-1]
            text = json.dumps(data).encode()
            kept = text if part in image_format.STORED_PLAIN else zlib.compress(text)
            conn.execute("UPDATE snapshot_image_v1 SET data = ? WHERE part = ?", (kept, part))
        elif how == "missing":
            conn.execute("DELETE FROM snapshot_image_v1 WHERE part = ?", (part,))
        elif how == "meta_gone":
            conn.execute("DELETE FROM snapshot_image_v1 WHERE part = 'meta'")
        elif how == "meta_broken":
            conn.execute("UPDATE snapshot_image_v1 SET data = '[1' WHERE part = 'meta'")
        elif how == "table_dropped":
            conn.execute("DROP TABLE snapshot_image_v1")
        elif how == "other_image":  # the same part as an earlier image wrote it
            conn.execute("UPDATE snapshot_image_v1 SET data = ? WHERE part = ?", (old_parts[part], part))
    conn.close()


def _parts(state_dir: Path) -> dict[str, str]:
    conn = sqlite3.connect(state_dir / STATE_FILE)
    try:
        return dict(conn.execute("SELECT part, data FROM snapshot_image_v1"))
    finally:
        conn.close()


PARTS = [
    "points.0",  # (a small store: one points part holds every record)
    "record_ids",
    "record_paths",
    "record_sha",
    "record_facets",
    "lifecycle",
    "names",
    "paths",
    "unavailable",
    "index.claims",
    "index.expiring",
]


@pytest.mark.parametrize(
    ("how", "part"),
    [(how, part) for how in ("bad_json", "digest", "missing", "other_image") for part in PARTS]
    + [(how, "-") for how in ("meta_gone", "meta_broken", "table_dropped")],
)
def test_a_damaged_image_costs_a_build_never_an_answer(
    tmp_path: Path, clock: Clock, how: str, part: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(image_write, "PATCHES_MAX", 0)  # the second process writes the image whole (patches: below)
    root, state_dir = _built_chain(tmp_path)
    old_parts = _parts(state_dir)
    _edit(root, "d/n1.md", "n1", "Note one, edited", status="superseded", superseded_by="n2")
    _edit(root, "d/n9.md", "n9", "Note nine", expires_at="2030-01-03", depends_on=["nowhere"])
    (root / "a/two.md").rename(root / "b/two.md")
    with knowtk.open_store(root, state_dir=state_dir) as second:  # adopts the image, writes the next one
        second.grep("alpha")
    key = image_meta(state_dir)["key"]  # type: ignore[index]
    assert _parts(state_dir)[part if part != "-" else "meta"] != old_parts.get(part if part != "-" else "meta")
    _damage(state_dir, how, part, old_parts)
    store = knowtk.open_store(root, state_dir=state_dir)
    assert_same([store], root, tmp_path / "ref1", 1, (how, part))
    _edit(root, "d/n4.md", "n4", "Note four, edited", depends_on=["n1"])  # a build reads the index parts
    assert_same([store], root, tmp_path / "ref2", 2, (how, part))
    report = store.check()
    assert report["ok"] or report["repaired"], report
    assert not report["unrepaired"], report
    store.close()
    meta = image_meta(state_dir)
    assert meta is not None and meta["key"] != key  # written again
    parts = _parts(state_dir)
    for name, digest in meta["parts"].items():  # whole: every part there, with its digest
        assert image_format.hashlib.sha256(_inflated(name, parts[name])).hexdigest() == digest
    with knowtk.open_store(root, state_dir=state_dir) as again:  # and used by the next process
        again.engine.snapshot()
        assert how_adopted(again) in ("image", "drift")
        assert_same([again], root, tmp_path / "ref3", 3, (how, part))


# -- 2b. an image patched, not written again ------------------------------------------------------------
def _second_process(root: Path, state_dir: Path) -> None:
    """Edits made while no process runs, then a new process that applies them to the image (and stores them)."""
    with knowtk.open_store(root, state_dir=state_dir) as store:
        store.grep("alpha")
        assert how_adopted(store) == "drift"


@pytest.fixture
def small_patches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Patches however large beside the parts (a small store's image would otherwise be written whole)."""
    monkeypatch.setattr(image_write, "PATCH_SHARE", 0)


@pytest.mark.usefixtures("small_patches")
def test_a_process_that_applied_changes_patches_the_image_and_the_next_reads_it_as_a_build(
    tmp_path: Path, clock: Clock
) -> None:
    root, state_dir = _built_chain(tmp_path)
    first = image_meta(state_dir)
    assert first is not None and first["patches"] == []
    before = _parts(state_dir)
    _edit(root, "d/n1.md", "n1", "Note one, edited", status="superseded", superseded_by="n2")
    _edit(root, "d/n9.md", "n9", "Note nine", expires_at="2030-01-03", depends_on=["nowhere"])
    (root / "a/two.md").rename(root / "b/two.md")
    (root / "d/n4.md").unlink()
    _edit(root, "e/new.md", "new", "A new one", aliases=["Fresh"], depends_on=["n1"])
    _second_process(root, state_dir)
    meta = image_meta(state_dir)
    assert meta is not None and meta["key"] != first["key"] and meta["parts"] == first["parts"]
    assert [name for name, _, _ in meta["patches"]] == ["patch.0"]
    after = _parts(state_dir)
    assert {k: v for k, v in after.items() if k not in ("meta", "patch.0")} == {
        k: v for k, v in before.items() if k != "meta"
    }  # the parts were not written again
    patch = json.loads(zlib.decompress(after["patch.0"]))
    assert "n1" in patch["parts"]["lifecycle"]["set"] and "d/n4.md" in patch["parts"]["paths"]["del"]
    assert sorted(r[0] for r in patch["records"]["set"]) == ["n1", "n9", "new", "two"]
    assert patch["records"]["del"] == ["n4"]
    with knowtk.open_store(root, state_dir=state_dir) as third:  # the patched image, taken as it is
        third.engine.snapshot()
        assert how_adopted(third) == "image"
        assert_same([third], root, tmp_path / "ref1", 1, "patched")
        _edit(root, "d/n5.md", "n5", "Note five", depends_on=["new"])  # and a build on it
        assert_same([third], root, tmp_path / "ref2", 2, "patched, then edited")


@pytest.mark.usefixtures("small_patches")  # (a patch: an image written whole would parse every part)
@pytest.mark.parametrize("undone", [True, False])
def test_an_image_a_process_left_behind_the_scan_cache_knows_the_files_it_is_behind_on(
    tmp_path: Path, clock: Clock, undone: bool
) -> None:
    """A process that sees edits writes the scan cache, not an image (too little drift): it records in the image
    the files the image is behind on, so the next new process takes the image with those as its drift (it
    compares no other file) and answers as a fresh build; it writes a patch, and the one after takes that."""
    root, state_dir = _built_chain(tmp_path)
    original = (root / "d/n1.md").read_bytes()
    with knowtk.open_store(root, state_dir=state_dir) as long_lived:
        long_lived.grep("alpha")
        (root / "d/n1.md").write_bytes(original + b"\nzebra words\n")
        assert [h["id"] for h in long_lived.grep("zebra").to_dict()["hits"]] == ["n1"]
        _edit(root, "d/n2.md", "n2", "Note two, edited by hand")
        assert long_lived.grep("alpha").to_dict()["hits"]
        if undone:
            (root / "d/n1.md").write_bytes(original)
            assert long_lived.grep("zebra").to_dict()["hits"] == []
    meta = image_meta(state_dir)
    assert meta is not None and meta["patches"] == []  # no image written by it
    assert meta["behind"] == ["d/n1.md", "d/n2.md"]
    compared, adopted = [], []
    for _ in range(2):
        with knowtk.open_store(root, state_dir=state_dir) as store:
            store.grep("alpha")
            stored = store.engine._adopted or store.engine._snapshot
            assert isinstance(stored, StoredSnapshot)
            compared.append("paths" in stored.parts.parsed)  # (a comparison of every file reads the image's paths)
            adopted.append(how_adopted(store))
            assert_same([store], root, tmp_path / f"ref{len(compared)}", 1, ("behind", undone))
    assert compared == [False, False] and adopted == ["drift", "image"]
    after = image_meta(state_dir)
    assert after is not None and after["key"] != meta["key"] and not after.get("behind")  # the patch's image


def test_a_cache_another_process_moved_on_is_not_taken_for_the_image_s(tmp_path: Path, clock: Clock) -> None:
    """Two processes that see edits one after the other without writing an image: the second one's cache is
    not exactly its own files when the first wrote in between (its token is not recorded), so a new process
    compares every file, and answers as a fresh build."""
    root, state_dir = _built_chain(tmp_path)
    one = knowtk.open_store(root, state_dir=state_dir)
    two = knowtk.open_store(root, state_dir=state_dir)
    try:
        one.grep("alpha")
        two.grep("alpha")
        _edit(root, "d/n1.md", "n1", "Note one, seen by one")
        one.grep("alpha")  # one writes the cache
        _edit(root, "d/n3.md", "n3", "Note three, seen by two")
        two.grep("alpha")  # two writes the cache over one's write, knowing only its own files
    finally:
        one.close()
        two.close()
    with knowtk.open_store(root, state_dir=state_dir) as store:
        store.grep("alpha")
        assert_same([store], root, tmp_path / "ref", 1, "two writers")


@pytest.mark.usefixtures("small_patches")
def test_patches_give_way_to_a_whole_image(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_write, "PATCHES_MAX", 2)
    root, state_dir = _built_chain(tmp_path)
    counts = []
    for i in range(4):
        _edit(root, f"d/n{i}.md", f"n{i}", f"Note {i} edited", type="note")
        _second_process(root, state_dir)
        meta = image_meta(state_dir)
        assert meta is not None
        counts.append(len(meta["patches"]))
    assert counts == [1, 2, 0, 1]
    with knowtk.open_store(root, state_dir=state_dir) as last:
        last.engine.snapshot()
        assert how_adopted(last) == "image"
        assert_same([last], root, tmp_path / "ref", 1, counts)


@pytest.mark.usefixtures("small_patches")
@pytest.mark.parametrize("how", ["bad_json", "digest", "missing"])
def test_a_damaged_patch_costs_a_build_never_an_answer(tmp_path: Path, clock: Clock, how: str) -> None:
    root, state_dir = _built_chain(tmp_path)
    _edit(root, "d/n1.md", "n1", "Note one, edited", status="superseded", superseded_by="n2")
    _second_process(root, state_dir)
    _damage(state_dir, how, "patch.0", {})
    with knowtk.open_store(root, state_dir=state_dir) as store:
        assert_same([store], root, tmp_path / "ref1", 1, how)
    meta = image_meta(state_dir)
    assert meta is not None and meta["patches"] == []  # written whole again
    with knowtk.open_store(root, state_dir=state_dir) as again:
        again.engine.snapshot()
        assert how_adopted(again) == "image"
        assert_same([again], root, tmp_path / "ref2", 2, how)


# -- 3. two processes -----------------------------------------------------------------------------------
def _worker(root: str, state: str, seed: int, inbox: Any, outbox: Any) -> None:
    """Edits or queries on command; 'reopen' stands for a kernel restart inside the same process."""
    try:
        engine_module.IMAGE_DRIFT_FILES = 1  # images written often (a store of 40 files: every 2 changes)
        editor = Editor(Path(root), seed, None)
        editor.serial = 1000 * seed
        store = knowtk.open_store(root, state_dir=state)
        while True:
            command, arg = inbox.get(timeout=120)
            if command == "edit":
                outbox.put([*editor.step(), editor.change()])
            elif command == "query":
                outbox.put(answers(store, arg))
            elif command == "reopen":
                store.close()
                store = knowtk.open_store(root, state_dir=state)
                outbox.put(how_adopted(store) if store.engine._snapshot is not None else "closed")
            else:
                store.close()
                outbox.put("done")
                return
    except Exception as exc:  # the parent reports it
        outbox.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork keeps the test fast")
@pytest.mark.parametrize("seed", [5, 6, 7])
def test_two_processes_editing_and_querying_one_state(tmp_path: Path, seed: int) -> None:
    root, state = tmp_path / "store", tmp_path / "state"
    editor = Editor(root, seed, None)
    for _ in range(30):
        editor.change()
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(seed)

    def start(n: int) -> tuple[Any, Any, Any]:
        inbox, outbox = ctx.Queue(), ctx.Queue()
        proc = ctx.Process(target=_worker, args=(str(root), str(state), seed * 10 + n, inbox, outbox))
        proc.start()
        return proc, inbox, outbox

    workers = [start(0), start(1)]
    restarted = 0
    try:
        for step in range(30):
            _, inbox, outbox = rng.choice(workers)
            inbox.put(("edit", None))
            edit = outbox.get(timeout=120)
            assert isinstance(edit, list), edit
            if rng.random() < 0.25:  # a real new process in place of one of them
                i = rng.randrange(2)
                workers[i][1].put(("stop", None))
                workers[i][2].get(timeout=120)
                workers[i][0].join(timeout=60)
                workers[i] = start(10 + step)
                restarted += 1
            elif rng.random() < 0.3:
                _, inbox, outbox = workers[rng.randrange(2)]
                inbox.put(("reopen", None))
                assert outbox.get(timeout=120) in ("image", "drift", "build", "closed")
            for _, inbox, _ in workers:  # both query at once
                inbox.put(("query", seed * 100 + step))
            got = []
            for _, _, outbox in workers:
                got.append(outbox.get(timeout=120))
            assert all(isinstance(a, dict) for a in got), got
            probe = knowtk.open_store(root, state_dir=state, change_source=StatWalk)
            ref = reference(root, tmp_path / f"ref{step}", probe)
            probe.close()
            expected = answers(ref, seed * 100 + step)
            ref.close()
            shutil.rmtree(tmp_path / f"ref{step}")
            for answer in got:
                for name in expected:
                    assert answer[name] == expected[name], (step, edit, name)
    finally:
        for proc, inbox, _ in workers:
            if proc.is_alive():
                inbox.put(("stop", None))
                proc.join(timeout=60)
                if proc.is_alive():
                    proc.kill()
    assert restarted >= 1


# -- 4. the keyword image mark ----------------------------------------------------------------------------
def test_rows_changed_by_another_process_after_the_mark_are_not_trusted(tmp_path: Path, clock: Clock) -> None:
    """A builds, writes the image and marks the rows; B takes that image, then reconciles the rows for an
    edit (and writes its own image); the file changes again; C, new, and A and B must answer from the files."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _store_with_chain(root)
    a = knowtk.open_store(root, state_dir=state_dir)
    a.grep("alpha")
    key_a = image_meta(state_dir)["key"]  # type: ignore[index]
    b = knowtk.open_store(root, state_dir=state_dir)
    b.grep("alpha")
    assert how_adopted(b) == "image"
    _edit(root, "d/n6.md", "n6", "Six river")
    b.grep("river")
    assert b.engine.state.meta("keyword_root:image") != key_a  # the rows are no longer A's image
    (root / "d/n6.md").write_text("---\nid: n6\nkind: page\ntitle: Note 6\n---\nbeta gamma 6\n")
    c = knowtk.open_store(root, state_dir=state_dir)
    assert_same([c, a, b], root, tmp_path / "ref", 1, "n6 twice")
    for s in (a, b, c):
        s.close()


def test_the_mark_follows_every_row_change(tmp_path: Path, clock: Clock) -> None:
    """Whenever the rows differ from the image's records, the mark does not name the stored image."""
    editor = Editor(tmp_path / "store", 9, clock)
    for _ in range(20):
        editor.change()
    state_dir = tmp_path / "state"
    stores = [knowtk.open_store(editor.root, state_dir=state_dir) for _ in range(2)]
    rng = random.Random(9)
    trusted = unsure_marks = 0
    for step in range(25):
        editor.step()
        store = rng.choice(stores)
        store.grep(rng.choice(WORDS))
        meta = image_meta(state_dir)
        if meta is None:
            continue
        marks = [store.engine.state.meta(f"{p}_root:image") for p in ("keyword", "keyword_history")]
        if all(mark and mark.startswith(meta["key"] + "~") for mark in marks):  # that image's, but at some ids
            unsure = [proj.unsure_of(meta["key"]) for proj in _projections(store)]
            assert unsure[0] is not None and unsure[0] == unsure[1], step
            fresh = knowtk.open_store(editor.root, state_dir=state_dir)
            image = stored.load_image(
                fresh.engine.state, fresh.engine.scanner, config=fresh.engine.config, generation=1, on_damage=print
            )
            if image is not None:
                fresh.engine.scanner.scan()
                fresh.engine.scanner.fill_all()
                fresh.engine._keyword_desired = None
                desired = fresh.engine._desired(image.snapshot)
                for rows, wanted in zip(keyword_rows(fresh), desired, strict=True):
                    assert {k: v for k, v in rows.items() if k not in unsure[0]} == {
                        k: v for k, v in wanted.items() if k not in unsure[0]
                    }, step
                unsure_marks += 1
            fresh.close()
        if marks == [meta["key"]] * 2:  # a new process would trust the rows: they must be that image's
            fresh = knowtk.open_store(editor.root, state_dir=state_dir)
            image = stored.load_image(
                fresh.engine.state,
                fresh.engine.scanner,
                config=fresh.engine.config,
                generation=1,
                on_damage=lambda: None,
            )
            if image is None:  # of another knowtk.yaml: no new process would take it
                assert meta["config"] != image_format.config_key(fresh.engine.config), step
                fresh.close()
                continue
            fresh.engine.scanner.scan()
            fresh.engine.scanner.fill_all()
            snap = image.snapshot
            fresh.engine._keyword_desired = None
            desired = fresh.engine._desired(snap)
            assert keyword_rows(fresh) == desired, step
            trusted += 1
            fresh.close()
        if rng.random() < 0.3:
            i = rng.randrange(2)
            stores[i].close()
            stores[i] = knowtk.open_store(editor.root, state_dir=state_dir)
    for s in stores:
        s.close()
    assert trusted >= 1 and unsure_marks >= 1


def _projections(store: knowtk.Store) -> list[Any]:
    index = store.engine._keyword
    assert index is not None
    index.main.ensure()
    index.history.ensure()
    return [index.main, index.history]


SUPERSEDED_FOR_A_WHILE: dict[str, list[Any]] = {
    # n4's file claims another id while the long-lived process looks (row n4 deleted, a row n4b inserted), then
    # it is put back while no process runs: the new process's drift (n4's file, as the image and now) names no n4b
    "id_changed_then_undone": [
        lambda root: _edit(root, "d/n4.md", "n4b", "Note 4"),
        "query",
        "close",
        lambda root: _edit(root, "d/n4.md", "n4", "Note 4"),
    ],
    "moved_then_edited": [
        lambda root: ((root / "d/n2.md").unlink(), _edit(root, "f/n2.md", "n2", "Note 2", aliases=["Two"])),
        "query",
        "close",
        lambda root: _edit(root, "f/n2.md", "n2", "Note 2 again"),
    ],
    "edited_twice": [
        lambda root: _edit(root, "d/n1.md", "n1", "Note one river"),
        "query",
        lambda root: _edit(root, "b/three.md", "three", "Third river", depends_on=["two"]),
        "query",
        "close",
    ],
    "new_then_removed": [
        lambda root: _edit(root, "e/new.md", "new", "A new note", supersedes=["n5"]),
        "query",
        "close",
        lambda root: (root / "e/new.md").unlink(),
    ],
}


@pytest.mark.parametrize("story", sorted(SUPERSEDED_FOR_A_WHILE))
def test_rows_a_process_changed_after_the_mark_are_compared_again_by_the_next(
    tmp_path: Path, clock: Clock, story: str
) -> None:
    """A long-lived process takes the rows as the image's and changes some (its own edits, no image written):
    it marks them with the ids it changed. The next new process takes the rows on trust but at those ids and at
    its own drift, which it derives and compares again (never every row), and answers as a fresh build, even
    when the files changed again while no process ran (the rows then differ from what the drift names)."""
    root, state_dir = _built_chain(tmp_path)
    key = image_meta(state_dir)["key"]  # type: ignore[index]
    steps = list(SUPERSEDED_FOR_A_WHILE[story])
    with knowtk.open_store(root, state_dir=state_dir) as long_lived:
        long_lived.grep("alpha")
        assert how_adopted(long_lived) == "image"
        while (step := steps.pop(0)) != "close":
            if step == "query":
                long_lived.grep("river")
            else:
                step(root)
        unsure = [proj.unsure_of(key) for proj in _projections(long_lived)]
        assert unsure[0] and unsure[0] == unsure[1]  # the rows: the image's but at the ids this process changed
    for step in steps:  # while no process runs
        step(root)
    assert image_meta(state_dir)["key"] == key  # type: ignore[index]  (no image written: too few files)
    with knowtk.open_store(root, state_dir=state_dir) as store:
        store.grep("alpha")
        assert how_adopted(store) == "drift"
        desired = store.engine._keyword_desired
        assert desired is not None and all(isinstance(m, PatchedMap) and m._map is None for m in desired[1:])
        base = store.engine._keyword_base
        assert base is not None and unsure[0] <= base[1]  # compared at those ids, and no more than a few
        assert len(base[1]) <= len(unsure[0]) + 4
        assert_same([store], root, tmp_path / "ref", 1, story)
    with knowtk.open_store(root, state_dir=state_dir) as after:  # its own image, the rows marked exactly with it
        after.grep("alpha")
        assert (
            how_adopted(after) == "image"
            and [p.image_mark for p in _projections(after)]
            == [
                image_meta(state_dir)["key"]  # type: ignore[index]
            ]
            * 2
        )


def test_a_mark_whose_ids_were_tampered_with_is_not_trusted(tmp_path: Path, clock: Clock) -> None:
    root, state_dir = _built_chain(tmp_path)
    with knowtk.open_store(root, state_dir=state_dir) as long_lived:
        long_lived.grep("alpha")
        _edit(root, "d/n4.md", "n4", "Note 4", supersedes=["n9"])
        long_lived.grep("river")
    conn = sqlite3.connect(state_dir / STATE_FILE)
    with conn:
        conn.execute("UPDATE knowtk_meta SET value = '[]' WHERE key = 'keyword_root:image:unsure'")
    conn.close()
    with knowtk.open_store(root, state_dir=state_dir) as store:
        store.grep("alpha")
        assert store.engine._keyword_base is None or len(store.engine._keyword_base[1]) > 20  # compared in full
        assert_same([store], root, tmp_path / "ref", 1, "tampered")


# -- the scan cache under a process that loaded it light ------------------------------------------------
SCAN_DAMAGE = {
    "dropped": "DROP TABLE scan_files_v1",
    "emptied": "DELETE FROM scan_files_v1",
    "meta_lost": "UPDATE scan_files_v1 SET meta = NULL",
    "meta_broken": "UPDATE scan_files_v1 SET meta = '{\"id\": '",
    "meta_not_a_mapping": "UPDATE scan_files_v1 SET meta = '[1, 2]'",
}


@pytest.mark.parametrize("damage", sorted(SCAN_DAMAGE))
def test_the_scan_cache_damaged_under_a_process_that_has_not_read_it_yet(
    tmp_path: Path, clock: Clock, damage: str
) -> None:
    """A new process keeps the frontmatter in scan_files_v1 until a query needs it: the table dropped or
    its rows damaged by then costs a read of the files, never an error or a wrong record."""
    root, state_dir = _built_chain(tmp_path)
    store = knowtk.open_store(root, state_dir=state_dir)
    store.engine.snapshot()
    assert how_adopted(store) == "image"
    conn = sqlite3.connect(state_dir / STATE_FILE)
    with conn:
        conn.execute(SCAN_DAMAGE[damage])
    conn.close()
    assert_same([store], root, tmp_path / "ref1", 1, damage)
    _edit(root, "d/n3.md", "n3", "Note three again", depends_on=["two"])
    assert_same([store], root, tmp_path / "ref2", 2, damage)
    report = store.check()
    assert not report["unrepaired"], report
    store.close()


def test_a_damaged_part_read_through_store_snapshot(tmp_path: Path, clock: Clock) -> None:
    root, state_dir = _built_chain(tmp_path)
    _damage(state_dir, "bad_json", "lifecycle", {})
    store = knowtk.open_store(root, state_dir=state_dir)
    ref = reference(root, tmp_path / "ref", store)
    try:
        assert store.snapshot().lifecycle == ref.snapshot().lifecycle
    finally:
        ref.close()
        store.close()


def test_an_image_evaluated_after_this_process_s_now_is_not_taken(tmp_path: Path, clock: Clock) -> None:
    """Another process (a clock ahead, or this one's clock set back) judged expiry at a later instant than
    this process's now: its image would show as expired what has not expired yet here."""
    root, state_dir = tmp_path / "store", tmp_path / "state"
    _store_with_chain(root)  # four.md expires at 06:00, five depends on it
    clock.now = START + timedelta(hours=10)
    with knowtk.open_store(root, state_dir=state_dir) as ahead:
        ahead.grep("alpha")
        assert "four" in ahead.engine.snapshot().expired
    clock.now = START + timedelta(hours=1)
    store = knowtk.open_store(root, state_dir=state_dir)
    assert_same([store], root, tmp_path / "ref", 1, "clock behind")
    assert "four" not in store.engine.snapshot().expired
    store.close()


def test_a_hand_edited_rows_table_under_a_true_looking_mark(tmp_path: Path, clock: Clock) -> None:
    root, state_dir = _built_chain(tmp_path)
    conn = sqlite3.connect(state_dir / STATE_FILE)
    with conn:
        conn.execute("UPDATE keyword_rows_v1_root SET id = 'zzz' WHERE id = 'n1'")
    conn.close()
    store = knowtk.open_store(root, state_dir=state_dir)
    try:
        assert_same([store], root, tmp_path / "ref", 1, "rows hand-edited")
    finally:
        store.close()


def test_changed_keys_in_c_agree_with_a_key_by_key_comparison() -> None:
    """Hashable and unhashable values, equal copies, keys added, changed and removed: the same keys, in order."""
    import random

    from knowtk.snapshot import image_delta

    def by_key(old: dict, new: dict) -> tuple[list, list]:
        changed = [k for k, v in new.items() if (was := old.get(k, image_delta._ABSENT)) is not v and was != v]
        return changed, [k for k in old if k not in new]

    rng = random.Random(20)
    values = ["a", "b", ("x", 1), ("x", 2), 1, 1.0, None, frozenset({"q"}), ["list"], ["other"], {"d": 1}]
    for _ in range(3000):
        old = {f"k{i}": rng.choice(values) for i in rng.sample(range(30), rng.randrange(0, 12))}
        new = dict(old)
        for _ in range(rng.randrange(0, 5)):
            key = f"k{rng.randrange(30)}"
            if rng.random() < 0.3:
                new.pop(key, None)
            else:
                new[key] = rng.choice(values)
        if rng.random() < 0.5:  # the same values as other objects (a copy made by a build)
            new = {k: (list(v) if isinstance(v, list) else v) for k, v in new.items()}
        assert image_delta._changed_keys(old, new) == by_key(old, new), (old, new)


@pytest.mark.parametrize("count", [0, 1, 3, 4, 7, 9])
def test_a_long_part_written_in_pieces_is_the_same_json_text(count: int) -> None:
    """record_ids, record_paths and record_sha are written a piece at a time (a 1M cold build's memory): the pieces
    joined are exactly ``json.dumps``' text, so the part's digest and its reading are unchanged."""
    from knowtk.snapshot.image_write import json_list_pieces

    values = [f'réc-{i}\u2028"q"' for i in range(count)]
    for size in (1, 2, 3, 4, 1 << 16):
        assert "".join(json_list_pieces(values, size)) == json.dumps(values, ensure_ascii=False)


@pytest.mark.parametrize("count", [0, 1, 5, 8])
def test_every_part_written_in_pieces_is_the_same_json_text(count: int) -> None:
    """Every part goes through ``json_pieces``: a dict or a list in pieces, anything else whole, joined the
    same text as ``json.dumps`` (keys in order, non-ASCII kept, a non-string key made a string alike)."""
    from knowtk.snapshot.image_write import json_pieces

    mapping: dict[Any, Any] = {f"ключ-{i}": [i, None, {"x": "é"}] for i in range(count)}
    mapping[7] = "int key"
    for value in (mapping, list(mapping.items()), "text", 3, None):
        for size in (1, 2, 3, 1 << 16):
            assert "".join(json_pieces(value, size)) == json.dumps(value, ensure_ascii=False)


def test_an_image_is_staged_then_put_in_place_in_one_transaction(tmp_path: Path) -> None:
    """The parts are staged in the connection's temporary database and copied in one transaction: the
    stored image holds every part in order, reads back as the snapshot, and the staging is emptied."""
    b = StoreBuilder(tmp_path / "store")
    for i in range(30):
        b.page(f"p-{i}", f"Page {i}", "words")
    state = tmp_path / "state"
    store = knowtk.open_store(b.root, state_dir=state)
    expected = store.call("knowledge_grep", {"query": "words", "limit": 50})["hits"]
    conn = store.engine.state.conn
    parts = [row[0] for row in conn.execute("SELECT part FROM snapshot_image_v1 ORDER BY rowid")]
    assert parts[0] == "meta" and "record_ids" in parts and parts.index("lifecycle") < parts.index("record_ids")
    assert conn.execute("SELECT count(*) FROM temp.snapshot_image_staging").fetchone()[0] == 0
    store.close()
    again = knowtk.open_store(b.root, state_dir=state)
    assert again.call("knowledge_grep", {"query": "words", "limit": 50})["hits"] == expected
    assert isinstance(again.snapshot(), StoredSnapshot)
    again.close()
