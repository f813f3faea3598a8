"""knowledge_grep: keyword search (FTS5, BM25 with title 8 / aliases 6 / body 1) with filters and superseded wording.

The search itself is ``knowtk.query.grep.grep``; this module declares the tool around it.
"""

from __future__ import annotations

from typing import Any

from knowtk.frames import BOOL, FLOAT, INT, OBJECT, STRING, SUMMARY, key, listed, nested
from knowtk.query.args import Param, choice, integer, text
from knowtk.query.common import FILTER_PARAMS
from knowtk.query.registry import Tool
from knowtk.query.validity import HINT_VALID, VALID_AT
from knowtk.query.views import (
    COVERAGE_SCHEMA,
    INDEX_SCHEMA,
    NINT,
    NSTR,
    PAGE_SCHEMA,
    RECORD_KEYS,
    RECORD_SCHEMA,
    SNIPPET_CHARS,
    coverage_summary,
    footer,
    nullable,
    obj,
    page,
    pick,
    short,
    wrapped,
)
from knowtk.query.wording import (
    AGENT_GUIDE,
    AGENT_PAGING,
    AGENT_ROWS,
    GUIDE_PAGING,
    GUIDE_ROWS,
    HINT_FILTERS,
    HINT_PAGE,
    OFFSET,
    PAGE_LIMIT,
)

__all__ = ["MAX_OFFSET", "MAX_TOKENS", "PARAMS", "TOOL"]

ORDER = 10
MAX_TOKENS = 64
MAX_OFFSET = 500
PARAMS = (
    Param(
        "query",
        text(500),
        required=True,
        doc=(
            "1-64 word tokens. Punctuation separates tokens; OR, NOT, quotes and column syntax are plain words. "
            "Case- and accent-insensitive, no stemming or prefix matching."
        ),
    ),
    Param(
        "mode",
        choice("all", "any", "phrase"),
        "all",
        doc="all: every token must match (default); any: one is enough; phrase: adjacent, in order, in one field.",
    ),
    *FILTER_PARAMS,
    VALID_AT,
    Param("limit", integer(1, 50), 20, doc=PAGE_LIMIT),
    Param("offset", integer(0, MAX_OFFSET), 0, doc=OFFSET),
)


def _hit(hit: dict[str, Any]) -> dict[str, Any]:
    snip = hit.get("snippet") or {}
    via = hit.get("via")
    return {
        **pick(hit, RECORD_KEYS),
        "score": hit.get("score"),
        "matches": hit.get("matches"),
        "snippet": {
            "text": short(snip.get("text", "")),
            "lineStart": snip.get("lineStart"),
            "lineEnd": snip.get("lineEnd"),
        },
        "via": None if via is None else pick(via, ("id", "revision", "title")),
    }


def compact(answer: dict[str, Any]) -> dict[str, Any]:
    hits = [_hit(h) for h in answer["hits"]]
    out = {
        "hits": hits,
        **page(answer),
        "index": answer.get("index"),
        "coverage": coverage_summary(answer.get("coverage")),
    }
    if answer.get("why"):  # no hit, or scores that say nothing: the one line that says why
        out["why"] = answer["why"]
    return out


OUTPUT = obj(
    {
        "hits": {
            "type": "array",
            "items": obj(
                {
                    **RECORD_SCHEMA,
                    "score": nullable({"type": "number"}),
                    "matches": {"type": "array", "items": {"type": "string"}},
                    "snippet": obj(
                        {"text": {"type": "string", "maxLength": SNIPPET_CHARS}, "lineStart": NINT, "lineEnd": NINT}
                    ),
                    "via": nullable(obj({"id": {"type": "string"}, "revision": {"type": "integer"}, "title": NSTR})),
                }
            ),
        },
        **PAGE_SCHEMA,
        "index": INDEX_SCHEMA,
        "coverage": COVERAGE_SCHEMA,
        "why": {"type": "string"},
    },
    required=("hits", *PAGE_SCHEMA, "index", "coverage"),
)

COLUMNS = (
    ("rank", INT, key("_rank")),
    *SUMMARY,
    ("score", FLOAT, key("score")),
    ("matches", OBJECT, listed("matches")),
    ("snippet", STRING, nested("snippet", "text")),
    ("snippet_field", STRING, nested("snippet", "field")),
    ("snippet_start", INT, nested("snippet", "start")),
    ("snippet_end", INT, nested("snippet", "end")),
    ("line_start", INT, nested("snippet", "lineStart")),
    ("line_end", INT, nested("snippet", "lineEnd")),
    ("match_located", BOOL, nested("snippet", "matchLocated")),
    ("citation_line_start", INT, nested("citation", "lineStart")),
    ("citation_line_end", INT, nested("citation", "lineEnd")),
    ("evidence", OBJECT, listed("evidence")),
    ("evidence_truncated", BOOL, key("evidenceTruncated")),
    ("attribution", STRING, key("attribution")),
    ("origin", STRING, key("origin")),
    ("via_id", STRING, nested("via", "id")),
    ("via_revision", INT, nested("via", "revision")),
    ("via_title", STRING, nested("via", "title")),
    ("via_path", STRING, nested("via", "path")),
    ("via_sha256", STRING, nested("via", "sha256")),
)


def rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**hit, "_rank": answer["offset"] + i + 1} for i, hit in enumerate(answer["hits"])]


def table(answer: dict[str, Any]) -> str:
    if answer["index"]["state"] != "ready":
        return "\n".join([f"index unavailable: {answer['index'].get('error', 'retry')}", *footer(answer)])
    shown = len(answer["hits"])
    lines = [f"{answer['total']} hit(s); showing {shown} from {answer['offset']}  (snapshot {answer['snapshot']})"]
    if answer.get("why"):
        lines.append(f"why: {answer['why']}")
    for i, hit in enumerate(answer["hits"], answer["offset"] + 1):
        # a replacement has no score of its own: the column stays empty, the line under it says why it is here
        score = "  -  " if hit["score"] is None else f"{hit['score']:.3f}"
        where = f"{hit['path']}:{hit['citation']['lineStart']}-{hit['citation']['lineEnd']}"
        lines.append(f"{i:>3}. [{score}] {hit['id']}  {hit['title'] or ''}  ({where})")
        if hit["via"]:
            via = hit["via"]
            lines.append(
                f"       current record; matched via superseded {via['id']} (r{via['revision']}): {via['title']}"
            )
        lines.append(wrapped(hit["snippet"]["text"], "       "))
    return "\n".join(lines + footer(answer))


TOOL = Tool(
    "knowledge_grep",
    PARAMS,
    "knowtk.query.why:grep",
    summary="keyword search",
    description=(
        "Keyword search (BM25; title counts most). mode all needs every word, any one, phrase them adjacent. "
        "Ignores case and accents; no stemming or prefixes. Filters apply before ranking. lifecycle active also "
        "matches superseded wording and returns the current record (via names the earlier one, score null, after "
        "direct hits). Scores compare only within one query. Ranked search never proves absence: use "
        "knowledge_records. index.state unavailable with total null is a failed search: retry, or use "
        f"lookup/records. {AGENT_ROWS} {AGENT_PAGING} {AGENT_GUIDE}"
    ),
    guide=(
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
        "retry, or use knowledge_lookup / knowledge_records, which do not need the index. An answer with no hit, "
        "or whose every score is near 0, carries why: one line saying whether any record holds the words and which "
        "rule (lifecycle, a dead-end chain, a filter) left them out, or that the words are in most records "
        f"and rank nothing. {GUIDE_ROWS} {GUIDE_PAGING}"
    ),
    hints={"query": "words as written", **HINT_FILTERS, **HINT_VALID, **HINT_PAGE},
    output=OUTPUT,
    compact=compact,
    columns=COLUMNS,
    rows=rows,
    command="grep",
    positional=("query",),
    table=table,
    serve=True,
    example={"query": "vector index"},
)
