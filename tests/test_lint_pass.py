"""The link pass a lint keeps beside the state (``lint-pass-v1.json``): a lint on the same snapshot with the same
settings takes the links from it, without the content cache or a file read, and resolves them again; any
change to the store, the ignore patterns or the content cache makes the next lint a whole pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knowtk.query.lint import link_cache, links
from tests.helpers import StoreBuilder


def lint(b: StoreBuilder, **args: Any) -> dict[str, Any]:
    with b.open() as store:
        return store.call("knowledge_lint", args)


def broken(answer: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(f["path"], f["line"]) for f in answer["findings"] if f["rule"] == "broken-link"]


def rec(rid: str) -> dict[str, Any]:
    return {"id": rid, "kind": "claim", "title": rid.upper()}


def no_whole_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, loading the content cache or reading a file for its links fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a whole link pass ran")

    monkeypatch.setattr(link_cache.LinkCache, "__init__", refuse)
    monkeypatch.setattr(links, "read_regular", refuse)


@pytest.fixture
def store(builder: StoreBuilder) -> StoreBuilder:
    builder.write("a.md", rec("a"), "[b](b.md) [gone](gone.md) [up](../outside.md)\n")
    builder.write("b.md", rec("b"), "no links\n")
    builder.write("c-template.md", rec("c"), "[next](nothing.md)\n")
    return builder


def test_an_unchanged_store_is_linted_from_the_kept_pass(store: StoreBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    first = lint(store)
    assert broken(first) == [("a.md", 6), ("a.md", 6)]
    kept = json.loads((store.root / ".knowtk" / link_cache.PASS_FILE).read_text())
    assert sorted(kept["linked"]) == ["a.md"] and kept["checked"] == first["checked"] == 3
    no_whole_pass(monkeypatch)
    assert lint(store) == first


def test_the_kept_links_are_resolved_again(store: StoreBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ("a.md", 6) in broken(lint(store))
    no_whole_pass(monkeypatch)
    (store.root.parent / "outside.md").write_text("# out of the store\n")  # not a file of the store: same snapshot
    messages = [f["message"] for f in lint(store)["findings"] if f["rule"] == "broken-link"]
    assert len(messages) == 1 and "gone.md" in messages[0]


def test_a_change_to_the_store_makes_a_whole_pass(store: StoreBuilder) -> None:
    lint(store)
    store.write("b.md", rec("b"), "[a](a.md) [x](x.md)\n")
    assert ("b.md", 6) in broken(lint(store))
    kept = json.loads((store.root / ".knowtk" / link_cache.PASS_FILE).read_text())
    assert sorted(kept["linked"]) == ["a.md", "b.md"]


def test_other_ignore_patterns_make_a_whole_pass(store: StoreBuilder) -> None:
    lint(store)
    store.raw("knowtk.yaml", "lint:\n  ignore: [a.md]\n")
    answer = lint(store)
    assert broken(answer) == [] and answer["checked"] == 2


def test_a_damaged_or_removed_cache_makes_a_whole_pass(store: StoreBuilder) -> None:
    first = lint(store)
    state = store.root / ".knowtk"
    (state / link_cache.PASS_FILE).write_text('{"snapshot": "x", "linked": {"a.md": [["m", 1]]')
    assert lint(store) == first
    assert json.loads((state / link_cache.PASS_FILE).read_text())["snapshot"] == first["snapshot"]
    (state / link_cache.CACHE_FILE).unlink()  # the pass holds only beside the content cache it was saved with
    assert lint(store) == first
    assert len(json.loads((state / link_cache.CACHE_FILE).read_text())["files"]) == 2  # (a template is not read)
