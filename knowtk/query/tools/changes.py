"""knowledge_changes: the records added, removed or changed between two known-time instants, and the commits."""

from __future__ import annotations

from typing import Any

from knowtk.frames import OBJECT, STRING, key
from knowtk.model.datevalues import parse_instant
from knowtk.query.args import MAX_PAGE_OFFSET, Param, integer, text, with_schema
from knowtk.query.registry import Tool
from knowtk.query.views import COVERAGE_SCHEMA, NINT, NSTR, footer, obj, table_columns
from knowtk.query.wording import PAGE_LIMIT

__all__ = ["PARAMS", "TOOL"]

ORDER = 110
_WHEN = "a date (its end, UTC) or a timestamp with seconds and an offset, not in the future"


# no pattern in the schema (the listing's budget): the check refuses what is no date, naming the form
INSTANT = with_schema(parse_instant, {"type": "string", "minLength": 10})
PARAMS = (
    Param("since", INSTANT, required=True, doc=f"The store as its files stood then: {_WHEN}."),
    Param("until", INSTANT, doc=f"Compared with the store as its files stood then ({_WHEN}). Default: the files now."),
    Param("id", text(200), doc="Only this record's change. Default: every record's."),
    Param("limit", integer(1, 500), 100, doc=PAGE_LIMIT),
    Param("offset", integer(0, MAX_PAGE_OFFSET), 0, doc="Rows to skip; follow nextOffset."),
)


def table(answer: dict[str, Any]) -> str:
    since, until = answer["since"], answer["until"]
    head = f"{answer['total']} change(s) from {since['instant']} to {until['instant']}"
    cols = [
        ("change", lambda r: r["change"], 8),
        ("id", lambda r: r["id"], 28),
        ("lifecycle", lambda r: f"{r['lifecycleBefore'] or '-'} -> {r['lifecycleAfter'] or '-'}", 26),
        ("fields", lambda r: ", ".join(r["fields"]), 40),
        ("commits", lambda r: " ".join((c.get("commit") or c["observation"])[:8] for c in r["commits"]), 30),
    ]
    return "\n".join([head, *table_columns(answer["rows"], cols), *footer(answer)])


_SIDE = obj({"instant": {"type": "string"}, "source": {"type": "string"}}, required=("instant", "source"))
_ROW = obj(
    {
        "id": {"type": "string"},
        "path": {"type": "string"},
        "change": {"type": "string", "enum": ["added", "removed", "changed"]},
        "fields": {"type": "array", "items": {"type": "string"}},
        "lifecycleBefore": NSTR,
        "lifecycleAfter": NSTR,
        "commits": {"type": "array", "items": {"type": "object"}},
    }
)

TOOL = Tool(
    "knowledge_changes",
    PARAMS,
    "knowtk.query.changes:changes",
    summary="records added, removed or changed between two instants, with the commits",
    description=(
        "Records added, removed or changed between the files at since and at until (default: now), with the "
        "fields changed, lifecycles and commits."
    ),
    hints={"since": "date or timestamp"},
    output=obj(
        {
            "rows": {"type": "array", "items": _ROW},
            "total": {"type": "integer"},
            "nextOffset": NINT,
            "since": _SIDE,
            "until": _SIDE,
            "coverage": COVERAGE_SCHEMA,
        }
    ),
    columns=(
        ("id", STRING, key("id")),
        ("path", STRING, key("path")),
        ("change", STRING, key("change")),
        ("fields", OBJECT, key("fields")),
        ("lifecycle_before", STRING, key("lifecycleBefore")),
        ("lifecycle_after", STRING, key("lifecycleAfter")),
        ("commits", OBJECT, lambda r: [c["commit"] for c in r["commits"]]),
    ),
    rows=lambda answer: answer["rows"],
    positional=("since",),
    table=table,
    example={"since": "2026-12-01"},
)
