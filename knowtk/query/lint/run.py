"""``lint``: the runner of ``knowledge_lint``; every rule over one snapshot, the findings sorted by file and line.

Its answer (documented in docs/lint.md)::

    {"findings": [{"rule", "severity", "path", "line", "column", "message", "id"}],
     "errors": n, "warnings": n, "files": n (files with findings), "checked": n (files in the store),
     "rules": {rule: severity}, "snapshot": fingerprint, "coverage": the store's coverage issues}

Lint reads the store and never writes a Markdown file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from knowtk.query.common import coverage
from knowtk.query.lint.adr_checks import adr_findings, adr_records
from knowtk.query.lint.link_cache import LastPass, LinkCache
from knowtk.query.lint.links import LinkChecker
from knowtk.query.lint.rules import ERROR, OFF, WARNING, Finding
from knowtk.query.lint.settings import LintSettings, load_settings
from knowtk.query.lint.store_checks import chain_findings, coverage_findings
from knowtk.query.lint.where import FileLines

if TYPE_CHECKING:
    from knowtk.engine.engine import Engine
    from knowtk.model.profile import ProfileMap
    from knowtk.query.citations import EvidenceVerifier
    from knowtk.snapshot.model import Snapshot

__all__ = ["LINK_RULES", "lint"]

LINK_RULES = ("broken-link", "broken-wikilink", "broken-anchor")
_SAYS_THE_LINK = frozenset({"missing-supersession-target", "missing-reference"})


def lint(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    settings = load_settings(engine.root, args.get("rules") or ())
    snap = engine.snapshot()
    profiles = engine.profile_map()
    where = FileLines(engine.root)

    def make(
        rule: str, path: str, line: int | None, message: str, rid: str | None = None, column: int | None = None
    ) -> Finding:
        return Finding(rule, settings.severities[rule], path, line, message, rid, column)

    def wanted(rule: str, path: str) -> bool:  # (a finding no one will see costs no read of its file)
        return settings.severities[rule] != OFF and not settings.ignored(path)

    found = [*coverage_findings(snap, profiles, where, make, wanted), *chain_findings(snap, profiles, where, make)]
    found += adr_findings(snap, adr_records(snap, profiles), where, make)
    if any(settings.severities[rule] != OFF for rule in LINK_RULES):
        links, checked = _link_findings(engine, snap, profiles, settings, make)
        found += links
    else:
        checked = len(_checked(snap, settings))
    kept = _kept(found, settings)
    return {
        "findings": [f.to_json() for f in kept],
        "errors": sum(1 for f in kept if f.severity == ERROR),
        "warnings": sum(1 for f in kept if f.severity == WARNING),
        "files": len({f.path for f in kept}),
        "checked": checked,
        "rules": dict(sorted(settings.severities.items())),
        "snapshot": snap.fingerprint(()),
        "coverage": coverage(snap, ()),  # as every tool's: the issues above, as queries report them
    }


def _checked(snap: Snapshot, settings: LintSettings) -> list[str]:
    """The files lint checks: the store's, but those its settings ignore, in path order."""
    everything = sorted(snap.paths)
    return [p for p in everything if not settings.ignored(p)] if settings.ignore else everything


def _link_findings(
    engine: Engine, snap: Snapshot, profiles: ProfileMap, settings: LintSettings, make: Callable[..., Finding]
) -> tuple[list[Finding], int]:
    """The link findings and how many files lint checked: on the snapshot the last lint ran on (with the same
    settings) its links again (``LastPass``), else each file's from the content cache or the file."""
    state_dir = os.path.dirname(engine.state_path)
    wiki = "obsidian" in (profiles.default, *(name for _, name in profiles.prefixes))
    checker = LinkChecker(engine.root, lambda: snap.paths, profiles, make)
    fingerprint = snap.fingerprint(())
    last = LastPass.load(state_dir)
    if last is not None and last.holds(state_dir, fingerprint, settings.ignore, wiki=wiki):
        return [f for path, links in last.linked.items() for f in checker.resolved(path, links)], last.checked
    checked = _checked(snap, settings)
    # a template's links are placeholders ([next](yyyymmdd-xxx.md)), not links a reviewer would fix
    linked = [p for p in checked if "template" not in p.rpartition("/")[2].lower()]
    cache = LinkCache(state_dir, wiki=wiki)
    found = list(checker.findings(linked, cache))
    cache.save({LinkCache.key(sha) for sha in snap.paths.values() if sha})
    LastPass(fingerprint, settings.ignore, wiki, len(checked), checker.linked).save(state_dir)
    return found, len(checked)


def _kept(found: list[Finding], settings: LintSettings) -> list[Finding]:
    """The findings of the rules that are on, outside the ignored paths, once each, by file, line and rule.

    A link that is also a supersession naming no record ("Superseded by [9](0009-x.md)") is one problem:
    the supersession's finding says it, the link's is left out.
    """
    named = {(f.path, f.line) for f in found if f.rule in _SAYS_THE_LINK}
    unique = {
        (f.path, f.line or 0, f.rule, f.message): f
        for f in found
        if f.severity != OFF
        and not settings.ignored(f.path)
        and not (f.rule == "broken-link" and (f.path, f.line) in named)
    }
    return [unique[key] for key in sorted(unique, key=lambda k: (k[0], k[1], k[2], k[3]))]
