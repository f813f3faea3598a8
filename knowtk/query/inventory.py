"""knowledge_records (the exhaustive inventory) and knowledge_record (one record, whole).

Neither depends on FTS5. The inventory lists every available record that
passes the filters, sorted by id, with unbounded offsets, so that "what is
in the store" never rests on a ranked search.
"""

from __future__ import annotations

from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import StoreUnavailable
from knowtk.model.records import Record
from knowtk.query.args import Param, integer, text
from knowtk.query.citations import EvidenceVerifier
from knowtk.query.common import (
    FILTER_PARAMS,
    RecordFilter,
    coverage,
    freshness,
    next_offset,
    record_summary,
)
from knowtk.query.wikilinks import wikilinks_of
from knowtk.snapshot.model import Snapshot
from knowtk.state import now_utc

__all__ = ["RECORDS_PARAMS", "RECORD_PARAMS", "full_record", "inventory", "one_record"]

RECORDS_PARAMS = (
    *FILTER_PARAMS,
    Param("limit", integer(1, 1000), 100),
    Param("offset", integer(0), 0),
)
RECORD_PARAMS = (Param("id", text(200), required=True),)


def dates_json(r: Record) -> dict[str, Any]:
    return {name: value.to_json() for name, value in r.dates.items()}


def inventory(engine: Engine, a: dict[str, Any]) -> dict[str, Any]:
    snap = engine.snapshot()
    queried_at = now_utc()
    flt = RecordFilter.from_args(snap, a)
    wanted = ("active", "superseded") if a["lifecycle"] == "all" else (a["lifecycle"],)
    ids = sorted(
        rid
        for rid, r in snap.records.items()
        if rid not in snap.unavailable and snap.lifecycle[rid] in wanted and flt.passes(r)
    )
    page = ids[a["offset"] : a["offset"] + a["limit"]]
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
    return {
        "rows": rows,
        "total": len(ids),
        "offset": a["offset"],
        "nextOffset": next_offset(a["offset"], a["limit"], len(ids)),
        "snapshot": snap.fingerprint(flt.scope),
        "coverage": coverage(snap, flt.scope),
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


def one_record(engine: Engine, a: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    rid = a["id"]
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
    }
