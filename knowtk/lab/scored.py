"""``ScoredRun``: a finished run as data (the gold set, the variants, every case scored, the meta) and its means.

What the views of a run read (frames, comparisons, plots, baselines); :class:`~knowtk.lab.labrun.LabRun`
adds those views as methods. JSON in and out: ``to_dict()`` is what a saved baseline holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from knowtk.lab.metrics import METRICS

__all__ = ["CHECKS", "FORMAT", "ScoredRun", "aggregate"]

#: Checks beside the ranking metrics: the lookup status, and no must-not id in the answer.
CHECKS = ("status_ok", "clean")
#: The ``format`` of a saved run.
FORMAT = "knowtk-lab-run/1"


def aggregate(cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means of each metric over the scored cases where it is defined (None when it is nowhere)."""
    scored = [c for c in cases if c["status"] == "ok"]
    out: dict[str, Any] = {}
    for name in (*METRICS, *CHECKS):
        values = [c["metrics"][name] for c in scored if c["metrics"].get(name) is not None]
        out[name] = sum(values) / len(values) if values else None
    out.update(cases=len(cases), scored=len(scored), unscored=len(cases) - len(scored))
    return out


class ScoredRun:
    """Every case under every variant, scored: ``.cases`` (one dict per case and variant) and ``.meta``."""

    def __init__(
        self, gold: dict[str, Any], variants: list[dict[str, Any]], cases: list[dict[str, Any]], meta: dict[str, Any]
    ) -> None:
        self.gold = gold
        self.variants = variants
        self.cases = cases
        self.meta = meta

    @property
    def variant_names(self) -> list[str]:
        return [v["name"] for v in self.variants]

    @property
    def problems(self) -> list[dict[str, Any]]:
        """Cases that could not be scored: expected or must-not ids the store does not have, refused calls."""
        return [
            {"case": c["case"], "variant": c["variant"], "status": c["status"], "message": c["error"]}
            for c in self.cases
            if c["status"] != "ok"
        ]

    def case(self, case_id: str, variant: str | None = None) -> dict[str, Any]:
        variant = variant or self.variant_names[0]
        for c in self.cases:
            if c["case"] == case_id and c["variant"] == variant:
                return c
        raise KeyError((case_id, variant))

    def summary(self) -> dict[str, dict[str, Any]]:
        """variant -> the mean of every metric over the cases where it is defined, and the counts."""
        return {name: aggregate([c for c in self.cases if c["variant"] == name]) for name in self.variant_names}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "meta": self.meta,
            "gold": self.gold,
            "variants": self.variants,
            "summary": self.summary(),
            "cases": self.cases,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls(dict(data["gold"]), list(data["variants"]), list(data["cases"]), dict(data["meta"]))

    def __repr__(self) -> str:
        cases = len(self.gold.get("cases", []))
        return f"<{type(self).__name__} {self.gold.get('name')!r}: {cases} case(s) × {self.variant_names}>"
