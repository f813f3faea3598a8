"""Calls across several engines: their locks in one global order, one transaction each, run again on contention."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from typing import Any, Protocol, TypeVar

from knowtk.errors import StateError
from knowtk.scan.pool import collector_paused
from knowtk.state import Contention

__all__ = ["OPTIMISTIC_ATTEMPTS", "Participant", "run_all"]

T = TypeVar("T")
# optimistic attempts of a query (one read transaction, upgraded when it must write) before the
# last one, which takes the write lock from the start and so cannot meet another process's commit
OPTIMISTIC_ATTEMPTS = 6


class Participant(Protocol):
    """What a call needs of an engine (``knowtk.engine.engine.Engine``)."""

    retries: int  # calls run again because another process changed the state

    @property
    def lock(self) -> AbstractContextManager[Any]: ...
    @property
    def ordinal(self) -> int:
        """The engine's place in the global order in which locks are taken."""
        ...

    @property
    def state_path(self) -> str: ...
    @property
    def in_call(self) -> bool: ...
    def ensure_open(self) -> None: ...
    def begin_call(self, *, immediate: bool) -> None: ...
    def end_call(self, *, commit: bool) -> None: ...
    def leave_call(self) -> None: ...
    def invalidate(self) -> None: ...


def run_all(engines: Sequence[Participant], fn: Callable[[], T]) -> T:
    """Run ``fn`` (one tool call reading these engines) under their locks, in one transaction each.

    Locks are taken in the engines' global order, so two workspaces sharing stores cannot
    deadlock. When another process's commit gets in the way (``Contention``), every
    transaction is rolled back, the mirrors are forgotten and the call runs again; the last
    attempt holds the write lock of each state from the start. A call inside a call (a tool
    that asks another tool) joins the outer one.
    """
    ordered = sorted({id(e): e for e in engines}.values(), key=lambda e: e.ordinal)
    with ExitStack() as stack:
        for engine in ordered:
            stack.enter_context(engine.lock)
            engine.ensure_open()
        if any(e.in_call for e in ordered):
            fresh = [e for e in ordered if not e.in_call]
            if not fresh:
                return fn()
            ordered = fresh  # engines the outer call did not open yet get their own transaction here
        # the collector paused for the whole call: a query makes many small objects and no cycles worth it, and a
        # pass over a large store's heap in the middle of one was paid by whichever first call met it
        stack.enter_context(collector_paused())
        return _with_retries(ordered, fn)


def _with_retries(ordered: Sequence[Participant], fn: Callable[[], T]) -> T:
    rng = random.Random()
    for attempt in range(OPTIMISTIC_ATTEMPTS + 1):
        last = attempt == OPTIMISTIC_ATTEMPTS
        try:
            return _attempt(ordered, fn, immediate=last)
        except Contention as exc:
            for engine in ordered:
                engine.retries += 1
            if last:
                raise StateError(
                    ordered[0].state_path, f"another process kept the state busy ({exc}); try again"
                ) from exc
            time.sleep(rng.uniform(0.001, 0.01 * (attempt + 1)))
    raise AssertionError("unreachable")


def _attempt(ordered: Sequence[Participant], fn: Callable[[], T], *, immediate: bool) -> T:
    """One attempt: every transaction begun, ``fn`` run, every transaction committed; all rolled back on a failure."""
    begun: list[Participant] = []
    try:
        for engine in ordered:
            begun.append(engine)
            engine.begin_call(immediate=immediate)
        result = fn()
        for engine in begun:
            engine.end_call(commit=True)
        return result
    except BaseException:
        _abort(begun)
        raise
    finally:
        for engine in begun:
            engine.leave_call()


def _abort(engines: Sequence[Participant]) -> None:
    for engine in engines:
        try:
            engine.end_call(commit=False)
        except sqlite3.Error:
            engine.invalidate()
