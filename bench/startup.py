"""Whole-process start-up: `knowtk grep` beside `rg` on one corpus, each query a fresh process.

    python bench/startup.py [CORPUS] [--runs 3] [--profile]

CORPUS defaults to the PEPs corpus beside this repository (../shared/corpora/peps); any
store works. Its state goes to a temporary folder (built once before timing), so the
corpus is never written. Prints the median wall time per tool over every query and run,
`python -c pass` as the interpreter's own floor, and `import knowtk.cli` alone.
--profile adds `-X importtime` (the slowest imports) and cProfile of the first query
of a new process (open the store, scan, snapshot, search), top functions by cumulative time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def knowtk_cmd() -> list[str]:
    script = Path(sys.executable).with_name("knowtk")
    return [str(script)] if script.exists() else [sys.executable, "-m", "knowtk"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    corpus = os.path.abspath(a.corpus)
    state = tempfile.mkdtemp(prefix="knowtk-startup-")
    try:
        kt = [*knowtk_cmd(), "--store", corpus, "--state-dir", state]
        subprocess.run([*kt, "grep", "warm"], stdout=subprocess.DEVNULL, check=True)  # build the state once
        rg = shutil.which("rg")
        times: dict[str, list[float]] = {"python -c pass": [], "import knowtk.cli": [], "knowtk grep": []}
        if rg:
            times["rg -i -l"] = []
        for _ in range(a.runs):
            times["python -c pass"].append(wall([sys.executable, "-c", "pass"]))
            times["import knowtk.cli"].append(wall([sys.executable, "-c", "import knowtk.cli"]))
            for q in QUERIES:
                times["knowtk grep"].append(wall([*kt, "grep", q]))
                if rg:
                    times["rg -i -l"].append(wall([rg, "-i", "-l", "-F", q, corpus]))
        print(f"corpus {corpus}  ({len(QUERIES)} queries x {a.runs} runs, each a new process)")
        for name, ts in times.items():
            print(f"  {name:<20} median {statistics.median(ts) * 1000:7.1f} ms   max {max(ts) * 1000:7.1f} ms")
        if a.profile:
            profile(corpus, state)
    finally:
        shutil.rmtree(state, ignore_errors=True)


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
