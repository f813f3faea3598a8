"""What known time costs: ``store.at(T)`` at a new instant, again, and warm; ``knowledge_changes`` between two.

    python bench/known_time.py [--sizes 10000] [--changed 1000] [--runs 3] [--out bench/out] [--seed 1]

Uses the stores bench/run.py generates (``ensure_store``), copied into a Git repository with two commits: every
file on 2026-01-01, then ``--changed`` files edited on 2026-02-01. Each measure runs in a fresh process (median
of ``--runs``): ``cold`` opens the present store with no state and answers one query; ``at first`` asks
``store.at("2026-01-15")`` with no past kept yet (its state seeded from the present's, its files written from Git,
what differs read and indexed); ``at again`` the
same in a new process once the past is kept; ``at warm`` a second query of that view in the same process; ``at
next`` the first question at ``2026-02-15`` (the second commit: another new instant) while the first one's past is
kept; ``changes`` is ``knowledge_changes`` between the two commits (both pasts kept). The present store's state is
the one ``cold`` built: a new instant's past is seeded from it. Targets: the first answer at a new instant within
what a cold open costs (at 100k with 1,000 files changed, 5 s); a second query at the same instant what a warm
query costs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from run import ensure_store

import knowtk

THEN, LATER = "2026-01-15", "2026-02-15"


def git(root: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ, **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
    who = ["-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run(["git", "-C", str(root), *who, *args], check=True, capture_output=True, env=env)


def history_store(out: Path, n: int, seed: int, changed: int) -> Path:
    """A copy of the generated store in a Git repository: all files committed, then ``changed`` files edited."""
    repo = out / f"known-time-{n}-s{seed}-c{changed}"
    if (repo / ".git").is_dir():
        return repo
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(ensure_store(out, n, seed), repo, ignore=shutil.ignore_patterns(".knowtk"))
    (repo / ".gitignore").write_text(".knowtk/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "all files", date="2026-01-01T00:00:00Z")
    for path in sorted(repo.rglob("*.md"))[:changed]:
        with path.open("a", encoding="utf-8") as f:
            f.write("\nEdited in February.\n")
    git(repo, "commit", "-qam", "edits", date="2026-02-01T00:00:00Z")
    return repo


def child(store: str, state: str, step: str) -> float:
    """One measure in this process: the seconds it took."""
    s = knowtk.open_store(store, state_dir=state)
    if step == "cold":
        t = time.perf_counter()
        s.stats()
        s.grep("the")
    elif step == "changes":
        t = time.perf_counter()
        s.changes(THEN, until=LATER)
    else:
        t = time.perf_counter()
        past = s.at(LATER if step == "next" else THEN)
        past.stats()
        past.grep("the")
        if step == "warm":
            t = time.perf_counter()
            past.stats()
            past.grep("the")
    elapsed = time.perf_counter() - t
    s.close()
    return elapsed


def measure(repo: Path, runs: int) -> dict[str, float]:
    state = repo.parent / f"{repo.name}-state"

    later = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD^{tree}"], capture_output=True, text=True)

    def run(step: str, fresh_state: bool = False, fresh_past: bool = False, fresh_later: bool = False) -> float:
        times = []
        for _ in range(runs):
            if fresh_state:
                shutil.rmtree(state, ignore_errors=True)
            if fresh_past:
                shutil.rmtree(state / "past", ignore_errors=True)
            if fresh_later:  # the second commit's past only: the first one's stays kept
                shutil.rmtree(state / "past" / later.stdout.strip(), ignore_errors=True)
            cmd = [sys.executable, __file__, "--child", step, "--store", str(repo), "--state", str(state)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True)
            times.append(float(out.stdout.strip()))
        return statistics.median(times)

    return {
        "cold": run("cold", fresh_state=True),
        "at first": run("first", fresh_past=True),
        "at again": run("again"),
        "at warm": run("warm"),
        "at next": run("next", fresh_later=True),
        "changes": run("changes"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    p.add_argument("--changed", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--store", help=argparse.SUPPRESS)
    p.add_argument("--state", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(child(a.store, a.state, a.child))
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    for n in a.sizes:
        repo = history_store(a.out, n, a.seed, min(a.changed, n))
        figures = measure(repo, a.runs)
        print(f"## {n:,} records, {min(a.changed, n):,} changed between the two commits (median of {a.runs})")
        print("| measure | seconds |\n|---|---|")
        for name, seconds in figures.items():
            print(f"| {name} | {seconds:.3f} |")
        print(json.dumps({"records": n, "changed": a.changed, **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
