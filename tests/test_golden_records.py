"""Golden files: every data/fixtures/records/*.md beside its *.result.json (what the file is as a record).

Regenerate after an intended change with KNOWTK_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from knowtk.model import shapes
from knowtk.model.records import FileProblem, build_record, load_frontmatter

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "fixtures" / "records"
CASES = sorted(FIXTURES.glob("*.md"))


def as_json(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    loaded = load_frontmatter(data)
    if isinstance(loaded, FileProblem):
        return {"problem": shapes.asdict(loaded)}
    meta, body, body_line = loaded
    record, issues = build_record(path.name, hashlib.sha256(data).hexdigest(), meta, body_line)
    out: dict[str, Any] = {"body": body, "issues": [i.to_json() for i in issues], "record": None}
    if record is not None:
        fields = shapes.asdict(record)
        fields.pop("frontmatter_or_source")
        fields["dates"] = {k: v.to_json() for k, v in record.dates.items()}
        fields["expires_at"] = record.expires_at.to_json() if record.expires_at else None
        out["record"] = fields
    return out


def test_there_are_golden_cases() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_golden(path: Path) -> None:
    expected_path = path.with_suffix(".result.json")
    got = json.loads(json.dumps(as_json(path)))
    if os.environ.get("KNOWTK_UPDATE_GOLDEN"):
        expected_path.write_text(json.dumps(got, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    assert got == json.loads(expected_path.read_text())
