"""Per facet value, the tokens of a keyword projection's rows and the runs of their rowids, as a build wrote them.

A filter of one facet (a scope, kinds, types or one tag) allows the rows of the records holding some of its
values. A ranking over it needs their tokens (the filtered average length) and, for a common word, a statement
kept to them (``Among``). Both are summed here once a build, per value and beside the rowmap
(``keyword_filter_sums_v1``): a new process's first such filter adds up a few values, where summing its rows by
stored position cost 5.6 ms, and making their set and its SQL form 11 ms more, at 300k records.

The sums are of the rows as the build wrote them at the stored positions of one image's ids (``base``) and facet
columns (``facets``, the digest of that part), and of one rowmap (its checksum): anything else written since (a
new image, a rowmap another build wrote) leaves them unused. Rows changed since the build are answered as the
rowmap answers them (``knowtk.index.filtered``).
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from knowtk.index.among import merged_runs, runs_of
from knowtk.snapshot.facets import Criteria, Facet, in_folder

__all__ = [
    "SUMS_SCHEMA",
    "SUMS_TABLE",
    "FilterSums",
    "facet_groups",
    "filter_sums",
    "read_sums",
    "stored_sums",
    "summed_by_value",
]

SUMS_TABLE = "keyword_filter_sums_v1"
SUMS_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {SUMS_TABLE} "
    "(projection TEXT PRIMARY KEY, base TEXT NOT NULL, facets TEXT NOT NULL, rowmap INTEGER NOT NULL, "
    "sums TEXT NOT NULL, checksum INTEGER NOT NULL)"
)
COLUMNS = ("folder", "kind", "type", "tags")

FacetGroups = Mapping[str, Mapping[str, list[int]]]  # column -> value -> the stored positions holding it
Runs = tuple[list[tuple[int, int]], tuple[int, ...]]  # runs of rowids [(first, last)] and rows besides (``runs_of``)


class FilterSums(NamedTuple):
    """What a filter of one facet allows, from ``filter_sums``: its rows' tokens, and their runs (None: too many)."""

    tokens: int
    runs: Runs | None


def facet_groups(facets: Sequence[Facet]) -> dict[str, dict[str, list[int]]]:
    """Per column (folder, kind, type, tags) and value, the stored positions holding it (``facets``: by stored
    position), in order: made once for every projection's sums."""
    groups: dict[str, dict[str, list[int]]] = {}
    for at, name in enumerate(COLUMNS):
        holders: dict[str, list[int]] = {}
        if name == "tags":
            pairs: Iterable[tuple[int, str]] = (
                (position, tag) for position, facet in enumerate(facets) for tag in dict.fromkeys(facet.tags)
            )
        else:
            pairs = enumerate(map(itemgetter(at), facets))
        for position, value in pairs:
            found = holders.get(value)
            if found is None:
                holders[value] = [position]
            else:
                found.append(position)
        groups[name] = holders
    return groups


def summed_by_value(
    rowids: array[int], tokens: array[int], groups: Mapping[str, Mapping[str, list[int]]]
) -> dict[str, Any]:
    """Per column and value of ``facet_groups``: [tokens, runs or None, rows besides] of the rows at the stored
    positions holding it (``rowids`` and ``tokens`` by stored position; rowid 0: none there)."""
    out: dict[str, Any] = {}
    for name, holders in groups.items():
        column: dict[str, Any] = {}
        for value, positions in holders.items():
            pick = itemgetter(*positions) if len(positions) > 1 else lambda seq, at=positions[0]: (seq[at],)
            runs = runs_of(list(filter(None, pick(rowids))))
            column[value] = [
                sum(pick(tokens)),
                [list(run) for run in runs[0]] if runs is not None else None,
                list(runs[1]) if runs is not None else [],
            ]
        out[name] = column
    return out


def filter_sums(sums: Mapping[str, Any], criteria: Criteria) -> FilterSums | None:
    """The sums of the rows a filter of one facet allows; None where another facet also filters, several tags
    do, or none does (then they are summed by position), or the sums are not as written."""
    scope, kinds, types, tags = criteria
    tests = {
        "folder": (lambda folder: in_folder(folder, scope)) if scope else None,
        "kind": kinds.__contains__ if kinds is not None else None,
        "type": types.__contains__ if types is not None else None,
    }
    try:
        chosen: list[Any] | None = None
        for name, test in tests.items():
            if test is None:
                continue
            values = sums[name]
            passing = [entry for value, entry in values.items() if test(value)]
            if len(passing) == len(values):
                continue  # (every record passes it: the flags skip it too)
            if chosen is not None:
                return None
            chosen = passing
        if tags is not None:
            if chosen is not None or len(set(tags)) != 1:
                return None
            found = sums["tags"].get(tags[0])
            chosen = [found] if found is not None else []
        if chosen is None:
            return None
        total, parts = 0, []
        every_run = True
        for tokens, ranges, extra in chosen:
            if not isinstance(tokens, int) or not isinstance(extra, list):
                return None
            total += tokens
            if ranges is None:
                every_run = False
            else:
                parts.append(([(int(a), int(b)) for a, b in ranges], tuple(int(r) for r in extra)))
        return FilterSums(total, merged_runs(parts) if every_run else None)
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


def stored_sums(sums: dict[str, Any]) -> tuple[str, int]:
    """(the text of ``summed_by_value``'s sums, its CRC-32) as ``read_sums`` reads them back."""
    text = json.dumps(sums, separators=(",", ":"))
    return text, zlib.crc32(text.encode())


def read_sums(conn: sqlite3.Connection, key: str, base: str, facets: str, rowmap: int) -> dict[str, Any] | None:
    """The stored sums of projection ``key`` where they are of these ids, facet columns and rowmap checksum (None:
    none such, or their own checksum differs)."""
    try:
        sql = f"SELECT base, facets, rowmap, sums, checksum FROM {SUMS_TABLE} WHERE projection = ?"
        row = conn.execute(sql, (key,)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None  # (a state an older knowtk built)
        raise
    if row is None or (row[0], row[1], row[2]) != (base, facets, rowmap) or not isinstance(row[3], str):
        return None
    if zlib.crc32(row[3].encode()) != row[4]:
        return None
    try:
        found = json.loads(row[3])
    except ValueError:
        return None
    return found if isinstance(found, dict) and all(isinstance(found.get(c), dict) for c in COLUMNS) else None
