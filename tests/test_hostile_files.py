"""Hostile files and folders: only regular files inside the store are read, each problem is that path's issue."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.index.fts import FtsProjection
from knowtk.model.records import FileProblem, read_regular
from knowtk.query.citations import LARGE_BODY_BYTES
from tests.helpers import StoreBuilder, required_in_ci

GOOD = "---\nid: good\nkind: page\ntitle: Good vector index\n---\nvector index body\n"
SECRET = "---\nid: secret\nkind: page\ntitle: Secret vector index\n---\nvector index secret\n"
POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX file types")


def answer(root: Path, tool: str = "knowledge_grep") -> tuple[dict[str, Any], dict[str, str]]:
    """A tool's answer on the store, and {path: code} of its coverage issues."""
    args = {"query": "vector index"} if tool in ("knowledge_grep", "knowl_query") else {}
    out = knowtk.open_store(root).call(tool, args)
    return out, {i["path"]: i["code"] for i in out["coverage"]["issues"]}


def ids(out: dict[str, Any]) -> list[str]:
    return sorted(h["id"] for h in out.get("hits", out.get("rows", out.get("results", []))))


@pytest.fixture
def store(builder: StoreBuilder) -> StoreBuilder:
    builder.raw("good.md", GOOD)
    builder.raw("notes/also.md", GOOD.replace("good", "also"))
    return builder


@POSIX
def test_fifo_named_md_is_reported_never_opened(store: StoreBuilder) -> None:
    os.mkfifo(store.root / "notes" / "pipe.md")  # opening it for reading would wait for a writer forever
    for tool in ("knowledge_grep", "knowledge_records", "knowledge_timeline", "knowl_query"):
        out, issues = answer(store.root, tool)
        assert issues == {"notes/pipe.md": "not_regular_file"}
        assert ids(out) == ([] if tool == "knowledge_timeline" else ["also", "good"])


@POSIX
def test_socket_named_md_is_reported(store: StoreBuilder) -> None:
    path = store.root / "notes" / "sock.md"
    if len(os.fsencode(path)) > 100:
        pytest.skip("the temporary path is too long for a socket")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        _, issues = answer(store.root)
    assert issues == {"notes/sock.md": "not_regular_file"}


@POSIX
def test_device_named_md_is_reported_never_read(store: StoreBuilder) -> None:
    required_in_ci(None if os.geteuid() == 0 else "creating a device node needs root")
    os.mknod(store.root / "zero.md", 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: endless bytes
    out, issues = answer(store.root)
    assert issues == {"zero.md": "not_regular_file"}
    assert ids(out) == ["also", "good"]


def test_read_regular_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    assert read_regular(str(tmp_path / "missing.md"), 10) is None
    folder = read_regular(str(tmp_path), 10)
    assert isinstance(folder, FileProblem) and folder.code == "not_regular_file"
    (tmp_path / "f.md").write_bytes(b"x" * 11)
    too_large = read_regular(str(tmp_path / "f.md"), 10)
    assert isinstance(too_large, FileProblem) and too_large.code == "file_too_large"
    assert read_regular(str(tmp_path / "f.md"), 11) == b"x" * 11
    if os.name == "posix":
        os.symlink(tmp_path / "f.md", tmp_path / "link.md")
        link = read_regular(str(tmp_path / "link.md"), 100)
        assert isinstance(link, FileProblem) and link.code == "symlink_skipped"
        os.mkfifo(tmp_path / "pipe.md")
        fifo = read_regular(str(tmp_path / "pipe.md"), 100)
        assert isinstance(fifo, FileProblem) and fifo.code == "not_regular_file"


@POSIX
def test_byte_limit_is_enforced_on_the_read(store: StoreBuilder) -> None:
    # a device reports size 0 to stat and never ends: only a bounded read stops it
    zero = read_regular("/dev/zero", 1000)
    assert isinstance(zero, FileProblem) and zero.code == "not_regular_file"
    store.raw("big.md", GOOD + "x" * 5000)
    out = knowtk.open_store(store.root, max_file_bytes=1000).call("knowledge_grep", {"query": "vector"})
    assert {i["path"]: i["code"] for i in out["coverage"]["issues"]} == {"big.md": "file_too_large"}


@POSIX
def test_symlinks_that_leave_the_store_are_reported_not_followed(store: StoreBuilder, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "secret.md").write_text(SECRET)
    (outside / "folder" / "secret2.md").write_text(SECRET.replace("secret", "secret2"))
    os.symlink(outside / "secret.md", store.root / "notes" / "secret.md")
    os.symlink(outside / "folder", store.root / "linked")
    os.symlink("/dev/zero", store.root / "zero.md")
    out, issues = answer(store.root)
    assert issues == {"notes/secret.md": "symlink_outside", "linked/": "symlink_outside", "zero.md": "symlink_outside"}
    assert ids(out) == ["also", "good"]
    assert knowtk.open_store(store.root).call("knowledge_lookup", {"query": "secret"})["status"] == "missing"
    scoped = knowtk.open_store(store.root).call("knowledge_records", {"scope": "linked"})
    assert [i["code"] for i in scoped["coverage"]["issues"]] == ["symlink_outside"]


@POSIX
def test_dangling_symlinks_and_loops_are_reported(store: StoreBuilder) -> None:
    os.symlink("nowhere.md", store.root / "dangling.md")
    os.symlink("loop.md", store.root / "loop.md")
    os.symlink(".", store.root / "notes" / "self")  # a folder loop inside the store: never walked twice
    out, issues = answer(store.root)
    assert issues == {"dangling.md": "symlink_broken", "loop.md": "symlink_broken"}
    assert ids(out) == ["also", "good"]


@POSIX
def test_symlinks_inside_the_store_are_skipped_silently(store: StoreBuilder) -> None:
    os.symlink("../good.md", store.root / "notes" / "alias.md")
    os.symlink("notes", store.root / "notes-again")
    out, issues = answer(store.root)
    assert issues == {}  # the targets are read at their own paths: no second copy, no duplicate id
    assert ids(out) == ["also", "good"]


@POSIX
@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses names that are not UTF-8")
def test_names_that_are_not_utf8(store: StoreBuilder) -> None:
    notes = os.fsencode(store.root / "notes")
    with open(os.path.join(notes, b"bad\xff.md"), "wb") as f:
        f.write(SECRET.encode())
    os.mkdir(os.path.join(notes, b"dir\xfe"))
    with open(os.path.join(notes, b"dir\xfe", b"x.md"), "wb") as f:
        f.write(SECRET.encode())
    out, issues = answer(store.root)
    assert issues == {"notes/bad\\xff.md": "name_invalid", "notes/dir\\xfe/": "name_invalid"}
    assert ids(out) == ["also", "good"]
    json.dumps(out, ensure_ascii=False).encode("utf-8")  # every path in the answer is text


def test_names_with_newlines_are_records(store: StoreBuilder) -> None:
    try:
        store.raw("notes/two\nlines.md", SECRET)
    except OSError:
        pytest.skip("the file system refuses a newline in a name")
    out, issues = answer(store.root)
    assert issues == {}
    assert ids(out) == ["also", "good", "secret"]
    assert [h["path"] for h in out["hits"] if h["id"] == "secret"] == ["notes/two\nlines.md"]


@POSIX
def test_paths_longer_than_the_system_allows(store: StoreBuilder) -> None:
    folder = os.open(store.root / "notes", os.O_RDONLY)
    depth = 0
    try:  # build it relative to open folders: the whole path is longer than any call accepts
        while depth < 25:
            os.mkdir("d" * 200, dir_fd=folder)
            inner = os.open("d" * 200, os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder, depth = inner, depth + 1
        fd = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=folder)
        os.write(fd, SECRET.encode())
        os.close(fd)
    finally:
        os.close(folder)
    out, issues = answer(store.root)
    assert list(issues.values()) == ["path_too_long"]
    assert ids(out) == ["also", "good"]
    shutil.rmtree(store.root / "notes" / ("d" * 200), ignore_errors=True)


@POSIX
def test_private_folder_costs_only_that_folder(tmp_path: Path) -> None:
    """A folder the user cannot list is that folder's coverage issue, not a refusal of the whole store.

    Root reads every folder whatever its mode, so as root the query runs in a process without
    the capabilities that bypass permissions (``setpriv``): the same check an ordinary user meets.
    """
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    root = base / "store"
    (root / "private").mkdir(parents=True)
    (root / "good.md").write_text(GOOD)
    (root / "private" / "hidden.md").write_text(SECRET)
    os.chmod(root / "private", 0)
    script = (
        "import json, sys, knowtk\n"
        "out = knowtk.open_store(sys.argv[1], state_dir=sys.argv[2]).call('knowledge_grep', {'query': 'vector'})\n"
        "print(json.dumps([sorted(h['id'] for h in out['hits']), out['coverage']['issues']]))\n"
    )
    command = [sys.executable, "-c", script, str(root), str(base / "state")]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a folder unreadable")
        command = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--", *command]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    finally:
        os.chmod(root / "private", 0o755)
    assert done.returncode == 0, done.stderr
    hits, issues = json.loads(done.stdout)
    assert hits == ["good"]
    assert [(i["path"], i["code"]) for i in issues] == [("private/", "folder_unreadable")]


def test_a_file_that_becomes_fine_again_is_read(store: StoreBuilder) -> None:
    if os.name != "posix":
        pytest.skip("FIFO")
    os.mkfifo(store.root / "later.md")
    s = knowtk.open_store(store.root)
    assert [i["code"] for i in s.call("knowledge_records", {})["coverage"]["issues"]] == ["not_regular_file"]
    os.unlink(store.root / "later.md")
    store.raw("later.md", SECRET)
    out = s.call("knowledge_records", {})
    assert out["coverage"]["issues"] == [] and ids(out) == ["also", "good", "secret"]


# -- evidence -----------------------------------------------------------------------------------


def evidence_of(builder: StoreBuilder, locators: list[dict[str, Any]], **kwargs: Any) -> list[tuple[bool, Any]]:
    builder.page("ev", "Evidence", evidence=locators)
    out = builder.open(**kwargs).call("knowledge_record", {"id": "ev"})
    return [(e["verified"], e["reason"]) for e in out["record"]["evidence"]]


def test_evidence_hardened(builder: StoreBuilder) -> None:
    builder.raw("notes/source.md", "line one\nFTS5 wins\n")
    locators = [
        {"path": "notes/source.md", "quote": "FTS5 wins"},
        {"path": "notes/sou\0rce.md", "quote": "FTS5 wins"},
        {"path": ".knowtk/state.sqlite", "quote": "SQLite"},
        {"path": "notes/../.knowtk/state.sqlite", "quote": "SQLite"},
        {"path": "notes", "quote": "x"},
    ]
    got = evidence_of(builder, locators)
    assert got == [
        (True, None),
        (False, "path_invalid"),
        (False, "state_file"),
        (False, "state_file"),
        (False, "not_regular_file"),
    ]


@POSIX
def test_evidence_fifo_and_device_are_unverified(builder: StoreBuilder) -> None:
    os.makedirs(builder.root / "notes")
    os.mkfifo(builder.root / "notes" / "pipe")
    os.symlink("/dev/zero", builder.root / "notes" / "zero")
    got = evidence_of(builder, [{"path": "notes/pipe", "quote": "x"}, {"path": "notes/zero", "quote": "x"}])
    assert got == [(False, "not_regular_file"), (False, "outside_store")]


def test_evidence_size_cap(builder: StoreBuilder) -> None:
    builder.raw("notes/huge.txt", "FTS5 wins\n" + "x" * 2000)
    store = builder
    store.page("ev", "Evidence", evidence=[{"path": "notes/huge.txt", "quote": "FTS5 wins"}])
    s = store.open()
    s.verifier.max_bytes = 1000
    ev = s.call("knowledge_record", {"id": "ev"})["record"]["evidence"]
    assert [(e["verified"], e["reason"], e["sha256"]) for e in ev] == [(False, "file_too_large", None)]


# -- large bodies -------------------------------------------------------------------------------


def test_large_body_is_neither_highlighted_nor_read_whole(builder: StoreBuilder) -> None:
    """A body over 64 KiB gets the opening excerpt; grep never runs highlight() over it nor reads it per query."""
    body = "opening words here\n" + "vector index storage plan\n" * 40_000  # about 1 MB, 80,000 matches
    builder.page("huge", "Huge note", body)
    builder.page("small", "Small vector note", "a vector index, briefly")
    s = builder.open()
    first = s.call("knowledge_grep", {"query": "vector index", "mode": "any"})
    conn = s.engine.state.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        again = s.call("knowledge_grep", {"query": "vector index", "mode": "any"})
    finally:
        conn.set_trace_callback(None)
    assert again["hits"] == first["hits"]
    hit = next(h for h in again["hits"] if h["id"] == "huge")
    assert hit["matches"] == ["body"]
    assert hit["snippet"]["matchLocated"] is False and hit["snippet"]["text"].startswith("opening words here")
    assert hit["citation"]["lineStart"] == 6
    small = next(h for h in again["hits"] if h["id"] == "small")
    assert small["matches"] == ["title", "body"] and small["snippet"]["matchLocated"] is True
    proj: FtsProjection = s.engine.keyword(s.snapshot()).main
    huge_rowid = proj.ids["huge"]
    for sql in statements:  # no statement of the second query reads the large body
        reads_body = "highlight(" in sql or re.search(r"\bbody\b|\bc2\b", sql.split("WHERE")[0])
        rowids = {int(n) for group in re.findall(r"IN \(([\d, ]+)\)", sql) for n in group.split(",")}
        assert not (reads_body and huge_rowid in rowids and "MATCH 'body :" not in sql), sql
    assert len(body.encode()) > LARGE_BODY_BYTES


def test_large_body_title_match_still_located(builder: StoreBuilder) -> None:
    builder.page("huge", "Vector index handbook", "nothing to see\n" + "filler words only\n" * 5000, aliases=["VI"])
    hit = builder.open().call("knowledge_grep", {"query": "vector"})["hits"][0]
    assert hit["matches"] == ["title"]
    assert hit["snippet"]["field"] == "title" and hit["snippet"]["text"] == "Vector index handbook"
