"""The query layer: the tools (``knowtk.query.tools``, one module each), their registry and their code.

``TOOLS`` (``knowtk.query.registry``) holds every tool by name: ``Store.call`` and the ``Store``
methods, the command line, the MCP server and ``Result.to_frame()`` read it, so a tool declared once
appears on each (docs/extending.md). The code that answers each tool lives in the modules beside it
(``grep``, ``lookup``, ``inventory``, ``dates``, ``knowl``, ``mutations``), imported at a tool's first call.
"""

from __future__ import annotations

from knowtk.query.registry import TOOLS, Tool, ToolCommand, ToolRegistry, register_tool

__all__ = ["TOOLS", "Tool", "ToolCommand", "ToolRegistry", "register_tool"]
