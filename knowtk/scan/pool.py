"""Bulk loading: work spread over a pool of parse processes that die with their parent, the
garbage collector paused while a store loads, and the memory a bulk load let go given back.

When many files need reading at once (a first scan), they are read and parsed in a pool of
processes, one per core (at most 8); below ``PARALLEL_MIN_FILES`` a pool costs more to start
than it saves, and where no worker can start the work runs in this process.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

__all__ = ["PARALLEL_MIN_FILES", "collector_paused", "give_back_memory", "pool_map"]

# below this many files to read, a process pool costs more to start than it saves
PARALLEL_MIN_FILES = 2000
# objects created while the collector was paused past which they are frozen (see collector_paused)
FREEZE_AFTER_OBJECTS = 200_000
MAX_WORKERS = 8

T = TypeVar("T")


def give_back_memory() -> None:
    """Return the C heap's free pages to the system, after a bulk load let go of much (glibc only; else nothing).

    The texts a cold build holds until they are written (a frontmatter's JSON, an image's parts) are
    larger than Python's small-object allocator takes, so freeing them leaves free pages in the C heap,
    still counted in the process's memory while the build's next phase takes new ones: at 1M records,
    some 300 MB of the peak. ``malloc_trim`` gives them back (a few ms).
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # (only a process that loaded in bulk pays the import)

    with suppress(OSError, AttributeError):  # another C library (musl) has no malloc_trim: nothing to do
        ctypes.CDLL(None).malloc_trim(0)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the store is (re)loaded.

    A first scan creates millions of small objects (records, their frontmatter, index rows),
    none of them in reference cycles; meanwhile the collector would walk the growing heap over
    and over, which took about half the time of loading the scan cache.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_count()[0] > FREEZE_AFTER_OBJECTS:
                # a large load: move what exists to the permanent generation, or the collector's next full
                # pass walks all of it once (~1 s at 100k records, in whichever query comes next).
                # Records and snapshots hold no cycles: refcounting still frees them when replaced.
                gc.freeze()
            gc.enable()


def pool_map(fn: Callable[..., T], *columns: Sequence[Any], parallel_min: int) -> Iterator[T]:
    """``fn`` over the columns' rows, in order: in a pool of processes from ``parallel_min`` rows on.

    ``fn`` and the rows must pickle. When no worker can start (a sandbox, a limit), the rows not
    yet answered are done in this process.
    """
    count = len(columns[0]) if columns else 0
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    context = _pool_context() if count >= parallel_min and workers > 1 else None
    if context is None:
        yield from map(fn, *columns)
        return
    # imported here: a process that parses few files (a CLI call on a built state) never loads them
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    done = 0
    try:
        with ProcessPoolExecutor(
            workers, mp_context=context, initializer=_die_with_parent, initargs=(os.getpid(),)
        ) as pool:
            for answer in pool.map(fn, *columns, chunksize=128):
                yield answer
                done += 1
    except (BrokenProcessPool, OSError):  # no worker could start: the rest here
        yield from map(fn, *(column[done:] for column in columns))


def _die_with_parent(parent: int) -> None:
    """Initializer of a parse worker: it must not outlive the process that started the parse.

    A forked worker asks Linux for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``); every
    worker also runs a thread that watches the parent (a forkserver's worker is the child of the
    server, not of the caller) and exits when it is gone.
    """
    direct = os.getppid() == parent
    if direct and sys.platform.startswith("linux"):
        import ctypes  # a worker's alone, as signal: a query process that starts no pool imports neither
        import signal

        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1

    def gone() -> bool:
        if direct:
            return os.getppid() != parent
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    if gone():
        os._exit(1)

    def watch() -> None:
        while not gone():
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="knowtk-parent-watch", daemon=True).start()


def _pool_context() -> Any:
    """How to start parse workers, or None to parse in this process.

    ``fork`` (Linux) when this process runs one thread: no lock can be inherited mid-use and
    the main module is not run again. Otherwise (a Jupyter kernel runs several threads)
    ``forkserver``, which imports the main module again in every worker: fine for a module
    run with ``-m`` (``ipykernel_launcher``), not for a script that may lack an
    ``if __name__ == "__main__":`` guard, so a threaded script parses in its own process.
    """
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if "forkserver" in methods and main_spec is not None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])  # import knowtk once in the server, not in every worker
        return context
    return None
