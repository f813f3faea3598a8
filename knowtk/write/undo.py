"""Undo one receipt: every file it wrote goes back to its bytes before, as a change of its own.

The inverse of any receipt (``create``, ``update``, ``supersede``, ``withdraw``, ``reinstate``, an undo):
each file the receipt wrote must still be as it left it (its ``sha256After``: the hash the undo is
conditioned on, so a file changed since is refused with ``PublicationConflict`` and nothing is
written), and is put back to the kept version before it (``file_versions_v1``); a file the receipt
created is removed. The safeguards follow the bytes put back: a record whose restored file says
``withdrawn`` gets its withdrawal recorded again, one that says ``superseded`` its guard, one that is
active again has its safeguards lifted (journalled with the undo's receipt). The store after the
undo is judged like every change: it may bring back an issue of the records it puts back (the store
had it before the change), never a new issue elsewhere. The undo leaves its own receipt (operation
``undo``, reason ``undo of RECEIPT``), which can be undone in turn.
"""

from __future__ import annotations

from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument, PublicationConflict
from knowtk.model.records import FileProblem, load_frontmatter
from knowtk.snapshot.model import Snapshot
from knowtk.write import journal
from knowtk.write.files import current, target
from knowtk.write.mutation import Planner, mutate
from knowtk.write.plan import Change, Plan, forbidden_paths

__all__ = ["undo_receipt"]


def _meta(data: bytes | None) -> dict[str, Any]:
    loaded = None if data is None else load_frontmatter(data)
    return {} if loaded is None or isinstance(loaded, FileProblem) else dict(loaded[0])


def _revision(meta: dict[str, Any]) -> int | None:
    rev = meta.get("revision", 1)
    return rev if isinstance(rev, int) and not isinstance(rev, bool) else None


def _safeguards(engine: Engine, plan: Plan, change: Change, at: str) -> None:
    """Make the safeguards say what the restored file says: withdrawn, superseded, or active again."""
    meta, rid, safeguards = _meta(change.after), change.id, engine.safeguards
    status = meta.get("status", "active") if change.after is not None else None
    rev = change.revision_after or 1
    if status == "withdrawn" and rid not in safeguards.withdrawn:
        plan.new_withdrawals[rid] = (rev, None, change.path, at)
    by = meta.get("superseded_by")
    if status == "superseded" and isinstance(by, str) and safeguards.superseded.get(rid, (None, None))[1] != by:
        plan.new_guards[rid] = (rev, by, change.path, at)
        plan.replaced_guards[rid] = safeguards.entries(rid)[1]
    lifted = tuple(
        kind
        for kind, held, keep in (
            ("w", rid in safeguards.withdrawn, "withdrawn"),
            ("g", rid in safeguards.superseded, "superseded"),
        )
        if held and status != keep
    )
    if lifted:
        plan.lift.append((rid, lifted))


def _undo_planner(receipt_id: str, expected_sha256: str | None) -> Planner:
    def plan(engine: Engine, snap: Snapshot, args: dict[str, Any], at: str) -> Plan:
        found = journal.receipt(engine.state, receipt_id)
        if found is None:
            raise InvalidArgument("receipt", f"{receipt_id!r} is no receipt of this store; `knowtk history` lists them")
        made = Plan("undo")
        forbidden = forbidden_paths(engine)
        for entry in found["records"]:
            if entry["sha256Before"] == entry["sha256After"]:
                continue  # a record the receipt named without changing its file (a lift alone)
            full = target(engine.root, entry["path"], forbidden)
            data, sha = current(full)
            wanted = entry["sha256After"]
            if expected_sha256 is not None and len(found["records"]) == 1:
                wanted = expected_sha256  # the caller read the file: undo only that version
            if sha != wanted or sha != entry["sha256After"]:
                raise PublicationConflict(
                    entry["path"],
                    wanted,
                    sha,
                    f"{entry['path']} changed since {receipt_id} left it (expected sha256 {wanted}, found "
                    f"{sha or 'no file'}); nothing was undone: read the record again and change it with a new receipt",
                )
            before = None if entry["sha256Before"] is None else journal.version(engine.state, entry["sha256Before"])
            if entry["sha256Before"] is not None and before is None:
                raise InvalidArgument("receipt", f"the version of {entry['path']} before {receipt_id} is not kept")
            change = Change(entry["id"], entry["path"], full, data, before, _revision(_meta(data)), None)
            change.revision_after = _revision(_meta(before)) if before is not None else None
            made.changes.append(change)
            made.tolerate.update({entry["id"], entry["path"]})
            _safeguards(engine, made, change, at)
        if not made.changes:
            raise InvalidArgument("receipt", f"{receipt_id} changed no file: there is nothing to undo")
        return made

    return plan


def undo_receipt(
    engine: Engine,
    receipt_id: str,
    *,
    expected_sha256: str | None = None,
    reason: str | None = None,
    actor: str | None = None,
    checkpoint: bool = False,
) -> dict[str, Any]:
    """Undo the receipt ``receipt_id`` (see the module): ``{"receipt", "written", "undo"}``."""
    if not isinstance(receipt_id, str) or not receipt_id.startswith("rcpt-"):
        raise InvalidArgument("receipt", f"{receipt_id!r} is not a receipt id (rcpt-...)")
    planner = _undo_planner(receipt_id, expected_sha256)
    why = f"undo of {receipt_id}" + (f": {reason}" if reason else "")
    args = {"operation": "undo", "actor": actor, "reason": why, "checkpoint": checkpoint}
    return {**mutate(engine, args, planner=planner), "undo": receipt_id}
