"""One definition, three surfaces: every tool of the registry is on Python (``Store.call``), the CLI and MCP.

The last test registers a new tool (a revision history of one record, as a later ``knowledge_history``
might be) and finds it on all three without touching any of them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

import knowtk
from knowtk.cli import COMMANDS, main, parser
from knowtk.query import TOOLS, Tool, register_tool
from knowtk.query.args import Param, text
from knowtk.query.inventory import one_record
from knowtk.query.schema import input_schema
from tests.helpers import DEMO, required_in_ci

try:
    from mcp import Client
except ImportError as exc:  # CI installs every extra: there this fails rather than skips
    required_in_ci(f"the MCP SDK is not installed ({exc})")
    raise

from knowtk.mcp.server import build_server, listed_tools
from knowtk.workspace import open_target


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    store = tmp_path / "demo"
    shutil.copytree(DEMO, store, ignore=shutil.ignore_patterns(".knowtk"))
    return store


def _cli_tools() -> dict[str, str]:
    parser()
    return {cmd.tool: name for name, cmd in COMMANDS.items() if cmd.tool is not None}


def test_every_registered_tool_is_on_every_surface() -> None:
    assert set(_cli_tools()) == set(TOOLS)
    listed = {t.name: t for t in listed_tools()}
    assert set(listed) == set(TOOLS)
    for name, tool in TOOLS.items():
        assert listed[name].input_schema["properties"].keys() == {p.name for p in tool.params}


def _history(engine: Any, args: dict[str, Any], verifier: Any) -> dict[str, Any]:
    """A new tool's runner, built on the store's own: the revision and hash of one record."""
    found = one_record(engine, args, verifier)
    record = found.get("record") or {}
    return {
        "id": args["id"],
        "status": found["status"],
        "revision": record.get("revision"),
        "sha256": record.get("sha256"),
    }


HISTORY = Tool(
    "knowledge_history",
    (Param("id", text(200), required=True, doc="The record id (case-sensitive)."),),
    _history,
    summary="The revision and hash of one record.",
    positional=("id",),
)


def test_a_tool_registered_later_appears_on_python_cli_and_mcp(
    demo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(TOOLS, HISTORY.name, HISTORY)  # as register_tool does, undone after the test
    monkeypatch.setattr("knowtk.cli.COMMANDS", dict(COMMANDS))
    assert register_tool.__doc__  # the public way to add one
    want = knowtk.open_store(demo).call("knowledge_record", {"id": "dec-2026-021"})["record"]

    # Python
    store = knowtk.open_store(demo)
    mine = store.call("knowledge_history", {"id": "dec-2026-021"})
    assert (mine["status"], mine["revision"], mine["sha256"]) == ("found", want["revision"], want["sha256"])
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.call("knowledge_history", {"id": ""})
    assert err.value.argument == "id"

    # the command line: a subcommand named after it, its argument by position, its help from the Param
    assert main(["--store", str(demo), "history", "dec-2026-021"]) == 0
    assert json.loads(capsys.readouterr().out) == mine
    assert main(["--store", str(demo), "history", ""]) == 2 and "id" in capsys.readouterr().err

    # MCP: listed with its schema from the same Params, called, refused
    async def scenario() -> None:
        async with Client(build_server(open_target(demo))) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["knowledge_history"].description == HISTORY.summary
            assert tools["knowledge_history"].input_schema == input_schema("knowledge_history")
            assert tools["knowledge_history"].input_schema["required"] == ["id"]
            res = await client.call_tool("knowledge_history", {"id": "dec-2026-021"})
            assert not res.is_error and res.structured_content == mine
            bad = await client.call_tool("knowledge_history", {"id": ""})
            assert bad.is_error and bad.content[0].text.startswith("invalid_argument: id: ")

    anyio.run(scenario)
