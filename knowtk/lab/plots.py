"""Matplotlib views of a lab run (matplotlib is imported only when a plot is drawn).

``plot_metrics(run)``
    Grouped bars: one group per metric, one bar per variant. Bars have ``gid`` ``"metric:<variant>:<metric>"``.
``plot_rank_changes(comparison)``
    One line per case from its rank under the left setting to its rank under the right one (the
    rank of its first expected id); a case whose expected ids did not come back sits on the
    ``not found`` row below the deepest rank. Lines have ``gid`` ``"case:<case>"``; worse cases are
    drawn dashed in red, better ones solid in green, the rest grey.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from knowtk.errors import InvalidArgument
from knowtk.lab.frames import metrics_frame
from knowtk.lab.metrics import METRICS
from knowtk.lab.scored import ScoredRun

if TYPE_CHECKING:
    from matplotlib.axes import Axes


__all__ = ["plot_metrics", "plot_rank_changes"]

_COLOURS = {"worse": "#dc2626", "mixed": "#d97706", "better": "#16a34a"}
_FONT = 9.0  # the smallest text of a picture, in points (as the notebook's pictures)
_STACK = 11.0  # points between labels stacked on one rank


def plot_metrics(run: ScoredRun | pd.DataFrame, *, metrics: tuple[str, ...] = METRICS, ax: Axes | None = None) -> Axes:
    """The mean of each metric per variant (a run, or its ``metrics()`` frame)."""
    import matplotlib.pyplot as plt

    frame = run if isinstance(run, pd.DataFrame) else metrics_frame(run)
    unknown = [m for m in metrics if m not in frame.columns]
    if unknown:
        raise InvalidArgument("metrics", f"{unknown[0]!r} is not a metric of the run", allowed=METRICS)
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(metrics)), 3.6))
    variants = list(frame["variant"])
    width = 0.8 / max(1, len(variants))
    colours = plt.get_cmap("tab10")
    for i, (variant, row) in enumerate(zip(variants, frame.to_dict("records"), strict=True)):
        values = [row[m] for m in metrics]
        for j, (metric, value) in enumerate(zip(metrics, values, strict=True)):
            height = 0.0 if pd.isna(value) else float(value)
            (bar,) = ax.bar(
                j + (i - (len(variants) - 1) / 2) * width,
                height,
                width,
                color=colours(i % 10),
                label=variant if j == 0 else None,
            )
            bar.set_gid(f"metric:{variant}:{metric}")
    ax.set_xticks(range(len(metrics)), list(metrics))
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean over the cases")
    ax.set_title("Metrics per variant")
    ax.legend(title="variant", fontsize=_FONT, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return ax


def _moved(row: Mapping[Any, Any], left: int, right: int) -> bool:
    return str(row["change"]) not in ("same", "reordered") or left != right


def _rank_figure_height(records: Sequence[Mapping[Any, Any]], missing: int) -> float:
    """Inches: each rank tall enough for the labels stacked on it (9 pt each), within 3 to 14 inches."""
    stacks: dict[int, int] = {}
    for row in records:
        left = missing if pd.isna(row["rank_left"]) else int(row["rank_left"])
        right = missing if pd.isna(row["rank_right"]) else int(row["rank_right"])
        if _moved(row, left, right):
            stacks[right] = stacks.get(right, 0) + 1
    per_rank = max(0.3, max(stacks.values(), default=1) * _STACK / 72.0 + 0.08)
    return min(max(3.0, missing * per_rank + 1.5), 14.0)


def plot_rank_changes(comparison: pd.DataFrame, *, ax: Axes | None = None, max_cases: int = 40) -> Axes:
    """Each case's first expected rank, left setting → right setting (a :func:`knowtk.lab.compare` frame)."""
    import matplotlib.pyplot as plt

    needed = {"case", "change", "rank_left", "rank_right"}
    if not isinstance(comparison, pd.DataFrame) or not needed <= set(comparison.columns):
        raise InvalidArgument("comparison", "must be a frame from knowtk.lab.compare", allowed=sorted(needed))
    rows = comparison.head(max_cases)
    ranks = [r for r in (*rows["rank_left"].dropna(), *rows["rank_right"].dropna())]
    deepest = int(max(ranks)) if ranks else 1
    missing = deepest + 1
    records = rows.to_dict("records")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, _rank_figure_height(records, missing)))
    labelled: dict[int, int] = {}  # rank -> labels already placed there
    for row in records:
        left = missing if pd.isna(row["rank_left"]) else int(row["rank_left"])
        right = missing if pd.isna(row["rank_right"]) else int(row["rank_right"])
        change = str(row["change"])
        colour = _COLOURS.get(change, "#9ca3af")
        style = "--" if change == "worse" else "-"
        (line,) = ax.plot([0, 1], [left, right], style, marker="o", color=colour, alpha=0.85)
        line.set_gid(f"case:{row['case']}")
        if _moved(row, left, right):  # label what moved; stack labels on one rank
            stacked = labelled.get(right, 0)
            labelled[right] = stacked + 1
            ax.annotate(
                str(row["case"]),
                (1, right),
                xytext=(6, -_STACK * stacked),
                textcoords="offset points",
                va="center",
                fontsize=_FONT,
                color=colour,
            )
    left_name = comparison.attrs.get("left", "left")
    right_name = comparison.attrs.get("right", "right")
    ax.set_xticks([0, 1], [str(left_name), str(right_name)])
    ax.set_xlim(-0.2, 1.6)
    ax.set_yticks([*range(1, deepest + 1), missing], [*map(str, range(1, deepest + 1)), "not found"])
    ax.set_ylim(missing + 0.5, 0.5)  # rank 1 on top
    ax.set_ylabel("rank of the first expected id")
    shown = f" (first {max_cases} of {len(comparison)})" if len(comparison) > max_cases else ""
    ax.set_title(f"Rank changes per case{shown}")
    ax.grid(axis="y", alpha=0.3)
    return ax
