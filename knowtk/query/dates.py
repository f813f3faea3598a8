"""Dates and Chronicle: knowledge_timeline and the chronicle tools, read from the temporal projection.

Each query reconciles the temporal projection (``knowtk.index.temporal``) with its snapshot, then lets
SQLite select and sort the dated rows: the time field, the range or calendar window, the exact
``record.type``, eligibility, the entity's explicit associations, and event claims standing for
their source. Python then folds claims into their source rows (``group: "source"``), pages, and
renders rows. The choices the seed leaves open are written down in ``docs/dates.md``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument, StateError
from knowtk.index.temporal import DATE_ROW_SHIFT, TemporalProjection, from_us, reconciled, to_us
from knowtk.model.datevalues import format_utc
from knowtk.model.records import Record
from knowtk.query.citations import EvidenceVerifier
from knowtk.query.common import coverage, freshness, lifecycle_of, next_offset
from knowtk.query.validity import ValidAt, Validity, lifecycles_then, validity, with_spans
from knowtk.snapshot.model import Snapshot
from knowtk.state import Contention, now_utc

__all__ = [
    "BUDGET_BYTES",
    "LAST_SEEN_ROWS",
    "chronicle_day",
    "chronicle_last_seen",
    "chronicle_since",
    "timeline",
]

BUDGET_BYTES = 24 * 1024  # knowledge_timeline: compact UTF-8 JSON of rows + sources
LAST_SEEN_ROWS = 5
OCCURRED = "occurred_at"
KEPT = "knowtk_kept"  # validAt: the SQL function that says whether an id is among the records kept then
FLAGGED = "flagged"  # Select.among: the records kept then are flagged by rowid in the :kept blob
UTC_ZONE = ZoneInfo("UTC")
DAY_US = 86_400_000_000
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_OFFSET = re.compile(r"(?:Z|([+-])(\d{2}):(\d{2}))$")
_WIKI_LINK = re.compile(r"\[\[([^\[\]|#]+)(?:[|#][^\[\]]*)?\]\]")


# -- selecting dated rows in SQLite ------------------------------------------------------------


@dataclass(frozen=True)
class Select:
    """Which dated rows a query wants (bounds in microseconds, inclusive)."""

    field: str = OCCURRED
    since: int | None = None
    until: int | None = None
    calendar: tuple[int, int, int, int] | None = None  # date-only [d0, d1) and instants [t0, t1)
    kind: str | None = None  # exact record.type
    entity: str | None = None
    inactive: bool = False  # include_inactive: superseded and expired too
    descending: bool = False
    group: bool = False  # group: "source" (sources of the entity keep their own page rows)
    among: str | None = None  # validAt: which ids are kept (FLAGGED, else ``KEPT``), not the lifecycle


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    value: str
    date_only: bool
    start: int
    end: int
    kind: str
    source: str | None
    is_source: bool  # a source of the selected entity


def _eligible(p: TemporalProjection, s: Select) -> str:
    """The records eligible for the query, as a subquery that SQLite flattens into each join.

    A common table expression named twice is materialized without an index, and every join with it
    scanned each projected record once per dated row (16.7 s for a three-month chronicle at 100k);
    flattened, each join is a primary-key or index lookup in the records table.
    """
    strict = "" if s.inactive else " WHERE lifecycle = 'active' AND strict = 1"
    if s.among == FLAGGED:  # the records in force at validAt: a byte per rowid, read in place (no call into Python)
        strict = " WHERE substr(:kept, rowid, 1) = x'01'"
    elif s.among is not None:  # a set's own membership test, called per row
        strict = f" WHERE {KEPT}(id)"
    return f"(SELECT id, kind, type, source, source_event FROM {p.records}{strict})"


def _ctes(p: TemporalProjection, s: Select) -> str:
    """The entity's matching records (``WITH`` ...), or nothing without an entity."""
    if s.entity is None:
        return ""
    elig = _eligible(p, s)
    ctes = [
        # about the entity: it is one of the record's entities, its owner, or a relationship endpoint
        f"about AS (SELECT DISTINCT l.id FROM {p.links} l JOIN {elig} e ON e.id = l.id "
        "WHERE l.target = :entity AND l.role IN ('entity', 'owner', 'from', 'to'))",
        # its sources: the sources of records about it, and the far ends of its relationships
        f"sources AS (SELECT l.target AS id FROM {p.links} l JOIN about a ON a.id = l.id WHERE l.role = 'source' "
        f"UNION SELECT o.target FROM {p.links} l JOIN {elig} e ON e.id = l.id JOIN {p.links} o ON o.id = l.id "
        "WHERE l.target = :entity AND l.role IN ('from', 'to') AND o.role IN ('from', 'to') "
        "AND o.target != :entity)",
        f"direct AS (SELECT id FROM about UNION SELECT id FROM {elig} WHERE source = :entity "
        "UNION SELECT id FROM sources)",
        # an event claim stands for its source, so it goes wherever its source goes
        f"matched AS (SELECT id FROM direct UNION SELECT e.id FROM {elig} e JOIN direct d ON d.id = e.source "
        "WHERE e.source_event = 1)",
    ]
    return "WITH " + ", ".join(ctes) + " "


def _fetch(
    p: TemporalProjection,
    snap: Snapshot,
    s: Select,
    page: tuple[int, int] | None = None,
    bound: dict[str, Any] | None = None,
) -> tuple[list[Hit], int]:
    """The dated rows of the query in order, and how many there are.

    With ``page`` (offset, limit), SQLite counts the rows and returns that page only, walking the
    range index in its order; without, every row (the callers that fold or show them all). ``bound``: the
    parameters the selection among the records kept then binds (``_in_force``).
    """
    where = ["d.field = :field"]
    low, high = None, None  # bounds of start_us that the range index walks (implied by the conditions below)
    if s.since is not None:
        where.append("(d.start_us >= :since OR d.end_us > :since)")  # instants from since; days overlapping it
        low = s.since - DAY_US  # a value lasts a day at most: nothing starting a day before since reaches it
    if s.until is not None:
        where.append("d.start_us <= :until")
    if s.calendar is not None:
        where.append(
            "(CASE d.date_only WHEN 1 THEN d.start_us >= :d0 AND d.start_us < :d1 "
            "ELSE d.start_us >= :t0 AND d.start_us < :t1 END)"
        )
        d0, d1, t0, t1 = s.calendar
        low, high = min(d0, t0) - 1, max(d1, t1)
    if low is not None:
        where.append("d.start_us > :low")
    if high is not None:
        where.append("d.start_us < :high")
    if s.kind is not None:
        where.append("e.type = :kind")
    elig = _eligible(p, s)
    joined = elig
    if s.among == FLAGGED:  # a date's rowid names its record's (DATE_ROW_SHIFT): its flag, read without a join
        where.append(f"substr(:kept, d.rowid >> {DATE_ROW_SHIFT}, 1) = x'01'")
        joined = f"(SELECT id, kind, type, source FROM {p.records})"  # only kept records are flagged
    if s.field == OCCURRED and s.kind is None:  # a dated event claim replaces its source's row
        represented = (
            f"NOT EXISTS (SELECT 1 FROM {elig} c JOIN {p.dates} cd ON cd.id = c.id AND cd.field = '{OCCURRED}' "
            "WHERE c.source = d.id AND c.source_event = 1)"
        )
        where.append(f"(d.id IN (SELECT id FROM sources) OR {represented})" if s.group else represented)
    is_source = "d.id IN (SELECT id FROM sources)" if s.entity is not None else "0"
    # an entity's records drive the join (a few index lookups); otherwise the range index does
    dated = f"matched m CROSS JOIN {p.dates} d ON d.id = m.id" if s.entity is not None else f"{p.dates} d"
    desc = " DESC" if s.descending else ""
    body = f"FROM {dated} JOIN {joined} e ON e.id = d.id WHERE {' AND '.join(where)}"
    # the count reads no column of the record: a flagged row's record is in the records table, joined for nothing
    counted = body if joined == elig or s.kind is not None else f"FROM {dated} WHERE {' AND '.join(where)}"
    sql = (
        f"{_ctes(p, s)}SELECT d.id, d.value, d.date_only, d.start_us, d.end_us, e.kind, e.source, {is_source} "
        f"{body} ORDER BY d.start_us{desc}, d.end_us{desc}, d.id{desc}"
    )
    params = dict(field=s.field, since=s.since, until=s.until, kind=s.kind, entity=s.entity, low=low, high=high)
    params.update(zip(("d0", "d1", "t0", "t1"), s.calendar or (None,) * 4, strict=True))
    params.update(bound or {})
    conn = p.state.conn
    if page is None:
        rows = conn.execute(sql, params).fetchall()
        total = len(rows)
    else:
        (total,) = conn.execute(f"{_ctes(p, s)}SELECT count(*) {counted}", params).fetchone()
        # an offset past the rows skips them all: capped, as SQLite takes no integer past 64 bits
        paged = {**params, "offset": min(page[0], total), "limit": page[1]}
        rows = conn.execute(f"{sql} LIMIT :limit OFFSET :offset", paged).fetchall()
    if any(r[0] not in snap.records for r in rows):  # the reconcile in this transaction made them this snapshot's
        raise Contention(f"{p.dates} holds records this snapshot does not")
    return [Hit(r[0], r[1], bool(r[2]), r[3], r[4], r[5], r[6], bool(r[7])) for r in rows], total


@contextmanager
def _projection_errors(engine: Engine) -> Iterator[None]:
    """A failing projection is refused, never answered with an empty or partial timeline."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StateError(engine.state_path, f"the temporal projection is unavailable ({exc})") from exc


def _select(
    engine: Engine,
    snap: Snapshot,
    s: Select,
    page: tuple[int, int] | None = None,
    kept: Collection[str] | None = None,
) -> tuple[TemporalProjection, list[Hit], int]:
    """``_fetch`` on the reconciled projection; ``kept``: the ids a selection ``among`` them keeps."""
    with _projection_errors(engine):
        proj = reconciled(engine, snap)
        if kept is not None:  # (the statements after it in this call ask the same set)
            proj.state.conn.create_function(KEPT, 1, kept.__contains__)
        return proj, *_fetch(proj, snap, s, page)


def _in_force(
    proj: TemporalProjection, s: Select, found: Validity, when: ValidAt, wanted: Collection[str]
) -> tuple[Select, dict[str, Any]]:
    """The selection among the records kept at ``when`` on the reconciled projection, and what its statements bind.

    A byte per row of the records table, by rowid (the mirror's ``row_ids``), tested in SQL: asking Python per
    row cost about 1.2 µs a row, most of a range that cannot end at the instant. Where the rowids are too
    sparse for it, the set's own membership test.
    """
    flags = found.flags_by_row(when, wanted, proj.row_ids(), proj.rows_version)
    if flags is not None:
        return replace(s, among=FLAGGED), {"kept": flags}
    proj.state.conn.create_function(KEPT, 1, found.selected(when, wanted).__contains__)
    return s, {}


# -- rows ----------------------------------------------------------------------------------------


def associations(r: Record) -> list[str]:
    """The row's ``entities``: the record's explicit entities, owner and relationship endpoints."""
    ends = (r.from_id, r.to_id) if r.kind == "relationship" else ()
    return list(dict.fromkeys(x for x in (*r.entities, r.owner, *ends) if x))


def _row(snap: Snapshot, h: Hit, field: str) -> dict[str, Any]:
    r = snap.records[h.id]
    return {
        "id": r.id,
        "kind": r.kind,
        "type": r.type,
        "title": r.title,
        "summary": r.summary,
        "lifecycle": lifecycle_of(r.id, snap),
        "path": r.path,
        "timeField": field,
        "value": h.value,
        "dateOnly": h.date_only,
        "start": format_utc(from_us(h.start)),
        "end": format_utc(from_us(h.end)),
        "entities": associations(r),
    }


def _source_row(snap: Snapshot, rid: str) -> dict[str, Any]:
    """A source summary for includeSources: a row at the source's occurrence (nulls when it has none)."""
    v = snap.records[rid].dates.get(OCCURRED)
    when = (v.text, v.date_only, to_us(v.start), to_us(v.end)) if v else ("", False, 0, 0)
    row = _row(snap, Hit(rid, *when, kind="", source=None, is_source=False), OCCURRED)
    if v is None:
        row.update(value=None, dateOnly=None, start=None, end=None)
    return row


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _response(snap: Snapshot, proj: TemporalProjection, queried_at: datetime, **parts: Any) -> dict[str, Any]:
    return {
        **parts,
        "snapshot": snap.fingerprint(()),
        "coverage": coverage(snap, ()),
        "freshness": freshness(snap, queried_at, proj.indexed_at),
    }


def _check_range(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and since > until:
        raise InvalidArgument("since", "is after until", allowed="since <= until")


# -- group: "source" -----------------------------------------------------------------------------


def _authored_day(h: Hit) -> tuple[str, int, int]:
    """A source's date as (YYYY-MM-DD, [start, end) in UTC): its own day when date-only, else the
    calendar day in the offset its timestamp was written with (00:15+01:00 on the 23rd is the 23rd)."""
    if h.date_only:
        return h.value, h.start, h.end
    m = _OFFSET.search(h.value)
    offset = 0
    if m and m[1]:
        offset = (int(m[2]) * 60 + int(m[3])) * 60_000_000 * (1 if m[1] == "+" else -1)
    days = (h.start + offset) // DAY_US
    first = days * DAY_US - offset
    return (date(1970, 1, 1) + timedelta(days=days)).isoformat(), first, first + DAY_US


def _fold(hits: list[Hit]) -> list[Hit]:
    """Drop the claims that their source's row stands for: those dated on the source's date.

    A claim keeps its own row when its source is not a row of this result (undated, ineligible,
    out of range, or not connected to the entity) or when it is dated on another day.
    """
    days = {h.id: _authored_day(h) for h in hits if h.is_source}
    out = []
    for h in hits:
        day = days.get(h.source or "") if h.kind == "claim" else None
        if day is not None and (h.value == day[0] if h.date_only else day[1] <= h.start < day[2]):
            continue
        out.append(h)
    return out


def _note(engine: Engine, r: Record) -> str | None:
    """A record's body as a row summary: without its title heading, None when empty or changed since the scan."""
    body = engine.body(r)
    if body is None:
        return None
    text = body.strip()
    if text.startswith("# "):
        text = text.partition("\n")[2].strip()
    return text or None


def _source_details(
    engine: Engine, snap: Snapshot, proj: TemporalProjection, s: Select, ids: list[str], bound: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """summary, claims and links of each source row on the page (``bound``: as ``_fetch``'s)."""
    if not ids:
        return {}
    conn, ctes, elig = proj.state.conn, _ctes(proj, s), _eligible(proj, s)
    params = {"entity": s.entity, "page": json.dumps(ids), **bound}
    page = "(SELECT value FROM json_each(:page))"
    notes: dict[str, list[str]] = {sid: [] for sid in ids}
    relationships = (
        f"{ctes}SELECT o.target, l.id FROM {proj.links} l JOIN {elig} e ON e.id = l.id "
        f"JOIN {proj.links} o ON o.id = l.id WHERE l.target = :entity AND l.role IN ('from', 'to') "
        f"AND o.role IN ('from', 'to') AND o.target IN {page} ORDER BY l.id"
    )
    events = f"{ctes}SELECT source, id FROM {elig} WHERE source_event = 1 AND source IN {page} ORDER BY id"
    for sql in (relationships, events):  # the relationship's body first, else the source's event claim
        for sid, rid in conn.execute(sql, params):
            if rid in snap.records and rid not in notes[sid]:
                notes[sid].append(rid)
    counts = dict(
        conn.execute(
            f"{ctes}SELECT e.source, count(*) FROM about a JOIN {elig} e ON e.id = a.id "
            f"WHERE e.kind = 'claim' AND e.source_event = 0 AND e.source IN {page} GROUP BY e.source",
            params,
        )
    )
    out = {}
    for sid in ids:
        summary = next((t for rid in notes[sid] if (t := _note(engine, snap.records[rid]))), None)
        summary = summary or snap.records[sid].summary
        found = dict.fromkeys(m.strip() for m in _WIKI_LINK.findall(summary or ""))
        links = [x for x in found if snap.available(x, include_inactive=s.inactive)]
        out[sid] = {"summary": summary, "claims": counts.get(sid, 0), "links": links}
    return out


def _within_budget(
    snap: Snapshot, rendered: Iterable[dict[str, Any]], with_sources: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None, bool | None]:
    """(rows, sources, sourcesTruncated) of a timeline page that fits BUDGET_BYTES.

    Rows come with their sources (when asked) while both fit: the page ends early rather than
    outgrow the budget, so following nextOffset loses nothing. The first row is always taken; its
    source alone may not fit (sourcesTruncated).
    """
    rows: list[dict[str, Any]] = []
    sources: dict[str, dict[str, Any]] = {}
    truncated = False
    used = 4 if with_sources else 2  # the brackets of rows and of sources
    for row in rendered:
        cost = _size(row) + 1
        sid = snap.records[row["id"]].source
        source = None
        if with_sources and sid is not None and sid in snap.records and sid not in sources:
            source = (sid, _source_row(snap, sid))
        extra = 0 if source is None else _size(source[1]) + 1
        if rows and used + cost + extra > BUDGET_BYTES:
            break
        rows.append(row)
        used += cost
        if source is not None and used + extra > BUDGET_BYTES:
            truncated = True
        elif source is not None:
            sources[source[0]] = source[1]
            used += extra
    return rows, (list(sources.values()) if with_sources else None), (truncated if with_sources else None)


# -- the tools -----------------------------------------------------------------------------------


def timeline(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    _check_range(args["since"], args["until"])
    group = args["group"] == "source"
    if group:
        if args["entity"] is None:
            raise InvalidArgument("group", "'source' groups one entity's timeline: give entity too")
        if args["kind"] is not None:
            raise InvalidArgument("kind", "does not combine with group 'source'", allowed="omit kind")
        if args["time_field"] != OCCURRED:
            raise InvalidArgument("timeField", "group 'source' takes occurrence time only", allowed=(OCCURRED,))
    s = Select(
        field=args["time_field"],
        since=None if args["since"] is None else to_us(args["since"]),
        until=None if args["until"] is None else to_us(args["until"]),
        kind=args["kind"],
        entity=args["entity"],
        inactive=args["eligibility"] == "include_inactive",
        descending=args["order"] == "desc",
        group=group,
    )
    snap = engine.snapshot()
    queried_at = now_utc()
    offset = args["offset"]
    valid = _valid_at(engine, snap, args, s) if args["valid_at"] is not None else None
    with _projection_errors(engine):
        proj = reconciled(engine, snap)
        bound: dict[str, Any] = {}
        if valid is not None:  # (every statement of this call, _source_details too, asks the same records)
            s, bound = _in_force(proj, valid[0], valid[1], args["valid_at"], valid[3])
        if group:  # folding needs every row: a claim's source may be on another page
            hits = _fold(_fetch(proj, snap, s, None, bound)[0])
            total, window = len(hits), hits[offset : offset + args["limit"]]
        else:
            window, total = _fetch(proj, snap, s, (offset, args["limit"]), bound)
        details = _source_details(engine, snap, proj, s, [h.id for h in window if group and h.is_source], bound)
    rendered = ({**_row(snap, h, s.field), **details.get(h.id, {})} for h in window)
    rows, sources, truncated = _within_budget(snap, rendered, args["include_sources"])
    extra = {}
    if valid is not None:
        lifecycles_then(rows, valid[1].at(args["valid_at"]))
        with_spans(rows, valid[1])
        extra["unplaced"] = valid[2]
    return _response(
        snap,
        proj,
        queried_at,
        **extra,
        rows=rows,
        total=total,
        offset=offset,
        nextOffset=next_offset(offset, len(rows), total),  # the budget may end a page early
        sources=sources,
        sourcesTruncated=truncated,
    )


def _valid_at(
    engine: Engine, snap: Snapshot, args: dict[str, Any], s: Select
) -> tuple[Select, Validity, int, tuple[str, ...]]:
    """validAt: (the selection among the records kept then, the snapshot's spans, how many rows the records that
    cannot be placed in time would have given, the lifecycles then kept)."""
    found = validity(engine, snap)
    wanted: tuple[str, ...] = ("active", "superseded", "expired") if s.inactive else ("active",)
    # the rows the records that cannot be placed would have given: counted once per snapshot and selection
    key = ("timeline unplaced", s)
    unplaced = found.memo.get(key, 0 if not found.unplaced else None)
    if unplaced is None:
        unplaced = found.memo[key] = _select(engine, snap, replace(s, among="unplaced"), (0, 0), found.unplaced)[2]
    kept = replace(s, among="in force")
    if s.field == OCCURRED:  # an occurrence is its record's start: a row dated after the instant is not kept then
        last = to_us(args["valid_at"].last)
        kept = replace(kept, until=last if s.until is None else min(s.until, last))
    return kept, found, unplaced, wanted


def chronicle_day(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    """One calendar day (or its Monday-Sunday week) in a zone: instants by local time, dates by calendar date."""
    zone: tzinfo = args["time_zone"] or UTC_ZONE
    first: date = args["date"]
    if args["week"]:
        first -= timedelta(days=first.weekday())
    days = 7 if args["week"] else 1

    def midnight(d: date, later: int, tz: tzinfo) -> int:
        """Local midnight ``later`` days after ``d`` in UTC µs; counted, not built, past 9999-12-31."""
        ordinal = d.toordinal() + later
        near = datetime.combine(date.fromordinal(min(ordinal, date.max.toordinal())), time(), tz)
        return (ordinal - EPOCH_ORDINAL) * DAY_US - (near.utcoffset() or timedelta(0)) // timedelta(microseconds=1)

    window = (
        midnight(first, 0, UTC),
        midnight(first, days, UTC),
        midnight(first, 0, zone),
        midnight(first, days, zone),
    )
    s = Select(calendar=window, kind=args["kind"], entity=args["entity"])
    snap = engine.snapshot()
    queried_at = now_utc()
    proj, hits, _ = _select(engine, snap, s)
    rows = []
    for h in hits:
        row = _row(snap, h, OCCURRED)
        if h.date_only:  # a calendar date in any zone: no instant to convert
            day = date.fromisoformat(h.value)
            end = (day + timedelta(days=1)).isoformat() if day < date.max else "10000-01-01"
            row.update(localStart=day.isoformat(), localEnd=end)
        else:
            local = from_us(h.start).astimezone(zone).isoformat()
            row.update(localStart=local, localEnd=local)
        rows.append(row)
    name = getattr(zone, "key", None) or str(zone)
    return _response(snap, proj, queried_at, rows=rows, total=len(rows), offset=0, nextOffset=None, timeZone=name)


def chronicle_since(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    """What occurred in a range, oldest first (occurrence time, never recording time)."""
    _check_range(args["since"], args["until"])
    until = None if args["until"] is None else to_us(args["until"])
    s = Select(since=to_us(args["since"]), until=until, kind=args["kind"], entity=args["entity"])
    snap = engine.snapshot()
    return _paged(engine, snap, now_utc(), s, args["offset"], args["limit"])


def chronicle_last_seen(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    """The latest dated context for an entity at or before a bound (default now), latest first."""
    snap = engine.snapshot()
    queried_at = now_utc()
    s = Select(until=to_us(args["occurred_on_or_before"] or queried_at), entity=args["entity"], descending=True)
    out = _paged(engine, snap, queried_at, s, 0, LAST_SEEN_ROWS)
    out["nextOffset"] = None  # older context is knowledge_timeline's (entity, until, order: desc)
    return out


def _paged(engine: Engine, snap: Snapshot, queried_at: datetime, s: Select, offset: int, limit: int) -> dict[str, Any]:
    proj, hits, total = _select(engine, snap, s, (offset, limit))
    rows = [_row(snap, h, s.field) for h in hits]
    return _response(
        snap,
        proj,
        queried_at,
        rows=rows,
        total=total,
        offset=offset,
        nextOffset=next_offset(offset, limit, total),
    )
