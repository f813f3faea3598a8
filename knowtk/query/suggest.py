"""Names close to one that named nothing: what a ``missing`` lookup or record answer suggests beside it.

The answer itself stays exact (the contract forbids fuzzy matching): suggestions are a separate list, computed
only when nothing was found, from the snapshot's id set and name map (no record is built to find them). Each
says why it is offered:

- ``id_form``: an id that differs only in case or in the separators between its words (``dec 2026 021``,
  ``DEC-2026-021`` for ``dec-2026-021``);
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


def _squashed(text: str) -> str:
    """``text`` without case or separators between its words: ``ADR 6``, ``adr_6``, ``ADR-6`` read alike."""
    return _SEPARATORS.sub("", normalize_name(text))


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
    squashed = _squashed(query)
    if squashed:
        for rid in sorted(rid for rid in snap.records if _squashed(rid) == squashed and rid != query):
            if eligible(rid):
                offer(rid, "id_form", f"the id is {rid!r}")
        for name in sorted(n for n in snap.names if _squashed(n) == squashed and n != normalize_name(query)):
            for rid in sorted(snap.names[name]):
                if eligible(rid):
                    offer(rid, "name_form", f"a title or alias reads {name!r}")
    words = set(_WORD.findall(normalize_name(query)))
    if words and len(found) < MAX_SUGGESTIONS:
        holding = [n for n in snap.names if words <= set(_WORD.findall(n)) and n != normalize_name(query)]
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
