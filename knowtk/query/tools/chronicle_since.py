"""knowledge_chronicle_since: what occurred in a range, oldest first."""

from __future__ import annotations

from knowtk.query.args import MAX_PAGE_OFFSET, Param, bound, integer, text
from knowtk.query.registry import Tool
from knowtk.query.views import DATED_VIEWS
from knowtk.query.wording import (
    AGENT_AS_GREP,
    AGENT_AS_TIMELINE,
    DATED_KIND,
    ENTITY,
    GUIDE_DATED_KIND,
    GUIDE_DATES,
    GUIDE_ENTITY,
    GUIDE_PAGING,
    HINT_DATED,
    HINT_PAGE,
    OFFSET,
    PAGE_LIMIT,
    SINCE,
    UNTIL,
)

__all__ = ["PARAMS", "TOOL"]

ORDER = 70
PARAMS = (
    Param("since", bound(upper=False), required=True, doc=SINCE),
    Param("until", bound(upper=True), doc=UNTIL),
    Param("kind", text(128), doc=DATED_KIND),
    Param("entity", text(128), doc=ENTITY),
    Param("limit", integer(1, 200), 50, doc=PAGE_LIMIT),
    Param("offset", integer(0, MAX_PAGE_OFFSET), 0, doc=OFFSET),
)

TOOL = Tool(
    "knowledge_chronicle_since",
    PARAMS,
    "knowtk.query.dates:chronicle_since",
    summary="what occurred in a range",
    description=(
        "What occurred from since to until, oldest first; not 'recently imported' (knowledge_timeline with "
        f"timeField recorded_at). {AGENT_AS_TIMELINE} {AGENT_AS_GREP}"
    ),
    guide=(
        "What occurred between since and until (occurrence time), oldest first. It is not 'what was recently "
        "imported': for that use knowledge_timeline with timeField recorded_at. "
        f"{GUIDE_DATED_KIND} {GUIDE_ENTITY} {GUIDE_DATES} {GUIDE_PAGING}"
    ),
    hints={**HINT_DATED, **HINT_PAGE},
    **DATED_VIEWS,
    command="chronicle since",
    positional=("since",),
    example={"since": "2026-03-01", "until": "2026-03-31"},
)
