"""Why is it (not) here? One record, one grep query: matched, reached as a replacement, or excluded by which rule.

``explain`` answers from the query's own path: the same argument checks, snapshot,
filters, tokenizer and ranked list as ``knowledge_grep`` (``knowtk.query.grep``), and
the hit itself is read from a real grep page. Nothing here matches text
on its own; the one extra FTS5 use is asking, word by word, which words of the
query a record that did not match does contain. It takes any object with a store's
``engine`` and ``verifier`` (``Searchable``), so it needs nothing above the query layer.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Protocol

from knowtk.engine.engine import Engine, KeywordIndex
from knowtk.errors import InvalidArgument, RecordNotFound, StoreChanged, UnexpectedArgument
from knowtk.index.bm25 import Match
from knowtk.index.fts import FtsProjection
from knowtk.index.fts_tables import QueryTerms
from knowtk.model.records import Issue
from knowtk.model.shapes import replace
from knowtk.query.args import plain_text, validate
from knowtk.query.citations import EvidenceVerifier
from knowtk.query.common import RecordFilter
from knowtk.query.grep import grep, parse_terms, ranked_matches
from knowtk.query.tools.grep import MAX_OFFSET
from knowtk.query.tools.grep import PARAMS as GREP_PARAMS
from knowtk.snapshot.model import DEPENDENCY_UNAVAILABLE, NOT_RECORD_NAME, Snapshot, in_scope

__all__ = ["STATUSES", "Searchable", "exclusions", "explain"]

#: ``status`` values: a query answer, or ``eligible`` when no query was given.
STATUSES = ("hit", "replacement", "not_matched", "excluded", "eligible")


class Searchable(Protocol):
    """What ``explain`` reads of a store (``knowtk.Store`` is one): its engine, and the verifier grep cites with."""

    @property
    def engine(self) -> Engine: ...

    @property
    def verifier(self) -> EvidenceVerifier: ...


def explain(store: Searchable, id: str, *, query: str | None = None, **grep_args: Any) -> dict[str, Any]:
    """Why record ``id`` is, or is not, in ``store.grep(query, **grep_args)``.

    ``grep_args`` are grep's (``mode``, ``kind``, ``type``, ``tag``, ``lifecycle``, ``time_field``,
    ``since``, ``until``, ``scope``, ``limit``), checked as grep checks them. ``id`` may also be
    a file path (for files that are not records). Without ``query`` only eligibility is judged.
    An id that no file in the store carries raises :class:`~knowtk.RecordNotFound`.

    Returns a plain dict, every key always present:

    ``id``, ``path``
        the record (``path``: its file; for an excluded file, that file).
    ``query``, ``args``
        the query, and grep's other arguments (snake_case) as given, defaults filled in.
    ``status``
        ``hit`` (a direct match), ``replacement`` (returned for a superseded record that matched),
        ``not_matched`` (eligible, but the words do not match), ``excluded`` (a rule keeps it out),
        or ``eligible`` (no query given and nothing keeps it out).
    ``rank``, ``total``, ``offset``
        1-based rank in the whole answer, the answer's total, and the page ``offset`` that shows it
        (``limit`` as given); ``rank`` is also set for a record ranked beyond the paging window.
    ``score``, ``matches``, ``via``, ``hit``
        from the grep hit: BM25 score (None for replacements), matched fields (``title``,
        ``aliases``, ``body``, or ``["superseded"]``), the earlier record a replacement was reached
        through, and the whole hit dict.
    ``rule``, ``detail``
        the first rule that excludes it (None unless ``excluded``) and that rule's detail dict.
    ``reasons``
        every rule that applies, in pipeline order, as ``{"rule", "detail", "message"}``; for
        ``not_matched`` a single ``not_matched`` reason whose detail says which words are absent.
        Rules: ``not_a_record``, ``invalid``, ``id_duplicate``, ``withdrawn``, ``expired``,
        ``dependency_missing``, ``dependency_unavailable``, ``lifecycle``, ``chain_dead_end``,
        ``scope``, ``filter`` (one per failing filter: ``kind``, ``type``, ``tag``, ``time``),
        ``window`` (ranked beyond offset 500 plus a page), ``index_unavailable``.
    ``chain``
        for a superseded record: ``{"end", "current", "steps"}`` as the snapshot resolves it.
    ``message``
        one sentence for people.
    """
    args = _checked(id, query, grep_args)
    snap = store.engine.snapshot()
    flt = RecordFilter.from_args(snap, args)
    given = {k: grep_args.get(k, _plain(v)) for k, v in args.items() if k not in ("query", "offset")}
    out = _blank(id, query, given)
    rid = _resolve(snap, id)
    if rid is None:
        return _finish(out, [_not_a_record(snap, id, out)])
    out["id"], out["path"] = rid, snap.records[rid].path
    end = snap.chain_ends.get(rid)
    if end is not None:
        out["chain"] = {"end": end.reason, "current": end.current, "steps": list(end.via)}
    reasons = _eligibility(snap, flt, out["args"], rid)
    if query is None:
        out["status"] = "excluded" if reasons else "eligible"
        return _finish(out, reasons)
    return _searched(store, out, snap, flt, args, reasons, grep_args)


def _checked(id: str, query: str | None, grep_args: dict[str, Any]) -> dict[str, Any]:
    """grep's arguments checked as grep checks them (no query: every other one), defaults filled in."""
    if not isinstance(id, str) or not id:
        raise InvalidArgument("id", f"must be a record id or a file path, not {id!r}", allowed="a non-empty string")
    plain_text("id", id)
    if "offset" in grep_args:
        raise UnexpectedArgument("offset", "explain() takes no offset: it finds the record's page itself")
    if query is None:
        params = tuple(p for p in GREP_PARAMS if p.name != "query")
        return validate("knowledge_grep", params, grep_args, python=True)
    return validate("knowledge_grep", GREP_PARAMS, {"query": query, **grep_args}, python=True)


def _blank(id: str, query: str | None, args: dict[str, Any]) -> dict[str, Any]:
    """The answer with every key present, before anything is known: excluded, by no rule yet."""
    return {
        "id": id,
        "path": None,
        "query": query,
        "args": args,
        "status": "excluded",
        "rank": None,
        "total": None,
        "offset": None,
        "score": None,
        "matches": None,
        "via": None,
        "hit": None,
        "rule": None,
        "detail": None,
        "reasons": [],
        "chain": None,
        "message": "",
    }


def _searched(
    store: Searchable,
    out: dict[str, Any],
    snap: Snapshot,
    flt: RecordFilter,
    args: dict[str, Any],
    reasons: list[dict[str, Any]],
    grep_args: dict[str, Any],
) -> dict[str, Any]:
    """Where the query's ranked list puts the record ``out["id"]``, or why it is not in it."""
    engine, rid = store.engine, out["id"]
    terms = parse_terms(engine.state.conn, out["query"], args["mode"])
    index = engine.keyword(snap)
    error = index.error
    try:
        ranked = [] if error else ranked_matches(snap, flt, args["lifecycle"], terms, index.main, index.history)
    except sqlite3.Error as exc:
        error = f"{type(exc).__name__}: {exc}"
    if error:
        return _finish(out, [_reason("index_unavailable", {"error": error}, "the keyword index is unavailable; retry")])
    out["total"] = len(ranked)
    position: dict[str, int] = {}
    for i, (m, current) in enumerate(ranked):
        position.setdefault(current or m.id, i)
    if rid in position:
        return _found(store, out, snap, flt, position[rid], grep_args)
    if not reasons:
        reasons = [_unmatched(index, snap, rid, terms)]
        out["status"] = "not_matched"
    elif reasons[0]["rule"] == "lifecycle" and "current" in reasons[0]["detail"]:
        _replaced(reasons[0], index.history, rid, terms, ranked, position)
    return _finish(out, reasons)


# -- the answer ------------------------------------------------------------------------------


def _found(
    store: Searchable,
    out: dict[str, Any],
    snap: Snapshot,
    flt: RecordFilter,
    index: int,
    grep_args: dict[str, Any],
) -> dict[str, Any]:
    """The record is in the ranked list: read its hit from the real grep page, or say it is out of reach."""
    limit = out["args"]["limit"]
    last_page = (MAX_OFFSET // limit) * limit
    out["rank"] = index + 1
    if index >= last_page + limit:
        detail = {"rank": index + 1, "maxOffset": MAX_OFFSET, "limit": limit, "lastRank": last_page + limit}
        message = (
            f"ranked {index + 1} of {out['total']}, beyond the last page reachable with nextOffset "
            f"(offset {last_page} + limit {limit}); narrow the query or its filters"
        )
        return _finish(out, [_reason("window", detail, message)])
    offset = index - index % limit
    page = _grep_page(store, {"query": out["query"], **grep_args, "offset": offset})
    if page["snapshot"] != snap.fingerprint(flt.scope):
        raise StoreChanged("the store changed while the query was explained; run explain again")
    hit = page["hits"][index - offset]
    out.update(offset=offset, hit=hit, score=hit["score"], matches=hit["matches"], via=hit["via"])
    if hit["via"] is None:
        out["status"] = "hit"
        fields = ", ".join(hit["matches"]) or "no located field"
        out["message"] = f"hit at rank {index + 1} of {out['total']}: matched {fields}, score {hit['score']:.3f}"
    else:
        via = hit["via"]
        out["status"] = "replacement"
        out["message"] = (
            f"replacement at rank {index + 1} of {out['total']}: returned because superseded "
            f"{via['id']} (r{via['revision']}) matched and its chain ends here"
        )
    return out


def _grep_page(store: Searchable, given: dict[str, Any]) -> dict[str, Any]:
    """The grep page ``store.grep(**given)`` answers: the same checks, lock and transaction as ``Store.grep``."""
    engine, verifier = store.engine, store.verifier
    args = validate("knowledge_grep", GREP_PARAMS, given, python=True)
    return engine.run(lambda: grep(engine, args, verifier))


def _replaced(
    reason: dict[str, Any],
    history: FtsProjection,
    rid: str,
    terms: QueryTerms,
    ranked: list[tuple[Match, str | None]],
    position: dict[str, int],
) -> None:
    """For a superseded record in an active search: does it match, and where is its current record?"""
    detail = reason["detail"]
    current = detail["current"]
    rowid = history.ids.get(rid)
    matched = rowid is not None and bool(history.matching(terms, [rowid]))
    detail.update(matched=matched, currentRank=None, currentVia=None)
    note = "it matches the query" if matched else "it does not match the query itself"
    if current in position:
        m, via = ranked[position[current]]
        detail.update(currentRank=position[current] + 1, currentVia=m.id if via else None)
        how = f"reached via {m.id}" if via else "a direct match"
        note += f"; {current} is returned at rank {position[current] + 1} ({how})"
    else:
        note += f"; {current} is not in this answer"
    reason["message"] += "; " + note


def _finish(out: dict[str, Any], reasons: list[dict[str, Any]]) -> dict[str, Any]:
    out["reasons"] = reasons
    if out["status"] == "excluded" and reasons:
        out["rule"], out["detail"] = reasons[0]["rule"], reasons[0]["detail"]
    if not out["message"]:
        if out["status"] == "eligible":
            out["message"] = "eligible: no rule keeps it out of this search (give a query to see whether it matches)"
        else:
            out["message"] = "; ".join(x["message"] for x in reasons)
    return out


def _reason(rule: str, detail: dict[str, Any], message: str) -> dict[str, Any]:
    return {"rule": rule, "detail": detail, "message": message}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


# -- records that are not records --------------------------------------------------------------


def _resolve(snap: Snapshot, given: str) -> str | None:
    """The record id for an id or a record's file path; None when it names no valid record."""
    if given in snap.records:
        return given
    return next((r.id for r in snap.records.values() if r.path == given), None)


def _not_a_record(snap: Snapshot, given: str, out: dict[str, Any]) -> dict[str, Any]:
    """Why a file (by path) or an id (of an excluded file) is not a record; RecordNotFound when nothing has it."""
    if given in snap.excluded:
        paths = [given]
    else:
        paths = sorted({i.path for i in snap.issues if i.id == given and i.path in snap.excluded})
    if not paths:
        referrers = sorted(rid for rid, by in snap.superseded_by.items() if by == given)
        referrers += sorted(rid for rid, r in snap.records.items() if given in r.references)
        hint = f"; {', '.join(referrers)} name{'s' if len(referrers) == 1 else ''} it" if referrers else ""
        raise RecordNotFound(given, f"no file in the store has id or path {given!r}{hint}")
    out["path"] = paths[0]
    issue = _file_issue(snap, paths[0])
    if issue.code == "id_duplicate":
        dup = sorted(p for p, code in snap.excluded.items() if code == "id_duplicate" and _has_id(snap, p, issue.id))
        out["id"] = issue.id
        return _reason("id_duplicate", {"paths": dup}, issue.message + "; every file of a duplicated id is excluded")
    detail = {"path": paths[0], "code": issue.code, "message": issue.message}
    if issue.id is not None:
        out["id"] = issue.id
        return _reason("invalid", detail, f"{paths[0]} is not a valid record: {issue.message}")
    return _reason("not_a_record", detail, f"{paths[0]} is not a record: {issue.message}")


def _has_id(snap: Snapshot, path: str, rid: str | None) -> bool:
    return any(i.path == path and i.id == rid for i in snap.issues)


def _file_issue(snap: Snapshot, path: str) -> Issue:
    """The issue that excluded a file.

    ``Snapshot.excluded`` records the file's *first* issue, which for a record refused late (a
    relationship without endpoints) may be an earlier, harmless one (an invalid date); the refusal
    is the file's last issue from the scan, and a duplicate's is its ``id_duplicate`` issue.
    """
    mine = [i for i in snap.issues if i.path == path]
    dup = [i for i in mine if i.code == "id_duplicate"]
    if dup:
        return dup[0]
    if not mine and snap.excluded[path] == NOT_RECORD_NAME:
        message = "its profile does not read a file of this name as a record (not_records, docs/profiles.md)"
        return Issue(path, None, NOT_RECORD_NAME, message)
    return mine[-1] if mine else Issue(path, None, snap.excluded[path], "the file is not a record")


# -- eligibility, in the order the query applies it ------------------------------------------------


def exclusions(
    snap: Snapshot, flt: RecordFilter, args: dict[str, Any], rid: str, *, searched: bool = False
) -> list[dict[str, Any]]:
    """Every rule that keeps the valid record ``rid`` out of a grep with these checked ``args`` (snake_case)
    and their filter, in the order the query applies them, as ``explain``'s ``reasons``; [] when none does.
    ``searched``: ``rid`` is a row of the keyword projections, so available (an unavailable record has no row),
    and the snapshot's table of unavailable records is not read (7 ms to parse at 300k records)."""
    return _eligibility(snap, flt, args, rid, searched=searched)


def _eligibility(
    snap: Snapshot, flt: RecordFilter, args: dict[str, Any], rid: str, *, searched: bool = False
) -> list[dict[str, Any]]:
    r = snap.records[rid]
    lifecycle = args["lifecycle"]
    if not searched and rid in snap.unavailable:
        return [_unavailable(snap, rid)]
    reasons: list[dict[str, Any]] = []
    life = snap.lifecycle_at(rid)
    filtered = rid  # the record the filters apply to: a replacement's current record
    if life == "superseded" and lifecycle == "active":
        end = snap.chain_ends[rid]
        steps = " → ".join([rid, *end.via])
        if end.current is None:
            detail = {"end": end.reason, "steps": list(end.via), "last": end.via[-1] if end.via else rid}
            return [
                _reason("chain_dead_end", detail, f"superseded, and its chain {steps} ends in nothing ({end.reason})")
            ]
        filtered = end.current
        detail = {"lifecycle": life, "searched": lifecycle, "current": end.current, "steps": list(end.via)}
        message = f"superseded: an active search returns its current record instead ({steps})"
        reasons.append(_reason("lifecycle", detail, message))
    elif life == "active" and lifecycle == "superseded":
        detail = {"lifecycle": life, "searched": lifecycle}
        reasons.append(_reason("lifecycle", detail, f"{life}, and lifecycle={lifecycle!r} searches only {lifecycle}"))
    if not in_scope(r.path, flt.scope):
        detail = {"path": r.path, "scope": list(flt.scope)}
        reasons.append(_reason("scope", detail, f"{r.path} is outside the scope {', '.join(flt.scope)}"))
    reasons.extend(_filters(snap, flt, args, filtered, of=rid))
    return reasons


def _unavailable(snap: Snapshot, rid: str) -> dict[str, Any]:
    code, ref = snap.unavailable[rid]
    r = snap.records[rid]
    if code == "withdrawn":
        stale = next((i.message for i in snap.issues if i.id == rid and i.code == "stale_withdrawn"), None)
        message = stale or "withdrawn: excluded in every mode"
        return _reason("withdrawn", {"safeguard": stale is not None}, message)
    if code == "expired":
        expires = r.expires_at.to_json() if r.expires_at else None
        value = expires["value"] if expires else "?"
        return _reason("expired", {"expiresAt": expires}, f"expired (expires_at {value}): no longer in force")
    if code == "dependency_missing":
        message = f"needs {ref}, which is not a valid record in the store"
        return _reason("dependency_missing", {"dependency": ref}, message)
    cause, seen, step = [], set(), ref
    while step is not None and step in snap.unavailable and step not in seen:
        seen.add(step)
        why, nxt = snap.unavailable[step]
        cause.append({"id": step, "reason": why, "detail": nxt})
        step = nxt if why == DEPENDENCY_UNAVAILABLE else None
    root = cause[-1] if cause else {"id": ref, "reason": "unavailable"}
    message = f"needs {ref}, which is unavailable ({root['id']}: {root['reason']})"
    return _reason("dependency_unavailable", {"dependency": ref, "cause": cause}, message)


def _filters(snap: Snapshot, flt: RecordFilter, args: dict[str, Any], rid: str, *, of: str) -> list[dict[str, Any]]:
    """One reason per filter ``rid`` fails (``of``'s current record, or ``of`` itself), each judged alone."""
    r = snap.records[rid]
    on = "" if rid == of else f" (applied to its current record {rid})"
    field = flt.time_field
    dated = r.dates.get(field) if field else None
    missing = [t for t in flt.tags or () if t not in r.tags]
    window = f"{args['since'] or '…'} to {args['until'] or '…'}"
    aspects: tuple[tuple[str, bool, dict[str, Any], dict[str, Any], str], ...] = (
        ("kind", flt.kinds is not None, {"kinds": flt.kinds}, {"wanted": _plain(flt.kinds)}, f"kind {r.kind}"),
        ("type", flt.types is not None, {"types": flt.types}, {"wanted": sorted(flt.types or ())}, f"type {r.type}"),
        (
            "tag",
            flt.tags is not None,
            {"tags": flt.tags},
            {"wanted": _plain(flt.tags), "missing": missing},
            f"no tag {', '.join(missing)} (tags: {', '.join(r.tags) or 'none'})",
        ),
        (
            "time",
            field is not None,
            {"time_field": field, "since": flt.since, "until": flt.until},
            {"field": field, "since": args["since"], "until": args["until"]},
            f"{field} {dated.text if dated else 'absent'}, outside {window}",
        ),
    )
    out = []
    for name, used, only, wanted, has in aspects:
        if used and not replace(RecordFilter(), **only).passes(r):
            detail = {"filter": name, "record": rid, **wanted}
            out.append(_reason("filter", detail, f"the {name} filter leaves it out{on}: {has}"))
    return out


def _unmatched(index: KeywordIndex, snap: Snapshot, rid: str, terms: QueryTerms) -> dict[str, Any]:
    """Which words of the query the record holds, asked of its own FTS5 row one word at a time."""
    proj = index.main if snap.lifecycle_at(rid) == "active" else index.history
    rowid = proj.ids.get(rid)
    words = list(dict.fromkeys(terms.tokens))
    present = [w for w in words if rowid is not None and proj.matching(QueryTerms((w,), "all"), [rowid])]
    absent = [w for w in words if w not in present]
    detail = {"mode": terms.mode, "words": words, "present": present, "absent": absent}
    if terms.mode == "phrase" and not absent:
        message = "has every word, but never adjacent and in order within one field (mode phrase)"
    elif terms.mode == "any":
        message = "holds none of the words (mode any)"
    else:
        message = f"lacks {', '.join(absent)} (mode {terms.mode}: every word must match)"
    return _reason("not_matched", detail, message)
