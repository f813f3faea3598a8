"""DataFrames of a lab run: per variant, per case, per miss, per hit. Stable columns, typed like knowtk.frames."""

from __future__ import annotations

from typing import Any

import pandas as pd

from knowtk.frames import BOOL, FLOAT, INT, OBJECT, STRING, Column, build_frame, key
from knowtk.lab.metrics import METRICS
from knowtk.lab.scored import CHECKS, ScoredRun

__all__ = ["cases_frame", "hits_frame", "metrics_frame", "misses_frame"]

_SCORES = (*METRICS, *CHECKS)


def _metric(name: str) -> Any:
    return lambda row: (row.get("metrics") or {}).get(name)


METRIC_COLUMNS: list[Column] = [
    ("variant", STRING, key("variant")),
    *((name, FLOAT, key(name)) for name in _SCORES),
    ("cases", INT, key("cases")),
    ("scored", INT, key("scored")),
    ("unscored", INT, key("unscored")),
    ("note", STRING, key("note")),
]


def metrics_frame(run: ScoredRun) -> pd.DataFrame:
    """One row per variant: the mean of each metric over the cases where it is defined."""
    notes = {v["name"]: v.get("note") or "" for v in run.variants}
    rows = [{"variant": name, "note": notes.get(name, ""), **values} for name, values in run.summary().items()]
    return build_frame(rows, METRIC_COLUMNS)


def _first_rank(row: dict[str, Any]) -> int | None:
    ranks = [e["rank"] for e in row.get("expected") or [] if e["rank"] is not None]
    return min(ranks) if ranks else None


def _replaced(row: dict[str, Any]) -> str | None:
    pairs = [f"{e['id']} → {e['counted']}" for e in row.get("expected") or [] if e["replaced"]]
    return "; ".join(pairs) or None


def _missed(row: dict[str, Any]) -> list[str]:
    k = row["k"]
    return [e["id"] for e in row.get("expected") or [] if e["rank"] is None or e["rank"] > k]


def _why(row: dict[str, Any]) -> str | None:
    parts = [f"{e['id']}: {e['why']['reason']}" for e in row.get("expected") or [] if e.get("why")]
    return "; ".join(parts) or None


CASE_COLUMNS: list[Column] = [
    ("case", STRING, key("case")),
    ("variant", STRING, key("variant")),
    ("tool", STRING, key("tool")),
    ("query", STRING, key("query")),
    ("k", INT, key("k")),
    ("status", STRING, key("status")),
    ("passed", BOOL, key("passed")),
    *((name, FLOAT, _metric(name)) for name in _SCORES),
    ("first_rank", INT, _first_rank),
    ("lookup_status", STRING, key("lookupStatus")),
    ("expected_status", STRING, key("expectedStatus")),
    ("expected", OBJECT, lambda row: [e["id"] for e in row.get("expected") or []]),
    ("replaced", STRING, _replaced),
    ("missed", OBJECT, _missed),
    ("why_not", STRING, _why),
    ("must_not_found", OBJECT, lambda row: [m["id"] for m in row.get("mustNot") or [] if m["rank"] is not None]),
    ("top", OBJECT, lambda row: [h["id"] for h in (row.get("hits") or [])[: row["k"]]]),
    ("total", INT, key("total")),
    ("method", STRING, key("method")),
    ("error", STRING, key("error")),
]


def cases_frame(run: ScoredRun, variant: str | None = None) -> pd.DataFrame:
    """One row per case and variant. ``replaced`` says which superseded expectations counted through their
    current replacement (``dec-2025-012 → dec-2026-021``); ``why_not`` the reason of each miss."""
    rows = [c for c in run.cases if variant is None or c["variant"] == variant]
    return build_frame(rows, CASE_COLUMNS)


MISS_COLUMNS: list[Column] = [
    ("case", STRING, key("case")),
    ("variant", STRING, key("variant")),
    ("query", STRING, key("query")),
    ("expected_id", STRING, key("id")),
    ("counted_id", STRING, key("counted")),
    ("replaced", BOOL, key("replaced")),
    ("grade", INT, key("grade")),
    ("rank", INT, key("rank")),
    ("k", INT, key("k")),
    ("reason", STRING, lambda row: (row.get("why") or {}).get("reason")),
    ("kind", STRING, lambda row: (row.get("why") or {}).get("kind")),
    ("rule", STRING, lambda row: (row.get("why") or {}).get("rule")),
    ("filter", STRING, lambda row: (row.get("why") or {}).get("filter")),
    ("message", STRING, lambda row: (row.get("why") or {}).get("message")),
]


def misses_frame(run: ScoredRun) -> pd.DataFrame:
    """One row per expected id that was not among a case's first k, with its why-not."""
    rows = []
    for c in run.cases:
        for e in c.get("expected") or []:
            if e["rank"] is None or e["rank"] > c["k"]:
                rows.append({"case": c["case"], "variant": c["variant"], "query": c["query"], "k": c["k"], **e})
    return build_frame(rows, MISS_COLUMNS)


HIT_COLUMNS: list[Column] = [
    ("rank", INT, key("rank")),
    ("id", STRING, key("id")),
    ("title", STRING, key("title")),
    ("score", FLOAT, key("score")),
    ("via", STRING, key("via")),
    ("store", STRING, key("store")),
    ("expected", STRING, key("expected")),
    ("grade", INT, key("grade")),
    ("must_not", BOOL, key("must_not")),
]


def hits_frame(case: dict[str, Any]) -> pd.DataFrame:
    """One case's answer: each hit, and whether (and as which expected id) it was expected or must not appear."""
    counted = {e["counted"]: e for e in case.get("expected") or []}
    banned = {m["id"] for m in case.get("mustNot") or []}
    rows = []
    for h in case.get("hits") or []:
        e = counted.get(h["id"])
        rows.append(
            {**h, "expected": e["id"] if e else None, "grade": e["grade"] if e else None, "must_not": h["id"] in banned}
        )
    return build_frame(rows, HIT_COLUMNS)
