"""What an agent sees: the server's instructions, each tool's description and answer, refusals as text.

The MCP server (``knowtk.mcp.server``) is a thin layer over this module, so everything an agent receives
can be tested without the SDK. Each tool says what an agent reads of it (``knowtk.query.Tool``: its
description, its compact answer and that answer's JSON Schema); its arguments are described by
``knowtk.query.schema.input_schema``. An answer is ``compact(tool, contract_dict)`` (the list rows the
seeds promise agents, see docs/agents.md), or the contract's complete dict when the server runs with
``--complete``.
"""

from __future__ import annotations

from typing import Any

from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.query import TOOLS
from knowtk.query.tools.knowl import KNOWL_INSTRUCTIONS
from knowtk.query.views import COVERAGE_SAMPLE, SNIPPET_CHARS, nullable, with_coverage

__all__ = [
    "COVERAGE_SAMPLE",
    "INSTRUCTIONS",
    "KNOWL_INSTRUCTIONS",
    "SNIPPET_CHARS",
    "compact",
    "error_payload",
    "nullable",
    "output_schema",
    "tool_description",
]

INSTRUCTIONS = (
    "knowtk answers from a Markdown knowledge store that is re-read at every call, so edits show at once. "
    "knowl_query for project knowledge; knowledge_grep to search words; knowledge_lookup for a known name or id; "
    "knowledge_records to list or prove completeness; knowledge_record to read one record whole; "
    "knowledge_timeline and knowledge_chronicle_* for dates. Results are list rows; a refused call names the "
    "argument and its allowed values."
)


def tool_description(tool: str) -> str:
    """What the listing says of ``tool``: its description, else its summary."""
    return TOOLS[tool].agent_description


def compact(tool: str, data: dict[str, Any]) -> dict[str, Any]:
    """The agent's view of a contract answer: the tool's own (list rows, paging, index, a coverage summary),
    else the answer with its coverage list summarised."""
    view = TOOLS[tool].compact
    return view(data) if view is not None else with_coverage(data)


def output_schema(tool: str, *, complete: bool = False, full: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``tool``'s structured answer, as the listing carries it: the keys every answer has.

    ``full`` also describes every row (the agents guide serves it); ``complete`` answers are the contract's
    dicts, described only as an object.
    """
    spec = TOOLS.lookup(tool)
    if complete or spec.output is None:  # a tool that declares no shape answers its own dict
        return {"type": "object"}
    if full:
        return spec.output
    return {"type": "object", "required": spec.output["required"]}  # the listing's budget: types are in the full one


# -- refusals ----------------------------------------------------------------------------------


def error_payload(exc: BaseException) -> dict[str, Any]:
    """A refusal as an agent reads it: the code, the message naming the argument, and the allowed values."""
    if isinstance(exc, KnowtkError):
        err: dict[str, Any] = {"code": exc.code, "message": str(exc)}
        if isinstance(exc, InvalidArgument):
            allowed = exc.allowed
            if allowed is not None and not isinstance(allowed, str):
                allowed = list(allowed)
            err.update(argument=exc.argument, allowed=allowed)
        return err
    return {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"}
