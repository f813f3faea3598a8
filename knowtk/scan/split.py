"""A large store's walk in two processes: the folders the last walk found listed half here, half in a fork.

A walk's cost is one ``stat`` per file, and the system call, not Python, is most of it: threads do not
overlap those calls, a second process does. When the last walk
found enough files (``SPLIT_MIN_FILES``) and the process may fork (a second CPU, no thread but this
one: a child of a threaded process may inherit a lock held for ever), a child lists about half of the
folders the last walk found while this process lists the others, each folder on its own; the child
sends its listings back through a pipe (``marshal``) and exits without running any clean-up.

The answer is put together as the one-process walk makes it (``StatWalk.listing_by_folder``): from
the store folder down, each folder taken from its own listing where one was made, listed here where
none was (a folder new since the last walk, or the child's share when the child failed), in the same
order; a folder listed but no longer reached (its parent gone or skipped) is left out. Nothing here
changes what is listed: only who lists it.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["SPLIT_MIN_FILES", "Listed", "list_in_two", "may_split"]

SPLIT_MIN_FILES = 20_000  # a smaller store walks in ~0.1 s here: not worth a second process

# one folder listed alone: ({folder or its parent: {name: stat}}, sub-folders in listing order,
# symlinked *.md paths, how many keys it added): what StatWalk._list_folder writes into a walk
Listed = tuple[dict[str, dict[str, Any]], list[str], list[str], int]


def may_split(known: Mapping[str, int]) -> bool:
    """Whether a walk of the folders ``known`` (folder -> files the last walk found) is worth a second process."""
    if sum(known.values()) < SPLIT_MIN_FILES or not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus > 1


def shares(known: Mapping[str, int]) -> tuple[list[str], list[str]]:
    """(this process's folders, the child's): the files split about evenly, the store folder kept here.

    The child is given a little more: this process also puts the answer together."""
    mine: list[str] = []
    theirs: list[str] = []
    here = there = 0
    for folder, count in sorted(known.items(), key=lambda item: -item[1]):
        if folder and there * 0.9 <= here:
            theirs.append(folder)
            there += count
        else:
            mine.append(folder)
            here += count
    return mine, theirs


def list_in_two(list_one: Callable[[str], Listed], known: Mapping[str, int]) -> dict[str, Listed]:
    """folder -> its listing, for the folders of ``known``: half listed by a forked child.

    A folder whose listing is missing from the answer (the fork or the child failed) is listed by the
    caller, as a folder new since the last walk is."""
    mine, theirs = shares(known)
    try:
        read, write = os.pipe()
    except OSError:
        return {}
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return {}
    if pid == 0:  # the child: list, send, exit (no atexit, no buffered output flushed twice)
        code = 1
        try:
            os.close(read)
            _send(write, marshal.dumps({folder: list_one(folder) for folder in theirs}))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    received: dict[str, Listed] = {}
    try:
        listed = {folder: list_one(folder) for folder in mine}
        data = _received(read)
        _, status = os.waitpid(pid, 0)
        pid = 0
        if status == 0:
            with contextlib.suppress(ValueError, EOFError, TypeError):
                received = marshal.loads(data)  # (written by this process's own fork)
    finally:
        os.close(read)
        if pid:  # this process failed part way (an exception, an interrupt): the child is not left behind
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
                os.waitpid(pid, 0)
    if isinstance(received, dict):
        listed.update((folder, received[folder]) for folder in theirs if _well_formed(received.get(folder)))
    return listed


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


def _received(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _well_formed(listed: object) -> bool:
    return (
        isinstance(listed, tuple)
        and len(listed) == 4
        and isinstance(listed[0], dict)
        and isinstance(listed[1], list)
        and isinstance(listed[2], list)
        and type(listed[3]) is int
    )
