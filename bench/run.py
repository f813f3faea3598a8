#!/usr/bin/env python3
"""knowtk against the floor: how close the query path comes to "stat walk + raw FTS5".

    python bench/run.py [--sizes 10000 100000] [--out bench/out] [--queries 20] [--seed 1] [--runs 5]
    python bench/run.py --summary-only [--sizes 10000 100000 300000] [--out bench/out] [--seed 1]
    python bench/run.py --serve [--sizes 10000] [--out bench/out] [--runs 5] [--serve-query WORD]

For every size it generates a synthetic store with ``../shared/bench/gen_store.py``
(reused from --out when already there), measures the floor with the functions of
``../shared/bench/limits.py`` (a stat walk, c1 YAML parse, d FTS5 build, e1-e3 raw
FTS5 queries, f ripgrep), then measures knowtk, each group in a fresh Python
process so that its peak RSS is its own:

- cold:    state removed, first query (full scan, parse and index build);
- warm:    a new process on the built state (its first query, ``opening_query``, is
           "reopen"), then the first call of each of --queries mixed queries (the
           floor's words; modes all/any/phrase; some filtered by kind, type, tag,
           scope or lifecycle all), then the first mixed query again with nothing
           changed, then each mixed query again, the median of --runs calls;
- changed: one record's body rewritten with a new word, then a query for that word
           (it must be found), --runs times; the file is restored afterwards;
- walk:    warm and mixed again with ``change_source=StatWalk`` (every query walks),
           the path every query takes where no change notification is possible;
- cli:     the whole process ``knowtk grep WORD`` on the built state, --runs times.

warm, mixed and changed use the change source ``open_store`` picks (inotify on Linux;
its ``freshness_mode`` is printed). The tables print knowtk beside the floor, and the
targets of a live store. knowtk's state
goes to --out/state-N-sS, never into the generated store. Results are also written
to --out/results-N-sS.json, with the disk each size takes (the store's and the state
folder's bytes and files, measured after the last group).

``--serve`` measures only the whole-process ``knowtk grep`` with and without ``knowtk serve``
(docs/server.md), on a copy of the store (--out/serve-store-N-sS, made once; its state
--out/serve-state-N-sS): the state current, then after 1 and 5 outside edits (as the cli group:
each edit a new word, asked for and checked found, the files restored after each run), first with
``KNOWTK_SERVE=0``, then with the server running and ``KNOWTK_SERVE=require`` (a call the server did
not answer fails), beside the stat walk of the store (limits.py's ``walk``). The query is
``--serve-query`` (default ``retro``). It writes --out/results-serve-N-sS.json.

After the last size it writes a summary over every --sizes entry (--out/summary-sS.json
and .md): the tables of each size, then each measure fitted to a power law t = a*n^b
(least squares on log-log) and extrapolated to 1,000,000 records. --summary-only builds
that summary from the results files already in --out, measuring nothing (a 300k run is
long); it only walks the store and state folders of a results file that has no disk figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import random
import re
import resource
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def compile_package() -> None:
    """Compile knowtk's modules to bytecode once, before any timing: what an installed package has.

    pip compiles a package when it installs it, and Python writes the bytecode at a module's first
    import; a machine with ``PYTHONDONTWRITEBYTECODE`` set (this one: CI images often set it) and an
    editable install would otherwise compile every module again in every timed process.
    """
    import compileall

    compileall.compile_dir(str(REPO / "knowtk"), quiet=1)


SHARED = REPO.parent / "shared" / "bench"
GIB = 1024**3
MILLION = 1_000_000
FORMS = {  # knowtk mode -> limits.py's raw FTS5 form of the same words
    "all": lambda ws: " ".join(f'"{w}"' for w in ws),
    "any": lambda ws: " OR ".join(f'"{w}"' for w in ws),
    "phrase": lambda ws: '"' + " ".join(ws) + '"',
}


def load_limits() -> Any:
    spec = importlib.util.spec_from_file_location("limits", SHARED / "limits.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peak_rss() -> int:
    """Peak resident set size of this process, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def children_rss() -> int:
    """Peak RSS of the largest child this process waited for (a parse worker), in bytes (RUSAGE_CHILDREN)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def tree_rss(pid: int) -> dict[int, int]:
    """Resident bytes of a process and of each of its descendants now, by pid (/proc: Linux; {} elsewhere)."""
    found, stack = {}, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                found[p] = int(f.read().split()[1]) * PAGE
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue  # gone meanwhile
    return found


def private_bytes(pid: int) -> int | None:
    """Resident bytes no other process maps (Private_Clean + Private_Dirty of /proc/PID/smaps_rollup), or None."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    return 1024 * sum(int(line.split()[1]) for line in lines if line.startswith(("Private_Clean:", "Private_Dirty:")))


PRIVATE_EVERY = 0.1  # seconds between reads of the workers' smaps_rollup (a read walks a worker's pages: ~5 ms)


def run_sampled(cmd: list[str]) -> tuple[int, int]:
    """Run cmd to completion; (peak of its whole tree's RSS summed, peak of the tree's memory with each page
    counted once), sampled every 20 ms.

    A forked parse worker maps the pages its parent had when it started, shared until either writes one:
    summing RSS counts those twice (a 1M cold build's two workers each showed ~435 MiB, most of it the
    parent's walk). Counted once, the tree is the main process's RSS plus its descendants' private pages
    (smaps_rollup, read every PRIVATE_EVERY seconds: the read is too slow for every sample; a worker not
    read yet counts its whole RSS).
    """
    proc = subprocess.Popen(cmd)
    peak_sum = peak_once = 0
    private: dict[int, int] = {}
    read_at = 0.0
    while proc.poll() is None:
        found = tree_rss(proc.pid)
        main = found.pop(proc.pid, 0)
        peak_sum = max(peak_sum, main + sum(found.values()))
        if found and time.monotonic() - read_at >= PRIVATE_EVERY:
            private = {p: b for p in found if (b := private_bytes(p)) is not None}
            read_at = time.monotonic()
        peak_once = max(peak_once, main + sum(private.get(p, b) for p, b in found.items()))
        time.sleep(0.02)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return peak_sum, peak_once


def median_time(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)]


def disk_usage(root: Path) -> dict[str, int]:
    """Files under root, their bytes, and the bytes allocated for them (du: a 1.5 KB record takes a 4 KiB block)."""
    files = size = allocated = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    files += 1
                    size += st.st_size
                    allocated += st.st_blocks * 512
    return {"files": files, "bytes": size, "allocated": allocated}


def state_disk(state: Path) -> dict[str, Any]:
    """disk_usage of the state folder, with the bytes of each entry in it (state.sqlite, its -wal, ...)."""
    usage: dict[str, Any] = dict(disk_usage(state))
    usage["parts"] = {
        entry.name: disk_usage(entry)["bytes"] if entry.is_dir() else entry.stat().st_size
        for entry in sorted(state.iterdir())
    }
    return usage


# -- the store ------------------------------------------------------------------------------------
def ensure_store(out: Path, n: int, seed: int) -> Path:
    """The generated store for (n, seed): generated into a .partial folder, renamed when complete."""
    store = out / f"store-{n}-s{seed}"
    if store.is_dir():
        return store
    partial = out / f"store-{n}-s{seed}.partial"
    print(f"# generating {store} ...", flush=True)
    cmd = [sys.executable, str(SHARED / "gen_store.py"), str(partial), "--records", str(n), "--seed", str(seed)]
    subprocess.run([*cmd, "--force"], check=True)
    partial.rename(store)
    return store


def query_specs(queries: list[list[str]]) -> list[dict[str, Any]]:
    """The mixed workload: the floor's words, each with a mode and (for some) a filter."""
    filters: list[dict[str, Any]] = [
        {},
        {"kind": "claim"},
        {"type": "meeting"},  # the ontology expands it to call and standup too
        {},
        {"tag": "search"},
        {"scope": "team-a"},
        {"lifecycle": "all"},
    ]
    specs = []
    for i, words in enumerate(queries):
        mode = ("all", "any", "phrase", "all")[i % 4]
        specs.append({"query": " ".join(words), "words": words, "mode": mode, **filters[i % len(filters)]})
    return specs


# -- children: one measurement group each -----------------------------------------------------------
def child_floor(a: argparse.Namespace) -> dict[str, Any]:
    limits = load_limits()
    root = os.path.abspath(a.store)
    files, dirs = limits.walk(root)
    out: dict[str, Any] = {"files": len(files), "mb": sum(s for _, s, _ in files) / 1e6, "folders": len(dirs)}
    out["walk"] = limits.bench(lambda: limits.walk(root), a.runs)[0]
    paths = [p for p, _, _ in files]
    t = time.perf_counter()
    blobs = [data for data, _ in limits.read_hash(paths)]
    out["read_hash"] = time.perf_counter() - t
    t = time.perf_counter()
    recs, _ = limits.parse_all(blobs, limits.with_yaml(limits.CLoader))
    out["parse"] = time.perf_counter() - t
    del blobs
    rows = limits.fts_rows(recs)
    del recs
    tmp = tempfile.mkdtemp(prefix="kt-bench-")
    try:
        dbpath = os.path.join(tmp, "fts.sqlite")
        t = time.perf_counter()
        limits.build(rows, dbpath)
        out["build"] = time.perf_counter() - t
        del rows
        db = sqlite3.connect(dbpath)
        queries = limits.pick_queries(db, random.Random(a.seed), a.queries)
        out["queries"] = queries
        out["fts"] = {}  # mode -> per-query median latency
        for mode, make in FORMS.items():
            lat = []
            for ws in queries:
                qs = make(ws)
                lat.append(limits.bench(lambda qs=qs: db.execute(limits.BM25, (qs,)).fetchall(), a.runs)[0])
            out["fts"][mode] = lat
        db.close()
    finally:
        shutil.rmtree(tmp)
    rg = shutil.which("rg")
    if rg:  # the same words and modes as knowtk's mixed queries (rg cannot apply their filters)
        lat = []
        for spec in query_specs(queries):
            cmd = rg_command(rg, spec["words"], spec["mode"], root)
            lat.append(limits.bench(lambda cmd=cmd: subprocess.run(cmd, shell=True, capture_output=True), a.runs)[0])
        out["rg_queries"] = lat
        out["rg"] = statistics.median(lat)
    return out


def rg_command(rg: str, words: list[str], mode: str, root: str) -> str:
    """A shell command listing the files that hold the words as knowtk's mode means them, with ripgrep.

    all: one rg per word, each over the files the previous one listed; any: one rg with every word;
    phrase: the words in order, separated by white space. Case-insensitive whole words (-i -w).
    """
    q = shlex.quote
    if mode == "any":
        return f"{q(rg)} -l -i -w {' '.join('-e ' + q(w) for w in words)} -- {q(root)}"
    if mode == "phrase":
        pattern = r"\s+".join(re.escape(w) for w in words)
        return f"{q(rg)} -l -i -w -e {q(pattern)} -- {q(root)}"
    first, *rest = words
    tail = "".join(f" | xargs -d '\\n' -r {q(rg)} -l -i -w -F -e {q(w)} --" for w in rest)
    return f"{q(rg)} -l -i -w -F -e {q(first)} -- {q(root)}{tail}"


def open_store(a: argparse.Namespace, **options: Any) -> Any:
    import knowtk  # imported by the child before any timer starts (pandas makes it take ~0.5 s)

    return knowtk.open_store(a.store, state_dir=a.state, **options)


def child_cold(a: argparse.Namespace) -> dict[str, Any]:
    shutil.rmtree(a.state, ignore_errors=True)
    spec = json.loads(a.spec)[0]
    t = time.perf_counter()
    store = open_store(a)
    res = store.call("knowledge_grep", {"query": spec["query"]})
    out = {"cold": time.perf_counter() - t, "total": res["total"]}
    out["parses"] = store.engine.scanner.parses
    out["rss"], out["rss_children"] = peak_rss(), children_rss()
    out["state_open"] = state_disk(Path(a.state))  # the process still running: what its build left (the WAL)
    return out


OPENING_QUERIES = ("retro", "standup", "meeting")  # a new process's first query in the warm group: the first
# of these that none of the mixed queries asks (its phrase asked again there would count as a second ask)


def opening_query(specs: list[dict[str, Any]]) -> str:
    asked = {word.lower() for spec in specs for word in spec["words"]}
    return next(word for word in OPENING_QUERIES if word not in asked)


def child_warm(a: argparse.Namespace) -> dict[str, Any]:
    specs = json.loads(a.spec)
    t = time.perf_counter()
    store = open_store(a)
    store.call("knowledge_grep", {"query": opening_query(specs)})
    out: dict[str, Any] = {"reopen": time.perf_counter() - t, "parses": store.engine.scanner.parses}
    out["mode"] = store.freshness_mode
    mixed = [{k: v for k, v in spec.items() if k != "words"} for spec in specs]
    # every query's first call before any is asked again: what a query keeps (a filter's rows, the records
    # its hits show) would otherwise be ready for a first call timed after it
    firsts = [median_time(lambda args=args: store.call("knowledge_grep", args), 1) for args in mixed]
    first = {"query": specs[0]["query"]}
    out["warm"] = median_time(lambda: store.call("knowledge_grep", first), a.runs)
    # the same query at validAt (docs/time.md), an instant inside the store's span: its first call makes the
    # spans of validity (once per snapshot, from the starts the image keeps), and on a state no search at an
    # instant has seen yet writes the records expired since; the repeated one is what validAt adds to a warm query
    at = {**first, "validAt": middle_instant(store)}
    out["valid_first"] = median_time(lambda: store.call("knowledge_grep", at), 1)
    out["warm_valid"] = median_time(lambda: store.call("knowledge_grep", at), a.runs)
    lat, totals = [], []
    for args in mixed:
        lat.append(median_time(lambda args=args: store.call("knowledge_grep", args), a.runs))
        totals.append(store.call("knowledge_grep", args)["total"])
    out["mixed"], out["mixed_first"], out["totals"] = lat, firsts, totals
    out["rss"], out["rss_children"] = peak_rss(), children_rss()
    return out


def middle_instant(store: Any) -> str:
    """The middle of the store's occurred_at dates, as a validAt (a date)."""
    snap = store.snapshot()
    days = sorted(r.dates["occurred_at"].text[:10] for r in snap.records.values() if "occurred_at" in r.dates)
    return days[len(days) // 2] if days else "2026-01-01"


def child_walk(a: argparse.Namespace) -> dict[str, Any]:
    """warm and mixed as before change notification: every query walks and stats the store."""
    from knowtk.scan.changes import StatWalk

    specs = json.loads(a.spec)
    store = open_store(a, change_source=StatWalk)
    first = {"query": specs[0]["query"]}
    store.call("knowledge_grep", first)
    out: dict[str, Any] = {"warm": median_time(lambda: store.call("knowledge_grep", first), a.runs)}
    lat = []
    for spec in specs:
        args = {k: v for k, v in spec.items() if k != "words"}
        lat.append(median_time(lambda args=args: store.call("knowledge_grep", args), a.runs))
    out["mixed"] = lat
    return out


def cli_cmd(store: Path, state: Path, query: str) -> list[str]:
    return [sys.executable, "-m", "knowtk", "--store", str(store), "--state-dir", str(state), "grep", query]


def measure_cli(a: argparse.Namespace, store: Path, state: Path, word: str) -> float:
    """Median seconds of the whole process ``knowtk grep WORD`` on a built state."""
    times = []
    for _ in range(a.runs):
        t = time.perf_counter()
        subprocess.run(cli_cmd(store, state, word), check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


# a new process, timed inside: importing knowtk, then opening the store and answering one query
NEW_PROCESS = """
import json, sys, time
t0 = time.perf_counter()
import knowtk
t1 = time.perf_counter()
store = knowtk.open_store(sys.argv[1], state_dir=sys.argv[2])
store.call("knowledge_grep", {"query": sys.argv[3]})
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "open_query": t2 - t1}))
"""


def measure_new_process(a: argparse.Namespace, store: Path, state: Path, word: str) -> dict[str, float]:
    """The first query of a new process, timed as the whole process, and its parts (medians of --runs).

    whole = wall time of ``python -c ...`` from the parent; import and open_query are timed inside;
    interpreter is the rest (start, site, exit), so the three parts add up to the whole.
    """
    rows = []
    for _ in range(a.runs):
        t = time.perf_counter()
        res = subprocess.run(
            [sys.executable, "-c", NEW_PROCESS, str(store), str(state), word], check=True, capture_output=True
        )
        whole = time.perf_counter() - t
        inside = json.loads(res.stdout)
        rows.append({"whole": whole, **inside, "interpreter": whole - inside["import"] - inside["open_query"]})
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def measure_cli_after_edits(a: argparse.Namespace, store: Path, state: Path, paths: list[str]) -> float:
    """Median seconds of a whole-process ``knowtk grep`` right after ``paths`` were edited while no knowtk ran.

    Each run appends a new word to every file, runs the CLI for the first file's word (checked to be
    found), then restores the files and lets one more CLI call settle the state (untimed).
    """
    times = []
    for run in range(a.runs):
        originals = {p: (store / p).read_bytes() for p in paths}
        words = [edit_word(1000 + run, k) for k in range(len(paths))]
        try:
            for p, w in zip(paths, words, strict=True):
                (store / p).write_bytes(originals[p] + f"\n\nA new word: {w}.\n".encode())
            t = time.perf_counter()
            res = subprocess.run(cli_cmd(store, state, words[0]), check=True, capture_output=True, text=True)
            times.append(time.perf_counter() - t)
            if "1 hit(s)" not in res.stdout:
                raise SystemExit(f"the CLI after an outside edit missed it: {res.stdout[:300]}")
        finally:
            for p, data in originals.items():
                (store / p).write_bytes(data)
        subprocess.run(cli_cmd(store, state, "the"), check=True, capture_output=True)
    return statistics.median(times)


def child_edit_paths(a: argparse.Namespace) -> dict[str, Any]:
    """The files the edit groups change, chosen in a process of their own: choosing builds every record,
    which no measured process should hold (at 1M records it added ~3 GiB to the changed group's peak)."""
    candidates = edit_candidates(open_store(a).snapshot())
    paths = [path for path, _ in candidates]
    chosen, rid = candidates[len(candidates) // 2]
    step = max(1, len(candidates) // 7)
    others = [c for c in paths[::step] if c != chosen][:4]  # with chosen, the 5 files of the outside edits
    return {"path": chosen, "id": rid, "paths": [chosen, *others]}


def edit_candidates(snap: Any) -> list[tuple[str, str]]:
    """(path, id) of the active pages nothing supersedes or depends on (an edit to one lands in the searched
    projection), by path."""
    needed = {ref for r in snap.records.values() for ref in r.references}
    return sorted(
        (r.path, rid)
        for rid, r in snap.records.items()
        if r.kind == "page" and snap.available(rid) and snap.lifecycle[rid] == "active" and rid not in needed
    )


def child_changed(a: argparse.Namespace) -> dict[str, Any]:
    """One file edited in a warm process (opened, first query answered), then queried: --runs times."""
    edit = json.loads(a.spec)
    store = open_store(a)
    store.snapshot()
    store.call("knowledge_grep", {"query": "the"})
    path, rid = Path(a.store) / edit["path"], edit["id"]
    original = path.read_bytes()
    times, found, parses, written = [], [], [], []
    engine = store.engine
    try:
        for i in range(a.runs):
            word = f"zqxbench{i}{random.Random(i).randrange(10**6)}"
            path.write_bytes(original + f"\n\nA new word: {word}.\n".encode())
            before = engine.scanner.parses
            t = time.perf_counter()
            res = store.call("knowledge_grep", {"query": word})
            times.append(time.perf_counter() - t)
            found.append([h["id"] for h in res["hits"]] == [rid])
            parses.append(engine.scanner.parses - before)
            written.append(engine._keyword.written if engine._keyword else None)
    finally:
        path.write_bytes(original)
        store.call("knowledge_grep", {"query": "the"})
    return {
        "changed": statistics.median(times),
        "mode": store.freshness_mode,
        "found": all(found),
        "parses": parses,
        "written": written,
        "rss": peak_rss(),
        "rss_children": children_rss(),
    }


def edit_word(run: int, k: int = 0) -> str:
    return f"zqxedit{run}x{k}x{random.Random(run * 7 + k).randrange(10**6)}"


def child_changed_first(a: argparse.Namespace) -> dict[str, Any]:
    """The first change a new process sees: opened, first query answered, then one file edited and queried."""
    edit = json.loads(a.spec)
    store = open_store(a)
    store.call("knowledge_grep", {"query": "the"})  # the first query of the process (reopen)
    path = Path(a.store) / edit["path"]
    original = path.read_bytes()
    word = edit_word(edit["run"])
    try:
        path.write_bytes(original + f"\n\nA new word: {word}.\n".encode())
        t = time.perf_counter()
        res = store.call("knowledge_grep", {"query": word})
        took = time.perf_counter() - t
    finally:
        path.write_bytes(original)
        store.call("knowledge_grep", {"query": "the"})
    return {"changed_first": took, "found": [h["id"] for h in res["hits"]] == [edit["id"]], "rss": peak_rss()}


# -- the serve option: the whole process with and without `knowtk serve` --------------------------------
def child_serve_paths(a: argparse.Namespace) -> dict[str, Any]:
    """Five active pages nothing supersedes or depends on (an edit to each lands in the searched projection)."""
    candidates = [path for path, _ in edit_candidates(open_store(a).snapshot())]
    return {"paths": candidates[:: max(1, len(candidates) // 5)][:5]}


def start_server(base: list[str]) -> subprocess.Popen[bytes]:
    """``knowtk serve`` for ``base`` (the CLI up to its subcommand), once it answers ``serve --status``."""
    proc = subprocess.Popen([*base, "serve", "--idle-timeout", "3600"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 1800
    while subprocess.run([*base, "serve", "--status"], capture_output=True, check=False).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("knowtk serve did not start")
        time.sleep(0.2)
    return proc


def stop_server(base: list[str], proc: subprocess.Popen[bytes]) -> None:
    subprocess.run([*base, "serve", "--stop"], capture_output=True, check=False)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def serve_whole_process(a: argparse.Namespace, store: Path, state: Path, paths: list[str]) -> dict[str, float]:
    """The CLI's medians: state current, after 1 and after 5 outside edits (with ``KNOWTK_SERVE`` as set)."""
    out = {"current": measure_cli(a, store, state, a.serve_query)}
    for k in (1, len(paths)):
        out[f"after_{k}"] = measure_cli_after_edits(a, store, state, paths[:k])
    return out


def serve_group(a: argparse.Namespace, out: Path, n: int) -> dict[str, Any]:
    source = ensure_store(out, n, a.seed)
    store, state = out / f"serve-store-{n}-s{a.seed}", out / f"serve-state-{n}-s{a.seed}"
    if not store.is_dir():  # the edits go to a copy: the generated store is never written
        partial = out / f"serve-store-{n}-s{a.seed}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(source, partial, symlinks=True)
        partial.rename(store)
    base = cli_cmd(store, state, "")[:-2]
    alone = {**os.environ, "KNOWTK_SERVE": "0"}
    subprocess.run([*base, "grep", a.serve_query], check=True, capture_output=True, env=alone)  # built
    paths = run_child("serve_paths", a, store, state, [])["paths"]
    limits = load_limits()
    walk = limits.bench(lambda: limits.walk(str(store)), a.runs)[0]
    result: dict[str, Any] = {"n": n, "walk": walk, "paths": paths, "load": os.getloadavg()}
    try:
        os.environ["KNOWTK_SERVE"] = "0"
        result["alone"] = serve_whole_process(a, store, state, paths)
        server = start_server(base)
        try:
            os.environ["KNOWTK_SERVE"] = "require"
            result["served"] = serve_whole_process(a, store, state, paths)
        finally:
            stop_server(base, server)
    finally:
        os.environ.pop("KNOWTK_SERVE", None)
    return result


def serve_report(r: dict[str, Any], query: str) -> list[str]:
    walk = r["walk"]
    rows = [("state current", "current", 0.3), ("after 1 outside edit", "after_1", None)]
    rows.append((f"after {len(r['paths'])} outside edits", f"after_{len(r['paths'])}", 0.6))
    lines = [
        f"## {r['n']:,} records: whole-process `knowtk grep {query}` (medians; load average {r['load']})",
        "| whole process | without a server | with `knowtk serve` | target |",
        "|---|---:|---:|---:|",
    ]
    for label, key, extra in rows:
        target = f"walk + {extra} s = {fmt_s(walk + extra)}" if extra is not None else ""
        lines.append(f"| {label} | {fmt_s(r['alone'][key])} | {fmt_s(r['served'][key])} | {target} |")
    lines.append(f"| stat walk of the store (limits.py) | {fmt_s(walk)} | | |")
    return lines


CHILDREN = {
    "floor": child_floor,
    "serve_paths": child_serve_paths,
    "cold": child_cold,
    "warm": child_warm,
    "edit_paths": child_edit_paths,
    "changed": child_changed,
    "changed_first": child_changed_first,
    "walk": child_walk,
}


def run_child(group: str, a: argparse.Namespace, store: Path, state: Path, specs: Any) -> Any:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        result = Path(f.name)
    cmd = [sys.executable, __file__, "--child", group, "--child-out", str(result), "--store", str(store)]
    cmd += ["--state", str(state), "--spec", json.dumps(specs), "--runs", str(a.runs)]
    cmd += ["--queries", str(a.queries), "--seed", str(a.seed)]
    try:
        tree, once = run_sampled(cmd)
        out = json.loads(result.read_text())
        if isinstance(out, dict) and "rss" in out:
            # the whole tree (parse workers included): sampled, and never below what the kernel counted
            out["rss_tree"] = max(tree, out["rss"], out.get("rss_children", 0))
            out["mem_tree"] = max(once, out["rss"])  # each page counted once (run_sampled)
        return out
    finally:
        result.unlink(missing_ok=True)


# -- the table --------------------------------------------------------------------------------------
def fmt_s(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def fmt_bytes(b: float) -> str:
    if b < 2**20:
        return f"{b / 1024:.0f} KiB"
    return f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / 2**20:.0f} MiB"


def peak_tree(kt: dict[str, Any]) -> float:
    """Peak memory of any group's whole process tree (parse workers included), each page counted once; older
    results: the tree's RSS summed, or before that RUSAGE_SELF."""
    for keys in (
        ("mem_tree_cold", "mem_tree_warm", "mem_tree_changed"),
        ("rss_tree_cold", "rss_tree_warm", "rss_tree_changed"),
    ):
        if all(k in kt for k in keys):
            return float(max(kt[k] for k in keys))
    return float(max(kt["rss_cold"], kt["rss_warm"], kt["rss_changed"]))


def filtered(spec: dict[str, Any]) -> bool:
    return any(k not in ("query", "words", "mode") for k in spec)


def table(n: int, floor: dict[str, Any], kt: dict[str, Any], specs: list[dict[str, Any]]) -> list[str]:
    """Every figure of one size beside its floor (a results file older than a figure prints without it)."""
    walk = floor["walk"]
    e_alone = [floor["fts"][spec["mode"]][i] for i, spec in enumerate(specs)]
    per_query_floor = [walk + e for e in e_alone]
    cold_floor = floor["parse"] + floor["build"]
    rows: list[tuple[str, float | None, float | None]] = [
        ("cold build, first query (in process, imports excluded) / c1 parse + d FTS5 build", kt["cold"], cold_floor),
        ("whole-process `knowtk grep` (CLI), state current / a stat walk", kt.get("cli"), walk),
    ]
    new = kt.get("new_process")
    if new:
        rows.append(("new process, first query, whole process / a stat walk", new["whole"], walk))
    rows.append(("first query in a new process, imports excluded (open + query) / a stat walk", kt["reopen"], walk))
    for k, value in sorted(kt.get("cli_after_edits", {}).items(), key=lambda kv: int(kv[0])):
        rows.append((f"whole-process `knowtk grep` after {k} outside edit(s) / a stat walk", value, walk))
    first = kt["mixed_first"]
    rows += [
        (f"first call p50 ({len(specs)} mixed queries) / a walk + e query", pct(first, 50), pct(per_query_floor, 50)),
        (f"first call p95 ({len(specs)} mixed queries) / a walk + e query", pct(first, 95), pct(per_query_floor, 95)),
        ("first call max (the slowest of the mixed queries)", max(first), max(per_query_floor)),
        # the e query alone: FTS5's MATCH and bm25() top 20 of each query's words and mode, filters left out
        (f"first call p95 / e query alone, p95 of the same {len(specs)}", pct(first, 95), pct(e_alone, 95)),
        ("repeated call p50 (median of --runs each)", pct(kt["mixed"], 50), pct(per_query_floor, 50)),
        ("repeated call p95", pct(kt["mixed"], 95), pct(per_query_floor, 95)),
        ("the first query again, nothing changed", kt["warm"], walk + floor["fts"]["all"][0]),
        # floor: the same query without validAt (the target: at most 1.20x)
        ("the first query again at validAt, nothing changed / without validAt", kt.get("warm_valid"), kt["warm"]),
        ("its first call at validAt (the spans made; the expired records' rows written)", kt.get("valid_first"), None),
        ("one file changed, in a warmed process", kt["changed"], None),
        ("one file changed, the first change of a new process", kt.get("changed_first"), None),
    ]
    rg = floor.get("rg_queries")
    if rg:
        rows.append(("`rg -l -i -w`, the same words and modes: p50", pct(rg, 50), None))
        rows.append(("`rg -l -i -w`, the same words and modes: p95", pct(rg, 95), None))
    elif "rg" in floor:
        rows.append(("`rg -l -i -w` (older run: the first 10 words, not the same queries)", floor["rg"], None))
    lines = [
        f"### {n:,} records ({floor['files']:,} files, {floor['mb']:.0f} MB, {floor['folders']} folders)",
        "",
        "| measure / floor | knowtk | floor | knowtk/floor |",
        "|---|---:|---:|---:|",
    ]
    for name, value, base in rows:
        if value is None:
            continue
        ratio = f"{value / base:.2f}x" if base else ""
        lines.append(f"| {name} | {fmt_s(value)} | {fmt_s(base) if base else ''} | {ratio} |")
    mib = 2**20
    if "mem_tree_cold" in kt:
        lines.append(
            f"| peak memory, whole process tree incl. parse workers, each page counted once (cold / warm / changed) | "
            f"{kt['mem_tree_cold'] / mib:.0f} / {kt['mem_tree_warm'] / mib:.0f} / "
            f"{kt['mem_tree_changed'] / mib:.0f} MiB | | |"
        )
    if "rss_tree_cold" in kt:
        lines.append(
            f"| peak RSS of the whole process tree, summed (pages a worker shares with its parent counted twice) | "
            f"{kt['rss_tree_cold'] / mib:.0f} / {kt['rss_tree_warm'] / mib:.0f} / "
            f"{kt['rss_tree_changed'] / mib:.0f} MiB | | |"
        )
    lines.append(
        f"| peak RSS of the main process alone (cold / warm / changed) | {kt['rss_cold'] / mib:.0f} / "
        f"{kt['rss_warm'] / mib:.0f} / {kt['rss_changed'] / mib:.0f} MiB | | |"
    )
    fts = floor["fts"]
    lines += [
        "",
        f"Floor rows: a stat walk {fmt_s(walk)}, b read+sha256 {fmt_s(floor['read_hash'])}, "
        f"c1 CSafeLoader parse {fmt_s(floor['parse'])}, d FTS5 build {fmt_s(floor['build'])}, "
        f"e1/e2/e3 median {fmt_s(statistics.median(fts['all']))} / "
        f"{fmt_s(statistics.median(fts['any']))} / {fmt_s(statistics.median(fts['phrase']))}.",
        f"Cold: {kt['cold_parses']:,} files parsed. Changed file: found every time: {kt['found']}"
        + (f" (first change of a new process: {kt['changed_first_found']})" if "changed_first_found" in kt else "")
        + f", parses per change {kt['changed_parses']}, projection rows written {kt['changed_written']}.",
    ]
    if new:
        lines.append(
            f"A new process's first query, whole {fmt_s(new['whole'])} = interpreter start and exit "
            f"{fmt_s(new['interpreter'])} + `import knowtk` {fmt_s(new['import'])} + open and query "
            f"{fmt_s(new['open_query'])} (medians of --runs; the parts are each run's, so they add up per run)."
        )
    if "rss_children_cold" in kt:
        lines.append(
            f"Memory: the tree is sampled every 20 ms from /proc (the main process and every descendant); the "
            f"largest parse worker of the cold build peaked at {kt['rss_children_cold'] / mib:.0f} MiB "
            "(RUSAGE_CHILDREN)."
        )
    return lines


def targets(kt: dict[str, Any], floor: dict[str, Any], disk: dict[str, Any] | None) -> list[str]:
    """The performance targets that this run measures, from its own figures (None: not measured here)."""
    walk = floor["walk"]
    rg = floor.get("rg_queries")
    first = kt["mixed_first"]
    raw = floor["parse"] + floor["build"]
    after = kt.get("cli_after_edits", {})
    five = after.get("5")
    cold_state = (disk or {}).get("state_after_cold")
    rows: list[tuple[str, str, str, bool | None]] = [
        (
            "whole-process `knowtk grep`, state current",
            fmt_s(kt["cli"]),
            f"<= stat walk + 0.3 s ({fmt_s(walk + 0.3)})",
            kt["cli"] <= walk + 0.3,
        ),
        (
            "whole-process `knowtk grep`, after 5 outside edits",
            fmt_s(five) if five is not None else "not measured",
            f"<= stat walk + 0.6 s ({fmt_s(walk + 0.6)})",
            None if five is None else five <= walk + 0.6,
        ),
        ("first-call p95 of the mixed queries, open store", fmt_s(pct(first, 95)), "<= 100 ms", pct(first, 95) <= 0.1),
        (
            "first change after a new process opens",
            fmt_s(kt["changed_first"]) if "changed_first" in kt else "not measured",
            "<= 100 ms",
            kt["changed_first"] <= 0.1 if "changed_first" in kt else None,
        ),
        (
            "peak memory including workers",
            f"{peak_tree(kt) / 2**20:.0f} MiB",
            "<= 600 MiB (the 100k target)",
            peak_tree(kt) <= 600 * 2**20,
        ),
        (
            "cold build throughput / raw parse + insert",
            f"{raw / kt['cold']:.2f}x ({fmt_s(kt['cold'])})",
            ">= 0.8x",
            raw / kt["cold"] >= 0.8,
        ),
        (
            "warm p50 (repeated calls) / rg on the same queries (p50)",
            fmt_s(pct(kt["mixed"], 50)),
            f"<= 0.1x rg ({fmt_s(0.1 * pct(rg, 50))})" if rg else "<= 0.1x rg (no rg figures for the same queries)",
            pct(kt["mixed"], 50) <= 0.1 * pct(rg, 50) if rg else None,
        ),
        (
            "state on disk after a cold build and exit, WAL included",
            fmt_bytes(cold_state["bytes"]) if cold_state else "not measured",
            "<= 400 MiB (the 100k target)",
            cold_state["bytes"] <= 400 * 2**20 if cold_state else None,
        ),
    ]
    lines = [
        f"Targets measured by this run, freshness mode {kt['mode']} (the PEPs row against qmd: `bench/peers.py`):",
        "",
        "| measure | knowtk | target | result |",
        "|---|---:|---|---|",
    ]
    for name, value, text, ok in rows:
        lines.append(f"| {name} | {value} | {text} | {'' if ok is None else ('PASS' if ok else 'MISS')} |")
    walked = kt["walk"]
    lines += [
        "",
        f"With `change_source=StatWalk` (every query walks): the first query again {fmt_s(walked['warm'])}, "
        f"repeated-call p50 {fmt_s(pct(walked['mixed'], 50))}, p95 {fmt_s(pct(walked['mixed'], 95))}.",
    ]
    return lines


def describe(spec: dict[str, Any]) -> str:
    filters = "".join(f" {k}={v}" for k, v in spec.items() if k not in ("query", "words", "mode"))
    return f"{spec['mode']}:{spec['query']}{filters}"


def size_report(n: int, r: dict[str, Any]) -> list[str]:
    """The tables of one size from its results (a results file older than a figure prints without it)."""
    kt, specs = r["knowtk"], r["specs"]
    disk = r.get("disk")
    lines = [*table(n, r["floor"], kt, specs), ""]
    if "cli_after_edits" in kt:
        lines += [*targets(kt, r["floor"], disk)]
    if "totals" in r:
        rg = r["floor"].get("rg_queries") or [None] * len(specs)
        queries = "; ".join(
            f"{describe(s)} ({t} hits, first call {fmt_s(f)}, repeated {fmt_s(lat)}"
            + (f", rg {fmt_s(g)})" if g is not None else ")")
            for s, t, f, lat, g in zip(specs, r["totals"], kt["mixed_first"], kt["mixed"], rg, strict=True)
        )
        n_filtered = sum(filtered(s) for s in specs)
        lines.append(f"Mixed queries ({n_filtered} of {len(specs)} filtered): {queries}.")
    if disk:
        cold = disk.get("state_after_cold")
        lines.append(
            f"Disk: store {disk['store']['files']:,} files, {fmt_bytes(disk['store']['bytes'])} "
            f"({fmt_bytes(disk['store']['allocated'])} allocated); state {disk['state']['files']} files, "
            f"{fmt_bytes(disk['state']['bytes'])}"
            + (f" ({fmt_bytes(cold['bytes'])} right after the cold build)" if cold else "")
            + (
                f" (with the cold build's process still open: {fmt_bytes(disk['state_cold_open']['bytes'])}, "
                + ", ".join(f"{k} {fmt_bytes(b)}" for k, b in disk["state_cold_open"]["parts"].items())
                + ")"
                if "state_cold_open" in disk
                else ""
            )
            + f": {', '.join(f'{name} {fmt_bytes(b)}' for name, b in disk['state']['parts'].items())}"
            + (f", {disk['measured']}" if "measured" in disk else "")
            + "."
        )
    return lines


# -- the summary: every size, and a power law extrapolated to 1M records ----------------------------
def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    return {"s": fmt_s, "bytes": fmt_bytes}.get(unit, lambda v: f"{v:,.0f}")(value)


# key, label, unit, figure from one size's results (None where that run has no such figure)
MEASURES: list[tuple[str, str, str, Any]] = [
    ("cold", "cold build (first query, full build)", "s", lambda r: r["knowtk"]["cold"]),
    ("raw", "floor: c1 parse + d FTS5 build", "s", lambda r: r["floor"]["parse"] + r["floor"]["build"]),
    ("reopen", "first query, new process, imports excluded (open + query)", "s", lambda r: r["knowtk"]["reopen"]),
    ("new_process", "first query, new process, whole process", "s", lambda r: r["knowtk"]["new_process"]["whole"]),
    ("cli", "whole-process `knowtk grep` (CLI), state current", "s", lambda r: r["knowtk"]["cli"]),
    (
        "cli_edit1",
        "whole-process `knowtk grep` after 1 outside edit",
        "s",
        lambda r: r["knowtk"]["cli_after_edits"]["1"],
    ),
    (
        "cli_edit5",
        "whole-process `knowtk grep` after 5 outside edits",
        "s",
        lambda r: r["knowtk"]["cli_after_edits"]["5"],
    ),
    ("first_p50", "first call p50 (mixed queries)", "s", lambda r: pct(r["knowtk"]["mixed_first"], 50)),
    ("first_p95", "first call p95 (mixed queries)", "s", lambda r: pct(r["knowtk"]["mixed_first"], 95)),
    ("warm", "repeated call p50 (mixed queries)", "s", lambda r: pct(r["knowtk"]["mixed"], 50)),
    ("p95", "repeated call p95 (mixed queries)", "s", lambda r: pct(r["knowtk"]["mixed"], 95)),
    ("changed", "one file changed, warmed process", "s", lambda r: r["knowtk"]["changed"]),
    ("changed_first", "one file changed, first change of a new process", "s", lambda r: r["knowtk"]["changed_first"]),
    ("walk", "floor: stat walk", "s", lambda r: r["floor"]["walk"]),
    ("rg", "`rg -l -i -w` (p50; older runs: first 10 words)", "s", lambda r: r["floor"].get("rg")),
    (
        "rss",
        "peak memory (process tree incl. workers; older runs: main process)",
        "bytes",
        lambda r: peak_tree(r["knowtk"]),
    ),
    ("state", "state disk (everything under the state folder)", "bytes", lambda r: r["disk"]["state"]["bytes"]),
    ("store", "store disk (du: allocated blocks)", "bytes", lambda r: r["disk"]["store"]["allocated"]),
    ("store_bytes", "store bytes (file sizes)", "bytes", lambda r: r["disk"]["store"]["bytes"]),
    ("files", "store files", "count", lambda r: r["disk"]["store"]["files"]),
]


def power_law(points: dict[int, float]) -> tuple[float, float] | None:
    """(a, b) of t = a*n^b by least squares on (log n, log t); None with fewer than two sizes to fit."""
    pts = [(math.log(n), math.log(t)) for n, t in points.items() if t > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = statistics.fmean(x for x, _ in pts)
    my = statistics.fmean(y for _, y in pts)
    b = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return math.exp(my - b * mx), b


def targets_at(at: dict[str, float | None]) -> dict[str, tuple[str, float | None]]:
    """The live store's targets at 1M, their references (rg, walk, warm, raw) extrapolated: key -> (text, limit)."""

    def scaled(key: str, factor: float, offset: float = 0.0) -> float | None:
        value = at.get(key)
        return None if value is None else factor * value + offset

    return {
        "warm": ("<= 10% of rg", scaled("rg", 0.1)),
        "p95": ("<= 100 ms", 0.1),
        "changed": ("<= warm + 50 ms", scaled("warm", 1, 0.05)),
        "reopen": ("<= 3x the stat walk", scaled("walk", 3)),
        "cli": ("<= 1.5 s", 1.5),
        "cold": ("throughput >= 0.8x raw parse + insert: <= raw / 0.8", scaled("raw", 1 / 0.8)),
        "rss": ("< 1 GiB", float(GIB)),
    }


def short(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 and n < MILLION else f"{n:,}"


def extrapolate(results: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Every measure at every size, its power law and its value at 1M records."""
    measures: dict[str, Any] = {}
    for key, label, unit, figure in MEASURES:
        measured: dict[int, float] = {}
        for n, r in results.items():
            try:
                value = figure(r)
            except KeyError:  # a results file older than the figure
                value = None
            if value is not None:
                measured[n] = float(value)
        fit = power_law(measured)
        used = sorted(n for n, v in measured.items() if v > 0) if fit else []
        measures[key] = {
            "label": label,
            "unit": unit,
            "measured": measured,
            "fit_sizes": used,
            "a": fit[0] if fit else None,
            "b": fit[1] if fit else None,
            # how far the law misses the sizes it was fitted to (two sizes: exactly on it, so None)
            "fit_error": max(abs(measured[n] / (fit[0] * n ** fit[1]) - 1) for n in used)
            if fit and len(used) > 2
            else None,
            "at_1m": fit[0] * MILLION ** fit[1] if fit else None,
        }
    at = {key: m["at_1m"] for key, m in measures.items()}
    for key, (text, limit) in targets_at(at).items():
        value = at[key]
        measures[key]["target_1m"] = text
        measures[key]["limit_1m"] = limit
        measures[key]["ok_1m"] = None if value is None or limit is None else value <= limit
    return measures


def extrapolation_table(sizes: list[int], measures: dict[str, Any]) -> list[str]:
    fitted = sorted({n for m in measures.values() for n in m["fit_sizes"]})
    columns = " | ".join(f"{short(n)} (measured)" for n in sizes)
    lines = [
        f"Extrapolated to 1,000,000 records: each measure fitted to t = a*n^b by least squares on log-log over "
        f"the measured sizes ({', '.join(f'{n:,}' for n in fitted) or 'fewer than two: no fit'}); "
        "b is the exponent (1 = linear), fit off by the largest miss of the law at a measured size (with three "
        "sizes or more). The 1M column is EXTRAPOLATED, not measured; a power law ignores fixed costs "
        "(interpreter start, imports), so where they dominate (CLI, warm) it is rough. The targets at 1M "
        "extrapolate their references (rg, the stat walk, warm, raw parse + insert) the same way.",
        "",
        f"| measure | {columns} | b | fit off by | **1M (extrapolated)** | issue-11 target at 1M | 1M vs target |",
        "|---|" + "---:|" * len(sizes) + "---:|---:|---:|---|---|",
    ]
    for m in measures.values():
        cells = [fmt_value(m["measured"].get(n), m["unit"]) for n in sizes]
        b = "–" if m["b"] is None else f"{m['b']:.2f}"
        if m["b"] is not None and m["fit_sizes"] != fitted:
            b += f" ({', '.join(short(n) for n in m['fit_sizes'])})"
        target = m.get("target_1m", "")
        if target and m.get("limit_1m") is not None:
            target += f" ({fmt_value(m['limit_1m'], m['unit'])})"
        ok = m.get("ok_1m")
        verdict = "" if ok is None else ("PASS (extrapolated)" if ok else "MISS (extrapolated)")
        off = "–" if m["fit_error"] is None else f"{m['fit_error']:.0%}"
        lines.append(
            f"| {m['label']} | {' | '.join(cells)} | {b} | {off} | **{fmt_value(m['at_1m'], m['unit'])}** | "
            f"{target} | {verdict} |"
        )
    return lines


def backfill_disk(out: Path, n: int, seed: int, result: dict[str, Any]) -> str | None:
    """Disk figures for a results file written before they were recorded, from the folders as they are now."""
    if "disk" in result:
        return None
    store, state = out / f"store-{n}-s{seed}", out / f"state-{n}-s{seed}"
    if not (store.is_dir() and state.is_dir()):
        return f"{n:,}: no disk figures (results file without them, and no {store.name} / {state.name})"
    result["disk"] = {"store": disk_usage(store), "state": state_disk(state), "measured": "measured at summary time"}
    return f"{n:,}: disk measured now, at summary time (its results file has none)"


def summary(out: Path, sizes: list[int], seed: int) -> list[str]:
    """The summary over the results files of sizes in out: printed and written to summary-sS.json and .md."""
    results: dict[int, dict[str, Any]] = {}
    notes = []
    for n in sorted(set(sizes)):
        path = out / f"results-{n}-s{seed}.json"
        if not path.is_file():
            notes.append(f"{n:,}: no {path.name}, left out")
            continue
        results[n] = json.loads(path.read_text())
        note = backfill_disk(out, n, seed, results[n])
        if note:
            notes.append(note)
    if not results:
        raise SystemExit(f"no results-N-s{seed}.json in {out} for sizes {sizes}: run without --summary-only first")
    measures = extrapolate(results)
    lines = [f"# knowtk bench summary, seed {seed}", ""]
    for n, r in results.items():
        env = r.get("env")
        run = (
            f"run {env['date']}, nproc {env['nproc']}, python {env['python']}, sqlite {env['sqlite']}, "
            f"runs {env['runs']}, queries {env['queries']}"
            if env
            else "run details not recorded"
        )
        lines += [f"- {n:,} records: {run}."]
    lines += [f"- {note}." for note in notes]
    lines += ["", *extrapolation_table(sorted(results), measures), ""]
    for n, r in results.items():
        lines += [*size_report(n, r), ""]
    text = "\n".join(lines)
    (out / f"summary-s{seed}.md").write_text(text + "\n")
    summary_json = {"seed": seed, "sizes": sorted(results), "notes": notes, "measures": measures}
    summary_json["extrapolated"] = "at_1m, limit_1m and ok_1m are extrapolated by t = a*n^b, not measured"
    summary_json["disk"] = {n: r.get("disk") for n, r in results.items()}
    (out / f"summary-s{seed}.json").write_text(json.dumps(summary_json, indent=1))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        help="records per store (default 10000 100000; with --summary-only, every results file in --out)",
    )
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median)")
    ap.add_argument(
        "--summary-only",
        action="store_true",
        help="measure nothing: rebuild the summary of --sizes from the results files in --out",
    )
    ap.add_argument("--serve", action="store_true", help="only the whole-process CLI with and without knowtk serve")
    ap.add_argument("--serve-query", default="retro", help="the query of --serve (default: retro)")
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    ap.add_argument("--state", help=argparse.SUPPRESS)
    ap.add_argument("--spec", default="[]", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not a.child:
        compile_package()
    if a.child:
        if a.child != "floor":
            import knowtk  # noqa: F401  (not part of any timing)
        Path(a.child_out).write_text(json.dumps(CHILDREN[a.child](a)))
        return

    out = Path(a.out).resolve()
    if a.summary_only:
        found = [p.name.split("-")[1] for p in out.glob(f"results-*-s{a.seed}.json")]
        sizes = a.sizes or [int(n) for n in found if n.isdigit()]
        print("\n".join(summary(out, sizes, a.seed)))
        return
    a.sizes = a.sizes or [10_000, 100_000]
    out.mkdir(parents=True, exist_ok=True)
    if a.serve:
        for n in a.sizes:
            result = serve_group(a, out, n)
            (out / f"results-serve-{n}-s{a.seed}.json").write_text(json.dumps(result))
            print("\n".join(serve_report(result, a.serve_query)), flush=True)
        return
    env = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "runs": a.runs,
        "queries": a.queries,
    }
    print(
        f"# {env['date']}  nproc={env['nproc']}  python {env['python']}  "
        f"sqlite {env['sqlite']}  seed {a.seed}  runs {a.runs}",
        flush=True,
    )
    for n in a.sizes:
        store = ensure_store(out, n, a.seed)
        state = out / f"state-{n}-s{a.seed}"
        print(f"# {n:,}: floor ...", flush=True)
        floor = run_child("floor", a, store, state, [])
        specs = query_specs(floor["queries"])
        print(f"# {n:,}: knowtk cold ...", flush=True)
        cold = run_child("cold", a, store, state, specs)
        after_cold = state_disk(state)
        print(f"# {n:,}: knowtk warm and mixed ...", flush=True)
        warm = run_child("warm", a, store, state, specs)
        print(f"# {n:,}: knowtk one file changed ...", flush=True)
        edit = run_child("edit_paths", a, store, state, [])  # (chosen outside every measured process)
        changed = run_child("changed", a, store, state, edit)
        print(f"# {n:,}: knowtk with every query walking ...", flush=True)
        walked = run_child("walk", a, store, state, specs)
        print(f"# {n:,}: the first change a new process sees ...", flush=True)
        firsts = [run_child("changed_first", a, store, state, {**edit, "run": i}) for i in range(a.runs)]
        print(f"# {n:,}: whole processes (CLI, a new process's parts, after outside edits) ...", flush=True)
        cli = measure_cli(a, store, state, specs[0]["words"][0])
        new_process = measure_new_process(a, store, state, specs[0]["words"][0])
        after_edits = {
            str(k): measure_cli_after_edits(a, store, state, edit["paths"][:k]) for k in (1, len(edit["paths"]))
        }
        # after the last group, so the state holds all it will keep (a WAL checkpointed or not, as knowtk left it)
        disk = {"store": disk_usage(store), "state": state_disk(state), "state_after_cold": after_cold}
        disk["state_cold_open"] = cold["state_open"]
        kt = {
            "cold": cold["cold"],
            "cold_parses": cold["parses"],
            "reopen": warm["reopen"],
            "warm": warm["warm"],
            "warm_valid": warm["warm_valid"],
            "valid_first": warm["valid_first"],
            "mixed": warm["mixed"],
            "mixed_first": warm["mixed_first"],
            "changed": changed["changed"],
            "found": changed["found"],
            "changed_parses": changed["parses"],
            "changed_written": changed["written"],
            "changed_first": statistics.median(f["changed_first"] for f in firsts),
            "changed_first_found": all(f["found"] for f in firsts),
            "rss_cold": cold["rss"],
            "rss_warm": warm["rss"],
            "rss_changed": changed["rss"],
            "rss_tree_cold": cold["rss_tree"],
            "rss_tree_warm": warm["rss_tree"],
            "rss_tree_changed": changed["rss_tree"],
            "mem_tree_cold": cold["mem_tree"],
            "mem_tree_warm": warm["mem_tree"],
            "mem_tree_changed": changed["mem_tree"],
            "rss_children_cold": cold["rss_children"],
            "new_process": new_process,
            "cli_after_edits": after_edits,
            "mode": warm["mode"] if warm["mode"] == changed["mode"] else f"{warm['mode']}/{changed['mode']}",
            "walk": walked,
            "cli": cli,
        }
        result = {"n": n, "seed": a.seed, "env": env, "floor": floor, "knowtk": kt, "specs": specs, "disk": disk}
        result["totals"] = warm["totals"]
        (out / f"results-{n}-s{a.seed}.json").write_text(json.dumps(result))
        print("\n".join(size_report(n, result)) + "\n", flush=True)
    print("\n".join(summary(out, a.sizes, a.seed)))


if __name__ == "__main__":
    main()
