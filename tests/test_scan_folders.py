"""scan_folders_v1: the scan cache's rows packed by folder, so that a new scanner keeps unchanged folders packed.

Every test compares a scanner that opened on the packs with one that saw the store for the first time
(``fresh``): the same paths, stats, hashes and problems, whatever was changed, damaged or written by
another writer in between. Counters (``reads``, ``_packed``) show what the packs saved.
"""

from __future__ import annotations

import marshal
import os
import random
import shutil
import sqlite3
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.errors import ScanLimitExceeded
from knowtk.scan.cache import Scanner
from knowtk.scan.changes import ScanDelta, Stat, StatWalk, flatten, folder_of
from knowtk.scan.packs import folder_digest, unpacked_rows
from knowtk.scan.watch import InotifyWatch
from knowtk.state import RecordChanged, StateDB
from tests.helpers import StoreBuilder

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def fill(builder: StoreBuilder) -> None:
    """Records at the top, in folders, nested folders, and an empty folder."""
    for i in range(4):
        builder.page(f"top{i}", f"Top {i}", f"body {i}")
    for folder in ("a", "b", "a/deep", "a/deep/er"):
        for i in range(3):
            slug = folder.replace("/", "-")
            builder.page(f"{slug}-{i}", f"{folder} {i}", f"text {i}", path=f"{folder}/n{i}.md")
    (builder.root / "empty").mkdir()


def scanner(root: Path, state: Path, source: Any = None) -> Scanner:
    return Scanner(str(root), StateDB(str(state), store=str(root)), source=source)


def kept_packed(root: Path, state: Path, folder: str) -> bool:
    """A new process's scanner reads no file and keeps ``folder`` packed (its pack was written and is current)."""
    later = scanner(root, state)
    later.scan()
    return later.reads == 0 and folder in later._packed


def seen(sc: Scanner) -> dict[str, tuple[Any, ...]]:
    return {p: (e.stat, e.sha256, e.problem) for p, e in sc.files.items()}


def fresh(root: Path, tmp_path: Path) -> dict[str, tuple[Any, ...]]:
    """What a scanner that never saw the store finds now."""
    state = tmp_path / f"fresh-{random.random()}.sqlite"
    sc = scanner(root, state)
    sc.scan()
    return seen(sc)


def packs(state: Path) -> dict[str, tuple[Any, ...]]:
    conn = sqlite3.connect(state)
    try:
        rows = conn.execute("SELECT folder, digest, sorted, count, crc, rows FROM scan_folders_v1").fetchall()
    finally:
        conn.close()
    return {r[0]: r[1:] for r in rows}


def meta(state: Path, key: str) -> str | None:
    conn = sqlite3.connect(state)
    try:
        row = conn.execute("SELECT value FROM knowtk_meta WHERE key = ?", (key,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


def sql(state: Path, *statements: str, args: tuple[Any, ...] = ()) -> None:
    conn = sqlite3.connect(state)
    try:
        for statement in statements:
            conn.execute(statement, args if "?" in statement else ())
        conn.commit()
    finally:
        conn.close()


def opened(builder: StoreBuilder, tmp_path: Path, source: Any = None) -> tuple[Path, Scanner]:
    """A state written by a first scanner (packs included) and a second scanner opened on it, scanned."""
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    second = scanner(builder.root, state, source)
    second.scan()
    return state, second


def edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


# -- the walk by folder -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "folder"),
    [("x.md", ""), ("a/x.md", "a/"), ("a/b/x.md", "a/b/"), ("a/", ""), ("a/b/", "a/"), ("a/b/c/", "a/b/")],
)
def test_folder_of_a_listed_key(path: str, folder: str) -> None:
    assert folder_of(path) == folder


def test_listing_by_folder_is_the_listing_split_by_folder(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    (tmp_path / "outside.md").write_text("---\nid: o\n---\n")
    os.symlink(tmp_path / "outside.md", builder.root / "a" / "link.md")  # listed under a problem code
    os.mkfifo(builder.root / "b" / "fifo.md")
    walk = StatWalk(str(builder.root))
    by_folder = walk.listing_by_folder()
    assert flatten(by_folder) == walk.listing()
    assert set(by_folder) == {"", "a/", "b/", "a/deep/", "a/deep/er/", "empty/"}
    assert by_folder["empty/"] == {}
    for folder, names in by_folder.items():
        assert all(folder_of(folder + name) == folder for name in names)
    assert by_folder["a/"]["link.md"][0] < 0 and by_folder["b/"]["fifo.md"][0] < 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists any folder")
def test_a_folder_that_cannot_be_listed_is_listed_in_its_parent(builder: StoreBuilder) -> None:
    fill(builder)
    locked = builder.root / "a" / "deep"
    locked.chmod(0)
    try:
        by_folder = StatWalk(str(builder.root)).listing_by_folder()
        assert by_folder["a/"]["deep/"][0] < 0 and "a/deep/" not in by_folder
        assert "a/deep/" in StatWalk(str(builder.root)).listing()
    finally:
        locked.chmod(0o755)


def test_the_walk_by_folder_keeps_the_file_limit(builder: StoreBuilder) -> None:
    fill(builder)
    with pytest.raises(ScanLimitExceeded):
        StatWalk(str(builder.root), max_files=5).listing_by_folder()


# -- packs written and kept -----------------------------------------------------------------------


def test_the_first_scan_writes_one_pack_per_folder_with_records(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    sc = scanner(builder.root, state)
    sc.scan()
    found = packs(state)
    assert set(found) == {"", "a/", "b/", "a/deep/", "a/deep/er/"}  # an empty folder has none
    assert sum(p[2] for p in found.values()) == len(sc.files)
    assert meta(state, "scan_folders_token") == meta(state, "scan_token")
    for folder, (_, _, count, crc, blob) in found.items():
        rows = marshal.loads(blob)
        assert zlib.crc32(blob) == crc and len(rows) == count
        assert [r[0] for r in rows] == sorted(p for p in sc.files if folder_of(p) == folder)


def test_an_unchanged_store_keeps_every_folder_packed_and_reads_nothing(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state, second = opened(builder, tmp_path)
    token = meta(state, "scan_token")
    assert second.reads == 0 and set(second._packed) == set(packs(state))
    assert second._stats == {} and second._lazy is not None and not second._lazy.rows
    assert second.file_count() == len(fresh(builder.root, tmp_path))
    assert meta(state, "scan_token") == token  # nothing written
    assert second.loaded_token == int(token or 0)
    assert seen(second) == fresh(builder.root, tmp_path)


def test_an_entry_of_a_packed_folder_is_the_one_a_fresh_scan_makes(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    _, second = opened(builder, tmp_path)
    entry = second.entry("a/deep/n1.md")
    assert entry is not None and entry.record is not None and entry.record.id == "a-deep-1"
    # read from its row, its folder left packed (a query's records), then made from the pack once unpacked
    assert set(second._packed) == {"", "a/", "b/", "a/deep/", "a/deep/er/"}
    assert second.entry("a/deep/n1.md") is entry and second.reads == 0
    unpacked = second._get("a/deep/n1.md")
    assert set(second._packed) == {"", "a/", "b/", "a/deep/er/"} and "a/deep/" not in second._peeked
    other = scanner(builder.root, tmp_path / "other.sqlite")
    other.scan()
    mine = other.entry("a/deep/n1.md")
    assert mine is not None and (entry.record, entry.issues) == (mine.record, mine.issues)
    assert unpacked is not None and (unpacked.stat, unpacked.sha256) == (entry.stat, entry.sha256) == (
        mine.stat,
        mine.sha256,
    )


def test_an_entry_is_not_read_from_a_row_another_process_may_have_written(
    builder: StoreBuilder, tmp_path: Path
) -> None:
    """Once scan_files_v1's change counter moved past the one a scanner loaded, a row may not be its pack's:
    the folder is unpacked and the entry made from the pack, as before (the next scan compares it)."""
    fill(builder)
    state, second = opened(builder, tmp_path)
    first = scanner(builder.root, state)  # another process writes a row of a/ (its own scan of a changed file)
    edit(builder.root / "a" / "n0.md", "text 0", "text zero")
    first.scan()
    with pytest.raises(RecordChanged):  # the pack's entry, whose file changed since: as before this shortcut
        second.entry("a/n0.md")
    assert "a/" not in second._packed and not second._peeked
    same = second.entry("a/n1.md")  # (an unchanged file of the folder: its pack's entry, filled)
    assert same is not None and same.record is not None and same.record.id == "a-1"


def test_files_are_made_in_the_table_order(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state, second = opened(builder, tmp_path)
    second.entry("b/n0.md")  # one folder unpacked first
    conn = sqlite3.connect(state)
    order = [p for (p,) in conn.execute("SELECT path FROM scan_files_v1 ORDER BY path")]
    conn.close()
    assert list(second.files) == order and not second._packed


# -- changes found folder by folder ------------------------------------------------------------------


def test_a_changed_file_unpacks_its_folder_only(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    edit(builder.root / "a" / "deep" / "n2.md", "text 2", "text two, longer")
    second = scanner(builder.root, state)
    touched, _ = second.scan()
    assert touched == {"a/deep/n2.md"} and second.reads == 1
    assert set(second._packed) == {"", "a/", "b/", "a/deep/er/"}
    assert seen(second) == fresh(builder.root, tmp_path)
    third = scanner(builder.root, state)  # the pack written with the change
    assert third.scan() == (set(), {}) and third.reads == 0 and "a/deep/" in third._packed


@pytest.mark.parametrize(
    "change",
    ["added", "removed", "mtime_only", "folder_removed", "folder_renamed", "folder_added", "nested_added", "emptied"],
)
def test_each_change_is_found_as_a_fresh_scan_finds_it(builder: StoreBuilder, tmp_path: Path, change: str) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    root = builder.root
    if change == "added":
        builder.page("new", "New", "new body", path="b/new.md")
    elif change == "removed":
        (root / "a" / "n0.md").unlink()
    elif change == "mtime_only":
        st = os.stat(root / "b" / "n1.md")
        os.utime(root / "b" / "n1.md", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    elif change == "folder_removed":
        shutil.rmtree(root / "a" / "deep")
    elif change == "folder_renamed":
        (root / "b").rename(root / "c")
    elif change == "folder_added":
        builder.page("z", "Z", "z", path="z/z.md")
    elif change == "nested_added":
        builder.page("e", "E", "e", path="empty/inner/e.md")
    elif change == "emptied":
        for name in ("n0.md", "n1.md", "n2.md"):
            (root / "b" / name).unlink()
    second = scanner(root, state)
    second.scan()
    assert seen(second) == fresh(root, tmp_path)
    assert second._stats == {p: (e.stat) for p, e in second.files.items()}
    third = scanner(root, state)
    third.scan()
    assert third.reads == 0 and seen(third) == seen(second)  # the packs written with the change hold it
    assert set(packs(state)) == {folder_of(p) for p in seen(second)}


def test_same_size_and_mtime_with_other_bytes_is_handled_as_by_the_rows(builder: StoreBuilder, tmp_path: Path) -> None:
    """The walk cannot see such an edit (no event in a new process): the packs see what the rows saw."""
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    target = builder.root / "a" / "n1.md"
    st = os.stat(target)
    edit(target, "text 1", "text X")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    flat_state = tmp_path / "flat.sqlite"
    src, dst = sqlite3.connect(state), sqlite3.connect(flat_state)
    src.backup(dst)
    src.close(), dst.close()
    sql(flat_state, "DROP TABLE scan_folders_v1")
    with_packs, without = scanner(builder.root, state), scanner(builder.root, flat_state)
    assert with_packs.scan()[0] == without.scan()[0] == set()
    assert seen(with_packs) == seen(without)


def test_a_forgotten_path_of_a_packed_folder_is_read_again(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    _, second = opened(builder, tmp_path)
    second.forget(["b/n2.md"])
    assert "b/" not in second._packed
    second.scan()
    assert second.reads == 1


def test_reread_all_reads_every_file_of_packed_folders(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    _, second = opened(builder, tmp_path)
    second.reread_all(second.profiles)
    second.scan()
    assert second.reads == len(fresh(builder.root, tmp_path)) and not second._packed


def test_a_long_lived_walking_scanner_sees_changes_in_packed_folders(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    _, second = opened(builder, tmp_path)
    edit(builder.root / "a" / "deep" / "er" / "n0.md", "text 0", "text zero")
    (builder.root / "b" / "n1.md").unlink()
    touched, _ = second.scan()
    assert touched == {"a/deep/er/n0.md", "b/n1.md"}
    assert seen(second) == fresh(builder.root, tmp_path)


def test_a_source_without_a_folder_walk_loads_the_rows(builder: StoreBuilder, tmp_path: Path) -> None:
    class Plain:
        def __init__(self, root: str) -> None:
            self.walk = StatWalk(root)

        def changes(self, known: Mapping[str, Stat]) -> ScanDelta:
            return self.walk.changes(known)

    fill(builder)
    state = tmp_path / "state.sqlite"
    first = scanner(builder.root, state, Plain(str(builder.root)))
    first.scan()
    assert not packs_table_exists(state)
    scanner(builder.root, state).scan()  # a walking scanner writes them
    second = scanner(builder.root, state, Plain(str(builder.root)))
    second.scan()
    assert not second._packed and seen(second) == fresh(builder.root, tmp_path)


def packs_table_exists(state: Path) -> bool:
    conn = sqlite3.connect(state)
    try:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'scan_folders_v1'").fetchone() is not None
    finally:
        conn.close()


# -- damage and other writers ---------------------------------------------------------------------


def damage_pack(state: Path, folder: str, how: str) -> None:
    conn = sqlite3.connect(state)
    digest, _, count, crc, blob = conn.execute(
        "SELECT digest, sorted, count, crc, rows FROM scan_folders_v1 WHERE folder = ?", (folder,)
    ).fetchone()
    rows = marshal.loads(blob)
    if how == "crc":
        blob = blob[:-3] + b"xyz"
    elif how == "garbage_with_crc":
        blob = b"\x00not marshal" + blob[:10]
        crc = zlib.crc32(blob)
    elif how == "wrong_folder_with_crc":
        blob = marshal.dumps([("elsewhere/" + str(r[0]).rpartition("/")[2], *r[1:]) for r in rows])
        crc = zlib.crc32(blob)
    elif how == "count":
        count += 1
        blob = marshal.dumps(rows)
        crc = zlib.crc32(blob)
    elif how == "not_rows_with_crc":
        blob = marshal.dumps({"a": 1})
        crc = zlib.crc32(blob)
    elif how == "digest":
        digest = b"\x00" * len(digest)
    elif how == "crc_text":
        crc = "not a number"
    elif how == "count_text":
        count = "three"
    conn.execute(
        "UPDATE scan_folders_v1 SET digest = ?, count = ?, crc = ?, rows = ? WHERE folder = ?",
        (digest, count, crc, blob, folder),
    )
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "how",
    [
        "crc",
        "garbage_with_crc",
        "wrong_folder_with_crc",
        "count",
        "not_rows_with_crc",
        "digest",
        "crc_text",
        "count_text",
    ],
)
def test_a_damaged_pack_costs_work_never_a_wrong_answer(builder: StoreBuilder, tmp_path: Path, how: str) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    damage_pack(state, "a/", how)
    edit(builder.root / "a" / "n1.md", "text 1", "text one, edited")  # a change in the damaged folder
    second = scanner(builder.root, state)
    touched, _ = second.scan()
    assert "a/n1.md" in touched
    second.scan()  # (a pack damaged behind its CRC: its files are read again at the next scan)
    assert seen(second) == fresh(builder.root, tmp_path)
    third = scanner(builder.root, state)
    third.scan()
    third.scan()
    assert seen(third) == fresh(builder.root, tmp_path)


def test_packs_behind_a_crc_mismatch_are_written_again(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    damage_pack(state, "b/", "crc")
    token = meta(state, "scan_token")
    second = scanner(builder.root, state)
    second.scan()
    assert not second._packed  # the rows were loaded instead
    assert meta(state, "scan_token") == token == meta(state, "scan_folders_token")  # packs alone: token kept
    assert kept_packed(builder.root, state, "b/")


def test_a_foreign_writer_of_the_rows_puts_the_packs_aside(builder: StoreBuilder, tmp_path: Path) -> None:
    """An older knowtk (or a repair) writes scan_files_v1 and bumps scan_token, not the packs: they are not used."""
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    edit(builder.root / "b" / "n0.md", "text 0", "text nought")
    st = os.stat(builder.root / "b" / "n0.md")
    sql(  # the new stat with a hash that is not the file's: the row is what a new scanner must go by
        state,
        "UPDATE scan_files_v1 SET size = ?, mtime_ns = ?, sha256 = 'f00d' WHERE path = 'b/n0.md'",
        "UPDATE knowtk_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'scan_token'",
        args=(st.st_size, st.st_mtime_ns),
    )
    second = scanner(builder.root, state)
    second.scan()
    assert not second._packed and second.files["b/n0.md"].sha256 == "f00d"  # the rows', as before the packs
    assert meta(state, "scan_folders_token") == meta(state, "scan_token")  # written again from the rows


def test_another_scanner_writing_meanwhile_leaves_the_packs_aside(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    one, two = scanner(builder.root, state), scanner(builder.root, state)
    one.scan()
    two.scan()
    edit(builder.root / "a" / "n0.md", "text 0", "text zero")
    one.scan()  # writes the rows and the packs
    builder.page("late", "Late", "late", path="a/late.md")
    two.scan()  # its token is behind: writes the rows, not the packs
    assert meta(state, "scan_folders_token") != meta(state, "scan_token")
    third = scanner(builder.root, state)
    third.scan()
    assert not third._packed and seen(third) == fresh(builder.root, tmp_path)
    fourth = scanner(builder.root, state)
    fourth.scan()
    assert fourth.reads == 0 and fourth._packed and seen(fourth) == fresh(builder.root, tmp_path)


@pytest.mark.parametrize(
    "statements",
    [
        ["DROP TABLE scan_folders_v1"],
        ["DELETE FROM scan_folders_v1"],
        ["DROP TABLE scan_files_v1"],
        ["DELETE FROM knowtk_meta WHERE key = 'scan_folders_token'"],
    ],
)
def test_a_state_missing_a_part_rebuilds_it(builder: StoreBuilder, tmp_path: Path, statements: list[str]) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    sql(state, *statements)
    builder.page("more", "More", "more", path="a/deep/more.md")
    second = scanner(builder.root, state)
    second.scan()
    assert seen(second) == fresh(builder.root, tmp_path)
    third = scanner(builder.root, state)
    third.scan()
    assert third.reads == 0 and seen(third) == seen(second)


# -- the watch ------------------------------------------------------------------------------------


@linux_only
def test_a_watched_scanner_walks_once_by_folder_then_learns_from_events(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    source = InotifyWatch(str(builder.root))
    second = scanner(builder.root, state, source)
    try:
        second.scan()
        assert source.walks == 1 and source.freshness_mode == "inotify" and second._packed
        assert source.folder_walk() is None  # the watch is in place: events from now on
        edit(builder.root / "a" / "deep" / "er" / "n2.md", "text 2", "text 2!")
        builder.page("w", "W", "w", path="b/w.md")
        touched, _ = second.scan()
        assert touched == {"a/deep/er/n2.md", "b/w.md"} and source.walks == 1
        assert "a/" in second._packed  # a folder no event named stays packed
        assert seen(second) == fresh(builder.root, tmp_path)
    finally:
        source.close()
    third = scanner(builder.root, state, InotifyWatch(str(builder.root)))
    third.scan()
    assert third.reads == 0 and seen(third) == fresh(builder.root, tmp_path)


@linux_only
def test_a_folder_removed_under_a_watch_removes_its_packed_files(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    source = InotifyWatch(str(builder.root))
    second = scanner(builder.root, state, source)
    try:
        second.scan()
        shutil.rmtree(builder.root / "a" / "deep")
        (builder.root / "b").rename(builder.root / "bb")
        second.scan()
        assert seen(second) == fresh(builder.root, tmp_path)
    finally:
        source.close()


@linux_only
def test_a_pack_written_after_an_event_is_kept_by_its_sorted_digest(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()
    source = InotifyWatch(str(builder.root))
    second = scanner(builder.root, state, source)
    try:
        second.scan()
        second.scan()
        edit(builder.root / "b" / "n1.md", "text 1", "text 1 again")
        second.scan()  # no walk: the pack is written in sorted order
    finally:
        source.close()
    assert packs(state)["b/"][1] == 1
    assert kept_packed(builder.root, state, "b/")


def test_lost_events_read_every_file_again(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    state = tmp_path / "state.sqlite"
    scanner(builder.root, state).scan()

    class Lost(StatWalk):
        def folder_walk(self, known: Any = None) -> Any:
            walked = super().folder_walk(known)
            walked.forced = set(flatten(walked.folders))
            return walked

    second = scanner(builder.root, state, Lost(str(builder.root)))
    second.scan()
    assert second.reads == len(fresh(builder.root, tmp_path)) and not second._packed


# -- whole stores -----------------------------------------------------------------------------------


def test_random_changes_between_processes_answer_as_a_fresh_store(builder: StoreBuilder, tmp_path: Path) -> None:
    """Rounds of random edits, adds, removes and folder moves; each round a new scanner on the state."""
    rng = random.Random(5)
    fill(builder)
    state = tmp_path / "state.sqlite"
    root = builder.root
    for round_ in range(12):
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*.md"))
        for _ in range(rng.randrange(0, 4)):
            op = rng.choice(["edit", "add", "remove", "move_folder", "touch"])
            if op == "edit" and files:
                edit(root / rng.choice(files), "---\n", "---\n# x\n")
            elif op == "add":
                folder = rng.choice(["", "a/", "b/", "a/deep/", "c/d/"])
                builder.page(f"r{round_}{rng.randrange(10**6)}", "R", "r", path=f"{folder}r{rng.randrange(10**6)}.md")
            elif op == "remove" and files:
                (root / rng.choice(files)).unlink(missing_ok=True)
            elif op == "move_folder":
                dirs = [p for p in root.rglob("*") if p.is_dir()]
                if dirs:
                    src = rng.choice(dirs)
                    dst = root / f"moved{round_}"
                    if not dst.exists():
                        src.rename(dst)
            elif op == "touch" and files:
                target = root / rng.choice(files)
                if target.exists():
                    st = os.stat(target)
                    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 10**6))
        sc = scanner(root, state)
        if rng.random() < 0.5:
            sc.entry(rng.choice(files)) if files else None
        sc.scan()
        assert seen(sc) == fresh(root, tmp_path), round_


def test_a_store_reopened_after_changes_answers_as_a_fresh_store(builder: StoreBuilder, tmp_path: Path) -> None:
    fill(builder)
    with builder.open(state_dir=tmp_path / "state") as store:
        assert store.grep("text").to_dict()["hits"]
    edit(builder.root / "a" / "deep" / "n0.md", "text 0", "text 0 plus walrus")
    builder.remove("b/n2.md")
    builder.page("walrus", "Walrus", "a walrus appears", path="b/walrus.md")
    with builder.open(state_dir=tmp_path / "state") as store, builder.open(state_dir=tmp_path / "other") as other:
        for query in ("walrus", "text"):
            assert store.grep(query).to_dict()["hits"] == other.grep(query).to_dict()["hits"]
        assert {r["id"] for r in store.records(limit=100).to_dict()["rows"]} == {
            r["id"] for r in other.records(limit=100).to_dict()["rows"]
        }


def test_cache_module_keeps_its_pack_shape() -> None:
    """(the digest of a folder does not depend on how its strings were made: marshal version 2)"""
    names = {"x.md": (1, 2), "y.md": (3, 4)}
    made = {"".join(["x", ".md"]): (1, 2), sys.intern("y.md"): (3, 4)}
    assert folder_digest(names) == folder_digest(made)
    assert folder_digest(names) != folder_digest(dict(reversed(names.items())))
    assert knowtk.__name__ == "knowtk"


def _unpacked_row_by_row(folder: str, pack: Any) -> Any:
    """The pack check as it was written first, a row at a time (the reference for ``unpacked_rows``)."""
    rows = marshal.loads(pack[3])
    if not isinstance(rows, list) or len(rows) != pack[2]:
        return None
    for row in rows:
        if not (
            isinstance(row, tuple)
            and len(row) == 6
            and isinstance(row[0], str)
            and folder_of(row[0]) == folder
            and type(row[1]) is int
            and type(row[2]) is int
        ):
            return None
    return rows


def test_a_pack_is_checked_column_by_column_as_row_by_row() -> None:
    """``_unpacked`` checks a pack's rows with passes in C: it takes and refuses exactly what a check of each
    row would (rows of another folder, a folder listed in its parent, a wrong type or length, a count off)."""
    rng = random.Random(3)
    taken = refused = 0
    for _ in range(20_000):
        folder = rng.choice(["", "a/", "a/b/", "x y/"])
        rows: list[Any] = []
        for _ in range(rng.randrange(0, 4)):
            path = rng.choice(
                [folder + "n.md", folder + "c/", "a/n.md", "n.md", folder + "c/d.md", "", folder, "a/b/c.md", folder]
            )
            row: Any = (path, rng.choice([1, 2, True, 1.0, "1"]), rng.choice([5, None, 7]), "sha", None, None)
            if rng.random() < 0.1:
                row = row[:5]
            if rng.random() < 0.05:
                row = list(row)
            rows.append(row)
        blob = marshal.dumps(rows if rng.random() < 0.95 else {"x": 1})
        pack = (b"", 1, len(rows) if rng.random() < 0.95 else 9, blob)
        expected = _unpacked_row_by_row(folder, pack)
        assert unpacked_rows(folder, pack) == expected, (folder, rows)
        taken += expected is not None
        refused += expected is None
    assert taken > 1000 and refused > 1000
