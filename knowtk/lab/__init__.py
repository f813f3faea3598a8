"""The query lab: score query behaviour against a gold set, compare variants, gate changes on a baseline.

    from knowtk.lab import load_gold, run
    gold = load_gold("data/fixtures/gold/demo.yaml")
    result = run(gold, store)                 # every case under "default" and the gold set's variants
    result.metrics()                          # one row per variant: hit@1, hit@k, recall@k, MRR, nDCG@k
    result.compare("default", "any-words")    # the cases that changed first
    result.misses()                           # every expected id that did not come back, and why

Modules, one role each: ``goldset`` (the file format), ``metrics`` (pure functions), ``run``
(asking the store), ``compare``, ``ablation``, ``baseline`` (saved runs, regressions), ``frames``,
``plots`` (matplotlib, imported when used), ``widget`` (``QueryLabWidget``), ``cli``
(``knowtk eval``). See docs/query-lab.md.
"""

from knowtk.lab.ablation import ablate
from knowtk.lab.baseline import Regression, check, load_run, save_run
from knowtk.lab.compare import compare
from knowtk.lab.goldset import Case, GoldSet, GoldSetError, Variant, load_gold, parse_gold
from knowtk.lab.metrics import METRICS
from knowtk.lab.run import LabRun, run, run_case

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
    "load_gold",
    "load_run",
    "parse_gold",
    "run",
    "run_case",
    "save_run",
]
