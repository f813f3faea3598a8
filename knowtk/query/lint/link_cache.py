"""The links of each file content, kept beside the state for the next lint: ``lint-links-v1.json`` and
``lint-pass-v1.json``.

A lint reads every Markdown file for its links; the next one reads only the files whose content changed
since: ``LinkCache`` maps a content's SHA-256 (its first 32 hex digits; the snapshot knows each file's) to
the links ``extract_links`` found in it. ``LastPass`` is what the last lint's link pass saw: the snapshot it
ran on (its fingerprint, which changes with any file of the store), its ignore patterns, how many files it
checked and the links of each file that has some. A lint on that same snapshot with the same patterns reads
only this (small where few files link: a few bytes where none does) and resolves those links again: no
lookup per file, and the content cache is not loaded. The pass holds only while the content cache is the
file it was saved beside (its inode, size and time): a content cache rewritten, damaged or removed since
makes the next lint a whole pass, which writes both again.

Both are caches: a missing, damaged or foreign file is rebuilt, and one that cannot be written (a read-only
state folder) only costs the next lint the reading again.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Collection, Mapping
from typing import Any

from knowtk.model.shapes import shape

__all__ = ["CACHE_FILE", "PASS_FILE", "LastPass", "LinkCache"]

CACHE_FILE = "lint-links-v1.json"
PASS_FILE = "lint-pass-v1.json"
KEY_DIGITS = 32


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _write_json(path: str, data: Any) -> None:
    """Write ``data`` whole or not at all (a temporary file moved over the old one); a failure is let go."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(data, f, separators=(",", ":"))
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


class LinkCache(dict[str, Any]):
    """content key -> its links; ``wiki``: whether wikilinks are extracted too (a store with a vault)."""

    def __init__(self, state_dir: str, *, wiki: bool) -> None:
        super().__init__()
        self.path, self.wiki = os.path.join(state_dir, CACHE_FILE), wiki
        self.loaded = 0
        data = _read_json(self.path)
        files = data.get("files") if isinstance(data, dict) and data.get("wiki") is wiki else None
        if isinstance(files, dict):
            self.update(files)  # (an entry that is not a list is a content not read yet: ``links``)
            self.loaded = len(self)

    @staticmethod
    def key(sha256: str) -> str:
        return sha256[:KEY_DIGITS]

    def links(self, key: str) -> list[list[Any]] | None:
        """The links kept for the content ``key`` (None: none kept, or not as a list)."""
        found = self.get(key)
        return found if isinstance(found, list) else None

    def save(self, current: Collection[str]) -> None:
        """Keep the entries of the contents the store holds now (``current``: their keys), if anything changed."""
        stale = [k for k in self if k not in current]
        for k in stale:
            del self[k]
        if not stale and len(self) == self.loaded:
            return
        _write_json(self.path, {"wiki": self.wiki, "files": self})


def _a_link(link: Any) -> bool:
    """Whether ``link`` has the shape ``extract_links`` gives one: ["m", line, column, target] or
    ["w", line, column, shown, note, sign, anchor]."""
    if not isinstance(link, list) or len(link) != (4 if link[:1] == ["m"] else 7) or link[0] not in ("m", "w"):
        return False
    return isinstance(link[1], int) and isinstance(link[2], int) and all(isinstance(x, str) for x in link[3:])


@shape(frozen=True)
class LastPass:
    """What a lint's link pass saw: the snapshot's fingerprint, the ignore patterns, the wikilink switch, how many
    files it checked, and path -> links (``extract_links``) of each checked file that has links, in path order."""

    snapshot: str
    ignore: tuple[str, ...]
    wiki: bool
    checked: int
    linked: Mapping[str, list[list[Any]]]
    beside: list[int] | None = None  # the content cache's inode, size and time when this was saved (None: none)

    @classmethod
    def load(cls, state_dir: str) -> LastPass | None:
        """The last pass kept in ``state_dir`` (None: none, or not readable as one)."""
        data = _read_json(os.path.join(state_dir, PASS_FILE))
        if not isinstance(data, dict):
            return None
        snapshot, ignore, wiki, checked, linked, beside = (
            data.get(k) for k in ("snapshot", "ignore", "wiki", "checked", "linked", "beside")
        )
        if (
            not isinstance(snapshot, str)
            or not isinstance(ignore, list)
            or not all(isinstance(p, str) for p in ignore)
            or not isinstance(wiki, bool)
            or not isinstance(checked, int)
            or not isinstance(linked, dict)
            or not all(isinstance(v, list) and all(map(_a_link, v)) for v in linked.values())
            or not (beside is None or isinstance(beside, list))
        ):
            return None
        return cls(snapshot, tuple(ignore), wiki, checked, linked, beside)

    def holds(self, state_dir: str, snapshot: str, ignore: tuple[str, ...], *, wiki: bool) -> bool:
        """Whether this pass ran on the snapshot ``snapshot`` (a fingerprint) with these settings, beside the
        content cache ``state_dir`` holds now."""
        return (
            self.snapshot == snapshot
            and self.ignore == ignore
            and self.wiki is wiki
            and self.beside == _identity(os.path.join(state_dir, CACHE_FILE))
        )

    def save(self, state_dir: str) -> None:
        """Keep this pass in ``state_dir``, beside its content cache as it is now (so: saved after it)."""
        beside = _identity(os.path.join(state_dir, CACHE_FILE))
        data = {"snapshot": self.snapshot, "ignore": list(self.ignore), "wiki": self.wiki, "checked": self.checked}
        _write_json(os.path.join(state_dir, PASS_FILE), {**data, "beside": beside, "linked": dict(self.linked)})


def _identity(path: str) -> list[int] | None:
    """A file's inode, size and modification time (None: no such file): changed by any write."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]
