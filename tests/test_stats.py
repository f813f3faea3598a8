"""knowledge_stats, the tool that is one module (knowtk/query/tools/stats.py): its counts, and its answer on
every surface a tool reaches through the registry: Python (call, method, frame, HTML), the command line,
``knowtk serve``, and MCP through the SDK's client and the Inspector's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import knowtk
from knowtk.serve import client
from tests.helpers import REPO, StoreBuilder, copy_demo, inspector_bin, listening, markdown_digest, records_built


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_demo(tmp_path_factory.mktemp("stats") / "demo")  # one state for the module's processes


def _knowtk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "knowtk", *args], capture_output=True, text=True, env=env, timeout=120)


def test_counts_every_record_by_kind_type_and_lifecycle(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path / "s")
    b.page("a", "A")
    b.page("b", "B", kind="claim", type="decision", status="superseded", superseded_by="c")
    b.page("c", "C", kind="claim", type="decision")
    b.page("d", "D", kind="claim", type="decision")
    b.page("e", "E", path="team/e.md", kind="claim", type="decision", status="withdrawn")
    b.raw("broken.md", "---\nid: [\n---\n")
    before = markdown_digest(b.root)
    with b.open() as store:
        answer = store.call("knowledge_stats")
        scoped = store.call("knowledge_stats", {"scope": "team"})
    assert answer["rows"] == [
        {"kind": "claim", "type": "decision", "lifecycle": "active", "available": True, "count": 2},
        {"kind": "claim", "type": "decision", "lifecycle": "superseded", "available": True, "count": 1},
        {"kind": "claim", "type": "decision", "lifecycle": "withdrawn", "available": False, "count": 1},
        {"kind": "page", "type": "page", "lifecycle": "active", "available": True, "count": 1},
    ]
    assert answer["total"] == 5 and not answer["coverage"]["complete"]  # the broken file: no record, an issue
    assert [i["path"] for i in answer["coverage"]["issues"]] == ["broken.md"]
    assert scoped["total"] == 1 and scoped["rows"][0]["lifecycle"] == "withdrawn"
    assert markdown_digest(b.root) == before


def test_a_stored_snapshot_counts_without_building_a_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new process counts from the records' facets: the same answer as built records give, files edited,
    removed and added since the stored image included, and no record built for it."""
    root = copy_demo(tmp_path / "demo")
    with knowtk.open_store(root, state_dir=tmp_path / "state") as first:
        before = first.call("knowledge_stats")  # and the stored image
    claims = sorted((root / "claims").glob("*.md"))
    claims[0].write_text(claims[0].read_text().replace("kind: claim", "kind: page", 1))
    claims[1].unlink()
    shutil.copy(claims[2], root / "claims" / "copy.md")
    (root / "claims" / "copy.md").write_text((root / "claims" / "copy.md").read_text().replace("id: ", "id: x-", 1))
    args = [{}, {"scope": "claims"}, {"scope": "decisions"}]
    with knowtk.open_store(root, state_dir=tmp_path / "fresh") as fresh:
        want = [fresh.call("knowledge_stats", a) for a in args]
    built = records_built(monkeypatch)
    with knowtk.open_store(root, state_dir=tmp_path / "state") as store:
        got = [store.call("knowledge_stats", a) for a in args]
    assert [(a["rows"], a["total"]) for a in got] == [(a["rows"], a["total"]) for a in want]
    assert want[0]["rows"] != before["rows"] and 0 < want[1]["total"] < want[0]["total"]
    changed = {"claims/copy.md", claims[0].relative_to(root).as_posix()}
    assert set(built) <= changed  # only the files changed since the image (read by the scan), none for the count


def test_python_call_method_frame_and_html_agree(demo: Path) -> None:
    with knowtk.open_store(demo) as store:
        answer = store.call("knowledge_stats", {})
        result = store.stats()
        frame = result.to_frame()
        records = store.records(lifecycle="all", limit=1000)["rows"]
        with pytest.raises(knowtk.InvalidArgument, match="scope"):
            store.stats(scope="no/such/folder")
    assert result.to_dict() == answer
    assert list(frame.columns) == ["kind", "type", "lifecycle", "available", "count"]
    assert str(frame["count"].dtype) == "Int64" and str(frame["available"].dtype) == "boolean"
    assert int(frame["count"].sum()) == answer["total"] > len(records)  # withdrawn and unavailable ones too
    assert not frame[~frame.available].empty  # the demo's deliberate defects
    # the available active and superseded records are the inventory's, kind by kind and type by type
    counted = Counter((r["kind"], r["type"], r["lifecycle"]) for r in records)
    answered = frame[frame.available & frame.lifecycle.isin(["active", "superseded"])]
    assert {(r.kind, r.type, r.lifecycle): r.count for r in answered.itertuples()} == counted
    assert "<table" in result._repr_html_() and "knowledge_stats" in result._repr_html_()
    assert "stats" in dir(store) and "knowledge_stats" in (store.stats.__doc__ or "")


def test_command_line(demo: Path) -> None:
    with knowtk.open_store(demo) as store:
        expected = store.call("knowledge_stats")
    table = _knowtk("--store", str(demo), "stats")
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith(f"{expected['total']} record(s)")
    top = expected["rows"][0]
    assert f"{top['count']}" in table.stdout.splitlines()[2] and top["type"] in table.stdout.splitlines()[2]
    answer = json.loads(_knowtk("--store", str(demo), "stats", "--json").stdout)
    assert answer["rows"] == expected["rows"]


def test_knowtk_serve_answers_it(demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = Path(tempfile.mkdtemp(prefix="kts-"))  # a short path: a unix socket's is at most 107 bytes
    os.chmod(folder, 0o700)
    env = {client.DIR_ENV: str(folder), "KNOWTK_PROGRESS": "0"}
    monkeypatch.setenv(client.DIR_ENV, str(folder))  # where this process looks for the server's socket
    state = tmp_path / "state"
    base = ["--store", str(demo), "--state-dir", str(state)]
    root, state_folder = client.resolve(str(demo), str(state), cwd=os.getcwd())
    path = client.socket_path(client.key(root, state_folder, None, code=client.fingerprint()))
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **env}
    server = subprocess.Popen([sys.executable, "-m", "knowtk", *base, "serve"], env=full_env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not listening(path):
            assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        served = _knowtk(*base, "stats", "--json", env={**env, client.ENV: "require"})  # fails unless served
        local = _knowtk(*base, "stats", "--json", env={**env, client.ENV: "0"})
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)["rows"] == json.loads(local.stdout)["rows"]


def test_mcp_sdk_client(demo: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "knowtk", "mcp", "--store", str(demo)])

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert tools["knowledge_stats"].output_schema["required"] == ["rows", "total", "snapshot", "coverage"]
            res = await session.call_tool("knowledge_stats", {})
            assert not res.is_error and res.structured_content["total"] > 0
            assert res.structured_content["coverage"]["issueCount"] >= 0  # the agent's coverage summary
            bad = await session.call_tool("knowledge_stats", {"scope": 3})
            assert bad.is_error and "scope" in bad.content[0].text

    anyio.run(scenario)


def test_mcp_inspector(demo: Path) -> None:
    inspector = inspector_bin()
    env = {**os.environ, "PATH": f"{inspector}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(demo.parent)}
    base = [str(inspector / "node"), str(inspector / "mcp-inspector"), "--cli", "--format", "json"]
    server = [sys.executable, "-m", "knowtk", "--store", str(demo), "mcp"]
    call = ["--method", "tools/call", "--tool-name", "knowledge_stats", "--tool-args-json"]
    done = subprocess.run([*base, *call, "{}", *server], capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["result"]
    assert not answer["isError"] and answer["structuredContent"]["total"] > 0
    refused = subprocess.run([*base, *call, '{"scope": ".."}', *server], capture_output=True, text=True, env=env)
    answer = json.loads(refused.stdout)["result"]
    assert refused.returncode != 0 and answer["isError"] and answer["_meta"]["knowtk/error"]["argument"] == "scope"
