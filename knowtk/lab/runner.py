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

Every expected id that is not among the first ``k`` carries a *why-not* (:mod:`knowtk.lab.whynot`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from knowtk import __version__
from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.index import semantic
from knowtk.lab.goldset import DEFAULT_VARIANT, Case, GoldSet, Variant
from knowtk.lab.labrun import LabRun
from knowtk.lab.metrics import METRICS, score
from knowtk.lab.scored import CHECKS
from knowtk.lab.whynot import DEEP_LIMIT, explain_miss
from knowtk.query import TOOLS
from knowtk.query.args import validate
from knowtk.snapshot.model import Snapshot
from knowtk.store import Store
from knowtk.workspace import Workspace

__all__ = ["run", "run_case", "store_info"]

_ENV_LOCK = threading.Lock()

Stores = list[tuple[Store, Snapshot]]


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
    _require_embedder(chosen)
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
        "knowtkVersion": __version__,
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


def _require_embedder(chosen: list[Variant]) -> None:
    if any(v.semantic for v in chosen) and semantic.load_embedder() is None:
        wanted = [v.name for v in chosen if v.semantic]
        raise InvalidArgument(
            "variants",
            f"{', '.join(wanted)} asks for semantic search, but no embedding model is installed "
            "(pip install 'knowtk[semantic]')",
            value=wanted,
        )


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


def _stores(target: Store | Workspace) -> Stores:
    """Each store of the target with its snapshot, taken once per case (a snapshot costs a scan)."""
    stores = [target.local, *target.linked.values()] if isinstance(target, Workspace) else [target]
    return [(store, store.snapshot()) for store in stores]


def _active_search(tool: str, args: Mapping[str, Any]) -> bool:
    """Whether the call searches active records only (so a superseded record comes back as its replacement)."""
    if tool == "knowl_query":
        return args.get("status", "active") == "active" and args.get("asOf") is None
    return args.get("lifecycle", "active") == "active"


def _known(stores: Stores, rid: str) -> tuple[Store, Snapshot] | None:
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


def _blank(case: Case, variant: Variant, args: dict[str, Any]) -> dict[str, Any]:
    """A case's row before it is asked: status ok, nothing found, nothing scored."""
    return {
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


def _answer(out: dict[str, Any], case: Case, target: Store | Workspace, stores: Stores) -> dict[str, Any] | None:
    """The answer to the case; None when it cannot be scored (unknown ids, a refusal, no index), ``out`` says why."""
    unknown = [rid for rid in (*case.expect, *case.must_not) if _known(stores, rid) is None]
    if unknown:
        out["status"] = "unknown_ids"
        out["error"] = (
            f"no file in the store has id {', '.join(unknown)}: the case is not scored "
            "(fix the gold set, or the store if the record was lost)"
        )
        out["unknownIds"] = unknown
        return None
    try:
        data = _ask(target, case, out["args"])
    except KnowtkError as exc:
        out["status"], out["error"] = "refused", f"{type(exc).__name__}: {exc}"
        return None
    index = data.get("index")
    if isinstance(index, dict) and index.get("state") != "ready":
        out["status"] = "index_unavailable"
        out["error"] = f"the keyword index is unavailable: {index.get('error') or index.get('errors')}"
        return None
    return data


def _expected(
    case: Case, stores: Stores, active: bool, ranked: list[str]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Each expected id where it ranked, a superseded one counted through its current replacement; and the gains."""
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
    return expected, gains


def _explain_misses(
    case: Case, target: Store | Workspace, args: dict[str, Any], expected: list[dict[str, Any]], stores: Stores
) -> None:
    deep: list[str] | None = None
    for e in expected:
        if e["rank"] is None or e["rank"] > case.k:
            if case.tool == "knowl_query" and deep is None:
                data = target.call("knowl_query", {**args, "limit": DEEP_LIMIT})
                deep = [h["id"] for h in _hits("knowl_query", data)]
            store, _ = _known(stores, e["counted"]) or stores[0]
            e["why"] = explain_miss(case, store, args, e, deep)


def run_case(
    case: Case, target: Store | Workspace, *, variant: Variant | None = None, why_not: bool = True
) -> dict[str, Any]:
    """One case under one variant: the answer's ids, the metrics, and the why-not of each miss."""
    variant = variant or DEFAULT_VARIANT
    args = case.args_for(variant)
    out = _blank(case, variant, args)
    stores = _stores(target)
    data = _answer(out, case, target, stores)
    if data is None:
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
    expected, gains = _expected(case, stores, _active_search(case.tool, args), ranked)
    out["metrics"].update(score(ranked, gains, case.k))
    out["mustNot"] = [{"id": rid, "rank": ranked.index(rid) + 1 if rid in ranked else None} for rid in case.must_not]
    if case.must_not:
        out["metrics"]["clean"] = 0.0 if any(m["rank"] is not None for m in out["mustNot"]) else 1.0
    if why_not:
        _explain_misses(case, target, args, expected, stores)
    out["expected"] = expected
    checks = [e["rank"] is not None and e["rank"] <= case.k for e in expected]
    checks += [m["rank"] is None for m in out["mustNot"]]
    if out["metrics"]["status_ok"] is not None:
        checks.append(out["metrics"]["status_ok"] == 1.0)
    out["passed"] = all(checks)
    return out
