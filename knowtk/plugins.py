"""The plug-in manager: the one way tools, profiles, plotters, widgets and commands reach knowtk.

A plug-in is a module that defines any of these hooks, each returning what it adds::

    knowtk_tools()             an iterable of knowtk.query.Tool
    knowtk_profiles()          a mapping: profile name -> profile (knowtk.model.profile.Profile)
    knowtk_plotters()          a mapping: tool name -> plotter (what Result.plot calls)
    knowtk_widgets()           a mapping: name -> widget class (importable from knowtk.notebook)
    knowtk_commands(register)  adds command-line subcommands through knowtk.cli.register

knowtk's own plug-ins go through this manager like anyone else's, as datasette's default plug-ins do:
``DEFAULT_PLUGINS`` names them, with the hooks each defines. A package adds its own through the
entry-point group ``knowtk.plugins`` (docs/extending.md)::

    [project.entry-points."knowtk.plugins"]
    stats = "knowtk_stats.plugin"

Loading is lazy, so a plain ``knowtk grep`` imports only what it needs: a hook's default plug-ins are
imported the first time that hook is asked for, and the entry points are read only when a name is not
among them, or when everything is listed (the MCP listing, ``knowtk --help``). Reading entry points
imports ``importlib.metadata`` and scans every installed distribution: tens of milliseconds a process.

This is the one module that names modules of higher layers (by string, never by import): what it loads
registers itself upwards through the hooks, so the layers below never import the ones above.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "HOOKS",
    "LOCK",
    "PluginError",
    "hook_results",
    "outside_plugins",
    "reset",
]

ENTRY_POINT_GROUP = "knowtk.plugins"
HOOKS = ("knowtk_tools", "knowtk_profiles", "knowtk_plotters", "knowtk_widgets", "knowtk_commands")

#: knowtk's own plug-ins: module -> the hooks it defines (imported only when one of them is asked for).
DEFAULT_PLUGINS: dict[str, tuple[str, ...]] = {
    "knowtk.query.tools": ("knowtk_tools",),
    "knowtk.model.dialects": ("knowtk_profiles",),
    "knowtk.notebook.plotters": ("knowtk_plotters",),
    "knowtk.notebook.widgets": ("knowtk_widgets",),
    "knowtk.lab.commands": ("knowtk_commands",),
    "knowtk.mcp.commands": ("knowtk_commands",),
    "knowtk.serve.commands": ("knowtk_commands",),
}

#: Held while plug-ins load and while what they gave is cached (the tool registry, profiles, plotters): one
#: lock for all, so that a plug-in whose import registers a tool or asks for a profile cannot deadlock two
#: threads loading in opposite orders. Reentrant: a plug-in's module may ask for another hook as it loads.
LOCK = threading.RLock()
_outside: list[tuple[str, ModuleType]] | None = None


class PluginError(ImportError):
    """A plug-in named by an entry point could not be loaded (the message names the entry point)."""


def _default_modules(hook: str) -> Iterator[tuple[str, ModuleType]]:
    for name, hooks in DEFAULT_PLUGINS.items():
        if hook in hooks:
            yield name, importlib.import_module(name)


def outside_plugins() -> list[tuple[str, ModuleType]]:
    """The plug-ins installed packages declare (entry points of ``knowtk.plugins``), loaded once a process."""
    global _outside
    with LOCK:
        if _outside is None:
            from importlib.metadata import entry_points  # tens of ms: read only when a name is not a default

            loaded = []
            for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
                try:
                    module = point.load()
                except Exception as exc:  # an outside package's fault: say which, never a bare traceback
                    raise PluginError(
                        f"the knowtk plug-in {point.name!r} ({point.value}) failed to load: {exc}"
                    ) from exc
                if not isinstance(module, ModuleType):
                    raise PluginError(f"the knowtk plug-in {point.name!r} ({point.value}) must name a module")
                loaded.append((point.name, module))
            _outside = loaded
        return _outside


def hook_results(hook: str, *, outside: bool) -> list[tuple[str, Any]]:
    """``(plug-in name, what its hook returned)`` for each plug-in defining ``hook``: the defaults first, in
    ``DEFAULT_PLUGINS`` order, then (when ``outside``) the installed ones by entry-point name.

    ``knowtk_commands`` takes an argument: it is returned uncalled, for the caller to call.
    """
    if hook not in HOOKS:
        raise ValueError(f"{hook!r} is not a knowtk hook: {', '.join(HOOKS)}")
    with LOCK:
        modules = list(_default_modules(hook))
        if outside:
            modules += outside_plugins()
        results = []
        for name, module in modules:
            function: Callable[..., Any] | None = getattr(module, hook, None)
            if function is not None:
                results.append((name, function if hook == "knowtk_commands" else function()))
        return results


def reset() -> None:
    """Forget the installed plug-ins read so far: the next outside look-up reads the entry points again."""
    global _outside
    with LOCK:
        _outside = None
