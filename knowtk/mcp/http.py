"""``knowtk mcp --http HOST:PORT``: one warm store shared by several clients, on the SDK's Streamable HTTP transport.

    knowtk mcp --store PATH --http 127.0.0.1:8765 [--token-file FILE] [--allow-host NAME ...]

The MCP server of ``knowtk.mcp.server`` is served at ``/mcp`` by the official SDK's Streamable HTTP
transport (stateful sessions), run by uvicorn. In front of it, ``Guard`` answers every request before
the SDK or the store sees it:

- ``Host`` must be one of the bind's names (``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT`` on
  loopback; the bound address and each ``--allow-host`` otherwise): 421 when it is not, against DNS
  rebinding. An ``Origin``, when sent, must be ``http://`` or ``https://`` one of those hosts: 403.
- With a token (``--token-file`` or ``KNOWTK_MCP_TOKEN``), every request must carry
  ``Authorization: Bearer TOKEN``, on loopback too: 401 otherwise (compared in constant time). A bind
  other than loopback refuses to start without one. There is no OAuth: the 401 names no authorization
  server, so clients do not start OAuth discovery.

Calls from different clients run at once in worker threads (``CONCURRENT_CALLS``); a ``Store`` answers
each as a single caller would.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowtk.errors import InvalidArgument

# ASGI's types, spelled here so that the command line parses without the SDK (and its starlette) installed
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["TOKEN_ENV", "Bind", "Guard", "http_app", "parse_bind", "read_token", "refuse_open_bind", "serve_http"]

TOKEN_ENV = "KNOWTK_MCP_TOKEN"
PATH = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class Bind:
    host: str  # as uvicorn binds it: 127.0.0.1, ::1, 0.0.0.0, a name
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def hosts(self, extra: Sequence[str] = ()) -> list[str]:
        """The ``Host`` header values a request to this bind may carry."""
        names = list(LOOPBACK_NAMES)  # a client on this machine; a rebinding page's Host is its own domain
        if not self.loopback:
            names.append(f"[{self.host}]" if ":" in self.host else self.host)
        names += list(extra)
        return [n if _has_port(n) else f"{n}:{self.port}" for n in names]


def _has_port(name: str) -> bool:
    return name.rsplit("]", 1)[-1].count(":") == 1 if name.startswith("[") else name.count(":") == 1


def parse_bind(value: str) -> Bind:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``PORT`` alone (on 127.0.0.1)."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") if host.startswith("[") else host
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535 or (host and ":" in host and not value.startswith("[")):
        raise InvalidArgument("http", f"{value!r} is not an address", allowed="HOST:PORT, [IPv6]:PORT or PORT")
    return Bind(host or "127.0.0.1", number)


def read_token(token_file: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The bearer token: the first line of ``token_file``, else ``KNOWTK_MCP_TOKEN``; None when neither is set."""
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InvalidArgument("token_file", f"cannot be read ({exc.strerror})", allowed="a readable file") from None
    else:
        token = env.get(TOKEN_ENV, "").strip()
        if not token:
            return None
    if len(token) < 16 or any(c.isspace() for c in token):
        raise InvalidArgument("token_file" if token_file else TOKEN_ENV, "is not a usable token",
                              allowed="16 or more characters, no spaces")  # fmt: skip
    return token


async def _refuse(send: Send, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = text.encode()
    start = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *headers]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware: Host (421), Origin (403) and bearer token (401) checked before anything else runs."""

    def __init__(self, app: ASGIApp, *, hosts: Sequence[str], token: str | None) -> None:
        self.app = app
        self.hosts = {h.lower() for h in hosts}
        self.origins = {f"{scheme}://{h}" for h in self.hosts for scheme in ("http", "https")}
        self.token = None if token is None else f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.lower(), value)
        host = headers.get(b"host", b"").decode("latin-1").lower()
        origin = headers.get(b"origin")
        if host not in self.hosts:
            await _refuse(send, 421, "knowtk: unknown Host header (allowed: the server's own names, --allow-host)")
        elif origin is not None and origin.decode("latin-1").lower() not in self.origins:
            await _refuse(send, 403, "knowtk: foreign Origin")
        elif self.token is not None and not hmac.compare_digest(headers.get(b"authorization", b""), self.token):
            await _refuse(send, 401, "knowtk: a bearer token is required", [(b"www-authenticate", b"Bearer")])
        else:
            await self.app(scope, receive, send)


def http_app(server: Any, bind: Bind, *, token: str | None, allow_hosts: Sequence[str] = ()) -> ASGIApp:
    """The ASGI app: ``Guard`` in front of the SDK's Streamable HTTP app of ``server`` at ``/mcp``."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = bind.hosts(allow_hosts)
    security = TransportSecuritySettings(  # the SDK's own check, with the same names
        allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")],
    )
    app = server.streamable_http_app(streamable_http_path=PATH, transport_security=security, host=bind.host)
    return Guard(app, hosts=hosts, token=token)


def refuse_open_bind(bind: Bind) -> None:
    raise InvalidArgument(
        "http", f"binding {bind.host} (not loopback) needs a bearer token", allowed=f"--token-file FILE or {TOKEN_ENV}"
    )


def serve_http(server: Any, bind: Bind, *, token: str | None, allow_hosts: Sequence[str] = ()) -> None:
    """Serve until interrupted; a bind other than loopback needs a token."""
    import uvicorn

    if token is None and not bind.loopback:
        refuse_open_bind(bind)
    app = http_app(server, bind, token=token, allow_hosts=allow_hosts)
    uvicorn.run(app, host=bind.host, port=bind.port, log_level="warning", lifespan="on")
