"""The chains picture: supersession chains as left-to-right rows of boxes, arrows earlier -> later.

Dead ends (withdrawn, missing, unavailable, cycle) come first and are marked in red. Chain boxes
have ``gid`` = ``"node:<chain>:<id>"``, arrows (one :class:`~matplotlib.patches.FancyArrowPatch`
per edge) ``"edge:<chain>:<from>-><to>"``, end markers ``"end:<chain>"``.

Geometry is in inches (one data unit is about one inch of the figure), so box text keeps its
size whatever the chain's length: a short chain makes a narrow figure, not a stretched one, and
a long one narrows its boxes and wraps each title over two lines instead of shrinking the type.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch

from knowtk.notebook.draw import (
    _CHAIN_END_RANK,
    _CHAIN_END_TEXT,
    _GREEN,
    _GREY,
    _NODE_FILL,
    _RED,
    COLUMN_INCHES,
    EMPTY_CHAINS_TEXT,
    MIN_FONT,
    _chars_for,
    _count,
    _empty,
    _legend_below,
    _missing,
    _new_axes,
    _require,
    _set_title,
    _shorten,
    _text,
    _wrap_text,
)
from knowtk.query.chains import EDGE_COLUMNS

__all__ = ["plot_chains"]


@dataclass
class _Node:
    nid: str
    title: str | None = None
    revision: int | None = None
    lifecycle: str | None = None
    when: pd.Timestamp | None = None
    col: int = 0
    row: int = 0


@dataclass
class _Chain:
    number: Any
    nodes: dict[str, _Node] = field(default_factory=dict)
    edges: list[tuple[str, str, bool]] = field(default_factory=list)
    end: str = "current"
    back: set[int] = field(default_factory=set)
    rows: int = 1
    cols: int = 1


def _merge_node(nodes: dict[str, _Node], nid: str, title: Any, revision: Any, lifecycle: Any, when: Any) -> None:
    node = nodes.setdefault(nid, _Node(nid))
    if node.title is None:
        node.title = _text(title)
    if node.revision is None and not _missing(revision):
        try:
            node.revision = int(revision)
        except (TypeError, ValueError):
            node.revision = None
    if node.lifecycle is None:
        node.lifecycle = _text(lifecycle)
    if node.when is None and not _missing(when):
        try:
            node.when = pd.Timestamp(when)
        except (TypeError, ValueError):
            node.when = None


def _node_sort_key(node: _Node) -> tuple[int, float, str]:
    if node.when is None:
        return (1, 0.0, node.nid)
    stamp = node.when if node.when.tzinfo is not None else node.when.tz_localize("UTC")
    return (0, stamp.timestamp(), node.nid)


def _layout_chain(chain: _Chain) -> None:
    """Columns by longest forward path, rows so that merging branches stack below the main line."""
    succ: dict[str, list[int]] = defaultdict(list)
    indegree: dict[str, int] = defaultdict(int)
    for k, (a, b, _) in enumerate(chain.edges):
        succ[a].append(k)
        indegree[b] += 1
    order = sorted(chain.nodes.values(), key=_node_sort_key)
    roots = [n.nid for n in order if indegree[n.nid] == 0] + [n.nid for n in order if indegree[n.nid] > 0]
    state: dict[str, int] = {}  # 1 = on the DFS stack, 2 = done
    finished: list[str] = []
    for root in roots:
        if root in state:
            continue
        state[root] = 1
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            nid, pos = stack[-1]
            if pos < len(succ[nid]):
                stack[-1] = (nid, pos + 1)
                k = succ[nid][pos]
                target = chain.edges[k][1]
                if state.get(target) == 1:
                    chain.back.add(k)
                elif target not in state:
                    state[target] = 1
                    stack.append((target, 0))
            else:
                state[nid] = 2
                finished.append(nid)
                stack.pop()
    topo = finished[::-1]
    preds: dict[str, list[str]] = defaultdict(list)
    for k, (a, b, _) in enumerate(chain.edges):
        if k not in chain.back:
            preds[b].append(a)
    for nid in topo:
        chain.nodes[nid].col = max((chain.nodes[p].col + 1 for p in preds[nid]), default=0)
    # rows: walk back from the sinks; the first predecessor continues the row, others open new rows
    has_forward_out = {a for k, (a, _, _) in enumerate(chain.edges) if k not in chain.back}
    sinks = sorted((n for n in chain.nodes.values() if n.nid not in has_forward_out), key=_node_sort_key)
    assigned: set[str] = set()
    next_row = 0
    for sink in sinks:
        if sink.nid in assigned:
            continue
        sink.row = next_row
        next_row += 1
        assigned.add(sink.nid)
        todo = [sink.nid]
        while todo:
            nid = todo.pop()
            ps = sorted(
                {p for p in preds[nid] if p not in assigned},
                key=lambda p: (-chain.nodes[p].col, _node_sort_key(chain.nodes[p])),
            )
            for i, p in enumerate(ps):
                if i == 0:
                    chain.nodes[p].row = chain.nodes[nid].row
                else:
                    chain.nodes[p].row = next_row
                    next_row += 1
                assigned.add(p)
                todo.append(p)
    for node in chain.nodes.values():  # anything unreached (should not happen) gets its own row
        if node.nid not in assigned:
            node.row = next_row
            next_row += 1
    chain.rows = max(next_row, 1)
    chain.cols = max((n.col for n in chain.nodes.values()), default=0) + 1


def _build_chains(edges: pd.DataFrame) -> list[_Chain]:
    chains: dict[Any, _Chain] = {}

    def col(name: str) -> list[Any]:
        return edges[name].tolist() if name in edges.columns else [None] * len(edges)

    cols = {name: col(name) for name in EDGE_COLUMNS}
    for i in range(len(edges)):
        number = cols["chain"][i]
        chain = chains.setdefault(number, _Chain(number, end=""))
        a = _text(cols["from_id"][i]) or "?"
        b = _text(cols["to_id"][i]) or "?"
        _merge_node(
            chain.nodes,
            a,
            cols["from_title"][i],
            cols["from_revision"][i],
            cols["from_lifecycle"][i],
            cols["from_date"][i],
        )
        _merge_node(
            chain.nodes, b, cols["to_title"][i], cols["to_revision"][i], cols["to_lifecycle"][i], cols["to_date"][i]
        )
        cycle = cols["cycle"][i]
        chain.edges.append((a, b, bool(cycle) if not _missing(cycle) else False))
        if not chain.end:
            chain.end = _text(cols["chain_end"][i]) or ""
    for chain in chains.values():
        _layout_chain(chain)
        if not chain.end:  # derive it when the engine did not say
            if any(c for _, _, c in chain.edges) or chain.back:
                chain.end = "cycle"
            else:
                outs = {a for a, _, _ in chain.edges}
                sink = next((n for n in chain.nodes.values() if n.nid not in outs), None)
                life = sink.lifecycle if sink else None
                chain.end = "current" if life in (None, "active") else life or "missing"
    return sorted(chains.values(), key=lambda c: (_CHAIN_END_RANK.get(c.end, 4), _sortable(c.number)))


def _sortable(value: Any) -> tuple[int, float, str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not _missing(value):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def _node_lines(node: _Node, chars: int) -> tuple[str, str]:
    """The box text: the id, then revision · date (· why it is a dead end), then the title over two lines."""
    meta = []
    if node.revision is not None:
        meta.append(f"r{node.revision}")
    if node.when is not None:
        meta.append(f"{node.when:%Y-%m-%d}")
    life = node.lifecycle or "?"
    if life in ("missing", "unavailable", "withdrawn"):
        meta.append(life)
    second = _shorten(" · ".join(meta) or life, chars)
    if node.title:
        second += "\n" + _wrap_text(node.title, chars, 2)
    return _shorten(node.nid, chars), second


def plot_chains(
    edges: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    max_chains: int = 60,
) -> Axes:
    """Draw supersession chains, one left-to-right row of boxes per chain, dead ends first.

    Boxes show id, revision, date and title, filled by lifecycle; arrows go earlier -> later
    (an edge closing a cycle curves back underneath in red). A chain ending in an active record
    has a green border on that record; any other end gets a red marker ("✕ withdrawn",
    "✕ missing", "✕ unavailable", "↻ cycle"). At most ``max_chains`` chains are drawn (dead
    ends first); the title says how many were left out. Returns the Axes.
    """
    max_chains = _count("max_chains", max_chains, minimum=1)
    _require(edges, "edges", ("chain", "from_id", "to_id"))
    main_title = title if title is not None else "Supersession chains"
    if len(edges) == 0:
        ax, _ = _new_axes(ax, 9.0, 2.6)
        return _empty(ax, EMPTY_CHAINS_TEXT, main_title)

    chains = _build_chains(edges)
    shown = chains[:max_chains]
    max_cols = max(c.cols for c in shown)
    # inches: the boxes share what the column leaves after the chain labels and the end marker
    marker_w = 1.35 if any(c.end != "current" for c in shown) else 0.2
    room = COLUMN_INCHES - 1.0 - marker_w
    dx = min(2.45, room / max_cols)
    box_w = dx - 0.4
    chars = _chars_for(box_w - 0.12, MIN_FONT)
    line_in = MIN_FONT * 1.25 / 72.0
    box_h = 4 * line_in + 0.16  # id, revision · date, a title on two lines
    row_h = box_h + 0.22
    cycle_pad = 0.45
    chain_gap = 0.2
    total_h = sum(c.rows * row_h + (cycle_pad if c.back else 0.0) for c in shown) + chain_gap * (len(shown) - 1)
    if ax is None:
        width = 1.0 + max_cols * dx + marker_w
        ax, _ = _new_axes(ax, max(width, 4.5), total_h + 2.0)

    y = 0.0
    ticks: list[float] = []
    tick_labels: list[str] = []
    tick_colors: list[str] = []
    lifecycles_seen: set[str] = set()
    for chain in shown:
        top = y
        positions: dict[str, tuple[float, float]] = {}
        outs = {a for k, (a, _, _) in enumerate(chain.edges) if k not in chain.back}
        dead = chain.end != "current"
        for node in chain.nodes.values():
            cx = node.col * dx
            cy = top - node.row * row_h
            positions[node.nid] = (cx, cy)
            life = node.lifecycle or "missing"
            lifecycles_seen.add(life)
            is_end = node.nid not in outs
            edge_color, lw, ls = _GREY, 0.9, "-"
            if life == "missing":
                ls = "--"
            if is_end and chain.end == "current" and life == "active":
                edge_color, lw = _GREEN, 2.6
            elif is_end and dead and chain.end != "cycle":
                edge_color, lw = _RED, 1.6
            box = FancyBboxPatch(
                (cx - box_w / 2, cy - box_h / 2),
                box_w,
                box_h,
                boxstyle="round,pad=0.02,rounding_size=0.08",
                facecolor=_NODE_FILL.get(life, "#ffffff"),
                edgecolor=edge_color,
                linewidth=lw,
                linestyle=ls,
                zorder=2,
                gid=f"node:{chain.number}:{node.nid}",
            )
            ax.add_patch(box)
            head, rest = _node_lines(node, chars)
            ax.text(
                cx,
                cy + box_h / 2 - 0.08,
                head,
                ha="center",
                va="top",
                fontsize=MIN_FONT,
                fontweight="bold",
                zorder=3,
                clip_on=True,
            )
            ax.text(
                cx,
                cy + box_h / 2 - 0.08 - line_in,
                rest,
                ha="center",
                va="top",
                fontsize=MIN_FONT,
                color="#333333",
                zorder=3,
                linespacing=1.05,
                clip_on=True,
            )
        for k, (a, b, in_cycle) in enumerate(chain.edges):
            (ax_, ay), (bx, by) = positions[a], positions[b]
            color = _RED if in_cycle or k in chain.back else _GREY
            if k in chain.back:  # closes a cycle: curve back underneath the row
                start = (ax_ + (box_w / 4 if a == b else 0.0), ay - box_h / 2)
                end = (bx - (box_w / 4 if a == b else 0.0), by - box_h / 2)
                style = f"arc3,rad={-0.9 if a == b else -0.25}"
            else:  # same row: straight; a merging branch from a lower row: into the target's lower left
                start = (ax_ + box_w / 2, ay)
                end = (bx - box_w / 2, by if abs(ay - by) < 1e-9 else by - box_h / 4)
                style = "arc3,rad=0.0"
            ax.add_patch(
                FancyArrowPatch(
                    start,
                    end,
                    arrowstyle="-|>",
                    mutation_scale=11,
                    color=color,
                    linewidth=1.2,
                    connectionstyle=style,
                    shrinkA=1,
                    shrinkB=1,
                    zorder=1.5,
                    gid=f"edge:{chain.number}:{a}->{b}",
                )
            )
        if dead:
            last = max(chain.nodes.values(), key=lambda n: (n.col, -n.row))
            anchor = next((n for n in chain.nodes.values() if n.nid not in outs and n.row == 0), last)
            if chain.end == "cycle":
                anchor = max((n for n in chain.nodes.values() if n.row == 0), key=lambda n: n.col)
            mx, my = positions[anchor.nid]
            ax.text(
                mx + box_w / 2 + 0.12,
                my,
                _CHAIN_END_TEXT.get(chain.end, f"✕ {chain.end}"),
                ha="left",
                va="center",
                fontsize=9,
                fontweight="bold",
                color=_RED,
                zorder=3,
                gid=f"end:{chain.number}",
            )
        ticks.append(top)
        tick_labels.append(f"chain {chain.number}")
        tick_colors.append(_RED if dead else _GREEN)
        y = top - chain.rows * row_h - (cycle_pad if chain.back else 0.0) - chain_gap

    ax.set_xlim(-box_w / 2 - 0.1, (max_cols - 1) * dx + box_w / 2 + marker_w)
    ax.set_ylim(y + chain_gap + row_h - box_h / 2 - 0.1, box_h / 2 + 0.1)
    ax.set_aspect("equal", adjustable="box")  # one data unit is as tall as it is wide: boxes keep their shape
    ax.set_yticks(ticks, tick_labels, fontsize=MIN_FONT)
    for label, color in zip(ax.get_yticklabels(), tick_colors, strict=True):
        label.set_color(color)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)

    n_dead = sum(1 for c in chains if c.end != "current")
    notes = [f"{len(chains)} chain{'s' if len(chains) != 1 else ''}", f"{n_dead} dead end{'s' if n_dead != 1 else ''}"]
    if len(shown) < len(chains):
        notes.append(f"showing {len(shown)} (dead ends first)")
    fig = ax.get_figure(root=True)
    _set_title(ax, main_title, notes, fig.get_figwidth() if fig is not None else COLUMN_INCHES)
    order = ["active", "superseded", "withdrawn", "unavailable", "missing", "expired"]
    handles: list[Artist] = [
        Patch(
            facecolor=_NODE_FILL.get(life, "#ffffff"),
            edgecolor=_GREY,
            linestyle="--" if life == "missing" else "-",
            label=life,
        )
        for life in order + sorted(lifecycles_seen - set(order))
        if life in lifecycles_seen
    ]
    if any(c.end == "current" for c in shown):
        handles.append(Patch(facecolor="#ffffff", edgecolor=_GREEN, linewidth=2.2, label="current end"))
    if n_dead:
        handles.append(Patch(facecolor="#ffffff", edgecolor=_RED, linewidth=1.6, label="dead end"))
    _legend_below(ax, handles, 0.5)
    return ax
