"""``QueryLabWidget``: load a gold set, run it, read the table, pick a case to see its hits and why-nots.

    from knowtk.lab.widget import QueryLabWidget
    lab = QueryLabWidget(store, "data/fixtures/gold/demo.yaml")
    lab.run_button.click()          # or lab.run()
    lab.case.value = "gpu-budget"   # as a click on its row: its hits, and why each expected id is missing

Everything shown comes from :func:`lab_view`, a plain dict built from the :class:`~knowtk.lab.labrun.LabRun`
(metrics per variant, the cases of two variants side by side with the changed ones first, and
the picked case's hits and why-nots); the HTML is rendered from that dict. So the widget can be
driven without a browser through its controls' ``.value`` and ``.click()``, and tested the same way.
"""

from __future__ import annotations

import html
import os
from typing import Any

import ipywidgets as W
import pandas as pd

from knowtk.errors import KnowtkError
from knowtk.lab.comparison import compare
from knowtk.lab.frames import hits_frame
from knowtk.lab.goldset import GoldSet, load_gold
from knowtk.lab.labrun import LabRun
from knowtk.lab.metrics import METRICS
from knowtk.lab.runner import run
from knowtk.lab.scored import CHECKS, ScoredRun
from knowtk.store import Store
from knowtk.ui.front import Front
from knowtk.ui.rows import Row, RowList
from knowtk.ui.style import banner, wrap
from knowtk.workspace import Workspace

__all__ = ["QueryLabWidget", "case_row", "lab_view", "view_html"]

_SCORES = (*METRICS, *CHECKS)
# Colours come from the shared notebook style (JupyterLab's --jp-* variables); a mark is always
# written out too (the change, "expected, grade 3", "MUST NOT APPEAR"), never left to colour alone.
_HINT = "<p class='muted'>Click a case to see its hits and why each expected id is (not) there.</p>"


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _n(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def lab_view(
    result: ScoredRun,
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
    cases = _compared_cases(result, left, right) if left != right else _cases_of(result, left)
    detail = _detail(result.case(case, variant or right)) if case is not None else None
    order = [c["case"] for c in cases]
    return {"left": left, "right": right, "metrics": metrics, "cases": cases, "order": order, "detail": detail}


def _compared_cases(result: ScoredRun, left: str, right: str) -> list[dict[str, Any]]:
    """The cases under two variants, changed first: nDCG@k and first rank on each side."""
    return [
        {
            "case": r["case"],
            "tool": r["tool"],
            "change": r["change"],
            "query": _queries(r["query_left"], r["query_right"]),
            "left": _plain(r["ndcg@k_left"]),
            "right": _plain(r["ndcg@k_right"]),
            "rank_left": _plain(r["rank_left"]),
            "rank_right": _plain(r["rank_right"]),
        }
        for r in compare(result, left=left, right=right).to_dict("records")
    ]


def _queries(left: str | None, right: str | None) -> str | None:
    return right if right == left else f"{left} → {right}"


def _cases_of(result: ScoredRun, variant: str) -> list[dict[str, Any]]:
    """The cases under one variant, in the gold set's order: passed, missed, or why not scored."""
    return [
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
        if c["variant"] == variant
    ]


def _detail(c: dict[str, Any]) -> dict[str, Any]:
    """One case under one variant: what was asked, its outcome, its hits marked, its expected and must-not ids."""
    keys = ("case", "variant", "tool", "query", "k", "status", "error", "passed", "lookupStatus", "expectedStatus")
    return {
        **{key: c[key] for key in keys},
        "metrics": c["metrics"],
        "hits": [{k: _plain(v) for k, v in row.items()} for row in hits_frame(c).to_dict("records")],
        "expected": c["expected"],
        "mustNot": c["mustNot"],
    }


def _plain(value: Any) -> Any:
    """pandas' missing values as None, numpy scalars as Python ones (the view is plain data)."""
    if value is pd.NA or (isinstance(value, float) and value != value):
        return None
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
    metrics = wrap(f"<table><tr>{head}</tr>{rows}</table>")
    two = view["left"] != view["right"]
    heads = ["case", "tool", "query", "change" if two else "outcome", f"nDCG@k {view['left']}"]
    heads += [f"nDCG@k {view['right']}", "rank"] if two else ["rank"]
    body = []
    for c in view["cases"]:
        cells = [_e(x) for x in (c["case"], c["tool"], c["query"])]
        cells += [_change_html(c), _n(c["left"])]
        cells += [_n(c["right"]), _e(_rank(c, two))] if two else [_e(_rank(c, two))]
        body.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    cases = wrap(
        f"{_cases_title(view)}<table><tr>{''.join(f'<th>{_e(h)}</th>' for h in heads)}</tr>{''.join(body)}</table>"
    )
    return {"metrics": metrics, "cases": cases, "detail": _detail_html(view["detail"])}


def _cases_title(view: dict[str, Any]) -> str:
    if view["left"] != view["right"]:
        return f"<p><b>cases</b>: {_e(view['left'])} vs {_e(view['right'])}, changed first</p>"
    return f"<p><b>cases</b> under {_e(view['left'])}</p>"


def _rank(c: dict[str, Any], two: bool) -> str:
    return f"{c['rank_left'] or '—'} → {c['rank_right'] or '—'}" if two else f"{c['rank_left'] or '—'}"


def _change_html(c: dict[str, Any]) -> str:
    """The change (or outcome) in words; one that needs a look (not "same", not "passed") in bold capitals."""
    return _e(c["change"]) if c["change"] in ("same", "passed") else f"<b>{_e(str(c['change']).upper())}</b>"


def case_row(c: dict[str, Any], *, two: bool) -> Row:
    """One case of a :func:`lab_view` as a compact clickable row: its id, then tool, query, change, nDCG, rank."""
    ndcg = f"{_n(c['left'])} → {_n(c['right'])}" if two else _n(c["left"])
    facts = [_e(c["tool"]), f"“{_e(c['query'])}”", _change_html(c), f"nDCG@k {ndcg}", f"rank {_e(_rank(c, two))}"]
    return Row(key=c["case"], label=c["case"], tooltip=f"{c['case']}: {c['query']}", meta=" · ".join(facts))


def _detail_html(d: dict[str, Any] | None) -> str:
    if d is None:
        return wrap(_HINT)
    outcome = "PASSED" if d["passed"] else "MISSED" if d["status"] == "ok" else str(d["status"]).upper()
    parts = [
        f"<h4 style='margin:2px 0'>{_e(d['case'])} · {_e(d['variant'])}</h4>",
        f"<p>{_e(d['tool'])} {_e(repr(d['query']))} · k={d['k']} · <b>{outcome}</b></p>",
    ]
    if d["error"]:
        parts.append(banner("bad", "ERROR", _e(d["error"])))
    if d["expectedStatus"]:
        parts.append(f"<p>lookup status {_e(d['lookupStatus'])} (expected {_e(d['expectedStatus'])})</p>")
    scored = " · ".join(f"{n} {_n(d['metrics'][n])}" for n in _SCORES if d["metrics"].get(n) is not None)
    parts.append(f"<p class='muted'>{_e(scored)}</p>")
    rows = []
    for h in d["hits"]:
        mark = f"expected, grade {h['grade']}" if h["expected"] else ""
        if h["expected"] and h["expected"] != h["id"]:
            mark += f", counted for superseded {h['expected']}"
        mark = "MUST NOT APPEAR" if h["must_not"] else mark
        via = f" <span class='via'>↳ via {_e(h['via'])}</span>" if h["via"] else ""
        rows.append(
            f"<tr><td>{h['rank']}</td><td>{_e(h['id'])}{via}</td><td>{_e(h['title'])}</td>"
            f"<td>{_n(h['score'])}</td><td><b>{_e(mark)}</b></td></tr>"
        )
    head = "<tr><th>#</th><th>id</th><th>title</th><th>score</th><th></th></tr>"
    parts.append(f"<table>{head}{''.join(rows)}</table>" if rows else "<p>no hits</p>")
    why = []
    for e in d["expected"]:
        counted = f" (counted as its replacement {e['counted']})" if e["replaced"] else ""
        if e["rank"] is not None and e["rank"] <= d["k"]:
            why.append(banner("good", f"{e['id']}{counted}", f"rank {e['rank']}"))
        else:
            reason = e.get("why") or {}
            text = f"<b>{_e(reason.get('reason'))}</b><br>{_e(reason.get('message'))}"  # muted fails AA on a box
            why.append(banner("bad", f"{e['id']}{counted}", text))
    for m in d["mustNot"]:
        seen = f"appears at rank {m['rank']}" if m["rank"] else "absent, as it must be"
        why.append(banner("bad" if m["rank"] else "good", f"must not appear: {m['id']}", _e(seen)))
    if why:
        parts.append(f"<p><b>expected ids</b></p>{''.join(why)}")
    return wrap("".join(parts))


class QueryLabWidget(Front):
    """A gold set's run in a notebook. ``.result`` is the :class:`LabRun`, ``.view`` the :func:`lab_view` dict,
    ``.error`` the last refusal (shown in place of the answer, never raised from a callback).

    Each case is a compact row (``.rows``); clicking it sets ``.case.value`` (hidden: the programmatic
    way to pick a case) and opens the case's hits and why-nots (``.detail``) directly under the row."""

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
        self._build_controls("" if gold is None or isinstance(gold, GoldSet) else os.fspath(gold))
        super().__init__(
            children=[
                W.HBox([self.path, self.load_button]),
                W.HBox([self.variants, self.run_button]),
                self.message,
                self.metrics,
                W.HBox([self.left, self.right, self.variant]),
                self.cases,
                self.rows,
                self.case,
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

    def _build_controls(self, path: str) -> None:
        """The gold set's path, the variants to run, the two to compare, and the panes the answer fills."""
        self.path = W.Text(
            description="gold set",
            placeholder="path to a .yaml or .csv gold set",
            layout=W.Layout(width="480px"),
            value=path,
        )
        self.load_button = W.Button(description="Load", layout=W.Layout(width="80px"))
        self.variants = W.SelectMultiple(description="variants", options=[], rows=4)
        self.run_button = W.Button(description="Run", button_style="primary", layout=W.Layout(width="80px"))
        self.left = W.Dropdown(description="compare", options=[], layout=W.Layout(width="240px"))
        self.right = W.Dropdown(description="with", options=[], layout=W.Layout(width="240px"))
        self.variant = W.Dropdown(description="case under", options=[], layout=W.Layout(width="240px"))
        # the picked case: set by a row's click, or by code (``lab.case.value = "gpu-budget"``); the rows show it
        self.case = W.Select(description="case", options=[], layout=W.Layout(display="none"))
        self.message = W.HTML()
        self.metrics = W.HTML()
        self.cases = W.HTML()
        self.detail = W.HTML(_detail_html(None))
        self.rows = RowList(self.detail, self._row_clicked)

    # -- actions ------------------------------------------------------------------------------------
    def load(self, variants: list[str] | None = None) -> GoldSet | None:
        """Read the gold set at ``.path``; a malformed one is refused, with its file and line."""
        try:
            gold = load_gold(self.path.value.strip())
        except KnowtkError as exc:
            self._fail(str(exc))
            return None
        self._set_gold(gold, variants)
        return gold

    def _set_gold(self, gold: GoldSet, variants: list[str] | None) -> None:
        self._clear()
        self.gold = gold
        names = [v.name for v in gold.all_variants()]
        self.variants.options = names
        self.variants.value = tuple(variants or names)
        self.message.value = wrap(
            f"<p>{_e(gold.name)}: {len(gold)} cases, k={gold.k}, variants {_e(', '.join(names))}</p>"
        )

    def run(self) -> LabRun | None:
        """Run the loaded gold set under the chosen variants and show the result."""
        if self.gold is None:
            self._fail("Load a gold set first.")
            return None
        try:
            result = run(self.gold, self.target, variants=list(self.variants.value) or None)
        except KnowtkError as exc:
            self._fail(str(exc), keep_gold=True)
            return None
        self.result, self.error = result, None
        names = result.variant_names
        self._quiet = True
        try:
            self.left.options = self.right.options = self.variant.options = names
            self.left.value = names[0]
            self.right.value = names[1] if len(names) > 1 else names[0]
            self.variant.value = self.right.value
            self.case.value = None
        finally:
            self._quiet = False
        message = f"<p>ran {len(self.gold)} cases × {len(names)} variant(s)</p>"
        message += "".join(
            banner("warn", f"UNSCORED {p['case']} [{p['variant']}]:", _e(p["message"])) for p in result.problems
        )
        self.message.value = wrap(message)
        self.render()
        return self.result

    def render(self) -> dict[str, Any] | None:
        """Rebuild ``.view`` from the controls and show it: the picked case's detail under its row."""
        if self.result is None:
            return None
        self.view = lab_view(
            self.result, case=self.case.value, variant=self.variant.value, left=self.left.value, right=self.right.value
        )
        panes = view_html(self.view)
        two = self.view["left"] != self.view["right"]
        self.metrics.value, self.detail.value = panes["metrics"], panes["detail"]
        self.cases.value = wrap(_cases_title(self.view) + _HINT)
        rows = [case_row(c, two=two) for c in self.view["cases"]]
        keep = self.case.value if self.case.value in self.view["order"] else None
        if rows != self.rows.rows:  # new rows only when the table changed; a click only moves the detail
            self.rows.set_rows(rows, selected=keep)
        else:
            self.rows.mark(keep)
        self._quiet = True
        try:
            self.case.options = self.view["order"]
            self.case.value = keep
        finally:
            self._quiet = False
        return self.view

    def _row_clicked(self, key: str | None) -> None:
        self.case.value = key  # observed: render() fills the detail under the row

    def _changed(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self.render()

    def _clear(self) -> None:
        """No answer shown: no run, no metrics, no cases, no detail."""
        self.gold = self.result = self.view = None
        self.error = None
        self.metrics.value = self.cases.value = ""
        self.detail.value = _detail_html(None)
        self.rows.set_rows([])
        self._quiet = True
        try:  # no choices left over from an earlier gold set or run
            self.case.options = self.left.options = self.right.options = self.variant.options = []
            self.case.value = None
        finally:
            self._quiet = False

    def _fail(self, reason: str, *, keep_gold: bool = False) -> None:
        """A refusal replaces the answer: the earlier run is gone from the view and from ``.result``.
        A refused run keeps its loaded gold set (Run again once the store is back); a refused load does not."""
        gold = self.gold if keep_gold else None
        self._clear()
        if gold is None:
            self.variants.options = []
        self.gold, self.error = gold, reason
        self.message.value = wrap(banner("bad", "REFUSED", _e(reason)))

    # -- where widgets do not run ---------------------------------------------------------------------
    def html(self) -> str:
        """A static copy of what is shown: the message, the metrics, the cases table and the picked case."""
        if self.view is None:
            return self.message.value
        panes = view_html(self.view)
        return self.message.value + panes["metrics"] + panes["cases"] + panes["detail"]

    def __repr__(self) -> str:
        name = self.gold.name if self.gold else None
        return f"<QueryLabWidget {name!r}: {'ran' if self.result else 'not run'}>"
