"""What each table of a state takes on disk: SQLite's dbstat, per table and index, largest first.

    python bench/state_tables.py STATE_DIR [--top 15]

STATE_DIR is a state folder (`.knowtk`, or a `--state-dir`); it is opened read-only. Prints each
table's pages (what it takes in the file) and payload (the bytes of its rows), the file itself, and
the WAL and journal beside it: the breakdown behind `bench/run.py`'s "state on disk" figure.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
from pathlib import Path

MIB = 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("state_dir")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    folder = Path(a.state_dir)
    db = folder / "state.sqlite"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT name, sum(pgsize), sum(payload) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC"
    ).fetchall()
    pages = sum(r[1] for r in rows)
    print(f"| table or index ({db}) | pages | payload |")
    print("|---|---:|---:|")
    for name, size, payload in rows[: a.top]:
        print(f"| {name} | {size / MIB:.1f} MiB | {payload / MIB:.1f} MiB |")
    rest = rows[a.top :]
    if rest:
        size, payload = sum(r[1] for r in rest) / MIB, sum(r[2] for r in rest) / MIB
        print(f"| ({len(rest)} more) | {size:.1f} MiB | {payload:.1f} MiB |")
    print(f"| all pages in use | {pages / MIB:.1f} MiB | |")
    for entry in sorted(folder.iterdir()):
        print(f"{entry.name}: {os.path.getsize(entry) / MIB:.1f} MiB")


if __name__ == "__main__":
    main()
