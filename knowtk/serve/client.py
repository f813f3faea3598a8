"""The CLI's side of ``knowtk serve``: which socket serves a store, and forwarding one command line to it.

This module runs before the command line is parsed and must stay cheap: it imports only the standard
library's ``os``, ``sys``, ``stat``, ``json`` and ``contextlib``, and ``socket`` and ``hashlib`` only when a
server may answer (a socket folder holds something; tests/test_serve.py pins the import set of a forwarded
``knowtk grep``).
``forward(argv)`` answers a read-only query through a running server, or returns None and the CLI runs
the command itself, as it does without a server.

The key of a server (and so its socket's name) is a hash of everything that can change an answer:
the store folder and the state folder (absolute, as the CLI makes them), the profile asked for,
``KNOWTK_SEMANTIC``, the Python interpreter, and knowtk's version and code (the size and mtime of
every ``.py`` file of the package: an upgraded or edited knowtk never talks to an older server).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from typing import Any, NoReturn

__all__ = [
    "ENV",
    "NOT_SERVED",
    "PROTOCOL",
    "exchange",
    "fingerprint",
    "forward",
    "key",
    "main",
    "parse_argv",
    "safe_dir",
    "socket_dir",
    "socket_path",
]

PROTOCOL = 1
ENV = "KNOWTK_SERVE"  # 0/off: never forward; require: fail instead of running locally (tests, bench)
DIR_ENV = "KNOWTK_SERVE_DIR"  # where the sockets are (default: $XDG_RUNTIME_DIR/knowtk, else /tmp/knowtk-UID)
ANSWER_ENV = ("KNOWTK_SEMANTIC",)  # the environment an answer depends on: part of the key
ACCEPT_TIMEOUT = 5.0  # seconds to wait for the server to take the request (it takes each at once)
#: The server's reason for a command it never answers (no read-only query): run here under any ``ENV``.
NOT_SERVED = "not a query a server answers"
_OFF = frozenset({"0", "false", "no", "off"})
_VALUED = {"--store": 1, "--state-dir": 2, "--profile": 3}  # the options that choose the server
_TOP_FLAGS = frozenset({"--json"})  # the only other options the CLI takes before its subcommand
_STATE_DIR = ".knowtk"  # knowtk.state.STATE_DIR, not imported: the state layer is what this module avoids


def parse_argv(argv: list[str]) -> tuple[str, str, str | None, str | None] | None:
    """(command word, store, state dir, profile) as given on the command line; None when unsure.

    A quick reading, not argparse: it only chooses which server to ask. The server parses the command
    line with the CLI's own parser and refuses it unless it names that server's store, state and profile.
    """
    found: list[str | None] = [None, ".", None, None]
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg in ("-h", "--help", "--version", "--"):
            return None
        if name in _VALUED:
            if not eq:
                if i + 1 >= len(argv):
                    return None
                i, value = i + 1, argv[i + 1]
            found[_VALUED[name]] = value
        elif arg.startswith("--") and any(o.startswith(name) for o in _VALUED):
            return None  # an abbreviation (--sto): argparse's reading, not ours
        elif arg.startswith("-") and arg != "-":
            if found[0] is None and arg not in _TOP_FLAGS:
                return None
        elif found[0] is None:
            found[0] = arg
        i += 1
    word, store, state, profile = found
    if word is None or store is None:
        return None
    return word, store, state, profile


def fingerprint() -> str:
    """knowtk's version and code: a hash of the path, size and mtime of every ``.py`` file of the package."""
    import hashlib

    from knowtk import __version__

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256(f"{__version__}\0{root}\0{sys.executable}\0{sys.version}\n".encode())
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.name != "__pycache__":
                    stack.append(e.path)
            elif e.name.endswith(".py"):
                st = e.stat()
                h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def resolve(store: str, state: str | None, *, cwd: str) -> tuple[str, str]:
    """The store and state folders as the CLI opens them (``os.path.abspath``, against ``cwd``)."""
    root = os.path.abspath(os.path.join(cwd, store))
    folder = os.path.abspath(os.path.join(cwd, state)) if state is not None else os.path.join(root, _STATE_DIR)
    return root, folder


def key(root: str, state: str, profile: str | None, *, code: str) -> str:
    """The server key of an absolute store and state folder, a profile and knowtk's ``fingerprint()``."""
    import hashlib

    env = [os.environ.get(name, "") for name in ANSWER_ENV]
    text = json.dumps([PROTOCOL, code, root, state, profile, env, os.getuid()])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def socket_dir() -> str:
    """The folder of this user's sockets: ``$KNOWTK_SERVE_DIR``, ``$XDG_RUNTIME_DIR/knowtk`` or ``/tmp/knowtk-UID``."""
    given = os.environ.get(DIR_ENV)
    if given:
        return os.path.abspath(given)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "knowtk")
    return f"/tmp/knowtk-{os.getuid()}"


def socket_path(server_key: str) -> str:
    return os.path.join(socket_dir(), server_key[:32] + ".sock")


def safe_dir(folder: str) -> str | None:
    """None when ``folder`` is a real folder of this user that nobody else can enter; else why not."""
    try:
        st = os.lstat(folder)
    except OSError as exc:
        return f"{folder}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a folder"
    if st.st_uid != os.getuid():
        return f"{folder} belongs to another user"
    if st.st_mode & 0o077:
        return f"{folder} is open to other users (mode {stat.S_IMODE(st.st_mode):o}; it must be 700)"
    return None


def exchange(path: str, request: dict[str, Any], *, timeout: float = ACCEPT_TIMEOUT) -> dict[str, Any]:
    """Send one request to the server at ``path``; its answer. Raises OSError or ValueError on any failure.

    The server first says whether it took the request (within ``timeout``: it takes each at once),
    then answers it, however long the query and the ones before it take.
    """
    import socket

    unsafe = safe_dir(os.path.dirname(path))
    if unsafe is not None:
        raise OSError(unsafe)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(json.dumps(request).encode() + b"\n")
        sock.shutdown(socket.SHUT_WR)
        with sock.makefile("rb") as stream:
            first = json.loads(stream.readline() or b"null")
            if not isinstance(first, dict) or not first.get("accepted"):
                reason = first.get("reason") if isinstance(first, dict) else None
                raise ValueError(reason or "the server did not take the request")
            sock.settimeout(None)
            answer = json.loads(stream.readline() or b"null")
    if not isinstance(answer, dict) or "reason" in answer:
        raise ValueError(answer.get("reason") if isinstance(answer, dict) else "the server closed the connection")
    return answer


def _write(answer: dict[str, Any]) -> int | None:
    """Write the server's stdout and stderr as this process would have; None when they cannot be."""
    out, err = sys.stdout, sys.stderr
    if out is None or err is None or not hasattr(out, "buffer") or not hasattr(err, "buffer"):
        return None
    try:  # encoded as this process's streams encode: the bytes of the local run
        data = str(answer["stdout"]).encode(out.encoding, out.errors or "strict")
        message = str(answer["stderr"]).encode(err.encoding, err.errors or "strict")
        code = int(answer["code"])
    except (KeyError, TypeError, ValueError, LookupError):
        return None
    try:
        out.flush()
        out.buffer.write(data)
        out.buffer.flush()
    except BrokenPipeError:  # `knowtk ... | head`, as the CLI handles it
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout again at exit
        return 0
    err.flush()
    err.buffer.write(message)
    err.buffer.flush()
    return code


def forward(argv: list[str]) -> int | None:
    """The exit code of ``argv`` answered by a running server (its output written); None: run it here."""
    mode = os.environ.get(ENV, "").strip().lower()
    parsed = parse_argv(argv) if mode not in _OFF else None
    if parsed is None:  # the server answers the read-only queries (Tool.serve) and declines the rest
        return None
    _, store, state, profile = parsed
    try:  # a folder gone, a package not on a file system, no server, a refusal: the CLI runs it here
        if not os.path.isdir(socket_dir()) or not os.listdir(socket_dir()):  # no server runs for this user:
            raise OSError(f"{socket_dir()}: no server is running")  # nothing to hash (or import hashlib for) or ask
        cwd = os.getcwd()
        root, folder = resolve(store, state, cwd=cwd)
        code = fingerprint()
        request = {"op": "run", "protocol": PROTOCOL, "code": code, "argv": argv, "cwd": cwd}
        answer = exchange(socket_path(key(root, folder, profile, code=code)), request)
    except (OSError, ValueError) as exc:
        if mode == "require" and str(exc) != NOT_SERVED:  # require is for queries: another command runs here
            print(f"knowtk: no server answered ({ENV}=require): {exc}", file=sys.stderr)
            return 1
        return None
    return _write(answer)


def main(argv: list[str] | None = None) -> int:
    """``python -m knowtk``: a running server's answer when there is one, else the CLI's own run."""
    args = sys.argv[1:] if argv is None else list(argv)
    code = forward(args)
    if code is not None:
        return code
    from knowtk import cli
    from knowtk.cli import registry

    if argv is None:  # the program: the stores a one-query command opens are closed as it leaves
        registry.ONE_QUERY_STORES = []
    code = cli.main(args)
    if argv is None and registry.ONE_QUERY_STORES:
        leave(code, registry.ONE_QUERY_STORES)
    return code


def leave(code: int, stores: list[Any]) -> NoReturn:
    """End a one-query program now: its stores closed (their state files as a normal exit leaves them), its
    output flushed, and none of its objects freed one by one (the interpreter's own exit: ~8 ms for the
    PEPs, ~40 ms at 300k records). Only a read-only query's program leaves this way: nothing runs after it."""
    for store in stores:
        with contextlib.suppress(Exception):
            store.close()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # `knowtk grep ... | head`: the reader is gone
            stream.flush()
    os._exit(code)
