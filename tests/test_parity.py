"""One definition, three surfaces: every tool of the registry is on Python (``Store.call``), the CLI and MCP.

One test registers a new tool (the revision of one record) and finds it on all three without touching any
of them; another finds the write tools (``Tool.writes``) on all three, over MCP only
when the server is started with ``--allow-writes``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import knowtk
from knowtk.cli import COMMANDS, main, parser
from knowtk.query import TOOLS, Tool, register_tool
from knowtk.query.args import Param, text
from knowtk.query.inventory import one_record
from tests.helpers import required_in_ci

try:
    from mcp import Client
except ImportError as exc:  # CI installs every extra: there this fails rather than skips
    required_in_ci(f"the MCP SDK is not installed ({exc})")
    raise

from knowtk.mcp.server import AT_TWO_INSTANTS, build_server, listed_input_schema, listed_tools
from knowtk.workspace import open_target


def _cli_tools() -> dict[str, str]:
    parser()
    return {cmd.tool: name for name, cmd in COMMANDS.items() if cmd.tool is not None}


def test_every_registered_tool_is_on_every_surface() -> None:
    assert set(_cli_tools()) == set(TOOLS)
    # the tool that changes files: with --allow-writes only; the change log is offered read-only too
    assert {t.name for t in listed_tools()} == set(TOOLS.read_only()) == {*TOOLS.reads(), "knowledge_history"}
    listed = {t.name: t for t in listed_tools(allow_writes=True)}
    assert set(listed) == set(TOOLS)
    for name, tool in TOOLS.items():
        known_at = set() if tool.writes or name in AT_TWO_INSTANTS else {"knownAt"}  # a read may ask the past
        assert listed[name].input_schema["properties"].keys() == {p.name for p in tool.params} | known_at


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
    "knowledge_revision",
    (Param("id", text(200), required=True, doc="The record id (case-sensitive)."),),
    _history,
    summary="The revision and hash of one record.",
    positional=("id",),
    command="revision",
)


def test_a_tool_registered_later_appears_on_python_cli_and_mcp(
    demo_copy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(TOOLS, HISTORY.name, HISTORY)  # as register_tool does, undone after the test
    commands = dict(COMMANDS)  # the one table every module of the command line reads, undone after the test
    for module in ("knowtk.cli", "knowtk.cli.registry", "knowtk.cli.tools"):
        monkeypatch.setattr(f"{module}.COMMANDS", commands)
    assert register_tool.__doc__  # the public way to add one
    want = knowtk.open_store(demo_copy).call("knowledge_record", {"id": "dec-2026-021"})["record"]

    # Python
    store = knowtk.open_store(demo_copy)
    mine = store.call("knowledge_revision", {"id": "dec-2026-021"})
    assert (mine["status"], mine["revision"], mine["sha256"]) == ("found", want["revision"], want["sha256"])
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.call("knowledge_revision", {"id": ""})
    assert err.value.argument == "id"

    # the command line: a subcommand named after it, its argument by position, its help from the Param
    assert main(["--store", str(demo_copy), "revision", "dec-2026-021"]) == 0
    assert json.loads(capsys.readouterr().out) == mine
    assert main(["--store", str(demo_copy), "revision", ""]) == 2 and "id" in capsys.readouterr().err

    # MCP: listed with its schema from the same Params, called, refused
    async def scenario() -> None:
        async with Client(build_server(open_target(demo_copy))) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["knowledge_revision"].description == HISTORY.summary
            assert tools["knowledge_revision"].input_schema == listed_input_schema("knowledge_revision")
            assert tools["knowledge_revision"].input_schema["properties"].keys() == {"id", "knownAt"}
            assert tools["knowledge_revision"].input_schema["required"] == ["id"]
            res = await client.call_tool("knowledge_revision", {"id": "dec-2026-021"})
            assert not res.is_error and res.structured_content == mine
            bad = await client.call_tool("knowledge_revision", {"id": ""})
            assert bad.is_error and bad.content[0].text.startswith("invalid_argument: id: ")

    anyio.run(scenario)


def test_the_write_tools_are_on_python_cli_and_mcp_with_allow_writes(
    demo_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = knowtk.open_store(demo_copy)
    record = store.call("knowledge_record", {"id": "dec-2026-021"})["record"]
    stale = {"operation": "withdraw", "id": "dec-2026-021", "expectedSha256": "0" * 64, "reason": "parity"}
    write_tools = {n: t for n, t in TOOLS.items() if t.writes}
    for name in write_tools:  # Python: one definition validates and answers
        with pytest.raises(knowtk.InvalidArgument) as err:
            store.call(name, {"limit": 0} if name == "knowledge_history" else {**stale, "operation": "bogus"})
        assert err.value.argument in {"limit", "operation"}
    with pytest.raises(knowtk.PublicationConflict):
        store.call("knowledge_mutation", stale)
    # the command line: the generic `call` and the history subcommand answer from the same definition
    assert main(["--store", str(demo_copy), "call", "knowledge_history", json.dumps({"id": "dec-2026-021"})]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 0
    assert main(["--store", str(demo_copy), "withdraw", "dec-2026-021", "--expect", "0" * 64, "--reason", "x"]) == 1
    assert "the file changed since it was read" in capsys.readouterr().err

    async def scenario() -> None:
        async with Client(build_server(open_target(demo_copy))) as client:  # the default server is read-only
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed & set(write_tools) == {"knowledge_history"}  # it reads; the tool that changes is held back
            refused = await client.call_tool("knowledge_mutation", stale)
            assert refused.is_error and "not offered" in refused.content[0].text
        async with Client(build_server(open_target(demo_copy), allow_writes=True)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name, tool in write_tools.items():
                assert tools[name].input_schema["properties"].keys() == {p.name for p in tool.params}
            assert tools["knowledge_mutation"].annotations.destructive_hint is True
            conflict = await client.call_tool("knowledge_mutation", stale)
            assert conflict.is_error and conflict.content[0].text.startswith("publication_conflict: ")

    anyio.run(scenario)
    assert (
        knowtk.open_store(demo_copy).call("knowledge_record", {"id": "dec-2026-021"})["record"]["sha256"]
        == record["sha256"]
    )  # every refused write left the file as it was
