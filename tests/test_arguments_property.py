"""Every tool, reads and writes, refuses a bad argument with ``InvalidArgument`` naming it: a property over the
registry, so a tool added later is covered with no new test.

For each registered tool, arguments are drawn from the tool's own argument spec (the JSON Schema of each
``Param``'s check: enums, integer ranges, string lengths and patterns, lists, objects) mixed with hostile
values: integers far outside 64 bits, floats, NaN, booleans where integers are expected, nested containers,
very long strings, unpaired surrogates. Each call must answer a dict, or raise ``InvalidArgument`` whose
``.argument`` is one of the tool's arguments (as the surface spells it) and whose text and MCP refusal name it,
or, for an argument that is well formed, refuse for what the store holds (an unknown id, a stale hash, a
taken id). Never another exception, never a hang. Seeded and derandomized, so CI sees the same cases each run.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import knowtk
from knowtk import cli
from knowtk.mcp.agent import error_payload
from knowtk.query import TOOLS, Tool
from knowtk.query.args import snake
from knowtk.query.schema import param_schema
from tests.helpers import commit_all, copy_demo
from tests.test_fuzz import fuzz_settings, time_limit

EXAMPLES = int(os.environ.get("KNOWTK_ARG_EXAMPLES", "100"))  # per tool

# refusals about what the store holds, not about an argument's form: an id no record has (knowl_query),
# a hash other than the file's (a write), an id another file claims (create), an instant before its past
STORE_REFUSALS = (knowtk.RecordNotFound, knowtk.PublicationConflict, knowtk.IdentityConflict, knowtk.NoKnownPast)

HOSTILE = st.one_of(
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, -(10**30), 10**5000]),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), 2.0, 0.5, -0.0]),
    st.booleans(),
    st.sampled_from(["\ud800", "a\udfffb", "x" * 100_000, "é" * 3000, "", " ", "a\x00b", "\u0301"]),
    st.binary(max_size=8),
    st.recursive(
        st.one_of(st.none(), st.integers(), st.text(max_size=6), st.floats(allow_nan=True)),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=8,
    ),
)

# real values for the patterned strings: dates and instants the seed's bounds accept, at the calendar's edges
INSTANTS = ["2026-03-04", "2026-03-04T09:30:00+01:00", "0001-01-01", "9999-12-31", "2025-12-31T23:59:59Z"]
# ids, names and words the demo store holds, so drawn calls also reach records, hits and writes
DEMO_WORDS = [
    "dec-2025-030",
    "dec-2026-021",
    "note-sync-checklist",
    "person-ada-okafor",
    "vector index",
    "gpu",
    "decisions",
    "notes",
    "adr",
    "claim",
]
# stands for the sha256 the record has when the call is made, so a drawn write can land
CURRENT_SHA = "current"
RECORD_FIELDS = ["kind", "type", "title", "body", "status", "tags", "aliases", "occurred_at", "superseded_by"]


def well_formed(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the type and within the bounds the schema gives (the store may still refuse them)."""
    if "anyOf" in schema:
        return st.one_of([well_formed(s) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "integer":  # every integer argument is bounded both ways (the test below checks it)
        return st.integers(min_value=schema["minimum"], max_value=schema["maximum"])
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(well_formed(schema.get("items", {})), min_size=1, max_size=3)
    if kind == "object":
        fields = st.sampled_from(RECORD_FIELDS)
        values = st.sampled_from(["page", "claim", "decision", "A title", "2026-03-04", "active", "dec-2026-021"])
        return st.dictionaries(fields, values | st.lists(st.sampled_from(DEMO_WORDS), max_size=2), max_size=5)
    if kind == "string":
        if schema.get("pattern", "").startswith("^[0-9a-f]{64}"):
            return st.sampled_from([CURRENT_SHA, CURRENT_SHA, "0" * 64])
        if "pattern" in schema:
            return st.sampled_from([v for v in INSTANTS if re.fullmatch(schema["pattern"], v)])
        return st.sampled_from(schema.get("examples", []) + DEMO_WORDS)
    return st.sampled_from(DEMO_WORDS)


def past_the_edge(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values just outside what the schema allows: one past a bound, an unknown choice, a malformed pattern."""
    if "anyOf" in schema:
        return st.one_of([past_the_edge(s) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.text(max_size=12).filter(lambda v: v not in schema["enum"])
    kind = schema.get("type")
    if kind == "integer":
        return st.sampled_from([schema["minimum"] - 1, schema["maximum"] + 1])
    if kind == "array":
        return st.lists(st.just("x"), min_size=schema.get("maxItems", 64) + 1, max_size=schema.get("maxItems", 64) + 1)
    if kind == "string" and "maxLength" in schema:
        return st.sampled_from(["", "x" * (schema["maxLength"] + 1)])
    if kind == "string":
        return st.sampled_from(["2026-02-30", "2026-03-04T09:30", "tomorrow", "A" * 64, ""])
    return HOSTILE


@st.composite
def calls(draw: st.DrawFn, tool: Tool) -> tuple[str, dict[str, Any]]:
    """A surface ('call' with the tool's names, 'method' with Python's) and the arguments for it.

    'valid' calls draw every argument well formed; 'one' spoils one argument of a valid call; 'wild' draws
    each argument from anything.
    """
    surface = draw(st.sampled_from(["call", "method"] if tool.method_name else ["call"]))
    mode = draw(st.sampled_from(["valid", "one", "one", "wild"]))
    args: dict[str, Any] = {}
    for param in tool.params:
        kept = draw(st.integers(0, 3)) > 0 if mode == "valid" else draw(st.booleans())
        if not param.required and not kept:
            continue
        schema = param_schema(tool.name, param)
        anything = st.one_of(well_formed(schema), past_the_edge(schema), HOSTILE)
        sound = well_formed(schema)
        if param.name in tool.example:  # the tool's own example call on the demo store answers
            sound = st.just(tool.example[param.name]) | sound
        args[param.name] = draw(anything if mode == "wild" else sound)
    if mode == "one" and tool.params:
        param = draw(st.sampled_from(tool.params))
        args[param.name] = draw(past_the_edge(param_schema(tool.name, param)) | HOSTILE)
    if surface == "method":
        args = {snake(name): value for name, value in args.items()}
    return surface, args


_store: list[knowtk.Store] = []


def demo_store() -> knowtk.Store:
    """One copy of the demo store for every case (writes land in the copy, never in the checkout), committed to
    Git so that the tools of known time have a past to answer from."""
    if not _store:
        root = commit_all(copy_demo(Path(tempfile.mkdtemp(prefix="knowtk-args-")) / "demo"))
        _store.append(knowtk.open_store(root))
    return _store[0]


@pytest.fixture(scope="module", autouse=True)
def _close_store() -> Iterator[None]:
    yield
    for store in _store:
        store.close()
    _store.clear()


def answer_or_refuse(tool: Tool, surface: str, args: dict[str, Any]) -> None:
    store = demo_store()
    names = {p.name for p in tool.params} if surface == "call" else {snake(p.name) for p in tool.params}
    for key, value in args.items():
        if value == CURRENT_SHA:  # the hash the record's file has now, as a caller who just read it holds
            args[key] = current_sha256(store, args.get("id"))
    try:
        with time_limit():
            out = store.call(tool.name, args) if surface == "call" else getattr(store, tool.method_name)(**args)
    except knowtk.InvalidArgument as exc:
        # a field inside a mapping argument is named by its path: record.kind
        named = exc.argument.split(".")[0]
        assert named in names, f"{tool.name} refused {exc.argument!r}, which is none of {sorted(names)}"
        assert exc.argument in str(exc)
        payload = error_payload(exc)
        assert payload["code"] == "invalid_argument" and payload["argument"] == exc.argument
    except STORE_REFUSALS:
        pass
    else:
        data = out.to_dict() if isinstance(out, knowtk.Result) else out
        assert isinstance(data, dict)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_argument_of_every_tool_answers_or_is_refused_by_name(name: str) -> None:
    tool = TOOLS[name]

    @fuzz_settings(EXAMPLES)
    @given(call=calls(tool))
    def check(call: tuple[str, dict[str, Any]]) -> None:
        answer_or_refuse(tool, *call)

    check()


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_integer_argument_is_bounded_both_ways(name: str) -> None:
    """No integer argument reaches SQLite unchecked: each has a maximum, and one past it is refused by name."""
    tool = TOOLS[name]
    for param in tool.params:
        schema = param_schema(tool.name, param)
        if schema.get("type") != "integer":
            continue
        assert "maximum" in schema and "minimum" in schema, f"{name}.{param.name} has no upper bound"
        for value in (schema["maximum"] + 1, schema["minimum"] - 1, 10**30):
            with pytest.raises(knowtk.InvalidArgument) as caught:
                demo_store().call(name, {**required_args(tool), param.name: value})
            assert caught.value.argument == param.name
            assert f"{schema['minimum']} to {schema['maximum']}" in str(caught.value)


def current_sha256(store: knowtk.Store, rid: Any) -> str:
    try:
        found = store.call("knowledge_record", {"id": rid})
    except knowtk.InvalidArgument:
        return "0" * 64
    return str((found.get("record") or {}).get("sha256") or "0" * 64)


def required_args(tool: Tool) -> dict[str, Any]:
    """Well-formed values for a tool's required arguments (from its example call on the demo store)."""
    example = dict(tool.example or {})
    return {p.name: example[p.name] for p in tool.params if p.required}


def command_words(tool: Tool, args: dict[str, Any]) -> list[str]:
    """``args`` as the tool's command line: its positional arguments by position, the others as options."""
    words = tool.command_name.split()
    for name, value in args.items():
        values = [str(v) for v in value] if isinstance(value, list) else [str(value)]
        if name in tool.positional:
            words += values
        else:
            for one in values:
                words += ["--" + snake(name).replace("_", "-"), one]
    return words


def integer_params(tool: Tool) -> list[Any]:
    return [p for p in tool.params if param_schema(tool.name, p).get("type") == "integer"]


WITH_INTEGERS = sorted(name for name, tool in TOOLS.items() if integer_params(tool) and not tool.commands)


@pytest.mark.parametrize("name", WITH_INTEGERS)
def test_the_command_line_refuses_an_integer_past_its_bound_by_its_option(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = TOOLS[name]
    store = demo_store()
    for param in integer_params(tool):
        schema = param_schema(tool.name, param)
        for value in (schema["maximum"] + 1, 10**30):
            words = command_words(tool, {**required_args(tool), param.name: value})
            assert cli.main(["--store", str(store.root), *words]) == 2
            err = capsys.readouterr().err
            assert f"--{snake(param.name).replace('_', '-')}" in err
            assert f"{schema['minimum']} to {schema['maximum']}" in err
