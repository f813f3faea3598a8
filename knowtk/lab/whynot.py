"""Why an expected id is not among a case's first ``k``: one short reason, and explain's own answer.

The reason comes from :func:`knowtk.query.explain.explain` through ``Store.explain`` (not matched,
filtered out by which filter, excluded by which rule) or is the rank at which the id came back
below ``k``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowtk.errors import RecordNotFound
from knowtk.lab.goldset import Case
from knowtk.query.args import snake
from knowtk.store import Store

__all__ = ["DEEP_LIMIT", "explain_miss"]

DEEP_LIMIT = 50  # knowl_query's largest limit: how far a why-not looks for a record's rank
_EXPLAIN_KEYS = ("id", "status", "rule", "rank", "total", "message", "reasons", "chain")


def explain_miss(
    case: Case, store: Store, args: dict[str, Any], expected: dict[str, Any], deep: list[str] | None
) -> dict[str, Any]:
    """Why ``expected`` (one of the case's expected ids, as scored) is not among the first k.

    ``store`` is where its id is known; ``deep`` is knowl_query's ranking to :data:`DEEP_LIMIT`.
    """
    rid = expected["counted"]
    k = case.k
    if expected["rank"] is not None:  # it came back, below k
        return _why(
            f"ranked {expected['rank']} (below k={k})",
            "ranked_below_k",
            rank=expected["rank"],
            message=f"returned at rank {expected['rank']}, below the cut-off k={k}",
        )
    try:
        if case.tool == "knowledge_grep":
            grep_args = {snake(n): v for n, v in args.items() if n != "query"}
            ex = store.explain(rid, query=args["query"], **grep_args)
            return _from_explain(ex, k, shown=int(args.get("limit", 20)))
        if case.tool == "knowledge_lookup":
            return _why_lookup(store, rid, args)
        return _why_knowl(store, rid, args, k, deep or [])
    except RecordNotFound as exc:  # the id is known but not as a record here (a linked store's, say)
        return _why("unexplained", "unexplained", message=str(exc))


def _why(
    reason: str,
    kind: str,
    *,
    rank: int | None = None,
    message: str = "",
    explain: Any = None,
    rule: str | None = None,
    filter: str | None = None,
) -> dict[str, Any]:
    return {
        "reason": reason,
        "kind": kind,
        "rule": rule,
        "filter": filter,
        "rank": rank,
        "message": message,
        "explain": explain,
    }


def _from_explain(ex: dict[str, Any], k: int, *, shown: int) -> dict[str, Any]:
    """A grep explain() answer as a why-not: ranked where, not matched, or which rule or filter excluded it."""
    plain = {key: ex[key] for key in _EXPLAIN_KEYS}
    status = ex["status"]
    if status in ("hit", "replacement"):
        rank = ex["rank"]
        beyond = f"beyond the limit {shown}" if rank > shown else f"below k={k}"
        return _why(f"ranked {rank} ({beyond})", "ranked_below_k", rank=rank, message=ex["message"], explain=plain)
    if status == "not_matched":
        detail = ex["reasons"][0]["detail"]
        absent = ", ".join(detail.get("absent") or [])
        reason = f"not matched (lacks {absent})" if absent else "not matched"
        return _why(reason, "not_matched", message=ex["message"], explain=plain, rule="not_matched")
    rule = ex["rule"]
    if rule == "window":
        rank = ex["rank"]
        return _why(
            f"ranked {rank} (beyond the answer's reach)",
            "ranked_below_k",
            rank=rank,
            message=ex["message"],
            explain=plain,
            rule=rule,
        )
    if rule == "filter":
        filters = [r["detail"]["filter"] for r in ex["reasons"] if r["rule"] == "filter"]
        return _why(
            f"filtered out by {', '.join(filters)}",
            "filtered",
            message=ex["message"],
            explain=plain,
            rule=rule,
            filter=", ".join(filters),
        )
    return _why(f"excluded by {rule}", "excluded", message=ex["message"], explain=plain, rule=rule)


def _why_lookup(store: Store, rid: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Lookup is exact: the record is excluded (explain without a query), or its names do not normalise to the query."""
    ex = store.explain(rid, **{snake(n): v for n, v in args.items() if n in ("lifecycle", "scope")})
    plain = {key: ex[key] for key in _EXPLAIN_KEYS}
    if ex["status"] == "excluded":
        return _why(f"excluded by {ex['rule']}", "excluded", message=ex["message"], explain=plain, rule=ex["rule"])
    r = store.snapshot().records[ex["id"]]
    names = [n for n in (r.title, *r.aliases) if n]
    message = (
        f"eligible, but lookup is exact: {args['query']!r} is not its id, title or an alias "
        f"(names: {', '.join(repr(n) for n in names) or 'none'})"
    )
    return _why("no name matches", "name_mismatch", message=message, explain=plain, rule="name_mismatch")


def _why_knowl(store: Store, rid: str, args: Mapping[str, Any], k: int, deep: list[str]) -> dict[str, Any]:
    """knowl_query: its rank among the first 50, else grep's explain of the same words (mode any) and filters."""
    if rid in deep:
        rank = deep.index(rid) + 1
        limit = int(args.get("limit", 3))
        beyond = f"beyond the limit {limit}" if rank > limit else f"below k={k}"
        return _why(
            f"ranked {rank} ({beyond})",
            "ranked_below_k",
            rank=rank,
            message=f"knowl_query ranks it {rank} with limit {DEEP_LIMIT}",
        )
    grep_args: dict[str, Any] = {"mode": "any", "lifecycle": args.get("status", "active")}
    if args.get("tags"):
        grep_args["tag"] = args["tags"]
    ex = store.explain(rid, query=args["query"], **grep_args)
    why = _from_explain(ex, k, shown=DEEP_LIMIT)
    if why["kind"] == "ranked_below_k":  # matches grep's words, yet knowl_query did not rank it in its first 50
        why["reason"] = f"ranked beyond {DEEP_LIMIT}"
    ignored = [n for n in ("asOf", "category") if args.get(n)]
    if ignored:
        why["message"] += f" (explained without {', '.join(ignored)}, which grep does not have)"
    return why
