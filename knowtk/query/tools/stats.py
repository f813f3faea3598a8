"""knowledge_stats: how many records the store holds, by kind, type, lifecycle and availability.

The whole tool is this module (its answer, its frame, its command and what an agent reads of it): the
example docs/extending.md walks through.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from knowtk.frames import BOOL, INT, STRING, key
from knowtk.query.args import FOLDERS, Param, with_schema
from knowtk.query.common import coverage
from knowtk.query.registry import Tool
from knowtk.query.views import COVERAGE_SCHEMA, footer, obj, table_columns
from knowtk.query.wording import SCOPE
from knowtk.snapshot.facets import in_folder

if TYPE_CHECKING:
    from knowtk.engine.engine import Engine
    from knowtk.query.citations import EvidenceVerifier

__all__ = ["TOOL", "stats"]

ORDER = 100
PARAMS = (Param("scope", with_schema(lambda name, v: v, FOLDERS), doc=SCOPE),)


def stats(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    """One row per (kind, type, lifecycle, available) with its count, largest first; ``total`` counts them all.

    Every record the store holds counts, withdrawn ones too (a count is no search), under the lifecycle the
    store gives it now. ``available`` is false for a record the other tools do not answer (withdrawn, or
    a broken chain or dependency: ``knowledge_record`` says why); a file that failed validation is no
    record at all (``coverage`` names it).
    """
    snap = engine.snapshot()
    scope = snap.normalize_scope(args["scope"])
    # read from the records' facets: a new process counts a stored snapshot without building its records
    lifecycle, unavailable = snap.lifecycle, snap.unavailable
    counts = Counter(
        (kind, type_, lifecycle[rid], rid not in unavailable)
        for rid, folder, kind, type_ in snap.facets().scalars()
        if in_folder(folder, scope)
    )
    rows = [
        {"kind": kind, "type": type_, "lifecycle": lifecycle, "available": available, "count": n}
        for (kind, type_, lifecycle, available), n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    return {
        "rows": rows,
        "total": sum(counts.values()),
        "snapshot": snap.fingerprint(scope),
        "coverage": coverage(snap, scope),
    }


def table(answer: dict[str, Any]) -> str:
    cols = [
        ("count", lambda x: x["count"], 8),
        ("kind", lambda x: x["kind"], 14),
        ("type", lambda x: x["type"], 24),
        ("lifecycle", lambda x: x["lifecycle"] + ("" if x["available"] else " (unavailable)"), 26),
    ]
    head = f"{answer['total']} record(s)  (snapshot {answer['snapshot']})"
    return "\n".join([head, *table_columns(answer["rows"], cols), *footer(answer)])


_ROW = obj(
    {
        "kind": {"type": "string"},
        "type": {"type": "string"},
        "lifecycle": {"type": "string"},
        "count": {"type": "integer"},
    }
)

TOOL = Tool(
    "knowledge_stats",
    PARAMS,
    stats,
    summary="how many records, by kind, type and lifecycle",
    description=(
        "How many records the store holds, one row per kind, type, lifecycle and available (false: withdrawn or "
        "broken, the other tools do not answer it), largest first; total counts them all. A count, not a search: "
        "list them with knowledge_records."
    ),
    hints={"scope": "folder prefixes"},
    output=obj(
        {
            "rows": {"type": "array", "items": _ROW},
            "total": {"type": "integer"},
            "snapshot": {"type": "string"},
            "coverage": COVERAGE_SCHEMA,
        }
    ),
    columns=(
        ("kind", STRING, key("kind")),
        ("type", STRING, key("type")),
        ("lifecycle", STRING, key("lifecycle")),
        ("available", BOOL, key("available")),
        ("count", INT, key("count")),
    ),
    rows=lambda answer: answer["rows"],
    table=table,
    serve=True,
    example={},
)
