"""DataFrames of results: one row per hit, row or candidate, with stable column names and dtypes.

Every builder declares its columns once (name, dtype, how to read it from a
row of the dict), so an empty result has the same columns and dtypes as a
full one: strings are ``string``, counts ``Int64``, scores ``Float64``, flags
``boolean``, instants ``datetime64[us, UTC]`` (microseconds hold every valid year, 0001-9999), and lists stay lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported by build_frame, so importing knowtk does not import pandas
    import pandas as pd

__all__ = ["FRAME_BUILDERS", "Column", "build_frame", "frame_for"]

Getter = Callable[[dict[str, Any]], Any]
Column = tuple[str, str, Getter]

STRING, INT, FLOAT, BOOL, TIME, OBJECT = "string", "Int64", "Float64", "boolean", "datetime64[us, UTC]", "object"


def key(name: str) -> Getter:
    return lambda row: row.get(name)


def nested(*path: str) -> Getter:
    def get(row: dict[str, Any]) -> Any:
        value: Any = row
        for part in path:
            if not isinstance(value, dict):
                return None
            value = value.get(part)
        return value

    return get


def listed(name: str) -> Getter:
    return lambda row: list(row.get(name) or [])


def build_frame(rows: list[dict[str, Any]], columns: list[Column]) -> pd.DataFrame:
    import pandas as pd

    data = {}
    for name, dtype, get in columns:
        values = [get(row) for row in rows]
        if dtype == TIME:
            data[name] = pd.Series(pd.to_datetime(values, utc=True, format="ISO8601")).astype(
                pd.DatetimeTZDtype("us", "UTC")
            )
        elif dtype == OBJECT:
            series = pd.Series([None] * len(values), dtype=OBJECT)
            for i, v in enumerate(values):
                series.iat[i] = v
            data[name] = series
        else:
            data[name] = pd.Series(values, dtype=dtype)
    return pd.DataFrame(data, columns=[c[0] for c in columns])


SUMMARY: list[Column] = [
    ("id", STRING, key("id")),
    ("kind", STRING, key("kind")),
    ("type", STRING, key("type")),
    ("title", STRING, key("title")),
    ("summary", STRING, key("summary")),
    ("lifecycle", STRING, key("lifecycle")),
    ("tags", OBJECT, listed("tags")),
    ("path", STRING, key("path")),
    ("revision", INT, key("revision")),
    ("sha256", STRING, key("sha256")),
]

GREP: list[Column] = [
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
]

LOOKUP: list[Column] = [
    ("status", STRING, key("_status")),
    ("matched_by", STRING, key("_matched_by")),
    *SUMMARY,
    ("aliases", OBJECT, listed("aliases")),
]

DATE_COLUMNS: list[Column] = [
    (name, TIME, nested("dates", name, "start")) for name in ("occurred_at", "recorded_at", "updated_at", "due_at")
]

RECORDS: list[Column] = [
    *SUMMARY,
    ("aliases", OBJECT, listed("aliases")),
    ("superseded_by", STRING, key("supersededBy")),
    *DATE_COLUMNS,
]

RECORD: list[Column] = [
    *SUMMARY,
    ("aliases", OBJECT, listed("aliases")),
    ("status", STRING, key("status")),
    ("superseded_by", STRING, key("supersededBy")),
    ("supersedes", OBJECT, listed("supersedes")),
    ("chain_end", STRING, nested("chain", "end")),
    ("current", STRING, nested("chain", "current")),
    *DATE_COLUMNS,
    ("entities", OBJECT, listed("entities")),
    ("owner", STRING, key("owner")),
    ("origin", STRING, key("origin")),
    ("attribution", STRING, key("attribution")),
    ("evidence", OBJECT, listed("evidence")),
    ("body", STRING, key("body")),
]


# timeline and chronicle rows: a date-only row is an interval [start, end) one UTC day long, never an instant
TIMELINE: list[Column] = [
    *SUMMARY[:6],  # id, kind, type, title, summary, lifecycle
    ("path", STRING, key("path")),
    ("time_field", STRING, key("timeField")),
    ("value", STRING, key("value")),
    ("date_only", BOOL, key("dateOnly")),
    ("start", TIME, key("start")),
    ("end", TIME, key("end")),
    ("entities", OBJECT, listed("entities")),
    ("claims", INT, key("claims")),  # group: "source" rows only
    ("links", OBJECT, listed("links")),
]


def _grep_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**hit, "_rank": data["offset"] + i + 1} for i, hit in enumerate(data["hits"])]


def _lookup_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**c, "_status": data["status"], "_matched_by": data["matchedBy"]} for c in data["candidates"]]


def _number(row: dict[str, Any]) -> float | None:
    score = row.get("score")
    return score if isinstance(score, int | float) and not isinstance(score, bool) else None


KNOWL: list[Column] = [
    ("store", STRING, key("_store")),  # the owning store when results are keyed by store, else NA
    ("rank", INT, key("_rank")),
    ("id", STRING, key("id")),
    ("title", STRING, key("title")),
    ("summary", STRING, key("summary")),
    ("score", FLOAT, _number),  # min-max across the store's page: order with it
    ("score_label", STRING, lambda row: row["score"] if isinstance(row.get("score"), str) else None),
    ("cosine", FLOAT, key("cosine")),  # absolute similarity: judge with it
    ("bm25", FLOAT, nested("explain", "bm25")),
    ("category", STRING, key("category")),
    ("status", STRING, key("status")),
    ("superseded_by", STRING, key("supersededBy")),
    ("tags", OBJECT, listed("tags")),
    ("affected_paths", OBJECT, lambda row: list(row["affectedPaths"]) if "affectedPaths" in row else None),
    ("content", STRING, key("content")),
    ("truncated", BOOL, key("truncated")),
    ("path", STRING, key("path")),
    ("revision", INT, key("revision")),
    ("sha256", STRING, key("sha256")),
    ("recorded_at", TIME, key("recordedAt")),
    ("foreign_owner", STRING, nested("foreign", "owner")),
    ("evidence", OBJECT, lambda row: list(row["evidence"]) if "evidence" in row else None),
    ("reasoning", OBJECT, key("reasoning")),
    ("alternatives", OBJECT, key("alternatives")),
]


def _knowl_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    results = data["results"]
    groups = results.items() if isinstance(results, dict) else [(None, results)]
    return [{**item, "_store": store, "_rank": i + 1} for store, items in groups for i, item in enumerate(items)]


RECEIPT: list[Column] = [
    ("source", STRING, key("_source")),  # receipt, or git (a commit)
    ("receipt", STRING, key("_receipt")),
    ("operation", STRING, key("_operation")),
    ("at", TIME, key("_at")),
    ("actor", STRING, key("_actor")),
    ("reason", STRING, key("_reason")),
    ("indexed", BOOL, key("_indexed")),
    ("checkpoint", STRING, key("_checkpoint")),
    ("id", STRING, key("id")),
    ("path", STRING, key("path")),
    ("revision_before", INT, key("revisionBefore")),
    ("revision_after", INT, key("revisionAfter")),
    ("sha256_before", STRING, key("sha256Before")),
    ("sha256_after", STRING, key("sha256After")),
]


def _receipt_rows(receipts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per record a receipt touched, the receipt's fields repeated on each."""
    rows = []
    for rc in receipts:
        if rc.get("source") == "git":  # a commit that touched the record's file (knowledge_history of one record)
            rows.append(
                {
                    "_receipt": rc["commit"],
                    "_operation": "commit",
                    "_at": rc["at"],
                    "_actor": rc["author"],
                    "_reason": rc["message"],
                    "_indexed": None,
                    "_checkpoint": rc["commit"],
                    "_source": "git",
                }
            )
            continue
        head = {f"_{k}": rc.get(k) for k in ("operation", "at", "actor", "reason", "indexed", "checkpoint")}
        head["_receipt"] = rc.get("id")
        head["_source"] = "receipt"
        rows += [{**head, **r} for r in rc.get("records") or []]
    return rows


FRAME_BUILDERS: dict[str, Callable[[dict[str, Any]], pd.DataFrame]] = {
    "knowledge_grep": lambda d: build_frame(_grep_rows(d), GREP),
    "knowledge_lookup": lambda d: build_frame(_lookup_rows(d), LOOKUP),
    "knowledge_records": lambda d: build_frame(d["rows"], RECORDS),
    "knowledge_record": lambda d: build_frame([d["record"]] if d["record"] else [], RECORD),
    "knowledge_timeline": lambda d: build_frame(d["rows"], TIMELINE),
    "knowledge_chronicle_day": lambda d: build_frame(d["rows"], TIMELINE),
    "knowledge_chronicle_since": lambda d: build_frame(d["rows"], TIMELINE),
    "knowledge_chronicle_last_seen": lambda d: build_frame(d["rows"], TIMELINE),
    "knowl_query": lambda d: build_frame(_knowl_rows(d), KNOWL),
    "knowledge_mutation": lambda d: build_frame(_receipt_rows([d["receipt"]]), RECEIPT),
    "knowledge_history": lambda d: build_frame(_receipt_rows(d["receipts"]), RECEIPT),
}


def frame_for(tool: str, data: dict[str, Any]) -> pd.DataFrame:
    return FRAME_BUILDERS[tool](data)
