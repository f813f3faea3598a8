#!/usr/bin/env python3
"""knowtk against the floor: how close the query path comes to "stat walk + raw FTS5".

    python bench/run.py [--sizes 10000 100000] [--out bench/out] [--queries 20] [--seed 1] [--runs 5]
    python bench/run.py --summary-only [--sizes 10000 100000 300000] [--out bench/out] [--seed 1]

For every size it generates a synthetic store with ``../shared/bench/gen_store.py``
(reused from --out when already there), measures the floor with the functions of
``../shared/bench/limits.py`` (a stat walk, c1 YAML parse, d FTS5 build, e1-e3 raw
FTS5 queries, f ripgrep), then measures knowtk, each group in a fresh Python
process so that its peak RSS is its own:

- cold:    state removed, first query (full scan, parse and index build);
- warm:    a new process on the built state (its first query is "reopen"), then the
           same query again with nothing changed, then --queries mixed queries
           (the floor's words; modes all/any/phrase; some filtered by kind, type,
           tag, scope or lifecycle all), each the median of --runs calls;
- changed: one record's body rewritten with a new word, then a query for that word
           (it must be found), --runs times; the file is restored afterwards;
- walk:    warm and mixed again with ``change_source=StatWalk`` (every query walks),
           the path every query took before change notification;
- cli:     the whole process ``knowtk grep WORD`` on the built state, --runs times.

warm, mixed and changed use the change source ``open_store`` picks (inotify on Linux;
its ``freshness_mode`` is printed). The tables print knowtk beside the floor, and the
targets of issue 11 (live store). knowtk's state
goes to --out/state-N-sS, never into the generated store. Results are also written
to --out/results-N-sS.json, with the disk each size takes (the store's and the state
folder's bytes and files, measured after the last group).

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
import resource
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
    if rg:
        words = sorted({w for ws in queries for w in ws})[:10]
        lat = [
            limits.bench(lambda w=w: subprocess.run([rg, "-l", "-i", "-w", w, root], capture_output=True), 3)[0]
            for w in words
        ]
        out["rg"] = statistics.median(lat)
    return out


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
    out["rss"] = peak_rss()
    return out


def child_warm(a: argparse.Namespace) -> dict[str, Any]:
    specs = json.loads(a.spec)
    t = time.perf_counter()
    store = open_store(a)
    store.call("knowledge_grep", {"query": specs[0]["query"]})
    out: dict[str, Any] = {"reopen": time.perf_counter() - t, "parses": store.engine.scanner.parses}
    out["mode"] = store.freshness_mode
    first = {"query": specs[0]["query"]}
    out["warm"] = median_time(lambda: store.call("knowledge_grep", first), a.runs)
    lat, firsts, totals = [], [], []
    for spec in specs:
        args = {k: v for k, v in spec.items() if k != "words"}
        firsts.append(median_time(lambda args=args: store.call("knowledge_grep", args), 1))  # nothing kept for it yet
        lat.append(median_time(lambda args=args: store.call("knowledge_grep", args), a.runs))
        totals.append(store.call("knowledge_grep", args)["total"])
    out["mixed"], out["mixed_first"], out["totals"] = lat, firsts, totals
    out["rss"] = peak_rss()
    return out


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


def measure_cli(a: argparse.Namespace, store: Path, state: Path, word: str) -> float:
    """Median seconds of the whole process ``knowtk grep WORD`` on a built state."""
    cmd = [sys.executable, "-m", "knowtk", "--store", str(store), "--state-dir", str(state), "grep", word]
    times = []
    for _ in range(a.runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def child_changed(a: argparse.Namespace) -> dict[str, Any]:
    store = open_store(a)
    snap = store.snapshot()
    store.call("knowledge_grep", {"query": "the"})
    # an active page that nothing supersedes or depends on, so the new word lands in the searched projection
    needed = {ref for r in snap.records.values() for ref in r.references}
    candidates = sorted(
        r.path
        for rid, r in snap.records.items()
        if r.kind == "page" and snap.available(rid) and snap.lifecycle[rid] == "active" and rid not in needed
    )
    chosen = candidates[len(candidates) // 2]
    path = Path(a.store) / chosen
    rid = next(r.id for r in snap.records.values() if r.path == chosen)
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
    }


CHILDREN = {
    "floor": child_floor,
    "cold": child_cold,
    "warm": child_warm,
    "changed": child_changed,
    "walk": child_walk,
}


def run_child(group: str, a: argparse.Namespace, store: Path, state: Path, specs: list[dict[str, Any]]) -> Any:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        result = Path(f.name)
    cmd = [sys.executable, __file__, "--child", group, "--child-out", str(result), "--store", str(store)]
    cmd += ["--state", str(state), "--spec", json.dumps(specs), "--runs", str(a.runs)]
    cmd += ["--queries", str(a.queries), "--seed", str(a.seed)]
    try:
        subprocess.run(cmd, check=True)
        return json.loads(result.read_text())
    finally:
        result.unlink(missing_ok=True)


# -- the table --------------------------------------------------------------------------------------
def fmt_s(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def fmt_bytes(b: float) -> str:
    if b < 2**20:
        return f"{b / 1024:.0f} KiB"
    return f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / 2**20:.0f} MiB"


def table(n: int, floor: dict[str, Any], kt: dict[str, Any], specs: list[dict[str, Any]]) -> list[str]:
    fts = floor["fts"]
    walk = floor["walk"]
    per_query_floor = [walk + fts[spec["mode"]][i] for i, spec in enumerate(specs)]
    warm_floor = walk + fts["all"][0]
    cold_floor = floor["parse"] + floor["build"]
    rows = [
        # metric, knowtk, floor, target (max allowed knowtk value), target text
        ("cold first query (full build)", kt["cold"], cold_floor, 2 * cold_floor, "<= 2x (c1 parse + d build)"),
        ("first query, new process (reopen)", kt["reopen"], walk + fts["all"][0], None, ""),
        ("warm query, nothing changed", kt["warm"], warm_floor, 2 * warm_floor, "<= 2x (a walk + e query)"),
        ("query after one file changed", kt["changed"], warm_floor, 2 * kt["warm"], "<= 2x knowtk warm"),
        (
            f"mixed p50 ({len(specs)} queries)",
            pct(kt["mixed"], 50),
            pct(per_query_floor, 50),
            2 * pct(per_query_floor, 50),
            "<= 2x (a walk + e query)",
        ),
        (f"mixed p95 ({len(specs)} queries)", pct(kt["mixed"], 95), pct(per_query_floor, 95), None, ""),
    ]
    lines = [
        f"### {n:,} records ({floor['files']:,} files, {floor['mb']:.0f} MB, {floor['folders']} folders)",
        "",
        "| measure | knowtk | floor | knowtk/floor | target | result |",
        "|---|---:|---:|---:|---|---|",
    ]
    for name, value, base, limit, text in rows:
        verdict = "" if limit is None else ("PASS" if value <= limit else "MISS")
        lines.append(f"| {name} | {fmt_s(value)} | {fmt_s(base)} | {value / base:.2f}x | {text} | {verdict} |")
    rss = max(kt["rss_cold"], kt["rss_warm"], kt["rss_changed"])
    lines.append(
        f"| peak RSS (cold / warm / changed) | {kt['rss_cold'] / 2**20:.0f} / {kt['rss_warm'] / 2**20:.0f} / "
        f"{kt['rss_changed'] / 2**20:.0f} MiB | | | < 1 GiB | {'PASS' if rss < GIB else 'MISS'} |"
    )
    rg = f", f rg -l -i -w {fmt_s(floor['rg'])}" if "rg" in floor else ""
    lines += [
        "",
        f"Floor rows: a stat walk {fmt_s(walk)}, b read+sha256 {fmt_s(floor['read_hash'])}, "
        f"c1 CSafeLoader parse {fmt_s(floor['parse'])}, d FTS5 build {fmt_s(floor['build'])}, "
        f"e1/e2/e3 median {fmt_s(statistics.median(fts['all']))} / "
        f"{fmt_s(statistics.median(fts['any']))} / {fmt_s(statistics.median(fts['phrase']))}{rg}.",
        f"Cold: {kt['cold_parses']:,} files parsed. Changed file: found every time: {kt['found']}, "
        f"parses per change {kt['changed_parses']}, projection rows written {kt['changed_written']}.",
    ]
    return lines


def targets(kt: dict[str, Any], floor: dict[str, Any]) -> list[str]:
    """The targets of issue 11 (live store), from this run's figures."""
    rg = floor.get("rg")
    p50, p95 = pct(kt["mixed"], 50), pct(kt["mixed"], 95)
    raw = floor["parse"] + floor["build"]
    rows: list[tuple[str, str, str, bool | None]] = [
        (
            "warm query, nothing changed (p50 of the mixed queries)",
            fmt_s(p50),
            f"<= 10% of rg -l -i -w ({fmt_s(0.1 * rg)})" if rg else "<= 10% of rg (no rg here)",
            p50 <= 0.1 * rg if rg else None,
        ),
        ("mixed p95", fmt_s(p95), "<= 100 ms", p95 <= 0.1),
        (
            "query after one file changed",
            fmt_s(kt["changed"]),
            f"<= warm (the p50 above) + 50 ms ({fmt_s(p50 + 0.05)})",
            kt["changed"] <= p50 + 0.05,
        ),
        (
            "first query, new process, built state",
            fmt_s(kt["reopen"]),
            f"<= 3x the stat walk ({fmt_s(3 * floor['walk'])})",
            kt["reopen"] <= 3 * floor["walk"],
        ),
        ("whole-process `knowtk grep` (CLI), built state", fmt_s(kt["cli"]), "<= 1.5 s", kt["cli"] <= 1.5),
        (
            "cold build throughput / raw parse + insert",
            f"{raw / kt['cold']:.2f}x ({fmt_s(kt['cold'])})",
            ">= 0.8x",
            raw / kt["cold"] >= 0.8,
        ),
        (
            "peak memory",
            f"{max(kt['rss_cold'], kt['rss_warm'], kt['rss_changed']) / 2**20:.0f} MiB",
            "< 1 GiB",
            max(kt["rss_cold"], kt["rss_warm"], kt["rss_changed"]) < GIB,
        ),
    ]
    lines = [
        f"Targets (issue 11), freshness mode {kt['mode']}:",
        "",
        "| measure | knowtk | target | result |",
        "|---|---:|---|---|",
    ]
    for name, value, text, ok in rows:
        lines.append(f"| {name} | {value} | {text} | {'' if ok is None else ('PASS' if ok else 'MISS')} |")
    walk = kt["walk"]
    first = kt["mixed_first"]
    lines += [
        "",
        f"First call of each mixed query (before anything is kept for its words): p50 {fmt_s(pct(first, 50))}, "
        f"p95 {fmt_s(pct(first, 95))}, max {fmt_s(max(first))}.",
        f"The same with `change_source=StatWalk` (every query walks): warm {fmt_s(walk['warm'])}, "
        f"mixed p50 {fmt_s(pct(walk['mixed'], 50))}, p95 {fmt_s(pct(walk['mixed'], 95))}.",
    ]
    return lines


def describe(spec: dict[str, Any]) -> str:
    filters = "".join(f" {k}={v}" for k, v in spec.items() if k not in ("query", "words", "mode"))
    return f"{spec['mode']}:{spec['query']}{filters}"


def size_report(n: int, r: dict[str, Any]) -> list[str]:
    """The tables of one size from its results (a results file older than totals or disk prints without them)."""
    kt, specs = r["knowtk"], r["specs"]
    lines = [*table(n, r["floor"], kt, specs), "", *targets(kt, r["floor"])]
    if "totals" in r:
        queries = "; ".join(
            f"{describe(s)} ({t} hits, {lat * 1e3:.0f} ms)"
            for s, t, lat in zip(specs, r["totals"], kt["mixed"], strict=True)
        )
        lines.append(f"Mixed queries: {queries}.")
    disk = r.get("disk")
    if disk:
        cold = disk.get("state_after_cold")
        lines.append(
            f"Disk: store {disk['store']['files']:,} files, {fmt_bytes(disk['store']['bytes'])} "
            f"({fmt_bytes(disk['store']['allocated'])} allocated); state {disk['state']['files']} files, "
            f"{fmt_bytes(disk['state']['bytes'])}"
            + (f" ({fmt_bytes(cold['bytes'])} right after the cold build)" if cold else "")
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


def peak(kt: dict[str, Any]) -> float:
    return float(max(kt["rss_cold"], kt["rss_warm"], kt["rss_changed"]))


# key, label, unit, figure from one size's results (None where that run has no such figure)
MEASURES: list[tuple[str, str, str, Any]] = [
    ("cold", "cold build (first query, full build)", "s", lambda r: r["knowtk"]["cold"]),
    ("raw", "floor: c1 parse + d FTS5 build", "s", lambda r: r["floor"]["parse"] + r["floor"]["build"]),
    ("reopen", "first query, new process (reopen)", "s", lambda r: r["knowtk"]["reopen"]),
    ("cli", "whole-process `knowtk grep` (CLI)", "s", lambda r: r["knowtk"]["cli"]),
    ("warm", "warm p50 (mixed queries)", "s", lambda r: pct(r["knowtk"]["mixed"], 50)),
    ("p95", "mixed p95", "s", lambda r: pct(r["knowtk"]["mixed"], 95)),
    ("changed", "query after one file changed", "s", lambda r: r["knowtk"]["changed"]),
    ("walk", "floor: stat walk", "s", lambda r: r["floor"]["walk"]),
    ("rg", "floor: `rg -l -i -w`", "s", lambda r: r["floor"].get("rg")),
    ("rss", "peak memory (RSS)", "bytes", lambda r: peak(r["knowtk"])),
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
    """Issue 11's targets at 1M, their references (rg, the walk, warm, raw) extrapolated too: key -> (text, limit)."""

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
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    ap.add_argument("--state", help=argparse.SUPPRESS)
    ap.add_argument("--spec", default="[]", help=argparse.SUPPRESS)
    a = ap.parse_args()
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
        changed = run_child("changed", a, store, state, specs)
        print(f"# {n:,}: knowtk with every query walking ...", flush=True)
        walked = run_child("walk", a, store, state, specs)
        print(f"# {n:,}: whole-process CLI ...", flush=True)
        cli = measure_cli(a, store, state, specs[0]["words"][0])
        # after the last group, so the state holds all it will keep (a WAL checkpointed or not, as knowtk left it)
        disk = {"store": disk_usage(store), "state": state_disk(state), "state_after_cold": after_cold}
        kt = {
            "cold": cold["cold"],
            "cold_parses": cold["parses"],
            "reopen": warm["reopen"],
            "warm": warm["warm"],
            "mixed": warm["mixed"],
            "mixed_first": warm["mixed_first"],
            "changed": changed["changed"],
            "found": changed["found"],
            "changed_parses": changed["parses"],
            "changed_written": changed["written"],
            "rss_cold": cold["rss"],
            "rss_warm": warm["rss"],
            "rss_changed": changed["rss"],
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
