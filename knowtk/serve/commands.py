"""``knowtk serve``: the subcommand, added to the command line as a plug-in (``knowtk.cli``).

knowtk --store notes serve [--idle-timeout SECONDS]    # in the foreground, until idle or stopped
knowtk --store notes serve --status                     # is one running for this store? (exit 1: no)
knowtk --store notes serve --stop
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

from knowtk.errors import InvalidArgument
from knowtk.serve.client import exchange, fingerprint, key, resolve, socket_path
from knowtk.serve.server import DEFAULT_IDLE_TIMEOUT, Server

__all__ = ["add_serve_options", "knowtk_commands", "run_serve"]

STOP_WAIT = 10.0  # seconds --stop waits for the server to remove its socket


def add_serve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"exit after this long without a request; 0: never. Default: {DEFAULT_IDLE_TIMEOUT:g}.",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--status", action="store_true", help="say whether a server runs for this store (exit 1: none)")
    what.add_argument("--stop", action="store_true", help="stop the server of this store, if one runs")


def run_serve(options: argparse.Namespace) -> int:
    """Serve in the foreground, or ask the running server for its status or to stop."""
    if getattr(options, "at", None) is not None:  # the server holds the present store; a command may ask the past
        raise InvalidArgument("--at", "knowtk serve holds the store as it is", allowed="--at on each command")
    if not (options.status or options.stop):
        return Server(
            options.store, state_dir=options.state_dir, profile=options.profile, idle_timeout=options.idle_timeout
        ).serve()
    root, state = resolve(options.store, options.state_dir, cwd=os.getcwd())
    path = socket_path(key(root, state, options.profile, code=fingerprint()))
    try:
        answer = exchange(path, {"op": "stop" if options.stop else "status"})
    except (OSError, ValueError):
        print(json.dumps({"running": False, "socket": path}) if options.json else f"no server for this store ({path})")
        return 0 if options.stop else 1
    if options.stop:
        deadline = time.monotonic() + STOP_WAIT
        while os.path.exists(path) and time.monotonic() < deadline:  # it finishes its request first
            time.sleep(0.05)
        print(
            json.dumps({"stopped": True, "pid": answer.get("pid")})
            if options.json
            else f"stopped (pid {answer.get('pid')})"
        )
        return 0
    print(json.dumps({"running": True, **answer}, indent=2) if options.json else _status_text(answer))
    return 0


def _status_text(s: dict[str, Any]) -> str:
    idle = "never" if not s["idleTimeout"] else f"{s['idleTimeout']:g} s"
    return "\n".join(
        [
            f"serving {s['store']} (pid {s['pid']}, up {s['uptime']} s)",
            f"  {s['answered']} answer(s), {s['refused']} command line(s) left to the CLI",
            f"  state {s['stateDir']}" + (f", profile {s['profile']}" if s.get("profile") else ""),
            f"  socket {s['socket']}, idle timeout {idle}",
        ]
    )


def knowtk_commands(register: Callable[..., None]) -> None:
    register(
        "serve",
        "answer this store's read-only queries from one open store, for the CLI (docs/server.md)",
        run_serve,
        setup=add_serve_options,
        flags={"idle_timeout": "--idle-timeout"},
    )
