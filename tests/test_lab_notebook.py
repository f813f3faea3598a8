"""Notebook 06 (query lab): stored with outputs that hold nothing of the PEPs corpus; its PEPs section skips
cleanly without the corpus. tests/test_notebooks.py executes the whole notebook."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.helpers import REPO
from tests.test_notebooks import generator, outputs

NOTEBOOK = REPO / "notebooks" / "06_query_lab.ipynb"


def _texts(nb: nbformat.NotebookNode) -> str:
    parts: list[str] = []
    for o in outputs(nb):
        parts.append(o.get("text", ""))
        for mime, value in (o.get("data") or {}).items():
            if mime.startswith("text/"):
                parts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(parts)


def test_the_committed_outputs_hold_no_pep_text() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = _texts(nb)
    assert "06_query_lab.ipynb" in generator().BOOKS and "06_query_lab.ipynb" not in generator().WITHOUT_OUTPUTS
    assert "gold set 'demo': 19 cases" in text  # executed, as GitHub renders it
    assert not re.search(r"pep-\d{4}|PEP \d+", text)  # aggregate metrics only: no PEP ids, aliases or titles


def test_the_peps_section_skips_without_the_corpus(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cells = [src for kind, src in generator().BOOKS["06_query_lab.ipynb"] if kind == "code"]
    (peps_cell,) = [src for src in cells if "PEPS = " in src]
    checkout = tmp_path / "checkout"  # no shared/ beside it
    checkout.mkdir()
    monkeypatch.chdir(checkout)
    monkeypatch.delenv("KNOWTK_PEPS", raising=False)
    exec(peps_cell, {})  # the cell's imports are its own
    assert "No PEPs store (KNOWTK_PEPS, or shared/corpora/peps beside the checkout)" in capsys.readouterr().out
