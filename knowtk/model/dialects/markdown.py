"""The Markdown reading the profiles share: a body's lines with their file line numbers, outside code, and headings."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

__all__ = ["first_heading", "headings", "prose_lines", "stem"]

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(body: str, body_line: int) -> Iterator[tuple[int, str]]:
    """(file line, text) of every body line outside fenced code blocks."""
    fence: str | None = None
    for offset, line in enumerate(body.split("\n")):
        line = line.rstrip("\r")
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        if match:
            fence = match.group(1)
            continue
        yield body_line + offset, line


def headings(body: str, body_line: int) -> Iterator[tuple[int, int, str]]:
    """(file line, level, text) of every ATX heading outside code."""
    for number, line in prose_lines(body, body_line):
        match = _HEADING.match(line)
        if match and match.group(2):
            yield number, len(match.group(1)), match.group(2)


def first_heading(body: str, body_line: int, level: int = 1) -> tuple[int, str] | None:
    """(file line, text) of the first heading of this level, or None."""
    for number, found, text in headings(body, body_line):
        if found == level:
            return number, text
    return None


def stem(path: str) -> str:
    """The file name without ``.md``."""
    name = posixpath.basename(path)
    return name[:-3] if name.lower().endswith(".md") else name
