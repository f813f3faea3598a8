"""The reviewer's loop and the reader's views in JupyterLab in Chromium, driven by Playwright.

Notebook 07 on a copy: the reviewer finds the dead end, fixes it from the chain widget (Reinstate, Preview,
Confirm), sees the receipt stay, undoes it, and the file's bytes are back. The quickstart offers no change
action and leaves the checkout alone. A click on a hit's id or summary opens the record. Screenshots of the
tidied frames and pictures are written to ``browser-artifacts/`` and, with ``KNOWTK_DOCS_IMAGES=DIR``, into
``DIR`` (``docs/img`` for the pictures in docs/notebooks.md).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import knowtk
from tests.helpers import DEMO, REPO, markdown_digest
from tests.test_browser import (
    ARTIFACTS,
    GREP_BOX,
    SHOWN,
    browser,  # noqa: F401 (the module's fixture, launched once for these tests too)
    jupyterlab,
    require_browser,
    run_notebook,
    send,
    widget,
)

DOCS_IMAGES = os.environ.get("KNOWTK_DOCS_IMAGES")
REASON_BOX = "kept in the receipt"


def picture(target: Any, name: str) -> None:
    """A screenshot of ``target`` alone: into the artifacts, and into the docs' images when asked."""
    target.scroll_into_view_if_needed()
    path = ARTIFACTS / f"{name}.png"
    target.screenshot(path=str(path))
    if DOCS_IMAGES:
        Path(DOCS_IMAGES).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(DOCS_IMAGES) / f"{name}.png")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """JupyterLab over a checkout's layout holding notebooks 01, 02 and 07 and a copy of the demo store."""
    require_browser()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    base = tmp_path_factory.mktemp("review")
    root = base / "root"
    shutil.copytree(DEMO, root / "data" / "fixtures" / "demo")
    (root / "notebooks").mkdir()
    for name in ("01_quickstart.ipynb", "02_supersession_review.ipynb", "07_review_and_fix.ipynb"):
        shutil.copy(REPO / "notebooks" / name, root / "notebooks" / name)
    with jupyterlab(root, base) as url:
        yield {"url": url, "root": root}


def _stream_text(page: Any) -> str:
    return "\n".join(
        page.locator(
            f"{SHOWN} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']"
        ).all_inner_texts()
    )


def test_review_fix_receipt_and_undo_in_the_browser(browser: Any, lab: dict[str, Any]) -> None:  # noqa: F811
    from playwright.sync_api import expect

    demo = lab["root"] / "data" / "fixtures" / "demo"
    before = markdown_digest(demo)
    with knowtk.open_store(demo, state_dir=tempfile.mkdtemp(), read_only=True) as store:
        rel = store.snapshot().records["dec-2025-030"].path
    page = run_notebook(browser, lab, "07_review_and_fix.ipynb")
    try:
        found = re.search(r"working copy: (\S+)", _stream_text(page))
        assert found, "the notebook names its working copy"
        path = Path(found.group(1)) / rel
        original = path.read_bytes()  # the notebook's own fix was undone: the dead end is back
        assert original == (demo / rel).read_bytes()
        review = widget(page, REASON_BOX)
        expect(review).to_contain_text("dec-2025-030")
        review.get_by_role("button", name="Reinstate").click()
        send(page, review.get_by_placeholder(REASON_BOX), "the follow-up was never decided")
        review.get_by_role("button", name="Preview").click()
        expect(review).to_contain_text("lifts the safeguard of dec-2025-030")
        assert path.read_bytes() == original  # a preview writes nothing
        review.get_by_role("button", name="Confirm").click()
        expect(review).to_contain_text("SAVED")
        expect(review).to_contain_text("-status: superseded")
        expect(review).to_contain_text("indexed")
        assert path.read_bytes() != original
        receipt = re.search(r"receipt (rcpt-\S+)", review.inner_text())
        assert receipt, review.inner_text()
        page.wait_for_timeout(500)  # the chain is drawn again after the save: the receipt must still be there
        expect(review).to_contain_text(receipt.group(1))
        picture(review.locator(".knowtk").filter(has_text="SAVED").first, "receipt-saved")
        review.get_by_role("button", name="Undo").click()
        expect(review).to_contain_text("UNDONE")
        expect(review).to_contain_text(f"undo of {receipt.group(1)}")
        assert path.read_bytes() == original  # the file's bytes are back
        picture(review.locator(".knowtk").filter(has_text="UNDONE").first, "receipt-undone")
        assert markdown_digest(demo) == before  # the store the notebook copied was never written
        frame = page.locator(f"{SHOWN} .jp-OutputArea-output table").filter(has_text="sha256_before").first
        expect(frame.locator("span[title]").first).to_have_attribute("title", re.compile("^[0-9a-f]{64}$"))
        picture(frame, "frame-receipt")
    finally:
        page.close()


def test_the_quickstart_offers_no_change_and_a_click_on_id_or_summary_opens_the_record(
    browser: Any,  # noqa: F811
    lab: dict[str, Any],
) -> None:
    from playwright.sync_api import expect

    demo = lab["root"] / "data" / "fixtures" / "demo"
    before = markdown_digest(demo)
    page = run_notebook(browser, lab, "01_quickstart.ipynb")
    try:
        grep = widget(page, GREP_BOX)
        send(page, grep.get_by_placeholder("decision, meeting"), "")
        send(page, grep.get_by_placeholder(GREP_BOX), "vector index")
        rows = grep.locator(".knowtk-row")
        expect(rows.first).to_be_visible()
        inline = grep.locator(".knowtk-inline")
        with knowtk.open_store(demo, state_dir=tempfile.mkdtemp(), read_only=True) as store:
            hits = store.grep("vector index", limit=10)["hits"]
            titles = [store.record(h["id"])["record"]["title"] for h in hits]
        for n, part in ((2, ".knowtk-meta b"), (3, ".knowtk-meta .muted")):  # the id; the summary beside it
            rows.nth(n).scroll_into_view_if_needed()  # a person clicks what is on the screen
            box = rows.nth(n).locator(part).first.bounding_box()
            page.mouse.click(box["x"] + min(20, box["width"] / 2), box["y"] + box["height"] / 2)
            expect(inline).to_contain_text(titles[n])
            assert "knowtk-selected" in (rows.nth(n).get_attribute("class") or "")
        # read-only: no change action under the open record, and the checkout's demo is as it was
        expect(grep.get_by_role("button", name="Preview")).to_have_count(0)
        expect(grep.get_by_role("button", name="Withdraw")).to_have_count(0)
        expect(grep.locator("details.issues")).to_contain_text("COVERAGE INCOMPLETE")
        expect(grep.locator("details.issues table")).not_to_be_visible()  # one line until it is opened
        picture(grep, "grep-widget")
        # a query with no hit says why, in the widget itself
        with knowtk.open_store(demo, state_dir=tempfile.mkdtemp(), read_only=True) as store:
            why = store.grep("zenasel")["why"]
        send(page, grep.get_by_placeholder(GREP_BOX), "zenasel")
        expect(grep).to_contain_text(f"why: {why}")
        expect(rows).to_have_count(0)
        tables = page.locator(f"{SHOWN} .jp-OutputArea-output table").filter(has_text="snippet_field")
        picture(tables.first, "frame-grep")
        assert markdown_digest(demo) == before
    finally:
        page.close()


def test_the_chain_picture_in_the_browser(browser: Any, lab: dict[str, Any]) -> None:  # noqa: F811
    page = run_notebook(browser, lab, "02_supersession_review.ipynb")
    try:
        images = page.locator(f"{SHOWN} .jp-OutputArea-output img")
        assert images.count() >= 2
        picture(images.first, "chains-demo")
    finally:
        page.close()
