"""A record's filter facets: what a query's filters read of it, without building the record.

``RecordFilter`` (knowtk.query.common) reads a record's folder (for the scope), kind, type and
tags, all as the *built* record has them (a profile derives them from the file). Building every
record of a stored snapshot to read four values cost a new process's first filtered query 5 s at
100k records, so a snapshot gives them through ``Snapshot.facets()``:

- a snapshot whose records are all built (``RecordFacets``) reads them from the records;
- a stored snapshot (``FacetColumns``) from the image part ``record_facets``
  (knowtk.snapshot.persist): one column per facet, each a list of small ints into its vocabulary,
  aligned with the stored ids, and the facets of the records a patch of the image set or removed
  kept over them by id;
- a snapshot built on a stored one (``LayeredFacets``) from its own changed records over the
  stored columns, the way ``Layered`` keeps its records.

``select`` answers a filter with one pass over the columns (each vocabulary entry tested once),
``of`` gives one record's facets.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any, NamedTuple

from knowtk.model.records import Record

__all__ = [
    "Criteria",
    "Facet",
    "FacetColumns",
    "Facets",
    "LayeredFacets",
    "RecordFacets",
    "encode_columns",
    "facet_of",
    "in_folder",
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


class Facets:
    """The facets of a snapshot's records."""

    def of(self, rid: str) -> Facet:
        """One record's facets (KeyError: no such record)."""
        raise NotImplementedError

    def select(self, criteria: Criteria) -> Iterator[str]:
        """The ids of the records whose facets pass ``criteria``, each once."""
        raise NotImplementedError


class RecordFacets(Facets):
    """The facets of records that are built already (a snapshot's dict of records)."""

    def __init__(self, records: Mapping[str, Record]) -> None:
        self.records = records

    def of(self, rid: str) -> Facet:
        return facet_of(self.records[rid])

    def select(self, criteria: Criteria) -> Iterator[str]:
        passes = criteria.passes
        return (rid for rid, r in self.records.items() if passes(facet_of(r)))


def encode_columns(facets: Iterable[Facet]) -> dict[str, list[Any]]:
    """The stored form of facets in order: per facet a vocabulary and a column of indexes into it."""
    vocab: dict[str, dict[Any, int]] = {name: {} for name in Facet._fields}
    columns: dict[str, list[int]] = {name: [] for name in Facet._fields}
    for f in facets:
        for name, value in zip(Facet._fields, f, strict=True):
            codes = vocab[name]
            code = codes.get(value)
            if code is None:
                code = codes[value] = len(codes)
            columns[name].append(code)
    out: dict[str, list[Any]] = {}
    for name in Facet._fields:
        out[name] = [list(v) if name == "tags" else v for v in vocab[name]]
        out[name + "_at"] = columns[name]
    return out


class FacetColumns(Facets):
    """A stored snapshot's facets: columns aligned with the stored ids, under what later patches set (None: removed)."""

    def __init__(self, data: Mapping[str, Any], ids: Sequence[str], over: dict[str, Facet | None]) -> None:
        self.ids, self.over = ids, over
        self.vocab = {name: data[name] for name in Facet._fields}
        self.vocab["tags"] = [tuple(tags) for tags in self.vocab["tags"]]
        self.columns: dict[str, list[int]] = {name: data[name + "_at"] for name in Facet._fields}
        for name in Facet._fields:
            column, size = self.columns[name], len(self.vocab[name])
            if len(column) != len(ids) or not all(isinstance(v, str | tuple) for v in self.vocab[name]):
                raise ValueError(f"facet column {name!r} does not match the stored ids")
            if column and not (isinstance(max(column), int) and min(column) >= 0 and max(column) < size):
                raise ValueError(f"facet column {name!r} points outside its vocabulary")

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
        vocab, columns = self.vocab, self.columns
        return Facet(*(vocab[name][columns[name][i]] for name in Facet._fields))

    def select(self, criteria: Criteria) -> Iterator[str]:
        vocab = self.vocab
        tests: list[tuple[list[int], set[int]]] = []
        for name, wanted in zip(Facet._fields, _wanted(criteria), strict=True):
            if wanted is not None:
                tests.append((self.columns[name], {code for code, value in enumerate(vocab[name]) if wanted(value)}))
        positions: Iterable[int] = range(len(self.ids))
        for column, ok in tests:
            positions = [i for i in positions if column[i] in ok]
        ids, over = self.ids, self.over
        if over:
            yield from (ids[i] for i in positions if ids[i] not in over)
            yield from (rid for rid, f in over.items() if f is not None and criteria.passes(f))
        else:
            yield from (ids[i] for i in positions)


def _wanted(criteria: Criteria) -> tuple[Any, ...]:
    """Per facet, the test of one value (None: any value passes), as ``Criteria.passes`` applies it."""
    scope, kinds, types, tags = criteria
    return (
        (lambda folder: in_folder(folder, scope)) if scope else None,
        kinds.__contains__ if kinds is not None else None,
        types.__contains__ if types is not None else None,
        (lambda have: all(t in have for t in tags)) if tags is not None else None,
    )


class LayeredFacets(Facets):
    """The facets of a ``Layered`` snapshot: its changed records (``top``) over the stored facets, ``gone`` removed."""

    def __init__(self, base: Facets, top: Mapping[str, Record], gone: Container[str]) -> None:
        self.base, self.top, self.gone = base, top, gone

    def of(self, rid: str) -> Facet:
        found = self.top.get(rid)
        if found is not None:
            return facet_of(found)
        if rid in self.gone:
            raise KeyError(rid)
        return self.base.of(rid)

    def select(self, criteria: Criteria) -> Iterator[str]:
        top, gone = self.top, self.gone
        yield from (rid for rid in self.base.select(criteria) if rid not in top and rid not in gone)
        passes = criteria.passes
        yield from (rid for rid, r in top.items() if passes(facet_of(r)))
