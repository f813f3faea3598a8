"""Progress of long work (a first scan, a large re-index) through tqdm.

``tqdm.auto`` draws a notebook bar in Jupyter and a terminal bar in a shell.
Nothing is drawn when nobody is watching (stderr is not a terminal and no
Jupyter kernel runs: scripts, CI, pipes, an MCP server), for short work (under
``MIN_ITEMS`` items), or for work that ends within ``DELAY_SECONDS``.
``KNOWTK_PROGRESS=0`` turns bars off, ``KNOWTK_PROGRESS=1`` on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["DELAY_SECONDS", "MIN_ITEMS", "interactive", "progress"]

MIN_ITEMS = 2000
DELAY_SECONDS = 1.0

T = TypeVar("T")


def interactive() -> bool:
    """True in a Jupyter kernel or when stderr is a terminal (or as ``KNOWTK_PROGRESS`` says)."""
    forced = os.environ.get("KNOWTK_PROGRESS", "").strip().lower()
    if forced in ("0", "false", "no", "off"):
        return False
    if forced in ("1", "true", "yes", "on"):
        return True
    if "ipykernel" in sys.modules:
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:
            shell = None
        if shell is not None and getattr(shell, "kernel", None) is not None:
            return True
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


def progress(items: Iterable[T], *, total: int, desc: str) -> Iterable[T]:
    """``items`` unchanged, drawing a bar while they are consumed when the work is long and someone watches."""
    if total < MIN_ITEMS or not interactive():
        return items
    try:
        from tqdm.auto import tqdm
    except ImportError:  # a broken install must not cost a query
        return items
    # no monitor thread: a second thread would make the scan start its parse workers from a fork server
    bar = type("KnowtkBar", (tqdm,), {"monitor_interval": 0})
    return _closing(bar(items, total=total, desc=desc, unit="file", delay=DELAY_SECONDS, leave=False))


def _closing(bar: Iterable[T]) -> Iterator[T]:
    """Iterate the bar and close it however the loop ends (an exception must not leave a bar behind)."""
    try:
        yield from bar
    finally:
        close = getattr(bar, "close", None)
        if close is not None:
            close()
