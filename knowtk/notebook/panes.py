"""Panes shared by the widgets: coverage issues, one record whole, and why a record is (not) in an answer."""

from __future__ import annotations

from typing import Any

from knowtk.notebook.markdown_body import body_html
from knowtk.notebook.text import citation_text
from knowtk.ui.style import escape, wrap

__all__ = ["explain_html", "hint_html", "issues_html", "record_html"]


def issues_html(coverage: dict[str, Any] | None) -> str:
    """coverage.issues: an incomplete answer says so in one line with the count, the issues listed under it on a
    click (an HTML ``<details>``)."""
    issues = (coverage or {}).get("issues") or []
    hint = (coverage or {}).get("hint")
    if hint:  # a newcomer's store: one line naming the profile that would read it
        return hint_html(hint) + _issues_table(issues)
    return _issues_table(issues)


def hint_html(hint: str) -> str:
    return wrap(f"<div class='box warn hint'><b>HINT</b>: {escape(hint)}</div>")


def _issues_table(issues: list[dict[str, Any]]) -> str:
    if not issues:
        return wrap("<p class='muted'>coverage complete: no validation issues in this scope</p>")
    rows = "".join(
        f"<tr><td>{escape(i['code'])}</td><td>{escape(i['path'])}</td><td>{escape(i['id'])}</td><td>{escape(i['message'])}</td></tr>"
        for i in issues
    )
    head = "<tr><th>code</th><th>path</th><th>id</th><th>message</th></tr>"
    count = f"{len(issues)} issue{'s' if len(issues) != 1 else ''}"
    # one line with the count; the list opens on a click (the demo's defects would fill the view otherwise)
    return wrap(
        f"<details class='box warn issues'><summary><b>COVERAGE INCOMPLETE</b>: {count} in this scope "
        f"(click to list them)</summary><table>{head}{rows}</table></details>"
    )


def record_html(data: dict[str, Any], *, hit: dict[str, Any] | None = None, query: str | None = None) -> str:
    """A knowledge_record dict as a detail pane: the record whole (its body rendered from Markdown), its citation(s),
    query words highlighted."""
    record = data.get("record")
    if record is None:
        reason = data.get("reason") or {}
        what = f"{escape(reason.get('code'))} {escape(reason.get('detail') or '')}".strip()
        return wrap(f"<div class='box bad'><b>{escape(data['status']).upper()}</b> {what}</div>")
    facts = [record["id"], f"{record['kind']}/{record['type']}", record["lifecycle"], f"r{record['revision']}"]
    parts = [f"<h4 style='margin:2px 0'>{escape(record['title'] or record['id'])}</h4>"]
    parts.append(f"<p class='muted'>{' · '.join(escape(f) for f in facts)}</p>")
    if record.get("summary"):
        parts.append(f"<p>{escape(record['summary'])}</p>")
    chain = record.get("chain")
    if record.get("supersededBy"):
        end = (
            f"ends at current {chain['current']}" if chain and chain["current"] else f"ends in {chain and chain['end']}"
        )
        parts.append(f"<p>superseded by <b>{escape(record['supersededBy'])}</b>; its chain {escape(end)}</p>")
    if record.get("supersedes"):
        parts.append(f"<p>supersedes {escape(', '.join(record['supersedes']))}</p>")
    cites = []
    if hit is not None:
        cites.append(f"cite this hit: <code>{escape(citation_text(hit['citation']))}</code>")
    cites.append(f"whole record: <code>{escape(citation_text(record['citation']))}</code>")
    parts.append("<p>" + "<br>".join(cites) + "</p>")
    if record.get("tags"):
        parts.append(f"<p class='muted'>tags: {escape(', '.join(record['tags']))}</p>")
    if record.get("derived"):  # what knowtk inferred, apart from what the person wrote
        derived = escape(", ".join(record["derived"]))
        parts.append(f"<p class='muted derived'>derived by the {escape(record['profile'])} profile: {derived}</p>")
    parts.append(body_html(record.get("body") or "", query))  # Markdown rendered safe, the query's words marked
    return wrap("".join(parts))


_STATUS_STYLE = {
    "hit": "good",
    "replacement": "good",
    "eligible": "good",
    "not_matched": "warn",
    "excluded": "bad",
}


def explain_html(ex: dict[str, Any]) -> str:
    """An explain() dict: the status in words, its one-line message, and every rule that applies."""
    style = _STATUS_STYLE.get(ex["status"], "")
    rule = f" · rule <b>{escape(ex['rule'])}</b>" if ex.get("rule") else ""
    rank = f" · rank {ex['rank']} of {ex['total']}" if ex.get("rank") else ""
    parts = [
        f"<div class='box {style}'><b>{escape(ex['status']).upper()}</b>{rule}{rank} — {escape(ex['id'])}"
        f"<br>{escape(ex['message'])}</div>"
    ]
    if len(ex.get("reasons") or []) > 1:
        rows = "".join(f"<tr><td>{escape(r['rule'])}</td><td>{escape(r['message'])}</td></tr>" for r in ex["reasons"])
        parts.append(f"<table><tr><th>rule</th><th>why</th></tr>{rows}</table>")
    return wrap("".join(parts))
