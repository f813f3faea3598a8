"""The projection protocol: what an engine asks of the projections it keeps, and the registry of their kinds.

A projection is a set of tables in state.sqlite derived from the snapshot, mirrored in memory and
rebuildable at any time. Each kind registers itself where it is defined (``register``); an engine
keeps one instance of every registered kind in its ``extensions`` (``kept``), and invalidates and
checks them through this protocol alone, so that it names none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from knowtk.model.shapes import field, shape
from knowtk.snapshot.model import Snapshot
from knowtk.state import StateDB

__all__ = ["Findings", "Host", "Projection", "Runner", "kept", "register", "registered"]

T = TypeVar("T")
P = TypeVar("P")


@shape
class Findings:
    """What a check found wrong, what it rebuilt or restored, and what needs a person."""

    found: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    unrepaired: list[str] = field(default_factory=list)

    def rebuilt(self, lines: list[str]) -> None:
        """Problems found and repaired at once (a projection a query rebuilt by itself)."""
        self.found += lines
        self.repaired += lines

    def add(self, other: Findings) -> None:
        self.found += other.found
        self.repaired += other.repaired
        self.unrepaired += other.unrepaired


class Runner(Protocol):
    """Runs one call in the engine's transaction, again when another process got in the way (``Engine.run``)."""

    def __call__(self, fn: Callable[[], T]) -> T: ...


class Projection(Protocol):
    def invalidate(self) -> None:
        """Forget the in-memory mirror (after a rollback): it is loaded again at the next use."""

    def take_repairs(self) -> list[str]:
        """What queries rebuilt by themselves since the last call (then forgotten)."""
        ...

    def check(self, snap: Snapshot, run: Runner) -> Findings:
        """Compare the tables with ``snap`` and rebuild what is wrong (``Store.check``)."""
        ...


class Host(Protocol):
    """What keeps projections: an engine's state and its instances by kind."""

    state: StateDB
    extensions: dict[str, Any]


Factory = Callable[[StateDB], Projection]
_kinds: dict[str, Factory] = {}


def register(name: str, factory: Factory) -> None:
    """Make every engine keep and check a projection of this kind (under ``name`` in its extensions)."""
    _kinds[name] = factory


def registered() -> dict[str, Factory]:
    """The registered kinds, in the order they were registered."""
    return dict(_kinds)


def kept(host: Host, name: str, factory: Callable[[StateDB], P]) -> P:
    """The host's projection of this kind, made on first use."""
    proj: P | None = host.extensions.get(name)
    if proj is None:
        proj = host.extensions[name] = factory(host.state)
    return proj
