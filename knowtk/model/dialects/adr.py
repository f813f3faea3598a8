"""The ``adr`` profile: Architecture Decision Records as adr-tools, MADR 2, 3 and 4 and log4brains write them.

Where each value comes from (docs/profiles.md has the whole table):

- the status: frontmatter ``status:`` (MADR 3/4; not knowtk's own word beside an ``id``, as ``knowtk adopt`` writes
  it), a ``Status: …`` line (MADR 2, log4brains, bold variants),
  else the lines of a ``## Status`` section (adr-tools);
- the replacement: ``superseded by`` followed by a link (resolved against the file's folder) or an ADR
  number (the same folder); one that resolves to neither is a coverage issue naming the line;
- the date: frontmatter ``date:``, else a ``Date: …`` line; never the file system;
- the number: the file name's leading digits (``0005-use-postgres.md``), which also make the id
  (``FOLDER:0005``), so that a replacement named only by its number resolves without other files.

A file without a number and without any status (an index, a README, a template) is read as ``plain``.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any
from urllib.parse import unquote

from knowtk.model.datevalues import parse_date_value
from knowtk.model.dialects.markdown import first_heading, headings, prose_lines, reader_text, stem
from knowtk.model.dialects.plain import page
from knowtk.model.profile import Derivation, Source, path_id

__all__ = ["adr", "adr_id", "adr_number"]

_FILE_NUMBER = re.compile(r"^(?:adr[-_ ]?)?(\d{1,5})(?=[-_. ]|$)", re.I)
_TITLE_NUMBER = re.compile(r"^(?:ADR[-_ ]?)?\d{1,5}\s*[.:)-]?\s+(?=\S)", re.I)
_FIELD = r"^\s*(?:[*+-]\s+)?(?:\*\*|__)?{name}(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.*?)\s*$"
_STATUS_LINE = re.compile(_FIELD.format(name="status"), re.I)
_DATE_LINE = re.compile(_FIELD.format(name="date"), re.I)
_LIST_MARK = re.compile(r"^\s*(?:[*+-]|\d+[.)])\s+")
_SUPERSEDED_BY = re.compile(r"\b(part(?:ly|ially)\s+)?superseded\s+by\b[\s:]*(.*)$", re.I)
_AMENDED_BY = re.compile(r"\bamended\s+by\b[\s:]*(.*)$", re.I)
_SUPERSEDES = re.compile(r"^\s*(supersedes|amends)\b[\s:]*(.*)$", re.I)
_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?([^)\s>]+)>?[^)]*\)")
_REF_NUMBER = re.compile(r"(?:\bADR[-_ ]?|#|^|\s|\[)(\d{1,5})\b", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z-]*(?:[ \t]+[A-Za-z][A-Za-z-]*){0,2}")  # "accepted", "on hold"
_WORD_END = re.compile(r"\s[-–—]\s|[,;:(\[.!]")  # "Accepted - …", "Accepted, supersedes …", "Accepted (…)"
_DATED_NAME = re.compile(r"^\d{8}[-_]")  # log4brains: 20230214-slug.md


def adr_number(path: str) -> int | None:
    """The ADR number of a file name (``0005-use-postgres.md``: 5), or None (a template has none)."""
    name = stem(path)
    if "template" in name.lower():
        return None
    match = _FILE_NUMBER.match(name)
    return int(match.group(1)) if match else None


def adr_id(path: str) -> str:
    """The id of the ADR at ``path``: its folder's and its number (``docs/adr:0005``), else from the path."""
    number = adr_number(path)
    if number is None:
        return path_id(path)
    folder = posixpath.dirname(path)
    return f"{path_id(folder)}:{number:04d}" if folder else f"{number:04d}"


def adr(src: Source) -> Derivation:
    number = adr_number(src.path)
    statuses = _status_lines(src)
    name = stem(src.path)
    known = number is not None or statuses or _DATED_NAME.match(name) or _has_date(src)
    if "template" in name.lower() or not known:
        return page(src)  # an index, a README, a template: a plain page
    out = page(src, type_="decision", kind="claim")
    out.values["id"] = adr_id(src.path)
    heading = first_heading(src.body, src.body_line)
    if heading is not None:
        text = reader_text(heading[1]) or heading[1]  # the text a reader sees: a link as its words
        out.values["title"] = _TITLE_NUMBER.sub("", text) or text
    _read_status(src, statuses, out)
    _read_date(src, out)
    meta = src.meta or {}
    aliases = _strings(meta.get("aliases"))
    if number is not None:
        aliases += [a for a in (f"ADR-{number}", f"ADR-{number:04d}", f"{number:04d}") if a not in aliases]
        out.own["aliases"] = aliases
        out.fields["adr_number"] = number
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _status_lines(src: Source) -> list[tuple[int, str]]:
    """(file line, text) of the status: the frontmatter's, a ``Status:`` line, or a ``## Status`` section."""
    meta = src.meta or {}
    status = meta.get("status")
    knowtks = status in ("active", "superseded", "withdrawn") and isinstance(meta.get("id"), str)
    if isinstance(status, str) and status.strip() and not knowtks:  # (knowtk's own word: an adopted file)
        return [(src.key_line("status") or 1, status.strip())]
    for number, line in prose_lines(src.body, src.body_line):
        match = _STATUS_LINE.match(line)
        if match and match.group(1):
            return [(number, match.group(1))]
    section = next((n for n, _, text in headings(src.body, src.body_line) if text.strip().lower() == "status"), None)
    if section is None:
        return []
    found: list[tuple[int, str]] = []
    for number, line in prose_lines(src.body, src.body_line):
        if number <= section:
            continue
        if line.lstrip().startswith("#"):
            break
        text = _LIST_MARK.sub("", line).strip().strip("*_").strip()
        if text and not text.startswith("[ ]") and not text.startswith("<!--"):
            found.append((number, text.removeprefix("[x] ").removeprefix("[X] ")))
    return found


def _read_status(src: Source, statuses: list[tuple[int, str]], out: Derivation) -> None:
    """status, superseded_by, fields.adr_status (and its line), the adr/ tag and the related ADRs."""
    word: str | None = None
    related: dict[str, list[str]] = {}
    for number, text in statuses:
        superseded = _SUPERSEDED_BY.search(text)
        amended = _AMENDED_BY.search(text)
        other = _SUPERSEDES.match(text)
        if superseded and not superseded.group(1):
            word = "superseded"
            replacement = _replacement(src.path, superseded.group(2))
            out.lines["status"] = number
            if replacement is None:
                message = f"line {number}: {text.strip()!r} names no replacement that resolves to a file"
                out.issues.append(("replacement_unresolved", message + "; the record stays active"))
            else:
                out.values["status"], out.values["superseded_by"] = "superseded", replacement
                out.lines["status"] = out.lines["superseded_by"] = number
            continue
        if superseded:  # partly superseded: still in force, the other ADR noted
            word = word or "partly-superseded"
            related.setdefault("adr_partly_superseded_by", []).append(_replacement(src.path, superseded.group(2)) or "")
        elif amended:
            related.setdefault("adr_amended_by", []).append(_replacement(src.path, amended.group(1)) or "")
        elif other:
            related.setdefault(f"adr_{other.group(1).lower()}", []).append(_replacement(src.path, other.group(2)) or "")
            continue
        first = _WORD.match(_WORD_END.split(text.strip(), 1)[0].strip())
        if word is None and first is not None and not superseded and not amended:
            word = "-".join(first.group(0).lower().split())
            out.lines.setdefault("status", number)
    out.values.setdefault("status", "active")
    if word == "superseded" and out.values["status"] != "superseded" and not out.issues:
        line = out.lines.get("status")
        message = f"line {line}: the status says superseded but names no replacement; the record stays active"
        out.issues.append(("replacement_unresolved", message))
    for key, ids in related.items():
        out.fields[key] = [i for i in ids if i]
    if word is not None:
        out.fields["adr_status"] = word
        tags = _strings((src.meta or {}).get("tags"))
        out.own["tags"] = [*tags, f"adr/{word}"] if f"adr/{word}" not in tags else tags


def _replacement(path: str, text: str) -> str | None:
    """The id a replacement names: a link to a file in the store, or an ADR number in this folder."""
    link = _LINK.search(text)
    if link is not None:
        target = unquote(link.group(2).split("#", 1)[0].split("?", 1)[0])
        if target and "://" not in target and not target.startswith(("/", "mailto:")):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if not resolved.startswith("../") and resolved != "..":
                return adr_id(resolved if resolved.lower().endswith(".md") else resolved + ".md")
        text = link.group(1)
    number = _REF_NUMBER.search(text)
    if number is None:
        return None
    folder = posixpath.dirname(path)
    value = int(number.group(1))
    return f"{path_id(folder)}:{value:04d}" if folder else f"{value:04d}"


def _has_date(src: Source) -> bool:
    if (src.meta or {}).get("date") is not None:
        return True
    return any(_DATE_LINE.match(text) for _, text in prose_lines(src.body, src.body_line))


def _read_date(src: Source, out: Derivation) -> None:
    """occurred_at from the frontmatter's ``date`` or a ``Date:`` line; an unreadable one is reported."""
    meta = src.meta or {}
    raw, line = meta.get("date"), src.key_line("date")
    if raw is None:
        for number, text in prose_lines(src.body, src.body_line):
            match = _DATE_LINE.match(text)
            if match:
                raw, line = match.group(1).strip("*_` "), number
                break
    if raw is None:
        return
    value = parse_date_value(str(raw).strip())
    if value is None:
        message = f"line {line}: the date {str(raw)!r} is not a real YYYY-MM-DD or a timestamp; no occurred_at"
        out.issues.append(("date_invalid", message))
        return
    out.values["occurred_at"] = str(raw).strip()
    if line is not None:
        out.lines["occurred_at"] = line
