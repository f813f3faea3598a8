"""Where a notebook's store is: one variable at its top, an environment variable, or the repository around it.

A notebook names its store in one variable (``STORE = None``) and hands it to ``find_path``: a path given
there wins, then the environment variable (``KNOWTK_STORE``), then the bundled demo store of the checkout
the notebook runs in (``data/fixtures/demo`` in the working directory or a folder above it). A notebook
copied out of the repository says what to set instead of failing. A notebook that changes files works on
``scratch_copy(path)``, never on the store it was given; one that only reads opens it read-only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from knowtk.errors import StoreUnavailable

__all__ = ["DEMO_PATH", "STORE_VARIABLE", "find_path", "scratch_copy"]

#: the environment variable a notebook reads its store from when its ``STORE`` variable is None
STORE_VARIABLE = "KNOWTK_STORE"
#: the demo store's place in a checkout of knowtk
DEMO_PATH = "data/fixtures/demo"


def find_path(
    given: str | os.PathLike[str] | None = None,
    *,
    env: str = STORE_VARIABLE,
    default: str = DEMO_PATH,
    required: bool = True,
    start: str | os.PathLike[str] | None = None,
) -> Path | None:
    """The path a notebook works on: ``given``, else ``$env``, else ``default`` under the working directory
    (``start``) or the first folder above it that has it. ``StoreUnavailable`` says what to set when none is
    found (or a path given does not exist); ``required=False`` returns None then, for a notebook that skips."""
    named = given if given is not None else os.environ.get(env) or None
    if named is not None:
        path = Path(named).expanduser()
        if path.exists():
            return path.resolve()
        if not required:
            return None
        source = "given" if given is not None else f"in ${env}"
        raise StoreUnavailable(str(path), f"the path {source} does not exist")
    here = Path(start) if start is not None else Path.cwd()
    for folder in (here, *here.parents):
        if (folder / default).exists():
            return (folder / default).resolve()
    if not required:
        return None
    raise StoreUnavailable(
        str(here),
        f"no store named: set the variable at the top of this notebook to a path, or the environment variable "
        f"{env} (no {default} in this folder or one above it, as in a checkout of knowtk)",
    )


def scratch_copy(source: str | os.PathLike[str], prefix: str = "knowtk-copy-") -> Path:
    """A copy of the store at ``source`` in a new temporary folder (without its ``.knowtk/`` state), to change
    freely: the store it came from is never written."""
    source = Path(source)
    work = Path(tempfile.mkdtemp(prefix=prefix)) / source.name
    shutil.copytree(source, work, ignore=shutil.ignore_patterns(".knowtk"))
    return work
