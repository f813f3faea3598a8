"""The "decisions in force" view: one row per record of a type or tag, with its span of validity.

``Store.in_force`` makes a DataFrame of these rows and ``knowtk.notebook.in_force_plot`` draws it: a bar per
record from its start to its end, the supersession links between them. The spans are the ones ``validAt``
answers from (``knowtk.query.validity``); a record that cannot be placed in time has a row without a start.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from knowtk.frames import BOOL, STRING, TIME, Column, key, listed
from knowtk.model.datevalues import format_utc
from knowtk.query.common import lifecycle_of
from knowtk.query.validity import ValidAt, eligible, span_of
from knowtk.snapshot.model import Snapshot, in_scope

__all__ = ["IN_FORCE_COLUMNS", "in_force_rows"]

IN_FORCE_COLUMNS: list[Column] = [
    ("id", STRING, key("id")),
    ("title", STRING, key("title")),
    ("type", STRING, key("type")),
    ("tags", "object", listed("tags")),
    ("lifecycle", STRING, key("lifecycle")),  # now
    ("start", TIME, key("start")),
    ("end", TIME, key("end")),  # None: no end
    ("ended_by", STRING, key("endedBy")),  # expired, superseded, or None
    ("superseded_by", STRING, key("supersededBy")),
    ("lifecycle_then", STRING, key("lifecycleThen")),  # at valid_at: active (in force), superseded, expired
    ("in_force", BOOL, key("inForce")),  # at valid_at
    ("path", STRING, key("path")),
]


def _when(instant: datetime | None) -> str | None:
    return None if instant is None else format_utc(instant)


def in_force_rows(
    snap: Snapshot,
    *,
    types: frozenset[str] | None = None,
    tags: tuple[str, ...] | None = None,
    scope: tuple[str, ...] = (),
    when: ValidAt | None = None,
) -> list[dict[str, Any]]:
    """Every record that may be in force (never a withdrawn one) of these types (expanded), with every one of
    these tags, in the scope: by start (unplaced records last), then id."""
    keyed: list[tuple[tuple[bool, datetime, str], dict[str, Any]]] = []
    for rid in snap.records:
        if not eligible(snap, rid):
            continue
        r = snap.records[rid]
        if (types is not None and r.type not in types) or (tags and not set(tags) <= set(r.tags)):
            continue
        if not in_scope(r.path, scope):
            continue
        span = span_of(snap, rid)
        then = None if span is None or when is None else span.lifecycle(when.first, when.last)
        order = (span is None, span.start if span is not None else datetime.min.replace(tzinfo=UTC), rid)
        keyed.append(
            (
                order,
                {
                    "id": rid,
                    "title": r.title,
                    "type": r.type,
                    "tags": list(r.tags),
                    "lifecycle": lifecycle_of(rid, snap),
                    "start": None if span is None else _when(span.start),
                    "end": None if span is None else _when(span.end),
                    "endedBy": None if span is None else span.ended_by,
                    "supersededBy": snap.superseded_by.get(rid) if snap.lifecycle[rid] == "superseded" else None,
                    "lifecycleThen": then,
                    "inForce": None if when is None else then == "active",
                    "path": r.path,
                },
            )
        )
    keyed.sort(key=lambda pair: pair[0])
    return [row for _, row in keyed]
