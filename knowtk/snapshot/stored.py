"""The snapshot kept in state.sqlite, read back: a new process loads it instead of building it.

A full build validates every record and applies the store-wide rules (about 1.5 s per 100k
records); a new process (a kernel restart, each CLI call, an agent server's start) would pay that
before its first answer. ``load_image`` reads the stored image (``image_parts``) and gives a
``StoredSnapshot`` whose tables are parsed when a query first needs them. The records are not in
the image: they stay in ``scan_files_v1``, and ``StoredRecords`` fills one from there when a query
asks for it.

An image is used only when it was written by this format of knowtk, for the same ``knowtk.yaml``
and the same safeguards. The files it was built from are compared with the scan (the scan cache's
change counter says in one comparison that nothing changed); the files that differ are applied to
it like to any earlier snapshot. A damaged part raises ``ImageDamaged`` (a ``Contention``: the query
runs again, on a full build), so a damaged image costs one build, never an answer.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Container, Iterable, Iterator, KeysView, Mapping
from datetime import datetime
from functools import cached_property
from typing import Any

from knowtk.model.config import StoreConfig
from knowtk.model.records import Record
from knowtk.scan.cache import Scanner
from knowtk.scan.pool import collector_paused
from knowtk.snapshot.facets import FacetColumns
from knowtk.snapshot.image_format import FORMAT, INDEX_PARTS, SNAPSHOT_PARTS, TABLE, config_key
from knowtk.snapshot.image_parts import UNTOUCHED, ImageParts
from knowtk.snapshot.model import Snapshot, SnapshotIndex
from knowtk.snapshot.overlay import ABSENT, UNKNOWN, Layered, StaleRecord
from knowtk.snapshot.starts import RecordStarts, Starts
from knowtk.state import Contention, StateDB, now_utc

__all__ = [
    "Image",
    "SnapshotOutdated",
    "StoredIndex",
    "StoredRecords",
    "StoredSnapshot",
    "load_image",
]

# single record loads past which a stored mapping fills every record in one pass (a query that
# walks all records, like the inventory or a filtered search, would otherwise read them one by one)
BULK_AFTER = 2000
# records whose file changed since the image, taken back by a pass over the names and referrers each,
# past which both maps are inverted once (a few edits made while no process ran cost a few passes)
STALE_SCANS = 8
SHA_POINTS = 32  # record hashes read where they lie past which record_sha is parsed whole
# keys read where they lie in a part's JSON text (a record's path, its lifecycle) past which the part is parsed
# whole: a new process's query shows a page of records, and parsing record_paths and lifecycle cost ~110 ms at 100k.
# A read costs a dict lookup in a points part parsed once (~0.12 ms a part of 100 records): as many as the
# single record loads past which every record is filled anyway (64 put that parse in a process's fourth page)
POINTS = BULK_AFTER


class SnapshotOutdated(Contention):
    """A stored snapshot was asked for a record whose file has changed since: the query runs again."""


def _a_list(value: Any) -> list[Any]:
    """A column part as read (ValueError: not a list)."""
    if not isinstance(value, list):
        raise ValueError("not a list")
    return value


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
        self._inverted_maps: dict[str, dict[str, list[str]]] = {}  # "names", "references": the stored map inverted
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
        """Parse the stored ids, paths, hashes, facets and starts now (raises ImageDamaged for a damaged part)."""
        self._sha  # noqa: B018 (parsed on first use, and the ids and paths with it)
        self.facets()
        self.starts()

    def facets(self) -> FacetColumns:
        """The stored records' filter facets, read from the image: no record is built for them."""
        return self._facets

    @cached_property
    def _facets(self) -> FacetColumns:
        # aligned with the stored ids, the patches' records kept over them by id: id -> path is not needed (its
        # dict cost ~50 ms at 300k records)
        # (the stored ids read when first needed: a filter answered by stored position needs none)
        return self._parts.facets(lambda: self._record_ids)

    def starts(self) -> Starts:
        """The stored records' starts in time, read from the image (no record built for them); from the records
        for an image stored without them."""
        return self._starts

    @cached_property
    def _starts(self) -> Starts:
        found = self._parts.starts(lambda: self._record_ids)
        return RecordStarts(self) if found is None else found

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

    def previous(self, rid: str) -> Record | StaleRecord | None:
        """The stored record, or (its file changed since) the names and references a build takes back."""
        if rid not in self:  # (read where it lies: record_paths is not parsed for a few changed records)
            return None
        try:
            return self[rid]
        except SnapshotOutdated:
            pass
        return StaleRecord(rid, find=lambda which: self._stale_keys(rid, which))  # found only if the build reads them

    def _stale_keys(self, rid: str, which: str) -> Iterable[str]:
        """The keys the stored snapshot has ``rid`` under in its names (``which``: "names") or its referrers."""
        index = self._snap.index
        assert index is not None
        grouped: Mapping[str, list[str]] = self._snap.names if which == "names" else index.referrers
        self._outdated[which] = count = self._outdated.get(which, 0) + 1
        inverted = self._inverted_maps.get(which)
        if inverted is None and count <= STALE_SCANS:  # a few: each a pass over the map
            return [key for key, ids in grouped.items() if rid in ids]
        if inverted is None:  # the stored map, inverted once
            inverted = {}
            for key, ids in grouped.items():
                for i in ids:
                    inverted.setdefault(i, []).append(key)
            self._inverted_maps[which] = inverted
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
