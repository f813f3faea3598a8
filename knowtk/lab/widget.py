"""``QueryLabWidget``: load a gold set, run it, read the table, pick a case to see its hits and why-nots.

    from knowtk.lab.widget import QueryLabWidget
    lab = QueryLabWidget(store, "data/fixtures/gold/demo.yaml")
    lab.run_button.click()          # or lab.run()
    lab.case.value = "gpu-budget"   # the detail pane: its hits, and why each expected id is missing

Everything shown comes from :func:`lab_view`, a plain dict built from the :class:`~knowtk.lab.run.LabRun`
(metrics per variant, the cases of two variants side by side with the changed ones first, and
the picked case's hits and why-nots); the HTML is rendered from that dict. So the widget can be
driven without a browser through its controls' ``.value`` and ``.click()``, and tested the same way.
"""

from __future__ import annotations

import html
import os
from typing import Any

import ipywidgets as W

from ..errors import KnowtkError
from ..store import Store
from ..workspace import Workspace
from .compare import compare
from .frames import hits_frame
from .goldset import GoldSet, load_gold
from .metrics import METRICS
from .run import CHECKS, LabRun, run

__all__ = ["QueryLabWidget", "lab_view", "view_html"]

_SCORES = (*METRICS, *CHECKS)
_STYLE = """<style>
.knowtk-lab table{border-collapse:collapse;font-size:12px;margin:4px 0}
.knowtk-lab th,.knowtk-lab td{border-bottom:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
.knowtk-lab tr.changed td{background:#fff7ed}
.knowtk-lab tr.expected td{background:#ecfdf5}
.knowtk-lab tr.banned td{background:#fef2f2}
.knowtk-lab .muted{color:#666;font-size:11px}
</style>"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _n(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def lab_view(
    result: LabRun,
    *,
    case: str | None = None,
    variant: str | None = None,
    left: str | None = None,
    right: str | None = None,
) -> dict[str, Any]:
    """What the widget shows, as a dict: ``metrics`` (per variant), ``cases`` (``left`` vs ``right``, changed
    first; one variant alone when the run has one), ``order`` (case ids in that order) and ``detail``
    (the picked ``case`` under ``variant``: its hits, marked, and each expected id with its why-not)."""
    names = result.variant_names
    left = left or names[0]
    right = right or (names[1] if len(names) > 1 else names[0])
    metrics = [{"variant": name, **values} for name, values in result.summary().items()]
    if left != right:
        rows = compare(result, left=left, right=right).to_dict("records")
        cases = [
            {
                "case": r["case"],
                "tool": r["tool"],
                "change": r["change"],
                "query": r["query_right"]
                if r["query_right"] == r["query_left"]
                else f"{r['query_left']} → {r['query_right']}",
                "left": _plain(r["ndcg@k_left"]),
                "right": _plain(r["ndcg@k_right"]),
                "rank_left": _plain(r["rank_left"]),
                "rank_right": _plain(r["rank_right"]),
            }
            for r in rows
        ]
    else:
        cases = [
            {
                "case": c["case"],
                "tool": c["tool"],
                "change": "passed" if c["passed"] else c["status"] if c["status"] != "ok" else "missed",
                "query": c["query"],
                "left": c["metrics"]["ndcg@k"],
                "right": None,
                "rank_left": _first(c),
                "rank_right": None,
            }
            for c in result.cases
            if c["variant"] == left
        ]
    order = [c["case"] for c in cases]
    detail = None
    if case is not None:
        c = result.case(case, variant or right)
        frame = hits_frame(c)
        detail = {
            "case": c["case"],
            "variant": c["variant"],
            "tool": c["tool"],
            "query": c["query"],
            "k": c["k"],
            "status": c["status"],
            "error": c["error"],
            "passed": c["passed"],
            "lookupStatus": c["lookupStatus"],
            "expectedStatus": c["expectedStatus"],
            "metrics": c["metrics"],
            "hits": [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")],
            "expected": c["expected"],
            "mustNot": c["mustNot"],
        }
    return {"left": left, "right": right, "metrics": metrics, "cases": cases, "order": order, "detail": detail}


def _plain(value: Any) -> Any:
    """pandas' missing values as None, numpy scalars as Python ones (the view is plain data)."""
    try:
        import pandas as pd

        if value is pd.NA or (isinstance(value, float) and value != value):
            return None
    except ImportError:  # pragma: no cover
        pass
    return value.item() if hasattr(value, "item") else value


def _first(c: dict[str, Any]) -> int | None:
    ranks = [e["rank"] for e in c["expected"] if e["rank"] is not None]
    return min(ranks) if ranks else None


def view_html(view: dict[str, Any]) -> dict[str, str]:
    """The three panes of a :func:`lab_view` dict as HTML: ``metrics``, ``cases`` and ``detail``."""
    head = "".join(f"<th>{_e(n)}</th>" for n in ("variant", *_SCORES, "scored"))
    rows = "".join(
        f"<tr><td><b>{_e(m['variant'])}</b></td>"
        + "".join(f"<td>{_n(m[n])}</td>" for n in _SCORES)
        + f"<td>{m['scored']}/{m['cases']}</td></tr>"
        for m in view["metrics"]
    )
    metrics = f"<div class='knowtk-lab'>{_STYLE}<table><tr>{head}</tr>{rows}</table></div>"
    two = view["left"] != view["right"]
    heads = ["case", "tool", "query", "change" if two else "outcome", f"nDCG@k {view['left']}"]
    heads += [f"nDCG@k {view['right']}", "rank"] if two else ["rank"]
    body = []
    for c in view["cases"]:
        changed = c["change"] not in ("same", "passed")
        rank = f"{c['rank_left'] or '—'} → {c['rank_right'] or '—'}" if two else f"{c['rank_left'] or '—'}"
        cells = [c["case"], c["tool"], c["query"], c["change"], _n(c["left"])]
        cells += [_n(c["right"]), rank] if two else [rank]
        body.append(f"<tr class='{'changed' if changed else ''}'>" + "".join(f"<td>{_e(x)}</td>" for x in cells))
    title = f"<p><b>cases</b>: {_e(view['left'])} vs {_e(view['right'])}, changed first</p>" if two else ""
    cases = (
        f"<div class='knowtk-lab'>{title}<table><tr>{''.join(f'<th>{_e(h)}</th>' for h in heads)}</tr>"
        f"{''.join(body)}</table></div>"
    )
    return {"metrics": metrics, "cases": cases, "detail": _detail_html(view["detail"])}


def _detail_html(d: dict[str, Any] | None) -> str:
    if d is None:
        return "<p class='muted'>Pick a case to see its hits and why each expected id is (not) there.</p>"
    parts = [
        f"<div class='knowtk-lab'>{_STYLE}<h4 style='margin:2px 0'>{_e(d['case'])} · {_e(d['variant'])}</h4>",
        f"<p>{_e(d['tool'])} {_e(repr(d['query']))} · k={d['k']} · "
        f"<b>{'PASSED' if d['passed'] else 'MISSED' if d['status'] == 'ok' else d['status'].upper()}</b></p>",
    ]
    if d["error"]:
        parts.append(f"<p style='color:#b00'>{_e(d['error'])}</p>")
    if d["expectedStatus"]:
        parts.append(f"<p>lookup status {_e(d['lookupStatus'])} (expected {_e(d['expectedStatus'])})</p>")
    scored = " · ".join(f"{n} {_n(d['metrics'][n])}" for n in _SCORES if d["metrics"].get(n) is not None)
    parts.append(f"<p class='muted'>{_e(scored)}</p>")
    rows = []
    for h in d["hits"]:
        cls = "expected" if h["expected"] else "banned" if h["must_not"] else ""
        mark = f"expected, grade {h['grade']}" if h["expected"] else ""
        if h["expected"] and h["expected"] != h["id"]:
            mark += f", counted for superseded {h['expected']}"
        mark = "MUST NOT APPEAR" if h["must_not"] else mark
        via = f" ↳ via {h['via']}" if h["via"] else ""
        rows.append(
            f"<tr class='{cls}'><td>{h['rank']}</td><td>{_e(h['id'])}{_e(via)}</td><td>{_e(h['title'])}</td>"
            f"<td>{_n(h['score'])}</td><td>{_e(mark)}</td></tr>"
        )
    head = "<tr><th>#</th><th>id</th><th>title</th><th>score</th><th></th></tr>"
    parts.append(f"<table>{head}{''.join(rows)}</table>" if rows else "<p>no hits</p>")
    why = []
    for e in d["expected"]:
        counted = f" (counted as its replacement {e['counted']})" if e["replaced"] else ""
        if e["rank"] is not None and e["rank"] <= d["k"]:
            why.append(f"<li><b>{_e(e['id'])}</b>{_e(counted)}: rank {e['rank']}</li>")
        else:
            reason = e.get("why") or {}
            why.append(
                f"<li><b>{_e(e['id'])}</b>{_e(counted)}: <b>{_e(reason.get('reason'))}</b>"
                f"<br><span class='muted'>{_e(reason.get('message'))}</span></li>"
            )
    for m in d["mustNot"]:
        seen = f"appears at rank {m['rank']}" if m["rank"] else "absent, as it must be"
        why.append(f"<li>must not appear: <b>{_e(m['id'])}</b>: {seen}</li>")
    if why:
        parts.append(f"<p><b>expected ids</b></p><ul>{''.join(why)}</ul>")
    parts.append("</div>")
    return "".join(parts)


class QueryLabWidget(W.VBox):
    """A gold set's run in a notebook. ``.result`` is the :class:`LabRun`, ``.view`` the :func:`lab_view` dict,
    ``.error`` the last refusal (shown, never raised from a callback)."""

    def __init__(
        self,
        target: Store | Workspace,
        gold: GoldSet | str | os.PathLike[str] | None = None,
        *,
        variants: list[str] | None = None,
    ) -> None:
        self.target = target
        self.gold: GoldSet | None = None
        self.result: LabRun | None = None
        self.view: dict[str, Any] | None = None
        self.error: str | None = None
        self._quiet = False
        self.path = W.Text(
            description="gold set",
            placeholder="path to a .yaml or .csv gold set",
            layout=W.Layout(width="480px"),
            value="" if gold is None or isinstance(gold, GoldSet) else os.fspath(gold),
        )
        self.load_button = W.Button(description="Load", layout=W.Layout(width="80px"))
        self.variants = W.SelectMultiple(description="variants", options=[], rows=4)
        self.run_button = W.Button(description="Run", button_style="primary", layout=W.Layout(width="80px"))
        self.left = W.Dropdown(description="compare", options=[], layout=W.Layout(width="240px"))
        self.right = W.Dropdown(description="with", options=[], layout=W.Layout(width="240px"))
        self.case = W.Select(description="case", options=[], rows=8, layout=W.Layout(width="420px"))
        self.variant = W.Dropdown(description="under", options=[], layout=W.Layout(width="240px"))
        self.message = W.HTML()
        self.metrics = W.HTML()
        self.cases = W.HTML()
        self.detail = W.HTML(_detail_html(None))
        super().__init__(
            children=[
                W.HBox([self.path, self.load_button]),
                W.HBox([self.variants, self.run_button]),
                self.message,
                self.metrics,
                W.HBox([self.left, self.right]),
                self.cases,
                W.HBox([self.case, self.variant]),
                self.detail,
            ]
        )
        self.load_button.on_click(lambda _b: self.load())
        self.run_button.on_click(lambda _b: self.run())
        for control in (self.left, self.right, self.case, self.variant):
            control.observe(self._changed, "value")
        if isinstance(gold, GoldSet):
            self._set_gold(gold, variants)
        elif gold is not None:
            self.load(variants)

    # -- actions ------------------------------------------------------------------------------------
    def load(self, variants: list[str] | None = None) -> GoldSet | None:
        """Read the gold set at ``.path``; a malformed one is shown with its file and line."""
        try:
            gold = load_gold(self.path.value.strip())
        except KnowtkError as exc:
            self._fail(exc)
            return None
        self._set_gold(gold, variants)
        return gold

    def _set_gold(self, gold: GoldSet, variants: list[str] | None) -> None:
        self.gold, self.result, self.view, self.error = gold, None, None, None
        names = [v.name for v in gold.all_variants()]
        self.variants.options = names
        self.variants.value = tuple(variants or names)
        self.message.value = f"<p>{_e(gold.name)}: {len(gold)} cases, k={gold.k}, variants {_e(', '.join(names))}</p>"
        self.metrics.value = self.cases.value = ""
        self.detail.value = _detail_html(None)

    def run(self) -> LabRun | None:
        """Run the loaded gold set under the chosen variants and show the result."""
        if self.gold is None:
            self.message.value = "<p style='color:#b00'>Load a gold set first.</p>"
            return None
        try:
            self.result = run(self.gold, self.target, variants=list(self.variants.value) or None)
        except KnowtkError as exc:
            self._fail(exc)
            return None
        self.error = None
        names = self.result.variant_names
        self._quiet = True
        try:
            self.left.options = self.right.options = self.variant.options = names
            self.left.value = names[0]
            self.right.value = names[1] if len(names) > 1 else names[0]
            self.variant.value = self.right.value
            self.case.value = None
        finally:
            self._quiet = False
        self.message.value = f"<p>ran {len(self.gold)} cases × {len(names)} variant(s)</p>"
        if self.result.problems:
            self.message.value += "".join(
                f"<p style='color:#b00'>UNSCORED {_e(p['case'])} [{_e(p['variant'])}]: {_e(p['message'])}</p>"
                for p in self.result.problems
            )
        self.render()
        return self.result

    def render(self) -> dict[str, Any] | None:
        """Rebuild ``.view`` from the controls and show it."""
        if self.result is None:
            return None
        self.view = lab_view(
            self.result, case=self.case.value, variant=self.variant.value, left=self.left.value, right=self.right.value
        )
        panes = view_html(self.view)
        self.metrics.value, self.cases.value, self.detail.value = panes["metrics"], panes["cases"], panes["detail"]
        keep = self.case.value
        self._quiet = True
        try:
            self.case.options = self.view["order"]
            self.case.value = keep if keep in self.view["order"] else None
        finally:
            self._quiet = False
        return self.view

    def _changed(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self.render()

    def _fail(self, exc: Exception) -> None:
        self.error = str(exc)
        self.message.value = f"<p style='color:#b00'><b>REFUSED</b> {_e(exc)}</p>"

    # -- where widgets do not run ---------------------------------------------------------------------
    def html(self) -> str:
        return self.message.value + self.metrics.value + self.cases.value + self.detail.value

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.html()
        return bundle

    def __repr__(self) -> str:
        name = self.gold.name if self.gold else None
        return f"<QueryLabWidget {name!r}: {'ran' if self.result else 'not run'}>"
