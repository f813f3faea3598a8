"""The bundled demo store (``data/fixtures/demo``) has the structure others rely on, and its derived files are current.

The Markdown files are the demo's source, edited by hand; ``scripts/make_demo_store.py`` writes what
follows from them and checks their rules. Everything here reads the files with PyYAML and plain text
handling, never through knowtk's reader (knowtk lends only its list of record keys), so the fixture is
checked independently of the code that consumes it (``test_demo_docs.py`` asks the store itself). The
notable ids asserted below are the ones documented for tests and notebooks; change them only together
with those.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from knowtk.model.profile import RECORD_KEYS
from tests.helpers import DEMO, REPO, copy_demo

SCRIPT = REPO / "scripts" / "make_demo_store.py"
STATE_DIR = ".knowtk"  # knowtk's rebuildable state; may appear when someone opens the fixture in place

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
STAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$")
DATE_FIELDS = ("occurred_at", "recorded_at", "updated_at", "due_at", "expires_at")


class TextDateLoader(yaml.SafeLoader):
    """Safe loader that keeps dates as text (an unquoted 2026-02-30 must not sink the file)."""


TextDateLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def store_files(root: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel.split("/")[0] != STATE_DIR:
            out[rel] = p.read_bytes()
    return out


def is_record_path(rel: str) -> bool:
    return rel.endswith(".md") and not any(part[0] in "._" for part in rel.split("/"))


def split_frontmatter(text: str) -> tuple[str, int] | None:
    """(frontmatter text, 1-based line of the closing ---) or None when there is no closed header."""
    lines = text.split("\n")
    if lines[0] != "---":
        return None
    try:
        end = lines.index("---", 1)
    except ValueError:
        return None
    return "\n".join(lines[1:end]), end + 1


class Rec:
    def __init__(self, path: str, meta: dict[str, Any], text: str, closing_line: int) -> None:
        self.path, self.meta, self.text = path, meta, text
        self.body = "\n".join(text.split("\n")[closing_line:])
        self.id = meta.get("id")

    def __getitem__(self, key: str) -> Any:
        return self.meta.get(key)


def load_records(root: Path) -> tuple[list[Rec], list[str]]:
    recs, broken = [], []
    for rel, data in store_files(root).items():
        if not is_record_path(rel):
            continue
        text = data.decode("utf-8")
        parts = split_frontmatter(text)
        meta = yaml.load(parts[0], Loader=TextDateLoader) if parts else None
        if not isinstance(meta, dict):
            broken.append(rel)
            continue
        recs.append(Rec(rel, meta, text, parts[1]))  # type: ignore[index]
    return recs, broken


RECORDS, BROKEN = load_records(DEMO) if DEMO.is_dir() else ([], [])
BY_ID: dict[str, Rec] = {}
for _r in RECORDS:
    BY_ID.setdefault(_r.id, _r)
FILES = store_files(DEMO) if DEMO.is_dir() else {}


def rec(rid: str) -> Rec:
    return BY_ID[rid]


def run_script(store: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the script imports this checkout's knowtk
    cmd = [sys.executable, str(SCRIPT), str(store), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)


def to_utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def valid_date_text(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    m = DATE_RE.match(value)
    if m:
        try:
            date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            return False
        return True
    if STAMP_RE.match(value):
        try:
            to_utc(value)
        except ValueError:
            return False
        return True
    return False


def dated_values(r: Rec) -> list[tuple[str, Any]]:
    vals = [(f, r[f]) for f in DATE_FIELDS if f in r.meta]
    fields = r["fields"] if isinstance(r["fields"], dict) else {}
    vals += [(f"fields.{k}", v) for k, v in fields.items() if k in ("occurred_at", "started")]
    return vals


def occurrence(r: Rec) -> str | None:
    if r["type"] == "meeting":
        return (r["fields"] or {}).get("occurred_at")
    return r["occurred_at"]


pytestmark = pytest.mark.skipif(not DEMO.is_dir(), reason="data/fixtures/demo is missing")


# --------------------------------------------------------------------------------------------
# The script: derived files and checks
# --------------------------------------------------------------------------------------------


def test_the_script_finds_the_bundled_files_as_it_would_write_them(tmp_path: Path) -> None:
    res = run_script(DEMO, "--check")
    assert res.returncode == 0, res.stderr
    out = copy_demo(tmp_path / "demo")
    res = run_script(out)
    assert res.returncode == 0, res.stderr
    assert store_files(out) == FILES
    assert len(res.stdout.strip().splitlines()) == 1
    assert "325 record files" in res.stdout and "defects: 16" in res.stdout


def test_derived_files_are_written_again_and_nothing_else_is_touched(tmp_path: Path) -> None:
    out = copy_demo(tmp_path / "demo")
    (out / ".trash" / "old.md").unlink()
    (out / "_README.md").write_text("stale\n")
    (out / STATE_DIR).mkdir()
    (out / STATE_DIR / "state.sqlite").write_bytes(b"x")
    res = run_script(out, "--check")
    assert res.returncode != 0
    assert ".trash/old.md: out of date" in res.stderr and "_README.md: out of date" in res.stderr
    assert run_script(out).returncode == 0
    assert (out / STATE_DIR / "state.sqlite").read_bytes() == b"x"
    assert store_files(out) == FILES

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    res = run_script(foreign)
    assert res.returncode != 0
    assert sorted(p.name for p in foreign.iterdir()) == ["keep.txt"]


def test_a_hand_edit_that_breaks_a_rule_is_refused(tmp_path: Path) -> None:
    out = copy_demo(tmp_path / "demo")
    with (out / "notes" / "offsite-recap.md").open("a", encoding="utf-8") as f:
        f.write("We also talked about columnar storage.\n")
    meeting = out / "meetings" / "2026-04-15-search-sync.md"
    lines = meeting.read_text(encoding="utf-8").split("\n")
    meeting.write_text("\n".join([*lines[:20], "", "", "", *lines[20:]]), encoding="utf-8")
    res = run_script(out)
    assert res.returncode != 0
    assert "the word 'columnar' is in ['dec-2025-012', 'note-offsite-recap']" in res.stderr
    assert "decisions/dec-2026-021.md: evidence lines [41, 42]" in res.stderr


# --------------------------------------------------------------------------------------------
# Layout, counts, identity
# --------------------------------------------------------------------------------------------


def test_store_config() -> None:
    cfg = yaml.safe_load(FILES["knowtk.yaml"])
    assert cfg["name"] == "demo-research"
    assert cfg["share"] is True
    assert cfg["ontology"]["meeting"]["aliases"] == ["call", "standup"]
    assert cfg["ontology"]["decision"]["aliases"] == ["adr"]
    assert cfg["ontology"]["note"]["aliases"] == ["memo"]


def test_record_counts() -> None:
    assert len(RECORDS) == 325
    assert sorted(BROKEN) == ["notes/broken-frontmatter.md", "notes/list-frontmatter.md"]
    assert Counter(r["kind"] for r in RECORDS) == {"claim": 155, "page": 117, "relationship": 53}
    assert Counter(r["type"] or r["kind"] for r in RECORDS) == {
        "action_item": 46,
        "adr": 1,
        "decision": 42,
        "event": 41,
        "finding": 25,
        "meeting": 46,
        "memo": 14,
        "note": 25,
        "person": 24,
        "project": 8,
        "relationship": 53,
    }
    assert Counter(r["status"] or "active" for r in RECORDS) == {"active": 307, "superseded": 13, "withdrawn": 5}
    folders = Counter(str(PurePosixPath(r.path).parent) for r in RECORDS)
    assert folders == {
        "claims": 112,
        "relations": 53,
        "meetings": 46,
        "notes": 32,
        "decisions": 31,
        "people": 24,
        "lab/decisions": 12,
        "projects": 8,
        "lab/notes": 6,
        "notes/archive": 1,
    }


def test_non_records_exist_and_look_like_records_only_when_they_should() -> None:
    for rel in ("_README.md", "_templates/meeting.md", ".trash/old.md"):
        assert rel in FILES and not is_record_path(rel)
    # the trashed file reuses a live id: a scanner that reads .trash/ would report a duplicate
    trash_meta = yaml.load(
        split_frontmatter(FILES[".trash/old.md"].decode())[0],  # type: ignore[index]
        Loader=TextDateLoader,
    )
    assert trash_meta["id"] == "dec-2025-012" and "status" not in trash_meta


def test_ids_valid_except_one_and_one_duplicate() -> None:
    invalid = [r.path for r in RECORDS if not (isinstance(r.id, str) and ID_RE.match(r.id))]
    assert invalid == ["notes/bad-id.md"]
    assert rec("bad id with spaces").path == "notes/bad-id.md"
    counts = Counter(r.id for r in RECORDS)
    assert {i: c for i, c in counts.items() if c > 1} == {"note-retention-draft": 2}
    assert sorted(r.path for r in RECORDS if r.id == "note-retention-draft") == [
        "notes/archive/retention-draft.md",
        "notes/retention-draft.md",
    ]


def test_frontmatter_key_order_and_required_fields() -> None:
    for r in RECORDS:
        keys = list(r.meta)
        assert keys == sorted(keys, key=RECORD_KEYS.index), r.path
        assert r["kind"] in ("page", "claim", "relationship")
        if r["kind"] == "relationship":
            assert r["from"] and r["to"] and r["relation"], r.path
        if r["status"] == "superseded":
            assert r["superseded_by"], r.path


def test_references_resolve_except_the_deliberate_missing_ones() -> None:
    ids = {r.id for r in RECORDS}
    missing = set()
    for r in RECORDS:
        refs = [*(r["entities"] or []), *(r["depends_on"] or [])]
        refs += [r[k] for k in ("owner", "source", "from", "to", "superseded_by") if r[k]]
        missing |= {(r.id, x) for x in refs if x not in ids}
    assert missing == {
        ("act-2026-02-13-pipeline-sync", "person-quentin-marsh"),
        ("rel-viktor-hale-advises-atlas-legacy", "proj-atlas-legacy"),
        ("dec-2025-030", "dec-2026-099"),
    }
    # nothing structured points at the invalid or the duplicated id
    for r in RECORDS:
        refs = [*(r["entities"] or []), *(r["depends_on"] or []), r["owner"], r["source"], r["from"], r["to"]]
        assert "note-retention-draft" not in refs and "bad id with spaces" not in refs


# --------------------------------------------------------------------------------------------
# Supersession
# --------------------------------------------------------------------------------------------

CHAINS = {
    ("dec-2025-012", "dec-2025-027", "dec-2026-008", "dec-2026-021"): "active",
    ("dec-2025-015", "dec-2026-003"): "active",
    ("dec-2025-018", "dec-2026-005", "dec-2026-015"): "withdrawn",
    ("dec-2025-009", "dec-2025-030", "dec-2026-099"): "missing",
    ("lab-dec-002", "lab-dec-004", "lab-dec-009"): "active",
    ("note-meeting-notes-whiteboard", "dec-2025-033"): "active",
}


def follow(start: str) -> tuple[list[str], str]:
    chain, seen = [start], {start}
    while True:
        r = BY_ID.get(chain[-1])
        if r is None:
            return chain, "missing"
        if r["status"] != "superseded":
            return chain, r["status"] or "active"
        nxt = r["superseded_by"]
        if nxt in seen:
            return chain, "cycle"
        chain.append(nxt)
        seen.add(nxt)


def test_supersession_chains_end_as_documented() -> None:
    targets = {r["superseded_by"] for r in RECORDS if r["superseded_by"]}
    starts = sorted(r.id for r in RECORDS if r["status"] == "superseded" and r.id not in targets)
    found = {tuple(follow(s)[0]): follow(s)[1] for s in starts}
    assert found == CHAINS
    assert max(len(c) for c, end in found.items() if end == "active") == 4
    for chain in CHAINS:
        present = [BY_ID[i] for i in chain if i in BY_ID]
        revisions = [r["revision"] or 1 for r in present]
        assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions), chain
        assert revisions[0] == 1
        for later in present[1:]:
            assert later["aliases"], f"{later.id} should repeat earlier wording in aliases"
    # the cross-scope, cross-type chain
    assert rec("note-meeting-notes-whiteboard")["type"] == "memo"
    assert rec("note-meeting-notes-whiteboard").path.startswith("notes/")
    assert rec("dec-2025-033").path.startswith("decisions/")


def test_supersession_cycle() -> None:
    a, b = rec("lab-dec-005"), rec("lab-dec-006")
    assert (a["status"], a["superseded_by"]) == ("superseded", "lab-dec-006")
    assert (b["status"], b["superseded_by"]) == ("superseded", "lab-dec-005")
    assert follow("lab-dec-005") == (["lab-dec-005", "lab-dec-006"], "cycle")
    cyclic = [r.id for r in RECORDS if r["status"] == "superseded" and follow(r.id)[1] == "cycle"]
    assert sorted(cyclic) == ["lab-dec-005", "lab-dec-006"]


# Whole words that occur in exactly these records: old wording hits only the old version.
CONFINED_WORDS = {
    "columnar": {"dec-2025-012"},
    "parquet": {"dec-2025-012", "dec-2025-027"},  # the second only in its aliases
    "hnswlib": {"dec-2025-027"},
    "hnsw": {"dec-2025-027", "dec-2026-008"},
    "centroids": {"dec-2026-008"},
    "quantization": {"dec-2026-008"},
    "reciprocal": {"dec-2026-021"},
    "elasticsearch": {"dec-2025-015"},
    "lucene": {"dec-2025-015"},
    "twenty": {"dec-2025-018"},
    "archival": {"dec-2025-018"},
    "purge": {"dec-2026-005"},
    "ombudsperson": {"dec-2026-015"},
    "preemptible": {"dec-2025-009"},
    "overage": {"dec-2025-030"},
    "tuesdays": {"lab-dec-005"},
    "asynchronous": {"lab-dec-006"},
    "monocular": {"lab-dec-002"},
    "drift": {"lab-dec-004"},
    "revalidate": {"lab-dec-009"},
    "whiteboard": {"note-meeting-notes-whiteboard"},
    "zebrafish": {"lab-log-2026-q1"},
    "offsite": {"note-offsite-recap"},
}


@pytest.mark.parametrize("word", sorted(CONFINED_WORDS))
def test_old_and_new_wording_is_confined(word: str) -> None:
    rx = re.compile(rf"\b{word}\b", re.IGNORECASE)
    hits = {r.id for r in RECORDS if rx.search(r.text)}
    broken_hits = [p for p in BROKEN if rx.search(FILES[p].decode())]
    assert hits == CONFINED_WORDS[word] and not broken_hits


def test_parquet_is_only_an_alias_in_the_second_version() -> None:
    r = rec("dec-2025-027")
    assert "Parquet shard scan" in r["aliases"]
    assert "parquet" not in r.body.lower() and "parquet" not in r["title"].lower()
    assert "vector index" not in " ".join(BY_ID[i].text.lower() for i in ("dec-2025-012", "dec-2025-027"))


@pytest.mark.parametrize("phrase", ["vector index", "budget", "retention policy", "FTS5", "café", "naïve"])
def test_common_keywords_occur_in_several_records(phrase: str) -> None:
    hits = [r.id for r in RECORDS if phrase.lower() in r.text.lower()]
    assert len(hits) >= 2, phrase


# --------------------------------------------------------------------------------------------
# Dates
# --------------------------------------------------------------------------------------------

UNQUOTED_DATE = re.compile(r"(?:^|[:\[,]\s*|-\s+)(\d{4}-\d\d?-\d\d?\S*)", re.M)


def test_every_date_is_quoted_except_the_deliberate_one() -> None:
    unquoted = []
    for rel, data in FILES.items():
        parts = split_frontmatter(data.decode()) if is_record_path(rel) else None
        if parts:
            unquoted += [(rel, m) for m in UNQUOTED_DATE.findall(parts[0])]
    assert unquoted == [("notes/offsite-recap.md", "2026-02-30")]
    # ... and PyYAML's own date resolver really rejects that file as a whole
    with pytest.raises(ValueError):
        yaml.safe_load(split_frontmatter(FILES["notes/offsite-recap.md"].decode())[0])  # type: ignore[index]
    assert rec("note-offsite-recap")["occurred_at"] == "2026-02-30"


def test_invalid_dates_are_exactly_the_deliberate_ones() -> None:
    bad = {(r.id, f, v) for r in RECORDS for f, v in dated_values(r) if not valid_date_text(v)}
    assert bad == {
        ("note-offsite-recap", "occurred_at", "2026-02-30"),
        ("act-2026-04-15-search-sync", "due_at", "2026-04-31"),
        ("note-transcription-conventions", "recorded_at", "2026-01-15T10:00:00"),
        ("note-sync-checklist", "updated_at", "2026-03-11T09:30+01:00"),
    }


def test_dates_are_concentrated_and_most_records_have_recorded_at() -> None:
    with_recorded = [r for r in RECORDS if r["recorded_at"]]
    assert len(with_recorded) >= 0.9 * len(RECORDS)
    assert sum(1 for r in RECORDS if r["updated_at"]) >= 30
    assert sum(1 for r in RECORDS if r["due_at"]) >= 50
    stamps = [
        to_utc(v) if "T" in v else datetime.fromisoformat(v).replace(tzinfo=UTC)
        for r in RECORDS
        for f, v in dated_values(r)
        if valid_date_text(v) and f != "expires_at"
    ]
    inside = [s for s in stamps if datetime(2025, 9, 1, tzinfo=UTC) <= s < datetime(2026, 7, 1, tzinfo=UTC)]
    assert len(inside) >= 0.95 * len(stamps)
    date_only = [r.id for r in RECORDS if r["type"] == "event" and DATE_RE.match(r["occurred_at"] or "")]
    assert "evt-2026-03-29-clock-change-check" in date_only and len(date_only) >= 4


def test_expiry() -> None:
    assert rec("fnd-2024-009")["expires_at"] == "2025-01-31"
    assert rec("fnd-2025-040")["expires_at"] == "2099-12-31"
    assert sorted(r.id for r in RECORDS if r["expires_at"]) == ["fnd-2024-009", "fnd-2025-040"]


DST_WEEK = {
    "mtg-2026-03-23-overnight-handover": "2026-03-23T00:15:00+01:00",
    "mtg-2026-03-27-budget-call": "2026-03-27T18:00:00-04:00",
    "mtg-2026-03-29-night-recording": "2026-03-29T01:30:00+01:00",
    "mtg-2026-03-29-release-retro": "2026-03-29T23:30:00+02:00",
    "mtg-2026-03-30-deploy-window": "2026-03-30T00:30:00+02:00",
    "mtg-2026-04-05-deadline-push": "2026-04-05T23:45:00+02:00",
    "mtg-2026-03-08-upload-watch": "2026-03-08T01:30:00-05:00",
    "evt-2026-03-08-upload-complete": "2026-03-08T03:30:00-04:00",
    "evt-2026-03-29-clock-change-check": "2026-03-29",
}


def test_daylight_saving_records() -> None:
    for rid, value in DST_WEEK.items():
        assert occurrence(rec(rid)) == value, rid
        if rid.startswith("mtg-"):
            assert occurrence(rec("evt-" + rid[4:])) == value  # its source_event claim
    # the two US-change records are one real hour apart although the wall clocks differ by two
    gap = to_utc(DST_WEEK["evt-2026-03-08-upload-complete"]) - to_utc(DST_WEEK["mtg-2026-03-08-upload-watch"])
    assert gap == timedelta(hours=1)


def _week_ids(tz: Any, monday: date) -> set[str]:
    ids = set()
    for r in RECORDS:
        value = occurrence(r)
        if isinstance(value, str) and STAMP_RE.match(value):
            local = to_utc(value).astimezone(tz).date()
            if monday <= local <= monday + timedelta(days=6):
                ids.add(r.id)
    return ids


def test_week_views_differ_between_utc_and_berlin() -> None:
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time zone database")
    monday = date(2026, 3, 23)
    in_utc, in_berlin = _week_ids(UTC, monday), _week_ids(berlin, monday)
    assert "mtg-2026-03-23-overnight-handover" in in_berlin - in_utc  # Sunday 23:15Z
    assert "mtg-2026-03-30-deploy-window" in in_utc - in_berlin  # Sunday 22:30Z, Monday in Berlin
    for rid in ("mtg-2026-03-27-budget-call", "mtg-2026-03-29-night-recording", "mtg-2026-03-29-release-retro"):
        assert rid in in_utc & in_berlin
    assert "mtg-2026-04-05-deadline-push" in _week_ids(berlin, date(2026, 3, 30))


def test_authored_offsets_match_the_real_zones() -> None:
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        zones = {
            1: zoneinfo.ZoneInfo("Europe/Berlin"),
            2: zoneinfo.ZoneInfo("Europe/Berlin"),
            -4: zoneinfo.ZoneInfo("America/New_York"),
            -5: zoneinfo.ZoneInfo("America/New_York"),
        }
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time zone database")
    checked = 0
    for r in RECORDS:
        value = occurrence(r)
        if not (isinstance(value, str) and STAMP_RE.match(value)) or value.endswith("Z"):
            continue
        authored = datetime.fromisoformat(value)
        hours = int(authored.utcoffset().total_seconds() // 3600)  # type: ignore[union-attr]
        assert authored.astimezone(zones[hours]).utcoffset() == authored.utcoffset(), (r.id, value)
        checked += 1
    assert checked >= 60


# --------------------------------------------------------------------------------------------
# Meetings and their claims
# --------------------------------------------------------------------------------------------


def test_meetings_and_source_event_claims() -> None:
    meetings = {r.id: r for r in RECORDS if r["type"] == "meeting"}
    assert len(meetings) == 46
    for m in meetings.values():
        assert m["kind"] == "page" and m.path.startswith("meetings/")
        assert STAMP_RE.match(m["fields"]["occurred_at"]) and "occurred_at" not in m.meta
        assert all(BY_ID[e]["type"] in ("person", "project") for e in m["entities"])
    events = [r for r in RECORDS if r["source_event"] is True]
    assert len(events) == 35
    for e in events:
        m = meetings[e["source"]]
        assert (e["kind"], e["type"]) == ("claim", "event")
        assert e["occurred_at"] == m["fields"]["occurred_at"]
        assert set(m["entities"]) <= set(e["entities"])
    covered = {e["source"] for e in events}
    assert {m for m in meetings if "lab-standup" in m or "reading-group" in m} == set(meetings) - covered
    others = Counter(r["source"] for r in RECORDS if r["source_event"] is False)
    assert others["mtg-2026-01-14-search-sync"] >= 3  # decision, finding, action item
    assert all(s in meetings for s in others)
    assert "evt-2026-01-14-search-sync" in BY_ID


def test_withdrawn_dependencies_and_owners() -> None:
    withdrawn = sorted(r.id for r in RECORDS if r["status"] == "withdrawn")
    assert withdrawn == [
        "act-2025-12-12-pipeline-sync",
        "dec-2026-015",
        "fnd-2025-031",
        "fnd-2026-004",
        "rel-viktor-hale-sponsors-cartographer",
    ]
    assert rec("fnd-2026-006")["depends_on"] == ["fnd-2026-004"]
    assert rec("act-2026-02-13-pipeline-sync")["owner"] == "person-quentin-marsh"
    assert rec("rel-viktor-hale-advises-atlas-legacy")["to"] == "proj-atlas-legacy"


# --------------------------------------------------------------------------------------------
# Evidence
# --------------------------------------------------------------------------------------------


def verify(loc: dict[str, Any]) -> bool:
    target = (DEMO / loc["path"]).resolve()
    if not target.is_relative_to(DEMO.resolve()) or not target.is_file():
        return False
    a, b = loc["lines"]
    lines = target.read_text(encoding="utf-8").split("\n")
    return loc["quote"] in "\n".join(lines[a - 1 : b])


def test_evidence_locators() -> None:
    results = {(r.id, i): verify(loc) for r in RECORDS for i, loc in enumerate(r["evidence"] or [])}
    unverified = sorted(k for k, ok in results.items() if not ok)
    assert unverified == [("fnd-2026-007", 0), ("fnd-2026-008", 0), ("fnd-2026-011", 0)]
    assert sum(results.values()) >= 12
    assert [verify(loc) for loc in rec("fnd-2026-010")["evidence"]] == [True] * 5
    # wrong lines: the quote is in the file, just not where the locator says
    wrong = rec("fnd-2026-007")["evidence"][0]
    assert wrong["quote"] in (DEMO / wrong["path"]).read_text()
    # outside the store, and a file that does not exist
    assert rec("fnd-2026-008")["evidence"][0]["path"] == "../outside.md"
    assert not (DEMO / rec("fnd-2026-011")["evidence"][0]["path"]).exists()


def test_line_one_is_the_opening_fence() -> None:
    loc = rec("dec-2026-003")["evidence"][0]
    lines = (DEMO / loc["path"]).read_text().split("\n")
    assert lines[0] == "---"
    assert loc["lines"][0] > split_frontmatter("\n".join(lines))[1]  # type: ignore[index]
    assert loc["quote"] in lines[loc["lines"][0] - 1]


# --------------------------------------------------------------------------------------------
# Bodies, tags, knowl fields, relationships
# --------------------------------------------------------------------------------------------


def test_one_body_over_64_kib_with_a_late_match() -> None:
    big = [r.id for r in RECORDS if len(r.body.encode()) > 64 * 1024]
    assert big == ["lab-log-2026-q1"]
    b = rec("lab-log-2026-q1").body
    assert b.encode().index(b"zebrafish") > 64 * 1024
    assert b.index("zebrafish") > 64 * 1024  # also in characters / UTF-16 units


def test_tags_are_exact_and_include_a_case_pair() -> None:
    tagged = {t: {r.id for r in RECORDS if t in (r["tags"] or [])} for t in ("ML", "ml")}
    assert tagged["ML"] and tagged["ml"] and not tagged["ML"] & tagged["ml"]
    assert "proj-lumen" in tagged["ML"] and "proj-cartographer" in tagged["ml"]


def test_alias_types_and_names() -> None:
    assert rec("dec-2026-016")["type"] == "adr"
    assert {r["type"] for r in RECORDS if r.path.startswith("notes/")} >= {"note", "memo"}
    sams = sorted(r.id for r in RECORDS if "Sam" in (r["aliases"] or []))
    assert sams == ["person-samantha-reyes", "person-samir-haddad"]  # an ambiguous alias
    assert rec("person-ada-okafor")["aliases"] == ["Ada", "A. Okafor", "AO"]


def test_knowl_fields_on_decisions() -> None:
    decisions = [r for r in RECORDS if r["type"] in ("decision", "adr")]
    assert all(r["category"] and r["origin"] and r["author"] for r in decisions)
    assert sum(1 for r in decisions if r["affected_paths"]) >= 30
    assert sum(1 for r in decisions if r["reasoning"] and r["alternatives"]) >= 20
    origins = Counter(r["origin"] for r in RECORDS if r["origin"])
    assert set(origins) == {"observed", "stated", "inferred", "imported"}


def test_relationships_summarise_with_links() -> None:
    rels = [r for r in RECORDS if r["kind"] == "relationship"]
    assert {r["relation"] for r in rels} >= {"leads", "member_of", "reviews", "mentors", "presented_at"}
    for r in rels:
        assert re.search(r"\[\[[A-Za-z0-9][A-Za-z0-9._:-]*\]\]", r.body), r.id
        assert "type" not in r.meta  # type defaults to the kind
    presented = [r for r in rels if r["relation"] == "presented_at"]
    assert all(BY_ID[r["to"]]["type"] == "meeting" for r in presented) and len(presented) == 5
