"""Exactness is the product: a store watched by inotify answers exactly as a fresh walk of the same files.

A seeded random editor changes a store the way people and tools do (edits,
appends, truncations, same-size rewrites that keep the mtime, renames, moves
between folders, new, moved and deleted folders, trees moved in and out,
knowtk.yaml rewritten or removed, files the walk skips, now and then a flood of
events that overflows the kernel's queue), one to three changes per step.
After every step the long-lived watched store and a freshly opened ``StatWalk``
engine (its own, empty state; the safeguard sightings copied, as they are state
Markdown cannot give back) must give the same grep, lookup, records and
timeline answers; ``freshness`` (the instants of the query) is the only part
left out.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import knowtk
from knowtk.scan.changes import StatWalk
from knowtk.scan.watch import InotifyWatch
from knowtk.state import STATE_FILE, StateDB

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

WORDS = ["alpha", "beta", "gamma", "delta", "and", "river", "stone", "quiet", "orbit", "maple"]
TYPES = ["note", "memo", "meeting", "call", "decision"]
SAFEGUARDS = ("keyword_withdrawals_v1", "lifecycle_guards_v1")
QUEUED = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text()) if sys.platform.startswith("linux") else 0


class Editor:
    """Random, seeded changes to a store folder; ``outside`` is a folder beside it to move trees to and from."""

    def __init__(self, root: Path, outside: Path, seed: int) -> None:
        self.root, self.outside, self.rng = root, outside, random.Random(seed)
        self.serial = 0
        self.floods = 0
        root.mkdir(parents=True)
        outside.mkdir(parents=True)

    # -- what is there now --------------------------------------------------------------------
    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*.md") if p.is_file())

    def folders(self, base: Path | None = None) -> list[Path]:
        base = base or self.root
        return sorted(p for p in base.rglob("*") if p.is_dir() and not p.is_symlink())

    def ids(self) -> list[str]:
        return [f"r{i}" for i in range(1, self.serial + 1)]

    # -- content ------------------------------------------------------------------------------
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
            meta["aliases"] = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}"]
        if rng.random() < 0.5:
            meta["occurred_at"] = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        if rng.random() < 0.3:
            meta["entities"] = rng.sample(self.ids(), min(2, self.serial - 1)) if self.serial > 1 else []
        if rng.random() < 0.3:
            meta["tags"] = rng.sample(["x", "y", "z"], rng.randint(1, 2))
        roll = rng.random()
        if roll < 0.08:
            meta.update(status="superseded", superseded_by=rng.choice(self.ids()), revision=rng.randint(1, 3))
        elif roll < 0.12:
            meta["status"] = "withdrawn"
        elif roll < 0.2:
            meta["revision"] = rng.randint(1, 4)
        body = " ".join(rng.choices(WORDS, k=rng.randint(3, 40)))
        return f"---\n{yaml.safe_dump(meta, sort_keys=False).rstrip()}\n---\n{body}\n"

    def new_path(self, folder: Path | None = None) -> Path:
        rng = self.rng
        folder = folder or rng.choice([self.root, *self.folders()])
        return folder / f"f{self.serial + 1}-{rng.randint(0, 99)}.md"

    # -- changes ------------------------------------------------------------------------------
    def step(self) -> list[str]:
        actions = [self.change() for _ in range(self.rng.choice([1, 1, 1, 2, 3]))]
        self.floods += "flood" in actions  # steps that overflowed the queue (once, however many floods)
        return actions

    def change(self) -> str:
        rng = self.rng
        files, folders = self.files(), self.folders()
        actions = ["create"] * 5 + ["mkdir", "config", "skipped"]
        if files:
            actions += ["edit", "edit", "append", "truncate", "same_stat", "rename", "move", "delete", "duplicate"]
        if folders:
            actions += ["move_folder", "folder_out", "delete_folder", "folder_in"]
        action = rng.choice(actions)
        if len(files) >= 2 and rng.random() < 0.02:
            action = "flood"
        if action == "create":
            path = self.new_path()
            path.write_text(self.text(), encoding="utf-8")
        elif action == "mkdir":  # a new folder, at once filled (the watch must catch what precedes it)
            folder = rng.choice([self.root, *folders]) / f"d{self.serial}-{rng.randint(0, 9)}"
            (folder / "inner").mkdir(parents=True, exist_ok=True)
            for target in (folder, folder / "inner"):
                self.new_path(target).write_text(self.text(), encoding="utf-8")
        elif action == "edit":
            path = rng.choice(files)
            rid = self._id_of(path)
            path.write_text(self.text(rid), encoding="utf-8")
        elif action == "append":
            with rng.choice(files).open("a", encoding="utf-8") as f:
                f.write(f" {rng.choice(WORDS)} appended{self.serial}\n")
        elif action == "truncate":
            path = rng.choice(files)
            os.truncate(path, rng.randint(0, max(0, path.stat().st_size - 1)))
        elif action == "same_stat":  # same size, same mtime: only the event tells
            path = rng.choice(files)
            st = path.stat()
            data = bytearray(path.read_bytes())
            for i, ch in enumerate(data):
                if chr(ch) in "aeiou":
                    data[i] = ord(rng.choice("aeiou"))
            path.write_bytes(bytes(data))
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
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
        elif action == "duplicate":  # two files claim one id
            path = rng.choice(files)
            self.new_path().write_text(self.text(self._id_of(path)), encoding="utf-8")
        elif action == "move_folder":
            folder = rng.choice(folders)
            targets = [f for f in [self.root, *folders] if not f.is_relative_to(folder)]
            target = rng.choice(targets) / f"m{self.serial}-{rng.randint(0, 9)}"
            self.serial += 1
            folder.rename(target)
        elif action == "folder_out":
            folder = rng.choice(folders)
            folder.rename(self.outside / f"out{self.serial}")
            self.serial += 1
        elif action == "folder_in":
            away = self.folders(self.outside)
            if away:
                folder = rng.choice(away)
                if folder.parent == self.outside:
                    folder.rename(rng.choice([self.root, *folders]) / f"back{self.serial}")
                    self.serial += 1
            return action
        elif action == "delete_folder":
            shutil.rmtree(rng.choice(folders))
        elif action == "config":
            config = self.root / "knowtk.yaml"
            if config.exists() and rng.random() < 0.3:
                config.unlink()
            else:
                alias = rng.choice(["memo", "call", "minutes"])
                config.write_text(f"name: live\nontology:\n  note: {{aliases: [{alias}]}}\n", encoding="utf-8")
        elif action == "flood":  # more events than the kernel queues: the watch must walk once
            a, b = rng.sample(files, 2)
            for i in range(QUEUED // 2 + 10):
                os.utime(a, ns=(i, i))
                os.utime(b, ns=(i, i + 1))
        elif action == "skipped":  # names the walk skips: nothing may change
            name = rng.choice(["_draft.md", ".hidden.md", "notes.txt"])
            (rng.choice([self.root, *folders]) / name).write_text(self.text(), encoding="utf-8")
        return action

    def _id_of(self, path: Path) -> str | None:
        try:
            meta = yaml.safe_load(path.read_text(encoding="utf-8").split("---")[1])
            return str(meta["id"])
        except Exception:
            return None


def fresh_walk(root: Path, state_dir: Path, watched: knowtk.Store) -> knowtk.Store:
    """A store opened now with StatWalk and a new state holding the watched store's safeguard sightings."""
    state = StateDB(str(state_dir / STATE_FILE))
    with state.transaction() as conn:
        for table in SAFEGUARDS:
            rows = watched.engine.state.conn.execute(f"SELECT * FROM {table}").fetchall()
            if rows:
                marks = ",".join("?" * len(rows[0]))
                conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    state.close()
    return knowtk.open_store(root, state_dir=state_dir, change_source=StatWalk)


def answers(store: knowtk.Store, rng: random.Random) -> dict[str, Any]:
    """The answers compared: grep with and without filters, lookup, records and the timeline."""
    word = rng.choice(WORDS)
    calls: dict[str, Any] = {
        "grep": store.grep(word, limit=50),
        "grep_any": store.grep(f"{word} {rng.choice(WORDS)}", mode="any", lifecycle="all", limit=50),
        "grep_type": store.grep(word, type="note", limit=50),
        "lookup_id": store.lookup(f"r{rng.randint(1, 40)}", lifecycle="all"),
        "lookup_title": store.lookup(word.title()),
        "records": store.records(lifecycle="all", limit=1000),
        "records_note": store.records(type="note", limit=1000),
        "timeline": store.timeline(limit=50),
    }
    out = {}
    for name, result in calls.items():
        answer = result.to_dict()
        answer.pop("freshness", None)
        out[name] = answer
    return out


@pytest.mark.parametrize("seed", [11, 12])
def test_a_watched_store_answers_as_a_fresh_walk(tmp_path: Path, seed: int) -> None:
    editor = Editor(tmp_path / "store", tmp_path / "outside", seed)
    for _ in range(12):
        editor.change()
    store = knowtk.open_store(editor.root, state_dir=tmp_path / "watched")
    source = store.engine.scanner.source
    assert isinstance(source, InotifyWatch) and store.freshness_mode == "inotify"
    for step in range(200):
        actions = editor.step()
        probe = random.Random(seed * 1000 + step)
        seen = answers(store, probe)
        assert store.engine.scanner._stats == StatWalk(str(editor.root)).listing(), (step, actions)
        reference = fresh_walk(editor.root, tmp_path / f"fresh{step}", store)
        expected = answers(reference, random.Random(seed * 1000 + step))
        reference.close()
        shutil.rmtree(tmp_path / f"fresh{step}")
        for name in expected:
            assert seen[name] == expected[name], (step, actions, name)
    assert store.freshness_mode == "inotify"
    assert editor.floods >= 1
    assert source.overflows == editor.floods
    assert source.walks == 1 + editor.floods  # every other change was learnt from the kernel
    store.close()
