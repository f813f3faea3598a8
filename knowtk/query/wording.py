"""Wording several tools share: argument descriptions, and the rules an agent reads in short and in full.

Each tool's own wording lives in its module (``knowtk.query.tools``); what two or more tools say alike
is written once here, so that they cannot drift apart.
"""

from __future__ import annotations

__all__ = [
    "AGENT_AS_GREP",
    "AGENT_AS_TIMELINE",
    "AGENT_GUIDE",
    "AGENT_PAGING",
    "AGENT_ROWS",
    "DATED_KIND",
    "DATE_BOUND",
    "ENTITY",
    "GUIDE_DATED_KIND",
    "GUIDE_DATES",
    "GUIDE_ENTITY",
    "GUIDE_PAGING",
    "GUIDE_ROWS",
    "HINT_DATED",
    "HINT_FILTERS",
    "HINT_PAGE",
    "HINT_UNTIL",
    "OFFSET",
    "PAGE_LIMIT",
    "SCOPE",
    "SINCE",
    "UNTIL",
]

# -- argument descriptions (the command line's help, the agents guide) ------------------------------

DATE_BOUND = (
    "a real YYYY-MM-DD or an ISO timestamp with seconds and an explicit offset (Z or +HH:MM); bounds are inclusive"
)
UNTIL = f"Upper bound: {DATE_BOUND}, and a date-only value includes its whole UTC day."
SINCE = f"Lower bound: {DATE_BOUND}."
PAGE_LIMIT = "Rows per page."
OFFSET = "Rows to skip; follow nextOffset with unchanged filters and compare snapshot across pages."
SCOPE = "Folder prefix or list of them (e.g. 'team/decisions'); only records under those folders. Default: the store."
DATED_KIND = (
    "Exact record type (decision, event, meeting ...), not the page/claim/relationship kind of knowledge_grep; "
    "omit for every dated type."
)
ENTITY = "Entity id: records naming it in entities, owner, relationship endpoints or their source; not co-mentions."

# -- the listing's short hints: only what an agent needs beyond the schema's types and allowed values --

HINT_UNTIL = "inclusive; a date covers its UTC day"
HINT_FILTERS = {
    "type": "ontology type or alias",
    "tag": "exact tags, all required",
    "timeField": "date field for since/until",
    "since": "inclusive",
    "until": HINT_UNTIL,
    "scope": "folder prefixes",
}
HINT_PAGE = {"offset": "nextOffset of the previous page"}
HINT_DATED = {"entity": "entity id", "kind": "exact record type", "since": "inclusive", "until": HINT_UNTIL}

# -- the MCP listing's rules in short form (a test holds the listing to its byte budget) ---------------

AGENT_PAGING = (
    "Paging: repeat with offset=nextOffset and the same arguments; a changed snapshot means the store changed: "
    "start again. coverage.complete false: files that failed validation are left out (issueCount)."
)
AGENT_ROWS = "Rows are short: knowledge_record reads one whole (compare sha256)."
AGENT_AS_GREP = "Paging and coverage as knowledge_grep."
AGENT_AS_TIMELINE = "kind, entity and dates as knowledge_timeline."
AGENT_GUIDE = "Detail: resource knowtk://docs/agents."

# -- the agents guide: the same rules in full ----------------------------------------------------------

GUIDE_PAGING = (
    "Pages: follow nextOffset with the same arguments; if snapshot changes between pages the store changed, "
    "so start again. coverage.complete false means some files failed validation and are left out (issueCount, "
    "first few issues listed); it does not make the rows wrong."
)
GUIDE_ROWS = (
    "Rows are compact (id, title, kind, type, lifecycle, path, revision, sha256, a short snippet or summary); "
    "call knowledge_record with an id for the whole record, and compare sha256 before relying on a later read."
)
GUIDE_DATES = (
    "Dates: bounds are a real YYYY-MM-DD or an ISO timestamp with seconds and an explicit offset; bounds are "
    "inclusive and a date-only upper bound covers its whole UTC day. Date-only records match any range they "
    "overlap without claiming an instant. Unknown dates stay absent: recording time never stands in for "
    "occurrence. Resolve relative dates ('last Tuesday') yourself before calling."
)
GUIDE_DATED_KIND = (
    "kind here is the exact record type (decision, event, meeting ...), not the page/claim/relationship kind of "
    "knowledge_grep; kind 'claim' does not select all claims."
)
GUIDE_ENTITY = (
    "An entity filter follows explicit entities, owner, relationship endpoints and sources, not co-mentions; "
    "a mention does not prove attendance, and no row does not prove absence."
)
