"""The findings the snapshot already knows: its coverage issues, its chains, its dependencies, its dates.

Nothing here parses the store again: the coverage issues, chain ends and unavailable records are the
snapshot's; a record is built only where a finding names it, and a file is read only for the line of
a finding (``where.FileLines``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from knowtk.model.dialects.adr import adr_number
from knowtk.model.profile import ProfileMap
from knowtk.model.records import Issue, Record
from knowtk.query.lint.rules import RULE_OF_CODE, Finding
from knowtk.query.lint.where import FileLines, line_in_message
from knowtk.snapshot.model import DEPENDENCY_UNAVAILABLE, WITHDRAWN, Snapshot

__all__ = ["adr_folders", "chain_findings", "coverage_findings", "superseded_line"]

Make = Callable[..., Finding]  # (rule, path, line, message, id) -> a Finding at the rule's severity

# the frontmatter key whose line an issue names, by its code (date_invalid, field_invalid: the message's first word)
_KEY_OF_CODE = {
    "supersession_target_missing": "superseded_by",
    "supersession_cycle": "superseded_by",
    "superseded_by_missing": "status",
    "replacement_unresolved": "status",
    "stale_revision": "status",
    "stale_withdrawn": "status",
    "id_duplicate": "id",
    "id_invalid": "id",
    "kind_invalid": "kind",
    "status_invalid": "status",
    "revision_invalid": "revision",
    "evidence_invalid": "evidence",
}
_FIRST_WORD = re.compile(r"^([A-Za-z_][\w.]*)\b")
_NEEDS = re.compile(r" needs '(.*)', which ")
_FILE_LEVEL = frozenset({"frontmatter_missing", "frontmatter_unclosed", "frontmatter_not_mapping", "id_missing"})


def coverage_findings(
    snap: Snapshot, profiles: ProfileMap, where: FileLines, make: Make, wanted: Callable[[str, str], bool]
) -> Iterator[Finding]:
    """One finding per coverage issue, at the line the issue's file writes it (``wanted(rule, path)``: the
    others are left out before their file is read)."""
    for issue in snap.issues:
        rule = RULE_OF_CODE.get(issue.code, "coverage-issue")
        path = issue.path or "knowtk.yaml"
        message = issue.message
        if issue.code == "id_duplicate" and profiles.for_path(path) == "adr" and adr_number(path) is not None:
            rule = "duplicate-adr-number"
            message = f"ADR number {adr_number(path)} is used by several files: {message.partition(': ')[2]}"
        elif rule == "coverage-issue":
            message = f"{issue.code}: {message}"
        if not wanted(rule, path):
            continue
        yield make(rule, path, _issue_line(snap, issue, path, where), message, issue.id)


def _issue_line(snap: Snapshot, issue: Issue, path: str, where: FileLines) -> int | None:
    if issue.path is None or issue.code == "config_invalid" or RULE_OF_CODE.get(issue.code) == "unreadable-file":
        return None
    named = line_in_message(issue.code, issue.message)
    if named is not None:
        return named
    key = _KEY_OF_CODE.get(issue.code)
    if key is None and issue.code in ("date_invalid", "field_invalid"):
        match = _FIRST_WORD.match(issue.message)
        key = match.group(1) if match else None
    if key is not None:
        return where.key_line(path, key) or 1
    needs = _NEEDS.search(issue.message) if issue.code == "dependency_missing" else None
    if needs is not None:
        return _reference_line(snap.records.get(issue.id or ""), needs.group(1), where) or 1
    return 1 if issue.code in _FILE_LEVEL or issue.code.startswith("frontmatter_") else None


_REFERENCE_KEYS = ("depends_on", "source", "from", "to", "owner", "entities")


def _reference_line(r: Record | None, ref: str, where: FileLines) -> int | None:
    """The line where a record's frontmatter names ``ref``: under the key that holds it (a list may span lines)."""
    if r is None:
        return None
    held = {"source": (r.source,), "from": (r.from_id,), "to": (r.to_id,), "owner": (r.owner,)}
    for key in _REFERENCE_KEYS:
        if ref in held.get(key, getattr(r, key, ())):
            start = where.key_line(r.path, key)
            return where.value_line(r.path, ref, after=start) if start is not None else None
    return where.value_line(r.path, ref)


def superseded_line(r: Record, where: FileLines) -> int | None:
    """The line that says ``r`` is superseded: the line its profile read it from, else its frontmatter key."""
    return r.derived_lines.get("superseded_by") or where.key_line(r.path, "superseded_by")


def chain_findings(snap: Snapshot, profiles: ProfileMap, where: FileLines, make: Make) -> Iterator[Finding]:
    """Chains that end withdrawn, dependencies on withdrawn records, replacements dated before what they replace.

    A record is built only where it may make a finding: the chain ends, successors and availability are the
    snapshot's tables, and a record's folder (its facets) says whether the ``adr`` profile read it.
    """
    records = snap.records
    adr = _AdrPairs(snap, profiles)
    for rid, end in sorted(snap.chain_ends.items()):
        if end.reason == "withdrawn" and len(end.via) == 1:  # reported where the chain steps onto the withdrawn one
            r = records.get(rid)
            if r is not None:
                message = (
                    f"{rid} is superseded by {end.via[0]}, which is withdrawn: the chain leads to no record in force"
                )
                yield make("chain-ends-withdrawn", r.path, superseded_line(r, where), message, rid)
        # ADRs only: an ADR's date is its decision's, where a record's occurred_at says when what it records
        # happened, and an older proposal may replace a newer one (PEP 621 replaced PEP 631); in a cycle one
        # side always predates the other
        pair = adr.pair(rid) if end.reason != "cycle" else None
        if pair is not None:
            yield from _predates(*pair, where, make)
    unavailable = snap.unavailable_inactive
    for rid, (reason, detail) in sorted(unavailable.items()):
        # a withdrawn record is unavailable on its own, as (withdrawn, None): the lifecycle table need not be read
        if reason != DEPENDENCY_UNAVAILABLE or not detail or unavailable.get(detail) != (WITHDRAWN, None):
            continue
        r = records.get(rid)
        if r is not None and detail in r.depends_on:
            message = f"{rid} depends on {detail}, which is withdrawn: {rid} is unavailable to queries"
            yield make("depends-on-withdrawn", r.path, where.value_line(r.path, detail), message, rid)


def adr_folders(profiles: ProfileMap) -> Callable[[str], bool] | None:
    """Whether the ``adr`` profile reads the files of a folder ("" the store's root), as ``ProfileMap.for_path``
    finds a file's profile (the longest folder prefix that holds it, else the store's); None when it reads none."""
    if profiles.plain_contract or "adr" not in (profiles.default, *(name for _, name in profiles.prefixes)):
        return None
    longest_first = sorted(profiles.prefixes, key=lambda pair: len(pair[0]), reverse=True)  # (stable: the first
    # of two equal prefixes wins, as in for_path)
    known: dict[str, bool] = {}

    def reads_adr(folder: str) -> bool:
        found = known.get(folder)
        if found is None:
            name = next(
                (n for p, n in longest_first if not p or folder == p or folder.startswith(p + "/")), profiles.default
            )
            found = known[folder] = name == "adr"
        return found

    return reads_adr


class _AdrPairs:
    """An ADR and the ADR that supersedes it, built only when the ``adr`` profile read both (their folders say)."""

    def __init__(self, snap: Snapshot, profiles: ProfileMap) -> None:
        self.snap, self.reads_adr = snap, adr_folders(profiles)
        self.facets = snap.facets() if self.reads_adr is not None else None

    def _read_as_adr(self, rid: str) -> bool:
        assert self.reads_adr is not None and self.facets is not None
        try:
            return self.reads_adr(self.facets.of(rid).folder)
        except KeyError:  # no such record
            return False

    def pair(self, rid: str) -> tuple[Record, Record] | None:
        """(the ADR ``rid``, the ADR that supersedes it), or None when either is not a record the adr profile read."""
        if self.reads_adr is None:
            return None
        by = self.snap.superseded_by.get(rid)
        if not by or not self._read_as_adr(rid) or not self._read_as_adr(by):
            return None
        records = self.snap.records
        old, new = records.get(rid), records.get(by)
        if old is None or new is None or not old.profile == new.profile == "adr":
            return None
        return old, new


def _predates(old: Record, new: Record, where: FileLines, make: Make) -> Iterator[Finding]:
    for name in ("occurred_at", "recorded_at"):
        before, after = old.dates.get(name), new.dates.get(name)
        if before is None or after is None:
            continue
        if (
            after.end <= before.start and after.start < before.start
        ):  # the whole of the replacement's date lies before the old one's
            line = new.derived_lines.get(name) or where.key_line(new.path, name)
            message = (
                f"{new.id} ({name} {after.text}) supersedes {old.id} ({old.path}, {name} {before.text}) "
                "but is dated before it"
            )
            yield make("replacement-predates", new.path, line, message, new.id)
        return
