"""``knowledge_history``: receipts newest first, with paging; ``diff`` of two versions; the ``indexed`` mark.

A receipt reads ``indexed: false`` until a query reconciled the keyword index with files past it
(``mark_reconciled``, run by the engine after every reconcile); from then on ``indexed: true``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument, RecordNotFound
from knowtk.model.datevalues import DateValue, format_utc
from knowtk.snapshot.model import Snapshot
from knowtk.write import journal
from knowtk.write.checkpoint import find_repo, record_commits
from knowtk.write.files import current

__all__ = ["diff", "history", "mark_reconciled"]


def _bound(value: Any, *, upper: bool) -> str | None:
    if value is None:
        return None
    if isinstance(value, DateValue):
        return format_utc(value.end if upper and value.date_only else value.start)
    return str(value)


def history(engine: Engine, args: dict[str, Any]) -> dict[str, Any]:
    """Receipts (optionally of one record, within since/until), newest first: ``{receipts, total, nextOffset}``.

    For one record of a store inside a Git work tree, the commits that touched its file are merged in
    by time (``"source": "git"``; receipts carry ``"source": "receipt"``).
    """
    limit, offset, rid = args["limit"], args["offset"], args.get("id")
    since, until = _bound(args.get("since"), upper=False), _bound(args.get("until"), upper=True)
    with engine.lock:
        engine.ensure_open()
        commits = _commits(engine, rid, since, until) if rid is not None else []
        if not commits:
            rows, total = journal.receipt_rows(
                engine.state, record=rid, since=since, until=until, limit=limit, offset=offset
            )
        else:
            rows, _ = journal.receipt_rows(engine.state, record=rid, since=since, until=until, limit=10**9, offset=0)
    for row in rows:
        row["source"] = "receipt"
    if commits:
        merged = sorted([*rows, *commits], key=_merged_order(rows), reverse=True)
        total, rows = len(merged), merged[offset : offset + limit]
    following = offset + len(rows)
    return {
        "id": rid,
        "receipts": rows,
        "total": total,
        "offset": offset,
        "nextOffset": following if following < total else None,
    }


def _merged_order(receipts: list[dict[str, Any]]) -> Callable[[dict[str, Any]], tuple[datetime, int]]:
    """The sort key of receipts and commits merged by time: a commit a receipt checkpointed sorts at its receipt's
    instant, just before it (newest first: after it), since Git keeps whole seconds and the commit was made in the
    same second as the receipt or the next; at one instant a receipt sorts after (newest first: before) a commit."""
    at_receipt = {r["checkpoint"]: _instant(r["at"]) for r in receipts if r.get("checkpoint")}

    def key(e: dict[str, Any]) -> tuple[datetime, int]:
        if e["source"] == "receipt":
            return _instant(e["at"]), 1
        return at_receipt.get(e["commit"], _instant(e["at"])), 0

    return key


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def _commits(engine: Engine, rid: str, since: str | None, until: str | None) -> list[dict[str, Any]]:
    repo = find_repo(engine.root, required=False)
    if repo is None:
        return []
    r = engine.snapshot().records.get(rid)
    if r is None:
        return []
    out = record_commits(repo, engine.root, r.path)
    low = _instant(since) if since else None
    high = _instant(until) if until else None
    return [c for c in out if (low is None or _instant(c["at"]) >= low) and (high is None or _instant(c["at"]) <= high)]


def mark_reconciled(engine: Engine, snap: Snapshot) -> None:
    """Mark indexed the pending receipts this reconciled snapshot is past (``journal.mark_reconciled``)."""
    journal.mark_reconciled(engine.state, snap)


def diff(engine: Engine, rid: str, a: str | None = None, b: str | None = None) -> str:
    """A unified diff of record ``rid`` between two of its versions: a SHA-256 (or a unique prefix of one) or a
    receipt id (the state it left). Default: ``a`` the oldest version a receipt saw, ``b`` the file now."""
    with engine.lock:
        engine.ensure_open()
        rows, _ = journal.receipt_rows(engine.state, record=rid, since=None, until=None, limit=10_000, offset=0)
        shas: list[str] = []  # oldest first
        after: dict[str, str] = {}  # receipt -> the version it left
        for row in reversed(rows):
            for r in row["records"]:
                if r["id"] == rid:
                    shas += [s for s in (r["sha256Before"], r["sha256After"]) if s and s not in shas]
                    if r["sha256After"]:
                        after[row["id"]] = r["sha256After"]
        if not shas:
            raise RecordNotFound(rid, f"no receipt names {rid!r}: knowtk kept no version of it to compare")
        old = _version(engine, rid, a or shas[0], shas, after, "a")
        new = _version(engine, rid, b, shas, after, "b")
    return "".join(difflib.unified_diff(old[1].splitlines(True), new[1].splitlines(True), old[0], new[0]))


def _version(
    engine: Engine, rid: str, ref: str | None, shas: list[str], after: dict[str, str], name: str
) -> tuple[str, str]:
    if ref is None:  # the file as it is now
        r = engine.snapshot().records.get(rid)
        if r is None:
            raise RecordNotFound(rid)
        data, _ = current(os.path.join(engine.root, *r.path.split("/")))
        return f"{r.path} (now)", (data or b"").decode("utf-8", "replace")
    matches = [after[ref]] if ref in after else [sha for sha in shas if sha.startswith(ref)]
    if len(matches) != 1:
        raise InvalidArgument(name, f"{ref!r} names no single kept version of {rid}", allowed=[s[:12] for s in shas])
    data = journal.version(engine.state, matches[0])
    if data is None:
        raise InvalidArgument(name, f"the version {matches[0][:12]} of {rid} is not kept")
    return matches[0][:12], data.decode("utf-8", "replace")
