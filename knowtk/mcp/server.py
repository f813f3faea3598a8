"""``knowtk mcp``: every knowtk tool over MCP (stdio, or HTTP with ``knowtk.mcp.http``), on the official SDK.

    knowtk mcp --store data/fixtures/demo [--state-dir DIR] [--profile NAME] [--link NAME=PATH ...]
               [--complete] [--http [HOST:]PORT] [--allow-writes]

The server lists the contract's read tools and knowledge_history, the change log (and, with
``--allow-writes``, knowledge_mutation) with the ``inputSchema`` of
``knowtk.query.schema`` and the descriptions and output schemas of
``knowtk.mcp.agent``. A call runs ``Store.call`` (``Workspace.call`` for
``knowl_query`` when stores are linked), which scans the store first, so edits
made while the server runs are seen by the next call. Every refusal, and any
unexpected failure of one call, comes back as a tool error (``isError``) naming
the argument and its allowed values; the server itself keeps answering.
Resources: the agents guide (``knowtk://docs/agents``) and each record (``knowtk://record/{id}``).
Calls run at once in worker threads (at most ``CONCURRENT_CALLS``); a ``Store`` answers each as a single
caller would, and the connection stays responsive.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from knowtk import __version__
from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.mcp.agent import INSTRUCTIONS, compact, error_payload, output_schema, tool_description
from knowtk.mcp.guide import GUIDE_URI, agents_guide
from knowtk.mcp.http import Bind, refuse_open_bind, serve_http
from knowtk.query import TOOLS, Tool
from knowtk.query.schema import input_schema
from knowtk.workspace import Target, open_target

__all__ = [
    "ERROR_META",
    "KNOWN_AT",
    "RECORD_URI",
    "build_server",
    "listed_input_schema",
    "listed_tools",
    "read_resource",
    "refusal",
    "serve",
]

CONCURRENT_CALLS = 8  # calls answered at once (worker threads); more wait their turn
RECORD_URI = "knowtk://record/"
ERROR_META = "knowtk/error"  # a refusal's code, message, argument and allowed values, in the result's _meta

log = logging.getLogger("knowtk.mcp")


def _annotations(tool: Tool) -> types.ToolAnnotations:
    """What MCP says of a tool. A mutation is destructive (it may withdraw or supersede a record) and idempotent:
    every change is conditioned on the hash the caller read (or on the id not existing), so the same call again
    changes nothing more; every other tool only reads."""
    if tool.destructive:
        return types.ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        )
    return types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def listed_tools(complete: bool = False, allow_writes: bool = False) -> list[types.Tool]:
    """Every registered tool as tools/list carries it (the listing whose size a test keeps within budget): the
    tools that change files (``Tool.destructive``) only when the server offers them, and then first."""
    offered = TOOLS.read_only()
    tools = sorted(TOOLS.values(), key=lambda tool: not tool.destructive)
    return [
        types.Tool(
            name=tool.name,
            description=tool_description(tool.name),
            input_schema=listed_input_schema(tool.name),
            output_schema=output_schema(tool.name, complete=complete and not tool.writes),
            annotations=_annotations(tool),
        )
        for tool in tools
        if allow_writes or tool.name in offered
    ]


KNOWN_AT = "knownAt"  # every read tool's argument: answer from the store as its files stood then (docs/time.md)
# tools whose own since/until are instants of the store's past (the changes between two, the receipts and commits
# within two): no knownAt
AT_TWO_INSTANTS = frozenset({"knowledge_changes", "knowledge_history"})


def listed_input_schema(tool: str) -> dict[str, Any]:
    """The tool's ``inputSchema`` as listed: its arguments, and ``knownAt`` for a tool that only reads."""
    schema = input_schema(tool)
    if not TOOLS[tool].writes and tool not in AT_TWO_INSTANTS:
        schema["properties"][KNOWN_AT] = {"type": "string"}  # the listing's budget: the agents guide says more
    return schema


def _call(target: Target, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's answer, from the store as its files stood at ``knownAt`` when it is given."""
    if TOOLS.lookup(name).writes or name in AT_TWO_INSTANTS:  # no knownAt in its schema: Store.call refuses one
        return target.call(name, arguments)
    when = arguments.get(KNOWN_AT)
    rest = {k: v for k, v in arguments.items() if k != KNOWN_AT}
    return target.call(name, rest) if when is None else target.store.at(when, argument=KNOWN_AT).call(name, rest)


GUIDE_RESOURCE = types.Resource(
    name="agents",
    title="knowtk for agents",
    uri=GUIDE_URI,
    description="Every tool's rules in full, its arguments and its answer's schema (the listing is the short form).",
    mime_type="text/markdown",
)
RECORD_TEMPLATE = types.ResourceTemplate(
    name="record",
    title="A knowtk record",
    uri_template=RECORD_URI + "{id}",
    description="One record whole, as knowledge_record answers (JSON).",
    mime_type="application/json",
)


def read_resource(target: Target, uri: str) -> types.ReadResourceResult:
    """The agents guide, or one record whole (``knowtk://record/{id}``); anything else is an invalid-params error."""
    if uri == GUIDE_URI:
        text, mime = agents_guide(), "text/markdown"
    elif uri.startswith(RECORD_URI) and len(uri) > len(RECORD_URI):
        record_id = unquote(uri[len(RECORD_URI) :])
        try:
            data = target.call("knowledge_record", {"id": record_id})
        except KnowtkError as exc:
            raise MCPError(INVALID_PARAMS, f"{exc.code}: {exc}", {"uri": uri}) from exc
        if data.get("status") != "found":
            raise MCPError(INVALID_PARAMS, f"not_found: no record {record_id!r}", {"uri": uri})
        text, mime = json.dumps(data, ensure_ascii=False), "application/json"
    else:
        raise MCPError(
            INVALID_PARAMS, f"no such resource: {uri} (allowed: {GUIDE_URI}, {RECORD_URI}{{id}})", {"uri": uri}
        )
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])


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


def build_server(target: Target, *, complete: bool = False, allow_writes: bool = False) -> Server[Any]:
    """The MCP server of ``target``; ``complete`` answers with the contract's complete dicts instead of list rows;
    ``allow_writes`` offers knowledge_mutation (the default server is read-only: it offers knowledge_history,
    which reads the change log, but no tool that changes a file)."""
    tools = listed_tools(complete, allow_writes)
    names = {t.name for t in tools}
    # calls run at once in worker threads (a Store answers each as a single caller would), at most this many
    limiter = anyio.CapacityLimiter(CONCURRENT_CALLS)

    def answer(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        try:
            if name not in names:  # a write tool the server does not offer is refused, never run
                raise InvalidArgument("tool", f"{name!r} is not offered by this server", allowed=sorted(names))
            data = _call(target, name, arguments or {})
        except Exception as exc:  # a refusal, or a failure of this one call: the server keeps answering
            if not isinstance(exc, KnowtkError):
                log.exception("knowtk: %s failed", name)
            return refusal(exc)
        out = data if complete else compact(name, data)
        if KNOWN_AT in data:  # what an answer from the past stands on, whatever the tool's view keeps
            out = {**out, KNOWN_AT: data[KNOWN_AT]}
        return types.CallToolResult(content=_as_text(out), structured_content=out)

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await anyio.to_thread.run_sync(answer, params.name, params.arguments, limiter=limiter)

    async def on_list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[GUIDE_RESOURCE])

    async def on_list_resource_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[RECORD_TEMPLATE])

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await anyio.to_thread.run_sync(read_resource, target, str(params.uri), limiter=limiter)

    return Server(
        "knowtk",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )


def serve(
    store: str | os.PathLike[str],
    *,
    state_dir: str | os.PathLike[str] | None = None,
    links: Mapping[str, str | os.PathLike[str]] | None = None,
    complete: bool = False,
    http: Bind | None = None,
    token: str | None = None,
    allow_hosts: Sequence[str] = (),
    profile: str | None = None,
    allow_writes: bool = False,
) -> None:
    """Serve MCP over stdin/stdout until the client closes the connection, or over HTTP at ``http`` until stopped."""
    if http is not None and token is None and not http.loopback:  # refused before the store is opened
        refuse_open_bind(http)
    server = build_server(
        open_target(store, state_dir=state_dir, links=links, profile=profile),
        complete=complete,
        allow_writes=allow_writes,
    )
    if http is not None:
        serve_http(server, http, token=token, allow_hosts=allow_hosts)
        return

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
