"""bench/run.py's memory of a process tree: a page a forked worker shares with its parent is counted once."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import run  # (bench/run.py)

from tests.helpers import StoreBuilder

MIB = 2**20

FORKS = """
import os, time
data = bytearray(200 * 2**20)
for i in range(0, len(data), 4096):
    data[i] = 1  # every page resident, in the parent
pid = os.fork()
if pid == 0:  # the child writes none of them: all still shared
    time.sleep(1.0)
    os._exit(0)
time.sleep(1.0)
os.waitpid(pid, 0)
"""


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="/proc/PID/smaps_rollup is Linux's")
def test_a_page_a_forked_child_shares_is_counted_once(tmp_path: Path) -> None:
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    summed, once = run.run_sampled([sys.executable, str(script)])
    assert summed > 380 * MIB  # RSS summed: the parent's 200 MiB, and the child's view of them
    assert 190 * MIB < once < 260 * MIB  # each page once


def test_the_warm_group_times_every_first_call_before_any_query_is_asked_again(
    builder: StoreBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a query keeps (a filter's rows, the records its hits show) would be ready for a first call timed after
    its repeat: the first calls come first, after an opening query of none of their words, so none of them is
    timed in a process a repeated ask has prepared for it (the repeats of the first query would otherwise do that)."""
    for i in range(12):
        builder.page(f"n{i}", f"Note {i}", "retro alpha beta gamma " * (i % 3 + 1), path=f"n{i}.md", kind="claim")
    specs = [
        {"query": "alpha", "words": ["alpha"], "mode": "all"},
        {"query": "beta", "words": ["beta"], "mode": "any", "kind": "claim"},
        {"query": "retro alpha", "words": ["retro", "alpha"], "mode": "phrase"},
    ]
    asked: list[str] = []
    real_open = run.open_store

    def recording(a: Any, **options: Any) -> Any:
        store = real_open(a, **options)
        call = store.call

        def recorded(tool: str, args: dict[str, Any]) -> Any:
            asked.append(args["query"])
            return call(tool, args)

        monkeypatch.setattr(store, "call", recorded)
        return store

    monkeypatch.setattr(run, "open_store", recording)
    a = argparse.Namespace(store=str(builder.root), state=str(tmp_path / "state"), spec=json.dumps(specs), runs=2)
    out = run.child_warm(a)
    opening = run.opening_query(specs)
    assert opening not in {w for spec in specs for w in spec["words"]}  # "retro" is asked: the next one opens
    assert asked[0] == opening
    assert asked[1:4] == ["alpha", "beta", "retro alpha"]  # every first call, before any query is asked again
    assert len(out["mixed_first"]) == len(out["mixed"]) == len(out["totals"]) == 3
    assert out["totals"] == [12, 12, 12]
