"""The plain subset of YAML that ``knowtk.yaml`` and typical frontmatter use, read without PyYAML.

``plain_yaml(text)`` is what ``knowtk.model.records`` loads with PyYAML's safe loader (timestamps left as
text) for a text inside the subset, and None for any other text: PyYAML then reads it (and explains
what is wrong with it). Importing PyYAML costs a new process more than a query of a small store;
a ``knowtk grep`` on a built state parses knowtk.yaml alone.

The subset, every line of it (anything else is outside):

- a mapping at the top, with block mappings and block sequences nested in it by indentation (a
  sequence may sit at its key's indentation); blank lines and comment lines anywhere;
- a key: a plain word (``[A-Za-z_][A-Za-z0-9_.-]*``) that YAML reads as a string, followed by ``:``;
- a value on its key's line, or a sequence item (``- value``): a plain scalar on one line (resolved
  as YAML 1.1 resolves it: null, booleans, decimal integers, simple decimals, otherwise a string;
  other number forms are outside), a quoted scalar on one line (no escapes in double quotes),
  ``[]``/``{}``, or a flow sequence of plain words; an optional comment after it;
- no tab, carriage return, non-printable character, anchor, alias, tag, block scalar, multi-line
  scalar, document marker or directive.

tests/test_plainyaml.py compares it with PyYAML over generated texts and real-world-shaped ones.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["plain_yaml"]

# PyYAML's implicit resolvers (yaml/resolver.py, YAML 1.1) without the timestamp one; a test checks they match.
# The words as sets; the number patterns compiled at the first scalar that may be a number (a new process
# reading knowtk.yaml alone may meet none).
_BOOL = frozenset(
    [
        "yes",
        "Yes",
        "YES",
        "no",
        "No",
        "NO",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
    ]
)
_NULL = frozenset({"~", "null", "Null", "NULL", ""})
_OTHER = frozenset({"<<", "="})  # merge and value: outside the subset
_TRUE = frozenset({"yes", "true", "on"})
_NUMBER_START = frozenset("-+0123456789.")
_FLOAT = r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$"""
_INT = r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+
    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$"""
# the forms read here; any other int or float spelling (octal, hex, 1_000, 1e5, .inf, 1:30) is outside
_DECIMAL = r"[-+]?(?:0|[1-9][0-9]*)"
_SIMPLE_FLOAT = r"[-+]?[0-9]+\.[0-9]+"


@functools.cache
def numbers() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """PyYAML's float and int patterns, and the forms of them read here (decimal and simple float)."""
    return re.compile(_FLOAT, re.X), re.compile(_INT, re.X), re.compile(_DECIMAL), re.compile(_SIMPLE_FLOAT)


# characters above ASCII YAML allows that this reader leaves to PyYAML: the line and paragraph separators
# and the byte-order mark (NEL, the C1 controls, surrogates, U+FFFE and U+FFFF: by range, below)
_ODD = frozenset({0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF})
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*):(?= |$)")
_FLOW_ITEM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./ -]*")
_PLAIN_START = frozenset("-?:,[]{}#&*!|>'\"%@`")
MAX_KEY = 1024  # PyYAML's limit on a simple key's length
MAX_DIGITS = 1000  # a longer integer goes to PyYAML: past 4,300 digits Python refuses it, and PyYAML says so
MAX_NESTING = 64  # deeper texts go to PyYAML (and the frontmatter's own depth rule)


class _Outside(Exception):
    """The text is outside the subset: PyYAML reads it."""


def plain_yaml(text: str) -> dict[str, Any] | None:
    """The mapping PyYAML's safe loader (timestamps as text) reads from ``text``; None when outside the subset."""
    if _has_outside(text):
        return None
    lines = []  # (indentation, the line without it) of every line that is neither blank nor a comment
    for raw in text.split("\n"):
        stripped = raw.lstrip(" ")
        if stripped and not stripped.startswith("#"):
            lines.append((len(raw) - len(stripped), stripped.rstrip(" ")))
    if not lines or lines[0][0] != 0:
        return None
    try:
        mapping, end = _Reader(lines).mapping(0, 0, 0)
    except _Outside:
        return None
    return mapping if end == len(lines) else None


def _has_outside(text: str) -> bool:
    """Whether ``text`` holds a tab, CR, NEL, non-printable character, line separator or byte-order mark.

    By the text's distinct characters: a regular expression of YAML's printable ranges costs a new
    process more to compile (about 20 ms) than this costs a store's scan.
    """
    for ch in set(text):
        o = ord(ch)
        if o < 0x20 and o != 0x0A:
            return True
        if o >= 0x7F and (o < 0xA0 or 0xD800 <= o < 0xE000 or o in _ODD):
            return True
    return False


class _Reader:
    def __init__(self, lines: list[tuple[int, str]]) -> None:
        self.lines = lines

    def mapping(self, i: int, indent: int, depth: int) -> tuple[dict[str, Any], int]:
        """The block mapping whose keys are at ``indent`` from line ``i``; the line after it."""
        if depth > MAX_NESTING:
            raise _Outside
        out: dict[str, Any] = {}
        lines = self.lines
        while i < len(lines) and lines[i][0] == indent:
            found = _KEY.match(lines[i][1])
            if found is None or len(found.group(1)) > MAX_KEY:
                raise _Outside
            key = _resolve(found.group(1))
            if not isinstance(key, str):  # on, null, yes... as a key: PyYAML's reading
                raise _Outside
            rest = lines[i][1][found.end() :].lstrip(" ")
            i += 1
            if rest and not rest.startswith("#"):
                out[key] = _value(rest)
                self._no_continuation(i, indent)
                continue
            nxt = lines[i] if i < len(lines) else None
            if nxt is not None and nxt[0] >= indent and _is_item(nxt[1]):
                out[key], i = self.sequence(i, nxt[0])
            elif nxt is not None and nxt[0] > indent:
                out[key], i = self.mapping(i, nxt[0], depth + 1)
            else:
                out[key] = None
        self._no_continuation(i, indent)
        return out, i

    def sequence(self, i: int, indent: int) -> tuple[list[Any], int]:
        """The block sequence of scalars whose dashes are at ``indent`` from line ``i``; the line after it."""
        out: list[Any] = []
        lines = self.lines
        while i < len(lines) and lines[i][0] == indent and _is_item(lines[i][1]):
            rest = lines[i][1][1:].lstrip(" ")
            if not rest or rest.startswith("#"):  # a null item, or a nested block: PyYAML's
                raise _Outside
            out.append(_value(rest))
            i += 1
            self._no_continuation(i, indent)
        return out, i

    def _no_continuation(self, i: int, indent: int) -> None:
        """A line indented deeper than the block after a value continues it (or nests in it): outside."""
        if i < len(self.lines) and self.lines[i][0] > indent:
            raise _Outside


def _is_item(line: str) -> bool:
    return line == "-" or line.startswith("- ")


def _value(text: str) -> Any:
    """A value on one line (its comment included): a scalar, ``[]``, ``{}`` or a flow sequence of words."""
    first = text[0]
    if first == "'":
        return _single_quoted(text)
    if first == '"':
        close = text.find('"', 1)
        if close < 0 or "\\" in text[:close]:
            raise _Outside
        _only_comment(text[close + 1 :])
        return text[1:close]
    if first == "[":
        return _flow_sequence(text)
    if first == "{":
        close = text.find("}")
        if close < 0 or text[1:close].strip(" "):
            raise _Outside
        _only_comment(text[close + 1 :])
        return {}
    if first in _PLAIN_START and not (first == "-" and len(text) > 1 and text[1] != " "):
        raise _Outside
    comment = text.find(" #")
    plain = (text if comment < 0 else text[:comment]).rstrip(" ")
    if ": " in plain or plain.endswith(":"):  # a mapping where a scalar was expected
        raise _Outside
    return _resolve(plain)


def _single_quoted(text: str) -> str:
    out, i = [], 1
    while True:
        close = text.find("'", i)
        if close < 0:  # continues on the next line
            raise _Outside
        out.append(text[i:close])
        if text.startswith("''", close):
            out.append("'")
            i = close + 2
            continue
        _only_comment(text[close + 1 :])
        return "".join(out)


def _flow_sequence(text: str) -> list[Any]:
    close = text.find("]")
    if close < 0:
        raise _Outside
    _only_comment(text[close + 1 :])
    inner = text[1:close]
    if not inner.strip(" "):
        return []
    items = []
    for part in inner.split(","):
        word = part.strip(" ")
        if not _FLOW_ITEM.fullmatch(word):
            raise _Outside
        items.append(_resolve(word))
    return items


def _only_comment(rest: str) -> None:
    """What follows a closed value: nothing, or a comment after a space."""
    stripped = rest.lstrip(" ")
    if stripped and not (stripped.startswith("#") and stripped != rest):
        raise _Outside


def _resolve(plain: str) -> Any:
    """A plain scalar as PyYAML's safe loader reads it (timestamps as text), within the forms read here."""
    if plain in _BOOL:
        return plain.lower() in _TRUE
    if plain in _NULL:
        return None
    if plain in _OTHER:
        raise _Outside
    if plain[0] in _NUMBER_START:  # every float and int spelling starts so
        float_rx, int_rx, decimal, simple_float = numbers()
        if float_rx.match(plain):
            if not simple_float.fullmatch(plain):
                raise _Outside
            return float(plain)
        if int_rx.match(plain):
            if len(plain) > MAX_DIGITS or not decimal.fullmatch(plain):
                raise _Outside
            return int(plain)
    return plain
