#!/usr/bin/env python3
"""Whole-process queries beside the peers: knowtk, ripgrep and (when installed) qmd, in one run.

    python bench/peers.py [CORPUS] [--runs 3] [--qmd PATH] [--node PATH] [--queries Q ...] [--edit] [--serve]

Each query is a new process, timed by its wall clock from here (interpreter or runtime start,
loading, the query, exit), for every tool on the same words:

- knowtk: ``python -m knowtk --store CORPUS --state-dir T grep QUERY`` (mode ``all``), its state in a
  temporary folder built once before timing (the corpus is never written);
- rg: ``rg -l -i -w`` with the same words in the same mode (one rg per word, each over the files the
  previous one listed: ``bench/run.py``'s ``rg_command``);
- qmd (optional): ``qmd search QUERY -n 20``, its index built once before timing by ``qmd collection
  add`` in a temporary cache (XDG_CACHE_HOME and HOME point there, so no index of yours is read or
  written). qmd is ``--qmd PATH``, else ``qmd`` on PATH, else ``node_modules/.bin/qmd`` under the
  current folder; it needs node 22 on PATH (``--node PATH`` puts that node's folder first, for qmd
  only). It is skipped, with the reason printed, when it is not found or ``qmd --version`` fails.
  qmd answers from its index without looking at the files: it is not fresh.

Every call must succeed (knowtk and qmd exit 0; rg 0 or 1, "no match"): a failing call stops the
run rather than be timed. ``--queries`` replaces the ten default queries (the PEPs' words).

``--edit`` adds the row "query right after a 1-file edit": the corpus is copied to the temporary
folder first (every tool then reads and indexes the copy; the corpus itself is never written), and
before each timed call one file gets a new word of its own appended, which each tool is then asked
for, as a new process; the row says how many of the edits each tool found (qmd, not updated, finds
none). One edit per run and tool, so ``--runs`` edits each.

``--serve`` adds the row "knowtk (serve)": ``knowtk serve`` started on the same store and state after
the build (docs/server.md), the same whole-process ``knowtk grep`` calls with ``KNOWTK_SERVE=require``
(each answered by the server, or the call fails); the plain knowtk row then runs with ``KNOWTK_SERVE=0``,
so it never reaches the server. With ``--edit``, the server's row gets its own edits too.

CORPUS defaults to the PEPs corpus beside this repository (../shared/corpora/peps); any store works.
Prints the versions, per tool the median and p95 over every query and run, and knowtk's median over
each peer's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import compile_package, pct, rg_command, start_server, stop_server
from startup import DEFAULT, QUERIES

Run = Callable[[str], tuple[float, str]]


def wall(cmd: list[str] | str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    """(seconds, stdout) of one whole process; raises when it exits with a code not in ``ok``."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, env=env, check=False, text=True)
    took = time.perf_counter() - t0
    if done.returncode not in ok:
        raise RuntimeError(f"{cmd!r} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return took, done.stdout


def words(query: str) -> list[str]:
    """The query's words as knowtk's tokenizer splits them (letters and digits), lower-cased."""
    return re.findall(r"\w+", query.lower())


def find_qmd(given: str | None) -> str | None:
    if given:
        return given
    local = Path.cwd() / "node_modules" / ".bin" / "qmd"
    return shutil.which("qmd") or (str(local) if local.exists() else None)


def qmd_env(home: str, node: str | None) -> dict[str, str]:
    """An environment whose qmd index lives under ``home``, with ``node``'s folder first on PATH."""
    path = os.environ.get("PATH", "")
    if node:
        path = os.path.dirname(os.path.abspath(node)) + os.pathsep + path
    return {**os.environ, "PATH": path, "HOME": home, "XDG_CACHE_HOME": os.path.join(home, ".cache")}


def qmd_setup(qmd: str, corpus: str, env: dict[str, str]) -> float:
    """The seconds qmd's index build of the corpus took."""
    t = time.perf_counter()
    subprocess.run(
        [qmd, "collection", "add", corpus, "--name", "peers", "--mask", "**/*.md"],
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t


def version(cmd: list[str], env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({exc})"
    return (done.stdout or done.stderr).strip().splitlines()[0]


def edit_one(corpus: str, n: int) -> tuple[str, str]:
    """Append a word of its own to the n-th Markdown file of the copy; (its path, the word)."""
    files = sorted(str(p) for p in Path(corpus).rglob("*.md") if not any(x.startswith(("_", ".")) for x in p.parts))
    path = files[(n * 7919) % len(files)]
    word = f"zqedit{n:04d}x"
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"\n{word}\n")
    return path, word


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--qmd", help="the qmd command (default: qmd on PATH, else ./node_modules/.bin/qmd)")
    ap.add_argument("--node", help="the node 22 binary qmd runs on (default: node on PATH)")
    ap.add_argument("--queries", nargs="+", help="the queries (default: ten about Python, for the PEPs)")
    ap.add_argument("--edit", action="store_true", help="also time the query right after a 1-file edit (on a copy)")
    ap.add_argument("--serve", action="store_true", help="also time knowtk with `knowtk serve` running")
    a = ap.parse_args()
    queries = a.queries or QUERIES
    compile_package()  # what an installed package has (bench/run.py)
    tmp = tempfile.mkdtemp(prefix="knowtk-peers-")
    server = None
    try:
        corpus = os.path.abspath(a.corpus)
        if a.edit:  # every tool reads the copy: the edits never touch the corpus
            corpus = shutil.copytree(corpus, os.path.join(tmp, "corpus"), symlinks=True)
        state = os.path.join(tmp, "state")
        kt = [sys.executable, "-m", "knowtk", "--store", corpus, "--state-dir", state, "grep"]
        t = time.perf_counter()
        subprocess.run([*kt, "warm"], stdout=subprocess.DEVNULL, check=True)
        builds = {"knowtk": time.perf_counter() - t}
        alone = {**os.environ, "KNOWTK_SERVE": "0"}  # never answered by a server, even when one runs
        tools: dict[str, Run] = {"knowtk": lambda q: wall([*kt, q], env=alone)}
        if a.serve:
            server = start_server(kt[:-1])
            served = {**os.environ, "KNOWTK_SERVE": "require"}
            tools["knowtk (serve)"] = lambda q: wall([*kt, q], env=served)
        rg = shutil.which("rg")
        if rg:
            tools["rg -l -i -w"] = lambda q: wall(rg_command(rg, words(q), "all", corpus), ok=(0, 1, 123))
        notes = [] if rg else ["rg: not installed, skipped"]
        versions = {"python": sys.version.split()[0], "rg": version([rg, "--version"]) if rg else "none"}
        qmd = find_qmd(a.qmd)
        env = qmd_env(os.path.join(tmp, "qmd-home"), a.node)
        qmd_version = version([qmd, "--version"], env) if qmd else "not installed"
        if qmd and not qmd_version.startswith("unavailable"):
            versions.update(qmd=qmd_version, node=version(["node", "--version"], env))
            builds["qmd"] = qmd_setup(qmd, corpus, env)
            tools["qmd search"] = lambda q: wall([qmd, "search", q, "-n", "20"], env=env)
        else:
            notes.append(f"qmd: {qmd_version} (npm install @tobilu/qmd, node 22), skipped")
        times: dict[str, list[float]] = {name: [] for name in tools}
        times["python -c pass"] = []
        for _ in range(a.runs):
            times["python -c pass"].append(wall([sys.executable, "-c", "pass"])[0])
            for q in queries:
                for name, run in tools.items():
                    times[name].append(run(q)[0])
        edits = timed_edits(corpus, tools, a.runs) if a.edit else None
        report(a.corpus, len(queries), a.runs, times, builds, notes, versions, edits)
    finally:
        if server is not None:
            stop_server(kt[:-1], server)
        shutil.rmtree(tmp, ignore_errors=True)


def timed_edits(corpus: str, tools: dict[str, Run], runs: int) -> dict[str, tuple[list[float], int]]:
    """Per tool: the wall times of the query for a word just appended to one file, and how many found it."""
    out: dict[str, tuple[list[float], int]] = {name: ([], 0) for name in tools}
    n = 0
    for _ in range(runs):
        for name, run in tools.items():
            path, word = edit_one(corpus, n)
            n += 1
            took, printed = run(word)
            times, found = out[name]
            times.append(took)
            out[name] = (times, found + (os.path.basename(path) in printed or path in printed))
    return out


def report(
    corpus: str,
    n_queries: int,
    runs: int,
    times: dict[str, list[float]],
    builds: dict[str, float],
    notes: list[str],
    versions: dict[str, str],
    edits: dict[str, tuple[list[float], int]] | None,
) -> None:
    print(f"corpus {corpus}: {n_queries} queries x {runs} runs, each a new process, same words, same run")
    print("versions: " + "; ".join(f"{k} {v}" for k, v in versions.items()) + f"; load average {os.getloadavg()}")
    print("| whole-process query | median | p95 | knowtk / this |")
    print("|---|---:|---:|---:|")
    ours = statistics.median(times["knowtk"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med * 1e3:.0f} ms | {pct(ts, 95) * 1e3:.0f} ms | {ours / med:.2f}x |")
    if edits:
        print("| query right after a 1-file edit | median | found the edit | knowtk / this |")
        print("|---|---:|---:|---:|")
        mine = statistics.median(edits["knowtk"][0])
        for name, (ts, found) in edits.items():
            med = statistics.median(ts)
            print(f"| {name} | {med * 1e3:.0f} ms | {found} of {len(ts)} | {mine / med:.2f}x |")
    print("index built once before timing: " + ", ".join(f"{k} {v:.2f} s" for k, v in builds.items()))
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
