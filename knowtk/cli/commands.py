"""The subcommands that are not a tool's: ``call``, ``check``, ``state``, ``diff``, ``adopt``, ``export`` and
``coverage``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from knowtk.cli.registry import command, store_of
from knowtk.errors import InvalidArgument, SafeguardLoss
from knowtk.query import TOOLS
from knowtk.query.common import coverage
from knowtk.query.tools.mutation import table as receipt_table
from knowtk.store import open_store

__all__: list[str] = []  # the subcommands register themselves when this module is imported


def _call_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("tool", help="a contract tool name", choices=sorted(TOOLS))
    p.add_argument("args", nargs="?", default="{}", help="a JSON object of camelCase arguments")


@command("call", "any tool by its contract name, with JSON arguments", setup=_call_setup)
def _call(options: argparse.Namespace) -> dict[str, Any]:
    try:
        args = json.loads(options.args)
    except json.JSONDecodeError as exc:
        raise InvalidArgument("args", f"is not JSON: {exc}") from None
    return store_of(options).call(options.tool, args)


def _check_table(r: dict[str, Any]) -> str:
    lines = [f"state {r['state']}: " + ("ok, nothing found" if r["ok"] else "problems found")]
    for title, key in (
        ("repaired by queries since the store was opened", "earlier"),
        ("found", "found"),
        ("repaired", "repaired"),
        ("NOT repaired", "unrepaired"),
    ):
        if r.get(key):
            lines.append(f"{title}:")
            lines += [f"  {item}" for item in r[key]]
    return "\n".join(lines)


@command("check", "check state.sqlite and the projections against the Markdown, and repair them")
def _check(options: argparse.Namespace) -> int:
    report = store_of(options).check()
    print(json.dumps(report, indent=2, ensure_ascii=False) if options.json else _check_table(report))
    return 1 if report["unrepaired"] else 0  # found and repaired is a healthy state: the report says what


@command("state accept-loss", "accept safeguards knowtk reported lost, so that queries answer again")
def _accept_loss(options: argparse.Namespace) -> dict[str, Any]:
    refused = None
    try:
        store = open_store(options.store, state_dir=options.state_dir, profile=options.profile)
    except SafeguardLoss as exc:  # only a loss: a busy or foreign state is reported as what it is, never accepted
        refused = str(exc)
        store = open_store(
            options.store, state_dir=options.state_dir, accept_safeguard_loss=True, profile=options.profile
        )
    answer = store.accept_safeguard_loss()
    if answer.get("accepted") is None and refused is not None:
        answer["accepted"] = refused
    return answer


@command("state rebind", "bind the state to this store folder (after the store was moved)")
def _rebind(options: argparse.Namespace) -> dict[str, Any]:
    store = open_store(options.store, state_dir=options.state_dir, rebind_state=True, profile=options.profile)
    return {"store": store.root, "state": store.state_path}


def _diff_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="the record's id")
    p.add_argument("a", nargs="?", help="a sha256 (or prefix) or receipt id (default: the oldest kept version)")
    p.add_argument("b", nargs="?", help="a sha256 (or prefix) or receipt id (default: the file now)")


@command("diff", "what changed in a record between two kept versions", setup=_diff_setup)
def _diff(options: argparse.Namespace) -> int:
    text = store_of(options).diff(options.id, options.a, options.b)
    print(json.dumps({"id": options.id, "diff": text}) if options.json else (text or "no difference"))
    return 0


def _adopt_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="print the diff of every file; write nothing")
    p.add_argument("--skip-issues", action="store_true", help="leave out the files with coverage issues")
    p.add_argument("--expect", metavar="PLAN", help="write only what the dry run that printed this PLAN showed")
    p.add_argument("--undo", metavar="RECEIPT", help="put back the files of this adopt receipt")
    p.add_argument("--actor", help="who makes the change (default: the OS user)")
    p.add_argument("--checkpoint", action="store_true", help="commit the files written to Git")


def _adopt_table(r: dict[str, Any]) -> str:
    lines = [r["diff"]] if r.get("diff") else []
    files = len(r["receipt"]["records"])
    if r["dryRun"]:
        lines.append(f"dry run: {files} file(s) would change; nothing was written" if files else "nothing to adopt")
        if files and r.get("plan"):
            lines.append(f"to write exactly this: knowtk adopt --expect {r['plan']}")
    elif not r["written"]:
        lines.append("nothing to undo" if r.get("undo") else "nothing to adopt: every file reads the same already")
    else:
        lines.append(receipt_table(r))
        lines.append(f"undo: knowtk adopt --undo {r['receipt']['id']}" if not r.get("undo") else "")
    for s in r["skipped"]:
        lines.append(f"skipped {s['path']}: {s['reason']}")
    if r.get("note"):
        lines.append(f"note: {r['note']}")
    return "\n".join(line for line in lines if line)


@command(
    "adopt",
    "write the keys a profile derived into the files, so the folder reads as a knowtk store",
    setup=_adopt_setup,
    table=_adopt_table,
    flags={"skip_issues": "--skip-issues", "dry_run": "--dry-run", "undo": "--undo", "expect": "--expect"},
)
def _adopt(options: argparse.Namespace) -> dict[str, Any]:
    store = store_of(options)
    answer = store.adopt(
        profile=options.profile if not options.undo else None,
        dry_run=options.dry_run,
        skip_issues=options.skip_issues,
        expect=options.expect,
        undo=options.undo,
        actor=options.actor,
        checkpoint=options.checkpoint,
    )
    return answer.to_dict()


def _export_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="the folder to write the tables into (created if missing)")
    p.add_argument("--format", default="parquet", help="the files' format: parquet (the default, and the only one)")


def _export_table(r: dict[str, Any]) -> str:
    return "\n".join(f"{table}: {file}" for table, file in r["written"].items())


@command(
    "export",
    "write the snapshot's tables (records, dates, chains, coverage issues) as Parquet files (docs/export.md)",
    setup=_export_setup,
    table=_export_table,
    flags={"path": "FOLDER", "format": "--format"},
)
def _export(options: argparse.Namespace) -> dict[str, Any]:
    return {"written": store_of(options).export(options.folder, format=options.format)}


def _coverage_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scope", action="append", metavar="FOLDER", help="only the files under this folder (repeat)")


def _coverage_table(r: dict[str, Any]) -> str:
    if not r["issues"]:
        return "coverage complete: every file in scope is a valid record"
    lines = [f"{len(r['issues'])} coverage issue(s): these files are left out of answers, or read in part"]
    lines += [f"  {i['path']}: {i['code']}: {i['message']}" for i in r["issues"]]
    if r.get("hint"):  # a folder written for another tool: which profile reads it
        lines.append(f"hint: {r['hint']}")
    return "\n".join(lines)


@command(
    "coverage",
    "list every coverage issue: the files left out of answers, or read in part, and why",
    setup=_coverage_setup,
    table=_coverage_table,
)
def _coverage(options: argparse.Namespace) -> dict[str, Any]:
    store = store_of(options, one_query=True)
    snap = store.snapshot()
    return coverage(snap, snap.normalize_scope(options.scope or []))
