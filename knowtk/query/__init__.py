"""The query engine: one module per tool family, each tool a (params, run) pair.

``TOOLS`` maps the contract's tool names to their argument specs and
runners. ``Store.call`` and the ``Store`` methods dispatch through it, so both
entry points validate and answer identically.

A tool is defined once, here (or added with ``register_tool``): the command line
(``knowtk.cli``: a subcommand for every tool) and the MCP server (its listing and
calls) are made from this registry, so a tool added later appears on all three
surfaces. ``summary`` and each ``Param.doc`` describe a tool that the hand-written
wording of ``knowtk.mcp.agent`` and ``knowtk.query.schema`` does not cover.

A built-in tool's module is imported when the tool is first looked up (issue 20: a
``knowtk grep`` process imports the grep tool, not the dates, knowl and inventory ones).
``WRITE_TOOL_NAMES`` names the write tools of ``knowtk.query.mutations`` without importing it.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from knowtk.model.shapes import shape

if TYPE_CHECKING:
    from knowtk.engine.engine import Engine
    from knowtk.query.args import Param
    from knowtk.query.citations import EvidenceVerifier

__all__ = ["TOOLS", "WRITE_TOOL_NAMES", "Tool", "ToolRegistry", "register_tool"]

Runner = Callable[["Engine", dict[str, Any], "EvidenceVerifier"], dict[str, Any]]

#: The tools that write (``knowtk.query.mutations.WRITE_TOOLS``, a test checks): a dispatcher tells them
#: apart without importing the write layer.
WRITE_TOOL_NAMES = frozenset({"knowledge_mutation", "knowledge_history"})


@shape(frozen=True)
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


# name -> (module, its params, its runner, whether the runner takes the evidence verifier)
_BUILT_IN: dict[str, tuple[str, str, str, bool]] = {
    "knowledge_grep": ("knowtk.query.grep", "GREP_PARAMS", "grep", True),
    "knowledge_lookup": ("knowtk.query.lookup", "LOOKUP_PARAMS", "lookup", False),
    "knowledge_records": ("knowtk.query.inventory", "RECORDS_PARAMS", "inventory", False),
    "knowledge_record": ("knowtk.query.inventory", "RECORD_PARAMS", "one_record", True),
    "knowledge_timeline": ("knowtk.query.dates", "TIMELINE_PARAMS", "timeline", True),
    "knowledge_chronicle_day": ("knowtk.query.dates", "CHRONICLE_DAY_PARAMS", "chronicle_day", True),
    "knowledge_chronicle_since": ("knowtk.query.dates", "CHRONICLE_SINCE_PARAMS", "chronicle_since", True),
    "knowledge_chronicle_last_seen": ("knowtk.query.dates", "LAST_SEEN_PARAMS", "chronicle_last_seen", True),
    "knowl_query": ("knowtk.query.knowl", "KNOWL_PARAMS", "knowl", True),
}


def _built_in(name: str) -> Tool:
    module_name, params, runner, verified = _BUILT_IN[name]
    module = importlib.import_module(module_name)
    run = getattr(module, runner)
    if not verified:  # lookup and records need no evidence verifier
        run = _without_verifier(run)
    return Tool(name, getattr(module, params), run)


def _without_verifier(run: Callable[[Engine, dict[str, Any]], dict[str, Any]]) -> Runner:
    return lambda e, a, v: run(e, a)


class ToolRegistry(MutableMapping[str, Tool]):
    """A dict of tools by name, in registration order, whose built-in tools are made at their first lookup.

    Iterating, ``in`` and ``len`` import nothing; looking a tool up (``[]``, ``get``, ``items``) imports its module.
    """

    def __init__(self, built_in: dict[str, Callable[[], Tool]]) -> None:
        self._pending = dict(built_in)  # name -> the maker of a tool not looked up yet
        self._tools: dict[str, Tool] = {}
        self._order: dict[str, None] = dict.fromkeys(built_in)
        self._making = threading.RLock()  # reentrant: a tool's module may look another tool up

    def __getitem__(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            with self._making:  # threads asking for the same new tool at once: one makes it, all get it
                tool = self._tools.get(name)
                if tool is None:
                    tool = self._tools[name] = self._pending[name]()  # KeyError: not a tool
                    del self._pending[name]
        return tool

    def __setitem__(self, name: str, tool: Tool) -> None:
        with self._making:
            self._pending.pop(name, None)
            self._tools[name] = tool
            self._order.setdefault(name)  # a replaced tool keeps its place, as in a dict

    def __delitem__(self, name: str) -> None:
        with self._making:
            del self._order[name]
            self._pending.pop(name, None)
            self._tools.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._order

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._order)})"


TOOLS: MutableMapping[str, Tool] = ToolRegistry({name: functools.partial(_built_in, name) for name in _BUILT_IN})


def register_tool(tool: Tool) -> None:
    """Add ``tool`` to the registry: ``Store.call``, the command line and the MCP server then offer it."""
    TOOLS[tool.name] = tool
