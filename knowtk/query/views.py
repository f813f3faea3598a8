"""Views of an answer that several tools share: the command line's text tables, the agent's compact rows
and the JSON Schema fragments that describe them.

A tool's module picks from these for its ``Tool.table``, ``Tool.compact`` and ``Tool.output``; the
front ends (``knowtk.cli``, ``knowtk.mcp``) only call what the tool names.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

from knowtk.frames import TIMELINE

__all__ = [
    "COVERAGE_SAMPLE",
    "COVERAGE_SCHEMA",
    "DATED_VIEWS",
    "INDEX_SCHEMA",
    "NINT",
    "NSTR",
    "PAGE_SCHEMA",
    "RECORD_KEYS",
    "RECORD_SCHEMA",
    "SNIPPET_CHARS",
    "coverage_summary",
    "dated_answer",
    "dated_answer_schema",
    "dated_table",
    "flat",
    "footer",
    "nullable",
    "obj",
    "page",
    "page_head",
    "pick",
    "readable",
    "record_row",
    "short",
    "table_columns",
    "with_coverage",
    "wrapped",
]

SNIPPET_CHARS = 200  # a list row's snippet and summary: enough to judge a hit, short enough for 50 of them
COVERAGE_SAMPLE = 5  # issues listed in a compact coverage; issueCount says how many there are
RECORD_KEYS = ("id", "title", "kind", "type", "lifecycle", "path", "revision", "sha256")

# -- text tables (the command line) --------------------------------------------------------------


def flat(text: Any, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    one_line = " ".join(str(text or "").split())
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


def footer(answer: dict[str, Any]) -> list[str]:
    """The lines under a table: the coverage hint and issues, and the next page's option."""
    lines = []
    cov = answer.get("coverage")
    if isinstance(cov, dict) and cov.get("hint"):
        lines.append(f"hint: {cov['hint']}")
    if isinstance(cov, dict) and not cov.get("complete", True):
        count = cov.get("issueCount", len(cov.get("issues") or []))
        lines.append(f"coverage incomplete: {count} file issue(s) left out or read in part; list them: knowtk coverage")
    if answer.get("unplaced"):
        lines.append(
            f"{answer['unplaced']} record(s) left out: neither occurred_at nor recorded_at places them in time"
        )
    if answer.get("nextOffset") is not None:
        lines.append(f"more: --offset {answer['nextOffset']}")
    return lines


def table_columns(
    rows: list[dict[str, Any]], cols: list[tuple[str, Callable[[dict[str, Any]], Any], int]]
) -> list[str]:
    """Rows as left-aligned columns: ``cols`` are (heading, how to read the cell, widest it may be)."""
    cells = [[flat(get(row), width) for _, get, width in cols] for row in rows]
    widths = [max([len(head), *(len(c[i]) for c in cells)]) for i, (head, _, _) in enumerate(cols)]
    out = ["  ".join(head.ljust(w) for (head, _, _), w in zip(cols, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return out


def page_head(answer: dict[str, Any], noun: str) -> str:
    shown = len(answer["rows"])
    return f"{answer['total']} {noun}(s); showing {shown} from {answer['offset']}  (snapshot {answer['snapshot']})"


def dated_table(answer: dict[str, Any]) -> str:
    """The table of the timeline and chronicle tools: when, id, type, title."""

    def when(row: dict[str, Any]) -> Any:
        return row.get("localStart") or row.get("value")

    cols = [
        ("when", when, 25),
        ("id", lambda x: x["id"], 40),
        ("type", lambda x: x["type"], 14),
        ("title", lambda x: x["title"], 60),
    ]
    head = page_head(answer, "row") if answer.get("offset") is not None else f"{len(answer['rows'])} row(s)"
    return "\n".join([head, *table_columns(answer["rows"], cols), *footer(answer)])


def wrapped(text: Any, indent: str) -> str:
    """A snippet under its row: one line of at most 240 characters, wrapped at 100 and indented."""
    return textwrap.indent(textwrap.fill(flat(text, 240), 100), indent)


# -- compact rows (the agent's view) --------------------------------------------------------------


def short(text: Any, limit: int = SNIPPET_CHARS) -> Any:
    if not isinstance(text, str):
        return text
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1].rstrip() + "…"


def pick(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: row.get(k) for k in keys}


def record_row(row: dict[str, Any]) -> dict[str, Any]:
    return {**pick(row, RECORD_KEYS), "summary": short(row.get("summary")), "supersededBy": row.get("supersededBy")}


def coverage_summary(cov: dict[str, Any] | None) -> dict[str, Any] | None:
    """Coverage as an agent reads it: complete, how many issues, the first few, and the profile hint."""
    if cov is None:
        return None
    issues = cov.get("issues") or []
    out = {"complete": cov.get("complete"), "issueCount": len(issues), "issues": issues[:COVERAGE_SAMPLE]}
    if cov.get("hint"):
        out["hint"] = cov["hint"]  # a newcomer's store: which profile would read it
    return out


def with_coverage(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without its freshness, its coverage list summarised (a tool that names no compact view)."""
    rest = {k: v for k, v in answer.items() if k not in ("coverage", "freshness")}
    return {**rest, "coverage": coverage_summary(answer["coverage"])} if "coverage" in answer else rest


def readable(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer already shaped for reading (a record whole, knowl items): its coverage list summarised (null
    when it has none), its freshness left out."""
    rest = {k: v for k, v in answer.items() if k not in ("rows", "coverage", "freshness")}
    return {**rest, "coverage": coverage_summary(answer.get("coverage"))}


def page(answer: dict[str, Any]) -> dict[str, Any]:
    out = {k: answer.get(k) for k in ("total", "offset", "nextOffset", "snapshot")}
    if "unplaced" in answer:  # validAt: records left out (docs/time.md)
        out["unplaced"] = answer["unplaced"]
    return out


_DATED_KEYS = (
    *("id", "title", "kind", "type", "lifecycle", "path"),
    *("timeField", "value", "dateOnly", "start", "end", "entities"),
)


def _dated_row(row: dict[str, Any]) -> dict[str, Any]:
    out = {**pick(row, _DATED_KEYS), "summary": short(row.get("summary"))}
    for extra in ("localStart", "localEnd", "claims", "links", "noteRecord"):
        if extra in row:
            out[extra] = row[extra]
    return out


def dated_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """The compact answer of the timeline and chronicle tools."""
    rest = {k: v for k, v in answer.items() if k not in ("rows", "coverage", "freshness")}
    return {
        "rows": [_dated_row(r) for r in answer["rows"]],
        **rest,
        "coverage": coverage_summary(answer.get("coverage")),
    }


# -- JSON Schema fragments of the compact answers ---------------------------------------------------

_STR = {"type": "string"}
_INT = {"type": "integer"}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null, as ``anyOf`` branches of one type each: single-type dialects read it, and it stays exact."""
    return {"anyOf": [schema, {"type": "null"}]}


NSTR = nullable(_STR)
NINT = nullable(_INT)


def obj(props: dict[str, Any], *, required: tuple[str, ...] | None = None) -> dict[str, Any]:
    """An object schema; every property required unless ``required`` says which."""
    return {"type": "object", "properties": props, "required": list(required if required is not None else props)}


COVERAGE_SCHEMA = obj(
    {
        "complete": {"type": "boolean"},
        "issueCount": _INT,
        "issues": {
            "type": "array",
            "maxItems": COVERAGE_SAMPLE,
            "items": obj({"path": NSTR, "id": NSTR, "code": _STR, "message": _STR}, required=("code", "message")),
        },
    }
)
PAGE_SCHEMA = {"total": NINT, "offset": _INT, "nextOffset": NINT, "snapshot": NSTR}
INDEX_SCHEMA = obj(
    {"state": {"enum": ["ready", "unavailable"]}, "lag": nullable({"type": "boolean"})}, required=("state",)
)
RECORD_SCHEMA = {
    "id": _STR,
    "title": NSTR,
    "kind": _STR,
    "type": _STR,
    "lifecycle": {"enum": ["active", "superseded"]},
    "path": _STR,
    "revision": _INT,
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
}


def dated_answer_schema() -> dict[str, Any]:
    """The schema of ``dated_answer``."""
    row = obj(
        {
            **{k: v for k, v in RECORD_SCHEMA.items() if k not in ("revision", "sha256")},
            "lifecycle": {"enum": ["active", "superseded", "expired"]},  # include_inactive shows expired ones
            "timeField": _STR,
            "value": _STR,
            "start": _STR,
            "end": _STR,
            "entities": {"type": "array", "items": _STR},
            "summary": NSTR,
        }
    )
    return obj(
        {"rows": {"type": "array", "items": row}, **PAGE_SCHEMA, "coverage": COVERAGE_SCHEMA},
        required=("rows", "total", "coverage"),
    )


#: The ``Tool`` fields the timeline and chronicle tools share: the agent's answer and its schema, the frame's
#: columns and rows, the command line's table, and ``knowtk serve`` answering them.
DATED_VIEWS: dict[str, Any] = {
    "output": dated_answer_schema(),
    "compact": dated_answer,
    "columns": tuple(TIMELINE),
    "rows": lambda answer: answer["rows"],
    "table": dated_table,
    "serve": True,
}
