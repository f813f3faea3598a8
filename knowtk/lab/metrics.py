"""Ranking metrics of one answer against its expected ids: pure functions of lists and grades.

``ranked`` is the answer's record ids in order (rank 1 first); ``gains`` maps each expected id to
its grade (1 = relevant, higher = more relevant). Every metric is ``None`` when the case expects
no id (a lookup that must answer ``missing``, a case with only ``must_not``): undefined, not 0.
Formulas in docs/query-lab.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = [
    "METRICS",
    "dcg",
    "hit_at",
    "ndcg_at",
    "recall_at",
    "reciprocal_rank",
    "score",
]

#: The metric names of a case and of a run, in the order tables show them.
METRICS = ("hit@1", "hit@k", "recall@k", "mrr", "ndcg@k")


def _relevant(gains: Mapping[str, int]) -> set[str]:
    return {rid for rid, g in gains.items() if g > 0}


def hit_at(ranked: Sequence[str], gains: Mapping[str, int], k: int) -> float | None:
    """1.0 when an expected id is among the first ``k``, else 0.0."""
    relevant = _relevant(gains)
    if not relevant:
        return None
    return 1.0 if any(rid in relevant for rid in ranked[:k]) else 0.0


def recall_at(ranked: Sequence[str], gains: Mapping[str, int], k: int) -> float | None:
    """The share of the expected ids that are among the first ``k``."""
    relevant = _relevant(gains)
    if not relevant:
        return None
    return len(relevant & set(ranked[:k])) / len(relevant)


def reciprocal_rank(ranked: Sequence[str], gains: Mapping[str, int]) -> float | None:
    """1 / the rank of the first expected id in the whole answer; 0.0 when none came back."""
    relevant = _relevant(gains)
    if not relevant:
        return None
    return next((1.0 / i for i, rid in enumerate(ranked, 1) if rid in relevant), 0.0)


def dcg(grades: Sequence[int]) -> float:
    """Discounted cumulative gain of grades in rank order: sum of (2**g - 1) / log2(rank + 1)."""
    return math.fsum((2.0**g - 1.0) / math.log2(i + 1) for i, g in enumerate(grades, 1))


def ndcg_at(ranked: Sequence[str], gains: Mapping[str, int], k: int) -> float | None:
    """DCG of the first ``k`` over the DCG of the ideal order of the expected grades (graded relevance)."""
    relevant = _relevant(gains)
    if not relevant:
        return None
    ideal = dcg(sorted((g for g in gains.values() if g > 0), reverse=True)[:k])
    seen: set[str] = set()
    grades = []
    for rid in ranked[:k]:
        grades.append(gains.get(rid, 0) if rid not in seen else 0)  # a repeated id gains once
        seen.add(rid)
    return dcg(grades) / ideal


def score(ranked: Sequence[str], gains: Mapping[str, int], k: int) -> dict[str, float | None]:
    """Every metric of :data:`METRICS` for one answer."""
    return {
        "hit@1": hit_at(ranked, gains, 1),
        "hit@k": hit_at(ranked, gains, k),
        "recall@k": recall_at(ranked, gains, k),
        "mrr": reciprocal_rank(ranked, gains),
        "ndcg@k": ndcg_at(ranked, gains, k),
    }
