"""bench/run.py's memory of a process tree: a page a forked worker shares with its parent is counted once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import run  # (bench/run.py)

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
