"""Files a folder lists before they are written: each is written when a reader first needs its bytes.

A view of the store's past (``knowtk.write.past``) keeps its files in knowtk's state folder. Most of them hold
the bytes the present store has read already, and the past store's state is seeded with what those bytes made
(records, keyword rows): such a file is listed with the stat its seeded scan cache holds but not written, which is
most of what opening a new instant cost (100,000 files at 0.1 to 0.4 ms each). A reader that then needs the bytes
(a record's body, a citation's check, a link's target) finds the file missing: ``written_on_demand`` asks what
registered the folder (``serve_on_demand``) to write it, and the reader opens it again. A folder nobody registered
has no such file: a missing file is missing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["on_demand", "serve_on_demand", "written_on_demand"]

T = TypeVar("T")

_WRITERS: dict[str, Callable[[str], bool]] = {}  # folder (absolute, no trailing separator) -> its writer
_LOCK = threading.Lock()


def serve_on_demand(folder: str, write: Callable[[str], bool] | None) -> None:
    """Register ``write`` (a path inside ``folder``, with '/' -> whether it wrote that file) for ``folder``; None
    drops the folder's writer."""
    with _LOCK:
        for key in {os.path.abspath(folder), os.path.realpath(folder)}:
            if write is None:
                _WRITERS.pop(key, None)
            else:
                _WRITERS[key] = write


def written_on_demand(path: str) -> bool:
    """Whether the missing file at ``path`` was just written by its folder's writer (False: no folder holding it
    is registered, or its writer does not list it, or could not write it)."""
    if not _WRITERS:
        return False
    full = os.path.abspath(path)
    with _LOCK:
        writers = list(_WRITERS.items())
    for folder, write in writers:
        if full.startswith(folder + os.sep):
            return write(full[len(folder) + 1 :].replace(os.sep, "/"))
    return False


def on_demand(call: Callable[[str], T], path: str) -> T:
    """``call(path)`` (an ``os.open``, an ``os.stat``); a missing file its folder writes on demand is written first,
    and ``call`` made again."""
    try:
        return call(path)
    except FileNotFoundError:
        if not written_on_demand(path):
            raise
    return call(path)
