"""Baselines: a run saved as JSON (with the store snapshot and knowtk version), and a later run checked against it.

``check`` compares the variants both runs have, metric by metric, over the cases both runs scored
(a case added to or dropped from the gold set does not move the means it is compared on). A
metric *drops* when the later mean is below the baseline's by more than ``tolerance``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from knowtk.errors import InvalidArgument
from knowtk.frames import BOOL, FLOAT, STRING, Column, build_frame, key
from knowtk.lab.labrun import LabRun
from knowtk.lab.metrics import METRICS
from knowtk.lab.scored import CHECKS, FORMAT, ScoredRun, aggregate

__all__ = ["Regression", "check", "load_run", "save_run"]

_SCORES = (*METRICS, *CHECKS)


def save_run(run: ScoredRun, path: str | os.PathLike[str]) -> Path:
    """Write ``run.to_dict()`` as JSON; returns the path."""
    p = Path(path)
    text = json.dumps(run.to_dict(), indent=1, ensure_ascii=False, default=str)
    try:
        p.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidArgument("path", f"cannot write {p}: {exc.strerror or exc}", value=str(p)) from exc
    return p


def load_run(path: str | os.PathLike[str]) -> LabRun:
    """Read a run saved by :func:`save_run`; ``InvalidArgument`` (argument ``baseline``) if it is not one."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgument("baseline", f"cannot read {p}: {exc.strerror or exc}", value=str(p)) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidArgument("baseline", f"{p} is not JSON: {exc}", value=str(p)) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidArgument("baseline", f"{p} is not a saved lab run", allowed=f"JSON with format {FORMAT!r}")
    try:
        return LabRun.from_dict(data)
    except (KeyError, TypeError) as exc:
        raise InvalidArgument("baseline", f"{p} is a damaged lab run (missing {exc})", value=str(p)) from exc


COLUMNS: list[Column] = [
    ("variant", STRING, key("variant")),
    ("metric", STRING, key("metric")),
    ("baseline", FLOAT, key("baseline")),
    ("current", FLOAT, key("current")),
    ("delta", FLOAT, key("delta")),
    ("dropped", BOOL, key("dropped")),
]

CASE_COLUMNS: list[Column] = [
    ("case", STRING, key("case")),
    ("variant", STRING, key("variant")),
    ("metric", STRING, key("metric")),
    ("baseline", FLOAT, key("baseline")),
    ("current", FLOAT, key("current")),
    ("delta", FLOAT, key("delta")),
]


@dataclass
class Regression:
    """The outcome of :func:`check`. ``ok`` is False when a metric dropped (or a variant is gone)."""

    rows: list[dict[str, Any]]
    case_drops: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    missing_variants: list[str] = field(default_factory=list)
    per_case: bool = False

    @property
    def dropped(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["dropped"]]

    @property
    def ok(self) -> bool:
        return not self.dropped and not self.missing_variants and not (self.per_case and self.case_drops)

    def to_frame(self) -> pd.DataFrame:
        return build_frame(self.rows, COLUMNS)

    def cases_frame(self) -> pd.DataFrame:
        return build_frame(self.case_drops, CASE_COLUMNS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "dropped": self.dropped,
            "metrics": self.rows,
            "caseDrops": self.case_drops,
            "missingVariants": self.missing_variants,
            "notes": self.notes,
        }

    def __repr__(self) -> str:
        return f"<Regression ok={self.ok}: {len(self.dropped)} metric(s) dropped, {len(self.case_drops)} case drop(s)>"


def check(run: ScoredRun, baseline: ScoredRun, *, tolerance: float = 0.0, per_case: bool = False) -> Regression:
    """Compare ``run`` with ``baseline``: every metric of every variant both have, on the cases both scored.

    ``per_case=True`` also fails when any single case's metric dropped (not only a mean).
    """
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not 0 <= tolerance < 1:
        raise InvalidArgument("tolerance", "must be a number from 0 up to (not including) 1", value=tolerance)
    notes = _notes(run, baseline)
    missing = [v for v in baseline.variant_names if v not in run.variant_names]
    if missing and run.meta.get("variantsChosen"):
        notes.append(f"not run, so not compared: {', '.join(missing)}")
        missing = []
    rows: list[dict[str, Any]] = []
    case_drops: list[dict[str, Any]] = []
    for variant in [v for v in baseline.variant_names if v in run.variant_names]:
        old = {c["case"]: c for c in baseline.cases if c["variant"] == variant and c["status"] == "ok"}
        new = {c["case"]: c for c in run.cases if c["variant"] == variant}
        common = [cid for cid in old if cid in new]
        unscored = [cid for cid in common if new[cid]["status"] != "ok"]
        if unscored:
            notes.append(
                f"{variant}: {len(unscored)} case(s) scored in the baseline are not scored now "
                f"({', '.join(unscored)}); they count as 0"
            )
        rows += _metric_rows(variant, [old[cid] for cid in common], [new[cid] for cid in common], tolerance)
        case_drops += _case_drops(variant, [(old[cid], new[cid]) for cid in common], tolerance)
    return Regression(rows, case_drops, notes, missing, per_case)


def _notes(run: ScoredRun, baseline: ScoredRun) -> list[str]:
    """What differs between the two runs besides the scores: the gold set, knowtk, the store."""
    notes = []
    if baseline.gold.get("sha256") != run.gold.get("sha256"):
        notes.append("the gold set changed since the baseline: compared on the cases both runs scored")
    if baseline.meta.get("knowtkVersion") != run.meta.get("knowtkVersion"):
        notes.append(
            f"knowtk {baseline.meta.get('knowtkVersion')} made the baseline, {run.meta.get('knowtkVersion')} this run"
        )
    before_snap = (baseline.meta.get("store") or {}).get("snapshot")
    after_snap = (run.meta.get("store") or {}).get("snapshot")
    notes.append(
        "store unchanged since the baseline" if before_snap == after_snap else "store changed since the baseline"
    )
    return notes


def _metric_rows(
    variant: str, old: list[dict[str, Any]], new: list[dict[str, Any]], tolerance: float
) -> list[dict[str, Any]]:
    """One row per metric of one variant: the means before and after over the same cases, and whether it dropped."""
    before = aggregate(old)
    after = aggregate([_as_zero(n, o) for o, n in zip(old, new, strict=True)])
    rows = []
    for metric in _SCORES:
        a, b = before[metric], after[metric]
        if a is None and b is None:
            continue
        delta = None if a is None or b is None else b - a
        dropped = a is not None and (b is None or b < a - tolerance - 1e-12)
        rows.append(
            {"variant": variant, "metric": metric, "baseline": a, "current": b, "delta": delta, "dropped": dropped}
        )
    return rows


def _case_drops(
    variant: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]], tolerance: float
) -> list[dict[str, Any]]:
    """Every metric of every case (baseline, now) that dropped by more than ``tolerance``."""
    drops = []
    for old, new in pairs:
        for metric in _SCORES:
            a = old["metrics"].get(metric)
            b = _as_zero(new, old)["metrics"].get(metric)
            if a is not None and (b is None or b < a - tolerance - 1e-12):
                drops.append(
                    {
                        "case": old["case"],
                        "variant": variant,
                        "metric": metric,
                        "baseline": a,
                        "current": b,
                        "delta": None if b is None else b - a,
                    }
                )
    return drops


def _as_zero(case: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """A case that could not be scored now counts 0 on every metric the baseline scored it on."""
    if case["status"] == "ok":
        return case
    zero = {m: (0.0 if like["metrics"].get(m) is not None else None) for m in _SCORES}
    return {**case, "status": "ok", "metrics": zero}
