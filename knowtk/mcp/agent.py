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
from knowtk.query.knowl import PROVENANCE

__all__ = [
    "COVERAGE_SAMPLE",
    "INSTRUCTIONS",
    "SNIPPET_CHARS",
    "TOOL_DESCRIPTIONS",
    "compact",
    "error_payload",
    "output_schema",
]

SNIPPET_CHARS = 200  # a list row's snippet and summary: enough to judge a hit, short enough for 50 of them
COVERAGE_SAMPLE = 5  # issues listed in a compact coverage; issueCount says how many there are

_PAGING = (
    "Pages: follow nextOffset with the same arguments; if snapshot changes between pages the store changed, "
    "so start again. coverage.complete false means some files failed validation and are left out (issueCount, "
    "first few issues listed); it does not make the rows wrong."
)
_ROWS = (
    "Rows are compact (id, title, kind, type, lifecycle, path, revision, sha256, a short snippet or summary); "
    "call knowledge_record with an id for the whole record, and compare sha256 before relying on a later read."
)
_DATES = (
    "Dates: bounds are a real YYYY-MM-DD or an ISO timestamp with seconds and an explicit offset; bounds are "
    "inclusive and a date-only upper bound covers its whole UTC day. Date-only records match any range they "
    "overlap without claiming an instant. Unknown dates stay absent: recording time never stands in for "
    "occurrence. Resolve relative dates ('last Tuesday') yourself before calling."
)
_DATED_KIND = (
    "kind here is the exact record type (decision, event, meeting ...), not the page/claim/relationship kind of "
    "knowledge_grep; kind 'claim' does not select all claims."
)
_ENTITY = (
    "An entity filter follows explicit entities, owner, relationship endpoints and sources, not co-mentions; "
    "a mention does not prove attendance, and no row does not prove absence."
)

TOOL_DESCRIPTIONS: dict[str, str] = {
    "knowledge_grep": (
        "Keyword search over the store's Markdown records (BM25 on title, aliases and body; title counts most). "
        "mode all (default) needs every word, any needs one, phrase needs them adjacent and in order. Matching "
        "ignores case and accents; there is no stemming or prefix matching, so search the word as written. "
        "Filters (kind, type with its aliases, exact tag, date range on timeField, scope) apply before ranking. "
        "lifecycle active (default) also matches the superseded wording of older records and returns their "
        "current replacement: such a row has via (the earlier record that matched), score null, and comes after "
        "every direct match; filters judge the returned current record. lifecycle superseded or all returns "
        "superseded records themselves. Scores compare only within one query, filter set and snapshot. Ranked "
        "search never proves that something is absent or that a list is complete: use knowledge_records for the "
        "exhaustive inventory. index.state 'unavailable' with total null is a failed search, not an empty one: "
        f"retry, or use knowledge_lookup / knowledge_records, which do not need the index. {_ROWS} {_PAGING}"
    ),
    "knowledge_lookup": (
        "Exact lookup of one name: an id (case-sensitive), a full title or an alias (case and spacing ignored, "
        "never fuzzy). status is found (record set), ambiguous (several candidates share the name; pick by id) "
        "or missing. Use it when you know what a thing is called; use knowledge_grep to search words. "
        "It does not depend on the keyword index."
    ),
    "knowledge_records": (
        "The exhaustive inventory: every available record passing the filters, sorted by id, independent of the "
        "keyword index. Use it to list or count (total is exact), or to prove that nothing matches; filters are "
        "those of knowledge_grep (kind, type, tag, lifecycle, timeField/since/until, scope). "
        f"{_ROWS} {_PAGING}"
    ),
    "knowledge_record": (
        "One record whole: its body, lifecycle, supersession links and chain, dates, entities, every verified "
        "evidence locator and its citation (path, revision, sha256, lines). status is found or missing. Use it to "
        "read a row of another tool in full (the complete hit), or when evidence was truncated."
    ),
    "knowledge_timeline": (
        "Dated records in order of date, optionally by entity, type (kind), timeField, range, order and "
        "eligibility. timeField recorded_at or updated_at finds recently recorded or edited records (a view of "
        "current records, not a change log). eligibility include_inactive adds superseded and expired records, "
        "never withdrawn ones; it is not a view of the past. group 'source' with an entity gives one row per "
        f"dated source connected to it. {_DATED_KIND} {_ENTITY} {_DATES} {_PAGING}"
    ),
    "knowledge_chronicle_day": (
        "What happened on one day, or in its Monday-Sunday week (week true), with the day's boundaries and the "
        "rows' local times (localStart, localEnd) in the IANA time zone given (default UTC). "
        f"{_DATED_KIND} {_ENTITY} {_DATES}"
    ),
    "knowledge_chronicle_since": (
        "What occurred between since and until (occurrence time), oldest first. It is not 'what was recently "
        "imported': for that use knowledge_timeline with timeField recorded_at. "
        f"{_DATED_KIND} {_ENTITY} {_DATES} {_PAGING}"
    ),
    "knowledge_chronicle_last_seen": (
        "The latest dated context for an entity at or before occurredOnOrBefore (default now): its most recent "
        f"rows, newest first. {_ENTITY} {_DATES}"
    ),
    "knowl_query": (
        "Search persistent project knowledge, or fetch one item by id. Use it first for a specific project "
        "question, before each new subtask and when you switch areas. Query with every word that names the "
        "subject and no other: one more on-subject word helps, one off-subject word hurts, so never pad a query "
        "and never drop a real term to shorten it. On a miss, re-run once with different words before concluding "
        "anything (a first miss is usually vocabulary, not absence), and only then inspect files. If a relevant "
        "active item comes back, answer from it rather than reading the repository; inspect files only on a "
        "miss, a conflict, stale or weak results, or when asked to verify. content is cut at 2,000 characters "
        "and then truncated is true: call again with id set to that result's id to read it whole. affectedPaths "
        "names the files an item depends on: open those instead of searching for them. score (0-1) is the "
        "ranker's order, min-max scaled over the page: the top row is near 1.0 whatever its quality, so read it "
        "as position and never compare it across queries. cosine (0-1), present when semantic search is "
        "installed, is the absolute similarity: the same scale on every query and store, so a low top cosine "
        "means the best match is weak. Judge with cosine, order with score. When no calibrated number exists "
        "score is the string 'uncalibrated (<reason>)' and cosine is absent: judge the content itself. category "
        "is a hint: when it matches nothing the query is retried once without it (categoryRetry, notes). limit "
        "defaults to 3. repos and scope apply only when the server links other stores (a workspace). " + PROVENANCE
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
    return {"complete": c.get("complete"), "issueCount": len(issues), "issues": issues[:COVERAGE_SAMPLE]}


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
    # knowledge_record and knowl_query are already shaped for reading: only the coverage list is summarised
    return {**rest, **cover}


# -- output schemas ----------------------------------------------------------------------------

_STR = {"type": "string"}
_INT = {"type": "integer"}
_NSTR = {"type": ["string", "null"]}
_NINT = {"type": ["integer", "null"]}


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
_INDEX = _obj({"state": {"enum": ["ready", "unavailable"]}, "lag": {"type": ["boolean", "null"]}}, required=("state",))
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
        "score": {"type": ["number", "null"]},
        "matches": {"type": "array", "items": _STR},
        "snippet": _obj({"text": {"type": "string", "maxLength": SNIPPET_CHARS}, "lineStart": _NINT, "lineEnd": _NINT}),
        "via": {"anyOf": [{"type": "null"}, _obj({"id": _STR, "revision": _INT, "title": _NSTR})]},
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
            "record": {"anyOf": [{"type": "null"}, _obj({**_RECORD, "aliases": {"type": "array"}})]},
            "candidates": {"type": "array", "items": _obj({**_RECORD, "aliases": {"type": "array"}})},
            "coverage": _COVERAGE,
        }
    ),
    "knowledge_record": _obj(
        {"status": {"enum": ["found", "missing"]}, "record": {"type": ["object", "null"]}, "coverage": _COVERAGE}
    ),
    "knowledge_timeline": _DATED_ANSWER,
    "knowledge_chronicle_day": _DATED_ANSWER,
    "knowledge_chronicle_since": _DATED_ANSWER,
    "knowledge_chronicle_last_seen": _DATED_ANSWER,
    "knowl_query": _obj(
        {
            "results": {"type": ["array", "object"]},
            "total": _NINT,
            "provenance": _STR,
            "categoryRetry": {"type": ["object", "null"]},
            "notes": {"type": "array", "items": _STR},
            "coverage": {"anyOf": [{"type": "null"}, _COVERAGE]},
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


def output_schema(tool: str, *, complete: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``tool``'s structured answer; ``complete`` answers are the contract's dicts."""
    if tool not in OUTPUT_SCHEMAS:
        raise InvalidArgument("tool", f"{tool!r} is not a knowtk tool", allowed=sorted(OUTPUT_SCHEMAS))
    return {"type": "object"} if complete else OUTPUT_SCHEMAS[tool]


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
