"""The chains picture: supersession chains as left-to-right rows of boxes, arrows earlier -> later.

Dead ends (withdrawn, missing, unavailable, cycle) come first and are marked in red. Chain boxes
have ``gid`` = ``"node:<chain>:<id>"``, arrows (one :class:`~matplotlib.patches.FancyArrowPatch`
per edge) ``"edge:<chain>:<from>-><to>"``, end markers ``"end:<chain>"``.

Geometry is in inches (one data unit is about one inch of the figure), so box text keeps its
size whatever the chain's length: a short chain makes a narrow figure, not a stretched one, and
a long one narrows its boxes and wraps each title over two lines instead of shrinking the type.
A box shows the whole id: one too long for a line wraps at its ``:``, ``-`` or ``/`` onto a
second (the title then gets one). Many short one-row chains (a store of two-box chains) are
packed side by side, each named beside its first box, so the height follows what is drawn.
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
    COLUMN_INCHES,
    MIN_FONT,
    chars_for,
    count_argument,
    draw_empty,
    is_missing,
    legend_below,
    new_axes,
    require_columns,
    set_title,
    shorten,
    text_or_none,
    wrap_text,
)
from knowtk.query.chains import EDGE_COLUMNS

__all__ = ["EMPTY_CHAINS_TEXT", "plot_chains"]

EMPTY_CHAINS_TEXT = "no supersession chains"

_CHAIN_END_RANK = {"withdrawn": 0, "missing": 1, "unavailable": 2, "cycle": 3, "current": 9}
_CHAIN_END_TEXT = {
    "withdrawn": "✕ withdrawn",
    "missing": "✕ missing",
    "unavailable": "✕ unavailable",
    "cycle": "↻ cycle",
}
_NODE_FILL = {
    "active": "#d5efcf",
    "superseded": "#e4e4e4",
    "withdrawn": "#f5cfcf",
    "missing": "#ffffff",
    "unavailable": "#fbe0c3",
    "expired": "#f3ecc8",
}
_LEGEND_ORDER = ["active", "superseded", "withdrawn", "unavailable", "missing", "expired"]
_GREEN = "#23923a"
_RED = "#c0392b"
_GREY = "#555555"

# inches; box text: the id, revision · date, a title on two lines
_LINE_IN = MIN_FONT * 1.25 / 72.0
_BOX_H = 4 * _LINE_IN + 0.16
_ROW_H = _BOX_H + 0.22
_CYCLE_PAD = 0.45  # below a chain with a cycle, for the arrow that curves back
_CHAIN_GAP = 0.2


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
    edges: list[tuple[str, str, bool]] = field(default_factory=list)  # (from, to, on a cycle)
    end: str = "current"
    back: set[int] = field(default_factory=set)  # edges (by index) that close a cycle
    rows: int = 1
    cols: int = 1

    @property
    def dead(self) -> bool:
        return self.end != "current"

    @property
    def height(self) -> float:
        return self.rows * _ROW_H + (_CYCLE_PAD if self.back else 0.0)

    def forward_sources(self) -> set[str]:
        """The nodes with an edge out that does not close a cycle: every node but the chain's ends."""
        return {a for k, (a, _, _) in enumerate(self.edges) if k not in self.back}


def _merge_node(nodes: dict[str, _Node], nid: str, title: Any, revision: Any, lifecycle: Any, when: Any) -> None:
    node = nodes.setdefault(nid, _Node(nid))
    if node.title is None:
        node.title = text_or_none(title)
    if node.revision is None and not is_missing(revision):
        try:
            node.revision = int(revision)
        except (TypeError, ValueError):
            node.revision = None
    if node.lifecycle is None:
        node.lifecycle = text_or_none(lifecycle)
    if node.when is None and not is_missing(when):
        try:
            node.when = pd.Timestamp(when)
        except (TypeError, ValueError):
            node.when = None


def _node_sort_key(node: _Node) -> tuple[int, float, str]:
    if node.when is None:
        return (1, 0.0, node.nid)
    stamp = node.when if node.when.tzinfo is not None else node.when.tz_localize("UTC")
    return (0, stamp.timestamp(), node.nid)


# -- layout ----------------------------------------------------------------------------------------


def _depth_first(chain: _Chain) -> list[str]:
    """The nodes in topological order, found depth first from the earliest roots; marks the back edges."""
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
    return finished[::-1]


def _place_rows(chain: _Chain, preds: dict[str, list[str]]) -> int:
    """Walk back from the sinks: the first predecessor continues the row, others open new rows; returns the rows."""
    outs = chain.forward_sources()
    sinks = sorted((n for n in chain.nodes.values() if n.nid not in outs), key=_node_sort_key)
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
    return next_row


def _layout_chain(chain: _Chain) -> None:
    """Columns by longest forward path, rows so that merging branches stack below the main line."""
    topo = _depth_first(chain)
    preds: dict[str, list[str]] = defaultdict(list)
    for k, (a, b, _) in enumerate(chain.edges):
        if k not in chain.back:
            preds[b].append(a)
    for nid in topo:
        chain.nodes[nid].col = max((chain.nodes[p].col + 1 for p in preds[nid]), default=0)
    chain.rows = max(_place_rows(chain, preds), 1)
    chain.cols = max((n.col for n in chain.nodes.values()), default=0) + 1


def _build_chains(edges: pd.DataFrame) -> list[_Chain]:
    chains: dict[Any, _Chain] = {}

    def col(name: str) -> list[Any]:
        return edges[name].tolist() if name in edges.columns else [None] * len(edges)

    cols = {name: col(name) for name in EDGE_COLUMNS}
    for i in range(len(edges)):
        number = cols["chain"][i]
        chain = chains.setdefault(number, _Chain(number, end=""))
        a = text_or_none(cols["from_id"][i]) or "?"
        b = text_or_none(cols["to_id"][i]) or "?"
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
        chain.edges.append((a, b, bool(cycle) if not is_missing(cycle) else False))
        if not chain.end:
            chain.end = text_or_none(cols["chain_end"][i]) or ""
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
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not is_missing(value):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def wrap_id(rid: str, chars: int, lines: int = 2) -> list[str]:
    """``rid`` whole on at most ``lines`` lines of ``chars``, broken after a ``:``, ``-`` or ``/`` where it can
    (never elided unless even that is too long)."""
    out: list[str] = []
    rest = rid
    while len(rest) > chars and len(out) < lines - 1:
        cut = max((rest.rfind(sep, 0, chars) for sep in ":-/_."), default=-1)
        cut = cut + 1 if cut > 0 else chars
        out.append(rest[:cut])
        rest = rest[cut:]
    out.append(shorten(rest, chars))
    return out


def _node_lines(node: _Node, chars: int) -> tuple[str, str]:
    """The box text: the id (whole, over two lines if it must), then revision · date (· why it is a dead end),
    then the title over what is left of four lines."""
    meta = []
    if node.revision is not None:
        meta.append(f"r{node.revision}")
    if node.when is not None:
        meta.append(f"{node.when:%Y-%m-%d}")
    life = node.lifecycle or "?"
    if life in ("missing", "unavailable", "withdrawn"):
        meta.append(life)
    second = shorten(" · ".join(meta) or life, chars)
    head = wrap_id(node.nid, chars)
    if node.title:
        second += "\n" + wrap_text(node.title, chars, 3 - len(head))
    return "\n".join(head), second


_LABEL_W = 1.0  # left of a chain's first box: its name
_PACKED_LABEL_W = 0.75  # the same beside each packed chain ("chain 16" at 9 pt)
_PACK_MIN_CHARS = 18  # a packed box still holds this many characters a line


@dataclass(frozen=True)
class _Geometry:
    """Sizes in inches: the boxes share what the column leaves after the chain labels and the end marker.
    ``packed``: chains placed side by side while a line has room, each with its label and marker room."""

    max_cols: int
    marker_w: float  # room right of the last box for "✕ withdrawn"
    per_line: int = 1  # how many chains of the usual length a packed line holds

    @property
    def packed(self) -> bool:
        return self.per_line > 1

    @property
    def dx(self) -> float:
        if self.packed:
            return min(2.45, (COLUMN_INCHES - self.per_line * (self.label_w + self.marker_w)) / (self.per_line * 2))
        return min(2.45, (COLUMN_INCHES - _LABEL_W - self.marker_w) / self.max_cols)

    @property
    def label_w(self) -> float:
        return _PACKED_LABEL_W if self.packed else _LABEL_W

    @property
    def box_w(self) -> float:
        return self.dx - 0.4

    @property
    def chars(self) -> int:
        return chars_for(self.box_w - 0.12, MIN_FONT)

    def slot(self, chain: _Chain) -> float:
        """The width of one chain's place on a line: its label, its boxes, its end marker."""
        return self.label_w + chain.cols * self.dx + self.marker_w

    @property
    def width(self) -> float:
        return COLUMN_INCHES if self.packed else _LABEL_W + self.max_cols * self.dx + self.marker_w


def _geometry(shown: list[_Chain]) -> _Geometry:
    """One chain a line; when most chains are two boxes long and there are many, as many a line as keep their
    boxes legible (a longer chain takes more of its line)."""
    g = _Geometry(max(c.cols for c in shown), 1.35 if any(c.dead for c in shown) else 0.2)
    short = sum(1 for c in shown if c.cols <= 2 and c.rows == 1)
    if len(shown) < 4 or short * 2 < len(shown):
        return g
    for per_line in (4, 3, 2):
        packed = _Geometry(g.max_cols, g.marker_w, per_line)
        if packed.chars >= _PACK_MIN_CHARS and packed.slot(max(shown, key=lambda c: c.cols)) <= COLUMN_INCHES:
            return packed
    return g


def _places(shown: list[_Chain], g: _Geometry) -> tuple[list[tuple[float, float]], float]:
    """(left, top) of each chain's first box, and the bottom of the last line: one chain a line, or packed (each
    chain on the first line with room left, so the order, dead ends first, is kept line by line)."""
    lines: list[list[int]] = []  # chain indexes per line
    used: list[float] = []
    for n, chain in enumerate(shown):
        fits = [i for i, w in enumerate(used) if g.packed and w + g.slot(chain) <= COLUMN_INCHES + 1e-9]
        if fits:
            lines[fits[0]].append(n)
            used[fits[0]] += g.slot(chain)
        else:
            lines.append([n])
            used.append(g.slot(chain))
    places: list[tuple[float, float]] = [(0.0, 0.0)] * len(shown)
    y = 0.0
    for line in lines:
        x = 0.0
        for n in line:
            places[n] = (x, y)
            x += g.slot(shown[n])
        y -= max(shown[n].height for n in line) + _CHAIN_GAP
    return places, y


# -- draw ------------------------------------------------------------------------------------------


def _draw_node(ax: Axes, chain: _Chain, node: _Node, at: tuple[float, float], g: _Geometry, is_end: bool) -> None:
    """A box filled by lifecycle, green-bordered at a current end, red at a dead one; its text."""
    cx, cy = at
    life = node.lifecycle or "missing"
    edge_color, lw, ls = _GREY, 0.9, "-"
    if life == "missing":
        ls = "--"
    if is_end and chain.end == "current" and life == "active":
        edge_color, lw = _GREEN, 2.6
    elif is_end and chain.dead and chain.end != "cycle":
        edge_color, lw = _RED, 1.6
    box = FancyBboxPatch(
        (cx - g.box_w / 2, cy - _BOX_H / 2),
        g.box_w,
        _BOX_H,
        boxstyle="round,pad=0.02,rounding_size=0.08",
        facecolor=_NODE_FILL.get(life, "#ffffff"),
        edgecolor=edge_color,
        linewidth=lw,
        linestyle=ls,
        zorder=2,
        gid=f"node:{chain.number}:{node.nid}",
    )
    ax.add_patch(box)
    head, rest = _node_lines(node, g.chars)
    top = cy + _BOX_H / 2 - 0.08
    ax.text(
        cx,
        top,
        head,
        ha="center",
        va="top",
        fontsize=MIN_FONT,
        fontweight="bold",
        zorder=3,
        clip_on=True,
        linespacing=1.05,
    )
    ax.text(
        cx,
        top - _LINE_IN * (head.count("\n") + 1),
        rest,
        ha="center",
        va="top",
        fontsize=MIN_FONT,
        color="#333333",
        zorder=3,
        linespacing=1.05,
        clip_on=True,
    )


def _draw_edge(ax: Axes, chain: _Chain, k: int, positions: dict[str, tuple[float, float]], g: _Geometry) -> None:
    """An arrow earlier -> later; one that closes a cycle curves back underneath the row, in red."""
    a, b, in_cycle = chain.edges[k]
    (ax_, ay), (bx, by) = positions[a], positions[b]
    color = _RED if in_cycle or k in chain.back else _GREY
    if k in chain.back:
        start = (ax_ + (g.box_w / 4 if a == b else 0.0), ay - _BOX_H / 2)
        end = (bx - (g.box_w / 4 if a == b else 0.0), by - _BOX_H / 2)
        style = f"arc3,rad={-0.9 if a == b else -0.25}"
    else:  # same row: straight; a merging branch from a lower row: into the target's lower left
        start = (ax_ + g.box_w / 2, ay)
        end = (bx - g.box_w / 2, by if abs(ay - by) < 1e-9 else by - _BOX_H / 4)
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


def _draw_end_marker(ax: Axes, chain: _Chain, positions: dict[str, tuple[float, float]], g: _Geometry) -> None:
    """The red "✕ withdrawn" (or "↻ cycle") right of the chain's end on its first row."""
    outs = chain.forward_sources()
    last = max(chain.nodes.values(), key=lambda n: (n.col, -n.row))
    anchor = next((n for n in chain.nodes.values() if n.nid not in outs and n.row == 0), last)
    if chain.end == "cycle":
        anchor = max((n for n in chain.nodes.values() if n.row == 0), key=lambda n: n.col)
    mx, my = positions[anchor.nid]
    ax.text(
        mx + g.box_w / 2 + 0.12,
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


def _draw_chain(ax: Axes, chain: _Chain, top: float, g: _Geometry, left: float = 0.0) -> None:
    """One chain, its first row at ``top`` and its first box at ``left``: boxes, arrows, a marker when it ends dead."""
    positions = {n.nid: (left + n.col * g.dx, top - n.row * _ROW_H) for n in chain.nodes.values()}
    outs = chain.forward_sources()
    for node in chain.nodes.values():
        _draw_node(ax, chain, node, positions[node.nid], g, is_end=node.nid not in outs)
    for k in range(len(chain.edges)):
        _draw_edge(ax, chain, k, positions, g)
    if chain.dead:
        _draw_end_marker(ax, chain, positions, g)


# -- label -----------------------------------------------------------------------------------------


def _chain_axes(ax: Axes, shown: list[_Chain], places: list[tuple[float, float]], bottom: float, g: _Geometry) -> None:
    """No x axis; each chain named at its first row, red when it ends dead, green when current (a tick label, or
    a label beside its first box when chains are packed side by side)."""
    left = -g.box_w / 2 - 0.1 - (g.label_w if g.packed else 0.0)
    right = max(x + (c.cols - 1) * g.dx for c, (x, _) in zip(shown, places, strict=True)) + g.box_w / 2 + g.marker_w
    ax.set_xlim(left, right)
    ax.set_ylim(bottom + _CHAIN_GAP + _ROW_H - _BOX_H / 2 - 0.1, _BOX_H / 2 + 0.1)
    ax.set_aspect("equal", adjustable="box")  # one data unit is as tall as it is wide: boxes keep their shape
    if g.packed:
        ax.set_yticks([])
        for chain, (x, y) in zip(shown, places, strict=True):
            color = _RED if chain.dead else _GREEN
            name = f"chain {chain.number}"
            ax.text(x - g.box_w / 2 - 0.08, y, name, ha="right", va="center", fontsize=MIN_FONT, color=color)
    else:
        ax.set_yticks([y for _, y in places], [f"chain {c.number}" for c in shown], fontsize=MIN_FONT)
        for label, chain in zip(ax.get_yticklabels(), shown, strict=True):
            label.set_color(_RED if chain.dead else _GREEN)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)


def _legend_handles(shown: list[_Chain], n_dead: int) -> list[Artist]:
    """A swatch per lifecycle drawn, then the current and dead end borders."""
    seen = {n.lifecycle or "missing" for c in shown for n in c.nodes.values()}
    handles: list[Artist] = [
        Patch(
            facecolor=_NODE_FILL.get(life, "#ffffff"),
            edgecolor=_GREY,
            linestyle="--" if life == "missing" else "-",
            label=life,
        )
        for life in _LEGEND_ORDER + sorted(seen - set(_LEGEND_ORDER))
        if life in seen
    ]
    if any(c.end == "current" for c in shown):
        handles.append(Patch(facecolor="#ffffff", edgecolor=_GREEN, linewidth=2.2, label="current end"))
    if n_dead:
        handles.append(Patch(facecolor="#ffffff", edgecolor=_RED, linewidth=1.6, label="dead end"))
    return handles


def _title(ax: Axes, main_title: str, chains: list[_Chain], n_shown: int) -> int:
    """The title with the counts of chains, dead ends and of those left out; returns the dead ends."""
    n_dead = sum(1 for c in chains if c.dead)
    notes = [f"{len(chains)} chain{'s' if len(chains) != 1 else ''}", f"{n_dead} dead end{'s' if n_dead != 1 else ''}"]
    if n_shown < len(chains):
        notes.append(f"showing {n_shown} (dead ends first)")
    fig = ax.get_figure(root=True)
    set_title(ax, main_title, notes, fig.get_figwidth() if fig is not None else COLUMN_INCHES)
    return n_dead


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
    max_chains = count_argument("max_chains", max_chains, minimum=1)
    require_columns(edges, "edges", ("chain", "from_id", "to_id"))
    main_title = title if title is not None else "Supersession chains"
    if len(edges) == 0:
        ax, _ = new_axes(ax, 9.0, 2.6)
        return draw_empty(ax, EMPTY_CHAINS_TEXT, main_title)

    chains = _build_chains(edges)
    shown = chains[:max_chains]
    g = _geometry(shown)
    places, bottom = _places(shown, g)
    if ax is None:
        ax, _ = new_axes(ax, max(g.width, 4.5), -bottom - _CHAIN_GAP + 2.0)
    for chain, (x, y) in zip(shown, places, strict=True):
        _draw_chain(ax, chain, y, g, left=x)
    _chain_axes(ax, shown, places, bottom, g)
    n_dead = _title(ax, main_title, chains, len(shown))
    legend_below(ax, _legend_handles(shown, n_dead), 0.5)
    return ax
