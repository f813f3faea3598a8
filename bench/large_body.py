"""What a very large matching record adds to a grep (docs/reliability.md, "Large bodies").

    python bench/large_body.py [--mb 10] [--runs 5]

Copies the demo store to a temporary folder, times ``knowledge_grep`` (best of --runs), adds one
valid record whose body is --mb megabytes of words that match the query, and times it again.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

import knowtk

DEMO = Path(__file__).resolve().parent.parent / "data" / "fixtures" / "demo"
QUERY = {"query": "vector index", "mode": "any"}


def best_of(store: knowtk.Store, runs: int) -> tuple[float, dict]:
    times, out = [], {}
    for _ in range(runs):
        start = time.perf_counter()
        out = store.call("knowledge_grep", QUERY)
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=5)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns(".knowtk"))
        with knowtk.open_store(root) as store:
            without, _ = best_of(store, a.runs)
            rng = random.Random(1)
            words = ["alpha", "beta", "gamma", "delta", "vector", "index", "storage", "column", "query", "plan"]
            lines, size = [], 0
            while size < a.mb * 1_000_000:
                line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
                lines.append(line)
                size += len(line)
            text = "---\nid: huge-note\nkind: page\ntitle: A huge note\n---\n" + "".join(lines)
            (root / "notes" / "huge-note.md").write_text(text, encoding="utf-8")
            start = time.perf_counter()
            store.call("knowledge_grep", QUERY)
            first = time.perf_counter() - start
            with_it, out = best_of(store, a.runs)
    hit = next(h for h in out["hits"] if h["id"] == "huge-note")
    located = hit["snippet"]["matchLocated"]
    print(f"record body: {size / 1e6:.1f} MB, matches: {hit['matches']}, matchLocated: {located}")
    print(f"grep without it: {without * 1000:.1f} ms (best of {a.runs})")
    print(f"first grep after adding it (reads, parses and indexes it): {first * 1000:.0f} ms")
    print(f"grep with it: {with_it * 1000:.1f} ms (best of {a.runs}), {1000 * (with_it - without):+.1f} ms")


if __name__ == "__main__":
    main()
