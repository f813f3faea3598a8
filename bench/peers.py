#!/usr/bin/env python3
"""Whole-process queries beside the peers: knowtk, ripgrep and (when installed) qmd, in one run.

    python bench/peers.py [CORPUS] [--runs 3] [--qmd PATH]

Each query is a new process, timed by its wall clock from here (interpreter or runtime start,
loading, the query, exit), for every tool on the same words:

- knowtk: ``python -m knowtk --store CORPUS --state-dir T grep QUERY`` (mode ``all``), its state in a
  temporary folder built once before timing (the corpus is never written);
- rg: ``rg -l -i -w`` with the same words in the same mode (one rg per word, each over the files the
  previous one listed: ``bench/run.py``'s ``rg_command``);
- qmd (optional, skipped when no ``qmd`` is on PATH and no --qmd is given): ``qmd search QUERY``, its
  index built once before timing by ``qmd collection add`` in a temporary cache (XDG_CACHE_HOME and
  HOME point there, so no index of yours is read or written). qmd needs node 22 (``npm install -g
  @tobilu/qmd``). qmd answers from its index without looking at the files: it is not fresh.

CORPUS defaults to the PEPs corpus beside this repository (../shared/corpora/peps); any store works.
Prints per tool the median and p95 over every query and run, and knowtk's median over each peer's.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import pct, rg_command
from startup import DEFAULT, QUERIES


def wall(cmd: list[str] | str, env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, env=env, check=False)
    return time.perf_counter() - t0


def words(query: str) -> list[str]:
    """The query's words as knowtk's tokenizer splits them (letters and digits), lower-cased."""
    return re.findall(r"\w+", query.lower())


def qmd_setup(qmd: str, corpus: str, home: str) -> tuple[dict[str, str], float]:
    """An environment whose qmd index lives under home, and the seconds its index build took."""
    env = {**os.environ, "HOME": home, "XDG_CACHE_HOME": os.path.join(home, ".cache")}
    t = time.perf_counter()
    subprocess.run(
        [qmd, "collection", "add", corpus, "--name", "peers", "--mask", "**/*.md"],
        env=env,
        check=True,
        capture_output=True,
    )
    return env, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--qmd", help="the qmd command (default: qmd on PATH; skipped when there is none)")
    a = ap.parse_args()
    corpus = os.path.abspath(a.corpus)
    tmp = tempfile.mkdtemp(prefix="knowtk-peers-")
    try:
        state = os.path.join(tmp, "state")
        kt = [sys.executable, "-m", "knowtk", "--store", corpus, "--state-dir", state, "grep"]
        t = time.perf_counter()
        subprocess.run([*kt, "warm"], stdout=subprocess.DEVNULL, check=True)
        builds = {"knowtk": time.perf_counter() - t}
        tools: dict[str, object] = {"knowtk": lambda q: wall([*kt, q])}
        rg = shutil.which("rg")
        if rg:
            tools["rg -l -i -w"] = lambda q: wall(rg_command(rg, words(q), "all", corpus))
        notes = [] if rg else ["rg: not installed, skipped"]
        qmd = a.qmd or shutil.which("qmd")
        if qmd:
            env, builds["qmd"] = qmd_setup(qmd, corpus, os.path.join(tmp, "qmd-home"))
            tools["qmd search"] = lambda q: wall([qmd, "search", q, "-n", "20"], env=env)
        else:
            notes.append("qmd: not installed (npm install -g @tobilu/qmd, node 22), skipped")
        times: dict[str, list[float]] = {name: [] for name in tools}
        times["python -c pass"] = []
        for _ in range(a.runs):
            times["python -c pass"].append(wall([sys.executable, "-c", "pass"]))
            for q in QUERIES:
                for name, run in tools.items():
                    times[name].append(run(q))  # type: ignore[operator]
        report(corpus, a.runs, times, builds, notes)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(corpus: str, runs: int, times: dict[str, list[float]], builds: dict[str, float], notes: list[str]) -> None:
    print(f"corpus {corpus}: {len(QUERIES)} queries x {runs} runs, each a new process, same words, same run")
    print("| whole-process query | median | p95 | knowtk / this |")
    print("|---|---:|---:|---:|")
    ours = statistics.median(times["knowtk"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med * 1e3:.0f} ms | {pct(ts, 95) * 1e3:.0f} ms | {ours / med:.2f}x |")
    print("index built once before timing: " + ", ".join(f"{k} {v:.2f} s" for k, v in builds.items()))
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
