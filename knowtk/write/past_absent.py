"""The files of a kept past folder that are listed but not written yet, each written from Git when first read.

A past's files that the present store has read with the same bytes need not be written for the past store to
answer: its state, seeded from the present's (``knowtk.write.past_seed``), holds what they make. Writing them was
most of what a new instant cost (100,000 files at 0.1 to 0.4 ms each on a common disk), so ``knowtk.write.past``
lists them in the folder itself (``ABSENT_FILE``: renamed into place with the files, so list and folder always
go together), and the past store's walk lists them with the stat its scan cache holds (``SettledWalk``'s
``absent``). A reader that needs the bytes of one (a record's body, a citation's check, a link's target, a file
the scan must read again) finds it missing and asks ``AbsentFiles.write`` (``knowtk.model.on_demand``), which
writes it from Git's objects through one ``git cat-file --batch`` process kept while a view of the folder is open,
with that stat.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from typing import IO

from knowtk.model.on_demand import serve_on_demand

__all__ = ["ABSENT_FILE", "AbsentFiles", "absent_files", "list_absent", "read_answer", "write_new"]

ABSENT_FILE = ".knowtk/absent"  # in a kept past folder (a name the walk skips): the files not written yet
ABSENT_HEAD = "knowtk absent files 1\n"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)

Absent = dict[str, tuple[str, int, int]]  # path -> (blob, size, mtime_ns)
_SERVING: dict[str, tuple[AbsentFiles, int]] = {}  # folder -> the writer serving it here, and its open views
_SERVING_LOCK = threading.Lock()


def list_absent(dest: str, absent: Absent) -> None:
    """Keep the list of the files left unwritten inside the folder ``dest`` itself: ``BLOB SIZE MTIME_NS PATH``
    each, ended by a NUL (no path holds one; a JSON list of 100k files took three times as long to read)."""
    os.makedirs(os.path.join(dest, os.path.dirname(ABSENT_FILE)), exist_ok=True)
    text = "".join(f"{blob} {size} {mtime} {path}\0" for path, (blob, size, mtime) in absent.items())
    write_new(os.path.join(dest, ABSENT_FILE), (ABSENT_HEAD + text).encode())


def absent_files(folder: str) -> Absent:
    """A kept past folder's files not written yet: path -> (blob, size, mtime_ns); {} when it lists none.
    ValueError when the list is there but cannot be read (the folder then cannot be told from Git's tree: a view
    refuses it, ``knowtk check`` removes it and it is written again when asked)."""
    try:
        with open(os.path.join(folder, ABSENT_FILE), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ValueError(f"cannot read {ABSENT_FILE}: {exc.strerror}") from exc
    text = data.decode("utf-8", "replace")
    if not text.startswith(ABSENT_HEAD) or (len(text) > len(ABSENT_HEAD) and not text.endswith("\0")):
        raise ValueError(f"{ABSENT_FILE} is not a list of files")
    found: Absent = {}
    for item in text[len(ABSENT_HEAD) : -1].split("\0") if len(text) > len(ABSENT_HEAD) else ():
        blob, size, mtime, path = item.split(" ", 3)  # (ValueError: not four fields, or no numbers)
        found[path] = (blob, int(size), int(mtime))
    return found


class AbsentFiles:
    """The files a kept past folder lists but has not written: each written from Git's objects when a reader first
    needs its bytes, with the stat the past's scan cache holds (the walk listed it with that stat)."""

    def __init__(self, git: str, top: str, env: dict[str, str], folder: str, absent: Absent) -> None:
        self.git, self.top, self.env, self.folder, self.absent = git, top, env, folder, absent
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = os.getpid()  # (a forked parse worker starts its own process: the pipes are its parent's)

    @classmethod
    def serving(cls, git: str, top: str, env: dict[str, str], folder: str, absent: Absent) -> AbsentFiles:
        """The writer of the folder's files on demand in this process: the one another open view of it holds, else a
        new one, registered (``knowtk.model.on_demand``); each view ``release``s it when it closes."""
        with _SERVING_LOCK:
            held = _SERVING.get(folder)
            if held is not None:
                held[0].absent.update(absent)  # (the same tree: the same blob at each path)
                _SERVING[folder] = (held[0], held[1] + 1)
                return held[0]
            writer = cls(git, top, env, folder, absent)
            _SERVING[folder] = (writer, 1)
            serve_on_demand(folder, writer.write)
            return writer

    def write(self, path: str) -> bool:
        """Write the file at ``path`` (inside the folder, with '/'); False when it lists no such file or Git lacks
        its bytes (the reader then finds it missing, as it is)."""
        found = self.absent.get(path)
        if found is None:
            return False
        blob, size, mtime_ns = found
        data = self._read(blob)
        if data is None or len(data) != size:
            return False
        full = os.path.join(self.folder, *path.split("/"))
        writing = f"{full}.{os.getpid()}.{threading.get_ident()}.writing"  # (another reader may write it too)
        try:
            write_new(writing, data)
            os.utime(writing, ns=(mtime_ns, mtime_ns))
            os.replace(writing, full)
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(writing)
            return False
        return True

    def _read(self, blob: str) -> bytes | None:
        """A blob's bytes from the kept ``git cat-file --batch`` (a record's body after another: ~0.1 ms each,
        where a process per file cost ~5 ms); None when Git lacks it or cannot answer."""
        with self._lock:
            if self._pid != os.getpid():
                self._proc, self._pid = None, os.getpid()
            for _ in range(2):  # (a process that died since is started again once)
                proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
                if proc is None:
                    return None
                assert proc.stdin is not None and proc.stdout is not None
                try:
                    proc.stdin.write(f"{blob}\n".encode())
                    proc.stdin.flush()
                    answer = read_answer(proc.stdout)
                    if answer is None:
                        raise ValueError("git cat-file ended")
                    return answer[1] if answer[0] == blob else None
                except (OSError, ValueError):
                    self._stop()
            return None

    def _start(self) -> subprocess.Popen[bytes] | None:
        try:
            self._proc = subprocess.Popen(
                [self.git, "-C", self.top, "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **self.env},
            )
        except OSError:
            self._proc = None
        return self._proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()

    def close(self) -> None:
        """End the kept ``git cat-file`` process (it ends by itself with this process, its input then closed)."""
        with self._lock:
            self._stop()

    def release(self) -> None:
        """A view of the folder closed: the last one to close stops the serving and ends the process."""
        with _SERVING_LOCK:
            held = _SERVING.get(self.folder)
            if held is None or held[0] is not self:
                return
            if held[1] > 1:
                _SERVING[self.folder] = (self, held[1] - 1)
                return
            del _SERVING[self.folder]
            serve_on_demand(self.folder, None)
        self.close()


def read_answer(out: IO[bytes]) -> tuple[str, bytes | None] | None:
    """One answer of ``git cat-file --batch`` (``SHA TYPE SIZE\\nBYTES\\n``, or ``SHA missing``): the object and its
    bytes (None: Git lacks it); None when Git answers no more; ValueError when it stopped midway."""
    head = out.readline()
    if not head:
        return None
    parts = head.split()
    if len(parts) != 3:
        return (parts[0].decode("ascii", "replace") if parts else ""), None
    size = int(parts[2])
    data = out.read(size)
    if len(data) != size or out.read(1) != b"\n":
        raise ValueError("git cat-file stopped midway")
    return parts[0].decode("ascii", "replace"), data


def write_new(full: str, data: bytes) -> None:
    """A file of ``data`` at ``full``, written by the system calls alone: a past of 100k files writes 100k of them,
    and the buffered file object Python's ``open`` makes for each cost a tenth of the whole."""
    fd = os.open(full, _CREATE, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
