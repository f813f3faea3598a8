"""What a stored snapshot image is: its table, its format, and how each table of a snapshot is kept in a part.

An image is the rows of ``snapshot_image_v1``: a ``meta`` row (JSON: the format, the key, the digest of
every part, the patches) and one row per part, each a table of the snapshot as JSON, deflated (the image is
about a third of its JSON, and a new process reads less) but for ``STORED_PLAIN``, which a new process's
first filter reads as they are; a part's digest is of its JSON text. ``SNAPSHOT_PARTS`` and
``INDEX_PARTS`` say how each table is dumped and read back; ``config_key`` and ``guards_key`` say which
``knowtk.yaml`` and safeguards an image was built under; the ``points.<k>`` parts split the records by
``shard_of`` their id. ``image_write`` writes an image, ``image_parts`` reads its parts back, ``stored``
makes a snapshot of them.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from knowtk.model.config import StoreConfig
from knowtk.model.datevalues import DateValue, parse_date_value
from knowtk.model.records import Issue
from knowtk.snapshot.model import ChainEnd, Snapshot, SnapshotIndex
from knowtk.snapshot.overlay import Deferred, Overlaid
from knowtk.snapshot.safeguards import Safeguards
from knowtk.state import Contention

__all__ = [
    "FORMAT",
    "INDEX_PARTS",
    "POINTS_PER_SHARD",
    "POINT_SHARDS",
    "SNAPSHOT_PARTS",
    "STORED_PLAIN",
    "TABLE",
    "ImageDamaged",
    "config_key",
    "guards_key",
    "shard_count",
    "shard_of",
]

FORMAT = 8  # bump when a part's meaning changes: an image of another format is never read
TABLE = "snapshot_image_v1"
POINT_SHARDS = 2048  # the most ``points.<k>`` parts an image is split into (``shard_count``)
POINTS_PER_SHARD = 100  # records a points part holds at most below that: a page of 20 hits reads ~20 parts

# parts a new process's first filter reads (the ids and their facets) kept as their JSON text, not deflated: read
# as they are (inflating them took 16 + 13 ms at 300k records), for ~9 MB more
STORED_PLAIN = frozenset({"record_ids", "record_facets"})


class ImageDamaged(Contention):
    """A stored snapshot part failed its digest or did not parse: the query runs again on a full build."""


def config_key(config: StoreConfig) -> str:
    groups = sorted((name, sorted(group)) for name, group in config.type_groups.items())
    data: list[object] = [config.name, config.share, groups, config.problem]
    if config.profile != "knowtk" or config.profiles:  # (the key of a knowtk-format store is unchanged)
        data.append([config.profile, [list(p) for p in config.profiles]])
    if config.not_records is not None:
        data.append(["not_records", list(config.not_records)])
    return json.dumps(data, ensure_ascii=False)


def guards_key(safeguards: Safeguards) -> str:
    data = [sorted(safeguards.withdrawn.items()), sorted((k, list(v)) for k, v in safeguards.superseded.items())]
    return hashlib.sha256(json.dumps(data, ensure_ascii=False).encode()).hexdigest()


# -- the parts: how each table of a snapshot is written and read back --------------------------------
def _issue(i: Issue) -> list[Any]:
    return [i.path, i.id, i.code, i.message]


def _issues(items: Any) -> list[list[Any]]:
    return [_issue(i) for i in items]


def _read_issues(rows: list[list[Any]]) -> tuple[Issue, ...]:
    return tuple(Issue(*row) for row in rows)


def _pairs(d: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {k: tuple(v) for k, v in d.items()}


def _plain(m: Mapping[str, Any]) -> Mapping[str, Any]:
    """A map json can write: an Overlaid or a Deferred as one dict, a dict as it is."""
    return m.flat() if isinstance(m, Overlaid | Deferred) else m


def _as_dict(m: Mapping[str, Any]) -> dict[str, Any]:
    """A map as a dict for json: a dict as it is (a million-key copy was ~60 MB of a 1M cold build's peak)."""
    return m if type(m) is dict else dict(m)


def _dates(d: Mapping[str, str]) -> dict[str, DateValue]:
    out = {}
    for rid, text in d.items():
        value = parse_date_value(text)
        if value is None:
            raise ValueError(f"expiring date {text!r} does not parse")
        out[rid] = value
    return out


# part -> (what to store, how to read it back); "snapshot" parts are Snapshot fields, "index" parts SnapshotIndex fields
SNAPSHOT_PARTS: dict[str, tuple[Callable[[Snapshot], Any], Callable[[Any], Any]]] = {
    "lifecycle": (lambda s: _plain(s.lifecycle), dict),
    "superseded_by": (lambda s: _plain(s.superseded_by), dict),
    "supersedes": (lambda s: s.supersedes, dict),
    "unavailable": (lambda s: s.unavailable, _pairs),
    "unavailable_inactive": (lambda s: s.unavailable_inactive, _pairs),
    "expired": (lambda s: sorted(s.expired), set),
    "chain_ends": (
        lambda s: {k: [e.current, e.reason, list(e.via)] for k, e in s.chain_ends.items()},
        lambda d: {k: ChainEnd(c, r, tuple(v)) for k, (c, r, v) in d.items()},
    ),
    "names": (lambda s: _as_dict(_plain(s.names)), dict),
    "issues": (lambda s: _issues(s.issues), lambda rows: list(_read_issues(rows))),
    "excluded": (lambda s: s.excluded, dict),
    "paths": (lambda s: _plain(s.paths), dict),
}
INDEX_PARTS: dict[str, tuple[Callable[[SnapshotIndex], Any], Callable[[Any], Any]]] = {
    "id_at": (lambda x: _plain(x.id_at), dict),
    "claims": (lambda x: _as_dict(x.claims), dict),
    "referrers": (lambda x: _as_dict(_plain(x.referrers)), dict),
    "base": (lambda x: x.base, _pairs),
    "expiring": (lambda x: {k: v.text for k, v in x.expiring.items()}, _dates),
    "superseded": (lambda x: sorted(x.superseded), set),
    "folders": (lambda x: x.folders, _pairs),
    "file_issues": (
        lambda x: {k: _issues(v) for k, v in x.file_issues.items()},
        lambda d: {k: _read_issues(v) for k, v in d.items()},
    ),
    "dup_issues": (
        lambda x: {k: _issues(v) for k, v in x.dup_issues.items()},
        lambda d: {k: _read_issues(v) for k, v in d.items()},
    ),
    "guard_issues": (
        lambda x: {k: _issue(v) for k, v in x.guard_issues.items()},
        lambda d: {k: Issue(*v) for k, v in d.items()},
    ),
    "dep_issues": (
        lambda x: {k: _issues(v) for k, v in x.dep_issues.items()},
        lambda d: {k: _read_issues(v) for k, v in d.items()},
    ),
}


def shard_count(records: int) -> int:
    """How many ``points.<k>`` parts an image of this many records has (about a hundred records each, at most
    ``POINT_SHARDS``): each part a hit reads costs its inflating, digest and parse (~1.2 ms for 1,170 records,
    the 300k image's parts when they held 400 at least, paid by a new process's first page of hits)."""
    return max(1, min(POINT_SHARDS, records // POINTS_PER_SHARD))


def shard_of(rid: str, shards: int) -> int:
    return zlib.crc32(rid.encode("utf-8", "surrogatepass")) % shards
