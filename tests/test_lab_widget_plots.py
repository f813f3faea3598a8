"""QueryLabWidget driven headless through its controls, and the lab's plots (assertions on drawn artists)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from collections.abc import Iterator
from pathlib import Path

import pytest

import knowtk
from knowtk.lab import compare, parse_gold, run
from knowtk.lab.metrics import METRICS
from knowtk.lab.plots import plot_metrics, plot_rank_changes
from knowtk.lab.widget import QueryLabWidget, lab_view, view_html
from tests.helpers import StoreBuilder

pytestmark = pytest.mark.usefixtures("close_figures")

GOLD = """\
name: zoo
k: 2
variants:
  wide: {args: {mode: any}}
cases:
  - {id: crossing, tool: knowledge_grep, args: {query: zebra crossing}, expect: a}
  - {id: road, tool: knowledge_grep, args: {query: zebra road trip}, expect: a}
  - {id: quagga, tool: knowledge_grep, args: {query: quagga}, expect: old, must_not: b}
  - {id: name, tool: knowledge_lookup, args: {query: Zebra}, status: found, expect: b}
"""


@pytest.fixture
def store(builder: StoreBuilder) -> Iterator[knowtk.Store]:
    builder.page("a", "Zebra crossing", "A zebra crossing near the road.")
    builder.page("b", "Zebra", "Facts about the zebra.")
    builder.page("old", "Quagga", "an extinct zebra", status="superseded", superseded_by="new")
    builder.page("new", "Extinct equids", "gone")
    with builder.open() as s:
        yield s


@pytest.fixture
def gold_file(tmp_path: Path) -> Path:
    path = tmp_path / "zoo.yaml"
    path.write_text(GOLD, encoding="utf-8")
    return path


def test_the_widget_loads_runs_and_shows_a_case(store: knowtk.Store, gold_file: Path) -> None:
    lab = QueryLabWidget(store, gold_file)
    assert lab.gold is not None and lab.variants.options == ("default", "wide")
    assert lab.variants.value == ("default", "wide") and lab.result is None
    lab.run_button.click()
    assert lab.result is not None and lab.view is not None
    assert [m["variant"] for m in lab.view["metrics"]] == ["default", "wide"]
    assert (lab.left.value, lab.right.value) == ("default", "wide")
    # the case list: changed first ("road" needs every word under default, any word under wide)
    assert lab.case.options[0] == "road" and lab.view["cases"][0]["change"] == "better"
    assert "default vs wide, changed first" in lab.cases.value and "hit@1" in lab.metrics.value
    lab.case.value = "road"  # a click on the case
    detail = lab.view["detail"]
    assert (detail["case"], detail["variant"]) == ("road", "wide") and detail["passed"]
    lab.variant.value = "default"
    detail = lab.view["detail"]
    assert detail["variant"] == "default" and not detail["passed"] and detail["hits"] == []
    why = detail["expected"][0]["why"]
    assert why["reason"] == "not matched (lacks trip)"
    assert "not matched (lacks trip)" in lab.detail.value and "MISSED" in lab.detail.value
    lab.case.value = "quagga"
    hits = lab.view["detail"]["hits"]
    assert hits[0]["id"] == "new" and hits[0]["expected"] == "old" and hits[0]["via"] == "old"
    assert "counted for superseded old" in lab.detail.value and "absent, as it must be" in lab.detail.value
    lab.left.value = "wide"  # the same variant on both sides: one column of outcomes
    assert lab.view["left"] == lab.view["right"] == "wide" and lab.view["cases"][0]["change"] in ("passed", "missed")
    bundle = lab._repr_mimebundle_()
    assert "text/html" in bundle and "Extinct equids" in bundle["text/html"]


def test_the_widget_shows_refusals_instead_of_raising(store: knowtk.Store, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOLD.replace("knowledge_lookup", "lookup"), encoding="utf-8")
    lab = QueryLabWidget(store)
    lab.run_button.click()
    assert "Load a gold set first" in lab.message.value
    lab.path.value = str(bad)
    lab.load_button.click()
    assert lab.gold is None and "REFUSED" in lab.message.value and f"{bad}:9" in (lab.error or "")
    lab.path.value = str(bad).replace("bad", "zoo")
    bad.with_name("zoo.yaml").write_text(GOLD.replace("expect: a}", "expect: zebar}", 1), encoding="utf-8")
    lab.load_button.click()
    lab.variants.value = ("default",)
    lab.run()
    assert lab.result is not None and lab.result.variant_names == ["default"]
    assert "UNSCORED crossing" in lab.message.value
    assert lab.view is not None and lab.view["left"] == lab.view["right"] == "default"


def test_lab_view_is_plain_data_and_view_html_renders_it(store: knowtk.Store) -> None:
    result = run(parse_gold(GOLD), store)
    view = lab_view(result, case="name", variant="default")
    assert view["detail"]["lookupStatus"] == "found" and view["detail"]["expectedStatus"] == "found"
    assert all(isinstance(h["rank"], int) for h in view["detail"]["hits"])  # no numpy or pandas scalars
    panes = view_html(view)
    assert set(panes) == {"metrics", "cases", "detail"} and "lookup status found" in panes["detail"]
    assert lab_view(result)["detail"] is None


def test_plot_metrics_draws_a_bar_per_variant_and_metric(store: knowtk.Store) -> None:
    result = run(parse_gold(GOLD), store)
    ax = result.plot()
    bars = {p.get_gid(): p.get_height() for p in ax.patches if p.get_gid()}
    assert len(bars) == 2 * len(METRICS)
    summary = result.summary()
    for variant in ("default", "wide"):
        for metric in METRICS:
            assert bars[f"metric:{variant}:{metric}"] == pytest.approx(summary[variant][metric])
    assert [t.get_text() for t in ax.get_xticklabels()] == list(METRICS)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["default", "wide"]
    with pytest.raises(knowtk.InvalidArgument, match="not a metric"):
        plot_metrics(result, metrics=("precision",))


def test_plot_rank_changes_draws_a_line_per_case(store: knowtk.Store) -> None:
    result = run(parse_gold(GOLD), store)
    table = compare(result)
    ax = plot_rank_changes(table)
    lines = {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}
    assert set(lines) == {f"case:{c}" for c in table["case"]}
    road = lines["case:road"]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == "not found"
    assert list(road.get_ydata()) == [len(labels), 1]  # not found under default, rank 1 under wide
    assert road.get_color() == "#16a34a"  # better
    labelled = {t.get_text() for t in ax.texts}  # the cases that moved are named, unchanged ones are not
    assert "road" in labelled and not labelled & set(table.loc[table["change"] == "same", "case"])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["default", "wide"]
    worse = plot_rank_changes(compare(result, left="wide", right="default"))
    back = next(line for line in worse.get_lines() if line.get_gid() == "case:road")
    assert back.get_linestyle() == "--" and back.get_color() == "#dc2626"
    with pytest.raises(knowtk.InvalidArgument, match=r"knowtk\.lab\.compare"):
        plot_rank_changes(result.to_frame())


def test_the_lab_imports_matplotlib_and_ipywidgets_only_when_used() -> None:
    import subprocess
    import sys

    code = "import sys, knowtk.lab, knowtk.lab.cli; print('matplotlib' in sys.modules, 'ipywidgets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False"]


def test_each_case_is_a_row_whose_click_opens_its_detail_under_it(store: knowtk.Store, gold_file: Path) -> None:
    lab = QueryLabWidget(store, gold_file)
    lab.run()
    assert lab.view is not None
    assert [r.key for r in lab.rows.rows] == lab.view["order"] and lab.detail not in lab.rows.children
    road = lab.rows.rows[0]
    assert road.key == "road" and "BETTER" in road.meta and "zebra road trip" in road.meta
    before = dict(lab.rows.buttons)
    lab.rows.buttons["quagga"].click()  # what a click on the row does
    assert lab.case.value == "quagga" and lab.view["detail"]["case"] == "quagga"
    children = list(lab.rows.children)
    assert children[children.index(lab.rows.boxes["quagga"]) + 1] is lab.detail  # directly under its row
    assert "absent, as it must be" in lab.detail.value
    assert lab.rows.buttons == before  # a click moves the detail; the rows are not rebuilt
    lab.case.value = "road"  # the programmatic way, the same as a click
    children = list(lab.rows.children)
    assert lab.rows.selected == "road" and children[children.index(lab.rows.boxes["road"]) + 1] is lab.detail
    lab.variant.value = "default"
    assert "not matched (lacks trip)" in lab.detail.value and lab.rows.selected == "road"
    lab.case.value = None
    assert lab.rows.selected is None and lab.detail not in lab.rows.children


def test_every_colour_is_a_theme_variable(store: knowtk.Store, gold_file: Path) -> None:
    import re

    lab = QueryLabWidget(store, gold_file)
    lab.run()
    lab.case.value = "road"
    lab.variant.value = "default"
    shown = lab.html() + lab.cases.value + "".join(r.meta for r in lab.rows.rows)
    assert 'class="knowtk"' in shown and "box bad" in shown  # the shared style sheet and its status boxes
    # a literal colour is only ever a var(--jp-...) fallback
    literal = re.findall(r"(?<!,)#[0-9a-fA-F]{3,6}\b", shown)
    assert not literal, literal
    assert all(v.startswith("var(--jp-") for v in re.findall(r"var\(--[^,)]+", shown))


def test_a_refusal_replaces_the_answer(store: knowtk.Store, gold_file: Path, tmp_path: Path) -> None:
    import shutil

    lab = QueryLabWidget(store, gold_file)
    lab.run()
    lab.case.value = "road"
    assert lab.result is not None and lab.rows.rows and "hit@1" in lab.metrics.value
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOLD.replace("knowledge_lookup", "lookup"), encoding="utf-8")
    lab.path.value = str(bad)
    lab.load_button.click()
    assert lab.result is None and lab.view is None and lab.gold is None
    assert "REFUSED" in lab.message.value and f"{bad}:9" in (lab.error or "")
    assert lab.metrics.value == lab.cases.value == "" and lab.rows.rows == [] and lab.case.value is None
    assert lab.variants.options == lab.left.options == lab.variant.options == ()  # no stale choices either
    assert "road" not in lab.html() and "REFUSED" in lab._repr_mimebundle_()["text/html"]
    lab.run_button.click()  # nothing loaded: refused, nothing shown
    assert "Load a gold set first" in lab.message.value and lab.result is None
    lab.path.value = str(gold_file)
    lab.load_button.click()
    lab.run()
    assert lab.error is None and lab.result is not None and "REFUSED" not in lab.message.value
    shutil.rmtree(store.root)  # a store error (the folder is gone): refused, and the earlier answer goes with it
    lab.run()
    assert lab.result is None and lab.rows.rows == [] and lab.metrics.value == ""
    assert "REFUSED" in lab.message.value and "the store folder does not exist" in (lab.error or "")
    assert lab.gold is not None and lab.variants.options  # the gold set stays loaded: Run again once it is back
