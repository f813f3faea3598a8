"""Citations you can trust: snippets with UTF-16 offsets and file lines, and verified evidence.

Offsets are zero-based UTF-16 code units within the field's text (what a
browser's String indexes); line numbers are one-based lines of the file, the
frontmatter's opening ``---`` being line 1. Evidence is verified by reading
the cited file (inside the store only), checking the lines exist and that the
quote stands in them (whitespace runs compared as one space).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from typing import Any

from knowtk.index.fts_tables import HIGHLIGHT_CLOSE, HIGHLIGHT_OPEN
from knowtk.model.on_demand import on_demand
from knowtk.model.records import Evidence, FileProblem, Record, read_regular
from knowtk.model.shapes import shape

__all__ = [
    "EVIDENCE_MAX_BYTES",
    "LARGE_BODY_BYTES",
    "SNIPPET_UNITS",
    "EvidenceVerifier",
    "citation",
    "field_snippet",
    "opening_excerpt",
    "spans",
]

SNIPPET_UNITS = 480
LARGE_BODY_BYTES = 64 * 1024
CONTEXT_BEFORE = 120
MAX_EVIDENCE = 3
EVIDENCE_MAX_BYTES = 16 * 1024 * 1024  # a cited file is read whole to check its lines: no more than this
STATE_FOLDER = ".knowtk"
_MARKS = re.compile(f"[{HIGHLIGHT_OPEN}{HIGHLIGHT_CLOSE}]")
_SPACE, _WORD = re.compile(r"\s"), re.compile(r"\S")
# read_regular's problem codes as evidence reasons
_REASONS = {"not_regular_file": "not_regular_file", "file_too_large": "file_too_large"}


def utf16_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def spans(highlighted: str, original: str) -> list[tuple[int, int]] | None:
    """Match spans (code point offsets into ``original``) from highlight() output; None if it doesn't line up.

    Only the marks are looked at (found by a regex in C): a close mark with no open one before it is text.
    """
    out: list[tuple[int, int]] = []
    pieces: list[str] = []
    start: int | None = None
    removed = last = 0
    for m in _MARKS.finditer(highlighted):
        i = m.start()
        if m.group() == HIGHLIGHT_OPEN:
            start = i - removed
        elif start is not None:
            out.append((start, i - removed))
            start = None
        else:
            continue  # a close mark with no open one: part of the text
        pieces.append(highlighted[last:i])
        last = i + 1
        removed += 1
    if not removed:
        return out if highlighted == original else None
    pieces.append(highlighted[last:])
    if len(highlighted) - removed != len(original) or "".join(pieces) != original:
        return None
    return out


def _window(text: str, first: tuple[int, int]) -> tuple[int, int]:
    """A window of at most SNIPPET_UNITS UTF-16 units around the first match, cut at word boundaries.

    Whitespace is what ``str.isspace`` says (the regex's ``\\s`` on a str is the same test), found in C.
    """
    start = max(0, first[0] - CONTEXT_BEFORE)
    if start > 0:
        space = _SPACE.search(text, start, first[0])
        start = space.start() + 1 if space is not None else start
    words = _WORD.search(text, start, first[0])  # the first character that is not whitespace
    start = words.start() if words is not None else first[0]
    end = min(len(text), start + SNIPPET_UNITS)
    while utf16_len(text[start:end]) > SNIPPET_UNITS:
        end -= 1
    if end < len(text):
        low = max(first[1], start)
        space = _SPACE.search(text[low:end][::-1]) if low < end else None  # the last whitespace, from the end
        cut = end - 1 - space.start() if space is not None else None
        if cut is not None and cut > first[1]:
            end = cut
    return start, end


def _lines(body_line: int, text: str, start: int, end: int) -> tuple[int, int]:
    first = body_line + text.count("\n", 0, start)
    last = body_line + text.count("\n", 0, max(start, end - 1))
    return first, last


def body_snippet(r: Record, body: str, found: list[tuple[int, int]]) -> dict[str, Any]:
    start, end = _window(body, found[0])
    line_start, line_end = _lines(r.body_line, body, start, end)
    prefix = utf16_len(body[:start])
    return {
        "text": body[start:end],
        "field": "body",
        "start": prefix,
        "end": prefix + utf16_len(body[start:end]),
        "lineStart": line_start,
        "lineEnd": line_end,
        "matchLocated": True,
    }


def opening_excerpt(r: Record, body: str) -> dict[str, Any]:
    """The body's opening, for replacement hits and bodies over 64 KiB: not the match location."""
    end = min(len(body), SNIPPET_UNITS)
    while utf16_len(body[:end]) > SNIPPET_UNITS:
        end -= 1
    if end < len(body):
        cut = body.rfind(" ", 0, end)
        end = cut if cut > SNIPPET_UNITS // 2 else end
    line_start, line_end = _lines(r.body_line, body, 0, end)
    return {
        "text": body[:end],
        "field": "body",
        "start": 0,
        "end": utf16_len(body[:end]),
        "lineStart": line_start,
        "lineEnd": line_end,
        "matchLocated": False,
    }


def field_snippet(field: str, text: str, found: list[tuple[int, int]]) -> dict[str, Any]:
    """A title or aliases snippet: the title, or the one alias (line of the field) holding the first match."""
    line_start = text.rfind("\n", 0, found[0][0]) + 1
    line_end = text.find("\n", found[0][0])
    line_end = len(text) if line_end < 0 else line_end
    start, end = _window(text[line_start:line_end], (found[0][0] - line_start, found[0][1] - line_start))
    start, end = start + line_start, end + line_start
    prefix = utf16_len(text[:start])
    return {
        "text": text[start:end],
        "field": field,
        "start": prefix,
        "end": prefix + utf16_len(text[start:end]),
        "lineStart": None,
        "lineEnd": None,
        "matchLocated": True,
    }


def citation(r: Record, snippet: dict[str, Any] | None) -> dict[str, Any]:
    """What to cite: the record at the searched revision and hash, and the lines the snippet came from."""
    if snippet is not None and snippet["lineStart"] is not None:
        lines = (snippet["lineStart"], snippet["lineEnd"])
    else:
        lines = _field_lines(r)
    return {
        "id": r.id,
        "path": r.path,
        "revision": r.revision,
        "sha256": r.sha256,
        "lineStart": lines[0],
        "lineEnd": lines[1],
    }


def _field_lines(r: Record) -> tuple[int, int]:
    """The lines of a title or alias match: the frontmatter, or the heading a profile took the title from."""
    line = r.derived_lines.get("title")
    if line is not None:
        return line, line
    return 1, max(1, r.body_line - 1)  # (a file without frontmatter: its first line)


@shape
class _File:
    stat: tuple[int, int]
    sha256: str
    lines: list[str]


class EvidenceVerifier:
    """Reads cited files inside the store (never outside it) and checks each locator.

    Only a regular file is opened (a FIFO or device is never waited on or read without end),
    at most ``max_bytes`` of it, and never anything under ``.knowtk/``: knowtk's own state is
    not evidence. Each refusal is the locator's ``reason``.
    """

    def __init__(self, root: str, *, max_bytes: int = EVIDENCE_MAX_BYTES) -> None:
        self.root = os.path.realpath(root)
        self.max_bytes = max_bytes
        self._files: dict[str, _File | None] = {}

    def _load(self, rel: str) -> tuple[_File | None, str | None]:
        if "\0" in rel:
            return None, "path_invalid"
        if os.path.isabs(rel) or rel.startswith("~"):
            return None, "outside_store"
        full = os.path.realpath(os.path.join(self.root, rel))
        if full != self.root and not full.startswith(self.root + os.sep):
            return None, "outside_store"
        if os.path.relpath(full, self.root).split(os.sep)[0] == STATE_FOLDER:
            return None, "state_file"
        try:
            st = on_demand(os.stat, full)  # (a file a view of the past writes when first read)
        except FileNotFoundError:
            return None, "file_missing"
        except OSError:
            return None, "file_unreadable"
        if not stat.S_ISREG(st.st_mode):
            return None, "not_regular_file"
        if st.st_size > self.max_bytes:
            return None, "file_too_large"
        cached = self._files.get(full)
        if cached is not None and cached.stat == (st.st_size, st.st_mtime_ns):
            return cached, None
        data = read_regular(full, self.max_bytes)
        if data is None:
            return None, "file_missing"
        if isinstance(data, FileProblem):
            return None, _REASONS.get(data.code, "file_unreadable")
        text = data.decode("utf-8", errors="replace")
        loaded = _File((st.st_size, st.st_mtime_ns), hashlib.sha256(data).hexdigest(), text.split("\n"))
        self._files[full] = loaded
        return loaded, None

    def verify(self, ev: Evidence) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": ev.path,
            "lineStart": ev.line_start,
            "lineEnd": ev.line_end,
            "quote": ev.quote,
            "verified": False,
            "reason": None,
            "sha256": None,
        }
        loaded, problem = self._load(ev.path)
        if loaded is None:
            out["reason"] = problem
            return out
        out["sha256"] = loaded.sha256
        lines = loaded.lines
        if ev.line_start is not None and (ev.line_end or ev.line_start) > len(lines):
            out["reason"] = "lines_out_of_range"
            return out
        if ev.quote is None or not ev.quote.strip():
            out["reason"] = "no_quote"
            return out
        chosen = lines[ev.line_start - 1 : ev.line_end or ev.line_start] if ev.line_start else lines
        if " ".join(ev.quote.split()) in " ".join(" ".join(chosen).split()):
            out["verified"] = True
        else:
            out["reason"] = "quote_not_found"
        return out

    def all(self, r: Record) -> list[dict[str, Any]]:
        return [self.verify(ev) for ev in r.evidence]

    def for_hit(self, r: Record) -> tuple[list[dict[str, Any]], bool]:
        """At most three verified locators, and whether knowledge_record has more to show."""
        verified = [e for e in self.all(r) if e["verified"]]
        return verified[:MAX_EVIDENCE], len(r.evidence) > len(verified[:MAX_EVIDENCE])
