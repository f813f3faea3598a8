"""The image mark: which stored snapshot image's records a keyword projection's rows are exactly (knowtk_meta).

A reconcile that brought the rows to an image's records writes the image's key beside them; any other write of
the rows clears it (triggers on the rows table: ``FtsStorage.create_triggers``), so a mark is proof the engine
takes without reading the rows. A mark may also name the ids where the rows are *unsure*: they may differ from
the image there (a process's own edits since), so the next process compares those ids only (``unsure_of``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Collection

from knowtk.index.fts_tables import FtsTables
from knowtk.state import Contention

__all__ = ["ImageMark", "marked"]


def marked(mark: str, unsure: Collection[str]) -> str:
    """An image mark, with the digest of the ids the rows may differ from it at (``ImageMark.unsure_of``)."""
    if not unsure:
        return mark
    digest = hashlib.sha256("\n".join(sorted(unsure)).encode()).hexdigest()[:20]
    return f"{mark}~{len(unsure)}~{digest}"


class ImageMark:
    """A projection's image mark: ``value``, as loaded or last written (None: no mark)."""

    def __init__(self, tables: FtsTables) -> None:
        self.tables = tables
        # the key of the stored snapshot image whose records the rows are exactly (knowtk.snapshot.stored), or None
        self.value: str | None = None

    @property
    def meta_key(self) -> str:
        return f"{self.tables.key}:image"

    @property
    def unsure_key(self) -> str:
        return f"{self.tables.key}:image:unsure"

    def load(self) -> None:
        """Read the mark as the state holds it (the rows were just loaded)."""
        self.value = self.tables.state.meta(self.meta_key) or None

    def clear(self) -> None:
        """Forget the mark (in the caller's transaction): the rows are not taken on trust."""
        self.tables.state.set_meta(self.meta_key, "")

    def record(self, mark: str, unsure: Collection[str] = ()) -> None:
        """Record that the rows are exactly the records of stored image ``mark`` (they were just compared), but
        at the ids ``unsure``; nothing is written when the mark says so already."""
        if marked(mark, unsure) == self.value:
            return
        tables = self.tables
        try:
            with tables.state.transaction():
                if tables.state.data_version() != tables.loaded_at:
                    return  # another process wrote since the comparison: leave the mark to it
                self.value = marked(mark, unsure)
                self.write(unsure)
        except (sqlite3.Error, Contention):
            self.value = None
            return

    def write(self, unsure: Collection[str]) -> None:
        """Write ``value`` (and the ids it is unsure at) in the caller's transaction."""
        state = self.tables.state
        state.set_meta(self.meta_key, self.value or "")
        if self.value is not None and "~" in self.value:
            state.set_meta(self.unsure_key, json.dumps(sorted(unsure)))

    def unsure_of(self, key: str) -> set[str] | None:
        """The ids at which the rows may differ from stored image ``key``'s records (empty: they are exactly
        its records), or None when the mark names another image or none.

        A process that took the rows as an image's and then changed some (its own edits) marks them
        ``key~count~digest`` and writes the ids it changed beside: the next process then compares those ids
        only, where any other mark would make it compare every row."""
        mark = self.value
        if mark == key:
            return set()
        if mark is None or not mark.startswith(key + "~"):
            return None
        state = self.tables.state
        try:
            with state.reading():
                found = json.loads(state.meta(self.unsure_key) or "null")
        except (sqlite3.Error, ValueError):
            return None
        if not isinstance(found, list) or not all(isinstance(rid, str) for rid in found):
            return None
        return set(found) if marked(key, found) == mark else None
