"""knowledge_lint: the store's chains, links, dates and frontmatter checked as rules (docs/lint.md).

The command line's ``knowtk lint`` (``knowtk.cli.lint``) prints the same answer as text, JSON, GitHub
Actions annotations or SARIF, and exits 1 when a finding is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from knowtk.frames import INT, STRING, key
from knowtk.query.args import Param, strings
from knowtk.query.registry import Tool
from knowtk.query.views import COVERAGE_SCHEMA, NINT, NSTR, obj, with_coverage

__all__ = ["TOOL", "text"]

ORDER = 110
PARAMS = (
    Param(
        "rules",
        strings(),
        doc="Rule severities for this run, each RULE=error|warning|off (over knowtk.yaml's lint: rules).",
    ),
)


def text(answer: dict[str, Any], shown: Callable[[str], str] = lambda path: path) -> str:
    """The findings for people: grouped by file (``shown(path)`` is how a file is named), each with its line."""
    lines: list[str] = []
    current = None
    for f in answer["findings"]:
        if f["path"] != current:
            lines += [""] if lines else []
            current = f["path"]
            lines.append(shown(current))
        where = (f"{f['line']}" + (f":{f['column']}" if f.get("column") else "")) if f["line"] else "-"
        lines.append(f"  {where:<8} {f['severity']:<8} {f['rule']:<30} {f['message']}")
    errors, warnings = answer["errors"], answer["warnings"]
    if not answer["findings"]:
        lines.append(f"no findings in {answer['checked']} file(s)")
    else:
        lines += ["", f"{errors} error(s), {warnings} warning(s) in {answer['files']} of {answer['checked']} file(s)"]
    return "\n".join(lines)


_FINDING = obj(
    {
        "rule": {"type": "string"},
        "severity": {"type": "string", "enum": ["error", "warning"]},
        "path": {"type": "string"},
        "line": NINT,
        "message": {"type": "string"},
        "id": NSTR,
    }
)

TOOL = Tool(
    "knowledge_lint",
    PARAMS,
    "knowtk.query.lint.run:lint",
    summary="check the store's chains, links, dates and frontmatter",
    description="Broken chains, links and dates, stale statuses: findings with rule, severity, file, line.",
    hints={"rules": "RULE=error|warning|off"},
    output=obj(
        {
            "findings": {"type": "array", "items": _FINDING},
            "errors": {"type": "integer"},
            "warnings": {"type": "integer"},
            "snapshot": {"type": "string"},
            "coverage": COVERAGE_SCHEMA,
        }
    ),
    compact=lambda answer: with_coverage({k: v for k, v in answer.items() if k != "rules"}),
    columns=(
        ("path", STRING, key("path")),
        ("line", INT, key("line")),
        ("severity", STRING, key("severity")),
        ("rule", STRING, key("rule")),
        ("message", STRING, key("message")),
        ("id", STRING, key("id")),
    ),
    rows=lambda answer: answer["findings"],
    table=text,
    serve=False,
    example={},
)
