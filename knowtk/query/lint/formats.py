"""The lint answer as people, scripts and CI read it: text, JSON, GitHub Actions annotations, SARIF 2.1.0.

``shown(path)`` names a file as the reader needs it: the command line gives the path from the current
folder, so that an annotation or a SARIF location points at the repository's file when the store is a
folder of it (``knowtk lint docs/adr``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from knowtk.errors import InvalidArgument
from knowtk.query.lint.rules import RULES
from knowtk.query.tools.lint import text

__all__ = ["FORMATS", "github", "render", "sarif"]

Shown = Callable[[str], str]
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _escape(value: str, *, prop: bool = False) -> str:
    """A workflow command's escaping: ``%``, CR and LF always; ``:`` and ``,`` in a property too."""
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return value.replace(":", "%3A").replace(",", "%2C") if prop else value


def github(answer: dict[str, Any], shown: Shown = lambda p: p) -> str:
    """One ``::error`` or ``::warning`` workflow command per finding: GitHub shows each on its line in the diff."""
    out = []
    for f in answer["findings"]:
        props = [f"file={_escape(shown(f['path']), prop=True)}"]
        if f["line"]:
            props.append(f"line={f['line']}")
            if f.get("column"):
                props.append(f"col={f['column']}")
        props.append(f"title={_escape('knowtk lint ' + f['rule'], prop=True)}")
        out.append(f"::{f['severity']} {','.join(props)}::{_escape(f['message'])}")
    return "\n".join(out)


def sarif(answer: dict[str, Any], shown: Shown = lambda p: p, version: str | None = None) -> dict[str, Any]:
    """The findings as one SARIF 2.1.0 run, every rule described (code-scanning tools show its help);
    ``version``: knowtk's, which the front end knows."""
    rules = [rule for rule in RULES.values() if answer["rules"].get(rule.id, "off") != "off"]
    index = {rule.id: i for i, rule in enumerate(rules)}
    results = []
    for f in answer["findings"]:
        region: dict[str, Any] = {}
        if f["line"]:
            region["startLine"] = f["line"]
            if f.get("column"):
                region["startColumn"] = f["column"]
        location: dict[str, Any] = {"artifactLocation": {"uri": shown(f["path"])}}
        if region:
            location["region"] = region
        result: dict[str, Any] = {
            "ruleId": f["rule"],
            "level": f["severity"],
            "message": {"text": f["message"]},
            "locations": [{"physicalLocation": location}],
        }
        if f["rule"] in index:
            result["ruleIndex"] = index[f["rule"]]
        results.append(result)
    driver: dict[str, Any] = {
        "name": "knowtk lint",
        "rules": [
            {
                "id": rule.id,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": rule.doc},
                "help": {"text": f"{rule.doc}\n\nExample:\n{rule.example}\n\n(knowtk docs/lint.md)"},
                "defaultConfiguration": {"level": answer["rules"].get(rule.id, rule.severity)},
            }
            for rule in rules
        ],
    }
    if version:
        driver["version"] = version
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{"tool": {"driver": driver}, "results": results}]}


FORMATS = ("text", "json", "github", "sarif")


def render(fmt: str, answer: dict[str, Any], shown: Shown = lambda p: p, version: str | None = None) -> str:
    """The answer in the format ``fmt`` (one of ``FORMATS``)."""
    if fmt == "text":
        return text(answer, shown)
    if fmt == "json":
        return json.dumps(answer, indent=2, ensure_ascii=False)
    if fmt == "github":
        return github(answer, shown)
    if fmt == "sarif":
        return json.dumps(sarif(answer, shown, version), indent=2, ensure_ascii=False)
    raise InvalidArgument("format", f"{fmt!r} is not a lint format", allowed=list(FORMATS))
