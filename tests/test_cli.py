"""The command line only parses and calls down: its JSON is the contract's dict."""

from __future__ import annotations

import json

from knowtk.cli import main
from tests.conftest import StoreBuilder


def test_grep_prints_hits_and_json(builder: StoreBuilder, capsys) -> None:
    builder.page("a", "Zebra crossing", "the zebra body")
    builder.page("old", "Zebra", status="superseded", superseded_by="a")
    assert main(["--store", str(builder.root), "grep", "zebra"]) == 0
    out = capsys.readouterr().out
    assert "1 hit(s)" in out and "a  Zebra crossing" in out and "a.md:" in out
    assert main(["--store", str(builder.root), "--json", "grep", "zebra", "--lifecycle", "all"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(h["id"] for h in data["hits"]) == ["a", "old"]


def test_lookup_call_and_errors(builder: StoreBuilder, capsys) -> None:
    builder.page("a", "Zebra")
    assert main(["--store", str(builder.root), "lookup", "zebra"]) == 0
    assert capsys.readouterr().out.startswith("found by title")
    assert main(["--store", str(builder.root), "call", "knowledge_records", '{"limit": 1}']) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 1
    assert main(["--store", str(builder.root), "grep", "zebra", "--limit", "99"]) == 2
    assert "limit" in capsys.readouterr().err
    assert main(["--store", str(builder.root / "missing"), "grep", "zebra"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["--store", str(builder.root), "call", "knowledge_records", "{not json"]) == 2
