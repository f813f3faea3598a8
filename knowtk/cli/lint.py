"""``knowtk lint [PATH]``: the ``knowledge_lint`` tool's command, with a format and an exit code for CI.

Exit codes: 0 no finding at error severity; 1 at least one; 2 lint could not run (a bad option or
setting, no store, any failure): a linter that fails must never read as one that passed or found problems.
"""

from __future__ import annotations

import argparse
import os
import sys

from knowtk import __version__
from knowtk.cli.registry import COMMANDS, Command, store_of

__all__: list[str] = []  # the command registers itself when this module is imported

FORMATS = ("text", "json", "github", "sarif")
LINT_TOOL = "knowledge_lint"


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="the store folder (default: --store, else the current folder)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="text (default; grouped by file), json, github (Actions annotations) or sarif (2.1.0)",
    )
    p.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="RULE=SEVERITY",
        help="a rule's severity for this run: error, warning or off (repeat it; over knowtk.yaml's lint: rules)",
    )


def _run(options: argparse.Namespace) -> int:
    if options.path:
        options.store = options.path
    try:
        # the lint code is imported by the lint command alone, as a tool's runner at its first call
        from knowtk.query.lint.formats import render

        args = {"rules": options.rule} if options.rule else {}
        answer = store_of(options, one_query=True).call(LINT_TOOL, args)
        fmt = options.format or ("json" if options.json else "text")
        root = os.path.abspath(options.store)

        def shown(path: str) -> str:
            return os.path.relpath(os.path.join(root, path))

        output = render(fmt, answer, shown if fmt != "json" else lambda path: path, __version__)
    except Exception as exc:  # any failure is "could not run" (2), never a verdict on the store
        print(f"knowtk lint: could not run: {exc}", file=sys.stderr)
        return 2
    if output:
        print(output)
    return 1 if answer["errors"] else 0


COMMANDS["lint"] = Command(
    "lint",
    "check the store's chains, links, dates and frontmatter; exit 1 on an error (knowledge_lint)",
    _run,
    _setup,
    None,
    LINT_TOOL,
    {"rules": "--rule"},
)
