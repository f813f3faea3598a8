"""Whole-process start-up: `knowtk grep` beside `rg` on one corpus, each query a fresh process.

    python bench/startup.py [CORPUS] [--runs 3] [--state DIR] [--phases] [--profile]

CORPUS defaults to the PEPs corpus beside this repository (../shared/corpora/peps); any
store works. Its state goes to a temporary folder (built once before timing), so the
corpus is never written; --state DIR uses a state built before (a 100k store's takes a
minute to build). Prints the median wall time per tool over every query and run, and the
median CPU time (user + system, of the child process: steadier than wall time on a shared
machine), with `python -c pass` as the interpreter's own floor, `import knowtk.cli` alone
and `stat walk`, a whole Python process that walks the corpus with os.scandir and stats
every file (what freshness cannot do without; the target is "stat walk + 0.3 s").
--phases runs `knowtk grep` in max(runs, 3) more processes, each timing the CPU time of the
parts of its open path (imports, the scan cache, the walk, the image, the keyword mirror; a
diagnosis: the wrappers cost a little), and prints the median of each. --profile adds
`-X importtime` (the slowest imports) and cProfile of the first query of a new process (open
the store, scan, snapshot, search), top functions by cumulative time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import compile_package

QUERIES = [
    "generator expressions",
    "async await",
    "type hints",
    "decorators",
    "walrus operator",
    "unicode",
    "garbage collection",
    "pattern matching",
    "f-strings",
    "import system",
]
DEFAULT = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora" / "peps"


STAT_WALK = """
import os, sys
stack = [sys.argv[1]]
while stack:
    for entry in os.scandir(stack.pop()):
        if entry.is_dir(follow_symlinks=False):
            stack.append(entry.path)
        else:
            entry.stat(follow_symlinks=False)
"""


def wall(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def knowtk_cmd() -> list[str]:
    script = Path(sys.executable).with_name("knowtk")
    return [str(script)] if script.exists() else [sys.executable, "-m", "knowtk"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--state", help="a state folder built before (kept afterwards)")
    ap.add_argument("--phases", action="store_true", help="CPU time of each part of a new process's open path")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    corpus = os.path.abspath(a.corpus)
    compile_package()  # what an installed package has (bench/run.py)
    state = os.path.abspath(a.state) if a.state else tempfile.mkdtemp(prefix="knowtk-startup-")
    try:
        kt = [*knowtk_cmd(), "--store", corpus, "--state-dir", state]
        subprocess.run([*kt, "grep", "warm"], stdout=subprocess.DEVNULL, check=True)  # build the state once
        rg = shutil.which("rg")
        names = ["python -c pass", "import knowtk.cli", "stat walk", "knowtk grep"] + (["rg -i -l"] if rg else [])
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for _ in range(a.runs):
            times["python -c pass"].append(wall([sys.executable, "-c", "pass"]))
            times["import knowtk.cli"].append(wall([sys.executable, "-c", "import knowtk.cli"]))
            times["stat walk"].append(wall([sys.executable, "-c", STAT_WALK, corpus]))
            for q in QUERIES:
                times["knowtk grep"].append(wall([*kt, "grep", q]))
                if rg:
                    times["rg -i -l"].append(wall([rg, "-i", "-l", "-F", q, corpus]))
        print(f"corpus {corpus}  ({len(QUERIES)} queries x {a.runs} runs, each a new process)")
        for name, ts in times.items():
            walls, cpus = [t[0] for t in ts], [t[1] for t in ts]
            print(
                f"  {name:<20} median {statistics.median(walls) * 1000:7.1f} ms   max {max(walls) * 1000:7.1f} ms"
                f"   cpu median {statistics.median(cpus) * 1000:7.1f} ms"
            )
        print(f"  (load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
        if a.phases:
            phases(kt, max(a.runs, 3))
        if a.profile:
            profile(corpus, state)
    finally:
        if not a.state:
            shutil.rmtree(state, ignore_errors=True)


# the open path's parts, each timed by CPU time (process_time) around the function that does it
PHASES = """
import contextlib, io, sys, time
start = time.process_time()
import knowtk.cli
imported = time.process_time()
from knowtk.engine.engine import Engine
from knowtk.index.fts import FtsProjection
from knowtk.scan.cache import Scanner
from knowtk.scan.changes import StatWalk
from knowtk.snapshot.image_parts import ImageParts
from knowtk.snapshot.stored import StoredRecords
from knowtk.snapshot.safeguards import Safeguards
spent = {}
def timed(cls, name, label):
    fn = getattr(cls, name)
    def wrapper(*args, **kwargs):
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - t
    setattr(cls, name, wrapper)
PARTS = [
    (Engine, "__init__", "open the engine (state, safeguards, config)"),
    (Safeguards, "__init__", "  of which the safeguards"),
    (Engine, "_snapshot_now", "the snapshot (scan and image)"),
    (Scanner, "_load_cache", "  the scan cache's rows"),
    (Scanner, "_load_packs", "  the scan cache's folder packs"),
    (StatWalk, "listing_by_folder", "  the walk (stat of every file, watches placed)"),
    (Scanner, "_compare", "  the walk compared by folder"),
    (Engine, "_adopt_image", "  the image read and compared"),
    (Engine, "_keyword_now", "the keyword projections reconciled"),
    (FtsProjection, "_ensure", "  the keyword mirror loaded"),
    (ImageParts, "get", "image parts inflated and parsed (any step)"),
    (StoredRecords, "_path_point", "image keys read where they lie (paths, lifecycles)"),
    (ImageParts, "value_at", "image keys read where they lie (paths, lifecycles)"),
]
for cls, name, label in PARTS:
    if hasattr(cls, name):  # (a part an older knowtk does not have is left out)
        timed(cls, name, label)
with contextlib.redirect_stdout(io.StringIO()):
    try:
        knowtk.cli.main(sys.argv[1:])
    except SystemExit:
        pass
end = time.process_time()
import json
parts = {"imports (import knowtk.cli)": imported - start}
parts.update((label, spent[label]) for _, _, label in PARTS if label in spent)
parts["the whole call, after the imports"] = end - imported
print(json.dumps(parts))
"""


def phases(kt: list[str], runs: int) -> None:
    """The CPU time of each part of a new process's open path: medians over ``runs`` processes."""
    args = kt[kt.index("--store") :]
    found: dict[str, list[float]] = {}
    for _ in range(runs):
        res = subprocess.run([sys.executable, "-c", PHASES, *args, "grep", "retro"], capture_output=True, text=True)
        if res.returncode != 0 or not res.stdout.strip():
            print(res.stderr)
            return
        for label, seconds in json.loads(res.stdout.strip().splitlines()[-1]).items():
            found.setdefault(label, []).append(seconds)
    print(f"\nCPU time of a new process's parts (knowtk grep retro; median of {runs} processes):")
    for label, values in found.items():
        print(f"  {label:<50} {statistics.median(values) * 1000:7.1f} ms")


def profile(corpus: str, state: str) -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import knowtk.cli"], capture_output=True, text=True
    ).stderr
    rows = [line.split("|") for line in out.splitlines() if line.startswith("import time:") and "|" in line]
    cumulative = sorted(((int(r[1]), r[2].rstrip()) for r in rows if r[1].strip().isdigit()), reverse=True)
    print("\nslowest imports of knowtk.cli (cumulative us):")
    for us, name in cumulative[:12]:
        print(f"  {us:>8}  {name}")
    code = (
        "import cProfile, pstats, io, sys\n"
        "pr = cProfile.Profile(); pr.enable()\n"
        "from knowtk.cli import main\n"
        f"main(['--store', {corpus!r}, '--state-dir', {state!r}, '--json', 'grep', 'generator expressions'])\n"
        "pr.disable(); s = io.StringIO()\n"
        "pstats.Stats(pr, stream=s).sort_stats('cumulative').print_stats(25)\n"
        "sys.stderr.write(s.getvalue())\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print("\nfirst query of a new process (cProfile, cumulative):")
    print("\n".join(res.stderr.splitlines()[:45]))


if __name__ == "__main__":
    main()
