"""Fuzzing: random and adversarial files in a store, random values in every argument of every tool.

Asserted for every case: nothing raises but ``KnowtkError`` (a bad file raises nothing at all), no
call outlives its timeout, every hostile file is either a record or a coverage issue, and the
answers for the good records do not change. Seeded and derandomized, so CI sees the same cases
each run; ``KNOWTK_FUZZ_EXAMPLES`` raises the number of cases (``python tests/test_fuzz.py N``
runs a campaign and prints its figures for docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import knowtk
from knowtk.model.profile import RECORD_KEYS
from knowtk.query import TOOLS

# cases per run: about 10 s for the files, 5 s for the arguments on a 2-core machine
FILE_EXAMPLES = int(os.environ.get("KNOWTK_FUZZ_EXAMPLES", "300"))
ARG_EXAMPLES = 5 * FILE_EXAMPLES
CALL_TIMEOUT = int(os.environ.get("KNOWTK_FUZZ_TIMEOUT", "20"))  # seconds: far above any call here, below a hang
POSIX = os.name == "posix"


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )


GOOD = {
    "good-alpha.md": "---\nid: good-alpha\nkind: page\ntitle: Alpha vector index\ntags: [search]\n"
    "occurred_at: 2026-03-04\nentities: [good-beta]\n---\nThe vector index is columnar.\n",
    "notes/good-beta.md": "---\nid: good-beta\nkind: page\ntitle: Beta storage plan\naliases: [Beta]\n"
    "occurred_at: 2026-03-05T10:00:00+01:00\n---\nStorage plan with a vector index.\n",
    "notes/good-gamma.md": "---\nid: good-gamma\nkind: claim\ntype: decision\ntitle: Gamma decision\n"
    "evidence: [{path: notes/good-beta.md, lines: [7, 7], quote: Storage plan}]\n---\nWe chose the vector index.\n",
}
GOOD_IDS = ("good-alpha", "good-beta", "good-gamma")
QUERIES = (
    ("knowledge_grep", {"query": "vector index", "mode": "any", "limit": 50}),
    ("knowledge_records", {"limit": 1000}),
    ("knowledge_lookup", {"query": "Beta"}),
    ("knowledge_timeline", {"limit": 200}),
    ("knowledge_chronicle_since", {"since": "0001-01-01", "limit": 200}),
    ("knowledge_chronicle_day", {"date": "2026-03-04", "week": True, "timeZone": "Europe/Berlin"}),
    ("knowledge_record", {"id": "good-gamma"}),
    ("knowl_query", {"query": "vector index"}),
)


class CallHung(Exception):
    """A call outlived its alarm (not an OSError, as TimeoutError is: code that handles a failed
    read must not mistake the alarm for one)."""


@contextlib.contextmanager
def time_limit(seconds: int = CALL_TIMEOUT) -> Iterator[None]:
    """Fail a call that takes longer than ``seconds`` (a hang), where the platform can interrupt it.

    The alarm is sent to the main thread itself (``pthread_kill``): a signal sent to the process
    may land on another thread, leaving a main thread blocked in ``open()`` of a FIFO asleep.
    """
    if not POSIX or threading.current_thread() is not threading.main_thread():
        yield
        return

    def hung(signum: int, frame: Any) -> None:
        raise CallHung(f"a call ran for more than {seconds} s")

    main = threading.main_thread().ident
    assert main is not None
    previous = signal.signal(signal.SIGALRM, hung)
    timer = threading.Timer(seconds, signal.pthread_kill, (main, signal.SIGALRM))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()  # a late alarm lands while `hung` still handles it
        signal.signal(signal.SIGALRM, previous)


# -- hostile files ------------------------------------------------------------------------------

EDGE_DATES = (
    "9999-12-31",
    "0001-01-01",
    "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+01:00",
    "2023-02-30",
    "2026-13-01",
    "2026-03-04T25:00:00Z",
    "2026-03-04T10:00Z",
    "2026-03-04T10:00:00+24:00",
    "!!timestamp 2023-02-30",
    "!!timestamp nonsense",
    "!!timestamp 2026-03-04",
    "[2026-03-04]",
    "{a: 1}",
    "99999-01-01",
    "1e400",
)
SCALARS = (
    "!!int xyz",
    "!!int '-'",
    "!!float abc",
    "!!bool maybe",
    "!!binary 'abc'",
    "!!null x",
    "!!set [a]",
    "!!omap [1]",
    "!!python/object:os.system x",
    "9" * 5000,
    "0x" + "f" * 4000,
    str(2**63),
    str(2**64 + 1),
    "-1",
    "0",
    ".nan",
    "-.inf",
    '"\\ud800"',
    '"\\0"',
    '"a\\x00b"',
    "~",
    "[]",
    "{}",
    "[" * 80 + "]" * 80,
    "&a {self: *a}",
    "&a [x, *a]",
    "*undefined",
    "'" + "x" * 3000 + "'",
    "\u202e\u0000",
    "vector index",
)
KEYS = (*RECORD_KEYS, "<<", "? [a]")
EVIDENCE = (
    "[{path: '/etc/passwd', quote: root}]",
    "[{path: '../outside.md', quote: x}]",
    "[{path: '.knowtk/state.sqlite', quote: SQLite}]",
    '[{path: "a\\0b", quote: x}]',
    "[{path: notes, quote: x}]",
    "[{path: notes/good-beta.md, lines: [0, 99999999999999999999], quote: x}]",
    "[{path: notes/good-beta.md, lines: [3, 1]}]",
    "[{path: " + "x/" * 3000 + "y}]",
)


def alias_bomb(levels: int) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nfields: {{bomb: *a{levels - 1}}}"


hostile_ids = st.one_of(
    st.sampled_from(["h-1", "h-2", "h-3", "5", "'007'", "''", "'bad id'", "[h-1]", "'" + "h" * 200 + "'"]),
    st.from_regex(r"h-[A-Za-z0-9._:-]{0,20}", fullmatch=True),
)
values = st.one_of(
    st.sampled_from(SCALARS),
    st.sampled_from(EDGE_DATES),
    st.sampled_from(EVIDENCE),
    st.sampled_from(["page", "claim", "relationship", "superseded", "withdrawn", "h-1", "good-alpha", "true"]),
    st.text(max_size=30).map(lambda t: repr(t).replace("\\", "\\\\")),
)
line = st.one_of(
    st.tuples(st.sampled_from(KEYS), values).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.sampled_from(["  - nested", "\t", "---", "...", "%YAML 1.1", "key: [unclosed", "a: &x b\nc: *x"]),
    st.integers(2, 9).map(alias_bomb),
)


@st.composite
def record_text(draw: st.DrawFn) -> bytes:
    """A file as an editor, a sync tool or an attacker might leave it."""
    shape = draw(st.sampled_from(["frontmatter", "frontmatter", "frontmatter", "bytes", "almost"]))
    if shape == "bytes":
        return draw(st.binary(max_size=400))
    lines = [f"id: {draw(hostile_ids)}", f"kind: {draw(st.sampled_from(['page', 'claim', 'relationship', 'x']))}"]
    lines += draw(st.lists(line, max_size=8))
    body = draw(st.text(max_size=200))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    fm = newline.join(lines)
    if shape == "almost":  # a broken fence, a BOM, or bytes that are not UTF-8 around the frontmatter
        prefix = draw(st.sampled_from(["\ufeff---", "--", "---\n---", "\n---"]))
        text = f"{prefix}{newline}{fm}{newline}---{newline}{body}"
        return text.encode("utf-8", "surrogatepass") + draw(st.binary(max_size=20))
    return f"---{newline}{fm}{newline}---{newline}{body}".encode("utf-8", "surrogatepass")


names = st.one_of(
    st.from_regex(r"[a-z0-9 _.-]{1,20}\.md", fullmatch=True),
    st.sampled_from(["new\nline.md", "tab\there.md", "caf\u00e9.md", "\u202eevil.md", "x" * 252 + ".md"]),
    st.text(st.characters(codec="utf-8", blacklist_characters="/\0"), min_size=1, max_size=12).map(lambda t: t + ".md"),
)
kinds = st.sampled_from(["file"] * 8 + ["nonutf8", "fifo", "symlink_out", "symlink_dangling", "symlink_loop"])


@st.composite
def hostile_files(draw: st.DrawFn) -> list[tuple[str, str, bytes]]:
    """[(kind, relative name, content)]: a few hostile entries, at the top or in a folder."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        folder = draw(st.sampled_from(["", "notes/", "deep/er/"]))
        out.append((draw(kinds), folder + draw(names), draw(record_text())))
    return out


def write_hostile(root: Path, outside: Path, kind: str, name: str, data: bytes) -> str | None:
    """Create one hostile entry; the path the store reports it under, or None when it is not looked at."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    base = name.rsplit("/", 1)[-1]
    try:
        if kind == "nonutf8" and POSIX and sys.platform != "darwin":
            raw = os.fsencode(path)[:-3] + b"\xff.md"
            with open(raw, "wb") as f:
                f.write(data)
            return name[:-3] + "\\xff.md" if not base.startswith((".", "_")) else None
        if kind == "fifo" and POSIX:
            os.mkfifo(path)
        elif kind == "symlink_out" and POSIX:
            (outside / "target.md").write_bytes(data)
            os.symlink(outside / "target.md", path)
        elif kind == "symlink_dangling" and POSIX:
            os.symlink(outside / "missing.md", path)
        elif kind == "symlink_loop" and POSIX:
            os.symlink(base, path)
        else:
            path.write_bytes(data)
    except (OSError, ValueError):  # a name this file system refuses: nothing was written
        return None
    return None if base.startswith((".", "_")) else name


def make_store(parent: Path) -> tuple[Path, Path]:
    root, outside = parent / "store", parent / "outside"
    outside.mkdir(parents=True)
    for name, text in GOOD.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root, outside


def good_view(tool: str, out: dict[str, Any]) -> Any:
    """What an answer says about the good records: the part no hostile file may change."""
    if tool == "knowledge_grep":
        return sorted((h["id"], h["snippet"], h["matches"], h["evidence"]) for h in out["hits"] if h["id"] in GOOD_IDS)
    if tool == "knowledge_lookup":
        return (out["status"], out["record"] and out["record"]["id"])
    if tool == "knowledge_record":
        return out["record"]
    if tool == "knowl_query":
        return sorted(r["id"] for r in out["results"] if r["id"] in GOOD_IDS)
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items())) for r in out["rows"] if r["id"] in GOOD_IDS)


def answers(store: knowtk.Store) -> dict[str, Any]:
    out = {}
    for tool, args in QUERIES:
        with time_limit():
            out[tool] = store.call(tool, args)
    return out


_baseline: dict[str, Any] = {}


def baseline() -> dict[str, Any]:
    if not _baseline:
        with tempfile.TemporaryDirectory() as tmp:
            root, _ = make_store(Path(tmp))
            with knowtk.open_store(root) as store:
                _baseline.update({tool: good_view(tool, out) for tool, out in answers(store).items()})
    return _baseline


@fuzz_settings(FILE_EXAMPLES)
@given(files=hostile_files())
def test_hostile_files_cost_only_themselves(files: list[tuple[str, str, bytes]]) -> None:
    check_files(files)


def check_files(files: list[tuple[str, str, bytes]]) -> None:
    expected = baseline()
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = make_store(Path(tmp))
        written: set[str] = set()
        created: set[str] = set()
        for kind, name, data in files:
            # each name once (writing into a FIFO made earlier would wait for a reader), never a good one
            if name in GOOD or any(name == c or name.startswith(c + "/") or c.startswith(name + "/") for c in created):
                continue
            created.add(name)
            shown = write_hostile(root, outside, kind, name, data)
            if shown is not None:
                written.add(shown)
        with knowtk.open_store(root) as store:
            got = answers(store)  # raises on any exception: a bad file may cost no query
            snap = store.snapshot()
        issue_paths = {i["path"] for i in got["knowledge_records"]["coverage"]["issues"]}
        record_paths = {r.path for r in snap.records.values()}
        unaccounted = {p for p in written if p.endswith(".md") and p not in issue_paths | record_paths}
        assert not unaccounted, f"hostile files neither records nor coverage issues: {unaccounted}"
        for tool, out in got.items():
            assert good_view(tool, out) == expected[tool], tool


# -- hostile arguments --------------------------------------------------------------------------

arg_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**63) - 1, 10**5000, 0, -1, 1, 50, 51, 500, 501]),
    st.floats(allow_nan=True),
    st.sampled_from([math.nan, math.inf, 1.5, -0.0]),
    st.text(max_size=40),
    st.sampled_from(
        [
            "\ud800",
            "a\x00b",
            "Europe",
            "Europe/Berlin",
            "../../etc/passwd",
            "x" * 600,
            "9999-12-31",
            "0001-01-01",
            "9999-12-31T23:59:59-01:00",
            "0001-01-01T00:00:00+01:00",
            "2026-03-04",
            "2026-02-30",
            "notes",
            "/",
            ".",
            "..",
            "good-alpha",
            "vector index",
            "all",
            "any",
            "phrase",
            "desc",
            "include_inactive",
            '"',
            "NEAR(a b)",
            "a OR b NOT c",
            "*",
            "\u0301",
        ]
    ),
    st.binary(max_size=10),
    st.lists(
        st.one_of(st.text(max_size=10), st.integers(), st.none(), st.sampled_from(["\ud800", "notes", 10**5000])),
        max_size=5,
    ),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.lists(st.text(max_size=3), min_size=65, max_size=70),
)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[Any, Any]:
    reads = TOOLS.reads()  # the write tools would change the store the fuzzing reads
    tool = draw(st.one_of(st.sampled_from(sorted(reads)), st.sampled_from([None, 3, ["knowledge_grep"], "nope", b"x"])))
    if not isinstance(tool, str) or tool not in reads:
        return tool, {"query": "x"}
    names = [p.name for p in TOOLS[tool].params]
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    args: Any = {name: draw(arg_values) for name in chosen}
    shape = draw(st.sampled_from(["args"] * 8 + ["unknown", "not_mapping", "none"]))
    if shape == "unknown":
        args[draw(st.one_of(st.text(max_size=8), st.integers()))] = draw(arg_values)
    elif shape == "not_mapping":
        args = draw(st.one_of(st.lists(st.integers(), max_size=2), st.text(max_size=5), st.integers()))
    elif shape == "none":
        args = None
    return tool, args


_arg_store: list[knowtk.Store] = []


def arg_store() -> knowtk.Store:
    if not _arg_store:
        tmp = Path(tempfile.mkdtemp(prefix="knowtk-fuzz-"))
        root, _ = make_store(tmp)
        _arg_store.append(knowtk.open_store(root))
    return _arg_store[0]


@fuzz_settings(ARG_EXAMPLES)
@given(call=tool_calls())
def test_hostile_arguments_raise_only_knowtk_errors(call: tuple[Any, Any]) -> None:
    check_call(call)


def check_call(call: tuple[Any, Any]) -> None:
    tool, args = call
    store = arg_store()
    try:
        with time_limit():
            out = store.call(tool, args)
    except knowtk.InvalidArgument as exc:
        assert isinstance(exc.argument, str) and exc.argument
        str(exc)  # the message itself never fails (no huge int turned into text, no bad repr)
    except knowtk.KnowtkError:
        pass
    else:
        assert isinstance(out, dict)


@pytest.fixture(scope="module", autouse=True)
def _close_arg_store() -> Iterator[None]:
    yield
    for store in _arg_store:
        store.close()
    _arg_store.clear()


# -- a campaign, for the figures in docs/reliability.md ------------------------------------------


def campaign(n: int) -> dict[str, dict[str, int]]:  # pragma: no cover - run by hand
    """n file cases and 5n argument cases (the same seeded cases as the tests), counted, never stopping."""
    figures: dict[str, dict[str, int]] = {}

    def count(key: str, check: Any, case: Any) -> None:
        tally = figures.setdefault(key, {"cases": 0, "crashes": 0, "hangs": 0, "wrong answers": 0})
        tally["cases"] += 1
        try:
            check(case)
        except CallHung:
            tally["hangs"] += 1
        except AssertionError:
            tally["wrong answers"] += 1
        except Exception as exc:
            tally["crashes"] += 1
            tally[type(exc).__name__] = tally.get(type(exc).__name__, 0) + 1

    given(files=hostile_files())(fuzz_settings(n)(lambda files: count("files", check_files, files)))()
    given(call=tool_calls())(fuzz_settings(5 * n)(lambda call: count("arguments", check_call, call)))()
    return figures


if __name__ == "__main__":  # pragma: no cover
    print(campaign(int(sys.argv[1]) if len(sys.argv) > 1 else FILE_EXAMPLES))
