"""Reading a stored snapshot image's parts: each inflated, its digest checked, parsed and patched on first use.

``load_image`` reads every row of ``snapshot_image_v1`` in one read; ``ImageParts`` keeps them as
stored and parses a part only when a query first needs it (its stored bytes then dropped), with
every patch applied in order, so a patched image reads exactly as the same snapshot written whole.
A few keys (a record's path and hash, its lifecycle) are read where they lie, from the small
``points.<k>`` part of their id, so that a new process's first page does not parse whole parts.
A part that fails its digest or does not parse raises ``ImageDamaged``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from knowtk.snapshot.facets import Facet, FacetColumns, loads_columns
from knowtk.snapshot.image_format import STORED_PLAIN, ImageDamaged, shard_of
from knowtk.snapshot.overlay import ABSENT, UNKNOWN
from knowtk.snapshot.starts import StartColumns
from knowtk.state import inflate_bytes

__all__ = ["UNTOUCHED", "ImageParts"]

UNTOUCHED = object()  # a key no patch names (``ImageParts.patched_key``): the part as first written holds it
DIGEST_BESIDE_BYTES = 1 << 20  # a part's text from which its digest is taken beside its parse


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
        loads = loads_columns if name == "record_facets" else json.loads
        if len(data) < DIGEST_BESIDE_BYTES:
            if hashlib.sha256(data).hexdigest() != digest:
                raise ValueError("missing, or its digest differs")
            parsed = loads(data)
        else:  # the digest taken in a thread while this one parses (hashlib lets go of the interpreter)
            found: list[str] = []
            hashing = threading.Thread(target=lambda: found.append(hashlib.sha256(data).hexdigest()))
            hashing.start()
            try:
                parsed = loads(data)
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

    def facets(self, ids: Callable[[], list[str]]) -> FacetColumns:
        """The stored records' facets (``ids``: reads them as record_ids holds them, when first needed), with the
        patches' changes over them."""
        columns = self.get("record_facets", lambda data: data)

        def stored_ids() -> list[str]:
            found = ids()
            if len(found) != len(facets.tag_ends):
                raise self.damaged("record_facets", ValueError("a facet column does not match the stored ids"))
            return found

        try:
            over: dict[str, Facet | None] = {}
            for patch in self.patches():
                change = patch["records"]
                for rid in change["del"]:
                    over[rid] = None
                for (rid, _, _), (folder, kind, type_, tags) in zip(change["set"], change["facets"], strict=True):
                    over[rid] = Facet(folder, kind, type_, tuple(tags))
            base, digest = self.meta["parts"].get("record_ids"), self.meta["parts"].get("record_facets")
            facets = FacetColumns(
                columns,
                stored_ids,
                over,
                base=base if isinstance(base, str) else None,
                digest=digest if isinstance(digest, str) else None,
                on_damage=lambda exc: self.damaged("record_facets", exc),
            )
            return facets
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise self.damaged("record_facets", exc) from exc

    def starts(self, ids: Callable[[], list[str]]) -> StartColumns | None:
        """The stored records' starts in time (``ids`` as for ``facets``), with the patches' changes over them;
        None for an image, or a patch, written without them."""
        if "record_starts" not in self.meta["parts"] or any("starts" not in p["records"] for p in self.patches()):
            return None
        data = self.get("record_starts", lambda data: data)

        def stored_ids() -> list[str]:
            found = ids()
            if len(found) != len(columns.column):
                raise self.damaged("record_starts", ValueError("the start column does not match the stored ids"))
            return found

        try:
            over: dict[str, int | None] = {}
            for patch in self.patches():
                change = patch["records"]
                for rid in change["del"]:
                    over[rid] = None
                for (rid, _, _), start in zip(change["set"], change["starts"], strict=True):
                    over[rid] = int(start)
            columns = StartColumns(data, stored_ids, over)
            return columns
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise self.damaged("record_starts", exc) from exc
