"""``knowtk mcp``: every knowtk tool over MCP (stdio), on the official ``mcp`` Python SDK.

    knowtk mcp --store data/fixtures/demo [--state-dir DIR] [--link NAME=PATH ...] [--complete]

The server lists the nine contract tools with the ``inputSchema`` of
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
from knowtk.errors import KnowtkError
from knowtk.mcp.agent import INSTRUCTIONS, TOOL_DESCRIPTIONS, compact, error_payload, output_schema
from knowtk.query import TOOLS
from knowtk.query.schema import input_schema
from knowtk.workspace import Target, open_target

__all__ = ["ERROR_META", "build_server", "refusal", "serve"]

ERROR_META = "knowtk/error"  # a refusal's code, message, argument and allowed values, in the result's _meta

log = logging.getLogger("knowtk.mcp")


def _tools(complete: bool) -> list[types.Tool]:
    return [
        types.Tool(
            name=name,
            description=TOOL_DESCRIPTIONS[name],
            input_schema=input_schema(name),
            output_schema=output_schema(name, complete=complete),
            annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
        )
        for name in TOOLS
    ]


def refusal(exc: BaseException) -> types.CallToolResult:
    """A tool error every client shows: the text names the argument and its allowed values.

    No ``structuredContent``: strict clients (the TypeScript SDK's) check it against the tool's
    ``outputSchema`` even on an error, and an error object is no answer. The same fields, as data,
    ride in ``_meta`` under ``ERROR_META`` for clients that want the code or the argument.
    """
    err = error_payload(exc)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{err['code']}: {err['message']}")],
        _meta={ERROR_META: err},
        is_error=True,
    )


def _as_text(data: Any) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False, separators=(",", ":")))]


def build_server(target: Target, *, complete: bool = False) -> Server[Any]:
    """The MCP server of ``target``; ``complete`` answers with the contract's complete dicts instead of list rows."""
    tools = _tools(complete)
    lock = anyio.Lock()  # one call at a time: the answers a single caller would get

    def answer(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        try:
            data = target.call(name, arguments or {})
        except Exception as exc:  # a refusal, or a failure of this one call: the server keeps answering
            if not isinstance(exc, KnowtkError):
                log.exception("knowtk: %s failed", name)
            return refusal(exc)
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
) -> None:
    """Serve MCP over stdin/stdout until the client closes the connection."""
    server = build_server(open_target(store, state_dir=state_dir, links=links), complete=complete)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
