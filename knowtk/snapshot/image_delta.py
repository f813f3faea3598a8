"""What a patch of a stored snapshot image holds: the changes from one snapshot to the next.

A process that applied changes to an image does not write it again whole: ``image_delta`` compares
the snapshot the stored image is with the one built since, part by part (a table the build did not
copy is the same object: not compared; a table built over a stored part says its changes itself), and
gives the keys set and removed and the record locations that moved. ``image_write`` stores it as a
patch; ``image_parts`` applies the patches in order when it reads a part.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from knowtk.snapshot.image_format import INDEX_PARTS, SNAPSHOT_PARTS
from knowtk.snapshot.model import Snapshot
from knowtk.snapshot.overlay import Grouped, Lazy, Overlaid, changes_over, unwrap

__all__ = ["image_delta"]

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
    facets, starts = snap.facets(), snap.starts()
    return {
        "set": [moved[rid] for rid in put],
        "del": gone,
        "facets": [list(facets.of(rid)) for rid in put],
        "starts": [starts.of(rid) for rid in put],
    }
