"""The tools' subcommands, made from the tool registry: an option per argument, with its type, allowed values
and help from the tool's ``Param``s (``timeField`` is ``--time-field``); the positional ones first.

A tool that makes its own commands (``Tool.commands``: ``knowtk create``, ``update``, ...) has those instead.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from knowtk.cli.registry import COMMANDS, Command, store_of
from knowtk.query import TOOLS, Tool, ToolCommand
from knowtk.query.args import snake
from knowtk.query.schema import param_schema

__all__ = ["add_tool_commands", "command_words"]


def _flag(name: str) -> str:
    return "--" + snake(name).replace("_", "-")


def _add_param(p: argparse.ArgumentParser, tool: str, param: Any, *, positional: bool) -> str:
    schema = param_schema(tool, param)
    helptext = schema.get("description", "")
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
    p.add_argument(_flag(param.name), *_also(tool, param, schema), dest=param.name, **kw)
    return _flag(param.name)


def _also(tool: str, param: Any, schema: dict[str, Any]) -> tuple[str, ...]:
    """Other spellings of an option: a free-text ``kind`` of a tool without ``type`` is the record's exact type
    (the dated tools': ``timeline --type decision``), so ``--type`` names it too."""
    names = {p.name for p in TOOLS[tool].params} if tool in TOOLS else set()
    if param.name == "kind" and "type" not in names and "enum" not in schema and "anyOf" not in schema:
        return ("--type",)
    return ()


def _made_command(tool: Tool) -> Command:
    """The subcommand made from a tool's arguments."""
    flags: dict[str, str] = {}

    def setup(p: argparse.ArgumentParser) -> None:
        by_name = {x.name: x for x in tool.params}
        for pos in tool.positional:  # positionals first, in the order given
            flags[pos] = _add_param(p, tool.name, by_name[pos], positional=True)
        for param in tool.params:
            if param.name not in tool.positional:
                flags[param.name] = _add_param(p, tool.name, param, positional=False)
        if tool.workspace:
            p.add_argument("--link", action="append", metavar="NAME=PATH", help="a linked store (a workspace)")

    def run(options: argparse.Namespace) -> dict[str, Any]:
        args = {x.name: getattr(options, x.name) for x in tool.params if getattr(options, x.name, None) is not None}
        if isinstance(args.get("query"), list):
            args["query"] = " ".join(args["query"])
            if not args["query"]:  # knowl without words: by id, or newest first
                del args["query"]
        if tool.workspace and getattr(options, "link", None):
            from knowtk.workspace import open_target, parse_links  # a workspace: only for --link

            target = open_target(
                options.store, state_dir=options.state_dir, links=parse_links(options.link), profile=options.profile
            )
            return target.call(tool.name, args)
        answer = store_of(options, one_query=not tool.writes).call(tool.name, args)
        options.notes = _cut_page(answer, args.get("limit"))
        return answer

    helptext = f"{tool.summary or tool.name} ({tool.name})"
    return Command(tool.command_name, helptext, run, setup, tool.table, tool.name, flags, tool.serve)


def _cut_page(answer: dict[str, Any], limit: Any) -> list[str]:
    """A note when a page holds fewer rows than asked and more follow: the response budget ended it."""
    rows, after = answer.get("rows"), answer.get("nextOffset")
    if not isinstance(rows, list) or not isinstance(limit, int) or after is None or len(rows) >= limit:
        return []
    return [
        f"{len(rows)} of the {limit} rows asked fit the page's 24 KiB response budget; "
        f"the rest follow with --offset {after}"
    ]


def _hand_made(tool: Tool, made: ToolCommand) -> Command:
    def run(options: argparse.Namespace) -> dict[str, Any]:
        return store_of(options, one_query=not tool.writes).call(tool.name, made.arguments(options))

    return Command(made.name, made.help, run, made.setup, tool.table, tool.name, dict(made.flags), False)


def add_tool_commands(tools: dict[str, Tool]) -> None:
    """A subcommand (or the hand-made ones) for each of ``tools`` that has none yet."""
    covered = {cmd.tool for cmd in COMMANDS.values()}
    for tool in tools.values():
        if tool.name in covered:
            continue
        for cmd in (
            [_hand_made(tool, made) for made in tool.commands] if tool.commands is not None else [_made_command(tool)]
        ):
            COMMANDS.setdefault(cmd.name, cmd)


def command_words(tools: dict[str, Tool]) -> set[str]:
    """The first words of the subcommands ``tools`` make (no tool's module beyond the declarations is imported)."""
    words = set()
    for tool in tools.values():
        names = [made.name for made in tool.commands] if tool.commands is not None else [tool.command_name]
        words |= {name.split(" ")[0] for name in names}
    return words
