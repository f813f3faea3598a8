"""Names close to one that named nothing: what a ``missing`` lookup or record answer suggests beside it.

The answer itself stays exact (the contract forbids fuzzy matching): suggestions are a separate list, computed
only when nothing was found, from the snapshot's id set and name map (no record is built to find them): the
query's other spellings are looked up (a few dict lookups), and the names are read once for whole words, a
substring test first. Each says why it is offered:

- ``id_form``: an id written in lower or upper case, or with other separators between its words
  (``dec 2026 021``, ``DEC-2026-021`` for ``dec-2026-021``);
- ``name_form``: a title or alias that differs only in its separators (``ADR 6`` for the alias ``ADR-6``);
- ``lifecycle``, ``scope``: the exact name or id of a record the query's ``lifecycle`` or ``scope`` leaves out;
- ``words``: a title or alias holding every word of the query as a whole word (``guido`` for
  ``Guido van Rossum``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from knowtk.snapshot.model import Snapshot, in_scope, normalize_name

__all__ = ["MAX_SUGGESTIONS", "suggestions"]

MAX_SUGGESTIONS = 5
_SEPARATORS = re.compile(r"[\s_.:/-]+")
_WORD = re.compile(r"\w+")
_JOINERS = ("-", "_", " ", ":", ".", "")  # what may stand between the words of an id or a name


def _spellings(text: str) -> list[str]:
    """``text`` with its words joined every way an id or a name joins them, as written, lower- and upper-case:
    ``ADR 6`` -> ``ADR-6``, ``adr-6``, ``ADR_6`` ... (a few dict lookups each, whatever the store's size)."""
    words = [w for w in _SEPARATORS.split(text.strip()) if w]
    out: dict[str, None] = {}
    for joiner in _JOINERS:
        joined = joiner.join(words)
        for form in (joined, joined.lower(), joined.upper()):
            out.setdefault(form, None)
    return [form for form in out if form]


def suggestions(
    snap: Snapshot,
    query: str,
    eligible: Callable[[str], bool],
    *,
    lifecycles: tuple[str, ...] = ("active",),
    scope: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Up to ``MAX_SUGGESTIONS`` records ``query`` may have meant: ``[{"id", "title", "why", "message"}]``.

    ``eligible(rid)`` says whether the answer could have returned a record; the others are offered only when
    the query names them exactly (``lifecycle``, ``scope``) and the rule that left them out is named.
    """
    found: dict[str, dict[str, Any]] = {}

    def offer(rid: str, why: str, message: str) -> None:
        if rid not in found and len(found) < MAX_SUGGESTIONS and rid in snap.records:
            found[rid] = {"id": rid, "title": snap.records[rid].title, "why": why, "message": message}

    exact = [query] if query in snap.records else []
    for rid in [*exact, *sorted(snap.lookup_names(query))]:
        if not eligible(rid) and snap.available(rid):
            _left_out(snap, rid, lifecycles, scope, offer)
    key = normalize_name(query)
    for form in _spellings(query):
        if form != query and form in snap.records and eligible(form):
            offer(form, "id_form", f"the id is {form!r}")
    for form in _spellings(key):
        if form != key and form in snap.names:
            for rid in sorted(snap.names[form]):
                if eligible(rid):
                    offer(rid, "name_form", f"a title or alias reads {form!r}")
    words = set(_WORD.findall(key))
    if words and len(found) < MAX_SUGGESTIONS:
        # a substring test first (fast, in C), the whole words only for the names it lets through
        holding = [
            name
            for name in snap.names
            if all(w in name for w in words) and words <= set(_WORD.findall(name)) and name != key
        ]
        for name in sorted(holding, key=lambda n: (len(n), n)):
            for rid in sorted(snap.names[name]):
                if eligible(rid):
                    offer(rid, "words", f"its title or alias {name!r} holds every word")
    return list(found.values())


def _left_out(
    snap: Snapshot,
    rid: str,
    lifecycles: tuple[str, ...],
    scope: tuple[str, ...],
    offer: Callable[[str, str, str], None],
) -> None:
    """Offer a record the query names exactly but its lifecycle or scope leaves out, naming that rule."""
    life = snap.lifecycle.get(rid)
    if life is not None and life not in lifecycles:
        offer(rid, "lifecycle", f"it is {life}: lifecycle 'all' returns it")
    elif not in_scope(snap.records[rid].path, scope):
        offer(rid, "scope", f"{snap.records[rid].path} is outside the scope {', '.join(scope)}")
