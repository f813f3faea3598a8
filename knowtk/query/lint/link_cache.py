"""The links of each file content, kept beside the state (``lint-links-v1.json``) for the next lint.

A lint reads every Markdown file for its links; the next one reads only the files whose content changed
since: the cache maps a content's SHA-256 (its first 32 hex digits; the snapshot knows each file's) to
the links ``extract_links`` found in it. It is a cache: a missing, damaged or foreign file is rebuilt, and
one that cannot be written (a read-only state folder) only costs the next lint the reading again.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Collection
from typing import Any

__all__ = ["CACHE_FILE", "LinkCache"]

CACHE_FILE = "lint-links-v1.json"
KEY_DIGITS = 32


class LinkCache(dict[str, Any]):
    """content key -> its links; ``wiki``: whether wikilinks are extracted too (a store with a vault)."""

    def __init__(self, state_dir: str, *, wiki: bool) -> None:
        super().__init__()
        self.path, self.wiki = os.path.join(state_dir, CACHE_FILE), wiki
        self.loaded = 0
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return
        files = data.get("files") if isinstance(data, dict) and data.get("wiki") is wiki else None
        if isinstance(files, dict):
            self.update((k, v) for k, v in files.items() if isinstance(v, list))
            self.loaded = len(self)

    @staticmethod
    def key(sha256: str) -> str:
        return sha256[:KEY_DIGITS]

    def save(self, current: Collection[str]) -> None:
        """Keep the entries of the contents the store holds now (``current``: their keys), if anything changed."""
        stale = [k for k in self if k not in current]
        for k in stale:
            del self[k]
        if not stale and len(self) == self.loaded:
            return
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump({"wiki": self.wiki, "files": self}, f, separators=(",", ":"))
            os.replace(temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
