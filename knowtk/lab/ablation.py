"""Term ablation: one query with each of its words dropped, and with each word of a list added.

The knowl seed's advice is to use every word that names the subject and none that does not.
``ablate`` measures it on a case: a word whose removal lowers the metric *helps*, one whose
addition lowers it *hurts*. ``effect`` is always (metric with the word) − (metric without it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from knowtk.errors import InvalidArgument
from knowtk.frames import FLOAT, INT, OBJECT, STRING, Column, build_frame, key
from knowtk.lab.goldset import DEFAULT_K, MAX_K, TOOLS_SCORED, Case
from knowtk.lab.metrics import METRICS
from knowtk.lab.runner import run_case
from knowtk.query import TOOLS
from knowtk.query.args import validate
from knowtk.store import Store
from knowtk.workspace import Workspace

__all__ = ["VERDICTS", "ablate", "query_terms"]

VERDICTS = ("helps", "hurts", "neutral")
_WORD = re.compile(r"[^\W_]+")


def query_terms(query: str) -> list[str]:
    """The query's words in order, each once (case-folded); punctuation separates words, as in grep."""
    return list(dict.fromkeys(w.casefold() for w in _WORD.findall(query)))


def _verdict(effect: float | None) -> str | None:
    if effect is None:
        return None
    return VERDICTS[0] if effect > 0 else VERDICTS[1] if effect < 0 else VERDICTS[2]


def _without(query: str, word: str) -> str:
    kept = [w for w in _WORD.findall(query) if w.casefold() != word]
    return " ".join(kept)


def _base_case(
    query: str | Case,
    expect: Sequence[str] | Mapping[str, int] | None,
    tool: str,
    args: Mapping[str, Any] | None,
    k: int | None,
) -> Case:
    """The case to ablate: a gold case (``k`` overriding its own), or one made of a query and its expected ids."""
    if isinstance(query, Case):
        if query.tool == "knowledge_lookup":
            raise InvalidArgument("query", "lookup is exact: dropping words only changes the name looked up")
        if k is None:
            return query
        return Case(query.id, query.tool, query.args, query.expect, query.must_not, None, k)
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("query", "must be a non-empty string or a gold Case", value=query)
    if tool not in TOOLS_SCORED or tool == "knowledge_lookup":
        allowed = [t for t in TOOLS_SCORED if t != "knowledge_lookup"]
        raise InvalidArgument("tool", f"{tool!r} cannot be ablated", allowed=allowed, value=tool)
    if not expect:
        raise InvalidArgument("expect", "name the record ids a good answer contains")
    grades = dict.fromkeys(expect, 1) if not isinstance(expect, Mapping) else dict(expect)
    k = DEFAULT_K if k is None else k
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidArgument("k", f"must be a whole number from 1 to {MAX_K}", value=k)
    return Case("ablation", tool, {**(args or {}), "query": query}, grades, (), None, k)


def _plan(query: str, add: Iterable[str]) -> list[tuple[str, str | None, str]]:
    """(change, word, query) to ask: the full query, each word dropped (when there are two or more), each added."""
    words = query_terms(query)
    extra = [w for w in (x.strip() for x in add) if w]
    plan: list[tuple[str, str | None, str]] = [("full", None, query)]
    plan += [("drop", w, _without(query, w)) for w in words if len(words) > 1]
    plan += [("add", w, f"{query} {w}") for w in extra]
    return plan


COLUMNS: list[Column] = [
    ("change", STRING, key("change")),
    ("word", STRING, key("word")),
    ("query", STRING, key("query")),
    *((name, FLOAT, key(name)) for name in METRICS),
    ("effect", FLOAT, key("effect")),
    ("verdict", STRING, key("verdict")),
    ("total", INT, key("total")),
    ("ranks", OBJECT, key("ranks")),
    ("top", OBJECT, key("top")),
]


def ablate(
    target: Store | Workspace,
    query: str | Case,
    *,
    expect: Sequence[str] | Mapping[str, int] | None = None,
    add: Iterable[str] = (),
    tool: str = "knowledge_grep",
    args: Mapping[str, Any] | None = None,
    k: int | None = None,
    metric: str = "ndcg@k",
) -> pd.DataFrame:
    """Rows: the full query, then each word dropped, then each word of ``add`` appended.

    ``query`` is a query string (with ``expect``, ``tool``, ``args``) or a gold :class:`Case`. Each row
    has the metrics, the ``effect`` of the word on ``metric`` and a ``verdict`` (helps, hurts,
    neutral), the answer's total, the rank of each expected id and the first k ids.
    """
    if metric not in METRICS:
        raise InvalidArgument("metric", f"{metric!r} is not a metric", allowed=METRICS, value=metric)
    base = _base_case(query, expect, tool, args, k)
    validate(base.tool, TOOLS[base.tool].params, base.args, python=False)  # a bad argument raises here
    rows = []
    full: float | None = None
    for change, word, text in _plan(base.args["query"], add):
        case = Case(base.id, base.tool, {**base.args, "query": text}, base.expect, base.must_not, None, base.k)
        result = run_case(case, target, why_not=False)
        if result["status"] != "ok":
            raise InvalidArgument("query", f"{text!r}: {result['error']}", value=text)
        value = result["metrics"][metric]
        if change == "full":
            full = value
        effect = None
        if change != "full" and value is not None and full is not None:
            effect = (full - value) if change == "drop" else (value - full)
        rows.append(
            {
                "change": change,
                "word": word,
                "query": text,
                **{m: result["metrics"][m] for m in METRICS},
                "effect": effect,
                "verdict": _verdict(effect),
                "total": result["total"],
                "ranks": {e["id"]: e["rank"] for e in result["expected"]},
                "top": [h["id"] for h in result["hits"][: base.k]],
            }
        )
    frame = build_frame(rows, COLUMNS)
    frame.attrs.update(metric=metric, k=base.k, tool=base.tool)
    return frame
