"""Building a snapshot: the rules of STORE.md §1 that need every record at once.

``build_snapshot`` takes the scanner's per-file records and decides, for the
whole store: duplicated IDs, lifecycle after the safeguards, expiry,
availability (withdrawn, expired, missing or unavailable dependencies, passed
along to everything that depends on them), supersession chains (to an active
record, or to nothing and why), the name index for exact lookup, and the
coverage issues.

A new snapshot is built from the previous one and the files that changed since,
so one edited file costs work in proportion to what it touches (its id, the
records that name it, the store's few expiring, unavailable and superseded
records), plus a few dictionary copies, not a pass over every record.
"""

from __future__ import annotations

from bisect import insort
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from knowtk.model.config import StoreConfig
from knowtk.model.records import Issue, Record
from knowtk.scan.entry import FileEntry
from knowtk.snapshot.model import (
    DEPENDENCY_MISSING,
    DEPENDENCY_UNAVAILABLE,
    DIGEST_MOD,
    EXPIRED,
    NOT_RECORD_NAME,
    WITHDRAWN,
    ChainEnd,
    Snapshot,
    SnapshotIndex,
    file_digest,
    is_expired,
    normalize_name,
)
from knowtk.snapshot.overlay import GroupedBuilder, Overlaid, StaleRecord
from knowtk.snapshot.safeguards import Safeguards

__all__ = ["build_snapshot"]


def build_snapshot(
    files: Mapping[str, FileEntry],
    config: StoreConfig,
    safeguards: Safeguards,
    *,
    generation: int,
    now: datetime,
    previous: Snapshot | None = None,
    touched: Iterable[str] | None = None,
) -> Snapshot:
    """The store as ``files`` hold it now.

    With the previous snapshot and the paths ``touched`` since (changed or removed), only what
    those files can affect is recomputed: their records, the ids they claim or claimed, the
    records that depend on those ids, and the few store-wide sets that stay small (expiring,
    unavailable, superseded). Without them everything is built from scratch, by the same code
    with every file touched, so the two ways cannot drift apart.
    """
    if previous is None or previous.index is None or touched is None:
        previous, touched = None, list(files)
    return _Build(previous, files, safeguards, now).run(touched, config, generation)


class _Build:
    """One update of the previous snapshot's tables, on copies: a snapshot never changes once built."""

    def __init__(
        self, prev: Snapshot | None, files: Mapping[str, FileEntry], safeguards: Safeguards, now: datetime
    ) -> None:
        ix = prev.index if prev is not None else None
        self.prev, self.files, self.safeguards, self.now = prev, files, safeguards, now
        self.records: Any = {}  # a dict, or Layered when the previous snapshot was loaded from state.sqlite
        if prev is not None:
            self.records = dict(prev.records) if isinstance(prev.records, dict) else prev.records.overlay()
        # one entry per record, read at a few keys by an update: the previous maps under this build's changes
        self.lifecycle: Overlaid[str] = Overlaid.over(prev, "lifecycle") if prev else Overlaid(None, base={})
        self.superseded_by: Overlaid[str | None] = (
            Overlaid.over(prev, "superseded_by") if prev else Overlaid(None, base={})
        )
        self.names = GroupedBuilder.over(prev, "names") if prev else GroupedBuilder({})
        # path -> sha256 and path -> id: the previous maps too (a stored one is probed at the changed paths)
        self.paths: Overlaid[str] = Overlaid.over(prev, "paths") if prev else Overlaid(None, base={})
        self.excluded: dict[str, str] = dict(prev.excluded) if prev else {}
        self.id_at: Overlaid[str] = Overlaid.over(ix, "id_at") if ix else Overlaid(None, base={})
        self.ix = SnapshotIndex(
            id_at=self.id_at,
            claims={},  # GroupedBuilder below
            referrers={},
            base=dict(ix.base) if ix else {},
            expiring=dict(ix.expiring) if ix else {},
            superseded=set(ix.superseded) if ix else set(),
            folders=dict(ix.folders) if ix else {},
            file_issues=dict(ix.file_issues) if ix else {},
            dup_issues=dict(ix.dup_issues) if ix else {},
            guard_issues=dict(ix.guard_issues) if ix else {},
            dep_issues=dict(ix.dep_issues) if ix else {},
        )
        self.claims = GroupedBuilder.over(ix, "claims") if ix else GroupedBuilder({})
        self.referrers = GroupedBuilder.over(ix, "referrers") if ix else GroupedBuilder({})

    def run(self, touched: Iterable[str], config: StoreConfig, generation: int) -> Snapshot:
        """Take in the touched files, then what follows from them, step by step."""
        ids = self._files(touched)
        before, membership = self._identity(ids)
        self._records(before)
        self._dependencies(before, membership)
        return self._derive(before, config, generation)

    def _files(self, touched: Iterable[str]) -> set[str]:
        """Per touched path: its hash, its own issues, the id it claims. Returns the ids claimed before or now."""
        ix, files, paths, excluded = self.ix, self.files, self.paths, self.excluded
        ids: set[str] = set()
        sums: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))  # folder of a file -> change to its sums
        id_at = self.id_at
        for path in touched:
            folder = path.rpartition("/")[0]
            entry = files.get(path)
            old_id = id_at.get(path)
            if old_id is not None:
                ids.add(old_id)
                self.claims.discard(old_id, path)
                if entry is None or entry.record is None:
                    id_at.discard(path)
            old_sha = paths.get(path)
            if old_sha is not None:
                n, total = sums[folder]
                sums[folder] = (n - 1, total - file_digest(path, old_sha))
            ix.file_issues.pop(path, None)
            excluded.pop(path, None)
            if entry is None:  # removed
                if old_sha is not None:
                    paths.discard(path)
                continue
            paths[path] = entry.sha256 or ""
            n, total = sums[folder]
            sums[folder] = (n + 1, total + file_digest(path, paths[path]))
            if entry.issues:
                ix.file_issues[path] = tuple(entry.issues)
            if entry.record is None:
                # the refusal comes last; no issue: a name its profile reads as no record (a template)
                excluded[path] = entry.issues[-1].code if entry.issues else NOT_RECORD_NAME
            else:
                rid = id_at[path] = entry.record.id
                self.claims.add(rid, path)
                ids.add(rid)
        ix.claims = self.claims.finish()
        ix.id_at = id_at.finish()
        self._folder_sums(sums)
        return ids

    def _folder_sums(self, sums: Mapping[str, tuple[int, int]]) -> None:
        """The per-folder sums behind fingerprint(): a file's change counts in its folder and every one above."""
        folders = self.ix.folders
        for folder, (dn, dtotal) in sums.items():
            parts = folder.split("/") if folder else []
            for above in ["", *("/".join(parts[: i + 1]) for i in range(len(parts)))]:
                n, total = folders.get(above, (0, 0))
                if n + dn:
                    folders[above] = (n + dn, (total + dtotal) % DIGEST_MOD)
                else:
                    del folders[above]

    def _identity(self, ids: set[str]) -> tuple[dict[str, Record | StaleRecord | None], set[str]]:
        """An id claimed by one file is a record; by several, none of them is.

        Returns the records that changed (id -> the record before, or None) and the ids that
        became or stopped being a record or a duplicate (their dependents must be re-checked).
        """
        ix, files, records, excluded = self.ix, self.files, self.records, self.excluded
        before: dict[str, Record | StaleRecord | None] = {}
        membership: set[str] = set()
        for rid in sorted(ids):
            claimants = self.claims.get(rid, [])
            was_dup = rid in ix.dup_issues
            if len(claimants) > 1:
                others = ", ".join(claimants)
                message = f"id {rid!r} is used by {len(claimants)} files: {others}"
                ix.dup_issues[rid] = tuple(Issue(p, rid, "id_duplicate", message) for p in claimants)
                for p in claimants:
                    excluded[p] = "id_duplicate"
            else:
                ix.dup_issues.pop(rid, None)
                for p in claimants:
                    excluded.pop(p, None)
            old = records.get(rid) if isinstance(records, dict) else records.previous(rid)
            new = files[claimants[0]].record if len(claimants) == 1 else None
            if new is not old:
                before[rid] = old
                if new is None:
                    del records[rid]
                else:
                    records[rid] = new
            if (old is None) != (new is None) or was_dup != (len(claimants) > 1):
                membership.add(rid)
        return before, membership

    def _records(self, before: dict[str, Record | StaleRecord | None]) -> None:
        """Lifecycle after the safeguards, names, references and expiry of the records that changed."""
        ix, records, names, referrers = self.ix, self.records, self.names, self.referrers
        reloaded = self.safeguards.observe([records[rid] for rid in before if rid in records], self.now)
        for rid in reloaded:  # the same record, under safeguards another process changed
            if rid in records and rid not in before:
                before[rid] = records[rid]
        for rid, old in before.items():
            if old is not None:  # (a stored map not parsed yet drops the id whole: the old keys are not read)
                names.take_back(rid, partial(_name_keys, old))
                referrers.take_back(rid, partial(getattr, old, "references"))
            r = records.get(rid)
            if r is None:
                self.lifecycle.discard(rid)
                self.superseded_by.discard(rid)
                ix.guard_issues.pop(rid, None)
                ix.expiring.pop(rid, None)
                ix.superseded.discard(rid)
                continue
            life, by, issue = self.safeguards.apply(r)
            self.lifecycle[rid], self.superseded_by[rid] = life, by
            if issue:
                ix.guard_issues[rid] = issue
            else:
                ix.guard_issues.pop(rid, None)
            if life == "superseded":
                ix.superseded.add(rid)
            else:
                ix.superseded.discard(rid)
            if r.expires_at is not None:
                ix.expiring[rid] = r.expires_at
            else:
                ix.expiring.pop(rid, None)
            for key in _name_keys(r):
                names.add(key, rid)
            for ref in r.references:
                referrers.add(ref, rid)

    def _dependencies(self, before: dict[str, Record | StaleRecord | None], membership: set[str]) -> None:
        """Withdrawn, or a dependency missing: for the changed records and those that name a changed id."""
        ix, records = self.ix, self.records
        recheck = {rid for rid in before if rid in records}
        for rid in membership:
            recheck.update(self.referrers.get(rid, ()))
        for rid in before:
            if rid not in records:
                ix.base.pop(rid, None)
                ix.dep_issues.pop(rid, None)
        for rid in recheck:
            r = records[rid]
            entry: tuple[str, str | None] | None = (WITHDRAWN, None) if self.lifecycle[rid] == "withdrawn" else None
            problems = []
            for ref in r.references:
                if ref in records or (entry is not None and entry[0] == DEPENDENCY_MISSING):
                    continue
                why = "is used by several files" if ref in ix.dup_issues else "is not a valid record in the store"
                entry = entry or (DEPENDENCY_MISSING, ref)
                problems.append(Issue(r.path, rid, DEPENDENCY_MISSING, f"{rid} needs {ref!r}, which {why}"))
            if entry is None:
                ix.base.pop(rid, None)
            else:
                ix.base[rid] = entry
            if problems:
                ix.dep_issues[rid] = tuple(problems)
            else:
                ix.dep_issues.pop(rid, None)

    def _derive(self, before: dict[str, Record | StaleRecord | None], config: StoreConfig, generation: int) -> Snapshot:
        """What follows from the small sets (expiring, unavailable, superseded), recomputed whole."""
        ix, now, prev = self.ix, self.now, self.prev
        ix.referrers = self.referrers.finish()
        expired = {rid for rid, when in ix.expiring.items() if is_expired(when, now)}
        unavailable_inactive, unavailable = self._availability(expired, before)
        supersedes = self._supersedes(before)
        chain_ends, chain_issues = self._chain_ends(before, unavailable)
        changed_ids = None
        if prev is not None:
            changed_ids = frozenset(
                before.keys()
                | (prev.unavailable.keys() ^ unavailable.keys())
                | (prev.unavailable_inactive.keys() ^ unavailable_inactive.keys())
                | (prev.expired ^ expired)
            )
        snapshot = Snapshot(
            generation=generation,
            scanned_at=now,
            evaluated_at=now,
            config=config,
            records=self.records,
            lifecycle=self.lifecycle.finish(),
            superseded_by=self.superseded_by.finish(),
            supersedes=supersedes,
            unavailable=unavailable,
            unavailable_inactive=unavailable_inactive,
            expired=expired,
            chain_ends=chain_ends,
            names=self.names.finish(),
            issues=self._issues(config, chain_issues),
            excluded=self.excluded,
            paths=self.paths.finish(),
            valid_until=self._next_expiry(expired),
            changed_ids=changed_ids,
            previous_generation=prev.generation if prev is not None else None,
        )
        snapshot.index = ix
        return snapshot

    def _availability(
        self, expired: set[str], before: Mapping[str, object]
    ) -> tuple[dict[str, tuple[str, str | None]], dict[str, tuple[str, str | None]]]:
        """(unavailable with expired assertions allowed, unavailable with them counted): the same map without any.

        The previous snapshot's maps are kept when nothing they were made from changed (the same records
        unavailable on their own, no changed record in them or depending on one of them): the referrers are
        then not read.
        """
        ix, prev = self.ix, self.prev
        same = prev is not None and prev.index is not None and list(ix.base.items()) == list(prev.index.base.items())
        if same and prev is not None and self._outside(before, prev.unavailable_inactive):
            unavailable_inactive = prev.unavailable_inactive
        else:
            unavailable_inactive = _propagate(ix.base, ix.referrers)
        if not expired:
            return unavailable_inactive, unavailable_inactive
        if same and prev is not None and prev.expired == expired and self._outside(before, prev.unavailable):
            return unavailable_inactive, prev.unavailable
        strict = dict(ix.base)
        for rid in sorted(expired):
            strict.setdefault(rid, (EXPIRED, None))
        return unavailable_inactive, _propagate(strict, ix.referrers)

    def _outside(self, before: Iterable[str], reached: Mapping[str, object]) -> bool:
        """Whether no changed record was reached from the records unavailable on their own (``reached``), nor
        names one reached: over the same such records, the walk (``_propagate``) goes the same way again."""
        records = self.records
        for rid in before:
            if rid in reached:
                return False
            r = records.get(rid)
            if r is not None and any(ref in reached for ref in r.references):
                return False
        return True

    def _supersedes(self, before: Mapping[str, object]) -> dict[str, list[str]]:
        """id -> the ids it supersedes, in id order (keys in the order of their first id, as a full build
        makes it). An update moves only the ids whose lifecycle or superseded_by it may have changed."""
        superseded, superseded_by, prev = self.ix.superseded, self.superseded_by, self.prev
        if prev is None or not before:
            starts: Iterable[str] = sorted(superseded) if prev is None else ()
            supersedes: dict[str, list[str]] = defaultdict(list)
            for rid in starts:
                by = superseded_by[rid]
                if by:
                    supersedes[by].append(rid)
            return dict(supersedes) if prev is None else prev.supersedes
        lists = {by: list(rids) for by, rids in prev.supersedes.items()}  # small: the superseded records
        was = {rid: by for by, rids in lists.items() for rid in rids if rid in before}
        for rid in before:
            old = was.get(rid)
            if old is not None:
                lists[old].remove(rid)
            by = superseded_by.get(rid) if rid in superseded else None
            if by:
                insort(lists.setdefault(by, []), rid)
        return dict(sorted(((by, rids) for by, rids in lists.items() if rids), key=lambda item: item[1][0]))

    def _chain_ends(
        self, before: Mapping[str, object], unavailable: Mapping[str, tuple[str, str | None]]
    ) -> tuple[dict[str, ChainEnd], list[Issue]]:
        """Where every superseded record's chain leads, and the issues found on the way."""
        ix, prev = self.ix, self.prev
        chain_issues: list[Issue] = []
        kept: dict[str, ChainEnd] = {}
        if prev is not None:
            # a chain is followed again only where something it read changed: a record on it (or its start)
            # changed, or became or stopped being unavailable; the others, and their issues, are kept
            dirty = before.keys() | (prev.unavailable.keys() ^ unavailable.keys())
            superseded = ix.superseded
            kept = {
                rid: end
                for rid, end in prev.chain_ends.items()
                if rid in superseded and rid not in dirty and dirty.isdisjoint(end.via)
            }
            chain_issues = [i for i in prev.issues if i.code in _CHAIN_CODES and i.id in kept]
        starts = sorted(ix.superseded - kept.keys()) if kept else sorted(ix.superseded)
        ends = _chains(starts, self.records, self.lifecycle, self.superseded_by, unavailable, chain_issues, valid=kept)
        return ends, chain_issues

    def _issues(self, config: StoreConfig, chain_issues: list[Issue]) -> list[Issue]:
        """Every issue of the store, in path order (a file's issues keep their order)."""
        ix = self.ix
        issues = []
        if config.problem:
            issues.append(Issue("knowtk.yaml", None, "config_invalid", config.problem + "; defaults used"))
        for group in (ix.file_issues, ix.dup_issues, ix.dep_issues):
            for found in group.values():
                issues.extend(found)
        issues.extend(ix.guard_issues.values())
        issues.extend(chain_issues)
        issues.sort(key=lambda i: i.path or "")  # stable: a file's issues keep their order
        return issues

    def _next_expiry(self, expired: set[str]) -> datetime | None:
        """When the next record not yet expired expires: the snapshot must be evaluated again then."""
        upcoming = [
            (when.end if when.date_only else when.start) for rid, when in self.ix.expiring.items() if rid not in expired
        ]
        return min(upcoming) if upcoming else None


def _propagate(
    base: dict[str, tuple[str, str | None]], dependents: Mapping[str, list[str]]
) -> dict[str, tuple[str, str | None]]:
    """Everything that (transitively) depends on an unavailable record is unavailable too.

    Visited in id order, so that the dependency a record is reported under does not depend
    on how the snapshot was reached.
    """
    out = dict(base)
    stack = sorted(base, reverse=True)
    while stack:
        rid = stack.pop()
        for dependent in reversed(dependents.get(rid, ())):
            if dependent not in out:
                out[dependent] = (DEPENDENCY_UNAVAILABLE, rid)
                stack.append(dependent)
    return out


_CHAIN_CODES = frozenset({"supersession_cycle", "supersession_target_missing"})  # the issues _chains reports


def _chains(
    starts: Iterable[str],
    records: Mapping[str, Record],
    lifecycle: Mapping[str, str],
    superseded_by: Mapping[str, str | None],
    unavailable: Mapping[str, tuple[str, str | None]],
    issues: list[Issue],
    *,
    valid: Mapping[str, ChainEnd] | None = None,
) -> dict[str, ChainEnd]:
    """Follow superseded_by from every superseded record (``starts``) to an active one, or to nothing.

    ``valid`` are chain ends still valid (nothing on their chain changed): taken as they are.
    """
    ends: dict[str, ChainEnd] = dict(valid) if valid else {}
    for start in starts:
        if start in ends:
            continue
        path, position = [start], {start: 0}
        while True:  # ends with `tail`: how the chain goes on after path[-1]
            last = path[-1]
            nxt = superseded_by.get(last)
            if not nxt:
                tail = ChainEnd(None, "unset")
            elif nxt in position:  # a cycle: every record on it, and before it, resolves to nothing
                issues.extend(_cycle_issues(path[position[nxt] :], records))
                tail = ChainEnd(None, "cycle", (nxt,))
            elif nxt not in records:
                message = f"{last} is superseded by {nxt!r}, which is not a valid record in the store"
                named = records[last].derived_lines.get("superseded_by")
                if named is not None:  # a profile derived it from a line of the file: say which
                    message += f" (derived from line {named})"
                issues.append(Issue(records[last].path, last, "supersession_target_missing", message))
                tail = ChainEnd(None, "missing", (nxt,))
            elif nxt in unavailable:
                tail = ChainEnd(None, "withdrawn" if lifecycle[nxt] == "withdrawn" else "unavailable", (nxt,))
            elif lifecycle[nxt] == "active":
                tail = ChainEnd(nxt, "current", (nxt,))
            elif nxt in ends:
                known = ends[nxt]
                tail = ChainEnd(known.current, known.reason, (nxt, *known.via))
            else:
                position[nxt] = len(path)
                path.append(nxt)
                continue
            break
        steps = tail.via
        for rid in reversed(path):
            ends[rid] = ChainEnd(tail.current, tail.reason, steps)
            steps = (rid, *steps)
    return ends


def _cycle_issues(cycle: list[str], records: Mapping[str, Record]) -> list[Issue]:
    """One issue per record on a supersession cycle."""
    text = " -> ".join([*cycle, cycle[0]])
    message = f"supersession cycle {text} resolves to nothing"
    return [Issue(records[rid].path, rid, "supersession_cycle", message) for rid in cycle]


def _name_keys(r: Record | StaleRecord) -> set[str]:
    """The normalised title and aliases a record is found under."""
    if isinstance(r, StaleRecord):
        return set(r.name_keys)
    # (a name already in normal form is the title's own string: one object, not two, per such record)
    return {t if key == t else key for t in (r.title, *r.aliases) if t and (key := normalize_name(t))}
