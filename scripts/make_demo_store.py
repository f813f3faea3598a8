#!/usr/bin/env python3
"""Check the bundled knowtk demo store and write the files derived from its records.

    python scripts/make_demo_store.py [STORE] [--check]

The demo store (STORE, by default ``data/fixtures/demo``) is a fictional research team's knowledge.
Its records are Markdown files, edited by hand; this script holds only what follows from them:

- ``.trash/old.md``: a deleted copy of ``dec-2025-012`` (no status, title marked), the file a scanner
  that reads ``.trash/`` would count as a duplicate;
- ``_README.md``: the store's guide, with the list of deliberate defects (``DEFECTS``);
- the rules the docs, notebooks and tests rely on, checked on every run: frontmatter keys known and in
  ``RECORD_KEYS`` order, date-like values quoted, one duplicate id, words confined to the versions of a
  decision that use them (``CONFINED_WORDS``), evidence locators that point at their quote.

It writes a derived file only when its bytes differ, and prints one summary line. With ``--check`` it
writes nothing and fails when a derived file is out of date. A broken rule fails either way, naming it.
All people, projects and institutions are invented. Stdlib + PyYAML + knowtk's list of record keys.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from knowtk.model.profile import RECORD_KEYS

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_STORE = REPO_ROOT / "data" / "fixtures" / "demo"
STATE_DIR = ".knowtk"  # rebuildable state written by knowtk; never read or touched here
KEY_INDEX = {k: i for i, k in enumerate(RECORD_KEYS)}

# Words that appear in exactly the listed records (whole-word, case-insensitive), so that a
# search worded like one version of a decision hits only that version.
CONFINED_WORDS: dict[str, tuple[str, ...]] = {
    "columnar": ("dec-2025-012",),
    "parquet": ("dec-2025-012", "dec-2025-027"),
    "hnswlib": ("dec-2025-027",),
    "hnsw": ("dec-2025-027", "dec-2026-008"),
    "centroids": ("dec-2026-008",),
    "quantization": ("dec-2026-008",),
    "reciprocal": ("dec-2026-021",),
    "elasticsearch": ("dec-2025-015",),
    "lucene": ("dec-2025-015",),
    "twenty": ("dec-2025-018",),
    "archival": ("dec-2025-018",),
    "purge": ("dec-2026-005",),
    "ombudsperson": ("dec-2026-015",),
    "preemptible": ("dec-2025-009",),
    "overage": ("dec-2025-030",),
    "tuesdays": ("lab-dec-005",),
    "asynchronous": ("lab-dec-006",),
    "monocular": ("lab-dec-002",),
    "drift": ("lab-dec-004",),
    "revalidate": ("lab-dec-009",),
    "whiteboard": ("note-meeting-notes-whiteboard",),
    "zebrafish": ("lab-log-2026-q1",),
    "offsite": ("note-offsite-recap",),
}

DEFECTS = {
    "invalid_id": "notes/bad-id.md (id 'bad id with spaces')",
    "duplicate_id": "notes/retention-draft.md + notes/archive/retention-draft.md (id note-retention-draft)",
    "unquoted_impossible_date": "notes/offsite-recap.md (occurred_at: 2026-02-30, unquoted)",
    "quoted_impossible_date": "claims/act-2026-04-15-search-sync.md (due_at '2026-04-31')",
    "timestamp_without_offset": "notes/transcription-conventions.md (recorded_at '2026-01-15T10:00:00')",
    "timestamp_without_seconds": "notes/sync-checklist.md (updated_at '2026-03-11T09:30+01:00')",
    "unterminated_frontmatter": "notes/broken-frontmatter.md (no closing ---)",
    "non_mapping_frontmatter": "notes/list-frontmatter.md (frontmatter is a YAML list)",
    "missing_owner": "claims/act-2026-02-13-pipeline-sync.md (owner person-quentin-marsh)",
    "missing_endpoint": "relations/rel-viktor-hale-advises-atlas-legacy.md (to proj-atlas-legacy)",
    "depends_on_withdrawn": "claims/fnd-2026-006.md (depends_on fnd-2026-004, withdrawn)",
    "dead_end_supersession": "decisions/dec-2025-030.md (superseded_by dec-2026-099, missing)",
    "supersession_cycle": "lab/decisions/lab-dec-005.md <-> lab/decisions/lab-dec-006.md",
    "evidence_wrong_lines": "claims/fnd-2026-007.md",
    "evidence_outside_store": "claims/fnd-2026-008.md (../outside.md)",
    "evidence_missing_file": "claims/fnd-2026-011.md (meetings/2026-02-17-search-sync.md)",
}
# The defects above that the checks below would otherwise report.
DUPLICATE_IDS = ["note-retention-draft"]
UNQUOTED_DATES = [("notes/offsite-recap.md", "2026-02-30")]
WRONG_EVIDENCE = {"fnd-2026-007"}

README = """\
# Demo research store

A fictional team at the Nordlicht Institute (Berlin) with partners at Bellwether College
(New York). The records are edited by hand; `scripts/make_demo_store.py` writes this file
and `.trash/old.md` from them, and checks that the deliberate defects below are still there.

Files and folders starting with `_` or `.` (like this one) are not records.

## Folders (scopes)

- `people/`, `projects/`: pages for people and projects
- `meetings/`: meeting pages; the time is in `fields.occurred_at`
- `claims/`: event claims (`source_event: true` stands for a meeting), action items, findings
- `decisions/`, `lab/decisions/`: decisions, some superseded in chains
- `relations/`: relationships between people, projects, meetings and decisions
- `notes/`, `notes/archive/`, `lab/notes/`: notes and memos

## Deliberate defects

"""
TRASHED_ID = "dec-2025-012"
TRASH_BODY = "\nDeleted copy of a columnar Parquet decision. Not a record: it lives under .trash/.\n"

DATEISH = re.compile(r"^\d{4}-\d")
UNQUOTED_DATE = re.compile(r"(?:^|[:\[,]\s*|-\s+)(\d{4}-\d\d?-\d\d?\S*)", re.M)


class TextDateLoader(yaml.SafeLoader):
    """Safe loader that keeps dates as text (the deliberate unquoted 2026-02-30 must not sink the file)."""


TextDateLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class QuotingDumper(yaml.SafeDumper):
    """Safe dumper that single-quotes every date-like string, so no loader builds a date itself."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "'" if DATEISH.match(data) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


QuotingDumper.add_representer(str, _represent_str)


def dump_meta(meta: dict[str, Any]) -> str:
    """Frontmatter as the demo writes it: keys in RECORD_KEYS order, flow lists, no line wrapping."""
    ordered = {k: meta[k] for k in sorted(meta, key=KEY_INDEX.__getitem__) if meta[k] is not None}
    return yaml.dump(
        ordered, Dumper=QuotingDumper, sort_keys=False, allow_unicode=True, default_flow_style=None, width=4096
    )


class Doc:
    """One Markdown file of the store: its text and, when its frontmatter is a mapping, that mapping."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text
        self.front: str | None = None
        self.meta: dict[str, Any] | None = None
        lines = text.split("\n")
        if lines[0] == "---" and "---" in lines[1:]:
            self.front = "\n".join(lines[1 : lines.index("---", 1)])
            try:
                loaded = yaml.load(self.front, Loader=TextDateLoader)
            except yaml.YAMLError as err:
                raise SystemExit(f"{path}: the frontmatter is not YAML: {err}") from None
            self.meta = loaded if isinstance(loaded, dict) else None

    @property
    def is_record_path(self) -> bool:
        return not any(part[0] in "._" for part in self.path.split("/"))

    @property
    def id(self) -> str:
        return str((self.meta or {}).get("id"))

    def line_of(self, needle: str) -> list[int]:
        """1-based file lines (line 1 = the opening ---) that contain ``needle``."""
        return [i for i, line in enumerate(self.text.split("\n"), 1) if needle in line]


def read_store(store: Path) -> dict[str, Doc]:
    docs = {}
    for p in sorted(store.rglob("*.md")):
        rel = p.relative_to(store).as_posix()
        if rel.split("/")[0] != STATE_DIR:
            docs[rel] = Doc(rel, p.read_text(encoding="utf-8"))
    return docs


def derived_files(docs: dict[str, Doc]) -> dict[str, str]:
    """The files this script writes, from the records and ``DEFECTS``."""
    trashed = [d for d in docs.values() if d.is_record_path and d.meta and d.meta.get("id") == TRASHED_ID]
    if len(trashed) != 1:
        raise SystemExit(f"the store needs exactly one record {TRASHED_ID} to copy into .trash/")
    meta = dict(trashed[0].meta or {})
    meta.update(status=None, superseded_by=None, title=f"{meta['title']} (deleted copy)")
    readme = README + "".join(f"- {k}: {v}\n" for k, v in DEFECTS.items())
    return {".trash/old.md": "---\n" + dump_meta(meta) + "---\n" + TRASH_BODY, "_README.md": readme}


def key_problems(records: list[Doc]) -> list[str]:
    problems = []
    for d in records:
        keys = list(d.meta or {})
        unknown = [k for k in keys if k not in KEY_INDEX]
        if unknown:
            problems.append(f"{d.path}: unknown frontmatter keys {unknown}")
        elif keys != sorted(keys, key=KEY_INDEX.__getitem__):
            problems.append(f"{d.path}: frontmatter keys not in RECORD_KEYS order")
    unquoted = [(d.path, m) for d in records for m in UNQUOTED_DATE.findall(d.front or "")]
    if unquoted != UNQUOTED_DATES:
        problems.append(f"unquoted dates {unquoted}, expected only {UNQUOTED_DATES}")
    ids = Counter(d.id for d in records)
    duplicates = sorted(i for i, c in ids.items() if c > 1)
    if duplicates != DUPLICATE_IDS:
        problems.append(f"duplicate ids {duplicates}, expected {DUPLICATE_IDS}")
    return problems


def wording_problems(records: list[Doc], broken: list[Doc]) -> list[str]:
    problems = []
    for word, expected in CONFINED_WORDS.items():
        rx = re.compile(rf"\b{re.escape(word)}\b", re.I)
        hits = sorted({d.id for d in records if rx.search(d.text)} | {d.path for d in broken if rx.search(d.text)})
        if hits != sorted(expected):
            problems.append(f"the word {word!r} is in {hits}, expected only in {list(expected)}")
    return problems


def evidence_problems(records: list[Doc], docs: dict[str, Doc]) -> list[str]:
    """Each locator holds its quote within its lines, but the deliberately wrong ones; a missing file is a defect."""
    problems = []
    for d in records:
        for ev in (d.meta or {}).get("evidence") or []:
            target = docs.get(ev["path"])
            if target is None:
                continue
            a, b = ev["lines"]
            inside = ev["quote"] in "\n".join(target.text.split("\n")[a - 1 : b])
            if inside == (d.id in WRONG_EVIDENCE):
                where = target.line_of(ev["quote"])
                problems.append(f"{d.path}: evidence lines [{a}, {b}] of {ev['path']}; the quote is on lines {where}")
    return problems


def summary(store: Path, docs: dict[str, Doc]) -> str:
    in_records = [d for d in docs.values() if d.is_record_path]
    recs = [d.meta for d in in_records if d.meta is not None]
    kinds = Counter(m["kind"] for m in recs)
    types = Counter(m.get("type") or m["kind"] for m in recs)
    statuses = Counter(m.get("status") or "active" for m in recs)

    def fmt(c: Counter[str]) -> str:
        return " ".join(f"{k}={v}" for k, v in sorted(c.items()))

    return (
        f"{store}: {len(recs)} record files + {len(in_records) - len(recs)} broken + "
        f"{len(docs) - len(in_records)} non-records | kind: {fmt(kinds)} | "
        f"type: {fmt(types)} | status: {fmt(statuses)} | defects: {len(DEFECTS)} "
        f"({', '.join(DEFECTS)})"
    )


def run(store: Path, check_only: bool) -> str:
    """Check the store, write (or with ``check_only`` compare) its derived files; the summary line."""
    if not (store / "knowtk.yaml").is_file():
        raise SystemExit(f"{store} is not the demo store: it has no knowtk.yaml")
    docs = read_store(store)
    records = [d for d in docs.values() if d.is_record_path and d.meta is not None]
    broken = [d for d in docs.values() if d.is_record_path and d.meta is None]
    problems = key_problems(records) + wording_problems(records, broken) + evidence_problems(records, docs)
    stale = {rel: text for rel, text in derived_files(docs).items() if rel not in docs or docs[rel].text != text}
    if check_only and stale:
        problems += [f"{rel}: out of date; run scripts/make_demo_store.py" for rel in stale]
    if problems:
        raise SystemExit("\n".join(problems))
    for rel, text in stale.items():
        target = store / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
        docs[rel] = Doc(rel, text)
        print(f"wrote {rel}", file=sys.stderr)
    return summary(store, docs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("store", nargs="?", type=Path, default=DEFAULT_STORE, help=f"the store (default {DEFAULT_STORE})")
    ap.add_argument("--check", action="store_true", help="write nothing; fail when a derived file is out of date")
    args = ap.parse_args(argv)
    print(run(args.store, args.check))
    return 0


if __name__ == "__main__":
    sys.exit(main())
