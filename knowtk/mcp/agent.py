"""What an agent sees: tool descriptions, compact list rows, output schemas, and refusals as text.

The MCP server (``knowtk.mcp.server``) is a thin layer over this module, so
everything an agent receives can be tested without the SDK. A tool's
arguments are described by ``knowtk.query.schema.input_schema``; its answer is
``compact(tool, contract_dict)`` (the list rows the seeds promise agents, see
docs/agents.md), or the contract's complete dict when the server runs with
``--complete``.
"""

from __future__ import annotations

from typing import Any

from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.query import TOOLS
from knowtk.query.knowl import PROVENANCE

__all__ = [
    "COVERAGE_SAMPLE",
    "INSTRUCTIONS",
    "SNIPPET_CHARS",
    "TOOL_DESCRIPTIONS",
    "compact",
    "error_payload",
    "output_schema",
    "tool_description",
]

SNIPPET_CHARS = 200  # a list row's snippet and summary: enough to judge a hit, short enough for 50 of them
COVERAGE_SAMPLE = 5  # issues listed in a compact coverage; issueCount says how many there are

# The listing every agent reads before its first question (budget: LISTING_BUDGET bytes, a test measures
# it): each tool's rules in short form. The detail is in the agents guide (knowtk.mcp.guide), served as
# the resource knowtk://docs/agents, and in docs/agents.md.
_PAGING = (
    "Paging: repeat with offset=nextOffset and the same arguments; a changed snapshot means the store changed: "
    "start again. coverage.complete false: files that failed validation are left out (issueCount)."
)
_ROWS = "Rows are short: knowledge_record reads one whole (compare sha256)."
_AS_GREP = "Paging and coverage as knowledge_grep."
_AS_TIMELINE = "kind, entity and dates as knowledge_timeline."
_GUIDE = "Detail: resource knowtk://docs/agents."

# the seed's knowl_query instructions, word for word
KNOWL_INSTRUCTIONS = (
    "Use this first for specific project questions, before each new subtask, and when switching areas during "
    "multi-step work. Use every word that names the subject and none that does not: one more on-subject term "
    "retrieves better, one off-subject term retrieves worse, so never pad a query to reach a length and never "
    "drop a real term to stay under one. Skip only for directly relevant active lifecycle context, a "
    "same-request query, or relevant memory returned by knowl_task_start. If results contain a relevant active "
    "item, answer from Knowl without inspecting repository files. Inspect files only on miss, conflict, stale or "
    "low-confidence results, or explicit verification requests -- and on a miss, re-run once with different "
    "words first, because a first-pass miss is usually vocabulary rather than absence. content is cut at 2000 "
    "characters and marked truncated when it was; affectedPaths names the files the item depends on, so open "
    "those rather than searching for them. To read a truncated item in full, call again with id set to the id "
    "of that result. Results carry two numbers when semantic search is available, and they answer different "
    "questions. score (0-1) is the relevance the ranker ordered by; it is min-max scaled across the page, so "
    "the top row sits near 1.0 whatever it is and it is NOT comparable between queries -- read it as position, "
    "never as strength. cosine (0-1) is the raw similarity on an absolute scale, the same scale the relevance "
    "floor is measured against, so it means the same thing on every query and against every store: a low top "
    "cosine means the best available match is genuinely weak rather than that it is the answer. Judge with "
    "cosine, order with score. Where no calibrated number exists, score is the string uncalibrated (<reason>) "
    "and cosine is absent entirely -- the ranker has an order but no opinion on strength, so do not read "
    "position as confidence, judge the content itself. "
) + PROVENANCE

TOOL_DESCRIPTIONS: dict[str, str] = {
    "knowledge_grep": (
        "Keyword search (BM25; title counts most). mode all needs every word, any one, phrase them adjacent. "
        "Ignores case and accents; no stemming or prefixes. Filters apply before ranking. lifecycle active also "
        "matches superseded wording and returns the current record (via names the earlier one, score null, after "
        "direct hits). Scores compare only within one query. Ranked search never proves absence: use "
        "knowledge_records. index.state unavailable with total null is a failed search: retry, or use "
        f"lookup/records. {_ROWS} {_PAGING} {_GUIDE}"
    ),
    "knowledge_lookup": (
        "Exact lookup of an id, full title or alias (never fuzzy): status found, ambiguous (pick a candidate by "
        "id) or missing."
    ),
    "knowledge_records": (
        "The exhaustive inventory, by id, without the keyword index: list, count (total is exact) or prove that "
        f"nothing matches. Filters as knowledge_grep. {_ROWS} {_AS_GREP}"
    ),
    "knowledge_record": "One record whole: body, lifecycle, chain, dates, entities, evidence, citations.",
    "knowledge_timeline": (
        "Dated records in date order. kind is the exact record type (decision, meeting...), not grep's page/claim "
        "kind. An entity filter follows explicit links, not mentions: no row proves no absence. Bounds are real "
        "dates, inclusive; resolve relative dates yourself; unknown dates stay absent. timeField recorded_at or "
        "updated_at lists recent records (not a change log); include_inactive is no view of the past. "
        f"{_AS_GREP} {_GUIDE}"
    ),
    "knowledge_chronicle_day": f"One day, or its Monday-Sunday week, in an IANA time zone. {_AS_TIMELINE}",
    "knowledge_chronicle_since": (
        "What occurred from since to until, oldest first; not 'recently imported' (knowledge_timeline with "
        f"timeField recorded_at). {_AS_TIMELINE} {_AS_GREP}"
    ),
    "knowledge_chronicle_last_seen": f"An entity's latest dated rows up to occurredOnOrBefore. {_AS_TIMELINE}",
    "knowl_query": (
        KNOWL_INSTRUCTIONS + " limit defaults to 3; a category that matches nothing is retried once without it; "
        "repos and scope only with linked stores."
    ),
}

TOOL_DESCRIPTIONS["knowledge_mutation"] = (
    "Change the store (offered only when the server runs with --allow-writes): create, update (only the fields "
    "you name; null removes one; every other byte kept), supersede (old gets status superseded and "
    "superseded_by; the new record is an active one or created from record), withdraw (the file stays), "
    "reinstate (the only way to lift a withdrawal or supersession; needs a reason). Read the record first and "
    "pass its sha256 as expectedSha256: a file that changed since is refused with publication_conflict naming "
    "both hashes (read again, then decide); nothing is merged. A change that would make a record invalid is "
    "refused naming the field. The answer is a receipt (id, records with sha256Before/After); indexed false "
    "means the search index catches up at the next query, not a failed save."
)
TOOL_DESCRIPTIONS["knowledge_history"] = (
    "Receipts of the changes made through knowledge_mutation, newest first (of one record with id, with its Git "
    f"commits when the store is in a work tree). {_PAGING}"
)

INSTRUCTIONS = (
    "knowtk answers from a Markdown knowledge store that is re-read at every call, so edits show at once. "
    "knowl_query for project knowledge; knowledge_grep to search words; knowledge_lookup for a known name or id; "
    "knowledge_records to list or prove completeness; knowledge_record to read one record whole; "
    "knowledge_timeline and knowledge_chronicle_* for dates. Results are list rows; a refused call names the "
    "argument and its allowed values."
)


def tool_description(tool: str) -> str:
    """What the listing says of ``tool``: the wording above, or the registered tool's own summary."""
    return TOOL_DESCRIPTIONS.get(tool) or TOOLS[tool].summary


# -- compact answers -------------------------------------------------------------------------


def _short(text: Any, limit: int = SNIPPET_CHARS) -> Any:
    if not isinstance(text, str):
        return text
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _pick(d: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: d.get(k) for k in keys}


_RECORD_KEYS = ("id", "title", "kind", "type", "lifecycle", "path", "revision", "sha256")


def _hit(h: dict[str, Any]) -> dict[str, Any]:
    snip = h.get("snippet") or {}
    via = h.get("via")
    return {
        **_pick(h, _RECORD_KEYS),
        "score": h.get("score"),
        "matches": h.get("matches"),
        "snippet": {
            "text": _short(snip.get("text", "")),
            "lineStart": snip.get("lineStart"),
            "lineEnd": snip.get("lineEnd"),
        },
        "via": None if via is None else _pick(via, ("id", "revision", "title")),
    }


def _record_row(r: dict[str, Any]) -> dict[str, Any]:
    return {**_pick(r, _RECORD_KEYS), "summary": _short(r.get("summary")), "supersededBy": r.get("supersededBy")}


def _candidate(r: dict[str, Any]) -> dict[str, Any]:
    return {**_pick(r, _RECORD_KEYS), "aliases": r.get("aliases") or []}


_DATED_KEYS = (
    *("id", "title", "kind", "type", "lifecycle", "path"),
    *("timeField", "value", "dateOnly", "start", "end", "entities"),
)


def _dated_row(r: dict[str, Any]) -> dict[str, Any]:
    row = {**_pick(r, _DATED_KEYS), "summary": _short(r.get("summary"))}
    for extra in ("localStart", "localEnd", "claims", "links", "noteRecord"):
        if extra in r:
            row[extra] = r[extra]
    return row


def _coverage(c: dict[str, Any] | None) -> dict[str, Any] | None:
    if c is None:
        return None
    issues = c.get("issues") or []
    out = {"complete": c.get("complete"), "issueCount": len(issues), "issues": issues[:COVERAGE_SAMPLE]}
    if c.get("hint"):
        out["hint"] = c["hint"]  # a newcomer's store: which profile would read it
    return out


def _page(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d.get(k) for k in ("total", "offset", "nextOffset", "snapshot")}


_DATED_TOOLS = (
    "knowledge_timeline",
    "knowledge_chronicle_day",
    "knowledge_chronicle_since",
    "knowledge_chronicle_last_seen",
)


def compact(tool: str, data: dict[str, Any]) -> dict[str, Any]:
    """The agent's view of a contract answer: list rows, paging, index, and a coverage summary."""
    cover = {"coverage": _coverage(data.get("coverage"))}
    if tool == "knowledge_grep":
        return {"hits": [_hit(h) for h in data["hits"]], **_page(data), "index": data.get("index"), **cover}
    if tool == "knowledge_records":
        return {"rows": [_record_row(r) for r in data["rows"]], **_page(data), **cover}
    if tool == "knowledge_lookup":
        record = data.get("record")
        return {
            "status": data["status"],
            "matchedBy": data.get("matchedBy"),
            "record": None if record is None else _candidate(record),
            "candidates": [_candidate(c) for c in data.get("candidates") or []],
            **cover,
        }
    if tool in ("knowledge_mutation", "knowledge_history"):
        return data
    rest = {k: v for k, v in data.items() if k not in ("rows", "coverage", "freshness")}
    if tool in _DATED_TOOLS:
        return {"rows": [_dated_row(r) for r in data["rows"]], **rest, **cover}
    if tool not in OUTPUT_SCHEMAS:  # a tool registered later: its own dict, the coverage list summarised
        return {**rest, **cover} if "coverage" in data else rest
    # knowledge_record and knowl_query are already shaped for reading: only the coverage list is summarised
    return {**rest, **cover}


# -- output schemas ----------------------------------------------------------------------------

_STR = {"type": "string"}
_INT = {"type": "integer"}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null, as ``anyOf`` branches of one type each: single-type dialects read it, and it stays exact."""
    return {"anyOf": [schema, {"type": "null"}]}


_NSTR = nullable(_STR)
_NINT = nullable(_INT)


def _obj(props: dict[str, Any], *, required: tuple[str, ...] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required if required is not None else props)}


_COVERAGE = _obj(
    {
        "complete": {"type": "boolean"},
        "issueCount": _INT,
        "issues": {
            "type": "array",
            "maxItems": COVERAGE_SAMPLE,
            "items": _obj({"path": _NSTR, "id": _NSTR, "code": _STR, "message": _STR}, required=("code", "message")),
        },
    }
)
_PAGE = {"total": _NINT, "offset": _INT, "nextOffset": _NINT, "snapshot": _NSTR}
_INDEX = _obj({"state": {"enum": ["ready", "unavailable"]}, "lag": nullable({"type": "boolean"})}, required=("state",))
_RECORD = {
    "id": _STR,
    "title": _NSTR,
    "kind": _STR,
    "type": _STR,
    "lifecycle": {"enum": ["active", "superseded"]},
    "path": _STR,
    "revision": _INT,
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
}
_HIT = _obj(
    {
        **_RECORD,
        "score": nullable({"type": "number"}),
        "matches": {"type": "array", "items": _STR},
        "snippet": _obj({"text": {"type": "string", "maxLength": SNIPPET_CHARS}, "lineStart": _NINT, "lineEnd": _NINT}),
        "via": nullable(_obj({"id": _STR, "revision": _INT, "title": _NSTR})),
    }
)
_DATED = _obj(
    {
        **{k: v for k, v in _RECORD.items() if k not in ("revision", "sha256")},
        "timeField": _STR,
        "value": _STR,
        "start": _STR,
        "end": _STR,
        "entities": {"type": "array", "items": _STR},
        "summary": _NSTR,
    }
)
_DATED_ANSWER = _obj(
    {"rows": {"type": "array", "items": _DATED}, **_PAGE, "coverage": _COVERAGE}, required=("rows", "total", "coverage")
)

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "knowledge_grep": _obj({"hits": {"type": "array", "items": _HIT}, **_PAGE, "index": _INDEX, "coverage": _COVERAGE}),
    "knowledge_records": _obj(
        {
            "rows": {
                "type": "array",
                "items": _obj({**_RECORD, "summary": _NSTR, "supersededBy": _NSTR}),
            },
            **_PAGE,
            "coverage": _COVERAGE,
        }
    ),
    "knowledge_lookup": _obj(
        {
            "status": {"enum": ["found", "ambiguous", "missing"]},
            "matchedBy": _NSTR,
            "record": nullable(_obj({**_RECORD, "aliases": {"type": "array"}})),
            "candidates": {"type": "array", "items": _obj({**_RECORD, "aliases": {"type": "array"}})},
            "coverage": _COVERAGE,
        }
    ),
    "knowledge_record": _obj(
        {"status": {"enum": ["found", "missing"]}, "record": nullable({"type": "object"}), "coverage": _COVERAGE}
    ),
    "knowledge_timeline": _DATED_ANSWER,
    "knowledge_chronicle_day": _DATED_ANSWER,
    "knowledge_chronicle_since": _DATED_ANSWER,
    "knowledge_chronicle_last_seen": _DATED_ANSWER,
    "knowl_query": _obj(
        {
            "results": {"anyOf": [{"type": "array"}, {"type": "object"}]},
            "total": _NINT,
            "provenance": _STR,
            "categoryRetry": nullable({"type": "object"}),
            "notes": {"type": "array", "items": _STR},
            "coverage": nullable(_COVERAGE),
        },
        required=("results", "provenance"),
    ),
}


_RECEIPT = {"type": "object", "properties": {"id": _NSTR, "operation": _STR, "records": {"type": "array"}}}
# no required keys: a refusal's structured {"error": ...} validates too (strict clients check it even then)
OUTPUT_SCHEMAS["knowledge_mutation"] = _obj({"receipt": _RECEIPT, "written": {"type": "boolean"}}, required=())
OUTPUT_SCHEMAS["knowledge_history"] = _obj(
    {"receipts": {"type": "array", "items": {"type": "object"}}, "total": _INT, "nextOffset": _NINT}, required=()
)


def output_schema(tool: str, *, complete: bool = False, full: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``tool``'s structured answer, as the listing carries it: the keys every answer has.

    ``full`` also describes every row (the agents guide serves it); ``complete`` answers are the contract's
    dicts, described only as an object.
    """
    if tool not in TOOLS and tool not in OUTPUT_SCHEMAS:  # OUTPUT_SCHEMAS: the write tools too
        raise InvalidArgument("tool", f"{tool!r} is not a knowtk tool", allowed=sorted({*TOOLS, *OUTPUT_SCHEMAS}))
    if complete or tool not in OUTPUT_SCHEMAS:  # a tool registered later answers its own dict
        return {"type": "object"}
    schema = OUTPUT_SCHEMAS[tool]
    if full:
        return schema
    return {"type": "object", "required": schema["required"]}  # the listing's budget: types are in the full one


# -- refusals ----------------------------------------------------------------------------------


def error_payload(exc: BaseException) -> dict[str, Any]:
    """A refusal as an agent reads it: the code, the message naming the argument, and the allowed values."""
    if isinstance(exc, KnowtkError):
        err: dict[str, Any] = {"code": exc.code, "message": str(exc)}
        if isinstance(exc, InvalidArgument):
            allowed = exc.allowed
            if allowed is not None and not isinstance(allowed, str):
                allowed = list(allowed)
            err.update(argument=exc.argument, allowed=allowed)
        return err
    return {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"}
