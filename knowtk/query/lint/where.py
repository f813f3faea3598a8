"""The file line a finding names: read from the file, and only for the files that have a finding.

The snapshot knows what is wrong with a record but not where its frontmatter says it; the few files with
findings are read again (a cached read per file and lint run), never written.
"""

from __future__ import annotations

import os
import re

from knowtk.model.records import read_regular

__all__ = ["FileLines", "line_in_message"]

_MAX_BYTES = 16 * 1024 * 1024
_PROFILE_LINE = re.compile(r"\bline (\d+)\b")  # "line 7: ...", "(derived from line 7)"
_YAML_LINE = re.compile(r"\bline (\d+), column \d+")


def line_in_message(code: str, message: str) -> int | None:
    """The file line a coverage issue's message names: a profile says ``line N``; a YAML error counts from the
    frontmatter's first line, which is the file's line 2."""
    if code.startswith("frontmatter_"):
        found = _YAML_LINE.findall(message)
        return int(found[-1]) + 1 if found else None
    match = _PROFILE_LINE.search(message)
    return int(match.group(1)) if match else None


class FileLines:
    """The lines of the store's files, read once each (None: the file cannot be read as text)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._lines: dict[str, list[str] | None] = {}

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            data = read_regular(os.path.join(self.root, path), _MAX_BYTES)
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else None
            self._lines[path] = text.split("\n") if text is not None else None
        return self._lines[path]

    def frontmatter_end(self, path: str) -> int:
        """How many lines the frontmatter block spans from the top (0: none)."""
        lines = self.lines(path) or []
        if not lines or lines[0].lstrip("\ufeff").rstrip("\r \t") != "---":
            return 0
        for number, line in enumerate(lines[1:], start=2):
            if line.rstrip("\r \t") == "---":
                return number
        return len(lines)

    def key_line(self, path: str, key: str) -> int | None:
        """The line where the frontmatter writes ``key`` (a top-level one first, else a nested one)."""
        lines = self.lines(path) or []
        end = self.frontmatter_end(path)
        name = key.rsplit(".", 1)[-1]
        pattern = re.compile(rf"^(\s*)(?:-\s+)?[\"']?{re.escape(name)}[\"']?\s*:")
        nested = None
        for number in range(2, end):
            match = pattern.match(lines[number - 1])
            if match:
                if not match.group(1):
                    return number
                nested = nested or number
        return nested

    def value_line(self, path: str, value: str, *, after: int = 1) -> int | None:
        """The first line of the frontmatter, from line ``after`` on, that holds ``value``."""
        lines = self.lines(path) or []
        end = self.frontmatter_end(path)
        for number in range(after, min(end, len(lines) + 1)):
            if value in lines[number - 1]:
                return number
        return None

    def match_line(self, path: str, pattern: re.Pattern[str]) -> int | None:
        """The first line of the file that ``pattern`` matches (searched, not anchored)."""
        for number, line in enumerate(self.lines(path) or [], start=1):
            if pattern.search(line):
                return number
        return None
