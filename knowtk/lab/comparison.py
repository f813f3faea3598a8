"""Two variants (or two runs) side by side, one row per case, the cases that changed first."""

from __future__ import annotations

from typing import Any

import pandas as pd

from knowtk.errors import InvalidArgument
from knowtk.frames import BOOL, FLOAT, INT, OBJECT, STRING, Column, build_frame, key
from knowtk.lab.metrics import METRICS
from knowtk.lab.scored import CHECKS, ScoredRun

__all__ = ["CHANGES", "compare", "compare_cases"]

_SCORES = (*METRICS, *CHECKS)
#: ``change`` values, in the order a comparison lists them (changed cases first).
CHANGES = ("worse", "mixed", "better", "reordered", "unscored", "new", "removed", "same")


def _pick(run: ScoredRun, name: str | None, fallback: int, argument: str) -> str:
    names = run.variant_names
    if name is None:
        if len(names) <= fallback:
            raise InvalidArgument(argument, "the run has one variant: name the other run or variant", allowed=names)
        return names[fallback]
    if name not in names:
        raise InvalidArgument(argument, f"the run has no variant {name!r}", allowed=names, value=name)
    return name


def compare_cases(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """One case under two settings: each metric on both sides, its delta, and what changed."""
    some = right or left
    assert some is not None
    row: dict[str, Any] = {"case": some["case"], "tool": some["tool"]}
    row["query_left"] = left["query"] if left else None
    row["query_right"] = right["query"] if right else None
    deltas = []
    for name in _SCORES:
        a = left["metrics"].get(name) if left and left["status"] == "ok" else None
        b = right["metrics"].get(name) if right and right["status"] == "ok" else None
        row[f"{name}_left"], row[f"{name}_right"] = a, b
        row[f"{name}_delta"] = b - a if a is not None and b is not None else None
        if a is not None and b is not None and b != a:
            deltas.append(b - a)
    row["rank_left"], row["rank_right"] = _first_rank(left), _first_rank(right)
    row["top_left"] = _top(left)
    row["top_right"] = _top(right)
    if left is None:
        change = "new"
    elif right is None:
        change = "removed"
    elif left["status"] != "ok" or right["status"] != "ok":
        change = "unscored"
    elif deltas and all(d > 0 for d in deltas):
        change = "better"
    elif deltas and all(d < 0 for d in deltas):
        change = "worse"
    elif deltas:
        change = "mixed"
    elif row["top_left"] != row["top_right"] or row["rank_left"] != row["rank_right"]:
        change = "reordered"
    else:
        change = "same"
    row["change"], row["changed"] = change, change != "same"
    return row


def _first_rank(case: dict[str, Any] | None) -> int | None:
    if not case:
        return None
    ranks = [e["rank"] for e in case.get("expected") or [] if e["rank"] is not None]
    return min(ranks) if ranks else None


def _top(case: dict[str, Any] | None) -> list[str]:
    return [h["id"] for h in (case.get("hits") or [])[: case["k"]]] if case else []


COLUMNS: list[Column] = [
    ("case", STRING, key("case")),
    ("tool", STRING, key("tool")),
    ("change", STRING, key("change")),
    ("changed", BOOL, key("changed")),
    ("query_left", STRING, key("query_left")),
    ("query_right", STRING, key("query_right")),
    ("rank_left", INT, key("rank_left")),
    ("rank_right", INT, key("rank_right")),
    *((f"{name}_{side}", FLOAT, key(f"{name}_{side}")) for name in _SCORES for side in ("left", "right", "delta")),
    ("top_left", OBJECT, key("top_left")),
    ("top_right", OBJECT, key("top_right")),
]


def compare(
    before: ScoredRun,
    after: ScoredRun | None = None,
    *,
    left: str | None = None,
    right: str | None = None,
) -> pd.DataFrame:
    """Cases side by side: variant ``left`` against ``right`` of one run, or of ``before`` against ``after``.

    With one run, ``left``/``right`` default to its first two variants. With two runs (before and
    after an edit of the store, say), they default to the first variant of each. Rows are ordered
    changed first (worse, mixed, better, reordered, ...), by the size of the nDCG@k change, then in
    the gold set's order; ``*_delta`` is right minus left. ``attrs`` names both sides.
    """
    if after is None:
        after = before
        left_name = _pick(before, left, 0, "left")
        right_name = _pick(before, right, 1, "right")
    else:
        left_name = _pick(before, left, 0, "left")
        right_name = _pick(
            after, right if right is not None else (left_name if left_name in after.variant_names else None), 0, "right"
        )
    a = {c["case"]: c for c in before.cases if c["variant"] == left_name}
    b = {c["case"]: c for c in after.cases if c["variant"] == right_name}
    order = list(dict.fromkeys([*a, *b]))
    rows = [compare_cases(a.get(cid), b.get(cid)) for cid in order]
    position = {cid: i for i, cid in enumerate(order)}
    rows.sort(
        key=lambda r: (
            CHANGES.index(r["change"]),
            -abs(r["ndcg@k_delta"] or 0.0),
            position[r["case"]],
        )
    )
    frame = build_frame(rows, COLUMNS)
    frame.attrs.update(left=left_name, right=right_name)
    return frame
