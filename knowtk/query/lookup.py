"""knowledge_lookup: exact ID, full title or alias; never fuzzy.

An exact (case-sensitive) ID wins. Otherwise the query is normalised (NFKC,
lowercase, trimmed, whitespace collapsed) and compared with every eligible
record's normalised title and aliases: one record is ``found``, several are
``ambiguous`` (all of them listed), none is ``missing``. A ``missing`` answer
lists ``suggestions`` (``knowtk.query.suggest``): close ids and names,
which never change its ``status``. Lookup does not use FTS5, so it answers
while the keyword index is unavailable.
"""

from __future__ import annotations

from typing import Any

from knowtk.engine.engine import Engine
from knowtk.query.citations import EvidenceVerifier
from knowtk.query.common import coverage, freshness, record_summary
from knowtk.query.suggest import suggestions
from knowtk.query.validity import ValidAt, lifecycles_then, unplaced_count, validity
from knowtk.snapshot.model import Snapshot, in_scope, normalize_name
from knowtk.state import now_utc

__all__ = ["lookup", "lookup_record"]


def lookup_record(r: Any, snap: Snapshot) -> dict[str, Any]:
    row = record_summary(r, snap)
    row["aliases"] = list(r.aliases)
    row["citation"] = {
        "id": r.id,
        "path": r.path,
        "revision": r.revision,
        "sha256": r.sha256,
        "lineStart": 1,
        "lineEnd": r.body_line - 1,
    }
    return row


def lookup(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier | None = None) -> dict[str, Any]:
    snap = engine.snapshot()
    queried_at = now_utc()
    scope = snap.normalize_scope(args["scope"])
    wanted = ("active", "superseded") if args["lifecycle"] == "all" else (args["lifecycle"],)
    when: ValidAt | None = args.get("valid_at")
    found = None if when is None else validity(engine, snap)
    states = None if found is None or when is None else found.at(when)  # validAt: the lifecycle then

    def eligible(rid: str) -> bool:
        if states is not None:
            return states.get(rid) in wanted and in_scope(snap.records[rid].path, scope)
        return snap.available(rid) and snap.lifecycle[rid] in wanted and in_scope(snap.records[rid].path, scope)

    query = args["query"]
    status, matched_by, record, candidates = "missing", None, None, []
    if query in snap.records and eligible(query):
        status, matched_by = "found", "id"
        record = lookup_record(snap.records[query], snap)
        candidates = [record]
    else:
        key = normalize_name(query)
        ids = sorted(rid for rid in snap.lookup_names(query) if eligible(rid))
        candidates = [lookup_record(snap.records[rid], snap) for rid in ids]
        if len(ids) == 1:
            r = snap.records[ids[0]]
            status, record = "found", candidates[0]
            matched_by = "title" if r.title and normalize_name(r.title) == key else "alias"
        elif ids:
            status, matched_by = "ambiguous", "name"
    extra = {}
    if found is not None and states is not None:
        lifecycles_then(candidates, states)
        named = {query, *snap.lookup_names(query)}
        extra["unplaced"] = unplaced_count(found, lambda rid: rid in named and in_scope(snap.records[rid].path, scope))
    answer = {
        **extra,
        "status": status,
        "matchedBy": matched_by,
        "record": record,
        "candidates": candidates,
        "coverage": coverage(snap, scope),
        "freshness": freshness(snap, queried_at),
        # beside the exact answer, never instead of it; looked for only when nothing was found
        "suggestions": suggestions(snap, query, eligible, lifecycles=wanted, scope=scope)
        if status == "missing"
        else [],
    }
    return answer
