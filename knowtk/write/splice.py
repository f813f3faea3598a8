"""Splice edits of a record file: only the lines of the keys that change are rewritten.

A round-trip load and dump changes lines nobody asked to change (indentation, quoting, comments,
CRLF, repeated keys, flow maps). Here YAML is parsed only to find where each top-level key sits
and to render the new values; every other line of the frontmatter, the fences and the body are
copied byte for byte, line endings included. The result is parsed again and must give exactly
the mapping asked for, or the edit is refused (``InvalidArgument``) and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from knowtk.errors import InvalidArgument
from knowtk.model.records import FileProblem, load_frontmatter, parse_yaml

__all__ = ["REMOVE", "Parts", "new_file", "render_value", "splice", "split_file"]


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Any = _Remove()
# libyaml when present: 20 times faster on a 2 KB frontmatter, with the same line marks and output
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # a key given as None in an update: take it out


@dataclass(frozen=True)
class Parts:
    """A record file cut into its pieces: ``head + fm_lines + fence + body == data``."""

    head: bytes  # an optional BOM and the opening '---' line, with its line ending
    lines: list[bytes]  # the frontmatter's lines, each with its line ending
    fence: bytes  # the closing '---' line, with its line ending (may lack one at the end of the file)
    body: bytes
    eol: bytes  # the line ending of the opening fence: new lines are written with it


def split_file(data: bytes) -> Parts:
    """Cut a record file into head, frontmatter lines, closing fence and body; InvalidArgument when it has none."""
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    rest = data[len(bom) :]
    lines = rest.splitlines(keepends=True)
    if not lines or lines[0].rstrip(b"\r\n \t") != b"---" or not lines[0].endswith(b"\n"):
        raise InvalidArgument("id", "the record's file has no frontmatter to edit")
    eol = b"\r\n" if lines[0].endswith(b"\r\n") else b"\n"
    for i in range(1, len(lines)):
        if lines[i].rstrip(b"\r\n \t") == b"---" and lines[i].lstrip(b" \t") == lines[i]:
            body = b"".join(lines[i + 1 :])
            return Parts(bom + lines[0], lines[1:i], lines[i], body, eol)
    raise InvalidArgument("id", "the record's frontmatter is not closed; fix the file by hand first")


def render_value(key: str, value: Any, eol: bytes) -> bytes:
    """``key: value`` as YAML lines, with ``eol`` endings: a scalar or a list of scalars on one line (flow
    style, as most stores write tags), anything nested in block style."""
    flat = not isinstance(value, dict | list) or (
        isinstance(value, list) and all(not isinstance(v, dict | list) for v in value)
    )
    if flat:
        text = yaml.dump([value], Dumper=_DUMPER, default_flow_style=True, allow_unicode=True, width=1_000_000)
        text = f"{_key(key)}: {text.strip()[1:-1]}\n"  # the value inside the one-item list's brackets
    else:
        text = yaml.dump(
            {key: value}, Dumper=_DUMPER, default_flow_style=False, sort_keys=False, allow_unicode=True, width=10_000
        )
    return text.replace("\n", "\n" if eol == b"\n" else "\r\n").encode("utf-8")


def _key(key: str) -> str:
    text = yaml.dump(key, Dumper=_DUMPER, allow_unicode=True, width=1_000_000).removesuffix("\n...\n").strip()
    return text


def _key_spans(lines: list[bytes]) -> list[tuple[str, int, int]]:
    """(key, first line, end line) of every top-level key, in file order; trailing comments stay outside."""
    text = b"".join(lines).decode("utf-8")
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise InvalidArgument(
            "id", f"the record's frontmatter is not valid YAML ({exc}); fix it by hand first"
        ) from exc
    if node is None:
        return []
    if not isinstance(node, yaml.MappingNode):
        raise InvalidArgument("id", "the record's frontmatter is not a mapping; fix it by hand first")
    starts = [(str(k.value), k.start_mark.line) for k, _ in node.value]
    spans = []
    for n, (key, start) in enumerate(starts):
        value = node.value[n][1]
        end_mark = value.end_mark
        end = end_mark.line + (1 if end_mark.column > 0 else 0)
        limit = starts[n + 1][1] if n + 1 < len(starts) else len(lines)
        end = min(max(end, start + 1), limit)
        while end > start + 1 and (lines[end - 1].startswith(b"#") or not lines[end - 1].strip()):
            end -= 1  # a comment or blank line before the next key belongs to neither: kept
        spans.append((key, start, end))
    return spans


def splice(data: bytes, changes: Mapping[str, Any], body: str | None = None) -> bytes:
    """``data`` with the top-level keys in ``changes`` set (``REMOVE`` removes one) and, if given, a new body.

    A changed key keeps its place (its first occurrence; repeats of it are removed); a new key is
    added at the end of the frontmatter. Everything else is kept byte for byte.
    """
    parts = split_file(data)
    lines = list(parts.lines)
    spans = _key_spans(lines)
    replace: dict[int, bytes] = {}
    drop: set[int] = set()
    placed: set[str] = set()
    for key, start, end in spans:
        if key not in changes:
            continue
        drop.update(range(start, end))
        if key not in placed and changes[key] is not REMOVE:
            replace[start] = render_value(key, changes[key], parts.eol)
        placed.add(key)
    out: list[bytes] = []
    for i, line in enumerate(lines):
        if i in replace:
            out.append(replace[i])
        elif i not in drop:
            out.append(line)
    if out and not out[-1].endswith(b"\n"):
        out[-1] += parts.eol
    for key, value in changes.items():
        if key not in placed and value is not REMOVE:
            out.append(render_value(key, value, parts.eol))
    new_body = parts.body if body is None else body.encode("utf-8")
    result = parts.head + b"".join(out) + parts.fence + new_body
    _verify(data, result, changes, body)
    return result


def _verify(before: bytes, after: bytes, changes: Mapping[str, Any], body: str | None) -> None:
    """The spliced file must parse to the old mapping with exactly ``changes`` applied (else nothing is written)."""
    old, new = load_frontmatter(before), load_frontmatter(after)
    if isinstance(old, FileProblem):
        raise InvalidArgument("id", f"the record's file cannot be edited: {old.message}")
    if isinstance(new, FileProblem):
        raise InvalidArgument("record", f"the edit would make the file unreadable: {new.message}")
    expected = dict(old[0])
    for key, value in changes.items():
        if value is REMOVE:
            expected.pop(key, None)
        else:
            expected[key] = _as_read(key, value)
    if new[0] != expected:
        wrong = sorted(k for k in expected.keys() | new[0].keys() if expected.get(k) != new[0].get(k))
        raise InvalidArgument(
            "record",
            f"the frontmatter cannot be edited in place without changing {', '.join(wrong)} "
            "(a YAML anchor or alias, or an unusual layout); edit those lines by hand",
        )
    if body is not None and new[1] != body:
        raise InvalidArgument("record.body", "the body cannot be written as given (it must be text after the fence)")


def _as_read(key: str, value: Any) -> Any:
    """``value`` as the scan reads it back (dates stay text, numbers and flags stay typed)."""
    parsed = parse_yaml(render_value(key, value, b"\n").decode("utf-8"))
    if isinstance(parsed, FileProblem) or not isinstance(parsed, dict):
        raise InvalidArgument(f"record.{key}", "cannot be written as YAML")
    return parsed.get(key)


def new_file(fields: Mapping[str, Any], body: str, eol: bytes = b"\n") -> bytes:
    """A new record file: the fields in the order given, then the body."""
    lines = [render_value(k, v, eol) for k, v in fields.items() if v is not None and v is not REMOVE]
    return b"---" + eol + b"".join(lines) + b"---" + eol + body.encode("utf-8")
