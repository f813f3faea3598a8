"""The ``Snapshot``: the store as one query sees it, and the index a build keeps to update it.

Also the small rules a query applies to it: name normalisation, expiry, scope.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cached_property

from knowtk.errors import InvalidArgument
from knowtk.model.config import StoreConfig
from knowtk.model.datevalues import DateValue
from knowtk.model.records import Issue, Record
from knowtk.model.shapes import field, shape
from knowtk.snapshot.facets import Criteria, Facets, Positions, RecordFacets
from knowtk.snapshot.starts import RecordStarts, Starts

__all__ = [
    "DEPENDENCY_MISSING",
    "DEPENDENCY_UNAVAILABLE",
    "DIGEST_MOD",
    "EXPIRED",
    "NOT_RECORD_NAME",
    "WITHDRAWN",
    "ChainEnd",
    "Snapshot",
    "SnapshotIndex",
    "file_digest",
    "in_scope",
    "is_expired",
    "normalize_name",
]

# reasons a record is unavailable, most fundamental first
WITHDRAWN, EXPIRED = "withdrawn", "expired"
DEPENDENCY_MISSING, DEPENDENCY_UNAVAILABLE = "dependency_missing", "dependency_unavailable"
# ``Snapshot.excluded``'s code for a file whose name its profile does not read as a record (no issue: no defect)
NOT_RECORD_NAME = "not_record_name"


def normalize_name(text: str) -> str:
    """Lookup normalisation: NFKC, lowercase, trimmed, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def is_expired(expires_at: DateValue | None, now: datetime) -> bool:
    """An assertion is no longer in force after expires_at (a date: after that whole UTC day)."""
    if expires_at is None:
        return False
    return now >= expires_at.end if expires_at.date_only else now > expires_at.start


@shape(frozen=True, slots=True)
class ChainEnd:
    """Where a supersession chain leads from one superseded record."""

    current: str | None  # the active record the chain reaches, or None
    reason: str  # "current", or why it ends in nothing: missing | withdrawn | unavailable | cycle | unset
    via: tuple[str, ...] = ()  # the records after the start, in order


@shape
class SnapshotIndex:
    """What the next build needs to update a snapshot rather than redo it; part of no answer.

    The grouped maps hold sorted lists, so that everything derived from them comes out in
    the same order however the snapshot was reached (one full build or many updates).
    """

    id_at: Mapping[str, str]  # path -> the id its frontmatter claims (files with a valid id; a dict, or an Overlaid)
    claims: Mapping[str, list[str]]  # id -> the paths claiming it
    referrers: Mapping[str, list[str]]  # id -> the records whose references name it
    base: dict[str, tuple[str, str | None]]  # records unavailable on their own: withdrawn, or a dependency missing
    expiring: dict[str, DateValue]  # records with an expires_at
    superseded: set[str]  # records whose effective lifecycle is superseded
    folders: dict[str, tuple[int, int]]  # folder ("" = the store) -> (files under it, sum of their digests)
    file_issues: dict[str, tuple[Issue, ...]]  # a file's own issues
    dup_issues: dict[str, tuple[Issue, ...]]  # id -> one issue per file of a duplicated id
    guard_issues: dict[str, Issue]  # id -> the safeguard that overruled its file
    dep_issues: dict[str, tuple[Issue, ...]]  # id -> its missing dependencies


@shape
class Snapshot:
    """The store at one generation: every record with its effective lifecycle, availability and chain end.

    Immutable once built; a query reads one. ``knowtk.snapshot.build`` makes it.
    """

    generation: int
    scanned_at: datetime
    evaluated_at: datetime  # the instant expiry was judged at
    config: StoreConfig
    records: dict[str, Record]  # valid records with a unique id
    lifecycle: Mapping[str, str]  # effective lifecycle after the safeguards (a dict, or an Overlaid after an update)
    superseded_by: Mapping[str, str | None]
    supersedes: dict[str, list[str]]  # id -> the ids whose superseded_by is this one
    unavailable: dict[str, tuple[str, str | None]]  # id -> (reason, detail); expired counts
    unavailable_inactive: dict[str, tuple[str, str | None]]  # the same with expired assertions allowed
    expired: set[str]
    chain_ends: dict[str, ChainEnd]  # for every effectively superseded record
    names: Mapping[str, list[str]]  # normalised title or alias -> ids
    issues: list[Issue]
    excluded: dict[str, str]  # path -> reason code, for files that are not records
    paths: Mapping[str, str]  # path -> sha256 of every scanned file (a dict, or an Overlaid after an update)
    valid_until: datetime | None  # the next expiry: the snapshot must be re-evaluated then
    # ids whose record, lifecycle, expiry or availability may differ from generation `previous_generation`
    # (None: this is a full build); lets projections update only those
    changed_ids: frozenset[str] | None = None
    previous_generation: int | None = None
    image_key: str | None = None  # the snapshot image in state.sqlite this one is (knowtk.snapshot.stored), if any
    _index: SnapshotIndex | None = field(default=None, init=False, repr=False)

    @property
    def index(self) -> SnapshotIndex | None:
        """What the next build starts from; part of no answer (so not a public field, nor compared as one)."""
        return self._index

    @index.setter
    def index(self, index: SnapshotIndex) -> None:  # set once, by what makes the snapshot (a build, a stored image)
        self._index = index

    @cached_property
    def _fingerprints(self) -> dict[tuple[str, ...], str]:
        """scope -> fingerprint, filled by ``fingerprint()`` (not a field: a stored snapshot gets one too)."""
        return {}

    def lifecycle_at(self, rid: str) -> str:
        """``lifecycle[rid]``: a stored snapshot reads a query's few ids without parsing the whole table."""
        return self.lifecycle[rid]

    def sha256_lookup(self) -> Callable[[str], str | None]:
        """id -> the record's file hash, or None; a stored snapshot's knows it without building the record."""
        records = self.records
        if not isinstance(records, dict):
            return records.sha256_of  # StoredRecords (knowtk.snapshot.stored)

        def sha256_of(rid: str) -> str | None:
            r = records.get(rid)
            return r.sha256 if r is not None else None

        return sha256_of

    def facets(self) -> Facets:
        """The records' filter facets (folder, kind, type, tags); a stored snapshot's without building a record."""
        records = self.records
        if isinstance(records, dict):
            return RecordFacets(records)
        found: Facets = records.facets()  # StoredRecords, or Layered over them (knowtk.snapshot.stored, overlay)
        return found

    def starts(self) -> Starts:
        """The records' starts in time (``knowtk.snapshot.starts``); a stored snapshot's without building a record."""
        records = self.records
        if isinstance(records, dict):
            return RecordStarts(records)
        found: Starts = records.starts()  # StoredRecords, or Layered over them (knowtk.snapshot.stored, overlay)
        return found

    @cached_property
    def _matching(self) -> dict[Criteria, frozenset[str]]:
        """criteria -> the ids ``matching()`` found (not a field: a stored snapshot gets one too)."""
        return {}

    def matching(self, criteria: Criteria) -> frozenset[str]:
        """The ids of the records whose facets pass ``criteria``, kept for this snapshot (its projections share it)."""
        found = self._matching.get(criteria)
        if found is None:
            if len(self._matching) >= MATCHING_KEPT:
                self._matching.clear()
            found = self._matching[criteria] = self.facets().selected(criteria)
        return found

    @cached_property
    def _positions(self) -> dict[Criteria, Positions | None]:
        """criteria -> what ``positions()`` found."""
        return {}

    def positions(self, criteria: Criteria) -> Positions | None:
        """``matching`` by the stored position of each record (``Facets.positions``), kept for this snapshot; None
        where its records are not stored ones."""
        kept = self._positions
        if criteria not in kept:
            if len(kept) >= MATCHING_KEPT:
                kept.clear()
            kept[criteria] = self.facets().positions(criteria)
        return kept[criteria]

    def available(self, rid: str, *, include_inactive: bool = False) -> bool:
        table = self.unavailable_inactive if include_inactive else self.unavailable
        return rid in self.records and rid not in table

    def fingerprint(self, scope: tuple[str, ...]) -> str:
        """The ``snapshot`` string: changes with any edit to a file in scope (superseded records too).

        Every file adds a digest of (path, sha256) to the sums of its folders, kept up to date
        file by file, so this costs a few additions rather than a pass over the store.
        """
        cached = self._fingerprints.get(scope)
        if cached is None:
            assert self.index is not None
            roots = [f for f in scope if not any(f.startswith(g + "/") for g in scope)] if scope else [""]
            count = total = 0
            for folder in roots:
                n, s = self.index.folders.get(folder, (0, 0))
                count, total = count + n, total + s
            h = hashlib.sha256(f"{count}:{total % DIGEST_MOD:032x}\n".encode())
            h.update(",".join(sorted(self.expired)).encode())
            cached = self._fingerprints[scope] = h.hexdigest()[:20]
        return cached

    @cached_property
    def folders(self) -> set[str]:
        assert self.index is not None
        return {folder for folder in self.index.folders if folder}

    def normalize_scope(self, scope: object) -> tuple[str, ...]:
        """A query's scope as sorted folder prefixes; () is the whole store."""
        if scope is None or scope == "" or scope == []:
            return ()
        items = [scope] if isinstance(scope, str) else scope
        if not isinstance(items, list | tuple) or not all(isinstance(s, str) for s in items):
            raise InvalidArgument("scope", "must be a folder path or a list of them", value=scope)
        out = set()
        for item in items:
            folder = item.strip().strip("/")
            if not folder or folder == ".":
                return ()
            if any(part in ("", ".", "..") for part in folder.split("/")):
                raise InvalidArgument("scope", f"{item!r} is not a folder path inside the store", value=scope)
            if folder not in self.folders:
                top = sorted(f for f in self.folders if "/" not in f)
                raise InvalidArgument("scope", f"no folder {folder!r} holds records in this store", allowed=top)
            out.add(folder)
        return tuple(sorted(out))

    def scope_issues(self, scope: tuple[str, ...]) -> list[Issue]:
        return [i for i in self.issues if i.path is None or in_scope(i.path, scope)]

    def lookup_names(self, text: str) -> list[str]:
        found: list[str] = self.names.get(normalize_name(text), [])
        return found


def in_scope(path: str, scope: tuple[str, ...]) -> bool:
    """Whether ``path`` lies in one of the folders of ``scope`` (() is the whole store)."""
    if not scope:
        return True
    return any(path.startswith(prefix + "/") for prefix in scope)


MATCHING_KEPT = 64  # the filters whose matching ids a snapshot keeps
DIGEST_MOD = 1 << 128  # the folder sums behind fingerprint() are kept modulo this


def file_digest(path: str, sha256: str) -> int:
    """One file's share of its folders' sums: a digest of its path and content hash."""
    return int.from_bytes(hashlib.sha256(f"{path}\0{sha256}".encode()).digest()[:16], "big")
