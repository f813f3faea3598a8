"""Names close to one that named nothing: what a ``missing`` lookup or record answer suggests beside it.

The answer itself stays exact (the contract forbids fuzzy matching): suggestions are a separate list, computed
only when nothing was found, from the snapshot's id set and name map (no record is built to find them): the
query's other spellings are looked up (a few dict lookups), and the names are read once for whole words, a
substring test first. Each says why it is offered:

- ``id_form``: an id written in lower or upper case, or with other separators between its words
  (``dec 2026 021``, ``DEC-2026-021`` for ``dec-2026-021``);
- ``name_form``: a title or alias that differs only in its separators (``ADR 6`` for the alias ``ADR-6``);
- ``lifecycle``: the exact name or id of a record of the scope the query's ``lifecycle`` leaves out;
- ``words``: a title or alias holding every word of the query as a whole word (``guido`` for
  ``Guido van Rossum``);
- ``typo``: an id, title or alias a few letters away (``dec-2026-21`` for ``dec-2026-021``, ``Ada Okafr``
  for ``Ada Okafor``), when no other spelling names a record: at most a quarter of its letters (and three)
  changed, a swap of two neighbours counting one, the first letter and the numbers the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from knowtk.snapshot.model import Snapshot, in_scope, normalize_name

__all__ = ["MAX_SUGGESTIONS", "edits", "suggestions"]

MAX_SUGGESTIONS = 5
_SEPARATORS = re.compile(r"[\s_.:/-]+")
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+")
MAX_TYPOS = 3  # letters a typo may change, at most (and a quarter of the query's)
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

    ``eligible(rid)`` says whether the answer could have returned a record; another is offered only when the
    query names it exactly, it lies in ``scope``, and its lifecycle is what left it out (``lifecycle``).
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
    if not found:  # a slip of the keys, when no other spelling names a record
        _typos(snap, query, key, eligible, offer)
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


def _typos(
    snap: Snapshot, query: str, key: str, eligible: Callable[[str], bool], offer: Callable[[str, str, str], None]
) -> None:
    """Offer the ids and names a few letters from the query, the closest first (ids compared without case).

    Their first letters and numbers must agree (``dec-2026-21`` is ``dec-2026-021``; ``pep-0001`` is no slip for
    ``pep-0008``)."""
    limit = min(MAX_TYPOS, len(key) // 4)
    if limit < 1:
        return  # under four letters every word is a few letters from another
    letters, numbers = set(key), _numbers(key)
    close: list[tuple[int, str, str]] = []  # (letters away, "id" or "name", the id or name)
    for what, pool in (("id", snap.records), ("name", snap.names)):
        for candidate in pool:
            folded = candidate.lower() if what == "id" else candidate  # a name is folded already
            # cheap tests first (the first letter, the length, the letters used, the numbers), the alignment
            # only for the few left: a slip of the first letter is not looked for
            if folded[:1] != key[:1] or abs(len(folded) - len(key)) > limit or folded == key or candidate == query:
                continue
            if len(letters.symmetric_difference(folded)) > 2 * limit or _numbers(folded) != numbers:
                continue
            away = edits(key, folded, limit)
            if away <= limit:
                close.append((away, what, candidate))
    for away, what, candidate in sorted(close):
        for rid in [candidate] if what == "id" else sorted(snap.names[candidate]):
            if eligible(rid):
                shown = f"the id is {candidate!r}" if what == "id" else f"a title or alias reads {candidate!r}"
                offer(rid, "typo", f"{shown}, {away} letter(s) away")


def _numbers(text: str) -> list[int]:
    return [int(n) for n in _NUMBER.findall(text)]


def edits(a: str, b: str, limit: int | None = None) -> int:
    """The optimal string alignment distance: insertions, deletions, substitutions and neighbour swaps; past
    ``limit`` it stops early and answers ``limit + 1``."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        if limit is not None and min(row) > limit:
            return limit + 1
        rows.append(row)
    return rows[-1][-1]


def _left_out(
    snap: Snapshot,
    rid: str,
    lifecycles: tuple[str, ...],
    scope: tuple[str, ...],
    offer: Callable[[str, str, str], None],
) -> None:
    """Offer a record of the scope the query names exactly but its lifecycle leaves out, naming that rule (a
    record outside the scope is never offered: what lies outside a scope changes no answer of it)."""
    life = snap.lifecycle.get(rid)
    if life is not None and life not in lifecycles and in_scope(snap.records[rid].path, scope):
        offer(rid, "lifecycle", f"it is {life}: lifecycle 'all' returns it")
