"""bench/versus_bm25.py: its raw FTS5 table is built once per store and kept, and its report names every miss."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import run  # (bench/run.py)
import versus_bm25  # (bench/versus_bm25.py)

from tests.helpers import StoreBuilder

if not (run.SHARED / "limits.py").exists():
    pytest.skip("the team's benchmark kit (shared/bench/limits.py) is not beside the checkout", allow_module_level=True)


def test_the_raw_table_is_built_once_per_store_and_again_when_the_store_changes(
    builder: StoreBuilder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(6):
        builder.page(f"n{i}", f"Note {i}", "alpha beta " * (i + 1), path=f"n{i}.md")
    limits, path = run.load_limits(), str(tmp_path / "raw.sqlite")
    root = str(builder.root)
    db = versus_bm25.raw_table(limits, root, path)
    assert db.execute("SELECT count(*) FROM t WHERE t MATCH 'alpha'").fetchone()[0] == 6
    db.close()
    assert "building" in capsys.readouterr().out
    built = os.stat(path).st_mtime_ns
    versus_bm25.raw_table(limits, root, path).close()  # the same files: kept
    assert "building" not in capsys.readouterr().out and os.stat(path).st_mtime_ns == built
    builder.page("n9", "Note 9", "alpha gamma", path="n9.md")
    db = versus_bm25.raw_table(limits, root, path)  # a file more: built again
    assert "building" in capsys.readouterr().out
    assert db.execute("SELECT count(*) FROM t WHERE t MATCH 'alpha'").fetchone()[0] == 7
    db.close()


def test_the_report_names_the_queries_that_miss_a_target() -> None:
    specs = [
        {"query": "alpha", "words": ["alpha"], "mode": "all"},
        {"query": "beta", "words": ["beta"], "mode": "any", "kind": "claim"},
        {"query": "gamma", "words": ["gamma"], "mode": "phrase"},
    ]
    kt = [  # within 1.25x + 30 ms; a first call past it; asked again 20 ms slower than its first
        {"first": 0.140, "again": 0.130, "total": 5, "same": True},
        {"first": 0.040, "again": 0.005, "total": 2, "same": True},
        {"first": 0.010, "again": 0.030, "total": 1, "same": False},
    ]
    raw = [(0.100, 5), (0.001, 3), (0.001, 1)]
    lines = versus_bm25.report(specs, kt, raw)
    assert "worst ratio to bm25: first call 40.00x, repeated call 30.00x" in lines
    assert "queries missing a target: any:beta kind=claim, phrase:gamma" in lines
    assert any("repeated call slower than its first by at most 20.0 ms" in line and "MISSED" in line for line in lines)
    assert "answers of first and repeated calls: ANSWERS DIFFER for phrase:gamma" in lines
