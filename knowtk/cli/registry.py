"""The command line's subcommands: ``Command``, the table of them, and what every subcommand shares.

A subcommand is registered with ``register`` (or the ``command`` decorator); the tools' subcommands are
made from the tool registry (``knowtk.cli.tools``), the plug-ins' through their ``knowtk_commands`` hook.
``run(args)`` returns a dict (printed as the command's ``table``, or as JSON with ``--json``) or an exit code.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from knowtk.model.shapes import field, shape
from knowtk.query.suggest import edits
from knowtk.scan.changes import StatWalk
from knowtk.store import Store, open_store

__all__ = [
    "COMMANDS",
    "Command",
    "Formatter",
    "Parser",
    "Run",
    "Setup",
    "Table",
    "close_words",
    "command",
    "common_options",
    "register",
    "store_of",
]

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
    serve: bool = False  # a ``knowtk serve`` server may answer it (a read-only query of the server's store)


COMMANDS: dict[str, Command] = {}


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


def common_options(*, top: bool) -> Parser:
    """--store, --state-dir, --profile, --at, --json; at the top with defaults, after a subcommand only when given."""
    p = Parser(add_help=False, formatter_class=Formatter)
    default = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p.add_argument("--store", default=default("."), help="the store folder (default: the current folder)")
    p.add_argument("--state-dir", default=default(None), help="where to keep state.sqlite (default: STORE/.knowtk)")
    p.add_argument(
        "--profile",
        default=default(None),
        help="read Markdown written for another tool: plain, adr, obsidian (default: knowtk.yaml's, else knowtk)",
    )
    p.add_argument(
        "--at",
        default=default(None),
        metavar="WHEN",
        help="ask the store as its files stood at WHEN (a date, or a timestamp with an offset; docs/time.md)",
    )
    p.add_argument(
        "--json", action="store_true", default=default(False), help="print the contract's JSON instead of a table"
    )
    return p


def store_of(options: argparse.Namespace, *, one_query: bool = False) -> Store:
    """The store of the command line; ``one_query``: the process asks one read-only query and exits, so its
    store walks the files (``StatWalk``) rather than watching them: the first query walks either way, and
    the watches (an inotify instance, one per folder: ~20 ms at 100k records) would never be read."""
    store = _present_store(options, one_query=one_query)
    when = getattr(options, "at", None)
    if when is None:
        return store
    return store.at(when, argument="--at")  # the store as its files stood then


def _present_store(options: argparse.Namespace, *, one_query: bool) -> Store:
    held = getattr(options, "held_store", None)  # the store a ``knowtk serve`` server holds open (serve_request)
    if held is not None:
        return held
    if one_query:
        store = open_store(options.store, state_dir=options.state_dir, profile=options.profile, change_source=StatWalk)
        if ONE_QUERY_STORES is not None:
            ONE_QUERY_STORES.append(store)
        return store
    return open_store(options.store, state_dir=options.state_dir, profile=options.profile)


# the stores a one-query command opened, kept only when the command line runs as a program (a list then):
# it closes them and leaves (knowtk.serve.client.main); a caller of ``main(argv)`` keeps no store here
ONE_QUERY_STORES: list[Store] | None = None


class Formatter(argparse.HelpFormatter):
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


_INVALID_CHOICE = re.compile(r"invalid choice: (.+?) \(choose from (.*)\)$")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose refusal of an unknown choice (a mistyped command, ``--mode fuzzy``) names the
    allowed values closest to it: ``did you mean 'grep'?`` for ``grpe``."""

    def error(self, message: str) -> Any:  # argparse's signature: it never returns
        found = _INVALID_CHOICE.search(message)
        if found is not None:
            given = found.group(1).strip("'\"")
            close = close_words(given, [c.strip().strip("'\"") for c in found.group(2).split(",")])
            if close:
                message += "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
        super().error(message)


def close_words(word: str, choices: list[str]) -> list[str]:
    """The choices ``word`` is most likely a typing slip of: the fewest edits (a swap of two neighbouring
    letters is one), at most a third of its length (and at least one), or those it begins."""
    if not word:
        return []
    scored = [(edits(word.lower(), c.lower()), c) for c in choices]
    best = min((d for d, _ in scored), default=None)
    if best is not None and best <= max(1, len(word) // 3):
        return [c for d, c in scored if d == best]
    return [c for c in choices if c.lower().startswith(word.lower())][:3]
