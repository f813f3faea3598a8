"""knowtk's built-in tools, one module each: the default plug-in of the ``knowtk_tools`` hook.

Every module of this package that defines ``TOOL`` (a ``knowtk.query.Tool``) is a tool: adding a tool is
adding a module here, and its test (docs/extending.md). A module declares its tool and nothing heavy: the
tool's runner is named as ``"module:function"`` and imported at its first call, so a process that asks
one tool imports that tool's code alone.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["knowtk_tools"]


def _module_names() -> list[str]:
    """This package's modules, from its folder (``pkgutil.iter_modules`` imports ``inspect``: milliseconds a
    ``knowtk grep`` would pay)."""
    names = {n[:-3] for path in __path__ for n in os.listdir(path) if n.endswith(".py") and n.isascii()}
    return sorted(n for n in names if n.isidentifier() and n != "__init__")


def knowtk_tools() -> Iterator[Any]:
    """The built-in tools, in the order of their modules' ``ORDER`` (then their names)."""
    modules = [importlib.import_module(f"{__name__}.{name}") for name in _module_names()]
    found = [m for m in modules if hasattr(m, "TOOL")]
    found.sort(key=lambda m: (getattr(m, "ORDER", 100), m.__name__))
    for module in found:
        yield module.TOOL
