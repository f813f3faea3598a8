"""Dates and Chronicle: knowledge_timeline and the chronicle tools (placeholder, being written)."""

from __future__ import annotations

from typing import Any

from ..engine import Engine
from .args import Param, boolean, bound, choice, integer, text, time_zone
from .citations import EvidenceVerifier

TIMELINE_PARAMS = (
    Param("entity", text(128)),
    Param("kind", text(128)),
    Param("timeField", choice("occurred_at", "recorded_at", "updated_at", "due_at"), "occurred_at"),
    Param("since", bound(upper=False)),
    Param("until", bound(upper=True)),
    Param("order", choice("asc", "desc"), "asc"),
    Param("eligibility", choice("active", "include_inactive"), "active"),
    Param("includeSources", boolean, False),
    Param("group", choice("source")),
    Param("limit", integer(1, 200), 50),
    Param("offset", integer(0), 0),
)
CHRONICLE_DAY_PARAMS = (
    Param("date", text(10), required=True),
    Param("week", boolean, False),
    Param("timeZone", time_zone, None),
    Param("kind", text(128)),
    Param("entity", text(128)),
)
CHRONICLE_SINCE_PARAMS = (
    Param("since", bound(upper=False), required=True),
    Param("until", bound(upper=True)),
    Param("kind", text(128)),
    Param("entity", text(128)),
    Param("limit", integer(1, 200), 50),
    Param("offset", integer(0), 0),
)
LAST_SEEN_PARAMS = (
    Param("entity", text(128), required=True),
    Param("occurredOnOrBefore", bound(upper=True)),
)


def timeline(engine: Engine, a: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    raise NotImplementedError


def chronicle_day(engine: Engine, a: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    raise NotImplementedError


def chronicle_since(engine: Engine, a: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    raise NotImplementedError


def chronicle_last_seen(engine: Engine, a: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    raise NotImplementedError
