"""``knowtk mcp``: every knowtk tool over MCP (stdio), on the official ``mcp`` Python SDK.

    knowtk mcp --store data/fixtures/demo [--state-dir DIR] [--link NAME=PATH ...] [--complete] [--allow-writes]

The server lists the nine contract tools (and, with ``--allow-writes``, knowledge_mutation and
knowledge_history) with the ``inputSchema`` of
``knowtk.query.schema`` and the descriptions and output schemas of
``knowtk.mcp.agent``. A call runs ``Store.call`` (``Workspace.call`` for
``knowl_query`` when stores are linked), which scans the store first, so edits
made while the server runs are seen by the next call. Every refusal, and any
unexpected failure of one call, comes back as a tool error (``isError``) naming
the argument and its allowed values; the server itself keeps answering.
Calls run one at a time in a worker thread, so the connection stays responsive.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from knowtk import __version__
from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.mcp.agent import INSTRUCTIONS, TOOL_DESCRIPTIONS, compact, error_payload, output_schema
from knowtk.query import TOOLS
from knowtk.query.schema import input_schema
from knowtk.workspace import Target, open_target

__all__ = ["build_server", "serve"]

log = logging.getLogger("knowtk.mcp")


# the write tools, offered only with --allow-writes; their hints as MCP defines them. A mutation is
# destructive (it may withdraw or supersede a record) and idempotent: every change is conditioned on the
# hash the caller read (or on the id not existing), so the same call again changes nothing more.
WRITE_HINTS = {
    "knowledge_mutation": types.ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
    "knowledge_history": types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
}


def _tools(complete: bool, allow_writes: bool = False) -> list[types.Tool]:
    writes = [
        types.Tool(
            name=name,
            description=TOOL_DESCRIPTIONS[name],
            input_schema=input_schema(name),
            output_schema=output_schema(name),
            annotations=hints,
        )
        for name, hints in WRITE_HINTS.items()
    ]
    return (writes if allow_writes else []) + [
        types.Tool(
            name=name,
            description=TOOL_DESCRIPTIONS[name],
            input_schema=input_schema(name),
            output_schema=output_schema(name, complete=complete),
            annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
        )
        for name in TOOLS
    ]


def _as_text(data: Any) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False, separators=(",", ":")))]


def build_server(target: Target, *, complete: bool = False, allow_writes: bool = False) -> Server[Any]:
    """The MCP server of ``target``; ``complete`` answers with the contract's complete dicts instead of list rows;
    ``allow_writes`` offers knowledge_mutation and knowledge_history (the default server is read-only)."""
    tools = _tools(complete, allow_writes)
    names = {t.name for t in tools}
    lock = anyio.Lock()  # one call at a time: the answers a single caller would get

    def answer(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        try:
            if name not in names:  # a write tool the server does not offer is refused, never run
                raise InvalidArgument("tool", f"{name!r} is not offered by this server", allowed=sorted(names))
            data = target.call(name, arguments or {})
        except Exception as exc:  # a refusal, or a failure of this one call: the server keeps answering
            if not isinstance(exc, KnowtkError):
                log.exception("knowtk: %s failed", name)
            err = error_payload(exc)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"{err['code']}: {err['message']}")],
                structured_content={"error": err},
                is_error=True,
            )
        out = data if complete else compact(name, data)
        return types.CallToolResult(content=_as_text(out), structured_content=out)

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        async with lock:
            return await anyio.to_thread.run_sync(answer, params.name, params.arguments)

    return Server(
        "knowtk",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def serve(
    store: str | os.PathLike[str],
    *,
    state_dir: str | os.PathLike[str] | None = None,
    links: Mapping[str, str | os.PathLike[str]] | None = None,
    complete: bool = False,
    allow_writes: bool = False,
) -> None:
    """Serve MCP over stdin/stdout until the client closes the connection."""
    target = open_target(store, state_dir=state_dir, links=links)
    server = build_server(target, complete=complete, allow_writes=allow_writes)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
