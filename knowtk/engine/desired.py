"""The desired maps of the keyword projections: {id: sha256} of the records each must hold.

``derive`` brings a map to a snapshot at some ids (available active records in the main projection,
available superseded ones in the history projection). A new process that finds the projections marked
with the stored image it loaded takes their rows as the maps (``TrustedMap``: nothing read while the
rows stay synced to it), and its first change patches them without reading them whole (``PatchedMap``).
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from knowtk.index.fts import FtsProjection
from knowtk.snapshot.model import Snapshot

__all__ = ["PatchedMap", "TrustedMap", "clustered", "derive"]

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
