"""Structured dates as authored, and the UTC interval each one covers.

A date is either a real ``YYYY-MM-DD`` (it covers ``[D 00:00Z, D+1 00:00Z)``
and claims no instant) or a timestamp with seconds and an explicit offset
(``2026-03-04T15:00:00+01:00``, ``...Z``), which is an instant. Anything
else is refused. Dates are validated from their text: the YAML loader leaves
them as strings, so one impossible date never costs a whole record.

Python's datetime holds UTC instants from 0001-01-01 to 9999-12-31T23:59:59.999999.
A timestamp whose UTC instant falls outside that range (``0001-01-01T00:00:00+01:00``)
is refused like any impossible date. The one day whose end lies past it, 9999-12-31,
ends at ``LAST_INSTANT`` (9999-12-31T23:59:59.999999Z) instead of 10000-01-01T00:00Z,
and that interval is closed at its end, so every instant of the day still overlaps it.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from knowtk.errors import InvalidArgument
from knowtk.model.shapes import shape

__all__ = ["LAST_INSTANT", "DateValue", "format_utc", "parse_bound", "parse_date_value", "parse_instant", "shown"]

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_STAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})")
ONE_DAY = timedelta(days=1)
LAST_INSTANT = datetime.max.replace(tzinfo=UTC)  # stands for 10000-01-01T00:00Z, the end of 9999-12-31


@shape(frozen=True, slots=True)
class DateValue:
    text: str  # as authored
    date_only: bool
    start: datetime  # UTC
    end: datetime  # UTC; start + 1 day for a date (LAST_INSTANT for 9999-12-31), == start for an instant

    def overlaps(self, since: datetime | None, until: datetime | None) -> bool:
        """Inclusive bounds; a date-only value matches any overlapping range."""
        if self.date_only:
            ends_after = since is None or self.end > since or self.end == LAST_INSTANT
            return (until is None or self.start <= until) and ends_after
        return (until is None or self.start <= until) and (since is None or self.start >= since)

    def to_json(self) -> dict[str, object]:
        return {
            "value": self.text,
            "dateOnly": self.date_only,
            "start": format_utc(self.start),
            "end": format_utc(self.end),
        }


# date-only texts seen, and their values: a store's records repeat the same few thousand days (a DateValue is
# frozen, so one object serves them all; at 100k records that was some 8 MB of equal values and datetimes)
_DAYS: dict[str, DateValue | None] = {}
_DAYS_MAX = 1 << 16  # cleared when full (dates of a long span, or many bad ones): a cache, not a record


def parse_date_value(text: object) -> DateValue | None:
    """The DateValue of an authored date, or None when it is not a valid one (one object per date-only text)."""
    if not isinstance(text, str):
        return None
    if len(text) != 10:  # (a date-only text is 10 characters: a timestamp is parsed each time)
        return _parse(text)
    found = _DAYS.get(text, _DAYS)
    if found is _DAYS:
        if len(_DAYS) >= _DAYS_MAX:
            _DAYS.clear()
        found = _DAYS[text] = _parse(text)
    return found  # type: ignore[return-value]


def _parse(text: str) -> DateValue | None:
    m = _DATE.fullmatch(text)
    if m:
        try:
            d = date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            return None
        start = datetime(d.year, d.month, d.day, tzinfo=UTC)
        return DateValue(text, True, start, start + ONE_DAY if d < date.max else LAST_INSTANT)
    m = _STAMP.fullmatch(text)
    if not m:
        return None
    try:
        micro = int((m[7] or "0")[:6].ljust(6, "0"))
        offset = timedelta(0)
        if m[8] != "Z":
            hours, minutes = int(m[8][1:3]), int(m[8][4:6])
            if hours > 23 or minutes > 59:
                return None
            offset = timedelta(hours=hours, minutes=minutes) * (1 if m[8][0] == "+" else -1)
        local = datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), micro)
        instant = (local - offset).replace(tzinfo=UTC)
    except (ValueError, OverflowError):  # not a real time, or its UTC instant is outside years 1 to 9999
        return None
    return DateValue(text, False, instant, instant)


def parse_bound(argument: str, value: object, *, upper: bool) -> datetime | None:
    """A query bound as a UTC instant; a date-only upper bound covers its whole UTC day."""
    if value is None:
        return None
    parsed = parse_date_value(value)
    if parsed is None:
        raise InvalidArgument(
            argument,
            f"{shown(value)} is not a real date or a timestamp with seconds and an explicit offset "
            "whose UTC instant lies in the years 0001 to 9999",
            allowed="YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SS(.fff) with Z or ±HH:MM",
            value=value,
        )
    if parsed.date_only and upper:
        return parsed.end if parsed.end == LAST_INSTANT else parsed.end - timedelta(microseconds=1)
    return parsed.start


def parse_instant(argument: str, value: object, *, now: datetime | None = None) -> datetime:
    """A known-time instant: a timestamp with seconds and an explicit offset, or a date (the end of that UTC day;
    today's date: now). InvalidArgument naming ``argument`` for anything else or for an instant still to come."""
    instant = parse_bound(argument, value, upper=True)
    if instant is None:
        raise InvalidArgument(argument, "is required", allowed="YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SS with Z or ±HH:MM")
    now = now or datetime.now(UTC)
    if instant > now:
        parsed = parse_date_value(value)
        if parsed is None or not parsed.date_only or parsed.start > now:
            raise InvalidArgument(
                argument,
                f"{shown(value)} lies in the future: the store's files are known up to now ({format_utc(now)})",
                allowed="an instant at or before now",
                value=value,
            )
        instant = now  # today's date: the day is not over, its end is now
    return instant


def shown(value: object, limit: int = 200) -> str:
    """An argument's repr for a message: cut to ``limit`` characters, and never failing (an int of
    10**5000 digits has no str() under Python's digit limit)."""
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} too large to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_utc(instant: datetime) -> str:
    """ISO 8601 in UTC with a Z; fractions of a second only when present."""
    instant = instant.astimezone(UTC)
    text = f"{instant.year:04d}-{instant:%m-%dT%H:%M:%S}"  # %Y does not pad years below 1000
    micro = instant.microsecond
    if not micro:
        return text + "Z"
    return text + "." + (f"{micro // 1000:03d}" if micro % 1000 == 0 else f"{micro:06d}") + "Z"
