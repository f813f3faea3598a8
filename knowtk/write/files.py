"""Writing one record file safely: inside the store, never through a symlink, atomically, on the hash it saw.

``target`` checks a path before anything is touched (inside the root, a record's name, not in a
state folder, no symlink on the way). ``publish`` writes: a temporary file beside the target,
fsync, then a compare-and-swap: on Linux the temporary file and the target are exchanged in one
step (``renameat2(RENAME_EXCHANGE)``) and what was swapped out is hashed; if it is not what the
caller saw, the exchange is undone and ``PublicationConflict`` raised, so a file an editor saved
meanwhile is never lost. Elsewhere the hash is re-checked just before ``os.replace``. Then the
folder is fsynced. ``WriteLock`` orders knowtk's writers (threads and processes) on one store.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import hashlib
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from knowtk.errors import InvalidArgument, PublicationConflict, StoreUnavailable

try:  # POSIX; Windows locks a byte of the lock file instead (msvcrt)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
from knowtk.model.records import FileProblem, read_regular

__all__ = ["WriteLock", "check_writable", "current", "publish", "sha256_of", "target"]

MAX_BYTES = 64 * 2**20
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def target(root: str, rel: str, forbidden: list[str]) -> str:
    """The absolute path of record file ``rel``; InvalidArgument unless it is a safe place for a record."""
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel or rel.startswith("/"):
        raise InvalidArgument("path", f"{rel!r} is not a relative path inside the store")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise InvalidArgument("path", f"{rel!r} is not a relative path inside the store (no '.', '..' or '//')")
    if any(p.startswith((".", "_")) for p in parts):
        raise InvalidArgument("path", f"{rel!r}: a name starting with '.' or '_' is never a record")
    if not rel.endswith(".md"):
        raise InvalidArgument("path", f"{rel!r}: a record file ends with .md")
    full = os.path.join(root, *parts)
    for place in forbidden:
        if full == place or full.startswith(place.rstrip(os.sep) + os.sep):
            raise InvalidArgument("path", f"{rel!r} lies in knowtk's state folder; records are never written there")
    walk = root
    for part in parts:
        walk = os.path.join(walk, part)
        try:
            st = os.lstat(walk)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(st.st_mode):
            raise InvalidArgument("path", f"{rel!r} goes through a symlink ({walk}); knowtk never writes through one")
        if walk != full and not stat.S_ISDIR(st.st_mode):
            raise InvalidArgument("path", f"{rel!r}: {walk} is not a folder")
        if walk == full and not stat.S_ISREG(st.st_mode):
            raise InvalidArgument("path", f"{rel!r} is not a regular file")
    return full


def check_writable(root: str, paths: list[str]) -> None:
    """StoreUnavailable, before anything is touched, when the store or a target's folder cannot be written."""
    for path in [root, *paths]:
        folder = path if path == root else os.path.dirname(path)
        while not os.path.isdir(folder) and folder != root:
            folder = os.path.dirname(folder)
        try:
            readonly = hasattr(os, "statvfs") and bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        except OSError:
            readonly = False
        if readonly:
            raise StoreUnavailable(root, f"the store is on a read-only file system ({folder}); nothing was written")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise StoreUnavailable(root, f"this process may not write into {folder}; nothing was written")
        if path != root and os.path.exists(path) and not os.access(path, os.W_OK):
            raise StoreUnavailable(root, f"this process may not write {path}; nothing was written")


def current(path: str) -> tuple[bytes | None, str | None]:
    """(bytes, sha256) of the file now, (None, None) when there is none; never follows a symlink."""
    data = read_regular(path, MAX_BYTES)
    if data is None:
        return None, None
    if isinstance(data, FileProblem):
        raise InvalidArgument("path", f"{path}: {data.message}")
    return data, sha256_of(data)


@functools.cache
def _exchange_fn() -> object | None:
    """renameat2, found on the first write (ctypes.util's search runs ldconfig: never at import)."""
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return None
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one step; False when the system cannot (then the caller falls back)."""
    exchange = _exchange_fn()
    if exchange is None:
        return False
    rc = exchange(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)  # type: ignore[operator]
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _write_temp(path: str, data: bytes) -> str:
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.knowtk-{os.getpid()}-{threading.get_ident()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _fsync_folder(folder: str) -> None:
    if os.name == "nt":  # a folder cannot be opened for fsync there; NTFS journals the rename itself
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(path: str, data: bytes | None, expected: str | None, *, shown: str) -> None:
    """Put ``data`` at ``path`` (None: remove the file) if the file there has sha256 ``expected`` (None: no file).

    Raises PublicationConflict (naming ``shown`` and both hashes) and leaves the file as found otherwise.
    """
    folder = os.path.dirname(path)
    if data is None:
        _, sha = current(path)
        if sha != expected:
            raise PublicationConflict(shown, expected, sha)
        os.unlink(path)
        _fsync_folder(folder)
        return
    os.makedirs(folder, exist_ok=True)
    tmp = _write_temp(path, data)
    try:
        if expected is None:
            try:
                os.link(tmp, path)  # fails if a file appeared: never overwrite one the caller did not see
            except FileExistsError:
                raise PublicationConflict(shown, None, current(path)[1]) from None
        elif _exchange(tmp, path):
            _, swapped = current(tmp)  # what was at the path the instant it was replaced
            if swapped != expected:
                _exchange(tmp, path)  # put it back: the other writer's file is kept whole
                raise PublicationConflict(shown, expected, swapped)
        else:
            _, sha = current(path)
            if sha != expected:
                raise PublicationConflict(shown, expected, sha)
            os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    _fsync_folder(folder)


class WriteLock:
    """One knowtk writer at a time on a store: a thread lock and ``flock`` on ``write.lock`` in the state folder."""

    _threads: ClassVar[dict[str, threading.Lock]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, folder: str) -> None:
        self.path = os.path.join(folder, "write.lock")
        with WriteLock._guard:
            self.thread_lock = WriteLock._threads.setdefault(os.path.abspath(self.path), threading.Lock())

    @contextmanager
    def held(self) -> Iterator[None]:
        with self.thread_lock:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            except OSError as exc:
                raise StoreUnavailable(self.path, f"cannot open the write lock ({exc.strerror})") from exc
            try:
                _lock(fd)
                yield
            finally:
                os.close(fd)  # releases the lock


def _lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    import msvcrt  # pragma: no cover - Windows

    while True:  # pragma: no cover - Windows: LK_LOCK gives up after ten seconds; a writer may take longer
        try:
            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
            return
        except OSError:
            continue
