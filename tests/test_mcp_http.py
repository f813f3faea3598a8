"""``knowtk mcp --http``: Host, Origin and token checks before anything runs, and many clients under load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from knowtk.errors import InvalidArgument
from knowtk.mcp.http import TOKEN_ENV, Bind, parse_bind, read_token
from tests.helpers import REPO, required_in_ci

try:
    import httpx2
    import mcp  # noqa: F401 - the optional extra knowtk[mcp]
except ImportError as exc:  # CI installs every extra: there this fails rather than skips
    required_in_ci(f"the MCP SDK is not installed ({exc})")
    raise
from bench.mcp_http import http_server, run_load
from knowtk.mcp.http import http_app
from knowtk.mcp.server import build_server
from knowtk.workspace import open_target

TOKEN = "t0ken-for-the-tests-0123456789"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def test_binds_and_tokens_are_parsed_or_refused(tmp_path: Path) -> None:
    assert parse_bind("8765") == Bind("127.0.0.1", 8765) and parse_bind("[::1]:80") == Bind("::1", 80)
    assert parse_bind("0.0.0.0:9000").loopback is False and parse_bind("localhost:1").loopback
    assert Bind("127.0.0.1", 8765).hosts(["proxy.example"]) == [
        "127.0.0.1:8765", "localhost:8765", "[::1]:8765", "proxy.example:8765"
    ]  # fmt: skip
    for bad in ("abc", "host:99999", "::1:80"):
        with pytest.raises(InvalidArgument) as err:
            parse_bind(bad)
        assert err.value.argument == "http"
    assert read_token(None, env={}) is None and read_token(None, env={TOKEN_ENV: f" {TOKEN}\n"}) == TOKEN
    (tmp_path / "token").write_text(TOKEN + "\n")
    assert read_token(str(tmp_path / "token"), env={TOKEN_ENV: "other-token-0123456789"}) == TOKEN  # the file wins
    with pytest.raises(InvalidArgument):
        read_token(None, env={TOKEN_ENV: "short"})
    with pytest.raises(InvalidArgument):
        read_token(str(tmp_path / "missing"))


def test_a_bind_beyond_loopback_needs_a_token(demo_copy: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    env["PYTHONPATH"] = str(REPO)
    cmd = [
        sys.executable,
        "-m",
        "knowtk",
        "--store",
        str(demo_copy),
        "mcp",
        "--http",
        "0.0.0.0:1",
    ]  # refused, never bound
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert out.returncode == 2 and "--http" in out.stderr and TOKEN_ENV in out.stderr, out.stderr
    assert not (demo_copy / ".knowtk").exists()  # refused before the store was opened


class CountingTarget:
    """A real store, counting what reaches it."""

    def __init__(self, store: Path) -> None:
        self.target = open_target(store)
        self.calls = 0

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        self.calls += 1
        return self.target.call(tool, args)


def test_refused_requests_never_reach_the_server_or_the_store(demo_copy: Path) -> None:
    target = CountingTarget(demo_copy)
    bind = Bind("127.0.0.1", 8765)
    app = http_app(build_server(target), bind, token=TOKEN)  # type: ignore[arg-type]
    good = {**MCP_HEADERS, "Host": "127.0.0.1:8765", "Authorization": f"Bearer {TOKEN}"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "knowledge_records", "arguments": {}}}
    cases = [
        ({**good, "Authorization": ""}, 401),
        ({**good, "Authorization": f"Bearer {TOKEN}x"}, 401),
        ({**good, "Authorization": TOKEN}, 401),
        ({k: v for k, v in good.items() if k != "Authorization"}, 401),
        ({**good, "Origin": "http://evil.example"}, 403),
        ({**good, "Origin": "http://127.0.0.1:9999"}, 403),
        ({**good, "Origin": "null"}, 403),
        ({**good, "Host": "evil.example:8765"}, 421),
        ({**good, "Host": "127.0.0.1.evil.example:8765", "Origin": "http://127.0.0.1.evil.example:8765"}, 421),
    ]

    async def scenario() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
            for headers, status in cases:
                for body in (INIT, call):
                    res = await client.post("/mcp", headers=headers, content=json.dumps(body))
                    assert res.status_code == status, (headers, res.status_code, res.text)
                    if status == 401:
                        assert res.headers["www-authenticate"] == "Bearer"  # no OAuth metadata to discover

    anyio.run(scenario)
    assert target.calls == 0


def test_the_token_is_required_on_loopback_too_and_good_requests_pass(demo_copy: Path) -> None:
    with http_server(demo_copy, TOKEN) as url:
        assert httpx2.post(url, headers=MCP_HEADERS, content=json.dumps(INIT)).status_code == 401
        origin = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}", "Origin": "http://localhost:1"}
        assert httpx2.post(url, headers=origin, content=json.dumps(INIT)).status_code == 403
        ok = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        res = httpx2.post(url, headers=ok, content=json.dumps(INIT))
        assert res.status_code == 200 and "mcp-session-id" in res.headers, res.text
    with http_server(demo_copy) as url:  # no token configured, loopback: none asked for
        res = httpx2.post(url, headers={**MCP_HEADERS, "Origin": url.rsplit("/", 1)[0]}, content=json.dumps(INIT))
        assert res.status_code == 200, res.text


def test_sixteen_clients_and_an_editor_get_single_caller_answers(demo_copy: Path, record_property: Any) -> None:
    """16 clients x 50 mixed calls while a file changes: no error, every answer a fresh store's (p50/p95 reported)."""
    report = run_load(demo_copy, clients=16, calls=50, token=TOKEN)
    print("\nmcp --http load:", json.dumps({k: v for k, v in report.items() if not k.startswith("first_")}))
    for key in ("p50_ms", "p95_ms", "max_ms", "wall_s"):
        record_property(key, report[key])
    assert report["errors"] == 0, report["first_errors"]
    assert report["wrong"] == 0, report["first_wrong"]
    assert report["answered"] == report["calls"] == 800 and report["edits"] > 0
