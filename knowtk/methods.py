"""A tool as a Python method: ``store.grep("vector index", mode="any")`` made from the tool's ``Param``s.

The arguments are the tool's in snake_case: those its command takes by position come first (positional or
keyword), the rest are keyword-only, each with its default. ``help(store.grep)`` and a notebook's ``?`` show
the signature and the tool's wording, so a tool added by a plug-in reads like a built-in one.

``Store`` imports this module at the first method asked for: a command line never does (``inspect``, which
builds the signatures, costs every process that imports it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from knowtk.errors import UnexpectedArgument
from knowtk.query.args import snake
from knowtk.query.registry import Tool
from knowtk.results import Result

__all__ = ["MethodHost", "tool_method"]


class MethodHost(Protocol):
    """What a tool's method calls: ``Store.invoke`` (the tool's name, the arguments given by name)."""

    def invoke(self, tool: str, arguments: Mapping[str, Any]) -> Result: ...


def _signature(tool: Tool) -> inspect.Signature:
    by_name = {p.name: p for p in tool.params}
    parameters = []
    for name in tool.positional:
        p = by_name[name]
        default = inspect.Parameter.empty if p.required else p.default
        parameters.append(inspect.Parameter(snake(name), inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
    for p in tool.params:
        if p.name not in tool.positional:
            default = inspect.Parameter.empty if p.required else p.default
            parameters.append(inspect.Parameter(p.py, inspect.Parameter.KEYWORD_ONLY, default=default))
    return inspect.Signature(parameters, return_annotation="Result")


def _docstring(tool: Tool) -> str:
    lines = [f"{tool.name}: {tool.summary or tool.agent_description}", "", "Arguments (the contract's, in snake_case):"]
    lines += [f"    {p.py}: {p.doc}" if p.doc else f"    {p.py}" for p in tool.params]
    return "\n".join(lines)


def _bound(tool: Tool, signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments given, by name. One the method does not take is an ``UnexpectedArgument`` naming it (a
    ``TypeError`` too, as Python's own); a missing required one is refused by the tool's checks, as by
    ``Store.call``, naming it."""
    names = list(signature.parameters)
    unknown = [name for name in kwargs if name not in signature.parameters]
    if unknown:
        message = f"{tool.method_name}() takes no such argument"
        raise UnexpectedArgument(unknown[0], message, allowed=names, value=kwargs[unknown[0]])
    try:
        return dict(signature.bind_partial(*args, **kwargs).arguments)
    except TypeError as exc:  # too many by position, or one given twice
        takes = ", ".join(tool.positional) or "none"
        message = f"{tool.method_name}() takes by position: {takes}; the others by name ({exc})"
        raise UnexpectedArgument("args", message, allowed=names) from None


def tool_method(host: MethodHost, tool: Tool) -> Callable[..., Result]:
    """``tool`` bound to ``host`` as a method that returns a ``Result``."""
    signature = _signature(tool)

    def method(*args: Any, **kwargs: Any) -> Result:
        return host.invoke(tool.name, _bound(tool, signature, args, kwargs))

    method.__name__ = method.__qualname__ = tool.method_name
    method.__doc__ = _docstring(tool)
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method
