"""What was in force at an instant (``validAt``): each record's span of validity, derived from the snapshot.

A record is in force at T when its start is at or before T and its end is not before T:

- start: ``occurred_at``, else ``recorded_at`` (a date from the start of its UTC day);
- end: ``expires_at`` when present (in force through it; a date through its whole UTC day); else, for a
  superseded record, the start of its replacement (exclusive); none for an active record.

Withdrawn records, and records unavailable even with expired assertions allowed, are never in force. A
record with neither date, or superseded by a record with neither (or by a missing one), cannot be placed in
time: it is left out, and answers count such records (``unplaced``). A date-only ``validAt`` asks about its
whole UTC day: a record in force at any instant of that day is in force then.

The lifecycle at T is ``active`` for a record in force, ``superseded`` for one whose replacement had
started by then (and whose own ``expires_at`` does not keep it in force), ``expired`` for one whose
``expires_at`` had passed, and none before its start. ``Validity`` keeps the spans of one snapshot's
records in the engine's extensions and patches them at the ids a later snapshot changed; each asked
instant's answer is kept with them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from knowtk.frames import TIME, key
from knowtk.model.datevalues import LAST_INSTANT, DateValue, format_utc, parse_bound
from knowtk.model.records import Record
from knowtk.query.args import BOUND_PATTERN, Param, with_schema
from knowtk.query.common import RecordFilter, changes_to_patch
from knowtk.snapshot.model import Snapshot

if TYPE_CHECKING:
    from knowtk.engine.engine import Engine

__all__ = [
    "ACTIVE",
    "EXPIRED",
    "HINT_VALID",
    "SPAN_COLUMNS",
    "SUPERSEDED",
    "VALIDITY",
    "VALID_AT",
    "Span",
    "ValidAt",
    "Validity",
    "eligible",
    "in_force_ids",
    "in_force_set",
    "lifecycles_then",
    "span_of",
    "start_of",
    "unplaced_count",
    "valid_at",
    "validity",
    "with_spans",
]

VALIDITY = "validity"  # the Validity's key in Engine.extensions
ANSWERS_KEPT = 32  # instants whose answers a Validity keeps
ONE_US = timedelta(microseconds=1)
ACTIVE, SUPERSEDED, EXPIRED = "active", "superseded", "expired"


class ValidAt:
    """An instant asked about, as the UTC instants it covers: one for a timestamp, a whole UTC day for a date.

    A plain class (not a ``@shape``): every command line imports it with the tools' arguments, and a plain
    grep should not pay for building one.
    """

    __slots__ = ("first", "last", "text")

    def __init__(self, text: str, first: datetime, last: datetime) -> None:
        self.text, self.first, self.last = text, first, last  # as given; UTC instants, ``last`` inclusive

    def __repr__(self) -> str:
        return f"ValidAt({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ValidAt) and (self.text, self.first, self.last) == (
            other.text,
            other.first,
            other.last,
        )

    def __hash__(self) -> int:
        return hash((self.text, self.first, self.last))


@functools.partial(with_schema, schema={"type": "string", "pattern": BOUND_PATTERN})
def valid_at(name: str, value: Any) -> ValidAt:
    """The check of ``validAt``: what the date bounds accept (``parse_bound``), refused the same way."""
    first = parse_bound(name, value, upper=False)
    last = parse_bound(name, value, upper=True)
    assert first is not None and last is not None
    return ValidAt(str(value), first, last)


# a validAt timeline row's span, in its frame (Result.plot(validity=True) shades it)
SPAN_COLUMNS = (("valid_from", TIME, key("validFrom")), ("valid_until", TIME, key("validUntil")))
HINT_VALID = {"validAt": "in force then"}  # the MCP listing's short form (a test holds it to its byte budget)
VALID_AT = Param(
    "validAt",
    valid_at,
    doc=(
        "Only records in force at this instant (a date: any time that UTC day), lifecycle as it was then: start "
        "occurred_at else recorded_at; end expires_at, else the replacement's start. Undated records are left "
        "out and counted (unplaced)."
    ),
)


class Span:
    """When one record was in force: from ``start`` through ``last`` (inclusive instants). (A plain class, as
    ``ValidAt`` is.)"""

    __slots__ = ("end", "ended_by", "last", "start")

    def __init__(self, start: datetime, last: datetime, end: datetime | None, ended_by: str | None) -> None:
        self.start = start
        self.last = last  # LAST_INSTANT: no end
        self.end = end  # the end as shown: expires_at's instant or day's end, the replacement's start; None: open
        self.ended_by = ended_by  # why it ends: "expired" (its expires_at), "superseded", or None

    def __repr__(self) -> str:
        return f"Span({self.start!r}, {self.last!r}, {self.end!r}, {self.ended_by!r})"

    def lifecycle(self, first: datetime, last: datetime) -> str | None:
        """active when in force at some instant of [first, last], else why it ended (superseded, expired); None
        before it started."""
        if self.start > last:
            return None
        return ACTIVE if self.last >= first else self.ended_by


def start_of(r: Record | None) -> datetime | None:
    """A record's start: occurred_at, else recorded_at (a date from the start of its UTC day); None: neither."""
    if r is None:
        return None
    value = r.dates.get("occurred_at") or r.dates.get("recorded_at")
    return None if value is None else value.start


def _through(expires: DateValue) -> tuple[datetime, datetime]:
    """(the last instant in force, the end as shown) of an expires_at: a date holds through its whole UTC day."""
    if not expires.date_only:
        return expires.start, expires.start
    return (expires.end if expires.end == LAST_INSTANT else expires.end - ONE_US), expires.end


def span_of(snap: Snapshot, rid: str) -> Span | None:
    """The span of an eligible record; None when it cannot be placed in time."""
    r = snap.records[rid]
    start = start_of(r)
    if start is None:
        return None
    if r.expires_at is not None:
        last, end = _through(r.expires_at)
        return Span(start, last, end, EXPIRED)
    if snap.lifecycle[rid] == SUPERSEDED:
        replaced = start_of(snap.records.get(snap.superseded_by.get(rid) or ""))
        if replaced is None:
            return None  # a replacement missing or undated: when it took over is unknown
        return Span(start, replaced - ONE_US, replaced, SUPERSEDED)
    return Span(start, LAST_INSTANT, None, None)


def eligible(snap: Snapshot, rid: str) -> bool:
    """Whether a record may be in force at some instant: not withdrawn, available with expiry allowed."""
    return (
        rid in snap.records and rid not in snap.unavailable_inactive and snap.lifecycle.get(rid) in (ACTIVE, SUPERSEDED)
    )


class Validity:
    """The spans of one snapshot's eligible records, and the answers of the instants asked so far."""

    def __init__(self) -> None:
        self.generation = -1
        self._snap_id = 0  # id() of the snapshot the spans are of (with its generation: a stored one may share it)
        self.spans: dict[str, Span] = {}
        self.unplaced: set[str] = set()  # eligible records that cannot be placed in time
        self.answers: dict[tuple[datetime, datetime], dict[str, str]] = {}
        self.memo: dict[Any, Any] = {}  # what queries derive from an instant's answer (emptied with it)

    def invalidate(self) -> None:
        """Nothing in state.sqlite: a rollback leaves the snapshot, so the spans hold (kept for the protocol)."""

    def take_repairs(self) -> list[str]:
        return []

    def update(self, snap: Snapshot) -> None:
        """Bring the spans to ``snap``: kept, patched at its changed ids (and what they replace), or rebuilt."""
        if self.generation == snap.generation and self._snap_id == id(snap):
            return
        changed = changes_to_patch(snap, self.generation, len(self.spans))
        self.generation = -1  # until done: a failure half way rebuilds at the next use
        self.answers, self.memo = {}, {}
        if changed is not None:
            # a record's end is its replacement's start: the records a changed one replaces change too
            for rid in _with_replaced(snap, changed):
                self._set(snap, rid)
        else:
            self.spans, self.unplaced = {}, set()
            for rid in snap.records:
                self._set(snap, rid)
        self.generation, self._snap_id = snap.generation, id(snap)

    def _set(self, snap: Snapshot, rid: str) -> None:
        self.spans.pop(rid, None)
        self.unplaced.discard(rid)
        if not eligible(snap, rid):
            return
        span = span_of(snap, rid)
        if span is None:
            self.unplaced.add(rid)
        else:
            self.spans[rid] = span

    def at(self, when: ValidAt) -> dict[str, str]:
        """id -> its lifecycle then, for the placed records started by then: active (in force), superseded
        (replaced by then) or expired (its expires_at passed)."""
        key = (when.first, when.last)
        found = self.answers.get(key)
        if found is None:
            if len(self.answers) >= ANSWERS_KEPT:
                self.answers.clear()
                self.memo.clear()
            first, last = when.first, when.last
            found = {}
            for rid, span in self.spans.items():
                if span.start <= last:
                    found[rid] = ACTIVE if span.last >= first else span.ended_by or ""
            self.answers[key] = found
        return found

    def selected(self, when: ValidAt, wanted: Collection[str]) -> set[str]:
        """The ids whose lifecycle then is one of ``wanted``, kept with the instant's answer."""
        key = ("selected", when.first, when.last, tuple(sorted(wanted)))
        found = self.memo.get(key)
        if found is None:
            states = self.at(when)
            found = self.memo[key] = {rid for rid, life in states.items() if life in wanted}
        return found

    def current(self, snap: Snapshot, rid: str, when: ValidAt) -> str | None:
        """Where superseded wording leads at ``when``: ``superseded_by`` followed to the record in force then."""
        states, seen = self.at(when), {rid}
        while states.get(rid) == SUPERSEDED:
            rid = snap.superseded_by.get(rid) or ""
            if rid in seen:
                return None  # a cycle resolves to nothing
            seen.add(rid)
        return rid if states.get(rid) == ACTIVE else None


def _with_replaced(snap: Snapshot, ids: Iterable[str]) -> set[str]:
    out = set(ids)
    for rid in list(out):
        out.update(snap.supersedes.get(rid, ()))
    return out


def validity(engine: Engine, snap: Snapshot) -> Validity:
    """This engine's validity, brought to ``snap`` (kept in ``engine.extensions``)."""
    with engine.lock:
        found = engine.extensions.get(VALIDITY)
        if found is None:
            found = engine.extensions[VALIDITY] = Validity()
        found.update(snap)
        return found


def lifecycles_then(rows: Iterable[dict[str, Any]], states: dict[str, str], key: str = "id") -> None:
    """Rewrite each row's ``lifecycle`` as it was at the asked instant (``supersededBy`` kept only then)."""
    for row in rows:
        life = states.get(row[key])
        if life is not None:
            row["lifecycle"] = life
            if "supersededBy" in row and life == ACTIVE:
                row["supersededBy"] = None


def with_spans(rows: Iterable[dict[str, Any]], found: Validity) -> None:
    """Add each row's span of validity: ``validFrom`` and ``validUntil`` (None: no end), UTC."""
    for row in rows:
        span = found.spans.get(row["id"])
        row["validFrom"] = None if span is None else format_utc(span.start)
        row["validUntil"] = None if span is None or span.end is None else format_utc(span.end)


def unplaced_count(found: Validity, passes: Callable[[str], bool]) -> int:
    """How many records that cannot be placed in time pass ``passes``."""
    return sum(1 for rid in found.unplaced if passes(rid))


def in_force_set(
    found: Validity, snap: Snapshot, record_filter: RecordFilter, wanted: Collection[str], when: ValidAt
) -> set[str]:
    """The ids whose lifecycle at ``when`` is one of ``wanted`` and that pass the filters (kept)."""
    key = ("set", when.first, when.last, record_filter, tuple(sorted(wanted)))
    ids = found.memo.get(key)
    if ids is None:
        ids = found.selected(when, wanted)
        if record_filter.scope or not record_filter.is_trivial:
            ids = ids & snap.matching(record_filter.criteria)
        if record_filter.time_field is not None:
            records = snap.records
            ids = {rid for rid in ids if record_filter.passes(records[rid])}
        found.memo[key] = ids
    return ids


def in_force_ids(
    found: Validity, snap: Snapshot, record_filter: RecordFilter, wanted: Collection[str], when: ValidAt
) -> list[str]:
    """``in_force_set`` sorted (kept)."""
    key = ("ids", when.first, when.last, record_filter, tuple(sorted(wanted)))
    ids = found.memo.get(key)
    if ids is None:
        ids = found.memo[key] = sorted(in_force_set(found, snap, record_filter, wanted, when))
    return ids
