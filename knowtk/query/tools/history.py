"""knowledge_history: the receipts of the changes made through knowtk, newest first (and a record's Git commits)."""

from __future__ import annotations

from typing import Any

from knowtk.frames import RECEIPT, receipt_rows
from knowtk.query.args import MAX_PAGE_OFFSET, Param, bound, integer, text
from knowtk.query.registry import Tool
from knowtk.query.views import NINT
from knowtk.query.wording import AGENT_PAGING, HINT_PAGE, HINT_UNTIL, PAGE_LIMIT, SINCE, UNTIL

__all__ = ["PARAMS", "TOOL"]

ORDER = 210
PARAMS = (
    Param("id", text(128), doc="One record's receipts (and, in a Git work tree, its commits). Default: every receipt."),
    Param("since", bound(upper=False), doc=SINCE),
    Param("until", bound(upper=True), doc=UNTIL),
    Param("limit", integer(1, 1000), 20, doc=PAGE_LIMIT),
    Param("offset", integer(0, MAX_PAGE_OFFSET), 0, doc="Entries to skip; follow nextOffset."),
)


def table(answer: dict[str, Any]) -> str:
    shown = len(answer["receipts"])
    lines = [f"{answer['total']} receipt(s); showing {shown} from {answer['offset']}, newest first"]
    for rc in answer["receipts"]:
        ids = ", ".join(x["id"] for x in rc["records"])
        state = "indexed" if rc["indexed"] else "pending"
        lines.append(f"  {rc['at']}  {rc['operation']:<9} {ids}  by {rc['actor']}  ({rc['id']}, {state})")
        if rc.get("reason"):
            lines.append(f"      reason: {rc['reason']}")
    if answer.get("nextOffset") is not None:
        lines.append(f"more: --offset {answer['nextOffset']}")
    return "\n".join(lines)


TOOL = Tool(
    "knowledge_history",
    PARAMS,
    "knowtk.query.mutations:run_history",
    summary="receipts of the changes made through knowtk, newest first",
    description=(
        "Receipts of the changes made through knowtk, newest first; with id, one record's (and its Git commits). "
        "Follow nextOffset."
    ),
    guide=(
        "Receipts of the changes made through knowledge_mutation, newest first (of one record with id, with its "
        f"Git commits when the store is in a work tree). It reads the change log and changes nothing. {AGENT_PAGING}"
    ),
    hints={"id": "one record's receipts", "since": "inclusive", "until": HINT_UNTIL, **HINT_PAGE},
    output={
        "type": "object",
        "properties": {
            "receipts": {"type": "array", "items": {"type": "object"}},
            "total": {"type": "integer"},
            "nextOffset": NINT,
        },
        "required": [],
    },
    compact=lambda answer: answer,
    columns=tuple(RECEIPT),
    rows=lambda answer: receipt_rows(answer["receipts"]),
    positional=("id",),
    table=table,
    # read outside a query's transaction (the receipts, not the snapshot); it changes nothing, so a read-only
    # MCP server offers it (TOOLS.read_only)
    writes=True,
)
