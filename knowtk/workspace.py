"""``Workspace``: this store and the stores linked to it, for ``knowl_query`` across repos.

    ws = knowtk.Workspace(knowtk.open_store("."), linked={"platform": knowtk.open_store("../platform")})
    ws.knowl("sqlite wal checkpoint").to_frame()

A linked store takes part only while its ``knowtk.yaml`` says ``share: true``
(read at every query): a private store's records never appear, and its ids
report as not found. Every store keeps its own index and corpus statistics, so
a neighbour's records never change how this store's records rank.

A workspace may be shared by threads, and its stores used alone meanwhile: a query
holds the lock of every store it reads, taken in one global order.

``open_target(path, links=...)`` opens a store and its links by path, as the command line
and the MCP server are given them (``parse_links`` reads their ``NAME=PATH`` options).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from knowtk.engine.transactions import run_all
from knowtk.errors import InvalidArgument
from knowtk.query.args import spelled_for, validate
from knowtk.query.knowl import Member, run_knowl
from knowtk.query.tools.knowl import PARAMS as KNOWL_PARAMS
from knowtk.results import Result
from knowtk.store import Store, open_store

__all__ = ["Target", "Workspace", "open_target", "parse_links"]

TOOL = "knowl_query"


class Workspace:
    """A local store plus linked ones, keyed by store name (the ``name`` of each ``knowtk.yaml``).

    The keys of ``linked`` must be the stores' own names, so that a name in ``repos`` and a key of
    the results mean one store; they are fixed when the workspace is made.
    """

    def __init__(self, local: Store, linked: Mapping[str, Store] | None = None) -> None:
        if not isinstance(local, Store):
            raise InvalidArgument("local", f"must be a knowtk.Store, not {type(local).__name__}")
        self.local = local
        self.linked: dict[str, Store] = dict(linked or {})
        names = [local.name]
        for key, store in self.linked.items():
            if not isinstance(store, Store):
                raise InvalidArgument("linked", f"{key!r} must be a knowtk.Store, not {type(store).__name__}")
            if store.name != key:
                raise InvalidArgument(
                    "linked",
                    f"key {key!r} holds the store named {store.name!r}; key it by that name "
                    "(or set name: in its knowtk.yaml)",
                    allowed=[store.name],
                )
            if key in names:
                raise InvalidArgument("linked", f"{key!r} is already a store of this workspace", value=key)
            names.append(key)
        self._local = Member(names[0], local.engine, local.verifier, local=True)
        self._linked = [Member(k, s.engine, s.verifier, local=False) for k, s in self.linked.items()]

    @property
    def names(self) -> list[str]:
        """Every store of the workspace, this one first (private ones included)."""
        return [self._local.name, *self.linked]

    def __repr__(self) -> str:
        return f"<Workspace {self._local.name!r} linked={list(self.linked)!r}>"

    def call(self, tool: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run ``knowl_query`` with camelCase arguments; other tools are asked of ``ws.local``."""
        if tool != TOOL:
            raise InvalidArgument("tool", f"a Workspace answers {TOOL} only; ask ws.local for {tool!r}", allowed=[TOOL])
        return self._run(args, python=False).to_dict()

    def _run(self, args: Mapping[str, Any] | None, *, python: bool) -> Result:
        checked = validate(TOOL, KNOWL_PARAMS, args, python=python)
        # every store's lock, always in one global order (no deadlock between workspaces sharing stores)
        engines = [m.engine for m in (self._local, *self._linked)]
        with spelled_for(KNOWL_PARAMS, python=python):
            return Result(TOOL, run_all(engines, lambda: run_knowl(self._local, self._linked, checked)), checked)

    def knowl(
        self,
        query: str | None = None,
        *,
        id: str | None = None,
        as_of: str | None = None,
        tags: str | list[str] | None = None,
        limit: int = 3,
        repos: str | list[str] | None = None,
        scope: str | None = None,
        status: str | None = None,
        explain: bool = False,
        category: str | None = None,
        include_evidence: bool = False,
    ) -> Result:
        """knowl_query over this store and the linked stores that share (see docs/knowl.md)."""
        given = {k: v for k, v in locals().items() if k != "self" and v is not None}
        return self._run(given, python=True)


@dataclass
class Target:
    """A store, and a workspace of it plus its linked stores that answers ``knowl_query``."""

    store: Store
    workspace: Workspace | None = None

    def call(self, tool: str, args: Mapping[str, Any] | None) -> dict[str, Any]:
        if tool == TOOL and self.workspace is not None:
            return self.workspace.call(tool, args)
        return self.store.call(tool, args)


def open_target(
    store: str | os.PathLike[str],
    *,
    state_dir: str | os.PathLike[str] | None = None,
    links: Mapping[str, str | os.PathLike[str]] | None = None,
    profile: str | None = None,
) -> Target:
    """Open the store, and its linked stores as a Workspace (their state goes to ``state_dir/linked/NAME``).

    ``profile`` reads the store itself (a linked store is read by its own knowtk.yaml).
    """
    local = open_store(store, state_dir=state_dir, profile=profile)
    if not links:
        return Target(local)
    linked = {
        name: open_store(path, state_dir=None if state_dir is None else os.path.join(state_dir, "linked", name))
        for name, path in links.items()
    }
    return Target(local, Workspace(local, linked))


def parse_links(given: Iterable[str] | None) -> dict[str, str]:
    """``NAME=PATH`` options (``--link``) as ``{name: path}``; anything else is refused naming ``--link``."""
    links = {}
    for item in given or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InvalidArgument("--link", f"{item!r} is not NAME=PATH", allowed="NAME=PATH, NAME the store's name")
        links[name] = path
    return links
