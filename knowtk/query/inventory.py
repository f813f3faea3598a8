"""knowledge_records (the exhaustive inventory) and knowledge_record (one record, whole).

Neither depends on FTS5. The inventory lists every available record that
passes the filters, sorted by id, with unbounded offsets, so that "what is
in the store" never rests on a ranked search.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_left, insort
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from datetime import datetime
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import StoreUnavailable
from knowtk.index.temporal import from_us, reconciled, to_us
from knowtk.model.records import Record
from knowtk.query.citations import EvidenceVerifier
from knowtk.query.common import (
    RecordFilter,
    changes_to_patch,
    coverage,
    freshness,
    next_offset,
    record_summary,
)
from knowtk.query.suggest import suggestions
from knowtk.query.validity import in_force_ids, lifecycles_then, unplaced_count, validity
from knowtk.query.wikilinks import wikilinks_of
from knowtk.snapshot.facets import Criteria
from knowtk.snapshot.model import Snapshot
from knowtk.state import now_utc

__all__ = ["CATALOG", "Catalog", "catalog", "full_record", "inventory", "one_record"]

CATALOG = "record_catalog"  # the Catalog's key in Engine.extensions
MEMO_ENTRIES = 64  # answers' id lists kept per snapshot


def dates_json(r: Record) -> dict[str, Any]:
    return {name: value.to_json() for name, value in r.dates.items()}


# knowl_query's order without a query: newest recorded first, undated last, then by id:
# (0, -(recorded_at start as POSIX seconds), id), or (1, 0.0, id) for a record without recorded_at
NewestKey = tuple[int, float, str]


class Catalog:
    """The available records of one snapshot, indexed by what knowledge_records and knowl_query filter on.

    Derived from the snapshot alone (nothing in state.sqlite). It holds the available ids and their
    lifecycle (read from the snapshot's lifecycle table: no record is built for them); each index
    (sorted ids, newest order, active records by recorded_at, superseded ids, ids by category) is
    built the first time a query needs it. Filters on scope, kind, type and tag are answered by the
    snapshot's facets (a stored snapshot's facet columns: no record built). Every built
    index is patched at the snapshot's ``changed_ids`` when a snapshot follows the one it holds: each
    index keeps what it filed every id under, so a record that left is unfiled without building the
    record it was. A new process's first inventory thus costs a pass over the lifecycle table, not
    every record's build. A stored snapshot's newest order and recorded_at instants are read from the
    temporal projection (``recorded_us``: each record's recorded_at as the date tools store it), so that a
    new process's knowl_query without a query, or at ``asOf``, builds no record for them either; a patch
    files the changed records from the records themselves (built for the patch anyway).
    """

    def __init__(self) -> None:
        self.generation = -1
        self._snap: Snapshot | None = None
        self.lifecycle: dict[str, str] = {}  # available ids whose lifecycle is active or superseded -> lifecycle
        self._built: dict[str, Any] = {}  # the indexes below, by name, once a query asked for them
        self._filed: dict[str, dict[str, Any]] = {}  # index name -> id -> what that index filed it under
        self.memo: dict[Hashable, Any] = {}  # what queries derived from this snapshot's catalog (emptied with it)
        # reads (the ids it answers for, id -> recorded_at start in us) of the snapshot: set by catalog()
        self.recorded_source: Callable[[], tuple[Collection[str], Mapping[str, int]]] | None = None
        self._recorded: tuple[Collection[str], Mapping[str, int]] | None = None

    def invalidate(self) -> None:
        """Nothing in state.sqlite: a rollback leaves the snapshot, so the catalog holds (kept for the protocol)."""

    def take_repairs(self) -> list[str]:
        return []

    def update(self, snap: Snapshot) -> None:
        """Bring the catalog to ``snap``: kept, patched at its changed ids, or rebuilt."""
        if self.generation == snap.generation and self._snap is snap:
            return
        changed = changes_to_patch(snap, self.generation, len(self.lifecycle))
        self.generation = -1  # until done: a failure half way rebuilds it at the next use
        self.memo, self._recorded = {}, None
        self._snap = snap
        if changed is not None:
            for rid in changed:
                self._drop(rid)
            for rid in changed:
                if self._available(snap, rid):
                    self._add(rid, snap.lifecycle[rid])
        else:
            self._built, self._filed = {}, {}
            unavailable, records = snap.unavailable, snap.records
            self.lifecycle = {
                rid: life
                for rid, life in snap.lifecycle.items()
                if life in ("active", "superseded") and rid not in unavailable and rid in records
            }
        self.generation = snap.generation

    @staticmethod
    def _available(snap: Snapshot, rid: str) -> bool:
        return (
            rid not in snap.unavailable and snap.lifecycle.get(rid) in ("active", "superseded") and rid in snap.records
        )

    @property
    def records(self) -> Mapping[str, Record]:
        """The snapshot's records (built when read); the catalog's ids are those of ``lifecycle``."""
        assert self._snap is not None, "update() first"
        return self._snap.records

    # -- the indexes, each built on first use ---------------------------------------------------------
    @property
    def ids(self) -> list[str]:
        """The ids, sorted."""
        return self._index("ids", lambda: sorted(self.lifecycle))

    @property
    def newest(self) -> list[NewestKey]:
        """knowl_query's order without a query (``NewestKey``)."""
        return self._index("newest", lambda: sorted(self._file("newest", rid) for rid in self.lifecycle))

    @property
    def active_since(self) -> list[tuple[datetime, str]]:
        """(recorded_at start, id) of the active records with a recorded_at, sorted."""

        def build() -> list[tuple[datetime, str]]:
            found = (self._file("active_since", rid) for rid, life in self.lifecycle.items() if life == "active")
            return sorted(key for key in found if key is not None)

        return self._index("active_since", build)

    def recorded_us(self, rid: str, *, from_record: bool = False) -> int | None:
        """The start of record ``rid``'s recorded_at in microseconds since the epoch (None: it has none);
        ``from_record``: read from the record, not from the temporal projection."""
        found = None if from_record else self._recorded_starts()
        if found is not None and rid in found[0]:
            return found[1].get(rid)
        recorded = self.records[rid].dates.get("recorded_at")
        return None if recorded is None else to_us(recorded.start)

    def _recorded_starts(self) -> tuple[Collection[str], Mapping[str, int]] | None:
        """A stored snapshot's recorded_at starts, read once per snapshot; None for built records (read there)."""
        if self._recorded is None and self.recorded_source is not None and not isinstance(self.records, dict):
            try:
                self._recorded = self.recorded_source()
            except sqlite3.Error:  # the temporal tables unavailable: the records say it (built for it)
                self.recorded_source = None
        return self._recorded

    @property
    def superseded(self) -> set[str]:
        return self._index("superseded", lambda: {rid for rid, life in self.lifecycle.items() if life == "superseded"})

    def categories(self) -> dict[str, set[str]]:
        """category (else type) -> ids. Filters on kind, type and tag read the snapshot's facets instead."""

        def build() -> dict[str, set[str]]:
            out: dict[str, set[str]] = {}
            for rid in self.lifecycle:
                out.setdefault(self._file("category", rid), set()).add(rid)
            return out

        return self._index("category", build)

    def _index(self, name: str, build: Callable[[], Any]) -> Any:
        found = self._built.get(name)
        if found is None:
            self._filed[name] = {}
            found = self._built[name] = build()
        return found

    def _file(self, name: str, rid: str, *, from_record: bool = False) -> Any:
        """What index ``name`` files ``rid`` under, noted so that the id can be unfiled once its record is gone
        (``from_record``: a changed record, filed from itself; see ``recorded_us``)."""
        assert self._snap is not None
        if name == "category":
            r = self._snap.records[rid]
            key: Any = r.category or r.type
        else:
            # (the float datetime.timestamp() gives: the instant's whole microseconds divided by a million)
            us = self.recorded_us(rid, from_record=from_record)
            if name == "newest":
                key = (1, 0.0, rid) if us is None else (0, -(us / 1_000_000), rid)
            else:  # active_since
                key = None if us is None else (from_us(us), rid)
        self._filed[name][rid] = key
        return key

    # -- patching ------------------------------------------------------------------------------------
    def _add(self, rid: str, life: str) -> None:
        self.lifecycle[rid] = life
        built = self._built
        if "ids" in built:
            insort(built["ids"], rid)
        if "newest" in built:
            insort(built["newest"], self._file("newest", rid, from_record=True))
        if "active_since" in built and life == "active":
            key = self._file("active_since", rid, from_record=True)
            if key is not None:
                insort(built["active_since"], key)
        if "superseded" in built and life == "superseded":
            built["superseded"].add(rid)
        if "category" in built:
            built["category"].setdefault(self._file("category", rid), set()).add(rid)

    def _drop(self, rid: str) -> None:
        if self.lifecycle.pop(rid, None) is None:
            return
        built, filed = self._built, self._filed
        if "ids" in built:
            _remove(built["ids"], rid)
        for name in ("newest", "active_since"):
            key = filed.get(name, {}).pop(rid, None)
            if name in built and key is not None:
                _remove(built[name], key)
        if "superseded" in built:
            built["superseded"].discard(rid)
        category = filed.get("category", {}).pop(rid, None)
        if "category" in built and category is not None:
            members = built["category"].get(category)
            if members is not None:
                members.discard(rid)
                if not members:
                    del built["category"][category]

    def of_categories(self, keys: Iterable[str]) -> set[str]:
        """The ids of any of these categories."""
        index, out = self.categories(), set()
        for key in keys:
            out |= index.get(key, set())
        return out


def _remove(seq: list[Any], item: Any) -> None:
    i = bisect_left(seq, item)
    if i < len(seq) and seq[i] == item:
        del seq[i]


def catalog(engine: Engine, snap: Snapshot) -> Catalog:
    """This engine's catalog, brought to ``snap`` (kept in ``engine.extensions``)."""
    with engine.lock:  # a linked store's engine may be serving a call of its own
        cat = engine.extensions.get(CATALOG)
        if cat is None:
            cat = engine.extensions[CATALOG] = Catalog()
        cat.recorded_source = lambda: _recorded_starts(engine, snap)  # (of this snapshot, the one update brings)
        cat.update(snap)
        return cat


def _recorded_starts(engine: Engine, snap: Snapshot) -> tuple[Collection[str], Mapping[str, int]]:
    """(the ids the temporal projection holds, id -> recorded_at start): the projection brought to ``snap``."""
    proj = reconciled(engine, snap)
    rows = proj.state.conn.execute(f"SELECT id, start_us FROM {proj.dates} WHERE field = 'recorded_at'")
    return proj.sigs.keys(), dict(rows)


def _matching(cat: Catalog, snap: Snapshot, record_filter: RecordFilter, wanted: tuple[str, ...]) -> list[str]:
    """The sorted ids of the available records that pass the filters (only candidates are looked at).

    Filters a record's facets answer (scope, kind, type, tag) are answered by the snapshot's facets, kept per
    snapshot and shared with knowledge_grep's; only a time range builds records, and only the candidates'.
    """
    lifecycle = cat.lifecycle
    if record_filter.criteria == Criteria():
        if record_filter.time_field is None:
            return cat.ids if len(wanted) == 2 else [rid for rid in cat.ids if lifecycle[rid] in wanted]
        candidates: Iterable[str] = cat.ids
    else:
        candidates = sorted(snap.matching(record_filter.criteria))
    kept = [rid for rid in candidates if lifecycle.get(rid) in wanted]
    if record_filter.time_field is None:
        return kept
    records = cat.records
    return [rid for rid in kept if record_filter.passes(records[rid])]


def _kept_matching(cat: Catalog, snap: Snapshot, record_filter: RecordFilter, wanted: tuple[str, ...]) -> list[str]:
    """``_matching``, kept in the catalog's memo."""
    key = (record_filter, wanted)
    ids: list[str] | None = cat.memo.get(key)
    if ids is None:
        if len(cat.memo) >= MEMO_ENTRIES:
            cat.memo.clear()
        ids = cat.memo[key] = _matching(cat, snap, record_filter, wanted)
    return ids


def inventory(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier | None = None) -> dict[str, Any]:
    snap = engine.snapshot()
    queried_at = now_utc()
    record_filter = RecordFilter.from_args(snap, args)
    wanted = ("active", "superseded") if args["lifecycle"] == "all" else (args["lifecycle"],)
    when, extra = args.get("valid_at"), {}
    if when is not None:  # the records in force then (knowtk.query.validity)
        found = validity(engine, snap)
        ids = in_force_ids(found, snap, record_filter, wanted, when)
        extra = {"unplaced": unplaced_count(found, lambda rid: record_filter.passes(snap.records[rid]))}
    else:
        ids = _kept_matching(catalog(engine, snap), snap, record_filter, wanted)
    page = ids[args["offset"] : args["offset"] + args["limit"]]
    rows = []
    for rid in page:
        r = snap.records[rid]
        row = record_summary(r, snap)
        row.update(
            aliases=list(r.aliases),
            supersededBy=snap.superseded_by.get(rid) if snap.lifecycle[rid] == "superseded" else None,
            dates=dates_json(r),
        )
        rows.append(row)
    if when is not None:
        lifecycles_then(rows, found.at(when))
    return {
        **extra,
        "rows": rows,
        "total": len(ids),
        "offset": args["offset"],
        "nextOffset": next_offset(args["offset"], args["limit"], len(ids)),
        "snapshot": snap.fingerprint(record_filter.scope),
        "coverage": coverage(snap, record_filter.scope),
        "freshness": freshness(snap, queried_at),
    }


def full_record(engine: Engine, snap: Snapshot, r: Record, verifier: EvidenceVerifier) -> dict[str, Any] | None:
    """A record whole: frontmatter, body, lifecycle, supersession both ways, every evidence locator.

    None when the file changed since the snapshot (the caller scans again).
    """
    end = snap.chain_ends.get(r.id)
    out = record_summary(r, snap)
    out.update(
        aliases=list(r.aliases),
        status=r.status,
        supersededBy=snap.superseded_by.get(r.id) if snap.lifecycle[r.id] == "superseded" else None,
        supersedes=sorted(snap.supersedes.get(r.id, [])),
        chain=None if end is None else {"current": end.current, "end": end.reason, "steps": list(end.via)},
        dates=dates_json(r),
        expiresAt=r.expires_at.to_json() if r.expires_at else None,
        entities=list(r.entities),
        owner=r.owner,
        dependsOn=list(r.depends_on),
        source=r.source,
        sourceEvent=r.source_event,
        **{"from": r.from_id, "to": r.to_id},
        relation=r.relation,
        origin=r.origin,
        attribution=r.author,
        affectedPaths=list(r.affected_paths),
        category=r.category or r.type,
        reasoning=r.reasoning,
        alternatives=r.alternatives,
        fields=r.fields,
        frontmatter=r.written,
        body=engine.body(r),
        bodyLine=r.body_line,
        evidence=verifier.all(r),
        citation={
            "id": r.id,
            "path": r.path,
            "revision": r.revision,
            "sha256": r.sha256,
            "lineStart": 1,
            "lineEnd": None,
        },
    )
    if out["body"] is None:
        return None  # the file changed between the scan and this read
    if r.profile is not None:  # read by a profile: which keys knowtk inferred rather than the person wrote
        out.update(profile=r.profile, derived=list(r.derived), derivedLines=r.derived_lines)
        links = wikilinks_of(engine, snap.paths, r)
        if links:
            out["links"] = links
    out["citation"]["lineEnd"] = r.body_line + out["body"].count("\n") - (1 if out["body"].endswith("\n") else 0)
    return out


# issue codes that keep a file from being a record, so that knowledge_record can say why an id is absent
EXCLUDING_CODES = frozenset(
    {"id_duplicate", "kind_invalid", "status_invalid", "revision_invalid", "field_invalid", "endpoints_missing"}
)


def unavailable_reason(snap: Snapshot, rid: str) -> dict[str, Any] | None:
    """Why an id has no available record: (code, detail), or None when it is available or unknown."""
    if rid in snap.records:
        reason = snap.unavailable.get(rid)
        return None if reason is None else {"code": reason[0], "detail": reason[1]}
    for issue in snap.issues:
        if issue.id == rid and issue.code in EXCLUDING_CODES:
            return {"code": issue.code, "detail": issue.message}
    return None


def one_record(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    rid = args["id"]
    for _ in range(3):  # a file rewritten between the scan and the read is scanned again
        snap = engine.snapshot()
        reason = unavailable_reason(snap, rid)
        if rid not in snap.records or reason is not None:
            status, record = ("unavailable" if reason else "missing"), None
            break
        status, record = "found", full_record(engine, snap, snap.records[rid], verifier)
        if record is not None:
            break
    else:
        raise StoreUnavailable(snap.records[rid].path, "the file keeps changing while it is read; try again")
    queried_at = now_utc()
    return {
        "status": status,
        "record": record,
        "reason": reason,
        "coverage": coverage(snap, ()),
        "freshness": freshness(snap, queried_at),
        # what a withdrawn or hidden record's file is, never its content: a reinstate names this sha256
        "file": _file_of(snap, rid) if status == "unavailable" else None,
        "suggestions": suggestions(snap, rid, snap.available) if status == "missing" else [],
    }


def _file_of(snap: Snapshot, rid: str) -> dict[str, Any] | None:
    """The path, revision, written status and sha256 of an unavailable record's file (None: no valid file)."""
    if rid not in snap.records:
        return None
    r = snap.records[rid]
    return {"path": r.path, "revision": r.revision, "status": r.status, "sha256": r.sha256}
