"""Answering a command line for a ``knowtk serve`` server: the read-only query commands (``Command.serve``,
from ``Tool.serve``) run on the store the server holds open, and print what a new process would."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import sys
from collections.abc import Sequence

from knowtk.cli import INDEX_RETRY, answer, message, parser
from knowtk.cli.registry import COMMANDS, Command
from knowtk.errors import InvalidArgument, KnowtkError, RecordNotFound
from knowtk.state import STATE_DIR
from knowtk.store import Store

__all__ = ["serve_request", "serves"]


@functools.lru_cache(maxsize=1)
def _forwarded_parser() -> argparse.ArgumentParser:
    return parser(with_plugins=False)  # the forwarded commands are the built-in tools': no plug-in


def serves(word: str) -> bool:
    """Whether a server answers the commands whose first word is ``word`` (a tool's with ``Tool.serve``)."""
    _forwarded_parser()  # the built-in tools' subcommands made
    return any(cmd.serve for name, cmd in COMMANDS.items() if name.split(" ")[0] == word)


def _forwardable(
    argv: Sequence[str], *, cwd: str, target: tuple[str, str, str | None]
) -> tuple[Command, argparse.Namespace] | None:
    """The parsed command when it is a forwarded one for ``target`` (store, state, profile); else None."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            options = _forwarded_parser().parse_args(list(argv))
    except SystemExit:  # help, version, a usage error: the CLI prints them itself
        return None
    cmd: Command = options.handler
    if not cmd.serve or getattr(options, "link", None):
        return None  # a linked store (knowl --link) is opened per call: not the server's
    root = os.path.abspath(os.path.join(cwd, options.store))
    state = os.path.abspath(os.path.join(cwd, options.state_dir)) if options.state_dir is not None else None
    if (root, state or os.path.join(root, STATE_DIR), options.profile) != target:
        return None
    return cmd, options


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
    cmd, options = found
    options.held_store = store
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = answer(cmd, options)
            if code != 0 and INDEX_RETRY in err.getvalue():
                return None  # the keyword index was unavailable: the CLI retries it itself
        except InvalidArgument as exc:
            print(f"knowtk: {message(cmd, exc)}", file=sys.stderr)
            code = 2
        except RecordNotFound as exc:
            print(f"knowtk: {exc}", file=sys.stderr)
            code = 1
        except KnowtkError:
            return None
    return code, out.getvalue(), err.getvalue()
