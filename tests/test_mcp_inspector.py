"""A second MCP client: ``knowtk mcp`` driven by the MCP Inspector's CLI (TypeScript SDK), as agent hosts drive it.

The Inspector and node 22 are installed by ``.ci/install-inspector`` into
``.ci/inspector/node_modules`` (``.ci/run`` calls it; ``KNOWTK_INSPECTOR_BIN``
names another ``node_modules/.bin``). Its client checks a result's
``structuredContent`` against the tool's ``outputSchema``, also on errors, and
its ``--strict`` reports schemas that single-type dialects cannot read. Without
the Inspector these tests skip, and under ``CI=true`` they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knowtk.query import TOOLS
from tests.helpers import REPO, VALID_CALLS, commit_all, copy_demo, inspector_bin

VALID = VALID_CALLS
# one refused argument per tool: (arguments, the argument named, a word of the allowed values)
REFUSED: dict[str, tuple[dict[str, Any], str, str]] = {
    "knowledge_grep": ({"query": "x", "limit": 99}, "limit", "1 to 50"),
    "knowledge_lookup": ({"query": "Sam", "lifecycle": "bogus"}, "lifecycle", "'superseded'"),
    "knowledge_records": ({"timeField": "created"}, "timeField", "'recorded_at'"),
    "knowledge_record": ({"id": ""}, "id", "1 to 200 characters"),
    # JavaScript reads 10**30 as a float: refused by name all the same, with the range
    "knowledge_timeline": ({"offset": 10**30}, "offset", "0 to 1000000000"),
    "knowledge_chronicle_day": ({"date": "2026-02-30"}, "date", "YYYY-MM-DD"),
    "knowledge_chronicle_since": ({"since": "yesterday"}, "since", "YYYY-MM-DD"),
    "knowledge_chronicle_last_seen": (
        {"entity": "x", "occurredOnOrBefore": "2026-13-01"},
        "occurredOnOrBefore",
        "YYYY",
    ),
    "knowl_query": ({"query": "x", "asOf": "yesterday"}, "asOf", "YYYY-MM-DD"),
}


@pytest.fixture(scope="module")
def inspector() -> Path:
    return inspector_bin()


@pytest.fixture(scope="module")
def inspector_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the demo for the module (each Inspector run costs a node process), in a folder of its own:
    the Inspector keeps its files under HOME, the copy's parent."""
    return commit_all(copy_demo(tmp_path_factory.mktemp("inspector") / "demo"))  # with a past: knowledge_changes


def _inspect(bin_dir: Path, store: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(REPO)}
    env["HOME"] = str(store.parent)  # the Inspector keeps its own files under HOME: not the user's
    server = [sys.executable, "-m", "knowtk", "--store", str(store), "mcp"]
    cmd = [str(bin_dir / "node"), str(bin_dir / "mcp-inspector"), "--cli", *options, *server]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, check=False)


def _call(bin_dir: Path, store: Path, tool: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    out = _inspect(bin_dir, store, "--format", "json", "--method", "tools/call", "--tool-name", tool,
                   "--tool-args-json", json.dumps(args))  # fmt: skip
    assert out.stdout.strip(), out.stderr
    return out.returncode, json.loads(out.stdout)


def test_tools_list_is_portable_under_strict(inspector: Path, inspector_demo: Path) -> None:
    out = _inspect(inspector, inspector_demo, "--strict", "--format", "json", "--method", "tools/list")
    assert out.returncode == 0, out.stderr
    assert "Warning" not in out.stderr and "Error" not in out.stderr and "warnings across" not in out.stderr
    tools = json.loads(out.stdout)["result"]["tools"]
    assert sorted(t["name"] for t in tools) == sorted(TOOLS.read_only())


@pytest.mark.parametrize("tool", sorted(TOOLS.reads()))
def test_each_tool_answers_through_the_inspector(inspector: Path, inspector_demo: Path, tool: str) -> None:
    code, reply = _call(inspector, inspector_demo, tool, VALID[tool])
    assert code == 0, reply
    result = reply["result"]
    assert not result.get("isError") and result["structuredContent"]  # checked against outputSchema by the client
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


@pytest.mark.parametrize("tool", sorted(REFUSED))  # a tool added later checks its own (tests/test_stats.py)
def test_each_refusal_reaches_the_inspector_naming_the_argument(
    inspector: Path, inspector_demo: Path, tool: str
) -> None:
    args, argument, allowed = REFUSED[tool]
    code, reply = _call(inspector, inspector_demo, tool, args)
    result = reply["result"]  # the tool's error, not the client's complaint about a schema
    assert code != 0 and result["isError"] is True and "structuredContent" not in result, reply
    text = result["content"][0]["text"]
    assert text.startswith(f"invalid_argument: {argument}: ") and allowed in text, text
    assert result["_meta"]["knowtk/error"]["argument"] == argument


def test_resources_through_the_inspector(inspector: Path, inspector_demo: Path) -> None:
    out = _inspect(inspector, inspector_demo, "--format", "json", "--method", "resources/templates/list")
    assert out.returncode == 0, out.stderr
    assert [t["uriTemplate"] for t in json.loads(out.stdout)["result"]["resourceTemplates"]] == ["knowtk://record/{id}"]
    uri = "knowtk://record/dec-2026-021"
    out = _inspect(inspector, inspector_demo, "--format", "json", "--method", "resources/read", "--uri", uri)
    assert out.returncode == 0, out.stderr
    contents = json.loads(out.stdout)["result"]["contents"]
    assert json.loads(contents[0]["text"])["record"]["id"] == "dec-2026-021"
    out = _inspect(
        inspector, inspector_demo, "--format", "json", "--method", "resources/read", "--uri", "knowtk://docs/agents"
    )
    assert out.returncode == 0 and "## knowl_query" in json.loads(out.stdout)["result"]["contents"][0]["text"]


def test_the_inspector_over_http_with_a_token(inspector: Path, inspector_demo: Path) -> None:
    """The TypeScript client on the Streamable HTTP transport: strict listing, a call, a refusal, a bad token."""
    from bench.mcp_http import http_server

    token = "inspector-token-0123456789"
    env = {
        **os.environ,
        "PATH": f"{inspector}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(inspector_demo.parent),
    }
    env["MCP_INSPECTOR_SECRET_STORE"] = "memory"  # no OS keychain here; nothing is stored

    def run(*options: str, auth: str = token) -> subprocess.CompletedProcess[str]:
        cmd = [str(inspector / "node"), str(inspector / "mcp-inspector"), "--cli", "--format", "json"]
        cmd += ["--stored-auth-only", "--header", f"Authorization: Bearer {auth}", "--server-url", url, *options]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, check=False)

    with http_server(inspector_demo, token) as url:
        listed = run("--strict", "--method", "tools/list")
        assert listed.returncode == 0 and "Warning" not in listed.stderr, listed.stderr
        assert len(json.loads(listed.stdout)["result"]["tools"]) == len(TOOLS.read_only())
        found = run("--method", "tools/call", "--tool-name", "knowledge_lookup", "--tool-args-json", '{"query": "Sam"}')
        assert (
            found.returncode == 0 and json.loads(found.stdout)["result"]["structuredContent"]["status"] == "ambiguous"
        )
        refused = run(
            "--method", "tools/call", "--tool-name", "knowledge_grep", "--tool-args-json", '{"query": "x", "limit": 99}'
        )
        assert json.loads(refused.stdout)["result"]["content"][0]["text"].startswith("invalid_argument: limit: ")
        denied = run("--method", "tools/list", auth="wrong-token-0123456789")
        assert denied.returncode != 0 and "bearer token is required" in denied.stdout + denied.stderr
