"""``knowtk mcp``: the MCP server's subcommand, added to the command line as a plug-in (``knowtk.cli``).

The SDK is imported only when the server starts, so the command line parses without it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from knowtk.errors import InvalidArgument
from knowtk.mcp.http import parse_bind, read_token
from knowtk.workspace import parse_links

__all__ = ["add_mcp_options", "knowtk_commands", "run_mcp"]


def add_mcp_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--link",
        action="append",
        metavar="NAME=PATH",
        help="link another store for knowl_query's repos/scope; NAME is its knowtk.yaml name (repeatable)",
    )
    p.add_argument(
        "--complete", action="store_true", help="answer with the contract's complete dicts instead of list rows"
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (PORT alone binds 127.0.0.1)",
    )
    p.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --http: every request must carry 'Authorization: Bearer' this file's token "
        "(else $KNOWTK_MCP_TOKEN; required for a bind other than loopback)",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="with --http: another Host header to accept, e.g. the name a proxy or other machines use (repeatable)",
    )
    p.add_argument(
        "--allow-writes",
        action="store_true",
        help="also offer knowledge_mutation and knowledge_history (the default server is read-only)",
    )


def run_mcp(options: argparse.Namespace) -> int:
    """Serve until the client closes the connection (or, over HTTP, until stopped); 1 without the MCP SDK."""
    if getattr(options, "at", None) is not None:  # the server holds the present store; each call may ask the past
        raise InvalidArgument("--at", "the MCP server answers the store as it is", allowed="each tool's knownAt")
    links = parse_links(options.link)
    bind = None if options.http is None else parse_bind(options.http)
    token = read_token(options.token_file) if bind is not None else None
    if bind is None and (options.token_file or options.allow_host):
        raise InvalidArgument(
            "token_file" if options.token_file else "allow_host", "needs --http", allowed="--http HOST:PORT"
        )
    try:
        from knowtk.mcp.server import serve  # the SDK is the optional extra knowtk[mcp]
    except ImportError as exc:
        print(f"knowtk: mcp needs the MCP SDK: pip install 'knowtk[mcp]' ({exc})", file=sys.stderr)
        return 1
    serve(
        options.store,
        state_dir=options.state_dir,
        links=links,
        complete=options.complete,
        profile=options.profile,
        http=bind,
        token=token,
        allow_hosts=options.allow_host,
        allow_writes=options.allow_writes,
    )
    return 0


def knowtk_commands(register: Callable[..., Any]) -> None:
    """The plug-in hook of the command line (``knowtk.plugins``): adds ``knowtk mcp``."""
    register(
        "mcp",
        "serve every tool over MCP on stdin/stdout, or Streamable HTTP (--http)",
        run_mcp,
        setup=add_mcp_options,
        # a refusal names the argument; the user typed the option
        flags={"linked": "--link", "http": "--http", "token_file": "--token-file", "allow_host": "--allow-host"},
    )
