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
    {
        "status": {"enum": ["found", "missing", "unavailable"]},
        "record": nullable({"type": "object"}),
        "coverage": COVERAGE_SCHEMA,
    }
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


def _absent(answer: dict[str, Any]) -> str:
    """A record not shown: why (a withdrawn one's status and sha256, never its content), or close ids."""
    reason, file = answer.get("reason") or {}, answer.get("file")
    if answer["status"] == "unavailable":
        lines = [f"unavailable: {reason.get('code')}" + (f" ({reason['detail']})" if reason.get("detail") else "")]
        if file is not None:
            lines.append(f"  {file['path']}: status {file['status']}, revision {file['revision']}")
            lines.append(f"  sha256 {file['sha256']}")
        return "\n".join(lines)
    lines = ["missing: no record has this id (ids are case-sensitive)"]
    lines += [
        f"  did you mean {x['id']}  {x['title'] or ''}  ({x['message']})" for x in answer.get("suggestions") or []
    ]
    lines.append("  find one by words: knowtk grep WORDS; by name: knowtk lookup NAME; every id: knowtk records")
    return "\n".join(lines)


def table(answer: dict[str, Any]) -> str:
    rec = answer.get("record")
    if rec is None:
        return _absent(answer)
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
