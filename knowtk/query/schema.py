"""JSON Schema of each tool's arguments, built from the ``Param`` specs that ``validate`` applies.

The types, lengths, ranges and allowed values come from each check's
``schema`` attribute (``knowtk.query.args``), the defaults and the required
names from the ``Param``; only the wording of each argument lives here. The MCP
server's ``inputSchema`` and the command line's options are both made from
``input_schema``, so neither can drift from what ``Store.call`` accepts.
"""

from __future__ import annotations

import copy
from typing import Any

from knowtk.query import TOOLS
from knowtk.query.args import Param

__all__ = ["ARGUMENT_DOCS", "ARGUMENT_HINTS", "argument_doc", "argument_hint", "input_schema", "param_schema"]

_DATE_BOUND = (
    "a real YYYY-MM-DD or an ISO timestamp with seconds and an explicit offset (Z or +HH:MM); bounds are inclusive"
)
_UNTIL = f"Upper bound: {_DATE_BOUND}, and a date-only value includes its whole UTC day."
_SINCE = f"Lower bound: {_DATE_BOUND}."
_PAGE_LIMIT = "Rows per page."
_OFFSET = "Rows to skip; follow nextOffset with unchanged filters and compare snapshot across pages."
_SCOPE = "Folder prefix or list of them (e.g. 'team/decisions'); only records under those folders. Default: the store."
_DATED_KIND = (
    "Exact record type (decision, event, meeting ...), not the page/claim/relationship kind of knowledge_grep; "
    "omit for every dated type."
)
_ENTITY = "Entity id: records naming it in entities, owner, relationship endpoints or their source; not co-mentions."

_FILTERS = {
    "kind": "Record kind(s): page, claim, relationship.",
    "type": "Ontology type(s); a type also matches its aliases from knowtk.yaml (adr finds decision).",
    "tag": "Exact, case-sensitive tag(s); a record must carry every one.",
    "lifecycle": (
        "active (default) searches current records and also matches the superseded wording they replaced; "
        "superseded returns superseded records directly; all returns both, without following replacements."
    ),
    "timeField": "Date field the since/until bounds apply to (occurred_at when a bound is given without it).",
    "since": _SINCE,
    "until": _UNTIL,
    "scope": _SCOPE,
}

ARGUMENT_DOCS: dict[str, dict[str, str]] = {
    "knowledge_grep": {
        "query": (
            "1-64 word tokens. Punctuation separates tokens; OR, NOT, quotes and column syntax are plain words. "
            "Case- and accent-insensitive, no stemming or prefix matching."
        ),
        "mode": "all: every token must match (default); any: one is enough; phrase: adjacent, in order, in one field.",
        **_FILTERS,
        "limit": _PAGE_LIMIT,
        "offset": _OFFSET,
    },
    "knowledge_lookup": {
        "query": "An exact id (case-sensitive), full title or alias (case and spacing normalized, never fuzzy).",
        "lifecycle": "active (default), superseded, or all.",
        "scope": _SCOPE,
    },
    "knowledge_records": {**_FILTERS, "limit": _PAGE_LIMIT, "offset": _OFFSET},
    "knowledge_record": {"id": "The record id (case-sensitive)."},
    "knowledge_timeline": {
        "entity": _ENTITY,
        "kind": _DATED_KIND,
        "timeField": "occurred_at (default), recorded_at, updated_at or due_at; unknown dates stay absent.",
        "since": _SINCE,
        "until": _UNTIL,
        "order": "asc (oldest first, default) or desc.",
        "eligibility": "active (default), or include_inactive to add superseded and expired records (never withdrawn).",
        "includeSources": "Add deduplicated summaries of the rows' sources (within a 24 KiB budget).",
        "group": "source, with entity: one row per dated source connected to that entity (occurrence time only).",
        "limit": _PAGE_LIMIT,
        "offset": _OFFSET,
    },
    "knowledge_chronicle_day": {
        "date": "The day, YYYY-MM-DD, in timeZone.",
        "week": "The Monday-Sunday week holding date instead of the day.",
        "timeZone": "IANA time zone name for the day's boundaries and local times (default UTC).",
        "kind": _DATED_KIND,
        "entity": _ENTITY,
    },
    "knowledge_chronicle_since": {
        "since": _SINCE,
        "until": _UNTIL,
        "kind": _DATED_KIND,
        "entity": _ENTITY,
        "limit": _PAGE_LIMIT,
        "offset": _OFFSET,
    },
    "knowledge_chronicle_last_seen": {
        "entity": _ENTITY,
        "occurredOnOrBefore": f"Latest moment to consider (default now): {_DATE_BOUND}.",
    },
    "knowl_query": {
        "id": (
            "Fetch exactly this item whole (full content, reasoning, alternatives, provenance, timestamps); use it "
            "for a result marked truncated. Also reads an item a linked store shares (marked foreign). When set, "
            "every other argument except includeEvidence is ignored."
        ),
        "asOf": f"Items valid at this moment instead of now: {_DATE_BOUND}. An unparseable value is refused.",
        "tags": "Only items carrying all of these tags.",
        "limit": "Results per store (default 3).",
        "query": (
            "The words that name the subject, every one of them and nothing else (no filler, no whole sentence), "
            "e.g. 'sqlite wal checkpoint corruption durability'."
        ),
        "repos": "Workspace only: only items owned by these linked stores (wins over scope).",
        "scope": (
            "Workspace only: local = this store alone, bare list; workspace = every sharing store, keyed by store. "
            "Default: everything, keyed by store only when a linked store contributed."
        ),
        "status": "active (default), superseded or all.",
        "explain": "Add ranking explanations; omit for compact results.",
        "category": "Category hint; omit unless certain. A miss is retried once without it (see categoryRetry).",
        "includeEvidence": "Add the linked evidence; omit for compact results.",
    },
}


_SHA_DOC = (
    "The sha256 you read (knowledge_record's record.sha256, a row's sha256). Required for every operation on an "
    "existing record; a file that changed since is refused (publication_conflict), never merged."
)
ARGUMENT_DOCS["knowledge_mutation"] = {
    "operation": "create, update, supersede, withdraw or reinstate (reinstate is the only way to undo a withdrawal).",
    "id": "The record's id (for create: the new id).",
    "expectedSha256": _SHA_DOC,
    "record": (
        "create/update: the fields, and body for the Markdown body. In update a key given replaces it, null removes "
        "it, every other key is kept byte for byte. supersede: the fields of the replacing record to create."
    ),
    "by": "supersede: the replacing id (an active record, or the one created from record).",
    "reason": "Required for withdraw and reinstate; kept in the receipt.",
    "path": "create: where in the store (a relative .md path). Default: the type's folder.",
    "actor": "Who makes the change, as the receipt records it. Default: the server's OS user.",
    "restate": "update: raise revision by one (a restatement).",
    "checkpoint": "Commit the written files to Git (the store must be inside a Git work tree).",
}
ARGUMENT_DOCS["knowledge_history"] = {
    "id": "One record's receipts (and, in a Git work tree, its commits). Default: every receipt.",
    "since": _SINCE,
    "until": _UNTIL,
    "limit": _PAGE_LIMIT,
    "offset": "Entries to skip; follow nextOffset.",
}
# The listing's short form: only what an agent needs beyond the schema's own types, ranges and allowed
# values (an argument they say all about has no hint). The full wording above serves the command line's
# help and the agents guide (knowtk://docs/agents).
_HINT_UNTIL = "inclusive; a date covers its UTC day"
_HINT_FILTERS = {
    "type": "ontology type or alias",
    "tag": "exact tags, all required",
    "timeField": "date field for since/until",
    "since": "inclusive",
    "until": _HINT_UNTIL,
    "scope": "folder prefixes",
}
_HINT_PAGE = {"offset": "nextOffset of the previous page"}
_HINT_DATED = {"entity": "entity id", "kind": "exact record type", "since": "inclusive", "until": _HINT_UNTIL}
ARGUMENT_HINTS: dict[str, dict[str, str]] = {
    "knowledge_grep": {"query": "words as written", **_HINT_FILTERS, **_HINT_PAGE},
    "knowledge_lookup": {"query": "exact id, full title or alias", "scope": "folder prefixes"},
    "knowledge_records": {**_HINT_FILTERS, **_HINT_PAGE},
    "knowledge_record": {},
    "knowledge_timeline": {**_HINT_DATED, "group": "source, with entity: a row per dated source", **_HINT_PAGE},
    "knowledge_chronicle_day": {
        "date": "in timeZone",
        "week": "its Monday-Sunday week",
        "timeZone": "IANA name",
        "entity": "entity id",
        "kind": "exact record type",
    },
    "knowledge_chronicle_since": {**_HINT_DATED, **_HINT_PAGE},
    "knowledge_chronicle_last_seen": {"entity": "entity id", "occurredOnOrBefore": "default now"},
    "knowl_query": {
        "id": "read this item whole; other arguments but includeEvidence ignored",
        "asOf": "items valid then",
        "tags": "all of these",
        "limit": "per store",
        "query": "the words that name the subject, e.g. 'sqlite wal checkpoint corruption durability'",
        "repos": "linked stores that own the items",
        "scope": "linked stores: local alone, or workspace keyed by store",
        "category": "a hint; omit unless certain",
    },
}


def argument_doc(tool: str, name: str) -> str:
    """An argument's full description: the wording above, or the ``Param``'s own ``doc`` for any other tool."""
    if tool in ARGUMENT_DOCS:
        return ARGUMENT_DOCS[tool][name]
    return next(p.doc for p in TOOLS[tool].params if p.name == name)


def argument_hint(tool: str, name: str) -> str | None:
    """An argument's description in the listing: its short hint, or the ``Param``'s ``doc`` for any other tool."""
    if tool in ARGUMENT_HINTS:
        return ARGUMENT_HINTS[tool].get(name)
    return argument_doc(tool, name)


def param_schema(tool: str, p: Param, *, full: bool = True) -> dict[str, Any]:
    """The JSON Schema of one argument: its check's schema, its default, and its description (or its hint)."""
    schema = getattr(p.check, "schema", None)
    if not isinstance(schema, dict):
        raise TypeError(f"{tool}.{p.name}: its check carries no schema (use a factory of knowtk.query.args)")
    out = copy.deepcopy(schema)
    if p.default is not None:
        out["default"] = p.default
    described = argument_doc(tool, p.name) if full else argument_hint(tool, p.name)
    if described:
        out["description"] = described
    return out


def input_schema(tool: str, *, full: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``tool``'s arguments (camelCase, as ``Store.call`` takes them).

    Each argument is described by its short hint, as the MCP listing carries it; ``full`` gives the
    complete wording (the command line's help, the agents guide).
    """
    if tool in TOOLS:
        params = TOOLS[tool].params
    else:
        from knowtk.query.mutations import WRITE_TOOLS  # the write layer: only for a write tool's schema

        params = WRITE_TOOLS[tool].params
    return {
        "type": "object",
        "properties": {p.name: param_schema(tool, p, full=full) for p in params},
        "required": [p.name for p in params if p.required],
        "additionalProperties": False,
    }
