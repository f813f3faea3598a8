"""The query lab: score query behaviour against a gold set, compare variants, gate changes on a baseline.

    from knowtk.lab import load_gold, run
    gold = load_gold("data/fixtures/gold/demo.yaml")
    result = run(gold, store)                 # every case under "default" and the gold set's variants
    result.metrics()                          # one row per variant: hit@1, hit@k, recall@k, MRR, nDCG@k
    result.compare("default", "any-words")    # the cases that changed first
    result.misses()                           # every expected id that did not come back, and why

Modules, one role each, in the order they build on each other:

``goldset``, ``metrics``
    the gold set file format; the ranking metrics (pure functions).
``scored``
    ``ScoredRun``: a finished run as data and its means (what the views read).
``frames``, ``comparison``, ``plots``
    the views of a run: DataFrames, two variants side by side, matplotlib (imported when drawn).
``labrun``
    ``LabRun``: a ``ScoredRun`` with those views as methods.
``whynot``, ``runner``
    asking the store and scoring each case; why an expected id did not come back.
``ablation``, ``baseline``, ``around``
    one query with each word dropped or added; saved runs and regressions; a run before and after a
    change to the store (``compare_mutation``).
``widget``, ``cli``, ``commands``
    ``QueryLabWidget``; ``knowtk eval`` and its command-line plug-in hook.

Names are resolved when first used, so that ``knowtk eval``'s plug-in can be loaded without pandas.
See docs/query-lab.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for type checkers
    from knowtk.lab.ablation import ablate
    from knowtk.lab.around import compare_mutation
    from knowtk.lab.baseline import Regression, check, load_run, save_run
    from knowtk.lab.comparison import compare
    from knowtk.lab.goldset import Case, GoldSet, GoldSetError, Variant, load_gold, parse_gold
    from knowtk.lab.labrun import LabRun
    from knowtk.lab.metrics import METRICS
    from knowtk.lab.runner import run, run_case

_HOMES = {
    "METRICS": "metrics",
    "Case": "goldset",
    "GoldSet": "goldset",
    "GoldSetError": "goldset",
    "LabRun": "labrun",
    "Regression": "baseline",
    "Variant": "goldset",
    "ablate": "ablation",
    "check": "baseline",
    "compare": "comparison",
    "compare_mutation": "around",
    "load_gold": "goldset",
    "load_run": "baseline",
    "parse_gold": "goldset",
    "run": "runner",
    "run_case": "runner",
    "save_run": "baseline",
}

__all__ = [
    "METRICS",
    "Case",
    "GoldSet",
    "GoldSetError",
    "LabRun",
    "Regression",
    "Variant",
    "ablate",
    "check",
    "compare",
    "compare_mutation",
    "load_gold",
    "load_run",
    "parse_gold",
    "run",
    "run_case",
    "save_run",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
