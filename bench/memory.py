#!/usr/bin/env python3
"""Peak memory and time of the cold build, the warm open and the first change, each in a fresh process.

    python bench/memory.py STORE STATE [--groups cold warm changed] [--runs 1] [--trace GROUP] [--top 25]

Runs bench/run.py's groups as its children (``--child``), on STORE with its state in STATE
(STATE is removed and built again by the cold group: point it at a copy). For every group it
prints the peak memory of the whole process tree (the main process and its parse workers, sampled
every 20 ms from /proc, as run.py does), each page counted once and as RSS summed (which counts
twice the pages a forked worker still shares with its parent), of the main process alone, and of
the largest parse worker, and the group's own timing (cold: the build and first query; warm: the open and first
query; changed: the edited file's query), each the median over --runs. ``changed`` opens the
store, answers a query, then edits one file and queries it; the file is chosen beforehand in a
process of its own (run.py's ``edit_paths``: choosing it builds every record, which the measured
process must not hold).

``--trace GROUP`` runs GROUP once more in this process under tracemalloc (slow: several times
the group's time) and prints the --top allocation sites still held at the end, by size: where
the main process's memory goes (the parse workers are not traced).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run

MIB = 1 << 20
TIMED = {"cold": "cold", "warm": "reopen", "changed": "changed"}  # group -> the key of its timing in run.py's answer
QUERY = [{"query": "retro", "words": ["retro"], "mode": "all"}]


def spec_of(group: str, store: Path, state: Path) -> object:
    """The group's --spec: the query, or for ``changed`` the file to edit (chosen in a child of its own)."""
    if group != "changed":
        return QUERY
    return run.run_child("edit_paths", argparse.Namespace(runs=1, queries=1, seed=1), store, state, [])


def measure(group: str, store: Path, state: Path, runs: int) -> dict[str, float]:
    a = argparse.Namespace(runs=1, queries=1, seed=1)
    spec = spec_of(group, store, state)
    results = [run.run_child(group, a, store, state, spec) for _ in range(runs)]
    found = {
        key: statistics.median(r.get(key, 0) for r in results) / MIB
        for key in ("mem_tree", "rss_tree", "rss", "rss_children")
    }
    found["time"] = statistics.median(r[TIMED[group]] for r in results)
    return found


def trace(group: str, store: Path, state: Path, top: int) -> None:
    spec = json.dumps(spec_of(group, store, state))
    a = argparse.Namespace(store=str(store), state=str(state), spec=spec, runs=1, queries=1, seed=1)
    tracemalloc.start(4)
    run.CHILDREN[group](a)
    current, peak = tracemalloc.get_traced_memory()
    stats = tracemalloc.take_snapshot().statistics("lineno")
    tracemalloc.stop()
    print(f"# {group} traced: {current / MIB:.0f} MiB held at the end, {peak / MIB:.0f} MiB peak")
    for stat in stats[:top]:
        frame = stat.traceback[0]
        print(f"{stat.size / MIB:8.1f} MiB {stat.count:>9,}  {frame.filename}:{frame.lineno}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("state", type=Path)
    ap.add_argument("--groups", nargs="+", default=["cold", "warm", "changed"], choices=["cold", "warm", "changed"])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--trace", choices=["cold", "warm", "changed"])
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    run.compile_package()
    print("| group | tree peak, each page once | tree RSS summed | main process | largest worker | time |")
    print("|---|---|---|---|---|---|")
    for group in a.groups:
        m = measure(group, a.store.resolve(), a.state.resolve(), a.runs)
        sizes = f"{m['mem_tree']:.0f} MiB | {m['rss_tree']:.0f} MiB | {m['rss']:.0f} MiB | {m['rss_children']:.0f} MiB"
        print(f"| {group} | {sizes} | {run.fmt_s(m['time'])} |", flush=True)
    if a.trace:
        trace(a.trace, a.store.resolve(), a.state.resolve(), a.top)


if __name__ == "__main__":
    main()
