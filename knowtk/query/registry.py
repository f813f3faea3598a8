"""``Tool``, everything about one tool, and ``TOOLS``, the registry every surface reads.

A tool is declared once, by one module that makes a ``Tool``: its arguments (with their docs and
checks), how it runs, the shape of its answer for agents, its frame's columns, its command-line
command and table, and whether it reads or writes. ``Store.call`` and the ``Store`` methods, the
command line, the MCP server, ``Result.to_frame()``, the ``knowtk serve`` client and the docs test all
read this registry, so a tool added here (a module in ``knowtk.query.tools``, a plug-in's
``knowtk_tools`` hook, or ``register_tool``) appears on every surface (docs/extending.md).

The built-in tools come through the plug-in manager (``knowtk.plugins``) like any other: the module
``knowtk.query.tools`` is knowtk's default plug-in for them. Looking up a built-in tool's name never
reads the installed plug-ins; a name the defaults do not have, or listing every tool, does.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from knowtk import plugins
from knowtk.errors import InvalidArgument
from knowtk.frames import Column, build_frame
from knowtk.model.shapes import field, shape
from knowtk.query.args import Param

if TYPE_CHECKING:
    import argparse

    import pandas as pd

    from knowtk.engine.engine import Engine
    from knowtk.query.citations import EvidenceVerifier

__all__ = ["TOOLS", "Runner", "Tool", "ToolCommand", "ToolRegistry", "register_tool"]

#: ``run(engine, args, verifier)``: the contract's dict for the checked arguments (snake_case keys).
Runner = Callable[["Engine", dict[str, Any], "EvidenceVerifier"], dict[str, Any]]
Table = Callable[[dict[str, Any]], str]


@shape(frozen=True)
class ToolCommand:
    """A command-line subcommand a tool makes by hand, when options made from its arguments do not fit.

    ``setup(parser)`` adds the options; ``arguments(namespace)`` gives the tool's camelCase arguments.
    """

    name: str
    help: str
    setup: Callable[[argparse.ArgumentParser], None]
    arguments: Callable[[argparse.Namespace], dict[str, Any]]
    flags: dict[str, str] = field(default_factory=dict)  # argument -> the option a user types for it


@shape(frozen=True)
class Tool:
    """Everything about one tool; only ``name``, ``params`` and ``run`` are required.

    - ``run``: the runner, or ``"module:function"`` imported at the first call (declaring stays cheap).
    - ``summary``: one line: the command's help and the Python method's docstring.
    - ``description``, ``guide``: what an agent reads in the MCP listing, and the agents guide's
      section on it (both default to ``summary``).
    - ``hints``: argument -> its short description in the MCP listing (None: each ``Param.doc``;
      an argument left out has none).
    - ``output``: the JSON Schema of the agent's answer (``compact``); None: any object.
    - ``compact``: the agent's view of an answer; None: the answer, its coverage list summarised.
    - ``columns``, ``rows``: the frame (``Result.to_frame``): its typed columns, and the rows of an
      answer (default: the answer's one list of rows, else the answer as one row).
    - ``command``, ``positional``, ``table``: the subcommand (default: the name without
      ``knowledge_``, ``_`` as ``-``; a space makes a group: ``"chronicle day"``), the arguments it takes
      by position, and its table (None: JSON); ``commands`` replaces the made one with hand-made ones.
    - ``method``: the ``Store`` method (default: the command's name, ``-`` and spaces as ``_``);
      ``""`` for none.
    - ``writes``: runs outside a query's transaction; ``destructive``: it changes files (MCP's annotation
      says so) and is offered to agents only with ``--allow-writes``;
      ``serve``: a ``knowtk serve`` server may answer its command.
    - ``workspace``: the command line also takes linked stores (``--link``).
    - ``example``: a valid call on the bundled demo store (the docs and the tests make it).
    """

    name: str
    params: tuple[Param, ...]
    run: Runner | str
    summary: str = ""
    description: str = ""
    guide: str = ""
    hints: Mapping[str, str] | None = None
    output: dict[str, Any] | None = None
    compact: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    columns: tuple[Column, ...] | None = None
    rows: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
    command: str | None = None
    positional: tuple[str, ...] = ()
    table: Table | None = None
    commands: tuple[ToolCommand, ...] | None = None
    method: str | None = None
    writes: bool = False
    destructive: bool = False
    serve: bool = False
    workspace: bool = False
    example: dict[str, Any] = field(default_factory=dict)

    @property
    def command_name(self) -> str:
        return self.command or self.name.removeprefix("knowledge_").replace("_", "-")

    @property
    def method_name(self) -> str:
        if self.method is not None:
            return self.method
        return self.command_name.replace("-", "_").replace(" ", "_")

    @property
    def agent_description(self) -> str:
        return self.description or self.summary or self.name

    def runner(self) -> Runner:
        """The function that answers (imported now when ``run`` names it)."""
        if not isinstance(self.run, str):
            return self.run
        module, _, name = self.run.partition(":")
        found: Runner = getattr(importlib.import_module(module), name)
        return found

    def doc(self, argument: str) -> str:
        """An argument's full description (the command line's help, the agents guide)."""
        return next((p.doc for p in self.params if p.name == argument), "")

    def hint(self, argument: str) -> str | None:
        """An argument's description in the MCP listing: its hint, or its doc when the tool gives no hints."""
        if self.hints is None:
            return self.doc(argument) or None
        return self.hints.get(argument)

    def frame(self, data: dict[str, Any]) -> pd.DataFrame:
        """The answer as a DataFrame: the declared columns, or columns as pandas finds them."""
        rows = self.rows(data) if self.rows is not None else default_rows(data)
        if self.columns is not None:
            return build_frame(rows, list(self.columns))
        import pandas as pd

        return pd.DataFrame(rows)


def default_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """An answer's rows when its tool names none: its one list of mappings (empty or not), else the answer itself."""
    lists = [v for v in data.values() if isinstance(v, list) and all(isinstance(x, dict) for x in v)]
    if len(lists) == 1:
        return list(lists[0])
    return [{k: v for k, v in data.items() if k != "coverage"}]


class ToolRegistry(MutableMapping[str, Tool]):
    """Every tool by name: the default plug-ins' first (``knowtk.query.tools``), then the installed plug-ins',
    then those added with ``register_tool``, in that order.

    Looking a built-in tool up imports the built-in tools' declarations only (each is light: its runner is
    imported at its first call); a name they do not have, and iterating, also read the installed plug-ins.
    """

    def __init__(self) -> None:
        self._defaults: dict[str, Tool] | None = None
        self._outside: dict[str, Tool] | None = None
        self._added: dict[str, Tool] = {}
        self._removed: set[str] = set()
        self._views: dict[bool, dict[str, Tool]] = {}  # outside -> the merged tools, until anything changes

    def _load(self, *, outside: bool) -> dict[str, Tool]:
        """The tools by name (``outside``: the installed plug-ins' too), kept until the registry changes: every
        query looks its tool up here."""
        view = self._views.get(outside)
        if view is not None:
            return view
        with plugins.LOCK:  # the plug-in manager's own lock: a plug-in's import may register a tool
            if self._defaults is None:
                self._defaults = _collect(plugins.hook_results("knowtk_tools", outside=False))
            if outside and self._outside is None:
                every = _collect(plugins.hook_results("knowtk_tools", outside=True))
                self._outside = {name: tool for name, tool in every.items() if name not in self._defaults}
            merged = {**self._defaults, **(self._outside or {}), **self._added}
            view = {name: tool for name, tool in merged.items() if name not in self._removed}
            self._views[outside] = view
            return view

    def _changed(self) -> None:
        self._views = {}

    def defaults(self) -> dict[str, Tool]:
        """The built-in tools alone (no installed plug-in is read)."""
        return self._load(outside=False)

    def __getitem__(self, name: str) -> Tool:
        tool = self._load(outside=False).get(name)
        if tool is None:
            tool = self._load(outside=True)[name]  # KeyError: no such tool
        return tool

    def __setitem__(self, name: str, tool: Tool) -> None:
        with plugins.LOCK:
            self._removed.discard(name)
            self._added[name] = tool
            self._changed()

    def __delitem__(self, name: str) -> None:
        with plugins.LOCK:
            if name not in self._load(outside=True):
                raise KeyError(name)
            self._added.pop(name, None)
            self._removed.add(name)
            self._changed()

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._load(outside=False) or name in self._load(outside=True))

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._load(outside=True)))

    def __len__(self) -> int:
        return len(self._load(outside=True))

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self)})"

    def reads(self) -> dict[str, Tool]:
        """The tools that only read, each inside a query's transaction (every one but the ``writes`` tools)."""
        return {name: tool for name, tool in self._load(outside=True).items() if not tool.writes}

    def read_only(self) -> dict[str, Tool]:
        """The tools a read-only MCP server offers: every tool that changes nothing (not ``destructive``), the
        change log (``knowledge_history``, a ``writes`` tool only because it reads outside a query) too."""
        return {name: tool for name, tool in self._load(outside=True).items() if not tool.destructive}

    def lookup(self, name: Any) -> Tool:
        """The tool called ``name``, or ``InvalidArgument`` naming ``tool`` with every tool's name."""
        tool = self.get(name) if isinstance(name, str) else None
        if tool is None:
            raise InvalidArgument("tool", f"{name!r} is not a knowtk tool", allowed=sorted(self))
        return tool

    def by_method(self, method: str) -> Tool | None:
        """The tool whose ``Store`` method is ``method`` (the built-ins first: no plug-in read for them)."""
        for outside in (False, True):
            for tool in self._load(outside=outside).values():
                if tool.method_name == method:
                    return tool
        return None

    def reset(self) -> None:
        """Read the plug-ins again at the next look-up (after installing one into a running process)."""
        with plugins.LOCK:
            plugins.reset()
            self._outside = None
            self._changed()


def _collect(results: list[tuple[str, Any]]) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for plugin, made in results:
        for tool in made:
            if not isinstance(tool, Tool):
                raise TypeError(f"the knowtk plug-in {plugin!r} gave {tool!r} as a tool: knowtk_tools() yields Tool")
            tools.setdefault(tool.name, tool)  # the first plug-in to name a tool keeps it: defaults come first
    return tools


TOOLS = ToolRegistry()


def register_tool(tool: Tool) -> None:
    """Add ``tool`` to the registry: ``Store.call`` and its method, the command line, the MCP server and
    ``Result.to_frame()`` then offer it. A package's tools are better added as a plug-in (docs/extending.md)."""
    TOOLS[tool.name] = tool
