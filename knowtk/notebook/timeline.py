"""The timeline picture: dated records on a date axis, one horizontal lane per type, kind, lifecycle or entity.

Instants are points; date-only values are bars covering their UTC day ``[start, end)``, so a
date-only record is visibly an interval rather than a claimed instant. Every bar
:class:`~matplotlib.patches.Rectangle` has ``gid`` = the record id; scatter collections
``"instants:<style>"``; per-row labels ``"label"``.

Past ``max_labels`` rows the first ``max_labels`` (in date order) are labelled and the title says
how many are not (and how many labels were left out where a crowded lane had no room for them);
the date axis names the month and the year.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

import pandas as pd
from matplotlib.axes import Axes

from knowtk.errors import InvalidArgument
from knowtk.notebook.draw import (
    _CHAR_WIDTH_EM,
    _FIXED_LANE_ORDER,
    _HATCH,
    _LABEL_CHARS,
    _LANE_LABEL_CHARS,
    _MARKER,
    _STYLES,
    COLUMN_INCHES,
    EMPTY_TIMELINE_TEXT,
    LANES,
    MIN_FONT,
    NO_LANE,
    _axes_inches,
    _count,
    _darker,
    _date_axis,
    _dated_rows,
    _empty,
    _legend_below,
    _new_axes,
    _palette,
    _require,
    _Row,
    _set_title,
    _shorten,
    _style_legend_handles,
    _unlabelled_note,
    _with_alpha,
    _zone,
    _zone_name,
)

__all__ = ["LANES", "plot_timeline"]


@dataclass
class _Item:
    row: _Row
    lane: str
    track: int = 0
    y: float = 0.0


def _order_lanes(lanes: str, counts: dict[str, int]) -> list[str]:
    fixed = _FIXED_LANE_ORDER.get(lanes, ())
    rank = {name: i for i, name in enumerate(fixed)}

    def key(name: str) -> tuple[int, int, str]:
        if name == NO_LANE or name.startswith("(other"):
            return (2, 0, name)
        if name in rank:
            return (0, rank[name], name)
        return (1, 0, name.casefold())

    return sorted(counts, key=key)


def plot_timeline(
    frame: pd.DataFrame,
    *,
    lanes: str = "type",
    tz: str | tzinfo = "UTC",
    ax: Axes | None = None,
    title: str | None = None,
    max_labels: int = 40,
    max_lanes: int = 40,
) -> Axes:
    """Draw dated records on a date axis, one horizontal lane per ``lanes`` value.

    ``lanes`` is one of :data:`LANES`; with ``"entity"`` a row appears in the lane of each of its
    entities and rows without entities in ``"(none)"``. Dates are displayed in ``tz`` (an IANA
    name); date-only rows are bars over their UTC day, instants are points. When more than
    ``max_lanes`` lanes exist the least populated are folded into one ``"(other: N lanes)"`` lane.
    Returns the Axes (a new figure whose height grows with the lanes when ``ax`` is None).
    """
    if not isinstance(lanes, str) or lanes not in LANES:
        raise InvalidArgument("lanes", f"unknown lane field {lanes!r}", allowed=LANES, value=lanes)
    zone = _zone(tz)
    max_labels = _count("max_labels", max_labels)
    max_lanes = _count("max_lanes", max_lanes, minimum=1)
    lane_column = {"entity": "entities"}.get(lanes, lanes)
    _require(frame, "frame", ("id", "start", lane_column))
    main_title = title if title is not None else f"Timeline by {lanes}"

    rows, skipped = _dated_rows(frame, lanes)
    if not rows:
        ax, _ = _new_axes(ax, COLUMN_INCHES, 2.6)
        return _empty(ax, EMPTY_TIMELINE_TEXT, main_title)

    # lanes, folding the least populated ones beyond max_lanes
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for key in row.keys:
            counts[key] += 1
    folded = 0
    if len(counts) > max_lanes:
        keep = max_lanes - 1
        by_size = sorted(counts, key=lambda k: (-counts[k], k.casefold()))
        kept = set(by_size[:keep])
        folded = len(counts) - keep
        other = f"(other: {folded} lanes)"
        for row in rows:
            row.keys = list(dict.fromkeys(k if k in kept else other for k in row.keys))
        counts = defaultdict(int)
        for row in rows:
            for key in row.keys:
                counts[key] += 1
    lane_names = _order_lanes(lanes, counts)
    items = [_Item(row, key) for row in rows for key in row.keys]
    # past the label limit, label the first max_labels items in date order and say how many are not
    in_order = sorted(items, key=lambda it: (it.row.x0, it.row.x1, it.row.rid, it.lane))
    with_label = {id(it) for it in in_order[:max_labels]}
    unlabelled = len(items) - len(with_label)
    labelled = bool(with_label)

    # horizontal geometry (in days), worked out before the figure exists so labels can be packed:
    # the range R must hold every item and its label, whose width in days is (inches) * R / axes width.
    x_lo = min(r.x0 for r in rows)
    x_hi = max(r.x1 for r in rows)
    fontsize = MIN_FONT
    char_in = _CHAR_WIDTH_EM * fontsize / 72.0
    axes_w = _axes_inches(ax)[0] if ax is not None else COLUMN_INCHES - 2.2
    label_texts = {id(it): _shorten(it.row.label, _LABEL_CHARS) for it in items if id(it) in with_label}

    def label_in(it: _Item) -> float:
        return min((len(label_texts[id(it)]) + 2) * char_in, 0.45 * axes_w) if id(it) in label_texts else 0.0

    x_range = max(x_hi - x_lo, 1.0)
    for it in items:
        anchor = it.row.x1 if it.row.bar else it.row.x0
        x_range = max(x_range, (anchor - x_lo) / (1.0 - label_in(it) / axes_w - 0.01))
    x_range *= 1.01
    days_per_in = x_range * 1.03 / axes_w
    gap = 0.012 * x_range

    # pack each lane's items into tracks so that points, bars and labels do not collide; when a lane
    # has no track left, an item is drawn without its label (a point over text, never text over text)
    max_tracks = 12 if labelled else 3
    crowded = 0
    tracks_in_lane: dict[str, int] = {}
    by_lane: dict[str, list[_Item]] = defaultdict(list)
    for it in items:
        by_lane[it.lane].append(it)
    for name in lane_names:
        ends: list[float] = []
        for it in sorted(by_lane[name], key=lambda i: (i.row.x0, i.row.x1, i.row.rid)):
            anchor = it.row.x1 if it.row.bar else it.row.x0
            occupied = anchor + gap + label_in(it) * days_per_in
            free = [t for t, e in enumerate(ends) if e <= it.row.x0]
            if free:
                track = free[0]
            elif len(ends) < max_tracks:
                track = len(ends)
                ends.append(0.0)
            else:
                track = min(range(len(ends)), key=lambda t: ends[t])
                if label_texts.pop(id(it), None) is not None:
                    crowded += 1
                occupied = anchor + gap
            ends[track] = max(ends[track], occupied)
            it.track = track
        tracks_in_lane[name] = max(len(ends), 1)

    # vertical layout: lane 0 at the top, tracks stacked inside each lane
    lane_gap = 0.6
    centers: dict[str, float] = {}
    bounds: list[float] = []
    base = 0.0
    for name in lane_names:
        n_tracks = tracks_in_lane[name]
        centers[name] = base + (n_tracks - 1) / 2.0
        bounds.append(base - lane_gap / 2.0 - 0.5)
        base += n_tracks + lane_gap
    y_bottom = base - lane_gap / 2.0 - 0.5
    lane_base = {name: centers[name] - (tracks_in_lane[name] - 1) / 2.0 for name in lane_names}
    for it in items:
        it.y = lane_base[it.lane] + it.track

    units = y_bottom - bounds[0]
    unit_in = 0.3 if labelled else 0.2
    height = min(max(1.9 + units * unit_in, 3.0), 14.0)
    ax, _ = _new_axes(ax, COLUMN_INCHES, height)

    colors = dict(zip(lane_names, _palette(len(lane_names)), strict=True))
    bar_height = 0.62
    bar_styles: set[str] = set()
    instant_styles: set[str] = set()
    many = len(items) > 400
    for style in _STYLES:
        bars = [it for it in items if it.row.bar and it.row.style == style]
        if bars:
            bar_styles.add(style)
            alpha = 0.85 if style == "active" else 0.2
            container = ax.barh(
                [it.y for it in bars],
                [it.row.x1 - it.row.x0 for it in bars],
                left=[it.row.x0 for it in bars],
                height=bar_height,
                color=[_with_alpha(colors[it.lane], alpha) for it in bars],
                edgecolor=[_darker(colors[it.lane]) for it in bars],
                linewidth=0.6 if style == "active" else 0.9,
                hatch=_HATCH[style] or None,
                zorder=2,
            )
            for rect, it in zip(container.patches, bars, strict=True):
                rect.set_gid(it.row.rid)
        points = [it for it in items if not it.row.bar and it.row.style == style]
        if points:
            instant_styles.add(style)
            size = 14.0 if many else 36.0
            edge = [_darker(colors[it.lane], 0.8) for it in points]
            face: Any = [colors[it.lane] for it in points] if style == "active" else "none"
            ax.scatter(
                [it.row.x0 for it in points],
                [it.y for it in points],
                s=size,
                marker=_MARKER[style],
                facecolors=face,
                edgecolors=edge,
                linewidths=0.5 if style == "active" else 1.3,
                alpha=0.75 if many else 1.0,
                zorder=3,
                gid=f"instants:{style}",
            )

    if labelled:
        for it in (it for it in items if id(it) in label_texts):
            anchor = it.row.x1 if it.row.bar else it.row.x0
            ax.annotate(
                label_texts[id(it)],
                xy=(anchor, it.y),
                xytext=(4, 0),
                textcoords="offset points",
                ha="left",
                va="center",
                fontsize=fontsize,
                color="#222222" if it.row.style == "active" else "#777777",
                clip_on=True,
                gid="label",
            )

    # axes: lanes on y, local dates on x
    for y in bounds[1:]:
        ax.axhline(y, color="#dddddd", linewidth=0.8, zorder=0)
    ax.set_ylim(y_bottom, bounds[0])
    lane_font = MIN_FONT
    ax.set_yticks(
        [centers[n] for n in lane_names], [_shorten(n, _LANE_LABEL_CHARS) for n in lane_names], fontsize=lane_font
    )
    ax.tick_params(axis="y", length=0)
    ax.set_xlim(x_lo - 0.02 * x_range, x_lo + x_range)
    _date_axis(ax, zone)
    ax.grid(axis="x", color="#eeeeee", zorder=0)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    notes = [f"{len(rows):,} record{'s' if len(rows) != 1 else ''}", _zone_name(zone)]
    if unlabelled:
        notes.append(_unlabelled_note(len(with_label), unlabelled))
    if crowded:
        notes.append(f"{crowded} more unlabelled where labels would overlap")
    if folded:
        notes.append(f"{folded} small lanes folded")
    if skipped:
        notes.append(f"{skipped} without start skipped")
    _set_title(ax, main_title, notes, _axes_inches(ax)[0] + 1.5)
    _legend_below(ax, _style_legend_handles(instant_styles, bar_styles), 3.2)
    return ax
