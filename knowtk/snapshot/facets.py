"""A record's filter facets: what a query's filters read of it, without building the record.

``RecordFilter`` (knowtk.query.common) reads a record's folder (for the scope), kind, type and
tags, all as the *built* record has them (a profile derives them from the file). Building every
record of a stored snapshot to read four values cost a new process's first filtered query 5.8 s at
100k records (cProfile), so a snapshot gives them through ``Snapshot.facets()``:

- a snapshot whose records are all built (``RecordFacets``) reads them from the records;
- a stored snapshot (``FacetColumns``) from the image part ``record_facets``
  (knowtk.snapshot.image_write): per facet its vocabulary and a column of indexes into it, aligned
  with the stored ids and packed as a little-endian array (a record's tags: their indexes one
  after the other, and where each record's end), and the facets of the records a patch of the
  image set or removed kept over them by id;
- a snapshot built on a stored one (``LayeredFacets``) from its own changed records over the
  stored columns, the way ``Layered`` keeps its records.

``select`` answers a filter with one pass over the columns (each vocabulary entry tested once, a
tag's holders found by ``array.index``), ``of`` gives one record's facets. ``positions`` answers it
by stored position (a byte per record, no id touched), for a reader that keeps something per stored
position: the keyword rows' rowids (knowtk.index.fts ``rowmap``), so a new process's first filter
neither reads the rows table nor matches ids.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Collection, Container, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from itertools import compress, repeat
from typing import Any, NamedTuple

from knowtk.model.records import Record

__all__ = [
    "Criteria",
    "Facet",
    "FacetColumns",
    "Facets",
    "LayeredFacets",
    "Positions",
    "RecordFacets",
    "both_flags",
    "encode_columns",
    "facet_of",
    "in_folder",
    "loads_columns",
]


class Facet(NamedTuple):
    """What the filters read of one record: its folder ("" at the store's root), kind, type and tags."""

    folder: str
    kind: str
    type: str
    tags: tuple[str, ...]


def facet_of(r: Record) -> Facet:
    return Facet(r.path.rpartition("/")[0], r.kind, r.type, r.tags)


def in_folder(folder: str, scope: tuple[str, ...]) -> bool:
    """Whether a file in ``folder`` lies in ``scope`` (() is the whole store): ``in_scope`` of its path."""
    if not scope:
        return True
    return any(folder == prefix or folder.startswith(prefix + "/") for prefix in scope)


class Criteria(NamedTuple):
    """The facet filters of one query (None: any value)."""

    scope: tuple[str, ...] = ()
    kinds: Container[str] | None = None
    types: Container[str] | None = None
    tags: tuple[str, ...] | None = None

    def passes(self, f: Facet) -> bool:
        return (
            in_folder(f.folder, self.scope)
            and (self.kinds is None or f.kind in self.kinds)
            and (self.types is None or f.type in self.types)
            and (self.tags is None or all(t in f.tags for t in self.tags))
        )


class Positions(NamedTuple):
    """A filter's answer by the stored position of each record (``Facets.positions``): the records that pass are
    those at the positions ``flags`` holds but ``apart``, and ``extra``."""

    base: str  # which stored ids the positions are of (the digest of the image's record_ids part)
    size: int  # how many stored ids
    flags: bytes | None  # a byte per stored position, 1 where its record passes (None: every one)
    apart: frozenset[str]  # ids whose stored position says nothing now (changed or removed since)
    extra: tuple[str, ...]  # ids set apart or new that pass
    facets: str | None = None  # the digest of the facet columns the flags are read from (None: not known)


class Facets:
    """The facets of a snapshot's records."""

    def of(self, rid: str) -> Facet:
        """One record's facets (KeyError: no such record)."""
        raise NotImplementedError

    def select(self, criteria: Criteria) -> list[str]:
        """The ids of the records whose facets pass ``criteria``, each once."""
        raise NotImplementedError

    def selected(self, criteria: Criteria) -> frozenset[str]:
        """``select`` as a set."""
        return frozenset(self.select(criteria))

    def positions(self, criteria: Criteria) -> Positions | None:
        """``select`` by stored position; None where the records are not stored ones."""
        return None

    def scalars(self) -> Iterator[tuple[str, str, str, str]]:
        """(id, folder, kind, type) of every record, each once, in no set order (a count reads them all)."""
        for rid in self.select(Criteria()):
            f = self.of(rid)
            yield rid, f.folder, f.kind, f.type


class RecordFacets(Facets):
    """The facets of records that are built already (a snapshot's dict of records)."""

    def __init__(self, records: Mapping[str, Record]) -> None:
        self.records = records

    def of(self, rid: str) -> Facet:
        return facet_of(self.records[rid])

    def select(self, criteria: Criteria) -> list[str]:
        passes = criteria.passes
        return [rid for rid, r in self.records.items() if passes(facet_of(r))]

    def scalars(self) -> Iterator[tuple[str, str, str, str]]:
        for rid, r in self.records.items():
            yield rid, r.path.rpartition("/")[0], r.kind, r.type


SCALARS = ("folder", "kind", "type")  # one value per record; tags are a list per record
_WIDTHS = {"B": 1, "H": 2, "I": 4}  # the array typecodes a column is stored as, and their bytes (little-endian)


def _pack(values: Sequence[int]) -> list[str]:
    """A column of small ints as [typecode, base64 of its little-endian bytes]: parsed in a few ms at 1M."""
    top = max(values, default=0)
    code = next(c for c, width in _WIDTHS.items() if top < 1 << (8 * width))
    packed = array(code, values)
    if sys.byteorder != "little":
        packed.byteswap()
    return [code, base64.b64encode(packed.tobytes()).decode("ascii")]


def _unpack(data: Any, size: int | None) -> array[int]:
    """A packed column back (ValueError: not ``size`` values)."""
    code, text = data
    if code not in _WIDTHS or array(code).itemsize != _WIDTHS[code]:
        raise ValueError(f"facet column typecode {code!r}")
    column = array(code)
    # (binascii's strict mode checks the alphabet in C: b64decode(validate=True) runs a regular expression
    # over the text first, ~7 ms of a 300k records' column of tag ends)
    column.frombytes(binascii.a2b_base64(text, strict_mode=True))
    if sys.byteorder != "little":
        column.byteswap()
    if size is not None and len(column) != size:  # (the part's digest vouches for the values)
        raise ValueError("a facet column does not match the stored ids")
    return column


def _packed_size(data: list[Any]) -> int:
    """How many values a packed column holds, from its text alone (ValueError: no whole number of them)."""
    code, text = data
    if code not in _WIDTHS:
        raise ValueError(f"facet column typecode {code!r}")
    size = len(text) // 4 * 3 - text[-2:].count("=") if len(text) % 4 == 0 else -1
    if size < 0 or size % _WIDTHS[code]:
        raise ValueError("a facet column's text is not whole values")
    return size // _WIDTHS[code]


def encode_columns(facets: Iterable[Facet]) -> dict[str, Any]:
    """The stored form of facets in order: per facet its vocabulary, and per record the index of its value
    (its tags: their indexes one after the other, and where each record's end)."""
    vocab: dict[str, dict[str, int]] = {name: {} for name in Facet._fields}
    # (C arrays of 4-byte ints, not lists: a million records' columns as lists of ints were ~90 MB of a 1M
    # build's peak; a code or an end past 2**31 would need more tags than a process holds)
    columns: dict[str, array[int]] = {name: array("i") for name in SCALARS}
    flat: array[int] = array("i")
    ends: array[int] = array("i")
    for f in facets:
        for name in SCALARS:
            codes, value = vocab[name], getattr(f, name)
            columns[name].append(codes.setdefault(value, len(codes)))
        tags = vocab["tags"]
        flat.extend(tags.setdefault(t, len(tags)) for t in f.tags)
        ends.append(len(flat))
    out: dict[str, Any] = {name: list(vocab[name]) for name in Facet._fields}
    for name in SCALARS:
        out[name + "_at"] = _pack(columns[name])
    out["tags_at"], out["tags_end"] = _pack(flat), _pack(ends)
    return out


PACKED = (*(name + "_at" for name in SCALARS), "tags_at", "tags_end")  # the columns ``encode_columns`` packs


def loads_columns(text: bytes) -> Any:
    """``json.loads`` of ``encode_columns``' stored text, its packed columns cut out first: JSON's scanner reads a
    string a character at a time (6 ms of 300k records' 3.5 MB, nearly all of it the columns' base64), where the
    base64 alphabet holds no quote, so each column ends at the next one (found in C). A key written ``"name": [``
    cannot lie inside a string (its quotes would be escaped). Any other text is parsed as it is."""
    columns: dict[str, tuple[int, int]] = {}
    for name in PACKED:
        key = f'"{name}": ["'.encode()
        at = text.find(key)
        start = at + len(key) + 5  # (past the typecode and '", "')
        if at < 0 or text[start - 4 : start] != b'", "':
            return json.loads(text)
        columns[name] = (start, text.find(b'"', start))
    cuts = sorted(columns.values())
    if any(end < 0 for _, end in cuts):
        return json.loads(text)
    pieces, last = [], 0
    for start, end in cuts:
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    data = json.loads(b"".join(pieces))  # (the vocabularies, and each column's typecode with an empty text)
    for name, (start, end) in columns.items():
        packed = data.get(name)
        if not (isinstance(packed, list) and len(packed) == 2 and packed[1] == ""):
            return json.loads(text)
        packed[1] = text[start:end].decode("ascii")
    return data


class FacetColumns(Facets):
    """A stored snapshot's facets: columns aligned with the stored ids, under what later patches set (None: removed)."""

    def __init__(
        self,
        data: Mapping[str, Any],
        ids: Sequence[str] | Callable[[], Sequence[str]],
        over: dict[str, Facet | None],
        *,
        base: str | None = None,
        digest: str | None = None,
        on_damage: Callable[[Exception], Exception] | None = None,
    ) -> None:
        """``ids``: the stored ids, or what reads them when first needed (a filter answered by position,
        ``positions``, needs none: parsing 100k ids cost a new process's first filter ~7 ms); they must be as
        many as the columns' records (``ids`` raises ValueError otherwise). ``on_damage``: what a column
        found damaged when it is unpacked raises (its ValueError when None)."""
        self._read_ids = ids if callable(ids) else lambda: ids
        self.over, self.base = over, base  # base: the stored ids' digest (``Positions.base``)
        self.digest = digest  # the columns' part's digest (``Positions.facets``)
        self._on_damage = on_damage
        self.vocab: dict[str, list[str]] = {name: data[name] for name in Facet._fields}
        for name, values in self.vocab.items():
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"facet vocabulary {name!r} is not a list of strings")
        # each column unpacked when a filter first reads it (a kind filter reads one of five: ~10 ms at 300k)
        self._packed = {name: data[name] for name in (*(s + "_at" for s in SCALARS), "tags_at", "tags_end")}
        for packed in self._packed.values():
            if not (isinstance(packed, list) and len(packed) == 2 and isinstance(packed[1], str)):
                raise ValueError("a facet column is not [typecode, base64]")
        self.size = _packed_size(self._packed["tags_end"])  # (an end per record: the records' count)
        self._columns: dict[str, array[int]] = {}
        if not callable(ids):
            self.ids  # noqa: B018 (checked against the columns now)

    def column(self, name: str) -> array[int]:
        """The column ``name`` ("folder", "kind", "type", "tags_at": the tags' codes, "tags_end"), unpacked at its
        first use (a damaged one raises what ``on_damage`` makes of the ValueError)."""
        found = self._columns.get(name)
        if found is None:
            packed = self._packed[name + "_at" if name in SCALARS else name]
            try:
                found = _unpack(packed, None if name == "tags_at" else self.size)
                if name == "tags_at" and self.size and self.column("tags_end")[-1] != len(found):
                    raise ValueError("facet tag ends are out of order")  # (the part's digest vouches for the order)
            except (ValueError, binascii.Error) as exc:
                raise (self._on_damage(exc) if self._on_damage is not None else exc) from exc
            self._columns[name] = found
        return found

    @property
    def tag_ends(self) -> array[int]:
        return self.column("tags_end")

    @property
    def tag_codes(self) -> array[int]:
        return self.column("tags_at")

    @cached_property
    def ids(self) -> Sequence[str]:
        """The stored ids, aligned with the columns (read at the first use)."""
        found = self._read_ids()
        if len(found) != self.size:
            raise ValueError("a facet column does not match the stored ids")
        return found

    @cached_property
    def _position(self) -> dict[str, int]:
        return {rid: i for i, rid in enumerate(self.ids)}

    def of(self, rid: str) -> Facet:
        over = self.over
        if rid in over:
            found = over[rid]
            if found is None:
                raise KeyError(rid)
            return found
        i = self._position[rid]
        vocab, column, ends = self.vocab, self.column, self.tag_ends
        tags = vocab["tags"]
        start = ends[i - 1] if i else 0
        return Facet(
            vocab["folder"][column("folder")[i]],
            vocab["kind"][column("kind")[i]],
            vocab["type"][column("type")[i]],
            tuple(tags[code] for code in self.tag_codes[start : ends[i]]),
        )

    def _stored(self, criteria: Criteria) -> list[str]:
        """The ids at the stored positions whose facets pass ``criteria`` (a patch's records not set apart)."""
        ids, flags = self.ids, self._flags(criteria)
        if flags is None:
            return list(ids)
        return list(compress(ids, flags))

    def _flags(self, criteria: Criteria) -> bytes | None:
        """A byte per stored position, 1 where its facets pass ``criteria`` (None: every one passes)."""
        n, found = self.size, None
        for name, wanted in zip(SCALARS, _wanted(criteria), strict=True):
            if wanted is None:
                continue
            vocab = self.vocab[name]
            ok = {code for code, value in enumerate(vocab) if wanted(value)}
            if len(ok) < len(vocab):  # (in C: a Python loop over every record cost ~8 ms a filter at 100k)
                column = self.column(name)
                found = _flags(column, ok) if found is None else both_flags(found, _flags(column, ok))
        if criteria.tags is not None:
            held = bytearray(n)
            for i in self._tagged(criteria.tags):
                held[i] = 1
            found = bytes(held) if found is None else both_flags(found, bytes(held))
        return found

    def positions(self, criteria: Criteria) -> Positions | None:
        if self.base is None:
            return None
        over, passes = self.over, criteria.passes
        extra = tuple(rid for rid, f in over.items() if f is not None and passes(f))
        return Positions(self.base, self.size, self._flags(criteria), frozenset(over), extra, self.digest)

    def select(self, criteria: Criteria) -> list[str]:
        found, over = self._stored(criteria), self.over
        if over:
            found = [rid for rid in found if rid not in over]
            found += [rid for rid, f in over.items() if f is not None and criteria.passes(f)]
        return found

    def scalars(self) -> Iterator[tuple[str, str, str, str]]:
        # the columns mapped to their values in C (zip, map): a Python step per record only where a patch set it apart
        over = self.over
        values = [map(self.vocab[name].__getitem__, self.column(name)) for name in SCALARS]
        stored = zip(self.ids, *values, strict=True)
        yield from stored if not over else (row for row in stored if row[0] not in over)
        for rid, f in over.items():
            if f is not None:
                yield rid, f.folder, f.kind, f.type

    def selected(self, criteria: Criteria) -> frozenset[str]:
        # the stored records' ids as a set first: the few a patch set apart are then taken out one by one,
        # where a pass over every selected id cost ~7 ms for 82k of them at 300k records
        over = self.over
        passing = [rid for rid, f in over.items() if f is not None and criteria.passes(f)]
        return frozenset(self._stored(criteria)).difference(over).union(passing)

    def _tagged(self, wanted: tuple[str, ...]) -> set[int]:
        """The positions of the records holding every tag of ``wanted``."""
        code_of = {tag: code for code, tag in enumerate(self.vocab["tags"])}
        found: set[int] | None = None
        ends, codes = self.tag_ends, self.tag_codes
        for tag in dict.fromkeys(wanted):
            code = code_of.get(tag)
            if code is None:
                return set()
            places = _places(codes, code)  # (each record's, found in C by bisection)
            holding = set(map(bisect_right, repeat(ends, len(places)), places))
            found = holding if found is None else found & holding
        return found if found is not None else set(range(self.size))


def _flags(column: array[int], ok: Container[int]) -> bytes:
    """One byte per record of the column: 1 where its code is in ``ok``, else 0."""
    if column.typecode == "B":  # a byte per code: mapped through a table of the 256 codes
        return column.tobytes().translate(bytes(code in ok for code in range(256)))
    return bytes(map(ok.__contains__, column))


def both_flags(a: bytes, b: bytes) -> bytes:
    """Two flag strings ANDed byte by byte (as big ints: in C)."""
    both = int.from_bytes(a, "little") & int.from_bytes(b, "little")
    return both.to_bytes(len(a), "little")


def _places(codes: array[int], code: int) -> list[int]:
    """Every index of ``code`` in ``codes``: a byte's found by ``re`` in the bytes (a loop of ``array.index``
    and a bisection, a Python step per record holding a common tag, cost ~28 ms for 11k at 300k records)."""
    if codes.typecode == "B":
        return [m.start() for m in re.finditer(re.escape(bytes((code,))), codes.tobytes())]
    found: list[int] = []
    at = _next(codes, code, 0)  # array.index scans in C
    while at >= 0:
        found.append(at)
        at = _next(codes, code, at + 1)
    return found


def _next(codes: array[int], code: int, start: int) -> int:
    """The next index of ``code`` in ``codes`` from ``start``, or -1."""
    try:
        return codes.index(code, start)
    except ValueError:
        return -1


def _wanted(criteria: Criteria) -> tuple[Any, ...]:
    """Per scalar facet, the test of one value (None: any value passes), as ``Criteria.passes`` applies it."""
    scope, kinds, types, _ = criteria
    return (
        (lambda folder: in_folder(folder, scope)) if scope else None,
        kinds.__contains__ if kinds is not None else None,
        types.__contains__ if types is not None else None,
    )


class LayeredFacets(Facets):
    """The facets of a ``Layered`` snapshot: its changed records (``top``) over the stored facets, ``gone`` removed."""

    def __init__(self, base: Callable[[], Facets], top: Mapping[str, Record], gone: Collection[str]) -> None:
        self._base, self.top, self.gone = base, top, gone

    @cached_property
    def base(self) -> Facets:
        """The stored facets, read when a record outside the top is asked for (a patch asks for the top's only)."""
        return self._base()

    def of(self, rid: str) -> Facet:
        found = self.top.get(rid)
        if found is not None:
            return facet_of(found)
        if rid in self.gone:
            raise KeyError(rid)
        return self.base.of(rid)

    def positions(self, criteria: Criteria) -> Positions | None:
        found = self.base.positions(criteria)
        if found is None:
            return None
        top, gone, passes = self.top, self.gone, criteria.passes
        apart = found.apart.union(top, gone)
        extra = [rid for rid in found.extra if rid not in top and rid not in gone]
        extra += [rid for rid, r in top.items() if passes(facet_of(r))]
        return found._replace(apart=apart, extra=tuple(extra))

    def select(self, criteria: Criteria) -> list[str]:
        top, gone, passes = self.top, self.gone, criteria.passes
        found = [rid for rid in self.base.select(criteria) if rid not in top and rid not in gone]
        return found + [rid for rid, r in top.items() if passes(facet_of(r))]

    def scalars(self) -> Iterator[tuple[str, str, str, str]]:
        top, gone = self.top, self.gone
        yield from (row for row in self.base.scalars() if row[0] not in top and row[0] not in gone)
        for rid, r in top.items():
            yield rid, r.path.rpartition("/")[0], r.kind, r.type
