"""A timeline or chronicle frame as dated rows: UTC start and end, date numbers, style, lanes.

What :mod:`.timeline` and :mod:`.chronicle` draw: an instant has ``end == start``; a date-only
value is a bar over its UTC day ``[start, start + 1 day)``, so it reads as an interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import matplotlib.dates as mdates
import pandas as pd

from knowtk.notebook.draw import is_missing, text_or_none

__all__ = ["NO_LANE", "DatedRow", "dated_num", "dated_rows"]

#: The lane of a row without a value for the lane field.
NO_LANE = "(none)"


@dataclass
class DatedRow:
    """One record to draw: ``x0``/``x1`` its span in date numbers, ``bar`` for a date-only value, ``keys`` its lanes."""

    rid: str
    label: str
    style: str
    start: pd.Timestamp
    end: pd.Timestamp
    x0: float
    x1: float
    bar: bool
    keys: list[str] = field(default_factory=list)


def _lane_keys(value: Any, lanes: str) -> list[str]:
    if lanes == "entity":
        if is_missing(value):
            return [NO_LANE]
        if isinstance(value, str):
            items = [value]
        else:
            try:
                items = list(value)
            except TypeError:
                items = [value]
        keys = [k for k in dict.fromkeys(text_or_none(v) for v in items) if k]
        return keys or [NO_LANE]
    return [text_or_none(value) or NO_LANE]


def dated_rows(frame: pd.DataFrame, lanes: str | None) -> tuple[list[DatedRow], int]:
    """Normalise a timeline/chronicle frame; returns (rows, rows skipped for want of a start)."""
    n = len(frame)
    start = _utc(frame["start"]).reset_index(drop=True)
    end = _utc(frame["end"]).reset_index(drop=True) if "end" in frame.columns else start.copy()
    end = end.where(end.notna() & (end >= start), start)
    if "date_only" in frame.columns:
        flags = [bool(v) if not is_missing(v) else None for v in frame["date_only"].tolist()]
    else:
        flags = [None] * n
    one_day = pd.Timedelta(days=1)
    bar = []
    for i, flag in enumerate(flags):
        is_bar = flag if flag is not None else bool(end.iloc[i] > start.iloc[i])
        if is_bar and not end.iloc[i] > start.iloc[i] and not pd.isna(start.iloc[i]):
            end.iloc[i] = start.iloc[i] + one_day
        bar.append(is_bar)
    x0 = _datenums(start) if n else []
    x1 = _datenums(end) if n else []
    ids = [(text_or_none(v) or "?") for v in frame["id"].tolist()]
    titles = frame["title"].tolist() if "title" in frame.columns else [None] * n
    lifecycles = frame["lifecycle"].tolist() if "lifecycle" in frame.columns else [None] * n
    column = {"entity": "entities"}.get(lanes or "", lanes)
    lane_values = frame[column].tolist() if column else [None] * n
    rows: list[DatedRow] = []
    skipped = 0
    for i in range(n):
        if pd.isna(start.iloc[i]):
            skipped += 1
            continue
        rows.append(
            DatedRow(
                rid=ids[i],
                label=text_or_none(titles[i]) or ids[i],
                style=_style(lifecycles[i]),
                start=start.iloc[i],
                end=end.iloc[i],
                x0=x0[i],
                x1=x1[i],
                bar=bar[i],
                keys=_lane_keys(lane_values[i], lanes) if lanes else [],
            )
        )
    return rows, skipped


def _style(lifecycle: Any) -> str:
    value = text_or_none(lifecycle)
    return value if value in ("superseded", "expired") else "active"


def _utc(values: pd.Series) -> pd.Series:
    if len(values) == 0:
        return pd.Series([], dtype="datetime64[ns, UTC]", index=values.index)
    return pd.to_datetime(values, utc=True, errors="coerce", format="ISO8601")


def _datenums(values: pd.Series) -> list[float]:
    """UTC timestamps -> matplotlib date numbers (days); NaT -> nan."""
    naive = values.dt.tz_convert("UTC").dt.tz_localize(None)
    return [float(x) for x in mdates.date2num(naive.to_numpy())]


def dated_num(value: Any) -> float:
    """One UTC instant (text, Timestamp) as a matplotlib date number (days)."""
    return _datenums(_utc(pd.Series([value])))[0]
