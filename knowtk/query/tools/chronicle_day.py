"""knowledge_chronicle_day: one day, or its Monday-Sunday week, in an IANA time zone."""

from __future__ import annotations

from datetime import date
from typing import Any

from knowtk.errors import InvalidArgument
from knowtk.model.datevalues import parse_date_value, shown
from knowtk.query.args import Param, boolean, text, time_zone, with_schema
from knowtk.query.registry import Tool
from knowtk.query.views import DATED_VIEWS
from knowtk.query.wording import AGENT_AS_TIMELINE, DATED_KIND, ENTITY, GUIDE_DATED_KIND, GUIDE_DATES, GUIDE_ENTITY

__all__ = ["PARAMS", "TOOL", "calendar_date"]

ORDER = 60


def calendar_date(name: str, value: Any) -> date:
    parsed = parse_date_value(value)
    if parsed is None or not parsed.date_only:
        raise InvalidArgument(name, f"{shown(value)} is not a real calendar date", allowed="YYYY-MM-DD", value=value)
    return parsed.start.date()


PARAMS = (
    Param(
        "date",
        with_schema(calendar_date, {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}),
        required=True,
        doc="The day, YYYY-MM-DD, in timeZone.",
    ),
    Param("week", boolean, False, doc="The Monday-Sunday week holding date instead of the day."),
    Param(
        "timeZone", time_zone, None, doc="IANA time zone name for the day's boundaries and local times (default UTC)."
    ),
    Param("kind", text(128), doc=DATED_KIND),
    Param("entity", text(128), doc=ENTITY),
)

TOOL = Tool(
    "knowledge_chronicle_day",
    PARAMS,
    "knowtk.query.dates:chronicle_day",
    summary="one day or its week",
    description=f"One day, or its Monday-Sunday week, in an IANA time zone. {AGENT_AS_TIMELINE}",
    guide=(
        "What happened on one day, or in its Monday-Sunday week (week true), with the day's boundaries and the "
        "rows' local times (localStart, localEnd) in the IANA time zone given (default UTC). "
        f"{GUIDE_DATED_KIND} {GUIDE_ENTITY} {GUIDE_DATES}"
    ),
    hints={
        "date": "in timeZone",
        "week": "its Monday-Sunday week",
        "timeZone": "IANA name",
        "entity": "entity id",
        "kind": "exact record type",
    },
    **DATED_VIEWS,
    command="chronicle day",
    positional=("date",),
    example={"date": "2026-03-29", "week": True, "timeZone": "Europe/Berlin"},
)
