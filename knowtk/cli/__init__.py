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

Every tool of the registry has its subcommand (``knowtk.cli.tools``); the other subcommands of the core
are in ``knowtk.cli.commands``. A new one is one decorated function returning a dict::

    @command("check", "validate every file of the store", table=check_table)
    def check(options: argparse.Namespace) -> dict[str, Any]:
        return check_store(store_of(options))

Plug-ins: the front ends this package never imports (``knowtk.lab``, ``knowtk.mcp``, ``knowtk.serve``) and
installed packages add their own subcommands through the plug-in manager (``knowtk.plugins``), with the hook::

    def knowtk_commands(register) -> None:
        register("eval", "score the store against a gold set", run_eval, setup=add_eval_options)

``register(name, help, run, *, setup=None, table=None, flags=None)`` is ``command`` without the
decorator: ``setup(parser)`` adds the subcommand's options (``--store``, ``--state-dir`` and ``--json``
are there already); ``run(args)`` returns an exit code (it printed its answer) or a dict (printed as a
``table`` or as JSON); a ``KnowtkError`` it raises is printed on stderr with exit code 2 for an
``InvalidArgument`` (``flags`` maps the argument it names to the option the user typed) and 1 otherwise.
A plug-in is imported only when the command line needs it: for its subcommand, or for the whole list
(``--help``, a mistyped command); ``knowtk grep`` loads none, and reads no installed plug-in.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from knowtk import __version__, plugins
from knowtk.cli import (
    commands,  # noqa: F401 - importing it registers the core's other subcommands
    lint,  # noqa: F401 - importing it registers `knowtk lint`
)
from knowtk.cli.registry import COMMANDS, Command, Formatter, Parser, command, common_options, register, store_of
from knowtk.cli.tools import add_tool_commands, command_words
from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.query import TOOLS

__all__ = [
    "COMMANDS",
    "INDEX_RETRY",
    "Command",
    "answer",
    "command",
    "main",
    "message",
    "parsed",
    "parser",
    "register",
    "store_of",
]

_VALUED = ("--store", "--state-dir", "--profile", "--at")  # the options before a subcommand that take a value
_LOADED: set[str] = set()  # plug-ins whose commands are registered
_USAGE: dict[str, argparse.ArgumentParser] = {}  # a subcommand's name -> its parser, for its usage on an error
_CORE = frozenset(COMMANDS)  # the core's own subcommands (knowtk.cli.commands), before any tool or plug-in


def _built_in_words() -> set[str]:
    """The first words of the subcommands the core defines (its own and the built-in tools')."""
    return {name.split(" ")[0] for name in _CORE} | command_words(TOOLS.defaults())


def _load_plugins(*, outside: bool) -> None:
    """Register the plug-ins' subcommands, and (``outside``) the installed plug-ins' tools' subcommands."""
    for name, hook in plugins.hook_results("knowtk_commands", outside=outside):
        if name not in _LOADED:
            hook(register)
            _LOADED.add(name)
    if outside:
        add_tool_commands(dict(TOOLS.items()))


def parser(*, command: str | None = None, with_plugins: bool = True, outside: bool = True) -> argparse.ArgumentParser:
    """The command line: the core's subcommands, one for every tool, and the plug-ins'.

    ``command`` (a first word, as ``_command_word`` reads it): only the subcommands of that word get a
    parser, when there are any (building every subcommand's options costs a new process milliseconds);
    the top-level options, help and errors are the same. Plug-ins are loaded unless the word is the
    core's (``with_plugins`` False: never; ``outside`` False: knowtk's own alone).
    """
    add_tool_commands(TOOLS.defaults())
    if with_plugins and command not in _built_in_words():
        _load_plugins(outside=outside)
    names = [name for name in COMMANDS if name.split(" ")[0] == command] or list(COMMANDS)
    p = Parser(
        prog="knowtk",
        description="Query a Markdown knowledge store.",
        parents=[common_options(top=True)],
        formatter_class=Formatter,
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
                gp = sub.add_parser(group, help=f"{group} {{...}}", formatter_class=Formatter)
                groups[group] = gp.add_subparsers(dest=f"{group}_command", required=True, metavar="COMMAND")
            where = groups[group]
        sp = where.add_parser(
            leaf, help=cmd.help, description=cmd.help, parents=[common_options(top=False)], formatter_class=Formatter
        )
        if cmd.setup is not None:
            cmd.setup(sp)
        sp.set_defaults(handler=cmd)
        _USAGE[name] = sp
    return p


def parsed(p: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed; an argument no option takes is refused with the subcommand's own usage (argparse would
    print the top level's)."""
    options, extra = p.parse_known_args(list(argv))
    if extra:
        handler = getattr(options, "handler", None)
        where = _USAGE.get(handler.name, p) if handler is not None else p
        where.error(f"unrecognized arguments: {' '.join(extra)}")
    return options


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


def _with_plugins(argv: Sequence[str]) -> bool:
    """No plug-in for ``--version`` (start-up time); the word decides otherwise (``parser``)."""
    return not (_command_word(argv) is None and "--version" in argv)


def message(cmd: Command, exc: InvalidArgument) -> str:
    flag, text = cmd.flags.get(exc.argument), str(exc)
    if flag and flag != exc.argument and text.startswith(f"{exc.argument}: "):
        return f"{flag}{text[len(exc.argument) :]}"  # the option the user typed, not the contract's name
    return text


INDEX_RETRY = "knowtk: the keyword index was unavailable; retry"  # on stderr, with exit code 1
_ABSENT = ("missing", "unavailable")  # a lookup's or a record's status when the name or id gives no record


def answer(cmd: Command, options: argparse.Namespace) -> int:
    """Run the command and print its answer; the exit code: 1 when the keyword index was unavailable, or when
    the name or id asked for gives no record (``status`` missing or unavailable); else 0."""
    answer = cmd.run(options)
    if isinstance(answer, int):  # the command printed its own answer
        sys.stdout.flush()
        return answer
    if options.json or cmd.table is None:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print(cmd.table(answer))
        known = answer.get("knownAt")
        if isinstance(known, dict):  # --at: what the answer stands on
            if known.get("source") == "seen":
                print(f"known at {known['instant']}: observation {known['observation'][:12]}, seen {known['seenAt']}")
            else:
                print(f"known at {known['instant']}: commit {known['commit'][:12]} of {known['committedAt']}")
        for note in getattr(options, "notes", None) or ():  # what the command line adds (knowtk.cli.tools)
            print(f"note: {note}")
    sys.stdout.flush()
    index = answer.get("index")
    if isinstance(index, dict) and index.get("state") == "unavailable":
        print(INDEX_RETRY, file=sys.stderr)
        return 1
    return 1 if cmd.tool is not None and answer.get("status") in _ABSENT else 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``knowtk`` command line (its program, ``knowtk.serve.client.main``, first asks a running
    ``knowtk serve`` server for its store, when there is one: docs/server.md)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        options = parsed(parser(command=_parsed_word(argv), with_plugins=_with_plugins(argv)), argv)
    except SystemExit as exc:  # --help and --version (0); bad usage, already explained on stderr (2)
        return exc.code if isinstance(exc.code, int) else 2
    cmd: Command = options.handler
    try:
        return answer(cmd, options)
    except InvalidArgument as exc:
        print(f"knowtk: {message(cmd, exc)}", file=sys.stderr)
        return 2
    except KnowtkError as exc:
        print(f"knowtk: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `knowtk ... | head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout again at exit
        return 0
