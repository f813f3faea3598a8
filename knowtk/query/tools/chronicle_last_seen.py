"""knowledge_chronicle_last_seen: the latest dated context of an entity (default: up to now)."""

from __future__ import annotations

from knowtk.query.args import Param, bound, text
from knowtk.query.registry import Tool
from knowtk.query.views import DATED_VIEWS
from knowtk.query.wording import AGENT_AS_TIMELINE, DATE_BOUND, ENTITY, GUIDE_DATES, GUIDE_ENTITY

__all__ = ["PARAMS", "TOOL"]

ORDER = 80
PARAMS = (
    Param("entity", text(128), required=True, doc=ENTITY),
    Param("occurredOnOrBefore", bound(upper=True), doc=f"Latest moment to consider (default now): {DATE_BOUND}."),
)

TOOL = Tool(
    "knowledge_chronicle_last_seen",
    PARAMS,
    "knowtk.query.dates:chronicle_last_seen",
    summary="latest context of an entity",
    description=f"An entity's latest dated rows up to occurredOnOrBefore. {AGENT_AS_TIMELINE}",
    guide=(
        "The latest dated context for an entity at or before occurredOnOrBefore (default now): its most recent "
        f"rows, newest first. {GUIDE_ENTITY} {GUIDE_DATES}"
    ),
    hints={"entity": "entity id", "occurredOnOrBefore": "default now"},
    **DATED_VIEWS,
    command="chronicle last-seen",
    positional=("entity",),
    example={"entity": "person-ada-okafor"},
)
