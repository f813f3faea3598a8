"""Every notebook in notebooks/ runs afresh on this checkout, shows what a reader wants, and leaves the demo alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers import DEMO, REPO, markdown_digest

NOTEBOOKS = REPO / "notebooks"
PEPS = REPO.parent / "shared" / "corpora" / "peps"
PEPS_ABSENT = "No PEPs store: set PEPS_STORE above (or KNOWTK_PEPS) to its folder. This notebook skips its cells."
ALL = sorted(NOTEBOOKS.glob("*.ipynb"))


def generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_notebooks", REPO / "scripts" / "make_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outputs(nb: nbformat.NotebookNode) -> list[dict[str, Any]]:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]


def shown(nb: nbformat.NotebookNode, mime: str) -> int:
    return sum(mime in o.get("data", {}) for o in outputs(nb))


def text(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in outputs(nb) if o["output_type"] == "stream")


def test_the_notebooks_are_there() -> None:
    names = {p.name for p in ALL}
    assert set(generator().BOOKS) <= names
    assert any(name.startswith("03_") for name in names)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_notebook_executes_afresh(path: Path) -> None:
    demo_before = markdown_digest(DEMO)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    # raises CellExecutionError, with the cell and its traceback, when any cell fails
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    assert not [o for o in outputs(nb) if o["output_type"] == "error"]
    assert markdown_digest(DEMO) == demo_before  # no notebook edits the bundled store
    if path.name.startswith("05_") and not PEPS.is_dir():
        assert PEPS_ABSENT in text(nb)
        return
    assert shown(nb, "image/png") + shown(nb, "text/html") >= 3  # tables and plots, not just code
    if path.name.startswith("05_"):
        assert "store 'python-peps'" in text(nb) and shown(nb, "image/png") >= 3
    if path.name.startswith("04_"):
        assert "the store it was copied from is unchanged: True" in text(nb)


@pytest.mark.parametrize("name", sorted(generator().BOOKS))
def test_committed_notebooks_match_the_generator_and_carry_outputs(name: str) -> None:
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    built = generator().build(generator().BOOKS[name])
    assert [(c.cell_type, c.source) for c in committed.cells] == [(c.cell_type, c.source) for c in built.cells], (
        "edit scripts/make_notebooks.py and run it"
    )
    if name in generator().WITHOUT_OUTPUTS:
        assert outputs(committed) == []  # nothing of the PEPs corpus is stored in the repository
    else:
        assert shown(committed, "image/png") + shown(committed, "text/html") >= 3  # executed, as GitHub renders them


def test_peps_notebook_says_so_when_the_corpus_is_absent(tmp_path: Path) -> None:
    repo = tmp_path / "checkout"  # a checkout with no shared/ beside it
    (repo / "data" / "fixtures" / "demo").mkdir(parents=True)
    (repo / "notebooks").mkdir()
    nb = nbformat.read(NOTEBOOKS / "05_real_corpus_peps.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(repo / "notebooks")}}
    ).execute()
    assert PEPS_ABSENT in text(nb)
    assert shown(nb, "image/png") == shown(nb, "text/html") == 0  # every other cell skipped


def _run_in(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    """Run ``nb`` in ``folder``; the kernel inherits this process's environment (KNOWTK_STORE)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    return client.execute()


def test_a_notebook_copied_anywhere_takes_its_store_from_knowtk_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copied out of the checkout: without a store it says what to set; with KNOWTK_STORE it runs."""
    from nbclient.exceptions import CellExecutionError

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    nb = nbformat.read(NOTEBOOKS / "07_review_and_fix.ipynb", as_version=4)
    with pytest.raises(CellExecutionError) as failed:
        _run_in(nb, elsewhere)
    assert "StoreUnavailable" in str(failed.value) and "KNOWTK_STORE" in str(failed.value)
    assert "StopIteration" not in str(failed.value)
    monkeypatch.setenv("KNOWTK_STORE", str(DEMO))
    before = markdown_digest(DEMO)
    done = _run_in(nbformat.read(NOTEBOOKS / "07_review_and_fix.ipynb", as_version=4), elsewhere)
    assert not [o for o in outputs(done) if o["output_type"] == "error"]
    assert "the file's bytes are back: True" in text(done)
    assert markdown_digest(DEMO) == before
