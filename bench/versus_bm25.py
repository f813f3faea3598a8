#!/usr/bin/env python3
"""Each query's first call and repeated call in an open store, beside SQLite's own ``bm25()`` of the same words.

    python bench/versus_bm25.py STORE --state STATE_DIR [--raw FILE] [--runs 3] [--seed 1] [--queries 20]
                                [--stat median|min] [--cpu] [QUERY ...]

knowtk: ``--runs`` new processes, each opening the store on its built state (``--state``; built by the first run if
missing), answering one opening query of none of the timed words (``bench/run.py``'s ``opening_query``), then the
first call of every query in turn, then every query once again in the same order; per query, the median over the
runs of each. The answers of the two calls are compared (a digest of the page's ids and scores).

bm25: SQLite's ``bm25()`` top 20, weights 8/6/1, of the same words in the same form (``bench/run.py``'s ``FORMS``),
on a raw FTS5 table of the store's files as ``limits.py`` builds it (title, aliases, body; ``--raw``, by default
``STATE_DIR.bm25.sqlite``): built once per store and kept, built again when the store's files differ from those it
was built from (their count, bytes and latest mtime). Each timing is a fresh connection's (the median of --runs);
filters are not applied there (it is the ranking alone). ``--stat min`` takes the least of the runs and ``--cpu``
the CPU time (the process's, every thread: knowtk's reads beside the query count) for the wall clock: what a
machine shared with other work changes least; the targets are the wall clock's.

A query is written ``MODE:WORDS key=value ...`` (``bench/first_calls.py``); without any, the ``--queries`` mixed
queries of ``bench/run.py`` for ``--seed`` (the floor's words, modes and filters). It prints every query's times,
the worst ratio to bm25 of a first and of a repeated call, and the targets: every call at most 1.25x bm25 + 30 ms,
no repeated call more than 10 ms slower than its first.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from first_calls import parse
from run import FORMS, compile_package, describe, load_limits, opening_query, query_specs

TARGET_FACTOR, TARGET_MS, AGAIN_SLOWER_MS = 1.25, 30.0, 10.0
STATS = {"median": statistics.median, "min": min}


# -- the raw FTS5 table ---------------------------------------------------------------------------------------------
def store_stamp(limits: Any, root: str) -> str:
    """What the raw table was built from: the store's path, its record files' count, bytes and latest mtime."""
    files, _ = limits.walk(root)
    latest = max((m for _, _, m in files), default=0)
    return json.dumps([root, len(files), sum(s for _, s, _ in files), latest])


def raw_table(limits: Any, root: str, path: str) -> sqlite3.Connection:
    """The raw FTS5 table of the store (limits.py's ``build``), kept at ``path`` and built when missing or stale."""
    stamp = store_stamp(limits, root)
    if os.path.exists(path):
        db = sqlite3.connect(path)
        try:
            if db.execute("SELECT stamp FROM bench_stamp").fetchone()[0] == stamp:
                return db
        except sqlite3.Error:
            pass
        db.close()
    print(f"# building the raw FTS5 table {path} ...", flush=True)
    t = time.perf_counter()
    files, _ = limits.walk(root)
    blobs = [data for data, _ in limits.read_hash([p for p, _, _ in files])]
    recs, _ = limits.parse_all(blobs, limits.with_yaml(limits.CLoader))
    del blobs
    partial = path + ".partial"
    limits.build(limits.fts_rows(recs), partial)
    db = sqlite3.connect(partial)
    with db:
        db.execute("CREATE TABLE bench_stamp (stamp TEXT)")
        db.execute("INSERT INTO bench_stamp VALUES (?)", (stamp,))
    db.close()
    os.replace(partial, path)
    print(f"# built in {time.perf_counter() - t:.1f} s", flush=True)
    return sqlite3.connect(path)


def bm25_times(limits: Any, path: str, specs: list[dict[str, Any]], a: argparse.Namespace) -> list[tuple[float, int]]:
    """Per query: (seconds of ``bm25()`` top 20, each on a fresh connection, median or least of --runs; rows
    matching)."""
    clock = time.process_time if a.cpu else time.perf_counter
    out = []
    for spec in specs:
        expression = FORMS[spec["mode"]](spec["words"])
        times = []
        for _ in range(a.runs + 1):  # (the first one warms the OS page cache, untimed)
            db = sqlite3.connect(path)
            t = clock()
            db.execute(limits.BM25, (expression,)).fetchall()
            times.append(clock() - t)
            db.close()
        db = sqlite3.connect(path)
        hits = db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expression,)).fetchone()[0]
        db.close()
        out.append((STATS[a.stat](times[1:]), hits))
    return out


# -- knowtk, one process per run ------------------------------------------------------------------------------------
def child(a: argparse.Namespace) -> None:
    import knowtk

    specs = json.loads(a.spec)
    store = knowtk.open_store(a.store, state_dir=a.state)
    store.call("knowledge_grep", {"query": opening_query(specs)})
    calls = [{k: v for k, v in spec.items() if k != "words"} for spec in specs]

    def timed(args: dict[str, Any]) -> tuple[float, float, int, str]:
        t, cpu = time.perf_counter(), time.process_time()
        res = store.call("knowledge_grep", args)
        took, cpu = time.perf_counter() - t, time.process_time() - cpu
        page = json.dumps([(h["id"], h["score"]) for h in res["hits"]])
        return took, cpu, res["total"], hashlib.sha256(page.encode()).hexdigest()[:12]

    first = [timed(args) for args in calls]
    again = [timed(args) for args in calls]
    print(json.dumps({"first": first, "again": again}))


def knowtk_times(a: argparse.Namespace, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per query: the median first and repeated call over ``--runs`` processes, its total, whether answers agree."""
    if not os.path.isdir(a.state):  # the cold build, untimed: the runs time an open store on a built state
        print(f"# building knowtk's state {a.state} ...", flush=True)
        opened = f"knowtk.open_store({a.store!r}, state_dir={a.state!r})"
        build = f"import knowtk; {opened}.call('knowledge_grep', {{'query': 'x'}})"
        subprocess.run([sys.executable, "-c", build], check=True)
    runs = []
    for _ in range(a.runs):
        cmd = [sys.executable, __file__, "--child", a.store, "--state", a.state, "--spec", json.dumps(specs)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"the knowtk child failed (exit {done.returncode}):\n{done.stderr}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    out = []
    at = 1 if a.cpu else 0  # (wall clock, CPU time) of each call
    for i in range(len(specs)):
        answers = {tuple(run[which][i][2:]) for run in runs for which in ("first", "again")}
        out.append(
            {
                "first": STATS[a.stat](run["first"][i][at] for run in runs),
                "again": STATS[a.stat](run["again"][i][at] for run in runs),
                "total": runs[0]["first"][i][2],
                "same": len(answers) == 1,
            }
        )
    return out


# -- the report -----------------------------------------------------------------------------------------------------
def ms(s: float) -> str:
    return f"{s * 1e3:.1f}"


def report(specs: list[dict[str, Any]], kt: list[dict[str, Any]], raw: list[tuple[float, int]]) -> list[str]:
    lines = [
        "| query | total | first call ms | asked again ms | bm25() top 20 ms | first / bm25 | again / bm25 "
        "| target ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst_first = worst_again = worst_target = worst_slower = 0.0
    missed, differ = [], []
    for spec, k, (bm, hits) in zip(specs, kt, raw, strict=True):
        target = TARGET_FACTOR * bm + TARGET_MS / 1e3
        worst_first, worst_again = max(worst_first, k["first"] / bm), max(worst_again, k["again"] / bm)
        worst_target = max(worst_target, k["first"] / target, k["again"] / target)
        slower = (k["again"] - k["first"]) * 1e3
        worst_slower = max(worst_slower, slower)
        name = describe(spec)
        if max(k["first"], k["again"]) > target or slower > AGAIN_SLOWER_MS:
            missed.append(name)
        if not k["same"]:
            differ.append(name)
        lines.append(
            f"| `{name}` | {k['total']} ({hits} raw) | {ms(k['first'])} | {ms(k['again'])} | {ms(bm)} | "
            f"{k['first'] / bm:.2f}x | {k['again'] / bm:.2f}x | {ms(target)} |"
        )
    lines += [
        "",
        f"worst ratio to bm25: first call {worst_first:.2f}x, repeated call {worst_again:.2f}x",
        f"worst call / its target (1.25x bm25 + 30 ms): {worst_target:.2f} "
        f"({'met' if worst_target <= 1 else 'MISSED'})",
        f"repeated call slower than its first by at most {worst_slower:.1f} ms (target <= {AGAIN_SLOWER_MS:.0f} ms: "
        f"{'met' if worst_slower <= AGAIN_SLOWER_MS else 'MISSED'})",
        f"queries missing a target: {', '.join(missed) if missed else 'none'}",
        f"answers of first and repeated calls: {'ANSWERS DIFFER for ' + ', '.join(differ) if differ else 'the same'}",
    ]
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("store")
    p.add_argument("--state", required=True, help="knowtk's state folder for the store (built if missing)")
    p.add_argument("--raw", help="the raw FTS5 table's file (default: STATE_DIR.bm25.sqlite)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seed", type=int, default=1, help="seed of the mixed queries (as bench/run.py's --seed)")
    p.add_argument("--queries", type=int, default=20, help="how many mixed queries, when none is given")
    p.add_argument("--stat", choices=sorted(STATS), default="median", help="of the --runs times (default median)")
    p.add_argument("--cpu", action="store_true", help="CPU time (the process's, all threads) for wall clock")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--spec", help=argparse.SUPPRESS)
    p.add_argument("query", nargs="*", help="MODE:WORDS key=value ... (bench/first_calls.py)")
    a = p.parse_intermixed_args()
    # a state is bound to the store's path as it was opened with: the store resolved (a symlink opens its target)
    a.store, a.state = os.path.realpath(a.store), os.path.abspath(a.state)
    if a.child:
        child(a)
        return
    compile_package()
    limits = load_limits()
    raw_path = a.raw or a.state.rstrip("/") + ".bm25.sqlite"
    db = raw_table(limits, a.store, raw_path)
    if a.query:
        specs = []
        for text in a.query:
            args = parse(text)
            specs.append({**args, "words": args["query"].split()})
    else:
        specs = query_specs(limits.pick_queries(db, random.Random(a.seed), a.queries))
    db.close()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M %Z')}  nproc={os.cpu_count()}  sqlite {sqlite3.sqlite_version}  "
        f"{a.stat} of {a.runs} runs, {'CPU time' if a.cpu else 'wall clock'}  load average before {load}",
        flush=True,
    )
    kt = knowtk_times(a, specs)
    raw = bm25_times(limits, raw_path, specs, a)
    print("\n".join(report(specs, kt, raw)))
    print(f"# load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
