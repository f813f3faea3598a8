"""What changed in the store since the last scan: the ``ChangeSource`` seam and ``StatWalk``, the portable walk.

``StatWalk`` lists every record file with its ``(size, mtime_ns)`` and the listing rules (names
skipped, symlinks never followed, unreadable paths listed under a problem code); an unchanged
store costs one ``os.scandir`` walk and one dictionary comparison. ``knowtk.scan.watch`` learns
the same from the kernel and walks only when it must.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from knowtk.errors import ScanLimitExceeded, StoreUnavailable
from knowtk.model.shapes import shape
from knowtk.scan.split import Listed, list_in_two, may_split

__all__ = [
    "DEFAULT_MAX_FILES",
    "LISTED_PROBLEMS",
    "ChangeSource",
    "FolderWalk",
    "ScanDelta",
    "SettledWalk",
    "Stat",
    "StatWalk",
    "flatten",
    "folder_of",
]

DEFAULT_MAX_FILES = 1_000_000

Stat = tuple[int, int]  # (size, mtime_ns)


@shape(slots=True)
class ScanDelta:
    changed: dict[str, Stat]  # new or modified record files
    removed: list[str]


@shape(slots=True)
class FolderWalk:
    """A whole walk of the store by folder (``StatWalk.listing_by_folder``), made for a scanner that compares
    folder by folder (``knowtk.scan.cache``): it replaces the walk the source's next ``changes`` would make."""

    folders: dict[str, dict[str, Stat]]
    forced: set[str]  # paths to read again even where the stat did not move (events were lost)


class ChangeSource(Protocol):
    """Tells the scanner what changed; ``known`` is what it saw last time (path -> stat)."""

    def changes(self, known: Mapping[str, Stat]) -> ScanDelta: ...


class StatWalk:
    """The portable change source: walk the store and compare (size, mtime_ns) of every record file."""

    def __init__(self, root: str, *, max_files: int = DEFAULT_MAX_FILES) -> None:
        self.root = root
        self.max_files = max_files
        self._root_real: str | None = None

    def listing(
        self, *, enter: Callable[[str], object] | None = None, symlinks: set[str] | None = None
    ) -> dict[str, Stat]:
        """Every record file (relative path with '/') and its stat; names starting with '.' or '_' skipped.

        What cannot be read as a record is listed too, under a stat whose size is a negative
        ``LISTED_PROBLEMS`` code, so that the scan reports it as that path's coverage issue: a FIFO,
        socket or device named ``*.md``, a symlink leaving the store or leading nowhere, a folder
        that cannot be listed (its path ends with '/'), a name that is not UTF-8, a path the
        system cannot open. Symlinks are never followed: one that stays inside the store needs no
        following, its target is read at its own path.

        ``enter`` is called with each folder ('' or 'a/b/') before it is listed (a watcher adds
        its watch there: one pass instead of two); ``symlinks`` collects every ``*.md`` symlink.
        """
        return flatten(self.listing_by_folder(enter=enter, symlinks=symlinks))

    def listing_by_folder(
        self,
        *,
        enter: Callable[[str], object] | None = None,
        symlinks: set[str] | None = None,
        known: Mapping[str, int] | None = None,
        leave: Callable[[str], object] | None = None,
    ) -> dict[str, dict[str, Stat]]:
        """What ``listing`` lists, by folder: '' or 'a/b/' -> {name: stat} of what it holds (``folder_of``).

        A key of ``listing`` is its folder and its name joined; a name ending with '/' is a folder
        listed under a problem code. Every folder walked has its mapping, if only an empty one, and
        they come in the order the walk listed them (as do the names in each).

        ``known`` (folder -> files, what the last walk found) lets a large store's folders be listed
        in two processes (``knowtk.scan.split``): each is entered first, and ``leave`` is called
        with those the walk then does not reach. The answer is the same.
        """
        out: dict[str, dict[str, Stat]] = {}
        stack = [""]
        limit, count = self.max_files, 0
        root_fd = None
        if _BY_FD:
            with contextlib.suppress(OSError):  # (listing the store folder by its path then says why)
                root_fd = os.open(self.root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        entered: set[str] = set()
        try:
            listed: dict[str, Listed] = {}
            if known and may_split(known):
                entered = set(known)
                for folder in known:  # watched before either process lists it
                    if enter is not None:
                        enter(folder)
                listed = list_in_two(lambda folder: self._listed_alone(folder, root_fd), known)
            while stack:
                prefix = stack.pop()
                found = listed.pop(prefix, None)
                if found is None:
                    if enter is not None and prefix not in entered:
                        enter(prefix)
                    found = self._listed_alone(prefix, root_fd)
                entered.discard(prefix)
                count += _merge(found, out, stack, symlinks)
                if count > limit:
                    raise ScanLimitExceeded("max_files", count, limit)
        finally:
            if root_fd is not None:
                os.close(root_fd)
        if leave is not None:
            for folder in entered:  # entered for the split walk, never reached
                leave(folder)
        return out

    def _listed_alone(self, prefix: str, root_fd: int | None) -> Listed:
        """One folder listed as the walk lists it, into a listing of its own (``knowtk.scan.split.Listed``)."""
        out: dict[str, dict[str, Stat]] = {}
        stack: list[str] = []
        links: set[str] = set()
        added = self._list_folder(prefix, root_fd, out, stack, links)
        return out, stack, list(links), added

    def _list_folder(
        self,
        prefix: str,
        root_fd: int | None,
        out: dict[str, dict[str, Stat]],
        stack: list[str],
        symlinks: set[str] | None,
    ) -> int:
        """List one folder into ``out`` (its sub-folders onto ``stack``); how many keys it added."""
        folder = os.path.join(self.root, prefix) if prefix else self.root
        fd = None
        try:
            if root_fd is None:
                it = os.scandir(folder)
            else:  # by a descriptor: each entry's stat looks up its name in the folder, not its whole path again
                fd = os.open(prefix or ".", _DIR_FLAGS, dir_fd=root_fd)
                it = os.scandir(fd)
        except FileNotFoundError:
            _close(fd)
            if not prefix:
                raise StoreUnavailable(self.root, "the store folder does not exist") from None
            return 0  # a folder removed while we walk
        except NotADirectoryError:
            _close(fd)
            if not prefix:
                raise StoreUnavailable(self.root, "the store path is not a folder") from None
            return 0  # replaced by a file while we walk
        except OSError as exc:
            _close(fd)
            if not prefix:
                raise StoreUnavailable(folder, f"cannot list the folder ({exc.strerror})") from None
            if exc.errno == errno.ELOOP:
                return 0  # replaced by a symlink while we walk (never followed): the next walk lists it
            _list_folder_problem(out, prefix, _FOLDER_UNREADABLE if exc.errno != errno.ENAMETOOLONG else _TOO_LONG)
            return 1
        group: dict[str, Stat] = {}
        out[prefix] = group
        try:
            with it:
                self._list_entries(prefix, it, group, stack, symlinks)
        except OSError as exc:  # the listing broke off part way (an I/O error): the folder is not covered
            if not prefix:
                raise StoreUnavailable(folder, f"cannot list the folder ({exc.strerror})") from None
            del out[prefix]
            _list_folder_problem(out, prefix, _FOLDER_UNREADABLE, exc.errno or 0)
            return 1
        finally:
            _close(fd)
        return len(group)

    def _list_entries(
        self,
        prefix: str,
        entries: Iterator[os.DirEntry[str]],
        out: dict[str, Stat],
        stack: list[str],
        symlinks: set[str] | None,
    ) -> None:
        """List one folder's entries into ``out`` by name (an OSError here means the listing broke off part way)."""
        for entry in entries:
            name = entry.name  # the usual entry, a regular *.md file, without a method call
            if name.endswith(".md") and name.isascii() and name[0] not in "._" and entry.is_file(follow_symlinks=False):
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    pass  # _list_entry says what it means
                else:
                    out[name] = (st.st_size, st.st_mtime_ns)
                    continue
            self._list_entry(prefix, entry, out, stack, symlinks)

    def _list_entry(
        self,
        prefix: str,
        entry: os.DirEntry[str],
        out: dict[str, Stat],
        stack: list[str],
        symlinks: set[str] | None,
    ) -> None:
        name = entry.name
        if name[0] in "._":
            return
        if not name.isascii() and not _is_text(name):  # bytes that are not UTF-8 (surrogate-escaped)
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            if entry.is_dir(follow_symlinks=False):
                out[shown + "/"] = _problem_stat(_NAME_NOT_UTF8)
            elif shown.endswith(".md"):
                out[shown] = _problem_stat(_NAME_NOT_UTF8)
            return
        if entry.is_symlink():
            if symlinks is not None and name.endswith(".md"):
                symlinks.add(prefix + name)
            self._list_symlink(prefix, entry, out)
        elif entry.is_dir(follow_symlinks=False):
            stack.append(prefix + name + "/")
        elif name.endswith(".md"):
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                return
            except OSError as exc:
                out[name] = _problem_stat(_TOO_LONG if exc.errno == errno.ENAMETOOLONG else _UNREADABLE)
                return
            if entry.is_file(follow_symlinks=False):
                out[name] = (st.st_size, st.st_mtime_ns)
            else:  # a FIFO, socket or device: opening it could wait forever or read without end
                out[name] = _problem_stat(_NOT_REGULAR, st.st_mtime_ns)

    def _list_symlink(self, prefix: str, entry: os.DirEntry[str], out: dict[str, Stat]) -> None:
        """A symlink inside the store is skipped (its target is walked); others are reported, never followed."""
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime_ns
        except OSError:
            return
        full = os.path.join(self.root, prefix + entry.name)  # (entry.path is the name alone in a walk by descriptor)
        listed = self._symlink_listed(full, mtime, is_record=entry.name.endswith(".md"))
        if listed is not None:
            out[entry.name + listed[0]] = listed[1]

    def _symlink_listed(self, full: str, mtime: int, *, is_record: bool) -> tuple[str, Stat] | None:
        """(suffix, stat) a symlink is listed under ('/' when it leads to a folder), or None: not listed."""
        try:
            target = os.stat(full)
        except OSError:  # dangling, or a loop
            return ("", _problem_stat(_SYMLINK_BROKEN, mtime)) if is_record else None
        is_dir = stat.S_ISDIR(target.st_mode)
        if not is_dir and not is_record:
            return None
        if self._root_real is None:
            self._root_real = os.path.realpath(self.root)
        real = os.path.realpath(full)
        if real == self._root_real or real.startswith(self._root_real.rstrip(os.sep) + os.sep):
            return None
        return ("/" if is_dir else "", _problem_stat(_SYMLINK_OUTSIDE, mtime))

    def stat_path(self, path: str) -> Stat | None:
        """What ``listing`` lists at this record file path ('a/b.md'), or None when it lists nothing there.

        For a change source that is told which paths changed (``knowtk.scan.watch``): the walk's rules, one path.
        A name that is not UTF-8, or a symlink to a folder, is listed under another key: such a source walks.
        """
        name = path.rpartition("/")[2]
        if not name or name[0] in "._" or not name.endswith(".md") or not _is_text(path):
            return None
        full = os.path.join(self.root, path)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return _problem_stat(_TOO_LONG if exc.errno == errno.ENAMETOOLONG else _UNREADABLE)
        if stat.S_ISLNK(st.st_mode):
            listed = self._symlink_listed(full, st.st_mtime_ns, is_record=True)
            return listed[1] if listed is not None and not listed[0] else None
        if stat.S_ISDIR(st.st_mode):
            return None
        if stat.S_ISREG(st.st_mode):
            return (st.st_size, st.st_mtime_ns)
        return _problem_stat(_NOT_REGULAR, st.st_mtime_ns)  # a FIFO, socket or device: never opened

    def folder_walk(self, known: Mapping[str, int] | None = None) -> FolderWalk:
        """The walk ``changes`` makes, by folder; a scanner compares it folder by folder (``known``: the
        folders it knows and their files, see ``listing_by_folder``)."""
        return FolderWalk(self.listing_by_folder(known=known), set())

    def changes(self, known: Mapping[str, Stat]) -> ScanDelta:
        listing = self.listing()
        if listing == known:  # the usual case, settled by one comparison in C
            return ScanDelta({}, [])
        changed = {path: st for path, st in listing.items() if known.get(path) != st}
        removed = [path for path in known if path not in listing]
        return ScanDelta(changed, removed)


class SettledWalk(StatWalk):
    """The walk of files written once and only read after (a past kept in the state folder, ``store.at``): walked
    once, every later question answered from that walk, with no ``stat`` call. What changed is still the
    difference between that walk and what the scanner knows, so a scan that failed half way reads again what it
    had not taken in; a file changed by hand after the walk is not seen (``knowtk check`` compares a past's files
    with their source and removes them where they differ)."""

    freshness_mode = "settled"

    def __init__(
        self, root: str, *, max_files: int = DEFAULT_MAX_FILES, absent: Mapping[str, Stat] | None = None
    ) -> None:
        """``absent``: files listed with this stat though not written yet (path -> stat): written when first read
        (``knowtk.model.on_demand``), and listed alike once written."""
        super().__init__(root, max_files=max_files)
        self._walked: dict[str, dict[str, Stat]] | None = None
        self._flat: dict[str, Stat] | None = None
        self._absent = absent or {}
        self.settled_walk = 0  # how many times it walked: a scanner that took in this walk need not compare it again

    def listing_by_folder(
        self,
        *,
        enter: Callable[[str], object] | None = None,
        symlinks: set[str] | None = None,
        known: Mapping[str, int] | None = None,
        leave: Callable[[str], object] | None = None,
    ) -> dict[str, dict[str, Stat]]:
        if self._walked is None or symlinks is not None:
            found = super().listing_by_folder(enter=enter, symlinks=symlinks, known=known, leave=leave)
            for path, st in self._absent.items():
                folder, _, name = path.rpartition("/")
                found.setdefault(folder + "/" if folder else "", {}).setdefault(name, st)
            # each folder's names sorted: a file written on demand since would change the order a walk lists
            # them in, and the packs of a past's state are digests of them sorted (``digest_sorted``)
            found = {folder: dict(sorted(names.items())) for folder, names in found.items()}
            self._walked, self._flat = found, None
            self.settled_walk += 1
        return {folder: dict(files) for folder, files in self._walked.items()}  # (the scanner may keep them)

    def listing(
        self, *, enter: Callable[[str], object] | None = None, symlinks: set[str] | None = None
    ) -> dict[str, Stat]:
        if self._walked is None or self._flat is None or symlinks is not None:
            self._flat = flatten(self.listing_by_folder(enter=enter, symlinks=symlinks))
        return dict(self._flat)


# what the listing found unreadable, by the negative size it lists the path under
LISTED_PROBLEMS = {
    1: ("not_regular_file", "a FIFO, socket or device, not a regular file; not opened"),
    2: ("symlink_outside", "a symlink that leaves the store; not followed"),
    3: ("symlink_broken", "a symlink to nothing (dangling, or a loop); not followed"),
    4: ("folder_unreadable", "a folder that cannot be listed (no permission, an I/O error); its records are not read"),
    5: ("name_invalid", "the name is not UTF-8; not read"),
    6: ("path_too_long", "the path is longer than the system allows; not read"),
    7: ("unreadable", "the file's status cannot be read"),
}
_NOT_REGULAR, _SYMLINK_OUTSIDE, _SYMLINK_BROKEN, _FOLDER_UNREADABLE, _NAME_NOT_UTF8, _TOO_LONG, _UNREADABLE = range(
    1, 8
)


# a folder is listed through a descriptor where the system can (not Windows): see StatWalk._list_folder
_BY_FD = os.scandir in os.supports_fd and os.open in os.supports_dir_fd
_O_CLOEXEC, _O_DIRECTORY = getattr(os, "O_CLOEXEC", 0), getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | _O_CLOEXEC


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def folder_of(path: str) -> str:
    """The folder ('' or 'a/b/') a key of ``StatWalk.listing`` is listed in (a key ending with '/' is a folder's)."""
    return path[: path.rfind("/", 0, len(path) - 1) + 1]


def _merge(found: Listed, out: dict[str, dict[str, Stat]], stack: list[str], symlinks: set[str] | None) -> int:
    """Add one folder's own listing to the walk's: what ``_list_folder`` would have written into it."""
    listing, folders, links, added = found
    for folder, names in listing.items():  # the folder, or its parent when it is listed under a problem code
        if folder in out:
            out[folder].update(names)
        else:
            out[folder] = names
    stack.extend(folders)
    if symlinks is not None:
        symlinks.update(links)
    return added


def flatten(by_folder: Mapping[str, Mapping[str, Stat]]) -> dict[str, Stat]:
    """``StatWalk.listing`` from ``listing_by_folder``: each folder's names joined to it."""
    return {folder + name: st for folder, names in by_folder.items() for name, st in names.items()}


def _list_folder_problem(out: dict[str, dict[str, Stat]], prefix: str, code: int, mtime_ns: int = 0) -> None:
    """A folder that cannot be listed is listed in its parent ('a/b/' as 'b/' in 'a/'), which was walked first."""
    parent = folder_of(prefix)
    out.setdefault(parent, {})[prefix[len(parent) :]] = _problem_stat(code, mtime_ns)


def _problem_stat(code: int, mtime_ns: int = 0) -> Stat:
    return (-code, mtime_ns)


def _is_text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
