"""The public surface: explicit __all__, one exception tree, complete shapes, camelCase vs snake_case."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest

import knowtk
import knowtk.errors
from knowtk.query import TOOLS, Tool
from knowtk.query.args import Param, text
from knowtk.query.explain import explain
from tests.helpers import StoreBuilder


def test_all_is_explicit_and_importable() -> None:
    assert len(knowtk.__all__) == len(set(knowtk.__all__))
    for name in knowtk.__all__:
        assert hasattr(knowtk, name), name
    public = {n for n in dir(knowtk) if not n.startswith("_") and not isinstance(getattr(knowtk, n), type(knowtk))}
    assert public <= set(knowtk.__all__)


def test_every_module_imports_and_declares_all() -> None:
    for info in pkgutil.walk_packages(knowtk.__path__, "knowtk."):
        if info.name.endswith("__main__"):
            continue  # runs the command line when imported
        module = importlib.import_module(info.name)
        if not info.ispkg:
            assert hasattr(module, "__all__"), info.name


def test_exception_tree() -> None:
    assert issubclass(knowtk.InvalidArgument, knowtk.KnowtkError)
    assert issubclass(knowtk.InvalidArgument, ValueError)
    for cls in (knowtk.StoreUnavailable, knowtk.StateError, knowtk.ScanLimitExceeded, knowtk.RecordNotFound):
        assert issubclass(cls, knowtk.KnowtkError)
        assert isinstance(cls.code, str) and cls.code != knowtk.KnowtkError.code


def test_all_is_exactly_what_the_package_exports() -> None:
    public = {n for n in dir(knowtk) if not n.startswith("_") and not isinstance(getattr(knowtk, n), ModuleType)}
    assert set(knowtk.__all__) == public | {"__version__"}
    assert set(knowtk.errors.__all__) <= set(knowtk.__all__)  # every error is reachable as knowtk.X


def _error_classes() -> set[type]:
    for info in pkgutil.walk_packages(knowtk.__path__, "knowtk."):  # the lab's errors too
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found, todo = set(), [knowtk.KnowtkError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo += [c for c in cls.__subclasses__() if c.__module__.startswith("knowtk.")]
    return found


def _drawn_tree() -> dict[str, str | None]:
    """Each class drawn in knowtk/errors.py's docstring -> the class drawn above it at a smaller indent."""
    parents: dict[str, str | None] = {}
    path: list[tuple[int, str]] = []
    for line in (knowtk.errors.__doc__ or "").split("\n\n")[1].splitlines():
        drawn = re.match(r"^[\s├└│─]*([A-Z]\w+)", line)
        if drawn is None:
            continue
        column = drawn.start(1)
        while path and path[-1][0] >= column:
            path.pop()
        parents[drawn.group(1)] = path[-1][1] if path else None
        path.append((column, drawn.group(1)))
    return parents


def test_every_error_class_sits_in_the_tree_drawn_in_errors() -> None:
    tree, classes = _drawn_tree(), _error_classes()
    assert {"GoldSetError", "UnexpectedArgument", "StoreChanged"} <= {c.__name__ for c in classes}
    assert tree["KnowtkError"] is None
    for cls in classes - {knowtk.KnowtkError}:
        parent = next(b for b in cls.__bases__ if issubclass(b, knowtk.KnowtkError))
        assert tree.get(cls.__name__) == parent.__name__, f"{cls.__module__}.{cls.__name__} under {parent.__name__}"


class _EditedBeforeThePage:
    """A store whose files change just before explain reads its grep page (as another process may edit)."""

    def __init__(self, store: knowtk.Store, builder: StoreBuilder) -> None:
        self.store, self.builder = store, builder

    @property
    def engine(self) -> Any:
        return self.store.engine

    @property
    def verifier(self) -> Any:  # read once, right before the page
        self.builder.page("a", "Zebra", "an edit that changes the snapshot")
        return self.store.verifier


def test_explain_refuses_with_knowtk_errors(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    store = builder.open()
    with pytest.raises(knowtk.UnexpectedArgument) as info:
        explain(store, "a", query="zebra", offset=20)
    assert info.value.argument == "offset" and isinstance(info.value, TypeError | knowtk.InvalidArgument)
    with pytest.raises(knowtk.StoreChanged, match="run explain again"):
        explain(_EditedBeforeThePage(store, builder), "a", query="zebra")
    assert explain(store, "a", query="zebra")["status"] == "hit"


def test_bad_arguments_name_the_argument_and_what_is_allowed(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    store = builder.open()
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.call("knowledge_grep", {"query": "zebra", "mode": "fuzzy"})
    assert err.value.argument == "mode" and err.value.allowed == ("all", "any", "phrase")
    assert "'all', 'any', 'phrase'" in str(err.value)
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.call("knowledge_grep", {"mode": "any"})
    assert err.value.argument == "query"
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.call("knowledge_search", {"query": "zebra"})
    assert err.value.argument == "tool" and "knowledge_grep" in str(err.value)
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.call("knowledge_grep", {"query": "zebra", "limt": 5})
    assert err.value.argument == "limt" and "limit" in str(err.value)
    with pytest.raises(knowtk.InvalidArgument):
        store.grep("zebra", lifecycle="withdrawn")
    with pytest.raises(TypeError):
        store.grep("zebra", "any")  # keyword-only after the first argument


def test_a_method_refuses_what_it_does_not_take_naming_it(builder: StoreBuilder) -> None:
    store = builder.open()
    with pytest.raises(knowtk.UnexpectedArgument) as err:
        store.grep("zebra", limt=5)
    assert err.value.argument == "limt" and "limit" in err.value.allowed and isinstance(err.value, TypeError)
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.grep()  # as Store.call refuses it
    assert err.value.argument == "query" and "requires" in str(err.value)
    with pytest.raises(knowtk.UnexpectedArgument) as err:
        store.record("a", id="b")
    assert err.value.argument == "args"


def test_a_tool_without_columns_still_has_a_frame(builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    def ids(engine: Any, args: dict[str, Any], verifier: Any) -> dict[str, Any]:
        snap = engine.snapshot()
        return {"rows": [{"id": rid} for rid in sorted(snap.records) if rid.startswith(args["prefix"])], "total": 0}

    monkeypatch.setitem(TOOLS, "example_ids", Tool("example_ids", (Param("prefix", text(10), required=True),), ids))
    builder.page("a1", "A one")
    builder.page("b1", "B one")
    store = builder.open()
    assert list(store.example_ids(prefix="a").to_frame()["id"]) == ["a1"]
    assert store.example_ids(prefix="z").to_frame().empty  # no rows: an empty frame, not the answer as a row


def test_every_tool_is_reachable_by_call_and_by_method(builder: StoreBuilder) -> None:
    store = builder.open()
    for name in TOOLS.reads():
        method = name.removeprefix("knowledge_").replace("knowl_query", "knowl")
        assert callable(getattr(store, method)), name


def test_complete_shapes_have_every_key(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    builder.page("b", "Okapi")
    builder.page("c", "Giraffe")
    store = builder.open()
    grep = store.call("knowledge_grep", {"query": "zebra"})
    assert set(grep) == {"hits", "total", "offset", "nextOffset", "snapshot", "index", "coverage", "freshness"}
    assert set(grep["freshness"]) == {"queriedAt", "scannedAt", "indexedAt"}
    assert set(grep["coverage"]) == {"complete", "issues"}
    lookup = store.call("knowledge_lookup", {"query": "zebra"})
    assert {"status", "matchedBy", "record", "candidates"} <= set(lookup)
    records = store.call("knowledge_records", {})
    assert {"rows", "total", "offset", "nextOffset", "snapshot", "coverage", "freshness"} <= set(records)


def test_result_reads_like_the_dict(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    res = builder.open().grep("zebra")
    assert res["total"] == 1 and "hits" in res
    d = res.to_dict()
    d["hits"].clear()
    assert res["total"] == 1 and len(res.to_dict()["hits"]) == 1  # to_dict() is a copy
    assert "knowledge_grep: 1 of 1" in repr(res)
    assert "<table" in res._repr_html_()


def test_to_dict_is_a_copy_at_every_depth(builder: StoreBuilder) -> None:
    """Every dict and list of an answer, however deep (a record's nested frontmatter, coverage issues), is the
    caller's own: changing them all leaves the next answer as it was."""
    builder.page("a", "Zebra", extra={"nested": {"list": [1, {"deep": "x"}]}})
    builder.raw("broken.md", "---\nid: [unclosed\n")
    store = builder.open()
    res = store.record("a")
    first = res.to_dict()
    assert first["record"]["frontmatter"]["extra"]["nested"]["list"][1] == {"deep": "x"}
    assert store.grep("zebra").to_dict()["coverage"]["issues"]

    def spoil(value: Any) -> None:
        if isinstance(value, dict):
            for item in list(value.values()):
                spoil(item)
            value["spoiled"] = True
        elif isinstance(value, list):
            for item in list(value):
                spoil(item)
            value.append("spoiled")

    for answer in (first, store.grep("zebra").to_dict()):
        spoil(answer)
    again = store.record("a").to_dict()
    assert {**res.to_dict(), "freshness": None} == {**again, "freshness": None} and "spoiled" not in str(again)
    assert "spoiled" not in str(store.grep("zebra").to_dict())


def test_a_closed_store_refuses_every_use_with_store_unavailable(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    store = builder.open()
    assert store.grep("zebra")["total"] == 1
    store.close()
    store.close()  # closing twice is harmless
    uses = [
        lambda: store.grep("zebra"),
        lambda: store.call("knowledge_records", {}),
        lambda: store.knowl("zebra"),
        lambda: store.explain("a", query="zebra"),
        lambda: store.snapshot(),
        lambda: store.check(),
        lambda: store.accept_safeguard_loss(),
        lambda: knowtk.Workspace(store),
    ]
    for use in uses:
        with pytest.raises(knowtk.StoreUnavailable, match="closed"):
            use()


def test_import_knowtk_loads_the_store_at_first_use() -> None:
    """``import knowtk`` is the exception tree alone; ``knowtk.Store`` imports the store when first read."""
    code = (
        "import sys, knowtk; before = 'knowtk.store' in sys.modules; store = knowtk.open_store; "
        "from knowtk import Result, Workspace; print(before, 'knowtk.store' in sys.modules, store.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "knowtk.store"]
    with pytest.raises(AttributeError, match="no_such_name"):
        knowtk.no_such_name  # noqa: B018 - the attribute read is the test
