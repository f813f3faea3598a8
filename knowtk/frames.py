"""DataFrames of results: one row per hit, row or candidate, with stable column names and dtypes.

Each tool declares its columns once (``Tool.columns``: name, dtype, how to read it from a row of the
dict; the sets several tools share are here), so an empty result has the same columns and dtypes as a
full one: strings are ``string``, counts ``Int64``, scores ``Float64``, flags
``boolean``, instants ``datetime64[us, UTC]`` (microseconds hold every valid year, 0001-9999), and lists stay lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported by build_frame, so importing knowtk does not import pandas
    import pandas as pd

__all__ = [
    "BOOL",
    "DATE_COLUMNS",
    "FLOAT",
    "INT",
    "OBJECT",
    "RECEIPT",
    "STRING",
    "SUMMARY",
    "TIME",
    "TIMELINE",
    "Column",
    "build_frame",
    "key",
    "listed",
    "nested",
    "receipt_rows",
]

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
    """The rows as a DataFrame of these columns: a ``knowtk.tidy.TidyFrame``, which reads well in a notebook."""
    import pandas as pd

    from knowtk.tidy import TidyFrame  # it needs pandas: imported with the first frame, as pandas is

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
    return TidyFrame(data, columns=[c[0] for c in columns])


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

DATE_COLUMNS: list[Column] = [
    (name, TIME, nested("dates", name, "start")) for name in ("occurred_at", "recorded_at", "updated_at", "due_at")
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


def receipt_rows(receipts: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
