"""The Markdown reading the profiles share: a body's lines with their file line numbers, outside code, headings,
and a heading's text as a reader sees it."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

__all__ = ["first_heading", "headings", "prose_lines", "reader_text", "stem"]

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


_IMAGE = re.compile(r"!\[([^\[\]]*)\]\([^()\s]*(?:\s+\"[^\"]*\")?\)")
_LINK = re.compile(r"\[([^\[\]]*)\](?:\([^()\s]*(?:\s+\"[^\"]*\")?\)|\[[^\[\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^<>\s]+)>")
_CODE = re.compile(r"(`+)(.+?)\1")
_EMPHASIS = re.compile(r"(\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1|(?<!\w)([*_])(?=\S)(.+?)(?<=\S)\3(?!\w)")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!~<>|])")


def reader_text(text: str) -> str:
    """Inline Markdown as a reader sees it: a link or an image as its text, emphasis and code marks dropped.

    ``[Superseded by [ADR-0019](0019-push.md)] Push Metrics`` reads ``[Superseded by ADR-0019] Push Metrics``
    (brackets that make no link stay); ``**Use** `uv` `` reads ``Use uv``.
    """
    codes: list[str] = []

    def keep(match: re.Match[str]) -> str:  # code is literal: set aside before anything else is read
        return keep_escaped(match.group(2).strip())

    def keep_escaped(literal: str) -> str:  # so is an escaped mark (\*)
        codes.append(literal)
        return f"\x00{len(codes) - 1}\x00"

    out = _CODE.sub(keep, text)
    out = _ESCAPED.sub(lambda m: keep_escaped(m.group(1)), out)
    for _ in range(4):  # a link inside a link's text: the inner one first
        changed = _LINK.sub(r"\1", _IMAGE.sub(r"\1", out))
        if changed == out:
            break
        out = changed
    out = _AUTOLINK.sub(r"\1", out)
    for _ in range(3):  # ***both*** and nested emphasis
        changed = _EMPHASIS.sub(lambda m: m.group(2) if m.group(1) else m.group(4), out)
        if changed == out:
            break
        out = changed
    out = re.sub(r"\x00(\d+)\x00", lambda m: codes[int(m.group(1))], out)
    return " ".join(out.split())


def stem(path: str) -> str:
    """The file name without ``.md``."""
    name = posixpath.basename(path)
    return name[:-3] if name.lower().endswith(".md") else name
