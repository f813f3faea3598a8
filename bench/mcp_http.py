"""Load on ``knowtk mcp --http``: many clients, mixed calls, an editor changing a file; every answer checked.

    python bench/mcp_http.py STORE [--clients 16] [--calls 50] [--token]

Starts ``knowtk mcp --http 127.0.0.1:PORT`` on STORE (a free loopback port), warms it with one call,
and starts an editor that keeps rewriting one note of its own (``bench-churn.md``, saved whole and
renamed into place as editors do, the same length each time, so no other answer's ranking changes).
Each client opens its own MCP session (the SDK's Streamable HTTP client) and makes ``--calls`` calls
cycling through the mix (``MIX`` on the demo store, ``store_mix`` made from the store's own records on
any other). Every answer is compared, without its ``snapshot``, with what a fresh store opened in this
process answers for the same call. Prints calls, errors, wrong answers and
latency (p50, p95, max) as JSON; exits 1 on any error or wrong answer. Traffic stays on 127.0.0.1.

``tests/test_mcp_http.py`` runs the same load (``run_load``) on the demo store.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
CHURN = "bench-churn.md"

# (tool, arguments): reads of every kind, each answered the same by a fresh store
MIX: list[tuple[str, dict[str, Any]]] = [
    ("knowledge_grep", {"query": "vector index"}),
    ("knowledge_lookup", {"query": "Sam"}),
    ("knowledge_records", {"kind": "claim", "limit": 5}),
    ("knowledge_record", {"id": "dec-2026-021"}),
    ("knowledge_grep", {"query": "search", "mode": "any", "limit": 10}),
    ("knowledge_timeline", {"entity": "person-ada-okafor", "limit": 3}),
    ("knowledge_chronicle_since", {"since": "2026-03-01", "until": "2026-03-31"}),
    ("knowledge_records", {"limit": 20, "offset": 20}),
    ("knowledge_grep", {"query": "x", "limit": 99}),  # a refusal, every time the same
    ("knowledge_chronicle_day", {"date": "2026-03-29", "week": True, "timeZone": "Europe/Berlin"}),
]


def churn_text(i: int) -> str:
    return f"---\nid: bench-churn\nkind: page\ntype: note\ntitle: Churn {i % 10000:04d}\n---\nQuokka {i % 10000:04d}.\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(store: Path, token: str | None = None, *extra: str) -> Iterator[str]:
    """``knowtk mcp --http`` on a free loopback port, until the block ends; yields its URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("KNOWTK_MCP_TOKEN", None)
    if token is not None:
        env["KNOWTK_MCP_TOKEN"] = token
    cmd = [sys.executable, "-m", "knowtk", "--store", str(store), "mcp", "--http", f"127.0.0.1:{port}", *extra]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server stopped: {proc.stderr.read() if proc.stderr else ''}")
            try:
                httpx2.get(url, timeout=2)
                break
            except httpx2.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not listen within 60 s") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def comparable(data: Any) -> Any:
    """An answer without what may differ between two equal answers: the snapshot."""
    if isinstance(data, dict):
        return {k: comparable(v) for k, v in data.items() if k != "snapshot"}
    if isinstance(data, list):
        return [comparable(v) for v in data]
    return data


def differences(got: Any, want: Any, path: str = "") -> list[str]:
    """Where two answers differ, as paths with both values (short)."""
    if isinstance(got, dict) and isinstance(want, dict):
        return [d for k in sorted(set(got) | set(want)) for d in differences(got.get(k), want.get(k), f"{path}/{k}")]
    if isinstance(got, list | tuple) and isinstance(want, list | tuple) and len(got) == len(want):
        return [d for i, (a, b) in enumerate(zip(got, want, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if got == want else [f"{path}: {str(got)[:80]} != {str(want)[:80]}"]


def store_mix(fresh: Any) -> list[tuple[str, dict[str, Any]]]:
    """A mix like ``MIX`` made from any store's records: the demo's ids where they exist."""
    if fresh.call("knowledge_lookup", {"query": "dec-2026-021"})["status"] == "found":
        return MIX
    rows = [r for r in fresh.call("knowledge_records", {"limit": 50})["rows"] if r["id"] != "bench-churn"]
    first = rows[0]
    words = [w for r in rows for w in str(r.get("title") or "").split() if w.isalpha() and len(w) > 3]
    return [
        ("knowledge_grep", {"query": words[0] if words else "meeting"}),
        ("knowledge_lookup", {"query": first["id"]}),
        ("knowledge_records", {"kind": "claim", "limit": 5}),
        ("knowledge_record", {"id": rows[-1]["id"]}),
        ("knowledge_grep", {"query": " ".join(words[1:4]) or "search", "mode": "any", "limit": 10}),
        ("knowledge_timeline", {"limit": 3, "order": "desc"}),
        ("knowledge_chronicle_since", {"since": "2024-01-01", "until": "2024-03-31", "limit": 20}),
        ("knowledge_records", {"limit": 20, "offset": 20}),
        ("knowledge_grep", {"query": "x", "limit": 99}),
        ("knowledge_records", {"tag": "search", "limit": 10}),
    ]


def expected_answers(store: Path) -> tuple[list[tuple[str, dict[str, Any]]], list[Any]]:
    """The mix, and each call's answer from a fresh store in this process: ("ok", rows) or ("refused", text)."""
    import knowtk
    from knowtk.mcp.agent import compact, error_payload

    state = store.parent / f".fresh-state-{os.getpid()}"
    fresh = knowtk.open_store(store, state_dir=state)
    mix = store_mix(fresh)
    out = []
    for tool, args in mix:
        try:
            out.append(("ok", comparable(compact(tool, fresh.call(tool, args)))))
        except knowtk.KnowtkError as exc:
            err = error_payload(exc)
            out.append(("refused", f"{err['code']}: {err['message']}"))
    fresh.close()
    shutil.rmtree(state, ignore_errors=True)
    return mix, out


async def _client(url: str, token: str | None, calls: int, start: int, mix: list, expected: list, out: dict) -> None:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for n in range(calls):
            k = (start + n) % len(mix)
            tool, args = mix[k]
            began = time.perf_counter()
            try:
                res = await session.call_tool(tool, args)
            except Exception as exc:  # a failed call is counted, and the client goes on
                out["errors"].append(f"{tool}: {type(exc).__name__}: {exc}")
                continue
            out["latency"].append(time.perf_counter() - began)
            got = ("refused", res.content[0].text) if res.is_error else ("ok", comparable(res.structured_content))
            if got != expected[k]:
                out["wrong"].append({"tool": tool, "args": args, "differs": differences(got, expected[k])[:5]})


def run_load(store: Path, *, clients: int = 16, calls: int = 50, token: str | None = None) -> dict[str, Any]:
    """The load on ``store`` (a copy: the editor writes ``bench-churn.md`` into it); the report as a dict."""
    churn = store / CHURN
    churn.write_text(churn_text(0), encoding="utf-8")
    mix, expected = expected_answers(store)
    out: dict[str, Any] = {"latency": [], "errors": [], "wrong": []}
    stop, edits = threading.Event(), [0]

    def editor() -> None:  # as editors save: a whole new file renamed over the old (a torn write is an issue)
        tmp = store.parent / f".{CHURN}.tmp"
        while not stop.is_set():
            edits[0] += 1
            tmp.write_text(churn_text(edits[0]), encoding="utf-8")
            os.replace(tmp, churn)
            time.sleep(0.01)

    with http_server(store, token) as url:
        anyio.run(_client, url, token, 1, 0, mix, expected, out)  # warm: the server's first scan and index
        out["latency"].clear()
        writer = threading.Thread(target=editor, daemon=True)
        began = time.perf_counter()
        writer.start()
        try:

            async def all_clients() -> None:
                async with anyio.create_task_group() as tg:
                    for c in range(clients):
                        tg.start_soon(_client, url, token, calls, c * 3, mix, expected, out)

            anyio.run(all_clients)
        finally:
            stop.set()
            writer.join()
        wall = time.perf_counter() - began
    lat = sorted(out["latency"])
    pct = statistics.quantiles(lat, n=100) if len(lat) > 1 else lat * 99
    return {
        "clients": clients,
        "calls": clients * calls,
        "answered": len(lat),
        "errors": len(out["errors"]),
        "wrong": len(out["wrong"]),
        "edits": edits[0],
        "wall_s": round(wall, 2),
        "p50_ms": round(pct[49] * 1000, 1) if lat else None,
        "p95_ms": round(pct[94] * 1000, 1) if lat else None,
        "max_ms": round(lat[-1] * 1000, 1) if lat else None,
        "first_errors": out["errors"][:3],
        "first_wrong": out["wrong"][:3],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("store", type=Path, help="the store (the editor writes bench-churn.md into it: use a copy)")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--calls", type=int, default=50, help="calls per client")
    p.add_argument("--token", action="store_true", help="serve with a random bearer token, sent by every client")
    a = p.parse_args()
    report = run_load(a.store, clients=a.clients, calls=a.calls, token=secrets.token_hex(16) if a.token else None)
    print(json.dumps(report, indent=1))
    return 1 if report["errors"] or report["wrong"] or report["answered"] != report["calls"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
