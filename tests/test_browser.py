"""The notebook front ends in a real browser: JupyterLab on 127.0.0.1, Chromium from the OS, Playwright.

What a person sees, asserted on the DOM: the demo notebooks run in JupyterLab, a query typed and
sent with Enter, a row clicked (its record and why open directly under it), pages, refused
inputs, a superseded lookup, the knowl widget, and the contrast of every text against its
background, computed in the page, in the light, dark and high-contrast themes. Screenshots are
written to ``browser-artifacts/`` (git-ignored; ``KNOWTK_BROWSER_ARTIFACTS`` moves it).

Needs ``pip install -e ".[browser]"`` and Chromium at ``/usr/bin/chromium`` (Debian's
``apt-get install chromium``; ``KNOWTK_CHROMIUM`` points elsewhere). No browser is downloaded.
Without them the tests are skipped locally and fail under ``CI=true``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import knowtk
from tests.helpers import DEMO, REPO

CHROMIUM = Path(os.environ.get("KNOWTK_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("KNOWTK_BROWSER_ARTIFACTS", REPO / "browser-artifacts"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "knowtk-browser-test"
THEMES = ("JupyterLab Light", "JupyterLab Dark", "JupyterLab Dark High Contrast")
AA = 4.5  # WCAG AA contrast for normal text
VIEWPORT = {"width": 1200, "height": 1300}  # a notebook column of about 1000 px, the left sidebar closed
IDLE = "Array.from(document.querySelectorAll('.jp-StatusBar-TextItem')).some(e => e.textContent.includes('| Idle'))"
SHOWN = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in view (a workspace may hold others)
PROMPTS = f"Array.from(document.querySelectorAll('{SHOWN} .jp-CodeCell .jp-InputPrompt'))"
# every code cell has run: its prompt shows an execution count ("[7]:", not "[ ]:" or "[*]:")
ALL_RUN = PROMPTS + ".every(e => /\\[\\d+\\]/.test(e.textContent))"

# every visible text node under `root`: its colour blended over the backgrounds it sits on, and the contrast
CONTRAST_JS = """
(root) => {
  const parse = (c) => {
    const m = c && c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const page = parse(getComputedStyle(document.body).backgroundColor) || [255, 255, 255, 1];
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let out = page[3] >= 1 ? page : [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) out = over(layers[i], out);
    return out;
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const out = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el || el.closest('style, script, [disabled], .mod-disabled')) continue;
    const st = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    if (st.visibility === 'hidden' || box.width === 0 || box.height === 0) continue;
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
    const bg = background(el);
    const fg = parse(st.color);
    const shown = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
    const [a, b] = [lum(shown), lum(bg)];
    out.push({
      text: text.slice(0, 50), ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05),
      color: st.color, background: 'rgb(' + bg.slice(0, 3).map(Math.round).join(',') + ')',
      where: el.tagName.toLowerCase() + '.' + String(el.className).split(' ').slice(0, 2).join('.'),
    });
  }
  return out;
}
"""


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"Chromium is not at {CHROMIUM} (apt-get install chromium, or set KNOWTK_CHROMIUM)"
    for module in ("playwright", "jupyterlab"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[browser]')"
    return None


LAB_NOTEBOOK = "lab_scratch.ipynb"
LAB_VARIANTS = ["default", "any-words"]
LAB_CELL = f"""\
import tempfile
from pathlib import Path

import knowtk
from knowtk.lab.widget import QueryLabWidget

root = Path.cwd().parent
store = knowtk.open_store(root / "data" / "fixtures" / "demo", state_dir=tempfile.mkdtemp())
lab = QueryLabWidget(store, root / "data" / "fixtures" / "gold" / "demo.yaml", variants={LAB_VARIANTS!r})
lab.run()
lab"""


def write_lab_notebook(path: Path) -> None:
    """The QueryLabWidget of notebook 06 alone (06 runs ablations, an edit and the CLI: slow for a browser test)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(LAB_CELL)]
    nbformat.write(nb, path)


def require_browser() -> None:
    """Skip without Chromium, Playwright or JupyterLab; fail under CI=true."""
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser tests must run in CI: {reason}", pytrace=False)
        pytest.skip(reason)


@contextmanager
def jupyterlab(root: Path, base: Path) -> Iterator[str]:
    """JupyterLab serving ``root`` on 127.0.0.1 and a free port (its settings under ``base``); yields its URL."""
    settings = base / "settings" / "@jupyterlab"
    for path, values in {
        "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "notebook-extension/tracker": {"windowingMode": "none"},  # every cell in the DOM, not only those in view
    }.items():
        (settings / path).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{path}.jupyterlab-settings").write_text(json.dumps(values), "utf-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_CONFIG_DIR": str(base / "config"),
    }
    env.pop("KNOWTK_STORE", None)  # the notebooks find the store of the tree they are in
    log = (ARTIFACTS / f"jupyterlab-{base.name}.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.allow_root=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start: see {log.name}") from None
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """JupyterLab serving copies of the notebooks and the demo store, on 127.0.0.1 and a free port."""
    require_browser()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"  # the repository's layout, so the notebooks find the demo store as they do at home
    shutil.copytree(DEMO, root / "data" / "fixtures" / "demo")
    (root / "notebooks").mkdir()
    for name in ("01_quickstart.ipynb", "02_supersession_review.ipynb"):
        shutil.copy(REPO / "notebooks" / name, root / "notebooks" / name)
    shutil.copytree(REPO / "data" / "fixtures" / "gold", root / "data" / "fixtures" / "gold")
    write_lab_notebook(root / "notebooks" / LAB_NOTEBOOK)
    with jupyterlab(root, base) as url:
        yield {"url": url, "root": root}


@pytest.fixture(scope="module")
def browser(lab: dict[str, Any]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def set_theme(lab: dict[str, Any], theme: str) -> None:
    """Choose the theme as Settings → Theme does: the server keeps it for the next page."""
    raw = json.dumps({"theme": theme})
    request = urllib.request.Request(
        f"{lab['url']}/lab/api/settings/@jupyterlab/apputils-extension:themes?token={TOKEN}",
        data=json.dumps({"raw": raw}).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).close()


def run_notebook(browser: Any, lab: dict[str, Any], name: str, *, theme: str = "JupyterLab Light") -> Any:
    """A new page with notebook ``name`` open, every cell run (Run → Run All Cells), the kernel idle."""
    set_theme(lab, theme)
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(60_000)
    page.goto(f"{lab['url']}/lab/tree/notebooks/{name}?reset&token={TOKEN}")  # reset: only this notebook open
    page.wait_for_selector(".jp-Notebook")
    page.wait_for_function(IDLE)
    page.keyboard.press("Control+b")  # close the left sidebar: the notebook gets the width of the window
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()
    try:
        page.wait_for_function(ALL_RUN, timeout=120_000)
    except Exception:
        prompts = page.evaluate(PROMPTS + ".map(e => e.textContent)")
        page.screenshot(path=str(ARTIFACTS / f"stuck-{name}.png"))
        raise AssertionError(f"{name} did not run to the end: prompts {prompts}") from None
    page.wait_for_function(IDLE)
    return page


def widget(page: Any, placeholder: str) -> Any:
    """The output area of the widget whose text box has ``placeholder``."""
    out = page.locator(f"{SHOWN} .jp-OutputArea-output").filter(has=page.get_by_placeholder(placeholder))
    out.first.wait_for()
    return out.first


def send(page: Any, box: Any, text: str) -> None:
    """Type into a text box and press Enter, as a person does."""
    box.click()
    box.fill(text)
    box.press("Enter")


def shot(target: Any, name: str) -> None:
    """What the window shows with ``target`` scrolled into view (an element taller than the window is cut)."""
    target.scroll_into_view_if_needed()
    target.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def worst_contrast(page: Any, target: Any) -> list[dict[str, Any]]:
    rows = target.evaluate(CONTRAST_JS)
    assert rows, "no text found to measure"
    return sorted(rows, key=lambda r: r["ratio"])


GREP_BOX = "words to search, then Enter"
LOOKUP_BOX = "an id, a full title or an alias, then Enter"
KNOWL_BOX = "the words that name the subject, then Enter"


def test_grep_widget_enter_click_page_and_refuse(browser: Any, lab: dict[str, Any], demo_store: knowtk.Store) -> None:
    from playwright.sync_api import expect

    page = run_notebook(browser, lab, "01_quickstart.ipynb")
    try:
        grep = widget(page, GREP_BOX)
        query = grep.get_by_placeholder(GREP_BOX)
        type_box = grep.get_by_placeholder("decision, meeting")
        send(page, type_box, "")  # the notebook set type=decision; clear it
        # a query typed and sent with Enter
        expected = demo_store.grep("vector index", limit=5)
        send(page, query, "vector index")
        expect(grep).to_contain_text(f"hits 1–{len(expected['hits'])} of {expected['total']}")
        rows = grep.locator(".knowtk-row")
        expect(rows).to_have_count(len(expected["hits"]))
        for row, hit in zip(rows.all(), expected["hits"], strict=True):
            expect(row.locator(".knowtk-pick")).to_have_attribute("title", hit["title"])  # the full title on hover
            expect(row).to_contain_text(hit["id"])
            assert row.bounding_box()["height"] < 40  # compact: one line per hit
        shot(grep, "grep-1-query")
        # a row clicked: its why and its record open directly under it
        second = expected["hits"][1]
        rows.nth(1).locator(".knowtk-pick").click()
        inline = grep.locator(".knowtk-inline")
        expect(inline).to_contain_text("rank 2 of")
        expect(inline).to_contain_text(demo_store.record(second["id"])["record"]["title"])
        below = rows.nth(1).evaluate("el => el.nextElementSibling.classList.contains('knowtk-inline')")
        assert below, "the record and its why are not directly under the clicked row"
        assert "knowtk-selected" in (rows.nth(1).get_attribute("class") or "")
        # its body rendered from Markdown, wrapping between words (JupyterLab's pre breaks anywhere)
        body = inline.locator(".md")
        expect(body.locator("h2").first).to_be_visible()
        assert body.evaluate("el => getComputedStyle(el).wordBreak") == "normal"
        assert body.evaluate("el => getComputedStyle(el).overflowWrap") == "anywhere"
        shot(grep, "grep-2-row-clicked")
        # a click anywhere on a row selects it: here on its id, in the facts beside the title
        third = expected["hits"][2]
        facts = rows.nth(2).locator(".knowtk-meta").bounding_box()
        page.mouse.click(facts["x"] + facts["width"] / 2, facts["y"] + facts["height"] / 2)  # a person's click there
        expect(inline).to_contain_text(demo_store.record(third["id"])["record"]["title"])
        assert "knowtk-selected" in (rows.nth(2).get_attribute("class") or "")
        # pages
        paged = demo_store.grep("search", limit=5)
        send(page, query, "search")
        expect(grep).to_contain_text(f"hits 1–5 of {paged['total']}")
        grep.get_by_role("button", name="next ▶").click()
        expect(grep).to_contain_text(f"hits 6–10 of {paged['total']}")
        second_page = demo_store.grep("search", limit=5, offset=5)
        expect(rows.first).to_contain_text(f"6. {second_page['hits'][0]['title']}"[:40])
        shot(grep, "grep-3-page-2")
        # a refused input replaces the answer
        send(page, grep.get_by_placeholder("YYYY-MM-DD").first, "2026-13-45")
        expect(grep).to_contain_text("REFUSED")
        expect(rows).to_have_count(0)
        expect(grep).not_to_contain_text("hits 6–10")
        shot(grep, "grep-4-refused")
        send(page, grep.get_by_placeholder("YYYY-MM-DD").first, "")
        expect(grep).to_contain_text(f"hits 1–5 of {paged['total']}")
        # an empty query says why there is nothing
        send(page, query, "")
        expect(grep).to_contain_text("an empty query has no answer")
    finally:
        page.close()


def test_lookup_and_knowl_widgets(browser: Any, lab: dict[str, Any], demo_store: knowtk.Store) -> None:
    from playwright.sync_api import expect

    page = run_notebook(browser, lab, "01_quickstart.ipynb")
    try:
        lookup = widget(page, LOOKUP_BOX)
        expect(lookup).to_contain_text("AMBIGUOUS “Sam”: 2 records share this name")  # the notebook's "Sam"
        candidates = lookup.locator(".knowtk-row")
        expect(candidates).to_have_count(2)
        candidates.nth(1).locator(".knowtk-pick").click()
        expect(lookup.locator(".knowtk-inline")).to_contain_text("person-samir-haddad")
        shot(lookup, "lookup-1-candidate-clicked")
        # a superseded id: still MISSING, and the widget says where its chain ends
        send(page, lookup.get_by_placeholder(LOOKUP_BOX), "dec-2025-012")
        expect(lookup).to_contain_text("MISSING")
        expect(lookup).to_contain_text("dec-2025-012 exists, and is superseded")
        current = demo_store.explain("dec-2025-012")["chain"]["current"]
        expect(lookup).to_contain_text(f"ends at the current record {current}")
        shot(lookup, "lookup-2-superseded")
        lookup.get_by_role("button", name=f"→ look up {current}").click()
        expect(lookup).to_contain_text("FOUND")
        expect(lookup.locator(".knowtk-inline")).to_contain_text(demo_store.record(current)["record"]["title"])

        knowl = widget(page, KNOWL_BOX)
        expected = demo_store.knowl("vector index")
        send(page, knowl.get_by_placeholder(KNOWL_BOX), "vector index")  # Enter searches
        rows = knowl.locator(".knowtk-row")
        expect(rows).to_have_count(len(expected["results"]))
        first = expected["results"][0]
        # the notebook's own answer may have as many rows: wait for this query's rows, in order, before clicking
        expect(rows).to_contain_text([hit["title"][:30] for hit in expected["results"]])
        rows.first.locator(".knowtk-pick").click()
        inline = knowl.locator(".knowtk-inline")
        expect(inline).to_contain_text("provenance")
        expect(inline).not_to_contain_text("{'origin'")  # a definition list, not a dict's repr
        # the details open right under the clicked row (polled: the widget may still be re-rendering)
        expect(rows.first.locator("xpath=following-sibling::*[1]")).to_have_class(re.compile(r"\bknowtk-inline\b"))
        expect(inline).to_contain_text(first["title"])
        knowl.get_by_role("button", name="explain").click()
        expect(rows.first).to_contain_text("why: bm25")
        shot(knowl, "knowl-1-row-clicked-explain")
        send(page, knowl.get_by_placeholder("2026-03-01 or 2026-03-01T12:00:00Z"), "yesterday")
        expect(knowl).to_contain_text("REFUSED")
        expect(rows).to_have_count(0)
        shot(knowl, "knowl-2-refused")
    finally:
        page.close()


@pytest.mark.parametrize("theme", THEMES)
def test_every_text_is_readable_in_the_theme(browser: Any, lab: dict[str, Any], theme: str) -> None:
    from playwright.sync_api import expect

    page = run_notebook(browser, lab, "01_quickstart.ipynb", theme=theme)
    slug = theme.lower().replace(" ", "-")
    try:
        light = page.evaluate("document.body.dataset.jpThemeLight")
        assert light == ("true" if theme == "JupyterLab Light" else "false"), f"{theme} is not applied"
        failures = []

        def measure(name: str, target: Any) -> None:
            shot(target, f"theme-{slug}-{name}")
            failures.extend((name, t) for t in worst_contrast(page, target) if t["ratio"] < AA)

        grep = widget(page, GREP_BOX)
        grep.locator(".knowtk-row .knowtk-pick").nth(1).click()  # a selected row, its why and record body
        expect(grep.locator(".knowtk-inline .md")).to_be_visible()
        expect(grep).to_contain_text("COVERAGE INCOMPLETE")
        measure("grep", grep)  # with the clicked row still focused and under the pointer
        lookup = widget(page, LOOKUP_BOX)
        expect(lookup).to_contain_text("AMBIGUOUS")
        lookup.locator(".knowtk-row .knowtk-pick").first.hover()
        measure("lookup", lookup)
        knowl = widget(page, KNOWL_BOX)
        send(page, knowl.get_by_placeholder(KNOWL_BOX), "vector index")
        expect(knowl.locator(".knowtk-row").first).to_be_visible()
        measure("knowl", knowl)
        assert not failures, "\n".join(
            f"{name}: {t['ratio']:.2f} {t['text']!r} {t['color']} on {t['background']} ({t['where']})"
            for name, t in failures[:20]
        )
    finally:
        page.close()


def test_pictures_are_shown_at_their_own_size_in_the_column(browser: Any, lab: dict[str, Any]) -> None:
    page = run_notebook(browser, lab, "02_supersession_review.ipynb")
    try:
        column = page.locator(f"{SHOWN} .jp-OutputArea-output").first.evaluate("el => el.clientWidth")
        images = page.locator(f"{SHOWN} .jp-OutputArea-output img")
        assert images.count() >= 3
        measure = "el => ({natural: el.naturalWidth, shown: el.getBoundingClientRect().width})"
        sizes = [img.evaluate(measure) for img in images.all()]
        for i in range(len(sizes)):
            shot(images.nth(i), f"pictures-{i}")
        inline = [s for s in sizes if s["natural"] <= 1000]
        chain_widget = [s for s in sizes if s["natural"] > 1000]  # the widget's PNG: twice its screen size
        assert inline and chain_widget, sizes
        for s in inline:  # matplotlib's inline figures: at most ~1000 px, shown 1:1 (not scaled, not stretched)
            assert abs(s["shown"] - s["natural"]) <= 1 and s["shown"] <= column, (s, column)
        for s in chain_widget:  # sharp on a high-density screen, and not stretched to the column
            assert abs(s["shown"] - s["natural"] / 2) <= 1, s
    finally:
        page.close()


def test_a_stored_notebook_shows_its_widgets_before_it_runs(browser: Any, lab: dict[str, Any]) -> None:
    """Opened as stored (no cell run): each widget's HTML copy of its last state, never a ``VBox(...)`` repr."""
    from playwright.sync_api import expect

    set_theme(lab, "JupyterLab Light")
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{lab['url']}/lab/tree/notebooks/01_quickstart.ipynb?reset&token={TOKEN}")
        page.wait_for_selector(".jp-Notebook")
        page.wait_for_function(IDLE)
        outputs = page.locator(f"{SHOWN} .jp-OutputArea-output")
        expect(outputs.filter(has_text="KnowlWidget · query 'vector index sqlite'")).to_have_count(1)
        texts = [o.inner_text() for o in outputs.all()]
        assert not [t for t in texts if t.lstrip().startswith(("VBox(", "HBox("))], texts
        assert not [t for t in texts if "Error displaying widget" in t]
        knowl = outputs.filter(has_text="KnowlWidget · query")
        expect(knowl).to_contain_text("dec-2026-021")  # the stored answer's rows
        expect(knowl).not_to_contain_text("not instructions")  # the agents' provenance line is not shown
        grep = outputs.filter(has_text="GrepWidget · query 'search'")
        expect(grep).to_contain_text("COVERAGE INCOMPLETE")
        # its table as tidy as a frame's: cells left-aligned (JupyterLab right-aligns), ids on one line
        cells = grep.locator("table.hits td")
        aligned = cells.evaluate_all(
            "cs => cs.filter(c => !c.classList.contains('num')).map(c => getComputedStyle(c).textAlign)"
        )
        assert aligned and set(aligned) == {"left"}, set(aligned)
        ids = grep.locator("td.title .nowrap")
        assert ids.count() > 0 and set(ids.evaluate_all("es => es.map(e => getComputedStyle(e).whiteSpace)")) == {
            "nowrap"
        }
        expect(outputs.filter(has_text="LookupWidget · 'dec-2025-012'")).to_contain_text("dec-2026-021")
        shot(knowl, "stored-1-knowl-before-running")
    finally:
        page.close()


LAB_BOX = "path to a .yaml or .csv gold set"


def lab_expected(demo_store: knowtk.Store) -> dict[str, Any]:
    """What the lab widget of the scratch notebook shows, computed in this process."""
    from knowtk.lab import load_gold, run
    from knowtk.lab.widget import lab_view

    result = run(load_gold(REPO / "data" / "fixtures" / "gold" / "demo.yaml"), demo_store, variants=LAB_VARIANTS)
    return lab_view(result, case="gpu-budget")


def test_query_lab_widget_row_click_shows_hits_and_why_not(
    browser: Any, lab: dict[str, Any], demo_store: knowtk.Store
) -> None:
    from playwright.sync_api import expect

    view = lab_expected(demo_store)
    detail = view["detail"]
    missed = next(e for e in detail["expected"] if e["id"] == "dec-2025-009")
    assert missed["why"]["reason"] == "excluded by chain_dead_end"  # the demo gold set's failing case
    page = run_notebook(browser, lab, LAB_NOTEBOOK)
    try:
        widget_area = widget(page, LAB_BOX)
        expect(widget_area).to_contain_text("default vs any-words, changed first")
        rows = widget_area.locator(".knowtk-row")
        expect(rows).to_have_count(len(view["order"]))
        for row, case in zip(rows.all(), view["order"], strict=True):
            expect(row.locator(".knowtk-pick")).to_have_text(case)
            assert row.bounding_box()["height"] < 40  # compact: one line per case
        expect(widget_area.locator(".knowtk-inline")).to_have_count(0)  # no detail before a click
        shot(widget_area, "lab-1-run")
        # a case clicked: its hits and the why-not of each expected id open directly under its row
        row = rows.nth(view["order"].index("gpu-budget"))
        row.locator(".knowtk-pick").click()
        inline = widget_area.locator(".knowtk-inline")
        expect(inline).to_contain_text(f"gpu-budget · {detail['variant']}")
        expect(inline).to_contain_text("MISSED")
        for hit in detail["hits"]:
            expect(inline).to_contain_text(hit["id"])
        expect(inline).to_contain_text("dec-2025-009")
        expect(inline).to_contain_text("excluded by chain_dead_end")
        expect(inline).to_contain_text(missed["why"]["message"])
        assert row.evaluate("el => el.nextElementSibling.classList.contains('knowtk-inline')")
        assert "knowtk-selected" in (row.get_attribute("class") or "")
        inline.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "lab-2-case-clicked.png"))
        # another case: the detail moves under that row
        rows.first.locator(".knowtk-pick").click()
        expect(inline).to_contain_text(f"{view['order'][0]} · ")
        assert rows.first.evaluate("el => el.nextElementSibling.classList.contains('knowtk-inline')")
        # a malformed gold set path is refused, and the refusal replaces the answer
        box = widget_area.get_by_placeholder(LAB_BOX)
        box.fill("no/such/gold.yaml")
        widget_area.get_by_role("button", name="Load").click()
        expect(widget_area).to_contain_text("REFUSED")
        expect(rows).to_have_count(0)
        expect(widget_area).not_to_contain_text("changed first")
        shot(widget_area, "lab-3-refused")
    finally:
        page.close()


@pytest.mark.parametrize("theme", THEMES)
def test_query_lab_widget_is_readable_in_the_theme(browser: Any, lab: dict[str, Any], theme: str) -> None:
    from playwright.sync_api import expect

    page = run_notebook(browser, lab, LAB_NOTEBOOK, theme=theme)
    slug = theme.lower().replace(" ", "-")
    try:
        light = page.evaluate("document.body.dataset.jpThemeLight")
        assert light == ("true" if theme == "JupyterLab Light" else "false"), f"{theme} is not applied"
        widget_area = widget(page, LAB_BOX)
        widget_area.locator(".knowtk-row", has_text="gpu-budget").locator(".knowtk-pick").click()
        expect(widget_area.locator(".knowtk-inline")).to_contain_text("excluded by chain_dead_end")
        shot(widget_area, f"theme-{slug}-lab")
        inline = widget_area.locator(".knowtk-inline")
        inline.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"theme-{slug}-lab-detail.png"))
        failures = [t for t in worst_contrast(page, widget_area) if t["ratio"] < AA]
        assert not failures, "\n".join(
            f"{t['ratio']:.2f} {t['text']!r} {t['color']} on {t['background']} ({t['where']})" for t in failures[:20]
        )
    finally:
        page.close()


AT_CELL = """
import os, subprocess
from pathlib import Path
import knowtk
from knowtk.notebook import GrepWidget

top = Path({root!r})
top.mkdir(parents=True)
def git(*args, date=None):
    env = {{**os.environ, "GIT_AUTHOR_DATE": date or "", "GIT_COMMITTER_DATE": date or ""}}
    who = ["-c", "user.name=Ada", "-c", "user.email=ada@example.org"]
    subprocess.run(["git", "-C", str(top), *who, *args], check=True, capture_output=True, env=env)
def adr(name, rid, title, body, extra=""):
    text = f"---\\nid: {{rid}}\\nkind: claim\\ntype: decision\\ntitle: {{title}}\\n{{extra}}---\\n{{body}}\\n"
    (top / name).write_text(text)
git("init", "-q", "-b", "main")
(top / ".gitignore").write_text(".knowtk/\\n")
adr("0001-sqlite.md", "adr-1", "Use SQLite", "SQLite for the index.")
git("add", "-A"); git("commit", "-qm", "first", date="2026-01-10T10:00:00Z")
adr("0001-sqlite.md", "adr-1", "Use SQLite", "SQLite for the index.", "status: superseded\\nsuperseded_by: adr-2\\n")
adr("0002-postgres.md", "adr-2", "Use Postgres", "Postgres everywhere.", "supersedes: [adr-1]\\n")
git("add", "-A"); git("commit", "-qm", "postgres", date="2026-02-10T10:00:00Z")
store = knowtk.open_store(top)
store.grep("use")  # the present store as a user left it: a past is seeded from it
GrepWidget(store, known_at="2026-02-28")
"""


def test_grep_widget_known_at_reads_the_past_and_opens_a_record_written_on_demand(
    browser: Any, lab: dict[str, Any]
) -> None:
    """The grep widget at a "known at" instant, in the browser: the past answers without writing the files the
    present holds alike but the one whose record it shows (written then from Git), and another instant typed in
    the field asks the store as it stood then."""
    import nbformat
    from playwright.sync_api import expect

    from knowtk.write.past_absent import absent_files

    store = lab["root"] / "at-store" / "adr"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(AT_CELL.format(root=str(store)))]
    nbformat.write(nb, lab["root"] / "notebooks" / "known_at.ipynb")
    page = run_notebook(browser, lab, "known_at.ipynb")
    try:
        grep = widget(page, GREP_BOX)
        send(page, grep.get_by_placeholder(GREP_BOX), "postgres")
        expect(grep).to_contain_text("hits 1–1 of 1")
        expect(grep).to_contain_text("Postgres everywhere.")  # the hit's record, its body read from its file
        past = next((store / ".knowtk" / "past").glob("*/adr"))
        listed = absent_files(str(past))
        assert {"0001-sqlite.md", "0002-postgres.md"} <= set(listed)
        assert (past / "0002-postgres.md").read_text() == (store / "0002-postgres.md").read_text()
        assert not (past / "0001-sqlite.md").exists()  # no answer needed its bytes
        shot(grep, "grep-known-at")
        send(page, grep.get_by_placeholder("now, or YYYY-MM-DD", exact=True), "2026-01-31")
        expect(grep.locator(".knowtk-row")).to_have_count(0)  # no Postgres then
        send(page, grep.get_by_placeholder(GREP_BOX), "sqlite")
        expect(grep).to_contain_text("hits 1–1 of 1")
        expect(grep).to_contain_text("SQLite for the index.")
    finally:
        page.close()
