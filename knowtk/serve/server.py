"""The server's side of ``knowtk serve``: one open Store behind a unix socket, one request at a time.

A request is one line of JSON, and so is each reply: ``{"accepted": true}`` (or a refusal, with its
``reason``) as soon as the server takes the request, then the answer: ``{"code", "stdout", "stderr"}``,
exactly what the CLI would print, or ``{"reason"}`` when the CLI must run the command itself. Requests
are served one after the other (a query in the open store is one Store call, reconciled with the
files at query time); nothing of one request (its folder, its output) outlives it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, TextIO

from knowtk.cli import serve_request
from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.serve.client import PROTOCOL, fingerprint, key, resolve, safe_dir, socket_path
from knowtk.store import Store, open_store

__all__ = ["DEFAULT_IDLE_TIMEOUT", "Server"]

DEFAULT_IDLE_TIMEOUT = 900.0  # seconds without a request before the server exits
POLL = 0.25  # seconds between looks at a stop request or the idle deadline while waiting
READ_TIMEOUT = 5.0  # seconds a client has to send its request once connected
MAX_REQUEST = 1 << 20


class Server:
    """``knowtk serve`` for one store, state folder and profile, as the CLI would open them from ``cwd``."""

    def __init__(
        self,
        store: str,
        *,
        state_dir: str | None = None,
        profile: str | None = None,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        log: TextIO | None = None,
    ) -> None:
        if idle_timeout < 0:
            raise InvalidArgument("idle_timeout", "must be 0 (never) or more seconds", value=idle_timeout)
        self.root, self.state = resolve(store, state_dir, cwd=os.getcwd())
        self.profile = profile
        self.code = fingerprint()
        self.path = socket_path(key(self.root, self.state, profile, code=self.code))
        self.idle_timeout = idle_timeout
        self.log = log if log is not None else sys.stderr
        self.answered = 0  # queries answered here
        self.refused = 0  # command lines sent back to the CLI (not a forwarded query, a refusal to report)
        self.started = time.time()
        self.stopping = False
        self.store: Store | None = None

    # -- life ---------------------------------------------------------------------------------------
    def serve(self) -> int:
        """Open the store, listen, answer until idle, stopped (``--stop``, SIGTERM, Ctrl-C); remove the socket."""
        folder = os.path.dirname(self.path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        unsafe = safe_dir(folder)
        if unsafe is not None:
            raise KnowtkError(f"refusing to serve: {unsafe}")
        lock = os.open(self.path[: -len(".sock")] + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise KnowtkError(f"a knowtk server already serves this store ({self.path})") from None
            self.store = open_store(self.root, state_dir=self.state, profile=self.profile)
            self.store.snapshot()  # the first answer is as fast as the next
            sock = self._listen()
            try:
                self._say(f"serving {self.root} (state {self.state}) on {self.path}")
                self._loop(sock)
            finally:
                sock.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
        finally:
            if self.store is not None:
                self.store.close()
            os.close(lock)  # the lock file stays: removing it could let two servers start at once
        self._say(f"stopped after {self.answered} answer(s)")
        return 0

    def _listen(self) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a stale socket (a killed server): no server holds the lock
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(self.path)
        os.chmod(self.path, 0o600)
        sock.listen(16)
        sock.settimeout(POLL)
        return sock

    def _loop(self, sock: socket.socket) -> None:
        previous = _on_terminate(self._stop)
        last = time.monotonic()
        try:
            while not self.stopping and (not self.idle_timeout or time.monotonic() - last < self.idle_timeout):
                try:
                    conn, _ = sock.accept()
                except TimeoutError:
                    continue
                with conn:
                    self._handle(conn)
                last = time.monotonic()
        except KeyboardInterrupt:
            pass
        finally:
            _on_terminate(previous)

    def _stop(self, *_: Any) -> None:
        self.stopping = True

    def _say(self, text: str) -> None:
        print(f"knowtk serve: {text}", file=self.log, flush=True)

    # -- one request --------------------------------------------------------------------------------
    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(READ_TIMEOUT)
            request = _read_request(conn)
            if request is None:  # connected and closed: a probe
                return
            conn.settimeout(None)
            for reply in self._replies(request):
                conn.sendall(json.dumps(reply).encode() + b"\n")
        except (OSError, ValueError) as exc:  # a client gone, slow or speaking nonsense: the next one
            self._say(f"request dropped: {exc}")

    def _replies(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        if op == "status":
            yield {"accepted": True}
            yield self.status()
        elif op == "stop":
            self.stopping = True
            yield {"accepted": True}
            yield {"stopping": True, "pid": os.getpid()}
        elif op != "run" or request.get("protocol") != PROTOCOL or request.get("code") != self.code:
            yield {"accepted": False, "reason": "this server runs another version of knowtk"}
        else:
            yield {"accepted": True}
            yield self.run(request.get("argv"), cwd=request.get("cwd"))

    def run(self, argv: Any, *, cwd: Any) -> dict[str, Any]:
        """The CLI's answer to ``argv`` run in ``cwd`` (``{"code", "stdout", "stderr"}``), else ``{"reason"}``."""
        if not isinstance(argv, list) or not all(isinstance(x, str) for x in argv) or not isinstance(cwd, str):
            return {"reason": "a request is a list of arguments and a folder"}
        assert self.store is not None
        try:
            answer = serve_request(argv, cwd=cwd, store=self.store, target=(self.root, self.state, self.profile))
        except Exception as exc:  # a fault here is the server's; the CLI answers for itself
            self._say(f"{' '.join(argv)}: {type(exc).__name__}: {exc}")
            return {"reason": f"the server failed: {type(exc).__name__}"}
        if answer is None:
            self.refused += 1
            return {"reason": "not a query this server answers"}
        self.answered += 1
        code, out, err = answer
        return {"code": code, "stdout": out, "stderr": err}

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "store": self.root,
            "stateDir": self.state,
            "profile": self.profile,
            "socket": self.path,
            "answered": self.answered,
            "refused": self.refused,
            "idleTimeout": self.idle_timeout,
            "uptime": round(time.time() - self.started, 1),
        }


def _read_request(conn: socket.socket) -> dict[str, Any] | None:
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST:
            raise ValueError("request too long")
    if not data:
        return None
    request = json.loads(data.partition(b"\n")[0])
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    return request


def _on_terminate(handler: Any) -> Any:
    """Install ``handler`` for SIGTERM (in the main thread only); the one it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, handler if handler is not None else signal.SIG_DFL)
