"""JSON Schema of each tool's arguments, built from the ``Param`` specs that ``validate`` applies.

The types, lengths, ranges and allowed values come from each check's ``schema`` attribute
(``knowtk.query.args``), the defaults, required names and wording from the tool's ``Param``s and hints
(``knowtk.query.registry.Tool``). The MCP server's ``inputSchema`` and the command line's options are
both made from ``input_schema``, so neither can drift from what ``Store.call`` accepts.
"""

from __future__ import annotations

import copy
from typing import Any

from knowtk.query.args import Param
from knowtk.query.registry import TOOLS

__all__ = ["input_schema", "param_schema"]


def param_schema(tool: str, p: Param, *, full: bool = True) -> dict[str, Any]:
    """The JSON Schema of one argument: its check's schema, its default, and its description (or its hint)."""
    schema = getattr(p.check, "schema", None)
    if not isinstance(schema, dict):
        raise TypeError(f"{tool}.{p.name}: its check carries no schema (use a factory of knowtk.query.args)")
    out = copy.deepcopy(schema)
    if p.default is not None:
        out["default"] = p.default
    described = p.doc if full else TOOLS[tool].hint(p.name)
    if described:
        out["description"] = described
    return out


def input_schema(tool: str, *, full: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``tool``'s arguments (camelCase, as ``Store.call`` takes them).

    Each argument is described by its short hint, as the MCP listing carries it; ``full`` gives the
    complete wording (the command line's help, the agents guide).
    """
    params = TOOLS[tool].params
    return {
        "type": "object",
        "properties": {p.name: param_schema(tool, p, full=full) for p in params},
        "required": [p.name for p in params if p.required],
        "additionalProperties": False,
    }
