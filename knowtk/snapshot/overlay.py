"""The maps a build shares with the snapshot before it: changes kept over an unchanged base.

``Layered`` holds the records over a stored snapshot's, ``Grouped`` a key -> sorted ids map over the
previous one (``GroupedBuilder`` makes the next), and ``StaleRecord`` what is left of a record whose file changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from knowtk.model.records import Record
from knowtk.snapshot.facets import Facets, LayeredFacets
from knowtk.snapshot.starts import LayeredStarts, Starts

__all__ = [
    "ABSENT",
    "DEFERRED_MAX",
    "OVERLAID_MIN",
    "UNKNOWN",
    "Changes",
    "Deferred",
    "Grouped",
    "GroupedBuilder",
    "Layered",
    "Lazy",
    "Overlaid",
    "StaleRecord",
    "changes_over",
]


class StaleRecord:
    """What a build needs of a record whose file has changed since a stored snapshot was written
    (its content is gone): the names and references to take back; with ``find``, each found when first
    read (``find("names")``, ``find("references")``: a pass over that stored map, which a build that
    drops the id whole never makes)."""

    __slots__ = ("_find", "_names", "_references", "id")

    def __init__(
        self,
        id: str,
        name_keys: frozenset[str] = frozenset(),
        references: tuple[str, ...] = (),
        *,
        find: Callable[[str], Any] | None = None,
    ) -> None:
        self.id, self._find = id, find
        self._names: frozenset[str] | None = name_keys if find is None else None
        self._references: tuple[str, ...] | None = references if find is None else None

    @property
    def name_keys(self) -> frozenset[str]:
        found = self._names
        if found is None:
            assert self._find is not None
            found = self._names = frozenset(self._find("names"))
        return found

    @property
    def references(self) -> tuple[str, ...]:
        found = self._references
        if found is None:
            assert self._find is not None
            found = self._references = tuple(self._find("references"))
        return found

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StaleRecord):
            return NotImplemented
        return (self.id, self.name_keys, self.references) == (other.id, other.name_keys, other.references)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StaleRecord({self.id!r})"


class Layered(Mapping[str, Record]):
    """The records of a snapshot built on a stored one: this build's changes over the stored records.

    Copying the stored mapping into a dict would load and validate every record; a build
    changes few of them. ``base`` is the stored records (``knowtk.snapshot.stored.StoredRecords``),
    ``top`` what changed since (set or replaced), ``gone`` the base ids removed since.
    """

    __slots__ = ("base", "gone", "top")

    def __init__(self, base: Any, top: dict[str, Record] | None = None, gone: set[str] | None = None) -> None:
        self.base, self.top, self.gone = base, top or {}, gone or set()

    def __getitem__(self, rid: str) -> Record:
        found = self.top.get(rid)
        if found is not None:
            return found
        if rid in self.gone:
            raise KeyError(rid)
        record: Record = self.base[rid]
        return record

    def __contains__(self, rid: object) -> bool:
        return rid in self.top or (rid not in self.gone and rid in self.base)

    def __iter__(self) -> Any:
        top, gone = self.top, self.gone
        yield from (rid for rid in self.base if rid not in gone and rid not in top)
        yield from top

    def __len__(self) -> int:
        return len(self.base) - len(self.gone) + sum(1 for rid in self.top if rid not in self.base)

    def values(self) -> Any:
        self.base.load_all(skip=self.top.keys() | self.gone)
        return super().values()

    def items(self) -> Any:
        self.base.load_all(skip=self.top.keys() | self.gone)
        return super().items()

    def __setitem__(self, rid: str, record: Record) -> None:
        self.top[rid] = record
        if rid in self.base:
            self.gone.discard(rid)

    def __delitem__(self, rid: str) -> None:
        if rid not in self:
            raise KeyError(rid)
        self.top.pop(rid, None)
        if rid in self.base:
            self.gone.add(rid)

    def overlay(self) -> Layered:
        """A copy for the next build (the base is shared: it never changes)."""
        return Layered(self.base, dict(self.top), set(self.gone))

    def previous(self, rid: str) -> Record | StaleRecord | None:
        """The record as the snapshot had it, or what a build needs of it when its file has changed since."""
        if rid in self.top:
            return self.top[rid]
        if rid in self.gone:
            return None
        found: Record | StaleRecord | None = self.base.previous(rid)
        return found

    def facets(self) -> Facets:
        """The records' filter facets: this build's records over the stored facets (none built for them)."""
        return LayeredFacets(self.base.facets, self.top, self.gone)

    def starts(self) -> Starts:
        """The records' starts in time: this build's records over the stored starts (none built for them)."""
        return LayeredStarts(self.base.starts, self.top, self.gone)

    def sha256_of(self, rid: str) -> str | None:
        if rid in self.top:
            return self.top[rid].sha256
        if rid in self.gone:
            return None
        found: str | None = self.base.sha256_of(rid)
        return found


ABSENT = object()  # what a probe answers for a key the map does not hold
UNKNOWN = object()  # ... and for a key it cannot tell without the map
_LV = TypeVar("_LV")


def _load_once(owner: Any, field: str) -> Any:
    """``owner``'s ``field`` loaded by its ``_load``, which is then dropped (it holds the previous snapshot).

    Two threads may both load: the same stored table either way. A thread that finds the loader gone
    reads the field another thread set (the field is set before the loader is dropped).
    """
    load = owner._load
    if load is None:
        value = getattr(owner, field)
        assert value is not None
        return value
    value = load()
    setattr(owner, field, value)
    owner._load = None
    return value


class Lazy(Mapping[str, _LV]):
    """A stored table not parsed yet: ``load`` parses it (once) when a reader needs more than ``probe`` tells.

    ``probe(key)`` answers one key from what is parsed already (the value, ``ABSENT``, or ``UNKNOWN``):
    an update reads the old values at the keys it changes, not the table (a stored snapshot's probes:
    ``knowtk.snapshot.stored``). A pass over every key, or a key the probe cannot tell, loads it.
    """

    __slots__ = ("_load", "_probe", "_value", "source")

    def __init__(
        self,
        load: Callable[[], Mapping[str, _LV]],
        probe: Callable[[str], Any] | None = None,
        source: tuple[object, str] | None = None,
    ) -> None:
        self._load: Callable[[], Mapping[str, _LV]] | None = load
        self._probe = probe
        self._value: Mapping[str, _LV] | None = None
        self.source = source  # (owner, attribute name) of the table it reads

    @classmethod
    def over(cls, owner: object, name: str) -> Any:
        """``owner``'s attribute ``name``: as it is when parsed, else a Lazy reading it (and its probe, if any)."""
        parsed = vars(owner).get(name, _MISSING)
        if parsed is not _MISSING:
            return parsed
        probe = getattr(owner, "probe", None)
        return cls(lambda: getattr(owner, name), probe(name) if probe is not None else None, (owner, name))

    @property
    def value(self) -> Mapping[str, _LV]:
        value = self._value
        return value if value is not None else _load_once(self, "_value")

    @property
    def loaded(self) -> bool:
        return self._value is not None

    @property
    def probed(self) -> bool:
        """Whether a key can be told without the table (some keys at least)."""
        return self._probe is not None

    def _probed(self, key: object) -> Any:
        if self._value is None and self._probe is not None and isinstance(key, str):
            return self._probe(key)
        return UNKNOWN

    def __getitem__(self, key: str) -> _LV:
        found = self._probed(key)
        if found is UNKNOWN:
            return self.value[key]
        if found is ABSENT:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Any = None) -> Any:
        found = self._probed(key)
        if found is UNKNOWN:
            return self.value.get(key, default)
        return default if found is ABSENT else found

    def __contains__(self, key: object) -> bool:
        found = self._probed(key)
        if found is UNKNOWN:
            return key in self.value
        return found is not ABSENT

    def __iter__(self) -> Iterator[str]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)


def unwrap(m: Any) -> Any:
    """A map as its reader sees it: a Lazy's table (parsed now), any other map itself."""
    return m.value if isinstance(m, Lazy) else m


def _unread(m: object) -> bool:
    """Whether ``m`` is a Lazy table not parsed yet."""
    return isinstance(m, Lazy) and not m.loaded


DEFERRED_MAX = 1024  # ids dropped over a stored table not parsed yet past which a build parses it


class Deferred(Mapping[str, list[str]]):
    """key -> sorted ids over a stored table not parsed yet (``lazy``): the ids dropped from every key of it
    since (``void``: a changed record's old names or references, unknown without the table) and the ids
    added per key since. The first change of a new process neither parses the table nor needs the old
    record; a reader of a key parses it then (``get``), and the next build over a parsed one copies it whole.
    """

    __slots__ = ("_flat", "added", "lazy", "void")

    def __init__(self, lazy: Lazy[list[str]], void: set[str] | frozenset[str], added: dict[str, list[str]]) -> None:
        self.lazy, self.void, self.added = lazy, void, added
        self._flat: dict[str, list[str]] | None = None

    def get(self, key: str, default: Any = None) -> Any:
        found: list[str] = self.lazy.get(key, [])
        void = self.void
        if void:
            found = [i for i in found if i not in void]
        more = self.added.get(key)
        if more:
            found = sorted([*found, *more])
        return found if found else default

    def __getitem__(self, key: str) -> list[str]:
        found: list[str] | None = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def flat(self) -> dict[str, list[str]]:
        """One dict of the same items, in the order a Grouped keeps them (the table's keys, then new ones)."""
        flat = self._flat
        if flat is None:
            base, void, added = unwrap(self.lazy), self.void, self.added
            flat = {}
            for key, ids in base.items():
                if void and not void.isdisjoint(ids):
                    ids = [i for i in ids if i not in void]
                more = added.get(key)
                if more:
                    ids = sorted([*ids, *more])
                if ids:
                    flat[key] = ids
            for key, more in added.items():
                if more and key not in base:
                    flat[key] = sorted(more)
            self._flat = flat
        return flat

    def __iter__(self) -> Iterator[str]:
        return iter(self.flat())

    def __len__(self) -> int:
        return len(self.flat())

    def keys(self) -> Any:
        return self.flat().keys()

    def items(self) -> Any:
        return self.flat().items()

    def values(self) -> Any:
        return self.flat().values()


class Grouped(Mapping[str, list[str]]):
    """key -> sorted list of ids: a shared map (never changed) under the keys changed since (None: removed).

    A build copies only the keys it changes, not the whole map (copying 100k lists, and the
    collector walking the copy afterwards, cost about 10 ms per build at 100k records).
    """

    __slots__ = ("base", "top")

    def __init__(self, base: Mapping[str, list[str]], top: dict[str, list[str] | None]) -> None:
        self.base, self.top = base, top

    def __getitem__(self, key: str) -> list[str]:
        top = self.top
        if key in top:
            found = top[key]
            if found is None:
                raise KeyError(key)
            return found
        return self.base[key]

    def get(self, key: str, default: Any = None) -> Any:
        top = self.top
        if key in top:
            found = top[key]
            return default if found is None else found
        return self.base.get(key, default)

    def __contains__(self, key: object) -> bool:
        top = self.top
        if key in top:
            return top[key] is not None
        return key in self.base

    def __iter__(self) -> Iterator[str]:
        top, base = self.top, self.base
        for key in base:
            if key not in top or top[key] is not None:
                yield key
        for key, found in top.items():
            if found is not None and key not in base:
                yield key

    def __len__(self) -> int:
        count, base = len(self.base), self.base
        for key, found in self.top.items():
            if found is None and key in base:
                count -= 1
            elif found is not None and key not in base:
                count += 1
        return count


class GroupedBuilder(Grouped):
    """Builds the next key -> sorted list map from the previous one; a list is copied before its first change."""

    __slots__ = ("_deferred", "_own")

    @classmethod
    def over(cls, owner: object, name: str) -> GroupedBuilder:
        """The next build's map over ``owner``'s attribute ``name`` (a stored table not parsed yet: read only
        where its probe cannot tell a key the build changes; without a probe, deferred: see ``Deferred``)."""
        return cls(Lazy.over(owner, name))

    def __init__(self, source: Mapping[str, list[str]]) -> None:
        self._own: set[str] = set()  # keys whose list is this build's copy (appended to, sorted by finish())
        self._deferred = False
        if isinstance(source, Deferred):
            if _unread(source.lazy) and len(source.void) <= DEFERRED_MAX:  # this build's own copy of the changes
                added = {key: list(ids) for key, ids in source.added.items()}
                super().__init__(Deferred(source.lazy, set(source.void), added), {})
                self._deferred = True
                return
            source = source.flat()
        if isinstance(source, Grouped):
            super().__init__(source.base, dict(source.top))
        elif isinstance(source, Lazy) and not source.loaded and not source.probed:
            super().__init__(Deferred(source, set(), {}), {})
            self._deferred = True
        else:
            super().__init__(source, {})

    def take_back(self, rid: str, keys: Callable[[], Iterable[str]]) -> None:
        """Remove ``rid`` from its ``keys`` (those of the record it was); deferred, from every key, keys unread."""
        base = self.base
        if self._deferred and isinstance(base, Deferred):
            assert isinstance(base.void, set)
            base.void.add(rid)
            for ids in base.added.values():
                if rid in ids:
                    ids.remove(rid)
            return
        for key in keys():
            self.discard(key, rid)

    def _mine(self, key: str) -> list[str]:
        if key not in self._own:
            self.top[key] = list(self.get(key, ()))
            self._own.add(key)
        mine = self.top[key]
        assert mine is not None
        return mine

    def add(self, key: str, value: str) -> None:
        base = self.base
        if self._deferred and isinstance(base, Deferred):
            base.added.setdefault(key, []).append(value)
            return
        if key in self._own:
            mine = self.top[key]
            assert mine is not None
            mine.append(value)  # a value is never added twice: callers remove before they add again
        else:  # (a list of its own made at its size: most keys of a cold build hold one value)
            self.top[key] = [*self.get(key, ()), value]
            self._own.add(key)

    def discard(self, key: str, value: str) -> None:
        assert not self._deferred, "a deferred map takes an id back whole (take_back)"
        if self.get(key) is not None:
            items = self._mine(key)
            if value in items:
                items.remove(value)

    def finish(self) -> Mapping[str, list[str]]:
        top, base = self.top, self.base
        if self._deferred and isinstance(base, Deferred):  # the finished map keeps its own copies
            added = {key: sorted(ids) for key, ids in base.added.items() if ids}
            return Deferred(base.lazy, frozenset(base.void), added)
        for key in self._own:
            items = top[key]
            if items:
                items.sort()
            elif key in base:
                top[key] = None
            else:
                del top[key]
        self._own = set()
        if (len(top) > OVERLAID_MIN or not _unread(base)) and len(top) * 8 > len(
            base
        ):  # too many changes to keep apart: one map again
            merged = dict(base)
            for key, found in top.items():
                if found is None:
                    merged.pop(key, None)
                else:
                    merged[key] = found
            self.base, self.top = merged, {}
            return merged
        self.top = dict(top)  # the finished map keeps its own: later changes of this build do not reach it
        return Grouped(base, top)


OVERLAID_MIN = 64  # an Overlaid top of this many keys or fewer is kept apart whatever the base's size
_GONE = object()  # an Overlaid key removed over its base
_MISSING = object()
_V = TypeVar("_V")


class Overlaid(Mapping[str, _V]):
    """key -> value: the previous snapshot's map (the base, never changed, read only when needed) under
    the keys a build set or removed since (the top).

    A build copies only the top, not the base: a map with one entry per record (lifecycle,
    superseded by) costs what the change touched. The base of a snapshot read back from
    state.sqlite is its stored table, parsed on the first read of a key the top does not hold
    (``load``): the first change of a new process does not parse a table it only writes to.
    The top's share is bounded: past an eighth of the base, ``finish`` returns one dict again.
    """

    __slots__ = ("_base", "_load", "source", "top")

    def __init__(
        self,
        load: Callable[[], Mapping[str, _V]] | None,
        top: dict[str, object] | None = None,
        *,
        base: Mapping[str, _V] | None = None,
        source: tuple[object, str] | None = None,
    ) -> None:
        self._base: Mapping[str, _V] | None = base
        self._load: Callable[[], Mapping[str, _V]] | None = load if base is None else None
        self.top: dict[str, object] = top if top is not None else {}
        # (owner, attribute name) of the stored table the base is, read or not (``changes_over``)
        self.source = source if source is not None else base.source if isinstance(base, Lazy) else None

    @classmethod
    def over(cls, owner: object, name: str) -> Overlaid[_V]:
        """The next build's map over ``owner``'s attribute ``name`` (a dict, an Overlaid, or a stored table
        not parsed yet: then it is read only when a key outside the top is)."""
        parsed = vars(owner).get(name, _MISSING)
        if isinstance(parsed, Overlaid):
            return cls(parsed._load, dict(parsed.top), base=parsed._base, source=parsed.source)
        if parsed is _MISSING:
            if getattr(owner, "probe", None) is not None and owner.probe(name) is not None:  # type: ignore[attr-defined]
                return cls(None, base=Lazy.over(owner, name))  # a key the build changes is probed, not parsed
            return cls(lambda: getattr(owner, name), source=(owner, name))
        return cls(None, base=parsed)

    @property
    def base(self) -> Mapping[str, _V]:
        base = self._base
        return base if base is not None else _load_once(self, "_base")

    @property
    def loaded(self) -> bool:
        """Whether the base was read (a map whose base was never read differs from it only in the top)."""
        return self._base is not None and not _unread(self._base)

    def shares_base(self, other: object) -> bool:
        """Whether ``other`` is this map's base (read now if it was not), or an Overlaid over the same base."""
        base = unwrap(self.base)
        if isinstance(other, Overlaid):
            return unwrap(other.base) is base
        return other is base

    def __getitem__(self, key: str) -> _V:
        found = self.top.get(key, _MISSING)
        if found is _MISSING:
            return (self.base if self._base is None else self._base)[key]
        if found is _GONE:
            raise KeyError(key)
        return found  # type: ignore[return-value]

    def get(self, key: str, default: Any = None) -> Any:
        found = self.top.get(key, _MISSING)
        if found is _MISSING:
            return (self.base if self._base is None else self._base).get(key, default)
        return default if found is _GONE else found

    def __contains__(self, key: object) -> bool:
        found = self.top.get(key, _MISSING)  # type: ignore[call-overload]
        if found is _MISSING:
            return key in (self.base if self._base is None else self._base)
        return found is not _GONE

    def flat(self) -> dict[str, _V]:
        """One dict of the same items, in the same order (made in C: what a pass over every key reads)."""
        merged: dict[str, _V] = dict(unwrap(self.base))
        for key, found in self.top.items():
            if found is _GONE:
                merged.pop(key, None)
            else:
                merged[key] = found  # type: ignore[assignment]
        return merged

    def __iter__(self) -> Iterator[str]:
        return iter(self.flat() if self.top else unwrap(self.base))

    def __len__(self) -> int:
        base = unwrap(self.base)
        count = len(base)
        for key, found in self.top.items():  # (the top only: no dict made for a count)
            if found is _GONE:
                count -= key in base
            else:
                count += key not in base
        return count

    def keys(self) -> Any:
        return (self.flat() if self.top else unwrap(self.base)).keys()

    def items(self) -> Any:
        return (self.flat() if self.top else unwrap(self.base)).items()

    def values(self) -> Any:
        return (self.flat() if self.top else unwrap(self.base)).values()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return (self.flat() if self.top else dict(unwrap(self.base))) == (
            other.flat() if isinstance(other, Overlaid) else dict(other)
        )

    __hash__ = None  # type: ignore[assignment]

    def __setitem__(self, key: str, value: _V) -> None:  # while a build makes it (a snapshot never changes)
        self.top[key] = value

    def discard(self, key: str) -> None:
        """Remove ``key`` if present (the base is not read: a key it does not hold stays absent)."""
        self.top[key] = _GONE

    def finish(self) -> Mapping[str, _V]:
        """The finished map: this one, or one dict when the top has grown past an eighth of a read base."""
        top = self.top
        if len(top) > OVERLAID_MIN and len(top) * 8 > len(self.base):
            return self.flat()
        return self


class Changes:
    """What a map built over a stored table it never read changed over it (``changes_over``): keys ``set`` to
    new values, keys ``removed``, and, for a key -> ids map deferred over it (``Deferred``), the ids dropped
    from every key (``void``) and the ids ``add``ed per key after that (each key's list kept sorted)."""

    __slots__ = ("add", "removed", "set", "void")

    def __init__(
        self,
        set: dict[str, Any],
        removed: list[str],
        void: list[str] | None = None,
        add: dict[str, list[str]] | None = None,
    ) -> None:
        self.set, self.removed, self.void, self.add = set, removed, void or [], add or {}


def changes_over(m: object, owner: object, name: str) -> Changes | None:
    """What ``m`` changed over ``owner``'s table ``name`` when it was built over that table without reading
    it (a stored image's part): the keys its top holds (set or removed, whether or not the value differs),
    the ids a deferred map dropped and added. None when ``m`` is another map, or read its base: then only a
    comparison with the table tells."""

    def unread_source(base: object) -> bool:
        return isinstance(base, Lazy) and not base.loaded and _is_source(base.source, owner, name)

    if isinstance(m, Overlaid):
        if m.loaded or not (unread_source(m._base) or (m._base is None and _is_source(m.source, owner, name))):
            return None
        top = m.top
        return Changes({k: v for k, v in top.items() if v is not _GONE}, [k for k, v in top.items() if v is _GONE])
    if isinstance(m, Deferred):
        if not unread_source(m.lazy):
            return None
        return Changes({}, [], sorted(m.void), {k: sorted(v) for k, v in m.added.items() if v})
    if isinstance(m, Grouped) and not isinstance(m.base, Deferred) and unread_source(m.base):
        grouped = m.top
        return Changes(
            {k: v for k, v in grouped.items() if v is not None}, [k for k, v in grouped.items() if v is None]
        )
    return None


def _is_source(source: tuple[object, str] | None, owner: object, name: str) -> bool:
    return source is not None and source[0] is owner and source[1] == name
