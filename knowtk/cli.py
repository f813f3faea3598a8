"""``knowtk`` on the command line: parse arguments, call the Store, print. Nothing else lives here.

knowtk grep "vector index" --store data/fixtures/demo
knowtk lookup "Sam" --store data/fixtures/demo
knowtk call knowledge_timeline '{"entity": "person-ada-okafor"}' --store data/fixtures/demo
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from .errors import KnowtkError
from .store import open_store

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="knowtk", description="Query a Markdown knowledge store.")
    p.add_argument("--store", default=".", help="the store folder (default: the current folder)")
    p.add_argument("--state-dir", help="where to keep state.sqlite (default: STORE/.knowtk)")
    p.add_argument("--json", action="store_true", help="print the contract's JSON instead of a table")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grep", help="keyword search (knowledge_grep)")
    g.add_argument("query")
    g.add_argument("--mode", choices=("all", "any", "phrase"), default="all")
    g.add_argument("--kind")
    g.add_argument("--type")
    g.add_argument("--tag")
    g.add_argument("--lifecycle", choices=("active", "superseded", "all"), default="active")
    g.add_argument("--scope")
    g.add_argument("--since")
    g.add_argument("--until")
    g.add_argument("--limit", type=int, default=10)
    g.add_argument("--offset", type=int, default=0)
    lk = sub.add_parser("lookup", help="exact id, title or alias (knowledge_lookup)")
    lk.add_argument("query")
    rec = sub.add_parser("record", help="one record, whole (knowledge_record)")
    rec.add_argument("id")
    c = sub.add_parser("call", help="any tool by its contract name, with JSON arguments")
    c.add_argument("tool")
    c.add_argument("args", nargs="?", default="{}", help="a JSON object of camelCase arguments")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        store = open_store(a.store, state_dir=a.state_dir)
        if a.command == "grep":
            args = {k: v for k, v in vars(a).items() if k in _GREP_ARGS and v is not None}
            result = store.call("knowledge_grep", {_GREP_ARGS[k]: v for k, v in args.items()})
            print(json.dumps(result, indent=2, ensure_ascii=False) if a.json else _grep_text(result))
        elif a.command == "lookup":
            result = store.call("knowledge_lookup", {"query": a.query})
            print(json.dumps(result, indent=2, ensure_ascii=False) if a.json else _lookup_text(result))
        elif a.command == "record":
            result = store.call("knowledge_record", {"id": a.id})
            print(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            try:
                args = json.loads(a.args)
            except json.JSONDecodeError as exc:
                print(f"knowtk: args is not JSON: {exc}", file=sys.stderr)
                return 2
            print(json.dumps(store.call(a.tool, args), indent=2, ensure_ascii=False))
    except KnowtkError as exc:
        print(f"knowtk: {exc}", file=sys.stderr)
        return 2
    return 0


_GREP_ARGS = {
    "query": "query",
    "mode": "mode",
    "kind": "kind",
    "type": "type",
    "tag": "tag",
    "lifecycle": "lifecycle",
    "scope": "scope",
    "since": "since",
    "until": "until",
    "limit": "limit",
    "offset": "offset",
}


def _grep_text(r: dict[str, Any]) -> str:
    if r["index"]["state"] != "ready":
        return f"index unavailable: {r['index'].get('error', 'retry')}"
    lines = [f"{r['total']} hit(s); showing {len(r['hits'])} from {r['offset']}  (snapshot {r['snapshot']})"]
    for i, h in enumerate(r["hits"], r["offset"] + 1):
        score = "superseded" if h["score"] is None else f"{h['score']:.3f}"
        where = f"{h['path']}:{h['citation']['lineStart']}-{h['citation']['lineEnd']}"
        lines.append(f"{i:>3}. [{score}] {h['id']}  {h['title'] or ''}  ({where})")
        if h["via"]:
            lines.append(f"       via {h['via']['id']} (revision {h['via']['revision']}): {h['via']['title']}")
        snippet = " ".join(h["snippet"]["text"].split())
        lines.append(textwrap.indent(textwrap.fill(snippet[:240], 100), "       "))
    if not r["coverage"]["complete"]:
        lines.append(f"coverage incomplete: {len(r['coverage']['issues'])} issue(s), e.g.")
        lines += [f"  {i['path']}: {i['code']}: {i['message']}" for i in r["coverage"]["issues"][:5]]
    if r["nextOffset"] is not None:
        lines.append(f"more: --offset {r['nextOffset']}")
    return "\n".join(lines)


def _lookup_text(r: dict[str, Any]) -> str:
    head = f"{r['status']}" + (f" by {r['matchedBy']}" if r["matchedBy"] else "")
    rows = [f"  {c['id']}  {c['title'] or ''}  ({c['path']}, {c['lifecycle']})" for c in r["candidates"]]
    return "\n".join([head, *rows])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
