"""The first call of given queries in a new process, each timed alone: medians of --runs fresh processes.

Each run is a new Python process that opens the store, answers one unfiltered warm-up query (``--warm``,
"the" by default: the process's open and reopen are then paid) and times the first call of one query, so
nothing is kept for it yet (no counts, no filter memo). The load average is printed beside the figures: the
machine may be shared: the median CPU time of the call (the process's, SQLite's included) is printed too.

    python bench/first_calls.py --store STORE --state STATE_DIR --runs 5 \\
        "all:and troatist draikriona kind=claim" "all:bukufoa for scope=team-a"

A query is written as ``bench/run.py`` describes one: ``MODE:WORDS key=value ...``. The CLI and the queries
never write the store; the state directory is built by the first run if it is missing. ``--store`` is
resolved first (a symlink to the store a state was built for opens that state).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
from typing import Any


def parse(text: str) -> dict[str, Any]:
    """``MODE:WORDS key=value ...`` -> knowledge_grep arguments."""
    mode, _, rest = text.partition(":")
    words = [w for w in rest.split() if "=" not in w]
    args: dict[str, Any] = {"query": " ".join(words), "mode": mode}
    for part in rest.split():
        if "=" in part:
            key, _, value = part.partition("=")
            args[key] = value
    return args


def child(a: argparse.Namespace) -> None:
    import time

    import knowtk

    store = knowtk.open_store(a.store, state_dir=a.state)
    store.call("knowledge_grep", {"query": a.warm})
    args = parse(a.query)
    t, cpu = time.perf_counter(), time.process_time()
    res = store.call("knowledge_grep", args)
    took, cpu = time.perf_counter() - t, time.process_time() - cpu
    page = [(h["id"], h["score"]) for h in res["hits"]]
    digest = hashlib.sha256(json.dumps(page).encode()).hexdigest()[:12]
    print(json.dumps({"took": took, "cpu": cpu, "total": res["total"], "answer": digest}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--warm", default="the", help="the unfiltered query answered before the timed one")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--query", help=argparse.SUPPRESS)
    p.add_argument("queries", nargs="*")
    a = p.parse_args()
    if a.child:
        child(a)
        return
    # a state is bound to the store's path as it was opened with: a symlink to the store the state was built
    # for is that store (its children would otherwise refuse the state as another store's)
    a.store = os.path.realpath(a.store)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for query in a.queries:
        times, cpus, seen = [], [], set()
        for _ in range(a.runs):
            cmd = [sys.executable, __file__, "--child", "--store", a.store, "--state", a.state, "--warm", a.warm]
            done = subprocess.run([*cmd, "--query", query], capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"{query}: the child failed (exit {done.returncode}):\n{done.stderr}")
            out = done.stdout
            got = json.loads(out.strip().splitlines()[-1])
            times.append(got["took"])
            cpus.append(got["cpu"])
            seen.add((got["total"], got["answer"]))
        same = "same answer every run" if len(seen) == 1 else "ANSWERS DIFFER"
        total, digest = next(iter(seen))
        median, low, high = (round(x * 1000) for x in (statistics.median(times), min(times), max(times)))
        cpu = round(statistics.median(cpus) * 1000)
        print(f"{query}: first call median {median} ms (min {low}, max {high}, {a.runs} runs), {total} hits,")
        print(f"    CPU time median {cpu} ms (the process's own: what a loaded machine changes least)")
        print(f"    answer {digest} (a digest of the page's ids and scores), {same}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
