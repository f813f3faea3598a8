"""A package outside knowtk adds a tool and a profile through the ``knowtk.plugins`` entry points.

``tests/plugin_example`` is such a package. It is installed (pip, its own build) into a folder of its
own, and every check runs knowtk in a process with that folder on its path, as a user's environment with
the package installed would: ``Store.call``, the method, ``to_frame()`` and ``_repr_html_``, the command
line, both MCP clients' listings and calls, and a folder opened with its profile. The test process's own
registry never sees the plug-in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from knowtk.query import TOOLS
from tests.helpers import REPO, copy_demo, inspector_bin, required_in_ci

PACKAGE = REPO / "tests" / "plugin_example"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the example package is installed into (a real pip install of its wheel)."""
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build") / "plugin_example"
    shutil.copytree(PACKAGE, build, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(build)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    required_in_ci(
        None if done.returncode == 0 else f"pip could not install the example plug-in: {done.stderr[-2000:]}"
    )
    return target


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_demo(tmp_path_factory.mktemp("plugin-demo") / "demo")  # one state for the module's processes


def _env(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}


def _python(site: Path, code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(site), timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_plugin_is_not_seen_without_its_package() -> None:
    assert "example_titles" not in TOOLS


def test_its_tool_answers_from_python(site: Path, demo: Path) -> None:
    code = f"""
import json, knowtk
store = knowtk.open_store({str(demo)!r})
called = store.call("example_titles", {{"word": "vector"}})
method = store.titles("vector", limit=1)
frame = store.titles("vector").to_frame()
print(json.dumps({{
    "called": called, "method": method.to_dict(), "columns": list(frame.columns),
    "dtypes": [str(t) for t in frame.dtypes], "ids": list(frame["id"]),
    "html": "<table" in method._repr_html_(), "listed": "titles" in dir(store),
}}))
"""
    out = json.loads(_python(site, code))
    assert out["called"]["total"] == 2 and [r["id"] for r in out["called"]["rows"]] == out["ids"]
    assert "dec-2026-021" in out["ids"] and all("vector" in r["title"].lower() for r in out["called"]["rows"])
    assert out["method"]["total"] == 2 and len(out["method"]["rows"]) == 1  # limit=1 as a keyword
    assert out["columns"] == ["id", "title", "length"] and out["dtypes"] == ["string", "string", "Int64"]
    assert out["html"] and out["listed"]


def test_its_tool_refuses_a_bad_argument_as_a_built_in_does(site: Path, demo: Path) -> None:
    code = f"""
import knowtk
store = knowtk.open_store({str(demo)!r})
try:
    store.call("example_titles", {{"word": "x", "limit": 1000}})
except knowtk.InvalidArgument as exc:
    print(exc.argument, exc.allowed)
"""
    assert _python(site, code).strip() == "limit 1 to 100"


def test_its_tool_is_a_command(site: Path, demo: Path) -> None:
    run = [sys.executable, "-m", "knowtk", "--store", str(demo), "titles", "vector"]
    table = subprocess.run(run, capture_output=True, text=True, env=_env(site), timeout=120)
    assert table.returncode == 0, table.stderr
    assert "dec-2026-021: Keep the vector index in SQLite next to FTS5" in table.stdout.splitlines()
    answer = subprocess.run([*run, "--json"], capture_output=True, text=True, env=_env(site), timeout=120)
    assert json.loads(answer.stdout)["total"] == 2
    listing = subprocess.run([sys.executable, "-m", "knowtk", "--help"], capture_output=True, text=True, env=_env(site))
    assert "records whose title holds a word (example_titles)" in " ".join(listing.stdout.split())


def test_its_profile_opens_a_folder(site: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "first.md").write_text("# The first note\n\nSome words.\n", encoding="utf-8")
    (notes / "second.md").write_text("Second thoughts\n", encoding="utf-8")
    code = f"""
import knowtk
store = knowtk.open_store({str(notes)!r}, profile="headline")
print(sorted((r["id"], r["title"]) for r in store.call("knowledge_records", {{}})["rows"]))
"""
    assert _python(site, code).strip() == "[('first', 'The first note'), ('second', 'Second thoughts')]"


def test_mcp_sdk_client_lists_and_calls_it(site: Path, demo: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "knowtk", "mcp", "--store", str(demo)], env=_env(site)
    )

    async def scenario() -> None:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert "example_titles" in tools and set(TOOLS.reads()) <= set(tools)
            assert tools["example_titles"].input_schema["required"] == ["word"]
            res = await session.call_tool("example_titles", {"word": "sqlite"})
            assert not res.is_error and res.structured_content["total"] >= 1

    anyio.run(scenario)


def test_mcp_inspector_lists_and_calls_it(site: Path, demo: Path) -> None:
    inspector = inspector_bin()
    env = {**_env(site), "PATH": f"{inspector}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(demo.parent)}
    server = [sys.executable, "-m", "knowtk", "--store", str(demo), "mcp"]
    # the Inspector starts its server with a few safe variables only: -e passes the plug-in's path on
    base = [str(inspector / "node"), str(inspector / "mcp-inspector"), "--cli", "--format", "json"]
    base += ["-e", f"PYTHONPATH={env['PYTHONPATH']}"]
    listed = subprocess.run([*base, "--method", "tools/list", *server], capture_output=True, text=True, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "example_titles" in {t["name"] for t in json.loads(listed.stdout)["result"]["tools"]}
    call = ["--method", "tools/call", "--tool-name", "example_titles", "--tool-args-json", '{"word": "vector"}']
    called = subprocess.run([*base, *call, *server], capture_output=True, text=True, env=env)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["result"]["structuredContent"]["total"] == 2
