"""knowledge_timeline: dated records in date order, by entity, type, time field and range."""

from __future__ import annotations

from knowtk.query.args import MAX_PAGE_OFFSET, Param, boolean, bound, choice, integer, text
from knowtk.query.common import TIME_FIELDS
from knowtk.query.registry import Tool
from knowtk.query.validity import HINT_VALID, SPAN_COLUMNS, VALID_AT
from knowtk.query.views import DATED_VIEWS
from knowtk.query.wording import (
    AGENT_AS_GREP,
    AGENT_GUIDE,
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

ORDER = 50
PARAMS = (
    Param("entity", text(128), doc=ENTITY),
    Param("kind", text(128), doc=DATED_KIND),
    Param(
        "timeField",
        choice(*TIME_FIELDS),
        "occurred_at",
        doc="occurred_at (default), recorded_at, updated_at or due_at; unknown dates stay absent.",
    ),
    Param("since", bound(upper=False), doc=SINCE),
    Param("until", bound(upper=True), doc=UNTIL),
    Param("order", choice("asc", "desc"), "asc", doc="asc (oldest first, default) or desc."),
    Param(
        "eligibility",
        choice("active", "include_inactive"),
        "active",
        doc="active (default), or include_inactive to add superseded and expired records (never withdrawn).",
    ),
    Param(
        "includeSources",
        boolean,
        False,
        doc="Add deduplicated summaries of the rows' sources (within a 24 KiB budget).",
    ),
    Param(
        "group",
        choice("source"),
        doc="source, with entity: one row per dated source connected to that entity (occurrence time only).",
    ),
    VALID_AT,
    Param("limit", integer(1, 200), 50, doc=PAGE_LIMIT),
    Param("offset", integer(0, MAX_PAGE_OFFSET), 0, doc=OFFSET),
)

TOOL = Tool(
    "knowledge_timeline",
    PARAMS,
    "knowtk.query.dates:timeline",
    summary="dated records",
    description=(
        "Dated records in date order. kind is the exact record type (decision, meeting...), not grep's page/claim "
        "kind. An entity filter follows explicit links, not mentions: no row proves no absence. Bounds are real "
        "dates, inclusive; resolve relative dates yourself; unknown dates stay absent. timeField recorded_at or "
        "updated_at lists recent records (not a change log); include_inactive is no view of the past. "
        f"{AGENT_AS_GREP} {AGENT_GUIDE}"
    ),
    guide=(
        "Dated records in order of date, optionally by entity, type (kind), timeField, range, order and "
        "eligibility. timeField recorded_at or updated_at finds recently recorded or edited records (a view of "
        "current records, not a change log). eligibility include_inactive adds superseded and expired records, "
        "never withdrawn ones; it is not a view of the past. group 'source' with an entity gives one row per "
        f"dated source connected to it. {GUIDE_DATED_KIND} {GUIDE_ENTITY} {GUIDE_DATES} {GUIDE_PAGING}"
    ),
    hints={**HINT_DATED, "group": "source, with entity: a row per dated source", **HINT_VALID, **HINT_PAGE},
    **{**DATED_VIEWS, "columns": (*DATED_VIEWS["columns"], *SPAN_COLUMNS)},
    example={"entity": "person-ada-okafor", "limit": 3},
)
