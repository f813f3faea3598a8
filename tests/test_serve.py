"""``knowtk serve``: the CLI's read-only queries answered by a running server, byte for byte as without it.

Real processes throughout: a server subprocess on a copy of a fixture store, the CLI as subprocesses
(``python -m knowtk``), each answer compared with the same command run with ``KNOWTK_SERVE=0``.
``KNOWTK_SERVE=require`` proves an answer came from the server (the CLI fails instead of running it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from knowtk import cli
from knowtk.query import TOOLS
from knowtk.serve import client
from tests.helpers import DEMO, REPO, listening

Result = tuple[int, bytes, bytes]
# when the query ran, and when the snapshot it read was built (in that process, or by the process that
# stored the image it loaded): clock readings, which two local runs do not share either
CLOCK = re.compile(rb'"(queriedAt|scannedAt)": "[^"]*"')


@pytest.fixture
def sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private folder for the sockets (a unix socket's path is at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="kts-"))
    os.chmod(folder, 0o700)
    monkeypatch.setenv(client.DIR_ENV, str(folder))
    monkeypatch.delenv(client.ENV, raising=False)
    monkeypatch.setenv("KNOWTK_PROGRESS", "0")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def knowtk(*args: str, mode: str | None = None, cwd: Path | None = None, stdin: bytes | None = None) -> Result:
    """``python -m knowtk ARGS``: its exit code, stdout and stderr (``queriedAt`` and ``scannedAt`` blanked)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(client.ENV, None)
    if mode is not None:
        env[client.ENV] = mode
    done = subprocess.run(
        [sys.executable, "-m", "knowtk", *args], capture_output=True, env=env, cwd=cwd, input=stdin, timeout=120
    )
    return done.returncode, CLOCK.sub(rb'"\1": "-"', done.stdout), done.stderr


class Serving:
    """A ``knowtk serve`` subprocess, ready once its socket is there."""

    def __init__(self, store: Path, state: Path, *extra: str) -> None:
        self.store, self.home = store, store.parent
        self.base = ["--store", str(store), "--state-dir", str(state)]
        root, folder = client.resolve(str(store), str(state), cwd=os.getcwd())
        self.path = client.socket_path(client.key(root, folder, None, code=client.fingerprint()))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "knowtk", *self.base, "serve", *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while not listening(self.path):
            assert self.proc.poll() is None, self.proc.communicate()[1].decode()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)

    def status(self) -> dict:
        code, out, err = knowtk(*self.base, "--json", "serve", "--status")
        assert code == 0, err
        return json.loads(out)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serving]:
    """One server for the module's tests that share it (each compares with a local run made beside it)."""
    home = tmp_path_factory.mktemp("serving")
    shutil.copytree(DEMO, home / "demo")
    folder = Path(tempfile.mkdtemp(prefix="kts-"))
    os.chmod(folder, 0o700)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(client.DIR_ENV, str(folder))
        mp.delenv(client.ENV, raising=False)
        mp.setenv("KNOWTK_PROGRESS", "0")
        server = Serving(home / "demo", home / "state", "--idle-timeout", "300")
        try:
            yield server
        finally:
            server.stop()
    shutil.rmtree(folder, ignore_errors=True)


# every forwarded command (and a usage error, help, an unknown id, a bad argument), as a user types them
FORWARDED_LINES = [
    ["grep", "vector", "index"],
    ["--json", "grep", "search", "--type", "decision", "--mode", "any", "--offset", "2"],
    ["grep", "zebra", "--limit", "99"],  # InvalidArgument: exit 2, the option named
    ["lookup", "person-ada-okafor"],
    ["--json", "lookup", "Ada"],
    ["records", "--type", "decision", "--limit", "5"],
    ["record", "dec-2025-004"],
    ["record", "no-such-record"],
    ["timeline", "--limit", "4"],
    ["chronicle", "day", "2025-09-17", "--week"],
    ["chronicle", "since", "2026-01-01", "--json"],
    ["chronicle", "last-seen", "person-ada-okafor"],
    ["chronicle", "day", "2026-02-30"],  # not a date: exit 2
    ["knowl", "vector", "index"],
    ["--json", "knowl", "--id", "no-such-id"],  # exit 1: unknown id
    ["stats"],
]
LOCAL_LINES = [  # the CLI answers these itself, with a server running or not
    ["grep", "--mode", "fuzzy", "zebra"],  # argparse's usage error: the server sends it back
    ["grep", "--help"],  # not sent
    ["history"],  # not a forwarded command: not sent
]


def test_every_forwarded_command_prints_exactly_what_the_cli_prints_alone(serving: Serving) -> None:
    before = serving.status()
    runs = [(line, "0") for line in FORWARDED_LINES + LOCAL_LINES]
    runs += [(line, "require") for line in FORWARDED_LINES] + [(line, "") for line in LOCAL_LINES]
    with ThreadPoolExecutor(3) as pool:  # a few at a time: the server takes them one after the other
        got = list(pool.map(lambda r: knowtk(*serving.base, *r[0], mode=r[1]), runs))
    half = len(FORWARDED_LINES + LOCAL_LINES)
    for i, (line, _) in enumerate(runs[:half]):
        assert got[half + i] == got[i], line
    status = serving.status()  # every forwarded line was answered there (require succeeded)
    assert status["answered"] - before["answered"] == len(FORWARDED_LINES)
    assert status["refused"] - before["refused"] == 1  # the usage error


def test_a_relative_store_from_another_folder_is_the_same_server(serving: Serving, tmp_path: Path) -> None:
    before = serving.status()["answered"]
    rel = ["--store", "demo", "--state-dir", "state", "grep", "vector"]
    assert knowtk(*rel, mode="require", cwd=serving.home) == knowtk(*rel, mode="0", cwd=serving.home)
    inside = ["--state-dir", "../state", "records", "--limit", "2"]  # --store defaults to the current folder
    assert knowtk(*inside, mode="require", cwd=serving.store) == knowtk(*inside, mode="0", cwd=serving.store)
    # the `knowtk` console script's entry (pyproject: knowtk.serve.client:main, no arguments) asks the server too
    entry = "import sys; from knowtk.serve.client import main; sys.exit(main())"
    script = ["-c", entry, *serving.base, "lookup", "Ada"]
    env = {**os.environ, "PYTHONPATH": str(REPO), client.ENV: "require"}
    done = subprocess.run([sys.executable, *script], capture_output=True, env=env, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == knowtk(*serving.base, "lookup", "Ada", mode="0")
    assert serving.status()["answered"] == before + 3
    other = ["--store", str(serving.store), "--state-dir", str(tmp_path / "other-state"), "grep", "vector"]
    code, _, err = knowtk(*other, mode="require")  # another state: another server, and none runs
    assert code == 1 and b"no server answered" in err


def test_edits_adds_and_deletes_between_calls_are_seen(serving: Serving) -> None:
    grep = [*serving.base, "grep", "quokkaword"]
    assert b"0 hit(s)" in knowtk(*grep, mode="require")[1]
    note = serving.store / "notes" / "quokka.md"
    note.write_text("---\nid: note-quokka\nkind: page\ntitle: Quokka\n---\n# Quokka\n\nquokkaword once.\n")
    added = knowtk(*grep, mode="require")
    assert b"1 hit(s)" in added[1] and b"note-quokka" in added[1]
    assert added == knowtk(*grep, mode="0")
    note.write_text("---\nid: note-quokka\nkind: page\ntitle: Quokka renamed\n---\n# Q\n\nquokkaword twice.\n")
    edited = knowtk(*grep, mode="require")
    assert b"Quokka renamed" in edited[1] and edited == knowtk(*grep, mode="0")
    note.unlink()
    deleted = knowtk(*grep, mode="require")
    assert b"0 hit(s)" in deleted[1] and deleted == knowtk(*grep, mode="0")


def test_writes_are_never_forwarded(serving: Serving) -> None:
    before = serving.status()["answered"]
    record = json.loads(knowtk(*serving.base, "--json", "record", "dec-2025-004", mode="require")[1])["record"]
    write = [*serving.base, "withdraw", "dec-2025-004", "--expect", record["sha256"], "--reason", "test"]
    code, out, err = knowtk(*write, mode="require")  # require applies to queries only: a write runs here
    assert code == 0 and b"receipt rcpt-" in out, err
    assert serving.status()["answered"] == before + 1
    after = knowtk(*serving.base, "record", "dec-2025-004", mode="require")
    assert b"withdrawn" in after[1] and after == knowtk(*serving.base, "record", "dec-2025-004", mode="0")
    cli.parser()  # every subcommand made
    forwarded = {name: cmd for name, cmd in cli.COMMANDS.items() if cmd.serve}
    assert {"grep", "chronicle day", "knowl"} <= set(forwarded)
    for name, cmd in forwarded.items():  # the forwarded commands are the read-only tools' own
        assert cmd.tool in TOOLS.reads() and TOOLS[cmd.tool].serve, name
    assert not any(cmd.serve for cmd in cli.COMMANDS.values() if cmd.tool is None or TOOLS[cmd.tool].writes)


def test_two_clients_at_once_get_the_answers_each_would_get_alone(serving: Serving) -> None:
    lines = [
        (["--store", "demo", "--state-dir", "state", "grep", "vector"], serving.home),
        ([*serving.base, "--json", "records", "--limit", "7"], None),
        ([*serving.base, "chronicle", "since", "2025-01-01"], None),
        ([*serving.base, "lookup", "Ada"], None),
    ]
    alone = [knowtk(*line, mode="0", cwd=cwd) for line, cwd in lines]
    got: dict[int, Result] = {}

    def ask(i: int) -> None:
        line, cwd = lines[i % len(lines)]
        got[i] = knowtk(*line, mode="require", cwd=cwd)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(6):
        assert got[i] == alone[i % len(lines)], lines[i % len(lines)]


def test_a_killed_server_leaves_a_socket_the_cli_falls_back_from_and_the_next_server_replaces(
    sockets: Path, demo_copy: Path, tmp_path: Path
) -> None:
    first = Serving(demo_copy, tmp_path / "state", "--idle-timeout", "120")
    first.proc.kill()
    first.proc.wait()
    assert os.path.exists(first.path)  # stale: nobody accepts on it
    line = [*first.base, "grep", "vector"]
    alone = knowtk(*line, mode="0")
    assert knowtk(*line) == alone  # connection refused: run here, silently
    code, _, err = knowtk(*line, mode="require")
    assert code == 1 and b"no server answered" in err
    second = Serving(demo_copy, tmp_path / "state", "--idle-timeout", "120")
    try:
        assert knowtk(*line, mode="require") == alone
        code, _, err = knowtk(*first.base, "serve")  # one server per store
        assert code == 1 and b"already serves this store" in err
    finally:
        second.stop()
    assert not os.path.exists(second.path)


def fake_server(path: str, reply: bytes) -> threading.Thread:
    """A socket at ``path`` that answers one request with ``reply``: an older server, or a broken one."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    sock.listen(1)

    def answer() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(reply)
        sock.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    "reply",
    [
        b'{"accepted": false, "reason": "this server runs another version of knowtk"}\n',
        b'{"accepted": true}\n{"reason": "not a query this server answers"}\n',
        b"HTTP/1.1 400 Bad Request\r\n\r\n",
        b'{"accepted": true}\n',  # closed before answering (killed mid-request)
    ],
    ids=["other-version", "refused", "nonsense", "closed"],
)
def test_a_refusal_or_a_broken_answer_runs_the_command_here(sockets: Path, demo_copy: Path, reply: bytes) -> None:
    line = ["--store", str(demo_copy), "--state-dir", str(demo_copy.parent / "state"), "grep", "vector"]
    root, state = client.resolve(str(demo_copy), str(demo_copy.parent / "state"), cwd=os.getcwd())
    path = client.socket_path(client.key(root, state, None, code=client.fingerprint()))
    alone = knowtk(*line, mode="0")
    thread = fake_server(path, reply)
    assert knowtk(*line) == alone
    thread.join(timeout=30)
    os.unlink(path)


def test_another_knowtk_never_talks_to_this_server(sockets: Path, demo_copy: Path, tmp_path: Path) -> None:
    """A copy of the package with another version: its key, so its socket, differ."""
    other = tmp_path / "other"
    shutil.copytree(REPO / "knowtk", other / "knowtk", ignore=shutil.ignore_patterns("__pycache__"))
    init = other / "knowtk" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "9.'))
    env = {**os.environ, "PYTHONPATH": str(other)}
    base = ["--store", str(demo_copy), "--state-dir", str(tmp_path / "state")]
    cmd = [sys.executable, "-m", "knowtk", *base, "serve"]
    old = subprocess.Popen(cmd, env=env, cwd=other, stderr=subprocess.PIPE)  # `-m` looks in the folder first
    try:
        deadline = time.monotonic() + 60
        while not any(listening(str(p)) for p in sockets.glob("*.sock")):
            assert old.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        code, _, err = knowtk(*base, "grep", "vector", mode="require")
        assert code == 1 and b"no server answered" in err
        assert knowtk(*base, "grep", "vector") == knowtk(*base, "grep", "vector", mode="0")
    finally:
        old.terminate()
        old.wait(timeout=30)


def test_idle_timeout_stop_and_status(sockets: Path, demo_copy: Path, tmp_path: Path) -> None:
    base = ["--store", str(demo_copy), "--state-dir", str(tmp_path / "state")]
    code, _, err = knowtk(*base, "serve", "--idle-timeout", "0.5")  # nobody asks: it exits by itself
    assert code == 0 and b"knowtk serve: serving" in err and b"stopped after 0 answer(s)" in err
    assert list(sockets.iterdir()) == []  # neither its socket nor its lock file stays
    code, out, _ = knowtk(*base, "serve", "--status")
    assert code == 1 and out.startswith(b"no server for this store")
    running = Serving(demo_copy, tmp_path / "state", "--idle-timeout", "0")
    status = running.status()
    assert status["running"] and status["pid"] == running.proc.pid and status["store"] == str(demo_copy)
    code, out, _ = knowtk(*running.base, "serve", "--stop")
    assert code == 0 and out.startswith(b"stopped (pid")
    assert running.proc.wait(timeout=30) == 0 and not os.path.exists(running.path)
    assert knowtk(*running.base, "serve", "--stop")[0] == 0  # none running: nothing to do
    code, _, err = knowtk(*running.base, "serve", "--idle-timeout", "-1")
    assert code == 2 and b"--idle-timeout" in err


def test_a_socket_folder_others_can_enter_is_refused(sockets: Path, demo_copy: Path, tmp_path: Path) -> None:
    os.chmod(sockets, 0o755)
    base = ["--store", str(demo_copy), "--state-dir", str(tmp_path / "state")]
    code, _, err = knowtk(*base, "serve")
    assert code == 1 and b"refusing to serve" in err and b"700" in err
    assert client.safe_dir(str(sockets)) is not None
    os.chmod(sockets, 0o700)
    assert client.safe_dir(str(sockets)) is None


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["grep", "x"], ("grep", ".", None, None)),
        (["--store", "s", "--json", "grep", "--state-dir=t", "x"], ("grep", "s", "t", None)),
        (
            ["chronicle", "day", "2026-01-01", "--profile", "adr", "--store", "a", "--store", "b"],
            ("chronicle", "b", None, "adr"),
        ),
        (["--sto", "s", "grep", "x"], None),  # an abbreviation: argparse's to read
        (["--store"], None),
        (["grep", "--help"], None),
        (["--tag", "a", "grep", "x"], None),  # not an option before the subcommand
        (["create", "x"], ("create", ".", None, None)),  # read; a server declines it (Command.serve is false)
    ],
)
def test_the_client_reads_only_what_chooses_the_server(argv: list[str], parsed: tuple | None) -> None:
    assert client.parse_argv(argv) == parsed


# the modules a bare `import knowtk` loads are its own; a forwarded grep adds the client, nothing else
CHILD = """
import sys, json, runpy, atexit
out = sys.argv.pop(1)
sys.argv[0] = "knowtk"
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
if sys.argv[1:] == ["--bare"]:
    import knowtk
else:
    runpy.run_module("knowtk", run_name="__main__")
"""


def test_a_forwarded_grep_imports_the_client_and_nothing_of_the_cli(serving: Serving, tmp_path: Path) -> None:
    def modules(*args: str) -> set[str]:
        out = tmp_path / "modules.json"
        env = {**os.environ, "PYTHONPATH": str(REPO), client.ENV: "require"}
        done = subprocess.run([sys.executable, "-c", CHILD, str(out), *args], env=env, capture_output=True)
        assert done.returncode == 0, done.stderr
        return set(json.loads(out.read_text()))

    bare = modules("--bare")
    forwarded = modules(*serving.base, "grep", "vector")
    assert {m for m in forwarded - bare if m.startswith("knowtk")} == {"knowtk.serve", "knowtk.serve.client"}
    assert "knowtk.cli" not in forwarded and "argparse" not in forwarded - bare
    assert not {m for m in forwarded if m.split(".")[0] in {"numpy", "pandas", "subprocess", "multiprocessing"}}
    if "knowtk.store" not in bare:  # `import knowtk` made lazy: then a forwarded grep never opens a store
        assert "knowtk.store" not in forwarded


@pytest.mark.parametrize("folder", ["never-made", "empty"])
def test_no_socket_folder_runs_locally_without_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    """No server runs for this user (no socket folder, or one a stopped server left empty): the command runs
    here, and nothing is hashed."""
    if folder == "empty":
        (tmp_path / folder).mkdir(mode=0o700)
    monkeypatch.setenv(client.DIR_ENV, str(tmp_path / folder))
    hashed: list[bool] = []
    monkeypatch.setattr(client, "fingerprint", lambda: hashed.append(True) or "x")
    monkeypatch.delenv(client.ENV, raising=False)
    assert client.forward(["--store", str(tmp_path), "grep", "vector"]) is None
    monkeypatch.setenv(client.ENV, "require")
    assert client.forward(["--store", str(tmp_path), "grep", "vector"]) == 1
    assert hashed == []
