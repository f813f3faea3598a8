"""A new process's scan cache, made into entries lazily: the same entries, in the same order, as made eagerly."""

from __future__ import annotations

import os
import random
from pathlib import Path

from knowtk.scan import cache
from knowtk.scan.cache import Scanner
from knowtk.scan.changes import StatWalk
from knowtk.scan.rows import LazyEntries, entry_from_row
from knowtk.state import StateDB
from tests.helpers import StoreBuilder


def _row(i: int) -> tuple[object, ...]:
    problem = ("unreadable", "the file could not be read") if i % 7 == 0 else (None, None)
    return (f"p{i}.md", i, 1000 + i, None if i % 11 == 0 else f"{i:064x}", *problem)


def _key(entry: cache.FileEntry) -> tuple[object, ...]:
    return (entry.stat, entry.sha256, entry.problem, entry.meta, [i.code for i in entry.issues])


def test_lazy_entries_behave_as_a_dict_filled_row_by_row() -> None:
    """get, has, set, pop and len at random against a dict; ``whole`` keeps the dict's order exactly."""
    rng = random.Random(20)
    for _ in range(300):
        rows = [_row(i) for i in rng.sample(range(40), rng.randrange(0, 20))]
        lazy = LazyEntries({str(r[0]): r for r in rows})
        model = {str(r[0]): entry_from_row(r) for r in rows}
        for _ in range(rng.randrange(0, 30)):
            path = f"p{rng.randrange(40)}.md"
            op = rng.choice(["get", "has", "set", "pop", "len"])
            if op == "get":
                got, want = lazy.get(path), model.get(path)
                assert (got is None) == (want is None) and (got is None or _key(got) == _key(want))
            elif op == "has":
                assert lazy.has(path) == (path in model)
            elif op == "set":
                entry = cache.FileEntry((rng.randrange(9), 5), "f" * 64)
                lazy.set(path, entry)
                model[path] = entry
            elif op == "pop":
                got, want = lazy.pop(path), model.pop(path, None)
                assert (got is None) == (want is None) and (got is None or _key(got) == _key(want))
            assert len(lazy) == len(model)
        whole = lazy.whole()
        assert list(whole) == list(model)
        assert [_key(e) for e in whole.values()] == [_key(e) for e in model.values()]


def test_a_new_scanner_sees_every_change_made_while_no_process_ran(builder: StoreBuilder, tmp_path: Path) -> None:
    """Edit with the same size, mtime only, add, delete, rename, a symlink: each found, the rest untouched,
    and the entries afterwards are those a scanner that saw every change made (in its order)."""
    for i in range(12):
        builder.page(f"n{i:02d}", f"Note {i}", f"body {i}", tags=["a"])
    state_path = tmp_path / "state.sqlite"
    first = Scanner(str(builder.root), StateDB(str(state_path), store=str(builder.root)))
    first.scan()
    root = builder.root
    files = sorted(p for p in first.files)
    same_size, mtime_only, deleted, renamed = (root / files[i] for i in range(4))
    text = same_size.read_text()
    same_size.write_text(text.replace("body 0", "bodY 0"))
    os.utime(same_size, ns=(1, os.stat(same_size).st_mtime_ns + 10**9))
    os.utime(mtime_only, ns=(1, os.stat(mtime_only).st_mtime_ns + 10**9))
    deleted.unlink()
    renamed.rename(root / "renamed.md")
    builder.page("added", "Added", "new body")
    (tmp_path / "outside.md").write_text("---\nid: outside\n---\n")
    os.symlink(tmp_path / "outside.md", root / "link.md")  # a symlink leaving the store: listed as a problem
    second = Scanner(str(root), StateDB(str(state_path), store=str(root)))
    rows = [p for (p,) in second.state.conn.execute("SELECT path FROM scan_files_v1")]  # what an eager load made
    touched, _ = second.scan()
    assert second.reads >= 1 and second._lazy is not None  # the untouched entries are not made yet
    assert touched == {files[0], files[2], files[3], "renamed.md", "added.md", "link.md"}
    assert second._stats == StatWalk(str(root)).listing()
    fresh = Scanner(str(root), StateDB(str(tmp_path / "fresh.sqlite"), store=str(root)))
    fresh.scan()
    made = second.files  # all made now
    assert set(made) == set(fresh.files)
    for path, entry in made.items():
        other = fresh.entry(path)
        assert other is not None and second.entry(path) is entry
        assert (entry.stat, entry.sha256, entry.problem) == (other.stat, other.sha256, other.problem)
        assert (entry.record, entry.issues) == (other.record, other.issues)
    kept = [p for p in made if p not in touched]
    assert kept == [p for p in rows if p in kept]  # the cache's own order for what did not change
    new = [p for p in made if p not in rows]
    assert set(new) == {"renamed.md", "added.md", "link.md"} and list(made)[-3:] == new  # the new ones last
