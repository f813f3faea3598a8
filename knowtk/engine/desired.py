"""The desired maps of the keyword projections: {id: sha256} of the records each must hold.

``derive`` brings a map to a snapshot at some ids (available active records in the main projection,
available superseded ones in the history projection). A new process that finds the projections marked
with the stored image it loaded takes their rows as the maps (``TrustedMap``: nothing read while the
rows stay synced to it), and its first change patches them without reading them whole (``PatchedMap``).

The expired projection (``ExpiredKeyword``, ``expired_since``) holds the records unavailable today only
because an expiry passed: their ``expires_at`` has passed, or that of a record they rest on. They were in
force before, and a search at an earlier instant (``validAt``, ``knowtk.query.grep_valid``) must find them,
ranked with the same BM25 as the others: a projection of the same kind (``keyword_expired``), which the
ranking at an instant takes as one more source beside main and history, so that BM25's statistics are those
of every record in force then, wherever it is kept. Unlike main and history it is brought up to date only
when a search at an instant asks for it, never by a query without ``validAt`` (whose path stays as it was),
and its tables are made by the first expired record: while none is, a search at an instant looks at nothing
more. Real stores hold few expired records, so its map is derived whole from the snapshot's few unavailable
records at each new snapshot, and compared whole with the rows.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from knowtk.index.fts import FtsProjection
from knowtk.snapshot.model import Snapshot
from knowtk.state import StateDB

__all__ = ["EXPIRED_FAMILY", "ExpiredKeyword", "PatchedMap", "TrustedMap", "clustered", "derive", "expired_since"]

# a reconcile writing this many rows or more writes them clustered (``clustered``); fewer go after the others
# in any order (a few edited records: nothing to gain for their cost)
CLUSTER_FROM_ROWS = 1000


def derive(
    snap: Snapshot, ids: Iterable[str], main: MutableMapping[str, str], history: MutableMapping[str, str]
) -> None:
    """Bring the desired maps to ``snap`` at ``ids``: available active records in ``main``, available
    superseded ones in ``history`` (every other id removed from both)."""
    unavailable, lifecycle = snap.unavailable, snap.lifecycle
    sha256_of = snap.sha256_lookup()  # a stored snapshot knows each record's hash without building the record
    for rid in ids:
        sha = sha256_of(rid)
        life = lifecycle[rid] if sha is not None and rid not in unavailable else None
        if sha is not None and life == "active":
            main[rid] = sha
        else:
            _forget(main, rid)
        if sha is not None and life == "superseded":
            history[rid] = sha
        else:
            _forget(history, rid)


def clustered(snap: Snapshot) -> Callable[[list[str]], list[str]]:
    """The ``order`` a keyword reconcile writes many rows in: by kind, then type, then folder, then id.

    A filter by kind or type then selects one stretch of rowids and a scope a few (one per kind and type
    it holds), which SQLite reads as ranges (``knowtk.index.among.rows_among``) instead of indexing an array
    of every allowed rowid for each statement. Only the order of the rows changes, never what they hold.
    """

    def order(ids: list[str]) -> list[str]:
        if len(ids) < CLUSTER_FROM_ROWS:
            return ids
        of = snap.facets().of
        groups: dict[tuple[str, str, str], list[str]] = {}  # (kind, type, folder) -> ids (references: light at 1M)
        for rid in ids:
            try:
                f = of(rid)
            except KeyError:  # (not a record of this snapshot: a reconcile then skips it, in any place)
                groups.setdefault(("", "", ""), []).append(rid)
                continue
            groups.setdefault((f.kind, f.type, f.folder), []).append(rid)
        return [rid for key in sorted(groups) for rid in sorted(groups[key])]

    return order


def _forget(desired: MutableMapping[str, str], rid: str) -> None:
    if isinstance(desired, PatchedMap):
        desired.forget(rid)
    else:
        desired.pop(rid, None)


class _Whole(Mapping[str, str]):
    """A map whose passes over every key go through ``whole()``: the dict it is made into when first needed."""

    def whole(self) -> dict[str, str]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[str]:
        return iter(self.whole())

    def __len__(self) -> int:
        return len(self.whole())

    def items(self) -> ItemsView[str, str]:
        return self.whole().items()


class TrustedMap(_Whole):
    """The desired map of a projection whose image mark matched the snapshot: the rows it holds. Nothing is
    read while the projection stays synced to it (a new process's query); read whole when first needed,
    from the rows if they are still the image's (the projection has not moved since, or its mark still
    names the image), else derived from the snapshot (the same map: a function of the snapshot alone).
    Never patched in place: the engine patches a ``PatchedMap`` over it."""

    def __init__(self, proj: FtsProjection, key: str | None, derive: Callable[[], dict[str, str]]) -> None:
        self._proj, self._at, self._key, self._derive = proj, proj.rows_version, key, derive
        self._map: dict[str, str] | None = None

    def whole(self) -> dict[str, str]:
        if self._map is None:
            proj = self._proj
            proj.ensure()  # loaded again if it was forgotten or another process wrote: its rows version then moves on
            same = proj.rows_version == self._at or (self._key is not None and proj.image_mark == self._key)
            self._map = dict(proj.shas.items()) if same else self._derive()
        return self._map

    def point(self, key: str, patched: PatchedMap) -> str:
        """``key``'s value for ``patched``, which does not name the key: read from the projection's rows while it
        is synced to ``patched`` (its rows then differ from this map only where ``patched`` names a key)."""
        if self._map is None and self._proj.synced_to(patched):
            found = self._proj.shas.get(key)
            if found is None:
                raise KeyError(key)
            return str(found)
        return self.whole()[key]

    def __getitem__(self, key: str) -> str:
        return self.whole()[key]


class PatchedMap(_Whole, MutableMapping[str, str]):
    """A trusted map patched in place (``Engine._desired``): the keys set and removed since, over it. The first
    change of a new process compares only the ids it changed, so a key it names is read here and no other is
    read at all (reading a 300k-record map whole took ~100 ms). Iterated or sized, it is made whole once (the
    trusted map read whole, the patches over it) and is a plain dict from then on."""

    def __init__(self, base: TrustedMap) -> None:
        self._base = base
        self._set: dict[str, str] = {}
        self._gone: set[str] = set()
        self._map: dict[str, str] | None = None

    def whole(self) -> dict[str, str]:
        if self._map is None:
            out = dict(self._base.whole())
            out.update(self._set)
            for key in self._gone:
                out.pop(key, None)
            self._map, self._set, self._gone = out, {}, set()
        return self._map

    def __getitem__(self, key: str) -> str:
        if self._map is not None:
            return self._map[key]
        found = self._set.get(key)
        if found is not None:
            return found
        if key in self._gone:
            raise KeyError(key)
        return self._base.point(key, self)

    def __setitem__(self, key: str, value: str) -> None:
        if self._map is not None:
            self._map[key] = value
        else:
            self._set[key] = value
            self._gone.discard(key)

    def __delitem__(self, key: str) -> None:
        self[key]  # (KeyError when absent, as a dict's)
        self.forget(key)

    def forget(self, key: str) -> None:
        """Remove ``key`` if present (``pop(key, None)`` without reading the trusted map)."""
        if self._map is not None:
            self._map.pop(key, None)
        else:
            self._set.pop(key, None)
            self._gone.add(key)

    def __eq__(self, other: Any) -> bool:
        return self.whole() == (other.whole() if isinstance(other, (PatchedMap, TrustedMap)) else other)

    __hash__ = None  # type: ignore[assignment]


EXPIRED_FAMILY = "keyword_expired"  # its tables: keyword_expired_fts_v1_root, keyword_expired_rows_v1_root, ...
_EVER_IN_FORCE = ("active", "superseded")  # today's lifecycles of a record that may have been in force


def expired_since(snap: Snapshot) -> dict[str, str]:
    """{id: sha256} of the records unavailable today only because an expiry passed (their own or a dependency's)
    and not withdrawn: those a record may have been in force before that neither main nor history holds."""
    if not snap.expired:  # nothing expired: nothing is unavailable because of it (no pass at all)
        return {}
    inactive, lifecycle = snap.unavailable_inactive, snap.lifecycle
    sha256_of = snap.sha256_lookup()
    out = {}
    for rid in snap.unavailable:
        if rid not in inactive and lifecycle.get(rid) in _EVER_IN_FORCE:
            sha = sha256_of(rid)
            if sha is not None:
                out[rid] = sha
    return out


class ExpiredKeyword:
    """The expired projection of one engine: its desired map for the last snapshot asked, and its tables."""

    def __init__(self, state: StateDB) -> None:
        self.state = state
        self.projection = FtsProjection(state, EXPIRED_FAMILY)
        self._desired: tuple[int, int, dict[str, str]] | None = None  # (generation, id(snapshot), the map)
        self._version = 0  # bumped at every new map: reconcile's identity check (``FtsProjection.reconcile``)
        self._exists: bool | None = None  # whether its tables exist (None: not looked at by this process)

    def desired(self, snap: Snapshot) -> dict[str, str]:
        """The records it must hold at ``snap`` (one map per snapshot: reconciling it again costs nothing)."""
        kept = self._desired
        if kept is not None and kept[0] == snap.generation and kept[1] == id(snap):
            return kept[2]
        found = expired_since(snap)
        self._version += 1
        self._desired = (snap.generation, id(snap), found)
        return found

    def made(self) -> bool:
        """Whether its tables exist (looked up once; then known, since only ``reconciled`` makes them). For
        ``Store.check``: a search looks at nothing while no record is expired."""
        if self._exists is None:
            self._exists = self.state.table_exists(self.projection.rows)
        return self._exists

    def reconciled(self, snap: Snapshot, text_of: Callable[[str], tuple[str, str, str] | None]) -> FtsProjection | None:
        """The projection brought to ``snap``; None while no record of it is expired (nothing to search).

        Its tables are made by the first expired record. While none is, nothing is looked at, not even whether
        the tables exist: a process that used them empties them when its last expired record goes, and rows
        left by another process are never read (compared whole with the records at the next expired record,
        or emptied by ``Store.check``).
        """
        desired = self.desired(snap)
        if not desired and not self._exists:
            return None
        self.projection.reconcile(desired, text_of, version=self._version)
        self._exists = True
        return self.projection if desired else None

    def invalidate(self) -> None:
        """Forget what is held in memory (after a rollback): the tables too may be gone."""
        self.projection.invalidate()
        self._exists = None
