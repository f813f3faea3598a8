"""What a mutation will do, decided before anything is touched: each file's bytes before and after, and the
safeguards it records or lifts. One planner per operation; every refusal happens here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import IdentityConflict, InvalidArgument, PublicationConflict, RecordNotFound
from knowtk.model.records import ID_PATTERN, FileProblem, load_frontmatter
from knowtk.snapshot.model import Snapshot
from knowtk.state import STATE_DIR, JournalEntries
from knowtk.write import OPERATIONS, journal
from knowtk.write.files import current, sha256_of, target
from knowtk.write.splice import REMOVE, new_file, splice

__all__ = ["OPERATIONS", "Change", "Plan", "forbidden_paths", "make_plan"]

# lifecycle keys change only through the operations that record or lift their safeguards
_LIFECYCLE_KEYS = ("status", "superseded_by")


@dataclass
class Change:
    """One file a mutation writes."""

    id: str
    path: str  # relative to the store, with "/"
    full: str
    before: bytes | None
    after: bytes | None
    revision_before: int | None
    revision_after: int | None

    @property
    def sha_before(self) -> str | None:
        return None if self.before is None else sha256_of(self.before)

    @property
    def sha_after(self) -> str | None:
        return None if self.after is None else sha256_of(self.after)


@dataclass
class Plan:
    operation: str
    changes: list[Change] = field(default_factory=list)
    new_withdrawals: JournalEntries = field(default_factory=dict)  # recorded before the files change
    new_guards: JournalEntries = field(default_factory=dict)  # supersession guards recorded before the files change
    replaced_guards: dict[str, Any] = field(default_factory=dict)  # guards the new ones replace (a rollback's)
    lift: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (id, "w"/"g") lifted by reinstate
    check_chain: str | None = None  # a superseded id whose chain must reach an active record
    judge: bool = True  # False: the store after the change is not judged (an undo puts back bytes it had)
    # ids and paths whose issues the change may bring back: an undo puts back files the store had, issues and all
    tolerate: set[str] = field(default_factory=set)


def forbidden_paths(engine: Engine) -> list[str]:
    """Where no change may write: the state folder and the store's ``.knowtk/``."""
    return [os.path.dirname(engine.state_path), os.path.join(engine.root, STATE_DIR)]


class _Context:
    def __init__(self, engine: Engine, snap: Snapshot, args: dict[str, Any], at: str) -> None:
        self.engine, self.snap, self.args, self.at = engine, snap, args, at
        self.root = engine.root
        self.forbidden = forbidden_paths(engine)

    def existing(self, rid: str, expected: str | None) -> tuple[Change, dict[str, Any]]:
        """The record's file as it is now, checked against the hash the caller read; (change, frontmatter)."""
        r = self.snap.records.get(rid)
        if r is None:
            raise RecordNotFound(rid, f"no record with id {rid!r} in the store (missing, duplicated or not valid)")
        if expected is None:
            raise InvalidArgument("expectedSha256", f"required to change the existing record {rid!r} (read it first)")
        full = target(self.root, r.path, self.forbidden)
        data, sha = current(full)
        if sha != expected:
            raise PublicationConflict(r.path, expected, sha)
        assert data is not None
        loaded = load_frontmatter(data)
        if isinstance(loaded, FileProblem):
            raise InvalidArgument("id", f"{r.path} cannot be edited: {loaded.message}")
        meta = loaded[0]
        rev = _revision(meta)
        return Change(rid, r.path, full, data, data, rev, rev), meta

    def create(self, rid: str, record: dict[str, Any], path: str | None) -> Change:
        if not ID_PATTERN.fullmatch(rid):
            raise InvalidArgument("id", f"{rid!r} is not a valid id", allowed=ID_PATTERN.pattern)
        given = record.get("id", rid)
        if given != rid:
            raise InvalidArgument("record.id", f"{given!r} differs from the id {rid!r} being created")
        snap = self.snap
        claims = snap.index.claims.get(rid) if snap.index is not None else None
        if rid in snap.records or claims:
            where = snap.records[rid].path if rid in snap.records else (claims[0] if claims else None)
            raise IdentityConflict(rid, where)
        fields = {k: v for k, v in record.items() if k not in ("id", "body")}
        if fields.get("status", "active") != "active" or fields.get("superseded_by") is not None:
            key = "status" if fields.get("status", "active") != "active" else "superseded_by"
            raise InvalidArgument(f"record.{key}", "a new record is active; withdraw or supersede it afterwards")
        rel = path or _default_path(snap, rid, fields)
        full = target(self.root, rel, self.forbidden)
        if os.path.lexists(full):
            raise IdentityConflict(rid, rel, f"a file already exists at {rel}; choose another path")
        body = record.get("body") or ""
        if not isinstance(body, str):
            raise InvalidArgument("record.body", "must be a string")
        ordered = {"id": rid, "kind": fields.pop("kind", None), **fields}
        data = new_file(ordered, body)
        return Change(rid, rel, full, None, data, None, _revision(ordered))


def _revision(meta: dict[str, Any]) -> int | None:
    rev = meta.get("revision", 1)
    return rev if isinstance(rev, int) and not isinstance(rev, bool) else None


def _default_path(snap: Snapshot, rid: str, fields: dict[str, Any]) -> str:
    """The folder named after the type (or its plural) when the store has one, else the type's plural."""
    kind = fields.get("kind")
    type_ = fields.get("type") or kind
    if not isinstance(type_, str) or not type_:
        raise InvalidArgument("record.kind", "a new record needs a kind", allowed=("page", "claim", "relationship"))
    folders = snap.folders
    candidates = [type_ + "s", type_ + "es", type_]
    if kind == "relationship":
        candidates += ["relations", "relationships"]
    for folder in candidates:
        if folder in folders:
            return f"{folder}/{rid}.md"
    return f"{candidates[0]}/{rid}.md".replace(":", "-")


def _changes(meta: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``record`` whose values differ from the file's (None removes one)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key == "body":
            continue
        if not isinstance(key, str) or not key:
            raise InvalidArgument("record", f"{key!r} is not a field name")
        if value is None:
            if key in meta:
                out[key] = REMOVE
        elif meta.get(key, REMOVE) != value:
            out[key] = value
    return out


def _update(ctx: _Context, plan: Plan) -> None:
    args = ctx.args
    record = dict(args.get("record") or {})
    change, meta = ctx.existing(args["id"], args.get("expected_sha256"))
    if "id" in record and record["id"] != args["id"]:
        raise InvalidArgument("record.id", "an update cannot change the id; create the new record and supersede")
    record.pop("id", None)
    for key in _LIFECYCLE_KEYS:
        if key in record and record[key] != meta.get(key):
            raise InvalidArgument(f"record.{key}", "changes only through supersede, withdraw or reinstate")
    edits = _changes(meta, record)
    if args.get("restate"):
        given = record.get("revision")
        raised = (change.revision_before or 1) + 1
        edits["revision"] = (
            given if isinstance(given, int) and not isinstance(given, bool) and given > raised else raised
        )
    body = record.get("body")
    if body is not None and not isinstance(body, str):
        raise InvalidArgument("record.body", "must be a string")
    if edits or body is not None:
        assert change.before is not None
        change.after = splice(change.before, edits, body)
        change.revision_after = _revision({**meta, **{k: v for k, v in edits.items() if v is not REMOVE}})
    plan.changes.append(change)


def _create(ctx: _Context, plan: Plan) -> None:
    args = ctx.args
    record = args.get("record")
    if not record:
        raise InvalidArgument("record", "create needs the new record's fields (at least kind)")
    plan.changes.append(ctx.create(args["id"], dict(record), args.get("path")))


def _lifecycle(ctx: _Context, rid: str) -> str:
    return ctx.snap.lifecycle.get(rid, "active")


def _supersede(ctx: _Context, plan: Plan) -> None:
    args, snap = ctx.args, ctx.snap
    rid, by = args["id"], args.get("by")
    if not by:
        raise InvalidArgument("by", "supersede needs the id of the replacing record")
    if by == rid:
        raise InvalidArgument("by", "a record cannot supersede itself")
    change, _meta = ctx.existing(rid, args.get("expected_sha256"))
    if _lifecycle(ctx, rid) != "active":
        raise InvalidArgument("id", f"{rid} is {_lifecycle(ctx, rid)} already; reinstate it first to change that")
    if args.get("record"):
        plan.changes.append(ctx.create(by, dict(args["record"]), args.get("path")))
    elif by not in snap.records or _lifecycle(ctx, by) != "active" or not snap.available(by):
        state = "missing" if by not in snap.records else f"{_lifecycle(ctx, by)}, not an available active record"
        raise InvalidArgument("by", f"{by!r} is {state}; give an active record, or its fields in record to create it")
    assert change.before is not None
    change.after = splice(change.before, {"status": "superseded", "superseded_by": by})
    plan.changes.insert(0, change)
    rev = change.revision_before or 1
    plan.new_guards[rid] = (rev, by, change.path, ctx.at)
    plan.replaced_guards[rid] = ctx.engine.safeguards.entries(rid)[1]
    plan.check_chain = rid


def _withdraw(ctx: _Context, plan: Plan) -> None:
    args = ctx.args
    rid = args["id"]
    change, _meta = ctx.existing(rid, args.get("expected_sha256"))
    if _lifecycle(ctx, rid) == "withdrawn" or rid in ctx.engine.safeguards.withdrawn:
        raise InvalidArgument("id", f"{rid} is withdrawn already")
    assert change.before is not None
    change.after = splice(change.before, {"status": "withdrawn"})
    plan.changes.append(change)
    plan.new_withdrawals[rid] = (change.revision_before or 1, None, change.path, ctx.at)


def _reinstate(ctx: _Context, plan: Plan) -> None:
    args = ctx.args
    rid = args["id"]
    change, meta = ctx.existing(rid, args.get("expected_sha256"))
    safeguards = ctx.engine.safeguards
    what = tuple(k for k, held in (("w", rid in safeguards.withdrawn), ("g", rid in safeguards.superseded)) if held)
    if not what and meta.get("status", "active") == "active":
        raise InvalidArgument("id", f"{rid} is active, with no safeguard to lift")
    edits: dict[str, Any] = {}
    if meta.get("status", "active") != "active":
        # a status line the withdrawal or supersession added goes again: the file gets its bytes back
        edits["status"] = REMOVE if _status_was_added(ctx.engine, rid) else "active"
    if "superseded_by" in meta:
        edits["superseded_by"] = REMOVE
    assert change.before is not None
    if edits:
        change.after = splice(change.before, edits)
    plan.changes.append(change)
    if what:
        plan.lift.append((rid, what))


def _status_was_added(engine: Engine, rid: str) -> bool:
    """Whether the last withdraw or supersede of ``rid`` through knowtk added its ``status`` line (the file before
    it had none, which reads as active)."""
    receipts, _ = journal.receipt_rows(engine.state, record=rid, since=None, until=None, limit=50, offset=0)
    for receipt in receipts:
        if receipt["operation"] in ("update", "create"):
            continue
        if receipt["operation"] not in ("withdraw", "supersede"):
            return False  # a reinstate or undo came after: this status line is not one knowtk added
        entry = next((r for r in receipt["records"] if r["id"] == rid), None)
        if entry is None or entry["sha256Before"] is None:
            return False
        before = journal.version(engine.state, entry["sha256Before"])
        loaded = None if before is None else load_frontmatter(before)
        if loaded is None or isinstance(loaded, FileProblem):
            return False
        return "status" not in loaded[0]
    return False


_PLANNERS: dict[str, Callable[[_Context, Plan], None]] = {
    "create": _create,
    "update": _update,
    "supersede": _supersede,
    "withdraw": _withdraw,
    "reinstate": _reinstate,
}


def make_plan(engine: Engine, snap: Snapshot, args: dict[str, Any], at: str) -> Plan:
    """The plan of one mutation (``args`` checked by the tool's argument specs), or the refusal."""
    operation = args["operation"]
    if operation in ("withdraw", "reinstate") and not (args.get("reason") or "").strip():
        raise InvalidArgument("reason", f"{operation} needs a reason (it is kept in the receipt)")
    plan = Plan(operation)
    _PLANNERS[operation](_Context(engine, snap, args, at), plan)
    return plan
