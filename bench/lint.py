#!/usr/bin/env python3
"""``knowtk lint`` beside the costs it is held to: a cold open, and a warm ``knowtk records``.

    python bench/lint.py STORE [--out bench/out] [--runs 3]

Each figure is a whole new process (``python -m knowtk ...``), the median of ``--runs``:

- cold open: ``knowtk records --limit 1`` on a new, empty state (every file read and parsed, the state built);
- cold open + lint: ``knowtk lint --format json`` on a new, empty state;
- warm records: ``knowtk records --limit 1`` on the built state;
- warm lint: ``knowtk lint --format json`` on the built state, where a lint ran before (its link pass kept: on
  an unchanged store the kept links are resolved again and no file is read); and without its link pass
  (``--rule broken-link=off --rule broken-wikilink=off --rule broken-anchor=off``);
- first lint on the built state (once, not a median): a lint where none ran yet, whose link pass reads every
  file.

Targets (docs/lint.md): cold open + lint at most 1.1 x the cold open; warm lint at most 2 x warm records.
Prints a Markdown table and the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NO_LINKS = ["--rule", "broken-link=off", "--rule", "broken-wikilink=off", "--rule", "broken-anchor=off"]


def timed(store: str, state: Path, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "knowtk", "--store", store, "--state-dir", str(state), *args]
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, env=env)
    elapsed = time.perf_counter() - t
    if done.returncode not in (0, 1):  # lint exits 1 on findings: that is an answer
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode()[-2000:]}")
    return elapsed


def median(fn: object, runs: int) -> float:
    return statistics.median(fn() for _ in range(runs))  # type: ignore[operator]


def cold(store: str, out: Path, *args: str) -> float:
    state = out / "lint-cold-state"
    shutil.rmtree(state, ignore_errors=True)
    try:
        return timed(store, state, *args)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    warm_state = out / ("lint-warm-" + Path(a.store).resolve().name)
    timed(a.store, warm_state, "records", "--limit", "1")  # builds the state the warm figures share
    first_lint = timed(a.store, warm_state, "lint", "--format", "json")  # keeps the link pass a warm lint reads
    rows = [
        (
            "cold open (`records --limit 1`, new state)",
            median(lambda: cold(a.store, out, "records", "--limit", "1"), a.runs),
        ),
        (
            "cold open + lint (`lint --format json`, new state)",
            median(lambda: cold(a.store, out, "lint", "--format", "json"), a.runs),
        ),
        ("warm `records --limit 1`", median(lambda: timed(a.store, warm_state, "records", "--limit", "1"), a.runs)),
        ("warm `lint --format json`", median(lambda: timed(a.store, warm_state, "lint", "--format", "json"), a.runs)),
        (
            "warm lint, no link pass",
            median(lambda: timed(a.store, warm_state, "lint", "--format", "json", *NO_LINKS), a.runs),
        ),
        ("first lint on the built state (once)", first_lint),
    ]
    print(f"store {a.store}; medians of {a.runs} new processes; load average {os.getloadavg()}")
    print("| process | seconds |")
    print("|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} |")
    figures = dict(rows)
    cold_ratio = rows[1][1] / rows[0][1]
    warm_ratio = rows[3][1] / rows[2][1]
    print(
        f"\ncold lint / cold open: {cold_ratio:.2f} (target <= 1.10); warm lint / warm records: {warm_ratio:.2f} "
        f"(target <= 2.00); {len(figures)} figures"
    )


if __name__ == "__main__":
    main()
