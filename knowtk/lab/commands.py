"""``knowtk eval``: the query lab's subcommand, added to the command line as a plug-in (``knowtk.cli``).

Loading it costs no pandas: the gold set's run is imported when the command runs (``knowtk.lab.cli``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from knowtk.lab.cli import EVAL_HELP, add_eval_options, run_eval

__all__ = ["knowtk_commands"]


def knowtk_commands(register: Callable[..., Any]) -> None:
    """The plug-in hook of the command line (``knowtk.plugins``): adds ``knowtk eval``."""
    register("eval", EVAL_HELP, run_eval, setup=add_eval_options)
