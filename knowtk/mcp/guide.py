"""The agents guide: every tool's rules in full, its arguments and its answers' schema, as one Markdown text.

The MCP listing carries each tool's rules in short form within a budget (``Tool.description``);
this guide is the detail behind it (``Tool.guide``), served by the MCP server as the resource
``knowtk://docs/agents`` (``GUIDE_URI``) and summarised for people in docs/agents.md.
"""

from __future__ import annotations

import json

from knowtk.mcp.agent import INSTRUCTIONS, output_schema
from knowtk.query import TOOLS
from knowtk.query.schema import input_schema

__all__ = ["GUIDE_URI", "agents_guide"]

GUIDE_URI = "knowtk://docs/agents"


def _json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _arguments(tool: str) -> list[str]:
    schema = input_schema(tool, full=True)
    lines = []
    for name, prop in schema["properties"].items():
        rest = {k: v for k, v in prop.items() if k != "description"}
        required = " (required)" if name in schema["required"] else ""
        lines.append(f"- `{name}`{required} `{_json(rest)}`: {prop['description']}")
    return lines


def agents_guide() -> str:
    """The guide's Markdown: the server's instructions, then per tool its rules, arguments and answer schema."""
    parts = [
        "# knowtk for agents",
        "",
        INSTRUCTIONS,
        "",
        "Records are resources too: read `knowtk://record/{id}` for one record whole (the answer of "
        "knowledge_record). A refused call is a tool error whose text names the argument and its allowed "
        'values; `_meta["knowtk/error"]` holds the same as data.',
        "",
        "Every read tool also takes `knownAt`: a date (its end, UTC) or a timestamp with seconds and an offset. "
        "It answers from the store as its files stood then (the commit in force, or what knowtk saw of the files), "
        "and the answer carries `knownAt` {instant, source: git, commit, committedAt} or {instant, source: seen, "
        "observation, seenAt}.",
    ]
    for tool, spec in TOOLS.read_only().items():
        guide = spec.guide or spec.agent_description
        parts += ["", f"## {tool}", "", guide, "", "Arguments (no others are accepted):", ""]
        parts += _arguments(tool)
        parts += ["", "The answer's JSON Schema:", "", "```json", _json(output_schema(tool, full=True)), "```"]
    return "\n".join(parts) + "\n"
