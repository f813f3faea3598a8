"""A new process imports only what its call needs: the import set of a plain ``knowtk grep`` is pinned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import StoreBuilder

REPO = Path(__file__).resolve().parents[1]

# runs ``python -m knowtk ARGS`` and, at exit, writes every imported module (and which are third-party)
CHILD = """
import sys
before = set(sys.modules)  # the interpreter's own start (site and its hooks)
import atexit, json, runpy

def report():
    third = set()
    for name, module in list(sys.modules.items()):
        origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
        if "." not in name and "-packages" in origin and name != "knowtk" and name not in before:
            third.add(name)
    with open(out, "w") as f:
        json.dump({"modules": sorted(sys.modules), "third_party": sorted(third)}, f)

out = sys.argv.pop(1)
sys.argv[0] = "knowtk"
atexit.register(report)
runpy.run_module("knowtk", run_name="__main__")
"""

# the knowtk modules a plain grep needs, no more: a new import on this path is a decision, made here
GREP_MODULES = {
    "knowtk",
    "knowtk.cli",
    "knowtk.engine",
    "knowtk.engine.engine",
    "knowtk.engine.repair",
    "knowtk.engine.transactions",
    "knowtk.errors",
    "knowtk.index",
    "knowtk.index.bm25",
    "knowtk.index.embeddings",
    "knowtk.index.fts",
    "knowtk.index.projection",
    "knowtk.index.semantic",
    "knowtk.index.temporal",
    "knowtk.model",
    "knowtk.model.config",
    "knowtk.model.datevalues",
    "knowtk.model.profile",
    "knowtk.model.records",
    "knowtk.query",
    "knowtk.query.args",
    "knowtk.query.citations",
    "knowtk.query.common",
    "knowtk.query.dates",
    "knowtk.query.explain",
    "knowtk.query.grep",
    "knowtk.query.inventory",
    "knowtk.query.knowl",
    "knowtk.query.lookup",
    "knowtk.query.mutations",
    "knowtk.query.schema",
    "knowtk.query.wikilinks",
    "knowtk.results",
    "knowtk.scan",
    "knowtk.scan.cache",
    "knowtk.scan.changes",
    "knowtk.scan.entry",
    "knowtk.scan.pool",
    "knowtk.scan.progress",
    "knowtk.scan.watch",
    # `python -m knowtk` asks a running `knowtk serve` first (docs/server.md): the client, stdlib only
    "knowtk.serve",
    "knowtk.serve.client",
    "knowtk.snapshot",
    "knowtk.snapshot.build",
    "knowtk.snapshot.facets",  # the filter facets of the records (issue 20: a first filtered grep builds none)
    "knowtk.snapshot.model",
    "knowtk.snapshot.overlay",
    "knowtk.snapshot.persist",
    "knowtk.snapshot.safeguards",
    "knowtk.state",
    "knowtk.store",
    "knowtk.workspace",
    # opening a store finishes or rolls back a mutation a crash interrupted, and a query marks receipts
    # indexed: the write layer is on every path (about 25 ms of imports, git's subprocess included)
    "knowtk.write",
    "knowtk.write.checkpoint",
    "knowtk.write.files",
    "knowtk.write.history",
    "knowtk.write.journal",
    "knowtk.write.mutation",
    "knowtk.write.plan",
    "knowtk.write.splice",
    "knowtk.write.validate",
}
# what a grep must not pay for (arrays, frames, a pool, a subprocess, logging: other paths' needs)
NOT_IMPORTED = {"numpy", "pandas", "multiprocessing", "concurrent", "subprocess", "logging", "ctypes.util"}


def imports_of(args: list[str], tmp_path: Path) -> dict[str, list[str]]:
    out = tmp_path / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(out), *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text())


@pytest.fixture
def grep_store(builder: StoreBuilder) -> StoreBuilder:
    builder.raw("knowtk.yaml", "name: lean\n")
    for i in range(30):
        builder.page(f"note-{i:02d}", f"Note {i}", f"zebra crossing number {i}, and other words", tags=["a"])
    builder.page("old", "Zebra stripes", "Older zebra wording.", status="superseded", superseded_by="note-01")
    return builder


@pytest.mark.parametrize("built", [False, True], ids=["cold", "built-state"])
def test_a_plain_grep_imports_neither_numpy_nor_a_pool(grep_store: StoreBuilder, tmp_path: Path, built: bool) -> None:
    state = tmp_path / "state"
    args = ["--store", str(grep_store.root), "--state-dir", str(state), "grep", "zebra"]
    if built:  # the state built (and its snapshot image written) by an earlier process
        imports_of(args, tmp_path)
    found = imports_of(args, tmp_path)
    modules = set(found["modules"])
    assert {m for m in modules if m.startswith("knowtk")} == GREP_MODULES
    assert found["third_party"] == ["yaml"]  # knowtk.yaml and frontmatter: the only package a grep needs
    unwanted = NOT_IMPORTED | ({"uuid"} if built else set())  # a new state and a new image take a uuid
    assert not {m for m in modules if m.split(".")[0] in unwanted or m in unwanted}


def test_a_common_word_asked_once_or_a_filter_on_it_loads_numpy_only_for_arrays(
    builder: StoreBuilder, tmp_path: Path
) -> None:
    """numpy is for the BM25 paths that need arrays: a phrase 1,000 rows or more hold, asked again in a process
    (its counts then kept); asked once, filtered or not, it is scored in plain Python (issue 20: importing numpy
    cost a new process's first filtered query more than the scoring)."""
    for i in range(1000):
        builder.page(f"n{i:04d}", f"Note {i}", "common words here", tags=["a"] if i % 2 else [])
    state = tmp_path / "state"
    base = ["--store", str(builder.root), "--state-dir", str(state), "grep"]
    imports_of([*base, "note"], tmp_path)  # the state built (a pool for 1,000 files is not started either)
    rare = imports_of([*base, "n0007"], tmp_path)
    assert "numpy" not in rare["modules"]
    common = imports_of([*base, "common"], tmp_path)  # 1,000 rows, asked once: ranked in plain Python
    assert "numpy" not in common["modules"]
    filtered = imports_of([*base, "--tag", "a", "common"], tmp_path)  # scored over the filtered rows, once
    assert "numpy" not in filtered["modules"]
