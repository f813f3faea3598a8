"""What a mutation costs: one update and the next query, over a warm query; knowledge_history of one record.

Also an outside edit (a file rewritten by hand, not through knowtk) and the next query: the reconcile of one
changed file, with the query word's kept counts patched the same way.

    python bench/mutation.py [--sizes 10000] [--runs 20] [--out bench/out] [--seed 1]

Uses the stores bench/run.py generates (``ensure_store``). Targets: at 100k records, one mutation and
the next query's reconcile within 100 ms over a warm query; ``knowledge_history`` of one record within 50 ms.
The store is copied first: the benchmark writes into its copy only.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from run import ensure_store

import knowtk


def measure(store_root: Path, runs: int, word: str) -> dict[str, float]:
    """Medians: a warm query for ``word``, one update alone, one update and the next query, history."""
    s = knowtk.open_store(store_root)
    rows = s.records(limit=runs + 1)["rows"]
    s.grep(word)
    warm = []
    for _ in range(runs):
        t = time.perf_counter()
        s.grep(word)
        warm.append(time.perf_counter() - t)
    updates, mutated = [], []
    for n, row in enumerate(rows[:runs]):
        sha = s.record(row["id"])["record"]["sha256"]  # as read now (an earlier word's run changed the file)
        t = time.perf_counter()
        s.update(row["id"], {"summary": f"bench {word} {n} {time.time_ns()}"}, expected_sha256=sha)
        updates.append(time.perf_counter() - t)
        s.grep(word)
        mutated.append(time.perf_counter() - t)
    edits, written = [], []
    for n, row in enumerate(rows[:runs]):
        path = store_root / s.record(row["id"])["record"]["path"]
        path.write_bytes(path.read_bytes() + f"\nedited by hand {word} {n} {time.time_ns()}\n".encode())
        t = time.perf_counter()
        s.grep(word)
        edits.append(time.perf_counter() - t)
        written.append(s.engine._keyword.written if s.engine._keyword else 0)  # the edit was reconciled
    if min(written) < 1:
        raise SystemExit(f"an outside edit was not reconciled by the next query: rows written {written}")
    history = []
    for row in rows[:runs]:
        t = time.perf_counter()
        s.history(row["id"])
        history.append(time.perf_counter() - t)
    hits = s.grep(word)["total"]
    s.close()
    return {
        "hits": float(hits),
        "warm query ms": statistics.median(warm) * 1000,
        "mutation alone ms": statistics.median(updates) * 1000,
        "mutation + query ms": statistics.median(mutated) * 1000,
        "over warm ms": (statistics.median(mutated) - statistics.median(warm)) * 1000,
        "outside edit + query ms": statistics.median(edits) * 1000,
        "edit over warm ms": (statistics.median(edits) - statistics.median(warm)) * 1000,
        "history ms": statistics.median(history) * 1000,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    p.add_argument(
        "--words",
        nargs="+",
        default=["the", "pathul"],
        help="query words: the default pair is the commonest word (in ~92%% of records: its kept counts are "
        "patched at a change, not ranked afresh) and a rare one",
    )
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    for n in a.sizes:
        source = ensure_store(a.out, n, a.seed)
        copy = a.out / f"mutation-{n}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".knowtk"))
        knowtk.open_store(copy).grep("the")  # the cold build, not measured
        for word in a.words:
            result = measure(copy, a.runs, word)
            print(f"{n:>8} records, {word!r}: " + ", ".join(f"{k} {v:.1f}" for k, v in result.items()))
        shutil.rmtree(copy)


if __name__ == "__main__":
    main()
