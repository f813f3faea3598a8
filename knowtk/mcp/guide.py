"""The agents guide: every tool's rules in full, its arguments and its answers' schema, as one Markdown text.

The MCP listing (``knowtk.mcp.agent.TOOL_DESCRIPTIONS``) carries each rule in short form within a
budget; this guide is the detail behind it, served by the MCP server as the resource
``knowtk://docs/agents`` (``GUIDE_URI``) and summarised for people in docs/agents.md.
"""

from __future__ import annotations

import json

from knowtk.mcp.agent import INSTRUCTIONS, output_schema, tool_description
from knowtk.query import TOOLS
from knowtk.query.knowl import PROVENANCE
from knowtk.query.schema import input_schema

__all__ = ["GUIDE_URI", "TOOL_GUIDES", "agents_guide"]

GUIDE_URI = "knowtk://docs/agents"

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

TOOL_GUIDES: dict[str, str] = {
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


def _json(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _arguments(tool: str) -> list[str]:
    schema = input_schema(tool, full=True)
    lines = []
    for name, prop in schema["properties"].items():
        rest = {k: v for k, v in prop.items() if k != "description"}
        required = " (required)" if name in schema["required"] else ""
        lines.append(f"- `{name}`{required} `{_json(rest)}`: {prop['description']}")
    return lines


def agents_guide() -> str:
    """The guide's Markdown: the server's instructions, then per tool its rules, arguments and answer schema."""
    parts = [
        "# knowtk for agents",
        "",
        INSTRUCTIONS,
        "",
        "Records are resources too: read `knowtk://record/{id}` for one record whole (the answer of "
        "knowledge_record). A refused call is a tool error whose text names the argument and its allowed "
        'values; `_meta["knowtk/error"]` holds the same as data.',
    ]
    for tool in TOOLS:
        guide = TOOL_GUIDES.get(tool) or tool_description(tool)
        parts += ["", f"## {tool}", "", guide, "", "Arguments (no others are accepted):", ""]
        parts += _arguments(tool)
        parts += ["", "The answer's JSON Schema:", "", "```json", _json(output_schema(tool, full=True)), "```"]
    return "\n".join(parts) + "\n"
