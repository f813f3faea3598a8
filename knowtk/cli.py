"""``knowtk`` on the command line: it parses, then calls down; a subcommand per tool, options from their specs.

    knowtk --store data/fixtures/demo grep "vector index" --mode any --tag search
    knowtk --store data/fixtures/demo chronicle day 2026-03-29 --week --time-zone Europe/Berlin
    knowtk --store data/fixtures/demo knowl "vector index" --json
    knowtk --store data/fixtures/demo call knowledge_timeline '{"entity": "person-ada-okafor"}'
    knowtk mcp --store data/fixtures/demo

Every tool argument is an option named after it (``timeField`` is ``--time-field``), with the type,
allowed values and help of ``knowtk.query.schema``; required ones are positional. ``--json`` (and
``--store``, ``--state-dir``) go before or after the subcommand. The table is for reading; ``--json``
prints the contract's dict, exactly what ``Store.call`` returns.

Exit codes: 0 answered; 2 bad arguments (the message on stderr names the argument and its allowed
values); 1 any other refusal (store unavailable, state, scan limit, unknown id), and a search whose
index was unavailable (its answer is still printed).

A new subcommand is one decorated function returning a dict::

    @command("check", "validate every file of the store", table=_check_table)
    def _check(a: argparse.Namespace) -> dict[str, Any]:
        return check_store(_store(a))

Plug-ins: the front ends this module never imports (``knowtk.lab``, ``knowtk.mcp``) add their own
subcommands. Each module named in ``DEFAULT_PLUGINS`` defines the hook::

    def register_commands(register) -> None:
        register("eval", "score the store against a gold set", run_eval, setup=add_eval_options)

``register(name, help, run, *, setup=None, table=None, flags=None)`` is ``command`` without the
decorator: ``setup(parser)`` adds the subcommand's options (``--store``, ``--state-dir`` and ``--json``
are there already); ``run(args)`` returns an exit code (it printed its answer) or a dict (printed as a
``table`` or as JSON); a ``KnowtkError`` it raises is printed on stderr with exit code 2 for an
``InvalidArgument`` (``flags`` maps the argument it names to the option the user typed) and 1 otherwise.
A plug-in is imported only when the command line needs it: for its subcommand, or for the whole list
(``--help``, a mistyped command); ``knowtk grep`` loads none.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import json
import os
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from knowtk import __version__
from knowtk.errors import InvalidArgument, KnowtkError, RecordNotFound, SafeguardLoss
from knowtk.model.shapes import field, shape
from knowtk.query import TOOLS, WRITE_TOOL_NAMES
from knowtk.query.args import snake
from knowtk.query.schema import param_schema
from knowtk.scan.changes import StatWalk
from knowtk.state import STATE_DIR
from knowtk.store import Store, open_store

__all__ = [
    "COMMANDS",
    "DEFAULT_PLUGINS",
    "FORWARDED",
    "Command",
    "command",
    "load_plugins",
    "main",
    "parser",
    "register",
    "serve_request",
]

#: Modules that add subcommands through their ``register_commands(register)`` hook, imported when needed.
DEFAULT_PLUGINS = ("knowtk.lab.commands", "knowtk.mcp.commands", "knowtk.serve.commands")
#: The read-only query commands (first words) a ``knowtk serve`` server answers for the CLI (docs/server.md).
FORWARDED = frozenset({"grep", "lookup", "records", "record", "timeline", "chronicle", "knowl"})
_CLIENT = "knowtk.serve.client"  # forwards a command line to a running server; loaded like a plug-in

Table = Callable[[dict[str, Any]], str]
Setup = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], dict[str, Any] | int]


@shape(frozen=True)
class Command:
    name: str  # "grep", or "chronicle day" for a subcommand of a group
    help: str
    run: Run  # a dict is printed; an int is the exit code
    setup: Setup | None = None
    table: Table | None = None  # None: the dict is printed as JSON
    tool: str | None = None  # the contract tool it calls, if it is a tool's subcommand
    flags: dict[str, str] = field(default_factory=dict)  # contract argument -> its option (filled by setup)


COMMANDS: dict[str, Command] = {}
_LOADED: set[str] = set()  # plug-in modules whose commands are registered


def register(
    name: str,
    help: str,
    run: Run,
    *,
    setup: Setup | None = None,
    table: Table | None = None,
    flags: dict[str, str] | None = None,
) -> None:
    """Register a subcommand: ``run(args)`` returns the answer (a dict) or an exit code.

    ``flags`` maps an argument name an ``InvalidArgument`` may carry to the option the user typed.
    """
    COMMANDS[name] = Command(name, help, run, setup, table, None, dict(flags or {}))


def command(
    name: str,
    help: str,
    *,
    setup: Setup | None = None,
    table: Table | None = None,
    flags: dict[str, str] | None = None,
) -> Callable[[Run], Run]:
    """``register`` as a decorator of the ``run`` function."""

    def decorate(run: Run) -> Run:
        register(name, help, run, setup=setup, table=table, flags=flags)
        return run

    return decorate


def load_plugins(modules: Iterable[str] = DEFAULT_PLUGINS) -> None:
    """Import each plug-in module once and let its ``register_commands`` hook register its subcommands."""
    for module in modules:
        if module not in _LOADED:
            importlib.import_module(module).register_commands(register)
            _LOADED.add(module)


# -- the common options ------------------------------------------------------------------------


def _common(*, top: bool) -> argparse.ArgumentParser:
    """--store, --state-dir and --json; at the top with defaults, after a subcommand only when given."""
    p = argparse.ArgumentParser(add_help=False, formatter_class=_Formatter)
    default = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p.add_argument("--store", default=default("."), help="the store folder (default: the current folder)")
    p.add_argument("--state-dir", default=default(None), help="where to keep state.sqlite (default: STORE/.knowtk)")
    p.add_argument(
        "--profile",
        default=default(None),
        help="read Markdown written for another tool: plain, adr, obsidian (default: knowtk.yaml's, else knowtk)",
    )
    p.add_argument(
        "--json", action="store_true", default=default(False), help="print the contract's JSON instead of a table"
    )
    return p


def _store(a: argparse.Namespace, *, one_query: bool = False) -> Store:
    """The store of the command line; ``one_query``: the process asks one read-only query and exits, so its
    store walks the files (``StatWalk``) rather than watching them: the first query walks either way, and
    the watches (an inotify instance, one per folder: ~20 ms at 100k records) would never be read."""
    held = getattr(a, "held_store", None)  # the store a ``knowtk serve`` server holds open (serve_request)
    if held is not None:
        return held
    if one_query:
        store = open_store(a.store, state_dir=a.state_dir, profile=a.profile, change_source=StatWalk)
        if ONE_QUERY_STORES is not None:
            ONE_QUERY_STORES.append(store)
        return store
    return open_store(a.store, state_dir=a.state_dir, profile=a.profile)


# the stores a one-query command opened, kept only when the command line runs as a program (a list then):
# it closes them and leaves (knowtk.serve.client.main); a caller of ``main(argv)`` keeps no store here
ONE_QUERY_STORES: list[Store] | None = None


# -- tool subcommands, made from the Param specs ---------------------------------------------------


def _flag(name: str) -> str:
    return "--" + snake(name).replace("_", "-")


def _add_param(p: argparse.ArgumentParser, tool: str, param: Any, *, positional: bool) -> str:
    schema = param_schema(tool, param)
    helptext = schema["description"]
    if "default" in schema and "default" not in helptext:
        helptext += f" Default: {json.dumps(schema['default'])}."
    kw: dict[str, Any] = {"help": helptext.replace("%", "%%"), "metavar": snake(param.name).upper()}
    items = next((s for s in schema.get("anyOf", []) if s.get("type") == "string"), None)
    if schema.get("type") == "integer":
        kw.update(type=int, metavar="N")
    elif schema.get("type") == "boolean":
        kw.update(action=argparse.BooleanOptionalAction, default=None, metavar=None)
    elif "enum" in schema:
        kw.update(choices=schema["enum"], metavar="{" + ",".join(schema["enum"]) + "}")
    elif items is not None:  # a string or a list of them: repeat the option
        kw.update(action="append")
        if "enum" in items:
            kw.update(choices=items["enum"], metavar="{" + ",".join(items["enum"]) + "}")
    if positional:
        nargs = None if param.required else "?"
        if param.name == "query":  # the words of a query need no quotes: `knowtk grep vector index`
            nargs = "+" if param.required else "*"
        p.add_argument(param.name, nargs=nargs, **kw)
        return param.name
    p.add_argument(_flag(param.name), dest=param.name, **kw)
    return _flag(param.name)


def _tool_command(name: str, tool: str, helptext: str, positional: tuple[str, ...], table: Table | None) -> None:
    flags: dict[str, str] = {}

    def setup(p: argparse.ArgumentParser) -> None:
        params = TOOLS[tool].params  # looked up when its parser is built: the tool's module is imported then
        for pos in positional:  # positionals first, in the order given
            flags[pos] = _add_param(p, tool, next(x for x in params if x.name == pos), positional=True)
        for param in params:
            if param.name not in positional:
                flags[param.name] = _add_param(p, tool, param, positional=False)
        if tool == "knowl_query":
            p.add_argument("--link", action="append", metavar="NAME=PATH", help="a linked store (a workspace)")

    def run(a: argparse.Namespace) -> dict[str, Any]:
        params = TOOLS[tool].params
        args = {x.name: getattr(a, x.name) for x in params if getattr(a, x.name, None) is not None}
        if isinstance(args.get("query"), list):
            args["query"] = " ".join(args["query"])
            if not args["query"]:  # knowl without words: by id, or newest first
                del args["query"]
        if tool == "knowl_query" and getattr(a, "link", None):
            from knowtk.workspace import open_target, parse_links  # a workspace: only for --link

            return open_target(a.store, state_dir=a.state_dir, links=parse_links(a.link), profile=a.profile).call(
                tool, args
            )
        return _store(a, one_query=tool not in WRITE_TOOL_NAMES).call(tool, args)

    COMMANDS[name] = Command(name, f"{helptext} ({tool})", run, setup, table, tool, flags)


# -- tables ------------------------------------------------------------------------------------


def _flat(text: Any, width: int) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _footer(r: dict[str, Any]) -> list[str]:
    lines = []
    cov = r.get("coverage")
    if isinstance(cov, dict) and cov.get("hint"):
        lines.append(f"hint: {cov['hint']}")
    if isinstance(cov, dict) and not cov.get("complete", True):
        issues = cov.get("issues") or []
        lines.append(f"coverage incomplete: {len(issues)} issue(s), e.g.")
        lines += [f"  {i.get('path')}: {i.get('code')}: {i.get('message')}" for i in issues[:5]]
    if r.get("nextOffset") is not None:
        lines.append(f"more: --offset {r['nextOffset']}")
    return lines


def _grep_table(r: dict[str, Any]) -> str:
    if r["index"]["state"] != "ready":
        return "\n".join([f"index unavailable: {r['index'].get('error', 'retry')}", *_footer(r)])
    lines = [f"{r['total']} hit(s); showing {len(r['hits'])} from {r['offset']}  (snapshot {r['snapshot']})"]
    for i, h in enumerate(r["hits"], r["offset"] + 1):
        score = "superseded" if h["score"] is None else f"{h['score']:.3f}"
        where = f"{h['path']}:{h['citation']['lineStart']}-{h['citation']['lineEnd']}"
        lines.append(f"{i:>3}. [{score}] {h['id']}  {h['title'] or ''}  ({where})")
        if h["via"]:
            lines.append(f"       via {h['via']['id']} (revision {h['via']['revision']}): {h['via']['title']}")
        lines.append(textwrap.indent(textwrap.fill(_flat(h["snippet"]["text"], 240), 100), "       "))
    return "\n".join(lines + _footer(r))


def _lookup_table(r: dict[str, Any]) -> str:
    head = f"{r['status']}" + (f" by {r['matchedBy']}" if r["matchedBy"] else "")
    rows = [f"  {c['id']}  {c['title'] or ''}  ({c['path']}, {c['lifecycle']})" for c in r["candidates"]]
    return "\n".join([head, *rows])


def _columns(rows: list[dict[str, Any]], cols: list[tuple[str, Callable[[dict[str, Any]], Any], int]]) -> list[str]:
    cells = [[_flat(get(row), width) for _, get, width in cols] for row in rows]
    widths = [max([len(head), *(len(c[i]) for c in cells)]) for i, (head, _, _) in enumerate(cols)]
    out = ["  ".join(head.ljust(w) for (head, _, _), w in zip(cols, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return out


def _page_head(r: dict[str, Any], noun: str) -> str:
    return f"{r['total']} {noun}(s); showing {len(r['rows'])} from {r['offset']}  (snapshot {r['snapshot']})"


def _records_table(r: dict[str, Any]) -> str:
    cols = [
        ("id", lambda x: x["id"], 40),
        ("type", lambda x: x["type"], 16),
        ("lifecycle", lambda x: x["lifecycle"], 10),
        ("title", lambda x: x["title"], 60),
        ("path", lambda x: x["path"], 60),
    ]
    return "\n".join([_page_head(r, "record"), *_columns(r["rows"], cols), *_footer(r)])


def _dated_table(r: dict[str, Any]) -> str:
    def when(x: dict[str, Any]) -> Any:
        return x.get("localStart") or x.get("value")

    cols = [
        ("when", when, 25),
        ("id", lambda x: x["id"], 40),
        ("type", lambda x: x["type"], 14),
        ("title", lambda x: x["title"], 60),
    ]
    head = _page_head(r, "row") if r.get("offset") is not None else f"{len(r['rows'])} row(s)"
    return "\n".join([head, *_columns(r["rows"], cols), *_footer(r)])


def _record_table(r: dict[str, Any]) -> str:
    rec = r.get("record")
    if rec is None:
        return f"{r['status']}" + (f": {r['reason']}" if r.get("reason") else "")
    c = rec["citation"] or {}
    lines = [
        f"{rec['id']}  {rec['title'] or ''}",
        f"  {rec['kind']}/{rec['type']}, {rec['lifecycle']}, revision {rec['revision']}"
        + (f", superseded by {rec['supersededBy']}" if rec.get("supersededBy") else ""),
        f"  {rec['path']}:{c.get('lineStart')}-{c.get('lineEnd')}  sha256 {rec['sha256']}",
    ]
    for name, d in (rec.get("dates") or {}).items():
        lines.append(f"  {name}: {d['value']}")
    for e in rec.get("evidence") or []:
        state = "verified" if e.get("verified") else f"not verified: {e.get('reason')}"
        lines.append(f"  evidence: {e.get('path')}:{e.get('lineStart')}-{e.get('lineEnd')} ({state})")
    lines += ["", (rec.get("body") or "").strip()]
    return "\n".join(lines)


def _knowl_table(r: dict[str, Any]) -> str:
    results = r["results"]
    groups = results.items() if isinstance(results, dict) else [(None, results)]
    lines = [f"{r.get('total')} item(s)"]
    for repo, items in groups:
        if repo is not None:
            lines.append(f"[{repo}]")
        for it in items:
            score = it.get("score")
            score_text = f"{score:.2f}" if isinstance(score, float | int) else str(score or "-")
            cos = f" cosine {it['cosine']:.2f}" if isinstance(it.get("cosine"), float | int) else ""
            cut = "  (truncated: knowtk knowl --id " + it["id"] + ")" if it.get("truncated") else ""
            lines.append(f"  [{score_text}{cos}] {it['id']}  {it.get('title') or ''}{cut}")
            if it.get("affectedPaths"):
                lines.append(f"      affects: {', '.join(it['affectedPaths'])}")
            lines.append(textwrap.indent(textwrap.fill(_flat(it.get("content"), 240), 100), "      "))
    lines += [f"note: {n}" for n in r.get("notes") or []]
    return "\n".join(lines + _footer(r))


_tool_command("grep", "knowledge_grep", "keyword search", ("query",), _grep_table)
_tool_command("lookup", "knowledge_lookup", "exact id, title or alias", ("query",), _lookup_table)
_tool_command("records", "knowledge_records", "the exhaustive inventory, by id", (), _records_table)
_tool_command("record", "knowledge_record", "one record, whole", ("id",), _record_table)
_tool_command("timeline", "knowledge_timeline", "dated records", (), _dated_table)
_tool_command("chronicle day", "knowledge_chronicle_day", "one day or its week", ("date",), _dated_table)
_tool_command("chronicle since", "knowledge_chronicle_since", "what occurred in a range", ("since",), _dated_table)
_tool_command(
    "chronicle last-seen", "knowledge_chronicle_last_seen", "latest context of an entity", ("entity",), _dated_table
)
_tool_command("knowl", "knowl_query", "project knowledge, as agents query it", ("query",), _knowl_table)


# -- other subcommands ---------------------------------------------------------------------------


def _call_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("tool", help="a contract tool name", choices=sorted([*TOOLS, *WRITE_TOOL_NAMES]))
    p.add_argument("args", nargs="?", default="{}", help="a JSON object of camelCase arguments")


@command("call", "any tool by its contract name, with JSON arguments", setup=_call_setup)
def _call(a: argparse.Namespace) -> dict[str, Any]:
    try:
        args = json.loads(a.args)
    except json.JSONDecodeError as exc:
        raise InvalidArgument("args", f"is not JSON: {exc}") from None
    return _store(a).call(a.tool, args)


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
def _check(a: argparse.Namespace) -> int:
    report = _store(a).check()
    print(json.dumps(report, indent=2, ensure_ascii=False) if a.json else _check_table(report))
    return 1 if report["unrepaired"] else 0  # found and repaired is a healthy state: the report says what


@command("state accept-loss", "accept safeguards knowtk reported lost, so that queries answer again")
def _accept_loss(a: argparse.Namespace) -> dict[str, Any]:
    refused = None
    try:
        store = open_store(a.store, state_dir=a.state_dir, profile=a.profile)
    except SafeguardLoss as exc:  # only a loss: a busy or foreign state is reported as what it is, never accepted
        refused = str(exc)
        store = open_store(a.store, state_dir=a.state_dir, accept_safeguard_loss=True, profile=a.profile)
    answer = store.accept_safeguard_loss()
    if answer.get("accepted") is None and refused is not None:
        answer["accepted"] = refused
    return answer


@command("state rebind", "bind the state to this store folder (after the store was moved)")
def _rebind(a: argparse.Namespace) -> dict[str, Any]:
    store = open_store(a.store, state_dir=a.state_dir, rebind_state=True, profile=a.profile)
    return {"store": store.root, "state": store.state_path}


# -- changing the store (knowledge_mutation, docs/mutations.md) ----------------------------------

_WRITE_FLAGS = {"expectedSha256": "--expect", "record": "--set", "by": "--by", "reason": "--reason", "path": "--path"}


def _write_setup(*, expect: bool, fields: bool, reason: bool, by: bool = False) -> Setup:
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


def _fields(a: argparse.Namespace) -> dict[str, Any] | None:
    if not hasattr(a, "set"):
        return None
    record: dict[str, Any] = {}
    if a.record:
        try:
            record = json.loads(a.record)
        except json.JSONDecodeError as exc:
            raise InvalidArgument("record", f"is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise InvalidArgument("record", "must be a JSON object")
    from knowtk.model.records import FileProblem, parse_yaml  # YAML values: only for --set

    for item in a.set:
        key, eq, value = item.partition("=")
        parsed = parse_yaml(value, what=f"--set {key}")
        if not eq or not key or isinstance(parsed, FileProblem):
            raise InvalidArgument("record", f"--set {item!r}: give KEY=VALUE with a YAML value")
        record[key] = parsed
    for key in a.unset:
        record[key] = None
    if a.body_file:
        with sys.stdin if a.body_file == "-" else open(a.body_file, encoding="utf-8") as f:
            record["body"] = f.read()
    return record or None


def _mutation(operation: str) -> Run:
    def run(a: argparse.Namespace) -> dict[str, Any]:
        args = {
            "operation": operation,
            "id": a.id,
            "expectedSha256": getattr(a, "expect", None),
            "record": _fields(a),
            "by": getattr(a, "by", None),
            "reason": getattr(a, "reason", None),
            "path": getattr(a, "path", None),
            "actor": a.actor,
            "restate": getattr(a, "restate", None) or None,
        }
        return _store(a).call("knowledge_mutation", {k: v for k, v in args.items() if v is not None})

    return run


def _receipt_table(r: dict[str, Any]) -> str:
    rc = r["receipt"]
    if not r.get("written", True):
        return "nothing to change: the file already holds these values (nothing written)"
    lines = [f"receipt {rc['id']}: {rc['operation']} at {rc['at']} by {rc['actor']}"]
    if rc.get("reason"):
        lines.append(f"  reason: {rc['reason']}")
    for x in rc["records"]:
        lines.append(f"  {x['id']}  {x['path']}  revision {x['revisionBefore']} -> {x['revisionAfter']}")
        lines.append(f"    sha256 {x['sha256Before']} -> {x['sha256After']}")
    lines.append("  indexed: " + ("yes" if rc["indexed"] else "pending until the next query"))
    return "\n".join(lines)


for _op, _help, _setup in (
    ("create", "create a record", _write_setup(expect=False, fields=True, reason=False)),
    (
        "update",
        "change fields of a record, keeping every other byte",
        _write_setup(expect=True, fields=True, reason=False),
    ),
    ("supersede", "mark a record superseded by another", _write_setup(expect=True, fields=True, reason=False, by=True)),
    ("withdraw", "withdraw a record (the file stays)", _write_setup(expect=True, fields=False, reason=True)),
    ("reinstate", "lift a withdrawal or supersession", _write_setup(expect=True, fields=False, reason=True)),
):
    register(
        _op, f"{_help} (knowledge_mutation)", _mutation(_op), setup=_setup, table=_receipt_table, flags=_WRITE_FLAGS
    )


def _history_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?", help="one record's receipts (default: every receipt)")
    p.add_argument("--since", help="receipts at or after (YYYY-MM-DD or a timestamp)")
    p.add_argument("--until", help="receipts at or before")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="receipts per page. Default: 20.")
    p.add_argument("--offset", type=int, default=0, metavar="N", help="receipts to skip. Default: 0.")


def _history_table(r: dict[str, Any]) -> str:
    lines = [f"{r['total']} receipt(s); showing {len(r['receipts'])} from {r['offset']}, newest first"]
    for rc in r["receipts"]:
        ids = ", ".join(x["id"] for x in rc["records"])
        state = "indexed" if rc["indexed"] else "pending"
        lines.append(f"  {rc['at']}  {rc['operation']:<9} {ids}  by {rc['actor']}  ({rc['id']}, {state})")
        if rc.get("reason"):
            lines.append(f"      reason: {rc['reason']}")
    if r.get("nextOffset") is not None:
        lines.append(f"more: --offset {r['nextOffset']}")
    return "\n".join(lines)


@command(
    "history",
    "receipts of the changes made through knowtk, newest first (knowledge_history)",
    setup=_history_setup,
    table=_history_table,
)
def _history(a: argparse.Namespace) -> dict[str, Any]:
    args = {"id": a.id, "since": a.since, "until": a.until, "limit": a.limit, "offset": a.offset}
    return _store(a).call("knowledge_history", {k: v for k, v in args.items() if v is not None})


def _diff_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="the record's id")
    p.add_argument("a", nargs="?", help="a sha256 (or prefix) or receipt id (default: the oldest kept version)")
    p.add_argument("b", nargs="?", help="a sha256 (or prefix) or receipt id (default: the file now)")


@command("diff", "what changed in a record between two kept versions", setup=_diff_setup)
def _diff(a: argparse.Namespace) -> int:
    text = _store(a).diff(a.id, a.a, a.b)
    print(json.dumps({"id": a.id, "diff": text}) if a.json else (text or "no difference"))
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
        lines.append(_receipt_table(r))
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
def _adopt(a: argparse.Namespace) -> dict[str, Any]:
    store = _store(a)
    answer = store.adopt(
        profile=a.profile if not a.undo else None,
        dry_run=a.dry_run,
        skip_issues=a.skip_issues,
        expect=a.expect,
        undo=a.undo,
        actor=a.actor,
        checkpoint=a.checkpoint,
    )
    return answer.to_dict()


#: The first words of the subcommands defined here: for these no plug-in is loaded.
BUILT_IN = frozenset(name.split(" ")[0] for name in COMMANDS)
_VALUED = ("--store", "--state-dir", "--profile")  # the options before a subcommand that take a value


# -- parsing and running ------------------------------------------------------------------------


def tool_commands() -> None:
    """A subcommand for every registered tool that has none yet (``knowtk.query.register_tool``): its answer as JSON."""
    covered = {cmd.tool for cmd in COMMANDS.values()}
    for name in TOOLS:  # by name: a built-in tool (covered) is not imported here
        if name not in covered:
            tool = TOOLS[name]
            _tool_command(tool.command_name, name, tool.summary or name, tool.positional, None)


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, the terminal's width found without ``shutil``: argparse makes a formatter at
    every ``add_argument`` (to check a metavar), and its own asks ``shutil.get_terminal_size``, an import (with
    bz2 and lzma) every command paid. The width is found as ``shutil`` finds it: ``COLUMNS``, else the
    terminal of standard output, else 80."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _terminal_width() - 2 if width is None else width)


def _terminal_width() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns if columns > 0 else 80


def parser(plugins: Iterable[str] = DEFAULT_PLUGINS, *, command: str | None = None) -> argparse.ArgumentParser:
    """The command line: the subcommands defined here, one for every registered tool, and those of ``plugins``.

    ``command`` (a first word, as ``_command_word`` reads it): only the subcommands of that word get a
    parser, when there are any (issue 20: building every subcommand's options cost a new process
    milliseconds); the top-level options, help and errors are the same.
    """
    tool_commands()
    load_plugins(plugins)
    names = [name for name in COMMANDS if name.split(" ")[0] == command] or list(COMMANDS)
    p = argparse.ArgumentParser(
        prog="knowtk",
        description="Query a Markdown knowledge store.",
        parents=[_common(top=True)],
        formatter_class=_Formatter,
    )
    p.add_argument("--version", action="version", version=f"knowtk {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, Any] = {}
    for name in names:
        cmd = COMMANDS[name]
        where, leaf = sub, name
        if " " in name:
            group, leaf = name.split(" ", 1)
            if group not in groups:
                gp = sub.add_parser(group, help=f"{group} {{...}}", formatter_class=_Formatter)
                groups[group] = gp.add_subparsers(dest=f"{group}_command", required=True, metavar="COMMAND")
            where = groups[group]
        sp = where.add_parser(
            leaf, help=cmd.help, description=cmd.help, parents=[_common(top=False)], formatter_class=_Formatter
        )
        if cmd.setup is not None:
            cmd.setup(sp)
        sp.set_defaults(handler=cmd)
    return p


def _command_at(argv: Sequence[str]) -> int | None:
    """Where the subcommand's first word is, as argparse will read it (an option before it may take a value)."""
    takes_value = False
    for i, arg in enumerate(argv):
        if takes_value:
            takes_value = False
        elif arg.startswith("-"):  # argparse also takes an unambiguous prefix: --sto
            takes_value = "=" not in arg and len(arg) > 2 and any(o.startswith(arg) for o in _VALUED)
        else:
            return i
    return None


def _command_word(argv: Sequence[str]) -> str | None:
    """The subcommand's first word as argparse will read it."""
    at = _command_at(argv)
    return None if at is None else argv[at]


def _parsed_word(argv: Sequence[str]) -> str | None:
    """The one subcommand word whose parser the command line needs; None: every subcommand's (the top-level
    help lists them all, so ``-h``/``--help`` before the word needs the whole parser)."""
    at = _command_at(argv)
    if at is None:
        return None
    for arg in argv[:at]:
        if arg == "-h" or (arg.startswith("--h") and "--help".startswith(arg.split("=")[0])):
            return None
    return argv[at]


def _plugins_for(argv: Sequence[str]) -> tuple[str, ...]:
    """No plug-in for a subcommand defined here or ``--version`` (start-up time); all to find or list one."""
    word = _command_word(argv)
    if word in BUILT_IN or (word is None and "--version" in argv):
        return ()
    return DEFAULT_PLUGINS


def _message(cmd: Command, exc: InvalidArgument) -> str:
    flag, text = cmd.flags.get(exc.argument), str(exc)
    if flag and flag != exc.argument and text.startswith(f"{exc.argument}: "):
        return f"{flag}{text[len(exc.argument) :]}"  # the option the user typed, not the contract's name
    return text


def _answer(cmd: Command, a: argparse.Namespace) -> int:
    """Run the command and print its answer; the exit code (1 when the keyword index was unavailable)."""
    answer = cmd.run(a)
    if isinstance(answer, int):  # the command printed its own answer
        sys.stdout.flush()
        return answer
    if a.json or cmd.table is None:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print(cmd.table(answer))
    sys.stdout.flush()
    index = answer.get("index")
    if isinstance(index, dict) and index.get("state") == "unavailable":
        print("knowtk: the keyword index was unavailable; retry", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``knowtk`` command. Run as a program (no ``argv``), a read-only query goes to a running
    ``knowtk serve`` server for its store first, when there is one (docs/server.md)."""
    if argv is None:
        argv = sys.argv[1:]
        forwarded = importlib.import_module(_CLIENT).forward(argv)
        if forwarded is not None:
            return int(forwarded)
    argv = list(argv)
    try:
        a = parser(_plugins_for(argv), command=_parsed_word(argv)).parse_args(argv)
    except SystemExit as exc:  # --help and --version (0); bad usage, already explained on stderr (2)
        return exc.code if isinstance(exc.code, int) else 2
    cmd: Command = a.handler
    try:
        return _answer(cmd, a)
    except InvalidArgument as exc:
        print(f"knowtk: {_message(cmd, exc)}", file=sys.stderr)
        return 2
    except KnowtkError as exc:
        print(f"knowtk: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `knowtk ... | head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout again at exit
        return 0


# -- answering for a server (knowtk serve) -----------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _forwarded_parser() -> argparse.ArgumentParser:
    return parser(())  # the forwarded commands are all defined here: no plug-in


def _forwardable(
    argv: Sequence[str], *, cwd: str, target: tuple[str, str, str | None]
) -> tuple[Command, argparse.Namespace] | None:
    """The parsed command when it is a forwarded one for ``target`` (store, state, profile); else None."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            a = _forwarded_parser().parse_args(list(argv))
    except SystemExit:  # help, version, a usage error: the CLI prints them itself
        return None
    cmd: Command = a.handler
    if cmd.name.split(" ")[0] not in FORWARDED or getattr(a, "link", None):
        return None  # a linked store (knowl --link) is opened per call: not the server's
    root = os.path.abspath(os.path.join(cwd, a.store))
    state = os.path.abspath(os.path.join(cwd, a.state_dir)) if a.state_dir is not None else None
    if (root, state or os.path.join(root, STATE_DIR), a.profile) != target:
        return None
    return cmd, a


def serve_request(
    argv: Sequence[str], *, cwd: str, store: Store, target: tuple[str, str, str | None]
) -> tuple[int, str, str] | None:
    """What ``knowtk ARGV`` run in ``cwd`` prints (exit code, stdout, stderr), answered by ``store``.

    For ``knowtk serve``: ``store`` is the one it holds open for ``target`` (the absolute store and
    state folders and the profile it was opened with). None when the CLI must run the command itself:
    not a forwarded query, another store, a usage error, or a refusal other than a bad argument or an
    unknown id (an unavailable store or state, an index to retry: what a new process would meet is
    its own to report).
    """
    found = _forwardable(argv, cwd=cwd, target=target)
    if found is None:
        return None
    cmd, a = found
    a.held_store = store
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if _answer(cmd, a) != 0:
                return None  # the keyword index was unavailable: the CLI retries it itself
            code = 0
        except InvalidArgument as exc:
            print(f"knowtk: {_message(cmd, exc)}", file=sys.stderr)
            code = 2
        except RecordNotFound as exc:
            print(f"knowtk: {exc}", file=sys.stderr)
            code = 1
        except KnowtkError:
            return None
    return code, out.getvalue(), err.getvalue()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
