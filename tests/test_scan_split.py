"""A large store's walk split between two processes (``knowtk.scan.split``) answers as the one-process walk.

Each test forces the split on a small store (``SPLIT_MIN_FILES`` 0, this process taken for a
single-threaded one) and compares it with the one-process walk of the same tree: the same folders in
the same order, the same names in the same order with the same stats and problem codes, the same
symlinks, the same folders watched, whatever changed since the walk the split was planned from.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knowtk.scan import split
from knowtk.scan.cache import Scanner
from knowtk.scan.changes import StatWalk
from knowtk.scan.watch import InotifyWatch
from knowtk.state import StateDB
from tests.helpers import StoreBuilder

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def splits(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Force the split; yields how many folders each split walk had listed by the child."""
    made: list[int] = []
    real = split.list_in_two

    def counted(list_one: Any, known: Any) -> Any:
        listed = real(list_one, known)
        made.append(len(set(listed) & set(split.shares(known)[1])))
        return listed

    monkeypatch.setattr(split, "SPLIT_MIN_FILES", 0)
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # (pytest's own threads, if any, never list)
    monkeypatch.setattr("knowtk.scan.changes.list_in_two", counted)
    yield made


def tree(root: Path) -> None:
    """Nested folders of records, an empty folder, skipped names, symlinks in and out, a FIFO, a bad name."""
    for folder in ("", "a/", "a/deep/", "a/deep/er/", "b/", "c/d/e/", "empty/", "_skipped/", ".hidden/"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for i in range(3 if folder != "empty/" else 0):
            (root / folder / f"n{i}.md").write_text(f"---\nid: {folder}{i}\n---\nbody {i}\n")
    (root / "b" / "notes.txt").write_text("not a record")
    os.symlink("../a/n0.md", root / "b" / "link.md")
    os.symlink("../a/deep", root / "b" / "deeplink")
    os.symlink("/etc/hostname", root / "b" / "outside.md")
    os.symlink("nowhere.md", root / "b" / "dangling.md")
    os.mkfifo(root / "c" / "pipe.md")
    os.close(os.open(os.path.join(os.fsencode(root / "c"), b"bad\xff.md"), os.O_CREAT | os.O_WRONLY))


def walked(root: Path, **kw: Any) -> tuple[list[tuple[str, list[tuple[str, Any]]]], set[str]]:
    links: set[str] = set()
    by_folder = StatWalk(str(root)).listing_by_folder(symlinks=links, **kw)
    return [(folder, list(names.items())) for folder, names in by_folder.items()], links


def known_of(root: Path) -> dict[str, int]:
    return {folder: len(names) for folder, names in StatWalk(str(root)).listing_by_folder().items()}


def change(root: Path) -> None:
    """What may happen between two walks: folders removed, added, moved, made symlinks; files added."""
    shutil.rmtree(root / "a" / "deep" / "er")
    (root / "new" / "nested").mkdir(parents=True)
    (root / "new" / "nested" / "x.md").write_text("---\nid: x\n---\nx\n")
    (root / "c" / "d").rename(root / "moved")
    shutil.rmtree(root / "empty")
    os.symlink("b", root / "empty")
    (root / "b" / "more.md").write_text("---\nid: more\n---\nmore\n")


def test_the_split_walk_lists_what_one_process_lists(tmp_path: Path, splits: list[int]) -> None:
    tree(tmp_path)
    known = known_of(tmp_path)
    alone = walked(tmp_path)
    assert walked(tmp_path, known=known) == alone
    assert splits and splits[0] == len(split.shares(known)[1]) > 0  # the child listed its share


def test_the_split_walk_after_changes_lists_the_tree_as_it_is_now(tmp_path: Path, splits: list[int]) -> None:
    tree(tmp_path)
    known = known_of(tmp_path)
    change(tmp_path)
    entered: list[str] = []
    left: list[str] = []
    split_walk = walked(tmp_path, known=known, enter=entered.append, leave=left.append)
    one: list[str] = []
    assert split_walk == walked(tmp_path, enter=one.append)
    # every folder the one-process walk entered was entered; those entered and not reached were left
    assert set(entered) - set(left) == set(one)
    assert set(left) == {"a/deep/er/", "c/d/", "c/d/e/", "empty/"}
    assert splits


@pytest.mark.parametrize("failure", ["fork", "child"])
def test_a_failed_fork_or_child_costs_only_time(
    tmp_path: Path, splits: list[int], monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    tree(tmp_path)
    known = known_of(tmp_path)
    change(tmp_path)
    if failure == "fork":

        def no_fork() -> int:
            raise OSError(11, "Resource temporarily unavailable")

        monkeypatch.setattr(os, "fork", no_fork)
    else:
        parent = os.getpid()
        real = StatWalk._listed_alone

        def dies_in_child(self: StatWalk, prefix: str, root_fd: int | None) -> Any:
            if os.getpid() != parent:
                raise MemoryError("the child fails")
            return real(self, prefix, root_fd)

        monkeypatch.setattr(StatWalk, "_listed_alone", dies_in_child)
    assert walked(tmp_path, known=known) == walked(tmp_path)
    assert splits == [0]  # nothing came from a child: this process listed every folder


def test_no_split_for_a_small_store_or_a_threaded_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not split.may_split({"": split.SPLIT_MIN_FILES - 1})
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert not split.may_split({"": split.SPLIT_MIN_FILES})
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert split.may_split({"": split.SPLIT_MIN_FILES}) == (len(os.sched_getaffinity(0)) > 1)


def test_shares_split_the_files_and_keep_the_store_folder_here() -> None:
    known = {"": 500, **{f"f{i}/": 100 + i for i in range(40)}}
    mine, theirs = split.shares(known)
    assert "" in mine and sorted(mine + theirs) == sorted(known)
    here, there = sum(known[f] for f in mine), sum(known[f] for f in theirs)
    assert abs(here - there) < 0.15 * (here + there)


@linux_only
def test_the_split_walk_watches_the_folders_one_walk_watches(tmp_path: Path, splits: list[int]) -> None:
    tree(tmp_path)
    known = known_of(tmp_path)
    change(tmp_path)
    alone, both = InotifyWatch(str(tmp_path)), InotifyWatch(str(tmp_path))
    try:
        one = alone.folder_walk()
        two = both.folder_walk(known)
        assert one is not None and two is not None and splits
        assert list(two.folders.items()) == list(one.folders.items())
        assert set(both._wd_of) == set(alone._wd_of) and both._symlinks == alone._symlinks
        # an edit in a folder the child listed is seen through the watch placed before it listed
        child_folder = next(f for f in split.shares(known)[1] if two.folders.get(f))
        name = next(n for n in two.folders[child_folder] if n.endswith(".md") and n.startswith("n"))
        (tmp_path / child_folder / name).write_text("---\nid: edited\n---\nedited now\n")
        known_stats = {folder + n: st for folder, names in two.folders.items() for n, st in names.items()}
        assert child_folder + name in both.changes(known_stats).changed
    finally:
        alone.close()
        both.close()


def test_a_scanner_on_packs_walks_in_two_and_answers_as_a_fresh_scanner(
    builder: StoreBuilder, tmp_path: Path, splits: list[int]
) -> None:
    root = builder.root
    for folder in ("a", "b", "a/deep", "c"):
        for i in range(4):
            builder.page(f"{folder.replace('/', '-')}-{i}", f"{folder} {i}", f"text {i}", path=f"{folder}/n{i}.md")
    state = tmp_path / "state.sqlite"
    Scanner(str(root), StateDB(str(state), store=str(root))).scan()  # writes the folder packs
    (root / "b" / "n1.md").write_text("---\nid: b-1\ntitle: changed\n---\nchanged\n")
    (root / "c" / "n0.md").unlink()
    builder.page("d-new", "new", "new", path="d/new.md")
    again = Scanner(str(root), StateDB(str(state), store=str(root)))
    again.scan()
    first = Scanner(str(root), StateDB(str(tmp_path / "fresh.sqlite"), store=str(root)))
    first.scan()
    assert splits  # (the fresh scanner has no packs: it walks alone)
    assert {p: (e.stat, e.sha256, e.problem) for p, e in again.files.items()} == {
        p: (e.stat, e.sha256, e.problem) for p, e in first.files.items()
    }
