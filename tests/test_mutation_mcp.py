"""The write tools over MCP: offered only with --allow-writes, with truthful hints, expectedSha256 checked there too."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from knowtk.mcp.agent import output_schema
from knowtk.query import TOOLS
from knowtk.query.schema import input_schema
from tests.test_mcp import _call, _refused, _server


def test_the_default_server_stays_read_only(demo_copy: Path) -> None:
    before = (demo_copy / "decisions/dec-2026-021.md").read_bytes()

    async def scenario() -> None:
        async with stdio_client(_server(demo_copy)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            # the change log is a read: offered without --allow-writes; the change itself is not
            assert {t.name for t in (await s.list_tools()).tools} == {*TOOLS.reads(), "knowledge_history"}
            res = await s.call_tool("knowledge_mutation", {"operation": "withdraw", "id": "dec-2026-021"})
            _refused(res, "tool")
            history = await s.call_tool("knowledge_history", {"id": "dec-2026-021"})
            assert not history.is_error and history.structured_content["receipts"] == []

    anyio.run(scenario)
    assert (demo_copy / "decisions/dec-2026-021.md").read_bytes() == before


def test_allow_writes_offers_the_write_tools_and_checks_the_hash(demo_copy: Path) -> None:
    path = demo_copy / "decisions/dec-2026-021.md"

    async def scenario() -> None:
        async with stdio_client(_server(demo_copy, "--allow-writes")) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert set(tools) == {*TOOLS.reads(), "knowledge_mutation", "knowledge_history"}
            hints = tools["knowledge_mutation"].annotations
            assert hints.read_only_hint is False and hints.destructive_hint is True and hints.idempotent_hint is True
            assert tools["knowledge_history"].annotations.read_only_hint is True
            assert tools["knowledge_mutation"].input_schema == input_schema("knowledge_mutation")
            assert tools["knowledge_mutation"].output_schema == output_schema("knowledge_mutation")
            base = {"operation": "withdraw", "id": "dec-2026-021", "reason": "duplicate"}
            _refused(await _call(s, "knowledge_mutation", base), "expectedSha256")
            stale = await _call(s, "knowledge_mutation", {**base, "expectedSha256": "0" * 64})
            assert stale.is_error and stale.meta["knowtk/error"]["code"] == "publication_conflict"
            rec = (await _call(s, "knowledge_record", {"id": "dec-2026-021"})).structured_content["record"]
            done = await _call(s, "knowledge_mutation", {**base, "expectedSha256": rec["sha256"], "actor": "agent"})
            assert not done.is_error, done.content[0].text
            receipt = done.structured_content["receipt"]
            assert receipt["actor"] == "agent" and receipt["indexed"] is False
            assert b"status: withdrawn" in path.read_bytes()
            await _call(s, "knowledge_grep", {"query": "vector index"})
            history = (await _call(s, "knowledge_history", {"id": "dec-2026-021"})).structured_content
            assert history["receipts"][0]["id"] == receipt["id"] and history["receipts"][0]["indexed"] is True

    anyio.run(scenario)
