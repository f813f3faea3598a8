"""Which lint rules run at which severity, and which paths lint leaves out.

``knowtk.yaml`` may hold a ``lint:`` mapping::

    lint:
      rules: {broken-anchor: off, one-way-supersession: error}
      ignore: ["docs/adr/0001-*.md", "archive/"]

and each call may override a rule (``--rule RULE=SEVERITY``, the ``rules`` argument). A setting lint
cannot use is refused (``InvalidArgument`` naming it): a linter that ignored its settings would pass
what it was told to fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from knowtk.errors import InvalidArgument
from knowtk.model.config import CONFIG_FILE
from knowtk.model.records import FileProblem, parse_yaml, read_regular
from knowtk.model.shapes import shape
from knowtk.query.lint.rules import RULES, SEVERITIES

__all__ = ["LintSettings", "load_settings", "parse_rule"]

_MAX_CONFIG_BYTES = 1024 * 1024


@shape(frozen=True)
class LintSettings:
    severities: dict[str, str]  # rule id -> error | warning | off
    ignore: tuple[str, ...] = ()  # glob patterns of store paths; one ending with "/" is a folder

    def ignored(self, path: str) -> bool:
        for pattern in self.ignore:
            if pattern.endswith("/"):
                if path.startswith(pattern):
                    return True
            elif fnmatchcase(path, pattern):
                return True
        return False


def parse_rule(item: str, *, where: str = "rules") -> tuple[str, str]:
    """``RULE=SEVERITY`` as (rule, severity), or InvalidArgument naming ``where`` and what is allowed."""
    rule, eq, severity = item.partition("=")
    rule, severity = rule.strip(), severity.strip().lower()
    if not eq or rule not in RULES:
        raise InvalidArgument(where, f"{item!r} is not RULE=SEVERITY with a known rule", allowed=sorted(RULES))
    if severity not in SEVERITIES:
        raise InvalidArgument(where, f"{item!r}: the severity must be one of {', '.join(SEVERITIES)}")
    return rule, severity


def load_settings(root: str, overrides: Iterable[str] = ()) -> LintSettings:
    """The defaults, then ``knowtk.yaml``'s ``lint:``, then ``overrides`` (``RULE=SEVERITY`` each)."""
    severities = {rule.id: rule.severity for rule in RULES.values()}
    section = _lint_section(root)
    where = f"{CONFIG_FILE} lint"
    rules = section.get("rules") or {}
    if not isinstance(rules, dict):
        raise InvalidArgument(f"{where}.rules", "must map rule ids to error, warning or off", allowed=sorted(RULES))
    for rule, severity in rules.items():
        severity = "off" if severity is False else severity  # YAML reads a bare off as false
        name, level = parse_rule(f"{rule}={severity}", where=f"{where}.rules")
        severities[name] = level
    ignore = section.get("ignore") or []
    if isinstance(ignore, str):
        ignore = [ignore]
    if not isinstance(ignore, list) or not all(isinstance(p, str) and p.strip() for p in ignore):
        raise InvalidArgument(f"{where}.ignore", "must be a list of path patterns (docs/lint.md)")
    for item in overrides:
        name, level = parse_rule(item)
        severities[name] = level
    return LintSettings(severities, tuple(p.strip().lstrip("/") for p in ignore))


def _lint_section(root: str) -> Mapping[str, Any]:
    raw = read_regular(os.path.join(root, CONFIG_FILE), _MAX_CONFIG_BYTES)
    if raw is None or isinstance(raw, FileProblem):
        return {}  # no knowtk.yaml, or one the snapshot reports (invalid-config)
    try:
        data = parse_yaml(raw.decode("utf-8"), what=CONFIG_FILE)
    except UnicodeDecodeError:
        return {}
    if not isinstance(data, dict) or data.get("lint") is None:
        return {}
    section = data["lint"]
    if not isinstance(section, dict):
        raise InvalidArgument(f"{CONFIG_FILE} lint", "must be a mapping with rules and ignore (docs/lint.md)")
    unknown = sorted(set(section) - {"rules", "ignore"})
    if unknown:
        raise InvalidArgument(
            f"{CONFIG_FILE} lint", f"unknown key(s) {', '.join(map(str, unknown))}", allowed=["rules", "ignore"]
        )
    return section
