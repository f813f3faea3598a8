"""Change notification: a watched store sees every change the walk sees (and edits the walk cannot), without walking.

Each test changes real files and compares what the watched scan knows with what
``StatWalk.listing`` lists at that moment; ``walks`` counts the full walks the
watch needed, so a test also proves that the change was learnt from the kernel.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import shutil
import sys
from pathlib import Path

import pytest

import knowtk
from knowtk.scan import watch
from knowtk.scan.changes import StatWalk
from knowtk.scan.watch import InotifyWatch, filesystem_types, unwatchable_filesystem
from tests.helpers import StoreBuilder, required_in_ci

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def ids(store: knowtk.Store, **filters: str) -> list[str]:
    return [r["id"] for r in store.records(limit=1000, **filters).to_dict()["rows"]]


def in_step(store: knowtk.Store) -> None:
    """The scan knows exactly what a walk lists now."""
    store.snapshot()
    assert store.engine.scanner._stats == StatWalk(store.root).listing()


def watched(builder: StoreBuilder, tmp_path: Path) -> tuple[knowtk.Store, InotifyWatch]:
    store = builder.open(state_dir=tmp_path / "state")
    source = store.engine.scanner.source
    assert isinstance(source, InotifyWatch)
    assert store.freshness_mode == "inotify"
    in_step(store)
    assert source.walks == 1
    return store, source


def test_file_changes_are_learnt_from_the_kernel(builder: StoreBuilder, tmp_path: Path) -> None:
    builder.page("a", "Alpha", "first words")
    builder.page("b", "Beta", "more words", path="notes/b.md")
    store, source = watched(builder, tmp_path)
    builder.page("c", "Gamma", "fresh words", path="notes/c.md")  # created
    assert ids(store) == ["a", "b", "c"]
    with open(builder.root / "a.md", "a", encoding="utf-8") as f:  # appended
        f.write("\nappendedword\n")
    assert [h["id"] for h in store.grep("appendedword").to_dict()["hits"]] == ["a"]
    os.rename(builder.root / "notes/b.md", builder.root / "notes/b2.md")  # renamed
    os.rename(builder.root / "notes/c.md", builder.root / "c.md")  # moved between folders
    in_step(store)
    os.truncate(builder.root / "c.md", 0)  # truncated: no frontmatter any more
    builder.remove("a.md")  # deleted
    in_step(store)
    assert ids(store) == ["b"]
    assert source.walks == 1
    store.close()


def test_an_edit_that_keeps_size_and_mtime_is_seen(builder: StoreBuilder, tmp_path: Path) -> None:
    path = builder.page("a", "Alpha", "word1 here")
    store, source = watched(builder, tmp_path)
    st = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("word1", "word2"), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the walk cannot tell this file changed
    assert store.grep("word2").to_dict()["total"] == 1
    assert store.grep("word1").to_dict()["total"] == 0
    assert source.walks == 1
    store.close()


def test_folders_created_moved_in_moved_out_and_deleted(builder: StoreBuilder, tmp_path: Path) -> None:
    builder.page("a", "Alpha", path="keep/a.md")
    store, source = watched(builder, tmp_path)
    (builder.root / "new/deeper").mkdir(parents=True)  # a new folder: watched, then walked
    builder.page("b", "Beta", path="new/deeper/b.md")
    assert ids(store) == ["a", "b"]
    builder.page("c", "Gamma", path="new/deeper/c.md")  # written after the folder was watched
    assert ids(store) == ["a", "b", "c"]
    outside = StoreBuilder(tmp_path / "outside")
    outside.page("d", "Delta", path="tree/sub/d.md")
    shutil.move(str(tmp_path / "outside/tree"), str(builder.root / "tree"))  # a folder tree moved in
    assert ids(store) == ["a", "b", "c", "d"]
    builder.page("e", "Epsilon", path="tree/sub/e.md")
    assert ids(store) == ["a", "b", "c", "d", "e"]
    shutil.move(str(builder.root / "tree"), str(tmp_path / "away"))  # moved out
    assert ids(store) == ["a", "b", "c"]
    StoreBuilder(tmp_path / "away").page("f", "Zeta", path="sub/f.md")  # its old watches must not speak
    assert ids(store) == ["a", "b", "c"]
    os.rename(builder.root / "new", builder.root / "renamed")  # moved within the store
    builder.page("g", "Eta", path="renamed/deeper/g.md")
    in_step(store)
    assert ids(store) == ["a", "b", "c", "g"]
    os.rename(builder.root / "renamed", builder.root / "_hidden")  # into a name the walk skips
    assert ids(store) == ["a"]
    shutil.rmtree(builder.root / "keep")  # deleted
    (builder.root / "keep").mkdir()  # and made again at once
    builder.page("h", "Theta", path="keep/h.md")
    in_step(store)
    assert ids(store) == ["h"]
    assert source.walks == 1
    store.close()


def test_a_folder_replaced_by_a_symlink_is_not_entered(builder: StoreBuilder, tmp_path: Path) -> None:
    builder.page("a", "Alpha", path="docs/a.md")
    builder.page("b", "Beta", path="other/b.md")
    store, _ = watched(builder, tmp_path)
    shutil.rmtree(builder.root / "docs")
    os.symlink(builder.root / "other", builder.root / "docs")
    in_step(store)
    assert ids(store) == ["b"]
    store.close()


def test_an_md_symlink_is_judged_again_at_every_query(builder: StoreBuilder, tmp_path: Path) -> None:
    target = StoreBuilder(tmp_path / "elsewhere").page("a", "Alpha", "oldword")
    builder.page("b", "Beta")
    os.symlink(target, builder.root / "a.md")
    store, source = watched(builder, tmp_path)

    def issues() -> dict[str, str]:
        res = store.grep("oldword").to_dict()
        assert res["total"] == 0  # never followed out of the store
        return {i["path"]: i["code"] for i in res["coverage"]["issues"]}

    assert issues() == {"a.md": "symlink_outside"}
    target.unlink()  # no event in the store: the symlink is looked at again at every query
    assert issues() == {"a.md": "symlink_broken"}
    in_step(store)
    os.symlink("b.md", builder.root / "c.md")  # a symlink inside the store: its target is read at its own path
    assert issues() == {"a.md": "symlink_broken"}
    in_step(store)
    assert source.walks == 1
    store.close()


def test_knowtk_yaml_changes_are_seen(builder: StoreBuilder, tmp_path: Path) -> None:
    builder.page("a", "Alpha", type="memo")
    builder.page("b", "Beta", type="note")
    config = builder.root / "knowtk.yaml"
    config.write_text("name: one\nontology:\n  note: {aliases: [memo]}\n", encoding="utf-8")
    store, source = watched(builder, tmp_path)
    assert ids(store, type="note") == ["a", "b"]
    st = config.stat()
    config.write_text("name: two\nontology:\n  note: {aliases: [mem0]}\n", encoding="utf-8")  # same size
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert store.name == "two"
    assert ids(store, type="note") == ["b"]
    config.unlink()
    assert store.name == "store"
    assert source.walks == 1
    store.close()


def test_queue_overflow_costs_one_walk(builder: StoreBuilder, tmp_path: Path) -> None:
    a = builder.page("a", "Alpha")
    b = builder.page("b", "Beta")
    quiet = builder.page("q", "Quiet", "oldword")
    store, source = watched(builder, tmp_path)
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    required_in_ci(f"max_queued_events is {queued}: too many events to write in a test" if queued > 200_000 else None)
    for i in range(queued // 2 + 10):  # alternate files so that the kernel cannot merge the events
        os.utime(a, ns=(i, i))
        os.utime(b, ns=(i, i + 1))
    builder.page("c", "Gamma", path="late/c.md")
    builder.remove("a.md")
    st = quiet.stat()  # an edit that keeps size and mtime, whose event the full queue dropped
    quiet.write_text(quiet.read_text(encoding="utf-8").replace("oldword", "newword"), encoding="utf-8")
    os.utime(quiet, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert ids(store) == ["b", "c", "q"]
    assert store.grep("newword").to_dict()["total"] == 1  # after an overflow every file is read again
    assert source.overflows == 1
    assert source.walks == 2
    builder.page("d", "Delta", path="late/d.md")  # watching again after the walk
    assert ids(store) == ["b", "c", "d", "q"]
    assert source.walks == 2
    store.close()


def test_the_watch_limit_falls_back_to_the_walk(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder.page("a", "Alpha")
    store, source = watched(builder, tmp_path)
    real_add = watch._Inotify.add_watch

    def limited(self: watch._Inotify, path: str, mask: int) -> int:
        if path.rstrip("/").endswith("full"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real_add(self, path, mask)

    monkeypatch.setattr(watch._Inotify, "add_watch", limited)
    (builder.root / "full").mkdir()
    builder.page("b", "Beta", path="full/b.md")
    assert ids(store) == ["a", "b"]
    assert store.freshness_mode == "walk"
    assert "max_user_watches" in (source.fallback_reason or "")
    builder.page("c", "Gamma", path="full/c.md")
    assert ids(store) == ["a", "b", "c"]
    store.close()


@pytest.mark.parametrize("fstype", ["nfs4", "cifs", "fuse.sshfs", "fuseblk", "9p", "virtiofs"])
def test_network_and_fuse_file_systems_walk(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fstype: str
) -> None:
    monkeypatch.setattr(watch, "filesystem_types", lambda root: ["ext4", fstype])
    builder.page("a", "Alpha")
    store = builder.open(state_dir=tmp_path / "state")
    assert store.freshness_mode == "walk"
    assert fstype in (store.engine.scanner.source.fallback_reason or "")
    assert ids(store) == ["a"]
    builder.page("b", "Beta")
    assert ids(store) == ["a", "b"]
    store.close()


def test_other_systems_and_a_forced_walk(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder.page("a", "Alpha")
    forced = builder.open(state_dir=tmp_path / "forced", change_source=StatWalk)
    assert isinstance(forced.engine.scanner.source, StatWalk)
    assert forced.freshness_mode == "walk"
    monkeypatch.setattr(watch.sys, "platform", "darwin")
    other = builder.open(state_dir=tmp_path / "other")
    assert other.freshness_mode == "walk"
    builder.page("b", "Beta")
    assert ids(forced) == ids(other) == ["a", "b"]
    forced.close()
    other.close()


def test_file_system_types_come_from_the_mount_table(tmp_path: Path) -> None:
    mounts = [("/", "ext4"), ("/data", "nfs4"), ("/data/store/cache", "tmpfs"), ("/database", "xfs")]
    assert filesystem_types("/data/store", mounts) == ["nfs4", "tmpfs"]
    assert filesystem_types("/database/x", mounts) == ["xfs"]
    assert filesystem_types("/home/me", mounts) == ["ext4"]
    assert unwatchable_filesystem("fuse.rclone") and unwatchable_filesystem("nfs")
    assert not unwatchable_filesystem("ext4") and not unwatchable_filesystem("btrfs")
    assert filesystem_types(str(tmp_path))[0] != "unknown"  # this machine's own table is read


def test_the_store_folder_replaced(builder: StoreBuilder, tmp_path: Path) -> None:
    builder.page("a", "Alpha")
    store, source = watched(builder, tmp_path)
    os.rename(builder.root, tmp_path / "moved")
    with pytest.raises(knowtk.StoreUnavailable):
        store.records()
    builder.root.mkdir()
    builder.page("b", "Beta")
    assert ids(store) == ["b"]
    builder.page("c", "Gamma", path="sub/c.md")
    assert ids(store) == ["b", "c"]
    assert source.walks == 2  # the first, and the one of the new store folder (the missing one raised)
    store.close()


def _child_ids(store: knowtk.Store, builder: StoreBuilder, queue: multiprocessing.Queue) -> None:
    builder.page("child", "Child")
    queue.put(ids(store))


def test_a_forked_child_has_its_own_queue(builder: StoreBuilder, tmp_path: Path) -> None:
    builder.page("a", "Alpha")
    store, source = watched(builder, tmp_path)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_ids, args=(store, builder, queue))
    child.start()
    child.join(60)
    assert queue.get(timeout=10) == ["a", "child"]
    builder.page("b", "Beta")
    assert ids(store) == ["a", "b", "child"]  # the parent's queue lost nothing to the child
    assert source.walks == 1
    store.close()


def test_a_scan_that_failed_loses_no_change(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder.page("a", "Alpha")
    store, source = watched(builder, tmp_path)
    builder.page("b", "Beta")
    scanner = store.engine.scanner

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk trouble")

    monkeypatch.setattr(scanner, "_load", broken)
    with pytest.raises(OSError):
        store.records()
    monkeypatch.undo()
    assert ids(store) == ["a", "b"]
    assert source.walks == 1  # the change was kept by the watch, not found again by a walk
    store.close()


def test_a_store_over_max_files_stays_refused(builder: StoreBuilder, tmp_path: Path) -> None:
    for i in range(3):
        builder.page(f"r{i}", f"Record {i}")
    store = builder.open(state_dir=tmp_path / "state", max_files=3)
    assert ids(store) == ["r0", "r1", "r2"]
    builder.page("r3", "One too many")
    for _ in range(2):  # the second query has no new event: it must not forget the first's refusal
        with pytest.raises(knowtk.ScanLimitExceeded):
            store.records()
    builder.remove("r0.md")
    assert ids(store) == ["r1", "r2", "r3"]
    store.close()


def test_a_store_opened_through_a_symlink_is_watched(builder: StoreBuilder, tmp_path: Path) -> None:
    builder.page("a", "Alpha", path="sub/a.md")
    link = tmp_path / "link"
    os.symlink(builder.root, link)
    store = knowtk.open_store(link, state_dir=tmp_path / "state")
    assert ids(store) == ["a"]
    builder.page("b", "Beta")
    builder.page("c", "Gamma", path="sub/c.md")
    assert ids(store) == ["a", "b", "c"]
    assert store.freshness_mode == "inotify" and store.engine.scanner.source.walks == 1
    store.close()


def test_a_folder_permission_change_walks_and_a_folder_mtime_does_not(builder: StoreBuilder, tmp_path: Path) -> None:
    builder.page("a", "Alpha", path="sub/a.md")
    store, source = watched(builder, tmp_path)
    os.utime(builder.root / "sub", ns=(10**18, 10**18))  # as tar, rsync or git set it
    in_step(store)
    assert source.walks == 1
    os.chmod(builder.root / "sub", 0o700)  # may decide whether the walk can list it: the walk decides
    in_step(store)
    assert source.walks == 2
    store.close()


def test_hostile_entries_are_listed_as_the_walk_lists_them(builder: StoreBuilder, tmp_path: Path) -> None:
    """A FIFO, symlinks leaving the store or leading nowhere, a name not UTF-8: each seen as the walk sees it."""
    builder.page("a", "Alpha", path="notes/a.md")
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    store, _ = watched(builder, tmp_path)
    os.mkfifo(builder.root / "notes" / "pipe.md")  # never opened: a read would wait forever
    in_step(store)
    os.symlink(outside / "folder", builder.root / "linked")  # a folder symlink leaving the store: listed as 'linked/'
    in_step(store)
    os.symlink("nowhere.md", builder.root / "notes" / "dangling.md")
    in_step(store)
    (builder.root / "notes").joinpath(os.fsdecode(b"caf\xe9.md")).write_bytes(b"---\nid: x\nkind: page\n---\n")
    in_step(store)
    codes = {i["path"]: i["code"] for i in store.records().to_dict()["coverage"]["issues"]}
    assert codes == {
        "linked/": "symlink_outside",
        "notes/caf\\xe9.md": "name_invalid",
        "notes/dangling.md": "symlink_broken",
        "notes/pipe.md": "not_regular_file",
    }
    os.unlink(builder.root / "linked")
    os.unlink(builder.root / "notes" / "pipe.md")
    in_step(store)
    assert set(codes) - {i["path"] for i in store.records().to_dict()["coverage"]["issues"]} == {
        "linked/",
        "notes/pipe.md",
    }
    assert store.records().to_dict()["total"] == 1
    store.close()
