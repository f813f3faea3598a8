"""What keeping what knowtk saw costs: a cold build with and without it, the record's size, and a change of one file.

    python bench/seen.py STORE [--git-store GIT_STORE] [--out DIR] [--changes 15] [--first grep|stats]
                         [--pairs 1] [--cold-only]

STORE is a store outside Git (only read: its states go to ``DIR``); GIT_STORE the same files committed in a Git
repository, unchanged since (only read too). Each cold build runs in a fresh process with a new state: ``off`` with
the keeper detached (``store.engine.observer = None``), ``on`` as a store opens, the first observation kept
before the first query answers (wall and CPU seconds, the CPU of the parse workers and of git included: what a
loaded machine changes least). The first query is ``grep`` (a whole cold build, as ``bench/run.py`` measures it:
every body indexed, the first observation kept beside it) or ``stats`` (the snapshot alone); ``--pairs`` alternates
off and on that many times. Then, on the ``on`` state of STORE copied aside with one file of
it copied into a scratch store of the same state (so STORE is never written): a change of one file (its title
rewritten, the next query timed) in a warmed process, the median of ``--changes``, on and off; and the first change
of a new process, on and off. Prints one JSON object: seconds, and the record's size (``seen.git``) in MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

COLD = """
import os, sys, time, knowtk
t, cpu = time.perf_counter(), sum(os.times()[:4])
store = knowtk.open_store(sys.argv[1], state_dir=sys.argv[2])
if sys.argv[3] == "off":
    store.engine.observer = None
if sys.argv[4] == "grep":  # a whole cold build: every file read and parsed, every body in FTS5
    store.grep("the")
else:  # the snapshot alone: no keyword row written
    store.stats()
print(time.perf_counter() - t, sum(os.times()[:4]) - cpu)
store.close()
"""

CHANGE = """
import sys, time, statistics, knowtk
from pathlib import Path
store = knowtk.open_store(sys.argv[1], state_dir=sys.argv[2])
if sys.argv[3] == "off":
    store.engine.observer = None
runs, target = int(sys.argv[4]), Path(sys.argv[5])
text = target.read_text()
times = []
for i in range(runs):
    if runs > 1 and i == 0:
        store.stats()  # warmed: the process has answered before the first change
    target.write_text(text.replace("title:", f"title: edit {sys.argv[3]} {i}", 1))
    t = time.perf_counter()
    store.grep("edit")
    times.append(time.perf_counter() - t)
print(statistics.median(times))
store.close()
"""


def child(code: str, *args: str) -> float:
    """The last figure the child printed (seconds)."""
    return run_child(code, *args)[-1]


def run_child(code: str, *args: str) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False)
    if res.returncode != 0:
        raise SystemExit(res.stderr)
    return [float(x) for x in res.stdout.split()]


def size_mib(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store")
    parser.add_argument("--git-store")
    parser.add_argument("--out", default=None)
    parser.add_argument("--changes", type=int, default=15)
    parser.add_argument(
        "--first",
        choices=("grep", "stats"),
        default="grep",
        help="the cold build's first query: grep (a whole build, the keyword index too) or stats (the snapshot)",
    )
    parser.add_argument("--pairs", type=int, default=1, help="cold builds off and on, alternated this many times")
    parser.add_argument("--cold-only", action="store_true", help="the cold builds alone, no change measured")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="knowtk-seen-"))
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, float] = {}
    for name, store in (("outside Git", args.store), ("in Git, committed", args.git_store)):
        if store is None:
            continue
        for pair in range(args.pairs):
            for mode in ("off", "on"):
                state = out / f"state-{name.split()[0]}-{mode}"
                shutil.rmtree(state, ignore_errors=True)
                wall, cpu = run_child(COLD, store, str(state), mode, args.first)
                key = f"cold build {name}, {mode}" + (f", pair {pair + 1}" if args.pairs > 1 else "")
                result[key] = wall
                result[f"{key}, CPU (workers and git included)"] = cpu
        result[f"seen.git {name}, MiB"] = size_mib(out / f"state-{name.split()[0]}-on" / "seen.git")
    if args.cold_only:
        result["load average"] = os.getloadavg()[0]
        print(json.dumps(result, indent=2))
        return
    # a change of one file: a scratch store of one file beside STORE's (STORE itself is never written)
    scratch = out / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    listed = sorted(Path(args.store).rglob("*.md"))
    first = next(p for p in listed if not any(part[0] in "._" for part in p.relative_to(args.store).parts))
    shutil.copytree(args.store, scratch, ignore=shutil.ignore_patterns(".knowtk"))
    target = scratch / first.relative_to(args.store)
    for mode in ("off", "on"):
        state = out / f"state-scratch-{mode}"
        shutil.rmtree(state, ignore_errors=True)
        run_child(COLD, str(scratch), str(state), mode, "stats")
        result[f"one file changed, warmed process, {mode}"] = child(
            CHANGE, str(scratch), str(state), mode, str(args.changes), str(target)
        )
        result[f"first change of a new process, {mode}"] = statistics.median(
            child(CHANGE, str(scratch), str(state), mode, "1", str(target)) for _ in range(5)
        )
    result["load average"] = os.getloadavg()[0]
    result["at"] = time.time()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
