"""The snapshot kept in state.sqlite, so that a new process loads it instead of building it.

A full build validates every record and applies the store-wide rules (about 1.5 s per
100k records). A new process (a kernel restart, each CLI call, an agent server's start)
would pay that before its first answer. ``write_image`` stores a built snapshot's tables as
JSON parts of ``snapshot_image_v1``, one row each, in one transaction; ``load_image`` reads
them back in one read and parses a part only when a query first needs it. The records are
not stored here: they stay in ``scan_files_v1``, and a stored snapshot fills one from there
when a query asks for it (``StoredRecords``).

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
from collections.abc import Callable, Container, Iterator, KeysView, Mapping
from datetime import datetime
from functools import cached_property
from typing import Any

from knowtk.model.config import StoreConfig
from knowtk.model.datevalues import DateValue, parse_date_value
from knowtk.model.records import Issue, Record
from knowtk.scan.cache import Scanner
from knowtk.scan.pool import collector_paused
from knowtk.snapshot.model import ChainEnd, Snapshot, SnapshotIndex
from knowtk.snapshot.overlay import Former, Layered
from knowtk.snapshot.safeguards import Safeguards
from knowtk.state import Contention, StateDB, now_utc

__all__ = [
    "ImageDamaged",
    "ImageParts",
    "StoredIndex",
    "StoredRecords",
    "StoredSnapshot",
    "config_key",
    "guards_key",
    "load_image",
    "write_image",
]

FORMAT = 2  # bump when a part's meaning changes: an image of another format is never read
TABLE = "snapshot_image_v1"
# single record loads past which a stored mapping fills every record in one pass (a query that
# walks all records, like the inventory or a filtered search, would otherwise read them one by one)
BULK_AFTER = 2000

_SCHEMA = f"CREATE TABLE IF NOT EXISTS {TABLE} (part TEXT PRIMARY KEY, data TEXT NOT NULL)"


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


def _zipped(lists: list[list[str]]) -> dict[str, str]:
    keys, values = lists
    return dict(zip(keys, values, strict=True))


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
    "lifecycle": (lambda s: s.lifecycle, dict),
    "superseded_by": (lambda s: s.superseded_by, dict),
    "supersedes": (lambda s: s.supersedes, dict),
    "unavailable": (lambda s: s.unavailable, _pairs),
    "unavailable_inactive": (lambda s: s.unavailable_inactive, _pairs),
    "expired": (lambda s: sorted(s.expired), set),
    "chain_ends": (
        lambda s: {k: [e.current, e.reason, list(e.via)] for k, e in s.chain_ends.items()},
        lambda d: {k: ChainEnd(c, r, tuple(v)) for k, (c, r, v) in d.items()},
    ),
    "names": (lambda s: dict(s.names), dict),
    "issues": (lambda s: _issues(s.issues), lambda rows: list(_read_issues(rows))),
    "excluded": (lambda s: s.excluded, dict),
    "paths": (lambda s: s.paths, dict),
}
INDEX_PARTS: dict[str, tuple[Callable[[SnapshotIndex], Any], Callable[[Any], Any]]] = {
    "id_at": (lambda x: x.id_at, dict),
    "claims": (lambda x: dict(x.claims), dict),
    "referrers": (lambda x: dict(x.referrers), dict),
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
    state: StateDB, snap: Snapshot, *, scanner: Scanner, config: StoreConfig, safeguards: Safeguards
) -> str | None:
    """Store ``snap`` as the image a new process loads; returns its key (None when it could not be written).

    A projection: a failure to write costs the next new process a build, never this query.
    """
    ix = snap.index
    assert ix is not None
    texts: dict[str, str] = {}
    for name, (dump, _) in SNAPSHOT_PARTS.items():
        texts[name] = json.dumps(dump(snap), ensure_ascii=False)
    for name, (dump_index, _) in INDEX_PARTS.items():
        texts["index." + name] = json.dumps(dump_index(ix), ensure_ascii=False)
    claims, paths = ix.claims, snap.paths
    # id -> path and id -> sha256 as parallel lists: read back by dict(zip()), twice as fast as a JSON object
    ids = list(snap.records)
    at = [claims[rid][0] for rid in ids]
    texts["record_at"] = json.dumps([ids, at], ensure_ascii=False)
    texts["record_sha"] = json.dumps([paths[path] for path in at])
    import uuid  # only a process that writes an image needs it

    key = uuid.uuid4().hex
    meta = {
        "format": FORMAT,
        "key": key,
        "scan_token": scanner.saved_token,  # the scan cache as this snapshot was built from it
        "scanned_at": snap.scanned_at.isoformat(),
        "evaluated_at": snap.evaluated_at.isoformat(),
        "valid_until": snap.valid_until.isoformat() if snap.valid_until else None,
        "config": config_key(config),
        "guards": guards_key(safeguards),
        "parts": {name: hashlib.sha256(text.encode()).hexdigest() for name, text in texts.items()},
    }
    try:
        with state.transaction() as conn:
            conn.execute(_SCHEMA)
            conn.execute(f"DELETE FROM {TABLE}")
            conn.executemany(f"INSERT INTO {TABLE} (part, data) VALUES (?, ?)", [("meta", json.dumps(meta))])
            conn.executemany(f"INSERT INTO {TABLE} (part, data) VALUES (?, ?)", texts.items())
    except (sqlite3.Error, Contention):
        return None
    return key


# -- reading ---------------------------------------------------------------------------------------
class ImageParts:
    """The image's texts, read in one transaction; each parsed (and its digest checked) on first use."""

    def __init__(self, meta: dict[str, Any], texts: dict[str, str], on_damage: Callable[[], None]) -> None:
        self.meta, self.texts, self.on_damage = meta, texts, on_damage
        self.parsed: dict[str, Any] = {}

    def get(self, name: str, read: Callable[[Any], Any]) -> Any:
        found = self.parsed.get(name)
        if found is None:
            text = self.texts.get(name)
            try:
                if text is None or hashlib.sha256(text.encode()).hexdigest() != self.meta["parts"].get(name):
                    raise ValueError("missing, or its digest differs")
                found = self.parsed[name] = read(json.loads(text))
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                self.on_damage()
                raise ImageDamaged(f"stored snapshot part {name!r} is damaged ({exc}); building it again") from exc
        return found


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
        self.index = StoredIndex(parts)
        self.image_key = meta["key"]
        self.records = StoredRecords(parts, scanner, self)

    def parse_all(self) -> None:
        """Parse every part now (raises ImageDamaged for a damaged one): before it leaves a call for good."""
        for name in SNAPSHOT_PARTS:
            getattr(self, name)
        index = self.index
        for name in INDEX_PARTS:
            getattr(index, name)
        self.records.parse_all()

    def __getattr__(self, name: str) -> Any:  # only called for what is not set yet: the stored tables
        return _stored_attribute(self, name, SNAPSHOT_PARTS, "")


class StoredIndex(SnapshotIndex):
    """A stored snapshot's index: each table parsed from its part when first used."""

    parts: ImageParts

    def __init__(self, parts: ImageParts) -> None:  # not the dataclass __init__: the tables are parsed on first use
        self.parts = parts

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
        self._formers: tuple[dict[str, set[str]], dict[str, list[str]]] | None = None
        self._current_at: int | None = None  # the scanner's change count when the engine said `current`

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
    def _where(self) -> dict[str, str]:
        """id -> path of every record."""
        where: dict[str, str] = self._parts.get("record_at", _zipped)
        return where

    @cached_property
    def _sha(self) -> dict[str, str]:
        """id -> sha256 of the file each record was built from."""
        ids = self._where.keys()
        sha: dict[str, str] = self._parts.get("record_sha", lambda shas: dict(zip(ids, shas, strict=True)))
        return sha

    def parse_all(self) -> None:
        """Parse the stored ids, paths and hashes now (raises ImageDamaged for a damaged part)."""
        self._sha  # noqa: B018 (parsed on first use, and the ids and paths with it)

    @property
    def ids(self) -> KeysView[str]:
        """The ids of the stored records, without building any."""
        return self._where.keys()

    def __len__(self) -> int:
        return len(self._where)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __contains__(self, rid: object) -> bool:
        return rid in self._where

    def __getitem__(self, rid: str) -> Record:
        found = self._records.get(rid)
        if found is None:
            found = self._record(rid, self._where[rid])
        return found

    def _record(self, rid: str, path: str) -> Record:
        self._loads += 1
        if self._loads == BULK_AFTER:
            self._scanner.fill_all()
        entry = self._scanner.entry(path)
        # while `current`, the scanner holds exactly the files the image was built from (no hash to compare)
        if (
            entry is None
            or (not self.current and entry.sha256 != self._sha[rid])
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
        return self._sha.get(rid)

    def previous(self, rid: str) -> Record | Former | None:
        """The stored record, or (its file changed since) the names and references a build takes back."""
        if rid not in self._where:
            return None
        try:
            return self[rid]
        except SnapshotOutdated:
            pass
        if self._formers is None:  # the stored name and reference maps, inverted once
            index = self._snap.index
            assert index is not None
            keys: dict[str, set[str]] = {}
            refs: dict[str, list[str]] = {}
            for key, ids in self._snap.names.items():
                for i in ids:
                    keys.setdefault(i, set()).add(key)
            for ref, ids in index.referrers.items():
                for i in ids:
                    refs.setdefault(i, []).append(ref)
            self._formers = (keys, refs)
        return Former(rid, frozenset(self._formers[0].get(rid, ())), tuple(self._formers[1].get(rid, ())))


class Image:
    """A loaded image: its snapshot (tables parsed on first use) and what decides whether it may be used."""

    def __init__(self, meta: dict[str, Any], snapshot: StoredSnapshot) -> None:
        self.key: str = meta["key"]
        self.scan_token: int | None = meta.get("scan_token")
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
