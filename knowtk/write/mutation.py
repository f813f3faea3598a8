"""``knowledge_mutation``: plan, judge, journal the intent, record safeguards, write the files, leave a receipt.

Order of one mutation, under the store's write lock (``WriteLock``) and the engine's lock:

1. the plan (``knowtk.write.plan``): every file's bytes before and after, the caller's hash checked;
2. the judgement (``knowtk.write.validate``): the store after the change has no issue it has not now;
3. the store is writable (else ``StoreUnavailable``, nothing touched);
4. the intent (``write_intents_v1``): the bytes before and after of every file, the safeguards;
5. the safeguards a withdraw or supersede makes true, recorded (journal, then tables);
6. each file published on the hash it was read at (``knowtk.write.files.publish``);
7. the safeguards a reinstate lifts, lifted (journalled);
8. the receipt saved and the intent dropped, in one transaction.

A crash after 4 leaves the intent: the next open (``recover``) finishes it when every file is as the
intent found or left it, and rolls it back otherwise (files restored, safeguards it added lifted).
A conflict at step 6 rolls back at once and raises ``PublicationConflict``.
"""

from __future__ import annotations

import base64
import difflib
import getpass
import os
from collections.abc import Callable
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument, KnowtkError, PublicationConflict, StateError, StoreUnavailable
from knowtk.model.datevalues import format_utc
from knowtk.snapshot.model import Snapshot
from knowtk.state import Contention, now_utc
from knowtk.write import journal
from knowtk.write.checkpoint import GitFailed, Repo, find_repo
from knowtk.write.files import WriteLock, check_writable, current, publish, sha256_of
from knowtk.write.plan import Plan, make_plan
from knowtk.write.validate import snapshot_after_change

__all__ = ["STEP_HOOK", "Planner", "mutate", "preview", "recover", "set_step_hook"]

#: ``planner(engine, snapshot, args, at)``: the plan of one change, or its refusal (``make_plan`` for
#: ``knowledge_mutation``; ``knowtk.write.adopt`` brings its own). Called under the write and engine locks.
Planner = Callable[[Engine, Snapshot, dict[str, Any], str], Plan]

#: Called with each step's name after it is done ("intent", "safeguards", "file:0", "lift", "receipt"):
#: tests kill the process there to prove a crash at any point loses nothing.
STEP_HOOK: list[Callable[[str], None]] = []


def set_step_hook(hook: Callable[[str], None] | None) -> None:
    STEP_HOOK[:] = [] if hook is None else [hook]


def _step(name: str) -> None:
    for hook in STEP_HOOK:
        hook(name)


def write_lock(engine: Engine) -> WriteLock:
    return WriteLock(os.path.dirname(engine.state_path))


def _actor(given: str | None) -> str:
    if given:
        return given
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def _judged(engine: Engine, args: dict[str, Any], planner: Planner) -> tuple[Plan, dict[str, Any]]:
    """Steps 1 and 2 (under the locks): the plan and its receipt, the change judged; refusals raised here."""
    snap = engine.snapshot()
    now = now_utc()
    at = format_utc(now)
    plan = planner(engine, snap, args, at)
    receipt = _receipt(plan, args, at)
    changed = {c.path: c.after for c in plan.changes if c.before != c.after}
    if (not changed and not plan.lift) or not plan.judge:
        return plan, receipt
    after = snapshot_after_change(
        snap,
        engine.scanner.parsed,
        engine.config,
        engine.safeguards,
        changed,
        new_withdrawals=plan.new_withdrawals,
        new_guards=plan.new_guards,
        lifted={rid for rid, _ in plan.lift},
        now=now,
        tolerated=frozenset(plan.tolerate),
    )
    if plan.check_chain is not None:
        _chain_reaches(after, plan.check_chain)
    return plan, receipt


def mutate(engine: Engine, args: dict[str, Any], *, planner: Planner = make_plan) -> dict[str, Any]:
    """Run one mutation (``args`` checked by the tool's specs, snake_case); returns ``{"receipt", "written"}``."""
    try:
        return _mutate(engine, args, planner)
    except Contention as exc:  # state.sqlite's write lock held past the busy timeout by another process
        raise StateError(
            engine.state_path,
            f"another process held the state's write lock too long ({exc}); an unfinished change is finished "
            "or rolled back when the store is opened next; try again",
        ) from exc


def _mutate(engine: Engine, args: dict[str, Any], planner: Planner) -> dict[str, Any]:
    with write_lock(engine).held(), engine.lock:
        engine.ensure_open()
        journal.ensure_tables(engine.state)
        _recover_locked(engine)
        plan, receipt = _judged(engine, args, planner)
        if not any(c.before != c.after for c in plan.changes) and not plan.lift:
            return {"receipt": {**receipt, "id": None, "indexed": True}, "written": False}
        check_writable(engine.root, [c.full for c in plan.changes if c.before != c.after])
        wanted = bool(args.get("checkpoint")) or engine.config.checkpoint == "always"
        repo = find_repo(engine.root, required=True) if wanted else None  # refused before anything is touched
        payload = _payload(plan, receipt)
        journal.insert_intent(engine.state, receipt["id"], receipt["at"], payload)
        _step("intent")
        _forward(engine, payload, live=True)
        if repo is not None:
            receipt["checkpoint"] = _checkpoint(engine, repo, plan, receipt)
        return {"receipt": receipt, "written": True}


def preview(engine: Engine, args: dict[str, Any], *, planner: Planner = make_plan) -> dict[str, Any]:
    """What ``mutate`` would do, refused the same way, writing nothing: each file's unified diff and the safeguards.

    ``{"operation", "records": [{id, path, sha256Before, sha256After, diff}], "lifts": [ids], "safeguards": [ids],
    "changes": bool}``.
    """
    with engine.lock:
        engine.ensure_open()
        plan, _ = _judged(engine, args, planner)
    records = []
    for c in plan.changes:
        before = (c.before or b"").decode("utf-8", "replace").splitlines(True)
        after = (c.after or b"").decode("utf-8", "replace").splitlines(True)
        diff = "".join(difflib.unified_diff(before, after, c.path if c.before else "/dev/null", c.path))
        records.append(
            {"id": c.id, "path": c.path, "sha256Before": c.sha_before, "sha256After": c.sha_after, "diff": diff}
        )
    return {
        "operation": plan.operation,
        "records": records,
        "safeguards": sorted({*plan.new_withdrawals, *plan.new_guards}),
        "lifts": [rid for rid, _ in plan.lift],
        "changes": any(c.before != c.after for c in plan.changes) or bool(plan.lift),
    }


def _checkpoint(engine: Engine, repo: Repo, plan: Plan, receipt: dict[str, Any]) -> str:
    """Commit exactly the files the mutation wrote; the receipt names the commit."""
    files = {
        os.path.relpath(c.full, repo.top).replace(os.sep, "/"): c.after for c in plan.changes if c.before != c.after
    }
    ids = ", ".join(dict.fromkeys(c.id for c in plan.changes))
    message = f"knowtk {receipt['operation']} {ids}\n\nreceipt: {receipt['id']}\nactor: {receipt['actor']}\n"
    if receipt.get("reason"):
        message += f"reason: {receipt['reason']}\n"
    try:
        commit = repo.commit(files, message)
    except (KnowtkError, OSError, GitFailed) as exc:
        raise StoreUnavailable(
            engine.root, f"the change was saved (receipt {receipt['id']}) but its Git checkpoint failed: {exc}"
        ) from exc
    journal.set_checkpoint(engine.state, receipt["id"], commit)
    return commit


def _chain_reaches(after: Snapshot, rid: str) -> None:
    end = after.chain_ends.get(rid)
    if end is None or end.current is None:
        reason = end.reason if end is not None else "unset"
        raise InvalidArgument("by", f"superseding {rid} this way leads to no active record ({reason})")


def _receipt(plan: Plan, args: dict[str, Any], at: str) -> dict[str, Any]:
    stamp = at.replace("-", "").replace(":", "")[:15]
    return {
        "id": f"rcpt-{stamp}-{os.urandom(5).hex()}",
        "operation": plan.operation,
        "at": at,
        "actor": _actor(args.get("actor")),
        "reason": args.get("reason"),
        "records": [
            {
                "id": c.id,
                "path": c.path,
                "revisionBefore": c.revision_before,
                "revisionAfter": c.revision_after,
                "sha256Before": c.sha_before,
                "sha256After": c.sha_after,
            }
            for c in plan.changes
        ],
        "indexed": False,
        "checkpoint": None,
    }


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _payload(plan: Plan, receipt: dict[str, Any]) -> dict[str, Any]:
    return {
        "receipt": receipt,
        "files": [
            {"path": c.path, "full": c.full, "before": _b64(c.before), "after": _b64(c.after)} for c in plan.changes
        ],
        # (the intent's keys: an intent a crash left is read back by them)
        "add_w": plan.new_withdrawals,
        "add_g": plan.new_guards,
        "previous_g": plan.replaced_guards,
        "lift": [[rid, list(what)] for rid, what in plan.lift],
    }


def _files(payload: dict[str, Any]) -> list[tuple[str, str, bytes | None, bytes | None]]:
    return [(f["path"], f["full"], _unb64(f["before"]), _unb64(f["after"])) for f in payload["files"]]


def _sha(data: bytes | None) -> str | None:
    return None if data is None else sha256_of(data)


def _forward(engine: Engine, payload: dict[str, Any], *, live: bool) -> None:
    """Steps 5 to 8 (each one safe to do again after a crash)."""
    receipt, safeguards = payload["receipt"], engine.safeguards
    withdrawals = {k: tuple(v) for k, v in payload["add_w"].items()}
    guards = {k: tuple(v) for k, v in payload["add_g"].items()}
    if withdrawals or guards:
        safeguards.record(withdrawals, guards)
        _step("safeguards")
    for n, (path, full, before, after) in enumerate(_files(payload)):
        if before == after:
            continue
        if current(full)[1] != _sha(after):
            try:
                publish(full, after, _sha(before), shown=path)
            except PublicationConflict:
                _rollback(engine, payload)
                raise
        _step(f"file:{n}")
    for rid, what in payload["lift"]:
        safeguards.lift(rid, tuple(what), receipt["id"], receipt["at"])
    if payload["lift"]:
        _step("lift")
    blobs = {}
    for _, _, before, after in _files(payload):
        for data in (before, after):
            if data is not None:
                blobs[_sha(data) or ""] = data
    journal.save_receipt(engine.state, receipt, blobs)
    _step("receipt")


def _rollback(engine: Engine, payload: dict[str, Any]) -> None:
    """Undo an unfinished mutation: files it wrote put back, safeguards it added lifted, the intent dropped."""
    receipt = payload["receipt"]
    for path, full, before, after in reversed(_files(payload)):
        if before != after and current(full)[1] == _sha(after):
            publish(full, before, _sha(after), shown=path)
    undo = f"{receipt['id']}-rollback"
    for rid in payload["add_w"]:
        engine.safeguards.lift(rid, ("w",), undo, receipt["at"])
    for rid in payload["add_g"]:
        engine.safeguards.lift(rid, ("g",), undo, receipt["at"])
        previous = payload["previous_g"].get(rid)
        if previous:
            engine.safeguards.record({}, {rid: tuple(previous)})
    journal.drop_intent(engine.state, receipt["id"])


def _recover_locked(engine: Engine) -> list[str]:
    notes = []
    for rid, payload in journal.intents(engine.state):
        files = _files(payload)
        forward = all(current(full)[1] in (_sha(before), _sha(after)) for _, full, before, after in files)
        try:
            if forward:
                _forward(engine, payload, live=False)
                notes.append(f"finished the mutation {rid} a crash had interrupted")
                continue
        except PublicationConflict:
            notes.append(f"rolled back the mutation {rid} a crash had interrupted (a file changed meanwhile)")
            continue
        _rollback(engine, payload)
        notes.append(f"rolled back the mutation {rid} a crash had interrupted (a file changed meanwhile)")
    engine.safeguards.repairs.extend(notes)
    return notes


def recover(engine: Engine) -> list[str]:
    """Finish or roll back the mutations a crash left unfinished (at open); what was done, for ``check``.

    Nothing is done (and nothing waits) when no intent is pending; a store this process cannot
    write keeps its intents for a process that can.
    """
    with engine.lock:
        if not journal.intents(engine.state):
            return []
    try:
        check_writable(engine.root, [])
        with write_lock(engine).held(), engine.lock:
            return _recover_locked(engine)
    except KnowtkError:
        return []
