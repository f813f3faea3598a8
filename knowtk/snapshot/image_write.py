"""Writing a snapshot as the image a new process loads: whole, or as a patch over the image stored.

``write_image`` stores a built snapshot's tables as parts of ``snapshot_image_v1``, one row each,
in one transaction: each part made and deflated in turn, a long one a piece of its text at a time,
into a temporary table of the connection that the transaction copies from. With ``base`` (the
snapshot the stored image is) it adds a patch instead (``image_delta``); past ``PATCHES_MAX``
patches, or patches over an eighth of the parts' size, the image is written whole again. The meta
row is also updated alone: ``record_behind`` records which files a stored image is behind on, and
``stored_positions`` tells which id is at each stored position. A failure to write costs the next
new process a build, never a query.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from contextlib import suppress
from itertools import islice
from typing import Any

from knowtk.model.config import StoreConfig
from knowtk.scan.cache import Scanner
from knowtk.scan.pool import give_back_memory
from knowtk.snapshot.facets import encode_columns
from knowtk.snapshot.image_delta import image_delta
from knowtk.snapshot.image_format import (
    FORMAT,
    INDEX_PARTS,
    SNAPSHOT_PARTS,
    STORED_PLAIN,
    TABLE,
    ImageDamaged,
    config_key,
    guards_key,
    shard_count,
    shard_of,
)
from knowtk.snapshot.model import Snapshot
from knowtk.snapshot.safeguards import Safeguards
from knowtk.snapshot.starts import encode_starts
from knowtk.state import Contention, StateDB, deflate

__all__ = [
    "json_list_pieces",
    "json_pieces",
    "record_behind",
    "stored_order",
    "stored_positions",
    "write_image",
]

BULK_IMAGE = 50_000  # records of an image written whole past which its freed texts are given back to the system
PATCHES_MAX = 16  # patches past which the image is written whole again
PATCH_SHARE = 8  # ... and when the patches' bytes pass this share of the parts' (1/8)

# data: the meta row's JSON text; every other row deflated JSON
_SCHEMA = f"CREATE TABLE IF NOT EXISTS {TABLE} (part TEXT PRIMARY KEY, data NOT NULL)"
# the parts of an image being written, before the one transaction that puts them in TABLE (in this connection's
# temporary database: no other connection sees it, and it is gone with the connection)
_STAGING = "temp.snapshot_image_staging"
_STAGING_SCHEMA = f"CREATE TABLE IF NOT EXISTS {_STAGING} (part TEXT PRIMARY KEY, data NOT NULL)"


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
    # piece of text at a time, not the parts (205 MB deflated at 1M records, held at a cold build's peak)
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
    # each record's start in time, in the same order: a new process places records (validAt) without building them
    # (left out where that would build records: a snapshot over an image stored without them)
    starts = snap.starts()
    if starts.cheap:
        yield "record_starts", (json.dumps(encode_starts(map(starts.of, ids))),)
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


def _point_texts(snap: Snapshot, ids: list[str]) -> Iterator[tuple[str, str]]:
    """The ``points.<k>`` parts: id -> [path, file sha256, lifecycle, superseded by] of every record (and of every
    other id the lifecycle names), split by a hash of the id, so that a new process reads a page of records'
    paths and lifecycles from a few small parts instead of parsing record_paths and lifecycle whole."""
    ix = snap.index
    assert ix is not None
    shards = shard_count(len(ids))
    # the ids of each shard first, then one shard's points at a time: a million records' points held at once
    # were some 180 MB of a 1M cold build's peak
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


def stored_positions(state: StateDB, snap: Snapshot) -> tuple[str, list[str], str | None] | None:
    """(the digest of the record_ids part of the image stored as ``snap.image_key``, those ids, the digest of its
    record_facets part): which id is at each stored position (``FacetColumns.base``; a patch never changes them),
    and which facet columns (``FacetColumns.digest``). None when another image is stored, it cannot be read, or
    ``snap``'s records are not in that order (an image patched since it was written)."""
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
    facets = (meta.get("parts") or {}).get("record_facets")
    return (base, ids, facets if isinstance(facets, str) else None) if digest.hexdigest() == base else None


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
