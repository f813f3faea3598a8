"""The server's side of ``knowtk serve``: one open Store behind a unix socket, one query at a time.

A request is one line of JSON, and so is each reply: ``{"accepted": true}`` (or a refusal, with its
``reason``) as soon as the server takes the request, then the answer: ``{"code", "stdout", "stderr"}``,
exactly what the CLI would print, or ``{"reason"}`` when the CLI must run the command itself. Each
connection is taken at once (a thread reads and answers it); the queries run one after the other (a
query in the open store is one Store call, reconciled with the files at query time), and nothing of
one request (its folder, its output) outlives it.
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

from knowtk.cli.serving import serve_request, serves
from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.serve.client import NOT_SERVED, PROTOCOL, fingerprint, key, parse_argv, resolve, safe_dir, socket_path
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
        self.refused = 0  # queries sent back to the CLI (a usage error, another store, a refusal to report)
        self.started = time.time()
        self.stopping = False
        self.running = threading.Lock()  # one query at a time: a request's output is captured process-wide
        self.activity = threading.Lock()  # guards active and last
        self.active = 0  # connections taken and not yet answered
        self.last = time.monotonic()  # when the last one was answered (the idle timeout counts from it)
        self.store: Store | None = None

    # -- life ---------------------------------------------------------------------------------------
    def serve(self) -> int:
        """Open the store, listen, answer until idle, stopped (``--stop``, SIGTERM, Ctrl-C); remove the socket."""
        folder = os.path.dirname(self.path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        unsafe = safe_dir(folder)
        if unsafe is not None:
            raise KnowtkError(f"refusing to serve: {unsafe}")
        lock = self._lock()
        try:
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
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock_path)  # still held: a server starting now locks a new file, or finds none
            os.close(lock)
        self._say(f"stopped after {self.answered} answer(s)")
        return 0

    @property
    def lock_path(self) -> str:
        return self.path[: -len(".sock")] + ".lock"

    def _lock(self) -> int:
        """The lock file beside the socket, locked: one server per key. Raises when another holds it."""
        for _ in range(5):
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise KnowtkError(f"a knowtk server already serves this store ({self.path})") from None
            try:
                st = os.stat(self.lock_path)
            except FileNotFoundError:
                st = None
            mine = os.fstat(fd)
            if st is not None and (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
                return fd
            os.close(fd)  # a stopping server removed the file we opened: lock the one that is there now
        raise KnowtkError(f"could not lock {self.lock_path}")

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
        """Accept here, at once; each connection is read and answered on a thread of its own, and the
        queries themselves run one at a time (``self.running``): a long query never keeps a client from
        being taken, so a client's accept timeout means a server that is gone or hung, not a busy one."""
        previous = _on_terminate(self._stop)
        self.last = time.monotonic()  # idle from now, not from before the store was opened
        workers: list[threading.Thread] = []
        try:
            while not self.stopping and not self._idle():
                try:
                    conn, _ = sock.accept()
                except TimeoutError:
                    continue
                with self.activity:
                    self.active += 1
                worker = threading.Thread(target=self._handle, args=(conn,), daemon=True)
                worker.start()
                workers = [w for w in workers if w.is_alive()] + [worker]
        except KeyboardInterrupt:
            pass
        finally:
            _on_terminate(previous)
            for worker in workers:  # the requests taken are answered before the store closes
                worker.join()

    def _idle(self) -> bool:
        with self.activity:
            quiet = time.monotonic() - self.last
            return bool(self.idle_timeout) and self.active == 0 and quiet >= self.idle_timeout

    def _stop(self, *_: Any) -> None:
        self.stopping = True

    def _say(self, text: str) -> None:
        print(f"knowtk serve: {text}", file=self.log, flush=True)

    # -- one request --------------------------------------------------------------------------------
    def _handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(READ_TIMEOUT)
                request = _read_request(conn)
                if request is None:  # connected and closed: a probe
                    return
                conn.settimeout(None)
                for reply in self._replies(request):
                    conn.sendall(json.dumps(reply).encode() + b"\n")
        except (OSError, ValueError) as exc:  # a client gone, slow or speaking nonsense: the next one
            self._say(f"request dropped: {exc}")
        finally:
            with self.activity:
                self.active -= 1
                self.last = time.monotonic()

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
            with self.running:
                answer = self.run(request.get("argv"), cwd=request.get("cwd"))
            yield answer

    def run(self, argv: Any, *, cwd: Any) -> dict[str, Any]:
        """The CLI's answer to ``argv`` run in ``cwd`` (``{"code", "stdout", "stderr"}``), else ``{"reason"}``."""
        if not isinstance(argv, list) or not all(isinstance(x, str) for x in argv) or not isinstance(cwd, str):
            return {"reason": "a request is a list of arguments and a folder"}
        assert self.store is not None
        parsed = parse_argv(argv)
        if parsed is None or parsed[0] is None or not serves(parsed[0]):
            return {"reason": NOT_SERVED}  # not a query: the CLI runs it, as it runs it with no server
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
