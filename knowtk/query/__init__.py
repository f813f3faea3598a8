"""The query engine: one module per tool family, each tool a (params, run) pair.

``TOOLS`` maps the contract's tool names to their argument specs and
runners. ``Store.call`` and the ``Store`` methods dispatch through it, so both
entry points validate and answer identically.

A tool is defined once, here (or added with ``register_tool``): the command line
(``knowtk.cli``: a subcommand for every tool) and the MCP server (its listing and
calls) are made from this registry, so a tool added later appears on all three
surfaces. ``summary`` and each ``Param.doc`` describe a tool that the hand-written
wording of ``knowtk.mcp.agent`` and ``knowtk.query.schema`` does not cover.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.query.args import Param
from knowtk.query.citations import EvidenceVerifier
from knowtk.query.dates import (
    CHRONICLE_DAY_PARAMS,
    CHRONICLE_SINCE_PARAMS,
    LAST_SEEN_PARAMS,
    TIMELINE_PARAMS,
    chronicle_day,
    chronicle_last_seen,
    chronicle_since,
    timeline,
)
from knowtk.query.grep import GREP_PARAMS, grep
from knowtk.query.inventory import RECORD_PARAMS, RECORDS_PARAMS, inventory, one_record
from knowtk.query.knowl import KNOWL_PARAMS, knowl
from knowtk.query.lookup import LOOKUP_PARAMS, lookup

__all__ = ["TOOLS", "Tool", "register_tool"]

Runner = Callable[[Engine, dict[str, Any], EvidenceVerifier], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    name: str
    params: tuple[Param, ...]
    run: Runner
    summary: str = ""  # one line: the command's help, and the agent's description when none is written
    command: str | None = None  # the subcommand's name (default: the name without "knowledge_", - for _)
    positional: tuple[str, ...] = ()  # arguments the command line takes by position

    @property
    def command_name(self) -> str:
        return self.command or self.name.removeprefix("knowledge_").replace("_", "-")


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("knowledge_grep", GREP_PARAMS, grep),
        Tool("knowledge_lookup", LOOKUP_PARAMS, lambda e, a, v: lookup(e, a)),
        Tool("knowledge_records", RECORDS_PARAMS, lambda e, a, v: inventory(e, a)),
        Tool("knowledge_record", RECORD_PARAMS, one_record),
        Tool("knowledge_timeline", TIMELINE_PARAMS, timeline),
        Tool("knowledge_chronicle_day", CHRONICLE_DAY_PARAMS, chronicle_day),
        Tool("knowledge_chronicle_since", CHRONICLE_SINCE_PARAMS, chronicle_since),
        Tool("knowledge_chronicle_last_seen", LAST_SEEN_PARAMS, chronicle_last_seen),
        Tool("knowl_query", KNOWL_PARAMS, knowl),
    )
}


def register_tool(tool: Tool) -> None:
    """Add ``tool`` to the registry: ``Store.call``, the command line and the MCP server then offer it."""
    TOOLS[tool.name] = tool
