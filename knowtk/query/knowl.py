"""knowl_query: project knowledge for agents and notebooks, on the keyword index of knowledge_grep.

A call answers one of two questions (the whole contract is docs/knowl.md):

- ``id`` set: that item whole, from this store or from a linked store that
  shares it (marked ``foreign``); every other argument but ``includeEvidence``
  is ignored.
- otherwise: the items that pass ``status`` (their lifecycle now, or at
  ``asOf``), ``tags`` (all of them) and the ``category`` hint, per store:
  ranked by BM25 over ``query`` (any of its words) with that store's own corpus
  statistics, fused with cosine similarity by reciprocal rank when an embedding
  model is installed; without a query, newest recorded first.

Stores are searched one by one as ``Member``s; a ``Store`` on its own is a
workspace of one (``knowl``), a ``Workspace`` passes its linked stores to
``run_knowl``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from knowtk.engine.engine import Engine, KeywordIndex
from knowtk.errors import InvalidArgument, RecordNotFound, StoreUnavailable
from knowtk.index import semantic
from knowtk.index.bm25 import Source, rank
from knowtk.index.embeddings import EmbeddingCache, embedding_text
from knowtk.index.filtered import rows_of
from knowtk.index.fts import FtsProjection
from knowtk.index.fts_tables import COLUMNS, K1, WEIGHTS, B, QueryTerms
from knowtk.index.temporal import to_us
from knowtk.model.datevalues import DateValue
from knowtk.model.records import Record
from knowtk.query.citations import EvidenceVerifier, utf16_len
from knowtk.query.common import coverage, freshness
from knowtk.query.grep import parse_terms
from knowtk.query.inventory import Catalog, catalog
from knowtk.query.tools.knowl import PROVENANCE
from knowtk.snapshot.facets import Criteria
from knowtk.snapshot.model import Snapshot
from knowtk.state import now_utc

if TYPE_CHECKING:  # numpy is imported when semantic search runs: the CLI's grep starts without it
    import numpy as np

__all__ = ["PROVENANCE", "Member", "knowl", "run_knowl"]

CONTENT_UNITS = 2000  # UTF-16 code units, like every other length in the contract
RRF_K = 60
EXTENSION = "knowl_embeddings"  # the EmbeddingCache's key in Engine.extensions


@dataclass(frozen=True)
class Member:
    """One store of a knowl_query: its name in keyed answers, and whether it is this repo (``local``)."""

    name: str
    engine: Engine
    verifier: EvidenceVerifier
    local: bool


def knowl(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    """The runner of ``Store.call``: a store alone is a workspace of one, so it has no ``workspace`` scope."""
    local = Member(engine.snapshot().config.name, engine, verifier, local=True)
    if args["id"] is None and args["scope"] == "workspace" and not args["repos"]:
        raise InvalidArgument(
            "scope",
            "a Store has no linked stores; use knowtk.Workspace(store, linked={...}) to search several",
            allowed=("local",),
            value="workspace",
        )
    return run_knowl(local, [], args)


def run_knowl(local: Member, linked: Sequence[Member], args: dict[str, Any]) -> dict[str, Any]:
    """knowl_query over this store and its linked stores (checked arguments, snake_case keys)."""
    queried_at = now_utc()
    snaps = {m.name: m.engine.snapshot() for m in (local, *linked)}
    sharing = [m for m in linked if snaps[m.name].config.share]
    if args["id"] is not None:
        return _fetch([local, *sharing], snaps, args, queried_at)
    members, keyed = _members(local, linked, sharing, args)
    terms = parse_terms(local.engine.state.conn, args["query"], "any") if args["query"] else None
    embedder, reason = _embedder() if terms is not None else (None, "no query: newest recorded first")
    probe = None  # the embedder and the query's vector, when semantic search runs
    if embedder is not None:
        import numpy as np

        probe = (embedder, np.asarray(embedder.embed([args["query"]])[0], dtype=np.float32))

    def search(category: str | None) -> list[_Answer]:
        return [_search(m, snaps[m.name], args, category, terms, probe, reason) for m in members]

    answers = search(args["category"])
    retry, notes = None, []
    if args["category"] and not any(ans.total for ans in answers):
        answers = search(None)
        retry = {"category": args["category"], "found": sum(ans.total for ans in answers)}
        notes.append(f"category {args['category']!r} matched nothing, so the query was retried once without it")
    if terms is None:
        notes.append("no query: items are listed newest recorded first (records without recorded_at last)")
    errors = {ans.member.name: ans.error for ans in answers if ans.error}
    notes.extend(f"{name}: keyword index unavailable ({error})" for name, error in errors.items())
    if keyed is None:  # the default scope: keyed only when a linked store contributed a row
        keyed = any(ans.items for ans in answers if not ans.member.local)
    return _response(
        results={ans.member.name: ans.items for ans in answers} if keyed else answers[0].items,
        total=sum(ans.total for ans in answers),
        ranking={
            "method": "newest-recorded" if terms is None else ("bm25+cosine" if probe is not None else "bm25"),
            "queryTerms": list(terms.tokens) if terms is not None else None,
            "model": embedder.name if embedder is not None else None,
            "relevanceFloor": semantic.RELEVANCE_FLOOR if probe is not None else None,
            "score": _SCALE if probe is not None else f"uncalibrated ({reason})",
        },
        category_retry=retry,
        notes=notes,
        index={"state": "unavailable", "lag": False, "errors": errors} if errors else {"state": "ready", "lag": False},
        answers=answers,
        keyed=keyed,
        queried_at=queried_at,
    )


_SCALE = "min-max of the fused rank score across each store's page: position on the page, not strength"


def _members(
    local: Member, linked: Sequence[Member], sharing: list[Member], args: dict[str, Any]
) -> tuple[list[Member], bool | None]:
    """The stores to search, and whether results are keyed (None: decided by who contributed)."""
    if args["repos"]:  # repos wins over scope
        reachable = {m.name: m for m in (local, *sharing)}
        for name in args["repos"]:
            if name not in reachable:
                private = any(m.name == name for m in linked)
                why = f"store {name!r} does not share its knowledge (share: false in its knowtk.yaml)"
                why = why if private else f"no store named {name!r} in this workspace"
                raise InvalidArgument("repos", why, allowed=list(reachable), value=args["repos"])
        return [m for m in reachable.values() if m.name in args["repos"]], True
    if args["scope"] == "local":
        return [local], False
    return [local, *sharing], (True if args["scope"] == "workspace" else None)


def _embedder() -> tuple[semantic.Embedder | None, str]:
    """The installed embedding model, or why there is none (the text of ``uncalibrated (...)``)."""
    if semantic.disabled():
        return None, f"semantic search turned off by {semantic.ENV_VAR}"
    embedder = semantic.load_embedder()
    return embedder, "" if embedder is not None else semantic.UNAVAILABLE_REASON


# -- one store ----------------------------------------------------------------------------------------


@dataclass
class _Answer:
    member: Member
    snap: Snapshot
    total: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)
    indexed_at: str | None = None
    error: str | None = None


def _search(
    m: Member,
    snap: Snapshot,
    args: dict[str, Any],
    category: str | None,
    terms: QueryTerms | None,
    probe: tuple[semantic.Embedder, np.ndarray] | None,
    reason: str,
) -> _Answer:
    out = _Answer(m, snap)
    index = m.engine.keyword(snap)
    out.indexed_at = index.indexed_at
    if index.error:
        out.error = index.error
        return out
    view = _view(m.engine, snap, index, args["status"], args["as_of"], args["tags"], category)
    states = view.states
    ranked = _rank(m.engine, snap, index, view, terms, probe, args["limit"])
    sources, bm25, cosines, fused, above = ranked.sources, ranked.bm25, ranked.cosines, ranked.fused, ranked.above
    hybrid = probe is not None  # only set when there is a query
    out.total = ranked.total
    page = ranked.order[: args["limit"]]
    texts = _texts(index, page)
    on_page = [fused[rid] for rid in page] if hybrid and page else [0.0]
    low, high = min(on_page), max(on_page)
    parts = (
        _bm25_explain(sources, terms, {rid: _locate(index, rid) for rid in page}) if args["explain"] and terms else {}
    )
    bm25_rank = {rid: i + 1 for i, rid in enumerate(bm25)} if args["explain"] else {}
    cosine_rank = {rid: i + 1 for i, rid in enumerate(above)} if args["explain"] else {}

    def explain(rid: str, position: int) -> dict[str, Any]:
        if terms is None:
            return {
                "order": "newest recorded first",
                "recordedAt": _authored(snap.records[rid].dates.get("recorded_at")),
            }
        empty: dict[str, Any] = {"fields": None, "terms": {}, "corpus": None}
        ex = {"bm25": bm25.get(rid), "bm25Rank": bm25_rank.get(rid), **parts.get(rid, empty)}
        if not hybrid:
            ex["score"] = (
                f"uncalibrated ({reason}): BM25 order; bm25 compares only within this query, filters and store"
            )
            return ex
        ex.update(
            cosine=cosines.get(rid),
            cosineRank=cosine_rank.get(rid),
            relevanceFloor=semantic.RELEVANCE_FLOOR,
            fused=fused[rid],
            rrfK=RRF_K,
            score={"scale": _SCALE, "pageMin": low, "pageMax": high, "rank": position},
        )
        return ex

    for position, rid in enumerate(page, 1):
        r = snap.records[rid]
        content, truncated = _cut(texts[rid][2])
        if hybrid:
            score: float | str = (fused[rid] - low) / (high - low) if high > low else 1.0
            cosine: float | None = max(0.0, cosines.get(rid, 0.0))
        else:
            score, cosine = f"uncalibrated ({reason})", None
        item = _item(m, snap, r, states[rid], content, truncated, score, cosine)
        if args["include_evidence"] and m.local:
            item["evidence"], item["evidenceTruncated"] = m.verifier.for_hit(r)
        if args["explain"]:
            item["explain"] = explain(rid, position)
        out.items.append(item)
    return out


@dataclass
class _Ranked:
    """The order of one store's eligible records for a query (the page is its first ``limit``), and its scores."""

    order: list[str]
    total: int
    sources: list[Source] = field(default_factory=list)
    bm25: dict[str, float] = field(default_factory=dict)
    cosines: dict[str, float] = field(default_factory=dict)  # of the page's records
    fused: dict[str, float] = field(default_factory=dict)  # of the page's records
    above: list[str] = field(default_factory=list)  # the eligible records at or above the floor, by cosine


def _rank(
    engine: Engine,
    snap: Snapshot,
    index: KeywordIndex,
    view: _View,
    terms: QueryTerms | None,
    probe: tuple[semantic.Embedder, np.ndarray] | None,
    limit: int,
) -> _Ranked:
    if terms is None:
        order = view.newest(catalog(engine, snap))
        return _Ranked(order, len(view.states))
    sources = [Source(proj, allowed) for proj, allowed in view.allowed]
    matches = rank(sources, terms) if sources else []
    bm25 = {match.id: match.score for match in matches}
    if probe is None:
        return _Ranked(list(bm25), len(bm25), sources, bm25)
    sims = _Similarities(engine, index, view, *probe)
    above = sims.above(semantic.RELEVANCE_FLOOR)
    total, fused = semantic.fuse_page(list(bm25), above, k=RRF_K, limit=limit)
    order = list(fused)
    return _Ranked(order, total, sources, bm25, sims.of(order), fused, above)


class _View:
    """The records a knowl_query's filters let through in one store, kept while its snapshot and rows stay."""

    def __init__(self, states: dict[str, str], index: KeywordIndex) -> None:
        self.states = states  # eligible id -> its status at the asked instant (only ids the projections hold)
        self.allowed: list[tuple[FtsProjection, set[int]]] = []  # the rows of each projection they are
        for proj in (index.main, index.history):
            allowed = {rowid for rid, rowid in proj.ids.items() if rid in states}
            if allowed:
                self.allowed.append((proj, allowed))
        self._newest: list[str] | None = None
        self._rows: tuple[list[str | None], Any] | None = None  # (the embedding rows' ids, which are eligible)

    def newest(self, cat: Catalog) -> list[str]:
        """The eligible ids, newest recorded first (undated last, by id)."""
        if self._newest is None:
            states = self.states
            self._newest = [key[2] for key in cat.newest if key[2] in states]
        return self._newest

    def rows(self, ids: list[str | None], row_of: Mapping[str, int]) -> Any:
        """A boolean array over the embedding cache's rows (``ids``): True for the eligible records."""
        if self._rows is None or self._rows[0] is not ids:
            import numpy as np

            mask = np.zeros(len(ids), dtype=bool)
            mask[[row_of[rid] for rid in self.states if rid in row_of]] = True
            self._rows = (ids, mask)
        return self._rows[1]


def _view(
    engine: Engine,
    snap: Snapshot,
    index: KeywordIndex,
    status: str,
    as_of: datetime | None,
    tags: tuple[str, ...] | None,
    category: str | None,
) -> _View:
    """The eligible records for these filters, from the main projection's memo of this snapshot and rows."""
    memo = index.main.memo(snap.generation)
    key = ("knowl", index.history, index.history.rows_version, status, as_of, tags, category)
    view = memo.get(key)
    if view is None:
        eligible = _eligible(catalog(engine, snap), snap, status, as_of, tags, category)
        main, history = index.main.ids, index.history.ids
        states = {rid: state for rid, state in eligible.items() if rid in main or rid in history}
        view = memo[key] = _View(states, index)
    return view


def _eligible(
    cat: Catalog,
    snap: Snapshot,
    status: str,
    as_of: datetime | None,
    tags: tuple[str, ...] | None,
    category: str | None,
) -> dict[str, str]:
    """id -> the record's status at the asked instant, for every available record that passes the filters."""
    wanted = ("active", "superseded") if status == "all" else (status,)
    # the tags through the snapshot's facets (kept per snapshot, shared with grep): no record is built for them
    candidates: set[str] | None = set(snap.matching(Criteria(tags=tags))) if tags else None
    if category:
        of_category = cat.of_categories(snap.config.expand_type(category))
        candidates = of_category if candidates is None else candidates & of_category
    lifecycle = cat.lifecycle
    if as_of is None:
        if candidates is None:
            return {rid: life for rid, life in lifecycle.items() if life in wanted}
        return {rid: lifecycle[rid] for rid in candidates if lifecycle.get(rid) in wanted}
    out: dict[str, str] = {}
    if "active" in wanted:  # active now: active from recorded_at on
        for _, rid in cat.active_since[: bisect_right(cat.active_since, as_of, key=itemgetter(0))]:
            if candidates is None or rid in candidates:
                out[rid] = "active"
    for rid in cat.superseded if candidates is None else cat.superseded & candidates:
        state = _status_at(cat, snap, rid, to_us(as_of))
        if state is not None and state in wanted:
            out[rid] = state
    return out


def _status_at(cat: Catalog, snap: Snapshot, rid: str, as_of: int) -> str | None:
    """active from recorded_at until the replacement's recorded_at, superseded after; None: not yet, or unknown.
    Instants in microseconds since the epoch (``Catalog.recorded_us``: a stored snapshot builds no record)."""
    recorded = cat.recorded_us(rid)
    if recorded is None or recorded > as_of:
        return None
    life = snap.lifecycle[rid]
    if life == "active":
        return "active"
    replacement = snap.superseded_by.get(rid) or ""
    replaced = cat.recorded_us(replacement) if replacement in snap.records else None
    if life != "superseded" or replaced is None:
        return None  # withdrawn is never valid; a replacement without a date cannot be placed in time
    return "active" if replaced > as_of else "superseded"


def _locate(index: KeywordIndex, rid: str) -> tuple[FtsProjection, int]:
    """The keyword projection that holds a record, and its row there."""
    rowid = index.main.ids.get(rid)
    return (index.main, rowid) if rowid is not None else (index.history, index.history.ids[rid])


def _texts(index: KeywordIndex, ids: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """(title, aliases, body) of these records, as the keyword projection holds them."""
    by_proj: dict[int, tuple[FtsProjection, dict[int, str]]] = {}
    for rid in ids:
        proj, rowid = _locate(index, rid)
        by_proj.setdefault(id(proj), (proj, {}))[1][rowid] = rid
    out = {}
    for proj, rowids in by_proj.values():
        for rowid, cols in proj.texts(rowids).items():
            out[rowids[rowid]] = cols
    return out


class _Similarities:
    """The cosine of each eligible record with the query (vectors from the store's embedding cache)."""

    def __init__(
        self, engine: Engine, index: KeywordIndex, view: _View, embedder: semantic.Embedder, vector: Any
    ) -> None:
        cache: EmbeddingCache | None = engine.extensions.get(EXTENSION)
        if cache is None:
            cache = engine.extensions[EXTENSION] = EmbeddingCache(engine.state)
        main, history = index.main, index.history

        def searchable() -> dict[str, str]:
            return {**dict(main.shas.items()), **dict(history.shas.items())}  # (items(): read whole at once)

        def texts(ids: list[str]) -> dict[str, str]:
            return {rid: embedding_text(*cols) for rid, cols in _texts(index, ids).items()}

        key = (main, main.rows_version, history, history.rows_version)  # the searchable set changes with the rows only
        self.sims, self.ids, self.ranks, self.row_of = cache.similarities(embedder, searchable, texts, vector, key=key)
        self.view = view

    def above(self, floor: float) -> list[str]:
        """The eligible ids whose cosine is at least ``floor``, best first (then by id)."""
        import numpy as np

        rows = np.flatnonzero((self.sims >= floor) & self.view.rows(self.ids, self.row_of))
        rows = rows[np.lexsort((self.ranks[rows], -self.sims[rows]))]
        ids = self.ids
        return [ids[i] for i in rows.tolist()]  # type: ignore[misc]

    def of(self, ids: Sequence[str]) -> dict[str, float]:
        """The cosines of these ids (those eligible with a vector)."""
        states, row_of = self.view.states, self.row_of
        return {rid: float(self.sims[row_of[rid]]) for rid in ids if rid in states and rid in row_of}


def _cut(text: str, units: int = CONTENT_UNITS) -> tuple[str, bool]:
    """The first ``units`` UTF-16 code units of a text (never half a surrogate pair), and whether it was cut."""
    if text.isascii() or utf16_len(text) <= units:
        return text[:units], len(text) > units
    n = 0
    for i, ch in enumerate(text):
        n += 2 if ord(ch) > 0xFFFF else 1
        if n > units:
            return text[:i], True
    return text, False


def _item(
    m: Member,
    snap: Snapshot,
    r: Record,
    status: str,
    content: str,
    truncated: bool,
    score: float | str | None,
    cosine: float | None,
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": r.id,
        "title": r.title,
        "summary": r.summary,
        "content": content,
        "truncated": truncated,
        "score": score,
    }
    if cosine is not None:
        item["cosine"] = cosine
    item.update(
        category=r.category or r.type,
        tags=list(r.tags),
        status=status,
        supersededBy=snap.superseded_by.get(r.id) if snap.lifecycle[r.id] == "superseded" else None,
    )
    if m.local:
        item["affectedPaths"] = list(r.affected_paths)
    else:  # affectedPaths and evidence resolve against the owner's checkout, not this one
        item["foreign"] = {"owner": m.name, "writable": False}
    item.update(path=r.path, revision=r.revision, sha256=r.sha256, recordedAt=_authored(r.dates.get("recorded_at")))
    return item


def _authored(value: DateValue | None) -> str | None:
    return value.text if value is not None else None


# -- explain ------------------------------------------------------------------------------------------


def _bm25_explain(
    sources: list[Source], terms: QueryTerms, page: Mapping[str, tuple[FtsProjection, int]]
) -> dict[str, dict[str, Any]]:
    """Each page row's BM25 split by field and by term, from the same filtered corpus ``rank`` scored.

    BM25 saturates per term, so a term's contribution is split between the fields in proportion to
    its weighted occurrences there; the fields add up to the score.
    """
    allowed = [rows_of(s.allowed) for s in sources]
    n_rows = sum(len(rows or ()) for rows in allowed)
    pairs = list(zip(sources, allowed, strict=True))
    n_tokens = sum(s.projection.tokens.get(rowid, 0) for s, rows in pairs for rowid in rows or ())
    avgdl = n_tokens / n_rows if n_rows else 0.0
    out: dict[str, dict[str, Any]] = {
        rid: {"fields": dict.fromkeys(COLUMNS, 0.0), "terms": {}, "corpus": {"records": n_rows, "avgTokens": avgdl}}
        for rid in page
    }
    for (term,) in terms.phrases:
        df = sum(len(s.projection.term_frequencies(term, rows)) for s, rows in pairs)
        idf = math.log((n_rows - df + 0.5) / (df + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        for rid, (proj, rowid) in page.items():
            sql = f"SELECT col, count(*) FROM temp.{proj.vocab} WHERE term = ? AND doc = ? GROUP BY col"
            counts = dict(proj.conn.execute(sql, (term, rowid)).fetchall())
            f = sum(WEIGHTS[col] * n for col, n in counts.items())
            if not f:
                continue
            d = proj.tokens.get(rowid, 0)
            contribution = idf * (f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl))
            for col, n in counts.items():
                out[rid]["fields"][col] += contribution * WEIGHTS[col] * n / f
            out[rid]["terms"][term] = {"idf": idf, **{c: counts.get(c, 0) for c in COLUMNS}, "bm25": contribution}
    return out


# -- id fetch -----------------------------------------------------------------------------------------


def _fetch(
    candidates: list[Member], snaps: dict[str, Snapshot], args: dict[str, Any], queried_at: datetime
) -> dict[str, Any]:
    """The item whole, from the first store that has it available: this one, then linked stores that share."""
    rid = args["id"]
    for _ in range(3):  # a file rewritten between the scan and the read is scanned again (knowledge_record's rule)
        found = [m for m in candidates if snaps[m.name].available(rid)]
        if not found:
            why = snaps[candidates[0].name].unavailable.get(rid)
            here = f" (here it is unavailable: {why[0]})" if why else ""
            raise RecordNotFound(
                rid, f"no available record with id {rid!r} in this store{here} or in a linked store that shares"
            )
        m = found[0]
        snap = snaps[m.name]
        r = snap.records[rid]
        body = m.engine.body(r)
        if body is not None:
            break
        snaps[m.name] = m.engine.snapshot()
    else:
        raise StoreUnavailable(r.path, "the file keeps changing while it is read; try again")
    notes = []
    if len(found) > 1:
        others = ", ".join(o.name for o in found[1:])
        notes.append(f"id {rid!r} is also in {others}; this is {m.name}'s (this store first, then linked order)")
    item = _item(m, snap, r, snap.lifecycle[rid], body, False, None, None)
    item.update(
        kind=r.kind,
        type=r.type,
        aliases=list(r.aliases),
        supersedes=sorted(snap.supersedes.get(rid, [])),
        reasoning=r.reasoning,
        alternatives=r.alternatives,
        provenance={"origin": r.origin, "author": r.author, "source": r.source},
        source=r.source,
        timestamps={
            "occurredAt": _authored(r.dates.get("occurred_at")),
            "recordedAt": _authored(r.dates.get("recorded_at")),
            "updatedAt": _authored(r.dates.get("updated_at")),
            "dueAt": _authored(r.dates.get("due_at")),
            "expiresAt": _authored(r.expires_at),
        },
    )
    if args["include_evidence"] and m.local:
        item["evidence"] = m.verifier.all(r)
    ignored = [k for k in ("query", "as_of", "tags", "repos", "scope", "category") if args[k] is not None]
    if ignored:
        notes.append(f"id fetch: ignored {', '.join(ignored)}")
    answer = _Answer(m, snap, total=1, items=[item])
    return _response(
        results={m.name: [item]} if not m.local else [item],
        total=1,
        ranking={"method": "id", "queryTerms": None, "model": None, "relevanceFloor": None, "score": None},
        category_retry=None,
        notes=notes,
        index=None,  # an id fetch reads the file, not the keyword index
        answers=[answer],
        keyed=not m.local,
        queried_at=queried_at,
    )


# -- the answer ---------------------------------------------------------------------------------------


def _response(
    *,
    results: list[dict[str, Any]] | dict[str, list[dict[str, Any]]],
    total: int,
    ranking: dict[str, Any],
    category_retry: dict[str, Any] | None,
    notes: list[str],
    index: dict[str, Any] | None,
    answers: list[_Answer],
    keyed: bool,
    queried_at: datetime,
) -> dict[str, Any]:
    if keyed:
        issues = [{**i, "repo": ans.member.name} for ans in answers for i in coverage(ans.snap, ())["issues"]]
        cover = {"complete": not issues, "issues": issues}
    else:
        cover = coverage(answers[0].snap, ())
    oldest = min(answers, key=lambda ans: ans.snap.scanned_at)
    stamps = [ans.indexed_at for ans in answers if ans.indexed_at]
    return {
        "results": results,
        "total": total,
        "provenance": PROVENANCE,
        "ranking": ranking,
        "categoryRetry": category_retry,
        "notes": notes,
        "index": index,
        "coverage": cover,
        "freshness": freshness(oldest.snap, queried_at, min(stamps) if stamps else None),
    }
