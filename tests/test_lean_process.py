"""A new process imports only what its call needs: the import set of a plain ``knowtk grep`` is pinned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import DEMO, REPO, StoreBuilder

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
import os
leave = os._exit

def leaving(code):  # a one-query program leaves by os._exit (knowtk.serve.client.leave): no atexit
    report()
    leave(code)

os._exit = leaving
runpy.run_module("knowtk", run_name="__main__")
"""

# the knowtk modules a plain grep needs, no more: a new import on this path is a decision, made here
GREP_MODULES = {
    "knowtk",
    "knowtk.cli",
    "knowtk.cli.commands",
    "knowtk.cli.lint",  # registers `knowtk lint` (its code, knowtk.query.lint, is imported when it runs)
    "knowtk.cli.registry",
    "knowtk.cli.tools",
    "knowtk.engine",
    "knowtk.engine.engine",
    "knowtk.engine.desired",
    "knowtk.engine.repair",
    "knowtk.engine.transactions",
    "knowtk.errors",
    "knowtk.frames",  # the tools' frame columns (pandas is imported only to make a frame)
    "knowtk.index",
    "knowtk.index.among",
    "knowtk.index.bm25",
    "knowtk.index.filter_sums",
    "knowtk.index.filtered",
    "knowtk.index.fts",
    "knowtk.index.fts_storage",
    "knowtk.index.fts_tables",
    "knowtk.index.image_mark",
    "knowtk.index.matching",
    "knowtk.index.parallel_read",
    "knowtk.index.phrase_counts",
    "knowtk.index.projection",
    "knowtk.index.row_arrays",
    "knowtk.index.row_changes",
    "knowtk.index.rowmap",
    "knowtk.index.stored_rows",
    "knowtk.index.texts",
    "knowtk.model",
    "knowtk.model.config",
    "knowtk.model.datevalues",
    "knowtk.model.on_demand",  # (a missing file a view of the past writes when first read)
    "knowtk.model.plainyaml",  # knowtk.yaml and plain frontmatter, read without PyYAML
    "knowtk.model.profile",
    "knowtk.model.records",
    "knowtk.model.shapes",
    # the plug-in manager and the tools' declarations (their arguments, wording, columns; each runner's
    # module, knowtk.query.why and knowtk.query.grep here, is imported at its first call)
    "knowtk.plugins",
    "knowtk.query",
    "knowtk.query.args",
    "knowtk.query.citations",
    "knowtk.query.common",
    "knowtk.query.explain",  # knowledge_grep's runner (knowtk.query.why) names the rules that left records out
    "knowtk.query.grep",
    "knowtk.query.grep_valid",  # validAt's ranking and the spans of validity (light: nothing more beneath them)
    "knowtk.query.registry",
    "knowtk.query.schema",
    "knowtk.query.suggest",  # its edit distance: the command line's did-you-mean for a mistyped command
    "knowtk.query.tools",
    "knowtk.query.tools.changes",
    "knowtk.query.tools.chronicle_day",
    "knowtk.query.tools.chronicle_last_seen",
    "knowtk.query.tools.chronicle_since",
    "knowtk.query.tools.grep",
    "knowtk.query.tools.history",
    "knowtk.query.tools.knowl",
    "knowtk.query.tools.lint",
    "knowtk.query.tools.lookup",
    "knowtk.query.tools.mutation",
    "knowtk.query.tools.record",
    "knowtk.query.tools.records",
    "knowtk.query.tools.stats",
    "knowtk.query.tools.timeline",
    "knowtk.query.validity",
    "knowtk.query.views",
    "knowtk.query.why",
    "knowtk.query.wording",
    "knowtk.results",
    "knowtk.scan",
    "knowtk.scan.cache",
    "knowtk.scan.changes",
    "knowtk.scan.entry",
    "knowtk.scan.packs",
    "knowtk.scan.split",
    "knowtk.scan.pool",
    "knowtk.scan.progress",
    "knowtk.scan.rows",
    "knowtk.scan.watch",
    # `python -m knowtk` asks a running `knowtk serve` first (docs/server.md): the client, stdlib only
    "knowtk.serve",
    "knowtk.serve.client",
    "knowtk.snapshot",
    "knowtk.snapshot.build",
    "knowtk.snapshot.facets",  # the filter facets of the records (a first filtered grep builds none)
    "knowtk.snapshot.model",
    "knowtk.snapshot.overlay",
    "knowtk.snapshot.image_delta",
    "knowtk.snapshot.image_format",
    "knowtk.snapshot.image_parts",
    "knowtk.snapshot.image_write",
    "knowtk.snapshot.safeguards",
    "knowtk.snapshot.starts",  # the records' starts in time, kept in the image (what validAt places records by)
    "knowtk.snapshot.stored",
    "knowtk.state",
    "knowtk.store",
    # opening a store asks the journal whether a mutation a crash interrupted is pending (the write layer
    # beyond it is imported only then), and a query marks receipts indexed there
    "knowtk.write",
    "knowtk.write.journal",
    # the keeper of what knowtk saw: a query that changed no file runs no git (subprocess not imported)
    "knowtk.write.seen",
    "knowtk.write.seen_feed",  # (its helpers: the whole observation is read in a process of its own)
}
# what a grep must not pay for (arrays, frames, a pool, a subprocess, logging: other paths' needs)
# ctypes: a one-query command line walks the store and places no inotify watch (knowtk.cli.registry.store_of)
NOT_IMPORTED = {"numpy", "pandas", "multiprocessing", "concurrent", "subprocess", "logging", "ctypes", "yaml"}
NOT_IMPORTED |= {
    "mcp",
    "anyio",
    "zoneinfo",
    "socket",
    "html",
    "difflib",
    "signal",
    "dataclasses",
    "inspect",
    "shutil",
    "importlib.metadata",
}  # MCP, dates, a server, HTML, diffs, a pool, record classes made apart (knowtk.model.shapes makes them), the
# terminal's width asked through shutil (knowtk.cli.registry.Formatter asks os), the installed plug-ins' entry
# points (importlib.metadata: read only for a tool, profile or command knowtk does not have)


def imports_of(args: list[str], tmp_path: Path) -> dict[str, list[str]]:
    out = tmp_path / "modules.json"
    # no socket folder, so no server may answer (else the client imports socket and hashlib to ask one: a
    # socket folder left by an earlier test or by the user's own `knowtk serve` must not change the import set)
    env = {**os.environ, "PYTHONPATH": str(REPO), "KNOWTK_SERVE_DIR": str(tmp_path / "no-servers")}
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
    # a cold grep keeps its first observation of the store: git, run through subprocess (knowtk.write.seen)
    observed = set() if built else {"knowtk.write.checkpoint"}
    assert {m for m in modules if m.startswith("knowtk")} == GREP_MODULES | observed
    assert found["third_party"] == []  # knowtk.yaml and this frontmatter are plain YAML: read without PyYAML
    unwanted = NOT_IMPORTED | ({"uuid"} if built else set())  # a new state and a new image take a uuid
    unwanted -= set() if built else {"subprocess", "shutil", "signal"}
    assert not {m for m in modules if m.split(".")[0] in unwanted or m in unwanted}


def test_a_common_word_asked_once_or_a_filter_on_it_loads_numpy_only_for_arrays(
    builder: StoreBuilder, tmp_path: Path
) -> None:
    """numpy is for the BM25 paths that need arrays: a phrase 1,000 rows or more hold, asked again in a process
    (its counts then kept); asked once, filtered or not, it is scored in plain Python (importing numpy
    would cost a new process's first filtered query more than the scoring)."""
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


def test_the_tool_registry_imports_a_tool_at_its_first_lookup() -> None:
    """Listing the tools, or looking one up, imports none of their modules; its first call imports its module alone."""
    probe = (
        "import sys, knowtk.query as q\n"
        "names = list(q.TOOLS); assert len(q.TOOLS) == len(names) and 'knowledge_timeline' in q.TOOLS\n"
        "mods = lambda: sorted(m for m in sys.modules if m in ('knowtk.query.dates', 'knowtk.query.knowl'))\n"
        "before = mods(); spec = q.TOOLS['knowledge_timeline']; assert mods() == before; spec.runner()\n"
        "print(names[0], before, mods(), spec.name, 'knowtk.query.mutations' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert res.stdout.split() == ["knowledge_grep", "[]", "['knowtk.query.dates']", "knowledge_timeline", "False"]


def test_the_registry_keeps_a_dicts_order_and_the_write_tools_are_the_write_layers() -> None:
    from knowtk.query import TOOLS, Tool, ToolRegistry

    writes = {name for name, tool in TOOLS.items() if tool.writes}
    assert writes == {name for name, tool in TOOLS.items() if str(tool.run).startswith("knowtk.query.mutations:")}
    assert writes == {"knowledge_mutation", "knowledge_history"}
    grep = TOOLS["knowledge_grep"]
    reg = ToolRegistry()  # the built-in tools, as TOOLS starts
    names = list(reg)
    assert names[:2] == ["knowledge_grep", "knowledge_lookup"] and "knowledge_lookup" in reg and "x" not in reg
    reg["knowledge_lookup"] = Tool("knowledge_lookup", (), grep.run, summary="replaced")  # replaced in place
    reg["d"] = Tool("d", (), grep.run)
    del reg["knowledge_grep"]
    assert list(reg) == [*names[1:], "d"] and reg["knowledge_lookup"].summary == "replaced"
    assert reg["knowledge_records"] is reg["knowledge_records"] is TOOLS["knowledge_records"]
    assert reg.get("knowledge_grep") is None and dict(reg.items()).keys() == {*names[1:], "d"}
    with pytest.raises(KeyError):
        reg["knowledge_grep"]
    assert list(TOOLS) == names  # another registry's changes are its own


def test_threads_looking_up_a_tool_not_made_yet_all_get_it_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first lookups of a tool from several threads at once: each gets the tool, the tools are read once.

    Without the registry's lock a thread that found the tools not read yet, while another was reading them,
    read them again or found a half-made table: "not a knowtk tool" (seen in test_processes).
    """
    import threading
    import time

    from knowtk import plugins
    from knowtk.query import Tool, ToolRegistry

    made: list[str] = []
    real = plugins.hook_results

    def slow_hook(hook: str, *, outside: bool) -> list[tuple[str, object]]:
        made.append(hook)
        time.sleep(0.05)  # the declarations' imports: long enough for every thread to arrive meanwhile
        return real(hook, outside=outside)

    monkeypatch.setattr(plugins, "hook_results", slow_hook)
    reg = ToolRegistry()
    start = threading.Barrier(8)
    got: list[object] = []

    def look_up() -> None:
        start.wait()
        try:
            got.append(reg["knowledge_grep"])
        except KeyError as exc:
            got.append(exc)

    threads = [threading.Thread(target=look_up) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == ["knowtk_tools"] and len(got) == 8 and all(tool is got[0] for tool in got)
    assert isinstance(got[0], Tool)


def test_check_in_a_new_process_checks_the_projections_no_query_of_it_imported(tmp_path: Path) -> None:
    """``knowtk check`` imports the dated and embedding projections itself: a damaged dated table is found."""
    import sqlite3

    import knowtk

    state = tmp_path / "state"
    with knowtk.open_store(DEMO, state_dir=state) as store:
        assert store.call("knowledge_timeline", {"limit": 5})["rows"]  # the dated projection built
    con = sqlite3.connect(state / "state.sqlite", isolation_level=None)
    con.execute("DELETE FROM temporal_dates_v1_root WHERE rowid % 2 = 0")
    con.close()
    env = {**os.environ, "PYTHONPATH": str(REPO), "KNOWTK_SERVE": "0"}
    args = ["--store", str(DEMO), "--state-dir", str(state), "--json", "check"]
    res = subprocess.run([sys.executable, "-m", "knowtk", *args], capture_output=True, text=True, env=env, timeout=120)
    report = json.loads(res.stdout)
    assert res.returncode == 0 and "temporal_dates_v1_root" in " | ".join(report["found"]) and report["repaired"]


def test_knowtk_yaml_is_parsed_once_per_content(builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine reads knowtk.yaml at its open and at its first snapshot: the same bytes are parsed once."""
    import knowtk
    import knowtk.model.config as config

    parsed: list[str] = []
    real = config.parse_yaml
    monkeypatch.setattr(config, "parse_yaml", lambda text, **kw: parsed.append(text) or real(text, **kw))
    monkeypatch.setattr(config, "_last", None)
    builder.raw("knowtk.yaml", "name: once\n")
    builder.page("a", "Zebra", "zebra words")
    with knowtk.open_store(builder.root, state_dir=builder.root.parent / "state-once") as store:
        assert store.call("knowledge_grep", {"query": "zebra"})["total"] == 1 and store.name == "once"
        assert parsed == ["name: once\n"]
        builder.raw("knowtk.yaml", "name: twice\n")  # a change is read (and parsed) again
        assert store.call("knowledge_grep", {"query": "zebra"})["total"] == 1 and store.name == "twice"
        assert parsed == ["name: once\n", "name: twice\n"]
