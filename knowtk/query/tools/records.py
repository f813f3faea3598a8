"""knowledge_records: the exhaustive inventory, sorted by id, independent of the keyword index."""

from __future__ import annotations

from typing import Any

from knowtk.frames import DATE_COLUMNS, OBJECT, STRING, SUMMARY, key, listed
from knowtk.query.args import MAX_PAGE_OFFSET, Param, integer
from knowtk.query.common import FILTER_PARAMS
from knowtk.query.registry import Tool
from knowtk.query.validity import HINT_VALID, VALID_AT
from knowtk.query.views import (
    COVERAGE_SCHEMA,
    NSTR,
    PAGE_SCHEMA,
    RECORD_SCHEMA,
    coverage_summary,
    footer,
    obj,
    page,
    page_head,
    record_row,
    table_columns,
)
from knowtk.query.wording import (
    AGENT_AS_GREP,
    AGENT_ROWS,
    GUIDE_PAGING,
    GUIDE_ROWS,
    HINT_FILTERS,
    HINT_PAGE,
    OFFSET,
    PAGE_LIMIT,
)

__all__ = ["PARAMS", "TOOL"]

ORDER = 30
PARAMS = (
    *FILTER_PARAMS,
    VALID_AT,
    Param("limit", integer(1, 1000), 100, doc=PAGE_LIMIT),
    Param("offset", integer(0, MAX_PAGE_OFFSET), 0, doc=OFFSET),
)


def compact(answer: dict[str, Any]) -> dict[str, Any]:
    listed_rows = [record_row(r) for r in answer["rows"]]
    return {"rows": listed_rows, **page(answer), "coverage": coverage_summary(answer.get("coverage"))}


OUTPUT = obj(
    {
        "rows": {"type": "array", "items": obj({**RECORD_SCHEMA, "summary": NSTR, "supersededBy": NSTR})},
        **PAGE_SCHEMA,
        "coverage": COVERAGE_SCHEMA,
    }
)

COLUMNS = (
    *SUMMARY,
    ("aliases", OBJECT, listed("aliases")),
    ("superseded_by", STRING, key("supersededBy")),
    *DATE_COLUMNS,
)


def table(answer: dict[str, Any]) -> str:
    cols = [
        ("id", lambda x: x["id"], 40),
        ("type", lambda x: x["type"], 16),
        ("lifecycle", lambda x: x["lifecycle"], 10),
        ("title", lambda x: x["title"], 60),
        ("path", lambda x: x["path"], 60),
    ]
    return "\n".join([page_head(answer, "record"), *table_columns(answer["rows"], cols), *footer(answer)])


TOOL = Tool(
    "knowledge_records",
    PARAMS,
    "knowtk.query.inventory:inventory",
    summary="the exhaustive inventory, by id",
    description=(
        "The exhaustive inventory, by id, without the keyword index: list, count (total is exact) or prove that "
        f"nothing matches. Filters as knowledge_grep. {AGENT_ROWS} {AGENT_AS_GREP}"
    ),
    guide=(
        "The exhaustive inventory: every available record passing the filters, sorted by id, independent of the "
        "keyword index. Use it to list or count (total is exact), or to prove that nothing matches; filters are "
        "those of knowledge_grep (kind, type, tag, lifecycle, timeField/since/until, scope). "
        f"{GUIDE_ROWS} {GUIDE_PAGING}"
    ),
    hints={**HINT_FILTERS, **HINT_VALID, **HINT_PAGE},
    output=OUTPUT,
    compact=compact,
    columns=COLUMNS,
    rows=lambda answer: answer["rows"],
    table=table,
    serve=True,
    example={"kind": "claim", "type": "adr", "limit": 5},
)
