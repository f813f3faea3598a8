"""Obsidian ``[[wikilinks]]`` resolved to record ids against the store a query sees.

The ``obsidian`` profile keeps each note's links as written (``fields.wikilinks``: a file's bytes alone
cannot say which note a bare name means); here they are resolved the way Obsidian resolves them: a link
that spells a whole path names that file; otherwise a note of that name in the linking note's folder;
otherwise the one with the shortest path (two of one length: ambiguous, unresolved).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.model.records import Record

__all__ = ["resolve_wikilink", "wikilinks_of"]


def resolve_wikilink(target: str, source: str, paths: Iterable[str]) -> str | None:
    """The store path an Obsidian link names from the note at ``source``, or None (none, or ambiguous)."""
    want = target.strip().strip("/").lower()
    if not want:
        return None
    want = want if want.endswith(".md") else want + ".md"
    candidates = [p for p in paths if p.lower() == want or p.lower().endswith("/" + want)]
    exact = [p for p in candidates if p.lower() == want]
    if exact:
        return exact[0]
    here = [p for p in candidates if posixpath.dirname(p) == posixpath.dirname(source)]
    if here:
        return here[0]
    candidates.sort(key=lambda p: (len(p), p))
    if not candidates or (len(candidates) > 1 and len(candidates[1]) == len(candidates[0])):
        return None
    return candidates[0]


def wikilinks_of(engine: Engine, paths: Iterable[str], r: Record) -> list[dict[str, Any]]:
    """``[{"target", "path", "id"}]`` for every wikilink its profile kept (path and id None: unresolved)."""
    links = r.fields.get("wikilinks") if r.profile is not None else None
    if not isinstance(links, list):
        return []
    known = list(paths)
    out = []
    for target in links:
        if not isinstance(target, str):
            continue
        path = resolve_wikilink(target, r.path, known)
        entry = engine.scanner.entry(path) if path is not None else None
        record = entry.record if entry is not None else None
        out.append({"target": target, "path": path, "id": record.id if record is not None else None})
    return out
