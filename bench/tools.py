#!/usr/bin/env python3
"""Every query tool on one store: a few typical argument sets each, first call and warm p50.

    python bench/tools.py STORE [--out bench/out] [--runs 5] [--only TOOL ...] [--cpu]

Opens STORE (any store, read only) with its state in ``--out/state-NAME`` (built on the first run,
reused after), warms the process once (``store.snapshot()`` and one ``knowledge_grep``), then for
each argument set makes one **first call** (nothing of that call kept yet in this process; the
first date tool also pays loading the temporal projection) and ``--runs`` repeated calls, of which
it prints the median (**warm p50**). A set whose calls already took 20 s stops repeating after two.

The argument sets are made from the store's own records, so that any store has rows to show: the
latest ``occurred_at`` of the store (L) and the three months and the year before it, the entity with
the most explicit associations (busy) and the one with the fewest (rare), the most common tag,
and for ``asOf`` and ``validAt`` the middle of the store's ``recorded_at`` span. ``knowledge_chronicle_since``
from 2024-01-01 to 2024-03-31 with ``limit`` 20 (the call of ``bench/mcp_http.py``'s mix on a
generated store) is run as well.

Prints a Markdown table (tool, arguments, total, first call, warm p50, calls) and the load average. With
``--cpu`` each call's CPU time of this process (``time.process_time``: it moves less than wall time on a
shared machine) is measured too, and two columns added: the first call's and the fastest repeated one's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

Call = tuple[str, dict[str, Any]]


def argument_sets(store: Any) -> list[Call]:
    """Typical calls of every query tool, made from this store's records."""
    snap = store.snapshot()
    records = [r for rid, r in snap.records.items() if rid not in snap.unavailable]
    occurred = sorted(r.dates["occurred_at"].start for r in records if "occurred_at" in r.dates)
    recorded = sorted(r.dates["recorded_at"].start for r in records if "recorded_at" in r.dates)
    latest = occurred[-1].date() if occurred else date(2026, 1, 1)
    quarter, year = (latest - timedelta(days=91)).isoformat(), (latest - timedelta(days=365)).isoformat()
    middle = recorded[len(recorded) // 2].date().isoformat() if recorded else latest.isoformat()
    links = Counter(e for r in records for e in dict.fromkeys((*r.entities, r.owner)) if e)
    busy = links.most_common(1)[0][0] if links else "none"
    rare = min(links, key=lambda e: (links[e], e)) if links else busy
    tag = Counter(t for r in records for t in r.tags).most_common(1)
    tags = [tag[0][0]] if tag else ["none"]
    word = next((w for r in records for w in r.title.split() if w.isalpha() and len(w) > 4), "meeting")
    some = records[len(records) // 2].id if records else "none"
    day = latest.isoformat()
    inactive = "include_inactive"
    return [
        ("knowledge_grep", {"query": word}),
        ("knowledge_lookup", {"query": some}),
        ("knowledge_records", {"kind": "claim", "limit": 5}),
        ("knowledge_record", {"id": some}),
        ("knowledge_timeline", {}),
        ("knowledge_timeline", {"order": "desc", "limit": 3}),
        ("knowledge_timeline", {"since": quarter, "includeSources": True}),
        ("knowledge_timeline", {"timeField": "recorded_at", "since": year, "eligibility": "include_inactive"}),
        ("knowledge_timeline", {"kind": "meeting", "since": year, "limit": 20}),
        ("knowledge_timeline", {"entity": busy, "limit": 20}),
        ("knowledge_timeline", {"entity": busy, "group": "source", "limit": 20}),
        ("knowledge_timeline", {"entity": rare}),
        ("knowledge_chronicle_day", {"date": day}),
        ("knowledge_chronicle_day", {"date": day, "week": True, "timeZone": "Europe/Berlin"}),
        ("knowledge_chronicle_day", {"date": day, "entity": busy}),
        ("knowledge_chronicle_since", {"since": "2024-01-01", "until": "2024-03-31", "limit": 20}),
        ("knowledge_chronicle_since", {"since": quarter}),
        ("knowledge_chronicle_since", {"since": year, "offset": 1000, "limit": 20}),
        ("knowledge_chronicle_since", {"since": year, "kind": "meeting"}),
        ("knowledge_chronicle_since", {"since": year, "entity": busy}),
        ("knowledge_chronicle_last_seen", {"entity": busy}),
        ("knowledge_chronicle_last_seen", {"entity": rare}),
        ("knowledge_chronicle_last_seen", {"entity": busy, "occurredOnOrBefore": middle}),
        ("knowl_query", {"query": word}),
        ("knowl_query", {}),
        ("knowl_query", {"tags": tags}),
        ("knowl_query", {"query": word, "asOf": middle}),
        ("knowl_query", {"asOf": middle, "status": "superseded"}),
        ("knowl_query", {"query": word, "status": "all", "limit": 10}),
        ("knowledge_lint", {}),
        ("knowledge_lint", {"rules": ["broken-link=off", "broken-wikilink=off", "broken-anchor=off"]}),
        # validAt (docs/time.md): the calls above, at the middle of the store's recorded_at span
        ("knowledge_grep", {"query": word, "validAt": middle}),
        ("knowledge_lookup", {"query": some, "validAt": middle}),
        ("knowledge_records", {"kind": "claim", "limit": 5, "validAt": middle}),
        ("knowledge_timeline", {"since": quarter}),
        ("knowledge_timeline", {"since": quarter, "validAt": middle}),  # an instant before the range: no row then
        ("knowledge_timeline", {"since": quarter, "validAt": day}),  # at the latest occurrence: the whole range
        ("knowledge_timeline", {"entity": busy, "limit": 20, "validAt": middle}),
        # ranges that cannot end at the instant (filtered by kind; on recorded_at with the inactive records)
        ("knowledge_timeline", {"kind": "meeting", "since": year, "limit": 20, "validAt": day}),
        ("knowledge_timeline", {"timeField": "recorded_at", "since": year, "eligibility": inactive, "validAt": day}),
    ]


def measure(store: Any, tool: str, args: dict[str, Any], runs: int) -> dict[str, Any]:
    times, cpu = [], []
    total: Any = None
    for n in range(runs + 1):
        t, c = time.perf_counter(), time.process_time()
        out = store.call(tool, args)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        total = out.get("total")
        if n >= 2 and sum(times) > 20:
            break
    return {
        "first": times[0],
        "warm": statistics.median(times[1:]),
        "calls": len(times),
        "total": total,
        "cpu_first": cpu[0],
        "cpu_min": min(cpu[1:]),
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f} ms" if seconds >= 0.1 else f"{seconds * 1e3:.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="only these tools")
    ap.add_argument("--cpu", action="store_true", help="also the CPU time of the first and the fastest repeated call")
    a = ap.parse_args()
    import knowtk

    state = os.path.join(a.out, "state-" + Path(a.store).resolve().name)
    t = time.perf_counter()
    store = knowtk.open_store(a.store, state_dir=state)
    store.snapshot()
    store.call("knowledge_grep", {"query": "warm"})
    opened = time.perf_counter() - t
    calls = [c for c in argument_sets(store) if not a.only or c[0] in a.only]
    print(f"store {a.store} ({len(store.snapshot().records):,} records), state {state}")
    print(f"opened and warmed in {opened:.1f} s; {a.runs} repeated calls per set; load average {os.getloadavg()}")
    cpu_head, cpu_rule = (" first call CPU | warm CPU min |", "---:|---:|") if a.cpu else ("", "")
    print(f"| tool | arguments | total | first call | warm p50 | calls |{cpu_head}")
    print(f"|---|---|---:|---:|---:|---:|{cpu_rule}")
    for tool, args in calls:
        m = measure(store, tool, args, a.runs)
        shown = json.dumps(args, separators=(", ", ": "))
        cpu = f" {ms(m['cpu_first'])} | {ms(m['cpu_min'])} |" if a.cpu else ""
        row = f"| {tool} | `{shown}` | {m['total']} | {ms(m['first'])} | {ms(m['warm'])} | {m['calls']} |{cpu}"
        print(row, flush=True)
    print(f"load average at the end {os.getloadavg()}")
    store.close()


if __name__ == "__main__":
    main()
