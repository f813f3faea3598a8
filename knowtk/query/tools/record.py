"""knowledge_record: one record whole, with its lifecycle, supersession links, chain and every evidence locator."""

from __future__ import annotations

from typing import Any

from knowtk.frames import DATE_COLUMNS, OBJECT, STRING, SUMMARY, key, listed, nested
from knowtk.query.args import Param, text
from knowtk.query.registry import Tool
from knowtk.query.views import COVERAGE_SCHEMA, nullable, obj, readable

__all__ = ["PARAMS", "TOOL"]

ORDER = 40
PARAMS = (Param("id", text(200), required=True, doc="The record id (case-sensitive)."),)


OUTPUT = obj(
    {"status": {"enum": ["found", "missing"]}, "record": nullable({"type": "object"}), "coverage": COVERAGE_SCHEMA}
)

COLUMNS = (
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
)


def table(answer: dict[str, Any]) -> str:
    rec = answer.get("record")
    if rec is None:
        return f"{answer['status']}" + (f": {answer['reason']}" if answer.get("reason") else "")
    c = rec["citation"] or {}
    lines = [
        f"{rec['id']}  {rec['title'] or ''}",
        f"  {rec['kind']}/{rec['type']}, {rec['lifecycle']}, revision {rec['revision']}"
        + (f", superseded by {rec['supersededBy']}" if rec.get("supersededBy") else ""),
        f"  {rec['path']}:{c.get('lineStart')}-{c.get('lineEnd')}  sha256 {rec['sha256']}",
    ]
    for name, d in (rec.get("dates") or {}).items():
        lines.append(f"  {name}: {d['value']}")
    for e in rec.get("evidence") or []:
        state = "verified" if e.get("verified") else f"not verified: {e.get('reason')}"
        lines.append(f"  evidence: {e.get('path')}:{e.get('lineStart')}-{e.get('lineEnd')} ({state})")
    lines += ["", (rec.get("body") or "").strip()]
    return "\n".join(lines)


TOOL = Tool(
    "knowledge_record",
    PARAMS,
    "knowtk.query.inventory:one_record",
    summary="one record, whole",
    description="One record whole: body, lifecycle, chain, dates, entities, evidence, citations.",
    guide=(
        "One record whole: its body, lifecycle, supersession links and chain, dates, entities, every verified "
        "evidence locator and its citation (path, revision, sha256, lines). status is found or missing. Use it to "
        "read a row of another tool in full (the complete hit), or when evidence was truncated."
    ),
    hints={},
    output=OUTPUT,
    compact=readable,
    columns=COLUMNS,
    rows=lambda answer: [answer["record"]] if answer["record"] else [],
    positional=("id",),
    table=table,
    serve=True,
    example={"id": "dec-2026-021"},
)
