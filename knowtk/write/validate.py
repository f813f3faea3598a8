"""The store as a mutation would leave it, judged by the same code that judges scanned files.

The files a mutation writes are parsed (``load_frontmatter``, ``build_record``) and put over the
scanner's entries; ``build_snapshot`` builds the store from them under the safeguards the mutation
would record and lift, without recording anything. Any coverage issue the change would add
(an invalid field, a missing dependency, a supersession cycle or dead end, a stale lifecycle)
refuses the mutation with ``InvalidArgument`` naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import datetime

from knowtk.errors import InvalidArgument
from knowtk.model.config import StoreConfig
from knowtk.model.records import FileProblem, Issue, load_frontmatter
from knowtk.scan.entry import FileEntry
from knowtk.snapshot.build import build_snapshot
from knowtk.snapshot.model import Snapshot
from knowtk.snapshot.safeguards import Safeguards
from knowtk.state import JournalEntries
from knowtk.write.files import sha256_of

__all__ = ["entry_for", "snapshot_after_change"]

_FIELD_CODES = {
    "kind_invalid": "kind",
    "status_invalid": "status",
    "revision_invalid": "revision",
    "id_invalid": "id",
    "id_missing": "id",
    "endpoints_missing": "from",
    "superseded_by_missing": "superseded_by",
    "stale_withdrawn": "status",
    "stale_revision": "revision",
    "supersession_cycle": "by",
    "supersession_target_missing": "by",
    "evidence_invalid": "evidence",
}
_LEADING_NAME = re.compile(r"^(?:fields\.)?([a-z_]+)\b")


class _PlannedSafeguards(Safeguards):
    """The safeguards as the mutation would leave them; recording nothing (a dry run)."""

    def __init__(
        self, real: Safeguards, new_withdrawals: JournalEntries, new_guards: JournalEntries, lifted: set[str]
    ) -> None:
        self.withdrawn = {k: v for k, v in real.withdrawn.items() if k not in lifted}
        self.superseded = {k: v for k, v in real.superseded.items() if k not in lifted}
        for rid, entry in new_withdrawals.items():
            self.withdrawn.setdefault(rid, entry[0])
        for rid, entry in new_guards.items():
            self.superseded[rid] = (entry[0], entry[1])

    def observe(self, records: object, now: datetime) -> set[str]:
        return set()


class _EntriesWithChanges(Mapping[str, FileEntry]):
    """The scanner's entries with the mutation's files put over them."""

    def __init__(self, base: Mapping[str, FileEntry], top: dict[str, FileEntry | None]) -> None:
        self.base, self.top = base, top

    def __getitem__(self, path: str) -> FileEntry:
        if path in self.top:
            entry = self.top[path]
            if entry is None:
                raise KeyError(path)
            return entry
        return self.base[path]

    def __iter__(self) -> Iterator[str]:
        yield from (p for p, e in self.top.items() if e is not None)
        yield from (p for p in self.base if p not in self.top)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def entry_for(path: str, sha256: str, data: bytes) -> FileEntry:
    """The scanner's entry for these bytes at ``path`` (as if the scan had just read them)."""
    loaded = load_frontmatter(data)
    if isinstance(loaded, FileProblem):
        entry = FileEntry((len(data), 0), sha256, None, 0, loaded)
    else:
        entry = FileEntry((len(data), 0), sha256, loaded[0], loaded[2])
    entry.rebuild(path)
    return entry


def snapshot_after_change(
    snap: Snapshot,
    files: Mapping[str, FileEntry],
    config: StoreConfig,
    safeguards: Safeguards,
    changed: dict[str, bytes | None],
    *,
    new_withdrawals: JournalEntries,
    new_guards: JournalEntries,
    lifted: set[str],
    now: datetime,
    tolerated: frozenset[str] = frozenset(),
) -> Snapshot:
    """The snapshot after the change; InvalidArgument when it has an issue the store has not now (except an issue
    of an id or path in ``tolerated``: an undo may bring back what the store had)."""
    top: dict[str, FileEntry | None] = {}
    for path, data in changed.items():
        top[path] = None if data is None else entry_for(path, sha256_of(data), data)
    planned = _PlannedSafeguards(safeguards, new_withdrawals, new_guards, lifted)
    after = build_snapshot(
        _EntriesWithChanges(files, top),
        config,
        planned,
        generation=snap.generation,
        now=now,
        previous=snap,
        touched=list(changed),
    )
    before = {_issue_key(i) for i in snap.issues}
    new = [i for i in after.issues if _issue_key(i) not in before and not ({i.id, i.path} & tolerated)]
    if new:
        raise InvalidArgument(
            _field_of(new[0], after), f"the change would make the store inconsistent: {new[0].message}"
        )
    return after


def _issue_key(issue: Issue) -> tuple[str | None, str | None, str]:
    return (issue.path, issue.id, issue.code)


_NEEDED_REFERENCE = re.compile(r" needs '([^']+)'")
_REFERENCE_FIELDS = ("depends_on", "entities", "owner", "source", "from", "to")


def _field_of(issue: Issue, after: Snapshot) -> str:
    name = _FIELD_CODES.get(issue.code)
    if name is None:
        match = _LEADING_NAME.match(issue.message)
        name = match.group(1) if match and issue.code in ("field_invalid", "date_invalid") else None
    if name is None and issue.code.startswith("dependency"):
        name = "depends_on"
        needs = _NEEDED_REFERENCE.search(issue.message)
        record = after.records.get(issue.id or "")
        if needs and record is not None:
            for field in _REFERENCE_FIELDS:
                value = record.frontmatter.get(field)
                if value == needs.group(1) or (isinstance(value, list) and needs.group(1) in value):
                    name = field
                    break
    if name is None and issue.code.startswith("frontmatter"):
        name = "record"
    return "record" if name is None else ("by" if name == "by" else f"record.{name}")
