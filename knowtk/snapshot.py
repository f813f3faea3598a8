"""The store as one query sees it: the rules of STORE.md §1 that need every record at once.

``build_snapshot`` takes the scanner's per-file records and decides, for the
whole store: duplicated IDs, lifecycle after the safeguards, expiry,
availability (withdrawn, expired, missing or unavailable dependencies, passed
along to everything that depends on them), supersession chains (to an active
record, or to nothing and why), the name index for exact lookup, and the
coverage issues. A snapshot is immutable; a query reads one.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from .config import StoreConfig
from .datevalues import DateValue, format_utc
from .errors import InvalidArgument
from .records import Issue, Record
from .scan import FileEntry
from .state import StateDB

__all__ = ["Safeguards", "Snapshot", "build_snapshot", "in_scope", "normalize_name"]

# reasons a record is unavailable, most fundamental first
WITHDRAWN, EXPIRED = "withdrawn", "expired"
DEPENDENCY_MISSING, DEPENDENCY_UNAVAILABLE = "dependency_missing", "dependency_unavailable"


def normalize_name(text: str) -> str:
    """Lookup normalisation: NFKC, lowercase, trimmed, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def is_expired(expires_at: DateValue | None, now: datetime) -> bool:
    """An assertion is no longer in force after expires_at (a date: after that whole UTC day)."""
    if expires_at is None:
        return False
    return now >= expires_at.end if expires_at.date_only else now > expires_at.start


class Safeguards:
    """Withdrawal and supersession sightings: kept in state.sqlite, never rebuilt from Markdown."""

    def __init__(self, state: StateDB) -> None:
        self.state = state
        self.withdrawn: dict[str, int] = dict(state.conn.execute("SELECT id, revision FROM keyword_withdrawals_v1"))
        self.superseded: dict[str, tuple[int, str | None]] = {
            rid: (rev, by)
            for rid, rev, by in state.conn.execute("SELECT id, revision, superseded_by FROM lifecycle_guards_v1")
        }

    def observe(self, records: Iterable[Record], now: datetime) -> None:
        """Remember every withdrawal and every supersession (at its highest revision) seen in the files."""
        seen = format_utc(now)
        withdrawals, guards = [], []
        for r in records:
            if r.status == "withdrawn" and r.id not in self.withdrawn:
                self.withdrawn[r.id] = r.revision
                withdrawals.append((r.id, r.revision, r.path, seen))
            elif r.status == "superseded":
                known = self.superseded.get(r.id)
                if known is None or r.revision > known[0]:
                    self.superseded[r.id] = (r.revision, r.superseded_by)
                    guards.append((r.id, r.revision, r.superseded_by, r.path, seen))
        if withdrawals or guards:
            with self.state.transaction() as conn:
                conn.executemany(
                    "INSERT OR IGNORE INTO keyword_withdrawals_v1 (id, revision, path, seen_at) VALUES (?, ?, ?, ?)",
                    withdrawals,
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO lifecycle_guards_v1 (id, revision, superseded_by, path, seen_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    guards,
                )

    def apply(self, r: Record) -> tuple[str, str | None, Issue | None]:
        """(effective lifecycle, effective superseded_by, the issue when a stale file was overruled)."""
        if r.id in self.withdrawn and r.status != "withdrawn":
            return (
                "withdrawn",
                None,
                Issue(
                    r.path,
                    r.id,
                    "stale_withdrawn",
                    f"{r.id} was withdrawn before; this file (status {r.status}) cannot bring it back",
                ),
            )
        guard = self.superseded.get(r.id)
        if r.status == "active" and guard is not None and r.revision <= guard[0]:
            return (
                "superseded",
                guard[1],
                Issue(
                    r.path,
                    r.id,
                    "stale_revision",
                    f"{r.id} was superseded at revision {guard[0]}; this file presents revision "
                    f"{r.revision} as active, so it stays superseded (raise the revision to restate it)",
                ),
            )
        return r.status, r.superseded_by, None


@dataclass(frozen=True, slots=True)
class ChainEnd:
    current: str | None  # the active record the chain reaches, or None
    reason: str  # "current", or why it ends in nothing: missing | withdrawn | unavailable | cycle | unset
    via: tuple[str, ...] = ()  # the records after the start, in order


@dataclass
class Snapshot:
    generation: int
    scanned_at: datetime
    evaluated_at: datetime  # the instant expiry was judged at
    config: StoreConfig
    records: dict[str, Record]  # valid records with a unique id
    lifecycle: dict[str, str]  # effective lifecycle after the safeguards
    superseded_by: dict[str, str | None]
    supersedes: dict[str, list[str]]  # id -> the ids whose superseded_by is this one
    unavailable: dict[str, tuple[str, str | None]]  # id -> (reason, detail); expired counts
    unavailable_inactive: dict[str, tuple[str, str | None]]  # the same with expired assertions allowed
    expired: set[str]
    chain_ends: dict[str, ChainEnd]  # for every effectively superseded record
    names: dict[str, list[str]]  # normalised title or alias -> ids
    issues: list[Issue]
    excluded: dict[str, str]  # path -> reason code, for files that are not records
    paths: dict[str, str]  # path -> sha256 of every scanned file
    valid_until: datetime | None  # the next expiry: the snapshot must be re-evaluated then
    _fingerprints: dict[tuple[str, ...], str] = field(default_factory=dict)

    def available(self, rid: str, *, include_inactive: bool = False) -> bool:
        table = self.unavailable_inactive if include_inactive else self.unavailable
        return rid in self.records and rid not in table

    def fingerprint(self, scope: tuple[str, ...]) -> str:
        """The ``snapshot`` string: changes with any edit to a file in scope (superseded records too)."""
        cached = self._fingerprints.get(scope)
        if cached is None:
            h = hashlib.sha256()
            for path in sorted(p for p in self.paths if in_scope(p, scope)):
                h.update(f"{path}\0{self.paths[path]}\n".encode())
            h.update(",".join(sorted(self.expired)).encode())
            cached = self._fingerprints[scope] = h.hexdigest()[:20]
        return cached

    @cached_property
    def folders(self) -> set[str]:
        out = set()
        for path in self.paths:
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                out.add("/".join(parts[:i]))
        return out

    def normalize_scope(self, scope: object) -> tuple[str, ...]:
        """A query's scope as sorted folder prefixes; () is the whole store."""
        if scope is None or scope == "" or scope == []:
            return ()
        items = [scope] if isinstance(scope, str) else scope
        if not isinstance(items, list | tuple) or not all(isinstance(s, str) for s in items):
            raise InvalidArgument("scope", "must be a folder path or a list of them", value=scope)
        out = set()
        for item in items:
            folder = item.strip().strip("/")
            if not folder or folder == ".":
                return ()
            if any(part in ("", ".", "..") for part in folder.split("/")):
                raise InvalidArgument("scope", f"{item!r} is not a folder path inside the store", value=scope)
            if folder not in self.folders:
                top = sorted(f for f in self.folders if "/" not in f)
                raise InvalidArgument("scope", f"no folder {folder!r} holds records in this store", allowed=top)
            out.add(folder)
        return tuple(sorted(out))

    def scope_issues(self, scope: tuple[str, ...]) -> list[Issue]:
        return [i for i in self.issues if i.path is None or in_scope(i.path, scope)]

    def lookup_names(self, text: str) -> list[str]:
        return self.names.get(normalize_name(text), [])


def in_scope(path: str, scope: tuple[str, ...]) -> bool:
    if not scope:
        return True
    return any(path.startswith(prefix + "/") for prefix in scope)


def build_snapshot(
    files: Mapping[str, FileEntry],
    config: StoreConfig,
    safeguards: Safeguards,
    *,
    generation: int,
    now: datetime,
) -> Snapshot:
    issues: list[Issue] = []
    if config.problem:
        issues.append(Issue("knowtk.yaml", None, "config_invalid", config.problem + "; defaults used"))
    excluded: dict[str, str] = {}
    by_id: dict[str, list[Record]] = defaultdict(list)
    for path, entry in files.items():
        issues.extend(entry.issues)
        if entry.record is None:
            excluded[path] = entry.issues[0].code if entry.issues else "invalid"
        else:
            by_id[entry.record.id].append(entry.record)
    records: dict[str, Record] = {}
    duplicated: set[str] = set()
    for rid, found in by_id.items():
        if len(found) == 1:
            records[rid] = found[0]
            continue
        duplicated.add(rid)
        others = ", ".join(sorted(r.path for r in found))
        for r in found:
            excluded[r.path] = "id_duplicate"
            issues.append(Issue(r.path, rid, "id_duplicate", f"id {rid!r} is used by {len(found)} files: {others}"))

    safeguards.observe(records.values(), now)
    lifecycle: dict[str, str] = {}
    superseded_by: dict[str, str | None] = {}
    for rid, r in records.items():
        life, by, issue = safeguards.apply(r)
        lifecycle[rid], superseded_by[rid] = life, by
        if issue:
            issues.append(issue)

    expired = {rid for rid, r in records.items() if r.expires_at is not None and is_expired(r.expires_at, now)}
    base: dict[str, tuple[str, str | None]] = {}
    dependents: dict[str, list[str]] = defaultdict(list)
    for rid, r in records.items():
        if lifecycle[rid] == "withdrawn":
            base[rid] = (WITHDRAWN, None)
        for ref in r.references:
            if ref in records:
                dependents[ref].append(rid)
            elif rid not in base or base[rid][0] != DEPENDENCY_MISSING:
                why = "is used by several files" if ref in duplicated else "is not a valid record in the store"
                base.setdefault(rid, (DEPENDENCY_MISSING, ref))
                issues.append(Issue(r.path, rid, DEPENDENCY_MISSING, f"{rid} needs {ref!r}, which {why}"))
    unavailable_inactive = _propagate(base, dependents)
    strict_base = dict(base)
    for rid in expired:
        strict_base.setdefault(rid, (EXPIRED, None))
    unavailable = _propagate(strict_base, dependents) if expired else unavailable_inactive

    supersedes: dict[str, list[str]] = defaultdict(list)
    for rid, by in superseded_by.items():
        if by and lifecycle[rid] == "superseded":
            supersedes[by].append(rid)
    chain_ends = _chains(records, lifecycle, superseded_by, unavailable, issues)

    names: dict[str, list[str]] = defaultdict(list)
    for rid, r in records.items():
        keys = {normalize_name(t) for t in (r.title, *r.aliases) if t}
        for key in keys:
            if key:
                names[key].append(rid)

    upcoming = [
        (r.expires_at.end if r.expires_at.date_only else r.expires_at.start)
        for rid, r in records.items()
        if r.expires_at is not None and rid not in expired
    ]
    return Snapshot(
        generation=generation,
        scanned_at=now,
        evaluated_at=now,
        config=config,
        records=records,
        lifecycle=lifecycle,
        superseded_by=superseded_by,
        supersedes=dict(supersedes),
        unavailable=unavailable,
        unavailable_inactive=unavailable_inactive,
        expired=expired,
        chain_ends=chain_ends,
        names=dict(names),
        issues=issues,
        excluded=excluded,
        paths={path: entry.sha256 or "" for path, entry in files.items()},
        valid_until=min(upcoming) if upcoming else None,
    )


def _propagate(
    base: dict[str, tuple[str, str | None]], dependents: Mapping[str, list[str]]
) -> dict[str, tuple[str, str | None]]:
    """Everything that (transitively) depends on an unavailable record is unavailable too."""
    out = dict(base)
    stack = list(base)
    while stack:
        rid = stack.pop()
        for dependent in dependents.get(rid, ()):
            if dependent not in out:
                out[dependent] = (DEPENDENCY_UNAVAILABLE, rid)
                stack.append(dependent)
    return out


def _chains(
    records: Mapping[str, Record],
    lifecycle: Mapping[str, str],
    superseded_by: Mapping[str, str | None],
    unavailable: Mapping[str, tuple[str, str | None]],
    issues: list[Issue],
) -> dict[str, ChainEnd]:
    """Follow superseded_by from every superseded record to an active one, or to nothing."""
    ends: dict[str, ChainEnd] = {}
    for start, life in lifecycle.items():
        if life != "superseded" or start in ends:
            continue
        path, position = [start], {start: 0}
        while True:  # ends with `tail`: how the chain goes on after path[-1]
            last = path[-1]
            nxt = superseded_by.get(last)
            if not nxt:
                tail = ChainEnd(None, "unset")
            elif nxt in position:  # a cycle: every record on it, and before it, resolves to nothing
                cycle = path[position[nxt] :]
                text = " -> ".join([*cycle, cycle[0]])
                for rid in cycle:
                    issues.append(
                        Issue(
                            records[rid].path,
                            rid,
                            "supersession_cycle",
                            f"supersession cycle {text} resolves to nothing",
                        )
                    )
                tail = ChainEnd(None, "cycle", (nxt,))
            elif nxt not in records:
                issues.append(
                    Issue(
                        records[last].path,
                        last,
                        "supersession_target_missing",
                        f"{last} is superseded by {nxt!r}, which is not a valid record in the store",
                    )
                )
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
