"""``knowledge_changes``: the records added, removed or changed between two known-time instants.

The store at ``since`` and at ``until`` (``Store.at``'s past files; ``until`` omitted: the files now) are each
read whole, and compared record by record: a record whose file hash or effective lifecycle differs is changed,
with the frontmatter keys whose values differ. The commits of HEAD's first-parent line between the two commits
in force that touched a record's file are listed with it, and the observations of what knowtk saw between the two
(``{observation, at}``) that did.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from knowtk.errors import InvalidArgument
from knowtk.model.datevalues import format_utc
from knowtk.query.common import coverage
from knowtk.snapshot.model import Snapshot
from knowtk.write.past import PastFiles, made_by, open_past, past_files

if TYPE_CHECKING:
    from knowtk.engine.engine import Engine
    from knowtk.query.citations import EvidenceVerifier

__all__ = ["changes", "compare"]


def changes(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    """``{rows, total, offset, nextOffset, since, until}``; ``since``/``until`` say what each side stands on."""
    since: datetime = args["since"]
    until: datetime | None = args["until"]
    if until is not None and since > until:
        raise InvalidArgument(
            "since",
            f"{format_utc(since)} lies after until ({format_utc(until)})",
            allowed="an instant at or before until",
        )
    folder = os.path.dirname(engine.state_path)
    before = past_files(engine.root, folder, since)
    after = past_files(engine.root, folder, until) if until is not None else None
    both = _with_past(engine, before, lambda old: _with_past(engine, after, lambda new: _compared(old, new, args)))
    rows, seen = both
    touched = made_by(engine.root, folder, before, after)
    for row in rows:
        made = [*touched.get(row.get("pathBefore") or row["path"], []), *touched.get(row["path"], [])]
        row["commits"] = list({c.get("commit") or c["observation"]: c for c in made}.values())
    limit, offset = args["limit"], args["offset"]
    page = rows[offset : offset + limit]
    following = offset + len(page)
    now = {"instant": format_utc(datetime.now(UTC)), "source": "files"}  # until omitted: the files as they are
    return {
        "rows": page,
        "total": len(rows),
        "offset": offset,
        "nextOffset": following if following < len(rows) else None,
        "since": before.known_at(),
        "until": after.known_at() if after is not None else now,
        "coverage": seen,  # the files at until that are no record
    }


def _compared(old: Snapshot, new: Snapshot, args: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return compare(old, new, args["id"]), coverage(new, ())


def _with_past(engine: Engine, files: PastFiles | None, use: Callable[[Snapshot], Any]) -> Any:
    """``use(snapshot)`` of the past files (None: of the present store), with the past engine open meanwhile."""
    if files is None:
        return use(engine.snapshot())
    past = open_past(engine, files)
    try:
        return use(past.snapshot())
    finally:
        past.close()


def compare(old: Snapshot, new: Snapshot, only: str | None) -> list[dict[str, Any]]:
    """One row per record added, removed or changed from ``old`` to ``new`` (by id), in id order.

    Records are told apart by their file hash and lifecycle, which a stored snapshot holds without building a
    record: only the records added, removed or changed are built (a whole store's would cost seconds per 10k)."""
    hash_before, hash_after = old.sha256_lookup(), new.sha256_lookup()
    rows = []
    for rid in sorted({*old.records, *new.records}) if only is None else [only]:
        held_before, held_after = rid in old.records, rid in new.records
        before = old.lifecycle_at(rid) if held_before else None
        after = new.lifecycle_at(rid) if held_after else None
        if held_before and held_after and before == after and hash_before(rid) == hash_after(rid):
            continue
        if not held_before and not held_after:
            continue
        a, b = old.records.get(rid), new.records.get(rid)
        row: dict[str, Any] = {
            "id": rid,
            "path": (b or a).path,  # type: ignore[union-attr]
            "change": "added" if a is None else "removed" if b is None else "changed",
            "fields": [] if a is None or b is None else _fields(a.frontmatter, b.frontmatter),
            "lifecycleBefore": before,
            "lifecycleAfter": after,
        }
        if a is not None and b is not None and a.path != b.path:
            row["pathBefore"] = a.path
        rows.append(row)
    return rows


def _fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The frontmatter keys whose values differ (added, removed or changed)."""
    return sorted(key for key in {*old, *new} if old.get(key, _ABSENT) != new.get(key, _ABSENT))


_ABSENT = object()
