"""``knowtk mcp``: the MCP server's subcommand, added to the command line as a plug-in (``knowtk.cli``).

The SDK is imported only when the server starts, so the command line parses without it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from knowtk.workspace import parse_links

__all__ = ["add_mcp_options", "register_commands", "run_mcp"]


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
        "--allow-writes",
        action="store_true",
        help="also offer knowledge_mutation and knowledge_history (the default server is read-only)",
    )


def run_mcp(a: argparse.Namespace) -> int:
    """Serve until the client closes the connection; 1 when the MCP SDK is not installed."""
    links = parse_links(a.link)
    try:
        from knowtk.mcp.server import serve  # the SDK is the optional extra knowtk[mcp]
    except ImportError as exc:
        print(f"knowtk: mcp needs the MCP SDK: pip install 'knowtk[mcp]' ({exc})", file=sys.stderr)
        return 1
    serve(a.store, state_dir=a.state_dir, links=links, complete=a.complete, allow_writes=a.allow_writes)
    return 0


def register_commands(register: Callable[..., Any]) -> None:
    """The command-line plug-in hook (see ``knowtk.cli``): adds ``knowtk mcp``."""
    register(
        "mcp",
        "serve every tool over MCP on stdin/stdout",
        run_mcp,
        setup=add_mcp_options,
        flags={"linked": "--link"},  # a Workspace refusal names `linked`; the user typed --link
    )
