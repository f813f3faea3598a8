"""knowledge_lookup: exact id, full title or alias, never fuzzy; found, ambiguous or missing."""

from __future__ import annotations

from typing import Any

from knowtk.frames import OBJECT, STRING, SUMMARY, key, listed
from knowtk.query.args import FOLDERS, Param, choice, text, with_schema
from knowtk.query.common import LIFECYCLES
from knowtk.query.registry import Tool
from knowtk.query.validity import HINT_VALID, VALID_AT
from knowtk.query.views import COVERAGE_SCHEMA, NSTR, RECORD_KEYS, RECORD_SCHEMA, coverage_summary, nullable, obj, pick
from knowtk.query.wording import SCOPE

__all__ = ["PARAMS", "TOOL"]

ORDER = 20
PARAMS = (
    Param(
        "query",
        text(200),
        required=True,
        doc="An exact id (case-sensitive), full title or alias (case and spacing normalized, never fuzzy).",
    ),
    Param("lifecycle", choice(*LIFECYCLES), "active", doc="active (default), superseded, or all."),
    Param("scope", with_schema(lambda name, v: v, FOLDERS), doc=SCOPE),
    VALID_AT,
)


def _candidate(row: dict[str, Any]) -> dict[str, Any]:
    return {**pick(row, RECORD_KEYS), "aliases": row.get("aliases") or []}


def compact(answer: dict[str, Any]) -> dict[str, Any]:
    record = answer.get("record")
    return {
        "status": answer["status"],
        "matchedBy": answer.get("matchedBy"),
        "record": None if record is None else _candidate(record),
        "candidates": [_candidate(c) for c in answer.get("candidates") or []],
        "suggestions": [pick(x, ("id", "title", "why")) for x in answer.get("suggestions") or []],
        "coverage": coverage_summary(answer.get("coverage")),
        **({"unplaced": answer["unplaced"]} if "unplaced" in answer else {}),
    }


_CANDIDATE = obj({**RECORD_SCHEMA, "aliases": {"type": "array"}})
OUTPUT = obj(
    {
        "status": {"enum": ["found", "ambiguous", "missing"]},
        "matchedBy": NSTR,
        "record": nullable(_CANDIDATE),
        "candidates": {"type": "array", "items": _CANDIDATE},
        "suggestions": {"type": "array", "items": obj({"id": {"type": "string"}, "title": NSTR, "why": NSTR})},
        "coverage": COVERAGE_SCHEMA,
    },
    required=("status", "matchedBy", "record", "candidates", "coverage"),
)

COLUMNS = (
    ("status", STRING, key("_status")),
    ("matched_by", STRING, key("_matched_by")),
    *SUMMARY,
    ("aliases", OBJECT, listed("aliases")),
)


def rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**c, "_status": answer["status"], "_matched_by": answer["matchedBy"]} for c in answer["candidates"]]


def table(answer: dict[str, Any]) -> str:
    head = f"{answer['status']}" + (f" by {answer['matchedBy']}" if answer["matchedBy"] else "")
    found = [f"  {c['id']}  {c['title'] or ''}  ({c['path']}, {c['lifecycle']})" for c in answer["candidates"]]
    close = answer.get("suggestions") or []
    if close:
        found.append("not a match, but close (lookup never guesses: ask again by id):")
        found += [f"  {x['id']}  {x['title'] or ''}  ({x['message']})" for x in close]
    if answer.get("unplaced"):  # validAt: records of that name no date places in time
        found.append(f"{answer['unplaced']} record(s) of that name left out: neither occurred_at nor recorded_at")
    return "\n".join([head, *found])


TOOL = Tool(
    "knowledge_lookup",
    PARAMS,
    "knowtk.query.lookup:lookup",
    summary="exact id, title or alias",
    description=(
        "Exact lookup of an id, full title or alias (never fuzzy): status found, ambiguous (pick a candidate by "
        "id) or missing (suggestions: close names, not matches)."
    ),
    guide=(
        "Exact lookup of one name: an id (case-sensitive), a full title or an alias (case and spacing ignored, "
        "never fuzzy). status is found (record set), ambiguous (several candidates share the name; pick by id) "
        "or missing. A missing answer lists suggestions (ids or names that differ in case or separators, a "
        "record the lifecycle or scope leaves out, names holding every word): they are not matches, and status "
        "stays missing; look one up by its id. Use it when you know what a thing is called; use knowledge_grep "
        "to search words. It does not depend on the keyword index."
    ),
    hints={"query": "exact id, full title or alias", "scope": "folder prefixes", **HINT_VALID},
    output=OUTPUT,
    compact=compact,
    columns=COLUMNS,
    rows=rows,
    positional=("query",),
    table=table,
    serve=True,
    example={"query": "Sam"},
)
