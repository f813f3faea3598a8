"""What every query shares: filters over records, coverage, freshness, pagination, record summaries."""

from __future__ import annotations

import re
from datetime import datetime
from functools import cached_property
from typing import Any

from knowtk.errors import InvalidArgument
from knowtk.model.datevalues import format_utc
from knowtk.model.records import Record
from knowtk.model.shapes import shape
from knowtk.query.args import FOLDERS, Param, bound, choice, strings, with_schema
from knowtk.query.wording import SCOPE, SINCE, UNTIL
from knowtk.snapshot.facets import Criteria, Facet, facet_of
from knowtk.snapshot.model import Snapshot

__all__ = [
    "FILTER_PARAMS",
    "PATCH_LIMIT",
    "RecordFilter",
    "changes_to_patch",
    "coverage",
    "freshness",
    "next_offset",
    "record_summary",
]

KINDS = ("page", "claim", "relationship")
PATCH_LIMIT = 1000  # a snapshot that changed more ids than this (and than a twentieth of the store) rebuilds it
LIFECYCLES = ("active", "superseded", "all")
TIME_FIELDS = ("occurred_at", "recorded_at", "updated_at", "due_at")

# the filters knowledge_grep and knowledge_records share (RecordFilter applies them)
FILTER_PARAMS = (
    Param("kind", strings(allowed=KINDS), doc="Record kind(s): page, claim, relationship."),
    Param(
        "type",
        strings(),
        doc="Ontology type(s); a type also matches its aliases from knowtk.yaml (adr finds decision).",
    ),
    Param("tag", strings(), doc="Exact, case-sensitive tag(s); a record must carry every one."),
    Param(
        "lifecycle",
        choice(*LIFECYCLES),
        "active",
        doc=(
            "active (default) searches current records and also matches the superseded wording they replaced; "
            "superseded returns superseded records directly; all returns both, without following replacements."
        ),
    ),
    Param(
        "timeField",
        choice(*TIME_FIELDS),
        doc="Date field the since/until bounds apply to (occurred_at when a bound is given without it).",
    ),
    Param("since", bound(upper=False), doc=SINCE),
    Param("until", bound(upper=True), doc=UNTIL),
    Param("scope", with_schema(lambda name, v: v, FOLDERS), doc=SCOPE),  # normalize_scope checks the folders
)


@shape(frozen=True)
class RecordFilter:
    """The filters of knowledge_grep / knowledge_records, applied to one (current) record."""

    scope: tuple[str, ...] = ()
    kinds: tuple[str, ...] | None = None
    types: frozenset[str] | None = None
    tags: tuple[str, ...] | None = None
    time_field: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def from_args(cls, snap: Snapshot, args: dict[str, Any]) -> RecordFilter:
        types = None
        if args.get("type"):
            expanded: set[str] = set()
            for t in args["type"]:
                expanded |= snap.config.expand_type(t)
            types = frozenset(expanded)
        since, until = args.get("since"), args.get("until")
        if since is not None and until is not None and since > until:
            raise InvalidArgument("since", "is after until", allowed="since <= until")
        time_field = args.get("time_field")
        if time_field is None and (since is not None or until is not None):
            time_field = "occurred_at"
        return cls(
            scope=snap.normalize_scope(args.get("scope")),
            kinds=args.get("kind") or None,
            types=types,
            tags=args.get("tag") or None,
            time_field=time_field,
            since=since,
            until=until,
        )

    @property
    def is_trivial(self) -> bool:
        """True when every record passes (scope aside)."""
        return self.kinds is None and self.types is None and self.tags is None and self.time_field is None

    @cached_property
    def criteria(self) -> Criteria:
        """The filters a record's facets answer: all of them but the time range."""
        return Criteria(self.scope, self.kinds, self.types, self.tags)

    @property
    def by_facets(self) -> bool:
        """True when a record's facets answer the filters (no time range): no record needs to be built."""
        return self.time_field is None

    def passes_facet(self, f: Facet) -> bool:
        """Whether a record with these facets passes the filters; only when ``by_facets``."""
        return self.criteria.passes(f)

    def passes(self, r: Record) -> bool:
        if not self.criteria.passes(facet_of(r)):
            return False
        if self.time_field is not None:
            value = r.dates.get(self.time_field)
            if value is None or not value.overlaps(self.since, self.until):
                return False
        return True


def record_summary(r: Record, snap: Snapshot) -> dict[str, Any]:
    """The identifying fields every row and hit starts with."""
    return {
        "id": r.id,
        "kind": r.kind,
        "type": r.type,
        "title": r.title,
        "summary": r.summary,
        "lifecycle": lifecycle_of(r.id, snap),
        "tags": list(r.tags),
        "path": r.path,
        "revision": r.revision,
        "sha256": r.sha256,
    }


def lifecycle_of(rid: str, snap: Snapshot) -> str:
    life = snap.lifecycle_at(rid)
    return "expired" if life != "withdrawn" and rid in snap.expired else life


def coverage(snap: Snapshot, scope: tuple[str, ...]) -> dict[str, Any]:
    issues = [i.to_json() for i in snap.scope_issues(scope)]
    out: dict[str, Any] = {"complete": not issues, "issues": issues}
    hint = newcomer_hint(snap) if issues else None
    if hint is not None:
        out["hint"] = hint
    return out


_ADR_NAME = re.compile(r"(?:^|/)(?:adr[-_]?)?(?:\d{3,5}|\d{8})[-_][^/]*$|(?:^|/)(?:adr|adrs|decisions)/", re.I)


def newcomer_hint(snap: Snapshot) -> str | None:
    """One line for a store without knowtk.yaml whose files mostly lack knowtk frontmatter: which profile reads it.

    A hint, never a switch: the store is still read as knowtk's format until the user says otherwise.
    """
    if snap.config.exists:
        return None
    # no frontmatter, or one without knowtk's id (MADR 3/4, Obsidian): written for another tool
    missing = [i.path or "" for i in snap.issues if i.code in ("frontmatter_missing", "id_missing")]
    total = len(snap.paths)
    if not missing or len(missing) * 2 <= total:
        return None
    adr = sum(1 for path in missing if _ADR_NAME.search(path)) * 2 > len(missing)
    name, looks = ("adr", "an ADR folder") if adr else ("plain", "plain Markdown (or an ADR folder, or a vault)")
    return (
        f"{len(missing)} of {total} files have no knowtk frontmatter; this looks like {looks}: "
        f"run with --profile {name}, or write `profile: {name}` in knowtk.yaml (docs/profiles.md)"
    )


def freshness(snap: Snapshot, queried_at: datetime, indexed_at: str | None = None) -> dict[str, Any]:
    return {
        "queriedAt": format_utc(queried_at),
        "scannedAt": format_utc(snap.scanned_at),
        "indexedAt": indexed_at,
    }


def next_offset(offset: int, limit: int, total: int, *, max_offset: int | None = None) -> int | None:
    nxt = offset + limit
    if nxt >= total or (max_offset is not None and nxt > max_offset):
        return None
    return nxt


def changes_to_patch(snap: Snapshot, generation: int, size: int) -> frozenset[str] | None:
    """The ids at which a structure built from the snapshot of ``generation`` (holding ``size`` records) is
    patched to ``snap``; None when it must be rebuilt: never built, built from another line of snapshots, or
    more changed than patching saves (``PATCH_LIMIT``, or a twentieth of the store)."""
    changed = snap.changed_ids
    if changed is None or generation < 0 or snap.previous_generation != generation:
        return None
    return changed if len(changed) <= max(PATCH_LIMIT, size // 20) else None
