"""The lint rules: each an id, a default severity, a one-line summary and a short doc with an example.

A ``Finding`` is one problem a rule found: the rule, its severity, the file and line, a one-line message
and the record's id when the file is one. ``RULE_OF_CODE`` says which rule reports each coverage issue
the snapshot already knows (``knowtk.model.records``, ``knowtk.snapshot.build``); a code it does not
name (a plug-in's) is reported by ``coverage-issue``.
"""

from __future__ import annotations

from typing import Any

from knowtk.model.shapes import shape

__all__ = ["ERROR", "OFF", "RULES", "RULE_OF_CODE", "SEVERITIES", "WARNING", "Finding", "Rule"]

ERROR, WARNING, OFF = "error", "warning", "off"
SEVERITIES = (ERROR, WARNING, OFF)


@shape(frozen=True, slots=True)
class Rule:
    id: str
    severity: str  # the default: error or warning
    summary: str
    doc: str
    example: str


@shape(frozen=True, slots=True)
class Finding:
    rule: str
    severity: str
    path: str
    line: int | None
    message: str
    id: str | None = None  # the record's id, when the file is one
    column: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "id": self.id,
        }


_RULES = (
    Rule(
        "missing-supersession-target",
        ERROR,
        "a supersession names no record",
        "The record says it is superseded by a record the store does not hold (a typo, a deleted or renamed file).",
        "superseded_by: dec-2026-099   # no record has this id\nStatus: Superseded by [ADR 9](0009-x.md)   # no 0009",
    ),
    Rule(
        "missing-reference",
        ERROR,
        "a dependency, source, endpoint, owner or entity names no record",
        "A structured reference (depends_on, source, from, to, owner, entities) names an id no record has: the "
        "record is unavailable to every query.",
        "depends_on: [fnd-2026-004]   # no record has this id",
    ),
    Rule(
        "supersession-cycle",
        ERROR,
        "supersession chain in a cycle",
        "Records supersede each other in a loop, so none of them is current: every record on it is reported.",
        "a.md: superseded_by: b\nb.md: superseded_by: a",
    ),
    Rule(
        "chain-ends-withdrawn",
        ERROR,
        "a supersession chain ends at a withdrawn record",
        "The record is superseded by one that was withdrawn: the chain leads to nothing in force.",
        "old.md: superseded_by: new\nnew.md: status: withdrawn",
    ),
    Rule(
        "depends-on-withdrawn",
        WARNING,
        "a dependency is withdrawn",
        "The record depends on a withdrawn record, so it is unavailable to queries too.",
        "depends_on: [fnd-2026-004]   # fnd-2026-004 has status: withdrawn",
    ),
    Rule(
        "one-way-supersession",
        WARNING,
        "only one side of a supersession is written",
        "In an ADR folder that writes both sides (adr-tools: 'Supersedes' in the new ADR, 'Superseded by' in the "
        "old), one side is missing or names another ADR. Reported on the file to fix.",
        "0007-b.md: Supersedes [5. A](0005-a.md)\n0005-a.md: Status: Deprecated   # says nothing of 7",
    ),
    Rule(
        "stale-status",
        ERROR,
        "a status word says in force, but the record is superseded or withdrawn",
        "The status an agent or a reader sees says the decision holds (accepted, active) while another record "
        "supersedes it, or the store withdrew it.",
        "0005-a.md: Status: Accepted\n0007-b.md: Supersedes [5. A](0005-a.md)",
    ),
    Rule(
        "superseded-without-replacement",
        ERROR,
        "status superseded, but no replacement named",
        "The record says superseded but names no record that replaces it (or names one no link or number resolves).",
        "status: superseded   # and no superseded_by\nStatus: Superseded   # ADR: by what?",
    ),
    Rule(
        "replacement-predates",
        WARNING,
        "a replacement is dated before the record it replaces",
        "The record that supersedes another has an earlier date (occurred_at, an ADR's Date): one date is wrong, "
        "or the chain points the wrong way.",
        "0005-a.md: Date: 2024-03-01, Superseded by [7](0007-b.md)\n0007-b.md: Date: 2023-01-10",
    ),
    Rule(
        "duplicate-id",
        ERROR,
        "two files claim one id",
        "Several files give the same id: none of them is a record until one is renamed.",
        "notes/a.md: id: note-x\nnotes/archive/a.md: id: note-x",
    ),
    Rule(
        "duplicate-adr-number",
        ERROR,
        "two ADRs with one number",
        "Two ADR files in one folder carry the same number (often two branches merged): neither is read.",
        "0007-use-iso-dates.md\n0007-invoke-config.md",
    ),
    Rule(
        "unread-adr",
        WARNING,
        "a file looks like an ADR but is not read as one",
        "In an ADR folder, a file with ADR sections (Context, Decision) but no number in its name is read as a "
        "plain page; an ADR without a title heading gets its file name as title.",
        "docs/adr/use-kafka.md   # ## Status, ## Decision, but no number\n0004-x.md   # no '# 4. Title' line",
    ),
    Rule(
        "broken-link",
        ERROR,
        "a Markdown link to a file that does not exist",
        "A relative link ([text](path)) names a file or folder that is not there. Links with a scheme (https:, "
        "mailto:) and absolute paths are not checked.",
        "See [the old decision](0003-use-mysql.md)   # no such file",
    ),
    Rule(
        "broken-wikilink",
        ERROR,
        "an Obsidian [[link]] that resolves to no note",
        "In a vault read with the obsidian profile, a [[wikilink]] names no note (or two of one name, ambiguous), "
        "as Obsidian resolves it: a whole path, a note of that name in the same folder, else the shortest path.",
        "[[Meeting notes 2024-01-03]]   # no such note",
    ),
    Rule(
        "broken-anchor",
        WARNING,
        "a link to a heading that does not exist",
        "A link's #anchor names no heading of the file it points to (GitHub's heading ids; Obsidian's heading text).",
        "[why](0005-use-postgres.md#consequence)   # the heading is 'Consequences'",
    ),
    Rule(
        "invalid-date",
        ERROR,
        "a date that is not a real date",
        "A date field is not a real YYYY-MM-DD or a timestamp with seconds and an offset: it is dropped, and the "
        "record is missing from date queries.",
        "occurred_at: 2026-02-30\nDate: 21/02/2017",
    ),
    Rule(
        "invalid-frontmatter",
        ERROR,
        "frontmatter that knowtk cannot read as a record",
        "The YAML is broken or unclosed, or a field has the wrong shape (id, kind, status, revision, a list): the "
        "file is no record, or the field is ignored.",
        "---\nid: bad id with spaces\n---",
    ),
    Rule(
        "unreadable-file",
        ERROR,
        "a file knowtk cannot read",
        "The file is not UTF-8, too large, not a regular file, or cannot be opened.",
        "notes/scan.md   # Latin-1 bytes",
    ),
    Rule(
        "invalid-config",
        ERROR,
        "knowtk.yaml cannot be used as written",
        "A setting of knowtk.yaml is invalid; its defaults are used instead.",
        "profile: adrs   # no such profile",
    ),
    Rule(
        "coverage-issue",
        WARNING,
        "any other coverage issue",
        "A coverage issue no other rule names (a plug-in's, say), as queries report it.",
        "(the issue's own message)",
    ),
)

RULES: dict[str, Rule] = {rule.id: rule for rule in _RULES}

_FRONTMATTER_CODES = (
    "frontmatter_invalid",
    "frontmatter_missing",
    "frontmatter_unclosed",
    "frontmatter_not_mapping",
    "frontmatter_too_large",
    "frontmatter_recursive",
    "id_missing",
    "id_invalid",
    "kind_invalid",
    "status_invalid",
    "revision_invalid",
    "field_invalid",
    "evidence_invalid",
    "endpoints_missing",
)
_UNREADABLE_CODES = ("not_utf8", "unreadable", "file_too_large", "not_regular_file", "symlink_skipped", "path_too_long")

RULE_OF_CODE: dict[str, str] = {
    "supersession_target_missing": "missing-supersession-target",
    "dependency_missing": "missing-reference",
    "supersession_cycle": "supersession-cycle",
    "superseded_by_missing": "superseded-without-replacement",
    "replacement_unresolved": "superseded-without-replacement",
    "stale_revision": "stale-status",
    "stale_withdrawn": "stale-status",
    "id_duplicate": "duplicate-id",
    "date_invalid": "invalid-date",
    "config_invalid": "invalid-config",
    **dict.fromkeys(_FRONTMATTER_CODES, "invalid-frontmatter"),
    **dict.fromkeys(_UNREADABLE_CODES, "unreadable-file"),
}
