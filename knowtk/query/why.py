"""Why an answer reads as it does, in one line: the ``why`` of a grep answer with no hit, or whose scores are all 0.

An empty answer is not evidence of absence, and an answer whose every score rounds to 0.000 is ordered by almost
nothing; both look alike to a reader who is not told. ``grep`` answers as ``knowtk.query.grep.grep`` does and adds
``why`` in those two cases only (every other answer is left as it is, at no cost):

- no hit: whether any record of the query's scope holds the words at all, and if some do, which rules left them
  out (the lifecycle, a chain that ends in nothing, a filter), counted from the rules ``explain`` applies to one
  record (``knowtk.query.explain.exclusions``), with the argument that would return them. Records outside the
  scope are never looked at: they change no answer of the scope, as they change none of its snapshot;
- every score near 0: each word is in half or more of the records searched, where BM25 floors its weight (IDF).
"""

from __future__ import annotations

from typing import Any

from knowtk.engine.engine import Engine
from knowtk.index.bm25 import Source, few_rows, top_matches
from knowtk.index.filtered import AllowedRows, allowed_rows, allowed_view
from knowtk.index.fts_tables import QueryTerms
from knowtk.query.citations import EvidenceVerifier
from knowtk.query.common import RecordFilter
from knowtk.query.explain import exclusions
from knowtk.query.grep import grep as keyword_grep
from knowtk.query.grep import parse_terms

__all__ = ["FLOORED_SCORE", "grep", "why"]

FLOORED_SCORE = 0.0005  # below this every score prints as 0.000: only a floored IDF gives BM25 so little
JUDGED = 100  # records that hold the words judged one by one, the best-ranked first: the rest are only counted
_NAMED = 3  # records named in the line for each rule
# what each rule is called in the line, and the argument that returns what it left out
_RULES = {
    "chain_dead_end": ("superseded, with a chain that ends in nothing", "lifecycle all returns them"),
    "lifecycle": ("left out by the lifecycle asked", "lifecycle all returns them"),
    "filter": ("left out by a filter", "loosen or drop the filter"),
}


def grep(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    """``knowledge_grep``'s answer, with ``why`` when it has no hit or only scores near 0."""
    answer = keyword_grep(engine, args, verifier)
    note = why(engine, args, answer)
    if note is not None:
        answer["why"] = note
    return answer


def why(engine: Engine, args: dict[str, Any], answer: dict[str, Any]) -> str | None:
    """The one line that explains ``answer`` to the grep ``args`` (checked, snake_case), or None."""
    if answer["index"]["state"] != "ready":
        return None  # a failed search says so itself
    if answer["total"] == 0:
        return _no_hit(engine, args)
    scores = [h["score"] for h in answer["hits"] if h["score"] is not None]
    if scores and max(scores) < FLOORED_SCORE:
        return (
            "every score is near 0: each word is in half or more of the records searched, and BM25 then gives "
            "it almost no weight (its IDF is floored), so the order says little; add a rarer word or a filter"
        )
    return None


def _no_hit(engine: Engine, args: dict[str, Any]) -> str:
    snap = engine.snapshot()
    terms = parse_terms(engine.state.conn, args["query"], args["mode"])
    index = engine.keyword(snap)
    if index.error:
        return "the keyword index is unavailable; retry"
    flt = RecordFilter.from_args(snap, args)
    # the records in the query's scope alone: what lies outside it never changes an answer (nor its snapshot)
    in_scope = RecordFilter(scope=flt.scope)
    searched = [index.main, index.history]
    allowed = allowed_view if flt.scope and few_rows(searched, terms) else allowed_rows  # (as ``grep`` ranks them)
    sources = [Source(proj, allowed(proj, snap, in_scope)) for proj in searched]
    # counted first, none scored: ranking every row holding a common word of the query cost a query with no hit
    # 300 ms at 300k records, where the count is SQLite's pass alone
    if not _match_count(sources, terms):
        return _held_by_none(terms, sources, flt.scope)
    held, best = top_matches(sources, terms, JUDGED)
    left_out: dict[str, list[str]] = {}
    for match in best:
        rule = _rule(exclusions(snap, flt, args, match.id, searched=True))  # (a row: available)
        if rule is not None:
            left_out.setdefault(rule, []).append(match.id)
    if not left_out:
        return f"{held} record(s) hold the words, yet none is returned; Store.explain(id, query) says why"
    parts = []
    for rule, ids in sorted(left_out.items(), key=lambda item: -len(item[1])):
        named = ", ".join(ids[:_NAMED]) + (", …" if len(ids) > _NAMED else "")
        name, _, which = rule.partition(":")
        label, remedy = _RULES.get(name, (rule, "Store.explain(id, query) says more"))
        label, remedy = (
            label.replace("a filter", f"the {which} filter"),
            remedy.replace("the filter", f"the {which} filter"),
        )
        parts.append(f"{len(ids)} {label} ({named}): {remedy}")
    if held > len(best):  # a common word: the best-ranked are judged, the others only counted
        return f"{held} record(s) hold the words but are left out; of the best {len(best)}: " + "; ".join(parts)
    return f"{held} record(s) hold the words but are left out: " + "; ".join(parts)


def _rule(reasons: list[dict[str, Any]]) -> str | None:
    """The rule that keeps a record out: a superseded record's lifecycle is no reason of its own when its current
    record would be returned in its place; what keeps that current record out is."""
    if len(reasons) > 1 and reasons[0]["rule"] == "lifecycle" and "current" in reasons[0]["detail"]:
        reasons = reasons[1:]
    if not reasons:
        return None
    first = reasons[0]
    return f"filter:{first['detail']['filter']}" if first["rule"] == "filter" else str(first["rule"])


def _held_by_none(terms: QueryTerms, sources: list[Source], scope: tuple[str, ...]) -> str:
    """No searchable record (of the scope) holds the words: say so, and whether some hold part of them."""
    words = ", ".join(dict.fromkeys(terms.tokens))
    where = f" in {', '.join(scope)}" if scope else ""
    if terms.mode != "any" and len(set(terms.tokens)) > 1:
        some = _match_count(sources, QueryTerms(terms.tokens, "any"))
        if some:
            how = "every word" if terms.mode == "all" else "the words adjacent and in order"
            return (
                f"no record{where} holds {how} of {words} (mode {terms.mode}); {some} hold some of them: try mode any"
            )
    return (
        f"no searchable record{where} holds {words} (withdrawn and unavailable records are never searched; "
        "there is no stemming or prefix matching: search the word as written)"
    )


def _match_count(sources: list[Source], terms: QueryTerms) -> int:
    """How many rows of the sources (their allowed rows) match the query: counted, none scored."""
    found = 0
    for src in sources:
        proj, view = src.projection, src.allowed
        whole = proj.match_count(terms)
        if view is None or not whole or not view:
            found += whole if view is None else 0
            continue
        if isinstance(view, AllowedRows):  # (few rows hold the words: each tested by position)
            found += sum(map(view.__contains__, proj.rowids_matching(terms.expression)))
            continue
        allowed = view
        among = proj.among(allowed)
        if among.looked_up_here(whole):  # (few matches: each looked up in the allowed rows here)
            found += sum(map(allowed.__contains__, proj.rowids_matching(terms.expression)))
        else:
            found += proj.match_count(terms, among)
    return found
