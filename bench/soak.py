"""Soak: N knowtk processes query one store and one state while another process edits Markdown.

    python bench/soak.py [--seconds 60] [--readers 3] [--threads 1] [--seed 1] [--json]

A copy of the demo store goes into a temporary folder. The editor rewrites, adds and removes
records in ``churn/`` (a folder the stable queries leave out of scope) and edits bodies
elsewhere only through its own records there. Every reader process loops over a mixed set of
tools (grep, lookup, records, record, timeline, chronicle, knowl_query) on one shared
``state_dir`` and counts:

- ``exceptions``: any exception a call raised (by type and message);
- ``unavailable``: answers with ``index.state == "unavailable"`` (or a knowl error);
- ``mismatches``: answers to the *stable* calls (scoped away from ``churn/``, so the edits
  cannot change them) that differ from the answer a single process gives on a clean state.

After the editor stops, every reader answers every call once more, and those final answers
must equal a clean rebuild (a fresh state_dir) of the edited store: ``final_mismatches``.
Prints one JSON line with the counts (``--json``) or a small table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "data" / "fixtures" / "demo"

# (tool, args, stable): stable calls cannot be changed by the editor's churn/ folder
CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("knowledge_grep", {"query": "vector index", "scope": ["decisions", "notes", "claims"]}, True),
    ("knowledge_grep", {"query": "search sync", "mode": "any", "scope": ["claims", "meetings"]}, True),
    ("knowledge_grep", {"query": "index", "lifecycle": "all", "scope": ["decisions", "notes"]}, True),
    ("knowledge_grep", {"query": "churn retrieval"}, False),
    ("knowledge_grep", {"query": "vector index"}, False),
    ("knowledge_lookup", {"query": "person-ada-okafor"}, True),
    ("knowledge_records", {"kind": "claim", "scope": "claims", "limit": 50}, True),
    ("knowledge_records", {"limit": 100}, False),
    ("knowledge_record", {"id": "dec-2026-021"}, True),
    ("knowledge_timeline", {"entity": "person-ada-okafor", "limit": 50}, False),
    ("knowledge_chronicle_since", {"since": "2025-01-01", "limit": 50}, False),
    ("knowl_query", {"query": "vector index", "limit": 5}, False),
]
VOLATILE_KEYS = {"freshness", "queriedAt", "indexedAt", "scannedAt", "snapshot", "generatedAt"}


def normalised(answer: Any) -> Any:
    """An answer without the parts that say *when* (freshness stamps), for comparison."""
    if isinstance(answer, dict):
        return {k: normalised(v) for k, v in answer.items() if k not in VOLATILE_KEYS}
    if isinstance(answer, list):
        return [normalised(v) for v in answer]
    if isinstance(answer, float):  # an embedding depends on its batch in the last float32 bits
        return round(answer, 5)
    return answer


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two answers first differ (for tracing a mismatch)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            found = first_difference(a.get(key), b.get(key), f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {str(a)[:300]} != {str(b)[:300]}"


def unavailable(answer: dict[str, Any]) -> bool:
    index = answer.get("index")
    if isinstance(index, dict) and index.get("state") == "unavailable":
        return True
    return bool(answer.get("errors"))


def answers(store: Any, *, stable_only: bool = False) -> list[Any]:
    return [normalised(store.call(tool, args)) for tool, args, stable in CALLS if stable or not stable_only]


# -- processes ----------------------------------------------------------------------------------


def reader(root: str, state_dir: str, expected: list[Any], stop: Any, out: Any, seed: int, threads: int) -> None:
    import threading

    import knowtk

    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    try:
        store = knowtk.open_store(root, state_dir=state_dir)
    except Exception as exc:  # counted like any other call
        out.put({"calls": 1, "exceptions": 1, "errors": {f"open: {type(exc).__name__}: {exc}": 1}})
        return
    stable = [(t, a) for t, a, s in CALLS if s]

    def loop(k: int) -> None:
        rng = random.Random(seed * 100 + k)
        while not stop.is_set():
            tool, args, is_stable = CALLS[rng.randrange(len(CALLS))]
            kind = "ok"
            try:
                answer = store.call(tool, args)
                if unavailable(answer):
                    kind = "unavailable"
                    with lock:
                        errors[f"unavailable: {answer.get('index', {}).get('error') or answer.get('errors')}"] += 1
                elif is_stable and normalised(answer) != expected[stable.index((tool, args))]:
                    kind = "mismatches"
            except Exception as exc:
                kind = "exceptions"
                with lock:
                    errors[f"{tool}: {type(exc).__name__}: {exc}"[:300]] += 1
                    if os.environ.get("SOAK_TRACE"):
                        traceback.print_exc()
            with lock:
                counts["calls"] += 1
                counts[kind] += 1

    pool = [threading.Thread(target=loop, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    try:  # the answers once edits stopped, for comparison with a clean rebuild
        final = answers(store)
    except Exception as exc:
        final = None
        errors[f"final: {type(exc).__name__}: {exc}"] += 1
        counts["exceptions"] += 1
    out.put({**counts, "retries": getattr(store.engine, "retries", 0), "errors": dict(errors), "final": final})


def editor(root: str, stop: Any, seed: int, out: Any) -> None:
    rng = random.Random(seed)
    churn = Path(root) / "churn"
    churn.mkdir(exist_ok=True)
    words = [
        "vector",
        "index",
        "retrieval",
        "churn",
        "columnar",
        "storage",
        "search",
        "sync",
        "ranking",
        "snapshot",
        "tokens",
    ]
    edits = 0
    while not stop.is_set():
        n = rng.randrange(30)
        path = churn / f"churn-{n:03d}.md"
        action = rng.random()
        if action < 0.15 and path.exists():
            path.unlink()
        else:
            body = " ".join(rng.choice(words) for _ in range(rng.randrange(5, 60)))
            day = 1 + rng.randrange(28)
            text = (
                f"---\nid: churn-{n:03d}\nkind: page\ntitle: Churn {n} {rng.choice(words)}\n"
                f"occurred_at: '2026-02-{day:02d}'\nentities: [person-ada-okafor]\n---\n{body}\n"
            )
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)  # editors save by rename; a half-written file is a coverage issue anyway
        edits += 1
        time.sleep(rng.uniform(0.001, 0.02))
    out.put({"edits": edits})


def run(seconds: float, readers: int, threads: int, seed: int) -> dict[str, Any]:
    import knowtk

    work = Path(tempfile.mkdtemp(prefix="knowtk-soak-"))
    try:
        root = work / "store"
        shutil.copytree(DEMO, root)
        state_dir = work / "state"
        with knowtk.open_store(root, state_dir=work / "expected") as clean:
            expected = answers(clean, stable_only=True)
        ctx = multiprocessing.get_context("spawn")
        stop, stop_edits, out, edits = ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
        procs = [
            ctx.Process(target=reader, args=(str(root), str(state_dir), expected, stop, out, seed + i, threads))
            for i in range(readers)
        ]
        procs.append(ctx.Process(target=editor, args=(str(root), stop_edits, seed, edits)))
        for p in procs:
            p.start()
        time.sleep(seconds)
        stop_edits.set()  # the last edit lands before any reader gives its final answers
        reports = [edits.get(timeout=300)]
        stop.set()
        reports += [out.get(timeout=300) for _ in procs[:-1]]
        for p in procs:
            p.join(timeout=60)
        with knowtk.open_store(root, state_dir=work / "rebuild") as clean:
            final = answers(clean)
        totals: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        final_mismatches = 0
        for rep in reports:
            for key, value in rep.items():
                if key == "errors":
                    errors.update(value)
                elif key == "final":
                    if value is None or value != final:
                        final_mismatches += 1
                        for (tool, args, _), got, want in zip(CALLS, value or [], final, strict=False):
                            if got != want:
                                errors[f"final mismatch: {tool} {json.dumps(args)}"] += 1
                                if os.environ.get("SOAK_TRACE"):
                                    print("final mismatch", tool, args, first_difference(got, want))
                elif isinstance(value, int):
                    totals[key] += value
        return {
            "seconds": seconds,
            "readers": readers,
            "threads": threads,
            "calls": totals["calls"],
            "edits": totals["edits"],
            "exceptions": totals["exceptions"],
            "unavailable": totals["unavailable"],
            "mismatches": totals["mismatches"],
            "retries": totals["retries"],
            "final_mismatches": final_mismatches,
            "errors": dict(errors.most_common(20)),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--readers", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="threads per reader process sharing one Store")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    result = run(a.seconds, a.readers, a.threads, a.seed)
    if a.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            if key != "errors":
                print(f"{key:>18}: {value}")
        for message, n in result["errors"].items():
            print(f"{n:>8}  {message}")
    bad = result["exceptions"] + result["unavailable"] + result["mismatches"] + result["final_mismatches"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
