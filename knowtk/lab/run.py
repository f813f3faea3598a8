"""Run a gold set on a Store (or a Workspace) under named variants, and score every case.

Each case is asked through ``Store.call`` / ``Workspace.call`` exactly as written (plus the
variant's overrides), so the lab measures the tools a user calls, not a copy of them. The answer's
record ids, in order, are scored against the case's expected ids (:mod:`knowtk.lab.metrics`), with
two rules:

- An expected record that is superseded counts through its *current replacement* (the
  snapshot's ``chain_ends``) when the case searches active records: an active search returns the
  replacement, never the earlier record. The case's row says so (``replaced``).
- An expected id that no file in the store carries is reported as a problem of the run and the
  case is not scored (``status: "unknown_ids"``); it is never silently counted as a miss.

Every expected id that is not among the first ``k`` carries a *why-not*: the reason from
:func:`knowtk.query.explain.explain` (not matched, filtered out by which filter, excluded by which rule)
or its rank when it came back below ``k``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from knowtk.errors import InvalidArgument, KnowtkError, RecordNotFound
from knowtk.index import semantic
from knowtk.lab.goldset import Case, GoldSet, Variant
from knowtk.lab.metrics import METRICS, score
from knowtk.query import TOOLS
from knowtk.query.args import snake, validate
from knowtk.snapshot import Snapshot
from knowtk.store import Store
from knowtk.workspace import Workspace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CHECKS", "LabRun", "run", "run_case", "store_info"]

#: Checks beside the ranking metrics: the lookup status, and no must-not id in the answer.
CHECKS = ("status_ok", "clean")
DEEP_LIMIT = 50  # knowl_query's largest limit: how far a why-not looks for a record's rank

_ENV_LOCK = threading.Lock()


def _version() -> str:
    from knowtk import __version__

    return __version__


class LabRun:
    """Every case under every variant, scored: ``.cases`` (one dict per case and variant) and ``.meta``.

    ``to_dict()`` is JSON (what :func:`knowtk.lab.baseline.save` writes); the frames are in
    :mod:`knowtk.lab.frames` and reachable from here (``metrics()``, ``to_frame()``, ``misses()``).
    """

    def __init__(
        self, gold: dict[str, Any], variants: list[dict[str, Any]], cases: list[dict[str, Any]], meta: dict[str, Any]
    ) -> None:
        self.gold = gold
        self.variants = variants
        self.cases = cases
        self.meta = meta

    @property
    def variant_names(self) -> list[str]:
        return [v["name"] for v in self.variants]

    @property
    def problems(self) -> list[dict[str, Any]]:
        """Cases that could not be scored: expected or must-not ids the store does not have, refused calls."""
        return [
            {"case": c["case"], "variant": c["variant"], "status": c["status"], "message": c["error"]}
            for c in self.cases
            if c["status"] != "ok"
        ]

    def case(self, case_id: str, variant: str | None = None) -> dict[str, Any]:
        variant = variant or self.variant_names[0]
        for c in self.cases:
            if c["case"] == case_id and c["variant"] == variant:
                return c
        raise KeyError((case_id, variant))

    def summary(self) -> dict[str, dict[str, Any]]:
        """variant -> the mean of every metric over the cases where it is defined, and the counts."""
        return {name: aggregate([c for c in self.cases if c["variant"] == name]) for name in self.variant_names}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "meta": self.meta,
            "gold": self.gold,
            "variants": self.variants,
            "summary": self.summary(),
            "cases": self.cases,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LabRun:
        return cls(dict(data["gold"]), list(data["variants"]), list(data["cases"]), dict(data["meta"]))

    # -- front ends (imported when used) -----------------------------------------------------------
    def metrics(self) -> pd.DataFrame:
        from knowtk.lab.frames import metrics_frame

        return metrics_frame(self)

    def to_frame(self) -> pd.DataFrame:
        from knowtk.lab.frames import cases_frame

        return cases_frame(self)

    def misses(self) -> pd.DataFrame:
        from knowtk.lab.frames import misses_frame

        return misses_frame(self)

    def compare(self, left: str | None = None, right: str | None = None) -> pd.DataFrame:
        from knowtk.lab.compare import compare

        return compare(self, left=left, right=right)

    def plot(self, **kwargs: Any) -> Any:
        from knowtk.lab.plots import plot_metrics

        return plot_metrics(self, **kwargs)

    def __repr__(self) -> str:
        return f"<LabRun {self.gold.get('name')!r}: {len(self.gold.get('cases', []))} case(s) × {self.variant_names}>"


FORMAT = "knowtk-lab-run/1"


def aggregate(cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means of each metric over the scored cases where it is defined (None when it is nowhere)."""
    scored = [c for c in cases if c["status"] == "ok"]
    out: dict[str, Any] = {}
    for name in (*METRICS, *CHECKS):
        values = [c["metrics"][name] for c in scored if c["metrics"].get(name) is not None]
        out[name] = sum(values) / len(values) if values else None
    out.update(cases=len(cases), scored=len(scored), unscored=len(cases) - len(scored))
    return out


def store_info(target: Store | Workspace) -> dict[str, Any]:
    """The store a run was made on: root, name and snapshot fingerprint (linked stores too)."""
    local = target.local if isinstance(target, Workspace) else target
    info: dict[str, Any] = {"root": local.root, "name": local.name, "snapshot": local.snapshot().fingerprint(())}
    if isinstance(target, Workspace):
        info["linked"] = [
            {"name": n, "root": s.root, "snapshot": s.snapshot().fingerprint(())} for n, s in target.linked.items()
        ]
    return info


def run(
    gold: GoldSet,
    target: Store | Workspace,
    *,
    variants: Sequence[str | Variant] | None = None,
    why_not: bool = True,
) -> LabRun:
    """Run every case of ``gold`` under each variant (default: ``default`` and the gold set's own).

    ``variants`` may name the gold set's variants or be :class:`Variant` objects made in Python.
    ``why_not=False`` skips the explanations of misses (faster on a large gold set).
    """
    if not isinstance(gold, GoldSet):
        raise InvalidArgument("gold", f"must be a GoldSet (knowtk.lab.load_gold), not {type(gold).__name__}")
    if not isinstance(target, Store | Workspace):
        raise InvalidArgument("target", f"must be a knowtk.Store or Workspace, not {type(target).__name__}")
    chosen = _variants(gold, variants)
    if any(v.semantic for v in chosen) and semantic.load_embedder() is None:
        wanted = [v.name for v in chosen if v.semantic]
        raise InvalidArgument(
            "variants",
            f"{', '.join(wanted)} asks for semantic search, but no embedding model is installed "
            "(pip install 'knowtk[semantic]')",
            value=wanted,
        )
    started = datetime.now(UTC)
    before = store_info(target)
    cases = []
    for v in chosen:
        with _semantic(v.semantic):
            for case in gold.cases:
                cases.append(run_case(case, target, variant=v, why_not=why_not))
    after = store_info(target)
    notes = []
    if after["snapshot"] != before["snapshot"]:
        notes.append("the store changed during the run: later cases saw a different snapshot than earlier ones")
    meta = {
        "knowtkVersion": _version(),
        "startedAt": started.isoformat().replace("+00:00", "Z"),
        "finishedAt": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "store": after,
        "variantsChosen": variants is not None,  # a chosen subset: a baseline's other variants are not missing
        "notes": notes,
    }
    gold_info = {
        "name": gold.name,
        "path": gold.path,
        "sha256": gold.sha256,
        "k": gold.k,
        "cases": [c.id for c in gold.cases],
    }
    return LabRun(gold_info, [v.to_dict() for v in chosen], cases, meta)


def _variants(gold: GoldSet, given: Sequence[str | Variant] | None) -> list[Variant]:
    if given is None:
        return gold.all_variants()
    if isinstance(given, str | Variant):
        given = [given]
    out = [gold.variant(v) if isinstance(v, str) else v for v in given]
    if not out:
        raise InvalidArgument("variants", "name at least one variant", allowed=[v.name for v in gold.all_variants()])
    names = [v.name for v in out]
    dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if dup is not None:
        raise InvalidArgument("variants", f"{dup!r} is named twice", value=names)
    for v in out:  # variants made in Python are checked here, as the gold file's are when it loads
        if not isinstance(v, Variant):
            raise InvalidArgument("variants", f"must be names or Variant objects, not {type(v).__name__}")
        for case in gold.cases:
            try:
                validate(case.tool, TOOLS[case.tool].params, case.args_for(v), python=False)
            except InvalidArgument as exc:
                raise InvalidArgument(
                    exc.argument, f"case {case.id!r} under variant {v.name!r}: {exc}", allowed=exc.allowed
                ) from exc
    return out


@contextmanager
def _semantic(on: bool | None) -> Iterator[None]:
    """knowl_query's semantic search forced on or off for the variant (process-wide while it runs)."""
    if on is None:
        yield
        return
    with _ENV_LOCK:
        old = os.environ.get(semantic.ENV_VAR)
        os.environ[semantic.ENV_VAR] = "1" if on else "0"
        try:
            yield
        finally:
            if old is None:
                os.environ.pop(semantic.ENV_VAR, None)
            else:
                os.environ[semantic.ENV_VAR] = old


# -- one case ----------------------------------------------------------------------------------------


def _local(target: Store | Workspace) -> Store:
    return target.local if isinstance(target, Workspace) else target


def _stores(target: Store | Workspace) -> list[tuple[Store, Snapshot]]:
    """Each store of the target with its snapshot, taken once per case (a snapshot costs a scan)."""
    stores = [target.local, *target.linked.values()] if isinstance(target, Workspace) else [target]
    return [(store, store.snapshot()) for store in stores]


def _active_search(tool: str, args: Mapping[str, Any]) -> bool:
    """Whether the call searches active records only (so a superseded record comes back as its replacement)."""
    if tool == "knowl_query":
        return args.get("status", "active") == "active" and args.get("asOf") is None
    return args.get("lifecycle", "active") == "active"


def _known(stores: list[tuple[Store, Snapshot]], rid: str) -> tuple[Store, Snapshot] | None:
    """The store (and its snapshot) where some file carries this id, valid or not; None when none does."""
    for store, snap in stores:
        if rid in snap.records or any(i.id == rid for i in snap.issues):
            return store, snap
    return None


def _ask(target: Store | Workspace, case: Case, args: dict[str, Any]) -> dict[str, Any]:
    if case.tool == "knowl_query":
        return target.call("knowl_query", args)
    return _local(target).call(case.tool, args)


def _hits(tool: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer as ranked rows: {rank, id, title, score, via, store}."""
    if tool == "knowledge_grep":
        rows = [
            {"id": h["id"], "title": h["title"], "score": h["score"], "via": (h["via"] or {}).get("id"), "store": None}
            for h in data["hits"]
        ]
    elif tool == "knowledge_lookup":
        rows = [
            {"id": c["id"], "title": c["title"], "score": None, "via": None, "store": None} for c in data["candidates"]
        ]
    else:
        results = data["results"]
        keyed = results.items() if isinstance(results, dict) else [(None, results)]
        rows = [
            {
                "id": i["id"],
                "title": i["title"],
                "score": i["score"] if isinstance(i["score"], float) else None,
                "via": None,
                "store": name,
            }
            for name, items in keyed
            for i in items
        ]
    return [{"rank": n, **row} for n, row in enumerate(rows, 1)]


def run_case(
    case: Case, target: Store | Workspace, *, variant: Variant | None = None, why_not: bool = True
) -> dict[str, Any]:
    """One case under one variant: the answer's ids, the metrics, and the why-not of each miss."""
    from knowtk.lab.goldset import DEFAULT_VARIANT

    variant = variant or DEFAULT_VARIANT
    args = case.args_for(variant)
    out: dict[str, Any] = {
        "case": case.id,
        "variant": variant.name,
        "tool": case.tool,
        "query": args.get("query"),
        "args": args,
        "k": case.k,
        "note": case.note,
        "status": "ok",
        "error": None,
        "total": None,
        "method": None,
        "lookupStatus": None,
        "expectedStatus": case.status,
        "hits": [],
        "expected": [],
        "mustNot": [],
        "metrics": dict.fromkeys((*METRICS, *CHECKS)),
        "passed": None,
    }
    stores = _stores(target)
    unknown = [rid for rid in (*case.expect, *case.must_not) if _known(stores, rid) is None]
    if unknown:
        out["status"] = "unknown_ids"
        out["error"] = (
            f"no file in the store has id {', '.join(unknown)}: the case is not scored "
            "(fix the gold set, or the store if the record was lost)"
        )
        out["unknownIds"] = unknown
        return out
    try:
        data = _ask(target, case, args)
    except KnowtkError as exc:
        out["status"], out["error"] = "refused", f"{type(exc).__name__}: {exc}"
        return out
    index = data.get("index")
    if isinstance(index, dict) and index.get("state") != "ready":
        out["status"] = "index_unavailable"
        out["error"] = f"the keyword index is unavailable: {index.get('error') or index.get('errors')}"
        return out
    hits = _hits(case.tool, data)
    ranked = [h["id"] for h in hits]
    out["hits"], out["total"] = hits, data.get("total", len(hits))
    if case.tool == "knowl_query":
        out["method"] = data["ranking"]["method"]
    if case.tool == "knowledge_lookup":
        out["lookupStatus"] = data["status"]
        if case.status is not None:
            out["metrics"]["status_ok"] = 1.0 if data["status"] == case.status else 0.0

    # expected ids, superseded ones counted through their current replacement
    active = _active_search(case.tool, args)
    gains: dict[str, int] = {}
    expected: list[dict[str, Any]] = []
    for rid, grade in case.expect.items():
        _, snap = _known(stores, rid) or stores[0]
        counted, chain = rid, None
        end = snap.chain_ends.get(rid)
        if end is not None:
            chain = {"end": end.reason, "current": end.current, "steps": list(end.via)}
            if active and end.current is not None:
                counted = end.current
        gains[counted] = max(gains.get(counted, 0), grade)
        rank = ranked.index(counted) + 1 if counted in ranked else None
        expected.append(
            {
                "id": rid,
                "counted": counted,
                "replaced": counted != rid,
                "grade": grade,
                "rank": rank,
                "chain": chain,
                "why": None,
            }
        )
    out["metrics"].update(score(ranked, gains, case.k))
    for rid in case.must_not:
        out["mustNot"].append({"id": rid, "rank": ranked.index(rid) + 1 if rid in ranked else None})
    if case.must_not:
        out["metrics"]["clean"] = 0.0 if any(m["rank"] is not None for m in out["mustNot"]) else 1.0
    if why_not:
        deep: list[str] | None = None
        for e in expected:
            if e["rank"] is None or e["rank"] > case.k:
                if case.tool == "knowl_query" and deep is None:
                    deep = _deep_ranking(target, args)
                e["why"] = _why_not(case, target, args, e, stores, deep)
    out["expected"] = expected
    checks = [e["rank"] is not None and e["rank"] <= case.k for e in expected]
    checks += [m["rank"] is None for m in out["mustNot"]]
    if out["metrics"]["status_ok"] is not None:
        checks.append(out["metrics"]["status_ok"] == 1.0)
    out["passed"] = all(checks)
    return out


def _deep_ranking(target: Store | Workspace, args: dict[str, Any]) -> list[str]:
    data = target.call("knowl_query", {**args, "limit": DEEP_LIMIT})
    return [h["id"] for h in _hits("knowl_query", data)]


# -- why not -------------------------------------------------------------------------------------------


def _why_not(
    case: Case,
    target: Store | Workspace,
    args: dict[str, Any],
    e: dict[str, Any],
    stores: list[tuple[Store, Snapshot]],
    deep: list[str] | None,
) -> dict[str, Any]:
    """Why an expected id is not among the first k: one short ``reason`` and explain's own answer."""
    rid = e["counted"]
    store, _ = _known(stores, rid) or stores[0]
    k = case.k
    if e["rank"] is not None:  # it came back, below k
        return _why(
            f"ranked {e['rank']} (below k={k})",
            "ranked_below_k",
            rank=e["rank"],
            message=f"returned at rank {e['rank']}, below the cut-off k={k}",
        )
    try:
        if case.tool == "knowledge_grep":
            grep_args = {snake(n): v for n, v in args.items() if n != "query"}
            ex = store.explain(rid, query=args["query"], **grep_args)
            return _from_explain(ex, k, shown=_shown(args))
        if case.tool == "knowledge_lookup":
            return _why_lookup(store, rid, args)
        return _why_knowl(store, rid, args, k, deep or [])
    except RecordNotFound as exc:  # the id is known but not as a record here (a linked store's, say)
        return _why("unexplained", "unexplained", message=str(exc))


def _shown(args: Mapping[str, Any]) -> int:
    return int(args.get("limit", 20))


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
    plain = {key: ex[key] for key in ("id", "status", "rule", "rank", "total", "message", "reasons", "chain")}
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
    plain = {key: ex[key] for key in ("id", "status", "rule", "rank", "total", "message", "reasons", "chain")}
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
