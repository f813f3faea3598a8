"""validAt over MCP, through both clients: the SDK's own (Python) and the MCP Inspector's CLI (TypeScript)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from knowtk.mcp.agent import output_schema
from tests.helpers import REPO, StoreBuilder, inspector_bin, required_in_ci

try:
    import mcp  # noqa: F401 - the optional extra knowtk[mcp]
except ImportError as exc:
    required_in_ci(f"the MCP SDK is not installed ({exc})")
    raise
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

CALLS = {
    "knowledge_records": {"type": "policy", "lifecycle": "all"},
    "knowledge_grep": {"query": "thirty"},
    "knowledge_lookup": {"query": "Policy two"},
    "knowledge_timeline": {"kind": "policy"},
}


@pytest.fixture
def policies(builder: StoreBuilder) -> Path:
    common = {"kind": "claim", "type": "policy"}
    builder.page("pol-1", "Policy one", "Keep logs thirty days.", occurred_at="2024-01-01", status="superseded",
                 superseded_by="pol-2", **common)  # fmt: skip
    builder.page("pol-2", "Policy two", "Keep logs sixty days.", occurred_at="2024-06-01", **common)
    builder.page("memo", "Undated memo", "No date at all.", type="policy", kind="claim")
    return builder.root


def _expected(answers: dict[str, dict[str, Any]]) -> None:
    """What each tool answers on 2024-07-01 (pol-2 in force, pol-1 superseded then, the memo unplaced)."""
    records = answers["knowledge_records"]
    assert [(r["id"], r["lifecycle"]) for r in records["rows"]] == [("pol-1", "superseded"), ("pol-2", "active")]
    assert records["total"] == 2 and records["unplaced"] == 1
    grep = answers["knowledge_grep"]
    assert [(h["id"], h["via"]["id"]) for h in grep["hits"]] == [("pol-2", "pol-1")] and grep["unplaced"] == 0
    lookup = answers["knowledge_lookup"]
    assert (lookup["status"], lookup["record"]["id"], lookup["unplaced"]) == ("found", "pol-2", 0)
    timeline = answers["knowledge_timeline"]
    assert [r["id"] for r in timeline["rows"]] == ["pol-2"] and timeline["unplaced"] == 0


def test_valid_at_through_the_sdk_client(policies: Path) -> None:
    server = StdioServerParameters(command=sys.executable, args=["-m", "knowtk", "mcp", "--store", str(policies)])

    async def scenario() -> None:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            listed = {t.name: t for t in (await s.list_tools()).tools}
            answers = {}
            for tool, args in CALLS.items():
                assert "validAt" in listed[tool].input_schema["properties"]
                res = await s.call_tool(tool, {**args, "validAt": "2024-07-01"})
                assert not res.is_error, res.content[0].text
                jsonschema.validate(res.structured_content, output_schema(tool, full=True))
                answers[tool] = res.structured_content
            _expected(answers)
            refused = await s.call_tool("knowledge_records", {"validAt": "2024-07-01T10:00"})
            assert refused.is_error and refused.content[0].text.startswith("invalid_argument: validAt: ")

    anyio.run(scenario)


def _inspect(bin_dir: Path, store: Path, tool: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(REPO)}
    env["HOME"] = str(store.parent)  # the Inspector keeps its own files under HOME: not the user's
    server = [sys.executable, "-m", "knowtk", "--store", str(store), "mcp"]
    cmd = [str(bin_dir / "node"), str(bin_dir / "mcp-inspector"), "--cli", "--format", "json", "--method",
           "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(args), *server]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, check=False)
    assert out.stdout.strip(), out.stderr
    return out.returncode, json.loads(out.stdout)


def test_valid_at_through_the_inspector(policies: Path) -> None:
    bin_dir = inspector_bin()
    answers = {}
    for tool, args in CALLS.items():
        code, reply = _inspect(bin_dir, policies, tool, {**args, "validAt": "2024-07-01"})
        assert code == 0, reply
        answers[tool] = reply["result"]["structuredContent"]  # checked against outputSchema by the client
    _expected(answers)
    code, reply = _inspect(bin_dir, policies, "knowledge_grep", {"query": "x", "validAt": "July"})
    text = reply["result"]["content"][0]["text"]
    assert code != 0 and text.startswith("invalid_argument: validAt: ") and "YYYY-MM-DD" in text


def test_expired_rows_of_a_timeline_match_the_answer_schema(policies: Path) -> None:
    """include_inactive answers expired rows, now and at validAt: the agents' schema names that lifecycle."""
    from knowtk import open_store
    from knowtk.mcp.agent import compact

    (policies / "short.md").write_text(
        "---\nid: short\nkind: claim\ntype: policy\ntitle: Short-lived\noccurred_at: 2024-01-01\n"
        "expires_at: 2024-02-01\n---\n",
        encoding="utf-8",
    )
    store = open_store(policies)
    for args in ({}, {"validAt": "2024-07-01"}):
        answer = store.call("knowledge_timeline", {"eligibility": "include_inactive", **args})
        assert "expired" in {r["lifecycle"] for r in answer["rows"]}
        jsonschema.validate(compact("knowledge_timeline", answer), output_schema("knowledge_timeline", full=True))
