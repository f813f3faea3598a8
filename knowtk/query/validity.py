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
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from itertools import compress
from typing import TYPE_CHECKING, Any

from knowtk.frames import TIME, key
from knowtk.model.datevalues import LAST_INSTANT, DateValue, format_utc, parse_bound
from knowtk.model.records import Record
from knowtk.query.args import BOUND_PATTERN, Param, with_schema
from knowtk.query.common import RecordFilter, changes_to_patch
from knowtk.snapshot.facets import Criteria, Positions
from knowtk.snapshot.model import Snapshot
from knowtk.snapshot.starts import GONE, NO_START, Starts, to_us

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
ROW_FLAGS_SLACK = 1 << 20  # flags by row are made while the largest rowid is below this plus 4 per record
ONE_US = timedelta(microseconds=1)
ACTIVE, SUPERSEDED, EXPIRED = "active", "superseded", "expired"
# a lifecycle then as a code of a Validity's columns (0: not started then), and back
ACTIVE_CODE, SUPERSEDED_CODE, EXPIRED_CODE = 1, 2, 3
CODES = {ACTIVE: ACTIVE_CODE, SUPERSEDED: SUPERSEDED_CODE, EXPIRED: EXPIRED_CODE}
LIFECYCLES = (None, ACTIVE, SUPERSEDED, EXPIRED)
NEVER = (1 << 63) - 1  # the start of a record that is never in force (not eligible, or not placed): after any instant
NO_END = NO_START  # the end shown of a span without one
LAST_US = to_us(LAST_INSTANT)
UNPLACED = object()  # what ``_span_us`` says of a record that cannot be placed in time
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


def from_us(us: int) -> datetime:
    """Microseconds since the epoch as a UTC instant (``to_us`` back)."""
    return _EPOCH + timedelta(microseconds=us)


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
    """The spans of one snapshot's eligible records, and the answers of the instants asked so far.

    The spans are columns (numpy arrays of microseconds since the epoch) aligned with ``ids``: a record's start
    (``NEVER`` for a record that is not eligible or cannot be placed), the last instant it is in force, the end
    as shown (``NO_END``: none), and why it ends. They are made from the snapshot's starts (``Snapshot.starts``:
    a stored snapshot's are read from its image, no record built), its ``expires_at`` dates (the snapshot index's
    ``expiring``) and its supersessions; an instant's answer is one comparison of two columns, kept as a code per
    record. numpy is imported by the first ``validAt`` query, never by a query without it.
    """

    def __init__(self) -> None:
        self.generation = -1
        self._snap_id = 0  # id() of the snapshot the spans are of (with its generation: a stored one may share it)
        self.ids: list[str] = []
        self.position: dict[str, int] = {}
        self.start: Any = None  # numpy int64 arrays aligned with ids (made by update)
        self.last: Any = None
        self.end: Any = None
        self.ended: Any = None  # numpy int8: 0 no end, else the code of why it ends (SUPERSEDED_CODE, EXPIRED_CODE)
        self.unplaced: set[str] = set()  # eligible records that cannot be placed in time
        self.stored: tuple[str, int] | None = None  # (base, size): the first ``size`` ids are the stored positions
        self.answers: dict[tuple[datetime, datetime], tuple[Any, bytes]] = {}
        self.memo: dict[Any, Any] = {}  # what queries derive from an instant's answer (emptied with it)
        self.shown: dict[str, tuple[str | None, str | None]] = {}  # spans as rows show them, of this snapshot

    def invalidate(self) -> None:
        """Nothing in state.sqlite: a rollback leaves the snapshot, so the spans hold (kept for the protocol)."""

    def take_repairs(self) -> list[str]:
        return []

    def update(self, snap: Snapshot) -> None:
        """Bring the spans to ``snap``: kept, patched at its changed ids (and what they replace), or rebuilt."""
        if self.generation == snap.generation and self._snap_id == id(snap):
            return
        changed = changes_to_patch(snap, self.generation, len(self.ids))
        self.generation = -1  # until done: a failure half way rebuilds at the next use
        self.answers, self.memo, self.shown = {}, {}, {}
        if changed is not None:
            # a record's end is its replacement's start: the records a changed one replaces change too
            self._patch(snap, _with_replaced(snap, changed))
        else:
            self._build(snap)
        self.generation, self._snap_id = snap.generation, id(snap)

    def _build(self, snap: Snapshot) -> None:
        """Every record's span, from the snapshot's columns of starts (one pass in Python over the lifecycles)."""
        import numpy as np

        of_snap = snap.starts()
        ids, column = of_snap.columns()
        n = len(ids)
        starts = np.frombuffer(column, dtype=np.int64) if n else np.zeros(0, np.int64)
        start = starts.copy()
        start[starts == GONE] = NEVER  # a stored id that is no record any more
        last, end = np.full(n, LAST_US, np.int64), np.full(n, NO_END, np.int64)
        ended = np.zeros(n, np.int8)
        position = dict(zip(ids, range(n), strict=True))
        superseded, never = [], [position.get(rid) for rid in snap.unavailable_inactive]
        for rid in [rid for rid, life in snap.lifecycle.items() if life != ACTIVE]:  # (few: one test in the loop)
            if snap.lifecycle[rid] == SUPERSEDED:
                superseded.append(rid)
            else:
                never.append(position.get(rid))
        start[[at for at in never if at is not None]] = NEVER
        unplaced = np.flatnonzero(start == NO_START).tolist()
        for rid, expires in _expiring(snap).items():
            at = position.get(rid)
            if at is not None and start[at] != NEVER and start[at] != NO_START:
                last[at], end[at] = _through_us(expires)
                ended[at] = EXPIRED_CODE
        successor = snap.superseded_by
        for rid in superseded:
            at = position.get(rid)
            if at is None or start[at] == NEVER or start[at] == NO_START or ended[at]:
                continue
            by = position.get(successor.get(rid) or "")
            replaced = NO_START if by is None else int(starts[by])
            if replaced in (NO_START, GONE):  # a replacement missing or undated: when it took over is unknown
                unplaced.append(at)
            else:
                last[at], end[at], ended[at] = replaced - 1, replaced, SUPERSEDED_CODE
        start[unplaced] = NEVER
        self.ids, self.position, self.start, self.last, self.end, self.ended = ids, position, start, last, end, ended
        self.unplaced = {ids[at] for at in unplaced}
        # the stored image's positions, where its ids come first (a patch puts new records after them)
        stored = snap.positions(Criteria())
        self.stored = (stored.base, stored.size) if stored is not None and stored.size == of_snap.stored else None

    def _patch(self, snap: Snapshot, ids: Iterable[str]) -> None:
        """The spans of ``ids`` made again (a record new since is put after the others)."""
        import numpy as np

        starts, added = snap.starts(), list[tuple[str, tuple[int, int, int, int]]]()
        for rid in ids:
            self.unplaced.discard(rid)
            values = _span_us(snap, starts, rid)
            if values is UNPLACED:
                self.unplaced.add(rid)
            row = values if isinstance(values, tuple) else (NEVER, LAST_US, NO_END, 0)
            at = self.position.get(rid)
            if at is None:
                if row[0] != NEVER:
                    self.position[rid] = len(self.ids) + len(added)
                    added.append((rid, row))
                continue
            self.start[at], self.last[at], self.end[at], self.ended[at] = row
        if added:
            self.ids = [*self.ids, *(rid for rid, _ in added)]
            for name, dtype, i in (("start", np.int64, 0), ("last", np.int64, 1), ("end", np.int64, 2)):
                column = np.fromiter((row[i] for _, row in added), dtype, len(added))
                setattr(self, name, np.concatenate((getattr(self, name), column)))
            codes = np.fromiter((row[3] for _, row in added), np.int8, len(added))
            self.ended = np.concatenate((self.ended, codes))

    def _answer(self, when: ValidAt) -> tuple[Any, bytes]:
        """The code of each record's lifecycle at ``when`` (0: not started then), as an array and as bytes."""
        key = (when.first, when.last)
        found = self.answers.get(key)
        if found is None:
            import numpy as np

            if len(self.answers) >= ANSWERS_KEPT:
                self.answers.clear()
                self.memo.clear()
            started = self.start <= to_us(when.last)
            active = started & (self.last >= to_us(when.first))
            codes = np.where(active, ACTIVE_CODE, np.where(started, self.ended, 0)).astype(np.int8)
            found = self.answers[key] = (codes, codes.tobytes())
        return found

    def at(self, when: ValidAt) -> Then:
        """id -> its lifecycle then, for the placed records started by then: active (in force), superseded
        (replaced by then) or expired (its expires_at passed)."""
        return Then(self.position, self._answer(when)[1])

    def selected(self, when: ValidAt, wanted: Collection[str]) -> set[str]:
        """The ids whose lifecycle then is one of ``wanted``, kept with the instant's answer."""
        key = ("selected", when.first, when.last, tuple(sorted(wanted)))
        found = self.memo.get(key)
        if found is None:
            flags = _among(self._answer(when)[0], wanted).tobytes()
            found = self.memo[key] = set(compress(self.ids, flags))
        return found

    def positions(self, when: ValidAt, wanted: Collection[str]) -> Positions | None:
        """``selected`` by the stored position of each record (``Facets.positions``' form): for a reader that keeps
        something per stored position (a keyword projection's rowmap); None where the ids are not stored ones."""
        if self.stored is None:
            return None
        base, size = self.stored
        flags = _among(self._answer(when)[0], wanted)
        later = self.ids[size:]
        extra = tuple(compress(later, flags[size:].tobytes()))
        return Positions(base, size, flags[:size].tobytes(), frozenset(later), extra)

    def flags_by_row(
        self, when: ValidAt, wanted: Collection[str], rowids: Mapping[str, int], version: int
    ) -> bytes | None:
        """``selected`` as one byte per rowid of a table whose rows are the records (``rowids``: id -> rowid, in the
        state named ``version``), the first for rowid 1: 1 at the row of a record kept then, 0 elsewhere; kept with
        the instant's answer. None where a rowid is below 1 or the rowids are too sparse (``_rows_at``)."""
        key = ("flags by row", version, when.first, when.last, tuple(sorted(wanted)))
        found = self.memo.get(key)
        if found is None:
            import numpy as np

            rows = self._rows_at(rowids, version)
            if rows is None:
                return None
            flags = np.zeros(rows[2], np.uint8)
            flags[rows[0] - 1] = _among(self._answer(when)[0], wanted)[rows[1]]
            found = self.memo[key] = flags.tobytes()
        return found

    def _rows_at(self, rowids: Mapping[str, int], version: int) -> tuple[Any, Any, int] | None:
        """(rowids, the position of each one's record in ``ids``, the largest rowid) of the records both hold, kept
        per ``version``; None where a rowid is below 1 (SQL's ``substr`` counts those from the end) or the largest
        is past ``ROW_FLAGS_SLACK`` and 4 a record."""
        key = ("rows at", version)
        if key not in self.memo:
            import numpy as np

            position = self.position
            rows = np.fromiter(rowids.values(), np.int64, len(rowids))
            at = np.fromiter((position.get(rid, -1) for rid in rowids), np.int64, len(rowids))
            held = at >= 0
            usable = not len(rows) or (int(rows.min()) >= 1 and int(rows.max()) <= ROW_FLAGS_SLACK + 4 * len(rows))
            largest = int(rows.max()) if len(rows) else 0
            self.memo[key] = (rows[held], at[held], largest) if usable else None
        found: tuple[Any, Any, int] | None = self.memo[key]
        return found

    def span(self, rid: str) -> Span | None:
        """The span of record ``rid``; None when it is not eligible or cannot be placed in time."""
        at = self.position.get(rid)
        if at is None or self.start[at] == NEVER:
            return None
        end = int(self.end[at])
        return Span(
            from_us(int(self.start[at])),
            from_us(int(self.last[at])),
            None if end == NO_END else from_us(end),
            LIFECYCLES[self.ended[at]],
        )

    def shown_span(self, rid: str) -> tuple[str | None, str | None]:
        """(start, end) of ``span(rid)`` as rows show them, UTC (None: no span, or no end); kept per snapshot."""
        found = self.shown.get(rid)
        if found is None:
            span = self.span(rid)
            if span is None:
                found = (None, None)
            else:
                found = (format_utc(span.start), None if span.end is None else format_utc(span.end))
            self.shown[rid] = found
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


def _among(codes: Any, wanted: Collection[str]) -> Any:
    """A numpy bool per record: whether its code then is one of the lifecycles ``wanted``."""
    flags = codes == -1  # (none)
    for life in wanted:
        if life in CODES:
            flags |= codes == CODES[life]
    return flags


class Then(Mapping[str, str]):
    """An instant's answer: id -> the lifecycle then of each placed record started by then."""

    __slots__ = ("codes", "position")

    def __init__(self, position: dict[str, int], codes: bytes) -> None:
        self.position, self.codes = position, codes

    def __getitem__(self, rid: str) -> str:
        at = self.position.get(rid)
        life = None if at is None else LIFECYCLES[self.codes[at]]
        if life is None:
            raise KeyError(rid)
        return life

    def get(self, rid: str, default: Any = None) -> Any:  # (without the KeyError: a query asks it per row)
        at = self.position.get(rid)
        life = None if at is None else LIFECYCLES[self.codes[at]]
        return default if life is None else life

    def __contains__(self, rid: object) -> bool:
        return isinstance(rid, str) and self.get(rid) is not None

    def __iter__(self) -> Iterator[str]:
        codes = self.codes
        return (rid for rid, at in self.position.items() if codes[at])

    def __len__(self) -> int:
        return len(self.codes) - self.codes.count(0)


def _expiring(snap: Snapshot) -> Mapping[str, DateValue]:
    """id -> expires_at of the records that have one: the snapshot index's (no record built), else the records'."""
    ix = snap.index
    if ix is not None:
        return ix.expiring
    return {rid: r.expires_at for rid, r in snap.records.items() if r.expires_at is not None}


def _span_us(snap: Snapshot, starts: Starts, rid: str) -> tuple[int, int, int, int] | object | None:
    """(start, last, end, why it ends) of one record in microseconds (``span_of``'s rule); UNPLACED, or None when
    it is not eligible."""
    if not eligible(snap, rid):
        return None
    start = starts.of(rid)
    if start == NO_START:
        return UNPLACED
    expires = _expiring(snap).get(rid)
    if expires is not None:
        return (start, *_through_us(expires), EXPIRED_CODE)
    if snap.lifecycle[rid] == SUPERSEDED:
        by = snap.superseded_by.get(rid) or ""
        replaced = starts.of(by) if by in snap.records else NO_START
        if replaced == NO_START:
            return UNPLACED
        return (start, replaced - 1, replaced, SUPERSEDED_CODE)
    return (start, LAST_US, NO_END, 0)


def _through_us(expires: DateValue) -> tuple[int, int]:
    last, end = _through(expires)
    return to_us(last), to_us(end)


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


def lifecycles_then(rows: Iterable[dict[str, Any]], states: Mapping[str, str], key: str = "id") -> None:
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
        row["validFrom"], row["validUntil"] = found.shown_span(row["id"])


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
