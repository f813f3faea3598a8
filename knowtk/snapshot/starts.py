"""Each record's start in time, without building the record: what ``validAt`` places records by.

A record starts at its ``occurred_at``, else its ``recorded_at`` (a date from the start of its UTC day), as
the *built* record has them (a profile derives them from the file). ``knowtk.query.validity`` places every
record by it, and the end of a superseded record is its replacement's start: building every record of a
stored snapshot to read one date cost a new process's first ``validAt`` query ~0.8 s at 100k records, so a
snapshot gives the starts through ``Snapshot.starts()``, as it gives the filters' facets:

- a snapshot whose records are all built (``RecordStarts``) reads them from the records;
- a stored snapshot (``StartColumns``) from the image part ``record_starts`` (``knowtk.snapshot.image_write``):
  one packed column of microseconds since the epoch aligned with the stored ids, and the starts of the records
  a patch of the image set or removed kept over them by id;
- a snapshot built on a stored one (``LayeredStarts``) from its own changed records over the stored column.

A start depends on the record's file alone (and on ``knowtk.yaml``, which an image is bound to), so a patch
carries the starts of the records whose file it carries, and nothing else. An image written before this part
existed has none: its snapshot builds its records for them (``ImageParts.starts`` says None).
"""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

from knowtk.model.records import Record

__all__ = [
    "GONE",
    "NO_START",
    "LayeredStarts",
    "RecordStarts",
    "StartColumns",
    "Starts",
    "encode_starts",
    "start_us",
    "to_us",
]

NO_START = -(1 << 63)  # a record with neither date: it cannot be placed in time
GONE = NO_START + 1  # ``Starts.columns``: a stored id that is no record any more
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
_TYPE = "q"  # 8-byte signed integers, little-endian


def to_us(instant: datetime) -> int:
    """A UTC instant as integer microseconds since the epoch."""
    return (instant - _EPOCH) // _ONE_US


def start_us(r: Record) -> int:
    """A record's start (occurred_at, else recorded_at) in microseconds since the epoch; ``NO_START``: neither."""
    value = r.dates.get("occurred_at") or r.dates.get("recorded_at")
    return NO_START if value is None else to_us(value.start)


def encode_starts(values: Iterable[int]) -> list[str]:
    """The stored form of a column of starts: [typecode, base64 of its little-endian bytes]."""
    packed = array(_TYPE, values)
    if sys.byteorder != "little":
        packed.byteswap()
    return [_TYPE, base64.b64encode(packed.tobytes()).decode("ascii")]


def _decode(data: Any) -> array[int]:
    """A stored column back (ValueError: not one)."""
    code, text = data
    column = array(_TYPE)
    if code != _TYPE or column.itemsize != 8:
        raise ValueError(f"start column typecode {code!r}")
    column.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder != "little":
        column.byteswap()
    return column


class Starts:
    """The starts of a snapshot's records."""

    def of(self, rid: str) -> int:
        """One record's start (``NO_START``: neither date; KeyError: no such record)."""
        raise NotImplementedError

    def columns(self) -> tuple[list[str], array[int]]:
        """Every record once, and at the same position its start (a new list and column each call): the stored
        ids first, in their stored order (``stored``: how many; ``GONE`` at a record removed since), then the
        records new since. A reader that keeps something per stored position (a keyword projection's rowmap)
        finds a record's there."""
        raise NotImplementedError

    @property
    def stored(self) -> int:
        """How many of ``columns``' first ids are the stored ids at their stored positions (0: none is)."""
        return 0

    @property
    def cheap(self) -> bool:
        """False where reading every start builds records that are not built yet (an image stored without them)."""
        return True


class RecordStarts(Starts):
    """The starts of records that are built already (a snapshot's dict of records)."""

    def __init__(self, records: Mapping[str, Record]) -> None:
        self.records = records

    def of(self, rid: str) -> int:
        return start_us(self.records[rid])

    @property
    def cheap(self) -> bool:
        return isinstance(self.records, dict)

    def columns(self) -> tuple[list[str], array[int]]:
        ids = list(self.records)
        return ids, array(_TYPE, map(start_us, self.records.values()))


class StartColumns(Starts):
    """A stored snapshot's starts: a column aligned with the stored ids, under what later patches set (None:
    removed)."""

    def __init__(self, data: Any, ids: Callable[[], Sequence[str]], over: dict[str, int | None]) -> None:
        self.column = _decode(data)
        self._read_ids, self.over = ids, over

    @cached_property
    def ids(self) -> Sequence[str]:
        found = self._read_ids()
        if len(found) != len(self.column):
            raise ValueError("the start column does not match the stored ids")
        return found

    @cached_property
    def _position(self) -> dict[str, int]:
        return dict(zip(self.ids, range(len(self.column)), strict=True))

    def of(self, rid: str) -> int:
        if rid in self.over:
            found = self.over[rid]
            if found is None:
                raise KeyError(rid)
            return found
        return self.column[self._position[rid]]

    @property
    def stored(self) -> int:
        return len(self.column)

    def columns(self) -> tuple[list[str], array[int]]:
        ids, column = list(self.ids), array(_TYPE, self.column)
        return _over(ids, column, self.over.items(), self._position) if self.over else (ids, column)


def _over(
    ids: list[str], column: array[int], changes: Iterable[tuple[str, int | None]], position: Mapping[str, int] | None
) -> tuple[list[str], array[int]]:
    """``ids`` and ``column`` with ``changes`` (id -> start, None: removed) made in place: a stored id's start
    set at its position (``GONE``: removed), a new id's put after the others."""
    if position is None:
        position = dict(zip(ids, range(len(ids)), strict=True))
    for rid, value in changes:
        at = position.get(rid)
        if at is not None:
            column[at] = GONE if value is None else value
        elif value is not None:
            ids.append(rid)
            column.append(value)
    return ids, column


class LayeredStarts(Starts):
    """The starts of a ``Layered`` snapshot: its changed records (``top``) over the stored starts, ``gone`` removed."""

    def __init__(self, base: Callable[[], Starts], top: Mapping[str, Record], gone: Collection[str]) -> None:
        self._base, self.top, self.gone = base, top, gone

    @cached_property
    def base(self) -> Starts:
        return self._base()

    @property
    def cheap(self) -> bool:
        return self.base.cheap

    def of(self, rid: str) -> int:
        found = self.top.get(rid)
        if found is not None:
            return start_us(found)
        if rid in self.gone:
            raise KeyError(rid)
        return self.base.of(rid)

    @property
    def stored(self) -> int:
        return self.base.stored

    def columns(self) -> tuple[list[str], array[int]]:
        ids, column = self.base.columns()
        if not self.top and not self.gone:
            return ids, column
        changes: list[tuple[str, int | None]] = [(rid, None) for rid in self.gone]
        changes += [(rid, start_us(r)) for rid, r in self.top.items()]
        return _over(ids, column, changes, None)
