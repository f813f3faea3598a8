#!/usr/bin/env python3
"""Write the bundled knowtk demo store: a fictional research team's knowledge.

    python scripts/make_demo_store.py [OUT_DIR] [--seed N]

OUT_DIR defaults to ``data/fixtures/demo`` (relative to the repository root),
the seed to ``DEFAULT_SEED``. The same seed gives byte-identical files: nothing
reads the clock, every collection that reaches the output is ordered
explicitly, and all randomness comes from one ``random.Random(seed)``.

The store follows ``shared/spec/STORE.md`` section 1. Notable records (the
supersession chains, the cycle, the evidence cases, the defects and the
daylight-saving week) have fixed ids and dates whatever the seed; the seed
varies attendees, filler prose, recording times and the generated findings.
Deliberate defects are listed in ``DEFECTS`` and in the store's ``_README.md``.

All people, projects and institutions are invented. Stdlib + PyYAML only.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import yaml

from knowtk.model.recordkeys import RECORD_KEYS

DEFAULT_SEED = 20260329
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "fixtures" / "demo"
STATE_DIR = ".knowtk"  # rebuildable state written by knowtk; never touched here

KEY_INDEX = {k: i for i, k in enumerate(RECORD_KEYS)}
DATEISH = re.compile(r"^\d{4}-\d")

# Words that appear in exactly the listed records (whole-word, case-insensitive), so that a
# search worded like one version of a decision hits only that version. Checked on every run.
RESERVED_WORDS: dict[str, tuple[str, ...]] = {
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
NON_RECORDS = ("_README.md", "_templates/meeting.md", ".trash/old.md")

# ---------------------------------------------------------------------------------------------
# Cast (fictional)
# ---------------------------------------------------------------------------------------------

# slug, full name, first name, aliases, role, city
PEOPLE: list[tuple[str, str, str, list[str], str, str]] = [
    ("ada-okafor", "Ada Okafor", "Ada", ["Ada", "A. Okafor", "AO"], "Principal investigator", "Berlin"),
    (
        "bruno-castellanos",
        "Bruno Castellanos",
        "Bruno",
        ["Bruno", "B. Castellanos"],
        "Research engineer, search",
        "Berlin",
    ),
    ("chiara-valenti", "Chiara Valenti", "Chiara", ["Chiara", "C. Valenti"], "Annotation tooling lead", "Berlin"),
    ("dmitri-volkov", "Dmitri Volkov", "Dmitri", ["Dmitri", "D. Volkov", "DV"], "Data engineer", "Berlin"),
    ("elif-sahin", "Elif Şahin", "Elif", ["Elif", "E. Şahin", "Elif Sahin"], "PhD student, eye tracking", "Berlin"),
    ("farah-nazari", "Farah Nazari", "Farah", ["Farah", "F. Nazari"], "Research engineer, evaluation", "Berlin"),
    (
        "gustav-lindqvist",
        "Gustav Lindqvist",
        "Gustav",
        ["Gustav", "G. Lindqvist"],
        "Grants and finance coordinator",
        "Berlin",
    ),
    ("hana-kobayashi", "Hana Kobayashi", "Hana", ["Hana", "H. Kobayashi"], "Postdoc, reading research", "Berlin"),
    ("ines-moreau", "Inès Moreau", "Inès", ["Inès", "Ines Moreau", "I. Moreau"], "Field study lead", "Berlin"),
    (
        "jonah-whitfield",
        "Jonah Whitfield",
        "Jonah",
        ["Jonah", "J. Whitfield"],
        "Collaborator at Bellwether College",
        "New York",
    ),
    ("kwame-asante", "Kwame Asante", "Kwame", ["Kwame", "K. Asante"], "Lab technician", "Berlin"),
    ("lena-brandt", "Lena Brandt", "Lena", ["Lena", "L. Brandt", "LB"], "Lab manager", "Berlin"),
    ("mateus-oliveira", "Mateus Oliveira", "Mateus", ["Mateus", "M. Oliveira"], "Student assistant, search", "Berlin"),
    ("nadia-rahman", "Nadia Rahman", "Nadia", ["Nadia", "N. Rahman"], "Annotation coordinator", "Berlin"),
    ("oskar-nieminen", "Oskar Nieminen", "Oskar", ["Oskar", "O. Nieminen"], "Infrastructure engineer", "Berlin"),
    ("priya-raman", "Priya Raman", "Priya", ["Priya", "P. Raman"], "Data steward", "Berlin"),
    ("rafael-duarte", "Rafael Duarte", "Rafael", ["Rafa", "R. Duarte"], "Speech pipeline engineer", "Berlin"),
    ("samir-haddad", "Samir Haddad", "Samir", ["Sam", "Samir", "S. Haddad"], "Research engineer, ranking", "Berlin"),
    (
        "samantha-reyes",
        "Samantha Reyes",
        "Samantha",
        ["Sam", "Samantha", "S. Reyes"],
        "Transcription quality lead",
        "New York",
    ),
    (
        "tomasz-wrobel",
        "Tomasz Wróbel",
        "Tomasz",
        ["Tomek", "T. Wróbel", "Tomasz Wrobel"],
        "PhD student, eye tracking",
        "Berlin",
    ),
    ("uma-krishnan", "Uma Krishnan", "Uma", ["Uma", "U. Krishnan"], "Ethics and compliance advisor", "Berlin"),
    ("viktor-hale", "Viktor Hale", "Viktor", ["Viktor", "V. Hale"], "Department head", "Berlin"),
    ("wen-zhao", "Wen Zhao", "Wen", ["Wen", "W. Zhao", "WZ"], "Postdoc, findings graph", "Berlin"),
    ("zoe-lefevre", "Zoë Lefèvre", "Zoë", ["Zoë", "Zoe Lefevre", "Z. Lefèvre"], "Visiting researcher", "Berlin"),
]
FIRST = {p[0]: p[2] for p in PEOPLE}
FULL = {p[0]: p[1] for p in PEOPLE}


def pid(slug: str) -> str:
    return f"person-{slug}"


# slug, title, aliases, lead, members, tags, summary
PROJECTS: list[tuple[str, str, list[str], str, list[str], list[str], str]] = [
    (
        "lumen",
        "Lumen: search over interview transcripts",
        ["Lumen"],
        "ada-okafor",
        ["bruno-castellanos", "farah-nazari", "mateus-oliveira", "samir-haddad", "wen-zhao"],
        ["search", "ML"],
        "Keyword and similar-passage search over the team's interview transcripts.",
    ),
    (
        "tessera",
        "Tessera annotation tool",
        ["Tessera"],
        "chiara-valenti",
        ["ines-moreau", "nadia-rahman", "priya-raman", "uma-krishnan"],
        ["annotation"],
        "The web tool the annotators use to code transcripts.",
    ),
    (
        "halcyon",
        "Halcyon eye-tracking reading study",
        ["Halcyon"],
        "lena-brandt",
        ["elif-sahin", "hana-kobayashi", "kwame-asante", "tomasz-wrobel", "zoe-lefevre"],
        ["eye-tracking", "lab"],
        "A reading study that records gaze while participants read interview excerpts.",
    ),
    (
        "quarry",
        "Quarry ingestion and transcription pipeline",
        ["Quarry"],
        "dmitri-volkov",
        ["rafael-duarte", "oskar-nieminen", "samantha-reyes"],
        ["infra", "pipeline"],
        "Turns field recordings into diarized, reviewed transcripts.",
    ),
    (
        "meridian",
        "Meridian grant administration",
        ["Meridian"],
        "gustav-lindqvist",
        ["viktor-hale", "jonah-whitfield"],
        ["budget", "grant"],
        "Budget, hiring and reporting for the joint grant with Bellwether College.",
    ),
    (
        "cartographer",
        "Cartographer findings graph",
        ["Cartographer"],
        "wen-zhao",
        ["hana-kobayashi", "samir-haddad"],
        ["ml", "graph"],
        "Links findings, decisions and sources into a graph the team can browse.",
    ),
    (
        "fieldnotes",
        "Fieldnotes interview study",
        ["Fieldnotes"],
        "ines-moreau",
        ["nadia-rahman", "uma-krishnan", "samantha-reyes"],
        ["fieldwork", "privacy"],
        "The interview study that produces the recordings everyone else works on.",
    ),
    (
        "beacon",
        "Beacon public dataset release",
        ["Beacon"],
        "priya-raman",
        ["uma-krishnan", "dmitri-volkov", "jonah-whitfield"],
        ["data-release", "privacy"],
        "Preparing a de-identified slice of the corpus for public release.",
    ),
]
PROJ = {p[0]: p for p in PROJECTS}

# ---------------------------------------------------------------------------------------------
# Time helpers (EU and US daylight-saving rules, computed without a tz database)
# ---------------------------------------------------------------------------------------------


def _last_sunday(year: int, month: int) -> date:
    d = date(year, month, 31)
    return d - timedelta(days=(d.weekday() - 6) % 7)


def _nth_sunday(year: int, month: int, n: int) -> date:
    d = date(year, month, 1)
    d += timedelta(days=(6 - d.weekday()) % 7)
    return d + timedelta(weeks=n - 1)


def zone_offset_hours(local: datetime, zone: str) -> int:
    """UTC offset of a local wall time in Europe/Berlin or America/New_York."""
    y = local.year
    if zone == "Berlin":
        start = datetime.combine(_last_sunday(y, 3), time(2))
        end = datetime.combine(_last_sunday(y, 10), time(3))
        return 2 if start <= local < end else 1
    if zone == "New York":
        start = datetime.combine(_nth_sunday(y, 3, 2), time(2))
        end = datetime.combine(_nth_sunday(y, 11, 1), time(2))
        return -4 if start <= local < end else -5
    raise ValueError(zone)


def stamp(local: datetime, zone: str, as_utc: bool = False) -> str:
    """Timestamp with seconds and an explicit offset, written as someone in ``zone`` would."""
    off = zone_offset_hours(local, zone)
    if as_utc:
        return (local - timedelta(hours=off)).strftime("%Y-%m-%dT%H:%M:%SZ")
    sign = "+" if off >= 0 else "-"
    return local.strftime("%Y-%m-%dT%H:%M:%S") + f"{sign}{abs(off):02d}:00"


def to_utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def z(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def day(text: str) -> date:
    return date.fromisoformat(text[:10])


# ---------------------------------------------------------------------------------------------
# Documents and YAML
# ---------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Safe dumper that single-quotes every date-like string, so no loader builds a date itself."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "'" if DATEISH.match(data) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_meta(meta: dict[str, Any]) -> str:
    unknown = [k for k in meta if k not in KEY_INDEX]
    if unknown:
        raise ValueError(f"unknown frontmatter keys {unknown}")
    ordered = {k: meta[k] for k in sorted(meta, key=KEY_INDEX.__getitem__) if meta[k] is not None}
    return yaml.dump(ordered, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=None, width=4096)


@dataclass
class Doc:
    path: str
    meta: dict[str, Any] | None = None
    body: str = ""
    raw: str | None = None  # full file text, for deliberately broken files
    unquote: tuple[str, ...] = ()  # 'key: value' pairs to write unquoted (the deliberate bad date)
    _text: str | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        assert self.meta is not None
        return str(self.meta["id"])

    def text(self) -> str:
        if self._text is None:
            if self.raw is not None:
                self._text = self.raw
            else:
                assert self.meta is not None
                front = dump_meta(self.meta)
                for pair in self.unquote:
                    key, value = pair.split(": ", 1)
                    quoted = f"{key}: '{value}'\n"
                    if front.count(quoted) != 1:
                        raise ValueError(f"cannot unquote {pair!r} in {self.path}")
                    front = front.replace(quoted, f"{key}: {value}\n")
                self._text = "---\n" + front + "---\n" + self.body
        return self._text

    def line_of(self, needle: str) -> int:
        """1-based file line (line 1 = the opening ---) of the only line containing ``needle``."""
        hits = [i for i, line in enumerate(self.text().split("\n"), 1) if needle in line]
        if len(hits) != 1:
            raise ValueError(f"{needle!r} occurs on lines {hits} of {self.path}")
        return hits[0]


def body(title: str, *parts: str) -> str:
    chunks = [f"# {title}", *(p.strip("\n") for p in parts if p)]
    return "\n" + "\n\n".join(chunks) + "\n"


def links(ids: list[str]) -> str:
    return ", ".join(f"[[{i}]]" for i in ids)


# ---------------------------------------------------------------------------------------------
# Filler prose
# ---------------------------------------------------------------------------------------------

THINGS = [
    "annotation backlog",
    "transcript queue",
    "participant recruitment",
    "ethics amendment",
    "poster draft",
    "GPU reservations",
    "budget forecast",
    "dataset card",
    "evaluation harness",
    "reading list",
    "consent tracker",
    "backup job",
    "search latency dashboard",
    "speaker diarization",
    "codebook wiki",
    "interview schedule",
    "lab server upgrade",
    "conference submission",
    "travel requests",
    "stimulus set",
    "gold query set",
    "ranking experiments",
    "annotation guidelines",
    "room booking sheet",
    "release checklist",
]
PROJECT_THINGS: dict[str | None, list[str]] = {
    "lumen": [
        "gold query set",
        "ranking experiments",
        "search latency dashboard",
        "index rebuild",
        "query logs",
        "evaluation harness",
        "GPU reservations",
    ],
    "halcyon": [
        "participant recruitment",
        "room booking sheet",
        "stimulus set",
        "gaze exports",
        "voucher sheet",
        "tracker maintenance",
    ],
    "tessera": ["annotation backlog", "annotation guidelines", "agreement report", "codebook wiki", "consent tracker"],
    "meridian": ["budget forecast", "spending report", "hiring plan", "travel requests", "grant report"],
    "quarry": ["transcript queue", "speaker diarization", "backup job", "staging bucket", "transcription batch"],
    "cartographer": ["findings graph", "link extraction", "reading list", "evaluation harness"],
    "fieldnotes": ["interview schedule", "consent tracker", "ethics amendment", "field recordings"],
    "beacon": ["release checklist", "dataset card", "de-identification pass", "ethics amendment"],
    None: ["reading list", "poster draft", "conference submission", "slides"],
}
FILLER = [
    "{p} walked through the {t} and flagged {n} open questions.",
    "The {t} is on track; {p} will post the numbers in the team channel.",
    "{p} asked whether the {t} could wait until the {t2} is settled.",
    "We agreed to revisit the {t} next time, once {p} has the figures.",
    "{p} showed a short demo of the {t}; the group liked the new layout.",
    "Nobody objected to parking the {t} for two weeks.",
    "{p} reminded everyone that the {t} still needs a second reviewer.",
    "The {t} slipped by a few days because of the {t2}.",
    "{p} and {p2} will pair on the {t} later this week.",
    "Open question from {p}: who owns the {t} after the summer?",
    "{p} noted that the {t} numbers look better than last month.",
    "Short discussion of the {t}; no decision needed today.",
    "{p} estimated {n} more days of work on the {t}.",
    "The {t} and the {t2} share a deadline, so {p} will check for clashes.",
]
FINDINGS = [
    ("The {t} is behind plan", "{p} counted {n} open items on the {t}, more than the plan allowed for."),
    ("The {t} needs a second owner", "Only {p} knows how the {t} works; a holiday would stall it."),
    ("Numbers for the {t} improved", "{p} reported that the {t} numbers improved for the third month running."),
    ("The {t} depends on the {t2}", "{p} found that the {t} cannot finish before the {t2} does."),
    ("The {t} costs more time than estimated", "{p} logged {n} hours on the {t} against an estimate of half."),
]


class Prose:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def sentence(self, people: list[str], things: list[str] | None = None) -> str:
        r = self.rng
        p, p2 = r.sample(people, 2) if len(people) >= 2 else (people[0], people[0])
        t, t2 = r.sample(things or THINGS, 2)
        tmpl = r.choice(FILLER)
        return tmpl.format(p=FIRST[p], p2=FIRST[p2], t=t, t2=t2, n=r.randint(2, 9))

    def paragraph(self, people: list[str], lo: int = 2, hi: int = 4, things: list[str] | None = None) -> list[str]:
        return [self.sentence(people, things) for _ in range(self.rng.randint(lo, hi))]


# ---------------------------------------------------------------------------------------------
# Meetings
# ---------------------------------------------------------------------------------------------

SERIES: dict[str, dict[str, Any]] = {
    "search-sync": {
        "title": "Search sync",
        "project": "lumen",
        "zone": "Berlin",
        "hm": (15, 0),
        "weekday": 2,
        "utc": False,
        "event": True,
        "location": "Room 2.14 and video",
        "pool": ["ada-okafor", "bruno-castellanos", "farah-nazari", "mateus-oliveira", "samir-haddad", "wen-zhao"],
        "intro": "Weekly sync of the Lumen search team.",
        "agenda": ["Ranking experiments", "Index health", "Gold query set", "Open pull requests", "AOB"],
        "tasks": [
            "re-run the gold-set evaluation",
            "write up the latency numbers",
            "review the ranking pull request",
            "update the search stack overview",
            "check the index rebuild logs",
        ],
        "dates": [
            "2025-09-17",
            "2025-10-08",
            "2025-10-29",
            "2025-11-19",
            "2025-12-10",
            "2026-01-14",
            "2026-02-04",
            "2026-02-18",
            "2026-03-04",
            "2026-04-15",
            "2026-05-13",
            "2026-06-10",
        ],
    },
    "lab-standup": {
        "title": "Lab standup",
        "project": "halcyon",
        "zone": "Berlin",
        "hm": (9, 30),
        "weekday": 0,
        "utc": False,
        "event": False,
        "location": "Eye-tracking lab, room 0.07",
        "pool": ["lena-brandt", "elif-sahin", "hana-kobayashi", "kwame-asante", "tomasz-wrobel", "zoe-lefevre"],
        "intro": "Monday standup of the Halcyon lab crew.",
        "agenda": ["Sessions this week", "Equipment", "Participant recruitment", "AOB"],
        "tasks": [
            "book the room for the pilot sessions",
            "order spare chin-rest pads",
            "send reminders to this week's participants",
            "export last week's gaze files",
            "update the room booking sheet",
        ],
        "dates": [
            "2025-09-22",
            "2025-10-20",
            "2025-11-17",
            "2026-01-12",
            "2026-02-09",
            "2026-03-09",
            "2026-04-20",
            "2026-05-18",
        ],
    },
    "annotation-review": {
        "title": "Annotation review",
        "project": "tessera",
        "zone": "Berlin",
        "hm": (14, 0),
        "weekday": 3,
        "utc": False,
        "event": True,
        "location": "Room 3.02",
        "pool": ["chiara-valenti", "ines-moreau", "nadia-rahman", "priya-raman", "uma-krishnan"],
        "intro": "Fortnightly review of annotation quality and the interview pipeline's privacy rules.",
        "agenda": ["Agreement scores", "Guideline questions", "Privacy and consent", "Tool issues"],
        "tasks": [
            "adjudicate the open disagreements",
            "draft the guideline changes",
            "check the consent tracker against the new batch",
            "file the tool bugs",
            "prepare the agreement report",
        ],
        "dates": ["2025-09-25", "2025-11-06", "2025-12-04", "2026-01-22", "2026-02-26", "2026-05-07"],
    },
    "budget-call": {
        "title": "Budget call",
        "project": "meridian",
        "zone": "New York",
        "hm": (11, 0),
        "weekday": 1,
        "utc": False,
        "event": True,
        "location": "Video call hosted by Bellwether College",
        "pool": ["gustav-lindqvist", "jonah-whitfield", "ada-okafor", "viktor-hale"],
        "intro": "Monthly budget call with the Bellwether College partners (times as written in New York).",
        "agenda": ["Spending to date", "GPU budget", "Hiring", "Reporting deadlines"],
        "tasks": [
            "send the spending report",
            "confirm the hiring budget with the department",
            "update the budget forecast",
            "book the workshop travel",
        ],
        "dates": ["2025-09-30", "2025-11-25", "2026-01-27", "2026-03-10", "2026-06-02"],
    },
    "pipeline-sync": {
        "title": "Pipeline sync",
        "project": "quarry",
        "zone": "Berlin",
        "hm": (10, 0),
        "weekday": 4,
        "utc": True,
        "event": True,
        "location": "Video",
        "pool": ["dmitri-volkov", "rafael-duarte", "oskar-nieminen", "samantha-reyes"],
        "intro": "Sync of the Quarry pipeline team (times recorded in UTC).",
        "agenda": ["Transcription throughput", "Diarization errors", "Storage", "Incidents"],
        "tasks": [
            "rotate the storage credentials",
            "re-run the failed transcription batch",
            "measure diarization errors on the new batch",
            "clean up the staging bucket",
        ],
        "dates": ["2025-10-03", "2025-12-12", "2026-02-13", "2026-04-24", "2026-06-19"],
    },
    "reading-group": {
        "title": "Reading group",
        "project": None,
        "zone": "Berlin",
        "hm": (17, 0),
        "weekday": 3,
        "utc": False,
        "event": False,
        "location": "Library seminar room",
        "pool": ["hana-kobayashi", "wen-zhao", "zoe-lefevre", "samir-haddad", "elif-sahin", "mateus-oliveira"],
        "intro": "Informal reading group; one paper per session.",
        "agenda": ["Paper discussion", "Next paper"],
        "tasks": ["pick the next paper", "share the slides from today"],
        "dates": ["2025-10-16", "2026-01-29", "2026-05-28"],
    },
}

# Meetings around the 2026 daylight-saving changes (US: 2026-03-08, EU: 2026-03-29).
# id suffix, title, occurred_at as authored, project, attendees, location, intro
SPECIAL_MEETINGS: list[tuple[str, str, str, str, list[str], str, str]] = [
    (
        "2026-03-08-upload-watch",
        "Overnight upload watch",
        "2026-03-08T01:30:00-05:00",
        "beacon",
        ["jonah-whitfield", "samantha-reyes"],
        "Video, from New York",
        "Jonah and Samantha watched the overnight upload of the release candidate to the Bellwether mirror.",
    ),
    (
        "2026-03-23-overnight-handover",
        "Overnight session handover",
        "2026-03-23T00:15:00+01:00",
        "halcyon",
        ["kwame-asante", "tomasz-wrobel"],
        "Eye-tracking lab, room 0.07",
        "Handover between the evening and night shifts of the overnight recording block.",
    ),
    (
        "2026-03-27-budget-call",
        "Budget call",
        "2026-03-27T18:00:00-04:00",
        "meridian",
        ["gustav-lindqvist", "jonah-whitfield", "ada-okafor", "viktor-hale"],
        "Video call hosted by Bellwether College",
        "Extra budget call, late evening in Berlin because New York had already moved its clocks.",
    ),
    (
        "2026-03-29-night-recording",
        "Night recording session",
        "2026-03-29T01:30:00+01:00",
        "halcyon",
        ["kwame-asante", "elif-sahin"],
        "Eye-tracking lab, room 0.07",
        "The one overnight recording that crossed the switch to summer time.",
    ),
    (
        "2026-03-29-release-retro",
        "Release retro",
        "2026-03-29T23:30:00+02:00",
        "beacon",
        ["priya-raman", "dmitri-volkov", "uma-krishnan"],
        "Video",
        "Late retro after the Beacon release candidate went out.",
    ),
    (
        "2026-03-30-deploy-window",
        "Lumen deploy window",
        "2026-03-30T00:30:00+02:00",
        "lumen",
        ["bruno-castellanos", "oskar-nieminen"],
        "Video",
        "Quiet-hours deploy of the Lumen search service.",
    ),
    (
        "2026-04-05-deadline-push",
        "Deadline push",
        "2026-04-05T23:45:00+02:00",
        "lumen",
        ["ada-okafor", "hana-kobayashi", "farah-nazari"],
        "Video",
        "Last check before the paper deadline at midnight Berlin time.",
    ),
]

# Sentences that claims quote as evidence, keyed by meeting id. Each must be unique in its file.
KEY_LINES: dict[str, list[str]] = {
    "mtg-2025-09-30-budget-call": ["Jonah proposed a hard cap of 4,000 EUR per quarter for cloud GPUs."],
    "mtg-2025-10-08-search-sync": [
        "A full pass over 1.2 million embedding rows takes about four seconds on the lab server."
    ],
    "mtg-2025-11-06-annotation-review": [
        "Inès confirmed that the consent forms allow keeping raw audio for up to two years."
    ],
    "mtg-2025-11-25-budget-call": ["The Lumen pilot needs roughly 6,500 EUR per quarter of GPU time until March."],
    "mtg-2025-12-10-search-sync": ["The graph prototype answers a similar-passage query in about 40 ms."],
    "mtg-2026-01-14-search-sync": [
        "FTS5 with the unicode61 tokenizer and remove_diacritics matched both café and naïve."
    ],
    "mtg-2026-01-22-annotation-review": [
        "Legal asked us to shorten the retention policy for raw recordings to 90 days."
    ],
    "mtg-2026-02-04-search-sync": ["Memory use of the graph index passed 30 GB, more than the lab server can spare."],
    "mtg-2026-02-09-lab-standup": ["Tomasz flagged that the recording for participant P17 looks corrupted."],
    "mtg-2026-02-18-search-sync": ["Farah timed the nightly rebuild of the keyword index at eleven minutes."],
    "mtg-2026-02-26-annotation-review": [
        "The ethics office objected: participants were promised 90 days to withdraw their recordings."
    ],
    "mtg-2026-03-29-night-recording": ["Clocks jump from 02:00 to 03:00 tonight, so the session log skips an hour."],
    "mtg-2026-04-15-search-sync": [
        "Keeping the vector index inside the same SQLite file as FTS5 removes a second service."
    ],
}


@dataclass
class Meeting:
    id: str
    slug: str
    title: str
    occurred: str
    project: str | None
    attendees: list[str]
    series: str | None
    event: bool
    doc: Doc

    @property
    def date(self) -> str:
        return self.occurred[:10]

    @property
    def utc(self) -> datetime:
        return to_utc(self.occurred)


def _pick(rng: random.Random, pool: list[str], must: list[str]) -> list[str]:
    k = rng.randint(max(2, len(pool) - 2), len(pool))
    chosen = set(rng.sample(pool, k)) | set(must)
    return [p for p in pool if p in chosen] + sorted(set(must) - set(pool))


def _weekday_name(d: date) -> str:
    return ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"][d.weekday()]


def build_meetings(rng: random.Random, prose: Prose) -> list[Meeting]:
    meetings: list[Meeting] = []
    must_attend = {
        "mtg-2025-09-30-budget-call": ["jonah-whitfield"],
        "mtg-2025-11-06-annotation-review": ["ines-moreau", "uma-krishnan"],
        "mtg-2026-01-22-annotation-review": ["ines-moreau", "uma-krishnan"],
        "mtg-2026-02-26-annotation-review": ["uma-krishnan"],
        "mtg-2026-02-09-lab-standup": ["tomasz-wrobel", "lena-brandt"],
        "mtg-2026-02-18-search-sync": ["farah-nazari"],
        "mtg-2026-01-14-search-sync": ["farah-nazari", "samir-haddad"],
        "mtg-2025-12-10-search-sync": ["bruno-castellanos"],
        "mtg-2026-04-15-search-sync": ["ada-okafor"],
        "mtg-2026-01-12-lab-standup": ["lena-brandt"],
    }
    for key, s in SERIES.items():
        for ds in s["dates"]:
            d = date.fromisoformat(ds)
            if d.weekday() != s["weekday"]:
                raise ValueError(f"{key} {ds} is a {_weekday_name(d)}")
            local = datetime.combine(d, time(*s["hm"]))
            occurred = stamp(local, s["zone"], as_utc=s["utc"])
            mid = f"mtg-{ds}-{key}"
            attendees = _pick(rng, s["pool"], must_attend.get(mid, []))
            meetings.append(
                _meeting(
                    rng,
                    prose,
                    mid,
                    f"{ds}-{key}",
                    f"{s['title']} {ds}",
                    occurred,
                    s["project"],
                    attendees,
                    key,
                    s["event"],
                    s["location"],
                    s["intro"],
                    s["agenda"],
                    s["zone"],
                )
            )
    for slug, title, occurred, project, attendees, location, intro in SPECIAL_MEETINGS:
        zone = "New York" if occurred.endswith(("-05:00", "-04:00")) else "Berlin"
        meetings.append(
            _meeting(
                rng,
                prose,
                f"mtg-{slug}",
                slug,
                f"{title} {slug[:10]}",
                occurred,
                project,
                attendees,
                None,
                True,
                location,
                intro,
                ["What happened", "Anything to follow up"],
                zone,
            )
        )
    meetings.sort(key=lambda m: (m.utc, m.id))
    return meetings


def _meeting(
    rng: random.Random,
    prose: Prose,
    mid: str,
    slug: str,
    title: str,
    occurred: str,
    project: str | None,
    attendees: list[str],
    series: str | None,
    event: bool,
    location: str,
    intro: str,
    agenda: list[str],
    zone: str,
) -> Meeting:
    when_local = datetime.fromisoformat(occurred.replace("Z", "+00:00"))
    if occurred.endswith("Z"):
        berlin = when_local + timedelta(hours=zone_offset_hours(when_local.replace(tzinfo=None), "Berlin"))
        when = (
            f"{_weekday_name(when_local.date())} {when_local:%Y-%m-%d}, {when_local:%H:%M} UTC "
            f"({berlin:%H:%M} in Berlin)"
        )
    else:
        when = (
            f"{_weekday_name(when_local.date())} {when_local:%Y-%m-%d}, {when_local:%H:%M} {zone} time "
            f"(UTC{occurred[-6:]})"
        )
    things = PROJECT_THINGS[project]
    paras = [prose.paragraph(attendees, 2, 4, things) for _ in range(rng.randint(2, 3))]
    for line in KEY_LINES.get(mid, []):
        para = paras[rng.randrange(len(paras))]
        para.insert(rng.randint(0, len(para)), line)
    notes = "\n\n".join("\n".join(p) for p in paras)
    note_taker = attendees[rng.randrange(len(attendees))]
    ents = [pid(a) for a in attendees] + ([f"proj-{project}"] if project else [])
    meta: dict[str, Any] = {
        "id": mid,
        "kind": "page",
        "type": "meeting",
        "title": title,
        "tags": ["meeting", series] if series else ["meeting"],
        "summary": intro,
        "recorded_at": z(to_utc(occurred) + timedelta(hours=rng.randint(1, 30), minutes=rng.randint(0, 59))),
        "entities": ents,
        "origin": "observed",
        "author": FULL[note_taker],
        "fields": {"occurred_at": occurred, "location": location, "duration_minutes": rng.choice([30, 45, 60])},
    }
    if rng.random() < 0.2:
        meta["updated_at"] = z(to_utc(meta["recorded_at"]) + timedelta(days=rng.randint(1, 9)))
    text = body(
        title,
        intro,
        f"- **When:** {when}\n- **Where:** {location}\n- **Attendees:** {links([pid(a) for a in attendees])}"
        + (f"\n- **Project:** [[proj-{project}]]" if project else ""),
        "## Agenda\n\n" + "\n".join(f"{i}. {a}" for i, a in enumerate(agenda, 1)),
        "## Notes\n\n" + notes,
        f"Notes taken by {FIRST[note_taker]}.",
    )
    doc = Doc(f"meetings/{slug}.md", meta, text)
    return Meeting(mid, slug, title, occurred, project, attendees, series, event, doc)


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------


class Store:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.prose = Prose(self.rng)
        self.docs: list[Doc] = []
        self.meetings: dict[str, Meeting] = {}

    # -- helpers ---------------------------------------------------------------------------
    def add(self, doc: Doc) -> Doc:
        self.docs.append(doc)
        return doc

    def recorded(self, when: str, hours: tuple[int, int] = (2, 40)) -> str:
        base = to_utc(when) if "T" in when else datetime.combine(day(when), time(9), UTC)
        return z(base + timedelta(hours=self.rng.randint(*hours), minutes=self.rng.randint(0, 59)))

    def maybe_updated(self, meta: dict[str, Any], p: float = 0.25) -> None:
        if self.rng.random() < p:
            meta["updated_at"] = z(
                to_utc(meta["recorded_at"]) + timedelta(days=self.rng.randint(1, 20), hours=self.rng.randint(0, 8))
            )

    def evidence(self, meeting_id: str, quote: str, span: tuple[int, int] = (0, 0)) -> dict[str, Any]:
        doc = self.meetings[meeting_id].doc
        n = doc.line_of(quote)
        return {"path": doc.path, "lines": [n - span[0], n + span[1]], "quote": quote}

    def colleagues(self, slug: str, projects: list[str]) -> list[str]:
        if not projects:
            return [slug, "lena-brandt"]
        lead, members = PROJ[projects[0]][3], PROJ[projects[0]][4]
        return [slug, *(p for p in [lead, *members] if p != slug)]

    def filler(self, people: list[str], paras: int = 2, project: str | None = "") -> str:
        things = PROJECT_THINGS.get(project) if project != "" else None
        return "\n\n".join(" ".join(self.prose.paragraph(people, things=things)) for _ in range(paras))

    # -- sections --------------------------------------------------------------------------
    def build(self) -> None:
        self.people()
        self.projects()
        for m in build_meetings(self.rng, self.prose):
            self.meetings[m.id] = m
            self.add(m.doc)
        self.meeting_claims()
        self.decisions()
        self.lab()
        self.findings()
        self.events()
        self.relationships()
        self.notes()
        self.defects()
        self.non_records()

    def people(self) -> None:
        for slug, name, first, aliases, role, city in PEOPLE:
            projects = [p[0] for p in PROJECTS if p[3] == slug or slug in p[4]]
            meta: dict[str, Any] = {
                "id": pid(slug),
                "kind": "page",
                "type": "person",
                "title": name,
                "aliases": aliases,
                "tags": ["people", "bellwether" if city == "New York" else "nordlicht"],
                "summary": f"{role}, based in {city}.",
                "recorded_at": self.recorded("2025-09-01", (0, 200)),
                "origin": "stated",
                "author": "Lena Brandt",
                "fields": {
                    "role": role,
                    "city": city,
                    "time_zone": "America/New_York" if city == "New York" else "Europe/Berlin",
                },
            }
            self.maybe_updated(meta, 0.3)
            affiliation = (
                "Bellwether College in New York"
                if city == "New York"
                else "the Nordlicht Institute for Language and Cognition in Berlin"
            )
            text = body(
                name,
                f"{first} is a {role.lower()} at {affiliation}.",
                "## Projects\n\n" + "\n".join(f"- [[proj-{p}]]" for p in projects) if projects else "",
                "## Notes\n\n" + self.filler(self.colleagues(slug, projects), 1, projects[0] if projects else None),
            )
            self.add(Doc(f"people/{slug}.md", meta, text))

    def projects(self) -> None:
        started = {
            "lumen": "2025-09-01",
            "tessera": "2025-06-15",
            "halcyon": "2025-09-15",
            "quarry": "2025-05-01",
            "meridian": "2025-04-01",
            "cartographer": "2026-01-05",
            "fieldnotes": "2025-03-01",
            "beacon": "2025-11-01",
        }
        for slug, title, aliases, lead, members, tags, summary in PROJECTS:
            meta: dict[str, Any] = {
                "id": f"proj-{slug}",
                "kind": "page",
                "type": "project",
                "title": title,
                "aliases": aliases,
                "tags": ["project", *tags],
                "summary": summary,
                "recorded_at": self.recorded(started[slug] if started[slug] > "2025-09" else "2025-09-02"),
                "entities": [pid(lead)],
                "owner": pid(lead),
                "origin": "stated",
                "author": FULL[lead],
                "fields": {"status": "running", "started": started[slug]},
            }
            self.maybe_updated(meta, 0.5)
            team = [lead, *members]
            text = body(
                title,
                summary,
                f"Led by [[{pid(lead)}]]. Team: {links([pid(m) for m in members])}.",
                "## Timeline\n\n"
                f"- {started[slug]}: project started.\n"
                "- 2026-03-29: clocks change in Berlin; check overnight jobs.\n"
                "(Dates in this list are prose only; they are not structured dates.)",
                "## Status\n\n" + self.filler(team, 2, slug),
            )
            self.add(Doc(f"projects/{slug}.md", meta, text))

    def meeting_claims(self) -> None:
        for m in self.meetings.values():
            proj = [f"proj-{m.project}"] if m.project else []
            if m.event:
                meta = {
                    "id": f"evt-{m.slug}",
                    "kind": "claim",
                    "type": "event",
                    "title": f"{m.title} took place",
                    "tags": ["event"],
                    "summary": f"{m.title}: {len(m.attendees)} attendees.",
                    "occurred_at": m.occurred,
                    "recorded_at": self.recorded(m.occurred, (1, 20)),
                    "entities": [pid(a) for a in m.attendees] + proj,
                    "source": m.id,
                    "source_event": True,
                    "origin": "observed",
                    "author": m.doc.meta["author"] if m.doc.meta else None,
                }
                text = body(
                    f"{m.title} took place",
                    f"This event stands for the meeting [[{m.id}]] with {', '.join(FIRST[a] for a in m.attendees)}.",
                    self.prose.sentence(m.attendees, PROJECT_THINGS[m.project]),
                )
                self.add(Doc(f"claims/evt-{m.slug}.md", meta, text))
            # one action item per meeting
            series = SERIES.get(m.series or "", {})
            tasks = series.get("tasks", ["write up the follow-ups", "share the recording notes"])
            owner = m.attendees[self.rng.randrange(len(m.attendees))]
            task = self.rng.choice(tasks)
            due = (day(m.occurred) + timedelta(days=self.rng.randint(5, 21))).isoformat()
            aid = f"act-{m.slug}"
            meta = {
                "id": aid,
                "kind": "claim",
                "type": "action_item",
                "title": f"{FIRST[owner]} to {task}",
                "tags": ["action"],
                "summary": f"Agreed at the {m.title}.",
                "recorded_at": self.recorded(m.occurred, (1, 30)),
                "due_at": due,
                "entities": [pid(owner), *proj],
                "owner": pid(owner),
                "source": m.id,
                "source_event": False,
                "origin": "stated",
                "author": m.doc.meta["author"] if m.doc.meta else None,
            }
            if aid == "act-2026-02-13-pipeline-sync":  # defect: owner id that does not exist
                meta["title"] = "Quentin to archive the old transcription logs"
                meta["owner"] = "person-quentin-marsh"
                task = "archive the old transcription logs"
                meta["entities"] = proj
                owner_name = "Quentin"
            else:
                owner_name = FIRST[owner]
            if aid == "act-2025-12-12-pipeline-sync":
                meta["status"] = "withdrawn"
                meta["summary"] = "Withdrawn: the batch was re-run automatically."
            if aid == "act-2026-04-15-search-sync":  # defect: quoted but impossible due date
                meta["due_at"] = "2026-04-31"
            self.maybe_updated(meta, 0.15)
            text = body(
                meta["title"],
                f"Agreed in [[{m.id}]]: {owner_name} will {task} by {meta['due_at']}.",
                self.prose.sentence(m.attendees, PROJECT_THINGS[m.project]),
            )
            self.add(Doc(f"claims/{aid}.md", meta, text))

    # -- decisions -------------------------------------------------------------------------
    def decision(
        self,
        did: str,
        folder: str,
        title: str,
        *,
        meeting: str | None,
        project: str | None,
        owner: str,
        text: list[str],
        occurred: str | None = None,
        dtype: str = "decision",
        aliases: list[str] | None = None,
        status: str | None = None,
        superseded_by: str | None = None,
        revision: int | None = None,
        tags: list[str] | None = None,
        summary: str | None = None,
        due: str | None = None,
        paths: list[str] | None = None,
        category: str = "decision",
        reasoning: str | None = None,
        alternatives: list[str] | None = None,
        evidence: list[dict[str, Any]] | None = None,
        origin: str = "stated",
    ) -> Doc:
        m = self.meetings[meeting] if meeting else None
        when = occurred or (m.date if m else None)
        assert when is not None
        ents = [pid(owner)] + ([f"proj-{project}"] if project else [])
        meta: dict[str, Any] = {
            "id": did,
            "kind": "claim",
            "type": dtype,
            "title": title,
            "aliases": aliases,
            "tags": tags or ["decision"],
            "status": status,
            "superseded_by": superseded_by,
            "revision": revision,
            "summary": summary or title + ".",
            "occurred_at": when,
            "recorded_at": self.recorded(m.occurred if m else when, (2, 48)),
            "due_at": due,
            "entities": ents,
            "owner": pid(owner),
            "source": m.id if m else None,
            "source_event": False if m else None,
            "origin": origin,
            "author": FULL[owner],
            "evidence": evidence,
            "affected_paths": paths,
            "category": category,
            "reasoning": reasoning,
            "alternatives": alternatives,
        }
        self.maybe_updated(meta, 0.2)
        parts = list(text)
        if m:
            parts.append(f"Decided at [[{m.id}]].")
        return self.add(Doc(f"{folder}/{did}.md", meta, body(title, *parts)))

    def decisions(self) -> None:
        d = self.decision
        # Chain A (4 records, ends active): how Lumen finds similar passages.
        d(
            "dec-2025-012",
            "decisions",
            "Scan transcript embeddings from Parquet shards",
            meeting="mtg-2025-10-08-search-sync",
            project="lumen",
            owner="bruno-castellanos",
            status="superseded",
            superseded_by="dec-2025-027",
            revision=1,
            tags=["search", "storage"],
            summary="The pilot compares each question against every stored embedding.",
            paths=["lumen/similar/scan.py"],
            category="architecture",
            reasoning="No extra service to run while the corpus is small.",
            alternatives=["Approximate nearest-neighbour library", "Hosted similarity service"],
            evidence=[self.evidence("mtg-2025-10-08-search-sync", "takes about four seconds on the lab server")],
            text=[
                "## Context\n\nLumen needs to find transcript passages that are similar to a question. "
                "The pilot holds about 1.2 million sentence embeddings.",
                "## Decision\n\nKeep the embeddings in columnar Parquet shards on the lab server and compare "
                "each question against every row with a plain cosine loop. No extra service, no tuning.",
                "## Consequences\n\nA full pass takes about four seconds: fine for the pilot, too slow for "
                "interactive use. We will revisit once the corpus grows.",
            ],
        )
        d(
            "dec-2025-027",
            "decisions",
            "Build an HNSW graph over transcript embeddings",
            meeting="mtg-2025-12-10-search-sync",
            project="lumen",
            owner="bruno-castellanos",
            aliases=["Parquet shard scan"],
            status="superseded",
            superseded_by="dec-2026-008",
            revision=2,
            tags=["search"],
            summary="Similar-passage lookup moves to an approximate nearest-neighbour graph.",
            paths=["lumen/similar/graph.py", "lumen/similar/build_nightly.py"],
            category="architecture",
            reasoning="Interactive latency matters more than exact recall.",
            alternatives=["Keep the exhaustive scan", "Buy a bigger server"],
            text=[
                "## Decision\n\nSwitch similar-passage lookup to an approximate nearest-neighbour graph built "
                "with hnswlib. In the prototype a query answers in about 40 ms instead of four seconds.",
                "## Consequences\n\nThe graph is rebuilt every night from the embedding files. Recall at 10 "
                "stays above 0.95 on the gold query set.",
            ],
        )
        d(
            "dec-2026-008",
            "decisions",
            "Partition embeddings with IVF and product quantization",
            meeting="mtg-2026-02-04-search-sync",
            project="lumen",
            owner="samir-haddad",
            aliases=["HNSW graph decision"],
            status="superseded",
            superseded_by="dec-2026-021",
            revision=3,
            tags=["search", "ML"],
            summary="Cut memory use of the similar-passage search below 6 GB.",
            paths=["lumen/similar/ivf.py"],
            category="architecture",
            reasoning="The graph no longer fits in memory next to the other services.",
            alternatives=["Shard the graph across two machines", "Drop older transcripts"],
            text=[
                "## Context\n\nThe graph index passed 30 GB of memory in February.",
                "## Decision\n\nPartition the embeddings into 4,096 centroids and compress the vectors with "
                "product quantization. Memory use drops under 6 GB; recall at 10 falls to 0.91.",
            ],
        )
        d(
            "dec-2026-021",
            "decisions",
            "Keep the vector index in SQLite next to FTS5",
            meeting="mtg-2026-04-15-search-sync",
            project="lumen",
            owner="ada-okafor",
            aliases=["IVF index decision", "Similar-passage search decision"],
            revision=4,
            tags=["search", "storage"],
            summary="One SQLite file holds both the keyword index and the vector index.",
            paths=["lumen/search/schema.sql", "lumen/search/vectors.py", "lumen/search/fusion.py"],
            category="architecture",
            reasoning="One file to back up and one process to run; latency is within budget.",
            alternatives=["Separate vector database service", "Keep the IVF files on disk"],
            evidence=[
                self.evidence(
                    "mtg-2026-04-15-search-sync", "Keeping the vector index inside the same SQLite file as FTS5", (0, 1)
                )
            ],
            text=[
                "## Decision\n\nLumen keeps its vector index in the same SQLite database as the FTS5 keyword "
                "index, using the sqlite-vec extension. Keyword and vector results are merged with reciprocal "
                "rank fusion.",
                "## Consequences\n\nOne file to back up, one process to run. Query latency stays under 80 ms "
                "for the current corpus.",
            ],
        )
        # Chain E (2 records, ends active): keyword search engine.
        d(
            "dec-2025-015",
            "decisions",
            "Run a search container for keyword search over transcripts",
            meeting="mtg-2025-10-29-search-sync",
            project="lumen",
            owner="farah-nazari",
            status="superseded",
            superseded_by="dec-2026-003",
            revision=1,
            tags=["search"],
            paths=["deploy/search/docker-compose.yml"],
            category="architecture",
            reasoning="The team already knew the tool from a previous project.",
            alternatives=["Embedded SQLite full-text search", "grep over the transcript files"],
            text=[
                "## Decision\n\nRun a single-node Elasticsearch container next to the transcript store. "
                "Its Lucene analyzers handle English and German stemming out of the box.",
                "## Consequences\n\nOne more JVM service to patch and monitor.",
            ],
        )
        d(
            "dec-2026-003",
            "decisions",
            "Use SQLite FTS5 for keyword search",
            meeting="mtg-2026-01-14-search-sync",
            project="lumen",
            owner="samir-haddad",
            aliases=["Keyword search engine decision"],
            revision=2,
            tags=["search", "storage"],
            summary="Keyword search runs on SQLite FTS5 with BM25 ranking.",
            paths=["lumen/search/fts.py", "lumen/search/schema.sql"],
            category="architecture",
            reasoning="Accent-insensitive matching and BM25 ranking with no extra service.",
            alternatives=["Keep the JVM search container", "A Rust search library via bindings"],
            evidence=[
                self.evidence(
                    "mtg-2026-01-14-search-sync",
                    "FTS5 with the unicode61 tokenizer and remove_diacritics matched both café and naïve.",
                )
            ],
            text=[
                "## Decision\n\nKeyword search uses SQLite FTS5 with the unicode61 tokenizer and "
                "`remove_diacritics 2`, so café matches cafe and naïve matches naive. BM25 weights: title 8, "
                "aliases 6, body 1.",
                "## Consequences\n\nNo stemming: searching for 'recordings' does not find 'recording'. "
                "The index is rebuilt from the Markdown files whenever a hash changes.",
            ],
        )
        # Chain B (3 records, ends withdrawn): retention of raw recordings.
        d(
            "dec-2025-018",
            "decisions",
            "Archive raw interview audio for twenty-four months",
            meeting="mtg-2025-11-06-annotation-review",
            project="fieldnotes",
            owner="ines-moreau",
            status="superseded",
            superseded_by="dec-2026-005",
            revision=1,
            tags=["privacy", "retention"],
            paths=["fieldnotes/policies/recordings.md"],
            category="policy",
            reasoning="The consent forms allow up to two years.",
            text=[
                "## Decision\n\nRaw interview audio goes to archival storage on the institute tape library "
                "and is kept for twenty-four months after the interview.",
                "## Why\n\nThe consent forms allow it, and re-transcription might be needed.",
            ],
        )
        d(
            "dec-2026-005",
            "decisions",
            "Retention policy: delete raw recordings after 90 days",
            meeting="mtg-2026-01-22-annotation-review",
            project="fieldnotes",
            owner="ines-moreau",
            aliases=["Audio archive rule"],
            status="superseded",
            superseded_by="dec-2026-015",
            revision=2,
            tags=["privacy", "retention"],
            due="2026-03-31",
            paths=["fieldnotes/policies/recordings.md", "ops/jobs/recordings_cleanup.py"],
            category="policy",
            reasoning="Legal advice: keep personal data no longer than needed for transcription.",
            alternatives=["Keep recordings but encrypt them", "Delete after one year"],
            evidence=[
                self.evidence(
                    "mtg-2026-01-22-annotation-review",
                    "shorten the retention policy for raw recordings to 90 days",
                    (1, 0),
                )
            ],
            text=[
                "## Decision\n\nNew retention policy: transcripts stay, raw recordings are deleted 90 days "
                "after the interview. A weekly purge job removes anything older.",
                "## Owner\n\nInès updates the policy page; Oskar writes the job.",
            ],
        )
        d(
            "dec-2026-015",
            "decisions",
            "Delete raw recordings right after transcription",
            meeting="mtg-2026-02-26-annotation-review",
            project="fieldnotes",
            owner="uma-krishnan",
            aliases=["90-day retention policy"],
            status="withdrawn",
            revision=3,
            tags=["privacy", "retention"],
            paths=["fieldnotes/policies/recordings.md"],
            category="policy",
            reasoning="Withdrawn after the ethics review; see body.",
            evidence=[
                self.evidence(
                    "mtg-2026-02-26-annotation-review",
                    "participants were promised 90 days to withdraw their recordings",
                )
            ],
            text=[
                "## Decision (withdrawn)\n\nDelete each raw recording as soon as its transcript is reviewed.",
                "## Why it was withdrawn\n\nThe ombudsperson pointed out that participants were promised "
                "90 days to withdraw. A replacement is being drafted with the ethics office.",
            ],
        )
        # Chain C (2 records, dead end): GPU budget; the replacement id does not exist.
        d(
            "dec-2025-009",
            "decisions",
            "Cap cloud GPU spending at 4,000 EUR per quarter",
            meeting="mtg-2025-09-30-budget-call",
            project="meridian",
            owner="gustav-lindqvist",
            status="superseded",
            superseded_by="dec-2025-030",
            revision=1,
            tags=["budget"],
            paths=["meridian/budget/2025-q4.xlsx"],
            category="budget",
            reasoning="The grant's compute line is small.",
            alternatives=["No cap", "Monthly cap"],
            evidence=[
                self.evidence(
                    "mtg-2025-09-30-budget-call", "Jonah proposed a hard cap of 4,000 EUR per quarter for cloud GPUs."
                )
            ],
            text=[
                "## Decision\n\nCloud GPU budget is capped at 4,000 EUR per quarter, preemptible instances "
                "only. Gustav reports spending monthly."
            ],
        )
        d(
            "dec-2025-030",
            "decisions",
            "Raise the GPU budget to 6,500 EUR per quarter",
            meeting="mtg-2025-11-25-budget-call",
            project="meridian",
            owner="gustav-lindqvist",
            aliases=["4,000 EUR GPU cap"],
            status="superseded",
            superseded_by="dec-2026-099",
            revision=2,
            tags=["budget"],
            paths=["meridian/budget/2026-q1.xlsx"],
            category="budget",
            reasoning="The Lumen pilot needs more GPU time until March.",
            text=[
                "## Decision\n\nThe GPU budget rises to 6,500 EUR per quarter until the end of March; any "
                "overage is booked against the Meridian reserve.",
                "The follow-up decision was planned as dec-2026-099 but never recorded.",
            ],
        )
        # Chain F (2 records, crosses scope and type): a memo replaced by a decision.
        d(
            "dec-2025-033",
            "decisions",
            "Meeting notes live in the knowledge store",
            meeting=None,
            occurred="2025-12-01",
            project=None,
            owner="ada-okafor",
            aliases=["Meeting notes location"],
            revision=2,
            tags=["process"],
            category="process",
            paths=["_templates/meeting.md"],
            reasoning="Searchable, citable, and versioned with the rest.",
            alternatives=["Shared documents", "Chat threads"],
            text=[
                "## Decision\n\nMeeting notes are written as Markdown records under `meetings/`, one file per "
                "meeting, with attendees in `entities` and the time in `fields.occurred_at`.",
                "This replaces the earlier memo about where notes go.",
            ],
        )
        # Standalone decisions.
        standalone: list[tuple[str, str, str, str | None, str, list[str], str | None, list[str], str]] = [
            (
                "dec-2025-004",
                "mtg-2025-09-17-search-sync",
                "Evaluate search on the 200-query gold set",
                "lumen",
                "farah-nazari",
                ["search", "evaluation"],
                None,
                ["lumen/eval/gold_queries.jsonl"],
                "process",
            ),
            (
                "dec-2025-006",
                "mtg-2025-09-25-annotation-review",
                "Two annotators per transcript, disagreements adjudicated weekly",
                "tessera",
                "chiara-valenti",
                ["annotation"],
                None,
                ["tessera/workflows/adjudication.md"],
                "process",
            ),
            (
                "dec-2025-010",
                "mtg-2025-10-03-pipeline-sync",
                "Transcribe with the on-premise speech model only",
                "quarry",
                "dmitri-volkov",
                ["privacy", "infra"],
                None,
                ["quarry/transcribe/config.yaml"],
                "policy",
            ),
            (
                "dec-2025-021",
                "mtg-2025-10-16-reading-group",
                "Rotate the reading group chair alphabetically",
                None,
                "hana-kobayashi",
                ["reading-group"],
                None,
                [],
                "process",
            ),
            (
                "dec-2025-024",
                "mtg-2025-11-19-search-sync",
                "Log search queries with a hashed user id",
                "lumen",
                "samir-haddad",
                ["search", "privacy"],
                None,
                ["lumen/api/logging.py"],
                "policy",
            ),
            (
                "dec-2025-034",
                "mtg-2025-12-04-annotation-review",
                "Freeze the annotation guidelines for winter",
                "tessera",
                "nadia-rahman",
                ["annotation"],
                "2026-01-09",
                ["tessera/guidelines/v4.md"],
                "process",
            ),
            (
                "dec-2025-036",
                "mtg-2025-12-12-pipeline-sync",
                "Nightly backups of the transcript store",
                "quarry",
                "oskar-nieminen",
                ["infra", "ops"],
                "2026-01-09",
                ["ops/backup/transcripts.cron"],
                "ops",
            ),
            (
                "dec-2026-002",
                "mtg-2026-01-27-budget-call",
                "Fund two student assistants from the reserve",
                "meridian",
                "gustav-lindqvist",
                ["budget", "hiring"],
                "2026-02-28",
                ["meridian/hiring.md"],
                "budget",
            ),
            (
                "dec-2026-006",
                "mtg-2026-02-13-pipeline-sync",
                "Run speaker diarization after transcription",
                "quarry",
                "rafael-duarte",
                ["infra", "ML"],
                None,
                ["quarry/pipeline.py"],
                "architecture",
            ),
            (
                "dec-2026-009",
                "mtg-2026-03-04-search-sync",
                "Show citations with line ranges in the Lumen UI",
                "lumen",
                "mateus-oliveira",
                ["search", "ux"],
                "2026-04-01",
                ["lumen/ui/citations.tsx"],
                "architecture",
            ),
            (
                "dec-2026-013",
                "mtg-2026-03-10-budget-call",
                "Cap workshop travel at 1,800 EUR per person",
                "meridian",
                "viktor-hale",
                ["budget", "travel"],
                "2026-04-30",
                ["meridian/travel.md"],
                "budget",
            ),
            (
                "dec-2026-018",
                "mtg-2026-03-27-budget-call",
                "Release Beacon only after the ethics re-review",
                "beacon",
                "ada-okafor",
                ["data-release", "privacy"],
                "2026-05-15",
                ["beacon/RELEASE.md"],
                "policy",
            ),
            (
                "dec-2026-024",
                "mtg-2026-04-24-pipeline-sync",
                "Retire the old FTP drop for field recordings",
                "quarry",
                "oskar-nieminen",
                ["infra", "ops"],
                "2026-05-29",
                ["ops/ftp/README.md"],
                "ops",
            ),
            (
                "dec-2026-026",
                "mtg-2026-05-07-annotation-review",
                "Publish the annotation codebook with Beacon",
                "beacon",
                "priya-raman",
                ["annotation", "data-release"],
                None,
                ["beacon/codebook/"],
                "process",
            ),
            (
                "dec-2026-028",
                "mtg-2026-05-13-search-sync",
                "All-words is the default search mode",
                "lumen",
                "samir-haddad",
                ["search", "ux"],
                None,
                ["lumen/search/query.py"],
                "architecture",
            ),
            (
                "dec-2026-030",
                "mtg-2026-06-02-budget-call",
                "Apply for the follow-up grant in the autumn call",
                "meridian",
                "viktor-hale",
                ["budget", "grant"],
                "2026-09-15",
                ["meridian/proposal/"],
                "budget",
            ),
            (
                "dec-2026-032",
                "mtg-2026-06-10-search-sync",
                "Cache embeddings per transcript revision",
                "lumen",
                "bruno-castellanos",
                ["search", "ML"],
                None,
                ["lumen/similar/cache.py"],
                "architecture",
            ),
            (
                "dec-2026-034",
                "mtg-2026-06-19-pipeline-sync",
                "Keep raw recordings on encrypted volumes only",
                "quarry",
                "oskar-nieminen",
                ["privacy", "infra"],
                "2026-07-03",
                ["ops/volumes.md"],
                "policy",
            ),
        ]
        for did, mid, title, project, owner, tags, due, paths, category in standalone:
            m = self.meetings[mid]
            people = m.attendees
            d(
                did,
                "decisions",
                title,
                meeting=mid,
                project=project,
                owner=owner,
                tags=tags,
                due=due,
                paths=paths or None,
                category=category,
                reasoning=f"Discussed at the {m.title}; {FIRST[owner]} summarised the options.",
                alternatives=["Leave things as they are", "Revisit next quarter"],
                text=["## Decision\n\n" + title + ".", "## Discussion\n\n" + self.filler(people, 2, project)],
            )
        d(
            "dec-2026-016",
            "decisions",
            "ADR: record architecture decisions as knowledge records",
            meeting="mtg-2026-03-04-search-sync",
            project="lumen",
            owner="ada-okafor",
            dtype="adr",
            tags=["process", "adr"],
            category="process",
            paths=["decisions/"],
            reasoning="Decisions get ids, supersession and citations for free.",
            alternatives=["ADR files in each code repository"],
            text=[
                "## Context\n\nArchitecture decisions were scattered across chat threads and documents.",
                "## Decision\n\nEvery architecture decision is a `kind: claim` record with `type: decision` "
                "(or `adr`), and a changed decision supersedes the old one instead of editing it.",
            ],
        )

    # -- lab/ (nested scope) ---------------------------------------------------------------
    def lab(self) -> None:
        d = self.decision
        f = "lab/decisions"
        d(
            "lab-dec-001",
            f,
            "Book the eye-tracking room through the shared calendar only",
            meeting="mtg-2025-09-22-lab-standup",
            project="halcyon",
            owner="lena-brandt",
            tags=["lab"],
            category="process",
            text=[
                "## Decision\n\nThe room is booked in the shared calendar; paper lists on the door are no longer valid."
            ],
        )
        # Chain D (3 records, ends active): eye-tracker calibration.
        d(
            "lab-dec-002",
            f,
            "Calibrate the eye tracker once per week",
            meeting="mtg-2025-09-22-lab-standup",
            project="halcyon",
            owner="lena-brandt",
            status="superseded",
            superseded_by="lab-dec-004",
            revision=1,
            tags=["lab", "eye-tracking"],
            category="procedure",
            paths=["halcyon/protocol/calibration.md"],
            text=["## Decision\n\nCalibrate in monocular mode every Monday morning before the first session."],
        )
        d(
            "lab-dec-003",
            f,
            "Participants receive a 15 EUR voucher per session",
            meeting="mtg-2025-10-20-lab-standup",
            project="halcyon",
            owner="lena-brandt",
            tags=["lab", "budget"],
            category="budget",
            paths=["halcyon/admin/vouchers.md"],
            text=["## Decision\n\nEach session is paid with a 15 EUR voucher from the Halcyon budget."],
        )
        d(
            "lab-dec-004",
            f,
            "Calibrate before every participant session",
            meeting="mtg-2025-11-17-lab-standup",
            project="halcyon",
            owner="elif-sahin",
            aliases=["Weekly eye-tracker calibration"],
            status="superseded",
            superseded_by="lab-dec-009",
            revision=2,
            tags=["lab", "eye-tracking"],
            category="procedure",
            paths=["halcyon/protocol/calibration.md"],
            text=[
                "## Decision\n\nRun the five-point calibration before every participant, because the gaze "
                "drift over a week was larger than the word-level accuracy we need."
            ],
        )
        # Supersession cycle: lab-dec-005 <-> lab-dec-006.
        d(
            "lab-dec-005",
            f,
            "Lab standup moves to Tuesdays and Fridays",
            meeting="mtg-2026-01-12-lab-standup",
            project="halcyon",
            owner="lena-brandt",
            status="superseded",
            superseded_by="lab-dec-006",
            revision=1,
            tags=["lab", "process"],
            category="process",
            text=["## Decision\n\nThe lab standup happens on Tuesdays and Fridays at 09:30 from February on."],
        )
        d(
            "lab-dec-006",
            f,
            "Lab standup becomes a written check-in",
            meeting="mtg-2026-02-09-lab-standup",
            project="halcyon",
            owner="lena-brandt",
            status="superseded",
            superseded_by="lab-dec-005",
            revision=2,
            tags=["lab", "process"],
            category="process",
            text=[
                "## Decision\n\nReplace the spoken standup with an asynchronous written check-in in the lab "
                "channel. (Someone later marked this as superseded by the earlier decision, so the two now "
                "point at each other.)"
            ],
        )
        d(
            "lab-dec-007",
            f,
            "Store gaze recordings on the lab NAS, never on laptops",
            meeting="mtg-2026-01-12-lab-standup",
            project="halcyon",
            owner="kwame-asante",
            tags=["lab", "privacy"],
            category="policy",
            paths=["halcyon/data/README.md"],
            text=["## Decision\n\nGaze recordings are written straight to the lab NAS. Laptops keep no copies."],
        )
        d(
            "lab-dec-008",
            f,
            "Pilot the new stimulus set with five participants",
            meeting="mtg-2026-02-09-lab-standup",
            project="halcyon",
            owner="hana-kobayashi",
            tags=["lab"],
            due="2026-03-06",
            category="procedure",
            text=["## Decision\n\nRun five pilot sessions with stimulus set v2 before the main batch."],
        )
        d(
            "lab-dec-009",
            f,
            "Calibrate per session and validate every 15 trials",
            meeting="mtg-2026-02-09-lab-standup",
            project="halcyon",
            owner="elif-sahin",
            aliases=["Per-session calibration"],
            revision=3,
            tags=["lab", "eye-tracking"],
            category="procedure",
            paths=["halcyon/protocol/calibration.md", "halcyon/experiment/trials.py"],
            reasoning="Per-session calibration alone lost accuracy late in long sessions.",
            alternatives=["Calibrate every 30 trials", "Head-mounted tracker"],
            text=[
                "## Decision\n\nCalibrate at the start of each session and revalidate every 15 trials; "
                "recalibrate when the validation error exceeds 0.5 degrees."
            ],
        )
        d(
            "lab-dec-010",
            f,
            "Overnight recordings need two people on site",
            meeting="mtg-2026-03-09-lab-standup",
            project="halcyon",
            owner="lena-brandt",
            tags=["lab", "safety"],
            category="policy",
            text=[
                "## Decision\n\nNo overnight recording session runs with fewer than two people in the lab. "
                "This applies to the late-March block, including the night the clocks change."
            ],
        )
        d(
            "lab-dec-011",
            f,
            "Replace the chin rest after the spring batch",
            meeting="mtg-2026-04-20-lab-standup",
            project="halcyon",
            owner="kwame-asante",
            tags=["lab", "budget"],
            due="2026-05-31",
            category="procedure",
            text=["## Decision\n\nOrder a new chin rest once the spring batch is done; budget 240 EUR."],
        )
        d(
            "lab-dec-012",
            f,
            "Share the Halcyon preprocessing scripts under MIT",
            meeting="mtg-2026-05-18-lab-standup",
            project="halcyon",
            owner="tomasz-wrobel",
            tags=["lab", "open-source"],
            category="policy",
            paths=["halcyon/preprocess/LICENSE"],
            text=["## Decision\n\nThe preprocessing scripts are published under the MIT licence with the paper."],
        )
        self.lab_notes()

    def lab_notes(self) -> None:
        lab_people = ["lena-brandt", "elif-sahin", "hana-kobayashi", "kwame-asante", "tomasz-wrobel", "zoe-lefevre"]
        notes = [
            (
                "lab-room-checklist",
                "Eye-tracking room checklist",
                "2025-09-24",
                "1. Lights at level 2.\n2. Chin rest cleaned.\n3. Tracker warmed up for ten minutes.\n"
                "4. Consent form signed and filed.",
            ),
            (
                "lab-calibration-troubleshooting",
                "Calibration troubleshooting",
                "2025-11-20",
                "If calibration fails twice, check glasses and mascara, then lower the room lights. "
                "Never run a session with a failed validation.",
            ),
            (
                "lab-stimulus-set-v2",
                "Stimulus set v2",
                "2026-02-02",
                "Sixty interview excerpts, 80-120 words each, balanced for speaker and topic. "
                "The naïve readability score is only a first filter.",
            ),
            (
                "lab-night-protocol",
                "Night recording protocol",
                "2026-03-16",
                "Clocks go forward at 02:00 on 2026-03-29 in Berlin; the session log must use UTC timestamps. "
                "Two people on site at all times (see [[lab-dec-010]]).",
            ),
            (
                "lab-voucher-accounting",
                "Voucher accounting",
                "2026-04-08",
                "Vouchers are counted weekly against the Halcyon budget line; Gustav gets the sheet monthly.",
            ),
        ]
        for slug, title, when, text in notes:
            meta: dict[str, Any] = {
                "id": slug,
                "kind": "page",
                "type": "note",
                "title": title,
                "tags": ["lab"],
                "summary": title + ".",
                "recorded_at": self.recorded(when),
                "entities": ["proj-halcyon"],
                "origin": "stated",
                "author": FULL[self.rng.choice(lab_people)],
            }
            self.maybe_updated(meta)
            self.add(Doc(f"lab/notes/{slug}.md", meta, body(title, text, self.filler(lab_people, 1, "halcyon"))))
        # The long lab log (> 64 KiB body); 'zebrafish' appears only in its last entry.
        entries: list[str] = []
        d = date(2026, 1, 5)
        while d <= date(2026, 3, 31):
            if d.weekday() < 5:
                lines = [f"## {d.isoformat()} ({_weekday_name(d)})", ""]
                minute = 8 * 60
                for _ in range(self.rng.randint(8, 11)):
                    minute += self.rng.randint(5, 55)
                    who = FIRST[self.rng.choice(lab_people)]
                    temp = 20 + self.rng.randint(0, 30) / 10
                    lines.append(
                        f"- {minute // 60:02d}:{minute % 60:02d} {who}: tracker "
                        f"{self.rng.randint(1, 2)} checked, room at {temp:.1f} °C, "
                        f"validation error {self.rng.randint(18, 49) / 100:.2f} deg. "
                        + self.prose.sentence(lab_people, PROJECT_THINGS["halcyon"])
                    )
                entries.append("\n".join(lines))
            d += timedelta(days=1)
        entries.append(
            "## Appendix\n\nVisitors from the zebrafish imaging group borrowed the spare tracker "
            "for a week in March; it came back recalibrated."
        )
        log_body = body(
            "Halcyon lab log, 2026 Q1",
            "Daily log of the eye-tracking lab. One entry per working day, newest last.",
            *entries,
        )
        if len(log_body.encode()) <= 70_000 or log_body.encode().index(b"zebrafish") <= 65_536:
            raise ValueError("lab log must exceed 64 KiB with 'zebrafish' beyond the first 64 KiB")
        meta = {
            "id": "lab-log-2026-q1",
            "kind": "page",
            "type": "note",
            "title": "Halcyon lab log, 2026 Q1",
            "aliases": ["Lab log Q1"],
            "tags": ["lab", "log"],
            "summary": "Daily eye-tracking lab log for January to March 2026.",
            "recorded_at": "2026-04-01T07:00:00Z",
            "updated_at": "2026-04-02T16:20:00+02:00",
            "entities": ["proj-halcyon"],
            "origin": "observed",
            "author": "Kwame Asante",
        }
        self.add(Doc("lab/notes/lab-log-2026-q1.md", meta, log_body))

    # -- findings --------------------------------------------------------------------------
    def finding(
        self,
        fid: str,
        title: str,
        *,
        text: list[str],
        owner: str | None,
        project: str | None,
        meeting: str | None = None,
        occurred: str | None = None,
        status: str | None = None,
        origin: str = "observed",
        tags: list[str] | None = None,
        evidence: list[Any] | None = None,
        depends_on: list[str] | None = None,
        expires: str | None = None,
        recorded: str | None = None,
        category: str = "finding",
        paths: list[str] | None = None,
        author: str | None = None,
        ftype: str = "finding",
    ) -> Doc:
        m = self.meetings[meeting] if meeting else None
        when = occurred or (m.date if m else None)
        ents = ([pid(owner)] if owner else []) + ([f"proj-{project}"] if project else [])
        meta: dict[str, Any] = {
            "id": fid,
            "kind": "claim",
            "type": ftype,
            "title": title,
            "tags": tags or ["finding"],
            "status": status,
            "summary": title + ".",
            "occurred_at": when,
            "recorded_at": recorded or self.recorded(m.occurred if m else (when or "2026-01-01")),
            "expires_at": expires,
            "entities": ents or None,
            "owner": pid(owner) if owner else None,
            "depends_on": depends_on,
            "source": m.id if m else None,
            "source_event": False if m else None,
            "origin": origin,
            "author": author or (FULL[owner] if owner else None),
            "evidence": evidence,
            "affected_paths": paths,
            "category": category,
        }
        self.maybe_updated(meta, 0.2)
        return self.add(Doc(f"claims/{fid}.md", meta, body(title, *text)))

    def findings(self) -> None:
        f = self.finding
        f(
            "fnd-2026-001",
            "Keyword search misses accented spellings without diacritic folding",
            meeting="mtg-2026-01-14-search-sync",
            owner="farah-nazari",
            project="lumen",
            tags=["search"],
            paths=["lumen/search/fts.py"],
            text=[
                "Before the switch, a query for cafe did not find café and naive did not find naïve. "
                "With diacritic folding in FTS5 both directions match."
            ],
        )
        f(
            "fnd-2026-004",
            "Participant P17 gaze data is corrupted",
            meeting="mtg-2026-02-09-lab-standup",
            owner="tomasz-wrobel",
            project="halcyon",
            status="withdrawn",
            tags=["lab", "data-quality"],
            evidence=[self.evidence("mtg-2026-02-09-lab-standup", "participant P17 looks corrupted")],
            text=["Withdrawn on 2026-02-16: the file was only truncated during copying; the NAS copy is complete."],
        )
        f(
            "fnd-2026-006",
            "Exclude P17 from the reading-speed analysis",
            owner="hana-kobayashi",
            project="halcyon",
            occurred="2026-02-11",
            depends_on=["fnd-2026-004"],
            origin="inferred",
            tags=["lab", "analysis"],
            category="analysis",
            text=["Follows from [[fnd-2026-004]]. Because that finding was withdrawn, this claim is unavailable."],
        )
        f(
            "fnd-2026-007",
            "Nightly keyword index rebuild takes eleven minutes",
            meeting="mtg-2026-02-18-search-sync",
            owner="farah-nazari",
            project="lumen",
            tags=["search", "ops"],
            evidence=[
                self.wrong_evidence(
                    "mtg-2026-02-18-search-sync",
                    "Farah timed the nightly rebuild of the keyword index at eleven minutes.",
                )
            ],
            text=[
                "The nightly FTS5 rebuild of all transcripts takes eleven minutes on the lab server. "
                "(Its evidence locator has stale line numbers.)"
            ],
        )
        f(
            "fnd-2026-008",
            "External transcript collections are too small to help",
            owner="wen-zhao",
            project="cartographer",
            occurred="2026-02-20",
            origin="inferred",
            tags=["survey"],
            evidence=[{"path": "../outside.md", "lines": [1, 3], "quote": "external collections"}],
            text=[
                "Wen surveyed three public transcript collections; none has more than a few hundred hours "
                "in our languages. The evidence points outside the store and cannot be verified."
            ],
        )
        f(
            "fnd-2026-010",
            "Similar-passage search: what we measured so far",
            owner="farah-nazari",
            project="lumen",
            occurred="2026-04-16",
            recorded="2026-04-16T14:05:00+02:00",
            tags=["search", "ML"],
            category="summary",
            origin="inferred",
            evidence=[
                self.evidence("mtg-2025-10-08-search-sync", "1.2 million embedding rows takes about four seconds"),
                self.evidence("mtg-2025-12-10-search-sync", "answers a similar-passage query in about 40 ms"),
                self.evidence("mtg-2026-01-14-search-sync", "matched both café and naïve", (0, 1)),
                self.evidence("mtg-2026-02-04-search-sync", "Memory use of the graph index passed 30 GB"),
                self.evidence("mtg-2026-04-15-search-sync", "removes a second service", (1, 1)),
            ],
            text=[
                "A summary of the measurements behind the current vector index decision "
                "([[dec-2026-021]]). Five evidence locators; all are verifiable."
            ],
        )
        f(
            "fnd-2026-011",
            "Index rebuild was skipped on 17 February",
            owner="bruno-castellanos",
            project="lumen",
            occurred="2026-02-17",
            tags=["search", "ops"],
            evidence=[
                {"path": "meetings/2026-02-17-search-sync.md", "lines": [10, 12], "quote": "rebuild was skipped"}
            ],
            text=["The evidence points at a meeting file that was never written."],
        )
        f(
            "fnd-2024-009",
            "Cloud research credits cover 2,000 GPU hours",
            owner="gustav-lindqvist",
            project="meridian",
            occurred="2024-11-05",
            expires="2025-01-31",
            origin="imported",
            recorded="2025-09-03T08:15:00Z",
            tags=["budget"],
            text=[
                "Imported from the old wiki: the cloud provider's research credits covered 2,000 GPU hours, "
                "valid until the end of January 2025. This claim has expired."
            ],
        )
        f(
            "fnd-2025-040",
            "The interview corpus licence permits research use",
            owner="priya-raman",
            project="fieldnotes",
            occurred="2025-10-01",
            expires="2099-12-31",
            origin="stated",
            tags=["legal", "data-release"],
            category="policy",
            text=[
                "The licence agreed with the interview partners allows research use and sharing with "
                "named collaborators. It does not expire in practice."
            ],
        )
        f(
            "fnd-2025-031",
            "The lab server has 128 GB of RAM",
            owner="oskar-nieminen",
            project="quarry",
            occurred="2025-10-03",
            status="withdrawn",
            tags=["infra"],
            origin="stated",
            text=["Withdrawn: the server has 64 GB; the 128 GB figure was the quote for the replacement."],
        )
        f(
            "fnd-2026-012",
            "Transcription quality dipped for the February batch",
            owner="samantha-reyes",
            project="quarry",
            meeting="mtg-2026-02-13-pipeline-sync",
            occurred="2026-02-20",
            tags=["quality"],
            text=[
                "Word error rate rose from 9% to 13% for the February batch. Dated a week after its source "
                "meeting, when the numbers came in."
            ],
        )
        # Generated findings from about a third of the regular meetings.
        for m in self.meetings.values():
            if m.series is None or self.rng.random() >= 0.35:
                continue
            t, t2 = self.rng.sample(PROJECT_THINGS[m.project], 2)
            who = m.attendees[self.rng.randrange(len(m.attendees))]
            title_t, text_t = self.rng.choice(FINDINGS)
            fill = {"t": t, "t2": t2, "p": FIRST[who], "n": self.rng.randint(3, 12)}
            title = title_t.format(**fill)
            f(
                f"fnd-{m.slug}",
                title[0].upper() + title[1:],
                meeting=m.id,
                owner=who,
                project=m.project,
                origin=self.rng.choice(["observed", "stated", "inferred"]),
                tags=["finding", m.series or "misc"],
                text=[text_t.format(**fill), self.prose.sentence(m.attendees, PROJECT_THINGS[m.project])],
            )

    def wrong_evidence(self, meeting_id: str, quote: str) -> dict[str, Any]:
        doc = self.meetings[meeting_id].doc
        n = doc.line_of(quote)
        lines = doc.text().split("\n")
        a, b = n + 2, n + 3
        if quote in "\n".join(lines[a - 1 : b]):
            raise ValueError("wrong evidence accidentally right")
        return {"path": doc.path, "lines": [a, b], "quote": quote}

    # -- other events ----------------------------------------------------------------------
    def events(self) -> None:
        items = [
            (
                "evt-2026-03-08-upload-complete",
                "Release candidate upload finished",
                "2026-03-08T03:30:00-04:00",
                ["jonah-whitfield"],
                "beacon",
                "The mirror upload finished at 03:30 New York time, one real hour after the 01:30 check-in "
                "([[mtg-2026-03-08-upload-watch]]): the clocks skipped from 02:00 to 03:00 in between.",
            ),
            (
                "evt-2026-03-29-clock-change-check",
                "Lab clocks checked after the change to summer time",
                "2026-03-29",
                ["kwame-asante"],
                "halcyon",
                "Kwame checked that the tracker PCs switched to summer time. Date only; no time was noted.",
            ),
            (
                "evt-2025-10-24-paper-submitted",
                "Lumen short paper submitted",
                "2025-10-24",
                ["ada-okafor", "hana-kobayashi"],
                "lumen",
                "The short paper on search over interview transcripts went out to the workshop.",
            ),
            (
                "evt-2026-02-02-ethics-approval",
                "Ethics approval for the second interview wave",
                "2026-02-02",
                ["uma-krishnan"],
                "fieldnotes",
                "The ethics board approved the second wave, with the 90-day withdrawal promise.",
            ),
            (
                "evt-2026-04-01-server-migration",
                "Lab server migrated to the new rack",
                "2026-04-01T06:00:00Z",
                ["oskar-nieminen"],
                "quarry",
                "The migration started at 06:00 UTC and took three hours; search was read-only meanwhile.",
            ),
            (
                "evt-2026-05-20-workshop",
                "Joint workshop with Bellwether College",
                "2026-05-20",
                ["ada-okafor", "jonah-whitfield", "gustav-lindqvist"],
                "meridian",
                "Two-day workshop in Berlin; the travel budget rule from [[dec-2026-013]] applied.",
            ),
        ]
        for eid, title, occurred, people, project, text in items:
            meta: dict[str, Any] = {
                "id": eid,
                "kind": "claim",
                "type": "event",
                "title": title,
                "tags": ["event"],
                "summary": title + ".",
                "occurred_at": occurred,
                "recorded_at": self.recorded(occurred, (3, 30)),
                "entities": [pid(p) for p in people] + [f"proj-{project}"],
                "origin": "observed",
                "author": FULL[people[0]],
            }
            self.add(Doc(f"claims/{eid}.md", meta, body(title, text)))

    # -- relationships ---------------------------------------------------------------------
    def rel(
        self,
        frm: str,
        relation: str,
        to: str,
        text: str,
        *,
        status: str | None = None,
        tags: list[str] | None = None,
        when: str = "2025-09-10",
    ) -> None:
        short_from = frm.removeprefix("person-").removeprefix("proj-")
        short_to = to.removeprefix("proj-").removeprefix("mtg-").removeprefix("person-")
        rid = f"rel-{short_from}-{relation.replace('_', '-')}-{short_to}"
        title = f"{self.label(frm)} {relation.replace('_', ' ')} {self.label(to)}"
        meta: dict[str, Any] = {
            "id": rid,
            "kind": "relationship",
            "title": title,
            "tags": tags or ["relationship"],
            "status": status,
            "summary": title + ".",
            "recorded_at": self.recorded(when, (0, 72)),
            "from": frm,
            "to": to,
            "relation": relation,
            "origin": "stated",
            "author": "Lena Brandt",
        }
        self.maybe_updated(meta, 0.15)
        self.add(Doc(f"relations/{rid}.md", meta, body(title, text)))

    def label(self, rid: str) -> str:
        """A readable name for a record id (the id itself when no record has it)."""
        if rid.startswith("person-") and rid[7:] in FULL:
            return FULL[rid[7:]]
        if rid.startswith("proj-") and rid[5:] in PROJ:
            return PROJ[rid[5:]][2][0]
        try:
            return str(self.doc_by_id(rid).meta["title"])  # type: ignore[index]
        except KeyError:
            return rid

    def relationships(self) -> None:
        for slug, title, _aliases, lead, members, _tags, _summary in PROJECTS:
            p = f"proj-{slug}"
            firsts = [m for m in self.meetings.values() if m.project == slug]
            ref = f" First meeting on record: [[{firsts[0].id}]]." if firsts else ""
            self.rel(pid(lead), "leads", p, f"[[{pid(lead)}]] leads [[{p}]] ({title}).{ref}", tags=["leads"])
            for mem in members:
                ms = [m.id for m in self.meetings.values() if mem in m.attendees and m.project == slug]
                seen = f" Attended {len(ms)} of its meetings, first [[{ms[0]}]]." if ms else ""
                self.rel(pid(mem), "member_of", p, f"[[{pid(mem)}]] works on [[{p}]].{seen}", tags=["membership"])
        reviews = [
            ("farah-nazari", "dec-2026-021"),
            ("uma-krishnan", "dec-2026-005"),
            ("samir-haddad", "dec-2026-003"),
            ("priya-raman", "dec-2026-026"),
        ]
        for who, dec in reviews:
            self.rel(
                pid(who),
                "reviews",
                dec,
                f"[[{pid(who)}]] reviewed [[{dec}]] before it was recorded.",
                tags=["review"],
                when="2026-01-20",
            )
        for mentor, mentee in [
            ("ada-okafor", "mateus-oliveira"),
            ("lena-brandt", "elif-sahin"),
            ("lena-brandt", "tomasz-wrobel"),
            ("wen-zhao", "hana-kobayashi"),
        ]:
            self.rel(
                pid(mentor),
                "mentors",
                pid(mentee),
                f"[[{pid(mentor)}]] mentors [[{pid(mentee)}]]; they meet every other week.",
                tags=["mentoring"],
            )
        presented = [
            (
                "bruno-castellanos",
                "mtg-2025-12-10-search-sync",
                "Bruno presented the graph prototype and its latency numbers. Follow-up: [[dec-2025-027]].",
            ),
            (
                "farah-nazari",
                "mtg-2026-02-18-search-sync",
                "Farah presented the keyword index rebuild timings; see [[fnd-2026-007]].",
            ),
            (
                "ines-moreau",
                "mtg-2026-01-22-annotation-review",
                "Inès presented the legal advice on the retention policy; see [[dec-2026-005]] and the FAQ "
                "[[note-retention-policy-faq]].",
            ),
            (
                "zoe-lefevre",
                "mtg-2026-01-29-reading-group",
                "Zoë presented a paper on naïve readers' eye movements; notes in [[note-ml-reading-list]] and "
                "a dangling link to [[note-does-not-exist]].",
            ),
            (
                "kwame-asante",
                "mtg-2026-03-29-night-recording",
                "Kwame ran the session that crossed the clock change; see [[evt-2026-03-29-clock-change-check]].",
            ),
        ]
        for who, mid, text in presented:
            self.rel(
                pid(who),
                "presented_at",
                mid,
                f"[[{pid(who)}]] presented at [[{mid}]]. {text}",
                tags=["presentation"],
                when=mid[4:14],
            )
        for a, b, text in [
            ("lumen", "quarry", "Lumen indexes the transcripts that Quarry produces."),
            ("cartographer", "lumen", "Cartographer links findings using Lumen's search results."),
            ("beacon", "tessera", "Beacon ships the annotations made in Tessera."),
        ]:
            self.rel(
                f"proj-{a}",
                "builds_on",
                f"proj-{b}",
                f"[[proj-{a}]] builds on [[proj-{b}]]. {text}",
                tags=["dependency"],
            )
        self.rel(
            pid("viktor-hale"),
            "sponsors",
            "proj-cartographer",
            "Withdrawn: Viktor's sponsorship was announced in error; the department sponsors "
            "[[proj-cartographer]] as a whole.",
            status="withdrawn",
            tags=["sponsorship"],
        )
        self.rel(
            pid("viktor-hale"),
            "advises",
            "proj-atlas-legacy",
            "[[person-viktor-hale]] advises the Atlas legacy project ([[proj-atlas-legacy]]), which has "
            "no record in this store.",
            tags=["advice"],
        )

    # -- notes -----------------------------------------------------------------------------
    def note(
        self,
        nid: str,
        title: str,
        when: str,
        text: list[str],
        *,
        ntype: str = "note",
        tags: list[str] | None = None,
        author: str = "ada-okafor",
        entities: list[str] | None = None,
        origin: str = "stated",
        folder: str = "notes",
        fname: str | None = None,
        extra: dict[str, Any] | None = None,
        unquote: tuple[str, ...] = (),
    ) -> Doc:
        meta: dict[str, Any] = {
            "id": nid,
            "kind": "page",
            "type": ntype,
            "title": title,
            "tags": tags or ["note"],
            "summary": title + ".",
            "recorded_at": self.recorded(when),
            "entities": entities,
            "origin": origin,
            "author": FULL[author],
        }
        self.maybe_updated(meta, 0.25)
        meta.update(extra or {})
        name = fname or nid.removeprefix("note-")
        return self.add(Doc(f"{folder}/{name}.md", meta, body(title, *text), unquote=unquote))

    def notes(self) -> None:
        n = self.note
        team = [p[0] for p in PEOPLE]
        n(
            "note-search-stack-overview",
            "Search stack overview",
            "2026-04-17",
            [
                "Lumen answers two kinds of questions: keyword queries and similar-passage queries.",
                "## Keyword search\n\nSQLite FTS5 with BM25 ranking ([[dec-2026-003]]). No stemming, accent-"
                "insensitive (café = cafe).",
                "## Similar passages\n\nThe vector index lives in the same SQLite file ([[dec-2026-021]]). Older "
                "approaches are kept as superseded decisions.",
                "## Operations\n\nThe nightly job rebuilds whatever changed; a full rebuild takes about eleven "
                "minutes.",
            ],
            tags=["search", "overview"],
            entities=["proj-lumen"],
            author="bruno-castellanos",
        )
        n(
            "note-budget-2026",
            "Budget overview 2026",
            "2026-01-30",
            [
                "| Line | Budget (EUR) | Spent by March |\n|---|---|---|\n| GPU | 26,000 | 14,200 |\n"
                "| Student assistants | 38,000 | 9,500 |\n| Travel | 12,000 | 3,100 |\n| Vouchers | 4,500 | 1,830 |",
                "The budget is reviewed at every budget call. See [[dec-2026-002]] and [[dec-2026-013]].",
                self.filler(["gustav-lindqvist", "viktor-hale", "jonah-whitfield"], 1, "meridian"),
            ],
            tags=["budget"],
            entities=["proj-meridian"],
            author="gustav-lindqvist",
        )
        n(
            "note-retention-policy-faq",
            "Retention policy FAQ",
            "2026-03-02",
            [
                "**How long do we keep raw recordings?** Under discussion: the last rule was withdrawn, see "
                "[[dec-2026-015]]. Until a new decision is recorded, ask Uma.",
                "**Are transcripts affected?** No, the retention policy covers raw audio and video only.",
                "**Who decides?** The Fieldnotes lead with the ethics office.",
            ],
            ntype="memo",
            tags=["privacy", "retention"],
            entities=["proj-fieldnotes"],
            author="uma-krishnan",
        )
        n(
            "note-cafe-meetup",
            "Café meetup with the Bellwether group",
            "2025-10-14",
            [
                "Jonah and Samantha visited Berlin; we met at the café on the ground floor.",
                "Topics: the joint budget, the Beacon release, and whether the New York team can run "
                "transcription checks overnight for us.",
                self.filler(team, 1),
            ],
            tags=["social", "bellwether"],
            author="zoe-lefevre",
            entities=["person-jonah-whitfield", "person-samantha-reyes"],
        )
        n(
            "note-naive-bayes-baseline",
            "Naïve Bayes baseline for topic labels",
            "2025-11-28",
            [
                "A naïve Bayes classifier over bag-of-words features reaches 0.71 macro-F1 on the topic labels. "
                "It is the baseline every other model has to beat.",
                "Features: unigrams and bigrams, minimum count 3. Training takes seconds.",
            ],
            tags=["ML", "evaluation"],
            author="wen-zhao",
            entities=["proj-cartographer"],
        )
        n(
            "note-ml-reading-list",
            "ml reading list",
            "2026-01-30",
            [
                "- Learning to rank for transcript search\n- Gaze as implicit relevance feedback\n"
                "- Product search at small scale"
            ],
            tags=["ml", "reading-group"],
            author="hana-kobayashi",
        )
        n(
            "note-onboarding",
            "Onboarding checklist for new students",
            "2025-09-08",
            [
                "1. Get a lab account from Oskar.\n2. Read [[note-privacy-checklist]].\n3. Shadow one annotation "
                "review and one lab standup.\n4. Add yourself under `people/`."
            ],
            tags=["onboarding"],
            author="lena-brandt",
        )
        n(
            "note-how-to-rebuild-index",
            "How to rebuild the keyword index",
            "2026-02-19",
            [
                "Run `make reindex` on the lab server. The FTS5 tables are projections: dropping them is safe, "
                "dropping the state database is not (it also holds safeguards).",
                "A full rebuild takes about eleven minutes.",
            ],
            ntype="memo",
            tags=["search", "ops", "howto"],
            author="farah-nazari",
            entities=["proj-lumen"],
        )
        n(
            "note-meeting-notes-whiteboard",
            "Take meeting notes on the shared whiteboard document",
            "2025-09-05",
            [
                "Until further notice, meeting notes go on the shared whiteboard document, one page per week.",
                "Superseded by [[dec-2025-033]].",
            ],
            ntype="memo",
            tags=["process"],
            author="ada-okafor",
            extra={"status": "superseded", "superseded_by": "dec-2025-033", "revision": 1},
        )
        n(
            "note-gpu-usage-report",
            "GPU usage report, winter term",
            "2026-03-31",
            [
                "GPU hours by project: Lumen 1,420, Cartographer 310, Quarry 95.",
                "Spending stayed inside the quarterly budget in January and February; March ran over because of "
                "the paper deadline.",
            ],
            tags=["budget", "infra"],
            author="gustav-lindqvist",
            entities=["proj-meridian"],
        )
        n(
            "note-interview-protocol",
            "Interview protocol v2",
            "2025-10-10",
            [
                "Semi-structured, 45-60 minutes, audio only unless the participant asks for video.",
                "The consent form names the retention policy and the 90-day withdrawal window.",
            ],
            tags=["fieldwork"],
            author="ines-moreau",
            entities=["proj-fieldnotes"],
        )
        n(
            "note-dst-scheduling",
            "Scheduling across the clock changes",
            "2026-03-01",
            [
                "New York moves its clocks on 2026-03-08, Berlin on 2026-03-29. For three weeks the budget call "
                "is at 16:00 instead of 17:00 Berlin time.",
                "Write meeting times with an explicit offset, e.g. `2026-03-29T23:30:00+02:00`. These dates are "
                "prose: they create no structured records.",
            ],
            ntype="memo",
            tags=["scheduling"],
            author="gustav-lindqvist",
        )
        n(
            "note-glossary",
            "Glossary",
            "2025-09-12",
            [
                "- **Gold set**: the 200 queries with relevance judgements.\n- **Session**: one participant in the "
                "eye-tracking lab.\n- **Wave**: one round of field interviews."
            ],
            tags=["reference"],
            author="lena-brandt",
        )
        n(
            "note-server-inventory",
            "Lab server inventory",
            "2025-10-06",
            [
                "| Host | RAM | Role |\n|---|---|---|\n| lumen-01 | 64 GB | search |\n| quarry-01 | 32 GB | "
                "transcription |\n| nas-01 | - | storage |"
            ],
            tags=["infra"],
            author="oskar-nieminen",
            entities=["proj-quarry"],
        )
        n(
            "note-privacy-checklist",
            "Privacy checklist for transcripts",
            "2025-09-15",
            [
                "- Names replaced by codes.\n- Places coarsened to the region.\n- Raw audio never leaves the "
                "institute network."
            ],
            tags=["privacy"],
            author="uma-krishnan",
        )
        n(
            "note-writing-retreat",
            "Writing retreat plan",
            "2026-05-04",
            ["Three days in June, no meetings. Each person brings one draft.", self.filler(team, 1)],
            tags=["writing"],
            author="hana-kobayashi",
        )
        n(
            "note-conference-deadlines",
            "Conference deadlines 2026",
            "2026-01-08",
            [
                "- Workshop paper: 2026-04-05, 23:59 Berlin time.\n- Main conference: 2026-06-26.\n"
                "- Dataset track: 2026-08-14."
            ],
            tags=["writing"],
            author="ada-okafor",
        )
        # Monthly status memos.
        for y, mo in [
            (2025, 9),
            (2025, 10),
            (2025, 11),
            (2025, 12),
            (2026, 1),
            (2026, 2),
            (2026, 3),
            (2026, 4),
            (2026, 5),
            (2026, 6),
        ]:
            end = (date(y + mo // 12, mo % 12 + 1, 1) - timedelta(days=1)).isoformat()
            author = self.rng.choice(["ada-okafor", "lena-brandt", "gustav-lindqvist"])
            sections = [
                f"## {PROJ[p][1]}\n\n" + self.filler([PROJ[p][3], *PROJ[p][4]], 1, p)
                for p in sorted(self.rng.sample(list(PROJ), 3))
            ]
            n(
                f"note-status-{y}-{mo:02d}",
                f"Status memo {y}-{mo:02d}",
                end,
                ["Monthly status across projects.", *sections],
                ntype="memo",
                tags=["status"],
                author=author,
            )

    # -- defects ---------------------------------------------------------------------------
    def defects(self) -> None:
        n = self.note
        n(
            "bad id with spaces",
            "A note whose id is invalid",
            "2026-02-05",
            ["This note's id has spaces, so it is excluded and reported."],
            fname="bad-id",
        )
        for fname in ("retention-draft", "archive/retention-draft"):
            n(
                "note-retention-draft",
                "Draft retention policy notes",
                "2026-01-19",
                ["Two files carry this id, so both are excluded.", "Draft: retention policy questions for legal."],
                tags=["privacy", "draft"],
                author="ines-moreau",
                fname=fname,
            )
        n(
            "note-offsite-recap",
            "Offsite recap",
            "2026-03-02",
            [
                "Recap of the team offsite at the lake. The occurred_at date in the header is impossible "
                "(30 February) and is written unquoted, so a loader that builds dates itself rejects the file.",
                self.filler([p[0] for p in PEOPLE], 1),
            ],
            tags=["team"],
            author="lena-brandt",
            extra={"occurred_at": "2026-02-30"},
            unquote=("occurred_at: 2026-02-30",),
        )
        n(
            "note-transcription-conventions",
            "Transcription conventions (imported)",
            "2026-01-15",
            [
                "Imported from the old wiki. Pauses longer than two seconds are marked (pause). Overlapping "
                "speech is marked with brackets.",
                "The recording time of this import has no offset, so it is dropped and reported.",
            ],
            tags=["fieldwork", "imported"],
            author="samantha-reyes",
            origin="imported",
            extra={"recorded_at": "2026-01-15T10:00:00"},
        )
        n(
            "note-sync-checklist",
            "Checklist before a search sync",
            "2026-03-10",
            [
                "1. Update the latency dashboard.\n2. Collect open pull requests.\n3. Check the index health page.",
                "The updated_at in this header has no seconds, so it is dropped and reported.",
            ],
            tags=["search", "process"],
            author="mateus-oliveira",
            extra={"updated_at": "2026-03-11T09:30+01:00"},
        )
        self.add(
            Doc(
                "notes/broken-frontmatter.md",
                raw=(
                    "---\nid: note-broken-frontmatter\nkind: page\ntype: note\n"
                    "title: Notes with an unterminated header\n"
                    "\n# Notes with an unterminated header\n\n"
                    "The frontmatter above is never closed, so this file is not a record.\n"
                ),
            )
        )
        self.add(
            Doc(
                "notes/list-frontmatter.md",
                raw=(
                    "---\n- id: note-list-frontmatter\n- kind: page\n- title: Frontmatter that is a list\n---\n\n"
                    "# Frontmatter that is a list\n\nThe header parses as YAML, but it is a list, not a mapping.\n"
                ),
            )
        )

    def non_records(self) -> None:
        readme = "\n".join(
            [
                "# Demo research store",
                "",
                "A fictional team at the Nordlicht Institute (Berlin) with partners at Bellwether College",
                "(New York). Generated by `scripts/make_demo_store.py`; do not edit by hand, regenerate.",
                "",
                "Files and folders starting with `_` or `.` (like this one) are not records.",
                "",
                "## Folders (scopes)",
                "",
                "- `people/`, `projects/`: pages for people and projects",
                "- `meetings/`: meeting pages; the time is in `fields.occurred_at`",
                "- `claims/`: event claims (`source_event: true` stands for a meeting), action items, findings",
                "- `decisions/`, `lab/decisions/`: decisions, some superseded in chains",
                "- `relations/`: relationships between people, projects, meetings and decisions",
                "- `notes/`, `notes/archive/`, `lab/notes/`: notes and memos",
                "",
                "## Deliberate defects",
                "",
                *(f"- {k}: {v}" for k, v in DEFECTS.items()),
                "",
            ]
        )
        self.add(Doc("_README.md", raw=readme))
        self.add(
            Doc(
                "_templates/meeting.md",
                raw=(
                    "---\nid: mtg-YYYY-MM-DD-slug\nkind: page\ntype: meeting\ntitle: Meeting title\n"
                    "entities: [person-someone, proj-something]\nfields:\n  occurred_at: 'YYYY-MM-DDTHH:MM:SS+01:00'\n"
                    "---\n\n# Meeting title\n\n## Agenda\n\n1. ...\n\n## Notes\n\n...\n"
                ),
            )
        )
        old = self.doc_by_id("dec-2025-012")
        assert old.meta is not None
        trash_meta = dict(old.meta)
        trash_meta.update(status=None, superseded_by=None, title=old.meta["title"] + " (deleted copy)")
        self.add(
            Doc(
                ".trash/old.md",
                trash_meta,
                "\nDeleted copy of a columnar Parquet decision. Not a record: it lives under .trash/.\n",
            )
        )

    def doc_by_id(self, rid: str) -> Doc:
        found = [d for d in self.docs if d.meta is not None and d.raw is None and d.meta.get("id") == rid]
        if len(found) != 1:
            raise KeyError(rid)
        return found[0]

    # -- checks and output -----------------------------------------------------------------
    def record_docs(self) -> list[Doc]:
        return [d for d in self.docs if not any(part[0] in "._" for part in d.path.split("/"))]

    def check(self) -> None:
        paths = [d.path for d in self.docs]
        if len(set(paths)) != len(paths):
            raise ValueError("duplicate paths")
        ids = Counter(d.meta["id"] for d in self.record_docs() if d.meta is not None and d.raw is None)
        dups = sorted(i for i, c in ids.items() if c > 1)
        if dups != ["note-retention-draft"]:
            raise ValueError(f"unexpected duplicate ids {dups}")
        for word, expected in RESERVED_WORDS.items():
            rx = re.compile(rf"\b{re.escape(word)}\b", re.I)
            hits = sorted(
                d.meta["id"] for d in self.record_docs() if d.meta is not None and d.raw is None and rx.search(d.text())
            )
            raw_hits = [d.path for d in self.record_docs() if d.raw is not None and rx.search(d.text())]
            if hits != sorted(expected) or raw_hits:
                raise ValueError(f"reserved word {word!r} found in {hits + raw_hits}, expected {expected}")
        by_path = {d.path: d for d in self.docs}
        for d in self.record_docs():
            for ev in (d.meta or {}).get("evidence") or []:
                target = by_path.get(ev["path"])
                if target is None:
                    continue
                a, b = ev["lines"]
                inside = ev["quote"] in "\n".join(target.text().split("\n")[a - 1 : b])
                if inside != (d.id != "fnd-2026-007"):
                    raise ValueError(f"evidence of {d.id} is {'right' if inside else 'wrong'}")

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "knowtk.yaml").write_bytes(KNOWTK_YAML.encode())
        for d in sorted(self.docs, key=lambda x: x.path):
            target = out / d.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(d.text().encode("utf-8"))

    def summary(self, out: Path) -> str:
        recs = [d for d in self.record_docs() if d.raw is None and d.meta is not None]
        kinds = Counter(d.meta["kind"] for d in recs if d.meta)
        types = Counter(d.meta.get("type") or d.meta["kind"] for d in recs if d.meta)
        statuses = Counter(d.meta.get("status") or "active" for d in recs if d.meta)

        def fmt(c: Counter[str]) -> str:
            return " ".join(f"{k}={v}" for k, v in sorted(c.items()))

        return (
            f"{out}: {len(recs)} record files + {len(self.record_docs()) - len(recs)} broken + "
            f"{len(self.docs) - len(self.record_docs())} non-records | kind: {fmt(kinds)} | "
            f"type: {fmt(types)} | status: {fmt(statuses)} | defects: {len(DEFECTS)} "
            f"({', '.join(DEFECTS)})"
        )


KNOWTK_YAML = """\
name: demo-research
share: true
ontology:
  meeting: {aliases: [call, standup]}
  decision: {aliases: [adr]}
  note: {aliases: [memo]}
  action_item: {aliases: [todo]}
"""


def clear_output(out: Path) -> None:
    """Empty a previous demo store (keeping knowtk's .knowtk/ state), refusing unrelated folders."""
    if not out.exists():
        return
    entries = sorted(p.name for p in out.iterdir())
    if entries and "knowtk.yaml" not in entries:
        raise SystemExit(f"refusing to overwrite {out}: not empty and has no knowtk.yaml")
    for name in entries:
        if name == STATE_DIR:
            continue
        p = out / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def generate(out: Path, seed: int = DEFAULT_SEED) -> Store:
    store = Store(seed)
    store.build()
    store.check()
    clear_output(out)
    store.write(out)
    return store


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    args = ap.parse_args(argv)
    store = generate(args.out, args.seed)
    print(store.summary(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
