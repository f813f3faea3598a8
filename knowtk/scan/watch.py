"""Change notification: the operating system tells the scan what changed, so an unchanged store costs no walk.

``InotifyWatch`` is a ``ChangeSource`` (see ``knowtk.scan.changes``) for Linux. It watches
every folder the walk would enter and, at the start of each query, drains the
inotify queue without blocking (no thread, no debounce). The kernel queues an
event before the ``write``, ``truncate``, ``rename``, ``unlink`` or ``utime``
that caused it returns, so a drain at query start sees every change completed
before the query began. Each event only names a *candidate*: the path is
stat'ed again and compared with what the scan knows, so a burst of events
costs one ``stat`` per path, and a missed detail can only cost work, never
an answer.

- a new folder (created or moved in) is watched, then walked;
- a folder deleted or moved out: every known file under it is checked (they are gone);
- ``IN_Q_OVERFLOW``: one full walk (``StatWalk.listing``) and every file read and
  hashed again (a lost event may have been an edit that kept size and mtime; only
  files whose bytes changed are parsed), then notifications again;
- a folder's mode, owner or group changed, or the store folder replaced: one full walk;
- ``.md`` symlinks are stat'ed at every query (their target changes elsewhere);
- no proof possible (not Linux, a network or FUSE file system, no inotify,
  the watch limit reached, a file the walk lists in a folder that is not
  watched): ``StatWalk`` at every query, as before; ``freshness_mode`` says
  which is in use and ``fallback_reason`` why.

Writes through a shared ``mmap`` and changes made by another machine on a
network file system raise no event (docs/performance.md lists the limits).
"""

from __future__ import annotations

import errno
import os
import struct
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from knowtk.errors import ScanLimitExceeded
from knowtk.model.config import CONFIG_FILE
from knowtk.scan.changes import DEFAULT_MAX_FILES, ChangeSource, FolderWalk, ScanDelta, Stat, StatWalk, flatten

if TYPE_CHECKING:
    import ctypes

__all__ = [
    "UNWATCHABLE_FILESYSTEMS",
    "InotifyWatch",
    "choose_change_source",
    "filesystem_types",
    "freshness_mode",
    "unwatchable_filesystem",
]

# inotify(7) constants
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = 0o2000000

WATCH_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
READ_BYTES = 1 << 16

# File systems whose changes may come from elsewhere (another machine, a host, a user-space daemon)
# without an inotify event here. FUSE is listed as a family ("fuse.sshfs", "fuse.rclone", ...).
UNWATCHABLE_FILESYSTEMS = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "9p", "afs", "ceph", "coda", "glusterfs",
        "lustre", "gpfs", "ocfs2", "gfs2", "fuse", "fuseblk", "virtiofs", "vboxsf", "vmhgfs", "davfs",
        "orangefs", "beegfs", "drvfs", "sshfs",
    }
)  # fmt: skip


def unwatchable_filesystem(fstype: str) -> bool:
    """True for a file system on which inotify cannot prove freshness (network, FUSE, host-shared)."""
    base = fstype.split(".", 1)[0]
    return fstype in UNWATCHABLE_FILESYSTEMS or base in UNWATCHABLE_FILESYSTEMS


def _mountinfo() -> list[tuple[str, str]]:
    """(mount point, file system type) of every mount this process sees, from /proc/self/mountinfo."""
    out: list[tuple[str, str]] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        point = fields[4].encode("utf-8", "surrogateescape").decode("unicode_escape", "replace")
        out.append((os.path.normpath(point), tail[0]))
    return out


def filesystem_types(root: str, mounts: Iterable[tuple[str, str]] | None = None) -> list[str]:
    """The file system types under ``root``: the one holding it, then any mounted inside it."""
    real = os.path.realpath(root)
    holding, best = "unknown", -1
    inside = []
    for point, fstype in _mountinfo() if mounts is None else mounts:
        if real == point or real.startswith(point.rstrip("/") + "/"):
            if len(point) > best:
                holding, best = fstype, len(point)
        elif point.startswith(real.rstrip("/") + "/"):
            inside.append(fstype)
    return [holding, *inside]


def _libc() -> ctypes.CDLL:
    """The C library: the process's own symbols (libc is linked in), else found by name.

    ``ctypes.util.find_library`` runs ``ldconfig`` in a subprocess: a new process need not pay it.
    """
    import ctypes  # (here: a process that watches nothing, a one-query command line, does not import it)

    own = ctypes.CDLL(None, use_errno=True)
    if hasattr(own, "inotify_init1"):
        return own
    from ctypes.util import find_library

    return ctypes.CDLL(find_library("c") or "libc.so.6", use_errno=True)


class _Inotify:
    """A minimal ctypes binding: one inotify instance, non-blocking, closed on exec."""

    def __init__(self) -> None:
        import ctypes

        libc = _libc()
        self._errno = ctypes.get_errno
        self._add = libc.inotify_add_watch
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = [ctypes.c_int, ctypes.c_int]
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            code = self._errno()
            raise OSError(code, os.strerror(code))
        self.fd = fd

    def add_watch(self, path: str, mask: int) -> int:
        wd = self._add(self.fd, os.fsencode(path), mask)
        if wd < 0:
            code = self._errno()
            raise OSError(code, os.strerror(code), path)
        return int(wd)

    def rm_watch(self, wd: int) -> None:
        self._rm(self.fd, wd)  # EINVAL when the kernel already dropped it: nothing to do

    def read(self) -> list[tuple[int, int, str]]:
        """Every queued event (wd, mask, name), without waiting."""
        events: list[tuple[int, int, str]] = []
        while True:
            try:
                data = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                return events
            i, n = 0, len(data)
            while i + _EVENT.size <= n:
                wd, mask, _cookie, size = _EVENT.unpack_from(data, i)
                i += _EVENT.size
                name = os.fsdecode(data[i : i + size].rstrip(b"\0"))
                i += size
                events.append((wd, mask, name))
            if not data:
                return events

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _Fallback(Exception):
    """Freshness cannot be proven by notifications here; the message says why."""


def _skipped(name: str) -> bool:
    return not name or name[0] in "._"


def _is_text(name: str) -> bool:
    """False for a name that is not UTF-8 (os.fsdecode keeps its bytes as lone surrogates)."""
    return name.isascii() or not any("\udc80" <= ch <= "\udcff" for ch in name)


def _folder_of(path: str) -> str:
    """'a/b/' for 'a/b/x.md', '' for 'x.md': the keys of the watched folders."""
    head, sep, _ = path.rpartition("/")
    return head + sep


class InotifyWatch:
    """A ``ChangeSource`` fed by inotify, falling back to ``StatWalk`` where notifications prove nothing.

    The first ``changes`` call watches every folder, then walks once; later calls drain the queue
    and stat only the paths it names. ``known`` is the scan's own map, so a delta the scan could
    not apply (it raised) is looked at again at the next call.
    """

    def __init__(self, root: str, *, max_files: int = DEFAULT_MAX_FILES, check_filesystem: bool = True) -> None:
        self.root = os.path.abspath(root)
        self.max_files = max_files
        self.walk = StatWalk(self.root, max_files=max_files)
        self.fallback_reason: str | None = None
        self.walks = 0  # full walks since opened (observability for tests and benchmarks)
        self.overflows = 0
        self._lock = threading.Lock()
        self._inotify: _Inotify | None = None
        self._folders: dict[int, str] = {}  # wd -> folder ('' or 'a/b/')
        self._wd_of: dict[str, int] = {}
        self._owners: dict[str, tuple[int, int, int] | None] = {}  # folder -> (mode, uid, gid) when watched
        self._symlinks: set[str] = set()  # .md symlinks: stat'ed at every query
        self._unconfirmed: set[str] = set()  # the last delta, checked again once
        self._full = True  # next call walks in full (first call, overflow, folder permissions)
        self._lost = False  # events were lost (overflow): the next walk reads every file again
        self._root_id: tuple[int, int] | None = None
        self._pid = os.getpid()
        self._config_event = False  # knowtk.yaml was named by an event since config_changed() last said
        if not sys.platform.startswith("linux"):
            self.fallback_reason = f"no inotify on {sys.platform}"
        elif check_filesystem:
            for fstype in filesystem_types(self.root):
                if unwatchable_filesystem(fstype):
                    self.fallback_reason = (
                        f"the store is on a {fstype} file system (changes made elsewhere raise no event)"
                    )
                    break
        if self.fallback_reason is None:
            try:
                self._inotify = _Inotify()
            except (OSError, AttributeError) as exc:  # EMFILE: max_user_instances; no inotify in this libc
                self.fallback_reason = f"inotify is unavailable ({exc})"

    @property
    def freshness_mode(self) -> str:
        """'inotify' while the OS proves what changed, 'walk' when every query walks the store."""
        return "walk" if self.fallback_reason is not None else "inotify"

    def close(self) -> None:
        with self._lock:
            if self._inotify is not None:
                self._inotify.close()
                self._inotify = None

    def __del__(self) -> None:
        inotify = getattr(self, "_inotify", None)
        if inotify is not None and self._pid == os.getpid():
            inotify.close()

    def config_changed(self) -> bool:
        """True once after an event named knowtk.yaml (or a full walk): read it again even if its stat did not move."""
        with self._lock:
            said, self._config_event = self._config_event, False
            return said

    # -- ChangeSource ---------------------------------------------------------------------------
    def changes(self, known: Mapping[str, Stat]) -> ScanDelta:
        with self._lock:
            if self.fallback_reason is None:
                try:
                    return self._changes(known)
                except _Fallback as exc:
                    self._give_up(str(exc))
                except BaseException:
                    self._full = True  # events drained for this call are gone: the next call walks
                    raise
            return self.walk.changes(known)

    def recheck(self, paths: Iterable[str]) -> None:
        """Compare these paths by stat at the next call, as if an event had named them (``Scanner.forget``)."""
        with self._lock:
            self._unconfirmed |= set(paths)

    def _give_up(self, reason: str) -> None:
        self.fallback_reason = reason
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        self._folders, self._wd_of, self._symlinks = {}, {}, set()

    def _changes(self, known: Mapping[str, Stat]) -> ScanDelta:
        if os.getpid() != self._pid:  # a forked child shares its parent's queue: it needs its own
            self._pid = os.getpid()
            self._restart()
        if self._inotify is None:
            raise _Fallback("the watch was closed")
        try:
            st = os.stat(self.root)
            root_id: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            root_id = None
        if root_id is None or root_id != self._root_id:  # first call, or the store folder replaced or gone
            self._full = True
        forced: set[str] = set()  # named by an event: read again even when the stat did not move
        candidates: set[str] = set()  # may have changed: compared by stat
        for wd, mask, name in self._inotify.read():
            self._event(wd, mask, name, known, forced, candidates)
        if self._full:
            return self._walk_all(known, forced)
        candidates |= self._unconfirmed
        candidates |= self._symlinks
        candidates -= forced
        changed: dict[str, Stat] = {}
        removed: list[str] = []
        for paths, force in ((forced, True), (candidates, False)):
            for path in paths:
                now = self._stat(path)
                if now is None:
                    if path in known:
                        removed.append(path)
                elif force or known.get(path) != now:
                    changed[path] = now
        self._unconfirmed = {*changed, *removed}
        count = len(known) - len(removed) + sum(1 for path in changed if path not in known)
        if count > self.max_files:
            raise ScanLimitExceeded("max_files", count, self.max_files)
        return ScanDelta(changed, removed)

    def _restart(self) -> None:
        """A new inotify instance (the old one is closed, its watches are not removed: a parent may own them)."""
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        try:
            self._inotify = _Inotify()
        except (OSError, AttributeError) as exc:
            raise _Fallback(f"inotify is unavailable ({exc})") from None
        self._folders, self._wd_of, self._symlinks = {}, {}, set()
        self._root_id = None
        self._full = True

    # -- events ---------------------------------------------------------------------------------
    def _event(
        self, wd: int, mask: int, name: str, known: Mapping[str, Stat], forced: set[str], candidates: set[str]
    ) -> None:
        if mask & IN_Q_OVERFLOW:
            self.overflows += 1
            self._full = self._lost = True
            return
        folder = self._folders.get(wd)
        if folder is None:  # a watch already dropped (its folder moved out or was deleted)
            return
        if mask & IN_IGNORED:
            self._forget(wd)
            return
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
            if folder == "":
                self._full = True  # the store folder itself: the next call sees it replaced or gone
            return  # a sub-folder: its parent reports the deletion or move by name
        if folder == "" and name == CONFIG_FILE:
            self._config_event = True
        if _skipped(name):
            return
        path = folder + name
        if not _is_text(name) or self._listed_as_folder(path, known):
            self._full = True  # the walk lists it under another key (a name not UTF-8, a folder symlink)
            return
        if mask & IN_ISDIR:
            if mask & (IN_CREATE | IN_MOVED_TO):
                self._watch_tree(path + "/", forced)
            elif mask & (IN_DELETE | IN_MOVED_FROM):
                self._unwatch_tree(path + "/")
                prefix = path + "/"
                candidates.update(p for p in known if p.startswith(prefix))
            elif mask & IN_ATTRIB and self._owner(path + "/") != self._owners.get(path + "/"):
                self._full = True  # permissions decide what the walk can list: let it decide
            return
        if name.endswith(".md"):
            forced.add(path)

    def _listed_as_folder(self, path: str, known: Mapping[str, Stat]) -> bool:
        """A symlink that is not a record file (the walk may list a folder symlink as 'name/'), or was listed so."""
        if path.endswith(".md") and path + "/" not in known:
            return False
        return path + "/" in known or os.path.islink(os.path.join(self.root, path))

    def _forget(self, wd: int) -> None:
        folder = self._folders.pop(wd, None)
        if folder is not None and self._wd_of.get(folder) == wd:
            del self._wd_of[folder]

    def _unwatch_folder(self, folder: str) -> None:
        wd = self._wd_of.pop(folder, None)
        self._owners.pop(folder, None)
        if wd is not None and self._folders.get(wd) == folder:  # (a watch another folder shares is kept)
            del self._folders[wd]
            if self._inotify is not None:
                self._inotify.rm_watch(wd)

    def _unwatch_tree(self, prefix: str) -> None:
        inotify = self._inotify
        for folder in [f for f in self._wd_of if f.startswith(prefix)]:
            wd = self._wd_of.pop(folder)
            self._folders.pop(wd, None)
            self._owners.pop(folder, None)
            if inotify is not None:
                inotify.rm_watch(wd)

    def _add(self, folder: str) -> bool:
        """Watch one folder ('' or 'a/b/'); False when it is no longer a folder."""
        assert self._inotify is not None
        try:
            # the store folder may be reached through a symlink (IN_DONT_FOLLOW applies to the last part only:
            # a folder's path is given without its '/', which would make a symlink's target the last part)
            path = os.path.join(self.root, folder[:-1]) if folder else os.path.realpath(self.root)
            wd = self._inotify.add_watch(path, WATCH_MASK)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise _Fallback("the inotify watch limit is reached (sysctl fs.inotify.max_user_watches)") from None
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return False
            raise _Fallback(f"cannot watch {folder or '.'} ({exc.strerror})") from None
        old = self._wd_of.get(folder)
        if old is not None and old != wd:
            self._folders.pop(old, None)
        self._folders[wd] = folder
        self._wd_of[folder] = wd
        self._owners[folder] = self._owner(folder)
        return True

    def _owner(self, folder: str) -> tuple[int, int, int] | None:
        """(mode, uid, gid) of a folder: what decides whether the walk can list it (an mtime set by
        tar, rsync or git moves nothing here)."""
        try:
            st = os.stat(os.path.join(self.root, folder) if folder else self.root)
        except OSError:
            return None
        return (st.st_mode, st.st_uid, st.st_gid)

    def _watch_tree(self, prefix: str, files: set[str]) -> None:
        """Watch ``prefix`` and the folders under it (watch first, then list: nothing falls between);
        add every record file found to ``files``."""
        stack = [prefix]
        while stack:
            folder = stack.pop()
            if not self._add(folder):
                continue
            try:
                with os.scandir(os.path.join(self.root, folder) if folder else self.root) as it:
                    for entry in it:
                        name = entry.name
                        if _skipped(name):
                            continue
                        try:
                            is_dir = entry.is_dir(follow_symlinks=False)
                        except OSError:
                            is_dir = False
                        if is_dir:
                            stack.append(folder + name + "/")
                        elif name.endswith(".md"):
                            files.add(folder + name)
                            if entry.is_symlink():
                                self._symlinks.add(folder + name)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone since it was watched: its parent's event says so
            except PermissionError:
                self._full = True  # the walk decides what an unreadable folder means

    # -- one path, as the walk would list it ------------------------------------------------------
    def _stat(self, path: str) -> Stat | None:
        """(size, mtime_ns) of a record file as ``StatWalk.listing`` lists it, or None if it would not."""
        if _folder_of(path) not in self._wd_of:
            return None  # its folder is gone, or is no longer one the walk enters (a symlink now)
        if os.path.islink(os.path.join(self.root, path)):
            self._symlinks.add(path)  # what it leads to can change without an event here
        else:
            self._symlinks.discard(path)
        return self.walk.stat_path(path)

    # -- a full walk ------------------------------------------------------------------------------
    def _walk_all(self, known: Mapping[str, Stat], forced: set[str]) -> ScanDelta:
        """Watch every folder, then walk the store once; a file listed outside a watched folder means no proof."""
        walked = self._walk_folders(forced)
        listing, forced = flatten(walked.folders), walked.forced
        if listing == known and not forced:
            return ScanDelta({}, [])
        changed = {path: st for path, st in listing.items() if known.get(path) != st or path in forced}
        removed = [path for path in known if path not in listing]
        return ScanDelta(changed, removed)

    def folder_walk(self, known: Mapping[str, int] | None = None) -> FolderWalk | None:
        """The first call's whole walk, by folder, for a scanner that compares folder by folder (see
        ``StatWalk.folder_walk``); None once the watch is in place (``changes`` then says what changed).

        The watches are placed as the walk enters each folder, as ``changes`` would place them: the next
        ``changes`` answers from the events of that walk on.
        """
        with self._lock:
            if self.fallback_reason is not None:
                return self.walk.folder_walk(known)
            if not self._full or self._folders or self._inotify is None or os.getpid() != self._pid:
                return None  # not the first call: changes() drains the events (or restarts after a fork)
            try:
                return self._walk_folders(set(), known)
            except _Fallback as exc:
                self._give_up(str(exc))
            except BaseException:
                self._full = True
                raise
            return self.walk.folder_walk(known)

    def _walk_folders(self, forced: set[str], known: Mapping[str, int] | None = None) -> FolderWalk:
        try:
            st = os.stat(self.root)
            self._root_id = (st.st_dev, st.st_ino)
        except OSError:
            self._root_id = None
        self._unwatch_tree("")  # start afresh: folders moved away keep their old watches otherwise
        if self._inotify is not None:
            self._inotify.read()  # events of the old watches; the walk below supersedes them
        self._symlinks = set()
        # every folder is watched just before the walk lists it: nothing falls between the two
        unwatched: list[str] = []  # folders gone when watched (one made again at once would be listed)

        def enter(folder: str) -> None:
            if self._root_id is None or not self._add(folder):
                unwatched.append(folder)

        def leave(folder: str) -> None:  # entered for a split walk, not reached: watched as the walk would not
            if folder in unwatched:
                unwatched.remove(folder)
            self._unwatch_folder(folder)

        folders = self.walk.listing_by_folder(  # raises as the walk does
            enter=enter, symlinks=self._symlinks, known=known, leave=leave
        )
        self.walks += 1
        self._config_event = True
        if unwatched:  # else every folder listed was watched before it was listed
            for folder, names in folders.items():
                # a folder the walk could not enter, or a folder symlink, is listed as 'b/' in its parent 'a/'
                if names and folder not in self._wd_of:
                    raise _Fallback(
                        f"{folder}{next(iter(names))} is listed by the walk but its folder cannot be watched"
                    )
        self._full = False
        self._unconfirmed = set()
        if self._lost:  # a lost event may have been an edit that kept size and mtime: every file is read and hashed
            self._lost = False
            forced = set(flatten(folders))
        return FolderWalk(folders, forced)


def choose_change_source(
    root: str, change_source: ChangeSource | type | None = None, *, max_files: int = DEFAULT_MAX_FILES
) -> ChangeSource:
    """The change source of a store: the one given (a class is instantiated), else inotify where it is proof."""
    if change_source is None:
        return InotifyWatch(root, max_files=max_files)
    if isinstance(change_source, type):
        made: ChangeSource = change_source(root, max_files=max_files)
        return made
    return change_source


def freshness_mode(source: ChangeSource) -> str:
    """'inotify' or 'walk' for knowtk's sources; a custom source may say its own by a ``freshness_mode`` attribute."""
    found = getattr(source, "freshness_mode", None)
    if isinstance(found, str):  # (a StatWalk that says its own: SettledWalk)
        return found
    return "walk" if isinstance(source, StatWalk) else "custom"
