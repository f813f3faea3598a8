"""knowledge_mutation: create, update, supersede, withdraw or reinstate a record, safely (docs/mutations.md).

The change itself is ``knowtk.write.mutation.mutate``; this module declares the tool around it, and the
five command-line commands (``knowtk create``, ``update``, ...) that make its arguments from options.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from knowtk.errors import InvalidArgument
from knowtk.frames import RECEIPT, receipt_rows
from knowtk.model.records import FileProblem, parse_yaml
from knowtk.query.args import Param, boolean, choice, mapping, sha256, text
from knowtk.query.registry import Tool, ToolCommand
from knowtk.query.views import NSTR
from knowtk.write import OPERATIONS

__all__ = ["PARAMS", "TOOL"]

ORDER = 200
PARAMS = (
    Param(
        "operation",
        choice(*OPERATIONS),
        required=True,
        doc="create, update, supersede, withdraw or reinstate (reinstate is the only way to undo a withdrawal).",
    ),
    Param("id", text(128), required=True, doc="The record's id (for create: the new id)."),
    Param(
        "expectedSha256",
        sha256,
        doc=(
            "The sha256 you read (knowledge_record's record.sha256, a row's sha256). Required for every operation "
            "on an existing record; a file that changed since is refused (publication_conflict), never merged."
        ),
    ),
    Param(
        "record",
        mapping,
        doc=(
            "create/update: the fields, and body for the Markdown body. In update a key given replaces it, null "
            "removes it, every other key is kept byte for byte. supersede: the fields of the replacing record to "
            "create."
        ),
    ),
    Param("by", text(128), doc="supersede: the replacing id (an active record, or the one created from record)."),
    Param("reason", text(2000), doc="Required for withdraw and reinstate; kept in the receipt."),
    Param("path", text(1024), doc="create: where in the store (a relative .md path). Default: the type's folder."),
    Param("actor", text(200), doc="Who makes the change, as the receipt records it. Default: the server's OS user."),
    Param("restate", boolean, False, doc="update: raise revision by one (a restatement)."),
    Param(
        "checkpoint", boolean, False, doc="Commit the written files to Git (the store must be inside a Git work tree)."
    ),
)


def table(answer: dict[str, Any]) -> str:
    """A receipt: what was written, the revisions and hashes before and after, and whether it is indexed."""
    rc = answer["receipt"]
    if not answer.get("written", True):
        return "nothing to change: the file already holds these values (nothing written)"
    lines = [f"receipt {rc['id']}: {rc['operation']} at {rc['at']} by {rc['actor']}"]
    if rc.get("reason"):
        lines.append(f"  reason: {rc['reason']}")
    for x in rc["records"]:
        lines.append(f"  {x['id']}  {x['path']}  revision {x['revisionBefore']} -> {x['revisionAfter']}")
        lines.append(f"    sha256 {x['sha256Before']} -> {x['sha256After']}")
    lines.append("  indexed: " + ("yes" if rc["indexed"] else "pending until the next query"))
    return "\n".join(lines)


def _setup(*, expect: bool, fields: bool, reason: bool, by: bool = False) -> Any:
    def setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("id", help="the record's id")
        if by:
            p.add_argument("--by", required=True, help="the replacing record's id (with --set/--record: created)")
        if expect:
            p.add_argument("--expect", required=True, metavar="SHA256", help="the sha256 you read (knowtk record ID)")
        if reason:
            p.add_argument("--reason", required=True, help="why (kept in the receipt)")
        if fields:
            p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a field (YAML value)")
            p.add_argument("--unset", action="append", default=[], metavar="KEY", help="remove a field")
            p.add_argument("--record", metavar="JSON", help="the fields as a JSON object")
            p.add_argument("--body-file", metavar="FILE", help="the new body, read from FILE ('-': stdin)")
            p.add_argument("--path", help="where to create the file (default: the type's folder)")
            p.add_argument("--restate", action="store_true", help="raise the revision (a restatement)")
        p.add_argument("--actor", help="who makes the change (default: the OS user)")

    return setup


def _fields(options: argparse.Namespace) -> dict[str, Any] | None:
    """The ``record`` argument from --record, --set, --unset and --body-file."""
    if not hasattr(options, "set"):
        return None
    record: dict[str, Any] = {}
    if options.record:
        try:
            record = json.loads(options.record)
        except json.JSONDecodeError as exc:
            raise InvalidArgument("record", f"is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise InvalidArgument("record", "must be a JSON object")
    for item in options.set:
        name, eq, value = item.partition("=")
        parsed = parse_yaml(value, what=f"--set {name}")
        if not eq or not name or isinstance(parsed, FileProblem):
            raise InvalidArgument("record", f"--set {item!r}: give KEY=VALUE with a YAML value")
        record[name] = parsed
    for name in options.unset:
        record[name] = None
    if options.body_file:
        with sys.stdin if options.body_file == "-" else open(options.body_file, encoding="utf-8") as f:
            record["body"] = f.read()
    return record or None


def _arguments(operation: str) -> Any:
    def arguments(options: argparse.Namespace) -> dict[str, Any]:
        given = {
            "operation": operation,
            "id": options.id,
            "expectedSha256": getattr(options, "expect", None),
            "record": _fields(options),
            "by": getattr(options, "by", None),
            "reason": getattr(options, "reason", None),
            "path": getattr(options, "path", None),
            "actor": options.actor,
            "restate": getattr(options, "restate", None) or None,
        }
        return {k: v for k, v in given.items() if v is not None}

    return arguments


_FLAGS = {"expectedSha256": "--expect", "record": "--set", "by": "--by", "reason": "--reason", "path": "--path"}
COMMANDS = tuple(
    ToolCommand(operation, f"{help} (knowledge_mutation)", setup, _arguments(operation), _FLAGS)
    for operation, help, setup in (
        ("create", "create a record", _setup(expect=False, fields=True, reason=False)),
        (
            "update",
            "change fields of a record, keeping every other byte",
            _setup(expect=True, fields=True, reason=False),
        ),
        ("supersede", "mark a record superseded by another", _setup(expect=True, fields=True, reason=False, by=True)),
        ("withdraw", "withdraw a record (the file stays)", _setup(expect=True, fields=False, reason=True)),
        ("reinstate", "lift a withdrawal or supersession", _setup(expect=True, fields=False, reason=True)),
    )
)

_RECEIPT = {"type": "object", "properties": {"id": NSTR, "operation": {"type": "string"}, "records": {"type": "array"}}}

TOOL = Tool(
    "knowledge_mutation",
    PARAMS,
    "knowtk.query.mutations:run_mutation",
    summary="change the store: create, update, supersede, withdraw or reinstate a record",
    description=(
        "Change the store (offered only when the server runs with --allow-writes): create, update (only the fields "
        "you name; null removes one; every other byte kept), supersede (old gets status superseded and "
        "superseded_by; the new record is an active one or created from record), withdraw (the file stays), "
        "reinstate (the only way to lift a withdrawal or supersession; needs a reason). Read the record first and "
        "pass its sha256 as expectedSha256: a file that changed since is refused with publication_conflict naming "
        "both hashes (read again, then decide); nothing is merged. A change that would make a record invalid is "
        "refused naming the field. The answer is a receipt (id, records with sha256Before/After); indexed false "
        "means the search index catches up at the next query, not a failed save."
    ),
    # no required keys: a refusal's structured {"error": ...} validates too (strict clients check it even then)
    output={"type": "object", "properties": {"receipt": _RECEIPT, "written": {"type": "boolean"}}, "required": []},
    compact=lambda answer: answer,
    columns=tuple(RECEIPT),
    rows=lambda answer: receipt_rows([answer["receipt"]]),
    table=table,
    commands=COMMANDS,
    method="",  # Store.create, update, supersede, withdraw and reinstate call it
    writes=True,
    destructive=True,
)
