"""``knowtk adopt``: write what a profile derived into each file's frontmatter, so the folder reads as a knowtk store.

A profile store's records carry the keys their profile derived (``Record.derived``). Adopting writes
those keys, with the values the profile gave them, into the files: a file without frontmatter gets a
new block before its first line; a file with frontmatter gets new lines at the end of it (a splice,
``knowtk.write.splice``), and only a key the file writes in the other tool's form (MADR's ``status:
"superseded by ADR-0005"``, Obsidian's ``tags: "#a #b"``) is rewritten in place, its written value kept
under ``fields``. The body is never touched. Each adopted file is read back by knowtk's own format and
must give the record the profile gave (id, kind, type, title, aliases, tags, status, superseded_by,
dates), or nothing is written.

It is one change through the mutation machinery (``knowtk.write.mutation``): planned under the write
lock on the hashes read then, judged, journalled as one intent (a crash is finished or rolled back at
the next open), written file by file on those hashes (a file changed meanwhile: everything rolled
back, ``PublicationConflict``), and saved as one receipt (operation ``adopt``, one entry per file).
``undo`` puts each file of an adopt receipt back to its bytes before, only when every one of them is
still as the adopt left it.

Not adopted: a file with a coverage issue under its profile (refused, listing them, unless
``skip_issues``); a template (a file or folder whose name holds ``template``: a new file copied from
it would share its id); a record whose replacement is not adopted (its chain would break under the
default profile). knowtk.yaml is never written (docs/profiles.md, Adopt).
"""

from __future__ import annotations

import os
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument, PublicationConflict
from knowtk.model.profile import DEFAULT_PROFILE, profile_names
from knowtk.model.records import FileProblem, Record, build_record, load_frontmatter
from knowtk.snapshot.model import Snapshot
from knowtk.state import STATE_DIR
from knowtk.write import journal
from knowtk.write.files import current, sha256_of, target
from knowtk.write.mutation import Planner, mutate, preview
from knowtk.write.plan import Change, Plan
from knowtk.write.splice import new_file, splice

__all__ = ["adopt", "plan_digest", "undo_adopt"]

# the order new keys are written in (the others follow in the order the profile derived them)
_ORDER = ("id", "kind", "type", "title", "aliases", "tags", "status", "superseded_by", "occurred_at")


def _skip(path: str, rid: str | None, reason: str) -> dict[str, Any]:
    return {"path": path, "id": rid, "reason": reason}


def _is_template(path: str) -> bool:
    return any("template" in part.lower() for part in path.split("/"))


def _select(snap: Snapshot, *, skip_issues: bool) -> tuple[list[Record], list[dict[str, Any]]]:
    """(the records to adopt, sorted by path; the files left out and why). Refuses when a file has an issue."""
    problems: dict[str, list[str]] = {}
    for issue in snap.issues:
        if issue.path is not None:
            problems.setdefault(issue.path, []).append(f"{issue.code}: {issue.message}")
    if problems and not skip_issues:
        listed = "; ".join(f"{path}: {' / '.join(found)}" for path, found in sorted(problems.items())[:20])
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        raise InvalidArgument(
            "skip_issues",
            f"{len(problems)} file(s) have coverage issues under their profile and would not be adopted as they "
            f"read: {listed}{more}; fix them, or skip them (--skip-issues) to adopt the others",
        )
    ids = {r.path: r.id for r in snap.records.values()}
    skipped = [_skip(path, ids.get(path), " / ".join(found)) for path, found in sorted(problems.items())]
    chosen: dict[str, Record] = {}
    for r in snap.records.values():
        if not r.derived or r.path in problems:
            continue  # knowtk's own format already (nothing derived), or left out above
        if _is_template(r.path):
            skipped.append(_skip(r.path, r.id, "a template: a file copied from it would share its id"))
            continue
        chosen[r.id] = r
    changed = True
    while changed:  # a chain must not lead from an adopted record to one the default profile cannot read
        changed = False
        for rid, r in list(chosen.items()):
            by = r.superseded_by
            if by is not None and by not in chosen and by in snap.records and snap.records[by].derived:
                del chosen[rid]
                skipped.append(_skip(r.path, rid, f"its replacement {by} is not adopted"))
                changed = True
    return sorted(chosen.values(), key=lambda r: r.path), sorted(skipped, key=lambda s: s["path"])


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _edits(r: Record) -> dict[str, Any]:
    """The keys to write into the file: those the profile derived, ``fields`` last (with what they replace)."""
    merged = r.frontmatter
    written = r.written
    top = [k for k in r.derived if not k.startswith("fields.")]
    top.sort(key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER))
    edits = {k: _plain(merged[k]) for k in top if merged.get(k) is not None}
    derived_fields: dict[str, Any] = merged["fields"] if isinstance(merged.get("fields"), dict) else {}
    had: dict[str, Any] = written["fields"] if isinstance(written.get("fields"), dict) else {}
    fields = dict(had)
    for key in r.derived:
        if key.startswith("fields.") and key[7:] in derived_fields:
            fields[key[7:]] = _plain(derived_fields[key[7:]])
    for key in top:  # a key written in the other tool's form is rewritten: what was written stays under fields
        if key in written and key in derived_fields and key not in fields:
            fields[key] = _plain(derived_fields[key])
    if fields != had:
        edits["fields"] = fields
    return edits


def _adopted(data: bytes, edits: dict[str, Any]) -> bytes:
    """The file with ``edits`` written into its frontmatter (a new block when it has none); the body as it is."""
    loaded = load_frontmatter(data)
    if not isinstance(loaded, FileProblem):
        return splice(data, edits)
    if loaded.code != "frontmatter_missing":
        raise InvalidArgument("skip_issues", f"a file cannot be adopted: {loaded.message}")
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    rest = data[len(bom) :]
    first = rest.split(b"\n", 1)[0]
    eol = b"\r\n" if first.endswith(b"\r") and b"\n" in rest else b"\n"
    return bom + new_file(edits, "", eol) + rest


def _reading(r: Record) -> dict[str, Any]:
    """What a reader of the record sees, as the identity of an adopted file is checked on."""
    return {
        "id": r.id,
        "kind": r.kind,
        "type": r.type,
        "title": r.title,
        "aliases": r.aliases,
        "tags": r.tags,
        "status": r.status,
        "superseded_by": r.superseded_by,
        "dates": {k: (v.text, v.start, v.end) for k, v in r.dates.items()},
    }


def _check(r: Record, after: bytes) -> None:
    """The adopted bytes, read by knowtk's own format, give the record the profile gave; else nothing is written."""
    loaded = load_frontmatter(after)
    if isinstance(loaded, FileProblem):
        raise InvalidArgument("profile", f"{r.path} would be unreadable after adopt: {loaded.message}")
    record, issues = build_record(r.path, sha256_of(after), loaded[0], loaded[2])
    want = _reading(r)
    got = _reading(record) if record is not None else {}
    if record is None or issues or got != want:
        wrong = sorted(k for k in want if got.get(k) != want[k]) or [i.code for i in issues]
        raise InvalidArgument(
            "profile", f"{r.path} would not read the same after adopt ({', '.join(wrong)}); adopt it by hand"
        )


def _forbidden(engine: Engine) -> list[str]:
    return [os.path.dirname(engine.state_path), os.path.join(engine.root, STATE_DIR)]


def plan_digest(plan: Plan) -> str:
    """The digest of what a plan writes: each file's path and hashes before and after (the dry run shows it)."""
    lines = [f"{c.path}\0{c.sha_before}\0{c.sha_after}" for c in plan.changes]
    return sha256_of("\n".join(lines).encode("utf-8"))


def _adopt_planner(out: dict[str, Any], *, skip_issues: bool, expect: str | None) -> Planner:
    def plan(engine: Engine, snap: Snapshot, args: dict[str, Any], at: str) -> Plan:
        records, skipped = _select(snap, skip_issues=skip_issues)
        out["skipped"] = skipped
        made = Plan("adopt")
        forbidden = _forbidden(engine)
        for r in records:
            full = target(engine.root, r.path, forbidden)
            data, sha = current(full)
            if sha != r.sha256:  # changed since the scan this plan reads: never adopt what was not read
                raise PublicationConflict(r.path, r.sha256, sha)
            assert data is not None
            after = _adopted(data, _edits(r))
            _check(r, after)
            if after != data:
                made.changes.append(Change(r.id, r.path, full, data, after, r.revision, r.revision))
        out["plan"] = plan_digest(made)
        if expect is not None and expect != out["plan"]:
            raise PublicationConflict(
                "(the adopt plan)",
                expect,
                out["plan"],
                f"the files are not as the dry run saw them (plan {expect}, now {out['plan']}); nothing was "
                "written: run the dry run again and review its diff",
            )
        return made

    return plan


def _undo_planner(receipt_id: str) -> Planner:
    def plan(engine: Engine, snap: Snapshot, args: dict[str, Any], at: str) -> Plan:
        found = journal.receipt(engine.state, receipt_id)
        if found is None or found["operation"] != "adopt":
            what = "no receipt" if found is None else f"a {found['operation']} receipt, not an adopt"
            raise InvalidArgument("undo", f"{receipt_id!r} is {what}; `knowtk history` lists the receipts")
        made = Plan("adopt-undo")
        made.judge = False  # each file goes back to bytes it had; the profile reads them as before
        forbidden = _forbidden(engine)
        for entry in found["records"]:
            full = target(engine.root, entry["path"], forbidden)
            data, sha = current(full)
            if sha == entry["sha256Before"]:
                continue  # put back already
            if sha != entry["sha256After"]:
                raise PublicationConflict(
                    entry["path"],
                    entry["sha256After"],
                    sha,
                    f"{entry['path']} changed since {receipt_id} adopted it (expected sha256 {entry['sha256After']}, "
                    f"found {sha or 'no file'}); nothing was undone: undo needs every file as the adopt left it",
                )
            before = journal.version(engine.state, entry["sha256Before"])
            if before is None:
                raise InvalidArgument("undo", f"the version of {entry['path']} before {receipt_id} is not kept")
            made.changes.append(Change(entry["id"], entry["path"], full, data, before, None, None))
        return made

    return plan


def _dry(engine: Engine, args: dict[str, Any], planner: Planner) -> dict[str, Any]:
    shown = preview(engine, args, planner=planner)
    records = [
        {
            "id": r["id"],
            "path": r["path"],
            "revisionBefore": None,
            "revisionAfter": None,
            "sha256Before": r["sha256Before"],
            "sha256After": r["sha256After"],
        }
        for r in shown["records"]
    ]
    receipt = {
        "id": None,
        "operation": shown["operation"],
        "at": None,
        "actor": args.get("actor"),
        "reason": args.get("reason"),
        "records": records,
        "indexed": False,
        "checkpoint": None,
    }
    return {"receipt": receipt, "written": False, "diff": "".join(r["diff"] for r in shown["records"])}


def _profile_of(engine: Engine, profile: str | None) -> str:
    """The profile the store is read with, checked against the one asked for."""
    mapping = engine.profile_map()
    names = [n for n in profile_names() if n != DEFAULT_PROFILE]
    if profile is not None and profile not in names:
        raise InvalidArgument("profile", f"cannot adopt from {profile!r}", allowed=names, value=profile)
    if profile is not None and profile != mapping.default:
        raise InvalidArgument(
            "profile",
            f"the store is open with profile {mapping.default!r}: open it with profile={profile!r} "
            f"(knowtk adopt --profile {profile}) to adopt what that profile derives",
        )
    if mapping.plain_contract:
        raise InvalidArgument(
            "profile", "the store is read as knowtk's own format: nothing is derived to adopt", allowed=names
        )
    return mapping.key()


def _note(engine: Engine) -> str | None:
    config = engine.config
    if config.profile == DEFAULT_PROFILE and not config.profiles:
        return None
    named = [f"profile: {config.profile}"] if config.profile != DEFAULT_PROFILE else []
    named += [f"profiles: {folder}: {name}" for folder, name in config.profiles]
    return (
        f"knowtk.yaml still says {'; '.join(named)}; it was left as it is: the adopted files read the same with "
        "it or without it; remove it once you add no more files written for that tool"
    )


def adopt(
    engine: Engine,
    *,
    profile: str | None = None,
    dry_run: bool = False,
    skip_issues: bool = False,
    expect: str | None = None,
    actor: str | None = None,
    checkpoint: bool = False,
) -> dict[str, Any]:
    """Write every record's derived keys into its file (see the module); the receipt, or the diff of a dry run.

    ``expect``: the ``plan`` of a dry run; the run writes only if it would write exactly that (else
    ``PublicationConflict``, nothing written). ``{"receipt", "written", "dryRun", "profile", "plan",
    "skipped": [{path, id, reason}], "note", "diff"?}``.
    """
    name = _profile_of(engine, profile)
    out: dict[str, Any] = {"skipped": [], "plan": None}
    planner = _adopt_planner(out, skip_issues=skip_issues, expect=expect)
    args = {"operation": "adopt", "actor": actor, "checkpoint": checkpoint}
    answer = _dry(engine, args, planner) if dry_run else mutate(engine, args, planner=planner)
    extra = {"dryRun": dry_run, "profile": name, "plan": out["plan"], "skipped": out["skipped"]}
    return {**answer, **extra, "note": _note(engine)}


def undo_adopt(
    engine: Engine,
    receipt_id: str,
    *,
    dry_run: bool = False,
    actor: str | None = None,
    checkpoint: bool = False,
) -> dict[str, Any]:
    """Put back every file an adopt receipt wrote, if every one is still as it left it; a receipt of its own."""
    if not isinstance(receipt_id, str) or not receipt_id.startswith("rcpt-"):
        raise InvalidArgument("undo", f"{receipt_id!r} is not a receipt id (rcpt-...)")
    planner = _undo_planner(receipt_id)
    args = {"operation": "adopt-undo", "actor": actor, "reason": f"undo of {receipt_id}", "checkpoint": checkpoint}
    answer = _dry(engine, args, planner) if dry_run else mutate(engine, args, planner=planner)
    return {**answer, "dryRun": dry_run, "undo": receipt_id, "skipped": [], "note": None}
