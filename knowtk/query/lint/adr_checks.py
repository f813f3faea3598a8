"""What only ADR folders write: both sides of a supersession, status words, numbers and titles.

adr-tools writes a supersession on both records ("Supersedes [5. …](0005-….md)" in the new ADR, "Superseded
by [7. …](0007-….md)" in the old); MADR and log4brains often write only the old side. So the new side is
required only in a folder where some ADR writes a "Supersedes" line; the old side is checked everywhere,
since a record that another one supersedes but that still says ``Accepted`` misleads every reader.
Each finding is reported on the file to fix.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterator

from knowtk.model.dialects.markdown import headings, stem
from knowtk.model.profile import ProfileMap
from knowtk.model.records import Record
from knowtk.query.lint.rules import Finding
from knowtk.query.lint.store_checks import Make, adr_folders, superseded_line
from knowtk.query.lint.where import FileLines
from knowtk.snapshot.model import Snapshot

__all__ = ["adr_findings", "adr_records"]

_SUPERSEDES_LINE = re.compile(r"^\s*(?:[*+-]\s+)?(?:\*\*|__)?supersedes\b", re.I)
# status words that say a decision no longer holds: anything else (accepted, approved, proposed...) says it does
_NOT_IN_FORCE = frozenset(
    {"superseded", "deprecated", "rejected", "withdrawn", "obsolete", "retired", "replaced", "abandoned", "declined"}
)
_ADR_SECTIONS = frozenset({"context", "decision", "consequences", "status", "decision outcome", "considered options"})
_INDEX_NAMES = frozenset({"readme", "index", "toc", "summary", "_sidebar", "adr-log"})


def adr_records(snap: Snapshot, profiles: ProfileMap) -> list[Record]:
    """The records the ``adr`` profile read as ADRs, in path order (none when no folder is read as ADRs)."""
    if adr_folders(profiles) is None:
        return []
    assert snap.index is not None
    out = []
    for path in sorted(snap.paths):
        rid = snap.index.id_at.get(path) if profiles.for_path(path) == "adr" else None
        r = snap.records.get(rid) if rid is not None else None
        if r is not None:
            out.append(r)
    return out


def adr_findings(snap: Snapshot, records: list[Record], where: FileLines, make: Make) -> Iterator[Finding]:
    decisions = {r.id: r for r in records if r.profile == "adr" and r.type == "decision"}
    yield from _both_sides(snap, decisions, where, make)
    yield from _unread(records, decisions, where, make)


def _supersedes(r: Record) -> list[str]:
    named = r.fields.get("adr_supersedes")
    return [x for x in named if isinstance(x, str) and x] if isinstance(named, list) else []


def _status_line(r: Record, where: FileLines) -> int | None:
    return r.derived_lines.get("status") or where.key_line(r.path, "status")


def _both_sides(snap: Snapshot, decisions: dict[str, Record], where: FileLines, make: Make) -> Iterator[Finding]:
    writes_new_side = {posixpath.dirname(r.path) for r in decisions.values() if _supersedes(r)}
    for new in decisions.values():
        for old_id in _supersedes(new):
            old = snap.records.get(old_id)
            line = where.match_line(new.path, _SUPERSEDES_LINE)
            if old is None:
                message = f"{new.id} says it supersedes {old_id}, which is not a record in the store"
                yield make("missing-supersession-target", new.path, line, message, new.id)
            elif old.superseded_by != new.id:
                yield _old_side(old, new, where, make)
    for old in decisions.values():
        replacement = decisions.get(old.superseded_by or "")
        if replacement is None or posixpath.dirname(replacement.path) not in writes_new_side:
            continue
        if old.id in _supersedes(replacement):
            continue
        rid = replacement.id
        message = f"{rid} does not say it supersedes {old.id}, which says it is superseded by {rid} ({old.path})"
        yield make("one-way-supersession", replacement.path, _status_line(replacement, where), message, rid)


def _old_side(old: Record, new: Record, where: FileLines, make: Make) -> Finding:
    """The old ADR does not name the one that says it supersedes it: a stale status, or a one-way supersession."""
    word = str(old.fields.get("adr_status") or "")
    said = f"says {word!r}" if word else "has no status"
    if old.superseded_by:
        message = f"{old.id} says it is superseded by {old.superseded_by}, but {new.id} ({new.path}) supersedes it"
        return make("one-way-supersession", old.path, superseded_line(old, where), message, old.id)
    if word and word not in _NOT_IN_FORCE:
        message = f"{old.id} {said}, but {new.id} ({new.path}) supersedes it: its status should say superseded by it"
        return make("stale-status", old.path, _status_line(old, where), message, old.id)
    message = f"{old.id} {said} and does not say it is superseded by {new.id} ({new.path}), which supersedes it"
    return make("one-way-supersession", old.path, _status_line(old, where) or 1, message, old.id)


def _unread(records: list[Record], decisions: dict[str, Record], where: FileLines, make: Make) -> Iterator[Finding]:
    """ADRs without a title heading; files with ADR sections that are read as plain pages (no number)."""
    folders: dict[str, int] = defaultdict(int)
    for r in decisions.values():
        folders[posixpath.dirname(r.path)] += 1
        if "title" not in r.derived_lines and not r.written.get("title"):
            message = f"{r.id} has no title heading ('# 4. Title'): its title is its file name"
            yield make("unread-adr", r.path, 1, message, r.id)
    for r in records:
        name = stem(r.path).lower()
        if r.id in decisions or not folders.get(posixpath.dirname(r.path)) or name in _INDEX_NAMES:
            continue
        if "template" in name:
            continue
        sections = _sections(r.path, where)
        if "decision" in sections and len(sections & _ADR_SECTIONS) >= 2:
            shown = ", ".join(sorted(sections & _ADR_SECTIONS))
            message = (
                f"{r.path} has ADR sections ({shown}) but is read as a plain page: its file name has no ADR number "
                "(0001-title.md)"
            )
            yield make("unread-adr", r.path, 1, message, r.id)


def _sections(path: str, where: FileLines) -> set[str]:
    lines = where.lines(path) or []
    start = where.frontmatter_end(path)
    body = "\n".join(lines[start:])
    return {text.strip().strip("*_").lower() for _, level, text in headings(body, start + 1) if level >= 2}
