"""The snapshot kept in state.sqlite, so that a new process loads it instead of building it.

A full build validates every record and applies the store-wide rules (about 1.5 s per
100k records). A new process (a kernel restart, each CLI call, an agent server's start)
would pay that before its first answer. ``write_image`` stores a built snapshot's tables as
JSON parts of ``snapshot_image_v1``, one row each, in one transaction (each part made and
deflated in turn, a long one a piece of its text at a time, into a temporary table of the
connection that the transaction copies from); ``load_image`` reads them back in one read
and parses a part only when a query first needs it (its stored bytes then dropped). The records are
not stored here: they stay in ``scan_files_v1``, and a stored snapshot fills one from there
when a query asks for it (``StoredRecords``).

Each part is kept deflated (zlib; its digest is of the JSON text): the image is about a
third of its JSON, and a new process reads less (but for ``STORED_PLAIN``, kept as its text: a first
filter reads them as they are). A process that applied changes to an image
does not write it again whole: ``write_image`` with ``base`` (the snapshot the stored image
is) adds a *patch*, the keys of each part that changed (set or removed) and the record
locations that moved, found by comparing the two snapshots' tables (a table the build did
not copy is the same object: not compared). A part is read back as its stored JSON with
every patch applied in order, then converted as before, so a patched image reads exactly as
the same snapshot written whole (``tests/test_persist.py`` compares them). Past
``PATCHES_MAX`` patches, or patches over an eighth of the parts' size, the image is written
whole again.

An image is used only when it was written by this format of knowtk, for the same
``knowtk.yaml`` and the same safeguards. The files it was built from are compared with the
scan (the scan cache's change counter says in one comparison that nothing changed); the
files that differ are applied to it like to any earlier snapshot. A part that fails its
digest or does not parse raises ``ImageDamaged`` (a ``Contention``: the query runs again,
on a full build), so a damaged image costs one build, never an answer.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import zlib
from collections.abc import Callable, Container, Iterable, Iterator, KeysView, Mapping
from contextlib import suppress
from datetime import datetime
from functools import cached_property
from itertools import islice
from typing import Any

from knowtk.model.config import StoreConfig
from knowtk.model.datevalues import DateValue, parse_date_value
from knowtk.model.records import Issue, Record
from knowtk.scan.cache import Scanner
from knowtk.scan.pool import collector_paused, give_back_memory
from knowtk.snapshot.facets import Facet, FacetColumns, encode_columns
from knowtk.snapshot.model import ChainEnd, Snapshot, SnapshotIndex
from knowtk.snapshot.overlay import (
    ABSENT,
    UNKNOWN,
    Deferred,
    Former,
    Grouped,
    Layered,
    Lazy,
    Overlaid,
    changes_over,
    unwrap,
)
from knowtk.snapshot.safeguards import Safeguards
from knowtk.state import Contention, StateDB, deflate, inflate_bytes, now_utc

__all__ = [
    "ImageDamaged",
    "ImageParts",
    "StoredIndex",
    "StoredRecords",
    "StoredSnapshot",
    "config_key",
    "guards_key",
    "load_image",
    "record_behind",
    "stored_positions",
    "write_image",
]

FORMAT = 8  # bump when a part's meaning changes: an image of another format is never read (3: deflated, patches;
# 4: record_facets; 5: a patch's ids dropped from every key and added per key, over a part it did not read;
# 6: the points.<k> parts; 7: record_at split into record_ids and record_paths; 8: STORED_PLAIN not deflated)
TABLE = "snapshot_image_v1"
# single record loads past which a stored mapping fills every record in one pass (a query that
# walks all records, like the inventory or a filtered search, would otherwise read them one by one)
BULK_AFTER = 2000
BULK_IMAGE = 50_000  # records of an image written whole past which its freed texts are given back to the system

# records whose file changed since the image, taken back by a pass over the names and referrers each,
# past which both maps are inverted once (a few edits made while no process ran cost a few passes)
FORMER_SCANS = 8
SHA_POINTS = 32  # record hashes read where they lie past which record_sha is parsed whole
# keys read where they lie in a part's JSON text (a record's path, its lifecycle) past which the part is parsed
# whole: a new process's query shows a page of records, and parsing record_paths and lifecycle cost ~110 ms at 100k.
# A read costs a dict lookup in a points part parsed once (~0.12 ms a part of 100 records): as many as the
# single record loads past which every record is filled anyway (64 put that parse in a process's fourth page)
POINTS = BULK_AFTER
UNTOUCHED = object()  # a key no patch names (``ImageParts.patched_key``): the part as first written holds it
POINT_SHARDS = 2048  # the most ``points.<k>`` parts an image is split into (``shard_count``)
POINTS_PER_SHARD = 100  # records a points part holds at most below that: a page of 20 hits reads ~20 parts
PATCHES_MAX = 16  # patches past which the image is written whole again
PATCH_SHARE = 8  # ... and when the patches' bytes pass this share of the parts' (1/8)

# parts a new process's first filter reads (the ids and their facets) kept as their JSON text, not deflated: read
# as they are (inflating them took 16 + 13 ms at 300k records), for ~9 MB more
STORED_PLAIN = frozenset({"record_ids", "record_facets"})
DIGEST_BESIDE_BYTES = 1 << 20  # a part's text from which its digest is taken beside its parse

# data: the meta row's JSON text; every other row deflated JSON
_SCHEMA = f"CREATE TABLE IF NOT EXISTS {TABLE} (part TEXT PRIMARY KEY, data NOT NULL)"
# the parts of an image being written, before the one transaction that puts them in TABLE (in this connection's
# temporary database: no other connection sees it, and it is gone with the connection)
_STAGING = "temp.snapshot_image_staging"
_STAGING_SCHEMA = f"CREATE TABLE IF NOT EXISTS {_STAGING} (part TEXT PRIMARY KEY, data NOT NULL)"


class ImageDamaged(Contention):
    """A stored snapshot part failed its digest or did not parse: the query runs again on a full build."""


class SnapshotOutdated(Contention):
    """A stored snapshot was asked for a record whose file has changed since: the query runs again."""


def config_key(config: StoreConfig) -> str:
    groups = sorted((name, sorted(group)) for name, group in config.type_groups.items())
    data: list[object] = [config.name, config.share, groups, config.problem]
    if config.profile != "knowtk" or config.profiles:  # (the key of a knowtk-format store is unchanged)
        data.append([config.profile, [list(p) for p in config.profiles]])
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


def _a_list(value: Any) -> list[Any]:
    """A column part as read (ValueError: not a list)."""
    if not isinstance(value, list):
        raise ValueError("not a list")
    return value


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


# -- writing ---------------------------------------------------------------------------------------
def write_image(
    state: StateDB,
    snap: Snapshot,
    *,
    scanner: Scanner,
    config: StoreConfig,
    safeguards: Safeguards,
    base: Snapshot | None = None,
) -> str | None:
    """Store ``snap`` as the image a new process loads; returns its key (None when it could not be written).

    With ``base``, the snapshot the stored image is now, only what changed since is written (a patch),
    unless the image holds too many patches already or is another one than ``base``'s.
    A projection: a failure to write costs the next new process a build, never this query.
    """
    import uuid  # only a process that writes an image needs it

    key = uuid.uuid4().hex
    if base is not None and base.image_key is not None:
        found = _write_patch(state, snap, base, key=key, scanner=scanner, config=config, safeguards=safeguards)
        if found is not None:
            return found
    meta = _meta(snap, key, scanner=scanner, config=config, safeguards=safeguards)
    meta["parts"], meta["bytes"], meta["patches"] = {}, 0, []
    meta["shards"] = shard_count(len(snap.records))  # (as _point_texts splits them)
    # one part at a time, a long one a piece at a time, each deflated into a temporary table of this connection:
    # the transaction that replaces the image stays short (a copy inside SQLite), and the process holds one
    # piece of text at a time, not the parts (205 MB deflated at 1M records: issue 20's cold build peak)
    conn = state.conn
    try:
        conn.execute(_STAGING_SCHEMA)
        conn.execute(f"DELETE FROM {_STAGING}")
        for name, pieces in _part_texts(snap):
            plain = name in STORED_PLAIN
            digest, size, packer, packed = hashlib.sha256(), 0, zlib.compressobj(1), []
            for piece in pieces:
                raw = piece.encode()
                digest.update(raw)
                size += len(raw)
                packed.append(raw if plain else packer.compress(raw))
            if not plain:
                packed.append(packer.flush())
            meta["parts"][name] = digest.hexdigest()
            meta["bytes"] += size
            conn.execute(f"INSERT INTO {_STAGING} (part, data) VALUES (?, ?)", (name, b"".join(packed)))
            del packed
        with state.transaction() as conn:
            conn.execute(_SCHEMA)
            conn.execute(f"DELETE FROM {TABLE}")
            conn.execute(f"INSERT INTO {TABLE} (part, data) VALUES ('meta', ?)", (json.dumps(meta),))
            conn.execute(f"INSERT INTO {TABLE} (part, data) SELECT part, data FROM {_STAGING} ORDER BY rowid")
    except (sqlite3.Error, Contention):
        return None
    finally:
        with suppress(sqlite3.Error):
            conn.execute(f"DELETE FROM {_STAGING}")
        if len(snap.records) >= BULK_IMAGE:
            give_back_memory()  # (the parts' texts, freed in the C heap)
    return key


def _part_texts(snap: Snapshot) -> Iterator[tuple[str, Iterable[str]]]:
    """(name, the pieces of its JSON text) of every part of ``snap``'s image, made one after the other."""
    ix = snap.index
    assert ix is not None
    for name, (dump, _) in SNAPSHOT_PARTS.items():
        yield name, json_pieces(dump(snap))
    for name, (dump_index, _) in INDEX_PARTS.items():
        yield "index." + name, json_pieces(dump_index(ix))
    claims, paths = ix.claims, snap.paths
    # id -> path and id -> sha256 as parallel lists: read back by dict(zip()), twice as fast as a JSON object
    ids = stored_order(snap)
    at = [claims[rid][0] for rid in ids]
    # the ids apart from the paths: a new process's first filter reads the ids alone (beside record_facets)
    yield "record_ids", json_list_pieces(ids)  # (made as read)
    yield "record_paths", json_list_pieces(at)
    yield "record_sha", json_list_pieces([paths[path] for path in at])
    del at
    facets = snap.facets()  # the filters' facets in the same order: a new process filters without building records
    yield "record_facets", (json.dumps(encode_columns(map(facets.of, ids)), ensure_ascii=False),)
    for name, text in _point_texts(snap, ids):
        yield name, (text,)


def json_pieces(value: Any, size: int = 1 << 14) -> Iterator[str]:
    """``json.dumps(value, ensure_ascii=False)`` in pieces: a list or a dict ``size`` items at a time."""
    if isinstance(value, list):
        yield from json_list_pieces(value, size)
    elif isinstance(value, dict) and len(value) > size:
        items = iter(value.items())
        yield "{"
        for start in range(0, len(value), size):
            text = json.dumps(dict(islice(items, size)), ensure_ascii=False)
            yield (", " if start else "") + text[1:-1]
        yield "}"
    else:
        yield json.dumps(value, ensure_ascii=False)


def json_list_pieces(values: list[Any], size: int = 1 << 14) -> Iterator[str]:
    """``json.dumps(values, ensure_ascii=False)`` in pieces of ``size`` values each: the same text, joined."""
    yield "["
    for start in range(0, len(values), size):
        text = json.dumps(values[start : start + size], ensure_ascii=False)
        yield (", " if start else "") + text[1:-1]
    yield "]"


def shard_count(records: int) -> int:
    """How many ``points.<k>`` parts an image of this many records has (about a hundred records each, at most
    ``POINT_SHARDS``): each part a hit reads costs its inflating, digest and parse (~1.2 ms for 1,170 records,
    the 300k image's parts when they held 400 at least, paid by a new process's first page of hits)."""
    return max(1, min(POINT_SHARDS, records // POINTS_PER_SHARD))


def shard_of(rid: str, shards: int) -> int:
    return zlib.crc32(rid.encode("utf-8", "surrogatepass")) % shards


def _point_texts(snap: Snapshot, ids: list[str]) -> Iterator[tuple[str, str]]:
    """The ``points.<k>`` parts: id -> [path, file sha256, lifecycle, superseded by] of every record (and of every
    other id the lifecycle names), split by a hash of the id, so that a new process reads a page of records'
    paths and lifecycles from a few small parts instead of parsing record_paths and lifecycle whole."""
    ix = snap.index
    assert ix is not None
    shards = shard_count(len(ids))
    # the ids of each shard first, then one shard's points at a time: a million records' points held at once
    # were some 180 MB of a 1M cold build's peak (issue 20)
    members: list[list[str]] = [[] for _ in range(shards)]
    for rid in ids:
        members[shard_of(rid, shards)].append(rid)
    named: list[list[str]] = [[] for _ in range(shards)]  # the ids the lifecycle names (records' and others')
    for rid in snap.lifecycle:
        named[shard_of(rid, shards)].append(rid)
    claims, paths, lifecycle, successor = ix.claims, snap.paths, snap.lifecycle, snap.superseded_by
    for k in range(shards):
        shard: dict[str, list[str | None]] = {}
        for rid in members[k]:
            path = claims[rid][0]
            shard[rid] = [path, paths[path], lifecycle.get(rid), successor.get(rid)]
        for rid in named[k]:
            if rid not in shard:
                shard[rid] = [None, None, lifecycle[rid], successor.get(rid)]
        members[k] = named[k] = []
        yield f"points.{k}", json.dumps(shard, ensure_ascii=False)


def _meta(snap: Snapshot, key: str, *, scanner: Scanner, config: StoreConfig, safeguards: Safeguards) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "key": key,
        "scan_token": scanner.saved_token,  # the scan cache as this snapshot was built from it
        "scanned_at": snap.scanned_at.isoformat(),
        "evaluated_at": snap.evaluated_at.isoformat(),
        "valid_until": snap.valid_until.isoformat() if snap.valid_until else None,
        "config": config_key(config),
        "guards": guards_key(safeguards),
    }


def _write_patch(
    state: StateDB,
    snap: Snapshot,
    base: Snapshot,
    *,
    key: str,
    scanner: Scanner,
    config: StoreConfig,
    safeguards: Safeguards,
) -> str | None:
    """Add to the stored image (which must be ``base``'s) what changed from ``base`` to ``snap``; its key,
    or None when the image must be written whole (another image stored, too many patches, a damaged base)."""
    try:
        patch = json.dumps(image_delta(base, snap), ensure_ascii=False).encode()
    except (ImageDamaged, KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None  # the base's own image is damaged, or the two disagree: written whole (a build stands alone)
    meta = _meta(snap, key, scanner=scanner, config=config, safeguards=safeguards)
    try:
        with state.transaction() as conn:
            row = conn.execute(f"SELECT data FROM {TABLE} WHERE part = 'meta'").fetchone()
            stored = json.loads(row[0]) if row is not None else None
            if not isinstance(stored, dict) or stored.get("key") != base.image_key or stored.get("format") != FORMAT:
                return None
            patches = list(stored.get("patches") or [])
            grown = sum(n for _, _, n in patches) + len(patch)
            if len(patches) >= PATCHES_MAX or grown * PATCH_SHARE > int(stored.get("bytes") or 0):
                return None
            name = f"patch.{len(patches)}"
            patches.append([name, hashlib.sha256(patch).hexdigest(), len(patch)])
            meta.update(parts=stored["parts"], bytes=stored["bytes"], patches=patches, shards=stored.get("shards"))
            conn.execute(f"INSERT OR REPLACE INTO {TABLE} (part, data) VALUES (?, ?)", (name, deflate(patch)))
            conn.execute(f"UPDATE {TABLE} SET data = ? WHERE part = 'meta'", (json.dumps(meta),))
    except (sqlite3.Error, Contention, ValueError, TypeError, KeyError):
        return None
    return key


def stored_order(snap: Snapshot) -> list[str]:
    """The ids of ``snap``'s records in the order its image stores them (record_ids): what a stored position is."""
    return list(snap.records)


def stored_positions(state: StateDB, snap: Snapshot) -> tuple[str, list[str]] | None:
    """(the digest of the record_ids part of the image stored as ``snap.image_key``, those ids): which id is at
    each stored position (``FacetColumns.base``; a patch never changes them). None when another image is stored,
    it cannot be read, or ``snap``'s records are not in that order (an image patched since it was written)."""
    try:
        with state.reading():
            row = state.conn.execute(f"SELECT data FROM {TABLE} WHERE part = 'meta'").fetchone()
        meta = json.loads(row[0]) if row is not None else None
    except (sqlite3.Error, Contention, ValueError, TypeError):
        return None
    if not isinstance(meta, dict) or meta.get("key") != snap.image_key or meta.get("format") != FORMAT:
        return None
    base = (meta.get("parts") or {}).get("record_ids")
    if not isinstance(base, str) or meta.get("patches"):
        return None
    ids = stored_order(snap)
    digest = hashlib.sha256()
    try:
        for piece in json_list_pieces(ids):  # (as write_image made the part)
            digest.update(piece.encode())
    except (TypeError, ValueError, UnicodeError):
        return None
    return (base, ids) if digest.hexdigest() == base else None


def record_behind(state: StateDB, key: str, token: int, behind: list[str]) -> bool:
    """Record that stored image ``key`` is the scan cache at ``token`` but at the files ``behind`` (paths
    whose content may differ from the image's): the next new process takes the image with those as its
    drift instead of comparing every file with it. Written by a process that compared every file (and found
    ``behind`` empty) or that changed files without writing an image (its drift too small); left as it is
    when another image is stored meanwhile or the cache moved past ``token``; a failure to write only leaves
    the comparison to the next process."""
    try:
        with state.transaction() as conn:
            if state.meta("scan_token") != str(token):
                return False  # another process wrote the cache since: its token is not this one
            row = conn.execute(f"SELECT data FROM {TABLE} WHERE part = 'meta'").fetchone()
            meta = json.loads(row[0]) if row is not None else None
            if not isinstance(meta, dict) or meta.get("key") != key or meta.get("format") != FORMAT:
                return False
            meta["scan_token"], meta["behind"] = token, behind
            conn.execute(f"UPDATE {TABLE} SET data = ? WHERE part = 'meta'", (json.dumps(meta),))
    except (sqlite3.Error, Contention, ValueError, TypeError):
        return False
    return True


_ABSENT = object()


def _changed_keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(keys set or changed, keys removed) from ``old`` to ``new``; values compared by identity, then equality."""
    if isinstance(new, Grouped) and (
        unwrap(new.base) is old or (isinstance(old, Grouped) and unwrap(old.base) is unwrap(new.base))
    ):
        keys = set(new.top) | (set(old.top) if isinstance(old, Grouped) else set())  # only these can differ
        changed = [k for k in keys if k in new and old.get(k, _ABSENT) != new[k]]
        return changed, [k for k in keys if k not in new and k in old]
    if isinstance(new, Overlaid) and new.shares_base(old):
        keys = set(new.top) | (set(old.top) if isinstance(old, Overlaid) else set())  # only these can differ
        changed = [k for k in keys if k in new and old.get(k, _ABSENT) != new[k]]
        return changed, [k for k in keys if k not in new and k in old]
    if type(old) is dict and type(new) is dict and old == new:  # a copy the build left as it was: compared in C
        return [], []
    try:  # the differing items found in C (a set of each side's items), then put in new's order
        differing = {k for k, _ in new.items() - old.items()}
        changed = [k for k in new if k in differing] if differing else []
    except TypeError:  # a value that cannot be hashed (a list): compared one by one
        get = old.get
        changed = [k for k, v in new.items() if (was := get(k, _ABSENT)) is not v and was != v]
    added = sum(1 for k in changed if k not in old)
    # len(new) = len(old) + added - removed: the keys of old are gone through only when some were removed
    removed = [k for k in old if k not in new] if len(old) + added != len(new) else []
    return changed, removed


class _Only:
    """An object whose one attribute is a sub-map: a part's dump applied to the changed keys alone."""

    def __init__(self, name: str, value: Any) -> None:
        setattr(self, name, value)


def image_delta(base: Snapshot, snap: Snapshot) -> dict[str, Any]:
    """What a patch holds: per part, the keys set (as the part's dump writes them) and removed, or the part
    whole (a set or a list); the record locations (id -> [path, sha256]) set and removed."""
    out: dict[str, Any] = {"parts": {}, "whole": {}}
    ix, base_ix = snap.index, base.index
    assert ix is not None and base_ix is not None
    changed_paths: list[str] = []
    changed_claims: list[str] = []
    tables: list[tuple[str, Mapping[str, tuple[Callable[[Any], Any], Any]], Any, Any]] = [
        ("", SNAPSHOT_PARTS, snap, base),
        ("index.", INDEX_PARTS, ix, base_ix),
    ]
    for prefix, table, new_of, old_of in tables:
        for name, (dump, _) in table.items():
            new = getattr(new_of, name)
            over = changes_over(new, old_of, name) if name not in vars(old_of) else None
            if over is not None:  # built over the stored part without reading it: its top says what changed
                if over.set or over.removed or over.void or over.add:
                    part = dump(_Only(name, over.set))
                    entry = {"set": part, "del": over.removed}
                    if over.void or over.add:
                        entry.update(void=over.void, add=over.add)
                    out["parts"][prefix + name] = entry
                if name in ("paths", "claims"):
                    keys = [*over.set, *over.removed]
                    changed_paths, changed_claims = (keys, changed_claims) if name == "paths" else (changed_paths, keys)
                continue
            old = getattr(old_of, name)
            if old is new:
                continue
            if not isinstance(new, Mapping):  # a set or a list: small, written whole when it changed
                if old != new:
                    out["whole"][prefix + name] = dump(new_of)
                continue
            changed, removed = _changed_keys(old, new)
            if changed or removed:
                part = dump(_Only(name, {k: new[k] for k in changed}))
                out["parts"][prefix + name] = {"set": part, "del": removed}
            if name == "paths":
                changed_paths = changed + removed
            elif name == "claims":
                changed_claims = changed + removed
    out["records"] = _record_delta(base, snap, changed_paths, changed_claims)
    return out


def _record_delta(base: Snapshot, snap: Snapshot, paths: list[str], claims: list[str]) -> dict[str, Any]:
    """The record locations that may differ: ids whose claims changed, ids at files whose hash changed."""
    ix, base_ix = snap.index, base.index
    assert ix is not None and base_ix is not None
    ids = set(claims) | set(snap.changed_ids or ())
    for path in paths:
        for id_at in (ix.id_at, Lazy.over(base_ix, "id_at")):
            found = id_at.get(path)
            if found is not None:
                ids.add(found)
    records, claimed, hashes = snap.records, ix.claims, snap.paths
    # the base's tables read at these ids only (a stored image's are probed, not parsed)
    base_records, base_claimed, base_hashes = base.records, Lazy.over(base_ix, "claims"), Lazy.over(base, "paths")
    moved: dict[str, list[str]] = {}
    for rid in ids:
        if rid in records:
            path = claimed[rid][0]
            was = base_claimed[rid][0] if rid in base_records else None
            if was != path or base_hashes.get(was) != hashes[path]:
                moved[rid] = [rid, path, hashes[path]]
    # in the records' own order (a Layered's: a record built since comes after the stored ones, in the order
    # of its top layer, as a patch puts it; any other mapping: its order, found by going through it)
    top = getattr(records, "top", None)
    if isinstance(top, dict) and moved.keys() <= top.keys():
        put = [rid for rid in top if rid in moved]
    else:
        order = {rid: i for i, rid in enumerate(records)} if moved else {}
        put = sorted(moved, key=order.__getitem__)
    gone = sorted(rid for rid in ids if rid not in records and rid in base_records)
    facets = snap.facets()
    return {"set": [moved[rid] for rid in put], "del": gone, "facets": [list(facets.of(rid)) for rid in put]}


def _void_and_add(data: dict[str, list[str]], void: list[str], add: dict[str, list[str]]) -> None:
    """A deferred key -> ids map's changes over ``data`` (as ``Deferred.flat`` makes them): ``void``'s ids
    dropped from every key, then ``add``'s merged in, each list sorted; a key left with none removed."""
    gone = set(void)
    changed = {k: [i for i in ids if i not in gone] for k, ids in data.items() if gone and not gone.isdisjoint(ids)}
    for key, more in add.items():
        changed[key] = sorted([*changed.get(key, data.get(key, ())), *more])
    for key, ids in changed.items():  # (a key kept stays in its place, a new one goes last: as flat's)
        if ids:
            data[key] = ids
        else:
            data.pop(key, None)


# -- reading ---------------------------------------------------------------------------------------
class ImageParts:
    """The image's parts (deflated), read in one transaction; each parsed, its digest checked and the
    patches applied, on first use."""

    def __init__(self, meta: dict[str, Any], texts: dict[str, bytes], on_damage: Callable[[], None]) -> None:
        self.meta, self.texts, self.on_damage = meta, texts, on_damage
        self.parsed: dict[str, Any] = {}
        self._patches: list[dict[str, Any]] | None = None
        self._points: dict[str, dict[str, Any]] = {}  # the ``points.<k>`` parts read (``point``)
        self._points_dropped = False  # (every part parsed: ``drop_points``)

    def _bytes(self, name: str, digest: str | None) -> bytes:
        data = self._text(name)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            raise ValueError("missing, or its digest differs")
        return data

    def _text(self, name: str) -> bytes | None:
        """A part's JSON text: inflated, or as it is for ``STORED_PLAIN`` (None: missing)."""
        raw = self.texts.get(name)
        if not isinstance(raw, bytes):
            return None
        return raw if name in STORED_PLAIN else inflate_bytes(raw)

    def _json(self, name: str, digest: str | None) -> Any:
        data = self._text(name)
        if data is None:
            raise ValueError("missing, or its digest differs")
        if len(data) < DIGEST_BESIDE_BYTES:
            if hashlib.sha256(data).hexdigest() != digest:
                raise ValueError("missing, or its digest differs")
            parsed = json.loads(data)
        else:  # the digest taken in a thread while this one parses (hashlib lets go of the interpreter)
            found: list[str] = []
            hashing = threading.Thread(target=lambda: found.append(hashlib.sha256(data).hexdigest()))
            hashing.start()
            try:
                parsed = json.loads(data)
            finally:
                hashing.join()
            if found != [digest]:
                raise ValueError("missing, or its digest differs")
        # parsed once (``parsed`` keeps the table): its stored bytes are not read again (15 MB at 100k records)
        self.texts.pop(name, None)
        return parsed

    def point(self, rid: str) -> Any:
        """``rid``'s [path, file sha256, lifecycle, superseded by] as the image was first written (from its
        ``points.<k>`` part, parsed once): None when the image holds no such id, ``UNKNOWN`` for an image
        without those parts. A key a patch wrote over is read from the patch (``patched_key``,
        ``patched_record``)."""
        shards = self.meta.get("shards")
        if not isinstance(shards, int) or shards < 1 or self._points_dropped:
            return UNKNOWN
        name = f"points.{shard_of(rid, shards)}"
        table = self._points.get(name)
        if table is None:
            try:
                table = self._points[name] = json.loads(self._bytes(name, self.meta["parts"].get(name)))
                if not isinstance(table, dict):
                    raise ValueError("not an object")
                self.texts.pop(name, None)  # (parsed once, kept parsed)
            except (ValueError, TypeError, KeyError, AttributeError, sqlite3.DatabaseError) as exc:
                raise self.damaged(name, exc) from exc
        found = table.get(rid)
        if found is not None and not (isinstance(found, list) and len(found) == 4):
            raise self.damaged(name, ValueError(f"{rid!r} holds {found!r}"))
        return found

    def drop_points(self) -> None:
        """Forget the points parts (every part they copy is parsed)."""
        for name in [n for n in self.texts if n.startswith("points.")]:
            del self.texts[name]
        self._points.clear()
        self._points_dropped = True

    def point_value(self, name: str, key: str) -> Any:
        """``key``'s value in the lifecycle or superseded_by part without parsing it: the value, ``ABSENT``,
        or ``UNKNOWN`` (the part must be parsed to tell)."""
        if name in self.parsed:
            return UNKNOWN
        over = self.patched_key(name, key)
        if over is not UNTOUCHED:
            return over if over is ABSENT or isinstance(over, str) else UNKNOWN
        found = self.point(key)
        if found is UNKNOWN:
            return UNKNOWN
        value = None if found is None else found[2 if name == "lifecycle" else 3]
        return ABSENT if value is None else value

    def patched_key(self, name: str, key: str) -> Any:
        """``key``'s value in part ``name`` as the patches leave it (``get`` applies them the same way): the last
        patch's value, ``ABSENT`` (removed), ``UNTOUCHED`` (no patch names it: the part as first written holds it), or
        ``UNKNOWN`` (a patch wrote the part whole, or a patch is unreadable: the part must be parsed)."""
        found: Any = UNTOUCHED
        try:
            for patch in self.patches():
                if name in patch["whole"]:
                    return UNKNOWN
                change = patch["parts"].get(name)
                if change is None:
                    continue
                if "void" in change:  # ids dropped from every key: the part must be parsed
                    return UNKNOWN
                if key in change["del"]:  # (removed after the keys are set)
                    found = ABSENT
                elif key in change["set"]:
                    found = change["set"][key]
        except (ImageDamaged, ValueError, TypeError, KeyError, AttributeError):
            return UNKNOWN
        return found

    def patched_record(self, rid: str) -> Any:
        """Record ``rid``'s path as the patches' record locations leave it (``records`` applies them the same
        way): a path, ``ABSENT``, ``UNTOUCHED`` or ``UNKNOWN`` (as ``patched_key``)."""
        found: Any = UNTOUCHED
        try:
            for patch in self.patches():
                change = patch["records"]
                if rid in change["del"]:  # (removed before the locations are set)
                    found = ABSENT
                for at, path, _ in change["set"]:
                    if at == rid:
                        found = path
        except (ImageDamaged, ValueError, TypeError, KeyError, AttributeError):
            return UNKNOWN
        return found if found is ABSENT or found is UNTOUCHED or isinstance(found, str) else UNKNOWN

    def patches(self) -> list[dict[str, Any]]:
        """The patches written since the parts, in order (each parsed and checked once)."""
        if self._patches is None:
            self._patches = [self._json(name, digest) for name, digest, _ in self.meta.get("patches") or ()]
        return self._patches

    def get(self, name: str, read: Callable[[Any], Any]) -> Any:
        found = self.parsed.get(name)
        if found is None:
            try:
                data = self._json(name, self.meta["parts"].get(name))
                for patch in self.patches():
                    if name in patch["whole"]:
                        data = patch["whole"][name]
                    elif name in patch["parts"]:
                        change = patch["parts"][name]
                        if "void" in change:
                            _void_and_add(data, change["void"], change["add"])
                        data.update(change["set"])
                        for key in change["del"]:
                            data.pop(key, None)
                found = self.parsed[name] = read(data)
            except (ValueError, TypeError, KeyError, AttributeError, sqlite3.DatabaseError) as exc:
                raise self.damaged(name, exc) from exc
        return found

    def damaged(self, name: str, exc: Exception) -> ImageDamaged:
        self.on_damage()
        return ImageDamaged(f"stored snapshot part {name!r} is damaged ({exc}); building it again")

    def records(self, where: dict[str, str], sha: dict[str, str] | None) -> None:
        """Apply the patches' record locations to id -> path (``sha`` None) or to id -> sha256."""
        try:
            for patch in self.patches():
                change = patch["records"]
                for rid in change["del"]:
                    (where if sha is None else sha).pop(rid, None)
                for rid, path, digest in change["set"]:
                    if sha is None:
                        where.pop(rid, None)  # a record built since comes after the stored ones
                        where[rid] = path
                    else:
                        sha[rid] = digest
        except (ValueError, TypeError, KeyError, AttributeError, sqlite3.DatabaseError) as exc:
            raise self.damaged("records", exc) from exc

    def facets(self, ids: list[str]) -> FacetColumns:
        """The stored records' facets (``ids``: as record_ids holds them), with the patches' changes over them."""
        columns = self.get("record_facets", lambda data: data)
        try:
            over: dict[str, Facet | None] = {}
            for patch in self.patches():
                change = patch["records"]
                for rid in change["del"]:
                    over[rid] = None
                for (rid, _, _), (folder, kind, type_, tags) in zip(change["set"], change["facets"], strict=True):
                    over[rid] = Facet(folder, kind, type_, tuple(tags))
            base = self.meta["parts"].get("record_ids")
            return FacetColumns(columns, ids, over, base=base if isinstance(base, str) else None)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise self.damaged("record_facets", exc) from exc


class StoredSnapshot(Snapshot):
    """A snapshot read back from state.sqlite: each table parsed when first used, records filled per id."""

    parts: ImageParts
    records: StoredRecords  # type: ignore[assignment]

    def __init__(
        self, parts: ImageParts, scanner: Scanner, *, config: StoreConfig, generation: int, evaluated_at: datetime
    ) -> None:
        # not the dataclass __init__: the stored tables stay unset until __getattr__ parses them
        meta, valid_until = parts.meta, parts.meta["valid_until"]
        self.parts = parts
        self.generation = generation
        self.scanned_at = datetime.fromisoformat(meta["scanned_at"])
        self.evaluated_at = evaluated_at
        self.config = config
        self.valid_until = datetime.fromisoformat(valid_until) if valid_until else None
        self.changed_ids = None
        self.previous_generation = None
        self.image_key = meta["key"]
        self.records = StoredRecords(parts, scanner, self)
        self.index = StoredIndex(parts, self.records)
        self._points = 0  # lifecycles read where they lie (``lifecycle_at``)

    def lifecycle_at(self, rid: str) -> str:
        if "lifecycle" not in vars(self) and self._points < POINTS:  # not parsed: read where it lies
            self._points += 1
            found = self.parts.point_value("lifecycle", rid)
            if found is ABSENT:
                raise KeyError(rid)
            if found is not UNKNOWN:
                return str(found)
        return self.lifecycle[rid]

    def probe(self, name: str) -> Callable[[str], Any] | None:
        """How an update reads one key of the table ``name`` without parsing it (None: it does not): a
        record's file hash, from the record at that path; every other file scanned is excluded (its hash:
        ``UNKNOWN``); any other path was not scanned (``ABSENT``). A lifecycle or a successor is read from the
        image's points (``ImageParts.point_value``), for the first ``POINTS`` keys (then parsed)."""
        if name in ("lifecycle", "superseded_by"):
            read: list[int] = []

            def value_at(key: str) -> Any:
                if len(read) >= POINTS:
                    return UNKNOWN
                read.append(1)
                return self.parts.point_value(name, key)

            return value_at
        if name != "paths":
            return None
        records = self.records

        def sha_at(path: str) -> Any:
            rid = records.id_at_path(path)
            if rid is not None:
                return records.sha256_of(rid)
            return UNKNOWN if path in self.excluded else ABSENT

        return sha_at

    def parse_all(self) -> None:
        """Parse every part now (raises ImageDamaged for a damaged one): before it leaves a call for good. The
        points, a copy of what the parsed parts hold, are dropped."""
        for name in SNAPSHOT_PARTS:
            getattr(self, name)
        index = self.index
        for name in INDEX_PARTS:
            getattr(index, name)
        self.records.parse_all()
        self.parts.drop_points()

    def __getattr__(self, name: str) -> Any:  # only called for what is not set yet: the stored tables
        return _stored_attribute(self, name, SNAPSHOT_PARTS, "")


class StoredIndex(SnapshotIndex):
    """A stored snapshot's index: each table parsed from its part when first used."""

    parts: ImageParts

    def __init__(self, parts: ImageParts, records: StoredRecords) -> None:  # not the dataclass __init__: the tables
        self.parts, self.stored_records = parts, records  # are parsed on first use

    def probe(self, name: str) -> Callable[[str], Any] | None:
        """How an update reads one key of ``id_at`` or ``claims`` without parsing it (None for another table):
        a path with a valid id is a record's (record_paths) or a duplicated id's (dup_issues names its files)."""
        records = self.stored_records
        if name == "id_at":

            def id_at(path: str) -> Any:
                rid = records.id_at_path(path)
                if rid is not None:
                    return rid
                for rid, issues in self.dup_issues.items():
                    if any(i.path == path for i in issues):
                        return rid
                return ABSENT

            return id_at
        if name == "claims":

            def claims(rid: str) -> Any:
                path = records.path_of(rid)
                if path is not None:
                    return [path]
                issues = self.dup_issues.get(rid)
                return ABSENT if issues is None else [i.path for i in issues]

            return claims
        return None

    def __getattr__(self, name: str) -> Any:
        return _stored_attribute(self, name, INDEX_PARTS, "index.")


def _stored_attribute(
    obj: StoredSnapshot | StoredIndex, name: str, parts: Mapping[str, tuple[Any, Callable[[Any], Any]]], prefix: str
) -> Any:
    """A stored table, parsed from its part and kept on ``obj`` (so this runs once per attribute)."""
    spec = parts.get(name)
    if spec is None or name.startswith("__"):
        raise AttributeError(name)
    value = obj.parts.get(prefix + name, spec[1])
    setattr(obj, name, value)
    return value


class StoredRecords(Mapping[str, Record]):
    """id -> Record of a stored snapshot: the record of its file, as scan_files_v1 holds it, built on first use."""

    def __init__(self, parts: ImageParts, scanner: Scanner, snap: StoredSnapshot) -> None:
        self._parts, self._scanner, self._snap = parts, scanner, snap
        self._records: dict[str, Record] = {}
        self._loads = 0
        self._complete = False
        self._formers: dict[str, dict[str, list[str]]] = {}  # "names", "references": the stored map inverted
        self._current_at: int | None = None  # the scanner's change count when the engine said `current`
        self._stored_ids: list[str] | None = None  # the ids as record_ids holds them (when patches follow)
        self._outdated: dict[str, int] = {}  # keys of records whose file changed since, found per map
        self._sha_patched = False
        self._points = 0  # record hashes read one by one (``sha256_of``) before record_sha is parsed
        self._patched_sha: dict[str, str] | None = None
        self._path_read: dict[str, Any] = {}  # record paths read where they lie (``_point``), record_paths not parsed

    @property
    def snapshot(self) -> StoredSnapshot:
        """The stored snapshot these records were loaded with."""
        return self._snap

    @property
    def current(self) -> bool:
        """True while the scanner holds exactly the files the image was built from (no hash to compare).

        The engine sets it when it adopts the image without drift; it stays true only until the
        scanner changes a file, whoever builds on these records by then (a snapshot built for an
        expiry, knowtk.yaml or a safeguard keeps them as its base: an edit after that must be
        compared, or the edited record would be taken for the one stored).
        """
        return self._current_at is not None and self._current_at == self._scanner.changes

    @current.setter
    def current(self, value: bool) -> None:
        self._current_at = self._scanner.changes if value else None

    @cached_property
    def _record_ids(self) -> list[str]:
        """The ids of the records as stored (record_ids), in the parts' order (before the patches)."""
        found: list[str] = self._parts.get("record_ids", _a_list)
        return found

    @cached_property
    def _record_columns(self) -> tuple[list[str], list[str]]:
        """The ids and the paths of the records as stored (record_ids, record_paths), in the parts' order."""
        ids, paths = self._record_ids, self._parts.get("record_paths", _a_list)
        if len(ids) != len(paths):
            raise self._parts.damaged("record_paths", ValueError("record_ids and record_paths differ in length"))
        return ids, paths

    @cached_property
    def _where(self) -> dict[str, str]:
        """id -> path of every record."""
        ids, paths = self._record_columns
        try:
            where = dict(zip(ids, paths, strict=True))
        except (TypeError, ValueError) as exc:
            raise self._parts.damaged("record_paths", exc) from exc
        if self._parts.meta.get("patches"):
            self._stored_ids = ids  # record_sha's order: the ids as the parts hold them, before the patches
            self._parts.records(where, None)
        return where

    @cached_property
    def _sha(self) -> dict[str, str]:
        """id -> sha256 of the file each record was built from."""
        where = self._where
        ids = self._stored_ids if self._stored_ids is not None else where.keys()
        sha: dict[str, str] = self._parts.get("record_sha", lambda shas: dict(zip(ids, shas, strict=True)))
        if self._stored_ids is not None and not self._sha_patched:
            self._sha_patched = True
            self._parts.records(where, sha)
        return sha

    def parse_all(self) -> None:
        """Parse the stored ids, paths, hashes and facets now (raises ImageDamaged for a damaged part)."""
        self._sha  # noqa: B018 (parsed on first use, and the ids and paths with it)
        self.facets()

    def facets(self) -> FacetColumns:
        """The stored records' filter facets, read from the image: no record is built for them."""
        return self._facets

    @cached_property
    def _facets(self) -> FacetColumns:
        # aligned with the stored ids, the patches' records kept over them by id: id -> path is not needed (its
        # dict cost ~50 ms at 300k records)
        return self._parts.facets(self._record_ids)

    @cached_property
    def at_path(self) -> dict[str, str]:
        """path -> id of every record (record_paths inverted): an update's probe of the file it changed."""
        return {path: rid for rid, path in self._where.items()}

    def id_at_path(self, path: str) -> str | None:
        """The id of the stored record at ``path`` (None: none): the id the file claims now when the stored
        record of that id is at that path (a file claims one id), else found in ``at_path``."""
        entry = self._scanner.entry(path)
        rid = entry.record.id if entry is not None and entry.record is not None else None
        if rid is not None and self.path_of(rid) == path:
            return rid
        return self.at_path.get(path)

    def path_of(self, rid: str) -> str | None:
        """The path of record ``rid``, or None."""
        found = self._point(rid)
        if found is UNKNOWN:
            return self._where.get(rid)
        return None if found is ABSENT else str(found)

    @property
    def ids(self) -> KeysView[str]:
        """The ids of the stored records, without building any."""
        return self._where.keys()

    def __len__(self) -> int:
        return len(self._where)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __contains__(self, rid: object) -> bool:
        found = self._point(rid) if isinstance(rid, str) else UNKNOWN
        return rid in self._where if found is UNKNOWN else found is not ABSENT

    def __getitem__(self, rid: str) -> Record:
        found = self._records.get(rid)
        if found is None:
            found = self._record(rid, self._path(rid))
        return found

    def _path(self, rid: str) -> str:
        """The path of record ``rid`` (KeyError: none): a query's few records read where they lie in record_paths."""
        found = self._point(rid)
        if found is ABSENT:
            raise KeyError(rid)
        return self._where[rid] if found is UNKNOWN else str(found)

    def _point(self, rid: str) -> Any:
        """``rid``'s path read where it lies (``_path_point``) while record_paths is not parsed, for the first
        ``POINTS`` reads (past them it is parsed: a pass over many records reads them all); else ``UNKNOWN``."""
        found = self._path_read.get(rid, UNKNOWN)
        if found is UNKNOWN and "_where" not in vars(self) and len(self._path_read) < POINTS:
            found = self._path_read[rid] = self._path_point(rid)  # (a record the build asks about again and again)
        return found

    def _path_point(self, rid: str) -> Any:
        """``rid``'s path: the last patch's that names it, else the image's points (``ImageParts.point``)."""
        over = self._parts.patched_record(rid)
        if over is not UNTOUCHED:
            return over
        found = self._parts.point(rid)
        if found is UNKNOWN:
            return UNKNOWN
        return ABSENT if found is None or found[0] is None else found[0]

    def _record(self, rid: str, path: str) -> Record:
        self._loads += 1
        if self._loads == BULK_AFTER:
            self._scanner.fill_all()
        entry = self._scanner.entry(path)
        # while `current`, the scanner holds exactly the files the image was built from (no hash to compare)
        if (
            entry is None
            or (not self.current and entry.sha256 != self.sha256_of(rid))
            or entry.record is None
            or entry.record.id != rid
        ):
            raise SnapshotOutdated(f"{path} has changed since this snapshot")
        self._records[rid] = entry.record
        return entry.record

    def load_all(self, skip: Container[str] = ()) -> None:
        """Build every record now (one pass over scan_files_v1), but those in ``skip`` (replaced since)."""
        if self._complete:
            return
        with collector_paused():
            self._load_all(skip)

    def _load_all(self, skip: Container[str]) -> None:
        self._scanner.fill_all()
        records = self._records
        loaded = {}
        for rid, path in self._where.items():
            found = records.get(rid)
            if found is None and rid not in skip:
                found = self._record(rid, path)
            if found is not None:
                loaded[rid] = found
        self._records = loaded  # in the stored order
        self._complete = len(loaded) == len(self._where)

    def values(self) -> Any:
        self.load_all()
        return self._records.values()

    def items(self) -> Any:
        self.load_all()
        return self._records.items()

    def overlay(self) -> Layered:
        return Layered(self)

    def sha256_of(self, rid: str) -> str | None:
        if "_sha" not in vars(self) and self._points < SHA_POINTS:  # not parsed: one hash read where it lies
            self._points += 1
            found = self._sha_point(rid)
            if found is not UNKNOWN:
                return found
        return self._sha.get(rid)

    def _sha_point(self, rid: str) -> Any:
        """One record's file hash, the patches' over the image's points (``ImageParts.point``): neither record_paths
        nor record_sha is parsed; ``UNKNOWN`` for an image without points."""
        over = self._parts.patched_record(rid)
        if over is ABSENT or over is UNKNOWN:
            return None if over is ABSENT else UNKNOWN
        if self._patched_sha is None:
            patched: dict[str, str] = {}
            self._parts.records({}, patched)  # the hashes the patches set, last one kept
            self._patched_sha = patched
        found = self._patched_sha.get(rid)
        if found is not None:
            return found
        if over is not UNTOUCHED:
            return UNKNOWN  # (a record a patch placed has its hash in that patch)
        point = self._parts.point(rid)
        if point is UNKNOWN:
            return UNKNOWN
        return None if point is None or point[0] is None else point[1]

    def previous(self, rid: str) -> Record | Former | None:
        """The stored record, or (its file changed since) the names and references a build takes back."""
        if rid not in self:  # (read where it lies: record_paths is not parsed for a few changed records)
            return None
        try:
            return self[rid]
        except SnapshotOutdated:
            pass
        return Former(rid, find=lambda which: self._former(rid, which))  # found only if the build reads them

    def _former(self, rid: str, which: str) -> Iterable[str]:
        """The keys the stored snapshot has ``rid`` under in its names (``which``: "names") or its referrers."""
        index = self._snap.index
        assert index is not None
        grouped: Mapping[str, list[str]] = self._snap.names if which == "names" else index.referrers
        self._outdated[which] = count = self._outdated.get(which, 0) + 1
        inverted = self._formers.get(which)
        if inverted is None and count <= FORMER_SCANS:  # a few: each a pass over the map
            return [key for key, ids in grouped.items() if rid in ids]
        if inverted is None:  # the stored map, inverted once
            inverted = {}
            for key, ids in grouped.items():
                for i in ids:
                    inverted.setdefault(i, []).append(key)
            self._formers[which] = inverted
        return inverted.get(rid, ())


class Image:
    """A loaded image: its snapshot (tables parsed on first use) and what decides whether it may be used."""

    def __init__(self, meta: dict[str, Any], snapshot: StoredSnapshot) -> None:
        self.key: str = meta["key"]
        behind = meta.get("behind", [])
        valid = isinstance(behind, list) and all(isinstance(p, str) for p in behind)
        # (a token without a readable list of the files it is behind on is no token: every file is compared)
        self.scan_token: int | None = meta.get("scan_token") if valid else None
        self.behind: list[str] = behind if valid else []
        self.config: str = meta["config"]
        self.guards: str = meta["guards"]
        self.snapshot = snapshot


def load_image(
    state: StateDB, scanner: Scanner, *, config: StoreConfig, generation: int, on_damage: Callable[[], None]
) -> Image | None:
    """The stored snapshot, or None when there is none usable (absent, another format, unreadable)."""
    try:
        with state.reading() as conn:
            if not state.table_exists(TABLE):
                return None
            texts = dict(conn.execute(f"SELECT part, data FROM {TABLE}"))
    except sqlite3.Error:
        return None
    try:
        meta = json.loads(texts.pop("meta"))
        if not isinstance(meta, dict):
            return None
        if meta.get("format") != FORMAT or meta.get("config") != config_key(config):
            return None
        evaluated_at = datetime.fromisoformat(meta["evaluated_at"])
        if evaluated_at > now_utc():  # judged at a later instant (another clock, or this one set back):
            return None  # its expiry would be ahead of this process's, and valid_until only looks forward
        parts = ImageParts(meta, texts, on_damage)
        snap = StoredSnapshot(parts, scanner, config=config, generation=generation, evaluated_at=evaluated_at)
        return Image(meta, snap)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # an unreadable image is no image: the next full build writes a new one
